/* The host convolution without oneDNN (src/dnn/cpu/conv_gemm.c): what gaio_conv2d runs
 * on a CPU context when oneDNN cannot be loaded (or GAIO_DNN_NO_ONEDNN=1 says to act as
 * if it could not), and when oneDNN has no implementation for a problem. It takes every
 * problem gaio_conv2d accepts: any strides, groups, dilation, padding, f32 and f16
 * (computed in f32), bias, residual (also y itself) and activation.
 *
 * Paths, in order:
 *   depthwise (groups == C == K)  gaio's depthwise host kernel (src/dnn/cpu/depthwise.c)
 *   OpenBLAS loads                im2col tiles (or x itself for a 1x1 convolution that
 *                                 needs none) times the packed weights, one sgemm each
 *   otherwise                     the same tiles through gaio's own GEMM loop
 * GAIO_DNN_CONV_NO_BLAS=1 takes the last path even where OpenBLAS loads (tests). */
#ifndef GAIO_DNN_CPU_CONV_GEMM_H
#define GAIO_DNN_CPU_CONV_GEMM_H

#include <stddef.h>

#include "dnn/dnn_internal.h"

/* Runs the checked convolution a on the calling worker, split over the worker pool. */
gaio_status gaio__conv_gemm(const gaio__conv_args *a);

/* Names the path gaio__conv_gemm takes for a ("gaio im2col + OpenBLAS sgemm", ...),
 * for gaio_conv2d_info.engine. May load OpenBLAS. */
void gaio__conv_gemm_engine(const gaio__conv_args *a, char *out, size_t size);

#endif
