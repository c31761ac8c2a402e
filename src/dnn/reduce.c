/* The reduce ops: gaio_softmax, gaio_log_softmax, gaio_pool2d, gaio_global_avg_pool.
 * Each checks its tensors and parameters, then makes one launch of a built-in kernel
 * that both backends have under one name (host: dnn/cpu/reduce.c, CUDA:
 * kernels/dnn/reduce.cu; log-softmax's kernels live with the axis reductions',
 * dnn/cpu/reduce_axes.c and kernels/dnn/reduce_axes.cu). */
#include <stdio.h>
#include <string.h>

#include "core/builtin_kernels.h"
#include "core/fail.h"
#include "core/object.h"
#include "core/op.h"
#include "dnn/dnn_internal.h"
#include "dnn/reduce_math.h"
#include "gaio/buffer.h"

/* Threads per CUDA block, and the most blocks a launch asks for (the kernels stride
 * over whatever is left). */
#define BLOCK 256
#define WARPS_PER_BLOCK (BLOCK / 32)
#define MAX_BLOCKS GAIO_DNN_MAX_BLOCKS
/* Blocks that a global average over channels-innermost x aims for (gaio_global_avg_pool). */
#define GAP_BLOCKS 512

typedef gaio__ktensor_view operand;

static gaio_status resolve(const char *fn, const char *name, const gaio_tensor *t, gaio_stream *s, operand *o) {
    return gaio__ktensor_view_resolve(fn, name, "reductions", t, s, o);
}

static gaio_status check_output(const char *fn, const char *name, const operand *y) {
    if (!gaio__ktensor_distinct(&y->k))
        return BAD("%s's strides make some of its elements share memory: an output needs each element once", name);
    return GAIO_OK;
}

static bool same_place(const operand *a, const operand *b) {
    if (a->k.ptr != b->k.ptr || a->k.ndim != b->k.ndim || a->k.dtype != b->k.dtype) return false;
    for (int32_t i = 0; i < a->k.ndim; i++)
        if (a->k.shape[i] > 1 && a->k.strides[i] != b->k.strides[i]) return false;
    return true;
}

static gaio_status same_shape(const char *fn, const operand *x, const operand *y) {
    bool same = x->t.ndim == y->t.ndim;
    for (int32_t i = 0; same && i < x->t.ndim; i++) same = x->t.shape[i] == y->t.shape[i];
    if (!same) {
        char a[128], b[128];
        gaio__shape_text(x->t.ndim, x->t.shape, a, sizeof a);
        gaio__shape_text(y->t.ndim, y->t.shape, b, sizeof b);
        return BAD("y's shape %s differs from x's %s", b, a);
    }
    if (x->t.dtype != y->t.dtype)
        return BAD("y is %s but x is %s: they take one dtype", gaio_dtype_name(y->t.dtype), gaio_dtype_name(x->t.dtype));
    return GAIO_OK;
}

static bool on_cuda(const gaio_stream *s) { return s->ctx->be->kind == GAIO_DEVICE_CUDA; }

static gaio_dim3 blocks(int64_t work, int64_t per_block) {
    int64_t b = (work + per_block - 1) / per_block;
    gaio_dim3 g = {(uint32_t)(b < MAX_BLOCKS ? b : MAX_BLOCKS), 1, 1};
    return g;
}

/* Channels per 16-byte vector that the CUDA kernels read of channels-innermost t when
 * every pixel's channels are whole 16-byte aligned vectors (their vec16() test, in
 * kernels/dnn/reduce.cu), else 1: the grids are sized for the threads they use. */
static int64_t vector_lanes(const gaio_ktensor *t) {
    const int64_t v = 16 / gaio_kt_size(t->dtype);
    if (t->strides[1] != 1 || t->shape[1] % v || t->ptr % 16 || t->strides[0] % v || t->strides[2] % v ||
        t->strides[3] % v)
        return 1;
    return v;
}

/* The launch on the stream's backend: grid and block on CUDA, one thread on the host. */
static gaio_status launch_dims(const char *fn, gaio_stream *s, const char *name, gaio_dim3 grid, gaio_dim3 block,
                               const gaio_arg *args, size_t nargs, gaio_buffer *const *held, size_t nheld) {
    if (!on_cuda(s)) {
        const gaio_dim3 one = {1, 1, 1};
        grid = block = one;
    }
    gaio_kernel *k;
    gaio_status st = gaio__kernel_builtin(name, &k);
    if (st != GAIO_OK) return gaio__fail(st, fn, "%s", gaio_last_error());
    st = gaio__launch_held(fn, s, k, grid, block, 0, args, nargs, held, nheld);
    gaio__kernel_unref(k);
    return st;
}

