/* The host convolution without oneDNN: im2col tiles times the packed weights, one GEMM
 * per work item, spread over gaio's worker pool (see conv_gemm.h for when it runs).
 *
 * The output pixels m = (n, p, q) of each group are cut into tiles of `mt` pixels (a
 * tile may span output rows and images), and the group's K/G output channels into
 * blocks of `kb` (one block unless there are too few tiles for the workers). A work
 * item is (group, tile, channel block):
 *   1. the tile's im2col block A: for each pixel the Kd = C/G * R * S taps of its
 *      window, zeros where the window leaves x, widened to f32 as it is gathered (an f16
 *      x needs no separate pass); kept for the next item when that is another channel
 *      block of the same tile;
 *   2. one GEMM against the block's rows of W (Kd values each, packed to f32 once per
 *      call in the order A's taps take, or w's own memory when it already is that);
 *   3. the epilogue on D while it is in cache, in passes that vectorise: + bias,
 *      + residual (read before the tile's y is written: it may be y itself), the
 *      activation (pointwise_math.h's arithmetic), then stored through y's strides,
 *      rounded to nearest even for an f16 y.
 *
 * Two shapes of A, picked by x's layout:
 *   rows (channels-innermost x, like NHWC): A is mt x Kd, the taps of a pixel in a row,
 *     (r, s, c) with c fastest (contiguous runs of an NHWC x) or (c, r, s) for other
 *     layouts; D (mt x kb) = A W^T.
 *   cols (W's stride below C's, like NCHW): A is Kd x mt, a row of pixels per tap
 *     (c, r, s): contiguous runs of an NCHW x's rows at stride 1; D (kb x mt) = W A.
 * A 1x1 convolution with stride 1 and no padding over an f32 x whose pixels are evenly
 * spaced needs no im2col at all: A is x itself (then tiles stay within one image).
 *
 * Tiles hold about TILE_FLOATS floats of A and D (L2-sized), at least MIN_TILE pixels;
 * a problem with too few tiles for CHUNKS_PER_WORKER items per worker is cut into
 * channel blocks first (each sgemm call packs its block of W again, so that a layer of
 * few pixels and large weights still packs them once), then into smaller tiles. Items
 * below MIN_CHUNK_FLOPS are grouped, so that a small convolution runs on the calling
 * worker alone. Without OpenBLAS the products are gemm_nt and gemm_nn below (register
 * blocks over 8-float vectors, an AVX2 clone picked at load time). */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/half.h"
#include "core/workers.h"
#include "dnn/cpu/conv_gemm.h"
#include "dnn/cpu/openblas.h"
#include "dnn/cpu/tables.h"
#include "dnn/conv_fc_math.h"
#include "dnn/depthwise_math.h"
#include "dnn/pointwise_math.h"

#define FN "gaio_conv2d"
#define TILE_FLOATS (64 * 1024)   /* A and D of one tile: 256 KiB */
#define MIN_TILE 64               /* pixels per tile, unless the problem has fewer or ... */
#define MIN_SPLIT_TILE 16         /* ... they are cut finer for the workers */
#define MAX_TILE 1024
#define MIN_KBLOCK 32             /* output channels per item when they are split */
#define TILE_ALIGN 8              /* tiles are multiples of this (sgemm's register tiles) */
#define CHUNKS_PER_WORKER 4
#define MIN_CHUNK_FLOPS 1048576.0 /* 2^20: below this an item is not worth waking a worker */
#define SCRATCH_ALIGN 64

/* Hot loop of the no-BLAS path: an AVX2 clone, picked at load time. Not under
 * sanitizers (their runtime does not exist yet when ifunc resolvers run), as in
 * src/image/cpu/resize.c. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__SANITIZE_ADDRESS__) && \
    !defined(__SANITIZE_THREAD__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define GEMM_CLONES __attribute__((target_clones("avx2", "default")))
#endif
#endif
#ifndef GEMM_CLONES
#define GEMM_CLONES
#endif

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }
static int64_t abs64(int64_t a) { return a < 0 ? -a : a; }
static int64_t div_up(int64_t a, int64_t b) { return (a + b - 1) / b; }
/* Rounded towards -inf / +inf, for numerators of either sign (b > 0). */
static int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
static int64_t ceil_div(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }

/* ---- what runs ---- */

typedef struct plan {
    int64_t G, Cg, Kg, Kd, M; /* groups, channels per group in and out, Cg * R * S, N * P * Q */
    bool depthwise;           /* groups == C == K: the depthwise kernel */
    bool blas;                /* OpenBLAS's sgemm, else gemm_nt / gemm_nn */
    bool cols;                /* A is Kd x mt (else mt x Kd) */
    bool rsc;                 /* rows: A's columns run (r, s, c), else (c, r, s) */
    bool direct;              /* A is x itself (1x1): tiles stay within an image */
    int64_t ps;               /* direct: x's stride between consecutive pixels of an image */
    int64_t span;             /* pixels a tile index runs over: P * Q when direct, else M */
    int64_t units;            /* images when direct, else 1 */
    int64_t mt, tiles;        /* pixels per tile; tiles per unit */
    int64_t kb, kblocks;      /* output channels per item (of Kg); blocks per group */
    bool w_direct;            /* w (f32) is already W_g's layout: rows at ws[0] */
} plan;

static bool env_on(const char *name) {
    const char *e = getenv(name);
    return e && *e && strcmp(e, "0") != 0;
}

static bool is_depthwise(const gaio__conv_args *a) {
    int64_t g = a->groups > 0 ? a->groups : 1;
    return g == a->c && a->c == a->k;
}

/* Whether w's elements (k, c, r, s) of one row lie at kd in A's column order. */
static bool w_is_layout(const gaio__conv_args *a, int64_t Cg, bool rsc) {
    if (rsc)
        return (Cg == 1 || a->ws[1] == 1) && (a->s == 1 || a->ws[3] == Cg) && (a->r == 1 || a->ws[2] == a->s * Cg);
    return (a->s == 1 || a->ws[3] == 1) && (a->r == 1 || a->ws[2] == a->s) && (Cg == 1 || a->ws[1] == a->r * a->s);
}

