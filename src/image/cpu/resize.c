/* Host kernels of the resize ops: one function behind every gaio_img_resize_*
 * name (the CUDA side has one kernel per mode, dtype and channel count; here the
 * dtype, channels and interpolation are read from the arguments).
 *
 * Separable, as OpenCV: per-axis tap tables (source offsets and weights from
 * image/resize_math.h) computed once per launch for each distinct ROI size, then
 * for each output row a vertical pass (whole rows, vectorised) and a horizontal
 * pass (a gather: each output pixel's channels as one 4-lane vector, the lanes past
 * the channel count overwritten by the next pixel). Which pass goes first is chosen
 * per image by measured cost (choose_v_first):
 *   - vertical first: one row of sums over the source columns per output row, then
 *     the horizontal taps; what boxes and most float shrinking use;
 *   - horizontal first into a cache of filtered source rows (each source row
 *     filtered once and reused by the neighbouring output rows), then the vertical
 *     combine: enlarging, and u8 fixed point in general.
 * u8 LINEAR, CUBIC and AREA's enlarging mode use OpenCV's fixed point (11-bit
 * weights, INTER_RESIZE_COEF_BITS, products summed exactly in int32, one rounding
 * shift of 22 bits): both orders, and the CUDA kernels, give the same integer.
 * AREA's box filter and u16 / f32 use float, as OpenCV does.
 * Work is split over images x output rows with gaio__parallel_for. */
#include <stdatomic.h>
#include <stdlib.h>

#include "image/cpu/host_kernel.h"
#include "image/cpu/tables.h"
#include "image/resize_math.h"

/* Hot loops get an AVX2 clone, picked at load time (int32 multiplies and float
 * rounding are much cheaper there than in baseline SSE2). Not under sanitizers:
 * the clones' ifunc resolvers run before the sanitizer runtime exists and crash
 * (ThreadSanitizer segfaults at load). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__SANITIZE_ADDRESS__) && \
    !defined(__SANITIZE_THREAD__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define RS_CLONES __attribute__((target_clones("avx2", "default")))
#endif
#endif
#ifndef RS_CLONES
#define RS_CLONES
#endif
#define RS_INLINE static inline __attribute__((always_inline))

#define FIX_BITS 11 /* OpenCV's INTER_RESIZE_COEF_BITS */
#define FIX_ONE (1 << FIX_BITS)

/* ---- tap tables -------------------------------------------------------- */

/* The taps of one axis: k per output, padded with zero weights where a box
 * has fewer. Offsets are in elements (pixel index * `mul`). */
typedef struct axis_tab {
    int32_t n, k;
    int32_t lo, hi; /* source pixels [lo, hi) that any tap reads */
    int32_t vec;    /* leading outputs whose taps may read 4 elements without leaving the row */
    int32_t *ofs;
    float *wf;
    int32_t *wi; /* 11-bit fixed point (LINEAR, CUBIC, AREA enlarging) */
    float *wf4;  /* each weight four times: one SIMD vector of the 4-lane pass */
    int32_t *wi4;
} axis_tab;

static void axis_free(axis_tab *t) {
    free(t->ofs);
    free(t->wf);
    free(t->wi);
    free(t->wf4);
    free(t->wi4);
}

