/* gaio_preprocess and gaio_preprocess_varshape against OpenCV
 * (tests/image/golden_preprocess.py: cv2.resize of each ROI in float32, swap,
 * (v * scale - mean) / std in float64): LINEAR and AREA (box when shrinking, OpenCV's
 * area-mode bilinear when enlarging), 3 and 4 channels, swap on and off, F32 and F16,
 * CHW and HWC, ROIs, odd sizes, mixed-size batches; every other case over padded
 * memory (odd row pitches, plane and image padding). Then a batch larger than one
 * launch's table, bad input (nothing enqueued), and on a GPU run the CUDA results
 * against the CPU backend's on fresh random inputs (ROI views, padding, big frames).
 *
 * Tolerances: f32 within 1e-4 of the value plus 1e-4 absolute (OpenCV sums in
 * another order, with FMA in its SIMD paths, and its releases differ from each
 * other by ~1e-5 in places; the outputs are O(1)); f16 within one f16 ulp of the f32
 * reference rounded to f16, or within the f32 tolerance (near zero, where
 * v * scale / std - mean / std cancels, the f32 result is good to ~1e-6 absolute:
 * many f16 ulps of a tiny value). CUDA against CPU: f32 1e-5 relative plus 1e-6
 * absolute, f16 one ulp or the same (both backends do the same float operations in
 * the same order, so they agree to the bit in practice). */
#include "common.h"
#include "image/image_test.h"

#include "image/kimg.h" /* GAIO_KTABLE_MAX: images per launch */

/* ---- images with any strides ------------------------------------------------ */

static const tgeom PACKED = {0, 0, 0, 0, "packed"};
/* odd row padding: u8 sources lose 4-byte alignment from row to row */
static const tgeom SRC_PADDED = {5, 7, 0, 3, "src padded"};
static const tgeom DST_PADDED = {64, 12, 8, 20, "dst padded"};

/* ---- comparisons ------------------------------------------------------------- */

/* Position of an f16 on the line of representable values (-0 and +0 together). */
static int32_t f16_ord(uint16_t h) { return (h & 0x8000) ? -(int32_t)(h & 0x7fff) : (int32_t)h; }

/* Within `ulps` f16 ulps, or within the f32 tolerance: near zero the f32 value is
 * only good to a few f32 ulps of the terms it cancelled (v * a + b with |b| ~ 2),
 * many f16 ulps of a tiny value; and OpenCV releases differ among themselves by more
 * than an f16 ulp in a few pixels. */
static int expect_f16_ulps(const char *what, const uint16_t *got, const uint16_t *want, size_t n, int32_t ulps,
                           double abs_tol, double rel_tol) {
    size_t bad = 0, first = 0;
    int32_t worst = 0;
    double worst_abs = 0;
    for (size_t i = 0; i < n; i++) {
        int32_t d = f16_ord(got[i]) - f16_ord(want[i]);
        d = d < 0 ? -d : d;
        int nan = (got[i] & 0x7c00) == 0x7c00 || (want[i] & 0x7c00) == 0x7c00;
        double g = tval(got, i, GAIO_DTYPE_F16), w = tval(want, i, GAIO_DTYPE_F16), ad = fabs(g - w);
        if (ad > worst_abs) worst_abs = ad;
        if ((d > ulps && ad > abs_tol + rel_tol * fabs(w)) || nan) {
            if (!bad) first = i;
            bad++;
        }
        if (d > worst) worst = d;
    }
    if (bad) {
        fprintf(stderr,
                "%s: %zu of %zu f16 values differ by more than %d ulp and the f32 tolerance (max %d ulp, |diff| %g); "
                "first at %zu: got %g, want %g\n",
                what, bad, n, (int)ulps, (int)worst, worst_abs, first, tval(got, first, GAIO_DTYPE_F16),
                tval(want, first, GAIO_DTYPE_F16));
        return 0;
    }
    printf("  %-48s ok (%zu values, max %d ulp, |diff| %g)\n", what, n, (int)worst, worst_abs);
    return 1;
}

