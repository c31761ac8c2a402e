/* The planner's rewrites: see plan.h. */
#include "model/plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/half.h"

static double get(const mvalue *v, size_t i) {
    return v->elem == MT_F16 ? (double)h2f(((const uint16_t *)v->data)[i]) : (double)((const float *)v->data)[i];
}

static void put(int32_t elem, void *data, size_t i, double x) {
    if (elem == MT_F16)
        ((uint16_t *)data)[i] = f2h((float)x);
    else
        ((float *)data)[i] = (float)x;
}

static size_t count(const mvalue *v) {
    size_t n = 1;
    for (int32_t d = 0; d < v->ndim; d++) n *= (size_t)v->dims[d];
    return n;
}

static bool is_const_float(const mvalue *v) { return v->data && (v->elem == MT_F32 || v->elem == MT_F16); }

/* The one node reading value v (-1 when none, several, or v is a graph output). */
static int32_t only_reader(const mgraph *g, const int32_t *readers, const int32_t *reader, int32_t v) {
    if (g->values[v].is_output || readers[v] != 1) return -1;
    return reader[v];
}

static int32_t add_extra(xplan *p, const mgraph *g, int32_t elem, int32_t ndim, const int64_t *dims) {
    xconst *grown = realloc(p->extra, ((size_t)p->nextra + 1) * sizeof *grown);
    if (!grown) return -1;
    p->extra = grown;
    xconst *c = &p->extra[p->nextra];
    memset(c, 0, sizeof *c);
    c->elem = elem, c->ndim = ndim;
    size_t n = 1;
    for (int32_t d = 0; d < ndim; d++) c->dims[d] = dims[d], n *= (size_t)dims[d];
    c->bytes = n * gaio__mt_size(elem);
    c->data = malloc(c->bytes ? c->bytes : 1);
    if (!c->data) return -1;
    return g->nvalues + p->nextra++;
}

/* Folds batch norm bn into the convolution of weights w and bias b (-1: none): new
 * weight and bias constants in *w and *b. */
static gaio_status fold_bn(const char *fn, const mgraph *g, xplan *p, const mnode *bn, int32_t *w, int32_t *b) {
    const mvalue *wv = &g->values[*w], *bv = *b >= 0 ? &g->values[*b] : NULL;
    const mvalue *gamma = &g->values[bn->in[1]], *beta = &g->values[bn->in[2]];
    const mvalue *mean = &g->values[bn->in[3]], *var = &g->values[bn->in[4]];
    int64_t k = wv->dims[0];
    size_t per = count(wv) / (size_t)k;
    int32_t nw = add_extra(p, g, wv->elem, wv->ndim, wv->dims);
    int32_t nb = nw >= 0 ? add_extra(p, g, wv->elem, 1, &k) : -1;
    if (nw < 0 || nb < 0) return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory folding batch norms");
    xconst *cw = &p->extra[nw - g->nvalues], *cb = &p->extra[nb - g->nvalues];
    for (int64_t c = 0; c < k; c++) {
        double scale = get(gamma, (size_t)c) / sqrt(get(var, (size_t)c) + (double)bn->a.epsilon);
        for (size_t i = 0; i < per; i++) put(cw->elem, cw->data, (size_t)c * per + i, get(wv, (size_t)c * per + i) * scale);
        double bias = bv ? get(bv, (size_t)c) : 0.0;
        put(cb->elem, cb->data, (size_t)c, (bias - get(mean, (size_t)c)) * scale + get(beta, (size_t)c));
    }
    *w = nw, *b = nb;
    return GAIO_OK;
}

/* A batch norm's constant statistics as one scale and shift per channel, y = x * w +
 * b (f32 extra values, computed in double once here instead of a square root and a
 * division per channel in every run's kernel: DenseNet-121's 62 unfolded ones spent more on
 * those than on their data). Leaves *w and *b at -1 where a parameter is not constant. */
static gaio_status bn_affine(const char *fn, const mgraph *g, xplan *p, const mnode *bn, int32_t *w, int32_t *b) {
    for (int32_t k = 1; k < 5; k++)
        if (!is_const_float(&g->values[bn->in[k]])) return GAIO_OK;
    const mvalue *gamma = &g->values[bn->in[1]], *beta = &g->values[bn->in[2]];
    const mvalue *mean = &g->values[bn->in[3]], *var = &g->values[bn->in[4]];
    int64_t c = (int64_t)count(gamma);
    int32_t nw = add_extra(p, g, MT_F32, 1, &c);
    int32_t nb = nw >= 0 ? add_extra(p, g, MT_F32, 1, &c) : -1;
    if (nw < 0 || nb < 0) return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory folding batch norms");
    xconst *cw = &p->extra[nw - g->nvalues], *cb = &p->extra[nb - g->nvalues];
    for (int64_t i = 0; i < c; i++) {
        double scale = get(gamma, (size_t)i) / sqrt(get(var, (size_t)i) + (double)bn->a.epsilon);
        put(MT_F32, cw->data, (size_t)i, scale);
        put(MT_F32, cb->data, (size_t)i, get(beta, (size_t)i) - get(mean, (size_t)i) * scale);
    }
    *w = nw, *b = nb;
    return GAIO_OK;
}

/* A Concat whose first inputs are, in order, all the inputs of an earlier Concat along
 * the same axis (DenseNet: every layer concatenates all the block's maps so far) reads
 * that Concat's output instead of them: s->res is it, s->w how many inputs it stands
 * for. One copy of the prefix instead of one launch per map: DenseNet-121's 600 small
 * copies per run become 120, the bytes moved the same. The longest such prefix wins. */
