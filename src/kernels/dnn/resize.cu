// CUDA kernel of gaio_resize2d (src/dnn/resize.c; host twin in src/dnn/cpu/resize.c),
// launched with 256-thread blocks on a 1-D grid that it strides over: one output
// element per thread, numbered channel-fastest when y's channels are innermost (NHWC)
// so that a warp's loads and stores stay together. Each thread works out its
// element's H and W taps (resize_math.h, in double precision as ONNX's reference
// does: a few operations per element, next to the element's memory traffic) and sums
// them in the host kernel's order, W within each row first.
#include <cuda_fp16.h>
#include <stdint.h>

#include "dnn/resize_math.h"

namespace {

__device__ __forceinline__ float ld(const __half *p, int64_t i) { return __half2float(p[i]); }
__device__ __forceinline__ float ld(const float *p, int64_t i) { return p[i]; }
__device__ __forceinline__ void st(__half *p, int64_t i, float v) { p[i] = __float2half_rn(v); }
__device__ __forceinline__ void st(float *p, int64_t i, float v) { p[i] = v; }

template <typename T>
__device__ __forceinline__ void resize2d(const gaio_ktensor &x, const gaio_ktensor &y, const gaio_kresize &p) {
    const int64_t H = x.shape[2], W = x.shape[3], OH = y.shape[2], OW = y.shape[3];
    const int64_t xs0 = x.strides[0], xs1 = x.strides[1], xs2 = x.strides[2], xs3 = x.strides[3];
    const int64_t ys0 = y.strides[0], ys1 = y.strides[1], ys2 = y.strides[2], ys3 = y.strides[3];
    const int64_t total = y.shape[0] * y.shape[1] * OH * OW;
    const T *xp = (const T *)(uintptr_t)x.ptr;
    T *yp = (T *)(uintptr_t)y.ptr;
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += step) {
        int64_t n, c, oh, ow;
        gaio_kresize_index(&y, &p, i, &n, &c, &oh, &ow);
        gaio_kresize_taps th, tw;
        gaio_kresize_axis(&p, 0, H, OH, oh, &th);
        gaio_kresize_axis(&p, 1, W, OW, ow, &tw);
        float acc = p.extrapolation;
        if (th.count && tw.count) {
            const T *xb = xp + n * xs0 + c * xs1;
            acc = 0.0f;
            for (int32_t a = 0; a < th.count; a++) {
                const T *row = xb + gaio_kresize_clamp(th.first + a, H) * xs2;
                float v = 0.0f;
                for (int32_t b = 0; b < tw.count; b++) v += tw.w[b] * ld(row, gaio_kresize_clamp(tw.first + b, W) * xs3);
                acc += th.w[a] * v;
            }
        }
        st(yp, n * ys0 + c * ys1 + oh * ys2 + ow * ys3, acc);
    }
}

} // namespace

extern "C" __global__ void gaio_dnn_resize2d(gaio_ktensor x, gaio_ktensor y, gaio_kresize p) {
    if (x.dtype == GAIO_KT_F16)
        resize2d<__half>(x, y, p);
    else
        resize2d<float>(x, y, p);
}
