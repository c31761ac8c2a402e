/* The CPU-backend benchmark, shared by bench/gaio_bench_cpu and `gaio bench`. */
#ifndef GAIO_BENCH_CPU_H
#define GAIO_BENCH_CPU_H

#include <stdio.h>

/* Runs every measurement and prints one table to `out`. Returns 0, or 1 when a
 * call failed (the reason goes to stderr). Creates and releases its own context;
 * call it at most once at a time per process. */
int gaio_bench_cpu_run(FILE *out);

#endif
