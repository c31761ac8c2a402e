/* The backend table: what a device kind must provide. The core validates every
 * argument once, builds an op, and hands it to the backend of the stream's device. */
#ifndef GAIO_CORE_BACKEND_H
#define GAIO_CORE_BACKEND_H

#include "gaio/gaio.h"

typedef struct gaio_op gaio_op;
typedef struct gaio_native_ops gaio_native_ops; /* core/native_backend.h */

typedef struct gaio_backend {
    const char *name;
    gaio_device_kind kind;
    /* Bytes of per-op state the backend keeps (gaio_op.be), allocated with the op. */
    size_t op_space;
    /* Devices of this kind present in the process (0 when the driver is missing). */
    int (*device_count)(void);
    gaio_status (*device_props)(int ordinal, gaio_device_props *props);
    gaio_status (*context_init)(gaio_context *ctx);
    void (*context_fini)(gaio_context *ctx);
    /* native: a foreign stream to wrap, or NULL to create one. */
    gaio_status (*stream_init)(gaio_stream *stream, void *native);
    void (*stream_fini)(gaio_stream *stream);
    gaio_status (*mem_alloc)(gaio_context *ctx, gaio_mem_kind kind, size_t size, void **ptr);
    void (*mem_free)(gaio_context *ctx, gaio_mem_kind kind, void *ptr, size_t size);
    /* Checks that memory a user wraps is of the kind claimed (NULL: anything goes). */
    gaio_status (*wrap_check)(gaio_context *ctx, gaio_mem_kind kind, void *ptr, size_t size);
    /* Takes ownership of op on GAIO_OK; on failure the caller still owns it. */
    gaio_status (*submit)(gaio_op *op);
    /* Stream capture into a replayable graph (core/graph.h); NULL where the backend
     * has none. capture_end returns the executable graph in *graph. */
    gaio_status (*capture_begin)(const char *fn, gaio_stream *stream);
    gaio_status (*capture_end)(const char *fn, gaio_stream *stream, void **graph);
    gaio_status (*graph_launch)(const char *fn, gaio_stream *stream, void *graph, gaio_buffer *const *held,
                                size_t nheld);
    void (*graph_free)(gaio_context *ctx, void *graph);

    /* The native interface for library layers (core/native.h, core/native_backend.h):
     * native contexts, the driver's entry points, the exclusive section. NULL where the
     * backend has no native side (the host's). */
    const gaio_native_ops *native;
} gaio_backend;

const gaio_backend *gaio__cpu_backend(void);
/* NULL when this build has no CUDA backend. */
const gaio_backend *gaio__cuda_backend(void);

#endif
