/* Ops: the unit of work the core hands to a backend. An op owns references to
 * its buffers and future, and, unless its backend keeps them alive for it
 * (gaio_backend.covers_ops), to its stream and kernel; gaio__op_retire drops them
 * once the stream has passed the op. */
#ifndef GAIO_CORE_OP_H
#define GAIO_CORE_OP_H

#include "core/hot.h"
#include "core/mpsc.h"
#include "core/object.h"

typedef enum gaio_op_kind {
    GAIO_OP_COPY,    /* 2D copy; 1D is height 1 */
    GAIO_OP_FILL,    /* 2D memset; 1D is height 1 */
    GAIO_OP_LAUNCH,
    GAIO_OP_HOST_FN,
    GAIO_OP_RECORD,  /* completes a future when reached: events and fences */
    GAIO_OP_WAIT,    /* holds the stream until a future completes */
    GAIO_OP_RELEASE, /* does nothing but hold its buffers until the stream gets there */
    GAIO_OP_NATIVE   /* gaio_enqueue_native: the caller's own device work (or host work on the host) */
} gaio_op_kind;

struct gaio_op {
    struct gaio_op *next; /* a backend's queue link */
    gaio_mpsc_node mq;    /* the deferred-submission queue's link */
    gaio_op_kind kind;
    gaio_stream *stream;
    bool counted; /* already counted in stream->retired (gaio__op_count_done) */
    bool owns_refs; /* holds references to its stream and (LAUNCH) kernel: gaio__op_hold_refs */
    bool cached;  /* its memory goes back to the op cache (core/op_cache.h) */
    void *be; /* the backend's op_space bytes, zeroed, freed with the op */ /* host functions on CUDA: set by whoever calls fn (the driver's thread or a fault) */
    size_t nbufs;
    gaio_buffer **bufs;
    union {
        struct {
            char *dst;
            const char *src;
            size_t dpitch, spitch, width, height;
        } copy;
        struct {
            char *dst;
            size_t pitch, width, height;
            int value;
        } fill;
        struct {
            gaio_kernel *kernel;
            gaio_launch_info info;
            void **argv; /* argv[i] points into the op's trailing storage */
        } launch;
        struct {
            gaio_host_fn fn;
            void *user;
        } host;
        struct {
            gaio_future *fut;
            bool own_message; /* WAIT: a failure of fut fails the stream with fut's message as it is
                                 (a collective's), not as an event's stream's */
        } point; /* RECORD and WAIT */
        struct {
            gaio_native_fn fn;
            void *user;
            const char *fn_name; /* the public function, for failure messages */
        } native;
    } u;
};

/* One allocation: the op, room for nbufs buffer references and `extra` bytes
 * (returned in *extra_out). Takes no reference on stream: the caller's covers the
 * op until it is submitted, and gaio__submit takes one where the backend needs it. */
gaio_op *gaio__op_new(gaio_op_kind kind, gaio_stream *stream, size_t nbufs, size_t extra, void **extra_out);
/* Makes the op hold references to its stream and (LAUNCH) kernel until it retires,
 * once: for an op that outlives the submitting call outside its backend's cover
 * (queued for the deferred-submission thread, held back by a blocked stream). */
void gaio__op_hold_refs(gaio_op *op);
/* Adds a buffer reference to slot i. */
void gaio__op_hold_buffer(gaio_op *op, size_t i, gaio_buffer *buf);
/* Frees an op that was never submitted. */
void gaio__op_discard(gaio_op *op);

/* Hands the op to the stream's backend, directly or through the device's
 * deferred-submission thread. On failure the op is discarded. */
gaio_status gaio__submit_from(const char *fn, gaio_op *op);
#define gaio__submit(op) gaio__submit_from(__func__, (op))
/* The public function submitting on this thread, for backends' messages. */
extern GAIO_HOT_TLS const char *gaio__submitting_fn;

/* Counts the op as finished for gaio_stream_query (once). A RECORD op calls this
 * before it completes its future, so that whoever wakes on that future (e.g.
 * gaio_stream_synchronize) already sees every op up to it finished. */
void gaio__op_count_done(gaio_op *op);

/* Calls a NATIVE op's fn with native_stream and the stream's status (passed in: the
 * CUDA backend knows of failures the stream records only later). A failure fn returns
 * on a stream that had none comes back, with its message in msg (GAIO_MSG_MAX bytes)
 * for the caller to fail the stream with at the op's turn; otherwise GAIO_OK. */
gaio_status gaio__op_call_native(gaio_op *op, void *native_stream, gaio_status status, char *msg);

/* A COPY or FILL done by the host, row by row (host-addressable memory only). */
void gaio__op_copy_on_host(const gaio_op *op);
void gaio__op_fill_on_host(const gaio_op *op);

/* The stream has passed the op: count it (if not yet) and drop its references. */
void gaio__op_retire(gaio_op *op);

/* Retiring n ops of one stream together (the CUDA engine retires what one ticket
 * covers): begin counts all n as finished for gaio_stream_query at once, so do it
 * before any of them completes a future; each op then retires in the batch, whose
 * end drops the stream's and kernels' references the ops own in one step each. The
 * caller keeps the stream alive until the end. */
typedef struct gaio_retire_batch {
    gaio_stream *stream;
    long stream_refs;
    gaio_kernel *kernel; /* the current run of launches of one kernel */
    long kernel_refs;
} gaio_retire_batch;
/* The caller marks each op `counted` first. */
void gaio__retire_batch_begin(gaio_retire_batch *b, gaio_stream *s, size_t n);
void gaio__op_retire_in(gaio_op *op, gaio_retire_batch *b);
void gaio__retire_batch_end(gaio_retire_batch *b);

/* The op cannot run (its submission failed, or the stream failed earlier): fail
 * the stream with status, complete a RECORD's future with the failure, call a
 * host or native function with it, then retire. */
void gaio__op_abandon(gaio_op *op, gaio_status status, const char *msg);

/* May ops on stream s touch buffer b? DEVICE memory must be the stream's device's,
 * or (GAIO_REACH_PEER: copies) another device of the same kind. HOST (pageable)
 * memory only where the host does the work or the driver stages it
 * (GAIO_REACH_PAGEABLE: copies and fills), never in kernels. */
enum { GAIO_REACH_PEER = 1u << 0, GAIO_REACH_PAGEABLE = 1u << 1 };
/* The same rule without a message, for hot paths. */
static inline bool gaio__reachable(const gaio_buffer *b, const gaio_stream *s, unsigned how) {
    if (b->kind == GAIO_MEM_HOST && !(how & GAIO_REACH_PAGEABLE)) return false;
    if (b->kind != GAIO_MEM_DEVICE || b->ctx->device == s->ctx->device) return true;
    return (how & GAIO_REACH_PEER) && b->ctx->be == s->ctx->be;
}
gaio_status gaio__check_reach(const char *fn, const char *what, const gaio_buffer *b, const gaio_stream *s,
                              unsigned how);

#endif
