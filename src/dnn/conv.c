/* gaio_conv2d: checks, then one native op on the stream: a cuDNN graph on a GPU
 * (dnn/cuda/conv_cuda.c), oneDNN on the host (dnn/cpu/conv_cpu.c). On a GPU, what
 * of the epilogue a plan could not fuse runs around it as gaio's own pointwise ops,
 * and a depthwise convolution is one launch of gaio's own kernel instead. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/builtin_kernels.h"
#include "core/fail.h"
#include "core/native.h"
#include "core/object.h"
#include "core/op.h"
#include "dnn/cpu/onednn.h"
#include "dnn/conv_fc_math.h"
#include "dnn/depthwise_math.h"
#include "dnn/dnn_internal.h"
#include "gaio/buffer.h"

static const char *const WHAT = "convolutions";
static const char *const OP = "a 2-D convolution";

/* How many of cuDNN's heuristic picks gaio_conv2d_prepare times to keep the fastest
 * (each runtime-fusion candidate compiles: about 0.3 s on an H100); a plan gaio_conv2d
 * makes itself is the heuristics' first. */
#define TUNE_CANDIDATES 24

static bool same_view(const gaio__ktensor_view *a, const gaio__ktensor_view *b) {
    if (a->k.ptr != b->k.ptr || a->k.dtype != b->k.dtype) return false;
    for (int i = 0; i < 4; i++)
        if (a->k.shape[i] != b->k.shape[i] || (a->k.shape[i] > 1 && a->k.strides[i] != b->k.strides[i])) return false;
    return true;
}

/* A tensor of the output's shape [N, K, P, Q]. */
static gaio_status output_shape(const char *fn, const char *name, const gaio__ktensor_view *v, const int64_t *want) {
    for (int i = 0; i < 4; i++)
        if (v->t.shape[i] != want[i]) {
            char got[128], exp[128];
            gaio__shape_text(4, v->t.shape, got, sizeof got);
            gaio__shape_text(4, want, exp, sizeof exp);
            return BAD("%s is %s but the convolution gives %s", name, got, exp);
        }
    return GAIO_OK;
}

/* Output size of one spatial dimension, or <= 0 when the window does not fit. */
static int64_t out_size(int64_t in, int64_t k, int32_t pad0, int32_t pad1, int32_t stride, int32_t dil) {
    int64_t span = (int64_t)dil * (k - 1) + 1, padded = in + pad0 + pad1;
    return padded < span ? 0 : (padded - span) / stride + 1;
}

typedef struct conv_checked {
    gaio__conv_args a;
    gaio__ktensor_view x, w, y, bias, res;
    bool has_bias, has_res;
} conv_checked;

