/* The element types every layer shares (gaio/types.h). */
#include "gaio/types.h"

size_t gaio_dtype_size(gaio_dtype dtype) {
    switch (dtype) {
    case GAIO_DTYPE_U8: return 1;
    case GAIO_DTYPE_U16:
    case GAIO_DTYPE_S16:
    case GAIO_DTYPE_F16:
    case GAIO_DTYPE_BF16: return 2;
    case GAIO_DTYPE_F32:
    case GAIO_DTYPE_S32: return 4;
    case GAIO_DTYPE_S64: return 8;
    }
    return 0;
}

const char *gaio_dtype_name(gaio_dtype dtype) {
    switch (dtype) {
    case GAIO_DTYPE_U8: return "u8";
    case GAIO_DTYPE_U16: return "u16";
    case GAIO_DTYPE_S16: return "s16";
    case GAIO_DTYPE_F16: return "f16";
    case GAIO_DTYPE_F32: return "f32";
    case GAIO_DTYPE_S32: return "s32";
    case GAIO_DTYPE_S64: return "s64";
    case GAIO_DTYPE_BF16: return "bf16";
    }
    return "?";
}
