/* What the DLPack files share: view checks and the dtype mapping. */
#ifndef GAIO_DLPACK_INTERNAL_H
#define GAIO_DLPACK_INTERNAL_H

#include "core/error.h"
#include "gaio/buffer.h"
#include "gaio/dlpack.h"

/* Checks a view on its own (dtype, ndim, shape, strides, that its buffer holds
 * every element) for the public function fn. `*bytes` receives the bytes from
 * the first element to one past the last. */
gaio_status gaio__dlpack_view_check(const char *fn, const gaio_dlpack_view *view, size_t *bytes);

/* Bytes from element [0, ...] to one past the last element: the product of
 * (shape - 1) * stride summed, plus one, times esize. Shape >= 1 and strides >= 0
 * must hold already. False on overflow. */
bool gaio__dlpack_extent(int32_t ndim, const int64_t *shape, const int64_t *strides, size_t esize, size_t *bytes);

DLDataType gaio__dlpack_dtype_to_dl(gaio_dtype dtype);
/* 0 when gaio has no such dtype. */
gaio_dtype gaio__dlpack_dtype_from_dl(DLDataType dt);

#endif
