/* gaio_conv_transpose2d: checks, then one native op on the stream: on a GPU cuDNN's
 * backward-data convolution over the parts of x and y that meet (conv_transpose_math.h),
 * with a fill before it where y has rows or columns no tap reaches and the bias as
 * gaio_binary after it, or gaio's own kernel where that cannot be
 * (conv_transpose_kernel.h); on the host one job (dnn/cpu/conv_transpose_cpu.c) that
 * writes every element of y, bias included. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/builtin_kernels.h"
#include "core/fail.h"
#include "core/native.h"
#include "core/object.h"
#include "dnn/conv_transpose_kernel.h"
#include "dnn/conv_transpose_math.h"
#include "dnn/dnn_internal.h"
#include "gaio/buffer.h"
#include "gaio/memory.h"

static const char *const WHAT = "transposed convolutions";

/* How many of cuDNN's candidates gaio_conv_transpose2d_prepare times (as conv.c). */
#define TUNE_CANDIDATES 24

typedef struct convt_checked {
    gaio__convt_args a; /* pad[0..1]: top, left; bottom and right below */
    int32_t pad_end[2];
    gaio__ktensor_view x, w, y, bias;
    bool has_bias;
} convt_checked;

static gaio_status convt_check(const char *fn, gaio_stream *stream, const gaio_tensor *x, const gaio_tensor *w,
                               const gaio_tensor *bias, const gaio_tensor *y, const gaio_conv_transpose2d_params *p,
                               convt_checked *c) {
    if (!stream) return BAD("stream is NULL");
    if (!p) return BAD("params is NULL");
    memset(c, 0, sizeof *c);
    gaio__ktensor_view v[3];
    gaio_status st = gaio__conv_views(fn, WHAT, "a 2-D transposed convolution", stream, x, w, y, v);
    if (st != GAIO_OK) return st;
    c->x = v[0], c->w = v[1], c->y = v[2];
    gaio_dtype dt = c->x.t.dtype;
    for (int i = 0; i < 2; i++) {
        if (p->stride[i] < 0) return BAD("params->stride[%d] is %d: strides are >= 1 (0 means 1)", i, (int)p->stride[i]);
        if (p->dilation[i] < 0)
            return BAD("params->dilation[%d] is %d: dilations are >= 1 (0 means 1)", i, (int)p->dilation[i]);
        if (p->output_padding[i] < 0)
            return BAD("params->output_padding[%d] is %d: output padding is >= 0", i, (int)p->output_padding[i]);
    }
    if (p->groups < 0) return BAD("params->groups is %d: groups are >= 1 (0 means 1)", (int)p->groups);
    gaio__convt_args *a = &c->a;
    a->dtype = dt;
    a->groups = p->groups ? p->groups : 1;
    for (int i = 0; i < 2; i++) {
        a->stride[i] = p->stride[i] ? p->stride[i] : 1;
        a->dilation[i] = p->dilation[i] ? p->dilation[i] : 1;
        a->pad[i] = p->pad[i];
        c->pad_end[i] = p->pad[i + 2];
    }
    a->n = c->x.t.shape[0], a->c = c->x.t.shape[1], a->h = c->x.t.shape[2], a->w = c->x.t.shape[3];
    a->r = c->w.t.shape[2], a->s = c->w.t.shape[3];
    if (c->w.t.shape[0] != a->c)
        return BAD("w is [%lld, %lld, %lld, %lld] but x has %lld channels: w's dimension 0 must be C (w is [C, K / "
                   "groups, R, S])",
                   (long long)c->w.t.shape[0], (long long)c->w.t.shape[1], (long long)a->r, (long long)a->s,
                   (long long)a->c);
    if (a->c % a->groups)
        return BAD("x has C = %lld channels: a multiple of groups = %d is needed", (long long)a->c, (int)a->groups);
    if (c->w.t.shape[1] > INT64_MAX / 2 / a->groups)
        return BAD("w's dimension 1 (%lld) times groups is out of range", (long long)c->w.t.shape[1]);
    a->k = c->w.t.shape[1] * a->groups;
    /* Shapes are bounded by the buffers that hold them, pads and strides by int32_t:
     * these products and sums stay far inside int64_t. */
    int64_t want[4] = {a->n, a->k, 0, 0};
    for (int i = 0; i < 2; i++) {
        int64_t in = c->x.t.shape[2 + i], k = c->w.t.shape[2 + i];
        int64_t full = (in - 1) * a->stride[i] + (k - 1) * a->dilation[i] + 1;
        want[2 + i] = full - p->pad[i] - p->pad[i + 2] + p->output_padding[i];
        if (want[2 + i] < 1)
            return BAD("the output's %s would be %lld: the %s padding (%d, %d) crops all of the %lld %s of the "
                       "uncropped output",
                       i ? "width" : "height", (long long)want[2 + i], i ? "left / right" : "top / bottom",
                       (int)p->pad[i], (int)p->pad[i + 2], (long long)full, i ? "columns" : "rows");
    }
    a->p = want[2], a->q = want[3];
    for (int i = 0; i < 4; i++)
        if (c->y.t.shape[i] != want[i]) {
            char got[128], exp[128];
            gaio__shape_text(4, c->y.t.shape, got, sizeof got);
            gaio__shape_text(4, want, exp, sizeof exp);
            return BAD("y is %s but the transposed convolution gives %s", got, exp);
        }
    if (!gaio__ktensor_distinct(&c->y.k)) return BAD("y's strides make elements share memory");
    if (gaio__ktensor_view_overlap(&c->y, &c->x) || gaio__ktensor_view_overlap(&c->y, &c->w))
        return BAD("y overlaps x or w");
    if (bias) {
        if ((st = gaio__ktensor_view_resolve(fn, "bias", WHAT, bias, stream, &c->bias)) != GAIO_OK) return st;
        if (c->bias.t.ndim != 1 || c->bias.t.shape[0] != a->k || (a->k > 1 && c->bias.t.strides[0] != 1))
            return BAD("bias must be a packed 1-D tensor of K = %lld values", (long long)a->k);
        if (c->bias.t.dtype != dt)
            return BAD("bias is %s but y is %s: they must match", gaio_dtype_name(c->bias.t.dtype), gaio_dtype_name(dt));
        if (gaio__ktensor_view_overlap(&c->y, &c->bias)) return BAD("y overlaps bias");
        c->has_bias = true;
    }
    a->x = (const void *)(uintptr_t)c->x.k.ptr;
    a->wt = (const void *)(uintptr_t)c->w.k.ptr;
    a->y = (void *)(uintptr_t)c->y.k.ptr;
    a->bias = c->has_bias ? (const void *)(uintptr_t)c->bias.k.ptr : NULL;
    for (int i = 0; i < 4; i++) a->xs[i] = c->x.t.strides[i], a->ws[i] = c->w.t.strides[i], a->ys[i] = c->y.t.strides[i];
    return GAIO_OK;
}

