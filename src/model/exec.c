/* The executor: each step of the plan (plan.h) runs as its DNN op (dnn.h) on the
 * caller's stream. Weights are converted (f16, NHWC on the GPU) and uploaded once, into
 * one buffer; activations share one arena by lifetime (lifetime.h). Shape-only nodes
 * (Identity, Flatten, Reshape, Squeeze, Unsqueeze) are views of their input's memory.
 *
 * On CUDA the steps are captured once, at creation, into a CUDA graph on a private
 * stream (core/graph.h): a run is then the inputs' copies in, one graph launch and the
 * outputs' copies out. GAIO_MODEL_CUDA_GRAPH=0 runs the steps one by one instead. */
#include <float.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/graph.h"
#include "cpu/half.h"
#include "dnn/dnn_internal.h"
#include "core/op.h"
#include "gaio/buffer.h"
#include "gaio/context.h"
#include "gaio/device.h"
#include "gaio/event.h"
#include "gaio/future.h"
#include "gaio/memory.h"
#include "gaio/stream.h"
#include "model/lifetime.h"
#include "model/model_internal.h"
#include "model/plan.h"

#define MAXD GAIO_MODEL_MAX_NDIM
#define ALIGN 256 /* offsets in the weights and arena buffers: cuDNN plans are keyed by alignment */

/* Where a value lives on the device. */
typedef enum xmem {
    XM_NONE = 0,   /* a caller's input, or a view of another value (root) */
    XM_WEIGHT = 1, /* in e->weights at off */
    XM_ARENA = 2   /* in e->arena at off: intermediates, staged inputs, copied views */
} xmem;

typedef struct xvalue {
    int32_t ndim;
    int64_t dims[MAXD];   /* the batch resolved */
    gaio_dtype dtype;
    xmem mem;
    size_t off;
    int32_t root;         /* the value whose memory this is (itself unless a view) */
    bool nhwc;            /* 4-D and stored channels innermost */
    bool staged;          /* a graph input copied in at each run (another precision or layout, or a graph) */
    int32_t input;        /* the graph input index this value is, or -1 */
} xvalue;

struct gaio_model_exec {
    gaio_model *model;
    gaio_context *ctx;
    int64_t batch;
    xplan plan;
    int32_t nv;             /* the graph's values, then the planner's constants */
    xvalue *v;
    bool *copy;             /* per step: a view that needs a row-major copy of an NHWC input */
    gaio_buffer *weights, *arena;
    size_t weight_bytes, arena_bytes;
    gaio_stream *capture;   /* the graph's private stream: its library scratch is the graph's */
    gaio__devgraph *graph;     /* NULL: steps run one by one */
    pthread_mutex_t lock;   /* runs of one exec are serialised */
    gaio_event *last;       /* recorded at the end of each run */
    gaio_stream *last_stream; /* not a reference: compared only */
};

static bool is_view(model_op op) {
    return op == OP_IDENTITY || op == OP_FLATTEN || op == OP_RESHAPE || op == OP_SQUEEZE || op == OP_UNSQUEEZE;
}

static gaio_dtype dtype_of(int32_t elem) { return elem == MT_F16 ? GAIO_DTYPE_F16 : GAIO_DTYPE_F32; }

static size_t count_of(const xvalue *x) {
    size_t n = 1;
    for (int32_t i = 0; i < x->ndim; i++) n *= (size_t)x->dims[i];
    return n;
}

static void exec_free(gaio_model_exec *e) {
    if (e->weights) gaio_buffer_release(e->weights);
    if (e->arena) gaio_buffer_release(e->arena);
    gaio__devgraph_free(e->graph);
    if (e->capture) gaio_stream_release(e->capture);
    free(e->v);
    free(e->copy);
    gaio__plan_free(&e->plan);
    if (e->last) gaio_event_release(e->last);
    pthread_mutex_destroy(&e->lock);
    gaio_model_release(e->model);
    gaio_context_release(e->ctx);
    free(e);
}

