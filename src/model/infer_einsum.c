/* Einsum, as one batched GEMM (infer_einsum.h).
 *
 * gaio takes the equations attention and its relatives write: two operands whose
 * labels are batch labels (in both operands and the output, leading all three in one
 * order), then a run of row labels m and a run of summed labels k in the first (either
 * order), k and column labels n in the second (either order), m and n in the output
 * (either order): "bhid,bhjd->bhij", "bhij,bhjd->bhid", "...qd,...kd->...qk",
 * "ij,jk->ik", "bik,bjk->bji". Each order is a transposition the GEMM does for free:
 * out = op(P) @ op(Q), with P, Q the operands, swapped when the output has n before m
 * (out^T = op(B)^T op(A)^T). Ellipses stand for batch dimensions of equal sizes. A
 * label twice in a term (a diagonal), summed over one operand only, or runs the GEMM
 * cannot read as matrices are refused naming the equation. */
#include <string.h>

#include "model/infer_einsum.h"
#include "model/ops_internal.h"

#define MAXD GAIO_MODEL_MAX_NDIM
#define ELLIPSIS 256 /* labels of an ellipsis's dimensions: ELLIPSIS + i */

typedef struct term {
    int n;
    int lab[MAXD + GAIO_MODEL_EINSUM_LABELS];
} term;

static mvalue *in_v(mgraph *g, const mnode *n, int i) { return i < n->nin && n->in[i] >= 0 ? &g->values[n->in[i]] : NULL; }

static int find(const term *t, int lab) {
    for (int i = 0; i < t->n; i++)
        if (t->lab[i] == lab) return i;
    return -1;
}

/* A term's labels with its ellipsis expanded to e dimensions (the last e of the
 * ellipses' total E, numbered from the left as numpy aligns them). */
static void expand(const char *s, int e, int total, term *t) {
    t->n = 0;
    for (; *s; s++) {
        if (*s != '.') {
            t->lab[t->n++] = (unsigned char)*s;
            continue;
        }
        for (int i = 0; i < e; i++) t->lab[t->n++] = ELLIPSIS + total - e + i;
    }
}

/* Whether t[from..] is a run of labels of class a then a run of class b (or the
 * reverse); *first_a says which came first. cls(label) is the label's class. */
static bool two_runs(const term *t, int from, const int *cls, int a, int b, bool *first_a) {
    int i = from, head = i < t->n ? cls[i] : a;
    while (i < t->n && cls[i] == head) i++;
    while (i < t->n && cls[i] == (head == a ? b : a)) i++;
    *first_a = head == a;
    return i == t->n;
}

/* The labels of class c in t's order from `from`, into run[]. */
static int run_of(const term *t, int from, const int *cls, int c, int *run) {
    int k = 0;
    for (int i = from; i < t->n; i++)
        if (cls[i] == c) run[k++] = t->lab[i];
    return k;
}

enum { C_BATCH, C_M, C_N, C_K };

/* The equation as written (spaces dropped), for messages. */
static void describe(const mattrs *at, char *eq, size_t cap) {
    size_t k = 0;
    for (int t = 0; t < at->es_nterms; t++) {
        const char *sep = t == 0 ? "" : t == 1 ? "," : "->";
        for (const char *c = sep; *c && k + 1 < cap; c++) eq[k++] = *c;
        for (const char *c = at->es_terms[t]; *c; c++)
            for (int r = 0; r < (*c == '.' ? 3 : 1) && k + 1 < cap; r++) eq[k++] = *c;
    }
    eq[k] = 0;
}

