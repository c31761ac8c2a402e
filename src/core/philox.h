/* Philox4x32-10 (Salmon et al., SC'11) and the mapping from (seed, offset,
 * element) to numbers shared by every backend. Header-only so the host kernels
 * inline it; the CUDA kernels in src/kernels mirror it exactly. */
#ifndef GAIO_CORE_PHILOX_H
#define GAIO_CORE_PHILOX_H

#include <math.h>
#include <stdint.h>

#if defined(__CUDACC__)
#define GAIO_PHILOX_FN __host__ __device__ __forceinline__
#else
#define GAIO_PHILOX_FN static inline
#endif

#define GAIO_PHILOX_M0 0xD2511F53u
#define GAIO_PHILOX_M1 0xCD9E8D57u
#define GAIO_PHILOX_W0 0x9E3779B9u
#define GAIO_PHILOX_W1 0xBB67AE85u

GAIO_PHILOX_FN void gaio__philox_block(const uint32_t ctr_in[4], const uint32_t key_in[2], uint32_t out[4]) {
    uint32_t c0 = ctr_in[0], c1 = ctr_in[1], c2 = ctr_in[2], c3 = ctr_in[3];
    uint32_t k0 = key_in[0], k1 = key_in[1];
    for (int r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)GAIO_PHILOX_M0 * c0;
        uint64_t p1 = (uint64_t)GAIO_PHILOX_M1 * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
        uint32_t n1 = (uint32_t)p1;
        uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        uint32_t n3 = (uint32_t)p0;
        c0 = n0, c1 = n1, c2 = n2, c3 = n3;
        k0 += GAIO_PHILOX_W0;
        k1 += GAIO_PHILOX_W1;
    }
    out[0] = c0, out[1] = c1, out[2] = c2, out[3] = c3;
}

/* The four words for counter index c (= offset + element / 4) under seed. */
GAIO_PHILOX_FN void gaio__philox_words(uint64_t seed, uint64_t c, uint32_t out[4]) {
    const uint32_t ctr[4] = {(uint32_t)c, (uint32_t)(c >> 32), 0, 0};
    const uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    gaio__philox_block(ctr, key, out);
}

/* [0, 1) with 24 bits: exact in float on every backend. */
GAIO_PHILOX_FN float gaio__u32_to_unit(uint32_t x) { return (float)(x >> 8) * (1.0f / 16777216.0f); }
/* A number in [low, high) from one word; span = high - low (finite). low + span * u can
 * round up to high when high's ulp is large next to span * 2^-24: such results take
 * the largest float below high instead. */
GAIO_PHILOX_FN float gaio__u32_to_uniform(uint32_t x, float low, float span, float high) {
#if defined(__CUDA_ARCH__)
    /* Two roundings, as on the host: nvcc would fuse the product and sum into one fma
     * (one rounding), which differs from the host in the last bit for many words. */
    float v = __fadd_rn(low, __fmul_rn(span, gaio__u32_to_unit(x)));
#else
    float v = low + span * gaio__u32_to_unit(x);
#endif
    return v < high ? v : nextafterf(high, low);
}
/* (0, 1]: safe for log. */
GAIO_PHILOX_FN float gaio__u32_to_unit_open0(uint32_t x) { return ((float)(x >> 8) + 1.0f) * (1.0f / 16777216.0f); }

/* Box-Muller on words (a, b): two standard normal numbers. */
GAIO_PHILOX_FN void gaio__box_muller(uint32_t a, uint32_t b, float *n0, float *n1) {
    float u1 = gaio__u32_to_unit_open0(a);
    float u2 = gaio__u32_to_unit(b);
    float r = sqrtf(-2.0f * logf(u1));
    float t = 6.28318530717958647692f * u2;
    *n0 = r * cosf(t);
    *n1 = r * sinf(t);
}

#endif
