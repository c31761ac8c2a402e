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

#define MAX_SETS 16

typedef struct reg_entry {
    struct reg_entry *next;
    gaio_kernel *kernel;
} reg_entry;

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static reg_entry *reg_head;

/* A registered kernel set and, once its device code is loaded, its libraries. */
typedef struct kernel_set_state {
    const gaio_kernel_set *set;
    /* The rest under code_lock; loaded again after gaio_shutdown unloads it. */
    bool loaded;            /* tried since the last gaio_shutdown: status tells how it went */
    gaio_status status;
    char msg[GAIO_MSG_MAX]; /* why it failed, without the caller's name */
    const gaio_backend *be; /* the backend that loaded it */
    void **libs;
    size_t nlibs;
    bool listed; /* lib_kernels bound every kernel it has: no lookups by name */
} kernel_set_state;

static kernel_set_state sets[MAX_SETS]; /* under reg_lock until registered, then set never changes */
static int nsets;
static pthread_once_t sets_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t code_lock = PTHREAD_MUTEX_INITIALIZER; /* taken before reg_lock */

/* The layers register their sets the first time the registry is used (not under reg_lock). */
static void ensure_sets(void) { pthread_once(&sets_once, gaio__register_layers); }

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

void gaio__kernels_register(const gaio_kernel_set *set) {
    pthread_mutex_lock(&reg_lock);
    if (nsets == MAX_SETS) { /* a build with more layers than this needs MAX_SETS raised */
        pthread_mutex_unlock(&reg_lock);
        return;
    }
    kernel_set_state *state = &sets[nsets++];
    state->set = set;
    for (const gaio_builtin_kernel *const *t = set->host; *t; t++)
        for (const gaio_builtin_kernel *b = *t; b->name; b++)
            if (reg_join("gaio", b->name, b->fn, NULL, NULL, b->nargs, b->arg_sizes, NULL) == GAIO_OK)
                reg_find(b->name)->kernel->set = state;
    pthread_mutex_unlock(&reg_lock);
}

gaio_status gaio__kernel_bind_cuda(const char *fn, const char *name, void *cu_kernel, gaio_library *lib, size_t nargs,
                                   const size_t *arg_sizes, gaio_kernel **out) {
    ensure_sets();
    pthread_mutex_lock(&reg_lock);
    gaio_status st = reg_join(fn, name, NULL, cu_kernel, lib, nargs, arg_sizes, out);
    pthread_mutex_unlock(&reg_lock);
    return st;
}

gaio_status gaio__kernel_builtin(const char *name, gaio_kernel **out) {
    ensure_sets();
    pthread_mutex_lock(&reg_lock);
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
    ensure_sets();
    pthread_mutex_lock(&reg_lock);
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

/* lib_kernels' callback: binds a kernel of the set being loaded to its handle. */
static void bind_listed(void *user, const char *name, void *handle) {
    kernel_set_state *state = user;
    pthread_mutex_lock(&reg_lock);
    reg_entry *e = reg_find(name);
    if (e && e->kernel->set == state) {
        void *expected = NULL;
        atomic_compare_exchange_strong(&e->kernel->cu_kernel, &expected, handle);
    }
    pthread_mutex_unlock(&reg_lock);
}

/* Under code_lock: loads the set's device code with be, and binds what it can list. */
static void set_load(const char *fn, const gaio_backend *be, kernel_set_state *state) {
    const gaio_kernel_set *set = state->set;
    state->loaded = true;
    state->be = be;
    state->status = GAIO_OK;
    size_t n = 0;
    while (set->device[n].name) n++;
    state->libs = calloc(n ? n : 1, sizeof *state->libs);
    if (!state->libs) {
        state->status = GAIO_ERR_NO_MEMORY;
        snprintf(state->msg, sizeof state->msg, "out of host memory for gaio's %s kernels", set->layer);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const gaio_device_code *code = &set->device[i];
        void *handle;
        gaio_status st = be->lib_load(fn, code->data, NULL, &handle);
        if (st != GAIO_OK) {
            const char *why = gaio_last_error();
            size_t skip = strlen(fn);
            if (strncmp(why, fn, skip) == 0 && strncmp(why + skip, ": ", 2) == 0) why += skip + 2;
            state->status = st;
            snprintf(state->msg, sizeof state->msg, "loading gaio's %s kernels (%s): %s", set->layer, code->name,
                     why);
            return;
        }
        state->libs[state->nlibs++] = handle;
    }
    bool listed = be->lib_kernels != NULL;
    for (size_t i = 0; listed && i < state->nlibs; i++)
        listed = be->lib_kernels(fn, state->libs[i], bind_listed, state) == GAIO_OK;
    state->listed = listed;
}

gaio_status gaio__kernel_device_handle(const char *fn, const gaio_backend *be, gaio_kernel *k, void **out) {
    void *h = atomic_load_explicit(&k->cu_kernel, memory_order_acquire);
    if (h) {
        *out = h;
        return GAIO_OK;
    }
    kernel_set_state *state = k->set;
    if (!state)
        return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn,
                          "kernel '%s' has only a host implementation; to run it on a GPU, load a CUDA "
                          "library that defines it (gaio_library_load_data, _load_file or _compile)",
                          k->name);
    if (!be->lib_load)
        return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn, "the %s backend loads no device code", be->name);
    /* Only until the kernel's handle is cached: launches after the first skip this. */
    pthread_mutex_lock(&code_lock);
    if (!state->loaded) set_load(fn, be, state);
    gaio_status st = state->status;
    if (st == GAIO_OK && state->be != be)
        st = gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn, "gaio's %s kernels are loaded by the %s backend already",
                        state->set->layer, state->be->name);
    else if (st != GAIO_OK)
        st = gaio__fail(st, fn, "%s", state->msg);
    if (st == GAIO_OK) {
        h = atomic_load_explicit(&k->cu_kernel, memory_order_acquire);
        for (size_t i = 0; !h && !state->listed && i < state->nlibs; i++)
            if (be->lib_kernel(fn, state->libs[i], k->name, &h, NULL, NULL) != GAIO_OK) h = NULL;
    }
    pthread_mutex_unlock(&code_lock);
    if (st != GAIO_OK) return st;
    if (!h)
        return gaio__fail(GAIO_ERR_NOT_FOUND, fn, "built-in kernel '%s' is missing from gaio's %s device code",
                          k->name, state->set->layer);
    void *expected = NULL;
    if (!atomic_compare_exchange_strong(&k->cu_kernel, &expected, h)) h = expected;
    *out = h;
    return GAIO_OK;
}

