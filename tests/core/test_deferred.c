/* Deferred streams (GAIO_STREAM_DEFERRED: submission through a per-device
 * runtime thread): the same order and results as inline streams, also with
 * several producer threads; deferred and inline streams ordered by events in
 * either direction; futures, callbacks, queues and failures behave the same;
 * invalid arguments are still rejected at the call.
 *
 * The random programs are those of test_stream_order (prog_* in support.h):
 * non-commuting kernels, fills, rotations and snapshots on a DEVICE state buffer,
 * host functions that log their index, checked against a host model. The same
 * source runs on every backend: the affine kernel has a CUDA twin, and launch_fail
 * (support.h) says what fails a stream with GAIO_ERR_DEVICE on each. */
#include <stdatomic.h>

#include "common.h"
#include "support.h"

static gaio_kernel *g_affine;

/* ---- 1. the same program on an inline and a deferred stream ---- */

static void test_same_as_inline(gaio_context *ctx, uint64_t *seed) {
    gaio_stream *in, *def;
    OK(gaio_stream_create(ctx, 0, 0, &in));
    OK(gaio_stream_create(ctx, 0, GAIO_STREAM_DEFERRED, &def));
    unsigned flags = 0;
    OK(gaio_stream_flags(def, &flags));
    CHECK(flags == GAIO_STREAM_DEFERRED);
    OK(gaio_stream_flags(in, &flags));
    CHECK(flags == 0);
    gate g = {0};
    OK(gaio_launch_host_func(def, gate_fn, &g));
    uint64_t pseed = test_rand(seed);
    prog p[2];
    prog_init(&p[0], ctx, in, g_affine, 1500, pseed);
    prog_init(&p[1], ctx, def, g_affine, 1500, pseed);
    for (int i = 0; i < 1500; i++) {
        prog_step(&p[0]);
        prog_step(&p[1]);
    }
    prog_finish(&p[0]);
    prog_finish(&p[1]);
    CHECK(gaio_stream_query(def) == GAIO_ERR_NOT_READY);
    atomic_store(&g.open, 1);
    OK(gaio_stream_synchronize(def));
    OK(gaio_stream_query(def));
    OK(gaio_stream_synchronize(in));
    prog_verify(&p[0], "inline");
    prog_verify(&p[1], "deferred");
    /* Bit for bit the same outputs. */
    CHECK(p[0].nsnaps == p[1].nsnaps && p[0].nhost == p[1].nhost);
    CHECK(memcmp(host_words(p[0].result), host_words(p[1].result), PROG_NW * 4) == 0);
    CHECK(memcmp(host_words(p[0].snaps), host_words(p[1].snaps), (size_t)p[0].nsnaps * PROG_NW * 4) == 0);
    prog_free(&p[0]);
    prog_free(&p[1]);
    OK(gaio_stream_release(in));
    OK(gaio_stream_release(def));
}

/* ---- 2. several producer threads: own deferred streams, and one shared ---- */

static void test_threads_own_streams(gaio_context *ctx, uint64_t *seed) {
    prog_threads_own_streams(ctx, g_affine, seed, 800, 3, GAIO_STREAM_DEFERRED, "deferred, own thread");
}

static void test_shared_stream(gaio_context *ctx) {
    gaio_stream *s;
    OK(gaio_stream_create(ctx, 0, GAIO_STREAM_DEFERRED, &s));
    shared_stream_order(s, 2000, "shared deferred stream");
    OK(gaio_stream_release(s));
}

/* ---- 3. deferred and inline streams ordered by events ---- */

#define CHAIN 4
#define CW 256