static gaio_status conv_check(const char *fn, gaio_stream *stream, const gaio_tensor *x, const gaio_tensor *w,
                              const gaio_tensor *bias, const gaio_tensor *residual, const gaio_tensor *y,
                              const gaio_conv2d_params *params, conv_checked *c) {
    if (!stream) return BAD("stream is NULL");
    if (!params) return BAD("params is NULL");
    memset(c, 0, sizeof *c);
    gaio__ktensor_view v[3];
    gaio_status st = gaio__conv_views(fn, WHAT, OP, stream, x, w, y, v);
    if (st != GAIO_OK) return st;
    c->x = v[0], c->w = v[1], c->y = v[2];
    gaio_dtype dt = c->x.t.dtype;
    const gaio_conv2d_params *p = params;
    for (int i = 0; i < 2; i++) {
        if (p->stride[i] < 0) return BAD("params->stride[%d] is %d: strides are >= 1 (0 means 1)", i, (int)p->stride[i]);
        if (p->dilation[i] < 0)
            return BAD("params->dilation[%d] is %d: dilations are >= 1 (0 means 1)", i, (int)p->dilation[i]);
    }
    for (int i = 0; i < 4; i++)
        if (p->pad[i] < 0) return BAD("params->pad[%d] is %d: padding is >= 0", i, (int)p->pad[i]);
    if (p->groups < 0) return BAD("params->groups is %d: groups are >= 1 (0 means 1)", (int)p->groups);
    gaio__conv_args *a = &c->a;
    a->dtype = dt;
    a->f16_accumulation = p->f16_accumulation != 0 && dt == GAIO_DTYPE_F16;
    a->groups = p->groups ? p->groups : 1;
    for (int i = 0; i < 2; i++) {
        a->stride[i] = p->stride[i] ? p->stride[i] : 1;
        a->dilation[i] = p->dilation[i] ? p->dilation[i] : 1;
    }
    memcpy(a->pad, p->pad, sizeof a->pad);
    a->n = c->x.t.shape[0], a->c = c->x.t.shape[1], a->h = c->x.t.shape[2], a->w = c->x.t.shape[3];
    a->k = c->w.t.shape[0], a->r = c->w.t.shape[2], a->s = c->w.t.shape[3];
    if (a->c % a->groups || a->k % a->groups)
        return BAD("x has C = %lld and w K = %lld channels: both must be multiples of groups = %d", (long long)a->c,
                   (long long)a->k, (int)a->groups);
    if (c->w.t.shape[1] != a->c / a->groups)
        return BAD("w is [%lld, %lld, %lld, %lld] but x has %lld channels in %d group(s): w's dimension 1 must be C / "
                   "groups = %lld",
                   (long long)a->k, (long long)c->w.t.shape[1], (long long)a->r, (long long)a->s, (long long)a->c,
                   (int)a->groups, (long long)(a->c / a->groups));
    a->p = out_size(a->h, a->r, a->pad[0], a->pad[2], a->stride[0], a->dilation[0]);
    a->q = out_size(a->w, a->s, a->pad[1], a->pad[3], a->stride[1], a->dilation[1]);
    if (a->p < 1 || a->q < 1)
        return BAD("the %lldx%lld window (dilation %dx%d) does not fit x's %lldx%lld padded by (%d, %d, %d, %d)",
                   (long long)a->r, (long long)a->s, (int)a->dilation[0], (int)a->dilation[1], (long long)a->h,
                   (long long)a->w, (int)a->pad[0], (int)a->pad[1], (int)a->pad[2], (int)a->pad[3]);
    const int64_t want[4] = {a->n, a->k, a->p, a->q};
    if ((st = output_shape(fn, "y", &c->y, want)) != GAIO_OK) return st;
    if (!gaio__ktensor_distinct(&c->y.k)) return BAD("y's strides make elements share memory");
    if (gaio__ktensor_view_overlap(&c->y, &c->x) || gaio__ktensor_view_overlap(&c->y, &c->w))
        return BAD("y overlaps x or w");
    if (bias) {
        if ((st = gaio__ktensor_view_resolve(fn, "bias", WHAT, bias, stream, &c->bias)) != GAIO_OK) return st;
        if (c->bias.t.ndim != 1 || c->bias.t.shape[0] != a->k || (a->k > 1 && c->bias.t.strides[0] != 1))
            return BAD("bias must be a packed 1-D tensor of K = %lld values", (long long)a->k);
        if (c->bias.t.dtype != dt)
            return BAD("bias is %s but y is %s: they must match", gaio_dtype_name(c->bias.t.dtype), gaio_dtype_name(dt));
        if (gaio__ktensor_view_overlap(&c->y, &c->bias)) return BAD("y overlaps bias");
        c->has_bias = true;
    }
    if (residual) {
        if ((st = gaio__ktensor_view_resolve(fn, "residual", WHAT, residual, stream, &c->res)) != GAIO_OK ||
            (st = gaio__conv_view_4d(fn, "residual", OP, &c->res)) != GAIO_OK)
            return st;
        if (c->res.t.dtype != dt)
            return BAD("residual is %s but y is %s: they must match", gaio_dtype_name(c->res.t.dtype),
                       gaio_dtype_name(dt));
        if ((st = output_shape(fn, "residual", &c->res, want)) != GAIO_OK) return st;
        if (gaio__ktensor_view_overlap(&c->y, &c->res) && !same_view(&c->y, &c->res))
            return BAD("residual overlaps y without being y itself (same memory and strides)");
        c->has_res = true;
    }
    if (p->act) {
        if ((st = gaio__unary_params_check(fn, "params->act", p->act)) != GAIO_OK) return st;
        if (p->act->op != GAIO_UNARY_IDENTITY) {
            a->has_act = true;
            a->act = *p->act;
        }
    }
    a->x = (const void *)(uintptr_t)c->x.k.ptr;
    a->wt = (const void *)(uintptr_t)c->w.k.ptr;
    a->y = (void *)(uintptr_t)c->y.k.ptr;
    a->bias = c->has_bias ? (const void *)(uintptr_t)c->bias.k.ptr : NULL;
    a->residual = c->has_res ? (const void *)(uintptr_t)c->res.k.ptr : NULL;
    for (int i = 0; i < 4; i++) {
        a->xs[i] = c->x.t.strides[i];
        a->ws[i] = c->w.t.strides[i];
        a->ys[i] = c->y.t.strides[i];
        a->rs[i] = c->has_res ? c->res.t.strides[i] : 0;
    }
    return GAIO_OK;
}

typedef struct conv_job {
    gaio__conv_args a;
    gaio__conv_plan *plan; /* CUDA: a reference, dropped when the job ends (a.packed too) */
    gaio_stream *stream;
} conv_job;

