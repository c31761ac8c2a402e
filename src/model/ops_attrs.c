/* Operators' attributes: which each operator has (for the graph's opset), their types,
 * ONNX's defaults, and the values gaio can run; also the inputs and outputs each takes. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <protobuf-c/protobuf-c.h>

#include "onnx/onnx.pb-c.h"

#include "core/half.h"
#include "model/ops_internal.h"

#define T_F ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT
#define T_I ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT
#define T_S ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING
#define T_T ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR
#define T_FS ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS
#define T_IS ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS
#define T_SS ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS
#define T_SP ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSOR

/* An attribute an operator has from opset since on, up to opset until (0: still). */
typedef struct aspec {
    const char *name;
    int type;
    int since, until;
} aspec;

#define MAX_ATTRS 9
typedef struct opspec {
    int32_t min_in, max_in; /* max_in -1: any number */
    int32_t max_out;        /* ONNX's; gaio computes only the first */
    aspec attrs[MAX_ATTRS];
} opspec;

/* ReduceSum's axes became an input at 13, the other Reduce*'s at 18. */
#define REDUCE_ATTRS(last) {{"axes", T_IS, 1, last}, {"keepdims", T_I, 1, 0}, {"noop_with_empty_axes", T_I, last + 1, 0}}
#define ARG_ATTRS {{"axis", T_I, 1, 0}, {"keepdims", T_I, 1, 0}, {"select_last_index", T_I, 12, 0}}

#define POOL_COMMON                                                                          \
    {"auto_pad", T_S, 1, 0}, {"kernel_shape", T_IS, 1, 0}, {"pads", T_IS, 1, 0}, {"strides", T_IS, 1, 0}, \
        {"ceil_mode", T_I, 10, 0}

static const opspec specs[OP_COUNT] = {
    [OP_CONV] = {2, 3, 1, {{"auto_pad", T_S, 1, 0}, {"dilations", T_IS, 1, 0}, {"group", T_I, 1, 0},
                           {"kernel_shape", T_IS, 1, 0}, {"pads", T_IS, 1, 0}, {"strides", T_IS, 1, 0}}},
    [OP_GEMM] = {2, 3, 1, {{"alpha", T_F, 1, 0}, {"beta", T_F, 1, 0}, {"transA", T_I, 1, 0}, {"transB", T_I, 1, 0}}},
    [OP_MATMUL] = {2, 2, 1, {{0}}},
    [OP_BATCH_NORM] = {5, 5, 3, {{"epsilon", T_F, 1, 0}, {"momentum", T_F, 1, 0}, {"training_mode", T_I, 14, 0},
                                 {"spatial", T_I, 7, 8}}},
    [OP_RELU] = {1, 1, 1, {{0}}},
    [OP_CLIP] = {1, 3, 1, {{"min", T_F, 6, 10}, {"max", T_F, 6, 10}}},
    [OP_SIGMOID] = {1, 1, 1, {{0}}},
    [OP_HARD_SIGMOID] = {1, 1, 1, {{"alpha", T_F, 1, 0}, {"beta", T_F, 1, 0}}},
    [OP_HARD_SWISH] = {1, 1, 1, {{0}}},
    [OP_ADD] = {2, 2, 1, {{0}}},
    [OP_SUB] = {2, 2, 1, {{0}}},
    [OP_MUL] = {2, 2, 1, {{0}}},
    [OP_DIV] = {2, 2, 1, {{0}}},
    [OP_MAX_POOL] = {1, 1, 2, {POOL_COMMON, {"dilations", T_IS, 10, 0}, {"storage_order", T_I, 8, 0}}},
    [OP_AVG_POOL] = {1, 1, 1, {POOL_COMMON, {"count_include_pad", T_I, 7, 0}, {"dilations", T_IS, 19, 0}}},
    [OP_GLOBAL_AVG_POOL] = {1, 1, 1, {{0}}},
    [OP_FLATTEN] = {1, 1, 1, {{"axis", T_I, 1, 0}}},
    [OP_RESHAPE] = {2, 2, 1, {{"allowzero", T_I, 14, 0}}},
    [OP_TRANSPOSE] = {1, 1, 1, {{"perm", T_IS, 1, 0}}},
    [OP_CONCAT] = {1, -1, 1, {{"axis", T_I, 1, 0}}},
    [OP_SOFTMAX] = {1, 1, 1, {{"axis", T_I, 1, 0}}},
    [OP_IDENTITY] = {1, 1, 1, {{0}}},
    [OP_CONSTANT] = {0, 0, 1, {{"value", T_T, 1, 0}, {"value_float", T_F, 12, 0}, {"value_floats", T_FS, 12, 0},
                               {"value_int", T_I, 12, 0}, {"value_ints", T_IS, 12, 0}, {"value_string", T_S, 12, 0},
                               {"value_strings", T_SS, 12, 0}, {"sparse_value", T_SP, 11, 0}}},
    [OP_SHAPE] = {1, 1, 1, {{"start", T_I, 15, 0}, {"end", T_I, 15, 0}}},
    [OP_GATHER] = {2, 2, 1, {{"axis", T_I, 1, 0}}},
    [OP_UNSQUEEZE] = {1, 2, 1, {{"axes", T_IS, 1, 12}}},
    [OP_SQUEEZE] = {1, 2, 1, {{"axes", T_IS, 1, 12}}},
    [OP_CAST] = {1, 1, 1, {{"to", T_I, 1, 0}, {"saturate", T_I, 19, 0}}},
    [OP_REDUCE_MEAN] = {1, 2, 1, REDUCE_ATTRS(17)},
    [OP_DROPOUT] = {1, 3, 2, {{"ratio", T_F, 7, 11}, {"seed", T_I, 12, 0}}},
    [OP_SLICE] = {1, 5, 1, {{"starts", T_IS, 1, 9}, {"ends", T_IS, 1, 9}, {"axes", T_IS, 1, 9}}},
    [OP_PAD] = {1, 4, 1, {{"mode", T_S, 1, 0}, {"pads", T_IS, 1, 10}, {"value", T_F, 1, 10}}},
    [OP_CONSTANT_OF_SHAPE] = {1, 1, 1, {{"value", T_T, 9, 0}}},
    [OP_RANGE] = {3, 3, 1, {{0}}},
    [OP_TILE] = {2, 2, 1, {{0}}},
    [OP_EQUAL] = {2, 2, 1, {{0}}},
    [OP_LESS] = {2, 2, 1, {{0}}},
    [OP_GREATER] = {2, 2, 1, {{0}}},
    [OP_NOT] = {1, 1, 1, {{0}}},
    [OP_AND] = {2, 2, 1, {{0}}},
    [OP_OR] = {2, 2, 1, {{0}}},
    [OP_WHERE] = {3, 3, 1, {{0}}},
    [OP_RESIZE] = {1, 4, 1, {{"mode", T_S, 10, 0}, {"coordinate_transformation_mode", T_S, 11, 0}, {"nearest_mode", T_S, 11, 0},
                             {"cubic_coeff_a", T_F, 11, 0}, {"exclude_outside", T_I, 11, 0},
                             {"extrapolation_value", T_F, 11, 0}, {"antialias", T_I, 18, 0}, {"axes", T_IS, 18, 0},
                             {"keep_aspect_ratio_policy", T_S, 18, 0}}},
    [OP_UPSAMPLE] = {1, 2, 1, {{"mode", T_S, 7, 0}, {"scales", T_FS, 7, 8}}},
    [OP_EXPAND] = {2, 2, 1, {{0}}},
    [OP_SPLIT] = {1, 2, GAIO_MODEL_MAX_SPLIT, {{"axis", T_I, 1, 0}, {"split", T_IS, 1, 12}, {"num_outputs", T_I, 18, 0}}},
    [OP_SQRT] = {1, 1, 1, {{0}}},
    [OP_EXP] = {1, 1, 1, {{0}}},
    [OP_LOG] = {1, 1, 1, {{0}}},
    [OP_TANH] = {1, 1, 1, {{0}}},
    [OP_ABS] = {1, 1, 1, {{0}}},
    [OP_NEG] = {1, 1, 1, {{0}}},
    [OP_RECIPROCAL] = {1, 1, 1, {{0}}},
    [OP_FLOOR] = {1, 1, 1, {{0}}},
    [OP_CEIL] = {1, 1, 1, {{0}}},
    [OP_ERF] = {1, 1, 1, {{0}}},
    [OP_SOFTPLUS] = {1, 1, 1, {{0}}},
    [OP_GELU] = {1, 1, 1, {{"approximate", T_S, 20, 0}}},
    [OP_SIN] = {1, 1, 1, {{0}}},
    [OP_COS] = {1, 1, 1, {{0}}},
    [OP_POW] = {2, 2, 1, {{0}}},
    [OP_MIN] = {1, -1, 1, {{0}}},
    [OP_MAX] = {1, -1, 1, {{0}}},
    [OP_SUM] = {1, -1, 1, {{0}}},
    [OP_MEAN] = {1, -1, 1, {{0}}},
    [OP_GATHER_ELEMENTS] = {2, 2, 1, {{"axis", T_I, 11, 0}}},
    [OP_REDUCE_MAX] = {1, 2, 1, REDUCE_ATTRS(17)},
    [OP_REDUCE_MIN] = {1, 2, 1, REDUCE_ATTRS(17)},
    [OP_REDUCE_SUM] = {1, 2, 1, REDUCE_ATTRS(12)},
    [OP_REDUCE_PROD] = {1, 2, 1, REDUCE_ATTRS(17)},
    [OP_REDUCE_L1] = {1, 2, 1, REDUCE_ATTRS(17)},
    [OP_REDUCE_L2] = {1, 2, 1, REDUCE_ATTRS(17)},
    [OP_REDUCE_SUM_SQUARE] = {1, 2, 1, REDUCE_ATTRS(17)},
    [OP_REDUCE_LOG_SUM] = {1, 2, 1, REDUCE_ATTRS(17)},
    [OP_REDUCE_LOG_SUM_EXP] = {1, 2, 1, REDUCE_ATTRS(17)},
    [OP_ARGMAX] = {1, 1, 1, ARG_ATTRS},
    [OP_ARGMIN] = {1, 1, 1, ARG_ATTRS},
    [OP_TOPK] = {1, 2, 2, {{"axis", T_I, 1, 0}, {"k", T_I, 1, 9}, {"largest", T_I, 11, 0}, {"sorted", T_I, 11, 0}}},
    [OP_LOG_SOFTMAX] = {1, 1, 1, {{"axis", T_I, 1, 0}}},
    [OP_CONV_TRANSPOSE] = {2, 3, 1, {{"auto_pad", T_S, 1, 0}, {"dilations", T_IS, 1, 0}, {"group", T_I, 1, 0},
                                     {"kernel_shape", T_IS, 1, 0}, {"output_padding", T_IS, 1, 0},
                                     {"output_shape", T_IS, 1, 0}, {"pads", T_IS, 1, 0}, {"strides", T_IS, 1, 0}}},
    [OP_LAYER_NORM] = {2, 3, 3, {{"axis", T_I, 17, 0}, {"epsilon", T_F, 17, 0}, {"stash_type", T_I, 17, 0}}},
    [OP_GROUP_NORM] = {3, 3, 1, {{"epsilon", T_F, 18, 0}, {"num_groups", T_I, 18, 0}, {"stash_type", T_I, 21, 0}}},
    [OP_INSTANCE_NORM] = {3, 3, 1, {{"epsilon", T_F, 6, 0}}},
    [OP_MOD] = {2, 2, 1, {{"fmod", T_I, 10, 0}}},
    [OP_EINSUM] = {1, -1, 1, {{"equation", T_S, 12, 0}}},
    [OP_SCATTER_ND] = {3, 3, 1, {{"reduction", T_S, 16, 0}}},
};