static int expect_out(const char *what, const void *got, const void *want, size_t count, gaio_dtype dt,
                      double tol_abs, double tol_rel) {
    if (dt == GAIO_DTYPE_F16) return expect_f16_ulps(what, got, want, count, 1, tol_abs, tol_rel);
    return expect_close(what, got, want, count, dt, tol_abs, tol_rel);
}

/* ---- one call of either op over host data ------------------------------------ */

typedef struct pre_call {
    int varshape, n, c;
    const int *w, *h;              /* per image (uniform: all equal) */
    const uint8_t *const *data;    /* per image, packed H x W x C */
    const gaio_rect *rois;         /* NULL: whole images */
    gaio_preprocess_params params;
    gaio_dtype dt;
    gaio_layout layout;
    int dw, dh;
    tgeom src_geom, dst_geom;
    int view; /* uniform: pass the sources as a gaio_image_roi view of larger images */
} pre_call;

/* Runs the call on stream s and returns dst, packed (malloc'd). */
static void *run_call(gaio_stream *s, const pre_call *pc) {
    int n = pc->n, c = pc->c;
    timg dst = timg_strided(s, pc->dt, pc->layout, n, pc->dw, pc->dh, 3, pc->dst_geom, NULL);
    timg *srcs = calloc((size_t)n, sizeof *srcs);
    CHECK(srcs);
    int nsrc = pc->varshape ? n : 1;
    if (pc->varshape) {
        gaio_image *ims = calloc((size_t)n, sizeof *ims);
        CHECK(ims);
        for (int i = 0; i < n; i++) {
            srcs[i] = timg_strided(s, GAIO_DTYPE_U8, GAIO_LAYOUT_HWC, 1, pc->w[i], pc->h[i], c,
                               (i % 2) ? pc->src_geom : PACKED, pc->data[i]);
            ims[i] = srcs[i].im;
        }
        OK(gaio_preprocess_varshape(s, ims, n, pc->rois, &dst.im, &pc->params));
        free(ims);
    } else {
        int w = pc->w[0], h = pc->h[0], bw = w, bh = h, ox = 0, oy = 0;
        if (pc->view) { /* the sources inside larger frames of junk */
            ox = 3;
            oy = 2;
            bw = w + 7;
            bh = h + 5;
        }
        size_t rb = (size_t)w * c, brb = (size_t)bw * c, img = brb * bh;
        uint8_t *all = malloc(img * n);
        CHECK(all);
        uint64_t junk = 12345;
        trand_fill(all, img * n, GAIO_DTYPE_U8, &junk, 0, 0);
        for (int i = 0; i < n; i++)
            for (int y = 0; y < h; y++)
                memcpy(all + i * img + (size_t)(y + oy) * brb + (size_t)ox * c, pc->data[i] + (size_t)y * rb, rb);
        srcs[0] = timg_strided(s, GAIO_DTYPE_U8, GAIO_LAYOUT_HWC, n, bw, bh, c, pc->src_geom, all);
        free(all);
        gaio_image src = srcs[0].im;
        if (pc->view) OK(gaio_image_roi(&srcs[0].im, (gaio_rect){ox, oy, w, h}, &src));
        OK(gaio_preprocess(s, &src, pc->rois, &dst.im, &pc->params));
    }
    void *out = tmalloc(timg_elems(&dst.im) * gaio_dtype_size(dst.im.dtype));
    timg_get(s, &dst, out);
    for (int i = 0; i < nsrc; i++) timg_free(&srcs[i]);
    free(srcs);
    timg_free(&dst);
    return out;
}

/* ---- golden cases ------------------------------------------------------------ */

typedef struct loaded {
    char name[128];
    npy_array a;
} loaded;