static void plan_make(const gaio__conv_args *a, plan *pl) {
    memset(pl, 0, sizeof *pl);
    pl->G = a->groups > 0 ? a->groups : 1;
    pl->Cg = a->c / pl->G;
    pl->Kg = a->k / pl->G;
    pl->Kd = pl->Cg * a->r * a->s;
    pl->M = a->n * a->p * a->q;
    pl->depthwise = is_depthwise(a);
    if (pl->depthwise) return;
    int64_t lim = INT32_MAX;
    pl->blas = !env_on("GAIO_DNN_CONV_NO_BLAS") && gaio__openblas_load(FN, NULL) == GAIO_OK;
    if (pl->blas) {
        lim = gaio__blas_int_max();
        if (pl->Kd > lim || pl->Kg > lim) pl->blas = false;
    }
    /* NCHW-like x (W's stride below C's): columns of pixels. */
    pl->cols = a->w > 1 && abs64(a->xs[3]) < abs64(a->xs[1]);
    pl->rsc = !pl->cols && abs64(a->xs[1]) <= abs64(a->xs[3]);

    if (a->dtype == GAIO_DTYPE_F32 && a->r == 1 && a->s == 1 && a->stride[0] == 1 && a->stride[1] == 1 &&
        a->pad[0] == 0 && a->pad[1] == 0 && a->pad[2] == 0 && a->pad[3] == 0) {
        /* P == H, Q == W: pixel (p, q) of an image is x's (p, q). */
        bool even = true;
        int64_t ps = a->xs[3];
        if (a->w == 1) ps = a->xs[2];
        else if (a->h > 1) even = a->xs[2] == a->w * a->xs[3];
        int64_t hw = a->h * a->w;
        if (even && ps > 0 && ps <= lim) {
            if (pl->cols) /* rows of channels at xs[1], pixels adjacent */
                pl->direct = ps == 1 && (pl->Cg == 1 || (a->xs[1] >= hw && a->xs[1] <= lim));
            else /* rows of pixels at ps, channels adjacent */
                pl->direct = (pl->Cg == 1 || a->xs[1] == 1) && (hw == 1 || ps >= pl->Cg);
            pl->ps = ps;
        }
    }
    pl->w_direct = a->dtype == GAIO_DTYPE_F32 && w_is_layout(a, pl->Cg, pl->rsc) &&
                   (pl->Kg == 1 || (a->ws[0] >= pl->Kd && a->ws[0] <= lim)) && a->ws[0] >= 0;

    pl->span = pl->direct ? a->p * a->q : pl->M;
    pl->units = pl->direct ? a->n : 1;
    int64_t per_pixel = (pl->direct ? 0 : pl->Kd) + pl->Kg;
    int64_t mt = TILE_FLOATS / max64(per_pixel, 1);
    mt = min64(max64(MIN_TILE, min64(mt, MAX_TILE)), pl->span);
    int threads = gaio__pool_size();
    if (threads < 1) threads = 1;
    /* Too few tiles to go round: first blocks of output channels (each sgemm call packs
     * its block of W again, so that the weights of a layer of few pixels and many
     * channels are packed once in all), then smaller tiles. */
    int64_t want = (int64_t)CHUNKS_PER_WORKER * threads, outer = pl->G * pl->units;
    int64_t kblocks = 1;
    if (outer * div_up(pl->span, mt) < want) {
        kblocks = max64(1, min64(div_up(want, outer * div_up(pl->span, mt)), pl->Kg / MIN_KBLOCK));
        if (outer * kblocks * div_up(pl->span, mt) < want)
            mt = max64(min64(MIN_SPLIT_TILE, mt), div_up(pl->span, div_up(want, outer * kblocks)));
    }
    mt = div_up(mt, TILE_ALIGN) * TILE_ALIGN;
    pl->mt = max64(1, min64(mt, pl->span));
    pl->tiles = div_up(pl->span, pl->mt);
    pl->kb = kblocks > 1 ? min64(pl->Kg, div_up(div_up(pl->Kg, kblocks), TILE_ALIGN) * TILE_ALIGN) : pl->Kg;
    pl->kblocks = div_up(pl->Kg, pl->kb);
}

void gaio__conv_gemm_engine(const gaio__conv_args *a, char *out, size_t size) {
    if (!out || !size) return;
    plan pl;
    plan_make(a, &pl);
    if (pl.depthwise)
        snprintf(out, size, "gaio depthwise (host kernel)");
    else
        snprintf(out, size, "gaio %s + %s", pl.direct ? "1x1" : "im2col",
                 pl.blas ? "OpenBLAS sgemm" : "built-in GEMM loop");
}

/* ---- gemm_nt: C (m x n) = A (m x k) * B (n x k)^T, row-major, no OpenBLAS ---- */

typedef float v8f __attribute__((vector_size(32)));
#define LD8(v, p) memcpy(&(v), (p), sizeof(v8f))
#define HSUM8(v) ((((v)[0] + (v)[4]) + ((v)[1] + (v)[5])) + (((v)[2] + (v)[6]) + ((v)[3] + (v)[7])))

