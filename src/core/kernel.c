/* The process-wide kernel registry and gaio_launch. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/builtin_kernels.h"
#include "core/op.h"

#define MAX_NAME 255
#define MAX_ARGS 64
#define MAX_ARG_BYTES 4096
#define MAX_SHARED_BYTES ((size_t)227 << 10) /* the most any current GPU gives one block */
#define MAX_BLOCK_THREADS 1024u

typedef struct reg_entry {
    struct reg_entry *next;
    gaio_kernel *kernel;
} reg_entry;

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static reg_entry *reg_head;
static bool reg_builtins_done;

void gaio__kernel_ref(gaio_kernel *k) { gaio__ref_inc(&k->ref); }

static void kernel_destroy(gaio_kernel *k);

void gaio__kernel_unref(gaio_kernel *k) {
    if (gaio__ref_dec(&k->ref)) kernel_destroy(k);
}

void gaio__kernel_unref_n(gaio_kernel *k, long n) {
    if (n > 0 && gaio__ref_sub(&k->ref, n)) kernel_destroy(k);
}

static void kernel_destroy(gaio_kernel *k) {
    free(k->name);
    free(k->arg_sizes);
    gaio_library *lib = k->lib;
    free(k);
    if (lib) gaio__library_unref(lib);
}

static reg_entry *reg_find(const char *name) {
    for (reg_entry *e = reg_head; e; e = e->next)
        if (strcmp(e->kernel->name, name) == 0) return e;
    return NULL;
}

static bool same_signature(const gaio_kernel *k, size_t nargs, const size_t *sizes) {
    if (k->nargs != nargs) return false;
    for (size_t i = 0; i < nargs; i++)
        if (k->arg_sizes[i] != sizes[i]) return false;
    return true;
}

/* Under reg_lock: registers `name`, or joins the other half (host function or CUDA
 * kernel) to a kernel of that name registered already. fn names the public caller. */
static gaio_status reg_join(const char *fn, const char *name, gaio_host_kernel host_fn, void *cu_kernel,
                            gaio_library *lib, size_t nargs, const size_t *arg_sizes, gaio_kernel **out) {
    reg_entry *found = reg_find(name);
    if (found) {
        gaio_kernel *k = found->kernel;
        if (host_fn && atomic_load(&k->host_fn))
            return gaio__fail(GAIO_ERR_STATE, fn, "a kernel named '%s' is registered already", name);
        void *bound = atomic_load(&k->cu_kernel);
        if (cu_kernel && bound && bound != cu_kernel)
            return gaio__fail(GAIO_ERR_STATE, fn, "kernel '%s' is bound to a CUDA kernel of another library already",
                              name);
        if (!same_signature(k, nargs, arg_sizes))
            return gaio__fail(GAIO_ERR_INVALID_ARG, fn,
                              "kernel '%s' is registered with %zu arguments of other sizes than the %zu given here; "
                              "the host and CUDA versions must take the same arguments",
                              name, k->nargs, nargs);
        if (host_fn) atomic_store_explicit(&k->host_fn, host_fn, memory_order_release);
        if (cu_kernel && !bound) {
            atomic_store(&k->cu_kernel, cu_kernel);
            k->lib = lib;
            gaio__library_ref(lib);
        }
        if (out) {
            gaio__kernel_ref(k);
            *out = k;
        }
        return GAIO_OK;
    }
    gaio_kernel *k = calloc(1, sizeof *k);
    reg_entry *e = malloc(sizeof *e);
    char *copy = strdup(name);
    size_t *sizes = nargs ? malloc(nargs * sizeof *sizes) : NULL;
    if (!k || !e || !copy || (nargs && !sizes)) {
        free(k);
        free(e);
        free(copy);
        free(sizes);
        return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory for the kernel");
    }
    if (nargs) memcpy(sizes, arg_sizes, nargs * sizeof *sizes);
    gaio__ref_init(&k->ref);
    k->name = copy;
    atomic_init(&k->host_fn, host_fn);
    k->nargs = nargs;
    k->arg_sizes = sizes;
    atomic_init(&k->cu_kernel, cu_kernel);
    if (cu_kernel) {
        k->lib = lib;
        gaio__library_ref(lib);
    }
    e->kernel = k;
    e->next = reg_head;
    reg_head = e;
    if (out) {
        gaio__kernel_ref(k);
        *out = k;
    }
    return GAIO_OK;
}

