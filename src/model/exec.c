/* Execution contexts of an engine (engine_internal.h): each step of the plan runs as
 * its DNN op (dnn.h) on the caller's stream, over the engine's weights and the
 * context's own activation arena. Shape-only nodes (Identity, Flatten, Reshape,
 * Squeeze, Unsqueeze) are views of their input's memory.
 *
 * On CUDA the steps are captured once, when the context is made, into a CUDA graph on
 * a private stream (core/graph.h): a run is then the inputs' copies in, one graph
 * launch and the outputs' copies out. Contexts share nothing they write, so runs of
 * different contexts need no ordering between them. */
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/graph.h"
#include "core/op.h"
#include "core/half.h"
#include "gaio/buffer.h"
#include "gaio/context.h"
#include "gaio/event.h"
#include "gaio/future.h"
#include "gaio/memory.h"
#include "gaio/stream.h"
#include "model/collapse.h"
#include "model/engine_internal.h"
#include "model/infer_resize.h"
#include "model/exec_reduce.h"
#include "model/norm_ops.h"
#include "model/views.h"

struct gaio_model_exec {
    gaio_engine *engine;    /* a reference */
    gaio_buffer *arena;
    gaio_buffer *scratch;   /* patch convolutions' patches (dnn/conv_patches.c), or NULL */
    gaio_stream *capture;   /* the graph's private stream: its library scratch is the graph's */
    gaio__devgraph *graph;  /* NULL: steps run one by one */
    pthread_mutex_t lock;   /* runs of one context are serialised */
    gaio_event *last;       /* recorded at the end of each run */
    gaio_stream *last_stream; /* not a reference: compared only */
    /* gaio_model_exec_set_shapes: the context of the engine of other shapes (of the
     * engine's profile) that runs take, or NULL; and those made so far. */
    gaio_model_exec *bound;
    struct sub_exec {
        gaio_model_exec *x;
        struct sub_exec *next;
    } *subs;
};

static gaio_status capture(const char *fn, gaio_model_exec *x);

static void exec_free(gaio_model_exec *x) {
    while (x->subs) {
        struct sub_exec *s = x->subs;
        x->subs = s->next;
        gaio_model_exec_release(s->x);
        free(s);
    }
    if (x->arena) gaio_buffer_release(x->arena);
    if (x->scratch) gaio_buffer_release(x->scratch);
    gaio__devgraph_free(x->graph);
    if (x->capture) gaio_stream_release(x->capture);
    if (x->last) gaio_event_release(x->last);
    pthread_mutex_destroy(&x->lock);
    gaio_engine_release(x->engine);
    free(x);
}

static size_t patches_scratch(const gaio_engine *e);

static gaio_status create_exec(const char *fn, gaio_engine *e, gaio_model_exec **out) {
    if (!out) return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "out is NULL");
    *out = NULL;
    if (!e) return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "e is NULL");
    gaio_status st = gaio__engine_ready(fn, e);
    if (st != GAIO_OK) return st;
    gaio_model_exec *x = calloc(1, sizeof *x);
    if (!x) return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory");
    pthread_mutex_init(&x->lock, NULL);
    gaio_engine_retain(e);
    x->engine = e;
    const double t0 = gaio__now_s();
    st = gaio_buffer_alloc(e->ctx, GAIO_MEM_DEVICE, e->arena_bytes ? e->arena_bytes : 1, &x->arena);
    const size_t scratch = patches_scratch(e);
    if (st == GAIO_OK && scratch) st = gaio_buffer_alloc(e->ctx, GAIO_MEM_DEVICE, scratch, &x->scratch);
    if (st == GAIO_OK) st = gaio_event_create(e->ctx, 0, &x->last);
    const double t1 = gaio__now_s();
    if (st == GAIO_OK && e->cuda_graph) st = capture(fn, x);
    if (st != GAIO_OK) {
        exec_free(x);
        return st;
    }
    if (getenv("GAIO_MODEL_TRACE"))
        fprintf(stderr, "gaio: execution context made in %.3f s: arena (%zu bytes) %.3f s, CUDA graph %.3f s\n",
                gaio__now_s() - t0, e->arena_bytes, t1 - t0, gaio__now_s() - t1);
    *out = x;
    return GAIO_OK;
}

gaio_status gaio_engine_create_exec(gaio_engine *e, gaio_model_exec **out) { return create_exec(__func__, e, out); }

gaio_status gaio_model_exec_engine(gaio_model_exec *x, gaio_engine **out) {
    GAIO_REQUIRE_PTR(out);
    *out = NULL;
    GAIO_REQUIRE_PTR(x);
    *out = x->engine;
    return GAIO_OK;
}

gaio_status gaio_model_exec_set_shapes(gaio_model_exec *x, const gaio_engine_shape *shapes, int32_t nshapes) {
    const char *fn = __func__;
    GAIO_REQUIRE_PTR(x);
    if (nshapes < 0 || (nshapes > 0 && !shapes))
        return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "nshapes is %d with shapes %s", (int)nshapes, shapes ? "given" : "NULL");
    gaio_engine *e = x->engine, *now = x->bound ? x->bound->engine : e;
    const mgraph *g = &e->model->g;
    int64_t(*dims)[GAIO_MODEL_MAX_NDIM] = calloc((size_t)g->ninputs + 1, sizeof *dims);
    if (!dims) return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory");
    for (int32_t i = 0; i < g->ninputs; i++) memcpy(dims[i], now->v[now->model->g.inputs[i]].dims, sizeof dims[i]);
    gaio_status st = GAIO_OK;
    for (int32_t k = 0; k < nshapes && st == GAIO_OK; k++) {
        const gaio_engine_shape *s = &shapes[k];
        int32_t in = -1;
        for (int32_t i = 0; s->name && i < g->ninputs && in < 0; i++)
            if (!strcmp(g->values[g->inputs[i]].name, s->name)) in = i;
        if (in < 0) {
            st = gaio__fail(GAIO_ERR_INVALID_ARG, fn, "shapes[%d] names %s%s%s, which is no input of the model", (int)k,
                            s->name ? "'" : "", s->name ? s->name : "no input", s->name ? "'" : "");
        } else if (s->ndim != e->v[g->inputs[in]].ndim) {
            st = gaio__fail(GAIO_ERR_INVALID_ARG, fn, "shapes[%d]: input '%s' has %d dimensions, not %d", (int)k,
                            s->name, (int)e->v[g->inputs[in]].ndim, (int)s->ndim);
        } else {
            memcpy(dims[in], s->dims, (size_t)s->ndim * sizeof **dims);
        }
    }
    gaio_engine *fe = NULL;
    if (st == GAIO_OK) st = gaio__profile_engine(fn, e, dims, &fe);
    free(dims);
    if (st != GAIO_OK) return st;
    pthread_mutex_lock(&x->lock);
    gaio_model_exec *to = NULL;
    for (struct sub_exec *s = x->subs; s && !to; s = s->next)
        if (s->x->engine == fe) to = s->x;
    if (fe != e && !to) {
        struct sub_exec *s = calloc(1, sizeof *s);
        if (!s) st = gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory");
        if (st == GAIO_OK) st = create_exec(fn, fe, &to);
        if (st == GAIO_OK) s->x = to, s->next = x->subs, x->subs = s;
        else free(s);
    }
    if (st == GAIO_OK) x->bound = fe == e ? NULL : to;
    pthread_mutex_unlock(&x->lock);
    return st;
}

gaio_status gaio_model_exec_input(gaio_model_exec *x, int32_t i, gaio_model_io *out) {
    GAIO_REQUIRE_PTR(x);
    return gaio_engine_input(x->bound ? x->bound->engine : x->engine, i, out);
}

gaio_status gaio_model_exec_output(gaio_model_exec *x, int32_t i, gaio_model_io *out) {
    GAIO_REQUIRE_PTR(x);
    return gaio_engine_output(x->bound ? x->bound->engine : x->engine, i, out);
}

gaio_status gaio_model_exec_create_ex(gaio_model *m, gaio_context *ctx, const gaio_model_exec_options *options,
                                      gaio_model_exec **out) {
    GAIO_REQUIRE_PTR(out);
    *out = NULL;
    GAIO_REQUIRE_PTR(options);
    gaio_engine_options o;
    memset(&o, 0, sizeof o);
    o.batch = options->batch, o.precision = options->precision, o.layout = options->layout;
    gaio_engine *e = NULL;
    gaio_status st = gaio__engine_build(__func__, m, ctx, &o, &e);
    if (st != GAIO_OK) return st;
    st = create_exec(__func__, e, out);
    gaio_engine_release(e); /* the context holds it */
    return st;
}

