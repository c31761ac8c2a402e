// CUDA kernel of gaio's fused attention (dnn/attention_math.h): the scores never reach
// memory. Attention as exported graphs write it (q @ k^T, a softmax, @ v) wrote a
// [batch, L, Lk] score tensor twice and read it twice, and cuBLASLt ran its two GEMMs
// on Turing-era kernels where L is not a multiple of 8 (ViT's 197 tokens, Swin's 49):
// 2-byte alignment of the scores' rows. This is FlashAttention's scheme on tensor cores
// through WMMA: a block of 4 warps takes 64 queries of one (b0, b1), streams the keys
// and values through shared memory 64 at a time, and keeps a running max and sum per
// query row (the online softmax), so the output is rescaled instead of the scores kept.
//
// f16 operands, f32 accumulation; the probabilities are rounded to f16 for the second
// product, as FlashAttention and cuDNN do. D (the head size) is 32 or 64; rows of q,
// k, v and y are 16-byte aligned (src/dnn/attention.c checks both).
#include <cuda_fp16.h>
#include <mma.h>
#include <stdint.h>

#include "dnn/attention_math.h"
#include "dnn/reduce_math.h"

namespace {

using namespace nvcuda;

constexpr int BQ = 64, BK = 64, WARPS = 4, MAXD = 64;
// Rows of the shared tiles are padded: a row of 64 halves (128 bytes) puts the 8 rows a
// WMMA load reads in the same 4 banks, and a warp's lanes reading one column of the
// scores (a row of 64 floats each) in one bank: an 8- and a 32-way conflict, which had
// made the first version of this kernel slower than the unfused graph.
constexpr int LDH = MAXD + 8; // halves a row of q, k, v
constexpr int LDS = BK + 4;   // floats a row of a warp's scores

struct __align__(32) smem_t {
    half q[BQ * LDH];
    half k[BK * LDH];
    half v[BK * LDH];
    // a warp's scores (f32, LDS a row); then, in place, its probabilities (f16, LDH a
    // row); then its tile of p v (f32, LDS a row)
    float s[WARPS][16 * LDS];
};

// rows [first, first + 64) of t at (b0, b1) into dst (LDH halves a row), zeros past `rows`.
template <int D>
__device__ __forceinline__ void load_tile(half *dst, const gaio_ktensor &t, int64_t b0, int64_t b1, int64_t first,
                                          int64_t rows) {
    constexpr int VPR = D / 8; // 16-byte vectors a row
    const char *base = reinterpret_cast<const char *>(static_cast<uintptr_t>(t.ptr)) +
                       2 * (b0 * t.strides[0] + b1 * t.strides[1]);
    for (int i = threadIdx.x; i < 64 * VPR; i += blockDim.x) {
        const int r = i / VPR, c = i % VPR;
        uint4 u = make_uint4(0u, 0u, 0u, 0u);
        if (first + r < rows) u = __ldg(reinterpret_cast<const uint4 *>(base + 2 * ((first + r) * t.strides[2])) + c);
        reinterpret_cast<uint4 *>(dst + r * LDH)[c] = u;
    }
}

template <int D>
__device__ void attention(const gaio_ktensor &q, const gaio_ktensor &k, const gaio_ktensor &v,
                          const gaio_ktensor &bias, const gaio_ktensor &y, const gaio_kattn &p, smem_t &sm) {
    const int64_t L = q.shape[2], Lk = k.shape[2];
    const int64_t b0 = blockIdx.z, b1 = blockIdx.y, q0 = (int64_t)blockIdx.x * BQ;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    // This lane's row of the warp's 16 and its columns: h, h + 2, h + 4, ... (interleaved,
    // so that the two lanes of a row touch neighbouring words).
    const int r = lane >> 1, h = lane & 1;
    const int64_t qg = q0 + 16 * warp + r;
    const float l2e = 1.4426950408889634f, scale = p.alpha * l2e; // exp(x) = exp2(x log2 e)
    float o[D / 2];
#pragma unroll
    for (int j = 0; j < D / 2; j++) o[j] = 0.0f;
    float m = gaio_kt_neg_inf(), l = 0.0f; // the running max (log2 units) and sum
    load_tile<D>(sm.q, q, b0, b1, q0, L);
    float *sw = sm.s[warp];
    half *pw = reinterpret_cast<half *>(sw);
    for (int64_t k0 = 0; k0 < Lk; k0 += BK) {
        __syncthreads(); // the previous tile's readers are done (and q is in place)
        load_tile<D>(sm.k, k, b0, b1, k0, Lk);
        load_tile<D>(sm.v, v, b0, b1, k0, Lk);
        __syncthreads();
        // s = q k^T: this warp's 16 queries against the 64 keys
#pragma unroll
        for (int n = 0; n < BK / 16; n++) {
            wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
            wmma::fill_fragment(acc, 0.0f);
#pragma unroll
            for (int kk = 0; kk < D / 16; kk++) {
                wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
                wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
                wmma::load_matrix_sync(fa, sm.q + (16 * warp) * LDH + kk * 16, LDH);
                wmma::load_matrix_sync(fb, sm.k + (16 * n) * LDH + kk * 16, LDH);
                wmma::mma_sync(acc, fa, fb, acc);
            }
            wmma::store_matrix_sync(sw + 16 * n, acc, LDS, wmma::mem_row_major);
        }
        __syncwarp();
        // the online softmax over this lane's 32 columns of its row, in log2 units
        float x[32], mt = gaio_kt_neg_inf();
#pragma unroll
        for (int j = 0; j < 32; j++) {
            const int c = h + 2 * j;
            const int64_t kg = k0 + c;
            float s = sw[r * LDS + c] * scale;
            if (p.has_bias && qg < L && kg < Lk)
                s += l2e * gaio_kt_get(&bias, b0 * bias.strides[0] + b1 * bias.strides[1] + qg * bias.strides[2] +
                                                  kg * bias.strides[3]);
            x[j] = kg < Lk ? s : gaio_kt_neg_inf();
            mt = gaio_kt_max(mt, x[j]);
        }
        mt = gaio_kt_max(mt, __shfl_xor_sync(0xffffffffu, mt, 1));
        const float mn = gaio_kt_max(m, mt);
        const bool none = mn == gaio_kt_neg_inf(); // every key so far masked: nothing to weigh
        const float corr = none ? 1.0f : exp2f(m - mn);
        __syncwarp(); // every lane's scores are in registers: the probabilities overwrite them
        float sum = 0.0f;
#pragma unroll
        for (int j = 0; j < 32; j++) {
            const float e = none ? 0.0f : exp2f(x[j] - mn);
            sum += e;
            pw[r * LDH + h + 2 * j] = __float2half_rn(e);
        }
        sum += __shfl_xor_sync(0xffffffffu, sum, 1);
        l = l * corr + sum, m = mn;
#pragma unroll
        for (int j = 0; j < D / 2; j++) o[j] *= corr;
        __syncwarp();
        // o += p v: the warp's 16 x D tile; stored over the probabilities once all are read
        wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[D / 16];
#pragma unroll
        for (int c = 0; c < D / 16; c++) {
            wmma::fill_fragment(acc[c], 0.0f);
#pragma unroll
            for (int kk = 0; kk < BK / 16; kk++) {
                wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
                wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> fb;
                wmma::load_matrix_sync(fa, pw + kk * 16, LDH);
                wmma::load_matrix_sync(fb, sm.v + (kk * 16) * LDH + c * 16, LDH);
                wmma::mma_sync(acc[c], fa, fb, acc[c]);
            }
        }
        __syncwarp();
#pragma unroll
        for (int c = 0; c < D / 16; c++) wmma::store_matrix_sync(sw + c * 16, acc[c], LDS, wmma::mem_row_major);
        __syncwarp();
#pragma unroll
        for (int j = 0; j < D / 2; j++) o[j] += sw[r * LDS + h + 2 * j];
        __syncwarp(); // the next tile's scores overwrite sw
    }
    // the warp's 16 rows through sw, then out in rows of 16-byte vectors
    const float inv = l > 0.0f ? 1.0f / l : 0.0f;
#pragma unroll
    for (int j = 0; j < D / 2; j++) sw[r * LDS + h + 2 * j] = o[j] * inv;
    __syncwarp();
    for (int i = lane; i < 16 * (D / 8); i += 32) {
        const int rr = i / (D / 8), c = i % (D / 8);
        const int64_t qr = q0 + 16 * warp + rr;
        if (qr >= L) continue;
        uint4 u;
        half2 *hv = reinterpret_cast<half2 *>(&u);
        const float *src = sw + rr * LDS + 8 * c;
#pragma unroll
        for (int e = 0; e < 4; e++) hv[e] = __floats2half2_rn(src[2 * e], src[2 * e + 1]);
        half *row = reinterpret_cast<half *>(static_cast<uintptr_t>(y.ptr)) + b0 * y.strides[0] + b1 * y.strides[1] +
                    qr * y.strides[2];
        reinterpret_cast<uint4 *>(row)[c] = u;
    }
}

} // namespace

// grid (ceil(L / 64), B1, B0), 128 threads.
extern "C" __global__ void __launch_bounds__(128) gaio_dnn_attention(gaio_ktensor q, gaio_ktensor k, gaio_ktensor v,
                                                                     gaio_ktensor bias, gaio_ktensor y, gaio_kattn p) {
    __shared__ smem_t sm;
    if (q.shape[3] == 64)
        attention<64>(q, k, v, bias, y, p, sm);
    else
        attention<32>(q, k, v, bias, y, p, sm);
}
