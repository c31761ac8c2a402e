/* The CUDA driver for the benchmarks' raw-CUDA peers, opened at run time (neither
 * libcuda nor libcudart is linked): one table for every benchmark. */
#ifndef GAIO_BENCH_CU_H
#define GAIO_BENCH_CU_H

#include <cuda.h>

/* Prototypes in cuda.h are those of the versioned symbols cuGetProcAddress returns
 * for CUDA 12.0 (cuda.h maps e.g. cuMemAlloc to cuMemAlloc_v2 for both). */
#define BENCH_CU_ABI 12000
#define BENCH_CU_FUNCTIONS(X) \
    X(cuInit) X(cuGetErrorName) X(cuDriverGetVersion) X(cuDeviceGet) X(cuDevicePrimaryCtxRetain)                    \
    X(cuDevicePrimaryCtxRelease) X(cuCtxGetCurrent) X(cuCtxSetCurrent) X(cuStreamCreate) X(cuStreamDestroy)         \
    X(cuStreamSynchronize) X(cuStreamQuery) X(cuLaunchKernel) X(cuLaunchHostFunc) X(cuStreamWriteValue64)           \
    X(cuLibraryLoadData) X(cuLibraryUnload) X(cuLibraryGetKernel) X(cuMemHostAlloc) X(cuMemFreeHost)                \
    X(cuMemHostGetDevicePointer) X(cuMemAlloc) X(cuMemFree) X(cuMemAllocAsync) X(cuMemFreeAsync)                    \
    X(cuDeviceGetAttribute) X(cuStreamGetFlags) X(cuEventCreate) X(cuEventDestroy) X(cuEventRecord)                 \
    X(cuEventQuery) X(cuEventElapsedTime) X(cuMemcpyDtoDAsync) X(cuMemcpyHtoD) X(cuMemsetD8Async)

typedef struct bench_cu_table {
#define BENCH_CU_FIELD(name) __typeof__(&name) name;
    BENCH_CU_FUNCTIONS(BENCH_CU_FIELD)
#undef BENCH_CU_FIELD
} bench_cu_table;

extern bench_cu_table bench_cu;

/* Opens the driver once; 0, or -1 after "<prog>: ..." on stderr. */
int bench_cu_load(const char *prog);
/* Prints "<prog>: <what> failed: <error name>" on stderr; returns -1. */
int bench_cu_fail(const char *prog, CUresult r, const char *what);

#endif