gaio_status gaio_model_exec_create(gaio_model *m, gaio_context *ctx, int64_t batch, gaio_model_exec **out) {
    gaio_model_exec_options o = {batch, GAIO_MODEL_PRECISION_AUTO, GAIO_MODEL_LAYOUT_AUTO};
    return gaio_model_exec_create_ex(m, ctx, &o, out);
}

gaio_status gaio_model_exec_release(gaio_model_exec *x) {
    if (!x) return GAIO_OK;
    /* A graph launch in flight uses the private stream's library scratch and the graph
     * itself, which no op holds (the weights and arena it holds): wait for the last run.
     * (Not freed from a completion callback instead: releasing a stream there would wait
     * on the completion thread from that thread.) */
    pthread_mutex_lock(&x->lock);
    bool ran = x->last_stream != NULL;
    pthread_mutex_unlock(&x->lock);
    if (x->graph && ran) (void)gaio_event_synchronize(x->last);
    exec_free(x);
    return GAIO_OK;
}

typedef struct run_state {
    const gaio_engine *e;
    gaio_buffer *arena;
    int32_t step;
    gaio_stream *s;
    const gaio_tensor *inputs; /* by graph input index; NULL while planning */
    gaio_buffer *scratch;      /* the context's (patch convolutions), or NULL */
} run_state;

/* Value x (of r's engine, or a slice made like one) as a tensor over its root's memory:
 * packed row-major or NHWC, or strided where it is a view. */
static gaio_tensor xtensor(const run_state *r, const xvalue *x) {
    int32_t root = x->root;
    gaio_tensor t;
    memset(&t, 0, sizeof t);
    const xvalue *rx = &r->e->v[root];
    if (rx->input >= 0 && !rx->staged && r->inputs) {
        const gaio_tensor *in = &r->inputs[rx->input];
        t.buffer = in->buffer, t.offset = in->offset;
    } else if (rx->mem != XM_NONE) {
        t.buffer = rx->mem == XM_WEIGHT ? r->e->weights : r->arena, t.offset = rx->off;
    }
    t.dtype = x->dtype;
    t.layout = x->nhwc ? GAIO_TENSOR_NHWC : GAIO_TENSOR_ROW_MAJOR;
    if (x->vndim > 0) { /* a strided view (views.c): its memory's dimensions, which attention reads */
        t.offset += (size_t)x->voff * gaio_dtype_size(x->dtype);
        t.ndim = x->vndim;
        memcpy(t.shape, x->vdims, (size_t)x->vndim * sizeof *t.shape);
        memcpy(t.strides, x->vstrides, (size_t)x->vndim * sizeof *t.strides);
        return t;
    }
    /* gaio_tensor has at most 5 dimensions: leading 1s beyond that are dropped, and
     * the leading dimensions of a value still larger merged (a view for the steps
     * that only move it, which node_check lets take such values). */
    int32_t skip = 0;
    while (x->ndim - skip > GAIO_TENSOR_MAX_NDIM && x->dims[skip] == 1) skip++;
    int32_t merge = x->ndim - skip > GAIO_TENSOR_MAX_NDIM ? x->ndim - skip - GAIO_TENSOR_MAX_NDIM : 0;
    t.ndim = x->ndim - skip - merge;
    for (int32_t d = 0; d < t.ndim; d++) t.shape[d] = x->dims[d + skip + merge];
    for (int32_t d = skip; d < skip + merge; d++) t.shape[0] *= x->dims[d];
    if (t.ndim == 0) t.ndim = 1, t.shape[0] = 1; /* a scalar as one element */
    if (x->cpitch > 0) { /* channels padded (engine.c pad_stems) or a slice of root's (concat_in_place) */
        const int64_t q = x->cpitch;
        t.strides[0] = x->dims[2] * x->dims[3] * q, t.strides[1] = 1, t.strides[2] = x->dims[3] * q, t.strides[3] = q;
        t.offset += (size_t)x->voff * gaio_dtype_size(x->dtype);
    }
    return t;
}

static gaio_tensor tensor(const run_state *r, int32_t v) { return xtensor(r, &r->e->v[v]); }

/* How many leading dimensions of size 1 tensor() dropped from value v to fit its
 * tensor t: the offset from t's dimensions to the value's (and its attributes'). */
static int32_t dropped(const run_state *r, int32_t v, const gaio_tensor *t) {
    int32_t k = r->e->v[v].ndim - t->ndim;
    return k > 0 ? k : 0;
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
    const int32_t pitch = r->e->v[sp->n->in[0]].cpitch;
    if (pitch > 0 && r->e->v[sp->w].cpitch == pitch) { /* the zero channels too: C % 8 == 0 */
        c->x.shape[1] = c->w.shape[1] = pitch;
        memset(c->x.strides, 0, sizeof c->x.strides), memset(c->w.strides, 0, sizeof c->w.strides);
    }
    c->has_b = sp->b >= 0, c->has_res = sp->res >= 0;
    if (c->has_b) c->b = tensor(r, sp->b);
    if (c->has_res) c->res = tensor(r, sp->res);
    for (int i = 0; i < 2; i++) c->p.stride[i] = (int32_t)a->strides[i], c->p.dilation[i] = (int32_t)a->dilations[i];
    for (int i = 0; i < 4; i++) c->p.pad[i] = (int32_t)a->pads[i];
    c->p.groups = (int32_t)a->group;
    c->p.act = sp->has_act ? &sp->act : NULL;
    c->p.f16_accumulation = (r->e->flags & GAIO__ENGINE_F16_FAST) != 0;
}

/* A ConvTranspose step's arguments (pads explicit since inference). */
typedef struct convt_call {
    gaio_tensor x, w, b, y;
    bool has_b;
    gaio_conv_transpose2d_params p;
} convt_call;

static void convt_of(const run_state *r, const xstep *sp, convt_call *c) {
    const mnode *n = sp->n;
    const mattrs *a = &n->a;
    memset(c, 0, sizeof *c);
    c->x = tensor(r, n->in[0]), c->w = tensor(r, n->in[1]), c->y = tensor(r, sp->out);
    c->has_b = n->nin > 2 && n->in[2] >= 0;
    if (c->has_b) c->b = tensor(r, n->in[2]);
    for (int i = 0; i < 2; i++) {
        c->p.stride[i] = (int32_t)a->strides[i], c->p.dilation[i] = (int32_t)a->dilations[i];
        c->p.output_padding[i] = (int32_t)a->output_padding[i];
    }
    for (int i = 0; i < 4; i++) c->p.pad[i] = (int32_t)a->pads[i];
    c->p.groups = (int32_t)a->group;
}

/* The scratch a patch convolution of step c needs (dnn/conv_patches.c), 0: none. */
static size_t patches_of(const gaio_engine *e, const conv_call *c) {
    return gaio__conv2d_patches_bytes(e->gpu, &c->x, &c->w, c->has_b ? &c->b : NULL, c->has_res ? &c->res : NULL,
                                      &c->y, &c->p);
}

/* The largest of those: one scratch per context, the steps running one at a time. */
static size_t patches_scratch(const gaio_engine *e) {
    run_state r = {e, NULL, 0, NULL, NULL, NULL};
    size_t most = 0;
    for (int32_t i = 0; i < e->plan.nsteps; i++) {
        const xstep *sp = &e->plan.steps[i];
        if (sp->n->op != OP_CONV) continue;
        conv_call c;
        conv_of(&r, sp, &c);
        const size_t n = patches_of(e, &c);
        if (n > most) most = n;
    }
    return most;
}

/* A convolution step whose x or residual is a caller's input buffer, read in place
 * (not staged): its plan and packing depend on that buffer, known at the first run. */
static bool reads_callers_input(const gaio_engine *e, const xstep *sp) {
    const xvalue *x = &e->v[e->v[sp->n->in[0]].root], *res = sp->res >= 0 ? &e->v[e->v[sp->res].root] : NULL;
    return (x->input >= 0 && !x->staged) || (res && res->input >= 0 && !res->staged);
}

/* Plans every convolution now, off the run path (gaio_conv2d_prepare times cuDNN's
 * candidates and keeps the fastest), except one that reads a caller's input directly:
 * its plan depends on that buffer's alignment, and is made at its first run. */
