/* The operator table's names: ONNX operator types and element types. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "model/ops_internal.h"

static const char *const op_names[OP_COUNT] = {
    [OP_CONV] = "Conv",
    [OP_GEMM] = "Gemm",
    [OP_MATMUL] = "MatMul",
    [OP_BATCH_NORM] = "BatchNormalization",
    [OP_RELU] = "Relu",
    [OP_CLIP] = "Clip",
    [OP_SIGMOID] = "Sigmoid",
    [OP_HARD_SIGMOID] = "HardSigmoid",
    [OP_HARD_SWISH] = "HardSwish",
    [OP_ADD] = "Add",
    [OP_SUB] = "Sub",
    [OP_MUL] = "Mul",
    [OP_DIV] = "Div",
    [OP_MAX_POOL] = "MaxPool",
    [OP_AVG_POOL] = "AveragePool",
    [OP_GLOBAL_AVG_POOL] = "GlobalAveragePool",
    [OP_FLATTEN] = "Flatten",
    [OP_RESHAPE] = "Reshape",
    [OP_TRANSPOSE] = "Transpose",
    [OP_CONCAT] = "Concat",
    [OP_SOFTMAX] = "Softmax",
    [OP_IDENTITY] = "Identity",
    [OP_CONSTANT] = "Constant",
    [OP_SHAPE] = "Shape",
    [OP_GATHER] = "Gather",
    [OP_UNSQUEEZE] = "Unsqueeze",
    [OP_SQUEEZE] = "Squeeze",
    [OP_CAST] = "Cast",
    [OP_REDUCE_MEAN] = "ReduceMean",
    [OP_DROPOUT] = "Dropout",
    [OP_SLICE] = "Slice",
    [OP_PAD] = "Pad",
    [OP_SPLIT] = "Split",
    [OP_CONSTANT_OF_SHAPE] = "ConstantOfShape",
    [OP_RANGE] = "Range",
    [OP_EXPAND] = "Expand",
    [OP_RESIZE] = "Resize",
    [OP_UPSAMPLE] = "Upsample",
    [OP_TILE] = "Tile",
    [OP_EQUAL] = "Equal",
    [OP_LESS] = "Less",
    [OP_GREATER] = "Greater",
    [OP_NOT] = "Not",
    [OP_AND] = "And",
    [OP_OR] = "Or",
    [OP_WHERE] = "Where",
    [OP_SQRT] = "Sqrt",
    [OP_EXP] = "Exp",
    [OP_LOG] = "Log",
    [OP_TANH] = "Tanh",
    [OP_ABS] = "Abs",
    [OP_NEG] = "Neg",
    [OP_RECIPROCAL] = "Reciprocal",
    [OP_FLOOR] = "Floor",
    [OP_CEIL] = "Ceil",
    [OP_ERF] = "Erf",
    [OP_SOFTPLUS] = "Softplus",
    [OP_GELU] = "Gelu",
    [OP_SIN] = "Sin",
    [OP_COS] = "Cos",
    [OP_POW] = "Pow",
    [OP_MIN] = "Min",
    [OP_MAX] = "Max",
    [OP_SUM] = "Sum",
    [OP_MEAN] = "Mean",
    [OP_GATHER_ELEMENTS] = "GatherElements",
    [OP_REDUCE_MAX] = "ReduceMax",
    [OP_REDUCE_MIN] = "ReduceMin",
    [OP_REDUCE_SUM] = "ReduceSum",
    [OP_REDUCE_PROD] = "ReduceProd",
    [OP_REDUCE_L1] = "ReduceL1",
    [OP_REDUCE_L2] = "ReduceL2",
    [OP_REDUCE_SUM_SQUARE] = "ReduceSumSquare",
    [OP_REDUCE_LOG_SUM] = "ReduceLogSum",
    [OP_REDUCE_LOG_SUM_EXP] = "ReduceLogSumExp",
    [OP_ARGMAX] = "ArgMax",
    [OP_ARGMIN] = "ArgMin",
    [OP_TOPK] = "TopK",
    [OP_LOG_SOFTMAX] = "LogSoftmax",
    [OP_CONV_TRANSPOSE] = "ConvTranspose",
    [OP_LAYER_NORM] = "LayerNormalization",
    [OP_GROUP_NORM] = "GroupNormalization",
    [OP_INSTANCE_NORM] = "InstanceNormalization",
    [OP_MOD] = "Mod",
    [OP_EINSUM] = "Einsum",
    [OP_SCATTER_ND] = "ScatterND",
};

/* The opset ONNX brought each operator in, where later than 1, and its last where
 * ONNX removed it. */
