/* gaio_cvt_color: every code against OpenCV (golden_color.py: cvtColor, and the
 * ITU-R formulas for the YUV matrices OpenCV lacks), the same ops on pitched,
 * padded and ROI images (equal to the packed results, nothing written outside the
 * image), CUDA against the CPU backend, and every kind of bad input. */
#include "common.h"
#include "image/image_test.h"

#define FN "gaio_cvt_color"

/* ---- images of any geometry ------------------------------------------------ */

typedef struct geom {
    int row_pad;   /* elements (HWC) or bytes (YUV, even) added to each row's pitch */
    int align16;   /* then round the row pitch up to a multiple of 16 bytes */
    int plane_pad; /* YUV: bytes (a multiple of 4) between the Y plane and the chroma */
    int image_pad; /* bytes between images, past the packed span */
    int roi;       /* HWC: a gaio_image_roi view at (2, 1) of an image 3 wider, 2 taller */
    const char *name;
} geom;

static const geom PACKED = {0, 0, 0, 0, 0, "packed"};

/* An image on a device, in a buffer of its own filled with 0xCD around it. */
typedef struct gimg {
    gaio_image im;  /* what the op sees */
    gaio_image res; /* im with its strides resolved */
    gaio_buffer *buf;
    size_t bytes;
} gimg;

static int is_yuv(gaio_layout l) { return l == GAIO_LAYOUT_NV12 || l == GAIO_LAYOUT_I420; }

static size_t elem_count(const gaio_image *r) {
    size_t px = (size_t)r->batch * (size_t)r->width * (size_t)r->height;
    return is_yuv(r->layout) ? px * 3 / 2 : px * (size_t)r->channels;
}

/* Byte offset in the buffer of element k of the packed array ((N, H, W, C), or
 * OpenCV's (N, H * 3 / 2, W) YUV frames) for a resolved descriptor. */
static size_t elem_off(const gaio_image *r, size_t k) {
    size_t e = gaio_dtype_size(r->dtype), w = (size_t)r->width, h = (size_t)r->height;
    if (!is_yuv(r->layout)) {
        size_t row = w * (size_t)r->channels, per = row * h, n = k / per;
        k %= per;
        return r->offset + n * r->image_stride + (k / row) * r->row_pitch + (k % row) * e;
    }
    size_t per = w * h * 3 / 2, n = k / per, base = r->offset + n * r->image_stride;
    k %= per;
    if (k < w * h) return base + (k / w) * r->row_pitch + k % w;
    k -= w * h;
    if (r->layout == GAIO_LAYOUT_NV12) return base + r->plane_pitch + (k / w) * r->row_pitch + k % w;
    size_t q = w * h / 4, hw = w / 2;
    if (k < q) return base + r->plane_pitch + (k / hw) * (r->row_pitch / 2) + k % hw;
    k -= q;
    return base + r->plane_pitch + r->plane_pitch / 4 + (k / hw) * (r->row_pitch / 2) + k % hw;
}

static size_t round_up(size_t v, size_t m) { return (v + m - 1) / m * m; }

/* An image of the given shape and geometry on stream s holding `data` (packed, may
 * be NULL: all poison). */
