/* What the DNN files share: the resolved arguments of each op as the backends'
 * implementations take them, and the library loaders. */
#ifndef GAIO_DNN_INTERNAL_H
#define GAIO_DNN_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "core/error.h"
#include "dnn/ktensor.h"
#include "gaio/dnn.h"

/* The most blocks (of 256 threads) a DNN kernel launch asks for; the kernels stride
 * over the rest. Few enough that each thread handles many elements: a kernel that
 * indexes a gaio_ktensor parameter by a run-time dimension makes the compiler copy the
 * parameter into local memory in every thread (~100 bytes per tensor), which at one
 * element per thread cost the H100 more traffic than the data itself. 2048 x 256
 * threads still fill any GPU (an H100 holds 132 x 2048). */
#define GAIO_DNN_MAX_BLOCKS 2048

/* t's strides in elements without checking it (no buffer is read): its own, or packed
 * by its layout where all are 0; false where packed ones overflow. */
bool gaio__tensor_strides(const gaio_tensor *t, int64_t *strides);

/* Checks tensor `name` of the public function fn and fills its packed strides. */
gaio_status gaio__tensor_check(const char *fn, const char *name, const gaio_tensor *t, gaio_tensor *resolved,
                               size_t *bytes);

/* A tensor checked for an op of gaio's own kernels: its descriptor with strides
 * resolved, what kernels see of it, and the device addresses [lo, hi) its bytes span. */
typedef struct gaio__ktensor_view {
    gaio_tensor t;
    gaio_ktensor k;
    uint64_t lo, hi;
} gaio__ktensor_view;

/* Checks tensor `name` of fn (gaio__tensor_check, then: F32 or F16, else
 * GAIO_ERR_NOT_SUPPORTED saying "<what> take f32 or f16"; an offset of whole
 * elements; memory the stream reaches) and fills v. */
gaio_status gaio__ktensor_view_resolve(const char *fn, const char *name, const char *what, const gaio_tensor *t,
                                       gaio_stream *s, gaio__ktensor_view *v);

/* A convolution's operands (gaio_conv2d, gaio_conv_transpose2d): x, w and y resolved
 * (gaio__ktensor_view_resolve) into v[0..2], each 4-D, all of one dtype; op ("a 2-D
 * convolution") names the operation in the rank message. gaio__conv_view_4d is the
 * rank check alone, for further operands (a residual). */
gaio_status gaio__conv_views(const char *fn, const char *what, const char *op, gaio_stream *s, const gaio_tensor *x,
                             const gaio_tensor *w, const gaio_tensor *y, gaio__ktensor_view v[3]);
gaio_status gaio__conv_view_4d(const char *fn, const char *name, const char *op, const gaio__ktensor_view *v);

/* gaio__ktensor_view_resolve, widened by flags: NEGATIVE_STRIDES takes reversed
 * views (element [0, ...] at the offset, others below it: a Slice with a negative
 * step), whose [lo, hi) then starts below the offset; ANY_DTYPE takes every gaio_dtype
 * (indices, masks, ops that only move elements). */
enum { GAIO__KT_NEGATIVE_STRIDES = 1u, GAIO__KT_ANY_DTYPE = 2u };
gaio_status gaio__ktensor_view_resolve_ex(const char *fn, const char *name, const char *what, const gaio_tensor *t,
                                          gaio_stream *s, unsigned flags, gaio__ktensor_view *v);

/* y = x for two views of one shape and dtype, any dtype and strides (negative too): the
 * layout ops' copy kernel. gaio_cast's path for integer and byte tensors (gather.c). */
gaio_status gaio__copy_any(const char *fn, gaio_stream *stream, const gaio_tensor *x, const gaio_tensor *y);

/* Whether a and b interleave without an element in common: one dimension of stride 1
 * in both (channels), every other stride of either a multiple of the smallest, P, and
 * the two runs of channels at disjoint places within every P elements (a model engine's
 * channel slices of one NHWC tensor: plan-free Concat inputs, engine.c
 * concat_in_place). A sufficient test: false says nothing. */
bool gaio__ktensor_apart(const gaio_ktensor *a, const gaio_ktensor *b);

/* Byte ranges that meet, unless gaio__ktensor_apart shows the views interleave apart:
 * conservative otherwise (exact overlap of strided tensors is costly to decide). */
static inline bool gaio__ktensor_view_overlap(const gaio__ktensor_view *a, const gaio__ktensor_view *b) {
    return a->lo < b->hi && b->lo < a->hi && !gaio__ktensor_apart(&a->k, &b->k);
}

