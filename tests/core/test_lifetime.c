/* Lifetimes: releasing buffers, streams, events, kernels and the context while
 * work that uses them is still queued (behind a host function that blocks until
 * the test opens it) is safe, the work still runs correctly, a wrapped buffer's
 * deleter runs exactly once and only after the last op using it, and a context
 * torn down with work pending completes every future. The harness then checks
 * that gaio_shutdown succeeds (no reference leaked); CI runs this under ASan. The
 * kernels have CUDA twins, so the same source runs on every backend. */
#include <pthread.h>
#include <stdatomic.h>

#include "common.h"
#include "support.h"

#define NW 512

/* Registered under the same name after the first is unregistered: a launch
 * queued before must still run the first. */
static gaio_status impostor_kernel(const gaio_launch_info *info, void *const *args) {
    (void)info;
    uint32_t *x, n;
    memcpy(&x, args[0], sizeof x);
    memcpy(&n, args[1], sizeof n);
    for (uint32_t i = 0; i < n; i++) x[i] = 0xBADBADu;
    return GAIO_ERR_USER;
}

/* The impostor's CUDA twin (a grid-stride loop, like AFFINE_CU: any launch covers n)
 * cannot return an error on a GPU; the words it writes give it away all the same. */
#define IMPOSTOR_CU(name)                                                                                \
    "extern \"C\" __global__ void " name "(unsigned *x, unsigned n, unsigned mul, unsigned add) {\n"     \
    "    (void)mul; (void)add;\n"                                                                        \
    "    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)\n" \
    "        x[i] = 0xBADBADu;\n"                                                                        \
    "}\n"

/* A wrapped buffer whose deleter checks what the last op left and frees it. */
typedef struct wrapped {
    atomic_int calls;
    atomic_int content_ok; /* the memory held `expect` when the deleter ran */
    uint32_t *mem;
    const uint32_t *expect; /* NULL: no content check */
    size_t n;
} wrapped;

static void wrapped_deleter(void *ptr, void *user) {
    wrapped *w = user;
    int ok = ptr == w->mem;
    if (ok && w->expect) ok = memcmp(ptr, w->expect, w->n * 4) == 0;
    atomic_store(&w->content_ok, ok);
    free(ptr);
    atomic_fetch_add(&w->calls, 1);
}

static gaio_buffer *wrap_new(gaio_context *ctx, wrapped *w, size_t n, const uint32_t *expect) {
    w->mem = malloc(n * 4);
    CHECK(w->mem);
    for (size_t i = 0; i < n; i++) w->mem[i] = 0x5A5A5A5Au;
    w->n = n;
    w->expect = expect;
    atomic_init(&w->calls, 0);
    atomic_init(&w->content_ok, 0);
    gaio_buffer *b;
    OK(gaio_buffer_wrap(ctx, GAIO_MEM_HOST, w->mem, n * 4, wrapped_deleter, w, &b));
    return b;
}

/* Deleters may run on a gaio thread just after the op retires: wait a while. */
static void wait_calls(wrapped *w, int want) {
    for (int i = 0; i < 10000 && atomic_load(&w->calls) < want; i++) test_sleep_ms(1);
    CHECK(atomic_load(&w->calls) == want);
}

/* ---- 1. release everything while work using it is queued ---- */