static npy_array *load_cached(loaded *cache, int *ncache, const char *name) {
    for (int i = 0; i < *ncache; i++)
        if (!strcmp(cache[i].name, name)) return &cache[i].a;
    CHECK(*ncache < 64);
    loaded *l = &cache[(*ncache)++];
    snprintf(l->name, sizeof l->name, "%s", name);
    l->a = npy_load(name);
    CHECK(l->a.dtype == GAIO_DTYPE_U8 && l->a.ndim == 4);
    return &l->a;
}

static void golden(gaio_stream *s) {
    if (!golden_available("test_preprocess")) return; /* no OpenCV 4.6 here: the other checks still run */
    char path[1024];
    snprintf(path, sizeof path, "%s/manifest.txt", golden_dir());
    FILE *f = fopen(path, "r");
    CHECK(f);
    loaded *cache = calloc(64, sizeof *cache);
    CHECK(cache);
    int ncache = 0, ncase = 0;
    char tok[64];
    while (fscanf(f, "%63s", tok) == 1) {
        CHECK(!strcmp(tok, "case"));
        char name[96], kind[4], interp[16], dts[8], lays[8], wantf[128];
        int swap, dw, dh, n, use_rois;
        float scale, mean[3], stdv[3];
        CHECK(fscanf(f, "%95s %3s %15s %d %f %f %f %f %f %f %f %7s %7s %d %d %d %d %127s", name, kind, interp, &swap,
                     &scale, &mean[0], &mean[1], &mean[2], &stdv[0], &stdv[1], &stdv[2], dts, lays, &dw, &dh, &n,
                     &use_rois, wantf) == 18);
        CHECK(n >= 1 && n <= 64);
        int w[64], h[64];
        const uint8_t *data[64];
        gaio_rect rois[64];
        int c = 0;
        for (int i = 0; i < n; i++) {
            char file[128];
            int index;
            CHECK(fscanf(f, "%63s %127s %d %d %d %d %d", tok, file, &index, &rois[i].x, &rois[i].y, &rois[i].width,
                         &rois[i].height) == 7 &&
                  !strcmp(tok, "img"));
            npy_array *a = load_cached(cache, &ncache, file);
            CHECK(index < a->shape[0]);
            h[i] = (int)a->shape[1];
            w[i] = (int)a->shape[2];
            c = (int)a->shape[3];
            data[i] = (const uint8_t *)a->data + (size_t)index * h[i] * w[i] * c;
        }
        pre_call pc = {0};
        pc.varshape = kind[0] == 'v';
        pc.n = n;
        pc.c = c;
        pc.w = w;
        pc.h = h;
        pc.data = data;
        pc.rois = use_rois ? rois : NULL;
        pc.params.interp = !strcmp(interp, "area") ? GAIO_INTERP_AREA : GAIO_INTERP_LINEAR;
        pc.params.swap_rb = swap;
        pc.params.scale = scale;
        for (int k = 0; k < 3; k++) {
            pc.params.mean[k] = mean[k];
            pc.params.std[k] = stdv[k];
        }
        pc.params.mean[3] = NAN; /* never read: dst has 3 channels */
        pc.params.std[3] = 0;
        pc.dt = !strcmp(dts, "f16") ? GAIO_DTYPE_F16 : GAIO_DTYPE_F32;
        pc.layout = !strcmp(lays, "hwc") ? GAIO_LAYOUT_HWC : GAIO_LAYOUT_CHW;
        pc.dw = dw;
        pc.dh = dh;
        int padded = ncase % 2;
        pc.src_geom = padded ? SRC_PADDED : PACKED;
        pc.dst_geom = padded ? DST_PADDED : PACKED;
        pc.view = !pc.varshape && ncase % 3 == 2;
        npy_array want = npy_load(wantf);
        CHECK(want.dtype == pc.dt && want.count == (size_t)n * 3 * dw * dh);
        void *got = run_call(s, &pc);
        char what[160];
        snprintf(what, sizeof what, "%s%s%s", name, padded ? " (padded)" : "", pc.view ? " (view)" : "");
        CHECK(expect_out(what, got, want.data, want.count, pc.dt, 1e-4, 1e-4));
        free(got);
        npy_free(&want);
        ncase++;
    }
    fclose(f);
    for (int i = 0; i < ncache; i++) npy_free(&cache[i].a);
    free(cache);
    CHECK(ncase >= 10);
}

