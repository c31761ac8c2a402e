/* The host GEMM: D = act(alpha * op(A) op(B) + beta * C + bias) for each batch, with
 * OpenBLAS's sgemm on tiles of D spread over gaio's worker pool.
 *
 * D is cut into tiles of whole rows (and, when there are too few rows to feed every
 * worker, of columns too): one work item is (batch, row block, column tile), and
 * gaio__parallel_for hands items to the workers. Each item is one single-threaded
 * sgemm; its epilogue (bias, activation, f16 rounding) runs on the tile right after,
 * while it is still in cache.
 *
 * The C term uses sgemm's own beta: when C is not D, the tile of C is first copied
 * into the tile of D (or, for f16, converted into the f32 staging tile), which gives
 * exactly sgemm's alpha * AB + beta * C. With beta == 0 (or no C) nothing of C or D is
 * read, as in BLAS; with alpha == 0 A and B are not read.
 *
 * F16 A and B are widened to f32 (exactly): B once per batch into scratch that every
 * item of the batch reads, A per row block into the worker's own scratch. An f16 D is
 * computed in an f32 staging tile and rounded to nearest even at the end.
 *
 * Sizes: each chunk of work the pool takes is at least MIN_CHUNK_FLOPS (smaller GEMMs
 * run on the calling thread alone: waking a worker costs more than it saves), and a
 * GEMM large enough is cut into about CHUNKS_PER_WORKER items per worker, of at most
 * MAX_BLOCK_ROWS rows. Few, large items, because each sgemm call packs all of op(B)
 * again: 512 x 512 x 512 f32 took 2.9 ms as one call, 3.0 ms in 2 blocks, 3.1 in 4,
 * 3.4 in 8 and 3.7 in 16 (OpenBLAS 0.3.21, a 2-vCPU AMD EPYC VM giving about one core
 * of throughput). Two per worker still lets a worker that finishes early take over
 * part of the work of one that was held up. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/half.h"
#include "core/workers.h"
#include "dnn/cpu/openblas.h"
#include "dnn/dnn_internal.h"

#define MIN_CHUNK_FLOPS 1048576.0 /* 2^20: a chunk is ~10-50 us of one core's sgemm */
#ifndef CHUNKS_PER_WORKER
#define CHUNKS_PER_WORKER 2 /* items a large GEMM is cut into, per worker (see below) */
#endif
#define MAX_BLOCK_ROWS 256        /* rows of D per sgemm call */
#define ROW_ALIGN 8               /* row blocks are multiples of this (sgemm's register tiles) */
#define COL_ALIGN 64              /* column tiles are multiples of this */
#define F16_TILE_COLS 2048        /* an f16 D is staged in f32 tiles of at most this many columns */
/* (overridable to test the limits with small sizes) */
#ifndef SCRATCH_FLOATS
#define SCRATCH_FLOATS (1u << 20) /* 4 MiB of scratch per range call (f16 A panel, f32 tile) at most */
#endif
#ifndef B_SCRATCH_BYTES
#define B_SCRATCH_BYTES ((size_t)64 << 20) /* f32 copies of f16 B converted at a time (at least one) */
#endif


static void h2f_row(const uint16_t *restrict s, float *restrict d, int64_t n) {
    for (int64_t i = 0; i < n; i++) d[i] = h2f(s[i]);
}
static void f2h_row(const float *restrict s, uint16_t *restrict d, int64_t n) {
    for (int64_t i = 0; i < n; i++) d[i] = f2h(s[i]);
}

/* ---- the epilogue on one row of the tile ---- */

