/* ScatterND, folded (infer_scatter.c), called from ops_infer.c. */
#ifndef GAIO_MODEL_INFER_SCATTER_H
#define GAIO_MODEL_INFER_SCATTER_H

#include "model/graph.h"

/* Checks node n and sets its output's type, shape and data; GAIO_ERR_NOT_SUPPORTED
 * where an input is computed at run time. */
gaio_status gaio__infer_scatter_nd(const char *fn, mgraph *g, mnode *n);

#endif