static void test_release_in_flight(int device, uint64_t *seed) {
    gaio_context *ctx;
    OK(gaio_context_create(device, NULL, &ctx));
    gaio_kernel *k = AFFINE_REGISTER("lifetime_affine");
    gaio_stream *a, *b, *c;
    OK(gaio_stream_create(ctx, 0, 0, &a));
    OK(gaio_stream_create(ctx, 0, GAIO_STREAM_DEFERRED, &b));
    OK(gaio_context_default_stream(ctx, &c)); /* borrowed: dies with ctx */
    gaio_event *ev, *ev2;
    OK(gaio_event_create(ctx, 0, &ev));
    OK(gaio_event_create(ctx, GAIO_EVENT_DISABLE_TIMING, &ev2));
    gaio_buffer *src, *mid, *keep;
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_HOST, NW * 4, &src));
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_DEVICE, NW * 4, &mid));
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_HOST, NW * 4, &keep));
    uint32_t *hs = host_words(src), *hk = host_words(keep);
    uint32_t expect[NW];
    uint32_t mul = (uint32_t)test_rand(seed) | 1u, add = (uint32_t)test_rand(seed);
    for (uint32_t i = 0; i < NW; i++) {
        hs[i] = (uint32_t)test_rand(seed) | 0x10000u;
        hk[i] = 0;
        expect[i] = hs[i] * mul + add + i;
    }
    wrapped w;
    gaio_buffer *wb = wrap_new(ctx, &w, NW, expect);

    gate g = {0}, gc = {0};
    /* A: held, then produce mid = affine(src). */
    OK(gaio_launch_host_func(a, gate_fn, &g));
    OK(gaio_memcpy_async(a, mid, 0, src, 0, NW * 4));
    launch_affine(k, a, mid, NW, mul, add);
    OK(gaio_event_record(ev, a));
    /* B (deferred): after A, mid -> wrapped. */
    OK(gaio_stream_wait_event(b, ev));
    OK(gaio_memcpy_async(b, wb, 0, mid, 0, NW * 4));
    OK(gaio_event_record(ev2, b));
    /* C (the default stream): after B, held again, then wrapped -> keep: the
     * wrapped buffer's last use. */
    OK(gaio_stream_wait_event(c, ev2));
    OK(gaio_launch_host_func(c, gate_fn, &gc));
    OK(gaio_memcpy_async(c, keep, 0, wb, 0, NW * 4));
    gaio_future *fc;
    OK(gaio_future_fence(c, &fc));

    /* Drop every handle but keep and the future. */
    OK(gaio_kernel_unregister("lifetime_affine"));
    OK(gaio_kernel_release(k));
    gaio_kernel *impostor =
        test_kernel("lifetime_affine", impostor_kernel, 4, affine_sizes(), IMPOSTOR_CU("lifetime_affine"));
    OK(gaio_buffer_release(src));
    OK(gaio_buffer_release(mid));
    OK(gaio_buffer_release(wb));
    OK(gaio_event_release(ev));
    OK(gaio_event_release(ev2));
    OK(gaio_stream_release(a));
    OK(gaio_stream_release(b));
    OK(gaio_context_release(ctx));
    CHECK(atomic_load(&w.calls) == 0);
    CHECK(gaio_future_poll(fc) == GAIO_ERR_NOT_READY);

    atomic_store(&g.open, 1);
    wait_entered(&gc); /* A and B ran: the wrapped buffer has been written, not yet read */
    test_sleep_ms(10);
    CHECK(atomic_load(&w.calls) == 0);
    CHECK(gaio_future_poll(fc) == GAIO_ERR_NOT_READY);
    atomic_store(&gc.open, 1);
    CHECK(gaio_future_wait(fc, BIG_TIMEOUT_NS) == GAIO_OK);
    wait_calls(&w, 1);
    CHECK(atomic_load(&w.content_ok));
    CHECK(memcmp(hk, expect, sizeof expect) == 0);
    CHECK(!atomic_load(&g.timed_out) && !atomic_load(&gc.timed_out));
    test_sleep_ms(5);
    CHECK(atomic_load(&w.calls) == 1); /* exactly once */
    OK(gaio_future_release(fc));
    OK(gaio_buffer_release(keep)); /* the last reference to the context */
    OK(gaio_kernel_unregister("lifetime_affine"));
    OK(gaio_kernel_release(impostor));
}

/* ---- 2. a context torn down with work pending completes every future ---- */

#define TD_STREAMS 4
#define TD_PER_STREAM 40

typedef struct then_count {
    atomic_int calls;
    atomic_int bad;
} then_count;

static void count_cb(gaio_future *f, gaio_status st, void *user) {
    (void)f;
    then_count *t = user;
    if (st != GAIO_OK && st != GAIO_ERR_USER) atomic_fetch_add(&t->bad, 1);
    atomic_fetch_add(&t->calls, 1);
}

static gaio_status cleanup_fn(gaio_status st, void *user) {
    (void)st;
    free(user); /* would leak (ASan) if a failed stream skipped its host functions */
    return GAIO_OK;
}

