/* gaio_conv_transpose2d on each backend against a direct scatter in double precision
 * (each x element times each tap added where it lands in y, then the bias): random
 * shapes with strides 1-3, dilations 1-2, pads (negative ones too, as ONNX's
 * output_shape makes them), output padding, groups and depthwise, with and without
 * bias, NCHW / NHWC / padded-row tensors, f32 and f16 (printed seed: GAIO_TEST_SEED
 * replays it); fixed decoder-like cases; gaio_conv_transpose2d_prepare; bad input.
 *
 * Every case also checks, in plain arithmetic, how the GPU path cuts the problem for
 * cuDNN's backward data (dnn/conv_transpose_math.h): the same scatter over the parts
 * of x and y it keeps, with the forward paddings it computes, must give the reference,
 * so that arithmetic is tested on machines without a GPU too.
 *
 * Passes, each over every case: the host with oneDNN (where libdnnl.so.2 loads), with
 * gaio's own loop (GAIO_DNN_NO_ONEDNN=1) and with gaio's kernel's host twin
 * (GAIO_DNN_CONVT=gaio); a GPU with cuDNN (gaio's kernel where cuDNN has no engine:
 * every case must run, and those are counted) and with gaio's kernel. */
#include <math.h>
#include <stdbool.h>

#include "common.h"
#include "dnn/conv_transpose_math.h"
#include "half.h"

enum { NCHW = GAIO_TENSOR_ROW_MAJOR, NHWC = GAIO_TENSOR_NHWC };

typedef struct env {
    gaio_context *ctx;
    gaio_stream *s;
    uint64_t rng;
    bool cuda;
    int device;
    int ran;
    int onednn; /* host: cases gaio_conv_transpose2d_prepare says oneDNN runs */
    int by_kernel; /* GPU: cases gaio's kernel ran (cuDNN had no engine, or y has gaps and margins) */
} env;

typedef struct tcase {
    char name[48];
    int64_t n, c, h, w, k, r, s;
    int32_t stride[2], pad[4], opad[2], dil[2], groups;
    bool bias;
    int xl, wl, yl;
    int ypad; /* extra elements per row of y: explicit strides */
} tcase;

typedef struct htensor {
    int64_t shape[4], st[4];
    size_t count;
    gaio_dtype dt;
    float *v;
    gaio_tensor t;
} htensor;

static float rnd(uint64_t *r) { return (float)((double)(test_rand(r) >> 11) / 9007199254740992.0 * 2.0 - 1.0); }
static int64_t rint_in(uint64_t *r, int64_t lo, int64_t hi) { return lo + (int64_t)(test_rand(r) % (uint64_t)(hi - lo + 1)); }
static size_t esize(gaio_dtype dt) { return dt == GAIO_DTYPE_F16 ? 2 : 4; }
static float quant(gaio_dtype dt, float f) { return dt == GAIO_DTYPE_F16 ? from_half(to_half(f)) : f; }

static void make_strides(const int64_t *sh, int layout, int rowpad, int64_t *st) {
    if (layout == NHWC)
        st[1] = 1, st[3] = sh[1], st[2] = (sh[3] + rowpad) * sh[1], st[0] = sh[2] * st[2];
    else
        st[3] = 1, st[2] = sh[3] + rowpad, st[1] = sh[2] * st[2], st[0] = sh[1] * st[1];
}

static void hmake(env *e, htensor *h, gaio_dtype dt, int ndim, const int64_t *shape, int layout, int rowpad) {
    memset(h, 0, sizeof *h);
    h->dt = dt;
    int64_t sh[4] = {1, 1, 1, 1};
    for (int i = 0; i < ndim; i++) sh[i] = shape[i];
    memcpy(h->shape, sh, sizeof sh);
    if (ndim == 1) {
        h->st[0] = 1;
        h->count = (size_t)sh[0];
    } else {
        make_strides(sh, layout, rowpad, h->st);
        h->count = (size_t)(sh[0] * h->st[0]);
    }
    h->v = malloc(h->count * sizeof(float));
    CHECK(h->v);
    for (size_t i = 0; i < h->count; i++) h->v[i] = quant(dt, rnd(&e->rng));
    size_t bytes = h->count * esize(dt);
    gaio_buffer *stage, *dev;
    OK(gaio_buffer_alloc(e->ctx, GAIO_MEM_PINNED, bytes, &stage));
    OK(gaio_buffer_alloc(e->ctx, GAIO_MEM_DEVICE, bytes, &dev));
    void *p;
    OK(gaio_buffer_host_ptr(stage, &p));
    for (size_t i = 0; i < h->count; i++) {
        if (dt == GAIO_DTYPE_F16)
            ((uint16_t *)p)[i] = to_half(h->v[i]);
        else
            ((float *)p)[i] = h->v[i];
    }
    OK(gaio_memcpy_async(e->s, dev, 0, stage, 0, bytes));
    OK(gaio_stream_synchronize(e->s));
    OK(gaio_buffer_release(stage));
    h->t = gaio_tensor_make(dev, 0, dt, ndim, shape, ndim == 4 ? (gaio_tensor_layout)layout : GAIO_TENSOR_ROW_MAJOR);
    if (ndim == 4 && rowpad)
        for (int i = 0; i < 4; i++) h->t.strides[i] = h->st[i];
}

