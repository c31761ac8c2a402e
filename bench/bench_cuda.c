/* The CUDA backend against raw CUDA driver calls, on the first CUDA device.
 *
 * Both sides run the same code: two kernels written in PTX below (bench_empty,
 * and bench_spin, which spins for a given number of nanoseconds), loaded once
 * through gaio_library_load_data and once through a raw cuLibraryLoadData. The
 * raw side opens libcuda.so.1 itself (dlopen, then cuGetProcAddress at the CUDA
 * 12.0 ABI, as gaio does), links neither libcuda nor libcudart, and works on the
 * primary context of the same device, which it keeps current on the calling
 * thread: gaio uses that context too.
 *
 * (1) launch: what the caller pays per gaio_launch of the empty kernel, against
 *     cuLaunchKernel, over batches of LAUNCH_BATCH on one stream, synchronized
 *     (untimed) between batches;
 * (2) round trip: one empty kernel launch until the host knows it finished,
 *     through gaio_future_wait, a gaio_cq fd under epoll, and a gaio_future_poll
 *     spin, in each wait policy; peers: cuStreamSynchronize, and cuLaunchHostFunc
 *     writing an eventfd that poll() watches; floor: cuStreamWriteValue64 of a
 *     counter into pinned, device-mapped host memory with the host spinning on it;
 *     fd floor (for the cq fd): the same counter seen by a spinning thread that
 *     writes an eventfd, which the measuring thread waits for in epoll_wait;
 * (3) throughput: TPUT_OPS launch+fence futures in flight on 1 and on 8 streams,
 *     each counted by a then-callback, against raw launch+cuLaunchHostFunc and
 *     raw launch+cuStreamWriteValue64 (the floor), all three in the same rounds, in
 *     each wait policy's phase;
 * (4) head-of-line blocking: while stream B runs a 50 ms kernel, the round trip
 *     of an empty kernel on stream A, against a single runtime thread that learns
 *     of completions by calling cuStreamSynchronize on each stream in submission
 *     order (the async-cuda model);
 * (5) pool: gaio_buffer_alloc_async + gaio_buffer_release of 1 MiB of DEVICE
 *     memory in steady state, against cuMemAlloc/cuMemFree and
 *     cuMemAllocAsync/cuMemFreeAsync.
 * Figures are medians (and p99 for round trips) of many samples taken after a
 * warm-up; series that are compared run interleaved, in rounds. Each wait policy
 * runs on a restarted gaio (gaio_shutdown, gaio_configure, new context). */
#include "bench_cuda.h"

#ifndef GAIO_BENCH_HAVE_CUDA

int gaio_bench_cuda_run(FILE *out) {
    fprintf(out, "gaio CUDA benchmark: this build has no CUDA backend\n");
    return 0;
}

#else /* GAIO_BENCH_HAVE_CUDA */

#include <cuda.h>
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "bench_cu.h"
#include "bench_util.h"
#include "gaio/gaio.h"

#define NSTREAMS 8
#define SLOT_STRIDE 64 /* bytes between the floor's counters: one cache line each */

#define LAUNCH_BATCH 1000
#define LAUNCH_SAMPLES 100 /* batches */
#define LAUNCH_ROUNDS 10
#define LAT_SAMPLES 5000 /* round trips, per series and policy */
#define LAT_ROUNDS 10
#define TPUT_OPS 1000 /* futures in flight per sample */
#define TPUT_SAMPLES 30
#define TPUT_ROUNDS 5
#define HOL_SAMPLES 10
#define HOL_ROUNDS 2
#define SPIN_KERNEL_NS 50000000ull /* stream B's kernel: 50 ms */
#define ALLOC_BYTES ((size_t)1 << 20)
#define ALLOC_BATCH 1000      /* pairs per sample: gaio, cuMemAllocAsync */
#define ALLOC_SYNC_BATCH 20   /* pairs per sample: cuMemAlloc + cuMemFree */
#define ALLOC_SAMPLES 100
#define ALLOC_SYNC_SAMPLES 40
#define ALLOC_ROUNDS 10
#define TIMEOUT_NS BENCH_TIMEOUT_NS /* no single wait in this benchmark may take longer */

/* The targets the table checks (ok / MISSED); they do not change the exit status. */
#define TARGET_LAUNCH_RATIO 1.05
#define TARGET_SPIN_FLOOR_RATIO 1.1
#define TARGET_HYBRID_NS 30000.0
#define TARGET_TPUT_FLOOR_RATIO 0.95
#define TARGET_CQ_FLOOR_RATIO 1.3
#define TARGET_HOL_NS 1000000.0
#define TARGET_ALLOC_NS 500.0

/* The device code of both sides. bench_spin ends when %globaltimer (ns) has moved
 * `ns` past its start; %clock64 bounds it at 4 cycles per ns should the timer
 * stand still. */
static const char bench_ptx[] =
    ".version 8.0\n"
    ".target sm_75\n"
    ".address_size 64\n"
    "\n"
    ".visible .entry bench_empty()\n"
    "{\n"
    "\tret;\n"
    "}\n"
    "\n"
    ".visible .entry bench_spin(.param .u64 bench_spin_ns)\n"
    "{\n"
    "\t.reg .pred %p<3>;\n"
    "\t.reg .b64 %rd<9>;\n"
    "\tld.param.u64 %rd1, [bench_spin_ns];\n"
    "\tshl.b64 %rd2, %rd1, 2;\n"
    "\tmov.u64 %rd3, %globaltimer;\n"
    "\tmov.u64 %rd4, %clock64;\n"
    "SPIN:\n"
    "\tmov.u64 %rd5, %globaltimer;\n"
    "\tsub.s64 %rd6, %rd5, %rd3;\n"
    "\tsetp.ge.u64 %p1, %rd6, %rd1;\n"
    "\t@%p1 bra DONE;\n"
    "\tmov.u64 %rd7, %clock64;\n"
    "\tsub.s64 %rd8, %rd7, %rd4;\n"
    "\tsetp.lt.u64 %p2, %rd8, %rd2;\n"
    "\t@%p2 bra SPIN;\n"
    "DONE:\n"
    "\tret;\n"
    "}\n";

#define PROG "gaio bench cuda"
#define CK(call) BENCH_CK(PROG, call)
#define ck(st, what) bench_ck(PROG, st, what)

/* ---- the driver, opened at run time ---- */