/* ---- the host: one job ---- */

typedef struct host_job {
    gaio__convt_args a;
} host_job;

static gaio_status run_host(void *native_stream, gaio_status stream_status, void *user) {
    (void)native_stream;
    host_job *job = user;
    gaio_status st = stream_status == GAIO_OK ? gaio__convt_cpu(&job->a) : stream_status;
    free(job);
    return st;
}

static gaio_status by_kernel(const char *fn, gaio_stream *stream, const convt_checked *c, gaio_conv2d_info *info,
                             bool submit, gaio__conv_plan **keep, const char *why);
static bool kernel_forced(void);

static gaio_status host(const char *fn, gaio_stream *stream, const convt_checked *c, gaio_conv2d_info *info,
                        bool submit) {
    if (kernel_forced()) return by_kernel(fn, stream, c, info, submit, NULL, "GAIO_DNN_CONVT=gaio");
    if (!submit) {
        if (info) {
            memset(info, 0, sizeof *info);
            info->fused = 1;
            gaio__convt_cpu_prepare(&c->a, info->engine, sizeof info->engine);
        }
        return GAIO_OK;
    }
    host_job *job = calloc(1, sizeof *job);
    if (!job) return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory for the op");
    job->a = c->a;
    gaio_buffer *held[4] = {c->x.t.buffer, c->w.t.buffer, c->y.t.buffer, c->has_bias ? c->bias.t.buffer : NULL};
    gaio_status st = gaio__enqueue_native_held(fn, stream, run_host, job, held, 4);
    if (st != GAIO_OK) free(job); /* not enqueued: never runs */
    return st;
}

/* ---- a GPU: cuDNN's backward data over the part of y the taps reach ---- */

typedef struct cuda_job {
    gaio__conv_args a;
    gaio__conv_plan *plan; /* a reference, dropped when the job ends */
    gaio_stream *stream;
} cuda_job;

