/* Host kernels of the reduce ops (src/dnn/reduce.c): softmax a row at a time,
 * pooling an output row at a time, global average a plane at a time, each split over
 * the worker pool. The per-element arithmetic is reduce_math.h's, shared with the
 * CUDA kernels; softmax's sums run in another order there (a warp's lanes), so the
 * two agree to rounding, not bit for bit. */
#include <math.h>
#include <string.h>

#include "core/workers.h"
#include "dnn/cpu/tables.h"
#include "dnn/reduce_math.h"

/* Work items per chunk of the pool so that a chunk touches some 16K elements. */
static size_t grain(int64_t per_item) {
    int64_t g = per_item > 0 ? 16384 / per_item : 1;
    return (size_t)(g < 1 ? 1 : g);
}

/* ---- gaio_dnn_softmax(gaio_ktensor x, gaio_ktensor y, int32_t axis) ---- */

typedef struct softmax_job {
    gaio_ktensor x, y;
    int32_t axis;
} softmax_job;

static void softmax_rows(void *arg, size_t begin, size_t end) {
    const softmax_job *j = arg;
    const int64_t len = j->x.shape[j->axis], sx = j->x.strides[j->axis], sy = j->y.strides[j->axis];
    for (size_t r = begin; r < end; r++) {
        int64_t ox, oy;
        gaio_kt_row(&j->x, &j->y, j->axis, (int64_t)r, &ox, &oy);
        float m = gaio_kt_neg_inf();
        for (int64_t i = 0; i < len; i++) {
            float v = gaio_kt_get(&j->x, ox + i * sx);
            m = gaio_kt_max(m, v);
        }
        float sum = 0.0f;
        for (int64_t i = 0; i < len; i++) sum += expf(gaio_kt_get(&j->x, ox + i * sx) - m);
        /* Every read of the row is done: y may be x itself. */
        for (int64_t i = 0; i < len; i++) gaio_kt_put(&j->y, oy + i * sy, expf(gaio_kt_get(&j->x, ox + i * sx) - m) / sum);
    }
}

static gaio_status dnn_softmax(const gaio_launch_info *info, void *const *args) {
    (void)info;
    softmax_job j;
    memcpy(&j.x, args[0], sizeof j.x);
    memcpy(&j.y, args[1], sizeof j.y);
    memcpy(&j.axis, args[2], sizeof j.axis);
    int64_t total = 1;
    for (int32_t i = 0; i < j.x.ndim; i++) total *= j.x.shape[i];
    int64_t len = j.x.shape[j.axis];
    gaio__parallel_for((size_t)(total / len), grain(3 * len), softmax_rows, &j);
    return GAIO_OK;
}

/* ---- gaio_dnn_pool2d(gaio_ktensor x, gaio_ktensor y, gaio_kpool p) ---- */

typedef struct pool_job {
    gaio_ktensor x, y;
    gaio_kpool p;
} pool_job;

/* Items are output rows (n, c, oh). */
static void pool_rows(void *arg, size_t begin, size_t end) {
    const pool_job *j = arg;
    const int64_t C = j->y.shape[1], OH = j->y.shape[2], OW = j->y.shape[3];
    for (size_t r = begin; r < end; r++) {
        int64_t oh = (int64_t)r % OH, nc = (int64_t)r / OH, c = nc % C, n = nc / C;
        int64_t base = n * j->y.strides[0] + c * j->y.strides[1] + oh * j->y.strides[2];
        for (int64_t ow = 0; ow < OW; ow++)
            gaio_kt_put(&j->y, base + ow * j->y.strides[3], gaio_kpool_at(&j->x, &j->p, n, c, oh, ow));
    }
}

/* Channels innermost in x and y (NHWC): items are output rows (n, oh); each output
 * (n, oh, ow) runs its window's taps over channel runs of CBLOCK, so that every loop
 * is over contiguous elements (gaio_kpool_at per element was 40 times slower than
 * onnxruntime on ResNet's stem pool). The window's counts are gaio_kpool_at's; a
 * NaN wins the max as there. */
#define CBLOCK 256

/* n contiguous elements of t from element off as floats: f32 read in place, f16
 * widened into v. */