static void concat_prefix(const mgraph *g, int32_t i, xstep *s) {
    const mnode *n = &g->nodes[i];
    for (int32_t m = 0; m < i; m++) {
        const mnode *c = &g->nodes[m];
        if (c->op != OP_CONCAT || c->a.axis != n->a.axis || c->nin < 2 || c->nin >= n->nin || c->nout < 1 ||
            c->out[0] < 0 || (s->res >= 0 && c->nin <= s->w))
            continue;
        bool prefix = true;
        for (int32_t k = 0; k < c->nin && prefix; k++) prefix = c->in[k] == n->in[k] && c->in[k] >= 0;
        if (prefix) s->res = c->out[0], s->w = c->nin;
    }
}

static bool same_shape(const mvalue *a, const mvalue *b) {
    if (a->ndim != b->ndim || a->elem != b->elem) return false;
    for (int32_t d = 0; d < a->ndim; d++)
        if (a->dims[d] != b->dims[d]) return false;
    return true;
}

/* The activation a single-input node applies, as a convolution's fused epilogue takes
 * it: false for other nodes, and for a Clip whose bounds are not constant scalars. */
static bool act_of(const mgraph *g, const mnode *a, gaio_unary_params *act) {
    memset(act, 0, sizeof *act);
    switch (a->op) {
    case OP_RELU: act->op = GAIO_UNARY_RELU; return true;
    case OP_SIGMOID: act->op = GAIO_UNARY_SIGMOID; return true;
    case OP_TANH: act->op = GAIO_UNARY_TANH; return true;
    case OP_HARD_SWISH: act->op = GAIO_UNARY_HARD_SWISH; return true;
    case OP_HARD_SIGMOID:
        act->op = GAIO_UNARY_HARD_SIGMOID, act->alpha = a->a.alpha, act->beta = a->a.beta;
        return true;
    case OP_CLIP:
        /* Opsets before 11: attributes (unbounded unless given); later: inputs. */
        act->op = GAIO_UNARY_CLIP, act->alpha = a->a.clip_min, act->beta = a->a.clip_max;
        for (int32_t k = 1; k < a->nin && k < 3; k++) {
            if (a->in[k] < 0) continue;
            const mvalue *b = &g->values[a->in[k]];
            if (!is_const_float(b) || count(b) != 1) return false;
            if (k == 1) act->alpha = (float)get(b, 0);
            else act->beta = (float)get(b, 0);
        }
        return true;
    default: return false;
    }
}

/* SiLU as exporters write it, x * Sigmoid(x) (no SiLU operator before opset 24): v read
 * by exactly a Sigmoid and a Mul of v with the Sigmoid's output, which nothing else
 * reads. The Sigmoid's and the Mul's node indexes in *sig and *mul. */
static bool silu_of(const mgraph *g, const int32_t *readers, const bool *absorbed, int32_t from, int32_t v,
                    int32_t *sig, int32_t *mul) {
    if (g->values[v].is_output || readers[v] != 2) return false;
    *sig = *mul = -1;
    for (int32_t i = from; i < g->nnodes; i++) {
        const mnode *n = &g->nodes[i];
        if (n->op == OP_SIGMOID && n->in[0] == v && *sig < 0) *sig = i;
    }
    if (*sig < 0 || absorbed[*sig]) return false;
    int32_t s = g->nodes[*sig].out[0];
    if (g->values[s].is_output || readers[s] != 1) return false;
    for (int32_t i = *sig + 1; i < g->nnodes && *mul < 0; i++) {
        const mnode *n = &g->nodes[i];
        if (n->op == OP_MUL && n->nin == 2 && ((n->in[0] == v && n->in[1] == s) || (n->in[0] == s && n->in[1] == v)))
            *mul = i;
    }
    return *mul >= 0 && !absorbed[*mul] && same_shape(&g->values[g->nodes[*mul].out[0]], &g->values[v]);
}

/* The constant scalar value v holds (one element), or NAN where it is none. */
static double const_scalar(const mgraph *g, int32_t v) {
    if (v < 0 || !is_const_float(&g->values[v]) || count(&g->values[v]) != 1) return NAN;
    return get(&g->values[v], 0);
}

/* The input of two-input node n that is not v (-1 where v is not exactly one of them). */
static int32_t other_in(const mnode *n, int32_t v) {
    if (n->nin != 2) return -1;
    if (n->in[0] == v && n->in[1] != v) return n->in[1];
    if (n->in[1] == v && n->in[0] != v) return n->in[0];
    return -1;
}

static bool near(double a, double b) { return fabs(a - b) <= 1e-6 * fabs(b); }

/* GELU as torch.onnx writes it before opset 20's Gelu (ConvNeXt's, ViT's and Swin's
 * MLPs): Div(v, sqrt 2) (or Mul by 1 / sqrt 2) -> Erf -> Add 1 -> Mul by v -> Mul by
 * 0.5, v read by the first and the fourth alone, each other intermediate by the next
 * node alone. Five passes over the MLP's widest tensor become one. The chain's nodes in
 * order in chain[0..4]. */
