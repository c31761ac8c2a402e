/* gaio — buffers: refcounted memory from the context pools.
 *
 * Kinds: DEVICE memory is read and written by the device only (host memory on
 * the CPU backend, but gaio_buffer_host_ptr refuses it there too, so a program
 * that runs on the CPU runs on a GPU unchanged); HOST is pageable host memory;
 * PINNED is page-locked host memory that devices can reach; MANAGED migrates
 * between host and device. All offsets and sizes are in bytes.
 *
 * A buffer's memory goes back to its pool when the last reference goes: the
 * user's, or that of the last op in flight that uses it. */
#ifndef GAIO_BUFFER_H
#define GAIO_BUFFER_H

#include "gaio/status.h"
#include "gaio/types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gaio_mem_kind {
    GAIO_MEM_DEVICE = 0,
    GAIO_MEM_HOST = 1,
    GAIO_MEM_PINNED = 2,
    GAIO_MEM_MANAGED = 3
} gaio_mem_kind;
#define GAIO_MEM_KIND_COUNT 4

/* Usable at once by every stream of the context. */
gaio_status gaio_buffer_alloc(gaio_context *ctx, gaio_mem_kind kind, size_t size, gaio_buffer **out);

/* Stream-ordered allocation from the pool of the stream's context: usable by work
 * submitted to `stream` after this call (other streams order themselves after it
 * with an event). */
gaio_status gaio_buffer_alloc_async(gaio_stream *stream, gaio_mem_kind kind, size_t size, gaio_buffer **out);

/* A 2D buffer of `height` rows of `width_bytes`; rows start every gaio_buffer_pitch
 * bytes (a multiple of the device's pitch_alignment). */
gaio_status gaio_buffer_alloc_2d(gaio_context *ctx, gaio_mem_kind kind, size_t width_bytes, size_t height,
                                 gaio_buffer **out);

/* Wraps memory gaio did not allocate. `deleter` (may be NULL) runs once, with ptr
 * and user, when the last reference goes. ptr must be host memory for HOST/PINNED,
 * memory of the context's device for DEVICE. */
typedef void (*gaio_deleter)(void *ptr, void *user);
gaio_status gaio_buffer_wrap(gaio_context *ctx, gaio_mem_kind kind, void *ptr, size_t size, gaio_deleter deleter,
                             void *user, gaio_buffer **out);

gaio_status gaio_buffer_retain(gaio_buffer *buf);
gaio_status gaio_buffer_release(gaio_buffer *buf);

/* Stream-ordered free: drops the caller's reference once `stream` reaches this
 * point. gaio's own ops keep their buffers alive anyway; use this when work gaio
 * does not track (a foreign kernel on a wrapped stream, a raw device pointer)
 * still uses the buffer. The caller must not use buf after this call. */
gaio_status gaio_buffer_free_async(gaio_buffer *buf, gaio_stream *stream);

gaio_status gaio_buffer_size(const gaio_buffer *buf, size_t *size);
gaio_status gaio_buffer_kind(const gaio_buffer *buf, gaio_mem_kind *kind);
gaio_status gaio_buffer_device(const gaio_buffer *buf, int *device);
/* Row pitch in bytes; the size for 1D buffers. */
gaio_status gaio_buffer_pitch(const gaio_buffer *buf, size_t *pitch);
/* The address the device uses (for kernels written outside gaio). */
gaio_status gaio_buffer_device_ptr(const gaio_buffer *buf, void **ptr);
/* A host address: HOST, PINNED and MANAGED only. Reading it while work in flight
 * writes the buffer is a race: wait on a future first. */
gaio_status gaio_buffer_host_ptr(const gaio_buffer *buf, void **ptr);

#ifdef __cplusplus
}
#endif
#endif