gaio_status gaio__infer_einsum(const char *fn, mgraph *g, mnode *n) {
    mattrs *at = &n->a;
    mvalue *x[2] = {in_v(g, n, 0), in_v(g, n, 1)}, *out = &g->values[n->out[0]];
    char eq[3 * (GAIO_MODEL_EINSUM_LABELS + 3) + 8];
    describe(at, eq, sizeof eq);
    for (int k = 0; k < 2; k++) {
        if (x[k]->elem != MT_F32 && x[k]->elem != MT_F16)
            return FAIL(GAIO_ERR_NOT_SUPPORTED, "input '%s' is %s; Einsum runs on float32 or float16", x[k]->name,
                        gaio__mt_name(x[k]->elem));
    }
    if (x[0]->elem != x[1]->elem)
        return FAIL(GAIO_ERR_INVALID_ARG, "inputs '%s' and '%s' differ in type (%s, %s)", x[0]->name, x[1]->name,
                    gaio__mt_name(x[0]->elem), gaio__mt_name(x[1]->elem));
    /* Ellipses: how many dimensions each stands for. */
    int e[2], total = 0;
    for (int k = 0; k < 2; k++) {
        const char *s = at->es_terms[k];
        int labels = (int)strlen(s), dots = strchr(s, '.') != NULL;
        e[k] = x[k]->ndim - (labels - dots);
        if (e[k] < 0 || (!dots && e[k] != 0))
            return FAIL(GAIO_ERR_INVALID_ARG, "equation '%s': term %d has %d labels; input '%s' has rank %d", eq, k,
                        labels - dots, x[k]->name, x[k]->ndim);
        if (e[k] > total) total = e[k];
    }
    term t[3];
    for (int k = 0; k < 2; k++) expand(at->es_terms[k], e[k], total, &t[k]);
    if (at->es_nterms == 3) {
        if (strchr(at->es_terms[2], '.') == NULL && total)
            return FAIL(GAIO_ERR_NOT_SUPPORTED, "equation '%s': an output without the inputs' ellipsis (a sum over "
                        "it)", eq);
        expand(at->es_terms[2], total, total, &t[2]);
    } else { /* implicit: the ellipsis, then the labels seen once, in alphabetical order */
        t[2].n = 0;
        for (int i = 0; i < total; i++) t[2].lab[t[2].n++] = ELLIPSIS + i;
        for (int c = 'A'; c <= 'z'; c++)
            if ((find(&t[0], c) >= 0) + (find(&t[1], c) >= 0) == 1) t[2].lab[t[2].n++] = c;
    }
    if (t[2].n > MAXD) return FAIL(GAIO_ERR_NOT_SUPPORTED, "equation '%s': an output of rank %d, above gaio's %d", eq, t[2].n, MAXD);
    /* Each label once per term; each one's size the same wherever it appears. */
    int64_t size[ELLIPSIS + MAXD];
    const char *name[ELLIPSIS + MAXD];
    for (int i = 0; i < ELLIPSIS + MAXD; i++) size[i] = -2, name[i] = "";
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < t[k].n; i++)
            for (int j = i + 1; j < t[k].n; j++)
                if (t[k].lab[i] == t[k].lab[j])
                    return FAIL(GAIO_ERR_NOT_SUPPORTED, "equation '%s': label '%c' twice in a term (a diagonal)", eq,
                                t[k].lab[i] < ELLIPSIS ? t[k].lab[i] : '.');
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < t[k].n; i++) {
            int l = t[k].lab[i];
            int64_t d = x[k]->dims[i];
            if (size[l] == -2) {
                size[l] = d, name[l] = x[k]->dim_names[i] ? x[k]->dim_names[i] : "";
            } else if (size[l] != d || (d < 0 && strcmp(name[l], x[k]->dim_names[i] ? x[k]->dim_names[i] : ""))) {
                return FAIL(GAIO_ERR_NOT_SUPPORTED, "equation '%s': label '%c' has sizes %lld and %lld (gaio "
                            "broadcasts no Einsum dimension)", eq, l < ELLIPSIS ? l : '.', (long long)size[l],
                            (long long)d);
            }
        }
    /* Classes: batch (both inputs and the output), m, n, k. */
    int cls[3][MAXD + GAIO_MODEL_EINSUM_LABELS];
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < t[k].n; i++) {
            int l = t[k].lab[i];
            bool in0 = find(&t[0], l) >= 0, in1 = find(&t[1], l) >= 0, o = find(&t[2], l) >= 0;
            if (!in0 && !in1)
                return FAIL(GAIO_ERR_INVALID_ARG, "equation '%s': output label '%c' is in no input", eq, l);
            if (!o && !(in0 && in1))
                return FAIL(GAIO_ERR_NOT_SUPPORTED, "equation '%s': label '%c' is summed over one input only", eq,
                            l < ELLIPSIS ? l : '.');
            cls[k][i] = in0 && in1 ? (o ? C_BATCH : C_K) : in0 ? C_M : C_N;
        }
    /* The batch labels lead every term, in one order. */
    int nb = 0;
    while (nb < t[2].n && cls[2][nb] == C_BATCH) nb++;
    for (int k = 0; k < 3; k++) {
        int seen = 0;
        for (int i = 0; i < t[k].n; i++) seen += cls[k][i] == C_BATCH;
        bool lead = seen == nb;
        for (int i = 0; i < nb && lead; i++) lead = t[k].lab[i] == t[2].lab[i];
        if (!lead)
            return FAIL(GAIO_ERR_NOT_SUPPORTED, "equation '%s': the labels of both inputs and the output must lead "
                        "each term in one order (one batched matrix product)", eq);
    }
    bool a_mk, b_kn, o_mn;
    if (!two_runs(&t[0], nb, cls[0], C_M, C_K, &a_mk) || !two_runs(&t[1], nb, cls[1], C_K, C_N, &b_kn) ||
        !two_runs(&t[2], nb, cls[2], C_M, C_N, &o_mn))
        return FAIL(GAIO_ERR_NOT_SUPPORTED, "equation '%s': the labels after the batch ones must form two runs per "
                    "term (rows and summed, summed and columns, rows and columns)", eq);
    int r1[MAXD + GAIO_MODEL_EINSUM_LABELS], r2[MAXD + GAIO_MODEL_EINSUM_LABELS];
    static const char *const what[4] = {"", "row", "column", "summed"};
    const int pairs[3][3] = {{C_K, 0, 1}, {C_M, 0, 2}, {C_N, 1, 2}}; /* a class, the two terms holding it */
    for (int p = 0; p < 3; p++) {
        int c = pairs[p][0], k1 = pairs[p][1], k2 = pairs[p][2];
        int c1 = run_of(&t[k1], nb, cls[k1], c, r1), c2 = run_of(&t[k2], nb, cls[k2], c, r2);
        if (c1 != c2 || memcmp(r1, r2, (size_t)c1 * sizeof *r1))
            return FAIL(GAIO_ERR_NOT_SUPPORTED, "equation '%s': the %s labels come in different orders", eq, what[c]);
    }
    int64_t mnk[4] = {1, 1, 1, 1};
    for (int k = 0; k < 2; k++)
        for (int i = nb; i < t[k].n; i++) {
            int64_t d = x[k]->dims[i];
            if (d < 0)
                return FAIL(GAIO_ERR_NOT_SUPPORTED, "equation '%s': a symbolic %s dimension ('%s' of input '%s')", eq,
                            what[cls[k][i]], name[t[k].lab[i]], x[k]->name);
            if (cls[k][i] != C_K || k == 0) mnk[cls[k][i]] *= d;
        }
    int64_t M = mnk[C_M], N = mnk[C_N], K = mnk[C_K];
    /* The stored matrices: A [M, K] or [K, M] (trans), B [K, N] or [N, K]. */
    bool ta = !a_mk, tb = !b_kn;
    int64_t ra = ta ? K : M, ca = ta ? M : K, rb = tb ? N : K, cb = tb ? K : N;
    at->es_batch = nb;
    at->es_swap = !o_mn;
    if (!at->es_swap) {
        at->es_trans_p = ta, at->es_trans_q = tb;
        at->es_rows_p = ra, at->es_cols_p = ca, at->es_rows_q = rb, at->es_cols_q = cb;
    } else {
        at->es_trans_p = !tb, at->es_trans_q = !ta;
        at->es_rows_p = rb, at->es_cols_p = cb, at->es_rows_q = ra, at->es_cols_q = ca;
    }
    out->elem = x[0]->elem;
    out->ndim = t[2].n;
    for (int i = 0; i < t[2].n; i++) {
        int l = t[2].lab[i];
        out->dims[i] = size[l], out->dim_names[i] = size[l] < 0 ? name[l] : "";
    }
    return GAIO_OK;
}