static gaio_status launch(const char *fn, gaio_stream *s, const char *name, int64_t work, int64_t per_block,
                          const gaio_arg *args, size_t nargs, gaio_buffer *const *held, size_t nheld) {
    const gaio_dim3 block = {BLOCK, 1, 1};
    return launch_dims(fn, s, name, blocks(work, per_block), block, args, nargs, held, nheld);
}

/* Softmax and LogSoftmax: one row per position off axis, each read whole before any of
 * it is written (so in place works); `what` names the op in messages. */
static gaio_status softmax_rows(const char *fn, const char *what, const char *kernel, gaio_stream *stream,
                                const gaio_tensor *x, const gaio_tensor *y, int32_t axis) {
    if (!stream) return BAD("stream is NULL");
    operand ox, oy;
    gaio_status st = resolve(fn, "x", x, stream, &ox);
    if (st != GAIO_OK) return st;
    if ((st = resolve(fn, "y", y, stream, &oy)) != GAIO_OK) return st;
    if ((st = same_shape(fn, &ox, &oy)) != GAIO_OK) return st;
    if ((st = check_output(fn, "y", &oy)) != GAIO_OK) return st;
    int32_t nd = ox.t.ndim;
    if (axis < -nd || axis >= nd)
        return BAD("axis %d is outside the %d dimensions of x (give -%d to %d)", (int)axis, (int)nd, (int)nd,
                   (int)nd - 1);
    if (axis < 0) axis += nd;
    if (gaio__ktensor_view_overlap(&ox, &oy) && !same_place(&ox, &oy))
        return BAD("y overlaps x: only an in-place %s (y the same elements as x) may share memory", what);
    int64_t total = 1;
    for (int32_t i = 0; i < nd; i++) total *= ox.t.shape[i];
    int64_t rows = total / ox.t.shape[axis];
    gaio_arg args[3] = {GAIO_ARG(ox.k), GAIO_ARG(oy.k), GAIO_ARG(axis)};
    gaio_buffer *held[2] = {x->buffer, y->buffer};
    return launch(fn, stream, kernel, rows, WARPS_PER_BLOCK, args, 3, held, 2);
}

gaio_status gaio_softmax(gaio_stream *stream, const gaio_tensor *x, const gaio_tensor *y, int32_t axis) {
    return softmax_rows(__func__, "softmax", "gaio_dnn_softmax", stream, x, y, axis);
}

gaio_status gaio_log_softmax(gaio_stream *stream, const gaio_tensor *x, const gaio_tensor *y, int32_t axis) {
    return softmax_rows(__func__, "log_softmax", "gaio_dnn_log_softmax", stream, x, y, axis);
}

/* Output positions along one side: floor((in + pads - extent) / stride) + 1, or -1
 * when the dilated window is larger than the padded input. */
static int64_t pooled(int64_t in, int64_t pad_a, int64_t pad_b, int64_t k, int64_t dil, int64_t stride, bool ceil) {
    int64_t num = in + pad_a + pad_b - dil * (k - 1) - 1;
    if (num < 0) return -1;
    if (!ceil) return num / stride + 1;
    int64_t out = (num + stride - 1) / stride + 1;
    if ((out - 1) * stride >= in + pad_a) out--; /* ONNX: no window starts in the end padding */
    return out;
}

/* The first output position along a side whose window has no tap inside the input,
 * or -1: such a window would have nothing to pool. */
static int64_t empty_window(int64_t in, int64_t out, int64_t pad, int64_t k, int64_t dil, int64_t stride) {
    for (int64_t o = 0; o < out; o++) {
        int64_t s = o * stride - pad, first = s >= 0 ? 0 : (-s + dil - 1) / dil;
        if (first >= k || s + first * dil >= in) return o;
    }
    return -1;
}