#define CU(call)                                                          \
    do {                                                                  \
        CUresult r_ = (call);                                             \
        if (r_ != CUDA_SUCCESS) return bench_cu_fail(PROG, r_, #call);    \
    } while (0)

/* ---- spinning ---- */

/* Spinning that yields now and then (where the spinner shares a core with the
 * thread it waits for) and gives up after TIMEOUT_NS. Returns false on timeout. */
typedef struct spinner {
    unsigned n;
    uint64_t start;
} spinner;

static bool spin_once(spinner *s) {
    if (++s->n % 4096 == 0) {
        uint64_t t = bench_now_ns();
        if (!s->start) s->start = t;
        else if (t - s->start > TIMEOUT_NS) return false;
        sched_yield();
    } else {
        bench_cpu_relax();
    }
    return true;
}

static int spin_slot(const volatile uint64_t *slot, uint64_t want, const char *what) {
    spinner sp = {0, 0};
    while (__atomic_load_n(slot, __ATOMIC_ACQUIRE) < want)
        if (!spin_once(&sp)) {
            fprintf(stderr, PROG ": %s: no completion within %llu s\n", what,
                    (unsigned long long)(TIMEOUT_NS / 1000000000u));
            return -1;
        }
    return 0;
}

static int spin_count(atomic_ulong *count, unsigned long want, const char *what) {
    spinner sp = {0, 0};
    while (atomic_load_explicit(count, memory_order_acquire) < want)
        if (!spin_once(&sp)) {
            fprintf(stderr, PROG ": %s: %lu of %lu completions within %llu s\n", what,
                    atomic_load(count), want, (unsigned long long)(TIMEOUT_NS / 1000000000u));
            return -1;
        }
    return 0;
}

/* ---- state ---- */

/* The floor of a completion told through a file descriptor: a thread spinning on
 * the floor's counter (as gaio's completion thread does under SPIN) writes an
 * eventfd when it reaches `want`; the measuring thread sleeps in epoll_wait on it
 * and reads it. No completion queue can tell an event loop sooner: what it adds
 * to the spin floor is a thread's hand-off and a kernel wake-up. */
typedef struct fd_relay {
    pthread_t thread;
    bool started;
    atomic_bool stop;
    _Atomic uint64_t want; /* the counter value to signal at; 0: none */
    const volatile uint64_t *slot;
    int evfd, epfd;
    atomic_int error; /* errno of a failed write */
} fd_relay;

/* The async-cuda model's runtime thread: takes (stream, flag) jobs in submission
 * order, synchronizes the stream, sets the flag. */
#define RT_QUEUE 16
typedef struct rt_job {
    CUstream stream;
    atomic_ulong *done;
} rt_job;

typedef struct rt_thread {
    pthread_t thread;
    bool started;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    rt_job q[RT_QUEUE];
    unsigned head, tail;
    bool stop;
    atomic_int error; /* a CUresult */
} rt_thread;

typedef struct bench {
    int gdev; /* gaio's number of the GPU */
    gaio_device_props props;
    /* raw CUDA */
    CUdevice dev;
    CUcontext primary, saved_ctx;
    bool retained;
    CUlibrary rlib;
    CUkernel r_empty, r_spin;
    CUstream rs[NSTREAMS];
    void *slot_mem; /* NSTREAMS counters, SLOT_STRIDE apart: pinned, device-mapped */
    CUdeviceptr slot_dev;
    uint64_t tickets[NSTREAMS];
    int evfd;
    atomic_int host_error; /* errno from a host function (they cannot return one) */
    atomic_ulong host_count;
    rt_thread rt;
    atomic_ulong rt_done[2]; /* the runtime thread saw stream A (0), B (1) finish */
    fd_relay relay;
    /* gaio */
    gaio_library *glib;
    gaio_kernel *g_empty, *g_spin;
    gaio_context *ctx;
    gaio_stream *gs[NSTREAMS];
    gaio_cq *cq;
    int cq_epfd;
    atomic_ulong cb_count;
    atomic_int cb_error; /* a gaio_status from a then-callback */
    uint64_t spin_ns;
    int hol_gaio_late, hol_floor_late; /* samples in which B finished before A was known done */
    int hol_gaio_n, hol_floor_n;       /* samples taken, warm-ups included */
} bench;

static volatile uint64_t *slot(bench *b, int i) {
    return (volatile uint64_t *)((char *)b->slot_mem + (size_t)i * SLOT_STRIDE);
}

static CUdeviceptr slot_dev(bench *b, int i) { return b->slot_dev + (CUdeviceptr)i * SLOT_STRIDE; }

static const gaio_dim3 ONE = {1, 1, 1};

static int launch_g_empty(bench *b, gaio_stream *s) { return bench_launch_empty(PROG, s, b->g_empty); }

static CUresult launch_r_empty(bench *b, CUstream s) {
    return bench_cu.cuLaunchKernel((CUfunction)b->r_empty, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL);
}

static CUresult launch_r_spin(bench *b, CUstream s) {
    void *params[] = {&b->spin_ns};
    return bench_cu.cuLaunchKernel((CUfunction)b->r_spin, 1, 1, 1, 1, 1, 1, 0, s, params, NULL);
}

/* Raw calls run on the primary context. gaio restores the calling thread's context
 * after each call, but sets none when it releases the device's last user (its last
 * context), so the raw side sets it again after those points. */
static int raw_current(bench *b) {
    CU(bench_cu.cuCtxSetCurrent(b->primary));
    return 0;
}

/* ---- series of samples (bench_run_series): no per-round setup, no settling ---- */

static int run_series(bench *b, bench_series *s, size_t count, int rounds) {
    const bench_rounds how = {rounds, NULL, NULL, 0};
    return bench_run_series(PROG, b, s, count, &how);
}

/* ---- (1) launch: one sample = ns per call over a batch, then an untimed sync ---- */

static int launch_gaio(bench *b, const void *arg, double *v) {
    (void)arg;
    gaio_stream *s = b->gs[0];
    uint64_t t0 = bench_now_ns();
    for (int i = 0; i < LAUNCH_BATCH; i++)
        if (launch_g_empty(b, s) != 0) return -1;
    uint64_t t1 = bench_now_ns();
    CK(gaio_stream_synchronize(s));
    *v = (double)(t1 - t0) / LAUNCH_BATCH;
    return 0;
}

static int launch_raw(bench *b, const void *arg, double *v) {
    (void)arg;
    CUstream s = b->rs[0];
    uint64_t t0 = bench_now_ns();
    for (int i = 0; i < LAUNCH_BATCH; i++) CU(launch_r_empty(b, s));
    uint64_t t1 = bench_now_ns();
    CU(bench_cu.cuStreamSynchronize(s));
    *v = (double)(t1 - t0) / LAUNCH_BATCH;
    return 0;
}

/* The driver calls gaio makes per launch: the kernel and the ticket write behind it. */
static int launch_raw_ticket(bench *b, const void *arg, double *v) {
    (void)arg;
    CUstream s = b->rs[0];
    uint64_t t0 = bench_now_ns();
    for (int i = 0; i < LAUNCH_BATCH; i++) {
        CU(launch_r_empty(b, s));
        CU(bench_cu.cuStreamWriteValue64(s, slot_dev(b, 0), ++b->tickets[0], CU_STREAM_WRITE_VALUE_DEFAULT));
    }
    uint64_t t1 = bench_now_ns();
    CU(bench_cu.cuStreamSynchronize(s));
    *v = (double)(t1 - t0) / LAUNCH_BATCH;
    return 0;
}

/* ---- (2) round trip: one sample = one empty kernel until the host knows ---- */

static int rt_gaio_wait(bench *b, const void *arg, double *v) {
    (void)arg;
    return bench_rt_future_wait(PROG, b->gs[0], b->g_empty, (int64_t)TIMEOUT_NS, v);
}

static int rt_gaio_cq(bench *b, const void *arg, double *v) {
    (void)arg;
    return bench_rt_cq(PROG, b->gs[0], b->g_empty, b->cq, b->cq_epfd, v);
}

static int rt_gaio_poll(bench *b, const void *arg, double *v) {
    (void)arg;
    gaio_future *f;
    uint64_t t0 = bench_now_ns();
    if (launch_g_empty(b, b->gs[0]) != 0) return -1;
    CK(gaio_future_fence(b->gs[0], &f));
    gaio_status st;
    spinner sp = {0, 0};
    while ((st = gaio_future_poll(f)) == GAIO_ERR_NOT_READY)
        if (!spin_once(&sp)) break;
    uint64_t t1 = bench_now_ns();
    gaio_future_release(f);
    CK(st);
    *v = (double)(t1 - t0);
    return 0;
}

static int rt_raw_sync(bench *b, const void *arg, double *v) {
    (void)arg;
    uint64_t t0 = bench_now_ns();
    CU(launch_r_empty(b, b->rs[0]));
    CU(bench_cu.cuStreamSynchronize(b->rs[0]));
    *v = (double)(bench_now_ns() - t0);
    return 0;
}

static void CUDA_CB host_signal_eventfd(void *user) {
    bench *b = user;
    bench_eventfd_signal(b->evfd, &b->host_error);
}

static int rt_raw_hostfn(bench *b, const void *arg, double *v) {
    (void)arg;
    uint64_t t0 = bench_now_ns();
    CU(launch_r_empty(b, b->rs[0]));
    CU(bench_cu.cuLaunchHostFunc(b->rs[0], host_signal_eventfd, b));
    struct pollfd p = {.fd = b->evfd, .events = POLLIN};
    for (;;) {
        int n = poll(&p, 1, (int)(TIMEOUT_NS / 1000000u));
        if (n == 1) break;
        if (n == 0 || errno != EINTR) {
            fprintf(stderr, PROG ": poll on the host function's eventfd failed: %s\n",
                    n == 0 ? "no completion within the time limit" : strerror(errno));
            return -1;
        }
    }
    if (bench_eventfd_read(PROG, b->evfd, "the eventfd") != 0) return -1;
    *v = (double)(bench_now_ns() - t0);
    return bench_ck_errno(PROG, atomic_load(&b->host_error), "the host function's write to the eventfd");
}

static void *relay_main(void *arg) {
    fd_relay *r = arg;
    uint64_t seen = 0;
    while (!atomic_load_explicit(&r->stop, memory_order_relaxed)) {
        uint64_t want = atomic_load_explicit(&r->want, memory_order_acquire);
        if (want > seen && __atomic_load_n(r->slot, __ATOMIC_ACQUIRE) >= want) {
            seen = want;
            bench_eventfd_signal(r->evfd, &r->error);
        } else {
            bench_cpu_relax();
        }
    }
    return NULL;
}

static int relay_open(bench *b) {
    fd_relay *r = &b->relay;
    r->slot = slot(b, 0);
    atomic_store(&r->stop, false); /* opened once per policy */
    atomic_store(&r->want, 0);
    r->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    r->epfd = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN};
    if (r->evfd < 0 || r->epfd < 0 || epoll_ctl(r->epfd, EPOLL_CTL_ADD, r->evfd, &ev) != 0) {
        fprintf(stderr, PROG ": the fd floor's eventfd and epoll: %s\n", strerror(errno));
        return -1;
    }
    int e = pthread_create(&r->thread, NULL, relay_main, r);
    if (e != 0) {
        fprintf(stderr, PROG ": pthread_create of the fd floor's thread: %s\n", strerror(e));
        return -1;
    }
    r->started = true;
    return 0;
}