static void test_mixed_events(gaio_context *ctx, uint64_t *seed) {
    for (int round = 0; round < 8; round++) {
        gaio_stream *s[CHAIN];
        gaio_event *ev[CHAIN];
        gaio_buffer *b[CHAIN], *src, *out;
        for (int i = 0; i < CHAIN; i++) {
            /* alternate, starting with deferred on even rounds and inline on odd ones */
            unsigned fl = ((i + round) % 2 == 0) ? GAIO_STREAM_DEFERRED : 0;
            OK(gaio_stream_create(ctx, 0, fl, &s[i]));
            OK(gaio_event_create(ctx, (round & 2) ? GAIO_EVENT_DISABLE_TIMING : 0, &ev[i]));
            OK(gaio_buffer_alloc(ctx, GAIO_MEM_DEVICE, CW * 4, &b[i]));
        }
        OK(gaio_buffer_alloc(ctx, GAIO_MEM_HOST, CW * 4, &src));
        OK(gaio_buffer_alloc(ctx, GAIO_MEM_HOST, CW * 4, &out));
        uint32_t *hs = host_words(src), *ho = host_words(out);
        uint32_t model[CW];
        for (int i = 0; i < CW; i++) {
            model[i] = hs[i] = (uint32_t)test_rand(seed) | 0x80u;
            ho[i] = 0xC3C3C3C3u;
        }
        int ms = 1 + round % 3;
        /* Submit the consumers first? No: a wait captures the point current at
         * its call, so each stream is submitted after its producer's record. */
        for (int i = 0; i < CHAIN; i++) {
            uint32_t mul = (uint32_t)test_rand(seed) | 1u, add = (uint32_t)test_rand(seed);
            OK(gaio_memset_async(s[i], b[i], 0, 0x11 + i, CW * 4)); /* stale data if a wait were lost */
            if (i == 0) {
                OK(gaio_launch_host_func(s[0], sleep_fn, &ms));
                OK(gaio_memcpy_async(s[0], b[0], 0, src, 0, CW * 4));
            } else {
                OK(gaio_stream_wait_event(s[i], ev[i - 1]));
                OK(gaio_launch_host_func(s[i], sleep_fn, &ms));
                OK(gaio_memcpy_async(s[i], b[i], 0, b[i - 1], 0, CW * 4));
            }
            launch_affine(g_affine, s[i], b[i], CW, mul, add);
            for (uint32_t j = 0; j < CW; j++) model[j] = model[j] * mul + add + j;
            OK(gaio_event_record(ev[i], s[i]));
        }
        OK(gaio_stream_wait_event(s[0], ev[CHAIN - 1])); /* back to the first stream */
        OK(gaio_memcpy_async(s[0], out, 0, b[CHAIN - 1], 0, CW * 4));
        gaio_future *f;
        OK(gaio_future_fence(s[0], &f));
        OK(gaio_future_wait(f, BIG_TIMEOUT_NS));
        OK(gaio_future_release(f));
        for (int j = 0; j < CW; j++) {
            if (ho[j] != model[j]) {
                fprintf(stderr, "mixed chain round %d: word %d is 0x%08x, expected 0x%08x\n", round, j, ho[j],
                        model[j]);
                exit(1);
            }
        }
        for (int i = 0; i < CHAIN; i++) {
            OK(gaio_event_query(ev[i]));
            OK(gaio_event_release(ev[i]));
            OK(gaio_buffer_release(b[i]));
            OK(gaio_stream_release(s[i]));
        }
        OK(gaio_buffer_release(src));
        OK(gaio_buffer_release(out));
    }
}

/* ---- 4. futures, callbacks, queues and failures behave the same ---- */

typedef struct fail_run {
    gaio_stream *s;
    gaio_buffer *src, *before, *after;
    atomic_int hf_status[2];
    atomic_int cb_calls, cb_status;
    gaio_future *f_before, *f_after;
    gaio_event *ev;
} fail_run;

static void count_cb(gaio_future *f, gaio_status st, void *user) {
    (void)f;
    fail_run *r = user;
    atomic_store(&r->cb_status, (int)st);
    atomic_fetch_add(&r->cb_calls, 1);
}

static void fail_submit(fail_run *r, gaio_context *ctx, unsigned flags, uint64_t pseed, gaio_cq *cq, int tag) {
    memset(r, 0, sizeof *r);
    OK(gaio_stream_create(ctx, 0, flags, &r->s));
    OK(gaio_event_create(ctx, 0, &r->ev));
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_HOST, 4096, &r->src));
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_HOST, 4096, &r->before));
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_HOST, 4096, &r->after));
    uint64_t sd = pseed;
    uint32_t *hs = host_words(r->src), *hb = host_words(r->before), *ha = host_words(r->after);
    for (int i = 0; i < 1024; i++) {
        hs[i] = (uint32_t)test_rand(&sd) | 1u;
        hb[i] = ha[i] = 0x77777777u;
    }
    atomic_init(&r->hf_status[0], -1);
    atomic_init(&r->hf_status[1], -1);
    OK(gaio_memcpy_async(r->s, r->before, 0, r->src, 0, 4096));
    OK(gaio_launch_host_func(r->s, status_fn, &r->hf_status[0]));
    OK(gaio_future_fence(r->s, &r->f_before));
    launch_fail(r->s);
    OK(gaio_memcpy_async(r->s, r->after, 0, r->src, 0, 4096));
    OK(gaio_memset_async(r->s, r->after, 0, 0x42, 64));
    OK(gaio_launch_host_func(r->s, status_fn, &r->hf_status[1]));
    OK(gaio_event_record(r->ev, r->s));
    OK(gaio_future_fence(r->s, &r->f_after));
    OK(gaio_future_then(r->f_after, count_cb, r));
    OK(gaio_cq_add(cq, r->f_after, (void *)(uintptr_t)tag));
}

