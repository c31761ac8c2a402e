/* gaio_softmax, gaio_pool2d and gaio_global_avg_pool on each backend against direct
 * double-precision loops: ONNX MaxPool / AveragePool cases (the ResNet stem's 3x3
 * stride 2 pad 1, 2x2 stride 2, 7x7 global average, asymmetric pads, ceil mode,
 * count_include_pad both ways, dilation, 1x1 planes), batches of 1 and 33, NCHW,
 * NHWC and gapped strides, f32 and f16, softmax along the last and the channel axis
 * with large inputs and in place; bad input for each op. NHWC tensors at their
 * buffer's start with C a multiple of 8 (f16) or 4 (f32) take the CUDA kernels'
 * 16-byte vector paths; global averages from batch 1 over 112x112 planes to grids of
 * thousands of blocks, its split of each plane over a block's threads. */
#include "dnn/strided_tensor.h"

/* make() at the start of its buffer (device allocations are 256-byte aligned), so
 * that NHWC rows of 8 halves or 4 floats are 16-byte aligned; make() places element
 * [0, ...] 0 to 2 elements in. */
static void make_aligned(env *e, htensor *h, gaio_dtype dt, int32_t nd, const int64_t *shape, mem_kind kind,
                         float shift, float scale) {
    for (;;) {
        make(e, h, dt, nd, shape, kind, shift, scale);
        if (h->lead == 0) return;
        drop(h);
    }
}

/* ---- softmax ---- */

static void softmax_case(env *e, gaio_dtype dt, int32_t nd, const int64_t *shape, int32_t axis, mem_kind kx,
                         mem_kind ky, bool in_place, float shift, float scale) {
    htensor x, y;
    make(e, &x, dt, nd, shape, kx, shift, scale);
    if (!in_place) make(e, &y, dt, nd, shape, ky, 0, 1);
    const htensor *out = in_place ? &x : &y;
    OK(gaio_softmax(e->s, &x.t, &out->t, axis));
    float *got = download(e, out);
    int32_t ax = axis < 0 ? axis + nd : axis;
    int64_t len = shape[ax], total = 1;
    for (int i = 0; i < nd; i++) total *= shape[i];
    double *ref = malloc((size_t)len * sizeof(double));
    CHECK(ref);
    char where[160];
    for (int64_t r = 0; r < total / len; r++) {
        int64_t idx[5] = {0}, q = r;
        for (int i = nd - 1; i >= 0; i--)
            if (i != ax) idx[i] = q % shape[i], q /= shape[i];
        double m = -INFINITY, s = 0;
        for (int64_t i = 0; i < len; i++) {
            idx[ax] = i;
            double v = x.v[offset_of(&x, idx)];
            ref[i] = v;
            if (v > m) m = v;
        }
        for (int64_t i = 0; i < len; i++) s += exp(ref[i] - m);
        for (int64_t i = 0; i < len; i++) {
            idx[ax] = i;
            double want = exp(ref[i] - m) / s;
            /* f32: exp and the f32 sum, a few ulp; f16: the output's rounding. */
            double tol = dt == F16 ? 1e-3 * want + 1e-6 : 3e-5 * want + 1e-8;
            snprintf(where, sizeof where, "%s nd %d axis %d row %lld elem %lld%s", gaio_dtype_name(dt), (int)nd,
                     (int)axis, (long long)r, (long long)i, in_place ? " in place" : "");
            report("softmax", where, got[offset_of(out, idx)], want, tol);
        }
    }
    if (!in_place) {
        check_gaps(&y, got);
        drop(&y);
    }
    free(ref);
    free(got);
    drop(&x);
}

