/* The pointwise ops (gaio_unary, gaio_binary, gaio_cast, gaio_batch_norm) on each
 * backend against a direct computation in double precision: every unary op (NaN where
 * the reference is NaN: sqrt and log below 0), every binary op (pow with negative bases
 * and integer or fractional exponents, min and max) with NumPy broadcasting and a fused
 * activation, casts and layout changes,
 * inference batch norm; f32 and f16; packed, NHWC and strided (permuted, padded)
 * tensors at odd offsets; in place; elements of the output's buffer outside the
 * output left alone; bad input.
 *
 * Tolerances: f32 results within 2e-6 of the reference relative to it, plus 2e-7 per
 * unit of input magnitude for the forms that cancel (hard swish and hard sigmoid near
 * their corners); f16 results within one f16 ulp of the reference (computed from the
 * f16 inputs) on top of that; casts and copies exact. */
#include <math.h>
#include <stdbool.h>

#include "common.h"
#include "half.h"

typedef struct env {
    gaio_context *ctx;
    gaio_stream *s;
    uint64_t rng;
    bool cuda;
} env;

static double urand(uint64_t *r) { return (double)(test_rand(r) >> 11) / 9007199254740992.0; }
static float rnd(uint64_t *r) { return (float)(urand(r) * 2.0 - 1.0); }
static int64_t irand(env *e, int64_t n) { return (int64_t)(test_rand(&e->rng) % (uint64_t)n); }

/* The spacing of f16 values at |v|. */
static double ulp16(double v) {
    v = fabs(v);
    if (v < 6.103515625e-05) return 5.9604644775390625e-08;
    int ex;
    frexp(v, &ex);
    return ldexp(1.0, ex - 11);
}

static size_t esize(gaio_dtype dt) { return dt == GAIO_DTYPE_F16 ? 2 : 4; }

/* Value ranges. */
enum { V_UNARY, V_PLAIN, V_DIVISOR, V_POSITIVE, V_WIDE, V_EXPONENT };

static float gen(env *e, int kind) {
    switch (kind) {
    case V_UNARY: return rnd(&e->rng) * 6.0f;
    case V_DIVISOR: {
        float m = (float)(0.5 + 1.5 * urand(&e->rng));
        return (test_rand(&e->rng) & 1) ? m : -m;
    }
    case V_POSITIVE: return (float)(0.1 + 1.9 * urand(&e->rng));
    case V_WIDE: return rnd(&e->rng) * powf(10.0f, (float)(irand(e, 14) - 9)); /* f16 subnormals to overflow */
    case V_EXPONENT: /* half integers in [-3, 3] (any base), half fractions in [-2, 2] (NaN for a base < 0) */
        return (test_rand(&e->rng) & 1) ? (float)(irand(e, 7) - 3) : rnd(&e->rng) * 2.0f;
    default: return rnd(&e->rng) * 2.0f;
    }
}

/* A tensor in a device buffer of its own, and the buffer's values on the host. */
enum { M_PACKED, M_NHWC, M_STRIDED, M_ALIGNED = 16 /* or'd in: element [0, ...] at the buffer's start */ };
typedef struct ht {
    gaio_dtype dt;
    int32_t ndim;
    int64_t shape[5], strides[5]; /* strides as the test sees them, in elements */
    int64_t off;                  /* element [0, ...] in the buffer */
    size_t n;                     /* the buffer's elements */
    float *v;
    gaio_tensor t;
} ht;

