/* Libraries through the driver's context-independent loading (cuLibrary*): the
 * backend table's lib_* entries (compiling: nvrtc.c). */
#include <stdlib.h>

#include "cuda/cuda_internal.h"

static gaio_status need_driver(const char *fn) {
    return gaio__fail(GAIO_ERR_DRIVER, fn, "the CUDA driver is not usable: %s", gaio__cu_unavailable_reason());
}

gaio_status gaio__cuda_lib_load(const char *fn, const void *image, const char *path, void **handle) {
    const gaio_cu_table *cu = gaio__cu();
    if (!cu) return need_driver(fn);
    CUlibrary lib = NULL;
    CUresult r = image ? cu->cuLibraryLoadData(&lib, image, NULL, NULL, 0, NULL, NULL, 0)
                       : cu->cuLibraryLoadFromFile(&lib, path, NULL, NULL, 0, NULL, NULL, 0);
    if (r != CUDA_SUCCESS) return gaio__cu_fail(fn, image ? "cuLibraryLoadData" : "cuLibraryLoadFromFile", r);
    *handle = lib;
    return GAIO_OK;
}

void gaio__cuda_lib_unload(void *handle) {
    const gaio_cu_table *cu = gaio__cu();
    if (cu && handle) cu->cuLibraryUnload((CUlibrary)handle);
}

typedef CUresult (*param_query)(void *handle, size_t index, size_t *offset, size_t *size);

/* Sizes of every parameter, asking until the index runs past the last one. */
static gaio_status collect(const char *fn, param_query q, void *handle, size_t *n_out, size_t **out, CUresult *first) {
    size_t cap = 8, n = 0;
    size_t *s = malloc(cap * sizeof *s);
    if (!s) return GAIO_FAIL(GAIO_ERR_NO_MEMORY, "out of host memory");
    for (;;) {
        size_t offset = 0, size = 0;
        CUresult r = q(handle, n, &offset, &size);
        if (n == 0) *first = r;
        if (r != CUDA_SUCCESS) break;
        if (n == cap) {
            size_t *grown = realloc(s, 2 * cap * sizeof *s);
            if (!grown) {
                free(s);
                return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory");
            }
            s = grown;
            cap *= 2;
        }
        s[n++] = size;
    }
    *n_out = n;
    *out = s;
    return GAIO_OK;
}

static CUresult kernel_query(void *h, size_t i, size_t *o, size_t *z) {
    return gaio__cu()->cuKernelGetParamInfo((CUkernel)h, i, o, z);
}
static CUresult func_query(void *h, size_t i, size_t *o, size_t *z) {
    return gaio__cu()->cuFuncGetParamInfo((CUfunction)h, i, o, z);
}

/* The driver knows a kernel's parameters from the library itself, or, for code it
 * has yet to JIT (PTX), once the kernel is loaded into a context: then ask again
 * through a context of the first CUDA device. */
static gaio_status param_sizes(const char *fn, CUkernel k, size_t *n, size_t **sizes) {
    const gaio_cu_table *cu = gaio__cu();
    if (!cu->cuKernelGetParamInfo || !cu->cuFuncGetParamInfo)
        return gaio__fail(GAIO_ERR_DRIVER, fn,
                          "the driver lacks cuKernelGetParamInfo (CUDA 12.4), which gaio needs to check arguments");
    CUresult first = CUDA_SUCCESS;
    gaio_status st = collect(fn, kernel_query, k, n, sizes, &first);
    if (st != GAIO_OK || *n > 0) return st;
    free(*sizes);
    *sizes = NULL;
    cuda_device *d = gaio__cuda_device(0);
    if (!d) return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn, "no CUDA device");
    st = gaio__cuda_device_enter(fn, d);
    if (st != GAIO_OK) return st;
    cuda_scope sc;
    st = gaio__cuda_enter(fn, d, &sc);
    if (st == GAIO_OK) {
        CUfunction f = NULL;
        CUresult r = cu->cuKernelGetFunction(&f, k);
        if (r != CUDA_SUCCESS) st = gaio__cu_fail(fn, "cuKernelGetFunction", r);
        else st = collect(fn, func_query, f, n, sizes, &first);
        gaio__cuda_exit(&sc);
    }
    gaio__cuda_device_leave(d);
    if (st == GAIO_OK && *n == 0 && first != CUDA_ERROR_INVALID_VALUE) {
        free(*sizes);
        *sizes = NULL;
        return gaio__cu_fail(fn, "cuFuncGetParamInfo", first);
    }
    return st;
}

