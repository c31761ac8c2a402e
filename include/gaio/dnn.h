/* gaio — the DNN stage: tensor descriptors, the library state of each stream
 * (cuDNN, cuBLAS, cuBLASLt on a GPU; OpenBLAS on the host) and tensor ops.
 *
 * Like the image ops, a DNN op takes descriptors, checks shapes, dtypes, layouts and
 * devices before anything is enqueued, and runs asynchronously in stream order on
 * either backend: on a GPU through the vendor libraries (opened with dlopen the first
 * time an op needs them: libgaio links none of them), on the host through OpenBLAS
 * (also opened at run time) split over gaio's worker pool, and oneDNN for
 * convolutions. A missing library is GAIO_ERR_DRIVER naming the file.
 *
 * Library state follows Caffe2's CUDAContext: a stream gets its own cuDNN and cuBLAS
 * handles the first time an op (or the user) needs them, bound to it and destroyed
 * with it (the handles are not safe to share between streams or threads), and a
 * workspace from its context's stream-ordered pool that grows on demand and is never
 * freed while work that uses it is in flight. */
#ifndef GAIO_DNN_H
#define GAIO_DNN_H

#include "gaio/dlpack.h"
#include "gaio/types.h"
#include "gaio/status.h"

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
    /* In elements; all 0: packed by layout. Negative (a reversed view: element [0, ...]
     * at offset, the others below it) where an op says so: the pointwise, layout and
     * indexing ops take them; gaio_tensor_check, convolutions and GEMMs do not. */
    int64_t strides[GAIO_TENSOR_MAX_NDIM];
    gaio_tensor_layout layout;
} gaio_tensor;

/* A packed tensor (zero strides). */
gaio_tensor gaio_tensor_make(gaio_buffer *buf, size_t offset, gaio_dtype dtype, int32_t ndim, const int64_t *shape,
                             gaio_tensor_layout layout);

/* Checks a descriptor on its own (dtype, ndim, shape, strides >= 0, the buffer holding
 * every element) and fills packed strides. `*bytes` (may be NULL) receives the bytes
 * from element [0, ...] to one past the last. */
gaio_status gaio_tensor_check(const gaio_tensor *t, gaio_tensor *resolved, size_t *bytes);

/* DLPack views (gaio/dlpack.h) as tensors and back, so that tensors exchange with
 * PyTorch, CuPy or numpy without a copy. Both keep the logical shape and the element
 * strides as they are (a channels_last PyTorch tensor is a logical NCHW view with
 * NHWC strides, as gaio_tensor describes it); the tensor's strides are always
 * explicit. to_view takes a tensor that gaio_tensor_check accepts; from_view a view
 * of at most GAIO_TENSOR_MAX_NDIM dimensions. The buffer is borrowed both ways. */
gaio_status gaio_tensor_from_dlpack_view(const gaio_dlpack_view *view, gaio_tensor *t);
gaio_status gaio_tensor_to_dlpack_view(const gaio_tensor *t, gaio_dlpack_view *view);

/* ---- library state ------------------------------------------------------------ */

typedef enum gaio_dnn_library {
    GAIO_DNN_CUDNN = 0,
    GAIO_DNN_CUBLAS = 1,
    GAIO_DNN_CUBLASLT = 2,
    GAIO_DNN_OPENBLAS = 3,
    GAIO_DNN_ONEDNN = 4
} gaio_dnn_library;

/* Whether a library loads in this process, in words ("cuDNN 9.14.0 from
 * libcudnn.so.9"), or GAIO_ERR_DRIVER with the reason; GAIO_ERR_NOT_SUPPORTED for a
 * GPU library in a build without the CUDA backend. Opens the library when needed
 * (cuDNN with its engine libraries, which it would otherwise open at the first
 * convolution: 0.1-0.2 s), needing no device: a program that minds its start may call
 * it on a thread of its own while the device starts. The text stays valid until the
 * next call on the same thread. */
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

/* ---- pointwise ops (src/dnn/pointwise.c, dnn/cpu/pointwise.c, kernels/dnn/pointwise.cu) ----
 * Tensors of any shape and strides (1 to 5 dimensions), F32 or F16, computed in F32;
 * x and y of one dtype and shape. y may be x itself (same buffer, offset and strides):
 * in place; any other overlap is refused. */

