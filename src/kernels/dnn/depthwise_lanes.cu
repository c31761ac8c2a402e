// CUDA kernel of gaio's depthwise convolution with a channel a lane and its whole filter
// in registers, for ConvNeXt's 7x7 windows (gaio_dnn_conv_depthwise_lanes7): stride 1
// or 2, no dilation, f16, x in 16-byte vectors of 8 channels, y (and the residual)
// channels-innermost. src/dnn/conv.c chooses it (depthwise_lanes_ok); depthwise_pairs.cu
// takes the other layers. The same kernel at 5x5 ran EfficientNet-B0's layers at batch
// 32 1.3 to 3x slower than the pairs kernel (bench/depthwise_bench.py, H200), so 5x5
// stays there.
//
// Why not pairs: depthwise_pairs.cu's threads hold a channel pair, so a 7x7 filter is 98
// floats, more than registers hold next to a tile, and its blocks read the taps from
// shared memory, 8 bytes a lane a tap; and every thread loads its own input window from
// global memory, 8 instructions a load (predicate, address, zero) by ncu's count, 3.1
// instructions a multiply-add in all. Here a lane's taps stay in registers as f32 for
// the whole block, and the block's input region (its tiles' windows) goes through
// shared memory once, as f32, in 16-byte loads: a lane then reads a window's value with
// one instruction at a fixed offset.
//
// A block is 32 channels (threadIdx.x; the last group partial) by 8 tiles (threadIdx.y)
// of OHT x OWT outputs each, BTH rows by BTW columns of tiles (BTW * BTH == 8, chosen
// by conv.c so that narrow maps fill the block); blockIdx.x numbers the block columns of
// tiles, blockIdx.y (and its multiples of gridDim.y) the block rows of all images, and
// blockIdx.z the channel groups. A thread streams its tile's input rows from shared
// memory: each row feeds every output row whose window covers it.
//
// Sums are f32 in gaio_dw_sum's order (rows, then columns). Rows and columns outside x
// are read as zeros, as ONNX's zero padding defines them, rather than skipped as
// gaio_dw_sum skips them: the same sums except where a tap is infinite or NaN (0 * inf)
// or for the sign of a zero. The epilogue is gaio_dw_epilogue's.
#include <cuda_fp16.h>
#include <stdint.h>

#include "dnn/depthwise_math.h"
#include "kernels/dnn/act_dispatch.cuh"

