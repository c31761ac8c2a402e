/* Helpers for the image op tests; include after ../common.h.
 *
 *   npy files     npy_load: the arrays tests/image/golden_*.py write with numpy
 *                 (OpenCV's results on seeded random inputs)
 *   images        timg_new / timg_upload / timg_download / timg_free: a host array
 *                 and a gaio image of the same shape on the test's device
 *   random data   trand_fill: every dtype, never all zeros
 *   strided       tgeom / timg_strided / timg_get: an image with padded rows, planes
 *                 and images (and an offset) filled from packed data, read back packed;
 *                 timg_scatter / timg_gather copy between packed data and such a layout
 *   comparison    expect_close: max |got - want| over an array, the first bad index;
 *                 timg_expect_close: an image's packed contents against a golden array;
 *                 timg_expect_poison: nothing touched an image's poisoned buffer
 *   contexts      tctx_open / tctx_close: the test's context and stream, and on a CUDA
 *                 device a stream of the CPU backend to compare with (thost_open /
 *                 thost_close alone)
 *   bad input     EXPECT_REFUSED / EXPECT_INVALID / EXPECT_UNSUPPORTED: the call fails
 *                 with the status, names the function, and its message names `needle`
 *   memory        tmalloc: malloc that exits on failure
 *
 * Golden files live in the directory named by GAIO_GOLDEN_DIR (set by ctest). Where the
 * OpenCV of the machine is not 4.6 (the semantics gaio follows), golden_*.py write no
 * data there but a file SKIP saying so: golden_available() then prints "golden
 * comparisons SKIPPED: <why>" and the test's other checks still run; a test that has no
 * other checks calls golden_require(), which exits 77 (a skip) instead. */
#ifndef GAIO_TEST_IMAGE_TEST_H
#define GAIO_TEST_IMAGE_TEST_H

#include <gaio/image.h>
#include <math.h>

/* ---- .npy (format 1.0 / 2.0, C order, little endian) ---- */

typedef struct npy_array {
    gaio_dtype dtype;
    int ndim;
    int64_t shape[4];
    size_t count, bytes;
    void *data;
} npy_array;

static inline const char *golden_dir(void) {
    const char *d = getenv("GAIO_GOLDEN_DIR");
    if (!d) {
        fprintf(stderr, "GAIO_GOLDEN_DIR is not set (ctest sets it; the golden_* fixture writes the files)\n");
        exit(1);
    }
    return d;
}

/* Why GAIO_GOLDEN_DIR holds no golden data: the text of the SKIP file golden_*.py wrote
 * in its place (this OpenCV is not 4.6), or NULL when there is none (the data is there). */
static inline const char *golden_skip_reason(void) {
    static char why[1536]; /* room for the path in the message below */
    char path[1024];
    snprintf(path, sizeof path, "%s/SKIP", golden_dir());
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    size_t n = fread(why, 1, sizeof why - 1, f);
    fclose(f);
    while (n && (why[n - 1] == '\n' || why[n - 1] == '\r' || why[n - 1] == ' ')) n--;
    why[n] = 0;
    if (!n) snprintf(why, sizeof why, "%s says so without a reason", path);
    return why;
}

/* Whether the golden comparisons of `what` can run: 0 (after a line "golden comparisons
 * SKIPPED: ...", naming the OpenCV) when GAIO_GOLDEN_DIR holds golden_*.py's SKIP. */
static inline int golden_available(const char *what) {
    const char *why = golden_skip_reason();
    if (!why) return 1;
    printf("%s: golden comparisons SKIPPED: %s\n", what, why);
    fflush(stdout);
    return 0;
}

/* For a test that checks nothing but golden data: skips the whole test (exit 77) when
 * there is none. */
static inline void golden_require(const char *what) {
    const char *why = golden_skip_reason();
    if (why) test_skip("%s compares with golden data only, and there is none: %s", what, why);
}