static const int8_t op_first[OP_COUNT] = {
    [OP_HARD_SWISH] = 14, [OP_CONSTANT_OF_SHAPE] = 9, [OP_RANGE] = 11, [OP_EXPAND] = 8, [OP_RESIZE] = 10,
    [OP_UPSAMPLE] = 7,    [OP_WHERE] = 9,             [OP_ERF] = 9,    [OP_GELU] = 20,  [OP_SIN] = 7,
    [OP_COS] = 7,         [OP_GATHER_ELEMENTS] = 11, [OP_LAYER_NORM] = 17, [OP_GROUP_NORM] = 18,
    [OP_MOD] = 10,        [OP_EINSUM] = 12, [OP_SCATTER_ND] = 11,
};
static const int8_t op_last[OP_COUNT] = {[OP_UPSAMPLE] = 9};

int64_t gaio__op_first_opset(model_op op) { return op >= 0 && op < OP_COUNT && op_first[op] ? op_first[op] : 1; }
int64_t gaio__op_last_opset(model_op op) { return op >= 0 && op < OP_COUNT ? op_last[op] : 0; }

bool gaio__op_folds_only(model_op op) {
    return op == OP_SHAPE || op == OP_CONSTANT || op == OP_CONSTANT_OF_SHAPE || op == OP_RANGE || op == OP_SCATTER_ND ||
           (op >= OP_EQUAL && op < OP_WHERE);
}

gaio_status gaio_model_operator_info(int32_t i, gaio_model_operator *out) {
    GAIO_REQUIRE_PTR(out);
    memset(out, 0, sizeof *out);
    if (i < 0 || i >= OP_COUNT || !op_names[i])
        return GAIO_FAIL(GAIO_ERR_INVALID_ARG, "operator %d does not exist: gaio has %d", (int)i, (int)OP_COUNT);
    int64_t first = gaio__op_first_opset((model_op)i), last = gaio__op_last_opset((model_op)i);
    out->name = op_names[i];
    out->first_opset = (int32_t)(first > GAIO_MODEL_MIN_OPSET ? first : GAIO_MODEL_MIN_OPSET);
    out->last_opset = (int32_t)(last ? last : GAIO_MODEL_MAX_OPSET);
    out->folds_only = gaio__op_folds_only((model_op)i);
    return GAIO_OK;
}

int32_t gaio__op_lookup(const char *op_type) {
    if (!op_type) return -1;
    for (int32_t i = 0; i < OP_COUNT; i++)
        if (op_names[i] && strcmp(op_names[i], op_type) == 0) return i;
    return -1;
}

size_t gaio__mt_size(int32_t elem) {
    switch (elem) {
    case MT_F32: return 4;
    case MT_I32: return 4;
    case MT_I64: return 8;
    case MT_F16: return 2;
    case MT_BOOL: return 1;
    default: return 0;
    }
}

const char *gaio__mt_name(int32_t elem) {
    switch (elem) {
    case MT_F32: return "float32";
    case MT_I32: return "int32";
    case MT_I64: return "int64";
    case MT_F16: return "float16";
    case 2: return "uint8";
    case 3: return "int8";
    case 4: return "uint16";
    case 5: return "int16";
    case 8: return "string";
    case 9: return "bool";
    case 11: return "float64";
    case 12: return "uint32";
    case 13: return "uint64";
    case 14: return "complex64";
    case 15: return "complex128";
    case 16: return "bfloat16";
    default: return elem >= 17 && elem <= 23 ? "8-bit or 4-bit float/int" : "undefined";
    }
}

gaio_status gaio__node_fail(const char *fn, const mnode *n, gaio_status st, const char *fmt, ...) {
    char msg[GAIO_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return gaio__fail(st, fn, "node '%s' (%s): %s", n->name ? n->name : "", n->op_type ? n->op_type : "?", msg);
}
