// CUDA kernel of gaio's depthwise convolution for its common case: f16, x, y (and the
// residual) channels-innermost with 16-byte aligned channel runs, windows up to 7x7,
// column stride 1 or 2, no column dilation: MobileNet's, EfficientNet's and MNASNet's
// layers. gaio_dnn_conv_depthwise (depthwise.cu) takes every other case; src/dnn/conv.c
// chooses (depthwise_tiled_ok).
//
// One thread computes OWT outputs along a row for 8 channels (one 16-byte vector): each
// input vector it loads serves every output of the strip whose window covers it, where
// one thread per output loads each tap again (R*S 2-byte loads per output). A block is
// cv channel vectors by 256 / cv strips, cv chosen on the host so that small C still
// fills the block; its channels' filter taps (R x S x 8*cv halves, read with any strides
// once per block) sit in shared memory channel-fastest, so that a thread reads its 8
// taps as one vector. Sums are f32 in the order of gaio_dw_sum (rows, then columns) and
// the epilogue is gaio_dw_epilogue's (bias, residual, activation): the results are
// those of the generic kernel.
#include <cuda_fp16.h>
#include <stdint.h>

#include "dnn/depthwise_math.h"

namespace {

constexpr int THREADS = 256, MAX_RS = 49, MAX_CG = 256;

struct h8 {
    __half2 v[4];
};

__device__ __forceinline__ void unpack(const uint4 &u, float f[8]) {
    const __half2 *h = reinterpret_cast<const __half2 *>(&u);
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const float2 t = __half22float2(h[i]);
        f[2 * i] = t.x, f[2 * i + 1] = t.y;
    }
}

__device__ __forceinline__ uint4 pack(const float f[8]) {
    uint4 u;
    __half2 *h = reinterpret_cast<__half2 *>(&u);
#pragma unroll
    for (int i = 0; i < 4; i++) h[i] = __floats2half2_rn(f[2 * i], f[2 * i + 1]);
    return u;
}

// The activation of the common layers inlined (gaio_pw_unary with a constant op folds
// to its one case); the others through one call, so that the 8 x OWT unrolled copies
// of the epilogue do not each hold gaio_pw_unary's every case.
__device__ __noinline__ float act_call(int32_t op, float v, float alpha, float beta) {
    return gaio_pw_unary(op, v, alpha, beta);
}

__device__ __forceinline__ float epilogue(const gaio_kdw &p, float acc, float bias, float res) {
    acc += bias; // 0 without a bias
    if (p.has_res) acc += res;
    const float a = p.act.alpha, b = p.act.beta;
    switch (p.act.op) {
    case GAIO_KPW_IDENTITY: return acc;
    case GAIO_KPW_RELU: return gaio_pw_unary(GAIO_KPW_RELU, acc, a, b);
    case GAIO_KPW_CLIP: return gaio_pw_unary(GAIO_KPW_CLIP, acc, a, b);
    case GAIO_KPW_SILU: return gaio_pw_unary(GAIO_KPW_SILU, acc, a, b);
    case GAIO_KPW_HARD_SWISH: return gaio_pw_unary(GAIO_KPW_HARD_SWISH, acc, a, b);
    default: return act_call(p.act.op, acc, a, b);
    }
}