static void ht_make(env *e, ht *h, gaio_dtype dt, int32_t ndim, const int64_t *shape, int mode, int kind) {
    memset(h, 0, sizeof *h);
    bool aligned = (mode & M_ALIGNED) != 0;
    mode &= ~M_ALIGNED;
    h->dt = dt;
    h->ndim = ndim;
    for (int32_t i = 0; i < ndim; i++) h->shape[i] = shape[i];
    if (mode == M_NHWC && ndim < 4) mode = M_STRIDED;
    int32_t order[5]; /* memory order, outermost first */
    for (int32_t i = 0; i < ndim; i++) order[i] = i;
    if (mode == M_NHWC) {
        for (int32_t i = 1; i < ndim - 1; i++) order[i] = i + 1;
        order[ndim - 1] = 1;
    } else if (mode == M_STRIDED) {
        for (int32_t i = ndim - 1; i > 0; i--) {
            int32_t j = (int32_t)irand(e, i + 1), t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
    }
    int64_t acc = mode == M_STRIDED ? 1 + irand(e, 2) : 1;
    for (int32_t i = ndim - 1; i >= 0; i--) {
        int32_t d = order[i];
        h->strides[d] = acc;
        acc *= shape[d] + (mode == M_STRIDED ? irand(e, 2) : 0);
    }
    h->off = aligned ? 0 : irand(e, 4);
    h->n = (size_t)(h->off + acc + irand(e, 3));
    h->v = malloc(h->n * sizeof(float));
    CHECK(h->v);
    for (size_t i = 0; i < h->n; i++) {
        float f = gen(e, kind);
        h->v[i] = dt == GAIO_DTYPE_F16 ? from_half(to_half(f)) : f;
    }
    size_t es = esize(dt);
    gaio_buffer *stage, *dev;
    OK(gaio_buffer_alloc(e->ctx, GAIO_MEM_PINNED, h->n * es, &stage));
    OK(gaio_buffer_alloc(e->ctx, GAIO_MEM_DEVICE, h->n * es, &dev));
    void *p;
    OK(gaio_buffer_host_ptr(stage, &p));
    for (size_t i = 0; i < h->n; i++) {
        if (dt == GAIO_DTYPE_F16)
            ((uint16_t *)p)[i] = to_half(h->v[i]);
        else
            ((float *)p)[i] = h->v[i];
    }
    OK(gaio_memcpy_async(e->s, dev, 0, stage, 0, h->n * es));
    OK(gaio_buffer_release(stage));
    h->t = gaio_tensor_make(dev, (size_t)h->off * es, dt, ndim, shape,
                            mode == M_NHWC ? GAIO_TENSOR_NHWC : GAIO_TENSOR_ROW_MAJOR);
    if (mode == M_STRIDED)
        for (int32_t i = 0; i < ndim; i++) h->t.strides[i] = h->strides[i];
}

static float *ht_download(env *e, const ht *h) {
    size_t es = esize(h->dt);
    gaio_buffer *stage;
    OK(gaio_buffer_alloc(e->ctx, GAIO_MEM_PINNED, h->n * es, &stage));
    OK(gaio_memcpy_async(e->s, stage, 0, h->t.buffer, 0, h->n * es));
    OK(gaio_stream_synchronize(e->s));
    void *p;
    OK(gaio_buffer_host_ptr(stage, &p));
    float *out = malloc(h->n * sizeof(float));
    CHECK(out);
    for (size_t i = 0; i < h->n; i++) out[i] = h->dt == GAIO_DTYPE_F16 ? from_half(((uint16_t *)p)[i]) : ((float *)p)[i];
    OK(gaio_buffer_release(stage));
    return out;
}

static void ht_free(ht *h) {
    OK(gaio_buffer_release(h->t.buffer));
    free(h->v);
}

static int64_t count(const ht *h) {
    int64_t n = 1;
    for (int32_t i = 0; i < h->ndim; i++) n *= h->shape[i];
    return n;
}

/* Coordinates of flat index i of y (last fastest). */
static void coords(const ht *y, int64_t i, int64_t *c) {
    for (int32_t d = y->ndim - 1; d >= 0; d--) {
        c[d] = i % y->shape[d];
        i /= y->shape[d];
    }
}

/* The element of t at y's coordinates c, t's dimensions aligned at the last and
 * broadcast where t has 1. */
static int64_t at(const ht *t, const ht *y, const int64_t *c) {
    int64_t o = t->off;
    int32_t shift = y->ndim - t->ndim;
    for (int32_t d = 0; d < t->ndim; d++)
        if (t->shape[d] > 1) o += c[d + shift] * t->strides[d];
    return o;
}

static double unary_ref(gaio_unary_op op, double x, double a, double b) {
    switch (op) {
    case GAIO_UNARY_RELU: return x > 0 ? x : 0;
    case GAIO_UNARY_CLIP: return isnan(x) ? x : fmin(fmax(x, a), b); /* NaN stays NaN, as in ONNX */
    case GAIO_UNARY_SIGMOID: return 1 / (1 + exp(-x));
    case GAIO_UNARY_SILU: return x / (1 + exp(-x));
    case GAIO_UNARY_GELU: return 0.5 * x * (1 + erf(x / sqrt(2.0)));
    case GAIO_UNARY_GELU_TANH: return 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    case GAIO_UNARY_TANH: return tanh(x);
    case GAIO_UNARY_HARD_SIGMOID: return isnan(x) ? x : fmax(0, fmin(1, a * x + b));
    case GAIO_UNARY_HARD_SWISH: return isnan(x) ? x : x * fmax(0, fmin(1, x / 6 + 0.5));
    case GAIO_UNARY_IDENTITY: return x;
    case GAIO_UNARY_SQRT: return sqrt(x);
    case GAIO_UNARY_EXP: return exp(x);
    case GAIO_UNARY_LOG: return log(x);
    case GAIO_UNARY_ABS: return fabs(x);
    case GAIO_UNARY_NEG: return -x;
    case GAIO_UNARY_RECIPROCAL: return 1 / x;
    case GAIO_UNARY_FLOOR: return floor(x);
    case GAIO_UNARY_CEIL: return ceil(x);
    case GAIO_UNARY_ERF: return erf(x);
    case GAIO_UNARY_SOFTPLUS: return log1p(exp(x));
    case GAIO_UNARY_SIN: return sin(x);
    case GAIO_UNARY_COS: return cos(x);
    case GAIO_UNARY_AFFINE: return a * x + b;
    }
    return NAN;
}

/* Compares y's elements with want[] (indexed by y's flat index), and every other
 * element of y's buffer with what it held before. tol0(i) is the f32 tolerance. */
typedef struct check {
    const char *what;
    const double *want, *tol; /* per flat index of y */
    bool exact;
} check;

static void verify(env *e, const ht *y, const float *before, const check *c) {
    float *got = ht_download(e, y);
    bool *mine = calloc(y->n, 1);
    CHECK(mine);
    int64_t n = count(y), cc[5];
    for (int64_t i = 0; i < n; i++) {
        coords(y, i, cc);
        int64_t o = at(y, y, cc);
        mine[o] = true;
        double want = c->want[i], out = got[o];
        if (y->dt == GAIO_DTYPE_F16 && !c->exact && fabs(want) > 65504) want = want > 0 ? INFINITY : -INFINITY;
        double tol = c->exact ? 0 : c->tol[i] + (y->dt == GAIO_DTYPE_F16 ? ulp16(want) : 0);
        bool ok = out == want || (isnan(out) && isnan(want)) || (!c->exact && fabs(out - want) <= tol);
        if (!ok) {
            fprintf(stderr, "%s (%s): element %lld (", c->what, gaio_dtype_name(y->dt), (long long)i);
            for (int32_t d = 0; d < y->ndim; d++) fprintf(stderr, "%s%lld", d ? ", " : "", (long long)cc[d]);
            fprintf(stderr, ") is %.9g, want %.9g (tol %.3g)\n", out, want, tol);
            exit(1);
        }
    }
    for (size_t i = 0; i < y->n; i++)
        if (!mine[i] && !(got[i] == before[i] || (isnan(got[i]) && isnan(before[i])))) {
            fprintf(stderr, "%s: buffer element %zu outside y changed from %g to %g\n", c->what, i, before[i], got[i]);
            exit(1);
        }
    free(mine);
    free(got);
}

static int rand_mode(env *e, int32_t ndim) { return (int)irand(e, ndim >= 4 ? 3 : 2) * (ndim >= 4 ? 1 : 2); }

/* ---- unary and cast ---- */

/* mode: x's and y's layout, -1 for random ones. */
static void unary_case_in(env *e, gaio_unary_op op, gaio_dtype dt, int32_t ndim, const int64_t *shape, bool in_place,
                          bool cast, gaio_dtype ydt, int mode) {
    ht x, yy;
    ht_make(e, &x, dt, ndim, shape, mode < 0 ? rand_mode(e, ndim) : mode, cast ? V_WIDE : V_UNARY);
    ht *y = &x;
    if (!in_place) {
        ht_make(e, &yy, cast ? ydt : dt, ndim, shape, mode < 0 ? rand_mode(e, ndim) : mode, V_PLAIN);
        y = &yy;
    }
    float *before = malloc(y->n * sizeof(float));
    CHECK(before);
    memcpy(before, y->v, y->n * sizeof(float));
    gaio_unary_params p = {op, 0, 0};
    if (op == GAIO_UNARY_CLIP) p.alpha = -1.5f, p.beta = 2.25f;
    if (op == GAIO_UNARY_HARD_SIGMOID) p.alpha = 0.2f, p.beta = 0.5f;
    if (op == GAIO_UNARY_AFFINE) p.alpha = 0.75f, p.beta = -0.25f;
    if (cast)
        OK(gaio_cast(e->s, &x.t, &y->t));
    else
        OK(gaio_unary(e->s, &x.t, &y->t, &p));
    int64_t n = count(y), c[5];
    double *want = malloc((size_t)n * sizeof(double)), *tol = malloc((size_t)n * sizeof(double));
    CHECK(want && tol);
    for (int64_t i = 0; i < n; i++) {
        coords(y, i, c);
        double xv = x.v[at(&x, y, c)];
        want[i] = unary_ref(op, xv, p.alpha, p.beta);
        if (cast && y->dt == GAIO_DTYPE_F16) want[i] = from_half(to_half((float)xv));
        tol[i] = 2e-6 * fabs(want[i]) + 2e-7 * (1 + fabs(xv));
    }
    char what[128];
    snprintf(what, sizeof what, "%s op %d %s%s ndim %d", cast ? "cast" : "unary", (int)op, gaio_dtype_name(dt),
             in_place ? " in place" : "", (int)ndim);
    check ck = {what, want, tol,
                cast || op == GAIO_UNARY_IDENTITY || op == GAIO_UNARY_RELU || op == GAIO_UNARY_ABS ||
                    op == GAIO_UNARY_NEG || op == GAIO_UNARY_FLOOR || op == GAIO_UNARY_CEIL};
    verify(e, y, before, &ck);
    free(want);
    free(tol);
    free(before);
    if (!in_place) ht_free(&yy);
    ht_free(&x);
}

static const int64_t shapes[][6] = {
    /* ndim, shape */
    {1, 1},           {1, 7},           {2, 33, 5},        {3, 1, 1, 1},       {4, 1, 3, 1, 1},
    {4, 33, 3, 5, 7}, {4, 2, 17, 9, 4}, {5, 2, 3, 4, 5, 3}, {1, 20000},        {4, 3, 37, 11, 13},
};
#define NSHAPES (sizeof shapes / sizeof shapes[0])

static void unary_case(env *e, gaio_unary_op op, gaio_dtype dt, int32_t ndim, const int64_t *shape, bool in_place,
                       bool cast, gaio_dtype ydt) {
    unary_case_in(e, op, dt, ndim, shape, in_place, cast, ydt, -1);
}

static void test_unary(env *e) {
    const gaio_dtype dts[2] = {GAIO_DTYPE_F32, GAIO_DTYPE_F16};
    for (int op = GAIO_UNARY_RELU; op <= GAIO_UNARY_AFFINE; op++)
        for (int d = 0; d < 2; d++)
            for (size_t s = 0; s < NSHAPES; s++) {
                if (s == NSHAPES - 1 && op % 3) continue; /* the large shape for a few ops */
                unary_case(e, (gaio_unary_op)op, dts[d], (int32_t)shapes[s][0], &shapes[s][1], s % 3 == 1, false,
                           dts[d]);
            }
    /* Packed and aligned (an activation after a convolution, in place): 16 bytes a
     * thread on a GPU, the last elements one at a time. */
    const int64_t packed[4] = {3, 41, 7, 9}; /* 7749 elements: a tail */
    for (int op = GAIO_UNARY_RELU; op <= GAIO_UNARY_AFFINE; op += 3)
        for (int d = 0; d < 2; d++)
            unary_case_in(e, (gaio_unary_op)op, dts[d], 4, packed, d == 0, false, dts[d], M_PACKED | M_ALIGNED);
}

static void test_cast(env *e) {
    const gaio_dtype dts[2] = {GAIO_DTYPE_F32, GAIO_DTYPE_F16};
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++)
            for (size_t s = 0; s < NSHAPES; s++)
                unary_case(e, GAIO_UNARY_IDENTITY, dts[a], (int32_t)shapes[s][0], &shapes[s][1], a == b && s % 4 == 2,
                           true, dts[b]);
    /* NCHW -> NHWC and back, explicitly. */
    for (int d = 0; d < 2; d++) {
        int64_t shape[4] = {2, 5, 3, 7};
        ht x, y;
        ht_make(e, &x, dts[d], 4, shape, M_PACKED, V_PLAIN);
        ht_make(e, &y, dts[d], 4, shape, M_NHWC, V_PLAIN);
        OK(gaio_cast(e->s, &x.t, &y.t));
        float *got = ht_download(e, &y);
        for (int64_t n = 0; n < 2; n++)
            for (int64_t c = 0; c < 5; c++)
                for (int64_t h = 0; h < 3; h++)
                    for (int64_t w = 0; w < 7; w++)
                        CHECK(got[y.off + ((n * 3 + h) * 7 + w) * 5 + c] == x.v[x.off + ((n * 5 + c) * 3 + h) * 7 + w]);
        free(got);
        ht_free(&x);
        ht_free(&y);
    }
    /* A model's input staging: f32 NCHW images to f16 NHWC (a thread per pixel on a GPU
     * for up to 8 channels), batch 1 (simplified to [P, C]) and more, and 9 channels
     * (the general path). */
    const int64_t staging[4][4] = {{2, 3, 13, 17}, {1, 3, 9, 31}, {3, 8, 5, 6}, {2, 9, 7, 5}};
    for (int i = 0; i < 4; i++) {
        const int64_t *sh = staging[i], N = sh[0], C = sh[1], H = sh[2], W = sh[3];
        ht x, y;
        ht_make(e, &x, GAIO_DTYPE_F32, 4, sh, M_PACKED, V_WIDE);
        ht_make(e, &y, GAIO_DTYPE_F16, 4, sh, M_NHWC, V_PLAIN);
        OK(gaio_cast(e->s, &x.t, &y.t));
        float *got = ht_download(e, &y);
        for (int64_t n = 0; n < N; n++)
            for (int64_t c = 0; c < C; c++)
                for (int64_t h = 0; h < H; h++)
                    for (int64_t w = 0; w < W; w++) {
                        float want = from_half(to_half(x.v[x.off + ((n * C + c) * H + h) * W + w]));
                        float g = got[y.off + ((n * H + h) * W + w) * C + c];
                        CHECK(g == want || (g != g && want != want));
                    }
        free(got);
        ht_free(&x);
        ht_free(&y);
    }
}

