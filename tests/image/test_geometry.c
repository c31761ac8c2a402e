/* gaio_crop, gaio_copy_make_border, gaio_flip, gaio_rotate, gaio_warp_affine:
 *   golden     OpenCV's results (golden_geometry.py) on odd sizes from 1x1 to
 *              1919x1077, every dtype, 1 to 6 channels, HWC and CHW, batches;
 *              copies must be bit-exact, warp_affine within the stated tolerance
 *   strides    random batches whose images have padded rows, planes and images
 *              and ROI views (odd offsets): copies against a reference written
 *              here, warp_affine against the same op on packed images; bytes
 *              outside dst's pixels must stay untouched
 *   cuda/cpu   on a GPU, the same ops on the host backend (fresh random inputs,
 *              batches, strides) must give the same bytes
 *   bad input  each rejected with a message naming the argument, nothing enqueued */
#include "common.h"
#include "image/image_test.h"

/* ---- golden cases ---- */

#define MAX_KV 24

typedef struct gcase {
    char op[16], in[64], out[64];
    char key[MAX_KV][16], val[MAX_KV][64];
    int nkv;
} gcase;

static const char *kv(const gcase *c, const char *k) {
    for (int i = 0; i < c->nkv; i++)
        if (!strcmp(c->key[i], k)) return c->val[i];
    return NULL;
}

static const char *kv_must(const gcase *c, const char *k) {
    const char *v = kv(c, k);
    if (!v) {
        fprintf(stderr, "golden case %s %s: no key %s\n", c->op, c->in, k);
        exit(1);
    }
    return v;
}

static int kv_int(const gcase *c, const char *k) { return atoi(kv_must(c, k)); }
static double kv_double(const gcase *c, const char *k) { return strtod(kv_must(c, k), NULL); }

/* value[] of the case, or NULL when the case passes none. */
static const float *kv_value(const gcase *c, float v[4]) {
    if (!kv(c, "v0")) return NULL;
    for (int i = 0; i < 4; i++) {
        char k[4] = {'v', (char)('0' + i), 0};
        v[i] = (float)kv_double(c, k);
    }
    return v;
}

static int read_case(FILE *f, gcase *c) {
    char line[2048];
    while (fgets(line, sizeof line, f)) {
        memset(c, 0, sizeof *c);
        char *save = NULL, *tok = strtok_r(line, " \t\r\n", &save);
        if (!tok) continue;
        snprintf(c->op, sizeof c->op, "%s", tok);
        tok = strtok_r(NULL, " \t\r\n", &save);
        CHECK(tok);
        snprintf(c->in, sizeof c->in, "%s", tok);
        tok = strtok_r(NULL, " \t\r\n", &save);
        CHECK(tok);
        snprintf(c->out, sizeof c->out, "%s", tok);
        while ((tok = strtok_r(NULL, " \t\r\n", &save))) {
            char *eq = strchr(tok, '=');
            CHECK(eq && c->nkv < MAX_KV);
            *eq = 0;
            snprintf(c->key[c->nkv], sizeof c->key[0], "%s", tok);
            snprintf(c->val[c->nkv], sizeof c->val[0], "%s", eq + 1);
            c->nkv++;
        }
        return 1;
    }
    return 0;
}

/* The descriptor shape of a 4-D golden array: (N, H, W, C) HWC or (N, C, H, W) CHW. */
static timg timg_for(gaio_stream *s, const npy_array *a, gaio_layout layout) {
    CHECK(a->ndim == 4);
    int n = (int)a->shape[0];
    if (layout == GAIO_LAYOUT_HWC)
        return timg_new(s, a->dtype, layout, n, (int)a->shape[2], (int)a->shape[1], (int)a->shape[3]);
    return timg_new(s, a->dtype, layout, n, (int)a->shape[3], (int)a->shape[2], (int)a->shape[1]);
}

