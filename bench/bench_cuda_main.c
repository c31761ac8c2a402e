/* gaio_bench_cuda: the CUDA-backend benchmark as its own program (also `gaio bench`). */
#include <stdio.h>

#include "bench_cuda.h"

int main(void) { return gaio_bench_cuda_run(stdout); }
