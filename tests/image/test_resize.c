/* gaio_resize, gaio_crop_resize, gaio_crop_resize_varshape against OpenCV's
 * cv2.resize (tests/image/golden_resize.py): every interpolation, u8 / u16 / f32,
 * 1 to 4 channels, CHW, batches, ROIs, mixed-size batches, up and down. Then the
 * same ops over non-packed memory (row, plane and image padding, offsets, ROI
 * views), a batch larger than one launch's table, and bad input. On a GPU run the
 * CUDA results are compared with the CPU backend's on fresh random inputs.
 *
 * Tolerances: nearest modes exact; u8 and u16 within 1 (OpenCV rounds its fixed
 * point and SIMD paths differently in places); f32 within 1e-5 relative to the
 * value plus 1e-5 absolute (inputs in [-1, 1)): OpenCV sums in another order (the
 * largest differences seen: 2.4e-7 on the CPU, 2.3e-6 with CUDA's fused
 * multiply-adds, cubic). CUDA against CPU: u8 / u16 within 1 (u8 LINEAR and CUBIC
 * come out identical: the same fixed point), f32 1e-5 relative plus 1e-5 absolute. */
#include "common.h"
#include "image/image_test.h"

#include "image/kimg.h" /* GAIO_KTABLE_MAX: images per launch */

/* ---- images with any strides ------------------------------------------------ */

static const tgeom PACKED = {0, 0, 0, 0, "packed"};
static const tgeom PADDED = {64, 12, 8, 20, "padded"};

static const char *INTERP_NAMES[] = {"nearest", "nearest_exact", "linear", "cubic", "area"};

/* Tolerance (abs, rel) for an interpolation and dtype: against OpenCV and CUDA
 * against the CPU alike. */
static void tol(int interp, gaio_dtype dt, double *abs_tol, double *rel_tol) {
    *abs_tol = *rel_tol = 0;
    if (interp <= 1) return;
    if (dt == GAIO_DTYPE_F32) *abs_tol = *rel_tol = 1e-5;
    else *abs_tol = 1;
}

/* ---- golden cases -------------------------------------------------------------- */

/* (N, H, W, C) of an HWC array: (H,W) -> one gray image, (H,W,C), (N,H,W,C). */
static void hwc_shape(const npy_array *a, int *n, int *h, int *w, int *c) {
    *n = 1;
    *c = 1;
    if (a->ndim == 2) {
        *h = (int)a->shape[0];
        *w = (int)a->shape[1];
    } else if (a->ndim == 3) {
        *h = (int)a->shape[0];
        *w = (int)a->shape[1];
        *c = (int)a->shape[2];
    } else {
        CHECK(a->ndim == 4);
        *n = (int)a->shape[0];
        *h = (int)a->shape[1];
        *w = (int)a->shape[2];
        *c = (int)a->shape[3];
    }
}

/* (N, C, H, W) of a CHW array. */
static void chw_shape(const npy_array *a, int *n, int *h, int *w, int *c) {
    CHECK(a->ndim == 3 || a->ndim == 4);
    int o = a->ndim - 3;
    *n = o ? (int)a->shape[0] : 1;
    *c = (int)a->shape[o];
    *h = (int)a->shape[o + 1];
    *w = (int)a->shape[o + 2];
}

static int compare(const char *what, const void *got, const npy_array *want, int interp) {
    double at, rt;
    tol(interp, want->dtype, &at, &rt);
    return expect_close(what, got, want->data, want->count, want->dtype, at, rt);
}

/* out against a golden array. */
static int compare_img(gaio_stream *s, const timg *out, const char *what, const npy_array *want, int interp) {
    double at, rt;
    tol(interp, want->dtype, &at, &rt);
    return timg_expect_close(s, out, what, want, at, rt);
}

