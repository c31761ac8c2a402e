/* The part of cuDNN 9's C API gaio calls (handles and the graph / backend API),
 * declared here so that a toolkit without cuDNN's headers still builds gaio: the
 * library itself is opened at run time (dnn_libs.c). Enum-typed arguments are plain
 * ints, which is how the C ABI passes them. */
#ifndef GAIO_DNN_CUDA_CUDNN_API_H
#define GAIO_DNN_CUDA_CUDNN_API_H

#include <cuda.h>
#include <stdint.h>

#include "dnn/cuda/cudnn_values.h"

typedef struct cudnnContext *cudnnHandle_t;
typedef int cudnnStatus_t;
typedef void *cudnnBackendDescriptor_t;

#define GAIO_CUDNN_ENUMERATOR(name, value) enum { name = value };
GAIO_CUDNN_VALUES(GAIO_CUDNN_ENUMERATOR)
#undef GAIO_CUDNN_ENUMERATOR

size_t cudnnGetVersion(void);
const char *cudnnGetErrorString(cudnnStatus_t status);
void cudnnGetLastErrorString(char *message, size_t max_size);
cudnnStatus_t cudnnCreate(cudnnHandle_t *handle);
cudnnStatus_t cudnnDestroy(cudnnHandle_t handle);
cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, CUstream stream) /* a cudaStream_t */;
cudnnStatus_t cudnnBackendCreateDescriptor(int type, cudnnBackendDescriptor_t *descriptor);
cudnnStatus_t cudnnBackendDestroyDescriptor(cudnnBackendDescriptor_t descriptor);
cudnnStatus_t cudnnBackendFinalize(cudnnBackendDescriptor_t descriptor);
cudnnStatus_t cudnnBackendSetAttribute(cudnnBackendDescriptor_t descriptor, int name, int type, int64_t count,
                                       const void *elements);
cudnnStatus_t cudnnBackendGetAttribute(cudnnBackendDescriptor_t const descriptor, int name, int type,
                                       int64_t requested, int64_t *count, void *elements);
cudnnStatus_t cudnnBackendExecute(cudnnHandle_t handle, cudnnBackendDescriptor_t plan,
                                  cudnnBackendDescriptor_t variant_pack);

#endif
