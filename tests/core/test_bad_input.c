/* Bad input for every public function: each call fails with the right status and
 * a message naming the function, enqueues nothing, holds nothing, and crashes
 * nothing. Calls on streams are made while the stream is held by a gate, so that
 * anything wrongly enqueued would still be waiting when it is looked for: the
 * buffers they name must go back to the pool at once when released, events stay
 * unrecorded, the generator's offset stays put; after the gate opens the stream is
 * healthy and every byte of the destinations is as it was. HOST (pageable) memory
 * is refused as a kernel argument and as a random fill's destination on every
 * backend (copies and fills take it). The test kernels have CUDA twins (test_kernel
 * in common.h), so the same calls run on every backend. */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "common.h"
#include "support.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define UNDER_SANITIZER 1
#endif
#endif
#ifndef UNDER_SANITIZER
#define UNDER_SANITIZER 0
#endif

#define BUF_SIZE 4096
#define PATTERN 0x6B

static atomic_int kernel_runs, host_fn_runs, deleter_runs;

/* (uint32_t *p, uint32_t v): p[0] += v, so a run shows in the buffer on every
 * backend; the host version also counts its runs. */
static gaio_status count_kernel(const gaio_launch_info *info, void *const *args) {
    (void)info;
    unsigned char *p;
    uint32_t v, w;
    memcpy(&p, args[0], sizeof p);
    memcpy(&v, args[1], sizeof v);
    memcpy(&w, p, sizeof w);
    w += v;
    memcpy(p, &w, sizeof w);
    atomic_fetch_add(&kernel_runs, 1);
    return GAIO_OK;
}

/* No arguments: the host version counts its runs. */
static gaio_status count0_kernel(const gaio_launch_info *info, void *const *args) {
    (void)info;
    (void)args;
    atomic_fetch_add(&kernel_runs, 1);
    return GAIO_OK;
}

static const char *const COUNT_SRC =
    "extern \"C\" __global__ void bad_input_count(unsigned int *p, unsigned int v) {\n"
    "    if (blockIdx.x == 0 && threadIdx.x == 0) p[0] += v;\n"
    "}\n";
static const char *const COUNT0_SRC = "extern \"C\" __global__ void bad_input_count0() {}\n";

static bool on_host(gaio_context *ctx) {
    int device;
    OK(gaio_context_device(ctx, &device));
    gaio_device_props props;
    OK(gaio_device_get_props(device, &props));
    return props.kind == GAIO_DEVICE_HOST;
}

/* The last failure was a refusal of HOST (pageable) memory. */
static void expect_pageable_refused(void) {
    if (strstr(gaio_last_error(), "HOST (pageable)") == NULL) {
        fprintf(stderr, "expected a refusal of HOST (pageable) memory, got: %s\n", gaio_last_error());
        exit(1);
    }
}

static gaio_status count_host_fn(gaio_status st, void *user) {
    (void)st;
    (void)user;
    atomic_fetch_add(&host_fn_runs, 1);
    return GAIO_OK;
}

static void count_deleter(void *ptr, void *user) {
    (void)ptr;
    (void)user;
    atomic_fetch_add(&deleter_runs, 1);
}

static void noop_then(gaio_future *f, gaio_status st, void *user) {
    (void)f;
    (void)st;
    (void)user;
}

/* ---- status strings, version, thread-local messages ---- */

static void test_status_strings(void) {
    static const struct {
        gaio_status st;
        const char *name;
    } names[] = {
        {GAIO_OK, "GAIO_OK"},
        {GAIO_ERR_INVALID_ARG, "GAIO_ERR_INVALID_ARG"},
        {GAIO_ERR_NO_MEMORY, "GAIO_ERR_NO_MEMORY"},
        {GAIO_ERR_NOT_READY, "GAIO_ERR_NOT_READY"},
        {GAIO_ERR_TIMEOUT, "GAIO_ERR_TIMEOUT"},
        {GAIO_ERR_NOT_SUPPORTED, "GAIO_ERR_NOT_SUPPORTED"},
        {GAIO_ERR_NOT_FOUND, "GAIO_ERR_NOT_FOUND"},
        {GAIO_ERR_STATE, "GAIO_ERR_STATE"},
        {GAIO_ERR_DEVICE, "GAIO_ERR_DEVICE"},
        {GAIO_ERR_DRIVER, "GAIO_ERR_DRIVER"},
        {GAIO_ERR_SYSTEM, "GAIO_ERR_SYSTEM"},
        {GAIO_ERR_CANCELLED, "GAIO_ERR_CANCELLED"},
        {GAIO_ERR_USER, "GAIO_ERR_USER"},
    };
    const size_t n = sizeof names / sizeof names[0];
    for (size_t i = 0; i < n; i++) {
        CHECK((int)names[i].st == (int)i); /* the codes are 0..12 with no gaps */
        const char *s = gaio_status_string(names[i].st);
        CHECK(s != NULL);
        if (strcmp(s, names[i].name) != 0) {
            fprintf(stderr, "gaio_status_string(%d) = '%s', expected '%s'\n", (int)names[i].st, s, names[i].name);
            exit(1);
        }
    }
    /* Codes that are not statuses still get a constant string, none of the real names. */
    const int bogus[] = {(int)n, 99, -1, INT_MAX, INT_MIN};
    for (size_t b = 0; b < sizeof bogus / sizeof bogus[0]; b++) {
        const char *s = gaio_status_string((gaio_status)bogus[b]);
        CHECK(s != NULL && s[0] != '\0');
        for (size_t i = 0; i < n; i++) CHECK(strcmp(s, names[i].name) != 0);
    }
}

typedef struct tl_state {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int step;
    char seen_initially[64];
    char after_own[640];
    char after_other[640];
} tl_state;

static void tl_wait_step(tl_state *t, int step) {
    pthread_mutex_lock(&t->lock);
    while (t->step < step) pthread_cond_wait(&t->cond, &t->lock);
    pthread_mutex_unlock(&t->lock);
}

static void tl_set_step(tl_state *t, int step) {
    pthread_mutex_lock(&t->lock);
    t->step = step;
    pthread_cond_broadcast(&t->cond);
    pthread_mutex_unlock(&t->lock);
}

static void *tl_thread(void *arg) {
    tl_state *t = arg;
    /* A new thread starts with an empty message. */
    snprintf(t->seen_initially, sizeof t->seen_initially, "%s", gaio_last_error());
    gaio_kernel *k;
    gaio_status st = gaio_kernel_find(NULL, &k);
    snprintf(t->after_own, sizeof t->after_own, "%s:%s", gaio_status_string(st), gaio_last_error());
    tl_set_step(t, 1);
    tl_wait_step(t, 2); /* the main thread fails differently meanwhile */
    snprintf(t->after_other, sizeof t->after_other, "%s", gaio_last_error());
    tl_set_step(t, 3);
    return NULL;
}

static void test_thread_local_errors(void) {
    /* This thread's message first. */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_cq_create(NULL), "gaio_cq_create");
    tl_state t;
    memset(&t, 0, sizeof t);
    pthread_mutex_init(&t.lock, NULL);
    pthread_cond_init(&t.cond, NULL);
    pthread_t th;
    CHECK(pthread_create(&th, NULL, tl_thread, &t) == 0);
    tl_wait_step(&t, 1);
    /* The other thread's failure did not touch ours. */
    CHECK(strstr(gaio_last_error(), "gaio_cq_create") != NULL);
    /* Ours does not touch the other thread's. */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_device_count(NULL), "gaio_device_count");
    tl_set_step(&t, 2);
    tl_wait_step(&t, 3);
    CHECK(pthread_join(th, NULL) == 0);
    CHECK(t.seen_initially[0] == '\0');
    CHECK(strncmp(t.after_own, "GAIO_ERR_INVALID_ARG:", 21) == 0);
    CHECK(strstr(t.after_own, "gaio_kernel_find") != NULL);
    CHECK(strstr(t.after_other, "gaio_kernel_find") != NULL);
    CHECK(strstr(t.after_other, "gaio_device_count") == NULL);
    CHECK(strstr(gaio_last_error(), "gaio_device_count") != NULL);
    /* A successful call leaves the last failure's message in place. */
    int count;
    OK(gaio_device_count(&count));
    CHECK(strstr(gaio_last_error(), "gaio_device_count") != NULL);
    pthread_cond_destroy(&t.cond);
    pthread_mutex_destroy(&t.lock);
}

/* ---- process-wide calls: devices, configuration, shutdown ---- */

