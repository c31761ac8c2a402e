/* gaio_model behind the handle: a refcount and the graph. */
#ifndef GAIO_MODEL_INTERNAL_H
#define GAIO_MODEL_INTERNAL_H

#include "core/ref.h"
#include "model/graph.h"

struct gaio_model {
    gaio_ref ref;
    mgraph g;
    gaio_model *parent; /* a model of concrete shapes (shapes.c): the loaded one, whose names and weights it reads */
};

/* Parses the bytes of a ModelProto into g (g zeroed by the caller; freed by the caller
 * with gaio__graph_free on failure too). dir is the directory external data files are
 * read from, or NULL (memory: external data refused). */
gaio_status gaio__onnx_load(const char *fn, const void *data, size_t size, const char *dir, mgraph *g);
void gaio__graph_free(mgraph *g);
/* Drops the nodes whose outputs all became constants: they never run. */
gaio_status gaio__graph_drop_folded(const char *fn, mgraph *g);

/* Whether a graph input has a symbolic dimension (the batch included): a graph whose
 * inference stops at one waits for an engine's shapes (mgraph.deferred). */
bool gaio__graph_deferrable(const mgraph *g);
/* A model of m's graph inferred again with graph input i of shape dims[i] (every
 * dimension given): a new reference in *out, holding one on m. */
gaio_status gaio__model_concretize(const char *fn, gaio_model *m, int64_t (*dims)[GAIO_MODEL_MAX_NDIM],
                                   gaio_model **out);

/* The whole regular file at path into *data (malloc'd) and *size, for public function
 * fn: GAIO_ERR_NOT_FOUND when there is none, GAIO_ERR_NOT_SUPPORTED (saying too_large)
 * beyond max bytes, GAIO_ERR_SYSTEM / _INVALID_ARG / _NO_MEMORY otherwise. */
gaio_status gaio__read_file(const char *fn, const char *path, size_t max, const char *too_large, void **data,
                            size_t *size);

#endif
