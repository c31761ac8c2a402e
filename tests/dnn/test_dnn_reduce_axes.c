/* gaio_reduce, gaio_arg_reduce, gaio_topk and gaio_log_softmax on each backend against
 * direct double-precision loops: random shapes of 1 to 5 dimensions, random axis sets
 * (none too), every op, f32 and f16 inputs and outputs, packed, NHWC and gapped
 * strides on either side; long reductions of few outputs (a GPU's block mode), ones
 * over channels of NHWC tensors (warp mode) and over H and W (thread mode); argmax
 * and argmin with many ties both ways and NaNs; top-k largest and smallest with ties,
 * values and indices together and each alone; log-softmax in place too; bad input. */
#include <math.h>
#include <stdbool.h>

#include "common.h"
#include "half.h"

typedef struct env {
    gaio_context *ctx;
    gaio_stream *s;
    uint64_t rng;
} env;

static const gaio_dtype F32 = GAIO_DTYPE_F32, F16 = GAIO_DTYPE_F16, S64 = GAIO_DTYPE_S64;

static float rnd(uint64_t *r) { return (float)((double)(test_rand(r) >> 11) / 9007199254740992.0 * 2.0 - 1.0); }
static int64_t pick(env *e, int64_t n) { return (int64_t)(test_rand(&e->rng) % (uint64_t)n); }

static size_t esize(gaio_dtype dt) { return dt == F16 ? 2 : dt == S64 ? 8 : 4; }

typedef enum mem_kind { MEM_PACKED = 0, MEM_NHWC = 1, MEM_GAPS = 2, MEM_NHWC_GAPS = 3 } mem_kind;

/* A device tensor and the host copy of the memory it spans (gaps included). */
typedef struct htensor {
    gaio_dtype dt;
    int32_t nd;
    int64_t shape[5], strides[5];
    size_t span, lead;
    double *v; /* span values (floats quantised to dt) */
    gaio_tensor t;
} htensor;

/* Values shift + scale * U(-1, 1); `levels` > 0 rounds them to that many steps per
 * unit (ties). */
static void make(env *e, htensor *h, gaio_dtype dt, int32_t nd, const int64_t *shape, mem_kind kind, float shift,
                 float scale, int levels) {
    memset(h, 0, sizeof *h);
    h->dt = dt, h->nd = nd;
    for (int i = 0; i < nd; i++) h->shape[i] = shape[i];
    if ((kind == MEM_NHWC || kind == MEM_NHWC_GAPS) && nd != 4 && nd != 5) kind = kind == MEM_NHWC ? MEM_PACKED : MEM_GAPS;
    int64_t acc = 1, gap = kind >= MEM_GAPS ? 1 + pick(e, 3) : 0;
    if (kind == MEM_NHWC || kind == MEM_NHWC_GAPS) {
        h->strides[1] = 1;
        acc = shape[1] + gap;
        for (int i = nd - 1; i >= 2; i--) h->strides[i] = acc, acc = acc * shape[i] + gap;
        h->strides[0] = acc;
    } else {
        for (int i = nd - 1; i >= 0; i--) h->strides[i] = acc, acc = acc * shape[i] + gap;
    }
    h->span = 1;
    for (int i = 0; i < nd; i++) h->span += (size_t)(h->strides[i] * (shape[i] - 1));
    h->lead = (size_t)pick(e, 3);
    size_t n = h->lead + h->span, es = esize(dt);
    h->v = malloc(h->span * sizeof(double));
    CHECK(h->v);
    gaio_buffer *stage, *dev;
    OK(gaio_buffer_alloc(e->ctx, GAIO_MEM_PINNED, n * es, &stage));
    OK(gaio_buffer_alloc(e->ctx, GAIO_MEM_DEVICE, n * es, &dev));
    void *p;
    OK(gaio_buffer_host_ptr(stage, &p));
    for (size_t i = 0; i < n; i++) {
        float f = shift + scale * rnd(&e->rng);
        if (levels > 0) f = roundf(f * (float)levels) / (float)levels;
        double d = f;
        if (dt == F16) {
            ((uint16_t *)p)[i] = to_half(f);
            d = from_half(to_half(f));
        } else if (dt == S64) {
            ((int64_t *)p)[i] = -7; /* a sentinel: no index is negative */
            d = -7;
        } else {
            ((float *)p)[i] = f;
        }
        if (i >= h->lead) h->v[i - h->lead] = d;
    }
    OK(gaio_memcpy_async(e->s, dev, 0, stage, 0, n * es));
    OK(gaio_buffer_release(stage));
    gaio_tensor_layout lay = kind == MEM_NHWC ? GAIO_TENSOR_NHWC : GAIO_TENSOR_ROW_MAJOR;
    h->t = gaio_tensor_make(dev, h->lead * es, dt, nd, shape, lay);
    if (kind >= MEM_GAPS)
        for (int i = 0; i < nd; i++) h->t.strides[i] = h->strides[i];
}