/* ---- binary ---- */

/* mode: the three tensors' layout, -1 for random ones. */
static void binary_case(env *e, gaio_binary_op op, gaio_dtype dt, int32_t na, const int64_t *sa, int32_t nb,
                        const int64_t *sb, int act, int in_place, int mode) {
    int32_t nd = na > nb ? na : nb;
    int64_t sy[5];
    for (int32_t d = 0; d < nd; d++) {
        int32_t ia = d - (nd - na), ib = d - (nd - nb);
        int64_t ea = ia >= 0 ? sa[ia] : 1, eb = ib >= 0 ? sb[ib] : 1;
        sy[d] = ea > eb ? ea : eb;
    }
    ht a, b, yy;
    /* Pow: bases of magnitude 0.5 to 2 of either sign, exponents in [-3, 3]: |a^b| <= 8. */
    ht_make(e, &a, dt, na, sa, mode < 0 ? rand_mode(e, na) : mode, op == GAIO_BINARY_POW ? V_DIVISOR : V_PLAIN);
    ht_make(e, &b, dt, nb, sb, mode < 0 ? rand_mode(e, nb) : mode,
            op == GAIO_BINARY_DIV || op == GAIO_BINARY_FMOD ? V_DIVISOR : op == GAIO_BINARY_POW ? V_EXPONENT : V_PLAIN);
    ht *y = in_place == 1 ? &a : in_place == 2 ? &b : &yy;
    if (!in_place) ht_make(e, &yy, dt, nd, sy, mode < 0 ? rand_mode(e, nd) : mode, V_PLAIN);
    float *before = malloc(y->n * sizeof(float));
    CHECK(before);
    memcpy(before, y->v, y->n * sizeof(float));
    gaio_unary_params p = {(gaio_unary_op)(act < 0 ? 0 : act), -0.5f, 1.0f};
    if (act == GAIO_UNARY_HARD_SIGMOID) p.alpha = 0.2f, p.beta = 0.5f;
    OK(gaio_binary(e->s, op, &a.t, &b.t, &y->t, act < 0 ? NULL : &p));
    int64_t n = count(y), c[5];
    double *want = malloc((size_t)n * sizeof(double)), *tol = malloc((size_t)n * sizeof(double));
    CHECK(want && tol);
    for (int64_t i = 0; i < n; i++) {
        coords(y, i, c);
        double av = a.v[at(&a, y, c)], bv = b.v[at(&b, y, c)], v;
        switch (op) {
        case GAIO_BINARY_ADD: v = av + bv; break;
        case GAIO_BINARY_SUB: v = av - bv; break;
        case GAIO_BINARY_MUL: v = av * bv; break;
        case GAIO_BINARY_DIV: v = av / bv; break;
        case GAIO_BINARY_POW: v = pow(av, bv); break;
        case GAIO_BINARY_MIN: v = av < bv ? av : bv; break;
        case GAIO_BINARY_FMOD: v = fmod(av, bv); break; /* exact, as fmodf is */
        default: v = av > bv ? av : bv; break;
        }
        /* The f32 result of the op is what the activation sees. */
        double r = act < 0 ? v : unary_ref(p.op, (float)v, p.alpha, p.beta);
        want[i] = r;
        tol[i] = 2e-6 * fabs(r) + 2e-7 * (1 + fabs(v));
        if (op == GAIO_BINARY_POW && isfinite(v)) {
            /* powf is not correctly rounded (CUDA's: within 4 ulp): that error, as the
             * activation carries it on. */
            double dv = ldexp(fabs(v), -21), moved = act < 0 ? dv : fabs(unary_ref(p.op, (float)v + dv, p.alpha, p.beta) - r);
            if (moved == moved) tol[i] += moved;
        }
    }
    char what[128];
    snprintf(what, sizeof what, "binary op %d act %d ndim %d/%d in place %d", (int)op, act, (int)na, (int)nb, in_place);
    check ck = {what, want, tol, false};
    verify(e, y, before, &ck);
    free(want);
    free(tol);
    free(before);
    if (!in_place) ht_free(&yy);
    ht_free(&a);
    ht_free(&b);
}