namespace {

constexpr int LANES = 32, TILES = 8; // a block's channels and tiles

// The largest input region of a block (pixels): stride 1, tiles of 4 x 4, the 8 tiles
// in a row (38 x 10) or a column; every other case is smaller.
constexpr int REGION = 380;

// R: the window's side, SD: the stride (rows and columns), OHT x OWT: a thread's
// outputs. Offsets are 32-bit: conv.c launches these kernels only when p.narrow.
template <int R, int SD, int OHT, int OWT>
__device__ __forceinline__ void run(const gaio_ktensor &x, const gaio_ktensor &w, const gaio_ktensor &b,
                                    const gaio_ktensor &res, const gaio_ktensor &y, const gaio_kdw &p, int btw,
                                    float *xs) {
    constexpr int NR = (OHT - 1) * SD + R, NC = (OWT - 1) * SD + R; // a tile's input rows and columns
    const int C = (int)y.shape[1], P = (int)y.shape[2], Q = (int)y.shape[3];
    const int H = (int)x.shape[2], W = (int)x.shape[3];
    const int bth = TILES / btw;
    const int RR = (bth * OHT - 1) * SD + R, RC = (btw * OWT - 1) * SD + R; // the block's input region
    const int lane = (int)threadIdx.x, ty = (int)threadIdx.y, tid = ty * LANES + lane;
    const int c0 = (int)blockIdx.z * LANES, c = c0 + lane;
    float wt[R][R], bias = 0.0f;
    {
        // The block's filters through shared memory in w's order: a lane's own taps
        // straight from w would be 32 filters' sectors a warp load.
        const __half *wp = reinterpret_cast<const __half *>(w.ptr);
        const int ws0 = (int)w.strides[0], ws2 = (int)w.strides[2], ws3 = (int)w.strides[3];
        const int taps = min(LANES, C - c0) * R * R;
        for (int f = tid; f < taps; f += LANES * TILES) {
            const int k = f / (R * R), t = f - k * (R * R);
            xs[f] = __half2float(wp[(c0 + k) * ws0 + (t / R) * ws2 + (t % R) * ws3]);
        }
        __syncthreads();
        // A lane's taps lie R * R (odd) words apart: no bank conflicts.
        if (c < C) {
#pragma unroll
            for (int r = 0; r < R; r++)
#pragma unroll
                for (int s = 0; s < R; s++) wt[r][s] = xs[lane * (R * R) + r * R + s];
            if (p.has_bias) bias = __half2float(reinterpret_cast<const __half *>(b.ptr)[c * (int)b.strides[0]]);
        }
    }
    const int TH = (P + OHT - 1) / OHT, TW = (Q + OWT - 1) / OWT, TRB = (TH + bth - 1) / bth;
    const int bands = (int)y.shape[0] * TRB;
    // This thread's tile inside the block, and its first input value in xs.
    const int tr = ty / btw, tc = ty - tr * btw;
    const int tw = (int)blockIdx.x * btw + tc, ow0 = tw * OWT;
    const float *xl = xs + ((tr * OHT * SD) * RC + tc * OWT * SD) * LANES + lane;
    // The loader's part: 8 channels (vec) of region column rc, rows rsub, rsub + rpi, ...
    const int per_row = RC * (LANES / 8), rpi = LANES * TILES / per_row;
    const int rsub = tid / per_row, rem = tid - rsub * per_row, rc = rem / (LANES / 8), vec = rem % (LANES / 8);
    const int wcol = (int)blockIdx.x * btw * OWT * SD - p.pl + rc, ch = c0 + 8 * vec;
    const bool loads = rsub < rpi && wcol >= 0 && wcol < W && ch < C;
    const int xs0 = (int)x.strides[0], xs2 = (int)x.strides[2], xs3 = (int)x.strides[3];
    const int ys0 = (int)y.strides[0], ys2 = (int)y.strides[2], ys3 = (int)y.strides[3];
    const int rs0 = (int)res.strides[0], rs2 = (int)res.strides[2], rs3 = (int)res.strides[3];
    for (int band = (int)blockIdx.y; band < bands; band += (int)gridDim.y) {
        const int n = band / TRB, th0 = (band - n * TRB) * bth, hb = th0 * OHT * SD - p.pt;
        __syncthreads(); // the last band's (or the filters') reads of xs are done
        if (rsub < rpi) {
            const __half *xc = reinterpret_cast<const __half *>(x.ptr) + n * xs0 + wcol * xs3 + ch;
            for (int rr = rsub; rr < RR; rr += rpi) {
                const int h = hb + rr;
                uint4 v = make_uint4(0, 0, 0, 0);
                if (loads && h >= 0 && h < H) v = __ldg(reinterpret_cast<const uint4 *>(xc + h * xs2));
                const __half2 *hv = reinterpret_cast<const __half2 *>(&v);
                float4 *dst = reinterpret_cast<float4 *>(xs + (rr * RC + rc) * LANES + 8 * vec);
                const float2 f0 = __half22float2(hv[0]), f1 = __half22float2(hv[1]);
                const float2 f2 = __half22float2(hv[2]), f3 = __half22float2(hv[3]);
                dst[0] = make_float4(f0.x, f0.y, f1.x, f1.y);
                dst[1] = make_float4(f2.x, f2.y, f3.x, f3.y);
            }
        }
        __syncthreads();
        const int oh0 = (th0 + tr) * OHT;
        if (c >= C || tw >= TW || oh0 >= P) continue; // idle this band; still at every barrier
        float acc[OHT][OWT];
#pragma unroll
        for (int i = 0; i < OHT; i++)
#pragma unroll
            for (int j = 0; j < OWT; j++) acc[i][j] = 0.0f;
#pragma unroll
        for (int ir = 0; ir < NR; ir++) {
            float xv[NC];
            const float *row = xl + ir * RC * LANES;
#pragma unroll
            for (int col = 0; col < NC; col++) xv[col] = row[col * LANES];
            // Input row ir is window row r = ir - i * SD of output row i; its column col
            // is tap s = col - j * SD of output j. Taps outermost: consecutive
            // multiply-adds feed different sums (each sum's order stays r, then s).
#pragma unroll
            for (int s = 0; s < R; s++)
#pragma unroll
                for (int i = 0; i < OHT; i++) {
                    const int r = ir - i * SD;
                    if (r < 0 || r >= R) continue;
#pragma unroll
                    for (int j = 0; j < OWT; j++) acc[i][j] = fmaf(xv[j * SD + s], wt[r][s], acc[i][j]);
                }
        }
        // gaio_dw_epilogue's order: bias, residual, activation.
        __half *yp = reinterpret_cast<__half *>(y.ptr) + n * ys0 + oh0 * ys2 + ow0 * ys3 + c;
        const __half *rp = reinterpret_cast<const __half *>(res.ptr) + n * rs0 + oh0 * rs2 + ow0 * rs3 + c;
#pragma unroll
        for (int i = 0; i < OHT; i++)
#pragma unroll
            for (int j = 0; j < OWT; j++) {
                acc[i][j] += bias;
                // Read before y's element is written, by this thread only: residual may be y.
                if (p.has_res && oh0 + i < P && ow0 + j < Q) acc[i][j] += __half2float(rp[i * rs2 + j * rs3]);
            }
        gaio_act::with_act<gaio_act::CONV>(p.act, [&](auto f) {
#pragma unroll
            for (int i = 0; i < OHT; i++)
#pragma unroll
                for (int j = 0; j < OWT; j++)
                    if (oh0 + i < P && ow0 + j < Q) yp[i * ys2 + j * ys3] = __float2half_rn(f(acc[i][j]));
        });
    }
}

template <int R>
__device__ __forceinline__ void dispatch(const gaio_ktensor &x, const gaio_ktensor &w, const gaio_ktensor &b,
                                         const gaio_ktensor &res, const gaio_ktensor &y, const gaio_kdw &p, int tile,
                                         int btw, float *xs) {
    if (tile == 0) {
        if (p.sh == 1) run<R, 1, 4, 4>(x, w, b, res, y, p, btw, xs);
        else run<R, 2, 2, 2>(x, w, b, res, y, p, btw, xs);
    } else {
        if (p.sh == 1) run<R, 1, 2, 2>(x, w, b, res, y, p, btw, xs);
        else run<R, 2, 1, 2>(x, w, b, res, y, p, btw, xs);
    }
}

} // namespace

// w's window 7x7, p.sh == p.sw in {1, 2}, p.dh == p.dw == 1,
// p.narrow, x in vectors of 8 channels; blocks of 32 x 8 threads (the head's layout),
// btw in {1, 2, 4, 8}; tile 0 is 4 x 4 outputs a thread (2 x 2 at stride 2), 1 is 2 x 2
// (1 x 2) for layers too small to fill the GPU with the larger: conv.c's
// depthwise_lanes_ok and launch.
extern "C" __global__ void __launch_bounds__(256, 2)
    gaio_dnn_conv_depthwise_lanes7(gaio_ktensor x, gaio_ktensor w, gaio_ktensor bias, gaio_ktensor residual,
                                   gaio_ktensor y, gaio_kdw p, int32_t tile, int32_t btw) {
    __shared__ __align__(16) float xs[REGION * LANES];
    dispatch<7>(x, w, bias, residual, y, p, tile, btw, xs);
}
