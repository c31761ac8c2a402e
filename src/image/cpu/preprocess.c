/* Host kernels of the preprocess ops (placeholder table: filled by the preprocess work). */
#include "image/cpu/host_kernel.h"
#include "image/cpu/tables.h"

const gaio_builtin_kernel gaio__img_preprocess_kernels[] = {
    {NULL, NULL, 0, NULL},
};
