/* The CPU backend against a plain mutex+condvar work queue (baseline_queue.c).
 *
 * Samples of gaio and of the baseline are taken interleaved, in ROUNDS blocks,
 * and each round restarts gaio (gaio_shutdown) and the baseline pool, so both
 * sides see the same machine and fresh threads.
 *
 * (a) submission: what the caller pays to enqueue one small op, timed over
 *     batches of SUBMIT_BATCH ops, the queue drained (untimed) between batches;
 * (b) latency: submit one empty op and wait for its completion, through a
 *     future, and through the completion queue's fd with epoll_wait;
 * (c) throughput: completions per second, each op an empty kernel plus a fence
 *     whose future lands in a gaio_cq, spread over 1 and 8 streams.
 * Every figure is the median of many samples taken after a warm-up. The floor
 * is what the hardware and OS charge for the same shape of work with no queue
 * at all: an empty indirect call for submission, two threads handing a value
 * through one atomic (spinning) for a round trip. */
#include "bench_cpu.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "baseline_queue.h"
#include "bench_util.h"
#include "gaio/gaio.h"

#define SUBMIT_BATCH 256
#define SUBMIT_SAMPLES 2000 /* batches */
#define LAT_SAMPLES 20000   /* round trips */
#define FLOOR_SAMPLES 5000  /* round trips of the latency floor */
#define TPUT_OPS 256        /* ops per throughput sample */
#define TPUT_SAMPLES 1000
#define TPUT_MAX_STREAMS 8
#define WARMUP(n) ((n) / 10 + 10) /* unrecorded samples before each block */

#define PROG "gaio bench"
#define CK(call) BENCH_CK(PROG, call)
#define ck(st, what) bench_ck(PROG, st, what)
#define ck_errno(err, what) bench_ck_errno(PROG, err, what)

typedef struct bench {
    gaio_context *ctx;
    gaio_stream *inline_s, *deferred_s;
    gaio_stream *tput[TPUT_MAX_STREAMS];
    gaio_kernel *empty;
    gaio_cq *cq;
    int cq_epfd;
    bq *base;
    int evfd, ev_epfd;
    atomic_int task_error; /* errno from a baseline task (they cannot return one) */
    bool no_restart; /* gaio_shutdown failed once: another context is alive */
    bq_future fut;
    bq_future tput_futs[TPUT_OPS];
    int workers;
} bench;

/* ---- the work itself: nothing ---- */

static gaio_status empty_kernel(const gaio_launch_info *info, void *const *args) {
    (void)info;
    (void)args;
    return GAIO_OK;
}

static gaio_status empty_host_fn(gaio_status st, void *user) {
    (void)user;
    return st;
}

static void empty_task(void *arg) { (void)arg; }

/* The baseline's "empty op, then complete its future" in one node (its FIFO has no order to rely on). */
static void task_then_set(void *arg) { bq_future_set(arg); }

static void task_then_eventfd(void *arg) {
    bench *b = arg;
    bench_eventfd_signal(b->evfd, &b->task_error);
}

static void (*volatile floor_call)(void *) = empty_task;

/* ---- running series of samples (bench_run_series) ----
 * Series that are compared run interleaved, in ROUNDS blocks each, every round
 * on a fresh gaio and baseline pool (open_round, close_round). Between blocks
 * the thread sleeps SETTLE_NS: long enough for either pool's idle workers to go
 * to sleep, so neither measurement runs against the other's spinning threads. */

#define ROUNDS 20
#define SETTLE_NS 300000

/* A series of n samples (a multiple of ROUNDS), warmed up before each block. */
#define SERIES(fn, arg, n) {(fn), (arg), (n), WARMUP((n) / ROUNDS), NULL, 0, 0}

/* ---- (a) submission: one sample = ns per op over a batch, then an untimed drain ---- */

/* A gate that holds the workers while the caller submits ("device busy"): a
 * host function on the gaio stream, one task per worker on the baseline. It
 * sleeps on a condition variable, so held workers cost no CPU. */
static struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool closed;
} gate = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false};

static void gate_close(void) {
    pthread_mutex_lock(&gate.lock);
    gate.closed = true;
    pthread_mutex_unlock(&gate.lock);
}

static void gate_open(void) {
    pthread_mutex_lock(&gate.lock);
    gate.closed = false;
    pthread_cond_broadcast(&gate.cond);
    pthread_mutex_unlock(&gate.lock);
}