/* Sets element idx of x (host and device) to v: NaNs. */
static void poke(env *e, htensor *h, const int64_t *idx, float v) {
    int64_t o = 0;
    for (int i = 0; i < h->nd; i++) o += idx[i] * h->strides[i];
    size_t es = esize(h->dt);
    gaio_buffer *stage;
    OK(gaio_buffer_alloc(e->ctx, GAIO_MEM_PINNED, es, &stage));
    void *p;
    OK(gaio_buffer_host_ptr(stage, &p));
    if (h->dt == F16) *(uint16_t *)p = to_half(v);
    else *(float *)p = v;
    h->v[o] = v;
    OK(gaio_memcpy_async(e->s, h->t.buffer, h->t.offset + (size_t)o * es, stage, 0, es));
    OK(gaio_stream_synchronize(e->s));
    OK(gaio_buffer_release(stage));
}

static void drop(htensor *h) {
    OK(gaio_buffer_release(h->t.buffer));
    free(h->v);
}

/* The spanned memory after the stream's work. */
static double *download(env *e, const htensor *h) {
    size_t es = esize(h->dt), n = h->span;
    gaio_buffer *stage;
    OK(gaio_buffer_alloc(e->ctx, GAIO_MEM_PINNED, n * es, &stage));
    OK(gaio_memcpy_async(e->s, stage, 0, h->t.buffer, h->t.offset, n * es));
    OK(gaio_stream_synchronize(e->s));
    void *p;
    OK(gaio_buffer_host_ptr(stage, &p));
    double *out = malloc(n * sizeof(double));
    CHECK(out);
    for (size_t i = 0; i < n; i++)
        out[i] = h->dt == F16 ? from_half(((uint16_t *)p)[i]) : h->dt == S64 ? (double)((int64_t *)p)[i] : ((float *)p)[i];
    OK(gaio_buffer_release(stage));
    return out;
}

static int64_t offset_of(const htensor *h, const int64_t *idx) {
    int64_t o = 0;
    for (int i = 0; i < h->nd; i++) o += idx[i] * h->strides[i];
    return o;
}

static int64_t numel(int32_t nd, const int64_t *shape) {
    int64_t n = 1;
    for (int i = 0; i < nd; i++) n *= shape[i];
    return n;
}

static void unravel(int32_t nd, const int64_t *shape, int64_t k, int64_t *idx) {
    for (int i = nd - 1; i >= 0; i--) idx[i] = k % shape[i], k /= shape[i];
}

/* Memory of y that is no element of it kept its old values. */
static void check_gaps(const htensor *y, const double *got) {
    char *hit = calloc(y->span, 1);
    CHECK(hit);
    int64_t idx[5] = {0}, total = numel(y->nd, y->shape);
    for (int64_t k = 0; k < total; k++) {
        unravel(y->nd, y->shape, k, idx);
        hit[offset_of(y, idx)] = 1;
    }
    for (size_t i = 0; i < y->span; i++)
        if (!hit[i] && !(got[i] == y->v[i])) {
            fprintf(stderr, "y's gap element %zu changed: %g, was %g\n", i, got[i], y->v[i]);
            exit(1);
        }
    free(hit);
}

static void report(const char *what, const char *where, double got, double want, double tol) {
    bool same = (isnan(got) && isnan(want)) || got == want || fabs(got - want) <= tol;
    if (!same) {
        fprintf(stderr, "%s: %s = %.9g, want %.9g (tol %.3g)\n", what, where, got, want, tol);
        exit(1);
    }
}

static const char *const op_names[] = {"sum", "mean", "max", "min", "prod", "l1", "l2", "sum_square", "log_sum",
                                       "log_sum_exp"};

/* ---- gaio_reduce ---- */

