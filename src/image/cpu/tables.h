/* The host kernels of the image ops, one table per family (src/image/cpu/<family>.c);
 * src/image/kernels.c registers them with the core's kernel registry. The CUDA twins
 * of the same names live in src/kernels/image/<family>.cu. */
#ifndef GAIO_IMAGE_CPU_TABLES_H
#define GAIO_IMAGE_CPU_TABLES_H

#include "core/kernel_registry.h"

extern const gaio_builtin_kernel gaio__img_resize_kernels[];
extern const gaio_builtin_kernel gaio__img_geometry_kernels[];
extern const gaio_builtin_kernel gaio__img_color_kernels[];
extern const gaio_builtin_kernel gaio__img_convert_kernels[];
extern const gaio_builtin_kernel gaio__img_preprocess_kernels[];

#define GAIO_IMAGE_KERNEL_TABLES                                                                       \
    gaio__img_resize_kernels, gaio__img_geometry_kernels, gaio__img_color_kernels, gaio__img_convert_kernels, \
        gaio__img_preprocess_kernels

#endif
