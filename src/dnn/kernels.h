/* The DNN layer's kernels: registered with the core's kernel registry once, by the
 * top of the library (src/gaio.c). */
#ifndef GAIO_DNN_KERNELS_H
#define GAIO_DNN_KERNELS_H

void gaio__dnn_register_kernels(void);

#endif