static gimg gimg_new(gaio_stream *s, gaio_dtype dt, gaio_layout layout, int n, int w, int h, int c, geom g,
                     const void *data) {
    gimg t = {0};
    size_t e = gaio_dtype_size(dt);
    int roi = g.roi && !is_yuv(layout);
    int pw = roi ? w + 3 : w, ph = roi ? h + 2 : h;
    gaio_image p = gaio_image_make(NULL, 0, dt, layout, 1, pw, ph, c);
    size_t rp = (size_t)pw * (is_yuv(layout) ? 1 : (size_t)c * e) + (size_t)g.row_pad * (is_yuv(layout) ? 1 : e);
    if (g.align16) rp = round_up(rp, 16);
    p.row_pitch = rp;
    if (is_yuv(layout)) p.plane_pitch = rp * (size_t)ph + (size_t)g.plane_pad;
    /* the bytes of one image, from its first to one past its last */
    size_t span;
    if (layout == GAIO_LAYOUT_NV12) span = p.plane_pitch + rp * (size_t)(ph / 2 - 1) + (size_t)pw;
    else if (layout == GAIO_LAYOUT_I420)
        span = p.plane_pitch + p.plane_pitch / 4 + rp / 2 * (size_t)(ph / 2 - 1) + (size_t)pw / 2;
    else span = rp * (size_t)(ph - 1) + (size_t)pw * (size_t)c * e;
    p.batch = n;
    p.image_stride = n > 1 ? round_up(span + (size_t)g.image_pad, g.align16 ? 16 : e) : 0;
    t.bytes = (n > 1 ? p.image_stride * (size_t)(n - 1) : 0) + span;
    OK(gaio_buffer_alloc_async(s, GAIO_MEM_DEVICE, t.bytes, &t.buf));
    p.buffer = t.buf;
    t.im = p;
    if (roi) OK(gaio_image_roi(&p, (gaio_rect){2, 1, w, h}, &t.im));
    OK(gaio_image_check(&t.im, &t.res, NULL));
    unsigned char *host = tmalloc(t.bytes);
    memset(host, 0xCD, t.bytes);
    if (data) {
        size_t count = elem_count(&t.res);
        for (size_t k = 0; k < count; k++) memcpy(host + elem_off(&t.res, k), (const char *)data + k * e, e);
    }
    tbuf_upload(s, t.buf, host, t.bytes);
    free(host);
    return t;
}

/* Waits for s, copies the image out as a packed array, and checks that every byte
 * of the buffer outside the image still holds the poison. */
static void gimg_get(gaio_stream *s, const gimg *t, void *out, const char *what) {
    unsigned char *host = malloc(t->bytes), *mine = calloc(1, t->bytes);
    CHECK(host && mine);
    tbuf_download(s, t->buf, host, t->bytes);
    size_t e = gaio_dtype_size(t->res.dtype), count = elem_count(&t->res);
    for (size_t k = 0; k < count; k++) {
        size_t o = elem_off(&t->res, k);
        memcpy((char *)out + k * e, host + o, e);
        memset(mine + o, 1, e);
    }
    for (size_t i = 0; i < t->bytes; i++) {
        if (!mine[i] && host[i] != 0xCD) {
            fprintf(stderr, "%s: byte %zu outside the image was written (0x%02x)\n", what, i, host[i]);
            exit(1);
        }
    }
    free(host);
    free(mine);
}

static void gimg_free(gimg *t) { OK(gaio_buffer_release(t->buf)); }

/* ---- the op on one case ------------------------------------------------------ */

typedef struct variant {
    gaio_color code;
    int scn, dcn;
} variant;

static const variant HWC_VARIANTS[] = {
    {GAIO_COLOR_SWAP_RB, 3, 3},  {GAIO_COLOR_SWAP_RB, 4, 4},  {GAIO_COLOR_RGB2GRAY, 3, 1}, {GAIO_COLOR_RGB2GRAY, 4, 1},
    {GAIO_COLOR_BGR2GRAY, 3, 1}, {GAIO_COLOR_BGR2GRAY, 4, 1}, {GAIO_COLOR_GRAY2RGB, 1, 3}, {GAIO_COLOR_GRAY2RGB, 1, 4},
    {GAIO_COLOR_RGB2RGBA, 3, 4}, {GAIO_COLOR_RGBA2RGB, 4, 3}, {GAIO_COLOR_RGB2BGRA, 3, 4}, {GAIO_COLOR_RGBA2BGR, 4, 3},
};
#define NVARIANTS (sizeof HWC_VARIANTS / sizeof HWC_VARIANTS[0])

typedef struct ccase {
    gaio_color code;
    gaio_yuv yuv;
    gaio_dtype dt;
    gaio_layout layout; /* of src */
    int n, w, h, scn, dcn;
} ccase;

