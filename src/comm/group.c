/* Groups (NCCL's ncclGroupStart/End): sends and receives are collected per thread and
 * issued together at the outermost end, one part per communicator, so that ranks that
 * send to each other before they receive do not wait on each other; on CUDA devices
 * the thread's NCCL group spans the gaio group, so that collectives of several ranks
 * made by one thread launch together. */
#include <stdlib.h>

#include "comm/comm_internal.h"
#include "core/error.h"
#include "gaio/buffer.h"

static _Thread_local struct {
    int depth;
    comm_p2p *ops;
    size_t n, cap;
} group;

gaio_status gaio_comm_group_start(void) {
    if (group.depth == 0) {
        gaio_status st = gaio__nccl_group(__func__, true);
        if (st != GAIO_OK) return st;
    }
    group.depth++;
    return GAIO_OK;
}

static void drop(comm_p2p *ops, size_t n) {
    for (size_t i = 0; i < n; i++) {
        gaio_buffer_release(ops[i].buf);
        gaio_stream_release(ops[i].stream);
        gaio_comm_release(ops[i].comm);
    }
    free(ops);
}

/* Issues the collected ops: checked first (one stream per communicator), so that a
 * refusal enqueues nothing. */
static gaio_status issue(const char *fn) {
    comm_p2p *ops = group.ops;
    size_t n = group.n;
    group.ops = NULL;
    group.n = group.cap = 0;
    comm_p2p *part = malloc((n ? n : 1) * sizeof *part);
    bool *done = calloc(n ? n : 1, sizeof *done);
    gaio_status st = part && done ? GAIO_OK : gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory");
    for (size_t i = 0; st == GAIO_OK && i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            if (ops[j].comm == ops[i].comm && ops[j].stream != ops[i].stream) {
                st = gaio__fail(GAIO_ERR_INVALID_ARG, fn,
                                "the group's sends and receives of rank %d use two streams: one communicator's ops "
                                "of a group share one stream",
                                ops[i].comm->rank);
                break;
            }
    for (size_t i = 0; st == GAIO_OK && i < n; i++) {
        if (done[i]) continue;
        size_t k = 0;
        for (size_t j = i; j < n; j++)
            if (!done[j] && ops[j].comm == ops[i].comm) {
                part[k++] = ops[j];
                done[j] = true;
            }
        st = ops[i].comm->impl->p2p(ops[i].comm, ops[i].stream, part, k);
    }
    free(part);
    free(done);
    drop(ops, n);
    return st;
}

gaio_status gaio_comm_group_end(void) {
    if (group.depth == 0) return GAIO_FAIL(GAIO_ERR_INVALID_ARG, "no group was started on this thread");
    if (--group.depth > 0) return GAIO_OK;
    gaio_status st = issue(__func__);
    gaio_status nst = gaio__nccl_group(__func__, false); /* launches what NCCL's group holds */
    return st != GAIO_OK ? st : nst;
}

gaio_status gaio__comm_group_add(const comm_p2p *op) {
    const char *fn = op->send ? "gaio_comm_send" : "gaio_comm_recv";
    if (group.n == group.cap) {
        size_t cap = group.cap ? 2 * group.cap : 8;
        comm_p2p *g = realloc(group.ops, cap * sizeof *g);
        if (!g) return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory");
        group.ops = g;
        group.cap = cap;
    }
    gaio_buffer_retain(op->buf);
    gaio_stream_retain(op->stream);
    gaio_comm_retain(op->comm);
    group.ops[group.n++] = *op;
    return group.depth == 0 ? issue(fn) : GAIO_OK;
}
