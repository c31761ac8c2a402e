#include <stdlib.h>

#include "core/object.h"

/* Classes: 256 B, then four per power of two (2^p * {5,6,7,8}/4), up to the
 * largest class; bigger requests bypass the cache. */
#define MIN_CLASS_SHIFT 8

static size_t class_index(size_t size, size_t *class_size) {
    if (size <= ((size_t)1 << MIN_CLASS_SHIFT)) {
        *class_size = (size_t)1 << MIN_CLASS_SHIFT;
        return 0;
    }
    int p = 63 - __builtin_clzll((unsigned long long)(size - 1)); /* 2^p < size <= 2^(p+1) */
    size_t base = (size_t)1 << p, step = base / 4;
    size_t k = (size - base + step - 1) / step; /* 1..4 */
    *class_size = base + k * step;
    return 1 + (size_t)(p - MIN_CLASS_SHIFT) * 4 + (k - 1);
}

void gaio__pool_init(gaio_pool *pool, gaio_context *ctx, gaio_mem_kind kind, size_t threshold) {
    pthread_mutex_init(&pool->lock, NULL);
    pool->ctx = ctx;
    pool->kind = kind;
    pool->threshold = threshold;
}

void gaio__pool_fini(gaio_pool *pool) {
    gaio__pool_trim(pool, 0);
    for (int i = 0; i < GAIO_POOL_CLASSES; i++) free(pool->classes[i].ptrs);
    pthread_mutex_destroy(&pool->lock);
}

gaio_status gaio__pool_alloc(gaio_pool *pool, size_t size, void **ptr, size_t *rounded) {
    size_t cs;
    size_t idx = class_index(size, &cs);
    if (idx >= GAIO_POOL_CLASSES) cs = size;
    pthread_mutex_lock(&pool->lock);
    if (idx < GAIO_POOL_CLASSES && pool->classes[idx].len) {
        *ptr = pool->classes[idx].ptrs[--pool->classes[idx].len];
        pool->stats.allocations++;
        pool->stats.reuses++;
        pool->stats.bytes_cached -= cs;
        pool->stats.bytes_in_use += cs;
        pthread_mutex_unlock(&pool->lock);
        *rounded = cs;
        return GAIO_OK;
    }
    pthread_mutex_unlock(&pool->lock);
    gaio_status st = pool->ctx->be->mem_alloc(pool->ctx, pool->kind, cs, ptr);
    if (st != GAIO_OK) {
        /* Cached blocks of other sizes may be what stands in the way: drop them, retry once. */
        gaio__pool_trim(pool, 0);
        st = pool->ctx->be->mem_alloc(pool->ctx, pool->kind, cs, ptr);
        if (st != GAIO_OK) return st;
    }
    pthread_mutex_lock(&pool->lock);
    pool->stats.allocations++; /* counted once served: a failed request is not an allocation */
    pool->stats.bytes_in_use += cs;
    pthread_mutex_unlock(&pool->lock);
    *rounded = cs;
    return GAIO_OK;
}

void gaio__pool_free(gaio_pool *pool, void *ptr, size_t rounded) {
    size_t cs;
    size_t idx = class_index(rounded, &cs);
    pthread_mutex_lock(&pool->lock);
    pool->stats.bytes_in_use -= rounded;
    if (idx < GAIO_POOL_CLASSES && cs == rounded && pool->stats.bytes_cached + cs <= pool->threshold) {
        gaio_pool_stack *stk = &pool->classes[idx];
        if (stk->len == stk->cap) {
            size_t cap = stk->cap ? stk->cap * 2 : 8;
            void **grown = realloc(stk->ptrs, cap * sizeof *grown);
            if (grown) {
                stk->ptrs = grown;
                stk->cap = cap;
            }
        }
        if (stk->len < stk->cap) {
            stk->ptrs[stk->len++] = ptr;
            pool->stats.bytes_cached += cs;
            pthread_mutex_unlock(&pool->lock);
            return;
        }
    }
    pthread_mutex_unlock(&pool->lock);
    pool->ctx->be->mem_free(pool->ctx, pool->kind, ptr, rounded);
}

static size_t class_bytes(size_t idx) {
    if (idx == 0) return (size_t)1 << MIN_CLASS_SHIFT;
    size_t base = (size_t)1 << (MIN_CLASS_SHIFT + (idx - 1) / 4);
    return base + ((idx - 1) % 4 + 1) * (base / 4);
}

void gaio__pool_trim(gaio_pool *pool, size_t keep) {
    /* Largest classes first: they give back the most per block. */
    for (size_t i = GAIO_POOL_CLASSES; i-- > 0;) {
        size_t cs = class_bytes(i);
        for (;;) {
            pthread_mutex_lock(&pool->lock);
            gaio_pool_stack *stk = &pool->classes[i];
            if (pool->stats.bytes_cached <= keep || stk->len == 0) {
                pthread_mutex_unlock(&pool->lock);
                break;
            }
            void *p = stk->ptrs[--stk->len];
            pool->stats.bytes_cached -= cs;
            pthread_mutex_unlock(&pool->lock);
            pool->ctx->be->mem_free(pool->ctx, pool->kind, p, cs);
        }
    }
}

void gaio__pool_stats(gaio_pool *pool, gaio_pool_stats *stats) {
    pthread_mutex_lock(&pool->lock);
    *stats = pool->stats;
    pthread_mutex_unlock(&pool->lock);
}
