/* Strided views of attention's operands (views.h).
 *
 * torch.onnx writes nn.MultiheadAttention's head split as data movement: the in-
 * projection [L, N, 3E] is reshaped to [L, N, 3, E], unsqueezed, transposed to
 * [3, L, N, 1, E], squeezed, gathered at 0, 1 and 2, reshaped to [L, N*H, D] and
 * transposed to [N*H, L, D]: q, k and v. The merge back after attention is one more
 * Transpose. As steps, those are eight copies of the activations a layer (ViT-B/16 at
 * batch 32: 1.34 ms of 4.76). Yet every one of those values is the projection's memory
 * read with other strides, and gaio_attention takes any strides (16-byte rows): so the
 * values become strided views (xvalue.vndim) and their steps run nothing.
 *
 * A view's memory is described by physical dimensions (size, stride) grouped into its
 * logical ones: [N*H, L, D] above is N (stride 3LE... in elements), H (stride D), L, D
 * with N and H one group. Reshape regroups them (splitting a physical dimension where
 * a new one needs a factor of it), Transpose permutes groups, a one-index Gather fixes
 * a group's index into the offset. Only attention steps read such a value (as q, k or
 * v), and they take the split as batch dimensions, which is why the split can stay. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/views.h"

#define MAXD GAIO_MODEL_MAX_NDIM
#define PMAX 8 /* physical dimensions while composing; a view keeps at most GAIO_TENSOR_MAX_NDIM */

typedef struct sview {
    int32_t ndim;        /* logical dimensions */
    int32_t group[MAXD]; /* physical dimensions of each logical one, in order (>= 1 each) */
    int32_t n;           /* physical dimensions */
    int64_t dims[PMAX], strides[PMAX];
    int64_t off;
} sview;

static void sv_packed(const xvalue *x, sview *s) {
    memset(s, 0, sizeof *s);
    s->ndim = s->n = x->ndim;
    int64_t st = 1;
    for (int32_t d = x->ndim - 1; d >= 0; d--) s->dims[d] = x->dims[d], s->strides[d] = st, s->group[d] = 1, st *= x->dims[d];
}

/* Size-1 physical dimensions dropped (a group keeps one), adjacent ones of a group
 * that are one run of memory merged. */
static void sv_tidy(sview *s) {
    sview o = *s;
    o.n = 0;
    int32_t at = 0;
    for (int32_t d = 0; d < s->ndim; d++) {
        int32_t cnt = 0;
        for (int32_t i = at; i < at + s->group[d]; i++) {
            const int64_t n = s->dims[i], st = s->strides[i];
            if (n == 1) continue;
            if (cnt > 0 && o.strides[o.n - 1] == n * st) {
                o.dims[o.n - 1] *= n, o.strides[o.n - 1] = st;
                continue;
            }
            o.dims[o.n] = n, o.strides[o.n] = st, o.n++, cnt++;
        }
        if (cnt == 0) o.dims[o.n] = 1, o.strides[o.n] = 0, o.n++, cnt = 1;
        at += s->group[d];
        o.group[d] = cnt;
    }
    *s = o;
}

/* s read with the logical shape dims (same element count): false where a new dimension
 * would need memory that is not one stride apart. */
static bool sv_reshape(sview *s, int32_t ndim, const int64_t *dims) {
    int64_t pd[PMAX], ps[PMAX];
    int32_t np = 0, i = 0;
    for (int32_t k = 0; k < s->n; k++)
        if (s->dims[k] != 1) pd[np] = s->dims[k], ps[np] = s->strides[k], np++;
    if (ndim > MAXD) return false;
    sview o;
    memset(&o, 0, sizeof o);
    o.ndim = ndim, o.off = s->off;
    for (int32_t d = 0; d < ndim; d++) {
        const int64_t want = dims[d];
        int64_t have = 1;
        int32_t cnt = 0;
        if (want <= 0) return false;
        while (have < want) {
            if (i >= np || o.n >= PMAX) return false;
            if (want % (have * pd[i]) == 0) { /* all of it */
                o.dims[o.n] = pd[i], o.strides[o.n] = ps[i], o.n++;
                have *= pd[i++];
            } else { /* its outer factor k; the rest stays for the next dimension */
                const int64_t k = want / have;
                if (pd[i] % k != 0) return false;
                pd[i] /= k;
                o.dims[o.n] = k, o.strides[o.n] = ps[i] * pd[i], o.n++;
                have = want;
            }
            cnt++;
        }
        if (cnt == 0) {
            if (o.n >= PMAX) return false;
            o.dims[o.n] = 1, o.strides[o.n] = 0, o.n++, cnt = 1;
        }
        o.group[d] = cnt;
    }
    if (i != np) return false;
    sv_tidy(&o);
    *s = o;
    return true;
}

