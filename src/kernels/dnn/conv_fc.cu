// CUDA kernel of gaio's small fully-connected convolution (dnn/conv_fc_math.h): a 1x1
// window on 1x1 maps, as the squeeze-and-excitation blocks of EfficientNet, MobileNetV3
// and RegNet-Y run twice per block on [N, C, 1, 1]. cuDNN ran them as convolutions and
// gaio's activation pass followed (SiLU, Sigmoid, HardSigmoid: cuDNN fuses those only
// in runtime-compiled engines); here a warp computes one output with its epilogue fused,
// in one launch. src/dnn/conv.c chooses it (conv_fc_ok).
#include <cuda_fp16.h>
#include <stdint.h>

#include "dnn/conv_fc_math.h"

// x [N, C, 1, 1], w [K, C, 1, 1], y and the residual [N, K, 1, 1], any strides; warps
// stride over the N * K outputs (blockDim.x a multiple of 32).
extern "C" __global__ void gaio_dnn_conv_fc(gaio_ktensor x, gaio_ktensor w, gaio_ktensor bias, gaio_ktensor residual,
                                            gaio_ktensor y, gaio_kfc p) {
    const int64_t K = y.shape[1], outputs = y.shape[0] * K;
    const int32_t lane = (int32_t)(threadIdx.x % GAIO_FC_LANES);
    const int64_t warps = (int64_t)gridDim.x * (blockDim.x / GAIO_FC_LANES);
    for (int64_t o = (int64_t)blockIdx.x * (blockDim.x / GAIO_FC_LANES) + threadIdx.x / GAIO_FC_LANES; o < outputs;
         o += warps) {
        const int64_t n = o / K, k = o - n * K;
        float acc = gaio_fc_lane(&x, &w, n, k, lane);
        // The butterfly of conv_fc_math.h: every lane ends with the same sum.
#pragma unroll
        for (int off = GAIO_FC_LANES / 2; off > 0; off /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, off);
        if (lane == 0) {
            const float b = p.has_bias ? gaio_kt_get(&bias, k * bias.strides[0]) : 0.0f;
            const float r = p.has_res ? gaio_kt_get(&residual, n * residual.strides[0] + k * residual.strides[1]) : 0.0f;
            gaio_kt_put(&y, n * y.strides[0] + k * y.strides[1], gaio_fc_epilogue(&p, acc, b, r));
        }
    }
}
