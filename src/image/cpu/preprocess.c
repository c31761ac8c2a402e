/* Host kernels of the fused preprocess (src/image/preprocess.c), separable like
 * OpenCV's resize:
 *   bilinear (LINEAR, and AREA when it enlarges): a horizontal pass turns a source
 *   row into three float planes of the output width (alpha dropped), kept in a
 *   two-row cache keyed by the row's parity so that a pair shared by two output rows
 *   is computed once; the vertical pass combines two cached rows.
 *   box (AREA shrinking): a vertical pass sums the box's source rows over the whole
 *   ROI row (every byte, contiguous: it vectorises), then each output sums its
 *   horizontal box of those sums, tap by tap in order (OpenCV sums horizontally
 *   first; the results differ by float rounding only).
 * Then swap, normalise, store. Work splits over images x bands of output rows.
 *
 * The arithmetic is the CUDA kernels' (src/kernels/image/preprocess.cu) in the same
 * order, products and sums rounded separately: both backends give the same floats. */
#include <stdatomic.h>
#include <stdlib.h>

#include "image/cpu/host_kernel.h"
#include "image/cpu/tables.h"
#include "image/resize_math.h"

typedef struct pre_job {
    const gaio_ktable *table;
    gaio_kimg dst;
    int32_t first, interp, swap, cn, band, nbands;
    int64_t max_row; /* the widest ROI row of the table, in bytes */
    float a[3], b[3];
    atomic_int failed;
} pre_job;

/* Per-chunk scratch: the x taps, two cached horizontal rows, one output row, one
 * row of vertical box sums. */
typedef struct pre_scratch {
    int32_t *x0, *x1; /* bilinear: byte offsets of the taps; box: first tap, tap count */
    float *w0, *w1;   /* bilinear: weights; box: first and last tap's weights */
    float *wm;        /* box: the weight between them */
    float *rows[2];   /* 3 planes of dw floats each; rows[r & 1] holds source row tag[r & 1] */
    int32_t tag[2];
    float *acc;       /* 3 planes of dw floats */
    float *vsum;      /* box: max_row floats */
} pre_scratch;

/* Source row -> three planes by the bilinear x taps. */
static void hpass_linear(const uint8_t *s, const pre_scratch *sc, int32_t dw, float *h) {
    float *h0 = h, *h1 = h + dw, *h2 = h + 2 * dw;
    for (int32_t x = 0; x < dw; x++) {
        const uint8_t *p = s + sc->x0[x], *q = s + sc->x1[x];
        float w0 = sc->w0[x], w1 = sc->w1[x];
        h0[x] = (float)p[0] * w0 + (float)q[0] * w1;
        h1[x] = (float)p[1] * w0 + (float)q[1] * w1;
        h2[x] = (float)p[2] * w0 + (float)q[2] * w1;
    }
}

/* The horizontal pass of source row r, from the cache when it is there. */
static const float *hrow(pre_scratch *sc, const gaio_kroi *v, int32_t r, int32_t dw) {
    int slot = r & 1;
    if (sc->tag[slot] != r) {
        hpass_linear((const uint8_t *)(uintptr_t)(v->ptr + (uint64_t)r * v->row_pitch), sc, dw, sc->rows[slot]);
        sc->tag[slot] = r;
    }
    return sc->rows[slot];
}

/* Output row y of dst image z from the three planes of acc: swap, normalise, store. */
static void store_row(const pre_job *j, int64_t z, int32_t y, const float *acc) {
    const gaio_kimg *d = &j->dst;
    int32_t dw = d->width;
    for (int c = 0; c < 3; c++) {
        const float *v = acc + (int64_t)(j->swap ? 2 - c : c) * dw;
        float a = j->a[c], b = j->b[c];
        if (d->planes == 3) {
            char *row = gaio_kimg_row(d, z * 3 + c, y);
            if (d->dtype == GAIO_K_F32) {
                float *o = (float *)row;
                for (int32_t x = 0; x < dw; x++) o[x] = v[x] * a + b;
            } else {
                uint16_t *o = (uint16_t *)row;
                for (int32_t x = 0; x < dw; x++) o[x] = gaio_k_f32_to_f16(v[x] * a + b);
            }
        } else {
            char *row = gaio_kimg_row(d, z, y);
            if (d->dtype == GAIO_K_F32) {
                float *o = (float *)row + c;
                for (int32_t x = 0; x < dw; x++) o[3 * x] = v[x] * a + b;
            } else {
                uint16_t *o = (uint16_t *)row + c;
                for (int32_t x = 0; x < dw; x++) o[3 * x] = gaio_k_f32_to_f16(v[x] * a + b);
            }
        }
    }
}