static void test_devices_and_config(void) {
    int count = 0;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_device_count(NULL), "gaio_device_count");
    OK(gaio_device_count(&count));
    CHECK(count >= 1);
    gaio_device_props p;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_device_get_props(0, NULL), "gaio_device_get_props");
    const int missing[] = {-1, count, count + 5, INT_MAX, INT_MIN};
    for (size_t i = 0; i < sizeof missing / sizeof missing[0]; i++) {
        FAILS(GAIO_ERR_NOT_FOUND, gaio_device_get_props(missing[i], &p), "gaio_device_get_props");
        gaio_context *c = (gaio_context *)&p;
        FAILS(GAIO_ERR_NOT_FOUND, gaio_context_create(missing[i], NULL, &c), "gaio_context_create");
    }
    if (count == 1) { /* a CPU-only process: device 1 is not there */
        FAILS(GAIO_ERR_NOT_FOUND, gaio_device_get_props(1, &p), "gaio_device_get_props");
        gaio_context *c;
        FAILS(GAIO_ERR_NOT_FOUND, gaio_context_create(1, NULL, &c), "gaio_context_create");
    }
    FAILS(GAIO_ERR_INVALID_ARG, gaio_context_create(0, NULL, NULL), "gaio_context_create");

    CHECK(gaio_version() == GAIO_VERSION);
    CHECK(GAIO_VERSION == GAIO_VERSION_MAJOR * 10000 + GAIO_VERSION_MINOR * 100 + GAIO_VERSION_PATCH);

    /* Before any context (this test holds none yet): shutdown succeeds, configure works. */
    test_shutdown();
    gaio_config cfg = {.cpu_workers = -1};
    FAILS(GAIO_ERR_INVALID_ARG, gaio_configure(&cfg), "gaio_configure");
    cfg.cpu_workers = 1025;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_configure(&cfg), "gaio_configure");
    cfg.cpu_workers = INT_MIN;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_configure(&cfg), "gaio_configure");
    cfg.cpu_workers = 2;
    OK(gaio_configure(&cfg));
    OK(gaio_device_get_props(0, &p));
    CHECK(p.processor_count == 2); /* the rejected configurations did not stick */

    gaio_context *ctx;
    OK(gaio_context_create(0, NULL, &ctx));
    FAILS(GAIO_ERR_STATE, gaio_configure(&cfg), "gaio_configure");
    FAILS(GAIO_ERR_STATE, gaio_configure(NULL), "gaio_configure");
    FAILS(GAIO_ERR_STATE, gaio_shutdown(), "gaio_shutdown");
    /* The context survived the refused shutdown. */
    gaio_stream *s;
    OK(gaio_context_default_stream(ctx, &s));
    gaio_buffer *b;
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_HOST, 64, &b));
    OK(gaio_memset_async(s, b, 0, 0x3C, 64));
    OK(gaio_stream_synchronize(s));
    CHECK(((unsigned char *)host_ptr(b))[63] == 0x3C);
    /* A buffer keeps its context alive: still no shutdown. */
    OK(gaio_context_release(ctx));
    FAILS(GAIO_ERR_STATE, gaio_shutdown(), "gaio_shutdown");
    OK(gaio_buffer_release(b));
    test_shutdown(); /* polls: the last op's references go just after its stream passed it */
    OK(gaio_configure(NULL));
}

/* ---- handles outside streams ---- */

static void test_context_calls(gaio_context *ctx) {
    FAILS(GAIO_ERR_INVALID_ARG, gaio_context_retain(NULL), "gaio_context_retain");
    OK(gaio_context_release(NULL));
    int dev;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_context_device(NULL, &dev), "gaio_context_device");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_context_device(ctx, NULL), "gaio_context_device");
    gaio_stream *s;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_context_default_stream(NULL, &s), "gaio_context_default_stream");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_context_default_stream(ctx, NULL), "gaio_context_default_stream");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_context_synchronize(NULL), "gaio_context_synchronize");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_context_trim(NULL, 0), "gaio_context_trim");
    gaio_pool_stats st;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_context_pool_stats(NULL, GAIO_MEM_HOST, &st), "gaio_context_pool_stats");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_context_pool_stats(ctx, GAIO_MEM_HOST, NULL), "gaio_context_pool_stats");
    const int bad_kinds[] = {-1, GAIO_MEM_KIND_COUNT, 100, INT_MAX, INT_MIN};
    for (size_t i = 0; i < sizeof bad_kinds / sizeof bad_kinds[0]; i++)
        FAILS(GAIO_ERR_INVALID_ARG, gaio_context_pool_stats(ctx, bad_kinds[i], &st), "gaio_context_pool_stats");

    FAILS(GAIO_ERR_INVALID_ARG, gaio_rng_set_state(NULL, 1, 2), "gaio_rng_set_state");
    uint64_t a, b;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_rng_get_state(NULL, &a, &b), "gaio_rng_get_state");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_rng_get_state(ctx, NULL, NULL), "gaio_rng_get_state");
}

static void test_stream_calls(gaio_context *ctx, int device) {
    gaio_device_props props;
    OK(gaio_device_get_props(device, &props));
    gaio_stream *s = NULL;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_stream_create(NULL, 0, 0, &s), "gaio_stream_create");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_stream_create(ctx, 0, 0, NULL), "gaio_stream_create");
    const int bad_prio[] = {-1, props.max_priority + 1, INT_MAX, INT_MIN};
    for (size_t i = 0; i < sizeof bad_prio / sizeof bad_prio[0]; i++)
        FAILS(GAIO_ERR_INVALID_ARG, gaio_stream_create(ctx, bad_prio[i], 0, &s), "gaio_stream_create");
    const unsigned bad_flags[] = {1u << 1, 1u << 31, ~0u, GAIO_STREAM_DEFERRED | 4u};
    for (size_t i = 0; i < sizeof bad_flags / sizeof bad_flags[0]; i++)
        FAILS(GAIO_ERR_INVALID_ARG, gaio_stream_create(ctx, 0, bad_flags[i], &s), "gaio_stream_create");
    /* The limits themselves are fine. */
    OK(gaio_stream_create(ctx, props.max_priority, GAIO_STREAM_DEFERRED, &s));
    int prio;
    OK(gaio_stream_priority(s, &prio));
    CHECK(prio == props.max_priority);
    OK(gaio_stream_release(s));

    int native_dummy = 0;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_stream_wrap(NULL, &native_dummy, 0, &s), "gaio_stream_wrap");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_stream_wrap(ctx, &native_dummy, 0, NULL), "gaio_stream_wrap");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_stream_wrap(ctx, &native_dummy, 1u << 5, &s), "gaio_stream_wrap");
    if (props.kind == GAIO_DEVICE_HOST) {
        /* The host has no native streams, whatever is passed. */
        FAILS(GAIO_ERR_NOT_SUPPORTED, gaio_stream_wrap(ctx, &native_dummy, 0, &s), "gaio_stream_wrap");
        FAILS(GAIO_ERR_NOT_SUPPORTED, gaio_stream_wrap(ctx, NULL, 0, &s), "gaio_stream_wrap");
    } else {
        FAILS(GAIO_ERR_INVALID_ARG, gaio_stream_wrap(ctx, NULL, 0, &s), "gaio_stream_wrap");
    }

    FAILS(GAIO_ERR_INVALID_ARG, gaio_stream_retain(NULL), "gaio_stream_retain");
    OK(gaio_stream_release(NULL));
    void *native;
    unsigned flags;
    gaio_context *owner;
    OK(gaio_context_default_stream(ctx, &s));
    FAILS(GAIO_ERR_INVALID_ARG, gaio_stream_native(NULL, &native), "gaio_stream_native");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_stream_native(s, NULL), "gaio_stream_native");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_stream_priority(NULL, &prio), "gaio_stream_priority");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_stream_priority(s, NULL), "gaio_stream_priority");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_stream_flags(NULL, &flags), "gaio_stream_flags");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_stream_flags(s, NULL), "gaio_stream_flags");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_stream_context(NULL, &owner), "gaio_stream_context");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_stream_context(s, NULL), "gaio_stream_context");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_stream_query(NULL), "gaio_stream_query");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_stream_synchronize(NULL), "gaio_stream_synchronize");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_launch_host_func(NULL, count_host_fn, NULL), "gaio_launch_host_func");
}

