/* gaio_attention (src/dnn/attention.c) on each backend against softmax(alpha q k^T +
 * bias) v computed here in double from the same (rounded) inputs: ViT's shape (197
 * tokens, head size 64, 3-D), Swin's (49 tokens, head size 32, 4-D, a per-head bias
 * broadcast over the windows), unequal query and key counts with an f32 bias and masked
 * keys, a single query; f16 (both backends) and f32 (the host); bad input.
 *
 * Tolerance: f16 outputs are rounded once and the GPU rounds the probabilities to f16
 * for the second product (FlashAttention's scheme): 4e-3 absolute for values of |v| <= 1;
 * f32 on the host: 2e-5. */
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

typedef struct ht {
    gaio_tensor t;
    double *v; /* the values as stored (f16-rounded where f16) */
    size_t n;
} ht;

static double rnd(uint64_t *r) { return (double)(test_rand(r) >> 11) / 9007199254740992.0 * 2.0 - 1.0; }

static size_t esize(gaio_dtype dt) { return dt == GAIO_DTYPE_F16 ? 2 : 4; }

/* A packed tensor of random values in [-scale, scale] (or the given ones). */
static void make(env *e, ht *h, gaio_dtype dt, int32_t ndim, const int64_t *shape, double scale, const double *given) {
    h->n = 1;
    for (int32_t i = 0; i < ndim; i++) h->n *= (size_t)shape[i];
    h->v = malloc(h->n * sizeof *h->v);
    CHECK(h->v);
    size_t es = esize(dt);
    gaio_buffer *stage, *dev;
    OK(gaio_buffer_alloc(e->ctx, GAIO_MEM_PINNED, h->n * es, &stage));
    OK(gaio_buffer_alloc(e->ctx, GAIO_MEM_DEVICE, h->n * es, &dev));
    void *p;
    OK(gaio_buffer_host_ptr(stage, &p));
    for (size_t i = 0; i < h->n; i++) {
        float f = given ? (float)given[i] : (float)(rnd(&e->rng) * scale);
        if (dt == GAIO_DTYPE_F16) {
            uint16_t b = to_half(f);
            memcpy((char *)p + i * 2, &b, 2);
            h->v[i] = isinf(f) ? (double)f : from_half(b);
        } else {
            memcpy((char *)p + i * 4, &f, 4);
            h->v[i] = f;
        }
    }
    OK(gaio_memcpy_async(e->s, dev, 0, stage, 0, h->n * es));
    OK(gaio_stream_synchronize(e->s));
    OK(gaio_buffer_release(stage));
    h->t = gaio_tensor_make(dev, 0, dt, ndim, shape, GAIO_TENSOR_ROW_MAJOR);
}

static void drop(ht *h) {
    OK(gaio_buffer_release(h->t.buffer));
    free(h->v);
}

static double *read_back(env *e, const ht *h) {
    size_t es = esize(h->t.dtype);
    gaio_buffer *stage;
    OK(gaio_buffer_alloc(e->ctx, GAIO_MEM_PINNED, h->n * es, &stage));
    OK(gaio_memcpy_async(e->s, stage, 0, h->t.buffer, 0, h->n * es));
    OK(gaio_stream_synchronize(e->s));
    void *p;
    OK(gaio_buffer_host_ptr(stage, &p));
    double *out = malloc(h->n * sizeof *out);
    CHECK(out);
    for (size_t i = 0; i < h->n; i++) {
        if (es == 2) {
            uint16_t b;
            memcpy(&b, (char *)p + i * 2, 2);
            out[i] = from_half(b);
        } else {
            float f;
            memcpy(&f, (char *)p + i * 4, 4);
            out[i] = f;
        }
    }
    OK(gaio_buffer_release(stage));
    return out;
}

/* One case: q [B0, B1, L, D] (lead 1 or 2 leading dimensions), k and v [.., Lk, D]; the
 * bias, when bnd > 0, of shape bshape (right-aligned against [B0, B1, L, Lk]), masked
 * (-inf) at every 7th key of every other query when mask; a bias broadcast over the
 * keys masks every key of every third query instead (those rows' outputs are zeros). */