static int golden_resize(gaio_stream *s, int interp, const char *sname, const char *wname, int chw, tgeom g,
                         const char *what) {
    npy_array src = npy_load(sname), want = npy_load(wname);
    int n, h, w, c, wn, wh, ww, wc;
    gaio_layout lay = chw ? GAIO_LAYOUT_CHW : GAIO_LAYOUT_HWC;
    if (chw) {
        chw_shape(&src, &n, &h, &w, &c);
        chw_shape(&want, &wn, &wh, &ww, &wc);
    } else {
        hwc_shape(&src, &n, &h, &w, &c);
        hwc_shape(&want, &wn, &wh, &ww, &wc);
    }
    CHECK(wn == n && wc == c);
    timg in = timg_strided(s, src.dtype, lay, n, w, h, c, g, src.data);
    timg out = timg_strided(s, src.dtype, lay, n, ww, wh, c, g, NULL);
    if (interp == GAIO_INTERP_AREA && ww <= w && wh <= h && (w > 63 * ww || h > 63 * wh)) {
        /* a box of more than GAIO_RS_MAX_BOX taps: refused */
        FAILS(GAIO_ERR_NOT_SUPPORTED, gaio_resize(s, &in.im, &out.im, (gaio_interp)interp), "gaio_resize");
        printf("  %-48s refused as documented\n", what);
        timg_free(&in);
        timg_free(&out);
        npy_free(&src);
        npy_free(&want);
        return 1;
    }
    OK(gaio_resize(s, &in.im, &out.im, (gaio_interp)interp));
    int ok = compare_img(s, &out, what, &want, interp);
    timg_free(&in);
    timg_free(&out);
    npy_free(&src);
    npy_free(&want);
    return ok;
}

static int golden_crop(gaio_stream *s, int interp, const char *sname, const char *wname, int count,
                       const gaio_rect *rois, tgeom g, const char *what) {
    npy_array src = npy_load(sname), want = npy_load(wname);
    int n, h, w, c, wn, wh, ww, wc;
    hwc_shape(&src, &n, &h, &w, &c);
    hwc_shape(&want, &wn, &wh, &ww, &wc);
    CHECK(n == count && wn == n && wc == c);
    timg in = timg_strided(s, src.dtype, GAIO_LAYOUT_HWC, n, w, h, c, g, src.data);
    timg out = timg_strided(s, src.dtype, GAIO_LAYOUT_HWC, n, ww, wh, c, g, NULL);
    OK(gaio_crop_resize(s, &in.im, rois, &out.im, (gaio_interp)interp));
    int ok = compare_img(s, &out, what, &want, interp);
    timg_free(&in);
    timg_free(&out);
    npy_free(&src);
    npy_free(&want);
    return ok;
}

#define MAX_VAR 16

static int golden_varshape(gaio_stream *s, int interp, const char *wname, int count, char names[][64],
                           const gaio_rect *rois, int has_roi, tgeom g, const char *what) {
    npy_array want = npy_load(wname);
    int wn, wh, ww, wc;
    hwc_shape(&want, &wn, &wh, &ww, &wc);
    CHECK(wn == count && count <= MAX_VAR);
    timg in[MAX_VAR];
    gaio_image ims[MAX_VAR];
    for (int i = 0; i < count; i++) {
        npy_array a = npy_load(names[i]);
        int n, h, w, c;
        hwc_shape(&a, &n, &h, &w, &c);
        CHECK(n == 1 && c == wc && a.dtype == want.dtype);
        in[i] = timg_strided(s, a.dtype, GAIO_LAYOUT_HWC, 1, w, h, c, g, a.data);
        ims[i] = in[i].im;
        npy_free(&a);
    }
    timg out = timg_strided(s, want.dtype, GAIO_LAYOUT_HWC, count, ww, wh, wc, g, NULL);
    OK(gaio_crop_resize_varshape(s, ims, count, has_roi ? rois : NULL, &out.im, (gaio_interp)interp));
    int ok = compare_img(s, &out, what, &want, interp);
    for (int i = 0; i < count; i++) timg_free(&in[i]);
    timg_free(&out);
    npy_free(&want);
    return ok;
}