/* The opset each operator came in, where that is after 7 (gaio's oldest). */
static int64_t op_since(model_op op) { return gaio__op_first_opset(op); }

/* The inputs an operator takes in the graph's opset, where they changed: attributes
 * that became inputs (Clip's bounds at 11, Squeeze's and Unsqueeze's axes at 13,
 * ReduceMean's at 18), Dropout's ratio and training_mode (12). */
static void io_for_opset(const mgraph *g, model_op op, int32_t *min_in, int32_t *max_in) {
    int64_t v = g->opset;
    if ((op == OP_CLIP && v < 11) || ((op == OP_SQUEEZE || op == OP_UNSQUEEZE) && v < 13) ||
        (op == OP_REDUCE_MEAN && v < 18) || (op == OP_DROPOUT && v < 12) ||
        (op >= OP_REDUCE_MAX && op <= OP_REDUCE_LOG_SUM_EXP && v < (op == OP_REDUCE_SUM ? 13 : 18)))
        *max_in = 1;
    if (op == OP_TOPK) *min_in = *max_in = v < 10 ? 1 : 2; /* K: an attribute, then an input */
    if (op == OP_UNSQUEEZE && v >= 13) *min_in = 2;
    if (op == OP_SLICE) *min_in = *max_in = 1;
    if (op == OP_SLICE && v >= 10) *min_in = 3, *max_in = 5;
    if (op == OP_PAD) *min_in = 1, *max_in = v < 11 ? 1 : v < 18 ? 3 : 4;
    if (op == OP_PAD && v >= 11) *min_in = 2;
    if (op == OP_SPLIT && v < 13) *max_in = 1;
    if (op == OP_RESIZE) *min_in = v < 11 ? 2 : 1, *max_in = v < 11 ? 2 : 4; /* roi, scales, sizes: each may be "" */
    if (op == OP_UPSAMPLE) *min_in = *max_in = v < 9 ? 1 : 2;
}

