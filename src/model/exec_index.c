/* The indexing steps' build-time checks (exec_index.h). */
#include "model/exec_index.h"

#include "core/error.h"
#include "gaio/dnn.h"

bool gaio__exec_index_op(model_op op) {
    return op == OP_GATHER || op == OP_GATHER_ELEMENTS || op == OP_WHERE || op == OP_PAD || op == OP_SLICE;
}

/* What input j of an indexing node is. */
typedef enum role { ROLE_DATA, ROLE_INDICES, ROLE_COND, ROLE_ARG } role;

static role role_of(const mnode *n, int32_t j) {
    switch (n->op) {
    case OP_GATHER:
    case OP_GATHER_ELEMENTS: return j == 0 ? ROLE_DATA : ROLE_INDICES;
    case OP_WHERE: return j == 0 ? ROLE_COND : ROLE_DATA;
    default: return j == 0 ? ROLE_DATA : ROLE_ARG; /* Pad, Slice: their arguments resolved at load */
    }
}

gaio_status gaio__exec_index_check(const char *fn, const mgraph *g, const mnode *n) {
    bool gather = n->op == OP_GATHER || n->op == OP_GATHER_ELEMENTS;
    for (int32_t j = 0; j < n->nin; j++) {
        int32_t v = n->in[j];
        if (v < 0) continue;
        const mvalue *val = &g->values[v];
        role r = role_of(n, j);
        if (r == ROLE_ARG) {
            if (!val->data)
                return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn, "node '%s' (%s): input %d is computed at run time",
                                  n->name, n->op_type, (int)j);
            continue;
        }
        if (r == ROLE_INDICES && val->elem != MT_I64 && val->elem != MT_I32)
            return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "node '%s' (%s): the indices '%s' are %s", n->name, n->op_type,
                              val->name, gaio__mt_name(val->elem));
        if (r == ROLE_COND && val->elem != MT_BOOL)
            return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "node '%s' (%s): the condition '%s' is %s", n->name,
                              n->op_type, val->name, gaio__mt_name(val->elem));
        if (!gaio__mt_size(val->elem))
            return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn, "node '%s' (%s) runs on %s values", n->name, n->op_type,
                              gaio__mt_name(val->elem));
        /* gaio_tensor drops leading 1s past its rank, which would move a gather's axis. */
        if (gather && val->ndim > GAIO_TENSOR_MAX_NDIM)
            return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn, "node '%s' (%s): input '%s' has rank %d at run time: gaio "
                              "tensors have 1 to %d dimensions", n->name, n->op_type, val->name, (int)val->ndim,
                              GAIO_TENSOR_MAX_NDIM);
    }
    const mvalue *y = &g->values[n->out[0]];
    if (gather && y->ndim > GAIO_TENSOR_MAX_NDIM)
        return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn, "node '%s' (%s): the output has rank %d: gaio tensors have 1 to "
                          "%d dimensions", n->name, n->op_type, (int)y->ndim, GAIO_TENSOR_MAX_NDIM);
    return GAIO_OK;
}
