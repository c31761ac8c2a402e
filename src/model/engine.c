/* The engine builder: a model planned for one context's device (engine_internal.h).
 *
 * A build checks that the executor runs every node, plans the graph (plan.h), gives
 * every value its dtype, layout and place (weights in one device buffer, activations in
 * an arena placed by lifetime, views over their input's memory), converts and uploads
 * the weights once, and plans every convolution (cuDNN's candidates timed) over a
 * scratch arena. Execution contexts (exec.c) then only allocate their arena and, on
 * CUDA, capture their graph. gaio_engine_build_async runs the same on a thread of its
 * own. */
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/object.h"
#include "core/half.h"
#include "gaio/buffer.h"
#include "gaio/context.h"
#include "gaio/device.h"
#include "gaio/future.h"
#include "gaio/memory.h"
#include "gaio/stream.h"
#include "model/collapse.h"
#include "model/engine_internal.h"
#include "model/exec_index.h"
#include "model/lifetime.h"
#include "model/views.h"

#define MAXD GAIO_MODEL_MAX_NDIM
#define ALIGN GAIO_ENGINE_ALIGN

static bool is_view(model_op op) {
    return op == OP_IDENTITY || op == OP_DROPOUT || op == OP_FLATTEN || op == OP_RESHAPE || op == OP_SQUEEZE || op == OP_UNSQUEEZE;
}

gaio_dtype gaio__engine_dtype_of(int32_t elem) {
    switch (elem) {
    case MT_F16: return GAIO_DTYPE_F16;
    case MT_I32: return GAIO_DTYPE_S32;
    case MT_I64: return GAIO_DTYPE_S64;
    case MT_BOOL: return GAIO_DTYPE_U8;
    default: return GAIO_DTYPE_F32;
    }
}

bool gaio__engine_is_float(int32_t elem) { return elem == MT_F32 || elem == MT_F16 || elem == MT_UNDEFINED; }

size_t gaio__xvalue_count(const xvalue *x) {
    size_t n = 1;
    for (int32_t i = 0; i < x->ndim; i++) n *= (size_t)x->dims[i];
    return n;
}

size_t gaio__xvalue_bytes(const xvalue *x) {
    size_t n = gaio__xvalue_count(x);
    if (x->cpitch > 0 && x->ndim == 4 && x->dims[1] > 0) n = n / (size_t)x->dims[1] * (size_t)x->cpitch;
    return n * gaio_dtype_size(x->dtype);
}

static size_t round_up(size_t n) { return (n + ALIGN - 1) / ALIGN * ALIGN; }

/* ---- lifetime ---- */

gaio_engine *gaio__engine_new(gaio_model *m, gaio_context *ctx) {
    gaio_engine *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    gaio__ref_init(&e->ref);
    pthread_mutex_init(&e->lock, NULL);
    pthread_cond_init(&e->cond, NULL);
    pthread_mutex_init(&e->family_lock, NULL);
    gaio_model_retain(m);
    gaio_context_retain(ctx);
    e->model = m, e->ctx = ctx;
    int dev = 0;
    gaio_device_props p;
    e->gpu = gaio_context_device(ctx, &dev) == GAIO_OK && gaio_device_get_props(dev, &p) == GAIO_OK &&
             p.kind == GAIO_DEVICE_CUDA;
    return e;
}

void gaio__engine_free(gaio_engine *e) {
    gaio__profile_free(e);
    if (e->weights) gaio_buffer_release(e->weights);
    for (int32_t i = 0; e->conv_plans && i < e->plan.nsteps; i++)
        if (e->conv_plans[i]) gaio__conv_plan_release(e->conv_plans[i]);
    free(e->conv_plans);
    for (int32_t i = 0; e->packed && i < e->plan.nsteps; i++) gaio__conv_cpu_weights_release(e->packed[i]);
    free(e->packed);
    free(e->kernel);
    free(e->v);
    free(e->copy);
    gaio__plan_free(&e->plan);
    pthread_cond_destroy(&e->cond);
    pthread_mutex_destroy(&e->lock);
    gaio_model_release(e->model);
    gaio_context_release(e->ctx);
    free(e);
}

gaio_status gaio_engine_retain(gaio_engine *e) {
    GAIO_REQUIRE_PTR(e);
    gaio__ref_inc(&e->ref);
    return GAIO_OK;
}

gaio_status gaio_engine_release(gaio_engine *e) {
    if (e && gaio__ref_dec(&e->ref)) gaio__engine_free(e);
    return GAIO_OK;
}

gaio_status gaio__engine_ready(const char *fn, gaio_engine *e) {
    pthread_mutex_lock(&e->lock);
    while (e->building) pthread_cond_wait(&e->cond, &e->lock);
    gaio_status st = e->build_status;
    pthread_mutex_unlock(&e->lock);
    if (st != GAIO_OK) return gaio__fail(st, fn, "the engine's build failed: %s", e->build_msg);
    return GAIO_OK;
}

/* ---- what the executor runs ---- */

/* What a node needs that this executor cannot give: GAIO_ERR_NOT_SUPPORTED naming it. */
/* Values of more than gaio_tensor's 5 dimensions (leading 1s aside) are views that
 * reshapes make and a Transpose that collapses to 6 at most (collapse.h) reads: Swin's
 * and MaxViT's window partitions. Any other step refuses them. */
static gaio_status rank_check(const char *fn, const mgraph *g, const mnode *n) {
    bool view = n->op == OP_RESHAPE || n->op == OP_FLATTEN || n->op == OP_SQUEEZE || n->op == OP_UNSQUEEZE ||
                n->op == OP_IDENTITY || n->op == OP_DROPOUT;
    for (int32_t j = 0; j < n->nin + n->nout; j++) {
        int32_t v = j < n->nin ? n->in[j] : n->out[j - n->nin];
        if (v < 0 || (j < n->nin && j > 0 && view)) continue;
        const mvalue *x = &g->values[v];
        int32_t skip = 0;
        while (skip < x->ndim && x->dims[skip] == 1) skip++;
        if (x->ndim - skip <= GAIO_TENSOR_MAX_NDIM || view) continue;
        if (n->op == OP_TRANSPOSE && j == 0) {
            int64_t cd[GAIO_MODEL_MAX_NDIM];
            int32_t cp[GAIO_MODEL_MAX_NDIM];
            int32_t cr = gaio__transpose_collapse(x->dims, x->ndim, n->a.perm, cd, cp);
            if (cr <= GAIO_TENSOR_MAX_NDIM + 1) continue; /* 6: a loop of 5-D ones (exec.c) */
            return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn, "node '%s' (Transpose): a permutation of %d dimensions that "
                              "does not collapse to %d (gaio tensors have at most %d)", n->name, (int)cr,
                              GAIO_TENSOR_MAX_NDIM + 1, GAIO_TENSOR_MAX_NDIM);
        }
        if (n->op == OP_TRANSPOSE) continue; /* its output, checked with its input */
        return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn, "node '%s' (%s): '%s' has rank %d at run time: gaio tensors have "
                          "1 to %d dimensions (only reshapes and transposes take more)", n->name, n->op_type, x->name,
                          (int)x->ndim, GAIO_TENSOR_MAX_NDIM);
    }
    return GAIO_OK;
}

