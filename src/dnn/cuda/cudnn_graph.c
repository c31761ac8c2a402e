/* A convolution as a cuDNN graph: see cudnn_graph.h.
 *
 * The graph is conv -> [+ bias] -> [+ residual] -> [activation] with the
 * intermediate results virtual (F32: cuDNN's runtime-fusion engines keep them in
 * registers) and only the last op writing y. When no engine takes the fused graph
 * (an unusual shape, dtype or layout), the convolution alone is planned and the
 * caller runs the rest with gaio's own kernels. */
#include "dnn/cuda/cudnn_graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

#define MAX_OPS 4
#define MAX_CONFIGS 64

gaio_status gaio__cudnn_fail(const char *fn, const gaio_cudnn_table *t, const char *call, cudnnStatus_t r) {
    char last[256] = "";
    t->cudnnGetLastErrorString(last, sizeof last);
    gaio_status st = r >= CUDNN_STATUS_NOT_SUPPORTED && r < CUDNN_STATUS_NOT_SUPPORTED + 1000 ? GAIO_ERR_NOT_SUPPORTED
                                                                                              : GAIO_ERR_DRIVER;
    return gaio__fail(st, fn, "%s failed: %s%s%.200s", call, t->cudnnGetErrorString(r), last[0] ? ": " : "", last);
}

static int32_t alignment(const void *p) {
    uintptr_t a = (uintptr_t)p;
    int32_t al = 16;
    while (al > 1 && a % (uintptr_t)al) al /= 2;
    return al;
}

void gaio__conv_key_make(const gaio__conv_args *a, conv_key *k) {
    memset(k, 0, sizeof *k);
    k->dtype = (int32_t)a->dtype, k->groups = a->groups;
    memcpy(k->stride, a->stride, sizeof k->stride);
    memcpy(k->pad, a->pad, sizeof k->pad);
    memcpy(k->dilation, a->dilation, sizeof k->dilation);
    k->n = a->n, k->c = a->c, k->h = a->h, k->w = a->w, k->k = a->k, k->r = a->r, k->s = a->s, k->p = a->p, k->q = a->q;
    memcpy(k->xs, a->xs, sizeof k->xs);
    memcpy(k->ws, a->ws, sizeof k->ws);
    memcpy(k->ys, a->ys, sizeof k->ys);
    k->has_bias = a->bias != NULL, k->has_res = a->residual != NULL;
    if (k->has_res) memcpy(k->rs, a->rs, sizeof k->rs);
    k->res_is_y = k->has_res && a->residual == a->y;
    k->has_act = a->has_act;
    k->f16_accumulation = a->f16_accumulation;
    k->transposed = a->transposed;
    if (a->has_act) k->act_op = (int32_t)a->act.op, k->act_alpha = a->act.alpha, k->act_beta = a->act.beta;
    k->align[CONV_UID_X - 1] = alignment(a->x);
    k->align[CONV_UID_W - 1] = alignment(a->wt);
    k->align[CONV_UID_Y - 1] = alignment(a->y);
    k->align[CONV_UID_BIAS - 1] = a->bias ? alignment(a->bias) : 0;
    k->align[CONV_UID_RES - 1] = a->residual ? alignment(a->residual) : 0;
}

void gaio__conv_key_dims(const conv_key *k, int64_t xd[4], int64_t wd[4], int64_t yd[4]) {
    const int64_t x[4] = {k->n, k->c, k->h, k->w}, w[4] = {k->k, k->c / k->groups, k->r, k->s};
    const int64_t y[4] = {k->n, k->k, k->p, k->q};
    memcpy(xd, x, sizeof x), memcpy(wd, w, sizeof w), memcpy(yd, y, sizeof y);
}

/* Every descriptor a build makes, destroyed together at the end. */
typedef struct builder {
    const char *fn;
    const gaio_cudnn_table *t;
    cudnnHandle_t handle;
    cudnnBackendDescriptor_t made[32];
    int nmade;
    gaio_status st;
} builder;

