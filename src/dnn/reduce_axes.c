/* The reductions over axes (gaio_reduce), arg-reductions (gaio_arg_reduce) and top-k
 * (gaio_topk; log-softmax's front end is softmax's, in reduce.c). Each checks its tensors and
 * parameters, then makes one launch of a built-in kernel that both backends have
 * under one name (host: dnn/cpu/reduce_axes.c, CUDA: kernels/dnn/reduce_axes.cu).
 *
 * The front end flattens the work for the kernels (reduce_axes_math.h): dimensions of
 * size 1 dropped, the rest split into kept and reduced ones, each ordered by x's
 * strides and merged where they are one block in memory, so that a kernel decodes few
 * dimensions and neighbouring outputs read neighbouring memory. It also picks how a
 * GPU spreads the outputs: a thread each where x's closest dimension is kept (the
 * threads of a warp then read neighbouring elements), a warp each where it is reduced,
 * a block each for few long reductions. */
#include <stdio.h>
#include <string.h>

#include "core/builtin_kernels.h"
#include "core/fail.h"
#include "core/object.h"
#include "core/op.h"
#include "dnn/dnn_internal.h"
#include "dnn/reduce_axes_math.h"
#include "gaio/buffer.h"

#define BLOCK 256
#define WARPS_PER_BLOCK (BLOCK / 32)
#define MAX_BLOCKS GAIO_DNN_MAX_BLOCKS

typedef gaio__ktensor_view operand;

static gaio_status resolve(const char *fn, const char *name, const gaio_tensor *t, gaio_stream *s, operand *o) {
    return gaio__ktensor_view_resolve(fn, name, "reductions", t, s, o);
}

/* An S64 index tensor, checked as gaio__ktensor_view_resolve checks float ones. */
static gaio_status resolve_index(const char *fn, const char *name, const gaio_tensor *t, gaio_stream *s, operand *v) {
    size_t bytes;
    gaio_status st = gaio__tensor_check(fn, name, t, &v->t, &bytes);
    if (st != GAIO_OK) return st;
    const gaio_tensor *r = &v->t;
    if (r->dtype != GAIO_DTYPE_S64) return BAD("%s is %s: indices are s64", name, gaio_dtype_name(r->dtype));
    if (r->offset % 8) return BAD("%s->offset %zu is not a multiple of the s64 element size 8", name, r->offset);
    if (!gaio__reachable(r->buffer, s, 0)) return gaio__check_reach(fn, name, r->buffer, s, 0);
    void *base;
    if ((st = gaio_buffer_device_ptr(r->buffer, &base)) != GAIO_OK) return st;
    memset(&v->k, 0, sizeof v->k);
    v->k.ptr = (uint64_t)(uintptr_t)((char *)base + r->offset);
    v->k.ndim = r->ndim;
    v->k.dtype = GAIO_KRED_S64;
    for (int32_t i = 0; i < r->ndim; i++) v->k.shape[i] = r->shape[i], v->k.strides[i] = r->strides[i];
    v->lo = v->k.ptr;
    v->hi = v->k.ptr + bytes;
    return GAIO_OK;
}

static gaio_status check_output(const char *fn, const char *name, const operand *y, const operand *x) {
    if (!gaio__ktensor_distinct(&y->k))
        return BAD("%s's strides make some of its elements share memory: an output needs each element once", name);
    if (gaio__ktensor_view_overlap(x, y)) return BAD("%s overlaps x: the output must not share x's memory", name);
    return GAIO_OK;
}

/* y's shape must be x's with `want` on the dimensions of mask (the others x's). */
static gaio_status check_shape(const char *fn, const char *name, const operand *x, const operand *y, uint32_t mask,
                               int64_t want) {
    bool same = x->t.ndim == y->t.ndim;
    for (int32_t d = 0; same && d < x->t.ndim; d++)
        same = y->t.shape[d] == ((mask >> d) & 1u ? want : x->t.shape[d]);
    if (same) return GAIO_OK;
    char a[128], b[128], c[128];
    int64_t expect[GAIO_TENSOR_MAX_NDIM];
    for (int32_t d = 0; d < x->t.ndim; d++) expect[d] = (mask >> d) & 1u ? want : x->t.shape[d];
    gaio__shape_text(x->t.ndim, x->t.shape, a, sizeof a);
    gaio__shape_text(y->t.ndim, y->t.shape, b, sizeof b);
    gaio__shape_text(x->t.ndim, expect, c, sizeof c);
    return BAD("%s is %s but x is %s: it must be %s", name, b, a, c);
}