static void hdownload(env *e, const htensor *h, float *out) {
    size_t bytes = h->count * esize(h->dt);
    gaio_buffer *stage;
    OK(gaio_buffer_alloc(e->ctx, GAIO_MEM_PINNED, bytes, &stage));
    OK(gaio_memcpy_async(e->s, stage, 0, h->t.buffer, h->t.offset, bytes));
    OK(gaio_stream_synchronize(e->s));
    void *p;
    OK(gaio_buffer_host_ptr(stage, &p));
    for (size_t i = 0; i < h->count; i++)
        out[i] = h->dt == GAIO_DTYPE_F16 ? from_half(((uint16_t *)p)[i]) : ((float *)p)[i];
    OK(gaio_buffer_release(stage));
}

static void hfree(htensor *h) {
    OK(gaio_buffer_release(h->t.buffer));
    free(h->v);
}

static size_t off4(const htensor *h, int64_t a, int64_t b, int64_t c, int64_t d) {
    return (size_t)(a * h->st[0] + b * h->st[1] + c * h->st[2] + d * h->st[3]);
}

static double half_ulp_f16(double v) {
    v = fabs(v);
    if (v < 6.103515625e-05) return 0.5 * 5.9604644775390625e-08;
    int e;
    frexp(v, &e);
    return 0.5 * ldexp(1.0, e - 1 - 10);
}

static int64_t out_size(const tcase *c, int i) {
    int64_t in = i ? c->w : c->h, k = i ? c->s : c->r;
    return (in - 1) * c->stride[i] + (k - 1) * c->dil[i] + 1 - c->pad[i] - c->pad[i + 2] + c->opad[i];
}

/* The reference: every x element times every tap, added where it lands in y. ref and
 * mag (the sum of |terms|, for the tolerance) are [n][k][p][q]. */
static void reference(const tcase *c, const htensor *X, const htensor *W, const htensor *B, double *ref, double *mag) {
    const int64_t P = out_size(c, 0), Q = out_size(c, 1), cg = c->c / c->groups, kg = c->k / c->groups;
    for (int64_t n = 0; n < c->n; n++)
        for (int64_t k = 0; k < c->k; k++)
            for (int64_t i = 0; i < P * Q; i++) {
                size_t o = (size_t)((n * c->k + k) * P * Q + i);
                ref[o] = c->bias ? B->v[k] : 0, mag[o] = c->bias ? fabs(B->v[k]) : 0;
            }
    for (int64_t n = 0; n < c->n; n++)
        for (int64_t ci = 0; ci < c->c; ci++)
            for (int64_t ih = 0; ih < c->h; ih++)
                for (int64_t iw = 0; iw < c->w; iw++) {
                    double xv = X->v[off4(X, n, ci, ih, iw)];
                    int64_t g = ci / cg;
                    for (int64_t ko = 0; ko < kg; ko++)
                        for (int64_t r = 0; r < c->r; r++)
                            for (int64_t s = 0; s < c->s; s++) {
                                int64_t oh = ih * c->stride[0] + r * c->dil[0] - c->pad[0];
                                int64_t ow = iw * c->stride[1] + s * c->dil[1] - c->pad[1];
                                if (oh < 0 || oh >= P || ow < 0 || ow >= Q) continue;
                                double t = xv * W->v[off4(W, ci, ko, r, s)];
                                size_t o = (size_t)(((n * c->k + g * kg + ko) * P + oh) * Q + ow);
                                ref[o] += t, mag[o] += fabs(t);
                            }
                }
}