static gaio_status run_golden_op(gaio_stream *s, const gcase *c, const gaio_image *src, const gaio_image *dst) {
    float v[4];
    if (!strcmp(c->op, "crop")) {
        gaio_rect roi = {kv_int(c, "x"), kv_int(c, "y"), kv_int(c, "w"), kv_int(c, "h")};
        return gaio_crop(s, src, roi, dst);
    }
    if (!strcmp(c->op, "border"))
        return gaio_copy_make_border(s, src, dst, kv_int(c, "top"), kv_int(c, "left"),
                                     (gaio_border)kv_int(c, "border"), kv_value(c, v));
    if (!strcmp(c->op, "flip")) return gaio_flip(s, src, dst, (gaio_flip_mode)kv_int(c, "mode"));
    if (!strcmp(c->op, "rotate")) return gaio_rotate(s, src, dst, kv_int(c, "deg"));
    if (!strcmp(c->op, "warp")) {
        double m[6];
        for (int i = 0; i < 6; i++) {
            char k[4] = {'m', (char)('0' + i), 0};
            m[i] = kv_double(c, k);
        }
        return gaio_warp_affine(s, src, dst, m, (gaio_interp)kv_int(c, "interp"), (unsigned)kv_int(c, "flags"),
                                kv_value(c, v));
    }
    fprintf(stderr, "golden case with unknown op %s\n", c->op);
    exit(1);
}

static void test_golden(gaio_stream *s) {
    if (!golden_available("test_geometry")) return; /* no OpenCV 4.6 here: the other checks still run */
    char path[1024];
    snprintf(path, sizeof path, "%s/manifest.txt", golden_dir());
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        exit(1);
    }
    gcase c;
    int n = 0, failed = 0;
    while (read_case(f, &c)) {
        gaio_layout layout = !strcmp(kv_must(&c, "layout"), "CHW") ? GAIO_LAYOUT_CHW : GAIO_LAYOUT_HWC;
        npy_array in = npy_load(c.in), want = npy_load(c.out);
        CHECK(in.dtype == want.dtype);
        timg src = timg_for(s, &in, layout), dst = timg_for(s, &want, layout);
        timg_upload(s, &src, in.data);
        OK(run_golden_op(s, &c, &src.im, &dst.im));
        char what[160];
        snprintf(what, sizeof what, "%s %s %dx%dx%d %s %s", c.op, c.in, (int)src.im.width, (int)src.im.height,
                 (int)src.im.channels, gaio_dtype_name(in.dtype), layout == GAIO_LAYOUT_CHW ? "CHW" : "HWC");
        double abs_tol = 0, rel_tol = 0;
        if (!strcmp(c.op, "warp")) {
            /* OpenCV's fixed-point coordinates and weights are reproduced exactly (see
             * src/image/cpu/geometry_warp.c); the tolerances are the brief's. */
            if (in.dtype == GAIO_DTYPE_F32) abs_tol = rel_tol = 1e-5;
            else abs_tol = 1;
        }
        if (!timg_expect_close(s, &dst, what, &want, abs_tol, rel_tol)) failed++;
        timg_free(&src);
        timg_free(&dst);
        npy_free(&in);
        npy_free(&want);
        n++;
    }
    fclose(f);
    CHECK(n > 0);
    CHECK(failed == 0);
}

/* ---- images with padded strides, mirrored in host memory ---- */

typedef struct simg {
    gaio_image im; /* strides resolved */
    size_t bytes;  /* of the buffer */
    uint8_t *host; /* the buffer's contents as uploaded (or expected) */
} simg;

static size_t rnd(uint64_t *r, size_t lo, size_t hi) { return lo + (size_t)(test_rand(r) % (hi - lo + 1)); }

/* A batch in a buffer of its own with random padding after rows, planes and
 * images and a random offset (multiples of the element size, so any alignment a
 * valid descriptor can have); `packed` leaves all strides packed. */
static simg simg_make(uint64_t *r, gaio_dtype dt, gaio_layout lay, int n, int w, int h, int c, int packed) {
    simg m = {0};
    size_t e = gaio_dtype_size(dt);
    m.im = gaio_image_make(NULL, 0, dt, lay, n, w, h, c);
    size_t rowb = (size_t)w * e * (lay == GAIO_LAYOUT_HWC ? (size_t)c : 1);
    m.im.row_pitch = rowb + (packed ? 0 : e * rnd(r, 0, 9));
    size_t plane = m.im.row_pitch * (size_t)h;
    m.im.plane_pitch = lay == GAIO_LAYOUT_CHW ? plane + (packed ? 0 : e * rnd(r, 0, 5)) : 0;
    size_t img = lay == GAIO_LAYOUT_CHW ? m.im.plane_pitch * (size_t)c : plane;
    m.im.image_stride = img + (packed ? 0 : e * rnd(r, 0, 7));
    m.im.offset = packed ? 0 : e * rnd(r, 0, 11);
    m.bytes = m.im.offset + m.im.image_stride * (size_t)n + 16;
    m.host = tmalloc(m.bytes);
    /* valid numbers of the dtype everywhere (warp_affine reads them as values) */
    if (m.im.offset % e == 0 && m.bytes % e == 0) trand_fill(m.host, m.bytes / e, dt, r, -50, 250);
    else trand_fill(m.host, m.bytes, GAIO_DTYPE_U8, r, 0, 0);
    return m;
}

