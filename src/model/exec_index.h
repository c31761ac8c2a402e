/* The executor's indexing steps (Gather, GatherElements, Where, Pad, Slice): what they
 * take at run time, checked at build (exec_index.c). */
#ifndef GAIO_MODEL_EXEC_INDEX_H
#define GAIO_MODEL_EXEC_INDEX_H

#include <stdbool.h>

#include "model/graph.h"

/* Whether op is one of them. */
bool gaio__exec_index_op(model_op op);

/* GAIO_ERR_NOT_SUPPORTED naming node n when it needs what the executor does not give:
 * a computed Slice or Pad argument, indices that are no integers, a Gather of rank
 * above gaio_tensor's. Their data may be of any type gaio keeps (float, int32, int64,
 * bool): they only move elements. */
gaio_status gaio__exec_index_check(const char *fn, const mgraph *g, const mnode *n);

#endif