typedef enum gaio_unary_op {
    GAIO_UNARY_RELU = 0,         /* max(x, 0) */
    GAIO_UNARY_CLIP = 1,         /* min(max(x, alpha), beta): ReLU6 is alpha 0, beta 6 */
    GAIO_UNARY_SIGMOID = 2,      /* 1 / (1 + exp(-x)) */
    GAIO_UNARY_SILU = 3,         /* x * sigmoid(x) */
    GAIO_UNARY_GELU = 4,         /* 0.5 x (1 + erf(x / sqrt(2))): ONNX's and PyTorch's default */
    GAIO_UNARY_GELU_TANH = 5,    /* 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) */
    GAIO_UNARY_TANH = 6,
    GAIO_UNARY_HARD_SIGMOID = 7, /* max(0, min(1, alpha x + beta)) (ONNX: alpha 0.2, beta 0.5) */
    GAIO_UNARY_HARD_SWISH = 8,   /* x * max(0, min(1, x / 6 + 0.5)) */
    GAIO_UNARY_IDENTITY = 9,     /* y = x (a strided copy, or a cast when dtypes differ: see gaio_cast) */
    GAIO_UNARY_SQRT = 10,        /* sqrt(x): NaN below 0 */
    GAIO_UNARY_EXP = 11,         /* e^x */
    GAIO_UNARY_LOG = 12,         /* the natural logarithm: -inf at 0, NaN below */
    GAIO_UNARY_ABS = 13,         /* |x| */
    GAIO_UNARY_NEG = 14,         /* -x */
    GAIO_UNARY_RECIPROCAL = 15,  /* 1 / x */
    GAIO_UNARY_FLOOR = 16,       /* the largest integer <= x */
    GAIO_UNARY_CEIL = 17,        /* the smallest integer >= x */
    GAIO_UNARY_ERF = 18,         /* erf(x) = 2 / sqrt(pi) * integral of e^(-t^2) over [0, x] */
    GAIO_UNARY_SOFTPLUS = 19,    /* log(1 + e^x), computed as max(x, 0) + log1p(e^-|x|) */
    GAIO_UNARY_SIN = 20,         /* sin(x), x in radians */
    GAIO_UNARY_COS = 21,         /* cos(x) */
    GAIO_UNARY_AFFINE = 22       /* alpha x + beta (a scale and shift: ONNX Mean's 1 / n) */
} gaio_unary_op;

typedef struct gaio_unary_params {
    gaio_unary_op op;
    /* CLIP's bounds, HARD_SIGMOID's slope and offset, AFFINE's scale and shift (finite);
     * ignored otherwise */
    float alpha, beta;
} gaio_unary_params;

gaio_status gaio_unary(gaio_stream *stream, const gaio_tensor *x, const gaio_tensor *y, const gaio_unary_params *params);

typedef enum gaio_binary_op {
    GAIO_BINARY_ADD = 0,
    GAIO_BINARY_SUB = 1,
    GAIO_BINARY_MUL = 2,
    GAIO_BINARY_DIV = 3,
    GAIO_BINARY_POW = 4, /* a^b as C's powf: NaN for a < 0 and b not an integer; 0^0 = 1 */
    GAIO_BINARY_MIN = 5, /* the smaller of a and b; NaN if either is NaN (NumPy's minimum) */
    GAIO_BINARY_MAX = 6, /* the larger of a and b; NaN if either is NaN (NumPy's maximum) */
    GAIO_BINARY_FMOD = 7 /* C's fmod: a - b * trunc(a / b), the sign of a; NaN for b = 0 (ONNX Mod, fmod 1) */
} gaio_binary_op;

/* y = act(a op b) with NumPy broadcasting: shapes aligned at their last dimension, a
 * dimension of 1 (or a missing leading one) repeated; y has the broadcast shape. a, b
 * and y of one dtype; y may be a or b itself when that has y's shape. `act` (may be
 * NULL: none) applies a unary op on the way out (the residual add + ReLU of ResNets). */
gaio_status gaio_binary(gaio_stream *stream, gaio_binary_op op, const gaio_tensor *a, const gaio_tensor *b,
                        const gaio_tensor *y, const gaio_unary_params *act);

/* y = x converted between F32 and F16 (round to nearest even), or copied when the
 * dtypes match (any dtype then: integers and bytes are copied as they are); same shape,
 * any strides (so it also changes layouts: NCHW <-> NHWC is a ROW_MAJOR x and an NHWC y
 * of the same logical shape). */
gaio_status gaio_cast(gaio_stream *stream, const gaio_tensor *x, const gaio_tensor *y);

/* Batch normalization for inference over dimension 1 (the channels of [N, C, ...]):
 * y = (x - mean[c]) / sqrt(var[c] + epsilon) * scale[c] + bias[c]. scale, bias, mean
 * and var are 1-D F32 tensors of C values. */
