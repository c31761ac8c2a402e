/* gaio — ONNX models: load once, plan for a device, run asynchronously.
 *
 * A gaio_model is an ONNX file parsed and checked: every operator and attribute gaio
 * runs, every tensor's type and shape, the graph acyclic and complete. Anything gaio
 * cannot run is refused at load time with GAIO_ERR_NOT_SUPPORTED naming the node and
 * its operator; a malformed or hostile file is GAIO_ERR_INVALID_ARG saying what is
 * wrong, and never read out of bounds.
 *
 * Running follows TensorRT's engine / execution-context split: the model is shared;
 * an execution context (gaio_model_exec) holds what one device needs to run it at one
 * batch size (weights uploaded once, a buffer per intermediate), and gaio_model_run
 * enqueues an inference on any stream of its context, returning at once.
 *
 * Status: the executor runs the planned steps as DNN ops (dnn.h) with one buffer per
 * value; an arena reused by lifetime and CUDA-graph replay come next. */
#ifndef GAIO_MODEL_H
#define GAIO_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "gaio/dnn.h"
#include "gaio/future.h"
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

/* ---- running ---------------------------------------------------------------- */

typedef struct gaio_model_exec gaio_model_exec;

typedef enum gaio_model_precision {
    GAIO_MODEL_PRECISION_AUTO = 0,  /* f16 on a GPU, the model's own on the host */
    GAIO_MODEL_PRECISION_MODEL = 1, /* the model's (f32 for an f32 model) */
    GAIO_MODEL_PRECISION_F16 = 2
} gaio_model_precision;

typedef enum gaio_model_layout {
    GAIO_MODEL_LAYOUT_AUTO = 0, /* NHWC: what cuDNN's fused engines and oneDNN run fastest */
    GAIO_MODEL_LAYOUT_NCHW = 1,
    GAIO_MODEL_LAYOUT_NHWC = 2
} gaio_model_layout;

typedef struct gaio_model_exec_options {
    int64_t batch; /* the model's symbolic dimensions' value (ignored when it has none) */
    gaio_model_precision precision; /* of weights and intermediates; inputs and outputs keep the model's */
    gaio_model_layout layout;       /* of 4-D intermediates and convolution weights */
} gaio_model_exec_options;

/* Makes an execution context of m on ctx's device: plans the graph (batch norms folded
 * into convolutions, convolution + residual add + ReLU / Clip fused into one op),
 * uploads the weights in the chosen precision and layout in one buffer (blocking until
 * they are on the device), places the intermediates in one arena by lifetime, times
 * cuDNN's candidates for every convolution, and on CUDA captures the layers once into
 * a CUDA graph that every run replays (GAIO_MODEL_CUDA_GRAPH=0: no graph; the layers
 * are enqueued one by one). Holds references to m and ctx. gaio_model_exec_create is
 * the _ex form with AUTO precision and layout. */
gaio_status gaio_model_exec_create_ex(gaio_model *m, gaio_context *ctx, const gaio_model_exec_options *options,
                                      gaio_model_exec **out);
gaio_status gaio_model_exec_create(gaio_model *m, gaio_context *ctx, int64_t batch, gaio_model_exec **out);
/* With a CUDA graph, waits for the exec's last run to finish (the graph and its
 * scratch memory go with the exec); otherwise returns at once, runs in flight holding
 * what they use. */
gaio_status gaio_model_exec_release(gaio_model_exec *e);

/* Enqueues one inference on stream (of the exec's context) and returns: inputs[i]
 * feeds graph input i, outputs[i] receives graph output i; each of the model's dtype
 * and shape (the batch resolved), packed row major. Consecutive runs of one exec on
 * different streams are ordered by an event (they share the intermediates): for
 * runs in parallel, make one exec per stream. done (may be NULL) receives a future
 * that completes when the outputs are written. Every argument is checked before
 * anything is enqueued. */
gaio_status gaio_model_run(gaio_model_exec *e, gaio_stream *stream, const gaio_tensor *inputs, int32_t ninputs,
                           const gaio_tensor *outputs, int32_t noutputs, gaio_future **done);

#ifdef __cplusplus
}
#endif
#endif
