/* gaio_resize2d on each backend against a direct computation written from ONNX's
 * reference (onnx/reference/ops/op_resize.py): the sampling position of each rule in
 * double precision, the n nearest elements of x padded by edge copies found by
 * sorting every candidate by distance, the reference's coefficients, W within each
 * row before H. Fixed cases reproduce ONNX's published outputs; random ones cover
 * every mode, coordinate rule and nearest rounding, scales up and down (whole and
 * not) or sizes, cubic's coefficient and exclude_outside, tf_crop_and_resize's roi
 * and extrapolation value, NCHW, NHWC and gapped strides, f32 and f16; bad input. */
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

static const gaio_dtype F32 = GAIO_DTYPE_F32, F16 = GAIO_DTYPE_F16;

static double unit(uint64_t *r) { return (double)(test_rand(r) >> 11) / 9007199254740992.0; }
static int64_t below(uint64_t *r, int64_t n) { return (int64_t)(test_rand(r) % (uint64_t)n); }

static size_t esize(gaio_dtype dt) { return dt == F16 ? 2 : 4; }

typedef enum mem_kind { MEM_PACKED = 0, MEM_NHWC = 1, MEM_GAPS = 2, MEM_NHWC_GAPS = 3 } mem_kind;

/* A device tensor and the host copy of all the memory it spans, gaps included. */
typedef struct htensor {
    gaio_dtype dt;
    int64_t shape[4], strides[4];
    size_t span;
    float *v; /* span values, quantised to dt */
    gaio_tensor t;
} htensor;

/* vals (may be NULL: random in [-1, 1]) fill the elements in NCHW order. */
static void make(env *e, htensor *h, gaio_dtype dt, const int64_t *shape, mem_kind kind, const float *vals) {
    memset(h, 0, sizeof *h);
    h->dt = dt;
    for (int i = 0; i < 4; i++) h->shape[i] = shape[i];
    int64_t acc = 1, gap = kind >= MEM_GAPS ? 1 + below(&e->rng, 3) : 0;
    if (kind == MEM_NHWC || kind == MEM_NHWC_GAPS) {
        h->strides[1] = 1;
        acc = shape[1] + gap;
        for (int i = 3; i >= 2; i--) h->strides[i] = acc, acc = acc * shape[i] + gap;
        h->strides[0] = acc;
    } else {
        for (int i = 3; i >= 0; i--) h->strides[i] = acc, acc = acc * shape[i] + gap;
    }
    h->span = 1;
    for (int i = 0; i < 4; i++) h->span += (size_t)(h->strides[i] * (shape[i] - 1));
    size_t es = esize(dt);
    h->v = malloc(h->span * sizeof(float));
    CHECK(h->v);
    for (size_t i = 0; i < h->span; i++) h->v[i] = (float)(unit(&e->rng) * 2 - 1);
    if (vals) {
        int64_t k = 0;
        for (int64_t a = 0; a < shape[0]; a++)
            for (int64_t b = 0; b < shape[1]; b++)
                for (int64_t c = 0; c < shape[2]; c++)
                    for (int64_t d = 0; d < shape[3]; d++)
                        h->v[a * h->strides[0] + b * h->strides[1] + c * h->strides[2] + d * h->strides[3]] = vals[k++];
    }
    gaio_buffer *stage, *dev;
    OK(gaio_buffer_alloc(e->ctx, GAIO_MEM_PINNED, h->span * es, &stage));
    OK(gaio_buffer_alloc(e->ctx, GAIO_MEM_DEVICE, h->span * es, &dev));
    void *p;
    OK(gaio_buffer_host_ptr(stage, &p));
    for (size_t i = 0; i < h->span; i++) {
        if (dt == F16) {
            ((uint16_t *)p)[i] = to_half(h->v[i]);
            h->v[i] = from_half(to_half(h->v[i]));
        } else {
            ((float *)p)[i] = h->v[i];
        }
    }
    OK(gaio_memcpy_async(e->s, dev, 0, stage, 0, h->span * es));
    OK(gaio_buffer_release(stage));
    h->t = gaio_tensor_make(dev, 0, dt, 4, shape, kind == MEM_NHWC ? GAIO_TENSOR_NHWC : GAIO_TENSOR_ROW_MAJOR);
    if (kind >= MEM_GAPS)
        for (int i = 0; i < 4; i++) h->t.strides[i] = h->strides[i];
}