gaio_status gaio_batch_norm(gaio_stream *stream, const gaio_tensor *x, const gaio_tensor *y, const gaio_tensor *scale,
                            const gaio_tensor *bias, const gaio_tensor *mean, const gaio_tensor *var, float epsilon);

/* ---- normalization (src/dnn/norm.c, dnn/cpu/norm.c, kernels/dnn/norm.cu) ------------ */

/* Which elements share one mean and variance (a "set"). */
typedef enum gaio_norm_kind {
    /* Dimensions axis .. ndim - 1 of x, for each index of the ones before: ONNX
     * LayerNormalization (the transformer's LayerNorm over the last axis). */
    GAIO_NORM_LAYER = 0,
    /* x is [N, C, ...]: each of `groups` runs of C / groups neighbouring channels, with
     * every position of the dimensions after C, for each n: ONNX GroupNormalization. */
    GAIO_NORM_GROUP = 1,
    /* x is [N, C, ...]: each channel's positions, for each n: ONNX
     * InstanceNormalization (GROUP with groups = C). */
    GAIO_NORM_INSTANCE = 2
} gaio_norm_kind;

typedef struct gaio_norm_params {
    gaio_norm_kind kind;
    int32_t axis;   /* LAYER: the first normalized dimension (negative counts from the end); else ignored */
    int32_t groups; /* GROUP: 1 .. C, dividing C; else ignored */
    float epsilon;  /* added to the variance; finite and >= 0 */
} gaio_norm_params;

/* y = (x - mean) / sqrt(var + epsilon) * scale + bias, with the mean and the biased
 * variance of each set of elements that params->kind names, computed in f32 whatever
 * the dtypes (two passes over a set: the mean, then the squared deviations from it;
 * f16 data is widened on load, rounded once on store).
 *
 * x and y: one shape (1 to 5 dimensions; GROUP and INSTANCE: 2 or more, [N, C, ...]) and
 * one dtype, F32 or F16; any strides and either layout (an NHWC tensor's channels are
 * still dimension 1 of its logical shape, so INSTANCE of an NHWC tensor reads each
 * channel's positions C apart, and LAYER over the last dimension of a logical
 * [N, H, W, C] stored NHWC reads them H apart: both are fine, if slower than sets
 * that are contiguous). y may be x itself (the same elements: in place); no other
 * overlap with an input.
 *
 * scale and bias (each may be NULL: 1 and 0), F32 or x's dtype:
 *   LAYER: aligned with x's last dimensions and spanning only normalized ones, each of
 *          x's size or 1 (broadcast): [C] or [H, W, C] ... for axis -1 ... -3; a
 *          dimension of 1 before the normalized ones is allowed;
 *   GROUP: 1-D, C values (one per channel: GroupNormalization-21) or `groups` values
 *          (one per group: GroupNormalization-18);
 *   INSTANCE: 1-D, C values.
 * mean and inv_std_dev (each may be NULL), F32 or x's dtype, receive each set's mean and
 * 1 / sqrt(var + epsilon): the shape of the dimensions that number the sets (LAYER:
 * x's first axis dimensions; GROUP: [N, groups]; INSTANCE: [N, C]), followed by any
 * number of 1s up to 5 dimensions (ONNX's [d0, .., 1, 1]). y may be NULL when either is
 * given: the statistics alone.
 *
 * On a GPU: a warp per set for sets of up to a few thousand elements (each lane keeping
 * its elements in registers when the set is contiguous), a block per larger set, or a
 * thread per set where neighbouring sets are neighbours in memory (the channels-last
 * LayerNorm above); the host splits the sets over its worker pool and sums in f64. */
gaio_status gaio_norm(gaio_stream *stream, const gaio_tensor *x, const gaio_tensor *scale, const gaio_tensor *bias,
                      const gaio_tensor *y, const gaio_tensor *mean, const gaio_tensor *inv_std_dev,
                      const gaio_norm_params *params);

/* ---- attention (src/dnn/attention.c, dnn/cpu/attention.c, kernels/dnn/attention.cu) ---- */

typedef struct gaio_attention_params {
    float scale; /* the scores' factor: 1 / sqrt(head size) for scaled dot-product attention */
} gaio_attention_params;