static gaio_status node_check(const char *fn, const mgraph *g, const mnode *n) {
    if (gaio__op_folds_only(n->op))
        return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn, "node '%s' (%s) did not fold to a constant: gaio runs shape "
                          "arithmetic at load time only", n->name, n->op_type);
    gaio_status rst = rank_check(fn, g, n);
    if (rst != GAIO_OK) return rst;
    if (gaio__exec_index_op(n->op)) return gaio__exec_index_check(fn, g, n); /* any data type (exec_index.c) */
    for (int32_t j = 0; j < n->nin; j++) {
        int32_t v = n->in[j];
        if (v < 0) continue;
        const mvalue *val = &g->values[v];
        bool shape_arg = (n->op == OP_RESHAPE || n->op == OP_UNSQUEEZE || n->op == OP_SQUEEZE || n->op == OP_REDUCE_MEAN ||
                          (n->op >= OP_REDUCE_MAX && n->op <= OP_REDUCE_LOG_SUM_EXP) || n->op == OP_TOPK) &&
                         j == 1; /* axes, K */
        bool clip_arg = n->op == OP_CLIP && j > 0;
        if (n->op == OP_DROPOUT && j > 0) continue; /* ratio, training_mode: not read at inference */
        bool slice_arg = (n->op == OP_SLICE && j > 0) || (n->op == OP_PAD && (j == 1 || j == 3)) ||
                         (n->op == OP_SPLIT && j == 1) || (n->op == OP_EXPAND && j == 1) ||
                         ((n->op == OP_RESIZE || n->op == OP_UPSAMPLE) && j > 0) ||
                         (n->op == OP_TILE && j == 1); /* resolved at load */
        if (shape_arg || clip_arg || slice_arg) {
            if (!val->data)
                return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn, "node '%s' (%s): input %d is computed at run time", n->name,
                                  n->op_type, (int)j);
            continue;
        }
        if (val->elem != MT_F32 && val->elem != MT_F16)
            return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn, "node '%s' (%s) runs on %s values at run time (input '%s'): "
                              "gaio's ops take float32 and float16", n->name, n->op_type, gaio__mt_name(val->elem),
                              val->name);
    }
    if (n->op == OP_GEMM && n->nin > 2 && n->in[2] >= 0) { /* C as gaio_gemm takes it: a row (beta 1) or [M, N] */
        const mvalue *c = &g->values[n->in[2]], *y = &g->values[n->out[0]];
        int64_t rows = y->ndim == 2 ? y->dims[0] : 0, cols = y->ndim == 2 ? y->dims[1] : 0;
        bool row = (c->ndim == 1 && c->dims[0] == cols) || (c->ndim == 2 && c->dims[0] == 1 && c->dims[1] == cols);
        bool full = c->ndim == 2 && c->dims[0] == rows && c->dims[1] == cols;
        if (!(row && n->a.beta == 1.0f) && !full)
            return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn, "node '%s' (Gemm): C of rank %d (broadcast other than "
                              "a row of N, or a row with beta %g != 1) is not supported", n->name, (int)c->ndim,
                              (double)n->a.beta);
    }
    return GAIO_OK;
}

/* gaio_tensor has 1 to GAIO_TENSOR_MAX_NDIM dimensions: a graph input or output the
 * caller could not describe is refused now, not at every run. (Leading 1s beyond that
 * are dropped, as the executor does.) */
static gaio_status io_check(const char *fn, const mgraph *g, int32_t v, const char *what) {
    const mvalue *x = &g->values[v];
    int32_t nd = x->ndim, skip = 0;
    while (nd - skip > GAIO_TENSOR_MAX_NDIM && x->dims[skip] == 1) skip++;
    if (nd == 0)
        return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn, "graph %s '%s' is a scalar (0-D): gaio tensors have 1 to %d "
                          "dimensions", what, x->name, GAIO_TENSOR_MAX_NDIM);
    if (nd - skip > GAIO_TENSOR_MAX_NDIM)
        return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn, "graph %s '%s' has %d dimensions: gaio tensors have 1 to %d",
                          what, x->name, (int)nd, GAIO_TENSOR_MAX_NDIM);
    return GAIO_OK;
}

gaio_status gaio__engine_check_graph(const char *fn, const mgraph *g) {
    for (int32_t i = 0; i < g->nnodes; i++) {
        gaio_status st = node_check(fn, g, &g->nodes[i]);
        if (st != GAIO_OK) return st;
    }
    for (int32_t i = 0; i < g->ninputs + g->noutputs; i++) {
        gaio_status st = io_check(fn, g, i < g->ninputs ? g->inputs[i] : g->outputs[i - g->ninputs],
                                  i < g->ninputs ? "input" : "output");
        if (st != GAIO_OK) return st;
    }
    return GAIO_OK;
}

/* ---- options ---- */

static bool has_symbolic(const mgraph *g) {
    for (int32_t i = 0; i < g->nvalues; i++)
        for (int32_t d = 0; d < g->values[i].ndim; d++)
            if (g->values[i].dims[d] < 0) return true;
    return false;
}

/* The options checked and the value of the symbolic dimensions found: from the given
 * shapes where they name one, else options->batch. gaio's graphs have one symbolic
 * dimension value (the loader infers shapes with a symbolic batch), so every shape
 * must agree on it. */
static gaio_status resolve_options(const char *fn, const mgraph *g, const gaio_engine_options *o, int64_t *batch) {
    if (o->precision < GAIO_MODEL_PRECISION_AUTO || o->precision > GAIO_MODEL_PRECISION_F16_FAST)
        return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "options->precision %d is not a gaio_model_precision",
                          (int)o->precision);
    if (o->layout < GAIO_MODEL_LAYOUT_AUTO || o->layout > GAIO_MODEL_LAYOUT_NHWC)
        return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "options->layout %d is not a gaio_model_layout", (int)o->layout);
    if (o->flags & ~(uint32_t)(GAIO_ENGINE_NO_TUNE | GAIO_ENGINE_NO_CUDA_GRAPH))
        return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "options->flags 0x%x has bits gaio does not define", o->flags);
    if (o->nshapes < 0 || (o->nshapes > 0 && !o->shapes))
        return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "options->nshapes is %d with shapes %s", (int)o->nshapes,
                          o->shapes ? "given" : "NULL");
    int64_t b = -1;
    for (int32_t i = 0; i < o->nshapes; i++) {
        const gaio_engine_shape *s = &o->shapes[i];
        if (!s->name) return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "options->shapes[%d].name is NULL", (int)i);
        int32_t in = -1;
        for (int32_t k = 0; k < g->ninputs && in < 0; k++)
            if (!strcmp(g->values[g->inputs[k]].name, s->name)) in = k;
        if (in < 0) return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "options->shapes[%d]: the model has no input '%s'",
                                      (int)i, s->name);
        for (int32_t k = 0; k < i; k++)
            if (!strcmp(o->shapes[k].name, s->name))
                return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "options->shapes names input '%s' twice", s->name);
        const mvalue *v = &g->values[g->inputs[in]];
        if (s->ndim != v->ndim)
            return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "options->shapes[%d]: input '%s' has %d dimensions, not %d",
                              (int)i, s->name, (int)v->ndim, (int)s->ndim);
        for (int32_t d = 0; d < v->ndim; d++) {
            if (v->dims[d] >= 0) {
                if (s->dims[d] != v->dims[d])
                    return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "options->shapes[%d]: dimension %d of input '%s' is "
                                      "%lld in the model, not %lld", (int)i, (int)d, s->name, (long long)v->dims[d],
                                      (long long)s->dims[d]);
                continue;
            }
            if (s->dims[d] < 1 || s->dims[d] > (1 << 20))
                return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "options->shapes[%d]: dimension %d of input '%s' ('%s') "
                                  "is %lld: 1 to 1048576", (int)i, (int)d, s->name, v->dim_names[d],
                                  (long long)s->dims[d]);
            if (b >= 0 && s->dims[d] != b && !g->deferred)
                return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn, "options->shapes give the symbolic dimensions the values "
                                  "%lld and %lld: gaio plans one value for all of them (dynamic shapes are not "
                                  "built yet)", (long long)b, (long long)s->dims[d]);
            b = s->dims[d];
        }
    }
    gaio_status pst = gaio__profile_check(fn, g, o);
    if (pst != GAIO_OK) return pst;
    *batch = 0;
    if (!has_symbolic(g)) return GAIO_OK;
    if (b < 0) b = o->batch;
    if (b < 1 || b > (1 << 20))
        return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "batch is %lld: the model has a symbolic batch, which must be 1 to "
                          "1048576", (long long)b);
    *batch = b;
    return GAIO_OK;
}

/* ---- weights ---- */

/* The value a step reads at input slot j (its inputs, then the planner's weight, bias,
 * residual and MatMul source: a convolution's own weight and bias inputs are seen
 * through those, as batch-norm folding may have replaced them), or -1. */
