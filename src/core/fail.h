/* Shorthands for the argument checks of a call's validation, in the .c files that
 * include this header (never from another header): each records "fn: message" (see
 * gaio__fail) through a variable `const char *fn` in scope, naming the public call.
 *   BAD(...)          GAIO_ERR_INVALID_ARG: an argument is wrong
 *   UNSUPPORTED(...)  GAIO_ERR_NOT_SUPPORTED: valid, but not something gaio does */
#ifndef GAIO_CORE_FAIL_H
#define GAIO_CORE_FAIL_H

#include "core/error.h"

#define BAD(...) gaio__fail(GAIO_ERR_INVALID_ARG, fn, __VA_ARGS__)
#define UNSUPPORTED(...) gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn, __VA_ARGS__)

#endif