/* y = softmax(scale * q k^T + bias) v over the last two dimensions, the scores never in
 * memory: q [..., L, D], k and v [..., Lk, D] and y [..., L, D] with the same 0 to 2
 * leading dimensions (batch, heads), one dtype, each last dimension packed; bias (may
 * be NULL) F32 or F16, broadcast (NumPy's rules) to the scores' [..., L, Lk]: a relative
 * position bias, -inf for masked keys; of the two leading dimensions, one whose size
 * divides the scores' repeats along it (element b % size: Swin's shifted-window mask,
 * [windows, heads, L, Lk] against scores of [batch * windows, heads, L, Lk]). A query whose keys are all masked gets zeros. y
 * overlaps no input.
 *
 * On a GPU: F16 with D 32 or 64 and rows of q, k, v and y 16-byte aligned, else
 * GAIO_ERR_NOT_SUPPORTED; FlashAttention's scheme on tensor cores (an online softmax
 * over 64 keys at a time, f32 accumulation, probabilities rounded to f16 for the second
 * product). The host: F32 or F16, any D, f32 sums. */
gaio_status gaio_attention(gaio_stream *stream, const gaio_tensor *q, const gaio_tensor *k, const gaio_tensor *v,
                           const gaio_tensor *bias, const gaio_tensor *y, const gaio_attention_params *params);

/* ---- reductions (src/dnn/reduce.c, dnn/cpu/reduce.c, kernels/dnn/reduce.cu) ---------- */

/* y = softmax(x) along `axis` (negative counts from the end), computed stably in F32
 * (max subtracted); x and y of one dtype and shape. */
gaio_status gaio_softmax(gaio_stream *stream, const gaio_tensor *x, const gaio_tensor *y, int32_t axis);

typedef enum gaio_pool_mode {
    GAIO_POOL_MAX = 0,
    GAIO_POOL_AVG = 1
} gaio_pool_mode;

typedef struct gaio_pool_params {
    gaio_pool_mode mode;
    int32_t kernel[2];  /* height, width */
    int32_t stride[2];
    int32_t pad[4];     /* top, left, bottom, right */
    int32_t dilation[2]; /* 0 means 1 (ONNX's AveragePool takes it from opset 19) */
    int32_t count_include_pad; /* AVG: divide by the window's taps inside x and its padding */
    /* ONNX's ceil_mode: the output size rounded up (a last window that would start in
     * the end padding dropped); the taps past the end padding count for nothing, in
     * the divisor either. */
    int32_t ceil_mode;
} gaio_pool_params;

/* 2-D pooling of [N, C, H, W] tensors (logical order; NCHW or NHWC strides) as ONNX
 * MaxPool / AveragePool: y's H and W follow from x's, the window, the padding and
 * ceil_mode, and must match. Padding never wins a max. */
gaio_status gaio_pool2d(gaio_stream *stream, const gaio_tensor *x, const gaio_tensor *y, const gaio_pool_params *params);

/* y[n, c, 0, 0] = the mean of x[n, c, :, :]; y is [N, C, 1, 1] (or [N, C]). */
gaio_status gaio_global_avg_pool(gaio_stream *stream, const gaio_tensor *x, const gaio_tensor *y);

/* ---- resize (src/dnn/resize.c, dnn/cpu/resize.c, kernels/dnn/resize.cu) -------------- */

typedef enum gaio_resize_mode {
    GAIO_RESIZE_NEAREST = 0,
    GAIO_RESIZE_LINEAR = 1, /* bilinear */
    GAIO_RESIZE_CUBIC = 2   /* bicubic (Keys, coefficient cubic_coeff_a) */
} gaio_resize_mode;

/* ONNX's coordinate_transformation_mode: where output index o of an axis samples x,
 * with `scale` that axis's scale and `length` x's length times it (not rounded). */
typedef enum gaio_resize_coord {
    GAIO_RESIZE_HALF_PIXEL = 0,           /* (o + 0.5) / scale - 0.5 */
    GAIO_RESIZE_ASYMMETRIC = 1,           /* o / scale */
    GAIO_RESIZE_PYTORCH_HALF_PIXEL = 2,   /* half_pixel, or -0.5 where length is 1 */
    GAIO_RESIZE_TF_HALF_PIXEL_FOR_NN = 3, /* (o + 0.5) / scale */
    GAIO_RESIZE_ALIGN_CORNERS = 4,        /* o (in - 1) / (length - 1), or 0 where length is 1 */
    GAIO_RESIZE_TF_CROP_AND_RESIZE = 5,   /* align_corners within roi; outside x: extrapolation_value */
    GAIO_RESIZE_HALF_PIXEL_SYMMETRIC = 6  /* half_pixel shifted so that y's centre maps to x's */
} gaio_resize_coord;