int32_t gaio__step_value(const xstep *sp, int32_t j) {
    const mnode *n = sp->n;
    if (j < n->nin) {
        if (n->op == OP_CONV && (j == 1 || j == 2)) return -1; /* sp->w, sp->b instead (maybe folded) */
        if (n->op == OP_BATCH_NORM && j >= 1 && sp->w >= 0) return -1; /* folded to scale sp->w, shift sp->b */
        return n->in[j];
    }
    return j == n->nin ? sp->w : j == n->nin + 1 ? sp->b : j == n->nin + 2 ? sp->res : n->op == OP_MATMUL ? sp->x : -1;
}

static const void *const_data(const gaio_engine *e, int32_t v, int32_t *elem) {
    const mgraph *g = &e->model->g;
    if (v < g->nvalues) {
        *elem = g->values[v].elem;
        return g->values[v].data;
    }
    *elem = e->plan.extra[v - g->nvalues].elem;
    return e->plan.extra[v - g->nvalues].data;
}

/* Host data of `elem` as x's dtype and, for a 4-D value stored NHWC, in that order
 * ([K, C, R, S] row major -> K, R, S, C in memory), into dst. */
static void convert(const void *data, int32_t elem, const xvalue *x, unsigned char *dst) {
    size_t n = gaio__xvalue_count(x);
    if (!gaio__engine_is_float(elem)) { /* integers and booleans: as they are, row major */
        memcpy(dst, data, n * gaio__mt_size(elem));
        return;
    }
    int64_t c = x->ndim == 4 ? x->dims[1] : 1, hw = x->ndim == 4 ? x->dims[2] * x->dims[3] : 1;
    const size_t pitch = x->cpitch > 0 ? (size_t)x->cpitch : (size_t)c; /* dst is zeroed: pads stay 0 */
    for (size_t i = 0; i < n; i++) {
        float f = elem == MT_F16 ? h2f(((const uint16_t *)data)[i]) : ((const float *)data)[i];
        size_t j = i;
        if (x->nhwc) { /* i = ((k * C + ci) * HW + p) -> ((k * HW + p) * pitch + ci) */
            size_t k = i / (size_t)(c * hw), ci = i / (size_t)hw % (size_t)c, p = i % (size_t)hw;
            j = (k * (size_t)hw + p) * pitch + ci;
        }
        if (x->dtype == GAIO_DTYPE_F16)
            ((uint16_t *)dst)[j] = f2h(f);
        else
            ((float *)dst)[j] = f;
    }
}

/* Weights (the float constants the steps read) get their dtype, layout and offset:
 * convolution weights in the activations' layout, batch-norm parameters in f32. */
static gaio_status place_weights(const char *fn, gaio_engine *e) {
    size_t at = 0;
    for (int32_t i = 0; i < e->plan.nsteps; i++) {
        const xstep *sp = &e->plan.steps[i];
        const mnode *n = sp->n;
        for (int32_t j = 0; j < n->nin + GAIO__STEP_SLOTS; j++) {
            int32_t v = gaio__step_value(sp, j), elem = MT_F32;
            if (v < 0 || e->v[v].mem != XM_NONE) continue;
            const void *data = const_data(e, v, &elem);
            if (!data || gaio__mt_size(elem) == 0) continue;
            xvalue *x = &e->v[v];
            if ((n->op == OP_CONV && v == sp->w) || (n->op == OP_CONV_TRANSPOSE && j == 1))
                x->nhwc = e->nhwc && x->ndim == 4;
            if (n->op == OP_BATCH_NORM && j >= 1) x->dtype = GAIO_DTYPE_F32; /* gaio_batch_norm's parameters */
            x->mem = XM_WEIGHT;
            x->off = at;
            size_t b = round_up(gaio__xvalue_bytes(x));
            if (b > SIZE_MAX - at) return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "the weights overflow size_t");
            at += b;
        }
    }
    /* A graph output that folded to a constant (a mask known once the shapes are) is
     * copied out of the weights like any other output. */
    const mgraph *g = &e->model->g;
    for (int32_t i = 0; i < g->noutputs; i++) {
        int32_t v = g->outputs[i], elem = MT_F32;
        if (e->v[v].mem != XM_NONE) continue;
        const void *data = const_data(e, v, &elem);
        if (!data || gaio__mt_size(elem) == 0) continue;
        e->v[v].mem = XM_WEIGHT;
        e->v[v].off = at;
        size_t b = round_up(gaio__xvalue_bytes(&e->v[v]));
        if (b > SIZE_MAX - at) return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "the weights overflow size_t");
        at += b;
    }
    e->weight_bytes = at;
    return GAIO_OK;
}

gaio_status gaio__engine_upload(const char *fn, gaio_engine *e, const void *host, size_t bytes) {
    gaio_buffer *src = NULL;
    gaio_stream *s = NULL;
    gaio_status st = gaio_buffer_alloc(e->ctx, GAIO_MEM_DEVICE, bytes ? bytes : 1, &e->weights);
    /* Straight from the caller's pageable bytes (borrowed, never written): the driver
     * stages them through pinned buffers of its own, where pinning a copy of them all
     * took 40-90 ms for ResNet-50's 48 MB on an H200, more while other threads pinned
     * memory too. */
    if (st == GAIO_OK && bytes) st = gaio_buffer_wrap(e->ctx, GAIO_MEM_HOST, (void *)host, bytes, NULL, NULL, &src);
    if (st == GAIO_OK && bytes) st = gaio_stream_create(e->ctx, 0, 0, &s);
    if (st == GAIO_OK && bytes) st = gaio_memcpy_async(s, e->weights, 0, src, 0, bytes);
    if (st == GAIO_OK && bytes) st = gaio_stream_synchronize(s);
    if (s) gaio_stream_release(s);
    if (src) gaio_buffer_release(src);
    if (st != GAIO_OK) return gaio__fail(st, fn, "uploading the weights: %s", gaio_last_error());
    return GAIO_OK;
}

/* All weights converted on the host into one buffer, then one copy up. */
static gaio_status upload_weights(const char *fn, gaio_engine *e) {
    unsigned char *host = calloc(1, e->weight_bytes ? e->weight_bytes : 1);
    if (!host) return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory for %zu bytes of weights", e->weight_bytes);
    for (int32_t v = 0; v < e->nv; v++) {
        if (e->v[v].mem != XM_WEIGHT) continue;
        int32_t elem = MT_F32;
        const void *data = const_data(e, v, &elem);
        convert(data, elem, &e->v[v], host + e->v[v].off);
    }
    gaio_status st = gaio__engine_upload(fn, e, host, e->weight_bytes);
    free(host);
    return st;
}

/* ---- activations ---- */

/* A view of an NHWC value whose memory order differs from row major (channels and
 * pixels both > 1) needs a row-major copy first. */
static bool needs_copy(const xvalue *in) { return in->nhwc && in->dims[1] > 1 && in->dims[2] * in->dims[3] > 1; }

/* Activations by lifetime: a value is live from the step writing it (staged inputs:
 * from before the first) to the last step reading it or a view of it (outputs: to the
 * end, where they are copied out). */
