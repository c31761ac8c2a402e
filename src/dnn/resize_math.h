/* What gaio_resize2d's host kernel (src/dnn/cpu/resize.c) and CUDA kernel
 * (src/kernels/dnn/resize.cu) share: the checked parameters and, per axis, the taps
 * of an output index and their weights, so that both backends sample the same
 * elements with the same weights.
 *
 * The sampling position follows ONNX's reference (onnx/reference/ops/op_resize.py)
 * operation for operation in double precision, as its Python floats do, so that
 * nearest's ties (a position exactly between two elements) fall the same way. Taps
 * are the elements the reference picks: the n nearest to the position (n = 2 for
 * nearest and linear, 4 for cubic; the lower on a tie) within x padded by n / 2 edge
 * copies on each side, weighted by its coefficients of the position's fraction r in
 * (0, 1] past the tap before it. Nearest in exact arithmetic: the reference measures
 * its distances in double from the position plus n / 2, rounded, and where a position
 * lies within an ulp of an integer that can pick a window one element off from its
 * coefficients (a value one element away), which gaio does not copy. With antialias (linear and cubic, downscaling by s)
 * the filter is stretched by 1 / s: more taps (gaio_kresize_wide), weights normalised
 * to sum 1. */
#ifndef GAIO_DNN_RESIZE_MATH_H
#define GAIO_DNN_RESIZE_MATH_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/kmath.h"
#include "dnn/ktensor.h"

/* A checked gaio_resize_params (src/dnn/resize.c). */
typedef struct gaio_kresize {
    double scale[2];  /* H, W: the scale the coordinate rule divides by */
    double length[2]; /* x's length times scale: the reference's (unrounded) output length */
    float roi[4];     /* tf_crop_and_resize: start_h, start_w, end_h, end_w */
    float cubic_a, extrapolation;
    int32_t mode;    /* gaio_resize_mode */
    int32_t coord;   /* gaio_resize_coord */
    int32_t nearest; /* gaio_resize_nearest */
    int32_t exclude_outside;
    int32_t c_inner; /* y's channels are closer in memory than its columns: number outputs channel-fastest */
    int32_t antialias; /* linear and cubic only (the op clears it for nearest) */
} gaio_kresize;

/* The most taps antialias takes per axis (linear down to 1/32, cubic to 1/16). */
#define GAIO_KRESIZE_MAX_TAPS 64

/* The taps of one output index along one axis: `count` elements from `first` on
 * (indexes outside [0, in) read the nearest edge element), or none (count 0) where
 * tf_crop_and_resize samples outside x and the output is the extrapolation value. */
typedef struct gaio_kresize_taps {
    int64_t first;
    int32_t count;
    float w[4];
} gaio_kresize_taps;

/* Where output index o of axis a (0: H, 1: W) samples an axis of `in` elements,
 * `out` in y; false for tf_crop_and_resize outside x. */
GAIO_HD bool gaio_kresize_position(const gaio_kresize *p, int a, int64_t in, int64_t out, int64_t o, double *pos) {
    const double s = p->scale[a], len = p->length[a], xo = (double)o;
    double x;
    switch (p->coord) {
    case 0: x = (xo + 0.5) / s - 0.5; break;
    case 1: x = xo / s; break;
    case 2: x = len == 1.0 ? -0.5 : (xo + 0.5) / s - 0.5; break;
    case 3: x = (xo + 0.5) / s; break;
    case 4: x = len == 1.0 ? 0.0 : xo * (double)(in - 1) / (len - 1.0); break;
    case 5: {
        /* The reference subtracts the float32 roi in float32, the rest in double. */
        const float start = p->roi[a], span = p->roi[a + 2] - start;
        x = len == 1.0 ? (double)span * (double)(in - 1) / 2.0 : xo * (double)span * (double)(in - 1) / (len - 1.0);
        x += (double)start * (double)(in - 1);
        if (x < 0.0 || x > (double)(in - 1)) return false;
        break;
    }
    default: { /* 6: half_pixel_symmetric */
        const double adjustment = (double)out / len, center = (double)in / 2.0;
        x = center * (1.0 - adjustment) + (xo + 0.5) / s - 0.5;
    }
    }
    *pos = x;
    return true;
}

/* Keys' cubic convolution coefficients of taps at distances 1 + r, r, 1 - r, 2 - r,
 * as the reference writes them. */
GAIO_HD void gaio_kresize_cubic(double r, double A, double *c) {
    const double q = 1.0 - r;
    c[0] = ((A * (r + 1.0) - 5.0 * A) * (r + 1.0) + 8.0 * A) * (r + 1.0) - 4.0 * A;
    c[1] = ((A + 2.0) * r - (A + 3.0)) * r * r + 1.0;
    c[2] = ((A + 2.0) * q - (A + 3.0)) * q * q + 1.0;
    c[3] = ((A * (q + 1.0) - 5.0 * A) * (q + 1.0) + 8.0 * A) * (q + 1.0) - 4.0 * A;
}

/* The first of the n (even) taps nearest to position x in an axis of `in` elements
 * padded by n / 2 edge copies, and x's fraction r in (0, 1] past the tap before it:
 * x = x0 + r, the taps x0 - (n / 2 - 1) .. x0 + n / 2. */
