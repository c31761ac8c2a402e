/* What the reductions over axes, arg-reductions and top-k share between their front
 * end (src/dnn/reduce_axes.c), host kernels (src/dnn/cpu/reduce_axes.c) and CUDA
 * kernels (src/kernels/dnn/reduce_axes.cu): the checked arguments as kernels take them
 * and the per-element arithmetic, so that both backends compute the same numbers. */
#ifndef GAIO_DNN_REDUCE_AXES_MATH_H
#define GAIO_DNN_REDUCE_AXES_MATH_H

#include <math.h>
#include <stdint.h>
#ifndef __cplusplus
#include <stdbool.h>
#endif

#include "dnn/reduce_math.h"

/* gaio_dtype's S64 (gaio/types.h), for the C++ side that does not include it. */
#define GAIO_KRED_S64 7

/* gaio_reduce_op's values. */
enum {
    GAIO_KRED_SUM = 0,
    GAIO_KRED_MEAN,
    GAIO_KRED_MAX,
    GAIO_KRED_MIN,
    GAIO_KRED_PROD,
    GAIO_KRED_L1,
    GAIO_KRED_L2,
    GAIO_KRED_SUM_SQUARE,
    GAIO_KRED_LOG_SUM,
    GAIO_KRED_LOG_SUM_EXP
};

/* How a CUDA kernel spreads the outputs (the host splits them over its workers). */
enum { GAIO_KRED_THREAD = 0, GAIO_KRED_WARP = 1, GAIO_KRED_BLOCK = 2 };

/* A checked reduction: x's dimensions split into kept ones (the outputs) and reduced
 * ones, dimensions of size 1 dropped and neighbours that are one block in memory
 * merged, each list ordered by x's strides (the last the closest in memory), so that
 * consecutive outputs and consecutive reduced elements are near each other in x. */
typedef struct gaio_kreduce {
    uint64_t x, y;    /* element [0, ...] */
    int32_t xdtype, ydtype; /* GAIO_KT_F16 or GAIO_KT_F32 */
    int32_t op;       /* GAIO_KRED_* */
    int32_t mode;     /* GAIO_KRED_THREAD, _WARP or _BLOCK */
    int32_t nkeep, nred;
    int64_t outputs, count; /* products of keep_n and of red_n */
    int64_t keep_n[GAIO_KT_MAX_NDIM], keep_xs[GAIO_KT_MAX_NDIM], keep_ys[GAIO_KT_MAX_NDIM];
    int64_t red_n[GAIO_KT_MAX_NDIM], red_xs[GAIO_KT_MAX_NDIM];
} gaio_kreduce;

/* A checked arg-reduction or top-k along one axis: rows are x's other dimensions (size
 * 1 dropped, ordered by x's strides as above); len elements along the axis. Outputs
 * values (x's dtype) and indices (S64); a 0 address is not written. */
typedef struct gaio_kselect {
    uint64_t x, values, indices;
    int32_t xdtype, vdtype;
    int32_t topk;       /* 0: arg-reduction (one index per row), else top-k */
    int32_t largest;    /* argmax / top-k largest; else argmin / smallest */
    int32_t select_last; /* arg-reduction: of equal elements, the last */
    int32_t mode;       /* GAIO_KRED_THREAD or _WARP (arg-reductions only) */
    int32_t nouter, pad_;
    int64_t len, k, rows;
    int64_t xs, vs, is; /* strides along the axis */
    int64_t outer_n[GAIO_KT_MAX_NDIM], outer_xs[GAIO_KT_MAX_NDIM], outer_vs[GAIO_KT_MAX_NDIM];
    int64_t outer_is[GAIO_KT_MAX_NDIM];
} gaio_kselect;

GAIO_HD float gaio_kred_ld(uint64_t base, int32_t dtype, int64_t off) {
    if (dtype == GAIO_KT_F16) return gaio_k_f16_to_f32(((const uint16_t *)(uintptr_t)base)[off]);
    return ((const float *)(uintptr_t)base)[off];
}

