/* What the CPU and CUDA benchmarks share (bench_util.h). */
#include "bench_util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

/* ---- checks ---- */

int bench_fail(const char *prog, gaio_status st, const char *what) {
    fprintf(stderr, "%s: %s failed: %s: %s\n", prog, what, gaio_status_string(st), gaio_last_error());
    return -1;
}

int bench_fail_errno(const char *prog, int err, const char *what) {
    fprintf(stderr, "%s: %s failed: %s\n", prog, what, strerror(err));
    return -1;
}

int bench_find_cuda_device(const char *prog, FILE *out, const char *title, gaio_device_props *props) {
    int count = 0;
    if (bench_ck(prog, gaio_device_count(&count), "gaio_device_count") != 0) return -2;
    for (int d = 0; d < count; d++) {
        if (bench_ck(prog, gaio_device_get_props(d, props), "gaio_device_get_props") != 0) return -2;
        if (props->kind == GAIO_DEVICE_CUDA) return d;
    }
    const char *why = "";
    gaio_status st = gaio_backend_status(GAIO_DEVICE_CUDA, &why);
    fprintf(out, "%s: no CUDA device: skipped (%s%s%s)\n", title, st == GAIO_OK ? "" : gaio_status_string(st),
            st == GAIO_OK ? "" : ": ", why ? why : "");
    return -1;
}

