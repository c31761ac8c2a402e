/* Stream order: ops of one stream (copies, fills, kernels, host functions) run
 * strictly in submission order; several streams in parallel each keep their own
 * order; gaio_stream_query / gaio_stream_synchronize; gaio_context_synchronize
 * covers every stream of the context (the default stream and streams whose
 * handle was released with work still queued included).
 *
 * Each stream runs a random "program" on a DEVICE state buffer of NW words:
 * position-dependent affine kernels, fills, rotations (three dependent copies
 * through a scratch buffer), snapshots into a HOST buffer, host functions that
 * log their index. None of these commute, so a host model run in submission
 * order predicts every snapshot and the final state only if the stream kept
 * that order. The affine kernel has a CUDA twin, so the same programs run on
 * every backend. */
#include <pthread.h>
#include <stdatomic.h>

#include "common.h"

#define NW 48 /* words of state */

/* ---- a host function that blocks its stream until the test opens it ---- */

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

/* Its CUDA twin: a grid-stride loop, so one thread (the launches here) or many cover n. */
#define AFFINE_CU(name)                                                                                  \
    "extern \"C\" __global__ void " name "(unsigned *x, unsigned n, unsigned mul, unsigned add) {\n"     \
    "    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)\n" \
    "        x[i] = x[i] * mul + add + i;\n"                                                             \
    "}\n"

static gaio_kernel *g_affine;

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

/* ---- 1. one stream, gated: query NOT_READY, then synchronize ---- */

static void test_single_stream(gaio_context *ctx, uint64_t *seed) {
    gaio_stream *s;
    OK(gaio_stream_create(ctx, 0, 0, &s));
    OK(gaio_stream_query(s)); /* nothing submitted yet */
    gate g = {0};
    OK(gaio_launch_host_func(s, gate_fn, &g));
    prog p;
    prog_init(&p, ctx, s, 2000, test_rand(seed));
    for (int i = 0; i < 2000; i++) prog_step(&p);
    prog_finish(&p);
    CHECK(gaio_stream_query(s) == GAIO_ERR_NOT_READY);
    CHECK(atomic_load(&p.nlog) == 0); /* everything sits behind the gate */
    atomic_store(&g.open, 1);
    OK(gaio_stream_synchronize(s));
    CHECK(!atomic_load(&g.timed_out));
    OK(gaio_stream_query(s));
    prog_verify(&p, "single stream");
    prog_free(&p);
    OK(gaio_stream_release(s));
}

/* ---- 2. several streams (default included), submissions interleaved; one
 * handle released with work queued; gaio_context_synchronize waits for all ---- */

#define NPAR 5

static void test_parallel_streams(gaio_context *ctx, uint64_t *seed) {
    gaio_stream *s[NPAR];
    OK(gaio_context_default_stream(ctx, &s[0]));
    for (int i = 1; i < NPAR; i++) OK(gaio_stream_create(ctx, 0, 0, &s[i]));
    gate g = {0};
    OK(gaio_launch_host_func(s[1], gate_fn, &g)); /* stream 1 is held back until all is queued */
    prog p[NPAR];
    for (int i = 0; i < NPAR; i++) prog_init(&p[i], ctx, s[i], 600, test_rand(seed));
    for (int step = 0; step < 600; step++)
        for (int i = 0; i < NPAR; i++) prog_step(&p[i]);
    for (int i = 0; i < NPAR; i++) prog_finish(&p[i]);
    CHECK(gaio_stream_query(s[1]) == GAIO_ERR_NOT_READY);
    /* Drop our handle of the gated stream: its queued work must still run, and
     * gaio_context_synchronize must still wait for it. */
    OK(gaio_stream_release(s[1]));
    s[1] = NULL;
    atomic_store(&g.open, 1);
    OK(gaio_context_synchronize(ctx));
    CHECK(!atomic_load(&g.timed_out));
    for (int i = 0; i < NPAR; i++) {
        char what[32];
        snprintf(what, sizeof what, "parallel stream %d", i);
        prog_verify(&p[i], what);
        if (s[i]) OK(gaio_stream_query(s[i]));
    }
    for (int i = 0; i < NPAR; i++) prog_free(&p[i]);
    for (int i = 2; i < NPAR; i++) OK(gaio_stream_release(s[i]));
}