GEMM_CLONES static void gemm_nt(int64_t m, int64_t n, int64_t k, const float *restrict a, int64_t lda,
                                const float *restrict b, int64_t ldb, float *restrict c, int64_t ldc) {
    const int64_t k8 = k - k % 8;
    int64_t i = 0;
    for (; i + 4 <= m; i += 4) {
        const float *a0 = a + i * lda, *a1 = a0 + lda, *a2 = a1 + lda, *a3 = a2 + lda;
        int64_t j = 0;
        for (; j + 2 <= n; j += 2) {
            const float *b0 = b + j * ldb, *b1 = b0 + ldb;
            v8f s00 = {0}, s01 = {0}, s10 = {0}, s11 = {0}, s20 = {0}, s21 = {0}, s30 = {0}, s31 = {0};
            for (int64_t p = 0; p < k8; p += 8) {
                v8f x0, x1, x2, x3, y0, y1;
                LD8(y0, b0 + p);
                LD8(y1, b1 + p);
                LD8(x0, a0 + p);
                LD8(x1, a1 + p);
                LD8(x2, a2 + p);
                LD8(x3, a3 + p);
                s00 += x0 * y0, s01 += x0 * y1, s10 += x1 * y0, s11 += x1 * y1;
                s20 += x2 * y0, s21 += x2 * y1, s30 += x3 * y0, s31 += x3 * y1;
            }
            float t00 = HSUM8(s00), t01 = HSUM8(s01), t10 = HSUM8(s10), t11 = HSUM8(s11);
            float t20 = HSUM8(s20), t21 = HSUM8(s21), t30 = HSUM8(s30), t31 = HSUM8(s31);
            for (int64_t p = k8; p < k; p++) {
                t00 += a0[p] * b0[p], t01 += a0[p] * b1[p], t10 += a1[p] * b0[p], t11 += a1[p] * b1[p];
                t20 += a2[p] * b0[p], t21 += a2[p] * b1[p], t30 += a3[p] * b0[p], t31 += a3[p] * b1[p];
            }
            float *c0 = c + i * ldc + j;
            c0[0] = t00, c0[1] = t01, c0[ldc] = t10, c0[ldc + 1] = t11;
            c0[2 * ldc] = t20, c0[2 * ldc + 1] = t21, c0[3 * ldc] = t30, c0[3 * ldc + 1] = t31;
        }
        for (; j < n; j++) {
            const float *b0 = b + j * ldb;
            v8f s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0};
            for (int64_t p = 0; p < k8; p += 8) {
                v8f x0, x1, x2, x3, y0;
                LD8(y0, b0 + p);
                LD8(x0, a0 + p);
                LD8(x1, a1 + p);
                LD8(x2, a2 + p);
                LD8(x3, a3 + p);
                s0 += x0 * y0, s1 += x1 * y0, s2 += x2 * y0, s3 += x3 * y0;
            }
            float t0 = HSUM8(s0), t1 = HSUM8(s1), t2 = HSUM8(s2), t3 = HSUM8(s3);
            for (int64_t p = k8; p < k; p++)
                t0 += a0[p] * b0[p], t1 += a1[p] * b0[p], t2 += a2[p] * b0[p], t3 += a3[p] * b0[p];
            c[i * ldc + j] = t0, c[(i + 1) * ldc + j] = t1, c[(i + 2) * ldc + j] = t2, c[(i + 3) * ldc + j] = t3;
        }
    }
    for (; i < m; i++) {
        const float *a0 = a + i * lda;
        for (int64_t j = 0; j < n; j++) {
            const float *b0 = b + j * ldb;
            v8f s0 = {0};
            for (int64_t p = 0; p < k8; p += 8) {
                v8f x0, y0;
                LD8(y0, b0 + p);
                LD8(x0, a0 + p);
                s0 += x0 * y0;
            }
            float t0 = HSUM8(s0);
            for (int64_t p = k8; p < k; p++) t0 += a0[p] * b0[p];
            c[i * ldc + j] = t0;
        }
    }
}

/* C (m x n) = A (m x k) * B (k x n), row-major, no OpenBLAS: 4 x 16 (then 4 x 8)
 * blocks of C, each row of B's block times a broadcast element of each of A's 4 rows. */
GEMM_CLONES static void gemm_nn(int64_t m, int64_t n, int64_t k, const float *restrict a, int64_t lda,
                                const float *restrict b, int64_t ldb, float *restrict c, int64_t ldc) {
    int64_t i = 0;
    for (; i + 4 <= m; i += 4) {
        const float *a0 = a + i * lda, *a1 = a0 + lda, *a2 = a1 + lda, *a3 = a2 + lda;
        int64_t j = 0;
        for (; j + 16 <= n; j += 16) {
            v8f s00 = {0}, s01 = {0}, s10 = {0}, s11 = {0}, s20 = {0}, s21 = {0}, s30 = {0}, s31 = {0};
            for (int64_t p = 0; p < k; p++) {
                v8f y0, y1;
                LD8(y0, b + p * ldb + j);
                LD8(y1, b + p * ldb + j + 8);
                const float x0 = a0[p], x1 = a1[p], x2 = a2[p], x3 = a3[p];
                s00 += y0 * x0, s01 += y1 * x0, s10 += y0 * x1, s11 += y1 * x1;
                s20 += y0 * x2, s21 += y1 * x2, s30 += y0 * x3, s31 += y1 * x3;
            }
            float *c0 = c + i * ldc + j;
            memcpy(c0, &s00, sizeof s00), memcpy(c0 + 8, &s01, sizeof s01);
            memcpy(c0 + ldc, &s10, sizeof s10), memcpy(c0 + ldc + 8, &s11, sizeof s11);
            memcpy(c0 + 2 * ldc, &s20, sizeof s20), memcpy(c0 + 2 * ldc + 8, &s21, sizeof s21);
            memcpy(c0 + 3 * ldc, &s30, sizeof s30), memcpy(c0 + 3 * ldc + 8, &s31, sizeof s31);
        }
        for (; j + 8 <= n; j += 8) {
            v8f s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0};
            for (int64_t p = 0; p < k; p++) {
                v8f y0;
                LD8(y0, b + p * ldb + j);
                s0 += y0 * a0[p], s1 += y0 * a1[p], s2 += y0 * a2[p], s3 += y0 * a3[p];
            }
            float *c0 = c + i * ldc + j;
            memcpy(c0, &s0, sizeof s0), memcpy(c0 + ldc, &s1, sizeof s1);
            memcpy(c0 + 2 * ldc, &s2, sizeof s2), memcpy(c0 + 3 * ldc, &s3, sizeof s3);
        }
        for (; j < n; j++) {
            float t0 = 0, t1 = 0, t2 = 0, t3 = 0;
            for (int64_t p = 0; p < k; p++) {
                const float y0 = b[p * ldb + j];
                t0 += a0[p] * y0, t1 += a1[p] * y0, t2 += a2[p] * y0, t3 += a3[p] * y0;
            }
            c[i * ldc + j] = t0, c[(i + 1) * ldc + j] = t1, c[(i + 2) * ldc + j] = t2, c[(i + 3) * ldc + j] = t3;
        }
    }
    for (; i < m; i++) {
        const float *a0 = a + i * lda;
        int64_t j = 0;
        for (; j + 8 <= n; j += 8) {
            v8f s0 = {0};
            for (int64_t p = 0; p < k; p++) {
                v8f y0;
                LD8(y0, b + p * ldb + j);
                s0 += y0 * a0[p];
            }
            memcpy(c + i * ldc + j, &s0, sizeof s0);
        }
        for (; j < n; j++) {
            float t0 = 0;
            for (int64_t p = 0; p < k; p++) t0 += a0[p] * b[p * ldb + j];
            c[i * ldc + j] = t0;
        }
    }
}