static bool on_cuda(const gaio_stream *s) { return s->ctx->be->kind == GAIO_DEVICE_CUDA; }

static gaio_status launch(const char *fn, gaio_stream *s, const char *name, int64_t work, int64_t per_block,
                          const gaio_arg *args, size_t nargs, gaio_buffer *const *held, size_t nheld) {
    gaio_dim3 grid = {1, 1, 1}, block = {1, 1, 1};
    if (on_cuda(s)) {
        int64_t b = (work + per_block - 1) / per_block;
        grid.x = (uint32_t)(b < MAX_BLOCKS ? b : MAX_BLOCKS);
        block.x = BLOCK;
    }
    gaio_kernel *k;
    gaio_status st = gaio__kernel_builtin(name, &k);
    if (st != GAIO_OK) return gaio__fail(st, fn, "%s", gaio_last_error());
    st = gaio__launch_held(fn, s, k, grid, block, 0, args, nargs, held, nheld);
    gaio__kernel_unref(k);
    return st;
}

/* Dimensions of one role (kept, reduced, a row's): their sizes and the strides of up to
 * three tensors. */
typedef struct dims {
    int32_t n;
    int64_t size[GAIO_TENSOR_MAX_NDIM], st[3][GAIO_TENSOR_MAX_NDIM];
} dims;

static void dims_add(dims *l, int64_t size, const int64_t *strides3, int32_t d) {
    l->size[l->n] = size;
    for (int t = 0; t < 3; t++) l->st[t][l->n] = strides3[t * GAIO_TENSOR_MAX_NDIM + d];
    l->n++;
}

/* Ordered by the first tensor's strides, largest first (stable), then neighbours that
 * are one block in every tensor merged. */
static void dims_order(dims *l, int ntensors) {
    for (int32_t i = 1; i < l->n; i++)
        for (int32_t j = i; j > 0 && l->st[0][j] > l->st[0][j - 1]; j--) {
            int64_t t = l->size[j];
            l->size[j] = l->size[j - 1], l->size[j - 1] = t;
            for (int k = 0; k < 3; k++) t = l->st[k][j], l->st[k][j] = l->st[k][j - 1], l->st[k][j - 1] = t;
        }
    int32_t m = 0;
    for (int32_t i = 0; i < l->n; i++) {
        bool merge = m > 0;
        for (int k = 0; merge && k < ntensors; k++) merge = l->st[k][m - 1] == l->st[k][i] * l->size[i];
        if (merge) { /* [m - 1] (outer) and i (inner) as one dimension of i's strides */
            l->size[m - 1] *= l->size[i];
            for (int k = 0; k < 3; k++) l->st[k][m - 1] = l->st[k][i];
            continue;
        }
        l->size[m] = l->size[i];
        for (int k = 0; k < 3; k++) l->st[k][m] = l->st[k][i];
        m++;
    }
    l->n = m;
}

static int64_t dims_count(const dims *l) {
    int64_t c = 1;
    for (int32_t i = 0; i < l->n; i++) c *= l->size[i];
    return c;
}