gaio_status gaio__engine_prepare_convs(gaio_engine *e, gaio_stream *s, gaio_buffer *arena) {
    run_state r = {e, arena, 0, s, NULL, NULL};
    gaio_status st = GAIO_OK;
    bool tune = !(e->flags & GAIO_ENGINE_NO_TUNE);
    for (int32_t i = 0; i < e->plan.nsteps && st == GAIO_OK; i++) {
        const xstep *sp = &e->plan.steps[i];
        if (sp->n->op != OP_CONV && sp->n->op != OP_CONV_TRANSPOSE) continue;
        if (reads_callers_input(e, sp)) {
            snprintf(e->kernel[i], sizeof e->kernel[i], "(planned at the first run)");
            continue;
        }
        gaio_conv2d_info info;
        if (e->conv_plans[i]) gaio__conv_plan_release(e->conv_plans[i]);
        e->conv_plans[i] = NULL;
        if (sp->n->op == OP_CONV_TRANSPOSE) {
            convt_call t;
            convt_of(&r, sp, &t);
            st = gaio__conv_transpose2d_prepare_keep(s, &t.x, &t.w, t.has_b ? &t.b : NULL, &t.y, &t.p, &info, tune,
                                                     &e->conv_plans[i]);
            if (st == GAIO_OK) snprintf(e->kernel[i], sizeof e->kernel[i], "%s", info.engine);
            continue;
        }
        conv_call c;
        conv_of(&r, sp, &c);
        if (patches_of(e, &c)) {
            snprintf(e->kernel[i], sizeof e->kernel[i], "gaio patches + cuBLASLt GEMM");
            continue;
        }
        st = gaio__conv2d_prepare_keep(s, &c.x, &c.w, c.has_b ? &c.b : NULL, c.has_res ? &c.res : NULL, &c.y, &c.p,
                                       &info, tune, &e->conv_plans[i]);
        if (st == GAIO_OK) snprintf(e->kernel[i], sizeof e->kernel[i], "%s", info.engine);
    }
    if (st == GAIO_OK) gaio__engine_graph_hazards(e);
    return st;
}

gaio_status gaio__engine_pack_convs(gaio_engine *e, gaio_stream *s, gaio_buffer *arena) {
    const char *env = getenv("GAIO_MODEL_PACK_WEIGHTS"); /* =0: reorder at each call, to compare */
    if (e->gpu || (env && !strcmp(env, "0"))) return GAIO_OK;
    if (!e->packed && !(e->packed = calloc((size_t)e->plan.nsteps + 1, sizeof *e->packed)))
        return gaio__fail(GAIO_ERR_NO_MEMORY, "gaio_engine_build", "out of host memory");
    run_state r = {e, arena, 0, s, NULL, NULL};
    gaio_status st = GAIO_OK;
    for (int32_t i = 0; i < e->plan.nsteps && st == GAIO_OK; i++) {
        const xstep *sp = &e->plan.steps[i];
        if (sp->n->op != OP_CONV || e->packed[i] || e->v[e->v[sp->w].root].mem != XM_WEIGHT) continue;
        if (reads_callers_input(e, sp)) continue;
        conv_call c;
        conv_of(&r, sp, &c);
        st = gaio__conv2d_pack_weights(s, &c.x, &c.w, c.has_b ? &c.b : NULL, c.has_res ? &c.res : NULL, &c.y, &c.p,
                                       &e->packed[i]);
        char *at = e->packed[i] ? strstr(e->kernel[i], ", w reordered") : NULL;
        if (at) { /* the step's text says so: "oneDNN jit:avx2, w packed" */
            char rest[GAIO_ENGINE_KERNEL_TEXT];
            snprintf(rest, sizeof rest, "%s", at + strlen(", w reordered"));
            snprintf(at, sizeof e->kernel[i] - (size_t)(at - e->kernel[i]), ", w packed%s", rest);
        }
    }
    return st;
}

void gaio__engine_graph_hazards(gaio_engine *e) {
    for (int32_t i = 0; e->cuda_graph && i < e->plan.nsteps; i++) {
        if (!e->conv_plans[i] || !gaio__conv_plan_graph_hazard(e->conv_plans[i])) continue;
        e->cuda_graph = false;
        if (getenv("GAIO_MODEL_TRACE"))
            fprintf(stderr, "gaio: plan: no CUDA graph: step %d (%s) runs a runtime-compiled cuDNN engine with the "
                    "residual fused, which gives wrong results in graphs launched concurrently\n", (int)i,
                    e->plan.steps[i].n->name);
    }
}

static float scalar(const mvalue *v, float fallback) {
    if (!v || !v->data || !v->bytes) return fallback;
    return v->elem == MT_F16 ? h2f(*(const uint16_t *)v->data) : *(const float *)v->data;
}

/* The unary op of an element-wise node with no parameters. */
static gaio_unary_op unary_of(const mnode *n) {
    switch (n->op) {
    case OP_SQRT: return GAIO_UNARY_SQRT;
    case OP_EXP: return GAIO_UNARY_EXP;
    case OP_LOG: return GAIO_UNARY_LOG;
    case OP_TANH: return GAIO_UNARY_TANH;
    case OP_ABS: return GAIO_UNARY_ABS;
    case OP_NEG: return GAIO_UNARY_NEG;
    case OP_RECIPROCAL: return GAIO_UNARY_RECIPROCAL;
    case OP_FLOOR: return GAIO_UNARY_FLOOR;
    case OP_CEIL: return GAIO_UNARY_CEIL;
    case OP_ERF: return GAIO_UNARY_ERF;
    case OP_SOFTPLUS: return GAIO_UNARY_SOFTPLUS;
    case OP_GELU: return n->a.approximate ? GAIO_UNARY_GELU_TANH : GAIO_UNARY_GELU;
    case OP_SIN: return GAIO_UNARY_SIN;
    case OP_COS: return GAIO_UNARY_COS;
    case OP_SIGMOID: return GAIO_UNARY_SIGMOID;
    case OP_HARD_SWISH: return GAIO_UNARY_HARD_SWISH;
    default: return GAIO_UNARY_RELU;
    }
}

/* t (packed by its layout) seen over y's shape: its dimensions aligned at the last, a
 * dimension of 1 that y spans at stride 0. Strides stay non-zero wherever t has more
 * than one element or y has one (all-zero strides would mean "packed"). */
static gaio_status expand_to(const gaio_tensor *t, const gaio_tensor *y, gaio_tensor *out) {
    gaio_tensor r;
    gaio_status st = gaio_tensor_check(t, &r, NULL);
    if (st != GAIO_OK) return st;
    *out = r;
    int32_t shift = y->ndim - r.ndim;
    for (int32_t d = 0; d < y->ndim; d++) {
        int32_t s = d - shift;
        int64_t n = s >= 0 ? r.shape[s] : 1;
        out->shape[d] = y->shape[d];
        out->strides[d] = n == 1 && y->shape[d] > 1 ? 0 : s >= 0 ? r.strides[s] : 1;
    }
    out->ndim = y->ndim;
    return GAIO_OK;
}

/* Min, Max, Sum and Mean of 1 to N inputs into y: a copy for one; for more, the input
 * with the most elements (the first such) seen over y's shape, combined with another
 * into y, then each of the rest into y in place. Mean scales by 1 / N on the last. */
static gaio_status run_variadic(const run_state *r, const mnode *n, const gaio_tensor *y) {
    gaio_stream *s = r->s;
    gaio_binary_op op = n->op == OP_MIN ? GAIO_BINARY_MIN : n->op == OP_MAX ? GAIO_BINARY_MAX : GAIO_BINARY_ADD;
    gaio_unary_params mean = {GAIO_UNARY_AFFINE, 1.0f / (float)n->nin, 0.0f};
    const gaio_unary_params *last = n->op == OP_MEAN ? &mean : NULL;
    if (n->nin == 1) {
        gaio_tensor x = tensor(r, n->in[0]);
        return gaio_cast(s, &x, y);
    }
    int32_t first = 0;
    int64_t most = 0;
    for (int32_t k = 0; k < n->nin; k++) {
        gaio_tensor x = tensor(r, n->in[k]);
        int64_t cnt = 1;
        for (int32_t d = 0; d < x.ndim; d++) cnt *= x.shape[d];
        if (cnt > most) most = cnt, first = k;
    }
    gaio_tensor a0 = tensor(r, n->in[first]), a;
    gaio_status st = expand_to(&a0, y, &a);
    int32_t done = 0;
    for (int32_t k = 0; k < n->nin && st == GAIO_OK; k++) {
        if (k == first) continue;
        gaio_tensor b = tensor(r, n->in[k]);
        const gaio_unary_params *act = ++done == n->nin - 1 ? last : NULL;
        st = gaio_binary(s, op, done == 1 ? &a : y, &b, y, act);
    }
    return st;
}

/* The product of t's dimensions [from, to). */
static int64_t span(const gaio_tensor *t, int32_t from, int32_t to) {
    int64_t p = 1;
    for (int32_t d = from; d < to; d++) p *= t->shape[d];
    return p;
}