static const float *run_of(const gaio_ktensor *t, int64_t off, int64_t n, float *v) {
    if (t->dtype == GAIO_KT_F32) return (const float *)(uintptr_t)t->ptr + off;
    const uint16_t *h = (const uint16_t *)(uintptr_t)t->ptr + off;
    for (int64_t c = 0; c < n; c++) v[c] = gaio_k_f16_to_f32(h[c]);
    return v;
}

static void pool_rows_nhwc(void *arg, size_t begin, size_t end) {
    const pool_job *j = arg;
    const gaio_kpool *p = &j->p;
    const int64_t C = j->y.shape[1], OH = j->y.shape[2], OW = j->y.shape[3], H = j->x.shape[2], W = j->x.shape[3];
    float acc[CBLOCK], v[CBLOCK];
    for (size_t r = begin; r < end; r++) {
        const int64_t oh = (int64_t)r % OH, n = (int64_t)r / OH, h0 = oh * p->sh - p->pt;
        for (int64_t ow = 0; ow < OW; ow++) {
            const int64_t w0 = ow * p->sw - p->pl;
            int64_t count = 0, padded = 0; /* taps inside x; inside x and its padding */
            for (int32_t a = 0; a < p->kh; a++) {
                const int64_t h = h0 + (int64_t)a * p->dh;
                if (h < -p->pt || h >= H + p->pb) continue;
                for (int32_t b = 0; b < p->kw; b++) {
                    const int64_t w = w0 + (int64_t)b * p->dw;
                    padded += w >= -p->pl && w < W + p->pr;
                    count += h >= 0 && h < H && w >= 0 && w < W;
                }
            }
            for (int64_t c0 = 0; c0 < C; c0 += CBLOCK) {
                const int64_t nc = C - c0 < CBLOCK ? C - c0 : CBLOCK;
                const float init = p->mode == 0 ? gaio_kt_neg_inf() : 0.0f;
                for (int64_t c = 0; c < nc; c++) acc[c] = init;
                for (int32_t a = 0; a < p->kh; a++) {
                    const int64_t h = h0 + (int64_t)a * p->dh;
                    if (h < 0 || h >= H) continue;
                    for (int32_t b = 0; b < p->kw; b++) {
                        const int64_t w = w0 + (int64_t)b * p->dw;
                        if (w < 0 || w >= W) continue;
                        const float *src = run_of(
                            &j->x, n * j->x.strides[0] + h * j->x.strides[2] + w * j->x.strides[3] + c0, nc, v);
                        if (p->mode == 0)
                            for (int64_t c = 0; c < nc; c++) acc[c] = gaio_kt_max(acc[c], src[c]);
                        else
                            for (int64_t c = 0; c < nc; c++) acc[c] += src[c];
                    }
                }
                const float div = (float)(p->count_include_pad ? padded : count);
                const int64_t oy = n * j->y.strides[0] + oh * j->y.strides[2] + ow * j->y.strides[3] + c0;
                for (int64_t c = 0; c < nc; c++) {
                    /* as gaio_kpool_at: a window with no element of x gives 0; averages divide */
                    const float out = !count ? 0.0f : p->mode == 0 ? acc[c] : acc[c] / div;
                    gaio_kt_put(&j->y, oy + c, out);
                }
            }
        }
    }
}

static gaio_status dnn_pool2d(const gaio_launch_info *info, void *const *args) {
    (void)info;
    pool_job j;
    memcpy(&j.x, args[0], sizeof j.x);
    memcpy(&j.y, args[1], sizeof j.y);
    memcpy(&j.p, args[2], sizeof j.p);
    if (j.x.strides[1] == 1 && j.y.strides[1] == 1) {
        int64_t rows = j.y.shape[0] * j.y.shape[2];
        gaio__parallel_for((size_t)rows, grain(j.y.shape[1] * j.y.shape[3] * (int64_t)j.p.kh * j.p.kw), pool_rows_nhwc,
                           &j);
        return GAIO_OK;
    }
    int64_t rows = j.y.shape[0] * j.y.shape[1] * j.y.shape[2];
    gaio__parallel_for((size_t)rows, grain(j.y.shape[3] * (int64_t)j.p.kh * j.p.kw), pool_rows, &j);
    return GAIO_OK;
}

