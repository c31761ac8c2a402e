/* gaio — streams: in-order queues of work on one device.
 *
 * Ops submitted to one stream run in submission order; ops of different streams
 * are unordered unless ordered through events. Submission never waits for the
 * device. If an op fails, the stream is failed: later ops are skipped (host and
 * native functions are still called, with the failure, so they can clean up), every
 * later future and event of the stream completes with that status, and
 * gaio_stream_synchronize returns it. The failure is sticky; make a new stream. */
#ifndef GAIO_STREAM_H
#define GAIO_STREAM_H

#include "gaio/status.h"
#include "gaio/types.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
    /* Submission goes through a per-device runtime thread fed by a lock-free queue:
     * the calling thread only validates and appends (the async-cuda model). Order and
     * error reporting are the same as for inline submission, the default. */
    GAIO_STREAM_DEFERRED = 1u << 0
};

/* priority: 0 (normal) .. gaio_device_props.max_priority (most urgent). */
gaio_status gaio_stream_create(gaio_context *ctx, int priority, unsigned flags, gaio_stream **out);

/* Wraps a foreign native stream (a CUstream / cudaStream_t from PyTorch, CuPy or
 * your code) that gaio uses but never destroys. The caller keeps it alive while
 * the gaio stream lives. Only on CUDA devices. Its priority is the native one on
 * gaio's scale (CUDA's least priority minus the stream's, clamped to 0 ..
 * max_priority): gaio_stream_priority reports it. The legacy default stream is
 * passed as CU_STREAM_LEGACY ((void *)1), not NULL; it and CU_STREAM_PER_THREAD
 * have priority 0. */
gaio_status gaio_stream_wrap(gaio_context *ctx, void *native_stream, unsigned flags, gaio_stream **out);

gaio_status gaio_stream_retain(gaio_stream *stream);
gaio_status gaio_stream_release(gaio_stream *stream);

/* The native handle (CUstream on CUDA). NULL on the host. */
gaio_status gaio_stream_native(gaio_stream *stream, void **native);
gaio_status gaio_stream_priority(gaio_stream *stream, int *priority);
gaio_status gaio_stream_flags(gaio_stream *stream, unsigned *flags);
/* Borrowed. */
gaio_status gaio_stream_context(gaio_stream *stream, gaio_context **ctx);

/* GAIO_OK when every op submitted so far has finished successfully,
 * GAIO_ERR_NOT_READY while some run, or the stream's failure. Never blocks. */
gaio_status gaio_stream_query(gaio_stream *stream);

/* Blocks until every op submitted so far has finished; returns the stream's failure if any. */
gaio_status gaio_stream_synchronize(gaio_stream *stream);

/* Host functions run in stream order on a gaio thread, exactly once each, with the
 * stream's status at that point (GAIO_OK, or the failure that skipped earlier work).
 * A return value other than GAIO_OK fails the stream. They must not block for long
 * nor wait on work of their own stream. */
typedef gaio_status (*gaio_host_fn)(gaio_status stream_status, void *user);
gaio_status gaio_launch_host_func(gaio_stream *stream, gaio_host_fn fn, void *user);

/* Native work in stream order. fn(native_stream, stream_status, user) is called exactly once
 * when the stream reaches this point of submission order: with the stream's device context
 * current, on the thread that hands the stream's work to the device (the caller's for plain
 * streams, gaio's submission thread for DEFERRED ones, or later, when the stream is held behind
 * host work). There fn enqueues device work of its own on native_stream (a cuBLAS or cuDNN call,
 * a foreign kernel) and returns without blocking; later ops of the stream run after that work.
 * On the host backend native_stream is NULL and fn is the work itself: it runs on a worker in
 * stream order, like a host kernel. stream_status is the stream's failure if an earlier op
 * failed (fn must then enqueue nothing, only clean up). A return other than GAIO_OK fails the
 * stream with that status.
 * On a CUDA device fn runs while gaio holds the stream's submission lock: it must not submit
 * work to its own stream nor wait for it. If gaio_enqueue_native fails, fn is never called. */
typedef gaio_status (*gaio_native_fn)(void *native_stream, gaio_status stream_status, void *user);
gaio_status gaio_enqueue_native(gaio_stream *stream, gaio_native_fn fn, void *user);

#ifdef __cplusplus
}
#endif
#endif