/* t's dimensions before its last two as one: [batch, rows, cols] (a 1-D t as a row or
 * column: [1, 1, k] for a, [1, k, 1] for b). The values are packed row major. */
static gaio_tensor as_batched(const gaio_tensor *t, bool is_b) {
    gaio_tensor o = *t;
    int64_t rows = t->ndim >= 2 ? t->shape[t->ndim - 2] : (is_b ? t->shape[0] : 1);
    int64_t cols = t->ndim >= 2 ? t->shape[t->ndim - 1] : (is_b ? 1 : t->shape[0]);
    o.ndim = 3, o.layout = GAIO_TENSOR_ROW_MAJOR;
    o.shape[0] = t->ndim > 2 ? span(t, 0, t->ndim - 2) : 1, o.shape[1] = rows, o.shape[2] = cols;
    memset(o.strides, 0, sizeof o.strides); /* packed */
    return o;
}

/* A packed NHWC [N, C, H, W] tensor as the row-major [N, H, W, C] its bytes are (a
 * rows_nhwc step's output and residual: plan.c nhwc_residual_of); false, t unchanged,
 * for anything else. */
static bool nhwc_as_rows(gaio_tensor *t) {
    if (t->layout != GAIO_TENSOR_NHWC || t->ndim != 4) return false;
    for (int32_t d = 0; d < 4; d++)
        if (t->strides[d] != 0) return false;
    const int64_t c = t->shape[1];
    t->shape[1] = t->shape[2], t->shape[2] = t->shape[3], t->shape[3] = c;
    t->layout = GAIO_TENSOR_ROW_MAJOR;
    return true;
}

/* MatMul of any ranks (numpy's matmul): the leading dimensions broadcast. Leading
 * dimensions equal on both sides, or all 1 on one side, make one batched GEMM (all 1 on
 * b's side with a row-major a: one GEMM with them folded into a's rows); any other
 * broadcast one GEMM per batch of the output. */
static gaio_status run_matmul(const char *fn, const run_state *r, const mnode *n, const gaio_tensor *x,
                              const gaio_tensor *b, const gaio_tensor *c, const gaio_tensor *bias, const gaio_tensor *y,
                              const gaio_gemm_params *params) {
    gaio_stream *s = r->s;
    const gaio_gemm_params p = *params;
    if (x->layout != GAIO_TENSOR_ROW_MAJOR || b->layout != GAIO_TENSOR_ROW_MAJOR || y->layout != GAIO_TENSOR_ROW_MAJOR)
        return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn, "node '%s' (MatMul): an NHWC operand (a view of a convolution's "
                          "output): build the engine with layout NCHW", n->name);
    /* y's leading (batch) dimensions: those before the rows a adds and the columns b
     * adds (a 1-D side adds none) */
    int32_t lead = y->ndim - (x->ndim >= 2) - (b->ndim >= 2);
    int32_t la = x->ndim - 2 > 0 ? x->ndim - 2 : 0, lb = b->ndim - 2 > 0 ? b->ndim - 2 : 0;
    int64_t ya = span(y, 0, lead), xa = span(x, 0, la), ba = span(b, 0, lb);
    gaio_tensor a3 = as_batched(x, false), b3 = as_batched(b, true), y3 = *y;
    y3.ndim = 3, y3.layout = GAIO_TENSOR_ROW_MAJOR;
    y3.shape[0] = ya, y3.shape[1] = a3.shape[1], y3.shape[2] = p.trans_b ? b3.shape[1] : b3.shape[2];
    memset(y3.strides, 0, sizeof y3.strides); /* packed */
    /* b one matrix and a's rows the output's in another order (views.c rows_in: a is
     * the source of the Transpose the graph had before the product, y is written in
     * its row order): one GEMM over all rows, as below */
    if (ba == 1 && xa != ya && x->ndim >= 2 && y->ndim >= 2 &&
        span(x, 0, x->ndim - 1) == span(y, 0, y->ndim - 1) && r->e->v[n->in[0]].vndim > 0) {
        a3.shape[1] = span(x, 0, x->ndim - 1), a3.shape[0] = 1;
        y3.shape[1] = a3.shape[1], y3.shape[0] = 1;
        xa = ya = 1;
    }
    if (ba == 1 && xa == ya) { /* b one matrix: a's batches fold into its rows */
        a3.shape[1] *= a3.shape[0], a3.shape[0] = 1;
        y3.shape[1] *= y3.shape[0], y3.shape[0] = 1;
        gaio_tensor c3 = y3;
        if (c) c3.buffer = c->buffer, c3.offset = c->offset, c3.dtype = c->dtype; /* y's shape: packed */
        return gaio_gemm(s, &a3, &b3, c ? &c3 : NULL, bias, &y3, &p);
    }
    if ((xa == ya || xa == 1) && (ba == ya || ba == 1)) {
        /* equal or wholly broadcast: the leading dimensions of each side match y's
         * element by element (a side with as many as y and the same product) */
        bool same_a = xa == 1 || (la == lead && !memcmp(x->shape, y->shape, (size_t)lead * sizeof *x->shape));
        bool same_b = ba == 1 || (lb == lead && !memcmp(b->shape, y->shape, (size_t)lead * sizeof *b->shape));
        gaio_tensor c3 = y3;
        if (c) c3.buffer = c->buffer, c3.offset = c->offset, c3.dtype = c->dtype;
        if (same_a && same_b) return gaio_gemm(s, &a3, &b3, c ? &c3 : NULL, bias, &y3, &p);
    }
    /* Partial broadcast: one GEMM per output batch, each side's batch by its own
     * dimensions (1s repeat). */
    size_t es = gaio_dtype_size(y->dtype);
    int64_t am = a3.shape[1] * a3.shape[2], bm = b3.shape[1] * b3.shape[2], ym = y3.shape[1] * y3.shape[2];
    gaio_status st = GAIO_OK;
    for (int64_t i = 0; i < ya && st == GAIO_OK; i++) {
        int64_t rest = i, ai = 0, bi = 0, astep = 1, bstep = 1;
        for (int32_t d = lead - 1; d >= 0; d--) {
            int64_t k = rest % y->shape[d];
            rest /= y->shape[d];
            int32_t da = d - (lead - la), db = d - (lead - lb);
            if (da >= 0) ai += (x->shape[da] == 1 ? 0 : k) * astep, astep *= x->shape[da];
            if (db >= 0) bi += (b->shape[db] == 1 ? 0 : k) * bstep, bstep *= b->shape[db];
        }
        gaio_tensor a1 = a3, b1 = b3, y1 = y3;
        a1.shape[0] = b1.shape[0] = y1.shape[0] = 1;
        a1.offset += (size_t)(ai * am) * es, b1.offset += (size_t)(bi * bm) * es, y1.offset += (size_t)(i * ym) * es;
        gaio_tensor c1 = y1;
        if (c) c1.buffer = c->buffer, c1.offset = c->offset + (size_t)(i * ym) * es, c1.dtype = c->dtype;
        st = gaio_gemm(s, &a1, &b1, c ? &c1 : NULL, bias, &y1, &p);
    }
    return st;
}

/* Einsum as the batched GEMM inference resolved (infer_einsum.c): each operand a
 * [batch, rows, cols] view of its row-major elements. */
static gaio_status run_einsum(const char *fn, const run_state *r, const mnode *n, const gaio_tensor *x,
                              const gaio_tensor *b, const gaio_tensor *y) {
    const mattrs *a = &n->a;
    if (x->layout != GAIO_TENSOR_ROW_MAJOR || b->layout != GAIO_TENSOR_ROW_MAJOR || y->layout != GAIO_TENSOR_ROW_MAJOR)
        return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn, "node '%s' (Einsum): an NHWC operand (a view of a convolution's "
                          "output): build the engine with layout NCHW", n->name);
    const gaio_tensor *pt = a->es_swap ? b : x, *qt = a->es_swap ? x : b;
    gaio_tensor p3 = *pt, q3 = *qt, y3 = *y;
    int64_t batch = span(y, 0, a->es_batch);
    p3.ndim = q3.ndim = y3.ndim = 3;
    p3.shape[0] = q3.shape[0] = y3.shape[0] = batch;
    p3.shape[1] = a->es_rows_p, p3.shape[2] = a->es_cols_p;
    q3.shape[1] = a->es_rows_q, q3.shape[2] = a->es_cols_q;
    y3.shape[1] = a->es_trans_p ? a->es_cols_p : a->es_rows_p;
    y3.shape[2] = a->es_trans_q ? a->es_rows_q : a->es_cols_q;
    memset(p3.strides, 0, sizeof p3.strides), memset(q3.strides, 0, sizeof q3.strides);
    memset(y3.strides, 0, sizeof y3.strides); /* packed */
    gaio_gemm_params p = {a->es_trans_p, a->es_trans_q, 1.0f, 0.0f, GAIO_ACT_NONE};
    return gaio_gemm(r->s, &p3, &q3, NULL, NULL, &y3, &p);
}

