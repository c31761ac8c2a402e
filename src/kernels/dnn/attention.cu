// CUDA kernel of gaio's fused attention (dnn/attention_math.h): the scores never reach
// memory. Attention as exported graphs write it (q @ k^T, a softmax, @ v) wrote a
// [batch, L, Lk] score tensor twice and read it twice, and cuBLASLt ran its two GEMMs
// on Turing-era kernels where L is not a multiple of 8 (ViT's 197 tokens, Swin's 49):
// 2-byte alignment of the scores' rows.
//
// FlashAttention-2's scheme on mma.sync (m16n8k16, f16 in, f32 accumulation): a block
// of 4 warps takes 64 queries of one (b0, b1), each warp 16 of them, held in registers
// as A fragments for the whole run. Keys and values stream through shared memory 64 at
// a time, double-buffered with cp.async so that the next tile's loads overlap this
// tile's products. A warp's scores stay in registers: the accumulator layout of one
// m16n8 product is the A-fragment layout of the next product's 16 x 16 operand, so the
// probabilities go from the online softmax (a running max and sum per query row, in
// log2 units) straight into p v. The first version of this kernel went through WMMA,
// which hides fragment layouts: its scores took a round trip through shared memory
// between the two products, and it ran at about 7x the tensor cores' time for its
// FLOPs (112 us a ViT-B/16 layer at batch 32, H200).
//
// The probabilities are rounded to f16 for the second product, as FlashAttention and
// cuDNN do. D (the head size) is 32 or 64; rows of q, k, v and y are 16-byte aligned
// (src/dnn/attention.c checks both).
#include <cuda_fp16.h>
#include <stdint.h>

#include "dnn/attention_math.h"

// cp.async and the f16 mma need sm_80: older GPUs are refused on the host
// (dnn/attention.c), and their SASS of this kernel is an empty body.
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
#define GAIO_ATTENTION_BODY 1
#endif

#if GAIO_ATTENTION_BODY
namespace {

constexpr int BQ = 64, BK = 64, WARPS = 4, MAXD = 64;
// Rows of the shared tiles are padded by 16 bytes: ldmatrix's 8 row addresses then fall
// in 8 different groups of 4 banks (a row of 128 bytes put all 8 in one).
constexpr int LDH = MAXD + 8;

struct __align__(16) smem_t {
    half q[BQ * LDH];
    half k[2][BK * LDH];
    half v[2][BK * LDH];
};

__device__ __forceinline__ uint32_t smem_addr(const void *p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16 bytes from global to shared memory without a register round trip; zeros where
// !pred (src must still be a valid address).
__device__ __forceinline__ void cp_async16(void *dst, const void *src, bool pred) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
                 "r"(pred ? 16 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

// Four 8 x 8 matrices of halves; lane i gives the address of row i % 8 of matrix i / 8.
// (Shared-memory addresses as 32-bit integers: the per-lane part computed once, the
// rest constant offsets.)
__device__ __forceinline__ void ldsm4(uint32_t (&r)[4], uint32_t a) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a));
}
__device__ __forceinline__ void ldsm4_t(uint32_t (&r)[4], uint32_t a) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a));
}

// c += a b: a 16 x 16 (row major), b 16 x 8 (column major), c 16 x 8 in f32.
__device__ __forceinline__ void mma16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%0, %1, %2, %3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// 2^x by the SFU (exp2f without fast math adds a range fix-up the scores never need: x <= 0
// here, and an underflow to 0 is what the softmax wants).
__device__ __forceinline__ float fast_exp2(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}

__device__ __forceinline__ uint32_t pack_half2(float lo, float hi) {
    half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<uint32_t *>(&h);
}

// rows [first, first + 64) of t at (b0, b1) into dst (LDH halves a row) by cp.async,
// zeros past `rows` (so that p v never reads a value that is not a number). A thread
// moves 16-byte vectors c of rows r, r + RS, r + 2 RS, ...
template <int D>
__device__ __forceinline__ void load_tile(half *dst, const char *base, int64_t row_bytes, int64_t first,
                                          int64_t rows) {
    constexpr int VPR = D / 8, RS = WARPS * 32 / VPR; // 16-byte vectors a row; rows a pass
    const int r = threadIdx.x / VPR, c = threadIdx.x % VPR;
    const char *src = base + (first + r) * row_bytes + 16 * c;
    const int left = rows - first < 64 ? (int)(rows - first) : 64;
#pragma unroll
    for (int i = 0; i < 64 / RS; i++) {
        const bool in = r + i * RS < left;
        cp_async16(dst + (r + i * RS) * LDH + 8 * c, in ? src + i * RS * row_bytes : base, in);
    }
}

