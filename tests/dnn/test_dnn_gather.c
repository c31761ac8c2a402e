/* gaio_gather, gaio_gather_elements, gaio_where, gaio_pad (and gaio_cast's copies of
 * reversed views and integers, Slice's path) on each backend against direct loops:
 * random shapes of 1 to 5 dimensions, every axis (negative ones too), negative and
 * out-of-range indices (clamped), s32 and s64 indices, scalar indices, NumPy
 * broadcasting, every pad mode with pads longer than the input and negative pads,
 * tensors packed NCHW, NHWC, with gaps and reversed (negative strides), f32, f16 and
 * integer data; bad input for each op. Random cases from a printed seed. */
#include <math.h>
#include <stdbool.h>

#include "common.h"
#include "half.h"

typedef struct env {
    gaio_context *ctx;
    gaio_stream *s;
    uint64_t rng;
} env;

static const gaio_dtype F32 = GAIO_DTYPE_F32, F16 = GAIO_DTYPE_F16, S32 = GAIO_DTYPE_S32, S64 = GAIO_DTYPE_S64,
                        U8 = GAIO_DTYPE_U8;

static int64_t rint_in(env *e, int64_t lo, int64_t hi) { /* [lo, hi] */
    return lo + (int64_t)(test_rand(&e->rng) % (uint64_t)(hi - lo + 1));
}

/* How a test tensor lies in memory. */
typedef enum mem_kind {
    MEM_PACKED = 0,    /* ROW_MAJOR, strides left 0 */
    MEM_NHWC = 1,      /* NHWC layout, strides left 0 (4-D and 5-D) */
    MEM_GAPS = 2,      /* explicit row-major strides with gaps */
    MEM_NHWC_GAPS = 3, /* channels innermost with gaps (4-D and 5-D) */
    MEM_REVERSED = 4,  /* gaps, and some dimensions walked backwards (negative strides) */
    MEM_KINDS = 5
} mem_kind;

/* A device tensor and a host copy of the memory it spans, as doubles (every test value
 * is exact in its dtype). */
typedef struct htensor {
    gaio_dtype dt;
    int32_t nd;
    int64_t shape[5], strides[5];
    size_t span, base; /* elements spanned; the position of element [0, ...] among them */
    double *v;
    gaio_tensor t;
} htensor;

static void put(void *p, size_t i, gaio_dtype dt, double v) {
    switch (dt) {
    case GAIO_DTYPE_F32: ((float *)p)[i] = (float)v; break;
    case GAIO_DTYPE_F16: ((uint16_t *)p)[i] = to_half((float)v); break;
    case GAIO_DTYPE_S32: ((int32_t *)p)[i] = (int32_t)v; break;
    case GAIO_DTYPE_S64: ((int64_t *)p)[i] = (int64_t)v; break;
    default: ((uint8_t *)p)[i] = (uint8_t)v; break;
    }
}

static double get(const void *p, size_t i, gaio_dtype dt) {
    switch (dt) {
    case GAIO_DTYPE_F32: return ((const float *)p)[i];
    case GAIO_DTYPE_F16: return from_half(((const uint16_t *)p)[i]);
    case GAIO_DTYPE_S32: return ((const int32_t *)p)[i];
    case GAIO_DTYPE_S64: return (double)((const int64_t *)p)[i];
    default: return ((const uint8_t *)p)[i];
    }
}

/* A value of dtype dt, exact in it. */
static double random_value(env *e, gaio_dtype dt) {
    if (dt == U8) return (double)rint_in(e, 0, 255);
    if (dt == S32 || dt == S64) return (double)rint_in(e, -1000000, 1000000);
    double f = (double)rint_in(e, -2047, 2047) / 64.0; /* 11 significant bits: exact in f16 */
    return f;
}

static bool nhwc_ok(int32_t nd) { return nd == 4 || nd == 5; }

/* The tensor, its memory filled by fill(i) (NULL: random values), i counting the
 * spanned memory from its lowest element. */