// OWT: outputs per thread along the row (4, 2 for 7-wide windows, or 1 where longer
// strips would leave the GPU idle),
// S: the window's width, SW: the column stride. R, the row stride and row dilation are
// run-time values. Offsets are 32-bit: conv.c launches this kernel only when p.narrow.
template <int OWT, int S, int SW>
__device__ __forceinline__ void run(const gaio_ktensor &x, const gaio_ktensor &w, const gaio_ktensor &b,
                                    const gaio_ktensor &res, const gaio_ktensor &y, const gaio_kdw &p, int cv,
                                    uint4 *taps, float *bias) {
    const int C = (int)y.shape[1], P = (int)y.shape[2], Q = (int)y.shape[3], R = (int)w.shape[2];
    const int H = (int)x.shape[2], W = (int)x.shape[3];
    const int cg = 8 * cv, c_base = (int)blockIdx.y * cg;
    // The block's taps, channel-fastest: taps[(r * S + s) * cv + v] holds channels
    // c_base + 8v .. +7 of tap (r, s); channels past C read as zero.
    {
        __half *t = reinterpret_cast<__half *>(taps);
        const __half *wp = reinterpret_cast<const __half *>(w.ptr);
        const int ws0 = (int)w.strides[0], ws2 = (int)w.strides[2], ws3 = (int)w.strides[3];
        // Tap by tap, a channel per thread: no divisions (this prologue is a large part
        // of a block's instructions where the block has few outputs to compute).
        for (int r = 0; r < R; r++)
#pragma unroll
            for (int s = 0; s < S; s++)
                for (int c = threadIdx.x; c < cg; c += THREADS)
                    t[(r * S + s) * cg + c] =
                        c_base + c < C ? wp[(c_base + c) * ws0 + r * ws2 + s * ws3] : __float2half(0.0f);
        const __half *bp = reinterpret_cast<const __half *>(b.ptr);
        for (int i = threadIdx.x; i < cg; i += THREADS)
            bias[i] = p.has_bias && c_base + i < C ? __half2float(bp[(c_base + i) * (int)b.strides[0]]) : 0.0f;
    }
    __syncthreads();
    const int v = threadIdx.x % cv, c0 = c_base + 8 * v;
    if (c0 >= C) return; // after the barrier: no thread waits on this one
    const int per_block = THREADS / cv, QT = (Q + OWT - 1) / OWT, strips = (int)y.shape[0] * P * QT;
    const int xs0 = (int)x.strides[0], xs2 = (int)x.strides[2], xs3 = (int)x.strides[3];
    const int ys0 = (int)y.strides[0], ys2 = (int)y.strides[2], ys3 = (int)y.strides[3];
    const int rs0 = (int)res.strides[0], rs2 = (int)res.strides[2], rs3 = (int)res.strides[3];
    const __half *xp = reinterpret_cast<const __half *>(x.ptr) + c0;
    __half *yp = reinterpret_cast<__half *>(y.ptr) + c0;
    const __half *rp = reinterpret_cast<const __half *>(res.ptr) + c0;
    for (int strip = (int)blockIdx.x * per_block + (int)threadIdx.x / cv; strip < strips;
         strip += (int)gridDim.x * per_block) {
        const int ot = strip % QT, oh = (strip / QT) % P, n = strip / (QT * P);
        const int h0 = oh * p.sh - p.pt, w0 = ot * OWT * p.sw - p.pl;
        float acc[OWT][8];
#pragma unroll
        for (int j = 0; j < OWT; j++)
#pragma unroll
            for (int e = 0; e < 8; e++) acc[j][e] = 0.0f;
        constexpr int NC = (OWT - 1) * SW + S; // the columns a strip's windows span
        for (int r = 0; r < R; r++) {
            const int h = h0 + r * p.dh;
            if (h < 0 || h >= H) continue;
            uint4 wt[S]; // converted at each use: S x 8 floats would cost occupancy
#pragma unroll
            for (int s = 0; s < S; s++) wt[s] = taps[(r * S + s) * cv + v];
            const __half *row = xp + n * xs0 + h * xs2;
            // The row's columns loaded together first: loads behind per-column branches
            // went out one at a time, a memory latency each (ncu: DRAM under 20% busy).
            uint4 xr[NC];
#pragma unroll
            for (int col = 0; col < NC; col++) {
                const int c = w0 + col;
                xr[col] = c >= 0 && c < W ? *reinterpret_cast<const uint4 *>(row + c * xs3) : make_uint4(0, 0, 0, 0);
            }
            // Column col of the strip's span feeds output j at tap s = col - j * SW.
#pragma unroll
            for (int col = 0; col < NC; col++) {
                const int c = w0 + col;
                if (c < 0 || c >= W) continue; // skipped, as gaio_dw_sum skips it
                float xv[8];
                unpack(xr[col], xv);
#pragma unroll
                for (int j = 0; j < OWT; j++) {
                    const int s = col - j * SW;
                    if (s < 0 || s >= S) continue;
                    float wf[8];
                    unpack(wt[s], wf);
#pragma unroll
                    for (int e = 0; e < 8; e++) acc[j][e] += xv[e] * wf[e];
                }
            }
        }
#pragma unroll
        for (int j = 0; j < OWT; j++) {
            const int ow = ot * OWT + j;
            if (ow >= Q) break;
            float rv[8] = {0, 0, 0, 0, 0, 0, 0, 0};
            // Read before y's vector is written, by this thread only: residual may be y.
            if (p.has_res) unpack(*reinterpret_cast<const uint4 *>(rp + n * rs0 + oh * rs2 + ow * rs3), rv);
            float o[8];
#pragma unroll
            for (int e = 0; e < 8; e++) o[e] = epilogue(p, acc[j][e], bias[8 * v + e], rv[e]);
            *reinterpret_cast<uint4 *>(yp + n * ys0 + oh * ys2 + ow * ys3) = pack(o);
        }
    }
}

} // namespace

// p.sw is 1 or 2, p.dw 1, w's width 3, 5 or 7 and its height at most 7, blockDim.x 256,
// gridDim.y * 8 * cv >= C, cv <= 32, owt 4 (S 3 or 5), 2 (S 7) or 1 (conv.c's
// depthwise_tiled_ok and launch).
extern "C" __global__ void __launch_bounds__(THREADS, 2)
    gaio_dnn_conv_depthwise_tiled(gaio_ktensor x, gaio_ktensor w, gaio_ktensor bias, gaio_ktensor residual,
                                  gaio_ktensor y, gaio_kdw p, int32_t cv, int32_t owt) {
    // One allocation for every instantiation (each would otherwise get its own).
    __shared__ uint4 taps[MAX_RS * MAX_CG / 8];
    __shared__ float b[MAX_CG];
    const int S = (int)w.shape[3];
    if (owt == 4) {
        if (p.sw == 1) {
            if (S == 3) run<4, 3, 1>(x, w, bias, residual, y, p, cv, taps, b);
            else run<4, 5, 1>(x, w, bias, residual, y, p, cv, taps, b);
        } else {
            if (S == 3) run<4, 3, 2>(x, w, bias, residual, y, p, cv, taps, b);
            else run<4, 5, 2>(x, w, bias, residual, y, p, cv, taps, b);
        }
    } else if (owt == 2) { // 7-wide windows: strips of 4 would spill their columns
        if (p.sw == 1) run<2, 7, 1>(x, w, bias, residual, y, p, cv, taps, b);
        else run<2, 7, 2>(x, w, bias, residual, y, p, cv, taps, b);
    } else { // one output per thread: the column stride is a run-time value there
        if (S == 3) run<1, 3, 1>(x, w, bias, residual, y, p, cv, taps, b);
        else if (S == 5) run<1, 5, 1>(x, w, bias, residual, y, p, cv, taps, b);
        else run<1, 7, 1>(x, w, bias, residual, y, p, cv, taps, b);
    }
}
