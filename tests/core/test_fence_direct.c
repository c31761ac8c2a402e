/* Fences that the CUDA backend tracks with no op (src/cuda/cuda_submit.c:
 * gaio__cuda_fence_direct, a ring per stream that the completion engine passes in
 * ticket order with the stream's ops): their futures complete in submission order
 * among every other kind of op and point, never before the work submitted before them
 * has run, and count the launches before them as finished; more fences than the ring
 * holds go the op's way, still in order; several threads fence one stream. The host
 * backend (ops throughout) runs the same checks as the reference. A device fault
 * failing such a fence is test_cuda_fault's. On the fake driver kernels do not run:
 * order and counts are checked, sums are not. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "direct_kernels.h"

static gaio_kernel *k_add, *k_spin;
static bool kernels_run; /* false on the fake driver */

static void add(gaio_stream *s, counter *c, unsigned v) { counter_add(s, k_add, c, v); }

/* What completed, in the order it completed: each point's sequence number, and the
 * counter as its completion found it. */
enum { MAXLOG = 4096 };
typedef struct log_t {
    atomic_int n;
    int seq[MAXLOG];
    unsigned sum_seen[MAXLOG];
    counter *c;
} log_t;

typedef struct point {
    log_t *log;
    int seq;
    unsigned want; /* the counter once the work before the point has run */
    atomic_int status; /* -1 until it completed */
} point;

static void log_point(log_t *l, int seq) {
    int i = atomic_fetch_add(&l->n, 1);
    CHECK(i < MAXLOG);
    l->seq[i] = seq;
    l->sum_seen[i] = atomic_load(l->c->host);
}

static void point_done(gaio_future *f, gaio_status st, void *user) {
    (void)f;
    point *p = user;
    log_point(p->log, p->seq);
    atomic_store(&p->status, (int)st);
}

static gaio_status host_point(gaio_status st, void *user) {
    point *p = user;
    log_point(p->log, p->seq);
    atomic_store(&p->status, (int)st);
    return GAIO_OK;
}

static void then_log(gaio_future *f, point *p) {
    atomic_init(&p->status, -1);
    OK(gaio_future_then(f, point_done, p));
    OK(gaio_future_release(f));
}

/* Every point completed once, in submission order, after the work before it. */
static void check_log(const log_t *l, const point *pts, int npts) {
    CHECK(atomic_load(&l->n) == npts);
    for (int i = 0; i < npts; i++) {
        if (l->seq[i] != i) printf("completion %d was point %d\n", i, l->seq[i]);
        CHECK(l->seq[i] == i);
        CHECK(atomic_load(&pts[i].status) == GAIO_OK);
        if (kernels_run && l->sum_seen[i] < pts[i].want)
            printf("point %d completed with the counter at %u, before the work it follows (%u)\n", i,
                   l->sum_seen[i], pts[i].want);
        if (kernels_run) CHECK(l->sum_seen[i] >= pts[i].want);
    }
}

/* A random program of direct launches among fences, event points, host functions,
 * fills and launches that take an op (a kernel switch): every point is logged as it
 * completes. */
static void test_order(gaio_context *ctx, uint64_t *seed) {
    gaio_stream *s;
    OK(gaio_stream_create(ctx, 0, 0, &s));
    counter c;
    counter_init(ctx, s, &c);
    gaio_buffer *scratch;
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_DEVICE, 4096, &scratch));
    enum { STEPS = 6000, MAXP = 1000 };
    static log_t l;
    static point pts[MAXP];
    atomic_init(&l.n, 0);
    l.c = &c;
    gaio_event *evs[MAXP];
    int nev = 0, np = 0, fences = 0, events = 0, hosts = 0;
    unsigned want = 0;
    unsigned long long spin_ns = 1000;
    gaio_arg spin_args[1] = {GAIO_ARG(spin_ns)};
    for (int i = 0; i < STEPS && np < MAXP; i++) {
        uint64_t r = test_rand(seed) % 1000;
        unsigned v = (unsigned)(test_rand(seed) % 7) + 1;
        if (r < 700) {
            add(s, &c, v);
            want += v;
            continue;
        }
        point *p = &pts[np];
        *p = (point){&l, np, want, 0};
        if (r < 850) {
            gaio_future *f;
            OK(gaio_future_fence(s, &f));
            then_log(f, p);
            fences++;
        } else if (r < 900) {
            gaio_event *ev;
            OK(gaio_event_create(ctx, 0, &ev));
            OK(gaio_event_record(ev, s));
            gaio_future *f;
            OK(gaio_future_from_event(ev, &f));
            then_log(f, p);
            evs[nev++] = ev;
            events++;
        } else if (r < 940) {
            atomic_init(&p->status, -1);
            OK(gaio_launch_host_func(s, host_point, p));
            hosts++;
        } else if (r < 970) {
            OK(gaio_memset_async(s, scratch, 0, (int)(r & 0xff), 4096));
            continue;
        } else {
            /* Another kernel: an op, and the next add is one too (the stream's kernel changed). */
            OK(gaio_launch(s, k_spin, (gaio_dim3){1, 1, 1}, (gaio_dim3){1, 1, 1}, 0, spin_args, 1));
            continue;
        }
        np++;
    }
    OK(gaio_stream_synchronize(s));
    OK(gaio_stream_query(s));
    check_log(&l, pts, np);
    if (kernels_run) CHECK(atomic_load(c.host) == want);
    printf("order: %d points (%d fences, %d event points, %d host functions) among launches, sum %u%s\n", np,
           fences, events, hosts, want, kernels_run ? "" : " (not run: fake driver)");
    for (int i = 0; i < nev; i++) OK(gaio_event_release(evs[i]));
    OK(gaio_buffer_release(scratch));
    OK(gaio_buffer_release(c.buf));
    OK(gaio_stream_release(s));
}