gaio_status gaio__engine_place_arena(const char *fn, gaio_engine *e) {
    const mgraph *g = &e->model->g;
    int32_t nsteps = e->plan.nsteps;
    mlive *live = calloc((size_t)e->nv + 1, sizeof *live);
    if (!live) return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory");
    for (int32_t v = 0; v < e->nv; v++) {
        const xvalue *x = &e->v[v];
        if (x->mem != XM_ARENA) continue;
        live[v].bytes = gaio__xvalue_bytes(x) ? gaio__xvalue_bytes(x) : 1;
        live[v].first = live[v].last = x->staged ? -1 : nsteps;
    }
    for (int32_t i = 0; i < nsteps; i++) {
        const xstep *sp = &e->plan.steps[i];
        int32_t out = e->v[sp->out].root;
        if (e->v[out].mem == XM_ARENA && live[out].first > i) live[out].first = i;
        for (int32_t j = 0; j < sp->n->nin + GAIO__STEP_SLOTS; j++) {
            int32_t v = gaio__step_value(sp, j);
            if (v < 0) continue;
            int32_t root = e->v[v].root;
            if (e->v[root].mem == XM_ARENA && live[root].last < i) live[root].last = i;
        }
    }
    for (int32_t i = 0; i < g->noutputs; i++) {
        int32_t root = e->v[g->outputs[i]].root;
        if (e->v[root].mem == XM_ARENA) live[root].last = nsteps;
    }
    for (int32_t v = 0; v < e->nv; v++)
        if (live[v].bytes && live[v].last < live[v].first) live[v].last = live[v].first; /* written, never read */
    size_t total = 0;
    if (gaio__place_by_lifetime(live, e->nv, ALIGN, &total) != 0) {
        free(live);
        return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory");
    }
    for (int32_t v = 0; v < e->nv; v++)
        if (e->v[v].mem == XM_ARENA) e->v[v].off = live[v].offset;
    free(live);
    e->arena_bytes = total;
    return GAIO_OK;
}

/* Operators whose 4-D tensors are images: NHWC is their fast layout. */
static bool spatial(model_op op) {
    switch (op) {
    case OP_CONV:
    case OP_CONV_TRANSPOSE:
    case OP_MAX_POOL:
    case OP_AVG_POOL:
    case OP_GLOBAL_AVG_POOL:
    case OP_BATCH_NORM:
    case OP_RESIZE:
    case OP_UPSAMPLE:
    case OP_REDUCE_MEAN: return true;
    default: return false;
    }
}

/* Operators whose output is computed element by element (or moved) from inputs of its
 * shape: they keep their inputs' layout. */
static bool elementwise(model_op op) {
    switch (op) {
    case OP_RELU: case OP_CLIP: case OP_SIGMOID: case OP_HARD_SIGMOID: case OP_HARD_SWISH:
    case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV: case OP_POW: case OP_MOD:
    case OP_MIN: case OP_MAX: case OP_SUM: case OP_MEAN:
    case OP_SQRT: case OP_EXP: case OP_LOG: case OP_TANH: case OP_ABS: case OP_NEG: case OP_RECIPROCAL:
    case OP_FLOOR: case OP_CEIL: case OP_ERF: case OP_SOFTPLUS: case OP_GELU: case OP_SIN: case OP_COS:
    case OP_CAST: case OP_CONCAT: case OP_SPLIT: case OP_SLICE: case OP_PAD: case OP_TILE: case OP_EXPAND:
    case OP_WHERE:
    case OP_SOFTMAX: /* opset < 13 over [C, H, W] reads x and y in one order */
    case OP_LAYER_NORM: case OP_GROUP_NORM: case OP_INSTANCE_NORM: /* any strides; a UNet's GroupNorm between convs */
        return true;
    default: return false;
    }
}

/* A Pad that pads nothing or a Slice that takes everything, in order (Swin's padding
 * of its maps to whole windows, and the crop back, where the maps are whole windows
 * already): a view of its input, as a Reshape is. */
static bool noop_step(const gaio_engine *e, const xstep *sp) {
    const mnode *n = sp->n;
    if ((n->op != OP_PAD && n->op != OP_SLICE) || sp->out != n->out[0]) return false;
    const xvalue *x = &e->v[n->in[0]], *y = &e->v[sp->out];
    if (x->ndim != y->ndim || x->dtype != y->dtype || memcmp(x->dims, y->dims, sizeof x->dims)) return false;
    for (int32_t d = 0; d < x->ndim; d++)
        if (n->op == OP_PAD ? n->a.pad_begin[d] != 0 : n->a.slice_start[d] != 0 || n->a.slice_step[d] != 1) return false;
    return true;
}

enum { TO_NHWC, TO_NCHW };

/* sp is a Transpose of a 4-D float value by (0, 2, 3, 1) (TO_NHWC: [N, C, H, W] into
 * [N, H, W, C]) or by (0, 3, 1, 2) (TO_NCHW). Its step may write a value of the same
 * shape in place of the node's output (plan.c: a layer scale folded into the MatMul
 * before it). */
static bool transpose_perm(const gaio_engine *e, const xstep *sp, int which) {
    static const int64_t perms[2][4] = {{0, 2, 3, 1}, {0, 3, 1, 2}};
    const mnode *n = sp->n;
    if (n->op != OP_TRANSPOSE || n->a.nperm != 4 || e->v[sp->out].ndim != 4) return false;
    for (int d = 0; d < 4; d++)
        if (e->v[sp->out].dims[d] != e->v[n->out[0]].dims[d]) return false;
    const xvalue *x = &e->v[n->in[0]];
    if (x->ndim != 4 || (x->dtype != GAIO_DTYPE_F16 && x->dtype != GAIO_DTYPE_F32)) return false;
    for (int d = 0; d < 4; d++)
        if (n->a.perm[d] != perms[which][d]) return false;
    return true;
}

/* A Transpose that only renames the dimensions of its input's bytes: an NHWC
 * [N, C, H, W] read as a row-major [N, H, W, C] (TO_NHWC), or a row-major [N, H, W, C]
 * read as an NHWC [N, C, H, W] (TO_NCHW, where the output is wanted NHWC). Its output
 * is then a view of its input, as a Reshape's is; the step does nothing (exec.c). ConvNeXt
 * has two per block, Swin two per stage. */
static bool transpose_view(const gaio_engine *e, const xstep *sp, const bool *want) {
    const xvalue *in = &e->v[sp->n->in[0]];
    if (in->cpitch > 0) return false; /* padded channels: not the bytes of a packed tensor */
    if (transpose_perm(e, sp, TO_NHWC)) return in->nhwc;
    return transpose_perm(e, sp, TO_NCHW) && !in->nhwc && e->nhwc && want[sp->out];
}

/* Which values an NHWC engine stores NHWC (4-D ones only): those a spatial operator
 * writes or reads, and those element-wise operators compute from them; never a MatMul's,
 * Gemm's or Einsum's operands or result (cuBLAS takes row-major matrices). The rest, such as
 * attention's [batch, heads, tokens, dim] tensors, stay row major. Every step takes
 * either layout tensor by tensor: this picks the fast one, correctness does not
 * depend on it. NULL: out of memory. */
static bool *layout_wants(const gaio_engine *e) {
    bool *want = calloc((size_t)e->nv + 1, sizeof *want);
    if (!want) return NULL;
    for (int32_t i = 0; i < e->plan.nsteps; i++) {
        const xstep *sp = &e->plan.steps[i];
        if (!spatial(sp->n->op)) continue;
        want[sp->out] = true;
        for (int32_t j = 0; j < sp->n->nin; j++) /* a convolution's weights too, where a caller feeds them */
            if (sp->n->in[j] >= 0) want[sp->n->in[j]] = true;
        if (sp->res >= 0) want[sp->res] = true;
    }
    /* A Transpose of [N, H, W, C] into [N, C, H, W] (ConvNeXt's and Swin's way back from
     * their channels-last blocks) is free as NHWC: a view (transpose_view). */
    for (int32_t i = 0; i < e->plan.nsteps; i++)
        if (transpose_perm(e, &e->plan.steps[i], TO_NCHW)) want[e->plan.steps[i].out] = true;
    for (int32_t i = 0; i < e->plan.nsteps; i++) {
        const mnode *n = e->plan.steps[i].n;
        if (!elementwise(n->op)) continue;
        bool any = false;
        for (int32_t j = 0; j < n->nin; j++) any = any || (n->in[j] >= 0 && e->v[n->in[j]].ndim == 4 && want[n->in[j]]);
        for (int32_t j = 0; j < n->nout && any; j++)
            if (n->out[j] >= 0) want[n->out[j]] = true;
    }
    for (int32_t i = 0; i < e->plan.nsteps; i++) {
        const mnode *n = e->plan.steps[i].n;
        if (n->op != OP_MATMUL && n->op != OP_GEMM && n->op != OP_EINSUM) continue;
        for (int32_t j = 0; j < n->nin; j++)
            if (n->in[j] >= 0) want[n->in[j]] = false;
        if (e->plan.steps[i].w >= 0) want[e->plan.steps[i].w] = false; /* the planner's sources of B and A */
        if (e->plan.steps[i].x >= 0) want[e->plan.steps[i].x] = false;
        if (e->plan.steps[i].res >= 0) want[e->plan.steps[i].res] = false; /* a MatMul's C */
        want[e->plan.steps[i].out] = false;
    }
    /* ...but NHWC for a product written as the rows of an NHWC value (plan.c
     * nhwc_residual_of), and the residual it adds. */
    for (int32_t i = 0; i < e->plan.nsteps; i++)
        if (e->plan.steps[i].rows_nhwc) {
            want[e->plan.steps[i].out] = true;
            if (e->plan.steps[i].res >= 0) want[e->plan.steps[i].res] = true;
        }
    return want;
}