static void make(env *e, htensor *h, gaio_dtype dt, int32_t nd, const int64_t *shape, mem_kind kind,
                 double (*fill)(env *, size_t, void *), void *ctx) {
    memset(h, 0, sizeof *h);
    if ((kind == MEM_NHWC || kind == MEM_NHWC_GAPS) && !nhwc_ok(nd)) kind = MEM_GAPS;
    h->dt = dt, h->nd = nd;
    for (int i = 0; i < nd; i++) h->shape[i] = shape[i];
    int64_t acc = 1, gap = kind >= MEM_GAPS ? 1 + (int64_t)(test_rand(&e->rng) % 3) : 0;
    if (kind == MEM_NHWC || kind == MEM_NHWC_GAPS) {
        h->strides[1] = 1;
        acc = shape[1] + gap;
        for (int i = nd - 1; i >= 2; i--) h->strides[i] = acc, acc = acc * shape[i] + gap;
        h->strides[0] = acc;
    } else {
        for (int i = nd - 1; i >= 0; i--) h->strides[i] = acc, acc = acc * shape[i] + gap;
    }
    if (kind == MEM_REVERSED) {
        bool any = false;
        for (int i = 0; i < nd; i++)
            if (shape[i] > 1 && (test_rand(&e->rng) & 1)) h->strides[i] = -h->strides[i], any = true;
        if (!any) /* at least one dimension backwards */
            for (int i = nd - 1; i >= 0 && !any; i--)
                if (shape[i] > 1) h->strides[i] = -h->strides[i], any = true;
    }
    h->span = 1, h->base = 0;
    for (int i = 0; i < nd; i++) {
        int64_t s = h->strides[i];
        h->span += (size_t)((s < 0 ? -s : s) * (shape[i] - 1));
        if (s < 0) h->base += (size_t)(-s * (shape[i] - 1));
    }
    size_t lead = (size_t)(test_rand(&e->rng) % 3), n = lead + h->span, es = gaio_dtype_size(dt);
    h->v = malloc(h->span * sizeof(double));
    CHECK(h->v);
    gaio_buffer *stage, *dev;
    OK(gaio_buffer_alloc(e->ctx, GAIO_MEM_PINNED, n * es, &stage));
    OK(gaio_buffer_alloc(e->ctx, GAIO_MEM_DEVICE, n * es, &dev));
    void *p;
    OK(gaio_buffer_host_ptr(stage, &p));
    for (size_t i = 0; i < n; i++) {
        double f = i >= lead && fill ? fill(e, i - lead, ctx) : random_value(e, dt);
        put(p, i, dt, f);
        if (i >= lead) h->v[i - lead] = get(p, i, dt);
    }
    OK(gaio_memcpy_async(e->s, dev, 0, stage, 0, n * es));
    OK(gaio_buffer_release(stage));
    gaio_tensor_layout lay = kind == MEM_NHWC ? GAIO_TENSOR_NHWC : GAIO_TENSOR_ROW_MAJOR;
    h->t = gaio_tensor_make(dev, (lead + h->base) * es, dt, nd, shape, lay);
    if (kind >= MEM_GAPS)
        for (int i = 0; i < nd; i++) h->t.strides[i] = h->strides[i];
}

static void drop(htensor *h) {
    OK(gaio_buffer_release(h->t.buffer));
    free(h->v);
}

/* The spanned memory after the stream's work. */
static double *download(env *e, const htensor *h) {
    size_t es = gaio_dtype_size(h->dt), n = h->span;
    gaio_buffer *stage;
    OK(gaio_buffer_alloc(e->ctx, GAIO_MEM_PINNED, n * es, &stage));
    OK(gaio_memcpy_async(e->s, stage, 0, h->t.buffer, h->t.offset - h->base * es, n * es));
    OK(gaio_stream_synchronize(e->s));
    void *p;
    OK(gaio_buffer_host_ptr(stage, &p));
    double *out = malloc(n * sizeof(double));
    CHECK(out);
    for (size_t i = 0; i < n; i++) out[i] = get(p, i, h->dt);
    OK(gaio_buffer_release(stage));
    return out;
}