static void drop(htensor *h) {
    OK(gaio_buffer_release(h->t.buffer));
    free(h->v);
}

static float *download(env *e, const htensor *h) {
    size_t es = esize(h->dt), n = h->span;
    gaio_buffer *stage;
    OK(gaio_buffer_alloc(e->ctx, GAIO_MEM_PINNED, n * es, &stage));
    OK(gaio_memcpy_async(e->s, stage, 0, h->t.buffer, h->t.offset, n * es));
    OK(gaio_stream_synchronize(e->s));
    void *p;
    OK(gaio_buffer_host_ptr(stage, &p));
    float *out = malloc(n * sizeof(float));
    CHECK(out);
    for (size_t i = 0; i < n; i++) out[i] = h->dt == F16 ? from_half(((uint16_t *)p)[i]) : ((float *)p)[i];
    OK(gaio_buffer_release(stage));
    return out;
}

/* ---- the reference, from ONNX's formulas ---- */

#define REF_TAPS 64

typedef struct ref_taps {
    bool extrapolate;
    int n;
    int64_t idx[REF_TAPS]; /* may lie outside [0, in): the padded array's edge copies */
    double c[REF_TAPS];
} ref_taps;

/* Keys' cubic at |x|, as the reference's antialias writes it. */
static double keys(double x, double A) {
    x = fabs(x);
    if (x <= 1) return (A + 2) * x * x * x - (A + 3) * x * x + 1;
    if (x < 2) return A * x * x * x - 5 * A * x * x + 8 * A * x - 4 * A;
    return 0;
}

