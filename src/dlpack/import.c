/* Import: a DLPack tensor wrapped, without a copy, in a gaio buffer whose last
 * reference runs the producer's deleter, or (deferred) completes a future after
 * which the caller runs it. */
#include <stdio.h>

#include "core/object.h"

#include "dlpack/dlpack_internal.h"
#include "gaio/context.h"
#include "gaio/device.h"

/* The memory kind a tensor on dev becomes in a buffer of ctx. */
static gaio_status kind_for(const char *fn, gaio_context *ctx, DLDevice dev, gaio_mem_kind *kind) {
    int device;
    gaio_device_props props;
    gaio_status st = gaio_context_device(ctx, &device);
    if (st == GAIO_OK) st = gaio_device_get_props(device, &props);
    if (st != GAIO_OK) return st;
    switch ((int32_t)dev.device_type) {
    case kDLCPU:
        /* On the host device CPU memory is the device's own, which its ops and the
         * host both reach: MANAGED there (HOST would keep it from every op). */
        *kind = props.kind == GAIO_DEVICE_HOST ? GAIO_MEM_MANAGED : GAIO_MEM_HOST;
        return GAIO_OK;
    case kDLCUDAHost: *kind = GAIO_MEM_PINNED; return GAIO_OK;
    case kDLCUDAManaged: *kind = GAIO_MEM_MANAGED; return GAIO_OK;
    case kDLCUDA:
        if (props.kind != GAIO_DEVICE_CUDA)
            return gaio__fail(GAIO_ERR_INVALID_ARG, fn,
                              "tensor is on CUDA device %d but ctx is of gaio device %d (%s); import it into a "
                              "context of that GPU",
                              (int)dev.device_id, device, props.name);
        if (dev.device_id != props.ordinal)
            return gaio__fail(GAIO_ERR_INVALID_ARG, fn,
                              "tensor is on CUDA device %d but ctx is of CUDA device %d (gaio device %d)",
                              (int)dev.device_id, props.ordinal, device);
        *kind = GAIO_MEM_DEVICE;
        return GAIO_OK;
    }
    return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn,
                      "tensor's device_type %d is not one gaio reads (kDLCPU 1, kDLCUDA 2, kDLCUDAHost 3, "
                      "kDLCUDAManaged 13)",
                      (int)dev.device_type);
}

/* Checks t and fills view (except buffer) and the bytes to wrap from t's first element. */
static gaio_status describe(const char *fn, gaio_context *ctx, const DLTensor *t, gaio_mem_kind *kind,
                            gaio_dlpack_view *view, size_t *bytes) {
    gaio_status st = kind_for(fn, ctx, t->device, kind);
    if (st != GAIO_OK) return st;
    if (!t->data) return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "tensor's data is NULL");
    view->dtype = gaio__dlpack_dtype_from_dl(t->dtype);
    if (!view->dtype)
        return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn,
                          "tensor's dtype (code %u, bits %u, lanes %u) is not one gaio has: lanes 1 and uint8, "
                          "uint16, int16, float16 or float32",
                          t->dtype.code, t->dtype.bits, t->dtype.lanes);
    if (t->ndim < 1 || t->ndim > GAIO_DLPACK_MAX_NDIM)
        return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn, "tensor's ndim is %d: gaio takes 1 to %d dimensions",
                          (int)t->ndim, GAIO_DLPACK_MAX_NDIM);
    if (!t->shape) return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "tensor's shape is NULL");
    view->ndim = t->ndim;
    for (int32_t i = t->ndim - 1; i >= 0; i--) {
        int64_t n = t->shape[i];
        if (n < 0) return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "tensor's shape[%d] is %lld", (int)i, (long long)n);
        if (n == 0)
            return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn,
                              "tensor's shape[%d] is 0: an empty tensor has no memory for a gaio buffer", (int)i);
        view->shape[i] = n;
        if (t->strides) {
            if (t->strides[i] < 0)
                return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn, "tensor's strides[%d] is %lld: gaio takes strides >= 0",
                                  (int)i, (long long)t->strides[i]);
            view->strides[i] = t->strides[i];
        } else if (i == t->ndim - 1) {
            view->strides[i] = 1;
        } else if (__builtin_mul_overflow(view->strides[i + 1], view->shape[i + 1], &view->strides[i])) {
            return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "tensor's shape overflows 64 bits");
        }
    }
    if (!gaio__dlpack_extent(view->ndim, view->shape, view->strides, gaio_dtype_size(view->dtype), bytes))
        return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "tensor's shape and strides span more bytes than an address holds");
    return GAIO_OK;
}

static void versioned_done(void *ptr, void *user) {
    (void)ptr;
    DLManagedTensorVersioned *m = user;
    if (m->deleter) m->deleter(m);
}

