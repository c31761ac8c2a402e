/* Element-wise reductions over the ranks' buffers, for the host's collectives. Floats
 * accumulate in their own type in rank order (f16 and bf16 in float, rounded once at the end),
 * integers wrap as two's complement (NCCL's integer sums wrap the same way). */
#include <stdint.h>
#include <string.h>

#include "comm/comm_internal.h"
#include "core/half.h"

#define REDUCE_LOOP(T, LOAD, STORE, ACC, COMBINE, FINISH)                               \
    do {                                                                                \
        T *d = dst;                                                                     \
        for (size_t i = 0; i < count; i++) {                                           \
            ACC acc = LOAD(((const T *)srcs[0])[i]);                                    \
            for (int k = 1; k < n; k++) {                                              \
                ACC v = LOAD(((const T *)srcs[k])[i]);                                  \
                COMBINE;                                                                \
            }                                                                           \
            FINISH;                                                                     \
            d[i] = STORE(acc);                                                          \
        }                                                                               \
    } while (0)

#define ID(x) (x)

/* The combine step of op for an accumulator `acc` and a value `v`. */
#define BY_OP(T, LOAD, STORE, ACC, ADD, MUL, FIN_AVG)                                    \
    switch (op) {                                                                        \
    case GAIO_COMM_SUM: REDUCE_LOOP(T, LOAD, STORE, ACC, acc = ADD, (void)0); break;   \
    case GAIO_COMM_PROD: REDUCE_LOOP(T, LOAD, STORE, ACC, acc = MUL, (void)0); break;  \
    case GAIO_COMM_MIN: REDUCE_LOOP(T, LOAD, STORE, ACC, acc = v < acc ? v : acc, (void)0); break; \
    case GAIO_COMM_MAX: REDUCE_LOOP(T, LOAD, STORE, ACC, acc = v > acc ? v : acc, (void)0); break; \
    case GAIO_COMM_AVG: REDUCE_LOOP(T, LOAD, STORE, ACC, acc = ADD, FIN_AVG); break;   \
    }

static float load_h(uint16_t h) { return h2f(h); }
static uint16_t store_h(float f) { return f2h(f); }
/* bfloat16: a float's upper half, rounded to nearest even (NaN stays NaN). */
static float load_b(uint16_t b) { return u2f((uint32_t)b << 16); }
static uint16_t store_b(float f) {
    uint32_t u = f2u(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

void gaio__comm_reduce(gaio_dtype dtype, gaio_comm_op op, void *dst, const void *const *srcs, int n, size_t count) {
    switch (dtype) {
    case GAIO_DTYPE_F32:
        BY_OP(float, ID, ID, float, acc + v, acc * v, acc /= (float)n)
        break;
    case GAIO_DTYPE_F16:
        BY_OP(uint16_t, load_h, store_h, float, acc + v, acc * v, acc /= (float)n)
        break;
    case GAIO_DTYPE_BF16:
        BY_OP(uint16_t, load_b, store_b, float, acc + v, acc * v, acc /= (float)n)
        break;
    case GAIO_DTYPE_U8:
        BY_OP(uint8_t, ID, ID, uint8_t, (uint8_t)(acc + v), (uint8_t)(acc * v), acc = (uint8_t)(acc / n))
        break;
    case GAIO_DTYPE_S32:
        BY_OP(int32_t, ID, ID, int32_t, (int32_t)((uint32_t)acc + (uint32_t)v),
              (int32_t)((uint32_t)acc * (uint32_t)v), acc /= n)
        break;
    case GAIO_DTYPE_S64:
        BY_OP(int64_t, ID, ID, int64_t, (int64_t)((uint64_t)acc + (uint64_t)v),
              (int64_t)((uint64_t)acc * (uint64_t)v), acc /= n)
        break;
    default:
        break; /* comm.c admits only the dtypes above */
    }
}
