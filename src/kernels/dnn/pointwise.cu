// CUDA kernels of the pointwise ops: gaio_unary, gaio_binary, gaio_cast (the unary
// kernel with the identity op) and gaio_batch_norm. Host twins in
// src/dnn/cpu/pointwise.c; the per-element arithmetic is dnn/pointwise_math.h's.
//
// Every tensor arrives over the output's shape, simplified by src/dnn/pointwise.c:
// size-1 dimensions dropped, the rest ordered by the output's strides and merged
// where all tensors allow it, so a packed op is one dimension and each thread's
// offsets are i * stride. Otherwise a thread decodes its flat index into coordinates,
// with 32-bit divisions when the element count allows: 64-bit division is a long
// instruction sequence that otherwise makes these memory-bound kernels compute-bound.
// Grid-stride loops over the output's elements.
//
// The unary kernel has one more path, for a small channel count moving innermost
// (gaio_cast of an f32 NCHW image batch to f16 NHWC): simplified, y is [N, P, C] with
// C packed and x reads it as [C planes of P], so a thread per (n, p) reads one element
// of each plane (a warp's reads contiguous per plane) and writes C neighbours.
#include <cuda_fp16.h>
#include <stdint.h>

#include "dnn/pointwise_math.h"
#include "kernels/dnn/act_dispatch.cuh"

namespace {
using gaio_act::with_act;

__device__ __forceinline__ float load(const gaio_ktensor &t, int64_t off) {
    if (t.dtype == GAIO_KT_F16)
        return __half2float(__ushort_as_half(((const uint16_t *)(uintptr_t)t.ptr)[off]));
    return ((const float *)(uintptr_t)t.ptr)[off];
}

__device__ __forceinline__ void store(const gaio_ktensor &t, int64_t off, float v) {
    if (t.dtype == GAIO_KT_F16)
        ((uint16_t *)(uintptr_t)t.ptr)[off] = __half_as_ushort(__float2half_rn(v));
    else
        ((float *)(uintptr_t)t.ptr)[off] = v;
}

__device__ __forceinline__ int64_t first() { return (int64_t)blockIdx.x * blockDim.x + threadIdx.x; }
__device__ __forceinline__ int64_t step() { return (int64_t)gridDim.x * blockDim.x; }

// The 16-byte vector paths below apply their ops lane by lane: 8 halves (converted to
// f32 and back) or 4 floats. A union, not pointer casts, between the vector and its
// lanes: they stay in registers (a cast pointer put them in local memory).
union lanes16 {
    uint4 v;
    __half2 h[4];
    float f[4];
};

// y's lanes = f(lane, a's lane, b's lane).
template <typename F> __device__ __forceinline__ uint4 map16(bool half, uint4 a, uint4 b, F f) {
    lanes16 ra, rb, ry;
    ra.v = a, rb.v = b;
    if (half) {
#pragma unroll
        for (int q = 0; q < 4; q++) {
            const float2 fa = __half22float2(ra.h[q]), fb = __half22float2(rb.h[q]);
            ry.h[q] = __floats2half2_rn(f(2 * q, fa.x, fb.x), f(2 * q + 1, fa.y, fb.y));
        }
    } else {
#pragma unroll
        for (int q = 0; q < 4; q++) ry.f[q] = f(q, ra.f[q], rb.f[q]);
    }
    return ry.v;
}

// The binary op as a functor, its common cases compile-time constants (see
// act_dispatch.cuh's with_act).
template <int OP> struct fixed_binary {
    __device__ __forceinline__ float operator()(float a, float b) const { return gaio_pw_binary(OP, a, b); }
};
struct any_binary {
    int32_t op;
    __device__ __forceinline__ float operator()(float a, float b) const { return gaio_pw_binary(op, a, b); }
};
template <typename K> __device__ __forceinline__ void with_binary(int32_t op, K &&k) {
    if (op == GAIO_KPW_ADD) return k(fixed_binary<GAIO_KPW_ADD>{});
    if (op == GAIO_KPW_MUL) return k(fixed_binary<GAIO_KPW_MUL>{});
    k(any_binary{op});
}

// gaio_pw_offsets with the coordinates decoded in 32 bits: for n < 2^31 elements, so
// every extent and index fits.
__device__ __forceinline__ void offsets32(const gaio_ktensor *const *t, int n, const int64_t *shape, int32_t ndim,
                                          uint32_t i, int64_t *off) {
    for (int k = 0; k < n; k++) off[k] = 0;
    GAIO_KT_UNROLL
    for (int32_t d = GAIO_KT_MAX_NDIM - 1; d >= 0; d--) {
        if (d >= ndim) continue;
        const uint32_t e = (uint32_t)shape[d], q = i / e, c = i - q * e;
        i = q;
        for (int k = 0; k < n; k++) off[k] += (int64_t)c * t[k]->strides[d];
    }
}

// The small-channel transpose (see the top): y [N, P, C] (or [P, C], N = 1, when the
// batch had one image) with y's C packed and x's P packed. Each element gets the same
// act as on the other paths.
__device__ __forceinline__ bool channels_inner(const gaio_ktensor &x, const gaio_ktensor &y) {
    const int32_t d = y.ndim - 1;
    return (y.ndim == 2 || y.ndim == 3) && gaio_kt_stride(&y, d) == 1 && gaio_kt_stride(&x, d - 1) == 1 &&
           gaio_kt_extent(&y, d) <= 8;
}

__device__ __forceinline__ void unary_channels_inner(const gaio_ktensor &x, const gaio_ktensor &y,
                                                     const gaio_kpw_act &act) {
    const bool batched = y.ndim == 3;
    // (constant indices only: see GAIO_KT_UNROLL)
    const int64_t N = batched ? y.shape[0] : 1, P = batched ? y.shape[1] : y.shape[0];
    const int64_t C = batched ? y.shape[2] : y.shape[1], rows = N * P;
    const int64_t xs0 = batched ? x.strides[0] : 0, ys0 = batched ? y.strides[0] : 0;
    const int64_t xsc = batched ? x.strides[2] : x.strides[1], ysp = batched ? y.strides[1] : y.strides[0];
    if (rows < INT32_MAX) {
        const uint32_t p32 = (uint32_t)P, step32 = gridDim.x * blockDim.x;
        for (uint32_t j = blockIdx.x * blockDim.x + threadIdx.x; j < (uint32_t)rows; j += step32) {
            const uint32_t n = j / p32, p = j - n * p32;
            const int64_t ox = n * xs0 + p, oy = n * ys0 + (int64_t)p * ysp;
            for (int64_t c = 0; c < C; c++)
                store(y, oy + c, gaio_pw_unary(act.op, load(x, ox + c * xsc), act.alpha, act.beta));
        }
        return;
    }
    for (int64_t j = first(); j < rows; j += step()) {
        const int64_t n = j / P, p = j - n * P;
        const int64_t ox = n * xs0 + p, oy = n * ys0 + p * ysp;
        for (int64_t c = 0; c < C; c++)
            store(y, oy + c, gaio_pw_unary(act.op, load(x, ox + c * xsc), act.alpha, act.beta));
    }
}

} // namespace