static int axis_build(axis_tab *t, int32_t src, int32_t dst, int32_t mode, int32_t mul) {
    gaio_rs_axis a = gaio_rs_axis_make(src, dst, mode);
    int32_t k = 1;
    if (mode == GAIO_RS_LINEAR || mode == GAIO_RS_AREA_LINEAR) k = 2;
    else if (mode == GAIO_RS_CUBIC) k = 4;
    else if (mode == GAIO_RS_BOX)
        for (int32_t d = 0; d < dst; d++) {
            gaio_rs_box b = gaio_rs_box_at(&a, d);
            if (b.n > k) k = b.n;
        }
    t->n = dst;
    t->k = k;
    size_t n = (size_t)dst * (size_t)k;
    t->ofs = malloc(n * sizeof *t->ofs);
    t->wf = malloc(n * sizeof *t->wf);
    t->wi = malloc(n * sizeof *t->wi);
    t->wf4 = malloc(n * 4 * sizeof *t->wf4);
    t->wi4 = malloc(n * 4 * sizeof *t->wi4);
    if (!t->ofs || !t->wf || !t->wi || !t->wf4 || !t->wi4) return 0;
    int32_t lo = src, hi = 0;
    for (int32_t d = 0; d < dst; d++) {
        int32_t idx[GAIO_RS_MAX_BOX];
        float w[GAIO_RS_MAX_BOX];
        int32_t used = k;
        switch (mode) {
        case GAIO_RS_NEAREST:
        case GAIO_RS_NEAREST_EXACT:
            idx[0] = gaio_rs_nearest(&a, d);
            w[0] = 1;
            break;
        case GAIO_RS_LINEAR:
        case GAIO_RS_AREA_LINEAR: {
            float f;
            gaio_rs_linear(&a, d, &idx[0], &idx[1], &f);
            w[0] = 1.f - f;
            w[1] = f;
            break;
        }
        case GAIO_RS_CUBIC: gaio_rs_cubic(&a, d, idx, w); break;
        default: {
            gaio_rs_box b = gaio_rs_box_at(&a, d);
            used = b.n;
            for (int32_t j = 0; j < k; j++) {
                idx[j] = b.first + (j < b.n ? j : b.n - 1);
                w[j] = j < b.n ? gaio_rs_box_w(&b, j) : 0.f;
            }
            break;
        }
        }
        for (int32_t j = 0; j < k; j++) {
            t->ofs[(size_t)d * k + j] = idx[j] * mul;
            t->wf[(size_t)d * k + j] = w[j];
            t->wi[(size_t)d * k + j] = (int32_t)gaio_k_rint(w[j] * (float)FIX_ONE);
            for (int c = 0; c < 4; c++) {
                t->wf4[((size_t)d * k + j) * 4 + c] = t->wf[(size_t)d * k + j];
                t->wi4[((size_t)d * k + j) * 4 + c] = t->wi[(size_t)d * k + j];
            }
            if (j < used) {
                if (idx[j] < lo) lo = idx[j];
                if (idx[j] + 1 > hi) hi = idx[j] + 1;
            }
        }
    }
    t->lo = lo;
    t->hi = hi;
    int64_t lim = (int64_t)src * mul;
    for (t->vec = 0; t->vec < dst; t->vec++) {
        int32_t j, bad = 0;
        for (j = 0; j < k; j++) bad |= (int64_t)t->ofs[(size_t)t->vec * k + j] + 4 > lim;
        if (bad) break;
    }
    return 1;
}

/* Everything a launch needs for images of one ROI size. */
typedef struct plan {
    int32_t sw, sh;
    axis_tab x, y;
    int v_first;
    int kind; /* K_*: which family of passes */
} plan;

enum { K_NEAREST, K_U8I, K_U8F, K_U16F, K_F32F };

static void plan_free(plan *p) {
    if (!p) return;
    axis_free(&p->x);
    axis_free(&p->y);
    free(p);
}

/* Which order does less work, by costs measured on x86-64 (AVX2), per tap. Fixed
 * point: the 4-lane horizontal pass costs about 10 units an output pixel, the
 * vertical pass 2 an element from the source rows and 1 from cached rows. Float:
 * horizontal about 4 an output element, vertical 1. A box's horizontal pass (many
 * taps of a gather from the source) is far dearer than its vertical sums: boxes
 * always go vertical first. */
static int choose_v_first(const plan *p, int32_t dw, int32_t cn, int box, int fixed) {
    if (box) return 1;
    int64_t distinct = 0, last = -1;
    for (int32_t d = 0; d < p->y.n; d++)
        for (int32_t j = 0; j < p->y.k; j++) {
            int64_t r = p->y.ofs[(size_t)d * p->y.k + j];
            if (r > last) {
                distinct++;
                last = r;
            }
        }
    int64_t out_row = (int64_t)dw * cn, dh = p->y.n, span = (int64_t)(p->x.hi - p->x.lo) * cn;
    int64_t h = fixed ? (int64_t)dw * p->x.k * 10 : out_row * p->x.k * 4; /* one row's horizontal pass */
    int64_t h_first = distinct * h + dh * out_row * p->y.k;
    int64_t v_first = dh * span * p->y.k * (fixed ? 2 : 1) + dh * h;
    return v_first <= h_first;
}