static void epilogue_row(float *restrict row, int64_t n, const float *restrict bias, gaio_activation act) {
    if (bias)
        for (int64_t j = 0; j < n; j++) row[j] += bias[j];
    if (act == GAIO_ACT_RELU) {
        for (int64_t j = 0; j < n; j++) row[j] = row[j] < 0.0f ? 0.0f : row[j]; /* NaN stays NaN */
    } else if (act == GAIO_ACT_GELU) {
        const float s = 0.7978845608028654f; /* sqrt(2 / pi) */
        for (int64_t j = 0; j < n; j++) {
            float x = row[j];
            row[j] = 0.5f * x * (1.0f + tanhf(s * (x + 0.044715f * x * x * x)));
        }
    }
}

/* ---- the job ---- */

typedef struct gemm_job {
    const gaio__gemm_args *g;
    bool product;      /* alpha != 0 and k > 0: sgemm runs; else D = beta * C (or 0) */
    bool use_c;        /* C is read: given and beta != 0 */
    int64_t mb, nb;    /* rows per block, columns per tile */
    int64_t row_blocks, col_tiles;
    int64_t batch0;    /* the first batch of the items of this round */
    const float *bias; /* f32 (converted when f16), or NULL */
    const float *bf;   /* f16 A/B: B of batches batch0.. as packed f32, or NULL */
    int64_t bf_stride; /* floats between those batches; 0: one B for all */
    int64_t ldbf;      /* its row length: n, or k with trans_b */
    int64_t lda, ldb, ldd; /* as passed to sgemm (a stored matrix of one row may have any stride) */
    size_t scratch_floats; /* per range call */
    atomic_int no_memory;
} gemm_job;

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }
static int64_t div_up(int64_t a, int64_t b) { return (a + b - 1) / b; }

static void gemm_range(void *arg, size_t begin, size_t end) {
    gemm_job *j = arg;
    const gaio__gemm_args *g = j->g;
    const bool ab16 = g->ab_dtype == GAIO_DTYPE_F16, cd16 = g->cd_dtype == GAIO_DTYPE_F16;
    const size_t cd_size = cd16 ? 2 : 4;
    float *scratch = NULL;
    if (j->scratch_floats) {
        scratch = malloc(j->scratch_floats * sizeof(float));
        if (!scratch) {
            atomic_store_explicit(&j->no_memory, 1, memory_order_relaxed);
            return;
        }
    }
    float *apanel = scratch; /* f16 A: mb x k (or k x mb with trans_a) */
    float *stage = scratch && ab16 && j->product ? scratch + j->mb * g->k : scratch; /* f16 D: mb x nb */
    const uint16_t *panel_a = NULL; /* what apanel holds: block panel_block of this A */
    int64_t panel_block = -1;

    for (size_t item = begin; item < end; item++) {
        int64_t t = (int64_t)item;
        int64_t ct = t % j->col_tiles;
        t /= j->col_tiles;
        int64_t rb = t % j->row_blocks;
        int64_t b = j->batch0 + t / j->row_blocks;
        int64_t i0 = rb * j->mb, rows = min64(j->mb, g->m - i0);
        int64_t j0 = ct * j->nb, cols = min64(j->nb, g->n - j0);

        char *dtile = (char *)g->d + ((size_t)(b * g->d_batch_stride + i0 * g->ldd + j0)) * cd_size;
        const char *ctile =
            j->use_c ? (const char *)g->c + ((size_t)(b * g->c_batch_stride + i0 * g->ldc + j0)) * cd_size : NULL;

        /* The output of sgemm: D itself for an f32 D, else the staging tile. */
        float *out = cd16 ? stage : (float *)dtile;
        int64_t ldo = cd16 ? cols : j->ldd;

        /* C's term goes in first, for sgemm's beta. */
        if (ctile) {
            if (cd16) {
                for (int64_t r = 0; r < rows; r++)
                    h2f_row((const uint16_t *)ctile + r * g->ldc, out + r * ldo, cols);
            } else if (ctile != dtile || g->ldc != g->ldd) {
                for (int64_t r = 0; r < rows; r++)
                    memmove(out + r * ldo, (const float *)ctile + r * g->ldc, (size_t)cols * sizeof(float));
            }
        }
        float beta = ctile ? g->beta : 0.0f;

        if (j->product) {
            const float *pa, *pb;
            int64_t lda, ldb;
            if (ab16) {
                const uint16_t *a = (const uint16_t *)g->a + b * g->a_batch_stride;
                if (a != panel_a || rb != panel_block) { /* widen this block's rows of op(A) */
                    if (g->trans_a) /* A is k x m: the block is columns i0.. of every row */
                        for (int64_t p = 0; p < g->k; p++) h2f_row(a + p * g->lda + i0, apanel + p * rows, rows);
                    else
                        for (int64_t r = 0; r < rows; r++) h2f_row(a + (i0 + r) * g->lda, apanel + r * g->k, g->k);
                    panel_a = a;
                    panel_block = rb;
                }
                pa = apanel;
                lda = g->trans_a ? rows : g->k;
                const float *bf = j->bf + (b - j->batch0) * j->bf_stride;
                pb = g->trans_b ? bf + j0 * j->ldbf : bf + j0;
                ldb = j->ldbf;
            } else {
                const float *a = (const float *)g->a + b * g->a_batch_stride;
                const float *bm = (const float *)g->b + b * g->b_batch_stride;
                pa = g->trans_a ? a + i0 : a + i0 * g->lda;
                pb = g->trans_b ? bm + j0 * g->ldb : bm + j0;
                lda = j->lda;
                ldb = j->ldb;
            }
            gaio__blas_sgemm(g->trans_a, g->trans_b, rows, cols, g->k, g->alpha, pa, lda, pb, ldb, beta, out, ldo);
        } else if (beta == 0.0f) {
            for (int64_t r = 0; r < rows; r++) memset(out + r * ldo, 0, (size_t)cols * sizeof(float));
        } else if (beta != 1.0f) {
            for (int64_t r = 0; r < rows; r++) {
                float *o = out + r * ldo;
                for (int64_t c = 0; c < cols; c++) o[c] *= beta;
            }
        }

        const float *bias = j->bias ? j->bias + j0 : NULL;
        for (int64_t r = 0; r < rows; r++) {
            float *o = out + r * ldo;
            epilogue_row(o, cols, bias, g->act);
            if (cd16) f2h_row(o, (uint16_t *)dtile + r * g->ldd, cols);
        }
    }
    free(scratch);
}

