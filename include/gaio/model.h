/* gaio — ONNX models: load once, build an engine for a device, run many contexts.
 *
 * A gaio_model is an ONNX file parsed and checked: every operator and attribute gaio
 * runs, every tensor's type and shape, the graph acyclic and complete. Anything gaio
 * cannot run is refused at load time with GAIO_ERR_NOT_SUPPORTED naming the node and
 * its operator; a malformed or hostile file is GAIO_ERR_INVALID_ARG saying what is
 * wrong, and never read out of bounds.
 *
 * Running follows TensorRT's builder -> engine -> execution context split:
 * - a gaio_engine is the model built for one context's device with its options
 *   (precision, layout, the inputs' shapes): the plan (batch norms folded, epilogues
 *   fused, the activation arena's size), the tuned convolution plans, and the weights
 *   on the device in their final precision and layout. Built once (gaio_engine_build,
 *   or gaio_engine_build_async off the caller's thread), saved to a file and loaded
 *   back without the ONNX model or the tuning (gaio_engine_save / _load).
 * - a gaio_model_exec is an execution context of an engine: its own activation
 *   arena, CUDA graph, event and library scratch; the weights and plans are the
 *   engine's. Making one is cheap. Runs of different contexts run at the same time
 *   on their streams; runs of one context are ordered.
 * gaio_model_run enqueues an inference on any stream of the engine's context and
 * returns at once with a future. */
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
    gaio_dtype dtype; /* F32 or F16; S32, S64 or U8 (bool) for indices and masks (others are refused at load) */
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

/* One operator of the default ONNX domain that gaio loads: its name, the opsets gaio
 * takes it in (its first in ONNX, or gaio's oldest, to its last or gaio's newest), and
 * whether it only folds to constants at load (shape arithmetic: a model needing it at
 * run time is refused). The README's operator table is printed from these. */
typedef struct gaio_model_operator {
    const char *name;
    int32_t first_opset, last_opset;
    int32_t folds_only;
} gaio_model_operator;

/* The i-th operator (0, 1, ... in gaio's own order): GAIO_ERR_INVALID_ARG past the last,
 * GAIO_ERR_NOT_SUPPORTED in a libgaio built without ONNX. */
gaio_status gaio_model_operator_info(int32_t i, gaio_model_operator *out);

/* ---- engines ------------------------------------------------------------------ */

typedef struct gaio_engine gaio_engine;
typedef struct gaio_model_exec gaio_model_exec;

typedef enum gaio_model_precision {
    GAIO_MODEL_PRECISION_AUTO = 0,  /* f16 on a GPU, the model's own on the host */
    GAIO_MODEL_PRECISION_MODEL = 1, /* the model's (f32 for an f32 model) */
    GAIO_MODEL_PRECISION_F16 = 2,
    /* f16 with cuDNN's f16-accumulating convolution engines allowed as well (PyTorch's
     * f16 default; gaio_conv2d_params.f16_accumulation): faster where short sums
     * dominate, less precise. The host computes as for F16. */
    GAIO_MODEL_PRECISION_F16_FAST = 3
} gaio_model_precision;

typedef enum gaio_model_layout {
    GAIO_MODEL_LAYOUT_AUTO = 0, /* NHWC: what cuDNN's fused engines and oneDNN run fastest */
    GAIO_MODEL_LAYOUT_NCHW = 1,
    GAIO_MODEL_LAYOUT_NHWC = 2
} gaio_model_layout;

/* One graph input's shape for a build: every dimension, the symbolic ones given a
 * value (fixed ones must match the model). With min_dims and max_dims (TensorRT's
 * optimization profile; both all 0: none), the engine is built for dims and its
 * execution contexts may be set to any shape between them (gaio_model_exec_set_shapes).
 * For gaio_model_exec_set_shapes, only name, ndim and dims are read. */
typedef struct gaio_engine_shape {
    const char *name; /* the graph input's name */
    int32_t ndim;
    int64_t dims[GAIO_MODEL_MAX_NDIM];     /* the shape built for (a profile's opt) */
    int64_t min_dims[GAIO_MODEL_MAX_NDIM]; /* optional: the smallest each dimension may be */
    int64_t max_dims[GAIO_MODEL_MAX_NDIM]; /* optional: the largest */
} gaio_engine_shape;

