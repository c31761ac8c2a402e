/* gaio — DLPack: zero-copy exchange of tensors with other libraries.
 *
 * The DLPack 1.x structs below follow the public specification
 * (https://dmlc.github.io/dlpack/latest/c_api.html) and are ABI-compatible with
 * its dlpack.h. A program that includes the official dlpack.h before this header
 * gets the official definitions; one that includes it after gets gaio's (this
 * header defines the official include guard, DLPACK_DLPACK_H_, since C forbids
 * defining the anonymous structs twice).
 *
 * A gaio_dlpack_view is the tensor a DLPack tensor describes: a buffer, a byte
 * offset, a dtype and up to 8 dimensions with strides in elements. It is a value
 * struct like gaio_image; a view does not own its buffer unless the call that
 * filled it says so.
 *
 * Ownership: an export retains the view's buffer; the consumer's call of the
 * deleter releases it (and frees the struct). An import that succeeds owns the
 * producer's tensor: the producer's deleter runs exactly once, when gaio's last
 * reference to the wrapped buffer goes (the caller's, or that of the last op in
 * flight that uses it). An import that fails leaves the tensor to the caller,
 * who must still call its deleter.
 *
 * Streams are not part of DLPack's C structs: the producer and consumer order
 * their work themselves (with an event) before the tensor changes hands. */
#ifndef GAIO_DLPACK_H
#define GAIO_DLPACK_H

#include <stddef.h>
#include <stdint.h>

#include "gaio/image.h"
#include "gaio/status.h"
#include "gaio/types.h"

/* ---- DLPack 1.1 (written from the specification) ------------------------ */
#if !defined(DLPACK_DLPACK_H_) && !defined(DLPACK_MAJOR_VERSION)
#define DLPACK_DLPACK_H_

#ifdef __cplusplus
#define DLPACK_EXTERN_C extern "C"
#else
#define DLPACK_EXTERN_C
#endif
#define DLPACK_MAJOR_VERSION 1
#define DLPACK_MINOR_VERSION 1
#define DLPACK_DLL

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    uint32_t major;
    uint32_t minor;
} DLPackVersion;

#ifdef __cplusplus
typedef enum : int32_t {
#else
typedef enum {
#endif
    kDLCPU = 1,
    kDLCUDA = 2,
    kDLCUDAHost = 3, /* page-locked host memory (cudaMallocHost) */
    kDLOpenCL = 4,
    kDLVulkan = 7,
    kDLMetal = 8,
    kDLVPI = 9,
    kDLROCM = 10,
    kDLROCMHost = 11,
    kDLExtDev = 12,
    kDLCUDAManaged = 13, /* cudaMallocManaged */
    kDLOneAPI = 14,
    kDLWebGPU = 15,
    kDLHexagon = 16,
    kDLMAIA = 17,
    kDLTrn = 18
} DLDeviceType;

typedef struct {
    DLDeviceType device_type;
    int32_t device_id; /* 0 for CPU, pinned and managed memory */
} DLDevice;

typedef enum {
    kDLInt = 0U,
    kDLUInt = 1U,
    kDLFloat = 2U,
    kDLOpaqueHandle = 3U,
    kDLBfloat = 4U,
    kDLComplex = 5U,
    kDLBool = 6U,
    kDLFloat8_e3m4 = 7U,
    kDLFloat8_e4m3 = 8U,
    kDLFloat8_e4m3b11fnuz = 9U,
    kDLFloat8_e4m3fn = 10U,
    kDLFloat8_e4m3fnuz = 11U,
    kDLFloat8_e5m2 = 12U,
    kDLFloat8_e5m2fnuz = 13U,
    kDLFloat8_e8m0fnu = 14U,
    kDLFloat6_e2m3fn = 15U,
    kDLFloat6_e3m2fn = 16U,
    kDLFloat4_e2m1fn = 17U
} DLDataTypeCode;

typedef struct {
    uint8_t code; /* a DLDataTypeCode */
    uint8_t bits;
    uint16_t lanes;
} DLDataType;

typedef struct {
    void *data; /* the device's address; element [0, ...] is at data + byte_offset */
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t *shape;
    int64_t *strides; /* in elements; NULL: compact row-major */
    uint64_t byte_offset;
} DLTensor;

/* Legacy (before DLPack 1.0): no version, no flags. */
typedef struct DLManagedTensor {
    DLTensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;

#define DLPACK_FLAG_BITMASK_READ_ONLY (1UL << 0UL)
#define DLPACK_FLAG_BITMASK_IS_COPIED (1UL << 1UL)
#define DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED (1UL << 2UL)

typedef struct DLManagedTensorVersioned {
    DLPackVersion version;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensorVersioned *self);
    uint64_t flags;
    DLTensor dl_tensor;
} DLManagedTensorVersioned;

#ifdef __cplusplus
}
#endif
#endif /* DLPack */

/* ---- gaio's side ---------------------------------------------------------- */

