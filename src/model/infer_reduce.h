/* Shape inference of the reductions (ReduceMax .. ReduceLogSumExp, ReduceMean), ArgMax,
 * ArgMin and TopK (infer_reduce.c), called from ops_infer.c. */
#ifndef GAIO_MODEL_INFER_REDUCE_H
#define GAIO_MODEL_INFER_REDUCE_H

#include "model/graph.h"

/* Checks node n (a float input; axes, K constants) and sets its outputs' type and shape;
 * resolves the reduced axes (reduce_mask), the axis (non-negative) and K (topk_k) into
 * n's attributes. */
gaio_status gaio__infer_reduce(const char *fn, mgraph *g, mnode *n);

#endif