typedef struct bcase {
    int32_t na;
    int64_t sa[5];
    int32_t nb;
    int64_t sb[5];
} bcase;

static void test_binary(env *e) {
    const bcase cases[] = {
        {1, {1}, 1, {1}},
        {4, {33, 3, 5, 7}, 4, {33, 3, 5, 7}},
        {4, {2, 3, 4, 5}, 2, {4, 1}},
        {1, {1}, 2, {33, 7}},
        {3, {5, 1, 7}, 3, {1, 6, 1}},
        {4, {2, 16, 9, 11}, 4, {1, 16, 1, 1}},
        {4, {1, 16, 1, 1}, 4, {3, 16, 5, 1}},
        {5, {2, 3, 4, 5, 6}, 3, {4, 1, 6}},
        {2, {1, 20001}, 2, {3, 20001}},
        {1, {9}, 4, {2, 1, 3, 9}},
    };
    const gaio_dtype dts[2] = {GAIO_DTYPE_F32, GAIO_DTYPE_F16};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int op = GAIO_BINARY_ADD; op <= GAIO_BINARY_FMOD; op++)
            for (int d = 0; d < 2; d++) {
                const bcase *c = &cases[i];
                /* -1: NULL, else a unary op (each of them over the cases) */
                int act = (int)(i * 3 + (size_t)op + (size_t)d) % (GAIO_UNARY_AFFINE + 2) - 1;
                /* In place where a (or b) has y's shape. */
                int ip = 0;
                bool a_full = c->na >= c->nb, b_full = c->nb >= c->na;
                for (int32_t k = 0; k < c->na && a_full; k++) {
                    int32_t kb = k - (c->na - c->nb);
                    if (kb >= 0 && c->sb[kb] > c->sa[k]) a_full = false;
                }
                for (int32_t k = 0; k < c->nb && b_full; k++) {
                    int32_t ka = k - (c->nb - c->na);
                    if (ka >= 0 && c->sa[ka] > c->sb[k]) b_full = false;
                }
                if ((op + d) % 2 == 0 && a_full) ip = 1;
                else if (op == GAIO_BINARY_SUB && b_full) ip = 2;
                binary_case(e, (gaio_binary_op)op, dts[d], c->na, c->sa, c->nb, c->sb, act, ip, -1);
            }
    /* NHWC maps times one row of channels per image (squeeze-and-excitation), either
     * side: on a GPU 16 bytes a thread where C allows (f16 % 8, f32 % 4), elements
     * otherwise; batch 1 simplifies to [H * W, C]. */
    const bcase se[] = {
        {4, {2, 64, 5, 7}, 4, {2, 64, 1, 1}}, {4, {3, 12, 4, 6}, 4, {3, 12, 1, 1}},
        {4, {1, 40, 7, 7}, 4, {1, 40, 1, 1}}, {4, {2, 24, 1, 1}, 4, {2, 24, 3, 5}},
    };
    const int se_ops[3] = {GAIO_BINARY_MUL, GAIO_BINARY_SUB, GAIO_BINARY_DIV};
    for (size_t i = 0; i < sizeof se / sizeof se[0]; i++)
        for (int k = 0; k < 3; k++)
            for (int d = 0; d < 2; d++) {
                const bcase *c = &se[i];
                int act = k == 0 ? -1 : k == 1 ? GAIO_UNARY_SIGMOID : GAIO_UNARY_RELU;
                int ip = d == 0 && c->sa[2] > 1 ? 1 : 0;
                binary_case(e, (gaio_binary_op)se_ops[k], dts[d], c->na, c->sa, c->nb, c->sb, act, ip,
                            M_NHWC | M_ALIGNED);
            }
}