static void gate_task(void *arg) {
    (void)arg;
    pthread_mutex_lock(&gate.lock);
    while (gate.closed) pthread_cond_wait(&gate.cond, &gate.lock);
    pthread_mutex_unlock(&gate.lock);
}

static gaio_status gate_host_fn(gaio_status st, void *user) {
    gate_task(user);
    return st;
}

typedef struct sub_arg {
    gaio_stream **stream; /* gaio series: the stream (re-created every round) */
    bool busy;            /* hold the workers behind the gate while submitting */
} sub_arg;

static int sub_gaio(bench *b, const sub_arg *a, bool launch, double *v) {
    gaio_stream *stream = *a->stream;
    if (a->busy) {
        gate_close();
        CK(gaio_launch_host_func(stream, gate_host_fn, NULL));
    }
    uint64_t t0 = bench_now_ns();
    for (int i = 0; i < SUBMIT_BATCH; i++) {
        if (launch) {
            if (bench_launch_empty(PROG, stream, b->empty) != 0) return -1;
        } else {
            CK(gaio_launch_host_func(stream, empty_host_fn, NULL));
        }
    }
    uint64_t t1 = bench_now_ns();
    if (a->busy) gate_open();
    CK(gaio_stream_synchronize(stream));
    *v = (double)(t1 - t0) / SUBMIT_BATCH;
    return 0;
}

static int sub_gaio_launch(bench *b, const void *arg, double *v) { return sub_gaio(b, arg, true, v); }
static int sub_gaio_host_fn(bench *b, const void *arg, double *v) { return sub_gaio(b, arg, false, v); }

static int sub_base(bench *b, const void *arg, double *v) {
    const sub_arg *a = arg;
    if (a->busy) {
        gate_close();
        for (int i = 0; i < b->workers; i++)
            if (ck_errno(bq_submit(b->base, gate_task, NULL), "bq_submit") != 0) return -1;
    }
    uint64_t t0 = bench_now_ns();
    for (int i = 0; i < SUBMIT_BATCH; i++)
        if (ck_errno(bq_submit(b->base, empty_task, NULL), "bq_submit") != 0) return -1;
    uint64_t t1 = bench_now_ns();
    if (a->busy) gate_open();
    bq_drain(b->base);
    *v = (double)(t1 - t0) / SUBMIT_BATCH;
    return 0;
}

static int sub_floor(bench *b, const void *arg, double *v) {
    (void)b;
    (void)arg;
    uint64_t t0 = bench_now_ns();
    for (int i = 0; i < SUBMIT_BATCH; i++) floor_call(NULL);
    uint64_t t1 = bench_now_ns();
    *v = (double)(t1 - t0) / SUBMIT_BATCH;
    return 0;
}

/* ---- (b) latency: one sample = one round trip ---- */

static int rt_gaio_wait(bench *b, const void *arg, double *v) {
    (void)arg;
    return bench_rt_future_wait(PROG, b->inline_s, b->empty, GAIO_INFINITE, v);
}

static int rt_base_wait(bench *b, const void *arg, double *v) {
    (void)arg;
    bq_future_reset(&b->fut);
    uint64_t t0 = bench_now_ns();
    if (ck_errno(bq_submit(b->base, task_then_set, &b->fut), "bq_submit") != 0) return -1;
    bq_future_wait(&b->fut);
    *v = (double)(bench_now_ns() - t0);
    return 0;
}

static int rt_gaio_cq(bench *b, const void *arg, double *v) {
    (void)arg;
    return bench_rt_cq(PROG, b->inline_s, b->empty, b->cq, b->cq_epfd, v);
}

static int rt_base_eventfd(bench *b, const void *arg, double *v) {
    (void)arg;
    uint64_t t0 = bench_now_ns();
    if (ck_errno(bq_submit(b->base, task_then_eventfd, b), "bq_submit") != 0) return -1;
    if (bench_epoll_one(PROG, b->ev_epfd, "baseline eventfd") != 0) return -1;
    if (bench_eventfd_read(PROG, b->evfd, "the baseline eventfd") != 0) return -1;
    *v = (double)(bench_now_ns() - t0);
    return ck_errno(atomic_load(&b->task_error), "write to the baseline eventfd");
}

/* The floor: a spinning peer thread echoes a sequence number through two atomics. */
typedef struct pingpong {
    _Alignas(64) atomic_llong ping;
    _Alignas(64) atomic_llong pong;
} pingpong;

/* Both sides spin, but yield now and then: where the two threads share a core,
 * spinning alone would stall a round trip for a whole time slice. */