/* ---- the job ---- */

typedef struct conv_job {
    const gaio__conv_args *a;
    plan pl;
    const float *w;   /* row k (= g * Kg + kk) of W at w + k * ldw: Kd values in A's column order */
    int64_t ldw;
    const float *bias; /* K f32 values, or NULL */
    size_t a_floats, d_floats, bytes; /* a range call's scratch: A, D, offsets, runs */
    atomic_int no_memory;
} conv_job;

/* A run of a tile's pixels along one output row: pixels q0.. of row p of image n are
 * the tile's i0... */
typedef struct run {
    int64_t n, p, q0, cnt, i0;
} run;

static int64_t runs_of(const gaio__conv_args *a, int64_t m0, int64_t rows, run *out) {
    int64_t nr = 0;
    for (int64_t i = 0, m = m0; i < rows;) {
        int64_t q = m % a->q, np = m / a->q;
        int64_t cnt = min64(a->q - q, rows - i);
        out[nr++] = (run){np / a->p, np % a->p, q, cnt, i};
        i += cnt, m += cnt;
    }
    return nr;
}

/* dst[0, cnt) = x's elements off, off + stride, ... as f32. */
static void load_run(float *restrict dst, const void *x, bool f16, int64_t off, int64_t cnt, int64_t stride) {
    if (cnt <= 0) return;
    if (f16) {
        const uint16_t *s = (const uint16_t *)x + off;
        if (stride == 1)
            for (int64_t i = 0; i < cnt; i++) dst[i] = h2f(s[i]);
        else
            for (int64_t i = 0; i < cnt; i++) dst[i] = h2f(s[i * stride]);
    } else {
        const float *s = (const float *)x + off;
        if (stride == 1)
            memcpy(dst, s, (size_t)cnt * sizeof(float));
        else
            for (int64_t i = 0; i < cnt; i++) dst[i] = s[i * stride];
    }
}

static void zero(float *dst, int64_t cnt) {
    if (cnt > 0) memset(dst, 0, (size_t)cnt * sizeof(float));
}

/* A as rows x Kd: the taps of each pixel of the tile in a row. */
static void gather_rows(const conv_job *j, int64_t g, const run *runs, int64_t nr, float *A) {
    const gaio__conv_args *a = j->a;
    const plan *pl = &j->pl;
    const bool f16 = a->dtype == GAIO_DTYPE_F16;
    const int64_t H = a->h, W = a->w, R = a->r, S = a->s, Cg = pl->Cg, Kd = pl->Kd;
    const int64_t sh = a->stride[0], sw = a->stride[1], dh = a->dilation[0], dw = a->dilation[1];
    for (int64_t u = 0; u < nr; u++) {
        const run *rn = &runs[u];
        const int64_t base = rn->n * a->xs[0] + g * Cg * a->xs[1], h0 = rn->p * sh - a->pad[0];
        for (int64_t t = 0; t < rn->cnt; t++) {
            float *row = A + (rn->i0 + t) * Kd;
            const int64_t w0 = (rn->q0 + t) * sw - a->pad[1];
            if (pl->rsc) {
                for (int64_t r = 0; r < R; r++) {
                    const int64_t ih = h0 + r * dh;
                    float *rr = row + r * S * Cg;
                    if (ih < 0 || ih >= H) {
                        zero(rr, S * Cg);
                        continue;
                    }
                    for (int64_t s = 0; s < S; s++) {
                        const int64_t iw = w0 + s * dw;
                        if (iw < 0 || iw >= W)
                            zero(rr + s * Cg, Cg);
                        else
                            load_run(rr + s * Cg, a->x, f16, base + ih * a->xs[2] + iw * a->xs[3], Cg, a->xs[1]);
                    }
                }
            } else {
                /* Taps s in [slo, shi) are inside x's columns. */
                const int64_t slo = min64(S, max64(0, ceil_div(-w0, dw)));
                const int64_t shi = max64(slo, min64(S, floor_div(W - 1 - w0, dw) + 1));
                for (int64_t c = 0; c < Cg; c++)
                    for (int64_t r = 0; r < R; r++) {
                        float *d = row + (c * R + r) * S;
                        const int64_t ih = h0 + r * dh;
                        if (ih < 0 || ih >= H) {
                            zero(d, S);
                            continue;
                        }
                        zero(d, slo);
                        load_run(d + slo, a->x, f16, base + c * a->xs[1] + ih * a->xs[2] + (w0 + slo * dw) * a->xs[3],
                                 shi - slo, dw * a->xs[3]);
                        zero(d + shi, S - shi);
                    }
            }
        }
    }
}