static void attn_case(env *e, const char *name, gaio_dtype dt, int32_t lead, int64_t B0, int64_t B1, int64_t L,
                      int64_t Lk, int64_t D, int32_t bnd, const int64_t *bshape, gaio_dtype bdt, bool mask) {
    int64_t qs[4], ks[4];
    int32_t nd = lead + 2, o = 0;
    if (lead == 2) qs[o] = ks[o] = B0, o++;
    qs[o] = ks[o] = B1, o++;
    qs[o] = L, ks[o] = Lk, o++;
    qs[o] = ks[o] = D;
    ht q, k, v, y, b;
    make(e, &q, dt, nd, qs, 1.0, NULL);
    make(e, &k, dt, nd, ks, 1.0, NULL);
    make(e, &v, dt, nd, ks, 1.0, NULL);
    make(e, &y, dt, nd, qs, 0.0, NULL);
    int64_t bs[4] = {0, 0, 0, 0}; /* the bias's strides against [B0, B1, L, Lk] */
    int64_t bn[4] = {1, 1, 1, 1}; /* its sizes there: a leading one may divide B0 or B1 (it repeats) */
    if (bnd > 0) {
        size_t n = 1;
        for (int32_t i = 0; i < bnd; i++) n *= (size_t)bshape[i];
        double *given = malloc(n * sizeof *given);
        CHECK(given);
        int64_t acc = 1;
        for (int32_t i = bnd - 1; i >= 0; i--) {
            bs[4 - bnd + i] = bshape[i] == 1 ? 0 : acc;
            bn[4 - bnd + i] = bshape[i];
            acc *= bshape[i];
        }
        for (size_t i = 0; i < n; i++) {
            int64_t t = (int64_t)(i % (size_t)bshape[bnd - 1]), qi = bnd > 1 ? (int64_t)(i / (size_t)bshape[bnd - 1]) % bshape[bnd - 2] : 0;
            bool masked = bshape[bnd - 1] == 1 ? qi % 3 == 1 : t % 7 == 3 && qi % 2 == 0;
            given[i] = mask && masked ? -INFINITY : rnd(&e->rng) * 2.0;
        }
        make(e, &b, bdt, bnd, bshape, 0.0, given);
        free(given);
    }
    const float alpha = (float)(1.0 / sqrt((double)D));
    gaio_attention_params prm = {alpha};
    OK(gaio_attention(e->s, &q.t, &k.t, &v.t, bnd > 0 ? &b.t : NULL, &y.t, &prm));
    double *got = read_back(e, &y);
    double *s = malloc((size_t)Lk * sizeof *s), worst = 0;
    CHECK(s);
    const double tol = dt == GAIO_DTYPE_F16 ? 4e-3 : 2e-5;
    for (int64_t b0 = 0; b0 < B0; b0++)
        for (int64_t b1 = 0; b1 < B1; b1++)
            for (int64_t i = 0; i < L; i++) {
                const int64_t qb = ((b0 * B1 + b1) * L + i) * D;
                double m = -INFINITY, sum = 0;
                for (int64_t t = 0; t < Lk; t++) {
                    const int64_t kb = ((b0 * B1 + b1) * Lk + t) * D;
                    double acc = 0;
                    for (int64_t d = 0; d < D; d++) acc += q.v[qb + d] * k.v[kb + d];
                    acc *= alpha;
                    if (bnd > 0) acc += b.v[(b0 % bn[0]) * bs[0] + (b1 % bn[1]) * bs[1] + i * bs[2] + t * bs[3]];
                    s[t] = acc;
                    if (acc > m) m = acc;
                }
                for (int64_t t = 0; t < Lk; t++) s[t] = m == -INFINITY ? 0 : exp(s[t] - m), sum += s[t];
                for (int64_t d = 0; d < D; d++) {
                    double want = 0;
                    for (int64_t t = 0; t < Lk; t++) want += s[t] * v.v[((b0 * B1 + b1) * Lk + t) * D + d];
                    want = sum > 0 ? want / sum : 0; /* every key masked: zeros */
                    double err = fabs(got[qb + d] - want);
                    if (err > worst) worst = err;
                    if (!(err <= tol)) {
                        printf("FAIL %s: [%lld, %lld, %lld, %lld] got %.6g want %.6g\n", name, (long long)b0,
                               (long long)b1, (long long)i, (long long)d, got[qb + d], want);
                        CHECK(0);
                    }
                }
            }
    printf("  %-34s %s max err %.3g\n", name, gaio_dtype_name(dt), worst);
    free(s), free(got);
    drop(&q), drop(&k), drop(&v), drop(&y);
    if (bnd > 0) drop(&b);
}

