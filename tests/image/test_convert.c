/* gaio_convert, gaio_normalize and gaio_reformat against numpy's float64 results
 * (tests/image/golden_convert.py, which also checks them against OpenCV where its
 * Python binding can): every dtype pair of convert, plain and scaled; normalize
 * from every dtype to f32 and f16; reformat both ways for every dtype and 1 to 5
 * channels; HWC and CHW, batches, packed and padded memory. Then special values
 * (NaN, infinities, ties, saturation, every f16) against kimg.h's element rules,
 * in-place calls, and bad input. On a GPU run the CUDA results are compared with
 * the CPU backend's on fresh random inputs: packed batches (one long row), padded
 * rows that are 16-byte aligned (vector path) and not (element path), ROI views,
 * large images.
 *
 * Tolerances against numpy: integer dsts exact for plain conversions (ties are exact
 * in float), within 1 when scaled (gaio computes in float as convertTo does, numpy
 * in double); f32 1e-5 relative plus 1e-6 of the largest input magnitude; f16 1e-3
 * relative (one f16 ulp, from rounding twice). CUDA against CPU: convert and
 * reformat bit for bit (NaNs made by arithmetic only need to be NaN on both);
 * normalize f32 1e-5 relative, f16 1e-3 relative (they are designed to agree bit
 * for bit too; the printed max |diff| shows it). */
#include <stdbool.h>

#include "common.h"
#include "image/image_test.h"

/* The element rules both backends follow (rounding, saturation, f16): the oracle of
 * the special-value checks. */
#include "image/kimg.h"

/* ---- images with any strides ------------------------------------------------ */

static const tgeom PACKED = {0, 0, 0, 0, "packed"};
static const tgeom PADDED = {48, 24, 8, 40, "padded"};          /* rows not 16-byte aligned */
static const tgeom ALIGNED = {64, 32, 16, 48, "padded, aligned"}; /* aligned where the row bytes are */
static const tgeom ODD = {4, 12, 4, 20, "odd offset"};

/* The elements of view (an image in t's buffer), packed; checks that every byte of
 * the buffer outside view still holds its poison, or, with `outside` given, the
 * bytes the buffer was made with. */
static void gimg_get_view(gaio_stream *s, const timg *t, const gaio_image *view, void *out, const void *outside) {
    unsigned char *host = tmalloc(t->bytes), *want = tmalloc(t->bytes);
    tbuf_download(s, t->im.buffer, host, t->bytes);
    timg_gather(view, host, out);
    if (outside) memcpy(want, outside, t->bytes);
    else memset(want, 0xCD, t->bytes);
    timg_scatter(view, want, out);
    if (memcmp(want, host, t->bytes) != 0) {
        size_t i = 0;
        while (want[i] == host[i]) i++;
        fprintf(stderr, "a byte outside the image changed: offset %zu of %zu is 0x%02x, was 0x%02x\n", i, t->bytes,
                host[i], want[i]);
        exit(1);
    }
    free(host);
    free(want);
}
static void gimg_get(gaio_stream *s, const timg *t, void *out) { gimg_get_view(s, t, &t->im, out, NULL); }

/* ---- names ---- */

static gaio_dtype parse_dtype(const char *s) {
    static const char *names[] = {"u8", "u16", "s16", "f16", "f32"};
    for (int i = 0; i < 5; i++)
        if (!strcmp(s, names[i])) return (gaio_dtype)(i + 1);
    fprintf(stderr, "unknown dtype '%s' in cases.txt\n", s);
    exit(1);
}
static gaio_layout parse_layout(const char *s) {
    if (!strcmp(s, "HWC")) return GAIO_LAYOUT_HWC;
    if (!strcmp(s, "CHW")) return GAIO_LAYOUT_CHW;
    fprintf(stderr, "unknown layout '%s' in cases.txt\n", s);
    exit(1);
}
static bool is_int(gaio_dtype dt) { return dt == GAIO_DTYPE_U8 || dt == GAIO_DTYPE_U16 || dt == GAIO_DTYPE_S16; }

static double max_abs(const void *data, size_t count, gaio_dtype dt) {
    double m = 0;
    for (size_t i = 0; i < count; i++) {
        double v = fabs(tval(data, i, dt));
        if (v > m) m = v;
    }
    return m;
}

/* Equal element for element; NaN equals any NaN (payloads of NaNs made by arithmetic
 * differ between x86 and the GPU). */