/* ---- batch norm ---- */

/* mode: x's and y's layout, -1 for random ones; the parameters packed then, random
 * (packed or strided) otherwise. */
static void bn_case(env *e, gaio_dtype dt, int32_t ndim, const int64_t *shape, bool in_place, int mode) {
    ht x, yy, prm[4];
    ht_make(e, &x, dt, ndim, shape, mode < 0 ? rand_mode(e, ndim) : mode, V_PLAIN);
    ht *y = &x;
    if (!in_place) {
        ht_make(e, &yy, dt, ndim, shape, mode < 0 ? rand_mode(e, ndim) : mode, V_PLAIN);
        y = &yy;
    }
    for (int k = 0; k < 4; k++)
        ht_make(e, &prm[k], GAIO_DTYPE_F32, 1, &shape[1], mode < 0 && irand(e, 2) ? M_STRIDED : M_PACKED,
                k == 3 ? V_POSITIVE : V_PLAIN);
    float *before = malloc(y->n * sizeof(float));
    CHECK(before);
    memcpy(before, y->v, y->n * sizeof(float));
    float eps = 1e-5f;
    OK(gaio_batch_norm(e->s, &x.t, &y->t, &prm[0].t, &prm[1].t, &prm[2].t, &prm[3].t, eps));
    int64_t n = count(y), c[5];
    double *want = malloc((size_t)n * sizeof(double)), *tol = malloc((size_t)n * sizeof(double));
    CHECK(want && tol);
    for (int64_t i = 0; i < n; i++) {
        coords(y, i, c);
        int64_t ch = c[1];
        double xv = x.v[at(&x, y, c)];
        double sc = prm[0].v[prm[0].off + ch * prm[0].strides[0]], bi = prm[1].v[prm[1].off + ch * prm[1].strides[0]];
        double mu = prm[2].v[prm[2].off + ch * prm[2].strides[0]], va = prm[3].v[prm[3].off + ch * prm[3].strides[0]];
        double g = sc / sqrt(va + (double)eps);
        want[i] = (xv - mu) * g + bi;
        tol[i] = 1e-6 * ((fabs(xv) + fabs(mu)) * fabs(g) + fabs(bi)) + 2e-6 * fabs(want[i]);
    }
    char what[128];
    snprintf(what, sizeof what, "batch_norm ndim %d C %lld%s", (int)ndim, (long long)shape[1], in_place ? " in place" : "");
    check ck = {what, want, tol, false};
    verify(e, y, before, &ck);
    free(want);
    free(tol);
    free(before);
    if (!in_place) ht_free(&yy);
    ht_free(&x);
    for (int k = 0; k < 4; k++) ht_free(&prm[k]);
}

