/* The CUDA backend's side of the native interface for library layers (core/native.h,
 * core/native_backend.h): the device's primary context, entering it, the driver
 * table's entry points by name, driver failures, and the capture lock's exclusive
 * section (cuda_graph.c). Thin wrappers of what the backend does for itself. */
#include <string.h>

#include "core/native_backend.h"
#include "core/object.h"
#include "cuda/cuda_internal.h"

static void *cuda_native_context(gaio_context *ctx) {
    cuda_device *d = ctx->be_data;
    return d->primary; /* retained while the context lives (gaio__cuda_device_enter) */
}

static gaio_status cuda_native_enter(const char *fn, gaio_context *ctx, gaio__native_scope *sc) {
    cuda_scope cs;
    gaio_status st = gaio__cuda_enter(fn, ctx->be_data, &cs);
    sc->saved = cs.saved;
    sc->switched = st == GAIO_OK && cs.switched;
    return st;
}

static void cuda_native_exit(gaio__native_scope *sc) {
    cuda_scope cs = {.saved = sc->saved, .switched = sc->switched};
    gaio__cuda_exit(&cs);
}

/* The driver table's own pointers, so that a layer calls exactly the versions gaio
 * resolved (cuGetProcAddress at cuda.h's ABI). A search of ~70 names: layers look up
 * once and keep what they found. */
static gaio__native_proc_fn cuda_native_proc(const char *name) {
    const gaio_cu_table *cu = gaio__cu();
    if (!cu) return NULL;
#define GAIO_NATIVE_PROC(fn)                                   \
    if (!strcmp(name, #fn)) return (gaio__native_proc_fn)cu->fn;
#define GAIO_NATIVE_PROC_V(fn, version) GAIO_NATIVE_PROC(fn)
    GAIO_CU_FUNCTIONS(GAIO_NATIVE_PROC)
    GAIO_CU_OPTIONAL(GAIO_NATIVE_PROC_V)
#undef GAIO_NATIVE_PROC
#undef GAIO_NATIVE_PROC_V
    return NULL;
}

static gaio_status cuda_native_fail(const char *fn, const char *call, int result) {
    return gaio__cu_fail(fn, call, (CUresult)result);
}

const gaio_native_ops gaio__cuda_native_ops = {
    .context = cuda_native_context,
    .enter = cuda_native_enter,
    .exit = cuda_native_exit,
    .proc = cuda_native_proc,
    .fail = cuda_native_fail,
    .exclusive_begin = gaio__cuda_exclusive_begin,
    .exclusive_end = gaio__cuda_exclusive_end,
};