/* Loads GAIO_GOLDEN_DIR/name; exits with a message on any problem. */
static inline npy_array npy_load(const char *name) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", golden_dir(), name);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open golden file %s\n", path);
        exit(1);
    }
    unsigned char pre[10];
    CHECK(fread(pre, 1, 10, f) == 10 && memcmp(pre, "\x93NUMPY", 6) == 0);
    size_t hlen = pre[8] | (size_t)pre[9] << 8;
    if (pre[6] >= 2) {
        unsigned char more[2];
        CHECK(fread(more, 1, 2, f) == 2);
        hlen |= (size_t)more[0] << 16 | (size_t)more[1] << 24;
    }
    char *h = calloc(1, hlen + 1);
    CHECK(h && fread(h, 1, hlen, f) == hlen);
    npy_array a = {0};
    const char *d = strstr(h, "'descr':");
    CHECK(d);
    d = strchr(d + 8, '\'');
    CHECK(d);
    d++;
    if (!strncmp(d, "|u1", 3)) a.dtype = GAIO_DTYPE_U8;
    else if (!strncmp(d, "<u2", 3)) a.dtype = GAIO_DTYPE_U16;
    else if (!strncmp(d, "<i2", 3)) a.dtype = GAIO_DTYPE_S16;
    else if (!strncmp(d, "<f2", 3)) a.dtype = GAIO_DTYPE_F16;
    else if (!strncmp(d, "<f4", 3)) a.dtype = GAIO_DTYPE_F32;
    else {
        fprintf(stderr, "%s: unsupported dtype in header %s\n", path, h);
        exit(1);
    }
    CHECK(strstr(h, "'fortran_order': False"));
    const char *s = strstr(h, "'shape':");
    CHECK(s);
    s = strchr(s, '(');
    CHECK(s);
    s++;
    a.count = 1;
    while (*s && *s != ')') {
        while (*s == ' ' || *s == ',') s++;
        if (*s == ')') break;
        CHECK(a.ndim < 4);
        char *end;
        a.shape[a.ndim] = strtoll(s, &end, 10);
        CHECK(end != s);
        a.count *= (size_t)a.shape[a.ndim++];
        s = end;
    }
    a.bytes = a.count * gaio_dtype_size(a.dtype);
    a.data = malloc(a.bytes ? a.bytes : 1);
    CHECK(a.data && fread(a.data, 1, a.bytes, f) == a.bytes);
    fclose(f);
    free(h);
    return a;
}

static inline void npy_free(npy_array *a) {
    free(a->data);
    a->data = NULL;
}

/* malloc(n), never NULL (exits on failure; n == 0 gives a valid pointer). */
static inline void *tmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    CHECK(p);
    return p;
}

/* ---- random data ---- */

/* Uniform over the dtype's range (u8, u16, s16) or over [-lo, hi) for floats. */
static inline void trand_fill(void *data, size_t count, gaio_dtype dtype, uint64_t *seed, float lo, float hi) {
    for (size_t i = 0; i < count; i++) {
        uint64_t r = test_rand(seed);
        float u = (float)((r >> 40) * (1.0 / 16777216.0));
        switch (dtype) {
        case GAIO_DTYPE_U8: ((uint8_t *)data)[i] = (uint8_t)(r >> 56); break;
        case GAIO_DTYPE_U16: ((uint16_t *)data)[i] = (uint16_t)(r >> 48); break;
        case GAIO_DTYPE_S16: ((int16_t *)data)[i] = (int16_t)(r >> 48); break;
        case GAIO_DTYPE_F16: {
            float v = lo + (hi - lo) * u;
            /* exact in f16: a multiple of 1/256 in [-64, 64) */
            v = floorf(v * 256.0f) / 256.0f;
            v = v < -64 ? -64 : v >= 64 ? 63.99609375f : v;
            uint32_t bits;
            memcpy(&bits, &v, 4);
            /* f32 -> f16 for values exact in f16: keep sign, rebias exponent */
            uint16_t h;
            if (v == 0) h = (uint16_t)((bits >> 16) & 0x8000u);
            else h = (uint16_t)(((bits >> 16) & 0x8000u) | ((((bits >> 23) & 0xff) - 112) << 10) | ((bits >> 13) & 0x3ff));
            ((uint16_t *)data)[i] = h;
            break;
        }
        case GAIO_DTYPE_F32: ((float *)data)[i] = lo + (hi - lo) * u; break;
        case GAIO_DTYPE_S32: ((int32_t *)data)[i] = (int32_t)(r >> 32); break;
        case GAIO_DTYPE_S64: ((int64_t *)data)[i] = (int64_t)r; break;
        case GAIO_DTYPE_BF16: ((uint16_t *)data)[i] = (uint16_t)(r >> 48); break; /* not an image type */
        }
    }
}