static bool sv_transpose(sview *s, const int64_t *perm, int32_t nperm) {
    if (nperm != s->ndim) return false;
    int32_t start[MAXD], at = 0;
    bool seen[MAXD] = {false};
    for (int32_t d = 0; d < s->ndim; d++) start[d] = at, at += s->group[d];
    sview o = *s;
    o.n = 0;
    for (int32_t d = 0; d < s->ndim; d++) {
        const int64_t p = perm[d];
        if (p < 0 || p >= s->ndim || seen[p]) return false;
        seen[p] = true;
        for (int32_t i = 0; i < s->group[p]; i++)
            o.dims[o.n] = s->dims[start[p] + i], o.strides[o.n] = s->strides[start[p] + i], o.n++;
        o.group[d] = s->group[p];
    }
    sv_tidy(&o);
    *s = o;
    return true;
}

/* Index `at` of logical dimension axis: into the offset; the dimension dropped
 * (scalar) or kept with size 1. */
static bool sv_gather(sview *s, int32_t axis, int64_t at, bool scalar) {
    if (axis < 0 || axis >= s->ndim) return false;
    int32_t start = 0;
    for (int32_t d = 0; d < axis; d++) start += s->group[d];
    int64_t size = 1;
    for (int32_t i = start; i < start + s->group[axis]; i++) size *= s->dims[i];
    if (at < 0) at += size;
    if (at < 0 || at >= size) return false;
    for (int32_t i = start + s->group[axis] - 1; i >= start; i--) s->off += (at % s->dims[i]) * s->strides[i], at /= s->dims[i];
    sview o = *s;
    o.n = 0, o.ndim = 0;
    int32_t k = 0;
    for (int32_t d = 0; d < s->ndim; d++) {
        if (d == axis) {
            k += s->group[d];
            if (scalar) continue;
            o.dims[o.n] = 1, o.strides[o.n] = 0, o.n++, o.group[o.ndim++] = 1;
            continue;
        }
        for (int32_t i = 0; i < s->group[d]; i++, k++) o.dims[o.n] = s->dims[k], o.strides[o.n] = s->strides[k], o.n++;
        o.group[o.ndim++] = s->group[d];
    }
    *s = o;
    return true;
}

/* A Gather of one constant index: its axis, index and whether the index is a scalar. */
static bool gather_one(const gaio_engine *e, const mnode *n, int32_t *axis, int64_t *at, bool *scalar) {
    const mgraph *g = &e->model->g;
    if (n->nin < 2 || n->in[1] < 0 || n->in[1] >= g->nvalues) return false;
    const mvalue *iv = &g->values[n->in[1]];
    int64_t cnt = 1;
    for (int32_t d = 0; d < iv->ndim; d++) cnt *= iv->dims[d];
    if (!iv->data || cnt != 1 || iv->ndim > 1 || (iv->elem != MT_I64 && iv->elem != MT_I32)) return false;
    const int32_t rank = e->v[n->in[0]].ndim;
    *axis = (int32_t)(n->a.axis < 0 ? n->a.axis + rank : n->a.axis);
    *at = iv->elem == MT_I64 ? *(const int64_t *)iv->data : *(const int32_t *)iv->data;
    *scalar = iv->ndim == 0;
    return true;
}

