/* gemm_cuda.c's per-stream cache of cuBLASLt plans (descriptors, layouts and the
 * algorithm the heuristic picked), one per GEMM shape. */
#ifndef GAIO_DNN_CUDA_GEMM_PLANS_H
#define GAIO_DNN_CUDA_GEMM_PLANS_H

#include "dnn/cuda/dnn_state.h"

void gaio__gemm_plans_free(dnn_stream_state *s);

#endif
