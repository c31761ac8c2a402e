/* gaio_bench_cpu: the CPU-backend benchmark as its own program (also `gaio bench`). */
#include <stdio.h>

#include "bench_cpu.h"

int main(void) { return gaio_bench_cpu_run(stdout); }
