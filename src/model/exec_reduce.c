/* The steps of the reductions, ArgMax, ArgMin, TopK, Softmax and LogSoftmax
 * (exec_reduce.h).
 *
 * gaio's reduce ops take outputs of the input's rank (1s on the reduced axes): an
 * output of fewer dimensions (keepdims 0), or whose leading 1s exec.c dropped
 * differently from the input's, is the same memory seen with the 1s back in place.
 * ReduceMean over H and W of a 4-D tensor runs as a global average pool, the kernel
 * tuned for it. */
#include <string.h>

#include "core/error.h"
#include "gaio/memory.h"
#include "model/exec_reduce.h"

#define MAXT GAIO_TENSOR_MAX_NDIM

/* t's memory seen with the nd dimensions of shape, whose dimensions other than 1 are
 * t's in order. */
static gaio_status as_shape(const char *fn, const mnode *n, const gaio_tensor *t, int32_t nd, const int64_t *shape,
                            gaio_tensor *out) {
    gaio_tensor r;
    gaio_status st = gaio_tensor_check(t, &r, NULL);
    if (st != GAIO_OK) return st;
    *out = r;
    out->ndim = nd, out->layout = GAIO_TENSOR_ROW_MAJOR;
    int32_t j = 0;
    for (int32_t d = 0; d < MAXT; d++) {
        out->shape[d] = d < nd ? shape[d] : 0;
        out->strides[d] = d < nd ? 1 : 0; /* a dimension of 1: any stride */
        if (d >= nd || shape[d] == 1) continue;
        while (j < r.ndim && r.shape[j] == 1) j++;
        if (j >= r.ndim || r.shape[j] != shape[d])
            return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "node '%s' (%s): the output's shape does not match its input's",
                              n->name, n->op_type);
        out->strides[d] = r.strides[j++];
    }
    return GAIO_OK;
}

static gaio_reduce_op reduce_op(model_op op) {
    switch (op) {
    case OP_REDUCE_MEAN: return GAIO_REDUCE_MEAN;
    case OP_REDUCE_MAX: return GAIO_REDUCE_MAX;
    case OP_REDUCE_MIN: return GAIO_REDUCE_MIN;
    case OP_REDUCE_PROD: return GAIO_REDUCE_PROD;
    case OP_REDUCE_L1: return GAIO_REDUCE_L1;
    case OP_REDUCE_L2: return GAIO_REDUCE_L2;
    case OP_REDUCE_SUM_SQUARE: return GAIO_REDUCE_SUM_SQUARE;
    case OP_REDUCE_LOG_SUM: return GAIO_REDUCE_LOG_SUM;
    case OP_REDUCE_LOG_SUM_EXP: return GAIO_REDUCE_LOG_SUM_EXP;
    default: return GAIO_REDUCE_SUM;
    }
}

/* Zeros over all of y (indices along an axis of 1). */
static gaio_status zero(gaio_stream *s, const gaio_tensor *y) {
    gaio_tensor r;
    size_t bytes = 0;
    gaio_status st = gaio_tensor_check(y, &r, &bytes);
    if (st == GAIO_OK) st = gaio_memset_async(s, r.buffer, r.offset, 0, bytes);
    return st;
}

gaio_status gaio__exec_reduce(const char *fn, gaio_stream *s, const mnode *n, const gaio_tensor *x, int32_t xskip,
                              const gaio_tensor *y, bool indices) {
    const mattrs *a = &n->a;
    const int32_t nd = x->ndim;
    int64_t shape[MAXT];
    memcpy(shape, x->shape, sizeof shape);
    gaio_tensor yk;
    gaio_status st;
    if (n->op == OP_ARGMAX || n->op == OP_ARGMIN || n->op == OP_TOPK) {
        int32_t axis = (int32_t)a->axis - xskip;
        if (axis < 0) { /* along a dimension of 1 exec.c dropped: index 0, the value itself */
            if (n->op != OP_TOPK || indices) return zero(s, y);
            if ((st = as_shape(fn, n, y, nd, shape, &yk)) != GAIO_OK) return st;
            return gaio_cast(s, x, &yk);
        }
        shape[axis] = n->op == OP_TOPK ? a->topk_k : 1;
        if ((st = as_shape(fn, n, y, nd, shape, &yk)) != GAIO_OK) return st;
        if (n->op == OP_TOPK) {
            gaio_topk_params p = {axis, a->largest != 0, a->topk_k};
            return gaio_topk(s, x, indices ? NULL : &yk, indices ? &yk : NULL, &p);
        }
        gaio_arg_reduce_params p = {axis, n->op == OP_ARGMIN, a->select_last_index != 0};
        return gaio_arg_reduce(s, x, &yk, &p);
    }
    uint32_t mask = a->reduce_mask >> xskip;
    for (int32_t d = 0; d < nd; d++)
        if ((mask >> d) & 1u) shape[d] = 1;
    if ((st = as_shape(fn, n, y, nd, shape, &yk)) != GAIO_OK) return st;
    if (n->op == OP_REDUCE_MEAN && nd == 4 && mask == 0xcu) return gaio_global_avg_pool(s, x, &yk);
    gaio_reduce_params p = {reduce_op(n->op), mask};
    return gaio_reduce(s, x, &yk, &p);
}

