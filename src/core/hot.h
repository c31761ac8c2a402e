/* What hot-path code shares about memory: objects laid out on cache lines of their
 * own, and thread-locals read on every op. */
#ifndef GAIO_CORE_HOT_H
#define GAIO_CORE_HOT_H

#include <stdlib.h>
#include <string.h>

#define GAIO_CACHE_LINE 64

/* A zeroed object of `bytes` starting on a cache line, for structures whose members
 * are _Alignas(GAIO_CACHE_LINE) so that different threads' fields do not share a
 * line. free() releases it. NULL when out of memory. */
static inline void *gaio__calloc_lines(size_t bytes) {
    size_t rounded = (bytes + GAIO_CACHE_LINE - 1) & ~(size_t)(GAIO_CACHE_LINE - 1);
    void *p = aligned_alloc(GAIO_CACHE_LINE, rounded);
    if (p) memset(p, 0, rounded);
    return p;
}

/* Thread-locals read on every op: the initial-exec model makes each access one
 * instruction instead of a __tls_get_addr call. They are small (glibc keeps static
 * TLS to spare for libraries loaded later with dlopen, e.g. from Python). */
#if defined(__GNUC__)
#define GAIO_HOT_TLS _Thread_local __attribute__((tls_model("initial-exec")))
#else
#define GAIO_HOT_TLS _Thread_local
#endif

#endif