/* Output rows [y0, y1) of table image i. */
static void run_band(const pre_job *j, pre_scratch *sc, int32_t img, int32_t y0, int32_t y1) {
    const gaio_kroi v = j->table->v[img];
    int32_t dw = j->dst.width, dh = j->dst.height, cn = j->cn;
    int64_t z = (int64_t)j->first + img;
    int32_t mx, my;
    gaio_rs_modes(j->interp, v.width, v.height, dw, dh, &mx, &my);
    gaio_rs_axis ax = gaio_rs_axis_make(v.width, dw, mx), ay = gaio_rs_axis_make(v.height, dh, my);
    sc->tag[0] = sc->tag[1] = -1;
    float *acc = sc->acc;
    if (mx == GAIO_RS_BOX) {
        for (int32_t x = 0; x < dw; x++) {
            gaio_rs_box b = gaio_rs_box_at(&ax, x);
            sc->x0[x] = b.first;
            sc->x1[x] = b.n;
            sc->w0[x] = b.w_first;
            sc->w1[x] = b.w_last;
            sc->wm[x] = b.w_mid;
        }
        int64_t n = (int64_t)v.width * cn;
        float *vs = sc->vsum;
        for (int32_t y = y0; y < y1; y++) {
            gaio_rs_box b = gaio_rs_box_at(&ay, y);
            for (int64_t i = 0; i < n; i++) vs[i] = 0;
            for (int32_t k = 0; k < b.n; k++) {
                const uint8_t *s = (const uint8_t *)(uintptr_t)(v.ptr + (uint64_t)(b.first + k) * v.row_pitch);
                float w = gaio_rs_box_w(&b, k);
                for (int64_t i = 0; i < n; i++) vs[i] += w * (float)s[i];
            }
            for (int32_t x = 0; x < dw; x++) {
                const float *p = vs + (int64_t)sc->x0[x] * cn;
                int32_t taps = sc->x1[x];
                float o0 = 0, o1 = 0, o2 = 0;
                for (int32_t k = 0; k < taps; k++, p += cn) {
                    float w = k == 0 ? sc->w0[x] : k == taps - 1 ? sc->w1[x] : sc->wm[x];
                    o0 += w * p[0];
                    o1 += w * p[1];
                    o2 += w * p[2];
                }
                acc[x] = o0;
                acc[dw + x] = o1;
                acc[2 * dw + x] = o2;
            }
            store_row(j, z, y, acc);
        }
    } else {
        for (int32_t x = 0; x < dw; x++) {
            int32_t s0, s1;
            float f;
            gaio_rs_linear(&ax, x, &s0, &s1, &f);
            sc->x0[x] = s0 * cn;
            sc->x1[x] = s1 * cn;
            sc->w0[x] = 1.f - f;
            sc->w1[x] = f;
        }
        for (int32_t y = y0; y < y1; y++) {
            int32_t r0, r1;
            float f;
            gaio_rs_linear(&ay, y, &r0, &r1, &f);
            const float *h0 = hrow(sc, &v, r0, dw), *h1 = hrow(sc, &v, r1, dw);
            float w0 = 1.f - f, w1 = f;
            for (int32_t x = 0; x < 3 * dw; x++) acc[x] = h0[x] * w0 + h1[x] * w1;
            store_row(j, z, y, acc);
        }
    }
}

static void pre_range(void *arg, size_t begin, size_t end) {
    pre_job *j = arg;
    size_t dw = (size_t)j->dst.width;
    pre_scratch sc;
    /* x0, x1 (int32) and w0, w1, wm (float): 5 * dw; rows: 6 * dw; acc: 3 * dw */
    void *mem = malloc((14 * dw + (size_t)j->max_row) * sizeof(float));
    if (!mem) {
        atomic_store(&j->failed, 1);
        return;
    }
    sc.x0 = mem;
    sc.x1 = sc.x0 + dw;
    sc.w0 = (float *)(sc.x1 + dw);
    sc.w1 = sc.w0 + dw;
    sc.wm = sc.w1 + dw;
    sc.rows[0] = sc.wm + dw;
    sc.rows[1] = sc.rows[0] + 3 * dw;
    sc.acc = sc.rows[1] + 3 * dw;
    sc.vsum = sc.acc + 3 * dw;
    for (size_t item = begin; item < end; item++) {
        int32_t i = (int32_t)(item / (size_t)j->nbands), band = (int32_t)(item % (size_t)j->nbands);
        int32_t y0 = band * j->band, y1 = y0 + j->band < j->dst.height ? y0 + j->band : j->dst.height;
        run_band(j, &sc, i, y0, y1);
    }
    free(mem);
}

