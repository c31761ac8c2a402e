#ifndef GAIO_CORE_CLOCK_H
#define GAIO_CORE_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t gaio__now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Seconds on the same clock, for timings that are printed. */
static inline double gaio__now_s(void) { return (double)gaio__now_ns() * 1e-9; }

/* The CLOCK_MONOTONIC deadline timeout_ns from now, saturating. */
static inline struct timespec gaio__deadline(int64_t timeout_ns) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t max_add = INT64_MAX / 2;
    if (timeout_ns > max_add) timeout_ns = max_add;
    ts.tv_sec += (time_t)(timeout_ns / 1000000000);
    ts.tv_nsec += (long)(timeout_ns % 1000000000);
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec += 1;
        ts.tv_nsec -= 1000000000;
    }
    return ts;
}

#endif
