/* The public collectives: every argument checked here, once, then the communicator's
 * implementation enqueues (host_comm.c, or nccl/nccl_comm.c on CUDA devices). */
#include <stdlib.h>
#include <string.h>

#include "comm/comm_internal.h"
#include "core/fail.h"
#include "core/object.h"

gaio_comm *gaio__comm_new(gaio_context *ctx, int32_t rank, int32_t nranks, const comm_impl *impl, void *state) {
    gaio_comm *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    gaio__ref_init(&c->ref);
    gaio_context_retain(ctx);
    c->ctx = ctx;
    c->rank = rank;
    c->nranks = nranks;
    c->impl = impl;
    c->state = state;
    return c;
}

#ifndef GAIO_HAVE_CUDA
/* (A build without CUDA has no CUDA contexts; these keep comm.c one file.) */
gaio_status gaio__nccl_comm_unique_id(const char *fn, gaio_comm_id *id) {
    (void)id;
    return UNSUPPORTED("this gaio was built without CUDA");
}
gaio_status gaio__nccl_comm_init_rank(const char *fn, gaio_context *ctx, const gaio_comm_id *id, int32_t nranks,
                                      int32_t rank, gaio_comm **out, gaio_future **joined) {
    (void)ctx, (void)id, (void)nranks, (void)rank, (void)out, (void)joined;
    return UNSUPPORTED("this gaio was built without CUDA");
}
gaio_status gaio__nccl_comm_create_local(const char *fn, gaio_context *const *ctxs, int32_t n, gaio_comm **comms) {
    (void)ctxs, (void)n, (void)comms;
    return UNSUPPORTED("this gaio was built without CUDA");
}
gaio_status gaio__nccl_group(const char *fn, bool start) {
    (void)fn, (void)start;
    return GAIO_OK;
}
#endif

static gaio_device_kind kind_of(const gaio_context *ctx) { return ctx->be->kind; }

gaio_status gaio_comm_unique_id(gaio_context *ctx, gaio_comm_id *id) {
    const char *fn = __func__;
    if (!ctx) return BAD("ctx is NULL");
    if (!id) return BAD("id is NULL");
    if (kind_of(ctx) == GAIO_DEVICE_HOST) return gaio__host_comm_unique_id(id);
    return gaio__nccl_comm_unique_id(fn, id);
}

gaio_status gaio_comm_init_rank(gaio_context *ctx, const gaio_comm_id *id, int32_t nranks, int32_t rank,
                                gaio_comm **out, gaio_future **joined) {
    const char *fn = __func__;
    if (out) *out = NULL;
    if (joined) *joined = NULL;
    if (!ctx) return BAD("ctx is NULL");
    if (!id) return BAD("id is NULL");
    if (!out) return BAD("out is NULL");
    if (!joined) return BAD("joined is NULL");
    if (nranks < 1) return BAD("nranks is %d; a group has at least one rank", nranks);
    if (rank < 0 || rank >= nranks) return BAD("rank is %d; the ranks of %d are 0 to %d", rank, nranks, nranks - 1);
    if (kind_of(ctx) == GAIO_DEVICE_HOST) return gaio__host_comm_init_rank(fn, ctx, id, nranks, rank, out, joined);
    return gaio__nccl_comm_init_rank(fn, ctx, id, nranks, rank, out, joined);
}