static gaio_status run_conv(void *native_stream, gaio_status stream_status, void *user) {
    conv_job *job = user;
    gaio_status st = stream_status;
    if (st == GAIO_OK) {
        if (native_stream)
            st = gaio__conv_cuda_run(native_stream, job->plan, &job->a, job->stream);
        else
            st = gaio__conv_cpu(&job->a);
    }
    if (job->plan) gaio__conv_plan_release(job->plan);
    if (job->a.packed) gaio__conv_cpu_weights_release(job->a.packed);
    free(job);
    return st;
}

/* What the plan left out of the epilogue, after it, as gaio's pointwise ops on y: the
 * bias (seen as [1, K, 1, 1]) and the activation, in one op when both. */
static gaio_status unfused_epilogue(const char *fn, gaio_stream *stream, const conv_checked *c, const gaio_tensor *y,
                                    gaio__conv_fusion f) {
    const gaio_unary_params *act = c->a.has_act && !f.act ? &c->a.act : NULL;
    gaio_status st = GAIO_OK;
    if (c->has_bias && !f.bias) {
        gaio_tensor b = c->bias.t;
        b.ndim = 4;
        b.shape[0] = 1, b.shape[1] = c->a.k, b.shape[2] = 1, b.shape[3] = 1;
        b.strides[0] = c->a.k, b.strides[1] = 1, b.strides[2] = 1, b.strides[3] = 1;
        b.layout = GAIO_TENSOR_ROW_MAJOR;
        st = gaio_binary(stream, GAIO_BINARY_ADD, y, &b, y, act);
    } else if (act) {
        st = gaio_unary(stream, y, y, act);
    }
    if (st != GAIO_OK) return gaio__fail(st, fn, "its unfused epilogue: %s", gaio_last_error());
    return GAIO_OK;
}

/* y = act(y + residual) after a plan that fused the bias alone (gaio__conv_fusion's
 * residual_after): one pass of gaio's element-wise kernel. */
static gaio_status residual_epilogue(const char *fn, gaio_stream *stream, const conv_checked *c,
                                     const gaio_tensor *residual, const gaio_tensor *y) {
    gaio_status st = gaio_binary(stream, GAIO_BINARY_ADD, y, residual, y, c->a.has_act ? &c->a.act : NULL);
    if (st != GAIO_OK) return gaio__fail(st, fn, "its residual epilogue: %s", gaio_last_error());
    return GAIO_OK;
}

/* A depthwise convolution (one filter per channel) on a GPU runs as gaio's own kernels
 * (kernels/dnn/depthwise*.cu): the plans cuDNN's heuristics gave gaio's graphs for them
 * ran its grouped direct kernel, several times slower than reading x and writing y
 * needs. (PyTorch's calls reach cuDNN's sm90 depthwise engines, which
 * bench/depthwise_bench.py puts at 0.75x gaio's kernels' time without their bias and
 * activation; not yet tried through gaio's graphs.) GAIO_DNN_DEPTHWISE=cudnn keeps cuDNN,
 * to compare. */
static bool gaio_depthwise(const conv_checked *c) {
    if (c->a.groups != c->a.c || c->a.c != c->a.k) return false;
    const char *e = getenv("GAIO_DNN_DEPTHWISE");
    return !(e && strcmp(e, "cudnn") == 0);
}

/* Every element offset of t fits in int32_t (non-negative strides). */
static bool fits32(const gaio_ktensor *t) {
    int64_t span = 0;
    for (int32_t d = 0; d < t->ndim; d++) {
        if (t->strides[d] < 0 || t->shape[d] > INT32_MAX) return false;
        if (t->shape[d] > 0) span += (t->shape[d] - 1) * t->strides[d];
    }
    return span < INT32_MAX;
}

/* The kernels' arguments of a checked depthwise convolution. */
static gaio_kdw dw_params(const conv_checked *c) {
    gaio_kdw p;
    memset(&p, 0, sizeof p);
    p.sh = c->a.stride[0], p.sw = c->a.stride[1];
    p.dh = c->a.dilation[0], p.dw = c->a.dilation[1];
    p.pt = c->a.pad[0], p.pl = c->a.pad[1];
    p.has_bias = c->has_bias, p.has_res = c->has_res;
    /* Channel-fastest numbering only pays when both x's reads and y's writes follow it. */
    p.c_inner = c->x.k.strides[1] == 1 && c->y.k.strides[1] == 1;
    const int64_t total = c->a.n * c->a.k * c->a.p * c->a.q;
    /* Window coordinates reach oh * sh + (R - 1) * dh (and below -pt): bounded too. */
    p.narrow = total < INT32_MAX && fits32(&c->x.k) && fits32(&c->w.k) && fits32(&c->y.k) &&
               (!c->has_res || fits32(&c->res.k)) && c->a.p * p.sh + c->a.r * p.dh < INT32_MAX / 2 &&
               c->a.q * p.sw + c->a.s * p.dw < INT32_MAX / 2;
    p.act.op = GAIO_KPW_IDENTITY;
    if (c->a.has_act) p.act.op = (int32_t)c->a.act.op, p.act.alpha = c->a.act.alpha, p.act.beta = c->a.act.beta;
    return p;
}