/* ---- gaio_dnn_global_avg_pool(gaio_ktensor x, gaio_ktensor y) ---- */

typedef struct gap_job {
    gaio_ktensor x, y;
} gap_job;

static void gap_planes(void *arg, size_t begin, size_t end) {
    const gap_job *j = arg;
    const int64_t C = j->x.shape[1], H = j->x.shape[2], W = j->x.shape[3];
    for (size_t r = begin; r < end; r++) {
        int64_t c = (int64_t)r % C, n = (int64_t)r / C;
        int64_t base = n * j->x.strides[0] + c * j->x.strides[1];
        float sum = 0.0f;
        for (int64_t h = 0; h < H; h++)
            for (int64_t w = 0; w < W; w++) sum += gaio_kt_get(&j->x, base + h * j->x.strides[2] + w * j->x.strides[3]);
        gaio_kt_put(&j->y, n * j->y.strides[0] + c * j->y.strides[1], sum / (float)(H * W));
    }
}

/* Channels innermost (NHWC): items are (n, a run of CBLOCK channels), each summing its
 * channels over the plane a contiguous run at a time, in gap_planes' (h, w) order (so
 * the sums are the same bits); a plane per item read elements C apart. */
static void gap_nhwc(void *arg, size_t begin, size_t end) {
    const gap_job *j = arg;
    const int64_t C = j->x.shape[1], H = j->x.shape[2], W = j->x.shape[3], blocks = (C + CBLOCK - 1) / CBLOCK;
    float acc[CBLOCK], v[CBLOCK];
    for (size_t r = begin; r < end; r++) {
        const int64_t n = (int64_t)r / blocks, c0 = (int64_t)r % blocks * CBLOCK;
        const int64_t nc = C - c0 < CBLOCK ? C - c0 : CBLOCK;
        for (int64_t c = 0; c < nc; c++) acc[c] = 0.0f;
        for (int64_t h = 0; h < H; h++)
            for (int64_t w = 0; w < W; w++) {
                const float *src =
                    run_of(&j->x, n * j->x.strides[0] + h * j->x.strides[2] + w * j->x.strides[3] + c0, nc, v);
                for (int64_t c = 0; c < nc; c++) acc[c] += src[c];
            }
        for (int64_t c = 0; c < nc; c++)
            gaio_kt_put(&j->y, n * j->y.strides[0] + (c0 + c) * j->y.strides[1], acc[c] / (float)(H * W));
    }
}

static gaio_status dnn_global_avg_pool(const gaio_launch_info *info, void *const *args) {
    (void)info;
    gap_job j;
    memcpy(&j.x, args[0], sizeof j.x);
    memcpy(&j.y, args[1], sizeof j.y);
    if (j.x.strides[1] == 1 && j.x.shape[1] > 1) {
        const int64_t blocks = (j.x.shape[1] + CBLOCK - 1) / CBLOCK;
        gaio__parallel_for((size_t)(j.x.shape[0] * blocks), 1, gap_nhwc, &j);
        return GAIO_OK;
    }
    gaio__parallel_for((size_t)(j.x.shape[0] * j.x.shape[1]), grain(j.x.shape[2] * j.x.shape[3]), gap_planes, &j);
    return GAIO_OK;
}

static const size_t softmax_sizes[3] = {sizeof(gaio_ktensor), sizeof(gaio_ktensor), sizeof(int32_t)};
static const size_t pool_sizes[3] = {sizeof(gaio_ktensor), sizeof(gaio_ktensor), sizeof(gaio_kpool)};
static const size_t gap_sizes[2] = {sizeof(gaio_ktensor), sizeof(gaio_ktensor)};

const gaio_builtin_kernel gaio__dnn_reduce_kernels[] = {
    {"gaio_dnn_softmax", dnn_softmax, 3, softmax_sizes},
    {"gaio_dnn_pool2d", dnn_pool2d, 3, pool_sizes},
    {"gaio_dnn_global_avg_pool", dnn_global_avg_pool, 2, gap_sizes},
    {NULL, NULL, 0, NULL},
};