#define SPINS_BEFORE_YIELD 4096

static void *pong_main(void *arg) {
    pingpong *p = arg;
    long long last = 0;
    for (unsigned spins = 0;;) {
        long long x = atomic_load_explicit(&p->ping, memory_order_acquire);
        if (x == last) {
            if (++spins % SPINS_BEFORE_YIELD == 0) sched_yield();
            else bench_cpu_relax();
            continue;
        }
        if (x < 0) return NULL;
        atomic_store_explicit(&p->pong, x, memory_order_release);
        last = x;
        spins = 0;
    }
}

static int rt_floor(bench *b, void *arg, double *v) {
    (void)b;
    pingpong *p = arg;
    long long x = atomic_load_explicit(&p->ping, memory_order_relaxed) + 1;
    uint64_t t0 = bench_now_ns();
    atomic_store_explicit(&p->ping, x, memory_order_release);
    for (unsigned spins = 0; atomic_load_explicit(&p->pong, memory_order_acquire) != x;) {
        if (++spins % SPINS_BEFORE_YIELD == 0) sched_yield();
        else bench_cpu_relax();
    }
    *v = (double)(bench_now_ns() - t0);
    return 0;
}

/* Not interleaved, and run while no gaio or baseline thread exists. The two
 * threads are pinned to two different cores (when the process may use two):
 * the floor is a cross-core hand-off, not a time slice. */
static int measure_floor_latency(bench *b, double *out) {
    static pingpong p;
    atomic_store(&p.ping, 0);
    atomic_store(&p.pong, 0);
    int rc = -1;
    double *v = malloc(FLOOR_SAMPLES * sizeof *v);
    if (!v) {
        fprintf(stderr, PROG ": out of memory\n");
        return -1;
    }
    cpu_set_t orig, mine, peer;
    int c0 = -1, c1 = -1;
    if (sched_getaffinity(0, sizeof orig, &orig) == 0) {
        for (int i = 0; i < CPU_SETSIZE && c1 < 0; i++)
            if (CPU_ISSET(i, &orig)) {
                if (c0 < 0) c0 = i;
                else c1 = i;
            }
    }
    pthread_attr_t attr;
    if (ck_errno(pthread_attr_init(&attr), "pthread_attr_init") != 0) goto out;
    bool pinned = false;
    if (c1 >= 0) {
        CPU_ZERO(&mine);
        CPU_SET(c0, &mine);
        CPU_ZERO(&peer);
        CPU_SET(c1, &peer);
        if (ck_errno(pthread_attr_setaffinity_np(&attr, sizeof peer, &peer), "pthread_attr_setaffinity_np") != 0 ||
            ck_errno(pthread_setaffinity_np(pthread_self(), sizeof mine, &mine), "pthread_setaffinity_np") != 0) {
            pthread_attr_destroy(&attr);
            goto out;
        }
        pinned = true;
    }
    pthread_t t;
    int e = pthread_create(&t, &attr, pong_main, &p);
    pthread_attr_destroy(&attr);
    if (ck_errno(e, "pthread_create") == 0) {
        double scratch;
        for (int i = 0; i < WARMUP(FLOOR_SAMPLES); i++) (void)rt_floor(b, &p, &scratch);
        for (int i = 0; i < FLOOR_SAMPLES; i++) (void)rt_floor(b, &p, &v[i]);
        atomic_store_explicit(&p.ping, -1, memory_order_release);
        pthread_join(t, NULL);
        *out = bench_median(v, FLOOR_SAMPLES);
        rc = 0;
    }
    if (pinned && ck_errno(pthread_setaffinity_np(pthread_self(), sizeof orig, &orig), "pthread_setaffinity_np") != 0)
        rc = -1;
out:
    free(v);
    return rc;
}

/* ---- (c) throughput: one sample = TPUT_OPS completions, in ops per second ---- */

static int tput_gaio(bench *b, const void *arg, double *v) {
    const int nstreams = *(const int *)arg;
    uint64_t t0 = bench_now_ns();
    for (int i = 0; i < TPUT_OPS; i++) {
        gaio_stream *st = b->tput[i % nstreams];
        gaio_future *f;
        if (bench_launch_empty(PROG, st, b->empty) != 0) return -1;
        CK(gaio_future_fence(st, &f));
        gaio_status rc = gaio_cq_add(b->cq, f, NULL);
        gaio_future_release(f);
        CK(rc);
    }
    for (int got = 0; got < TPUT_OPS;) {
        gaio_cq_entry e[64];
        size_t n;
        CK(gaio_cq_wait(b->cq, e, 64, &n, GAIO_INFINITE));
        for (size_t i = 0; i < n; i++) CK(e[i].status);
        got += (int)n;
    }
    *v = (double)TPUT_OPS * 1e9 / (double)(bench_now_ns() - t0);
    return 0;
}