static int expect_same(const char *what, const void *got, const void *want, size_t count, gaio_dtype dt) {
    size_t e = gaio_dtype_size(dt), bad = 0, first = 0;
    for (size_t i = 0; i < count; i++) {
        if (!memcmp((const char *)got + i * e, (const char *)want + i * e, e)) continue;
        if (!is_int(dt) && isnan(tval(got, i, dt)) && isnan(tval(want, i, dt))) continue;
        if (!bad++) first = i;
    }
    if (bad) {
        uint32_t g = 0, w = 0;
        memcpy(&g, (const char *)got + first * e, e);
        memcpy(&w, (const char *)want + first * e, e);
        fprintf(stderr, "%s: %zu of %zu values differ; first at index %zu: got %g (bits 0x%x), want %g (bits 0x%x)\n",
                what, bad, count, first, tval(got, first, dt), g, tval(want, first, dt), w);
        return 0;
    }
    printf("  %-60s same (%zu values)\n", what, count);
    return 1;
}

/* ---- golden cases ---------------------------------------------------------- */

typedef struct gcase {
    char op[16], id[16], a[8], b[8], lay[8];
    int n, w, h, c;
    double scale, offset;
    float mean[64], std[64];
} gcase;

static int parse_case(char *line, gcase *k) {
    memset(k, 0, sizeof *k);
    char *tok[200];
    int nt = 0;
    for (char *t = strtok(line, " \t\r\n"); t && nt < 200; t = strtok(NULL, " \t\r\n")) tok[nt++] = t;
    if (!nt) return 0;
    CHECK(strlen(tok[0]) < sizeof k->op && strlen(tok[1]) < sizeof k->id);
    strcpy(k->op, tok[0]);
    strcpy(k->id, tok[1]);
    if (!strcmp(k->op, "reformat")) {
        CHECK(nt == 8);
        strcpy(k->a, tok[2]);
        strcpy(k->b, tok[2]);
        strcpy(k->lay, tok[3]);
        k->n = atoi(tok[4]), k->w = atoi(tok[5]), k->h = atoi(tok[6]), k->c = atoi(tok[7]);
        return 1;
    }
    CHECK(nt >= 11);
    strcpy(k->a, tok[2]);
    strcpy(k->b, tok[3]);
    strcpy(k->lay, tok[4]);
    k->n = atoi(tok[5]), k->w = atoi(tok[6]), k->h = atoi(tok[7]), k->c = atoi(tok[8]);
    k->scale = strtod(tok[9], NULL);
    if (!strcmp(k->op, "convert")) {
        CHECK(nt == 11);
        k->offset = strtod(tok[10], NULL);
    } else {
        CHECK(!strcmp(k->op, "normalize") && k->c <= 64 && nt == 10 + 2 * k->c);
        for (int i = 0; i < k->c; i++) {
            k->mean[i] = strtof(tok[10 + i], NULL);
            k->std[i] = strtof(tok[10 + k->c + i], NULL);
        }
    }
    return 1;
}

static npy_array load_case(const gcase *k, const char *what) {
    char name[64];
    snprintf(name, sizeof name, "%s.%s.npy", k->id, what);
    return npy_load(name);
}

static void golden_case(gaio_stream *s, const gcase *k, tgeom g) {
    gaio_dtype sdt = parse_dtype(k->a), ddt = parse_dtype(k->b);
    gaio_layout sl = parse_layout(k->lay), dl = sl;
    if (!strcmp(k->op, "reformat")) dl = sl == GAIO_LAYOUT_HWC ? GAIO_LAYOUT_CHW : GAIO_LAYOUT_HWC;
    npy_array src = load_case(k, "src"), want = load_case(k, "dst");
    CHECK(src.dtype == sdt && want.dtype == ddt);
    CHECK(src.count == (size_t)k->n * k->w * k->h * k->c && want.count == src.count);
    timg a = timg_strided(s, sdt, sl, k->n, k->w, k->h, k->c, g, src.data);
    timg d = timg_strided(s, ddt, dl, k->n, k->w, k->h, k->c, g, NULL);
    char label[160];
    snprintf(label, sizeof label, "%s %s %s->%s %s %dx%dx%dx%d %s", k->op, k->id, k->a, k->b, k->lay, k->n, k->w,
             k->h, k->c, g.name);
    double abs_tol = 0, rel_tol = 0;
    if (!strcmp(k->op, "convert")) {
        OK(gaio_convert(s, &a.im, &d.im, k->scale, k->offset));
        bool plain = k->scale == 1.0 && k->offset == 0.0;
        if (!plain) {
            if (is_int(ddt)) abs_tol = 1;
            else {
                rel_tol = ddt == GAIO_DTYPE_F16 ? 1e-3 : 1e-5;
                abs_tol = 1e-6 * (max_abs(src.data, src.count, sdt) * fabs(k->scale) + fabs(k->offset)) + 6e-8;
            }
        }
    } else if (!strcmp(k->op, "normalize")) {
        OK(gaio_normalize(s, &a.im, &d.im, (float)k->scale, k->mean, k->std));
        double m = 0, r = 0;
        for (int i = 0; i < k->c; i++) {
            m = fmax(m, fabs(k->mean[i]));
            r = fmax(r, 1.0 / fabs(k->std[i]));
        }
        rel_tol = ddt == GAIO_DTYPE_F16 ? 1e-3 : 1e-5;
        abs_tol = 1e-6 * (max_abs(src.data, src.count, sdt) * fabs(k->scale) + m) * r + 6e-8;
    } else {
        OK(gaio_reformat(s, &a.im, &d.im));
    }
    void *got = tmalloc(want.bytes);
    gimg_get(s, &d, got);
    CHECK(expect_close(label, got, want.data, want.count, ddt, abs_tol, rel_tol));
    free(got);
    timg_free(&a);
    timg_free(&d);
    npy_free(&src);
    npy_free(&want);
}

