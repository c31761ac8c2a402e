// CUDA kernels of gaio's depthwise convolution for the layers of MobileNet, EfficientNet
// and MNASNet: f16, x, y (and the residual) channels-innermost in 4-byte channel pairs,
// square 3x3 (gaio_dnn_conv_depthwise_pairs3), 5x5 (_pairs5) or 7x7 (_pairs7: ConvNeXt's
// where x is not in 16-byte vectors; depthwise_lanes.cu takes the others) windows, equal
// row and column strides of 1 or 2, no dilation. src/dnn/conv.c chooses them
// (depthwise_pairs_ok); depthwise_tiled.cu and depthwise.cu take the other layers.
//
// One thread holds a channel pair's whole filter in registers as f32 (converted once;
// depthwise_tiled.cu's threads of 8 channels reload and convert their taps for every
// row, and ncu put that kernel at 5 instructions per multiply-add); the 5x5 and 7x7
// kernels' blocks keep their pairs' f32 filters in shared memory instead, a window row's
// taps read into registers where they are used (the 5x5 one at 80 registers, not 122:
// 3 blocks an SM, its layers 10-30% faster). A thread computes a tile of OHT x OWT
// outputs of its pair, streaming the tile's input rows: each row is loaded and
// converted once and feeds every output row whose window covers it, and the next row's
// loads go out before this row's sums (two rows ahead measured the same). A block is
// bx channel pairs (a warp reads 128 contiguous bytes) by by tiles along a row of
// tiles; the grid's y numbers the rows of tiles (image and tile row), its z the channel
// groups. One kernel per window size, so that each gets its own register budget.
//
// Sums are f32 in gaio_dw_sum's order (rows, then columns). Columns outside x are read
// as zeros, as ONNX's zero padding defines them, rather than skipped as gaio_dw_sum
// skips them: the same sums except where a tap is infinite or NaN (0 * inf) or for the
// sign of a zero. Rows outside x are skipped. The epilogue is gaio_dw_epilogue's.
#include <cuda_fp16.h>
#include <stdint.h>

#include "dnn/depthwise_math.h"
#include "kernels/dnn/act_dispatch.cuh"