gaio_status gaio_comm_create_local(gaio_context *const *ctxs, int32_t n, gaio_comm **comms) {
    const char *fn = __func__;
    if (!ctxs) return BAD("ctxs is NULL");
    if (!comms) return BAD("comms is NULL");
    if (n < 1) return BAD("n is %d; a group has at least one rank", n);
    for (int32_t i = 0; i < n; i++) {
        comms[i] = NULL;
        if (!ctxs[i]) return BAD("ctxs[%d] is NULL", i);
        if (kind_of(ctxs[i]) != kind_of(ctxs[0]))
            return BAD("ctxs[%d] is of another device kind than ctxs[0]: one group is all GPUs or all host", i);
    }
    if (kind_of(ctxs[0]) != GAIO_DEVICE_HOST) return gaio__nccl_comm_create_local(fn, ctxs, n, comms);
    gaio_comm_id id;
    gaio_status st = gaio__host_comm_unique_id(&id);
    for (int32_t i = 0; st == GAIO_OK && i < n; i++) {
        gaio_future *joined = NULL;
        st = gaio__host_comm_init_rank(fn, ctxs[i], &id, n, i, &comms[i], &joined);
        if (joined) gaio__future_unref(joined); /* complete once the last one joins, below */
    }
    if (st != GAIO_OK)
        for (int32_t i = 0; i < n; i++) {
            if (comms[i]) gaio_comm_release(comms[i]);
            comms[i] = NULL;
        }
    return st;
}

gaio_status gaio_comm_split(gaio_comm *comm, int32_t color, int32_t key, gaio_comm **out) {
    const char *fn = __func__;
    if (out) *out = NULL;
    if (!comm) return BAD("comm is NULL");
    if (!out) return BAD("out is NULL");
    return comm->impl->split(comm, color, key, out);
}

gaio_status gaio_comm_retain(gaio_comm *comm) {
    GAIO_REQUIRE_PTR(comm);
    gaio__ref_inc(&comm->ref);
    return GAIO_OK;
}

gaio_status gaio_comm_release(gaio_comm *comm) {
    GAIO_REQUIRE_PTR(comm);
    if (!gaio__ref_dec(&comm->ref)) return GAIO_OK;
    comm->impl->destroy(comm);
    gaio_context_release(comm->ctx);
    free(comm);
    return GAIO_OK;
}

gaio_status gaio_comm_abort(gaio_comm *comm) {
    GAIO_REQUIRE_PTR(comm);
    comm->impl->abort(comm);
    return GAIO_OK;
}

gaio_status gaio_comm_rank(const gaio_comm *comm, int32_t *rank) {
    GAIO_REQUIRE_PTR(comm);
    GAIO_REQUIRE_PTR(rank);
    *rank = comm->rank;
    return GAIO_OK;
}

gaio_status gaio_comm_size(const gaio_comm *comm, int32_t *nranks) {
    GAIO_REQUIRE_PTR(comm);
    GAIO_REQUIRE_PTR(nranks);
    *nranks = comm->nranks;
    return GAIO_OK;
}

gaio_status gaio_comm_context(const gaio_comm *comm, gaio_context **ctx) {
    GAIO_REQUIRE_PTR(comm);
    GAIO_REQUIRE_PTR(ctx);
    *ctx = comm->ctx;
    return GAIO_OK;
}

/* ---- checks shared by the ops ---- */

static bool dtype_ok(gaio_dtype d) {
    return d == GAIO_DTYPE_U8 || d == GAIO_DTYPE_S32 || d == GAIO_DTYPE_S64 || d == GAIO_DTYPE_F16 ||
           d == GAIO_DTYPE_F32 || d == GAIO_DTYPE_BF16;
}

static gaio_status check_common(const char *fn, gaio_stream *stream, gaio_comm *comm, gaio_dtype dtype) {
    if (!stream) return BAD("stream is NULL");
    if (!comm) return BAD("comm is NULL");
    if (stream->ctx->be != comm->ctx->be || stream->ctx->device != comm->ctx->device)
        return BAD("stream is of device %d, the communicator's context of device %d", stream->ctx->device,
                   comm->ctx->device);
    if (!dtype_ok(dtype))
        return BAD("dtype %s is not one collectives take (u8, s32, s64, f16, bf16, f32)", gaio_dtype_name(dtype));
    return GAIO_OK;
}

