/* oneDNN's deconvolution for the host transposed convolution
 * (src/dnn/cpu/conv_transpose_onednn.c). */
#ifndef GAIO_DNN_CPU_CONV_TRANSPOSE_ONEDNN_H
#define GAIO_DNN_CPU_CONV_TRANSPOSE_ONEDNN_H

#include <stddef.h>

#include "dnn/dnn_internal.h"

/* Runs a through oneDNN on the calling thread. GAIO_ERR_NOT_SUPPORTED, with nothing
 * written, where oneDNN is not there (not installed, switched off by
 * GAIO_DNN_NO_ONEDNN, a build without its headers) or takes no such problem: the
 * caller then runs its own loop. */
gaio_status gaio__convt_onednn(const gaio__convt_args *a);

/* Makes (or finds) the primitive and names its implementation in impl;
 * GAIO_ERR_NOT_SUPPORTED as above. */
gaio_status gaio__convt_onednn_prepare(const gaio__convt_args *a, char *impl, size_t size);

#endif