static bool gelu_of(const mgraph *g, const int32_t *readers, const int32_t *reader, const bool *absorbed, int32_t v,
                    int32_t chain[5]) {
    if (v < 0 || g->values[v].is_output || readers[v] != 2) return false;
    int32_t scale = -1, mul = -1;
    for (int32_t i = 0; i < g->nnodes; i++) {
        const mnode *n = &g->nodes[i];
        int32_t o = other_in(n, v);
        if (o < 0 || absorbed[i]) continue;
        double c = const_scalar(g, o);
        if ((n->op == OP_DIV && n->in[0] == v && near(c, 1.4142135623730951)) ||
            (n->op == OP_MUL && near(c, 0.7071067811865476)))
            scale = i;
        else if (n->op == OP_MUL)
            mul = i; /* the Mul by 1 + erf, checked below */
    }
    if (scale < 0 || mul < 0) return false;
    int32_t e = only_reader(g, readers, reader, g->nodes[scale].out[0]);
    if (e < 0 || absorbed[e] || g->nodes[e].op != OP_ERF) return false;
    int32_t a = only_reader(g, readers, reader, g->nodes[e].out[0]);
    if (a < 0 || absorbed[a] || g->nodes[a].op != OP_ADD || const_scalar(g, other_in(&g->nodes[a], g->nodes[e].out[0])) != 1.0)
        return false;
    if (only_reader(g, readers, reader, g->nodes[a].out[0]) != mul || other_in(&g->nodes[mul], g->nodes[a].out[0]) != v)
        return false;
    int32_t h = only_reader(g, readers, reader, g->nodes[mul].out[0]);
    if (h < 0 || absorbed[h] || g->nodes[h].op != OP_MUL ||
        const_scalar(g, other_in(&g->nodes[h], g->nodes[mul].out[0])) != 0.5)
        return false;
    if (!same_shape(&g->values[g->nodes[h].out[0]], &g->values[v])) return false;
    chain[0] = scale, chain[1] = e, chain[2] = a, chain[3] = mul, chain[4] = h;
    return true;
}

/* The Transpose that makes value v by swapping its input's last two dimensions and
 * nothing else, v read by one node alone (attention's k^T before q @ k^T): its node
 * index, else -1. The GEMM reads the input transposed instead, where the copy moved
 * every element with its last dimension changing (ViT: 12 of 10 MB at batch 32). */
static int32_t swap_last_two(const mgraph *g, const int32_t *readers, int32_t v) {
    if (v < 0 || g->values[v].is_output || readers[v] != 1) return -1;
    for (int32_t i = 0; i < g->nnodes; i++) {
        const mnode *n = &g->nodes[i];
        if (n->op != OP_TRANSPOSE || n->nout < 1 || n->out[0] != v) continue;
        int32_t r = n->a.nperm;
        if (r < 2 || r != g->values[v].ndim) return -1;
        for (int32_t d = 0; d < r - 2; d++)
            if (n->a.perm[d] != d) return -1;
        return n->a.perm[r - 2] == r - 1 && n->a.perm[r - 1] == r - 2 ? i : -1;
    }
    return -1;
}

/* The node making value v as x * c, c * x or x / c for a constant scalar c, v read by
 * one node alone: its index, x in *x and c as a factor in *c; else -1. A MatMul takes
 * the factor as its GEMM's alpha: one pass over each operand fewer. */
static int32_t scaled_by(const mgraph *g, const int32_t *readers, const bool *absorbed, int32_t v, int32_t *x,
                         double *c) {
    if (v < 0 || g->values[v].is_output || readers[v] != 1) return -1;
    for (int32_t i = 0; i < g->nnodes; i++) {
        const mnode *n = &g->nodes[i];
        if (n->nout < 1 || n->out[0] != v) continue;
        if (absorbed[i] || (n->op != OP_MUL && n->op != OP_DIV) || n->nin != 2) return -1;
        int32_t k = 1;
        if (n->op == OP_MUL && isfinite(const_scalar(g, n->in[0])) && !isfinite(const_scalar(g, n->in[1]))) k = 0;
        double f = const_scalar(g, n->in[k]);
        if (!isfinite(f) || f == 0.0 || !same_shape(&g->values[n->in[1 - k]], &g->values[v])) return -1;
        *c = n->op == OP_MUL ? f : 1.0 / f, *x = n->in[1 - k];
        return i;
    }
    return -1;
}

/* Whether bias value b broadcasts (NumPy's rules) to value s's shape. */
static bool broadcasts(const mvalue *b, const mvalue *s) {
    if (b->ndim > s->ndim) return false;
    for (int32_t d = 0; d < b->ndim; d++) {
        int64_t n = b->dims[d], m = s->dims[d + s->ndim - b->ndim];
        if (n != 1 && n != m) return false;
    }
    return true;
}

/* Attention as exported graphs write it, after the first MatMul's step s has taken its
 * scales and k's Transpose: s's output (the scores) read by an Add of a constant bias
 * (optional), then optionally Swin's shifted-window mask (a Reshape splitting the
 * batch into [batch, windows], an Add of a constant mask over the windows, a Reshape
 * back), and then a Softmax over the last axis alone, whose output is the A of a
 * second MatMul alone. q, k and v of one rank (3 or 4), equal leading dimensions, head
 * size 32 or 64 (gaio_attention's GPU kernel). The second MatMul's node index; v, the
 * bias (-1: none), the mask (-1: none) and the absorbed nodes in *a. */
typedef struct attn_match {
    int32_t v, bias, add, sm;
    int32_t mask, split, mask_add, merge; /* Swin's mask: its Reshape, Add and Reshape (-1: none) */
} attn_match;

/* The windows' mask after the scores cur [B0, ...]: Reshape to [B0 / P, P, ...], Add of
 * a constant that broadcasts there without varying along B0 / P, Reshape back. */