static void relay_close(bench *b) {
    fd_relay *r = &b->relay;
    if (r->started) {
        atomic_store(&r->stop, true);
        pthread_join(r->thread, NULL);
        r->started = false;
    }
    if (r->evfd >= 0) close(r->evfd);
    if (r->epfd >= 0) close(r->epfd);
    r->evfd = r->epfd = -1;
}

static int rt_floor_fd(bench *b, const void *arg, double *v) {
    (void)arg;
    uint64_t t0 = bench_now_ns();
    CU(launch_r_empty(b, b->rs[0]));
    uint64_t want = ++b->tickets[0];
    CU(bench_cu.cuStreamWriteValue64(b->rs[0], slot_dev(b, 0), want, CU_STREAM_WRITE_VALUE_DEFAULT));
    atomic_store_explicit(&b->relay.want, want, memory_order_release);
    if (bench_epoll_one(PROG, b->relay.epfd, "the fd floor's eventfd") != 0) return -1;
    if (bench_eventfd_read(PROG, b->relay.evfd, "the fd floor's eventfd") != 0) return -1;
    *v = (double)(bench_now_ns() - t0);
    return bench_ck_errno(PROG, atomic_load(&b->relay.error), "the fd floor's eventfd write");
}

static int rt_floor(bench *b, const void *arg, double *v) {
    (void)arg;
    uint64_t t0 = bench_now_ns();
    CU(launch_r_empty(b, b->rs[0]));
    uint64_t want = ++b->tickets[0];
    CU(bench_cu.cuStreamWriteValue64(b->rs[0], slot_dev(b, 0), want, CU_STREAM_WRITE_VALUE_DEFAULT));
    if (spin_slot(slot(b, 0), want, "the floor's counter") != 0) return -1;
    *v = (double)(bench_now_ns() - t0);
    return 0;
}

/* ---- (3) throughput: one sample = TPUT_OPS completions, per second ---- */

static void count_then(gaio_future *f, gaio_status st, void *user) {
    (void)f;
    bench *b = user;
    if (st != GAIO_OK) atomic_store(&b->cb_error, (int)st);
    atomic_fetch_add_explicit(&b->cb_count, 1, memory_order_release);
}

static int tput_gaio(bench *b, const void *arg, double *v) {
    const int ns = *(const int *)arg;
    atomic_store(&b->cb_count, 0);
    uint64_t t0 = bench_now_ns();
    for (int i = 0; i < TPUT_OPS; i++) {
        gaio_stream *s = b->gs[i % ns];
        gaio_future *f;
        if (launch_g_empty(b, s) != 0) return -1;
        CK(gaio_future_fence(s, &f));
        gaio_status st = gaio_future_then(f, count_then, b);
        gaio_future_release(f);
        CK(st);
    }
    if (spin_count(&b->cb_count, TPUT_OPS, "gaio then-callbacks") != 0) return -1;
    *v = (double)TPUT_OPS * 1e9 / (double)(bench_now_ns() - t0);
    int e = atomic_load(&b->cb_error);
    if (e) {
        fprintf(stderr, PROG ": a throughput future failed: %s\n", gaio_status_string((gaio_status)e));
        return -1;
    }
    return 0;
}