static void golden(gaio_stream *s) {
    if (!golden_available("test_convert")) return; /* no OpenCV 4.6 here: the other checks still run */
    char path[1024];
    snprintf(path, sizeof path, "%s/cases.txt", golden_dir());
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "cannot open %s (golden_convert.py writes it)\n", path);
        exit(1);
    }
    char line[4096];
    int count = 0;
    while (fgets(line, sizeof line, f)) {
        gcase k;
        if (!parse_case(line, &k)) continue;
        golden_case(s, &k, PACKED);
        golden_case(s, &k, PADDED);
        count++;
    }
    fclose(f);
    CHECK(count > 100);
    printf("golden: %d cases, packed and padded\n", count);
}

/* ---- special values against kimg.h's rules ---------------------------------- */

static float bits_f(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* What gaio_convert must give for element v: kimg.h's store of v * a + b (float
 * arithmetic, no FMA: this file is ISO C). */
static void oracle_convert(const void *src, gaio_dtype sdt, size_t count, gaio_dtype ddt, float a, float b,
                           void *out) {
    bool plain = a == 1.0f && b == 0.0f;
    for (size_t i = 0; i < count; i++) {
        if (plain && sdt == ddt) {
            memcpy((char *)out + i * gaio_dtype_size(ddt), (const char *)src + i * gaio_dtype_size(sdt),
                   gaio_dtype_size(ddt));
            continue;
        }
        float v = gaio_k_load((const char *)src, (int64_t)i, (int32_t)sdt);
        if (!plain) v = v * a + b;
        gaio_k_store((char *)out, (int64_t)i, (int32_t)ddt, v);
    }
}

static void specials(gaio_stream *s) {
    /* f32: the edges of every rounding and saturation rule, then random bit patterns */
    static const float edges[] = {0.0f, -0.0f, 0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 0.49999997f, 127.5f, 128.5f,
                                  254.5f, 255.5f, 255.49998f, 256.0f, -0.49999997f, 65534.5f, 65535.5f, 65536.0f,
                                  32766.5f, 32767.5f, -32767.5f, -32768.5f, -32769.0f, 1e10f, -1e10f, 3.4028235e38f,
                                  -3.4028235e38f, 65504.0f, 65519.996f, 65520.0f, -65520.0f, 6.1035156e-05f,
                                  6.0975552e-05f, 5.9604645e-08f, 2.9802322e-08f, 2.9802326e-08f, 8.9406967e-08f,
                                  1e-45f, -1e-45f, 1.1754942e-38f, 0.33333334f, -7.25f};
    size_t ne = sizeof edges / sizeof edges[0], count = 64 * 70;
    float *f = tmalloc(count * 4);
    uint64_t seed = 0x5eed5eedull;
    for (size_t i = 0; i < count; i++) {
        if (i < ne) f[i] = edges[i];
        else if (i < ne + 8) f[i] = bits_f(i & 1 ? 0x7f800000u : 0xff800000u); /* infinities */
        else if (i < ne + 16) f[i] = bits_f((i & 1 ? 0x7fc00000u : 0xffc00000u) | (uint32_t)(i * 977)); /* NaNs */
        else {
            uint32_t r = (uint32_t)(test_rand(&seed) >> 32);
            /* exponents near f16's and the integers' ranges, and anywhere */
            if (i % 3 == 0) r = (r & 0x807fffffu) | ((uint32_t)(100 + (r >> 24) % 60) << 23);
            f[i] = bits_f(r);
        }
    }
    /* f16: every bit pattern */
    uint16_t *h = tmalloc(65536 * 2);
    for (uint32_t i = 0; i < 65536; i++) h[i] = (uint16_t)i;

    static const float ab[][2] = {{1.0f, 0.0f}, {0.75f, -3.25f}, {300.0f, 0.5f}};
    for (int src_kind = 0; src_kind < 2; src_kind++) {
        gaio_dtype sdt = src_kind ? GAIO_DTYPE_F16 : GAIO_DTYPE_F32;
        const void *data = src_kind ? (const void *)h : (const void *)f;
        int w = src_kind ? 256 : 64, ht = src_kind ? 256 : 70;
        size_t n = (size_t)w * ht;
        timg a = timg_strided(s, sdt, GAIO_LAYOUT_HWC, 1, w, ht, 1, PACKED, data);
        for (int ddt = GAIO_DTYPE_U8; ddt <= GAIO_DTYPE_F32; ddt++)
            for (int m = 0; m < 3; m++) {
                timg d = timg_strided(s, (gaio_dtype)ddt, GAIO_LAYOUT_HWC, 1, w, ht, 1, PACKED, NULL);
                OK(gaio_convert(s, &a.im, &d.im, ab[m][0], ab[m][1]));
                size_t e = gaio_dtype_size((gaio_dtype)ddt);
                void *got = tmalloc(n * e), *want = tmalloc(n * e);
                gimg_get(s, &d, got);
                oracle_convert(data, sdt, n, (gaio_dtype)ddt, ab[m][0], ab[m][1], want);
                char label[96];
                snprintf(label, sizeof label, "specials %s->%s scale %g offset %g", gaio_dtype_name(sdt),
                         gaio_dtype_name((gaio_dtype)ddt), (double)ab[m][0], (double)ab[m][1]);
                /* plain conversions keep NaN bits too */
                bool plain = m == 0;
                if (plain) {
                    if (memcmp(got, want, n * e)) CHECK(expect_same(label, got, want, n, (gaio_dtype)ddt) && 0);
                    printf("  %-60s bit-exact (%zu values)\n", label, n);
                } else {
                    CHECK(expect_same(label, got, want, n, (gaio_dtype)ddt));
                }
                free(got);
                free(want);
                timg_free(&d);
            }
        timg_free(&a);
    }
    free(f);
    free(h);
}

