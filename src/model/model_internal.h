/* gaio_model behind the handle: a refcount and the graph. */
#ifndef GAIO_MODEL_INTERNAL_H
#define GAIO_MODEL_INTERNAL_H

#include "core/ref.h"
#include "model/graph.h"

struct gaio_model {
    gaio_ref ref;
    mgraph g;
};

/* Parses the bytes of a ModelProto into g (g zeroed by the caller; freed by the caller
 * with gaio__graph_free on failure too). dir is the directory external data files are
 * read from, or NULL (memory: external data refused). */
gaio_status gaio__onnx_load(const char *fn, const void *data, size_t size, const char *dir, mgraph *g);
void gaio__graph_free(mgraph *g);

#endif