/* ---- random inputs ------------------------------------------------------------ */

static uint8_t *rand_image(uint64_t *rng, int w, int h, int c) {
    return trand_new(GAIO_DTYPE_U8, (size_t)w * h * c, rng, 0, 0);
}

static gaio_preprocess_params rand_params(uint64_t *rng, gaio_interp interp) {
    gaio_preprocess_params p = {interp, (int32_t)(test_rand(rng) & 1), 1.0f / 255, {0}, {0}};
    for (int c = 0; c < 3; c++) {
        p.mean[c] = 0.3f + 0.1f * (float)c + (float)(test_rand(rng) % 100) / 1000.0f;
        p.std[c] = 0.2f + (float)(test_rand(rng) % 100) / 1000.0f;
    }
    return p;
}

/* A batch bigger than one launch's table: every image lands in its own dst slot. */
static void many_images(gaio_stream *s, uint64_t *rng) {
    const int n = GAIO_KTABLE_MAX + 44, c = 3;
    int *w = malloc(n * sizeof *w), *h = malloc(n * sizeof *h);
    uint8_t **data = malloc(n * sizeof *data);
    gaio_rect *rois = malloc(n * sizeof *rois);
    CHECK(w && h && data && rois);
    for (int i = 0; i < n; i++) {
        w[i] = 2 + i % 5;
        h[i] = 3 + i % 4;
        data[i] = rand_image(rng, w[i], h[i], c);
        rois[i] = (gaio_rect){i % 2, 0, w[i] - i % 2, h[i]};
    }
    pre_call pc = {0};
    pc.varshape = 1;
    pc.n = n;
    pc.c = c;
    pc.w = w;
    pc.h = h;
    pc.data = (const uint8_t *const *)data;
    pc.rois = rois;
    pc.params = rand_params(rng, GAIO_INTERP_LINEAR);
    pc.dt = GAIO_DTYPE_F32;
    pc.layout = GAIO_LAYOUT_CHW;
    pc.dw = 2;
    pc.dh = 2;
    pc.src_geom = pc.dst_geom = PACKED;
    float *got = run_call(s, &pc);
    /* Image i, output (0, 0) and (1, 1) are the ROI's corners: bilinear 2x2 from a
     * ROI of 1..6 pixels per side samples inside it, so check every value is a
     * plausible normalised u8 and that images differ (no slot written twice). */
    int differ = 0;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < 12; k++) {
            float v = got[(size_t)i * 12 + k], lo = (0 - 1.0f) / 0.2f, hi = (1 - 0.0f) / 0.2f;
            CHECK(v == v && v >= lo && v <= hi);
            if (i && v != got[(size_t)(i - 1) * 12 + k]) differ = 1;
        }
    CHECK(differ);
    /* and against one launch per image */
    for (int i = 0; i < n; i += 37) {
        pre_call one = pc;
        one.n = 1;
        one.w = &w[i];
        one.h = &h[i];
        one.data = (const uint8_t *const *)&data[i];
        one.rois = &rois[i];
        float *alone = run_call(s, &one);
        char what[64];
        snprintf(what, sizeof what, "batch of %d: image %d alone", n, i);
        CHECK(expect_close(what, got + (size_t)i * 12, alone, 12, GAIO_DTYPE_F32, 0, 0));
        free(alone);
    }
    free(got);
    for (int i = 0; i < n; i++) free(data[i]);
    free(w);
    free(h);
    free(data);
    free(rois);
}