gaio_status gaio_reduce(gaio_stream *stream, const gaio_tensor *x, const gaio_tensor *y,
                        const gaio_reduce_params *params) {
    const char *fn = __func__;
    if (!stream) return BAD("stream is NULL");
    if (!params) return BAD("params is NULL");
    if ((unsigned)params->op > GAIO_REDUCE_LOG_SUM_EXP)
        return BAD("params->op %d is not a gaio_reduce_op", (int)params->op);
    operand ox, oy;
    gaio_status st = resolve(fn, "x", x, stream, &ox);
    if (st != GAIO_OK) return st;
    if ((st = resolve(fn, "y", y, stream, &oy)) != GAIO_OK) return st;
    const int32_t nd = ox.t.ndim;
    if (params->axes >> nd)
        return BAD("params->axes 0x%x names dimensions beyond x's %d", (unsigned)params->axes, (int)nd);
    if ((st = check_shape(fn, "y", &ox, &oy, params->axes, 1)) != GAIO_OK) return st;
    if ((st = check_output(fn, "y", &oy, &ox)) != GAIO_OK) return st;

    dims keep = {0}, red = {0};
    int64_t strides[3 * GAIO_TENSOR_MAX_NDIM] = {0};
    for (int32_t d = 0; d < nd; d++)
        strides[d] = ox.t.strides[d], strides[GAIO_TENSOR_MAX_NDIM + d] = oy.t.strides[d];
    for (int32_t d = 0; d < nd; d++)
        if (ox.t.shape[d] > 1) dims_add((params->axes >> d) & 1u ? &red : &keep, ox.t.shape[d], strides, d);
    dims_order(&keep, 2);
    dims_order(&red, 1);
    gaio_kreduce p;
    memset(&p, 0, sizeof p);
    p.x = ox.k.ptr, p.y = oy.k.ptr, p.xdtype = ox.k.dtype, p.ydtype = oy.k.dtype;
    p.op = (int32_t)params->op;
    p.nkeep = keep.n, p.nred = red.n;
    for (int32_t i = 0; i < keep.n; i++)
        p.keep_n[i] = keep.size[i], p.keep_xs[i] = keep.st[0][i], p.keep_ys[i] = keep.st[1][i];
    for (int32_t i = 0; i < red.n; i++) p.red_n[i] = red.size[i], p.red_xs[i] = red.st[0][i];
    p.outputs = dims_count(&keep), p.count = dims_count(&red);
    bool red_inner = red.n && (!keep.n || red.st[0][red.n - 1] < keep.st[0][keep.n - 1]);
    int64_t per_block = BLOCK;
    if (p.count >= 2048 && p.outputs <= 512)
        p.mode = GAIO_KRED_BLOCK, per_block = 1;
    else if (red_inner && p.count >= 16)
        p.mode = GAIO_KRED_WARP, per_block = WARPS_PER_BLOCK;
    gaio_arg args[1] = {GAIO_ARG(p)};
    gaio_buffer *held[2] = {x->buffer, y->buffer};
    return launch(fn, stream, "gaio_dnn_reduce", p.outputs, per_block, args, 1, held, 2);
}

static gaio_status norm_axis(const char *fn, int32_t axis, int32_t nd, int32_t *out) {
    if (axis < -nd || axis >= nd)
        return BAD("params->axis %d is outside the %d dimensions of x (give -%d to %d)", (int)axis, (int)nd, (int)nd,
                   (int)nd - 1);
    *out = axis < 0 ? axis + nd : axis;
    return GAIO_OK;
}

/* The rows of a selection along axis: x's other dimensions with the outputs' strides. */
static void select_rows(gaio_kselect *p, const operand *x, const operand *v, const operand *ix, int32_t axis) {
    dims rows = {0};
    int64_t strides[3 * GAIO_TENSOR_MAX_NDIM] = {0};
    for (int32_t d = 0; d < x->t.ndim; d++) {
        strides[d] = x->t.strides[d];
        strides[GAIO_TENSOR_MAX_NDIM + d] = v ? v->t.strides[d] : 0;
        strides[2 * GAIO_TENSOR_MAX_NDIM + d] = ix ? ix->t.strides[d] : 0;
    }
    for (int32_t d = 0; d < x->t.ndim; d++)
        if (d != axis && x->t.shape[d] > 1) dims_add(&rows, x->t.shape[d], strides, d);
    dims_order(&rows, 3);
    p->nouter = rows.n;
    for (int32_t i = 0; i < rows.n; i++) {
        p->outer_n[i] = rows.size[i], p->outer_xs[i] = rows.st[0][i];
        p->outer_vs[i] = rows.st[1][i], p->outer_is[i] = rows.st[2][i];
    }
    p->rows = dims_count(&rows);
    p->x = x->k.ptr, p->xdtype = x->k.dtype, p->len = x->t.shape[axis], p->xs = x->t.strides[axis];
    if (v) p->values = v->k.ptr, p->vdtype = v->k.dtype, p->vs = v->t.strides[axis];
    if (ix) p->indices = ix->k.ptr, p->is = ix->t.strides[axis];
}