/* ---- in place ---------------------------------------------------------------- */

static void in_place(gaio_stream *s) {
    static const struct {
        gaio_dtype a, b;
        double scale, offset;
    } cases[] = {{GAIO_DTYPE_U8, GAIO_DTYPE_U8, 1.5, -20.0},
                 {GAIO_DTYPE_U16, GAIO_DTYPE_S16, 1.0, 0.0},
                 {GAIO_DTYPE_S16, GAIO_DTYPE_F16, 0.01, 0.0},
                 {GAIO_DTYPE_F32, GAIO_DTYPE_F32, -2.0, 1.0}};
    uint64_t seed = test_seed();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        for (int gi = 0; gi < 2; gi++) {
            tgeom g = gi ? PADDED : PACKED;
            int n = 2, w = 37, h = 11, c = 3;
            size_t count = (size_t)n * w * h * c, e = gaio_dtype_size(cases[i].a);
            void *data = tmalloc(count * e), *want = tmalloc(count * e), *got = tmalloc(count * e);
            trand_fill(data, count, cases[i].a, &seed, -300, 300);
            timg t = timg_strided(s, cases[i].a, GAIO_LAYOUT_HWC, n, w, h, c, g, data);
            gaio_image out = t.im;
            out.dtype = cases[i].b;
            OK(gaio_convert(s, &t.im, &out, cases[i].scale, cases[i].offset));
            oracle_convert(data, cases[i].a, count, cases[i].b, (float)cases[i].scale, (float)cases[i].offset, want);
            gimg_get_view(s, &t, &out, got, NULL);
            char label[96];
            snprintf(label, sizeof label, "in place %s->%s %s", gaio_dtype_name(cases[i].a),
                     gaio_dtype_name(cases[i].b), g.name);
            CHECK(expect_same(label, got, want, count, cases[i].b));
            free(data);
            free(want);
            free(got);
            timg_free(&t);
        }
    }
    /* normalize f32 in place */
    int n = 1, w = 23, h = 9, c = 3;
    size_t count = (size_t)n * w * h * c;
    float *data = tmalloc(count * 4), *got = tmalloc(count * 4), *want = tmalloc(count * 4);
    trand_fill(data, count, GAIO_DTYPE_F32, &seed, 0, 255);
    const float mean[3] = {10, 20, 30}, std[3] = {2, 4, 8};
    for (size_t i = 0; i < count; i++) want[i] = (data[i] * 0.5f - mean[i % 3]) * (1.0f / std[i % 3]);
    timg t = timg_strided(s, GAIO_DTYPE_F32, GAIO_LAYOUT_HWC, n, w, h, c, PACKED, data);
    OK(gaio_normalize(s, &t.im, &t.im, 0.5f, mean, std));
    gimg_get(s, &t, got);
    CHECK(expect_close("in place normalize f32->f32", got, want, count, GAIO_DTYPE_F32, 0, 1e-6));
    free(data);
    free(got);
    free(want);
    timg_free(&t);
}