static void simg_upload(gaio_stream *s, simg *m) {
    OK(gaio_buffer_alloc_async(s, GAIO_MEM_DEVICE, m->bytes, &m->im.buffer));
    tbuf_upload(s, m->im.buffer, m->host, m->bytes);
}

static void simg_free(simg *m) {
    if (m->im.buffer) OK(gaio_buffer_release(m->im.buffer));
    m->im.buffer = NULL;
    free(m->host);
    m->host = NULL;
}

static size_t pixel_size(const gaio_image *im) {
    return gaio_dtype_size(im->dtype) * (im->layout == GAIO_LAYOUT_HWC ? (size_t)im->channels : 1);
}

/* Planes of a batch as kernels see them: batch * channels for CHW, batch for HWC. */
static int nplanes(const gaio_image *im) { return im->batch * (im->layout == GAIO_LAYOUT_CHW ? im->channels : 1); }

/* Byte offset of pixel (x, y) of plane z in the buffer. */
static size_t pix_at(const gaio_image *im, int z, int y, int x) {
    int per = im->layout == GAIO_LAYOUT_CHW ? im->channels : 1;
    return im->offset + (size_t)(z / per) * im->image_stride + (size_t)(z % per) * im->plane_pitch +
           (size_t)y * im->row_pitch + (size_t)x * pixel_size(im);
}

/* ---- the ops, with random parameters ---- */

enum { OP_CROP, OP_BORDER, OP_FLIP, OP_ROTATE, OP_WARP, OP_COUNT };
static const char *const OP_NAME[OP_COUNT] = {"crop", "copy_make_border", "flip", "rotate", "warp_affine"};

typedef struct opspec {
    int op;
    gaio_rect roi;
    int top, left, border, has_value;
    float value[4];
    int mode, degrees;
    double m[6];
    int interp;
    unsigned flags;
    int dw, dh; /* dst size */
} opspec;

static const float VALUES[] = {0, 1, 2.5f, 37, 114, -3, 300, 65504};

static opspec random_spec(uint64_t *r, int op, int w, int h) {
    opspec o = {0};
    o.op = op;
    o.dw = w;
    o.dh = h;
    switch (op) {
    case OP_CROP:
        o.roi.width = (int)rnd(r, 1, (size_t)w);
        o.roi.height = (int)rnd(r, 1, (size_t)h);
        o.roi.x = (int)rnd(r, 0, (size_t)(w - o.roi.width));
        o.roi.y = (int)rnd(r, 0, (size_t)(h - o.roi.height));
        o.dw = o.roi.width;
        o.dh = o.roi.height;
        break;
    case OP_BORDER:
        /* borders up to twice as wide as small images (several reflections) */
        size_t px = w < 50 ? (size_t)(2 * w + 3) : 40, py = h < 50 ? (size_t)(2 * h + 3) : 40;
        o.border = (int)rnd(r, 0, 4);
        o.top = (int)rnd(r, 0, py);
        o.left = (int)rnd(r, 0, px);
        o.dw = w + o.left + (int)rnd(r, 0, px);
        o.dh = h + o.top + (int)rnd(r, 0, py);
        o.has_value = (int)rnd(r, 0, 3) != 0;
        for (int c = 0; c < 4; c++) o.value[c] = VALUES[rnd(r, 0, 7)];
        break;
    case OP_FLIP: o.mode = (int)rnd(r, 1, 3); break;
    case OP_ROTATE:
        o.degrees = 90 * (int)rnd(r, 1, 3);
        if (o.degrees != 180) {
            o.dw = h;
            o.dh = w;
        }
        break;
    case OP_WARP: {
        o.interp = rnd(r, 0, 1) ? GAIO_INTERP_LINEAR : GAIO_INTERP_NEAREST;
        o.flags = (unsigned)rnd(r, 0, 1);
        o.dw = (int)rnd(r, 1, (size_t)(w + 20));
        o.dh = (int)rnd(r, 1, (size_t)(h + 20));
        double a = (double)rnd(r, 0, 6283) / 1000, sc = 0.4 + (double)rnd(r, 0, 1200) / 1000;
        o.m[0] = sc * cos(a);
        o.m[1] = sc * sin(a);
        o.m[3] = -sc * sin(a);
        o.m[4] = sc * cos(a);
        o.m[2] = (double)rnd(r, 0, 4000) / 100 - 20 + w / 2.0;
        o.m[5] = (double)rnd(r, 0, 4000) / 100 - 20 + h / 2.0;
        o.has_value = (int)rnd(r, 0, 1);
        for (int c = 0; c < 4; c++) o.value[c] = VALUES[rnd(r, 0, 6)];
        break;
    }
    }
    return o;
}

