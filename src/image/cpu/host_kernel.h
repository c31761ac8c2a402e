/* Helpers for the image host kernels: unpacking by-value arguments and splitting
 * the work over the CPU worker pool. */
#ifndef GAIO_IMAGE_CPU_HOST_KERNEL_H
#define GAIO_IMAGE_CPU_HOST_KERNEL_H

#include <string.h>

#include "core/builtin_kernels.h"
#include "core/workers.h"
#include "image/kimg.h"

/* A copy of by-value argument i (arguments are only 16-byte aligned). */
#define GAIO_KARG(type, args, i) (*(const type *)gaio_karg_((args)[i]))
static inline const void *gaio_karg_(const void *p) { return p; }

/* Rows per chunk so that a chunk moves at least ~64 KiB: small images stay on one
 * thread, large batches spread over the pool. */
static inline size_t gaio_rows_grain(int64_t row_bytes) {
    int64_t g = row_bytes > 0 ? (65536 + row_bytes - 1) / row_bytes : 1;
    return (size_t)(g < 1 ? 1 : g);
}

#endif
