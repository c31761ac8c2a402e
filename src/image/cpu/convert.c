/* Host kernels of the convert ops (placeholder table: filled by the convert work). */
#include "image/cpu/host_kernel.h"
#include "image/cpu/tables.h"

const gaio_builtin_kernel gaio__img_convert_kernels[] = {
    {NULL, NULL, 0, NULL},
};