static gaio_status op_run(gaio_stream *s, const opspec *o, const gaio_image *src, const gaio_image *dst) {
    const float *v = o->has_value ? o->value : NULL;
    switch (o->op) {
    case OP_CROP: return gaio_crop(s, src, o->roi, dst);
    case OP_BORDER: return gaio_copy_make_border(s, src, dst, o->top, o->left, (gaio_border)o->border, v);
    case OP_FLIP: return gaio_flip(s, src, dst, (gaio_flip_mode)o->mode);
    case OP_ROTATE: return gaio_rotate(s, src, dst, o->degrees);
    default: return gaio_warp_affine(s, src, dst, o->m, (gaio_interp)o->interp, o->flags, v);
    }
}

/* OpenCV's borderInterpolate, its loop as written there. */
static int ref_border_index(int p, int len, int type) {
    if ((unsigned)p < (unsigned)len) return p;
    if (type == GAIO_BORDER_REPLICATE) return p < 0 ? 0 : len - 1;
    if (type == GAIO_BORDER_REFLECT || type == GAIO_BORDER_REFLECT_101) {
        int delta = type == GAIO_BORDER_REFLECT_101;
        if (len == 1) return 0;
        do {
            if (p < 0) p = -p - 1 + delta;
            else p = len - 1 - (p - len) - delta;
        } while ((unsigned)p >= (unsigned)len);
        return p;
    }
    if (type == GAIO_BORDER_WRAP) {
        if (p < 0) p -= ((p - len + 1) / len) * len;
        if (p >= len) p %= len;
        return p;
    }
    return -1;
}

/* value rounded (nearest even) and saturated to the dtype, as element bytes; f16
 * for the values of VALUES (all exact in binary16). */
static void ref_element(gaio_dtype dt, float v, uint8_t *out) {
    switch (dt) {
    case GAIO_DTYPE_U8: out[0] = (uint8_t)fminf(fmaxf(rintf(v), 0), 255); break;
    case GAIO_DTYPE_U16: {
        uint16_t u = (uint16_t)fminf(fmaxf(rintf(v), 0), 65535);
        memcpy(out, &u, 2);
        break;
    }
    case GAIO_DTYPE_S16: {
        int16_t u = (int16_t)fminf(fmaxf(rintf(v), -32768), 32767);
        memcpy(out, &u, 2);
        break;
    }
    case GAIO_DTYPE_F16: {
        uint16_t h = 0;
        if (v != 0) {
            int ex;
            float f = frexpf(fabsf(v), &ex); /* |v| = f * 2^ex, f in [0.5, 1) */
            h = (uint16_t)(((ex + 14) << 10) | ((uint32_t)(f * 2048) & 0x3ff));
            if (v < 0) h |= 0x8000;
        }
        memcpy(out, &h, 2);
        break;
    }
    case GAIO_DTYPE_F32: memcpy(out, &v, 4); break;
    case GAIO_DTYPE_S32:
    case GAIO_DTYPE_S64:
    case GAIO_DTYPE_BF16: break; /* not image types */
    }
}

/* Expected dst bytes of a copy op: dst's buffer as it was, with every pixel written
 * from src (or the constant) by the op's definition. */
