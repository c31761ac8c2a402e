/* comm_bench: gaio's collectives against raw NCCL calls on the same communicators and
 * streams, in the same run, every CUDA GPU of the host a rank, one thread driving them
 * all in groups (the calls of one size and op launch together).
 *
 * For each operation (all_reduce sum, all_gather, reduce_scatter sum; f32) and size
 * (8 B to --max-bytes, x4 steps), --iters calls back to back per rank (10x as many up
 * to 1 MiB, the best of 5 rounds), timed by events on every rank's stream (the slowest
 * rank counts); printed as nccl-tests prints them:
 * time per call, algorithm bandwidth (bytes / time) and bus bandwidth (all_reduce:
 * algbw x 2(n-1)/n; all_gather and reduce_scatter: algbw x (n-1)/n, bytes being the
 * whole gathered buffer), for gaio and for raw NCCL, then gaio / raw of the bus
 * bandwidth, and gaio's added time per call. Targets ([6/7]): >= 0.97x raw NCCL's bus
 * bandwidth at >= 64 MiB, <= 2 us added at 8 B.
 *
 * Usage: gaio_bench_comm [--iters 20] [--max-bytes 1073741824] [--ops all_reduce,...] */
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm_internal.h"
#include "comm/nccl/nccl_api.h"
#include "gaio/gaio.h"

#define MAXR 16

static const char *prog = "gaio_bench_comm";

