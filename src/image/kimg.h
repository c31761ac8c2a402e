/* What image kernels see of their images, shared by the host kernels (C) and the
 * CUDA kernels (src/kernels/image, C++): one definition of the argument structs and
 * of the per-element loads and stores (their conversions: core/kmath.h), so both
 * backends compute the same numbers.
 *
 * A gaio_kimg is a resolved, checked gaio_image: a device address and byte strides.
 * Geometric kernels see a batch as batch * planes single planes (CHW: one plane
 * per channel, HWC: one plane of `channels` interleaved values); plane z of the
 * batch starts at ptr + (z / planes) * image_stride + (z % planes) * plane_pitch. */
#ifndef GAIO_IMAGE_KIMG_H
#define GAIO_IMAGE_KIMG_H

#include <stdint.h>

#include "core/kmath.h"

/* gaio_dtype values (gaio/types.h), for the C++ side that does not include it. */
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

/* One image of a table (crop/resize and preprocess batches, uniform or varshape): its
 * region of interest. ptr is the ROI's top-left element; the ROI is the image as far
 * as kernels know (like OpenCV's Mat(roi), nothing outside it is read). */
typedef struct gaio_kroi {
    uint64_t ptr;
    uint64_t row_pitch, plane_pitch;
    int32_t width, height;
} gaio_kroi;

/* Images per launch of table-driven kernels: the table travels as a by-value kernel
 * argument (CUDA >= 12.1 takes up to 32 KiB of arguments), so there is no upload and
 * nothing to free; larger batches take ceil(n / GAIO_KTABLE_MAX) launches. */
#define GAIO_KTABLE_MAX 256
typedef struct gaio_ktable {
    gaio_kroi v[GAIO_KTABLE_MAX];
} gaio_ktable;

GAIO_HD char *gaio_kimg_plane(const gaio_kimg *im, int64_t z) {
    int64_t n = z / im->planes, p = z - n * im->planes;
    return (char *)(uintptr_t)(im->ptr + (uint64_t)n * im->image_stride + (uint64_t)p * im->plane_pitch);
}

GAIO_HD char *gaio_kimg_row(const gaio_kimg *im, int64_t z, int64_t y) {
    return gaio_kimg_plane(im, z) + (uint64_t)y * im->row_pitch;
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
