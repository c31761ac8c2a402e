/* The comm layer's insides: a communicator, what a collective asks for, and the table
 * each implementation (the host's threads; NCCL's devices) fills in. comm.c validates
 * every public call and dispatches here; an implementation never re-checks. */
#ifndef GAIO_COMM_INTERNAL_H
#define GAIO_COMM_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/ref.h"
#include "gaio/comm.h"
#include "gaio/stream.h"

typedef enum comm_coll_kind {
    COMM_ALL_REDUCE,
    COMM_BROADCAST,
    COMM_REDUCE,
    COMM_ALL_GATHER,
    COMM_REDUCE_SCATTER
} comm_coll_kind;

/* One rank's side of a collective, checked: buffers exist where the rank reads or
 * writes them and hold what the kind needs. */
typedef struct comm_coll {
    comm_coll_kind kind;
    const char *fn; /* the public call, for messages */
    gaio_buffer *send, *recv; /* NULL where this rank does not use it */
    size_t send_offset, recv_offset;
    size_t count; /* per rank, as the public call counts it */
    gaio_dtype dtype;
    gaio_comm_op op;
    int32_t root;
} comm_coll;

/* A send or a receive of a group. */
typedef struct comm_p2p {
    bool send;
    gaio_stream *stream;
    gaio_comm *comm;
    gaio_buffer *buf;
    size_t offset, count;
    gaio_dtype dtype;
    int32_t peer;
} comm_p2p;

typedef struct comm_impl {
    const char *name;
    /* Enqueues this rank's side of c on stream (of the communicator's context). */
    gaio_status (*collective)(gaio_comm *comm, gaio_stream *stream, const comm_coll *c);
    /* Enqueues one rank's part of a group: n sends and receives on one stream. */
    gaio_status (*p2p)(gaio_comm *comm, gaio_stream *stream, const comm_p2p *ops, size_t n);
    void (*abort)(gaio_comm *comm);
    void (*destroy)(gaio_comm *comm); /* the last reference went */
    /* This rank's part of a split: returns once every rank of comm has called it, with
     * its new communicator (NULL for a negative color). */
    gaio_status (*split)(gaio_comm *comm, int32_t color, int32_t key, gaio_comm **out);
} comm_impl;

struct gaio_comm {
    gaio_ref ref;
    gaio_context *ctx; /* held */
    int32_t rank, nranks;
    const comm_impl *impl;
    void *state; /* the implementation's */
};

/* Makes a communicator of ctx (retained) for impl; NULL when out of memory. */
gaio_comm *gaio__comm_new(gaio_context *ctx, int32_t rank, int32_t nranks, const comm_impl *impl, void *state);

/* A checked send or receive joins this thread's group (group.c); outside a group it
 * is issued at once, as a group of one. */
gaio_status gaio__comm_group_add(const comm_p2p *op);

/* ---- the host's implementation (host_comm.c) ---- */
gaio_status gaio__host_comm_unique_id(gaio_comm_id *id);
gaio_status gaio__host_comm_init_rank(const char *fn, gaio_context *ctx, const gaio_comm_id *id, int32_t nranks,
                                      int32_t rank, gaio_comm **out, gaio_future **joined);

/* ---- NCCL's implementation (nccl/nccl_comm.c), in builds with CUDA ---- */
gaio_status gaio__nccl_comm_unique_id(const char *fn, gaio_comm_id *id);
gaio_status gaio__nccl_comm_init_rank(const char *fn, gaio_context *ctx, const gaio_comm_id *id, int32_t nranks,
                                      int32_t rank, gaio_comm **out, gaio_future **joined);
gaio_status gaio__nccl_comm_create_local(const char *fn, gaio_context *const *ctxs, int32_t n, gaio_comm **comms);
/* This thread's NCCL group (ncclGroupStart / End) follows its outermost gaio group,
 * where a communicator loaded NCCL; GAIO_OK where none did. */
gaio_status gaio__nccl_group(const char *fn, bool start);
/* The ncclComm_t of a joined NCCL communicator, else NULL (for bench/comm_bench.c's
 * raw NCCL peer on the same communicator). */
void *gaio__nccl_comm_native(gaio_comm *comm);

/* ---- reductions shared by the host's collectives (reduce.c) ---- */
/* dst[i] = op over k < n of srcs[k][i], for i < count; dst may be one of srcs (each
 * element is read from every source before it is written). AVG divides the sum by n. */
void gaio__comm_reduce(gaio_dtype dtype, gaio_comm_op op, void *dst, const void *const *srcs, int n, size_t count);

#endif
