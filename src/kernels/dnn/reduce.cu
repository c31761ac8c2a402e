// CUDA kernels of the reduce ops (src/dnn/reduce.c; host twins in
// src/dnn/cpu/reduce.c), launched with 256-thread blocks on a 1-D grid that the
// kernels stride over.
//
// softmax and global average pooling give each row (each (n, c) plane) to one warp:
// its lanes stride over the row, then a shuffle reduction gives every lane the max
// and the sum. Rows of a few to a few thousand elements (classes, channels) are the
// common case, and a warp per row keeps every warp busy without shared memory or
// block barriers. Pooling computes one output element per thread, numbered
// channel-fastest when y's channels are innermost (NHWC) so that a warp's stores
// stay together. Elements are read through the tensors' strides (reduce_math.h).
#include <stdint.h>

#include "dnn/reduce_math.h"

namespace {

__device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = gaio_kt_max(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ int64_t global_thread() { return (int64_t)blockIdx.x * blockDim.x + threadIdx.x; }
__device__ __forceinline__ int64_t grid_threads() { return (int64_t)gridDim.x * blockDim.x; }

} // namespace

extern "C" __global__ void gaio_dnn_softmax(gaio_ktensor x, gaio_ktensor y, int32_t axis) {
    const int lane = (int)(threadIdx.x & 31u);
    const int64_t len = x.shape[axis], sx = x.strides[axis], sy = y.strides[axis];
    int64_t total = 1;
    for (int32_t d = 0; d < x.ndim; d++) total *= x.shape[d];
    const int64_t rows = total / len;
    // The loop bound is the same for every lane of a warp, as the shuffles need.
    for (int64_t r = global_thread() >> 5; r < rows; r += grid_threads() >> 5) {
        int64_t ox, oy;
        gaio_kt_row(&x, &y, axis, r, &ox, &oy);
        float m = gaio_kt_neg_inf();
        for (int64_t i = lane; i < len; i += 32) m = gaio_kt_max(m, gaio_kt_get(&x, ox + i * sx));
        m = warp_max(m);
        float s = 0.0f;
        for (int64_t i = lane; i < len; i += 32) s += expf(gaio_kt_get(&x, ox + i * sx) - m);
        s = warp_sum(s);
        // Each lane writes only the elements it read, after the whole warp has read the
        // row (the shuffles order it): y may be x itself.
        for (int64_t i = lane; i < len; i += 32) gaio_kt_put(&y, oy + i * sy, expf(gaio_kt_get(&x, ox + i * sx) - m) / s);
    }
}

extern "C" __global__ void gaio_dnn_pool2d(gaio_ktensor x, gaio_ktensor y, gaio_kpool p) {
    const int64_t total = y.shape[0] * y.shape[1] * y.shape[2] * y.shape[3];
    for (int64_t i = global_thread(); i < total; i += grid_threads()) {
        int64_t n, c, oh, ow;
        gaio_kpool_index(&y, &p, i, &n, &c, &oh, &ow);
        gaio_kt_put(&y, n * y.strides[0] + c * y.strides[1] + oh * y.strides[2] + ow * y.strides[3],
                    gaio_kpool_at(&x, &p, n, c, oh, ow));
    }
}

extern "C" __global__ void gaio_dnn_global_avg_pool(gaio_ktensor x, gaio_ktensor y) {
    const int lane = (int)(threadIdx.x & 31u);
    const int64_t C = x.shape[1], H = x.shape[2], W = x.shape[3], planes = x.shape[0] * C, hw = H * W;
    for (int64_t r = global_thread() >> 5; r < planes; r += grid_threads() >> 5) {
        const int64_t c = r % C, n = r / C, base = n * x.strides[0] + c * x.strides[1];
        float s = 0.0f;
        for (int64_t i = lane; i < hw; i += 32) {
            const int64_t h = i / W, w = i - h * W;
            s += gaio_kt_get(&x, base + h * x.strides[2] + w * x.strides[3]);
        }
        s = warp_sum(s);
        if (lane == 0) gaio_kt_put(&y, n * y.strides[0] + c * y.strides[1], s / (float)hw);
    }
}