/* What a node needs that this executor cannot give: GAIO_ERR_NOT_SUPPORTED naming it. */
static gaio_status node_check(const char *fn, const mgraph *g, const mnode *n) {
    if (n->op == OP_SHAPE || n->op == OP_GATHER || n->op == OP_CONSTANT)
        return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn, "node '%s' (%s) did not fold to a constant: gaio runs shape "
                          "arithmetic at load time only", n->name, n->op_type);
    for (int32_t j = 0; j < n->nin; j++) {
        int32_t v = n->in[j];
        if (v < 0) continue;
        const mvalue *val = &g->values[v];
        bool shape_arg = (n->op == OP_RESHAPE || n->op == OP_UNSQUEEZE || n->op == OP_SQUEEZE || n->op == OP_REDUCE_MEAN) &&
                         j == 1;
        bool clip_arg = n->op == OP_CLIP && j > 0;
        if (shape_arg || clip_arg) {
            if (!val->data)
                return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn, "node '%s' (%s): input %d is computed at run time", n->name,
                                  n->op_type, (int)j);
            continue;
        }
        if (val->elem != MT_F32 && val->elem != MT_F16)
            return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn, "node '%s' (%s) runs on %s values at run time: gaio's ops "
                              "take float32 and float16", n->name, n->op_type, gaio__mt_name(val->elem));
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
    if (n->op == OP_MATMUL) {
        const mvalue *a = &g->values[n->in[0]], *b = &g->values[n->in[1]];
        if ((a->ndim > 3 || b->ndim > 3) && b->ndim != 2)
            return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn, "node '%s' (MatMul): batched operands of rank %d and %d "
                              "(gaio takes rank <= 3, or any rank times a matrix)", n->name, (int)a->ndim,
                              (int)b->ndim);
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

/* Host data of `elem` as x's dtype and, for a 4-D value stored NHWC, in that order
 * ([K, C, R, S] row major -> K, R, S, C in memory), into dst. */
static void convert(const void *data, int32_t elem, const xvalue *x, unsigned char *dst) {
    size_t n = count_of(x);
    int64_t c = x->ndim == 4 ? x->dims[1] : 1, hw = x->ndim == 4 ? x->dims[2] * x->dims[3] : 1;
    for (size_t i = 0; i < n; i++) {
        float f = elem == MT_F16 ? h2f(((const uint16_t *)data)[i]) : ((const float *)data)[i];
        size_t j = i;
        if (x->nhwc) { /* i = ((k * C + ci) * HW + p) -> ((k * HW + p) * C + ci) */
            size_t k = i / (size_t)(c * hw), ci = i / (size_t)hw % (size_t)c, p = i % (size_t)hw;
            j = (k * (size_t)hw + p) * (size_t)c + ci;
        }
        if (x->dtype == GAIO_DTYPE_F16)
            ((uint16_t *)dst)[j] = f2h(f);
        else
            ((float *)dst)[j] = f;
    }
}

static size_t bytes_of(const xvalue *x) { return count_of(x) * gaio_dtype_size(x->dtype); }
static size_t round_up(size_t n) { return (n + ALIGN - 1) / ALIGN * ALIGN; }

static bool on_gpu(gaio_context *ctx) {
    int dev = 0;
    gaio_device_props p;
    return gaio_context_device(ctx, &dev) == GAIO_OK && gaio_device_get_props(dev, &p) == GAIO_OK &&
           p.kind == GAIO_DEVICE_CUDA;
}

/* A view of an NHWC value whose memory order differs from row major (channels and
 * pixels both > 1) needs a row-major copy first. */
static bool needs_copy(const xvalue *in) {
    return in->nhwc && in->dims[1] > 1 && in->dims[2] * in->dims[3] > 1;
}

static gaio_status prepare_convs(gaio_model_exec *e, gaio_stream *s);
static gaio_status place_weights(const char *fn, gaio_model_exec *e, bool nhwc);
static gaio_status upload_weights(gaio_model_exec *e, gaio_stream *s);
static gaio_status place_arena(const char *fn, gaio_model_exec *e);
static gaio_status capture(const char *fn, gaio_model_exec *e);