/* ---- statistics ---- */

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bench_median(double *v, size_t n) {
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double bench_p99(const double *v, size_t n) {
    size_t k = (99 * n + 99) / 100; /* ceil(0.99 n) */
    return v[k ? k - 1 : 0];
}

/* ---- series of samples ---- */

static void settle(long ns) {
    struct timespec ts = {0, ns};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

int bench_run_series(const char *prog, struct bench *b, bench_series *s, size_t count, const bench_rounds *how) {
    const int rounds = how->rounds;
    int rc = -1;
    for (size_t i = 0; i < count; i++) s[i].v = NULL;
    for (size_t i = 0; i < count; i++) {
        s[i].v = malloc((size_t)s[i].n * sizeof *s[i].v);
        if (!s[i].v) {
            fprintf(stderr, "%s: out of memory\n", prog);
            goto out;
        }
    }
    for (int r = 0; r < rounds; r++) {
        if (how->open && how->open(b) != 0) goto out_open;
        for (size_t i = 0; i < count; i++) {
            int per = s[i].n / rounds;
            double scratch;
            for (int w = 0; w < s[i].warm; w++)
                if (s[i].fn(b, s[i].arg, &scratch) != 0) goto out_open;
            for (int k = 0; k < per; k++)
                if (s[i].fn(b, s[i].arg, &s[i].v[r * per + k]) != 0) goto out_open;
            if (how->settle_ns > 0) settle(how->settle_ns);
        }
        if (how->close && how->close(b) != 0) goto out;
    }
    for (size_t i = 0; i < count; i++) {
        size_t n = (size_t)(s[i].n / rounds * rounds);
        s[i].med = bench_median(s[i].v, n);
        s[i].p99 = bench_p99(s[i].v, n);
    }
    rc = 0;
    goto out;
out_open:
    if (how->close) how->close(b);
out:
    for (size_t i = 0; i < count; i++) {
        free(s[i].v);
        s[i].v = NULL;
    }
    return rc;
}

/* ---- gaio round trips ---- */

int bench_rt_future_wait(const char *prog, gaio_stream *s, gaio_kernel *k, int64_t timeout_ns, double *v) {
    gaio_future *f;
    uint64_t t0 = bench_now_ns();
    if (bench_launch_empty(prog, s, k) != 0) return -1;
    BENCH_CK(prog, gaio_future_fence(s, &f));
    gaio_status st = gaio_future_wait(f, timeout_ns);
    uint64_t t1 = bench_now_ns();
    gaio_future_release(f);
    BENCH_CK(prog, st);
    *v = (double)(t1 - t0);
    return 0;
}

int bench_rt_cq(const char *prog, gaio_stream *s, gaio_kernel *k, gaio_cq *cq, int epfd, double *v) {
    gaio_future *f;
    uint64_t t0 = bench_now_ns();
    if (bench_launch_empty(prog, s, k) != 0) return -1;
    BENCH_CK(prog, gaio_future_fence(s, &f));
    gaio_status st = gaio_cq_add(cq, f, s);
    gaio_future_release(f);
    BENCH_CK(prog, st);
    if (bench_epoll_one(prog, epfd, "gaio cq fd") != 0) return -1;
    gaio_cq_entry e;
    size_t n;
    BENCH_CK(prog, gaio_cq_pop(cq, &e, 1, &n));
    *v = (double)(bench_now_ns() - t0);
    if (n != 1 || e.user_data != s || e.status != GAIO_OK) {
        fprintf(stderr, "%s: the cq fd was readable but pop gave %zu entries (status %s)\n", prog, n,
                n ? gaio_status_string(e.status) : "-");
        return -1;
    }
    return 0;
}

/* ---- epoll, eventfd ---- */

int bench_cq_open(const char *prog, gaio_cq **cq, int *epfd) {
    BENCH_CK(prog, gaio_cq_create(cq));
    int fd;
    BENCH_CK(prog, gaio_cq_fd(*cq, &fd));
    struct epoll_event ev = {.events = EPOLLIN};
    *epfd = epoll_create1(EPOLL_CLOEXEC);
    if (*epfd < 0 || epoll_ctl(*epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
        fprintf(stderr, "%s: epoll on the cq fd failed: %s\n", prog, strerror(errno));
        return -1;
    }
    return 0;
}

int bench_epoll_one(const char *prog, int epfd, const char *what) {
    struct epoll_event ev;
    for (;;) {
        int n = epoll_wait(epfd, &ev, 1, (int)(BENCH_TIMEOUT_NS / 1000000u));
        if (n == 1) return 0;
        if (n == 0) {
            fprintf(stderr, "%s: %s: no completion within %llu s\n", prog, what,
                    (unsigned long long)(BENCH_TIMEOUT_NS / 1000000000u));
            return -1;
        }
        if (errno != EINTR) {
            fprintf(stderr, "%s: epoll_wait (%s) failed: %s\n", prog, what, strerror(errno));
            return -1;
        }
    }
}

void bench_eventfd_signal(int fd, atomic_int *error) {
    uint64_t one = 1;
    ssize_t w;
    while ((w = write(fd, &one, sizeof one)) < 0 && errno == EINTR) {
    }
    if (w != (ssize_t)sizeof one) atomic_store(error, w < 0 ? errno : EIO);
}

int bench_eventfd_read(const char *prog, int fd, const char *what) {
    uint64_t x;
    if (read(fd, &x, sizeof x) != (ssize_t)sizeof x) {
        fprintf(stderr, "%s: read of %s failed: %s\n", prog, what, strerror(errno));
        return -1;
    }
    return 0;
}

/* ---- the table ---- */

static void dashes(FILE *out, int n) {
    for (int i = 0; i < n; i++) fputc('-', out);
}

void bench_table_sep(const bench_table *t) {
    dashes(t->out, t->metric_width + 1);
    for (size_t i = 0; i < t->ncols; i++) {
        fputc('+', t->out);
        dashes(t->out, t->widths[i] + 2);
    }
    fputc('+', t->out);
    dashes(t->out, t->last_dashes);
    fputc('\n', t->out);
}

void bench_table_row(const bench_table *t, const char *metric, const char *const *cells, const char *last) {
    if (!metric[0]) {
        bench_table_sep(t);
        return;
    }
    fprintf(t->out, "%-*s", t->metric_width, metric);
    for (size_t i = 0; i < t->ncols; i++) fprintf(t->out, " | %*s", t->widths[i], cells[i]);
    fprintf(t->out, " | %s\n", last);
}
