/* Deferred streams (GAIO_STREAM_DEFERRED: submission through a per-device
 * runtime thread): the same order and results as inline streams, also with
 * several producer threads; deferred and inline streams ordered by events in
 * either direction; futures, callbacks, queues and failures behave the same;
 * invalid arguments are still rejected at the call.
 *
 * The random programs are those of test_stream_order: non-commuting kernels,
 * fills, rotations and snapshots on a DEVICE state buffer, host functions that
 * log their index, checked against a host model. The same source runs on every
 * backend: the affine kernel has a CUDA twin, and launch_fail says what fails a
 * stream with GAIO_ERR_DEVICE on each. */
#include <pthread.h>
#include <stdatomic.h>

#include "common.h"

#define NW 48 /* words of state */
#define BIG_TIMEOUT_NS (30ll * 1000000000ll)

typedef struct gate {
    atomic_int open, entered, timed_out;
} gate;

static gaio_status gate_fn(gaio_status st, void *user) {
    (void)st;
    gate *g = user;
    atomic_store(&g->entered, 1);
    for (int i = 0; i < 30000 && !atomic_load(&g->open); i++) test_sleep_ms(1);
    if (!atomic_load(&g->open)) {
        atomic_store(&g->timed_out, 1);
        return GAIO_ERR_TIMEOUT;
    }
    return GAIO_OK;
}

static gaio_status sleep_fn(gaio_status st, void *user) {
    (void)st;
    test_sleep_ms(*(const int *)user);
    return GAIO_OK;
}

/* x[i] = x[i] * mul + add + i (mod 2^32) */
static gaio_status affine_kernel(const gaio_launch_info *info, void *const *args) {
    (void)info;
    uint32_t *x, n, mul, add;
    memcpy(&x, args[0], sizeof x);
    memcpy(&n, args[1], sizeof n);
    memcpy(&mul, args[2], sizeof mul);
    memcpy(&add, args[3], sizeof add);
    for (uint32_t i = 0; i < n; i++) x[i] = x[i] * mul + add + i;
    return GAIO_OK;
}

static gaio_status fail_kernel(const gaio_launch_info *info, void *const *args) {
    (void)info;
    (void)args;
    return GAIO_ERR_DEVICE;
}

/* The CUDA twin of affine_kernel: a grid-stride loop covers n for any launch. */
#define AFFINE_CU(name)                                                                                  \
    "extern \"C\" __global__ void " name "(unsigned *x, unsigned n, unsigned mul, unsigned add) {\n"     \
    "    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)\n" \
    "        x[i] = x[i] * mul + add + i;\n"                                                             \
    "}\n"

static gaio_kernel *g_affine, *g_fail;
static int g_cuda; /* the device under test is a GPU */

static gaio_status fail_device_fn(gaio_status st, void *user) {
    (void)user;
    return st == GAIO_OK ? GAIO_ERR_DEVICE : GAIO_OK; /* on a failed stream it is skipped, like the kernel */
}

/* Fails the stream with GAIO_ERR_DEVICE, as a device fault would. On the host backend
 * a kernel returns the error. A GPU kernel cannot fail softly: a real fault poisons the
 * CUDA context for the whole process (tests/test_cuda_fault.c checks that), so on CUDA
 * devices a host function returns the error instead, which fails the stream the same
 * way at the same point. */
static void launch_fail(gaio_stream *s) {
    if (g_cuda) OK(gaio_launch_host_func(s, fail_device_fn, NULL));
    else OK(gaio_launch(s, g_fail, (gaio_dim3){1, 1, 1}, (gaio_dim3){1, 1, 1}, 0, NULL, 0));
}

/* What the failure's message names: the kernel, or the host function on CUDA. */
static const char *fail_name(void) { return g_cuda ? "a host function returned GAIO_ERR_DEVICE" : "deferred_fail"; }

/* ---- one stream's random program and its host model ---- */

typedef struct prog prog;

typedef struct host_call {
    prog *p;
    int idx;
} host_call;

struct prog {
    gaio_stream *s;
    gaio_buffer *state, *tmp; /* DEVICE */
    gaio_buffer *snaps;       /* HOST: max_snaps * NW words */
    gaio_buffer *result;      /* HOST: NW words, the final state */
    uint32_t model[NW];
    uint32_t *expect; /* expected snapshots */
    int nsnaps, max_snaps;
    host_call *calls;
    int nhost, max_host;
    int *log;
    atomic_int nlog;
    atomic_int bad_status; /* host functions that saw a status other than GAIO_OK */
    uint64_t rng;
};

