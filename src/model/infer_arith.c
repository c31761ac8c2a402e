/* Integer arithmetic, and float arithmetic of small constants, folded at load or
 * build (infer_arith.h).
 *
 * gaio computes no integers at run time, but exporters write integer arithmetic on
 * shapes: ShuffleNet's channels // groups, a detector's h * w anchors, Swin's
 * padding (-w) % window. Once the shapes are known (at load, or at build for a model
 * whose shapes wait for it: mgraph.deferred) those inputs are constants and fold here,
 * with ONNX's rules: Div truncates toward zero (its reference casts numpy's quotient),
 * Mod takes the divisor's sign unless fmod, which takes the dividend's. Overflow and division by zero are errors, not wrapped values. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/half.h"
#include "model/infer_arith.h"
#include "model/ops_internal.h"

#define MAXD GAIO_MODEL_MAX_NDIM
/* Folded outputs stay small: these are shapes, not tensors. */
#define ARITH_MAX_ELEMS ((int64_t)1 << 20)

static bool is_int(int32_t e) { return e == MT_I32 || e == MT_I64; }
static mvalue *in_v(mgraph *g, const mnode *n, int i) { return i < n->nin && n->in[i] >= 0 ? &g->values[n->in[i]] : NULL; }

static int64_t count(const mvalue *v) {
    int64_t c = 1;
    for (int i = 0; i < v->ndim; i++) c *= v->dims[i];
    return c;
}

bool gaio__arith_folds(const mgraph *g, const mnode *n) {
    if (n->op != OP_ADD && n->op != OP_SUB && n->op != OP_MUL && n->op != OP_DIV && n->op != OP_MOD &&
        n->op != OP_POW)
        return false;
    if (n->nin < 2 || n->in[0] < 0 || n->in[1] < 0) return false;
    const mvalue *a = &g->values[n->in[0]], *b = &g->values[n->in[1]];
    /* Pow of float constants of one type only (Swin's scale, head size ** -0.5: folded,
     * the Mul by it moves into attention's alpha); its other forms run. */
    if (n->op == OP_POW && (a->elem != b->elem || (a->elem != MT_F32 && a->elem != MT_F16))) return false;
    if (is_int(a->elem) || is_int(b->elem)) return true;
    /* Floats of small constants fold too (Swin's mask arithmetic, known at build); the
     * rest run. */
    if (!a->data || !b->data || a->ndim < 0 || b->ndim < 0) return false;
    int r = a->ndim > b->ndim ? a->ndim : b->ndim;
    int64_t out = 1;
    for (int d = 0; d < r; d++) { /* the broadcast output's count */
        int da = d - (r - a->ndim), db = d - (r - b->ndim);
        int64_t x = da >= 0 ? a->dims[da] : 1, y = db >= 0 ? b->dims[db] : 1;
        if (x < 0 || y < 0 || __builtin_mul_overflow(out, x > y ? x : y, &out)) return false;
    }
    return out <= ARITH_MAX_ELEMS;
}

static bool float_op(model_op op, double a, double b, double *r) {
    switch (op) {
    case OP_ADD: return *r = a + b, true;
    case OP_SUB: return *r = a - b, true;
    case OP_MUL: return *r = a * b, true;
    case OP_DIV: return *r = a / b, true;
    case OP_POW: return *r = pow(a, b), true;
    default: return *r = fmod(a, b), true; /* fmod 1: inference refuses 0 for floats */
    }
}

static bool int_op(model_op op, int64_t fmod_, int64_t a, int64_t b, int64_t *r) {
    switch (op) {
    case OP_ADD: return !__builtin_add_overflow(a, b, r);
    case OP_SUB: return !__builtin_sub_overflow(a, b, r);
    case OP_MUL: return !__builtin_mul_overflow(a, b, r);
    case OP_DIV:
        if (b == 0 || (a == INT64_MIN && b == -1)) return false;
        return *r = a / b, true;
    default: /* Mod */
        if (b == 0) return false;
        if (a == INT64_MIN && b == -1) return *r = 0, true;
        *r = a % b;
        if (!fmod_ && *r != 0 && ((*r < 0) != (b < 0))) *r += b;
        return true;
    }
}

static int64_t get_int(const mvalue *v, int64_t i) {
    if (v->elem == MT_I32) {
        int32_t k;
        memcpy(&k, (const char *)v->data + i * 4, 4);
        return k;
    }
    int64_t k;
    memcpy(&k, (const char *)v->data + i * 8, 8);
    return k;
}

static double get_float(const mvalue *v, int64_t i) {
    if (v->elem == MT_F16) {
        uint16_t h;
        memcpy(&h, (const char *)v->data + i * 2, 2);
        return h2f(h);
    }
    float f;
    memcpy(&f, (const char *)v->data + i * 4, 4);
    return f;
}