/* CUDA against the CPU backend on fresh random inputs. */
static void cuda_vs_cpu(gaio_stream *s, gaio_stream *host_s, uint64_t *rng) {
    static const gaio_interp interps[2] = {GAIO_INTERP_LINEAR, GAIO_INTERP_AREA};
    for (int t = 0; t < 12; t++) {
        int varshape = t % 3 == 2, n = varshape ? 6 : 1 + t % 3, c = 3 + (t / 2) % 2;
        int w[8], h[8];
        uint8_t *data[8];
        gaio_rect rois[8];
        int big = t == 0 || t == 5 || t == 8; /* frames of the benchmark's size */
        int uw = big ? 1920 : 17 + (int)(test_rand(rng) % 400), uh = big ? 1080 : 9 + (int)(test_rand(rng) % 300);
        for (int i = 0; i < n; i++) {
            w[i] = varshape ? 1 + (int)(test_rand(rng) % (i == 3 ? 1300 : 500)) : uw;
            h[i] = varshape ? 1 + (int)(test_rand(rng) % (i == 3 ? 900 : 400)) : uh;
            if (varshape && i == 0) w[i] = 640, h[i] = 480;
            data[i] = rand_image(rng, w[i], h[i], c);
            int rx = (int)(test_rand(rng) % (uint64_t)(w[i] / 4 + 1)), ry = (int)(test_rand(rng) % (uint64_t)(h[i] / 4 + 1));
            rois[i] = (gaio_rect){rx, ry, w[i] - rx - (int)(test_rand(rng) % (uint64_t)(w[i] / 4 + 1)),
                                  h[i] - ry - (int)(test_rand(rng) % (uint64_t)(h[i] / 4 + 1))};
            if (rois[i].width < 1) rois[i].width = 1;
            if (rois[i].height < 1) rois[i].height = 1;
        }
        pre_call pc = {0};
        pc.varshape = varshape;
        pc.n = n;
        pc.c = c;
        pc.w = w;
        pc.h = h;
        pc.data = (const uint8_t *const *)data;
        pc.rois = t % 4 == 1 ? NULL : rois;
        pc.params = rand_params(rng, interps[t % 2]);
        pc.dt = t % 4 == 3 ? GAIO_DTYPE_F16 : GAIO_DTYPE_F32;
        pc.layout = (t / 4) % 2 ? GAIO_LAYOUT_HWC : GAIO_LAYOUT_CHW;
        pc.dw = big ? 224 : 1 + (int)(test_rand(rng) % 300);
        pc.dh = big ? 224 : 1 + (int)(test_rand(rng) % 200);
        pc.src_geom = t % 2 ? SRC_PADDED : PACKED;
        pc.dst_geom = t % 2 ? PACKED : DST_PADDED;
        pc.view = !varshape && t % 4 == 0;
        /* AREA shrinks by at most 63 per axis */
        if (pc.params.interp == GAIO_INTERP_AREA) {
            if (pc.dw * 60 < 1300) pc.dw = 1300 / 60 + 1;
            if (pc.dh * 60 < 900) pc.dh = 900 / 60 + 1;
        }
        void *g = run_call(s, &pc), *cpu = run_call(host_s, &pc);
        char what[160];
        snprintf(what, sizeof what, "CUDA vs CPU: %s %s %d x %dx%dx%d -> %dx%d %s %s%s", varshape ? "varshape" : "uniform",
                 pc.params.interp == GAIO_INTERP_AREA ? "AREA" : "LINEAR", n, w[0], h[0], c, pc.dw, pc.dh,
                 pc.dt == GAIO_DTYPE_F16 ? "f16" : "f32", pc.layout == GAIO_LAYOUT_HWC ? "HWC" : "CHW",
                 pc.view ? " view" : "");
        CHECK(expect_out(what, g, cpu, (size_t)n * 3 * pc.dw * pc.dh, pc.dt, 1e-6, 1e-5));
        free(g);
        free(cpu);
        for (int i = 0; i < n; i++) free(data[i]);
    }
}

/* ---- bad input ----------------------------------------------------------------- */

/* fn: the function under test, a variable of bad_input */
#define EXPECT_FAIL(st, call, arg) EXPECT_REFUSED(st, call, fn, arg)