static plan *plan_make(int32_t interp, int32_t sw, int32_t sh, int32_t dw, int32_t dh, int32_t cn, int32_t dtype) {
    plan *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->sw = sw;
    p->sh = sh;
    int32_t mx, my;
    gaio_rs_modes(interp, sw, sh, dw, dh, &mx, &my);
    if (!axis_build(&p->x, sw, dw, mx, cn) || !axis_build(&p->y, sh, dh, my, 1)) {
        plan_free(p);
        return NULL;
    }
    if (mx == GAIO_RS_NEAREST || mx == GAIO_RS_NEAREST_EXACT) p->kind = K_NEAREST;
    else if (dtype == GAIO_K_U8) p->kind = mx == GAIO_RS_BOX ? K_U8F : K_U8I; /* OpenCV's ResizeArea is float */
    else p->kind = dtype == GAIO_K_U16 ? K_U16F : K_F32F;
    p->v_first = choose_v_first(p, dw, cn, mx == GAIO_RS_BOX, p->kind == K_U8I);
    return p;
}

/* ---- element conversions (the same numbers as gaio_k_store) ----------- */

/* Round to nearest even for |v| < 2^22 without a library call: adding and
 * subtracting 1.5 * 2^23 leaves the rounded value (default rounding mode). */
RS_INLINE float rne(float v) { return (v + 12582912.f) - 12582912.f; }

RS_INLINE uint8_t fin_u8f(float v) {
    v = v > 0 ? v : 0; /* also maps NaN to 0 */
    v = v < 255.f ? v : 255.f;
    return (uint8_t)(int32_t)rne(v);
}
RS_INLINE uint16_t fin_u16f(float v) {
    v = v > 0 ? v : 0;
    v = v < 65535.f ? v : 65535.f;
    return (uint16_t)(int32_t)rne(v);
}
RS_INLINE float fin_f32(float v) { return v; }
RS_INLINE uint8_t fin_u8i(int32_t v) {
    v = (v + (1 << (2 * FIX_BITS - 1))) >> (2 * FIX_BITS);
    v = v > 0 ? v : 0; /* max, then min: the forms that vectorise */
    v = v < 255 ? v : 255;
    return (uint8_t)v;
}

/* ---- passes, generated per (source type, work type, final conversion) ---- *
 *
 * vsrc: out[i] = sum_j w[j] * rows[j][i]          source rows -> work row
 * vfin: out[i] = FIN(sum_j w[j] * rows[j][i])     work rows -> output row
 * hsrc: out[d*cn+c] = sum_j w[d,j] * in[ofs[d,j] + c]        source -> work
 * hfin: out[d*cn+c] = FIN(sum_j w[d,j] * in[ofs[d,j] + c])   work -> output
 * Constant cn and k reach the always-inline bodies through the switches below. */