/* The GPU's cut (conv_transpose_math.h) emulated: cuDNN's backward data of the forward
 * convolution from y's kept rows and columns to x's, with the forward paddings, over
 * zeros elsewhere, plus the bias; must equal the reference. */
static void check_cut(const tcase *c, const htensor *X, const htensor *W, const htensor *B, const double *ref,
                      const double *mag) {
    const int64_t P = out_size(c, 0), Q = out_size(c, 1), cg = c->c / c->groups, kg = c->k / c->groups;
    gaio__convt_axis ax[2];
    for (int i = 0; i < 2; i++) {
        ax[i] = gaio__convt_axis_make(i ? c->w : c->h, i ? Q : P, i ? c->s : c->r, c->stride[i], c->dil[i], c->pad[i]);
        int64_t ext = (int64_t)c->dil[i] * ((i ? c->s : c->r) - 1) + 1;
        if (!ax[i].ny) continue;
        CHECK(ax[i].pre >= 0 && ax[i].post >= 0);
        CHECK(ax[i].y0 >= 0 && ax[i].y0 + ax[i].ny <= (i ? Q : P));
        CHECK(ax[i].x0 >= 0 && ax[i].nx >= 1 && ax[i].x0 + ax[i].nx <= (i ? c->w : c->h));
        /* the forward convolution's shapes agree exactly, as cuDNN wants */
        CHECK(ax[i].ny + ax[i].pre + ax[i].post - ext == (ax[i].nx - 1) * c->stride[i]);
    }
    size_t total = (size_t)(c->n * c->k * P * Q);
    double *got = calloc(total, sizeof(double));
    CHECK(got);
    for (int64_t n = 0; n < c->n; n++)
        for (int64_t k = 0; k < c->k; k++)
            for (int64_t i = 0; i < P * Q; i++) got[(n * c->k + k) * P * Q + i] = c->bias ? B->v[k] : 0;
    if (ax[0].ny && ax[1].ny)
        /* dx[j] = sum over dy[i] and taps t with i stride - pre + t dil = j */
        for (int64_t n = 0; n < c->n; n++)
            for (int64_t ci = 0; ci < c->c; ci++)
                for (int64_t i = 0; i < ax[0].nx; i++)
                    for (int64_t jw = 0; jw < ax[1].nx; jw++) {
                        double xv = X->v[off4(X, n, ci, ax[0].x0 + i, ax[1].x0 + jw)];
                        int64_t g = ci / cg;
                        for (int64_t ko = 0; ko < kg; ko++)
                            for (int64_t r = 0; r < c->r; r++)
                                for (int64_t s = 0; s < c->s; s++) {
                                    int64_t dh = i * c->stride[0] - ax[0].pre + r * c->dil[0];
                                    int64_t dw = jw * c->stride[1] - ax[1].pre + s * c->dil[1];
                                    if (dh < 0 || dh >= ax[0].ny || dw < 0 || dw >= ax[1].ny) continue;
                                    size_t o = (size_t)(((n * c->k + g * kg + ko) * P + ax[0].y0 + dh) * Q +
                                                        ax[1].y0 + dw);
                                    got[o] += xv * W->v[off4(W, ci, ko, r, s)];
                                }
                    }
    for (size_t i = 0; i < total; i++)
        if (fabs(got[i] - ref[i]) > 1e-9 * (mag[i] + 1)) {
            fprintf(stderr, "\n%s: the GPU's cut gives %.9g at %zu, the reference %.9g\n", c->name, got[i], i, ref[i]);
            exit(1);
        }
    free(got);
}

/* Whether y has rows or columns that no tap reaches (the GPU fills them first). */
static bool has_margins(const tcase *c) {
    for (int i = 0; i < 2; i++) {
        int64_t out = out_size(c, i);
        gaio__convt_axis ax =
            gaio__convt_axis_make(i ? c->w : c->h, out, i ? c->s : c->r, c->stride[i], c->dil[i], c->pad[i]);
        if (ax.ny != out) return true;
    }
    return false;
}