static void reg_ensure_builtins(void) {
    if (reg_builtins_done) return;
    reg_builtins_done = true;
    for (const gaio_builtin_kernel *const *t = gaio__builtin_kernel_tables(); *t; t++)
        for (const gaio_builtin_kernel *b = *t; b->name; b++)
            (void)reg_join("gaio", b->name, b->fn, NULL, NULL, b->nargs, b->arg_sizes, NULL);
}

gaio_status gaio__kernel_bind_cuda(const char *fn, const char *name, void *cu_kernel, gaio_library *lib, size_t nargs,
                                   const size_t *arg_sizes, gaio_kernel **out) {
    pthread_mutex_lock(&reg_lock);
    reg_ensure_builtins();
    gaio_status st = reg_join(fn, name, NULL, cu_kernel, lib, nargs, arg_sizes, out);
    pthread_mutex_unlock(&reg_lock);
    return st;
}

gaio_status gaio__kernel_builtin(const char *name, gaio_kernel **out) {
    pthread_mutex_lock(&reg_lock);
    reg_ensure_builtins();
    reg_entry *e = reg_find(name);
    if (e) gaio__kernel_ref(e->kernel);
    pthread_mutex_unlock(&reg_lock);
    if (!e) return GAIO_FAIL(GAIO_ERR_NOT_FOUND, "built-in kernel '%s' is missing", name);
    *out = e->kernel;
    return GAIO_OK;
}

gaio_status gaio_kernel_register(const char *name, gaio_host_kernel fn, size_t nargs, const size_t *arg_sizes,
                                 gaio_kernel **out) {
    if (out) *out = NULL;
    GAIO_REQUIRE_PTR(name);
    size_t len = strnlen(name, MAX_NAME + 1);
    GAIO_REQUIRE(len > 0 && len <= MAX_NAME, "name must be 1..%d characters", MAX_NAME);
    GAIO_REQUIRE(strncmp(name, "gaio_", 5) != 0, "name '%s' uses the prefix gaio_, which gaio keeps for itself", name);
    GAIO_REQUIRE_PTR(fn);
    GAIO_REQUIRE(nargs <= MAX_ARGS, "nargs %zu exceeds the limit of %d arguments", nargs, MAX_ARGS);
    GAIO_REQUIRE(nargs == 0 || arg_sizes != NULL, "arg_sizes is NULL but nargs is %zu", nargs);
    for (size_t i = 0; i < nargs; i++)
        GAIO_REQUIRE(arg_sizes[i] > 0 && arg_sizes[i] <= MAX_ARG_BYTES, "arg_sizes[%zu] is %zu; it must be 1..%d", i,
                     arg_sizes[i], MAX_ARG_BYTES);
    pthread_mutex_lock(&reg_lock);
    reg_ensure_builtins();
    gaio_status st = reg_join(__func__, name, fn, NULL, NULL, nargs, arg_sizes, out);
    pthread_mutex_unlock(&reg_lock);
    return st;
}