static gaio_status run_cuda(void *native_stream, gaio_status stream_status, void *user) {
    cuda_job *job = user;
    gaio_status st = stream_status;
    if (st == GAIO_OK) st = gaio__conv_cuda_run(native_stream, job->plan, &job->a, job->stream);
    gaio__conv_plan_release(job->plan);
    free(job);
    return st;
}

/* The forward convolution whose backward data gives y's rows and columns of the axes
 * (ax), in gaio__conv_args' terms: its x is that part of y (written), its y the part
 * of x (read), its filter w. */
static void backward_args(const convt_checked *c, const gaio__convt_axis ax[2], gaio__conv_args *f) {
    const gaio__convt_args *a = &c->a;
    size_t es = a->dtype == GAIO_DTYPE_F16 ? 2 : 4;
    memset(f, 0, sizeof *f);
    f->dtype = a->dtype;
    f->transposed = true;
    f->groups = a->groups;
    f->n = a->n, f->c = a->k, f->h = ax[0].ny, f->w = ax[1].ny;
    f->k = a->c, f->r = a->r, f->s = a->s, f->p = ax[0].nx, f->q = ax[1].nx;
    for (int i = 0; i < 2; i++) {
        f->stride[i] = a->stride[i], f->dilation[i] = a->dilation[i];
        f->pad[i] = (int32_t)ax[i].pre, f->pad[i + 2] = (int32_t)ax[i].post;
    }
    memcpy(f->xs, a->ys, sizeof f->xs);
    memcpy(f->ws, a->ws, sizeof f->ws);
    memcpy(f->ys, a->xs, sizeof f->ys);
    f->x = (char *)a->y + (size_t)(ax[0].y0 * a->ys[2] + ax[1].y0 * a->ys[3]) * es;
    f->wt = a->wt;
    f->y = (char *)a->x + (size_t)(ax[0].x0 * a->xs[2] + ax[1].x0 * a->xs[3]) * es;
}

/* gaio's own kernel over all of y, bias included (conv_transpose_kernel.h). */
static gaio_status kernel_launch(const char *fn, gaio_stream *stream, const convt_checked *c) {
    enum { BLOCK = 256, MAX_BLOCKS = GAIO_DNN_MAX_BLOCKS };
    const gaio__convt_args *a = &c->a;
    gaio_kconvt p;
    memset(&p, 0, sizeof p);
    p.sh = a->stride[0], p.sw = a->stride[1], p.dh = a->dilation[0], p.dw = a->dilation[1];
    p.pt = a->pad[0], p.pl = a->pad[1], p.groups = a->groups, p.has_bias = c->has_bias;
    gaio_ktensor none;
    memset(&none, 0, sizeof none);
    gaio_arg args[5] = {GAIO_ARG(c->x.k), GAIO_ARG(c->w.k), GAIO_ARG(none), GAIO_ARG(c->y.k), GAIO_ARG(p)};
    gaio_buffer *held[4] = {c->x.t.buffer, c->w.t.buffer, c->y.t.buffer};
    size_t nheld = 3;
    if (c->has_bias) args[2] = GAIO_ARG(c->bias.k), held[nheld++] = c->bias.t.buffer;
    const int64_t outputs = a->n * a->k * a->p * a->q, blocks = (outputs + BLOCK - 1) / BLOCK;
    gaio_dim3 grid = {(uint32_t)(blocks < MAX_BLOCKS ? blocks : MAX_BLOCKS), 1, 1}, block = {BLOCK, 1, 1};
    gaio_kernel *k;
    gaio_status st = gaio__kernel_builtin("gaio_dnn_conv_transpose", &k);
    if (st != GAIO_OK) return gaio__fail(st, fn, "%s", gaio_last_error());
    st = gaio__launch_held(fn, stream, k, grid, block, 0, args, 5, held, nheld);
    gaio__kernel_unref(k);
    return st;
}

/* Problems cuDNN had no engine for, so that later calls go to gaio's kernel at once
 * instead of asking cuDNN's heuristics again: the backward data's arguments with
 * their addresses reduced to alignments (what a plan depends on), by context. */
#define REFUSALS 32
typedef struct refusal {
    const gaio_context *ctx;
    gaio__conv_args a;
} refusal;
static pthread_mutex_t refusals_lock = PTHREAD_MUTEX_INITIALIZER;
static refusal refusals[REFUSALS];
static unsigned nrefusals;

