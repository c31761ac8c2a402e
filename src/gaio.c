/* The top of the library: the parts this build is made of. The one file that names
 * the backends and the layers together; the core reaches them only through what it
 * lists here (core/backend.h, core/kernel_registry.h), and adding a backend or a
 * layer adds a line here. */
#include "core/backend.h"
#include "core/kernel_registry.h"
#include "cpu/cpu_backend.h"
#include "dnn/kernels.h"
#include "image/kernels.h"
#ifdef GAIO_HAVE_CUDA
#include "cuda/cuda_backend.h"
#endif

const gaio_backend *const gaio__backends[] = {
    &gaio__cpu_backend, /* first: device 0, the host */
#ifdef GAIO_HAVE_CUDA
    &gaio__cuda_backend,
#endif
    NULL,
};

/* Every layer's kernels, whichever layer a process uses first: a lookup by name
 * (gaio_kernel_find, or one layer launching another's kernel) finds them all. */
void gaio__register_layers(void) {
    gaio__rng_register_kernels();
    gaio__image_register_kernels();
    gaio__dnn_register_kernels();
}
