#include "core/op.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/op_cache.h"
#include "core/submitter.h"

gaio_op *gaio__op_new(gaio_op_kind kind, gaio_stream *stream, size_t nbufs, size_t extra, void **extra_out) {
    /* One allocation: [op][backend space][buffer references][extra], 16-aligned parts. */
    size_t op_bytes = (sizeof(gaio_op) + 15) & ~(size_t)15;
    size_t be_bytes = (stream->ctx->be->op_space + 15) & ~(size_t)15;
    size_t head = op_bytes + be_bytes + nbufs * sizeof(gaio_buffer *);
    head = (head + 15) & ~(size_t)15;
    bool cached;
    gaio_op *op = gaio__op_block_get(head + extra, &cached);
    if (!op) return NULL;
    memset(op, 0, head + extra);
    op->cached = cached;
    op->kind = kind;
    op->stream = stream;
    op->be = be_bytes ? (char *)op + op_bytes : NULL;
    op->nbufs = nbufs;
    op->bufs = nbufs ? (gaio_buffer **)((char *)op + op_bytes + be_bytes) : NULL;
    if (extra_out) *extra_out = extra ? (char *)op + head : NULL;
    return op;
}

void gaio__op_hold_refs(gaio_op *op) {
    if (op->owns_refs) return;
    op->owns_refs = true;
    gaio__stream_ref(op->stream);
    if (op->kind == GAIO_OP_LAUNCH) gaio__kernel_ref(op->u.launch.kernel);
}

void gaio__op_hold_buffer(gaio_op *op, size_t i, gaio_buffer *buf) {
    gaio__buffer_ref(buf);
    op->bufs[i] = buf;
}

/* With a batch, the stream's and kernels' references are only counted here and
 * dropped in gaio__retire_batch_end. */
static void op_release_refs(gaio_op *op, gaio_retire_batch *b) {
    for (size_t i = 0; i < op->nbufs; i++)
        if (op->bufs[i]) gaio__buffer_unref(op->bufs[i]);
    bool owns = op->owns_refs;
    gaio_kernel *k = owns && op->kind == GAIO_OP_LAUNCH ? op->u.launch.kernel : NULL;
    if (k && !b) {
        gaio__kernel_unref(k);
    } else if (k) {
        if (b->kernel != k) {
            if (b->kernel) gaio__kernel_unref_n(b->kernel, b->kernel_refs);
            b->kernel = k;
            b->kernel_refs = 0;
        }
        b->kernel_refs++;
    }
    if ((op->kind == GAIO_OP_RECORD || op->kind == GAIO_OP_WAIT) && op->u.point.fut)
        gaio__future_unref(op->u.point.fut);
    gaio_stream *s = op->stream;
    if (op->cached) gaio__op_block_put(op);
    else free(op);
    if (!owns) return;
    if (b) b->stream_refs++;
    else gaio__stream_unref(s);
}

void gaio__retire_batch_begin(gaio_retire_batch *b, gaio_stream *s, size_t n) {
    *b = (gaio_retire_batch){.stream = s};
    if (n) atomic_fetch_add_explicit(&s->retired, n, memory_order_release);
}

void gaio__retire_batch_end(gaio_retire_batch *b) {
    if (b->kernel) gaio__kernel_unref_n(b->kernel, b->kernel_refs);
    gaio__stream_unref_n(b->stream, b->stream_refs);
    *b = (gaio_retire_batch){0};
}

void gaio__op_retire_in(gaio_op *op, gaio_retire_batch *b) { op_release_refs(op, b); }

void gaio__op_discard(gaio_op *op) { op_release_refs(op, NULL); }

GAIO_HOT_TLS const char *gaio__submitting_fn = "gaio_submit";

gaio_status gaio__submit_from(const char *fn, gaio_op *op) {
    gaio_stream *s = op->stream;
    gaio__submitting_fn = fn;
    atomic_fetch_add_explicit(&s->submitted, 1, memory_order_relaxed);
    const gaio_backend *be = s->ctx->be;
    bool deferred = s->flags & GAIO_STREAM_DEFERRED;
    /* The caller's references cover the op only until this call returns. */
    if (deferred || !be->covers_ops) gaio__op_hold_refs(op);
    gaio_status st = deferred ? gaio__submitter_push(s->ctx->device, op) : be->submit(op);
    if (st != GAIO_OK) {
        /* Nothing was enqueued: undo the count so queries stay truthful, and complete
         * a record's future (an event may already point at it) so nothing waits forever. */
        atomic_fetch_sub_explicit(&s->submitted, 1, memory_order_relaxed);
        if (op->kind == GAIO_OP_RECORD) gaio__future_complete(op->u.point.fut, st, gaio_last_error());
        gaio__op_discard(op);
    }
    return st;
}

void gaio__op_count_done(gaio_op *op) {
    if (op->counted) return;
    op->counted = true;
    atomic_fetch_add_explicit(&op->stream->retired, 1, memory_order_release);
}

gaio_status gaio__op_call_native(gaio_op *op, void *native_stream, gaio_status status, char *msg) {
    gaio_status r = op->u.native.fn(native_stream, status, op->u.native.user);
    if (r == GAIO_OK || status != GAIO_OK) return GAIO_OK; /* the first failure sticks */
    snprintf(msg, GAIO_MSG_MAX, "%s: the native function returned %s", op->u.native.fn_name, gaio_status_string(r));
    return r;
}

void gaio__op_copy_on_host(const gaio_op *op) {
    for (size_t r = 0; r < op->u.copy.height; r++)
        memmove(op->u.copy.dst + r * op->u.copy.dpitch, op->u.copy.src + r * op->u.copy.spitch, op->u.copy.width);
}

void gaio__op_fill_on_host(const gaio_op *op) {
    for (size_t r = 0; r < op->u.fill.height; r++)
        memset(op->u.fill.dst + r * op->u.fill.pitch, op->u.fill.value, op->u.fill.width);
}

void gaio__op_retire(gaio_op *op) {
    gaio__op_count_done(op);
    op_release_refs(op, NULL);
}

void gaio__op_abandon(gaio_op *op, gaio_status status, const char *msg) {
    gaio__stream_fail(op->stream, status, "%s", msg);
    char buf[GAIO_MSG_MAX];
    gaio__stream_fail_msg(op->stream, buf);
    gaio_status st = gaio__stream_status(op->stream);
    if (op->kind == GAIO_OP_RECORD) {
        gaio__op_count_done(op);
        gaio__future_complete(op->u.point.fut, st, buf);
    }
    if (op->kind == GAIO_OP_HOST_FN) (void)op->u.host.fn(st, op->u.host.user);
    if (op->kind == GAIO_OP_NATIVE) (void)gaio__op_call_native(op, op->stream->native, st, buf);
    gaio__op_retire(op);
}