static cudnnBackendDescriptor_t make(builder *b, int type) {
    if (b->st != GAIO_OK) return NULL;
    if (b->nmade == (int)(sizeof b->made / sizeof b->made[0])) {
        b->st = gaio__fail(GAIO_ERR_STATE, b->fn, "a cuDNN graph needs more descriptors than gaio keeps");
        return NULL;
    }
    cudnnBackendDescriptor_t d = NULL;
    cudnnStatus_t r = b->t->cudnnBackendCreateDescriptor(type, &d);
    if (r != CUDNN_STATUS_SUCCESS) {
        b->st = gaio__cudnn_fail(b->fn, b->t, "cudnnBackendCreateDescriptor", r);
        return NULL;
    }
    b->made[b->nmade++] = d;
    return d;
}

static void set(builder *b, cudnnBackendDescriptor_t d, int name, int type, int64_t count, const void *v,
                const char *what) {
    if (b->st != GAIO_OK) return;
    cudnnStatus_t r = b->t->cudnnBackendSetAttribute(d, name, type, count, v);
    if (r != CUDNN_STATUS_SUCCESS) {
        char call[96];
        snprintf(call, sizeof call, "cudnnBackendSetAttribute (%s)", what);
        b->st = gaio__cudnn_fail(b->fn, b->t, call, r);
    }
}

static void finalize(builder *b, cudnnBackendDescriptor_t d, const char *what) {
    if (b->st != GAIO_OK) return;
    cudnnStatus_t r = b->t->cudnnBackendFinalize(d);
    if (r != CUDNN_STATUS_SUCCESS) {
        char call[96];
        snprintf(call, sizeof call, "cudnnBackendFinalize (%s)", what);
        b->st = gaio__cudnn_fail(b->fn, b->t, call, r);
    }
}

static void builder_end(builder *b) {
    while (b->nmade) b->t->cudnnBackendDestroyDescriptor(b->made[--b->nmade]);
}