static void test_event_calls(gaio_context *ctx) {
    gaio_event *e = NULL;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_event_create(NULL, 0, &e), "gaio_event_create");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_event_create(ctx, 0, NULL), "gaio_event_create");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_event_create(ctx, 1u << 1, &e), "gaio_event_create");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_event_create(ctx, ~0u, &e), "gaio_event_create");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_event_retain(NULL), "gaio_event_retain");
    OK(gaio_event_release(NULL));
    FAILS(GAIO_ERR_INVALID_ARG, gaio_event_query(NULL), "gaio_event_query");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_event_synchronize(NULL), "gaio_event_synchronize");

    gaio_event *t1, *t2, *nt;
    OK(gaio_event_create(ctx, 0, &t1));
    OK(gaio_event_create(ctx, 0, &t2));
    OK(gaio_event_create(ctx, GAIO_EVENT_DISABLE_TIMING, &nt));
    float ms = -1.0f;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_event_elapsed_ms(NULL, t2, &ms), "gaio_event_elapsed_ms");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_event_elapsed_ms(t1, NULL, &ms), "gaio_event_elapsed_ms");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_event_elapsed_ms(t1, t2, NULL), "gaio_event_elapsed_ms");
    /* Never recorded. */
    FAILS(GAIO_ERR_STATE, gaio_event_elapsed_ms(t1, t2, &ms), "gaio_event_elapsed_ms");
    gaio_stream *s;
    OK(gaio_context_default_stream(ctx, &s));
    OK(gaio_event_record(nt, s));
    OK(gaio_event_record(t1, s));
    /* Not reached yet: the stream is held. */
    gate g = {0};
    OK(gaio_launch_host_func(s, gate_fn, &g));
    OK(gaio_event_record(t2, s));
    FAILS(GAIO_ERR_NOT_READY, gaio_event_elapsed_ms(t1, t2, &ms), "gaio_event_elapsed_ms");
    atomic_store(&g.open, 1);
    OK(gaio_event_synchronize(t2));
    OK(gaio_event_elapsed_ms(t1, t2, &ms));
    CHECK(ms >= 0.0f);
    /* Timing disabled on either end. */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_event_elapsed_ms(nt, t2, &ms), "gaio_event_elapsed_ms");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_event_elapsed_ms(t1, nt, &ms), "gaio_event_elapsed_ms");
    OK(gaio_event_release(t1));
    OK(gaio_event_release(t2));
    OK(gaio_event_release(nt));
}

static void test_buffer_calls(gaio_context *ctx) {
    gaio_buffer *b = NULL;
    gaio_stream *s;
    OK(gaio_context_default_stream(ctx, &s));
    const gaio_mem_kind bad_kinds[] = {(gaio_mem_kind)GAIO_MEM_KIND_COUNT, (gaio_mem_kind)-1, (gaio_mem_kind)100};
    gaio_pool_stats before[GAIO_MEM_KIND_COUNT];
    for (int k = 0; k < GAIO_MEM_KIND_COUNT; k++) before[k] = stats_of(ctx, (gaio_mem_kind)k);

    FAILS(GAIO_ERR_INVALID_ARG, gaio_buffer_alloc(NULL, GAIO_MEM_HOST, 16, &b), "gaio_buffer_alloc");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_buffer_alloc(ctx, GAIO_MEM_HOST, 16, NULL), "gaio_buffer_alloc");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_buffer_alloc(ctx, GAIO_MEM_HOST, 0, &b), "gaio_buffer_alloc");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_buffer_alloc(ctx, GAIO_MEM_DEVICE, SIZE_MAX, &b), "gaio_buffer_alloc");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_buffer_alloc(ctx, GAIO_MEM_PINNED, SIZE_MAX / 2 + 1, &b), "gaio_buffer_alloc");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_buffer_alloc(ctx, GAIO_MEM_MANAGED, ((size_t)1 << 48) + 1, &b),
          "gaio_buffer_alloc");
    for (size_t i = 0; i < sizeof bad_kinds / sizeof bad_kinds[0]; i++)
        FAILS(GAIO_ERR_INVALID_ARG, gaio_buffer_alloc(ctx, bad_kinds[i], 16, &b), "gaio_buffer_alloc");

    FAILS(GAIO_ERR_INVALID_ARG, gaio_buffer_alloc_async(NULL, GAIO_MEM_DEVICE, 16, &b), "gaio_buffer_alloc_async");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_buffer_alloc_async(s, GAIO_MEM_DEVICE, 16, NULL), "gaio_buffer_alloc_async");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_buffer_alloc_async(s, GAIO_MEM_DEVICE, 0, &b), "gaio_buffer_alloc_async");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_buffer_alloc_async(s, GAIO_MEM_DEVICE, SIZE_MAX, &b), "gaio_buffer_alloc_async");
    for (size_t i = 0; i < sizeof bad_kinds / sizeof bad_kinds[0]; i++)
        FAILS(GAIO_ERR_INVALID_ARG, gaio_buffer_alloc_async(s, bad_kinds[i], 16, &b), "gaio_buffer_alloc_async");

    FAILS(GAIO_ERR_INVALID_ARG, gaio_buffer_alloc_2d(NULL, GAIO_MEM_HOST, 16, 4, &b), "gaio_buffer_alloc_2d");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_buffer_alloc_2d(ctx, GAIO_MEM_HOST, 16, 4, NULL), "gaio_buffer_alloc_2d");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_buffer_alloc_2d(ctx, GAIO_MEM_HOST, 0, 4, &b), "gaio_buffer_alloc_2d");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_buffer_alloc_2d(ctx, GAIO_MEM_HOST, 16, 0, &b), "gaio_buffer_alloc_2d");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_buffer_alloc_2d(ctx, GAIO_MEM_HOST, SIZE_MAX, 1, &b), "gaio_buffer_alloc_2d");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_buffer_alloc_2d(ctx, GAIO_MEM_HOST, SIZE_MAX - 3, 2, &b), "gaio_buffer_alloc_2d");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_buffer_alloc_2d(ctx, GAIO_MEM_HOST, 1024, SIZE_MAX / 512, &b),
          "gaio_buffer_alloc_2d");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_buffer_alloc_2d(ctx, GAIO_MEM_DEVICE, 1 << 20, (size_t)1 << 29, &b),
          "gaio_buffer_alloc_2d");
    for (size_t i = 0; i < sizeof bad_kinds / sizeof bad_kinds[0]; i++)
        FAILS(GAIO_ERR_INVALID_ARG, gaio_buffer_alloc_2d(ctx, bad_kinds[i], 16, 4, &b), "gaio_buffer_alloc_2d");

    /* A size no device can hold, within the sanity limit: out of memory, named and
     * counted as nothing. (Sanitizers' allocators abort on such requests instead.) */
    if (!UNDER_SANITIZER) {
        FAILS(GAIO_ERR_NO_MEMORY, gaio_buffer_alloc(ctx, GAIO_MEM_HOST, (size_t)1 << 48, &b), "gaio_buffer_alloc");
        FAILS(GAIO_ERR_NO_MEMORY, gaio_buffer_alloc_async(s, GAIO_MEM_DEVICE, (size_t)1 << 48, &b),
              "gaio_buffer_alloc_async");
        FAILS(GAIO_ERR_NO_MEMORY, gaio_buffer_alloc_2d(ctx, GAIO_MEM_PINNED, (size_t)1 << 30, (size_t)1 << 18, &b),
              "gaio_buffer_alloc_2d");
    }
    /* No failed allocation took memory or counted as an allocation. */
    for (int k = 0; k < GAIO_MEM_KIND_COUNT; k++) {
        gaio_pool_stats now = stats_of(ctx, (gaio_mem_kind)k);
        CHECK(now.allocations == before[k].allocations);
        CHECK(now.bytes_in_use == before[k].bytes_in_use);
    }

    /* Wrapping: a failed wrap takes no ownership, so the deleter never runs. */
    unsigned char mem[64];
    memset(mem, 1, sizeof mem);
    atomic_store(&deleter_runs, 0);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_buffer_wrap(NULL, GAIO_MEM_HOST, mem, 64, count_deleter, NULL, &b),
          "gaio_buffer_wrap");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_buffer_wrap(ctx, GAIO_MEM_HOST, mem, 64, count_deleter, NULL, NULL),
          "gaio_buffer_wrap");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_buffer_wrap(ctx, GAIO_MEM_HOST, NULL, 64, count_deleter, NULL, &b),
          "gaio_buffer_wrap");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_buffer_wrap(ctx, GAIO_MEM_HOST, mem, 0, count_deleter, NULL, &b),
          "gaio_buffer_wrap");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_buffer_wrap(ctx, GAIO_MEM_HOST, mem, SIZE_MAX, count_deleter, NULL, &b),
          "gaio_buffer_wrap");
    FAILS(GAIO_ERR_INVALID_ARG,
          gaio_buffer_wrap(ctx, GAIO_MEM_HOST, (void *)(UINTPTR_MAX - 100), 4096, count_deleter, NULL, &b),
          "gaio_buffer_wrap");
    for (size_t i = 0; i < sizeof bad_kinds / sizeof bad_kinds[0]; i++)
        FAILS(GAIO_ERR_INVALID_ARG, gaio_buffer_wrap(ctx, bad_kinds[i], mem, 64, count_deleter, NULL, &b),
              "gaio_buffer_wrap");
    CHECK(atomic_load(&deleter_runs) == 0);

    /* Accessors. */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_buffer_retain(NULL), "gaio_buffer_retain");
    OK(gaio_buffer_release(NULL));
    gaio_buffer *dev;
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_DEVICE, 64, &dev));
    size_t n;
    gaio_mem_kind kind;
    int device;
    void *p;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_buffer_size(NULL, &n), "gaio_buffer_size");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_buffer_size(dev, NULL), "gaio_buffer_size");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_buffer_kind(NULL, &kind), "gaio_buffer_kind");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_buffer_kind(dev, NULL), "gaio_buffer_kind");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_buffer_device(NULL, &device), "gaio_buffer_device");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_buffer_device(dev, NULL), "gaio_buffer_device");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_buffer_pitch(NULL, &n), "gaio_buffer_pitch");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_buffer_pitch(dev, NULL), "gaio_buffer_pitch");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_buffer_device_ptr(NULL, &p), "gaio_buffer_device_ptr");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_buffer_device_ptr(dev, NULL), "gaio_buffer_device_ptr");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_buffer_host_ptr(NULL, &p), "gaio_buffer_host_ptr");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_buffer_host_ptr(dev, NULL), "gaio_buffer_host_ptr");
    /* DEVICE memory has no host address, on every backend. */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_buffer_host_ptr(dev, &p), "gaio_buffer_host_ptr");
    gaio_buffer *dev2d, *devwrap;
    OK(gaio_buffer_alloc_2d(ctx, GAIO_MEM_DEVICE, 10, 3, &dev2d));
    FAILS(GAIO_ERR_INVALID_ARG, gaio_buffer_host_ptr(dev2d, &p), "gaio_buffer_host_ptr");
    OK(gaio_buffer_device_ptr(dev, &p));
    OK(gaio_buffer_wrap(ctx, GAIO_MEM_DEVICE, p, 64, count_deleter, NULL, &devwrap));
    FAILS(GAIO_ERR_INVALID_ARG, gaio_buffer_host_ptr(devwrap, &p), "gaio_buffer_host_ptr");
    OK(gaio_buffer_release(devwrap));
    CHECK(atomic_load(&deleter_runs) == 1);
    OK(gaio_buffer_release(dev2d));
    OK(gaio_buffer_release(dev));
}