/* The memory position of element idx. */
static size_t pos(const htensor *h, const int64_t *idx) {
    int64_t o = (int64_t)h->base;
    for (int i = 0; i < h->nd; i++) o += idx[i] * h->strides[i];
    return (size_t)o;
}

static double at(const htensor *h, const int64_t *idx) { return h->v[pos(h, idx)]; }

static int64_t count(const htensor *h) {
    int64_t n = 1;
    for (int i = 0; i < h->nd; i++) n *= h->shape[i];
    return n;
}

static void unflat(const htensor *h, int64_t k, int64_t *idx) {
    for (int i = h->nd - 1; i >= 0; i--) idx[i] = k % h->shape[i], k /= h->shape[i];
}

/* Every element of y against want(idx); memory of y that is no element of it unchanged. */
static void verify(env *e, const char *what, const htensor *y, double (*want)(const int64_t *, void *), void *ctx) {
    double *got = download(e, y);
    char *hit = calloc(y->span, 1);
    CHECK(hit);
    int64_t idx[5] = {0}, total = count(y);
    for (int64_t k = 0; k < total; k++) {
        unflat(y, k, idx);
        size_t p = pos(y, idx);
        hit[p] = 1;
        double w = want(idx, ctx);
        if (!(got[p] == w)) {
            fprintf(stderr, "%s (%s): element %lld [%lld, %lld, %lld, %lld, %lld] is %.9g, want %.9g\n", what,
                    gaio_dtype_name(y->dt), (long long)k, (long long)idx[0], (long long)idx[1], (long long)idx[2],
                    (long long)idx[3], (long long)idx[4], got[p], w);
            exit(1);
        }
    }
    for (size_t i = 0; i < y->span; i++)
        if (!hit[i] && !(got[i] == y->v[i])) {
            fprintf(stderr, "%s: y's gap element %zu changed: %g, was %g\n", what, i, got[i], y->v[i]);
            exit(1);
        }
    free(hit);
    free(got);
}

static mem_kind any_kind(env *e) { return (mem_kind)(test_rand(&e->rng) % MEM_KINDS); }
static gaio_dtype any_data_dtype(env *e) {
    static const gaio_dtype dts[] = {GAIO_DTYPE_F32, GAIO_DTYPE_F16, GAIO_DTYPE_F32, GAIO_DTYPE_F16, GAIO_DTYPE_S32,
                                     GAIO_DTYPE_S64, GAIO_DTYPE_U8};
    return dts[test_rand(&e->rng) % 7];
}

/* ---- gather and gather_elements ---- */

typedef struct gather_ctx {
    const htensor *x, *ind;
    int32_t ax, q; /* q: indices' dimensions in y (0: a scalar index) */
    bool elements;
} gather_ctx;

static int64_t lo_index, hi_index; /* the range indices are drawn from */
static double fill_index(env *e, size_t i, void *ctx) {
    (void)i, (void)ctx;
    return (double)rint_in(e, lo_index, hi_index);
}

static int64_t clamped(int64_t k, int64_t s) {
    if (k < 0) k += s;
    return k < 0 ? 0 : k >= s ? s - 1 : k;
}

static double gather_want(const int64_t *idx, void *p) {
    const gather_ctx *g = p;
    int64_t xi[5], ii[5] = {0};
    if (g->elements) {
        for (int d = 0; d < g->x->nd; d++) xi[d] = idx[d];
        xi[g->ax] = clamped((int64_t)at(g->ind, idx), g->x->shape[g->ax]);
        return at(g->x, xi);
    }
    int32_t nd = g->x->nd;
    for (int d = 0; d < g->q; d++) ii[d] = idx[g->ax + d];
    for (int d = 0; d < g->ax; d++) xi[d] = idx[d];
    xi[g->ax] = clamped((int64_t)at(g->ind, ii), g->x->shape[g->ax]);
    for (int d = g->ax + 1; d < nd; d++) xi[d] = idx[d - 1 + g->q];
    return at(g->x, xi);
}

