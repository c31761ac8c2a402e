/* gaio_norm on each backend against direct double-precision loops: LayerNorm over
 * every axis of 1-D to 5-D tensors (scale and bias of the normalized shape, broadcast
 * from 1s, absent), GroupNorm with per-channel and per-group parameters, InstanceNorm;
 * packed NCHW, NHWC and gapped strides on x and y independently, f32 and f16 data with
 * f32 or f16 parameters, in place, the statistics outputs (with and without y), inputs
 * far from 0 (the two-pass variance), and shapes that take each of the CUDA kernel's
 * work splits (a warp's registers, a warp, a block, a thread per set: the channels-last
 * LayerNorm of ConvNeXt and InstanceNorm of an NHWC tensor); then bad input. */
#include "dnn/strided_tensor.h"

/* ---- cases ---- */

typedef struct ncase {
    gaio_norm_kind kind;
    int32_t axis, groups;
    float epsilon;
    gaio_dtype dt, pdt, sdt; /* x and y; scale and bias; mean and inv_std_dev */
    int32_t nd;
    int64_t shape[5];
    mem_kind kx, ky;
    bool in_place, no_y;
    int32_t snd, bnd; /* 0: no scale / bias */
    int64_t sshape[5], bshape[5];
    bool mean, rstd;
    int32_t ones; /* trailing 1s of the statistics' shape */
    float shift, spread;
} ncase;

static int64_t count_of(int32_t nd, const int64_t *shape) {
    int64_t n = 1;
    for (int i = 0; i < nd; i++) n *= shape[i];
    return n;
}

static void unravel(int64_t k, int32_t nd, const int64_t *shape, int64_t *idx) {
    for (int i = nd - 1; i >= 0; i--) idx[i] = k % shape[i], k /= shape[i];
}

/* The value of parameter p (scale or bias, nd dims) for x's element idx. */
static double param_at(const ncase *c, const htensor *p, int32_t pnd, const int64_t *idx) {
    int64_t pi[5] = {0};
    if (c->kind == GAIO_NORM_LAYER) {
        for (int j = 0; j < pnd; j++) pi[j] = p->shape[j] == 1 ? 0 : idx[c->nd - pnd + j];
    } else {
        int64_t C = c->shape[1], G = c->kind == GAIO_NORM_INSTANCE ? C : c->groups;
        pi[0] = p->shape[0] == C ? idx[1] : idx[1] / (C / G);
    }
    return p->v[offset_of(p, pi)];
}

static void describe(const ncase *c, char *out, size_t size) {
    static const char *const kinds[] = {"layer", "group", "instance"};
    static const char *const mems[] = {"packed", "nhwc", "gaps", "nhwc+gaps"};
    int n = snprintf(out, size, "%s %s x [", kinds[c->kind], gaio_dtype_name(c->dt));
    for (int i = 0; i < c->nd; i++) n += snprintf(out + n, size - (size_t)n, "%s%lld", i ? "," : "", (long long)c->shape[i]);
    snprintf(out + n, size - (size_t)n, "] axis %d groups %d x %s y %s%s%s scale %dd bias %dd %s%s", c->axis, c->groups,
             mems[c->kx], mems[c->ky], c->in_place ? " in place" : "", c->no_y ? " no y" : "", c->snd, c->bnd,
             c->mean ? "mean " : "", c->rstd ? "rstd" : "");
}

