/* Output types and shapes of each operator from its inputs', checked (channels, ranks,
 * broadcasting), and the folding of shape-only operators whose inputs are constants.
 *
 * A dimension of -1 is symbolic (the batch): it passes through where a dimension is
 * copied, and refuses (GAIO_ERR_NOT_SUPPORTED) where gaio would have to compute with
 * it, so that every shape the planner sees is either known or the batch itself. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/half.h"
#include "model/infer_resize.h"
#include "model/infer_arith.h"
#include "model/infer_einsum.h"
#include "model/infer_reduce.h"
#include "model/infer_scatter.h"
#include "model/infer_conv_transpose.h"
#include "model/norm_ops.h"
#include "model/ops_internal.h"

#define MAXD GAIO_MODEL_MAX_NDIM
/* Dims and element counts stay below this, so that counts times 8 bytes, sums of
 * pads and products of a kernel with a dilation cannot overflow. */
#define DIM_LIMIT ((int64_t)1 << 48)
/* Folded outputs larger than this stay computed at run time: folding is an
 * optimisation, and a hostile Gather must not make the loader allocate terabytes. */
#define FOLD_MAX ((size_t)256 << 20)

typedef struct shp {
    int32_t ndim;
    int64_t d[MAXD];
    const char *nm[MAXD];
} shp;


static mvalue *in_v(mgraph *g, const mnode *n, int i) { return i < n->nin && n->in[i] >= 0 ? &g->values[n->in[i]] : NULL; }
static const char *dname(const mvalue *v, int i) { return v->dim_names[i] ? v->dim_names[i] : ""; }
static bool is_float(int32_t e) { return e == MT_F32 || e == MT_F16; }
static bool is_int(int32_t e) { return e == MT_I32 || e == MT_I64; }

static void shp_of(const mvalue *v, shp *s) {
    s->ndim = v->ndim;
    for (int i = 0; i < v->ndim; i++) s->d[i] = v->dims[i], s->nm[i] = dname(v, i);
}
static void shp_push(shp *s, int64_t d, const char *nm) {
    s->d[s->ndim] = d;
    s->nm[s->ndim++] = d < 0 ? nm : "";
}

/* Product of the fixed dims of [lo, hi); the symbolic ones are counted (and the last's
 * name kept). False when the product passes DIM_LIMIT. */
static bool prod(const int64_t *d, const char *const *nm, int lo, int hi, int64_t *p, int *nsym, const char **sym) {
    *p = 1, *nsym = 0;
    for (int i = lo; i < hi; i++) {
        if (d[i] < 0) {
            (*nsym)++;
            if (sym) *sym = nm[i];
            continue;
        }
        if (d[i] && *p > DIM_LIMIT / d[i]) return false;
        *p *= d[i];
    }
    return true;
}

/* The element count of a value whose dims are all known, or -1. */
static int64_t numel(const mvalue *v) {
    int64_t p;
    int ns;
    if (!prod(v->dims, v->dim_names, 0, v->ndim, &p, &ns, NULL) || ns) return -1;
    return p;
}

static gaio_status need_float(const char *fn, const mnode *n, const mvalue *v) {
    if (is_float(v->elem)) return GAIO_OK;
    return FAIL(GAIO_ERR_NOT_SUPPORTED, "input '%s' is %s; %s runs on float32 or float16", v->name, gaio__mt_name(v->elem), n->op_type);
}
static gaio_status same_elem(const char *fn, const mnode *n, const mvalue *a, const mvalue *b) {
    if (a->elem == b->elem) return GAIO_OK;
    return FAIL(GAIO_ERR_INVALID_ARG, "inputs '%s' and '%s' differ in type (%s, %s)", a->name, b->name, gaio__mt_name(a->elem),
                gaio__mt_name(b->elem));
}
static gaio_status need_rank(const char *fn, const mnode *n, const mvalue *v, int r) {
    if (v->ndim == r) return GAIO_OK;
    return FAIL(GAIO_ERR_INVALID_ARG, "input '%s' has rank %d; it must be %d", v->name, v->ndim, r);
}
/* Spatial operators are 2-D: an NCHW input. */
static gaio_status need_nchw(const char *fn, const mnode *n, const mvalue *v) {
    if (v->ndim == 3 || v->ndim == 5)
        return FAIL(GAIO_ERR_NOT_SUPPORTED, "%d-D %s are not supported (input '%s')", v->ndim - 2,
                    n->op == OP_CONV ? "convolutions" : "pools", v->name);
    return need_rank(fn, n, v, 4);
}
static gaio_status norm_axis(const char *fn, const mnode *n, int64_t axis, int r, int64_t *out) {
    if (axis < -r || axis >= r) return FAIL(GAIO_ERR_INVALID_ARG, "axis %lld is out of range for rank %d", (long long)axis, r);
    *out = axis < 0 ? axis + r : axis;
    return GAIO_OK;
}

/* ---- folding ---- */

static gaio_status fold_alloc(const char *fn, mgraph *g, const mnode *n, mvalue *o, size_t bytes, bool *skip) {
    *skip = bytes > FOLD_MAX;
    if (*skip) return GAIO_OK;
    o->data = gaio__bump_alloc(&g->bump, bytes ? bytes : 1); /* an empty constant still has data */
    if (!o->data) return FAIL(GAIO_ERR_NO_MEMORY, "out of memory folding %zu bytes", bytes);
    o->bytes = bytes;
    return GAIO_OK;
}

/* A constant input's data must hold exactly its shape's bytes: the loader checks
 * initializers, this catches anything else before a fold reads it. */
static gaio_status const_ok(const char *fn, const mnode *n, const mvalue *v) {
    int64_t ne = numel(v);
    size_t es = gaio__mt_size(v->elem);
    if (ne < 0 || !es || (size_t)ne * es != v->bytes)
        return FAIL(GAIO_ERR_INVALID_ARG, "constant '%s' holds %zu bytes, not its shape's", v->name, v->bytes);
    return GAIO_OK;
}

/* Same elements, another shape (Identity, Reshape, Flatten, Squeeze, Unsqueeze). */
static gaio_status fold_copy(const char *fn, mgraph *g, const mnode *n, const mvalue *x, mvalue *o) {
    if (!x->data) return GAIO_OK;
    TRY(const_ok(fn, n, x));
    bool skip;
    TRY(fold_alloc(fn, g, n, o, x->bytes, &skip));
    if (!skip) memcpy(o->data, x->data, x->bytes);
    return GAIO_OK;
}

static gaio_status get_ints(const char *fn, const mnode *n, const mvalue *v, int64_t i, int64_t *out) {
    if (v->elem == MT_I64) {
        memcpy(out, (const char *)v->data + i * 8, 8);
        return GAIO_OK;
    }
    if (v->elem == MT_I32) {
        int32_t x;
        memcpy(&x, (const char *)v->data + i * 4, 4);
        *out = x;
        return GAIO_OK;
    }
    return FAIL(GAIO_ERR_INVALID_ARG, "input '%s' is %s; it must be int64", v->name, gaio__mt_name(v->elem));
}

/* A constant 1-D (or scalar) int64 list input: Reshape's shape, (Un)squeeze's axes. */
static gaio_status const_list(const char *fn, const mnode *n, const mvalue *v, const char *what, int64_t *vals, int *count) {
    if (v->elem != MT_I64) return FAIL(GAIO_ERR_INVALID_ARG, "the %s '%s' is %s; it must be int64", what, v->name, gaio__mt_name(v->elem));
    if (v->ndim > 1) return FAIL(GAIO_ERR_INVALID_ARG, "the %s '%s' has rank %d; it must be 1", what, v->name, v->ndim);
    if (!v->data) return FAIL(GAIO_ERR_NOT_SUPPORTED, "the %s '%s' is computed at run time", what, v->name);
    TRY(const_ok(fn, n, v));
    int64_t c = v->ndim ? v->dims[0] : 1;
    if (c > MAXD) return FAIL(GAIO_ERR_NOT_SUPPORTED, "the %s has %lld entries; gaio's rank limit is %d", what, (long long)c, MAXD);
    *count = (int)c;
    memcpy(vals, v->data, (size_t)c * 8);
    return GAIO_OK;
}

/* ---- spatial operators ---- */

/* The output size of each spatial axis; SAME_* pads computed and written back, so
 * that the planner sees explicit pads only. */
static gaio_status spatial(const char *fn, mnode *n, const mvalue *x, int64_t out[2]) {
    mattrs *a = &n->a;
    bool pool = n->op != OP_CONV;
    for (int i = 0; i < 2; i++) {
        int64_t h = x->dims[2 + i], k = a->kernel[i], s = a->strides[i], dl = a->dilations[i];
        if (h < 0) return FAIL(GAIO_ERR_NOT_SUPPORTED, "input '%s' has a symbolic spatial dimension", x->name);
        int64_t ek = (k - 1) * dl + 1;
        if (a->auto_pad == 1 || a->auto_pad == 2) {
            int64_t o = (h + s - 1) / s, total = (o - 1) * s + ek - h;
            if (total < 0) total = 0;
            a->pads[i] = a->auto_pad == 1 ? total / 2 : total - total / 2;
            a->pads[i + 2] = total - a->pads[i];
        } else if (a->auto_pad == 3) {
            a->pads[i] = a->pads[i + 2] = 0;
        }
        /* A pool window wholly in the padding has nothing to take the max or mean of
         * (onnxruntime refuses it too); SAME pads are always below ek. */
        if (pool && (a->pads[i] >= ek || a->pads[i + 2] >= ek))
            return FAIL(GAIO_ERR_INVALID_ARG, "pads (%lld, %lld) must be smaller than the kernel (%lld with dilation)",
                        (long long)a->pads[i], (long long)a->pads[i + 2], (long long)ek);
        int64_t span = h + a->pads[i] + a->pads[i + 2] - ek;
        if (span < 0)
            return FAIL(GAIO_ERR_INVALID_ARG, "the kernel (%lld with dilation) is larger than the padded input (%lld)", (long long)ek,
                        (long long)(h + a->pads[i] + a->pads[i + 2]));
        int64_t o = span / s + 1;
        if (pool && a->ceil_mode && a->auto_pad == 0) {
            o = (span + s - 1) / s + 1;
            /* ONNX (and torch): a window may not start in the end padding. */
            if ((o - 1) * s >= h + a->pads[i]) o--;
        }
        out[i] = o;
    }
    a->auto_pad = 0;
    return GAIO_OK;
}