static void golden(gaio_stream *s) {
    if (!golden_available("test_resize")) return; /* no OpenCV 4.6 here: the other checks still run */
    char path[1024];
    snprintf(path, sizeof path, "%s/cases.txt", golden_dir());
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "cannot open %s (golden_resize.py writes it)\n", path);
        exit(1);
    }
    char line[4096];
    int cases = 0, failed = 0;
    while (fgets(line, sizeof line, f)) {
        char kind[16], a[64], b[64];
        int interp, used = 0;
        if (sscanf(line, "%15s %d %n", kind, &interp, &used) != 2) continue;
        CHECK(interp >= 0 && interp <= 4);
        const char *rest = line + used;
        /* every fourth case again over padded memory */
        for (int pass = 0; pass < 1 + (cases % 4 == 0); pass++) {
            tgeom g = pass ? PADDED : PACKED;
            char what[160];
            int ok;
            if (!strcmp(kind, "resize") || !strcmp(kind, "chw")) {
                CHECK(sscanf(rest, "%63s %63s", a, b) == 2);
                snprintf(what, sizeof what, "%s %s %s -> %s (%s)", kind, INTERP_NAMES[interp], a, b, g.name);
                ok = golden_resize(s, interp, a, b, kind[0] == 'c', g, what);
            } else if (!strcmp(kind, "crop")) {
                int n, k;
                CHECK(sscanf(rest, "%63s %63s %d %n", a, b, &n, &k) == 3 && n <= MAX_VAR);
                const char *p = rest + k;
                gaio_rect rois[MAX_VAR];
                for (int i = 0; i < n; i++) {
                    int m;
                    CHECK(sscanf(p, "%d %d %d %d %n", &rois[i].x, &rois[i].y, &rois[i].width, &rois[i].height,
                                 &m) == 4);
                    p += m;
                }
                snprintf(what, sizeof what, "crop %s %s -> %s (%s)", INTERP_NAMES[interp], a, b, g.name);
                ok = golden_crop(s, interp, a, b, n, rois, g, what);
            } else {
                CHECK(!strcmp(kind, "varshape"));
                int n, k;
                CHECK(sscanf(rest, "%63s %d %n", b, &n, &k) == 2 && n <= MAX_VAR);
                const char *p = rest + k;
                char names[MAX_VAR][64];
                gaio_rect rois[MAX_VAR];
                int has_roi = 0;
                for (int i = 0; i < n; i++) {
                    char x[16], y[16], w[16], h[16];
                    int m;
                    CHECK(sscanf(p, "%63s %15s %15s %15s %15s %n", names[i], x, y, w, h, &m) == 5);
                    p += m;
                    if (x[0] == '-') {
                        rois[i] = (gaio_rect){0, 0, 0, 0}; /* filled with the whole image below */
                    } else {
                        rois[i] = (gaio_rect){atoi(x), atoi(y), atoi(w), atoi(h)};
                        has_roi = 1;
                    }
                }
                if (has_roi) /* whole-image entries as explicit rois */
                    for (int i = 0; i < n; i++)
                        if (rois[i].width == 0) {
                            npy_array arr = npy_load(names[i]);
                            rois[i] = (gaio_rect){0, 0, (int)arr.shape[1], (int)arr.shape[0]};
                            npy_free(&arr);
                        }
                snprintf(what, sizeof what, "varshape %s -> %s (%s)", INTERP_NAMES[interp], b, g.name);
                ok = golden_varshape(s, interp, b, n, names, rois, has_roi, g, what);
            }
            failed += !ok;
        }
        cases++;
    }
    fclose(f);
    CHECK(cases > 0);
    if (failed) {
        fprintf(stderr, "%d golden comparisons failed\n", failed);
        exit(1);
    }
    printf("  %d golden cases agree with OpenCV\n", cases);
}

/* ---- the same op over other memory, and CUDA against the CPU ------------------ */

typedef struct side {
    gaio_stream *s;
    timg in, out;
} side;

/* Random packed data for an image of the given shape. */
static void *rand_data(gaio_dtype dt, size_t count, uint64_t *seed) { return trand_new(dt, count, seed, -1.f, 1.f); }

/* Runs resize or crop_resize (rois != NULL) of packed `data` on stream s over
 * geometry g, with the source seen through a ROI view when `view` is set, and
 * returns the packed output. */