static void reduce_case(env *e, gaio_reduce_op op, gaio_dtype xdt, gaio_dtype ydt, int32_t nd, const int64_t *shape,
                        uint32_t axes, mem_kind kx, mem_kind ky) {
    htensor x, y;
    /* LOG_SUM needs a positive sum; PROD stays near 1 so that long products stay finite. */
    float shift = op == GAIO_REDUCE_LOG_SUM ? 1.5f : op == GAIO_REDUCE_PROD ? 1.0f : 0.0f;
    float scale = op == GAIO_REDUCE_PROD ? 0.05f : op == GAIO_REDUCE_LOG_SUM_EXP ? 20.0f
                  : op == GAIO_REDUCE_LOG_SUM ? 1.0f : 2.0f;
    make(e, &x, xdt, nd, shape, kx, shift, scale, 0);
    int64_t yshape[5];
    for (int i = 0; i < nd; i++) yshape[i] = (axes >> i) & 1u ? 1 : shape[i];
    make(e, &y, ydt, nd, yshape, ky, 0, 1, 0);
    gaio_reduce_params p = {op, axes};
    OK(gaio_reduce(e->s, &x.t, &y.t, &p));
    double *got = download(e, &y);
    int64_t outs = numel(nd, yshape), count = numel(nd, shape) / outs;
    int64_t oidx[5], idx[5], rshape[5];
    for (int i = 0; i < nd; i++) rshape[i] = (axes >> i) & 1u ? shape[i] : 1;
    char where[200];
    for (int64_t o = 0; o < outs; o++) {
        unravel(nd, yshape, o, oidx);
        double acc = op == GAIO_REDUCE_PROD ? 1 : op == GAIO_REDUCE_MAX || op == GAIO_REDUCE_LOG_SUM_EXP ? -INFINITY
                     : op == GAIO_REDUCE_MIN ? INFINITY : 0;
        double mag = 0, lse = 0;
        for (int64_t j = 0; j < count; j++) {
            unravel(nd, rshape, j, idx);
            for (int i = 0; i < nd; i++) idx[i] += oidx[i];
            double v = x.v[offset_of(&x, idx)];
            switch (op) {
            case GAIO_REDUCE_MAX:
            case GAIO_REDUCE_LOG_SUM_EXP: acc = v > acc ? v : acc; break;
            case GAIO_REDUCE_MIN: acc = v < acc ? v : acc; break;
            case GAIO_REDUCE_PROD: acc *= v; break;
            case GAIO_REDUCE_L1: acc += fabs(v); break;
            case GAIO_REDUCE_L2:
            case GAIO_REDUCE_SUM_SQUARE: acc += v * v; break;
            default: acc += v;
            }
            mag += op == GAIO_REDUCE_L2 || op == GAIO_REDUCE_SUM_SQUARE ? v * v : fabs(v);
        }
        if (op == GAIO_REDUCE_LOG_SUM_EXP)
            for (int64_t j = 0; j < count; j++) {
                unravel(nd, rshape, j, idx);
                for (int i = 0; i < nd; i++) idx[i] += oidx[i];
                lse += exp(x.v[offset_of(&x, idx)] - acc);
            }
        double want = acc, tol = 0;
        /* f32 accumulation: a few units of 2^-24 per term of the magnitude. */
        double eps = 4e-7 * (double)(count < 16 ? 16 : count);
        switch (op) {
        case GAIO_REDUCE_MEAN: want = acc / (double)count, tol = eps * mag / (double)count; break;
        case GAIO_REDUCE_L2: want = sqrt(acc), tol = eps * sqrt(mag); break;
        case GAIO_REDUCE_LOG_SUM: want = log(acc), tol = eps * mag / acc; break;
        case GAIO_REDUCE_LOG_SUM_EXP: want = acc + log(lse), tol = eps * (1 + fabs(want)) + 1e-5; break;
        case GAIO_REDUCE_PROD: tol = eps * fabs(acc); break;
        case GAIO_REDUCE_MAX:
        case GAIO_REDUCE_MIN: break;
        default: tol = eps * mag;
        }
        if (ydt == F16) tol += fabs(want) * 1e-3 + 1e-7;
        snprintf(where, sizeof where, "%s %s->%s nd %d axes 0x%x kinds %d/%d output %lld of %lld (count %lld)",
                 op_names[op], gaio_dtype_name(xdt), gaio_dtype_name(ydt), (int)nd, (unsigned)axes, (int)kx, (int)ky,
                 (long long)o, (long long)outs, (long long)count);
        report("reduce", where, got[offset_of(&y, oidx)], want, tol);
    }
    check_gaps(&y, got);
    free(got);
    drop(&x);
    drop(&y);
}

