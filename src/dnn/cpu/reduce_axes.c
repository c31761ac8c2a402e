/* Host kernels of the reductions over axes, arg-reductions, top-k and log-softmax
 * (src/dnn/reduce_axes.c): outputs (rows) split over the worker pool, each computed
 * on one thread by reduce_axes_math.h's arithmetic, which the CUDA kernels share. */
#include <math.h>
#include <string.h>

#include "core/workers.h"
#include "dnn/cpu/tables.h"
#include "dnn/reduce_axes_math.h"

/* Work items per chunk so that a chunk touches some 16K elements. */
static size_t grain(int64_t per_item) {
    int64_t g = per_item > 0 ? 16384 / per_item : 1;
    return (size_t)(g < 1 ? 1 : g);
}

/* ---- gaio_dnn_reduce(gaio_kreduce p) ---- */

static void reduce_outputs(void *arg, size_t begin, size_t end) {
    const gaio_kreduce *p = arg;
    for (size_t o = begin; o < end; o++) {
        int64_t ox, oy;
        gaio_kred_output(p, (int64_t)o, &ox, &oy);
        gaio_kred_st(p->y, p->ydtype, oy, gaio_kred_one(p, ox));
    }
}

static gaio_status dnn_reduce(const gaio_launch_info *info, void *const *args) {
    (void)info;
    gaio_kreduce p;
    memcpy(&p, args[0], sizeof p);
    gaio__parallel_for((size_t)p.outputs, grain(p.count), reduce_outputs, &p);
    return GAIO_OK;
}

/* ---- gaio_dnn_select(gaio_kselect p): arg-reductions and top-k ---- */

static void select_rows(void *arg, size_t begin, size_t end) {
    const gaio_kselect *p = arg;
    for (size_t r = begin; r < end; r++) {
        int64_t ox, ov, oi;
        gaio_ksel_row(p, (int64_t)r, &ox, &ov, &oi);
        if (p->topk)
            gaio_ksel_topk(p, ox, ov, oi);
        else
            gaio_ksel_put_index(p->indices, oi, gaio_ksel_arg(p, ox));
    }
}

static gaio_status dnn_select(const gaio_launch_info *info, void *const *args) {
    (void)info;
    gaio_kselect p;
    memcpy(&p, args[0], sizeof p);
    gaio__parallel_for((size_t)p.rows, grain(p.len), select_rows, &p);
    return GAIO_OK;
}

/* ---- gaio_dnn_log_softmax(gaio_ktensor x, gaio_ktensor y, int32_t axis) ---- */

typedef struct lsm_job {
    gaio_ktensor x, y;
    int32_t axis;
} lsm_job;

static void lsm_rows(void *arg, size_t begin, size_t end) {
    const lsm_job *j = arg;
    const int64_t len = j->x.shape[j->axis], sx = j->x.strides[j->axis], sy = j->y.strides[j->axis];
    for (size_t r = begin; r < end; r++) {
        int64_t ox, oy;
        gaio_kt_row(&j->x, &j->y, j->axis, (int64_t)r, &ox, &oy);
        float m = gaio_kt_neg_inf();
        for (int64_t i = 0; i < len; i++) m = gaio_kt_max(m, gaio_kt_get(&j->x, ox + i * sx));
        float sum = 0.0f;
        for (int64_t i = 0; i < len; i++) sum += expf(gaio_kt_get(&j->x, ox + i * sx) - m);
        const float ls = logf(sum);
        /* (x - max) first: exact, where max + log(sum) would round away x's low digits.
         * Every read of the row is done: y may be x itself. */
        for (int64_t i = 0; i < len; i++) gaio_kt_put(&j->y, oy + i * sy, (gaio_kt_get(&j->x, ox + i * sx) - m) - ls);
    }
}

static gaio_status dnn_log_softmax(const gaio_launch_info *info, void *const *args) {
    (void)info;
    lsm_job j;
    memcpy(&j.x, args[0], sizeof j.x);
    memcpy(&j.y, args[1], sizeof j.y);
    memcpy(&j.axis, args[2], sizeof j.axis);
    int64_t total = 1;
    for (int32_t i = 0; i < j.x.ndim; i++) total *= j.x.shape[i];
    int64_t len = j.x.shape[j.axis];
    gaio__parallel_for((size_t)(total / len), grain(3 * len), lsm_rows, &j);
    return GAIO_OK;
}

static const size_t reduce_sizes[1] = {sizeof(gaio_kreduce)};
static const size_t select_sizes[1] = {sizeof(gaio_kselect)};
static const size_t lsm_sizes[3] = {sizeof(gaio_ktensor), sizeof(gaio_ktensor), sizeof(int32_t)};

const gaio_builtin_kernel gaio__dnn_reduce_axes_kernels[] = {
    {"gaio_dnn_reduce", dnn_reduce, 1, reduce_sizes},
    {"gaio_dnn_select", dnn_select, 1, select_sizes},
    {"gaio_dnn_log_softmax", dnn_log_softmax, 3, lsm_sizes},
    {NULL, NULL, 0, NULL},
};