// One packed row of one dtype (an activation after a convolution, in place): 16 bytes
// per access where the bases allow, then the tail element-wise.
__device__ __forceinline__ int64_t unary_vectors(const gaio_ktensor &x, const gaio_ktensor &y, int64_t n,
                                                 const gaio_kpw_act &act) {
    if (x.dtype != y.dtype || x.strides[0] != 1 || y.strides[0] != 1 || ((x.ptr | y.ptr) & 15u) != 0) return 0;
    const bool half = y.dtype == GAIO_KT_F16;
    const int64_t nv = n / (half ? 8 : 4);
    const uint4 *px = (const uint4 *)(uintptr_t)x.ptr;
    uint4 *py = (uint4 *)(uintptr_t)y.ptr;
    with_act<gaio_act::ALL>(act, [&](auto f) {
        for (int64_t i = first(); i < nv; i += step())
            py[i] = map16(half, px[i], px[i], [&](int, float v, float) { return f(v); });
    });
    return nv * (half ? 8 : 4);
}

extern "C" __global__ void gaio_dnn_unary(gaio_ktensor x, gaio_ktensor y, gaio_kpw_act act) {
    // src/dnn/pointwise.c launches a thread per (n, p) under the same test.
    if (channels_inner(x, y)) {
        unary_channels_inner(x, y, act);
        return;
    }
    const int64_t n = gaio_kt_count(&y);
    if (y.ndim == 1) {
        for (int64_t i = unary_vectors(x, y, n, act) + first(); i < n; i += step())
            store(y, i * y.strides[0], gaio_pw_unary(act.op, load(x, i * x.strides[0]), act.alpha, act.beta));
        return;
    }
    const gaio_ktensor *ts[2] = {&y, &x};
    if (n < INT32_MAX) {
        const uint32_t n32 = (uint32_t)n, step32 = gridDim.x * blockDim.x;
        for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n32; i += step32) {
            int64_t off[2];
            offsets32(ts, 2, y.shape, y.ndim, i, off);
            store(y, off[0], gaio_pw_unary(act.op, load(x, off[1]), act.alpha, act.beta));
        }
        return;
    }
    for (int64_t i = first(); i < n; i += step()) {
        int64_t off[2];
        gaio_pw_offsets(ts, 2, y.shape, y.ndim, i, off);
        store(y, off[0], gaio_pw_unary(act.op, load(x, off[1]), act.alpha, act.beta));
    }
}