static cudnnBackendDescriptor_t tensor(builder *b, int64_t uid, int dtype, const int64_t *dims, const int64_t *strides,
                                       bool is_virtual, int64_t align) {
    cudnnBackendDescriptor_t d = make(b, CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    set(b, d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dtype, "tensor dtype");
    set(b, d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims, "tensor dimensions");
    set(b, d, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides, "tensor strides");
    set(b, d, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid, "tensor id");
    set(b, d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align, "tensor alignment");
    bool v = is_virtual;
    set(b, d, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &v, "tensor virtual");
    finalize(b, d, "tensor");
    return d;
}

/* A pointwise op y = mode(x [, bb]) with its mode's parameters. */
static cudnnBackendDescriptor_t pointwise(builder *b, int mode, const gaio_unary_params *act,
                                          cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t bb,
                                          cudnnBackendDescriptor_t y) {
    cudnnBackendDescriptor_t pw = make(b, CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
    int prec = CUDNN_DATA_FLOAT;
    set(b, pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode, "pointwise mode");
    set(b, pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec, "pointwise precision");
    if (act && act->op == GAIO_UNARY_CLIP) {
        double lo = act->alpha, hi = act->beta;
        set(b, pw, CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP, CUDNN_TYPE_DOUBLE, 1, &lo, "clip lower bound");
        set(b, pw, CUDNN_ATTR_POINTWISE_RELU_UPPER_CLIP, CUDNN_TYPE_DOUBLE, 1, &hi, "clip upper bound");
    }
    if (act && act->op == GAIO_UNARY_SILU) {
        double beta = 1.0;
        set(b, pw, CUDNN_ATTR_POINTWISE_SWISH_BETA, CUDNN_TYPE_DOUBLE, 1, &beta, "swish beta");
    }
    finalize(b, pw, "pointwise");
    cudnnBackendDescriptor_t op = make(b, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
    set(b, op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &pw, "pointwise op");
    set(b, op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x, "pointwise x");
    if (bb) set(b, op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &bb, "pointwise b");
    set(b, op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y, "pointwise y");
    finalize(b, op, "pointwise operation");
    return op;
}

/* cuDNN's pointwise mode for a gaio activation, or -1 when it has none. */
static int act_mode(int32_t op) {
    switch (op) {
    case GAIO_UNARY_RELU:
    case GAIO_UNARY_CLIP:
        return CUDNN_POINTWISE_RELU_FWD; /* CLIP: with both bounds */
    case GAIO_UNARY_SIGMOID:
        return CUDNN_POINTWISE_SIGMOID_FWD;
    case GAIO_UNARY_SILU:
        return CUDNN_POINTWISE_SWISH_FWD;
    case GAIO_UNARY_TANH:
        return CUDNN_POINTWISE_TANH_FWD;
    case GAIO_UNARY_GELU:
        return CUDNN_POINTWISE_GELU_FWD;
    case GAIO_UNARY_GELU_TANH:
        return CUDNN_POINTWISE_GELU_APPROX_TANH_FWD;
    default:
        return -1;
    }
}

/* Whether the plan tries the activation inside. cuDNN fuses the ones beyond ReLU and
 * Clip (sigmoid, swish, tanh, GELU) only in runtime-compiled engines: NVRTC at build,
 * EfficientNet-B0's f16 plans 108 s instead of 6. They run after the plan instead, as
 * one in-place pass of gaio's element-wise kernel over y. GAIO_DNN_FUSE_ACT=all tries
 * them inside again, =relu keeps Clip out too (MobileNetV2's conv + bias + ReLU6 runs
 * in cuDNN's generated engines: to compare), both to measure. */
static bool act_in_plan(int32_t op) {
    if (act_mode(op) < 0) return false;
    const char *e = getenv("GAIO_DNN_FUSE_ACT");
    if (e && !strcmp(e, "all")) return true;
    return op == GAIO_UNARY_RELU || (op == GAIO_UNARY_CLIP && !(e && !strcmp(e, "relu")));
}

/* The operation graph of k with the epilogue f says runs inside, finalized. */
static cudnnBackendDescriptor_t graph(builder *b, const conv_key *k, const gaio__conv_fusion *f) {
    int dt = k->dtype == GAIO_DTYPE_F16 ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
    int fdt = CUDNN_DATA_FLOAT;
    int64_t xd[4], wd[4], yd[4], bd[4] = {1, k->k, 1, 1}, bs[4] = {k->k, 1, 1, 1};
    gaio__conv_key_dims(k, xd, wd, yd);
    int64_t p = yd[2], q = yd[3];
    cudnnBackendDescriptor_t x = tensor(b, CONV_UID_X, dt, xd, k->xs, false, k->align[0]);
    cudnnBackendDescriptor_t w = tensor(b, CONV_UID_W, dt, wd, k->ws, false, k->align[1]);
    cudnnBackendDescriptor_t y = tensor(b, CONV_UID_Y, dt, yd, k->ys, false, k->align[2]);

    cudnnBackendDescriptor_t cd = make(b, CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
    int64_t dims = 2, dil[2] = {k->dilation[0], k->dilation[1]}, str[2] = {k->stride[0], k->stride[1]};
    int64_t pre[2] = {k->pad[0], k->pad[1]}, post[2] = {k->pad[2], k->pad[3]};
    int mode = CUDNN_CROSS_CORRELATION;
    set(b, cd, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &dims, "convolution dims");
    set(b, cd, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &fdt, "convolution compute type");
    set(b, cd, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode, "convolution mode");
    set(b, cd, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dil, "dilations");
    set(b, cd, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, str, "strides");
    set(b, cd, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pre, "pre-paddings");
    set(b, cd, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, post, "post-paddings");
    finalize(b, cd, "convolution");

    /* The chain's tensors: each step's output is virtual but for the last. */
    int steps[3], nsteps = 0;
    if (k->has_bias && f->bias) steps[nsteps++] = CONV_UID_BIAS;
    if (k->has_res && !f->residual_from_y && !f->residual_after) steps[nsteps++] = CONV_UID_RES;
    if (k->has_act && f->act) steps[nsteps++] = 0;
    /* Virtual tensors are packed in y's order (channels innermost or not): engines
     * read their strides as a layout, and y's own may be padded. */
    int64_t vs[4];
    if (k->ys[1] <= k->ys[3]) /* NHWC */
        vs[1] = 1, vs[3] = k->k, vs[2] = k->k * q, vs[0] = k->k * q * p;
    else
        vs[3] = 1, vs[2] = q, vs[1] = p * q, vs[0] = k->k * p * q;
    cudnnBackendDescriptor_t cur = nsteps ? tensor(b, 100, fdt, yd, vs, true, 16) : y;

    cudnnBackendDescriptor_t ops[MAX_OPS];
    int nops = 0;
    float alpha = 1.0f, beta = k->has_res && f->residual_from_y ? 1.0f : 0.0f;
    if (k->transposed) { /* dx (x, written) from dy (y); the key has no epilogue (nsteps 0) */
        cudnnBackendDescriptor_t bwd = make(b, CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR);
        set(b, bwd, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cd,
            "backward data conv");
        set(b, bwd, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &w,
            "backward data w");
        set(b, bwd, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x,
            "backward data dx");
        set(b, bwd, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y,
            "backward data dy");
        set(b, bwd, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha,
            "backward data alpha");
        set(b, bwd, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA, CUDNN_TYPE_FLOAT, 1, &beta, "backward data beta");
        finalize(b, bwd, "backward data operation");
        ops[nops++] = bwd;
        nsteps = 0;
    } else {
        cudnnBackendDescriptor_t conv = make(b, CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
        set(b, conv, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cd, "conv");
        set(b, conv, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x, "conv x");
        set(b, conv, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &w, "conv w");
        set(b, conv, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cur, "conv y");
        set(b, conv, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha, "conv alpha");
        set(b, conv, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta, "conv beta");
        finalize(b, conv, "convolution operation");
        ops[nops++] = conv;
    }

    gaio_unary_params act = {(gaio_unary_op)k->act_op, k->act_alpha, k->act_beta};
    for (int i = 0; i < nsteps; i++) {
        cudnnBackendDescriptor_t out = i == nsteps - 1 ? y : tensor(b, 101 + i, fdt, yd, vs, true, 16);
        if (steps[i] == CONV_UID_BIAS) {
            cudnnBackendDescriptor_t bias = tensor(b, CONV_UID_BIAS, dt, bd, bs, false, k->align[3]);
            ops[nops++] = pointwise(b, CUDNN_POINTWISE_ADD, NULL, cur, bias, out);
        } else if (steps[i] == CONV_UID_RES) {
            cudnnBackendDescriptor_t res = tensor(b, CONV_UID_RES, dt, yd, k->rs, false, k->align[4]);
            ops[nops++] = pointwise(b, CUDNN_POINTWISE_ADD, NULL, cur, res, out);
        } else {
            ops[nops++] = pointwise(b, act_mode(k->act_op), &act, cur, NULL, out);
        }
        cur = out;
    }
    cudnnBackendDescriptor_t g = make(b, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    set(b, g, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &b->handle, "graph handle");
    set(b, g, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, nops, ops, "graph ops");
    finalize(b, g, "operation graph");
    return b->st == GAIO_OK ? g : NULL;
}

/* Engine name and behaviour of a finalized config. */
static void describe(builder *b, cudnnBackendDescriptor_t cfg, conv_built *out) {
    const gaio_cudnn_table *t = b->t;
    cudnnBackendDescriptor_t eng = NULL;
    if (t->cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &eng) != CUDNN_STATUS_SUCCESS) return;
    int64_t n = 0, index = -1;
    if (t->cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &eng) ==
        CUDNN_STATUS_SUCCESS) {
        t->cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n, &index);
        int notes[16];
        int64_t nn = 0;
        bool rtc = false;
        if (t->cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE, 16, &nn,
                                        notes) == CUDNN_STATUS_SUCCESS)
            for (int64_t i = 0; i < nn && i < 16; i++) {
                if (notes[i] == CUDNN_BEHAVIOR_NOTE_SUPPORTS_CUDA_GRAPH_NATIVE_API) out->cuda_graph_native = true;
                if (notes[i] == CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION) rtc = true;
            }
        snprintf(out->engine, sizeof out->engine, "cuDNN eng%lld%s", (long long)index, rtc ? " (runtime fusion)" : "");
    }
    t->cudnnBackendDestroyDescriptor(eng);
}

/* Whether dims with strides are packed NHWC (a dimension of 1 may have any stride). */
static bool packed_nhwc(const int64_t *d, const int64_t *s) {
    const int order[4] = {1, 3, 2, 0}; /* innermost first */
    int64_t want = 1;
    for (int i = 0; i < 4; i++) {
        int j = order[i];
        if (d[j] > 1 && s[j] != want) return false;
        want *= d[j];
    }
    return true;
}

static bool all_nhwc(const conv_key *k) {
    int64_t xd[4], wd[4], yd[4];
    gaio__conv_key_dims(k, xd, wd, yd);
    return packed_nhwc(xd, k->xs) && packed_nhwc(wd, k->ws) && packed_nhwc(yd, k->ys) &&
           (!k->has_res || packed_nhwc(yd, k->rs));
}

/* Whether a config keeps gaio's precision (f32 data computed in f32: no TF32 tensor
 * cores, no down-converted inputs; f16 data accumulated in f32 unless the caller
 * allowed f16) and suits the
 * tensors: on an H100 with cuDNN 9.14, runtime-fusion engines accepted rows padded
 * by strides, and an NCHW x with an NHWC y, and computed wrong results; they get
 * packed NHWC tensors only (their documented layout), the rest the other engines.
 * Runtime-compiled engines with the residual fused as a tensor (eng4 "(runtime fusion)"
 * on ResNet's Conv+Add+Relu) are refused too: on an H200 with cuDNN 9.14 they computed
 * wrong outputs for some images at some batch sizes (ResNet-18 f16: batches 16 and 32
 * wrong, 8 and 64 right; graphs or none, one stream), and more when replayed from CUDA
 * graphs on several streams (docs/perf-notes.md). GAIO_DNN_NO_RTC=1 refuses
 * runtime-compiled engines everywhere, =0 nowhere (the old choice, to measure what
 * they bring), =res (the default) where the residual is fused: res_fused says whether
 * this graph holds it as a tensor. */
static bool suitable(builder *b, cudnnBackendDescriptor_t cfg, const conv_key *k, bool res_fused) {
    int32_t dtype = k->dtype;
    const gaio_cudnn_table *t = b->t;
    cudnnBackendDescriptor_t eng = NULL;
    if (t->cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &eng) != CUDNN_STATUS_SUCCESS) return false;
    int64_t n = 0;
    int notes[16];
    bool ok = t->cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n,
                                          &eng) == CUDNN_STATUS_SUCCESS &&
              t->cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE, 16, &n,
                                          notes) == CUDNN_STATUS_SUCCESS;
    int behavior[16];
    int64_t nb = 0;
    const char *no_rtc = getenv("GAIO_DNN_NO_RTC");
    if (!no_rtc || !*no_rtc) no_rtc = "res";
    bool refuse_rtc = strcmp(no_rtc, "res") ? strcmp(no_rtc, "0") != 0 : res_fused;
    if (ok && (!all_nhwc(k) || refuse_rtc) &&
        t->cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE, 16, &nb,
                                    behavior) == CUDNN_STATUS_SUCCESS)
        for (int64_t i = 0; i < nb && i < 16; i++)
            if (behavior[i] == CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION) ok = false;
    if (getenv("GAIO_DNN_TRACE") && ok)
        for (int64_t i = 0; i < n && i < 16; i++) fprintf(stderr, "gaio:     numerical note %d\n", notes[i]);
    for (int64_t i = 0; ok && i < n && i < 16; i++) {
        if (notes[i] == CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION && !k->f16_accumulation) ok = false;
        if (dtype == GAIO_DTYPE_F32 &&
            (notes[i] == CUDNN_NUMERICAL_NOTE_TENSOR_CORE || notes[i] == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS))
            ok = false;
    }
    t->cudnnBackendDestroyDescriptor(eng);
    return ok;
}

