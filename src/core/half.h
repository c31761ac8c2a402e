/* binary16 <-> binary32 for host kernels: bit-exact (the results of kimg.h's
 * gaio_k_f16_to_f32 / gaio_k_f32_to_f16, which the CUDA kernels use) and written
 * without branches, so that loops over them vectorise. */
#ifndef GAIO_CORE_HALF_H
#define GAIO_CORE_HALF_H

#include <stdint.h>
#include <string.h>

static inline uint32_t f2u(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static inline float u2f(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Selects a or b with masks rather than branches: GCC does not if-convert float
 * code under -ftrapping-math, and these must vectorise. */
static inline uint32_t sel(uint32_t cond, uint32_t a, uint32_t b) {
    uint32_t m = 0u - cond;
    return (a & m) | (b & ~m);
}

/* binary16 -> binary32 (exact): rebias the exponent, renormalise subnormals with one
 * float subtraction, keep NaN payloads as gaio_k_f16_to_f32 does. */
static inline float h2f(uint16_t h) {
    uint32_t u = (uint32_t)(h & 0x7fffu) << 13, e = u & 0x0f800000u;
    uint32_t normal = u + 0x38000000u;
    uint32_t special = normal + 0x38000000u; /* inf, nan: exponent 255 */
    uint32_t sub = f2u(u2f(normal + 0x00800000u) - u2f(0x38800000u));
    uint32_t r = sel(e == 0x0f800000u, special, sel(e == 0, sub, normal));
    return u2f(r | (uint32_t)(h & 0x8000u) << 16);
}

/* binary32 -> binary16, round to nearest even (gaio_k_f32_to_f16's results). */
static inline uint16_t f2h(float f) {
    uint32_t x = f2u(f), sign = x & 0x80000000u, u = x ^ sign;
    uint32_t big = sel(u > 0x7f800000u, 0x7e00u, 0x7c00u);     /* nan; inf and what rounds past 65504 */
    uint32_t sub = f2u(u2f(u) + 0.5f) - 0x3f000000u;           /* the float add rounds to 2^-24 units */
    uint32_t norm = (u + 0xc8000fffu + ((u >> 13) & 1u)) >> 13; /* rebias, round half to even */
    uint32_t r = sel(u >= 0x47800000u, big, sel(u < 0x38800000u, sub, norm));
    return (uint16_t)(r | sign >> 16);
}

#endif