static bool mask_of(const mgraph *g, const int32_t *readers, const int32_t *reader, const bool *absorbed, int32_t cur,
                    attn_match *a) {
    const mvalue *c = &g->values[cur];
    int32_t j = only_reader(g, readers, reader, cur);
    if (j < 0 || absorbed[j] || g->nodes[j].op != OP_RESHAPE || g->nodes[j].in[0] != cur) return false;
    const mvalue *o = &g->values[g->nodes[j].out[0]];
    if (o->ndim != c->ndim + 1 || o->dims[0] * o->dims[1] != c->dims[0]) return false;
    for (int32_t d = 1; d < c->ndim; d++)
        if (o->dims[d + 1] != c->dims[d]) return false;
    const int32_t k = only_reader(g, readers, reader, g->nodes[j].out[0]);
    if (k < 0 || absorbed[k] || g->nodes[k].op != OP_ADD) return false;
    const int32_t m = other_in(&g->nodes[k], g->nodes[j].out[0]);
    if (m < 0 || !is_const_float(&g->values[m]) || !broadcasts(&g->values[m], o) ||
        !same_shape(&g->values[g->nodes[k].out[0]], o))
        return false;
    if (g->values[m].ndim == o->ndim && g->values[m].dims[0] != 1) return false; /* varies with the batch */
    const int32_t l = only_reader(g, readers, reader, g->nodes[k].out[0]);
    if (l < 0 || absorbed[l] || g->nodes[l].op != OP_RESHAPE || g->nodes[l].in[0] != g->nodes[k].out[0] ||
        !same_shape(&g->values[g->nodes[l].out[0]], c))
        return false;
    a->mask = m, a->split = j, a->mask_add = k, a->merge = l;
    return true;
}

static int32_t attention_of(const mgraph *g, const int32_t *readers, const int32_t *reader, const bool *absorbed,
                            const xstep *s, attn_match *a) {
    if (!s->trans_b || s->b >= 0 || s->res >= 0 || s->has_act || s->w < 0) return -1;
    const mvalue *q = &g->values[s->x >= 0 ? s->x : s->n->in[0]], *k = &g->values[s->w];
    const int32_t r = q->ndim;
    if ((r != 3 && r != 4) || k->ndim != r) return -1;
    const int64_t D = q->dims[r - 1];
    if ((D != 32 && D != 64) || k->dims[r - 1] != D) return -1;
    for (int32_t d = 0; d < r - 2; d++)
        if (q->dims[d] != k->dims[d]) return -1;
    int32_t cur = s->out, j = only_reader(g, readers, reader, cur);
    a->bias = a->add = a->mask = a->split = a->mask_add = a->merge = -1;
    if (j >= 0 && !absorbed[j] && g->nodes[j].op == OP_ADD) {
        int32_t b = other_in(&g->nodes[j], cur);
        if (b < 0 || !is_const_float(&g->values[b]) || !broadcasts(&g->values[b], &g->values[cur]) ||
            !same_shape(&g->values[g->nodes[j].out[0]], &g->values[cur]))
            return -1;
        a->bias = b, a->add = j, cur = g->nodes[j].out[0], j = only_reader(g, readers, reader, cur);
    }
    if (mask_of(g, readers, reader, absorbed, cur, a)) {
        /* the bias joins the mask in one constant over [P, ...]: it must not vary with B0 */
        const mvalue *b = a->bias >= 0 ? &g->values[a->bias] : NULL;
        if (b && b->ndim == r && b->dims[0] != 1) return -1;
        cur = g->nodes[a->merge].out[0], j = only_reader(g, readers, reader, cur);
    }
    if (j < 0 || absorbed[j] || g->nodes[j].op != OP_SOFTMAX || g->nodes[j].in[0] != cur) return -1;
    int64_t axis = g->nodes[j].a.axis < 0 ? g->nodes[j].a.axis + r : g->nodes[j].a.axis;
    if (axis != r - 1) return -1;
    a->sm = j, cur = g->nodes[j].out[0], j = only_reader(g, readers, reader, cur);
    if (j < 0 || absorbed[j] || g->nodes[j].op != OP_MATMUL || g->nodes[j].nin != 2 || g->nodes[j].in[0] != cur ||
        g->nodes[j].in[1] == cur)
        return -1;
    const mvalue *vv = &g->values[g->nodes[j].in[1]], *y = &g->values[g->nodes[j].out[0]];
    if (vv->ndim != r || y->ndim != r || vv->dims[r - 1] != D || vv->dims[r - 2] != k->dims[r - 2] ||
        y->dims[r - 1] != D || y->dims[r - 2] != q->dims[r - 2] || vv->elem != q->elem)
        return -1;
    for (int32_t d = 0; d < r - 2; d++)
        if (vv->dims[d] != q->dims[d]) return -1;
    a->v = g->nodes[j].in[1];
    return j;
}

/* The element of constant v broadcast (NumPy's rules) to a shape of rank r at index ix. */
static double bcast_get(const mvalue *v, int32_t r, const int64_t *ix) {
    size_t off = 0;
    for (int32_t d = 0; d < v->ndim; d++) {
        const int64_t n = v->dims[d], i = ix[d + r - v->ndim];
        off = off * (size_t)n + (size_t)(n == 1 ? 0 : i);
    }
    return get(v, off);
}

