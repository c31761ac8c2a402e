/* IEEE binary16 <-> float for tests, round to nearest even: the tests' own, written
 * independently of gaio's converters (src/core/half.h, kimg.h) so that they check them. */
#ifndef GAIO_TEST_HALF_H
#define GAIO_TEST_HALF_H

#include <stdint.h>
#include <string.h>

static inline uint16_t to_half(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u, e = (x >> 23) & 0xff, m = x & 0x7fffffu;
    if (e == 0xff) return (uint16_t)(sign | 0x7c00u | (m ? 0x200u : 0));
    int32_t he = (int32_t)e - 127 + 15;
    if (he >= 0x1f) return (uint16_t)(sign | 0x7c00u);
    if (he <= 0) {
        if (he < -10) return (uint16_t)sign;
        m |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - he), h = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1))) h++;
        return (uint16_t)(sign | h);
    }
    uint32_t h = ((uint32_t)he << 10) | (m >> 13), rem = m & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) h++;
    return (uint16_t)(sign | h);
}

static inline float from_half(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ffu, x;
    if (e == 0) {
        if (!m) {
            x = sign;
        } else {
            e = 127 - 15 + 1;
            while (!(m & 0x400u)) m <<= 1, e--;
            x = sign | (e << 23) | ((m & 0x3ffu) << 13);
        }
    } else if (e == 0x1f) {
        x = sign | 0x7f800000u | (m << 13);
    } else {
        x = sign | ((e - 15 + 127) << 23) | (m << 13);
    }
    float f;
    memcpy(&f, &x, 4);
    return f;
}

#endif