static void norm_case(env *e, const ncase *c) {
    char what[256], where[320];
    describe(c, what, sizeof what);
    const int32_t nd = c->nd;
    const bool layer = c->kind == GAIO_NORM_LAYER;
    const int32_t axis = c->axis < 0 ? c->axis + nd : c->axis;
    const int64_t C = nd > 1 ? c->shape[1] : 1, G = c->kind == GAIO_NORM_INSTANCE ? C : c->groups;
    /* The sets' shape. */
    int32_t lead = layer ? axis : 2;
    int64_t sets_shape[5] = {1, 1, 1, 1, 1};
    for (int i = 0; i < lead; i++) sets_shape[i] = layer ? c->shape[i] : i == 0 ? c->shape[0] : G;
    const int64_t sets = count_of(lead, sets_shape), total = count_of(nd, c->shape), per = total / sets;

    htensor x, y, s, b, m, r;
    make(e, &x, c->dt, nd, c->shape, c->kx, c->shift, c->spread);
    if (!c->in_place && !c->no_y) make(e, &y, c->dt, nd, c->shape, c->ky, 0, 1);
    const htensor *out = c->in_place ? &x : &y;
    if (c->snd) make(e, &s, c->pdt, c->snd, c->sshape, (test_rand(&e->rng) & 1) ? MEM_GAPS : MEM_PACKED, 0, 2);
    if (c->bnd) make(e, &b, c->pdt, c->bnd, c->bshape, (test_rand(&e->rng) & 1) ? MEM_GAPS : MEM_PACKED, 0, 1);
    int32_t snd = lead + c->ones;
    if (snd == 0) snd = 1;
    if (c->mean) make(e, &m, c->sdt, snd, sets_shape, (test_rand(&e->rng) & 1) ? MEM_GAPS : MEM_PACKED, 0, 1);
    if (c->rstd) make(e, &r, c->sdt, snd, sets_shape, (test_rand(&e->rng) & 1) ? MEM_GAPS : MEM_PACKED, 0, 1);
    gaio_norm_params p = {c->kind, c->axis, c->groups, c->epsilon};
    OK(gaio_norm(e->s, &x.t, c->snd ? &s.t : NULL, c->bnd ? &b.t : NULL, c->no_y ? NULL : &out->t,
                 c->mean ? &m.t : NULL, c->rstd ? &r.t : NULL, &p));
    float *got = c->no_y ? NULL : download(e, out);
    float *gm = c->mean ? download(e, &m) : NULL, *gr = c->rstd ? download(e, &r) : NULL;

    /* The reference: each element's set, the sets' sums, then their squared deviations. */
    double *sum = calloc((size_t)sets, sizeof(double)), *sq = calloc((size_t)sets, sizeof(double));
    int64_t *set_of = malloc((size_t)total * sizeof(int64_t));
    CHECK(sum && sq && set_of);
    int64_t idx[5];
    for (int64_t k = 0; k < total; k++) {
        unravel(k, nd, c->shape, idx);
        int64_t st = 0;
        if (layer)
            for (int i = 0; i < axis; i++) st = st * c->shape[i] + idx[i];
        else
            st = idx[0] * G + idx[1] / (C / G);
        set_of[k] = st;
        sum[st] += x.v[offset_of(&x, idx)];
    }
    for (int64_t k = 0; k < total; k++) {
        unravel(k, nd, c->shape, idx);
        double d = x.v[offset_of(&x, idx)] - sum[set_of[k]] / (double)per;
        sq[set_of[k]] += d * d;
    }
    const bool h = c->dt == F16;
    for (int64_t k = 0; k < total && got; k++) {
        unravel(k, nd, c->shape, idx);
        int64_t st = set_of[k];
        double mean = sum[st] / (double)per, rstd = 1.0 / sqrt(sq[st] / (double)per + c->epsilon);
        double sv = c->snd ? param_at(c, &s, c->snd, idx) : 1.0, bv = c->bnd ? param_at(c, &b, c->bnd, idx) : 0.0;
        double want = (x.v[offset_of(&x, idx)] - mean) * rstd * sv + bv;
        /* f32 sums on a GPU: a few ulp of the inputs' magnitude, through rstd and the
         * scale; f16: the output's rounding too. */
        double mag = (fabs(mean) + c->spread) * rstd * fabs(sv);
        double tol = 2e-5 * (1 + fabs(want)) + 1e-6 * mag + (h ? 1e-3 * fabs(want) + 1e-3 : 0);
        snprintf(where, sizeof where, "%s: y elem %lld (set %lld)", what, (long long)k, (long long)st);
        report("norm", where, got[offset_of(out, idx)], want, tol);
    }
    for (int64_t st = 0; st < sets; st++) {
        int64_t si[5] = {0};
        unravel(st, lead, sets_shape, si);
        double mean = sum[st] / (double)per, rstd = 1.0 / sqrt(sq[st] / (double)per + c->epsilon);
        bool hs = c->sdt == F16;
        snprintf(where, sizeof where, "%s: set %lld", what, (long long)st);
        if (gm) report("norm mean", where, gm[offset_of(&m, si)], mean, 1e-6 * (fabs(mean) + c->spread) + (hs ? 1e-3 * fabs(mean) : 0));
        if (gr) report("norm inv_std_dev", where, gr[offset_of(&r, si)], rstd, (hs ? 1e-3 : 1e-4) * rstd);
    }
    if (got && !c->in_place) check_gaps(&y, got);
    if (gm) check_gaps(&m, gm);
    if (gr) check_gaps(&r, gr);
    free(sum), free(sq), free(set_of), free(got), free(gm), free(gr);
    drop(&x);
    if (!c->in_place && !c->no_y) drop(&y);
    if (c->snd) drop(&s);
    if (c->bnd) drop(&b);
    if (c->mean) drop(&m);
    if (c->rstd) drop(&r);
}