static void CUDA_CB host_count(void *user) {
    bench *b = user;
    atomic_fetch_add_explicit(&b->host_count, 1, memory_order_release);
}

static int tput_raw_hostfn(bench *b, const void *arg, double *v) {
    const int ns = *(const int *)arg;
    atomic_store(&b->host_count, 0);
    uint64_t t0 = bench_now_ns();
    for (int i = 0; i < TPUT_OPS; i++) {
        CUstream s = b->rs[i % ns];
        CU(launch_r_empty(b, s));
        CU(bench_cu.cuLaunchHostFunc(s, host_count, b));
    }
    if (spin_count(&b->host_count, TPUT_OPS, "raw host functions") != 0) return -1;
    *v = (double)TPUT_OPS * 1e9 / (double)(bench_now_ns() - t0);
    return 0;
}

static int tput_floor(bench *b, const void *arg, double *v) {
    const int ns = *(const int *)arg;
    uint64_t t0 = bench_now_ns();
    for (int i = 0; i < TPUT_OPS; i++) {
        int k = i % ns;
        CU(launch_r_empty(b, b->rs[k]));
        uint64_t want = ++b->tickets[k];
        CU(bench_cu.cuStreamWriteValue64(b->rs[k], slot_dev(b, k), want, CU_STREAM_WRITE_VALUE_DEFAULT));
    }
    for (int k = 0; k < ns; k++)
        if (spin_slot(slot(b, k), b->tickets[k], "the floor's counters") != 0) return -1;
    *v = (double)TPUT_OPS * 1e9 / (double)(bench_now_ns() - t0);
    return 0;
}

/* ---- (4) head-of-line blocking: stream B (index 1) runs the spin kernel while an
 * empty kernel on stream A (index 0) makes its round trip ---- */

static int hol_gaio(bench *b, const void *arg, double *v) {
    (void)arg;
    gaio_arg a = GAIO_ARG(b->spin_ns);
    gaio_future *fb, *fa;
    CK(gaio_launch(b->gs[1], b->g_spin, ONE, ONE, 0, &a, 1));
    CK(gaio_future_fence(b->gs[1], &fb));
    uint64_t t0 = bench_now_ns();
    gaio_status st = launch_g_empty(b, b->gs[0]) == 0 ? gaio_future_fence(b->gs[0], &fa) : GAIO_ERR_STATE;
    if (st != GAIO_OK) {
        gaio_future_release(fb);
        return ck(st, "gaio_future_fence (stream A)");
    }
    st = gaio_future_wait(fa, (int64_t)TIMEOUT_NS);
    uint64_t t1 = bench_now_ns();
    gaio_status b_state = gaio_future_poll(fb);
    gaio_future_release(fa);
    gaio_status stb = gaio_future_wait(fb, (int64_t)TIMEOUT_NS);
    gaio_future_release(fb);
    CK(st);
    CK(stb);
    b->hol_gaio_n++;
    if (b_state != GAIO_ERR_NOT_READY) b->hol_gaio_late++;
    *v = (double)(t1 - t0);
    return 0;
}

static void *rt_main(void *arg) {
    bench *b = arg;
    rt_thread *t = &b->rt;
    CUresult r = bench_cu.cuCtxSetCurrent(b->primary);
    if (r != CUDA_SUCCESS) atomic_store(&t->error, (int)r);
    for (;;) {
        pthread_mutex_lock(&t->lock);
        while (t->head == t->tail && !t->stop) pthread_cond_wait(&t->cond, &t->lock);
        if (t->head == t->tail) {
            pthread_mutex_unlock(&t->lock);
            return NULL;
        }
        rt_job j = t->q[t->head++ % RT_QUEUE];
        pthread_mutex_unlock(&t->lock);
        r = bench_cu.cuStreamSynchronize(j.stream);
        if (r != CUDA_SUCCESS) atomic_store(&t->error, (int)r);
        atomic_store_explicit(j.done, 1, memory_order_release);
    }
}

static int rt_start(bench *b) {
    rt_thread *t = &b->rt;
    t->head = t->tail = 0;
    t->stop = false;
    atomic_store(&t->error, CUDA_SUCCESS);
    if (bench_ck_errno(PROG, pthread_create(&t->thread, NULL, rt_main, b), "pthread_create") != 0) return -1;
    t->started = true;
    return 0;
}

static void rt_stop(bench *b) {
    rt_thread *t = &b->rt;
    if (!t->started) return;
    pthread_mutex_lock(&t->lock);
    t->stop = true;
    pthread_cond_signal(&t->cond);
    pthread_mutex_unlock(&t->lock);
    pthread_join(t->thread, NULL);
    t->started = false;
}

static int rt_post(bench *b, CUstream s, atomic_ulong *done) {
    rt_thread *t = &b->rt;
    pthread_mutex_lock(&t->lock);
    if (t->tail - t->head >= RT_QUEUE) {
        pthread_mutex_unlock(&t->lock);
        fprintf(stderr, PROG ": the runtime thread's queue is full\n");
        return -1;
    }
    t->q[t->tail++ % RT_QUEUE] = (rt_job){s, done};
    pthread_cond_signal(&t->cond);
    pthread_mutex_unlock(&t->lock);
    return 0;
}

static int rt_error(bench *b) {
    int r = atomic_load(&b->rt.error);
    return r == CUDA_SUCCESS ? 0 : bench_cu_fail(PROG, (CUresult)r, "cuStreamSynchronize (runtime thread)");
}

static int hol_runtime_thread(bench *b, const void *arg, double *v) {
    (void)arg;
    atomic_store(&b->rt_done[0], 0);
    atomic_store(&b->rt_done[1], 0);
    CU(launch_r_spin(b, b->rs[1]));
    if (rt_post(b, b->rs[1], &b->rt_done[1]) != 0) return -1;
    uint64_t t0 = bench_now_ns();
    CU(launch_r_empty(b, b->rs[0]));
    if (rt_post(b, b->rs[0], &b->rt_done[0]) != 0) return -1;
    if (spin_count(&b->rt_done[0], 1, "the runtime thread (stream A)") != 0) return -1;
    uint64_t t1 = bench_now_ns();
    if (spin_count(&b->rt_done[1], 1, "the runtime thread (stream B)") != 0) return -1;
    if (rt_error(b) != 0) return -1;
    *v = (double)(t1 - t0);
    return 0;
}

