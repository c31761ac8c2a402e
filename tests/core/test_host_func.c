/* Host functions: run in stream order, exactly once each, on a gaio thread,
 * with the stream's status; returning an error fails the stream (the first
 * failure sticks); later host functions still run, with the failure status,
 * so they can clean up (their frees would leak under ASan otherwise). The same
 * source runs on every backend (see launch_fail in support.h for what stands in
 * for a device fault on each). */
#include <pthread.h>
#include <stdatomic.h>

#include "common.h"
#include "support.h"

/* ---- 1. order, exactly once, status, thread ---- */

#define NS 3
#define PER 1000

typedef struct hf_stream_state {
    atomic_int next;      /* index the next host function of this stream must have */
    atomic_int misorder;  /* host functions that ran out of turn */
    atomic_int bad_status;
    atomic_int on_caller; /* ran on the submitting thread */
    atomic_int calls[PER];
    pthread_t caller;
} hf_stream_state;

typedef struct hf_call {
    hf_stream_state *st;
    int idx;
} hf_call;

static gaio_status order_fn(gaio_status status, void *user) {
    hf_call *c = user;
    hf_stream_state *st = c->st;
    if (status != GAIO_OK) atomic_fetch_add(&st->bad_status, 1);
    if (pthread_equal(pthread_self(), st->caller)) atomic_fetch_add(&st->on_caller, 1);
    atomic_fetch_add(&st->calls[c->idx], 1);
    int want = atomic_fetch_add(&st->next, 1);
    if (want != c->idx) atomic_fetch_add(&st->misorder, 1);
    return GAIO_OK;
}

static void test_order(gaio_context *ctx) {
    gaio_stream *s[NS];
    hf_stream_state *st = calloc(NS, sizeof *st);
    hf_call *calls = calloc(NS * PER, sizeof *calls);
    CHECK(st && calls);
    for (int i = 0; i < NS; i++) {
        OK(gaio_stream_create(ctx, i, i == 2 ? GAIO_STREAM_DEFERRED : 0, &s[i]));
        st[i].caller = pthread_self();
    }
    for (int k = 0; k < PER; k++)
        for (int i = 0; i < NS; i++) {
            hf_call *c = &calls[i * PER + k];
            c->st = &st[i];
            c->idx = k;
            OK(gaio_launch_host_func(s[i], order_fn, c));
        }
    OK(gaio_context_synchronize(ctx));
    for (int i = 0; i < NS; i++) {
        CHECK(atomic_load(&st[i].next) == PER);
        CHECK(atomic_load(&st[i].misorder) == 0);
        CHECK(atomic_load(&st[i].bad_status) == 0);
        CHECK(atomic_load(&st[i].on_caller) == 0);
        for (int k = 0; k < PER; k++) CHECK(atomic_load(&st[i].calls[k]) == 1);
    }
    /* Still exactly once after some time. */
    test_sleep_ms(5);
    for (int i = 0; i < NS; i++) CHECK(atomic_load(&st[i].next) == PER);
    for (int i = 0; i < NS; i++) OK(gaio_stream_release(s[i]));
    free(st);
    free(calls);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_launch_host_func(NULL, order_fn, NULL), "gaio_launch_host_func");
}

/* ---- 2. a host function's error fails the stream; later ones clean up ---- */

typedef struct cleanup {
    atomic_int status; /* what the host function saw */
    atomic_int calls;
    void *mem;         /* freed by the host function */
    gaio_status ret;   /* what it returns */
} cleanup;

static gaio_status cleanup_fn(gaio_status status, void *user) {
    cleanup *c = user;
    atomic_store(&c->status, (int)status);
    atomic_fetch_add(&c->calls, 1);
    free(c->mem);
    c->mem = NULL;
    return c->ret;
}

static void cleanup_init(cleanup *c, gaio_status ret) {
    atomic_init(&c->status, -1);
    atomic_init(&c->calls, 0);
    c->mem = malloc(100);
    CHECK(c->mem);
    c->ret = ret;
}

