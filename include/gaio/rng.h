/* gaio — counter-based random numbers (Philox4x32-10).
 *
 * Element i of a fill draws from Philox4x32-10 with key = seed and counter =
 * offset + i / 4 (word i % 4), so the numbers depend only on (seed, offset, i):
 * every backend gives the same uniform numbers bit for bit, and normal numbers
 * (Box-Muller) equal to within float rounding of log/sin/cos. The context's
 * generator hands each fill the current offset and advances it by the counters
 * used, ceil(count / 4), at submission. */
#ifndef GAIO_RNG_H
#define GAIO_RNG_H

#include "gaio/status.h"
#include "gaio/types.h"

#ifdef __cplusplus
extern "C" {
#endif

gaio_status gaio_rng_set_state(gaio_context *ctx, uint64_t seed, uint64_t offset);
gaio_status gaio_rng_get_state(gaio_context *ctx, uint64_t *seed, uint64_t *offset);

/* `count` floats in [low, high) written at dst + offset_bytes. */
gaio_status gaio_rng_uniform_f32(gaio_stream *stream, gaio_buffer *dst, size_t offset_bytes, size_t count, float low,
                                 float high);
/* `count` floats from N(mean, stddev^2). */
gaio_status gaio_rng_normal_f32(gaio_stream *stream, gaio_buffer *dst, size_t offset_bytes, size_t count, float mean,
                                float stddev);
/* `count` raw 32-bit words. */
gaio_status gaio_rng_bits_u32(gaio_stream *stream, gaio_buffer *dst, size_t offset_bytes, size_t count);

/* The generator itself, for reference and host use: one Philox4x32-10 block. */
void gaio_philox4x32_10(const uint32_t counter[4], const uint32_t key[2], uint32_t out[4]);

#ifdef __cplusplus
}
#endif
#endif
