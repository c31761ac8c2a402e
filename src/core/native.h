/* Native work in stream order for gaio's own layers (dnn, model): gaio_enqueue_native
 * that also keeps buffers alive, and names the calling public function. */
#ifndef GAIO_CORE_NATIVE_H
#define GAIO_CORE_NATIVE_H

#include <stddef.h>

#include "gaio/buffer.h"
#include "gaio/stream.h"

/* Like gaio_enqueue_native(stream, fn, user), but holds a reference to each of the
 * nheld buffers in held (NULL entries are skipped) until the device work fn enqueued
 * has run: the op retires after it, like a launch, and drops them then. The caller's
 * references stay the caller's: it may release them as soon as this returns. fn_name
 * (a string that outlives the op, usually a literal) names the public function in
 * every failure message, at submission and when fn fails the stream. On failure
 * nothing was enqueued and fn is never called. */
gaio_status gaio__enqueue_native_held(const char *fn_name, gaio_stream *stream, gaio_native_fn fn, void *user,
                                      gaio_buffer *const *held, size_t nheld);

#endif
