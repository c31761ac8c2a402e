/* What the reduce ops' host kernels (src/dnn/cpu/reduce.c) and CUDA kernels
 * (src/kernels/dnn/reduce.cu) share: the pooling arguments, element access through
 * a gaio_ktensor's strides, and the per-window arithmetic, so that both backends
 * visit the same elements in the same order. */
#ifndef GAIO_DNN_REDUCE_MATH_H
#define GAIO_DNN_REDUCE_MATH_H

#include <stdint.h>

#include "core/kmath.h"
#include "dnn/ktensor.h"

/* A checked gaio_pool_params (src/dnn/reduce.c): dilation resolved to >= 1. */
typedef struct gaio_kpool {
    int32_t mode; /* 0 max, 1 average */
    int32_t kh, kw, sh, sw;
    int32_t pt, pl; /* top and left padding: output (0, 0)'s window starts at (-pt, -pl) */
    int32_t dh, dw;
    int32_t count_include_pad;
    int32_t c_inner; /* y's channels are closer in memory than its columns: number outputs channel-fastest */
    int32_t pb, pr;  /* bottom and right padding: where count_include_pad stops counting (ceil_mode) */
    int32_t pad_;
} gaio_kpool;

GAIO_HD float gaio_kt_neg_inf(void) {
    union {
        uint32_t u;
        float f;
    } v = {0xff800000u};
    return v.f;
}

/* max(m, v) that keeps a NaN once one is seen. */
GAIO_HD float gaio_kt_max(float m, float v) { return v != v || v > m ? v : m; }

GAIO_HD float gaio_kt_get(const gaio_ktensor *t, int64_t off) {
    if (t->dtype == GAIO_KT_F16) return gaio_k_f16_to_f32(((const uint16_t *)(uintptr_t)t->ptr)[off]);
    return ((const float *)(uintptr_t)t->ptr)[off];
}

GAIO_HD void gaio_kt_put(const gaio_ktensor *t, int64_t off, float v) {
    if (t->dtype == GAIO_KT_F16)
        ((uint16_t *)(uintptr_t)t->ptr)[off] = gaio_k_f32_to_f16(v);
    else
        ((float *)(uintptr_t)t->ptr)[off] = v;
}

/* Element offsets of row `r` of x and y for a reduction along `axis`: r counts the
 * other dimensions in row-major order (both tensors have one shape). */
GAIO_HD void gaio_kt_row(const gaio_ktensor *x, const gaio_ktensor *y, int32_t axis, int64_t r, int64_t *ox,
                         int64_t *oy) {
    int64_t a = 0, b = 0;
    GAIO_KT_UNROLL
    for (int32_t d = GAIO_KT_MAX_NDIM - 1; d >= 0; d--) {
        if (d >= x->ndim || d == axis) continue;
        int64_t n = x->shape[d], i = r % n;
        r /= n;
        a += i * x->strides[d];
        b += i * y->strides[d];
    }
    *ox = a;
    *oy = b;
}

/* Output element (n, c, oh, ow) of a pooling: x and y are [N, C, H, W]. Padding
 * never wins a max and never counts unless count_include_pad, and then only the
 * declared padding (ceil_mode's last window may reach past it); a window with no
 * element inside x (refused by the op) would give 0. A NaN inside a window wins
 * the max, as in ONNX Runtime and PyTorch. */
GAIO_HD float gaio_kpool_at(const gaio_ktensor *x, const gaio_kpool *p, int64_t n, int64_t c, int64_t oh,
                            int64_t ow) {
    const int64_t H = x->shape[2], W = x->shape[3];
    const int64_t h0 = oh * p->sh - p->pt, w0 = ow * p->sw - p->pl;
    const int64_t base = n * x->strides[0] + c * x->strides[1];
    float acc = p->mode == 0 ? gaio_kt_neg_inf() : 0.0f;
    int64_t count = 0, padded = 0; /* taps inside x; taps inside x and its padding */
    for (int32_t i = 0; i < p->kh; i++) {
        int64_t h = h0 + (int64_t)i * p->dh;
        if (h >= -p->pt && h < H + p->pb)
            for (int32_t j = 0; j < p->kw; j++) {
                int64_t w = w0 + (int64_t)j * p->dw;
                padded += w >= -p->pl && w < W + p->pr;
            }
        if (h < 0 || h >= H) continue;
        for (int32_t j = 0; j < p->kw; j++) {
            int64_t w = w0 + (int64_t)j * p->dw;
            if (w < 0 || w >= W) continue;
            float v = gaio_kt_get(x, base + h * x->strides[2] + w * x->strides[3]);
            if (p->mode == 0) {
                acc = gaio_kt_max(acc, v);
            } else {
                acc += v;
            }
            count++;
        }
    }
    if (!count) return 0.0f;
    if (p->mode == 0) return acc;
    return acc / (float)(p->count_include_pad ? padded : count);
}

/* Output index i of a pooling, in the order that suits y's memory, as (n, c, oh, ow). */
GAIO_HD void gaio_kpool_index(const gaio_ktensor *y, const gaio_kpool *p, int64_t i, int64_t *n, int64_t *c,
                              int64_t *oh, int64_t *ow) {
    const int64_t C = y->shape[1], OH = y->shape[2], OW = y->shape[3];
    if (p->c_inner) {
        *c = i % C;
        i /= C;
        *ow = i % OW;
        i /= OW;
        *oh = i % OH;
        *n = i / OH;
    } else {
        *ow = i % OW;
        i /= OW;
        *oh = i % OH;
        i /= OH;
        *c = i % C;
        *n = i / C;
    }
}

#endif