static void ref_axis(const gaio_resize_params *p, int a, int64_t in, int64_t out, int64_t o, ref_taps *t) {
    memset(t, 0, sizeof *t);
    const double s = p->scale[a] > 0 ? p->scale[a] : (double)out / (double)in;
    const double len = s * (double)in, x = (double)o;
    double xo;
    switch (p->coord) {
    case GAIO_RESIZE_HALF_PIXEL: xo = (x + 0.5) / s - 0.5; break;
    case GAIO_RESIZE_ASYMMETRIC: xo = x / s; break;
    case GAIO_RESIZE_PYTORCH_HALF_PIXEL: xo = len == 1 ? -0.5 : (x + 0.5) / s - 0.5; break;
    case GAIO_RESIZE_TF_HALF_PIXEL_FOR_NN: xo = (x + 0.5) / s; break;
    case GAIO_RESIZE_ALIGN_CORNERS: xo = len == 1 ? 0 : x * (double)(in - 1) / (len - 1); break;
    case GAIO_RESIZE_TF_CROP_AND_RESIZE: {
        float r0 = p->roi[a], r1 = p->roi[a + 2];
        float span = r1 - r0;
        xo = len == 1 ? (double)span * (double)(in - 1) / 2 : x * (double)span * (double)(in - 1) / (len - 1);
        xo += (double)r0 * (double)(in - 1);
        if (xo < 0 || xo > (double)(in - 1)) {
            t->extrapolate = true;
            return;
        }
        break;
    }
    default: {
        double adj = (double)out / len, center = (double)in / 2;
        xo = center * (1 - adj) + (x + 0.5) / s - 0.5;
    }
    }
    double ratio = xo == floor(xo) ? 1.0 : xo - floor(xo);
    double c[REF_TAPS];
    int n;
    if (p->antialias && p->mode != GAIO_RESIZE_NEAREST) {
        /* _linear_coeffs_antialias, _cubic_coeffs_antialias */
        const double sc = s < 1 ? s : 1, reach = p->mode == GAIO_RESIZE_LINEAR ? 1 : 2;
        const int start = (int)floor(-reach / sc) + 1;
        n = 2 - 2 * start;
        CHECK(n <= REF_TAPS);
        double sum = 0;
        for (int i = 0; i < n; i++) {
            double arg = ((double)(start + i) - ratio) * sc;
            c[i] = p->mode == GAIO_RESIZE_LINEAR ? fmax(0, fmin(1, 1 - fabs(arg))) : keys(arg, p->cubic_coeff_a);
            sum += c[i];
        }
        for (int i = 0; i < n; i++) c[i] /= sum;
    } else if (p->mode == GAIO_RESIZE_NEAREST) {
        n = 2;
        bool hi;
        if (ratio == 1.0) hi = true;
        else if (p->nearest == GAIO_RESIZE_ROUND_PREFER_FLOOR) hi = ratio > 0.5;
        else if (p->nearest == GAIO_RESIZE_ROUND_PREFER_CEIL) hi = ratio >= 0.5;
        else hi = p->nearest == GAIO_RESIZE_CEIL;
        c[0] = hi ? 0 : 1, c[1] = hi ? 1 : 0;
    } else if (p->mode == GAIO_RESIZE_LINEAR) {
        n = 2, c[0] = 1 - ratio, c[1] = ratio;
    } else {
        double A = p->cubic_coeff_a, r = ratio;
        n = 4;
        c[0] = ((A * (r + 1) - 5 * A) * (r + 1) + 8 * A) * (r + 1) - 4 * A;
        c[1] = ((A + 2) * r - (A + 3)) * r * r + 1;
        c[2] = ((A + 2) * (1 - r) - (A + 3)) * (1 - r) * (1 - r) + 1;
        c[3] = ((A * ((1 - r) + 1) - 5 * A) * ((1 - r) + 1) + 8 * A) * ((1 - r) + 1) - 4 * A;
    }
    /* The n nearest among the padded array's indexes [-pad, in + pad), the lower on a
     * tie, in ascending order: a selection sort over every candidate. Distances in long
     * double, exact for these positions: the reference's double distances (of x + pad,
     * rounded) can tie where a position lies within an ulp of an integer and pick a
     * window one element off from its coefficients, which gaio does not copy. */
    const int64_t pad = (n + 1) / 2, cands = in + 2 * pad;
    bool *taken = calloc((size_t)cands, 1);
    CHECK(taken);
    for (int k = 0; k < n; k++) {
        int64_t best = -1;
        for (int64_t i = 0; i < cands; i++) {
            if (taken[i]) continue;
            if (best < 0 || fabsl((long double)xo - (long double)(i - pad)) < fabsl((long double)xo - (long double)(best - pad)))
                best = i;
        }
        taken[best] = 1;
    }
    int k = 0;
    for (int64_t i = 0; i < cands; i++)
        if (taken[i]) t->idx[k++] = i - pad;
    free(taken);
    if (p->exclude_outside && p->mode != GAIO_RESIZE_NEAREST) {
        double sum = 0;
        for (int i = 0; i < n; i++) {
            if (t->idx[i] < 0 || t->idx[i] >= in) c[i] = 0;
            sum += c[i];
        }
        for (int i = 0; i < n; i++) c[i] /= sum;
    }
    t->n = n;
    for (int i = 0; i < n; i++) t->c[i] = c[i];
}

static int64_t clampi(int64_t i, int64_t in) { return i < 0 ? 0 : i >= in ? in - 1 : i; }

static const char *const mode_names[] = {"nearest", "linear", "cubic"};
static const char *const coord_names[] = {"half_pixel", "asymmetric", "pytorch_half_pixel", "tf_half_pixel_for_nn",
                                          "align_corners", "tf_crop_and_resize", "half_pixel_symmetric"};
static const char *const nearest_names[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};

/* Runs one resize of x (vals: NULL for random) into [N, C, OH, OW] and checks every
 * element against the reference (and, where want is given, against it too). */