/* Widens rows of f16 B for the batches of one round: item q is row q % rows of batch
 * batch0 + q / rows. */
typedef struct bconv_job {
    const gaio__gemm_args *g;
    int64_t batch0, rows, cols;
    float *dst;
} bconv_job;

static void bconv_range(void *arg, size_t begin, size_t end) {
    const bconv_job *j = arg;
    for (size_t q = begin; q < end; q++) {
        int64_t bi = (int64_t)q / j->rows, r = (int64_t)q % j->rows;
        const uint16_t *src = (const uint16_t *)j->g->b + (j->batch0 + bi) * j->g->b_batch_stride + r * j->g->ldb;
        h2f_row(src, j->dst + (bi * j->rows + r) * j->cols, j->cols);
    }
}

/* The stride sgemm is given for a stored matrix of `rows` rows of `cols`: a matrix of
 * one row may have any (it is never used). */
static gaio_status leading_dim(const char *what, int64_t ld, int64_t rows, int64_t cols, int64_t *out) {
    if (rows <= 1) {
        *out = max64(max64(ld, cols), 1);
        return GAIO_OK;
    }
    if (ld < cols) return gaio__fail(GAIO_ERR_INVALID_ARG, "gaio_gemm", "%s (%lld) is below its rows' %lld elements",
                                     what, (long long)ld, (long long)cols);
    *out = ld;
    return GAIO_OK;
}

