/* Per-stream extension slots: state a layer above the core keeps per stream (the dnn
 * layer's cuDNN and cuBLAS handles, its workspace), made lazily on first use, read
 * lock-free on every op, and freed with the stream. The core knows nothing of what
 * the slots hold. */
#ifndef GAIO_CORE_STREAM_EXT_H
#define GAIO_CORE_STREAM_EXT_H

#include "gaio/types.h"

/* One key per layer; keys are fixed at build time, so a slot is an array index. */
enum { GAIO_STREAM_EXT_DNN = 0, GAIO_STREAM_EXT_COUNT = 4 };

/* Frees a slot's value when its stream is destroyed. It runs exactly once per published
 * value, when the last reference to the stream is gone, so every op of the stream has
 * completed (retired) by then, on whichever thread dropped that reference: the user's,
 * or one of gaio's (a CPU worker, the CUDA completion thread, the submission thread),
 * so it must not block for long. It runs after the stream left its context's list and
 * before the backend tears the stream down: on CUDA the stream's CUstream is still
 * valid (cudnnDestroy of a handle bound to it may synchronize it). No device context
 * is made current for it: a dtor that needs one makes the stream's device's current
 * itself (gaio__native_enter, core/native.h). It must not submit to, retain or
 * query the stream. A value must not hold what keeps the stream alive: a reference to
 * the stream, or, on a context's default stream (which shares its context's count), a
 * reference to the context, which every buffer of the context holds; such a value
 * would never be freed. */
typedef void (*gaio_stream_ext_dtor)(void *value, gaio_stream *stream);

/* The value published under key, or NULL if none is yet. Lock-free (an acquire load:
 * what the publisher wrote before publishing is visible). The caller holds a reference
 * to s, as for any use of a stream. */
void *gaio__stream_ext_get(gaio_stream *s, int key);

/* Publishes value under key if the slot is empty, with dtor (may be NULL) to free it
 * when the stream is destroyed, and returns it. If the slot holds a value already (another
 * thread won the race), returns that one instead: the caller then frees its own value,
 * which gaio never sees again. value must not be NULL. Both return NULL for a key out of
 * range (or a NULL value): a bug of the caller's. */
void *gaio__stream_ext_set(gaio_stream *s, int key, void *value, gaio_stream_ext_dtor dtor);

#endif