gaio_status gaio_model_exec_create_ex(gaio_model *m, gaio_context *ctx, const gaio_model_exec_options *options,
                                      gaio_model_exec **out) {
    const char *fn = __func__;
    GAIO_REQUIRE_PTR(out);
    *out = NULL;
    GAIO_REQUIRE_PTR(m);
    GAIO_REQUIRE_PTR(ctx);
    GAIO_REQUIRE_PTR(options);
    const mgraph *g = &m->g;
    int64_t batch = options->batch;
    if (options->precision < GAIO_MODEL_PRECISION_AUTO || options->precision > GAIO_MODEL_PRECISION_F16)
        return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "options->precision %d is not a gaio_model_precision",
                          (int)options->precision);
    if (options->layout < GAIO_MODEL_LAYOUT_AUTO || options->layout > GAIO_MODEL_LAYOUT_NHWC)
        return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "options->layout %d is not a gaio_model_layout", (int)options->layout);
    bool symbolic = false;
    for (int32_t i = 0; i < g->nvalues; i++)
        for (int32_t d = 0; d < g->values[i].ndim; d++) symbolic |= g->values[i].dims[d] < 0;
    if (symbolic && (batch < 1 || batch > (1 << 20)))
        return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "batch is %lld: the model has a symbolic batch, which must be 1 to "
                          "1048576", (long long)batch);
    for (int32_t i = 0; i < g->nnodes; i++) {
        gaio_status st = node_check(fn, g, &g->nodes[i]);
        if (st != GAIO_OK) return st;
    }
    for (int32_t i = 0; i < g->ninputs + g->noutputs; i++) {
        gaio_status st = io_check(fn, g, i < g->ninputs ? g->inputs[i] : g->outputs[i - g->ninputs],
                                  i < g->ninputs ? "input" : "output");
        if (st != GAIO_OK) return st;
    }
    bool gpu = on_gpu(ctx);
    bool f16 = options->precision == GAIO_MODEL_PRECISION_F16 || (options->precision == GAIO_MODEL_PRECISION_AUTO && gpu);
    bool nhwc = options->layout != GAIO_MODEL_LAYOUT_NCHW;
    gaio_model_exec *e = calloc(1, sizeof *e);
    if (!e) return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory");
    pthread_mutex_init(&e->lock, NULL);
    gaio_model_retain(m);
    gaio_context_retain(ctx);
    e->model = m, e->ctx = ctx, e->batch = symbolic ? batch : 0;
    gaio_stream *s = NULL;
    gaio_status st = gaio__plan_make(fn, g, &e->plan);
    e->nv = g->nvalues + e->plan.nextra;
    if (st == GAIO_OK && !(e->v = calloc((size_t)e->nv + 1, sizeof *e->v)))
        st = gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory");
    if (st == GAIO_OK && !(e->copy = calloc((size_t)e->plan.nsteps + 1, sizeof *e->copy)))
        st = gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory");
    if (st == GAIO_OK) st = gaio_stream_create(ctx, 0, 0, &s);
    if (st == GAIO_OK) st = gaio_event_create(ctx, 0, &e->last);
    for (int32_t i = 0; i < e->nv && st == GAIO_OK; i++) {
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
        for (int32_t d = 0; d < ndim; d++) x->dims[d] = dims[d] < 0 ? batch : dims[d];
        x->dtype = f16 ? GAIO_DTYPE_F16 : dtype_of(elem);
        x->root = i;
        x->input = -1;
    }
    for (int32_t i = 0; i < g->ninputs && st == GAIO_OK; i++) e->v[g->inputs[i]].input = i;
    bool graph = gpu && gaio__devgraph_supported(s) && !(getenv("GAIO_MODEL_CUDA_GRAPH") &&
                                                       !strcmp(getenv("GAIO_MODEL_CUDA_GRAPH"), "0"));
    if (st == GAIO_OK) st = place_weights(fn, e, nhwc);
    if (st == GAIO_OK) st = upload_weights(e, s);
    /* Graph inputs in another precision or layout than the caller's are copied in; so
     * are all of them under a graph, whose kernels read fixed addresses. */
    for (int32_t i = 0; i < g->ninputs && st == GAIO_OK; i++) {
        xvalue *x = &e->v[g->inputs[i]];
        x->nhwc = nhwc && x->ndim == 4;
        if (x->dtype == dtype_of(g->values[g->inputs[i]].elem) && !x->nhwc && !graph) continue;
        x->staged = true;
        x->mem = XM_ARENA;
    }
    for (int32_t i = 0; i < e->plan.nsteps && st == GAIO_OK; i++) {
        const xstep *sp = &e->plan.steps[i];
        const mnode *n = sp->n;
        xvalue *x = &e->v[sp->out];
        if (is_view(n->op)) {
            const xvalue *in = &e->v[n->in[0]];
            if (!needs_copy(in)) {
                x->root = in->root;
                /* Same memory; NHWC only where the shape is unchanged. */
                x->nhwc = in->nhwc && x->ndim == 4 && !memcmp(x->dims, in->dims, sizeof x->dims);
                continue;
            }
            e->copy[i] = true; /* into x's own row-major memory, then viewed */
        } else {
            x->nhwc = nhwc && x->ndim == 4;
        }
        x->mem = XM_ARENA;
    }
    if (st == GAIO_OK) st = place_arena(fn, e);
    if (st == GAIO_OK) st = prepare_convs(e, s);
    if (st == GAIO_OK) st = gaio_stream_synchronize(s);
    if (st == GAIO_OK && graph) st = capture(fn, e);
    if (s) gaio_stream_release(s);
    if (st == GAIO_OK && getenv("GAIO_MODEL_TRACE"))
        fprintf(stderr, "gaio: plan: %d steps for %d nodes; %d batch norms folded, %d adds and %d activations fused; "
                "%s %s; weights %.1f MiB, activations %.1f MiB%s\n", (int)e->plan.nsteps, (int)g->nnodes,
                (int)e->plan.folded_bn, (int)e->plan.fused_add, (int)e->plan.fused_act,
                f16 ? "f16" : "model's precision", nhwc ? "NHWC" : "NCHW", e->weight_bytes / 1048576.0,
                e->arena_bytes / 1048576.0, e->graph ? "; one CUDA graph" : "");
    if (st != GAIO_OK) {
        exec_free(e);
        return st;
    }
    *out = e;
    return GAIO_OK;
}

