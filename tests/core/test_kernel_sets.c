/* Kernel sets (core/kernel_registry.h): what a layer registers, seen from the core's
 * side. A set's host kernels run on the host; on a CUDA device the first launch of
 * one of its kernels loads that set's device code (and only that set's: a set whose
 * code does not load fails its own kernels, not others'), a kernel the code lacks
 * fails by name, and gaio_shutdown unloads the code, which the next launch loads
 * again. The device code here is PTX text, which the fake driver also loads, so this
 * runs without a GPU too (test_kernel_sets_fakecuda). */
#include <pthread.h>
#include <stdatomic.h>

#include "common.h"
#include "core/kernel_registry.h"

static atomic_uint host_calls;

static gaio_status host_fn(const gaio_launch_info *info, void *const *args) {
    (void)info;
    uint32_t v;
    memcpy(&v, args[0], sizeof v);
    atomic_fetch_add(&host_calls, v);
    return GAIO_OK;
}

static const size_t one_u32[1] = {4};

static const gaio_builtin_kernel test_table[] = {
    {"gaio_test_set_a", host_fn, 1, one_u32},
    {"gaio_test_set_b", host_fn, 1, one_u32},
    {"gaio_test_set_missing", host_fn, 1, one_u32}, /* in no device code */
    {NULL, NULL, 0, NULL},
};
static const gaio_builtin_kernel broken_table[] = {
    {"gaio_test_broken", host_fn, 1, one_u32},
    {NULL, NULL, 0, NULL},
};
static const gaio_builtin_kernel *const test_tables[] = {test_table, NULL};
static const gaio_builtin_kernel *const broken_tables[] = {broken_table, NULL};

#define PTX_HEAD ".version 7.0\n.target sm_50\n.address_size 64\n"
static const char ptx_a[] = PTX_HEAD ".visible .entry gaio_test_set_a(.param .u32 p0)\n{\n\tret;\n}\n";
static const char ptx_b[] = PTX_HEAD ".visible .entry gaio_test_set_b(.param .u32 p0)\n{\n\tret;\n}\n";
static const char not_code[] = "this is no device code";

static const gaio_device_code test_code[] = {
    {"a.ptx", (const unsigned char *)ptx_a, (const unsigned char *)ptx_a + sizeof ptx_a},
    {"b.ptx", (const unsigned char *)ptx_b, (const unsigned char *)ptx_b + sizeof ptx_b},
    {NULL, NULL, NULL},
};
static const gaio_device_code broken_code[] = {
    {"broken.ptx", (const unsigned char *)not_code, (const unsigned char *)not_code + sizeof not_code},
    {NULL, NULL, NULL},
};

static const gaio_kernel_set test_set = {"test", test_tables, test_code};
static const gaio_kernel_set broken_set = {"broken", broken_tables, broken_code};

static void register_sets(void) {
    gaio__kernels_register(&test_set);
    gaio__kernels_register(&broken_set);
}

static gaio_status launch(gaio_stream *s, const char *name, uint32_t v) {
    gaio_kernel *k = NULL;
    OK(gaio_kernel_find(name, &k));
    gaio_arg arg = GAIO_ARG(v);
    gaio_status st = gaio_launch(s, k, (gaio_dim3){1, 1, 1}, (gaio_dim3){1, 1, 1}, 0, &arg, 1);
    OK(gaio_kernel_release(k));
    return st;
}

/* Fails with any status (a real driver and the fake refuse bad code differently) and
 * a message that says `what`. */
static void fails_with(gaio_status st, const char *what) {
    if (st == GAIO_OK || !strstr(gaio_last_error(), "gaio_launch") || !strstr(gaio_last_error(), what)) {
        fprintf(stderr, "expected a failure of gaio_launch saying \"%s\", got %s: %s\n", what,
                gaio_status_string(st), gaio_last_error());
        exit(1);
    }
}

static void round_on(int device) {
    gaio_context *ctx;
    OK(gaio_context_create(device, NULL, &ctx));
    gaio_stream *s;
    OK(gaio_context_default_stream(ctx, &s));
    atomic_store(&host_calls, 0);
    if (device == 0) {
        OK(launch(s, "gaio_test_set_a", 1));
        OK(launch(s, "gaio_test_set_b", 2));
        OK(launch(s, "gaio_test_set_missing", 4));
        OK(launch(s, "gaio_test_broken", 8));
        OK(gaio_stream_synchronize(s));
        CHECK(atomic_load(&host_calls) == 15);
    } else {
        /* The broken set first: its failure must not stop the other set loading. The fake
         * refuses the bytes at cuLibraryLoadData; a real driver (lazy loading) may take
         * them and then find no kernel in them: either way the message names the set. */
        fails_with(launch(s, "gaio_test_broken", 8), "gaio's broken ");
        fails_with(launch(s, "gaio_test_broken", 8), "gaio's broken "); /* again, not another state */
        OK(launch(s, "gaio_test_set_b", 2)); /* from the second image of the set */
        OK(launch(s, "gaio_test_set_a", 1));
        FAILS(GAIO_ERR_NOT_FOUND, launch(s, "gaio_test_set_missing", 4), "gaio_launch");
        CHECK(strstr(gaio_last_error(), "'gaio_test_set_missing' is missing from gaio's test device code"));
        OK(gaio_stream_synchronize(s));
        CHECK(atomic_load(&host_calls) == 0); /* the device ran them */
    }
    OK(gaio_context_release(ctx));
}

static void run(int device) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, register_sets);
    round_on(device);
    test_shutdown(); /* unloads the device code: the next round loads it again */
    round_on(device);
}