static void legacy_done(void *ptr, void *user) {
    (void)ptr;
    DLManagedTensor *m = user;
    if (m->deleter) m->deleter(m);
}

static gaio_status import(const char *fn, gaio_context *ctx, const DLTensor *t, gaio_deleter done, void *tensor,
                          int32_t read_only, gaio_dlpack_view *view) {
    gaio_dlpack_view v = {0};
    gaio_mem_kind kind = GAIO_MEM_HOST;
    size_t bytes;
    gaio_status st = describe(fn, ctx, t, &kind, &v, &bytes);
    if (st != GAIO_OK) return st;
    v.read_only = read_only;
    if (t->byte_offset > UINTPTR_MAX - (uintptr_t)t->data)
        return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "tensor's data %p + byte_offset %llu overflows the address space",
                          t->data, (unsigned long long)t->byte_offset);
    void *first = (char *)t->data + t->byte_offset;
    st = gaio_buffer_wrap(ctx, kind, first, bytes, done, tensor, &v.buffer);
    if (st != GAIO_OK) {
        char why[GAIO_MSG_MAX]; /* wrap's message (the driver's view of the memory) */
        snprintf(why, sizeof why, "%s", gaio_last_error());
        return gaio__fail(st, fn, "cannot wrap the tensor's %zu bytes at %p (%s)", bytes, first, why);
    }
    *view = v;
    return GAIO_OK;
}

/* Deferred: the buffer's last reference completes the caller's future instead. */
static void released_done(void *ptr, void *user) {
    (void)ptr;
    gaio_future *f = user;
    gaio__future_complete(f, GAIO_OK, NULL);
    gaio__future_unref(f);
}

/* Checks the common arguments; for a versioned tensor also its major version. */
static gaio_status start(const char *fn, gaio_context *ctx, const void *tensor, const DLPackVersion *version,
                         gaio_dlpack_view *view) {
    if (!view) return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "view is NULL");
    *view = (gaio_dlpack_view){0};
    if (!ctx) return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "ctx is NULL");
    if (!tensor) return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "tensor is NULL");
    /* The spec: with another major version only the deleter may be touched. */
    if (version && version->major != GAIO_DLPACK_MAJOR)
        return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn,
                          "tensor is DLPack %u.%u: gaio reads major version %d (the caller still owns it and must "
                          "call its deleter)",
                          version->major, version->minor, GAIO_DLPACK_MAJOR);
    return GAIO_OK;
}

static gaio_status import_deferred(const char *fn, gaio_context *ctx, const DLTensor *t, int32_t read_only,
                                   gaio_dlpack_view *view, gaio_future **released) {
    gaio_future *f = gaio__future_new();
    if (!f) return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of memory for the released future");
    gaio_status st = import(fn, ctx, t, released_done, f, read_only, view);
    if (st != GAIO_OK) {
        gaio__future_unref(f);
        return st;
    }
    gaio__future_ref(f); /* the caller's; the buffer's deleter owns the first */
    *released = f;
    return GAIO_OK;
}

gaio_status gaio_dlpack_import(gaio_context *ctx, DLManagedTensorVersioned *tensor, gaio_dlpack_view *view) {
    gaio_status st = start(__func__, ctx, tensor, tensor ? &tensor->version : NULL, view);
    if (st != GAIO_OK) return st;
    return import(__func__, ctx, &tensor->dl_tensor, versioned_done, tensor,
                  (tensor->flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0, view);
}

gaio_status gaio_dlpack_import_legacy(gaio_context *ctx, DLManagedTensor *tensor, gaio_dlpack_view *view) {
    gaio_status st = start(__func__, ctx, tensor, NULL, view);
    if (st != GAIO_OK) return st;
    return import(__func__, ctx, &tensor->dl_tensor, legacy_done, tensor, 0, view);
}

gaio_status gaio_dlpack_import_deferred(gaio_context *ctx, DLManagedTensorVersioned *tensor, gaio_dlpack_view *view,
                                        gaio_future **released) {
    GAIO_REQUIRE_PTR(released);
    *released = NULL;
    gaio_status st = start(__func__, ctx, tensor, tensor ? &tensor->version : NULL, view);
    if (st != GAIO_OK) return st;
    return import_deferred(__func__, ctx, &tensor->dl_tensor, (tensor->flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0,
                           view, released);
}

gaio_status gaio_dlpack_import_legacy_deferred(gaio_context *ctx, DLManagedTensor *tensor, gaio_dlpack_view *view,
                                               gaio_future **released) {
    GAIO_REQUIRE_PTR(released);
    *released = NULL;
    gaio_status st = start(__func__, ctx, tensor, NULL, view);
    if (st != GAIO_OK) return st;
    return import_deferred(__func__, ctx, &tensor->dl_tensor, 0, view, released);
}