static void test_softmax(env *e) {
    /* Classifier rows of 1000 around 80 (exp would overflow f32 without the max). */
    softmax_case(e, F32, 2, (int64_t[]){33, 1000}, -1, MEM_PACKED, MEM_PACKED, false, 80, 10);
    softmax_case(e, F16, 2, (int64_t[]){3, 1000}, 1, MEM_PACKED, MEM_GAPS, false, 80, 8);
    softmax_case(e, F32, 2, (int64_t[]){2, 37}, -1, MEM_GAPS, MEM_PACKED, false, -300, 200);
    /* Channels of NCHW and NHWC tensors. */
    softmax_case(e, F32, 4, (int64_t[]){2, 5, 3, 7}, 1, MEM_PACKED, MEM_NHWC, false, 0, 4);
    softmax_case(e, F16, 4, (int64_t[]){33, 10, 2, 3}, 1, MEM_NHWC, MEM_NHWC_GAPS, false, 80, 5);
    softmax_case(e, F32, 4, (int64_t[]){1, 3, 4, 5}, -3, MEM_NHWC_GAPS, MEM_PACKED, false, 1, 1);
    /* A row of one, rows along the first axis, 5-D. */
    softmax_case(e, F32, 2, (int64_t[]){1, 1}, 0, MEM_PACKED, MEM_PACKED, false, 0, 1);
    softmax_case(e, F32, 2, (int64_t[]){4, 1}, -1, MEM_PACKED, MEM_PACKED, false, 0, 1);
    softmax_case(e, F32, 2, (int64_t[]){17, 4}, 0, MEM_PACKED, MEM_GAPS, false, 0, 3);
    softmax_case(e, F16, 5, (int64_t[]){2, 3, 4, 2, 3}, 2, MEM_GAPS, MEM_NHWC, false, 0, 2);
    softmax_case(e, F32, 1, (int64_t[]){4099}, 0, MEM_PACKED, MEM_PACKED, false, 0, 20);
    /* Packed rows along the last axis, held in registers on a GPU (up to 64 and up to
     * 256 elements a row): attention's scores over ViT's 197 and Swin's 49 tokens, the
     * bounds, in place, and one row longer than the registers hold. */
    softmax_case(e, F16, 3, (int64_t[]){4, 12, 197}, -1, MEM_PACKED, MEM_PACKED, false, 0, 6);
    softmax_case(e, F32, 2, (int64_t[]){3, 49}, 1, MEM_PACKED, MEM_PACKED, false, 80, 10);
    softmax_case(e, F32, 3, (int64_t[]){2, 3, 64}, -1, MEM_PACKED, MEM_PACKED, false, 0, 3);
    softmax_case(e, F16, 2, (int64_t[]){5, 65}, -1, MEM_PACKED, MEM_PACKED, false, 0, 3);
    softmax_case(e, F16, 2, (int64_t[]){6, 256}, -1, MEM_PACKED, MEM_PACKED, true, 0, 4);
    softmax_case(e, F32, 2, (int64_t[]){7, 257}, -1, MEM_PACKED, MEM_PACKED, false, 0, 4);
    /* Packed, along an inner axis with at least 32 elements after it (a thread per row
     * on a GPU): the YOLO-style detector's 16 bins, in place too; then its NHWC form. */
    softmax_case(e, F16, 4, (int64_t[]){3, 16, 4, 210}, 1, MEM_PACKED, MEM_PACKED, false, 0, 4);
    softmax_case(e, F32, 3, (int64_t[]){2, 5, 97}, 1, MEM_PACKED, MEM_PACKED, true, 80, 10);
    /* NHWC channels (the axis innermost in memory), and the detector's row-major x into
     * an NHWC y (a thread per row for rows up to 64 long on a GPU). */
    softmax_case(e, F16, 4, (int64_t[]){3, 16, 4, 70}, 1, MEM_NHWC, MEM_NHWC, false, 0, 4);
    softmax_case(e, F32, 4, (int64_t[]){2, 32, 5, 3}, 1, MEM_NHWC, MEM_NHWC, true, 80, 10);
    softmax_case(e, F16, 4, (int64_t[]){3, 16, 4, 70}, 1, MEM_PACKED, MEM_NHWC, false, 0, 4);
    softmax_case(e, F32, 3, (int64_t[]){2, 64, 40}, 1, MEM_GAPS, MEM_PACKED, false, 0, 4);
    /* In place. */
    softmax_case(e, F32, 3, (int64_t[]){5, 6, 129}, -1, MEM_GAPS, MEM_PACKED, true, 80, 10);
    softmax_case(e, F16, 4, (int64_t[]){2, 7, 3, 3}, 1, MEM_NHWC, MEM_PACKED, true, 0, 4);
    for (int r = 0; r < 8; r++) {
        int32_t nd = 1 + (int32_t)(test_rand(&e->rng) % 4);
        int64_t shape[5];
        for (int i = 0; i < nd; i++) shape[i] = 1 + (int64_t)(test_rand(&e->rng) % 13);
        int32_t axis = (int32_t)(test_rand(&e->rng) % (uint64_t)(2 * nd)) - nd;
        mem_kind k = nd == 4 ? (mem_kind)(test_rand(&e->rng) % 4) : (mem_kind)(2 * (test_rand(&e->rng) % 2));
        softmax_case(e, (test_rand(&e->rng) & 1) ? F16 : F32, nd, shape, axis, k, MEM_PACKED, test_rand(&e->rng) & 1,
                     0, 6);
    }
}

/* ---- pooling ---- */

typedef struct pcase {
    gaio_dtype dt;
    int64_t n, c, h, w;
    mem_kind kx, ky;
    gaio_pool_mode mode;
    int32_t kh, kw, sh, sw, pt, pl, pb, pr, dh, dw, cip;
} pcase;

/* Output positions along one side, as ONNX sizes them (ceil: no window starts in the
 * end padding). */
static int64_t pooled_size(int64_t in, int64_t lo, int64_t hi, int64_t k, int64_t d, int64_t s, bool ceil) {
    int64_t num = in + lo + hi - d * (k - 1) - 1;
    if (!ceil) return num / s + 1;
    int64_t out = (num + s - 1) / s + 1;
    return (out - 1) * s >= in + lo ? out - 1 : out;
}

