/* What DNN kernels see of a tensor, shared by the host kernels (C) and the CUDA
 * kernels (src/kernels/dnn, C++): a device address, the dtype, and the logical shape
 * with element strides, padded to GAIO_KT_MAX_NDIM. One definition, so both backends
 * index memory the same way. */
#ifndef GAIO_DNN_KTENSOR_H
#define GAIO_DNN_KTENSOR_H

#include <stdint.h>

#define GAIO_KT_MAX_NDIM 5

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

#endif