gaio_status gaio_model_exec_create(gaio_model *m, gaio_context *ctx, int64_t batch, gaio_model_exec **out) {
    gaio_model_exec_options o = {batch, GAIO_MODEL_PRECISION_AUTO, GAIO_MODEL_LAYOUT_AUTO};
    return gaio_model_exec_create_ex(m, ctx, &o, out);
}

gaio_status gaio_model_exec_release(gaio_model_exec *e) {
    if (!e) return GAIO_OK;
    /* A graph launch in flight uses the private stream's library scratch and the graph
     * itself, which no op holds (the weights and arena it holds): wait for the last run.
     * (Not freed from a completion callback instead: releasing a stream there would wait
     * on the completion thread from that thread.) */
    if (e->graph && e->last_stream) (void)gaio_event_synchronize(e->last);
    exec_free(e);
    return GAIO_OK;
}

/* ---- running ---- */

typedef struct run_state {
    gaio_model_exec *e;
    int32_t step;
    gaio_stream *s;
    const gaio_tensor *inputs; /* by graph input index; NULL while planning */
} run_state;

/* Value v as a packed row-major tensor over its root's memory. */
static gaio_tensor tensor(const run_state *r, int32_t v) {
    const xvalue *x = &r->e->v[v];
    int32_t root = x->root;
    gaio_tensor t;
    memset(&t, 0, sizeof t);
    const xvalue *rx = &r->e->v[root];
    if (rx->input >= 0 && !rx->staged && r->inputs) {
        const gaio_tensor *in = &r->inputs[rx->input];
        t.buffer = in->buffer, t.offset = in->offset;
    } else if (rx->mem != XM_NONE) {
        t.buffer = rx->mem == XM_WEIGHT ? r->e->weights : r->e->arena, t.offset = rx->off;
    }
    t.dtype = x->dtype;
    t.layout = x->nhwc ? GAIO_TENSOR_NHWC : GAIO_TENSOR_ROW_MAJOR;
    /* gaio_tensor has at most 5 dimensions: leading 1s beyond that are dropped. */
    int32_t skip = 0;
    while (x->ndim - skip > GAIO_TENSOR_MAX_NDIM && x->dims[skip] == 1) skip++;
    t.ndim = x->ndim - skip;
    for (int32_t d = 0; d < t.ndim; d++) t.shape[d] = x->dims[d + skip];
    if (t.ndim == 0) t.ndim = 1, t.shape[0] = 1; /* a scalar as one element */
    return t;
}

static gaio_status run_steps(const char *fn, run_state *r);

/* A convolution step's arguments. */
typedef struct conv_call {
    gaio_tensor x, w, b, res, y;
    bool has_b, has_res;
    gaio_conv2d_params p;
} conv_call;

static void conv_of(const run_state *r, const xstep *sp, conv_call *c) {
    const mattrs *a = &sp->n->a;
    memset(c, 0, sizeof *c);
    c->x = tensor(r, sp->n->in[0]), c->y = tensor(r, sp->out), c->w = tensor(r, sp->w);
    c->has_b = sp->b >= 0, c->has_res = sp->res >= 0;
    if (c->has_b) c->b = tensor(r, sp->b);
    if (c->has_res) c->res = tensor(r, sp->res);
    for (int i = 0; i < 2; i++) c->p.stride[i] = (int32_t)a->strides[i], c->p.dilation[i] = (int32_t)a->dilations[i];
    for (int i = 0; i < 4; i++) c->p.pad[i] = (int32_t)a->pads[i];
    c->p.groups = (int32_t)a->group;
    c->p.act = sp->has_act ? &sp->act : NULL;
}

/* Plans every convolution now, off the run path (gaio_conv2d_prepare times cuDNN's
 * candidates and keeps the fastest), except one that reads a caller's input directly:
 * its plan depends on that buffer's alignment, and is made at its first run. */
static gaio_status prepare_convs(gaio_model_exec *e, gaio_stream *s) {
    run_state r = {e, 0, s, NULL};
    gaio_status st = GAIO_OK;
    for (int32_t i = 0; i < e->plan.nsteps && st == GAIO_OK; i++) {
        const xstep *sp = &e->plan.steps[i];
        if (sp->n->op != OP_CONV) continue;
        const xvalue *x = &e->v[e->v[sp->n->in[0]].root], *res = sp->res >= 0 ? &e->v[e->v[sp->res].root] : NULL;
        if ((x->input >= 0 && !x->staged) || (res && res->input >= 0 && !res->staged)) continue;
        conv_call c;
        conv_of(&r, sp, &c);
        st = gaio_conv2d_prepare(s, &c.x, &c.w, c.has_b ? &c.b : NULL, c.has_res ? &c.res : NULL, &c.y, &c.p, NULL);
    }
    return st;
}

