/* Stream failure: a registered host kernel that returns GAIO_ERR_DEVICE fails
 * its stream. Later copies, fills and kernels are skipped (their destinations
 * stay untouched), later futures and events complete with GAIO_ERR_DEVICE and a
 * message naming the kernel, gaio_stream_query and gaio_stream_synchronize
 * report it, the failure sticks, and other streams (of the same context and of
 * another one) keep working.
 *
 * The same source runs on every backend. The fill kernel has a CUDA twin. A GPU
 * kernel cannot fail softly: a real fault poisons the CUDA context for the whole
 * process (tests/core/test_cuda_fault.c checks that), so on CUDA devices the failing
 * "kernels" are host functions returning the same status at the same point, and
 * the messages name the host function instead (see launch_fail in support.h). */
#include <stdatomic.h>

#include "common.h"
#include "support.h"

#define NW 1024

/* x[i] = value + i */
static gaio_status fill_kernel(const gaio_launch_info *info, void *const *args) {
    (void)info;
    uint32_t *x, n, value;
    memcpy(&x, args[0], sizeof x);
    memcpy(&n, args[1], sizeof n);
    memcpy(&value, args[2], sizeof value);
    for (uint32_t i = 0; i < n; i++) x[i] = value + i;
    return GAIO_OK;
}

static gaio_status user_fault_kernel(const gaio_launch_info *info, void *const *args) {
    (void)info;
    (void)args;
    return GAIO_ERR_USER;
}

/* The CUDA twin of fill_kernel: a grid-stride loop covers n for any launch. */
static const char *FILL_CU =
    "extern \"C\" __global__ void failure_fill(unsigned *x, unsigned n, unsigned value) {\n"
    "    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)\n"
    "        x[i] = value + i;\n"
    "}\n";

static gaio_kernel *g_fill, *g_user_fault;

/* The CUDA stand-in for user_fault_kernel (launch_fail has its own for GAIO_ERR_DEVICE).
 * On a failed stream it does nothing, as the skipped kernel would (host functions are
 * called all the same). */
static gaio_status user_fault_fn(gaio_status st, void *user) {
    (void)user;
    return st == GAIO_OK ? GAIO_ERR_USER : GAIO_OK;
}

/* What a user fault's message names: the kernel, or on CUDA the host function. */
static const char *user_fault_name(void) {
    return fail_on_cuda() ? "a host function returned GAIO_ERR_USER" : "failure_user_fault";
}

static void launch_fill(gaio_stream *s, gaio_buffer *b, uint32_t n, uint32_t value) {
    gaio_arg args[3] = {GAIO_ARG_BUFFER(b), GAIO_ARG(n), GAIO_ARG(value)};
    OK(gaio_launch(s, g_fill, (gaio_dim3){1, 1, 1}, (gaio_dim3){1, 1, 1}, 0, args, 3));
}

static void launch_user_fault(gaio_stream *s) {
    if (fail_on_cuda()) OK(gaio_launch_host_func(s, user_fault_fn, NULL));
    else OK(gaio_launch(s, g_user_fault, (gaio_dim3){1, 1, 1}, (gaio_dim3){1, 1, 1}, 0, NULL, 0));
}

/* PINNED: the host reads it, and kernels may write it (pageable HOST memory is
 * refused as a kernel argument). */
static gaio_buffer *host_buf(gaio_context *ctx, uint32_t pattern) {
    gaio_buffer *b;
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_PINNED, NW * 4, &b));
    uint32_t *h = host_words(b);
    for (int i = 0; i < NW; i++) h[i] = pattern;
    return b;
}

static void check_pattern(gaio_buffer *b, uint32_t pattern, const char *what) {
    uint32_t *h = host_words(b);
    for (int i = 0; i < NW; i++) {
        if (h[i] != pattern) {
            fprintf(stderr, "%s: word %d is 0x%08x, expected the untouched 0x%08x\n", what, i, h[i], pattern);
            exit(1);
        }
    }
}

/* ---- 1. what a failed stream does ---- */

