/* Events: cross-stream ordering (gaio_event_record + gaio_stream_wait_event),
 * event query / synchronize, never-recorded events, re-recording (a wait
 * captures the point current at call time), elapsed time, DISABLE_TIMING, and
 * failure propagation from the recording stream to the waiting stream. The same
 * source runs on every backend: the affine kernel has a CUDA twin, and the failure
 * comes from a kernel on the host backend and from a host function on CUDA (see
 * launch_fail in support.h). */
#include <stdatomic.h>

#include "common.h"
#include "support.h"

#define NW 256 /* words per buffer */

static gaio_kernel *g_affine;

static void fill_random(uint32_t *w, size_t n, uint64_t *seed) {
    for (size_t i = 0; i < n; i++) w[i] = (uint32_t)test_rand(seed) | 0x100u;
}

static void fence_wait(gaio_stream *s, gaio_status want) {
    gaio_future *f;
    OK(gaio_future_fence(s, &f));
    CHECK(gaio_future_wait(f, BIG_TIMEOUT_NS) == want);
    OK(gaio_future_release(f));
}

/* ---- 1. B sees what slow A produced ---- */

static void cross_stream_round(gaio_stream *a, gaio_stream *b, gaio_context *actx, gaio_context *bctx,
                               gaio_event *ev, int sleep_ms, uint64_t *seed) {
    gaio_buffer *src, *mid, *out;
    OK(gaio_buffer_alloc(actx, GAIO_MEM_HOST, NW * 4, &src));
    OK(gaio_buffer_alloc(actx, GAIO_MEM_DEVICE, NW * 4, &mid));
    OK(gaio_buffer_alloc(bctx, GAIO_MEM_HOST, NW * 4, &out));
    uint32_t *hs = host_words(src), *ho = host_words(out);
    fill_random(hs, NW, seed);
    for (int i = 0; i < NW; i++) ho[i] = 0xEEEEEEEEu;
    uint32_t mul = (uint32_t)test_rand(seed) | 1u, add = (uint32_t)test_rand(seed);
    OK(gaio_memset_async(a, mid, 0, 0x33, NW * 4)); /* what B would see if it ran too early */
    OK(gaio_launch_host_func(a, sleep_fn, &sleep_ms));
    OK(gaio_memcpy_async(a, mid, 0, src, 0, NW * 4));
    launch_affine(g_affine, a, mid, NW, mul, add);
    OK(gaio_event_record(ev, a));
    OK(gaio_stream_wait_event(b, ev));
    OK(gaio_memcpy_async(b, out, 0, mid, 0, NW * 4));
    fence_wait(b, GAIO_OK);
    for (uint32_t i = 0; i < NW; i++) {
        uint32_t want = hs[i] * mul + add + i;
        if (ho[i] != want) {
            fprintf(stderr, "cross-stream: word %u is 0x%08x, expected 0x%08x (B did not wait for A)\n", i, ho[i],
                    want);
            exit(1);
        }
    }
    OK(gaio_buffer_release(src));
    OK(gaio_buffer_release(mid));
    OK(gaio_buffer_release(out));
}

static void test_cross_stream(gaio_context *ctx, gaio_context *ctx2, uint64_t *seed) {
    gaio_stream *a, *b, *a2;
    OK(gaio_stream_create(ctx, 0, 0, &a));
    OK(gaio_stream_create(ctx, 0, 0, &b));
    OK(gaio_stream_create(ctx2, 0, 0, &a2));
    gaio_event *ev, *ev_nt;
    OK(gaio_event_create(ctx, 0, &ev));
    OK(gaio_event_create(ctx, GAIO_EVENT_DISABLE_TIMING, &ev_nt));
    for (int round = 0; round < 12; round++) {
        int ms = round == 0 ? 60 : 3 + round % 4;
        cross_stream_round(a, b, ctx, ctx, round % 3 == 2 ? ev_nt : ev, ms, seed);
    }
    /* The producer in another context of the same device. */
    for (int round = 0; round < 3; round++) cross_stream_round(a2, b, ctx2, ctx, ev, 20, seed);
    OK(gaio_event_release(ev));
    OK(gaio_event_release(ev_nt));
    OK(gaio_stream_release(a));
    OK(gaio_stream_release(b));
    OK(gaio_stream_release(a2));
}

/* ---- 2. query / synchronize ---- */