static gaio_status infer_conv(const char *fn, mgraph *g, mnode *n, shp *o) {
    mvalue *x = in_v(g, n, 0), *w = in_v(g, n, 1), *b = in_v(g, n, 2);
    mattrs *a = &n->a;
    TRY(need_float(fn, n, x));
    TRY(same_elem(fn, n, x, w));
    TRY(need_nchw(fn, n, x));
    TRY(need_nchw(fn, n, w));
    for (int i = 0; i < 4; i++)
        if (w->dims[i] < 0) return FAIL(GAIO_ERR_NOT_SUPPORTED, "the weights '%s' have a symbolic dimension", w->name);
    if (x->dims[1] < 0) return FAIL(GAIO_ERR_NOT_SUPPORTED, "input '%s' has a symbolic channel count", x->name);
    int64_t k = w->dims[0];
    /* Divisions, not w.C * group: both come from the file and the product could overflow. */
    if (x->dims[1] % a->group || x->dims[1] / a->group != w->dims[1] || k % a->group)
        return FAIL(GAIO_ERR_INVALID_ARG,
                    "input '%s' has %lld channels; weights '%s' [%lld, %lld, ...] with group %lld do not match it", x->name,
                    (long long)x->dims[1], w->name, (long long)k, (long long)w->dims[1], (long long)a->group);
    if (a->nkernel && (a->kernel[0] != w->dims[2] || a->kernel[1] != w->dims[3]))
        return FAIL(GAIO_ERR_INVALID_ARG, "kernel_shape [%lld, %lld] differs from the weights' [%lld, %lld]", (long long)a->kernel[0],
                    (long long)a->kernel[1], (long long)w->dims[2], (long long)w->dims[3]);
    if (w->dims[2] < 1 || w->dims[3] < 1 || w->dims[2] > INT32_MAX || w->dims[3] > INT32_MAX)
        return FAIL(GAIO_ERR_INVALID_ARG, "the weights '%s' have an empty or huge kernel", w->name);
    a->kernel[0] = w->dims[2], a->kernel[1] = w->dims[3];
    if (b) {
        TRY(same_elem(fn, n, x, b));
        if (b->ndim != 1 || b->dims[0] != k)
            return FAIL(GAIO_ERR_INVALID_ARG, "the bias '%s' must have shape [%lld]", b->name, (long long)k);
    }
    int64_t hw[2];
    TRY(spatial(fn, n, x, hw));
    o->ndim = 0;
    shp_push(o, x->dims[0], dname(x, 0));
    shp_push(o, k, "");
    shp_push(o, hw[0], "");
    shp_push(o, hw[1], "");
    return GAIO_OK;
}

static gaio_status infer_pool(const char *fn, mgraph *g, mnode *n, shp *o) {
    mvalue *x = in_v(g, n, 0);
    TRY(need_float(fn, n, x));
    TRY(need_nchw(fn, n, x));
    o->ndim = 0;
    shp_push(o, x->dims[0], dname(x, 0));
    shp_push(o, x->dims[1], dname(x, 1));
    if (n->op == OP_GLOBAL_AVG_POOL) {
        shp_push(o, 1, "");
        shp_push(o, 1, "");
        return GAIO_OK;
    }
    int64_t hw[2];
    TRY(spatial(fn, n, x, hw));
    shp_push(o, hw[0], "");
    shp_push(o, hw[1], "");
    return GAIO_OK;
}

/* ---- linear algebra and elementwise ---- */

/* numpy broadcasting of a's first ra dims with b's first rb dims, right-aligned. A
 * symbolic dim against 1 stays symbolic; against a fixed size it takes that size. */
static gaio_status broadcast(const char *fn, const mnode *n, const mvalue *a, int ra, const mvalue *b, int rb, shp *o) {
    int r = ra > rb ? ra : rb;
    o->ndim = r;
    for (int i = 0; i < r; i++) {
        int ia = i - (r - ra), ib = i - (r - rb);
        int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
        const char *na = ia >= 0 ? dname(a, ia) : "", *nb = ib >= 0 ? dname(b, ib) : "";
        if (da == db) o->d[i] = da, o->nm[i] = na[0] ? na : nb;
        else if (db == 1) o->d[i] = da, o->nm[i] = na;
        else if (da == 1) o->d[i] = db, o->nm[i] = nb;
        else if (da < 0) o->d[i] = db, o->nm[i] = "";
        else if (db < 0) o->d[i] = da, o->nm[i] = "";
        else
            return FAIL(GAIO_ERR_INVALID_ARG, "inputs '%s' and '%s' do not broadcast (%lld and %lld at axis %d)", a->name, b->name,
                        (long long)da, (long long)db, i);
        if (o->d[i] >= 0) o->nm[i] = "";
    }
    return GAIO_OK;
}

static gaio_status infer_binary(const char *fn, mgraph *g, mnode *n, shp *o) {
    mvalue *a = in_v(g, n, 0), *b = in_v(g, n, 1);
    TRY(need_float(fn, n, a));
    if (n->op == OP_MOD && !n->a.fmod)
        return FAIL(GAIO_ERR_INVALID_ARG, "fmod 0 on %s inputs (ONNX requires fmod 1 for floats)", gaio__mt_name(a->elem));
    if (n->op == OP_POW && b->elem != a->elem)
        return FAIL(GAIO_ERR_NOT_SUPPORTED, "the exponent '%s' is %s: gaio's Pow takes an exponent of the base's type (%s)",
                    b->name, gaio__mt_name(b->elem), gaio__mt_name(a->elem));
    TRY(need_float(fn, n, b));
    TRY(same_elem(fn, n, a, b));
    return broadcast(fn, n, a, a->ndim, b, b->ndim, o);
}

/* Min, Max, Sum, Mean: any number of inputs of one float type, broadcast together. */
static gaio_status infer_variadic(const char *fn, mgraph *g, mnode *n, shp *o) {
    mvalue *x = in_v(g, n, 0);
    TRY(need_float(fn, n, x));
    shp_of(x, o);
    for (int k = 1; k < n->nin; k++) {
        mvalue *b = in_v(g, n, k), acc;
        TRY(need_float(fn, n, b));
        TRY(same_elem(fn, n, x, b));
        /* The shape so far as a value, for broadcast(). */
        memset(&acc, 0, sizeof acc);
        acc.name = k == 1 ? x->name : "the inputs before it";
        acc.ndim = o->ndim;
        for (int i = 0; i < o->ndim; i++) acc.dims[i] = o->d[i], acc.dim_names[i] = o->nm[i];
        TRY(broadcast(fn, n, &acc, acc.ndim, b, b->ndim, o));
    }
    return GAIO_OK;
}

static gaio_status infer_gemm(const char *fn, mgraph *g, mnode *n, shp *o) {
    mvalue *a = in_v(g, n, 0), *b = in_v(g, n, 1), *c = in_v(g, n, 2);
    TRY(need_float(fn, n, a));
    TRY(same_elem(fn, n, a, b));
    TRY(need_rank(fn, n, a, 2));
    TRY(need_rank(fn, n, b, 2));
    int ta = (int)n->a.trans_a, tb = (int)n->a.trans_b;
    int64_t m = a->dims[ta], ka = a->dims[1 - ta], kb = b->dims[tb], nn = b->dims[1 - tb];
    if (ka < 0 || kb < 0 || nn < 0) return FAIL(GAIO_ERR_NOT_SUPPORTED, "only the rows of A may be symbolic");
    if (ka != kb) return FAIL(GAIO_ERR_INVALID_ARG, "A has %lld columns, B %lld rows (after transA/transB)", (long long)ka, (long long)kb);
    o->ndim = 0;
    shp_push(o, m, dname(a, ta));
    shp_push(o, nn, "");
    if (c) {
        TRY(same_elem(fn, n, a, c));
        if (c->ndim > 2) return FAIL(GAIO_ERR_INVALID_ARG, "C has rank %d", c->ndim);
        /* C broadcasts to [M, N] one way only. */
        for (int i = 0; i < c->ndim; i++) {
            int64_t dc = c->dims[i], want = o->d[2 - c->ndim + i];
            if (dc != 1 && dc != want)
                return FAIL(GAIO_ERR_INVALID_ARG, "C '%s' does not broadcast to [%lld, %lld]", c->name, (long long)m, (long long)nn);
        }
    }
    return GAIO_OK;
}

static gaio_status infer_matmul(const char *fn, mgraph *g, mnode *n, shp *o) {
    mvalue *a = in_v(g, n, 0), *b = in_v(g, n, 1);
    TRY(need_float(fn, n, a));
    TRY(same_elem(fn, n, a, b));
    if (a->ndim < 1 || b->ndim < 1) return FAIL(GAIO_ERR_INVALID_ARG, "a scalar operand (MatMul takes rank 1 or more)");
    /* numpy's matmul: a 1-D a is a row [1, K], a 1-D b a column [K, 1], and the
     * dimension of 1 each adds leaves the output. */
    int64_t ka = a->dims[a->ndim - 1], kb = b->dims[b->ndim >= 2 ? b->ndim - 2 : 0];
    if (ka < 0 || kb < 0) return FAIL(GAIO_ERR_NOT_SUPPORTED, "a symbolic inner dimension is not supported");
    if (ka != kb) return FAIL(GAIO_ERR_INVALID_ARG, "inner dimensions differ (%lld, %lld)", (long long)ka, (long long)kb);
    int lead_a = a->ndim >= 2 ? a->ndim - 2 : 0, lead_b = b->ndim >= 2 ? b->ndim - 2 : 0;
    TRY(broadcast(fn, n, a, lead_a, b, lead_b, o));
    if (a->ndim >= 2) shp_push(o, a->dims[a->ndim - 2], dname(a, a->ndim - 2));
    if (b->ndim >= 2) shp_push(o, b->dims[b->ndim - 1], dname(b, b->ndim - 1));
    return GAIO_OK;
}

static gaio_status infer_bn(const char *fn, mgraph *g, mnode *n, shp *o) {
    mvalue *x = in_v(g, n, 0);
    TRY(need_float(fn, n, x));
    if (x->ndim < 2) return FAIL(GAIO_ERR_INVALID_ARG, "input '%s' has rank %d; it needs a channel axis", x->name, x->ndim);
    if (x->dims[1] < 0) return FAIL(GAIO_ERR_NOT_SUPPORTED, "input '%s' has a symbolic channel count", x->name);
    for (int i = 1; i < 5; i++) {
        mvalue *p = in_v(g, n, i);
        TRY(need_float(fn, n, p));
        if (p->ndim != 1 || p->dims[0] != x->dims[1])
            return FAIL(GAIO_ERR_INVALID_ARG, "input '%s' must have shape [%lld]", p->name, (long long)x->dims[1]);
    }
    shp_of(x, o);
    return GAIO_OK;
}

static gaio_status infer_unary(const char *fn, mgraph *g, mnode *n, shp *o) {
    mvalue *x = in_v(g, n, 0);
    TRY(need_float(fn, n, x));
    if (n->op == OP_CLIP)
        for (int i = 1; i < 3; i++) {
            mvalue *m = in_v(g, n, i);
            if (!m) continue;
            TRY(same_elem(fn, n, x, m));
            if (m->ndim > 1 || (m->ndim == 1 && m->dims[0] != 1))
                return FAIL(GAIO_ERR_INVALID_ARG, "the %s '%s' must be a scalar", i == 1 ? "min" : "max", m->name);
        }
    if (n->op == OP_SOFTMAX || n->op == OP_LOG_SOFTMAX) {
        if (x->ndim < 1) return FAIL(GAIO_ERR_INVALID_ARG, "input '%s' is a scalar", x->name);
        TRY(norm_axis(fn, n, n->a.axis, x->ndim, &n->a.axis));
        /* Opsets before 13 take the dimensions from axis on as one: over the last
         * alone, that is today's Softmax. */
        if (n->a.coerce_2d && n->a.axis == x->ndim - 1) n->a.coerce_2d = 0;
    }
    shp_of(x, o);
    return GAIO_OK;
}