/* ONNX's nearest_mode: how NEAREST rounds a sampling position between two elements. */
typedef enum gaio_resize_nearest {
    GAIO_RESIZE_ROUND_PREFER_FLOOR = 0,
    GAIO_RESIZE_ROUND_PREFER_CEIL = 1,
    GAIO_RESIZE_FLOOR = 2,
    GAIO_RESIZE_CEIL = 3
} gaio_resize_nearest;

typedef struct gaio_resize_params {
    gaio_resize_mode mode;
    gaio_resize_coord coord;
    gaio_resize_nearest nearest; /* NEAREST only */
    /* The scale of H and W that the coordinate rule uses: ONNX's 'scales' where the
     * model gives them (not y's size over x's, which the floor of the output size
     * makes differ); 0: y's size over x's (ONNX's 'sizes'). Finite, > 0, and times
     * x's length at least 0.5 (the least ONNX's rounding turns into one element). */
    double scale[2];
    /* TF_CROP_AND_RESIZE: the crop as fractions of x, start_h, start_w, end_h, end_w
     * (ONNX's roi of the H and W axes); ignored otherwise */
    float roi[4];
    float cubic_coeff_a;      /* CUBIC: ONNX's default is -0.75 (PyTorch's); finite */
    int32_t exclude_outside;  /* LINEAR, CUBIC: taps outside x weigh 0, the rest renormalised */
    float extrapolation_value; /* TF_CROP_AND_RESIZE: y where the crop samples outside x */
    /* LINEAR, CUBIC (ignored for NEAREST): ONNX 18's antialias, when downscaling by s the
     * filter stretched by 1 / s (PIL's and torchvision's antialiased resize); up to 64
     * taps per axis: linear down to a scale of 1/32, cubic to 1/16 (else
     * GAIO_ERR_NOT_SUPPORTED) */
    int32_t antialias;
} gaio_resize_params;

/* y = x resized over H and W as ONNX Resize (opsets 10-19) computes it:
 * x is [N, C, H, W], y [N, C, OH, OW] (logical order; NCHW, NHWC or any strides), one
 * dtype, F32 or F16. Sampling positions and weights are computed in F64, as ONNX's
 * reference computes them (so nearest's ties fall as there), the sums in F32. y's OH
 * and OW are the caller's (ONNX: floor(H * scale) from scales, or the sizes). Taps
 * outside x read its edge element. y may not overlap x. */
gaio_status gaio_resize2d(gaio_stream *stream, const gaio_tensor *x, const gaio_tensor *y,
                          const gaio_resize_params *params);
/* ---- reductions over axes, arg-reductions, top-k (src/dnn/reduce_axes.c,
 * dnn/cpu/reduce_axes.c, kernels/dnn/reduce_axes.cu) -----------------------------------
 * x of any shape and strides (1 to 5 dimensions), F32 or F16, accumulated in F32. The
 * outputs keep x's rank: size 1 on each reduced axis (ONNX's keepdims form; a caller
 * that drops those axes describes the same memory with the 1s in place). No output
 * may overlap x. */

typedef enum gaio_reduce_op {
    GAIO_REDUCE_SUM = 0,
    GAIO_REDUCE_MEAN = 1,
    GAIO_REDUCE_MAX = 2,         /* NaN if any element is NaN */
    GAIO_REDUCE_MIN = 3,         /* NaN if any element is NaN */
    GAIO_REDUCE_PROD = 4,
    GAIO_REDUCE_L1 = 5,          /* sum of |x| */
    GAIO_REDUCE_L2 = 6,          /* sqrt(sum of x^2) */
    GAIO_REDUCE_SUM_SQUARE = 7,  /* sum of x^2 */
    GAIO_REDUCE_LOG_SUM = 8,     /* log(sum of x) */
    GAIO_REDUCE_LOG_SUM_EXP = 9  /* log(sum of e^x), computed as max + log(sum of e^(x - max)) */
} gaio_reduce_op;

typedef struct gaio_reduce_params {
    gaio_reduce_op op;
    /* Bit d set: dimension d of x is reduced (y's is 1). No bit set reduces each element
     * as a set of one: y = op over {x} (x, x^2, |x|, log x, ...), ONNX's
     * noop_with_empty_axes; a bit on a dimension of size 1 does the same there. */
    uint32_t axes;
} gaio_reduce_params;

/* y = op over the axes of x; y is F32 or F16 (not necessarily x's dtype). */
gaio_status gaio_reduce(gaio_stream *stream, const gaio_tensor *x, const gaio_tensor *y,
                        const gaio_reduce_params *params);