/* ---- CUDA against the CPU backend --------------------------------------------- */

typedef enum op_kind { OP_CONVERT, OP_NORMALIZE, OP_REFORMAT } op_kind;

typedef struct xcfg {
    gaio_layout lay;
    int n, w, h, c;
    tgeom g;
    gaio_rect roi; /* width 0: the whole image */
} xcfg;

/* Runs one op on both backends on the same random input and compares. */
static void cross_one(gaio_stream *gs, gaio_stream *hs, op_kind op, gaio_dtype sdt, gaio_dtype ddt, double scale,
                      double offset, xcfg x, uint64_t *seed) {
    gaio_layout dl = op == OP_REFORMAT ? (x.lay == GAIO_LAYOUT_HWC ? GAIO_LAYOUT_CHW : GAIO_LAYOUT_HWC) : x.lay;
    size_t count = (size_t)x.n * x.w * x.h * x.c;
    void *data = trand_new(sdt, count, seed, -300, 300);
    float mean[64], std[64];
    for (int i = 0; i < x.c; i++) {
        mean[i] = 0.1f * (float)(i + 1);
        std[i] = 0.2f + 0.05f * (float)i;
    }
    timg a[2], d[2];
    gaio_image av[2], dv[2];
    gaio_stream *ss[2] = {gs, hs};
    for (int b = 0; b < 2; b++) {
        a[b] = timg_strided(ss[b], sdt, x.lay, x.n, x.w, x.h, x.c, x.g, data);
        d[b] = timg_strided(ss[b], ddt, dl, x.n, x.w, x.h, x.c, x.g, NULL);
        av[b] = a[b].im;
        dv[b] = d[b].im;
        if (x.roi.width) {
            OK(gaio_image_roi(&a[b].im, x.roi, &av[b]));
            OK(gaio_image_roi(&d[b].im, x.roi, &dv[b]));
        }
        switch (op) {
        case OP_CONVERT: OK(gaio_convert(ss[b], &av[b], &dv[b], scale, offset)); break;
        case OP_NORMALIZE: OK(gaio_normalize(ss[b], &av[b], &dv[b], (float)scale, mean, std)); break;
        case OP_REFORMAT: OK(gaio_reformat(ss[b], &av[b], &dv[b])); break;
        }
    }
    size_t vcount = timg_elems(&dv[0]), e = gaio_dtype_size(ddt);
    void *got[2] = {tmalloc(vcount * e), tmalloc(vcount * e)};
    for (int b = 0; b < 2; b++) gimg_get_view(ss[b], &d[b], &dv[b], got[b], NULL);
    static const char *ops[] = {"convert", "normalize", "reformat"};
    char label[200];
    snprintf(label, sizeof label, "cuda=cpu %s %s->%s %s %dx%dx%dx%d%s %s%s", ops[op], gaio_dtype_name(sdt),
             gaio_dtype_name(ddt), x.lay == GAIO_LAYOUT_HWC ? "HWC" : "CHW", x.n, x.w, x.h, x.c,
             op == OP_CONVERT && scale == 1.0 && offset == 0.0 ? " plain" : "", x.g.name, x.roi.width ? " roi" : "");
    if (op == OP_NORMALIZE)
        CHECK(expect_close(label, got[0], got[1], vcount, ddt, 0, ddt == GAIO_DTYPE_F16 ? 1e-3 : 1e-5));
    else
        CHECK(expect_same(label, got[0], got[1], vcount, ddt));
    for (int b = 0; b < 2; b++) {
        free(got[b]);
        timg_free(&a[b]);
        timg_free(&d[b]);
    }
    free(data);
}

