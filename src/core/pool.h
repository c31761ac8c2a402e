/* A caching allocator with size classes over a backend's raw allocator.
 * Freed blocks wait in per-class stacks for reuse until the cache would pass
 * the release threshold; then memory goes straight back to the backend. */
#ifndef GAIO_CORE_POOL_H
#define GAIO_CORE_POOL_H

#include <pthread.h>

#include "core/backend.h"

#define GAIO_POOL_CLASSES 96

typedef struct gaio_pool_stack {
    void **ptrs;
    size_t len, cap;
} gaio_pool_stack;

typedef struct gaio_pool {
    pthread_mutex_t lock;
    gaio_context *ctx;
    gaio_mem_kind kind;
    size_t threshold;
    gaio_pool_stats stats;
    gaio_pool_stack classes[GAIO_POOL_CLASSES];
} gaio_pool;

void gaio__pool_init(gaio_pool *pool, gaio_context *ctx, gaio_mem_kind kind, size_t threshold);
void gaio__pool_fini(gaio_pool *pool);
/* *rounded receives the block's real size, to hand back to gaio__pool_free. */
gaio_status gaio__pool_alloc(gaio_pool *pool, size_t size, void **ptr, size_t *rounded);
void gaio__pool_free(gaio_pool *pool, void *ptr, size_t rounded);
void gaio__pool_trim(gaio_pool *pool, size_t keep);
void gaio__pool_stats(gaio_pool *pool, gaio_pool_stats *stats);

#endif
