/* What the indexing kernels (gaio_dnn_gather, gaio_dnn_where, gaio_dnn_pad) take beside
 * their tensors, and the index arithmetic both backends share (host: dnn/cpu/gather.c,
 * CUDA: kernels/dnn/gather.cu). Every tensor reaches the kernels seen over the output's
 * shape (a dimension a tensor does not vary along has stride 0), dimensions ordered by
 * the output's strides, outermost first. */
#ifndef GAIO_DNN_GATHER_MATH_H
#define GAIO_DNN_GATHER_MATH_H

#include <stdint.h>

#include "dnn/ktensor.h"

#ifdef __CUDACC__
#define GAIO_KG_HD __host__ __device__ __forceinline__
#else
#define GAIO_KG_HD static inline
#endif

/* gaio_dtype values of the index and mask tensors. */
enum { GAIO_KG_U8 = 1, GAIO_KG_S32 = 6, GAIO_KG_S64 = 7 };

/* Gather and GatherElements: y[c] = x[c, with the gathered axis at index[c]]. x's
 * strides over y's shape leave the gathered axis out (0 there); the index moves
 * axis_stride elements per step. */
typedef struct gaio_kgather {
    int64_t axis_stride; /* x's stride along the gathered axis, in elements */
    int64_t axis_len;    /* x's extent there */
} gaio_kgather;

/* An index from the indices tensor: negative ones count from the end once, and what is
 * still outside [0, len) is clamped to the nearest end (ONNX calls it an error; a kernel
 * cannot report one, and must not read outside x). */
GAIO_KG_HD int64_t gaio_kg_index(int64_t k, int64_t len) {
    if (k < 0) k += len;
    return k < 0 ? 0 : k >= len ? len - 1 : k;
}

/* Pad: per dimension of y, the padding before x's first element (>= 0: the op has cut
 * negative pads off x as a view), and how the padding is filled. */
enum { GAIO_KPAD_CONSTANT = 0, GAIO_KPAD_REFLECT = 1, GAIO_KPAD_EDGE = 2, GAIO_KPAD_WRAP = 3 };
typedef struct gaio_kpad {
    int64_t begin[GAIO_KT_MAX_NDIM];
    uint64_t fill; /* CONSTANT: the value's bits in y's dtype (its element size's low bytes) */
    int32_t mode;
} gaio_kpad;

/* x's coordinate for y's coordinate c along a dimension of x's extent len padded by
 * begin; -1 for the fill (CONSTANT outside x). REFLECT mirrors about the end elements
 * without repeating them (numpy's reflect), WRAP repeats x; both keep going periodically
 * when the padding is longer than x. */
GAIO_KG_HD int64_t gaio_kpad_source(int64_t c, int64_t begin, int64_t len, int32_t mode) {
    int64_t s = c - begin;
    if (s >= 0 && s < len) return s;
    if (mode == GAIO_KPAD_CONSTANT) return -1;
    if (mode == GAIO_KPAD_EDGE) return s < 0 ? 0 : len - 1;
    if (mode == GAIO_KPAD_WRAP) {
        int64_t m = s % len;
        return m < 0 ? m + len : m;
    }
    if (len == 1) return 0; /* REFLECT of one element */
    int64_t period = 2 * (len - 1), m = s % period;
    if (m < 0) m += period;
    return m < len ? m : period - m;
}

#endif