static float scalar(const mvalue *v, float fallback) {
    if (!v || !v->data || !v->bytes) return fallback;
    return v->elem == MT_F16 ? h2f(*(const uint16_t *)v->data) : *(const float *)v->data;
}

static gaio_status run_step(const char *fn, const run_state *r, const xstep *sp) {
    const mgraph *g = &r->e->model->g;
    const mnode *n = sp->n;
    gaio_stream *s = r->s;
    const mattrs *a = &n->a;
    gaio_tensor x = tensor(r, n->in[0]), y = tensor(r, sp->out);
    switch (n->op) {
    case OP_IDENTITY:
    case OP_FLATTEN:
    case OP_RESHAPE:
    case OP_SQUEEZE:
    case OP_UNSQUEEZE: {
        if (!r->e->copy[r->step]) return GAIO_OK; /* a view */
        /* The NHWC input in row-major order into the output's buffer, which the output
         * then views with its own shape. */
        gaio_tensor flat = x;
        flat.buffer = r->e->arena, flat.offset = r->e->v[sp->out].off, flat.layout = GAIO_TENSOR_ROW_MAJOR;
        return gaio_cast(s, &x, &flat);
    }
    case OP_CONV: {
        conv_call c;
        conv_of(r, sp, &c);
        return gaio_conv2d(s, &c.x, &c.w, c.has_b ? &c.b : NULL, c.has_res ? &c.res : NULL, &c.y, &c.p);
    }
    case OP_GEMM:
    case OP_MATMUL: {
        gaio_tensor b = tensor(r, n->in[1]);
        gaio_gemm_params p = {0, 0, 1.0f, 0.0f, GAIO_ACT_NONE};
        const gaio_tensor *bias = NULL, *c = NULL;
        gaio_tensor ct;
        if (n->op == OP_GEMM) {
            p.trans_a = (int32_t)a->trans_a, p.trans_b = (int32_t)a->trans_b, p.alpha = a->alpha;
            if (n->nin > 2 && n->in[2] >= 0) {
                ct = tensor(r, n->in[2]);
                int64_t cols = y.shape[y.ndim - 1];
                bool row = (ct.ndim == 1 && ct.shape[0] == cols) || (ct.ndim == 2 && ct.shape[0] == 1 && ct.shape[1] == cols);
                if (row && a->beta == 1.0f) {
                    ct.ndim = 1, ct.shape[0] = cols;
                    bias = &ct;
                } else if (ct.ndim == 2 && ct.shape[0] == y.shape[0] && ct.shape[1] == cols) {
                    c = &ct, p.beta = a->beta;
                } else {
                    return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn, "node '%s' (Gemm): a C of this shape (or a beta "
                                      "other than 1 on a row of C) is not supported yet", n->name);
                }
            }
        } else if (x.ndim > 3 || b.ndim > 3) {
            /* [.., M, K] @ [K, N]: the leading dimensions fold into M. */
            if (b.ndim != 2)
                return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn, "node '%s' (MatMul): batched operands of rank > 3",
                                  n->name);
            int64_t rows = 1;
            for (int32_t d = 0; d < x.ndim - 1; d++) rows *= x.shape[d];
            int64_t k = x.shape[x.ndim - 1], cols = y.shape[y.ndim - 1];
            x.ndim = 2, x.shape[0] = rows, x.shape[1] = k;
            y.ndim = 2, y.shape[0] = rows, y.shape[1] = cols;
        }
        return gaio_gemm(s, &x, &b, c, bias, &y, &p);
    }
    case OP_BATCH_NORM: {
        gaio_tensor prm[4];
        for (int j = 0; j < 4; j++) {
            int32_t v = n->in[j + 1];
            prm[j] = tensor(r, v);
        }
        return gaio_batch_norm(s, &x, &y, &prm[0], &prm[1], &prm[2], &prm[3], a->epsilon);
    }
    case OP_RELU:
    case OP_SIGMOID:
    case OP_HARD_SIGMOID:
    case OP_HARD_SWISH:
    case OP_CLIP: {
        gaio_unary_params p = {GAIO_UNARY_RELU, 0.0f, 0.0f};
        if (n->op == OP_SIGMOID) p.op = GAIO_UNARY_SIGMOID;
        if (n->op == OP_HARD_SWISH) p.op = GAIO_UNARY_HARD_SWISH;
        if (n->op == OP_HARD_SIGMOID) p.op = GAIO_UNARY_HARD_SIGMOID, p.alpha = a->alpha, p.beta = a->beta;
        if (n->op == OP_CLIP) {
            p.op = GAIO_UNARY_CLIP;
            p.alpha = scalar(n->nin > 1 && n->in[1] >= 0 ? &g->values[n->in[1]] : NULL, -FLT_MAX);
            p.beta = scalar(n->nin > 2 && n->in[2] >= 0 ? &g->values[n->in[2]] : NULL, FLT_MAX);
        }
        return gaio_unary(s, &x, &y, &p);
    }
    case OP_ADD:
    case OP_SUB:
    case OP_MUL:
    case OP_DIV: {
        gaio_tensor b = tensor(r, n->in[1]);
        gaio_binary_op op = n->op == OP_ADD   ? GAIO_BINARY_ADD
                            : n->op == OP_SUB ? GAIO_BINARY_SUB
                            : n->op == OP_MUL ? GAIO_BINARY_MUL
                                              : GAIO_BINARY_DIV;
        return gaio_binary(s, op, &x, &b, &y, NULL);
    }
    case OP_MAX_POOL:
    case OP_AVG_POOL: {
        gaio_pool_params p;
        memset(&p, 0, sizeof p);
        p.mode = n->op == OP_MAX_POOL ? GAIO_POOL_MAX : GAIO_POOL_AVG;
        for (int i = 0; i < 2; i++) {
            p.kernel[i] = (int32_t)a->kernel[i], p.stride[i] = (int32_t)a->strides[i];
            p.dilation[i] = (int32_t)a->dilations[i];
            p.pad[i] = (int32_t)a->pads[i], p.pad[i + 2] = (int32_t)a->pads[i + 2];
        }
        p.count_include_pad = (int32_t)a->count_include_pad;
        p.ceil_mode = (int32_t)a->ceil_mode;
        return gaio_pool2d(s, &x, &y, &p);
    }
    case OP_GLOBAL_AVG_POOL:
    case OP_REDUCE_MEAN:
        return gaio_global_avg_pool(s, &x, &y);
    case OP_TRANSPOSE: {
        int32_t perm[GAIO_TENSOR_MAX_NDIM];
        if (a->nperm > GAIO_TENSOR_MAX_NDIM)
            return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn, "node '%s' (Transpose): more than %d dimensions", n->name,
                              GAIO_TENSOR_MAX_NDIM);
        for (int32_t i = 0; i < a->nperm; i++) perm[i] = (int32_t)a->perm[i];
        return gaio_transpose(s, &x, &y, perm);
    }
    case OP_CONCAT: {
        gaio_tensor ts[64];
        const gaio_tensor *ps[64];
        if (n->nin > 64) return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn, "node '%s' (Concat): over 64 inputs", n->name);
        for (int32_t j = 0; j < n->nin; j++) ts[j] = tensor(r, n->in[j]), ps[j] = &ts[j];
        return gaio_concat(s, ps, n->nin, (int32_t)a->axis, &y);
    }
    case OP_SOFTMAX:
        return gaio_softmax(s, &x, &y, (int32_t)a->axis);
    case OP_CAST:
        return gaio_cast(s, &x, &y);
    default:
        return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn, "node '%s' (%s) has no executor", n->name, n->op_type);
    }
}

