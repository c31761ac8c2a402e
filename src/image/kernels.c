/* The image layer's kernels: its host tables (src/image/cpu) and its device code
 * (the .cu files of src/kernels/image, embedded as gaio__image_device_code). */
#include "image/kernels.h"

#include "core/kernel_registry.h"
#include "image/cpu/tables.h"

extern const gaio_device_code gaio__image_device_code[]; /* generated: cmake/embed_fatbin.cmake */

static const gaio_builtin_kernel *const host_tables[] = {GAIO_IMAGE_KERNEL_TABLES, NULL};

static const gaio_kernel_set image_kernels = {"image", host_tables, gaio__image_device_code};

void gaio__image_register_kernels(void) { gaio__kernels_register(&image_kernels); }
