/* The CUDA-backend benchmark, shared by bench/gaio_bench_cuda and `gaio bench`. */
#ifndef GAIO_BENCH_CUDA_H
#define GAIO_BENCH_CUDA_H

#include <stdio.h>

/* Runs every measurement on the first CUDA device against raw driver calls on the
 * same primary context and prints one table to `out`. Returns 0, also where there
 * is nothing to measure (it prints "no CUDA device: skipped", or "this build has no
 * CUDA backend"), or 1 when a call failed (the reason goes to stderr).
 *
 * It restarts gaio (gaio_shutdown, gaio_configure) to measure each wait policy, so
 * no gaio context may be alive in the process while it runs, and it leaves gaio
 * configured with the defaults. Call it at most once at a time per process. */
int gaio_bench_cuda_run(FILE *out);

#endif
