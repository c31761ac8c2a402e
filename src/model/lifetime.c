/* Greedy placement by size (the heuristic of TensorFlow Lite's arena planner): big
 * tensors first, each at the lowest gap among the already placed tensors whose
 * lifetimes meet its own. O(n^2 log n) in values, which stay in the hundreds. */
#include "model/lifetime.h"

#include <stdlib.h>

typedef struct key {
    size_t a, b; /* sorting: size and index; gaps: offset and end */
} key;

static int by_size_desc(const void *p, const void *q) {
    const key *x = p, *y = q;
    if (x->a != y->a) return x->a < y->a ? 1 : -1;
    return x->b < y->b ? -1 : x->b > y->b; /* by index: the same model, the same layout */
}

static int by_offset(const void *p, const void *q) {
    const key *x = p, *y = q;
    return x->a < y->a ? -1 : x->a > y->a;
}

static size_t round_up(size_t x, size_t align) { return (x + align - 1) & ~(align - 1); }

int gaio__place_by_lifetime(mlive *v, int32_t n, size_t align, size_t *total) {
    *total = 0;
    key *order = malloc(((size_t)n + 1) * sizeof *order), *near = malloc(((size_t)n + 1) * sizeof *near);
    if (!order || !near) {
        free(order), free(near);
        return -1;
    }
    int32_t m = 0;
    for (int32_t i = 0; i < n; i++)
        if (v[i].bytes) order[m].a = v[i].bytes, order[m].b = (size_t)i, m++;
    qsort(order, (size_t)m, sizeof *order, by_size_desc);
    size_t end = 0;
    for (int32_t k = 0; k < m; k++) {
        mlive *x = &v[order[k].b];
        size_t need = round_up(x->bytes, align);
        int32_t nn = 0;
        for (int32_t j = 0; j < k; j++) { /* placed before: meets x in time? */
            const mlive *y = &v[order[j].b];
            if (y->first <= x->last && x->first <= y->last)
                near[nn].a = y->offset, near[nn].b = y->offset + round_up(y->bytes, align), nn++;
        }
        qsort(near, (size_t)nn, sizeof *near, by_offset);
        size_t at = 0;
        for (int32_t j = 0; j < nn; j++) {
            if (at + need <= near[j].a) break;
            if (near[j].b > at) at = near[j].b;
        }
        x->offset = at;
        if (at + need > end) end = at + need;
    }
    free(order), free(near);
    *total = end;
    return 0;
}