/* Swin's bias and window mask as one constant [P, S1, ...] (f32) over the scores' [B0,
 * S1, ...]: gaio_attention repeats a leading bias dimension that divides the scores'
 * (element b0 % P). Its value index in *out; false where it is too large to keep. */
static gaio_status mask_bias(const char *fn, const mgraph *g, xplan *p, const xstep *s, const attn_match *a,
                             int32_t *out) {
    const mvalue *sc = &g->values[s->out], *split = &g->values[g->nodes[a->split].out[0]];
    const mvalue *m = &g->values[a->mask], *b = a->bias >= 0 ? &g->values[a->bias] : NULL;
    const int32_t r = sc->ndim;
    int64_t dims[GAIO_MODEL_MAX_NDIM];
    dims[0] = split->dims[1];
    size_t n = (size_t)dims[0];
    for (int32_t d = 1; d < r; d++) dims[d] = sc->dims[d], n *= (size_t)dims[d];
    *out = -1;
    if (n > ((size_t)1 << 24)) return GAIO_OK;
    const int32_t v = add_extra(p, g, MT_F32, r, dims);
    if (v < 0) return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory joining attention's bias and mask");
    xconst *c = &p->extra[v - g->nvalues];
    for (size_t i = 0; i < n; i++) {
        int64_t ix[GAIO_MODEL_MAX_NDIM + 1], at = (int64_t)i; /* ix: [0, p, s1, ...] over the split shape */
        for (int32_t d = r - 1; d >= 0; d--) ix[d + 1] = at % dims[d], at /= dims[d];
        ix[0] = 0;
        double x = bcast_get(m, r + 1, ix);
        if (b) { /* the bias at [0, s1, ...]: it does not vary along B0 (attention_of) */
            int64_t bix[GAIO_MODEL_MAX_NDIM];
            bix[0] = 0;
            for (int32_t d = 1; d < r; d++) bix[d] = ix[d + 1];
            x += bcast_get(b, r, bix);
        }
        put(MT_F32, c->data, i, x);
    }
    *out = v;
    return GAIO_OK;
}

/* A MatMul's bias as torch.onnx writes a Linear on more than 2-D inputs: an Add of a
 * constant of the output's last dimension (leading dimensions 1), the MatMul's output
 * read by it alone. */
static bool bias_of(const mgraph *g, const mnode *add, int32_t v) {
    int32_t c = other_in(add, v);
    if (add->op != OP_ADD || c < 0 || !is_const_float(&g->values[c])) return false;
    const mvalue *y = &g->values[v], *b = &g->values[c];
    if (y->ndim < 1 || b->ndim < 1 || b->ndim > y->ndim || !same_shape(&g->values[add->out[0]], y)) return false;
    for (int32_t d = 0; d < b->ndim - 1; d++)
        if (b->dims[d] != 1) return false;
    return b->dims[b->ndim - 1] == y->dims[y->ndim - 1] && b->elem == y->elem;
}

/* The Transpose of channels last to channels first ([0, r-1, 1, ..., r-2]: an NHWC
 * engine's view) reading value v alone: its node index, else -1. ConvNeXt's way back
 * after fc2, before its layer scale and residual. */
static int32_t to_channels_first(const mgraph *g, const int32_t *readers, const int32_t *reader, const bool *absorbed,
                                 int32_t v) {
    const int32_t t = only_reader(g, readers, reader, v);
    if (t < 0 || absorbed[t] || g->nodes[t].op != OP_TRANSPOSE || g->nodes[t].nout < 1) return -1;
    const mnode *tn = &g->nodes[t];
    const int32_t r = tn->a.nperm;
    if (r < 3 || r != g->values[v].ndim || tn->a.perm[0] != 0 || tn->a.perm[1] != r - 1) return -1;
    for (int32_t d = 2; d < r; d++)
        if (tn->a.perm[d] != d - 1) return -1;
    return t;
}

/* ConvNeXt's layer scale after Transpose t (to_channels_first): a Mul reading t's output
 * alone by a constant varying along axis 1 alone. The Mul's node index (its constant in
 * *gamma), else -1. */
static int32_t layer_scale_of(const mgraph *g, const int32_t *readers, const int32_t *reader, const bool *absorbed,
                              int32_t t, int32_t *gamma) {
    const int32_t r = g->nodes[t].a.nperm, tout = g->nodes[t].out[0];
    const int32_t m = only_reader(g, readers, reader, tout);
    if (m < 0 || absorbed[m] || g->nodes[m].op != OP_MUL || g->nodes[m].nin != 2) return -1;
    const int32_t c = other_in(&g->nodes[m], tout);
    const mvalue *cv = c >= 0 ? &g->values[c] : NULL, *tv = &g->values[tout];
    if (!cv || !is_const_float(cv) || cv->ndim > r || !same_shape(&g->values[g->nodes[m].out[0]], tv)) return -1;
    for (int32_t d = 0; d < cv->ndim; d++) {
        const int32_t at = d + r - cv->ndim; /* the axis of tv it lines up with */
        if (cv->dims[d] != (at == 1 ? tv->dims[1] : 1)) return -1;
    }
    *gamma = c;
    return m;
}

/* Folds the layer scale (constant value gamma, one factor a channel) into step s:
 * y = gamma * (x W + b) = g0 * (x (W gamma / g0)) + gamma b, g0 the largest |gamma|, as
 * new weight and bias constants and the GEMM's alpha. Scaling W's columns by gamma
 * itself would underflow f16 weights (torchvision initialises gamma to 1e-6); by
 * gamma / g0 it is exact where the factors are equal, and else is applied only if every
 * column's largest scaled weight stays well inside f16's normal range (2^-10; *done
 * false otherwise): a weight that small next to its column's largest adds little to the
 * column's dot products, so its coarser rounding does too. */
