/* A bump allocator for a model's small, long-lived pieces (names, index arrays): one
 * free at the end instead of one per piece, and no piece to forget on an error path. */
#ifndef GAIO_MODEL_ARENA_H
#define GAIO_MODEL_ARENA_H

#include <stddef.h>

typedef struct gaio_arena_block gaio_arena_block;
typedef struct gaio_arena {
    gaio_arena_block *head;
} gaio_arena;

/* size bytes, zeroed, aligned for any type; NULL when out of memory (or size overflows). */
void *gaio__arena_alloc(gaio_arena *a, size_t size);
/* n elements of size each (overflow-checked), zeroed. */
void *gaio__arena_array(gaio_arena *a, size_t n, size_t size);
/* A copy of s (NULL: ""), or NULL when out of memory. */
char *gaio__arena_strdup(gaio_arena *a, const char *s);
void gaio__arena_free(gaio_arena *a);

#endif