static void test_reduce(env *e) {
    /* Random shapes, axis sets and ops. */
    for (int it = 0; it < 300; it++) {
        int32_t nd = 1 + (int32_t)pick(e, 5);
        int64_t shape[5];
        for (int i = 0; i < nd; i++) shape[i] = 1 + pick(e, i == nd - 1 ? 9 : 5);
        uint32_t axes = (uint32_t)pick(e, 1 << nd);
        gaio_reduce_op op = (gaio_reduce_op)pick(e, 10);
        gaio_dtype xdt = pick(e, 2) ? F32 : F16, ydt = pick(e, 3) ? xdt : (xdt == F32 ? F16 : F32);
        reduce_case(e, op, xdt, ydt, nd, shape, axes, (mem_kind)pick(e, 4), (mem_kind)pick(e, 4));
    }
    /* Long reductions of few outputs (a GPU's block mode), all of x, rows of 5000. */
    for (int op = 0; op < 10; op++) {
        reduce_case(e, (gaio_reduce_op)op, F32, F32, 1, (int64_t[]){20000}, 1, MEM_PACKED, MEM_PACKED);
        reduce_case(e, (gaio_reduce_op)op, F16, F32, 2, (int64_t[]){3, 5000}, 2, MEM_GAPS, MEM_PACKED);
    }
    /* A classifier head's spatial mean and channel max, NCHW and NHWC (thread and warp modes). */
    reduce_case(e, GAIO_REDUCE_MEAN, F32, F32, 4, (int64_t[]){2, 64, 7, 7}, 0xc, MEM_NHWC, MEM_NHWC);
    reduce_case(e, GAIO_REDUCE_MEAN, F16, F16, 4, (int64_t[]){2, 64, 7, 7}, 0xc, MEM_PACKED, MEM_PACKED);
    reduce_case(e, GAIO_REDUCE_MAX, F32, F32, 4, (int64_t[]){2, 96, 5, 6}, 0x2, MEM_NHWC, MEM_PACKED);
    reduce_case(e, GAIO_REDUCE_SUM, F16, F16, 4, (int64_t[]){3, 40, 9, 11}, 0x2, MEM_NHWC_GAPS, MEM_GAPS);
    reduce_case(e, GAIO_REDUCE_LOG_SUM_EXP, F32, F32, 3, (int64_t[]){4, 300, 5}, 0x5, MEM_PACKED, MEM_PACKED);
    reduce_case(e, GAIO_REDUCE_L2, F32, F16, 5, (int64_t[]){2, 3, 4, 5, 40}, 0x1b, MEM_GAPS, MEM_PACKED);
    /* No axis: each element as a set of one (ONNX's noop_with_empty_axes). */
    for (int op = 0; op < 10; op++)
        reduce_case(e, (gaio_reduce_op)op, F32, F32, 3, (int64_t[]){2, 3, 4}, 0, MEM_GAPS, MEM_PACKED);
    printf("reduce: ok\n");
}

/* NaN and infinities: max and min keep a NaN; log-sum-exp of infinities is that infinity. */
static void test_reduce_special(env *e) {
    htensor x, y;
    make(e, &x, F32, 2, (int64_t[]){4, 40}, MEM_PACKED, 0, 1, 0);
    make(e, &y, F32, 2, (int64_t[]){4, 1}, MEM_PACKED, 0, 1, 0);
    poke(e, &x, (int64_t[]){0, 17}, NAN);
    poke(e, &x, (int64_t[]){1, 3}, INFINITY);
    for (int i = 0; i < 40; i++) poke(e, &x, (int64_t[]){2, i}, -INFINITY);
    poke(e, &x, (int64_t[]){3, 39}, -INFINITY);
    const gaio_reduce_op ops[] = {GAIO_REDUCE_MAX, GAIO_REDUCE_MIN, GAIO_REDUCE_LOG_SUM_EXP};
    for (int k = 0; k < 3; k++) {
        gaio_reduce_params p = {ops[k], 2};
        OK(gaio_reduce(e->s, &x.t, &y.t, &p));
        double *got = download(e, &y);
        CHECK(isnan(got[0]));
        CHECK(ops[k] == GAIO_REDUCE_MIN ? isfinite(got[1]) : got[1] == INFINITY);
        CHECK(got[2] == -INFINITY);
        CHECK(ops[k] == GAIO_REDUCE_MIN ? got[3] == -INFINITY : isfinite(got[3]));
        free(got);
    }
    drop(&x);
    drop(&y);
    printf("reduce special values: ok\n");
}