gaio_status gaio_kernel_unregister(const char *name) {
    GAIO_REQUIRE_PTR(name);
    GAIO_REQUIRE(strncmp(name, "gaio_", 5) != 0, "'%s' is a built-in kernel and stays registered", name);
    pthread_mutex_lock(&reg_lock);
    reg_entry **pp = &reg_head;
    while (*pp && strcmp((*pp)->kernel->name, name) != 0) pp = &(*pp)->next;
    reg_entry *e = *pp;
    if (e) *pp = e->next;
    pthread_mutex_unlock(&reg_lock);
    if (!e) return GAIO_FAIL(GAIO_ERR_NOT_FOUND, "no kernel named '%s' is registered", name);
    gaio__kernel_unref(e->kernel);
    free(e);
    return GAIO_OK;
}

void gaio__kernel_forget_builtin_handles(void) {
    pthread_mutex_lock(&reg_lock);
    for (reg_entry *e = reg_head; e; e = e->next)
        if (!e->kernel->lib) atomic_store_explicit(&e->kernel->cu_kernel, NULL, memory_order_release);
    pthread_mutex_unlock(&reg_lock);
}

gaio_status gaio_kernel_find(const char *name, gaio_kernel **out) {
    GAIO_REQUIRE_PTR(out);
    *out = NULL;
    GAIO_REQUIRE_PTR(name);
    pthread_mutex_lock(&reg_lock);
    reg_ensure_builtins();
    reg_entry *e = reg_find(name);
    if (e) gaio__kernel_ref(e->kernel);
    pthread_mutex_unlock(&reg_lock);
    if (!e) return GAIO_FAIL(GAIO_ERR_NOT_FOUND, "no kernel named '%s' is registered", name);
    *out = e->kernel;
    return GAIO_OK;
}

gaio_status gaio_kernel_retain(gaio_kernel *kernel) {
    GAIO_REQUIRE_PTR(kernel);
    gaio__kernel_ref(kernel);
    return GAIO_OK;
}

gaio_status gaio_kernel_release(gaio_kernel *kernel) {
    if (kernel) gaio__kernel_unref(kernel);
    return GAIO_OK;
}

const char *gaio_kernel_name(const gaio_kernel *kernel) { return kernel ? kernel->name : ""; }

static bool dim_ok(gaio_dim3 d) { return d.x > 0 && d.y > 0 && d.z > 0; }

gaio_status gaio_launch(gaio_stream *stream, gaio_kernel *kernel, gaio_dim3 grid, gaio_dim3 block,
                        size_t shared_mem_bytes, const gaio_arg *args, size_t nargs) {
    return gaio__launch_held(__func__, stream, kernel, grid, block, shared_mem_bytes, args, nargs, NULL, 0);
}

/* Messages name fn, the public function that launched (gaio_launch or an op). */
#define LAUNCH_REQUIRE(cond, ...)                                                 \
    do {                                                                          \
        if (!(cond)) return gaio__fail(GAIO_ERR_INVALID_ARG, fn, __VA_ARGS__);    \
    } while (0)