/* Whether no two elements of k share memory: with the dimensions of more than one
 * element sorted by stride (magnitude), each stride passes the extent of all smaller ones (a
 * sufficient test: it refuses a few interleavings that would not collide). Writes
 * through a view that fails it would race. */
bool gaio__ktensor_distinct(const gaio_ktensor *k);

/* Checks a gaio_unary_params (`name` of fn): the op, CLIP's and HARD_SIGMOID's numbers. */
gaio_status gaio__unary_params_check(const char *fn, const char *name, const gaio_unary_params *p);

/* gaio_batch_norm with an activation after it in the same pass (act NULL: none), as
 * a model engine runs BatchNormalization -> Relu (DenseNet's pre-activations). With
 * affine, y = act(x * scale + bias): the statistics already folded into scale and bias
 * (an engine's constant ones, once at build), mean, var and epsilon unread. */
gaio_status gaio__batch_norm_act(const char *fn, gaio_stream *stream, const gaio_tensor *x, const gaio_tensor *y,
                                 const gaio_tensor *scale, const gaio_tensor *bias, const gaio_tensor *mean,
                                 const gaio_tensor *var, float epsilon, const gaio_unary_params *act, bool affine);

/* "[2, 3, 4]" for messages. */
void gaio__shape_text(int32_t ndim, const int64_t *shape, char *out, size_t size);

/* A checked GEMM: D = act(alpha * op(A) op(B) + beta * C + bias), `batch` times.
 * Pointers are device (or, on the host backend, host) addresses of element [0, ...];
 * strides in elements. A batch stride of 0 broadcasts that operand. op(A) is m x k:
 * A is stored m x k (row i at a + i * lda) or, with trans_a, k x m. The same for B
 * (k x n, or n x k with trans_b). c may be NULL (no C term) and may equal d. bias may
 * be NULL; else n values of cd_dtype. */
typedef struct gaio__gemm_args {
    const void *a, *b, *c, *bias;
    void *d;
    gaio_dtype ab_dtype; /* F32 or F16 */
    gaio_dtype cd_dtype; /* F32 or F16 (F32 when ab_dtype is F32); bias too */
    int64_t batch, m, n, k;
    int64_t lda, ldb, ldc, ldd;
    int64_t a_batch_stride, b_batch_stride, c_batch_stride, d_batch_stride;
    bool trans_a, trans_b;
    float alpha, beta;
    gaio_activation act;
} gaio__gemm_args;

/* The host implementation (src/dnn/cpu/gemm_cpu.c): runs the whole GEMM on the calling
 * worker thread, splitting it over the worker pool. GAIO_ERR_DRIVER when OpenBLAS
 * cannot be loaded (checked at submission by gaio__openblas_load as well). */
gaio_status gaio__gemm_cpu(const gaio__gemm_args *g);

/* The CUDA implementation (src/dnn/cuda/gemm_cuda.c): enqueues the GEMM on the
 * native stream, from inside the op's native function (the context current). Without
 * the CUDA backend these fail with GAIO_ERR_NOT_SUPPORTED. */
gaio_status gaio__gemm_cuda(void *native_stream, const gaio__gemm_args *g, gaio_stream *stream);
/* Loads cuBLASLt for fn (at submission, so that a missing library fails the call). */
gaio_status gaio__gemm_cuda_ready(const char *fn);

/* Opens OpenBLAS once (src/dnn/cpu/openblas.c). fn names the public function for the
 * message; *description (may be NULL) says what was loaded. */
gaio_status gaio__openblas_load(const char *fn, const char **description);

/* A checked convolution: y = act(conv2d(x, w) + bias + residual). Strides in elements,
 * in logical order (x: N, C, H, W; w: K, C / groups, R, S; y and residual: N, K, P, Q);
 * pointers are device (or host) addresses of element [0, 0, 0, 0]. bias and residual
 * may be NULL (bias is packed: K adjacent values); residual may equal y (with y's
 * strides). */
typedef struct gaio__conv_args {
    gaio_dtype dtype; /* F32 or F16, every tensor */
    int64_t n, c, h, w, k, r, s, p, q;
    int32_t groups, stride[2], pad[4], dilation[2];
    int64_t xs[4], ws[4], ys[4], rs[4];
    const void *x, *wt, *bias, *residual;
    void *y;
    bool has_act;
    gaio_unary_params act;
    bool f16_accumulation; /* GPU, F16: engines that accumulate in f16 are allowed */
    /* GPU: plan cuDNN's backward data of this convolution instead, for
     * gaio_conv_transpose2d: x is then written (the transposed convolution's output)
     * from y (its input); no bias, residual or activation. */
    bool transposed;
    /* Host: w already in the primitive's layout (gaio__conv_cpu_pack), or NULL. */
    struct gaio__conv_cpu_weights *packed;
} gaio__conv_args;

