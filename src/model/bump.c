/* The bump allocator: blocks of at least 64 KiB, larger pieces in blocks of their own. */
#include "model/bump.h"

#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK ((size_t)64 << 10)

struct gaio_bump_block {
    gaio_bump_block *next;
    size_t used, size;
    alignas(max_align_t) unsigned char data[];
};

void *gaio__bump_alloc(gaio_bump *a, size_t size) {
    size_t al = alignof(max_align_t);
    if (size > SIZE_MAX / 2) return NULL;
    size = (size + al - 1) / al * al;
    if (!size) size = al;
    gaio_bump_block *b = a->head;
    if (!b || b->size - b->used < size) {
        size_t cap = size > BLOCK ? size : BLOCK;
        b = malloc(sizeof *b + cap);
        if (!b) return NULL;
        b->used = 0, b->size = cap;
        /* A block of its own for a large piece goes behind the head, so that the head's
         * free space stays in use. */
        if (a->head && cap > BLOCK) {
            b->next = a->head->next;
            a->head->next = b;
        } else {
            b->next = a->head;
            a->head = b;
        }
    }
    void *p = b->data + b->used;
    b->used += size;
    memset(p, 0, size);
    return p;
}

void *gaio__bump_array(gaio_bump *a, size_t n, size_t size) {
    if (size && n > SIZE_MAX / size) return NULL;
    return gaio__bump_alloc(a, n * size);
}

char *gaio__bump_strdup(gaio_bump *a, const char *s) {
    if (!s) s = "";
    size_t n = strlen(s) + 1;
    char *p = gaio__bump_alloc(a, n);
    if (p) memcpy(p, s, n);
    return p;
}

void gaio__bump_free(gaio_bump *a) {
    while (a->head) {
        gaio_bump_block *b = a->head;
        a->head = b->next;
        free(b);
    }
}