gaio_status gaio__launch_held(const char *fn, gaio_stream *stream, gaio_kernel *kernel, gaio_dim3 grid,
                              gaio_dim3 block, size_t shared_mem_bytes, const gaio_arg *args, size_t nargs,
                              gaio_buffer *const *held, size_t nheld) {
    LAUNCH_REQUIRE(stream != NULL, "stream is NULL");
    LAUNCH_REQUIRE(kernel != NULL, "kernel is NULL");
    LAUNCH_REQUIRE(dim_ok(grid), "grid (%u, %u, %u) has a zero dimension", grid.x, grid.y, grid.z);
    LAUNCH_REQUIRE(dim_ok(block), "block (%u, %u, %u) has a zero dimension", block.x, block.y, block.z);
    LAUNCH_REQUIRE(grid.x <= 0x7fffffffu && grid.y <= 65535u && grid.z <= 65535u,
                   "grid (%u, %u, %u) exceeds (2^31-1, 65535, 65535)", grid.x, grid.y, grid.z);
    uint64_t threads = (uint64_t)block.x * block.y * block.z;
    LAUNCH_REQUIRE(threads <= MAX_BLOCK_THREADS && block.z <= 64, "block (%u, %u, %u) exceeds %u threads (z <= 64)",
                   block.x, block.y, block.z, MAX_BLOCK_THREADS);
    LAUNCH_REQUIRE(shared_mem_bytes <= MAX_SHARED_BYTES, "shared_mem_bytes %zu exceeds %zu", shared_mem_bytes,
                   MAX_SHARED_BYTES);
    LAUNCH_REQUIRE(nargs == kernel->nargs, "kernel '%s' takes %zu arguments but %zu were given", kernel->name,
                   kernel->nargs, nargs);
    LAUNCH_REQUIRE(nargs == 0 || args != NULL, "args is NULL but nargs is %zu", nargs);
    size_t nbufs = 0, bytes = nargs * sizeof(void *) + 16; /* +16: aligning the values after argv */
    for (size_t i = 0; i < nargs; i++) {
        const gaio_arg *a = &args[i];
        if (a->buffer) {
            LAUNCH_REQUIRE(kernel->arg_sizes[i] == sizeof(void *),
                           "args[%zu] is a buffer (a pointer) but kernel '%s' takes %zu bytes there", i, kernel->name,
                           kernel->arg_sizes[i]);
            LAUNCH_REQUIRE(a->offset <= a->buffer->size, "args[%zu] offset %zu exceeds the buffer's %zu bytes", i,
                           a->offset, a->buffer->size);
            if (!gaio__reachable(a->buffer, stream, 0)) {
                char what[32]; /* named only on failure: launches are a hot path */
                snprintf(what, sizeof what, "args[%zu]", i);
                return gaio__check_reach(fn, what, a->buffer, stream, 0);
            }
            nbufs++;
        } else {
            LAUNCH_REQUIRE(a->value != NULL, "args[%zu] has neither a value nor a buffer", i);
            LAUNCH_REQUIRE(a->size == kernel->arg_sizes[i], "args[%zu] is %zu bytes but kernel '%s' takes %zu there", i,
                           a->size, kernel->name, kernel->arg_sizes[i]);
        }
        bytes += (kernel->arg_sizes[i] + 15) & ~(size_t)15;
    }
    if (stream->ctx->be->kind == GAIO_DEVICE_HOST && !atomic_load_explicit(&kernel->host_fn, memory_order_acquire))
        return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn,
                          "kernel '%s' has no host implementation; it runs on CUDA devices only", kernel->name);
    for (size_t i = 0; i < nheld; i++) {
        LAUNCH_REQUIRE(held[i] != NULL, "held buffer %zu is NULL", i);
        if (!gaio__reachable(held[i], stream, 0))
            return gaio__check_reach(fn, "a buffer of the launch", held[i], stream, 0);
    }
    void *extra;
    gaio_op *op = gaio__op_new(GAIO_OP_LAUNCH, stream, nbufs + nheld, bytes, &extra);
    if (!op) return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory for the launch");
    void **argv = extra;
    char *store = (char *)(argv + nargs);
    store = (char *)(((uintptr_t)store + 15) & ~(uintptr_t)15);
    size_t b = 0;
    for (size_t i = 0; i < nargs; i++) {
        argv[i] = store;
        if (args[i].buffer) {
            void *p = args[i].buffer->ptr + args[i].offset;
            memcpy(store, &p, sizeof p);
            gaio__op_hold_buffer(op, b++, args[i].buffer);
        } else {
            memcpy(store, args[i].value, args[i].size);
        }
        store += (kernel->arg_sizes[i] + 15) & ~(size_t)15;
    }
    for (size_t i = 0; i < nheld; i++) gaio__op_hold_buffer(op, b++, held[i]);
    gaio__kernel_ref(kernel);
    op->u.launch.kernel = kernel;
    op->u.launch.argv = argv;
    op->u.launch.info = (gaio_launch_info){grid, block, shared_mem_bytes, NULL};
    return gaio__submit_from(fn, op);
}