/* Steps that only move their first input's elements: their output can be a view. */
static bool moves_only(const gaio_engine *e, const xstep *sp) {
    const mnode *n = sp->n;
    if (sp->out != n->out[0] || sp->gelu || n->nin < 1 || n->in[0] < 0) return false;
    if (e->v[n->in[0]].dtype != e->v[sp->out].dtype) return false;
    int32_t axis;
    int64_t at;
    bool scalar;
    switch (n->op) {
    case OP_IDENTITY: case OP_DROPOUT: case OP_FLATTEN: case OP_RESHAPE: case OP_SQUEEZE: case OP_UNSQUEEZE:
    case OP_TRANSPOSE: return true;
    case OP_GATHER: return gather_one(e, n, &axis, &at, &scalar);
    default: return false;
    }
}

/* sp's output described from its input's description s. */
static bool sv_step(const gaio_engine *e, const xstep *sp, sview *s) {
    const mnode *n = sp->n;
    const xvalue *y = &e->v[sp->out];
    bool ok;
    if (n->op == OP_TRANSPOSE) {
        ok = sv_transpose(s, n->a.perm, n->a.nperm);
    } else if (n->op == OP_GATHER) {
        int32_t axis;
        int64_t at;
        bool scalar;
        ok = gather_one(e, n, &axis, &at, &scalar) && sv_gather(s, axis, at, scalar);
    } else {
        ok = sv_reshape(s, y->ndim, y->dims);
    }
    if (!ok || s->ndim != y->ndim) return false;
    /* the logical shape must come out as the value's */
    int32_t k = 0;
    for (int32_t d = 0; d < s->ndim; d++) {
        int64_t size = 1;
        for (int32_t i = 0; i < s->group[d]; i++) size *= s->dims[k++];
        if (size != y->dims[d]) return false;
    }
    return true;
}

/* Which operand of attention step sp the value in slot j is: 0 q, 1 k, 2 v, else -1. */
static int operand_of(const xstep *sp, int32_t j) {
    const mnode *n = sp->n;
    if (j == n->nin + 3 || (j == 0 && sp->x < 0)) return 0;
    if (j == n->nin) return 1;
    if (j == n->nin + 2) return 2;
    return -1;
}

/* The leading physical dimensions (sizes, 1s left out) of value v as attention reads
 * it: a view's, or its own leading dimensions. */
static int32_t lead_of(const gaio_engine *e, int32_t v, const sview *s, int64_t *lead) {
    int32_t cnt = 0;
    if (s) {
        int32_t k = 0;
        for (int32_t d = 0; d + 2 < s->ndim; d++)
            for (int32_t i = 0; i < s->group[d]; i++, k++)
                if (s->dims[k] != 1) {
                    if (cnt == 4) return 5;
                    lead[cnt++] = s->dims[k];
                }
        return cnt;
    }
    const xvalue *x = &e->v[v];
    for (int32_t d = 0; d + 2 < x->ndim; d++)
        if (x->dims[d] != 1) {
            if (cnt == 4) return 5;
            lead[cnt++] = x->dims[d];
        }
    return cnt;
}

/* The operand's view fits gaio_attention: [lead (<= 2 physical), L, D] with D packed
 * and every other stride, and the offset, whole 16-byte vectors. */
static bool fits_attention(const gaio_engine *e, const sview *s, gaio_dtype dt) {
    if (s->ndim < 2 || s->ndim > 4 || s->group[s->ndim - 1] != 1 || s->group[s->ndim - 2] != 1) return false;
    if (s->strides[s->n - 1] != 1 && s->dims[s->n - 1] != 1) return false;
    int64_t lead[5];
    if (lead_of(e, -1, s, lead) > 2 || s->n > GAIO_TENSOR_MAX_NDIM) return false;
    const int64_t vec = 16 / (int64_t)gaio_dtype_size(dt);
    if (s->off % vec != 0) return false;
    for (int32_t i = 0; i + 1 < s->n; i++)
        if (s->dims[i] != 1 && s->strides[i] % vec != 0) return false;
    return true;
}

/* Leading dimensions that attention's kernels can line up (exec.c splits a single
 * leading dimension as the other operands split it): equal, or one of them a single
 * dimension of the same product. */