static void test_future_and_cq_calls(gaio_context *ctx) {
    gaio_stream *s;
    OK(gaio_context_default_stream(ctx, &s));
    gaio_future *f = NULL, *done;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_future_fence(NULL, &f), "gaio_future_fence");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_future_fence(s, NULL), "gaio_future_fence");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_future_from_event(NULL, &f), "gaio_future_from_event");
    gaio_event *e;
    OK(gaio_event_create(ctx, 0, &e));
    FAILS(GAIO_ERR_INVALID_ARG, gaio_future_from_event(e, NULL), "gaio_future_from_event");
    OK(gaio_future_fence(s, &done));
    OK(gaio_future_wait(done, GAIO_INFINITE));

    /* Joins: NULL array, NULL entries anywhere, NULL out. */
    gaio_future *list[3] = {done, NULL, done};
    FAILS(GAIO_ERR_INVALID_ARG, gaio_future_join(NULL, 2, &f), "gaio_future_join");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_future_join(list, 3, &f), "gaio_future_join");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_future_join(list + 1, 1, &f), "gaio_future_join");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_future_join(list, 1, NULL), "gaio_future_join");
    /* An empty join is fine and complete at once. */
    OK(gaio_future_join(NULL, 0, &f));
    OK(gaio_future_poll(f));
    OK(gaio_future_release(f));

    FAILS(GAIO_ERR_INVALID_ARG, gaio_future_retain(NULL), "gaio_future_retain");
    OK(gaio_future_release(NULL));
    FAILS(GAIO_ERR_INVALID_ARG, gaio_future_wait(NULL, 0), "gaio_future_wait");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_future_wait(done, -1), "gaio_future_wait");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_future_wait(done, INT64_MIN), "gaio_future_wait");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_future_poll(NULL), "gaio_future_poll");
    CHECK(gaio_future_message(NULL) != NULL && gaio_future_message(NULL)[0] == '\0');
    FAILS(GAIO_ERR_INVALID_ARG, gaio_future_then(NULL, noop_then, NULL), "gaio_future_then");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_future_then(done, NULL, NULL), "gaio_future_then");

    /* Completion queues. */
    gaio_cq *cq = NULL;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_cq_create(NULL), "gaio_cq_create");
    OK(gaio_cq_create(&cq));
    FAILS(GAIO_ERR_INVALID_ARG, gaio_cq_retain(NULL), "gaio_cq_retain");
    OK(gaio_cq_release(NULL));
    int fd;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_cq_fd(NULL, &fd), "gaio_cq_fd");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_cq_fd(cq, NULL), "gaio_cq_fd");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_cq_add(NULL, done, NULL), "gaio_cq_add");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_cq_add(cq, NULL, NULL), "gaio_cq_add");
    gaio_cq_entry ent[4];
    size_t count = 99;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_cq_pop(cq, ent, 4, NULL), "gaio_cq_pop");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_cq_pop(NULL, ent, 4, &count), "gaio_cq_pop");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_cq_pop(cq, NULL, 4, &count), "gaio_cq_pop");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_cq_pop(cq, ent, 0, &count), "gaio_cq_pop");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_cq_wait(cq, ent, 4, NULL, 0), "gaio_cq_wait");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_cq_wait(NULL, ent, 4, &count, 0), "gaio_cq_wait");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_cq_wait(cq, NULL, 4, &count, 0), "gaio_cq_wait");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_cq_wait(cq, ent, 0, &count, 0), "gaio_cq_wait");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_cq_wait(cq, ent, 4, &count, -1), "gaio_cq_wait");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_cq_wait(cq, ent, 4, &count, INT64_MIN), "gaio_cq_wait");
    /* Nothing was posted by the failed adds, though `done` is complete. */
    OK(gaio_cq_pop(cq, ent, 4, &count));
    CHECK(count == 0);
    OK(gaio_cq_release(cq));
    OK(gaio_future_release(done));
    OK(gaio_event_release(e));
}