static void *run_uniform(gaio_stream *s, gaio_dtype dt, gaio_layout lay, int n, int sw, int sh, int c, int dw,
                         int dh, const void *data, int interp, const gaio_rect *rois, tgeom g, int view) {
    timg in;
    gaio_image src;
    if (view) { /* the image sits inside a larger one at (3, 2) */
        size_t e = gaio_dtype_size(dt);
        int bw = sw + 5, bh = sh + 4;
        gaio_image big = gaio_image_make(NULL, 0, dt, lay, n, bw, bh, c);
        size_t rb = timg_row_elems(&big) * e, srb = (lay == GAIO_LAYOUT_HWC ? (size_t)sw * c : (size_t)sw) * e;
        size_t planes = lay == GAIO_LAYOUT_CHW ? (size_t)c : 1;
        size_t px = (lay == GAIO_LAYOUT_HWC ? (size_t)c : 1) * e;
        char *bigdata = calloc((size_t)n * planes * bh, rb);
        CHECK(bigdata);
        for (size_t k = 0, r = 0; k < (size_t)n * planes; k++)
            for (size_t y = 0; y < (size_t)sh; y++, r++)
                memcpy(bigdata + (k * bh + y + 2) * rb + 3 * px, (const char *)data + r * srb, srb);
        in = timg_strided(s, dt, lay, n, bw, bh, c, g, bigdata);
        free(bigdata);
        OK(gaio_image_roi(&in.im, (gaio_rect){3, 2, sw, sh}, &src));
    } else {
        in = timg_strided(s, dt, lay, n, sw, sh, c, g, data);
        src = in.im;
    }
    timg out = timg_strided(s, dt, lay, n, dw, dh, c, g, NULL);
    if (rois) OK(gaio_crop_resize(s, &src, rois, &out.im, (gaio_interp)interp));
    else OK(gaio_resize(s, &src, &out.im, (gaio_interp)interp));
    void *got = tmalloc(timg_elems(&out.im) * gaio_dtype_size(dt));
    timg_get(s, &out, got);
    timg_free(&in);
    timg_free(&out);
    return got;
}

static int sweep_one(gaio_stream *s, gaio_stream *host_s, gaio_dtype dt, gaio_layout lay, int n, int sw, int sh,
                     int c, int dw, int dh, int interp, int crop, uint64_t *seed) {
    gaio_image shape = gaio_image_make(NULL, 0, dt, lay, n, sw, sh, c);
    size_t count = timg_elems(&shape);
    void *data = rand_data(dt, count, seed);
    gaio_rect rois[8];
    for (int i = 0; i < n && crop; i++) { /* a different window of each image */
        int rw = 1 + (int)(test_rand(seed) % (uint64_t)sw), rh = 1 + (int)(test_rand(seed) % (uint64_t)sh);
        rois[i] = (gaio_rect){(int)(test_rand(seed) % (uint64_t)(sw - rw + 1)),
                              (int)(test_rand(seed) % (uint64_t)(sh - rh + 1)), rw, rh};
    }
    gaio_stream *ref_s = host_s ? host_s : s;
    void *ref = run_uniform(ref_s, dt, lay, n, sw, sh, c, dw, dh, data, interp, crop ? rois : NULL, PACKED, 0);
    npy_array want = {0};
    want.dtype = dt;
    gaio_image oshape = gaio_image_make(NULL, 0, dt, lay, n, dw, dh, c);
    want.count = timg_elems(&oshape);
    want.data = ref;
    int ok = 1;
    static const tgeom geoms[] = {{0, 0, 0, 0, "packed"}, {4, 4, 12, 8, "padded"}, {0, 0, 0, 0, "roi view"}};
    for (int gi = host_s ? 0 : 1; gi < 3; gi++) {
        void *got = run_uniform(s, dt, lay, n, sw, sh, c, dw, dh, data, interp, crop ? rois : NULL, geoms[gi],
                                gi == 2);
        char what[200];
        snprintf(what, sizeof what, "%s%s %s %s c%d x%d %dx%d -> %dx%d %s%s", host_s ? "cuda=cpu " : "",
                 crop ? "crop" : "resize", INTERP_NAMES[interp], gaio_dtype_name(dt), c, n, sw, sh, dw, dh,
                 lay == GAIO_LAYOUT_CHW ? "CHW " : "", geoms[gi].name);
        ok &= compare(what, got, &want, interp);
        free(got);
    }
    free(ref);
    free(data);
    return ok;
}

