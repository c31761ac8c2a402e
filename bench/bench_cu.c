#include "bench_cu.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

bench_cu_table bench_cu;
static bool loaded;

typedef CUresult (*get_proc_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);

int bench_cu_load(const char *prog) {
    if (loaded) return 0;
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "%s: dlopen(libcuda.so.1) failed: %s\n", prog, dlerror());
        return -1;
    }
    /* Kept open: gaio holds the same library open anyway. */
    void *sym = dlsym(lib, "cuGetProcAddress_v2");
    if (!sym) {
        fprintf(stderr, "%s: the driver has no cuGetProcAddress_v2 (older than CUDA 12)\n", prog);
        return -1;
    }
    get_proc_fn get_proc;
    memcpy(&get_proc, &sym, sizeof sym);
#define BENCH_CU_LOAD(name)                                                                                 \
    {                                                                                                       \
        void *p = NULL;                                                                                     \
        CUdriverProcAddressQueryResult q;                                                                   \
        CUresult r = get_proc(#name, &p, BENCH_CU_ABI, CU_GET_PROC_ADDRESS_DEFAULT, &q);                    \
        if (r != CUDA_SUCCESS || !p) {                                                                      \
            fprintf(stderr, "%s: the driver lacks %s (CUDA 12.0 ABI; error %d)\n", prog, #name, (int)r);   \
            return -1;                                                                                      \
        }                                                                                                   \
        memcpy(&bench_cu.name, &p, sizeof p);                                                               \
    }
    BENCH_CU_FUNCTIONS(BENCH_CU_LOAD)
#undef BENCH_CU_LOAD
    loaded = true;
    return 0;
}

int bench_cu_fail(const char *prog, CUresult r, const char *what) {
    const char *name = NULL;
    if (bench_cu.cuGetErrorName && bench_cu.cuGetErrorName(r, &name) != CUDA_SUCCESS) name = NULL;
    fprintf(stderr, "%s: %s failed: %s (%d)\n", prog, what, name ? name : "unknown CUresult", (int)r);
    return -1;
}
