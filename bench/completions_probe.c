/* gaio_bench_completions: where the completions row's time goes, beside its floor.
 *
 * `gaio bench` compares gaio's completions per second (launch + fence + then-callback
 * per op) with a floor that tracks nothing: a raw launch and a ticket write into pinned
 * memory per op, and one look at the last ticket. This probe puts two trackers between
 * them, in the same rounds: the least a completion tracker does (the submitter writes
 * each op's ticket into a ring that a second thread reads while it polls the slot, and
 * counts), the same with a block of a future's size made per op and handed back by the
 * thread (plain, one line, or used as gaio uses a future: a lock, then a callback), and a
 * second thread that only counts the slot's advance (no ring). What a
 * tracker costs beside the floor is the share of the gap no tracker avoids.
 *
 * Rounds of 1000 ops each, every variant once a round in turn; medians per op over the
 * rounds, and each median over the floor's. Only ratios from one run compare (the
 * host's speed drifts between runs by more than the gaps measured).
 * With `segments`, the submitting thread also reads the time stamp counter between the
 * calls of gaio's and the floor's ops, and prints what each call took (mean per op,
 * the counter's ticks turned into ns over the run): where the submitter's time goes.
 *   usage: gaio_bench_completions [spin|hybrid] [rounds] [segments] */
#ifndef GAIO_BENCH_HAVE_CUDA
#include <stdio.h>
int main(void) {
    printf("gaio_bench_completions: this build has no CUDA backend\n");
    return 0;
}
#else
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "bench_cu.h"
#include "bench_util.h"

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
static inline uint64_t ticks(void) { return __rdtsc(); }
#else
static inline uint64_t ticks(void) { return bench_now_ns(); }
#endif

/* Segment timing (`segments`): ticks spent in each call, summed over the timed rounds. */
enum { SEG_G_LAUNCH, SEG_G_FENCE, SEG_G_THEN, SEG_G_RELEASE, SEG_F_LAUNCH, SEG_F_WRITE, NSEG };
static const char *const seg_names[NSEG] = {"gaio_launch", "gaio_future_fence", "gaio_future_then",
                                             "gaio_future_release", "floor: cuLaunchKernel",
                                             "floor: cuStreamWriteValue64"};
static uint64_t seg_ticks[NSEG];
static bool segments;

#define PROG "gaio bench completions"
#define OPS 1000
#define RING 1024 /* > OPS: the submitter never waits for room */

static const char ptx[] = ".version 8.0\n.target sm_75\n.address_size 64\n\n.visible .entry bench_empty()\n{\n\tret;\n}\n";

enum { FLOOR, GAIO, TRACKER, RECYCLER, RECYCLER1, EMULATOR, COUNTER, FLOOR_AGAIN, NV };
static const char *const names[NV] = {
    "floor: raw launch + ticket write",
    "gaio: launch + fence + then + release",
    "tracker: floor + ticket ring + polling thread",
    "recycler: tracker + a 3-line block per op",
    "recycler: tracker + a 1-line block per op",
    "emulator: 3-line recycler locked, callback run",
    "counter: floor + thread counting the slot",
    "floor again (drift within the run)",
};

static _Alignas(64) atomic_ulong counted; /* completions the tracker or gaio's callbacks counted */

/* The recyclers' blocks: as big as gaio's future (three lines), or one line, written
 * by the submitter when it takes one, written again by the tracker as it completes it
 * and handed back through a second ring, as gaio's op cache hands futures back. */
#define BLOCK_LINES 3
typedef struct block {
    _Alignas(64) uint64_t w[BLOCK_LINES * 8];
} block;

/* The emulator's view of a block: a future's parts where gaio's has them (a mutex and
 * the done flag in the first line, the callback in the second), used as gaio uses them:
 * the submitter makes it and adds the callback under the lock (then), the tracker
 * completes it under the lock and runs the callback outside it. */
typedef struct emu_future {
    pthread_mutex_t lock;
    int done;
    char pad[64 - sizeof(pthread_mutex_t) - sizeof(int)];
    void (*fn)(void *);
    void *user;
} emu_future;
_Static_assert(sizeof(emu_future) <= sizeof(block), "an emulated future fits a block");