GAIO_HD int64_t gaio_kresize_window(double x, int n, int64_t in, double *r) {
    /* Far outside x (2^50 elements) the taps are the same edge copies: a bound keeps
     * the conversion to an integer defined. */
    x = x < -0x1p50 ? -0x1p50 : x > 0x1p50 ? 0x1p50 : x;
    /* An integral x is 1 past the tap before it. */
    const double fl = floor(x);
    *r = x == fl ? 1.0 : x - fl;
    const int64_t x0 = (int64_t)fl - (x == fl ? 1 : 0);
    const int64_t pad = n / 2;
    int64_t first = x0 - (n / 2 - 1);
    /* The n nearest among x and its edge copies: a window that would leave them slides
     * back in (far outside x, which only keep_aspect_ratio_policy's rounding reaches). */
    if (first > in + pad - n) first = in + pad - n;
    if (first < -pad) first = -pad;
    return first;
}

GAIO_HD void gaio_kresize_axis(const gaio_kresize *p, int a, int64_t in, int64_t out, int64_t o, gaio_kresize_taps *t) {
    double x, r;
    if (!gaio_kresize_position(p, a, in, out, o, &x)) {
        t->first = 0, t->count = 0;
        return;
    }
    const int n = p->mode == 2 ? 4 : 2;
    const int64_t first = gaio_kresize_window(x, n, in, &r);
    double c[4];
    if (p->mode == 0) {
        /* Coefficients (1, 0) pick x0, (0, 1) x0 + 1: one tap. */
        bool upper;
        if (r == 1.0) upper = true;
        else if (p->nearest == 0) upper = r > 0.5;
        else if (p->nearest == 1) upper = r >= 0.5;
        else upper = p->nearest == 3;
        t->first = first + (upper ? 1 : 0), t->count = 1;
        t->w[0] = 1.0f, t->w[1] = t->w[2] = t->w[3] = 0.0f;
        return;
    }
    if (p->mode == 1) {
        c[0] = 1.0 - r, c[1] = r, c[2] = c[3] = 0.0;
    } else {
        gaio_kresize_cubic(r, (double)p->cubic_a, c);
    }
    /* Loops over all four with the unused ones zero: constant indexes keep c and w in
     * a GPU thread's registers. */
    if (p->exclude_outside) {
        double sum = 0.0;
        for (int i = 0; i < 4; i++) {
            if (first + i < 0 || first + i >= in) c[i] = 0.0;
            sum += c[i];
        }
        for (int i = 0; i < 4; i++) c[i] /= sum;
    }
    t->first = first, t->count = n;
    for (int i = 0; i < 4; i++) t->w[i] = (float)c[i];
}

GAIO_HD int64_t gaio_kresize_clamp(int64_t i, int64_t in) { return i < 0 ? 0 : i >= in ? in - 1 : i; }

/* ---- antialias ---- */

/* The filter's reach at scale s (stretched by 1 / s when downscaling): the first tap's
 * offset from x0 (see gaio_kresize_window), as the reference computes it. */
GAIO_HD int64_t gaio_kresize_aa_start(int32_t mode, double scale) {
    const double s = scale < 1.0 ? scale : 1.0;
    return (int64_t)floor((mode == 2 ? -2.0 : -1.0) / s) + 1;
}

/* Taps per axis: 2 - 2 start (2 for linear and 4 for cubic at scale >= 1). */
GAIO_HD int64_t gaio_kresize_aa_count(int32_t mode, double scale) { return 2 - 2 * gaio_kresize_aa_start(mode, scale); }

/* An antialiased axis's taps: count from first on (0: the extrapolation value), tap i
 * weighing k(s (start + i - r)) / sum (0 outside x under exclude_outside). */
typedef struct gaio_kresize_wide {
    int64_t first;
    int32_t count, start;
    double r, s, sum;
} gaio_kresize_wide;

/* The stretched filter at distance d: the triangle, or Keys' cubic with coefficient A. */
GAIO_HD double gaio_kresize_aa_k(const gaio_kresize *p, double d) {
    d = d < 0.0 ? -d : d;
    if (p->mode != 2) return d < 1.0 ? 1.0 - d : 0.0;
    const double A = (double)p->cubic_a, d2 = d * d, d3 = d * d2;
    if (d <= 1.0) return (A + 2.0) * d3 - (A + 3.0) * d2 + 1.0;
    if (d < 2.0) return A * d3 - 5.0 * A * d2 + 8.0 * A * d - 4.0 * A;
    return 0.0;
}

GAIO_HD bool gaio_kresize_aa_outside(const gaio_kresize *p, const gaio_kresize_wide *t, int32_t i, int64_t in) {
    return p->exclude_outside && (t->first + i < 0 || t->first + i >= in);
}

GAIO_HD float gaio_kresize_aa_weight(const gaio_kresize *p, const gaio_kresize_wide *t, int32_t i, int64_t in) {
    if (gaio_kresize_aa_outside(p, t, i, in)) return 0.0f;
    return (float)(gaio_kresize_aa_k(p, t->s * ((double)(t->start + i) - t->r)) / t->sum);
}

GAIO_HD void gaio_kresize_wide_axis(const gaio_kresize *p, int a, int64_t in, int64_t out, int64_t o,
                                    gaio_kresize_wide *t) {
    double x;
    t->first = 0, t->count = 0, t->start = 0, t->r = t->s = t->sum = 1.0;
    if (!gaio_kresize_position(p, a, in, out, o, &x)) return;
    t->s = p->scale[a] < 1.0 ? p->scale[a] : 1.0;
    t->start = (int32_t)gaio_kresize_aa_start(p->mode, p->scale[a]);
    t->count = 2 - 2 * t->start;
    t->first = gaio_kresize_window(x, t->count, in, &t->r);
    double sum = 0.0;
    for (int32_t i = 0; i < t->count; i++)
        if (!gaio_kresize_aa_outside(p, t, i, in)) sum += gaio_kresize_aa_k(p, t->s * ((double)(t->start + i) - t->r));
    t->sum = sum;
}

#endif
