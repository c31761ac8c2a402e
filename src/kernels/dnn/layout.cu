// CUDA kernel of the layout ops (src/dnn/layout.c): gaio_dnn_layout_copy(x, y), a
// copy between two views of one shape, y[i...] = x[i...] (host twin in
// src/dnn/cpu/layout.c). gaio_transpose passes x with its strides permuted into y's
// order; gaio_concat launches it once per input with y narrowed to that input's slab.
//
// A grid-stride loop over y's elements by flat index, decoding coordinates with y's
// shape (the op has merged contiguous dimensions, so a packed copy is one dimension
// and the decoding costs nothing). Consecutive threads write consecutive elements of
// y's last dimension: coalesced stores; loads are coalesced when x's last stride is
// 1 too, strided otherwise (a transpose that moves the last dimension). Indices are
// 32-bit when the copy is small enough, since 64-bit division is slow on the GPU.
#include <stdint.h>

#include "dnn/ktensor.h"

namespace {

template <typename T, typename I>
__device__ __forceinline__ void copy(const gaio_ktensor &x, const gaio_ktensor &y, I total) {
    const int n = y.ndim;
    const T *src = reinterpret_cast<const T *>(x.ptr);
    T *dst = reinterpret_cast<T *>(y.ptr);
    const I step = (I)blockDim.x * (I)gridDim.x;
    for (I i = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x; i < total; i += step) {
        I r = i;
        int64_t xo = 0, yo = 0;
#pragma unroll
        for (int d = GAIO_KT_MAX_NDIM - 1; d >= 0; d--) {
            if (d < n) { // unrolled with a uniform guard: shapes and strides read straight from the parameters
                const I extent = (I)y.shape[d];
                const I c = r % extent;
                r /= extent;
                xo += (int64_t)c * x.strides[d];
                yo += (int64_t)c * y.strides[d];
            }
        }
        dst[yo] = src[xo];
    }
}

template <typename T> __device__ __forceinline__ void copy_any(const gaio_ktensor &x, const gaio_ktensor &y) {
    int64_t total = 1;
#pragma unroll
    for (int d = 0; d < GAIO_KT_MAX_NDIM; d++) // no dynamic index into the parameters: it would copy them to the stack
        if (d < y.ndim) total *= y.shape[d];
    // The loop's i + step must not wrap either.
    const int64_t step = (int64_t)blockDim.x * gridDim.x;
    if (total + step <= (int64_t)UINT32_MAX)
        copy<T, uint32_t>(x, y, (uint32_t)total);
    else
        copy<T, uint64_t>(x, y, (uint64_t)total);
}

// Rows of 16-byte vectors: y and x of at most 2 dimensions (after the op's merging),
// the last one packed on both sides, rows and bases 16-byte aligned. This is every
// packed copy and every channel-axis concat of NHWC tensors whose channel counts are
// multiples of 16 bytes (DenseNet's, SqueezeNet's): a division per 16 bytes moved
// instead of one per element.
__device__ __forceinline__ bool vector_rows(const gaio_ktensor &x, const gaio_ktensor &y, int64_t es) {
    if (y.ndim > 2 || ((x.ptr | y.ptr) & 15u) != 0) return false;
    const int64_t last = y.ndim == 2 ? y.shape[1] : y.shape[0];
    const int64_t xs = y.ndim == 2 ? x.strides[1] : x.strides[0], ys = y.ndim == 2 ? y.strides[1] : y.strides[0];
    if (xs != 1 || ys != 1 || (last * es) % 16 != 0) return false;
    return y.ndim == 1 || ((x.strides[0] * es) % 16 == 0 && (y.strides[0] * es) % 16 == 0);
}

template <typename I>
__device__ __forceinline__ void copy_vectors(const uint4 *src, uint4 *dst, I rows, I len, int64_t xs, int64_t ys) {
    const I total = rows * len, step = (I)blockDim.x * (I)gridDim.x;
    for (I i = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x; i < total; i += step) {
        const I r = i / len, c = i - r * len;
        dst[(int64_t)r * ys + c] = src[(int64_t)r * xs + c];
    }
}

__device__ __forceinline__ void copy_rows_of_vectors(const gaio_ktensor &x, const gaio_ktensor &y, int64_t es) {
    const int64_t rows = y.ndim == 2 ? y.shape[0] : 1, len = (y.ndim == 2 ? y.shape[1] : y.shape[0]) * es / 16;
    const int64_t xs = y.ndim == 2 ? x.strides[0] * es / 16 : 0, ys = y.ndim == 2 ? y.strides[0] * es / 16 : 0;
    const uint4 *src = reinterpret_cast<const uint4 *>(x.ptr);
    uint4 *dst = reinterpret_cast<uint4 *>(y.ptr);
    if (rows * len + (int64_t)blockDim.x * gridDim.x <= (int64_t)UINT32_MAX)
        copy_vectors<uint32_t>(src, dst, (uint32_t)rows, (uint32_t)len, xs, ys);
    else
        copy_vectors<uint64_t>(src, dst, (uint64_t)rows, (uint64_t)len, xs, ys);
}

} // namespace

extern "C" __global__ void gaio_dnn_layout_copy(gaio_ktensor x, gaio_ktensor y) {
    const int64_t es = gaio_kt_size(y.dtype);
    if (vector_rows(x, y, es)) {
        copy_rows_of_vectors(x, y, es);
        return;
    }
    switch (gaio_kt_size(y.dtype)) { // gaio__copy_any also moves integers and bytes
    case 1: copy_any<uint8_t>(x, y); break;
    case 2: copy_any<uint16_t>(x, y); break;
    case 8: copy_any<uint64_t>(x, y); break;
    default: copy_any<uint32_t>(x, y); break;
    }
}