/* ---- gaio_arg_reduce ---- */

static bool before(double v, int64_t i, double w, int64_t j, bool largest, bool last) {
    bool vn = isnan(v), wn = isnan(w);
    if (vn != wn) return vn;
    if (!vn && v != w) return largest ? v > w : v < w;
    return last ? i > j : i < j;
}

static void arg_case(env *e, gaio_dtype dt, int32_t nd, const int64_t *shape, int32_t axis, bool min, bool last,
                     mem_kind kx, mem_kind ky, int levels, int nans) {
    htensor x, y;
    make(e, &x, dt, nd, shape, kx, 0, 2, levels);
    for (int k = 0; k < nans; k++) {
        int64_t idx[5];
        unravel(nd, shape, pick(e, numel(nd, shape)), idx);
        poke(e, &x, idx, NAN);
    }
    int32_t ax = axis < 0 ? axis + nd : axis;
    int64_t yshape[5];
    for (int i = 0; i < nd; i++) yshape[i] = i == ax ? 1 : shape[i];
    make(e, &y, S64, nd, yshape, ky, 0, 1, 0);
    gaio_arg_reduce_params p = {axis, min, last};
    OK(gaio_arg_reduce(e->s, &x.t, &y.t, &p));
    double *got = download(e, &y);
    int64_t idx[5];
    char where[160];
    for (int64_t o = 0; o < numel(nd, yshape); o++) {
        unravel(nd, yshape, o, idx);
        int64_t at = 0;
        double best = x.v[offset_of(&x, idx)];
        for (int64_t i = 1; i < shape[ax]; i++) {
            idx[ax] = i;
            double v = x.v[offset_of(&x, idx)];
            if (before(v, i, best, at, !min, last)) best = v, at = i;
        }
        idx[ax] = 0;
        snprintf(where, sizeof where, "arg%s %s nd %d axis %d last %d row %lld", min ? "min" : "max",
                 gaio_dtype_name(dt), (int)nd, (int)axis, (int)last, (long long)o);
        report("arg_reduce", where, got[offset_of(&y, idx)], (double)at, 0);
    }
    check_gaps(&y, got);
    free(got);
    drop(&x);
    drop(&y);
}

static void test_arg(env *e) {
    for (int it = 0; it < 150; it++) {
        int32_t nd = 1 + (int32_t)pick(e, 5);
        int64_t shape[5];
        for (int i = 0; i < nd; i++) shape[i] = 1 + pick(e, 6);
        int32_t axis = (int32_t)pick(e, nd) - (pick(e, 2) ? nd : 0);
        arg_case(e, pick(e, 2) ? F32 : F16, nd, shape, axis, pick(e, 2), pick(e, 2), (mem_kind)pick(e, 4),
                 (mem_kind)pick(e, 4), pick(e, 2) ? 2 : 0, pick(e, 4) == 0 ? 2 : 0);
    }
    /* Long rows (a GPU's warp mode) with ties, and class rows of a classifier. */
    for (int k = 0; k < 4; k++) {
        arg_case(e, F32, 2, (int64_t[]){5, 1000}, 1, k & 1, k >> 1, MEM_PACKED, MEM_PACKED, 1, 0);
        arg_case(e, F16, 4, (int64_t[]){2, 200, 3, 3}, 1, k & 1, k >> 1, MEM_NHWC, MEM_PACKED, 3, k);
    }
    printf("arg_reduce: ok\n");
}

/* ---- gaio_topk ---- */