/* Ops whose steps read and write any strides at full speed (gaio's own kernels: pools,
 * resizes, element-wise ops, Split's and Concat's copies): a Concat input of them may be
 * a channel slice of the Concat's output. Not convolutions: cuDNN 9.14 ran those with a
 * slice in or out through a copy kernel of its own (nhwcSliceCKernel) and slower engines
 * (YOLO-style detector b32 on an H200: 4.24 -> 4.84 ms), and oneDNN reorders them. */
static bool strided_io(model_op op) {
    switch (op) {
    case OP_MAX_POOL: case OP_AVG_POOL: case OP_RESIZE: case OP_UPSAMPLE:
    case OP_RELU: case OP_CLIP: case OP_SIGMOID: case OP_HARD_SIGMOID: case OP_HARD_SWISH:
    case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV:
    case OP_SPLIT: case OP_CONCAT:
        return true;
    default: return false;
    }
}

/* Whether step i reads and writes through strided_io's kernels as the node's op says
 * (not a view's copy, a GELU chain, or a Concat reading an earlier one's output). */
static bool strided_step(const gaio_engine *e, int32_t i) {
    const xstep *sp = &e->plan.steps[i];
    return strided_io(sp->n->op) && !e->copy[i] && !sp->gelu && !(sp->n->op == OP_CONCAT && sp->res >= 0);
}

/* Concat inputs written in place (TensorRT's concat elimination): on an NHWC engine, a
 * Concat of 4-D values along the channels whose input u is written by a step of
 * strided_io and read by such steps only becomes the slice of the Concat's output it
 * would be copied to (cpitch the output's channels, voff its first channel), and the
 * Concat copies the rest only: YOLO's SPPF pools, its C2f blocks' first Split half and
 * last residual Add, its neck's upsampled maps. On GPU engines;
 * GAIO_MODEL_CONCAT_IN_PLACE=1 on host ones too, =0 on none. */
static gaio_status concat_in_place(const char *fn, gaio_engine *e) {
    const char *env = getenv("GAIO_MODEL_CONCAT_IN_PLACE");
    bool on = env && *env ? strcmp(env, "0") != 0 : e->gpu;
    if (!on || !e->nhwc) return GAIO_OK;
    const mgraph *g = &e->model->g;
    const int32_t nv = e->nv, ns = e->plan.nsteps;
    int32_t *writer = malloc(((size_t)nv + 1) * sizeof *writer), *roots = calloc((size_t)nv + 1, sizeof *roots);
    bool *bad_reader = calloc((size_t)nv + 1, sizeof *bad_reader);
    if (!writer || !roots || !bad_reader) {
        free(writer), free(roots), free(bad_reader);
        return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory");
    }
    for (int32_t v = 0; v < nv; v++) writer[v] = -1, roots[e->v[v].root]++;
    for (int32_t i = 0; i < ns; i++) {
        const xstep *sp = &e->plan.steps[i];
        writer[sp->out] = writer[sp->out] == -1 ? i : -2; /* -2: written twice */
        for (int32_t j = 0; j < sp->n->nin + GAIO__STEP_SLOTS; j++) {
            const int32_t v = gaio__step_value(sp, j);
            if (v >= 0 && !strided_step(e, i)) bad_reader[v] = true;
        }
    }
    for (int32_t i = 0; i < ns; i++) {
        const xstep *sp = &e->plan.steps[i];
        const mnode *n = sp->n;
        const xvalue *y = &e->v[sp->out];
        int64_t axis = n->a.axis < 0 ? n->a.axis + y->ndim : n->a.axis;
        if (n->op != OP_CONCAT || sp->res >= 0 || axis != 1 || y->ndim != 4 || !y->nhwc || y->root != sp->out ||
            y->mem != XM_ARENA || y->cpitch || y->vndim || y->staged || (y->dtype != GAIO_DTYPE_F16 &&
                                                                      y->dtype != GAIO_DTYPE_F32))
            continue;
        int64_t c0 = 0;
        for (int32_t j = 0; j < n->nin; c0 += e->v[n->in[j]].dims[1], j++) {
            const int32_t u = n->in[j];
            xvalue *x = &e->v[u];
            const int32_t w = writer[u];
            bool once = true;
            for (int32_t k = 0; k < n->nin; k++) once = once && (k == j || n->in[k] != u);
            if (!once || w < 0 || bad_reader[u] || roots[u] != 1 || x->root != u || x->mem != XM_ARENA ||
                x->staged || x->input >= 0 || g->values[u].is_output || !x->nhwc || x->cpitch || x->vndim ||
                x->ndim != 4 || x->dtype != y->dtype || x->dims[0] != y->dims[0] || x->dims[2] != y->dims[2] ||
                x->dims[3] != y->dims[3])
                continue;
            if (!strided_step(e, w) || e->plan.steps[w].n->op == OP_CONCAT) continue;
            x->root = sp->out, x->cpitch = (int32_t)y->dims[1], x->voff = c0, x->mem = XM_NONE, x->off = 0;
        }
        int32_t placed = 0;
        for (int32_t j = 0; j < n->nin; j++) placed += e->v[n->in[j]].root == sp->out;
        if (placed == n->nin)
            snprintf(e->kernel[i], sizeof e->kernel[i], "none: its inputs written in place");
        else if (placed)
            snprintf(e->kernel[i], sizeof e->kernel[i], "gaio_cast of %d inputs, %d written in place",
                     (int)(n->nin - placed), (int)placed);
    }
    free(writer), free(roots), free(bad_reader);
    return GAIO_OK;
}

/* Graph inputs that only convolutions read as x (groups 1, weights constant and read
 * by those convolutions alone), with C not a multiple of 8, are staged with their
 * channels padded with zeros to the next multiple, and so are the weights: cuDNN's
 * tensor-core engines want C % 8 == 0. Measured with cuDNN 9.14 on an H200 (f16, batch
 * 32), only a stem that fuses Clip inside cuDNN's plan needed it: MobileNetV2's
 * (ReLU6) ran in a grouped direct kernel, 0.57 ms of the model's 1.65, and padded the
 * model took 1.25 ms; stems with ReLU or none (ResNet-50, EfficientNet-B0, MNASNet,
 * MobileNetV3) had fast engines already, and padding cost them 0-13% (the memset and
 * the wider reads; ResNet-50 batch 1 the most). So on a GPU, f16 NHWC engines pad those stems;
 * GAIO_MODEL_PAD_CHANNELS=1 pads every one on any NHWC engine (to test the host's
 * side of it), =0 none. */
