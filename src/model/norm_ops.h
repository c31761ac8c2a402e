/* LayerNormalization, GroupNormalization and InstanceNormalization: their shape
 * inference (infer_norm.c, from ops_infer.c) and their step (exec_norm.c, from
 * exec.c), both run by gaio_norm. */
#ifndef GAIO_MODEL_NORM_OPS_H
#define GAIO_MODEL_NORM_OPS_H

#include "gaio/dnn.h"
#include "model/graph.h"

/* Checks node n's inputs (float X; Scale and B as its kind and opset take them) and
 * sets its outputs but the first (LayerNormalization's Mean and InvStdDev, when
 * present); the caller gives Y X's shape and type. */
gaio_status gaio__infer_norm(const char *fn, mgraph *g, mnode *n);

/* Runs output `out` of node n (0: Y, 1: Mean, 2: InvStdDev) into y; scale and bias may
 * be NULL (omitted). x, scale, bias and y are the values' tensors as the executor
 * holds them (any layout). */
gaio_status gaio__exec_norm(gaio_stream *s, const mnode *n, int32_t out, const gaio_tensor *x,
                            const gaio_tensor *scale, const gaio_tensor *bias, const gaio_tensor *y);

#endif
