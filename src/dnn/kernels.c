/* The DNN layer's kernels: its host tables (src/dnn/cpu) and its device code
 * (the .cu files of src/kernels/dnn, embedded as gaio__dnn_device_code). */
#include "dnn/kernels.h"

#include "core/kernel_registry.h"
#include "dnn/cpu/tables.h"

extern const gaio_device_code gaio__dnn_device_code[]; /* generated: cmake/embed_fatbin.cmake */

static const gaio_builtin_kernel *const host_tables[] = {GAIO_DNN_KERNEL_TABLES, NULL};

static const gaio_kernel_set dnn_kernels = {"dnn", host_tables, gaio__dnn_device_code};

void gaio__dnn_register_kernels(void) { gaio__kernels_register(&dnn_kernels); }