static void topk_case(env *e, gaio_dtype dt, int32_t nd, const int64_t *shape, int32_t axis, int64_t k, bool largest,
                      int which, mem_kind kx, mem_kind kv, mem_kind ki, int levels) {
    htensor x, v, ix;
    make(e, &x, dt, nd, shape, kx, 0, 3, levels);
    int32_t ax = axis < 0 ? axis + nd : axis;
    int64_t oshape[5];
    for (int i = 0; i < nd; i++) oshape[i] = i == ax ? k : shape[i];
    bool want_v = which != 2, want_i = which != 1;
    if (want_v) make(e, &v, dt, nd, oshape, kv, 0, 1, 0);
    if (want_i) make(e, &ix, S64, nd, oshape, ki, 0, 1, 0);
    gaio_topk_params p = {axis, largest, k};
    OK(gaio_topk(e->s, &x.t, want_v ? &v.t : NULL, want_i ? &ix.t : NULL, &p));
    double *gv = want_v ? download(e, &v) : NULL, *gi = want_i ? download(e, &ix) : NULL;
    int64_t len = shape[ax], *order = malloc((size_t)len * sizeof *order), idx[5];
    CHECK(order);
    char where[160];
    for (int64_t r = 0; r < numel(nd, shape) / len; r++) {
        int64_t q = r;
        for (int i = nd - 1; i >= 0; i--)
            if (i != ax) idx[i] = q % shape[i], q /= shape[i];
        /* The first k of the row sorted by (value, index): insertion, stable. */
        for (int64_t i = 0; i < len; i++) {
            idx[ax] = i;
            double vi = x.v[offset_of(&x, idx)];
            int64_t j = i;
            for (; j > 0; j--) {
                idx[ax] = order[j - 1];
                if (!before(vi, i, x.v[offset_of(&x, idx)], order[j - 1], largest, false)) break;
                order[j] = order[j - 1];
            }
            order[j] = i;
        }
        for (int64_t i = 0; i < k; i++) {
            idx[ax] = order[i];
            double want = x.v[offset_of(&x, idx)];
            idx[ax] = i;
            snprintf(where, sizeof where, "topk %s nd %d axis %d k %lld largest %d row %lld rank %lld",
                     gaio_dtype_name(dt), (int)nd, (int)axis, (long long)k, (int)largest, (long long)r, (long long)i);
            if (want_v) report("topk values", where, gv[offset_of(&v, idx)], want, 0);
            if (want_i) report("topk indices", where, gi[offset_of(&ix, idx)], (double)order[i], 0);
        }
    }
    free(order);
    if (want_v) check_gaps(&v, gv), free(gv), drop(&v);
    if (want_i) check_gaps(&ix, gi), free(gi), drop(&ix);
    drop(&x);
}

static void test_topk(env *e) {
    for (int it = 0; it < 150; it++) {
        int32_t nd = 1 + (int32_t)pick(e, 5);
        int64_t shape[5];
        for (int i = 0; i < nd; i++) shape[i] = 1 + pick(e, 7);
        int32_t axis = (int32_t)pick(e, nd);
        int64_t k = 1 + pick(e, shape[axis]);
        if (pick(e, 2)) axis -= nd;
        topk_case(e, pick(e, 2) ? F32 : F16, nd, shape, axis, k, pick(e, 2), (int)pick(e, 3), (mem_kind)pick(e, 4),
                  (mem_kind)pick(e, 4), (mem_kind)pick(e, 4), pick(e, 2) ? 2 : 0);
    }
    /* A classifier's top 5 of 1000, with ties; all of a row. */
    topk_case(e, F32, 2, (int64_t[]){3, 1000}, 1, 5, true, 0, MEM_PACKED, MEM_PACKED, MEM_PACKED, 4);
    topk_case(e, F16, 2, (int64_t[]){3, 1000}, -1, 5, false, 0, MEM_GAPS, MEM_PACKED, MEM_GAPS, 4);
    topk_case(e, F32, 3, (int64_t[]){2, 37, 3}, 1, 37, true, 0, MEM_PACKED, MEM_GAPS, MEM_PACKED, 1);
    printf("topk: ok\n");
}

/* ---- gaio_log_softmax ---- */

static void lsm_case(env *e, gaio_dtype dt, int32_t nd, const int64_t *shape, int32_t axis, mem_kind kx, mem_kind ky,
                     bool in_place, float shift, float scale) {
    htensor x, y;
    make(e, &x, dt, nd, shape, kx, shift, scale, 0);
    if (!in_place) make(e, &y, dt, nd, shape, ky, 0, 1, 0);
    const htensor *out = in_place ? &x : &y;
    OK(gaio_log_softmax(e->s, &x.t, &out->t, axis));
    double *got = download(e, out);
    int32_t ax = axis < 0 ? axis + nd : axis;
    int64_t len = shape[ax], idx[5];
    char where[160];
    for (int64_t r = 0; r < numel(nd, shape) / len; r++) {
        int64_t q = r;
        for (int i = nd - 1; i >= 0; i--)
            if (i != ax) idx[i] = q % shape[i], q /= shape[i];
        double m = -INFINITY, s = 0;
        for (int64_t i = 0; i < len; i++) idx[ax] = i, m = fmax(m, x.v[offset_of(&x, idx)]);
        for (int64_t i = 0; i < len; i++) idx[ax] = i, s += exp(x.v[offset_of(&x, idx)] - m);
        for (int64_t i = 0; i < len; i++) {
            idx[ax] = i;
            double want = x.v[offset_of(&x, idx)] - m - log(s);
            double tol = (dt == F16 ? 2e-3 : 2e-6) * (fabs(want) + fabs(m)) + 1e-5;
            snprintf(where, sizeof where, "%s nd %d axis %d row %lld elem %lld%s", gaio_dtype_name(dt), (int)nd,
                     (int)axis, (long long)r, (long long)i, in_place ? " in place" : "");
            report("log_softmax", where, got[offset_of(out, idx)], want, tol);
        }
    }
    if (!in_place) check_gaps(&y, got), drop(&y);
    free(got);
    drop(&x);
}