/* Mixed sizes in one launch, every source in its own buffer. */
static void *run_varshape(gaio_stream *s, gaio_dtype dt, int count, const int (*sizes)[2], int c, int dw, int dh,
                          void *const *data, const gaio_rect *rois, int interp) {
    timg in[MAX_VAR];
    gaio_image ims[MAX_VAR];
    for (int i = 0; i < count; i++) {
        in[i] = timg_strided(s, dt, GAIO_LAYOUT_HWC, 1, sizes[i][0], sizes[i][1], c, i & 1 ? PADDED : PACKED, data[i]);
        ims[i] = in[i].im;
    }
    timg out = timg_strided(s, dt, GAIO_LAYOUT_HWC, count, dw, dh, c, PACKED, NULL);
    OK(gaio_crop_resize_varshape(s, ims, count, rois, &out.im, (gaio_interp)interp));
    void *got = tmalloc(timg_elems(&out.im) * gaio_dtype_size(dt));
    timg_get(s, &out, got);
    for (int i = 0; i < count; i++) timg_free(&in[i]);
    timg_free(&out);
    return got;
}

/* A batch of more images than one table holds: the same as resizing each alone. */
static int many_images(gaio_stream *s, gaio_stream *host_s, uint64_t *seed) {
    const int n = GAIO_KTABLE_MAX + 44, sw = 7, sh = 5, dw = 3, dh = 4, c = 3;
    gaio_image shape = gaio_image_make(NULL, 0, GAIO_DTYPE_U8, GAIO_LAYOUT_HWC, n, sw, sh, c);
    void *data = rand_data(GAIO_DTYPE_U8, timg_elems(&shape), seed);
    void *got = run_uniform(s, GAIO_DTYPE_U8, GAIO_LAYOUT_HWC, n, sw, sh, c, dw, dh, data, GAIO_INTERP_LINEAR, NULL,
                            PACKED, 0);
    size_t in_img = (size_t)sw * sh * c, out_img = (size_t)dw * dh * c;
    unsigned char *want = malloc((size_t)n * out_img);
    CHECK(want);
    gaio_stream *ref_s = host_s ? host_s : s;
    for (int i = 0; i < n; i += 37) { /* a sample of them alone */
        void *one = run_uniform(ref_s, GAIO_DTYPE_U8, GAIO_LAYOUT_HWC, 1, sw, sh, c, dw, dh,
                                (const char *)data + i * in_img, GAIO_INTERP_LINEAR, NULL, PACKED, 0);
        memcpy(want + i * out_img, one, out_img);
        free(one);
    }
    int ok = 1;
    for (int i = 0; i < n; i += 37)
        ok &= memcmp(want + i * out_img, (char *)got + i * out_img, out_img) == 0;
    if (!ok) fprintf(stderr, "a batch of %d images differs from its images resized alone\n", n);
    else printf("  a batch of %d images (%d launches) agrees with its images resized alone\n", n,
                (n + GAIO_KTABLE_MAX - 1) / GAIO_KTABLE_MAX);
    free(want);
    free(got);
    free(data);
    return ok;
}

