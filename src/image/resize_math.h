/* Where each output pixel of a resize reads, and with what weights: OpenCV 4's
 * cv::resize rules (modules/imgproc/src/resize.cpp), written once for the host
 * kernels and the CUDA kernels so both backends sample the same source pixels with
 * the same float weights.
 *
 * Every filter is separable: an output pixel (x, y) is sum_j sum_i wy[j] wx[i]
 * src(ix[i], iy[j]) with per-axis taps from the functions below, indices already
 * clamped into the source (OpenCV replicates the border for every mode). */
#ifndef GAIO_IMAGE_RESIZE_MATH_H
#define GAIO_IMAGE_RESIZE_MATH_H

#include "image/kimg.h"

#ifndef __CUDACC__
#include <math.h>
#endif

/* The filter each axis uses. AREA shrinking in both axes is a true box filter
 * (GAIO_RS_BOX); AREA enlarging in either axis becomes OpenCV's "area-mode" bilinear
 * on both axes. */
enum { GAIO_RS_NEAREST = 0, GAIO_RS_NEAREST_EXACT = 1, GAIO_RS_LINEAR = 2, GAIO_RS_CUBIC = 3, GAIO_RS_AREA_LINEAR = 4,
       GAIO_RS_BOX = 5 };

/* At most this many taps per axis for a box filter: shrinking by more than
 * GAIO_RS_MAX_BOX - 1 on an axis is refused by the op (needed taps = ceil(scale) + 1). */
#define GAIO_RS_MAX_BOX 64

/* The per-axis scale as OpenCV computes it: 1 / (dst / src), which is not always
 * the same double as src / dst. */
typedef struct gaio_rs_axis {
    double scale;     /* source pixels per output pixel */
    double inv_scale; /* output pixels per source pixel */
    int32_t src;      /* source size on this axis */
    int32_t mode;     /* GAIO_RS_* */
    int32_t iexact;   /* NEAREST_EXACT: 16.16 step and offset (resizeNN_bitexact) */
    int32_t iexact0;
} gaio_rs_axis;

GAIO_HD gaio_rs_axis gaio_rs_axis_make(int32_t src, int32_t dst, int32_t mode) {
    gaio_rs_axis a;
    a.inv_scale = (double)dst / (double)src;
    a.scale = 1.0 / a.inv_scale;
    a.src = src;
    a.mode = mode;
    a.iexact = a.iexact0 = 0;
    /* Only NEAREST_EXACT's: a 64-bit division costs a GPU thread that makes its axes
     * once about as much as its pixels (resize_direct.cu). int64: OpenCV's int
     * arithmetic overflows past 32767 pixels; below that they agree. */
    if (mode == GAIO_RS_NEAREST_EXACT) {
        int64_t step = (((int64_t)src << 16) + dst / 2) / dst;
        a.iexact = (int32_t)step;
        a.iexact0 = (int32_t)(step / 2 - src % 2);
    }
    return a;
}

GAIO_HD int32_t gaio_rs_clamp(int32_t i, int32_t n) { return i < 0 ? 0 : i >= n ? n - 1 : i; }

GAIO_HD int32_t gaio_rs_floor(double v) {
#ifdef __CUDA_ARCH__
    return (int32_t)floor(v);
#else
    return (int32_t)__builtin_floor(v);
#endif
}
GAIO_HD int32_t gaio_rs_floorf(float v) {
#ifdef __CUDA_ARCH__
    return (int32_t)floorf(v);
#else
    return (int32_t)__builtin_floorf(v);
#endif
}

/* Nearest modes: the one source index of output d. */
GAIO_HD int32_t gaio_rs_nearest(const gaio_rs_axis *a, int32_t d) {
    int32_t s;
    if (a->mode == GAIO_RS_NEAREST_EXACT) s = (int32_t)(((int64_t)a->iexact * d + a->iexact0) >> 16);
    else s = gaio_rs_floor((double)d * a->scale);
    return s < a->src - 1 ? (s < 0 ? 0 : s) : a->src - 1;
}

/* Bilinear (LINEAR and AREA_LINEAR): taps i0, i1 (clamped) with weights 1 - f, f. */
GAIO_HD void gaio_rs_linear(const gaio_rs_axis *a, int32_t d, int32_t *i0, int32_t *i1, float *f) {
    int32_t s;
    float fx;
    if (a->mode == GAIO_RS_AREA_LINEAR) {
        s = gaio_rs_floor((double)d * a->scale);
        fx = (float)((double)(d + 1) - (double)(s + 1) * a->inv_scale);
        fx = fx <= 0 ? 0.f : fx - (float)gaio_rs_floorf(fx);
    } else {
        fx = (float)(((double)d + 0.5) * a->scale - 0.5);
        s = gaio_rs_floorf(fx);
        fx -= (float)s;
    }
    if (s < 0) {
        s = 0;
        fx = 0;
    }
    if (s >= a->src - 1) {
        s = a->src - 1;
        fx = 0;
    }
    *i0 = s;
    *i1 = s + 1 < a->src ? s + 1 : a->src - 1;
    *f = fx;
}