static void cross(gaio_stream *gs, gaio_stream *hs) {
    uint64_t seed = test_seed();
    const xcfg cfgs[] = {
        {GAIO_LAYOUT_HWC, 3, 67, 45, 3, PACKED, {0, 0, 0, 0}},    /* one long row, vectors */
        {GAIO_LAYOUT_CHW, 2, 64, 21, 3, ALIGNED, {0, 0, 0, 0}},   /* aligned padded rows: vectors per row */
        {GAIO_LAYOUT_HWC, 2, 37, 29, 4, ODD, {0, 0, 0, 0}},       /* elements one by one */
        {GAIO_LAYOUT_HWC, 1, 100, 80, 3, PACKED, {5, 7, 61, 43}}, /* ROI view */
        {GAIO_LAYOUT_CHW, 1, 1, 1, 1, PACKED, {0, 0, 0, 0}},
        {GAIO_LAYOUT_HWC, 1, 5, 3, 7, PADDED, {0, 0, 0, 0}},
    };
    const xcfg big = {GAIO_LAYOUT_HWC, 1, 1920, 1080, 3, PACKED, {0, 0, 0, 0}};
    const xcfg big_roi = {GAIO_LAYOUT_HWC, 2, 1920, 1080, 3, PADDED, {3, 1, 1911, 1077}};
    for (int sd = GAIO_DTYPE_U8; sd <= GAIO_DTYPE_F32; sd++)
        for (int dd = GAIO_DTYPE_U8; dd <= GAIO_DTYPE_F32; dd++) {
            for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++) {
                cross_one(gs, hs, OP_CONVERT, (gaio_dtype)sd, (gaio_dtype)dd, 1.0, 0.0, cfgs[i], &seed);
                cross_one(gs, hs, OP_CONVERT, (gaio_dtype)sd, (gaio_dtype)dd, 0.37, -11.5, cfgs[i], &seed);
            }
            if (dd == GAIO_DTYPE_F16 || dd == GAIO_DTYPE_F32)
                for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++)
                    cross_one(gs, hs, OP_NORMALIZE, (gaio_dtype)sd, (gaio_dtype)dd, 1.0 / 255, 0, cfgs[i], &seed);
        }
    static const struct {
        gaio_dtype a, b;
        double scale, offset;
    } common[] = {{GAIO_DTYPE_U8, GAIO_DTYPE_F32, 1.0 / 255, 0},
                  {GAIO_DTYPE_F32, GAIO_DTYPE_U8, 255, 0},
                  {GAIO_DTYPE_F32, GAIO_DTYPE_F16, 1, 0},
                  {GAIO_DTYPE_F16, GAIO_DTYPE_F32, 1, 0},
                  {GAIO_DTYPE_U8, GAIO_DTYPE_U8, 1, 0}};
    for (size_t i = 0; i < sizeof common / sizeof common[0]; i++) {
        cross_one(gs, hs, OP_CONVERT, common[i].a, common[i].b, common[i].scale, common[i].offset, big, &seed);
        cross_one(gs, hs, OP_CONVERT, common[i].a, common[i].b, common[i].scale, common[i].offset, big_roi, &seed);
    }
    cross_one(gs, hs, OP_NORMALIZE, GAIO_DTYPE_U8, GAIO_DTYPE_F32, 1.0 / 255, 0, big, &seed);
    cross_one(gs, hs, OP_NORMALIZE, GAIO_DTYPE_U8, GAIO_DTYPE_F16, 1.0 / 255, 0, big_roi, &seed);
    for (int dt = GAIO_DTYPE_U8; dt <= GAIO_DTYPE_F32; dt++)
        for (int c = 1; c <= 6; c++)
            for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++) {
                xcfg x = cfgs[i];
                x.c = c;
                for (int l = 0; l < 2; l++) {
                    x.lay = l ? GAIO_LAYOUT_CHW : GAIO_LAYOUT_HWC;
                    cross_one(gs, hs, OP_REFORMAT, (gaio_dtype)dt, (gaio_dtype)dt, 0, 0, x, &seed);
                }
            }
    for (int l = 0; l < 2; l++) {
        xcfg x = big;
        x.lay = l ? GAIO_LAYOUT_CHW : GAIO_LAYOUT_HWC;
        cross_one(gs, hs, OP_REFORMAT, GAIO_DTYPE_U8, GAIO_DTYPE_U8, 0, 0, x, &seed);
        x = big_roi;
        x.lay = l ? GAIO_LAYOUT_CHW : GAIO_LAYOUT_HWC;
        cross_one(gs, hs, OP_REFORMAT, GAIO_DTYPE_F32, GAIO_DTYPE_F32, 0, 0, x, &seed);
    }
}

/* ---- bad input ------------------------------------------------------------------ */

/* The call fails with `want`, names the function, and its message contains `arg`. */
#define BAD_CALL(want, call, fn_name, arg)                                                                    \
    do {                                                                                                      \
        EXPECT_REFUSED(want, call, fn_name, arg);                                                             \
        if (getenv("GAIO_TEST_VERBOSE")) printf("  refused: %s\n", gaio_last_error());                      \
    } while (0)

/* im with zero (packed) strides, to be changed into another shape. */
static gaio_image packed(gaio_image im) {
    im.row_pitch = im.plane_pitch = im.image_stride = 0;
    return im;
}