static void gather_case(env *e, bool elements, bool out_of_range) {
    int32_t nd = (int32_t)rint_in(e, 1, elements ? 5 : 4), ax = (int32_t)rint_in(e, 0, nd - 1);
    int64_t xs[5], is[5], ys[5];
    for (int d = 0; d < nd; d++) xs[d] = rint_in(e, 1, 6);
    gaio_dtype dt = any_data_dtype(e), it = (test_rand(&e->rng) & 1) ? S64 : S32;
    int32_t q, ind_nd, y_nd;
    if (elements) {
        q = nd, ind_nd = y_nd = nd;
        for (int d = 0; d < nd; d++) is[d] = d == ax ? rint_in(e, 1, 7) : rint_in(e, 1, xs[d]);
        memcpy(ys, is, sizeof is);
    } else {
        q = (int32_t)rint_in(e, nd > 1 ? 0 : 1, 5 - (nd - 1)); /* y of 1 to 5 dimensions */
        ind_nd = q ? q : 1;
        for (int d = 0; d < ind_nd; d++) is[d] = q ? rint_in(e, 1, 4) : 1;
        y_nd = 0;
        for (int d = 0; d < ax; d++) ys[y_nd++] = xs[d];
        for (int d = 0; d < q; d++) ys[y_nd++] = is[d];
        for (int d = ax + 1; d < nd; d++) ys[y_nd++] = xs[d];
    }
    int64_t s = xs[ax];
    lo_index = out_of_range ? -s - 3 : -s, hi_index = out_of_range ? s + 3 : s - 1;
    htensor x, ind, y;
    make(e, &x, dt, nd, xs, any_kind(e), NULL, NULL);
    make(e, &ind, it, ind_nd, is, any_kind(e), fill_index, NULL);
    make(e, &y, dt, y_nd, ys, any_kind(e), NULL, NULL);
    int32_t axis = (test_rand(&e->rng) & 1) ? ax - nd : ax;
    if (elements)
        OK(gaio_gather_elements(e->s, &x.t, &ind.t, &y.t, axis));
    else
        OK(gaio_gather(e->s, &x.t, &ind.t, &y.t, axis));
    gather_ctx g = {&x, &ind, ax, q, elements};
    char what[96];
    snprintf(what, sizeof what, "%s nd %d axis %d q %d%s", elements ? "gather_elements" : "gather", (int)nd,
             (int)axis, (int)q, out_of_range ? " out of range" : "");
    verify(e, what, &y, gather_want, &g);
    drop(&x), drop(&ind), drop(&y);
}

/* ---- where ---- */

typedef struct where_ctx {
    const htensor *t[3];
} where_ctx;

static double fill_bool(env *e, size_t i, void *ctx) {
    (void)i, (void)ctx;
    uint64_t r = test_rand(&e->rng) % 4;
    return r == 0 ? 0.0 : r == 1 ? 1.0 : r == 2 ? 0.0 : 7.0; /* any non-zero is true */
}

/* Element idx of y (nd dimensions) in t, broadcast. */
static double bcast_at(const htensor *t, int32_t nd, const int64_t *idx) {
    int64_t ti[5];
    for (int d = 0; d < t->nd; d++) {
        int32_t yd = d + nd - t->nd;
        ti[d] = t->shape[d] == 1 ? 0 : idx[yd];
    }
    return at(t, ti);
}

static int32_t where_nd;
static double where_want(const int64_t *idx, void *p) {
    const where_ctx *w = p;
    return bcast_at(w->t[0], where_nd, idx) != 0 ? bcast_at(w->t[1], where_nd, idx) : bcast_at(w->t[2], where_nd, idx);
}

