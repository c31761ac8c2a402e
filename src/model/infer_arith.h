/* Integer Add, Sub, Mul and Div, and Mod, folded (infer_arith.c), called from
 * ops_infer.c. */
#ifndef GAIO_MODEL_INFER_ARITH_H
#define GAIO_MODEL_INFER_ARITH_H

#include "model/graph.h"

/* Whether node n is arithmetic that folds: Add, Sub, Mul, Div or Mod on integers
 * (always: gaio runs no integer arithmetic), or on small float constants (else they
 * run, Mod as gaio_binary's FMOD). */
bool gaio__arith_folds(const mgraph *g, const mnode *n);
/* Checks node n and sets its output's type, shape and data (numpy broadcasting);
 * GAIO_ERR_NOT_SUPPORTED where an input is computed at run time. */
gaio_status gaio__infer_arith(const char *fn, mgraph *g, mnode *n);

#endif