typedef struct gaio_arg_reduce_params {
    int32_t axis;              /* negative counts from the end */
    int32_t min;               /* 0: the index of the largest element (ArgMax), else of the smallest (ArgMin) */
    int32_t select_last_index; /* of equal elements, the last's index rather than the first's */
} gaio_arg_reduce_params;

/* y[.., 0, ..] = the index along axis of x's largest (smallest) element, as ONNX
 * ArgMax / ArgMin: y is S64 with size 1 on axis. A NaN counts as beyond every number
 * (numpy's argmax and argmin both pick it). */
gaio_status gaio_arg_reduce(gaio_stream *stream, const gaio_tensor *x, const gaio_tensor *y,
                            const gaio_arg_reduce_params *params);

typedef struct gaio_topk_params {
    int32_t axis;    /* negative counts from the end */
    int32_t largest; /* non-zero: the k largest, else the k smallest */
    int64_t k;       /* 1 .. x's size along axis */
} gaio_topk_params;

/* The k largest (smallest) elements of x along axis, as ONNX TopK: values (x's dtype)
 * and indices (S64) have x's shape with k on axis, and are always sorted (best first;
 * of equal elements the lower index first; a NaN counts as beyond every number).
 * Either output may be NULL (not both): the other alone is computed. */
gaio_status gaio_topk(gaio_stream *stream, const gaio_tensor *x, const gaio_tensor *values,
                      const gaio_tensor *indices, const gaio_topk_params *params);

/* y = log(softmax(x)) along axis (negative counts from the end), computed stably in F32
 * as x - max - log(sum of e^(x - max)); x and y of one dtype and shape; y may be x. */
gaio_status gaio_log_softmax(gaio_stream *stream, const gaio_tensor *x, const gaio_tensor *y, int32_t axis);

/* ---- layout (src/dnn/layout.c, dnn/cpu/layout.c, kernels/dnn/layout.cu) ------------- */

/* y = x with its dimensions permuted: y.shape[i] = x.shape[perm[i]]; any strides on
 * both sides (negative ones too). */
gaio_status gaio_transpose(gaio_stream *stream, const gaio_tensor *x, const gaio_tensor *y, const int32_t *perm);

/* y = the count tensors xs joined along `axis` (negative counts from the end); every
 * other dimension equal; one dtype. Up to 64 inputs per call. */
gaio_status gaio_concat(gaio_stream *stream, const gaio_tensor *const *xs, int32_t count, int32_t axis,
                        const gaio_tensor *y);

/* ---- indexing (src/dnn/gather.c, dnn/cpu/gather.c, kernels/dnn/gather.cu) ----------
 * Ops that only move elements: x and y of one dtype, any gaio_dtype (the integer and
 * byte ones too), any strides (negative ones too); y overlaps no input. Indices are S32
 * or S64 tensors of any strides. An index k along an axis of extent s counts from the
 * end once when negative (k + s) and, if still outside [0, s), is clamped to the
 * nearest end: an op never reads outside x. (ONNX calls such an index an error, which
 * a kernel cannot report: check indices first where that matters.) */

/* ONNX Gather: y is x with dimension `axis` (negative counts from the end) replaced by
 * the dimensions of indices: y[a.., i.., b..] = x[a.., indices[i..], b..]. y.ndim is
 * x.ndim - 1 + indices.ndim or, when indices holds one element, x.ndim - 1 (a scalar
 * index: the axis dropped; a 1-D x gives y [1]). */
gaio_status gaio_gather(gaio_stream *stream, const gaio_tensor *x, const gaio_tensor *indices, const gaio_tensor *y,
                        int32_t axis);

/* ONNX GatherElements: y[c] = x[c with c[axis] = indices[c]]. indices and y of one
 * shape; x of their rank, no smaller than them along the other dimensions. */
gaio_status gaio_gather_elements(gaio_stream *stream, const gaio_tensor *x, const gaio_tensor *indices,
                                 const gaio_tensor *y, int32_t axis);

/* ONNX Where: y = cond ? a : b element by element, with NumPy broadcasting as
 * gaio_binary's: cond U8 (0 false, anything else true); a, b and y of one dtype, y of
 * the broadcast shape. */
gaio_status gaio_where(gaio_stream *stream, const gaio_tensor *cond, const gaio_tensor *a, const gaio_tensor *b,
                       const gaio_tensor *y);

typedef enum gaio_pad_mode {
    GAIO_PAD_CONSTANT = 0, /* value */
    GAIO_PAD_REFLECT = 1,  /* x mirrored about its end elements, which are not repeated (numpy's reflect) */
    GAIO_PAD_EDGE = 2,     /* the nearest end element */
    GAIO_PAD_WRAP = 3      /* x repeated (ONNX's wrap, opset 19) */
} gaio_pad_mode;