static int hol_floor(bench *b, const void *arg, double *v) {
    (void)arg;
    CU(launch_r_spin(b, b->rs[1]));
    uint64_t t0 = bench_now_ns();
    CU(launch_r_empty(b, b->rs[0]));
    uint64_t want = ++b->tickets[0];
    CU(bench_cu.cuStreamWriteValue64(b->rs[0], slot_dev(b, 0), want, CU_STREAM_WRITE_VALUE_DEFAULT));
    if (spin_slot(slot(b, 0), want, "the floor's counter") != 0) return -1;
    uint64_t t1 = bench_now_ns();
    b->hol_floor_n++;
    CUresult q = bench_cu.cuStreamQuery(b->rs[1]);
    if (q != CUDA_ERROR_NOT_READY) {
        CU(q);
        b->hol_floor_late++;
    }
    CU(bench_cu.cuStreamSynchronize(b->rs[1]));
    *v = (double)(t1 - t0);
    return 0;
}

/* The spin kernel's real length: launch + cuStreamSynchronize, median of 3 after a warm-up. */
static int measure_spin(bench *b, double *ns) {
    double v[3];
    for (int i = -1; i < 3; i++) {
        uint64_t t0 = bench_now_ns();
        CU(launch_r_spin(b, b->rs[1]));
        CU(bench_cu.cuStreamSynchronize(b->rs[1]));
        if (i >= 0) v[i] = (double)(bench_now_ns() - t0);
    }
    *ns = bench_median(v, 3);
    return 0;
}

/* ---- (5) pool: one sample = ns per alloc+free pair over a batch ---- */

static int alloc_gaio(bench *b, const void *arg, double *v) {
    (void)arg;
    uint64_t t0 = bench_now_ns();
    for (int i = 0; i < ALLOC_BATCH; i++) {
        gaio_buffer *buf;
        CK(gaio_buffer_alloc_async(b->gs[0], GAIO_MEM_DEVICE, ALLOC_BYTES, &buf));
        CK(gaio_buffer_release(buf));
    }
    *v = (double)(bench_now_ns() - t0) / ALLOC_BATCH;
    return 0;
}

static int alloc_raw_async(bench *b, const void *arg, double *v) {
    (void)arg;
    CUstream s = b->rs[0];
    uint64_t t0 = bench_now_ns();
    for (int i = 0; i < ALLOC_BATCH; i++) {
        CUdeviceptr p;
        CU(bench_cu.cuMemAllocAsync(&p, ALLOC_BYTES, s));
        CU(bench_cu.cuMemFreeAsync(p, s));
    }
    uint64_t t1 = bench_now_ns();
    CU(bench_cu.cuStreamSynchronize(s));
    *v = (double)(t1 - t0) / ALLOC_BATCH;
    return 0;
}

static int alloc_raw_sync(bench *b, const void *arg, double *v) {
    (void)arg;
    (void)b;
    uint64_t t0 = bench_now_ns();
    for (int i = 0; i < ALLOC_SYNC_BATCH; i++) {
        CUdeviceptr p;
        CU(bench_cu.cuMemAlloc(&p, ALLOC_BYTES));
        CU(bench_cu.cuMemFree(p));
    }
    *v = (double)(bench_now_ns() - t0) / ALLOC_SYNC_BATCH;
    return 0;
}

/* ---- setup and teardown ---- */

static int raw_open(bench *b) {
    if (bench_cu_load(PROG) != 0) return -1;
    CU(bench_cu.cuInit(0));
    CU(bench_cu.cuCtxGetCurrent(&b->saved_ctx));
    CU(bench_cu.cuDeviceGet(&b->dev, b->props.ordinal));
    CU(bench_cu.cuDevicePrimaryCtxRetain(&b->primary, b->dev));
    b->retained = true;
    if (raw_current(b) != 0) return -1;
    CU(bench_cu.cuLibraryLoadData(&b->rlib, bench_ptx, NULL, NULL, 0, NULL, NULL, 0));
    CU(bench_cu.cuLibraryGetKernel(&b->r_empty, b->rlib, "bench_empty"));
    CU(bench_cu.cuLibraryGetKernel(&b->r_spin, b->rlib, "bench_spin"));
    for (int i = 0; i < NSTREAMS; i++) CU(bench_cu.cuStreamCreate(&b->rs[i], CU_STREAM_NON_BLOCKING));
    CU(bench_cu.cuMemHostAlloc(&b->slot_mem, NSTREAMS * SLOT_STRIDE, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP));
    memset(b->slot_mem, 0, NSTREAMS * SLOT_STRIDE);
    CU(bench_cu.cuMemHostGetDevicePointer(&b->slot_dev, b->slot_mem, 0));
    b->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (b->evfd < 0) {
        fprintf(stderr, PROG ": eventfd failed: %s\n", strerror(errno));
        return -1;
    }
    return 0;
}

static void raw_close(bench *b) {
    rt_stop(b);
    if (b->evfd >= 0) close(b->evfd);
    b->evfd = -1;
    if (!b->retained) return;
    if (bench_cu.cuCtxSetCurrent(b->primary) == CUDA_SUCCESS) {
        for (int i = 0; i < NSTREAMS; i++)
            if (b->rs[i]) {
                bench_cu.cuStreamSynchronize(b->rs[i]);
                bench_cu.cuStreamDestroy(b->rs[i]);
                b->rs[i] = NULL;
            }
        if (b->slot_mem) bench_cu.cuMemFreeHost(b->slot_mem);
        b->slot_mem = NULL;
    }
    if (b->rlib) bench_cu.cuLibraryUnload(b->rlib);
    b->rlib = NULL;
    bench_cu.cuCtxSetCurrent(b->saved_ctx);
    bench_cu.cuDevicePrimaryCtxRelease(b->dev);
    b->retained = false;
}

static const char *const kernel_names[] = {"bench_empty", "bench_spin"};

/* Leaves the names free: a kernel bound to one library cannot be bound to another,
 * and each run loads its own. (The CPU benchmark registers a host bench_empty and
 * registers it again when it finds none.) */
static void unregister_kernels(void) {
    for (size_t i = 0; i < sizeof kernel_names / sizeof kernel_names[0]; i++)
        (void)gaio_kernel_unregister(kernel_names[i]);
}

static int gaio_open_library(bench *b) {
    unregister_kernels();
    CK(gaio_library_load_data(bench_ptx, &b->glib));
    CK(gaio_library_get_kernel(b->glib, "bench_empty", &b->g_empty));
    CK(gaio_library_get_kernel(b->glib, "bench_spin", &b->g_spin));
    return 0;
}

static void gaio_close_library(bench *b) {
    if (!b->glib && !b->g_empty && !b->g_spin) return;
    gaio_kernel_release(b->g_empty);
    gaio_kernel_release(b->g_spin);
    b->g_empty = b->g_spin = NULL;
    unregister_kernels();
    gaio_library_release(b->glib);
    b->glib = NULL;
}

/* Stops gaio (no context may be alive) and configures it for the next policy. */
static int gaio_restart(const gaio_config *config) {
    gaio_status st = GAIO_OK;
    for (int i = 0; i < 5; i++) { /* each try waits up to 1 s for work in flight to let go */
        st = gaio_shutdown();
        if (st != GAIO_ERR_STATE) break;
    }
    CK(st);
    CK(gaio_configure(config));
    return 0;
}

