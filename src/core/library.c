/* Device code libraries: argument checks and lifetimes here, the driver work in
 * the backend that loads device code (its table's lib_* entries; the CUDA backend's
 * are in src/cuda/cuda_library.c). */
#include <stdlib.h>
#include <string.h>

#include "core/object.h"

/* The backend that loads device code, or a failure that names fn. */
static gaio_status code_backend(const char *fn, const gaio_backend **be) {
    *be = gaio__code_backend();
    if (*be) return GAIO_OK;
    return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn,
                      "device code libraries need the CUDA backend, which this libgaio was built without");
}

void gaio__library_ref(gaio_library *lib) { gaio__ref_inc(&lib->ref); }

void gaio__library_unref(gaio_library *lib) {
    if (!gaio__ref_dec(&lib->ref)) return;
    lib->be->lib_unload(lib->handle);
    free(lib);
}

static gaio_status library_new(const gaio_backend *be, void *handle, gaio_library **out) {
    gaio_library *lib = calloc(1, sizeof *lib);
    if (!lib) {
        be->lib_unload(handle);
        return GAIO_FAIL(GAIO_ERR_NO_MEMORY, "out of host memory for the library");
    }
    gaio__ref_init(&lib->ref);
    lib->be = be;
    lib->handle = handle;
    *out = lib;
    return GAIO_OK;
}

gaio_status gaio_library_load_data(const void *image, gaio_library **out) {
    GAIO_REQUIRE_PTR(out);
    *out = NULL;
    GAIO_REQUIRE_PTR(image);
    const gaio_backend *be;
    gaio_status st = code_backend(__func__, &be);
    if (st != GAIO_OK) return st;
    void *handle;
    st = be->lib_load(__func__, image, NULL, &handle);
    return st == GAIO_OK ? library_new(be, handle, out) : st;
}

gaio_status gaio_library_load_file(const char *path, gaio_library **out) {
    GAIO_REQUIRE_PTR(out);
    *out = NULL;
    GAIO_REQUIRE_PTR(path);
    GAIO_REQUIRE(*path, "path is empty");
    const gaio_backend *be;
    gaio_status st = code_backend(__func__, &be);
    if (st != GAIO_OK) return st;
    void *handle;
    st = be->lib_load(__func__, NULL, path, &handle);
    return st == GAIO_OK ? library_new(be, handle, out) : st;
}

gaio_status gaio_library_compile(const char *source, const char *program_name, const char *const *options,
                                 size_t noptions, char *log, size_t log_size, gaio_library **out) {
    GAIO_REQUIRE_PTR(out);
    *out = NULL;
    if (log && log_size) log[0] = '\0';
    GAIO_REQUIRE_PTR(source);
    GAIO_REQUIRE(noptions == 0 || options != NULL, "options is NULL but noptions is %zu", noptions);
    for (size_t i = 0; i < noptions; i++) GAIO_REQUIRE(options[i] != NULL, "options[%zu] is NULL", i);
    GAIO_REQUIRE(log == NULL || log_size > 0, "log is given but log_size is 0");
    const gaio_backend *be;
    gaio_status st = code_backend(__func__, &be);
    if (st != GAIO_OK) return st;
    if (!be->lib_compile)
        return GAIO_FAIL(GAIO_ERR_NOT_SUPPORTED, "the %s backend compiles no device code", be->name);
    void *image = NULL;
    st = be->lib_compile(__func__, source, program_name ? program_name : "gaio_program.cu", options, noptions, log,
                         log_size, &image);
    if (st != GAIO_OK) return st;
    void *handle;
    st = be->lib_load(__func__, image, NULL, &handle);
    free(image);
    return st == GAIO_OK ? library_new(be, handle, out) : st;
}

gaio_status gaio_library_retain(gaio_library *lib) {
    GAIO_REQUIRE_PTR(lib);
    gaio__library_ref(lib);
    return GAIO_OK;
}

gaio_status gaio_library_release(gaio_library *lib) {
    if (lib) gaio__library_unref(lib);
    return GAIO_OK;
}

gaio_status gaio_library_get_kernel(gaio_library *lib, const char *name, gaio_kernel **out) {
    GAIO_REQUIRE_PTR(out);
    *out = NULL;
    GAIO_REQUIRE_PTR(lib);
    GAIO_REQUIRE_PTR(name);
    GAIO_REQUIRE(*name, "name is empty");
    void *kernel;
    size_t nargs = 0, *sizes = NULL;
    gaio_status st = lib->be->lib_kernel(__func__, lib->handle, name, &kernel, &nargs, &sizes);
    if (st != GAIO_OK) return st;
    st = gaio__kernel_bind_cuda(__func__, name, kernel, lib, nargs, sizes, out);
    free(sizes);
    return st;
}

static void release_library(void *ptr, void *user) {
    (void)ptr;
    gaio__library_unref(user);
}

static gaio_status get_symbol(const char *fn, gaio_library *lib, gaio_context *ctx, const char *name, bool managed,
                              gaio_buffer **out) {
    void *ptr;
    size_t bytes;
    gaio_status st = lib->be->lib_symbol(fn, lib->handle, ctx, name, managed, &ptr, &bytes);
    if (st != GAIO_OK) return st;
    gaio__library_ref(lib);
    st = gaio_buffer_wrap(ctx, managed ? GAIO_MEM_MANAGED : GAIO_MEM_DEVICE, ptr, bytes, release_library, lib, out);
    if (st != GAIO_OK) gaio__library_unref(lib);
    return st;
}

gaio_status gaio_library_get_global(gaio_library *lib, gaio_context *ctx, const char *name, gaio_buffer **out) {
    GAIO_REQUIRE_PTR(out);
    *out = NULL;
    GAIO_REQUIRE_PTR(lib);
    GAIO_REQUIRE_PTR(ctx);
    GAIO_REQUIRE_PTR(name);
    return get_symbol(__func__, lib, ctx, name, false, out);
}

gaio_status gaio_library_get_managed(gaio_library *lib, gaio_context *ctx, const char *name, gaio_buffer **out) {
    GAIO_REQUIRE_PTR(out);
    *out = NULL;
    GAIO_REQUIRE_PTR(lib);
    GAIO_REQUIRE_PTR(ctx);
    GAIO_REQUIRE_PTR(name);
    return get_symbol(__func__, lib, ctx, name, true, out);
}