/* t's dimensions from `from` on as one, where they are one block in memory (each
 * stride the extent of the dimensions after it). */
static bool merge_from(const gaio_tensor *t, int32_t from, gaio_tensor *out) {
    gaio_tensor r;
    if (gaio_tensor_check(t, &r, NULL) != GAIO_OK) return false;
    int64_t size = 1, stride = 1, last = -1;
    for (int32_t d = r.ndim - 1; d >= from; d--) {
        if (r.shape[d] == 1) continue;
        if (last >= 0 && r.strides[d] != r.strides[last] * r.shape[last]) return false;
        if (last < 0) stride = r.strides[d];
        last = d;
        size *= r.shape[d];
    }
    *out = r;
    out->ndim = from + 1, out->layout = GAIO_TENSOR_ROW_MAJOR;
    out->shape[from] = size, out->strides[from] = stride;
    for (int32_t d = from + 1; d < MAXT; d++) out->shape[d] = out->strides[d] = 0;
    for (int32_t d = 0; d < from; d++)
        if (out->shape[d] == 1) out->strides[d] = 1; /* explicit: never all zero */
    return true;
}

gaio_status gaio__exec_softmax(const char *fn, gaio_stream *s, const mnode *n, const gaio_tensor *x, int32_t xskip,
                               const gaio_tensor *y) {
    const mattrs *a = &n->a;
    const bool log = n->op == OP_LOG_SOFTMAX;
    int32_t axis = (int32_t)a->axis - xskip;
    if (!a->coerce_2d) {
        if (axis < 0)
            return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn, "node '%s' (%s): along a leading dimension of 1 of a tensor "
                              "of more than %d dimensions", n->name, n->op_type, MAXT);
        return log ? gaio_log_softmax(s, x, y, axis) : gaio_softmax(s, x, y, axis);
    }
    /* Opsets before 13: over the dimensions from axis on as one. */
    if (axis < 0) axis = 0; /* the dropped dimensions are 1s */
    gaio_tensor xm, ym;
    if (merge_from(x, axis, &xm) && merge_from(y, axis, &ym))
        return log ? gaio_log_softmax(s, &xm, &ym, axis) : gaio_softmax(s, &xm, &ym, axis);
    /* An NHWC tensor from axis 1 on: each image's elements are still one block (in
     * another order, the same in x and y), and a softmax does not mind the order. */
    bool packed = x->layout == y->layout;
    for (int32_t d = 0; d < MAXT && packed; d++) packed = x->strides[d] == 0 && y->strides[d] == 0;
    if (axis > 1 || !packed)
        return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn, "node '%s' (%s, opset < 13): the dimensions from axis %lld on "
                          "are not one block in memory", n->name, n->op_type, (long long)a->axis);
    int64_t outer = 1, inner = 1;
    for (int32_t d = 0; d < x->ndim; d++) *(d < axis ? &outer : &inner) *= x->shape[d];
    gaio_tensor xf = *x, yf = *y;
    xf.ndim = yf.ndim = 2, xf.layout = yf.layout = GAIO_TENSOR_ROW_MAJOR;
    xf.shape[0] = yf.shape[0] = outer, xf.shape[1] = yf.shape[1] = inner;
    return log ? gaio_log_softmax(s, &xf, &yf, 1) : gaio_softmax(s, &xf, &yf, 1);
}