#define RS_PASSES(NAME, ST, WT, W, FIN)                                                                        \
    RS_INLINE void NAME##_vsrc_k(const ST *const *rows, const WT *w, int k, WT *out, int64_t lo, int64_t hi) {  \
        if (k == 1) {                                                                                          \
            const ST *r0 = rows[0];                                                                            \
            for (int64_t i = lo; i < hi; i++) out[i] = (WT)r0[i];                                              \
        } else if (k == 2) {                                                                                   \
            const ST *r0 = rows[0], *r1 = rows[1];                                                             \
            const WT w0 = w[0], w1 = w[1];                                                                     \
            for (int64_t i = lo; i < hi; i++) out[i] = w0 * (WT)r0[i] + w1 * (WT)r1[i];                        \
        } else if (k == 4) {                                                                                   \
            const ST *r0 = rows[0], *r1 = rows[1], *r2 = rows[2], *r3 = rows[3];                               \
            const WT w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3];                                               \
            for (int64_t i = lo; i < hi; i++)                                                                  \
                out[i] = w0 * (WT)r0[i] + w1 * (WT)r1[i] + w2 * (WT)r2[i] + w3 * (WT)r3[i];                    \
        } else {                                                                                               \
            const ST *r0 = rows[0];                                                                            \
            const WT w0 = w[0];                                                                                \
            for (int64_t i = lo; i < hi; i++) out[i] = w0 * (WT)r0[i];                                         \
            for (int j = 1; j < k; j++) {                                                                      \
                const ST *rj = rows[j];                                                                        \
                const WT wj = w[j];                                                                            \
                if (wj == 0) continue; /* a box's padding */                                                   \
                for (int64_t i = lo; i < hi; i++) out[i] += wj * (WT)rj[i];                                    \
            }                                                                                                  \
        }                                                                                                      \
    }                                                                                                          \
    static RS_CLONES void NAME##_vsrc(const ST *const *rows, const WT *w, int k, WT *out, int64_t lo,          \
                                      int64_t hi) {                                                            \
        switch (k) {                                                                                           \
        case 1: NAME##_vsrc_k(rows, w, 1, out, lo, hi); break;                                                 \
        case 2: NAME##_vsrc_k(rows, w, 2, out, lo, hi); break;                                                 \
        case 4: NAME##_vsrc_k(rows, w, 4, out, lo, hi); break;                                                 \
        default: NAME##_vsrc_k(rows, w, k, out, lo, hi); break;                                                \
        }                                                                                                      \
    }                                                                                                          \
    RS_INLINE void NAME##_vfin_k(const WT *const *rows, const WT *w, int k, ST *out, int64_t n, WT *tmp) {     \
        if (k == 2) {                                                                                          \
            const WT *r0 = rows[0], *r1 = rows[1];                                                             \
            const WT w0 = w[0], w1 = w[1];                                                                     \
            for (int64_t i = 0; i < n; i++) out[i] = FIN(w0 * r0[i] + w1 * r1[i]);                             \
        } else if (k == 4) {                                                                                   \
            const WT *r0 = rows[0], *r1 = rows[1], *r2 = rows[2], *r3 = rows[3];                               \
            const WT w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3];                                               \
            for (int64_t i = 0; i < n; i++) out[i] = FIN(w0 * r0[i] + w1 * r1[i] + w2 * r2[i] + w3 * r3[i]);   \
        } else {                                                                                               \
            const WT *r0 = rows[0];                                                                            \
            const WT w0 = w[0];                                                                                \
            for (int64_t i = 0; i < n; i++) tmp[i] = w0 * r0[i];                                               \
            for (int j = 1; j < k; j++) {                                                                      \
                const WT *rj = rows[j];                                                                        \
                const WT wj = w[j];                                                                            \
                if (wj == 0) continue;                                                                         \
                for (int64_t i = 0; i < n; i++) tmp[i] += wj * rj[i];                                          \
            }                                                                                                  \
            for (int64_t i = 0; i < n; i++) out[i] = FIN(tmp[i]);                                              \
        }                                                                                                      \
    }                                                                                                          \
    static RS_CLONES void NAME##_vfin(const WT *const *rows, const WT *w, int k, ST *out, int64_t n, WT *tmp) { \
        switch (k) {                                                                                           \
        case 2: NAME##_vfin_k(rows, w, 2, out, n, tmp); break;                                                 \
        case 4: NAME##_vfin_k(rows, w, 4, out, n, tmp); break;                                                 \
        default: NAME##_vfin_k(rows, w, k, out, n, tmp); break;                                                \
        }                                                                                                      \
    }                                                                                                          \
    /* Lanes 0..3 of output pixel d at out: with cn < 4 the lanes past cn belong to   \
     * the next pixel, which overwrites them. Four lanes make one SIMD vector. */      \
    RS_INLINE void NAME##_h4(const void *inp, int in_float, WT *out, const int32_t *ofs, const WT *w4, int k) {  \
        WT a0 = 0, a1 = 0, a2 = 0, a3 = 0;                                                                     \
        for (int j = 0; j < k; j++, w4 += 4) {                                                                 \
            if (in_float) {                                                                                    \
                const WT *p = (const WT *)inp + ofs[j];                                                        \
                a0 += w4[0] * p[0], a1 += w4[1] * p[1], a2 += w4[2] * p[2], a3 += w4[3] * p[3];                \
            } else {                                                                                           \
                const ST *p = (const ST *)inp + ofs[j];                                                        \
                a0 += w4[0] * (WT)p[0], a1 += w4[1] * (WT)p[1], a2 += w4[2] * (WT)p[2], a3 += w4[3] * (WT)p[3]; \
            }                                                                                                  \
        }                                                                                                      \
        out[0] = a0, out[1] = a1, out[2] = a2, out[3] = a3;                                                    \
    }                                                                                                          \
    /* source row -> work row (padded by 4): vectors while 4 lanes stay in the row */  \
    RS_INLINE void NAME##_hsrc_k(const ST *in, WT *out, WT *tmp, const axis_tab *t, const WT *wt, int cn,      \
                                 int k) {                                                                      \
        (void)tmp;                                                                                             \
        const int32_t *ofs = t->ofs, vec = t->vec, n = t->n; /* locals: out may alias *t as far as C knows */ \
        int32_t d = 0;                                                                                         \
        if (cn > 1) {                                                                                          \
            const WT *w4 = (const WT *)t->W##4;                                                                \
            for (; d < vec; d++, ofs += k, wt += k, w4 += 4 * k, out += cn) NAME##_h4(in, 0, out, ofs, w4, k);  \
        }                                                                                                      \
        for (; d < n; d++, ofs += k, wt += k, out += cn)                                                       \
            for (int c = 0; c < cn; c++) {                                                                     \
                WT acc = 0;                                                                                    \
                for (int j = 0; j < k; j++) acc += wt[j] * (WT)in[ofs[j] + c];                                 \
                out[c] = acc;                                                                                  \
            }                                                                                                  \
    }                                                                                                          \
    /* work row (padded by 4) -> output row, through tmp (n * cn + 4) */              \
    RS_INLINE void NAME##_hfin_k(const WT *in, ST *out, WT *tmp, const axis_tab *t, const WT *wt, int cn,     \
                                 int k) {                                                                      \
        const int32_t *ofs = t->ofs;                                                                           \
        if (cn == 1) {                                                                                         \
            for (int32_t d = 0; d < t->n; d++, ofs += k, wt += k) {                                            \
                WT acc = 0;                                                                                    \
                for (int j = 0; j < k; j++) acc += wt[j] * in[ofs[j]];                                         \
                out[d] = FIN(acc);                                                                             \
            }                                                                                                  \
            return;                                                                                            \
        }                                                                                                      \
        WT *o = tmp;                                                                                           \
        const WT *w4 = (const WT *)t->W##4;                                                                    \
        const int32_t nd = t->n;                                                                               \
        for (int32_t d = 0; d < nd; d++, ofs += k, w4 += 4 * k, o += cn) NAME##_h4(in, 1, o, ofs, w4, k);      \
        const int64_t n = (int64_t)nd * cn;                                                                    \
        for (int64_t i = 0; i < n; i++) out[i] = FIN(tmp[i]);                                                  \
    }                                                                                                          \
    RS_SWITCH_H(NAME, hsrc, const ST *, WT *, WT)                                                              \
    RS_SWITCH_H(NAME, hfin, const WT *, ST *, WT)

