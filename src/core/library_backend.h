/* What a backend with loadable device code provides (the CUDA backend; without
 * it, core/library.c answers GAIO_ERR_NOT_SUPPORTED). fn names the public caller. */
#ifndef GAIO_CORE_LIBRARY_BACKEND_H
#define GAIO_CORE_LIBRARY_BACKEND_H

#include <stdbool.h>

#include "gaio/gaio.h"

/* From memory (image) or a file (path): one of the two. */
gaio_status gaio__lib_load(const char *fn, const void *image, const char *path, void **handle);
void gaio__lib_unload(void *handle);
/* *image: a malloc'd PTX or cubin image. */
gaio_status gaio__lib_compile(const char *fn, const char *source, const char *name, const char *const *options,
                              size_t noptions, char *log, size_t log_size, void **image);
/* *sizes: malloc'd, *nargs entries. */
gaio_status gaio__lib_kernel(const char *fn, void *handle, const char *name, void **kernel, size_t *nargs,
                             size_t **sizes);
gaio_status gaio__lib_symbol(const char *fn, void *handle, gaio_context *ctx, const char *name, bool managed,
                             void **ptr, size_t *bytes);

#endif