static void ref_copy(const opspec *o, const simg *src, simg *dst) {
    const gaio_image *s = &src->im, *d = &dst->im;
    size_t pb = pixel_size(d), e = gaio_dtype_size(d->dtype);
    int chw = d->layout == GAIO_LAYOUT_CHW;
    for (int z = 0; z < nplanes(d); z++) {
        uint8_t cpix[256] = {0};
        if (o->op == OP_BORDER && o->has_value && o->border == GAIO_BORDER_CONSTANT) {
            int c0 = chw ? z % d->channels : 0;
            for (size_t k = 0; k < pb / e; k++)
                if (c0 + (int)k < 4) ref_element(d->dtype, o->value[c0 + (int)k], cpix + k * e);
        }
        for (int y = 0; y < d->height; y++)
            for (int x = 0; x < d->width; x++) {
                int sx = x, sy = y;
                switch (o->op) {
                case OP_CROP:
                    sx = x + o->roi.x;
                    sy = y + o->roi.y;
                    break;
                case OP_BORDER:
                    sx = ref_border_index(x - o->left, s->width, o->border);
                    sy = ref_border_index(y - o->top, s->height, o->border);
                    break;
                case OP_FLIP:
                    if (o->mode & GAIO_FLIP_HORIZONTAL) sx = s->width - 1 - x;
                    if (o->mode & GAIO_FLIP_VERTICAL) sy = s->height - 1 - y;
                    break;
                case OP_ROTATE:
                    if (o->degrees == 90) sx = y, sy = s->height - 1 - x;
                    else if (o->degrees == 270) sx = s->width - 1 - y, sy = x;
                    else sx = s->width - 1 - x, sy = s->height - 1 - y;
                    break;
                }
                const uint8_t *from = sx < 0 || sy < 0 ? cpix : src->host + pix_at(s, z, sy, sx);
                memcpy(dst->host + pix_at(d, z, y, x), from, pb);
            }
    }
}

/* Copies the pixels of image `from` (strides of its own) into those of `to`. */
static void copy_pixels(const simg *from, simg *to) {
    size_t pb = pixel_size(&to->im);
    for (int z = 0; z < nplanes(&to->im); z++)
        for (int y = 0; y < to->im.height; y++)
            memcpy(to->host + pix_at(&to->im, z, y, 0), from->host + pix_at(&from->im, z, y, 0),
                   pb * (size_t)to->im.width);
}

static gaio_dtype random_dtype(uint64_t *r, int warp) {
    static const gaio_dtype all[5] = {GAIO_DTYPE_U8, GAIO_DTYPE_U16, GAIO_DTYPE_S16, GAIO_DTYPE_F16, GAIO_DTYPE_F32};
    static const gaio_dtype wd[3] = {GAIO_DTYPE_U8, GAIO_DTYPE_U16, GAIO_DTYPE_F32};
    return warp ? wd[rnd(r, 0, 2)] : all[rnd(r, 0, 4)];
}

/* Runs o on the stream over src and a fresh dst (shapes from the spec) and returns
 * dst's buffer contents. */
static void run_on(gaio_stream *s, const opspec *o, simg *src, simg *dst, uint8_t *out) {
    simg_upload(s, src);
    simg_upload(s, dst);
    OK(op_run(s, o, &src->im, &dst->im));
    tbuf_download(s, dst->im.buffer, out, dst->bytes);
    OK(gaio_buffer_release(src->im.buffer));
    OK(gaio_buffer_release(dst->im.buffer));
    src->im.buffer = dst->im.buffer = NULL;
}

static int compare_bytes(const char *what, const uint8_t *got, const uint8_t *want, size_t n, gaio_dtype dt,
                         int tolerant) {
    if (!memcmp(got, want, n)) return 1;
    if (tolerant) { /* warp_affine's tolerances, values compared as the dtype */
        size_t e = gaio_dtype_size(dt);
        double tol = dt == GAIO_DTYPE_F32 ? 1e-5 : 1;
        return expect_close(what, got, want, n / e, dt, tol, dt == GAIO_DTYPE_F32 ? 1e-5 : 0);
    }
    size_t i = 0;
    while (got[i] == want[i]) i++;
    fprintf(stderr, "%s: byte %zu of %zu is 0x%02x, expected 0x%02x\n", what, i, n, got[i], want[i]);
    return 0;
}

/* Random ops on strided and ROI images on the test's device against references;
 * on a GPU also against the host backend (hs: a stream of a host context). */