gaio_status gaio_arg_reduce(gaio_stream *stream, const gaio_tensor *x, const gaio_tensor *y,
                            const gaio_arg_reduce_params *params) {
    const char *fn = __func__;
    if (!stream) return BAD("stream is NULL");
    if (!params) return BAD("params is NULL");
    operand ox, oy;
    gaio_status st = resolve(fn, "x", x, stream, &ox);
    if (st != GAIO_OK) return st;
    if ((st = resolve_index(fn, "y", y, stream, &oy)) != GAIO_OK) return st;
    int32_t axis = 0;
    if ((st = norm_axis(fn, params->axis, ox.t.ndim, &axis)) != GAIO_OK) return st;
    if ((st = check_shape(fn, "y", &ox, &oy, 1u << axis, 1)) != GAIO_OK) return st;
    if ((st = check_output(fn, "y", &oy, &ox)) != GAIO_OK) return st;
    gaio_kselect p;
    memset(&p, 0, sizeof p);
    select_rows(&p, &ox, NULL, &oy, axis);
    p.largest = !params->min, p.select_last = params->select_last_index != 0;
    bool axis_inner = true;
    for (int32_t i = 0; i < p.nouter; i++) axis_inner = axis_inner && p.xs < p.outer_xs[i];
    int64_t per_block = BLOCK;
    if (axis_inner && p.len >= 32) p.mode = GAIO_KRED_WARP, per_block = WARPS_PER_BLOCK;
    gaio_arg args[1] = {GAIO_ARG(p)};
    gaio_buffer *held[2] = {x->buffer, y->buffer};
    return launch(fn, stream, "gaio_dnn_select", p.rows, per_block, args, 1, held, 2);
}

gaio_status gaio_topk(gaio_stream *stream, const gaio_tensor *x, const gaio_tensor *values,
                      const gaio_tensor *indices, const gaio_topk_params *params) {
    const char *fn = __func__;
    if (!stream) return BAD("stream is NULL");
    if (!params) return BAD("params is NULL");
    if (!values && !indices) return BAD("values and indices are both NULL: give at least one");
    operand ox, ov, oi;
    gaio_status st = resolve(fn, "x", x, stream, &ox);
    if (st != GAIO_OK) return st;
    int32_t axis = 0;
    if ((st = norm_axis(fn, params->axis, ox.t.ndim, &axis)) != GAIO_OK) return st;
    const int64_t len = ox.t.shape[axis];
    if (params->k < 1 || params->k > len)
        return BAD("params->k is %lld: 1 to x's %lld elements along axis %d", (long long)params->k, (long long)len,
                   (int)axis);
    if (values) {
        if ((st = resolve(fn, "values", values, stream, &ov)) != GAIO_OK) return st;
        if (ov.t.dtype != ox.t.dtype)
            return BAD("values is %s but x is %s: they take one dtype", gaio_dtype_name(ov.t.dtype),
                       gaio_dtype_name(ox.t.dtype));
        if ((st = check_shape(fn, "values", &ox, &ov, 1u << axis, params->k)) != GAIO_OK) return st;
        if ((st = check_output(fn, "values", &ov, &ox)) != GAIO_OK) return st;
    }
    if (indices) {
        if ((st = resolve_index(fn, "indices", indices, stream, &oi)) != GAIO_OK) return st;
        if ((st = check_shape(fn, "indices", &ox, &oi, 1u << axis, params->k)) != GAIO_OK) return st;
        if ((st = check_output(fn, "indices", &oi, &ox)) != GAIO_OK) return st;
        if (values && gaio__ktensor_view_overlap(&ov, &oi)) return BAD("values and indices overlap");
    }
    gaio_kselect p;
    memset(&p, 0, sizeof p);
    select_rows(&p, &ox, values ? &ov : NULL, indices ? &oi : NULL, axis);
    p.topk = 1, p.largest = params->largest != 0, p.k = params->k;
    gaio_arg args[1] = {GAIO_ARG(p)};
    gaio_buffer *held[3] = {x->buffer, values ? values->buffer : x->buffer, indices ? indices->buffer : x->buffer};
    return launch(fn, stream, "gaio_dnn_select", p.rows, BLOCK, args, 1, held, 3);
}