static void test_teardown_pending(int device, uint64_t *seed) {
    gaio_context *ctx;
    OK(gaio_context_create(device, NULL, &ctx));
    gaio_cq *cq;
    OK(gaio_cq_create(&cq));
    gaio_stream *s[TD_STREAMS];
    OK(gaio_stream_create(ctx, 0, 0, &s[0]));
    OK(gaio_stream_create(ctx, 3, 0, &s[1]));
    OK(gaio_stream_create(ctx, 0, GAIO_STREAM_DEFERRED, &s[2]));
    OK(gaio_context_default_stream(ctx, &s[3]));
    gaio_event *ev;
    OK(gaio_event_create(ctx, 0, &ev));
    gate g = {0};
    OK(gaio_launch_host_func(s[0], gate_fn, &g));
    OK(gaio_event_record(ev, s[0]));
    for (int i = 1; i < TD_STREAMS; i++) OK(gaio_stream_wait_event(s[i], ev));
    /* Stream 2 fails half-way: its later futures complete with GAIO_ERR_USER. */
    enum { NFUT = TD_STREAMS * TD_PER_STREAM };
    gaio_future *futs[NFUT];
    gaio_status want[NFUT];
    wrapped w[TD_STREAMS];
    gaio_buffer *src[TD_STREAMS];
    then_count tc = {0};
    int nf = 0;
    for (int i = 0; i < TD_STREAMS; i++) {
        gaio_buffer *wb = wrap_new(ctx, &w[i], NW, NULL);
        OK(gaio_buffer_alloc(ctx, GAIO_MEM_DEVICE, NW * 4, &src[i]));
        OK(gaio_memset_async(s[i], src[i], 0, 1 + (int)(test_rand(seed) % 255), NW * 4));
        for (int j = 0; j < TD_PER_STREAM; j++) {
            if (i == 2 && j == TD_PER_STREAM / 2) OK(gaio_launch_host_func(s[i], fail_user_fn, NULL));
            OK(gaio_memcpy_async(s[i], wb, (size_t)(j % 8) * 64, src[i], (size_t)(j % 5) * 64, 64));
            void *scratch = malloc(32);
            CHECK(scratch);
            OK(gaio_launch_host_func(s[i], cleanup_fn, scratch));
            OK(gaio_future_fence(s[i], &futs[nf]));
            want[nf] = (i == 2 && j >= TD_PER_STREAM / 2) ? GAIO_ERR_USER : GAIO_OK;
            OK(gaio_future_then(futs[nf], count_cb, &tc));
            OK(gaio_cq_add(cq, futs[nf], (void *)(uintptr_t)(nf + 1)));
            nf++;
        }
        OK(gaio_buffer_release(wb));
    }
    gaio_future *from_ev, *joined;
    OK(gaio_future_from_event(ev, &from_ev));
    OK(gaio_future_join(futs, (size_t)nf, &joined));
    /* Everything but the futures and the queue goes. */
    for (int i = 0; i < TD_STREAMS; i++) OK(gaio_buffer_release(src[i]));
    for (int i = 0; i < 3; i++) OK(gaio_stream_release(s[i]));
    OK(gaio_event_release(ev));
    OK(gaio_context_release(ctx));
    for (int i = 0; i < TD_STREAMS; i++) CHECK(atomic_load(&w[i].calls) == 0);
    CHECK(gaio_future_poll(joined) == GAIO_ERR_NOT_READY);

    atomic_store(&g.open, 1);
    CHECK(gaio_future_wait(joined, BIG_TIMEOUT_NS) == GAIO_ERR_USER);
    OK(gaio_future_wait(from_ev, BIG_TIMEOUT_NS));
    for (int i = 0; i < nf; i++) CHECK(gaio_future_wait(futs[i], BIG_TIMEOUT_NS) == want[i]);
    for (int i = 0; i < TD_STREAMS; i++) {
        wait_calls(&w[i], 1);
        CHECK(atomic_load(&w[i].content_ok));
    }
    /* Every future posted its entry once, with its status. */
    int seen[NFUT] = {0};
    int got = 0;
    while (got < nf) {
        gaio_cq_entry e[16];
        size_t cnt = 0;
        OK(gaio_cq_wait(cq, e, 16, &cnt, BIG_TIMEOUT_NS));
        for (size_t i = 0; i < cnt; i++) {
            uintptr_t id = (uintptr_t)e[i].user_data;
            CHECK(id >= 1 && id <= (uintptr_t)nf);
            CHECK(e[i].status == want[id - 1]);
            seen[id - 1]++;
        }
        got += (int)cnt;
    }
    for (int i = 0; i < nf; i++) CHECK(seen[i] == 1);
    for (int i = 0; i < 200 && atomic_load(&tc.calls) < nf; i++) test_sleep_ms(1);
    CHECK(atomic_load(&tc.calls) == nf && atomic_load(&tc.bad) == 0);
    CHECK(!atomic_load(&g.timed_out));
    for (int i = 0; i < nf; i++) OK(gaio_future_release(futs[i]));
    OK(gaio_future_release(from_ev));
    OK(gaio_future_release(joined));
    OK(gaio_cq_release(cq));
}

