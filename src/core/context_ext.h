/* Per-context extension slots: state a layer above the core keeps per context (the dnn
 * layer's cuDNN plan cache and the handle that builds plans), made lazily on first
 * use, read lock-free, and freed with the context. Like core/stream_ext.h, one fixed
 * key per layer. */
#ifndef GAIO_CORE_CONTEXT_EXT_H
#define GAIO_CORE_CONTEXT_EXT_H

#include "gaio/types.h"

enum { GAIO_CONTEXT_EXT_DNN = 0, GAIO_CONTEXT_EXT_COUNT = 2 };

/* Frees a slot's value when its context is destroyed: exactly once per published value,
 * after every stream of the context (its default one included) is gone and before the
 * backend lets the device go (on CUDA the primary context is still retained, though not
 * current: a dtor that needs it makes it current itself). It runs on whichever thread
 * dropped the last reference, so it must not block for long. A value must not hold a
 * reference to its context (it would never be freed). */
typedef void (*gaio_context_ext_dtor)(void *value, gaio_context *ctx);

/* The value published under key, or NULL. Lock-free (acquire). */
void *gaio__context_ext_get(gaio_context *ctx, int key);

/* Publishes value under key if the slot is empty and returns it; if another thread
 * published first, returns that one (the caller frees its own). NULL for a bad key or
 * value. */
void *gaio__context_ext_set(gaio_context *ctx, int key, void *value, gaio_context_ext_dtor dtor);

#endif