static bool leads_agree(const int64_t *a, int32_t na, const int64_t *b, int32_t nb) {
    int64_t pa = 1, pb = 1;
    for (int32_t i = 0; i < na; i++) pa *= a[i];
    for (int32_t i = 0; i < nb; i++) pb *= b[i];
    if (pa != pb) return false;
    if (na == nb) return na <= 1 || !memcmp(a, b, (size_t)na * sizeof *a);
    return na <= 1 || nb <= 1;
}

/* A value in packed row-major arena memory of its own or its root's, from the start. */
static bool plain(const gaio_engine *e, int32_t v) {
    const xvalue *x = &e->v[v], *rx = &e->v[x->root];
    return !x->nhwc && !x->cpitch && !x->vndim && rx->mem == XM_ARENA && !rx->nhwc && !rx->vndim;
}

typedef struct vstate {
    gaio_engine *e;
    int32_t *producer; /* step index writing each value, or -1 */
    bool *cand;        /* a strided view (so far) */
    bool *have;        /* sv[v] composed */
    sview *sv;
    int32_t *root;     /* the memory a candidate's description is over */
    sview *base;       /* a product's rows in another order (rows_in): its description, when based[v] */
    bool *based;
} vstate;

/* One round: candidates whose readers are not all candidates' steps or attention
 * operands dropped, the rest composed; true when nothing changed. */
static bool settle(vstate *st) {
    gaio_engine *e = st->e;
    bool stable = true;
    for (int32_t i = 0; i < e->plan.nsteps; i++) {
        const xstep *sp = &e->plan.steps[i];
        for (int32_t j = 0; j < sp->n->nin + GAIO__STEP_SLOTS; j++) {
            const int32_t u = gaio__step_value(sp, j);
            if (u < 0 || !st->cand[u]) continue;
            bool ok = sp->attention ? operand_of(sp, j) >= 0 : j == 0 && moves_only(e, sp) && st->cand[sp->out];
            if (!ok) st->cand[u] = false, stable = false;
        }
    }
    memset(st->have, 0, (size_t)e->nv * sizeof *st->have);
    for (int32_t i = 0; i < e->plan.nsteps; i++) {
        const xstep *sp = &e->plan.steps[i];
        const int32_t y = sp->out;
        if (!st->cand[y]) continue;
        const int32_t u = sp->n->in[0];
        sview s;
        if (st->have[u]) {
            s = st->sv[u], st->root[y] = st->root[u];
        } else {
            if (st->cand[u] || !plain(e, u)) {
                st->cand[y] = false, stable = false;
                continue;
            }
            if (st->based[u])
                s = st->base[u];
            else
                sv_packed(&e->v[u], &s);
            st->root[y] = e->v[u].root;
        }
        if (!sv_step(e, sp, &s) || s.n > GAIO_TENSOR_MAX_NDIM) {
            st->cand[y] = false, stable = false;
            continue;
        }
        st->sv[y] = s, st->have[y] = true;
    }
    /* What attention reads must fit its kernel, and its operands' leading dimensions
     * line up. */
    for (int32_t i = 0; i < e->plan.nsteps; i++) {
        const xstep *sp = &e->plan.steps[i];
        if (!sp->attention) continue;
        const int32_t ops[4] = {sp->x >= 0 ? sp->x : sp->n->in[0], sp->w, sp->res, sp->out};
        int64_t lead[4][5];
        int32_t nl[4];
        bool ok = true;
        for (int k = 0; k < 4; k++) {
            const bool view = k < 3 && st->cand[ops[k]] && st->have[ops[k]];
            if (view && !fits_attention(e, &st->sv[ops[k]], e->v[ops[k]].dtype)) ok = false;
            nl[k] = lead_of(e, ops[k], view ? &st->sv[ops[k]] : NULL, lead[k]);
        }
        for (int k = 0; k < 4 && ok; k++)
            for (int m = k + 1; m < 4 && ok; m++) ok = nl[k] <= 2 && nl[m] <= 2 && leads_agree(lead[k], nl[k], lead[m], nl[m]);
        for (int k = 0; k < 3 && !ok; k++)
            if (st->cand[ops[k]]) st->cand[ops[k]] = false, stable = false;
    }
    return stable;
}

/* Attention step sp's output, read by one Transpose alone, written in that Transpose's
 * output's order: the Transpose then runs nothing. */