static void where_case(env *e) {
    int32_t nd = (int32_t)rint_in(e, 1, 5);
    int64_t ys[5], ts[3][5];
    int32_t tn[3];
    for (int d = 0; d < nd; d++) ys[d] = rint_in(e, 1, 5);
    for (int k = 0; k < 3; k++) {
        tn[k] = (int32_t)rint_in(e, 1, nd);
        for (int d = 0; d < tn[k]; d++) ts[k][d] = (test_rand(&e->rng) % 3) ? ys[d + nd - tn[k]] : 1;
    }
    /* y is the broadcast shape: make some input span each dimension. */
    for (int d = 0; d < nd; d++) {
        int k = (int)(test_rand(&e->rng) % 3);
        if (tn[k] < nd - d) {
            int32_t grow = nd - d, old = tn[k];
            memmove(ts[k] + (grow - old), ts[k], (size_t)old * sizeof(int64_t));
            for (int i = 0; i < grow - old; i++) ts[k][i] = 1;
            tn[k] = grow;
        }
        ts[k][d - (nd - tn[k])] = ys[d];
    }
    gaio_dtype dt = any_data_dtype(e);
    htensor c, a, b, y;
    make(e, &c, U8, tn[0], ts[0], any_kind(e), fill_bool, NULL);
    make(e, &a, dt, tn[1], ts[1], any_kind(e), NULL, NULL);
    make(e, &b, dt, tn[2], ts[2], any_kind(e), NULL, NULL);
    make(e, &y, dt, nd, ys, any_kind(e), NULL, NULL);
    OK(gaio_where(e->s, &c.t, &a.t, &b.t, &y.t));
    where_ctx w = {{&c, &a, &b}};
    where_nd = nd;
    char what[64];
    snprintf(what, sizeof what, "where nd %d (ranks %d, %d, %d)", (int)nd, (int)tn[0], (int)tn[1], (int)tn[2]);
    verify(e, what, &y, where_want, &w);
    drop(&c), drop(&a), drop(&b), drop(&y);
}

/* ---- pad ---- */

typedef struct pad_ctx {
    const htensor *x;
    gaio_pad_params p;
    int64_t cut[5], left[5]; /* what the negative begin pads cut off x, and what stays */
    double fill;
} pad_ctx;

/* numpy.pad's definitions, written out plainly: the source of y's coordinate c along a
 * dimension of `len` kept elements padded by `b` before them, or -1 for the fill. */
static int64_t pad_source(int64_t c, int64_t b, int64_t len, gaio_pad_mode mode) {
    int64_t s = c - b;
    if (s >= 0 && s < len) return s;
    switch (mode) {
    case GAIO_PAD_CONSTANT: return -1;
    case GAIO_PAD_EDGE: return s < 0 ? 0 : len - 1;
    case GAIO_PAD_WRAP: return ((s % len) + len) % len;
    default:
        if (len == 1) return 0;
        while (s < 0 || s >= len) s = s < 0 ? -s : 2 * (len - 1) - s; /* mirror until inside */
        return s;
    }
}

static double pad_want(const int64_t *idx, void *ctx) {
    const pad_ctx *p = ctx;
    int64_t xi[5];
    for (int d = 0; d < p->x->nd; d++) {
        int64_t b = p->p.begin[d] > 0 ? p->p.begin[d] : 0;
        int64_t s = pad_source(idx[d], b, p->left[d], p->p.mode);
        if (s < 0) return p->fill;
        xi[d] = s + p->cut[d];
    }
    return at(p->x, xi);
}