/* A as Kd x rows: for each tap (c, r, s), its value at every pixel of the tile. */
static void gather_cols(const conv_job *j, int64_t g, const run *runs, int64_t nr, int64_t rows, float *A) {
    const gaio__conv_args *a = j->a;
    const bool f16 = a->dtype == GAIO_DTYPE_F16;
    const int64_t H = a->h, W = a->w, R = a->r, S = a->s, Cg = j->pl.Cg;
    const int64_t sh = a->stride[0], sw = a->stride[1], dh = a->dilation[0], dw = a->dilation[1];
    for (int64_t c = 0; c < Cg; c++)
        for (int64_t r = 0; r < R; r++)
            for (int64_t s = 0; s < S; s++) {
                float *dst = A + ((c * R + r) * S + s) * rows;
                const int64_t off = s * dw - a->pad[1]; /* pixel q reads column q * sw + off */
                const int64_t qlo = ceil_div(-off, sw), qhi = floor_div(W - 1 - off, sw) + 1;
                for (int64_t u = 0; u < nr; u++) {
                    const run *rn = &runs[u];
                    float *d = dst + rn->i0;
                    const int64_t ih = rn->p * sh - a->pad[0] + r * dh, q1 = rn->q0 + rn->cnt;
                    if (ih < 0 || ih >= H) {
                        zero(d, rn->cnt);
                        continue;
                    }
                    const int64_t qa = min64(q1, max64(rn->q0, qlo)), qb = max64(qa, min64(q1, qhi));
                    zero(d, qa - rn->q0);
                    load_run(d + (qa - rn->q0), a->x, f16,
                             rn->n * a->xs[0] + (g * Cg + c) * a->xs[1] + ih * a->xs[2] + (qa * sw + off) * a->xs[3],
                             qb - qa, sw * a->xs[3]);
                    zero(d + (qb - rn->q0), q1 - qb);
                }
            }
}

/* ---- the epilogue: y = act(D + bias + residual), in passes over D ---- */

/* dst[0], dst[ds], ... (cnt of them) += x's elements off, off + stride, ... (f32 or f16). */
static void add_run(float *restrict dst, int64_t ds, const void *x, bool f16, int64_t off, int64_t cnt,
                    int64_t stride) {
    if (f16) {
        const uint16_t *s = (const uint16_t *)x + off;
        if (stride == 1 && ds == 1)
            for (int64_t i = 0; i < cnt; i++) dst[i] += h2f(s[i]);
        else
            for (int64_t i = 0; i < cnt; i++) dst[i * ds] += h2f(s[i * stride]);
    } else {
        const float *s = (const float *)x + off;
        if (stride == 1 && ds == 1)
            for (int64_t i = 0; i < cnt; i++) dst[i] += s[i];
        else
            for (int64_t i = 0; i < cnt; i++) dst[i * ds] += s[i * stride];
    }
}

/* y's elements off, off + stride, ... = src[0], src[ss], ... (cnt of them; rounded to
 * f16 for an f16 y). */
static void store_run(void *y, bool f16, int64_t off, const float *restrict src, int64_t ss, int64_t cnt,
                      int64_t stride) {
    if (f16) {
        uint16_t *d = (uint16_t *)y + off;
        if (stride == 1 && ss == 1)
            for (int64_t i = 0; i < cnt; i++) d[i] = f2h(src[i]);
        else
            for (int64_t i = 0; i < cnt; i++) d[i * stride] = f2h(src[i * ss]);
    } else {
        float *d = (float *)y + off;
        if (stride == 1 && ss == 1)
            memcpy(d, src, (size_t)cnt * sizeof(float));
        else
            for (int64_t i = 0; i < cnt; i++) d[i * stride] = src[i * ss];
    }
}

/* The activation over n contiguous values: one loop per op, so that each folds its
 * switch away (and the simple ones vectorise). */
static void act_all(float *restrict d, int64_t n, int32_t op, float al, float be) {
    switch (op) {
#define ACT_CASE(OP)                                                       \
    case OP:                                                               \
        for (int64_t i = 0; i < n; i++) d[i] = gaio_pw_unary(OP, d[i], al, be); \
        break;
        ACT_CASE(GAIO_KPW_RELU)
        ACT_CASE(GAIO_KPW_CLIP)
        ACT_CASE(GAIO_KPW_SIGMOID)
        ACT_CASE(GAIO_KPW_SILU)
        ACT_CASE(GAIO_KPW_GELU)
        ACT_CASE(GAIO_KPW_GELU_TANH)
        ACT_CASE(GAIO_KPW_TANH)
        ACT_CASE(GAIO_KPW_HARD_SIGMOID)
        ACT_CASE(GAIO_KPW_HARD_SWISH)
#undef ACT_CASE
    case GAIO_KPW_IDENTITY: break;
    default: /* the rest, which convolutions rarely end in */
        for (int64_t i = 0; i < n; i++) d[i] = gaio_pw_unary(op, d[i], al, be);
        break;
    }
}

/* The tile's D (rows pixels x kn channels from k0) in place, then into y. D is pixel
 * rows (pix_rows: element (i, kk) at i * kn + kk) or channel rows (at kk * rows + i).
 * Bias, then residual, then activation, as depthwise_math.h's epilogue: the residual is
 * read before the tile's y is written (it may be y itself; no other item writes these
 * elements). The residual and y are walked in their own order: a pixel's channels when
 * their channel stride is the smaller, else runs of pixels along output rows. */
