/* The backend's side of the native interface (core/native.h): the entries a backend
 * with a native side fills in, reached through its table's `native` (core/backend.h).
 * core/native.c dispatches to them; layers never call them directly. A backend without
 * a native side (the host's) leaves `native` NULL. Each entry is what the function of
 * core/native.h of the same name promises, for this backend. */
#ifndef GAIO_CORE_NATIVE_BACKEND_H
#define GAIO_CORE_NATIVE_BACKEND_H

#include "core/backend.h"
#include "core/native.h"

struct gaio_native_ops {
    void *(*context)(gaio_context *ctx);
    /* Fills sc->saved and sc->switched (sc->ops is set by the core). */
    gaio_status (*enter)(const char *fn, gaio_context *ctx, gaio__native_scope *sc);
    void (*exit)(gaio__native_scope *sc);
    gaio__native_proc_fn (*proc)(const char *name);
    gaio_status (*fail)(const char *fn, const char *call, int result);
    void (*exclusive_begin)(void);
    void (*exclusive_end)(void);
};

#endif