/* A constant list of int64 or int32 values (Slice's starts, ends, axes, steps). */
static gaio_status const_ints(const char *fn, const mnode *n, const mvalue *v, const char *what, int64_t *vals,
                              int *count) {
    if (!is_int(v->elem))
        return FAIL(GAIO_ERR_INVALID_ARG, "the %s '%s' is %s; it must be int64 or int32", what, v->name, gaio__mt_name(v->elem));
    if (v->ndim > 1) return FAIL(GAIO_ERR_INVALID_ARG, "the %s '%s' has rank %d; it must be 1", what, v->name, v->ndim);
    if (!v->data) return FAIL(GAIO_ERR_NOT_SUPPORTED, "the %s '%s' is computed at run time", what, v->name);
    TRY(const_ok(fn, n, v));
    int64_t c = numel(v);
    if (c > MAXD) return FAIL(GAIO_ERR_NOT_SUPPORTED, "the %s has %lld entries; gaio's rank limit is %d", what, (long long)c, MAXD);
    for (int64_t i = 0; i < c; i++) TRY(get_ints(fn, n, v, i, &vals[i]));
    *count = (int)c;
    return GAIO_OK;
}

/* A start or end clamped as ONNX says: negative values count from the end once, then
 * into [0, dim] for a positive step, and for a negative one starts into [0, dim - 1]
 * and ends into [-1, dim - 1] (-1: through element 0). INT64_MIN and INT64_MAX, as
 * exporters write "to the end", fall at the ends. */
static int64_t slice_clamp(int64_t v, int64_t dim, bool start, int64_t step) {
    if (v < 0) v += dim; /* no overflow: dim > 0 */
    int64_t lo = step > 0 || start ? 0 : -1, hi = step > 0 ? dim : dim - 1;
    return v < lo ? lo : v > hi ? hi : v;
}

/* A constant input sliced at load (Shape -> Slice chains): element by element. */
static gaio_status fold_slice(const char *fn, mgraph *g, const mnode *n, const mvalue *x, const shp *o, mvalue *out) {
    if (!x->data) return GAIO_OK;
    TRY(const_ok(fn, n, x));
    size_t es = gaio__mt_size(x->elem);
    int64_t cnt = 1, xs[MAXD];
    for (int d = 0; d < o->ndim; d++) cnt *= o->d[d];
    int64_t m = 1;
    for (int d = x->ndim - 1; d >= 0; d--) xs[d] = m, m *= x->dims[d];
    bool skip;
    TRY(fold_alloc(fn, g, n, out, (size_t)cnt * es, &skip));
    if (skip) return GAIO_OK;
    for (int64_t i = 0; i < cnt; i++) {
        int64_t rest = i, src = 0;
        for (int d = o->ndim - 1; d >= 0; d--) {
            int64_t k = rest % o->d[d];
            rest /= o->d[d];
            src += (n->a.slice_start[d] + k * n->a.slice_step[d]) * xs[d];
        }
        memcpy((char *)out->data + (size_t)i * es, (const char *)x->data + (size_t)src * es, es);
    }
    return GAIO_OK;
}

/* Slice: starts / ends / axes / steps (inputs from opset 10, attributes before, with no
 * steps) resolved for every dimension into the node's attributes: the run is a
 * strided view of the input copied out (a negative step a negative stride). */
static gaio_status infer_slice(const char *fn, mgraph *g, mnode *n, shp *o, mvalue *out) {
    mvalue *x = in_v(g, n, 0);
    mattrs *a = &n->a;
    int r = x->ndim;
    int64_t starts[MAXD], ends[MAXD], axes[MAXD], steps[MAXD];
    int ns = 0, ne = 0, na = -1, nst = -1;
    if (g->opset < 10) {
        ns = ne = a->nslice;
        for (int i = 0; i < ns; i++) starts[i] = a->slice_start[i], ends[i] = a->slice_end[i];
        if (a->naxes) {
            na = a->naxes;
            for (int i = 0; i < na; i++) axes[i] = a->axes[i];
        }
    } else {
        TRY(const_ints(fn, n, in_v(g, n, 1), "starts", starts, &ns));
        TRY(const_ints(fn, n, in_v(g, n, 2), "ends", ends, &ne));
        if (in_v(g, n, 3)) TRY(const_ints(fn, n, in_v(g, n, 3), "axes", axes, &na));
        if (in_v(g, n, 4)) TRY(const_ints(fn, n, in_v(g, n, 4), "steps", steps, &nst));
    }
    if (ns != ne) return FAIL(GAIO_ERR_INVALID_ARG, "starts has %d entries, ends %d", ns, ne);
    if ((na >= 0 && na != ns) || (nst >= 0 && nst != ns))
        return FAIL(GAIO_ERR_INVALID_ARG, "starts has %d entries, axes %d, steps %d", ns, na, nst);
    if (ns > r) return FAIL(GAIO_ERR_INVALID_ARG, "%d axes sliced of a rank-%d input", ns, r);
    int64_t st[MAXD], en[MAXD], sp[MAXD];
    bool seen[MAXD] = {false};
    for (int d = 0; d < r; d++) st[d] = 0, sp[d] = 1, en[d] = x->dims[d];
    for (int i = 0; i < ns; i++) {
        int64_t ax = i;
        if (na >= 0) TRY(norm_axis(fn, n, axes[i], r, &ax));
        if (seen[ax]) return FAIL(GAIO_ERR_INVALID_ARG, "axis %lld is sliced twice", (long long)ax);
        seen[ax] = true;
        int64_t step = nst >= 0 ? steps[i] : 1, dim = x->dims[ax];
        if (step == 0) return FAIL(GAIO_ERR_INVALID_ARG, "step 0 on axis %lld", (long long)ax);
        if (dim < 0) { /* symbolic: only the whole of it */
            if (starts[i] == 0 && ends[i] >= INT32_MAX && step == 1) continue;
            return FAIL(GAIO_ERR_NOT_SUPPORTED, "slicing symbolic dimension '%s' (axis %lld) is not supported", dname(x, (int)ax),
                        (long long)ax);
        }
        st[ax] = slice_clamp(starts[i], dim, true, step), en[ax] = slice_clamp(ends[i], dim, false, step), sp[ax] = step;
    }
    o->ndim = 0;
    for (int d = 0; d < r; d++) {
        if (x->dims[d] < 0) {
            shp_push(o, x->dims[d], dname(x, d));
        } else {
            /* Counted without st + step overflowing: steps may be any int64. */
            int64_t c = 0, mag = sp[d] > 0 ? sp[d] : sp[d] == INT64_MIN ? INT64_MAX : -sp[d];
            if (sp[d] > 0 ? en[d] > st[d] : st[d] > en[d]) c = ((sp[d] > 0 ? en[d] - st[d] : st[d] - en[d]) - 1) / mag + 1;
            /* An empty shape vector folds (ViT's x.shape[3:] of a rank-3 x, concatenated
             * into a Reshape's shape); an empty tensor gaio would run is refused. */
            if (!c && !(x->data && r == 1))
                return FAIL(GAIO_ERR_NOT_SUPPORTED, "the slice of axis %d is empty: gaio runs no empty tensors", d);
            if (c == 1) sp[d] = 1; /* one element: its step moves nothing (and a huge one would overflow a stride) */
            shp_push(o, c, "");
        }
        a->slice_start[d] = st[d], a->slice_step[d] = sp[d], a->slice_end[d] = en[d];
    }
    return fold_slice(fn, g, n, x, o, out);
}

/* Pad: pads (an attribute before opset 11, then an input; axes from 18) resolved per
 * dimension, negative ones (cuts) too; every mode (wrap from opset 19); the constant
 * value a constant. */
static gaio_status infer_pad(const char *fn, mgraph *g, mnode *n, shp *o) {
    mvalue *x = in_v(g, n, 0), *pv = in_v(g, n, 1), *cv = in_v(g, n, 2), *av = in_v(g, n, 3);
    mattrs *a = &n->a;
    int r = x->ndim;
    if (a->pad_mode == 3 && g->opset < 19)
        return FAIL(GAIO_ERR_INVALID_ARG, "mode 'wrap' came in opset 19; the model's is %lld", (long long)g->opset);
    int64_t raw[2 * MAXD], axes[MAXD];
    int np = 0, na = r;
    if (g->opset < 11) {
        np = a->npad;
        for (int i = 0; i < np / 2; i++) raw[i] = a->pad_begin[i], raw[np / 2 + i] = a->pad_end[i];
    } else {
        if (!is_int(pv->elem) || pv->ndim > 1) return FAIL(GAIO_ERR_INVALID_ARG, "pads '%s' is not a 1-D int64 list", pv->name);
        if (!pv->data) return FAIL(GAIO_ERR_NOT_SUPPORTED, "pads '%s' is computed at run time", pv->name);
        TRY(const_ok(fn, n, pv));
        if (numel(pv) > 2 * MAXD) return FAIL(GAIO_ERR_INVALID_ARG, "pads has %lld values", (long long)numel(pv));
        np = (int)numel(pv);
        for (int i = 0; i < np; i++) TRY(get_ints(fn, n, pv, i, &raw[i]));
        if (cv) {
            if (!(is_float(cv->elem) || is_int(cv->elem)) || numel(cv) != 1)
                return FAIL(GAIO_ERR_INVALID_ARG, "constant_value '%s' is not one number", cv->name);
            if (!cv->data) return FAIL(GAIO_ERR_NOT_SUPPORTED, "constant_value '%s' is computed at run time", cv->name);
            TRY(const_ok(fn, n, cv));
            if (cv->elem == MT_F32) memcpy(&a->pad_value, cv->data, 4);
            else if (cv->elem == MT_F16) {
                uint16_t h;
                memcpy(&h, cv->data, 2);
                a->pad_value = h2f(h);
            } else {
                int64_t k = 0;
                TRY(get_ints(fn, n, cv, 0, &k));
                a->pad_value = (float)k;
                if ((double)a->pad_value != (double)k) /* mattrs keeps a float */
                    return FAIL(GAIO_ERR_NOT_SUPPORTED, "constant_value %lld is not exact in float32", (long long)k);
            }
        }
        if (av) TRY(const_ints(fn, n, av, "axes", axes, &na));
    }
    if (!av)
        for (int i = 0; i < r; i++) axes[i] = i;
    if (np != 2 * na) return FAIL(GAIO_ERR_INVALID_ARG, "pads has %d values for %d axes", np, na);
    for (int d = 0; d < r; d++) a->pad_begin[d] = a->pad_end[d] = 0;
    bool seen[MAXD] = {false};
    for (int i = 0; i < na; i++) {
        int64_t ax = 0;
        TRY(norm_axis(fn, n, axes[i], r, &ax));
        if (seen[ax]) return FAIL(GAIO_ERR_INVALID_ARG, "axis %lld is padded twice", (long long)ax);
        seen[ax] = true;
        int64_t b = raw[i], e = raw[na + i];
        if (b > INT32_MAX || e > INT32_MAX || b < -DIM_LIMIT || e < -DIM_LIMIT)
            return FAIL(GAIO_ERR_INVALID_ARG, "pads on axis %lld are out of range", (long long)ax);
        if ((b || e) && x->dims[ax] < 0)
            return FAIL(GAIO_ERR_NOT_SUPPORTED, "padding symbolic dimension '%s' is not supported", dname(x, (int)ax));
        /* Negative pads cut first (onnxruntime's order); something must be left to pad from. */
        if ((b < 0 || e < 0) && x->dims[ax] - (b < 0 ? -b : 0) - (e < 0 ? -e : 0) < 1)
            return FAIL(GAIO_ERR_NOT_SUPPORTED, "pads %lld and %lld cut all %lld elements of axis %lld: gaio runs no "
                        "empty tensors", (long long)b, (long long)e, (long long)x->dims[ax], (long long)ax);
        a->pad_begin[ax] = b, a->pad_end[ax] = e;
    }
    o->ndim = 0;
    for (int d = 0; d < r; d++)
        shp_push(o, x->dims[d] < 0 ? x->dims[d] : x->dims[d] + a->pad_begin[d] + a->pad_end[d], dname(x, d));
    return GAIO_OK;
}