static uint64_t pick(env *e, uint64_t n) { return test_rand(&e->rng) % n; }

/* A LayerNorm of x [shape] over axis with a full scale and bias. */
static ncase layer(gaio_dtype dt, int32_t nd, const int64_t *shape, int32_t axis, mem_kind kx, mem_kind ky) {
    ncase c;
    memset(&c, 0, sizeof c);
    c.kind = GAIO_NORM_LAYER, c.axis = axis, c.epsilon = 1e-5f, c.dt = c.pdt = c.sdt = dt, c.nd = nd;
    for (int i = 0; i < nd; i++) c.shape[i] = shape[i];
    c.kx = kx, c.ky = ky;
    int32_t a = axis < 0 ? axis + nd : axis;
    c.snd = c.bnd = nd - a;
    for (int i = a; i < nd; i++) c.sshape[i - a] = c.bshape[i - a] = shape[i];
    c.spread = 1;
    return c;
}

/* A GroupNorm (groups 0: InstanceNorm) with per-channel scale and bias. */
static ncase group(gaio_dtype dt, int32_t nd, const int64_t *shape, int32_t groups, mem_kind kx, mem_kind ky) {
    ncase c;
    memset(&c, 0, sizeof c);
    c.kind = groups ? GAIO_NORM_GROUP : GAIO_NORM_INSTANCE, c.groups = groups, c.epsilon = 1e-5f;
    c.dt = c.pdt = c.sdt = dt, c.nd = nd;
    for (int i = 0; i < nd; i++) c.shape[i] = shape[i];
    c.kx = kx, c.ky = ky;
    c.snd = c.bnd = 1, c.sshape[0] = c.bshape[0] = shape[1];
    c.spread = 1;
    return c;
}

static void random_case(env *e) {
    ncase c;
    memset(&c, 0, sizeof c);
    c.kind = (gaio_norm_kind)pick(e, 3);
    bool layer_kind = c.kind == GAIO_NORM_LAYER;
    c.nd = layer_kind ? 1 + (int32_t)pick(e, 5) : 2 + (int32_t)pick(e, 4);
    for (int i = 0; i < c.nd; i++) c.shape[i] = 1 + (int64_t)pick(e, 6);
    if (c.kind == GAIO_NORM_GROUP) {
        c.groups = 1 + (int32_t)pick(e, 4);
        c.shape[1] = c.groups * (1 + (int64_t)pick(e, 4));
    }
    c.axis = layer_kind ? (int32_t)pick(e, (uint64_t)(2 * c.nd)) - c.nd : 0;
    c.epsilon = pick(e, 2) ? 1e-5f : 0.1f;
    c.dt = pick(e, 2) ? F16 : F32;
    c.pdt = pick(e, 2) ? F32 : c.dt, c.sdt = pick(e, 2) ? F32 : c.dt;
    bool nhwc_ok = c.nd == 4 || c.nd == 5;
    c.kx = (mem_kind)(nhwc_ok ? pick(e, 4) : 2 * pick(e, 2));
    c.ky = (mem_kind)(nhwc_ok ? pick(e, 4) : 2 * pick(e, 2));
    c.in_place = pick(e, 5) == 0;
    c.mean = pick(e, 2), c.rstd = pick(e, 2);
    c.no_y = !c.in_place && (c.mean || c.rstd) && pick(e, 4) == 0;
    int32_t axis = c.axis < 0 ? c.axis + c.nd : c.axis, lead = layer_kind ? axis : 2;
    c.ones = (int32_t)pick(e, (uint64_t)(5 - lead + 1));
    if (lead + c.ones > 5) c.ones = 5 - lead;
    for (int k = 0; k < 2; k++) {
        int32_t *pnd = k ? &c.bnd : &c.snd;
        int64_t *ps = k ? c.bshape : c.sshape;
        if (pick(e, 4) == 0) continue; /* absent */
        if (!layer_kind) {
            *pnd = 1;
            ps[0] = c.kind == GAIO_NORM_GROUP && pick(e, 2) ? c.groups : c.shape[1];
            continue;
        }
        /* Some of the normalized dimensions, each x's or 1, and maybe a leading 1. */
        int32_t span = 1 + (int32_t)pick(e, (uint64_t)(c.nd - axis));
        int32_t extra = span < c.nd && pick(e, 3) == 0 ? 1 : 0;
        *pnd = span + extra;
        for (int j = 0; j < *pnd; j++) {
            int32_t d = c.nd - *pnd + j;
            ps[j] = d < axis || pick(e, 4) == 0 ? 1 : c.shape[d];
        }
    }
    c.shift = pick(e, 3) == 0 ? 50.0f : 0.0f;
    c.spread = 1 + (float)pick(e, 4);
    norm_case(e, &c);
}

