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
/* Integers and booleans: shape arithmetic at load, and at run time the indexing steps'
 * indices, conditions and moved data (model/exec_index.c). */
enum { MT_UNDEFINED = 0, MT_F32 = 1, MT_I32 = 6, MT_I64 = 7, MT_BOOL = 9, MT_F16 = 10 };

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
    OP_GATHER,      /* folds, or gaio_gather at run time */
    OP_UNSQUEEZE,
    OP_SQUEEZE,
    OP_CAST,
    OP_REDUCE_MEAN, /* any axes; the spatial ones of a 4-D tensor as a global pool */
    OP_DROPOUT,     /* inference: its input (engine files store op numbers: new ones go last) */
    OP_SLICE,       /* a strided view (negative strides for negative steps) copied out */
    OP_PAD,         /* gaio_pad: every mode, negative pads cut */
    OP_SPLIT,       /* one step per output: each a strided view copied out */
    OP_CONSTANT_OF_SHAPE, /* folds at load */
    OP_RANGE,       /* folds at load */
    OP_EXPAND,      /* folds, or a broadcast view copied out */
    OP_RESIZE,      /* nearest by whole factors of H and W: a broadcast view copied out; else gaio_resize2d */
    OP_UPSAMPLE,    /* opsets 7-9: the same */
    OP_TILE,        /* folds, or one strided copy per tile */
    OP_EQUAL,       /* these six fold at load (shape arithmetic): comparisons and logic */
    OP_LESS,
    OP_GREATER,
    OP_NOT,
    OP_AND,
    OP_OR,
    OP_WHERE,       /* folds, or gaio_where at run time */
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
    OP_GATHER_ELEMENTS, /* opset 11 on */
    OP_REDUCE_MAX,  /* the Reduce* operators over any axes (gaio_reduce) */
    OP_REDUCE_MIN,
    OP_REDUCE_SUM,
    OP_REDUCE_PROD,
    OP_REDUCE_L1,
    OP_REDUCE_L2,
    OP_REDUCE_SUM_SQUARE,
    OP_REDUCE_LOG_SUM,
    OP_REDUCE_LOG_SUM_EXP,
    OP_ARGMAX,
    OP_ARGMIN,
    OP_TOPK,        /* a step per output, each computing its own */
    OP_LOG_SOFTMAX,
    OP_CONV_TRANSPOSE, /* 2-D; pads resolved at inference (output_shape, auto_pad), maybe negative */
    OP_LAYER_NORM,    /* LayerNormalization, GroupNormalization, InstanceNormalization: gaio_norm */
    OP_GROUP_NORM,
    OP_INSTANCE_NORM,
    OP_MOD,    /* floats: fmod 1, run; integers: fold (infer_arith.c) */
    OP_EINSUM, /* the equations one batched GEMM computes (infer_einsum.c) */
    OP_SCATTER_ND, /* folds only (infer_scatter.c) */
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
    /* Slice, resolved at load for every dimension (opset < 10's attributes in axes /
     * naxes for axes, these for starts and ends until then) */
    int64_t slice_start[GAIO_MODEL_MAX_NDIM], slice_step[GAIO_MODEL_MAX_NDIM];
    int64_t slice_end[GAIO_MODEL_MAX_NDIM];
    int32_t nslice; /* starts / ends given as attributes (opset < 10) */
    /* Pad: per dimension, resolved at load (opset < 11's pads attribute: npad raw values
     * in pad_begin then pad_end order until then); the fill value */
    int64_t pad_begin[GAIO_MODEL_MAX_NDIM], pad_end[GAIO_MODEL_MAX_NDIM];
    int32_t npad, pad_mode; /* pad_mode: 0 constant, 1 reflect, 2 edge, 3 wrap */
    float pad_value;
    /* Split: each output's size along axis, resolved at load (opset < 13's split
     * attribute, or num_outputs from 18, until then) */