typedef struct gaio_pad_params {
    gaio_pad_mode mode;
    /* Elements added before x along each dimension (negative: that many cut off x); the
     * elements after it follow from y's shape: y.shape[d] - x.shape[d] - begin[d]. */
    int64_t begin[GAIO_TENSOR_MAX_NDIM];
    double value; /* CONSTANT's fill, in y's dtype (an integer dtype takes a whole number in its range) */
} gaio_pad_params;

/* ONNX Pad: y is x with elements added (or, for negative pads, cut off first, as
 * onnxruntime does) at either end of each dimension. REFLECT and WRAP keep mirroring or
 * repeating where the padding is longer than x. What the cuts leave of x must hold at
 * least one element along each dimension. */
gaio_status gaio_pad(gaio_stream *stream, const gaio_tensor *x, const gaio_tensor *y, const gaio_pad_params *params);

/* ---- convolution (src/dnn/conv.c, dnn/cpu/conv_cpu.c, dnn/cuda/conv_cuda.c) ---------- */

typedef struct gaio_conv2d_params {
    int32_t stride[2];   /* height, width; 0 means 1 */
    int32_t pad[4];      /* top, left, bottom, right */
    int32_t dilation[2]; /* 0 means 1 */
    int32_t groups;      /* 0 means 1; C and K are multiples of it (depthwise: groups = C) */
    /* Applied last (may be NULL: none). Fused on both backends: RELU, CLIP (ReLU6),
     * SIGMOID, SILU, TANH, GELU, GELU_TANH and, on the host, the rest (the ops from
     * SQRT on by gaio's own convolution rather than oneDNN's); a GPU runs an activation
     * cuDNN cannot fuse (HARD_SIGMOID, HARD_SWISH, SQRT and after) as a second pass. */
    const gaio_unary_params *act;
    /* F16 on a GPU: also let cuDNN pick engines that accumulate in f16 (PyTorch's
     * default): faster where few input channels make short sums (ResNet-50's 3-channel
     * stem: 2x on an H100), less precise. 0: f32 accumulation only. */
    int32_t f16_accumulation;
} gaio_conv2d_params;

/* What a convolution's plan does (gaio_conv2d_prepare). */
typedef struct gaio_conv2d_info {
    int32_t fused;             /* bias, residual and activation run inside the convolution's kernels */
    int32_t cuda_graph_native; /* cuDNN can build the plan into a CUDA graph itself (cudnnBackendPopulateCudaGraph) */
    int32_t from_cache;        /* GPU: the plan was cached already (this process, or a loaded plan cache) */
    size_t workspace;          /* device bytes it needs (taken from the stream's workspace) */
    char engine[64];           /* cuDNN's engine ("eng42 k2=1 k3=0" ...), oneDNN's implementation or gaio's own path */
} gaio_conv2d_info;

/* y = act(conv2d(x, w) + bias + residual), the convolution of CNNs (cross-correlation,
 * as cuDNN, PyTorch and ONNX Conv compute it): x is [N, C, H, W], w [K, C / groups, R,
 * S], y and residual [N, K, P, Q] with P = (H + pad_top + pad_bottom - dilation_h (R -
 * 1) - 1) / stride_h + 1 (floor) and Q alike, bias 1-D [K]. Shapes in logical order;
 * memory packed NCHW or NHWC (the layout field) or strided. One dtype for all (F32 or
 * F16; bias too); F32 accumulation (see f16_accumulation), and f32 data computed in
 * f32 (no TF32). bias and residual may be NULL; residual may be y
 * itself (the in-place residual add), no other overlap with y is allowed.
 *
 * On a GPU: one cuDNN graph (convolution, then pointwise ops for the bias, residual and
 * activation) run by a plan cuDNN picks by heuristics, fused by its runtime-fusion
 * engines. fp16 tensor cores want NHWC x, w and y with C and K multiples of 8. On the
 * host: oneDNN's convolution with the same ops as post-ops where oneDNN loads; else
 * (or with GAIO_DNN_NO_ONEDNN=1) gaio's own im2col + GEMM with the same epilogue.
 *
 * The plan of a shape is made once per context and cached: the first call with a new
 * shape makes it on the calling thread (cuDNN's runtime fusion compiles code there: up
 * to seconds), later calls only look it up. Call gaio_conv2d_prepare at load time to
 * keep that off a latency-sensitive path. */
