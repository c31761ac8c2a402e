/* Activation memory by lifetime: values whose live ranges do not overlap share bytes
 * of one arena. A value is live from the step that writes it to the last step that
 * reads it, both included (so a step's output never shares with its own inputs). */
#ifndef GAIO_MODEL_LIFETIME_H
#define GAIO_MODEL_LIFETIME_H

#include <stddef.h>
#include <stdint.h>

typedef struct mlive {
    size_t bytes;        /* 0: takes no memory */
    int32_t first, last; /* steps, first <= last */
    size_t offset;       /* out: from the arena's start, a multiple of `align` */
} mlive;

/* Places n values (largest first, each at the lowest offset clear of the live ones it
 * overlaps in time) and returns the arena's size in *total. align is a power of two.
 * Fails (-1) only when out of host memory. */
int gaio__place_by_lifetime(mlive *v, int32_t n, size_t align, size_t *total);

#endif