static void test_failed_stream(gaio_context *ctx, uint64_t *seed) {
    gaio_stream *s, *other;
    OK(gaio_stream_create(ctx, 0, 0, &s));
    OK(gaio_stream_create(ctx, 0, 0, &other));
    gaio_buffer *src = host_buf(ctx, 0), *dst1 = host_buf(ctx, 0x0D0D0D0Du), *dst2 = host_buf(ctx, 0x0D0D0D0Du),
                *dst3 = host_buf(ctx, 0x0D0D0D0Du), *dst4 = host_buf(ctx, 0x0D0D0D0Du), *dev, *back;
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_DEVICE, NW * 4, &dev));
    back = host_buf(ctx, 0x0D0D0D0Du);
    uint32_t *hs = host_words(src);
    for (int i = 0; i < NW; i++) hs[i] = (uint32_t)test_rand(seed) | 8u;
    gaio_event *ev_before, *ev_after;
    OK(gaio_event_create(ctx, 0, &ev_before));
    OK(gaio_event_create(ctx, 0, &ev_after));
    atomic_int hf_status = -1;
    int calls0 = fail_calls();

    gaio_future *f_before, *f_after;
    OK(gaio_memcpy_async(s, dst1, 0, src, 0, NW * 4));
    OK(gaio_memcpy_async(s, dev, 0, src, 0, NW * 4));
    OK(gaio_event_record(ev_before, s));
    OK(gaio_future_fence(s, &f_before));
    launch_fail(s);
    OK(gaio_memcpy_async(s, dst2, 0, src, 0, NW * 4));                      /* skipped */
    OK(gaio_memset_async(s, dst3, 0, 0x99, NW * 4));                        /* skipped */
    launch_fill(s, dst4, NW, 0x1000u);                                      /* skipped */
    OK(gaio_memcpy_2d_async(s, dst2, 0, 64, src, 0, 64, 32, 16));           /* skipped */
    OK(gaio_memset_async(s, dev, 0, 0x55, NW * 4));                         /* skipped */
    OK(gaio_memcpy_async(s, back, 0, dev, 0, NW * 4));                      /* skipped */
    OK(gaio_launch_host_func(s, status_fn, &hf_status));
    OK(gaio_event_record(ev_after, s));
    OK(gaio_future_fence(s, &f_after));

    OK(gaio_future_wait(f_before, BIG_TIMEOUT_NS));
    CHECK(gaio_future_wait(f_after, BIG_TIMEOUT_NS) == GAIO_ERR_DEVICE);
    const char *m = gaio_future_message(f_after);
    CHECK(strstr(m, fail_name()) != NULL && strstr(m, "GAIO_ERR_DEVICE") != NULL);
    CHECK(fail_calls() == calls0 + 1);
    CHECK(atomic_load(&hf_status) == GAIO_ERR_DEVICE);
    CHECK(memcmp(host_words(dst1), hs, NW * 4) == 0); /* before the fault: done */
    check_pattern(dst2, 0x0D0D0D0Du, "copy after the fault");
    check_pattern(dst3, 0x0D0D0D0Du, "memset after the fault");
    check_pattern(dst4, 0x0D0D0D0Du, "kernel after the fault");
    check_pattern(back, 0x0D0D0D0Du, "device round trip after the fault");
    OK(gaio_event_query(ev_before));
    CHECK(gaio_event_query(ev_after) == GAIO_ERR_DEVICE);
    CHECK(gaio_event_synchronize(ev_after) == GAIO_ERR_DEVICE);
    FAILS(GAIO_ERR_DEVICE, gaio_stream_query(s), "gaio_stream_query");
    CHECK(strstr(gaio_last_error(), fail_name()) != NULL);
    FAILS(GAIO_ERR_DEVICE, gaio_stream_synchronize(s), "gaio_stream_synchronize");
    CHECK(strstr(gaio_last_error(), fail_name()) != NULL);
    float ms;
    CHECK(gaio_event_elapsed_ms(ev_before, ev_after, &ms) == GAIO_ERR_DEVICE);

    /* Sticky: new work is accepted but skipped, new futures fail the same way. */
    OK(gaio_memcpy_async(s, dst2, 0, src, 0, NW * 4));
    launch_fill(s, dst4, NW, 7);
    gaio_future *f_late;
    OK(gaio_future_fence(s, &f_late));
    CHECK(gaio_future_wait(f_late, BIG_TIMEOUT_NS) == GAIO_ERR_DEVICE);
    CHECK(strcmp(gaio_future_message(f_late), m) == 0);
    check_pattern(dst2, 0x0D0D0D0Du, "copy after the failure was known");
    check_pattern(dst4, 0x0D0D0D0Du, "kernel after the failure was known");
    CHECK(gaio_stream_synchronize(s) == GAIO_ERR_DEVICE);

    /* Another stream of the context is not affected. */
    gaio_buffer *o1 = host_buf(ctx, 0), *o2 = host_buf(ctx, 0);
    OK(gaio_memcpy_async(other, o1, 0, src, 0, NW * 4));
    launch_fill(other, o2, NW, 0xABC00000u);
    OK(gaio_stream_synchronize(other));
    OK(gaio_stream_query(other));
    CHECK(memcmp(host_words(o1), hs, NW * 4) == 0);
    uint32_t *h2 = host_words(o2);
    for (uint32_t i = 0; i < NW; i++) CHECK(h2[i] == 0xABC00000u + i);
    /* The context reports the failure of its stream. */
    CHECK(gaio_context_synchronize(ctx) == GAIO_ERR_DEVICE);

    OK(gaio_future_release(f_before));
    OK(gaio_future_release(f_after));
    OK(gaio_future_release(f_late));
    OK(gaio_event_release(ev_before));
    OK(gaio_event_release(ev_after));
    gaio_buffer *all[] = {src, dst1, dst2, dst3, dst4, dev, back, o1, o2};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) OK(gaio_buffer_release(all[i]));
    OK(gaio_stream_release(s));
    OK(gaio_stream_release(other));
}