/* Split: the parts' sizes along axis (an input from opset 13, an attribute before;
 * else equal parts, the last one smaller where num_outputs (18) does not divide) into
 * the node's attributes; every output's shape set here (the caller sets the first's
 * again from *o). A constant input folds. */
static gaio_status infer_split(const char *fn, mgraph *g, mnode *n, shp *o) {
    mvalue *x = in_v(g, n, 0), *sv = in_v(g, n, 1);
    mattrs *a = &n->a;
    int64_t ax = 0;
    TRY(norm_axis(fn, n, a->axis, x->ndim, &ax));
    a->axis = ax;
    int64_t dim = x->dims[ax];
    if (dim < 0) return FAIL(GAIO_ERR_NOT_SUPPORTED, "splitting symbolic dimension '%s' is not supported", dname(x, (int)ax));
    int parts = n->nout;
    if (sv) {
        if (!is_int(sv->elem) || sv->ndim > 1) return FAIL(GAIO_ERR_INVALID_ARG, "split '%s' is not a 1-D int64 list", sv->name);
        if (!sv->data) return FAIL(GAIO_ERR_NOT_SUPPORTED, "split '%s' is computed at run time", sv->name);
        TRY(const_ok(fn, n, sv));
        if (numel(sv) != parts) return FAIL(GAIO_ERR_INVALID_ARG, "split has %lld sizes for %d outputs", (long long)numel(sv), parts);
        for (int k = 0; k < parts; k++) TRY(get_ints(fn, n, sv, k, &a->split_sizes[k]));
    } else if (a->nsplit) {
        if (a->nsplit != parts) return FAIL(GAIO_ERR_INVALID_ARG, "split has %d sizes for %d outputs", a->nsplit, parts);
    } else {
        if (a->num_outputs && a->num_outputs != parts)
            return FAIL(GAIO_ERR_INVALID_ARG, "num_outputs is %d but the node has %d outputs", a->num_outputs, parts);
        if (!a->num_outputs && dim % parts)
            return FAIL(GAIO_ERR_INVALID_ARG, "axis %lld (%lld) does not split into %d equal parts", (long long)ax, (long long)dim, parts);
        int64_t each = (dim + parts - 1) / parts;
        for (int k = 0; k < parts; k++) a->split_sizes[k] = k < parts - 1 ? each : dim - each * (parts - 1);
    }
    a->nsplit = parts;
    int64_t sum = 0;
    for (int k = 0; k < parts; k++) {
        if (a->split_sizes[k] <= 0)
            return FAIL(GAIO_ERR_NOT_SUPPORTED, "part %d has size %lld: gaio runs no empty tensors", k, (long long)a->split_sizes[k]);
        sum += a->split_sizes[k];
    }
    if (sum != dim) return FAIL(GAIO_ERR_INVALID_ARG, "the parts add up to %lld, axis %lld has %lld", (long long)sum, (long long)ax, (long long)dim);
    int64_t outer = 1, inner = 1, at = 0;
    for (int d = 0; d < ax; d++) outer *= x->dims[d] < 0 ? 1 : x->dims[d];
    for (int d = (int)ax + 1; d < x->ndim; d++) inner *= x->dims[d];
    size_t es = gaio__mt_size(x->elem);
    if (x->data) TRY(const_ok(fn, n, x));
    for (int k = 0; k < parts; k++) {
        mvalue *ov = &g->values[n->out[k]];
        ov->elem = x->elem, ov->ndim = x->ndim;
        for (int d = 0; d < x->ndim; d++)
            ov->dims[d] = d == ax ? a->split_sizes[k] : x->dims[d], ov->dim_names[d] = d == ax ? "" : dname(x, d);
        if (x->data) { /* a constant: this part's rows of each outer block */
            bool skip;
            size_t blk = (size_t)(a->split_sizes[k] * inner) * es;
            TRY(fold_alloc(fn, g, n, ov, (size_t)outer * blk, &skip));
            for (int64_t i = 0; !skip && i < outer; i++)
                memcpy((char *)ov->data + (size_t)i * blk, (const char *)x->data + ((size_t)(i * dim + at) * (size_t)inner) * es, blk);
        }
        at += a->split_sizes[k];
    }
    shp_of(&g->values[n->out[0]], o);
    return GAIO_OK;
}

static double load_num(int32_t e, const void *p, size_t i);

/* The element count of a fixed shape about to be folded: false (a refusal) past
 * DIM_LIMIT, before any product can overflow or memory be sized from it. */
static gaio_status fold_count(const char *fn, const mnode *n, const shp *o, int64_t *cnt) {
    *cnt = 1;
    for (int d = 0; d < o->ndim; d++)
        if (o->d[d] < 0 || __builtin_mul_overflow(*cnt, o->d[d], cnt) || *cnt > DIM_LIMIT)
            return FAIL(GAIO_ERR_INVALID_ARG, "the output has too many elements");
    return GAIO_OK;
}

/* A number stored as elem at index i (fold results). */
static void store_num(int32_t e, void *p, size_t i, double v) {
    switch (e) {
    case MT_F32: { float f = (float)v; memcpy((char *)p + i * 4, &f, 4); break; }
    case MT_F16: { uint16_t h = f2h((float)v); memcpy((char *)p + i * 2, &h, 2); break; }
    case MT_I32: { int32_t k = (int32_t)v; memcpy((char *)p + i * 4, &k, 4); break; }
    default: { int64_t k = (int64_t)v; memcpy((char *)p + i * 8, &k, 8); break; }
    }
}

/* ConstantOfShape: the shape input (constant) filled with the value; folds. */
static gaio_status infer_constant_of_shape(const char *fn, mgraph *g, mnode *n, shp *o, mvalue *out) {
    mvalue *sv = in_v(g, n, 0);
    int64_t dims[MAXD];
    int c = 0;
    TRY(const_ints(fn, n, sv, "shape", dims, &c));
    o->ndim = 0;
    int64_t cnt = 1;
    for (int i = 0; i < c; i++) {
        if (dims[i] <= 0) return FAIL(GAIO_ERR_NOT_SUPPORTED, "dimension %d is %lld: gaio runs no empty tensors", i, (long long)dims[i]);
        if (__builtin_mul_overflow(cnt, dims[i], &cnt) || cnt > DIM_LIMIT)
            return FAIL(GAIO_ERR_INVALID_ARG, "the output has too many elements");
        shp_push(o, dims[i], "");
    }
    bool skip;
    size_t es = gaio__mt_size(n->a.fill_elem);
    TRY(fold_alloc(fn, g, n, out, (size_t)cnt * es, &skip));
    for (int64_t i = 0; !skip && i < cnt; i++) store_num(n->a.fill_elem, out->data, (size_t)i, n->a.fill_value);
    return GAIO_OK;
}

/* Range: start, limit and delta, constant scalars of one type; folds. */
static gaio_status infer_range(const char *fn, mgraph *g, mnode *n, shp *o, mvalue *out) {
    mvalue *v[3] = {in_v(g, n, 0), in_v(g, n, 1), in_v(g, n, 2)};
    static const char *const what[3] = {"start", "limit", "delta"};
    double x[3];
    for (int i = 0; i < 3; i++) {
        if (v[i]->elem != v[0]->elem) return FAIL(GAIO_ERR_INVALID_ARG, "start, limit and delta differ in type");
        if (numel(v[i]) != 1 || v[i]->ndim > 1) return FAIL(GAIO_ERR_INVALID_ARG, "%s '%s' is not a scalar", what[i], v[i]->name);
        if (!v[i]->data) return FAIL(GAIO_ERR_NOT_SUPPORTED, "%s '%s' is computed at run time", what[i], v[i]->name);
        TRY(const_ok(fn, n, v[i]));
        x[i] = load_num(v[i]->elem, v[i]->data, 0);
    }
    if (x[2] == 0) return FAIL(GAIO_ERR_INVALID_ARG, "delta is 0");
    double span = ceil((x[1] - x[0]) / x[2]);
    if (!(span >= 1)) return FAIL(GAIO_ERR_NOT_SUPPORTED, "the range is empty: gaio runs no empty tensors");
    if (span > DIM_LIMIT) return FAIL(GAIO_ERR_INVALID_ARG, "the range has too many elements");
    int64_t cnt = (int64_t)span;
    o->ndim = 0;
    shp_push(o, cnt, "");
    bool skip;
    int32_t e = v[0]->elem;
    TRY(fold_alloc(fn, g, n, out, (size_t)cnt * gaio__mt_size(e), &skip));
    int64_t s0 = 0, d0 = 0;
    if (is_int(e)) {
        TRY(get_ints(fn, n, v[0], 0, &s0));
        TRY(get_ints(fn, n, v[2], 0, &d0));
    }
    for (int64_t i = 0; !skip && i < cnt; i++) {
        if (!is_int(e)) {
            store_num(e, out->data, (size_t)i, x[0] + (double)i * x[2]);
            continue;
        }
        int64_t t, k; /* integers exactly: start + i * delta */
        if (__builtin_mul_overflow(i, d0, &t) || __builtin_add_overflow(s0, t, &k) ||
            (e == MT_I32 && (k < INT32_MIN || k > INT32_MAX)))
            return FAIL(GAIO_ERR_INVALID_ARG, "the range passes the limits of %s", gaio__mt_name(e));
        if (e == MT_I32) {
            int32_t k32 = (int32_t)k;
            memcpy((char *)out->data + (size_t)i * 4, &k32, 4);
        } else {
            memcpy((char *)out->data + (size_t)i * 8, &k, 8);
        }
    }
    return GAIO_OK;
}

/* Expand: the input broadcast with a constant shape (numpy's rules both ways). Folds
 * when the input is constant; else a broadcast view copied out at run time. */