/* A caller's tensor for graph value v: the model's dtype and shape, packed row major. */
static gaio_status check_io(const char *fn, const char *what, int32_t i, const gaio_tensor *t, const xvalue *x,
                            gaio_dtype dtype, gaio_stream *s) {
    gaio_tensor r;
    char name[32];
    snprintf(name, sizeof name, "%s[%d]", what, (int)i);
    gaio_status st = gaio__tensor_check(fn, name, t, &r, NULL);
    if (st != GAIO_OK) return st;
    if (!gaio__reachable(r.buffer, s, 0)) return gaio__check_reach(fn, name, r.buffer, s, 0);
    if (r.dtype != dtype)
        return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "%s[%d] is %s but the model's is %s", what, (int)i,
                          gaio_dtype_name(r.dtype), gaio_dtype_name(dtype));
    bool same = r.ndim == x->ndim;
    for (int32_t d = 0; same && d < x->ndim; d++) same = r.shape[d] == x->dims[d];
    if (!same) {
        char got[128], want[128];
        gaio__shape_text(r.ndim, r.shape, got, sizeof got);
        gaio__shape_text(x->ndim, x->dims, want, sizeof want);
        return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "%s[%d] is %s but the model's is %s", what, (int)i, got, want);
    }
    int64_t stride = 1;
    for (int32_t d = r.ndim - 1; d >= 0; d--) {
        if (r.shape[d] > 1 && r.strides[d] != stride)
            return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "%s[%d] is not packed row major", what, (int)i);
        stride *= r.shape[d];
    }
    return GAIO_OK;
}

