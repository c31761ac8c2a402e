// Device-side dispatch of gaio's activations (dnn/pointwise_math.h's ops) for CUDA
// kernels: with_act tests the op once and hands a loop a functor whose common cases are
// compile-time constants, so gaio_pw_unary folds to its one case there. A run-time op
// inside a loop kept a switch (and every other case's code) per element: the element-
// wise kernels (pointwise.cu) and the depthwise epilogues (depthwise_pairs.cu) both
// spent more on it than on their data.
#ifndef GAIO_KERNELS_DNN_ACT_DISPATCH_CUH
#define GAIO_KERNELS_DNN_ACT_DISPATCH_CUH

#include "dnn/pointwise_math.h"

namespace gaio_act {

template <int OP> struct fixed_act {
    float alpha, beta;
    __device__ __forceinline__ float operator()(float v) const { return gaio_pw_unary(OP, v, alpha, beta); }
};

// The other ops through one call, so that the loops' unrolled copies do not each hold
// gaio_pw_unary's every case.
__device__ __noinline__ inline float any_act_call(int32_t op, float v, float alpha, float beta) {
    return gaio_pw_unary(op, v, alpha, beta);
}

struct any_act {
    int32_t op;
    float alpha, beta;
    __device__ __forceinline__ float operator()(float v) const { return any_act_call(op, v, alpha, beta); }
};

// Which ops get a constant-op loop: FEW the identity and ReLU (after an add, a
// multiply or a batch norm: kernels with several such loops stay small); CONV also the
// activations of the model zoo's convolutions (Clip, Sigmoid, SiLU, HardSigmoid,
// HardSwish); ALL also GELU, GELU-tanh and Tanh (the element-wise pass). The others go
// through one call.
enum act_set { FEW, CONV, ALL };

template <act_set SET, typename K> __device__ __forceinline__ void with_act(const gaio_kpw_act &act, K &&k) {
    const float a = act.alpha, b = act.beta;
    if (act.op == GAIO_KPW_IDENTITY) return k(fixed_act<GAIO_KPW_IDENTITY>{a, b});
    if (act.op == GAIO_KPW_RELU) return k(fixed_act<GAIO_KPW_RELU>{a, b});
    if (SET != FEW) {
        switch (act.op) {
        case GAIO_KPW_CLIP: return k(fixed_act<GAIO_KPW_CLIP>{a, b});
        case GAIO_KPW_SIGMOID: return k(fixed_act<GAIO_KPW_SIGMOID>{a, b});
        case GAIO_KPW_SILU: return k(fixed_act<GAIO_KPW_SILU>{a, b});
        case GAIO_KPW_HARD_SIGMOID: return k(fixed_act<GAIO_KPW_HARD_SIGMOID>{a, b});
        case GAIO_KPW_HARD_SWISH: return k(fixed_act<GAIO_KPW_HARD_SWISH>{a, b});
        default: break;
        }
    }
    if (SET == ALL) {
        switch (act.op) {
        case GAIO_KPW_GELU: return k(fixed_act<GAIO_KPW_GELU>{a, b});
        case GAIO_KPW_GELU_TANH: return k(fixed_act<GAIO_KPW_GELU_TANH>{a, b});
        case GAIO_KPW_TANH: return k(fixed_act<GAIO_KPW_TANH>{a, b});
        default: break;
        }
    }
    k(any_act{act.op, a, b});
}

} // namespace gaio_act

#endif