gaio_status gaio__gemm_cpu(const gaio__gemm_args *g) {
    static const char fn[] = "gaio_gemm";
    gaio_status st = gaio__openblas_load(fn, NULL);
    if (st != GAIO_OK) return st;
    if (g->batch <= 0 || g->m <= 0 || g->n <= 0) return GAIO_OK;
    if (g->k < 0) return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "k is negative");
    if ((g->ab_dtype != GAIO_DTYPE_F32 && g->ab_dtype != GAIO_DTYPE_F16) ||
        (g->cd_dtype != GAIO_DTYPE_F32 && g->cd_dtype != GAIO_DTYPE_F16) ||
        (g->ab_dtype == GAIO_DTYPE_F32 && g->cd_dtype != GAIO_DTYPE_F32))
        return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "dtypes %d (A, B) and %d (C, D) are not F32/F32, F16/F16 or F16/F32",
                          (int)g->ab_dtype, (int)g->cd_dtype);
    const bool ab16 = g->ab_dtype == GAIO_DTYPE_F16, cd16 = g->cd_dtype == GAIO_DTYPE_F16;

    gemm_job job = {.g = g};
    job.product = g->alpha != 0.0f && g->k > 0;
    job.use_c = g->c != NULL && g->beta != 0.0f;
    atomic_init(&job.no_memory, 0);

    /* Strides, and what a 32-bit-integer sgemm takes. */
    int64_t ldc;
    if ((st = leading_dim("ldd", g->ldd, g->m, g->n, &job.ldd)) != GAIO_OK) return st;
    if (job.use_c && (st = leading_dim("ldc", g->ldc, g->m, g->n, &ldc)) != GAIO_OK) return st;
    if (job.product) {
        if ((st = leading_dim("lda", g->lda, g->trans_a ? g->k : g->m, g->trans_a ? g->m : g->k, &job.lda)) != GAIO_OK)
            return st;
        if ((st = leading_dim("ldb", g->ldb, g->trans_b ? g->n : g->k, g->trans_b ? g->k : g->n, &job.ldb)) != GAIO_OK)
            return st;
        int64_t lim = gaio__blas_int_max();
        int64_t biggest = max64(max64(g->n, g->k), cd16 ? 0 : job.ldd);
        if (!ab16) biggest = max64(biggest, max64(job.lda, job.ldb));
        if (biggest > lim)
            return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn,
                              "a dimension or row stride of %lld elements is over %lld, the most this OpenBLAS's "
                              "32-bit integers take",
                              (long long)biggest, (long long)lim);
    }

    /* Tiles. */
    int threads = gaio__pool_size();
    if (threads < 1) threads = 1;
    double flops_row = 2.0 * (double)g->n * (double)(g->k > 0 ? g->k : 1);
    double total = flops_row * (double)g->m * (double)g->batch;
    double want_d = total / MIN_CHUNK_FLOPS;
    int64_t want_max = CHUNKS_PER_WORKER * (int64_t)threads;
    int64_t want = want_d < 1.0 ? 1 : want_d > (double)want_max ? want_max : (int64_t)want_d;

    job.nb = cd16 ? min64(g->n, F16_TILE_COLS) : g->n;
    /* rows per block so that there are about `want` items over all batches */
    int64_t mb = min64(div_up(g->m, div_up(want, g->batch)), MAX_BLOCK_ROWS);
    /* the scratch of a range call: an f16 A panel of mb x k, an f32 staging tile of mb x nb */
    int64_t per_row = (ab16 && job.product ? g->k : 0) + (cd16 ? job.nb : 0);
    if (per_row > 0) mb = max64(1, min64(mb, (int64_t)SCRATCH_FLOATS / per_row));
    mb = div_up(g->m, div_up(g->m, mb)); /* blocks of even size */
    if (mb > ROW_ALIGN) mb = min64(div_up(mb, ROW_ALIGN) * ROW_ALIGN, g->m);
    job.mb = mb;
    job.row_blocks = div_up(g->m, mb);
    job.col_tiles = div_up(g->n, job.nb);
    if (g->batch * job.row_blocks * job.col_tiles < want && job.nb >= 2 * COL_ALIGN) {
        /* too few rows to go round: cut the columns too */
        int64_t tiles = min64(div_up(want, g->batch * job.row_blocks), job.nb / COL_ALIGN);
        job.nb = div_up(div_up(job.nb, tiles), COL_ALIGN) * COL_ALIGN;
        job.col_tiles = div_up(g->n, job.nb);
    }

    /* Scratch per range call: mb * per_row is at most SCRATCH_FLOATS, or per_row when
     * mb is 1. */
    size_t scratch_bytes;
    job.scratch_floats = (size_t)mb * (size_t)per_row;
    if (!gaio__mul_ok(job.scratch_floats, sizeof(float), &scratch_bytes)) goto too_big;

    float *bias16 = NULL, *bf = NULL;
    if (g->bias && cd16) {
        bias16 = malloc((size_t)g->n * sizeof(float));
        if (!bias16) return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory for %lld bias values",
                                       (long long)g->n);
        h2f_row(g->bias, bias16, g->n);
        job.bias = bias16;
    } else {
        job.bias = g->bias;
    }

    /* Rounds of batches: all at once, except that f16 B is widened a round at a time. */
    int64_t per_round = g->batch;
    int64_t brows = g->trans_b ? g->n : g->k, bcols = g->trans_b ? g->k : g->n;
    size_t bfloats = 0;
    if (ab16 && job.product) {
        size_t bbytes;
        if (!gaio__mul_ok((size_t)brows, (size_t)bcols, &bfloats) || !gaio__mul_ok(bfloats, sizeof(float), &bbytes)) {
            free(bias16);
            goto too_big;
        }
        if (g->b_batch_stride != 0) per_round = min64(g->batch, max64(1, (int64_t)(B_SCRATCH_BYTES / bbytes)));
        size_t nb_round = g->b_batch_stride != 0 ? (size_t)per_round : 1, total_bytes;
        if (!gaio__mul_ok(bbytes, nb_round, &total_bytes)) {
            free(bias16);
            goto too_big;
        }
        bf = malloc(total_bytes);
        if (!bf) {
            free(bias16);
            return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory for %zu bytes of f32 B", total_bytes);
        }
        job.bf = bf;
        job.bf_stride = g->b_batch_stride != 0 ? (int64_t)bfloats : 0;
        job.ldbf = bcols;
    }

    double flops_item = 2.0 * (double)job.mb * (double)job.nb * (double)(g->k > 0 ? g->k : 1);
    size_t grain = flops_item >= MIN_CHUNK_FLOPS ? 1 : (size_t)(MIN_CHUNK_FLOPS / flops_item);
    for (int64_t b0 = 0; b0 < g->batch; b0 += per_round) {
        int64_t nbat = min64(per_round, g->batch - b0);
        job.batch0 = b0;
        if (bf && (b0 == 0 || job.bf_stride != 0)) {
            bconv_job bj = {.g = g, .batch0 = b0, .rows = brows, .cols = bcols, .dst = bf};
            int64_t nconv = job.bf_stride != 0 ? nbat : 1;
            size_t row_grain = (size_t)max64(1, 32768 / max64(bcols, 1));
            gaio__parallel_for((size_t)(nconv * brows), row_grain, bconv_range, &bj);
        }
        gaio__parallel_for((size_t)(nbat * job.row_blocks * job.col_tiles), grain, gemm_range, &job);
        if (atomic_load_explicit(&job.no_memory, memory_order_relaxed)) break;
    }
    free(bf);
    free(bias16);
    if (atomic_load_explicit(&job.no_memory, memory_order_relaxed))
        return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory for %zu bytes of GEMM scratch per worker",
                          scratch_bytes);
    return GAIO_OK;

too_big:
    return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "the f32 scratch for a %lld x %lld x %lld GEMM is over SIZE_MAX bytes",
                      (long long)g->m, (long long)g->n, (long long)g->k);
}