/* A pooling of x laid out as p->kx into y laid out as p->ky; `ceil` for ONNX's
 * ceil_mode, `aligned` to place x and y at their buffers' starts. */
static void pool_case_ex(env *e, const pcase *p, bool ceil, bool aligned) {
    int64_t dh = p->dh ? p->dh : 1, dw = p->dw ? p->dw : 1;
    int64_t oh = pooled_size(p->h, p->pt, p->pb, p->kh, dh, p->sh, ceil);
    int64_t ow = pooled_size(p->w, p->pl, p->pr, p->kw, dw, p->sw, ceil);
    htensor x, y;
    (aligned ? make_aligned : make)(e, &x, p->dt, 4, (int64_t[]){p->n, p->c, p->h, p->w}, p->kx, 0, 1);
    (aligned ? make_aligned : make)(e, &y, p->dt, 4, (int64_t[]){p->n, p->c, oh, ow}, p->ky, 0, 1);
    gaio_pool_params pp = {p->mode, {p->kh, p->kw}, {p->sh, p->sw}, {p->pt, p->pl, p->pb, p->pr}, {p->dh, p->dw},
                           p->cip,  ceil};
    OK(gaio_pool2d(e->s, &x.t, &y.t, &pp));
    float *got = download(e, &y);
    char where[200];
    for (int64_t n = 0; n < p->n; n++)
        for (int64_t c = 0; c < p->c; c++)
            for (int64_t i = 0; i < oh; i++)
                for (int64_t j = 0; j < ow; j++) {
                    double m = -INFINITY, s = 0;
                    int64_t count = 0, padded = 0; /* taps in x; taps in x and its declared padding */
                    for (int64_t a = 0; a < p->kh; a++)
                        for (int64_t b = 0; b < p->kw; b++) {
                            int64_t hh = i * p->sh - p->pt + a * dh, ww = j * p->sw - p->pl + b * dw;
                            padded += hh >= -p->pt && hh < p->h + p->pb && ww >= -p->pl && ww < p->w + p->pr;
                            if (hh < 0 || hh >= p->h || ww < 0 || ww >= p->w) continue;
                            double v = x.v[offset_of(&x, (int64_t[]){n, c, hh, ww})];
                            if (v > m) m = v;
                            s += v;
                            count++;
                        }
                    CHECK(count > 0);
                    double want = p->mode == GAIO_POOL_MAX ? m : s / (double)(p->cip ? padded : count);
                    double tol = p->mode == GAIO_POOL_MAX ? 0 : p->dt == F16 ? 1e-3 * fabs(want) + 1e-4 : 1e-5;
                    snprintf(where, sizeof where,
                             "%s %s x [%lld,%lld,%lld,%lld] k %dx%d s %dx%d pads %d,%d,%d,%d dil %dx%d cip %d%s: "
                             "y[%lld,%lld,%lld,%lld]",
                             p->mode == GAIO_POOL_MAX ? "max" : "avg", gaio_dtype_name(p->dt), (long long)p->n,
                             (long long)p->c, (long long)p->h, (long long)p->w, p->kh, p->kw, p->sh, p->sw, p->pt,
                             p->pl, p->pb, p->pr, p->dh, p->dw, p->cip, ceil ? " ceil" : "", (long long)n,
                             (long long)c, (long long)i, (long long)j);
                    report("pool2d", where, got[offset_of(&y, (int64_t[]){n, c, i, j})], want, tol);
                }
    check_gaps(&y, got);
    free(got);
    drop(&x);
    drop(&y);
}

static void pool_case(env *e, const pcase *p) { pool_case_ex(e, p, false, false); }

/* Whether every window along one axis holds an element of x (gaio refuses a window
 * wholly in the padding). */
static bool windows_hit(int64_t in, int32_t pad_lo, int32_t pad_hi, int32_t k, int32_t d, int32_t s) {
    int64_t out = (in + pad_lo + pad_hi - (int64_t)d * (k - 1) - 1) / s + 1;
    for (int64_t o = 0; o < out; o++) {
        bool hit = false;
        for (int32_t i = 0; i < k && !hit; i++) {
            int64_t at = o * s - pad_lo + (int64_t)i * d;
            hit = at >= 0 && at < in;
        }
        if (!hit) return false;
    }
    return true;
}