static void test_error_fails_stream(gaio_context *ctx, uint64_t *seed) {
    gaio_stream *s;
    OK(gaio_stream_create(ctx, 0, 0, &s));
    gaio_buffer *src, *dst_before, *dst_after;
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_HOST, 1024, &src));
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_HOST, 1024, &dst_before));
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_HOST, 1024, &dst_after));
    uint32_t *hs = host_words(src), *hb = host_words(dst_before), *ha = host_words(dst_after);
    for (int i = 0; i < 256; i++) {
        hs[i] = (uint32_t)test_rand(seed) | 2u;
        hb[i] = ha[i] = 0x13579BDFu;
    }
    enum { N = 6 };
    cleanup c[N];
    /* 0: ok; 1: fails with USER; 2, 3: see USER; 4: returns DEVICE, which must not
     * replace the first failure; 5: sees USER still. */
    gaio_status rets[N] = {GAIO_OK, GAIO_ERR_USER, GAIO_OK, GAIO_OK, GAIO_ERR_DEVICE, GAIO_OK};
    for (int i = 0; i < N; i++) cleanup_init(&c[i], rets[i]);
    gaio_future *f_before, *f_after;
    OK(gaio_launch_host_func(s, cleanup_fn, &c[0]));
    OK(gaio_memcpy_async(s, dst_before, 0, src, 0, 1024));
    OK(gaio_future_fence(s, &f_before));
    OK(gaio_launch_host_func(s, cleanup_fn, &c[1]));
    OK(gaio_memcpy_async(s, dst_after, 0, src, 0, 1024)); /* skipped */
    OK(gaio_launch_host_func(s, cleanup_fn, &c[2]));
    OK(gaio_launch_host_func(s, cleanup_fn, &c[3]));
    OK(gaio_launch_host_func(s, cleanup_fn, &c[4]));
    OK(gaio_launch_host_func(s, cleanup_fn, &c[5]));
    OK(gaio_future_fence(s, &f_after));
    OK(gaio_future_wait(f_before, BIG_TIMEOUT_NS));
    CHECK(gaio_future_wait(f_after, BIG_TIMEOUT_NS) == GAIO_ERR_USER);
    const char *m = gaio_future_message(f_after);
    CHECK(strstr(m, "host function") != NULL && strstr(m, "GAIO_ERR_USER") != NULL);
    gaio_status want_seen[N] = {GAIO_OK, GAIO_OK, GAIO_ERR_USER, GAIO_ERR_USER, GAIO_ERR_USER, GAIO_ERR_USER};
    for (int i = 0; i < N; i++) {
        CHECK(atomic_load(&c[i].calls) == 1);
        CHECK(atomic_load(&c[i].status) == (int)want_seen[i]);
        CHECK(c[i].mem == NULL);
    }
    CHECK(memcmp(hb, hs, 1024) == 0);
    for (int i = 0; i < 256; i++) CHECK(ha[i] == 0x13579BDFu);
    FAILS(GAIO_ERR_USER, gaio_stream_query(s), "gaio_stream_query");
    CHECK(gaio_stream_synchronize(s) == GAIO_ERR_USER);
    CHECK(strstr(gaio_last_error(), "GAIO_ERR_USER") != NULL);
    /* Sticky: host functions submitted now still run, with the failure. */
    cleanup late;
    cleanup_init(&late, GAIO_OK);
    OK(gaio_launch_host_func(s, cleanup_fn, &late));
    CHECK(gaio_stream_synchronize(s) == GAIO_ERR_USER);
    CHECK(atomic_load(&late.calls) == 1 && atomic_load(&late.status) == GAIO_ERR_USER);
    OK(gaio_future_release(f_before));
    OK(gaio_future_release(f_after));

    /* A kernel's failure (on CUDA, another host function's: see launch_fail) reaches
     * host functions too, and deferred streams alike. */
    for (int deferred = 0; deferred < 2; deferred++) {
        gaio_stream *k;
        OK(gaio_stream_create(ctx, 0, deferred ? GAIO_STREAM_DEFERRED : 0, &k));
        cleanup kc[2];
        cleanup_init(&kc[0], GAIO_OK);
        cleanup_init(&kc[1], GAIO_ERR_USER); /* ignored: the stream failed already */
        launch_fail(k);
        OK(gaio_launch_host_func(k, cleanup_fn, &kc[0]));
        OK(gaio_launch_host_func(k, cleanup_fn, &kc[1]));
        CHECK(gaio_stream_synchronize(k) == GAIO_ERR_DEVICE);
        for (int i = 0; i < 2; i++)
            CHECK(atomic_load(&kc[i].calls) == 1 && atomic_load(&kc[i].status) == GAIO_ERR_DEVICE);
        OK(gaio_stream_release(k));
    }
    OK(gaio_buffer_release(src));
    OK(gaio_buffer_release(dst_before));
    OK(gaio_buffer_release(dst_after));
    OK(gaio_stream_release(s));
}

