/* The CUDA driver, opened at run time: libcuda.so.1 through dlopen, every entry
 * point through cuGetProcAddress at the ABI version of the prototypes in cuda.h
 * (12.0), so libgaio links neither libcuda nor libcudart. */
#ifndef GAIO_CUDA_DRIVER_H
#define GAIO_CUDA_DRIVER_H

#include <cuda.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "gaio/status.h"

/* X(name): every driver function gaio calls. The name is the base symbol; cuda.h's
 * macros give the prototype of the versioned one. */
#define GAIO_CU_FUNCTIONS(X)                                                                                  \
    X(cuInit) X(cuDriverGetVersion) X(cuGetErrorName) X(cuGetErrorString) X(cuDeviceGetCount) X(cuDeviceGet) \
    X(cuDeviceGetName) X(cuDeviceTotalMem) X(cuDeviceGetAttribute)                   \
    X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease) X(cuCtxSetCurrent) X(cuCtxGetCurrent)            \
    X(cuCtxGetStreamPriorityRange) X(cuStreamCreateWithPriority) X(cuStreamGetPriority) X(cuStreamDestroy)  \
    X(cuStreamQuery) X(cuStreamSynchronize) X(cuStreamGetCtx) X(cuStreamWaitEvent) X(cuStreamWriteValue64)   \
    X(cuEventCreate) X(cuEventDestroy) X(cuEventRecord) X(cuEventQuery)                 \
    X(cuEventElapsedTime) X(cuMemAlloc) X(cuMemFree) X(cuMemAllocManaged) X(cuMemHostAlloc) X(cuMemFreeHost)  \
    X(cuMemHostGetDevicePointer) X(cuMemcpyAsync) X(cuMemcpyPeerAsync) X(cuMemcpy3DPeerAsync) X(cuMemcpy2DAsync) X(cuMemsetD8Async) X(cuMemsetD2D8Async)  \
    X(cuDeviceGetDefaultMemPool) X(cuMemPoolSetAttribute) X(cuMemAllocFromPoolAsync)       \
    X(cuMemFreeAsync) X(cuLaunchKernel) X(cuLaunchHostFunc) X(cuLibraryLoadData) X(cuLibraryLoadFromFile)     \
    X(cuLibraryUnload) X(cuLibraryGetKernel) X(cuLibraryGetManaged) X(cuLibraryGetGlobal)                     \
    X(cuKernelGetFunction) X(cuKernelGetAttribute) X(cuKernelSetAttribute) X(cuPointerGetAttribute)           \
    X(cuStreamBeginCapture) X(cuStreamEndCapture) X(cuGraphInstantiateWithFlags) X(cuGraphLaunch)           \
    X(cuGraphExecDestroy) X(cuGraphDestroy)

/* Newer entry points gaio uses when the driver has them (NULL otherwise). */
#define GAIO_CU_OPTIONAL(X)                                                                      \
    X(cuKernelGetParamInfo, 12040) X(cuFuncGetParamInfo, 12040) X(cuLibraryGetKernelCount, 12040) \
    X(cuLibraryEnumerateKernels, 12040) X(cuKernelGetName, 12030)

typedef struct gaio_cu_table {
#define GAIO_CU_FIELD(name) __typeof__(&name) name;
#define GAIO_CU_FIELD_V(name, version) __typeof__(&name) name;
    GAIO_CU_FUNCTIONS(GAIO_CU_FIELD)
    GAIO_CU_OPTIONAL(GAIO_CU_FIELD_V)
#undef GAIO_CU_FIELD
#undef GAIO_CU_FIELD_V
} gaio_cu_table;

/* The loaded table, or NULL when no usable driver is present (the reason is in
 * gaio__cu_unavailable_reason). Loads once, on first use; afterwards one load. */
const gaio_cu_table *gaio__cu_load(void);
extern const gaio_cu_table *_Atomic gaio__cu_ready; /* set once loaded */
static inline const gaio_cu_table *gaio__cu(void) {
    const gaio_cu_table *t = atomic_load_explicit(&gaio__cu_ready, memory_order_acquire);
    return t ? t : gaio__cu_load();
}
const char *gaio__cu_unavailable_reason(void);
int gaio__cu_driver_version(void);

/* Turns a failed driver call into a status with a message naming fn and the call:
 * "fn: cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory)". Faults that
 * poison the context (illegal address, launch failure, ...) become GAIO_ERR_DEVICE. */
gaio_status gaio__cu_fail(const char *fn, const char *call, CUresult r);
bool gaio__cu_is_fault(CUresult r);

/* Calls a driver function through the table; on failure returns its status from
 * the enclosing function. */
#define GAIO_CU_TRY(call_expr, name)                                    \
    do {                                                                \
        CUresult r_ = (call_expr);                                      \
        if (r_ != CUDA_SUCCESS) return gaio__cu_fail(__func__, name, r_); \
    } while (0)

#endif