GAIO_HD void gaio_kred_st(uint64_t base, int32_t dtype, int64_t off, float v) {
    if (dtype == GAIO_KT_F16)
        ((uint16_t *)(uintptr_t)base)[off] = gaio_k_f32_to_f16(v);
    else
        ((float *)(uintptr_t)base)[off] = v;
}

GAIO_HD float gaio_kred_pos_inf(void) { return -gaio_kt_neg_inf(); }

/* min(m, v) that keeps a NaN once one is seen. */
GAIO_HD float gaio_kred_min(float m, float v) { return v != v || v < m ? v : m; }

/* The accumulator's start: what combining with it changes nothing. */
GAIO_HD float gaio_kred_init(int32_t op) {
    switch (op) {
    case GAIO_KRED_MAX:
    case GAIO_KRED_LOG_SUM_EXP: return gaio_kt_neg_inf(); /* the max pass */
    case GAIO_KRED_MIN: return gaio_kred_pos_inf();
    case GAIO_KRED_PROD: return 1.0f;
    default: return 0.0f;
    }
}

/* acc with element v folded in. LOG_SUM_EXP's first pass takes the max. */
GAIO_HD float gaio_kred_step(int32_t op, float acc, float v) {
    switch (op) {
    case GAIO_KRED_MAX:
    case GAIO_KRED_LOG_SUM_EXP: return gaio_kt_max(acc, v);
    case GAIO_KRED_MIN: return gaio_kred_min(acc, v);
    case GAIO_KRED_PROD: return acc * v;
    case GAIO_KRED_L1: return acc + fabsf(v);
    case GAIO_KRED_L2:
    case GAIO_KRED_SUM_SQUARE: return acc + v * v;
    default: return acc + v;
    }
}

/* Two partial accumulators as one (a warp's or block's lanes). */
GAIO_HD float gaio_kred_combine(int32_t op, float a, float b) {
    switch (op) {
    case GAIO_KRED_MAX:
    case GAIO_KRED_LOG_SUM_EXP: return gaio_kt_max(a, b);
    case GAIO_KRED_MIN: return gaio_kred_min(a, b);
    case GAIO_KRED_PROD: return a * b;
    default: return a + b;
    }
}

/* LOG_SUM_EXP's second pass needs it: the max is +-inf or NaN, which is the answer. */
GAIO_HD bool gaio_kred_lse_done(float m) { return m != m || m == gaio_kred_pos_inf() || m == gaio_kt_neg_inf(); }

/* The output from the accumulator over count elements; for LOG_SUM_EXP, acc is the sum
 * of e^(x - m). */
GAIO_HD float gaio_kred_final(int32_t op, float acc, int64_t count, float m) {
    switch (op) {
    case GAIO_KRED_MEAN: return acc / (float)count;
    case GAIO_KRED_L2: return sqrtf(acc);
    case GAIO_KRED_LOG_SUM: return logf(acc);
    case GAIO_KRED_LOG_SUM_EXP: return gaio_kred_lse_done(m) ? m : m + logf(acc);
    default: return acc;
    }
}

/* The offsets in x and y of output o (numbered over the kept dimensions, the last
 * fastest). */
GAIO_HD void gaio_kred_output(const gaio_kreduce *p, int64_t o, int64_t *ox, int64_t *oy) {
    int64_t a = 0, b = 0;
    for (int32_t d = p->nkeep - 1; d >= 0; d--) {
        int64_t n = p->keep_n[d], i = o % n;
        o /= n;
        a += i * p->keep_xs[d];
        b += i * p->keep_ys[d];
    }
    *ox = a;
    *oy = b;
}

/* The offset in x, from an output's, of reduced element j. */
GAIO_HD int64_t gaio_kred_elem(const gaio_kreduce *p, int64_t j) {
    int64_t a = 0;
    for (int32_t d = p->nred - 1; d >= 0; d--) {
        int64_t n = p->red_n[d], i = j % n;
        j /= n;
        a += i * p->red_xs[d];
    }
    return a;
}