/* Up to `want` plans from the heuristics' configs (mode), in their order, each
 * suitable and finalized: *got of them in out. */
static gaio_status plans_from(builder *b, cudnnBackendDescriptor_t g, int heur_mode, const conv_key *k,
                              const gaio__conv_fusion *f, int want, conv_built *out, int *got_plans) {
    bool res_fused = k->has_res && !f->residual_from_y && !f->residual_after;
    const gaio_cudnn_table *t = b->t;
    *got_plans = 0;
    cudnnBackendDescriptor_t h = make(b, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    set(b, h, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g, "heuristics graph");
    set(b, h, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &heur_mode, "heuristics mode");
    finalize(b, h, "heuristics");
    if (b->st != GAIO_OK) return b->st;
    int64_t count = 0;
    cudnnStatus_t r = t->cudnnBackendGetAttribute(h, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0,
                                                  &count, NULL);
    if (r != CUDNN_STATUS_SUCCESS) return b->st = gaio__cudnn_fail(b->fn, t, "cudnnBackendGetAttribute (heuristics)", r);
    if (count > MAX_CONFIGS) count = MAX_CONFIGS;
    cudnnBackendDescriptor_t cfgs[MAX_CONFIGS];
    int64_t made = 0;
    for (; made < count; made++)
        if (t->cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &cfgs[made]) != CUDNN_STATUS_SUCCESS)
            break;
    int64_t got = 0;
    r = made ? t->cudnnBackendGetAttribute(h, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, made,
                                           &got, cfgs)
             : CUDNN_STATUS_SUCCESS;
    cudnnStatus_t last = CUDNN_STATUS_NOT_SUPPORTED;
    bool trace = getenv("GAIO_DNN_TRACE") != NULL;
    if (trace) fprintf(stderr, "gaio: heuristics mode %d: %lld configs\n", heur_mode, (long long)got);
    for (int64_t i = 0; r == CUDNN_STATUS_SUCCESS && i < got && i < made && *got_plans < want; i++) {
        if (!suitable(b, cfgs[i], k, res_fused)) {
            if (trace) {
                conv_built d = {0};
                describe(b, cfgs[i], &d);
                fprintf(stderr, "gaio:   config %lld (%s) unsuitable\n", (long long)i, d.engine);
            }
            continue;
        }
        cudnnBackendDescriptor_t plan = NULL;
        last = t->cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan);
        if (last != CUDNN_STATUS_SUCCESS) break;
        last = t->cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &b->handle);
        if (last == CUDNN_STATUS_SUCCESS)
            last = t->cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                                               CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfgs[i]);
        if (last == CUDNN_STATUS_SUCCESS) last = t->cudnnBackendFinalize(plan);
        int64_t ws = 0, n = 0;
        if (last == CUDNN_STATUS_SUCCESS)
            last = t->cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n,
                                               &ws);
        if (last != CUDNN_STATUS_SUCCESS) {
            t->cudnnBackendDestroyDescriptor(plan);
            continue;
        }
        conv_built *o = &out[(*got_plans)++];
        memset(o, 0, sizeof *o);
        o->plan = plan;
        o->workspace = ws;
        describe(b, cfgs[i], o);
    }
    for (int64_t i = 0; i < made; i++) t->cudnnBackendDestroyDescriptor(cfgs[i]);
    if (r != CUDNN_STATUS_SUCCESS) return gaio__cudnn_fail(b->fn, t, "cudnnBackendGetAttribute (heuristics results)", r);
    if (!*got_plans) return gaio__cudnn_fail(b->fn, t, "cudnnBackendFinalize (execution plan)", last);
    return GAIO_OK;
}

