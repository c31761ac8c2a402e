#include "core/prefetch.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

bool gaio__have_prefetchw;

/* At load: the flag is read on hot paths of every thread, so it is set before any. */
__attribute__((constructor)) static void detect_prefetchw(void) {
    unsigned a, b, c, d;
    gaio__have_prefetchw = __get_cpuid(0x80000001u, &a, &b, &c, &d) && (c & (1u << 8)); /* 3DNowPrefetch */
}
#else
/* ISO C wants a translation unit to declare something. */
typedef int gaio__prefetch_unused;
#endif
