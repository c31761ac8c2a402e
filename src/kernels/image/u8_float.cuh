// u8 <-> float for image kernels without I2F / F2I, which Hopper's conversion unit
// issues at a quarter of the FMA rate: a byte placed in the mantissa of 2^23 is
// 2^23 + byte, and a float in [0, 255] added to 1.5 * 2^23 rounds (to nearest
// even, as rintf) into the low bits. Both exact; the box and float paths of the
// resize kernels were bound by the conversions they did per source byte.
#ifndef GAIO_KERNELS_IMAGE_U8_FLOAT_CUH
#define GAIO_KERNELS_IMAGE_U8_FLOAT_CUH

#include <stdint.h>

// Byte i (0..3) of w as float (one PRMT and one FADD where i is known, as in
// unrolled loops).
__device__ __forceinline__ float gaio_u8f(uint32_t w, int i) {
    return __fsub_rn(__uint_as_float(__byte_perm(w, 0x4b000000u, 0x7540u | (unsigned)i)), 8388608.f);
}

// gaio_k_sat_u8: round to nearest even and saturate (NaN gives 0).
__device__ __forceinline__ uint32_t gaio_f_u8(float v) {
    v = fminf(fmaxf(v, 0.f), 255.f);
    return __float_as_uint(v + 12582912.f) & 0xffu;
}

#endif