/* Bicubic, a = -0.75 (interpolateCubic): taps s-1 .. s+2 clamped. */
GAIO_HD void gaio_rs_cubic(const gaio_rs_axis *a, int32_t d, int32_t idx[4], float w[4]) {
    float fx = (float)(((double)d + 0.5) * a->scale - 0.5);
    int32_t s = gaio_rs_floorf(fx);
    fx -= (float)s;
    const float A = -0.75f;
    w[0] = ((A * (fx + 1) - 5 * A) * (fx + 1) + 8 * A) * (fx + 1) - 4 * A;
    w[1] = ((A + 2) * fx - (A + 3)) * fx * fx + 1;
    w[2] = ((A + 2) * (1 - fx) - (A + 3)) * (1 - fx) * (1 - fx) + 1;
    w[3] = 1.f - w[0] - w[1] - w[2];
    for (int k = 0; k < 4; k++) idx[k] = gaio_rs_clamp(s - 1 + k, a->src);
}

/* Box filter for shrinking (computeResizeAreaTab): output d averages source
 * [d * scale, (d + 1) * scale). Taps are first, first + 1, ..., first + n - 1 (all
 * inside the source) with weights w_first for the first, w_last for the last and
 * w_mid between (n == 1: w_first only). */
typedef struct gaio_rs_box {
    int32_t first, n;
    float w_first, w_mid, w_last;
} gaio_rs_box;

GAIO_HD gaio_rs_box gaio_rs_box_at(const gaio_rs_axis *a, int32_t d) {
    double fs1 = (double)d * a->scale, fs2 = fs1 + a->scale;
    double cell = a->scale < (double)a->src - fs1 ? a->scale : (double)a->src - fs1;
#ifdef __CUDA_ARCH__
    int32_t s1 = (int32_t)ceil(fs1), s2 = (int32_t)floor(fs2);
#else
    int32_t s1 = (int32_t)__builtin_ceil(fs1), s2 = (int32_t)__builtin_floor(fs2);
#endif
    if (s2 > a->src - 1) s2 = a->src - 1;
    if (s1 > s2) s1 = s2;
    gaio_rs_box b;
    float mid = (float)(1.0 / cell);
    int has_first = (double)s1 - fs1 > 1e-3, has_last = fs2 - (double)s2 > 1e-3;
    b.first = has_first ? s1 - 1 : s1;
    b.n = (s2 - s1) + has_first + has_last;
    b.w_mid = mid;
    b.w_first = has_first ? (float)(((double)s1 - fs1) / cell) : mid;
    if (has_last) {
        double tail = fs2 - (double)s2;
        tail = tail < 1.0 ? tail : 1.0;
        tail = tail < cell ? tail : cell;
        b.w_last = (float)(tail / cell);
    } else {
        b.w_last = mid;
    }
    if (b.n == 1 && has_last && !has_first) b.w_first = b.w_last;
    return b;
}

/* Weight of tap k (0 <= k < n) of a box. */
GAIO_HD float gaio_rs_box_w(const gaio_rs_box *b, int32_t k) {
    return k == 0 ? b->w_first : k == b->n - 1 ? b->w_last : b->w_mid;
}

/* The modes of both axes for an interpolation (gaio_interp values) and the sizes. */
GAIO_HD void gaio_rs_modes(int32_t interp, int32_t sw, int32_t sh, int32_t dw, int32_t dh, int32_t *mx, int32_t *my) {
    switch (interp) {
    case 0: *mx = *my = GAIO_RS_NEAREST; return;
    case 1: *mx = *my = GAIO_RS_NEAREST_EXACT; return;
    case 3: *mx = *my = GAIO_RS_CUBIC; return;
    case 4: {
        /* true area only when shrinking (or keeping) both axes, as OpenCV */
        double sx = 1.0 / ((double)dw / sw), sy = 1.0 / ((double)dh / sh);
        *mx = *my = (sx >= 1 && sy >= 1) ? GAIO_RS_BOX : GAIO_RS_AREA_LINEAR;
        return;
    }
    default: *mx = *my = GAIO_RS_LINEAR; return;
    }
}

#endif
