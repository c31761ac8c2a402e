/* Host kernels of the color ops (placeholder table: filled by the color work). */
#include "image/cpu/host_kernel.h"
#include "image/cpu/tables.h"

const gaio_builtin_kernel gaio__img_color_kernels[] = {
    {NULL, NULL, 0, NULL},
};