static void test_norm(env *e) {
    const mem_kind P = MEM_PACKED, N = MEM_NHWC, G = MEM_GAPS, NG = MEM_NHWC_GAPS;
    ncase c;
    /* The transformer's LayerNorm over a packed last axis: a warp's registers (ROWS). */
    c = layer(F32, 2, (int64_t[]){33, 768}, -1, P, P), norm_case(e, &c);
    c = layer(F16, 3, (int64_t[]){2, 5, 2048}, -1, P, G), c.shift = 100, norm_case(e, &c);
    c = layer(F16, 2, (int64_t[]){70, 96}, 1, P, P), c.pdt = F32, c.mean = c.rstd = true, norm_case(e, &c);
    c = layer(F32, 2, (int64_t[]){3, 37}, -1, P, P), c.in_place = true, c.shift = 1000, norm_case(e, &c);
    /* f16 rows of whole 16-byte vectors (the CUDA rows8 kernel): 4, 2 and 1 rows a warp,
     * 2 and 4 vectors a lane, more rows than its capped grid covers at once, in place. */
    c = layer(F16, 2, (int64_t[]){17, 64}, -1, P, P), c.mean = true, norm_case(e, &c);
    c = layer(F16, 3, (int64_t[]){100, 125, 96}, -1, P, P), c.shift = 50, norm_case(e, &c);
    c = layer(F16, 2, (int64_t[]){9, 384}, -1, P, P), c.in_place = true, c.rstd = true, norm_case(e, &c);
    c = layer(F16, 2, (int64_t[]){33, 768}, -1, P, P), c.pdt = F32, norm_case(e, &c);
    c = layer(F16, 2, (int64_t[]){5, 1024}, -1, P, P), norm_case(e, &c);
    /* Larger contiguous sets (a warp), and larger still (a block). */
    c = layer(F32, 2, (int64_t[]){4, 3000}, -1, P, P), norm_case(e, &c);
    c = layer(F16, 2, (int64_t[]){2, 9000}, -1, P, P), c.rstd = true, norm_case(e, &c);
    c = layer(F32, 3, (int64_t[]){2, 100, 70}, 1, P, P), c.mean = true, norm_case(e, &c);
    /* ConvNeXt's channels-last LayerNorm in an NHWC engine: logical [N, H, W, C] stored
     * channels(H)-innermost, sets C = 96 apart by H: a thread per set once there are many. */
    c = layer(F32, 4, (int64_t[]){1, 64, 40, 24}, -1, N, N), norm_case(e, &c);
    c = layer(F16, 4, (int64_t[]){2, 56, 20, 96}, -1, N, N), c.pdt = F32, norm_case(e, &c);
    c = layer(F32, 4, (int64_t[]){2, 7, 9, 96}, -1, N, NG), norm_case(e, &c);
    c = layer(F32, 4, (int64_t[]){1, 64, 40, 24}, -2, N, P), norm_case(e, &c);
    c = layer(F16, 4, (int64_t[]){3, 40, 20, 5}, 3, N, N), c.in_place = true, c.mean = true, norm_case(e, &c);
    /* Broadcast parameters, one element per set, axis 0, 5-D. */
    c = layer(F32, 3, (int64_t[]){4, 6, 5}, -2, G, P), c.sshape[0] = 1, c.bshape[1] = 1, norm_case(e, &c);
    c = layer(F32, 2, (int64_t[]){5, 1}, -1, P, P), c.mean = c.rstd = true, norm_case(e, &c);
    c = layer(F32, 3, (int64_t[]){3, 4, 5}, 0, G, G), c.mean = c.rstd = true, c.ones = 3, norm_case(e, &c);
    c = layer(F16, 5, (int64_t[]){2, 3, 4, 3, 5}, 2, NG, N), c.snd = 0, c.ones = 2, c.rstd = true, norm_case(e, &c);
    /* GroupNorm: per channel (opset 21), per group (opset 18), big planes (a block). */
    c = group(F32, 4, (int64_t[]){2, 8, 5, 7}, 4, P, P), norm_case(e, &c);
    c = group(F16, 4, (int64_t[]){2, 8, 5, 7}, 2, N, N), c.sshape[0] = c.bshape[0] = 2, norm_case(e, &c);
    c = group(F32, 4, (int64_t[]){1, 32, 16, 16}, 8, N, G), c.shift = 20, c.mean = c.rstd = true, norm_case(e, &c);
    c = group(F16, 4, (int64_t[]){2, 8, 40, 40}, 2, P, N), c.pdt = F32, norm_case(e, &c);
    c = group(F32, 3, (int64_t[]){3, 6, 50}, 3, G, P), c.in_place = true, norm_case(e, &c);
    c = group(F32, 5, (int64_t[]){2, 4, 3, 4, 5}, 1, NG, N), norm_case(e, &c);
    c = group(F32, 2, (int64_t[]){5, 12}, 4, P, P), c.sshape[0] = 4, c.bnd = 0, norm_case(e, &c);
    /* InstanceNorm: NCHW (contiguous planes), NHWC (planes C apart: a thread per set
     * with many channels, else a block or a warp), and NHWC in place. */
    c = group(F32, 4, (int64_t[]){2, 3, 17, 19}, 0, P, P), norm_case(e, &c);
    c = group(F16, 4, (int64_t[]){1, 3, 70, 70}, 0, N, N), norm_case(e, &c);
    c = group(F32, 4, (int64_t[]){4, 600, 3, 3}, 0, N, N), c.rstd = true, norm_case(e, &c);
    c = group(F16, 4, (int64_t[]){2, 16, 9, 9}, 0, NG, P), c.in_place = true, c.pdt = F32, norm_case(e, &c);
    c = group(F32, 3, (int64_t[]){2, 5, 1}, 0, P, G), c.mean = true, norm_case(e, &c);
    /* The statistics alone. */
    c = layer(F32, 2, (int64_t[]){6, 300}, -1, P, P), c.no_y = true, c.mean = c.rstd = true, norm_case(e, &c);
    c = group(F16, 4, (int64_t[]){2, 6, 4, 4}, 3, N, P), c.no_y = true, c.rstd = true, c.sdt = F32, norm_case(e, &c);
    for (int i = 0; i < 60; i++) random_case(e);
}