#define GAIO_MODEL_MAX_SPLIT 16
    int64_t split_sizes[GAIO_MODEL_MAX_SPLIT];
    int32_t nsplit, num_outputs;
    /* ConstantOfShape: the fill value and its element type (attribute 'value') */
    double fill_value;
    int32_t fill_elem;
    /* Resize / Upsample: mode (0 nearest, 1 linear, 2 cubic), coordinate transformation
     * (0 half_pixel, 1 asymmetric, 2 pytorch_half_pixel, 3 tf_half_pixel_for_nn,
     * 4 align_corners, 5 tf_crop_and_resize, 6 half_pixel_symmetric), nearest mode (0
     * round_prefer_floor, 1 round_prefer_ceil, 2 floor, 3 ceil); the integer factors of
     * H and W, resolved at load; opsets 7-8's scales attribute in rs_scales */
    int32_t rs_mode, rs_coord, rs_nearest, rs_nscales;
    float rs_scales[GAIO_MODEL_MAX_NDIM];
    int64_t rs_factor[2];
    /* Transpose */
    int32_t nperm;
    int64_t perm[GAIO_MODEL_MAX_NDIM];
    /* Unsqueeze / Squeeze of opset < 13 (axes as an attribute) */
    int32_t naxes;
    int64_t axes[GAIO_MODEL_MAX_NDIM];
    /* Reshape */
    int64_t allowzero;
    /* Reduce* (axes in axes / naxes when an attribute); ArgMax, ArgMin: keepdims */
    int64_t keepdims, noop_with_empty_axes;
    /* Cast */
    int32_t to;
    /* Gelu: 0 "none" (erf), 1 "tanh" */
    int32_t approximate;
    /* Constant: the value's index (its data already in the value) */
    /* Reduce*: the input's dimensions reduced (bit d: dimension d), resolved at load
     * from axes, noop_with_empty_axes and the rank */
    uint32_t reduce_mask;
    /* ArgMax, ArgMin (axis, keepdims above) */
    int64_t select_last_index;
    /* TopK (axis above): k, resolved at load (opset < 10's attribute until then); gaio always
     * sorts (ONNX leaves the order free without sorted) */
    int64_t largest, sorted, topk_k;
    /* ConvTranspose (and the Conv fields above): output_padding; output_shape's
     * spatial sizes (noutput_shape 2) until inference turns them into pads */
    int64_t output_padding[2];
    int64_t output_shape[2];
    int32_t noutput_shape;
    /* Resize beyond whole-factor nearest: cubic_coeff_a, exclude_outside,
     * extrapolation_value, keep_aspect_ratio_policy (opset 18: 0 stretch, 1 not_larger,
     * 2 not_smaller; axes in naxes / axes); resolved at load: rs_general (run by
     * gaio_resize2d with rs_scale, H and W's scales for its coordinate rule, and rs_roi,
     * tf_crop_and_resize's start_h, start_w, end_h, end_w), else the whole factors */
    float rs_cubic_a, rs_extrapolation;
    int32_t rs_exclude_outside, rs_keep_aspect, rs_general;
    float rs_roi[4];
    double rs_scale[2];
    int32_t rs_antialias; /* opset 18 */
    /* LayerNormalization (axis and epsilon above), GroupNormalization: the groups (0
     * until given), stash_type (ONNX's default 1, f32; gaio computes in f32 whatever) */
    int64_t num_groups, stash_type;
    /* Mod: fmod (0: the divisor's sign, integers only; 1: the dividend's) */
    int64_t fmod;
    /* Einsum: the equation's terms as parsed at load (each a label per dimension,
     * '.' for an ellipsis; es_nterms 3 with the output, 2 when it is implicit); then,
     * resolved at inference, the batched GEMM that computes it: op(P) @ op(Q) over
     * es_batch leading dimensions, P the first input (the second where es_swap),
     * transposed where es_trans_p / es_trans_q, as [batch, rows, cols] row-major
     * matrices of es_rows_p x es_cols_p and es_rows_q x es_cols_q */
#define GAIO_MODEL_EINSUM_LABELS 12
    char es_terms[3][GAIO_MODEL_EINSUM_LABELS + 1];
    int32_t es_nterms, es_batch, es_swap, es_trans_p, es_trans_q;
    int64_t es_rows_p, es_cols_p, es_rows_q, es_cols_q;
    /* ScatterND: reduction (0 none, 1 add, 2 mul, 3 max, 4 min) */
    int32_t scatter_reduction;
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
    /* For inference again with other input shapes (model/shapes.c): every value as
     * the file gave it (before any inference), every node's attributes as parsed. */
    mvalue *src_values;
    mattrs *src_attrs;
    /* Inference at load stopped at a dimension left symbolic (a height or width, a
     * batch that shape arithmetic reads): the
     * graph's shapes wait for an engine's input shapes; why, for messages. Its nodes
     * are all kept (none folded), outputs typed by the file's declarations. */
    bool deferred;
    const char *deferred_why;
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

/* The opsets gaio loads (onnx_load.c checks a model's). */
#define GAIO_MODEL_MIN_OPSET 7
#define GAIO_MODEL_MAX_OPSET 22

/* The opset ONNX brought op in (1 for the oldest) and its last (0: still defined). */
int64_t gaio__op_first_opset(model_op op);
int64_t gaio__op_last_opset(model_op op);
/* Whether op only folds to constants at load (shape arithmetic). */
bool gaio__op_folds_only(model_op op);

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