static gaio_status infer_expand(const char *fn, mgraph *g, mnode *n, shp *o, mvalue *out) {
    mvalue *x = in_v(g, n, 0), *sv = in_v(g, n, 1);
    mvalue want = {0};
    int c = 0;
    TRY(const_ints(fn, n, sv, "shape", want.dims, &c));
    want.ndim = c, want.name = sv->name;
    for (int i = 0; i < c; i++) {
        want.dim_names[i] = "";
        if (want.dims[i] < 0) return FAIL(GAIO_ERR_INVALID_ARG, "shape has %lld", (long long)want.dims[i]);
        if (want.dims[i] == 0) return FAIL(GAIO_ERR_NOT_SUPPORTED, "dimension %d is 0: gaio runs no empty tensors", i);
    }
    TRY(broadcast(fn, n, x, x->ndim, &want, c, o));
    if (!x->data) return GAIO_OK;
    TRY(const_ok(fn, n, x));
    int64_t cnt = 1, xs[MAXD], m = 1;
    for (int d = 0; d < o->ndim; d++)
        if (o->d[d] < 0) return GAIO_OK; /* symbolic: not folded */
    TRY(fold_count(fn, n, o, &cnt));
    int off = o->ndim - x->ndim;
    for (int d = x->ndim - 1; d >= 0; d--) xs[d] = x->dims[d] == 1 ? 0 : m, m *= x->dims[d];
    size_t es = gaio__mt_size(x->elem);
    bool skip;
    TRY(fold_alloc(fn, g, n, out, (size_t)cnt * es, &skip));
    for (int64_t i = 0; !skip && i < cnt; i++) {
        int64_t rest = i, src = 0;
        for (int d = o->ndim - 1; d >= 0; d--) {
            int64_t k = rest % o->d[d];
            rest /= o->d[d];
            if (d >= off) src += k * xs[d - off];
        }
        memcpy((char *)out->data + (size_t)i * es, (const char *)x->data + (size_t)src * es, es);
    }
    return GAIO_OK;
}

/* Resize (opsets 10-19) and Upsample (7-9): the constant scales, sizes and roi read
 * here; the output shape and how the node runs in infer_resize.c. */
static gaio_status const_floats(const char *fn, const mnode *n, const mvalue *v, const char *what, float *vals, int cap,
                                int32_t *count) {
    if (!is_float(v->elem)) return FAIL(GAIO_ERR_INVALID_ARG, "%s '%s' is %s", what, v->name, gaio__mt_name(v->elem));
    if (!v->data) return FAIL(GAIO_ERR_NOT_SUPPORTED, "%s '%s' is computed at run time", what, v->name);
    TRY(const_ok(fn, n, v));
    if (numel(v) > cap) return FAIL(GAIO_ERR_INVALID_ARG, "%s has %lld values", what, (long long)numel(v));
    *count = (int32_t)numel(v);
    for (int32_t i = 0; i < *count; i++) vals[i] = (float)load_num(v->elem, v->data, (size_t)i);
    return GAIO_OK;
}

static gaio_status infer_resize(const char *fn, mgraph *g, mnode *n, shp *o) {
    mvalue *x = in_v(g, n, 0);
    mattrs *a = &n->a;
    TRY(need_float(fn, n, x));
    gaio__resize_inputs ri;
    memset(&ri, 0, sizeof ri);
    ri.nscales = ri.nsizes = ri.nroi = -1;
    mvalue *scv = NULL, *szv = NULL, *roiv = NULL;
    if (n->op == OP_UPSAMPLE && g->opset < 9) {
        ri.nscales = a->rs_nscales;
        for (int i = 0; i < ri.nscales; i++) ri.scales[i] = a->rs_scales[i];
    } else {
        bool old = n->op == OP_UPSAMPLE || g->opset < 11; /* X, scales */
        scv = in_v(g, n, old ? 1 : 2);
        szv = old ? NULL : in_v(g, n, 3);
        roiv = old ? NULL : in_v(g, n, 1);
    }
    /* An empty scales (or roi) stands for none (opset 11's required inputs). */
    if (scv && numel(scv) != 0) TRY(const_floats(fn, n, scv, "scales", ri.scales, MAXD, &ri.nscales));
    if (szv && numel(szv) != 0) {
        int c = 0;
        TRY(const_ints(fn, n, szv, "sizes", ri.sizes, &c));
        ri.nsizes = c;
    }
    if (roiv && numel(roiv) != 0 && a->rs_coord == 5) TRY(const_floats(fn, n, roiv, "roi", ri.roi, 2 * MAXD, &ri.nroi));
    int64_t dims[4];
    TRY(gaio__resize_infer(fn, g, n, x, &ri, dims));
    o->ndim = 0;
    for (int d = 0; d < 4; d++) shp_push(o, dims[d], dname(x, d));
    return GAIO_OK;
}

/* Tile: constant repeats per dimension (kept in slice_step); folds for a constant input. */
#define MAX_TILES 4096 /* copies a run makes: more is no model gaio expects */
static gaio_status infer_tile(const char *fn, mgraph *g, mnode *n, shp *o, mvalue *out) {
    mvalue *x = in_v(g, n, 0);
    int64_t rep[MAXD];
    int c = 0;
    TRY(const_ints(fn, n, in_v(g, n, 1), "repeats", rep, &c));
    if (c != x->ndim) return FAIL(GAIO_ERR_INVALID_ARG, "repeats has %d values for a rank-%d input", c, x->ndim);
    int64_t tiles = 1;
    o->ndim = 0;
    for (int d = 0; d < c; d++) {
        if (rep[d] < 1) return FAIL(GAIO_ERR_NOT_SUPPORTED, "repeats[%d] is %lld: gaio runs no empty tensors", d, (long long)rep[d]);
        if (rep[d] > 1 && x->dims[d] < 0)
            return FAIL(GAIO_ERR_NOT_SUPPORTED, "tiling symbolic dimension '%s' is not supported", dname(x, d));
        /* rep[d] first: tiles * rep[d] stays far from overflow */
        if (rep[d] > MAX_TILES || (tiles *= rep[d]) > MAX_TILES)
            return FAIL(GAIO_ERR_NOT_SUPPORTED, "over %d tiles", MAX_TILES);
        if (x->dims[d] > INT64_MAX / rep[d])
            return FAIL(GAIO_ERR_INVALID_ARG, "dimension %d (%lld) times %lld repeats overflows", d,
                        (long long)x->dims[d], (long long)rep[d]);
        n->a.slice_step[d] = rep[d];
        shp_push(o, x->dims[d] < 0 ? x->dims[d] : x->dims[d] * rep[d], dname(x, d));
    }
    if (!x->data) return GAIO_OK;
    TRY(const_ok(fn, n, x));
    int64_t cnt = 1;
    TRY(fold_count(fn, n, o, &cnt));
    size_t es = gaio__mt_size(x->elem);
    bool skip;
    TRY(fold_alloc(fn, g, n, out, (size_t)cnt * es, &skip));
    for (int64_t i = 0; !skip && i < cnt; i++) {
        int64_t rest = i, src = 0, m = 1;
        for (int d = o->ndim - 1; d >= 0; d--) {
            int64_t k = rest % o->d[d];
            rest /= o->d[d];
            src += (k % x->dims[d]) * m, m *= x->dims[d];
        }
        memcpy((char *)out->data + (size_t)i * es, (const char *)x->data + (size_t)src * es, es);
    }
    return GAIO_OK;
}

/* Equal, Less, Greater, Not, And, Or, Where: numpy broadcasting; they fold when every
 * input is constant (shape arithmetic), and are refused at build otherwise. */
static gaio_status infer_logic(const char *fn, mgraph *g, mnode *n, shp *o, mvalue *out, int32_t *elem) {
    mvalue *v[3] = {in_v(g, n, 0), n->nin > 1 ? in_v(g, n, 1) : NULL, n->nin > 2 ? in_v(g, n, 2) : NULL};
    bool cmp = n->op == OP_EQUAL || n->op == OP_LESS || n->op == OP_GREATER;
    if (n->op == OP_WHERE) {
        if (v[0]->elem != MT_BOOL) return FAIL(GAIO_ERR_INVALID_ARG, "condition '%s' is not bool", v[0]->name);
        TRY(same_elem(fn, n, v[1], v[2]));
        *elem = v[1]->elem;
    } else if (cmp) {
        TRY(same_elem(fn, n, v[0], v[1]));
        *elem = MT_BOOL;
    } else {
        for (int k = 0; k < n->nin; k++)
            if (v[k]->elem != MT_BOOL) return FAIL(GAIO_ERR_INVALID_ARG, "input '%s' is not bool", v[k]->name);
        *elem = MT_BOOL;
    }
    shp_of(v[0], o);
    for (int k = 1; k < n->nin; k++) { /* broadcast what has been, with input k */
        mvalue acc = {0};
        acc.ndim = o->ndim, acc.name = "";
        for (int d = 0; d < o->ndim; d++) acc.dims[d] = o->d[d], acc.dim_names[d] = o->nm[d];
        TRY(broadcast(fn, n, &acc, acc.ndim, v[k], v[k]->ndim, o));
    }
    int64_t cnt = 1, st[3][MAXD];
    for (int k = 0; k < n->nin; k++)
        if (!v[k]->data) return GAIO_OK;
    for (int d = 0; d < o->ndim; d++)
        if (o->d[d] < 0) return GAIO_OK;
    TRY(fold_count(fn, n, o, &cnt));
    for (int k = 0; k < n->nin; k++) {
        TRY(const_ok(fn, n, v[k]));
        int off = o->ndim - v[k]->ndim;
        int64_t m = 1;
        for (int d = o->ndim - 1; d >= 0; d--) {
            int64_t dim = d >= off ? v[k]->dims[d - off] : 1;
            st[k][d] = dim == 1 ? 0 : m;
            m *= dim;
        }
    }
    size_t es = gaio__mt_size(*elem);
    bool skip;
    TRY(fold_alloc(fn, g, n, out, (size_t)cnt * es, &skip));
    for (int64_t i = 0; !skip && i < cnt; i++) {
        int64_t rest = i, src[3] = {0, 0, 0};
        for (int d = o->ndim - 1; d >= 0; d--) {
            int64_t q = rest % o->d[d];
            rest /= o->d[d];
            for (int k = 0; k < n->nin; k++) src[k] += q * st[k][d];
        }
        char *dst = (char *)out->data + (size_t)i * es;
        if (n->op == OP_WHERE) {
            bool c = ((const uint8_t *)v[0]->data)[src[0]] != 0;
            memcpy(dst, (const char *)(c ? v[1] : v[2])->data + (size_t)(c ? src[1] : src[2]) * es, es);
            continue;
        }
        bool r;
        if (cmp) {
            /* int64 compared exactly; the rest as doubles (f16 and f32 are exact there) */
            if (v[0]->elem == MT_I64) {
                int64_t p, q;
                memcpy(&p, (const char *)v[0]->data + (size_t)src[0] * 8, 8);
                memcpy(&q, (const char *)v[1]->data + (size_t)src[1] * 8, 8);
                r = n->op == OP_EQUAL ? p == q : n->op == OP_LESS ? p < q : p > q;
            } else {
                double p = load_num(v[0]->elem, v[0]->data, (size_t)src[0]), q = load_num(v[1]->elem, v[1]->data, (size_t)src[1]);
                r = n->op == OP_EQUAL ? p == q : n->op == OP_LESS ? p < q : p > q;
            }
        } else {
            bool p = ((const uint8_t *)v[0]->data)[src[0]] != 0;
            bool q = n->nin > 1 && ((const uint8_t *)v[1]->data)[src[1]] != 0;
            r = n->op == OP_NOT ? !p : n->op == OP_AND ? p && q : p || q;
        }
        *(uint8_t *)dst = r;
    }
    return GAIO_OK;
}

