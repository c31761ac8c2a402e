/* gaio_bench_image: the image-op benchmarks as their own program (also `gaio bench`):
 * the CPU backend against OpenCV, then the CUDA backend against its bandwidth floor,
 * NPP and PyTorch ("no CUDA device: skipped" without a GPU). */
#include <stdio.h>

#include "bench_image_cpu.h"
#include "bench_image_cuda.h"

int main(void) {
    int cpu = gaio_bench_image_cpu_run(stdout);
    fputc('\n', stdout);
    int cuda = gaio_bench_image_cuda_run(stdout);
    return cpu || cuda ? 1 : 0;
}