/* A tensor whose channels are runs of 16-byte vectors: channels innermost, every other
 * stride a multiple of 8 elements, 16-byte aligned (f16). */
static bool vectors_of_8(const gaio_ktensor *t) {
    return t->strides[1] == 1 && t->ptr % 16 == 0 && t->strides[0] % 8 == 0 && t->strides[2] % 8 == 0 &&
           t->strides[3] % 8 == 0;
}

/* Whether gaio_dnn_conv_depthwise_tiled takes the layer (its case is in its file's head):
 * f16, C a multiple of 8, x, y and the residual in channel vectors, R <= 7, S 3, 5 or 7,
 * column stride 1 or 2 without column dilation, 32-bit offsets (p->narrow).
 * GAIO_DNN_DEPTHWISE=generic keeps the one-output-per-thread kernel, to compare;
 * =strips and =pixels force its long strips or those of 1 output (to test both). */
static bool depthwise_tiled_ok(const conv_checked *c, const gaio_kdw *p) {
    const char *e = getenv("GAIO_DNN_DEPTHWISE");
    if (e && strcmp(e, "generic") == 0) return false;
    if (c->x.k.dtype != GAIO_KT_F16 || c->a.k % 8 || !p->narrow || p->dw != 1 || p->sw > 2) return false;
    if (c->a.r > 7 || (c->a.s != 3 && c->a.s != 5 && c->a.s != 7)) return false;
    return vectors_of_8(&c->x.k) && vectors_of_8(&c->y.k) && (!c->has_res || vectors_of_8(&c->res.k));
}

/* A tensor whose channels are runs of 4-byte pairs: channels innermost, every other
 * stride even, 4-byte aligned (f16). */
static bool pairs_of_2(const gaio_ktensor *t) {
    return t->strides[1] == 1 && t->ptr % 4 == 0 && t->strides[0] % 2 == 0 && t->strides[2] % 2 == 0 &&
           t->strides[3] % 2 == 0;
}

/* Whether gaio_dnn_conv_depthwise_pairs3 / 5 / 7 take the layer (their case is in
 * their file's head): f16, C even, channel pairs, a 3x3, 5x5 or 7x7 window, equal strides of 1 or 2, no
 * dilation, 32-bit offsets. GAIO_DNN_DEPTHWISE=tiled leaves these layers to the tiled
 * kernel, to compare; =strips and =pixels force its large or small tiles (as the tiled
 * kernel's), to test both. */
static bool depthwise_pairs_ok(const conv_checked *c, const gaio_kdw *p) {
    const char *e = getenv("GAIO_DNN_DEPTHWISE");
    if (e && (strcmp(e, "generic") == 0 || strcmp(e, "tiled") == 0)) return false;
    if (c->x.k.dtype != GAIO_KT_F16 || c->a.k % 2 || !p->narrow || p->dh != 1 || p->dw != 1) return false;
    if (c->a.r != c->a.s || (c->a.s != 3 && c->a.s != 5 && c->a.s != 7) || p->sh != p->sw || p->sh > 2) return false;
    return pairs_of_2(&c->x.k) && pairs_of_2(&c->y.k) && (!c->has_res || pairs_of_2(&c->res.k));
}

/* Whether gaio_dnn_conv_depthwise_lanes7 takes the layer (its case is in its file's
 * head): f16, C a multiple of 8, a 7x7 window, equal strides of 1 or 2, no
 * dilation, 32-bit offsets, x in channel vectors, y and the residual channels-innermost.
 * GAIO_DNN_DEPTHWISE=pairs leaves it to the pairs kernels, to compare; =tiled and
 * =generic to those. */
static bool depthwise_lanes_ok(const conv_checked *c, const gaio_kdw *p) {
    const char *e = getenv("GAIO_DNN_DEPTHWISE");
    if (e && (!strcmp(e, "generic") || !strcmp(e, "tiled") || !strcmp(e, "pairs"))) return false;
    if (c->x.k.dtype != GAIO_KT_F16 || c->a.k % 8 || !p->narrow || p->dh != 1 || p->dw != 1) return false;
    if (c->a.r != 7 || c->a.s != 7 || p->sh != p->sw || p->sh > 2) return false;
    return vectors_of_8(&c->x.k) && c->y.k.strides[1] == 1 && (!c->has_res || c->res.k.strides[1] == 1);
}