#define CK(call)                                                                                          \
    do {                                                                                                  \
        gaio_status st_ = (call);                                                                         \
        if (st_ != GAIO_OK) {                                                                             \
            fprintf(stderr, "%s: %s: %s (%s)\n", prog, #call, gaio_status_string(st_), gaio_last_error()); \
            exit(1);                                                                                      \
        }                                                                                                 \
    } while (0)

typedef enum { OP_ALL_REDUCE, OP_ALL_GATHER, OP_REDUCE_SCATTER } bench_op;
static const char *const op_names[] = {"all_reduce", "all_gather", "reduce_scatter"};

typedef struct ranks {
    int n;
    gaio_context *ctx[MAXR];
    gaio_stream *s[MAXR];
    gaio_comm *comm[MAXR];
    gaio_buffer *send[MAXR], *recv[MAXR];
    gaio_event *start[MAXR], *end[MAXR];
} ranks;

/* One round of `iters` calls of op on every rank, `count` elements per rank's part
 * (all_gather: sent; reduce_scatter: received); raw: NCCL's own calls. */
static void round_of(ranks *R, const gaio_nccl_table *nc, bench_op op, size_t count, int iters, int raw) {
    for (int it = 0; it < iters; it++) {
        if (raw) nc->ncclGroupStart();
        else CK(gaio_comm_group_start());
        for (int r = 0; r < R->n; r++) {
            if (raw) {
                void *c = gaio__nccl_comm_native(R->comm[r]);
                void *sp, *rp, *ns;
                CK(gaio_buffer_device_ptr(R->send[r], &sp));
                CK(gaio_buffer_device_ptr(R->recv[r], &rp));
                CK(gaio_stream_native(R->s[r], &ns));
                ncclResult_t e = op == OP_ALL_REDUCE ? nc->ncclAllReduce(sp, rp, count, ncclFloat32, ncclSum, c, ns)
                                 : op == OP_ALL_GATHER ? nc->ncclAllGather(sp, rp, count, ncclFloat32, c, ns)
                                                       : nc->ncclReduceScatter(sp, rp, count, ncclFloat32, ncclSum, c, ns);
                if (e != ncclSuccess) {
                    fprintf(stderr, "%s: raw NCCL call failed: %s\n", prog, nc->ncclGetErrorString(e));
                    exit(1);
                }
            } else if (op == OP_ALL_REDUCE) {
                CK(gaio_comm_all_reduce(R->s[r], R->comm[r], R->send[r], 0, R->recv[r], 0, count, GAIO_DTYPE_F32,
                                        GAIO_COMM_SUM));
            } else if (op == OP_ALL_GATHER) {
                CK(gaio_comm_all_gather(R->s[r], R->comm[r], R->send[r], 0, R->recv[r], 0, count, GAIO_DTYPE_F32));
            } else {
                CK(gaio_comm_reduce_scatter(R->s[r], R->comm[r], R->send[r], 0, R->recv[r], 0, count, GAIO_DTYPE_F32,
                                            GAIO_COMM_SUM));
            }
        }
        if (raw) nc->ncclGroupEnd();
        else CK(gaio_comm_group_end());
    }
}

/* Seconds per call: `iters` calls timed on every rank (the slowest rank's time), the
 * best of `trials` such rounds. */
static double timed(ranks *R, const gaio_nccl_table *nc, bench_op op, size_t count, int iters, int trials, int raw) {
    round_of(R, nc, op, count, 2, raw); /* warm-up */
    double best = 1e30;
    for (int t = 0; t < trials; t++) {
        for (int r = 0; r < R->n; r++) CK(gaio_event_record(R->start[r], R->s[r]));
        round_of(R, nc, op, count, iters, raw);
        double worst = 0;
        for (int r = 0; r < R->n; r++) CK(gaio_event_record(R->end[r], R->s[r]));
        for (int r = 0; r < R->n; r++) {
            CK(gaio_event_synchronize(R->start[r]));
            CK(gaio_event_synchronize(R->end[r]));
            float ms = 0;
            CK(gaio_event_elapsed_ms(R->start[r], R->end[r], &ms));
            if (ms > worst) worst = ms;
        }
        if (worst < best) best = worst;
    }
    return best / 1e3 / iters;
}

/* A crash prints its stack (addresses for addr2line) rather than nothing. */
static void on_crash(int sig) {
    void *frames[64];
    int n = backtrace(frames, 64);
    dprintf(2, "%s: signal %d; stack:\n", prog, sig);
    backtrace_symbols_fd(frames, n, 2);
    _exit(128 + sig);
}

int main(int argc, char **argv) {
    signal(SIGSEGV, on_crash);
    signal(SIGABRT, on_crash);
    setvbuf(stdout, NULL, _IOLBF, 0);
    int iters = 20;
    size_t max_bytes = (size_t)1 << 30;
    const char *only = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--iters")) iters = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--max-bytes")) max_bytes = strtoull(argv[i + 1], NULL, 0);
        else if (!strcmp(argv[i], "--ops")) only = argv[i + 1];
    }
    ranks R = {0};
    int count = 0;
    CK(gaio_device_count(&count));
    char name[256] = "";
    for (int d = 0; d < count && R.n < MAXR; d++) {
        gaio_device_props p;
        CK(gaio_device_get_props(d, &p));
        if (p.kind != GAIO_DEVICE_CUDA) continue;
        snprintf(name, sizeof name, "%s", p.name);
        CK(gaio_context_create(d, NULL, &R.ctx[R.n++]));
    }
    if (R.n == 0) {
        printf("%s: SKIPPED: no CUDA device\n", prog);
        return 0;
    }
    const char *why = "";
    const gaio_nccl_table *nc = gaio__nccl(&why);
    if (!nc) {
        printf("%s: SKIPPED: %s\n", prog, why);
        return 0;
    }
    int version = 0;
    nc->ncclGetVersion(&version);
    CK(gaio_comm_create_local(R.ctx, R.n, R.comm));
    for (int r = 0; r < R.n; r++) {
        CK(gaio_stream_create(R.ctx[r], 0, 0, &R.s[r]));
        CK(gaio_buffer_alloc(R.ctx[r], GAIO_MEM_DEVICE, max_bytes, &R.send[r]));
        CK(gaio_buffer_alloc(R.ctx[r], GAIO_MEM_DEVICE, max_bytes, &R.recv[r]));
        CK(gaio_memset_async(R.s[r], R.send[r], 0, 0, max_bytes));
        CK(gaio_event_create(R.ctx[r], 0, &R.start[r]));
        CK(gaio_event_create(R.ctx[r], 0, &R.end[r]));
    }
    printf("# %d x %s, NCCL %d, %d calls per size, one thread driving every rank in groups; f32\n", R.n, name,
           version, iters);
    int n = R.n;
    for (int o = 0; o < 3; o++) {
        if (only && !strstr(only, op_names[o])) continue;
        double bus = o == OP_ALL_REDUCE ? 2.0 * (n - 1) / n : (double)(n - 1) / n;
        printf("\n# %s\n%12s %12s %10s %9s %9s %10s %9s %9s %8s %9s\n", op_names[o], "size (B)", "count", "gaio us",
               "algbw", "busbw", "nccl us", "algbw", "busbw", "bus x", "added us");
        for (size_t bytes = 8; bytes <= max_bytes; bytes *= 4) {
            /* bytes: the whole buffer nccl-tests sizes (all_gather's gathered, reduce_scatter's sent) */
            size_t total = bytes / 4, part = o == OP_ALL_REDUCE ? total : total / (size_t)n;
            if (part == 0) continue;
            size_t moved = (o == OP_ALL_REDUCE ? part : part * (size_t)n) * 4;
            /* small sizes: many calls, the best of 5 rounds (their time is the launch path's) */
            int it = bytes >= (64u << 20) ? (iters > 5 ? 5 : iters) : bytes <= (1u << 20) ? 10 * iters : iters;
            int trials = bytes <= (1u << 20) ? 5 : 2;
            double tg = timed(&R, nc, (bench_op)o, part, it, trials, 0);
            double tr = timed(&R, nc, (bench_op)o, part, it, trials, 1);
            double ag = moved / tg / 1e9, ar = moved / tr / 1e9;
            printf("%12zu %12zu %10.2f %9.2f %9.2f %10.2f %9.2f %9.2f %8.3f %9.2f\n", moved, part, tg * 1e6, ag,
                   ag * bus, tr * 1e6, ar, ar * bus, ag / ar, (tg - tr) * 1e6);
        }
    }
    printf("\n# targets: busbw >= 0.97x raw NCCL at >= 64 MiB; <= 2 us added at 8 B\n");
    for (int r = 0; r < R.n; r++) {
        gaio_stream_synchronize(R.s[r]);
        gaio_event_release(R.start[r]);
        gaio_event_release(R.end[r]);
        gaio_buffer_release(R.send[r]);
        gaio_buffer_release(R.recv[r]);
        gaio_stream_release(R.s[r]);
        gaio_comm_release(R.comm[r]);
        gaio_context_release(R.ctx[r]);
    }
    return 0;
}
