/* gaio — contexts: per-device state.
 *
 * A context owns a default stream, a memory pool per memory kind and a Philox
 * random-number generator (seed, offset). Many contexts may share one device.
 * A context lives while the user holds it or anything made from it (streams,
 * buffers, events, work in flight) is alive: releasing a context with work
 * pending lets that work finish and complete its futures normally. */
#ifndef GAIO_CONTEXT_H
#define GAIO_CONTEXT_H

#include "gaio/status.h"
#include "gaio/types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gaio_context_options {
    /* Bytes of freed memory each pool keeps cached for reuse before it gives
     * memory back to the system. 0: the default (64 MiB). */
    size_t pool_release_threshold;
    uint64_t rng_seed; /* initial seed of the context's generator */
} gaio_context_options;

/* options may be NULL for the defaults. */
gaio_status gaio_context_create(int device, const gaio_context_options *options, gaio_context **out);
gaio_status gaio_context_retain(gaio_context *ctx);
gaio_status gaio_context_release(gaio_context *ctx);

gaio_status gaio_context_device(const gaio_context *ctx, int *device);

/* The context's default stream (borrowed: valid while ctx is). Priority 0, no flags. */
gaio_status gaio_context_default_stream(gaio_context *ctx, gaio_stream **stream);

/* Blocks until every stream of the context has drained; returns the first error
 * a stream of the context saw, if any. */
gaio_status gaio_context_synchronize(gaio_context *ctx);

/* Gives cached pool memory back to the system, keeping at most `keep` bytes. */
gaio_status gaio_context_trim(gaio_context *ctx, size_t keep);

typedef struct gaio_pool_stats {
    size_t bytes_in_use;   /* handed out and not yet returned */
    size_t bytes_cached;   /* returned, kept for reuse */
    uint64_t allocations;  /* served from the pool */
    uint64_t reuses;       /* of those, served from cached blocks */
} gaio_pool_stats;

/* mem_kind is a gaio_mem_kind (gaio/buffer.h). */
gaio_status gaio_context_pool_stats(gaio_context *ctx, int mem_kind, gaio_pool_stats *stats);

#ifdef __cplusplus
}
#endif
#endif