/* Flags of gaio_engine_options. */
enum {
    GAIO_ENGINE_NO_TUNE = 1u << 0,       /* cuDNN's first plan per convolution, untimed: a faster build */
    GAIO_ENGINE_NO_CUDA_GRAPH = 1u << 1  /* contexts enqueue the layers one by one (also GAIO_MODEL_CUDA_GRAPH=0) */
};

/* Zero-initialise, then set what differs from the defaults. */
typedef struct gaio_engine_options {
    int64_t batch;                   /* the symbolic dimensions' value where shapes gives none */
    gaio_model_precision precision;  /* of weights and intermediates; inputs and outputs keep the model's */
    gaio_model_layout layout;        /* of 4-D intermediates and convolution weights */
    const gaio_engine_shape *shapes; /* optional: inputs' shapes, each input at most once */
    int32_t nshapes;
    uint32_t flags;                  /* GAIO_ENGINE_* */
} gaio_engine_options;

/* Builds m for ctx's device: checks that the executor runs every node, plans the
 * graph (batch norms folded into convolutions, convolution + residual add + ReLU /
 * Clip fused into one op; a MatMul's scales, transpose, bias, residual and activation
 * into its GEMM; exported GELU as one op; on f16 GPU engines attention as one
 * gaio_attention; copies that only rename dimensions as views: src/model/plan.h),
 * converts the weights to the chosen precision and layout and
 * uploads them in one buffer, sizes the activation arena by lifetime, and plans every
 * convolution (cuDNN's candidates timed, the fastest kept). Blocks until done (seconds
 * on a GPU). The engine holds references to m and ctx. */
gaio_status gaio_engine_build(gaio_model *m, gaio_context *ctx, const gaio_engine_options *options,
                              gaio_engine **out);

/* The same, off the caller's thread: returns at once with the engine in *out and a
 * future in *built that completes (with the build's status and message) when it is
 * ready. Every call on a building engine first waits for the build; a failed build
 * makes them return its status and message. Releasing the engine while it builds is
 * safe (the build finishes, then the engine goes). Arguments are checked before the
 * build starts. */
gaio_status gaio_engine_build_async(gaio_model *m, gaio_context *ctx, const gaio_engine_options *options,
                                    gaio_engine **out, gaio_future **built);

gaio_status gaio_engine_retain(gaio_engine *e);
gaio_status gaio_engine_release(gaio_engine *e);

/* What a built engine holds. */
typedef struct gaio_engine_info {
    int64_t batch;               /* the symbolic dimensions' value (0 when the model has none) */
    gaio_dtype dtype;            /* of the weights and intermediates (F16 or F32) */
    gaio_model_layout layout;    /* NCHW or NHWC */
    size_t weight_bytes;         /* on the device, once per engine */
    size_t arena_bytes;          /* activations: one arena per execution context */
    int32_t nodes, steps;        /* the model's nodes; the steps they became */
    int32_t folded_bn;           /* batch norms folded into convolutions */
    int32_t fused_add;           /* adds fused: convolutions' residuals, MatMuls' biases and residuals */
    int32_t fused_act;           /* activations fused into convolutions and MatMuls, GELU chains made one op */
    int32_t convs;               /* convolution steps */
    int32_t cuda_graph;          /* contexts replay one CUDA graph per run */
    int32_t loaded;              /* 1: from gaio_engine_load, 0: built */
    double build_seconds;        /* the build's (or the load's) wall time */
    int32_t f16_accumulation;    /* built with GAIO_MODEL_PRECISION_F16_FAST */
} gaio_engine_info;

gaio_status gaio_engine_get_info(gaio_engine *e, gaio_engine_info *out);

/* The engine's model: the graph's inputs and outputs (gaio_model_input / _output),
 * its nodes. A borrowed pointer, valid while the engine is. An engine loaded from a
 * file has a model too (no weights of its own: gaio_model_summarize reports the
 * graph). */
gaio_status gaio_engine_model(gaio_engine *e, gaio_model **out);

/* The i-th graph input / output with the engine's shapes (nothing symbolic). */
gaio_status gaio_engine_input(gaio_engine *e, int32_t i, gaio_model_io *out);
gaio_status gaio_engine_output(gaio_engine *e, int32_t i, gaio_model_io *out);

/* A step of the plan, for tools (`gaio model`) and tests. */
typedef struct gaio_engine_step {
    const char *name;  /* the first node's name ("" when the file gave none) */
    char ops[96];      /* the ONNX operators it runs: "Conv+BatchNormalization+Add+Relu" */
    char kernel[96];   /* what runs a convolution: cuDNN's engine, "gaio depthwise", oneDNN's; else "" */
} gaio_engine_step;

