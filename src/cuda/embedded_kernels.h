/* The fatbins of src/kernels, embedded at build time (cmake/embed_fatbin.cmake). */
#ifndef GAIO_CUDA_EMBEDDED_KERNELS_H
#define GAIO_CUDA_EMBEDDED_KERNELS_H

#include <stddef.h>

typedef struct gaio_embedded_fatbin {
    const char *name; /* the .cu file it came from */
    const unsigned char *data, *end; /* the fatbin's bytes: [data, end) */
} gaio_embedded_fatbin;

/* Ends with an entry whose name is NULL. */
extern const gaio_embedded_fatbin gaio__embedded_fatbins[];

#endif
