// PTX dp2a with signed 16-bit weights and unsigned bytes (the intrinsics take one
// signedness for both): the u8 fixed-point resize kernels' vertical sums, two tap
// rows' bytes interleaved in b.
#ifndef GAIO_KERNELS_IMAGE_DP2A_CUH
#define GAIO_KERNELS_IMAGE_DP2A_CUH

#include <stdint.h>

// a.lo16 * b.byte0 + a.hi16 * b.byte1 + c
__device__ __forceinline__ int32_t dp2a_lo(uint32_t a, uint32_t b, int32_t c) {
    int32_t d;
    asm("dp2a.lo.s32.u32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
}

// a.lo16 * b.byte2 + a.hi16 * b.byte3 + c
__device__ __forceinline__ int32_t dp2a_hi(uint32_t a, uint32_t b, int32_t c) {
    int32_t d;
    asm("dp2a.hi.s32.u32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
}

#endif