/* One launch of gaio_dnn_conv_depthwise, or of its pairs or tiled forms, over y (bias,
 * residual and activation fused): the checks are conv_check's. The generic and tiled
 * kernels' grids are capped (GAIO_DNN_MAX_BLOCKS, dnn_internal.h). */
static gaio_status depthwise_launch(const char *fn, gaio_stream *stream, const conv_checked *c) {
    enum { BLOCK = 256, MAX_BLOCKS = GAIO_DNN_MAX_BLOCKS };
    const gaio_kdw p = dw_params(c);
    gaio_ktensor none;
    memset(&none, 0, sizeof none);
    const bool tiled = depthwise_tiled_ok(c, &p);
    /* The tiled kernel's block: cv vectors of 8 channels by 256 / cv strips of owt outputs.
     * Strips of 4 (2 for 7-wide windows) unless that leaves fewer threads than the GPU
     * holds at once (about 2^16: 2 blocks of 256 on each of 132 SMs), as batch 1's small
     * late layers do; then strips of 1. */
    int32_t cv = (int32_t)(c->a.k / 8 < 32 ? c->a.k / 8 : 32), owt = c->a.s == 7 ? 2 : 4;
    const char *force = getenv("GAIO_DNN_DEPTHWISE");
    if (force && !strcmp(force, "pixels"))
        owt = 1;
    else if (!(force && !strcmp(force, "strips")) && c->a.n * c->a.p * ((c->a.q + owt - 1) / owt) * (c->a.k / 8) < 65536)
        owt = 1;
    gaio_arg args[8] = {GAIO_ARG(c->x.k), GAIO_ARG(c->w.k), GAIO_ARG(none), GAIO_ARG(none), GAIO_ARG(c->y.k),
                        GAIO_ARG(p),      GAIO_ARG(cv),     GAIO_ARG(owt)};
    gaio_buffer *held[5] = {c->x.t.buffer, c->w.t.buffer, c->y.t.buffer};
    size_t nheld = 3;
    if (c->has_bias) args[2] = GAIO_ARG(c->bias.k), held[nheld++] = c->bias.t.buffer;
    if (c->has_res) args[3] = GAIO_ARG(c->res.k), held[nheld++] = c->res.t.buffer;
    gaio_dim3 grid = {1, 1, 1}, block = {BLOCK, 1, 1};
    const char *name = tiled ? "gaio_dnn_conv_depthwise_tiled" : "gaio_dnn_conv_depthwise";
    uint32_t nargs = tiled ? 8 : 6;
    int32_t tile = 0, btw = 1; /* the pairs and lanes kernels', read at the launch below */
    if (depthwise_lanes_ok(c, &p)) {
        /* Blocks of 32 channels by 8 tiles, btw tiles along a row (a power of two, the
         * fewest that hold a row's tiles, at most 8) by 8 / btw down: the grid's x the
         * blocks along a row, y the block rows of all images, z the channel groups. Tiles
         * of 4 x 4 outputs a thread (2 x 2 at stride 2) unless that leaves fewer threads
         * than the GPU holds at once (about 2^16), then of 2 x 2 (1 x 2). */
        const bool s2 = p.sh == 2;
        int64_t tile_h = s2 ? 2 : 4, tile_w = s2 ? 2 : 4;
        if ((force && !strcmp(force, "pixels")) ||
            (!(force && !strcmp(force, "strips")) &&
             c->a.n * ((c->a.p + tile_h - 1) / tile_h) * ((c->a.q + tile_w - 1) / tile_w) * c->a.k < 65536))
            tile = 1, tile_h = s2 ? 1 : 2, tile_w = 2;
        const int64_t tw = (c->a.q + tile_w - 1) / tile_w, th = (c->a.p + tile_h - 1) / tile_h;
        while (btw < 8 && btw < tw) btw *= 2;
        const int64_t bands = c->a.n * ((th + 8 / btw - 1) / (8 / btw));
        grid.x = (uint32_t)((tw + btw - 1) / btw), grid.y = (uint32_t)(bands < 65535 ? bands : 65535);
        grid.z = (uint32_t)((c->a.k + 31) / 32);
        block.x = 32, block.y = 8;
        args[6] = GAIO_ARG(tile), args[7] = GAIO_ARG(btw);
        name = "gaio_dnn_conv_depthwise_lanes7";
        nargs = 8;
    } else if (depthwise_pairs_ok(c, &p)) {
        /* Blocks of bx channel pairs (the pairs split evenly over groups of at most 32) by
         * by tiles along a row of tiles (the row's tiles split evenly over blocks of at
         * most 256 threads); the grid's y the rows of tiles of all images, z the groups.
         * Tiles of 2 x 4 outputs a thread unless that leaves fewer threads than the GPU
         * holds at once (about 2^16), then of 1 x 2. */
        const int64_t pairs = c->a.k / 2, groups = (pairs + 31) / 32, bx = (pairs + groups - 1) / groups;
        if (force && !strcmp(force, "pixels"))
            tile = 1;
        else if (!(force && !strcmp(force, "strips")) &&
                 c->a.n * ((c->a.p + 1) / 2) * ((c->a.q + 3) / 4) * pairs < 65536)
            tile = 1;
        const int64_t tile_h = tile ? 1 : 2, tile_w = tile ? 2 : 4;
        const int64_t tw = (c->a.q + tile_w - 1) / tile_w, bands = c->a.n * ((c->a.p + tile_h - 1) / tile_h);
        const int64_t per_row = (tw + BLOCK / bx - 1) / (BLOCK / bx), by = (tw + per_row - 1) / per_row;
        grid.x = (uint32_t)per_row, grid.y = (uint32_t)(bands < 65535 ? bands : 65535), grid.z = (uint32_t)groups;
        block.x = (uint32_t)bx, block.y = (uint32_t)by;
        args[6] = GAIO_ARG(tile);
        name = c->a.s == 3   ? "gaio_dnn_conv_depthwise_pairs3"
               : c->a.s == 5 ? "gaio_dnn_conv_depthwise_pairs5"
                             : "gaio_dnn_conv_depthwise_pairs7";
        nargs = 7;
    } else if (tiled) {
        const int64_t strips = c->a.n * c->a.p * ((c->a.q + owt - 1) / owt), per_block = BLOCK / cv;
        const int64_t groups = (c->a.k + 8 * cv - 1) / (8 * cv), need = (strips + per_block - 1) / per_block;
        const int64_t cap = MAX_BLOCKS / groups > 0 ? MAX_BLOCKS / groups : 1;
        grid.x = (uint32_t)(need < cap ? need : cap), grid.y = (uint32_t)groups;
    } else {
        const int64_t outputs = c->a.n * c->a.k * c->a.p * c->a.q, blocks = (outputs + BLOCK - 1) / BLOCK;
        grid.x = (uint32_t)(blocks < MAX_BLOCKS ? blocks : MAX_BLOCKS);
    }
    gaio_kernel *k;
    gaio_status st = gaio__kernel_builtin(name, &k);
    if (st != GAIO_OK) return gaio__fail(st, fn, "%s", gaio_last_error());
    st = gaio__launch_held(fn, stream, k, grid, block, 0, args, nargs, held, nheld);
    gaio__kernel_unref(k);
    return st;
}

