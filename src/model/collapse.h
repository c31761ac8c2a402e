/* Transposes of more dimensions than gaio_tensor holds, collapsed (collapse.c). */
#ifndef GAIO_MODEL_COLLAPSE_H
#define GAIO_MODEL_COLLAPSE_H

#include <stdint.h>

/* The same permutation of a packed row-major tensor of dims[0..r) (out dimension i is
 * in dimension perm[i]) over fewer dimensions: sizes of 1 dropped, and input
 * dimensions that stay neighbours in the output's order merged. Writes the collapsed
 * input's dims and the permutation (cdims, cperm: r entries of room); returns the
 * collapsed rank (at least 1). */
int32_t gaio__transpose_collapse(const int64_t *dims, int32_t r, const int64_t *perm, int64_t *cdims, int32_t *cperm);

#endif
