/* Helpers for the image op tests; include after ../common.h.
 *
 *   npy files     npy_load: the arrays tests/image/golden_*.py write with numpy
 *                 (OpenCV's results on seeded random inputs)
 *   images        timg_new / timg_upload / timg_download / timg_free: a host array
 *                 and a gaio image of the same shape on the test's device
 *   random data   trand_fill: every dtype, never all zeros
 *   comparison    expect_close: max |got - want| over an array, the first bad index
 *
 * Golden files live in the directory named by GAIO_GOLDEN_DIR (set by ctest). */
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
        }
    }
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

#endif