gaio_status gaio_pool2d(gaio_stream *stream, const gaio_tensor *x, const gaio_tensor *y, const gaio_pool_params *params) {
    const char *fn = __func__;
    if (!stream) return BAD("stream is NULL");
    if (!params) return BAD("params is NULL");
    operand ox, oy;
    gaio_status st = resolve(fn, "x", x, stream, &ox);
    if (st != GAIO_OK) return st;
    if ((st = resolve(fn, "y", y, stream, &oy)) != GAIO_OK) return st;
    if (ox.t.ndim != 4 || oy.t.ndim != 4)
        return BAD("x has %d dimensions and y %d: pool2d takes [N, C, H, W] tensors", (int)ox.t.ndim, (int)oy.t.ndim);
    if (ox.t.dtype != oy.t.dtype)
        return BAD("y is %s but x is %s: they take one dtype", gaio_dtype_name(oy.t.dtype), gaio_dtype_name(ox.t.dtype));
    const gaio_pool_params *p = params;
    if (p->mode != GAIO_POOL_MAX && p->mode != GAIO_POOL_AVG)
        return BAD("params->mode %d is not GAIO_POOL_MAX or GAIO_POOL_AVG", (int)p->mode);
    gaio_kpool kp;
    memset(&kp, 0, sizeof kp);
    kp.mode = p->mode == GAIO_POOL_MAX ? 0 : 1;
    for (int i = 0; i < 2; i++) {
        if (p->kernel[i] < 1) return BAD("params->kernel[%d] is %d: must be >= 1", i, (int)p->kernel[i]);
        if (p->stride[i] < 1) return BAD("params->stride[%d] is %d: must be >= 1", i, (int)p->stride[i]);
        if (p->dilation[i] < 0) return BAD("params->dilation[%d] is %d: must be >= 0", i, (int)p->dilation[i]);
    }
    for (int i = 0; i < 4; i++)
        if (p->pad[i] < 0) return BAD("params->pad[%d] is %d: must be >= 0", i, (int)p->pad[i]);
    kp.kh = p->kernel[0], kp.kw = p->kernel[1];
    kp.sh = p->stride[0], kp.sw = p->stride[1];
    kp.pt = p->pad[0], kp.pl = p->pad[1];
    kp.dh = p->dilation[0] ? p->dilation[0] : 1;
    kp.dw = p->dilation[1] ? p->dilation[1] : 1;
    kp.count_include_pad = p->count_include_pad != 0;
    const int64_t N = ox.t.shape[0], C = ox.t.shape[1], H = ox.t.shape[2], W = ox.t.shape[3];
    if (oy.t.shape[0] != N || oy.t.shape[1] != C)
        return BAD("y is [%lld, %lld, ...] but x is [%lld, %lld, ...]: N and C must match", (long long)oy.t.shape[0],
                   (long long)oy.t.shape[1], (long long)N, (long long)C);
    kp.pb = p->pad[2], kp.pr = p->pad[3];
    int64_t OH = pooled(H, p->pad[0], p->pad[2], kp.kh, kp.dh, kp.sh, p->ceil_mode != 0);
    int64_t OW = pooled(W, p->pad[1], p->pad[3], kp.kw, kp.dw, kp.sw, p->ceil_mode != 0);
    if (OH < 0 || OW < 0)
        return BAD("the %dx%d window (dilation %dx%d) is larger than x's %lldx%lld plane with its padding",
                   (int)kp.kh, (int)kp.kw, (int)kp.dh, (int)kp.dw, (long long)H, (long long)W);
    if (oy.t.shape[2] != OH || oy.t.shape[3] != OW)
        return BAD("y is %lldx%lld but x's %lldx%lld plane pools to %lldx%lld with these params",
                   (long long)oy.t.shape[2], (long long)oy.t.shape[3], (long long)H, (long long)W, (long long)OH,
                   (long long)OW);
    int64_t eh = empty_window(H, OH, kp.pt, kp.kh, kp.dh, kp.sh), ew = empty_window(W, OW, kp.pl, kp.kw, kp.dw, kp.sw);
    if (eh >= 0) return BAD("the window of output row %lld lies wholly in the padding", (long long)eh);
    if (ew >= 0) return BAD("the window of output column %lld lies wholly in the padding", (long long)ew);
    if ((st = check_output(fn, "y", &oy)) != GAIO_OK) return st;
    if (gaio__ktensor_view_overlap(&ox, &oy)) return BAD("y overlaps x: pooling cannot run in place");
    kp.c_inner = oy.k.strides[1] < oy.k.strides[3];
    gaio_arg args[3] = {GAIO_ARG(ox.k), GAIO_ARG(oy.k), GAIO_ARG(kp)};
    gaio_buffer *held[2] = {x->buffer, y->buffer};
    /* A thread per output element, or per vector of channels of an output pixel. */
    const int64_t lanes = vector_lanes(&ox.k) > 1 && vector_lanes(&oy.k) > 1 ? vector_lanes(&ox.k) : 1;
    return launch(fn, stream, "gaio_dnn_pool2d", N * C * OH * OW / lanes, BLOCK, args, 3, held, 2);
}