/* Constant channel counts 1..4 and tap counts 2 and 4; any k for boxes. */
#define RS_SWITCH_H(NAME, PASS, IN, OUT, WT)                                                                  \
    static RS_CLONES void NAME##_##PASS(IN in, OUT out, WT *tmp, const axis_tab *t, const WT *wt, int cn) {    \
        switch (t->k * 8 + cn) {                                                                              \
        case 2 * 8 + 1: NAME##_##PASS##_k(in, out, tmp, t, wt, 1, 2); break;                                       \
        case 2 * 8 + 2: NAME##_##PASS##_k(in, out, tmp, t, wt, 2, 2); break;                                       \
        case 2 * 8 + 3: NAME##_##PASS##_k(in, out, tmp, t, wt, 3, 2); break;                                       \
        case 2 * 8 + 4: NAME##_##PASS##_k(in, out, tmp, t, wt, 4, 2); break;                                       \
        case 4 * 8 + 1: NAME##_##PASS##_k(in, out, tmp, t, wt, 1, 4); break;                                       \
        case 4 * 8 + 2: NAME##_##PASS##_k(in, out, tmp, t, wt, 2, 4); break;                                       \
        case 4 * 8 + 3: NAME##_##PASS##_k(in, out, tmp, t, wt, 3, 4); break;                                       \
        case 4 * 8 + 4: NAME##_##PASS##_k(in, out, tmp, t, wt, 4, 4); break;                                       \
        default:                                                                                              \
            switch (cn) {                                                                                     \
            case 1: NAME##_##PASS##_k(in, out, tmp, t, wt, 1, t->k); break;                                        \
            case 2: NAME##_##PASS##_k(in, out, tmp, t, wt, 2, t->k); break;                                        \
            case 3: NAME##_##PASS##_k(in, out, tmp, t, wt, 3, t->k); break;                                        \
            default: NAME##_##PASS##_k(in, out, tmp, t, wt, 4, t->k); break;                                       \
            }                                                                                                 \
        }                                                                                                     \
    }