/* A Transpose of more dimensions than gaio_tensor holds (row-major: only 4-D values are
 * NHWC), collapsed (collapse.h); one of 6 still runs as one gaio_transpose per index
 * of the output's shortest dimension, on strided views of the rest (MaxViT's window
 * partition, (0, 2, 4, 3, 5, 1): a few launches of the window's size). */
static gaio_status run_transpose_big(const char *fn, const run_state *r, const mnode *n, gaio_tensor x, gaio_tensor y) {
    enum { M = GAIO_MODEL_MAX_NDIM, T = GAIO_TENSOR_MAX_NDIM };
    const xvalue *xv = &r->e->v[n->in[0]];
    int64_t cd[M], xs[M], yd[M], ys[M];
    int32_t cp[M], perm[T];
    int32_t cr = gaio__transpose_collapse(xv->dims, xv->ndim, n->a.perm, cd, cp);
    if (cr > T + 1) /* node_check refused it at build */
        return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn, "node '%s' (Transpose): more than %d dimensions", n->name, T + 1);
    int64_t m = 1;
    for (int32_t d = cr - 1; d >= 0; d--) xs[d] = m, m *= cd[d];
    for (int32_t i = 0; i < cr; i++) yd[i] = cd[cp[i]];
    m = 1;
    for (int32_t i = cr - 1; i >= 0; i--) ys[i] = m, m *= yd[i];
    x.ndim = y.ndim = cr <= T ? cr : T;
    if (cr <= T) {
        for (int32_t i = 0; i < cr; i++) x.shape[i] = cd[i], y.shape[i] = yd[i], perm[i] = cp[i];
        return gaio_transpose(r->s, &x, &y, perm);
    }
    int32_t i0 = 0;
    for (int32_t i = 1; i < cr; i++)
        if (yd[i] < yd[i0]) i0 = i;
    int32_t d0 = cp[i0];
    size_t es = gaio_dtype_size(x.dtype);
    gaio_status st = GAIO_OK;
    for (int64_t k = 0; k < yd[i0] && st == GAIO_OK; k++) {
        gaio_tensor xk = x, yk = y;
        for (int32_t d = 0, j = 0; d < cr; d++)
            if (d != d0) xk.shape[j] = cd[d], xk.strides[j++] = xs[d];
        for (int32_t i = 0, j = 0; i < cr; i++)
            if (i != i0) yk.shape[j] = yd[i], yk.strides[j] = ys[i], perm[j++] = cp[i] < d0 ? cp[i] : cp[i] - 1;
        xk.offset += (size_t)(k * xs[d0]) * es;
        yk.offset += (size_t)(k * ys[i0]) * es;
        st = gaio_transpose(r->s, &xk, &yk, perm);
    }
    return st;
}

/* A Gather of one constant index (attention's q, k and v out of one projection in
 * torch.onnx's export of nn.MultiheadAttention): the slice of x at that index, copied
 * as a strided view, where the gather kernel would decode every element's coordinates
 * (the copy moves rows of 16 bytes). *done: whether it ran; false leaves the general
 * gather to the caller. */
static gaio_status run_gather_one(const run_state *r, const mnode *n, const gaio_tensor *x, const gaio_tensor *y,
                                  bool *done) {
    const mgraph *g = &r->e->model->g;
    const mvalue *iv = &g->values[n->in[1]];
    int64_t rank = r->e->v[n->in[0]].ndim, axis = n->a.axis < 0 ? n->a.axis + rank : n->a.axis;
    int64_t cnt = 1;
    for (int32_t d = 0; d < iv->ndim; d++) cnt *= iv->dims[d];
    if (!iv->data || cnt != 1 || (iv->elem != MT_I64 && iv->elem != MT_I32) || dropped(r, n->in[0], x) != 0 ||
        x->ndim != rank || axis < 0 || axis >= rank || iv->ndim > 1)
        return GAIO_OK;
    int64_t at = iv->elem == MT_I64 ? *(const int64_t *)iv->data : *(const int32_t *)iv->data;
    if (at < 0) at += x->shape[axis];
    if (at < 0 || at >= x->shape[axis]) return GAIO_OK; /* the gather's own check names it */
    gaio_tensor v;
    gaio_status st = gaio_tensor_check(x, &v, NULL);
    if (st != GAIO_OK) return st;
    v.offset += (size_t)(at * v.strides[axis]) * gaio_dtype_size(v.dtype);
    v.layout = GAIO_TENSOR_ROW_MAJOR; /* the strides are explicit: the tag no longer matters, nor fits 3-D */
    if (iv->ndim == 0) { /* a scalar index drops the axis */
        for (int32_t d = (int32_t)axis; d + 1 < v.ndim; d++) v.shape[d] = v.shape[d + 1], v.strides[d] = v.strides[d + 1];
        if (--v.ndim == 0) v.ndim = 1, v.shape[0] = 1, v.strides[0] = 1;
    } else {
        v.shape[axis] = 1;
    }
    if (v.ndim != y->ndim) return GAIO_OK;
    for (int32_t d = 0; d < v.ndim; d++)
        if (v.shape[d] != y->shape[d]) return GAIO_OK;
    *done = true;
    return gaio_cast(r->s, &v, y); /* a copy, of integers too */
}

/* t with its strides explicit and its leading dimensions of size 1 dropped (L and D
 * stay). */
static void lead_tidy(gaio_tensor *t) {
    int64_t st[GAIO_TENSOR_MAX_NDIM];
    if (gaio__tensor_strides(t, st)) memcpy(t->strides, st, (size_t)t->ndim * sizeof *st);
    int32_t k = 0;
    for (int32_t d = 0; d < t->ndim; d++)
        if (d >= t->ndim - 2 || t->shape[d] != 1) t->shape[k] = t->shape[d], t->strides[k] = t->strides[d], k++;
    t->ndim = k;
}

/* gaio_attention's q, k, v and y with one split of their leading (batch) dimensions:
 * a strided view (views.c) keeps a merged dimension's parts apart, [N, H, L, D] for
 * the graph's [N*H, L, D]; the operands with a single leading dimension are split as
 * the view is (views.c leads_agree checked that they can be). */
static void attention_leads(gaio_tensor *const *t) {
    for (int i = 0; i < 4; i++) lead_tidy(t[i]);
    const gaio_tensor *split = NULL;
    for (int i = 0; i < 4; i++)
        if (t[i]->ndim == 4) split = t[i];
    if (!split) return;
    for (int i = 0; i < 4; i++) {
        gaio_tensor *u = t[i];
        if (u->ndim != 3 || u->shape[0] != split->shape[0] * split->shape[1]) continue;
        const int64_t s0 = u->strides[0];
        u->ndim = 4;
        u->shape[3] = u->shape[2], u->strides[3] = u->strides[2];
        u->shape[2] = u->shape[1], u->strides[2] = u->strides[1];
        u->shape[0] = split->shape[0], u->shape[1] = split->shape[1];
        u->strides[0] = s0 * split->shape[1], u->strides[1] = s0;
    }
}