/* Runs the case on stream s with src and dst of geometry g; out receives dst packed. */
static void run_case(gaio_stream *s, const ccase *c, geom g, const void *src_data, void *out, const char *what) {
    gimg src = gimg_new(s, c->dt, c->layout, c->n, c->w, c->h, c->scn, g, src_data);
    geom gd = g;
    if (g.row_pad) gd.row_pad = g.row_pad + 2; /* dst rows padded unlike src's */
    gimg dst = gimg_new(s, c->dt, GAIO_LAYOUT_HWC, c->n, c->w, c->h, c->dcn, gd, NULL);
    OK(gaio_cvt_color(s, &src.im, &dst.im, c->code, c->yuv));
    gimg_get(s, &dst, out, what);
    gimg_free(&src);
    gimg_free(&dst);
}

/* ---- OpenCV's results ------------------------------------------------------------ */

static void golden(gaio_stream *s) {
    if (!golden_available("test_color")) return; /* no OpenCV 4.6 here: the other checks still run */
    char path[1024];
    snprintf(path, sizeof path, "%s/manifest.txt", golden_dir());
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "cannot open %s (golden_color.py writes it)\n", path);
        exit(1);
    }
    char name[160], layout[16], sname[256], dname[256];
    int code, yuv, cases = 0;
    double abs_tol, rel_tol;
    while (fscanf(f, "%159s %d %d %15s %255s %255s %lf %lf", name, &code, &yuv, layout, sname, dname, &abs_tol,
                  &rel_tol) == 8) {
        npy_array in = npy_load(sname), want = npy_load(dname);
        gaio_layout lay = !strcmp(layout, "nv12")   ? GAIO_LAYOUT_NV12
                          : !strcmp(layout, "i420") ? GAIO_LAYOUT_I420
                                                    : GAIO_LAYOUT_HWC;
        CHECK(want.ndim == 4);
        int n = (int)want.shape[0], h = (int)want.shape[1], w = (int)want.shape[2], dcn = (int)want.shape[3];
        int scn = lay == GAIO_LAYOUT_HWC ? (int)in.shape[3] : 3;
        timg src = timg_new(s, in.dtype, lay, n, w, h, scn);
        CHECK(src.bytes == in.bytes);
        timg_upload(s, &src, in.data);
        timg dst = timg_new(s, want.dtype, GAIO_LAYOUT_HWC, n, w, h, dcn);
        CHECK(dst.bytes == want.bytes);
        OK(gaio_cvt_color(s, &src.im, &dst.im, (gaio_color)code, (gaio_yuv)yuv));
        CHECK(timg_expect_close(s, &dst, name, &want, abs_tol, rel_tol));
        timg_free(&src);
        timg_free(&dst);
        npy_free(&in);
        npy_free(&want);
        cases++;
    }
    fclose(f);
    CHECK(cases > 0);
    printf("  %d golden cases\n", cases);
}

/* ---- strides, ROIs, batches; CUDA against the CPU ------------------------------ */

static const geom HWC_GEOMS[] = {
    {3, 0, 0, 0, 0, "row_pitch + 3 elements"},
    {0, 1, 0, 32, 0, "16-byte aligned rows, padded images"},
    {0, 0, 0, 5, 1, "ROI view"},
};
static const geom YUV_GEOMS[] = {
    {6, 0, 0, 0, 0, "row_pitch + 6"},
    {0, 1, 64, 32, 0, "16-byte aligned rows, padded planes and images"},
    {2, 0, 4, 3, 0, "odd padding"},
};