RS_PASSES(u8i, uint8_t, int32_t, wi, fin_u8i)
RS_PASSES(u8f, uint8_t, float, wf, fin_u8f)
RS_PASSES(u16f, uint16_t, float, wf, fin_u16f)
RS_PASSES(f32f, float, float, wf, fin_f32)

/* ---- one launch ---------------------------------------------------------- */

typedef struct run {
    const gaio_ktable *tab;
    gaio_kimg dst;
    int32_t first, count, interp;
    int32_t cn, esize;
    plan **plans; /* per image of the launch */
    atomic_int failed;
} run;

/* Scratch that grows as a chunk meets larger images. */
typedef struct scratch {
    void *p;
    size_t size;
} scratch;

/* Zeroed when (re)allocated: the padding lanes that vectors read past a row are
 * never garbage (a NaN or denormal there would cost time, not correctness). */
static void *scratch_get(scratch *s, size_t bytes) {
    if (bytes > s->size) {
        free(s->p);
        s->p = calloc(1, bytes);
        s->size = s->p ? bytes : 0;
    }
    return s->p;
}

/* Output rows y0..y1 of one plane by nearest neighbour: a copy of the selected
 * source pixels, or of the row above where both read the same source row. */
RS_INLINE void nn_row(const char *srow, char *drow, const int32_t *ofs, int32_t n, int pxb) {
    for (int32_t d = 0; d < n; d++) memcpy(drow + (size_t)d * pxb, srow + (size_t)ofs[d], (size_t)pxb);
}

static RS_CLONES void nn_rows(const run *r, const plan *p, const char *sbase, uint64_t spitch, int64_t z, int32_t y0,
                              int32_t y1) {
    int pxb = r->cn * r->esize;
    size_t rowb = (size_t)r->dst.width * (size_t)pxb;
    int32_t prev = -1;
    for (int32_t y = y0; y < y1; y++) {
        char *drow = gaio_kimg_row(&r->dst, z, y);
        int32_t sy = p->y.ofs[y];
        if (sy == prev) {
            memcpy(drow, drow - r->dst.row_pitch, rowb);
            continue;
        }
        prev = sy;
        const char *srow = sbase + (uint64_t)sy * spitch;
        /* ofs are in elements; constant pixel sizes let memcpy become a move */
        switch (pxb) {
        case 1: nn_row(srow, drow, p->x.ofs, p->x.n, 1); break;
        case 2: nn_row(srow, drow, p->x.ofs, p->x.n, 2); break;
        case 3: nn_row(srow, drow, p->x.ofs, p->x.n, 3); break;
        case 4: nn_row(srow, drow, p->x.ofs, p->x.n, 4); break;
        case 6: nn_row(srow, drow, p->x.ofs, p->x.n, 6); break;
        case 8: nn_row(srow, drow, p->x.ofs, p->x.n, 8); break;
        case 12: nn_row(srow, drow, p->x.ofs, p->x.n, 12); break;
        default: nn_row(srow, drow, p->x.ofs, p->x.n, 16); break;
        }
    }
}

/* The element offsets of the nearest tables are in elements; nn_row wants bytes. */
static void nn_to_bytes(plan *p, int32_t esize) {
    for (int32_t d = 0; d < p->x.n; d++) p->x.ofs[d] *= esize;
}