/* One output, all on one thread, the reduced elements in order (the host's and the
 * CUDA thread mode's arithmetic): an odometer walks them without divisions. */
GAIO_HD float gaio_kred_one(const gaio_kreduce *p, int64_t ox) {
    int64_t idx[GAIO_KT_MAX_NDIM] = {0}, off = ox;
    const int32_t lse = p->op == GAIO_KRED_LOG_SUM_EXP;
    float acc = gaio_kred_init(p->op), m = 0.0f;
    for (int pass = 0; pass < 1 + lse; pass++) {
        for (int64_t j = 0; j < p->count; j++) {
            float v = gaio_kred_ld(p->x, p->xdtype, off);
            acc = pass ? acc + expf(v - m) : gaio_kred_step(p->op, acc, v);
            for (int32_t d = p->nred - 1; d >= 0; d--) { /* next element */
                off += p->red_xs[d];
                if (++idx[d] < p->red_n[d]) break;
                off -= p->red_n[d] * p->red_xs[d];
                idx[d] = 0;
            }
        }
        if (lse && !pass) {
            m = acc, acc = 0.0f;
            if (gaio_kred_lse_done(m)) break;
        }
    }
    return gaio_kred_final(p->op, acc, p->count, m);
}

/* ---- arg-reductions and top-k ---- */

/* The offsets of row r in x, values and indices. */
GAIO_HD void gaio_ksel_row(const gaio_kselect *p, int64_t r, int64_t *ox, int64_t *ov, int64_t *oi) {
    int64_t a = 0, b = 0, c = 0;
    for (int32_t d = p->nouter - 1; d >= 0; d--) {
        int64_t n = p->outer_n[d], i = r % n;
        r /= n;
        a += i * p->outer_xs[d];
        b += i * p->outer_vs[d];
        c += i * p->outer_is[d];
    }
    *ox = a;
    *ov = b;
    *oi = c;
}

/* Whether (v, i) goes before (w, j): the larger (smaller) value, a NaN before any
 * number; of equal values (two NaNs too) the lower index, or the higher with
 * last_index. */
GAIO_HD bool gaio_ksel_before(float v, int64_t i, float w, int64_t j, int32_t largest, int32_t last_index) {
    const bool vn = v != v, wn = w != w;
    if (vn != wn) return vn;
    if (!vn && v != w) return largest ? v > w : v < w;
    return last_index ? i > j : i < j;
}

GAIO_HD void gaio_ksel_put_index(uint64_t base, int64_t off, int64_t v) { ((int64_t *)(uintptr_t)base)[off] = v; }
GAIO_HD int64_t gaio_ksel_get_index(uint64_t base, int64_t off) { return ((const int64_t *)(uintptr_t)base)[off]; }

/* Arg-reduction of one row on one thread. */
GAIO_HD int64_t gaio_ksel_arg(const gaio_kselect *p, int64_t ox) {
    float best = gaio_kred_ld(p->x, p->xdtype, ox);
    int64_t at = 0;
    for (int64_t i = 1; i < p->len; i++) {
        float v = gaio_kred_ld(p->x, p->xdtype, ox + i * p->xs);
        if (gaio_ksel_before(v, i, best, at, p->largest, p->select_last)) best = v, at = i;
    }
    return at;
}

/* Top-k of one row on one thread, in the outputs' own memory: a heap of the k best so
 * far with the worst on top (indices in `indices` when it is written, else values in
 * `values`), then sorted in place best first. O(len log k), no scratch memory. */
GAIO_HD bool gaio_ksel_heap_before(const gaio_kselect *p, int64_t ox, int64_t ov, int64_t oi, int64_t a, int64_t b) {
    /* Whether heap slot a holds a worse element than slot b (a goes nearer the top). */
    if (p->indices) {
        int64_t i = gaio_ksel_get_index(p->indices, oi + a * p->is), j = gaio_ksel_get_index(p->indices, oi + b * p->is);
        float v = gaio_kred_ld(p->x, p->xdtype, ox + i * p->xs), w = gaio_kred_ld(p->x, p->xdtype, ox + j * p->xs);
        return gaio_ksel_before(w, j, v, i, p->largest, 0);
    }
    float v = gaio_kred_ld(p->values, p->vdtype, ov + a * p->vs), w = gaio_kred_ld(p->values, p->vdtype, ov + b * p->vs);
    return gaio_ksel_before(w, 0, v, 0, p->largest, 0) && !(v != v && w != w);
}

