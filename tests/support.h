/* Helpers that several tests share; include after common.h. Everything here is
 * static inline (or a macro), so a test pays only for what it uses:
 *   timeouts        BIG_TIMEOUT_NS, MS, now_ns
 *   configuration   configure_workers
 *   host functions  gate (gate_fn, gate_close, gate_open, wait_entered), sleep_fn,
 *                   status_fn, fail_user_fn
 *   failures        fail_setup / launch_fail / fail_name / fail_teardown: a stream
 *                   failed with GAIO_ERR_DEVICE the same way on every backend
 *   kernels         affine_kernel and its CUDA twin (AFFINE_CU, AFFINE_REGISTER),
 *                   launch_affine
 *   buffers         host_ptr, host_words, stats_of, rand_range
 *   programs        prog_*: a stream's random program of non-commuting ops and its
 *                   host model (test_stream_order, test_deferred), and the
 *                   multi-threaded runs built on them */
#ifndef GAIO_TEST_SUPPORT_H
#define GAIO_TEST_SUPPORT_H

#include <pthread.h>
#include <stdatomic.h>

#include "common.h"

/* ---- time ---- */

#define BIG_TIMEOUT_NS (30ll * 1000000000ll) /* for waits that must succeed */
#define MS (1000000ll)                        /* a millisecond in nanoseconds */

static inline int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

/* Some checks hold one worker in a host function while another stream must make
 * progress: asks for n CPU workers (ignored if gaio runs already). */
static inline void configure_workers(int n) {
    gaio_config cfg = {.cpu_workers = n};
    gaio_status cst = gaio_configure(&cfg);
    CHECK(cst == GAIO_OK || cst == GAIO_ERR_STATE);
}

/* ---- a gate: a host function that holds its stream until the test opens it ---- */

/* Zero-initialize (gate g = {0}) before launching gate_fn with it, or use gate_close. */
typedef struct gate {
    atomic_int open, entered, timed_out;
} gate;

