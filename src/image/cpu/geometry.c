/* Host kernels of the geometry ops (placeholder table: filled by the geometry work). */
#include "image/cpu/host_kernel.h"
#include "image/cpu/tables.h"

const gaio_builtin_kernel gaio__img_geometry_kernels[] = {
    {NULL, NULL, 0, NULL},
};
