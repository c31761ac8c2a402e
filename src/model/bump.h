/* A bump allocator for a model's small, long-lived pieces (names, index arrays): one
 * free at the end instead of one per piece, and no piece to forget on an error path.
 * Host memory only; not to be confused with an execution context's activation arena
 * (a device buffer placed by model/lifetime.c). */
#ifndef GAIO_MODEL_BUMP_H
#define GAIO_MODEL_BUMP_H

#include <stddef.h>

typedef struct gaio_bump_block gaio_bump_block;
typedef struct gaio_bump {
    gaio_bump_block *head;
} gaio_bump;

/* size bytes, zeroed, aligned for any type; NULL when out of memory (or size overflows). */
void *gaio__bump_alloc(gaio_bump *a, size_t size);
/* n elements of size each (overflow-checked), zeroed. */
void *gaio__bump_array(gaio_bump *a, size_t n, size_t size);
/* A copy of s (NULL: ""), or NULL when out of memory. */
char *gaio__bump_strdup(gaio_bump *a, const char *s);
void gaio__bump_free(gaio_bump *a);

#endif