/* Gives up after 30 s: then it marks the gate timed out and fails its stream. */
static inline gaio_status gate_fn(gaio_status st, void *user) {
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

/* Resets g and holds s at it. */
static inline void gate_close(gaio_stream *s, gate *g) {
    atomic_store(&g->open, 0);
    atomic_store(&g->entered, 0);
    atomic_store(&g->timed_out, 0);
    OK(gaio_launch_host_func(s, gate_fn, g));
}

static inline void gate_open(gate *g) { atomic_store(&g->open, 1); }

/* Waits (up to 30 s) until the stream has reached the gate. */
static inline void wait_entered(gate *g) {
    for (int i = 0; i < 30000 && !atomic_load(&g->entered); i++) test_sleep_ms(1);
    CHECK(atomic_load(&g->entered));
}

/* ---- small host functions ---- */

/* Sleeps *(const int *)user milliseconds. */
static inline gaio_status sleep_fn(gaio_status st, void *user) {
    (void)st;
    test_sleep_ms(*(const int *)user);
    return GAIO_OK;
}

/* Records the status the host function was called with in *(atomic_int *)user. */
static inline gaio_status status_fn(gaio_status st, void *user) {
    atomic_store((atomic_int *)user, (int)st);
    return GAIO_OK;
}

/* Fails its stream with GAIO_ERR_USER. */
static inline gaio_status fail_user_fn(gaio_status st, void *user) {
    (void)st;
    (void)user;
    return GAIO_ERR_USER;
}

/* ---- failing a stream with GAIO_ERR_DEVICE, as a device fault would ----
 *
 * On the host backend a kernel returns the error. A GPU kernel cannot fail softly: a
 * real fault poisons the CUDA context for the whole process (tests/core/test_cuda_fault.c
 * checks that), so on CUDA devices a host function returns the error instead, which
 * fails the stream the same way at the same point. The kernel is registered for the
 * host only, under a name of the test's own: fail_setup in run(), fail_teardown at its
 * end. */

typedef struct fail_state {
    gaio_kernel *kernel;
    const char *name; /* the kernel's */
    int cuda;         /* the device under test is a GPU */
    atomic_int calls; /* failures that ran (the kernel's or the host function's) */
} fail_state;

static inline fail_state *fail_state_get(void) {
    static fail_state state;
    return &state;
}

static inline gaio_status fail_device_kernel(const gaio_launch_info *info, void *const *args) {
    (void)info;
    (void)args;
    atomic_fetch_add(&fail_state_get()->calls, 1);
    return GAIO_ERR_DEVICE;
}

static inline gaio_status fail_device_fn(gaio_status st, void *user) {
    (void)user;
    if (st != GAIO_OK) return GAIO_OK; /* on a failed stream it is skipped, like the kernel */
    atomic_fetch_add(&fail_state_get()->calls, 1);
    return GAIO_ERR_DEVICE;
}

static inline void fail_setup(int device, const char *name) {
    fail_state *f = fail_state_get();
    gaio_device_props props;
    OK(gaio_device_get_props(device, &props));
    f->cuda = props.kind == GAIO_DEVICE_CUDA;
    f->name = name;
    f->kernel = test_kernel(name, fail_device_kernel, 0, NULL, NULL); /* host only */
}

static inline void fail_teardown(void) {
    fail_state *f = fail_state_get();
    OK(gaio_kernel_unregister(f->name));
    OK(gaio_kernel_release(f->kernel));
    f->kernel = NULL;
}

static inline void launch_fail(gaio_stream *s) {
    fail_state *f = fail_state_get();
    if (f->cuda) OK(gaio_launch_host_func(s, fail_device_fn, NULL));
    else OK(gaio_launch(s, f->kernel, (gaio_dim3){1, 1, 1}, (gaio_dim3){1, 1, 1}, 0, NULL, 0));
}

/* What the failure's message names: the kernel, or the host function on CUDA. */
static inline const char *fail_name(void) {
    fail_state *f = fail_state_get();
    return f->cuda ? "a host function returned GAIO_ERR_DEVICE" : f->name;
}

/* The device under test (of the last fail_setup) is a GPU. */
static inline int fail_on_cuda(void) { return fail_state_get()->cuda; }

/* How many failures ran so far (in this process). */
static inline int fail_calls(void) { return atomic_load(&fail_state_get()->calls); }

/* ---- the affine kernel: x[i] = x[i] * mul + add + i (mod 2^32), i < n ---- */

static inline gaio_status affine_kernel(const gaio_launch_info *info, void *const *args) {
    (void)info;
    uint32_t *x, n, mul, add;
    memcpy(&x, args[0], sizeof x);
    memcpy(&n, args[1], sizeof n);
    memcpy(&mul, args[2], sizeof mul);
    memcpy(&add, args[3], sizeof add);
    for (uint32_t i = 0; i < n; i++) x[i] = x[i] * mul + add + i;
    return GAIO_OK;
}

/* Its arguments: (uint32_t *x, uint32_t n, uint32_t mul, uint32_t add). */
static inline const size_t *affine_sizes(void) {
    static const size_t sizes[4] = {sizeof(void *), 4, 4, 4};
    return sizes;
}

/* Its CUDA twin, named name (a string literal): a grid-stride loop, so one thread (the
 * launches here) or many cover n. */
#define AFFINE_CU(name)                                                                                  \
    "extern \"C\" __global__ void " name "(unsigned *x, unsigned n, unsigned mul, unsigned add) {\n"     \
    "    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)\n" \
    "        x[i] = x[i] * mul + add + i;\n"                                                             \
    "}\n"

/* Registers the affine kernel and its twin as name (a string literal, one of the test's
 * own: a name is registered once at a time); returns a reference (test_kernel). */
#define AFFINE_REGISTER(name) test_kernel(name, affine_kernel, 4, affine_sizes(), AFFINE_CU(name))

/* One thread over b's first n words. */
static inline void launch_affine(gaio_kernel *k, gaio_stream *s, gaio_buffer *b, uint32_t n, uint32_t mul,
                                 uint32_t add) {
    gaio_arg args[4] = {GAIO_ARG_BUFFER(b), GAIO_ARG(n), GAIO_ARG(mul), GAIO_ARG(add)};
    OK(gaio_launch(s, k, (gaio_dim3){1, 1, 1}, (gaio_dim3){1, 1, 1}, 0, args, 4));
}

/* ---- buffers and random numbers ---- */

/* The host address of a host-visible buffer. */
static inline void *host_ptr(gaio_buffer *b) {
    void *p;
    OK(gaio_buffer_host_ptr(b, &p));
    return p;
}

static inline uint32_t *host_words(gaio_buffer *b) { return host_ptr(b); }

static inline gaio_pool_stats stats_of(gaio_context *ctx, gaio_mem_kind k) {
    gaio_pool_stats st;
    OK(gaio_context_pool_stats(ctx, (int)k, &st));
    return st;
}

static inline size_t rand_range(uint64_t *rng, size_t lo, size_t hi) { /* [lo, hi] */
    return lo + (size_t)(test_rand(rng) % (uint64_t)(hi - lo + 1));
}

/* ---- one stream's random program and its host model ----
 *
 * A program runs on a DEVICE state buffer of PROG_NW words: position-dependent affine
 * kernels, fills, rotations (three dependent copies through a scratch buffer),
 * snapshots into a HOST buffer, host functions that log their index. None of these
 * commute, so the host model, run in submission order, predicts every snapshot and the
 * final state only if the stream kept that order. */

#define PROG_NW 48 /* words of state */

typedef struct prog prog;

typedef struct prog_call {
    prog *p;
    int idx;
} prog_call;

struct prog {
    gaio_stream *s;
    gaio_kernel *affine;
    gaio_buffer *state, *tmp; /* DEVICE */
    gaio_buffer *snaps;       /* HOST: max_snaps * PROG_NW words */
    gaio_buffer *result;      /* HOST: PROG_NW words, the final state */
    uint32_t model[PROG_NW];
    uint32_t *expect; /* expected snapshots */
    int nsnaps, max_snaps;
    prog_call *calls;
    int nhost, max_host;
    int *log;
    atomic_int nlog;
    atomic_int bad_status; /* host functions that saw a status other than GAIO_OK */
    uint64_t rng;
};

static inline gaio_status prog_log_fn(gaio_status st, void *user) {
    prog_call *c = user;
    if (st != GAIO_OK) atomic_fetch_add(&c->p->bad_status, 1);
    int pos = atomic_fetch_add(&c->p->nlog, 1);
    if (pos < c->p->max_host) c->p->log[pos] = c->idx;
    return GAIO_OK;
}

/* A program of up to `steps` steps on s, launching `affine` (AFFINE_REGISTER). */
static inline void prog_init(prog *p, gaio_context *ctx, gaio_stream *s, gaio_kernel *affine, int steps,
                             uint64_t seed) {
    memset(p, 0, sizeof *p);
    p->s = s;
    p->affine = affine;
    p->rng = seed ? seed : 1;
    p->max_snaps = steps + 1;
    p->max_host = steps + 1;
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_DEVICE, PROG_NW * 4, &p->state));
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_DEVICE, PROG_NW * 4, &p->tmp));
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_HOST, (size_t)p->max_snaps * PROG_NW * 4, &p->snaps));
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_HOST, PROG_NW * 4, &p->result));
    p->expect = calloc((size_t)p->max_snaps * PROG_NW, 4);
    p->calls = calloc((size_t)p->max_host, sizeof *p->calls);
    p->log = calloc((size_t)p->max_host, sizeof *p->log);
    CHECK(p->expect && p->calls && p->log);
    atomic_init(&p->nlog, 0);
    atomic_init(&p->bad_status, 0);
    /* Random, never all-zero initial state, uploaded in stream order. */
    gaio_buffer *init;
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_HOST, PROG_NW * 4, &init));
    uint32_t *h;
    OK(gaio_buffer_host_ptr(init, (void **)&h));
    for (int i = 0; i < PROG_NW; i++) p->model[i] = h[i] = (uint32_t)test_rand(&p->rng) | 1u;
    OK(gaio_memcpy_async(s, p->state, 0, init, 0, PROG_NW * 4));
    OK(gaio_buffer_release(init)); /* the copy keeps it alive */
}