static void test_pool(env *e) {
    const gaio_pool_mode MAX = GAIO_POOL_MAX, AVG = GAIO_POOL_AVG;
    const pcase cases[] = {
        /* ResNet's stem max pool, NCHW and NHWC. */
        {F32, 2, 8, 56, 56, MEM_PACKED, MEM_PACKED, MAX, 3, 3, 2, 2, 1, 1, 1, 1, 0, 0, 0},
        {F16, 1, 16, 32, 32, MEM_NHWC, MEM_NHWC, MAX, 3, 3, 2, 2, 1, 1, 1, 1, 0, 0, 0},
        /* NHWC in and out: the GPU's channels-innermost path (32-bit offsets), each
         * mode, count_include_pad, gapped strides, dilation, asymmetric padding. */
        {F32, 2, 24, 17, 15, MEM_NHWC, MEM_NHWC, MAX, 3, 3, 2, 2, 1, 1, 1, 1, 0, 0, 0},
        {F16, 3, 9, 10, 11, MEM_NHWC, MEM_NHWC, AVG, 3, 3, 2, 2, 1, 1, 1, 1, 0, 0, 1},
        {F32, 3, 9, 10, 11, MEM_NHWC_GAPS, MEM_NHWC, AVG, 3, 2, 2, 1, 0, 1, 2, 0, 0, 0, 0},
        {F16, 2, 5, 11, 13, MEM_NHWC, MEM_NHWC_GAPS, MAX, 3, 3, 1, 2, 2, 2, 2, 2, 2, 2, 0},
        /* 2x2 stride 2 with an odd width (the last column dropped), batch 33. */
        {F32, 33, 3, 8, 9, MEM_NHWC, MEM_PACKED, MAX, 2, 2, 2, 2, 0, 0, 0, 0, 0, 0, 0},
        {F16, 33, 3, 9, 8, MEM_PACKED, MEM_NHWC_GAPS, AVG, 2, 2, 2, 2, 0, 0, 0, 0, 0, 0, 0},
        /* 3x3 stride 1 pad 1 averages, count_include_pad both ways. */
        {F32, 2, 5, 7, 7, MEM_PACKED, MEM_PACKED, AVG, 3, 3, 1, 1, 1, 1, 1, 1, 0, 0, 0},
        {F32, 2, 5, 7, 7, MEM_GAPS, MEM_PACKED, AVG, 3, 3, 1, 1, 1, 1, 1, 1, 0, 0, 1},
        {F16, 3, 4, 6, 5, MEM_NHWC, MEM_GAPS, AVG, 3, 3, 2, 2, 1, 1, 1, 1, 0, 0, 1},
        /* 7x7 average over a 7x7 plane (a global average). */
        {F32, 1, 64, 7, 7, MEM_PACKED, MEM_PACKED, AVG, 7, 7, 1, 1, 0, 0, 0, 0, 0, 0, 0},
        /* Asymmetric pads and windows; ceil mode as bottom / right padding. */
        {F32, 2, 3, 10, 11, MEM_PACKED, MEM_PACKED, MAX, 3, 2, 2, 1, 0, 1, 2, 0, 0, 0, 0},
        {F32, 2, 3, 10, 11, MEM_NHWC_GAPS, MEM_PACKED, AVG, 3, 2, 2, 1, 0, 1, 2, 0, 0, 0, 0},
        {F16, 2, 3, 10, 11, MEM_PACKED, MEM_NHWC, AVG, 3, 2, 2, 1, 0, 1, 2, 0, 0, 0, 1},
        {F32, 1, 2, 6, 6, MEM_PACKED, MEM_PACKED, MAX, 3, 3, 2, 2, 0, 0, 1, 1, 0, 0, 0},
        {F32, 1, 2, 6, 6, MEM_PACKED, MEM_PACKED, AVG, 3, 3, 2, 2, 0, 0, 1, 1, 0, 0, 0},
        /* Dilation 2. */
        {F32, 1, 4, 11, 13, MEM_PACKED, MEM_PACKED, MAX, 3, 3, 1, 2, 2, 2, 2, 2, 2, 2, 0},
        {F16, 3, 2, 9, 9, MEM_NHWC, MEM_PACKED, MAX, 2, 3, 2, 1, 1, 0, 0, 2, 2, 3, 0},
        {F32, 2, 3, 11, 13, MEM_PACKED, MEM_NHWC, AVG, 3, 3, 1, 2, 2, 2, 2, 2, 2, 2, 0},
        {F32, 2, 3, 11, 13, MEM_NHWC, MEM_PACKED, AVG, 3, 3, 1, 2, 2, 2, 2, 2, 2, 2, 1},
        {F16, 3, 5, 9, 10, MEM_NHWC, MEM_NHWC, AVG, 2, 3, 2, 1, 1, 0, 0, 2, 2, 3, 1},
        /* 1x1 planes: a 1x1 window, and a 3x3 window over the padding. */
        {F32, 3, 5, 1, 1, MEM_PACKED, MEM_PACKED, MAX, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0},
        {F32, 3, 5, 1, 1, MEM_NHWC, MEM_PACKED, MAX, 3, 3, 1, 1, 1, 1, 1, 1, 0, 0, 0},
        {F32, 3, 5, 1, 1, MEM_PACKED, MEM_GAPS, AVG, 3, 3, 1, 1, 1, 1, 1, 1, 0, 0, 1},
        {F16, 3, 5, 1, 1, MEM_PACKED, MEM_PACKED, AVG, 3, 3, 1, 1, 1, 1, 1, 1, 0, 0, 0},
        /* A window as large as the plane, strides larger than the window. */
        {F32, 2, 3, 5, 4, MEM_PACKED, MEM_PACKED, MAX, 5, 4, 3, 3, 0, 0, 0, 0, 0, 0, 0},
        {F32, 2, 3, 13, 12, MEM_PACKED, MEM_PACKED, AVG, 2, 2, 5, 4, 0, 0, 0, 0, 0, 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) pool_case(e, &cases[i]);
    /* NHWC x and y at their buffers' starts: with C a multiple of 8 (f16) or 4 (f32),
     * the GPU's 16-byte vector path. */
    const struct {
        pcase p;
        bool ceil;
    } vec[] = {
        /* The ResNet stem's max pool; more channel vectors than a warp's lanes. */
        {{F16, 2, 64, 32, 32, MEM_NHWC, MEM_NHWC, MAX, 3, 3, 2, 2, 1, 1, 1, 1, 0, 0, 0}, false},
        {{F16, 1, 136, 9, 9, MEM_NHWC, MEM_NHWC, MAX, 3, 3, 2, 2, 1, 1, 1, 1, 0, 0, 0}, false},
        /* Averages with padding, count_include_pad both ways, asymmetric pads, dilation. */
        {{F16, 3, 64, 11, 13, MEM_NHWC, MEM_NHWC, AVG, 3, 3, 2, 2, 1, 1, 1, 1, 0, 0, 0}, false},
        {{F16, 3, 64, 11, 13, MEM_NHWC, MEM_NHWC, AVG, 3, 3, 2, 2, 1, 1, 1, 1, 0, 0, 1}, false},
        {{F16, 2, 64, 7, 7, MEM_NHWC, MEM_NHWC, AVG, 3, 3, 1, 1, 1, 1, 1, 1, 0, 0, 1}, false},
        {{F16, 1, 64, 9, 10, MEM_NHWC, MEM_NHWC, AVG, 2, 3, 2, 1, 1, 0, 0, 2, 2, 3, 1}, false},
        {{F16, 1, 64, 11, 13, MEM_NHWC, MEM_NHWC, MAX, 3, 3, 1, 2, 2, 2, 2, 2, 2, 2, 0}, false},
        /* Ceil mode: last windows past the end padding (16 + 1 + 1 - 3 is odd), or past
         * x with no padding; count_include_pad counts the declared padding only. */
        {{F16, 2, 64, 16, 16, MEM_NHWC, MEM_NHWC, MAX, 3, 3, 2, 2, 1, 1, 1, 1, 0, 0, 0}, true},
        {{F16, 2, 64, 16, 16, MEM_NHWC, MEM_NHWC, AVG, 3, 3, 2, 2, 1, 1, 1, 1, 0, 0, 1}, true},
        {{F16, 2, 64, 16, 16, MEM_NHWC, MEM_NHWC, AVG, 3, 3, 2, 2, 1, 1, 1, 1, 0, 0, 0}, true},
        {{F16, 1, 64, 10, 10, MEM_NHWC, MEM_NHWC, AVG, 3, 3, 2, 2, 0, 0, 0, 0, 0, 0, 1}, true},
        /* f32 vectors of 4. */
        {{F32, 2, 32, 12, 11, MEM_NHWC, MEM_NHWC, MAX, 3, 3, 2, 2, 1, 1, 1, 1, 0, 0, 0}, false},
        {{F32, 2, 36, 12, 11, MEM_NHWC, MEM_NHWC, AVG, 3, 3, 2, 2, 1, 1, 1, 1, 0, 0, 1}, true},
        /* Not vectors: 12 channels, an NCHW y. */
        {{F16, 2, 12, 16, 16, MEM_NHWC, MEM_NHWC, AVG, 3, 3, 2, 2, 1, 1, 1, 1, 0, 0, 1}, true},
        {{F16, 2, 64, 12, 12, MEM_NHWC, MEM_PACKED, MAX, 3, 3, 2, 2, 1, 1, 1, 1, 0, 0, 0}, false},
    };
    for (size_t i = 0; i < sizeof vec / sizeof vec[0]; i++) pool_case_ex(e, &vec[i].p, vec[i].ceil, true);
    for (int r = 0; r < 16; r++) {
        pcase p;
        memset(&p, 0, sizeof p);
        p.dt = (test_rand(&e->rng) & 1) ? F16 : F32;
        p.n = 1 + (int64_t)(test_rand(&e->rng) % 3), p.c = 1 + (int64_t)(test_rand(&e->rng) % 5);
        p.h = 1 + (int64_t)(test_rand(&e->rng) % 12), p.w = 1 + (int64_t)(test_rand(&e->rng) % 12);
        p.kx = (mem_kind)(test_rand(&e->rng) % 4), p.ky = (mem_kind)(test_rand(&e->rng) % 4);
        p.mode = (test_rand(&e->rng) & 1) ? MAX : AVG;
        p.kh = 1 + (int32_t)(test_rand(&e->rng) % 4), p.kw = 1 + (int32_t)(test_rand(&e->rng) % 4);
        p.sh = 1 + (int32_t)(test_rand(&e->rng) % 3), p.sw = 1 + (int32_t)(test_rand(&e->rng) % 3);
        /* Pads below the window; dilations may still leave a window in the padding alone. */
        p.pt = (int32_t)(test_rand(&e->rng) % (uint64_t)p.kh), p.pb = (int32_t)(test_rand(&e->rng) % (uint64_t)p.kh);
        p.pl = (int32_t)(test_rand(&e->rng) % (uint64_t)p.kw), p.pr = (int32_t)(test_rand(&e->rng) % (uint64_t)p.kw);
        p.cip = (int32_t)(test_rand(&e->rng) & 1);
        p.dh = 1 + (int32_t)(test_rand(&e->rng) % 2), p.dw = 1 + (int32_t)(test_rand(&e->rng) % 2);
        if (p.h + p.pt + p.pb < p.dh * (p.kh - 1) + 1 || p.w + p.pl + p.pr < p.dw * (p.kw - 1) + 1) continue;
        if (!windows_hit(p.h, p.pt, p.pb, p.kh, p.dh, p.sh) || !windows_hit(p.w, p.pl, p.pr, p.kw, p.dw, p.sw)) continue;
        pool_case(e, &p);
    }
}

/* ---- global average ---- */

/* The global average of x laid out as kx into y [N, C] (flat) or [N, C, 1, 1] laid out
 * as ky; `aligned` places x at its buffer's start. */
static void gap_case_ex(env *e, gaio_dtype dt, int64_t n, int64_t c, int64_t h, int64_t w, mem_kind kx, bool flat,
                        mem_kind ky, bool aligned) {
    htensor x, y;
    (aligned ? make_aligned : make)(e, &x, dt, 4, (int64_t[]){n, c, h, w}, kx, 0.25f, 1);
    if (flat)
        make(e, &y, dt, 2, (int64_t[]){n, c}, ky, 0, 1);
    else
        make(e, &y, dt, 4, (int64_t[]){n, c, 1, 1}, ky, 0, 1);
    OK(gaio_global_avg_pool(e->s, &x.t, &y.t));
    float *got = download(e, &y);
    char where[160];
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < c; j++) {
            double s = 0, mag = 0;
            for (int64_t a = 0; a < h; a++)
                for (int64_t b = 0; b < w; b++) {
                    double v = x.v[offset_of(&x, (int64_t[]){i, j, a, b})];
                    s += v, mag += fabs(v);
                }
            double want = s / (double)(h * w);
            /* f32: the f32 sum's rounding, ~ sqrt(hw) ulp of the magnitudes; f16: the output's. */
            double tol = 2e-7 * sqrt((double)(h * w)) * mag / (double)(h * w) + 1e-7 + (dt == F16 ? 1e-3 * fabs(want) : 0);
            snprintf(where, sizeof where, "%s x [%lld,%lld,%lld,%lld]: y[%lld,%lld]", gaio_dtype_name(dt), (long long)n,
                     (long long)c, (long long)h, (long long)w, (long long)i, (long long)j);
            int64_t idx[4] = {i, j, 0, 0};
            report("global_avg_pool", where, got[offset_of(&y, idx)], want, tol);
        }
    check_gaps(&y, got);
    free(got);
    drop(&x);
    drop(&y);
}