cudnnStatus_t gaio__conv_execute(const gaio_cudnn_table *t, cudnnHandle_t h, const conv_built *b,
                                 void *const ptrs[5], void *workspace, const char **call) {
    int64_t uids[5];
    void *p[5];
    int n = 0;
    uids[n] = CONV_UID_X, p[n++] = ptrs[0];
    uids[n] = CONV_UID_W, p[n++] = ptrs[1];
    uids[n] = CONV_UID_Y, p[n++] = ptrs[2];
    if (ptrs[3] && b->fusion.bias) uids[n] = CONV_UID_BIAS, p[n++] = ptrs[3];
    if (ptrs[4] && !b->fusion.residual_from_y && !b->fusion.residual_after) uids[n] = CONV_UID_RES, p[n++] = ptrs[4];
    cudnnBackendDescriptor_t vp = NULL;
    *call = "cudnnBackendCreateDescriptor (variant pack)";
    cudnnStatus_t r = t->cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &vp);
    if (r == CUDNN_STATUS_SUCCESS) {
        *call = "cudnnBackendSetAttribute (variant pack)";
        r = t->cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n, uids);
        if (r == CUDNN_STATUS_SUCCESS)
            r = t->cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n, p);
        if (r == CUDNN_STATUS_SUCCESS)
            r = t->cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
    }
    if (r == CUDNN_STATUS_SUCCESS) {
        *call = "cudnnBackendFinalize (variant pack)";
        r = t->cudnnBackendFinalize(vp);
    }
    if (r == CUDNN_STATUS_SUCCESS) {
        *call = "cudnnBackendExecute";
        r = t->cudnnBackendExecute(h, b->plan, vp);
    }
    if (vp) t->cudnnBackendDestroyDescriptor(vp);
    return r;
}

