// Philox fills on the GPU: the same mapping as the host kernels in src/cpu
// (src/core/philox.h is shared), so both backends give the same numbers.
#include <stdint.h>

#include "core/philox.h"

// One thread per Philox block of four words, grid-striding past 2^31 blocks.
template <typename Store>
__device__ __forceinline__ void for_each_block(uint64_t count, uint64_t seed, uint64_t offset, Store store) {
    uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t b = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; b * 4 < count; b += stride) {
        uint32_t w[4];
        gaio__philox_words(seed, offset + b, w);
        uint64_t i = b * 4, n = count - i < 4 ? count - i : 4;
        store(i, n, w);
    }
}

extern "C" __global__ void gaio_philox_bits_u32(uint32_t *dst, uint64_t count, uint64_t seed, uint64_t offset) {
    for_each_block(count, seed, offset, [&](uint64_t i, uint64_t n, const uint32_t *w) {
        for (uint64_t j = 0; j < n; j++) dst[i + j] = w[j];
    });
}

extern "C" __global__ void gaio_philox_uniform_f32(float *dst, uint64_t count, uint64_t seed, uint64_t offset,
                                                   float low, float high) {
    float span = high - low;
    for_each_block(count, seed, offset, [&](uint64_t i, uint64_t n, const uint32_t *w) {
        for (uint64_t j = 0; j < n; j++) dst[i + j] = gaio__u32_to_uniform(w[j], low, span, high);
    });
}

extern "C" __global__ void gaio_philox_normal_f32(float *dst, uint64_t count, uint64_t seed, uint64_t offset,
                                                  float mean, float stddev) {
    for_each_block(count, seed, offset, [&](uint64_t i, uint64_t n, const uint32_t *w) {
        float z[4];
        gaio__box_muller(w[0], w[1], &z[0], &z[1]);
        gaio__box_muller(w[2], w[3], &z[2], &z[3]);
        for (uint64_t j = 0; j < n; j++) dst[i + j] = mean + stddev * z[j];
    });
}
