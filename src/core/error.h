/* Thread-local error messages and argument checks shared by every public call. */
#ifndef GAIO_CORE_ERROR_H
#define GAIO_CORE_ERROR_H

#include <stdbool.h>
#include <stddef.h>

#include "gaio/status.h"

#define GAIO_MSG_MAX 512

/* Records "fn: message" as this thread's last error and returns status. */
gaio_status gaio__fail(gaio_status status, const char *fn, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define GAIO_FAIL(status, ...) gaio__fail((status), __func__, __VA_ARGS__)

/* Rejects the call with GAIO_ERR_INVALID_ARG and a message when cond is false. */
#define GAIO_REQUIRE(cond, ...)                                    \
    do {                                                           \
        if (!(cond)) return GAIO_FAIL(GAIO_ERR_INVALID_ARG, __VA_ARGS__); \
    } while (0)

#define GAIO_REQUIRE_PTR(p) GAIO_REQUIRE((p) != NULL, "%s is NULL", #p)

/* off + len <= size without overflow. */
static inline bool gaio__range_ok(size_t off, size_t len, size_t size) { return off <= size && len <= size - off; }

/* a * b without overflow. */
static inline bool gaio__mul_ok(size_t a, size_t b, size_t *out) { return !__builtin_mul_overflow(a, b, out); }

#endif
