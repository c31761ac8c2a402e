/* Kernels gaio itself launches (its random numbers, the image and DNN ops). Their
 * names start with gaio_ and match the CUDA kernels in src/kernels, so one launch
 * path serves every backend. Each layer registers its own (core/kernel_registry.h). */
#ifndef GAIO_CORE_BUILTIN_KERNELS_H
#define GAIO_CORE_BUILTIN_KERNELS_H

#include "core/kernel_registry.h"
#include "gaio/kernel.h"

/* A reference to a registered built-in kernel. */
gaio_status gaio__kernel_builtin(const char *name, gaio_kernel **out);

/* gaio_launch for gaio's own ops: failures name fn, and the op also holds the
 * `nheld` buffers (ones whose addresses travel inside by-value arguments) until it
 * has run. */
gaio_status gaio__launch_held(const char *fn, gaio_stream *stream, gaio_kernel *kernel, gaio_dim3 grid,
                              gaio_dim3 block, size_t shared_mem_bytes, const gaio_arg *args, size_t nargs,
                              gaio_buffer *const *held, size_t nheld);

#endif