static gaio_conv_transpose2d_params params_of(const tcase *c) {
    gaio_conv_transpose2d_params p;
    memset(&p, 0, sizeof p);
    for (int i = 0; i < 2; i++) p.stride[i] = c->stride[i], p.dilation[i] = c->dil[i], p.output_padding[i] = c->opad[i];
    for (int i = 0; i < 4; i++) p.pad[i] = c->pad[i];
    p.groups = c->groups;
    return p;
}

/* f16 on a GPU must run where cuDNN has tensor-core engines: all NHWC, channels per
 * group multiples of 8. */
static bool f16_must_run(const tcase *c) {
    return c->xl == NHWC && c->wl == NHWC && c->yl == NHWC && (c->c / c->groups) % 8 == 0 &&
           (c->k / c->groups) % 8 == 0;
}

static void run_case(env *e, const tcase *c, gaio_dtype dt) {
    const int64_t P = out_size(c, 0), Q = out_size(c, 1);
    printf("  %-16s %s x[%lld,%lld,%lld,%lld]%s w[%lld,%lld,%lld,%lld]%s y[..,%lld,%lld]%s%s stride %d,%d pad "
           "%d,%d,%d,%d opad %d,%d dil %d,%d groups %d bias %d",
           c->name, gaio_dtype_name(dt), (long long)c->n, (long long)c->c, (long long)c->h, (long long)c->w,
           c->xl == NHWC ? " nhwc" : "", (long long)c->c, (long long)(c->k / c->groups), (long long)c->r,
           (long long)c->s, c->wl == NHWC ? " nhwc" : "", (long long)P, (long long)Q, c->yl == NHWC ? " nhwc" : "",
           c->ypad ? " padded" : "", c->stride[0], c->stride[1], c->pad[0], c->pad[1], c->pad[2], c->pad[3],
           c->opad[0], c->opad[1], c->dil[0], c->dil[1], c->groups, c->bias);
    htensor X, W, Y, B;
    hmake(e, &X, dt, 4, (int64_t[]){c->n, c->c, c->h, c->w}, c->xl, 0);
    hmake(e, &W, dt, 4, (int64_t[]){c->c, c->k / c->groups, c->r, c->s}, c->wl, 0);
    hmake(e, &Y, dt, 4, (int64_t[]){c->n, c->k, P, Q}, c->yl, c->ypad);
    hmake(e, &B, dt, 1, (int64_t[]){c->k}, NCHW, 0);
    size_t total = (size_t)(c->n * c->k * P * Q);
    double *ref = malloc(total * sizeof(double)), *mag = malloc(total * sizeof(double));
    float *got = malloc(Y.count * sizeof(float));
    CHECK(ref && mag && got);
    reference(c, &X, &W, &B, ref, mag);
    check_cut(c, &X, &W, &B, ref, mag);
    gaio_conv_transpose2d_params p = params_of(c);
    { /* what runs it: oneDNN or gaio's loop (host), cuDNN or gaio's kernel (GPU) */
        gaio_conv2d_info info;
        OK(gaio_conv_transpose2d_prepare(e->s, &X.t, &W.t, c->bias ? &B.t : NULL, &Y.t, &p, &info));
        printf(" [%s]", info.engine);
        e->onednn += strncmp(info.engine, "oneDNN", 6) == 0;
        bool kernel = strncmp(info.engine, "gaio direct kernel", 18) == 0;
        e->by_kernel += kernel;
        /* cuDNN's tensor-core layout, and a dense y, must not need the kernel */
        if (e->cuda && !getenv("GAIO_DNN_CONVT") && kernel && (dt == GAIO_DTYPE_F32 || f16_must_run(c)) &&
            !(c->ypad && has_margins(c))) {
            fprintf(stderr, "\n%s %s: cuDNN should run this case: %s\n", c->name, gaio_dtype_name(dt), info.engine);
            exit(1);
        }
    }
    OK(gaio_conv_transpose2d(e->s, &X.t, &W.t, c->bias ? &B.t : NULL, &Y.t, &p));
    {
        hdownload(e, &Y, got);
        double worst = 0;
        for (int64_t n = 0; n < c->n; n++)
            for (int64_t k = 0; k < c->k; k++)
                for (int64_t oh = 0; oh < P; oh++)
                    for (int64_t ow = 0; ow < Q; ow++) {
                        size_t o = (size_t)(((n * c->k + k) * P + oh) * Q + ow);
                        double g = got[off4(&Y, n, k, oh, ow)], r = ref[o];
                        /* f16: as test_dnn_conv's forward convolutions: cuDNN's tensor-core
                         * engines round partial sums (split reductions) and y to f16 before the
                         * bias is added (measured on an H200: 7 ulps of 0.105 with 4 x 4 x 16
                         * terms), so 4e-3 of the sum of |terms| plus y's and the bias's
                         * roundings. */
                        double tol = dt == GAIO_DTYPE_F16 ? 2 * half_ulp_f16(r) + 4e-3 * mag[o] : 1e-5 * mag[o] + 1e-7;
                        double err = fabs(g - r);
                        if (!(err <= tol)) {
                            fprintf(stderr, "\n%s %s: y[%lld, %lld, %lld, %lld] = %.7g, expected %.7g (tolerance %.3g)\n",
                                    c->name, gaio_dtype_name(dt), (long long)n, (long long)k, (long long)oh,
                                    (long long)ow, g, r, tol);
                            exit(1);
                        }
                        if (tol > 0 && err / tol > worst) worst = err / tol;
                    }
        /* The gaps between y's padded rows are untouched. */
        if (c->ypad) {
            float *before = Y.v;
            for (int64_t n = 0; n < c->n; n++)
                for (int64_t k = 0; k < c->k; k++)
                    for (int64_t oh = 0; oh < P; oh++)
                        for (int64_t ow = Q; ow < Q + c->ypad; ow++) {
                            size_t o = c->yl == NHWC ? (size_t)(n * Y.st[0] + oh * Y.st[2] + ow * Y.st[3] + k)
                                                     : off4(&Y, n, k, oh, ow);
                            if (o < Y.count) CHECK(got[o] == before[o]);
                        }
        }
        printf(": ok (worst error %.2f of the tolerance)\n", worst);
        e->ran++;
    }
    free(ref), free(mag), free(got);
    hfree(&X), hfree(&W), hfree(&Y), hfree(&B);
}