static inline void prog_step(prog *p) {
    unsigned r = (unsigned)(test_rand(&p->rng) % 100);
    if (r < 30) { /* kernel */
        uint32_t mul = (uint32_t)test_rand(&p->rng) | 1u, add = (uint32_t)test_rand(&p->rng);
        launch_affine(p->affine, p->s, p->state, PROG_NW, mul, add);
        for (uint32_t i = 0; i < PROG_NW; i++) p->model[i] = p->model[i] * mul + add + i;
    } else if (r < 45) { /* fill a word range with a non-zero byte */
        size_t a = test_rand(&p->rng) % PROG_NW, len = 1 + test_rand(&p->rng) % (PROG_NW - a);
        int v = 1 + (int)(test_rand(&p->rng) % 255);
        OK(gaio_memset_async(p->s, p->state, a * 4, v, len * 4));
        for (size_t i = a; i < a + len; i++) p->model[i] = (uint32_t)v * 0x01010101u;
    } else if (r < 60) { /* rotate right by k: three copies, each reading the previous one's output */
        size_t k = 1 + test_rand(&p->rng) % (PROG_NW - 1);
        OK(gaio_memcpy_async(p->s, p->tmp, k * 4, p->state, 0, (PROG_NW - k) * 4));
        OK(gaio_memcpy_async(p->s, p->tmp, 0, p->state, (PROG_NW - k) * 4, k * 4));
        OK(gaio_memcpy_async(p->s, p->state, 0, p->tmp, 0, PROG_NW * 4));
        uint32_t old[PROG_NW];
        memcpy(old, p->model, sizeof old);
        for (size_t i = 0; i < PROG_NW; i++) p->model[(i + k) % PROG_NW] = old[i];
    } else if (r < 80) { /* snapshot */
        CHECK(p->nsnaps < p->max_snaps);
        OK(gaio_memcpy_async(p->s, p->snaps, (size_t)p->nsnaps * PROG_NW * 4, p->state, 0, PROG_NW * 4));
        memcpy(p->expect + (size_t)p->nsnaps * PROG_NW, p->model, sizeof p->model);
        p->nsnaps++;
    } else { /* host function */
        CHECK(p->nhost < p->max_host);
        prog_call *c = &p->calls[p->nhost];
        c->p = p;
        c->idx = p->nhost++;
        OK(gaio_launch_host_func(p->s, prog_log_fn, c));
    }
}