extern "C" __global__ void gaio_dnn_binary(gaio_ktensor a, gaio_ktensor b, gaio_ktensor y, int32_t op,
                                           gaio_kpw_act act) {
    const int64_t n = gaio_kt_count(&y);
    const gaio_ktensor *ts[3] = {&y, &a, &b};
    const bool narrow = n < INT32_MAX;
    for (int64_t i = first(); i < n; i += step()) {
        int64_t off[3];
        if (y.ndim == 1) {
            off[0] = i * y.strides[0];
            off[1] = i * a.strides[0];
            off[2] = i * b.strides[0];
        } else if (narrow) {
            offsets32(ts, 3, y.shape, y.ndim, (uint32_t)i, off);
        } else {
            gaio_pw_offsets(ts, 3, y.shape, y.ndim, i, off);
        }
        float v = gaio_pw_binary(op, load(a, off[1]), load(b, off[2]));
        store(y, off[0], gaio_pw_unary(act.op, v, act.alpha, act.beta));
    }
}

// a, b and y packed, of one dtype and n elements (src/dnn/pointwise.c launches it
// where simplify() left one row of stride 1 for all three): scalar parameters only, so
// that no thread copies gaio_ktensor parameters into local memory (the general kernel
// does, and on ResNet-50's residual adds that took 3 times the data's own traffic),
// and 16 bytes per access where the three addresses allow. In place works: each
// thread reads its elements before it writes them.
extern "C" __global__ void gaio_dnn_binary_packed(uint64_t a, uint64_t b, uint64_t y, int64_t n, int32_t dtype,
                                                  int32_t op, gaio_kpw_act act) {
    const int per = dtype == GAIO_KT_F16 ? 8 : 4;
    int64_t done = 0;
    if ((a | b | y) % 16 == 0) {
        const int64_t nv = n / per;
        const uint4 *pa = (const uint4 *)a, *pb = (const uint4 *)b;
        uint4 *py = (uint4 *)y;
        const bool half = dtype == GAIO_KT_F16;
        with_binary(op, [&](auto g) {
            with_act<gaio_act::FEW>(act, [&](auto f) {
                for (int64_t i = first(); i < nv; i += step())
                    py[i] = map16(half, pa[i], pb[i], [&](int, float va, float vb) { return f(g(va, vb)); });
            });
        });
        done = nv * per;
    }
    gaio_ktensor ta, tb, tyy; // only dtype and ptr are read
    ta.dtype = tb.dtype = tyy.dtype = dtype;
    ta.ptr = a, tb.ptr = b, tyy.ptr = y;
    for (int64_t i = done + first(); i < n; i += step())
        store(tyy, i, gaio_pw_unary(act.op, gaio_pw_binary(op, load(ta, i), load(tb, i)), act.alpha, act.beta));
}