static void epilogue(const conv_job *j, int64_t k0, int64_t kn, float *D, bool pix_rows, const int64_t *yo,
                     const int64_t *ro, const run *runs, int64_t nr, int64_t rows) {
    const gaio__conv_args *a = j->a;
    const bool f16 = a->dtype == GAIO_DTYPE_F16;
    /* Element (i, kk) of D at i * di + kk * dk. */
    const int64_t di = pix_rows ? kn : 1, dk = pix_rows ? 1 : rows;
    if (j->bias) {
        const float *restrict b = j->bias + k0;
        if (pix_rows)
            for (int64_t i = 0; i < rows; i++) {
                float *restrict d = D + i * kn;
                for (int64_t kk = 0; kk < kn; kk++) d[kk] += b[kk];
            }
        else
            for (int64_t kk = 0; kk < kn; kk++) {
                float *restrict d = D + kk * rows;
                const float bv = b[kk];
                for (int64_t i = 0; i < rows; i++) d[i] += bv;
            }
    }
    if (a->residual) {
        const int64_t c1 = a->rs[1], w1 = a->rs[3];
        if (abs64(c1) <= abs64(w1) || a->q == 1)
            for (int64_t i = 0; i < rows; i++) add_run(D + i * di, dk, a->residual, f16, ro[i] + k0 * c1, kn, c1);
        else
            for (int64_t kk = 0; kk < kn; kk++)
                for (int64_t u = 0; u < nr; u++)
                    add_run(D + kk * dk + runs[u].i0 * di, di, a->residual, f16, ro[runs[u].i0] + (k0 + kk) * c1,
                            runs[u].cnt, w1);
    }
    if (a->has_act) act_all(D, rows * kn, (int32_t)a->act.op, a->act.alpha, a->act.beta);
    const int64_t c1 = a->ys[1], w1 = a->ys[3];
    if (abs64(c1) <= abs64(w1) || a->q == 1)
        for (int64_t i = 0; i < rows; i++) store_run(a->y, f16, yo[i] + k0 * c1, D + i * di, dk, kn, c1);
    else
        for (int64_t kk = 0; kk < kn; kk++)
            for (int64_t u = 0; u < nr; u++)
                store_run(a->y, f16, yo[runs[u].i0] + (k0 + kk) * c1, D + kk * dk + runs[u].i0 * di, di, runs[u].cnt,
                          w1);
}

/* A range call's scratch, and what its A holds. */
typedef struct tile_buf {
    float *A, *D;
    int64_t *yo, *ro; /* pixel i's offset in y and in the residual */
    run *runs;
    int64_t nr;
    int64_t g, m0, rows; /* A (and yo, ro, runs) are of these pixels of group g; g -1: none yet */
    const float *pa;     /* A as sgemm reads it: the scratch, or x itself */
    int64_t lda;
} tile_buf;

/* Fills t for pixels [m0, m0 + rows) of group g, unless it holds them already (the
 * previous item was another block of output channels of the same tile). */
static void tile_a(const conv_job *j, int64_t g, int64_t m0, int64_t rows, tile_buf *t) {
    if (t->g == g && t->m0 == m0 && t->rows == rows) return;
    const gaio__conv_args *a = j->a;
    const plan *pl = &j->pl;
    t->g = g, t->m0 = m0, t->rows = rows;
    t->nr = runs_of(a, m0, rows, t->runs);
    for (int64_t u = 0; u < t->nr; u++) {
        const run *rn = &t->runs[u];
        for (int64_t i = 0; i < rn->cnt; i++) {
            const int64_t q = rn->q0 + i;
            t->yo[rn->i0 + i] = rn->n * a->ys[0] + rn->p * a->ys[2] + q * a->ys[3];
            t->ro[rn->i0 + i] = rn->n * a->rs[0] + rn->p * a->rs[2] + q * a->rs[3];
        }
    }
    /* A and its leading dimension (one that sgemm accepts also where it is unused). */
    t->pa = t->A;
    if (pl->direct) {
        const int64_t n = t->runs[0].n, first = m0 - n * a->p * a->q;
        t->pa = (const float *)a->x + n * a->xs[0] + g * pl->Cg * a->xs[1] + first * pl->ps;
        t->lda = pl->cols ? (pl->Cg > 1 ? a->xs[1] : rows) : (rows > 1 ? pl->ps : pl->Kd);
    } else if (pl->cols) {
        gather_cols(j, g, t->runs, t->nr, rows, t->A);
        t->lda = rows;
    } else {
        gather_rows(j, g, t->runs, t->nr, t->A);
        t->lda = pl->Kd;
    }
}

/* One item: output channels [kk0, kk0 + kn) of group g at pixels [m0, m0 + rows). */
static void tile(const conv_job *j, int64_t g, int64_t kk0, int64_t kn, int64_t m0, int64_t rows, tile_buf *t) {
    const plan *pl = &j->pl;
    const int64_t Kd = pl->Kd, k0 = g * pl->Kg + kk0;
    tile_a(j, g, m0, rows, t);
    const float *wb = j->w + k0 * j->ldw;
    const int64_t ldw = kn > 1 ? j->ldw : Kd;
    if (pl->cols) { /* D (kn x rows) = W_b A */
        if (pl->blas)
            gaio__blas_sgemm(false, false, kn, rows, Kd, 1.0f, wb, ldw, t->pa, t->lda, 0.0f, t->D, rows);
        else
            gemm_nn(kn, rows, Kd, wb, ldw, t->pa, t->lda, t->D, rows);
        epilogue(j, k0, kn, t->D, false, t->yo, t->ro, t->runs, t->nr, rows);
    } else { /* D (rows x kn) = A W_b^T */
        if (pl->blas)
            gaio__blas_sgemm(false, true, rows, kn, Kd, 1.0f, t->pa, t->lda, wb, ldw, 0.0f, t->D, kn);
        else
            gemm_nt(rows, kn, Kd, t->pa, t->lda, wb, ldw, t->D, kn);
        epilogue(j, k0, kn, t->D, true, t->yo, t->ro, t->runs, t->nr, rows);
    }
}

/* Items are (group, unit, tile, channel block), the channel blocks of a tile adjacent
 * (they share its A). */
