#ifndef GAIO_CORE_STREAM_INTERNAL_H
#define GAIO_CORE_STREAM_INTERNAL_H

#include "core/object.h"

/* Makes a stream of ctx. The default stream shares its context's reference count
 * (it holds no reference on ctx, and is destroyed with it). */
gaio_status gaio__stream_new(gaio_context *ctx, int priority, unsigned flags, void *native, bool is_default,
                             gaio_stream **out);
void gaio__stream_destroy(gaio_stream *s);

/* Checks that a stream argument is usable: not NULL. */
#define GAIO_REQUIRE_STREAM(s) GAIO_REQUIRE_PTR(s)

#endif
