/* Tensors as DLPack views and back: the same description (buffer, offset, dtype,
 * logical shape, element strides) under two names, checked on the way. */
#include <string.h>

#include "dlpack/dlpack_internal.h"
#include "dnn/dnn_internal.h"

gaio_status gaio_tensor_from_dlpack_view(const gaio_dlpack_view *view, gaio_tensor *t) {
    const char *fn = __func__;
    if (!t) return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "t is NULL");
    memset(t, 0, sizeof *t);
    gaio_status st = gaio__dlpack_view_check(fn, view, NULL);
    if (st != GAIO_OK) return st;
    if (view->ndim > GAIO_TENSOR_MAX_NDIM)
        return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn, "view has %d dimensions: tensors have at most %d",
                          (int)view->ndim, GAIO_TENSOR_MAX_NDIM);
    gaio_tensor r;
    memset(&r, 0, sizeof r);
    r.buffer = view->buffer, r.offset = view->offset, r.dtype = view->dtype, r.ndim = view->ndim;
    r.layout = GAIO_TENSOR_ROW_MAJOR;
    bool all_zero = true;
    for (int32_t i = 0; i < view->ndim; i++) {
        r.shape[i] = view->shape[i], r.strides[i] = view->strides[i];
        if (r.strides[i]) all_zero = false;
    }
    /* All-zero strides would read as "packed" to gaio_tensor: a view that repeats one
     * element everywhere keeps that meaning through a stride of 0 on dimensions of one
     * entry, which changes nothing it addresses. */
    if (all_zero)
        for (int32_t i = 0; i < view->ndim; i++)
            if (r.shape[i] == 1) {
                r.strides[i] = 1;
                all_zero = false;
                break;
            }
    if (all_zero)
        return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn,
                          "view repeats one element along every dimension (all strides 0): a tensor reads all-zero "
                          "strides as packed");
    if ((st = gaio__tensor_check(fn, "view", &r, NULL, NULL)) != GAIO_OK) return st;
    *t = r;
    return GAIO_OK;
}

gaio_status gaio_tensor_to_dlpack_view(const gaio_tensor *t, gaio_dlpack_view *view) {
    const char *fn = __func__;
    if (!view) return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "view is NULL");
    memset(view, 0, sizeof *view);
    gaio_tensor r;
    gaio_status st = gaio__tensor_check(fn, "t", t, &r, NULL);
    if (st != GAIO_OK) return st;
    view->buffer = r.buffer, view->offset = r.offset, view->dtype = r.dtype, view->ndim = r.ndim;
    for (int32_t i = 0; i < r.ndim; i++) view->shape[i] = r.shape[i], view->strides[i] = r.strides[i];
    return GAIO_OK;
}