static void pad_stems(gaio_engine *e, const bool *want) {
    const char *env = getenv("GAIO_MODEL_PAD_CHANNELS");
    bool forced = env && *env && strcmp(env, "0") != 0, on = env && *env ? forced : e->gpu && e->f16;
    if (!on || !e->nhwc) return;
    const mgraph *g = &e->model->g;
    for (int32_t i = 0; i < g->ninputs; i++) {
        int32_t v = g->inputs[i];
        xvalue *x = &e->v[v];
        if (x->ndim != 4 || x->dims[1] % 8 == 0 || !want[v] ||
            (x->dtype != GAIO_DTYPE_F32 && x->dtype != GAIO_DTYPE_F16))
            continue;
        bool ok = true, any = false, slow = forced; /* a stem without a fast engine */
        for (int32_t o = 0; o < g->noutputs; o++) ok = ok && g->outputs[o] != v;
        for (int32_t s = 0; s < e->plan.nsteps && ok; s++) {
            const xstep *sp = &e->plan.steps[s];
            bool reads = false;
            for (int32_t j = 0; j < sp->n->nin + GAIO__STEP_SLOTS; j++) reads = reads || gaio__step_value(sp, j) == v;
            if (!reads) continue;
            int32_t elem = MT_F32;
            ok = sp->n->op == OP_CONV && sp->n->in[0] == v && sp->res != v && sp->n->a.group == 1 && sp->w >= 0 &&
                 sp->w != v && e->v[sp->w].ndim == 4 && const_data(e, sp->w, &elem) != NULL;
            any = true;
            /* Clip (ReLU6) is the one act besides ReLU that cuDNN's plan fuses by default;
             * the others now run after a conv + bias plan, whose stems were fast. */
            slow = slow || (sp->has_act && sp->act.op == GAIO_UNARY_CLIP);
            for (int32_t t = 0; t < e->plan.nsteps && ok; t++) /* the weights: these convolutions' only */
                for (int32_t j = 0; j < e->plan.steps[t].n->nin + GAIO__STEP_SLOTS && ok; j++)
                    if (gaio__step_value(&e->plan.steps[t], j) == sp->w)
                        ok = e->plan.steps[t].n->op == OP_CONV && e->plan.steps[t].w == sp->w &&
                             e->plan.steps[t].n->in[0] == v;
        }
        if (!ok || !any || !slow) continue;
        int32_t pitch = (int32_t)((x->dims[1] + 7) / 8 * 8);
        x->cpitch = pitch;
        for (int32_t s = 0; s < e->plan.nsteps; s++)
            if (e->plan.steps[s].n->op == OP_CONV && e->plan.steps[s].n->in[0] == v)
                e->v[e->plan.steps[s].w].cpitch = pitch;
    }
}

/* Every value's dtype, layout and place. */
static gaio_status place_values(const char *fn, gaio_engine *e) {
    const mgraph *g = &e->model->g;
    for (int32_t i = 0; i < e->nv; i++) {
        xvalue *x = &e->v[i];
        int32_t elem, ndim;
        const int64_t *dims;
        if (i < g->nvalues) {
            elem = g->values[i].elem, ndim = g->values[i].ndim < 0 ? 0 : g->values[i].ndim, dims = g->values[i].dims;
        } else {
            const xconst *c = &e->plan.extra[i - g->nvalues];
            elem = c->elem, ndim = c->ndim, dims = c->dims;
        }
        x->ndim = ndim;
        for (int32_t d = 0; d < ndim; d++) x->dims[d] = dims[d] < 0 ? e->batch : dims[d];
        /* f16 engines keep integers (indices) and booleans as they are. */
        x->dtype = e->f16 && gaio__engine_is_float(elem) ? GAIO_DTYPE_F16 : gaio__engine_dtype_of(elem);
        x->root = i;
        x->input = -1;
    }
    for (int32_t i = 0; i < g->ninputs; i++) e->v[g->inputs[i]].input = i;
    bool *want = layout_wants(e);
    if (!want) return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory");
    pad_stems(e, want);
    gaio_status st = place_weights(fn, e);
    /* Graph inputs in another precision or layout than the caller's are copied in; so
     * are all of them under a graph, whose kernels read fixed addresses. */
    for (int32_t i = 0; i < g->ninputs && st == GAIO_OK; i++) {
        xvalue *x = &e->v[g->inputs[i]];
        /* Integers (indices) stay row major: they leave the engine by a plain copy. */
        x->nhwc = e->nhwc && x->ndim == 4 && want[g->inputs[i]] &&
                  (x->dtype == GAIO_DTYPE_F32 || x->dtype == GAIO_DTYPE_F16);
        if (x->dtype == gaio__engine_dtype_of(g->values[g->inputs[i]].elem) && !x->nhwc && !e->cuda_graph) continue;
        x->staged = true;
        x->mem = XM_ARENA;
    }
    for (int32_t i = 0; i < e->plan.nsteps && st == GAIO_OK; i++) {
        const xstep *sp = &e->plan.steps[i];
        const mnode *n = sp->n;
        xvalue *x = &e->v[sp->out];
        if (is_view(n->op) || noop_step(e, sp)) {
            const xvalue *in = &e->v[n->in[0]];
            bool same = x->ndim == in->ndim && !memcmp(x->dims, in->dims, sizeof x->dims);
            /* An NHWC input of the same shape stays NHWC where the readers want it so;
             * readers that take row-major operands only (MatMul) get a copy. */
            bool keep = same && in->nhwc && want[sp->out];
            if (keep || !needs_copy(in)) {
                x->root = in->root;
                /* Same memory; NHWC only where kept (else its bytes are row-major's too). */
                x->nhwc = keep && x->ndim == 4;
                if (!is_view(n->op)) snprintf(e->kernel[i], sizeof e->kernel[i], "none: a view of its input");
                continue;
            }
            e->copy[i] = true; /* into x's own row-major memory, then viewed */
        } else if (transpose_view(e, sp, want)) {
            const xvalue *in = &e->v[n->in[0]];
            x->root = in->root, x->nhwc = !in->nhwc;
            snprintf(e->kernel[i], sizeof e->kernel[i], "none: a view of its input");
            continue;
        } else {
            /* Integers (indices) stay row major: they leave the engine by a plain copy. */
            x->nhwc = e->nhwc && x->ndim == 4 && want[sp->out] &&
                      (x->dtype == GAIO_DTYPE_F32 || x->dtype == GAIO_DTYPE_F16);
        }
        x->mem = XM_ARENA;
    }
    free(want);
    if (st == GAIO_OK) st = concat_in_place(fn, e);
    if (st == GAIO_OK) gaio__engine_attention_views(e);
    if (st == GAIO_OK) st = gaio__engine_place_arena(fn, e);
    return st;
}

/* The tables sized by the plan: values, view copies, kept plans, kernel texts. */
static gaio_status alloc_tables(const char *fn, gaio_engine *e) {
    size_t steps = (size_t)e->plan.nsteps + 1;
    e->v = calloc((size_t)e->nv + 1, sizeof *e->v);
    e->copy = calloc(steps, sizeof *e->copy);
    e->conv_plans = calloc(steps, sizeof *e->conv_plans);
    e->kernel = calloc(steps, sizeof *e->kernel);
    if (!e->v || !e->copy || !e->conv_plans || !e->kernel)
        return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory");
    /* What the planner rewrote that the step's operators do not show (convolutions get
     * their engine's name when planned). */
    for (int32_t i = 0; i < e->plan.nsteps; i++) {
        const xstep *sp = &e->plan.steps[i];
        if (sp->n->op == OP_CONCAT && sp->res >= 0) /* plan.c concat_prefix */
            snprintf(e->kernel[i], sizeof e->kernel[i], "gaio_concat, its first %d inputs read as '%s'", (int)sp->w,
                     sp->res < e->model->g.nvalues ? e->model->g.values[sp->res].name : "?");
    }
    return GAIO_OK;
}

/* The convolutions planned (when `plan`) and their host weights packed over a scratch
 * arena of the contexts' size: cuDNN's plans depend on the tensors' shapes, strides and
 * alignment, which every context shares. */
static gaio_status over_scratch(gaio_engine *e, bool plan) {
    gaio_buffer *arena = NULL;
    gaio_stream *s = NULL;
    gaio_status st = gaio_buffer_alloc(e->ctx, GAIO_MEM_DEVICE, e->arena_bytes ? e->arena_bytes : 1, &arena);
    if (st == GAIO_OK) st = gaio_stream_create(e->ctx, 0, 0, &s);
    if (st == GAIO_OK && plan) st = gaio__engine_prepare_convs(e, s, arena);
    if (st == GAIO_OK) st = gaio__engine_pack_convs(e, s, arena);
    if (st == GAIO_OK) st = gaio_stream_synchronize(s);
    if (s) gaio_stream_release(s);
    if (arena) gaio_buffer_release(arena);
    return st;
}