/* Queues the copy of the final state into p->result. */
static inline void prog_finish(prog *p) { OK(gaio_memcpy_async(p->s, p->result, 0, p->state, 0, PROG_NW * 4)); }

/* Call once the stream has drained. */
static inline void prog_verify(prog *p, const char *what) {
    uint32_t *res, *snaps;
    OK(gaio_buffer_host_ptr(p->result, (void **)&res));
    OK(gaio_buffer_host_ptr(p->snaps, (void **)&snaps));
    for (int i = 0; i < PROG_NW; i++) {
        if (res[i] != p->model[i]) {
            fprintf(stderr, "%s: final word %d is 0x%08x, expected 0x%08x\n", what, i, res[i], p->model[i]);
            exit(1);
        }
    }
    for (int k = 0; k < p->nsnaps; k++)
        for (int i = 0; i < PROG_NW; i++) {
            uint32_t got = snaps[(size_t)k * PROG_NW + i], want = p->expect[(size_t)k * PROG_NW + i];
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

static inline void prog_free(prog *p) {
    OK(gaio_buffer_release(p->state));
    OK(gaio_buffer_release(p->tmp));
    OK(gaio_buffer_release(p->snaps));
    OK(gaio_buffer_release(p->result));
    free(p->expect);
    free(p->calls);
    free(p->log);
}

/* ---- programs and host functions from several threads at once ---- */

#define PROG_THREADS 4

typedef struct prog_thread_arg {
    prog *p;
    int steps;
} prog_thread_arg;

static inline void *prog_thread(void *arg) {
    prog_thread_arg *a = arg;
    for (int i = 0; i < a->steps; i++) prog_step(a->p);
    prog_finish(a->p);
    return NULL;
}

/* PROG_THREADS threads, each submitting a program of `steps` steps to a stream of its
 * own (thread i's: priority i % levels, `flags`), concurrently; each stream keeps its
 * order. */
static inline void prog_threads_own_streams(gaio_context *ctx, gaio_kernel *affine, uint64_t *seed, int steps,
                                            int levels, unsigned flags, const char *what) {
    gaio_stream *s[PROG_THREADS];
    prog p[PROG_THREADS];
    prog_thread_arg a[PROG_THREADS];
    pthread_t t[PROG_THREADS];
    for (int i = 0; i < PROG_THREADS; i++) {
        OK(gaio_stream_create(ctx, i % levels, flags, &s[i]));
        prog_init(&p[i], ctx, s[i], affine, steps, test_rand(seed));
        a[i] = (prog_thread_arg){&p[i], steps};
    }
    for (int i = 0; i < PROG_THREADS; i++) CHECK(pthread_create(&t[i], NULL, prog_thread, &a[i]) == 0);
    for (int i = 0; i < PROG_THREADS; i++) CHECK(pthread_join(t[i], NULL) == 0);
    OK(gaio_context_synchronize(ctx));
    for (int i = 0; i < PROG_THREADS; i++) {
        OK(gaio_stream_query(s[i]));
        prog_verify(&p[i], what);
        prog_free(&p[i]);
        OK(gaio_stream_release(s[i]));
    }
}

typedef struct shared_log {
    atomic_int n;
    int max;
    int *entries;
} shared_log;

typedef struct shared_call {
    shared_log *log;
    int code; /* thread * per_thread + seq */
} shared_call;

static inline gaio_status shared_fn(gaio_status st, void *user) {
    shared_call *c = user;
    int pos = atomic_fetch_add(&c->log->n, 1);
    if (pos < c->log->max) c->log->entries[pos] = st == GAIO_OK ? c->code : -1;
    return GAIO_OK;
}

typedef struct shared_arg {
    gaio_stream *s;
    shared_call *calls; /* per_thread of this thread */
    int per_thread;
} shared_arg;

static inline void *shared_thread(void *arg) {
    shared_arg *a = arg;
    for (int i = 0; i < a->per_thread; i++) OK(gaio_launch_host_func(a->s, shared_fn, &a->calls[i]));
    return NULL;
}

/* PROG_THREADS threads submit per_thread host functions each to the one stream s at
 * once: each thread's own ops keep their order (per-thread sequence numbers seen by
 * the host functions). */
static inline void shared_stream_order(gaio_stream *s, int per_thread, const char *what) {
    const int total = PROG_THREADS * per_thread;
    shared_log log;
    shared_call *calls = calloc((size_t)total, sizeof *calls);
    log.entries = calloc((size_t)total, sizeof *log.entries);
    CHECK(calls && log.entries);
    log.max = total;
    atomic_init(&log.n, 0);
    shared_arg a[PROG_THREADS];
    pthread_t t[PROG_THREADS];
    for (int i = 0; i < PROG_THREADS; i++) {
        for (int j = 0; j < per_thread; j++) calls[i * per_thread + j] = (shared_call){&log, i * per_thread + j};
        a[i] = (shared_arg){s, &calls[i * per_thread], per_thread};
        CHECK(pthread_create(&t[i], NULL, shared_thread, &a[i]) == 0);
    }
    for (int i = 0; i < PROG_THREADS; i++) CHECK(pthread_join(t[i], NULL) == 0);
    OK(gaio_stream_synchronize(s));
    CHECK(atomic_load(&log.n) == total);
    int next[PROG_THREADS] = {0};
    for (int k = 0; k < total; k++) {
        int code = log.entries[k];
        CHECK(code >= 0);
        int thr = code / per_thread, seq = code % per_thread;
        if (seq != next[thr]) {
            fprintf(stderr, "%s: thread %d's op %d ran where %d was due\n", what, thr, seq, next[thr]);
            exit(1);
        }
        next[thr]++;
    }
    for (int i = 0; i < PROG_THREADS; i++) CHECK(next[i] == per_thread);
    free(log.entries);
    free(calls);
}

#endif
