#include "cuda/driver.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "core/dynlib.h"
#include "core/error.h"

/* Prototypes in cuda.h are those of CUDA 12.0's ABI for every function we use. */
#define GAIO_CU_ABI_VERSION 12000

typedef CUresult (*get_proc_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);

static pthread_once_t once = PTHREAD_ONCE_INIT;
static gaio_cu_table table;
static bool loaded;
static int driver_version;
static char reason[256] = "not loaded yet";

static void load(void) {
    static const char *const names[] = {"libcuda.so.1", NULL};
    gaio__dynlib lib;
    if (!gaio__dynlib_open(&lib, &(gaio__dynlib_search){.names = names})) {
        snprintf(reason, sizeof reason, "no NVIDIA driver: dlopen(libcuda.so.1) failed: %.200s", lib.why);
        return;
    }
    /* Every other entry point comes through cuGetProcAddress, at the ABI version of
     * its prototype in cuda.h. */
    get_proc_fn get_proc = NULL;
    const gaio__dynsym syms[] = {{"cuGetProcAddress_v2", &get_proc, true}};
    if (!gaio__dynlib_resolve(&lib, syms, 1)) {
        snprintf(reason, sizeof reason, "the NVIDIA driver is older than CUDA 12 (no cuGetProcAddress_v2)");
        return; /* keep the library open: unloading a driver is never worth the risk */
    }
#define GAIO_CU_LOAD(name)                                                                                \
    {                                                                                                     \
        CUdriverProcAddressQueryResult q;                                                                 \
        void *p = NULL;                                                                                   \
        if (get_proc(#name, &p, GAIO_CU_ABI_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &q) != CUDA_SUCCESS || !p) { \
            snprintf(reason, sizeof reason, "the NVIDIA driver lacks %s (CUDA 12.0 ABI)", #name);        \
            return;                                                                                       \
        }                                                                                                 \
        memcpy(&table.name, &p, sizeof p);                                                                \
    }
    GAIO_CU_FUNCTIONS(GAIO_CU_LOAD)
#undef GAIO_CU_LOAD
#define GAIO_CU_LOAD_OPTIONAL(name, version)                                                            \
    {                                                                                                   \
        CUdriverProcAddressQueryResult q;                                                               \
        void *p = NULL;                                                                                 \
        if (get_proc(#name, &p, version, CU_GET_PROC_ADDRESS_DEFAULT, &q) == CUDA_SUCCESS && p)         \
            memcpy(&table.name, &p, sizeof p);                                                          \
    }
    GAIO_CU_OPTIONAL(GAIO_CU_LOAD_OPTIONAL)
#undef GAIO_CU_LOAD_OPTIONAL
    CUresult r = table.cuInit(0);
    if (r != CUDA_SUCCESS) {
        const char *name = NULL;
        table.cuGetErrorName(r, &name);
        snprintf(reason, sizeof reason, "cuInit failed: %s", name ? name : "unknown error");
        return;
    }
    table.cuDriverGetVersion(&driver_version);
    loaded = true;
    reason[0] = '\0';
}

const gaio_cu_table *_Atomic gaio__cu_ready;

const gaio_cu_table *gaio__cu_load(void) {
    pthread_once(&once, load);
    if (!loaded) return NULL;
    atomic_store_explicit(&gaio__cu_ready, &table, memory_order_release);
    return &table;
}

const char *gaio__cu_unavailable_reason(void) {
    pthread_once(&once, load);
    return reason;
}

int gaio__cu_driver_version(void) {
    pthread_once(&once, load);
    return driver_version;
}

bool gaio__cu_is_fault(CUresult r) {
    switch (r) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
        return true;
    default:
        return false;
    }
}

gaio_status gaio__cu_fail(const char *fn, const char *call, CUresult r) {
    const char *name = NULL, *text = NULL;
    if (loaded) {
        table.cuGetErrorName(r, &name);
        table.cuGetErrorString(r, &text);
    }
    gaio_status st = gaio__cu_is_fault(r)                  ? GAIO_ERR_DEVICE
                     : r == CUDA_ERROR_OUT_OF_MEMORY       ? GAIO_ERR_NO_MEMORY
                     : r == CUDA_ERROR_NOT_READY           ? GAIO_ERR_NOT_READY
                     : r == CUDA_ERROR_NOT_SUPPORTED       ? GAIO_ERR_NOT_SUPPORTED
                     : r == CUDA_ERROR_INVALID_VALUE       ? GAIO_ERR_INVALID_ARG
                     : r == CUDA_ERROR_NOT_FOUND           ? GAIO_ERR_NOT_FOUND
                                                           : GAIO_ERR_DRIVER;
    return gaio__fail(st, fn, "%s failed: %s (%s)", call, name ? name : "CUDA error", text ? text : "no description");
}