/* A 1x1 convolution of 1x1 maps (x [N, C, 1, 1] into [N, K, 1, 1]: the squeeze-and-
 * excitation blocks' two) on a GPU runs as gaio's own kernel (kernels/dnn/conv_fc.cu)
 * with its activation fused, where cuDNN's plan and gaio's activation pass after it
 * (SiLU, Sigmoid, HardSigmoid: cuDNN fuses those only in runtime-compiled engines) were
 * two launches of a few microseconds each. Up to 2^22 multiply-adds: a warp an output
 * is no GEMM. GAIO_DNN_CONV_FC=0 keeps cuDNN, to compare. */
static bool conv_fc_ok(const conv_checked *c) {
    const char *e = getenv("GAIO_DNN_CONV_FC");
    if (e && strcmp(e, "0") == 0) return false;
    const gaio__conv_args *a = &c->a;
    if (a->groups != 1 || a->r != 1 || a->s != 1 || a->h != 1 || a->w != 1 || a->p != 1 || a->q != 1) return false;
    if (c->x.k.dtype != GAIO_KT_F16 && c->x.k.dtype != GAIO_KT_F32) return false;
    return a->n * a->k * a->c <= ((int64_t)1 << 22);
}

static gaio_status conv_fc_launch(const char *fn, gaio_stream *stream, const conv_checked *c) {
    enum { BLOCK = 256 };
    gaio_kfc p;
    memset(&p, 0, sizeof p);
    p.has_bias = c->has_bias, p.has_res = c->has_res;
    p.act.op = GAIO_KPW_IDENTITY;
    if (c->a.has_act) p.act.op = (int32_t)c->a.act.op, p.act.alpha = c->a.act.alpha, p.act.beta = c->a.act.beta;
    gaio_fc_pick(&c->x.k, &c->w.k, &p);
    gaio_ktensor none;
    memset(&none, 0, sizeof none);
    gaio_arg args[6] = {GAIO_ARG(c->x.k), GAIO_ARG(c->w.k), GAIO_ARG(none), GAIO_ARG(none), GAIO_ARG(c->y.k), GAIO_ARG(p)};
    gaio_buffer *held[5] = {c->x.t.buffer, c->w.t.buffer, c->y.t.buffer};
    size_t nheld = 3;
    if (c->has_bias) args[2] = GAIO_ARG(c->bias.k), held[nheld++] = c->bias.t.buffer;
    if (c->has_res) args[3] = GAIO_ARG(c->res.k), held[nheld++] = c->res.t.buffer;
    /* Threads (THREAD) or warps (the warp modes) the work asks for. */
    const int64_t per_block = p.mode == GAIO_FC_THREAD ? BLOCK : BLOCK / GAIO_FC_LANES;
    const int64_t items = p.mode == GAIO_FC_WARP8 ? c->a.k * ((c->a.n + GAIO_FC_NB - 1) / GAIO_FC_NB) : c->a.n * c->a.k;
    const int64_t blocks = (items + per_block - 1) / per_block;
    gaio_dim3 grid = {(uint32_t)(blocks < GAIO_DNN_MAX_BLOCKS ? blocks : GAIO_DNN_MAX_BLOCKS), 1, 1};
    gaio_dim3 block = {BLOCK, 1, 1};
    gaio_kernel *k;
    gaio_status st = gaio__kernel_builtin("gaio_dnn_conv_fc", &k);
    if (st != GAIO_OK) return gaio__fail(st, fn, "%s", gaio_last_error());
    st = gaio__launch_held(fn, stream, k, grid, block, 0, args, 6, held, nheld);
    gaio__kernel_unref(k);
    return st;
}