static int phase_open(bench *b) {
    CK(gaio_context_create(b->gdev, NULL, &b->ctx));
    for (int i = 0; i < NSTREAMS; i++) CK(gaio_stream_create(b->ctx, 0, 0, &b->gs[i]));
    if (bench_cq_open(PROG, &b->cq, &b->cq_epfd) != 0) return -1;
    return raw_current(b);
}

static int phase_close(bench *b) {
    int rc = 0;
    if (b->cq_epfd >= 0) close(b->cq_epfd);
    b->cq_epfd = -1;
    if (b->ctx && ck(gaio_context_synchronize(b->ctx), "gaio_context_synchronize") != 0) rc = -1;
    gaio_cq_release(b->cq);
    b->cq = NULL;
    for (int i = 0; i < NSTREAMS; i++) {
        gaio_stream_release(b->gs[i]);
        b->gs[i] = NULL;
    }
    gaio_context_release(b->ctx);
    b->ctx = NULL;
    if (b->retained && raw_current(b) != 0) rc = -1;
    return rc;
}

/* ---- results and the table ---- */

enum { P_SPIN, P_HYBRID, P_BLOCK, NPOLICIES };
static const gaio_wait_policy policy_of[NPOLICIES] = {GAIO_WAIT_SPIN, GAIO_WAIT_HYBRID, GAIO_WAIT_BLOCK};
static const char *const policy_name[NPOLICIES] = {"SPIN", "HYBRID", "BLOCK"};

typedef struct policy_results {
    bench_series wait, cq, poll, sync, hostfn, floor, floor_fd; /* round trips: med, p99 */
    double tput[2];                                   /* gaio, 1 and NSTREAMS streams */
    double tput_hostfn[2], tput_floor[2];             /* measured beside it, in the same rounds */
    double hol;
} policy_results;

typedef struct results {
    policy_results p[NPOLICIES];
    double launch_g, launch_r, launch_rt;
    double hol_runtime, hol_floor;
    double alloc_g, alloc_sync, alloc_async;
    double spin_ns_measured;
} results;

typedef enum unit { NS, PER_S } unit;

typedef struct row {
    char metric[80]; /* "": a separator */
    unit u;
    double gaio, peer, floor; /* < 0: not measured */
    char target[24];
    int verdict; /* -1: no target, 0: missed, 1: met */
} row;

#define MAX_ROWS 64
typedef struct table {
    row r[MAX_ROWS];
    size_t n;
} table;

__attribute__((format(printf, 6, 7))) static row *add_row(table *t, unit u, double g, double p, double f,
                                                           const char *fmt, ...) {
    static row overflow;
    row *r = t->n < MAX_ROWS ? &t->r[t->n++] : &overflow;
    memset(r, 0, sizeof *r);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->metric, sizeof r->metric, fmt, ap);
    va_end(ap);
    r->u = u;
    r->gaio = g;
    r->peer = p;
    r->floor = f;
    r->verdict = -1;
    return r;
}

static void add_sep(table *t) { add_row(t, NS, -1, -1, -1, "%s", ""); }

static void set_target(row *r, const char *text, bool met) {
    snprintf(r->target, sizeof r->target, "%s", text);
    r->verdict = met ? 1 : 0;
}

static void fmt_value(char *buf, size_t size, double v, unit u) {
    if (v < 0) snprintf(buf, size, "-");
    else if (u == PER_S) snprintf(buf, size, "%.0f k/s", v / 1e3);
    else if (v < 1000) snprintf(buf, size, "%.0f ns", v);
    else if (v < 100000) snprintf(buf, size, "%.2f us", v / 1e3);
    else if (v < 10000000) snprintf(buf, size, "%.1f us", v / 1e3);
    else snprintf(buf, size, "%.1f ms", v / 1e6);
}

static void fmt_ratio(char *buf, size_t size, double a, double b) {
    if (a > 0 && b > 0) snprintf(buf, size, a / b < 0.01 ? "<0.01" : "%.2f", a / b);
    else snprintf(buf, size, "-");
}

static void print_table(FILE *out, const table *t) {
    static const int widths[] = {9, 9, 9, 6, 7}; /* gaio, peer, floor, g/peer, g/floor; then target */
    const bench_table bt = {out, 59, widths, 5, 24};
    bench_table_row(&bt, "metric (median unless p99)",
                    (const char *const[]){"gaio", "peer", "floor", "g/peer", "g/floor"}, "target");
    bench_table_sep(&bt);
    for (size_t i = 0; i < t->n; i++) {
        const row *r = &t->r[i];
        char g[32], p[32], f[32], rp[16], rf[16], last[48];
        fmt_value(g, sizeof g, r->gaio, r->u);
        fmt_value(p, sizeof p, r->peer, r->u);
        fmt_value(f, sizeof f, r->floor, r->u);
        fmt_ratio(rp, sizeof rp, r->gaio, r->peer);
        fmt_ratio(rf, sizeof rf, r->gaio, r->floor);
        snprintf(last, sizeof last, "%s%s", r->target, r->verdict < 0 ? "" : r->verdict ? ": ok" : ": MISSED");
        bench_table_row(&bt, r->metric, (const char *const[]){g, p, f, rp, rf}, last);
    }
}