/* A loaded engine: its cuDNN plans came with it; only a host engine's weights to pack. */
gaio_status gaio__engine_pack_host(gaio_engine *e) { return e->gpu ? GAIO_OK : over_scratch(e, false); }

static gaio_status build(const char *fn, gaio_engine *e, const gaio_engine_options *o, int64_t batch) {
    double t0 = gaio__now_s();
    const mgraph *g = &e->model->g;
    e->batch = batch;
    e->flags = o->flags | (o->precision == GAIO_MODEL_PRECISION_F16_FAST ? GAIO__ENGINE_F16_FAST : 0u);
    e->f16 = o->precision == GAIO_MODEL_PRECISION_F16 || o->precision == GAIO_MODEL_PRECISION_F16_FAST ||
             (o->precision == GAIO_MODEL_PRECISION_AUTO && e->gpu);
    e->nhwc = o->layout != GAIO_MODEL_LAYOUT_NCHW;
    const char *env = getenv("GAIO_MODEL_CUDA_GRAPH");
    e->cuda_graph = e->gpu && !(o->flags & GAIO_ENGINE_NO_CUDA_GRAPH) && !(env && !strcmp(env, "0"));
    /* Every activation the planner knows fuses into its convolution's step (SiLU
     * written as x * Sigmoid(x) too). On a GPU those beyond Relu and Clip then run as
     * one in-place pass after cuDNN's plan (dnn/cuda/cudnn_graph.c act_in_plan), or
     * inside gaio's depthwise kernel: one pass instead of a Sigmoid and a Mul.
     * GAIO_MODEL_FUSE_ACTS=relu keeps the steps to Relu and Clip (to compare). */
    const char *acts = getenv("GAIO_MODEL_FUSE_ACTS");
    bool all_acts = !(acts && !strcmp(acts, "relu"));
    /* Fused attention where its GPU kernel runs (f16); GAIO_MODEL_ATTENTION=0 keeps the
     * graph's MatMuls and Softmax, to compare, =1 fuses it on any engine (the host's
     * kernel takes any head size and dtype: tests of the planning run without a GPU). */
    const char *att = getenv("GAIO_MODEL_ATTENTION");
    bool attention = att && !strcmp(att, "1") ? true : e->gpu && e->f16 && !(att && !strcmp(att, "0"));
    const xplan_opts po = {all_acts, attention, e->nhwc};
    gaio_status st = gaio__plan_make(fn, g, &po, &e->plan);
    e->nv = g->nvalues + e->plan.nextra;
    if (st == GAIO_OK) st = alloc_tables(fn, e);
    if (st == GAIO_OK) st = place_values(fn, e);
    if (st == GAIO_OK) st = upload_weights(fn, e);
    if (st == GAIO_OK) st = over_scratch(e, true);
    if (st == GAIO_OK && gaio__profile_given(o))
        st = gaio__profile_set(fn, e, e->model->parent ? e->model->parent : e->model, o);
    e->build_seconds = gaio__now_s() - t0;
    if (st == GAIO_OK && getenv("GAIO_MODEL_TRACE"))
        fprintf(stderr, "gaio: engine: %d steps for %d nodes; %d batch norms folded, %d adds and %d activations "
                "fused; %s %s; weights %.1f MiB, activations %.1f MiB a context%s; built in %.2f s\n",
                (int)e->plan.nsteps, (int)g->nnodes, (int)e->plan.folded_bn, (int)e->plan.fused_add,
                (int)e->plan.fused_act, e->f16 ? "f16" : "model's precision", e->nhwc ? "NHWC" : "NCHW",
                e->weight_bytes / 1048576.0, e->arena_bytes / 1048576.0, e->cuda_graph ? "; CUDA graphs" : "",
                e->build_seconds);
    return st;
}

/* Every input's shape for a model whose shapes wait for the build: options->shapes's,
 * or the model's with a symbolic first dimension set to options->batch (the others
 * must be given). */
static gaio_status deferred_dims(const char *fn, const mgraph *g, const gaio_engine_options *o,
                                 int64_t (*dims)[GAIO_MODEL_MAX_NDIM]) {
    for (int32_t i = 0; i < g->ninputs; i++) {
        const mvalue *v = &g->values[g->inputs[i]];
        const gaio_engine_shape *given = NULL;
        for (int32_t k = 0; k < o->nshapes && !given; k++)
            if (!strcmp(o->shapes[k].name, v->name)) given = &o->shapes[k];
        for (int32_t d = 0; d < v->ndim; d++) {
            dims[i][d] = given ? given->dims[d] : v->dims[d] >= 0 ? v->dims[d] : d == 0 ? o->batch : 0;
            if (dims[i][d] < 1 || dims[i][d] > (1 << 20))
                return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "input '%s' has symbolic dimension %d ('%s') that its "
                                  "operators need known (%s): give the input's shape in options->shapes", v->name,
                                  (int)d, v->dim_names[d], g->deferred_why ? g->deferred_why : "");
        }
    }
    return GAIO_OK;
}

/* Checks everything a build takes; *batch the symbolic dimensions' value; *use the
 * model to build (a reference): m, or for a model whose shapes wait for the build
 * (mgraph.deferred) m inferred again with the options' shapes. */
static gaio_status build_check(const char *fn, gaio_model *m, gaio_context *ctx, const gaio_engine_options *o,
                               int64_t *batch, gaio_model **use) {
    *use = NULL;
    if (!m) return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "m is NULL");
    if (!ctx) return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "ctx is NULL");
    if (!o) return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "options is NULL");
    gaio_status st = resolve_options(fn, &m->g, o, batch);
    if (st == GAIO_OK && m->g.deferred) {
        int64_t(*dims)[GAIO_MODEL_MAX_NDIM] = calloc((size_t)m->g.ninputs + 1, sizeof *dims);
        gaio_model *c = NULL;
        if (!dims) st = gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory");
        if (st == GAIO_OK) st = deferred_dims(fn, &m->g, o, dims);
        if (st == GAIO_OK) st = gaio__model_concretize(fn, m, dims, &c);
        free(dims);
        if (st != GAIO_OK) return st;
        *batch = 0; /* every dimension is known now */
        st = gaio__engine_check_graph(fn, &c->g);
        if (st != GAIO_OK) {
            gaio_model_release(c);
            return st;
        }
        *use = c;
        return GAIO_OK;
    }
    if (st == GAIO_OK) st = gaio__engine_check_graph(fn, &m->g);
    if (st == GAIO_OK) gaio_model_retain(m), *use = m;
    return st;
}

gaio_status gaio_engine_build(gaio_model *m, gaio_context *ctx, const gaio_engine_options *options,
                              gaio_engine **out) {
    return gaio__engine_build(__func__, m, ctx, options, out);
}

gaio_status gaio__engine_build(const char *fn, gaio_model *m, gaio_context *ctx, const gaio_engine_options *options,
                               gaio_engine **out) {
    if (!out) return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "out is NULL");
    *out = NULL;
    int64_t batch = 0;
    gaio_model *use = NULL;
    gaio_status st = build_check(fn, m, ctx, options, &batch, &use);
    if (st != GAIO_OK) return st;
    gaio_engine *e = gaio__engine_new(use, ctx);
    gaio_model_release(use); /* the engine's reference holds it */
    if (!e) return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory");
    if ((st = build(fn, e, options, batch)) != GAIO_OK) {
        gaio__engine_free(e);
        return st;
    }
    *out = e;
    return GAIO_OK;
}

/* ---- the asynchronous build ---- */

typedef struct async_build {
    gaio_engine *e;         /* a reference */
    gaio_future *built;     /* a reference: completed when the build ends */
    gaio_engine_options o;  /* shapes copied below */
    gaio_engine_shape *shapes;
    int64_t batch;
} async_build;