static gaio_status check_op(const char *fn, gaio_comm_op op, gaio_dtype dtype) {
    if ((int)op < GAIO_COMM_SUM || (int)op > GAIO_COMM_AVG) return BAD("op %d is not a gaio_comm_op", (int)op);
    if (op == GAIO_COMM_AVG && dtype != GAIO_DTYPE_F16 && dtype != GAIO_DTYPE_F32 && dtype != GAIO_DTYPE_BF16)
        return BAD("GAIO_COMM_AVG takes floating-point dtypes, not %s", gaio_dtype_name(dtype));
    return GAIO_OK;
}

/* buf holds count elements of dtype from offset, on comm's device. */
static gaio_status check_buf(const char *fn, const char *what, gaio_comm *comm, gaio_buffer *buf, size_t offset,
                             size_t count, gaio_dtype dtype) {
    if (!buf) return BAD("%s is NULL", what);
    if (buf->ctx->be != comm->ctx->be || buf->ctx->device != comm->ctx->device)
        return BAD("%s is memory of device %d, the communicator's is device %d", what, buf->ctx->device,
                   comm->ctx->device);
    size_t es = gaio_dtype_size(dtype);
    if (count > SIZE_MAX / es) return BAD("%zu elements of %s overflow the address space", count, gaio_dtype_name(dtype));
    size_t bytes = count * es;
    if (offset > buf->size || bytes > buf->size - offset)
        return BAD("%s holds %zu bytes; %zu elements of %s from byte %zu need %zu", what, buf->size, count,
                   gaio_dtype_name(dtype), offset, offset + bytes);
    if (offset % es) return BAD("%s's offset %zu is not a multiple of %s's %zu bytes", what, offset,
                                gaio_dtype_name(dtype), es);
    return GAIO_OK;
}

static gaio_status check_root(const char *fn, gaio_comm *comm, int32_t root) {
    if (root < 0 || root >= comm->nranks) return BAD("root is %d; the ranks are 0 to %d", root, comm->nranks - 1);
    return GAIO_OK;
}

/* count * nranks, or a failure when it overflows. */
static gaio_status times_ranks(const char *fn, gaio_comm *comm, size_t count, size_t *out) {
    if (count > SIZE_MAX / (size_t)comm->nranks) return BAD("%zu elements times %d ranks overflow", count, comm->nranks);
    *out = count * (size_t)comm->nranks;
    return GAIO_OK;
}

#define TRY(x)                                                                                                 \
    do {                                                                                                       \
        gaio_status st_ = (x);                                                                                 \
        if (st_ != GAIO_OK) return st_;                                                                        \
    } while (0)

static gaio_status run(gaio_stream *stream, gaio_comm *comm, comm_coll c) {
    return comm->impl->collective(comm, stream, &c);
}

gaio_status gaio_comm_all_reduce(gaio_stream *stream, gaio_comm *comm, gaio_buffer *send, size_t send_offset,
                                 gaio_buffer *recv, size_t recv_offset, size_t count, gaio_dtype dtype,
                                 gaio_comm_op op) {
    const char *fn = __func__;
    TRY(check_common(fn, stream, comm, dtype));
    TRY(check_op(fn, op, dtype));
    TRY(check_buf(fn, "send", comm, send, send_offset, count, dtype));
    TRY(check_buf(fn, "recv", comm, recv, recv_offset, count, dtype));
    return run(stream, comm, (comm_coll){COMM_ALL_REDUCE, fn, send, recv, send_offset, recv_offset, count, dtype, op, 0});
}

gaio_status gaio_comm_broadcast(gaio_stream *stream, gaio_comm *comm, gaio_buffer *send, size_t send_offset,
                                gaio_buffer *recv, size_t recv_offset, size_t count, gaio_dtype dtype, int32_t root) {
    const char *fn = __func__;
    TRY(check_common(fn, stream, comm, dtype));
    TRY(check_root(fn, comm, root));
    bool is_root = comm->rank == root;
    if (is_root) TRY(check_buf(fn, "send", comm, send, send_offset, count, dtype));
    TRY(check_buf(fn, "recv", comm, recv, recv_offset, count, dtype));
    return run(stream, comm, (comm_coll){COMM_BROADCAST, fn, is_root ? send : NULL, recv, send_offset, recv_offset,
                                         count, dtype, GAIO_COMM_SUM, root});
}