static gaio_status log_fn(gaio_status st, void *user) {
    host_call *c = user;
    if (st != GAIO_OK) atomic_fetch_add(&c->p->bad_status, 1);
    int pos = atomic_fetch_add(&c->p->nlog, 1);
    if (pos < c->p->max_host) c->p->log[pos] = c->idx;
    return GAIO_OK;
}

static void prog_init(prog *p, gaio_context *ctx, gaio_stream *s, int steps, uint64_t seed) {
    memset(p, 0, sizeof *p);
    p->s = s;
    p->rng = seed ? seed : 1;
    p->max_snaps = steps + 1;
    p->max_host = steps + 1;
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_DEVICE, NW * 4, &p->state));
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_DEVICE, NW * 4, &p->tmp));
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_HOST, (size_t)p->max_snaps * NW * 4, &p->snaps));
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_HOST, NW * 4, &p->result));
    p->expect = calloc((size_t)p->max_snaps * NW, 4);
    p->calls = calloc((size_t)p->max_host, sizeof *p->calls);
    p->log = calloc((size_t)p->max_host, sizeof *p->log);
    CHECK(p->expect && p->calls && p->log);
    atomic_init(&p->nlog, 0);
    atomic_init(&p->bad_status, 0);
    /* Random, never all-zero initial state, uploaded in stream order. */
    gaio_buffer *init;
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_HOST, NW * 4, &init));
    uint32_t *h;
    OK(gaio_buffer_host_ptr(init, (void **)&h));
    for (int i = 0; i < NW; i++) p->model[i] = h[i] = (uint32_t)test_rand(&p->rng) | 1u;
    OK(gaio_memcpy_async(s, p->state, 0, init, 0, NW * 4));
    OK(gaio_buffer_release(init)); /* the copy keeps it alive */
}

static void prog_step(prog *p) {
    unsigned r = (unsigned)(test_rand(&p->rng) % 100);
    if (r < 30) { /* kernel */
        uint32_t n = NW, mul = (uint32_t)test_rand(&p->rng) | 1u, add = (uint32_t)test_rand(&p->rng);
        gaio_arg args[4] = {GAIO_ARG_BUFFER(p->state), GAIO_ARG(n), GAIO_ARG(mul), GAIO_ARG(add)};
        OK(gaio_launch(p->s, g_affine, (gaio_dim3){1, 1, 1}, (gaio_dim3){1, 1, 1}, 0, args, 4));
        for (uint32_t i = 0; i < NW; i++) p->model[i] = p->model[i] * mul + add + i;
    } else if (r < 45) { /* fill a word range with a non-zero byte */
        size_t a = test_rand(&p->rng) % NW, len = 1 + test_rand(&p->rng) % (NW - a);
        int v = 1 + (int)(test_rand(&p->rng) % 255);
        OK(gaio_memset_async(p->s, p->state, a * 4, v, len * 4));
        for (size_t i = a; i < a + len; i++) p->model[i] = (uint32_t)v * 0x01010101u;
    } else if (r < 60) { /* rotate right by k: three copies, each reading the previous one's output */
        size_t k = 1 + test_rand(&p->rng) % (NW - 1);
        OK(gaio_memcpy_async(p->s, p->tmp, k * 4, p->state, 0, (NW - k) * 4));
        OK(gaio_memcpy_async(p->s, p->tmp, 0, p->state, (NW - k) * 4, k * 4));
        OK(gaio_memcpy_async(p->s, p->state, 0, p->tmp, 0, NW * 4));
        uint32_t old[NW];
        memcpy(old, p->model, sizeof old);
        for (size_t i = 0; i < NW; i++) p->model[(i + k) % NW] = old[i];
    } else if (r < 80) { /* snapshot */
        CHECK(p->nsnaps < p->max_snaps);
        OK(gaio_memcpy_async(p->s, p->snaps, (size_t)p->nsnaps * NW * 4, p->state, 0, NW * 4));
        memcpy(p->expect + (size_t)p->nsnaps * NW, p->model, sizeof p->model);
        p->nsnaps++;
    } else { /* host function */
        CHECK(p->nhost < p->max_host);
        host_call *c = &p->calls[p->nhost];
        c->p = p;
        c->idx = p->nhost++;
        OK(gaio_launch_host_func(p->s, log_fn, c));
    }
}

