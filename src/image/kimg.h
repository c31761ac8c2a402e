/* What image kernels see of their images, shared by the host kernels (C) and the
 * CUDA kernels (src/kernels/image, C++): one definition of the argument structs and
 * of the per-element arithmetic, so both backends compute the same numbers.
 *
 * A gaio_kimg is a resolved, checked gaio_image: a device address and byte strides.
 * Geometric kernels see a batch as batch * planes single planes (CHW: one plane
 * per channel, HWC: one plane of `channels` interleaved values); plane z of the
 * batch starts at ptr + (z / planes) * image_stride + (z % planes) * plane_pitch. */
#ifndef GAIO_IMAGE_KIMG_H
#define GAIO_IMAGE_KIMG_H

#include <stdint.h>

#ifdef __CUDACC__
#define GAIO_HD __host__ __device__ __forceinline__
#else
#define GAIO_HD static inline
#endif

/* gaio_dtype values (gaio/image.h), for the C++ side that does not include it. */
enum { GAIO_K_U8 = 1, GAIO_K_U16 = 2, GAIO_K_S16 = 3, GAIO_K_F16 = 4, GAIO_K_F32 = 5 };

typedef struct gaio_kimg {
    uint64_t ptr; /* image 0, plane 0, row 0, column 0 */
    uint64_t row_pitch, plane_pitch, image_stride;
    int32_t width, height;
    int32_t channels; /* interleaved values per pixel: C for HWC, 1 for CHW and YUV */
    int32_t planes;   /* C for CHW, 1 otherwise */
    int32_t batch;
    int32_t dtype; /* GAIO_K_* */
} gaio_kimg;

/* One image of a table (crop/resize and preprocess batches, uniform or varshape):
 * ptr is the ROI's top-left element; the ROI is the image as far as kernels know
 * (like OpenCV's Mat(roi), nothing outside it is read). */
typedef struct gaio_kview {
    uint64_t ptr;
    uint64_t row_pitch, plane_pitch;
    int32_t width, height;
} gaio_kview;

/* Images per launch of table-driven kernels: the table travels as a by-value kernel
 * argument (CUDA >= 12.1 takes up to 32 KiB of arguments), so there is no upload and
 * nothing to free; larger batches take ceil(n / GAIO_KTABLE_MAX) launches. */
#define GAIO_KTABLE_MAX 256
typedef struct gaio_ktable {
    gaio_kview v[GAIO_KTABLE_MAX];
} gaio_ktable;

GAIO_HD char *gaio_kimg_plane(const gaio_kimg *im, int64_t z) {
    int64_t n = z / im->planes, p = z - n * im->planes;
    return (char *)(uintptr_t)(im->ptr + (uint64_t)n * im->image_stride + (uint64_t)p * im->plane_pitch);
}

GAIO_HD char *gaio_kimg_row(const gaio_kimg *im, int64_t z, int64_t y) {
    return gaio_kimg_plane(im, z) + (uint64_t)y * im->row_pitch;
}

/* ---- element conversions: round to nearest even, saturate (cv::saturate_cast) ---- */

GAIO_HD float gaio_k_rint(float v) {
#ifdef __CUDA_ARCH__
    return rintf(v);
#else
    return __builtin_rintf(v); /* the default rounding mode: nearest even */
#endif
}

GAIO_HD uint8_t gaio_k_sat_u8(float v) {
    v = gaio_k_rint(v);
    return (uint8_t)(v != v ? 0 : v < 0 ? 0 : v > 255 ? 255 : v);
}
GAIO_HD uint16_t gaio_k_sat_u16(float v) {
    v = gaio_k_rint(v);
    return (uint16_t)(v != v ? 0 : v < 0 ? 0 : v > 65535 ? 65535 : v);
}
GAIO_HD int16_t gaio_k_sat_s16(float v) {
    v = gaio_k_rint(v);
    return (int16_t)(v != v ? 0 : v < -32768 ? -32768 : v > 32767 ? 32767 : v);
}

/* binary16 <-> binary32, round to nearest even: bit-exact on both backends. */
GAIO_HD uint16_t gaio_k_f32_to_f16(float f) {
    union {
        float f;
        uint32_t u;
    } in = {f};
    uint32_t x = in.u, sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) return (uint16_t)(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0)); /* inf, nan */
    if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds past 65504: inf */
    if (ax < 0x38800000u) { /* below the smallest normal half: subnormal or zero */
        if (ax < 0x33000000u) return (uint16_t)sign; /* under half the smallest subnormal */
        uint32_t m = (ax & 0x7fffffu) | 0x800000u;
        int shift = 126 - (int)(ax >> 23); /* 14..24 */
        uint32_t r = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (r & 1u))) r++;
        return (uint16_t)(sign | r);
    }
    uint32_t r = ax - 0x38000000u; /* rebias exponent 127 -> 15, keep 23 mantissa bits */
    uint32_t h = r >> 13, rem = r & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++;
    return (uint16_t)(sign | h);
}

GAIO_HD float gaio_k_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, u;
    if (e == 0x1f) u = sign | 0x7f800000u | (m << 13);
    else if (e) u = sign | ((e + 112u) << 23) | (m << 13);
    else if (!m) u = sign;
    else { /* subnormal: normalise */
        e = 113;
        while (!(m & 0x400u)) {
            m <<= 1;
            e--;
        }
        u = sign | (e << 23) | ((m & 0x3ffu) << 13);
    }
    union {
        uint32_t u;
        float f;
    } out = {u};
    return out.f;
}

/* Element i of a row of any dtype, as float. */
GAIO_HD float gaio_k_load(const char *row, int64_t i, int32_t dtype) {
    switch (dtype) {
    case GAIO_K_U8: return (float)((const uint8_t *)row)[i];
    case GAIO_K_U16: return (float)((const uint16_t *)row)[i];
    case GAIO_K_S16: return (float)((const int16_t *)row)[i];
    case GAIO_K_F16: return gaio_k_f16_to_f32(((const uint16_t *)row)[i]);
    default: return ((const float *)row)[i];
    }
}

/* Stores v with rounding and saturation for integer dtypes. */
GAIO_HD void gaio_k_store(char *row, int64_t i, int32_t dtype, float v) {
    switch (dtype) {
    case GAIO_K_U8: ((uint8_t *)row)[i] = gaio_k_sat_u8(v); break;
    case GAIO_K_U16: ((uint16_t *)row)[i] = gaio_k_sat_u16(v); break;
    case GAIO_K_S16: ((int16_t *)row)[i] = gaio_k_sat_s16(v); break;
    case GAIO_K_F16: ((uint16_t *)row)[i] = gaio_k_f32_to_f16(v); break;
    default: ((float *)row)[i] = v; break;
    }
}

#endif