static void resize_case(env *e, gaio_dtype dt, const int64_t *xs, int64_t OH, int64_t OW, mem_kind kx, mem_kind ky,
                        const gaio_resize_params *p, const float *vals, const float *want) {
    htensor x, y;
    const int64_t ys[4] = {xs[0], xs[1], OH, OW};
    make(e, &x, dt, xs, kx, vals);
    make(e, &y, dt, ys, ky, NULL);
    OK(gaio_resize2d(e->s, &x.t, &y.t, p));
    float *got = download(e, &y);
    ref_taps *th = malloc((size_t)OH * sizeof *th), *tw = malloc((size_t)OW * sizeof *tw);
    CHECK(th && tw);
    for (int64_t o = 0; o < OH; o++) ref_axis(p, 0, xs[2], OH, o, &th[o]);
    for (int64_t o = 0; o < OW; o++) ref_axis(p, 1, xs[3], OW, o, &tw[o]);
    char what[320];
    snprintf(what, sizeof what, "%s %s%s %s %s scale %g x %g, x [%lld, %lld, %lld, %lld] -> %lldx%lld (mem %d -> %d)",
             gaio_dtype_name(dt), mode_names[p->mode], p->antialias ? " antialias" : "", coord_names[p->coord],
             nearest_names[p->nearest], p->scale[0],
             p->scale[1], (long long)xs[0], (long long)xs[1], (long long)xs[2], (long long)xs[3], (long long)OH,
             (long long)OW, (int)kx, (int)ky);
    int64_t k = 0;
    for (int64_t n = 0; n < xs[0]; n++)
        for (int64_t c = 0; c < xs[1]; c++)
            for (int64_t oh = 0; oh < OH; oh++)
                for (int64_t ow = 0; ow < OW; ow++, k++) {
                    double ref = p->extrapolation_value, mag = fabs(ref);
                    if (!th[oh].extrapolate && !tw[ow].extrapolate) {
                        ref = 0, mag = 0;
                        for (int i = 0; i < th[oh].n; i++) {
                            double row = 0, rmag = 0;
                            int64_t h = clampi(th[oh].idx[i], xs[2]);
                            for (int j = 0; j < tw[ow].n; j++) {
                                int64_t w = clampi(tw[ow].idx[j], xs[3]);
                                double v = x.v[n * x.strides[0] + c * x.strides[1] + h * x.strides[2] + w * x.strides[3]];
                                row += tw[ow].c[j] * v, rmag += fabs(tw[ow].c[j] * v);
                            }
                            ref += th[oh].c[i] * row, mag += fabs(th[oh].c[i]) * rmag;
                        }
                    }
                    double g = got[n * y.strides[0] + c * y.strides[1] + oh * y.strides[2] + ow * y.strides[3]];
                    /* f32: sums of up to 16 products in f32; f16: the output's rounding too. */
                    double tol = dt == F16 ? 1e-3 * mag + 1e-3 * fabs(ref) + 1e-6 : 2e-6 * mag + 1e-7;
                    if (!(fabs(g - ref) <= tol)) {
                        fprintf(stderr, "%s: y[%lld, %lld, %lld, %lld] = %.9g, want %.9g (tol %.3g)\n", what,
                                (long long)n, (long long)c, (long long)oh, (long long)ow, g, ref, tol);
                        exit(1);
                    }
                    if (want && !(fabs(g - want[k]) <= (dt == F16 ? 1e-2 : 1e-5))) {
                        fprintf(stderr, "%s: y[%lld, %lld, %lld, %lld] = %.9g, ONNX's output is %.9g\n", what,
                                (long long)n, (long long)c, (long long)oh, (long long)ow, g, (double)want[k]);
                        exit(1);
                    }
                }
    free(th);
    free(tw);
    free(got);
    drop(&x);
    drop(&y);
}