static void gap_case(env *e, gaio_dtype dt, int64_t n, int64_t c, int64_t h, int64_t w, mem_kind kx, bool flat,
                     mem_kind ky) {
    gap_case_ex(e, dt, n, c, h, w, kx, flat, ky, false);
}

static void test_gap(env *e) {
    gap_case(e, F32, 1, 512, 7, 7, MEM_PACKED, false, MEM_PACKED);
    gap_case(e, F16, 33, 10, 7, 7, MEM_NHWC, true, MEM_PACKED);
    gap_case(e, F32, 2, 3, 1, 1, MEM_PACKED, true, MEM_GAPS);
    gap_case(e, F32, 2, 6, 31, 29, MEM_GAPS, false, MEM_NHWC);
    gap_case(e, F16, 1, 5, 56, 56, MEM_NHWC_GAPS, false, MEM_GAPS);
    gap_case(e, F32, 3, 1, 1, 40, MEM_PACKED, false, MEM_NHWC_GAPS);
    /* Channels innermost, not whole 16-byte vectors (300 halves, 130 floats): single
     * channels on a GPU, each plane split over a block's threads. */
    gap_case(e, F16, 4, 300, 7, 7, MEM_NHWC, false, MEM_NHWC);
    gap_case(e, F32, 3, 130, 5, 6, MEM_NHWC_GAPS, true, MEM_GAPS);
    /* NHWC x at its buffer's start: 16-byte vectors of channels on a GPU, each plane
     * split over a block's threads. EfficientNet's SE planes at batch 1 and 3 (a few
     * groups: blocks of 1024 threads over 112x112, of 256 over 56x56), its head's 1280
     * channels over 7x7. */
    gap_case_ex(e, F16, 1, 32, 112, 112, MEM_NHWC, false, MEM_NHWC, true);
    gap_case_ex(e, F16, 3, 64, 112, 112, MEM_NHWC, true, MEM_PACKED, true);
    gap_case_ex(e, F16, 1, 136, 56, 56, MEM_NHWC, false, MEM_GAPS, true);
    gap_case_ex(e, F16, 3, 64, 56, 56, MEM_NHWC, true, MEM_PACKED, true);
    gap_case_ex(e, F16, 1, 1280, 7, 7, MEM_NHWC, true, MEM_PACKED, true);
    gap_case_ex(e, F16, 3, 1280, 7, 7, MEM_NHWC, false, MEM_NHWC, true);
    /* Many groups: 2 a block (25 an image: blocks straddle images), 32 a block, and
     * 2188 blocks (f32 vectors of 4). */
    gap_case_ex(e, F16, 64, 200, 3, 3, MEM_NHWC, true, MEM_PACKED, true);
    gap_case_ex(e, F16, 64, 2048, 2, 2, MEM_NHWC, true, MEM_PACKED, true);
    gap_case_ex(e, F32, 70, 4000, 1, 2, MEM_NHWC, true, MEM_PACKED, true);
    gap_case_ex(e, F32, 2, 96, 28, 28, MEM_NHWC, false, MEM_NHWC, true);
    /* Not vectors: 12 channels (single channels split the same way), gapped strides. */
    gap_case_ex(e, F16, 3, 12, 56, 56, MEM_NHWC, true, MEM_PACKED, true);
    gap_case_ex(e, F16, 1, 12, 112, 112, MEM_NHWC, false, MEM_NHWC, true);
    gap_case_ex(e, F32, 2, 64, 20, 19, MEM_NHWC_GAPS, true, MEM_PACKED, true);
}

