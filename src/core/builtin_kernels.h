/* Kernels gaio itself launches (random numbers, later image ops). Their names
 * start with gaio_ and match the CUDA kernels in src/kernels, so one launch
 * path serves every backend. */
#ifndef GAIO_CORE_BUILTIN_KERNELS_H
#define GAIO_CORE_BUILTIN_KERNELS_H

#include "gaio/kernel.h"

typedef struct gaio_builtin_kernel {
    const char *name;
    gaio_host_kernel fn;
    size_t nargs;
    const size_t *arg_sizes;
} gaio_builtin_kernel;

/* The host implementations, ending with an entry whose name is NULL. */
const gaio_builtin_kernel *gaio__builtin_kernels(void);

/* A reference to a registered built-in kernel. */
gaio_status gaio__kernel_builtin(const char *name, gaio_kernel **out);

#endif