gaio_status gaio_model_run(gaio_model_exec *e, gaio_stream *stream, const gaio_tensor *inputs, int32_t ninputs,
                           const gaio_tensor *outputs, int32_t noutputs, gaio_future **done) {
    const char *fn = __func__;
    if (done) *done = NULL;
    GAIO_REQUIRE_PTR(e);
    GAIO_REQUIRE_PTR(stream);
    const mgraph *g = &e->model->g;
    if (ninputs != g->ninputs || noutputs != g->noutputs)
        return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "%d inputs and %d outputs given: the model has %d and %d",
                          (int)ninputs, (int)noutputs, (int)g->ninputs, (int)g->noutputs);
    if (!inputs || !outputs) return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "inputs or outputs is NULL");
    gaio_context *sctx = NULL;
    gaio_status st = gaio_stream_context(stream, &sctx);
    if (st != GAIO_OK) return st;
    if (sctx != e->ctx) return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "stream is not of the exec's context");
    for (int32_t i = 0; i < ninputs; i++)
        if ((st = check_io(fn, "inputs", i, &inputs[i], &e->v[g->inputs[i]], dtype_of(g->values[g->inputs[i]].elem),
                           stream)) !=
            GAIO_OK)
            return st;
    for (int32_t i = 0; i < noutputs; i++)
        if ((st = check_io(fn, "outputs", i, &outputs[i], &e->v[g->outputs[i]],
                           dtype_of(g->values[g->outputs[i]].elem), stream)) != GAIO_OK)
            return st;
    run_state r = {e, 0, stream, inputs};
    pthread_mutex_lock(&e->lock);
    /* The previous run, on another stream, may still use the intermediates. */
    if (e->last_stream && e->last_stream != stream) st = gaio_stream_wait_event(stream, e->last);
    /* Inputs kept in another precision or layout: copied in first. */
    for (int32_t i = 0; i < ninputs && st == GAIO_OK; i++) {
        if (!e->v[g->inputs[i]].staged) continue;
        gaio_tensor to = tensor(&r, g->inputs[i]);
        st = gaio_cast(stream, &inputs[i], &to);
    }
    if (st == GAIO_OK && e->graph) {
        gaio_buffer *held[2] = {e->weights, e->arena};
        st = gaio__devgraph_launch(fn, stream, e->graph, held, 2);
    } else if (st == GAIO_OK) {
        st = run_steps(fn, &r);
    }
    for (int32_t i = 0; i < noutputs && st == GAIO_OK; i++) {
        gaio_tensor from = tensor(&r, g->outputs[i]);
        st = gaio_cast(stream, &from, &outputs[i]);
    }
    if (st == GAIO_OK) st = gaio_event_record(e->last, stream);
    if (st == GAIO_OK) e->last_stream = stream;
    pthread_mutex_unlock(&e->lock);
    if (st == GAIO_OK && done) st = gaio_future_fence(stream, done);
    return st;
}

/* ---- memory and the graph ---- */

/* The value a step reads at input slot j (its inputs, then the planner's weight, bias
 * and residual: a convolution's own weight and bias inputs are seen through those, as
 * batch-norm folding may have replaced them), or -1. */
static int32_t step_value(const xstep *sp, int32_t j) {
    const mnode *n = sp->n;
    if (j < n->nin) {
        if (n->op == OP_CONV && (j == 1 || j == 2)) return -1; /* sp->w, sp->b instead (maybe folded) */
        return n->in[j];
    }
    return j == n->nin ? sp->w : j == n->nin + 1 ? sp->b : sp->res;
}

static const void *const_data(const gaio_model_exec *e, int32_t v, int32_t *elem) {
    const mgraph *g = &e->model->g;
    if (v < g->nvalues) {
        *elem = g->values[v].elem;
        return g->values[v].data;
    }
    *elem = e->plan.extra[v - g->nvalues].elem;
    return e->plan.extra[v - g->nvalues].data;
}

/* Weights (the float constants the steps read) get their dtype, layout and offset:
 * convolution weights in the activations' layout, batch-norm parameters in f32. */
static gaio_status place_weights(const char *fn, gaio_model_exec *e, bool nhwc) {
    size_t at = 0;
    for (int32_t i = 0; i < e->plan.nsteps; i++) {
        const xstep *sp = &e->plan.steps[i];
        const mnode *n = sp->n;
        for (int32_t j = 0; j < n->nin + 3; j++) {
            int32_t v = step_value(sp, j), elem = MT_F32;
            if (v < 0 || e->v[v].mem != XM_NONE) continue;
            const void *data = const_data(e, v, &elem);
            if (!data || (elem != MT_F32 && elem != MT_F16)) continue;
            xvalue *x = &e->v[v];
            if (n->op == OP_CONV && v == sp->w) x->nhwc = nhwc && x->ndim == 4;
            if (n->op == OP_BATCH_NORM && j >= 1) x->dtype = GAIO_DTYPE_F32; /* gaio_batch_norm's parameters */
            x->mem = XM_WEIGHT;
            x->off = at;
            size_t b = round_up(bytes_of(x));
            if (b > SIZE_MAX - at) return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "the weights overflow size_t");
            at += b;
        }
    }
    e->weight_bytes = at;
    return GAIO_OK;
}