#define RS_ROWS(NAME, ST, WT, W)                                                                               \
    static int NAME##_rows(const run *r, const plan *p, const char *sbase, uint64_t spitch, int64_t z, int32_t y0, \
                           int32_t y1, scratch *s) {                                                           \
        const int cn = r->cn;                                                                                  \
        const int64_t out_n = (int64_t)p->x.n * cn;                                                            \
        const WT *wx = (const WT *)p->x.W, *wy = (const WT *)p->y.W;                                           \
        if (p->v_first) {                                                                                      \
            size_t tn = (size_t)p->sw * cn + 4;                                                                \
            WT *t = scratch_get(s, (tn + (size_t)out_n + 4) * sizeof(WT));                                     \
            if (!t) return 0;                                                                                  \
            WT *tmp = t + tn;                                                                                  \
            const ST *rows[GAIO_RS_MAX_BOX];                                                                   \
            for (int32_t y = y0; y < y1; y++) {                                                                \
                for (int j = 0; j < p->y.k; j++)                                                               \
                    rows[j] = (const ST *)(sbase + (uint64_t)p->y.ofs[(size_t)y * p->y.k + j] * spitch);       \
                NAME##_vsrc(rows, wy + (size_t)y * p->y.k, p->y.k, t, (int64_t)p->x.lo * cn,                   \
                            (int64_t)p->x.hi * cn);                                                            \
                /* the lanes that 4-lane vectors read past the last tap: defined, harmless */                     \
                for (int j = 0; j < 4; j++) t[(int64_t)p->x.hi * cn + j] = 0;                                  \
                NAME##_hfin(t, (ST *)gaio_kimg_row(&r->dst, z, y), tmp, &p->x, wx, cn);                             \
            }                                                                                                  \
            return 1;                                                                                          \
        }                                                                                                      \
        /* horizontal first: slot (row % k) of the cache holds source row `tag` filtered */                   \
        const int k = p->y.k;                                                                                  \
        size_t slot = ((size_t)out_n + 4) * sizeof(WT);                                                        \
        slot = (slot + 63) & ~(size_t)63;                                                                      \
        char *mem = scratch_get(s, slot * (size_t)(k + 1) + (size_t)k * sizeof(int32_t));                      \
        if (!mem) return 0;                                                                                    \
        int32_t *tag = (int32_t *)(mem + slot * (size_t)(k + 1));                                              \
        for (int j = 0; j < k; j++) tag[j] = -1;                                                               \
        WT *tmp = (WT *)(mem + slot * (size_t)k);                                                              \
        const WT *rows[GAIO_RS_MAX_BOX];                                                                       \
        for (int32_t y = y0; y < y1; y++) {                                                                    \
            for (int j = 0; j < k; j++) {                                                                      \
                int32_t sy = p->y.ofs[(size_t)y * k + j], c = sy % k;                                          \
                WT *row = (WT *)(mem + slot * (size_t)c);                                                      \
                if (tag[c] != sy) {                                                                            \
                    NAME##_hsrc((const ST *)(sbase + (uint64_t)sy * spitch), row, NULL, &p->x, wx, cn);              \
                    tag[c] = sy;                                                                               \
                }                                                                                              \
                rows[j] = row;                                                                                 \
            }                                                                                                  \
            NAME##_vfin(rows, wy + (size_t)y * k, k, (ST *)gaio_kimg_row(&r->dst, z, y), out_n, tmp);          \
        }                                                                                                      \
        return 1;                                                                                              \
    }

RS_ROWS(u8i, uint8_t, int32_t, wi)
RS_ROWS(u8f, uint8_t, float, wf)
RS_ROWS(u16f, uint16_t, float, wf)
RS_ROWS(f32f, float, float, wf)

/* Rows [begin, end) of the launch's count * planes * height output rows. */
static void run_range(void *arg, size_t begin, size_t end) {
    run *r = arg;
    const int64_t h = r->dst.height, planes = r->dst.planes;
    scratch s = {NULL, 0};
    size_t row = begin;
    while (row < end) {
        int64_t zl = (int64_t)(row / (size_t)h); /* plane of this launch */
        int32_t y0 = (int32_t)(row % (size_t)h);
        int32_t y1 = (int32_t)((size_t)(h - y0) < end - row ? h : (int64_t)y0 + (int64_t)(end - row));
        int32_t i = (int32_t)(zl / planes), p = (int32_t)(zl % planes);
        const gaio_kroi *v = &r->tab->v[i];
        const char *sbase = (const char *)(uintptr_t)(v->ptr + (uint64_t)p * v->plane_pitch);
        int64_t z = ((int64_t)r->first + i) * planes + p;
        const plan *pl = r->plans[i];
        int ok = 1;
        switch (pl->kind) {
        case K_NEAREST: nn_rows(r, pl, sbase, v->row_pitch, z, y0, y1); break;
        case K_U8I: ok = u8i_rows(r, pl, sbase, v->row_pitch, z, y0, y1, &s); break;
        case K_U8F: ok = u8f_rows(r, pl, sbase, v->row_pitch, z, y0, y1, &s); break;
        case K_U16F: ok = u16f_rows(r, pl, sbase, v->row_pitch, z, y0, y1, &s); break;
        default: ok = f32f_rows(r, pl, sbase, v->row_pitch, z, y0, y1, &s); break;
        }
        if (!ok) atomic_store(&r->failed, 1);
        row += (size_t)(y1 - y0);
    }
    free(s.p);
}