gaio_status gaio__cuda_lib_kernel(const char *fn, void *handle, const char *name, void **kernel, size_t *nargs,
                                  size_t **sizes) {
    const gaio_cu_table *cu = gaio__cu();
    if (!cu) return need_driver(fn);
    CUkernel k = NULL;
    CUresult r = cu->cuLibraryGetKernel(&k, (CUlibrary)handle, name);
    if (!nargs && r == CUDA_SUCCESS) {
        *kernel = k;
        return GAIO_OK;
    }
    if (!nargs && r == CUDA_ERROR_NOT_FOUND) return GAIO_ERR_NOT_FOUND; /* find only: no message */
    if (r == CUDA_ERROR_NOT_FOUND)
        return gaio__fail(GAIO_ERR_NOT_FOUND, fn, "the library has no kernel named '%s' (declare it extern \"C\")",
                          name);
    if (r != CUDA_SUCCESS) return gaio__cu_fail(fn, "cuLibraryGetKernel", r);
    size_t n = 0, *s = NULL;
    gaio_status st = param_sizes(fn, k, &n, &s);
    if (st != GAIO_OK) return st;
    *kernel = k;
    *nargs = n;
    *sizes = s;
    return GAIO_OK;
}

/* Lists a library's kernels (drivers >= 12.4): gaio's own kernels are then found by
 * name without a cuLibraryGetKernel on a library that lacks the name, a failed call
 * that compute-sanitizer reports as an API error in every user's run. */
gaio_status gaio__cuda_lib_kernels(const char *fn, void *handle,
                                   void (*each)(void *user, const char *name, void *kernel), void *user) {
    const gaio_cu_table *cu = gaio__cu();
    if (!cu) return need_driver(fn);
    if (!cu->cuLibraryGetKernelCount || !cu->cuLibraryEnumerateKernels || !cu->cuKernelGetName)
        return GAIO_ERR_NOT_SUPPORTED;
    unsigned count = 0;
    if (cu->cuLibraryGetKernelCount(&count, (CUlibrary)handle) != CUDA_SUCCESS) return GAIO_ERR_NOT_SUPPORTED;
    CUkernel *ks = calloc(count ? count : 1, sizeof *ks);
    if (!ks) return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory");
    gaio_status st = GAIO_OK;
    if (cu->cuLibraryEnumerateKernels(ks, count, (CUlibrary)handle) != CUDA_SUCCESS) st = GAIO_ERR_NOT_SUPPORTED;
    for (unsigned j = 0; st == GAIO_OK && j < count; j++) {
        const char *name = NULL;
        if (cu->cuKernelGetName(&name, ks[j]) != CUDA_SUCCESS || !name) st = GAIO_ERR_NOT_SUPPORTED;
        else each(user, name, ks[j]);
    }
    free(ks);
    return st;
}

gaio_status gaio__cuda_lib_symbol(const char *fn, void *handle, gaio_context *ctx, const char *name, bool managed,
                                  void **ptr, size_t *bytes) {
    const gaio_cu_table *cu = gaio__cu();
    if (!cu) return need_driver(fn);
    if (ctx->be->kind != GAIO_DEVICE_CUDA)
        return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "ctx is on device %d, the host; library variables live on CUDA "
                                                    "devices", ctx->device);
    cuda_scope sc;
    gaio_status st = gaio__cuda_enter(fn, ctx->be_data, &sc);
    if (st != GAIO_OK) return st;
    CUdeviceptr p = 0;
    CUresult r = managed ? cu->cuLibraryGetManaged(&p, bytes, (CUlibrary)handle, name)
                         : cu->cuLibraryGetGlobal(&p, bytes, (CUlibrary)handle, name);
    gaio__cuda_exit(&sc);
    if (r == CUDA_ERROR_NOT_FOUND)
        return gaio__fail(GAIO_ERR_NOT_FOUND, fn, "the library has no %s variable named '%s'",
                          managed ? "__managed__" : "__device__", name);
    if (r != CUDA_SUCCESS) return gaio__cu_fail(fn, managed ? "cuLibraryGetManaged" : "cuLibraryGetGlobal", r);
    *ptr = (void *)(uintptr_t)p;
    return GAIO_OK;
}