namespace {

// The activation over a tile's values: one test of the op a tile (act_dispatch.cuh).
template <int OHT, int OWT>
__device__ __forceinline__ void activate(const gaio_kpw_act &act, float2 (&v)[OHT][OWT]) {
    gaio_act::with_act<gaio_act::CONV>(act, [&](auto f) {
#pragma unroll
        for (int i = 0; i < OHT; i++)
#pragma unroll
            for (int j = 0; j < OWT; j++) v[i][j].x = f(v[i][j].x), v[i][j].y = f(v[i][j].y);
    });
}

// A pointer the compiler cannot rebuild from the kernel's parameters: without it, it
// recomputed every load's 64-bit address from the parameter (7 instructions a load).
__device__ __forceinline__ const char *opaque(const char *p) {
    asm("" : "+l"(p));
    return p;
}

// Input row h of a tile: NC channel pairs from base, the tile's first column in row 0 of
// its image (xs2b, xs3b: x's row and column strides in bytes); zeros outside x.
template <int NC>
__device__ __forceinline__ void load_row(const char *base, int xs2b, int xs3b, int H, int h, const bool (&in)[NC],
                                         __half2 (&v)[NC]) {
    const bool row_in = h >= 0 && h < H;
    // Unsigned offsets: a column inside x lies at or after base + h * xs2b.
    const uint32_t row = (uint32_t)(h * xs2b);
#pragma unroll
    for (int col = 0; col < NC; col++)
        v[col] = row_in && in[col] ? __ldg(reinterpret_cast<const __half2 *>(base + (row + (uint32_t)(col * xs3b))))
                                   : __floats2half2_rn(0.0f, 0.0f);
}

// R: the window's side, SD: the stride (rows and columns), OHT x OWT: a thread's
// outputs, SMEM: the filter in wsm (R * R taps by blockDim.x pairs), not registers.
// Offsets are 32-bit: conv.c launches these kernels only when p.narrow.
template <int R, int SD, int OHT, int OWT, bool SMEM>
__device__ __forceinline__ void run(const gaio_ktensor &x, const gaio_ktensor &w, const gaio_ktensor &b,
                                    const gaio_ktensor &res, const gaio_ktensor &y, const gaio_kdw &p, float2 *wsm) {
    constexpr int NR = (OHT - 1) * SD + R, NC = (OWT - 1) * SD + R; // a tile's input rows and columns
    const int C = (int)y.shape[1], P = (int)y.shape[2], Q = (int)y.shape[3];
    const int H = (int)x.shape[2], W = (int)x.shape[3];
    const int c0 = 2 * ((int)blockIdx.z * (int)blockDim.x + (int)threadIdx.x);
    const int tw = (int)blockIdx.x * (int)blockDim.y + (int)threadIdx.y, TW = (Q + OWT - 1) / OWT;
    constexpr int RW = SMEM ? 1 : R; // the filter in registers, or in wsm
    float2 wt[RW][RW], bias = make_float2(0.0f, 0.0f);
    {
        const __half *wp = reinterpret_cast<const __half *>(w.ptr);
        const int ws0 = (int)w.strides[0], ws2 = (int)w.strides[2], ws3 = (int)w.strides[3];
        if (SMEM) {
            // The block's pairs' taps: wsm[tap * blockDim.x + threadIdx.x], zeros past C.
            for (int t = (int)threadIdx.y; t < R * R; t += (int)blockDim.y) {
                const int o = c0 * ws0 + (t / R) * ws2 + (t % R) * ws3;
                wsm[t * (int)blockDim.x + (int)threadIdx.x] =
                    c0 < C ? make_float2(__half2float(wp[o]), __half2float(wp[o + ws0])) : make_float2(0.0f, 0.0f);
            }
            __syncthreads();
        }
        if (c0 >= C || tw >= TW) return; // after the barrier: no thread waits on this one
        if (!SMEM) {
#pragma unroll
            for (int r = 0; r < RW; r++)
#pragma unroll
                for (int s = 0; s < RW; s++) {
                    const int o = c0 * ws0 + r * ws2 + s * ws3;
                    wt[r][s] = make_float2(__half2float(wp[o]), __half2float(wp[o + ws0]));
                }
        }
        if (p.has_bias) {
            const __half *bp = reinterpret_cast<const __half *>(b.ptr);
            const int bs = (int)b.strides[0];
            bias = make_float2(__half2float(bp[c0 * bs]), __half2float(bp[(c0 + 1) * bs]));
        }
    }
    const int TH = (P + OHT - 1) / OHT, bands = (int)y.shape[0] * TH;
    const int ow0 = tw * OWT, w0 = ow0 * SD - p.pl;
    bool in[NC]; // the tile's input columns inside x
#pragma unroll
    for (int col = 0; col < NC; col++) in[col] = w0 + col >= 0 && w0 + col < W;
    const int xs0 = (int)x.strides[0], xs2 = (int)x.strides[2], xs3 = (int)x.strides[3];
    const int ys0 = (int)y.strides[0], ys2 = (int)y.strides[2], ys3 = (int)y.strides[3];
    const int rs0 = (int)res.strides[0], rs2 = (int)res.strides[2], rs3 = (int)res.strides[3];
    const int xs2b = 2 * xs2, xs3b = 2 * xs3;
    __half *yp = reinterpret_cast<__half *>(y.ptr) + c0 + ow0 * ys3;
    const __half *rp = reinterpret_cast<const __half *>(res.ptr) + c0 + ow0 * rs3;
    for (int band = (int)blockIdx.y; band < bands; band += (int)gridDim.y) {
        const int n = band / TH, oh0 = (band - n * TH) * OHT, h0 = oh0 * SD - p.pt;
        const char *xn = opaque(reinterpret_cast<const char *>(x.ptr) + 2 * ((int64_t)n * xs0 + c0 + w0 * xs3));
        float2 acc[OHT][OWT];
#pragma unroll
        for (int i = 0; i < OHT; i++)
#pragma unroll
            for (int j = 0; j < OWT; j++) acc[i][j] = make_float2(0.0f, 0.0f);
        __half2 cur[NC], nxt[NC];
        load_row<NC>(xn, xs2b, xs3b, H, h0, in, cur);
#pragma unroll
        for (int ir = 0; ir < NR; ir++) {
            if (ir + 1 < NR) load_row<NC>(xn, xs2b, xs3b, H, h0 + ir + 1, in, nxt);
            if (h0 + ir >= 0 && h0 + ir < H) {
                float2 xv[NC];
#pragma unroll
                for (int col = 0; col < NC; col++) xv[col] = __half22float2(cur[col]);
                // Input row ir is window row r = ir - i * SD of output row i; its column
                // col is tap s = col - j * SD of output j.
#pragma unroll
                for (int i = 0; i < OHT; i++) {
                    const int r = ir - i * SD;
                    if (r < 0 || r >= R) continue;
                    float2 wr[R]; // window row r's taps
#pragma unroll
                    for (int s = 0; s < R; s++)
                        wr[s] = SMEM ? wsm[(r * R + s) * (int)blockDim.x + (int)threadIdx.x] : wt[SMEM ? 0 : r][SMEM ? 0 : s];
#pragma unroll
                    for (int j = 0; j < OWT; j++)
#pragma unroll
                        for (int s = 0; s < R; s++) {
                            acc[i][j].x = fmaf(xv[j * SD + s].x, wr[s].x, acc[i][j].x);
                            acc[i][j].y = fmaf(xv[j * SD + s].y, wr[s].y, acc[i][j].y);
                        }
                }
            }
            if (ir + 1 < NR) {
#pragma unroll
                for (int col = 0; col < NC; col++) cur[col] = nxt[col];
            }
        }
        // gaio_dw_epilogue's order: bias, residual, activation.
#pragma unroll
        for (int i = 0; i < OHT; i++)
#pragma unroll
            for (int j = 0; j < OWT; j++) {
                acc[i][j].x += bias.x, acc[i][j].y += bias.y;
                if (p.has_res && oh0 + i < P && ow0 + j < Q) {
                    // Read before y's pair is written, by this thread only: residual may be y.
                    const float2 rv = __half22float2(
                        *reinterpret_cast<const __half2 *>(rp + n * rs0 + (oh0 + i) * rs2 + j * rs3));
                    acc[i][j].x += rv.x, acc[i][j].y += rv.y;
                }
            }
        activate(p.act, acc);
#pragma unroll
        for (int i = 0; i < OHT; i++)
#pragma unroll
            for (int j = 0; j < OWT; j++)
                if (oh0 + i < P && ow0 + j < Q)
                    *reinterpret_cast<__half2 *>(yp + n * ys0 + (oh0 + i) * ys2 + j * ys3) =
                        __floats2half2_rn(acc[i][j].x, acc[i][j].y);
    }
}

template <int R, bool SMEM>
__device__ __forceinline__ void dispatch(const gaio_ktensor &x, const gaio_ktensor &w, const gaio_ktensor &b,
                                         const gaio_ktensor &res, const gaio_ktensor &y, const gaio_kdw &p, int tile,
                                         float2 *wsm) {
    if (tile == 0) {
        if (p.sh == 1) run<R, 1, 2, 4, SMEM>(x, w, b, res, y, p, wsm);
        else run<R, 2, 2, 4, SMEM>(x, w, b, res, y, p, wsm);
    } else {
        if (p.sh == 1) run<R, 1, 1, 2, SMEM>(x, w, b, res, y, p, wsm);
        else run<R, 2, 1, 2, SMEM>(x, w, b, res, y, p, wsm);
    }
}

} // namespace