/* Appends to cands[*got] up to `tune` plans of k's graph with epilogue f (each marked
 * with f). Fails when the graph has none. */
static gaio_status collect(const char *fn, const gaio_cudnn_table *t, cudnnHandle_t handle, const conv_key *k,
                           gaio__conv_fusion f, int tune, conv_built *cands, int *got) {
    builder b = {.fn = fn, .t = t, .handle = handle, .st = GAIO_OK};
    cudnnBackendDescriptor_t g = graph(&b, k, &f);
    gaio_status st = b.st;
    int n = 0, more = 0;
    /* Tuning also times a few of the fallback list's engines (cuDNN's older kernels),
     * which mode A's list can leave out: for ResNet-50's 3-channel stem they were the
     * fast ones. */
    int reserve = tune > 1 ? tune / 2 : 0;
    if (st == GAIO_OK) st = plans_from(&b, g, CUDNN_HEUR_MODE_A, k, &f, tune - reserve, cands + *got, &n);
    if (st != GAIO_OK && st != GAIO_ERR_NO_MEMORY && g) {
        b.st = GAIO_OK;
        st = plans_from(&b, g, CUDNN_HEUR_MODE_FALLBACK, k, &f, tune, cands + *got, &n);
    } else if (st == GAIO_OK && reserve &&
               plans_from(&b, g, CUDNN_HEUR_MODE_FALLBACK, k, &f, reserve, cands + *got + n, &more) == GAIO_OK) {
        n += more;
    }
    builder_end(&b);
    if (st != GAIO_OK) return st;
    if (!k->has_bias) f.bias = false;
    if (!k->has_act) f.act = false;
    for (int j = 0; j < n; j++) cands[*got + j].fusion = f;
    *got += n;
    return GAIO_OK;
}

