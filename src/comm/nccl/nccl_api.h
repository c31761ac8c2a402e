/* The part of NCCL's C API gaio calls, declared here so that a toolkit without NCCL's
 * header still builds gaio: libnccl.so.2 is opened at run time (nccl_lib.c) and its
 * values are checked against nccl.h where the build has one (nccl_abi_check.c). Enum
 * arguments are ints, as the C ABI passes them; streams are CUstream. */
#ifndef GAIO_COMM_NCCL_API_H
#define GAIO_COMM_NCCL_API_H

#include <cuda.h>
#include <stddef.h>

#define GAIO_NCCL_VALUES(X)                                                                          \
    X(ncclSuccess, 0) X(ncclUnhandledCudaError, 1) X(ncclSystemError, 2) X(ncclInternalError, 3)    \
    X(ncclInvalidArgument, 4) X(ncclInvalidUsage, 5) X(ncclRemoteError, 6) X(ncclInProgress, 7)      \
    X(ncclSum, 0) X(ncclProd, 1) X(ncclMax, 2) X(ncclMin, 3) X(ncclAvg, 4)                           \
    X(ncclUint8, 1) X(ncclInt32, 2) X(ncclInt64, 4) X(ncclFloat16, 6) X(ncclFloat32, 7) X(ncclBfloat16, 9)              \
    X(NCCL_UNIQUE_ID_BYTES, 128) X(NCCL_SPLIT_NOCOLOR, -1)

#define GAIO_NCCL_ENUMERATOR(name, value) enum { name = value };
GAIO_NCCL_VALUES(GAIO_NCCL_ENUMERATOR)
#undef GAIO_NCCL_ENUMERATOR

typedef int ncclResult_t;
typedef struct ncclComm *ncclComm_t;
typedef struct {
    char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

ncclResult_t ncclGetVersion(int *version);
const char *ncclGetErrorString(ncclResult_t result);
const char *ncclGetLastError(ncclComm_t comm);
ncclResult_t ncclGetUniqueId(ncclUniqueId *uniqueId);
ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank);
ncclResult_t ncclCommInitAll(ncclComm_t *comm, int ndev, const int *devlist);
ncclResult_t ncclCommFinalize(ncclComm_t comm);
ncclResult_t ncclCommDestroy(ncclComm_t comm);
ncclResult_t ncclCommAbort(ncclComm_t comm);
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError);
ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm, void *config);
ncclResult_t ncclCommCount(const ncclComm_t comm, int *count);
ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank);
ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count, int datatype, int op,
                           ncclComm_t comm, CUstream stream);
ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count, int datatype, int root,
                           ncclComm_t comm, CUstream stream);
ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count, int datatype, int op, int root,
                        ncclComm_t comm, CUstream stream);
ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount, int datatype, ncclComm_t comm,
                           CUstream stream);
ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount, int datatype, int op,
                               ncclComm_t comm, CUstream stream);
ncclResult_t ncclSend(const void *sendbuff, size_t count, int datatype, int peer, ncclComm_t comm,
                      CUstream stream);
ncclResult_t ncclRecv(void *recvbuff, size_t count, int datatype, int peer, ncclComm_t comm, CUstream stream);
ncclResult_t ncclGroupStart(void);
ncclResult_t ncclGroupEnd(void);

/* What gaio resolves, in its table's order. */
#define GAIO_NCCL_FUNCTIONS(X)                                                                         \
    X(ncclGetVersion) X(ncclGetErrorString) X(ncclGetLastError) X(ncclGetUniqueId) X(ncclCommInitRank) \
    X(ncclCommInitAll) X(ncclCommFinalize) X(ncclCommDestroy) X(ncclCommAbort) X(ncclCommGetAsyncError) \
    X(ncclCommSplit) X(ncclCommCount) X(ncclCommUserRank)                                             \
    X(ncclAllReduce) X(ncclBroadcast) X(ncclReduce) X(ncclAllGather) X(ncclReduceScatter) X(ncclSend)  \
    X(ncclRecv) X(ncclGroupStart) X(ncclGroupEnd)

#define GAIO_NCCL_MEMBER(fn) __typeof__(&fn) fn;
typedef struct gaio_nccl_table {
    GAIO_NCCL_FUNCTIONS(GAIO_NCCL_MEMBER)
} gaio_nccl_table;
#undef GAIO_NCCL_MEMBER

/* NCCL's table, loaded on first use; NULL (and *why says why: not installed, too old)
 * when it cannot be. */
const gaio_nccl_table *gaio__nccl(const char **why);
/* The table if something loaded it already, else NULL (never loads). */
const gaio_nccl_table *gaio__nccl_if_loaded(void);

/* A failed NCCL call as a gaio_status (GAIO_ERR_INVALID_ARG for NCCL's argument
 * errors, GAIO_ERR_DEVICE for the rest), the message naming fn and the call, NCCL's
 * error string and, given a comm, its last error. */
int gaio__nccl_fail(const char *fn, const char *call, ncclResult_t r, ncclComm_t comm);

#endif