static void emu_count(void *user) {
    (void)user;
    atomic_fetch_add_explicit(&counted, 1, memory_order_release);
}
static block blocks[2 * RING];
static block *ring_block[RING];
static _Alignas(64) atomic_ulong back_head; /* the tracker's: blocks handed back */
static _Alignas(64) block *back[2 * RING];
static uint64_t back_tail; /* the submitter's */

static volatile uint64_t *slot_host;
static atomic_bool stop;
static uint64_t start_ticket; /* the slot when a tracker starts */
static _Alignas(64) atomic_ulong ring_head;
static _Alignas(64) atomic_ulong ring_tail;
static _Alignas(64) uint64_t ring[RING];

static void *tracker_main(void *arg) {
    int kind = (int)(intptr_t)arg; /* COUNTER, TRACKER, RECYCLER, RECYCLER1 or EMULATOR */
    bool ring_too = kind != COUNTER;
    uint64_t tail = 0, base = start_ticket;
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        uint64_t seen = __atomic_load_n(slot_host, __ATOMIC_ACQUIRE);
        if (!ring_too) {
            if (seen != base) atomic_fetch_add_explicit(&counted, seen - base, memory_order_release);
            base = seen;
        } else {
            uint64_t head = atomic_load_explicit(&ring_head, memory_order_acquire), t0 = tail;
            while (tail != head && ring[tail % RING] <= seen) {
                if (kind == RECYCLER || kind == RECYCLER1 || kind == EMULATOR) { /* complete it, hand it back */
                    block *b = ring_block[tail % RING];
                    if (kind == EMULATOR) {
                        emu_future *f = (emu_future *)b;
                        pthread_mutex_lock(&f->lock);
                        f->done = 1;
                        void (*fn)(void *) = f->fn;
                        void *user = f->user;
                        pthread_mutex_unlock(&f->lock);
                        fn(user);
                        pthread_mutex_lock(&f->lock); /* as gaio's dispatch loop looks again */
                        pthread_mutex_unlock(&f->lock);
                        pthread_mutex_destroy(&f->lock);
                    } else {
                        b->w[0] = seen;
                        if (kind == RECYCLER) b->w[8] = tail;
                    }
                    uint64_t bh = atomic_load_explicit(&back_head, memory_order_relaxed);
                    back[bh % (2 * RING)] = b;
                    atomic_store_explicit(&back_head, bh + 1, memory_order_release);
                }
                tail++;
            }
            if (tail != t0) {
                if (kind != EMULATOR) atomic_fetch_add_explicit(&counted, tail - t0, memory_order_release);
                atomic_store_explicit(&ring_tail, tail, memory_order_release);
            }
        }
        bench_cpu_relax();
    }
    return NULL;
}

static void count_then(gaio_future *f, gaio_status st, void *user) {
    (void)f;
    (void)user;
    if (st == GAIO_OK) atomic_fetch_add_explicit(&counted, 1, memory_order_release);
}

