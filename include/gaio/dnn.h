/* gaio — the DNN stage: tensor descriptors, the library state of each stream
 * (cuDNN, cuBLAS, cuBLASLt on a GPU; OpenBLAS on the host) and tensor ops.
 *
 * Like the image ops, a DNN op takes descriptors, checks shapes, dtypes, layouts and
 * devices before anything is enqueued, and runs asynchronously in stream order on
 * either backend: on a GPU through the vendor libraries (opened with dlopen the first
 * time an op needs them: libgaio links none of them), on the host through OpenBLAS
 * (also opened at run time) split over gaio's worker pool. A missing library is
 * GAIO_ERR_DRIVER naming the file.
 *
 * Library state follows Caffe2's CUDAContext: a stream gets its own cuDNN and cuBLAS
 * handles the first time an op (or the user) needs them, bound to it and destroyed
 * with it (the handles are not safe to share between streams or threads), and a
 * workspace from its context's stream-ordered pool that grows on demand and is never
 * freed while work that uses it is in flight. */
#ifndef GAIO_DNN_H
#define GAIO_DNN_H

#include "gaio/image.h"
#include "gaio/status.h"
#include "gaio/types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GAIO_TENSOR_MAX_NDIM 5

/* The order of a tensor's dimensions in memory when its strides are left 0. The shape
 * is always given in logical order (N, C, [D,] H, W for images, as cuDNN and PyTorch
 * do; any order for plain matrices): NHWC only changes the packed strides (channels
 * innermost, PyTorch's channels_last). */
typedef enum gaio_tensor_layout {
    GAIO_TENSOR_ROW_MAJOR = 0, /* packed in the shape's order (NCHW for images) */
    GAIO_TENSOR_NHWC = 1       /* 4-D or 5-D: channels innermost */
} gaio_tensor_layout;

/* A tensor: a value struct over memory a buffer owns, like gaio_image. */
typedef struct gaio_tensor {
    gaio_buffer *buffer;
    size_t offset;   /* bytes from the buffer's start to element [0, ...] */
    gaio_dtype dtype; /* F32 or F16 (each op lists what it takes) */
    int32_t ndim;    /* 1 .. GAIO_TENSOR_MAX_NDIM */
    int64_t shape[GAIO_TENSOR_MAX_NDIM];   /* each >= 1 */
    int64_t strides[GAIO_TENSOR_MAX_NDIM]; /* in elements; all 0: packed by layout */
    gaio_tensor_layout layout;
} gaio_tensor;

/* A packed tensor (zero strides). */
gaio_tensor gaio_tensor_make(gaio_buffer *buf, size_t offset, gaio_dtype dtype, int32_t ndim, const int64_t *shape,
                             gaio_tensor_layout layout);

/* Checks a descriptor on its own (dtype, ndim, shape, strides >= 0, the buffer holding
 * every element) and fills packed strides. `*bytes` (may be NULL) receives the bytes
 * from element [0, ...] to one past the last. */
gaio_status gaio_tensor_check(const gaio_tensor *t, gaio_tensor *resolved, size_t *bytes);

/* ---- library state ------------------------------------------------------------ */

typedef enum gaio_dnn_library {
    GAIO_DNN_CUDNN = 0,
    GAIO_DNN_CUBLAS = 1,
    GAIO_DNN_CUBLASLT = 2,
    GAIO_DNN_OPENBLAS = 3
} gaio_dnn_library;

/* Whether a library loads in this process, in words ("cuDNN 9.14.0 from
 * libcudnn.so.9"), or GAIO_ERR_DRIVER with the reason; GAIO_ERR_NOT_SUPPORTED for a
 * GPU library in a build without the CUDA backend. Opens the library when needed.
 * The text stays valid until the next call on the same thread. */
gaio_status gaio_dnn_library_status(gaio_dnn_library lib, const char **description);

/* The stream's own handle (cudnnHandle_t, cublasHandle_t), made on first use and bound
 * to the stream's CUstream; borrowed, valid while the stream lives. For the caller's
 * own library calls: make them from inside gaio_enqueue_native on that stream, so that
 * they land in stream order on DEFERRED streams too. CUDA streams only
 * (GAIO_ERR_NOT_SUPPORTED on the host). */
gaio_status gaio_dnn_cudnn_handle(gaio_stream *stream, void **handle);
gaio_status gaio_dnn_cublas_handle(gaio_stream *stream, void **handle);

/* ---- ops ------------------------------------------------------------------------ */

typedef enum gaio_activation {
    GAIO_ACT_NONE = 0,
    GAIO_ACT_RELU = 1,
    GAIO_ACT_GELU = 2 /* the tanh approximation, as cuBLASLt's GELU epilogue */
} gaio_activation;

typedef struct gaio_gemm_params {
    int32_t trans_a, trans_b; /* non-zero: use A^T / B^T */
    float alpha, beta;        /* D = act(alpha * op(A) op(B) + beta * C + bias) */
    gaio_activation act;
} gaio_gemm_params;

/* D = act(alpha * op(A) @ op(B) + beta * C + bias), batched over leading dimensions.
 * A, B, C and D are 2-D ([rows, cols]) or 3-D ([batch, rows, cols]) row-major tensors
 * with a packed last dimension; op(A) is m x k, op(B) k x n, C and D m x n. A batch
 * dimension of 1 (or a 2-D operand) is broadcast over the others. C may be NULL (beta is
 * then ignored) or D itself; bias (may be NULL) is a 1-D tensor of n values added to
 * every row. dtypes: F32 everywhere, or F16 A and B with F16 or F32 C and D (and bias
 * of D's dtype); accumulation in F32. On a GPU: cuBLASLt with the bias and activation
 * as its epilogue; on the host: OpenBLAS's sgemm over row blocks on the worker pool. */
gaio_status gaio_gemm(gaio_stream *stream, const gaio_tensor *a, const gaio_tensor *b, const gaio_tensor *c,
                      const gaio_tensor *bias, const gaio_tensor *d, const gaio_gemm_params *params);

#ifdef __cplusplus
}
#endif
#endif
