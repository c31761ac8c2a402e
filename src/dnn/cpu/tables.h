/* The DNN stage's host kernels, registered with the core's kernel registry by
 * src/dnn/kernels.c. Each table ends with an entry whose name is NULL. */
#ifndef GAIO_DNN_CPU_TABLES_H
#define GAIO_DNN_CPU_TABLES_H

#include "core/kernel_registry.h"

extern const gaio_builtin_kernel gaio__dnn_pointwise_kernels[];
extern const gaio_builtin_kernel gaio__dnn_reduce_kernels[];
extern const gaio_builtin_kernel gaio__dnn_layout_kernels[];
extern const gaio_builtin_kernel gaio__dnn_depthwise_kernels[];
extern const gaio_builtin_kernel gaio__dnn_gather_kernels[];
extern const gaio_builtin_kernel gaio__dnn_reduce_axes_kernels[];
extern const gaio_builtin_kernel gaio__dnn_convt_kernels[];
extern const gaio_builtin_kernel gaio__dnn_resize_kernels[];
extern const gaio_builtin_kernel gaio__dnn_norm_kernels[];
extern const gaio_builtin_kernel gaio__dnn_conv_fc_kernels[];
extern const gaio_builtin_kernel gaio__dnn_attention_kernels[];

#define GAIO_DNN_KERNEL_TABLES                                                                                  \
    gaio__dnn_pointwise_kernels, gaio__dnn_reduce_kernels, gaio__dnn_layout_kernels, gaio__dnn_depthwise_kernels, \
        gaio__dnn_gather_kernels, gaio__dnn_reduce_axes_kernels, gaio__dnn_convt_kernels, gaio__dnn_resize_kernels, \
        gaio__dnn_norm_kernels, gaio__dnn_conv_fc_kernels, gaio__dnn_attention_kernels

#endif