static void output_view(gaio_engine *e, const xstep *sp, const int32_t *readers, const int32_t *reader) {
    const mgraph *g = &e->model->g;
    const int32_t y = sp->out;
    if (readers[y] != 1) return;
    for (int32_t i = 0; i < g->noutputs; i++)
        if (g->outputs[i] == y) return;
    const xstep *tp = &e->plan.steps[reader[y]];
    xvalue *xy = &e->v[y], *xt = &e->v[tp->out];
    if (tp->n->op != OP_TRANSPOSE || tp->n->in[0] != y || tp->out != tp->n->out[0] || xy->root != y ||
        xy->mem != XM_ARENA || xy->nhwc || xt->root != tp->out || xt->mem != XM_ARENA || xt->nhwc || xt->cpitch ||
        xt->dtype != xy->dtype || tp->n->a.nperm != xt->ndim)
        return;
    int64_t inv[MAXD];
    for (int32_t d = 0; d < xt->ndim; d++) inv[tp->n->a.perm[d]] = d;
    sview s;
    sv_packed(xt, &s);
    if (!sv_transpose(&s, inv, xt->ndim) || !fits_attention(e, &s, xy->dtype)) return;
    for (int32_t d = 0; d < xy->ndim; d++)
        if (s.group[d] != 1 || s.dims[d] != xy->dims[d]) return;
    xy->root = tp->out, xy->mem = XM_NONE, xy->vndim = s.n, xy->voff = s.off;
    memcpy(xy->vdims, s.dims, (size_t)s.n * sizeof *s.dims);
    memcpy(xy->vstrides, s.strides, (size_t)s.n * sizeof *s.strides);
    snprintf(e->kernel[reader[y]], GAIO_ENGINE_KERNEL_TEXT, "none: attention wrote its input in this order");
}

/* The one step reading value v, or -1 (none, several, or a graph output). */
static int32_t sole_reader(const gaio_engine *e, const int32_t *readers, const int32_t *reader, int32_t v) {
    const mgraph *g = &e->model->g;
    for (int32_t i = 0; i < g->noutputs; i++)
        if (g->outputs[i] == v) return -1;
    return readers[v] == 1 ? reader[v] : -1;
}

/* Row-wise products whose rows arrive through a Transpose (ViT: the in-projection of
 * [N, L, E] moved to [L, N, E]): the product can read the Transpose's input instead and
 * write its rows in that order, if every reader of its output is a strided view that
 * knows (settle composes from base[]). Candidates in *m: the MatMul step per output
 * value (-1: none). */
static void rows_in(vstate *st, const int32_t *readers, const int32_t *reader, int32_t *m) {
    gaio_engine *e = st->e;
    for (int32_t i = 0; i < e->plan.nsteps; i++) {
        const xstep *sp = &e->plan.steps[i];
        const mnode *n = sp->n;
        if (n->op != OP_MATMUL || sp->attention || sp->x >= 0 || sp->res >= 0 || n->nin != 2) continue;
        const int32_t a = n->in[0], b = sp->w >= 0 ? sp->w : n->in[1], pv = sp->out;
        const int32_t t = st->producer[a];
        if (t < 0 || e->v[b].ndim != 2 || sole_reader(e, readers, reader, a) != i || !plain(e, pv)) continue;
        const xstep *tp = &e->plan.steps[t];
        const int32_t r = e->v[a].ndim, src = tp->n->in[0];
        const xvalue *xs = &e->v[src], *rs = &e->v[xs->root];
        const bool callers = rs->input >= 0 && rs->mem == XM_NONE && !rs->nhwc && !xs->nhwc && !xs->vndim; /* read in place */
        if (tp->n->op != OP_TRANSPOSE || tp->n->a.nperm != r || r < 3 || tp->n->a.perm[r - 1] != r - 1 ||
            !(plain(e, src) || callers) || xs->dtype != e->v[a].dtype || e->v[pv].ndim != r)
            continue;
        /* the product's memory: src's rows, each of the output's width; then read in a's order */
        xvalue phys = e->v[src];
        phys.dims[r - 1] = e->v[pv].dims[r - 1];
        sview d;
        sv_packed(&phys, &d);
        if (!sv_transpose(&d, tp->n->a.perm, r)) continue;
        bool same = true;
        for (int32_t k = 0; k < r; k++) same = same && d.group[k] == 1 && d.dims[k] == e->v[pv].dims[k];
        if (!same) continue;
        st->base[pv] = d, st->based[pv] = true, m[pv] = i;
    }
}

