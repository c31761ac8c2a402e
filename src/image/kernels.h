/* The image layer's kernels: registered with the core's kernel registry once, by the
 * top of the library (src/gaio.c). */
#ifndef GAIO_IMAGE_KERNELS_H
#define GAIO_IMAGE_KERNELS_H

void gaio__image_register_kernels(void);

#endif
