/* Strided views of attention's operands (views.c): the values that only move data
 * between an attention projection and gaio_attention's q, k, v and y, read in place. */
#ifndef GAIO_MODEL_VIEWS_H
#define GAIO_MODEL_VIEWS_H

#include "model/engine_internal.h"

/* After place_values has placed every value (before the arena): turns the chains of
 * Reshape, Squeeze, Unsqueeze, Flatten, Identity, Transpose and one-index Gather whose
 * values only attention steps read (as q, k or v) into strided views of the chain's
 * first value, and an attention output that only a Transpose reads into a strided
 * view of that Transpose's output; those steps then run nothing (exec.c
 * gaio__engine_step_is_view). GAIO_MODEL_VIEWS=0 leaves them copies, to compare. */
void gaio__engine_attention_views(gaio_engine *e);

/* Step i only renames memory that views.c made a strided view. */
bool gaio__engine_step_is_view(const gaio_engine *e, int32_t i);

#endif