static void test_bad(env *e) {
    ht q, k, y;
    make(e, &q, GAIO_DTYPE_F16, 3, (int64_t[]){2, 5, 48}, 1.0, NULL);
    make(e, &k, GAIO_DTYPE_F16, 3, (int64_t[]){2, 6, 48}, 1.0, NULL);
    make(e, &y, GAIO_DTYPE_F16, 3, (int64_t[]){2, 5, 48}, 1.0, NULL);
    const gaio_attention_params one = {1.0f}, inf = {INFINITY};
    CHECK(gaio_attention(e->s, &q.t, &k.t, &k.t, NULL, &q.t, &one) == GAIO_ERR_INVALID_ARG); /* in place */
    CHECK(strstr(gaio_last_error(), "overlaps") != NULL);
    CHECK(gaio_attention(e->s, &q.t, &q.t, &k.t, NULL, &y.t, &one) == GAIO_ERR_INVALID_ARG); /* k vs v */
    CHECK(gaio_attention(e->s, &q.t, &k.t, &k.t, &k.t, &y.t, &one) == GAIO_ERR_INVALID_ARG); /* bias shape */
    CHECK(strstr(gaio_last_error(), "broadcast") != NULL);
    ht b3; /* a leading size that does not divide the scores' (2 heads): neither broadcasts nor repeats */
    make(e, &b3, GAIO_DTYPE_F16, 3, (int64_t[]){3, 5, 6}, 1.0, NULL);
    CHECK(gaio_attention(e->s, &q.t, &k.t, &k.t, &b3.t, &y.t, &one) == GAIO_ERR_INVALID_ARG);
    CHECK(strstr(gaio_last_error(), "repeat") != NULL);
    drop(&b3);
    CHECK(gaio_attention(NULL, &q.t, &k.t, &k.t, NULL, &y.t, &one) == GAIO_ERR_INVALID_ARG);
    CHECK(gaio_attention(e->s, &q.t, NULL, &k.t, NULL, &y.t, &one) == GAIO_ERR_INVALID_ARG);
    CHECK(gaio_attention(e->s, &q.t, &k.t, &k.t, NULL, &y.t, NULL) == GAIO_ERR_INVALID_ARG);
    CHECK(gaio_attention(e->s, &q.t, &k.t, &k.t, NULL, &y.t, &inf) == GAIO_ERR_INVALID_ARG);
    gaio_status st = gaio_attention(e->s, &q.t, &k.t, &k.t, NULL, &y.t, &one);
    CHECK(st == (e->cuda ? GAIO_ERR_NOT_SUPPORTED : GAIO_OK)); /* head size 48: the host only */
    if (e->cuda) CHECK(strstr(gaio_last_error(), "head size of 32 or 64") != NULL);
    OK(gaio_stream_synchronize(e->s));
    drop(&q), drop(&k), drop(&y);
}

/* A GPU older than sm_80 (the fake driver's GAIO_FAKE_CUDA_CC=7.5): refused by name,
 * with nothing enqueued (the kernel's SASS for it is an empty body). */
static void test_old_gpu(env *e) {
    ht q, y;
    make(e, &q, GAIO_DTYPE_F16, 3, (int64_t[]){2, 5, 64}, 1.0, NULL);
    make(e, &y, GAIO_DTYPE_F16, 3, (int64_t[]){2, 5, 64}, 1.0, NULL);
    const gaio_attention_params one = {1.0f};
    CHECK(gaio_attention(e->s, &q.t, &q.t, &q.t, NULL, &y.t, &one) == GAIO_ERR_NOT_SUPPORTED);
    CHECK(strstr(gaio_last_error(), "compute capability 8.0 or newer") != NULL);
    printf("  refused on an sm_7x GPU: %s\n", gaio_last_error());
    OK(gaio_stream_synchronize(e->s));
    drop(&q), drop(&y);
}

static void run(int device) {
    env e = {0};
    gaio_device_props props;
    OK(gaio_device_get_props(device, &props));
    e.cuda = props.kind == GAIO_DEVICE_CUDA;
    e.rng = test_seed();
    OK(gaio_context_create(device, NULL, &e.ctx));
    OK(gaio_stream_create(e.ctx, 0, 0, &e.s));
    if (e.cuda && props.compute_major < 8) {
        test_old_gpu(&e);
        OK(gaio_stream_release(e.s));
        OK(gaio_context_release(e.ctx));
        return;
    }
    const gaio_dtype F16 = GAIO_DTYPE_F16, F32 = GAIO_DTYPE_F32;
    attn_case(&e, "vit: 197 tokens, head 64", F16, 1, 1, 5, 197, 197, 64, 0, NULL, F16, false);
    attn_case(&e, "swin: 49 tokens, head 32, bias", F16, 2, 3, 4, 49, 49, 32, 3, (int64_t[]){4, 49, 49}, F16, false);
    attn_case(&e, "70 x 130 keys, f32 bias, masked", F16, 1, 1, 2, 70, 130, 64, 2, (int64_t[]){70, 130}, F32, true);
    attn_case(&e, "one query, 3 keys", F16, 2, 2, 1, 1, 3, 32, 0, NULL, F16, false);
    attn_case(&e, "bias per (b0, b1)", F16, 2, 2, 3, 20, 65, 64, 4, (int64_t[]){2, 3, 20, 65}, F16, false);
    /* a bias column stride of 0 (the GPU's strided bias path), whole rows masked */
    attn_case(&e, "bias per query, rows masked", F16, 1, 1, 3, 33, 100, 32, 2, (int64_t[]){33, 1}, F32, true);
    attn_case(&e, "300 tokens: 5 key tiles", F16, 2, 2, 2, 300, 300, 64, 0, NULL, F16, false);
    /* Swin's window mask: [windows, heads, L, Lk] repeating over [batch * windows] */
    attn_case(&e, "bias repeating over B0", F16, 2, 6, 2, 49, 49, 32, 4, (int64_t[]){3, 2, 49, 49}, F32, true);
    if (!e.cuda) {
        attn_case(&e, "host f32, head 48", F32, 1, 1, 3, 17, 29, 48, 1, (int64_t[]){29}, F32, true);
        attn_case(&e, "host f32, head 64", F32, 2, 2, 2, 33, 33, 64, 0, NULL, F32, false);
    }
    test_bad(&e);
    OK(gaio_stream_release(e.s));
    OK(gaio_context_release(e.ctx));
    test_shutdown();
}