/* The host convolution (src/dnn/cpu/conv_cpu.c): runs on the calling worker thread
 * through oneDNN where it loads, else through gaio's own im2col + GEMM
 * (src/dnn/cpu/conv_gemm.c). gaio__onednn_load opens oneDNN once (GAIO_ERR_DRIVER when
 * it is missing or GAIO_DNN_NO_ONEDNN is set); *description (may be NULL) says what
 * loaded. */
gaio_status gaio__conv_cpu(const gaio__conv_args *a);
/* Constant weights for the host convolution, reordered once into the layout oneDNN's
 * primitive for problem a takes (each call would otherwise reorder them: 46 MB per
 * ResNet-18 run). *out is NULL where nothing would be reordered (no oneDNN, or w
 * already in that layout). Refcounted: a call in flight holds a reference. */
typedef struct gaio__conv_cpu_weights gaio__conv_cpu_weights;
gaio_status gaio__conv_cpu_pack(const gaio__conv_args *a, gaio__conv_cpu_weights **out);
gaio__conv_cpu_weights *gaio__conv_cpu_weights_ref(gaio__conv_cpu_weights *w);
void gaio__conv_cpu_weights_release(gaio__conv_cpu_weights *w);
gaio_status gaio__onednn_load(const char *fn, const char **description);

/* A checked transposed convolution for the host (src/dnn/cpu/conv_transpose_cpu.c):
 * x [n, c, h, w], w [c, k / groups, r, s], y [n, k, p, q], bias NULL or k packed values;
 * strides in elements, in logical order. pad_top / pad_left may be negative (see
 * gaio_conv_transpose2d_params); the bottom and right ones follow from p and q. */
typedef struct gaio__convt_args {
    gaio_dtype dtype; /* F32 or F16, every tensor */
    int64_t n, c, h, w, k, r, s, p, q;
    int32_t groups, stride[2], pad[2], dilation[2];
    int64_t xs[4], ws[4], ys[4];
    const void *x, *wt, *bias;
    void *y;
} gaio__convt_args;

/* Runs a on the calling worker (oneDNN's deconvolution where it loads, else gaio's
 * own loop over y, split over the worker pool); *_prepare makes oneDNN's primitive
 * and names what runs it. */
gaio_status gaio__convt_cpu(const gaio__convt_args *a);
void gaio__convt_cpu_prepare(const gaio__convt_args *a, char *impl, size_t size);

/* The CUDA convolution (src/dnn/cuda/conv_cuda.c). A plan is a cuDNN execution plan
 * for one shape, kept in the stream's context's cache; gaio__conv_cuda_plan finds or
 * makes it on the calling thread and returns a reference (released with
 * gaio__conv_plan_release; the cache holds its own). The residual always runs inside
 * the plan: as a fused add, or as the convolution's beta = 1 over y (y must then hold
 * the residual when the plan runs: the caller copies it there first). A bias or
 * activation the plan could not fuse the caller runs after it with gaio's own
 * kernels. Without the CUDA backend these fail with GAIO_ERR_NOT_SUPPORTED. */
typedef struct gaio__conv_plan gaio__conv_plan;
typedef struct gaio__conv_fusion {
    bool bias, act;       /* inside the plan (when present) */
    bool residual_from_y; /* the residual is the convolution's beta = 1 over y */
    /* The plan fused the bias alone; y = act(y + residual) runs after it as gaio's own
     * kernel (so that cuDNN's runtime-fusion engines, refused with a fused residual,
     * may run the convolution: cudnn_graph.c suitable()). */
    bool residual_after;
} gaio__conv_fusion;
gaio_status gaio__conv_cuda_plan(const char *fn, gaio_stream *stream, const gaio__conv_args *a, int tune,
                                 gaio__conv_plan **plan, gaio_conv2d_info *info);
gaio__conv_fusion gaio__conv_plan_fusion(const gaio__conv_plan *p);
/* Whether the plan must not be captured into CUDA graphs: measured with cuDNN 9.14 on
 * an H200, runtime-compiled engines that fuse the residual as a tensor, captured into
 * graphs and launched on several streams at once, gave wrong outputs in about 4% of
 * ResNet-18 f16 runs (any contexts, plans or cuDNN handles: the hazard is
 * process-wide), where the same plans enqueued call by call never did (0 of 3,600)
 * and rejecting those engines costs 2-3x. docs/perf-notes.md has the numbers. */