static uintptr_t align_of(const void *p) { return (uintptr_t)p & 15u; }

static void refusal_key(const gaio_context *ctx, const gaio__conv_args *f, refusal *r) {
    memset(r, 0, sizeof *r);
    r->ctx = ctx;
    r->a.dtype = f->dtype, r->a.transposed = true, r->a.groups = f->groups;
    r->a.n = f->n, r->a.c = f->c, r->a.h = f->h, r->a.w = f->w, r->a.k = f->k, r->a.r = f->r, r->a.s = f->s;
    r->a.p = f->p, r->a.q = f->q;
    memcpy(r->a.stride, f->stride, sizeof f->stride), memcpy(r->a.pad, f->pad, sizeof f->pad);
    memcpy(r->a.dilation, f->dilation, sizeof f->dilation);
    memcpy(r->a.xs, f->xs, sizeof f->xs), memcpy(r->a.ws, f->ws, sizeof f->ws), memcpy(r->a.ys, f->ys, sizeof f->ys);
    r->a.x = (const void *)align_of(f->x), r->a.wt = (const void *)align_of(f->wt), r->a.y = (void *)align_of(f->y);
}

static bool refused_before(const refusal *key) {
    pthread_mutex_lock(&refusals_lock);
    bool found = false;
    for (unsigned i = 0; i < REFUSALS && i < nrefusals && !found; i++) found = !memcmp(&refusals[i], key, sizeof *key);
    pthread_mutex_unlock(&refusals_lock);
    return found;
}

static void remember_refusal(const refusal *key) {
    pthread_mutex_lock(&refusals_lock);
    refusals[nrefusals++ % REFUSALS] = *key;
    pthread_mutex_unlock(&refusals_lock);
}

static bool kernel_forced(void) {
    const char *e = getenv("GAIO_DNN_CONVT");
    return e && strcmp(e, "gaio") == 0;
}

/* gaio's kernel instead of cuDNN, for why. */
static gaio_status by_kernel(const char *fn, gaio_stream *stream, const convt_checked *c, gaio_conv2d_info *info,
                             bool submit, gaio__conv_plan **keep, const char *why) {
    if (keep) *keep = NULL;
    if (info) {
        memset(info, 0, sizeof *info);
        info->fused = 1;
        snprintf(info->engine, sizeof info->engine, "gaio direct kernel (%s)", why);
    }
    return submit ? kernel_launch(fn, stream, c) : GAIO_OK;
}

