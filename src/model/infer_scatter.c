/* ScatterND on constants, folded at load or build (infer_scatter.h).
 *
 * Exporters write ScatterND for a slice assignment on a tensor built from shapes:
 * Swin's shifted-window mask (img_mask[:, h, w, :] = cnt on zeros of the padded size).
 * Once the shapes are known (mgraph.deferred models at build) every input is a
 * constant, and the assignment folds here; gaio runs no ScatterND at run time. ONNX's
 * rules: the output is data with, for each index tuple (indices' last dimension k <=
 * data's rank), the slice data[tuple] replaced by (reduction "none") or combined with
 * (add, mul, max, min) the matching slice of updates; negative indices count from the
 * end. With reduction none ONNX leaves duplicate tuples undefined: the last one wins,
 * as onnxruntime does. */
#include <stdint.h>
#include <string.h>

#include "core/half.h"
#include "model/infer_scatter.h"
#include "model/ops_internal.h"

#define MAXD GAIO_MODEL_MAX_NDIM
#define SCATTER_MAX_BYTES ((size_t)64 << 20) /* a mask, not a tensor */

static mvalue *in_v(mgraph *g, const mnode *n, int i) { return i < n->nin && n->in[i] >= 0 ? &g->values[n->in[i]] : NULL; }

static int64_t count(const mvalue *v, int from, int to) {
    int64_t c = 1;
    for (int i = from; i < to; i++) c *= v->dims[i];
    return c;
}

static double load(int32_t e, const void *p, int64_t i) {
    switch (e) {
    case MT_F32: { float f; memcpy(&f, (const char *)p + i * 4, 4); return f; }
    case MT_F16: { uint16_t h; memcpy(&h, (const char *)p + i * 2, 2); return h2f(h); }
    case MT_I32: { int32_t k; memcpy(&k, (const char *)p + i * 4, 4); return k; }
    default: { int64_t k; memcpy(&k, (const char *)p + i * 8, 8); return (double)k; }
    }
}

static void store(int32_t e, void *p, int64_t i, double v) {
    switch (e) {
    case MT_F32: { float f = (float)v; memcpy((char *)p + i * 4, &f, 4); break; }
    case MT_F16: { uint16_t h = f2h((float)v); memcpy((char *)p + i * 2, &h, 2); break; }
    case MT_I32: { int32_t k = (int32_t)v; memcpy((char *)p + i * 4, &k, 4); break; }
    default: { int64_t k = (int64_t)v; memcpy((char *)p + i * 8, &k, 8); break; }
    }
}

gaio_status gaio__infer_scatter_nd(const char *fn, mgraph *g, mnode *n) {
    mvalue *x = in_v(g, n, 0), *ind = in_v(g, n, 1), *upd = in_v(g, n, 2), *out = &g->values[n->out[0]];
    if (ind->elem != MT_I64)
        return FAIL(GAIO_ERR_INVALID_ARG, "the indices '%s' are %s; they must be int64", ind->name, gaio__mt_name(ind->elem));
    if (upd->elem != x->elem)
        return FAIL(GAIO_ERR_INVALID_ARG, "updates '%s' are %s, data '%s' %s", upd->name, gaio__mt_name(upd->elem),
                    x->name, gaio__mt_name(x->elem));
    int r = x->ndim, q = ind->ndim;
    if (r < 1 || q < 1) return FAIL(GAIO_ERR_INVALID_ARG, "data and indices must have rank 1 at least");
    int64_t k = ind->dims[q - 1];
    if (k < 1 || k > r) return FAIL(GAIO_ERR_INVALID_ARG, "index tuples of %lld entries into rank-%d data", (long long)k, r);
    /* updates: indices' shape without its last dimension, then data's after the first k */
    bool shape_ok = upd->ndim == q - 1 + r - (int)k;
    for (int i = 0; shape_ok && i < upd->ndim; i++)
        shape_ok = upd->dims[i] == (i < q - 1 ? ind->dims[i] : x->dims[i - (q - 1) + k]) || upd->dims[i] < 0;
    if (!shape_ok) return FAIL(GAIO_ERR_INVALID_ARG, "updates '%s' do not have the shape indices and data give", upd->name);
    out->elem = x->elem, out->ndim = r;
    for (int i = 0; i < r; i++) out->dims[i] = x->dims[i], out->dim_names[i] = x->dim_names[i];
    const mvalue *need[3] = {x, ind, upd};
    for (int i = 0; i < 3; i++)
        if (!need[i]->data)
            return FAIL(GAIO_ERR_NOT_SUPPORTED, "input '%s' is computed at run time: gaio folds ScatterND on constants "
                        "only (a mask built from shapes), and runs none at run time", need[i]->name);
    size_t es = gaio__mt_size(x->elem);
    int64_t total = count(x, 0, r), tuples = count(ind, 0, q - 1), slice = count(x, (int)k, r);
    if ((size_t)total * es != x->bytes || (size_t)(tuples * k) * 8 != ind->bytes ||
        (size_t)(tuples * slice) * es != upd->bytes)
        return FAIL(GAIO_ERR_INVALID_ARG, "a constant input holds other than its shape's bytes");
    if (x->bytes > SCATTER_MAX_BYTES)
        return FAIL(GAIO_ERR_NOT_SUPPORTED, "data of %zu bytes: gaio folds ScatterND up to %zu", x->bytes, SCATTER_MAX_BYTES);
    out->data = gaio__bump_alloc(&g->bump, x->bytes ? x->bytes : 1);
    if (!out->data) return FAIL(GAIO_ERR_NO_MEMORY, "out of memory folding %zu bytes", x->bytes);
    out->bytes = x->bytes;
    memcpy(out->data, x->data, x->bytes);
    for (int64_t t = 0; t < tuples; t++) {
        int64_t at = 0;
        for (int64_t j = 0; j < k; j++) {
            int64_t v;
            memcpy(&v, (const char *)ind->data + (size_t)(t * k + j) * 8, 8);
            int64_t d = x->dims[j];
            if (v < -d || v >= d)
                return FAIL(GAIO_ERR_INVALID_ARG, "index %lld (tuple %lld) is out of range [%lld, %lld)", (long long)v,
                            (long long)t, (long long)-d, (long long)d);
            at = at * d + (v < 0 ? v + d : v);
        }
        at *= slice;
        for (int64_t i = 0; i < slice; i++) {
            double u = load(upd->elem, upd->data, t * slice + i), o = load(out->elem, out->data, at + i);
            double v = n->a.scatter_reduction == 1 ? o + u : n->a.scatter_reduction == 2 ? o * u
                       : n->a.scatter_reduction == 3 ? (o > u ? o : u) : n->a.scatter_reduction == 4 ? (o < u ? o : u) : u;
            if (n->a.scatter_reduction == 0) {
                memcpy((char *)out->data + (size_t)(at + i) * es, (const char *)upd->data + (size_t)(t * slice + i) * es, es);
                continue;
            }
            store(out->elem, out->data, at + i, v);
        }
    }
    return GAIO_OK;
}
