/* Fetching a cache line for writing before the store that needs it. A line the other
 * side of a hand-off (the completion engine, a worker) last read or wrote is shared or
 * owned by that core: a store to it waits for the line, and the next locked
 * instruction (a mutex's unlock) waits for that store. Asked for ahead of a driver
 * call, the line arrives while the call runs.
 * __builtin_prefetch(p, 1, ...) is a read prefetch on x86 unless the build targets
 * PREFETCHW, and a line that arrives shared still costs the store a second trip.
 * PREFETCHW fetches it for writing; every x86-64 CPU of the last decade has it, and
 * CPUID says (gaio__have_prefetchw, set when the library loads). */
#ifndef GAIO_CORE_PREFETCH_H
#define GAIO_CORE_PREFETCH_H

#include <stdbool.h>

#if defined(__x86_64__) || defined(__i386__)
extern bool gaio__have_prefetchw;
static inline void gaio__prefetch_for_write(const void *p) {
    if (gaio__have_prefetchw) __asm__ volatile("prefetchw %0" : : "m"(*(const char *)p));
    else __builtin_prefetch(p, 1, 3);
}
#else
static inline void gaio__prefetch_for_write(const void *p) { __builtin_prefetch(p, 1, 3); }
#endif

#endif