static void test_log_softmax(env *e) {
    lsm_case(e, F32, 2, (int64_t[]){33, 1000}, -1, MEM_PACKED, MEM_PACKED, false, 80, 10);
    lsm_case(e, F16, 2, (int64_t[]){3, 1000}, 1, MEM_PACKED, MEM_GAPS, false, 0, 8);
    lsm_case(e, F32, 4, (int64_t[]){2, 5, 3, 7}, 1, MEM_PACKED, MEM_NHWC, false, 0, 4);
    lsm_case(e, F16, 4, (int64_t[]){3, 10, 2, 3}, 2, MEM_NHWC, MEM_NHWC_GAPS, false, 0, 5);
    lsm_case(e, F32, 5, (int64_t[]){2, 3, 1, 4, 5}, 0, MEM_GAPS, MEM_PACKED, false, 1, 1);
    lsm_case(e, F32, 3, (int64_t[]){4, 6, 9}, -2, MEM_PACKED, MEM_PACKED, true, 1, 3);
    lsm_case(e, F32, 1, (int64_t[]){1}, 0, MEM_PACKED, MEM_PACKED, false, 0, 1);
    printf("log_softmax: ok\n");
}

/* ---- bad input ---- */

static void test_bad(env *e) {
    gaio_buffer *buf, *host;
    OK(gaio_buffer_alloc(e->ctx, GAIO_MEM_DEVICE, 65536, &buf));
    OK(gaio_buffer_alloc(e->ctx, GAIO_MEM_HOST, 4096, &host));
    gaio_tensor x = gaio_tensor_make(buf, 0, F32, 3, (int64_t[]){2, 3, 4}, GAIO_TENSOR_ROW_MAJOR);
    gaio_tensor y = gaio_tensor_make(buf, 8192, F32, 3, (int64_t[]){2, 1, 4}, GAIO_TENSOR_ROW_MAJOR);
    gaio_tensor t;
    const char *fn = "gaio_reduce";
    gaio_reduce_params rp = {GAIO_REDUCE_SUM, 2};
    OK(gaio_reduce(e->s, &x, &y, &rp));
    FAILS(GAIO_ERR_INVALID_ARG, gaio_reduce(NULL, &x, &y, &rp), fn);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_reduce(e->s, &x, &y, NULL), fn);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_reduce(e->s, NULL, &y, &rp), fn);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_reduce(e->s, &x, NULL, &rp), fn);
    rp.op = (gaio_reduce_op)10;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_reduce(e->s, &x, &y, &rp), fn);
    rp.op = GAIO_REDUCE_MAX, rp.axes = 8; /* beyond x's 3 dimensions */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_reduce(e->s, &x, &y, &rp), fn);
    rp.axes = 1; /* y's shape is of axis 1 */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_reduce(e->s, &x, &y, &rp), fn);
    rp.axes = 2;
    t = y, t.ndim = 2; /* the axes dropped: describe them as 1s */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_reduce(e->s, &x, &t, &rp), fn);
    t = y, t.dtype = S64;
    FAILS(GAIO_ERR_NOT_SUPPORTED, gaio_reduce(e->s, &x, &t, &rp), fn);
    t = y, t.offset = 64; /* overlaps x */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_reduce(e->s, &x, &t, &rp), fn);
    t = y, t.strides[0] = 1, t.strides[1] = 1, t.strides[2] = 1; /* elements share memory */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_reduce(e->s, &x, &t, &rp), fn);
    t = y, t.buffer = host; /* pageable host memory: no kernel reaches it */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_reduce(e->s, &x, &t, &rp), fn);

    fn = "gaio_arg_reduce";
    gaio_tensor iy = gaio_tensor_make(buf, 8192, S64, 3, (int64_t[]){2, 3, 1}, GAIO_TENSOR_ROW_MAJOR);
    gaio_arg_reduce_params ap = {-1, 0, 0};
    OK(gaio_arg_reduce(e->s, &x, &iy, &ap));
    FAILS(GAIO_ERR_INVALID_ARG, gaio_arg_reduce(e->s, &x, &iy, NULL), fn);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_arg_reduce(e->s, &x, &y, &ap), fn); /* f32 indices */
    ap.axis = 3;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_arg_reduce(e->s, &x, &iy, &ap), fn);
    ap.axis = -4;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_arg_reduce(e->s, &x, &iy, &ap), fn);
    ap.axis = 1; /* iy is of axis 2 */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_arg_reduce(e->s, &x, &iy, &ap), fn);
    ap.axis = 2;
    t = iy, t.offset = 4; /* not a whole s64 */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_arg_reduce(e->s, &x, &t, &ap), fn);
    t = iy, t.offset = 0; /* overlaps x */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_arg_reduce(e->s, &x, &t, &ap), fn);

    fn = "gaio_topk";
    gaio_tensor tv = gaio_tensor_make(buf, 8192, F32, 3, (int64_t[]){2, 3, 2}, GAIO_TENSOR_ROW_MAJOR);
    gaio_tensor ti = gaio_tensor_make(buf, 16384, S64, 3, (int64_t[]){2, 3, 2}, GAIO_TENSOR_ROW_MAJOR);
    gaio_topk_params tp = {2, 1, 2};
    OK(gaio_topk(e->s, &x, &tv, &ti, &tp));
    OK(gaio_topk(e->s, &x, NULL, &ti, &tp));
    OK(gaio_topk(e->s, &x, &tv, NULL, &tp));
    FAILS(GAIO_ERR_INVALID_ARG, gaio_topk(e->s, &x, NULL, NULL, &tp), fn);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_topk(e->s, &x, &tv, &ti, NULL), fn);
    tp.k = 0;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_topk(e->s, &x, &tv, &ti, &tp), fn);
    tp.k = 5; /* x has 4 along axis 2 */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_topk(e->s, &x, &tv, &ti, &tp), fn);
    tp.k = 3; /* the outputs are of k 2 */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_topk(e->s, &x, &tv, &ti, &tp), fn);
    tp.k = 2;
    t = tv, t.dtype = F16;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_topk(e->s, &x, &t, &ti, &tp), fn);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_topk(e->s, &x, &tv, &tv, &tp), fn); /* f32 indices */
    t = ti, t.offset = 8192 + 8; /* overlaps values */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_topk(e->s, &x, &tv, &t, &tp), fn);
    tp.axis = 3;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_topk(e->s, &x, &tv, &ti, &tp), fn);

    fn = "gaio_log_softmax";
    gaio_tensor ly = gaio_tensor_make(buf, 8192, F32, 3, (int64_t[]){2, 3, 4}, GAIO_TENSOR_ROW_MAJOR);
    OK(gaio_log_softmax(e->s, &x, &ly, -1));
    OK(gaio_log_softmax(e->s, &x, &x, 0));
    FAILS(GAIO_ERR_INVALID_ARG, gaio_log_softmax(NULL, &x, &ly, 0), fn);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_log_softmax(e->s, &x, &ly, 3), fn);
    t = ly, t.shape[2] = 3;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_log_softmax(e->s, &x, &t, 0), fn);
    t = ly, t.dtype = F16;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_log_softmax(e->s, &x, &t, 0), fn);
    t = ly, t.offset = 4; /* overlaps x, not in place */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_log_softmax(e->s, &x, &t, 0), fn);

    OK(gaio_stream_synchronize(e->s)); /* nothing bad was enqueued */
    OK(gaio_buffer_release(host));
    OK(gaio_buffer_release(buf));
    printf("bad input: ok\n");
}

static void run_all(env *e) {
    test_reduce(e);
    test_reduce_special(e);
    test_arg(e);
    test_topk(e);
    test_log_softmax(e);
}

static void run(int device) {
    env e = {0};
    e.rng = test_seed();
    OK(gaio_context_create(device, NULL, &e.ctx));
    OK(gaio_stream_create(e.ctx, 0, 0, &e.s));
    run_all(&e);
    test_bad(&e);
    /* The same on a DEFERRED stream. */
    OK(gaio_stream_release(e.s));
    OK(gaio_stream_create(e.ctx, 0, GAIO_STREAM_DEFERRED, &e.s));
    run_all(&e);
    OK(gaio_stream_release(e.s));
    OK(gaio_context_release(e.ctx));
    test_shutdown();
}