gaio_status gaio_global_avg_pool(gaio_stream *stream, const gaio_tensor *x, const gaio_tensor *y) {
    const char *fn = __func__;
    if (!stream) return BAD("stream is NULL");
    operand ox, oy;
    gaio_status st = resolve(fn, "x", x, stream, &ox);
    if (st != GAIO_OK) return st;
    if ((st = resolve(fn, "y", y, stream, &oy)) != GAIO_OK) return st;
    if (ox.t.ndim != 4) return BAD("x has %d dimensions: global_avg_pool takes [N, C, H, W]", (int)ox.t.ndim);
    if (ox.t.dtype != oy.t.dtype)
        return BAD("y is %s but x is %s: they take one dtype", gaio_dtype_name(oy.t.dtype), gaio_dtype_name(ox.t.dtype));
    bool ok = (oy.t.ndim == 4 && oy.t.shape[2] == 1 && oy.t.shape[3] == 1) || oy.t.ndim == 2;
    if (!ok || oy.t.shape[0] != ox.t.shape[0] || oy.t.shape[1] != ox.t.shape[1]) {
        char a[128], b[128];
        gaio__shape_text(ox.t.ndim, ox.t.shape, a, sizeof a);
        gaio__shape_text(oy.t.ndim, oy.t.shape, b, sizeof b);
        return BAD("y is %s but x is %s: y must be [N, C, 1, 1] or [N, C]", b, a);
    }
    if ((st = check_output(fn, "y", &oy)) != GAIO_OK) return st;
    if (gaio__ktensor_view_overlap(&ox, &oy)) return BAD("y overlaps x: global_avg_pool cannot run in place");
    gaio_arg args[2] = {GAIO_ARG(ox.k), GAIO_ARG(oy.k)};
    gaio_buffer *held[2] = {x->buffer, y->buffer};
    const int64_t planes = ox.t.shape[0] * ox.t.shape[1], hw = ox.t.shape[2] * ox.t.shape[3];
    if (ox.k.strides[1] != 1) /* a warp per (n, c) plane */
        return launch(fn, stream, "gaio_dnn_global_avg_pool", planes, WARPS_PER_BLOCK, args, 2, held, 2);
    /* Channels innermost: blocks of gb groups of channels (each a 16-byte vector or one
     * channel) by rows of threads that split the groups' pixels. gb halves from 32, down
     * to 1, until there are GAP_BLOCKS blocks (about 4 per SM of an H100): a
     * warp's reads get shorter, but small batches get enough blocks. A block per group
     * that still leaves fewer than GAP_BLOCKS / 2 gets 1024 threads when its plane has 4
     * pixels for each: with so few blocks the kernel takes one block's latency. */
    const int64_t groups = planes / vector_lanes(&ox.k);
    int64_t gb = 32;
    while (gb > 1 && (groups + gb - 1) / gb < GAP_BLOCKS) gb /= 2;
    const int64_t threads = gb == 1 && groups < GAP_BLOCKS / 2 && hw >= 4 * 1024 ? 1024 : BLOCK;
    const gaio_dim3 block = {(uint32_t)gb, (uint32_t)(threads / gb), 1};
    /* Every block, uncapped: the kernel's split does not stride over the groups (with
     * more groups than 32-bit offsets allow it falls back to a warp per plane, which does). */
    const int64_t nb = (groups + gb - 1) / gb;
    const gaio_dim3 grid = {(uint32_t)(nb < INT32_MAX ? nb : MAX_BLOCKS), 1, 1};
    return launch_dims(fn, stream, "gaio_dnn_global_avg_pool", grid, block, args, 2, held, 2);
}