static void test_batch_norm(env *e) {
    const int64_t cases[][6] = {
        {2, 1, 1},       {2, 33, 17},      {3, 4, 3, 10},       {4, 1, 3, 1, 1},      {4, 33, 3, 5, 7},
        {4, 2, 64, 7, 7}, {4, 1, 5, 61, 67}, {5, 2, 3, 4, 5, 3}, {4, 3, 1, 11, 13},
    };
    const gaio_dtype dts[2] = {GAIO_DTYPE_F32, GAIO_DTYPE_F16};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int d = 0; d < 2; d++)
            bn_case(e, dts[d], (int32_t)cases[i][0], &cases[i][1], (i + (size_t)d) % 3 == 0, -1);
    /* NHWC with packed parameters: the CUDA kernel's rows of channels, 16 bytes a thread
     * where C allows (f16: C % 8, f32: C % 4), an element otherwise; [N, C] rows too. */
    const int64_t rows[][6] = {{4, 2, 64, 7, 9}, {4, 3, 12, 5, 5}, {4, 1, 1024, 7, 7}, {4, 2, 2056, 3, 3}, {2, 5, 40}};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        for (int d = 0; d < 2; d++)
            bn_case(e, dts[d], (int32_t)rows[i][0], &rows[i][1], d == 1 && i % 2 == 0,
                    (rows[i][0] == 4 ? M_NHWC : M_PACKED) | M_ALIGNED);
}

/* ---- bad input ---- */