/* args: gaio_ktable views, gaio_kimg dst, int32 first, int32 count, int32 interp.
 * View i of the table is image first + i of dst. */
static gaio_status resize_host(const gaio_launch_info *info, void *const *args) {
    (void)info;
    run r;
    r.tab = (const gaio_ktable *)gaio_karg_(args[0]);
    r.dst = GAIO_KARG(gaio_kimg, args, 1);
    r.first = GAIO_KARG(int32_t, args, 2);
    r.count = GAIO_KARG(int32_t, args, 3);
    r.interp = GAIO_KARG(int32_t, args, 4);
    r.cn = r.dst.channels;
    r.esize = r.dst.dtype == GAIO_K_U8 ? 1 : r.dst.dtype == GAIO_K_U16 ? 2 : 4;
    atomic_init(&r.failed, 0);
    r.plans = calloc((size_t)r.count, sizeof *r.plans);
    if (!r.plans) return GAIO_ERR_NO_MEMORY;
    gaio_status st = GAIO_OK;
    /* one plan per distinct ROI size: a uniform batch computes its tables once */
    int32_t nplans = 0;
    plan **owned = calloc((size_t)r.count, sizeof *owned);
    if (!owned) st = GAIO_ERR_NO_MEMORY;
    for (int32_t i = 0; i < r.count && st == GAIO_OK; i++) {
        const gaio_kroi *v = &r.tab->v[i];
        for (int32_t j = nplans - 1; j >= 0 && !r.plans[i]; j--)
            if (owned[j]->sw == v->width && owned[j]->sh == v->height) r.plans[i] = owned[j];
        if (r.plans[i]) continue;
        plan *p = plan_make(r.interp, v->width, v->height, r.dst.width, r.dst.height, r.cn, r.dst.dtype);
        if (!p) {
            st = GAIO_ERR_NO_MEMORY;
            break;
        }
        if (p->kind == K_NEAREST) nn_to_bytes(p, r.esize);
        owned[nplans++] = p;
        r.plans[i] = p;
    }
    if (st == GAIO_OK) {
        size_t n = (size_t)r.count * (size_t)r.dst.planes * (size_t)r.dst.height;
        int64_t row_bytes = (int64_t)r.dst.width * r.cn * r.esize;
        gaio__parallel_for(n, gaio_rows_grain(row_bytes), run_range, &r);
        if (atomic_load(&r.failed)) st = GAIO_ERR_NO_MEMORY;
    }
    for (int32_t j = 0; j < nplans; j++) plan_free(owned[j]);
    free(owned);
    free(r.plans);
    return st;
}

static const size_t resize_arg_sizes[5] = {sizeof(gaio_ktable), sizeof(gaio_kimg), 4, 4, 4};

#define RS_ENTRY(mode, dt, c) {"gaio_img_resize_" mode "_" dt "_c" #c, resize_host, 5, resize_arg_sizes}
#define RS_ENTRIES_DT(mode, dt) RS_ENTRY(mode, dt, 1), RS_ENTRY(mode, dt, 2), RS_ENTRY(mode, dt, 3), RS_ENTRY(mode, dt, 4)
#define RS_ENTRIES(mode) RS_ENTRIES_DT(mode, "u8"), RS_ENTRIES_DT(mode, "u16"), RS_ENTRIES_DT(mode, "f32")

#define RS_DIRECT_P(p, mode) RS_ENTRY(p mode, "u8", 1), RS_ENTRY(p mode, "u8", 3), RS_ENTRY(p mode, "u8", 4)
#define RS_DIRECT(mode) RS_DIRECT_P("direct_", mode), RS_DIRECT_P("direct1_", mode)

/* The names of the CUDA kernels (src/kernels/image/resize.cu and resize_direct.cu),
 * all one host function: the direct kernels compute what the staged ones do. */
const gaio_builtin_kernel gaio__img_resize_kernels[] = {
    RS_ENTRIES("nearest"), RS_ENTRIES("linear"), RS_ENTRIES("cubic"), RS_ENTRIES("area"),
    RS_DIRECT("nearest"),  RS_DIRECT("linear"),  RS_DIRECT("area"),   RS_DIRECT_P("direct_", "cubic"),
    {NULL, NULL, 0, NULL},
};
