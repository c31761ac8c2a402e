#include <math.h>

#include "core/builtin_kernels.h"
#include "core/op.h"
#include "core/philox.h"

void gaio_philox4x32_10(const uint32_t counter[4], const uint32_t key[2], uint32_t out[4]) {
    if (!counter || !key || !out) return;
    gaio__philox_block(counter, key, out);
}

gaio_status gaio_rng_set_state(gaio_context *ctx, uint64_t seed, uint64_t offset) {
    GAIO_REQUIRE_PTR(ctx);
    pthread_mutex_lock(&ctx->lock);
    ctx->rng_seed = seed;
    ctx->rng_offset = offset;
    pthread_mutex_unlock(&ctx->lock);
    return GAIO_OK;
}

gaio_status gaio_rng_get_state(gaio_context *ctx, uint64_t *seed, uint64_t *offset) {
    GAIO_REQUIRE_PTR(ctx);
    GAIO_REQUIRE(seed || offset, "seed and offset are both NULL");
    pthread_mutex_lock(&ctx->lock);
    if (seed) *seed = ctx->rng_seed;
    if (offset) *offset = ctx->rng_offset;
    pthread_mutex_unlock(&ctx->lock);
    return GAIO_OK;
}

/* Validates a fill of count 4-byte elements and reserves its counters. */
static gaio_status rng_prepare(const char *fn, gaio_stream *stream, gaio_buffer *dst, size_t offset_bytes,
                               size_t count, uint64_t *seed, uint64_t *offset) {
    if (!stream) return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "stream is NULL");
    if (!dst) return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "dst is NULL");
    if (count == 0) return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "count is 0");
    size_t bytes;
    if (!gaio__mul_ok(count, 4, &bytes) || !gaio__range_ok(offset_bytes, bytes, dst->size))
        return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "%zu elements of 4 bytes at offset %zu exceed dst's %zu bytes",
                          count, offset_bytes, dst->size);
    if (offset_bytes % 4)
        return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "offset_bytes %zu is not a multiple of 4", offset_bytes);
    gaio_status st = gaio__check_reach(fn, "dst", dst, stream, 0);
    if (st != GAIO_OK) return st;
    gaio_context *ctx = stream->ctx;
    pthread_mutex_lock(&ctx->lock);
    *seed = ctx->rng_seed;
    *offset = ctx->rng_offset;
    ctx->rng_offset += (uint64_t)(count / 4 + (count % 4 != 0));
    pthread_mutex_unlock(&ctx->lock);
    return GAIO_OK;
}

static gaio_status rng_launch(gaio_stream *stream, const char *name, gaio_buffer *dst, size_t offset_bytes,
                              uint64_t count, uint64_t seed, uint64_t offset, const float *params, size_t nparams) {
    gaio_kernel *k;
    gaio_status st = gaio__kernel_builtin(name, &k);
    if (st != GAIO_OK) return st;
    gaio_arg args[6] = {GAIO_ARG_BUFFER_AT(dst, offset_bytes), GAIO_ARG(count), GAIO_ARG(seed), GAIO_ARG(offset)};
    for (size_t i = 0; i < nparams; i++) args[4 + i] = (gaio_arg){&params[i], sizeof(float), NULL, 0};
    uint64_t blocks = (count + 4 * 256 - 1) / (4 * 256); /* one thread per Philox block of 4 words */
    gaio_dim3 grid = {(uint32_t)(blocks < 0x7fffffffu ? blocks : 0x7fffffffu), 1, 1}, block = {256, 1, 1};
    st = gaio_launch(stream, k, grid, block, 0, args, 4 + nparams);
    gaio__kernel_unref(k);
    return st;
}

gaio_status gaio_rng_uniform_f32(gaio_stream *stream, gaio_buffer *dst, size_t offset_bytes, size_t count, float low,
                                 float high) {
    GAIO_REQUIRE(isfinite(low) && isfinite(high) && low < high, "[low, high) = [%g, %g) is not a finite, non-empty "
                 "interval", (double)low, (double)high);
    GAIO_REQUIRE(isfinite(high - low), "[low, high) = [%g, %g) is wider than the largest float", (double)low,
                 (double)high);
    uint64_t seed = 0, offset = 0;
    gaio_status st = rng_prepare(__func__, stream, dst, offset_bytes, count, &seed, &offset);
    if (st != GAIO_OK) return st;
    const float p[2] = {low, high};
    return rng_launch(stream, "gaio_philox_uniform_f32", dst, offset_bytes, count, seed, offset, p, 2);
}

gaio_status gaio_rng_normal_f32(gaio_stream *stream, gaio_buffer *dst, size_t offset_bytes, size_t count, float mean,
                                float stddev) {
    GAIO_REQUIRE(isfinite(mean) && isfinite(stddev) && stddev >= 0, "mean %g, stddev %g: both must be finite and "
                 "stddev >= 0", (double)mean, (double)stddev);
    uint64_t seed = 0, offset = 0;
    gaio_status st = rng_prepare(__func__, stream, dst, offset_bytes, count, &seed, &offset);
    if (st != GAIO_OK) return st;
    const float p[2] = {mean, stddev};
    return rng_launch(stream, "gaio_philox_normal_f32", dst, offset_bytes, count, seed, offset, p, 2);
}

gaio_status gaio_rng_bits_u32(gaio_stream *stream, gaio_buffer *dst, size_t offset_bytes, size_t count) {
    uint64_t seed = 0, offset = 0;
    gaio_status st = rng_prepare(__func__, stream, dst, offset_bytes, count, &seed, &offset);
    if (st != GAIO_OK) return st;
    return rng_launch(stream, "gaio_philox_bits_u32", dst, offset_bytes, count, seed, offset, NULL, 0);
}
