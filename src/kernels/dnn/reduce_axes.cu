// CUDA kernels of the reductions over axes, arg-reductions, top-k and log-softmax
// (src/dnn/reduce_axes.c; host twins in src/dnn/cpu/reduce_axes.c), launched with
// 256-thread blocks on a 1-D grid that the kernels stride over.
//
// A reduction runs in the mode the front end picked (gaio_kreduce.mode): a thread per
// output (reduce_axes_math.h's gaio_kred_one, the host's arithmetic in the host's
// order) where x's closest dimension is kept, so that a warp's threads read
// neighbouring elements; a warp per output where it is reduced (lanes stride over the
// reduced elements, then shuffles combine them); a block per output for few long
// reductions (warps, then shared memory). Sums in the last two run in another order
// than the host's, so the backends agree to rounding there, not bit for bit; max, min
// and the arg-reductions agree exactly. Top-k runs a row per thread, a heap in the
// outputs' own memory (no scratch): its rows are few and short in the models that use
// it (a classifier's k best of 1000).
#include <cuda_fp16.h>
#include <stdint.h>

#include "dnn/reduce_axes_math.h"

namespace {

__device__ __forceinline__ int64_t global_thread() { return (int64_t)blockIdx.x * blockDim.x + threadIdx.x; }
__device__ __forceinline__ int64_t grid_threads() { return (int64_t)gridDim.x * blockDim.x; }

// Every lane gets the combination of all 32 lanes' v (the same value in each lane).
__device__ __forceinline__ float warp_combine(int32_t op, float v) {
    for (int o = 16; o > 0; o >>= 1) v = gaio_kred_combine(op, v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// The whole block's combination, in every thread; `part` holds a value per warp. All
// threads of the block must call it.
__device__ float block_combine(int32_t op, float v, float *part) {
    const int lane = (int)(threadIdx.x & 31u), warp = (int)(threadIdx.x >> 5), warps = (int)(blockDim.x >> 5);
    v = warp_combine(op, v);
    if (lane == 0) part[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = warp_combine(op, lane < warps ? part[lane] : gaio_kred_init(op));
        if (lane == 0) part[0] = v;
    }
    __syncthreads();
    v = part[0];
    __syncthreads(); // part is reused by the next call
    return v;
}

// One thread's share of output ox: reduced elements start, start + step, ...; pass 1
// (LOG_SUM_EXP's second) sums e^(x - m).
__device__ float partial(const gaio_kreduce &p, int64_t ox, int64_t start, int64_t step, int pass, float m) {
    float acc = pass ? 0.0f : gaio_kred_init(p.op);
    for (int64_t j = start; j < p.count; j += step) {
        const float v = gaio_kred_ld(p.x, p.xdtype, ox + gaio_kred_elem(&p, j));
        acc = pass ? acc + expf(v - m) : gaio_kred_step(p.op, acc, v);
    }
    return acc;
}

} // namespace

extern "C" __global__ void gaio_dnn_reduce(gaio_kreduce p) {
    const bool lse = p.op == GAIO_KRED_LOG_SUM_EXP;
    if (p.mode == GAIO_KRED_THREAD) {
        for (int64_t o = global_thread(); o < p.outputs; o += grid_threads()) {
            int64_t ox, oy;
            gaio_kred_output(&p, o, &ox, &oy);
            gaio_kred_st(p.y, p.ydtype, oy, gaio_kred_one(&p, ox));
        }
        return;
    }
    if (p.mode == GAIO_KRED_WARP) {
        const int lane = (int)(threadIdx.x & 31u);
        // The loop bound is the same for every lane of a warp, as the shuffles need.
        for (int64_t o = global_thread() >> 5; o < p.outputs; o += grid_threads() >> 5) {
            int64_t ox, oy;
            gaio_kred_output(&p, o, &ox, &oy);
            float acc = warp_combine(p.op, partial(p, ox, lane, 32, 0, 0.0f)), m = 0.0f;
            if (lse) {
                m = acc; // the same in every lane: the branch below is too
                acc = gaio_kred_lse_done(m) ? 0.0f : warp_combine(GAIO_KRED_SUM, partial(p, ox, lane, 32, 1, m));
            }
            if (lane == 0) gaio_kred_st(p.y, p.ydtype, oy, gaio_kred_final(p.op, acc, p.count, m));
        }
        return;
    }
    __shared__ float part[32];
    for (int64_t o = blockIdx.x; o < p.outputs; o += gridDim.x) {
        int64_t ox, oy;
        gaio_kred_output(&p, o, &ox, &oy);
        float acc = block_combine(p.op, partial(p, ox, threadIdx.x, blockDim.x, 0, 0.0f), part), m = 0.0f;
        if (lse) {
            m = acc;
            acc = gaio_kred_lse_done(m) ? 0.0f
                                        : block_combine(GAIO_KRED_SUM, partial(p, ox, threadIdx.x, blockDim.x, 1, m), part);
        }
        if (threadIdx.x == 0) gaio_kred_st(p.y, p.ydtype, oy, gaio_kred_final(p.op, acc, p.count, m));
    }
}

extern "C" __global__ void gaio_dnn_select(gaio_kselect p) {
    if (p.topk || p.mode == GAIO_KRED_THREAD) {
        for (int64_t r = global_thread(); r < p.rows; r += grid_threads()) {
            int64_t ox, ov, oi;
            gaio_ksel_row(&p, r, &ox, &ov, &oi);
            if (p.topk)
                gaio_ksel_topk(&p, ox, ov, oi);
            else
                gaio_ksel_put_index(p.indices, oi, gaio_ksel_arg(&p, ox));
        }
        return;
    }
    // A warp per row: each lane's best of its elements, then the best of the lanes'.
    // gaio_ksel_before orders (value, index) pairs totally, so the result is the
    // host's whatever the order of the combination.
    const int lane = (int)(threadIdx.x & 31u);
    for (int64_t r = global_thread() >> 5; r < p.rows; r += grid_threads() >> 5) {
        int64_t ox, ov, oi;
        gaio_ksel_row(&p, r, &ox, &ov, &oi);
        float best = 0.0f;
        long long at = -1;
        for (int64_t i = lane; i < p.len; i += 32) {
            const float v = gaio_kred_ld(p.x, p.xdtype, ox + i * p.xs);
            if (at < 0 || gaio_ksel_before(v, i, best, at, p.largest, p.select_last)) best = v, at = i;
        }
        for (int o = 16; o > 0; o >>= 1) {
            const float w = __shfl_xor_sync(0xffffffffu, best, o);
            const long long j = __shfl_xor_sync(0xffffffffu, at, o);
            if (j >= 0 && (at < 0 || gaio_ksel_before(w, j, best, at, p.largest, p.select_last))) best = w, at = j;
        }
        if (lane == 0) gaio_ksel_put_index(p.indices, oi, at);
    }
}

// gaio_dnn_softmax's scheme (kernels/dnn/reduce.cu): a warp per row.
extern "C" __global__ void gaio_dnn_log_softmax(gaio_ktensor x, gaio_ktensor y, int32_t axis) {
    const int lane = (int)(threadIdx.x & 31u);
    const int64_t len = gaio_kt_extent(&x, axis), sx = gaio_kt_stride(&x, axis), sy = gaio_kt_stride(&y, axis);
    const int64_t rows = gaio_kt_count(&x) / len;
    for (int64_t r = global_thread() >> 5; r < rows; r += grid_threads() >> 5) {
        int64_t ox, oy;
        gaio_kt_row(&x, &y, axis, r, &ox, &oy);
        float m = gaio_kt_neg_inf();
        for (int64_t i = lane; i < len; i += 32) m = gaio_kt_max(m, gaio_kt_get(&x, ox + i * sx));
        m = warp_combine(GAIO_KRED_MAX, m);
        float s = 0.0f;
        for (int64_t i = lane; i < len; i += 32) s += expf(gaio_kt_get(&x, ox + i * sx) - m);
        s = warp_combine(GAIO_KRED_SUM, s);
        const float ls = logf(s);
        // (x - max) first, as the host does. Each lane writes only the elements it read,
        // after the whole warp has read the row (the shuffles order it): y may be x itself.
        for (int64_t i = lane; i < len; i += 32) gaio_kt_put(&y, oy + i * sy, (gaio_kt_get(&x, ox + i * sx) - m) - ls);
    }
}