/* A malloc'd array of `count` random elements (trand_fill); free() it. */
static inline void *trand_new(gaio_dtype dtype, size_t count, uint64_t *seed, float lo, float hi) {
    void *d = tmalloc(count * gaio_dtype_size(dtype));
    trand_fill(d, count, dtype, seed, lo, hi);
    return d;
}

/* ---- images on the test's device ---- */

typedef struct timg {
    gaio_image im; /* packed unless the test changes strides before upload */
    size_t bytes;  /* buffer size */
} timg;

/* An image whose buffer is DEVICE memory of the stream's device, filled with 0xCD
 * bytes (a poison value: a pixel the op never wrote shows up in comparisons). */
static inline timg timg_new(gaio_stream *s, gaio_dtype dt, gaio_layout layout, int32_t batch, int32_t w, int32_t h,
                            int32_t c) {
    timg t = {0};
    t.im = gaio_image_make(NULL, 0, dt, layout, batch, w, h, c);
    size_t e = gaio_dtype_size(dt);
    if (layout == GAIO_LAYOUT_NV12 || layout == GAIO_LAYOUT_I420) t.bytes = (size_t)batch * w * h * 3 / 2;
    else t.bytes = (size_t)batch * w * h * c * e;
    OK(gaio_buffer_alloc_async(s, GAIO_MEM_DEVICE, t.bytes, &t.im.buffer));
    OK(gaio_memset_async(s, t.im.buffer, 0, 0xCD, t.bytes));
    return t;
}

/* Copies `bytes` of host data into the start of a buffer, through pinned memory. */
static inline void tbuf_upload(gaio_stream *s, gaio_buffer *dst, const void *data, size_t bytes) {
    gaio_context *ctx;
    OK(gaio_stream_context(s, &ctx));
    gaio_buffer *pin;
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_PINNED, bytes, &pin));
    void *p;
    OK(gaio_buffer_host_ptr(pin, &p));
    memcpy(p, data, bytes);
    OK(gaio_memcpy_async(s, dst, 0, pin, 0, bytes));
    OK(gaio_buffer_release(pin));
}

/* Waits for the stream, then copies the start of a buffer to host memory. */
static inline void tbuf_download(gaio_stream *s, gaio_buffer *src, void *data, size_t bytes) {
    gaio_context *ctx;
    OK(gaio_stream_context(s, &ctx));
    gaio_buffer *pin;
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_PINNED, bytes, &pin));
    OK(gaio_memcpy_async(s, pin, 0, src, 0, bytes));
    OK(gaio_stream_synchronize(s));
    void *p;
    OK(gaio_buffer_host_ptr(pin, &p));
    memcpy(data, p, bytes);
    OK(gaio_buffer_release(pin));
}

static inline void timg_upload(gaio_stream *s, timg *t, const void *data) { tbuf_upload(s, t->im.buffer, data, t->bytes); }
static inline void timg_download(gaio_stream *s, const timg *t, void *data) {
    tbuf_download(s, t->im.buffer, data, t->bytes);
}
static inline void timg_free(timg *t) {
    OK(gaio_buffer_release(t->im.buffer));
    t->im.buffer = NULL;
}

/* ---- images with any strides (HWC and CHW) ---- */

typedef struct tgeom {
    size_t offset, row_pad, plane_pad, image_pad; /* bytes, rounded down to the element size */
    const char *name;
} tgeom;

static inline size_t timg_planes(const gaio_image *im) {
    return im->layout == GAIO_LAYOUT_CHW ? (size_t)im->channels : 1;
}
static inline size_t timg_row_elems(const gaio_image *im) {
    return (size_t)im->width * (im->layout == GAIO_LAYOUT_HWC ? (size_t)im->channels : 1);
}
/* Elements of the whole batch. */
static inline size_t timg_elems(const gaio_image *im) {
    return (size_t)im->batch * timg_planes(im) * (size_t)im->height * timg_row_elems(im);
}
/* Byte offset of row y of plane p of image n (strides resolved). */
static inline size_t timg_row_at(const gaio_image *im, size_t n, size_t p, size_t y) {
    return im->offset + n * im->image_stride + p * im->plane_pitch + y * im->row_pitch;
}

