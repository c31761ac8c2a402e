/* Shape inference of the reductions, ArgMax, ArgMin and TopK (infer_reduce.h).
 *
 * Per ONNX: the Reduce* operators take their axes as an attribute until ReduceSum-13
 * and the others' 18, as an optional constant input from then; no axes reduce all of
 * them, unless noop_with_empty_axes, which reduces none (each element alone: the
 * identity for ReduceSum, x^2 for ReduceSumSquare, as ONNX's reference computes);
 * negative axes count from the end; keepdims keeps the reduced axes as 1s. TopK's K is
 * an attribute until opset 10, then a constant input (a run-time K is refused). */
#include <string.h>

#include "model/infer_reduce.h"
#include "model/ops_internal.h"

#define MAXD GAIO_MODEL_MAX_NDIM

static const char *dname(const mvalue *v, int i) { return v->dim_names[i] ? v->dim_names[i] : ""; }

static gaio_status norm_axis(const char *fn, const mnode *n, int64_t axis, int r, int64_t *out) {
    if (axis < -r || axis >= r) return FAIL(GAIO_ERR_INVALID_ARG, "axis %lld is out of range for rank %d", (long long)axis, r);
    *out = axis < 0 ? axis + r : axis;
    return GAIO_OK;
}

/* A constant int64 input of at most MAXD values (axes, K): its count and values. */
static gaio_status const_ints(const char *fn, const mnode *n, const mvalue *v, const char *what, int64_t *vals,
                              int *count) {
    if (v->elem != MT_I64)
        return FAIL(GAIO_ERR_INVALID_ARG, "the %s '%s' is %s; it must be int64", what, v->name, gaio__mt_name(v->elem));
    if (v->ndim > 1) return FAIL(GAIO_ERR_INVALID_ARG, "the %s '%s' has rank %d; it must be 1", what, v->name, v->ndim);
    if (!v->data) return FAIL(GAIO_ERR_NOT_SUPPORTED, "the %s '%s' is computed at run time", what, v->name);
    int64_t c = v->ndim ? v->dims[0] : 1;
    if (c < 0 || (size_t)c * 8 != v->bytes)
        return FAIL(GAIO_ERR_INVALID_ARG, "the %s '%s' holds %zu bytes, not its shape's", what, v->name, v->bytes);
    if (c > MAXD) return FAIL(GAIO_ERR_INVALID_ARG, "the %s '%s' has %lld entries", what, v->name, (long long)c);
    memcpy(vals, v->data, (size_t)c * 8);
    *count = (int)c;
    return GAIO_OK;
}

/* out: x's shape with the dimensions of mask made `size` (keepdims) or dropped. */
static void shape_out(const mvalue *x, uint32_t mask, bool keep, int64_t size, int32_t elem, mvalue *out) {
    int nd = 0;
    for (int d = 0; d < x->ndim; d++) {
        if (!((mask >> d) & 1u)) {
            out->dims[nd] = x->dims[d], out->dim_names[nd++] = dname(x, d);
        } else if (keep) {
            out->dims[nd] = size, out->dim_names[nd++] = "";
        }
    }
    out->ndim = nd;
    out->elem = elem;
}

static gaio_status need_float(const char *fn, const mnode *n, const mvalue *x) {
    if (x->elem == MT_F32 || x->elem == MT_F16) return GAIO_OK;
    return FAIL(GAIO_ERR_NOT_SUPPORTED, "input '%s' is %s; %s runs on float32 or float16", x->name,
                gaio__mt_name(x->elem), n->op_type);
}

static gaio_status infer_reduce_axes(const char *fn, mgraph *g, mnode *n) {
    mattrs *a = &n->a;
    const mvalue *x = &g->values[n->in[0]];
    int64_t axes[MAXD];
    int c = a->naxes;
    for (int i = 0; i < c; i++) axes[i] = a->axes[i];
    if (n->nin > 1 && n->in[1] >= 0) TRY(const_ints(fn, n, &g->values[n->in[1]], "axes", axes, &c));
    uint32_t mask = 0;
    for (int i = 0; i < c; i++) {
        int64_t d = 0;
        TRY(norm_axis(fn, n, axes[i], x->ndim, &d));
        if ((mask >> d) & 1u) return FAIL(GAIO_ERR_INVALID_ARG, "axis %lld is given twice", (long long)axes[i]);
        mask |= 1u << d;
    }
    if (!c && !a->noop_with_empty_axes) mask = (1u << x->ndim) - 1u;
    a->reduce_mask = mask;
    shape_out(x, mask, a->keepdims != 0, 1, x->elem, &g->values[n->out[0]]);
    return GAIO_OK;
}

static gaio_status infer_arg(const char *fn, mgraph *g, mnode *n) {
    mattrs *a = &n->a;
    const mvalue *x = &g->values[n->in[0]];
    if (x->ndim < 1) return FAIL(GAIO_ERR_INVALID_ARG, "input '%s' is a scalar", x->name);
    TRY(norm_axis(fn, n, a->axis, x->ndim, &a->axis));
    shape_out(x, 1u << a->axis, a->keepdims != 0, 1, MT_I64, &g->values[n->out[0]]);
    return GAIO_OK;
}

static gaio_status infer_topk(const char *fn, mgraph *g, mnode *n) {
    mattrs *a = &n->a;
    const mvalue *x = &g->values[n->in[0]];
    if (x->ndim < 1) return FAIL(GAIO_ERR_INVALID_ARG, "input '%s' is a scalar", x->name);
    TRY(norm_axis(fn, n, a->axis, x->ndim, &a->axis));
    if (n->nin > 1) { /* opset 10 on */
        const mvalue *kv = &g->values[n->in[1]];
        int64_t k[MAXD];
        int c = 0;
        TRY(const_ints(fn, n, kv, "K", k, &c));
        if (c != 1) return FAIL(GAIO_ERR_INVALID_ARG, "K '%s' holds %d values, not 1", kv->name, c);
        a->topk_k = k[0];
    }
    int64_t dim = x->dims[a->axis];
    if (a->topk_k < 0) return FAIL(GAIO_ERR_INVALID_ARG, "K is %lld", (long long)a->topk_k);
    if (a->topk_k == 0) return FAIL(GAIO_ERR_NOT_SUPPORTED, "K is 0: gaio runs no empty tensors");
    if (dim < 0) return FAIL(GAIO_ERR_NOT_SUPPORTED, "TopK along symbolic dimension '%s' is not supported", dname(x, (int)a->axis));
    if (a->topk_k > dim)
        return FAIL(GAIO_ERR_INVALID_ARG, "K is %lld but axis %lld has %lld elements", (long long)a->topk_k,
                    (long long)a->axis, (long long)dim);
    for (int k = 0; k < n->nout; k++)
        if (n->out[k] >= 0) shape_out(x, 1u << a->axis, true, a->topk_k, k ? MT_I64 : x->elem, &g->values[n->out[k]]);
    return GAIO_OK;
}

gaio_status gaio__infer_reduce(const char *fn, mgraph *g, mnode *n) {
    TRY(need_float(fn, n, &g->values[n->in[0]]));
    switch (n->op) {
    case OP_ARGMAX:
    case OP_ARGMIN: return infer_arg(fn, g, n);
    case OP_TOPK: return infer_topk(fn, g, n);
    default: return infer_reduce_axes(fn, g, n);
    }
}