/* The element of v (broadcast to out's shape) at out's row-major index i. */
static int64_t source_index(const mvalue *v, const mvalue *out, int64_t i) {
    int64_t src = 0, stride = 1;
    for (int d = out->ndim - 1, dv = v->ndim - 1; d >= 0; d--, dv--) {
        int64_t k = i % out->dims[d];
        i /= out->dims[d];
        if (dv < 0) continue;
        if (v->dims[dv] != 1) src += k * stride;
        stride *= v->dims[dv];
    }
    return src;
}

gaio_status gaio__infer_arith(const char *fn, mgraph *g, mnode *n) {
    mvalue *a = in_v(g, n, 0), *b = in_v(g, n, 1), *out = &g->values[n->out[0]];
    if (a->elem != b->elem)
        return FAIL(GAIO_ERR_INVALID_ARG, "inputs '%s' and '%s' differ in type (%s, %s)", a->name, b->name,
                    gaio__mt_name(a->elem), gaio__mt_name(b->elem));
    bool ints = is_int(a->elem);
    if (!ints && n->op == OP_MOD && !n->a.fmod)
        return FAIL(GAIO_ERR_INVALID_ARG, "fmod 0 on %s inputs (ONNX requires fmod 1 for floats)", gaio__mt_name(a->elem));
    for (int k = 0; k < 2; k++) {
        const mvalue *v = k ? b : a;
        if (!v->data)
            return FAIL(GAIO_ERR_NOT_SUPPORTED, "input '%s' is computed at run time: gaio folds integer %s on "
                        "shapes and constants only (it runs no integer arithmetic)", v->name, n->op_type);
        int64_t c = count(v);
        if (c < 1 || (size_t)c * gaio__mt_size(v->elem) != v->bytes)
            return FAIL(GAIO_ERR_INVALID_ARG, "constant '%s' holds %zu bytes, not its shape's", v->name, v->bytes);
    }
    int r = a->ndim > b->ndim ? a->ndim : b->ndim;
    out->ndim = r, out->elem = a->elem;
    for (int d = 0; d < r; d++) {
        int da = d - (r - a->ndim), db = d - (r - b->ndim);
        int64_t x = da >= 0 ? a->dims[da] : 1, y = db >= 0 ? b->dims[db] : 1;
        if (x != y && x != 1 && y != 1)
            return FAIL(GAIO_ERR_INVALID_ARG, "inputs '%s' and '%s' do not broadcast (%lld and %lld at axis %d)",
                        a->name, b->name, (long long)x, (long long)y, d);
        out->dims[d] = x == 1 ? y : x, out->dim_names[d] = "";
    }
    int64_t cnt = 1;
    for (int d = 0; d < r; d++)
        if (__builtin_mul_overflow(cnt, out->dims[d], &cnt)) cnt = INT64_MAX;
    if (cnt > ARITH_MAX_ELEMS)
        return FAIL(GAIO_ERR_NOT_SUPPORTED, "%lld elements: gaio folds %s on shapes, up to %lld elements",
                    (long long)cnt, n->op_type, (long long)ARITH_MAX_ELEMS);
    size_t es = gaio__mt_size(out->elem);
    out->data = gaio__bump_alloc(&g->bump, (size_t)cnt * es);
    if (!out->data) return FAIL(GAIO_ERR_NO_MEMORY, "out of memory folding %lld elements", (long long)cnt);
    out->bytes = (size_t)cnt * es;
    for (int64_t i = 0; i < cnt; i++) {
        int64_t ia = source_index(a, out, i), ib = source_index(b, out, i);
        if (!ints) { /* in double, then rounded once to f32 (the f32 op's result) and to f16 after */
            double v;
            float_op(n->op, get_float(a, ia), get_float(b, ib), &v);
            float f = (float)v;
            if (out->elem == MT_F16) {
                uint16_t h = f2h(f);
                memcpy((char *)out->data + i * 2, &h, 2);
            } else {
                memcpy((char *)out->data + i * 4, &f, 4);
            }
            continue;
        }
        int64_t x = get_int(a, ia), y = get_int(b, ib), z;
        if (!int_op(n->op, n->a.fmod, x, y, &z) || (out->elem == MT_I32 && (z < INT32_MIN || z > INT32_MAX)))
            return FAIL(GAIO_ERR_INVALID_ARG, "%lld %s %lld (element %lld) %s", (long long)x,
                        n->op == OP_ADD ? "+" : n->op == OP_SUB ? "-" : n->op == OP_MUL ? "*" : n->op == OP_DIV ? "/" : "mod",
                        (long long)y, (long long)i, y == 0 && (n->op == OP_DIV || n->op == OP_MOD) ?
                        "divides by zero" : "overflows");
        if (out->elem == MT_I32) {
            int32_t z32 = (int32_t)z;
            memcpy((char *)out->data + i * 4, &z32, 4);
        } else {
            memcpy((char *)out->data + i * 8, &z, 8);
        }
    }
    return GAIO_OK;
}
