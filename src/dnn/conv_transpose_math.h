/* One spatial axis of a transposed convolution as cuDNN's backward-data convolution
 * takes it (src/dnn/conv_transpose.c): cuDNN knows no negative padding, no output
 * padding and no output rows that no tap reaches, and wants the forward convolution's
 * shapes to agree exactly. So y is cut to the rows that the taps reach, x to the rows
 * that reach them, and the forward paddings between the two follow:
 *
 *   y rows [y0, y0 + ny) <- x rows [x0, x0 + nx) with pre and post padding, where
 *   ny + pre + post - ext == (nx - 1) * stride  (ext = dilation * (k - 1) + 1)
 *
 * and every other row of y is 0 (the bias). Kept in a header of its own so that the
 * host test (tests/dnn/test_dnn_conv_transpose.c) checks this arithmetic against its
 * own reference on machines without a GPU. */
#ifndef GAIO_DNN_CONV_TRANSPOSE_MATH_H
#define GAIO_DNN_CONV_TRANSPOSE_MATH_H

#include <stdint.h>

typedef struct gaio__convt_axis {
    int64_t y0, ny;    /* y's rows the taps reach (ny 0: none: y is the bias alone) */
    int64_t x0, nx;    /* x's rows that reach them */
    int64_t pre, post; /* the forward convolution's paddings, both >= 0 */
} gaio__convt_axis;

static inline int64_t gaio__convt_floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
static inline int64_t gaio__convt_ceil_div(int64_t a, int64_t b) { return -gaio__convt_floor_div(-a, b); }

/* in: x's size on the axis, out: y's, k the kernel's, pad0 the crop at its start
 * (may be negative); stride and dil >= 1. */
static inline gaio__convt_axis gaio__convt_axis_make(int64_t in, int64_t out, int64_t k, int64_t stride, int64_t dil,
                                                     int64_t pad0) {
    gaio__convt_axis ax = {0, 0, 0, 0, 0, 0};
    int64_t ext = dil * (k - 1) + 1, full = (in - 1) * stride + ext;
    /* y row o is row o + pad0 of the uncropped output, which has full rows. */
    int64_t y0 = pad0 < 0 ? -pad0 : 0, y1 = full - pad0 < out ? full - pad0 : out;
    if (y1 <= y0) return ax;
    int64_t lo = y0 + pad0, hi = y1 + pad0; /* the same rows, uncropped */
    /* x row i covers uncropped rows [i stride, i stride + ext): the first to reach lo,
     * but none starting past lo (pre >= 0 when stride > ext) ... */
    int64_t x0 = gaio__convt_ceil_div(lo - ext + 1, stride), x0b = lo / stride;
    if (x0b < x0) x0 = x0b;
    if (x0 < 0) x0 = 0;
    /* ... to the last starting before hi, and enough that the rows cover hi (post >= 0). */
    int64_t x1 = (hi - 1) / stride + 1, x1b = gaio__convt_ceil_div(hi - ext, stride) + 1;
    if (x1b > x1) x1 = x1b;
    if (x1 > in) x1 = in;
    if (x1 <= x0) return ax;
    ax.y0 = y0, ax.ny = y1 - y0, ax.x0 = x0, ax.nx = x1 - x0;
    ax.pre = lo - x0 * stride;
    ax.post = (x1 - 1) * stride + ext - hi;
    return ax;
}

#endif