/* Behind 100 ms of work, ten times as many fences as a stream's ring holds: none
 * completes early, all complete, in order. */
static void test_many_in_flight(gaio_context *ctx) {
    gaio_stream *s;
    OK(gaio_stream_create(ctx, 0, 0, &s));
    counter c;
    counter_init(ctx, s, &c);
    add(s, &c, 1);
    OK(gaio_stream_synchronize(s)); /* the stream is watched, its kernel is the adder's */
    enum { N = 320 };
    static log_t l;
    static point pts[N];
    atomic_init(&l.n, 0);
    l.c = &c;
    unsigned long long ns = 100000000ull;
    gaio_arg args[1] = {GAIO_ARG(ns)};
    OK(gaio_launch(s, k_spin, (gaio_dim3){1, 1, 1}, (gaio_dim3){1, 1, 1}, 0, args, 1));
    int64_t t0 = now_ns();
    unsigned want = 1;
    for (int i = 0; i < N; i++) {
        add(s, &c, 1);
        want++;
        pts[i] = (point){&l, i, want, 0};
        gaio_future *f;
        OK(gaio_future_fence(s, &f));
        then_log(f, &pts[i]);
    }
    double submit_ms = (double)(now_ns() - t0) / 1e6;
    if (kernels_run && submit_ms < 50) CHECK(atomic_load(&l.n) == 0); /* the spin still runs */
    OK(gaio_stream_synchronize(s));
    check_log(&l, pts, N);
    if (kernels_run) CHECK(atomic_load(c.host) == want);
    printf("%d fences behind 100 ms of work (submitted in %.1f ms): completed in order\n", N, submit_ms);
    OK(gaio_buffer_release(c.buf));
    OK(gaio_stream_release(s));
}

/* A fence counts the launches before it as finished: once it has completed, the
 * stream has nothing left to run. */
static void test_counts(gaio_context *ctx, uint64_t *seed) {
    gaio_stream *s;
    OK(gaio_stream_create(ctx, 0, 0, &s));
    counter c;
    counter_init(ctx, s, &c);
    unsigned want = 0;
    for (int round = 0; round < 200; round++) {
        int n = (int)(test_rand(seed) % 20);
        for (int i = 0; i < n; i++) add(s, &c, 1);
        want += (unsigned)n;
        gaio_future *f;
        OK(gaio_future_fence(s, &f));
        OK(gaio_future_wait(f, GAIO_INFINITE));
        OK(gaio_future_release(f));
        OK(gaio_stream_query(s));
        if (kernels_run) CHECK(atomic_load(c.host) == want);
    }
    printf("counts: 200 rounds of launches and a fence, the stream idle once each fence completed\n");
    OK(gaio_buffer_release(c.buf));
    OK(gaio_stream_release(s));
}

typedef struct fencer {
    gaio_stream *s;
    counter *c;
    log_t log;
    point pts[300];
    unsigned sum;
    uint64_t seed;
} fencer;

static void *fencer_main(void *arg) {
    fencer *t = arg;
    for (int i = 0; i < 300; i++) {
        int n = (int)(test_rand(&t->seed) % 4);
        for (int j = 0; j < n; j++) add(t->s, t->c, 1);
        t->sum += (unsigned)n;
        t->pts[i] = (point){&t->log, i, 0, 0};
        gaio_future *f;
        OK(gaio_future_fence(t->s, &f));
        then_log(f, &t->pts[i]);
    }
    return NULL;
}

/* Four threads fence one stream: each thread's fences complete in its own order. */
static void test_threads(gaio_context *ctx, uint64_t *seed) {
    gaio_stream *s;
    OK(gaio_stream_create(ctx, 0, 0, &s));
    counter c;
    counter_init(ctx, s, &c);
    enum { T = 4 };
    static fencer t[T];
    pthread_t th[T];
    for (int i = 0; i < T; i++) {
        memset(&t[i], 0, sizeof t[i]);
        t[i].s = s;
        t[i].c = &c;
        t[i].log.c = &c;
        atomic_init(&t[i].log.n, 0);
        t[i].seed = test_rand(seed);
        CHECK(pthread_create(&th[i], NULL, fencer_main, &t[i]) == 0);
    }
    unsigned want = 0;
    for (int i = 0; i < T; i++) {
        CHECK(pthread_join(th[i], NULL) == 0);
        want += t[i].sum;
    }
    OK(gaio_stream_synchronize(s));
    OK(gaio_stream_query(s));
    for (int i = 0; i < T; i++) check_log(&t[i].log, t[i].pts, 300);
    if (kernels_run) CHECK(atomic_load(c.host) == want);
    printf("%d threads, 300 fences each on one stream: each thread's in order, sum %u\n", T, want);
    OK(gaio_buffer_release(c.buf));
    OK(gaio_stream_release(s));
}

static void run(int device) {
    kernels_run = direct_kernels_run(device);
    direct_kernels dk = direct_kernels_register();
    k_add = dk.add1;
    k_spin = dk.spin;
    uint64_t seed = test_seed();
    gaio_context *ctx;
    OK(gaio_context_create(device, NULL, &ctx));
    test_order(ctx, &seed);
    test_many_in_flight(ctx);
    test_counts(ctx, &seed);
    test_threads(ctx, &seed);
    OK(gaio_context_release(ctx));
    direct_kernels_release(&dk);
}
