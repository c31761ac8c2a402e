/* gaio — ONNX models: load once, plan for a device, run asynchronously.
 *
 * A gaio_model is an ONNX file parsed and checked: every operator and attribute gaio
 * runs, every tensor's type and shape, the graph acyclic and complete. Anything gaio
 * cannot run is refused at load time with GAIO_ERR_NOT_SUPPORTED naming the node and
 * its operator; a malformed or hostile file is GAIO_ERR_INVALID_ARG saying what is
 * wrong, and never read out of bounds.
 *
 * Status: loading and inspection are built; planning and running (the execution
 * contexts of TensorRT's engine / context split) come next and answer
 * GAIO_ERR_NOT_IMPLEMENTED until then. */
#ifndef GAIO_MODEL_H
#define GAIO_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "gaio/dnn.h"
#include "gaio/status.h"
#include "gaio/types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gaio_model gaio_model;

#define GAIO_MODEL_MAX_NDIM 8

/* A graph input's or output's description. A dimension of -1 is symbolic (a batch
 * given at planning time); dim_names holds its name ("batch"), or "" for a fixed one. */
typedef struct gaio_model_io {
    const char *name;
    gaio_dtype dtype; /* F32 or F16 (other element types are refused at load) */
    int32_t ndim;
    int64_t shape[GAIO_MODEL_MAX_NDIM];
    const char *dim_names[GAIO_MODEL_MAX_NDIM];
} gaio_model_io;

/* What a loaded model holds, for inspection and tests. */
typedef struct gaio_model_summary {
    int64_t ir_version, opset; /* the default domain's opset */
    int32_t inputs, outputs;   /* graph inputs that are not initializers */
    int32_t nodes;             /* after folding Constant and shape-only chains */
    int32_t initializers;      /* weights, including folded constants */
    size_t weight_bytes;       /* bytes of all initializers */
    const char *producer;      /* producer_name and version, "" if absent */
} gaio_model_summary;

/* Parses and checks an ONNX model from a file (external data files are read from its
 * directory, and must stay inside it) or from memory (external data then refused).
 * The model is host data, shared by any number of contexts; release it with
 * gaio_model_release. */
gaio_status gaio_model_load(const char *path, gaio_model **out);
gaio_status gaio_model_load_memory(const void *data, size_t size, gaio_model **out);
gaio_status gaio_model_retain(gaio_model *m);
gaio_status gaio_model_release(gaio_model *m);

gaio_status gaio_model_summarize(const gaio_model *m, gaio_model_summary *out);
/* The i-th graph input / output; strings live as long as the model. */
gaio_status gaio_model_input(const gaio_model *m, int32_t i, gaio_model_io *out);
gaio_status gaio_model_output(const gaio_model *m, int32_t i, gaio_model_io *out);

/* The i-th node (in a topological order) for inspection: its name (or "") and ONNX
 * operator. */
gaio_status gaio_model_node(const gaio_model *m, int32_t i, const char **name, const char **op_type);

#ifdef __cplusplus
}
#endif
#endif