static void pad_case(env *e, gaio_pad_mode mode, bool cuts) {
    int32_t nd = (int32_t)rint_in(e, 1, 5);
    int64_t xs[5], ys[5];
    pad_ctx pc;
    memset(&pc, 0, sizeof pc);
    pc.p.mode = mode;
    for (int d = 0; d < nd; d++) {
        xs[d] = rint_in(e, 1, nd > 3 ? 4 : 5);
        int64_t most = nd > 3 ? 2 : 4; /* outputs of a few thousand elements */
        int64_t b = rint_in(e, cuts ? -2 : 0, most), en = rint_in(e, cuts ? -2 : 0, most);
        if (b < -(xs[d] - 1)) b = -(xs[d] - 1);
        if (en < 0 && xs[d] + (b < 0 ? b : 0) + en < 1) en = 0;
        pc.p.begin[d] = b;
        pc.cut[d] = b < 0 ? -b : 0;
        pc.left[d] = xs[d] + (b < 0 ? b : 0) + (en < 0 ? en : 0);
        ys[d] = xs[d] + b + en;
    }
    gaio_dtype dt = any_data_dtype(e);
    htensor x, y;
    make(e, &x, dt, nd, xs, any_kind(e), NULL, NULL);
    make(e, &y, dt, nd, ys, any_kind(e), NULL, NULL);
    pc.fill = random_value(e, dt);
    if (dt == U8) pc.fill = 200;
    pc.p.value = pc.fill;
    pc.x = &x;
    OK(gaio_pad(e->s, &x.t, &y.t, &pc.p));
    char what[96];
    snprintf(what, sizeof what, "pad mode %d nd %d begin %lld %lld %lld", (int)mode, (int)nd,
             (long long)pc.p.begin[0], (long long)pc.p.begin[nd > 1], (long long)pc.p.begin[nd - 1]);
    verify(e, what, &y, pad_want, &pc);
    drop(&x), drop(&y);
}

/* ---- copies of reversed views (Slice with negative steps) and of integers ---- */

static const htensor *copy_x;
static double copy_want(const int64_t *idx, void *ctx) {
    (void)ctx;
    return at(copy_x, idx);
}

static void copy_case(env *e) {
    int32_t nd = (int32_t)rint_in(e, 1, 5);
    int64_t xs[5];
    for (int d = 0; d < nd; d++) xs[d] = rint_in(e, 1, 6);
    gaio_dtype dt = any_data_dtype(e);
    htensor x, y;
    make(e, &x, dt, nd, xs, MEM_REVERSED, NULL, NULL);
    make(e, &y, dt, nd, xs, any_kind(e), NULL, NULL);
    if (dt == F32 || dt == F16) {
        gaio_unary_params p = {GAIO_UNARY_IDENTITY, 0, 0};
        OK(gaio_unary(e->s, &x.t, &y.t, &p));
    } else {
        OK(gaio_cast(e->s, &x.t, &y.t));
    }
    copy_x = &x;
    verify(e, "copy of a reversed view", &y, copy_want, NULL);
    drop(&x), drop(&y);
}

/* ---- bad input ---- */