static gaio_status fold_layer_scale(const char *fn, const mgraph *g, xplan *p, xstep *s, int32_t gamma, bool *done) {
    *done = false;
    const mvalue *gam = &g->values[gamma];
    const int32_t bw = s->w >= 0 ? s->w : s->n->in[1];
    const mvalue *wv = &g->values[bw], *bv = &g->values[s->b];
    const int64_t N = (int64_t)count(gam);
    if (s->trans_b || !is_const_float(wv) || wv->ndim != 2 || wv->dims[1] != N || !is_const_float(bv) ||
        (int64_t)count(bv) != N)
        return GAIO_OK;
    double g0 = 0.0;
    for (int64_t c = 0; c < N; c++) g0 = fmax(g0, fabs(get(gam, (size_t)c)));
    if (!(g0 > 0.0) || !isfinite(g0)) return GAIO_OK;
    const int64_t K = wv->dims[0];
    for (int64_t c = 0; c < N; c++) {
        const double f = fabs(get(gam, (size_t)c)) / g0;
        if (f == 1.0 || f == 0.0) continue; /* exact */
        double top = 0.0;
        for (int64_t k = 0; k < K; k++) top = fmax(top, fabs(get(wv, (size_t)(k * N + c))) * f);
        if (top < 0x1p-10) return GAIO_OK; /* the column's largest weights near f16's subnormals */
    }
    const int32_t nw = add_extra(p, g, wv->elem, 2, wv->dims);
    const int32_t nb = nw >= 0 ? add_extra(p, g, bv->elem, bv->ndim, bv->dims) : -1;
    if (nw < 0 || nb < 0) return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory folding a layer scale");
    xconst *cw = &p->extra[nw - g->nvalues], *cb = &p->extra[nb - g->nvalues];
    for (int64_t c = 0; c < N; c++) {
        const double gc = get(gam, (size_t)c), f = gc / g0;
        for (int64_t k = 0; k < K; k++) put(cw->elem, cw->data, (size_t)(k * N + c), get(wv, (size_t)(k * N + c)) * f);
        put(cb->elem, cb->data, (size_t)c, get(bv, (size_t)c) * gc);
    }
    s->w = nw, s->b = nb, s->alpha *= (float)g0;
    *done = true;
    return GAIO_OK;
}

/* ConvNeXt's residual after its fc2 (on an NHWC engine): after the 4-D Transpose t
 * (to_channels_first) that makes value t_out (its output, or the layer scale's after
 * fold_layer_scale), an Add of a tensor of t_out's shape reading t_out alone. Both
 * [N, C, H, W] values are stored NHWC, whose bytes are the rows of the product's
 * [N, H, W, C]: the GEMM can take the residual as C and write the sum. The Add's node
 * index (the residual in *res), else -1. */
static int32_t nhwc_residual_of(const mgraph *g, const int32_t *readers, const int32_t *reader, const bool *absorbed,
                                int32_t t, int32_t t_out, int32_t *res) {
    if (g->nodes[t].a.nperm != 4) return -1;
    const int32_t a = only_reader(g, readers, reader, t_out);
    if (a < 0 || absorbed[a] || g->nodes[a].op != OP_ADD || g->nodes[a].nin != 2) return -1;
    const int32_t x = other_in(&g->nodes[a], t_out);
    if (x < 0 || x == t_out || is_const_float(&g->values[x]) || !same_shape(&g->values[x], &g->values[t_out]) ||
        !same_shape(&g->values[g->nodes[a].out[0]], &g->values[t_out]))
        return -1;
    *res = x;
    return a;
}

