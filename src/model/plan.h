/* The planner: the loaded graph rewritten into the steps an execution context runs.
 *
 * - BatchNormalization after a convolution (its only reader) folds into the
 *   convolution's weights and bias: w' = w * g / sqrt(var + eps) per output channel,
 *   b' = (b - mean) * g / sqrt(var + eps) + beta.
 * - A convolution's epilogue fuses into it: an Add of another tensor of its output's
 *   shape (the residual of ResNets), then Relu or Clip, when each intermediate has one
 *   reader and is no graph output; with all_acts, also Sigmoid, Tanh, HardSigmoid,
 *   HardSwish, and SiLU written as x * Sigmoid(x) (EfficientNet, MobileNetV3, RegNetY).
 *   The fused step runs where its last absorbed node stood, so the residual is
 *   computed by then.
 * - A MatMul's bias (an Add of a constant row) and then a residual (an Add of a tensor
 *   of its shape: the GEMM's C) fuse into its GEMM, and an activation
 *   after a MatMul or Gemm into its step (GELU as exported, Div -> Erf -> Add -> Mul ->
 *   Mul, included: ConvNeXt, ViT, Swin).
 * - GELU chains elsewhere run as one step (xstep.gelu).
 * - Attention (q @ k^T scaled, an optional constant bias, Softmax, @ v) on f16 GPU
 *   engines: one gaio_attention step (xstep.attention).
 * - A MatMul's operands scaled by constant scalars (Mul or Div: attention's q and k
 *   scaled by dim^-1/4 each) fold into the GEMM's alpha, and a Transpose of B that
 *   swaps its last two dimensions (q @ k^T) into its trans_b.
 * Folded weights are new constants (extra values after the graph's own). */
#ifndef GAIO_MODEL_PLAN_H
#define GAIO_MODEL_PLAN_H

#include "model/graph.h"

typedef struct xstep {
    const mnode *n;  /* the node run (its op and attributes) */
    int32_t out;     /* the value written: n's output, or the last absorbed node's */
    int32_t w, b;    /* Conv: weights and bias values (folded ones are extra values); b -1 if none;
                      * MatMul: b its fused bias or -1; w B's source where the planner absorbed
                      * a scale or a Transpose of B (else -1) */
    int32_t res;     /* Conv, MatMul: the fused residual (a MatMul's: its GEMM's C), or -1 */
    int32_t x;       /* MatMul: A's source where the planner absorbed a scale of A, else -1 */
    bool trans_b;    /* MatMul: the GEMM reads B (w) transposed */
    bool attention;  /* MatMul: the step is gaio_attention (plan.c attention_of): q x (or n's A),
                      * k w, v res, the bias b (or -1), the scale alpha; out the second MatMul's */
    bool rows_nhwc;  /* MatMul: out and res are [N, C, H, W] values stored NHWC, the Transpose of
                      * the product's [N, H, W, C] and what it adds to: the GEMM writes and reads
                      * their rows (plan.c nhwc_residual_of) */
    float alpha;     /* MatMul: the GEMM's alpha, the absorbed scales' product (1 if none) */
    bool has_act;    /* Conv, MatMul, Gemm: the fused activation */
    bool gelu;       /* an exported GELU chain (plan.c gelu_of) starting at n: GELU of n's non-constant input */
    gaio_unary_params act;
} xstep;

/* An extra constant the planner made (folded weights): host data, f32 or f16. */
typedef struct xconst {
    int32_t elem;
    int32_t ndim;
    int64_t dims[GAIO_MODEL_MAX_NDIM];
    void *data; /* malloc'd */
    size_t bytes;
} xconst;

typedef struct xplan {
    xstep *steps;
    int32_t nsteps;
    xconst *extra; /* value g->nvalues + i */
    int32_t nextra;
    int32_t folded_bn, fused_add, fused_act; /* what the rewrites did, for tests and logs */
    int32_t fused_attention;
} xplan;

/* What the planner may do for an engine. */
typedef struct xplan_opts {
    bool all_acts;  /* fuse every activation into convolutions (else ReLU and Clip only) */
    bool attention; /* fuse attention into gaio_attention steps (engines whose GPU kernel
                     * takes them: f16 on a GPU) */
    bool nhwc;      /* the engine stores 4-D values NHWC: rows_nhwc steps may be made */
} xplan_opts;

gaio_status gaio__plan_make(const char *fn, const mgraph *g, const xplan_opts *o, xplan *p);
void gaio__plan_free(xplan *p);

#endif