// y[n, p, :] = op(a[n, p, :], b[n, :]) (or with a the broadcast row): the squeeze-and-
// excitation scale of NHWC maps, x * s with s one row of C per image. All three packed;
// src/dnn/pointwise.c launches it where simplify() left that form (the element-wise
// kernel decoded three tensors' offsets per element there). 16 bytes per access where
// C and the bases allow, an element otherwise. In place works as in binary_vectors.
namespace {
template <typename I>
__device__ __forceinline__ void rows_bcast(uint64_t full, uint64_t row, uint64_t y, I n, I p, I c, int32_t dtype,
                                           int32_t op, bool row_is_b, const gaio_kpw_act &act) {
    const bool half = dtype == GAIO_KT_F16;
    const I per = half ? 8 : 4, step32 = (I)gridDim.x * (I)blockDim.x;
    if (c % per != 0 || ((full | row | y) & 15u) != 0) {
        gaio_ktensor tf, tr, ty; // only dtype and ptr are read
        tf.dtype = tr.dtype = ty.dtype = dtype;
        tf.ptr = full, tr.ptr = row, ty.ptr = y;
        const I pc = p * c, total = n * pc;
        for (I i = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x; i < total; i += step32) {
            const I k = i / pc, j = i - (i / c) * c;
            const float f = load(tf, (int64_t)i), r = load(tr, (int64_t)k * c + j);
            store(ty, (int64_t)i, gaio_pw_unary(act.op, row_is_b ? gaio_pw_binary(op, f, r) : gaio_pw_binary(op, r, f),
                                                act.alpha, act.beta));
        }
        return;
    }
    const I cv = c / per, pcv = p * cv, total = n * pcv;
    const uint4 *pf = (const uint4 *)(uintptr_t)full, *pr = (const uint4 *)(uintptr_t)row;
    uint4 *py = (uint4 *)(uintptr_t)y;
    with_binary(op, [&](auto g) {
        with_act<gaio_act::FEW>(act, [&](auto f) {
            for (I i = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x; i < total; i += step32) {
                const I k = i / pcv, j = i - (i / cv) * cv;
                const uint4 vf = pf[i], vr = pr[(int64_t)k * cv + j];
                py[i] = map16(half, row_is_b ? vf : vr, row_is_b ? vr : vf,
                              [&](int, float va, float vb) { return f(g(va, vb)); });
            }
        });
    });
}
} // namespace

extern "C" __global__ void gaio_dnn_binary_rows(uint64_t a, uint64_t b, uint64_t y, int64_t n, int64_t p, int64_t c,
                                                int32_t dtype, int32_t op, int32_t row_is_b, gaio_kpw_act act) {
    const uint64_t full = row_is_b ? a : b, row = row_is_b ? b : a;
    if (n * p * c + (int64_t)gridDim.x * blockDim.x < INT32_MAX)
        rows_bcast<uint32_t>(full, row, y, (uint32_t)n, (uint32_t)p, (uint32_t)c, dtype, op, row_is_b != 0, act);
    else
        rows_bcast<uint64_t>(full, row, y, (uint64_t)n, (uint64_t)p, (uint64_t)c, dtype, op, row_is_b != 0, act);
}

// Batch norm over rows of C channels (NHWC, simplified to [rows, C] with the channels
// packed, or one row [C]): each thread keeps one group of channels (16 bytes: 8 halves
// or 4 floats, where C, the row pitch and the bases allow; else one channel) for the
// whole launch, its scales in registers, and walks down the rows. The sum is
// gaio_pw_batch_norm's, (x - mean) * (scale / sqrt(var + eps)) + bias, so both paths
// give the same bits. DenseNet runs one before every convolution, on all the channels
// concatenated so far: the element-wise path decoded six tensors' offsets per element.
namespace {
__device__ __forceinline__ bool bn_param_row(const gaio_ktensor &p, int32_t ndim) {
    return ndim == 2 ? p.strides[0] == 0 && p.strides[1] == 1 : p.strides[0] == 1;
}

__device__ __forceinline__ bool bn_rows_form(const gaio_ktensor &x, const gaio_ktensor &y, const gaio_ktensor &s,
                                             const gaio_ktensor &b, const gaio_ktensor &m, const gaio_ktensor &v) {
    const int32_t nd = y.ndim;
    if (nd != 1 && nd != 2) return false;
    const bool packed = nd == 2 ? x.strides[1] == 1 && y.strides[1] == 1 : x.strides[0] == 1 && y.strides[0] == 1;
    return packed && bn_param_row(s, nd) && bn_param_row(b, nd) && bn_param_row(m, nd) && bn_param_row(v, nd);
}

// affine: x * scale + bias rounded twice, as the host kernel's (no contraction there).
__device__ __forceinline__ float bn_apply(float x, float m, float k, float b, bool affine) {
    return affine ? __fadd_rn(__fmul_rn(x, k), b) : (x - m) * k + b;
}

template <int PER>
__device__ __forceinline__ void bn_rows(const gaio_ktensor &x, const gaio_ktensor &y, const float *ps,
                                        const float *pb, const float *pm, const float *pv, float epsilon, bool affine,
                                        int64_t rows, int64_t groups, int64_t xs, int64_t ys, const gaio_kpw_act &act) {
    // Threads past the last whole set of groups idle: the others keep their group.
    const int64_t threads = (int64_t)gridDim.x * blockDim.x, sets = threads / groups;
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= sets * groups) return;
    const int64_t g = t % groups, c0 = g * PER;
    float k[PER], m[PER], b[PER];
#pragma unroll
    for (int q = 0; q < PER; q++) {
        k[q] = affine ? ps[c0 + q] : ps[c0 + q] / sqrtf(pv[c0 + q] + epsilon);
        m[q] = affine ? 0.0f : pm[c0 + q], b[q] = pb[c0 + q];
    }
    const bool half = y.dtype == GAIO_KT_F16;
    const int64_t es = half ? 2 : 4;
    const char *px = (const char *)(uintptr_t)x.ptr + c0 * es;
    char *py = (char *)(uintptr_t)y.ptr + c0 * es;
    with_act<gaio_act::FEW>(act, [&](auto f) {
        for (int64_t r = t / groups; r < rows; r += sets) {
            if (PER == 1) {
                const float v =
                    half ? __half2float(*(const __half *)(px + r * xs * es)) : *(const float *)(px + r * xs * es);
                const float o = f(bn_apply(v, m[0], k[0], b[0], affine));
                if (half)
                    *(__half *)(py + r * ys * es) = __float2half_rn(o);
                else
                    *(float *)(py + r * ys * es) = o;
                continue;
            }
            // Lane q is channel c0 + q (q < PER: 8 halves or 4 floats).
            const uint4 in = *(const uint4 *)(px + r * xs * es);
            *(uint4 *)(py + r * ys * es) = map16(half, in, in, [&](int q, float v, float) {
                return f(bn_apply(v, m[q % PER], k[q % PER], b[q % PER], affine));
            });
        }
    });
}
} // namespace

