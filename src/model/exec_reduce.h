/* The steps of the reductions, ArgMax, ArgMin, TopK, Softmax and LogSoftmax
 * (exec_reduce.c), called from exec.c's run_step. x is the node's input tensor and y
 * the step's output tensor as exec.c describes values (xskip: leading dimensions of 1
 * it dropped from the input's rank). */
#ifndef GAIO_MODEL_EXEC_REDUCE_H
#define GAIO_MODEL_EXEC_REDUCE_H

#include <stdbool.h>

#include "gaio/dnn.h"
#include "model/graph.h"

/* Reduce*, ArgMax, ArgMin; TopK's values, or its indices when `indices`. */
gaio_status gaio__exec_reduce(const char *fn, gaio_stream *s, const mnode *n, const gaio_tensor *x, int32_t xskip,
                              const gaio_tensor *y, bool indices);

/* Softmax and LogSoftmax on any axis, opset < 13's flattened trailing dimensions too. */
gaio_status gaio__exec_softmax(const char *fn, gaio_stream *s, const mnode *n, const gaio_tensor *x, int32_t xskip,
                               const gaio_tensor *y);

#endif
