/* Host kernel of gaio's depthwise convolution, gaio_dnn_conv_depthwise and its tiled
 * pairs and lanes forms (the CUDA ones are src/kernels/dnn/depthwise*.cu). gaio_conv2d
 * launches it only on a GPU (the host runs convolutions through oneDNN); it is here
 * because every built-in kernel has a host twin under its name, which also registers
 * the arguments' sizes. An output row at a time, split over the worker pool; the
 * arithmetic is depthwise_math.h's. */
#include <string.h>

#include "core/workers.h"
#include "dnn/cpu/tables.h"
#include "dnn/depthwise_math.h"

typedef struct dw_job {
    gaio_ktensor x, w, bias, res, y;
    gaio_kdw p;
} dw_job;

/* Items are output rows (n, k, oh). */
static void dw_rows(void *arg, size_t begin, size_t end) {
    const dw_job *j = arg;
    const int64_t K = j->y.shape[1], P = j->y.shape[2], Q = j->y.shape[3];
    for (size_t i = begin; i < end; i++) {
        const int64_t oh = (int64_t)i % P, nk = (int64_t)i / P, k = nk % K, n = nk / K;
        const int64_t yb = n * j->y.strides[0] + k * j->y.strides[1] + oh * j->y.strides[2];
        const int64_t rb = n * j->res.strides[0] + k * j->res.strides[1] + oh * j->res.strides[2];
        const float b = j->p.has_bias ? gaio_kt_get(&j->bias, k * j->bias.strides[0]) : 0.0f;
        for (int64_t ow = 0; ow < Q; ow++) {
            /* The residual is read before y's element is written: it may be y itself. */
            const float r = j->p.has_res ? gaio_kt_get(&j->res, rb + ow * j->res.strides[3]) : 0.0f;
            const float acc = gaio_dw_sum(&j->x, &j->w, &j->p, n, k, oh, ow);
            gaio_kt_put(&j->y, yb + ow * j->y.strides[3], gaio_dw_epilogue(&j->p, acc, b, r));
        }
    }
}

static gaio_status dnn_conv_depthwise(const gaio_launch_info *info, void *const *args) {
    (void)info;
    dw_job j;
    memcpy(&j.x, args[0], sizeof j.x);
    memcpy(&j.w, args[1], sizeof j.w);
    memcpy(&j.bias, args[2], sizeof j.bias);
    memcpy(&j.res, args[3], sizeof j.res);
    memcpy(&j.y, args[4], sizeof j.y);
    memcpy(&j.p, args[5], sizeof j.p);
    const int64_t rows = j.y.shape[0] * j.y.shape[1] * j.y.shape[2];
    int64_t per_row = j.y.shape[3] * j.w.shape[2] * j.w.shape[3];
    int64_t grain = per_row > 0 ? 16384 / per_row : 1;
    gaio__parallel_for((size_t)rows, (size_t)(grain < 1 ? 1 : grain), dw_rows, &j);
    return GAIO_OK;
}

static const size_t dw_sizes[8] = {sizeof(gaio_ktensor), sizeof(gaio_ktensor), sizeof(gaio_ktensor),
                                   sizeof(gaio_ktensor), sizeof(gaio_ktensor), sizeof(gaio_kdw),
                                   sizeof(int32_t),      sizeof(int32_t)};

/* gaio_dnn_conv_depthwise_tiled, _pairs3/5/7 and _lanes7 (kernels/dnn/depthwise_tiled.cu,
 * _pairs.cu, _lanes.cu)
 * compute the same sums in the same order (the pairs kernels read columns outside x as
 * zeros, where this one skips them); their last arguments only shape the CUDA threads'
 * work. */
const gaio_builtin_kernel gaio__dnn_depthwise_kernels[] = {
    {"gaio_dnn_conv_depthwise", dnn_conv_depthwise, 6, dw_sizes},
    {"gaio_dnn_conv_depthwise_tiled", dnn_conv_depthwise, 8, dw_sizes},
    {"gaio_dnn_conv_depthwise_pairs3", dnn_conv_depthwise, 7, dw_sizes},
    {"gaio_dnn_conv_depthwise_pairs5", dnn_conv_depthwise, 7, dw_sizes},
    {"gaio_dnn_conv_depthwise_pairs7", dnn_conv_depthwise, 7, dw_sizes},
    {"gaio_dnn_conv_depthwise_lanes7", dnn_conv_depthwise, 8, dw_sizes},
    {NULL, NULL, 0, NULL},
};