/* Copies rows from packed data into a buffer laid out as im (strides resolved). */
static inline void timg_scatter(const gaio_image *im, unsigned char *buf, const void *packed) {
    size_t rb = timg_row_elems(im) * gaio_dtype_size(im->dtype);
    for (size_t k = 0, r = 0; k < (size_t)im->batch; k++)
        for (size_t p = 0; p < timg_planes(im); p++)
            for (size_t y = 0; y < (size_t)im->height; y++, r++)
                memcpy(buf + timg_row_at(im, k, p, y), (const char *)packed + r * rb, rb);
}
/* The reverse: the rows of im in buf, packed. */
static inline void timg_gather(const gaio_image *im, const unsigned char *buf, void *packed) {
    size_t rb = timg_row_elems(im) * gaio_dtype_size(im->dtype);
    for (size_t k = 0, r = 0; k < (size_t)im->batch; k++)
        for (size_t p = 0; p < timg_planes(im); p++)
            for (size_t y = 0; y < (size_t)im->height; y++, r++)
                memcpy((char *)packed + r * rb, buf + timg_row_at(im, k, p, y), rb);
}

/* A DEVICE image of the stream's device with geometry g (explicit strides), the rest
 * of its buffer 0xCD; holds `packed` (NULL: poison only). */
static inline timg timg_strided(gaio_stream *s, gaio_dtype dt, gaio_layout lay, int n, int w, int h, int c,
                                tgeom g, const void *packed) {
    timg t;
    size_t e = gaio_dtype_size(dt);
    t.im = gaio_image_make(NULL, g.offset - g.offset % e, dt, lay, n, w, h, c);
    t.im.row_pitch = timg_row_elems(&t.im) * e + g.row_pad - g.row_pad % e;
    t.im.plane_pitch = lay == GAIO_LAYOUT_CHW ? t.im.row_pitch * (size_t)h + g.plane_pad - g.plane_pad % e : 0;
    t.im.image_stride = (lay == GAIO_LAYOUT_CHW ? t.im.plane_pitch * (size_t)c : t.im.row_pitch * (size_t)h) +
                        g.image_pad - g.image_pad % e;
    t.bytes = t.im.offset + t.im.image_stride * (size_t)n;
    unsigned char *host = tmalloc(t.bytes);
    memset(host, 0xCD, t.bytes);
    if (packed) timg_scatter(&t.im, host, packed);
    OK(gaio_buffer_alloc_async(s, GAIO_MEM_DEVICE, t.bytes, &t.im.buffer));
    tbuf_upload(s, t.im.buffer, host, t.bytes);
    free(host);
    return t;
}

/* Waits for the stream; the image's elements (HWC or CHW, any strides), packed. */
static inline void timg_get(gaio_stream *s, const timg *t, void *out) {
    gaio_image r;
    OK(gaio_image_check(&t->im, &r, NULL));
    unsigned char *host = tmalloc(t->bytes);
    tbuf_download(s, t->im.buffer, host, t->bytes);
    timg_gather(&r, host, out);
    free(host);
}

/* ---- comparison ---- */

static inline double tval(const void *data, size_t i, gaio_dtype dt) {
    switch (dt) {
    case GAIO_DTYPE_U8: return ((const uint8_t *)data)[i];
    case GAIO_DTYPE_U16: return ((const uint16_t *)data)[i];
    case GAIO_DTYPE_S16: return ((const int16_t *)data)[i];
    case GAIO_DTYPE_F16: {
        uint16_t h = ((const uint16_t *)data)[i];
        int e = (h >> 10) & 0x1f, m = h & 0x3ff;
        double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m | 0x400, e - 25);
        return (h & 0x8000) ? -v : v;
    }
    case GAIO_DTYPE_F32: return ((const float *)data)[i];
    case GAIO_DTYPE_S32: return ((const int32_t *)data)[i];
    case GAIO_DTYPE_S64: return (double)((const int64_t *)data)[i];
    case GAIO_DTYPE_BF16: break; /* not an image type */
    }
    return NAN;
}

/* Every |got - want| <= abs_tol + rel_tol * |want| (NaN never passes). Prints the
 * largest error, and the first failure with its index; returns 1 when all pass. */