gaio_status gaio__plan_make(const char *fn, const mgraph *g, const xplan_opts *o, xplan *p) {
    const bool all_acts = o->all_acts, attention = o->attention;
    memset(p, 0, sizeof *p);
    int32_t nn = g->nnodes, nv = g->nvalues;
    int32_t *readers = calloc((size_t)nv + 1, sizeof *readers), *reader = calloc((size_t)nv + 1, sizeof *reader);
    int32_t *emit_at = malloc(((size_t)nn + 1) * sizeof *emit_at);
    bool *absorbed = calloc((size_t)nn + 1, sizeof *absorbed), *head = calloc((size_t)nn + 1, sizeof *head);
    xstep *fused = calloc((size_t)nn + 1, sizeof *fused);
    int32_t *out_as = malloc(((size_t)nn + 1) * sizeof *out_as); /* a node's step writes this value instead (-1) */
    size_t cap = (size_t)nn + 1; /* a step per node, and per further output of a Split */
    for (int32_t i = 0; i < nn; i++)
        if ((g->nodes[i].op == OP_SPLIT || g->nodes[i].op == OP_TOPK || g->nodes[i].op == OP_LAYER_NORM) &&
            g->nodes[i].nout > 1)
            cap += (size_t)g->nodes[i].nout - 1;
    p->steps = calloc(cap, sizeof *p->steps);
    gaio_status st = GAIO_OK;
    if (!readers || !reader || !emit_at || !absorbed || !head || !fused || !out_as || !p->steps) {
        st = gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory planning the model");
        goto done;
    }
    for (int32_t i = 0; i < nn; i++) {
        emit_at[i] = out_as[i] = -1;
        const mnode *n = &g->nodes[i];
        for (int32_t j = 0; j < n->nin; j++)
            if (n->in[j] >= 0) readers[n->in[j]]++, reader[n->in[j]] = i;
    }
    for (int32_t i = 0; i < nn && st == GAIO_OK; i++) {
        const mnode *n = &g->nodes[i];
        if (n->op != OP_CONV || absorbed[i]) continue;
        xstep *s = &fused[i];
        s->n = n, s->out = n->out[0], s->w = n->in[1], s->b = n->nin > 2 ? n->in[2] : -1, s->res = s->x = -1;
        int32_t last = i, j;
        bool consts = is_const_float(&g->values[s->w]) && (s->b < 0 || is_const_float(&g->values[s->b]));
        if (consts && (j = only_reader(g, readers, reader, s->out)) >= 0 && !absorbed[j] &&
            g->nodes[j].op == OP_BATCH_NORM &&
            g->nodes[j].in[0] == s->out) {
            const mnode *bn = &g->nodes[j];
            bool all = true;
            for (int32_t k = 1; k < 5; k++) all = all && is_const_float(&g->values[bn->in[k]]);
            if (all) {
                if ((st = fold_bn(fn, g, p, bn, &s->w, &s->b)) != GAIO_OK) break;
                absorbed[j] = true, s->out = bn->out[0], last = j, p->folded_bn++;
            }
        }
        if ((j = only_reader(g, readers, reader, s->out)) >= 0 && !absorbed[j] && g->nodes[j].op == OP_ADD) {
            const mnode *add = &g->nodes[j];
            int32_t other = add->in[0] == s->out ? add->in[1] : add->in[0];
            if (other >= 0 && other != s->out && same_shape(&g->values[other], &g->values[s->out]) &&
                same_shape(&g->values[add->out[0]], &g->values[s->out])) {
                absorbed[j] = true, s->res = other, s->out = add->out[0], last = j, p->fused_add++;
            }
        }
        int32_t sig, mul;
        if ((j = only_reader(g, readers, reader, s->out)) >= 0 && !absorbed[j] && act_of(g, &g->nodes[j], &s->act) &&
            (all_acts || s->act.op == GAIO_UNARY_RELU || s->act.op == GAIO_UNARY_CLIP)) {
            s->has_act = true, absorbed[j] = true, s->out = g->nodes[j].out[0], last = j, p->fused_act++;
        } else if (all_acts && silu_of(g, readers, absorbed, i + 1, s->out, &sig, &mul)) {
            memset(&s->act, 0, sizeof s->act);
            s->act.op = GAIO_UNARY_SILU;
            s->has_act = true, absorbed[sig] = absorbed[mul] = true, s->out = g->nodes[mul].out[0], last = mul;
            p->fused_act++;
        } else {
            memset(&s->act, 0, sizeof s->act);
        }
        emit_at[last] = i, head[i] = true;
    }
    /* Matrix products: a MatMul's bias Add, then an activation (an exported GELU chain
     * included), the activation as a pass over the product's output unless the GEMM's
     * epilogue takes it (ReLU). */
    for (int32_t i = 0; i < nn && st == GAIO_OK; i++) {
        const mnode *n = &g->nodes[i];
        if ((n->op != OP_MATMUL && n->op != OP_GEMM) || absorbed[i] || n->nout < 1 || n->out[0] < 0) continue;
        xstep *s = &fused[i];
        s->n = n, s->out = n->out[0], s->w = s->b = s->res = -1;
        s->x = -1, s->alpha = 1.0f;
        int32_t last = i, j, chain[5], t;
        if (n->op == OP_MATMUL && n->nin == 2) {
            int32_t a = n->in[0], b = n->in[1];
            double c;
            if ((t = scaled_by(g, readers, absorbed, a, &a, &c)) >= 0) s->alpha *= (float)c, absorbed[t] = true;
            if ((t = scaled_by(g, readers, absorbed, b, &b, &c)) >= 0) s->alpha *= (float)c, absorbed[t] = true;
            if ((t = swap_last_two(g, readers, b)) >= 0 && !absorbed[t]) b = g->nodes[t].in[0], s->trans_b = true, absorbed[t] = true;
            if (a != n->in[0]) s->x = a;
            if (b != n->in[1]) s->w = b;
            attn_match am;
            int32_t m2, joined = -1;
            if (attention && (m2 = attention_of(g, readers, reader, absorbed, s, &am)) >= 0 &&
                (am.mask < 0 || ((st = mask_bias(fn, g, p, s, &am, &joined)) == GAIO_OK && joined >= 0))) {
                s->attention = true, s->res = am.v, s->b = am.mask >= 0 ? joined : am.bias, s->out = g->nodes[m2].out[0];
                if (am.add >= 0) absorbed[am.add] = true;
                if (am.mask >= 0) absorbed[am.split] = absorbed[am.mask_add] = absorbed[am.merge] = true;
                absorbed[am.sm] = absorbed[m2] = true, p->fused_attention++;
                emit_at[m2] = i, head[i] = true;
                continue;
            }
            if (st != GAIO_OK) break;
        }
        if (n->op == OP_MATMUL && (j = only_reader(g, readers, reader, s->out)) >= 0 && !absorbed[j] &&
            bias_of(g, &g->nodes[j], s->out)) {
            s->b = other_in(&g->nodes[j], s->out);
            absorbed[j] = true, s->out = g->nodes[j].out[0], last = j, p->fused_add++;
        }
        /* ConvNeXt's layer scale into the weights, bias and alpha (the Transpose between
         * then makes the Mul's output), and the residual after it into the GEMM's C. */
        const int32_t tr = n->op == OP_MATMUL ? to_channels_first(g, readers, reader, absorbed, s->out) : -1;
        int32_t m, gamma, add, rx;
        if (tr >= 0 && s->b >= 0 && (m = layer_scale_of(g, readers, reader, absorbed, tr, &gamma)) >= 0) {
            bool done;
            if ((st = fold_layer_scale(fn, g, p, s, gamma, &done)) != GAIO_OK) break;
            if (done) absorbed[m] = true, out_as[tr] = g->nodes[m].out[0];
        }
        if (tr >= 0 && o->nhwc &&
            (add = nhwc_residual_of(g, readers, reader, absorbed, tr, out_as[tr] >= 0 ? out_as[tr] : g->nodes[tr].out[0],
                                    &rx)) >= 0) {
            s->res = rx, s->rows_nhwc = true, s->out = g->nodes[add].out[0];
            absorbed[tr] = absorbed[add] = true, out_as[tr] = -1, last = add, p->fused_add++;
        }
        /* A residual Add of a tensor of the output's shape: the GEMM's C (beta 1). */
        int32_t other;
        if (n->op == OP_MATMUL && s->res < 0 && (j = only_reader(g, readers, reader, s->out)) >= 0 && !absorbed[j] &&
            g->nodes[j].op == OP_ADD && (other = other_in(&g->nodes[j], s->out)) >= 0 &&
            !is_const_float(&g->values[other]) && same_shape(&g->values[other], &g->values[s->out]) &&
            same_shape(&g->values[g->nodes[j].out[0]], &g->values[s->out])) {
            s->res = other;
            absorbed[j] = true, s->out = g->nodes[j].out[0], last = j, p->fused_add++;
        }
        memset(&s->act, 0, sizeof s->act);
        if ((j = only_reader(g, readers, reader, s->out)) >= 0 && !absorbed[j] && act_of(g, &g->nodes[j], &s->act)) {
            s->has_act = true, absorbed[j] = true, s->out = g->nodes[j].out[0], last = j, p->fused_act++;
        } else if (gelu_of(g, readers, reader, absorbed, s->out, chain)) {
            memset(&s->act, 0, sizeof s->act);
            s->act.op = GAIO_UNARY_GELU, s->has_act = true;
            for (int k = 0; k < 5; k++) absorbed[chain[k]] = true;
            s->out = g->nodes[chain[4]].out[0], last = chain[4], p->fused_act++;
        } else {
            memset(&s->act, 0, sizeof s->act);
        }
        emit_at[last] = i, head[i] = true;
    }
    for (int32_t i = 0; i < nn && st == GAIO_OK; i++) {
        if (emit_at[i] >= 0) {
            p->steps[p->nsteps++] = fused[emit_at[i]];
            continue;
        }
        const mnode *n = &g->nodes[i];
        if (absorbed[i] || head[i]) continue; /* a fused step runs where its epilogue ended */
        int32_t chain[5];
        if ((n->op == OP_DIV || n->op == OP_MUL) && n->nin == 2 &&
            gelu_of(g, readers, reader, absorbed, g->values[n->in[0]].data ? n->in[1] : n->in[0], chain) &&
            chain[0] == i) {
            xstep *s = &p->steps[p->nsteps++];
            s->n = n, s->w = s->b = s->res = s->x = -1, s->gelu = true;
            for (int k = 1; k < 5; k++) absorbed[chain[k]] = true;
            s->out = g->nodes[chain[4]].out[0], p->fused_act++;
            continue;
        }
        /* A step per output of a Split, and per output used of a TopK and a LayerNormalization. */
        for (int32_t k = 0; k < (n->op == OP_SPLIT || n->op == OP_TOPK || n->op == OP_LAYER_NORM ? n->nout : 1); k++) {
            if (n->out[k] < 0) continue; /* TopK's indices, LayerNormalization's statistics may be left out */
            xstep *s = &p->steps[p->nsteps++];
            s->n = n, s->out = k == 0 && out_as[i] >= 0 ? out_as[i] : n->out[k], s->w = s->b = s->res = s->x = -1;
            /* A batch norm that no convolution absorbed (DenseNet's BN -> ReLU -> Conv)
             * takes the activation after it into its own pass: gaio's kernel applies any
             * act_of, on both backends. The act node comes later in the graph's order, so
             * marking it absorbed here skips it below. */
            int32_t j;
            if (n->op == OP_BATCH_NORM && (j = only_reader(g, readers, reader, n->out[0])) >= 0 && !absorbed[j] &&
                g->nodes[j].in[0] == n->out[0] && act_of(g, &g->nodes[j], &s->act)) {
                s->has_act = true, absorbed[j] = true, s->out = g->nodes[j].out[0], p->fused_act++;
            }
            if (n->op == OP_BATCH_NORM && (st = bn_affine(fn, g, p, n, &s->w, &s->b)) != GAIO_OK) break;
            if (n->op == OP_CONCAT) concat_prefix(g, i, s);
        }
    }
done:
    free(readers), free(reader), free(emit_at), free(absorbed), free(head), free(fused), free(out_as);
    if (st != GAIO_OK) gaio__plan_free(p);
    return st;
}

void gaio__plan_free(xplan *p) {
    for (int32_t i = 0; i < p->nextra; i++) free(p->extra[i].data);
    free(p->extra);
    free(p->steps);
    memset(p, 0, sizeof *p);
}