#define CK(x)                                                                 \
    do {                                                                      \
        gaio_status st_ = (x);                                                \
        if (st_ != GAIO_OK) return bench_fail(PROG, st_, #x);                 \
    } while (0)
#define CU(x)                                                                 \
    do {                                                                      \
        CUresult r_ = (x);                                                    \
        if (r_ != CUDA_SUCCESS) return bench_cu_fail(PROG, r_, #x);           \
    } while (0)

static int spin_until(atomic_ulong *v, uint64_t want) {
    uint64_t t0 = bench_now_ns();
    while (atomic_load_explicit(v, memory_order_acquire) < want)
        if (bench_now_ns() - t0 > BENCH_TIMEOUT_NS) return fprintf(stderr, PROG ": completions did not arrive\n"), -1;
    return 0;
}

static int run(gaio_wait_policy policy, int rounds) {
    gaio_config cfg = {0, policy};
    CK(gaio_configure(&cfg));
    gaio_device_props props;
    int gdev = bench_find_cuda_device(PROG, stdout, "completions probe", &props);
    if (gdev == -1) return 0; /* no GPU: said so */
    if (gdev < 0) return -1;
    if (bench_cu_load(PROG) != 0) return -1;
    gaio_context *ctx;
    gaio_stream *s;
    gaio_library *lib;
    gaio_kernel *k;
    CK(gaio_context_create(gdev, NULL, &ctx));
    CK(gaio_stream_create(ctx, 0, 0, &s));
    CK(gaio_library_load_data(ptx, &lib));
    CK(gaio_library_get_kernel(lib, "bench_empty", &k));
    CUdevice dev;
    CUcontext pc;
    CU(bench_cu.cuDeviceGet(&dev, props.ordinal));
    CU(bench_cu.cuDevicePrimaryCtxRetain(&pc, dev));
    CU(bench_cu.cuCtxSetCurrent(pc));
    CUlibrary rl;
    CUkernel rk;
    CU(bench_cu.cuLibraryLoadData(&rl, ptx, NULL, NULL, 0, NULL, NULL, 0));
    CU(bench_cu.cuLibraryGetKernel(&rk, rl, "bench_empty"));
    CUstream rs;
    CU(bench_cu.cuStreamCreate(&rs, CU_STREAM_NON_BLOCKING));
    void *hs;
    CU(bench_cu.cuMemHostAlloc(&hs, 64, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE));
    slot_host = hs;
    *slot_host = 0;
    CUdeviceptr slot_dev;
    CU(bench_cu.cuMemHostGetDevicePointer(&slot_dev, hs, 0));
    double *m[NV];
    for (int v = 0; v < NV; v++) m[v] = calloc((size_t)rounds, sizeof(double));
    uint64_t ticket = 0;
    const gaio_dim3 one = {1, 1, 1};
    uint64_t run_ns0 = 0, run_ticks0 = 0;
    for (int r = -3; r < rounds; r++) { /* three rounds to warm up */
        if (r == 0) {
            run_ns0 = bench_now_ns();
            run_ticks0 = ticks();
        }
        for (int v = 0; v < NV; v++) {
            pthread_t th;
            bool recycles = v == RECYCLER || v == RECYCLER1 || v == EMULATOR;
            bool thread = v == TRACKER || recycles || v == COUNTER;
            atomic_store(&counted, 0);
            if (thread) {
                atomic_store(&stop, false);
                atomic_store(&ring_head, 0);
                atomic_store(&ring_tail, 0);
                start_ticket = ticket;
                /* Every block starts handed back, as a warm op cache's do. */
                for (int i = 0; i < 2 * RING; i++) back[i] = &blocks[i];
                atomic_store(&back_head, 2 * RING);
                back_tail = 0;
                if (pthread_create(&th, NULL, tracker_main, (void *)(intptr_t)v) != 0)
                    return fprintf(stderr, PROG ": pthread_create failed\n"), -1;
            }
            uint64_t t0 = bench_now_ns();
            for (int i = 0; i < OPS; i++) {
                bool timed = segments && r >= 0;
                if (v == GAIO) {
                    gaio_future *f;
                    uint64_t c0 = timed ? ticks() : 0;
                    CK(gaio_launch(s, k, one, one, 0, NULL, 0));
                    uint64_t c1 = timed ? ticks() : 0;
                    CK(gaio_future_fence(s, &f));
                    uint64_t c2 = timed ? ticks() : 0;
                    gaio_status st = gaio_future_then(f, count_then, NULL);
                    uint64_t c3 = timed ? ticks() : 0;
                    gaio_future_release(f);
                    if (timed) {
                        uint64_t c4 = ticks();
                        seg_ticks[SEG_G_LAUNCH] += c1 - c0;
                        seg_ticks[SEG_G_FENCE] += c2 - c1;
                        seg_ticks[SEG_G_THEN] += c3 - c2;
                        seg_ticks[SEG_G_RELEASE] += c4 - c3;
                    }
                    CK(st);
                    continue;
                }
                uint64_t c0 = timed && v == FLOOR ? ticks() : 0;
                CU(bench_cu.cuLaunchKernel((CUfunction)rk, 1, 1, 1, 1, 1, 1, 0, rs, NULL, NULL));
                uint64_t c1 = timed && v == FLOOR ? ticks() : 0;
                CU(bench_cu.cuStreamWriteValue64(rs, slot_dev, ++ticket, CU_STREAM_WRITE_VALUE_DEFAULT));
                if (timed && v == FLOOR) {
                    seg_ticks[SEG_F_LAUNCH] += c1 - c0;
                    seg_ticks[SEG_F_WRITE] += ticks() - c1;
                }
                if (v == TRACKER || recycles) {
                    uint64_t h = atomic_load_explicit(&ring_head, memory_order_relaxed);
                    if (recycles) { /* take a block back and fill it, as a future is made */
                        while (back_tail == atomic_load_explicit(&back_head, memory_order_acquire)) bench_cpu_relax();
                        block *b = back[back_tail++ % (2 * RING)];
                        memset(b, 0, v == RECYCLER1 ? 64 : sizeof *b);
                        if (v == EMULATOR) {
                            emu_future *f = (emu_future *)b;
                            pthread_mutex_init(&f->lock, NULL);
                            pthread_mutex_lock(&f->lock); /* then */
                            f->fn = emu_count;
                            f->user = NULL;
                            pthread_mutex_unlock(&f->lock);
                        } else {
                            b->w[1] = ticket;
                        }
                        ring_block[h % RING] = b;
                    }
                    ring[h % RING] = ticket;
                    atomic_store_explicit(&ring_head, h + 1, memory_order_release);
                }
            }
            int rc = 0;
            if (v == GAIO || thread) {
                rc = spin_until(&counted, OPS);
            } else {
                uint64_t w0 = bench_now_ns();
                while (__atomic_load_n(slot_host, __ATOMIC_ACQUIRE) < ticket && rc == 0)
                    if (bench_now_ns() - w0 > BENCH_TIMEOUT_NS) rc = -1;
            }
            double per_op = (double)(bench_now_ns() - t0) / OPS;
            if (thread) {
                atomic_store(&stop, true);
                pthread_join(th, NULL);
            }
            if (rc != 0) return -1;
            if (r >= 0) m[v][r] = per_op;
        }
    }
    double ns_per_tick = (double)(bench_now_ns() - run_ns0) / (double)(ticks() - run_ticks0);
    printf("%s completion thread, %d rounds of %d ops on %s; median per op, and the floor's median over it\n",
           policy == GAIO_WAIT_SPIN ? "SPIN" : "HYBRID", rounds, OPS, props.name);
    double floor_ns = 0;
    for (int v = 0; v < NV; v++) {
        double med = bench_median(m[v], (size_t)rounds);
        if (v == FLOOR) floor_ns = med;
        printf("  %-48s %7.0f ns   %.3f\n", names[v], med, floor_ns / med);
        free(m[v]);
    }
    if (segments) {
        printf("where the submitting thread's time goes (mean per op):\n");
        for (int g = 0; g < NSEG; g++)
            printf("  %-48s %7.0f ns\n", seg_names[g], (double)seg_ticks[g] * ns_per_tick / ((double)rounds * OPS));
    }
    CU(bench_cu.cuStreamDestroy(rs));
    CU(bench_cu.cuMemFreeHost(hs));
    CU(bench_cu.cuLibraryUnload(rl));
    CU(bench_cu.cuDevicePrimaryCtxRelease(dev));
    gaio_kernel_release(k);
    gaio_library_release(lib);
    gaio_stream_release(s);
    gaio_context_release(ctx);
    return 0;
}

int main(int argc, char **argv) {
    gaio_wait_policy policy = GAIO_WAIT_SPIN;
    if (argc > 1 && strcmp(argv[1], "hybrid") == 0) policy = GAIO_WAIT_HYBRID;
    else if (argc > 1 && strcmp(argv[1], "spin") != 0)
        return fprintf(stderr, "usage: %s [spin|hybrid] [rounds] [segments]\n", argv[0]), 2;
    int rounds = argc > 2 ? atoi(argv[2]) : 40;
    if (argc > 3 && strcmp(argv[3], "segments") != 0)
        return fprintf(stderr, "usage: %s [spin|hybrid] [rounds] [segments]\n", argv[0]), 2;
    segments = argc > 3;
    if (rounds < 1 || rounds > 100000) return fprintf(stderr, PROG ": rounds must be 1..100000\n"), 2;
    int rc = run(policy, rounds);
    gaio_shutdown();
    return rc == 0 ? 0 : 1;
}
#endif