static inline int expect_close(const char *what, const void *got, const void *want, size_t count, gaio_dtype dt,
                               double abs_tol, double rel_tol) {
    double worst = 0;
    size_t bad = 0, first = (size_t)-1;
    for (size_t i = 0; i < count; i++) {
        double g = tval(got, i, dt), w = tval(want, i, dt), d = fabs(g - w);
        if (!(d <= abs_tol + rel_tol * fabs(w))) {
            if (first == (size_t)-1) first = i;
            bad++;
        }
        if (d > worst || d != d) worst = d;
    }
    if (bad) {
        fprintf(stderr, "%s: %zu of %zu values differ (max |diff| %g); first at index %zu: got %g, want %g\n", what,
                bad, count, worst, first, tval(got, first, dt), tval(want, first, dt));
        return 0;
    }
    printf("  %-48s ok (%zu values, max |diff| %g)\n", what, count, worst);
    return 1;
}

/* timg_get, then expect_close against a golden array of the same elements. */
static inline int timg_expect_close(gaio_stream *s, const timg *t, const char *what, const npy_array *want,
                                    double abs_tol, double rel_tol) {
    void *got = tmalloc(want->bytes);
    timg_get(s, t, got);
    int ok = expect_close(what, got, want->data, want->count, want->dtype, abs_tol, rel_tol);
    free(got);
    return ok;
}

/* Waits for the stream; every byte of the image's buffer still holds the 0xCD poison
 * (after refused calls: nothing was enqueued). */
static inline void timg_expect_poison(gaio_stream *s, const timg *t) {
    unsigned char *b = tmalloc(t->bytes);
    tbuf_download(s, t->im.buffer, b, t->bytes);
    for (size_t i = 0; i < t->bytes; i++) CHECK(b[i] == 0xCD);
    free(b);
}

/* ---- contexts ---- */

/* On a CUDA device, a stream of the CPU backend (device 0) to compare with, its
 * context in *host_ctx; otherwise NULL. */
static inline gaio_stream *thost_open(int device, gaio_context **host_ctx) {
    gaio_stream *hs = NULL;
    gaio_device_props p;
    *host_ctx = NULL;
    OK(gaio_device_get_props(device, &p));
    if (p.kind == GAIO_DEVICE_CUDA) {
        OK(gaio_context_create(0, NULL, host_ctx));
        OK(gaio_stream_create(*host_ctx, 0, 0, &hs));
    }
    return hs;
}

static inline void thost_close(gaio_stream *hs, gaio_context *host_ctx) {
    if (!hs) return;
    OK(gaio_stream_release(hs));
    OK(gaio_context_release(host_ctx));
}

typedef struct tctx {
    gaio_context *ctx, *host_ctx;
    gaio_stream *s;      /* on the test's device */
    gaio_stream *host_s; /* thost_open's: the CPU backend on a CUDA run, else NULL */
} tctx;

static inline tctx tctx_open(int device) {
    tctx t;
    OK(gaio_context_create(device, NULL, &t.ctx));
    OK(gaio_stream_create(t.ctx, 0, 0, &t.s));
    t.host_s = thost_open(device, &t.host_ctx);
    return t;
}

/* Waits for the test's stream, then releases everything. */
static inline void tctx_close(tctx *t) {
    OK(gaio_stream_synchronize(t->s));
    OK(gaio_stream_release(t->s));
    OK(gaio_context_release(t->ctx));
    thost_close(t->host_s, t->host_ctx);
}

/* ---- bad input ---- */

/* The call fails with `status`, its message names the function `fn` and contains
 * `needle` (the argument at fault). */
#define EXPECT_REFUSED(status, call, fn, needle)                                                              \
    do {                                                                                                      \
        FAILS(status, call, fn);                                                                              \
        if (!strstr(gaio_last_error(), needle)) {                                                             \
            fprintf(stderr, "%s:%d: %s: message does not name '%s': '%s'\n", __FILE__, __LINE__, #call, needle, \
                    gaio_last_error());                                                                       \
            exit(1);                                                                                          \
        }                                                                                                     \
    } while (0)
#define EXPECT_INVALID(call, fn, needle) EXPECT_REFUSED(GAIO_ERR_INVALID_ARG, call, fn, needle)
#define EXPECT_UNSUPPORTED(call, fn, needle) EXPECT_REFUSED(GAIO_ERR_NOT_SUPPORTED, call, fn, needle)

#endif
