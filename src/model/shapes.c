/* Models whose shapes wait for an engine's (mgraph.deferred: a symbolic dimension
 * that an operator needs to know): the graph inferred again, from the values as
 * the file gave them and the build's input shapes, into a model of its own. Shape
 * chains (Shape -> Gather -> Concat -> Reshape, Resize's sizes, ...) then fold as they
 * do for fixed shapes. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "model/model_internal.h"

/* Any symbolic dimension, the batch too: exporters compute with the batch as with the
 * others (FCN's Resize sizes [N, C, H, W] from the input's shape), which folds once
 * it is known. */
bool gaio__graph_deferrable(const mgraph *g) {
    for (int32_t i = 0; i < g->ninputs; i++) {
        const mvalue *v = &g->values[g->inputs[i]];
        for (int32_t d = 0; d < v->ndim; d++)
            if (v->dims[d] < 0) return true;
    }
    return false;
}

/* src's graph inferred again with input i of shape dims[i] (every dimension known)
 * into dst (zeroed by the caller; gaio__graph_free'd by it on failure too). dst shares
 * src's names, weights and index arrays: src must outlive it. */
static gaio_status concretize(const char *fn, const mgraph *src, int64_t (*dims)[GAIO_MODEL_MAX_NDIM], mgraph *dst) {
    dst->values = malloc(((size_t)src->nvalues + 1) * sizeof *dst->values);
    dst->nodes = malloc(((size_t)src->nnodes + 1) * sizeof *dst->nodes);
    if (!dst->values || !dst->nodes) return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory");
    memcpy(dst->values, src->src_values, (size_t)src->nvalues * sizeof *dst->values);
    memcpy(dst->nodes, src->nodes, (size_t)src->nnodes * sizeof *dst->nodes);
    dst->nvalues = dst->cap_values = src->nvalues;
    dst->nnodes = src->nnodes;
    dst->inputs = src->inputs, dst->ninputs = src->ninputs;
    dst->outputs = src->outputs, dst->noutputs = src->noutputs;
    dst->ir_version = src->ir_version, dst->opset = src->opset, dst->producer = src->producer;
    for (int32_t v = 0; v < src->nvalues; v++) dst->values[v].is_output = src->values[v].is_output;
    for (int32_t i = 0; i < src->ninputs; i++) {
        mvalue *v = &dst->values[src->inputs[i]];
        for (int32_t d = 0; d < v->ndim; d++) v->dims[d] = dims[i][d], v->dim_names[d] = "";
    }
    gaio_status st = GAIO_OK;
    for (int32_t i = 0; i < dst->nnodes && st == GAIO_OK; i++) {
        mnode *n = &dst->nodes[i];
        if (n->op == OP_CONSTANT) { /* its value as the load gave it */
            dst->values[n->out[0]] = src->values[n->out[0]];
            continue;
        }
        n->a = src->src_attrs[i];
        st = gaio__op_infer(fn, dst, n);
    }
    for (int32_t i = 0; i < dst->noutputs && st == GAIO_OK; i++) {
        const mvalue *v = &dst->values[dst->outputs[i]];
        if (v->elem != MT_F32 && v->elem != MT_F16 && v->elem != MT_I32 && v->elem != MT_I64 && v->elem != MT_BOOL)
            st = gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn, "graph output '%s' is %s: gaio's outputs are float32, "
                            "float16, int32, int64 or bool", v->name, gaio__mt_name(v->elem));
    }
    if (st == GAIO_OK) st = gaio__graph_drop_folded(fn, dst);
    return st;
}

gaio_status gaio__model_concretize(const char *fn, gaio_model *m, int64_t (*dims)[GAIO_MODEL_MAX_NDIM],
                                   gaio_model **out) {
    *out = NULL;
    gaio_model *c = calloc(1, sizeof *c);
    if (!c) return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory for the model");
    gaio__ref_init(&c->ref);
    gaio_status st = concretize(fn, &m->g, dims, &c->g);
    if (st != GAIO_OK) {
        gaio__graph_free(&c->g);
        free(c);
        return st;
    }
    gaio_model_retain(m);
    c->parent = m;
    *out = c;
    return GAIO_OK;
}