/* Whether every reader of value v is a strided view (a candidate's step). */
static bool read_as_views(const vstate *st, int32_t v) {
    const gaio_engine *e = st->e;
    for (int32_t i = 0; i < e->plan.nsteps; i++) {
        const xstep *sp = &e->plan.steps[i];
        for (int32_t j = 0; j < sp->n->nin + GAIO__STEP_SLOTS; j++)
            if (gaio__step_value(sp, j) == v && !(j == 0 && moves_only(e, sp) && st->cand[sp->out] && st->have[sp->out]))
                return false;
    }
    return true;
}

/* rows_in's products whose readers all stayed views: the product reads the Transpose's
 * input (its A source, sp->x), the Transpose's output becomes a view of that input
 * nobody reads. */
static void apply_rows_in(vstate *st, const int32_t *m) {
    gaio_engine *e = st->e;
    for (int32_t v = 0; v < e->nv; v++) {
        if (m[v] < 0 || !st->based[v]) continue;
        xstep *sp = &e->plan.steps[m[v]];
        const int32_t a = sp->n->in[0], t = st->producer[a], src = e->plan.steps[t].n->in[0];
        xvalue *xa = &e->v[a];
        sview d;
        sv_packed(&e->v[src], &d);
        if (!sv_transpose(&d, e->plan.steps[t].n->a.perm, xa->ndim) || d.n > GAIO_TENSOR_MAX_NDIM) continue;
        sp->x = src;
        xa->root = e->v[src].root, xa->mem = XM_NONE, xa->nhwc = false, xa->vndim = d.n, xa->voff = d.off;
        memcpy(xa->vdims, d.dims, (size_t)d.n * sizeof *d.dims);
        memcpy(xa->vstrides, d.strides, (size_t)d.n * sizeof *d.strides);
        e->copy[t] = false;
        snprintf(e->kernel[t], GAIO_ENGINE_KERNEL_TEXT, "none: the product after it reads its input");
        snprintf(e->kernel[m[v]], GAIO_ENGINE_KERNEL_TEXT, "rows in its input's order (strided views read them)");
    }
}

/* After attention writes its output into the Transpose after it (output_view): that
 * Transpose's output T, merged to rows by a Reshape, multiplied by a constant
 * (the out-projection), split again by a Reshape and transposed back (ViT: [L, N, E]
 * rows to [N, L, E]). Attention writes T's rows in the final Transpose's order
 * instead: the product then writes its rows in that order, and the final Transpose's
 * output is the product's memory as it is. */