gaio_status gaio__conv_graph_build(const char *fn, const gaio_cudnn_table *t, cudnnHandle_t handle,
                                   const conv_key *k, int tune, conv_built *out) {
    memset(out, 0, sizeof *out);
    if (tune < 1) tune = 1;
    if (tune > MAX_TUNE) tune = MAX_TUNE;
    /* First everything fused (an activation act_in_plan refuses stays out); with a
     * residual, then the convolution and bias with y = act(y + residual) after it as
     * gaio's kernel (not where the residual is y itself); last the convolution alone,
     * with the residual as its beta. Tuning times the first two together: the second
     * lets cuDNN's runtime-fusion engines run ResNet's Conv+Add+Relu, which the first
     * refuses (suitable()), at the cost of one more pass over y.
     * GAIO_DNN_RESIDUAL=after takes the second first, alone (to test and measure it);
     * =fused never takes it. */
    const char *how = getenv("GAIO_DNN_RESIDUAL");
    bool split = k->has_res && !k->res_is_y && !k->transposed && !(how && !strcmp(how, "fused"));
    bool split_first = split && how && !strcmp(how, "after");
    gaio__conv_fusion tries[3], full = {.bias = true, .act = act_in_plan(k->act_op)},
                                after = {.bias = true, .residual_after = true};
    int ntries = 0;
    if (split_first) tries[ntries++] = after;
    tries[ntries++] = full;
    if (split && !split_first) tries[ntries++] = after;
    if (k->has_bias || k->has_res || (k->has_act && full.act))
        tries[ntries++] = (gaio__conv_fusion){.residual_from_y = k->has_res != 0};
    int pooled = split && !split_first && tune > 1 ? 2 : 1; /* tries timed against each other */
    gaio_status st = GAIO_OK;
    char first_why[GAIO_MSG_MAX] = "";
    conv_built cands[2 * MAX_TUNE];
    int got = 0;
    for (int i = 0; i < ntries; i++) {
        st = collect(fn, t, handle, k, tries[i], tune, cands, &got);
        if (st == GAIO_ERR_NO_MEMORY) break;
        if (st != GAIO_OK && !first_why[0]) snprintf(first_why, sizeof first_why, "%s", gaio_last_error());
        if (i < pooled - 1 || !got) continue;
        int best = 0;
        st = got > 1 ? gaio__conv_tune(fn, t, handle, k, cands, got, &best) : GAIO_OK;
        for (int j = 0; j < got; j++)
            if (j != best || st != GAIO_OK) t->cudnnBackendDestroyDescriptor(cands[j].plan);
        if (st != GAIO_OK) return st;
        *out = cands[best];
        if (got > 1) {
            size_t len = strlen(out->engine);
            snprintf(out->engine + len, sizeof out->engine - len, ", fastest of %d", got);
        }
        if (out->fusion.residual_after) {
            size_t len = strlen(out->engine);
            snprintf(out->engine + len, sizeof out->engine - len, ", residual after");
        }
        return GAIO_OK;
    }
    for (int j = 0; j < got; j++) t->cudnnBackendDestroyDescriptor(cands[j].plan);
    if (st == GAIO_OK) st = GAIO_ERR_NOT_SUPPORTED;
    return gaio__fail(st, fn, "cuDNN has no engine for this %s (%s): %s",
                      k->transposed ? "transposed convolution (backward data)" : "convolution",
                      k->dtype == GAIO_DTYPE_F16 ? "f16; tensor cores want NHWC with C and K multiples of 8" : "f32",
                      first_why);
}