static void conv_range(void *arg, size_t begin, size_t end) {
    conv_job *j = arg;
    const plan *pl = &j->pl;
    char *buf = NULL;
    if (posix_memalign((void **)&buf, SCRATCH_ALIGN, j->bytes) != 0) {
        atomic_store_explicit(&j->no_memory, 1, memory_order_relaxed);
        return;
    }
    tile_buf t = {.A = (float *)buf, .g = -1};
    t.D = t.A + j->a_floats;
    t.yo = (int64_t *)(t.D + j->d_floats);
    t.ro = t.yo + pl->mt;
    t.runs = (run *)(t.ro + pl->mt);
    for (size_t item = begin; item < end; item++) {
        int64_t rest = (int64_t)item;
        const int64_t kbi = rest % pl->kblocks;
        rest /= pl->kblocks;
        const int64_t ti = rest % pl->tiles;
        rest /= pl->tiles;
        const int64_t unit = rest % pl->units, g = rest / pl->units;
        const int64_t first = ti * pl->mt, rows = min64(pl->mt, pl->span - first);
        const int64_t kk0 = kbi * pl->kb, kn = min64(pl->kb, pl->Kg - kk0);
        tile(j, g, kk0, kn, unit * pl->span + first, rows, &t);
    }
    free(buf);
}

/* ---- weights ---- */

typedef struct pack_job {
    const gaio__conv_args *a;
    int64_t Cg, Kd;
    bool rsc;
    float *dst;
} pack_job;

/* Rows k of W: w's (k, c, r, s) at kd in A's column order, as f32. */
static void pack_range(void *arg, size_t begin, size_t end) {
    const pack_job *p = arg;
    const gaio__conv_args *a = p->a;
    const bool f16 = a->dtype == GAIO_DTYPE_F16;
    const int64_t R = a->r, S = a->s, Cg = p->Cg;
    for (size_t k = begin; k < end; k++) {
        float *d = p->dst + (int64_t)k * p->Kd;
        for (int64_t c = 0; c < Cg; c++)
            for (int64_t r = 0; r < R; r++) {
                const int64_t kd = p->rsc ? r * S * Cg + c : (c * R + r) * S, step = p->rsc ? Cg : 1;
                const int64_t off = (int64_t)k * a->ws[0] + c * a->ws[1] + r * a->ws[2];
                for (int64_t s = 0; s < S; s++) {
                    const int64_t o = off + s * a->ws[3];
                    d[kd + s * step] = f16 ? h2f(((const uint16_t *)a->wt)[o]) : ((const float *)a->wt)[o];
                }
            }
    }
}

/* ---- depthwise: gaio's host kernel ---- */

static gaio_ktensor kt4(const void *p, gaio_dtype dt, int64_t d0, int64_t d1, int64_t d2, int64_t d3,
                        const int64_t *st) {
    gaio_ktensor t;
    memset(&t, 0, sizeof t);
    t.ptr = (uint64_t)(uintptr_t)p;
    t.ndim = 4;
    t.dtype = (int32_t)dt;
    t.shape[0] = d0, t.shape[1] = d1, t.shape[2] = d2, t.shape[3] = d3;
    for (int i = 0; i < 4; i++) t.strides[i] = st[i];
    return t;
}

/* The bias ([K]) and residual ([N, K, P, Q]) of a, as the depthwise and fc host
 * kernels take them (zeroed when absent); whether there is a bias. */
static int32_t epilogue_tensors(const gaio__conv_args *a, int64_t p, int64_t q, gaio_ktensor *b, gaio_ktensor *r) {
    if (a->residual) *r = kt4(a->residual, a->dtype, a->n, a->k, p, q, a->rs);
    if (!a->bias) return 0;
    b->ptr = (uint64_t)(uintptr_t)a->bias;
    b->ndim = 1;
    b->dtype = (int32_t)a->dtype;
    b->shape[0] = a->k;
    b->strides[0] = 1;
    return 1;
}

static gaio_status depthwise(const gaio__conv_args *a) {
    gaio_ktensor x = kt4(a->x, a->dtype, a->n, a->c, a->h, a->w, a->xs);
    gaio_ktensor w = kt4(a->wt, a->dtype, a->k, 1, a->r, a->s, a->ws);
    gaio_ktensor y = kt4(a->y, a->dtype, a->n, a->k, a->p, a->q, a->ys);
    gaio_ktensor b, r;
    memset(&b, 0, sizeof b);
    memset(&r, 0, sizeof r);
    gaio_kdw p;
    memset(&p, 0, sizeof p);
    p.sh = a->stride[0], p.sw = a->stride[1];
    p.dh = a->dilation[0], p.dw = a->dilation[1];
    p.pt = a->pad[0], p.pl = a->pad[1];
    p.c_inner = a->xs[1] == 1 && a->ys[1] == 1;
    p.act.op = GAIO_KPW_IDENTITY;
    if (a->has_act) p.act.op = (int32_t)a->act.op, p.act.alpha = a->act.alpha, p.act.beta = a->act.beta;
    p.has_bias = epilogue_tensors(a, a->p, a->q, &b, &r);
    p.has_res = a->residual != NULL;
    void *args[6] = {&x, &w, &b, &r, &y, &p};
    gaio_launch_info info;
    memset(&info, 0, sizeof info);
    for (const gaio_builtin_kernel *k = gaio__dnn_depthwise_kernels; k->name; k++)
        if (strcmp(k->name, "gaio_dnn_conv_depthwise") == 0) return k->fn(&info, args);
    return gaio__fail(GAIO_ERR_NOT_FOUND, FN, "the host kernel gaio_dnn_conv_depthwise is not in its table");
}

/* ---- a 1x1 window on 1x1 maps: gaio_dnn_conv_fc's host kernel, the GPU's sums ---- */

static bool fc_shape(const gaio__conv_args *a) {
    return a->groups == 1 && a->r == 1 && a->s == 1 && a->h == 1 && a->w == 1 && a->p == 1 && a->q == 1;
}