/* All weights, converted on the host into one pinned staging buffer, go up in one copy. */
static gaio_status upload_weights(gaio_model_exec *e, gaio_stream *s) {
    size_t bytes = e->weight_bytes ? e->weight_bytes : 1;
    gaio_buffer *stage = NULL;
    gaio_status st = gaio_buffer_alloc(e->ctx, GAIO_MEM_PINNED, bytes, &stage);
    if (st == GAIO_OK) st = gaio_buffer_alloc(e->ctx, GAIO_MEM_DEVICE, bytes, &e->weights);
    void *p = NULL;
    if (st == GAIO_OK) st = gaio_buffer_host_ptr(stage, &p);
    if (st == GAIO_OK) {
        for (int32_t v = 0; v < e->nv; v++) {
            if (e->v[v].mem != XM_WEIGHT) continue;
            int32_t elem = MT_F32;
            const void *data = const_data(e, v, &elem);
            convert(data, elem, &e->v[v], (unsigned char *)p + e->v[v].off);
        }
        st = gaio_memcpy_async(s, e->weights, 0, stage, 0, bytes);
    }
    if (stage) gaio_buffer_release(stage); /* the copy holds it until it has run */
    return st;
}

/* Activations by lifetime: a value is live from the step writing it (staged inputs:
 * from before the first) to the last step reading it or a view of it (outputs: to the
 * end, where they are copied out). */
static gaio_status place_arena(const char *fn, gaio_model_exec *e) {
    const mgraph *g = &e->model->g;
    int32_t nsteps = e->plan.nsteps;
    mlive *live = calloc((size_t)e->nv + 1, sizeof *live);
    if (!live) return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory");
    for (int32_t v = 0; v < e->nv; v++) {
        const xvalue *x = &e->v[v];
        if (x->mem != XM_ARENA) continue;
        live[v].bytes = bytes_of(x) ? bytes_of(x) : 1;
        live[v].first = live[v].last = x->staged ? -1 : nsteps;
    }
    for (int32_t i = 0; i < nsteps; i++) {
        const xstep *sp = &e->plan.steps[i];
        int32_t out = e->v[sp->out].root;
        if (e->v[out].mem == XM_ARENA && live[out].first > i) live[out].first = i;
        for (int32_t j = 0; j < sp->n->nin + 3; j++) {
            int32_t v = step_value(sp, j);
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
    return gaio_buffer_alloc(e->ctx, GAIO_MEM_DEVICE, total ? total : 1, &e->arena);
}

static gaio_status run_steps(const char *fn, run_state *r) {
    gaio_status st = GAIO_OK;
    for (int32_t i = 0; i < r->e->plan.nsteps && st == GAIO_OK; i++) {
        const mnode *n = r->e->plan.steps[i].n;
        r->step = i;
        st = run_step(fn, r, &r->e->plan.steps[i]);
        if (st != GAIO_OK && !strstr(gaio_last_error(), "node '")) {
            char why[GAIO_MSG_MAX];
            snprintf(why, sizeof why, "%s", gaio_last_error());
            st = gaio__fail(st, fn, "node '%s' (%s): %s", n->name, n->op_type, why);
        }
    }
    return st;
}

/* The steps, run once on a private stream (loading kernels, sizing library scratch),
 * then captured there. A model whose steps cannot be captured (a library call that
 * refuses) runs step by step instead: GAIO_MODEL_TRACE says why. */
static gaio_status capture(const char *fn, gaio_model_exec *e) {
    gaio_status st = gaio_stream_create(e->ctx, 0, 0, &e->capture);
    if (st != GAIO_OK) return st;
    run_state r = {e, 0, e->capture, NULL};
    st = run_steps(fn, &r);
    if (st == GAIO_OK) st = gaio_stream_synchronize(e->capture);
    if (st != GAIO_OK) return st;
    st = gaio__devgraph_capture_begin(fn, e->capture);
    if (st == GAIO_OK) {
        gaio_status ran = run_steps(fn, &r);
        char why[GAIO_MSG_MAX];
        snprintf(why, sizeof why, "%s", gaio_last_error());
        st = gaio__devgraph_capture_end(fn, e->capture, &e->graph);
        if (ran != GAIO_OK) {
            gaio__devgraph_free(e->graph);
            e->graph = NULL;
            st = gaio__fail(ran, fn, "%s", why);
        }
    }
    if (st != GAIO_OK && getenv("GAIO_MODEL_TRACE"))
        fprintf(stderr, "gaio: plan: no CUDA graph, the steps run one by one: %s\n", gaio_last_error());
    return GAIO_OK;
}
