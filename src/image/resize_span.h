/* Which source pixels a run of resize outputs reads, for the CUDA kernels'
 * staging (src/kernels/image/resize.cu) and for the op that sizes their shared
 * memory (src/image/resize.c): both call these, so the op's bound is exactly
 * what a block needs. */
#ifndef GAIO_IMAGE_RESIZE_SPAN_H
#define GAIO_IMAGE_RESIZE_SPAN_H

#include "image/resize_math.h"

/* First and last source pixel that output d reads on an axis (taps are clamped,
 * so both lie inside the source). */
GAIO_HD void gaio_rs_span(const gaio_rs_axis *a, int32_t d, int32_t *lo, int32_t *hi) {
    switch (a->mode) {
    case GAIO_RS_NEAREST:
    case GAIO_RS_NEAREST_EXACT: *lo = *hi = gaio_rs_nearest(a, d); return;
    case GAIO_RS_LINEAR:
    case GAIO_RS_AREA_LINEAR: {
        float f;
        gaio_rs_linear(a, d, lo, hi, &f);
        return;
    }
    case GAIO_RS_CUBIC: {
        int32_t idx[4];
        float w[4];
        gaio_rs_cubic(a, d, idx, w);
        *lo = idx[0];
        *hi = idx[3];
        return;
    }
    default: {
        gaio_rs_box b = gaio_rs_box_at(a, d);
        *lo = b.first;
        *hi = b.first + b.n - 1;
        return;
    }
    }
}

/* The columns a block stages: outputs [d0, d1) of a row read source pixels
 * [lo, hi] (taps move monotonically with d). */
GAIO_HD void gaio_rs_tile_span(const gaio_rs_axis *a, int32_t d0, int32_t d1, int32_t *lo, int32_t *hi) {
    int32_t l0, h0, l1, h1;
    gaio_rs_span(a, d0, &l0, &h0);
    gaio_rs_span(a, d1 - 1, &l1, &h1);
    *lo = l0 < l1 ? l0 : l1;
    *hi = h0 > h1 ? h0 : h1;
}

/* Elements of shared memory that staging `bytes` bytes of a row in aligned
 * 16-byte chunks can take, whatever the row's alignment (one partial chunk at
 * each end); element-wise staging takes fewer. */
GAIO_HD int64_t gaio_rs_stage_elems(int64_t bytes, int32_t esize) {
    return ((bytes + 15) / 16 + 1) * (16 / esize);
}

#endif