static gaio_status fc(const gaio__conv_args *a) {
    gaio_ktensor x = kt4(a->x, a->dtype, a->n, a->c, 1, 1, a->xs);
    gaio_ktensor w = kt4(a->wt, a->dtype, a->k, a->c, 1, 1, a->ws);
    gaio_ktensor y = kt4(a->y, a->dtype, a->n, a->k, 1, 1, a->ys);
    gaio_ktensor b, r;
    memset(&b, 0, sizeof b);
    memset(&r, 0, sizeof r);
    gaio_kfc p;
    memset(&p, 0, sizeof p);
    p.act.op = GAIO_KPW_IDENTITY;
    if (a->has_act) p.act.op = (int32_t)a->act.op, p.act.alpha = a->act.alpha, p.act.beta = a->act.beta;
    p.has_bias = epilogue_tensors(a, 1, 1, &b, &r);
    p.has_res = a->residual != NULL;
    gaio_fc_pick(&x, &w, &p);
    void *args[6] = {&x, &w, &b, &r, &y, &p};
    gaio_launch_info info;
    memset(&info, 0, sizeof info);
    for (const gaio_builtin_kernel *k = gaio__dnn_conv_fc_kernels; k->name; k++)
        if (strcmp(k->name, "gaio_dnn_conv_fc") == 0) return k->fn(&info, args);
    return gaio__fail(GAIO_ERR_NOT_FOUND, FN, "the host kernel gaio_dnn_conv_fc is not in its table");
}

/* ---- the call ---- */

gaio_status gaio__conv_gemm(const gaio__conv_args *a) {
    if (a->dtype != GAIO_DTYPE_F32 && a->dtype != GAIO_DTYPE_F16)
        return gaio__fail(GAIO_ERR_NOT_SUPPORTED, FN, "the host convolution takes f32 or f16");
    if (a->n == 0 || a->k == 0 || a->p == 0 || a->q == 0) return GAIO_OK; /* y is empty */
    conv_job j;
    memset(&j, 0, sizeof j);
    j.a = a;
    plan_make(a, &j.pl);
    const plan *pl = &j.pl;
    if (pl->depthwise) return depthwise(a);
    if (fc_shape(a)) return fc(a);

    /* Scratch of a range call: A, D (each rounded to whole cache lines), the pixels'
     * offsets in y and the residual, and the runs (at most one per pixel, and one more). */
    const size_t align_floats = SCRATCH_ALIGN / sizeof(float);
    size_t a_floats = 0, d_floats, runs_bytes, bytes;
    bool ok = (pl->direct || gaio__mul_ok((size_t)pl->mt, (size_t)pl->Kd, &a_floats)) &&
              gaio__mul_ok((size_t)pl->mt, (size_t)pl->kb, &d_floats) &&
              gaio__mul_ok((size_t)pl->mt + 2, sizeof(run), &runs_bytes);
    if (ok) {
        j.a_floats = (a_floats + align_floats - 1) / align_floats * align_floats;
        j.d_floats = (d_floats + align_floats - 1) / align_floats * align_floats;
        size_t floats = j.a_floats + j.d_floats, fbytes;
        ok = floats >= j.a_floats && gaio__mul_ok(floats, sizeof(float), &fbytes) &&
             !__builtin_add_overflow(fbytes, 2 * (size_t)pl->mt * sizeof(int64_t), &bytes) &&
             !__builtin_add_overflow(bytes, runs_bytes, &bytes);
    }
    if (!ok)
        return gaio__fail(GAIO_ERR_NO_MEMORY, FN,
                          "the scratch of a %lld-pixel tile of %lld taps is over SIZE_MAX bytes", (long long)pl->mt,
                          (long long)pl->Kd);
    j.bytes = bytes;
    atomic_init(&j.no_memory, 0);

    /* The weights in A's column order, and the bias, as f32. */
    float *wpack = NULL, *bias32 = NULL;
    if (pl->w_direct) {
        j.w = a->wt;
        j.ldw = a->ws[0];
    } else {
        size_t wfloats, wbytes;
        if (!gaio__mul_ok((size_t)a->k, (size_t)pl->Kd, &wfloats) || !gaio__mul_ok(wfloats, sizeof(float), &wbytes) ||
            !(wpack = malloc(wbytes)))
            return gaio__fail(GAIO_ERR_NO_MEMORY, FN, "out of host memory for %lld x %lld f32 weights", (long long)a->k,
                              (long long)pl->Kd);
        pack_job pj = {.a = a, .Cg = pl->Cg, .Kd = pl->Kd, .rsc = pl->rsc, .dst = wpack};
        gaio__parallel_for((size_t)a->k, (size_t)max64(1, 16384 / max64(pl->Kd, 1)), pack_range, &pj);
        j.w = wpack;
        j.ldw = pl->Kd;
    }
    if (a->bias && a->dtype == GAIO_DTYPE_F16) {
        if (!(bias32 = malloc((size_t)a->k * sizeof(float)))) {
            free(wpack);
            return gaio__fail(GAIO_ERR_NO_MEMORY, FN, "out of host memory for %lld bias values", (long long)a->k);
        }
        for (int64_t k = 0; k < a->k; k++) bias32[k] = h2f(((const uint16_t *)a->bias)[k]);
        j.bias = bias32;
    } else {
        j.bias = a->bias;
    }

    const size_t items = (size_t)(pl->G * pl->units * pl->tiles * pl->kblocks);
    const double flops_item = 2.0 * (double)pl->mt * (double)pl->kb * (double)pl->Kd;
    const size_t grain = flops_item >= MIN_CHUNK_FLOPS ? 1 : (size_t)(MIN_CHUNK_FLOPS / flops_item);
    gaio__parallel_for(items, grain, conv_range, &j);
    free(wpack);
    free(bias32);
    if (atomic_load_explicit(&j.no_memory, memory_order_relaxed))
        return gaio__fail(GAIO_ERR_NO_MEMORY, FN, "out of host memory for %zu bytes of convolution scratch per worker",
                          j.bytes);
    return GAIO_OK;
}