/* Arguments: table, dst, first, count, interp, rows per block and shared memory
 * (CUDA only), swap, source channels, a[3], b[3]. */
static gaio_status preprocess(const gaio_launch_info *info, void *const *args) {
    (void)info;
    pre_job j;
    j.table = (const gaio_ktable *)args[0];
    j.dst = GAIO_KARG(gaio_kimg, args, 1);
    j.first = GAIO_KARG(int32_t, args, 2);
    int32_t count = GAIO_KARG(int32_t, args, 3);
    j.interp = GAIO_KARG(int32_t, args, 4);
    j.swap = GAIO_KARG(int32_t, args, 7);
    j.cn = GAIO_KARG(int32_t, args, 8);
    for (int c = 0; c < 3; c++) {
        j.a[c] = GAIO_KARG(float, args, 9 + c);
        j.b[c] = GAIO_KARG(float, args, 12 + c);
    }
    atomic_init(&j.failed, 0);
    /* Bands of output rows worth ~64 KiB of work each: an output row costs its floats
     * plus (box) the ROI rows it sums, over the largest vertical reach in the table. */
    double reach = 1;
    j.max_row = 0;
    for (int32_t i = 0; i < count; i++) {
        const gaio_kroi *v = &j.table->v[i];
        double s = (double)v->height / j.dst.height;
        if (s > reach) reach = s;
        if ((int64_t)v->width * j.cn > j.max_row) j.max_row = (int64_t)v->width * j.cn;
    }
    int64_t row_bytes = (int64_t)(((double)j.dst.width * 3 * sizeof(float) + (double)j.max_row) * (reach + 1));
    size_t grain = gaio_rows_grain(row_bytes);
    j.band = (int32_t)(grain < (size_t)j.dst.height ? grain : (size_t)j.dst.height);
    j.nbands = (j.dst.height + j.band - 1) / j.band;
    gaio__parallel_for((size_t)count * (size_t)j.nbands, 1, pre_range, &j);
    return atomic_load(&j.failed) ? GAIO_ERR_NO_MEMORY : GAIO_OK;
}

static const size_t preprocess_sizes[15] = {
    sizeof(gaio_ktable), sizeof(gaio_kimg), 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
};

#define PREPROCESS_KERNEL(name) {"gaio_img_preprocess_" name, preprocess, 15, preprocess_sizes}

/* One host kernel behind every CUDA variant (interpolation x dtype x layout x channels):
 * it reads them from its arguments. */
const gaio_builtin_kernel gaio__img_preprocess_kernels[] = {
    PREPROCESS_KERNEL("linear_f32_chw_c3"), PREPROCESS_KERNEL("linear_f32_chw_c4"),
    PREPROCESS_KERNEL("linear_f32_hwc_c3"), PREPROCESS_KERNEL("linear_f32_hwc_c4"),
    PREPROCESS_KERNEL("linear_f16_chw_c3"), PREPROCESS_KERNEL("linear_f16_chw_c4"),
    PREPROCESS_KERNEL("linear_f16_hwc_c3"), PREPROCESS_KERNEL("linear_f16_hwc_c4"),
    PREPROCESS_KERNEL("area_f32_chw_c3"),   PREPROCESS_KERNEL("area_f32_chw_c4"),
    PREPROCESS_KERNEL("area_f32_hwc_c3"),   PREPROCESS_KERNEL("area_f32_hwc_c4"),
    PREPROCESS_KERNEL("area_f16_chw_c3"),   PREPROCESS_KERNEL("area_f16_chw_c4"),
    PREPROCESS_KERNEL("area_f16_hwc_c3"),   PREPROCESS_KERNEL("area_f16_hwc_c4"),
    {NULL, NULL, 0, NULL},
};