/* Decoder layers as exported models have them, and the attribute corners. */
static const tcase k_fixed[] = {
    {"up2x k4 p1", 1, 16, 5, 6, 8, 4, 4, {2, 2}, {1, 1, 1, 1}, {0, 0}, {1, 1}, 1, true, NHWC, NHWC, NHWC, 0},
    {"up2x k2 (DB head)", 2, 16, 4, 4, 16, 2, 2, {2, 2}, {0, 0, 0, 0}, {0, 0}, {1, 1}, 1, true, NHWC, NHWC, NHWC, 0},
    {"up2x k3 p1 op1", 1, 8, 5, 4, 8, 3, 3, {2, 2}, {1, 1, 1, 1}, {1, 1}, {1, 1}, 1, false, NHWC, NHWC, NHWC, 0},
    {"depthwise up2x", 1, 8, 4, 5, 8, 3, 3, {2, 2}, {1, 1, 1, 1}, {1, 1}, {1, 1}, 8, true, NHWC, NHWC, NHWC, 0},
    {"groups 2 nchw", 2, 6, 5, 5, 4, 3, 2, {1, 2}, {0, 1, 2, 0}, {0, 1}, {2, 1}, 2, true, NCHW, NCHW, NCHW, 0},
    {"onnx output_shape", 1, 1, 3, 3, 2, 3, 3, {3, 2}, {0, 0, -1, -1}, {0, 0}, {1, 1}, 1, false, NCHW, NCHW, NCHW, 0},
    {"negative start pad", 1, 3, 4, 3, 2, 2, 3, {2, 1}, {-2, -1, 1, 0}, {0, 0}, {1, 2}, 1, true, NCHW, NCHW, NCHW, 0},
    {"crop past kernel", 1, 2, 6, 6, 3, 2, 2, {3, 3}, {4, 5, 3, 2}, {2, 2}, {1, 1}, 1, true, NHWC, NCHW, NCHW, 0},
    {"stride > kernel", 1, 2, 3, 4, 2, 1, 2, {3, 3}, {1, 0, 0, 2}, {2, 1}, {1, 1}, 1, true, NCHW, NHWC, NHWC, 0},
    {"padded y margins", 1, 3, 3, 3, 2, 3, 3, {2, 2}, {0, 0, 0, 0}, {1, 1}, {1, 1}, 1, true, NCHW, NCHW, NCHW, 2},
    {"padded y whole", 1, 3, 3, 3, 2, 3, 3, {2, 2}, {1, 1, 1, 1}, {0, 0}, {1, 1}, 1, true, NCHW, NCHW, NHWC, 1},
};