static void test_query_sync(gaio_context *ctx) {
    gaio_stream *a;
    OK(gaio_stream_create(ctx, 0, 0, &a));
    gaio_event *ev;
    OK(gaio_event_create(ctx, 0, &ev));
    gate g = {0};
    OK(gaio_launch_host_func(a, gate_fn, &g));
    OK(gaio_event_record(ev, a));
    CHECK(gaio_event_query(ev) == GAIO_ERR_NOT_READY);
    test_sleep_ms(5);
    CHECK(gaio_event_query(ev) == GAIO_ERR_NOT_READY);
    atomic_store(&g.open, 1);
    OK(gaio_event_synchronize(ev));
    OK(gaio_event_query(ev));
    CHECK(!atomic_load(&g.timed_out));
    /* An event recorded on an idle stream is reached promptly. */
    OK(gaio_event_record(ev, a));
    OK(gaio_event_synchronize(ev));
    OK(gaio_event_query(ev));
    FAILS(GAIO_ERR_INVALID_ARG, gaio_event_query(NULL), "gaio_event_query");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_event_synchronize(NULL), "gaio_event_synchronize");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_event_record(ev, NULL), "gaio_event_record");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_stream_wait_event(a, NULL), "gaio_stream_wait_event");
    gaio_event *bad = (gaio_event *)&g;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_event_create(ctx, 0x80u, &bad), "gaio_event_create");
    CHECK(bad == NULL);
    OK(gaio_event_release(ev));
    OK(gaio_stream_release(a));
}

/* ---- 3. never recorded: done; waiting on it waits for nothing ---- */

static void test_never_recorded(gaio_context *ctx) {
    gaio_stream *a, *b;
    OK(gaio_stream_create(ctx, 0, 0, &a));
    OK(gaio_stream_create(ctx, 0, 0, &b));
    gaio_event *ev, *ev2;
    OK(gaio_event_create(ctx, 0, &ev));
    OK(gaio_event_create(ctx, 0, &ev2));
    OK(gaio_event_query(ev));
    OK(gaio_event_synchronize(ev));
    gaio_future *f;
    OK(gaio_future_from_event(ev, &f));
    OK(gaio_future_poll(f));
    OK(gaio_future_release(f));
    /* A is held; B waits on the never-recorded event, so B must not be held. */
    gate g = {0};
    OK(gaio_launch_host_func(a, gate_fn, &g));
    OK(gaio_stream_wait_event(b, ev));
    fence_wait(b, GAIO_OK);
    float ms = -1.0f;
    FAILS(GAIO_ERR_STATE, gaio_event_elapsed_ms(ev, ev2, &ms), "gaio_event_elapsed_ms");
    CHECK(ms == -1.0f);
    atomic_store(&g.open, 1);
    OK(gaio_stream_synchronize(a));
    OK(gaio_event_release(ev));
    OK(gaio_event_release(ev2));
    OK(gaio_stream_release(a));
    OK(gaio_stream_release(b));
}

/* ---- 4. re-recording moves the point; a wait keeps the point of its call ---- */

static void test_rerecord(gaio_context *ctx) {
    gaio_stream *a, *b, *c;
    OK(gaio_stream_create(ctx, 0, 0, &a));
    OK(gaio_stream_create(ctx, 0, 0, &b));
    OK(gaio_stream_create(ctx, 0, 0, &c));
    gaio_event *ev;
    OK(gaio_event_create(ctx, 0, &ev));
    gate g1 = {0}, g2 = {0};
    OK(gaio_launch_host_func(a, gate_fn, &g1));
    OK(gaio_event_record(ev, a)); /* point 1 */
    OK(gaio_stream_wait_event(b, ev));
    gaio_future *fb;
    OK(gaio_future_fence(b, &fb));
    OK(gaio_launch_host_func(a, gate_fn, &g2));
    OK(gaio_event_record(ev, a)); /* point 2: moves the event */
    OK(gaio_stream_wait_event(c, ev));
    gaio_future *fc;
    OK(gaio_future_fence(c, &fc));

    CHECK(gaio_future_poll(fb) == GAIO_ERR_NOT_READY);
    atomic_store(&g1.open, 1);
    /* B waited on point 1 only: it finishes although A is now held at gate 2. */
    CHECK(gaio_future_wait(fb, BIG_TIMEOUT_NS) == GAIO_OK);
    wait_entered(&g2);
    /* C waited on point 2, which is not reached. */
    CHECK(gaio_future_wait(fc, 30 * 1000000ll) == GAIO_ERR_TIMEOUT);
    CHECK(gaio_event_query(ev) == GAIO_ERR_NOT_READY);
    atomic_store(&g2.open, 1);
    CHECK(gaio_future_wait(fc, BIG_TIMEOUT_NS) == GAIO_OK);
    OK(gaio_event_synchronize(ev));
    CHECK(!atomic_load(&g1.timed_out) && !atomic_load(&g2.timed_out));
    OK(gaio_future_release(fb));
    OK(gaio_future_release(fc));
    OK(gaio_event_release(ev));
    OK(gaio_stream_release(a));
    OK(gaio_stream_release(b));
    OK(gaio_stream_release(c));
}

