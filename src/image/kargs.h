/* By-value arguments of the image kernels that carry more than images: one
 * definition for the op that fills them (src/image/<op>.c), the host kernel
 * (src/image/cpu/) and the CUDA kernel (src/kernels/image/), so the three cannot
 * drift apart. C and C++ both read it. */
#ifndef GAIO_IMAGE_KARGS_H
#define GAIO_IMAGE_KARGS_H

#include <stdint.h>

/* ---- gaio_cvt_color ---- */

typedef struct gaio_kcolor {
    int64_t rows, cols;     /* rows of cols pixels; packed batches are one long row */
    int32_t rows_per_image; /* row r is row r % rows_per_image of image r / rows_per_image */
    int32_t scn, dcn;       /* source and destination channels */
    int32_t swap;           /* R and B trade places; for gray: the source is BGR */
} gaio_kcolor;

/* Y'CbCr -> R'G'B' in 20-bit fixed point: with u = U - 128, v = V - 128 and
 * y = max(Y - y_off, y_min) * cy,  R = (y + r_v v + 2^19) >> 20, G = (y + g_u u +
 * g_v v + 2^19) >> 20, B = (y + b_u u + 2^19) >> 20, each saturated to u8. */
typedef struct gaio_kyuv {
    int32_t cy, r_v, g_u, g_v, b_u;
    int32_t y_off, y_min;
    int32_t i420; /* chroma planes: 0 NV12 (interleaved U,V), 1 I420 (U, then V) */
    int32_t dcn;  /* 3 or 4 (alpha 255) */
    int32_t bidx; /* where red goes: 0 RGB, 2 BGR */
} gaio_kyuv;

/* ---- gaio_normalize: per-channel constants ---- */

#define GAIO_KCHAN_MAX 64 /* gaio__img_check's channel limit */
typedef struct gaio_kchan {
    float v[GAIO_KCHAN_MAX];
} gaio_kchan;

#endif
