// CUDA kernels of the indexing ops (src/dnn/gather.c): gaio_dnn_gather (Gather and
// GatherElements), gaio_dnn_where and gaio_dnn_pad; host twins in src/dnn/cpu/gather.c,
// the index arithmetic in dnn/gather_math.h.
//
// Every tensor arrives over the output's dimensions, ordered by the output's strides
// (outermost first), so that consecutive threads write consecutive elements of y. A
// grid-stride loop over y's elements decodes each flat index into coordinates (32-bit
// divisions when the count allows: 64-bit ones are long instruction sequences) with
// the dimensions unrolled under a uniform guard, so that shapes and strides are read
// straight from the kernel parameters (a run-time index into a parameter would copy it
// to local memory in every thread). Elements move as unsigned integers of their size.
#include <stdint.h>

#include "dnn/gather_math.h"

namespace {

template <typename I> __device__ __forceinline__ I first() { return (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x; }
template <typename I> __device__ __forceinline__ I step() { return (I)blockDim.x * (I)gridDim.x; }

__device__ __forceinline__ int64_t count(const gaio_ktensor &t) {
    int64_t n = 1;
#pragma unroll
    for (int d = 0; d < GAIO_KT_MAX_NDIM; d++)
        if (d < t.ndim) n *= t.shape[d];
    return n;
}

// Whether 32-bit indices cover the loop: i + step must not wrap either.
__device__ __forceinline__ bool narrow(int64_t total) {
    return total + (int64_t)blockDim.x * gridDim.x <= (int64_t)UINT32_MAX;
}

__device__ __forceinline__ int64_t load_index(const gaio_ktensor &t, int64_t off) {
    if (t.dtype == GAIO_KG_S64) return reinterpret_cast<const int64_t *>(t.ptr)[off];
    return reinterpret_cast<const int32_t *>(t.ptr)[off];
}

template <typename T, typename I>
__device__ __forceinline__ void gather(const gaio_ktensor &x, const gaio_ktensor &ix, const gaio_ktensor &y,
                                       const gaio_kgather &g, I total) {
    const int n = y.ndim;
    const T *src = reinterpret_cast<const T *>(x.ptr);
    T *dst = reinterpret_cast<T *>(y.ptr);
    for (I i = first<I>(); i < total; i += step<I>()) {
        I r = i;
        int64_t xo = 0, io = 0, yo = 0;
#pragma unroll
        for (int d = GAIO_KT_MAX_NDIM - 1; d >= 0; d--) {
            if (d < n) {
                const I e = (I)y.shape[d], c = r % e;
                r /= e;
                xo += (int64_t)c * x.strides[d];
                io += (int64_t)c * ix.strides[d];
                yo += (int64_t)c * y.strides[d];
            }
        }
        const int64_t k = gaio_kg_index(load_index(ix, io), g.axis_len);
        dst[yo] = src[xo + k * g.axis_stride];
    }
}

template <typename T>
__device__ __forceinline__ void gather_any(const gaio_ktensor &x, const gaio_ktensor &ix, const gaio_ktensor &y,
                                           const gaio_kgather &g) {
    const int64_t total = count(y);
    if (narrow(total))
        gather<T, uint32_t>(x, ix, y, g, (uint32_t)total);
    else
        gather<T, uint64_t>(x, ix, y, g, (uint64_t)total);
}

template <typename T, typename I>
__device__ __forceinline__ void where(const gaio_ktensor &c, const gaio_ktensor &a, const gaio_ktensor &b,
                                      const gaio_ktensor &y, I total) {
    const int n = y.ndim;
    const uint8_t *cond = reinterpret_cast<const uint8_t *>(c.ptr);
    const T *pa = reinterpret_cast<const T *>(a.ptr), *pb = reinterpret_cast<const T *>(b.ptr);
    T *dst = reinterpret_cast<T *>(y.ptr);
    for (I i = first<I>(); i < total; i += step<I>()) {
        I r = i;
        int64_t co = 0, ao = 0, bo = 0, yo = 0;
#pragma unroll
        for (int d = GAIO_KT_MAX_NDIM - 1; d >= 0; d--) {
            if (d < n) {
                const I e = (I)y.shape[d], q = r % e;
                r /= e;
                co += (int64_t)q * c.strides[d];
                ao += (int64_t)q * a.strides[d];
                bo += (int64_t)q * b.strides[d];
                yo += (int64_t)q * y.strides[d];
            }
        }
        dst[yo] = cond[co] ? pa[ao] : pb[bo];
    }
}

template <typename T>
__device__ __forceinline__ void where_any(const gaio_ktensor &c, const gaio_ktensor &a, const gaio_ktensor &b,
                                          const gaio_ktensor &y) {
    const int64_t total = count(y);
    if (narrow(total))
        where<T, uint32_t>(c, a, b, y, (uint32_t)total);
    else
        where<T, uint64_t>(c, a, b, y, (uint64_t)total);
}

template <typename T, typename I>
__device__ __forceinline__ void pad(const gaio_ktensor &x, const gaio_ktensor &y, const gaio_kpad &p, I total) {
    const int n = y.ndim;
    const T *src = reinterpret_cast<const T *>(x.ptr);
    T *dst = reinterpret_cast<T *>(y.ptr);
    const T fill = (T)p.fill; // the value's bits: the low bytes
    for (I i = first<I>(); i < total; i += step<I>()) {
        I r = i;
        int64_t xo = 0, yo = 0;
        bool outside = false;
#pragma unroll
        for (int d = GAIO_KT_MAX_NDIM - 1; d >= 0; d--) {
            if (d < n) {
                const I e = (I)y.shape[d], c = r % e;
                r /= e;
                yo += (int64_t)c * y.strides[d];
                const int64_t s = gaio_kpad_source((int64_t)c, p.begin[d], x.shape[d], p.mode);
                outside = outside || s < 0;
                xo += s * x.strides[d];
            }
        }
        dst[yo] = outside ? fill : src[xo];
    }
}

template <typename T>
__device__ __forceinline__ void pad_any(const gaio_ktensor &x, const gaio_ktensor &y, const gaio_kpad &p) {
    const int64_t total = count(y);
    if (narrow(total))
        pad<T, uint32_t>(x, y, p, (uint32_t)total);
    else
        pad<T, uint64_t>(x, y, p, (uint64_t)total);
}

} // namespace

extern "C" __global__ void gaio_dnn_gather(gaio_ktensor x, gaio_ktensor ix, gaio_ktensor y, gaio_kgather g) {
    switch (gaio_kt_size(y.dtype)) {
    case 1: gather_any<uint8_t>(x, ix, y, g); break;
    case 2: gather_any<uint16_t>(x, ix, y, g); break;
    case 8: gather_any<uint64_t>(x, ix, y, g); break;
    default: gather_any<uint32_t>(x, ix, y, g); break;
    }
}

extern "C" __global__ void gaio_dnn_where(gaio_ktensor c, gaio_ktensor a, gaio_ktensor b, gaio_ktensor y) {
    switch (gaio_kt_size(y.dtype)) {
    case 1: where_any<uint8_t>(c, a, b, y); break;
    case 2: where_any<uint16_t>(c, a, b, y); break;
    case 8: where_any<uint64_t>(c, a, b, y); break;
    default: where_any<uint32_t>(c, a, b, y); break;
    }
}

extern "C" __global__ void gaio_dnn_pad(gaio_ktensor x, gaio_ktensor y, gaio_kpad p) {
    switch (gaio_kt_size(y.dtype)) {
    case 1: pad_any<uint8_t>(x, y, p); break;
    case 2: pad_any<uint16_t>(x, y, p); break;
    case 8: pad_any<uint64_t>(x, y, p); break;
    default: pad_any<uint32_t>(x, y, p); break;
    }
}
