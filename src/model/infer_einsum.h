/* Einsum's shape inference (infer_einsum.c), called from ops_infer.c. */
#ifndef GAIO_MODEL_INFER_EINSUM_H
#define GAIO_MODEL_INFER_EINSUM_H

#include "model/graph.h"

/* Checks node n's equation against its two float inputs, sets the output's type and
 * shape and resolves the batched GEMM that computes it into n's attributes (es_*).
 * GAIO_ERR_NOT_SUPPORTED, naming the equation, for products one GEMM does not compute. */
gaio_status gaio__infer_einsum(const char *fn, mgraph *g, mnode *n);

#endif
