/* gaio's own kernels: each .cu file of src/kernels compiled by nvcc into a fatbin that is
 * embedded in libgaio and loaded once, on first use, with cuLibraryLoadData. A
 * CUlibrary is context-independent: one load serves every device and context.
 * gaio_shutdown unloads them (gaio__cuda_kernels_unload); the next use loads again. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/cuda_internal.h"
#include "cuda/embedded_kernels.h"

static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;
static bool loaded;
static CUlibrary libs[64];
static int nlibs;
static CUresult load_error = CUDA_SUCCESS;
static const char *load_failed_name;

/* Which library holds which kernel, read once after loading (drivers >= 12.4): a lookup
 * by name then never calls cuLibraryGetKernel on a library that lacks the name, a failed
 * call that compute-sanitizer reports as an API error in every user's run. */
typedef struct {
    const char *name; /* the driver's string, valid while the library is loaded */
    CUkernel kernel;
} kernel_entry;
static kernel_entry *index_entries; /* NULL: the driver lacks the calls, or one failed */
static unsigned index_count;

static void build_index(const gaio_cu_table *cu) {
    if (!cu->cuLibraryGetKernelCount || !cu->cuLibraryEnumerateKernels || !cu->cuKernelGetName) return;
    unsigned total = 0;
    unsigned counts[64];
    for (int i = 0; i < nlibs; i++) {
        if (cu->cuLibraryGetKernelCount(&counts[i], libs[i]) != CUDA_SUCCESS) return;
        total += counts[i];
    }
    kernel_entry *e = calloc(total ? total : 1, sizeof *e);
    CUkernel *ks = calloc(total ? total : 1, sizeof *ks);
    if (!e || !ks) goto out;
    unsigned n = 0;
    for (int i = 0; i < nlibs; i++) {
        if (cu->cuLibraryEnumerateKernels(ks + n, counts[i], libs[i]) != CUDA_SUCCESS) goto out;
        n += counts[i];
    }
    for (unsigned j = 0; j < n; j++) {
        if (cu->cuKernelGetName(&e[j].name, ks[j]) != CUDA_SUCCESS || !e[j].name) goto out;
        e[j].kernel = ks[j];
    }
    index_entries = e;
    index_count = n;
    e = NULL;
out:
    free(e);
    free(ks);
}

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

/* The loaded kernel named `name`, or NULL: from the index, or without one by asking
 * each library in turn. */
static CUkernel find_loaded(const char *name, const kernel_entry *entries, unsigned count) {
    if (entries) {
        for (unsigned j = 0; j < count; j++)
            if (strcmp(entries[j].name, name) == 0) return entries[j].kernel;
        return NULL;
    }
    const gaio_cu_table *cu = gaio__cu();
    for (int i = 0; i < nlibs; i++) {
        CUkernel kern = NULL;
        if (cu->cuLibraryGetKernel(&kern, libs[i], name) == CUDA_SUCCESS && kern) return kern;
    }
    return NULL;
}

gaio_status gaio__cuda_kernel_handle(const char *fn, gaio_kernel *k, CUkernel *out) {
    void *h = atomic_load_explicit(&k->cu_kernel, memory_order_acquire);
    if (h) {
        *out = (CUkernel)h;
        return GAIO_OK;
    }
    if (strncmp(k->name, "gaio_", 5) != 0)
        return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn,
                          "kernel '%s' has only a host implementation; to run it on a GPU, load a CUDA "
                          "library that defines it (gaio_library_load_data, _load_file or _compile)",
                          k->name);
    /* Only until the kernel's handle is cached: launches after the first skip this. */
    pthread_mutex_lock(&load_lock);
    if (!loaded) {
        load_all();
        if (load_error == CUDA_SUCCESS) build_index(gaio__cu());
        loaded = true;
    }
    const kernel_entry *entries = index_entries;
    const unsigned count = index_count;
    CUresult load_r = load_error;
    const char *load_name = load_failed_name;
    pthread_mutex_unlock(&load_lock);
    if (load_r != CUDA_SUCCESS) {
        char call[128];
        snprintf(call, sizeof call, "cuLibraryLoadData of gaio's kernels (%s)", load_name);
        return gaio__cu_fail(fn, call, load_r);
    }
    CUkernel kern = find_loaded(k->name, entries, count);
    if (!kern)
        return gaio__fail(GAIO_ERR_NOT_FOUND, fn, "built-in kernel '%s' is missing from gaio's CUDA kernels", k->name);
    void *expected = NULL;
    atomic_compare_exchange_strong(&k->cu_kernel, &expected, (void *)kern);
    *out = kern;
    return GAIO_OK;
}

void gaio__cuda_kernels_unload(void) {
    const gaio_cu_table *cu = atomic_load(&gaio__cu_ready); /* nothing was loaded without it */
    pthread_mutex_lock(&load_lock);
    for (int i = 0; i < nlibs; i++) cu->cuLibraryUnload(libs[i]);
    nlibs = 0;
    free(index_entries);
    index_entries = NULL;
    index_count = 0;
    loaded = false;
    load_error = CUDA_SUCCESS;
    load_failed_name = NULL;
    pthread_mutex_unlock(&load_lock);
    gaio__kernel_forget_builtin_handles();
}
