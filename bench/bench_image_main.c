/* gaio_bench_image: the image-op benchmarks as their own program (also `gaio bench`):
 * the CPU backend against OpenCV, then the CUDA backend against its bandwidth floor,
 * NPP and PyTorch ("no CUDA device: skipped" without a GPU). */
#include <stdio.h>
#include <string.h>

#include "bench_image_cpu.h"
#include "bench_image_cuda.h"

int main(int argc, char **argv) {
    const char *only = argc > 1 ? argv[1] : "";
    if (argc > 2 || (*only && strcmp(only, "cpu") != 0 && strcmp(only, "cuda") != 0)) {
        fprintf(stderr, "usage: gaio_bench_image [cpu|cuda]   (GAIO_BENCH_PEERS=0: gaio's rows only)\n");
        return 2;
    }
    int cpu = 0, cuda = 0;
    if (strcmp(only, "cuda") != 0) cpu = gaio_bench_image_cpu_run(stdout);
    if (!*only) fputc('\n', stdout);
    if (strcmp(only, "cpu") != 0) cuda = gaio_bench_image_cuda_run(stdout);
    return cpu || cuda ? 1 : 0;
}