static bool in_opset(const mgraph *g, const aspec *a) {
    return g->opset >= a->since && (!a->until || g->opset <= a->until);
}

static const char *type_name(int t) {
    switch (t) {
    case T_F: return "a float";
    case T_I: return "an int";
    case T_S: return "a string";
    case T_T: return "a tensor";
    case T_FS: return "floats";
    case T_IS: return "ints";
    case T_SS: return "strings";
    case T_SP: return "a sparse tensor";
    default: return "another type";
    }
}

static gaio_status check_io(const char *fn, const mgraph *g, const mnode *n, const opspec *s) {
    int32_t min_in = s->min_in, max_in = s->max_in;
    io_for_opset(g, n->op, &min_in, &max_in);
    if (n->nin < min_in || (max_in >= 0 && n->nin > max_in)) {
        if (max_in < 0) return gaio__node_fail(fn, n, GAIO_ERR_INVALID_ARG, "%d inputs; it takes at least %d", n->nin, min_in);
        if (min_in == max_in)
            return gaio__node_fail(fn, n, GAIO_ERR_INVALID_ARG, "%d inputs; it takes %d in opset %lld", n->nin, min_in,
                                   (long long)g->opset);
        return gaio__node_fail(fn, n, GAIO_ERR_INVALID_ARG, "%d inputs; it takes %d to %d in opset %lld", n->nin, min_in,
                               max_in, (long long)g->opset);
    }
    /* Past the required ones, an input may be omitted (""). */
    for (int32_t i = 0; i < n->nin && i < min_in; i++)
        if (n->in[i] < 0) return gaio__node_fail(fn, n, GAIO_ERR_INVALID_ARG, "input %d is required but omitted", i);
    if (s->max_in < 0)
        for (int32_t i = 0; i < n->nin; i++)
            if (n->in[i] < 0) return gaio__node_fail(fn, n, GAIO_ERR_INVALID_ARG, "input %d is omitted", i);
    if (n->nout < 1 || n->nout > s->max_out)
        return gaio__node_fail(fn, n, GAIO_ERR_INVALID_ARG, "%d outputs; it has %s%d", n->nout, s->max_out > 1 ? "1 to " : "",
                               s->max_out);
    if (n->out[0] < 0) return gaio__node_fail(fn, n, GAIO_ERR_INVALID_ARG, "its first output is omitted");
    /* The optional outputs are the training statistics (BatchNormalization) and the
     * argmax (MaxPool): nothing gaio computes; but LayerNormalization's Mean and
     * InvStdDev, which it does. */
    for (int32_t i = 1; i < n->nout && n->op == OP_SPLIT; i++)
        if (n->out[i] < 0) return gaio__node_fail(fn, n, GAIO_ERR_NOT_SUPPORTED, "output %d is omitted", i);
    for (int32_t i = 1; i < n->nout && n->op != OP_SPLIT && n->op != OP_TOPK && n->op != OP_LAYER_NORM; i++)
        if (n->out[i] >= 0)
            return gaio__node_fail(fn, n, GAIO_ERR_NOT_SUPPORTED, "output %d (%s) is not supported", i,
                                   n->op == OP_MAX_POOL ? "Indices" : n->op == OP_DROPOUT ? "mask" : "training statistics");
    return GAIO_OK;
}

static const char *spatial_what(const mnode *n) {
    return n->op == OP_CONV ? "convolutions" : n->op == OP_CONV_TRANSPOSE ? "transposed convolutions" : "pools";
}

/* A 2-D list attribute (kernel_shape, strides, dilations); other lengths are kernels of
 * other ranks, which gaio does not run. */
static gaio_status get_pair(const char *fn, const mnode *n, const Onnx__AttributeProto *at, int64_t min, int64_t out[2]) {
    if (at->n_ints != 2) {
        if (at->n_ints == 0) return gaio__node_fail(fn, n, GAIO_ERR_INVALID_ARG, "attribute '%s' is empty", at->name);
        return gaio__node_fail(fn, n, GAIO_ERR_NOT_SUPPORTED, "%zu-D %s are not supported (attribute '%s')", at->n_ints,
                               spatial_what(n), at->name);
    }
    for (int i = 0; i < 2; i++) {
        if (at->ints[i] < min || at->ints[i] > INT32_MAX)
            return gaio__node_fail(fn, n, GAIO_ERR_INVALID_ARG, "attribute '%s' has %lld (out of range)", at->name,
                                   (long long)at->ints[i]);
        out[i] = at->ints[i];
    }
    return GAIO_OK;
}

static gaio_status get_pads(const char *fn, const mnode *n, const Onnx__AttributeProto *at, int64_t out[4]) {
    if (at->n_ints != 4) {
        if (at->n_ints % 2 || at->n_ints == 0)
            return gaio__node_fail(fn, n, GAIO_ERR_INVALID_ARG, "attribute 'pads' has %zu values (2 per spatial axis)", at->n_ints);
        return gaio__node_fail(fn, n, GAIO_ERR_NOT_SUPPORTED, "%zu-D %s are not supported (attribute 'pads')", at->n_ints / 2,
                               spatial_what(n));
    }
    /* ONNX lists begins then ends: [top, left, bottom, right], mattrs' order. */
    for (int i = 0; i < 4; i++) {
        if (at->ints[i] < 0 || at->ints[i] > INT32_MAX)
            return gaio__node_fail(fn, n, GAIO_ERR_INVALID_ARG, "attribute 'pads' has %lld (out of range)", (long long)at->ints[i]);
        out[i] = at->ints[i];
    }
    return GAIO_OK;
}