/* Dropout runs as its input at inference; a training_mode input (opset 12) must say
 * so: a constant false. */
static gaio_status check_dropout(const char *fn, mgraph *g, mnode *n) {
    mvalue *t = in_v(g, n, 2);
    if (!t) return GAIO_OK;
    if (!t->data) return FAIL(GAIO_ERR_NOT_SUPPORTED, "training_mode '%s' is computed at run time", t->name);
    if (t->elem != 9 || numel(t) != 1 || t->bytes != 1) /* bool: one byte */
        return FAIL(GAIO_ERR_INVALID_ARG, "training_mode '%s' is not one bool", t->name);
    if (((const uint8_t *)t->data)[0])
        return FAIL(GAIO_ERR_NOT_SUPPORTED, "training_mode is true: gaio runs inference only");
    return GAIO_OK;
}

/* ---- shape operators (these fold) ---- */

static gaio_status infer_flatten(const char *fn, mgraph *g, mnode *n, shp *o) {
    mvalue *x = in_v(g, n, 0);
    int r = x->ndim;
    int64_t ax = n->a.axis;
    if (ax < -r || ax > r) return FAIL(GAIO_ERR_INVALID_ARG, "axis %lld is out of range for rank %d", (long long)ax, r);
    if (ax < 0) ax += r;
    n->a.axis = ax;
    o->ndim = 0;
    int lo[2] = {0, (int)ax}, hi[2] = {(int)ax, r};
    for (int s = 0; s < 2; s++) {
        int64_t p;
        int ns;
        const char *sym = "";
        if (!prod(x->dims, x->dim_names, lo[s], hi[s], &p, &ns, &sym))
            return FAIL(GAIO_ERR_INVALID_ARG, "input '%s' has too many elements", x->name);
        if (ns == 0) shp_push(o, p, "");
        else if (ns == 1 && p == 1) shp_push(o, -1, sym ? sym : "");
        else return FAIL(GAIO_ERR_NOT_SUPPORTED, "flattening a symbolic dimension with others is not supported");
    }
    return GAIO_OK;
}

static gaio_status infer_reshape(const char *fn, mgraph *g, mnode *n, shp *o) {
    mvalue *x = in_v(g, n, 0), *sv = in_v(g, n, 1);
    int64_t want[MAXD];
    int c;
    TRY(const_list(fn, n, sv, "shape", want, &c));
    int64_t in_fixed, out_fixed = 1;
    int nsym;
    if (!prod(x->dims, x->dim_names, 0, x->ndim, &in_fixed, &nsym, NULL))
        return FAIL(GAIO_ERR_INVALID_ARG, "input '%s' has too many elements", x->name);
    bool used[MAXD] = {false};
    int infer_at = -1;
    o->ndim = c;
    for (int i = 0; i < c; i++) {
        int64_t d = want[i];
        o->nm[i] = "";
        if (d == -1) {
            if (infer_at >= 0) return FAIL(GAIO_ERR_INVALID_ARG, "the shape has more than one -1");
            infer_at = i;
            continue;
        }
        if (d < -1) return FAIL(GAIO_ERR_INVALID_ARG, "the shape has %lld", (long long)d);
        if (d == 0 && n->a.allowzero) return FAIL(GAIO_ERR_NOT_SUPPORTED, "empty tensors (allowzero with a 0) are not supported");
        if (d == 0) {
            if (i >= x->ndim) return FAIL(GAIO_ERR_INVALID_ARG, "the shape's 0 at %d copies no input dimension", i);
            d = x->dims[i];
            if (d < 0) {
                used[i] = true;
                o->d[i] = -1, o->nm[i] = dname(x, i);
                continue;
            }
        }
        if (d && out_fixed > DIM_LIMIT / d) return FAIL(GAIO_ERR_INVALID_ARG, "the shape has too many elements");
        out_fixed *= d;
        o->d[i] = d;
    }
    int left = 0;
    const char *left_name = "";
    for (int i = 0; i < x->ndim; i++)
        if (x->dims[i] < 0 && !used[i]) left++, left_name = dname(x, i);
    if (infer_at < 0) {
        if (left) return FAIL(GAIO_ERR_NOT_SUPPORTED, "reshaping a symbolic dimension into fixed ones is not supported");
        if (in_fixed != out_fixed)
            return FAIL(GAIO_ERR_INVALID_ARG, "%lld elements cannot take a shape of %lld", (long long)in_fixed, (long long)out_fixed);
        return GAIO_OK;
    }
    if (out_fixed == 0 || in_fixed % out_fixed)
        return FAIL(GAIO_ERR_INVALID_ARG, "%lld elements do not divide into the shape's %lld", (long long)in_fixed, (long long)out_fixed);
    int64_t q = in_fixed / out_fixed;
    if (left == 0) o->d[infer_at] = q;
    else if (left == 1 && q == 1) o->d[infer_at] = -1, o->nm[infer_at] = left_name;
    else return FAIL(GAIO_ERR_NOT_SUPPORTED, "the -1 would mix a symbolic dimension with others");
    return GAIO_OK;
}

/* A constant transposed at load (Swin's pads: a [k, 2] table transposed, reversed and
 * flattened). */
static gaio_status fold_transpose(const char *fn, mgraph *g, const mnode *n, const mvalue *x, const shp *o, mvalue *out) {
    if (!x->data) return GAIO_OK;
    TRY(const_ok(fn, n, x));
    size_t es = gaio__mt_size(x->elem);
    int r = x->ndim;
    int64_t xs[MAXD], cnt = numel(x), m = 1;
    for (int d = r - 1; d >= 0; d--) xs[d] = m, m *= x->dims[d];
    bool skip;
    TRY(fold_alloc(fn, g, n, out, (size_t)cnt * es, &skip));
    if (skip) return GAIO_OK;
    for (int64_t i = 0; i < cnt; i++) {
        int64_t rest = i, src = 0;
        for (int d = r - 1; d >= 0; d--) {
            src += (rest % o->d[d]) * xs[n->a.perm[d]];
            rest /= o->d[d];
        }
        memcpy((char *)out->data + (size_t)i * es, (const char *)x->data + (size_t)src * es, es);
    }
    return GAIO_OK;
}

static gaio_status infer_transpose(const char *fn, mgraph *g, mnode *n, shp *o, mvalue *out) {
    mvalue *x = in_v(g, n, 0);
    mattrs *a = &n->a;
    int r = x->ndim;
    if (a->nperm == 0) {
        a->nperm = r;
        for (int i = 0; i < r; i++) a->perm[i] = r - 1 - i;
    }
    if (a->nperm != r) return FAIL(GAIO_ERR_INVALID_ARG, "perm has %d entries for rank %d", a->nperm, r);
    bool seen[MAXD] = {false};
    o->ndim = r;
    for (int i = 0; i < r; i++) {
        int64_t p = a->perm[i];
        if (p < 0 || p >= r || seen[p]) return FAIL(GAIO_ERR_INVALID_ARG, "perm is not a permutation of 0..%d", r - 1);
        seen[p] = true;
        o->d[i] = x->dims[p], o->nm[i] = dname(x, (int)p);
    }
    return fold_transpose(fn, g, n, x, o, out);
}

static gaio_status infer_concat(const char *fn, mgraph *g, mnode *n, shp *o, mvalue *out) {
    mvalue *x0 = in_v(g, n, 0);
    int r = x0->ndim;
    if (r < 1) return FAIL(GAIO_ERR_INVALID_ARG, "input '%s' is a scalar", x0->name);
    int64_t ax = 0;
    TRY(norm_axis(fn, n, n->a.axis, r, &ax));
    n->a.axis = ax;
    shp_of(x0, o);
    bool all_const = true;
    o->d[ax] = 0;
    for (int k = 0; k < n->nin; k++) {
        mvalue *x = in_v(g, n, k);
        TRY(same_elem(fn, n, x0, x));
        if (x->ndim != r) return FAIL(GAIO_ERR_INVALID_ARG, "inputs '%s' and '%s' differ in rank", x0->name, x->name);
        for (int i = 0; i < r; i++) {
            if (i == ax) continue;
            if (x->dims[i] == o->d[i] || x->dims[i] < 0) continue;
            if (o->d[i] >= 0)
                return FAIL(GAIO_ERR_INVALID_ARG, "inputs '%s' and '%s' differ at axis %d", x0->name, x->name, i);
            o->d[i] = x->dims[i], o->nm[i] = "";
        }
        if (x->dims[ax] < 0) return FAIL(GAIO_ERR_NOT_SUPPORTED, "concatenating along a symbolic dimension is not supported");
        o->d[ax] += x->dims[ax];
        if (o->d[ax] > DIM_LIMIT) return FAIL(GAIO_ERR_INVALID_ARG, "the output has too many elements");
        all_const = all_const && x->data;
    }
    if (!all_const) return GAIO_OK;
    /* Fold: each input contributes blocks of dims[ax] * inner elements per outer index. */
    size_t es = gaio__mt_size(x0->elem);
    int64_t outer = 1, inner = 1, total = 0;
    for (int i = 0; i < ax; i++) outer *= o->d[i];
    for (int i = (int)ax + 1; i < r; i++) inner *= o->d[i];
    for (int k = 0; k < n->nin; k++) {
        TRY(const_ok(fn, n, in_v(g, n, k)));
        total += (int64_t)in_v(g, n, k)->bytes;
    }
    bool skip;
    TRY(fold_alloc(fn, g, n, out, (size_t)total, &skip));
    if (skip) return GAIO_OK;
    char *dst = out->data;
    for (int64_t ot = 0; ot < outer; ot++)
        for (int k = 0; k < n->nin; k++) {
            mvalue *x = in_v(g, n, k);
            size_t blk = (size_t)(x->dims[ax] * inner) * es;
            memcpy(dst, (const char *)x->data + (size_t)ot * blk, blk);
            dst += blk;
        }
    return GAIO_OK;
}

