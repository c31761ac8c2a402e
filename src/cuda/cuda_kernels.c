/* gaio's own kernels: each .cu file of src/kernels compiled by nvcc into a fatbin that is
 * embedded in libgaio and loaded once, on first use, with cuLibraryLoadData. A
 * CUlibrary is context-independent: one load serves every device and context. */
#include <stdio.h>
#include <string.h>

#include "cuda/cuda_internal.h"
#include "cuda/embedded_kernels.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static CUlibrary libs[64];
static int nlibs;
static CUresult load_error = CUDA_SUCCESS;
static const char *load_failed_name;

static void load_all(void) {
    const gaio_cu_table *cu = gaio__cu();
    for (const gaio_embedded_fatbin *f = gaio__embedded_fatbins; f->name && nlibs < 64; f++) {
        CUresult r = cu->cuLibraryLoadData(&libs[nlibs], f->data, NULL, NULL, 0, NULL, NULL, 0);
        if (r != CUDA_SUCCESS) {
            load_error = r;
            load_failed_name = f->name;
            return;
        }
        nlibs++;
    }
}

gaio_status gaio__cuda_kernel_handle(const char *fn, gaio_kernel *k, CUkernel *out) {
    void *h = atomic_load_explicit(&k->cu_kernel, memory_order_acquire);
    if (h) {
        *out = (CUkernel)h;
        return GAIO_OK;
    }
    if (strncmp(k->name, "gaio_", 5) != 0)
        return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn,
                          "kernel '%s' has only a host implementation; loading CUDA libraries of your own "
                          "(cubin, fatbin, PTX, NVRTC) is not implemented yet",
                          k->name);
    pthread_once(&once, load_all);
    if (load_error != CUDA_SUCCESS) {
        char call[128];
        snprintf(call, sizeof call, "cuLibraryLoadData of gaio's kernels (%s)", load_failed_name);
        return gaio__cu_fail(fn, call, load_error);
    }
    const gaio_cu_table *cu = gaio__cu();
    for (int i = 0; i < nlibs; i++) {
        CUkernel kern = NULL;
        if (cu->cuLibraryGetKernel(&kern, libs[i], k->name) == CUDA_SUCCESS && kern) {
            void *expected = NULL;
            atomic_compare_exchange_strong(&k->cu_kernel, &expected, (void *)kern);
            *out = kern;
            return GAIO_OK;
        }
    }
    return gaio__fail(GAIO_ERR_NOT_FOUND, fn, "built-in kernel '%s' is missing from gaio's CUDA kernels", k->name);
}
