/* The few CUDA driver functions the dnn layer calls itself (plan tuning on a private
 * stream: conv_tune.c), looked up once through the native interface (core/native.h)
 * from the CUDA backend's own driver table: the same entry points, at the same ABI
 * versions, as gaio's. Everything else of the device the layer reaches through gaio
 * (streams, contexts, memory) or through cuDNN and cuBLAS. */
#ifndef GAIO_DNN_CUDA_DRIVER_H
#define GAIO_DNN_CUDA_DRIVER_H

#include <cuda.h>

#include "gaio/status.h"

/* X(name): the base name; cuda.h's macros give the versioned function's prototype. */
#define GAIO_DNN_CU_FUNCTIONS(X)                                                                               \
    X(cuStreamCreateWithPriority) X(cuStreamDestroy) X(cuStreamSynchronize) X(cuStreamBeginCapture)            \
    X(cuStreamEndCapture) X(cuGraphDestroy) X(cuMemAlloc) X(cuMemFree) X(cuMemsetD8Async) X(cuMemcpyAsync)     \
    X(cuEventCreate) X(cuEventDestroy) X(cuEventRecord) X(cuEventElapsedTime)

typedef struct gaio_dnn_cu_table {
#define GAIO_DNN_CU_FIELD(name) __typeof__(&name) name;
    GAIO_DNN_CU_FUNCTIONS(GAIO_DNN_CU_FIELD)
#undef GAIO_DNN_CU_FIELD
} gaio_dnn_cu_table;

/* The table, filled on first use (once; thread-safe). NULL when the driver lacks one
 * of them, after setting the thread's error (GAIO_ERR_DRIVER, naming fn and it). */
const gaio_dnn_cu_table *gaio__dnn_cu(const char *fn);

/* A failed driver call as a status naming fn and the call (gaio__native_fail). */
gaio_status gaio__dnn_cu_fail(const char *fn, const char *call, CUresult r);

#endif