/* ---- 5. elapsed time and DISABLE_TIMING ---- */

static void test_elapsed(gaio_context *ctx) {
    gaio_stream *a, *b;
    OK(gaio_stream_create(ctx, 0, 0, &a));
    OK(gaio_stream_create(ctx, 0, 0, &b));
    gaio_event *start, *end, *nt;
    OK(gaio_event_create(ctx, 0, &start));
    OK(gaio_event_create(ctx, 0, &end));
    OK(gaio_event_create(ctx, GAIO_EVENT_DISABLE_TIMING, &nt));
    int ms20 = 20;
    OK(gaio_event_record(start, a));
    OK(gaio_event_record(nt, a));
    OK(gaio_launch_host_func(a, sleep_fn, &ms20));
    OK(gaio_event_record(end, a));
    OK(gaio_event_synchronize(end));
    float ms = 0;
    OK(gaio_event_elapsed_ms(start, end, &ms));
    printf("elapsed around a 20 ms sleep: %.3f ms\n", (double)ms);
    CHECK(ms >= 19.5f && ms < 5000.0f);
    float back = 0;
    OK(gaio_event_elapsed_ms(end, start, &back));
    CHECK(back <= -19.5f && back > -5000.0f);
    float zero = 1;
    OK(gaio_event_elapsed_ms(start, start, &zero));
    CHECK(zero == 0.0f);
    /* DISABLE_TIMING: elapsed fails either way round; the event still orders. */
    float untouched = -7.0f;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_event_elapsed_ms(nt, end, &untouched), "gaio_event_elapsed_ms");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_event_elapsed_ms(start, nt, &untouched), "gaio_event_elapsed_ms");
    CHECK(untouched == -7.0f);
    OK(gaio_event_query(nt));
    FAILS(GAIO_ERR_INVALID_ARG, gaio_event_elapsed_ms(start, end, NULL), "gaio_event_elapsed_ms");
    /* Events on two streams: B's point after A's sleep, ordered by an event. */
    OK(gaio_event_record(start, a));
    OK(gaio_launch_host_func(a, sleep_fn, &ms20));
    OK(gaio_event_record(nt, a));
    OK(gaio_stream_wait_event(b, nt));
    OK(gaio_event_record(end, b));
    OK(gaio_event_synchronize(end));
    OK(gaio_event_elapsed_ms(start, end, &ms));
    CHECK(ms >= 19.5f && ms < 5000.0f);
    /* Not reached yet: NOT_READY. */
    gate g = {0};
    OK(gaio_event_record(start, a));
    OK(gaio_launch_host_func(a, gate_fn, &g));
    OK(gaio_event_record(end, a));
    untouched = -7.0f;
    FAILS(GAIO_ERR_NOT_READY, gaio_event_elapsed_ms(start, end, &untouched), "gaio_event_elapsed_ms");
    CHECK(untouched == -7.0f);
    atomic_store(&g.open, 1);
    OK(gaio_event_synchronize(end));
    OK(gaio_event_elapsed_ms(start, end, &ms));
    CHECK(ms >= 0.0f && ms < 30000.0f);
    OK(gaio_event_release(start));
    OK(gaio_event_release(end));
    OK(gaio_event_release(nt));
    OK(gaio_stream_release(a));
    OK(gaio_stream_release(b));
}

/* ---- 6. failure propagates through events ---- */