/* Queues the copy of the final state into p->result. */
static void prog_finish(prog *p) { OK(gaio_memcpy_async(p->s, p->result, 0, p->state, 0, NW * 4)); }

/* Call once the stream has drained. */
static void prog_verify(prog *p, const char *what) {
    uint32_t *res, *snaps;
    OK(gaio_buffer_host_ptr(p->result, (void **)&res));
    OK(gaio_buffer_host_ptr(p->snaps, (void **)&snaps));
    for (int i = 0; i < NW; i++) {
        if (res[i] != p->model[i]) {
            fprintf(stderr, "%s: final word %d is 0x%08x, expected 0x%08x\n", what, i, res[i], p->model[i]);
            exit(1);
        }
    }
    for (int k = 0; k < p->nsnaps; k++)
        for (int i = 0; i < NW; i++) {
            uint32_t got = snaps[(size_t)k * NW + i], want = p->expect[(size_t)k * NW + i];
            if (got != want) {
                fprintf(stderr, "%s: snapshot %d word %d is 0x%08x, expected 0x%08x\n", what, k, i, got, want);
                exit(1);
            }
        }
    CHECK(atomic_load(&p->nlog) == p->nhost);
    for (int i = 0; i < p->nhost; i++) {
        if (p->log[i] != i) {
            fprintf(stderr, "%s: host function #%d ran in place %d\n", what, p->log[i], i);
            exit(1);
        }
    }
    CHECK(atomic_load(&p->bad_status) == 0);
    CHECK(p->nsnaps > 0 && p->nhost > 0);
}

static void prog_free(prog *p) {
    OK(gaio_buffer_release(p->state));
    OK(gaio_buffer_release(p->tmp));
    OK(gaio_buffer_release(p->snaps));
    OK(gaio_buffer_release(p->result));
    free(p->expect);
    free(p->calls);
    free(p->log);
}

static void launch_affine(gaio_stream *s, gaio_buffer *b, uint32_t n, uint32_t mul, uint32_t add) {
    gaio_arg args[4] = {GAIO_ARG_BUFFER(b), GAIO_ARG(n), GAIO_ARG(mul), GAIO_ARG(add)};
    OK(gaio_launch(s, g_affine, (gaio_dim3){1, 1, 1}, (gaio_dim3){1, 1, 1}, 0, args, 4));
}

static uint32_t *host_words(gaio_buffer *b) {
    void *p;
    OK(gaio_buffer_host_ptr(b, &p));
    return p;
}

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
    prog_init(&p[0], ctx, in, 1500, pseed);
    prog_init(&p[1], ctx, def, 1500, pseed);
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
    CHECK(memcmp(host_words(p[0].result), host_words(p[1].result), NW * 4) == 0);
    CHECK(memcmp(host_words(p[0].snaps), host_words(p[1].snaps), (size_t)p[0].nsnaps * NW * 4) == 0);
    prog_free(&p[0]);
    prog_free(&p[1]);
    OK(gaio_stream_release(in));
    OK(gaio_stream_release(def));
}

/* ---- 2. several producer threads: own deferred streams, and one shared ---- */

#define NTHR 4

typedef struct thr_arg {
    prog *p;
    int steps;
} thr_arg;

static void *prog_thread(void *arg) {
    thr_arg *a = arg;
    for (int i = 0; i < a->steps; i++) prog_step(a->p);
    prog_finish(a->p);
    return NULL;
}

static void test_threads_own_streams(gaio_context *ctx, uint64_t *seed) {
    gaio_stream *s[NTHR];
    prog p[NTHR];
    thr_arg a[NTHR];
    pthread_t t[NTHR];
    for (int i = 0; i < NTHR; i++) {
        OK(gaio_stream_create(ctx, i % 3, GAIO_STREAM_DEFERRED, &s[i]));
        prog_init(&p[i], ctx, s[i], 800, test_rand(seed));
        a[i] = (thr_arg){&p[i], 800};
    }
    for (int i = 0; i < NTHR; i++) CHECK(pthread_create(&t[i], NULL, prog_thread, &a[i]) == 0);
    for (int i = 0; i < NTHR; i++) CHECK(pthread_join(t[i], NULL) == 0);
    OK(gaio_context_synchronize(ctx));
    for (int i = 0; i < NTHR; i++) {
        OK(gaio_stream_query(s[i]));
        prog_verify(&p[i], "deferred, own thread");
        prog_free(&p[i]);
        OK(gaio_stream_release(s[i]));
    }
}

