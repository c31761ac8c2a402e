/* A CUDA stream's library state (Caffe2's CudnnState / CudnnWorkspace): its own
 * cuDNN, cuBLAS and cuBLASLt handles, made on first use on the thread that submits
 * the stream's work, and a workspace of its own (cuMemAlloc). Kept in the stream's
 * GAIO_STREAM_EXT_DNN slot and destroyed with the stream. */
#ifndef GAIO_DNN_CUDA_STATE_H
#define GAIO_DNN_CUDA_STATE_H

#include <pthread.h>

#include "core/native.h"
#include "dnn/cuda/dnn_libs.h"
#include "gaio/types.h"

typedef struct gemm_plan gemm_plan; /* gemm_cuda.c's cache entry */

typedef struct dnn_stream_state {
    gaio_stream *stream;   /* not a reference: the state dies with the stream */
    pthread_mutex_t lock;  /* handle creation: the user's getters race with submission */
    cudnnHandle_t cudnn;
    cublasHandle_t cublas;
    cublasLtHandle_t lt;
    /* Device memory used in stream order only, from cuMemAlloc (dnn's driver table):
     * not a gaio buffer (a buffer holds its context, and the state of a context's default
     * stream must not), and not a block of the context's pool, which would be handed out
     * again the moment the stream goes, while CUDA graphs captured on it (a model
     * execution context's) may still run elsewhere; cuMemFree waits for them. */
    gaio__native_mem workspace;
    size_t workspace_size; /* what was asked for (the block may be larger) */
    /* Outgrown workspaces: work in flight may still use them, and a stream-ordered free
     * cannot be submitted from inside the stream's own submission, so they go with the
     * stream (each at most half the next: a bounded list). */
    gaio__native_mem retired[48];
    int nretired;
    gemm_plan *plans;       /* most recently used first */
} dnn_stream_state;

/* The stream's state, made on first use (NULL with the thread's error set). The caller
 * has the stream's device context current. */
dnn_stream_state *gaio__dnn_state(const char *fn, gaio_stream *stream);

/* The handles, made on first use, bound to the stream's native stream. */
gaio_status gaio__dnn_cublaslt(const char *fn, dnn_stream_state *s, cublasLtHandle_t *out);

/* The stream's cuDNN handle, made on first use and bound to native (the stream's own
 * CUstream); the caller has the device's context current. */
gaio_status gaio__dnn_cudnn(const char *fn, dnn_stream_state *s, void *native, cudnnHandle_t *out);

/* A workspace of at least `bytes` for work enqueued next on the stream (the caller
 * has the device's context current): grows, at least doubling; the old one is kept
 * until the stream goes. */
gaio_status gaio__dnn_workspace(const char *fn, dnn_stream_state *s, size_t bytes, void **ptr);

#endif
