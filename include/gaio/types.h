/* gaio — opaque handles and small shared types.
 *
 * Lifetimes (every handle): a create/alloc/find call returns a handle holding one
 * reference that the caller owns; *_retain adds one, *_release drops one, and the
 * object is destroyed when the last reference goes. Work in flight holds its own
 * references to the streams, buffers, events, kernels and futures it uses, so
 * releasing a handle while the device still uses it is always safe: the object
 * lives until the stream has passed the last point that uses it. Calls that
 * "get" a handle without create/alloc/find in their name return a borrowed
 * handle, valid while its owner lives. Releasing NULL is a no-op. */
#ifndef GAIO_TYPES_H
#define GAIO_TYPES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gaio_context gaio_context;
typedef struct gaio_stream gaio_stream;
typedef struct gaio_event gaio_event;
typedef struct gaio_buffer gaio_buffer;
typedef struct gaio_future gaio_future;
typedef struct gaio_cq gaio_cq;
typedef struct gaio_kernel gaio_kernel;

typedef struct gaio_dim3 {
    uint32_t x, y, z;
} gaio_dim3;

/* Element types of images and tensors. */
typedef enum gaio_dtype {
    GAIO_DTYPE_U8 = 1,
    GAIO_DTYPE_U16 = 2,
    GAIO_DTYPE_S16 = 3,
    GAIO_DTYPE_F16 = 4, /* IEEE binary16 */
    GAIO_DTYPE_F32 = 5,
    GAIO_DTYPE_S32 = 6, /* indices, and models' integer tensors */
    GAIO_DTYPE_S64 = 7,
    GAIO_DTYPE_BF16 = 8 /* bfloat16: collectives only so far */
} gaio_dtype;

/* Bytes per element of a dtype (0 if it is none). */
size_t gaio_dtype_size(gaio_dtype dtype);
/* "u8", "u16", "s16", "f16", "f32", "s32", "s64", "bf16" ("?" if none). */
const char *gaio_dtype_name(gaio_dtype dtype);

/* Timeouts are in nanoseconds: 0 polls, GAIO_INFINITE waits until done. */
#define GAIO_INFINITE INT64_MAX

#ifdef __cplusplus
}
#endif
#endif