static void test_strides(gaio_stream *s, gaio_stream *hs, uint64_t *r, int iters) {
    int failed = 0;
    for (int it = 0; it < iters; it++) {
        int op = it % OP_COUNT;
        gaio_dtype dt = random_dtype(r, op == OP_WARP);
        gaio_layout lay = rnd(r, 0, 2) ? GAIO_LAYOUT_HWC : GAIO_LAYOUT_CHW;
        int c = (int)rnd(r, 1, 4);
        if (op != OP_WARP && lay == GAIO_LAYOUT_HWC && rnd(r, 0, 4) == 0) c = (int)rnd(r, 5, 8);
        int n = (int)rnd(r, 1, 3);
        int w = (int)(rnd(r, 0, 3) ? rnd(r, 1, 40) : rnd(r, 100, 700));
        int h = (int)(rnd(r, 0, 3) ? rnd(r, 1, 40) : rnd(r, 60, 300));
        if (it % 7 == 0) w = h = 1;
        opspec o = random_spec(r, op, w, h);
        if (op == OP_BORDER && c > 4) o.has_value = 0;
        /* src: padded strides, or an ROI view inside a larger image */
        simg src;
        if (rnd(r, 0, 2) == 0) {
            int bw = w + (int)rnd(r, 0, 9), bh = h + (int)rnd(r, 0, 5);
            src = simg_make(r, dt, lay, n, bw, bh, c, 0);
            int x = (int)rnd(r, 0, (size_t)(bw - w)), y = (int)rnd(r, 0, (size_t)(bh - h));
            size_t e = gaio_dtype_size(dt), px = e * (lay == GAIO_LAYOUT_HWC ? (size_t)c : 1);
            src.im.offset += (size_t)y * src.im.row_pitch + (size_t)x * px;
            src.im.width = w;
            src.im.height = h;
        } else {
            src = simg_make(r, dt, lay, n, w, h, c, (int)rnd(r, 0, 3) == 0);
        }
        simg dst = simg_make(r, dt, lay, n, o.dw, o.dh, c, (int)rnd(r, 0, 3) == 0);
        uint8_t *got = tmalloc(dst.bytes), *want = tmalloc(dst.bytes);
        memcpy(want, dst.host, dst.bytes);
        char what[200];
        snprintf(what, sizeof what, "%s %d x %dx%dx%d %s %s -> %dx%d (iteration %d)", OP_NAME[op], n, w, h, c,
                 gaio_dtype_name(dt), lay == GAIO_LAYOUT_HWC ? "HWC" : "CHW", o.dw, o.dh, it);
        run_on(s, &o, &src, &dst, got);
        if (op != OP_WARP) {
            simg ref = dst;
            ref.host = want;
            ref_copy(&o, &src, &ref);
        } else {
            /* the same warp over packed copies of the images, on the same device */
            simg ps = simg_make(r, dt, lay, n, w, h, c, 1), pd = simg_make(r, dt, lay, n, o.dw, o.dh, c, 1);
            copy_pixels(&src, &ps);
            uint8_t *pout = tmalloc(pd.bytes);
            run_on(s, &o, &ps, &pd, pout);
            memcpy(pd.host, pout, pd.bytes);
            simg ref = dst;
            ref.host = want;
            copy_pixels(&pd, &ref);
            free(pout);
            simg_free(&ps);
            simg_free(&pd);
        }
        if (!compare_bytes(what, got, want, dst.bytes, dt, 0)) failed++;
        if (hs) { /* the host backend on the same inputs */
            uint8_t *host_out = tmalloc(dst.bytes);
            run_on(hs, &o, &src, &dst, host_out);
            char w2[240];
            snprintf(w2, sizeof w2, "cuda vs cpu: %s", what);
            if (!compare_bytes(w2, got, host_out, dst.bytes, dt, op == OP_WARP)) failed++;
            free(host_out);
        }
        free(got);
        free(want);
        simg_free(&src);
        simg_free(&dst);
    }
    printf("  %-48s ok\n", hs ? "strided/ROI batches, cuda == cpu == reference" : "strided/ROI batches == reference");
    CHECK(failed == 0);
}

/* ---- bad input ---- */

#define BAD_ARG(call, fn, word) EXPECT_INVALID(call, fn, word)
#define UNSUPPORTED(call, fn, word) EXPECT_UNSUPPORTED(call, fn, word)

