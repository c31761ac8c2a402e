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

// Rows of 16-byte vectors: the last dimension (after the op's merging) packed on both
// sides, a whole number of 16-byte vectors long, every other stride and both bases
// 16-byte aligned. This is every packed copy, every channel-axis concat of NHWC
// tensors whose channel counts are multiples of 16 bytes (DenseNet's, SqueezeNet's),
// and every transpose that keeps the last dimension in place, as attention's moves
// between [batch, tokens, heads * dim] and [batch * heads, tokens, dim] do (ViT's,
// Swin's: eight a layer). Coordinates are decoded once per 16 bytes moved, not once per
// element: an element a thread had put those copies at 4-6x their bytes' time.
__device__ __forceinline__ bool vector_rows(const gaio_ktensor &x, const gaio_ktensor &y, int64_t es) {
    if (((x.ptr | y.ptr) & 15u) != 0) return false;
    const int32_t last = y.ndim - 1;
    if (gaio_kt_stride(&x, last) != 1 || gaio_kt_stride(&y, last) != 1 || (gaio_kt_extent(&y, last) * es) % 16 != 0)
        return false;
    bool aligned = true;
#pragma unroll
    for (int d = 0; d < GAIO_KT_MAX_NDIM - 1; d++)
        if (d < last) aligned = aligned && (x.strides[d] * es) % 16 == 0 && (y.strides[d] * es) % 16 == 0;
    return aligned;
}

template <typename I>
__device__ __forceinline__ void copy_vectors(const gaio_ktensor &x, const gaio_ktensor &y, I rows, I len, int64_t es) {
    const uint4 *src = reinterpret_cast<const uint4 *>(x.ptr);
    uint4 *dst = reinterpret_cast<uint4 *>(y.ptr);
    const int32_t last = y.ndim - 1;
    const I total = rows * len, step = (I)blockDim.x * (I)gridDim.x;
    for (I i = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x; i < total; i += step) {
        I r = i / len;
        const I c = i - r * len;
        int64_t xo = 0, yo = 0; // in elements
#pragma unroll
        for (int d = GAIO_KT_MAX_NDIM - 2; d >= 0; d--) {
            if (d < last) {
                const I extent = (I)y.shape[d];
                const I k = r % extent;
                r /= extent;
                xo += (int64_t)k * x.strides[d];
                yo += (int64_t)k * y.strides[d];
            }
        }
        dst[yo * es / 16 + c] = __ldg(src + xo * es / 16 + c);
    }
}

__device__ __forceinline__ void copy_rows_of_vectors(const gaio_ktensor &x, const gaio_ktensor &y, int64_t es) {
    const int32_t last = y.ndim - 1;
    const int64_t len = gaio_kt_extent(&y, last) * es / 16;
    int64_t rows = 1;
#pragma unroll
    for (int d = 0; d < GAIO_KT_MAX_NDIM - 1; d++)
        if (d < last) rows *= y.shape[d];
    if (rows * len + (int64_t)blockDim.x * gridDim.x <= (int64_t)UINT32_MAX)
        copy_vectors<uint32_t>(x, y, (uint32_t)rows, (uint32_t)len, es);
    else
        copy_vectors<uint64_t>(x, y, (uint64_t)rows, (uint64_t)len, es);
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