static gaio_status conv(const char *fn, gaio_stream *stream, const gaio_tensor *x, const gaio_tensor *w,
                        const gaio_tensor *bias, const gaio_tensor *residual, const gaio_tensor *y,
                        const gaio_conv2d_params *params, gaio_conv2d_info *info, bool submit, int tune,
                        gaio__conv_plan **keep, gaio__conv_cpu_weights *packed) {
    conv_checked c;
    gaio_status st = conv_check(fn, stream, x, w, bias, residual, y, params, &c);
    if (st != GAIO_OK) return st;
    bool cuda = stream->ctx->be->kind == GAIO_DEVICE_CUDA;
    gaio__conv_plan *plan = NULL;
    gaio__conv_fusion f = {.bias = true, .act = true};
    if (cuda && conv_fc_ok(&c)) {
        if (submit) return conv_fc_launch(fn, stream, &c);
        if (info) {
            memset(info, 0, sizeof *info);
            info->fused = 1;
            snprintf(info->engine, sizeof info->engine, "gaio fc");
        }
        return GAIO_OK;
    }
    if (cuda && gaio_depthwise(&c)) {
        if (submit) return depthwise_launch(fn, stream, &c);
        if (info) {
            memset(info, 0, sizeof *info);
            info->fused = 1;
            const gaio_kdw p = dw_params(&c);
            snprintf(info->engine, sizeof info->engine, "gaio depthwise%s",
                     depthwise_lanes_ok(&c, &p)   ? " (lanes)"
                     : depthwise_pairs_ok(&c, &p) ? " (pairs)"
                     : depthwise_tiled_ok(&c, &p) ? " (tiled)"
                                                  : "");
        }
        return GAIO_OK;
    }
    if (cuda) {
        if ((st = gaio__conv_cuda_plan(fn, stream, &c.a, submit ? 1 : tune, &plan, info)) != GAIO_OK) return st;
        f = gaio__conv_plan_fusion(plan);
    } else { /* oneDNN, or gaio's own convolution where it is missing: never refused */
        if (!submit) { /* the primitive made now, off the submission path */
            char impl[64] = "";
            if ((st = gaio__conv_cpu_prepare(&c.a, impl, sizeof impl)) != GAIO_OK) return st;
            if (info) {
                memset(info, 0, sizeof *info);
                info->fused = 1;
                snprintf(info->engine, sizeof info->engine, "%s", impl);
            }
        }
    }
    if (!submit) {
        if (keep) *keep = plan;
        else if (plan) gaio__conv_plan_release(plan);
        return GAIO_OK;
    }
    /* The residual as the convolution's beta over y: y must hold it first. */
    if (c.has_res && f.residual_from_y && !same_view(&c.y, &c.res) && (st = gaio_cast(stream, residual, y)) != GAIO_OK) {
        gaio__conv_plan_release(plan);
        return gaio__fail(st, fn, "copying the residual into y: %s", gaio_last_error());
    }
    conv_job *job = calloc(1, sizeof *job);
    if (!job) {
        if (plan) gaio__conv_plan_release(plan);
        return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory for the op");
    }
    job->a = c.a;
    job->plan = plan;
    job->stream = stream;
    if (packed && !cuda) job->a.packed = gaio__conv_cpu_weights_ref(packed);
    gaio_buffer *held[5] = {c.x.t.buffer, c.w.t.buffer, c.y.t.buffer, c.has_bias ? c.bias.t.buffer : NULL,
                            c.has_res ? c.res.t.buffer : NULL};
    /* On failure the native fn was not enqueued and never runs: free the job here. */
    st = gaio__enqueue_native_held(fn, stream, run_conv, job, held, 5);
    if (st != GAIO_OK) {
        if (plan) gaio__conv_plan_release(plan);
        if (job->a.packed) gaio__conv_cpu_weights_release(job->a.packed);
        free(job);
        return st;
    }
    if (c.has_res && f.residual_after) return residual_epilogue(fn, stream, &c, residual, y); /* bias fused */
    if ((c.has_bias && !f.bias) || (c.a.has_act && !f.act)) return unfused_epilogue(fn, stream, &c, y, f);
    return GAIO_OK;
}