bool gaio__conv_plan_graph_hazard(const gaio__conv_plan *p);
void gaio__conv_plan_release(gaio__conv_plan *p);
/* gaio_conv2d_prepare (tune: time cuDNN's candidates; else the heuristics' first) that
 * also hands the caller the CUDA plan it made or found (a reference, for an engine to
 * keep; NULL on the host and for gaio's own kernels). */
gaio_status gaio__conv2d_prepare_keep(gaio_stream *stream, const gaio_tensor *x, const gaio_tensor *w,
                                      const gaio_tensor *bias, const gaio_tensor *residual, const gaio_tensor *y,
                                      const gaio_conv2d_params *params, gaio_conv2d_info *info, bool tune,
                                      gaio__conv_plan **keep);
/* For a caller whose w never changes (a model engine's weights): w packed once for the
 * host convolution of these operands (gaio__conv_cpu_pack; *out NULL on a GPU or where
 * nothing is reordered), and gaio_conv2d taking it (packed may be NULL: plain). */
gaio_status gaio__conv2d_pack_weights(gaio_stream *stream, const gaio_tensor *x, const gaio_tensor *w,
                                      const gaio_tensor *bias, const gaio_tensor *residual, const gaio_tensor *y,
                                      const gaio_conv2d_params *params, gaio__conv_cpu_weights **out);
gaio_status gaio__conv2d_packed(gaio_stream *stream, const gaio_tensor *x, const gaio_tensor *w,
                                const gaio_tensor *bias, const gaio_tensor *residual, const gaio_tensor *y,
                                const gaio_conv2d_params *params, gaio__conv_cpu_weights *packed);
/* Patch convolutions (window = stride, no padding or dilation, groups 1; x NHWC, y
 * packed NHWC, f16) on a GPU as a copy into patches and one GEMM (dnn/conv_patches.c):
 * the scratch bytes they need for these operands, 0 where the path does not apply
 * (shapes and strides only: no buffer is read). GAIO_DNN_PATCHES=0 turns it off. */
size_t gaio__conv2d_patches_bytes(bool cuda, const gaio_tensor *x, const gaio_tensor *w, const gaio_tensor *bias,
                                  const gaio_tensor *residual, const gaio_tensor *y, const gaio_conv2d_params *p);
/* Runs one where gaio__conv2d_patches_bytes said it applies; scratch holds that many
 * bytes (its shape is not read). */
gaio_status gaio__conv2d_patches(gaio_stream *stream, const gaio_tensor *x, const gaio_tensor *w,
                                 const gaio_tensor *bias, const gaio_tensor *y, const gaio_conv2d_params *p,
                                 const gaio_tensor *scratch);
/* gaio_conv_transpose2d_prepare that also hands the caller the CUDA plan (as
 * gaio__conv2d_prepare_keep; NULL on the host). */
gaio_status gaio__conv_transpose2d_prepare_keep(gaio_stream *stream, const gaio_tensor *x, const gaio_tensor *w,
                                                const gaio_tensor *bias, const gaio_tensor *y,
                                                const gaio_conv_transpose2d_params *params, gaio_conv2d_info *info,
                                                bool tune, gaio__conv_plan **keep);
/* A plan as bytes (malloc'd into *data): its key, what gaio knows of it, the cuDNN
 * version, GPU model and cuDNN's own serialization (src/dnn/cuda/plan_file.c). */
gaio_status gaio__conv_plan_export(const char *fn, gaio_context *ctx, const gaio__conv_plan *p, void **data,
                                   size_t *size);
/* The plan of such bytes, finalized for ctx's device and added to its cache (or the
 * cached one of its key): a reference in *out. Bytes of another cuDNN version or GPU
 * model are GAIO_ERR_NOT_SUPPORTED saying which; malformed ones GAIO_ERR_INVALID_ARG. */
gaio_status gaio__conv_plan_import(const char *fn, gaio_context *ctx, const void *data, size_t size,
                                   gaio__conv_plan **out);
/* Enqueues the plan on the native stream, from inside the op's native function. */
gaio_status gaio__conv_cuda_run(void *native_stream, const gaio__conv_plan *p, const gaio__conv_args *a,
                                gaio_stream *stream);

#endif