GAIO_HD void gaio_ksel_heap_swap(const gaio_kselect *p, int64_t ov, int64_t oi, int64_t a, int64_t b) {
    if (p->indices) {
        int64_t i = gaio_ksel_get_index(p->indices, oi + a * p->is);
        gaio_ksel_put_index(p->indices, oi + a * p->is, gaio_ksel_get_index(p->indices, oi + b * p->is));
        gaio_ksel_put_index(p->indices, oi + b * p->is, i);
    } else {
        float v = gaio_kred_ld(p->values, p->vdtype, ov + a * p->vs);
        gaio_kred_st(p->values, p->vdtype, ov + a * p->vs, gaio_kred_ld(p->values, p->vdtype, ov + b * p->vs));
        gaio_kred_st(p->values, p->vdtype, ov + b * p->vs, v);
    }
}

/* Moves slot `at` down a heap of n slots until both children are better. */
GAIO_HD void gaio_ksel_sift(const gaio_kselect *p, int64_t ox, int64_t ov, int64_t oi, int64_t at, int64_t n) {
    for (;;) {
        int64_t l = 2 * at + 1, r = l + 1, worst = at;
        if (l < n && gaio_ksel_heap_before(p, ox, ov, oi, l, worst)) worst = l;
        if (r < n && gaio_ksel_heap_before(p, ox, ov, oi, r, worst)) worst = r;
        if (worst == at) return;
        gaio_ksel_heap_swap(p, ov, oi, at, worst);
        at = worst;
    }
}

GAIO_HD void gaio_ksel_topk(const gaio_kselect *p, int64_t ox, int64_t ov, int64_t oi) {
    const int64_t k = p->k;
    for (int64_t i = 0; i < k; i++) { /* the first k, then heapified */
        if (p->indices)
            gaio_ksel_put_index(p->indices, oi + i * p->is, i);
        else
            gaio_kred_st(p->values, p->vdtype, ov + i * p->vs, gaio_kred_ld(p->x, p->xdtype, ox + i * p->xs));
    }
    for (int64_t i = k / 2 - 1; i >= 0; i--) gaio_ksel_sift(p, ox, ov, oi, i, k);
    for (int64_t i = k; i < p->len; i++) {
        float v = gaio_kred_ld(p->x, p->xdtype, ox + i * p->xs);
        bool better;
        if (p->indices) {
            int64_t j = gaio_ksel_get_index(p->indices, oi);
            better = gaio_ksel_before(v, i, gaio_kred_ld(p->x, p->xdtype, ox + j * p->xs), j, p->largest, 0);
        } else {
            float w = gaio_kred_ld(p->values, p->vdtype, ov);
            better = gaio_ksel_before(v, 1, w, 0, p->largest, 0) && !(v != v && w != w); /* ties keep the earlier */
        }
        if (!better) continue;
        if (p->indices)
            gaio_ksel_put_index(p->indices, oi, i);
        else
            gaio_kred_st(p->values, p->vdtype, ov, v);
        gaio_ksel_sift(p, ox, ov, oi, 0, k);
    }
    for (int64_t n = k - 1; n > 0; n--) { /* the worst to the end, best first */
        gaio_ksel_heap_swap(p, ov, oi, 0, n);
        gaio_ksel_sift(p, ox, ov, oi, 0, n);
    }
    if (p->indices && p->values)
        for (int64_t i = 0; i < k; i++) {
            int64_t j = gaio_ksel_get_index(p->indices, oi + i * p->is);
            gaio_kred_st(p->values, p->vdtype, ov + i * p->vs, gaio_kred_ld(p->x, p->xdtype, ox + j * p->xs));
        }
}

#endif