static void build_table(const results *res, table *t) {
    row *r;
    r = add_row(t, NS, res->launch_g, res->launch_r, -1, "launch: empty kernel, per call vs cuLaunchKernel");
    set_target(r, "<= 1.05x peer", res->launch_g <= TARGET_LAUNCH_RATIO * res->launch_r);
    add_row(t, NS, res->launch_g, res->launch_rt, -1, "launch: per call vs cuLaunchKernel+cuStreamWriteValue64");

    static const char *const rt_what[3] = {"fence+future_wait", "fence+cq fd epoll_wait+pop", "fence+future_poll spin"};
    for (int p = 0; p < NPOLICIES; p++) {
        const policy_results *pr = &res->p[p];
        const bench_series *g[3] = {&pr->wait, &pr->cq, &pr->poll};
        const bench_series *peer[3] = {&pr->sync, &pr->hostfn, &pr->sync};
        add_sep(t);
        for (int k = 0; k < 3; k++) {
            r = add_row(t, NS, g[k]->med, peer[k]->med, pr->floor.med, "round trip %s: %s", policy_name[p],
                        rt_what[k]);
            if (p == P_SPIN && k != 1)
                set_target(r, "<= 1.1x floor", g[k]->med <= TARGET_SPIN_FLOOR_RATIO * pr->floor.med);
            if (p == P_SPIN && k == 1)
                set_target(r, "<= 1.3x floor", g[k]->med <= TARGET_CQ_FLOOR_RATIO * pr->floor.med);
            if (p == P_HYBRID) set_target(r, "<= 30 us", g[k]->med <= TARGET_HYBRID_NS);
            add_row(t, NS, g[k]->p99, peer[k]->p99, pr->floor.p99, "  p99");
            if (k == 1) {
                r = add_row(t, NS, g[k]->med, peer[k]->med, pr->floor_fd.med, "  the same against the fd floor");
                if (p == P_SPIN)
                    set_target(r, "<= 1.3x fd floor", g[k]->med <= TARGET_CQ_FLOOR_RATIO * pr->floor_fd.med);
            }
        }
    }
    add_sep(t);
    for (int p = 0; p < NPOLICIES; p++)
        for (int k = 0; k < 2; k++) {
            double g = res->p[p].tput[k], floor = res->p[p].tput_floor[k];
            r = add_row(t, PER_S, g, res->p[p].tput_hostfn[k], floor,
                        "completions/s %s, %d stream%s, %d in flight", policy_name[p], k ? NSTREAMS : 1,
                        k ? "s" : "", TPUT_OPS);
            if (k == 0 && p != P_BLOCK)
                set_target(r, ">= 0.95x floor", g >= TARGET_TPUT_FLOOR_RATIO * floor);
        }
    add_sep(t);
    for (int p = 0; p < NPOLICIES; p++) {
        r = add_row(t, NS, res->p[p].hol, res->hol_runtime, res->hol_floor,
                    "head-of-line %s: A's round trip, B busy %.0f ms", policy_name[p], res->spin_ns_measured / 1e6);
        set_target(r, "< 1 ms", res->p[p].hol < TARGET_HOL_NS);
    }
    add_sep(t);
    r = add_row(t, NS, res->alloc_g, res->alloc_sync, -1, "pool: alloc_async+release 1 MiB vs cuMemAlloc+cuMemFree");
    set_target(r, "<= 0.5 us", res->alloc_g <= TARGET_ALLOC_NS);
    r = add_row(t, NS, res->alloc_g, res->alloc_async, -1, "pool: alloc_async+release 1 MiB vs cuMemAllocAsync+Free");
    set_target(r, "<= 0.5 us", res->alloc_g <= TARGET_ALLOC_NS);
}

/* ---- the run ---- */

static const int one_stream = 1, all_streams = NSTREAMS;

/* What runs once, in the HYBRID (default) phase: launch cost, the raw throughput and
 * head-of-line figures, the pool. */
static int measure_once(bench *b, results *res) {
    bench_series launch[] = {
        {launch_gaio, NULL, LAUNCH_SAMPLES, 2, NULL, 0, 0},
        {launch_raw, NULL, LAUNCH_SAMPLES, 2, NULL, 0, 0},
        {launch_raw_ticket, NULL, LAUNCH_SAMPLES, 2, NULL, 0, 0},
    };
    if (run_series(b, launch, 3, LAUNCH_ROUNDS) != 0) return -1;
    res->launch_g = launch[0].med;
    res->launch_r = launch[1].med;
    res->launch_rt = launch[2].med;

    if (rt_start(b) != 0) return -1;
    bench_series hol[] = {
        {hol_runtime_thread, NULL, HOL_SAMPLES, 1, NULL, 0, 0},
        {hol_floor, NULL, HOL_SAMPLES, 1, NULL, 0, 0},
    };
    int rc = run_series(b, hol, 2, HOL_ROUNDS);
    rt_stop(b);
    if (rc != 0) return -1;
    res->hol_runtime = hol[0].med;
    res->hol_floor = hol[1].med;

    bench_series alloc[] = {
        {alloc_gaio, NULL, ALLOC_SAMPLES, 2, NULL, 0, 0},
        {alloc_raw_sync, NULL, ALLOC_SYNC_SAMPLES, 1, NULL, 0, 0},
        {alloc_raw_async, NULL, ALLOC_SAMPLES, 2, NULL, 0, 0},
    };
    if (run_series(b, alloc, 3, ALLOC_ROUNDS) != 0) return -1;
    res->alloc_g = alloc[0].med;
    res->alloc_sync = alloc[1].med;
    res->alloc_async = alloc[2].med;
    return 0;
}

static int measure_policy(bench *b, policy_results *pr) {
    const int warm = LAT_SAMPLES / LAT_ROUNDS / 10 + 5;
    bench_series lat[] = {
        {rt_gaio_wait, NULL, LAT_SAMPLES, warm, NULL, 0, 0}, {rt_gaio_cq, NULL, LAT_SAMPLES, warm, NULL, 0, 0},
        {rt_gaio_poll, NULL, LAT_SAMPLES, warm, NULL, 0, 0}, {rt_raw_sync, NULL, LAT_SAMPLES, warm, NULL, 0, 0},
        {rt_raw_hostfn, NULL, LAT_SAMPLES, warm, NULL, 0, 0}, {rt_floor, NULL, LAT_SAMPLES, warm, NULL, 0, 0},
        {rt_floor_fd, NULL, LAT_SAMPLES, warm, NULL, 0, 0},
    };
    /* the fd floor's thread spins only while the round trips are measured */
    int lrc = relay_open(b) != 0 ? -1 : run_series(b, lat, 7, LAT_ROUNDS);
    relay_close(b);
    if (lrc != 0) return -1;
    pr->wait = lat[0];
    pr->cq = lat[1];
    pr->poll = lat[2];
    pr->sync = lat[3];
    pr->hostfn = lat[4];
    pr->floor = lat[5];
    pr->floor_fd = lat[6];

    /* The peers and the floor in the same rounds as gaio, in each policy's phase: the
     * host's speed drifts between phases by more than the margins measured. */
    bench_series tput[] = {
        {tput_gaio, &one_stream, TPUT_SAMPLES, 1, NULL, 0, 0},
        {tput_floor, &one_stream, TPUT_SAMPLES, 1, NULL, 0, 0},
        {tput_raw_hostfn, &one_stream, TPUT_SAMPLES, 1, NULL, 0, 0},
        {tput_gaio, &all_streams, TPUT_SAMPLES, 1, NULL, 0, 0},
        {tput_floor, &all_streams, TPUT_SAMPLES, 1, NULL, 0, 0},
        {tput_raw_hostfn, &all_streams, TPUT_SAMPLES, 1, NULL, 0, 0},
    };
    if (run_series(b, tput, 6, TPUT_ROUNDS) != 0) return -1;
    for (int k = 0; k < 2; k++) {
        pr->tput[k] = tput[3 * k].med;
        pr->tput_floor[k] = tput[3 * k + 1].med;
        pr->tput_hostfn[k] = tput[3 * k + 2].med;
    }

    bench_series hol[] = {{hol_gaio, NULL, HOL_SAMPLES, 1, NULL, 0, 0}};
    if (run_series(b, hol, 1, HOL_ROUNDS) != 0) return -1;
    pr->hol = hol[0].med;
    return 0;
}