gaio_status gaio_engine_get_step(gaio_engine *e, int32_t i, gaio_engine_step *out);

/* Writes the engine to path: a versioned file with everything the build decided (the
 * graph and plan, cuDNN's serialized plans, the weights in their final form), checked
 * on load against gaio's version, the GPU model and the cuDNN version. Written to a
 * temporary file beside path and renamed over it: a reader never sees half a file. */
gaio_status gaio_engine_save(gaio_engine *e, const char *path);

/* Reads an engine file for ctx (whose device must be the GPU model it was built on,
 * with the same cuDNN version): no ONNX model and no tuning needed. A truncated,
 * corrupted or mismatched file is GAIO_ERR_INVALID_ARG (GAIO_ERR_NOT_SUPPORTED for
 * another device, gaio or cuDNN version) saying what is wrong. */
gaio_status gaio_engine_load(const char *path, gaio_context *ctx, gaio_engine **out);
gaio_status gaio_engine_load_memory(const void *data, size_t size, gaio_context *ctx, gaio_engine **out);

/* ---- execution contexts ----------------------------------------------------------- */

/* A new execution context of e: its activation arena, and on CUDA a CUDA graph of the
 * layers captured once on a private stream (GAIO_MODEL_CUDA_GRAPH=0 or the engine's
 * GAIO_ENGINE_NO_CUDA_GRAPH: none; the layers are enqueued one by one). Holds a
 * reference to e. */
gaio_status gaio_engine_create_exec(gaio_engine *e, gaio_model_exec **out);

/* The engine of an execution context (borrowed, valid while x is). */
gaio_status gaio_model_exec_engine(gaio_model_exec *x, gaio_engine **out);

/* Shorthand: builds an engine of m (blocking) and makes one context of it, which
 * holds the engine. gaio_model_exec_create is the _ex form with AUTO precision and
 * layout. */
typedef struct gaio_model_exec_options {
    int64_t batch; /* the model's symbolic dimensions' value (ignored when it has none) */
    gaio_model_precision precision;
    gaio_model_layout layout;
} gaio_model_exec_options;

gaio_status gaio_model_exec_create_ex(gaio_model *m, gaio_context *ctx, const gaio_model_exec_options *options,
                                      gaio_model_exec **out);
gaio_status gaio_model_exec_create(gaio_model *m, gaio_context *ctx, int64_t batch, gaio_model_exec **out);

/* Sets the input shapes x's runs take, within its engine's profile (gaio_engine_shape's
 * min_dims / max_dims; inputs not named keep theirs): every dimension between its min
 * and max, else GAIO_ERR_INVALID_ARG naming the input, the dimension and the range; an
 * engine built without a profile takes only its own shapes. The engine for a new
 * combination of shapes is built the first time one of its contexts is set to it
 * (blocking: seconds on a GPU, the build options of the engine), and kept by the engine
 * for its other contexts; each context makes its own execution context of it. Setting
 * the engine's own shapes goes back to it. Not while runs of x are being enqueued from
 * another thread. */
gaio_status gaio_model_exec_set_shapes(gaio_model_exec *x, const gaio_engine_shape *shapes, int32_t nshapes);

/* The i-th graph input / output with the shapes x is set to (its engine's, until
 * gaio_model_exec_set_shapes). */
gaio_status gaio_model_exec_input(gaio_model_exec *x, int32_t i, gaio_model_io *out);
gaio_status gaio_model_exec_output(gaio_model_exec *x, int32_t i, gaio_model_io *out);

/* With a CUDA graph, waits for the context's last run to finish (the graph and its
 * scratch memory go with it); otherwise returns at once, runs in flight holding what
 * they use. */
gaio_status gaio_model_exec_release(gaio_model_exec *x);

/* Enqueues one inference on stream (of the engine's context) and returns: inputs[i]
 * feeds graph input i, outputs[i] receives graph output i; each of the model's dtype
 * and the engine's shape, packed row major. Runs of one execution context are ordered
 * (a run on another stream than the last waits for it by an event); for runs in
 * parallel, make a context per stream. done (may be NULL) receives a future that
 * completes when the outputs are written. Every argument is checked before anything
 * is enqueued. */
gaio_status gaio_model_run(gaio_model_exec *x, gaio_stream *stream, const gaio_tensor *inputs, int32_t ninputs,
                           const gaio_tensor *outputs, int32_t noutputs, gaio_future **done);

#ifdef __cplusplus
}
#endif
#endif