#define SHARED_PER_THREAD 2000

typedef struct shared_log {
    atomic_int n;
    int entries[NTHR * SHARED_PER_THREAD];
} shared_log;

typedef struct shared_call {
    shared_log *log;
    int code;
} shared_call;

static gaio_status shared_fn(gaio_status st, void *user) {
    shared_call *c = user;
    int pos = atomic_fetch_add(&c->log->n, 1);
    if (pos < NTHR * SHARED_PER_THREAD) c->log->entries[pos] = st == GAIO_OK ? c->code : -1;
    return GAIO_OK;
}

typedef struct shared_arg {
    gaio_stream *s;
    shared_call *calls;
} shared_arg;

static void *shared_thread(void *arg) {
    shared_arg *a = arg;
    for (int i = 0; i < SHARED_PER_THREAD; i++) OK(gaio_launch_host_func(a->s, shared_fn, &a->calls[i]));
    return NULL;
}

static void test_shared_stream(gaio_context *ctx) {
    gaio_stream *s;
    OK(gaio_stream_create(ctx, 0, GAIO_STREAM_DEFERRED, &s));
    shared_log *log = calloc(1, sizeof *log);
    shared_call *calls = calloc(NTHR * SHARED_PER_THREAD, sizeof *calls);
    CHECK(log && calls);
    atomic_init(&log->n, 0);
    shared_arg a[NTHR];
    pthread_t t[NTHR];
    for (int i = 0; i < NTHR; i++) {
        for (int j = 0; j < SHARED_PER_THREAD; j++)
            calls[i * SHARED_PER_THREAD + j] = (shared_call){log, i * SHARED_PER_THREAD + j};
        a[i] = (shared_arg){s, &calls[i * SHARED_PER_THREAD]};
        CHECK(pthread_create(&t[i], NULL, shared_thread, &a[i]) == 0);
    }
    for (int i = 0; i < NTHR; i++) CHECK(pthread_join(t[i], NULL) == 0);
    OK(gaio_stream_synchronize(s));
    CHECK(atomic_load(&log->n) == NTHR * SHARED_PER_THREAD);
    int next[NTHR] = {0};
    for (int k = 0; k < NTHR * SHARED_PER_THREAD; k++) {
        int code = log->entries[k];
        CHECK(code >= 0);
        int thr = code / SHARED_PER_THREAD, seq = code % SHARED_PER_THREAD;
        if (seq != next[thr]) {
            fprintf(stderr, "shared deferred stream: thread %d's op %d ran where %d was due\n", thr, seq, next[thr]);
            exit(1);
        }
        next[thr]++;
    }
    free(log);
    free(calls);
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
            launch_affine(s[i], b[i], CW, mul, add);
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

static gaio_status record_status_fn(gaio_status st, void *user) {
    atomic_store((atomic_int *)user, (int)st);
    return GAIO_OK;
}

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
    OK(gaio_launch_host_func(r->s, record_status_fn, &r->hf_status[0]));
    OK(gaio_future_fence(r->s, &r->f_before));
    launch_fail(r->s);
    OK(gaio_memcpy_async(r->s, r->after, 0, r->src, 0, 4096));
    OK(gaio_memset_async(r->s, r->after, 0, 0x42, 64));
    OK(gaio_launch_host_func(r->s, record_status_fn, &r->hf_status[1]));
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
    gaio_device_props props;
    OK(gaio_device_get_props(device, &props));
    g_cuda = props.kind == GAIO_DEVICE_CUDA;
    gaio_config cfg = {.cpu_workers = 4};
    gaio_status cst = gaio_configure(&cfg);
    CHECK(cst == GAIO_OK || cst == GAIO_ERR_STATE);
    uint64_t seed = test_seed();
    size_t sizes[4] = {sizeof(void *), 4, 4, 4};
    g_affine = test_kernel("deferred_affine", affine_kernel, 4, sizes, AFFINE_CU("deferred_affine"));
    g_fail = test_kernel("deferred_fail", fail_kernel, 0, NULL, NULL); /* host only: see launch_fail */
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
    OK(gaio_kernel_unregister("deferred_fail"));
    OK(gaio_kernel_release(g_affine));
    OK(gaio_kernel_release(g_fail));
    g_affine = g_fail = NULL;
}