/* ---- 3. host functions of a released stream still run ---- */

static void test_released_stream(gaio_context *ctx) {
    enum { N = 50 };
    cleanup c[N];
    gaio_future *last;
    for (int round = 0; round < 2; round++) {
        gaio_stream *s;
        OK(gaio_stream_create(ctx, 0, round ? GAIO_STREAM_DEFERRED : 0, &s));
        for (int i = 0; i < N; i++) {
            cleanup_init(&c[i], GAIO_OK);
            OK(gaio_launch_host_func(s, cleanup_fn, &c[i]));
        }
        OK(gaio_future_fence(s, &last));
        OK(gaio_stream_release(s));
        OK(gaio_future_wait(last, BIG_TIMEOUT_NS));
        OK(gaio_future_release(last));
        for (int i = 0; i < N; i++) CHECK(atomic_load(&c[i].calls) == 1 && atomic_load(&c[i].status) == GAIO_OK);
    }
}

/* ---- 4. a host function may submit work to another stream ---- */

typedef struct forward {
    gaio_stream *to;
    gaio_buffer *dst, *src;
    size_t bytes;
    atomic_int submitted;
} forward;

static gaio_status forward_fn(gaio_status status, void *user) {
    forward *fw = user;
    if (status != GAIO_OK) return GAIO_OK;
    if (gaio_memcpy_async(fw->to, fw->dst, 0, fw->src, 0, fw->bytes) == GAIO_OK) atomic_store(&fw->submitted, 1);
    return GAIO_OK;
}

static void test_submit_from_host_fn(gaio_context *ctx, uint64_t *seed) {
    for (int deferred = 0; deferred < 2; deferred++) {
        gaio_stream *a, *b;
        OK(gaio_stream_create(ctx, 0, 0, &a));
        OK(gaio_stream_create(ctx, 0, deferred ? GAIO_STREAM_DEFERRED : 0, &b));
        gaio_buffer *src, *dst;
        OK(gaio_buffer_alloc(ctx, GAIO_MEM_HOST, 512, &src));
        OK(gaio_buffer_alloc(ctx, GAIO_MEM_HOST, 512, &dst));
        uint32_t *hs = host_words(src), *hd = host_words(dst);
        for (int i = 0; i < 128; i++) {
            hs[i] = (uint32_t)test_rand(seed) | 4u;
            hd[i] = 0;
        }
        forward fw = {b, dst, src, 512, 0};
        OK(gaio_launch_host_func(a, forward_fn, &fw));
        OK(gaio_stream_synchronize(a));
        CHECK(atomic_load(&fw.submitted) == 1);
        OK(gaio_stream_synchronize(b)); /* the copy was submitted before this fence */
        CHECK(memcmp(hd, hs, 512) == 0);
        OK(gaio_buffer_release(src));
        OK(gaio_buffer_release(dst));
        OK(gaio_stream_release(a));
        OK(gaio_stream_release(b));
    }
}

static void run(int device) {
    uint64_t seed = test_seed();
    fail_setup(device, "host_func_fail"); /* host only: see launch_fail */
    gaio_context *ctx;
    OK(gaio_context_create(device, NULL, &ctx));
    test_order(ctx);
    test_error_fails_stream(ctx, &seed);
    test_released_stream(ctx);
    test_submit_from_host_fn(ctx, &seed);
    OK(gaio_context_release(ctx));
    fail_teardown();
}
