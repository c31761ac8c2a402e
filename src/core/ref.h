/* Atomic reference counts: relaxed increments, acquire-release on the last drop. */
#ifndef GAIO_CORE_REF_H
#define GAIO_CORE_REF_H

#include <stdatomic.h>
#include <stdbool.h>

typedef struct gaio_ref {
    atomic_long n;
} gaio_ref;

static inline void gaio__ref_init(gaio_ref *r) { atomic_init(&r->n, 1); }
static inline void gaio__ref_inc(gaio_ref *r) { atomic_fetch_add_explicit(&r->n, 1, memory_order_relaxed); }
/* True when this drop was the last. */
static inline bool gaio__ref_dec(gaio_ref *r) { return atomic_fetch_sub_explicit(&r->n, 1, memory_order_acq_rel) == 1; }



/* Drops n references at once; true when they were the last. */
static inline bool gaio__ref_sub(gaio_ref *r, long n) {
    return atomic_fetch_sub_explicit(&r->n, n, memory_order_acq_rel) == n;
}

/* Takes a reference only while the object is alive (count > 0): for weak lists. */
static inline bool gaio__ref_try_inc(gaio_ref *r) {
    long n = atomic_load_explicit(&r->n, memory_order_relaxed);
    while (n > 0)
        if (atomic_compare_exchange_weak_explicit(&r->n, &n, n + 1, memory_order_acquire, memory_order_relaxed))
            return true;
    return false;
}

#endif