/* ---- bad input ---- */

static void test_bad(env *e) {
    gaio_buffer *buf, *host;
    OK(gaio_buffer_alloc(e->ctx, GAIO_MEM_DEVICE, 16384, &buf));
    OK(gaio_buffer_alloc(e->ctx, GAIO_MEM_HOST, 16384, &host));
    const char *fn = "gaio_norm";
    gaio_tensor x = gaio_tensor_make(buf, 0, F32, 4, (int64_t[]){2, 6, 4, 4}, GAIO_TENSOR_ROW_MAJOR);
    gaio_tensor y = gaio_tensor_make(buf, 1024, F32, 4, (int64_t[]){2, 6, 4, 4}, GAIO_TENSOR_NHWC);
    gaio_tensor sc = gaio_tensor_make(buf, 2048, F32, 1, (int64_t[]){4}, GAIO_TENSOR_ROW_MAJOR);
    gaio_tensor bi = gaio_tensor_make(buf, 2304, F32, 1, (int64_t[]){4}, GAIO_TENSOR_ROW_MAJOR);
    gaio_tensor mn = gaio_tensor_make(buf, 2560, F32, 4, (int64_t[]){2, 6, 4, 1}, GAIO_TENSOR_ROW_MAJOR);
    gaio_tensor rs = gaio_tensor_make(buf, 3072, F32, 3, (int64_t[]){2, 6, 4}, GAIO_TENSOR_ROW_MAJOR);
    gaio_tensor t, u;
    gaio_norm_params lp = {GAIO_NORM_LAYER, -1, 0, 1e-5f}, q;
    OK(gaio_norm(e->s, &x, &sc, &bi, &y, &mn, &rs, &lp));
    OK(gaio_norm(e->s, &x, NULL, NULL, &x, NULL, NULL, &lp)); /* in place */
    OK(gaio_norm(e->s, &x, NULL, NULL, NULL, &mn, NULL, &lp)); /* the statistics alone */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_norm(NULL, &x, &sc, &bi, &y, NULL, NULL, &lp), fn);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_norm(e->s, &x, &sc, &bi, &y, NULL, NULL, NULL), fn);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_norm(e->s, NULL, &sc, &bi, &y, NULL, NULL, &lp), fn);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_norm(e->s, &x, &sc, &bi, NULL, NULL, NULL, &lp), fn);
    q = lp, q.kind = (gaio_norm_kind)3;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_norm(e->s, &x, &sc, &bi, &y, NULL, NULL, &q), fn);
    q = lp, q.epsilon = -1e-5f;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_norm(e->s, &x, &sc, &bi, &y, NULL, NULL, &q), fn);
    q = lp, q.epsilon = NAN;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_norm(e->s, &x, &sc, &bi, &y, NULL, NULL, &q), fn);
    q = lp, q.epsilon = INFINITY;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_norm(e->s, &x, &sc, &bi, &y, NULL, NULL, &q), fn);
    q = lp, q.axis = 4;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_norm(e->s, &x, NULL, NULL, &y, NULL, NULL, &q), fn);
    q = lp, q.axis = -5;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_norm(e->s, &x, NULL, NULL, &y, NULL, NULL, &q), fn);
    /* y: shape, dtype, overlap, self-overlap; x's dtype; memory. */
    t = y, t.shape[3] = 3;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_norm(e->s, &x, &sc, &bi, &t, NULL, NULL, &lp), fn);
    t = y, t.dtype = F16;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_norm(e->s, &x, &sc, &bi, &t, NULL, NULL, &lp), fn);
    t = y, t.offset = 512; /* overlaps x without being x */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_norm(e->s, &x, &sc, &bi, &t, NULL, NULL, &lp), fn);
    t = x, t.strides[0] = 96, t.strides[1] = 16, t.strides[2] = 1, t.strides[3] = 4; /* x's memory, other order */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_norm(e->s, &x, &sc, &bi, &t, NULL, NULL, &lp), fn);
    t = y, t.strides[0] = 96, t.strides[1] = 16, t.strides[2] = 4, t.strides[3] = 0; /* repeats elements */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_norm(e->s, &x, &sc, &bi, &t, NULL, NULL, &lp), fn);
    t = x, t.dtype = GAIO_DTYPE_U8, u = y, u.dtype = GAIO_DTYPE_U8;
    FAILS(GAIO_ERR_NOT_SUPPORTED, gaio_norm(e->s, &t, NULL, NULL, &u, NULL, NULL, &lp), fn);
    t = y, t.buffer = host; /* pageable host memory */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_norm(e->s, &x, &sc, &bi, &t, NULL, NULL, &lp), fn);
    t = y, t.offset = 16384 - 64; /* past the end */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_norm(e->s, &x, &sc, &bi, &t, NULL, NULL, &lp), fn);
    /* LayerNorm's parameters. */
    t = sc, t.shape[0] = 3;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_norm(e->s, &x, &t, &bi, &y, NULL, NULL, &lp), fn);
    t = gaio_tensor_make(buf, 2048, F32, 2, (int64_t[]){4, 4}, GAIO_TENSOR_ROW_MAJOR); /* spans axis -2 */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_norm(e->s, &x, &t, &bi, &y, NULL, NULL, &lp), fn);
    q = lp, q.axis = -2;
    OK(gaio_norm(e->s, &x, &t, &bi, &y, NULL, NULL, &q));
    t = gaio_tensor_make(buf, 2048, F32, 5, (int64_t[]){1, 1, 1, 1, 4}, GAIO_TENSOR_ROW_MAJOR); /* more dims than x */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_norm(e->s, &x, &t, &bi, &y, NULL, NULL, &lp), fn);
    t = sc, t.dtype = F16; /* neither f32 nor x's dtype... f16 is not x's (f32) */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_norm(e->s, &x, &t, &bi, &y, NULL, NULL, &lp), fn);
    t = sc, t.offset = 1024 + 64; /* inside y */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_norm(e->s, &x, &t, &bi, &y, NULL, NULL, &lp), fn);
    /* The statistics. */
    t = mn, t.shape[3] = 2;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_norm(e->s, &x, &sc, &bi, &y, &t, NULL, &lp), fn);
    t = mn, t.ndim = 2;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_norm(e->s, &x, &sc, &bi, &y, &t, NULL, &lp), fn);
    t = rs, t.offset = 2560 + 16; /* overlaps mean */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_norm(e->s, &x, &sc, &bi, &y, &mn, &t, &lp), fn);
    t = rs, t.offset = 1024; /* overlaps y */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_norm(e->s, &x, &sc, &bi, &y, NULL, &t, &lp), fn);
    t = rs, t.offset = 0; /* overlaps x */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_norm(e->s, &x, &sc, &bi, NULL, NULL, &t, &lp), fn);
    t = rs, t.strides[0] = 4, t.strides[1] = 1, t.strides[2] = 1; /* repeats elements */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_norm(e->s, &x, &sc, &bi, &y, NULL, &t, &lp), fn);
    /* GroupNorm and InstanceNorm. */
    gaio_norm_params gp = {GAIO_NORM_GROUP, 0, 3, 1e-5f}, ip = {GAIO_NORM_INSTANCE, 0, 0, 1e-5f};
    gaio_tensor c6 = gaio_tensor_make(buf, 2048, F32, 1, (int64_t[]){6}, GAIO_TENSOR_ROW_MAJOR);
    gaio_tensor c3 = gaio_tensor_make(buf, 2304, F32, 1, (int64_t[]){3}, GAIO_TENSOR_ROW_MAJOR);
    gaio_tensor g2 = gaio_tensor_make(buf, 2560, F32, 2, (int64_t[]){2, 3}, GAIO_TENSOR_ROW_MAJOR);
    OK(gaio_norm(e->s, &x, &c6, &c3, &y, &g2, NULL, &gp));
    OK(gaio_norm(e->s, &x, &c6, &c6, &y, NULL, NULL, &ip));
    q = gp, q.groups = 4;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_norm(e->s, &x, &c6, &c3, &y, NULL, NULL, &q), fn);
    q = gp, q.groups = 0;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_norm(e->s, &x, &c6, &c3, &y, NULL, NULL, &q), fn);
    q = gp, q.groups = 12;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_norm(e->s, &x, &c6, &c3, &y, NULL, NULL, &q), fn);
    t = c6, t.shape[0] = 4;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_norm(e->s, &x, &t, &c3, &y, NULL, NULL, &gp), fn);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_norm(e->s, &x, &c3, NULL, &y, NULL, NULL, &ip), fn); /* per group: GROUP only */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_norm(e->s, &x, &g2, NULL, &y, NULL, NULL, &gp), fn); /* not 1-D */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_norm(e->s, &x, NULL, NULL, &y, &mn, NULL, &gp), fn); /* stats of [N, G] */
    t = gaio_tensor_make(buf, 0, F32, 1, (int64_t[]){6}, GAIO_TENSOR_ROW_MAJOR);
    u = gaio_tensor_make(buf, 1024, F32, 1, (int64_t[]){6}, GAIO_TENSOR_ROW_MAJOR);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_norm(e->s, &t, NULL, NULL, &u, NULL, NULL, &ip), fn); /* not [N, C, ...] */

    OK(gaio_stream_synchronize(e->s)); /* nothing bad was enqueued */
    OK(gaio_buffer_release(host));
    OK(gaio_buffer_release(buf));
}

static void run(int device) {
    env e = {0};
    gaio_device_props props;
    OK(gaio_device_get_props(device, &props));
    e.cuda = props.kind == GAIO_DEVICE_CUDA;
    e.rng = test_seed();
    OK(gaio_context_create(device, NULL, &e.ctx));
    OK(gaio_stream_create(e.ctx, 0, 0, &e.s));
    test_norm(&e);
    test_bad(&e);
    /* The same on a DEFERRED stream. */
    OK(gaio_stream_release(e.s));
    OK(gaio_stream_create(e.ctx, 0, GAIO_STREAM_DEFERRED, &e.s));
    test_norm(&e);
    OK(gaio_stream_release(e.s));
    OK(gaio_context_release(e.ctx));
    test_shutdown();
}