static void rows_out(gaio_engine *e, const xstep *as, const int32_t *readers, const int32_t *reader) {
    const int32_t y = as->out;
    xvalue *xy = &e->v[y];
    if (xy->vndim == 0) return;
    const int32_t t6 = reader[y], tv = e->plan.steps[t6].out;
    const int32_t r9 = sole_reader(e, readers, reader, tv);
    if (r9 < 0 || e->plan.steps[r9].n->op != OP_RESHAPE || e->plan.steps[r9].n->in[0] != tv) return;
    const int32_t rv = e->plan.steps[r9].out;
    const int32_t m2 = sole_reader(e, readers, reader, rv);
    if (m2 < 0) return;
    const xstep *mp = &e->plan.steps[m2];
    if ((mp->n->op != OP_MATMUL && mp->n->op != OP_GEMM) || mp->attention || mp->n->in[0] != rv || mp->x >= 0 ||
        mp->res >= 0 || (mp->n->op == OP_GEMM && mp->n->a.trans_a))
        return;
    const int32_t mv = mp->out, r10 = sole_reader(e, readers, reader, mv);
    if (r10 < 0 || e->plan.steps[r10].n->op != OP_RESHAPE || e->plan.steps[r10].n->in[0] != mv) return;
    const int32_t qv = e->plan.steps[r10].out, tf = sole_reader(e, readers, reader, qv);
    if (tf < 0 || e->plan.steps[tf].n->op != OP_TRANSPOSE || e->plan.steps[tf].n->in[0] != qv) return;
    const int32_t fv = e->plan.steps[tf].out;
    const xvalue *T = &e->v[tv], *R = &e->v[rv], *M = &e->v[mv], *Q = &e->v[qv], *F = &e->v[fv];
    if (!plain(e, tv) || T->root != tv || R->root != tv || R->ndim != 2 || !plain(e, mv) || M->root != mv ||
        Q->root != mv || Q->nhwc || F->root != fv || F->mem != XM_ARENA || F->nhwc || F->cpitch || F->dtype != M->dtype)
        return;
    /* T's rows: its first s dimensions, those Q has before its columns */
    const int32_t s = Q->ndim - 1, nperm = e->plan.steps[tf].n->a.nperm;
    const int64_t *pf = e->plan.steps[tf].n->a.perm;
    if (s < 1 || s >= T->ndim || nperm != Q->ndim || pf[s] != s) return;
    int64_t rows = 1, cols = 1;
    for (int32_t d = 0; d < s; d++) {
        if (T->dims[d] != Q->dims[d]) return;
        rows *= T->dims[d];
    }
    for (int32_t d = s; d < T->ndim; d++) cols *= T->dims[d];
    if (R->dims[0] != rows || R->dims[1] != cols) return;
    /* T's strides with its rows in the order F lists them */
    int64_t ts[GAIO_MODEL_MAX_NDIM], st = cols;
    for (int32_t k = s - 1; k >= 0; k--) ts[pf[k]] = st, st *= T->dims[pf[k]];
    st = 1;
    for (int32_t d = T->ndim - 1; d >= s; d--) ts[d] = st, st *= T->dims[d];
    /* y = T through the inverse of the first Transpose's permutation */
    const mnode *t6n = e->plan.steps[t6].n;
    if (t6n->a.nperm != T->ndim || xy->ndim != T->ndim) return;
    sview v;
    memset(&v, 0, sizeof v);
    v.ndim = v.n = xy->ndim;
    for (int32_t d = 0; d < T->ndim; d++) {
        const int64_t src = t6n->a.perm[d];
        v.dims[src] = T->dims[d], v.strides[src] = ts[d], v.group[src] = 1;
    }
    sv_tidy(&v);
    for (int32_t d = 0; d < xy->ndim; d++)
        if (v.group[d] != 1 || v.dims[d] != xy->dims[d]) return;
    /* attention's operands line up as they did: the same leading dimensions */
    int64_t was[5], now[5];
    sview old;
    memset(&old, 0, sizeof old);
    old.ndim = old.n = xy->vndim;
    for (int32_t d = 0; d < xy->vndim; d++) old.dims[d] = xy->vdims[d], old.strides[d] = xy->vstrides[d], old.group[d] = 1;
    if (!fits_attention(e, &v, xy->dtype) || old.n != xy->ndim) return;
    const int32_t nw = lead_of(e, -1, &old, was), nn = lead_of(e, -1, &v, now);
    if (nw != nn || memcmp(was, now, (size_t)nn * sizeof *now)) return;
    xy->vndim = v.n, xy->voff = v.off;
    memcpy(xy->vdims, v.dims, (size_t)v.n * sizeof *v.dims);
    memcpy(xy->vstrides, v.strides, (size_t)v.n * sizeof *v.strides);
    xvalue *xf = &e->v[fv];
    xf->root = mv, xf->mem = XM_NONE;
    snprintf(e->kernel[t6], GAIO_ENGINE_KERNEL_TEXT, "none: attention wrote its rows in the final order");
    snprintf(e->kernel[m2], GAIO_ENGINE_KERNEL_TEXT, "rows in the order of the Transpose after it");
    snprintf(e->kernel[tf], GAIO_ENGINE_KERNEL_TEXT, "none: the product wrote its rows in this order");
}