// w's window 3x3 (pairs3), 5x5 (pairs5) or 7x7 (pairs7), p.sh == p.sw in {1, 2}, p.dh == p.dw == 1,
// p.narrow; blockIdx.z * blockDim.x + threadIdx.x numbers the channel pairs,
// blockIdx.x * blockDim.y + threadIdx.y the tiles along a row, blockIdx.y (and its
// multiples of gridDim.y) the rows of tiles of all images; tile 0 is 2 x 4 outputs a
// thread, 1 is 1 x 2 (for layers too small to fill the GPU with the larger): conv.c's
// depthwise_pairs_ok and launch.
extern "C" __global__ void __launch_bounds__(256, 3)
    gaio_dnn_conv_depthwise_pairs3(gaio_ktensor x, gaio_ktensor w, gaio_ktensor bias, gaio_ktensor residual,
                                   gaio_ktensor y, gaio_kdw p, int32_t tile) {
    dispatch<3, false>(x, w, bias, residual, y, p, tile, nullptr);
}

extern "C" __global__ void __launch_bounds__(256, 3)
    gaio_dnn_conv_depthwise_pairs5(gaio_ktensor x, gaio_ktensor w, gaio_ktensor bias, gaio_ktensor residual,
                                   gaio_ktensor y, gaio_kdw p, int32_t tile) {
    __shared__ float2 wsm[25 * 32];
    dispatch<5, true>(x, w, bias, residual, y, p, tile, wsm);
}

// 7x7 (ConvNeXt's): at 80 registers its tile's 10 columns spilled.
extern "C" __global__ void __launch_bounds__(256, 2)
    gaio_dnn_conv_depthwise_pairs7(gaio_ktensor x, gaio_ktensor w, gaio_ktensor bias, gaio_ktensor residual,
                                   gaio_ktensor y, gaio_kdw p, int32_t tile) {
    __shared__ float2 wsm[49 * 32];
    dispatch<7, true>(x, w, bias, residual, y, p, tile, wsm);
}
