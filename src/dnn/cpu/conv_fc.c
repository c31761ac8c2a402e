/* Host kernel of gaio_dnn_conv_fc (src/kernels/dnn/conv_fc.cu): the same sums in the
 * same order (dnn/conv_fc_math.h): a warp mode's butterfly replayed over 32 partial sums.
 * gaio_conv2d launches the kernel only on a GPU (the host runs convolutions through
 * oneDNN); it is here because every built-in kernel has a host twin under its name,
 * which also registers the arguments' sizes. */
#include <string.h>

#include "core/workers.h"
#include "dnn/conv_fc_math.h"
#include "dnn/cpu/tables.h"

typedef struct fc_job {
    gaio_ktensor x, w, bias, res, y;
    gaio_kfc p;
} fc_job;

static void fc_outputs(void *arg, size_t begin, size_t end) {
    const fc_job *j = arg;
    const int64_t K = j->y.shape[1];
    for (size_t o = begin; o < end; o++) {
        const int64_t n = (int64_t)o / K, k = (int64_t)o % K;
        float sum;
        if (j->p.mode == GAIO_FC_THREAD) {
            sum = gaio_fc_serial(&j->x, &j->w, n, k);
        } else {
            float lane[GAIO_FC_LANES];
            for (int32_t l = 0; l < GAIO_FC_LANES; l++)
                lane[l] = j->p.mode == GAIO_FC_WARP8 ? gaio_fc_lane8(&j->x, &j->w, n, k, l)
                                                     : gaio_fc_lane(&j->x, &j->w, n, k, l);
            for (int32_t off = GAIO_FC_LANES / 2; off > 0; off /= 2) {
                float next[GAIO_FC_LANES];
                for (int32_t l = 0; l < GAIO_FC_LANES; l++) next[l] = lane[l] + lane[l ^ off];
                memcpy(lane, next, sizeof lane);
            }
            sum = lane[0];
        }
        const float b = j->p.has_bias ? gaio_kt_get(&j->bias, k * j->bias.strides[0]) : 0.0f;
        const float r = j->p.has_res ? gaio_kt_get(&j->res, n * j->res.strides[0] + k * j->res.strides[1]) : 0.0f;
        gaio_kt_put(&j->y, n * j->y.strides[0] + k * j->y.strides[1], gaio_fc_epilogue(&j->p, sum, b, r));
    }
}

static gaio_status dnn_conv_fc(const gaio_launch_info *info, void *const *args) {
    (void)info;
    fc_job j;
    memcpy(&j.x, args[0], sizeof j.x);
    memcpy(&j.w, args[1], sizeof j.w);
    memcpy(&j.bias, args[2], sizeof j.bias);
    memcpy(&j.res, args[3], sizeof j.res);
    memcpy(&j.y, args[4], sizeof j.y);
    memcpy(&j.p, args[5], sizeof j.p);
    const int64_t outputs = j.y.shape[0] * j.y.shape[1];
    const int64_t per = j.x.shape[1] > 0 ? j.x.shape[1] : 1;
    gaio__parallel_for((size_t)outputs, (size_t)(per >= 16384 ? 1 : 16384 / per), fc_outputs, &j);
    return GAIO_OK;
}

static const size_t fc_sizes[6] = {sizeof(gaio_ktensor), sizeof(gaio_ktensor), sizeof(gaio_ktensor),
                                   sizeof(gaio_ktensor), sizeof(gaio_ktensor), sizeof(gaio_kfc)};

const gaio_builtin_kernel gaio__dnn_conv_fc_kernels[] = {
    {"gaio_dnn_conv_fc", dnn_conv_fc, 6, fc_sizes},
    {NULL, NULL, 0, NULL},
};