static void test_bad(env *e) {
    gaio_buffer *buf;
    OK(gaio_buffer_alloc(e->ctx, GAIO_MEM_DEVICE, 8192, &buf));
    gaio_tensor x = gaio_tensor_make(buf, 0, F32, 2, (int64_t[]){4, 5}, GAIO_TENSOR_ROW_MAJOR);
    gaio_tensor ind = gaio_tensor_make(buf, 1024, S64, 1, (int64_t[]){3}, GAIO_TENSOR_ROW_MAJOR);
    gaio_tensor y = gaio_tensor_make(buf, 2048, F32, 2, (int64_t[]){3, 5}, GAIO_TENSOR_ROW_MAJOR);
    gaio_tensor t;
    const char *fn = "gaio_gather";
    OK(gaio_gather(e->s, &x, &ind, &y, 0));
    OK(gaio_gather(e->s, &x, &ind, &y, -2));
    FAILS(GAIO_ERR_INVALID_ARG, gaio_gather(NULL, &x, &ind, &y, 0), fn);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_gather(e->s, NULL, &ind, &y, 0), fn);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_gather(e->s, &x, &ind, &y, 2), fn);  /* axis out of range */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_gather(e->s, &x, &ind, &y, -3), fn);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_gather(e->s, &x, &ind, &y, 1), fn);  /* y [3, 5] is not [4, 3] */
    t = ind, t.dtype = F32;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_gather(e->s, &x, &t, &y, 0), fn);
    CHECK(strstr(gaio_last_error(), "s32 or s64"));
    t = y, t.dtype = F16;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_gather(e->s, &x, &ind, &t, 0), fn);
    t = y, t.offset = 16; /* overlaps x */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_gather(e->s, &x, &ind, &t, 0), fn);
    t = y, t.offset = 1024 + 8; /* overlaps the indices */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_gather(e->s, &x, &ind, &t, 0), fn);
    t = y, t.strides[0] = 1, t.strides[1] = 1; /* elements share memory */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_gather(e->s, &x, &ind, &t, 0), fn);
    t = x, t.strides[0] = -5, t.strides[1] = 1; /* reaches below the buffer's start */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_gather(e->s, &t, &ind, &y, 0), fn);
    CHECK(strstr(gaio_last_error(), "below"));
    t = x, t.offset = 8192 - 4, t.strides[0] = -5, t.strides[1] = -1; /* the last element, walked back: fine */
    OK(gaio_gather(e->s, &t, &ind, &y, 0));
    t = y, t.ndim = 1; /* one index only stands for a scalar one */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_gather(e->s, &x, &ind, &t, 0), fn);
    gaio_tensor one = ind, row = y;
    one.shape[0] = 1, row.ndim = 1, row.shape[0] = 5; /* a scalar index: y [5] */
    OK(gaio_gather(e->s, &x, &one, &row, 0));

    fn = "gaio_gather_elements";
    gaio_tensor ie = gaio_tensor_make(buf, 1024, S32, 2, (int64_t[]){3, 5}, GAIO_TENSOR_ROW_MAJOR);
    OK(gaio_gather_elements(e->s, &x, &ie, &y, 0));
    FAILS(GAIO_ERR_INVALID_ARG, gaio_gather_elements(e->s, &x, &ind, &y, 0), fn); /* rank */
    t = ie, t.shape[1] = 6;
    gaio_tensor y6 = y;
    y6.shape[1] = 6;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_gather_elements(e->s, &x, &t, &y6, 0), fn); /* 6 > x's 5 off the axis */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_gather_elements(e->s, &x, &ie, &y6, 0), fn); /* y not indices' shape */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_gather_elements(e->s, &x, &ie, &y, 2), fn);

    fn = "gaio_where";
    gaio_tensor c = gaio_tensor_make(buf, 4096, U8, 1, (int64_t[]){5}, GAIO_TENSOR_ROW_MAJOR);
    gaio_tensor wb = gaio_tensor_make(buf, 5000, F32, 2, (int64_t[]){4, 1}, GAIO_TENSOR_ROW_MAJOR);
    gaio_tensor wy = gaio_tensor_make(buf, 6144, F32, 2, (int64_t[]){4, 5}, GAIO_TENSOR_ROW_MAJOR);
    OK(gaio_where(e->s, &c, &x, &wb, &wy));
    FAILS(GAIO_ERR_INVALID_ARG, gaio_where(NULL, &c, &x, &wb, &wy), fn);
    t = c, t.dtype = S32;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_where(e->s, &t, &x, &wb, &wy), fn);
    t = wb, t.dtype = F16;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_where(e->s, &c, &x, &t, &wy), fn);
    t = c, t.shape[0] = 3;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_where(e->s, &t, &x, &wb, &wy), fn); /* 3 against 5 */
    t = wy, t.shape[1] = 1;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_where(e->s, &c, &x, &wb, &t), fn); /* y not the broadcast shape */
    t = wy, t.ndim = 3, t.shape[2] = 1;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_where(e->s, &c, &x, &wb, &t), fn);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_where(e->s, &c, &x, &wb, &x), fn); /* in place */

    fn = "gaio_pad";
    gaio_pad_params p = {GAIO_PAD_REFLECT, {1, -1}, 0};
    gaio_tensor py = gaio_tensor_make(buf, 6144, F32, 2, (int64_t[]){7, 3}, GAIO_TENSOR_ROW_MAJOR); /* 4+1+2, 5-1-1 */
    OK(gaio_pad(e->s, &x, &py, &p));
    FAILS(GAIO_ERR_INVALID_ARG, gaio_pad(NULL, &x, &py, &p), fn);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_pad(e->s, &x, &py, NULL), fn);
    gaio_pad_params q = p;
    q.mode = (gaio_pad_mode)4;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_pad(e->s, &x, &py, &q), fn);
    q = p, q.begin[1] = -5; /* cuts all of x */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_pad(e->s, &x, &py, &q), fn);
    q = p, q.begin[1] = -3; /* 5 - 3 before, 5 - 3 - 3 + ... = cuts 3 and 1: one left */
    t = py, t.shape[1] = 1;
    OK(gaio_pad(e->s, &x, &t, &q));
    t = py, t.shape[1] = 1, q.begin[1] = -4; /* cuts 4 before and 0 after: one left */
    OK(gaio_pad(e->s, &x, &t, &q));
    q = p, q.begin[0] = 8;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_pad(e->s, &x, &py, &q), fn); /* more than y holds */
    t = py, t.ndim = 1;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_pad(e->s, &x, &t, &p), fn);
    t = py, t.dtype = F16;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_pad(e->s, &x, &t, &p), fn);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_pad(e->s, &x, &x, &(gaio_pad_params){GAIO_PAD_EDGE, {0, 0}, 0}), fn);
    gaio_tensor ux = gaio_tensor_make(buf, 0, U8, 1, (int64_t[]){4}, GAIO_TENSOR_ROW_MAJOR);
    gaio_tensor uy = gaio_tensor_make(buf, 100, U8, 1, (int64_t[]){6}, GAIO_TENSOR_ROW_MAJOR);
    q = (gaio_pad_params){GAIO_PAD_CONSTANT, {1}, 300};
    FAILS(GAIO_ERR_INVALID_ARG, gaio_pad(e->s, &ux, &uy, &q), fn); /* no u8 value */
    q.value = 1.5;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_pad(e->s, &ux, &uy, &q), fn);
    q.value = 255;
    OK(gaio_pad(e->s, &ux, &uy, &q));
    q.mode = GAIO_PAD_EDGE, q.value = 1e30; /* the value is only CONSTANT's */
    OK(gaio_pad(e->s, &ux, &uy, &q));

    /* Negative strides stay refused where an op does not take them. */
    fn = "gaio_tensor_check";
    t = x, t.offset = 8192 - 4, t.strides[0] = -5, t.strides[1] = -1;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_tensor_check(&t, NULL, NULL), fn);
    fn = "gaio_gemm";
    gaio_gemm_params gp = {0, 0, 1.0f, 0.0f, GAIO_ACT_NONE};
    gaio_tensor gb = gaio_tensor_make(buf, 4096, F32, 2, (int64_t[]){5, 2}, GAIO_TENSOR_ROW_MAJOR);
    gaio_tensor gd = gaio_tensor_make(buf, 6144, F32, 2, (int64_t[]){4, 2}, GAIO_TENSOR_ROW_MAJOR);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_gemm(e->s, &t, &gb, NULL, NULL, &gd, &gp), fn);

    OK(gaio_stream_synchronize(e->s));
    OK(gaio_buffer_release(buf));
}

static void run_all(env *e, int rounds) {
    for (int i = 0; i < rounds; i++) {
        gather_case(e, false, false);
        gather_case(e, true, false);
        where_case(e);
        copy_case(e);
        pad_case(e, (gaio_pad_mode)(i % 4), i % 3 == 0);
    }
    for (int i = 0; i < rounds / 4; i++) {
        gather_case(e, false, true);
        gather_case(e, true, true);
    }
    printf("%d rounds of gather, gather_elements, where, pad and reversed copies\n", rounds);
}

static void run(int device) {
    env e = {0};
    e.rng = test_seed();
    OK(gaio_context_create(device, NULL, &e.ctx));
    OK(gaio_stream_create(e.ctx, 0, 0, &e.s));
    run_all(&e, 200);
    test_bad(&e);
    /* The same on a DEFERRED stream. */
    OK(gaio_stream_release(e.s));
    OK(gaio_stream_create(e.ctx, 0, GAIO_STREAM_DEFERRED, &e.s));
    run_all(&e, 40);
    OK(gaio_stream_release(e.s));
    OK(gaio_context_release(e.ctx));
    test_shutdown();
}