static gaio_status get_auto_pad(const char *fn, const mnode *n, const Onnx__AttributeProto *at, int32_t *out) {
    static const char *const names[] = {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"};
    for (int32_t i = 0; i < 4; i++) {
        size_t len = strlen(names[i]);
        if (at->s.len == len && at->s.data && memcmp(at->s.data, names[i], len) == 0) {
            *out = i;
            return GAIO_OK;
        }
    }
    return gaio__node_fail(fn, n, GAIO_ERR_INVALID_ARG, "attribute 'auto_pad' is '%.*s' (NOTSET, SAME_UPPER, SAME_LOWER or VALID)",
                           at->s.len > 32 ? 32 : (int)at->s.len, at->s.data ? (const char *)at->s.data : "");
}

static gaio_status get_flag(const char *fn, const mnode *n, const Onnx__AttributeProto *at, int64_t *out) {
    if (at->i != 0 && at->i != 1)
        return gaio__node_fail(fn, n, GAIO_ERR_INVALID_ARG, "attribute '%s' is %lld (0 or 1)", at->name, (long long)at->i);
    *out = at->i;
    return GAIO_OK;
}

/* Clip's bounds: any float, infinities included (NaN is no bound). */
static gaio_status get_float_any(const mnode *n, const Onnx__AttributeProto *at, float *out) {
    (void)n;
    if (!isnan(at->f)) *out = at->f;
    return GAIO_OK;
}

static gaio_status get_float(const char *fn, const mnode *n, const Onnx__AttributeProto *at, float *out) {
    if (!isfinite(at->f)) return gaio__node_fail(fn, n, GAIO_ERR_INVALID_ARG, "attribute '%s' is not finite", at->name);
    *out = at->f;
    return GAIO_OK;
}

/* Applies one attribute (its name and type already checked). */
/* Einsum's equation: its terms' labels into a->es_terms ('.' for an ellipsis), spaces
 * dropped; what the labels mean is inference's (infer_einsum.c). */
static gaio_status einsum_terms(const char *fn, const mnode *n, const Onnx__AttributeProto *at, mattrs *a) {
    const char *s = at->s.data ? (const char *)at->s.data : "";
    size_t len = at->s.len;
    int t = 0, k = 0;
    bool arrow = false;
    memset(a->es_terms, 0, sizeof a->es_terms);
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (c == ' ') continue;
        if (c == ',' || (c == '-' && i + 1 < len && s[i + 1] == '>')) {
            if (arrow || (c == '-' && t != 1) || ++t > 2) /* terms past the two operands */
                return gaio__node_fail(fn, n, GAIO_ERR_NOT_SUPPORTED, "equation '%.*s': gaio's Einsum takes two operands",
                                       len > 64 ? 64 : (int)len, s);
            if (c == '-') arrow = true, i++;
            k = 0;
            continue;
        }
        bool dots = c == '.' && i + 2 < len && s[i + 1] == '.' && s[i + 2] == '.';
        if (!dots && !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')))
            return gaio__node_fail(fn, n, GAIO_ERR_INVALID_ARG, "equation '%.*s' has the character '%c' (labels are "
                                   "letters)", len > 64 ? 64 : (int)len, s, c);
        if (dots) {
            if (strchr(a->es_terms[t], '.'))
                return gaio__node_fail(fn, n, GAIO_ERR_INVALID_ARG, "equation '%.*s' has two ellipses in a term",
                                       len > 64 ? 64 : (int)len, s);
            c = '.', i += 2;
        }
        if (k == GAIO_MODEL_EINSUM_LABELS)
            return gaio__node_fail(fn, n, GAIO_ERR_NOT_SUPPORTED, "equation '%.*s' has a term of more than %d labels",
                                   len > 64 ? 64 : (int)len, s, GAIO_MODEL_EINSUM_LABELS);
        a->es_terms[t][k++] = c;
    }
    if (t != (arrow ? 2 : 1))
        return gaio__node_fail(fn, n, GAIO_ERR_NOT_SUPPORTED, "equation '%.*s': gaio's Einsum takes two operands",
                               len > 64 ? 64 : (int)len, s);
    a->es_nterms = arrow ? 3 : 2;
    return GAIO_OK;
}

static gaio_status apply(const char *fn, mnode *n, const Onnx__AttributeProto *at) {
    mattrs *a = &n->a;
    const char *nm = at->name;
    switch (n->op) {
    case OP_CONV:
    case OP_CONV_TRANSPOSE:
    case OP_MAX_POOL:
    case OP_AVG_POOL:
        if (!strcmp(nm, "output_padding")) return get_pair(fn, n, at, 0, a->output_padding);
        if (!strcmp(nm, "output_shape")) { /* the spatial sizes, or all four (N and C ignored) */
            if (at->n_ints == 4) {
                Onnx__AttributeProto two = *at;
                two.n_ints = 2, two.ints = at->ints + 2;
                a->noutput_shape = 2;
                return get_pair(fn, n, &two, 1, a->output_shape);
            }
            a->noutput_shape = 2;
            return get_pair(fn, n, at, 1, a->output_shape);
        }
        if (!strcmp(nm, "kernel_shape")) {
            a->nkernel = 2;
            return get_pair(fn, n, at, 1, a->kernel);
        }
        if (!strcmp(nm, "strides")) return get_pair(fn, n, at, 1, a->strides);
        if (!strcmp(nm, "dilations")) return get_pair(fn, n, at, 1, a->dilations);
        if (!strcmp(nm, "pads")) return get_pads(fn, n, at, a->pads);
        if (!strcmp(nm, "auto_pad")) return get_auto_pad(fn, n, at, &a->auto_pad);
        if (!strcmp(nm, "ceil_mode")) return get_flag(fn, n, at, &a->ceil_mode);
        if (!strcmp(nm, "count_include_pad")) return get_flag(fn, n, at, &a->count_include_pad);
        if (!strcmp(nm, "storage_order")) {
            int64_t so = 0;
            gaio_status st = get_flag(fn, n, at, &so);
            if (st == GAIO_OK && so)
                return gaio__node_fail(fn, n, GAIO_ERR_NOT_SUPPORTED, "storage_order 1 (column-major Indices) is not supported");
            return st;
        }
        if (!strcmp(nm, "group")) {
            if (at->i < 1 || at->i > INT32_MAX)
                return gaio__node_fail(fn, n, GAIO_ERR_INVALID_ARG, "attribute 'group' is %lld", (long long)at->i);
            a->group = at->i;
            return GAIO_OK;
        }
        break;
    case OP_GEMM:
        if (!strcmp(nm, "alpha")) return get_float(fn, n, at, &a->alpha);
        if (!strcmp(nm, "beta")) return get_float(fn, n, at, &a->beta);
        /* ONNX reads any non-zero as true. */
        if (!strcmp(nm, "transA")) return a->trans_a = at->i != 0, GAIO_OK;
        if (!strcmp(nm, "transB")) return a->trans_b = at->i != 0, GAIO_OK;
        break;
    case OP_HARD_SIGMOID:
        if (!strcmp(nm, "alpha")) return get_float(fn, n, at, &a->alpha);
        if (!strcmp(nm, "beta")) return get_float(fn, n, at, &a->beta);
        break;
    case OP_BATCH_NORM:
        if (!strcmp(nm, "epsilon")) {
            gaio_status st = get_float(fn, n, at, &a->epsilon);
            if (st == GAIO_OK && a->epsilon < 0)
                return gaio__node_fail(fn, n, GAIO_ERR_INVALID_ARG, "attribute 'epsilon' is negative");
            return st;
        }
        if (!strcmp(nm, "momentum")) return GAIO_OK; /* training only */
        if (!strcmp(nm, "spatial")) { /* opsets 7-8: 0 means statistics per element, not per channel */
            if (at->i != 1)
                return gaio__node_fail(fn, n, GAIO_ERR_NOT_SUPPORTED, "spatial %lld (statistics per element) is not supported",
                                       (long long)at->i);
            return GAIO_OK;
        }
        if (!strcmp(nm, "training_mode")) {
            if (at->i != 0) return gaio__node_fail(fn, n, GAIO_ERR_NOT_SUPPORTED, "training_mode %lld is not supported", (long long)at->i);
            return GAIO_OK;
        }
        break;
    case OP_FLATTEN:
    case OP_CONCAT:
    case OP_SOFTMAX:
    case OP_LOG_SOFTMAX:
    case OP_GATHER:
    case OP_GATHER_ELEMENTS:
    case OP_SPLIT:
        /* Ranges are checked against the input's rank at inference. */
        if (!strcmp(nm, "axis")) return a->axis = at->i, GAIO_OK;
        if (!strcmp(nm, "split")) { /* Split, opsets up to 12 */
            if (at->n_ints > GAIO_MODEL_MAX_SPLIT)
                return gaio__node_fail(fn, n, GAIO_ERR_NOT_SUPPORTED, "%zu parts; gaio splits into at most %d", at->n_ints,
                                       GAIO_MODEL_MAX_SPLIT);
            a->nsplit = (int32_t)at->n_ints;
            for (size_t i = 0; i < at->n_ints; i++) a->split_sizes[i] = at->ints[i];
            return GAIO_OK;
        }
        if (!strcmp(nm, "num_outputs")) { /* Split, opset 18 */
            if (at->i < 1 || at->i > GAIO_MODEL_MAX_SPLIT)
                return gaio__node_fail(fn, n, GAIO_ERR_NOT_SUPPORTED, "num_outputs %lld (gaio splits into 1 to %d)",
                                       (long long)at->i, GAIO_MODEL_MAX_SPLIT);
            a->num_outputs = (int32_t)at->i;
            return GAIO_OK;
        }
        break;
    case OP_CLIP: /* opsets 6-10 */
        if (!strcmp(nm, "min")) return get_float_any(n, at, &a->clip_min);
        if (!strcmp(nm, "max")) return get_float_any(n, at, &a->clip_max);
        break;
    case OP_SQUEEZE:
    case OP_UNSQUEEZE: /* opsets up to 12 */
        if (!strcmp(nm, "axes")) {
            if (at->n_ints > GAIO_MODEL_MAX_NDIM)
                return gaio__node_fail(fn, n, GAIO_ERR_INVALID_ARG, "attribute 'axes' has %zu entries", at->n_ints);
            a->naxes = (int32_t)at->n_ints;
            for (size_t i = 0; i < at->n_ints; i++) a->axes[i] = at->ints[i];
            return GAIO_OK;
        }
        break;
    case OP_SLICE: /* opsets up to 9: starts, ends and axes as attributes */
        if (at->n_ints > GAIO_MODEL_MAX_NDIM)
            return gaio__node_fail(fn, n, GAIO_ERR_NOT_SUPPORTED, "attribute '%s' has %zu entries; gaio's rank limit is %d",
                                   nm, at->n_ints, GAIO_MODEL_MAX_NDIM);
        if (!strcmp(nm, "axes")) {
            a->naxes = (int32_t)at->n_ints;
            for (size_t i = 0; i < at->n_ints; i++) a->axes[i] = at->ints[i];
            return GAIO_OK;
        }
        if (!strcmp(nm, "starts") || !strcmp(nm, "ends")) {
            if (a->nslice && a->nslice != (int32_t)at->n_ints)
                return gaio__node_fail(fn, n, GAIO_ERR_INVALID_ARG, "attributes 'starts' and 'ends' differ in length");
            a->nslice = (int32_t)at->n_ints;
            for (size_t i = 0; i < at->n_ints; i++) *(nm[0] == 's' ? &a->slice_start[i] : &a->slice_end[i]) = at->ints[i];
            return GAIO_OK;
        }
        break;
    case OP_PAD:
        if (!strcmp(nm, "mode")) {
            static const char *const modes[] = {"constant", "reflect", "edge", "wrap"};
            for (int32_t i = 0; i < 4; i++)
                if (at->s.len == strlen(modes[i]) && at->s.data && !memcmp(at->s.data, modes[i], at->s.len))
                    return a->pad_mode = i, GAIO_OK;
            return gaio__node_fail(fn, n, GAIO_ERR_INVALID_ARG, "attribute 'mode' is '%.*s' (constant, reflect, edge or wrap)",
                                   at->s.len > 32 ? 32 : (int)at->s.len, at->s.data ? (const char *)at->s.data : "");
        }
        if (!strcmp(nm, "value")) return get_float(fn, n, at, &a->pad_value); /* opsets up to 10 */
        if (!strcmp(nm, "pads")) { /* opsets up to 10: begins then ends */
            if (at->n_ints % 2 || at->n_ints > 2 * GAIO_MODEL_MAX_NDIM)
                return gaio__node_fail(fn, n, GAIO_ERR_INVALID_ARG, "attribute 'pads' has %zu values", at->n_ints);
            a->npad = (int32_t)at->n_ints;
            for (size_t i = 0; i < at->n_ints; i++)
                *(i < at->n_ints / 2 ? &a->pad_begin[i] : &a->pad_end[i - at->n_ints / 2]) = at->ints[i];
            return GAIO_OK;
        }
        break;
    case OP_RESIZE:
    case OP_UPSAMPLE: {
        static const char *const modes[] = {"nearest", "linear", "cubic", "bilinear", NULL};
        static const char *const coords[] = {"half_pixel", "asymmetric", "pytorch_half_pixel", "tf_half_pixel_for_nn",
                                             "align_corners", "tf_crop_and_resize", "half_pixel_symmetric", NULL};
        static const char *const nearest[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil", NULL};
        static const char *const keep[] = {"stretch", "not_larger", "not_smaller", NULL};
        const char *const *names = !strcmp(nm, "mode") ? modes
                                   : !strcmp(nm, "coordinate_transformation_mode") ? coords
                                   : !strcmp(nm, "nearest_mode") ? nearest
                                   : !strcmp(nm, "keep_aspect_ratio_policy") ? keep
                                                                 : NULL;
        if (names) {
            for (int32_t i = 0; names[i]; i++)
                if (at->s.len == strlen(names[i]) && at->s.data && !memcmp(at->s.data, names[i], at->s.len)) {
                    if (names == modes) a->rs_mode = i == 3 ? 1 : i; /* Upsample-7's bilinear is linear */
                    else if (names == coords) a->rs_coord = i;
                    else if (names == keep) a->rs_keep_aspect = i;
                    else a->rs_nearest = i;
                    return GAIO_OK;
                }
            return gaio__node_fail(fn, n, GAIO_ERR_INVALID_ARG, "attribute '%s' is '%.*s', which ONNX does not define", nm,
                                   at->s.len > 32 ? 32 : (int)at->s.len, at->s.data ? (const char *)at->s.data : "");
        }
        if (!strcmp(nm, "scales")) { /* Upsample 7-8 */
            if (at->n_floats > GAIO_MODEL_MAX_NDIM)
                return gaio__node_fail(fn, n, GAIO_ERR_INVALID_ARG, "attribute 'scales' has %zu values", at->n_floats);
            a->rs_nscales = (int32_t)at->n_floats;
            for (size_t i = 0; i < at->n_floats; i++) a->rs_scales[i] = at->floats[i];
            return GAIO_OK;
        }
        if (!strcmp(nm, "antialias")) {
            if (at->i != 0 && at->i != 1)
                return gaio__node_fail(fn, n, GAIO_ERR_INVALID_ARG, "attribute 'antialias' is %lld (0 or 1)",
                                       (long long)at->i);
            a->rs_antialias = (int32_t)at->i;
            return GAIO_OK;
        }
        if (!strcmp(nm, "axes")) { /* opset 18: checked against the input's rank at inference */
            if (at->n_ints < 1 || at->n_ints > GAIO_MODEL_MAX_NDIM)
                return gaio__node_fail(fn, n, GAIO_ERR_INVALID_ARG, "attribute 'axes' has %zu values", at->n_ints);
            a->naxes = (int32_t)at->n_ints;
            for (size_t i = 0; i < at->n_ints; i++) a->axes[i] = at->ints[i];
            return GAIO_OK;
        }
        if (!strcmp(nm, "cubic_coeff_a")) return get_float(fn, n, at, &a->rs_cubic_a);
        if (!strcmp(nm, "extrapolation_value")) return a->rs_extrapolation = at->f, GAIO_OK; /* any float */
        if (!strcmp(nm, "exclude_outside")) {
            if (at->i != 0 && at->i != 1)
                return gaio__node_fail(fn, n, GAIO_ERR_INVALID_ARG, "attribute 'exclude_outside' is %lld (0 or 1)",
                                       (long long)at->i);
            a->rs_exclude_outside = (int32_t)at->i;
            return GAIO_OK;
        }
        return GAIO_OK;
    }
    case OP_CONSTANT_OF_SHAPE:
        if (!strcmp(nm, "value")) { /* a one-element tensor: its type and value */
            const Onnx__TensorProto *t = at->t;
            int32_t e = t && t->has_data_type ? t->data_type : 0;
            size_t es = gaio__mt_size(e), count = 1;
            for (size_t i = 0; t && i < t->n_dims; i++) count *= (size_t)(t->dims[i] < 0 ? 0 : t->dims[i]);
            if (!t || !es) return gaio__node_fail(fn, n, GAIO_ERR_NOT_SUPPORTED, "a value of type %s is not supported", gaio__mt_name(e));
            if (count != 1) return gaio__node_fail(fn, n, GAIO_ERR_INVALID_ARG, "attribute 'value' holds %zu elements, not 1", count);
            unsigned char raw[8] = {0};
            if (t->has_raw_data && t->raw_data.len == es) memcpy(raw, t->raw_data.data, es);
            else if (e == MT_F32 && t->n_float_data == 1) memcpy(raw, t->float_data, 4);
            else if (e == MT_I64 && t->n_int64_data == 1) memcpy(raw, t->int64_data, 8);
            else if ((e == MT_I32 || e == MT_F16) && t->n_int32_data == 1) {
                int32_t v = t->int32_data[0];
                if (e == MT_F16) { uint16_t h = (uint16_t)v; memcpy(raw, &h, 2); }
                else memcpy(raw, &v, 4);
            } else return gaio__node_fail(fn, n, GAIO_ERR_INVALID_ARG, "attribute 'value' has no data of its type");
            a->fill_elem = e;
            if (e == MT_F32) { float f; memcpy(&f, raw, 4); a->fill_value = f; }
            else if (e == MT_I32) { int32_t v; memcpy(&v, raw, 4); a->fill_value = v; }
            else if (e == MT_I64) { int64_t v; memcpy(&v, raw, 8); a->fill_value = (double)v; }
            else { uint16_t h; memcpy(&h, raw, 2); a->fill_value = h2f(h); }
            return GAIO_OK;
        }
        break;
    case OP_DROPOUT: /* the identity at inference: its ratio is only checked */
        if (!strcmp(nm, "ratio")) {
            if (!(at->f >= 0.0f && at->f < 1.0f))
                return gaio__node_fail(fn, n, GAIO_ERR_INVALID_ARG, "attribute 'ratio' is %g (0 <= ratio < 1)", (double)at->f);
            return GAIO_OK;
        }
        if (!strcmp(nm, "seed")) return GAIO_OK;
        break;
    case OP_TRANSPOSE:
        if (!strcmp(nm, "perm")) {
            if (at->n_ints > GAIO_MODEL_MAX_NDIM)
                return gaio__node_fail(fn, n, GAIO_ERR_NOT_SUPPORTED, "rank %zu is above gaio's %d", at->n_ints, GAIO_MODEL_MAX_NDIM);
            a->nperm = (int32_t)at->n_ints;
            for (size_t i = 0; i < at->n_ints; i++) a->perm[i] = at->ints[i];
            return GAIO_OK;
        }
        break;
    case OP_RESHAPE:
        if (!strcmp(nm, "allowzero")) return get_flag(fn, n, at, &a->allowzero);
        break;
    case OP_ARGMAX:
    case OP_ARGMIN:
        if (!strcmp(nm, "axis")) return a->axis = at->i, GAIO_OK;
        if (!strcmp(nm, "keepdims")) return get_flag(fn, n, at, &a->keepdims);
        if (!strcmp(nm, "select_last_index")) return get_flag(fn, n, at, &a->select_last_index);
        break;
    case OP_TOPK:
        if (!strcmp(nm, "axis")) return a->axis = at->i, GAIO_OK;
        if (!strcmp(nm, "largest")) return get_flag(fn, n, at, &a->largest);
        if (!strcmp(nm, "sorted")) return get_flag(fn, n, at, &a->sorted);
        if (!strcmp(nm, "k")) { /* opsets up to 9 */
            if (at->i < 0) return gaio__node_fail(fn, n, GAIO_ERR_INVALID_ARG, "attribute 'k' is %lld", (long long)at->i);
            return a->topk_k = at->i, GAIO_OK;
        }
        break;
    case OP_REDUCE_MAX:
    case OP_REDUCE_MIN:
    case OP_REDUCE_SUM:
    case OP_REDUCE_PROD:
    case OP_REDUCE_L1:
    case OP_REDUCE_L2:
    case OP_REDUCE_SUM_SQUARE:
    case OP_REDUCE_LOG_SUM:
    case OP_REDUCE_LOG_SUM_EXP:
    case OP_REDUCE_MEAN:
        if (!strcmp(nm, "keepdims")) return get_flag(fn, n, at, &a->keepdims);
        if (!strcmp(nm, "noop_with_empty_axes")) return get_flag(fn, n, at, &a->noop_with_empty_axes);
        if (!strcmp(nm, "axes")) {
            if (at->n_ints > GAIO_MODEL_MAX_NDIM)
                return gaio__node_fail(fn, n, GAIO_ERR_INVALID_ARG, "attribute 'axes' has %zu entries", at->n_ints);
            a->naxes = (int32_t)at->n_ints;
            for (size_t i = 0; i < at->n_ints; i++) a->axes[i] = at->ints[i];
            return GAIO_OK;
        }
        break;
    case OP_SHAPE:
        /* start / end live in axes[0..1] (naxes 2), which Shape has no other use for. */
        if (!strcmp(nm, "start")) return a->axes[0] = at->i, GAIO_OK;
        if (!strcmp(nm, "end")) return a->axes[1] = at->i, GAIO_OK;
        break;
    case OP_CAST:
        if (!strcmp(nm, "to")) {
            if (at->i != MT_F32 && at->i != MT_F16 && at->i != MT_I32 && at->i != MT_I64 && at->i != MT_BOOL) {
                if (at->i <= 0 || at->i > 23)
                    return gaio__node_fail(fn, n, GAIO_ERR_INVALID_ARG, "attribute 'to' is %lld, no ONNX type", (long long)at->i);
                return gaio__node_fail(fn, n, GAIO_ERR_NOT_SUPPORTED, "a cast to %s is not supported", gaio__mt_name((int32_t)at->i));
            }
            a->to = (int32_t)at->i;
            return GAIO_OK;
        }
        if (!strcmp(nm, "saturate")) return GAIO_OK; /* for 8-bit floats only */
        break;
    case OP_GELU:
        if (!strcmp(nm, "approximate")) {
            if (at->s.len == 4 && at->s.data && !memcmp(at->s.data, "none", 4)) return a->approximate = 0, GAIO_OK;
            if (at->s.len == 4 && at->s.data && !memcmp(at->s.data, "tanh", 4)) return a->approximate = 1, GAIO_OK;
            return gaio__node_fail(fn, n, GAIO_ERR_INVALID_ARG, "attribute 'approximate' is '%.*s' (none or tanh)",
                                   at->s.len > 32 ? 32 : (int)at->s.len, at->s.data ? (const char *)at->s.data : "");
        }
        break;
    case OP_LAYER_NORM:
    case OP_GROUP_NORM:
    case OP_INSTANCE_NORM:
        if (!strcmp(nm, "epsilon")) {
            gaio_status st = get_float(fn, n, at, &a->epsilon);
            if (st == GAIO_OK && a->epsilon < 0)
                return gaio__node_fail(fn, n, GAIO_ERR_INVALID_ARG, "attribute 'epsilon' is negative");
            return st;
        }
        if (!strcmp(nm, "axis")) return a->axis = at->i, GAIO_OK; /* checked against the rank at inference */
        if (!strcmp(nm, "num_groups")) {
            if (at->i < 1 || at->i > INT32_MAX)
                return gaio__node_fail(fn, n, GAIO_ERR_INVALID_ARG, "attribute 'num_groups' is %lld", (long long)at->i);
            return a->num_groups = at->i, GAIO_OK;
        }
        /* Any stash_type: the statistics are computed in f32 whatever it asks for (ONNX
         * defines 1, f32; a wider one would change only roundings below f16's). */
        if (!strcmp(nm, "stash_type")) return a->stash_type = at->i, GAIO_OK;
        break;
    case OP_MOD:
        if (!strcmp(nm, "fmod")) return get_flag(fn, n, at, &a->fmod);
        break;
    case OP_EINSUM:
        if (!strcmp(nm, "equation")) return einsum_terms(fn, n, at, a);
        break;
    case OP_SCATTER_ND:
        if (!strcmp(nm, "reduction")) {
            static const char *const names[] = {"none", "add", "mul", "max", "min"};
            for (int i = 0; i < 5; i++)
                if (at->s.data && at->s.len == strlen(names[i]) && !memcmp(at->s.data, names[i], at->s.len))
                    return a->scatter_reduction = i, GAIO_OK;
            return gaio__node_fail(fn, n, GAIO_ERR_INVALID_ARG, "attribute 'reduction' is '%.*s' (none, add, mul, "
                                   "max or min)", at->s.len > 32 ? 32 : (int)at->s.len,
                                   at->s.data ? (const char *)at->s.data : "");
        }
        break;
    case OP_CONSTANT:
        /* The loader turns the value into the output's data; only its kind is checked here. */
        if (!strcmp(nm, "value_string") || !strcmp(nm, "value_strings") || !strcmp(nm, "sparse_value"))
            return gaio__node_fail(fn, n, GAIO_ERR_NOT_SUPPORTED, "attribute '%s' is not supported", nm);
        return GAIO_OK;
    default: break;
    }
    return gaio__node_fail(fn, n, GAIO_ERR_INVALID_ARG, "attribute '%s' is not handled", nm);
}

static void set_defaults(const mgraph *g, mnode *n) {
    mattrs *a = &n->a;
    memset(a, 0, sizeof *a);
    a->strides[0] = a->strides[1] = 1;
    a->dilations[0] = a->dilations[1] = 1;
    a->group = 1;
    a->alpha = n->op == OP_HARD_SIGMOID ? 0.2f : 1.0f;
    a->beta = n->op == OP_HARD_SIGMOID ? 0.5f : 1.0f;
    a->epsilon = 1e-5f;
    a->clip_min = -INFINITY;
    a->clip_max = INFINITY;
    bool softmax = n->op == OP_SOFTMAX || n->op == OP_LOG_SOFTMAX;
    a->axis = n->op == OP_FLATTEN ? 1 : softmax ? (g->opset >= 13 ? -1 : 1) : n->op == OP_TOPK ? -1 : 0;
    a->coerce_2d = softmax && g->opset < 13;
    a->largest = a->sorted = 1;
    a->fill_elem = MT_F32; /* ConstantOfShape's default: float32 0 */
    if (n->op == OP_UPSAMPLE || (n->op == OP_RESIZE && g->opset < 11))
        a->rs_coord = 1, a->rs_nearest = 2; /* Upsample and Resize-10 index as asymmetric, floor */
    a->rs_cubic_a = -0.75f;
    a->keepdims = 1;
    if (n->op == OP_LAYER_NORM) a->axis = -1;
    a->stash_type = 1;
    if (n->op == OP_SHAPE) {
        a->naxes = 2;
        a->axes[0] = 0;
        a->axes[1] = INT64_MAX; /* to the end */
    }
}

gaio_status gaio__op_parse_attrs(const char *fn, const mgraph *g, const struct Onnx__NodeProto *proto, mnode *n) {
    if (n->op < 0 || n->op >= OP_COUNT) return gaio__node_fail(fn, n, GAIO_ERR_NOT_SUPPORTED, "no such operator in gaio");
    const opspec *s = &specs[n->op];
    if (g->opset < op_since(n->op))
        return gaio__node_fail(fn, n, GAIO_ERR_INVALID_ARG, "%s came in opset %lld; the model's is %lld", n->op_type,
                               (long long)op_since(n->op), (long long)g->opset);
    if (gaio__op_last_opset(n->op) && g->opset > gaio__op_last_opset(n->op))
        return gaio__node_fail(fn, n, GAIO_ERR_INVALID_ARG, "%s left ONNX after opset %lld; the model's is %lld",
                               n->op_type, (long long)gaio__op_last_opset(n->op), (long long)g->opset);
    set_defaults(g, n);
    gaio_status st;

    unsigned seen = 0;
    for (size_t k = 0; k < proto->n_attribute; k++) {
        const Onnx__AttributeProto *at = proto->attribute[k];
        if (!at || !at->name || !at->name[0]) return gaio__node_fail(fn, n, GAIO_ERR_INVALID_ARG, "an attribute has no name");
        if (at->ref_attr_name && at->ref_attr_name[0])
            return gaio__node_fail(fn, n, GAIO_ERR_INVALID_ARG, "attribute '%s' refers to a function's attribute outside a function",
                                   at->name);
        int idx = -1;
        int other = -1; /* the attribute in other opsets */
        for (int i = 0; i < MAX_ATTRS && s->attrs[i].name; i++)
            if (!strcmp(s->attrs[i].name, at->name)) {
                if (in_opset(g, &s->attrs[i])) idx = i;
                else other = i;
            }
        if (idx < 0) {
            if (other >= 0 && s->attrs[other].until)
                return gaio__node_fail(fn, n, GAIO_ERR_INVALID_ARG,
                                       "attribute '%s' belongs to opsets %d to %d; opset %lld %s", at->name,
                                       s->attrs[other].since, s->attrs[other].until, (long long)g->opset,
                                       g->opset > s->attrs[other].until ? "gives it as an input or not at all"
                                                                        : "does not have it");
            if (other >= 0)
                return gaio__node_fail(fn, n, GAIO_ERR_INVALID_ARG, "attribute '%s' came in opset %d; the model's is %lld",
                                       at->name, s->attrs[other].since, (long long)g->opset);
            return gaio__node_fail(fn, n, GAIO_ERR_INVALID_ARG, "unknown attribute '%s' (opset %lld)", at->name, (long long)g->opset);
        }
        if (seen & (1u << idx)) return gaio__node_fail(fn, n, GAIO_ERR_INVALID_ARG, "attribute '%s' is given twice", at->name);
        seen |= 1u << idx;
        if (!at->has_type || (int)at->type != s->attrs[idx].type)
            return gaio__node_fail(fn, n, GAIO_ERR_INVALID_ARG, "attribute '%s' is %s; it must be %s", at->name,
                                   at->has_type ? type_name(at->type) : "untyped", type_name(s->attrs[idx].type));
        if ((st = apply(fn, n, at)) != GAIO_OK) return st;
    }

    /* After the attributes: an opset-12 attribute (Unsqueeze's axes) says more than
     * the input it stands for being missing. */
    if ((st = check_io(fn, g, n, s)) != GAIO_OK) return st;
    mattrs *a = &n->a;
    switch (n->op) {
    case OP_MAX_POOL:
    case OP_AVG_POOL:
        if (!a->nkernel) return gaio__node_fail(fn, n, GAIO_ERR_INVALID_ARG, "attribute 'kernel_shape' is required");
        /* fall through */
    case OP_CONV:
    case OP_CONV_TRANSPOSE:
        if (a->auto_pad != 0 && (a->pads[0] | a->pads[1] | a->pads[2] | a->pads[3]))
            return gaio__node_fail(fn, n, GAIO_ERR_INVALID_ARG, "attributes 'pads' and 'auto_pad' cannot both be set");
        break;
    case OP_CONCAT:
        if (!(seen & 1u)) return gaio__node_fail(fn, n, GAIO_ERR_INVALID_ARG, "attribute 'axis' is required");
        break;
    case OP_CAST:
        if (!(seen & 1u)) return gaio__node_fail(fn, n, GAIO_ERR_INVALID_ARG, "attribute 'to' is required");
        break;
    case OP_GROUP_NORM:
        if (!(seen & 2u)) return gaio__node_fail(fn, n, GAIO_ERR_INVALID_ARG, "attribute 'num_groups' is required");
        break;
    case OP_EINSUM:
        if (!(seen & 1u)) return gaio__node_fail(fn, n, GAIO_ERR_INVALID_ARG, "attribute 'equation' is required");
        if (n->nin != 2)
            return gaio__node_fail(fn, n, GAIO_ERR_NOT_SUPPORTED, "%d operands: gaio's Einsum takes two (the products "
                                   "one batched matrix multiplication computes)", (int)n->nin);
        break;
    case OP_UNSQUEEZE:
        if (g->opset < 13 && !(seen & 1u)) return gaio__node_fail(fn, n, GAIO_ERR_INVALID_ARG, "attribute 'axes' is required");
        break;
    case OP_TOPK:
        if (g->opset < 10 && !(seen & 2u)) return gaio__node_fail(fn, n, GAIO_ERR_INVALID_ARG, "attribute 'k' is required");
        break;
    case OP_UPSAMPLE:
        if (g->opset < 9 && !(seen & 2u)) return gaio__node_fail(fn, n, GAIO_ERR_INVALID_ARG, "attribute 'scales' is required");
        break;
    case OP_RESIZE:
        if (a->rs_coord == 6 && g->opset < 19)
            return gaio__node_fail(fn, n, GAIO_ERR_INVALID_ARG, "coordinate_transformation_mode 'half_pixel_symmetric' "
                                   "came in opset 19; the model's is %lld", (long long)g->opset);
        break;
    case OP_PAD:
        if (g->opset < 11 && !(seen & 2u)) return gaio__node_fail(fn, n, GAIO_ERR_INVALID_ARG, "attribute 'pads' is required");
        break;
    case OP_SLICE:
        if (g->opset < 10 && (seen & 3u) != 3u)
            return gaio__node_fail(fn, n, GAIO_ERR_INVALID_ARG, "attributes 'starts' and 'ends' are required");
        if (g->opset < 10 && (seen & 4u) && a->naxes != a->nslice)
            return gaio__node_fail(fn, n, GAIO_ERR_INVALID_ARG, "attribute 'axes' has %d entries, 'starts' %d", a->naxes,
                                   a->nslice);
        break;
    case OP_CONSTANT:
        if (seen == 0 || (seen & (seen - 1)))
            return gaio__node_fail(fn, n, GAIO_ERR_INVALID_ARG, "exactly one of the value attributes is required");
        break;
    default: break;
    }
    return GAIO_OK;
}