static int tput_base(bench *b, const void *arg, double *v) {
    (void)arg;
    for (int i = 0; i < TPUT_OPS; i++) bq_future_reset(&b->tput_futs[i]);
    uint64_t t0 = bench_now_ns();
    for (int i = 0; i < TPUT_OPS; i++)
        if (ck_errno(bq_submit(b->base, task_then_set, &b->tput_futs[i]), "bq_submit") != 0) return -1;
    for (int i = 0; i < TPUT_OPS; i++) bq_future_wait(&b->tput_futs[i]);
    *v = (double)TPUT_OPS * 1e9 / (double)(bench_now_ns() - t0);
    return 0;
}

/* ---- the table ---- */

typedef enum unit { NS, PER_S } unit;

typedef struct row {
    const char *metric;
    unit u;
    double gaio, base, floor; /* < 0: not measured */
    const char *floor_what;
} row;

static void fmt(char *buf, size_t size, double v, unit u) {
    if (v < 0) snprintf(buf, size, "-");
    else if (u == PER_S) snprintf(buf, size, "%.0f k/s", v / 1e3);
    else if (v >= 10000) snprintf(buf, size, "%.1f us", v / 1e3);
    else if (v >= 100) snprintf(buf, size, "%.0f ns", v);
    else snprintf(buf, size, "%.1f ns", v);
}

static void print_table(FILE *out, const row *rows, size_t n) {
    static const int widths[] = {9, 9, 5}; /* gaio, baseline, ratio; then floor */
    const bench_table t = {out, 52, widths, 3, 35};
    bench_table_row(&t, "metric (median)", (const char *const[]){"gaio", "baseline", "ratio"}, "floor");
    bench_table_sep(&t);
    for (size_t i = 0; i < n; i++) {
        const row *r = &rows[i];
        char g[32], bb[32], f[32], ratio[16], last[96];
        fmt(g, sizeof g, r->gaio, r->u);
        fmt(bb, sizeof bb, r->base, r->u);
        fmt(f, sizeof f, r->floor, r->u);
        if (r->gaio > 0 && r->base > 0) snprintf(ratio, sizeof ratio, "%.2f", r->gaio / r->base);
        else snprintf(ratio, sizeof ratio, "-");
        snprintf(last, sizeof last, "%s%s%s%s", f, r->floor_what ? " (" : "", r->floor_what ? r->floor_what : "",
                 r->floor_what ? ")" : "");
        bench_table_row(&t, r->metric, (const char *const[]){g, bb, ratio}, last);
    }
}

/* ---- per-round state ----
 * Every round starts gaio and the baseline pool afresh (gaio_shutdown, then a new
 * context), so each round samples a new placement of the worker threads on the
 * cores: on a small or shared machine one placement can favour either side for
 * a whole run. */

static int open_round(bench *b) {
    CK(gaio_context_create(0, NULL, &b->ctx));
    CK(gaio_stream_create(b->ctx, 0, 0, &b->inline_s));
    CK(gaio_stream_create(b->ctx, 0, GAIO_STREAM_DEFERRED, &b->deferred_s));
    for (int i = 0; i < TPUT_MAX_STREAMS; i++) CK(gaio_stream_create(b->ctx, 0, 0, &b->tput[i]));
    if (bench_cq_open(PROG, &b->cq, &b->cq_epfd) != 0) return -1;
    return ck_errno(bq_create(b->workers, &b->base), "bq_create");
}