/* ---- bad input ---- */

static void test_bad(env *e) {
    gaio_buffer *buf, *host;
    OK(gaio_buffer_alloc(e->ctx, GAIO_MEM_DEVICE, 8192, &buf));
    OK(gaio_buffer_alloc(e->ctx, GAIO_MEM_HOST, 8192, &host));
    gaio_tensor x = gaio_tensor_make(buf, 0, F32, 2, (int64_t[]){4, 8}, GAIO_TENSOR_ROW_MAJOR);
    gaio_tensor y = gaio_tensor_make(buf, 256, F32, 2, (int64_t[]){4, 8}, GAIO_TENSOR_ROW_MAJOR);
    gaio_tensor t;
    const char *fn = "gaio_softmax";
    OK(gaio_softmax(e->s, &x, &y, 1));
    OK(gaio_softmax(e->s, &x, &x, -2)); /* in place */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_softmax(NULL, &x, &y, 1), fn);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_softmax(e->s, NULL, &y, 1), fn);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_softmax(e->s, &x, NULL, 1), fn);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_softmax(e->s, &x, &y, 2), fn);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_softmax(e->s, &x, &y, -3), fn);
    t = y, t.shape[1] = 7;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_softmax(e->s, &x, &t, 1), fn);
    t = y, t.dtype = F16;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_softmax(e->s, &x, &t, 1), fn);
    t = x, t.dtype = GAIO_DTYPE_U8;
    gaio_tensor u = y;
    u.dtype = GAIO_DTYPE_U8;
    FAILS(GAIO_ERR_NOT_SUPPORTED, gaio_softmax(e->s, &t, &u, 1), fn);
    t = y, t.offset = 64; /* overlaps x, not in place */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_softmax(e->s, &x, &t, 1), fn);
    t = x, t.strides[0] = 1, t.strides[1] = 4; /* the same memory as x, other strides */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_softmax(e->s, &x, &t, 1), fn);
    t = y, t.strides[0] = 0, t.strides[1] = 1; /* rows of y share memory */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_softmax(e->s, &x, &t, 1), fn);
    t = y, t.offset = 8192 - 64; /* past the end */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_softmax(e->s, &x, &t, 1), fn);
    t = y, t.offset = 258; /* not a multiple of 4 */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_softmax(e->s, &x, &t, 1), fn);
    t = y, t.buffer = host; /* pageable host memory: kernels take device or pinned buffers */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_softmax(e->s, &x, &t, 1), fn);

    fn = "gaio_pool2d";
    gaio_tensor px = gaio_tensor_make(buf, 0, F32, 4, (int64_t[]){2, 3, 8, 8}, GAIO_TENSOR_ROW_MAJOR);
    gaio_tensor py = gaio_tensor_make(buf, 2048, F32, 4, (int64_t[]){2, 3, 4, 4}, GAIO_TENSOR_NHWC);
    gaio_pool_params pp = {GAIO_POOL_MAX, {3, 3}, {2, 2}, {1, 1, 0, 0}, {1, 1}, 0, 0};
    OK(gaio_pool2d(e->s, &px, &py, &pp));
    gaio_pool_params q;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_pool2d(NULL, &px, &py, &pp), fn);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_pool2d(e->s, &px, &py, NULL), fn);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_pool2d(e->s, NULL, &py, &pp), fn);
    q = pp, q.mode = (gaio_pool_mode)5;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_pool2d(e->s, &px, &py, &q), fn);
    q = pp, q.kernel[1] = 0;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_pool2d(e->s, &px, &py, &q), fn);
    q = pp, q.stride[0] = 0;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_pool2d(e->s, &px, &py, &q), fn);
    q = pp, q.pad[2] = -1;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_pool2d(e->s, &px, &py, &q), fn);
    q = pp, q.dilation[0] = -1;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_pool2d(e->s, &px, &py, &q), fn);
    q = pp, q.pad[2] = 2; /* y would be 5x4 */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_pool2d(e->s, &px, &py, &q), fn);
    q = pp, q.kernel[0] = 11; /* larger than the padded plane */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_pool2d(e->s, &px, &py, &q), fn);
    q = pp, q.kernel[0] = q.kernel[1] = 1, q.pad[0] = q.pad[1] = 1, q.pad[2] = q.pad[3] = 0;
    gaio_tensor py5 = gaio_tensor_make(buf, 6144, F32, 4, (int64_t[]){2, 3, 5, 5}, GAIO_TENSOR_ROW_MAJOR);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_pool2d(e->s, &px, &py5, &q), fn); /* y[.., 0, 0]'s window is all padding */
    q.pad[0] = 0, py5.shape[2] = 4;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_pool2d(e->s, &px, &py5, &q), fn); /* only the first column's is */
    q.pad[1] = 0, py5.shape[3] = 4;
    OK(gaio_pool2d(e->s, &px, &py5, &q));
    t = py, t.shape[1] = 4;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_pool2d(e->s, &px, &t, &pp), fn);
    t = py, t.shape[3] = 3;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_pool2d(e->s, &px, &t, &pp), fn);
    t = py, t.dtype = F16;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_pool2d(e->s, &px, &t, &pp), fn);
    t = px, t.ndim = 3;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_pool2d(e->s, &t, &py, &pp), fn);
    t = py, t.offset = 1024; /* overlaps x */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_pool2d(e->s, &px, &t, &pp), fn);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_pool2d(e->s, &px, &px, &pp), fn);

    fn = "gaio_global_avg_pool";
    gaio_tensor gy = gaio_tensor_make(buf, 4096, F32, 4, (int64_t[]){2, 3, 1, 1}, GAIO_TENSOR_ROW_MAJOR);
    gaio_tensor gy2 = gaio_tensor_make(buf, 4096, F32, 2, (int64_t[]){2, 3}, GAIO_TENSOR_ROW_MAJOR);
    OK(gaio_global_avg_pool(e->s, &px, &gy));
    OK(gaio_global_avg_pool(e->s, &px, &gy2));
    FAILS(GAIO_ERR_INVALID_ARG, gaio_global_avg_pool(NULL, &px, &gy), fn);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_global_avg_pool(e->s, &px, NULL), fn);
    t = gy, t.shape[2] = 2;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_global_avg_pool(e->s, &px, &t), fn);
    t = gy2, t.shape[1] = 4;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_global_avg_pool(e->s, &px, &t), fn);
    t = gy, t.ndim = 3;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_global_avg_pool(e->s, &px, &t), fn);
    t = gy, t.dtype = F16;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_global_avg_pool(e->s, &px, &t), fn);
    t = gy, t.offset = 512;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_global_avg_pool(e->s, &px, &t), fn);
    t = gy2, t.strides[0] = 1, t.strides[1] = 1; /* elements share memory */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_global_avg_pool(e->s, &px, &t), fn);
    t = px, t.ndim = 5, t.shape[4] = 1;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_global_avg_pool(e->s, &t, &gy), fn);

    OK(gaio_stream_synchronize(e->s)); /* nothing bad was enqueued */
    OK(gaio_buffer_release(host));
    OK(gaio_buffer_release(buf));
}

static void run_all(env *e) {
    test_softmax(e);
    test_pool(e);
    test_gap(e);
}

static void run(int device) {
    env e = {0};
    gaio_device_props props;
    OK(gaio_device_get_props(device, &props));
    e.cuda = props.kind == GAIO_DEVICE_CUDA;
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