static void *build_thread(void *arg) {
    async_build *a = arg;
    gaio_engine *e = a->e;
    gaio_status st = build("gaio_engine_build_async", e, &a->o, a->batch);
    pthread_mutex_lock(&e->lock);
    e->build_status = st;
    if (st != GAIO_OK) snprintf(e->build_msg, sizeof e->build_msg, "%s", gaio_last_error());
    e->building = false;
    pthread_cond_broadcast(&e->cond);
    pthread_mutex_unlock(&e->lock);
    gaio__future_complete(a->built, st, st == GAIO_OK ? NULL : e->build_msg);
    gaio__future_unref(a->built);
    gaio_engine_release(e);
    for (int32_t i = 0; i < a->o.nshapes; i++) free((char *)a->shapes[i].name);
    free(a->shapes);
    free(a);
    return NULL;
}

gaio_status gaio_engine_build_async(gaio_model *m, gaio_context *ctx, const gaio_engine_options *options,
                                    gaio_engine **out, gaio_future **built) {
    const char *fn = __func__;
    GAIO_REQUIRE_PTR(out);
    *out = NULL;
    GAIO_REQUIRE_PTR(built);
    *built = NULL;
    int64_t batch = 0;
    gaio_model *use = NULL;
    gaio_status st = build_check(fn, m, ctx, options, &batch, &use);
    if (st != GAIO_OK) return st;
    async_build *a = calloc(1, sizeof *a);
    gaio_engine *e = a ? gaio__engine_new(use, ctx) : NULL;
    gaio_model_release(use); /* the engine's reference holds it */
    gaio_future *f = e ? gaio__future_new() : NULL;
    if (a && options->nshapes > 0) a->shapes = calloc((size_t)options->nshapes, sizeof *a->shapes);
    bool ok = a && e && f && (options->nshapes == 0 || a->shapes);
    for (int32_t i = 0; ok && i < options->nshapes; i++) {
        a->shapes[i] = options->shapes[i];
        a->shapes[i].name = strdup(options->shapes[i].name);
        ok = a->shapes[i].name != NULL;
        a->o.nshapes = i + 1; /* names to free */
    }
    if (ok) {
        int32_t named = a->o.nshapes;
        a->o = *options;
        a->o.shapes = a->shapes;
        a->o.nshapes = named;
        a->e = e, a->built = f, a->batch = batch;
        e->building = true;
        gaio__ref_inc(&e->ref);  /* the thread's */
        gaio__future_ref(f);     /* the thread's */
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        pthread_t th;
        int r = pthread_create(&th, &attr, build_thread, a);
        pthread_attr_destroy(&attr);
        if (r == 0) {
            *out = e;
            *built = f;
            return GAIO_OK;
        }
        e->building = false;
        gaio__ref_dec(&e->ref);
        gaio__future_unref(f);
        st = gaio__fail(GAIO_ERR_SYSTEM, fn, "pthread_create (the build's thread): %s", strerror(r));
    } else {
        st = gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory");
    }
    if (a) {
        for (int32_t i = 0; i < a->o.nshapes; i++) free((char *)a->shapes[i].name);
        free(a->shapes);
        free(a);
    }
    if (f) {
        gaio__future_complete(f, st, gaio_last_error());
        gaio__future_unref(f);
    }
    if (e) gaio__engine_free(e);
    return st;
}

/* ---- inspection ---- */

gaio_status gaio_engine_get_info(gaio_engine *e, gaio_engine_info *out) {
    GAIO_REQUIRE_PTR(out);
    memset(out, 0, sizeof *out);
    GAIO_REQUIRE_PTR(e);
    gaio_status st = gaio__engine_ready(__func__, e);
    if (st != GAIO_OK) return st;
    out->batch = e->batch;
    out->dtype = e->f16 ? GAIO_DTYPE_F16 : GAIO_DTYPE_F32;
    out->layout = e->nhwc ? GAIO_MODEL_LAYOUT_NHWC : GAIO_MODEL_LAYOUT_NCHW;
    out->weight_bytes = e->weight_bytes, out->arena_bytes = e->arena_bytes;
    out->nodes = e->model->g.nnodes, out->steps = e->plan.nsteps;
    out->folded_bn = e->plan.folded_bn, out->fused_add = e->plan.fused_add, out->fused_act = e->plan.fused_act;
    for (int32_t i = 0; i < e->plan.nsteps; i++) out->convs += e->plan.steps[i].n->op == OP_CONV;
    out->cuda_graph = e->cuda_graph;
    out->loaded = e->loaded;
    out->build_seconds = e->build_seconds;
    out->f16_accumulation = (e->flags & GAIO__ENGINE_F16_FAST) != 0;
    return GAIO_OK;
}

gaio_status gaio_engine_model(gaio_engine *e, gaio_model **out) {
    GAIO_REQUIRE_PTR(out);
    *out = NULL;
    GAIO_REQUIRE_PTR(e);
    gaio_status st = gaio__engine_ready(__func__, e);
    if (st == GAIO_OK) *out = e->model;
    return st;
}

static gaio_status engine_io(const char *fn, gaio_engine *e, int32_t i, bool input, gaio_model_io *out) {
    if (!out) return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "out is NULL");
    memset(out, 0, sizeof *out);
    if (!e) return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "e is NULL");
    gaio_status st = gaio__engine_ready(fn, e);
    if (st != GAIO_OK) return st;
    st = input ? gaio_model_input(e->model, i, out) : gaio_model_output(e->model, i, out);
    if (st != GAIO_OK) return gaio__fail(st, fn, "%s", gaio_last_error());
    const xvalue *x = &e->v[input ? e->model->g.inputs[i] : e->model->g.outputs[i]];
    for (int32_t d = 0; d < out->ndim && d < x->ndim; d++) out->shape[d] = x->dims[d];
    return GAIO_OK;
}

gaio_status gaio_engine_input(gaio_engine *e, int32_t i, gaio_model_io *out) {
    return engine_io(__func__, e, i, true, out);
}

gaio_status gaio_engine_output(gaio_engine *e, int32_t i, gaio_model_io *out) {
    return engine_io(__func__, e, i, false, out);
}

/* The ONNX operators of a step: its node, then the ones the planner fused into it, in
 * the graph's order (found by following the step's chain of single readers). */
static void step_ops(const gaio_engine *e, const xstep *sp, char *out, size_t size) {
    const mgraph *g = &e->model->g;
    snprintf(out, size, "%s", sp->n->op_type);
    if (sp->n->op != OP_CONV && sp->n->op != OP_BATCH_NORM && sp->n->op != OP_MATMUL && sp->n->op != OP_GEMM && !sp->gelu)
        return;
    int32_t cur = sp->n->out[0];
    for (int hops = 0; cur != sp->out && hops < 8; hops++) {
        const mnode *next = NULL;
        for (int32_t i = 0; i < g->nnodes && !next; i++)
            for (int32_t j = 0; j < g->nodes[i].nin && !next; j++)
                if (g->nodes[i].in[j] == cur && g->nodes[i].nout > 0) next = &g->nodes[i];
        if (!next) break;
        size_t len = strlen(out);
        snprintf(out + len, size - len, "+%s", next->op_type);
        cur = next->out[0];
    }
}

gaio_status gaio_engine_get_step(gaio_engine *e, int32_t i, gaio_engine_step *out) {
    GAIO_REQUIRE_PTR(out);
    memset(out, 0, sizeof *out);
    GAIO_REQUIRE_PTR(e);
    gaio_status st = gaio__engine_ready(__func__, e);
    if (st != GAIO_OK) return st;
    if (i < 0 || i >= e->plan.nsteps)
        return GAIO_FAIL(GAIO_ERR_INVALID_ARG, "step %d does not exist: the engine has %d", (int)i, (int)e->plan.nsteps);
    const xstep *sp = &e->plan.steps[i];
    out->name = sp->n->name;
    step_ops(e, sp, out->ops, sizeof out->ops);
    snprintf(out->kernel, sizeof out->kernel, "%s", e->kernel[i]);
    return GAIO_OK;
}
