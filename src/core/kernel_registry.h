/* Registering gaio's own kernels. Each layer (image, dnn, and the core's random
 * numbers) registers its kernels with the core once, as a kernel set: its host
 * functions, and the device code (CUDA fatbins) in which the kernels of the same
 * names live. The registry takes the sets the first time it is used, from the list
 * kept by the top of the library (gaio__register_layers, src/gaio.c), so a lookup
 * by name finds every built-in kernel whichever layer a process uses first. A
 * device backend gets a kernel's handle from the core (gaio__kernel_device_handle),
 * which loads the kernel's set's device code through the backend's lib_* entries
 * on first use, and unloads it at gaio_shutdown. */
#ifndef GAIO_CORE_KERNEL_REGISTRY_H
#define GAIO_CORE_KERNEL_REGISTRY_H

#include "core/backend.h"
#include "gaio/kernel.h"

typedef struct gaio_builtin_kernel {
    const char *name;
    gaio_host_kernel fn;
    size_t nargs;
    const size_t *arg_sizes;
} gaio_builtin_kernel;

/* One compiled device code image, opaque to the core: a CUDA fatbin that
 * cmake/embed_fatbin.cmake embedded, handed to a backend's lib_load as it is. */
typedef struct gaio_device_code {
    const char *name; /* the source it came from, for messages */
    const unsigned char *data, *end; /* its bytes: [data, end) */
} gaio_device_code;

typedef struct gaio_kernel_set {
    const char *layer; /* for messages */
    /* Host kernels: tables each ending with an entry whose name is NULL, the list
     * ending with NULL. Every built-in kernel has a host version. */
    const gaio_builtin_kernel *const *host;
    /* Ends with an entry whose name is NULL (at once in a build without CUDA). */
    const gaio_device_code *device;
} gaio_kernel_set;

/* Registers a set (static: it must outlive the process's use of gaio). Called once
 * per set, by the layer's own registration function. */
void gaio__kernels_register(const gaio_kernel_set *set);

/* Defined by the top of the library (src/gaio.c): calls every layer's registration
 * function. The registry calls it once, on its first use. */
void gaio__register_layers(void);

/* The core's own kernels: random numbers (core/rng_kernels.c). */
void gaio__rng_register_kernels(void);

/* For a device backend launching kernel k on its device: k's handle there (*out),
 * cached in k->cu_kernel. For one of gaio's own kernels, the first call loads the
 * device code of k's set through be's lib_* entries. */
gaio_status gaio__kernel_device_handle(const char *fn, const gaio_backend *be, gaio_kernel *k, void **out);

/* At gaio_shutdown, after the backends' shutdown: unloads the device code of every
 * set and forgets the handles of gaio's kernels; the next use loads it again. */
void gaio__kernels_unload_device_code(void);

#endif
