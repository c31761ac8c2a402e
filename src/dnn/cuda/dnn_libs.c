/* Loading cuDNN, cuBLAS and cuBLASLt: see dnn_libs.h. Each library loads once; a
 * failure is remembered (with its reason) so that every later op reports it quickly. */
#include "dnn/cuda/dnn_libs.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "core/dynlib.h"
#include "core/error.h"
#include "gaio/dnn.h"

typedef struct lib_state {
    pthread_once_t once;
    void *table;       /* the filled table, or NULL */
    const char *file;  /* the file that loaded */
    char why[GAIO_MSG_MAX];
    char description[128];
} lib_state;

#define NAME_OF(fn) #fn,
static const char *const cudnn_syms[] = {GAIO_CUDNN_FUNCTIONS(NAME_OF)};
static const char *const cublas_syms[] = {GAIO_CUBLAS_FUNCTIONS(NAME_OF)};
static const char *const cublaslt_syms[] = {GAIO_CUBLASLT_FUNCTIONS(NAME_OF)};
#undef NAME_OF

static gaio_cudnn_table cudnn_t;
static gaio_cublas_table cublas_t;
static gaio_cublaslt_table cublaslt_t;
static lib_state libs[3] = {{.once = PTHREAD_ONCE_INIT}, {.once = PTHREAD_ONCE_INIT}, {.once = PTHREAD_ONCE_INIT}};

/* dlopen's search path first, then the toolkit's default directories (the CUDA
 * libraries are often not on the loader's path). The table is its functions'
 * pointers in syms' order. */
static void load(lib_state *st, const char *const *names, void *table, const char *const *syms, size_t n,
                 const char *pkg) {
    static const char *const dirs[] = {"/usr/local/cuda/lib64/", "/usr/local/cuda/lib/", NULL};
    gaio__dynlib lib;
    if (!gaio__dynlib_open(&lib, &(gaio__dynlib_search){.names = names, .dirs = dirs})) {
        snprintf(st->why, sizeof st->why, "cannot open %s (%.300s); install %s", names[0], lib.why, pkg);
        return;
    }
    st->file = lib.file;
    gaio__dynsym want[64];
    if (n > sizeof want / sizeof want[0]) {
        snprintf(st->why, sizeof st->why, "%s: gaio asks for %zu functions, more than its loader holds", st->file, n);
        gaio__dynlib_close(&lib);
        return;
    }
    for (size_t i = 0; i < n; i++) want[i] = (gaio__dynsym){syms[i], (void **)table + i, true};
    if (!gaio__dynlib_resolve(&lib, want, n)) {
        snprintf(st->why, sizeof st->why, "%s: %.300s (too old?)", st->file, lib.why);
        gaio__dynlib_close(&lib);
        return;
    }
    st->table = table; /* never closed: handles made from it live until the process ends */
}

/* cuDNN 9's libcudnn.so is a shim that opens its engine libraries at the first
 * cudnnCreate, with the CUDA context current: 0.1-0.17 s on an H200 that then lands
 * after the device's start. Opened here instead, by whoever opens cuDNN first (a
 * program may do so on a thread of its own while the device starts, as gaio classify
 * does through gaio_dnn_library_status), cudnnCreate takes milliseconds. From the
 * shim's directory (the loader says where it found it); a failure is left for cuDNN
 * to report. */
static void preload_cudnn_engines(void) {
    Dl_info where;
    const char *shim = dladdr((void *)cudnn_t.cudnnCreate, &where) && where.dli_fname ? where.dli_fname : "";
    static const char *const subs[] = {"libcudnn_graph.so.9", "libcudnn_engines_precompiled.so.9",
                                       "libcudnn_engines_runtime_compiled.so.9", NULL};
    const char *slash = strrchr(shim, '/');
    for (int i = 0; subs[i]; i++) {
        char path[1024];
        if (slash && (size_t)(slash - shim) + 1 + strlen(subs[i]) < sizeof path)
            snprintf(path, sizeof path, "%.*s/%s", (int)(slash - shim), shim, subs[i]);
        else
            snprintf(path, sizeof path, "%s", subs[i]);
        (void)dlopen(path, RTLD_LAZY | RTLD_LOCAL); /* kept for the process, as cuDNN keeps it */
    }
}

static void load_cudnn(void) {
    static const char *const names[] = {"libcudnn.so.9", NULL};
    lib_state *st = &libs[GAIO_DNN_CUDNN];
    load(st, names, &cudnn_t, cudnn_syms, sizeof cudnn_syms / sizeof cudnn_syms[0], "cuDNN 9 (libcudnn9-cuda-12/13)");
    if (st->table) preload_cudnn_engines();
    if (st->table) {
        size_t v = cudnn_t.cudnnGetVersion();
        snprintf(st->description, sizeof st->description, "cuDNN %zu.%zu.%zu (%s)", v / 10000, v / 100 % 100,
                 v % 100, st->file);
    }
}

static void load_cublas(void) {
    static const char *const names[] = {"libcublas.so.13", "libcublas.so.12", NULL};
    lib_state *st = &libs[GAIO_DNN_CUBLAS];
    load(st, names, &cublas_t, cublas_syms, sizeof cublas_syms / sizeof cublas_syms[0], "cuBLAS (libcublas-13 or 12)");
    if (st->table) {
        int v = 0;
        if (cublas_t.cublasGetVersion_v2(NULL, &v) != CUBLAS_STATUS_SUCCESS) v = 0;
        snprintf(st->description, sizeof st->description, "cuBLAS %d.%d.%d (%s)", v / 10000, v / 100 % 100,
                 v % 100, st->file);
    }
}

static void load_cublaslt(void) {
    static const char *const names[] = {"libcublasLt.so.13", "libcublasLt.so.12", NULL};
    lib_state *st = &libs[GAIO_DNN_CUBLASLT];
    load(st, names, &cublaslt_t, cublaslt_syms, sizeof cublaslt_syms / sizeof cublaslt_syms[0],
         "cuBLASLt (libcublaslt-13 or 12)");
    if (st->table) {
        size_t v = cublaslt_t.cublasLtGetVersion();
        snprintf(st->description, sizeof st->description, "cuBLASLt %zu.%zu.%zu (%s)", v / 10000, v / 100 % 100,
                 v % 100, st->file);
    }
}

static void *get(int lib, void (*loader)(void), const char *fn) {
    lib_state *st = &libs[lib];
    pthread_once(&st->once, loader);
    if (!st->table) gaio__fail(GAIO_ERR_DRIVER, fn, "%s", st->why);
    return st->table;
}

const gaio_cudnn_table *gaio__cudnn(const char *fn) { return get(GAIO_DNN_CUDNN, load_cudnn, fn); }
const gaio_cublas_table *gaio__cublas(const char *fn) { return get(GAIO_DNN_CUBLAS, load_cublas, fn); }
const gaio_cublaslt_table *gaio__cublaslt(const char *fn) { return get(GAIO_DNN_CUBLASLT, load_cublaslt, fn); }

gaio_status gaio__dnn_cuda_library_status(int lib, const char **description) {
    static const char *fn = "gaio_dnn_library_status";
    const void *t = lib == GAIO_DNN_CUDNN      ? (const void *)gaio__cudnn(fn)
                    : lib == GAIO_DNN_CUBLAS   ? (const void *)gaio__cublas(fn)
                    : lib == GAIO_DNN_CUBLASLT ? (const void *)gaio__cublaslt(fn)
                                               : NULL;
    if (!t) {
        *description = gaio_last_error();
        return GAIO_ERR_DRIVER;
    }
    *description = libs[lib].description;
    return GAIO_OK;
}
