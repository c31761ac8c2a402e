/* The native interface: what gaio's library layers (dnn; later model and comm) may
 * reach of a backend's native side, so that a layer that calls a vendor library
 * (cuDNN, cuBLAS, NCCL) on a gaio stream never includes a backend's headers or reads
 * its state. It is the whole contract between such a layer and a backend:
 *
 *   - native work in stream order: gaio__enqueue_native_held (below);
 *   - the native stream of a gaio stream, the native context of a gaio context
 *     (CUstream, CUcontext on CUDA), as opaque pointers;
 *   - entering a context: its native context made current on this thread for a span;
 *   - the backend's driver: its entry points looked up by name (once; a layer keeps
 *     its own typed table of the few it calls), and its failures turned into statuses;
 *   - the backend's exclusive section (CUDA: stream captures, process-wide);
 *   - memory that follows the context's rules, for state that cannot be a buffer.
 *
 * Rules:
 *   - A layer includes this header, core headers and its vendors' headers; never one
 *     under src/cuda, src/cpu or another layer's internals.
 *   - The enqueue and the native stream are the core's own, pool memory is the
 *     context's pool (core/pool.h); the rest dispatches through the backend table's
 *     `native` entry (core/backend.h, core/native_backend.h). Where a backend has no
 *     native side (the host's) each function says what it answers: nothing to enter,
 *     no native context, no entry points.
 *   - Lookups (gaio__native_proc) are made once and kept, never on an op's path.
 *   - Every native call's failure becomes a gaio_status whose message names the call
 *     (gaio__native_fail).
 *   - Arguments are not checked (callers are gaio's own code), but for memory kinds. */
#ifndef GAIO_CORE_NATIVE_H
#define GAIO_CORE_NATIVE_H

#include <stdbool.h>
#include <stddef.h>

#include "gaio/buffer.h"
#include "gaio/device.h"
#include "gaio/stream.h"

/* ---- native work in stream order ---- */

/* Like gaio_enqueue_native(stream, fn, user), but holds a reference to each of the
 * nheld buffers in held (NULL entries are skipped) until the device work fn enqueued
 * has run: the op retires after it, like a launch, and drops them then. The caller's
 * references stay the caller's: it may release them as soon as this returns. fn_name
 * (a string that outlives the op, usually a literal) names the public function in
 * every failure message, at submission and when fn fails the stream. On failure
 * nothing was enqueued and fn is never called. On CUDA fn runs under the stream's
 * submission lock with the device's context current. */
gaio_status gaio__enqueue_native_held(const char *fn_name, gaio_stream *stream, gaio_native_fn fn, void *user,
                                      gaio_buffer *const *held, size_t nheld);

/* ---- native handles ---- */

/* The stream's native stream (CUstream; NULL on the host), fixed for its life: the
 * one gaio_native_fn receives. */
void *gaio__native_stream(gaio_stream *stream);
/* The context's native context (CUDA: the device's primary CUcontext, retained while
 * the gaio context lives), NULL on the host. */
void *gaio__native_context(gaio_context *ctx);

/* ---- entering a context ---- */

/* Filled by gaio__native_enter, passed to gaio__native_exit; the backend's. */
typedef struct gaio__native_scope {
    const struct gaio_native_ops *ops;
    void *saved;
    bool switched;
} gaio__native_scope;

/* Makes ctx's native context current on this thread until gaio__native_exit(sc),
 * which puts back whatever the caller had current. For native calls made outside a
 * native function (which runs with it current already): on a user's thread, at plan
 * time, in a state's destructor. On the host: GAIO_OK, and nothing to undo. A failure
 * names fn; then there is nothing to exit. */
gaio_status gaio__native_enter(const char *fn, gaio_context *ctx, gaio__native_scope *sc);
void gaio__native_exit(gaio__native_scope *sc);

/* ---- the backend's driver ---- */

/* Any entry point, to be cast to its real type. */
typedef void (*gaio__native_proc_fn)(void);

/* The entry point of the backend of device kind `kind` called `name` (CUDA: a driver
 * function by its base name, "cuMemsetD8Async", at the ABI version of cuda.h's
 * prototype of that name: cast it to __typeof__(&cuMemsetD8Async)), or NULL when the
 * backend has no driver, no such function or no driver was found. Only functions the
 * backend resolved for itself are offered: a layer that needs another asks for it to
 * be added to the backend's list (CUDA: cuda/driver.h). Look up once and keep it. */
gaio__native_proc_fn gaio__native_proc(gaio_device_kind kind, const char *name);

/* A failed driver call (result: its return code, a CUresult on CUDA) as the status
 * the backend gives it (on CUDA: GAIO_ERR_DEVICE for faults that poison the context,
 * GAIO_ERR_NO_MEMORY, ... else GAIO_ERR_DRIVER; GAIO_ERR_DRIVER where the backend has
 * no driver), with the thread's message naming fn and the call: "fn: call failed:
 * NAME (description)". */
gaio_status gaio__native_fail(gaio_device_kind kind, const char *fn, const char *call, int result);

/* ---- the exclusive section ---- */

/* Work that would break a stream capture of another thread (on CUDA: anything that
 * may synchronize the device, such as destroying a cuDNN or cuBLAS handle or running
 * cuDNN's tuning candidates) runs between begin and end: captures of the backend's
 * streams and such sections exclude each other process-wide. A thread that is
 * capturing goes ahead (its own capture cannot wait for it). A thread in a section
 * must not begin another; keep them short. No-ops where the backend has no captures. */
void gaio__native_exclusive_begin(gaio_device_kind kind);
void gaio__native_exclusive_end(gaio_device_kind kind);

/* ---- memory that follows the context's rules ---- */

/* A block of the context's pool (core/pool.h): the context's device and allocator,
 * cached and reused like a buffer's memory, counted in gaio_context_pool_stats. */
typedef struct gaio__native_mem {
    void *ptr;          /* NULL when empty */
    size_t size;        /* the block's size: at least what was asked for */
    gaio_mem_kind kind;
} gaio__native_mem;

/* For a layer's state that hangs off the context or one of its streams and so cannot
 * be a buffer: a buffer holds a reference to its context, and a context's (or its
 * default stream's) state that held one would keep the context alive forever. So the
 * block holds nothing: its owner frees it with gaio__native_mem_free before the
 * context's pools go, i.e. at the latest in a stream's or the context's extension
 * destructor (core/stream_ext.h, core/context_ext.h), and only once no work in flight
 * uses it: a freed block may be handed to any stream's next allocation at once. What
 * names the block's use in the failure message ("the stream's workspace"); fn names
 * the public function. Safe on any thread, also inside a native function (under the
 * stream's submission lock, while a stream of the context is being captured). */
gaio_status gaio__native_mem_alloc(const char *fn, const char *what, gaio_context *ctx, gaio_mem_kind kind,
                                   size_t size, gaio__native_mem *out);
/* Frees m's block (none: nothing) and empties m. */
void gaio__native_mem_free(gaio_context *ctx, gaio__native_mem *m);

#endif