static void sweep(gaio_stream *s, gaio_stream *host_s) {
    uint64_t seed = test_seed();
    static const gaio_dtype dts[] = {GAIO_DTYPE_U8, GAIO_DTYPE_U16, GAIO_DTYPE_F32};
    static const int sizes[][4] = {{97, 61, 40, 33}, {23, 17, 61, 50}, {64, 64, 32, 32}, {5, 300, 9, 7}};
    int ok = 1, runs = 0;
    for (int interp = 0; interp < 5; interp++)
        for (int d = 0; d < 3; d++)
            for (int c = 1; c <= 4; c++)
                for (int z = 0; z < 4; z++) {
                    if ((c + z + d) % 2 && z != 0) continue; /* a sample of the cross product */
                    ok &= sweep_one(s, host_s, dts[d], GAIO_LAYOUT_HWC, 1 + z % 3, sizes[z][0], sizes[z][1], c,
                                    sizes[z][2], sizes[z][3], interp, z == 1 || z == 3, &seed);
                    runs++;
                }
    for (int interp = 0; interp < 5; interp++)
        for (int d = 0; d < 3; d++) {
            ok &= sweep_one(s, host_s, dts[d], GAIO_LAYOUT_CHW, 2, 45, 31, 3, 17, 40, interp, d == 1, &seed);
            runs++;
        }
    if (host_s) { /* the sizes of the speed targets, and large shrinking factors */
        for (int interp = 0; interp < 5; interp++) {
            ok &= sweep_one(s, host_s, GAIO_DTYPE_U8, GAIO_LAYOUT_HWC, 2, 1920, 1080, 3, 1280, 720, interp, 0, &seed);
            ok &= sweep_one(s, host_s, GAIO_DTYPE_U8, GAIO_LAYOUT_HWC, 2, 1920, 1080, 3, 224, 224, interp, 0, &seed);
            ok &= sweep_one(s, host_s, GAIO_DTYPE_F32, GAIO_LAYOUT_HWC, 1, 1919, 1077, 4, 32, 18, interp, 0, &seed);
            ok &= sweep_one(s, host_s, GAIO_DTYPE_U8, GAIO_LAYOUT_HWC, 1, 1000, 30, 1, 17, 600, interp, 0, &seed);
            runs += 4;
        }
    }
    /* varshape */
    static const int vs[][2] = {{50, 70}, {9, 4}, {300, 211}, {64, 48}, {1, 1}, {123, 457}};
    for (int interp = 0; interp < 5; interp++)
        for (int d = 0; d < 3; d++) {
            int c = 1 + (interp + d) % 4;
            void *data[6];
            for (int i = 0; i < 6; i++) data[i] = rand_data(dts[d], (size_t)vs[i][0] * vs[i][1] * c, &seed);
            gaio_rect rois[6] = {{0, 0, 50, 70}, {1, 1, 7, 2}, {10, 20, 250, 150}, {0, 0, 64, 48}, {0, 0, 1, 1},
                                 {0, 400, 123, 57}};
            for (int r = 0; r < 2; r++) {
                void *want = run_varshape(host_s ? host_s : s, dts[d], 6, vs, c, 64, 48, data, r ? rois : NULL,
                                          interp);
                npy_array w = {0};
                w.dtype = dts[d];
                w.count = (size_t)6 * 64 * 48 * c;
                w.data = want;
                if (host_s) {
                    void *got = run_varshape(s, dts[d], 6, vs, c, 64, 48, data, r ? rois : NULL, interp);
                    char what[128];
                    snprintf(what, sizeof what, "cuda=cpu varshape %s %s c%d%s", INTERP_NAMES[interp],
                             gaio_dtype_name(dts[d]), c, r ? " rois" : "");
                    ok &= compare(what, got, &w, interp);
                    free(got);
                }
                free(want);
                runs++;
            }
            for (int i = 0; i < 6; i++) free(data[i]);
        }
    ok &= many_images(s, host_s, &seed);
    if (!ok) {
        fprintf(stderr, "sweep failed\n");
        exit(1);
    }
    printf("  %d sweep cases agree over packed, padded and ROI-view memory%s\n", runs,
           host_s ? " (CUDA against the CPU)" : "");
}

/* ---- bad input ------------------------------------------------------------------- */

#define BAD(call, fn, needle) EXPECT_INVALID(call, fn, needle)
#define UNSUPPORTED(call, fn, needle) EXPECT_UNSUPPORTED(call, fn, needle)

