/* gaio — device code libraries (CUDA 12 context-independent loading).
 *
 * A library is loaded once for the whole process: every device and context
 * launches from it, with no per-context module tables. Its kernels join the
 * kernel registry under their names, so a name registered for the host with
 * gaio_kernel_register and defined in a library launches on either backend
 * through the same gaio_launch call. */
#ifndef GAIO_LIBRARY_H
#define GAIO_LIBRARY_H

#include "gaio/status.h"
#include "gaio/types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gaio_library gaio_library;

/* A cubin, fatbin or PTX image in memory (copied by the driver) or in a file. */
gaio_status gaio_library_load_data(const void *image, gaio_library **out);
gaio_status gaio_library_load_file(const char *path, gaio_library **out);

/* Compiles CUDA C++ source with NVRTC (opened at run time). Kernels meant for
 * gaio_launch should be extern "C". Options are NVRTC's ("-arch=sm_90", "-DN=4");
 * without -arch the code is compiled for the oldest GPU present. On a compile
 * error it returns GAIO_ERR_INVALID_ARG, and the compiler's log goes to `log`
 * (truncated to log_size; may be NULL) and, shortened, to gaio_last_error(). */
gaio_status gaio_library_compile(const char *source, const char *program_name, const char *const *options,
                                 size_t noptions, char *log, size_t log_size, gaio_library **out);

gaio_status gaio_library_retain(gaio_library *lib);
/* The library unloads once released and every kernel and buffer from it is gone. */
gaio_status gaio_library_release(gaio_library *lib);

/* The kernel `name` of the library, registered under that name (joined to a host
 * kernel of the same name if one is registered; the argument sizes must agree).
 * Its argument sizes come from the driver. */
gaio_status gaio_library_get_kernel(gaio_library *lib, const char *name, gaio_kernel **out);

/* A __device__ (global) or __managed__ variable of the library as a buffer of ctx's
 * device (DEVICE or MANAGED kind) that keeps the library loaded. */
gaio_status gaio_library_get_global(gaio_library *lib, gaio_context *ctx, const char *name, gaio_buffer **out);
gaio_status gaio_library_get_managed(gaio_library *lib, gaio_context *ctx, const char *name, gaio_buffer **out);

#ifdef __cplusplus
}
#endif
#endif