/* host_s: a stream of the CPU backend when s is a GPU's (results must agree), else NULL. */
static void sweep_case(gaio_stream *s, gaio_stream *host_s, const ccase *c, uint64_t *seed, const geom *geoms,
                       int ngeoms) {
    size_t e = gaio_dtype_size(c->dt), px = (size_t)c->n * c->w * c->h;
    size_t scount = is_yuv(c->layout) ? px * 3 / 2 : px * (size_t)c->scn, dcount = px * (size_t)c->dcn;
    void *in = trand_new(c->dt, scount, seed, 0.0f, 1.0f);
    void *want = tmalloc(dcount * e), *got = tmalloc(dcount * e), *ref = tmalloc(dcount * e);
    char what[256];
    snprintf(what, sizeof what, "code %d yuv %d %s layout %d %dx%dx%d->%d x%d", (int)c->code, (int)c->yuv,
             gaio_dtype_name(c->dt), (int)c->layout, c->w, c->h, c->scn, c->dcn, c->n);
    run_case(s, c, PACKED, in, want, what);
    /* CUDA and the CPU: u8 +-1, f32 1e-5 relative (the kernels are written to agree exactly) */
    double abs_tol = c->dt == GAIO_DTYPE_F32 ? 1e-6 : 1, rel_tol = c->dt == GAIO_DTYPE_F32 ? 1e-5 : 0;
    for (int gi = -1; gi < ngeoms; gi++) {
        geom g = gi < 0 ? PACKED : geoms[gi];
        char w2[400];
        snprintf(w2, sizeof w2, "%s, %s", what, g.name);
        if (gi >= 0) {
            run_case(s, c, g, in, got, w2);
            if (memcmp(got, want, dcount * e)) {
                CHECK(expect_close(w2, got, want, dcount, c->dt, 0, 0));
            }
        }
        if (host_s) {
            run_case(host_s, c, g, in, ref, w2);
            char w3[420];
            snprintf(w3, sizeof w3, "CUDA vs CPU: %s", w2);
            if (memcmp(ref, gi < 0 ? want : got, dcount * e))
                CHECK(expect_close(w3, gi < 0 ? want : got, ref, dcount, c->dt, abs_tol, rel_tol));
        }
    }
    free(in);
    free(want);
    free(got);
    free(ref);
}

static void sweep(gaio_stream *s, gaio_stream *host_s) {
    uint64_t seed = test_seed();
    /* w, h, n: widths past a CUDA warp's 32 x 16 bytes too, so that pitched rows take the staged path */
    static const int sizes[][3] = {{37, 23, 3}, {301, 5, 2}, {1, 9, 2}, {1100, 3, 2}};
    static const gaio_dtype dts[] = {GAIO_DTYPE_U8, GAIO_DTYPE_U16, GAIO_DTYPE_F32};
    int runs = 0;
    for (size_t d = 0; d < 3; d++)
        for (size_t v = 0; v < NVARIANTS; v++)
            for (size_t z = 0; z < 4; z++) {
                ccase c = {HWC_VARIANTS[v].code, GAIO_YUV_BT601_LIMITED, dts[d], GAIO_LAYOUT_HWC, sizes[z][2],
                           sizes[z][0], sizes[z][1], HWC_VARIANTS[v].scn, HWC_VARIANTS[v].dcn};
                sweep_case(s, host_s, &c, &seed, HWC_GEOMS, 3);
                runs++;
            }
    static const int ysizes[][3] = {{36, 10, 3}, {64, 6, 2}, {2, 2, 2}, {1040, 4, 2}};
    for (int lay = 0; lay < 2; lay++)
        for (int yuv = 0; yuv < 4; yuv++)
            for (int code = 0; code < 2; code++)
                for (int dcn = 3; dcn <= 4; dcn++)
                    for (size_t z = 0; z < 4; z++) {
                        ccase c = {code ? GAIO_COLOR_YUV2BGR : GAIO_COLOR_YUV2RGB, (gaio_yuv)yuv, GAIO_DTYPE_U8,
                                   lay ? GAIO_LAYOUT_I420 : GAIO_LAYOUT_NV12, ysizes[z][2], ysizes[z][0],
                                   ysizes[z][1], 3, dcn};
                        sweep_case(s, host_s, &c, &seed, YUV_GEOMS, 3);
                        runs++;
                    }
    printf("  %d cases x 4 layouts of memory agree%s\n", runs, host_s ? " (and CUDA agrees with the CPU)" : "");
}

/* ---- bad input ------------------------------------------------------------------- */

#define BAD(call, needle) EXPECT_INVALID(call, FN, needle)
#define UNSUPPORTED(call, needle) EXPECT_UNSUPPORTED(call, FN, needle)