gaio_status gaio_conv2d(gaio_stream *stream, const gaio_tensor *x, const gaio_tensor *w, const gaio_tensor *bias,
                        const gaio_tensor *residual, const gaio_tensor *y, const gaio_conv2d_params *params);

/* Checks the arguments as gaio_conv2d does and makes (or finds) the plan in the
 * stream's context, without enqueuing anything; the buffers' contents are not read.
 * info (may be NULL) says what the plan does. */
gaio_status gaio_conv2d_prepare(gaio_stream *stream, const gaio_tensor *x, const gaio_tensor *w,
                                const gaio_tensor *bias, const gaio_tensor *residual, const gaio_tensor *y,
                                const gaio_conv2d_params *params, gaio_conv2d_info *info);

/* ---- transposed convolution (src/dnn/conv_transpose.c, dnn/cpu/conv_transpose_cpu.c) ---- */

typedef struct gaio_conv_transpose2d_params {
    int32_t stride[2];         /* height, width; 0 means 1 */
    /* Cropped from the uncropped output's top, left, bottom and right (ONNX
     * ConvTranspose's pads). A negative pad, which ONNX's output_shape can make, adds
     * as many rows or columns of zeros (the bias) on that side instead. */
    int32_t pad[4];
    int32_t output_padding[2]; /* >= 0: rows and columns added at the bottom and right */
    int32_t dilation[2];       /* 0 means 1 */
    int32_t groups;            /* 0 means 1; C and K are multiples of it (depthwise: groups = C = K) */
} gaio_conv_transpose2d_params;

/* y = conv_transpose2d(x, w) + bias, the convolution's gradient with respect to its
 * input (ONNX ConvTranspose, PyTorch conv_transpose2d): x is [N, C, H, W], w [C, K /
 * groups, R, S] (ONNX's and PyTorch's order), y [N, K, P, Q] with
 *   P = (H - 1) stride_h + dilation_h (R - 1) + 1 - pad_top - pad_bottom + output_padding_h
 * and Q alike, bias (may be NULL) 1-D [K]. Each x[n, c, h, w] times w[c, k', r, s] adds
 * to y[n, k, h stride_h + r dilation_h - pad_top, w stride_w + s dilation_w - pad_left]
 * (k = group of c * K / groups + k'), where that lies in y; a y element no tap reaches
 * holds the bias (or 0). Shapes in logical order; memory NCHW, NHWC or strided. One
 * dtype for all (F32 or F16; bias too); F32 accumulation, f32 data computed in f32.
 * y must not overlap the others.
 *
 * On a GPU: cuDNN's backward-data convolution with w as the forward filter (its plan
 * made once per shape and context and cached, as gaio_conv2d's), then the bias as
 * gaio_binary; rows or columns of y that no tap reaches (negative pads, output padding
 * past the last tap) are zeroed first with a fill of y's memory. Where cuDNN has no
 * engine, or y has such rows and gaps between its elements, gaio's own (slower)
 * kernel computes y instead. On the host: oneDNN's deconvolution where oneDNN loads,
 * else gaio's own loop over y. GAIO_DNN_CONVT=gaio runs gaio's kernel on both
 * backends (tests). */
gaio_status gaio_conv_transpose2d(gaio_stream *stream, const gaio_tensor *x, const gaio_tensor *w,
                                  const gaio_tensor *bias, const gaio_tensor *y,
                                  const gaio_conv_transpose2d_params *params);

/* Checks the arguments as gaio_conv_transpose2d does and makes (or finds) the plan,
 * timing cuDNN's candidates on a GPU, without enqueuing anything; info (may be NULL)
 * says what runs it. */
gaio_status gaio_conv_transpose2d_prepare(gaio_stream *stream, const gaio_tensor *x, const gaio_tensor *w,
                                          const gaio_tensor *bias, const gaio_tensor *y,
                                          const gaio_conv_transpose2d_params *params, gaio_conv2d_info *info);

/* The context's cuDNN plans, written to / read from a file (cuDNN's serialized plans:
 * loading one skips its heuristics and runtime compilation). A plan cache only loads on
 * the cuDNN version and GPU model that wrote it (GAIO_ERR_NOT_SUPPORTED otherwise,
 * saying which differ). *count (may be NULL) receives the number of plans written or
 * loaded. CUDA contexts only. */
gaio_status gaio_dnn_plan_cache_save(gaio_context *ctx, const char *path, size_t *count);
gaio_status gaio_dnn_plan_cache_load(gaio_context *ctx, const char *path, size_t *count);

#ifdef __cplusplus
}
#endif
#endif
