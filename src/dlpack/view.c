/* The view descriptor: making and checking it, and the dtype mapping. */
#include "core/fail.h"
#include "dlpack/dlpack_internal.h"

gaio_dlpack_view gaio_dlpack_view_make(gaio_buffer *buf, size_t offset, gaio_dtype dtype, int32_t ndim,
                                       const int64_t *shape) {
    gaio_dlpack_view v = {0};
    v.buffer = buf;
    v.offset = offset;
    v.dtype = dtype;
    v.ndim = ndim;
    if (!shape || ndim < 1 || ndim > GAIO_DLPACK_MAX_NDIM) return v; /* export refuses it */
    int64_t stride = 1;
    for (int32_t i = ndim - 1; i >= 0; i--) {
        v.shape[i] = shape[i];
        v.strides[i] = stride;
        /* a bad shape is reported by the check; an overflow makes a span it refuses */
        if (shape[i] > 0 && __builtin_mul_overflow(stride, shape[i], &stride)) stride = INT64_MAX;
    }
    return v;
}

bool gaio__dlpack_extent(int32_t ndim, const int64_t *shape, const int64_t *strides, size_t esize, size_t *bytes) {
    uint64_t last = 0; /* the largest element index */
    for (int32_t i = 0; i < ndim; i++) {
        uint64_t step;
        if (__builtin_mul_overflow((uint64_t)(shape[i] - 1), (uint64_t)strides[i], &step)) return false;
        if (__builtin_add_overflow(last, step, &last)) return false;
    }
    uint64_t n;
    if (__builtin_add_overflow(last, 1u, &n) || __builtin_mul_overflow(n, (uint64_t)esize, &n) || n > SIZE_MAX)
        return false;
    *bytes = (size_t)n;
    return true;
}

gaio_status gaio__dlpack_view_check(const char *fn, const gaio_dlpack_view *view, size_t *bytes) {
    if (!view) return BAD("view is NULL");
    if (!view->buffer) return BAD("view->buffer is NULL");
    size_t e = gaio_dtype_size(view->dtype);
    if (!e) return BAD("view->dtype %d is not a gaio_dtype (U8, U16, S16, F16, F32)", (int)view->dtype);
    if (view->ndim < 1 || view->ndim > GAIO_DLPACK_MAX_NDIM)
        return BAD("view->ndim is %d: must be in [1, %d]", (int)view->ndim, GAIO_DLPACK_MAX_NDIM);
    for (int32_t i = 0; i < view->ndim; i++) {
        if (view->shape[i] < 1) return BAD("view->shape[%d] is %lld: must be >= 1", (int)i, (long long)view->shape[i]);
        if (view->strides[i] < 0)
            return BAD("view->strides[%d] is %lld: gaio takes strides >= 0", (int)i, (long long)view->strides[i]);
    }
    size_t span, size = 0;
    if (!gaio__dlpack_extent(view->ndim, view->shape, view->strides, e, &span))
        return BAD("view's shape and strides span more bytes than an address holds");
    gaio_status st = gaio_buffer_size(view->buffer, &size);
    if (st != GAIO_OK) return st;
    if (!gaio__range_ok(view->offset, span, size))
        return BAD("view spans %zu bytes from offset %zu but its buffer holds %zu", span, view->offset, size);
    if (bytes) *bytes = span;
    return GAIO_OK;
}

DLDataType gaio__dlpack_dtype_to_dl(gaio_dtype dtype) {
    DLDataType dt = {0, (uint8_t)(gaio_dtype_size(dtype) * 8), 1};
    switch (dtype) {
    case GAIO_DTYPE_U8:
    case GAIO_DTYPE_U16: dt.code = kDLUInt; break;
    case GAIO_DTYPE_S16:
    case GAIO_DTYPE_S32:
    case GAIO_DTYPE_S64: dt.code = kDLInt; break;
    case GAIO_DTYPE_F16:
    case GAIO_DTYPE_F32: dt.code = kDLFloat; break;
    case GAIO_DTYPE_BF16: dt.code = kDLBfloat; break;
    }
    return dt;
}

gaio_dtype gaio__dlpack_dtype_from_dl(DLDataType dt) {
    if (dt.lanes != 1) return (gaio_dtype)0;
    switch (dt.code) {
    case kDLUInt: return dt.bits == 8 ? GAIO_DTYPE_U8 : dt.bits == 16 ? GAIO_DTYPE_U16 : (gaio_dtype)0;
    case kDLInt:
        return dt.bits == 16   ? GAIO_DTYPE_S16
               : dt.bits == 32 ? GAIO_DTYPE_S32
               : dt.bits == 64 ? GAIO_DTYPE_S64
                               : (gaio_dtype)0;
    case kDLFloat: return dt.bits == 16 ? GAIO_DTYPE_F16 : dt.bits == 32 ? GAIO_DTYPE_F32 : (gaio_dtype)0;
    case kDLBfloat: return dt.bits == 16 ? GAIO_DTYPE_BF16 : (gaio_dtype)0;
    }
    return (gaio_dtype)0;
}