/* Releases the round's objects and stops gaio's threads. */
static int close_round(bench *b) {
    bq_destroy(b->base);
    b->base = NULL;
    if (b->cq_epfd >= 0) close(b->cq_epfd);
    b->cq_epfd = -1;
    int rc = 0;
    if (b->ctx && ck(gaio_context_synchronize(b->ctx), "gaio_context_synchronize") != 0) rc = -1;
    gaio_cq_release(b->cq);
    for (int i = 0; i < TPUT_MAX_STREAMS; i++) gaio_stream_release(b->tput[i]);
    gaio_stream_release(b->deferred_s);
    gaio_stream_release(b->inline_s);
    gaio_context_release(b->ctx);
    b->cq = NULL;
    memset(b->tput, 0, sizeof b->tput);
    b->deferred_s = b->inline_s = NULL;
    b->ctx = NULL;
    if (b->no_restart) return rc;
    /* Workers drop their last references to the context a moment after the final
     * future completes, so shutdown may need a few tries. */
    gaio_status st = GAIO_OK;
    for (int i = 0; i < 2000; i++) {
        st = gaio_shutdown();
        if (st != GAIO_ERR_STATE) break;
        struct timespec ts = {0, 500000};
        nanosleep(&ts, NULL);
    }
    if (st != GAIO_OK) {
        fprintf(stderr, PROG ": gaio_shutdown failed (%s: %s); keeping the same worker threads for every "
                        "round\n", gaio_status_string(st), gaio_last_error());
        b->no_restart = true;
    }
    return rc;
}