static void test_bad(env *e) {
    gaio_buffer *buf;
    OK(gaio_buffer_alloc(e->ctx, GAIO_MEM_DEVICE, 8192, &buf));
    int64_t s4[4] = {2, 3, 4, 5}; /* 120 elements: 480 bytes of f32 */
    gaio_tensor x = gaio_tensor_make(buf, 0, GAIO_DTYPE_F32, 4, s4, GAIO_TENSOR_ROW_MAJOR);
    gaio_tensor y = gaio_tensor_make(buf, 512, GAIO_DTYPE_F32, 4, s4, GAIO_TENSOR_NHWC);
    gaio_tensor t;
    gaio_unary_params p = {GAIO_UNARY_RELU, 0, 0};

    const char *fn = "gaio_unary";
    OK(gaio_unary(e->s, &x, &y, &p));
    OK(gaio_unary(e->s, &x, &x, &p)); /* in place */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_unary(NULL, &x, &y, &p), fn);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_unary(e->s, NULL, &y, &p), fn);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_unary(e->s, &x, NULL, &p), fn);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_unary(e->s, &x, &y, NULL), fn);
    p.op = (gaio_unary_op)(GAIO_UNARY_AFFINE + 1); /* past the last */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_unary(e->s, &x, &y, &p), fn);
    CHECK(strstr(gaio_last_error(), "is not a gaio_unary_op"));
    p.op = (gaio_unary_op)-1;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_unary(e->s, &x, &y, &p), fn);
    p.op = GAIO_UNARY_AFFINE, p.alpha = 2, p.beta = 1;
    OK(gaio_unary(e->s, &x, &y, &p));
    p.beta = NAN;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_unary(e->s, &x, &y, &p), fn);
    p.alpha = -INFINITY, p.beta = 0;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_unary(e->s, &x, &y, &p), fn);
    CHECK(strstr(gaio_last_error(), "AFFINE"));
    p.op = GAIO_UNARY_LOG, p.alpha = NAN; /* ignored */
    OK(gaio_unary(e->s, &x, &y, &p));
    p.op = GAIO_UNARY_CLIP, p.alpha = 2, p.beta = 1;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_unary(e->s, &x, &y, &p), fn);
    p.alpha = NAN;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_unary(e->s, &x, &y, &p), fn);
    p.op = GAIO_UNARY_HARD_SIGMOID, p.alpha = INFINITY, p.beta = 0.5f;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_unary(e->s, &x, &y, &p), fn);
    p.op = GAIO_UNARY_RELU;
    t = y, t.dtype = GAIO_DTYPE_F16; /* dtypes differ */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_unary(e->s, &x, &t, &p), fn);
    t = y, t.shape[3] = 6;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_unary(e->s, &x, &t, &p), fn);
    t = y, t.ndim = 3;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_unary(e->s, &x, &t, &p), fn);
    t = x, t.offset = 4; /* partial overlap */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_unary(e->s, &x, &t, &p), fn);
    t = x, t.layout = GAIO_TENSOR_NHWC; /* same bytes, other strides */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_unary(e->s, &x, &t, &p), fn);
    t = y, t.offset = 8192 - 400; /* past the end */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_unary(e->s, &x, &t, &p), fn);
    t = y, t.offset = 514; /* misaligned */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_unary(e->s, &x, &t, &p), fn);
    t = y, t.strides[0] = 60, t.strides[1] = 20, t.strides[2] = 0, t.strides[3] = 1; /* repeats elements */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_unary(e->s, &x, &t, &p), fn);
    t = y, t.shape[0] = 0;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_unary(e->s, &x, &t, &p), fn);
    gaio_tensor xu = x, yu = y;
    xu.dtype = yu.dtype = GAIO_DTYPE_U8;
    FAILS(GAIO_ERR_NOT_SUPPORTED, gaio_unary(e->s, &xu, &yu, &p), fn);
    /* The same on a pageable host buffer, which the stream cannot reach. */
    gaio_buffer *hostbuf;
    OK(gaio_buffer_alloc(e->ctx, GAIO_MEM_HOST, 4096, &hostbuf));
    t = gaio_tensor_make(hostbuf, 0, GAIO_DTYPE_F32, 4, s4, GAIO_TENSOR_ROW_MAJOR);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_unary(e->s, &x, &t, &p), fn);

    fn = "gaio_cast";
    gaio_tensor h = gaio_tensor_make(buf, 1024, GAIO_DTYPE_F16, 4, s4, GAIO_TENSOR_NHWC);
    OK(gaio_cast(e->s, &x, &h));
    OK(gaio_cast(e->s, &h, &y));
    FAILS(GAIO_ERR_INVALID_ARG, gaio_cast(NULL, &x, &h), fn);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_cast(e->s, &x, NULL), fn);
    t = h, t.shape[1] = 2;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_cast(e->s, &x, &t), fn);
    t = x, t.dtype = GAIO_DTYPE_F16; /* same place, other dtype: not in place */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_cast(e->s, &x, &t), fn);
    t = h, t.dtype = GAIO_DTYPE_U16;
    FAILS(GAIO_ERR_NOT_SUPPORTED, gaio_cast(e->s, &x, &t), fn);

    fn = "gaio_binary";
    int64_t sb[2] = {4, 1};
    gaio_tensor b = gaio_tensor_make(buf, 2048, GAIO_DTYPE_F32, 2, sb, GAIO_TENSOR_ROW_MAJOR);
    OK(gaio_binary(e->s, GAIO_BINARY_ADD, &x, &b, &y, NULL));
    OK(gaio_binary(e->s, GAIO_BINARY_ADD, &x, &b, &x, &p)); /* in place */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_binary(NULL, GAIO_BINARY_ADD, &x, &b, &y, NULL), fn);
    OK(gaio_binary(e->s, GAIO_BINARY_MAX, &x, &b, &y, NULL));
    FAILS(GAIO_ERR_INVALID_ARG, gaio_binary(e->s, (gaio_binary_op)(GAIO_BINARY_FMOD + 1), &x, &b, &y, NULL), fn);
    CHECK(strstr(gaio_last_error(), "is not a gaio_binary_op"));
    FAILS(GAIO_ERR_INVALID_ARG, gaio_binary(e->s, (gaio_binary_op)-1, &x, &b, &y, NULL), fn);
    t = b, t.dtype = GAIO_DTYPE_F16; /* pow's exponent of another dtype */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_binary(e->s, GAIO_BINARY_POW, &x, &t, &y, NULL), fn);
    t = b, t.dtype = GAIO_DTYPE_S16; /* an integer exponent: f32 and f16 only */
    FAILS(GAIO_ERR_NOT_SUPPORTED, gaio_binary(e->s, GAIO_BINARY_POW, &x, &t, &y, NULL), fn);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_binary(e->s, GAIO_BINARY_ADD, &x, NULL, &y, NULL), fn);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_binary(e->s, GAIO_BINARY_ADD, &x, &b, &b, NULL), fn); /* b is not y's shape */
    t = b, t.shape[0] = 3; /* 3 does not broadcast to 4 */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_binary(e->s, GAIO_BINARY_MUL, &x, &t, &y, NULL), fn);
    t = y, t.ndim = 3, t.layout = GAIO_TENSOR_ROW_MAJOR, t.shape[0] = 3, t.shape[1] = 4, t.shape[2] = 5;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_binary(e->s, GAIO_BINARY_MUL, &x, &b, &t, NULL), fn); /* y lacks a dimension */
    int64_t s1[4] = {2, 3, 4, 1};
    t = gaio_tensor_make(buf, 4096, GAIO_DTYPE_F32, 4, s1, GAIO_TENSOR_ROW_MAJOR);
    gaio_tensor b5 = gaio_tensor_make(buf, 3072, GAIO_DTYPE_F32, 1, (int64_t[]){5}, GAIO_TENSOR_ROW_MAJOR);
    OK(gaio_binary(e->s, GAIO_BINARY_MUL, &t, &b, &t, NULL)); /* [2,3,4,1] x [4,1]: in place */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_binary(e->s, GAIO_BINARY_MUL, &t, &b5, &t, NULL), fn); /* y is not [2,3,4,5] */
    t = b, t.dtype = GAIO_DTYPE_F16;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_binary(e->s, GAIO_BINARY_SUB, &x, &t, &y, NULL), fn);
    p.op = (gaio_unary_op)-1;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_binary(e->s, GAIO_BINARY_SUB, &x, &b, &y, &p), fn);
    p.op = GAIO_UNARY_RELU;
    t = y, t.offset = 2040; /* y overlaps b */
    t.layout = GAIO_TENSOR_ROW_MAJOR;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_binary(e->s, GAIO_BINARY_DIV, &x, &b, &t, NULL), fn);

    fn = "gaio_batch_norm";
    int64_t c3[1] = {3};
    gaio_tensor sc = gaio_tensor_make(buf, 6144, GAIO_DTYPE_F32, 1, c3, GAIO_TENSOR_ROW_MAJOR);
    gaio_tensor bi = sc, mu = sc, va = sc;
    bi.offset += 16, mu.offset += 32, va.offset += 48;
    OK(gaio_batch_norm(e->s, &x, &y, &sc, &bi, &mu, &va, 1e-5f));
    OK(gaio_batch_norm(e->s, &h, &h, &sc, &sc, &sc, &sc, 0)); /* in place, f16, shared parameters */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_batch_norm(NULL, &x, &y, &sc, &bi, &mu, &va, 1e-5f), fn);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_batch_norm(e->s, &x, &y, NULL, &bi, &mu, &va, 1e-5f), fn);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_batch_norm(e->s, &x, &y, &sc, &bi, &mu, &va, -1), fn);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_batch_norm(e->s, &x, &y, &sc, &bi, &mu, &va, NAN), fn);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_batch_norm(e->s, &x, &h, &sc, &bi, &mu, &va, 1e-5f), fn); /* dtypes differ */
    t = va, t.shape[0] = 4; /* C is 3 */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_batch_norm(e->s, &x, &y, &sc, &bi, &mu, &t, 1e-5f), fn);
    t = mu, t.dtype = GAIO_DTYPE_F16;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_batch_norm(e->s, &x, &y, &sc, &bi, &t, &va, 1e-5f), fn);
    t = gaio_tensor_make(buf, 6144, GAIO_DTYPE_F32, 2, (int64_t[]){1, 3}, GAIO_TENSOR_ROW_MAJOR); /* not 1-D */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_batch_norm(e->s, &x, &y, &t, &bi, &mu, &va, 1e-5f), fn);
    t = gaio_tensor_make(buf, 0, GAIO_DTYPE_F32, 1, (int64_t[]){120}, GAIO_TENSOR_ROW_MAJOR);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_batch_norm(e->s, &t, &t, &sc, &bi, &mu, &va, 1e-5f), fn); /* 1-D x */
    t = sc, t.offset = 512; /* y overlaps scale */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_batch_norm(e->s, &x, &y, &t, &bi, &mu, &va, 1e-5f), fn);

    OK(gaio_stream_synchronize(e->s)); /* nothing bad was enqueued */
    OK(gaio_buffer_release(hostbuf));
    OK(gaio_buffer_release(buf));
}

static void test_all(env *e) {
    test_unary(e);
    test_cast(e);
    test_binary(e);
    test_batch_norm(e);
}

static void run(int device) {
    env e = {0};
    gaio_device_props props;
    OK(gaio_device_get_props(device, &props));
    e.cuda = props.kind == GAIO_DEVICE_CUDA;
    e.rng = test_seed();
    OK(gaio_context_create(device, NULL, &e.ctx));
    OK(gaio_stream_create(e.ctx, 0, 0, &e.s));
    test_all(&e);
    test_bad(&e);
    /* Again on a DEFERRED stream. */
    OK(gaio_stream_release(e.s));
    OK(gaio_stream_create(e.ctx, 0, GAIO_STREAM_DEFERRED, &e.s));
    test_all(&e);
    OK(gaio_stream_release(e.s));
    OK(gaio_context_release(e.ctx));
    test_shutdown();
}