static void random_case(env *e, tcase *c, int i) {
    memset(c, 0, sizeof *c);
    uint64_t *r = &e->rng;
    snprintf(c->name, sizeof c->name, "random %d", i);
    int kind = (int)rint_in(r, 0, 3); /* plain, grouped, depthwise, channels multiple of 8 */
    c->groups = kind == 1 ? (int32_t)rint_in(r, 2, 3) : 1;
    int64_t cg = rint_in(r, 1, 5), kg = rint_in(r, 1, 5);
    if (kind == 2) c->groups = (int32_t)rint_in(r, 2, 6), cg = kg = 1;
    if (kind == 3) cg = 8 * rint_in(r, 1, 2), kg = 8 * rint_in(r, 1, 2);
    c->c = cg * c->groups, c->k = kg * c->groups;
    c->n = rint_in(r, 1, 2);
    c->h = rint_in(r, 1, 7), c->w = rint_in(r, 1, 7);
    c->r = rint_in(r, 1, 4), c->s = rint_in(r, 1, 4);
    c->bias = rint_in(r, 0, 1);
    for (int d = 0; d < 2; d++) {
        c->stride[d] = (int32_t)rint_in(r, 1, 3);
        c->dil[d] = (int32_t)rint_in(r, 1, 2);
        int64_t ext = (int64_t)c->dil[d] * ((d ? c->s : c->r) - 1) + 1;
        c->opad[d] = (int32_t)rint_in(r, 0, (c->stride[d] > c->dil[d] ? c->stride[d] : c->dil[d]) - 1);
        for (int side = 0; side < 2; side++) {
            int32_t p = (int32_t)rint_in(r, 0, ext - 1);
            if (rint_in(r, 0, 7) == 0) p = -(int32_t)rint_in(r, 1, 2); /* as ONNX's output_shape may */
            c->pad[d + 2 * side] = p;
        }
    }
    for (int d = 0; d < 2; d++)
        while (out_size(c, d) < 1) c->pad[d + 2]--;
    c->xl = (int)rint_in(r, 0, 1), c->wl = (int)rint_in(r, 0, 1), c->yl = (int)rint_in(r, 0, 1);
    if (kind == 3 && rint_in(r, 0, 1)) c->xl = c->wl = c->yl = NHWC;
    c->ypad = rint_in(r, 0, 5) == 0 ? 1 : 0;
}

static void test_cases(env *e) {
    const gaio_dtype dts[2] = {GAIO_DTYPE_F32, GAIO_DTYPE_F16};
    for (size_t i = 0; i < sizeof k_fixed / sizeof k_fixed[0]; i++)
        for (int d = 0; d < 2; d++) run_case(e, &k_fixed[i], dts[d]);
    for (int i = 0; i < 40; i++) {
        tcase c;
        random_case(e, &c, i);
        run_case(e, &c, dts[i % 2]);
    }
}

static void test_prepare(env *e) {
    const tcase *c = &k_fixed[0];
    htensor X, W, Y, B;
    hmake(e, &X, GAIO_DTYPE_F32, 4, (int64_t[]){c->n, c->c, c->h, c->w}, c->xl, 0);
    hmake(e, &W, GAIO_DTYPE_F32, 4, (int64_t[]){c->c, c->k, c->r, c->s}, c->wl, 0);
    hmake(e, &Y, GAIO_DTYPE_F32, 4, (int64_t[]){c->n, c->k, out_size(c, 0), out_size(c, 1)}, c->yl, 0);
    hmake(e, &B, GAIO_DTYPE_F32, 1, (int64_t[]){c->k}, NCHW, 0);
    gaio_conv_transpose2d_params p = params_of(c);
    gaio_conv2d_info info;
    OK(gaio_conv_transpose2d_prepare(e->s, &X.t, &W.t, &B.t, &Y.t, &p, &info));
    printf("  prepare: %s, workspace %zu, fused %d, from cache %d\n", info.engine, info.workspace, info.fused,
           info.from_cache);
    CHECK(info.engine[0]);
    OK(gaio_conv_transpose2d_prepare(e->s, &X.t, &W.t, &B.t, &Y.t, &p, &info));
    /* cuDNN's plans are cached; gaio's own kernel (GAIO_DNN_CONVT=gaio) has none to find */
    const char *forced = getenv("GAIO_DNN_CONVT");
    if (e->cuda && !(forced && !strcmp(forced, "gaio"))) CHECK(info.from_cache);
    OK(gaio_conv_transpose2d(e->s, &X.t, &W.t, &B.t, &Y.t, &p));
    OK(gaio_stream_synchronize(e->s));
    hfree(&X), hfree(&W), hfree(&Y), hfree(&B);
}