void gaio__engine_attention_views(gaio_engine *e) {
    const char *env = getenv("GAIO_MODEL_VIEWS");
    if (env && !strcmp(env, "0")) return;
    bool any = false;
    for (int32_t i = 0; i < e->plan.nsteps; i++) any = any || e->plan.steps[i].attention;
    if (!any) return;
    const mgraph *g = &e->model->g;
    const size_t nv = (size_t)e->nv + 1;
    vstate st = {e, malloc(nv * sizeof(int32_t)), calloc(nv, sizeof(bool)), calloc(nv, sizeof(bool)),
                 malloc(nv * sizeof(sview)), malloc(nv * sizeof(int32_t)), malloc(nv * sizeof(sview)),
                 calloc(nv, sizeof(bool))};
    int32_t *readers = calloc(nv, sizeof(int32_t)), *reader = calloc(nv, sizeof(int32_t));
    int32_t *m = malloc(nv * sizeof(int32_t));
    if (!st.producer || !st.cand || !st.have || !st.sv || !st.root || !st.base || !st.based || !readers || !reader ||
        !m)
        goto done; /* no views */
    for (int32_t v = 0; v < e->nv; v++) st.producer[v] = -1;
    for (int32_t i = 0; i < e->plan.nsteps; i++) {
        const xstep *sp = &e->plan.steps[i];
        st.producer[sp->out] = i;
        st.cand[sp->out] = moves_only(e, sp) && (e->v[sp->out].dtype == GAIO_DTYPE_F16 || e->v[sp->out].dtype == GAIO_DTYPE_F32);
        for (int32_t j = 0; j < sp->n->nin + GAIO__STEP_SLOTS; j++) {
            const int32_t u = gaio__step_value(sp, j);
            if (u >= 0 && (readers[u] == 0 || reader[u] != i)) readers[u]++, reader[u] = i;
        }
    }
    for (int32_t i = 0; i < g->noutputs; i++) st.cand[g->outputs[i]] = false;
    for (int32_t v = 0; v < e->nv; v++) m[v] = -1;
    const char *rows = getenv("GAIO_MODEL_ROWS"); /* =0: products keep their rows' order, to compare */
    if (!(rows && !strcmp(rows, "0"))) rows_in(&st, readers, reader, m);
    for (bool again = true; again;) { /* a product whose output a reader takes whole goes back to its order */
        for (int32_t round = 0; round <= e->nv && !settle(&st); round++) {
        }
        again = false;
        for (int32_t v = 0; v < e->nv; v++)
            if (st.based[v] && !read_as_views(&st, v)) st.based[v] = false, again = true;
    }
    for (int32_t v = 0; v < e->nv; v++) {
        if (!st.cand[v] || !st.have[v]) continue;
        xvalue *x = &e->v[v];
        const sview *s = &st.sv[v];
        x->root = st.root[v], x->mem = XM_NONE, x->nhwc = false;
        x->vndim = s->n, x->voff = s->off;
        memcpy(x->vdims, s->dims, (size_t)s->n * sizeof *s->dims);
        memcpy(x->vstrides, s->strides, (size_t)s->n * sizeof *s->strides);
        const int32_t i = st.producer[v];
        e->copy[i] = false;
        snprintf(e->kernel[i], GAIO_ENGINE_KERNEL_TEXT, "none: a strided view that attention reads");
    }
    apply_rows_in(&st, m);
    for (int32_t i = 0; i < e->plan.nsteps; i++)
        if (e->plan.steps[i].attention) {
            output_view(e, &e->plan.steps[i], readers, reader);
            if (!(rows && !strcmp(rows, "0"))) rows_out(e, &e->plan.steps[i], readers, reader);
        }
done:
    free(st.producer), free(st.cand), free(st.have), free(st.sv), free(st.root), free(st.base), free(st.based);
    free(readers), free(reader), free(m);
}

bool gaio__engine_step_is_view(const gaio_engine *e, int32_t i) {
    const xstep *sp = &e->plan.steps[i];
    const xvalue *y = &e->v[sp->out];
    if (sp->n->op == OP_TRANSPOSE) {
        const xvalue *x = &e->v[sp->n->in[0]];
        if (x->vndim > 0 && x->root == y->root) return true; /* attention wrote it in place */
    }
    return !sp->attention && y->vndim > 0 && y->root != sp->out;
}