static gaio_status infer_shape(const char *fn, mgraph *g, mnode *n, shp *o, mvalue *out) {
    mvalue *x = in_v(g, n, 0);
    int64_t r = x->ndim, s = n->a.axes[0], e = n->a.axes[1];
    if (s < 0) s += r;
    if (e < 0) e += r;
    s = s < 0 ? 0 : s > r ? r : s;
    e = e < 0 ? 0 : e > r ? r : e;
    if (e < s) e = s;
    n->a.axes[0] = s, n->a.axes[1] = e;
    o->ndim = 0;
    shp_push(o, e - s, "");
    for (int64_t i = s; i < e; i++)
        if (x->dims[i] < 0) return GAIO_OK; /* known at run time only */
    bool skip;
    TRY(fold_alloc(fn, g, n, out, (size_t)(e - s) * 8, &skip));
    if (!skip) memcpy(out->data, x->dims + s, (size_t)(e - s) * 8);
    return GAIO_OK;
}

/* Constant indices are checked at load against the axis's extent s (when known): an
 * index outside [-s, s) is an error in ONNX. (Indices computed at run time are clamped
 * by the kernels instead, which cannot report one: dnn.h.) */
static gaio_status const_indices(const char *fn, const mnode *n, const mvalue *ind, int64_t s) {
    if (!ind->data || s < 0) return GAIO_OK;
    TRY(const_ok(fn, n, ind));
    int64_t ni = numel(ind);
    for (int64_t j = 0; j < ni; j++) {
        int64_t k = 0;
        TRY(get_ints(fn, n, ind, j, &k));
        if (k < -s || k >= s)
            return FAIL(GAIO_ERR_INVALID_ARG, "index %lld (element %lld of '%s') is out of range [%lld, %lld)", (long long)k,
                        (long long)j, ind->name, (long long)-s, (long long)s);
    }
    return GAIO_OK;
}

static gaio_status infer_gather(const char *fn, mgraph *g, mnode *n, shp *o, mvalue *out) {
    mvalue *x = in_v(g, n, 0), *ind = in_v(g, n, 1);
    if (!is_int(ind->elem)) return FAIL(GAIO_ERR_INVALID_ARG, "the indices '%s' are %s", ind->name, gaio__mt_name(ind->elem));
    int r = x->ndim;
    if (r < 1) return FAIL(GAIO_ERR_INVALID_ARG, "input '%s' is a scalar", x->name);
    int64_t ax = 0;
    TRY(norm_axis(fn, n, n->a.axis, r, &ax));
    n->a.axis = ax;
    if (r - 1 + ind->ndim > MAXD) return FAIL(GAIO_ERR_NOT_SUPPORTED, "the output's rank is above gaio's %d", MAXD);
    o->ndim = 0;
    for (int i = 0; i < ax; i++) shp_push(o, x->dims[i], dname(x, i));
    for (int i = 0; i < ind->ndim; i++) shp_push(o, ind->dims[i], dname(ind, i));
    for (int i = (int)ax + 1; i < r; i++) shp_push(o, x->dims[i], dname(x, i));
    TRY(const_indices(fn, n, ind, x->dims[ax]));
    if (!x->data || !ind->data) return GAIO_OK;
    TRY(const_ok(fn, n, x));
    TRY(const_ok(fn, n, ind));
    size_t es = gaio__mt_size(x->elem);
    int64_t outer = 1, inner = 1, s = x->dims[ax], ni = numel(ind);
    for (int i = 0; i < ax; i++) outer *= x->dims[i];
    for (int i = (int)ax + 1; i < r; i++) inner *= x->dims[i];
    /* outer * ni * inner is the output's count: below DIM_LIMIT, checked by the caller
     * only after this; check it here before allocating. */
    int64_t cnt = 1;
    if (!prod(o->d, o->nm, 0, o->ndim, &cnt, &(int){0}, NULL))
        return FAIL(GAIO_ERR_INVALID_ARG, "the output has too many elements");
    bool skip;
    TRY(fold_alloc(fn, g, n, out, (size_t)cnt * es, &skip));
    if (skip) return GAIO_OK;
    size_t blk = (size_t)inner * es;
    char *dst = out->data;
    for (int64_t ot = 0; ot < outer; ot++)
        for (int64_t j = 0; j < ni; j++) {
            int64_t k = 0;
            TRY(get_ints(fn, n, ind, j, &k));
            if (k < -s || k >= s) return FAIL(GAIO_ERR_INVALID_ARG, "index %lld is out of range [%lld, %lld)", (long long)k, (long long)-s, (long long)s);
            if (k < 0) k += s;
            memcpy(dst, (const char *)x->data + ((size_t)ot * (size_t)s + (size_t)k) * blk, blk);
            dst += blk;
        }
    return GAIO_OK;
}

/* GatherElements (opset 11 on): the output has the indices' shape; along the other
 * axes the indices reach no further than the data. Folds for constant inputs. */
static gaio_status infer_gather_elements(const char *fn, mgraph *g, mnode *n, shp *o, mvalue *out) {
    mvalue *x = in_v(g, n, 0), *ind = in_v(g, n, 1);
    if (!is_int(ind->elem)) return FAIL(GAIO_ERR_INVALID_ARG, "the indices '%s' are %s", ind->name, gaio__mt_name(ind->elem));
    int r = x->ndim;
    if (r < 1) return FAIL(GAIO_ERR_INVALID_ARG, "input '%s' is a scalar", x->name);
    if (ind->ndim != r)
        return FAIL(GAIO_ERR_INVALID_ARG, "the indices '%s' have rank %d, the data '%s' %d: they must match", ind->name,
                    ind->ndim, x->name, r);
    int64_t ax = 0;
    TRY(norm_axis(fn, n, n->a.axis, r, &ax));
    n->a.axis = ax;
    for (int i = 0; i < r; i++)
        if (i != ax && ind->dims[i] >= 0 && x->dims[i] >= 0 && ind->dims[i] > x->dims[i])
            return FAIL(GAIO_ERR_INVALID_ARG, "the indices' dimension %d (%lld) is larger than the data's (%lld)", i,
                        (long long)ind->dims[i], (long long)x->dims[i]);
    shp_of(ind, o);
    TRY(const_indices(fn, n, ind, x->dims[ax]));
    if (!x->data || !ind->data) return GAIO_OK;
    TRY(const_ok(fn, n, x));
    int64_t cnt = numel(ind), xs[MAXD];
    if (cnt < 0) return GAIO_OK;
    int64_t m = 1;
    for (int d = r - 1; d >= 0; d--) xs[d] = m, m *= x->dims[d];
    size_t es = gaio__mt_size(x->elem);
    bool skip;
    TRY(fold_alloc(fn, g, n, out, (size_t)cnt * es, &skip));
    for (int64_t i = 0; !skip && i < cnt; i++) {
        int64_t rest = i, src = 0, k = 0;
        TRY(get_ints(fn, n, ind, i, &k));
        for (int d = r - 1; d >= 0; d--) {
            int64_t c = rest % ind->dims[d];
            rest /= ind->dims[d];
            src += (d == ax ? (k < 0 ? k + x->dims[d] : k) : c) * xs[d];
        }
        memcpy((char *)out->data + (size_t)i * es, (const char *)x->data + (size_t)src * es, es);
    }
    return GAIO_OK;
}

static gaio_status infer_unsqueeze(const char *fn, mgraph *g, mnode *n, shp *o) {
    mvalue *x = in_v(g, n, 0);
    int64_t axes[MAXD];
    int c = n->a.naxes; /* opsets up to 12: an attribute */
    for (int i = 0; i < c; i++) axes[i] = n->a.axes[i];
    if (in_v(g, n, 1)) TRY(const_list(fn, n, in_v(g, n, 1), "axes", axes, &c));
    int r = x->ndim + c;
    if (r > MAXD) return FAIL(GAIO_ERR_NOT_SUPPORTED, "the output's rank %d is above gaio's %d", r, MAXD);
    bool ins[MAXD] = {false};
    for (int i = 0; i < c; i++) {
        int64_t a = 0;
        TRY(norm_axis(fn, n, axes[i], r, &a));
        if (ins[a]) return FAIL(GAIO_ERR_INVALID_ARG, "axis %lld is given twice", (long long)axes[i]);
        ins[a] = true;
    }
    o->ndim = 0;
    for (int i = 0, j = 0; i < r; i++) {
        if (ins[i]) shp_push(o, 1, "");
        else shp_push(o, x->dims[j], dname(x, j)), j++;
    }
    return GAIO_OK;
}

static gaio_status infer_squeeze(const char *fn, mgraph *g, mnode *n, shp *o) {
    mvalue *x = in_v(g, n, 0), *av = in_v(g, n, 1);
    bool drop[MAXD] = {false};
    if (av || n->a.naxes) { /* the input, or opsets up to 12's attribute */
        int64_t axes[MAXD];
        int c = n->a.naxes;
        for (int i = 0; i < c; i++) axes[i] = n->a.axes[i];
        if (av) TRY(const_list(fn, n, av, "axes", axes, &c));
        for (int i = 0; i < c; i++) {
            int64_t a = 0;
            TRY(norm_axis(fn, n, axes[i], x->ndim, &a));
            if (drop[a]) return FAIL(GAIO_ERR_INVALID_ARG, "axis %lld is given twice", (long long)axes[i]);
            if (x->dims[a] < 0) return FAIL(GAIO_ERR_NOT_SUPPORTED, "squeezing a symbolic dimension is not supported");
            if (x->dims[a] != 1) return FAIL(GAIO_ERR_INVALID_ARG, "axis %lld has size %lld, not 1", (long long)axes[i], (long long)x->dims[a]);
            drop[a] = true;
        }
    } else {
        /* A symbolic dimension is kept: it is the batch, and a batch of 1 must not
         * change the graph's ranks. */
        for (int i = 0; i < x->ndim; i++) drop[i] = x->dims[i] == 1;
    }
    o->ndim = 0;
    for (int i = 0; i < x->ndim; i++)
        if (!drop[i]) shp_push(o, x->dims[i], dname(x, i));
    return GAIO_OK;
}

static double load_num(int32_t e, const void *p, size_t i) {
    switch (e) {
    case MT_F32: { float v; memcpy(&v, (const char *)p + i * 4, 4); return v; }
    case MT_F16: { uint16_t v; memcpy(&v, (const char *)p + i * 2, 2); return h2f(v); }
    case MT_I32: { int32_t v; memcpy(&v, (const char *)p + i * 4, 4); return v; }
    case MT_BOOL: return ((const uint8_t *)p)[i] != 0;
    default: { int64_t v; memcpy(&v, (const char *)p + i * 8, 8); return (double)v; }
    }
}

static gaio_status fold_cast(const char *fn, mgraph *g, const mnode *n, const mvalue *x, mvalue *o) {
    TRY(const_ok(fn, n, x));
    size_t cnt = x->bytes / gaio__mt_size(x->elem), es = gaio__mt_size(o->elem);
    bool skip;
    TRY(fold_alloc(fn, g, n, o, cnt * es, &skip));
    if (skip) return GAIO_OK;
    for (size_t i = 0; i < cnt; i++) {
        char *d = (char *)o->data + i * es;
        if (x->elem == MT_I64 && o->elem == MT_I64) { memcpy(d, (const char *)x->data + i * 8, 8); continue; }
        double v = load_num(x->elem, x->data, i);
        if (o->elem == MT_F32) { float f = (float)v; memcpy(d, &f, 4); }
        else if (o->elem == MT_BOOL) *d = v != 0; /* NaN too, as numpy's astype(bool) */
        else if (o->elem == MT_F16) { uint16_t h = f2h((float)v); memcpy(d, &h, 2); }
        else {
            /* Out of range is undefined in ONNX and in C: refuse rather than guess. */
            double lim = o->elem == MT_I32 ? 2147483648.0 : 9223372036854775808.0;
            if (!(v > -lim - 1 && v < lim)) return FAIL(GAIO_ERR_INVALID_ARG, "the cast of %g to %s is out of range", v, gaio__mt_name(o->elem));
            if (o->elem == MT_I32) { int32_t k = (int32_t)v; memcpy(d, &k, 4); }
            else { int64_t k = (int64_t)v; memcpy(d, &k, 8); }
        }
    }
    return GAIO_OK;
}

