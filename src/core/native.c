/* The native interface for library layers (core/native.h): dispatch to the backend's
 * native side (core/native_backend.h), and pool memory owned by a layer's state.
 * gaio__enqueue_native_held lives with the other enqueues (core/stream.c). */
#include <stdio.h>

#include "core/native_backend.h"
#include "core/object.h"

/* The build's backend of a device kind (core/backend.h's list), or NULL. */
static const gaio_native_ops *ops_of_kind(gaio_device_kind kind) {
    for (const gaio_backend *const *be = gaio__backends; *be; be++)
        if ((*be)->kind == kind) return (*be)->native;
    return NULL;
}

void *gaio__native_stream(gaio_stream *stream) { return stream->native; }

void *gaio__native_context(gaio_context *ctx) {
    const gaio_native_ops *ops = ctx->be->native;
    return ops ? ops->context(ctx) : NULL;
}

gaio_status gaio__native_enter(const char *fn, gaio_context *ctx, gaio__native_scope *sc) {
    sc->ops = ctx->be->native;
    sc->saved = NULL;
    sc->switched = false;
    return sc->ops ? sc->ops->enter(fn, ctx, sc) : GAIO_OK;
}

void gaio__native_exit(gaio__native_scope *sc) {
    if (sc->ops) sc->ops->exit(sc);
}

gaio__native_proc_fn gaio__native_proc(gaio_device_kind kind, const char *name) {
    const gaio_native_ops *ops = ops_of_kind(kind);
    return ops && name ? ops->proc(name) : NULL;
}

gaio_status gaio__native_fail(gaio_device_kind kind, const char *fn, const char *call, int result) {
    const gaio_native_ops *ops = ops_of_kind(kind);
    if (ops) return ops->fail(fn, call, result);
    return gaio__fail(GAIO_ERR_DRIVER, fn, "%s failed: %d", call, result);
}

void gaio__native_exclusive_begin(gaio_device_kind kind) {
    const gaio_native_ops *ops = ops_of_kind(kind);
    if (ops) ops->exclusive_begin();
}

void gaio__native_exclusive_end(gaio_device_kind kind) {
    const gaio_native_ops *ops = ops_of_kind(kind);
    if (ops) ops->exclusive_end();
}

static const char *kind_name(gaio_mem_kind k) {
    switch (k) {
    case GAIO_MEM_DEVICE: return "DEVICE";
    case GAIO_MEM_HOST: return "HOST";
    case GAIO_MEM_PINNED: return "PINNED";
    case GAIO_MEM_MANAGED: return "MANAGED";
    }
    return "?";
}

gaio_status gaio__native_mem_alloc(const char *fn, const char *what, gaio_context *ctx, gaio_mem_kind kind,
                                   size_t size, gaio__native_mem *out) {
    out->ptr = NULL;
    out->size = 0;
    out->kind = kind;
    if ((unsigned)kind >= GAIO_MEM_KIND_COUNT)
        return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "memory kind %d for %s is not a gaio_mem_kind", (int)kind, what);
    void *ptr = NULL;
    size_t rounded = 0;
    gaio_status st = gaio__pool_alloc(&ctx->pools[kind], size ? size : 1, &ptr, &rounded);
    if (st != GAIO_OK) {
        char why[GAIO_MSG_MAX]; /* the backend's message, which names its call */
        snprintf(why, sizeof why, "%s", gaio_last_error());
        return gaio__fail(st, fn, "cannot allocate %zu bytes of %s memory for %s (%s)", size, kind_name(kind), what,
                          why);
    }
    out->ptr = ptr;
    out->size = rounded;
    return GAIO_OK;
}

void gaio__native_mem_free(gaio_context *ctx, gaio__native_mem *m) {
    if (m->ptr) gaio__pool_free(&ctx->pools[m->kind], m->ptr, m->size);
    m->ptr = NULL;
    m->size = 0;
}