#ifdef __cplusplus
extern "C" {
#endif

/* The DLPack version gaio writes into the tensors it exports, and the major
 * version it reads. */
#define GAIO_DLPACK_MAJOR 1
#define GAIO_DLPACK_MINOR 1

#define GAIO_DLPACK_MAX_NDIM 8

typedef struct gaio_dlpack_view {
    gaio_buffer *buffer;
    size_t offset; /* bytes from the buffer's start to element [0, ..., 0] */
    gaio_dtype dtype;
    int32_t ndim;  /* 1 .. GAIO_DLPACK_MAX_NDIM */
    int64_t shape[GAIO_DLPACK_MAX_NDIM];   /* each >= 1 */
    int64_t strides[GAIO_DLPACK_MAX_NDIM]; /* in elements, each >= 0 (0 repeats an element) */
    /* Non-zero: nobody may write through the view. Import records the producer's
     * DLPACK_FLAG_BITMASK_READ_ONLY here and export passes it on; gaio's ops do not
     * check it, so a caller that writes to an imported read-only view breaks the
     * producer's contract. */
    int32_t read_only;
} gaio_dlpack_view;

/* A compact row-major view (strides from shape) over buf at offset. Checks
 * nothing: export and gaio_dlpack_view_to_image check the view they are given. */
gaio_dlpack_view gaio_dlpack_view_make(gaio_buffer *buf, size_t offset, gaio_dtype dtype, int32_t ndim,
                                       const int64_t *shape);

/* Exports the view as a newly allocated DLPack tensor that retains view->buffer.
 * The consumer calls (*out)->deleter(*out) exactly once when done. The tensor's
 * data is the element [0, ...] address and byte_offset is 0 (several consumers
 * ignore byte_offset). Device: a buffer of the host device is kDLCPU; of a CUDA
 * device, DEVICE is kDLCUDA with the CUDA ordinal, PINNED kDLCUDAHost, MANAGED
 * kDLCUDAManaged and HOST kDLCPU. The versioned tensor says DLPack 1.1 and sets
 * DLPACK_FLAG_BITMASK_READ_ONLY when view->read_only. */
gaio_status gaio_dlpack_export(const gaio_dlpack_view *view, DLManagedTensorVersioned **out);
gaio_status gaio_dlpack_export_legacy(const gaio_dlpack_view *view, DLManagedTensor **out);

/* Imports a DLPack tensor without copying: wraps its memory in a buffer of ctx
 * (gaio_buffer_wrap) and describes it in *view, whose buffer reference the caller
 * owns (gaio_buffer_release). On GAIO_OK gaio owns the tensor (see the ownership
 * rules above); on failure the caller does.
 *
 * Accepted: kDLCPU memory on any context (a MANAGED buffer on the host device,
 * whose own memory it is, so that gaio's ops take it; a HOST buffer on a GPU);
 * kDLCUDAHost (PINNED) and kDLCUDAManaged (MANAGED) memory; kDLCUDA memory (DEVICE)
 * on a context of the CUDA device of that device_id. dtypes (code, bits): (kDLUInt, 8) U8, (kDLUInt, 16)
 * U16, (kDLInt, 16) S16, (kDLInt, 32) S32, (kDLInt, 64) S64, (kDLFloat, 16) F16, (kDLFloat, 32) F32,
 * (kDLBfloat, 16) BF16, lanes 1. ndim 1..8,
 * every dimension >= 1, strides >= 0 or NULL (compact row-major). A versioned
 * tensor of another major version than 1 is refused without reading further. */
gaio_status gaio_dlpack_import(gaio_context *ctx, DLManagedTensorVersioned *tensor, gaio_dlpack_view *view);
gaio_status gaio_dlpack_import_legacy(gaio_context *ctx, DLManagedTensor *tensor, gaio_dlpack_view *view);

/* The same, except that gaio never calls the producer's deleter: on GAIO_OK,
 * *released (a future the caller owns) completes when gaio's last use of the
 * memory ends, and the caller then calls the deleter itself, on a thread of its
 * choice. For producers whose deleter takes a lock of their own (Python's GIL for
 * numpy's tensors): gaio's completion thread would otherwise take it, and stall
 * every stream's completions behind it. A completion queue watched by an event
 * loop, or a thread waiting on one, is the natural place to run them. */
gaio_status gaio_dlpack_import_deferred(gaio_context *ctx, DLManagedTensorVersioned *tensor, gaio_dlpack_view *view,
                                        gaio_future **released);
gaio_status gaio_dlpack_import_legacy_deferred(gaio_context *ctx, DLManagedTensor *tensor, gaio_dlpack_view *view,
                                               gaio_future **released);

/* An image as a 4-D view, also for a batch of one, so that the rank never depends
 * on the batch: HWC (NHWC) -> [N, H, W, C], CHW (NCHW) -> [N, C, H, W], strides
 * from the image's pitches (which must be whole elements). NV12 and I420 have no
 * single strided shape: GAIO_ERR_NOT_SUPPORTED. view->buffer is img->buffer,
 * borrowed. */
gaio_status gaio_dlpack_view_from_image(const gaio_image *img, gaio_dlpack_view *view);

/* The reverse, where the strides allow: layout HWC reads [N, H, W, C], [H, W, C]
 * or [H, W] (one channel); CHW reads [N, C, H, W] or [C, H, W]. The innermost
 * dimensions must be packed as gaio_image requires (HWC: a pixel's channels, and a
 * row's pixels, adjacent; CHW: a row's elements adjacent). img->buffer is
 * view->buffer, borrowed. */
gaio_status gaio_dlpack_view_to_image(const gaio_dlpack_view *view, gaio_layout layout, gaio_image *img);

#ifdef __cplusplus
}
#endif
#endif