/* Exact float functions of a small constant (Sqrt, Reciprocal, Neg, Abs), folded:
 * torch.onnx writes attention's scale as Sqrt of a Cast of the head size, then its
 * Sqrt again and a Div (ViT, Swin); folded, the Muls by it are Muls by a constant,
 * which the planner moves into the GEMM's alpha. Computed in double and rounded once:
 * each is correctly rounded, as the float function at run time is. */
static bool folds_unary(model_op op) { return op == OP_SQRT || op == OP_RECIPROCAL || op == OP_NEG || op == OP_ABS; }

static gaio_status fold_unary(const char *fn, mgraph *g, const mnode *n, const mvalue *x, mvalue *o) {
    if (x->elem != MT_F32 && x->elem != MT_F16) return GAIO_OK;
    TRY(const_ok(fn, n, x));
    size_t es = gaio__mt_size(x->elem), cnt = x->bytes / es;
    if (cnt > ((size_t)1 << 16)) return GAIO_OK; /* a tensor, not a scale: it runs */
    bool skip;
    TRY(fold_alloc(fn, g, n, o, cnt * es, &skip));
    if (skip) return GAIO_OK;
    for (size_t i = 0; i < cnt; i++) {
        double v = load_num(x->elem, x->data, i);
        double r = n->op == OP_SQRT ? sqrt(v) : n->op == OP_RECIPROCAL ? 1.0 / v : n->op == OP_NEG ? -v : fabs(v);
        char *d = (char *)o->data + i * es;
        if (x->elem == MT_F32) { float f = (float)r; memcpy(d, &f, 4); }
        else { uint16_t h = f2h((float)r); memcpy(d, &h, 2); }
    }
    return GAIO_OK;
}

/* ---- the entry ---- */

static gaio_status check_inputs(const char *fn, mgraph *g, const mnode *n) {
    for (int k = 0; k < n->nin; k++) {
        const mvalue *v = in_v(g, n, k);
        if (!v) continue;
        if (v->ndim < 0 || !gaio__mt_size(v->elem)) {
            if (v->ndim >= 0 && v->elem != MT_UNDEFINED)
                return FAIL(GAIO_ERR_NOT_SUPPORTED, "input '%s' is %s, which gaio does not handle", v->name, gaio__mt_name(v->elem));
            return FAIL(GAIO_ERR_INVALID_ARG, "input '%s' has no known type or shape", v->name);
        }
        if (v->ndim > MAXD) return FAIL(GAIO_ERR_NOT_SUPPORTED, "input '%s' has rank %d, above gaio's %d", v->name, v->ndim, MAXD);
        int64_t p;
        int ns;
        for (int i = 0; i < v->ndim; i++)
            if (v->dims[i] < -1) return FAIL(GAIO_ERR_INVALID_ARG, "input '%s' has dimension %lld", v->name, (long long)v->dims[i]);
        if (!prod(v->dims, v->dim_names, 0, v->ndim, &p, &ns, NULL))
            return FAIL(GAIO_ERR_INVALID_ARG, "input '%s' has too many elements", v->name);
    }
    return GAIO_OK;
}

gaio_status gaio__op_infer(const char *fn, mgraph *g, mnode *n) {
    TRY(check_inputs(fn, g, n));
    if (gaio__arith_folds(g, n)) return gaio__infer_arith(fn, g, n);
    if (n->op == OP_EINSUM) return gaio__infer_einsum(fn, g, n);
    if (n->op == OP_SCATTER_ND) return gaio__infer_scatter_nd(fn, g, n);
    mvalue *out = &g->values[n->out[0]];
    mvalue *x = n->nin ? in_v(g, n, 0) : NULL;
    shp o = {0};
    int32_t elem = x ? x->elem : MT_UNDEFINED;
    bool fold_same = false; /* the output holds the input's elements, reshaped */
    switch (n->op) {
    case OP_CONV: TRY(infer_conv(fn, g, n, &o)); break;
    case OP_CONV_TRANSPOSE: {
        int64_t d[4];
        const char *batch = "";
        TRY(gaio__infer_conv_transpose(fn, g, n, d, &batch));
        o.ndim = 0;
        shp_push(&o, d[0], batch);
        for (int i = 1; i < 4; i++) shp_push(&o, d[i], "");
        break;
    }
    case OP_MAX_POOL:
    case OP_AVG_POOL:
    case OP_GLOBAL_AVG_POOL: TRY(infer_pool(fn, g, n, &o)); break;
    case OP_GEMM: TRY(infer_gemm(fn, g, n, &o)); break;
    case OP_MATMUL: TRY(infer_matmul(fn, g, n, &o)); break;
    case OP_BATCH_NORM: TRY(infer_bn(fn, g, n, &o)); break;
    case OP_RELU:
    case OP_CLIP:
    case OP_SIGMOID:
    case OP_HARD_SIGMOID:
    case OP_HARD_SWISH:
    case OP_SQRT:
    case OP_EXP:
    case OP_LOG:
    case OP_TANH:
    case OP_ABS:
    case OP_NEG:
    case OP_RECIPROCAL:
    case OP_FLOOR:
    case OP_CEIL:
    case OP_ERF:
    case OP_SOFTPLUS:
    case OP_GELU:
    case OP_SIN:
    case OP_COS:
    case OP_SOFTMAX:
    case OP_LOG_SOFTMAX: TRY(infer_unary(fn, g, n, &o)); break;
    case OP_ADD:
    case OP_SUB:
    case OP_MUL:
    case OP_DIV:
    case OP_POW:
    case OP_MOD: TRY(infer_binary(fn, g, n, &o)); break;
    case OP_MIN:
    case OP_MAX:
    case OP_SUM:
    case OP_MEAN: TRY(infer_variadic(fn, g, n, &o)); break;
    case OP_FLATTEN: TRY(infer_flatten(fn, g, n, &o)); fold_same = true; break;
    case OP_RESHAPE: TRY(infer_reshape(fn, g, n, &o)); fold_same = true; break;
    case OP_TRANSPOSE: TRY(infer_transpose(fn, g, n, &o, out)); break;
    case OP_CONCAT: TRY(infer_concat(fn, g, n, &o, out)); break;
    case OP_IDENTITY: shp_of(x, &o); fold_same = true; break;
    case OP_DROPOUT: TRY(check_dropout(fn, g, n)); shp_of(x, &o); fold_same = true; break;
    case OP_CONSTANT:
        /* The loader put the value in the output. */
        if (!out->data || out->ndim < 0 || !gaio__mt_size(out->elem))
            return FAIL(GAIO_ERR_INVALID_ARG, "the constant '%s' has no value", out->name);
        return GAIO_OK;
    case OP_SHAPE: elem = MT_I64; TRY(infer_shape(fn, g, n, &o, out)); break;
    case OP_GATHER: TRY(infer_gather(fn, g, n, &o, out)); break;
    case OP_GATHER_ELEMENTS: TRY(infer_gather_elements(fn, g, n, &o, out)); break;
    case OP_UNSQUEEZE: TRY(infer_unsqueeze(fn, g, n, &o)); fold_same = true; break;
    case OP_REDUCE_MEAN:
    case OP_REDUCE_MAX:
    case OP_REDUCE_MIN:
    case OP_REDUCE_SUM:
    case OP_REDUCE_PROD:
    case OP_REDUCE_L1:
    case OP_REDUCE_L2:
    case OP_REDUCE_SUM_SQUARE:
    case OP_REDUCE_LOG_SUM:
    case OP_REDUCE_LOG_SUM_EXP:
    case OP_ARGMAX:
    case OP_ARGMIN:
    case OP_TOPK: TRY(gaio__infer_reduce(fn, g, n)); shp_of(out, &o); elem = out->elem; break;
    case OP_SQUEEZE: TRY(infer_squeeze(fn, g, n, &o)); fold_same = true; break;
    case OP_CAST:
        if (n->a.to == MT_BOOL && !x->data) /* bool is a byte that only comparisons write at run time */
            return FAIL(GAIO_ERR_NOT_SUPPORTED, "input '%s' is computed at run time: gaio casts to bool only the "
                        "constants it folds", x->name);
        elem = n->a.to;
        shp_of(x, &o);
        break;
    case OP_SLICE: TRY(infer_slice(fn, g, n, &o, out)); break;
    case OP_PAD: TRY(infer_pad(fn, g, n, &o)); break;
    case OP_SPLIT: TRY(infer_split(fn, g, n, &o)); break;
    case OP_CONSTANT_OF_SHAPE: elem = n->a.fill_elem; TRY(infer_constant_of_shape(fn, g, n, &o, out)); break;
    case OP_RANGE: TRY(infer_range(fn, g, n, &o, out)); break;
    case OP_EXPAND: TRY(infer_expand(fn, g, n, &o, out)); break;
    case OP_RESIZE:
    case OP_UPSAMPLE: TRY(infer_resize(fn, g, n, &o)); break;
    case OP_TILE: TRY(infer_tile(fn, g, n, &o, out)); break;
    case OP_LAYER_NORM:
    case OP_GROUP_NORM:
    case OP_INSTANCE_NORM: TRY(gaio__infer_norm(fn, g, n)); shp_of(x, &o); break;
    case OP_EQUAL:
    case OP_LESS:
    case OP_GREATER:
    case OP_NOT:
    case OP_AND:
    case OP_OR:
    case OP_WHERE: TRY(infer_logic(fn, g, n, &o, out, &elem)); break;
    default: return FAIL(GAIO_ERR_NOT_SUPPORTED, "no shape inference for this operator");
    }
    int64_t p;
    int ns;
    if (!prod(o.d, o.nm, 0, o.ndim, &p, &ns, NULL)) return FAIL(GAIO_ERR_INVALID_ARG, "the output has too many elements");
    out->elem = elem;
    out->ndim = o.ndim;
    for (int i = 0; i < o.ndim; i++) out->dims[i] = o.d[i], out->dim_names[i] = o.d[i] < 0 && o.nm[i] ? o.nm[i] : "";
    if (fold_same) TRY(fold_copy(fn, g, n, x, out));
    if (n->op == OP_CAST && x->data) TRY(fold_cast(fn, g, n, x, out));
    if (folds_unary(n->op) && x->data && x->elem == out->elem) TRY(fold_unary(fn, g, n, x, out));
    return GAIO_OK;
}