static gaio_status run_step(const char *fn, const run_state *r, const xstep *sp) {
    const mgraph *g = &r->e->model->g;
    if (gaio__engine_step_is_view(r->e, r->step)) return GAIO_OK; /* views.c */
    const mnode *n = sp->n;
    gaio_stream *s = r->s;
    const mattrs *a = &n->a;
    gaio_tensor x = tensor(r, n->in[0]), y = tensor(r, sp->out);
    if (sp->gelu) { /* an exported GELU chain (plan.c gelu_of): its input, not the constant */
        gaio_unary_params p = {GAIO_UNARY_GELU, 0.0f, 0.0f};
        if (g->values[n->in[0]].data) x = tensor(r, n->in[1]);
        return gaio_unary(s, &x, &y, &p);
    }
    switch (n->op) {
    case OP_IDENTITY:
    case OP_DROPOUT:
    case OP_FLATTEN:
    case OP_RESHAPE:
    case OP_SQUEEZE:
    case OP_UNSQUEEZE: {
        if (!r->e->copy[r->step]) return GAIO_OK; /* a view */
        /* The NHWC input in row-major order into the output's buffer, which the output
         * then views with its own shape. */
        gaio_tensor flat = x;
        flat.buffer = r->arena, flat.offset = r->e->v[sp->out].off, flat.layout = GAIO_TENSOR_ROW_MAJOR;
        return gaio_cast(s, &x, &flat);
    }
    case OP_CONV: {
        conv_call c;
        conv_of(r, sp, &c);
        if (r->scratch && patches_of(r->e, &c)) { /* dnn/conv_patches.c: a copy and a GEMM */
            gaio_tensor sc = gaio_tensor_make(r->scratch, 0, c.x.dtype, 1, (int64_t[]){1}, GAIO_TENSOR_ROW_MAJOR);
            return gaio__conv2d_patches(s, &c.x, &c.w, c.has_b ? &c.b : NULL, &c.y, &c.p, &sc);
        }
        gaio__conv_cpu_weights *packed = r->e->packed ? r->e->packed[r->step] : NULL; /* NULL: gaio_conv2d's */
        return gaio__conv2d_packed(s, &c.x, &c.w, c.has_b ? &c.b : NULL, c.has_res ? &c.res : NULL, &c.y, &c.p,
                                   packed);
    }
    case OP_CONV_TRANSPOSE: {
        convt_call c;
        convt_of(r, sp, &c);
        return gaio_conv_transpose2d(s, &c.x, &c.w, c.has_b ? &c.b : NULL, &c.y, &c.p);
    }
    case OP_GEMM:
    case OP_MATMUL: {
        if (sp->attention) { /* plan.c attention_of */
            gaio_tensor q = tensor(r, sp->x >= 0 ? sp->x : n->in[0]), k = tensor(r, sp->w), v = tensor(r, sp->res), bt;
            if (sp->b >= 0) bt = tensor(r, sp->b);
            gaio_attention_params ap = {sp->alpha};
            attention_leads((gaio_tensor *const[4]){&q, &k, &v, &y});
            return gaio_attention(s, &q, &k, &v, sp->b >= 0 ? &bt : NULL, &y, &ap);
        }
        gaio_tensor b = tensor(r, n->op == OP_MATMUL && sp->w >= 0 ? sp->w : n->in[1]);
        gaio_gemm_params p = {0, 0, 1.0f, 0.0f, GAIO_ACT_NONE};
        gaio_tensor rt, yv = y; /* yv: y as its value is, for a residual added after the GEMM */
        const gaio_tensor *res = NULL;
        if (sp->rows_nhwc && (n->op != OP_MATMUL || !nhwc_as_rows(&y)))
            return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "node '%s': the step writes the rows of an NHWC value, "
                              "but its output is not one (a damaged engine?)", n->name);
        if (n->op == OP_MATMUL) { /* the planner's absorbed scales, transpose and residual (plan.c) */
            if (sp->x >= 0) x = tensor(r, sp->x);
            p.trans_b = sp->trans_b, p.alpha = sp->alpha;
            if (sp->res >= 0) rt = tensor(r, sp->res), res = &rt, p.beta = 1.0f;
            /* The GEMM's C is row major (engine.c wants it so), or for a rows_nhwc step
             * NHWC read as its rows; anything else adds after. */
            if (res && sp->rows_nhwc) {
                gaio_tensor rows = rt;
                if (nhwc_as_rows(&rows)) rt = rows;
                else res = NULL, p.beta = 0.0f;
            }
            if (res && rt.layout != GAIO_TENSOR_ROW_MAJOR) res = NULL, p.beta = 0.0f;
        }
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
        } else if (sp->b >= 0) { /* the planner's bias (plan.c bias_of), as the row it is */
            ct = tensor(r, sp->b);
            ct.ndim = 1, ct.shape[0] = y.shape[y.ndim - 1];
            memset(ct.strides, 0, sizeof ct.strides); /* packed */
            bias = &ct;
        }
        /* The fused activation: ReLU in the GEMM's epilogue, the others a pass after it
         * (cuBLASLt's GELU epilogue is the tanh approximation, not ONNX's). */
        const bool late = n->op == OP_MATMUL && sp->res >= 0 && !res; /* the residual added after the GEMM */
        bool pass = sp->has_act && (sp->act.op != GAIO_UNARY_RELU || late);
        if (sp->has_act && !pass) p.act = GAIO_ACT_RELU;
        if (res) c = res;
        gaio_status st = n->op == OP_MATMUL && (x.ndim != 2 || b.ndim != 2) ? run_matmul(fn, r, n, &x, &b, c, bias, &y, &p)
                                                                           : gaio_gemm(s, &x, &b, c, bias, &y, &p);
        if (st == GAIO_OK && late) /* the residual, then the activation */
            return gaio_binary(s, GAIO_BINARY_ADD, &yv, &rt, &yv, pass ? &sp->act : NULL);
        if (st != GAIO_OK || !pass) return st;
        return gaio_unary(s, &y, &y, &sp->act);
    }
    case OP_EINSUM: {
        gaio_tensor b = tensor(r, n->in[1]);
        return run_einsum(fn, r, n, &x, &b, &y);
    }
    case OP_BATCH_NORM: {
        const gaio_unary_params *act = sp->has_act ? &sp->act : NULL;
        if (sp->w >= 0) { /* the planner's scale and shift (bn_affine) */
            gaio_tensor k = tensor(r, sp->w), b = tensor(r, sp->b);
            return gaio__batch_norm_act(fn, s, &x, &y, &k, &b, NULL, NULL, 0.0f, act, true);
        }
        gaio_tensor prm[4];
        for (int j = 0; j < 4; j++) {
            int32_t v = n->in[j + 1];
            prm[j] = tensor(r, v);
        }
        return gaio__batch_norm_act(fn, s, &x, &y, &prm[0], &prm[1], &prm[2], &prm[3], a->epsilon, act, false);
    }
    case OP_RELU:
    case OP_SIGMOID:
    case OP_HARD_SIGMOID:
    case OP_HARD_SWISH:
    case OP_CLIP: {
        gaio_unary_params p = {unary_of(n), 0.0f, 0.0f};
        if (n->op == OP_HARD_SIGMOID) p.op = GAIO_UNARY_HARD_SIGMOID, p.alpha = a->alpha, p.beta = a->beta;
        if (n->op == OP_CLIP) {
            p.op = GAIO_UNARY_CLIP;
            /* Opsets 11 on: inputs; before: attributes (a->clip_*, else unbounded). */
            p.alpha = scalar(n->nin > 1 && n->in[1] >= 0 ? &g->values[n->in[1]] : NULL,
                             isfinite(a->clip_min) ? a->clip_min : -FLT_MAX);
            p.beta = scalar(n->nin > 2 && n->in[2] >= 0 ? &g->values[n->in[2]] : NULL,
                            isfinite(a->clip_max) ? a->clip_max : FLT_MAX);
        }
        return gaio_unary(s, &x, &y, &p);
    }
    case OP_SQRT:
    case OP_EXP:
    case OP_LOG:
    case OP_TANH:
    case OP_ABS:
    case OP_NEG:
    case OP_RECIPROCAL:
    case OP_FLOOR:
    case OP_CEIL:
    case OP_ERF:
    case OP_SOFTPLUS:
    case OP_GELU:
    case OP_SIN:
    case OP_COS: {
        gaio_unary_params p = {unary_of(n), 0.0f, 0.0f};
        return gaio_unary(s, &x, &y, &p);
    }
    case OP_ADD:
    case OP_SUB:
    case OP_MUL:
    case OP_DIV:
    case OP_POW:
    case OP_MOD: { /* Mod of floats: fmod 1 (inference refuses 0) */
        gaio_tensor b = tensor(r, n->in[1]);
        gaio_binary_op op = n->op == OP_ADD   ? GAIO_BINARY_ADD
                            : n->op == OP_SUB ? GAIO_BINARY_SUB
                            : n->op == OP_MUL ? GAIO_BINARY_MUL
                            : n->op == OP_DIV ? GAIO_BINARY_DIV
                            : n->op == OP_MOD ? GAIO_BINARY_FMOD
                                              : GAIO_BINARY_POW;
        return gaio_binary(s, op, &x, &b, &y, NULL);
    }
    case OP_MIN:
    case OP_MAX:
    case OP_SUM:
    case OP_MEAN:
        return run_variadic(r, n, &y);
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
        return gaio_global_avg_pool(s, &x, &y);
    case OP_REDUCE_MEAN:
    case OP_REDUCE_MAX:
    case OP_REDUCE_MIN:
    case OP_REDUCE_SUM:
    case OP_REDUCE_PROD:
    case OP_REDUCE_L1:
    case OP_REDUCE_L2:
    case OP_REDUCE_SUM_SQUARE:
    case OP_REDUCE_LOG_SUM:
    case OP_REDUCE_LOG_SUM_EXP:
    case OP_ARGMAX:
    case OP_ARGMIN:
    case OP_TOPK:
        return gaio__exec_reduce(fn, s, n, &x, dropped(r, n->in[0], &x), &y, n->op == OP_TOPK && sp->out != n->out[0]);
    case OP_TRANSPOSE: {
        if (r->e->v[sp->out].root == r->e->v[n->in[0]].root) return GAIO_OK; /* a view (engine.c transpose_view) */
        int32_t perm[GAIO_TENSOR_MAX_NDIM];
        if (a->nperm > GAIO_TENSOR_MAX_NDIM) return run_transpose_big(fn, r, n, x, y);
        for (int32_t i = 0; i < a->nperm; i++) perm[i] = (int32_t)a->perm[i];
        return gaio_transpose(s, &x, &y, perm);
    }
    case OP_CONCAT: {
        gaio_tensor ts[64];
        const gaio_tensor *ps[64];
        /* sp->res: an earlier Concat's output standing for the first sp->w inputs (plan.c
         * concat_prefix) */
        int32_t from = sp->res >= 0 ? sp->w : 0, count = 0;
        if (n->nin - from + (sp->res >= 0) > 64)
            return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn, "node '%s' (Concat): over 64 inputs", n->name);
        if (sp->res >= 0) ts[count] = tensor(r, sp->res), ps[count] = &ts[count], count++;
        bool placed = false; /* inputs already written in their slices (engine.c concat_in_place) */
        for (int32_t j = from; j < n->nin; j++) placed = placed || r->e->v[n->in[j]].root == r->e->v[sp->out].root;
        if (placed) { /* copy the others into theirs */
            const xvalue *yx = &r->e->v[sp->out];
            int64_t c0 = 0;
            for (int32_t j = 0; j < n->nin; c0 += r->e->v[n->in[j]].dims[1], j++) {
                const xvalue *u = &r->e->v[n->in[j]];
                if (u->root == yx->root) continue;
                xvalue slice = *u; /* u's shape at its channels of y's memory */
                slice.root = yx->root, slice.nhwc = true, slice.vndim = 0;
                slice.cpitch = (int32_t)yx->dims[1], slice.voff = c0;
                gaio_tensor src = tensor(r, n->in[j]), dst = xtensor(r, &slice);
                gaio_status st = gaio_cast(s, &src, &dst);
                if (st != GAIO_OK) return st;
            }
            return GAIO_OK;
        }
        for (int32_t j = from; j < n->nin; j++) ts[count] = tensor(r, n->in[j]), ps[count] = &ts[count], count++;
        return gaio_concat(s, ps, count, (int32_t)a->axis, &y);
    }
    case OP_SLICE: { /* the input's strided view, copied out */
        if (r->e->v[sp->out].root == r->e->v[n->in[0]].root) return GAIO_OK; /* all of it: a view (engine.c noop_step) */
        gaio_tensor v;
        gaio_status st = gaio_tensor_check(&x, &v, NULL);
        if (st != GAIO_OK) return st;
        int32_t skip = dropped(r, n->in[0], &v);
        size_t es = gaio_dtype_size(v.dtype);
        for (int32_t d = 0; d < v.ndim; d++) {
            int32_t m = d + skip;
            v.offset += (size_t)(a->slice_start[m] * v.strides[d]) * es;
            v.strides[d] *= a->slice_step[m]; /* a negative step: a reversed view */
            v.shape[d] = y.shape[d];
        }
        return gaio_cast(s, &v, &y); /* a copy, of integers too */
    }
    case OP_EXPAND: { /* the input's broadcast view (stride 0 where it has 1), copied out */
        gaio_tensor v;
        gaio_status st = gaio_tensor_check(&x, &v, NULL);
        if (st != GAIO_OK) return st;
        gaio_tensor b = y; /* y's rank and shape; x's strides aligned to its last dimensions */
        b.buffer = v.buffer, b.offset = v.offset, b.dtype = v.dtype, b.layout = GAIO_TENSOR_ROW_MAJOR;
        bool any = false;
        for (int32_t d = 0; d < b.ndim; d++) {
            int32_t k = d - (b.ndim - v.ndim);
            b.strides[d] = k >= 0 && v.shape[k] == b.shape[d] ? v.strides[k] : 0;
            any = any || b.strides[d] != 0;
        }
        gaio_tensor yy = y;
        if (!any) { /* one element everywhere: all-zero strides would read as "packed", so a
                     * leading dimension of 1 with a stride of its own */
            if (b.ndim == GAIO_TENSOR_MAX_NDIM)
                return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn, "node '%s' (Expand): one element to a %d-D output",
                                  n->name, (int)b.ndim);
            for (int32_t d = b.ndim; d > 0; d--)
                b.shape[d] = yy.shape[d] = b.shape[d - 1], b.strides[d] = 0, yy.strides[d] = yy.strides[d - 1];
            b.shape[0] = yy.shape[0] = 1, b.strides[0] = 1, yy.strides[0] = 0;
            b.ndim++, yy.ndim++;
        }
        gaio_unary_params p = {GAIO_UNARY_IDENTITY, 0.0f, 0.0f};
        return gaio_unary(s, &b, &yy, &p);
    }
    case OP_TILE: { /* one copy of the input per tile, into its place in the output */
        gaio_tensor w;
        gaio_status st = gaio_tensor_check(&y, &w, NULL);
        if (st != GAIO_OK) return st;
        int32_t skip = dropped(r, sp->out, &w);
        int64_t reps[GAIO_TENSOR_MAX_NDIM], tiles = 1;
        for (int32_t d = 0; d < w.ndim; d++) reps[d] = a->slice_step[d + skip], tiles *= reps[d];
        gaio_unary_params p = {GAIO_UNARY_IDENTITY, 0.0f, 0.0f};
        size_t es = gaio_dtype_size(w.dtype);
        for (int64_t t = 0; t < tiles && st == GAIO_OK; t++) {
            gaio_tensor dst = w;
            int64_t rest = t;
            for (int32_t d = w.ndim - 1; d >= 0; d--) {
                int64_t k = rest % reps[d];
                rest /= reps[d];
                dst.shape[d] = x.shape[d];
                dst.offset += (size_t)(k * x.shape[d] * w.strides[d]) * es;
            }
            st = gaio_unary(s, &x, &dst, &p);
        }
        return st;
    }
    case OP_RESIZE:
    case OP_UPSAMPLE: { /* nearest by whole factors: y as [.., H, fh, W, fw] from x at stride 0 on fh, fw */
        if (a->rs_general) return gaio__exec_resize2d(s, n, &x, &y);
        gaio_tensor v, w;
        gaio_status st = gaio_tensor_check(&x, &v, NULL);
        if (st == GAIO_OK) st = gaio_tensor_check(&y, &w, NULL);
        if (st != GAIO_OK) return st;
        if (v.ndim != 4) return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn, "node '%s' (%s): not 4-D", n->name, n->op_type);
        int64_t fh = a->rs_factor[0], fw = a->rs_factor[1];
        /* Batch and channels as one dimension where both tensors allow it, else one copy
         * per image. */
        bool merge = v.strides[0] == v.shape[1] * v.strides[1] && w.strides[0] == w.shape[1] * w.strides[1];
        int64_t images = merge ? 1 : v.shape[0];
        gaio_unary_params p = {GAIO_UNARY_IDENTITY, 0.0f, 0.0f};
        size_t es = gaio_dtype_size(v.dtype);
        for (int64_t i = 0; i < images && st == GAIO_OK; i++) {
            gaio_tensor src = v, dst = w;
            src.ndim = dst.ndim = 5, src.layout = dst.layout = GAIO_TENSOR_ROW_MAJOR;
            int64_t shape[5] = {merge ? v.shape[0] * v.shape[1] : v.shape[1], v.shape[2], fh, v.shape[3], fw};
            int64_t ss[5] = {v.strides[1], v.strides[2], 0, v.strides[3], 0};
            int64_t ds[5] = {w.strides[1], w.strides[2] * fh, w.strides[2], w.strides[3] * fw, w.strides[3]};
            for (int32_t d = 0; d < 5; d++) {
                src.shape[d] = dst.shape[d] = shape[d];
                src.strides[d] = shape[d] == 1 ? 1 : ss[d], dst.strides[d] = shape[d] == 1 ? 1 : ds[d];
            }
            src.offset += (size_t)(i * v.strides[0]) * es, dst.offset += (size_t)(i * w.strides[0]) * es;
            st = gaio_unary(s, &src, &dst, &p);
        }
        return st;
    }
    case OP_SPLIT: { /* this step's part: the input's strided view along axis, copied out */
        int64_t at = 0;
        for (int32_t k = 0; k < n->nout && n->out[k] != sp->out; k++) at += a->split_sizes[k];
        gaio_tensor v;
        gaio_status st = gaio_tensor_check(&x, &v, NULL);
        if (st != GAIO_OK) return st;
        int32_t ax = (int32_t)a->axis - dropped(r, n->in[0], &v);
        if (ax < 0 || ax >= v.ndim) return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn, "node '%s' (Split): axis out of view", n->name);
        v.offset += (size_t)(at * v.strides[ax]) * gaio_dtype_size(v.dtype);
        for (int32_t d = 0; d < v.ndim; d++) v.shape[d] = y.shape[d];
        return gaio_cast(s, &v, &y); /* a copy: the layout kernel's where it moves rows */
    }
    case OP_PAD: {
        if (r->e->v[sp->out].root == r->e->v[n->in[0]].root) return GAIO_OK; /* pads nothing: a view (engine.c noop_step) */
        gaio_pad_params p;
        memset(&p, 0, sizeof p);
        int32_t skip = dropped(r, sp->out, &y);
        for (int32_t d = 0; d < y.ndim; d++) p.begin[d] = a->pad_begin[d + skip];
        p.mode = (gaio_pad_mode)a->pad_mode, p.value = a->pad_value;
        return gaio_pad(s, &x, &y, &p);
    }
    case OP_GATHER:
    case OP_GATHER_ELEMENTS: {
        bool done = false;
        gaio_status st = n->op == OP_GATHER ? run_gather_one(r, n, &x, &y, &done) : GAIO_OK;
        if (st != GAIO_OK || done) return st;
        gaio_tensor ind = tensor(r, n->in[1]);
        if (n->op == OP_GATHER) return gaio_gather(s, &x, &ind, &y, (int32_t)a->axis);
        return gaio_gather_elements(s, &x, &ind, &y, (int32_t)a->axis);
    }
    case OP_WHERE: { /* x is the condition */
        gaio_tensor ta = tensor(r, n->in[1]), tb = tensor(r, n->in[2]);
        return gaio_where(s, &x, &ta, &tb, &y);
    }
    case OP_SOFTMAX:
    case OP_LOG_SOFTMAX:
        return gaio__exec_softmax(fn, s, n, &x, dropped(r, n->in[0], &x), &y);
    case OP_CAST:
        return gaio_cast(s, &x, &y);
    case OP_LAYER_NORM:
    case OP_GROUP_NORM:
    case OP_INSTANCE_NORM: { /* this step's output of the node's (plan.c: one step each) */
        int32_t k = 0;
        while (k < n->nout - 1 && n->out[k] != sp->out) k++;
        gaio_tensor sc, b;
        bool has_b = n->nin > 2 && n->in[2] >= 0;
        sc = tensor(r, n->in[1]);
        if (has_b) b = tensor(r, n->in[2]);
        return gaio__exec_norm(s, n, k, &x, &sc, has_b ? &b : NULL, &y);
    }
    default:
        return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn, "node '%s' (%s) has no executor", n->name, n->op_type);
    }
}