int gaio_bench_cuda_run(FILE *out) {
    static bench b; /* large: keep it off the stack */
    static results res;
    memset(&b, 0, sizeof b);
    memset(&res, 0, sizeof res);
    b.evfd = b.cq_epfd = b.relay.evfd = b.relay.epfd = -1;
    atomic_init(&b.relay.stop, false);
    atomic_init(&b.relay.want, 0);
    atomic_init(&b.relay.error, 0);
    atomic_init(&b.host_error, 0);
    atomic_init(&b.host_count, 0);
    atomic_init(&b.cb_count, 0);
    atomic_init(&b.cb_error, 0);
    atomic_init(&b.rt.error, 0);
    atomic_init(&b.rt_done[0], 0);
    atomic_init(&b.rt_done[1], 0);
    pthread_mutex_init(&b.rt.lock, NULL);
    pthread_cond_init(&b.rt.cond, NULL);
    b.spin_ns = SPIN_KERNEL_NS;
    uint64_t start = bench_now_ns();
    int rc = 1;

    b.gdev = bench_find_cuda_device(PROG, out, "gaio CUDA benchmark", &b.props);
    if (b.gdev == -2) goto done;
    if (b.gdev < 0) {
        rc = 0;
        goto done;
    }
    if (raw_open(&b) != 0) goto done;
    if (gaio_open_library(&b) != 0 || raw_current(&b) != 0) goto done;
    if (measure_spin(&b, &res.spin_ns_measured) != 0) goto done;

    static const int order[NPOLICIES] = {P_HYBRID, P_SPIN, P_BLOCK};
    for (int i = 0; i < NPOLICIES; i++) {
        int p = order[i];
        gaio_config config = {.cpu_workers = 0, .wait_policy = policy_of[p]};
        if (gaio_restart(&config) != 0) goto done;
        if (phase_open(&b) != 0) goto done;
        if (p == P_HYBRID && measure_once(&b, &res) != 0) goto done;
        if (measure_policy(&b, &res.p[p]) != 0) goto done;
        if (phase_close(&b) != 0) goto done;
    }
    if (gaio_restart(NULL) != 0) goto done;

    int driver = 0;
    CUresult dr = bench_cu.cuDriverGetVersion(&driver);
    if (dr != CUDA_SUCCESS) {
        bench_cu_fail(PROG, dr, "cuDriverGetVersion");
        goto done;
    }
    static table t;
    memset(&t, 0, sizeof t);
    build_table(&res, &t);
    fprintf(out, "gaio %d.%d.%d CUDA backend: device %d, %s (sm_%d%d, %d SMs), driver API %d.%d, %ld online cores\n",
            GAIO_VERSION_MAJOR, GAIO_VERSION_MINOR, GAIO_VERSION_PATCH, b.gdev, b.props.name, b.props.compute_major,
            b.props.compute_minor, b.props.processor_count, driver / 1000, driver % 1000 / 10,
            sysconf(_SC_NPROCESSORS_ONLN));
    fprintf(out, "peer and floor: raw driver calls on the same primary context, same PTX kernels; samples: launch %d "
                 "batches of %d, round trip %d per series and policy, throughput %d x %d ops, head-of-line %d, pool "
                 "%d batches of %d; warm-up first\n\n",
            LAUNCH_SAMPLES, LAUNCH_BATCH, LAT_SAMPLES, TPUT_SAMPLES, TPUT_OPS, HOL_SAMPLES, ALLOC_SAMPLES,
            ALLOC_BATCH);
    print_table(out, &t);
    fprintf(out,
            "\ng/peer, g/floor = gaio / peer, gaio / floor: below 1 gaio is faster on time rows, above 1 on /s rows.\n"
            "launch: wall time per call over batches of %d on one stream, synchronized (untimed) between batches.\n"
            "  The second row's peer: the kernel and a ticket write each (gaio writes one for a fence,\n"
            "  every 32 ops, or once the stream is quiet; a launch with value arguments only takes no op).\n"
            "round trip: one empty kernel until the host knows it finished. peer of future_wait and future_poll:\n"
            "  cuStreamSynchronize; of the cq fd: cuLaunchHostFunc writing an eventfd, poll() + read. floor:\n"
            "  cuStreamWriteValue64 of a counter into pinned, device-mapped host memory, the host spinning on it.\n"
            "  fd floor: the same counter watched by a spinning thread that writes an eventfd when it arrives,\n"
            "  the measuring thread in epoll_wait on it, then read(): the least any completion told through a\n"
            "  file descriptor can cost (a thread's hand-off and a kernel wake-up on top of the floor).\n"
            "  Each policy runs on a restarted gaio; peer and floor are measured again, interleaved, in each.\n"
            "completions/s: %d launch+fence futures in flight, each counted by a then-callback (round-robin over\n"
            "  the streams); peer: launch + cuLaunchHostFunc counting; floor: launch + cuStreamWriteValue64 per op,\n"
            "  the host spinning on each stream's counter; all three in the same rounds, in each policy's phase.\n"
            "head-of-line: stream B runs bench_spin (%.1f ms measured), then an empty kernel on stream A; time from\n"
            "  A's launch until the host knows A finished. peer: one runtime thread that learns of completions by\n"
            "  cuStreamSynchronize on each stream in submission order (the async-cuda model): it sees A only after\n"
            "  B. floor: A's counter written by cuStreamWriteValue64, the host spinning on it.\n"
            "pool: gaio_buffer_alloc_async + gaio_buffer_release of 1 MiB DEVICE in steady state, per pair; peers:\n"
            "  cuMemAlloc + cuMemFree (batches of %d), cuMemAllocAsync + cuMemFreeAsync on one stream (the\n"
            "  device's default pool, whose release threshold gaio raises to 256 MiB).\n",
            LAUNCH_BATCH, TPUT_OPS, res.spin_ns_measured / 1e6, ALLOC_SYNC_BATCH);
    if (b.hol_gaio_late || b.hol_floor_late)
        fprintf(out,
                "warning: B had finished before A was known done in %d of %d gaio and %d of %d floor head-of-line\n"
                "  samples (warm-ups included): those did not measure A behind a busy B.\n",
                b.hol_gaio_late, b.hol_gaio_n, b.hol_floor_late, b.hol_floor_n);
    if (res.hol_runtime < 0.8 * res.spin_ns_measured)
        fprintf(out, "warning: the runtime-thread peer did not stall behind B (%.1f ms); check the spin kernel.\n",
                res.hol_runtime / 1e6);
    fprintf(out, "total run time %.1f s\n", (double)(bench_now_ns() - start) / 1e9);
    rc = 0;
done:
    if (b.ctx) phase_close(&b);
    if (rc != 0) {
        /* Leave gaio stopped with the defaults if it lets go; the failure is reported already. */
        if (gaio_shutdown() == GAIO_OK) gaio_configure(NULL);
    }
    gaio_close_library(&b);
    raw_close(&b);
    pthread_mutex_destroy(&b.rt.lock);
    pthread_cond_destroy(&b.rt.cond);
    return rc;
}

#endif /* GAIO_BENCH_HAVE_CUDA */