/* ---- 2. a failure amid concurrent work: only its own stream stops ---- */

#define NSTREAMS 4
#define ROUNDS 60

static void test_concurrent(gaio_context *ctx, gaio_context *ctx2, uint64_t *seed) {
    gaio_stream *s[NSTREAMS], *s2;
    gaio_buffer *out[NSTREAMS], *out2;
    for (int i = 0; i < NSTREAMS; i++) {
        OK(gaio_stream_create(ctx, i % 2, i == 3 ? GAIO_STREAM_DEFERRED : 0, &s[i]));
        out[i] = host_buf(ctx, 0x0D0D0D0Du);
    }
    OK(gaio_stream_create(ctx2, 0, 0, &s2));
    out2 = host_buf(ctx2, 0x0D0D0D0Du);
    const int failing = (int)(test_rand(seed) % NSTREAMS), fail_round = ROUNDS / 2;
    uint32_t base[ROUNDS];
    gaio_future *fut[NSTREAMS][ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        base[r] = (uint32_t)test_rand(seed) | 1u;
        for (int i = 0; i < NSTREAMS; i++) {
            if (i == failing && r == fail_round) launch_fail(s[i]);
            launch_fill(s[i], out[i], NW, base[r] + (uint32_t)i);
            OK(gaio_future_fence(s[i], &fut[i][r]));
        }
        launch_fill(s2, out2, NW, base[r]);
    }
    OK(gaio_stream_synchronize(s2));
    for (int i = 0; i < NSTREAMS; i++) {
        for (int r = 0; r < ROUNDS; r++) {
            gaio_status want = (i == failing && r >= fail_round) ? GAIO_ERR_DEVICE : GAIO_OK;
            CHECK(gaio_future_wait(fut[i][r], BIG_TIMEOUT_NS) == want);
            OK(gaio_future_release(fut[i][r]));
        }
        /* The last fill that ran: the last round for healthy streams, the round
         * before the fault for the failed one. */
        int last = i == failing ? fail_round - 1 : ROUNDS - 1;
        uint32_t *h = host_words(out[i]);
        for (uint32_t k = 0; k < NW; k++) CHECK(h[k] == base[last] + (uint32_t)i + k);
        if (i == failing) CHECK(gaio_stream_query(s[i]) == GAIO_ERR_DEVICE);
        else OK(gaio_stream_query(s[i]));
    }
    uint32_t *h2 = host_words(out2);
    for (uint32_t k = 0; k < NW; k++) CHECK(h2[k] == base[ROUNDS - 1] + k);
    OK(gaio_context_synchronize(ctx2)); /* another context: untouched by the failure */
    gaio_stream *def;
    OK(gaio_context_default_stream(ctx, &def));
    OK(gaio_stream_synchronize(def));
    for (int i = 0; i < NSTREAMS; i++) {
        OK(gaio_buffer_release(out[i]));
        OK(gaio_stream_release(s[i]));
    }
    OK(gaio_buffer_release(out2));
    OK(gaio_stream_release(s2));
}

/* ---- 3. other failure statuses pass through as they are ---- */

static void test_other_status(gaio_context *ctx) {
    gaio_stream *s;
    OK(gaio_stream_create(ctx, 0, 0, &s));
    launch_user_fault(s);
    launch_fail(s); /* skipped: the first failure sticks */
    gaio_future *f;
    OK(gaio_future_fence(s, &f));
    CHECK(gaio_future_wait(f, BIG_TIMEOUT_NS) == GAIO_ERR_USER);
    CHECK(strstr(gaio_future_message(f), user_fault_name()) != NULL);
    CHECK(gaio_stream_synchronize(s) == GAIO_ERR_USER);
    OK(gaio_future_release(f));
    OK(gaio_stream_release(s));
}

static void run(int device) {
    uint64_t seed = test_seed();
    size_t fill_sizes[3] = {sizeof(void *), 4, 4};
    /* The failing kernels stay on the host backend: see launch_fail. */
    fail_setup(device, "failure_fault");
    g_fill = test_kernel("failure_fill", fill_kernel, 3, fill_sizes, FILL_CU);
    g_user_fault = test_kernel("failure_user_fault", user_fault_kernel, 0, NULL, NULL);
    gaio_context *ctx, *ctx2;
    OK(gaio_context_create(device, NULL, &ctx));
    OK(gaio_context_create(device, NULL, &ctx2));
    test_failed_stream(ctx, &seed);
    test_concurrent(ctx, ctx2, &seed);
    test_other_status(ctx);
    OK(gaio_context_release(ctx));
    OK(gaio_context_release(ctx2));
    fail_teardown();
    OK(gaio_kernel_unregister("failure_fill"));
    OK(gaio_kernel_unregister("failure_user_fault"));
    OK(gaio_kernel_release(g_fill));
    OK(gaio_kernel_release(g_user_fault));
}