/* A graph input in, or output out: floats by gaio_cast (another precision or layout),
 * integers as they are (both sides row major: engines keep them so). */
static gaio_status copy_value(gaio_stream *s, const gaio_tensor *from, const gaio_tensor *to) {
    if (from->dtype == GAIO_DTYPE_F32 || from->dtype == GAIO_DTYPE_F16) return gaio_cast(s, from, to);
    gaio_tensor r;
    size_t bytes = 0;
    gaio_status st = gaio_tensor_check(from, &r, &bytes);
    if (st == GAIO_OK) st = gaio_memcpy_async(s, to->buffer, to->offset, from->buffer, from->offset, bytes);
    return st;
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

gaio_status gaio_model_run(gaio_model_exec *x, gaio_stream *stream, const gaio_tensor *inputs, int32_t ninputs,
                           const gaio_tensor *outputs, int32_t noutputs, gaio_future **done) {
    const char *fn = __func__;
    if (done) *done = NULL;
    GAIO_REQUIRE_PTR(x);
    GAIO_REQUIRE_PTR(stream);
    if (x->bound) x = x->bound; /* gaio_model_exec_set_shapes: the engine of those shapes */
    const gaio_engine *e = x->engine;
    const mgraph *g = &e->model->g;
    if (ninputs != g->ninputs || noutputs != g->noutputs)
        return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "%d inputs and %d outputs given: the model has %d and %d",
                          (int)ninputs, (int)noutputs, (int)g->ninputs, (int)g->noutputs);
    if (!inputs || !outputs) return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "inputs or outputs is NULL");
    gaio_context *sctx = NULL;
    gaio_status st = gaio_stream_context(stream, &sctx);
    if (st != GAIO_OK) return st;
    if (sctx != e->ctx) return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "stream is not of the engine's context");
    for (int32_t i = 0; i < ninputs; i++)
        if ((st = check_io(fn, "inputs", i, &inputs[i], &e->v[g->inputs[i]],
                           gaio__engine_dtype_of(g->values[g->inputs[i]].elem), stream)) != GAIO_OK)
            return st;
    for (int32_t i = 0; i < noutputs; i++)
        if ((st = check_io(fn, "outputs", i, &outputs[i], &e->v[g->outputs[i]],
                           gaio__engine_dtype_of(g->values[g->outputs[i]].elem), stream)) != GAIO_OK)
            return st;
    run_state r = {e, x->arena, 0, stream, inputs, x->scratch};
    pthread_mutex_lock(&x->lock);
    /* The previous run, on another stream, may still use the intermediates. */
    if (x->last_stream && x->last_stream != stream) st = gaio_stream_wait_event(stream, x->last);
    /* Inputs kept in another precision or layout: copied in first. */
    for (int32_t i = 0; i < ninputs && st == GAIO_OK; i++) {
        if (!e->v[g->inputs[i]].staged) continue;
        gaio_tensor to = tensor(&r, g->inputs[i]);
        /* Padded channels must read as zeros; the arena's bytes are shared by lifetime. */
        if (e->v[g->inputs[i]].cpitch > 0)
            st = gaio_memset_async(stream, to.buffer, to.offset, 0, gaio__xvalue_bytes(&e->v[g->inputs[i]]));
        if (st == GAIO_OK) st = copy_value(stream, &inputs[i], &to);
    }
    if (st == GAIO_OK && x->graph) {
        gaio_buffer *held[2] = {e->weights, x->arena};
        st = gaio__devgraph_launch(fn, stream, x->graph, held, 2);
    } else if (st == GAIO_OK) {
        st = run_steps(fn, &r);
    }
    for (int32_t i = 0; i < noutputs && st == GAIO_OK; i++) {
        gaio_tensor from = tensor(&r, g->outputs[i]);
        st = copy_value(stream, &from, &outputs[i]);
    }
    if (st == GAIO_OK) st = gaio_event_record(x->last, stream);
    if (st == GAIO_OK) x->last_stream = stream;
    pthread_mutex_unlock(&x->lock);
    if (st == GAIO_OK && done) st = gaio_future_fence(stream, done);
    return st;
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
static gaio_status capture(const char *fn, gaio_model_exec *x) {
    const gaio_engine *e = x->engine;
    gaio_status st = gaio_stream_create(e->ctx, 0, 0, &x->capture);
    if (st != GAIO_OK) return st;
    run_state r = {e, x->arena, 0, x->capture, NULL, x->scratch};
    st = run_steps(fn, &r);
    if (st == GAIO_OK) st = gaio_stream_synchronize(x->capture);
    if (st != GAIO_OK) return st;
    /* Twice: another library's device-wide synchronization (foreign code may make one)
     * ends a capture in failure through no fault of the steps. */
    for (int attempt = 0; attempt < 2 && !x->graph; attempt++) {
        st = gaio__devgraph_capture_begin(fn, x->capture);
        if (st != GAIO_OK) break;
        gaio_status ran = run_steps(fn, &r);
        char why[GAIO_MSG_MAX];
        snprintf(why, sizeof why, "%s", gaio_last_error());
        st = gaio__devgraph_capture_end(fn, x->capture, &x->graph);
        if (ran != GAIO_OK) {
            gaio__devgraph_free(x->graph);
            x->graph = NULL;
            st = gaio__fail(ran, fn, "%s", why);
        }
    }
    if (st != GAIO_OK && getenv("GAIO_MODEL_TRACE"))
        fprintf(stderr, "gaio: plan: no CUDA graph, the steps run one by one: %s\n", gaio_last_error());
    return GAIO_OK;
}
