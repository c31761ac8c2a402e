/* What DNN kernels see of a tensor, shared by the host kernels (C) and the CUDA
 * kernels (src/kernels/dnn, C++): a device address, the dtype, and the logical shape
 * with element strides, padded to GAIO_KT_MAX_NDIM. One definition, so both backends
 * index memory the same way. */
#ifndef GAIO_DNN_KTENSOR_H
#define GAIO_DNN_KTENSOR_H

#include <stdint.h>

#define GAIO_KT_MAX_NDIM 5

/* Loops over a tensor's dimensions, on a GPU, run over all GAIO_KT_MAX_NDIM with a
 * guard (d < ndim) and unrolled: every index into a gaio_ktensor kernel parameter is
 * then a constant, where a run-time index makes nvcc copy the whole parameter into
 * each thread's local memory (on memory-bound kernels, more traffic than the data). */
#ifdef __CUDACC__
#define GAIO_KT_UNROLL _Pragma("unroll")
#define GAIO_KT_HD __host__ __device__ __forceinline__
#else
#define GAIO_KT_UNROLL
#define GAIO_KT_HD static inline
#endif

/* gaio_dtype values (gaio/types.h), for the C++ side that does not include it. */
enum { GAIO_KT_F16 = 4, GAIO_KT_F32 = 5 };

/* Bytes per element of a gaio_dtype value (u8 1; u16, s16, f16 2; f32, s32 4; s64 8). */
#ifdef __CUDACC__
__host__ __device__
#endif
static inline int32_t gaio_kt_size(int32_t dtype) {
    return dtype == 1 ? 1 : dtype <= 4 ? 2 : dtype == 7 ? 8 : 4;
}

typedef struct gaio_ktensor {
    uint64_t ptr; /* element [0, ...] */
    int32_t ndim;
    int32_t dtype; /* GAIO_KT_* */
    int64_t shape[GAIO_KT_MAX_NDIM];
    int64_t strides[GAIO_KT_MAX_NDIM]; /* in elements */
} gaio_ktensor;

/* t's extent and stride along d (0 <= d < GAIO_KT_MAX_NDIM), d known at run time only,
 * and its element count: selected over every dimension (see GAIO_KT_UNROLL). */
GAIO_KT_HD int64_t gaio_kt_extent(const gaio_ktensor *t, int32_t d) {
    /* Masks, not selects: nvcc folds a chain of selects back into one indexed load. */
    int64_t v = 0;
    GAIO_KT_UNROLL
    for (int32_t k = 0; k < GAIO_KT_MAX_NDIM; k++) v |= t->shape[k] & -(int64_t)(k == d);
    return v;
}

GAIO_KT_HD int64_t gaio_kt_stride(const gaio_ktensor *t, int32_t d) {
    int64_t v = 0;
    GAIO_KT_UNROLL
    for (int32_t k = 0; k < GAIO_KT_MAX_NDIM; k++) v |= t->strides[k] & -(int64_t)(k == d);
    return v;
}

GAIO_KT_HD int64_t gaio_kt_count(const gaio_ktensor *t) {
    int64_t n = 1;
    GAIO_KT_UNROLL
    for (int32_t k = 0; k < GAIO_KT_MAX_NDIM; k++)
        if (k < t->ndim) n *= t->shape[k];
    return n;
}

#endif