// The scores of one tile, scaled to log2 units, into s; their row maxima (rows g and
// g + 8 of the warp, this lane's columns) into mt. MODE 0: every key of the tile
// exists and there is no bias; 1: keys from `kvalid` on do not exist (-inf); 2: a bias
// of type B as well, read at rows brow[0], brow[1] (NULL: a query past L) with columns
// packed; 3: columns `bcol` elements apart (32 bits: attention.c checks the bias's size).
template <int NT, int MODE, typename B>
__device__ __forceinline__ void scale_scores(float (&s)[NT][4], float (&mt)[2], float scale, int c, int kvalid,
                                             const B *const (&brow)[2], int32_t bcol) {
    constexpr float l2e = 1.4426950408889634f;
#pragma unroll
    for (int j = 0; j < NT; j++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const int col = 8 * j + 2 * c + (e & 1), h = e >> 1;
            float x = s[j][e] * scale;
            if (MODE >= 2 && brow[h] && col < kvalid)
                x += l2e * static_cast<float>(brow[h][MODE == 2 ? col : col * bcol]);
            if (MODE != 0 && col >= kvalid) x = -INFINITY;
            s[j][e] = x;
            mt[h] = fmaxf(mt[h], x);
        }
}

// scale_scores with a bias of element type B at rows br (bytes), columns bcol apart.
template <int NT, typename B>
__device__ __forceinline__ void bias_scores(float (&s)[NT][4], float (&mt)[2], float scale, int c, int kvalid,
                                            const char *const (&br)[2], int32_t bcol) {
    const B *const rows[2] = {reinterpret_cast<const B *>(br[0]), reinterpret_cast<const B *>(br[1])};
    if (bcol == 1)
        scale_scores<NT, 2>(s, mt, scale, c, kvalid, rows, 1);
    else
        scale_scores<NT, 3>(s, mt, scale, c, kvalid, rows, bcol);
}