static gaio_status cuda(const char *fn, gaio_stream *stream, const gaio_tensor *y, const convt_checked *c,
                        gaio_conv2d_info *info, bool submit, int tune, gaio__conv_plan **keep) {
    const gaio__convt_args *a = &c->a;
    if (kernel_forced()) return by_kernel(fn, stream, c, info, submit, keep, "GAIO_DNN_CONVT=gaio");
    gaio__convt_axis ax[2];
    for (int i = 0; i < 2; i++)
        ax[i] = gaio__convt_axis_make(i ? a->w : a->h, i ? a->q : a->p, i ? a->s : a->r, a->stride[i], a->dilation[i],
                                      a->pad[i]);
    bool reached = ax[0].ny > 0 && ax[1].ny > 0;
    bool whole = reached && ax[0].ny == a->p && ax[1].ny == a->q;
    size_t es = a->dtype == GAIO_DTYPE_F16 ? 2 : 4, bytes = (size_t)(a->n * a->k * a->p * a->q) * es;
    /* The fill covers y's span, which is y alone only where y has no gaps. */
    if (!whole && c->y.hi - c->y.lo != bytes)
        return by_kernel(fn, stream, c, info, submit, keep, "y has gaps and rows no tap reaches");
    for (int i = 0; i < 2; i++)
        if (ax[i].pre > INT32_MAX || ax[i].post > INT32_MAX)
            return by_kernel(fn, stream, c, info, submit, keep, "paddings past 2^31");
    gaio__conv_args f;
    gaio__conv_plan *plan = NULL;
    gaio_status st;
    if (reached) {
        backward_args(c, ax, &f);
        refusal key;
        refusal_key(stream->ctx, &f, &key);
        if (refused_before(&key)) return by_kernel(fn, stream, c, info, submit, keep, "cuDNN has no engine");
        st = gaio__conv_cuda_plan(fn, stream, &f, submit ? 1 : tune, &plan, info);
        if (st == GAIO_ERR_NOT_SUPPORTED) {
            if (getenv("GAIO_DNN_TRACE")) fprintf(stderr, "gaio: %s: gaio's kernel runs it: %s\n", fn, gaio_last_error());
            remember_refusal(&key);
            return by_kernel(fn, stream, c, info, submit, keep, "cuDNN has no engine");
        }
        if (st != GAIO_OK) return st;
    } else if (info) {
        memset(info, 0, sizeof *info);
        snprintf(info->engine, sizeof info->engine, "a fill (no tap reaches y)");
    }
    if (info) info->fused = !c->has_bias;
    if (!submit) {
        if (keep) *keep = plan;
        else gaio__conv_plan_release(plan);
        return GAIO_OK;
    }
    if (!whole && (st = gaio_memset_async(stream, c->y.t.buffer, c->y.t.offset, 0, bytes)) != GAIO_OK) {
        gaio__conv_plan_release(plan);
        return gaio__fail(st, fn, "zeroing y: %s", gaio_last_error());
    }
    if (reached) {
        cuda_job *job = calloc(1, sizeof *job);
        if (!job) {
            gaio__conv_plan_release(plan);
            return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory for the op");
        }
        job->a = f, job->plan = plan, job->stream = stream;
        gaio_buffer *held[3] = {c->x.t.buffer, c->w.t.buffer, c->y.t.buffer};
        if ((st = gaio__enqueue_native_held(fn, stream, run_cuda, job, held, 3)) != GAIO_OK) {
            gaio__conv_plan_release(plan);
            free(job);
            return st;
        }
    }
    if (c->has_bias) { /* seen as [1, K, 1, 1] */
        gaio_tensor b = c->bias.t;
        b.ndim = 4;
        b.shape[0] = 1, b.shape[1] = a->k, b.shape[2] = 1, b.shape[3] = 1;
        b.strides[0] = a->k, b.strides[1] = 1, b.strides[2] = 1, b.strides[3] = 1;
        b.layout = GAIO_TENSOR_ROW_MAJOR;
        if ((st = gaio_binary(stream, GAIO_BINARY_ADD, y, &b, y, NULL)) != GAIO_OK)
            return gaio__fail(st, fn, "adding the bias: %s", gaio_last_error());
    }
    return GAIO_OK;
}

static gaio_status convt(const char *fn, gaio_stream *stream, const gaio_tensor *x, const gaio_tensor *w,
                         const gaio_tensor *bias, const gaio_tensor *y, const gaio_conv_transpose2d_params *params,
                         gaio_conv2d_info *info, bool submit, int tune, gaio__conv_plan **keep) {
    convt_checked c;
    gaio_status st = convt_check(fn, stream, x, w, bias, y, params, &c);
    if (st != GAIO_OK) return st;
    if (stream->ctx->be->kind == GAIO_DEVICE_CUDA) return cuda(fn, stream, y, &c, info, submit, tune, keep);
    return host(fn, stream, &c, info, submit);
}

gaio_status gaio_conv_transpose2d(gaio_stream *stream, const gaio_tensor *x, const gaio_tensor *w,
                                  const gaio_tensor *bias, const gaio_tensor *y,
                                  const gaio_conv_transpose2d_params *params) {
    return convt(__func__, stream, x, w, bias, y, params, NULL, true, 1, NULL);
}

gaio_status gaio_conv_transpose2d_prepare(gaio_stream *stream, const gaio_tensor *x, const gaio_tensor *w,
                                          const gaio_tensor *bias, const gaio_tensor *y,
                                          const gaio_conv_transpose2d_params *params, gaio_conv2d_info *info) {
    if (info) memset(info, 0, sizeof *info);
    return convt(__func__, stream, x, w, bias, y, params, info, false, TUNE_CANDIDATES, NULL);
}

gaio_status gaio__conv_transpose2d_prepare_keep(gaio_stream *stream, const gaio_tensor *x, const gaio_tensor *w,
                                                const gaio_tensor *bias, const gaio_tensor *y,
                                                const gaio_conv_transpose2d_params *params, gaio_conv2d_info *info,
                                                bool tune, gaio__conv_plan **keep) {
    *keep = NULL;
    if (info) memset(info, 0, sizeof *info);
    return convt("gaio_conv_transpose2d_prepare", stream, x, w, bias, y, params, info, false,
                 tune ? TUNE_CANDIDATES : 1, keep);
}
