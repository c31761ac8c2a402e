/* What the CPU and CUDA benchmarks share: the clock, checks that report to
 * stderr under the benchmark's prefix ("gaio bench", "gaio bench cuda"),
 * statistics, series of samples taken interleaved in rounds, the gaio round
 * trips both measure, epoll and eventfd helpers, and the text table.
 *
 * What runs inside timed regions (the clock, the checks' success path, an empty
 * launch) is static inline here, so the figures do not pay for calls into
 * another file; the rest lives in bench_util.c. */
#ifndef GAIO_BENCH_UTIL_H
#define GAIO_BENCH_UTIL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "gaio/gaio.h"

/* No single wait in the benchmarks may take longer. */
#define BENCH_TIMEOUT_NS 10000000000ull

/* ---- time, spinning ---- */

static inline uint64_t bench_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline void bench_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* ---- checks: 0, or -1 after "<prog>: <what> failed: <reason>" on stderr ---- */

int bench_fail(const char *prog, gaio_status st, const char *what);
int bench_fail_errno(const char *prog, int err, const char *what);

static inline int bench_ck(const char *prog, gaio_status st, const char *what) {
    return st == GAIO_OK ? 0 : bench_fail(prog, st, what);
}

/* err: 0 or an errno value. */
static inline int bench_ck_errno(const char *prog, int err, const char *what) {
    return err == 0 ? 0 : bench_fail_errno(prog, err, what);
}

/* Returns -1 from the calling function when `call` does not return GAIO_OK. */
#define BENCH_CK(prog, call)                                 \
    do {                                                     \
        if (bench_ck((prog), (call), #call) != 0) return -1; \
    } while (0)

/* ---- statistics ---- */

/* The median of v[0..n), n > 0; sorts v ascending. */
/* The first CUDA device (its props in *props): its index, -1 when there is none
 * (after printing "<title>: no CUDA device: skipped (<why>)" on out), or -2 after a
 * failed call (on stderr). */
int bench_find_cuda_device(const char *prog, FILE *out, const char *title, gaio_device_props *props);

double bench_median(double *v, size_t n);
/* The 99th percentile (nearest rank) of v[0..n) sorted ascending, n > 0. */
double bench_p99(const double *v, size_t n);

/* ---- series of samples ----
 * Each series is one figure. Series that are compared run interleaved, in
 * `rounds` blocks each, so drift in the machine (frequency, neighbours on a
 * shared host) hits every side alike.
 *
 * Each benchmark defines its own struct bench; the runner only hands the pointer
 * to the sample functions and the round hooks. */

struct bench;

/* One sample into *value; 0, or -1 after reporting the failure. */
typedef int (*bench_sample_fn)(struct bench *b, const void *arg, double *value);

typedef struct bench_series {
    bench_sample_fn fn;
    const void *arg;
    int n;    /* samples kept: a multiple of the rounds */
    int warm; /* unrecorded samples before each block */
    double *v;
    double med, p99; /* the results */
} bench_series;

typedef struct bench_rounds {
    int rounds;
    /* Called around each round when set. When open fails, close still runs. */
    int (*open)(struct bench *b);
    int (*close)(struct bench *b);
    long settle_ns; /* > 0: sleep this long after each block */
} bench_rounds;

/* Takes every series' samples and sets med and p99. 0, or -1 after reporting. */
int bench_run_series(const char *prog, struct bench *b, bench_series *s, size_t count, const bench_rounds *how);

/* ---- gaio round trips ---- */

/* One launch of an empty kernel on one block of one thread. */
static inline int bench_launch_empty(const char *prog, gaio_stream *s, gaio_kernel *k) {
    static const gaio_dim3 one = {1, 1, 1};
    BENCH_CK(prog, gaio_launch(s, k, one, one, 0, NULL, 0));
    return 0;
}

/* Launch k, fence, gaio_future_wait (with timeout_ns): the time into *v. */
int bench_rt_future_wait(const char *prog, gaio_stream *s, gaio_kernel *k, int64_t timeout_ns, double *v);

/* Launch k, fence, add the future to cq, epoll_wait on epfd (watching cq's fd),
 * pop the entry: the time into *v. */
int bench_rt_cq(const char *prog, gaio_stream *s, gaio_kernel *k, gaio_cq *cq, int epfd, double *v);

/* ---- epoll, eventfd ---- */

/* A new completion queue and an epoll fd watching its fd. On failure *epfd may
 * be open (or -1) and *cq set: the caller releases both. */
int bench_cq_open(const char *prog, gaio_cq **cq, int *epfd);

/* Waits up to BENCH_TIMEOUT_NS for one event on epfd. */
int bench_epoll_one(const char *prog, int epfd, const char *what);

/* Adds 1 to eventfd fd; a failure's errno goes to *error (for callbacks that
 * cannot return one). */
void bench_eventfd_signal(int fd, atomic_int *error);

/* Reads the counter of eventfd fd, which must be readable. */
int bench_eventfd_read(const char *prog, int fd, const char *what);

/* ---- the table ----
 * A left-aligned metric column, right-aligned value columns, and a free last
 * column, separated by " | "; separator lines of dashes and "+" under them. */

typedef struct bench_table {
    FILE *out;
    int metric_width;
    const int *widths; /* the value columns */
    size_t ncols;
    int last_dashes; /* length of the separator under the last column */
} bench_table;

void bench_table_sep(const bench_table *t);

/* One row: cells[0..ncols) are the value columns. An empty metric prints a
 * separator instead. */
void bench_table_row(const bench_table *t, const char *metric, const char *const *cells, const char *last);

#endif