static void test_kernel_registry_calls(void) {
    static const size_t sizes[2] = {sizeof(void *), sizeof(uint32_t)};
    gaio_kernel *k = NULL;
    char long_name[300];
    memset(long_name, 'k', sizeof long_name);
    long_name[256] = '\0'; /* 256 characters: one too many */
    const size_t zero_size[2] = {sizeof(void *), 0}, huge_size[2] = {sizeof(void *), 4097};
    FAILS(GAIO_ERR_INVALID_ARG, gaio_kernel_register(NULL, count_kernel, 2, sizes, &k), "gaio_kernel_register");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_kernel_register("", count_kernel, 2, sizes, &k), "gaio_kernel_register");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_kernel_register(long_name, count_kernel, 2, sizes, &k), "gaio_kernel_register");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_kernel_register("gaio_x", count_kernel, 2, sizes, &k), "gaio_kernel_register");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_kernel_register("bad.fn", NULL, 2, sizes, &k), "gaio_kernel_register");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_kernel_register("bad.sizes", count_kernel, 2, NULL, &k), "gaio_kernel_register");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_kernel_register("bad.zero", count_kernel, 2, zero_size, &k),
          "gaio_kernel_register");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_kernel_register("bad.huge", count_kernel, 2, huge_size, &k),
          "gaio_kernel_register");
    size_t many[65];
    for (int i = 0; i < 65; i++) many[i] = 4;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_kernel_register("bad.many", count_kernel, 65, many, &k), "gaio_kernel_register");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_kernel_register("bad.max", count_kernel, SIZE_MAX, many, &k),
          "gaio_kernel_register");
    /* None of them got registered. */
    const char *names[] = {"gaio_x", "bad.fn", "bad.sizes", "bad.zero", "bad.huge", "bad.many", "bad.max", long_name};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        FAILS(GAIO_ERR_NOT_FOUND, gaio_kernel_find(names[i], &k), "gaio_kernel_find");
    /* The limits themselves are fine: 255 characters, 64 arguments of 4096 bytes.
     * Registered for the host only and never launched: no CUDA kernel takes 64
     * arguments of 4096 bytes (CUDA's parameter space is at most 32 KiB). */
    long_name[255] = '\0';
    size_t limit_sizes[64];
    for (int i = 0; i < 64; i++) limit_sizes[i] = 4096;
    OK(gaio_kernel_register(long_name, count_kernel, 64, limit_sizes, NULL));
    FAILS(GAIO_ERR_STATE, gaio_kernel_register(long_name, count_kernel, 2, sizes, &k), "gaio_kernel_register");
    OK(gaio_kernel_unregister(long_name));

    FAILS(GAIO_ERR_INVALID_ARG, gaio_kernel_unregister(NULL), "gaio_kernel_unregister");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_kernel_unregister("gaio_philox_bits_u32"), "gaio_kernel_unregister");
    FAILS(GAIO_ERR_NOT_FOUND, gaio_kernel_unregister("no.such.kernel"), "gaio_kernel_unregister");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_kernel_find(NULL, &k), "gaio_kernel_find");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_kernel_find("gaio_philox_bits_u32", NULL), "gaio_kernel_find");
    FAILS(GAIO_ERR_NOT_FOUND, gaio_kernel_find("no.such.kernel", &k), "gaio_kernel_find");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_kernel_retain(NULL), "gaio_kernel_retain");
    OK(gaio_kernel_release(NULL));
    CHECK(gaio_kernel_name(NULL) != NULL && gaio_kernel_name(NULL)[0] == '\0');
}

/* ---- calls that would enqueue: bad ones on a held stream ---- */

#define KNAME "bad_input_count"
#define KNAME0 "bad_input_count0"

/* Every bad stream-ordered call against dst/src (both BUF_SIZE bytes, any kinds:
 * copies and fills), kbuf (BUF_SIZE bytes of DEVICE, PINNED or MANAGED memory:
 * kernel arguments and random fills), pageable (a HOST buffer, refused by those),
 * kernel k taking (buffer, uint32_t), event e. */
