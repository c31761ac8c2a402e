#include <stdlib.h>

#include "core/object.h"
#include "core/stream_internal.h"

#define DEFAULT_POOL_THRESHOLD ((size_t)64 << 20)

void gaio__context_ref(gaio_context *ctx) { gaio__ref_inc(&ctx->ref); }

static void context_destroy(gaio_context *ctx) {
    gaio__stream_destroy(ctx->default_stream);
    for (int k = 0; k < GAIO_CONTEXT_EXT_COUNT; k++) {
        void *v = atomic_load_explicit(&ctx->ext[k], memory_order_acquire);
        if (v && ctx->ext_dtor[k]) ctx->ext_dtor[k](v, ctx);
    }
    for (int k = 0; k < GAIO_MEM_KIND_COUNT; k++) gaio__pool_fini(&ctx->pools[k]);
    ctx->be->context_fini(ctx);
    gaio__runtime_leave(ctx);
    pthread_mutex_destroy(&ctx->lock);
    free(ctx);
}

void gaio__context_unref(gaio_context *ctx) {
    if (gaio__ref_dec(&ctx->ref)) context_destroy(ctx);
}

void gaio__context_unref_n(gaio_context *ctx, long n) {
    if (n > 0 && gaio__ref_sub(&ctx->ref, n)) context_destroy(ctx);
}

void *gaio__context_ext_get(gaio_context *ctx, int key) {
    if (key < 0 || key >= GAIO_CONTEXT_EXT_COUNT) return NULL;
    return atomic_load_explicit(&ctx->ext[key], memory_order_acquire);
}

void *gaio__context_ext_set(gaio_context *ctx, int key, void *value, gaio_context_ext_dtor dtor) {
    if (key < 0 || key >= GAIO_CONTEXT_EXT_COUNT || !value) return NULL;
    void *expected = NULL;
    if (!atomic_compare_exchange_strong_explicit(&ctx->ext[key], &expected, value, memory_order_acq_rel,
                                                 memory_order_acquire))
        return expected;
    ctx->ext_dtor[key] = dtor;
    return value;
}

gaio_status gaio_context_create(int device, const gaio_context_options *options, gaio_context **out) {
    GAIO_REQUIRE_PTR(out);
    *out = NULL;
    const gaio_backend *be;
    int ordinal;
    gaio_status st = gaio__device_backend(device, &be, &ordinal);
    if (st != GAIO_OK) return st;
    gaio_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return GAIO_FAIL(GAIO_ERR_NO_MEMORY, "out of host memory for the context");
    gaio__ref_init(&ctx->ref);
    for (int k = 0; k < GAIO_CONTEXT_EXT_COUNT; k++) atomic_init(&ctx->ext[k], NULL);
    ctx->device = device;
    ctx->be = be;
    pthread_mutex_init(&ctx->lock, NULL);
    st = gaio__runtime_enter(ctx);
    if (st != GAIO_OK) {
        pthread_mutex_destroy(&ctx->lock);
        free(ctx);
        return st;
    }
    size_t threshold = options && options->pool_release_threshold ? options->pool_release_threshold
                                                                   : DEFAULT_POOL_THRESHOLD;
    for (int k = 0; k < GAIO_MEM_KIND_COUNT; k++) gaio__pool_init(&ctx->pools[k], ctx, (gaio_mem_kind)k, threshold);
    ctx->rng_seed = options ? options->rng_seed : 0;
    st = be->context_init(ctx);
    if (st == GAIO_OK) {
        st = gaio__stream_new(ctx, 0, 0, NULL, true, &ctx->default_stream);
        if (st != GAIO_OK) be->context_fini(ctx);
    }
    if (st != GAIO_OK) {
        for (int k = 0; k < GAIO_MEM_KIND_COUNT; k++) gaio__pool_fini(&ctx->pools[k]);
        gaio__runtime_leave(ctx);
        pthread_mutex_destroy(&ctx->lock);
        free(ctx);
        return st;
    }
    *out = ctx;
    return GAIO_OK;
}

gaio_status gaio_context_retain(gaio_context *ctx) {
    GAIO_REQUIRE_PTR(ctx);
    gaio__context_ref(ctx);
    return GAIO_OK;
}

gaio_status gaio_context_release(gaio_context *ctx) {
    if (ctx) gaio__context_unref(ctx);
    return GAIO_OK;
}

gaio_status gaio_context_device(const gaio_context *ctx, int *device) {
    GAIO_REQUIRE_PTR(ctx);
    GAIO_REQUIRE_PTR(device);
    *device = ctx->device;
    return GAIO_OK;
}

gaio_status gaio_context_default_stream(gaio_context *ctx, gaio_stream **stream) {
    GAIO_REQUIRE_PTR(ctx);
    GAIO_REQUIRE_PTR(stream);
    *stream = ctx->default_stream;
    return GAIO_OK;
}

gaio_status gaio_context_synchronize(gaio_context *ctx) {
    GAIO_REQUIRE_PTR(ctx);
    /* Take the live streams under the lock (a stream whose last reference is going
     * is skipped: nothing of it is in flight), fence and wait outside it. */
    pthread_mutex_lock(&ctx->lock);
    size_t cap = 0;
    for (gaio_stream *s = ctx->streams; s; s = s->next) cap++;
    gaio_stream **live = malloc((cap ? cap : 1) * sizeof *live);
    size_t n = 0;
    for (gaio_stream *s = ctx->streams; s && live; s = s->next) {
        if (s->is_default)
            gaio__context_ref(ctx);
        else if (!gaio__ref_try_inc(&s->ref))
            continue;
        live[n++] = s;
    }
    pthread_mutex_unlock(&ctx->lock);
    if (!live) return GAIO_FAIL(GAIO_ERR_NO_MEMORY, "out of host memory");
    gaio_status first = GAIO_OK;
    for (size_t i = 0; i < n; i++) {
        gaio_status r = gaio_stream_synchronize(live[i]);
        if (r != GAIO_OK && first == GAIO_OK) first = r; /* its message is already this thread's */
        gaio__stream_unref(live[i]);
    }
    free(live);
    return first;
}

gaio_status gaio_context_trim(gaio_context *ctx, size_t keep) {
    GAIO_REQUIRE_PTR(ctx);
    for (int k = 0; k < GAIO_MEM_KIND_COUNT; k++) gaio__pool_trim(&ctx->pools[k], keep);
    return GAIO_OK;
}

gaio_status gaio_context_pool_stats(gaio_context *ctx, int mem_kind, gaio_pool_stats *stats) {
    GAIO_REQUIRE_PTR(ctx);
    GAIO_REQUIRE_PTR(stats);
    GAIO_REQUIRE(mem_kind >= 0 && mem_kind < GAIO_MEM_KIND_COUNT, "mem_kind %d is not a gaio_mem_kind (0..%d)",
                 mem_kind, GAIO_MEM_KIND_COUNT - 1);
    gaio__pool_stats(&ctx->pools[mem_kind], stats);
    return GAIO_OK;
}
