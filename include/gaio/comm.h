/* gaio — collectives: all-reduce and its kin across the GPUs of a host and of many
 * hosts (NCCL), or across the threads of one process (the host backend), as stream
 * ops.
 *
 * A communicator (gaio_comm) is one rank of a group: it belongs to a context, and its
 * ops run on that context's streams. Ranks of one process are made together
 * (gaio_comm_create_local: every GPU of the host), ranks of many processes join
 * through an id one of them makes and ships (a socket, a file, MPI, a key-value
 * store). Joining returns at once: a future says when every rank has joined, and ops
 * enqueued before then wait in their streams, so an event loop never stalls on it.
 *
 * Every rank makes the same collectives on a communicator in the same order (NCCL's
 * rule); a rank whose arguments differ from the others' (count, dtype, op, root)
 * fails the collective on every rank. Ops are enqueued like kernels: checked first
 * (nothing is enqueued on bad input), then run in stream order, holding their buffers
 * until they have run; a fence after one gives its future (gaio_future_fence). A
 * peer that fails, or gaio_comm_abort, fails the ops in flight with GAIO_ERR_DEVICE
 * naming the cause; nothing waits forever.
 *
 * The host backend's communicators span the threads of one process: the same calls,
 * the same semantics, so that a program written for GPUs runs and is tested without
 * them. Its ids are refused by other processes. */
#ifndef GAIO_COMM_H
#define GAIO_COMM_H

#include <stddef.h>
#include <stdint.h>

#include "gaio/status.h"
#include "gaio/types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gaio_comm gaio_comm;

typedef enum gaio_comm_op {
    GAIO_COMM_SUM = 0,
    GAIO_COMM_PROD = 1,
    GAIO_COMM_MIN = 2,
    GAIO_COMM_MAX = 3,
    GAIO_COMM_AVG = 4 /* the sum over the ranks' count; floating-point dtypes only */
} gaio_comm_op;

/* The bytes a group's ranks share to find each other (on GPUs: NCCL's ncclUniqueId
 * and the address of gaio's liveness channel, through which a rank learns that a
 * peer's process is gone; on the host, the host backend's). Plain data: copy it
 * anywhere. */
#define GAIO_COMM_ID_BYTES 256
typedef struct gaio_comm_id {
    unsigned char bytes[GAIO_COMM_ID_BYTES];
} gaio_comm_id;

/* A new group's id, for the device kind of ctx: one rank makes it, every rank joins
 * with it. */
gaio_status gaio_comm_unique_id(gaio_context *ctx, gaio_comm_id *id);

/* Joins the group `id` as rank `rank` of `nranks`, on ctx. Returns at once with the
 * communicator and *joined (the caller's reference), which completes when every rank
 * has joined, or fails (a mismatched nranks, a rank taken twice). Ops may be enqueued
 * on *out before: their streams wait for the join. */
gaio_status gaio_comm_init_rank(gaio_context *ctx, const gaio_comm_id *id, int32_t nranks, int32_t rank,
                                gaio_comm **out, gaio_future **joined);

/* One communicator per context, all of this process (NCCL's ncclCommInitAll): rank i
 * is ctxs[i], n ranks; the contexts are of one device kind, and on CUDA of distinct
 * devices. comms receives n communicators, ready when this returns. */
gaio_status gaio_comm_create_local(gaio_context *const *ctxs, int32_t n, gaio_comm **comms);

/* Splits comm's group into sub-groups: ranks that give the same color form one, ordered
 * by key (then by their rank in comm); *out is this rank's new communicator, of comm's
 * context, or NULL for a negative color (the rank joins none). Every rank of comm calls
 * it, one thread per rank: like NCCL's ncclCommSplit, each call returns once every
 * rank has called (a split is made rarely, at set-up). */
gaio_status gaio_comm_split(gaio_comm *comm, int32_t color, int32_t key, gaio_comm **out);

gaio_status gaio_comm_retain(gaio_comm *comm);
gaio_status gaio_comm_release(gaio_comm *comm);

/* Tears the communicator down: its ops in flight and later ones fail with
 * GAIO_ERR_DEVICE ("aborted"), on this rank and, once they reach the collective, on the
 * other ranks. The handle stays valid until released. */
gaio_status gaio_comm_abort(gaio_comm *comm);

gaio_status gaio_comm_rank(const gaio_comm *comm, int32_t *rank);
gaio_status gaio_comm_size(const gaio_comm *comm, int32_t *nranks);
gaio_status gaio_comm_context(const gaio_comm *comm, gaio_context **ctx); /* borrowed */

/* ---- collectives: stream of the communicator's context; counts in elements ----
 *
 * dtypes: U8, S32, S64, F16, BF16, F32. send and recv may be
 * the same memory (in place) where the operation allows: all_reduce, broadcast,
 * reduce with the same offset; all_gather with send at recv + rank * count elements;
 * reduce_scatter with recv at send + rank * count elements. */

/* recv[i] = op over ranks of send[i], on every rank. */
gaio_status gaio_comm_all_reduce(gaio_stream *stream, gaio_comm *comm, gaio_buffer *send, size_t send_offset,
                                 gaio_buffer *recv, size_t recv_offset, size_t count, gaio_dtype dtype,
                                 gaio_comm_op op);
/* recv = root's send, on every rank (send is read on root only; NULL elsewhere is fine). */
gaio_status gaio_comm_broadcast(gaio_stream *stream, gaio_comm *comm, gaio_buffer *send, size_t send_offset,
                                gaio_buffer *recv, size_t recv_offset, size_t count, gaio_dtype dtype, int32_t root);
/* root's recv[i] = op over ranks of send[i] (recv is written on root only; NULL
 * elsewhere is fine). */
gaio_status gaio_comm_reduce(gaio_stream *stream, gaio_comm *comm, gaio_buffer *send, size_t send_offset,
                             gaio_buffer *recv, size_t recv_offset, size_t count, gaio_dtype dtype, gaio_comm_op op,
                             int32_t root);
/* recv[r * count + i] = rank r's send[i]: recv holds nranks * count elements. */
gaio_status gaio_comm_all_gather(gaio_stream *stream, gaio_comm *comm, gaio_buffer *send, size_t send_offset,
                                 gaio_buffer *recv, size_t recv_offset, size_t count, gaio_dtype dtype);
/* recv[i] = op over ranks of send[rank * count + i]: send holds nranks * count. */
gaio_status gaio_comm_reduce_scatter(gaio_stream *stream, gaio_comm *comm, gaio_buffer *send, size_t send_offset,
                                     gaio_buffer *recv, size_t recv_offset, size_t count, gaio_dtype dtype,
                                     gaio_comm_op op);

/* ---- point to point, grouped ----
 *
 * Sends and receives between group_start and group_end on this thread are issued
 * together at group_end (NCCL's ncclGroupStart/End), so that every rank may send to
 * and receive from every other (all-to-all) without deadlock; one outside a group is
 * a group of its own. A send's count and dtype match its peer's receive. The ops of
 * one group on one rank use one stream. Groups nest; only the outermost end issues. */
gaio_status gaio_comm_group_start(void);
gaio_status gaio_comm_group_end(void);
gaio_status gaio_comm_send(gaio_stream *stream, gaio_comm *comm, gaio_buffer *buf, size_t offset, size_t count,
                           gaio_dtype dtype, int32_t peer);
gaio_status gaio_comm_recv(gaio_stream *stream, gaio_comm *comm, gaio_buffer *buf, size_t offset, size_t count,
                           gaio_dtype dtype, int32_t peer);

#ifdef __cplusplus
}
#endif
#endif