static void bad_stream_ops(gaio_stream *s, gaio_buffer *dst, gaio_buffer *src, gaio_buffer *kbuf,
                           gaio_buffer *pageable, gaio_kernel *k, gaio_event *e) {
    const size_t N = BUF_SIZE;
    /* 1D copies */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memcpy_async(NULL, dst, 0, src, 0, 16), "gaio_memcpy_async");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memcpy_async(s, NULL, 0, src, 0, 16), "gaio_memcpy_async");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memcpy_async(s, dst, 0, NULL, 0, 16), "gaio_memcpy_async");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memcpy_async(s, dst, 0, src, 0, 0), "gaio_memcpy_async");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memcpy_async(s, dst, 0, src, 0, N + 1), "gaio_memcpy_async");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memcpy_async(s, dst, 1, src, 0, N), "gaio_memcpy_async");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memcpy_async(s, dst, 0, src, 1, N), "gaio_memcpy_async");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memcpy_async(s, dst, N, src, 0, 1), "gaio_memcpy_async");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memcpy_async(s, dst, 0, src, N, 1), "gaio_memcpy_async");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memcpy_async(s, dst, SIZE_MAX, src, 0, 1), "gaio_memcpy_async");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memcpy_async(s, dst, 0, src, SIZE_MAX, 1), "gaio_memcpy_async");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memcpy_async(s, dst, 0, src, 0, SIZE_MAX), "gaio_memcpy_async");
    /* offset + bytes wraps around to something small */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memcpy_async(s, dst, SIZE_MAX - 7, src, 0, 16), "gaio_memcpy_async");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memcpy_async(s, dst, 0, src, SIZE_MAX - 7, 16), "gaio_memcpy_async");

    /* 2D copies */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memcpy_2d_async(NULL, dst, 0, 64, src, 0, 64, 16, 4), "gaio_memcpy_2d_async");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memcpy_2d_async(s, NULL, 0, 64, src, 0, 64, 16, 4), "gaio_memcpy_2d_async");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memcpy_2d_async(s, dst, 0, 64, NULL, 0, 64, 16, 4), "gaio_memcpy_2d_async");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memcpy_2d_async(s, dst, 0, 64, src, 0, 64, 0, 4), "gaio_memcpy_2d_async");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memcpy_2d_async(s, dst, 0, 64, src, 0, 64, 16, 0), "gaio_memcpy_2d_async");
    /* rows wider than the pitch */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memcpy_2d_async(s, dst, 0, 15, src, 0, 64, 16, 2), "gaio_memcpy_2d_async");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memcpy_2d_async(s, dst, 0, 64, src, 0, 15, 16, 2), "gaio_memcpy_2d_async");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memcpy_2d_async(s, dst, 0, 0, src, 0, 0, 16, 2), "gaio_memcpy_2d_async");
    /* the last row ends one byte past the end: (h-1)*pitch + width = N + 1 */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memcpy_2d_async(s, dst, 0, 64, src, 0, 64, 65, N / 64), "gaio_memcpy_2d_async");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memcpy_2d_async(s, dst, 1, 64, src, 0, 64, 64, N / 64), "gaio_memcpy_2d_async");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memcpy_2d_async(s, dst, 0, 64, src, 1, 64, 64, N / 64), "gaio_memcpy_2d_async");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memcpy_2d_async(s, dst, 0, 64, src, 0, 64, 64, N / 64 + 1),
          "gaio_memcpy_2d_async");
    /* pitch * (height - 1) overflows */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memcpy_2d_async(s, dst, 0, SIZE_MAX / 2, src, 0, 64, 16, 3),
          "gaio_memcpy_2d_async");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memcpy_2d_async(s, dst, 0, 64, src, 0, SIZE_MAX / 2, 16, 3),
          "gaio_memcpy_2d_async");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memcpy_2d_async(s, dst, 0, 64, src, 0, 64, 16, SIZE_MAX), "gaio_memcpy_2d_async");
    /* span + width overflows */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memcpy_2d_async(s, dst, 0, SIZE_MAX, src, 0, SIZE_MAX, SIZE_MAX, 2),
          "gaio_memcpy_2d_async");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memcpy_2d_async(s, dst, SIZE_MAX - 7, 64, src, 0, 64, 16, 1),
          "gaio_memcpy_2d_async");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memcpy_2d_async(s, dst, 0, 64, src, SIZE_MAX, 64, 16, 1), "gaio_memcpy_2d_async");

    /* fills */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memset_async(NULL, dst, 0, 1, 16), "gaio_memset_async");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memset_async(s, NULL, 0, 1, 16), "gaio_memset_async");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memset_async(s, dst, 0, -1, 16), "gaio_memset_async");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memset_async(s, dst, 0, 256, 16), "gaio_memset_async");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memset_async(s, dst, 0, INT_MIN, 16), "gaio_memset_async");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memset_async(s, dst, 0, INT_MAX, 16), "gaio_memset_async");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memset_async(s, dst, 0, 1, 0), "gaio_memset_async");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memset_async(s, dst, 0, 1, N + 1), "gaio_memset_async");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memset_async(s, dst, 1, 1, N), "gaio_memset_async");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memset_async(s, dst, N, 1, 1), "gaio_memset_async");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memset_async(s, dst, SIZE_MAX, 1, 1), "gaio_memset_async");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memset_async(s, dst, SIZE_MAX - 7, 1, 16), "gaio_memset_async");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memset_async(s, dst, 0, 1, SIZE_MAX), "gaio_memset_async");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memset_2d_async(NULL, dst, 0, 64, 1, 16, 4), "gaio_memset_2d_async");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memset_2d_async(s, NULL, 0, 64, 1, 16, 4), "gaio_memset_2d_async");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memset_2d_async(s, dst, 0, 64, -1, 16, 4), "gaio_memset_2d_async");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memset_2d_async(s, dst, 0, 64, 256, 16, 4), "gaio_memset_2d_async");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memset_2d_async(s, dst, 0, 64, 1, 0, 4), "gaio_memset_2d_async");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memset_2d_async(s, dst, 0, 64, 1, 16, 0), "gaio_memset_2d_async");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memset_2d_async(s, dst, 0, 15, 1, 16, 2), "gaio_memset_2d_async");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memset_2d_async(s, dst, 0, 64, 1, 65, N / 64), "gaio_memset_2d_async");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memset_2d_async(s, dst, 1, 64, 1, 64, N / 64), "gaio_memset_2d_async");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memset_2d_async(s, dst, 0, SIZE_MAX / 2, 1, 16, 3), "gaio_memset_2d_async");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memset_2d_async(s, dst, 0, 64, 1, 16, SIZE_MAX), "gaio_memset_2d_async");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memset_2d_async(s, dst, SIZE_MAX, 64, 1, 16, 1), "gaio_memset_2d_async");

    /* launches: k takes (buffer, uint32_t) */
    uint32_t v32 = 7;
    uint64_t v64 = 7;
    const gaio_dim3 g1 = {1, 1, 1}, b1 = {32, 1, 1};
    gaio_arg good[2] = {GAIO_ARG_BUFFER(kbuf), GAIO_ARG(v32)};
    FAILS(GAIO_ERR_INVALID_ARG, gaio_launch(NULL, k, g1, b1, 0, good, 2), "gaio_launch");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_launch(s, NULL, g1, b1, 0, good, 2), "gaio_launch");
    const gaio_dim3 bad_grids[] = {{0, 1, 1}, {1, 0, 1}, {1, 1, 0}, {0x80000000u, 1, 1}, {1, 65536, 1},
                                   {1, 1, 65536}, {UINT32_MAX, UINT32_MAX, UINT32_MAX}};
    for (size_t i = 0; i < sizeof bad_grids / sizeof bad_grids[0]; i++)
        FAILS(GAIO_ERR_INVALID_ARG, gaio_launch(s, k, bad_grids[i], b1, 0, good, 2), "gaio_launch");
    const gaio_dim3 bad_blocks[] = {{0, 1, 1},   {1, 0, 1},    {1, 1, 0},    {1025, 1, 1},
                                    {32, 33, 1}, {1, 1, 65},   {16, 16, 8},  {UINT32_MAX, 1, 1},
                                    {65536, 65536, 1} /* the product wraps to 0 in 32 bits */};
    for (size_t i = 0; i < sizeof bad_blocks / sizeof bad_blocks[0]; i++)
        FAILS(GAIO_ERR_INVALID_ARG, gaio_launch(s, k, g1, bad_blocks[i], 0, good, 2), "gaio_launch");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_launch(s, k, g1, b1, ((size_t)227 << 10) + 1, good, 2), "gaio_launch");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_launch(s, k, g1, b1, SIZE_MAX, good, 2), "gaio_launch");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_launch(s, k, g1, b1, 0, good, 1), "gaio_launch");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_launch(s, k, g1, b1, 0, good, 0), "gaio_launch");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_launch(s, k, g1, b1, 0, good, SIZE_MAX), "gaio_launch");
    gaio_arg three[3] = {GAIO_ARG_BUFFER(kbuf), GAIO_ARG(v32), GAIO_ARG(v32)};
    FAILS(GAIO_ERR_INVALID_ARG, gaio_launch(s, k, g1, b1, 0, three, 3), "gaio_launch");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_launch(s, k, g1, b1, 0, NULL, 2), "gaio_launch");
    gaio_arg wrong_size[2] = {GAIO_ARG_BUFFER(kbuf), GAIO_ARG(v64)};
    FAILS(GAIO_ERR_INVALID_ARG, gaio_launch(s, k, g1, b1, 0, wrong_size, 2), "gaio_launch");
    gaio_arg no_value[2] = {GAIO_ARG_BUFFER(kbuf), {NULL, sizeof v32, NULL, 0}};
    FAILS(GAIO_ERR_INVALID_ARG, gaio_launch(s, k, g1, b1, 0, no_value, 2), "gaio_launch");
    gaio_arg value_for_ptr[2] = {GAIO_ARG(v32), GAIO_ARG(v32)};
    FAILS(GAIO_ERR_INVALID_ARG, gaio_launch(s, k, g1, b1, 0, value_for_ptr, 2), "gaio_launch");
    gaio_arg buffer_for_value[2] = {GAIO_ARG_BUFFER(kbuf), GAIO_ARG_BUFFER(src)};
    FAILS(GAIO_ERR_INVALID_ARG, gaio_launch(s, k, g1, b1, 0, buffer_for_value, 2), "gaio_launch");
    gaio_arg past_end[2] = {GAIO_ARG_BUFFER_AT(kbuf, N + 1), GAIO_ARG(v32)};
    FAILS(GAIO_ERR_INVALID_ARG, gaio_launch(s, k, g1, b1, 0, past_end, 2), "gaio_launch");
    gaio_arg way_past_end[2] = {GAIO_ARG_BUFFER_AT(kbuf, SIZE_MAX), GAIO_ARG(v32)};
    FAILS(GAIO_ERR_INVALID_ARG, gaio_launch(s, k, g1, b1, 0, way_past_end, 2), "gaio_launch");
    /* HOST (pageable) memory is no kernel argument, on any backend, at any offset; nor
     * for gaio's own kernels launched directly. */
    gaio_arg pageable_arg[2] = {GAIO_ARG_BUFFER(pageable), GAIO_ARG(v32)};
    FAILS(GAIO_ERR_INVALID_ARG, gaio_launch(s, k, g1, b1, 0, pageable_arg, 2), "gaio_launch");
    expect_pageable_refused();
    gaio_arg pageable_at[2] = {GAIO_ARG_BUFFER_AT(pageable, 64), GAIO_ARG(v32)};
    FAILS(GAIO_ERR_INVALID_ARG, gaio_launch(s, k, g1, b1, 0, pageable_at, 2), "gaio_launch");
    expect_pageable_refused();
    gaio_kernel *bits;
    OK(gaio_kernel_find("gaio_philox_bits_u32", &bits));
    uint64_t count = 16, seed = 1, offset = 0;
    gaio_arg bits_args[4] = {GAIO_ARG_BUFFER(pageable), GAIO_ARG(count), GAIO_ARG(seed), GAIO_ARG(offset)};
    FAILS(GAIO_ERR_INVALID_ARG, gaio_launch(s, bits, g1, b1, 0, bits_args, 4), "gaio_launch");
    expect_pageable_refused();
    OK(gaio_kernel_release(bits));

    /* random fills into a buffer of N bytes = N/4 elements */
    const size_t E = N / 4;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_rng_bits_u32(NULL, kbuf, 0, 16), "gaio_rng_bits_u32");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_rng_bits_u32(s, NULL, 0, 16), "gaio_rng_bits_u32");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_rng_bits_u32(s, kbuf, 0, 0), "gaio_rng_bits_u32");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_rng_bits_u32(s, kbuf, 2, 16), "gaio_rng_bits_u32");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_rng_bits_u32(s, kbuf, 0, E + 1), "gaio_rng_bits_u32");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_rng_bits_u32(s, kbuf, 4, E), "gaio_rng_bits_u32");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_rng_bits_u32(s, kbuf, N, 1), "gaio_rng_bits_u32");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_rng_bits_u32(s, kbuf, 0, SIZE_MAX), "gaio_rng_bits_u32");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_rng_bits_u32(s, kbuf, 0, SIZE_MAX / 4 + 1), "gaio_rng_bits_u32"); /* *4 wraps */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_rng_bits_u32(s, kbuf, SIZE_MAX - 3, 1), "gaio_rng_bits_u32");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_rng_uniform_f32(NULL, kbuf, 0, 16, 0.0f, 1.0f), "gaio_rng_uniform_f32");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_rng_uniform_f32(s, NULL, 0, 16, 0.0f, 1.0f), "gaio_rng_uniform_f32");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_rng_uniform_f32(s, kbuf, 0, 0, 0.0f, 1.0f), "gaio_rng_uniform_f32");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_rng_uniform_f32(s, kbuf, 1, 16, 0.0f, 1.0f), "gaio_rng_uniform_f32");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_rng_uniform_f32(s, kbuf, 0, E + 1, 0.0f, 1.0f), "gaio_rng_uniform_f32");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_rng_uniform_f32(s, kbuf, 0, SIZE_MAX / 4 + 1, 0.0f, 1.0f), "gaio_rng_uniform_f32");
    const float bad_intervals[][2] = {{1.0f, 1.0f},          {2.0f, 1.0f},          {NAN, 1.0f},
                                      {0.0f, NAN},           {-INFINITY, 0.0f},     {0.0f, INFINITY},
                                      {-INFINITY, INFINITY}, {-FLT_MAX, FLT_MAX} /* high - low is inf */};
    for (size_t i = 0; i < sizeof bad_intervals / sizeof bad_intervals[0]; i++)
        FAILS(GAIO_ERR_INVALID_ARG, gaio_rng_uniform_f32(s, kbuf, 0, 16, bad_intervals[i][0], bad_intervals[i][1]),
              "gaio_rng_uniform_f32");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_rng_normal_f32(NULL, kbuf, 0, 16, 0.0f, 1.0f), "gaio_rng_normal_f32");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_rng_normal_f32(s, NULL, 0, 16, 0.0f, 1.0f), "gaio_rng_normal_f32");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_rng_normal_f32(s, kbuf, 0, 0, 0.0f, 1.0f), "gaio_rng_normal_f32");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_rng_normal_f32(s, kbuf, 3, 16, 0.0f, 1.0f), "gaio_rng_normal_f32");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_rng_normal_f32(s, kbuf, 0, E + 1, 0.0f, 1.0f), "gaio_rng_normal_f32");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_rng_normal_f32(s, kbuf, N - 4, 2, 0.0f, 1.0f), "gaio_rng_normal_f32");
    const float bad_normals[][2] = {{0.0f, -1.0f}, {0.0f, -FLT_MIN}, {NAN, 1.0f}, {0.0f, NAN}, {INFINITY, 1.0f},
                                    {0.0f, INFINITY}};
    for (size_t i = 0; i < sizeof bad_normals / sizeof bad_normals[0]; i++)
        FAILS(GAIO_ERR_INVALID_ARG, gaio_rng_normal_f32(s, kbuf, 0, 16, bad_normals[i][0], bad_normals[i][1]),
              "gaio_rng_normal_f32");
    /* HOST (pageable) memory is no random fill's destination, on any backend. */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_rng_bits_u32(s, pageable, 0, 16), "gaio_rng_bits_u32");
    expect_pageable_refused();
    FAILS(GAIO_ERR_INVALID_ARG, gaio_rng_uniform_f32(s, pageable, 4, 16, 0.0f, 1.0f), "gaio_rng_uniform_f32");
    expect_pageable_refused();
    FAILS(GAIO_ERR_INVALID_ARG, gaio_rng_normal_f32(s, pageable, 0, N / 4, 0.0f, 1.0f), "gaio_rng_normal_f32");
    expect_pageable_refused();

    /* stream-ordered free: on failure the caller keeps its reference */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_buffer_free_async(NULL, s), "gaio_buffer_free_async");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_buffer_free_async(dst, NULL), "gaio_buffer_free_async");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_buffer_free_async(src, NULL), "gaio_buffer_free_async");

    /* host functions and events */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_launch_host_func(s, NULL, NULL), "gaio_launch_host_func");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_event_record(NULL, s), "gaio_event_record");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_event_record(e, NULL), "gaio_event_record");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_stream_wait_event(NULL, e), "gaio_stream_wait_event");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_stream_wait_event(s, NULL), "gaio_stream_wait_event");
}