static void test_failure_propagation(gaio_context *ctx, uint64_t *seed) {
    gaio_stream *a, *b, *c, *d;
    OK(gaio_stream_create(ctx, 0, 0, &a));
    OK(gaio_stream_create(ctx, 0, 0, &b));
    OK(gaio_stream_create(ctx, 0, 0, &c));
    OK(gaio_stream_create(ctx, 0, 0, &d));
    gaio_buffer *src, *dst_b, *dst_c, *dst_d;
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_HOST, NW * 4, &src));
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_HOST, NW * 4, &dst_b));
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_HOST, NW * 4, &dst_c));
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_HOST, NW * 4, &dst_d));
    uint32_t *hs = host_words(src), *hb = host_words(dst_b), *hc = host_words(dst_c), *hd = host_words(dst_d);
    fill_random(hs, NW, seed);
    for (int i = 0; i < NW; i++) hb[i] = hc[i] = hd[i] = 0xA5A5A5A5u;
    gaio_event *before, *after;
    OK(gaio_event_create(ctx, 0, &before));
    OK(gaio_event_create(ctx, 0, &after));
    int ms = 10;
    atomic_int b_status = -1;
    OK(gaio_event_record(before, a));
    OK(gaio_launch_host_func(a, sleep_fn, &ms));
    launch_fail(a);
    OK(gaio_event_record(after, a));
    /* B waits on the point after the failure (not yet reached: A sleeps). */
    OK(gaio_stream_wait_event(b, after));
    OK(gaio_memcpy_async(b, dst_b, 0, src, 0, NW * 4));
    OK(gaio_launch_host_func(b, status_fn, &b_status));
    gaio_future *fb;
    OK(gaio_future_fence(b, &fb));
    /* C waits on the point before it: unaffected. */
    OK(gaio_stream_wait_event(c, before));
    OK(gaio_memcpy_async(c, dst_c, 0, src, 0, NW * 4));
    gaio_future *fc;
    OK(gaio_future_fence(c, &fc));

    CHECK(gaio_future_wait(fb, BIG_TIMEOUT_NS) == GAIO_ERR_DEVICE);
    CHECK(strstr(gaio_future_message(fb), fail_name()) != NULL);
    CHECK(atomic_load(&b_status) == GAIO_ERR_DEVICE);
    for (int i = 0; i < NW; i++) CHECK(hb[i] == 0xA5A5A5A5u); /* B's copy was skipped */
    FAILS(GAIO_ERR_DEVICE, gaio_stream_query(b), "gaio_stream_query");
    CHECK(gaio_stream_synchronize(b) == GAIO_ERR_DEVICE);
    CHECK(gaio_future_wait(fc, BIG_TIMEOUT_NS) == GAIO_OK);
    CHECK(memcmp(hc, hs, NW * 4) == 0);
    OK(gaio_stream_query(c));
    CHECK(gaio_event_query(after) == GAIO_ERR_DEVICE);
    CHECK(gaio_event_synchronize(after) == GAIO_ERR_DEVICE);
    OK(gaio_event_query(before));
    gaio_future *fe;
    OK(gaio_future_from_event(after, &fe));
    CHECK(gaio_future_poll(fe) == GAIO_ERR_DEVICE);
    CHECK(strstr(gaio_future_message(fe), fail_name()) != NULL);
    OK(gaio_future_release(fe));

    /* D waits on the failed point after the fact: fails too. */
    OK(gaio_stream_wait_event(d, after));
    OK(gaio_memcpy_async(d, dst_d, 0, src, 0, NW * 4));
    fence_wait(d, GAIO_ERR_DEVICE);
    for (int i = 0; i < NW; i++) CHECK(hd[i] == 0xA5A5A5A5u);

    /* A host function's failure travels the same way, with its own status. */
    gaio_stream *e, *f;
    OK(gaio_stream_create(ctx, 0, 0, &e));
    OK(gaio_stream_create(ctx, 0, 0, &f));
    OK(gaio_launch_host_func(e, fail_user_fn, NULL));
    OK(gaio_event_record(after, e));
    OK(gaio_stream_wait_event(f, after));
    fence_wait(f, GAIO_ERR_USER);
    CHECK(gaio_stream_synchronize(e) == GAIO_ERR_USER);

    OK(gaio_future_release(fb));
    OK(gaio_future_release(fc));
    OK(gaio_event_release(before));
    OK(gaio_event_release(after));
    OK(gaio_buffer_release(src));
    OK(gaio_buffer_release(dst_b));
    OK(gaio_buffer_release(dst_c));
    OK(gaio_buffer_release(dst_d));
    gaio_stream *all[] = {a, b, c, d, e, f};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) OK(gaio_stream_release(all[i]));
}

static void run(int device) {
    /* Some checks hold one worker in a host function while another stream must
     * make progress: ask for enough workers (ignored if gaio already runs). */
    configure_workers(4);
    uint64_t seed = test_seed();
    g_affine = AFFINE_REGISTER("events_affine");
    fail_setup(device, "events_fail"); /* host only: see launch_fail */
    gaio_context *ctx, *ctx2;
    OK(gaio_context_create(device, NULL, &ctx));
    OK(gaio_context_create(device, NULL, &ctx2));
    test_cross_stream(ctx, ctx2, &seed);
    test_query_sync(ctx);
    test_never_recorded(ctx);
    test_rerecord(ctx);
    test_elapsed(ctx);
    test_failure_propagation(ctx, &seed);
    OK(gaio_context_release(ctx));
    OK(gaio_context_release(ctx2));
    OK(gaio_kernel_unregister("events_affine"));
    OK(gaio_kernel_release(g_affine));
    g_affine = NULL;
    fail_teardown();
}