extern "C" __global__ void gaio_dnn_batch_norm(gaio_ktensor x, gaio_ktensor y, gaio_ktensor scale, gaio_ktensor bias,
                                               gaio_ktensor mean, gaio_ktensor var, float epsilon, gaio_kpw_act act,
                                               int32_t affine) {
    if (bn_rows_form(x, y, scale, bias, mean, var)) {
        const bool two = y.ndim == 2, half = y.dtype == GAIO_KT_F16;
        const int64_t C = two ? y.shape[1] : y.shape[0], rows = two ? y.shape[0] : 1;
        const int64_t xs = two ? x.strides[0] : 0, ys = two ? y.strides[0] : 0, es = half ? 2 : 4;
        const float *ps = (const float *)(uintptr_t)scale.ptr, *pb = (const float *)(uintptr_t)bias.ptr;
        const float *pm = (const float *)(uintptr_t)mean.ptr, *pv = (const float *)(uintptr_t)var.ptr;
        const int64_t per = half ? 8 : 4, threads = (int64_t)gridDim.x * blockDim.x;
        const bool vec = C % per == 0 && ((x.ptr | y.ptr) & 15u) == 0 && (xs * es) % 16 == 0 && (ys * es) % 16 == 0;
        const int64_t groups = vec ? C / per : C;
        if (groups <= threads) { // else the element-wise path below: every thread must hold a group
            if (vec && half)
                bn_rows<8>(x, y, ps, pb, pm, pv, epsilon, affine != 0, rows, groups, xs, ys, act);
            else if (vec)
                bn_rows<4>(x, y, ps, pb, pm, pv, epsilon, affine != 0, rows, groups, xs, ys, act);
            else
                bn_rows<1>(x, y, ps, pb, pm, pv, epsilon, affine != 0, rows, groups, xs, ys, act);
            return;
        }
    }
    const int64_t n = gaio_kt_count(&y);
    const gaio_ktensor *ts[6] = {&y, &x, &scale, &bias, &mean, &var};
    for (int64_t i = first(); i < n; i += step()) {
        int64_t off[6];
        gaio_pw_offsets(ts, 6, y.shape, y.ndim, i, off);
        const float xv = load(x, off[1]);
        float v = affine ? __fadd_rn(__fmul_rn(xv, load(scale, off[2])), load(bias, off[3]))
                         : gaio_pw_batch_norm(xv, load(scale, off[2]), load(bias, off[3]), load(mean, off[4]),
                                              load(var, off[5]), epsilon);
        store(y, off[0], gaio_pw_unary(act.op, v, act.alpha, act.beta));
    }
}