/* Boundary cases that are valid: exactly fitting ranges are accepted (the checks
 * are not off by one). Runs on its own buffer, and checks the bytes written. */
static void exact_fits(gaio_context *ctx, gaio_stream *s) {
    const size_t N = BUF_SIZE;
    gaio_buffer *a, *b;
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_HOST, N, &a));
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_MANAGED, N, &b));
    unsigned char *pa = host_ptr(a), *pb = host_ptr(b);
    memset(pa, 0x01, N);
    memset(pb, 0x02, N);
    OK(gaio_memset_async(s, a, N - 1, 0x77, 1));
    OK(gaio_memcpy_async(s, b, 0, a, N - 1, 1));
    OK(gaio_memcpy_async(s, b, 1, a, 0, N - 1));
    OK(gaio_stream_synchronize(s));
    CHECK(pb[0] == 0x77 && pb[1] == 0x01 && pb[N - 1] == 0x01);
    /* (h-1)*pitch + width == N, and one row wider than its pitch */
    OK(gaio_memset_2d_async(s, b, 0, 64, 0x33, 64, N / 64));
    OK(gaio_memcpy_2d_async(s, a, 0, 64, b, 64, 64, 64, N / 64 - 1));
    OK(gaio_memset_2d_async(s, a, N - 100, 1, 0x44, 100, 1)); /* height 1: the row may be wider than the pitch */
    OK(gaio_stream_synchronize(s));
    CHECK(pa[0] == 0x33 && pa[N - 101] == 0x33 && pa[N - 100] == 0x44 && pa[N - 1] == 0x44);
    /* The last element of a random fill's destination (MANAGED: device code reaches
     * it on every backend; HOST memory takes no random fills). */
    uint64_t seed, offset;
    OK(gaio_rng_get_state(ctx, &seed, &offset));
    OK(gaio_rng_bits_u32(s, b, N - 4, 1));
    OK(gaio_stream_synchronize(s));
    const uint32_t ctr[4] = {(uint32_t)offset, (uint32_t)(offset >> 32), 0, 0};
    const uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    uint32_t want[4], got;
    gaio_philox4x32_10(ctr, key, want);
    memcpy(&got, pb + N - 4, 4);
    CHECK(got == want[0] && pb[N - 5] == 0x33);
    OK(gaio_buffer_release(a));
    OK(gaio_buffer_release(b));
}

