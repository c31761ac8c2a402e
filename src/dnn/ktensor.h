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

typedef struct gaio_ktensor {
    uint64_t ptr; /* element [0, ...] */
    int32_t ndim;
    int32_t dtype; /* GAIO_KT_* */
    int64_t shape[GAIO_KT_MAX_NDIM];
    int64_t strides[GAIO_KT_MAX_NDIM]; /* in elements */
} gaio_ktensor;

#endif
