/* The image-op benchmark on the CUDA backend, shared by bench/gaio_bench_image and
 * `gaio bench`. */
#ifndef GAIO_BENCH_IMAGE_CUDA_H
#define GAIO_BENCH_IMAGE_CUDA_H

#include <stdio.h>

/* Times gaio_resize, gaio_preprocess and gaio_preprocess_varshape on a batch of 64
 * RGB u8 1920x1080 frames on the first CUDA device, each against its bandwidth
 * floor (the bytes the op must move over the device-to-device copy bandwidth
 * measured in the same run), NPP's batched resize (libnppig, opened at run time)
 * and PyTorch / torchvision (bench/image_torch.py), and prints one table to `out`.
 *
 * Returns 0, also where there is nothing to measure (it prints "no CUDA device:
 * skipped", or "this build has no CUDA backend") and where a peer is missing (its
 * columns read "-" or "not found"); 1 when a gaio op or a driver call failed (the
 * reason goes to stderr and under the table). Creates and releases its own
 * context; call it at most once at a time per process. */
int gaio_bench_image_cuda_run(FILE *out);

#endif