int gaio_bench_cpu_run(FILE *out) {
    static bench b; /* holds TPUT_OPS futures: keep it off the stack */
    memset(&b, 0, sizeof b);
    b.cq_epfd = b.ev_epfd = b.evfd = -1;
    atomic_init(&b.task_error, 0);
    bq_future_init(&b.fut);
    for (int i = 0; i < TPUT_OPS; i++) bq_future_init(&b.tput_futs[i]);
    uint64_t start = bench_now_ns();
    int rc = 1;
    gaio_device_props props;
    if (ck(gaio_device_get_props(0, &props), "gaio_device_get_props") != 0) goto done;
    b.workers = props.processor_count;
    if (gaio_kernel_find("bench_empty", &b.empty) != GAIO_OK &&
        ck(gaio_kernel_register("bench_empty", empty_kernel, 0, NULL, &b.empty), "gaio_kernel_register") != 0)
        goto done;
    struct epoll_event ev = {.events = EPOLLIN};
    b.ev_epfd = epoll_create1(EPOLL_CLOEXEC);
    b.evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (b.ev_epfd < 0 || b.evfd < 0 || epoll_ctl(b.ev_epfd, EPOLL_CTL_ADD, b.evfd, &ev) != 0) {
        fprintf(stderr, PROG ": eventfd/epoll failed: %s\n", strerror(errno));
        goto done;
    }

    static const int one_stream = 1, all_streams = TPUT_MAX_STREAMS;
    sub_arg busy_inline = {&b.inline_s, true}, busy_deferred = {&b.deferred_s, true}, busy_base = {NULL, true};
    sub_arg idle_inline = {&b.inline_s, false}, idle_deferred = {&b.deferred_s, false}, idle_base = {NULL, false};
    bench_series sub[] = {
        SERIES(sub_gaio_launch, &busy_inline, SUBMIT_SAMPLES),
        SERIES(sub_gaio_host_fn, &busy_inline, SUBMIT_SAMPLES),
        SERIES(sub_gaio_launch, &busy_deferred, SUBMIT_SAMPLES),
        SERIES(sub_gaio_host_fn, &busy_deferred, SUBMIT_SAMPLES),
        SERIES(sub_base, &busy_base, SUBMIT_SAMPLES),
        SERIES(sub_gaio_launch, &idle_inline, SUBMIT_SAMPLES),
        SERIES(sub_gaio_launch, &idle_deferred, SUBMIT_SAMPLES),
        SERIES(sub_base, &idle_base, SUBMIT_SAMPLES),
        SERIES(sub_floor, NULL, SUBMIT_SAMPLES),
    };
    bench_series lat[] = {
        SERIES(rt_gaio_wait, NULL, LAT_SAMPLES),
        SERIES(rt_base_wait, NULL, LAT_SAMPLES),
        SERIES(rt_gaio_cq, NULL, LAT_SAMPLES),
        SERIES(rt_base_eventfd, NULL, LAT_SAMPLES),
    };
    bench_series tput[] = {
        SERIES(tput_gaio, &one_stream, TPUT_SAMPLES),
        SERIES(tput_gaio, &all_streams, TPUT_SAMPLES),
        SERIES(tput_base, NULL, TPUT_SAMPLES),
    };
    const bench_rounds rounds = {ROUNDS, open_round, close_round, SETTLE_NS};
    double lat_floor;
    if (bench_run_series(PROG, &b, sub, sizeof sub / sizeof sub[0], &rounds) != 0 ||
        bench_run_series(PROG, &b, lat, sizeof lat / sizeof lat[0], &rounds) != 0 ||
        measure_floor_latency(&b, &lat_floor) != 0 ||
        bench_run_series(PROG, &b, tput, sizeof tput / sizeof tput[0], &rounds) != 0)
        goto done;
    double sub_launch = sub[0].med, sub_host = sub[1].med, sub_def_launch = sub[2].med, sub_def_host = sub[3].med,
           sub_base_v = sub[4].med, sub_idle_launch = sub[5].med, sub_idle_def = sub[6].med,
           sub_idle_base = sub[7].med, sub_floor_v = sub[8].med;
    double lat_wait = lat[0].med, lat_base = lat[1].med, lat_cq = lat[2].med, lat_base_ev = lat[3].med;
    double tput1 = tput[0].med, tput8 = tput[1].med, tput_b = tput[2].med;

    const row rows[] = {
        {"submit, device busy: gaio_launch, empty kernel", NS, sub_launch, sub_base_v, sub_floor_v,
         "indirect call"},
        {"submit, device busy: gaio_launch_host_func", NS, sub_host, sub_base_v, sub_floor_v, "indirect call"},
        {"submit, device busy: gaio_launch, DEFERRED", NS, sub_def_launch, sub_base_v, sub_floor_v,
         "indirect call"},
        {"submit, device busy: gaio_launch_host_func, DEFERRED", NS, sub_def_host, sub_base_v, sub_floor_v,
         "indirect call"},
        {"submit, workers drain alongside: gaio_launch", NS, sub_idle_launch, sub_idle_base, sub_floor_v,
         "indirect call"},
        {"submit, workers drain alongside: launch, DEFERRED", NS, sub_idle_def, sub_idle_base, sub_floor_v,
         "indirect call"},
        {"", NS, 0, 0, 0, NULL},
        {"latency: launch+fence, future_wait", NS, lat_wait, lat_base, lat_floor, "atomic ping-pong, 2 cores"},
        {"latency: launch+fence, cq fd epoll_wait+pop", NS, lat_cq, lat_base_ev, lat_floor,
         "atomic ping-pong, 2 cores"},
        {"", NS, 0, 0, 0, NULL},
        {"throughput, 1 stream (completions/s, higher=better)", PER_S, tput1, tput_b, -1, NULL},
        {"throughput, 8 streams (completions/s, higher=better)", PER_S, tput8, tput_b, -1, NULL},
    };
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    fprintf(out, "gaio %d.%d.%d CPU backend: %d worker threads, %ld online cores; baseline: mutex+condvar FIFO, %d "
                 "workers\n",
            GAIO_VERSION_MAJOR, GAIO_VERSION_MINOR, GAIO_VERSION_PATCH, b.workers, cores, b.workers);
    fprintf(out, "samples: submit %d batches of %d ops, latency %d round trips, throughput %d x %d ops; "
                 "warm-up first\n\n",
            SUBMIT_SAMPLES, SUBMIT_BATCH, LAT_SAMPLES, TPUT_SAMPLES, TPUT_OPS);
    print_table(out, rows, sizeof rows / sizeof rows[0]);
    fprintf(out,
            "\nratio = gaio / baseline: below 1 gaio is faster on ns rows, above 1 it is faster on /s rows.\n"
            "submit: ns per op over batches of %d. device busy: the workers are held behind a gate (a host\n"
            "  function on the gaio stream, one task per baseline worker) while the caller submits, so it pays\n"
            "  only its own cost. workers drain alongside: idle workers wake and drain while it submits\n"
            "  (cross-core contention; these rows swing with thread placement on small VMs).\n"
            "baseline: submit = bq_submit of an empty fn; latency = one node that completes a mutex+condvar\n"
            "  future, or writes an eventfd watched by epoll; throughput = %d nodes each completing its own\n"
            "  future (one FIFO, no streams: the same figure for both rows).\n"
            "floor: indirect call = an empty call through a function pointer; ping-pong = two threads pinned\n"
            "  to two cores handing a counter through atomics, spinning.\n",
            SUBMIT_BATCH, TPUT_OPS);
    fprintf(out, "total run time %.1f s\n", (double)(bench_now_ns() - start) / 1e9);
    rc = 0;
done:
    if (b.ev_epfd >= 0) close(b.ev_epfd);
    if (b.evfd >= 0) close(b.evfd);
    bq_future_destroy(&b.fut);
    for (int i = 0; i < TPUT_OPS; i++) bq_future_destroy(&b.tput_futs[i]);
    gaio_kernel_release(b.empty);
    return rc;
}