static gaio_resize_params params(gaio_resize_mode mode, gaio_resize_coord coord, double sh, double sw) {
    gaio_resize_params p;
    memset(&p, 0, sizeof p);
    p.mode = mode, p.coord = coord, p.scale[0] = sh, p.scale[1] = sw, p.cubic_coeff_a = -0.75f;
    return p;
}

/* ONNX's own cases (onnx/backend/test/case/node/resize.py) with the outputs its
 * comments give. */
static void test_onnx_cases(env *e) {
    const float x22[] = {1, 2, 3, 4};
    const float x16[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    gaio_resize_params p = params(GAIO_RESIZE_LINEAR, GAIO_RESIZE_HALF_PIXEL, 2, 2);
    const float up_linear[] = {1, 1.25f, 1.75f, 2, 1.5f, 1.75f, 2.25f, 2.5f, 2.5f, 2.75f, 3.25f, 3.5f, 3, 3.25f, 3.75f, 4};
    resize_case(e, F32, (int64_t[]){1, 1, 2, 2}, 4, 4, MEM_PACKED, MEM_PACKED, &p, x22, up_linear);
    p.coord = GAIO_RESIZE_ALIGN_CORNERS;
    const float up_ac[] = {1,         1.33333333f, 1.66666667f, 2,         1.66666667f, 2, 2.33333333f, 2.66666667f,
                           2.33333333f, 2.66666667f, 3,         3.33333333f, 3, 3.33333333f, 3.66666667f, 4};
    resize_case(e, F32, (int64_t[]){1, 1, 2, 2}, 4, 4, MEM_NHWC, MEM_NHWC, &p, x22, up_ac);
    /* Downsampling by 0.6 from 2x4: 1x2; align_corners divides by 2.4 - 1, not 2 - 1. */
    const float x24[] = {1, 2, 3, 4, 5, 6, 7, 8};
    p = params(GAIO_RESIZE_LINEAR, GAIO_RESIZE_HALF_PIXEL, 0.6f, 0.6f);
    resize_case(e, F32, (int64_t[]){1, 1, 2, 4}, 1, 2, MEM_PACKED, MEM_PACKED, &p, x24, (const float[]){2.6666665f, 4.3333331f});
    p.coord = GAIO_RESIZE_ALIGN_CORNERS;
    resize_case(e, F32, (int64_t[]){1, 1, 2, 4}, 1, 2, MEM_PACKED, MEM_GAPS, &p, x24, (const float[]){1, 3.142857f});
    p = params(GAIO_RESIZE_NEAREST, GAIO_RESIZE_HALF_PIXEL, 0.6f, 0.6f);
    resize_case(e, F32, (int64_t[]){1, 1, 2, 4}, 1, 2, MEM_PACKED, MEM_PACKED, &p, x24, (const float[]){1, 3});
    /* tf_crop_and_resize of a 4x4 to sizes 3x3, roi [0.4, 0.6] x [0.6, 0.8]; and with
     * roi [0.4, 1.2] x [0.6, 1.3], the crop reaching past x: 10 there. */
    p = params(GAIO_RESIZE_LINEAR, GAIO_RESIZE_TF_CROP_AND_RESIZE, 0, 0);
    p.roi[0] = 0.4f, p.roi[1] = 0.6f, p.roi[2] = 0.6f, p.roi[3] = 0.8f;
    const float crop[] = {7.6000004f, 7.9f, 8.2f, 8.8f, 9.1f, 9.400001f, 10, 10.3f, 10.6f};
    resize_case(e, F32, (int64_t[]){1, 1, 4, 4}, 3, 3, MEM_PACKED, MEM_PACKED, &p, x16, crop);
    p.roi[2] = 1.2f, p.roi[3] = 1.7f, p.extrapolation_value = 10;
    const float crop_ex[] = {7.6000004f, 10, 10, 12.400001f, 10, 10, 10, 10, 10};
    resize_case(e, F32, (int64_t[]){1, 1, 4, 4}, 3, 3, MEM_NHWC, MEM_PACKED, &p, x16, crop_ex);
    /* Cubic up by 2, half_pixel, A = -0.75. */
    p = params(GAIO_RESIZE_CUBIC, GAIO_RESIZE_HALF_PIXEL, 2, 2);
    const float up_cubic[] = {
        0.47265625f,  0.76953125f,  1.24609375f,  1.875f,      2.28125f,  2.91015625f,  3.38671875f,  3.68359375f,
        1.66015625f,  1.95703125f,  2.43359375f,  3.0625f,     3.46875f,  4.09765625f,  4.57421875f,  4.87109375f,
        3.56640625f,  3.86328125f,  4.33984375f,  4.96875f,    5.375f,    6.00390625f,  6.48046875f,  6.77734375f,
        6.08203125f,  6.37890625f,  6.85546875f,  7.484375f,   7.890625f, 8.51953125f,  8.99609375f,  9.29296875f,
        7.70703125f,  8.00390625f,  8.48046875f,  9.109375f,   9.515625f, 10.14453125f, 10.62109375f, 10.91796875f,
        10.22265625f, 10.51953125f, 10.99609375f, 11.625f,     12.03125f, 12.66015625f, 13.13671875f, 13.43359375f,
        12.12890625f, 12.42578125f, 12.90234375f, 13.53125f,   13.9375f,  14.56640625f, 15.04296875f, 15.33984375f,
        13.31640625f, 13.61328125f, 14.08984375f, 14.71875f,   15.125f,   15.75390625f, 16.23046875f, 16.52734375f};
    resize_case(e, F32, (int64_t[]){1, 1, 4, 4}, 8, 8, MEM_PACKED, MEM_PACKED, &p, x16, up_cubic);
    /* Nearest up to 7x8 by sizes (scales 3.5 and 4), round_prefer_floor, half_pixel. */
    p = params(GAIO_RESIZE_NEAREST, GAIO_RESIZE_HALF_PIXEL, 0, 0);
    const float up_sizes[] = {1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 1, 1,
                              2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 3, 3, 3, 3, 4, 4, 4, 4, 3, 3, 3, 3, 4, 4, 4, 4};
    resize_case(e, F32, (int64_t[]){1, 1, 2, 2}, 7, 8, MEM_PACKED, MEM_PACKED, &p, x22, up_sizes);
}

/* Random sizes, modes, rules and memory, seeded. */
static void test_random(env *e, int cases) {
    uint64_t *r = &e->rng;
    for (int t = 0; t < cases; t++) {
        gaio_resize_params p = params((gaio_resize_mode)below(r, 3), (gaio_resize_coord)below(r, 7), 0, 0);
        p.nearest = (gaio_resize_nearest)below(r, 4);
        int64_t xs[4] = {1 + below(r, 3), 1 + below(r, 4), 1 + below(r, 9), 1 + below(r, 9)}, out[2];
        for (int a = 0; a < 2; a++) {
            const int64_t in = xs[2 + a];
            int kind = (int)below(r, 4);
            if (kind == 0) { /* sizes */
                out[a] = 1 + below(r, 20);
            } else { /* a scale: whole, a simple fraction, or any real in [0.15, 4) */
                double s;
                do {
                    s = kind == 1 ? (double)(1 + below(r, 4)) : kind == 2 ? (double)(1 + below(r, 7)) / 4.0 : 0.15 + 3.85 * unit(r);
                    s = (double)(float)s; /* as a model's float32 scales */
                } while (floor(s * (double)in) < 1);
                p.scale[a] = s;
                out[a] = (int64_t)floor(s * (double)in);
            }
        }
        if (p.mode == GAIO_RESIZE_CUBIC) {
            static const float as[] = {-0.75f, -0.5f, -0.6f};
            p.cubic_coeff_a = as[below(r, 3)];
        }
        p.exclude_outside = below(r, 3) == 0;
        p.antialias = below(r, 3) == 0;
        if (p.coord == GAIO_RESIZE_TF_CROP_AND_RESIZE) {
            for (int i = 0; i < 4; i++) p.roi[i] = (float)(unit(r) * 1.4 - 0.2);
            p.extrapolation_value = (float)(unit(r) * 4 - 2);
        }
        gaio_dtype dt = below(r, 2) ? F32 : F16;
        resize_case(e, dt, xs, out[0], out[1], (mem_kind)below(r, 4), (mem_kind)below(r, 4), &p, NULL, NULL);
    }
}

/* Every mode, rule and rounding over one set of shapes, both dtypes; then a larger
 * tensor (many blocks on a GPU). */
static void test_grid(env *e) {
    for (int m = 0; m < 3; m++)
        for (int c = 0; c < 7; c++)
            for (int nm = 0; nm < (m == 0 ? 4 : 1); nm++) {
                gaio_resize_params p = params((gaio_resize_mode)m, (gaio_resize_coord)c, 1.7, 0.55);
                p.nearest = (gaio_resize_nearest)nm;
                p.roi[0] = 0.1f, p.roi[1] = -0.1f, p.roi[2] = 0.9f, p.roi[3] = 1.05f, p.extrapolation_value = -3;
                resize_case(e, F32, (int64_t[]){2, 3, 5, 9}, 8, 4, MEM_PACKED, MEM_NHWC, &p, NULL, NULL);
                resize_case(e, F16, (int64_t[]){1, 5, 3, 4}, 7, 9, MEM_NHWC_GAPS, MEM_GAPS, &p, NULL, NULL);
                p.scale[0] = p.scale[1] = 0; /* sizes */
                resize_case(e, F32, (int64_t[]){1, 2, 6, 7}, 3, 13, MEM_GAPS, MEM_PACKED, &p, NULL, NULL);
            }
    gaio_resize_params p = params(GAIO_RESIZE_LINEAR, GAIO_RESIZE_HALF_PIXEL, 2, 2);
    resize_case(e, F32, (int64_t[]){2, 16, 40, 50}, 80, 100, MEM_NHWC, MEM_NHWC, &p, NULL, NULL);
    /* antialias downscaling: the filter stretched to 64 taps on W (1/32) and 16 on H. */
    for (int m = 1; m < 3; m++)
        for (int ex = 0; ex < 2; ex++) {
            p = params((gaio_resize_mode)m, ex ? GAIO_RESIZE_ALIGN_CORNERS : GAIO_RESIZE_HALF_PIXEL, 0.25, 0);
            p.antialias = 1, p.exclude_outside = ex;
            int64_t ow = m == 1 ? 2 : 4; /* 64 / 2: 1/32 for linear, 1/16 for cubic */
            resize_case(e, F32, (int64_t[]){1, 3, 20, 64}, 5, ow, MEM_PACKED, MEM_NHWC_GAPS, &p, NULL, NULL);
            resize_case(e, F16, (int64_t[]){2, 2, 9, 30}, 4, 11, MEM_NHWC, MEM_PACKED, &p, NULL, NULL);
        }
    p = params(GAIO_RESIZE_CUBIC, GAIO_RESIZE_ASYMMETRIC, 0, 0);
    resize_case(e, F16, (int64_t[]){1, 8, 64, 33}, 97, 70, MEM_PACKED, MEM_PACKED, &p, NULL, NULL);
}

static void test_bad(env *e) {
    gaio_buffer *buf;
    OK(gaio_buffer_alloc(e->ctx, GAIO_MEM_DEVICE, 16384, &buf));
    gaio_tensor x = gaio_tensor_make(buf, 0, F32, 4, (int64_t[]){2, 3, 4, 4}, GAIO_TENSOR_ROW_MAJOR);
    gaio_tensor y = gaio_tensor_make(buf, 4096, F32, 4, (int64_t[]){2, 3, 7, 9}, GAIO_TENSOR_NHWC);
    gaio_resize_params p = params(GAIO_RESIZE_CUBIC, GAIO_RESIZE_HALF_PIXEL, 0, 0), q;
    gaio_tensor t;
    const char *fn = "gaio_resize2d";
    OK(gaio_resize2d(e->s, &x, &y, &p));
    FAILS(GAIO_ERR_INVALID_ARG, gaio_resize2d(NULL, &x, &y, &p), fn);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_resize2d(e->s, NULL, &y, &p), fn);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_resize2d(e->s, &x, NULL, &p), fn);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_resize2d(e->s, &x, &y, NULL), fn);
    q = p, q.mode = (gaio_resize_mode)3;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_resize2d(e->s, &x, &y, &q), fn);
    q = p, q.coord = (gaio_resize_coord)7;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_resize2d(e->s, &x, &y, &q), fn);
    q = p, q.mode = GAIO_RESIZE_NEAREST, q.nearest = (gaio_resize_nearest)-1;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_resize2d(e->s, &x, &y, &q), fn);
    q = p, q.scale[1] = -2;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_resize2d(e->s, &x, &y, &q), fn);
    q = p, q.scale[0] = NAN;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_resize2d(e->s, &x, &y, &q), fn);
    q = p, q.scale[0] = INFINITY;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_resize2d(e->s, &x, &y, &q), fn);
    q = p, q.scale[0] = 1e-320; /* times 4: still no length */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_resize2d(e->s, &x, &y, &q), fn);
    t = x, t.shape[3] = 40; /* 40 / 17 wide: a length of 2.35 */
    q = p, q.antialias = 1, q.scale[1] = 1.0 / 17; /* cubic: 68 taps */
    FAILS(GAIO_ERR_NOT_SUPPORTED, gaio_resize2d(e->s, &t, &y, &q), fn);
    q.mode = GAIO_RESIZE_LINEAR; /* linear: 36 */
    OK(gaio_resize2d(e->s, &t, &y, &q));
    q.mode = GAIO_RESIZE_NEAREST; /* ignored */
    OK(gaio_resize2d(e->s, &t, &y, &q));
    q = p, q.cubic_coeff_a = NAN;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_resize2d(e->s, &x, &y, &q), fn);
    q = p, q.coord = GAIO_RESIZE_TF_CROP_AND_RESIZE, q.roi[2] = INFINITY;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_resize2d(e->s, &x, &y, &q), fn);
    t = y, t.shape[1] = 4;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_resize2d(e->s, &x, &t, &p), fn);
    t = y, t.shape[0] = 1;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_resize2d(e->s, &x, &t, &p), fn);
    t = y, t.dtype = F16;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_resize2d(e->s, &x, &t, &p), fn);
    t = x, t.ndim = 3;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_resize2d(e->s, &t, &y, &p), fn);
    t = x, t.dtype = GAIO_DTYPE_U8;
    gaio_tensor u = y;
    u.dtype = GAIO_DTYPE_U8;
    FAILS(GAIO_ERR_NOT_SUPPORTED, gaio_resize2d(e->s, &t, &u, &p), fn);
    t = y, t.offset = 256; /* overlaps x */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_resize2d(e->s, &x, &t, &p), fn);
    t = x, t.shape[2] = t.shape[3] = 4; /* y = x */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_resize2d(e->s, &x, &t, &p), fn);
    t = y, t.strides[0] = 189, t.strides[1] = 1, t.strides[2] = 0, t.strides[3] = 3; /* rows share memory */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_resize2d(e->s, &x, &t, &p), fn);
    t = y, t.offset = 16384 - 64; /* past the end */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_resize2d(e->s, &x, &t, &p), fn);
    OK(gaio_stream_synchronize(e->s)); /* nothing bad was enqueued */
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
    test_onnx_cases(&e);
    test_grid(&e);
    test_random(&e, 300);
    test_bad(&e);
    /* The same on a DEFERRED stream. */
    OK(gaio_stream_release(e.s));
    OK(gaio_stream_create(e.ctx, 0, GAIO_STREAM_DEFERRED, &e.s));
    test_onnx_cases(&e);
    test_random(&e, 50);
    OK(gaio_stream_release(e.s));
    OK(gaio_context_release(e.ctx));
    test_shutdown();
}