static void bad_input(gaio_stream *s, gaio_stream *host_s) {
    gaio_context *ctx;
    OK(gaio_stream_context(s, &ctx));
    timg src = timg_new(s, GAIO_DTYPE_U8, GAIO_LAYOUT_HWC, 2, 64, 48, 3);
    timg dst = timg_new(s, GAIO_DTYPE_F32, GAIO_LAYOUT_CHW, 2, 32, 24, 3);
    timg tiny = timg_new(s, GAIO_DTYPE_F32, GAIO_LAYOUT_CHW, 2, 1, 1, 3);
    gaio_preprocess_params p = {GAIO_INTERP_LINEAR, 0, 1.0f / 255, {0.5f, 0.5f, 0.5f, 0}, {0.25f, 0.25f, 0.25f, 0}};
    gaio_preprocess_params q;
    gaio_rect rois[2] = {{0, 0, 64, 48}, {10, 10, 20, 20}}, r2[2];
    gaio_image im;
    OK(gaio_preprocess(s, &src.im, rois, &dst.im, &p)); /* the baseline is valid */
    OK(gaio_stream_synchronize(s));
    OK(gaio_memset_async(s, dst.im.buffer, 0, 0xCD, dst.bytes)); /* poison again */

    const char *fn = "gaio_preprocess";
    EXPECT_FAIL(GAIO_ERR_INVALID_ARG, gaio_preprocess(NULL, &src.im, rois, &dst.im, &p), "stream");
    EXPECT_FAIL(GAIO_ERR_INVALID_ARG, gaio_preprocess(s, NULL, rois, &dst.im, &p), "src");
    EXPECT_FAIL(GAIO_ERR_INVALID_ARG, gaio_preprocess(s, &src.im, rois, NULL, &p), "dst");
    EXPECT_FAIL(GAIO_ERR_INVALID_ARG, gaio_preprocess(s, &src.im, rois, &dst.im, NULL), "params");
    q = p, q.interp = GAIO_INTERP_NEAREST;
    EXPECT_FAIL(GAIO_ERR_NOT_SUPPORTED, gaio_preprocess(s, &src.im, rois, &dst.im, &q), "interp");
    q = p, q.interp = GAIO_INTERP_CUBIC;
    EXPECT_FAIL(GAIO_ERR_NOT_SUPPORTED, gaio_preprocess(s, &src.im, rois, &dst.im, &q), "interp");
    q = p, q.interp = (gaio_interp)42;
    EXPECT_FAIL(GAIO_ERR_INVALID_ARG, gaio_preprocess(s, &src.im, rois, &dst.im, &q), "interp");
    q = p, q.std[1] = 0;
    EXPECT_FAIL(GAIO_ERR_INVALID_ARG, gaio_preprocess(s, &src.im, rois, &dst.im, &q), "std[1]");
    q = p, q.std[2] = NAN;
    EXPECT_FAIL(GAIO_ERR_INVALID_ARG, gaio_preprocess(s, &src.im, rois, &dst.im, &q), "std[2]");
    q = p, q.std[0] = 1e-40f, q.scale = 1e3f;
    EXPECT_FAIL(GAIO_ERR_INVALID_ARG, gaio_preprocess(s, &src.im, rois, &dst.im, &q), "std[0]");
    q = p, q.mean[0] = INFINITY;
    EXPECT_FAIL(GAIO_ERR_INVALID_ARG, gaio_preprocess(s, &src.im, rois, &dst.im, &q), "mean[0]");
    q = p, q.scale = NAN;
    EXPECT_FAIL(GAIO_ERR_INVALID_ARG, gaio_preprocess(s, &src.im, rois, &dst.im, &q), "scale");
    im = src.im, im.dtype = GAIO_DTYPE_U16, im.width = 16;
    EXPECT_FAIL(GAIO_ERR_INVALID_ARG, gaio_preprocess(s, &im, NULL, &dst.im, &p), "src");
    im = src.im, im.layout = GAIO_LAYOUT_CHW;
    EXPECT_FAIL(GAIO_ERR_INVALID_ARG, gaio_preprocess(s, &im, NULL, &dst.im, &p), "src");
    im = src.im, im.channels = 1;
    EXPECT_FAIL(GAIO_ERR_INVALID_ARG, gaio_preprocess(s, &im, NULL, &dst.im, &p), "src");
    im = src.im, im.layout = GAIO_LAYOUT_NV12;
    EXPECT_FAIL(GAIO_ERR_INVALID_ARG, gaio_preprocess(s, &im, NULL, &dst.im, &p), "src");
    im = src.im, im.height = 49; /* the buffer is too small */
    EXPECT_FAIL(GAIO_ERR_INVALID_ARG, gaio_preprocess(s, &im, NULL, &dst.im, &p), "src");
    im = dst.im, im.dtype = GAIO_DTYPE_U8;
    EXPECT_FAIL(GAIO_ERR_INVALID_ARG, gaio_preprocess(s, &src.im, NULL, &im, &p), "dst");
    im = dst.im, im.dtype = GAIO_DTYPE_F16, im.channels = 4;
    EXPECT_FAIL(GAIO_ERR_INVALID_ARG, gaio_preprocess(s, &src.im, NULL, &im, &p), "dst");
    im = dst.im, im.batch = 1;
    EXPECT_FAIL(GAIO_ERR_INVALID_ARG, gaio_preprocess(s, &src.im, NULL, &im, &p), "batch");
    im = dst.im, im.width = 33; /* the buffer is too small */
    EXPECT_FAIL(GAIO_ERR_INVALID_ARG, gaio_preprocess(s, &src.im, NULL, &im, &p), "dst");
    r2[0] = rois[0], r2[1] = (gaio_rect){50, 10, 20, 20};
    EXPECT_FAIL(GAIO_ERR_INVALID_ARG, gaio_preprocess(s, &src.im, r2, &dst.im, &p), "rois[1]");
    r2[0] = (gaio_rect){0, 0, 0, 5}, r2[1] = rois[1];
    EXPECT_FAIL(GAIO_ERR_INVALID_ARG, gaio_preprocess(s, &src.im, r2, &dst.im, &p), "rois[0]");
    im = gaio_image_make(src.im.buffer, 0, GAIO_DTYPE_F32, GAIO_LAYOUT_CHW, 2, 8, 8, 3);
    EXPECT_FAIL(GAIO_ERR_INVALID_ARG, gaio_preprocess(s, &src.im, NULL, &im, &p), "overlap");
    q = p, q.interp = GAIO_INTERP_AREA; /* 64 -> 1 shrinks by more than 63 */
    EXPECT_FAIL(GAIO_ERR_NOT_SUPPORTED, gaio_preprocess(s, &src.im, rois, &tiny.im, &q), "rois[0]");
    {
        gaio_buffer *hb;
        OK(gaio_buffer_alloc(ctx, GAIO_MEM_HOST, src.bytes, &hb));
        im = src.im, im.buffer = hb;
        EXPECT_FAIL(GAIO_ERR_INVALID_ARG, gaio_preprocess(s, &im, NULL, &dst.im, &p), "src");
        OK(gaio_buffer_release(hb));
    }
    if (host_s) { /* a buffer of another device */
        gaio_buffer *ob;
        OK(gaio_buffer_alloc_async(host_s, GAIO_MEM_DEVICE, src.bytes, &ob));
        OK(gaio_stream_synchronize(host_s));
        im = src.im, im.buffer = ob;
        EXPECT_FAIL(GAIO_ERR_INVALID_ARG, gaio_preprocess(s, &im, NULL, &dst.im, &p), "src");
        OK(gaio_buffer_release(ob));
    }

    fn = "gaio_preprocess_varshape";
    gaio_image srcs[2];
    OK(gaio_image_at(&src.im, 0, &srcs[0]));
    OK(gaio_image_at(&src.im, 1, &srcs[1]));
    OK(gaio_preprocess_varshape(s, srcs, 2, rois, &dst.im, &p)); /* valid */
    OK(gaio_stream_synchronize(s));
    OK(gaio_memset_async(s, dst.im.buffer, 0, 0xCD, dst.bytes));
    gaio_image bad[2];
    EXPECT_FAIL(GAIO_ERR_INVALID_ARG, gaio_preprocess_varshape(NULL, srcs, 2, rois, &dst.im, &p), "stream");
    EXPECT_FAIL(GAIO_ERR_INVALID_ARG, gaio_preprocess_varshape(s, NULL, 2, rois, &dst.im, &p), "srcs");
    EXPECT_FAIL(GAIO_ERR_INVALID_ARG, gaio_preprocess_varshape(s, srcs, 0, rois, &dst.im, &p), "count");
    EXPECT_FAIL(GAIO_ERR_INVALID_ARG, gaio_preprocess_varshape(s, srcs, 1, rois, &dst.im, &p), "count");
    EXPECT_FAIL(GAIO_ERR_INVALID_ARG, gaio_preprocess_varshape(s, srcs, 2, rois, NULL, &p), "dst");
    EXPECT_FAIL(GAIO_ERR_INVALID_ARG, gaio_preprocess_varshape(s, srcs, 2, rois, &dst.im, NULL), "params");
    bad[0] = srcs[0], bad[1] = srcs[1], bad[1].dtype = GAIO_DTYPE_F16, bad[1].width = 8;
    EXPECT_FAIL(GAIO_ERR_INVALID_ARG, gaio_preprocess_varshape(s, bad, 2, NULL, &dst.im, &p), "srcs[1]");
    bad[0] = srcs[0], bad[1] = srcs[1], bad[1].channels = 4, bad[1].width = 32;
    EXPECT_FAIL(GAIO_ERR_INVALID_ARG, gaio_preprocess_varshape(s, bad, 2, NULL, &dst.im, &p), "srcs[1]");
    bad[0] = src.im, bad[1] = srcs[1]; /* a batch of 2 as one image */
    EXPECT_FAIL(GAIO_ERR_INVALID_ARG, gaio_preprocess_varshape(s, bad, 2, NULL, &dst.im, &p), "srcs[0]");
    bad[0] = srcs[0], bad[1] = gaio_image_make(dst.im.buffer, 0, GAIO_DTYPE_U8, GAIO_LAYOUT_HWC, 1, 8, 8, 3);
    EXPECT_FAIL(GAIO_ERR_INVALID_ARG, gaio_preprocess_varshape(s, bad, 2, NULL, &dst.im, &p), "srcs[1]");
    r2[0] = rois[0], r2[1] = (gaio_rect){0, 40, 10, 10};
    EXPECT_FAIL(GAIO_ERR_INVALID_ARG, gaio_preprocess_varshape(s, srcs, 2, r2, &dst.im, &p), "rois[1]");
    q = p, q.std[0] = -INFINITY;
    EXPECT_FAIL(GAIO_ERR_INVALID_ARG, gaio_preprocess_varshape(s, srcs, 2, rois, &dst.im, &q), "std[0]");
    q = p, q.interp = GAIO_INTERP_AREA;
    EXPECT_FAIL(GAIO_ERR_NOT_SUPPORTED, gaio_preprocess_varshape(s, srcs, 2, NULL, &tiny.im, &q), "srcs[0]");

    /* nothing was enqueued: dst still holds its poison */
    timg_expect_poison(s, &dst);
    printf("  %-48s ok\n", "bad input refused, nothing enqueued");
    timg_free(&src);
    timg_free(&dst);
    timg_free(&tiny);
}

static void run(int device) {
    tctx t = tctx_open(device);
    uint64_t rng = test_seed();
    golden(t.s);
    many_images(t.s, &rng);
    if (t.host_s) cuda_vs_cpu(t.s, t.host_s, &rng);
    bad_input(t.s, t.host_s);
    tctx_close(&t);
}
