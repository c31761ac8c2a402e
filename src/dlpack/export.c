/* Export: a gaio view as a DLPack tensor that keeps the buffer alive. */
#include <stdlib.h>

#include "dlpack/dlpack_internal.h"
#include "gaio/device.h"

/* The layout every DLPack 1.x consumer reads (LP64). */
_Static_assert(sizeof(DLTensor) == 48 && offsetof(DLTensor, byte_offset) == 40, "DLTensor layout");
_Static_assert(offsetof(DLManagedTensorVersioned, flags) == 24 && offsetof(DLManagedTensorVersioned, dl_tensor) == 32,
               "DLManagedTensorVersioned layout");
_Static_assert(offsetof(DLManagedTensor, deleter) == 56, "DLManagedTensor layout");

/* One allocation per tensor: the struct first (so the deleter's argument is the
 * allocation), then the arrays its shape and strides point into. */
typedef struct versioned_box {
    DLManagedTensorVersioned m;
    int64_t shape[GAIO_DLPACK_MAX_NDIM], strides[GAIO_DLPACK_MAX_NDIM];
} versioned_box;

typedef struct legacy_box {
    DLManagedTensor m;
    int64_t shape[GAIO_DLPACK_MAX_NDIM], strides[GAIO_DLPACK_MAX_NDIM];
} legacy_box;

static void versioned_deleter(DLManagedTensorVersioned *self) {
    if (!self) return;
    gaio_buffer_release(self->manager_ctx);
    free(self);
}

static void legacy_deleter(DLManagedTensor *self) {
    if (!self) return;
    gaio_buffer_release(self->manager_ctx);
    free(self);
}

static gaio_status device_of(gaio_buffer *buf, DLDevice *dev) {
    int device;
    gaio_mem_kind kind;
    gaio_device_props props;
    gaio_status st = gaio_buffer_device(buf, &device);
    if (st == GAIO_OK) st = gaio_buffer_kind(buf, &kind);
    if (st == GAIO_OK) st = gaio_device_get_props(device, &props);
    if (st != GAIO_OK) return st; /* not for a live buffer */
    dev->device_id = 0;
    dev->device_type = kDLCPU; /* every kind of the host device, and pageable HOST memory anywhere */
    if (props.kind == GAIO_DEVICE_CUDA) {
        switch (kind) {
        case GAIO_MEM_DEVICE:
            dev->device_type = kDLCUDA;
            dev->device_id = props.ordinal;
            break;
        case GAIO_MEM_PINNED: dev->device_type = kDLCUDAHost; break;
        case GAIO_MEM_MANAGED: dev->device_type = kDLCUDAManaged; break;
        case GAIO_MEM_HOST: break;
        }
    }
    return GAIO_OK;
}

/* Fills t (whose shape and strides point at the box's arrays) and retains the buffer. */
static gaio_status fill(const char *fn, const gaio_dlpack_view *view, DLTensor *t) {
    gaio_status st = gaio__dlpack_view_check(fn, view, NULL);
    if (st != GAIO_OK) return st;
    st = device_of(view->buffer, &t->device);
    if (st != GAIO_OK) return st;
    void *base;
    st = gaio_buffer_device_ptr(view->buffer, &base);
    if (st != GAIO_OK) return st;
    t->data = (char *)base + view->offset;
    t->byte_offset = 0;
    t->ndim = view->ndim;
    t->dtype = gaio__dlpack_dtype_to_dl(view->dtype);
    for (int32_t i = 0; i < view->ndim; i++) {
        t->shape[i] = view->shape[i];
        t->strides[i] = view->strides[i];
    }
    return gaio_buffer_retain(view->buffer);
}

gaio_status gaio_dlpack_export(const gaio_dlpack_view *view, DLManagedTensorVersioned **out) {
    GAIO_REQUIRE_PTR(out);
    *out = NULL;
    versioned_box *b = calloc(1, sizeof *b);
    if (!b) return GAIO_FAIL(GAIO_ERR_NO_MEMORY, "out of host memory for the tensor");
    b->m.dl_tensor.shape = b->shape;
    b->m.dl_tensor.strides = b->strides;
    gaio_status st = fill(__func__, view, &b->m.dl_tensor);
    if (st != GAIO_OK) {
        free(b);
        return st;
    }
    b->m.version.major = GAIO_DLPACK_MAJOR;
    b->m.version.minor = GAIO_DLPACK_MINOR;
    b->m.manager_ctx = view->buffer;
    b->m.deleter = versioned_deleter;
    b->m.flags = view->read_only ? DLPACK_FLAG_BITMASK_READ_ONLY : 0;
    *out = &b->m;
    return GAIO_OK;
}

gaio_status gaio_dlpack_export_legacy(const gaio_dlpack_view *view, DLManagedTensor **out) {
    GAIO_REQUIRE_PTR(out);
    *out = NULL;
    legacy_box *b = calloc(1, sizeof *b);
    if (!b) return GAIO_FAIL(GAIO_ERR_NO_MEMORY, "out of host memory for the tensor");
    b->m.dl_tensor.shape = b->shape;
    b->m.dl_tensor.strides = b->strides;
    gaio_status st = fill(__func__, view, &b->m.dl_tensor);
    if (st != GAIO_OK) {
        free(b);
        return st;
    }
    b->m.manager_ctx = view->buffer;
    b->m.deleter = legacy_deleter;
    *out = &b->m;
    return GAIO_OK;
}