void gaio__kernels_unload_device_code(void) {
    pthread_mutex_lock(&code_lock);
    pthread_mutex_lock(&reg_lock);
    int n = nsets;
    pthread_mutex_unlock(&reg_lock);
    for (int i = 0; i < n; i++) {
        kernel_set_state *state = &sets[i];
        if (!state->loaded) continue;
        for (size_t j = 0; j < state->nlibs; j++) state->be->lib_unload(state->libs[j]);
        free(state->libs);
        state->libs = NULL;
        state->nlibs = 0;
        state->loaded = false;
        state->listed = false;
        state->status = GAIO_OK;
        state->be = NULL;
    }
    /* Handles of gaio's own kernels went with their libraries; those of users'
     * libraries (k->lib) stay: the libraries do. */
    pthread_mutex_lock(&reg_lock);
    for (reg_entry *e = reg_head; e; e = e->next)
        if (!e->kernel->lib) atomic_store_explicit(&e->kernel->cu_kernel, NULL, memory_order_release);
    pthread_mutex_unlock(&reg_lock);
    pthread_mutex_unlock(&code_lock);
}

gaio_status gaio_kernel_find(const char *name, gaio_kernel **out) {
    GAIO_REQUIRE_PTR(out);
    *out = NULL;
    GAIO_REQUIRE_PTR(name);
    ensure_sets();
    pthread_mutex_lock(&reg_lock);
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

/* Launches with at most this many (value) arguments may skip their op (backend.h:
 * launch_direct); the array of their addresses lives on the stack. */
#define DIRECT_MAX_ARGS 16

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
    gaio_launch_info info = {grid, block, shared_mem_bytes, NULL};
    if (nbufs + nheld == 0 && nargs <= DIRECT_MAX_ARGS && stream->ctx->be->launch_direct &&
        !(stream->flags & GAIO_STREAM_DEFERRED)) {
        /* Nothing to hold: the backend may issue it with no op (backend.h). The driver
         * copies the values during the call, so they are passed where they are. */
        void *argv[DIRECT_MAX_ARGS + 1];
        for (size_t i = 0; i < nargs; i++) argv[i] = (void *)args[i].value;
        bool taken = false;
        gaio__submitting_fn = fn;
        atomic_fetch_add_explicit(&stream->submitted, 1, memory_order_relaxed);
        gaio_status st = stream->ctx->be->launch_direct(fn, stream, kernel, &info, argv, &taken);
        if (taken && st == GAIO_OK) return GAIO_OK;
        atomic_fetch_sub_explicit(&stream->submitted, 1, memory_order_relaxed);
        if (taken) return st;
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
    op->u.launch.kernel = kernel; /* referenced once submitted (core/op.h) */
    op->u.launch.argv = argv;
    op->u.launch.info = info;
    return gaio__submit_from(fn, op);
}