static void bad_input(gaio_stream *s, gaio_stream *host_s) {
    gaio_context *ctx;
    OK(gaio_stream_context(s, &ctx));
    const char *R = "gaio_resize", *CR = "gaio_crop_resize", *V = "gaio_crop_resize_varshape";
    timg src = timg_new(s, GAIO_DTYPE_U8, GAIO_LAYOUT_HWC, 2, 8, 6, 3);
    timg out = timg_new(s, GAIO_DTYPE_U8, GAIO_LAYOUT_HWC, 2, 5, 4, 3); /* the poisoned dst */
    timg f32 = timg_new(s, GAIO_DTYPE_F32, GAIO_LAYOUT_HWC, 2, 8, 6, 3);
    timg gray = timg_new(s, GAIO_DTYPE_U8, GAIO_LAYOUT_HWC, 2, 8, 6, 1);
    timg s16 = timg_new(s, GAIO_DTYPE_S16, GAIO_LAYOUT_HWC, 2, 8, 6, 3);
    timg s16o = timg_new(s, GAIO_DTYPE_S16, GAIO_LAYOUT_HWC, 2, 5, 4, 3);
    timg c5 = timg_new(s, GAIO_DTYPE_U8, GAIO_LAYOUT_HWC, 2, 8, 6, 5);
    timg c5o = timg_new(s, GAIO_DTYPE_U8, GAIO_LAYOUT_HWC, 2, 5, 4, 5);
    timg nv12 = timg_new(s, GAIO_DTYPE_U8, GAIO_LAYOUT_NV12, 2, 8, 6, 3);
    timg nv12o = timg_new(s, GAIO_DTYPE_U8, GAIO_LAYOUT_NV12, 2, 4, 4, 3);
    timg big = timg_new(s, GAIO_DTYPE_U8, GAIO_LAYOUT_HWC, 1, 640, 2, 3); /* AREA to 1x1: 640 taps */
    timg tiny = timg_new(s, GAIO_DTYPE_U8, GAIO_LAYOUT_HWC, 1, 1, 1, 3);
    timg tiny2 = timg_new(s, GAIO_DTYPE_U8, GAIO_LAYOUT_HWC, 2, 1, 1, 3);
    OK(gaio_stream_synchronize(s));
    const gaio_interp L = GAIO_INTERP_LINEAR;

    BAD(gaio_resize(NULL, &src.im, &out.im, L), R, "stream");
    BAD(gaio_resize(s, NULL, &out.im, L), R, "src");
    BAD(gaio_resize(s, &src.im, NULL, L), R, "dst");
    BAD(gaio_resize(s, &src.im, &out.im, (gaio_interp)5), R, "interp");
    BAD(gaio_resize(s, &src.im, &out.im, (gaio_interp)-1), R, "interp");
    BAD(gaio_resize(s, &f32.im, &out.im, L), R, "f32");
    BAD(gaio_resize(s, &gray.im, &out.im, L), R, "channels");
    gaio_image im = src.im;
    im.layout = GAIO_LAYOUT_CHW;
    BAD(gaio_resize(s, &im, &out.im, L), R, "CHW");
    im = src.im;
    im.batch = 1;
    BAD(gaio_resize(s, &im, &out.im, L), R, "batch");
    im = out.im;
    im.batch = 3; /* more than its buffer holds */
    BAD(gaio_resize(s, &src.im, &im, L), R, "dst");
    im = src.im;
    im.row_pitch = 5;
    BAD(gaio_resize(s, &im, &out.im, L), R, "src.row_pitch");
    UNSUPPORTED(gaio_resize(s, &s16.im, &s16o.im, L), R, "s16");
    UNSUPPORTED(gaio_resize(s, &c5.im, &c5o.im, L), R, "5 channels");
    UNSUPPORTED(gaio_resize(s, &nv12.im, &nv12o.im, L), R, "YUV");
    UNSUPPORTED(gaio_resize(s, &big.im, &tiny.im, GAIO_INTERP_AREA), R, "AREA");
    /* in place, overlapping */
    BAD(gaio_resize(s, &out.im, &out.im, L), R, "overlap");
    im = src.im;
    im.batch = 1;
    gaio_image im2 = out.im;
    im2.batch = 1;
    im2.buffer = src.im.buffer;
    im2.offset = 8 * 3 * 5; /* inside src's last row */
    BAD(gaio_resize(s, &im, &im2, L), R, "overlap");
    /* rois */
    gaio_rect rois[2] = {{0, 0, 8, 6}, {4, 2, 5, 3}}; /* the second runs past the right edge */
    BAD(gaio_crop_resize(s, &src.im, rois, &out.im, L), CR, "rois[1]");
    rois[1] = (gaio_rect){4, 2, 0, 3};
    BAD(gaio_crop_resize(s, &src.im, rois, &out.im, L), CR, "rois[1]");
    rois[1] = (gaio_rect){-1, 2, 3, 3};
    BAD(gaio_crop_resize(s, &src.im, rois, &out.im, L), CR, "rois[1]");
    rois[0] = (gaio_rect){0, 5, 2, 2};
    BAD(gaio_crop_resize(s, &src.im, rois, &out.im, L), CR, "rois[0]");
    BAD(gaio_crop_resize(NULL, &src.im, NULL, &out.im, L), CR, "stream");
    /* varshape */
    gaio_image one, two;
    OK(gaio_image_at(&src.im, 0, &one));
    OK(gaio_image_at(&src.im, 1, &two));
    gaio_image srcs[3] = {one, two, one};
    BAD(gaio_crop_resize_varshape(NULL, srcs, 2, NULL, &out.im, L), V, "stream");
    BAD(gaio_crop_resize_varshape(s, NULL, 2, NULL, &out.im, L), V, "srcs");
    BAD(gaio_crop_resize_varshape(s, srcs, 0, NULL, &out.im, L), V, "count");
    BAD(gaio_crop_resize_varshape(s, srcs, 3, NULL, &out.im, L), V, "count");
    BAD(gaio_crop_resize_varshape(s, srcs, 2, NULL, NULL, L), V, "dst");
    BAD(gaio_crop_resize_varshape(s, srcs, 2, NULL, &out.im, (gaio_interp)7), V, "interp");
    srcs[1] = f32.im;
    srcs[1].batch = 1;
    BAD(gaio_crop_resize_varshape(s, srcs, 2, NULL, &out.im, L), V, "srcs[1]");
    srcs[1] = gray.im;
    srcs[1].batch = 1;
    BAD(gaio_crop_resize_varshape(s, srcs, 2, NULL, &out.im, L), V, "srcs[1]");
    srcs[1] = src.im; /* a batch of 2 */
    BAD(gaio_crop_resize_varshape(s, srcs, 2, NULL, &out.im, L), V, "srcs[1].batch");
    srcs[1] = two;
    srcs[1].width = 9;
    BAD(gaio_crop_resize_varshape(s, srcs, 2, NULL, &out.im, L), V, "srcs[1]");
    srcs[1] = out.im;
    srcs[1].batch = 1;
    BAD(gaio_crop_resize_varshape(s, srcs, 2, NULL, &out.im, L), V, "overlap");
    srcs[1] = two;
    rois[0] = (gaio_rect){0, 0, 8, 6};
    rois[1] = (gaio_rect){0, 0, 8, 7};
    BAD(gaio_crop_resize_varshape(s, srcs, 2, rois, &out.im, L), V, "rois[1]");
    srcs[1] = big.im;
    UNSUPPORTED(gaio_crop_resize_varshape(s, srcs, 2, NULL, &tiny2.im, GAIO_INTERP_AREA), V, "AREA");
    /* memory the stream's kernels cannot touch */
    gaio_buffer *pageable;
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_HOST, src.bytes, &pageable));
    im = src.im;
    im.buffer = pageable;
    BAD(gaio_resize(s, &im, &out.im, L), R, "src");
    im = out.im;
    im.buffer = pageable;
    BAD(gaio_resize(s, &src.im, &im, L), R, "dst");
    srcs[1] = two;
    srcs[1].buffer = pageable;
    srcs[1].offset = 0;
    BAD(gaio_crop_resize_varshape(s, srcs, 2, NULL, &out.im, L), V, "srcs[1]");
    OK(gaio_buffer_release(pageable));
    if (host_s) { /* a buffer of another device */
        timg other = timg_new(host_s, GAIO_DTYPE_U8, GAIO_LAYOUT_HWC, 2, 8, 6, 3);
        OK(gaio_stream_synchronize(host_s));
        BAD(gaio_resize(s, &other.im, &out.im, L), R, "src");
        srcs[1] = other.im;
        srcs[1].batch = 1;
        BAD(gaio_crop_resize_varshape(s, srcs, 2, NULL, &out.im, L), V, "srcs[1]");
        timg_free(&other);
    }

    /* nothing was enqueued: the poisoned dst is untouched */
    timg_expect_poison(s, &out);
    printf("  bad input refused, nothing enqueued\n");
    timg_free(&src);
    timg_free(&out);
    timg_free(&f32);
    timg_free(&gray);
    timg_free(&s16);
    timg_free(&s16o);
    timg_free(&c5);
    timg_free(&c5o);
    timg_free(&nv12);
    timg_free(&nv12o);
    timg_free(&big);
    timg_free(&tiny);
    timg_free(&tiny2);
}

static void run(int device) {
    tctx t = tctx_open(device);
    golden(t.s);
    sweep(t.s, t.host_s);
    bad_input(t.s, t.host_s);
    tctx_close(&t);
}
