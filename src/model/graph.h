/* A loaded ONNX model as gaio keeps it: values (tensors, with their type, shape and,
 * for weights and folded constants, their host data) and nodes (an operator with its
 * attributes parsed, reading and writing values by index), in a topological order.
 *
 * The loader (onnx_load.c) builds it from the protobuf; the operator table (ops.c)
 * knows each operator's attributes, output shapes and, for the shape-only operators,
 * how to fold them to constants. Everything lives in the graph's bump allocator
 * (model/bump.h) and goes with the model. */
#ifndef GAIO_MODEL_GRAPH_H
#define GAIO_MODEL_GRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gaio/model.h"
#include "model/bump.h"

/* ONNX TensorProto element types gaio handles (the protobuf's numbers). */
enum { MT_UNDEFINED = 0, MT_F32 = 1, MT_I32 = 6, MT_I64 = 7, MT_F16 = 10 };

typedef enum model_op {
    OP_CONV,
    OP_GEMM,
    OP_MATMUL,
    OP_BATCH_NORM,
    OP_RELU,
    OP_CLIP,
    OP_SIGMOID,
    OP_HARD_SIGMOID,
    OP_HARD_SWISH,
    OP_ADD,
    OP_SUB,
    OP_MUL,
    OP_DIV,
    OP_MAX_POOL,
    OP_AVG_POOL,
    OP_GLOBAL_AVG_POOL,
    OP_FLATTEN,
    OP_RESHAPE,
    OP_TRANSPOSE,
    OP_CONCAT,
    OP_SOFTMAX,
    OP_IDENTITY,
    OP_CONSTANT,
    OP_SHAPE,
    OP_GATHER,
    OP_UNSQUEEZE,
    OP_SQUEEZE,
    OP_CAST,
    OP_REDUCE_MEAN, /* over the spatial axes of a 4-D tensor: torch's dynamo exporter's global pool */
    OP_DROPOUT,     /* inference: its input (engine files store op numbers: new ones go last) */
    OP_SQRT,
    OP_EXP,
    OP_LOG,
    OP_TANH,
    OP_ABS,
    OP_NEG,
    OP_RECIPROCAL,
    OP_FLOOR,
    OP_CEIL,
    OP_ERF,
    OP_SOFTPLUS,
    OP_GELU,        /* opset 20 on */
    OP_SIN,
    OP_COS,
    OP_POW,
    OP_MIN,         /* Min, Max, Sum, Mean: 1 or more inputs, broadcast together */
    OP_MAX,
    OP_SUM,
    OP_MEAN,
    OP_COUNT
} model_op;

/* A value: a graph input, a weight (initializer), a folded constant or a node's output. */
typedef struct mvalue {
    const char *name;
    int32_t elem;                         /* MT_*; MT_UNDEFINED until inferred */
    int32_t ndim;                         /* -1 until inferred */
    int64_t dims[GAIO_MODEL_MAX_NDIM];    /* -1: symbolic (the batch) */
    const char *dim_names[GAIO_MODEL_MAX_NDIM]; /* "" for a fixed dimension */
    void *data;                           /* constant: host data, packed row major; else NULL */
    size_t bytes;                         /* of data */
    int32_t producer;                     /* node index, or -1 */
    bool is_input;                        /* a graph input (fed at run time) */
    bool is_output;                       /* a graph output */
} mvalue;

/* Attributes of the supported operators, parsed and checked (ops.c); each operator
 * reads the fields it has. ONNX defaults are filled in. */
typedef struct mattrs {
    /* Conv, MaxPool, AveragePool: 2-D only. */
    int32_t nkernel;            /* kernel_shape given (else from the weights) */
    int64_t kernel[2], strides[2], dilations[2];
    int64_t pads[4];            /* top, left, bottom, right (ONNX: begins then ends) */
    int64_t group;
    int32_t auto_pad;           /* 0 NOTSET, 1 SAME_UPPER, 2 SAME_LOWER, 3 VALID */
    int64_t ceil_mode, count_include_pad;
    /* Gemm */
    float alpha, beta;
    int64_t trans_a, trans_b;
    /* BatchNormalization */
    float epsilon;
    /* Clip (opset < 11 attributes; later opsets give min / max as inputs) */
    float clip_min, clip_max;
    /* HardSigmoid: alpha, beta above. Flatten, Concat, Softmax, Gather: axis. */
    int64_t axis;
    /* Softmax of opset < 13: over the dimensions from axis on, flattened into one */
    int32_t coerce_2d;
    /* Transpose */
    int32_t nperm;
    int64_t perm[GAIO_MODEL_MAX_NDIM];
    /* Unsqueeze / Squeeze of opset < 13 (axes as an attribute) */
    int32_t naxes;
    int64_t axes[GAIO_MODEL_MAX_NDIM];
    /* Reshape */
    int64_t allowzero;
    /* ReduceMean (axes in axes / naxes when an attribute) */
    int64_t keepdims, noop_with_empty_axes;
    /* Cast */
    int32_t to;
    /* Gelu: 0 "none" (erf), 1 "tanh" */
    int32_t approximate;
    /* Constant: the value's index (its data already in the value) */
} mattrs;

typedef struct mnode {
    const char *name;    /* "" if the file gave none */
    const char *op_type; /* as in the file */
    model_op op;
    int32_t nin, nout;
    int32_t *in;         /* value indexes; -1 for an omitted optional input */
    int32_t *out;
    mattrs a;
} mnode;

typedef struct mgraph {
    gaio_bump bump;
    mvalue *values;
    int32_t nvalues, cap_values;
    mnode *nodes;        /* topological order once loaded */
    int32_t nnodes;
    int32_t *inputs, ninputs;   /* graph inputs that are not initializers */
    int32_t *outputs, noutputs;
    int64_t ir_version, opset;
    const char *producer;
} mgraph;

/* Adds a value named name (copied); returns its index, or -1 out of memory. */
int32_t gaio__graph_add_value(mgraph *g, const char *name);
/* The index of the value named name, or -1. */
int32_t gaio__graph_find(const mgraph *g, const char *name);

/* Element size of an MT_* type (0 for others). */
size_t gaio__mt_size(int32_t elem);
/* "float32", "int64", ... for messages. */
const char *gaio__mt_name(int32_t elem);

/* ---- the operator table (ops.c) ---- */

struct Onnx__NodeProto;

/* The operator of op_type in the default domain, or -1 when gaio has none. */
int32_t gaio__op_lookup(const char *op_type);

/* Parses and checks node n's attributes (ONNX defaults filled in) for the graph's
 * opset. GAIO_ERR_NOT_SUPPORTED naming the node, operator and attribute for what gaio
 * cannot run (a 3-D kernel, ...); GAIO_ERR_INVALID_ARG for what ONNX forbids (an
 * auto_pad ONNX does not define, ...). fn names the public call. */
gaio_status gaio__op_parse_attrs(const char *fn, const mgraph *g, const struct Onnx__NodeProto *proto, mnode *n);

/* Infers node n's output types and shapes from its inputs' (all known, in topological
 * order), checking that the inputs agree (ranks, channels, broadcasting); for the
 * shape-only operators (Shape, Gather, Unsqueeze, Squeeze, Concat, Cast, Reshape,
 * Identity, Flatten) whose inputs are all constants, also computes the outputs' data
 * (folding). Returns GAIO_ERR_INVALID_ARG or GAIO_ERR_NOT_SUPPORTED naming the node. */
gaio_status gaio__op_infer(const char *fn, mgraph *g, mnode *n);

#endif
