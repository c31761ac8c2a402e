/* Shape inference of the normalizations (norm_ops.h). What gaio_norm cannot take is
 * refused here, at load, with the node named: more than 5 dimensions, a symbolic
 * channel count, a Scale broadcast over a symbolic dimension. */
#include <string.h>

#include "model/norm_ops.h"
#include "model/ops_internal.h"


static const mvalue *input(const mgraph *g, const mnode *n, int i) {
    return i < n->nin && n->in[i] >= 0 ? &g->values[n->in[i]] : NULL;
}

static gaio_status same_type(const char *fn, const mnode *n, const mvalue *x, const mvalue *p) {
    if (p->elem == x->elem) return GAIO_OK;
    return FAIL(GAIO_ERR_INVALID_ARG, "input '%s' is %s but X '%s' is %s: ONNX gives them one type", p->name,
                gaio__mt_name(p->elem), x->name, gaio__mt_name(x->elem));
}

/* LayerNormalization's Scale or B: aligned with X's last dimensions, each X's or 1,
 * and 1 before axis (ONNX: the normalized shape, which it broadcasts as Mul and Add
 * would). */
static gaio_status layer_param(const char *fn, const mnode *n, const mvalue *x, const mvalue *p, int64_t axis) {
    TRY(same_type(fn, n, x, p));
    bool ok = p->ndim <= x->ndim;
    for (int j = 0; ok && j < p->ndim; j++) {
        int d = x->ndim - p->ndim + j;
        if (p->dims[j] == 1) continue;
        if (d >= axis && x->dims[d] < 0 && p->dims[j] >= 0)
            return FAIL(GAIO_ERR_NOT_SUPPORTED, "input '%s' spans X's symbolic dimension %d", p->name, d);
        ok = d >= axis && p->dims[j] == x->dims[d];
    }
    if (!ok)
        return FAIL(GAIO_ERR_INVALID_ARG, "input '%s' (rank %d) does not broadcast over X's dimensions %lld.. (rank %d)",
                    p->name, p->ndim, (long long)axis, x->ndim);
    return GAIO_OK;
}

/* GroupNormalization's and InstanceNormalization's scale and bias: 1-D of len. */
static gaio_status channel_param(const char *fn, const mnode *n, const mvalue *x, const mvalue *p, int64_t len,
                                 const char *what) {
    TRY(same_type(fn, n, x, p));
    if (p->ndim != 1 || p->dims[0] != len)
        return FAIL(GAIO_ERR_INVALID_ARG, "input '%s' must have shape [%lld] (%s)", p->name, (long long)len, what);
    return GAIO_OK;
}

gaio_status gaio__infer_norm(const char *fn, mgraph *g, mnode *n) {
    const mvalue *x = input(g, n, 0);
    mattrs *a = &n->a;
    if (x->elem != MT_F32 && x->elem != MT_F16)
        return FAIL(GAIO_ERR_NOT_SUPPORTED, "input '%s' is %s; %s runs on float32 or float16", x->name,
                    gaio__mt_name(x->elem), n->op_type);
    const int r = x->ndim;
    if (r > GAIO_TENSOR_MAX_NDIM)
        return FAIL(GAIO_ERR_NOT_SUPPORTED, "input '%s' has rank %d: gaio normalizes tensors of up to %d dimensions",
                    x->name, r, GAIO_TENSOR_MAX_NDIM);
    if (n->op == OP_LAYER_NORM) {
        if (r < 1) return FAIL(GAIO_ERR_INVALID_ARG, "input '%s' is a scalar", x->name);
        if (a->axis < -r || a->axis >= r)
            return FAIL(GAIO_ERR_INVALID_ARG, "axis %lld is out of range for rank %d", (long long)a->axis, r);
        if (a->axis < 0) a->axis += r;
        TRY(layer_param(fn, n, x, input(g, n, 1), a->axis));
        if (input(g, n, 2)) TRY(layer_param(fn, n, x, input(g, n, 2), a->axis));
        /* Mean and InvStdDev: X's shape with the normalized dimensions 1, of stash_type. */
        for (int k = 1; k < n->nout && k < 3; k++) {
            if (n->out[k] < 0) continue;
            if (a->stash_type != 1)
                return FAIL(GAIO_ERR_NOT_SUPPORTED, "output %d (%s) of stash_type %lld: gaio gives the statistics "
                            "as float32 (stash_type 1) only", k, k == 1 ? "Mean" : "InvStdDev", (long long)a->stash_type);
            mvalue *o = &g->values[n->out[k]];
            o->elem = MT_F32, o->ndim = r;
            for (int d = 0; d < r; d++) {
                o->dims[d] = d < a->axis ? x->dims[d] : 1;
                o->dim_names[d] = d < a->axis && x->dim_names[d] ? x->dim_names[d] : "";
            }
        }
        return GAIO_OK;
    }
    if (r < 2) return FAIL(GAIO_ERR_INVALID_ARG, "input '%s' has rank %d; it needs [N, C, ...]", x->name, r);
    const int64_t C = x->dims[1];
    if (C < 0) return FAIL(GAIO_ERR_NOT_SUPPORTED, "input '%s' has a symbolic channel count", x->name);
    if (n->op == OP_INSTANCE_NORM) {
        TRY(channel_param(fn, n, x, input(g, n, 1), C, "one scale per channel"));
        return channel_param(fn, n, x, input(g, n, 2), C, "one bias per channel");
    }
    const int64_t G = a->num_groups;
    if (C % G)
        return FAIL(GAIO_ERR_INVALID_ARG, "num_groups %lld does not divide the %lld channels of '%s'", (long long)G,
                    (long long)C, x->name);
    /* Opsets 18 to 20 take one scale and bias per group; 21 one per channel (18's were
     * a mistake ONNX fixed, deprecating it). */
    const bool per_channel = g->opset >= 21;
    const char *what = per_channel ? "one per channel from opset 21" : "one per group in opsets 18 to 20";
    TRY(channel_param(fn, n, x, input(g, n, 1), per_channel ? C : G, what));
    return channel_param(fn, n, x, input(g, n, 2), per_channel ? C : G, what);
}
