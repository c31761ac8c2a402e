/* ConvTranspose's shape inference (infer_conv_transpose.c), for ops_infer.c's switch. */
#ifndef GAIO_MODEL_INFER_CONV_TRANSPOSE_H
#define GAIO_MODEL_INFER_CONV_TRANSPOSE_H

#include "model/graph.h"

/* Checks node n's inputs (x [N, C, H, W], w [C, K / group, R, S], bias [K]) and writes
 * its output's dims into out (out[0] is x's batch, maybe symbolic: then *batch_name
 * is its name). output_shape and auto_pad become explicit pads (ONNX's rules; they may
 * be negative), so that the planner and the executor see those only. */
gaio_status gaio__infer_conv_transpose(const char *fn, mgraph *g, mnode *n, int64_t out[4], const char **batch_name);

#endif