template <int D>
__device__ void attention(const gaio_ktensor &q, const gaio_ktensor &k, const gaio_ktensor &v,
                          const gaio_ktensor &bias, const gaio_ktensor &y, const gaio_kattn &p, smem_t &sm) {
    constexpr int KS = D / 16; // k-steps of q k^T
    constexpr int NT = BK / 8; // n-tiles of the scores (8 keys each)
    constexpr int DT = D / 8;  // n-tiles of the output (8 columns each)
    constexpr uint32_t STAGE = BK * LDH * 2; // bytes a stage of k or v
    const int64_t L = q.shape[2], Lk = k.shape[2];
    const int64_t b0 = blockIdx.z, b1 = blockIdx.y, q0 = (int64_t)blockIdx.x * BQ;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    // A lane's place in the accumulators: rows g and g + 8 of the warp's 16, columns
    // 2c and 2c + 1 of each n-tile.
    const int g = lane >> 2, c = lane & 3;
    const float scale = p.alpha * 1.4426950408889634f; // exp(x) = exp2(x log2 e)
    const int64_t ntiles = (Lk + BK - 1) / BK;
    auto at = [&](const gaio_ktensor &t) {
        return reinterpret_cast<const char *>(static_cast<uintptr_t>(t.ptr)) + 2 * (b0 * t.strides[0] + b1 * t.strides[1]);
    };
    const char *qb = at(q), *kb = at(k), *vb = at(v);
    const int64_t qrow = 2 * q.strides[2], krow = 2 * k.strides[2], vrow = 2 * v.strides[2];

    load_tile<D>(sm.q, qb, qrow, q0, L);
    load_tile<D>(sm.k[0], kb, krow, 0, Lk);
    load_tile<D>(sm.v[0], vb, vrow, 0, Lk);
    cp_async_commit();

    // ldmatrix's row addresses, this lane's part: q's A fragments (rows 0-7, 8-15 by
    // columns 0-7, 8-15), k's B fragments (keys 0-7 by columns 0-7, ..., 24-31), v's
    // transposed B fragments (keys 0-7, 8-15 by columns 0-7, 8-15)
    const uint32_t qa_at = smem_addr(sm.q) + 2 * ((16 * warp + (lane & 7) + ((lane >> 3) & 1) * 8) * LDH + (lane >> 4) * 8);
    const uint32_t k_at = smem_addr(sm.k[0]) + 2 * ((lane & 7) * LDH + (lane >> 3) * 8);
    const uint32_t v_at = smem_addr(sm.v[0]) + 2 * (((lane & 7) + ((lane >> 3) & 1) * 8) * LDH + (lane >> 4) * 8);

    uint32_t qa[KS][4];
    float o[DT][4];
#pragma unroll
    for (int j = 0; j < DT; j++) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.0f;
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f}; // per row g, g + 8
    const int64_t qg[2] = {q0 + 16 * warp + g, q0 + 16 * warp + g + 8};

    for (int64_t t = 0; t < ntiles; t++) {
        const int st = (int)(t & 1);
        if (t + 1 < ntiles) { // the next tile into the other stage, read by the tile before this one
            load_tile<D>(sm.k[st ^ 1], kb, krow, (t + 1) * BK, Lk);
            load_tile<D>(sm.v[st ^ 1], vb, vrow, (t + 1) * BK, Lk);
            cp_async_commit();
            cp_async_wait<1>();
        } else {
            cp_async_wait<0>();
        }
        __syncthreads();
        if (t == 0) {
#pragma unroll
            for (int kk = 0; kk < KS; kk++) ldsm4(qa[kk], qa_at + 32 * kk);
        }
        const uint32_t ks = k_at + st * STAGE, vs = v_at + st * STAGE;
        // s = q k^T: the warp's 16 queries against 64 keys, 8 n-tiles of 4 floats a lane
        float s[NT][4];
#pragma unroll
        for (int j = 0; j < NT; j++) {
            s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
#pragma unroll
            for (int kk = 0; kk < KS; kk += 2) {
                uint32_t b[4]; // keys 8j .. 8j + 7, columns 16kk .. 16kk + 31: k-steps kk, kk + 1
                ldsm4(b, ks + 2 * (8 * j * LDH + 16 * kk));
                mma16816(s[j], qa[kk], b[0], b[1]);
                mma16816(s[j], qa[kk + 1], b[2], b[3]);
            }
        }
        // the online softmax of rows g (s[j][0..1]) and g + 8 (s[j][2..3]); only the last
        // tile has keys past Lk, and only a bias makes a tile's elements differ otherwise
        const int64_t k0 = t * BK;
        const int kvalid = Lk - k0 < BK ? (int)(Lk - k0) : BK;
        float mt[2] = {-INFINITY, -INFINITY};
        if (p.has_bias) {
            const char *bb = reinterpret_cast<const char *>(static_cast<uintptr_t>(bias.ptr));
            const int64_t at0 = (b0 % bias.shape[0]) * bias.strides[0] + (b1 % bias.shape[1]) * bias.strides[1] +
                                k0 * bias.strides[3]; // leading dimensions repeat (attention.c)
            const int es = bias.dtype == GAIO_KT_F16 ? 2 : 4;
            const char *br[2];
#pragma unroll
            for (int h = 0; h < 2; h++) br[h] = qg[h] < L ? bb + es * (at0 + qg[h] * bias.strides[2]) : nullptr;
            // (the column stride through a register the compiler cannot see into: else it
            // keeps all 32 of a lane's column offsets from one tile to the next)
            int32_t bcol = (int32_t)bias.strides[3];
            asm volatile("mov.b32 %0, %0;\n" : "+r"(bcol));
            if (bias.dtype == GAIO_KT_F16)
                bias_scores<NT, __half>(s, mt, scale, c, kvalid, br, bcol);
            else
                bias_scores<NT, float>(s, mt, scale, c, kvalid, br, bcol);
        } else {
            const float *const none[2] = {nullptr, nullptr};
            if (kvalid < BK)
                scale_scores<NT, 1>(s, mt, scale, c, kvalid, none, 0);
            else
                scale_scores<NT, 0>(s, mt, scale, c, kvalid, none, 0);
        }
        // The new maxima. A row whose keys are all masked so far keeps -inf: it subtracts
        // 0 instead, so that its weights are exp2(-inf) = 0 rather than NaN. (fmaxf skips
        // NaN scores as the host twin's comparison does; they reach y through the sums.)
        float corr[2], mb[2];
#pragma unroll
        for (int h = 0; h < 2; h++) { // the row's 4 lanes: c = 0..3
            mt[h] = fmaxf(mt[h], __shfl_xor_sync(0xffffffffu, mt[h], 1));
            mt[h] = fmaxf(mt[h], __shfl_xor_sync(0xffffffffu, mt[h], 2));
            const float mn = fmaxf(m[h], mt[h]);
            mb[h] = mn == -INFINITY ? 0.0f : mn;
            corr[h] = fast_exp2(m[h] - mb[h]);
            m[h] = mn;
        }
        float sum[2] = {0.0f, 0.0f};
#pragma unroll
        for (int j = 0; j < NT; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                s[j][e] = fast_exp2(s[j][e] - mb[e >> 1]);
                sum[e >> 1] += s[j][e];
            }
#pragma unroll
        for (int h = 0; h < 2; h++) {
            sum[h] += __shfl_xor_sync(0xffffffffu, sum[h], 1);
            sum[h] += __shfl_xor_sync(0xffffffffu, sum[h], 2);
            l[h] = l[h] * corr[h] + sum[h];
        }
#pragma unroll
        for (int j = 0; j < DT; j++) o[j][0] *= corr[0], o[j][1] *= corr[0], o[j][2] *= corr[1], o[j][3] *= corr[1];
        // o += p v: n-tiles 2kk and 2kk + 1 of the scores are the A fragment of keys
        // 16kk .. 16kk + 15
#pragma unroll
        for (int kk = 0; kk < BK / 16; kk++) {
            const uint32_t pa[4] = {pack_half2(s[2 * kk][0], s[2 * kk][1]), pack_half2(s[2 * kk][2], s[2 * kk][3]),
                                    pack_half2(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                                    pack_half2(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
            for (int j = 0; j < DT; j += 2) {
                uint32_t b[4]; // keys 16kk .. 16kk + 15 by columns 8j .. 8j + 15, transposed
                ldsm4_t(b, vs + 2 * (16 * kk * LDH + 8 * j));
                mma16816(o[j], pa, b[0], b[1]);
                mma16816(o[j + 1], pa, b[2], b[3]);
            }
        }
        __syncthreads(); // every warp is done with this stage before the next loads overwrite it
    }
    // o / l, as half2 pairs straight to y's rows
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const int64_t qr = qg[h];
        if (qr >= L) continue;
        const float inv = l[h] > 0.0f ? 1.0f / l[h] : 0.0f;
        half *row = reinterpret_cast<half *>(static_cast<uintptr_t>(y.ptr)) + b0 * y.strides[0] + b1 * y.strides[1] +
                    qr * y.strides[2];
#pragma unroll
        for (int j = 0; j < DT; j++)
            *reinterpret_cast<half2 *>(row + 8 * j + 2 * c) =
                __floats2half2_rn(o[j][2 * h] * inv, o[j][2 * h + 1] * inv);
    }
}

} // namespace
#endif

// grid (ceil(L / 64), B1, B0), 128 threads; four blocks an SM: 128 registers a thread, no
// spills (the compiler took 168 otherwise: three blocks, Swin-T's attentions 13% slower).
extern "C" __global__ void __launch_bounds__(128, 4) gaio_dnn_attention(gaio_ktensor q, gaio_ktensor k, gaio_ktensor v,
                                                                     gaio_ktensor bias, gaio_ktensor y, gaio_kattn p) {
#if GAIO_ATTENTION_BODY
    __shared__ smem_t sm;
    if (q.shape[3] == 64)
        attention<64>(q, k, v, bias, y, p, sm);
    else
        attention<32>(q, k, v, bias, y, p, sm);
#endif
}
