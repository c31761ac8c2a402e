/* The backend table: what a device kind must provide. The core validates every
 * argument once, builds an op, and hands it to the backend of the stream's device. */
#ifndef GAIO_CORE_BACKEND_H
#define GAIO_CORE_BACKEND_H

#include <stdbool.h>

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
    /* The backend keeps the stream and the kernel of an op given to submit alive
     * until the op retires, so the op takes no references to them of its own
     * (gaio__op_hold_refs): each would be an atomic on a line that the thread
     * retiring ops writes too. Without it, the core takes them before submit. */
    bool covers_ops;
    /* A launch with nothing to hold (value arguments only) on an inline stream: the
     * backend may issue it with no op at all, counted with work it already has in
     * flight (*taken true, the launch's status returned), or decline (*taken false,
     * nothing done: the caller submits an op). NULL: always an op. */
    gaio_status (*launch_direct)(const char *fn, gaio_stream *stream, gaio_kernel *kernel,
                                 const gaio_launch_info *info, void **argv, bool *taken);
    /* A fence on an inline stream: the backend may track fut (one reference given to
     * it) with no op, completing it once the work submitted before it has finished, in
     * order with the stream's ops (true), or decline (false, nothing done, the
     * reference still the caller's: the caller submits a RECORD op). NULL: always an op. */
    bool (*fence_direct)(const char *fn, gaio_stream *stream, gaio_future *fut);
    /* Stream capture into a replayable graph (core/graph.h); NULL where the backend
     * has none. capture_end returns the executable graph in *graph. */
    gaio_status (*capture_begin)(const char *fn, gaio_stream *stream);
    gaio_status (*capture_end)(const char *fn, gaio_stream *stream, void **graph);
    gaio_status (*graph_launch)(const char *fn, gaio_stream *stream, void *graph, gaio_buffer *const *held,
                                size_t nheld);
    void (*graph_free)(gaio_context *ctx, void *graph);

    /* ---- The backend as a whole ---- */
    /* gaio_backend_status: a line on its state (valid on the calling thread until its
     * next call) and GAIO_OK when it is usable, or the status that says why not.
     * NULL: "ready". */
    gaio_status (*describe)(const char **description);
    /* gaio_shutdown, once no context is alive and the worker pool has stopped: stops
     * the backend's threads and frees its process-wide state; the next context
     * starts them again. NULL: nothing to do. */
    void (*shutdown)(void);

    /* ---- Device code libraries (core/library.c; gaio's own kernels: core/kernel.c).
     * NULL where the backend loads no device code: the core then answers
     * GAIO_ERR_NOT_SUPPORTED. fn names the public caller in messages. Handles are
     * context-independent: one load serves every device and context. ---- */
    /* From memory (image) or a file (path): one of the two. */
    gaio_status (*lib_load)(const char *fn, const void *image, const char *path, void **handle);
    void (*lib_unload)(void *handle);
    /* Source to a loadable image; *image: malloc'd. */
    gaio_status (*lib_compile)(const char *fn, const char *source, const char *name, const char *const *options,
                               size_t noptions, char *log, size_t log_size, void **image);
    /* The kernel `name` of a library and the sizes of its parameters (*sizes malloc'd,
     * *nargs entries). With nargs and sizes NULL it only finds the kernel (one of
     * gaio's own, whose arguments the core knows), and GAIO_ERR_NOT_FOUND sets no
     * message. */
    gaio_status (*lib_kernel)(const char *fn, void *handle, const char *name, void **kernel, size_t *nargs,
                              size_t **sizes);
    /* Calls each(user, name, kernel) for every kernel of a library (names valid while
     * it stays loaded); GAIO_ERR_NOT_SUPPORTED, with no message, where the driver
     * cannot list them (the core then asks lib_kernel by name). */
    gaio_status (*lib_kernels)(const char *fn, void *handle, void (*each)(void *user, const char *name, void *kernel),
                               void *user);
    /* A __device__ (or, managed, __managed__) variable of a library on ctx's device. */
    gaio_status (*lib_symbol)(const char *fn, void *handle, gaio_context *ctx, const char *name, bool managed,
                              void **ptr, size_t *bytes);

    /* The native interface for library layers (core/native.h, core/native_backend.h):
     * native contexts, the driver's entry points, the exclusive section. NULL where the
     * backend has no native side (the host's). */
    const gaio_native_ops *native;
} gaio_backend;

/* The backends of this build, the host's first, ending with NULL. Device 0 is the
 * host; each further backend's devices follow in turn. Defined by the top of the
 * library (src/gaio.c), the one file that knows which backends a build has. */
extern const gaio_backend *const gaio__backends[];

/* The first backend of the build that loads device code libraries, or NULL. */
const gaio_backend *gaio__code_backend(void);

#endif
