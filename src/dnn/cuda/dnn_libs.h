/* cuDNN, cuBLAS and cuBLASLt, opened at run time like the driver: dlopen of the
 * library file, every entry point through dlsym. cuBLAS(Lt)'s prototypes come from
 * the CUDA toolkit's headers (build time only); cuDNN's from cudnn_api.h, so that a
 * toolkit without cuDNN's headers still builds gaio. */
#ifndef GAIO_DNN_CUDA_LIBS_H
#define GAIO_DNN_CUDA_LIBS_H

#include <cublasLt.h>
#include <cublas_v2.h>
#include <stddef.h>

#include "dnn/cuda/cudnn_api.h"
#include "gaio/status.h"

#define GAIO_CUDNN_FUNCTIONS(X)                                                                                \
    X(cudnnGetVersion) X(cudnnGetErrorString) X(cudnnGetLastErrorString) X(cudnnCreate) X(cudnnDestroy)         \
    X(cudnnSetStream) X(cudnnBackendCreateDescriptor) X(cudnnBackendDestroyDescriptor) X(cudnnBackendFinalize) \
    X(cudnnBackendSetAttribute) X(cudnnBackendGetAttribute) X(cudnnBackendExecute)

#define GAIO_CUBLAS_FUNCTIONS(X)                                                                           \
    X(cublasGetVersion_v2) X(cublasGetStatusName) X(cublasCreate_v2) X(cublasDestroy_v2) X(cublasSetStream_v2) \
    X(cublasSetWorkspace_v2)

#define GAIO_CUBLASLT_FUNCTIONS(X)                                                                                \
    X(cublasLtGetVersion) X(cublasLtGetStatusName) X(cublasLtCreate) X(cublasLtDestroy) X(cublasLtMatmulDescCreate) \
    X(cublasLtMatmulDescDestroy) X(cublasLtMatmulDescSetAttribute) X(cublasLtMatrixLayoutCreate)                  \
    X(cublasLtMatrixLayoutDestroy) X(cublasLtMatrixLayoutSetAttribute) X(cublasLtMatmulPreferenceCreate)           \
    X(cublasLtMatmulPreferenceDestroy) X(cublasLtMatmulPreferenceSetAttribute) X(cublasLtMatmulAlgoGetHeuristic)   \
    X(cublasLtMatmul)

#define GAIO_DNN_FIELD(name) __typeof__(&name) name;
typedef struct gaio_cudnn_table {
    GAIO_CUDNN_FUNCTIONS(GAIO_DNN_FIELD)
} gaio_cudnn_table;
typedef struct gaio_cublas_table {
    GAIO_CUBLAS_FUNCTIONS(GAIO_DNN_FIELD)
} gaio_cublas_table;
typedef struct gaio_cublaslt_table {
    GAIO_CUBLASLT_FUNCTIONS(GAIO_DNN_FIELD)
} gaio_cublaslt_table;
#undef GAIO_DNN_FIELD

/* The loaded tables, loading on first use (once; thread-safe). NULL on failure, after
 * setting the thread's error: GAIO_ERR_DRIVER for fn naming the files tried and why. */
const gaio_cudnn_table *gaio__cudnn(const char *fn);
const gaio_cublas_table *gaio__cublas(const char *fn);
const gaio_cublaslt_table *gaio__cublaslt(const char *fn);

/* What was loaded, in words ("cuDNN 9.14.0 (libcudnn.so.9)"), or GAIO_ERR_DRIVER. */
gaio_status gaio__dnn_cuda_library_status(int lib, const char **description);

#endif
