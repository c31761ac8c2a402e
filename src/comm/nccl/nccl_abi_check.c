/* Build-time check of nccl_api.h's values against NCCL's own header, where the build
 * has one: gaio declares what it calls itself (so that it builds without NCCL's
 * headers), and a value NCCL changed would otherwise go unseen until a call failed. */
#if defined(__has_include)
#if __has_include(<nccl.h>)
#include <nccl.h>

#define GAIO_NCCL_CHECK(name, value) _Static_assert((long long)(name) == (value), #name " differs from NCCL's header");
GAIO_NCCL_CHECK(ncclSuccess, 0)
GAIO_NCCL_CHECK(ncclUnhandledCudaError, 1)
GAIO_NCCL_CHECK(ncclSystemError, 2)
GAIO_NCCL_CHECK(ncclInternalError, 3)
GAIO_NCCL_CHECK(ncclInvalidArgument, 4)
GAIO_NCCL_CHECK(ncclInvalidUsage, 5)
GAIO_NCCL_CHECK(ncclRemoteError, 6)
GAIO_NCCL_CHECK(ncclInProgress, 7)
GAIO_NCCL_CHECK(ncclSum, 0)
GAIO_NCCL_CHECK(ncclProd, 1)
GAIO_NCCL_CHECK(ncclMax, 2)
GAIO_NCCL_CHECK(ncclMin, 3)
GAIO_NCCL_CHECK(ncclAvg, 4)
GAIO_NCCL_CHECK(ncclUint8, 1)
GAIO_NCCL_CHECK(ncclInt32, 2)
GAIO_NCCL_CHECK(ncclInt64, 4)
GAIO_NCCL_CHECK(ncclFloat16, 6)
GAIO_NCCL_CHECK(ncclFloat32, 7)
GAIO_NCCL_CHECK(ncclBfloat16, 9)
GAIO_NCCL_CHECK(NCCL_UNIQUE_ID_BYTES, 128)
GAIO_NCCL_CHECK(NCCL_SPLIT_NOCOLOR, -1)
_Static_assert(sizeof(ncclUniqueId) == 128, "ncclUniqueId is not 128 bytes");
_Static_assert(sizeof(ncclResult_t) == sizeof(int), "ncclResult_t is not an int");
_Static_assert(sizeof(ncclDataType_t) == sizeof(int) && sizeof(ncclRedOp_t) == sizeof(int),
               "NCCL's enums are not ints");
#endif
#endif

typedef int gaio__nccl_abi_checked; /* a translation unit must declare something */