#define FN "gaio_conv_transpose2d"

static void test_bad(env *e) {
    htensor X, W, Y, B, X16, Y3;
    hmake(e, &X, GAIO_DTYPE_F32, 4, (int64_t[]){1, 4, 3, 3}, NCHW, 0);
    hmake(e, &W, GAIO_DTYPE_F32, 4, (int64_t[]){4, 3, 3, 3}, NCHW, 0);  /* K = 3 * groups */
    hmake(e, &Y, GAIO_DTYPE_F32, 4, (int64_t[]){1, 3, 5, 5}, NCHW, 0);  /* stride 1, pad 0 */
    hmake(e, &B, GAIO_DTYPE_F32, 1, (int64_t[]){3}, NCHW, 0);
    hmake(e, &X16, GAIO_DTYPE_F16, 4, (int64_t[]){1, 4, 3, 3}, NCHW, 0);
    hmake(e, &Y3, GAIO_DTYPE_F32, 3, (int64_t[]){3, 5, 5}, NCHW, 0);
    gaio_conv_transpose2d_params p;
    memset(&p, 0, sizeof p);
    OK(gaio_conv_transpose2d(e->s, &X.t, &W.t, &B.t, &Y.t, &p)); /* the baseline runs */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_conv_transpose2d(NULL, &X.t, &W.t, NULL, &Y.t, &p), FN);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_conv_transpose2d(e->s, &X.t, &W.t, NULL, &Y.t, NULL), FN);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_conv_transpose2d(e->s, NULL, &W.t, NULL, &Y.t, &p), FN);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_conv_transpose2d(e->s, &X.t, &W.t, NULL, &Y3.t, &p), FN);
    CHECK(strstr(gaio_last_error(), "4-D"));
    FAILS(GAIO_ERR_INVALID_ARG, gaio_conv_transpose2d(e->s, &X16.t, &W.t, NULL, &Y.t, &p), FN);
    CHECK(strstr(gaio_last_error(), "must match"));
    /* w's first dimension is x's channels */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_conv_transpose2d(e->s, &X.t, &Y.t, NULL, &W.t, &p), FN);
    /* the output's shape: groups 2 makes K = 6 */
    p.groups = 2;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_conv_transpose2d(e->s, &X.t, &W.t, NULL, &Y.t, &p), FN);
    CHECK(strstr(gaio_last_error(), "gives [1, 6, 5, 5]"));
    p.groups = 3; /* 4 channels in 3 groups */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_conv_transpose2d(e->s, &X.t, &W.t, NULL, &Y.t, &p), FN);
    CHECK(strstr(gaio_last_error(), "multiple of groups"));
    p.groups = -1;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_conv_transpose2d(e->s, &X.t, &W.t, NULL, &Y.t, &p), FN);
    p.groups = 0, p.stride[0] = -1;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_conv_transpose2d(e->s, &X.t, &W.t, NULL, &Y.t, &p), FN);
    p.stride[0] = 0, p.dilation[1] = -2;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_conv_transpose2d(e->s, &X.t, &W.t, NULL, &Y.t, &p), FN);
    p.dilation[1] = 0, p.output_padding[0] = -1;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_conv_transpose2d(e->s, &X.t, &W.t, NULL, &Y.t, &p), FN);
    p.output_padding[0] = 1; /* y would be 6 high */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_conv_transpose2d(e->s, &X.t, &W.t, NULL, &Y.t, &p), FN);
    CHECK(strstr(gaio_last_error(), "gives [1, 3, 6, 5]"));
    p.output_padding[0] = 0, p.pad[0] = 3, p.pad[2] = 2; /* crops all 5 rows */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_conv_transpose2d(e->s, &X.t, &W.t, NULL, &Y.t, &p), FN);
    CHECK(strstr(gaio_last_error(), "crops all"));
    p.pad[0] = p.pad[2] = 0;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_conv_transpose2d(e->s, &X.t, &W.t, &X.t, &Y.t, &p), FN); /* bias not [K] */
    CHECK(strstr(gaio_last_error(), "bias"));
    /* y over w's memory */
    gaio_tensor alias = gaio_tensor_make(W.t.buffer, 0, GAIO_DTYPE_F32, 4, (int64_t[]){1, 3, 5, 5}, GAIO_TENSOR_ROW_MAJOR);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_conv_transpose2d(e->s, &X.t, &W.t, NULL, &alias, &p), FN);
    CHECK(strstr(gaio_last_error(), "overlaps"));
    OK(gaio_stream_synchronize(e->s));
    hfree(&X), hfree(&W), hfree(&Y), hfree(&B), hfree(&X16), hfree(&Y3);
    printf("  bad input refused\n");
}

