/* What gaio_norm's front end (src/dnn/norm.c), host kernel (src/dnn/cpu/norm.c) and
 * CUDA kernel (src/kernels/dnn/norm.cu) share: the one argument the kernel takes, and
 * how a set number and an element number become memory offsets.
 *
 * Every kind of normalization reaches the kernels as a LayerNorm over a view: the
 * dimensions before `axis` number the sets, those from `axis` on are a set's
 * elements. GroupNorm's x [N, C, S..] is the view [N, G, C / G, S..] with axis 2 (the
 * channel stride times C / G on G), InstanceNorm's the same with G = C. scale and bias
 * come as strides over the same view (0 where they are broadcast: every set
 * dimension of a LayerNorm's, all but G and C / G of a GroupNorm's), the statistics as
 * strides over the set dimensions. The front end drops dimensions of 1, orders each
 * part by x's strides (innermost last) and merges neighbours that are one run in every
 * tensor, so a packed LayerNorm over the last axis arrives as [rows | cols]. */
#ifndef GAIO_DNN_NORM_MATH_H
#define GAIO_DNN_NORM_MATH_H

#include <stdint.h>

#include "core/kmath.h"
#include "dnn/ktensor.h"

/* GroupNorm of a 5-D x is 6 dimensions before merging. */
#define GAIO_KNORM_MAX_NDIM 6

/* How the CUDA kernel splits the work (the host kernel ignores it). */
enum {
    GAIO_KNORM_BLOCK = 0,  /* a block of threads per set */
    GAIO_KNORM_WARP = 1,   /* a warp per set */
    GAIO_KNORM_THREAD = 2, /* a thread per set: neighbouring sets are neighbours in memory */
    GAIO_KNORM_ROWS = 3    /* a warp per set of one unit-stride run of x and y, kept in registers */
};

typedef struct gaio_knorm {
    uint64_t x, y, scale, bias, mean, rstd; /* element [0, ..]; 0: absent (y: statistics only) */
    int32_t xdt, sdt, bdt, mdt, rdt;        /* GAIO_KT_*: x and y; scale; bias; mean; rstd */
    int32_t ndim, axis;                     /* dimensions [0, axis) number the sets */
    int32_t mode;                           /* GAIO_KNORM_* */
    float epsilon;
    int32_t pad_;
    int64_t sets, count; /* sets, and elements per set */
    int64_t shape[GAIO_KNORM_MAX_NDIM];
    /* Element strides of x, y, scale, bias over every dimension; of mean and rstd over
     * the set dimensions (0 beyond). */
    int64_t xs[GAIO_KNORM_MAX_NDIM], ys[GAIO_KNORM_MAX_NDIM], ss[GAIO_KNORM_MAX_NDIM], bs[GAIO_KNORM_MAX_NDIM];
    int64_t ms[GAIO_KNORM_MAX_NDIM], rs[GAIO_KNORM_MAX_NDIM];
} gaio_knorm;

/* Loops over the dimensions unroll on the GPU: with every index a constant, the
 * kernel reads its parameter in place, where an index known only at run time makes
 * each thread copy the whole (~450-byte) parameter to local memory first. */
#ifdef __CUDACC__
#define GAIO_KNORM_UNROLL _Pragma("unroll")
#else
#define GAIO_KNORM_UNROLL
#endif

/* Offsets of one set or one element of a set: x, y, scale, bias, mean, rstd. */
typedef struct gaio_knorm_at {
    int64_t x, y, s, b, m, r;
} gaio_knorm_at;

/* Where set r starts (row-major over the set dimensions). */
GAIO_HD gaio_knorm_at gaio_knorm_set(const gaio_knorm *p, int64_t r) {
    gaio_knorm_at o = {0, 0, 0, 0, 0, 0};
    GAIO_KNORM_UNROLL
    for (int32_t d = GAIO_KNORM_MAX_NDIM - 1; d >= 0; d--) {
        if (d >= p->axis) continue;
        const int64_t n = p->shape[d], i = r % n;
        r /= n;
        o.x += i * p->xs[d], o.y += i * p->ys[d], o.s += i * p->ss[d], o.b += i * p->bs[d];
        o.m += i * p->ms[d], o.r += i * p->rs[d];
    }
    return o;
}

/* Element i of a set, from the set's start (x, y, scale, bias). */
GAIO_HD gaio_knorm_at gaio_knorm_elem(const gaio_knorm *p, int64_t i) {
    gaio_knorm_at o = {0, 0, 0, 0, 0, 0};
    GAIO_KNORM_UNROLL
    for (int32_t d = GAIO_KNORM_MAX_NDIM - 1; d >= 0; d--) {
        if (d < p->axis || d >= p->ndim) continue;
        const int64_t n = p->shape[d], k = i % n;
        i /= n;
        o.x += k * p->xs[d], o.y += k * p->ys[d], o.s += k * p->ss[d], o.b += k * p->bs[d];
    }
    return o;
}

/* f16 through the GPU's conversion instructions there (the includer has cuda_fp16.h),
 * kmath.h's bit-exact twins of them on the host: the software ones, inlined at every
 * element of the register-resident rows, cost the kernel its registers. */
GAIO_HD float gaio_knorm_ld(uint64_t base, int32_t dt, int64_t off) {
#ifdef __CUDA_ARCH__
    if (dt == GAIO_KT_F16) return __half2float(((const __half *)(uintptr_t)base)[off]);
#else
    if (dt == GAIO_KT_F16) return gaio_k_f16_to_f32(((const uint16_t *)(uintptr_t)base)[off]);
#endif
    return ((const float *)(uintptr_t)base)[off];
}

GAIO_HD void gaio_knorm_st(uint64_t base, int32_t dt, int64_t off, float v) {
#ifdef __CUDA_ARCH__
    if (dt == GAIO_KT_F16) {
        ((__half *)(uintptr_t)base)[off] = __float2half_rn(v);
        return;
    }
#else
    if (dt == GAIO_KT_F16) {
        ((uint16_t *)(uintptr_t)base)[off] = gaio_k_f32_to_f16(v);
        return;
    }
#endif
    ((float *)(uintptr_t)base)[off] = v;
}

/* The output of one element: (x - mean) * rstd * scale + bias, absent ones 1 and 0. */
GAIO_HD float gaio_knorm_out(const gaio_knorm *p, float x, float mean, float rstd, int64_t s, int64_t b) {
    float v = (x - mean) * rstd;
    if (p->scale) v *= gaio_knorm_ld(p->scale, p->sdt, s);
    if (p->bias) v += gaio_knorm_ld(p->bias, p->bdt, b);
    return v;
}

/* The set's statistics out, where asked for. */
GAIO_HD void gaio_knorm_stats(const gaio_knorm *p, const gaio_knorm_at *at, float mean, float rstd) {
    if (p->mean) gaio_knorm_st(p->mean, p->mdt, at->m, mean);
    if (p->rstd) gaio_knorm_st(p->rstd, p->rdt, at->r, rstd);
}

#endif