static void bad_input(gaio_stream *s, gaio_stream *other) {
    const gaio_status INV = GAIO_ERR_INVALID_ARG;
    gaio_context *ctx;
    OK(gaio_stream_context(s, &ctx));
    timg a = timg_strided(s, GAIO_DTYPE_U8, GAIO_LAYOUT_HWC, 2, 16, 8, 3, PACKED, NULL);
    timg d = timg_strided(s, GAIO_DTYPE_F32, GAIO_LAYOUT_HWC, 2, 16, 8, 3, PACKED, NULL);
    timg p = timg_strided(s, GAIO_DTYPE_U8, GAIO_LAYOUT_CHW, 2, 16, 8, 3, PACKED, NULL);
    const float mean[3] = {0, 0, 0}, std[3] = {1, 1, 1}, std0[3] = {1, 0, 1}, stdinf[3] = {1, 1, INFINITY};
    const float meannan[3] = {0, NAN, 0};
    gaio_image x;

    /* NULLs */
    BAD_CALL(INV, gaio_convert(NULL, &a.im, &d.im, 1, 0), "gaio_convert", "stream");
    BAD_CALL(INV, gaio_convert(s, NULL, &d.im, 1, 0), "gaio_convert", "src");
    BAD_CALL(INV, gaio_convert(s, &a.im, NULL, 1, 0), "gaio_convert", "dst");
    BAD_CALL(INV, gaio_normalize(NULL, &a.im, &d.im, 1, mean, std), "gaio_normalize", "stream");
    BAD_CALL(INV, gaio_normalize(s, NULL, &d.im, 1, mean, std), "gaio_normalize", "src");
    BAD_CALL(INV, gaio_normalize(s, &a.im, NULL, 1, mean, std), "gaio_normalize", "dst");
    BAD_CALL(INV, gaio_normalize(s, &a.im, &d.im, 1, NULL, std), "gaio_normalize", "mean");
    BAD_CALL(INV, gaio_normalize(s, &a.im, &d.im, 1, mean, NULL), "gaio_normalize", "std");
    BAD_CALL(INV, gaio_reformat(NULL, &a.im, &p.im), "gaio_reformat", "stream");
    BAD_CALL(INV, gaio_reformat(s, NULL, &p.im), "gaio_reformat", "src");
    BAD_CALL(INV, gaio_reformat(s, &a.im, NULL), "gaio_reformat", "dst");
    x = packed(d.im);
    x.buffer = NULL;
    BAD_CALL(INV, gaio_convert(s, &a.im, &x, 1, 0), "gaio_convert", "dst.buffer");

    /* shapes, dtypes, layouts */
    x = packed(d.im);
    x.width = 15;
    BAD_CALL(INV, gaio_convert(s, &a.im, &x, 1, 0), "gaio_convert", "shape");
    BAD_CALL(INV, gaio_normalize(s, &a.im, &x, 1, mean, std), "gaio_normalize", "shape");
    x = packed(d.im);
    x.channels = 1;
    BAD_CALL(INV, gaio_convert(s, &a.im, &x, 1, 0), "gaio_convert", "shape");
    x = packed(d.im);
    x.batch = 1;
    BAD_CALL(INV, gaio_convert(s, &a.im, &x, 1, 0), "gaio_convert", "shape");
    x = packed(p.im);
    x.height = 7;
    BAD_CALL(INV, gaio_reformat(s, &a.im, &x), "gaio_reformat", "shape");
    x = packed(d.im);
    x.layout = GAIO_LAYOUT_CHW;
    BAD_CALL(INV, gaio_convert(s, &a.im, &x, 1, 0), "gaio_convert", "layout");
    BAD_CALL(INV, gaio_normalize(s, &a.im, &x, 1, mean, std), "gaio_normalize", "layout");
    BAD_CALL(INV, gaio_reformat(s, &a.im, &a.im), "gaio_reformat", "both HWC");
    x = packed(p.im);
    x.dtype = GAIO_DTYPE_U16;
    x.buffer = d.im.buffer; /* large enough for it */
    BAD_CALL(INV, gaio_reformat(s, &a.im, &x), "gaio_reformat", "dtype");
    x = packed(a.im);
    x.dtype = GAIO_DTYPE_U16; /* as large as d's buffer allows: 2x16x8x3 u16 fits in f32's bytes */
    x.buffer = d.im.buffer;
    x.layout = GAIO_LAYOUT_HWC;
    BAD_CALL(INV, gaio_normalize(s, &a.im, &x, 1, mean, std), "gaio_normalize", "dst.dtype");
    gaio_image nv = gaio_image_make(a.im.buffer, 0, GAIO_DTYPE_U8, GAIO_LAYOUT_NV12, 1, 16, 8, 3);
    BAD_CALL(INV, gaio_convert(s, &nv, &a.im, 1, 0), "gaio_convert", "src is a NV12");
    BAD_CALL(INV, gaio_reformat(s, &a.im, &nv), "gaio_reformat", "dst is a NV12");

    /* parameters */
    BAD_CALL(INV, gaio_convert(s, &a.im, &d.im, NAN, 0), "gaio_convert", "scale");
    BAD_CALL(INV, gaio_convert(s, &a.im, &d.im, 1e300, 0), "gaio_convert", "scale");
    BAD_CALL(INV, gaio_convert(s, &a.im, &d.im, 1, INFINITY), "gaio_convert", "offset");
    BAD_CALL(INV, gaio_normalize(s, &a.im, &d.im, NAN, mean, std), "gaio_normalize", "scale");
    BAD_CALL(INV, gaio_normalize(s, &a.im, &d.im, 1, mean, std0), "gaio_normalize", "std[1]");
    BAD_CALL(INV, gaio_normalize(s, &a.im, &d.im, 1, mean, stdinf), "gaio_normalize", "std[2]");
    BAD_CALL(INV, gaio_normalize(s, &a.im, &d.im, 1, meannan, std), "gaio_normalize", "mean[1]");
    const float tiny[3] = {1, 1, 1e-39f};
    BAD_CALL(INV, gaio_normalize(s, &a.im, &d.im, 1, mean, tiny), "gaio_normalize", "std[2]");

    /* memory: too small, overlapping, pageable, another device's */
    x = packed(d.im);
    x.height = 9;
    BAD_CALL(INV, gaio_convert(s, &a.im, &x, 1, 0), "gaio_convert", "dst");
    x = packed(a.im);
    x.offset = 8;
    BAD_CALL(INV, gaio_reformat(s, &x, &p.im), "gaio_reformat", "src");
    x = packed(a.im);
    x.batch = 1;
    gaio_image y = x;
    y.offset = 3; /* overlaps x, not in place */
    BAD_CALL(INV, gaio_convert(s, &x, &y, 1, 0), "gaio_convert", "overlaps");
    x.height = 4;
    x.row_pitch = 0;
    gaio_image z = x;
    z.row_pitch = 16 * 3 * 2; /* same start, other strides */
    BAD_CALL(INV, gaio_convert(s, &x, &z, 1, 0), "gaio_convert", "overlaps");
    gaio_image a1 = a.im;
    a1.batch = 1;
    gaio_image f = gaio_image_make(a.im.buffer, 0, GAIO_DTYPE_F16, GAIO_LAYOUT_HWC, 1, 16, 8, 3);
    BAD_CALL(INV, gaio_convert(s, &a1, &f, 1, 0), "gaio_convert", "overlaps"); /* same start, other element size */
    gaio_image pc = gaio_image_make(a.im.buffer, 0, GAIO_DTYPE_U8, GAIO_LAYOUT_CHW, 1, 16, 8, 3);
    BAD_CALL(INV, gaio_reformat(s, &a1, &pc), "gaio_reformat", "overlaps");
    gaio_image nf = gaio_image_make(a.im.buffer, 0, GAIO_DTYPE_F16, GAIO_LAYOUT_HWC, 1, 16, 8, 3);
    BAD_CALL(INV, gaio_normalize(s, &a1, &nf, 1, mean, std), "gaio_normalize", "overlaps");
    gaio_buffer *pageable;
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_HOST, d.bytes, &pageable));
    x = packed(d.im);
    x.buffer = pageable;
    BAD_CALL(INV, gaio_convert(s, &a.im, &x, 1, 0), "gaio_convert", "HOST");
    BAD_CALL(INV, gaio_normalize(s, &a.im, &x, 1, mean, std), "gaio_normalize", "dst");
    OK(gaio_buffer_release(pageable));
    if (other) { /* a GPU run: a buffer of the CPU backend's device */
        gaio_buffer *far;
        OK(gaio_buffer_alloc_async(other, GAIO_MEM_DEVICE, a.bytes, &far));
        OK(gaio_stream_synchronize(other));
        x = a.im;
        x.buffer = far;
        BAD_CALL(INV, gaio_convert(s, &x, &d.im, 1, 0), "gaio_convert", "src's buffer");
        BAD_CALL(INV, gaio_reformat(s, &x, &p.im), "gaio_reformat", "src's buffer");
        BAD_CALL(INV, gaio_normalize(s, &x, &d.im, 1, mean, std), "gaio_normalize", "src's buffer");
        OK(gaio_buffer_release(far));
    }

    /* nothing ran: the poisoned images are untouched */
    OK(gaio_stream_synchronize(s));
    timg *imgs[3] = {&a, &d, &p};
    for (int i = 0; i < 3; i++) {
        timg_expect_poison(s, imgs[i]);
        timg_free(imgs[i]);
    }
    printf("bad input: every call refused, nothing enqueued\n");
}

static void run(int device) {
    tctx t = tctx_open(device);
    golden(t.s);
    specials(t.s);
    in_place(t.s);
    if (t.host_s) cross(t.s, t.host_s);
    bad_input(t.s, t.host_s);
    tctx_close(&t);
}