static void run_pass(env *e) {
    OK(gaio_context_create(e->device, NULL, &e->ctx));
    OK(gaio_stream_create(e->ctx, 0, 0, &e->s));
    printf("cases:\n");
    test_cases(e);
    printf("prepare:\n");
    test_prepare(e);
    printf("bad input:\n");
    test_bad(e);
    OK(gaio_stream_release(e->s));
    OK(gaio_context_release(e->ctx));
    e->ctx = NULL, e->s = NULL;
}

static void set_env(const char *name, const char *value) {
    if (value)
        CHECK(setenv(name, value, 1) == 0);
    else
        CHECK(unsetenv(name) == 0);
}

static void run(int device) {
    env e;
    memset(&e, 0, sizeof e);
    gaio_device_props props;
    OK(gaio_device_get_props(device, &props));
    e.cuda = props.kind == GAIO_DEVICE_CUDA;
    e.device = device;
    uint64_t seed = test_seed();
    e.rng = seed;
    if (e.cuda) {
        const char *what = NULL;
        gaio_status st = gaio_dnn_library_status(GAIO_DNN_CUDNN, &what);
        printf("cuDNN: %s: %s\n", gaio_status_string(st), what ? what : "");
        run_pass(&e);
        printf("%d runs, %d of them by gaio's kernel (cuDNN had no engine, or y has gaps and margins)\n", e.ran,
               e.by_kernel);
        CHECK(e.by_kernel >= 1); /* at least the padded y with margins */
        char *saved = getenv("GAIO_DNN_CONVT") ? strdup(getenv("GAIO_DNN_CONVT")) : NULL;
        set_env("GAIO_DNN_CONVT", "gaio");
        e.rng = seed, e.by_kernel = 0;
        printf("== GPU pass: gaio's kernel (GAIO_DNN_CONVT=gaio)\n");
        run_pass(&e);
        set_env("GAIO_DNN_CONVT", saved);
        free(saved);
    } else {
        const char *what = NULL;
        gaio_status st = gaio_dnn_library_status(GAIO_DNN_ONEDNN, &what);
        char *saved = getenv("GAIO_DNN_NO_ONEDNN") ? strdup(getenv("GAIO_DNN_NO_ONEDNN")) : NULL;
        if (st == GAIO_OK) {
            printf("== host pass: oneDNN (%s)\n", what);
            run_pass(&e);
            printf("oneDNN ran %d of the cases, gaio's loop the rest\n", e.onednn);
            CHECK(e.onednn >= 4); /* at least the fixed decoder layers */
        } else {
            printf("oneDNN is not there (%s): gaio's own loop runs every case\n", what ? what : "");
        }
        set_env("GAIO_DNN_NO_ONEDNN", "1");
        e.rng = seed;
        printf("== host pass: gaio's own loop\n");
        e.onednn = 0;
        run_pass(&e);
        CHECK(e.onednn == 0 && e.by_kernel == 0);
        char *saved_k = getenv("GAIO_DNN_CONVT") ? strdup(getenv("GAIO_DNN_CONVT")) : NULL;
        set_env("GAIO_DNN_CONVT", "gaio");
        e.rng = seed;
        printf("== host pass: gaio's kernel's host twin (GAIO_DNN_CONVT=gaio)\n");
        run_pass(&e);
        set_env("GAIO_DNN_CONVT", saved_k);
        free(saved_k);
        set_env("GAIO_DNN_NO_ONEDNN", saved);
        free(saved);
        printf("%d runs\n", e.ran);
    }
    test_shutdown();
}