static void test_failures_same(gaio_context *ctx, uint64_t *seed) {
    gaio_cq *cq;
    OK(gaio_cq_create(&cq));
    uint64_t pseed = test_rand(seed);
    fail_run r[2];
    fail_submit(&r[0], ctx, 0, pseed, cq, 1);
    fail_submit(&r[1], ctx, GAIO_STREAM_DEFERRED, pseed, cq, 2);
    for (int k = 0; k < 2; k++) {
        OK(gaio_future_wait(r[k].f_before, BIG_TIMEOUT_NS));
        CHECK(gaio_future_wait(r[k].f_after, BIG_TIMEOUT_NS) == GAIO_ERR_DEVICE);
        CHECK(gaio_stream_synchronize(r[k].s) == GAIO_ERR_DEVICE);
        FAILS(GAIO_ERR_DEVICE, gaio_stream_query(r[k].s), "gaio_stream_query");
        CHECK(gaio_event_query(r[k].ev) == GAIO_ERR_DEVICE);
        CHECK(atomic_load(&r[k].hf_status[0]) == GAIO_OK);
        CHECK(atomic_load(&r[k].hf_status[1]) == GAIO_ERR_DEVICE);
        CHECK(atomic_load(&r[k].cb_calls) == 1 && atomic_load(&r[k].cb_status) == GAIO_ERR_DEVICE);
        CHECK(memcmp(host_words(r[k].before), host_words(r[k].src), 4096) == 0);
        uint32_t *ha = host_words(r[k].after);
        for (int i = 0; i < 1024; i++) CHECK(ha[i] == 0x77777777u); /* skipped */
        CHECK(strstr(gaio_future_message(r[k].f_after), fail_name()) != NULL);
    }
    /* The same message either way. */
    CHECK(strcmp(gaio_future_message(r[0].f_after), gaio_future_message(r[1].f_after)) == 0);
    int seen[3] = {0};
    for (int got = 0; got < 2;) {
        gaio_cq_entry e[2];
        size_t cnt;
        OK(gaio_cq_wait(cq, e, 2, &cnt, BIG_TIMEOUT_NS));
        for (size_t i = 0; i < cnt; i++) {
            uintptr_t tag = (uintptr_t)e[i].user_data;
            CHECK(tag == 1 || tag == 2);
            CHECK(e[i].status == GAIO_ERR_DEVICE);
            seen[tag]++;
        }
        got += (int)cnt;
    }
    CHECK(seen[1] == 1 && seen[2] == 1);
    for (int k = 0; k < 2; k++) {
        OK(gaio_future_release(r[k].f_before));
        OK(gaio_future_release(r[k].f_after));
        OK(gaio_event_release(r[k].ev));
        OK(gaio_buffer_release(r[k].src));
        OK(gaio_buffer_release(r[k].before));
        OK(gaio_buffer_release(r[k].after));
        OK(gaio_stream_release(r[k].s));
    }
    OK(gaio_cq_release(cq));
}

/* ---- 5. invalid arguments are rejected at the call, not later ---- */

static void test_validation(gaio_context *ctx) {
    gaio_stream *s;
    OK(gaio_stream_create(ctx, 0, GAIO_STREAM_DEFERRED, &s));
    gaio_buffer *a, *b;
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_HOST, 128, &a));
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_HOST, 128, &b));
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memcpy_async(s, a, 96, b, 0, 64), "gaio_memcpy_async");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memset_async(s, a, 0, 300, 16), "gaio_memset_async");
    uint32_t n = 1, mul = 1;
    gaio_arg args[3] = {GAIO_ARG_BUFFER(a), GAIO_ARG(n), GAIO_ARG(mul)};
    FAILS(GAIO_ERR_INVALID_ARG,
          gaio_launch(s, g_affine, (gaio_dim3){1, 1, 1}, (gaio_dim3){1, 1, 1}, 0, args, 3), "gaio_launch");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_launch_host_func(s, NULL, NULL), "gaio_launch_host_func");
    gaio_stream *bad = s;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_stream_create(ctx, 0, 0x100u, &bad), "gaio_stream_create");
    CHECK(bad == NULL);
    /* Nothing was enqueued and the stream is not failed. */
    OK(gaio_stream_synchronize(s));
    OK(gaio_stream_query(s));
    OK(gaio_buffer_release(a));
    OK(gaio_buffer_release(b));
    OK(gaio_stream_release(s));
}

static void run(int device) {
    configure_workers(4);
    uint64_t seed = test_seed();
    g_affine = AFFINE_REGISTER("deferred_affine");
    fail_setup(device, "deferred_fail"); /* host only: see launch_fail */
    gaio_context *ctx;
    OK(gaio_context_create(device, NULL, &ctx));
    test_same_as_inline(ctx, &seed);
    test_threads_own_streams(ctx, &seed);
    test_shared_stream(ctx);
    test_mixed_events(ctx, &seed);
    test_failures_same(ctx, &seed);
    test_validation(ctx);
    OK(gaio_context_release(ctx));
    OK(gaio_kernel_unregister("deferred_affine"));
    OK(gaio_kernel_release(g_affine));
    g_affine = NULL;
    fail_teardown();
}