/* ---- 3. churn: make and drop handles as fast as possible, work still queued ---- */

#define CHURN 300

static void test_churn(int device, uint64_t *seed) {
    gaio_device_props props;
    OK(gaio_device_get_props(device, &props));
    /* A context held throughout keeps the device's shared state up: on CUDA the primary
     * context would otherwise be torn down and built again whenever a round's work has
     * finished before the next round begins, which is slow and not what this churns. */
    gaio_context *hold;
    OK(gaio_context_create(device, NULL, &hold));
    gaio_cq *cq;
    OK(gaio_cq_create(&cq));
    wrapped *w = calloc(CHURN, sizeof *w);
    uint32_t *expect = calloc((size_t)CHURN * 64, 4);
    CHECK(w && expect);
    gaio_kernel *k = AFFINE_REGISTER("lifetime_churn");
    for (int i = 0; i < CHURN; i++) {
        gaio_context *ctx;
        OK(gaio_context_create(device, NULL, &ctx));
        gaio_stream *s; /* every priority level of the device in turn */
        OK(gaio_stream_create(ctx, i % (props.max_priority + 1), (i & 1) ? GAIO_STREAM_DEFERRED : 0, &s));
        uint32_t *e = expect + (size_t)i * 64;
        uint32_t mul = (uint32_t)test_rand(seed) | 1u, add = (uint32_t)test_rand(seed), n = 64;
        int v = 1 + (int)(test_rand(seed) % 255);
        for (uint32_t j = 0; j < 64; j++) e[j] = (uint32_t)v * 0x01010101u * mul + add + j;
        gaio_buffer *d, *wb;
        OK(gaio_buffer_alloc_async(s, GAIO_MEM_DEVICE, 64 * 4, &d));
        wb = wrap_new(ctx, &w[i], 64, e);
        OK(gaio_context_release(ctx)); /* the stream and buffers keep it */
        OK(gaio_memset_async(s, d, 0, v, 64 * 4));
        launch_affine(k, s, d, n, mul, add);
        OK(gaio_memcpy_async(s, wb, 0, d, 0, 64 * 4));
        OK(gaio_buffer_release(d));
        OK(gaio_buffer_release(wb));
        gaio_future *f;
        OK(gaio_future_fence(s, &f));
        OK(gaio_cq_add(cq, f, (void *)(uintptr_t)(i + 1)));
        OK(gaio_future_release(f)); /* the queue's entry is all that is left */
        OK(gaio_stream_release(s));
    }
    int seen[CHURN] = {0};
    for (int got = 0; got < CHURN;) {
        gaio_cq_entry e[32];
        size_t cnt = 0;
        OK(gaio_cq_wait(cq, e, 32, &cnt, BIG_TIMEOUT_NS));
        for (size_t i = 0; i < cnt; i++) {
            uintptr_t id = (uintptr_t)e[i].user_data;
            CHECK(id >= 1 && id <= CHURN && e[i].status == GAIO_OK);
            seen[id - 1]++;
        }
        got += (int)cnt;
    }
    for (int i = 0; i < CHURN; i++) {
        CHECK(seen[i] == 1);
        wait_calls(&w[i], 1);
        CHECK(atomic_load(&w[i].content_ok));
    }
    OK(gaio_cq_release(cq));
    OK(gaio_kernel_unregister("lifetime_churn"));
    OK(gaio_kernel_release(k));
    OK(gaio_context_release(hold));
    free(w);
    free(expect);
}

static void run(int device) {
    configure_workers(4);
    uint64_t seed = test_seed();
    test_release_in_flight(device, &seed);
    test_teardown_pending(device, &seed);
    test_churn(device, &seed);
}