static void test_nothing_enqueued(gaio_context *ctx, gaio_stream *s) {
    static const size_t sizes[2] = {sizeof(void *), sizeof(uint32_t)};
    const bool host = on_host(ctx);
    gaio_kernel *k = test_kernel(KNAME, count_kernel, 2, sizes, COUNT_SRC);
    gaio_event *e;
    OK(gaio_event_create(ctx, 0, &e));
    atomic_store(&kernel_runs, 0);
    atomic_store(&host_fn_runs, 0);

    /* A host-visible pair whose bytes are checked afterwards (src, PINNED, also takes
     * the launches and random fills), a DEVICE pair and a HOST buffer that bad kernel
     * arguments and fills name, released while the stream is still held (nothing may
     * hold them). */
    gaio_buffer *dst, *src, *pdst, *psrc, *pageable;
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_HOST, BUF_SIZE, &dst));
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_PINNED, BUF_SIZE, &src));
    memset(host_ptr(dst), PATTERN, BUF_SIZE);
    memset(host_ptr(src), PATTERN ^ 0xFF, BUF_SIZE);
    gaio_pool_stats dev0 = stats_of(ctx, GAIO_MEM_DEVICE), host0 = stats_of(ctx, GAIO_MEM_HOST);
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_DEVICE, BUF_SIZE, &pdst));
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_DEVICE, BUF_SIZE, &psrc));
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_HOST, BUF_SIZE, &pageable));
    gaio_pool_stats dev1 = stats_of(ctx, GAIO_MEM_DEVICE), host1 = stats_of(ctx, GAIO_MEM_HOST);
    CHECK(dev1.bytes_in_use >= dev0.bytes_in_use + 2 * BUF_SIZE);
    CHECK(host1.bytes_in_use >= host0.bytes_in_use + BUF_SIZE);

    uint64_t seed0, off0;
    OK(gaio_rng_get_state(ctx, &seed0, &off0));

    gate g = {0};
    OK(gaio_launch_host_func(s, gate_fn, &g));
    bad_stream_ops(s, dst, src, src, pageable, k, e);
    bad_stream_ops(s, pdst, psrc, pdst, pageable, k, e);

    /* While the stream is still held: */
    CHECK(gaio_stream_query(s) == GAIO_ERR_NOT_READY); /* the gate itself */
    OK(gaio_event_query(e));                           /* never recorded, so done */
    uint64_t seed1, off1;
    OK(gaio_rng_get_state(ctx, &seed1, &off1));
    CHECK(seed1 == seed0 && off1 == off0); /* no fill reserved counters */
    OK(gaio_buffer_release(pdst));
    OK(gaio_buffer_release(psrc));
    OK(gaio_buffer_release(pageable));
    gaio_pool_stats dev2 = stats_of(ctx, GAIO_MEM_DEVICE), host2 = stats_of(ctx, GAIO_MEM_HOST);
    CHECK(dev2.bytes_in_use == dev0.bytes_in_use);   /* no op held them */
    CHECK(host2.bytes_in_use == host0.bytes_in_use); /* nor the HOST buffer */

    atomic_store(&g.open, 1);
    OK(gaio_stream_synchronize(s));
    OK(gaio_stream_query(s));
    CHECK(atomic_load(&kernel_runs) == 0);
    CHECK(atomic_load(&host_fn_runs) == 0);
    const unsigned char *pd = host_ptr(dst), *ps = host_ptr(src);
    for (size_t i = 0; i < BUF_SIZE; i++) CHECK(pd[i] == PATTERN && ps[i] == (PATTERN ^ 0xFF));

    /* The stream is healthy: valid work runs, once (the kernel adds v to src's first
     * word; kernel_runs counts runs of its host version, which a CUDA stream never
     * calls). */
    uint32_t v = 5, w0;
    memcpy(&w0, ps, sizeof w0);
    gaio_arg args[2] = {GAIO_ARG_BUFFER(src), GAIO_ARG(v)};
    OK(gaio_launch(s, k, (gaio_dim3){1, 1, 1}, (gaio_dim3){1024, 1, 1}, 0, args, 2));
    OK(gaio_launch_host_func(s, count_host_fn, NULL));
    OK(gaio_memcpy_async(s, dst, 0, src, 0, BUF_SIZE));
    OK(gaio_stream_synchronize(s));
    CHECK(atomic_load(&kernel_runs) == (host ? 1 : 0));
    CHECK(atomic_load(&host_fn_runs) == 1);
    uint32_t w1;
    memcpy(&w1, pd, sizeof w1);
    CHECK(w1 == w0 + v);
    for (size_t i = 4; i < BUF_SIZE; i++) CHECK(pd[i] == (PATTERN ^ 0xFF));
    CHECK(memcmp(pd, ps, BUF_SIZE) == 0);

    /* A kernel of no arguments takes args NULL and nargs 0. */
    gaio_kernel *k0 = test_kernel(KNAME0, count0_kernel, 0, NULL, COUNT0_SRC);
    OK(gaio_launch(s, k0, (gaio_dim3){1, 1, 1}, (gaio_dim3){1, 1, 1}, 0, NULL, 0));
    gaio_arg one[1] = {GAIO_ARG(v)};
    FAILS(GAIO_ERR_INVALID_ARG, gaio_launch(s, k0, (gaio_dim3){1, 1, 1}, (gaio_dim3){1, 1, 1}, 0, one, 1),
          "gaio_launch");
    OK(gaio_stream_synchronize(s));
    CHECK(atomic_load(&kernel_runs) == (host ? 2 : 0));
    OK(gaio_kernel_release(k0));
    OK(gaio_kernel_unregister(KNAME0));

    exact_fits(ctx, s);

    OK(gaio_buffer_release(dst));
    OK(gaio_buffer_release(src));
    OK(gaio_event_release(e));
    OK(gaio_kernel_release(k));
    OK(gaio_kernel_unregister(KNAME));
}

/* ---- mismatched devices ---- */

/* Needs a second device, so it runs only when gaio_device_count > 1 (on a CPU-only
 * machine there is nothing to mismatch). DEVICE memory of one device is rejected
 * by fills, launches and random fills on another device's stream, and by copies
 * when the devices are of different kinds; HOST memory by launches and random fills
 * anywhere; events do not cross device kinds. */
static void test_mismatched_devices(void) {
    int count;
    OK(gaio_device_count(&count));
    if (count < 2) return;
    gaio_context *ca, *cb;
    OK(gaio_context_create(0, NULL, &ca)); /* the host */
    OK(gaio_context_create(1, NULL, &cb)); /* a GPU */
    gaio_stream *sa, *sb;
    OK(gaio_context_default_stream(ca, &sa));
    OK(gaio_context_default_stream(cb, &sb));
    gaio_buffer *da, *db, *ha;
    OK(gaio_buffer_alloc(ca, GAIO_MEM_DEVICE, BUF_SIZE, &da));
    OK(gaio_buffer_alloc(cb, GAIO_MEM_DEVICE, BUF_SIZE, &db));
    OK(gaio_buffer_alloc(ca, GAIO_MEM_HOST, BUF_SIZE, &ha));
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memset_async(sa, db, 0, 1, 16), "gaio_memset_async");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memset_async(sb, da, 0, 1, 16), "gaio_memset_async");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memset_2d_async(sa, db, 0, 64, 1, 16, 2), "gaio_memset_2d_async");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memcpy_async(sa, da, 0, db, 0, 16), "gaio_memcpy_async");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memcpy_async(sb, da, 0, db, 0, 16), "gaio_memcpy_async");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memcpy_2d_async(sa, ha, 0, 64, db, 0, 64, 16, 2), "gaio_memcpy_2d_async");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_rng_bits_u32(sa, db, 0, 16), "gaio_rng_bits_u32");
    gaio_kernel *k;
    OK(gaio_kernel_find("gaio_philox_bits_u32", &k));
    uint64_t n = 4, seed = 1, off = 0;
    gaio_arg args[4] = {GAIO_ARG_BUFFER(db), GAIO_ARG(n), GAIO_ARG(seed), GAIO_ARG(off)};
    FAILS(GAIO_ERR_INVALID_ARG, gaio_launch(sa, k, (gaio_dim3){1, 1, 1}, (gaio_dim3){1, 1, 1}, 0, args, 4),
          "gaio_launch");
    /* HOST memory, of whichever context, reaches no device code. */
    args[0] = GAIO_ARG_BUFFER(ha);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_launch(sb, k, (gaio_dim3){1, 1, 1}, (gaio_dim3){1, 1, 1}, 0, args, 4),
          "gaio_launch");
    expect_pageable_refused();
    FAILS(GAIO_ERR_INVALID_ARG, gaio_rng_bits_u32(sb, ha, 0, 16), "gaio_rng_bits_u32");
    expect_pageable_refused();
    OK(gaio_kernel_release(k));
    gaio_event *ea;
    OK(gaio_event_create(ca, 0, &ea));
    FAILS(GAIO_ERR_INVALID_ARG, gaio_event_record(ea, sb), "gaio_event_record");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_stream_wait_event(sb, ea), "gaio_stream_wait_event");
    if (count > 2) { /* two GPUs: peers copy, but fills stay on their device */
        gaio_context *cc;
        OK(gaio_context_create(2, NULL, &cc));
        gaio_buffer *dc;
        OK(gaio_buffer_alloc(cc, GAIO_MEM_DEVICE, BUF_SIZE, &dc));
        FAILS(GAIO_ERR_INVALID_ARG, gaio_memset_async(sb, dc, 0, 1, 16), "gaio_memset_async");
        FAILS(GAIO_ERR_INVALID_ARG, gaio_rng_bits_u32(sb, dc, 0, 16), "gaio_rng_bits_u32");
        OK(gaio_buffer_release(dc));
        OK(gaio_context_release(cc));
    }
    OK(gaio_context_synchronize(ca));
    OK(gaio_context_synchronize(cb));
    OK(gaio_event_release(ea));
    OK(gaio_buffer_release(da));
    OK(gaio_buffer_release(db));
    OK(gaio_buffer_release(ha));
    OK(gaio_context_release(ca));
    OK(gaio_context_release(cb));
}

static void run(int device) {
    static bool first = true; /* the inputs here are fixed edge cases: no random seed */
    test_status_strings();
    test_thread_local_errors();
    if (first) test_devices_and_config(); /* needs a process with no context yet */
    first = false;
    test_kernel_registry_calls();

    gaio_context *ctx;
    OK(gaio_context_create(device, NULL, &ctx));
    test_context_calls(ctx);
    test_stream_calls(ctx, device);
    test_event_calls(ctx);
    test_buffer_calls(ctx);
    test_future_and_cq_calls(ctx);

    gaio_stream *ds, *s, *deferred;
    OK(gaio_context_default_stream(ctx, &ds));
    OK(gaio_stream_create(ctx, 1, 0, &s));
    OK(gaio_stream_create(ctx, 0, GAIO_STREAM_DEFERRED, &deferred));
    test_nothing_enqueued(ctx, ds);
    test_nothing_enqueued(ctx, s);
    test_nothing_enqueued(ctx, deferred);
    OK(gaio_stream_release(s));
    OK(gaio_stream_release(deferred));
    OK(gaio_context_synchronize(ctx));
    OK(gaio_context_release(ctx));

    test_mismatched_devices();
}