gaio_status gaio_comm_reduce(gaio_stream *stream, gaio_comm *comm, gaio_buffer *send, size_t send_offset,
                             gaio_buffer *recv, size_t recv_offset, size_t count, gaio_dtype dtype, gaio_comm_op op,
                             int32_t root) {
    const char *fn = __func__;
    TRY(check_common(fn, stream, comm, dtype));
    TRY(check_op(fn, op, dtype));
    TRY(check_root(fn, comm, root));
    bool is_root = comm->rank == root;
    TRY(check_buf(fn, "send", comm, send, send_offset, count, dtype));
    if (is_root) TRY(check_buf(fn, "recv", comm, recv, recv_offset, count, dtype));
    return run(stream, comm, (comm_coll){COMM_REDUCE, fn, send, is_root ? recv : NULL, send_offset, recv_offset,
                                         count, dtype, op, root});
}

gaio_status gaio_comm_all_gather(gaio_stream *stream, gaio_comm *comm, gaio_buffer *send, size_t send_offset,
                                 gaio_buffer *recv, size_t recv_offset, size_t count, gaio_dtype dtype) {
    const char *fn = __func__;
    TRY(check_common(fn, stream, comm, dtype));
    size_t total = 0;
    TRY(times_ranks(fn, comm, count, &total));
    TRY(check_buf(fn, "send", comm, send, send_offset, count, dtype));
    TRY(check_buf(fn, "recv", comm, recv, recv_offset, total, dtype));
    return run(stream, comm, (comm_coll){COMM_ALL_GATHER, fn, send, recv, send_offset, recv_offset, count, dtype,
                                         GAIO_COMM_SUM, 0});
}

gaio_status gaio_comm_reduce_scatter(gaio_stream *stream, gaio_comm *comm, gaio_buffer *send, size_t send_offset,
                                     gaio_buffer *recv, size_t recv_offset, size_t count, gaio_dtype dtype,
                                     gaio_comm_op op) {
    const char *fn = __func__;
    TRY(check_common(fn, stream, comm, dtype));
    TRY(check_op(fn, op, dtype));
    size_t total = 0;
    TRY(times_ranks(fn, comm, count, &total));
    TRY(check_buf(fn, "send", comm, send, send_offset, total, dtype));
    TRY(check_buf(fn, "recv", comm, recv, recv_offset, count, dtype));
    return run(stream, comm, (comm_coll){COMM_REDUCE_SCATTER, fn, send, recv, send_offset, recv_offset, count, dtype,
                                         op, 0});
}

/* ---- point to point (grouped in group.c) ---- */

static gaio_status p2p(const char *fn, bool send, gaio_stream *stream, gaio_comm *comm, gaio_buffer *buf,
                       size_t offset, size_t count, gaio_dtype dtype, int32_t peer) {
    TRY(check_common(fn, stream, comm, dtype));
    TRY(check_buf(fn, "buf", comm, buf, offset, count, dtype));
    if (peer < 0 || peer >= comm->nranks) return BAD("peer is %d; the ranks are 0 to %d", peer, comm->nranks - 1);
    return gaio__comm_group_add(&(comm_p2p){send, stream, comm, buf, offset, count, dtype, peer});
}

gaio_status gaio_comm_send(gaio_stream *stream, gaio_comm *comm, gaio_buffer *buf, size_t offset, size_t count,
                           gaio_dtype dtype, int32_t peer) {
    return p2p(__func__, true, stream, comm, buf, offset, count, dtype, peer);
}

gaio_status gaio_comm_recv(gaio_stream *stream, gaio_comm *comm, gaio_buffer *buf, size_t offset, size_t count,
                           gaio_dtype dtype, int32_t peer) {
    return p2p(__func__, false, stream, comm, buf, offset, count, dtype, peer);
}