static void bad_input(gaio_stream *s, gaio_stream *host_s) {
    gaio_context *ctx;
    OK(gaio_stream_context(s, &ctx));
    timg rgb = timg_new(s, GAIO_DTYPE_U8, GAIO_LAYOUT_HWC, 2, 8, 6, 3);
    timg gray = timg_new(s, GAIO_DTYPE_U8, GAIO_LAYOUT_HWC, 2, 8, 6, 1);
    timg out = timg_new(s, GAIO_DTYPE_U8, GAIO_LAYOUT_HWC, 2, 8, 6, 3); /* the poisoned dst */
    timg nv12 = timg_new(s, GAIO_DTYPE_U8, GAIO_LAYOUT_NV12, 2, 8, 6, 3);
    timg f32 = timg_new(s, GAIO_DTYPE_F32, GAIO_LAYOUT_HWC, 2, 8, 6, 3);
    timg s16 = timg_new(s, GAIO_DTYPE_S16, GAIO_LAYOUT_HWC, 2, 8, 6, 3);
    timg s16b = timg_new(s, GAIO_DTYPE_S16, GAIO_LAYOUT_HWC, 2, 8, 6, 3);
    OK(gaio_stream_synchronize(s));
    const gaio_color SW = GAIO_COLOR_SWAP_RB;

    BAD(gaio_cvt_color(NULL, &rgb.im, &out.im, SW, 0), "stream");
    BAD(gaio_cvt_color(s, NULL, &out.im, SW, 0), "src");
    BAD(gaio_cvt_color(s, &rgb.im, NULL, SW, 0), "dst");
    BAD(gaio_cvt_color(s, &rgb.im, &out.im, (gaio_color)0, 0), "code");
    BAD(gaio_cvt_color(s, &rgb.im, &out.im, (gaio_color)11, 0), "code");

    gaio_image im = out.im;
    im.width = 7;
    BAD(gaio_cvt_color(s, &rgb.im, &im, SW, 0), "width");
    im = out.im;
    im.height = 5;
    BAD(gaio_cvt_color(s, &rgb.im, &im, SW, 0), "height");
    im = out.im;
    im.batch = 1;
    BAD(gaio_cvt_color(s, &rgb.im, &im, SW, 0), "batch");
    BAD(gaio_cvt_color(s, &f32.im, &out.im, SW, 0), "dtype");
    BAD(gaio_cvt_color(s, &rgb.im, &gray.im, SW, 0), "dst has 1 channels");
    BAD(gaio_cvt_color(s, &gray.im, &out.im, SW, 0), "src has 1 channels");
    BAD(gaio_cvt_color(s, &rgb.im, &out.im, GAIO_COLOR_RGB2GRAY, 0), "dst has 3 channels");
    BAD(gaio_cvt_color(s, &rgb.im, &out.im, GAIO_COLOR_GRAY2RGB, 0), "src has 3 channels");
    BAD(gaio_cvt_color(s, &rgb.im, &out.im, GAIO_COLOR_RGBA2RGB, 0), "src has 3 channels");
    BAD(gaio_cvt_color(s, &rgb.im, &out.im, GAIO_COLOR_RGB2RGBA, 0), "dst has 3 channels");
    BAD(gaio_cvt_color(s, &gray.im, &gray.im, GAIO_COLOR_GRAY2RGB, 0), "dst has 1 channels");
    im = rgb.im; /* the layouts: CHW is valid but not supported; YUV frames belong to the YUV codes */
    im.layout = GAIO_LAYOUT_CHW;
    UNSUPPORTED(gaio_cvt_color(s, &im, &out.im, SW, 0), "CHW");
    im = out.im;
    im.layout = GAIO_LAYOUT_CHW;
    UNSUPPORTED(gaio_cvt_color(s, &rgb.im, &im, SW, 0), "CHW");
    BAD(gaio_cvt_color(s, &nv12.im, &out.im, SW, 0), "src is a NV12");
    BAD(gaio_cvt_color(s, &rgb.im, &nv12.im, SW, 0), "dst is a NV12");
    UNSUPPORTED(gaio_cvt_color(s, &s16.im, &s16b.im, SW, 0), "s16");
    /* descriptors gaio__img_resolve refuses, named by argument */
    im = rgb.im;
    im.width = 9;
    BAD(gaio_cvt_color(s, &im, &out.im, SW, 0), "src");
    im = out.im;
    im.batch = 3;
    BAD(gaio_cvt_color(s, &rgb.im, &im, SW, 0), "dst");
    im = out.im;
    im.row_pitch = 2;
    BAD(gaio_cvt_color(s, &rgb.im, &im, SW, 0), "dst.row_pitch");
    im = nv12.im;
    im.width = 7;
    im.row_pitch = 8;
    BAD(gaio_cvt_color(s, &im, &out.im, GAIO_COLOR_YUV2RGB, 0), "src");
    /* in place / overlapping */
    BAD(gaio_cvt_color(s, &out.im, &out.im, SW, 0), "overlap");
    im = out.im;
    im.batch = 1;
    gaio_image im2 = im;
    im2.offset = 8 * 3; /* one row on */
    BAD(gaio_cvt_color(s, &im, &im2, SW, 0), "overlap");
    /* the YUV codes */
    BAD(gaio_cvt_color(s, &nv12.im, &out.im, GAIO_COLOR_YUV2RGB, (gaio_yuv)4), "yuv");
    BAD(gaio_cvt_color(s, &nv12.im, &out.im, GAIO_COLOR_YUV2BGR, (gaio_yuv)-1), "yuv");
    BAD(gaio_cvt_color(s, &rgb.im, &out.im, GAIO_COLOR_YUV2RGB, 0), "src is a HWC");
    BAD(gaio_cvt_color(s, &nv12.im, &gray.im, GAIO_COLOR_YUV2RGB, 0), "dst has 1 channels");
    BAD(gaio_cvt_color(s, &nv12.im, &f32.im, GAIO_COLOR_YUV2RGB, 0), "dst.dtype");
    BAD(gaio_cvt_color(s, &nv12.im, &nv12.im, GAIO_COLOR_YUV2RGB, 0), "dst is a NV12");
    im = out.im;
    im.layout = GAIO_LAYOUT_CHW;
    UNSUPPORTED(gaio_cvt_color(s, &nv12.im, &im, GAIO_COLOR_YUV2RGB, 0), "CHW");
    im = nv12.im;
    im.batch = 1;
    BAD(gaio_cvt_color(s, &im, &out.im, GAIO_COLOR_YUV2RGB, 0), "batch");
    im = out.im; /* an 8x6 NV12 frame at 0 spans 72 bytes, its chroma from 48: a dst at 48 overlaps it */
    im.offset = 48;
    im.batch = 1;
    gaio_image yv = nv12.im;
    yv.batch = 1;
    yv.buffer = out.im.buffer;
    BAD(gaio_cvt_color(s, &yv, &im, GAIO_COLOR_YUV2RGB, 0), "overlap");
    /* memory the stream's kernels cannot touch */
    gaio_buffer *pageable;
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_HOST, rgb.bytes, &pageable));
    im = rgb.im;
    im.buffer = pageable;
    BAD(gaio_cvt_color(s, &im, &out.im, SW, 0), "src");
    BAD(gaio_cvt_color(s, &rgb.im, &im, SW, 0), "dst");
    OK(gaio_buffer_release(pageable));
    if (host_s) { /* a buffer of another device */
        timg other = timg_new(host_s, GAIO_DTYPE_U8, GAIO_LAYOUT_HWC, 2, 8, 6, 3);
        OK(gaio_stream_synchronize(host_s));
        BAD(gaio_cvt_color(s, &other.im, &out.im, SW, 0), "src");
        BAD(gaio_cvt_color(s, &rgb.im, &other.im, SW, 0), "dst");
        timg_free(&other);
    }

    /* nothing was enqueued: the poisoned dst is untouched */
    timg_expect_poison(s, &out);
    printf("  bad input refused, nothing enqueued\n");
    timg_free(&rgb);
    timg_free(&gray);
    timg_free(&out);
    timg_free(&nv12);
    timg_free(&f32);
    timg_free(&s16);
    timg_free(&s16b);
}

static void run(int device) {
    tctx t = tctx_open(device);
    golden(t.s);
    sweep(t.s, t.host_s);
    bad_input(t.s, t.host_s);
    tctx_close(&t);
}