/* ---- 3. one thread per stream, submitting concurrently ---- */

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
        OK(gaio_stream_create(ctx, 0, 0, &s[i]));
        prog_init(&p[i], ctx, s[i], 800, test_rand(seed));
        a[i] = (thr_arg){&p[i], 800};
    }
    for (int i = 0; i < NTHR; i++) CHECK(pthread_create(&t[i], NULL, prog_thread, &a[i]) == 0);
    for (int i = 0; i < NTHR; i++) CHECK(pthread_join(t[i], NULL) == 0);
    OK(gaio_context_synchronize(ctx));
    for (int i = 0; i < NTHR; i++) {
        OK(gaio_stream_query(s[i]));
        prog_verify(&p[i], "threaded stream");
        prog_free(&p[i]);
        OK(gaio_stream_release(s[i]));
    }
}

/* ---- 4. several threads submitting to one shared stream: each thread's own
 * ops keep their order (per-thread sequence numbers seen by host functions) ---- */

#define SHARED_PER_THREAD 1500

typedef struct shared_log {
    atomic_int n;
    int entries[NTHR * SHARED_PER_THREAD];
} shared_log;

typedef struct shared_call {
    shared_log *log;
    int code; /* thread * SHARED_PER_THREAD + seq */
} shared_call;

static gaio_status shared_fn(gaio_status st, void *user) {
    shared_call *c = user;
    int pos = atomic_fetch_add(&c->log->n, 1);
    if (pos < NTHR * SHARED_PER_THREAD) c->log->entries[pos] = st == GAIO_OK ? c->code : -1;
    return GAIO_OK;
}

typedef struct shared_arg {
    gaio_stream *s;
    shared_call *calls; /* SHARED_PER_THREAD of this thread */
} shared_arg;

static void *shared_thread(void *arg) {
    shared_arg *a = arg;
    for (int i = 0; i < SHARED_PER_THREAD; i++) OK(gaio_launch_host_func(a->s, shared_fn, &a->calls[i]));
    return NULL;
}

static void test_shared_stream(gaio_context *ctx) {
    gaio_stream *s;
    OK(gaio_stream_create(ctx, 0, 0, &s));
    shared_log *log = calloc(1, sizeof *log);
    shared_call *calls = calloc(NTHR * SHARED_PER_THREAD, sizeof *calls);
    CHECK(log && calls);
    atomic_init(&log->n, 0);
    shared_arg a[NTHR];
    pthread_t t[NTHR];
    for (int i = 0; i < NTHR; i++) {
        for (int j = 0; j < SHARED_PER_THREAD; j++) {
            calls[i * SHARED_PER_THREAD + j].log = log;
            calls[i * SHARED_PER_THREAD + j].code = i * SHARED_PER_THREAD + j;
        }
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
            fprintf(stderr, "shared stream: thread %d's op %d ran where %d was due\n", thr, seq, next[thr]);
            exit(1);
        }
        next[thr]++;
    }
    for (int i = 0; i < NTHR; i++) CHECK(next[i] == SHARED_PER_THREAD);
    free(log);
    free(calls);
    OK(gaio_stream_release(s));
}

/* ---- 5. synchronize/query on a stream with nothing queued, and query reports
 * NOT_READY exactly while work is queued ---- */

static void test_query_sync_idle(gaio_context *ctx) {
    gaio_stream *s;
    OK(gaio_stream_create(ctx, 0, 0, &s));
    OK(gaio_stream_synchronize(s));
    OK(gaio_stream_query(s));
    for (int round = 0; round < 20; round++) {
        gate g = {0};
        OK(gaio_launch_host_func(s, gate_fn, &g));
        CHECK(gaio_stream_query(s) == GAIO_ERR_NOT_READY);
        atomic_store(&g.open, 1);
        OK(gaio_stream_synchronize(s));
        OK(gaio_stream_query(s));
    }
    FAILS(GAIO_ERR_INVALID_ARG, gaio_stream_query(NULL), "gaio_stream_query");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_stream_synchronize(NULL), "gaio_stream_synchronize");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_context_synchronize(NULL), "gaio_context_synchronize");
    OK(gaio_stream_release(s));
}

static void run(int device) {
    uint64_t seed = test_seed();
    size_t sizes[4] = {sizeof(void *), 4, 4, 4};
    g_affine = test_kernel("stream_order_affine", affine_kernel, 4, sizes, AFFINE_CU("stream_order_affine"));
    gaio_context *ctx;
    OK(gaio_context_create(device, NULL, &ctx));
    test_single_stream(ctx, &seed);
    test_parallel_streams(ctx, &seed);
    test_threads_own_streams(ctx, &seed);
    test_shared_stream(ctx);
    test_query_sync_idle(ctx);
    OK(gaio_context_synchronize(ctx));
    OK(gaio_context_release(ctx));
    OK(gaio_kernel_unregister("stream_order_affine"));
    OK(gaio_kernel_release(g_affine));
    g_affine = NULL;
}