gaio_status gaio_conv2d(gaio_stream *stream, const gaio_tensor *x, const gaio_tensor *w, const gaio_tensor *bias,
                        const gaio_tensor *residual, const gaio_tensor *y, const gaio_conv2d_params *params) {
    return conv(__func__, stream, x, w, bias, residual, y, params, NULL, true, 1, NULL, NULL);
}

gaio_status gaio__conv2d_packed(gaio_stream *stream, const gaio_tensor *x, const gaio_tensor *w,
                                const gaio_tensor *bias, const gaio_tensor *residual, const gaio_tensor *y,
                                const gaio_conv2d_params *params, gaio__conv_cpu_weights *packed) {
    return conv("gaio_conv2d", stream, x, w, bias, residual, y, params, NULL, true, 1, NULL, packed);
}

typedef struct pack_job {
    gaio__conv_args a;
    gaio__conv_cpu_weights **out;
    gaio_status st;
} pack_job;

static gaio_status run_pack(void *native_stream, gaio_status stream_status, void *user) {
    (void)native_stream;
    pack_job *j = user;
    j->st = stream_status == GAIO_OK ? gaio__conv_cpu_pack(&j->a, j->out) : stream_status;
    return j->st;
}

/* On the stream's worker, as the convolutions run, and waited for: oneDNN (and its
 * OpenMP team) stays on gaio's threads, never on the caller's. */
gaio_status gaio__conv2d_pack_weights(gaio_stream *stream, const gaio_tensor *x, const gaio_tensor *w,
                                      const gaio_tensor *bias, const gaio_tensor *residual, const gaio_tensor *y,
                                      const gaio_conv2d_params *params, gaio__conv_cpu_weights **out) {
    *out = NULL;
    conv_checked c;
    gaio_status st = conv_check("gaio_conv2d", stream, x, w, bias, residual, y, params, &c);
    if (st != GAIO_OK || stream->ctx->be->kind == GAIO_DEVICE_CUDA) return st;
    pack_job job = {.a = c.a, .out = out, .st = GAIO_OK};
    gaio_buffer *held[1] = {c.w.t.buffer};
    st = gaio__enqueue_native_held("gaio_conv2d", stream, run_pack, &job, held, 1);
    if (st == GAIO_OK) st = gaio_stream_synchronize(stream);
    return st != GAIO_OK ? st : job.st;
}

gaio_status gaio_conv2d_prepare(gaio_stream *stream, const gaio_tensor *x, const gaio_tensor *w,
                                const gaio_tensor *bias, const gaio_tensor *residual, const gaio_tensor *y,
                                const gaio_conv2d_params *params, gaio_conv2d_info *info) {
    if (info) memset(info, 0, sizeof *info);
    return conv(__func__, stream, x, w, bias, residual, y, params, info, false, TUNE_CANDIDATES, NULL, NULL);
}

gaio_status gaio__conv2d_prepare_keep(gaio_stream *stream, const gaio_tensor *x, const gaio_tensor *w,
                                      const gaio_tensor *bias, const gaio_tensor *residual, const gaio_tensor *y,
                                      const gaio_conv2d_params *params, gaio_conv2d_info *info,
                                      bool tune, gaio__conv_plan **keep) {
    *keep = NULL;
    if (info) memset(info, 0, sizeof *info);
    return conv("gaio_conv2d_prepare", stream, x, w, bias, residual, y, params, info, false,
                tune ? TUNE_CANDIDATES : 1, keep, NULL);
}