static void test_bad_input(int device, gaio_context *ctx, gaio_stream *s) {
    const int W = 8, H = 6, C = 3;
    timg src = timg_new(s, GAIO_DTYPE_U8, GAIO_LAYOUT_HWC, 1, W, H, C);
    timg dst = timg_new(s, GAIO_DTYPE_U8, GAIO_LAYOUT_HWC, 1, W, H, C);   /* flip, crop, warp */
    timg rdst = timg_new(s, GAIO_DTYPE_U8, GAIO_LAYOUT_HWC, 1, H, W, C);  /* rotate 90 */
    timg bdst = timg_new(s, GAIO_DTYPE_U8, GAIO_LAYOUT_HWC, 1, W + 4, H + 2, C); /* border */
    const gaio_image *S = &src.im, *D = &dst.im, *RD = &rdst.im, *BD = &bdst.im;
    gaio_rect roi = {1, 1, W, H};
    gaio_rect full = {0, 0, W, H};
    const double m[6] = {1, 0, 0.5, 0, 1, 0.25};
    const float val[4] = {1, 2, 3, 4};

    /* NULL stream, src, dst */
    BAD_ARG(gaio_flip(NULL, S, D, GAIO_FLIP_HORIZONTAL), "gaio_flip", "stream");
    BAD_ARG(gaio_crop(s, NULL, full, D), "gaio_crop", "src");
    BAD_ARG(gaio_rotate(s, S, NULL, 90), "gaio_rotate", "dst");
    BAD_ARG(gaio_copy_make_border(NULL, S, BD, 1, 2, GAIO_BORDER_REFLECT, NULL), "gaio_copy_make_border", "stream");
    BAD_ARG(gaio_warp_affine(s, S, NULL, m, GAIO_INTERP_LINEAR, 0, NULL), "gaio_warp_affine", "dst");

    /* mismatched dtype, layout, channels, batch, shape */
    gaio_image x = *D;
    x.dtype = GAIO_DTYPE_U16;
    x.width = W / 2; /* the same bytes */
    BAD_ARG(gaio_flip(s, S, &x, GAIO_FLIP_VERTICAL), "gaio_flip", "dtype");
    x = *D;
    x.layout = GAIO_LAYOUT_CHW;
    BAD_ARG(gaio_warp_affine(s, S, &x, m, GAIO_INTERP_LINEAR, 0, NULL), "gaio_warp_affine", "layout");
    x = *D;
    x.channels = 1;
    BAD_ARG(gaio_crop(s, S, full, &x), "gaio_crop", "channels");
    x = *D;
    x.batch = 2;
    x.height = H / 2;
    BAD_ARG(gaio_rotate(s, S, &x, 180), "gaio_rotate", "batch");
    x = *D;
    x.width = W - 1;
    BAD_ARG(gaio_flip(s, S, &x, GAIO_FLIP_BOTH), "gaio_flip", "dst is 7x6");
    BAD_ARG(gaio_rotate(s, S, D, 90), "gaio_rotate", "dst is 8x6");
    BAD_ARG(gaio_crop(s, S, (gaio_rect){0, 0, W - 1, H}, D), "gaio_crop", "dst is");

    /* a descriptor larger than its buffer */
    x = *D;
    x.row_pitch = (size_t)W * C * 2;
    BAD_ARG(gaio_flip(s, S, &x, GAIO_FLIP_HORIZONTAL), "gaio_flip", "buffer");
    x = *S;
    x.offset = 1;
    BAD_ARG(gaio_copy_make_border(s, &x, BD, 1, 2, GAIO_BORDER_WRAP, NULL), "gaio_copy_make_border", "src");

    /* unsupported combinations */
    x = *D;
    x.layout = GAIO_LAYOUT_NV12;
    gaio_image y = *S;
    y.layout = GAIO_LAYOUT_NV12;
    UNSUPPORTED(gaio_flip(s, &y, &x, GAIO_FLIP_HORIZONTAL), "gaio_flip", "src");
    x = *D;
    x.dtype = GAIO_DTYPE_F16;
    x.width = W / 2;
    y = *S;
    y.dtype = GAIO_DTYPE_F16;
    y.width = W / 2;
    UNSUPPORTED(gaio_warp_affine(s, &y, &x, m, GAIO_INTERP_LINEAR, 0, NULL), "gaio_warp_affine", "f16");
    UNSUPPORTED(gaio_warp_affine(s, S, D, m, GAIO_INTERP_CUBIC, 0, NULL), "gaio_warp_affine", "interp");
    x = *BD;
    x.channels = 6;
    x.width = 6; /* 36 bytes a row: within the buffer */
    y = *S;
    y.channels = 6;
    y.width = 2;
    UNSUPPORTED(gaio_copy_make_border(s, &y, &x, 1, 2, GAIO_BORDER_CONSTANT, val), "gaio_copy_make_border", "value");

    /* bad parameters */
    BAD_ARG(gaio_flip(s, S, D, (gaio_flip_mode)0), "gaio_flip", "mode");
    BAD_ARG(gaio_flip(s, S, D, (gaio_flip_mode)4), "gaio_flip", "mode");
    BAD_ARG(gaio_rotate(s, S, RD, 45), "gaio_rotate", "degrees");
    BAD_ARG(gaio_rotate(s, S, RD, -90), "gaio_rotate", "degrees");
    BAD_ARG(gaio_crop(s, S, roi, D), "gaio_crop", "roi");
    BAD_ARG(gaio_crop(s, S, (gaio_rect){0, 0, 0, H}, D), "gaio_crop", "roi");
    BAD_ARG(gaio_copy_make_border(s, S, BD, -1, 2, GAIO_BORDER_REFLECT, NULL), "gaio_copy_make_border", "top");
    BAD_ARG(gaio_copy_make_border(s, S, BD, 1, 5, GAIO_BORDER_REFLECT, NULL), "gaio_copy_make_border", "dst");
    BAD_ARG(gaio_copy_make_border(s, S, BD, 1, 2, (gaio_border)7, NULL), "gaio_copy_make_border", "border");
    BAD_ARG(gaio_warp_affine(s, S, D, NULL, GAIO_INTERP_LINEAR, 0, NULL), "gaio_warp_affine", "m is NULL");
    const double mnan[6] = {1, 0, NAN, 0, 1, 0};
    BAD_ARG(gaio_warp_affine(s, S, D, mnan, GAIO_INTERP_LINEAR, 0, NULL), "gaio_warp_affine", "m[2]");
    BAD_ARG(gaio_warp_affine(s, S, D, m, (gaio_interp)9, 0, val), "gaio_warp_affine", "interp");
    BAD_ARG(gaio_warp_affine(s, S, D, m, GAIO_INTERP_NEAREST, 2, val), "gaio_warp_affine", "flags");

    /* in place */
    BAD_ARG(gaio_flip(s, S, S, GAIO_FLIP_HORIZONTAL), "gaio_flip", "overlaps");
    BAD_ARG(gaio_warp_affine(s, D, D, m, GAIO_INTERP_LINEAR, 0, NULL), "gaio_warp_affine", "overlaps");

    /* HOST (pageable) memory */
    gaio_buffer *pageable;
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_HOST, src.bytes, &pageable));
    x = *S;
    x.buffer = pageable;
    BAD_ARG(gaio_flip(s, &x, D, GAIO_FLIP_HORIZONTAL), "gaio_flip", "HOST (pageable)");
    BAD_ARG(gaio_crop(s, &x, full, D), "gaio_crop", "src");
    OK(gaio_buffer_release(pageable));

    /* a buffer of another device (the host backend's DEVICE memory on a GPU's stream) */
    int count = 0;
    OK(gaio_device_count(&count));
    if (count > 1) {
        int other = device == 0 ? 1 : 0;
        gaio_context *octx;
        OK(gaio_context_create(other, NULL, &octx));
        gaio_buffer *ob;
        OK(gaio_buffer_alloc(octx, GAIO_MEM_DEVICE, dst.bytes, &ob));
        x = *D;
        x.buffer = ob;
        BAD_ARG(gaio_rotate(s, S, &x, 180), "gaio_rotate", "dst");
        BAD_ARG(gaio_warp_affine(s, S, &x, m, GAIO_INTERP_NEAREST, 0, NULL), "gaio_warp_affine", "device");
        OK(gaio_buffer_release(ob));
        OK(gaio_context_release(octx));
    }

    /* nothing ran: every dst still holds the poison */
    timg_expect_poison(s, &dst);
    timg_expect_poison(s, &rdst);
    timg_expect_poison(s, &bdst);
    OK(gaio_stream_synchronize(s));
    timg_free(&src);
    timg_free(&dst);
    timg_free(&rdst);
    timg_free(&bdst);
    printf("  %-48s ok\n", "bad input rejected, nothing enqueued");
}

static void run(int device) {
    uint64_t seed = test_seed(), r = seed;
    gaio_context *ctx;
    OK(gaio_context_create(device, NULL, &ctx));
    gaio_stream *s;
    OK(gaio_stream_create(ctx, 0, 0, &s));

    test_golden(s);
    test_bad_input(device, ctx, s);

    gaio_context *hctx;
    gaio_stream *hs = thost_open(device, &hctx); /* NULL but on a GPU */
    test_strides(s, hs, &r, hs ? 300 : 120);
    thost_close(hs, hctx);
    OK(gaio_stream_release(s));
    OK(gaio_context_release(ctx));
}
