/* gaio_conv2d on each backend against a direct convolution in double precision (seven
 * loops over logical indices, then bias, residual and the activation, all in double):
 * ResNet-like shapes, groups and depthwise, dilation, asymmetric padding, non-square
 * kernels, odd sizes, batches of 1 and 33, every activation, bias and residual (also in
 * place), strided and mixed-layout tensors, f32 and f16; gaio_conv2d_prepare and its
 * plan cache, the plan cache file, bad input.
 *
 * The host runs every case once per path of its convolution, in one process:
 *   oneDNN                         (where libdnnl.so.2 loads)
 *   gaio im2col + OpenBLAS sgemm   (GAIO_DNN_NO_ONEDNN=1; where OpenBLAS loads)
 *   gaio im2col + built-in GEMM    (GAIO_DNN_NO_ONEDNN=1 GAIO_DNN_CONV_NO_BLAS=1)
 * (depthwise cases take gaio's depthwise host kernel on the last two). Both variables
 * are read at every call, so the test sets them between passes. A host without oneDNN
 * runs the other passes only, and must pass them: the host never refuses a case.
 *
 * On a GPU, GAIO_ERR_NOT_SUPPORTED fails the test unless the case is one of cuDNN's
 * possible gaps (k_cudnn_gaps, below) on a GPU and cuDNN where they were not seen to run;
 * those refused are counted and printed by name, and so are those that ran. */
#include <math.h>
#include <stdbool.h>
#include <unistd.h>

#include "common.h"
#include "half.h"

#define MAX_GAPS 32

typedef struct env {
    gaio_context *ctx;
    gaio_stream *s;
    uint64_t rng;
    bool cuda;
    int device;
    /* Host: what gaio_conv2d_prepare's engine says on this pass: it starts with
     * engine_prefix, and names engine_has unless the case is depthwise (NULL: unchecked). */
    const char *engine_prefix, *engine_has;
    /* GPU: whether k_cudnn_gaps may be refused on this GPU and cuDNN (not where every one
     * was seen to run); the f16 runs cuDNN refused (each one of k_cudnn_gaps), and which
     * gaps did run. */
    bool gaps_allowed;
    int refused;
    const char *refused_names[MAX_GAPS], *ran_names[MAX_GAPS];
    int nrefused_names, nran_names;
} env;

static float rnd(uint64_t *r) { return (float)((double)(test_rand(r) >> 11) / 9007199254740992.0 * 2.0 - 1.0); }

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

enum { NCHW = GAIO_TENSOR_ROW_MAJOR, NHWC = GAIO_TENSOR_NHWC };
#define NO_ACT (-1)

typedef struct ccase {
    const char *name;
    int64_t n, c, h, w, k, r, s;
    int32_t stride[2], pad[4], dil[2], groups;
    int xl, wl, yl;  /* layouts of x, w, and y (residual follows y) */
    int xpad, ypad;  /* extra elements per row (W) of x / y: explicit strides */
    bool bias, res, res_in_place;
    int act; /* NO_ACT or a gaio_unary_op */
    float alpha, beta;
    float scale; /* x's values are in [-scale, scale) */
    double rel;  /* f32's tolerance relative to the sum of |terms| (0: 1e-4) */
} ccase;

/* A 4-D host tensor in logical order over a span of `count` elements (strides may leave
 * gaps, which hold random values too so that a write there shows). */
typedef struct htensor {
    int64_t shape[4], st[4];
    size_t count;
    gaio_dtype dt;
    float *v; /* the span's values, quantised to dt */
    gaio_tensor t;
} htensor;

static size_t esize(gaio_dtype dt) { return dt == GAIO_DTYPE_F16 ? 2 : 4; }

static float quant(gaio_dtype dt, float f) { return dt == GAIO_DTYPE_F16 ? from_half(to_half(f)) : f; }

/* Strides of a [d0, d1, d2, d3] tensor packed NCHW (or NHWC: d1 innermost) with
 * rowpad extra elements after each row of d3 (NCHW) or of d3 * d1 (NHWC). */
static void make_strides(const int64_t *sh, int layout, int rowpad, int64_t *st) {
    if (layout == NHWC) {
        st[1] = 1, st[3] = sh[1], st[2] = (sh[3] + rowpad) * sh[1], st[0] = sh[2] * st[2];
    } else {
        st[3] = 1, st[2] = sh[3] + rowpad, st[1] = sh[2] * st[2], st[0] = sh[1] * st[1];
    }
}

static size_t off4(const htensor *h, int64_t a, int64_t b, int64_t c, int64_t d) {
    return (size_t)(a * h->st[0] + b * h->st[1] + c * h->st[2] + d * h->st[3]);
}

/* Random values in [-scale, scale), never all zero, uploaded to a device buffer. */
static void hmake(env *e, htensor *h, gaio_dtype dt, int ndim, const int64_t *shape, int layout, int rowpad,
                  float scale) {
    memset(h, 0, sizeof *h);
    h->dt = dt;
    int64_t sh[4] = {1, 1, 1, 1};
    for (int i = 0; i < ndim; i++) sh[i] = shape[i];
    memcpy(h->shape, sh, sizeof sh);
    if (ndim == 1) {
        h->st[0] = 1;
        h->count = (size_t)sh[0];
    } else {
        make_strides(sh, layout, rowpad, h->st);
        h->count = (size_t)(sh[0] * h->st[0]);
    }
    h->v = malloc(h->count * sizeof(float));
    CHECK(h->v);
    bool nonzero = false;
    for (size_t i = 0; i < h->count; i++) {
        h->v[i] = quant(dt, scale * rnd(&e->rng));
        nonzero |= h->v[i] != 0;
    }
    CHECK(nonzero);
    size_t bytes = h->count * esize(dt);
    gaio_buffer *stage, *dev;
    OK(gaio_buffer_alloc(e->ctx, GAIO_MEM_PINNED, bytes, &stage));
    OK(gaio_buffer_alloc(e->ctx, GAIO_MEM_DEVICE, bytes, &dev));
    void *p;
    OK(gaio_buffer_host_ptr(stage, &p));
    for (size_t i = 0; i < h->count; i++) {
        if (dt == GAIO_DTYPE_F16)
            ((uint16_t *)p)[i] = to_half(h->v[i]);
        else
            ((float *)p)[i] = h->v[i];
    }
    OK(gaio_memcpy_async(e->s, dev, 0, stage, 0, bytes));
    OK(gaio_buffer_release(stage));
    /* Packed tensors go through the layout field; padded rows through explicit strides. */
    h->t = gaio_tensor_make(dev, 0, dt, ndim, shape, ndim == 4 ? (gaio_tensor_layout)layout : GAIO_TENSOR_ROW_MAJOR);
    if (ndim == 4 && rowpad)
        for (int i = 0; i < 4; i++) h->t.strides[i] = h->st[i];
}

static void hdownload(env *e, const htensor *h, float *out) {
    size_t bytes = h->count * esize(h->dt);
    gaio_buffer *stage;
    OK(gaio_buffer_alloc(e->ctx, GAIO_MEM_PINNED, bytes, &stage));
    OK(gaio_memcpy_async(e->s, stage, 0, h->t.buffer, h->t.offset, bytes));
    OK(gaio_stream_synchronize(e->s));
    void *p;
    OK(gaio_buffer_host_ptr(stage, &p));
    for (size_t i = 0; i < h->count; i++)
        out[i] = h->dt == GAIO_DTYPE_F16 ? from_half(((uint16_t *)p)[i]) : ((float *)p)[i];
    OK(gaio_buffer_release(stage));
}

static void hfree(htensor *h) {
    OK(gaio_buffer_release(h->t.buffer));
    free(h->v);
}

static double sigmoid(double x) { return 1 / (1 + exp(-x)); }

static double act_ref(int op, float alpha, float beta, double x) {
    switch (op) {
    case NO_ACT: return x;
    case GAIO_UNARY_RELU: return x > 0 ? x : 0;
    case GAIO_UNARY_CLIP: return fmin(fmax(x, alpha), beta);
    case GAIO_UNARY_SIGMOID: return sigmoid(x);
    case GAIO_UNARY_SILU: return x * sigmoid(x);
    case GAIO_UNARY_GELU: return 0.5 * x * (1 + erf(x / sqrt(2.0)));
    case GAIO_UNARY_GELU_TANH: return 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    case GAIO_UNARY_TANH: return tanh(x);
    case GAIO_UNARY_HARD_SIGMOID: return fmax(0, fmin(1, alpha * x + beta));
    case GAIO_UNARY_HARD_SWISH: return x * fmax(0, fmin(1, x / 6 + 0.5));
    case GAIO_UNARY_ABS: return fabs(x);
    case GAIO_UNARY_NEG: return -x;
    case GAIO_UNARY_ERF: return erf(x);
    case GAIO_UNARY_SOFTPLUS: return log1p(exp(x));
    case GAIO_UNARY_SIN: return sin(x);
    case GAIO_UNARY_COS: return cos(x);
    case GAIO_UNARY_AFFINE: return alpha * x + beta;
    }
    CHECK(!"unknown activation");
    return 0;
}

/* The most an error in the activation's input can grow through it (its slope). */
static double act_slope(int op, float alpha) {
    switch (op) {
    case GAIO_UNARY_SILU: return 1.1;
    case GAIO_UNARY_GELU:
    case GAIO_UNARY_GELU_TANH:
    case GAIO_UNARY_ERF: return 1.13;
    case GAIO_UNARY_HARD_SIGMOID:
    case GAIO_UNARY_AFFINE: return fabs(alpha);
    case GAIO_UNARY_HARD_SWISH: return 1.5;
    default: return 1;
    }
}

static const char *act_name(int op) {
    static const char *const names[] = {"relu",  "clip",       "sigmoid", "silu", "gelu",  "gelu_tanh",
                                        "tanh",  "hard_sigmoid", "hard_swish", "identity", "sqrt", "exp",
                                        "log",   "abs",        "neg",     "reciprocal", "floor", "ceil",
                                        "erf",   "softplus",   "sin",     "cos",  "affine"};
    return op == NO_ACT ? "none" : names[op];
}

/* Half the spacing of f16 values at |v|. */
static double half_ulp_f16(double v) {
    v = fabs(v);
    if (v < 6.103515625e-05) return 0.5 * 5.9604644775390625e-08;
    int e;
    frexp(v, &e); /* v in [2^(e-1), 2^e) */
    return 0.5 * ldexp(1.0, e - 1 - 10);
}

static int32_t or1(int32_t v) { return v == 0 ? 1 : v; }

static bool is_depthwise(const ccase *c) { return or1(c->groups) == c->c && c->c == c->k; }

/* cuDNN's possible gaps: the f16 cases off the tensor-core layout (see must_run) that
 * are not depthwise: channels per group no multiples of 8, or x, w or y not NHWC. For
 * these cuDNN has no tensor-core engine, and gaio refuses its runtime-fusion engines for
 * non-NHWC tensors and the engines that sum in f16 (cudnn_graph.c), so what is left are
 * cuDNN's older kernels, whose reach depends on the GPU and the cuDNN version. These,
 * and only these, may answer GAIO_ERR_NOT_SUPPORTED (printed as skipped, by name), and
 * only on a GPU and cuDNN where they were not all seen to run: on an H200 (sm_90) with
 * cuDNN 9.14 every one ran (and so did every other case), so there, and on sm_90 with a
 * newer cuDNN 9, a refusal of any case fails the test (see gaps_verified). */
static const char *const k_cudnn_gaps[] = {
    "stem 7x7/2 nchw",     /* C = 3, NCHW */
    "stem 7x7/2 nhwc",     /* C = 3 (also with f16_accumulation) */
    "groups 2",            /* 4 -> 3 channels per group */
    "groups 2 nchw",       /* the same, NCHW */
    "dilation 2,1 nchw",   /* C = 4, NCHW */
    "asymmetric pad nchw", /* C = 5, K = 3, NCHW */
    "odd sizes",           /* C = 5, K = 7, NCHW */
    "odd sizes nhwc /2,1", /* C = 5, K = 7 */
    "in place nchw",       /* NCHW */
    "x padded rows nchw",  /* NCHW, x's rows padded */
    "nchw x, nhwc y",      /* x NCHW */
    "nhwc x, nchw w, y",   /* w and y NCHW */
};

static bool known_gap(const ccase *c) {
    for (size_t i = 0; i < sizeof k_cudnn_gaps / sizeof k_cudnn_gaps[0]; i++)
        if (strcmp(k_cudnn_gaps[i], c->name) == 0) return true;
    return false;
}

/* Whether the case must run on this device (GAIO_ERR_NOT_SUPPORTED fails the test), and
 * if so why. The host runs everything (oneDNN or gaio's own convolution); on a GPU, f32
 * (cuDNN's f32 engines take any layout), depthwise (gaio's own kernel, unless
 * GAIO_DNN_DEPTHWISE=cudnn sends it to cuDNN to compare) and f16 with x, w and y NHWC and
 * C and K multiples of 8 (cuDNN's tensor-core engines). */
static const char *must_run(const env *e, const ccase *c, gaio_dtype dt) {
    if (!e->cuda) return "the host runs every case";
    if (dt == GAIO_DTYPE_F32) return "cuDNN has f32 engines for every layout";
    if (is_depthwise(c)) {
        const char *d = getenv("GAIO_DNN_DEPTHWISE");
        if (!(d && strcmp(d, "cudnn") == 0)) return "depthwise runs gaio's own kernel";
        return NULL; /* cuDNN's grouped kernels, to compare: no promise */
    }
    if (c->xl == NHWC && c->wl == NHWC && c->yl == NHWC && c->c % 8 == 0 && c->k % 8 == 0)
        return "f16 NHWC with C and K multiples of 8 runs on cuDNN's tensor cores";
    if (!known_gap(c)) return "it is not in k_cudnn_gaps";
    return e->gaps_allowed ? NULL : "every case of k_cudnn_gaps ran on sm_90 with cuDNN 9.14";
}

/* Whether this GPU and cuDNN are where every case of k_cudnn_gaps was seen to run: sm_90
 * (H100, H200) with cuDNN 9.14 or a later 9.x. cudnn is gaio_dnn_library_status's
 * description ("cuDNN 9.14.0 (libcudnn.so.9)"). */
static bool gaps_verified(const gaio_device_props *props, const char *cudnn) {
    int major = 0, minor = 0;
    if (!cudnn || sscanf(cudnn, "cuDNN %d.%d", &major, &minor) != 2) return false;
    return props->compute_major == 9 && props->compute_minor == 0 && major == 9 && minor >= 14;
}

static void note_name(const char **names, int *count, const char *name) {
    for (int i = 0; i < *count; i++)
        if (strcmp(names[i], name) == 0) return;
    CHECK(*count < MAX_GAPS);
    names[(*count)++] = name;
}

/* st of `call` for case c: true when it is an allowed refusal (printed and counted);
 * GAIO_ERR_NOT_SUPPORTED where the case must run fails the test. */
static bool refused(env *e, const ccase *c, gaio_dtype dt, gaio_status st, const char *call) {
    if (st != GAIO_ERR_NOT_SUPPORTED) return false;
    const char *why = must_run(e, c, dt);
    if (why) {
        fprintf(stderr, "\nconv %s %s: %s answered GAIO_ERR_NOT_SUPPORTED, but this case must run (%s): %s\n",
                c->name, gaio_dtype_name(dt), call, why, gaio_last_error());
        exit(1);
    }
    printf(": SKIPPED, a known cuDNN gap: %s\n", gaio_last_error());
    e->refused++;
    note_name(e->refused_names, &e->nrefused_names, c->name);
    return true;
}

typedef struct run_opts {
    bool prepare;       /* gaio_conv2d_prepare twice first: the second from the cache */
    bool expect_cached; /* the first prepare already finds the plan (a loaded plan cache) */
    bool f16_accumulation; /* params.f16_accumulation: f16 sums allowed (looser f16 tolerance) */
} run_opts;

/* Runs one case; returns false when cuDNN has no engine for an allowed case. */
static bool run_case(env *e, const ccase *c, gaio_dtype dt, const run_opts *o) {
    const int32_t sh = or1(c->stride[0]), sw = or1(c->stride[1]), dh = or1(c->dil[0]), dw = or1(c->dil[1]);
    const int32_t groups = or1(c->groups);
    const int64_t P = (c->h + c->pad[0] + c->pad[2] - dh * (c->r - 1) - 1) / sh + 1;
    const int64_t Q = (c->w + c->pad[1] + c->pad[3] - dw * (c->s - 1) - 1) / sw + 1;
    const int64_t cg = c->c / groups, kg = c->k / groups;
    printf("  %-22s %s x[%lld,%lld,%lld,%lld]%s%s w[%lld,%lld,%lld,%lld]%s y[%lld,%lld,%lld,%lld]%s%s stride %d,%d "
           "pad %d,%d,%d,%d dil %d,%d groups %d bias %d res %d%s act %s",
           c->name, gaio_dtype_name(dt), (long long)c->n, (long long)c->c, (long long)c->h, (long long)c->w,
           c->xl == NHWC ? " nhwc" : " nchw", c->xpad ? " padded-rows" : "", (long long)c->k, (long long)cg,
           (long long)c->r, (long long)c->s, c->wl == NHWC ? " nhwc" : " nchw", (long long)c->n, (long long)c->k,
           (long long)P, (long long)Q, c->yl == NHWC ? " nhwc" : " nchw", c->ypad ? " padded-rows" : "", sh, sw,
           c->pad[0], c->pad[1], c->pad[2], c->pad[3], dh, dw, groups, c->bias, c->res || c->res_in_place,
           c->res_in_place ? " (in place)" : "", act_name(c->act));
    fflush(stdout);
    double t0 = now_ms();
    htensor X, W, Y, B, R;
    hmake(e, &X, dt, 4, (int64_t[]){c->n, c->c, c->h, c->w}, c->xl, c->xpad, c->scale);
    hmake(e, &W, dt, 4, (int64_t[]){c->k, cg, c->r, c->s}, c->wl, 0, 1);
    hmake(e, &Y, dt, 4, (int64_t[]){c->n, c->k, P, Q}, c->yl, c->ypad, 1);
    hmake(e, &B, dt, 1, (int64_t[]){c->k}, NCHW, 0, 1);
    hmake(e, &R, dt, 4, (int64_t[]){c->n, c->k, P, Q}, c->yl, 0, 1);
    /* In place: y holds the residual; its initial values are the residual's. */
    const htensor *res = c->res_in_place ? &Y : c->res ? &R : NULL;
    gaio_unary_params act = {(gaio_unary_op)(c->act < 0 ? 0 : c->act), c->alpha, c->beta};
    gaio_conv2d_params p = {{c->stride[0], c->stride[1]},
                            {c->pad[0], c->pad[1], c->pad[2], c->pad[3]},
                            {c->dil[0], c->dil[1]},
                            c->groups,
                            c->act == NO_ACT ? NULL : &act,
                            o && o->f16_accumulation};
    const gaio_tensor *tb = c->bias ? &B.t : NULL, *tr = res ? &res->t : NULL;
    /* The lanes, pairs and tiled depthwise kernels must take their cases, else they test
     * the generic one: the lanes kernel the 7x7 windows of the pairs and lanes cases
     * (unless GAIO_DNN_DEPTHWISE sends them to the pairs or tiled kernels),
     * the pairs kernels the other pairs cases. */
    const char *dw_force = getenv("GAIO_DNN_DEPTHWISE");
    if (e->cuda && dt == GAIO_DTYPE_F16 && strncmp(c->name, "depthwise ", 10) == 0 && !(dw_force && !strcmp(dw_force, "cudnn"))) {
        const bool pairs_named = !strncmp(c->name, "depthwise pairs", 15);
        const bool lanes_named = !strncmp(c->name, "depthwise lanes", 15);
        const bool forced_off = dw_force && (!strcmp(dw_force, "pairs") || !strcmp(dw_force, "tiled"));
        const bool lanes_shape = c->r == 7 && c->s == 7 && sh == sw && sh <= 2 && dh == 1 &&
                                 dw == 1 && c->c % 8 == 0 && c->xpad % 8 == 0 && c->xl == NHWC;
        if (lanes_named) CHECK(lanes_shape); /* the table's lanes cases are theirs */
        const bool lanes = (lanes_named || pairs_named) && lanes_shape && !forced_off;
        const bool tiled = !strncmp(c->name, "depthwise tiled", 15) ||
                           (pairs_named && dw_force && !strcmp(dw_force, "tiled"));
        const bool pairs = !tiled && !lanes && pairs_named;
        if (tiled || pairs || lanes) {
            gaio_conv2d_info info;
            OK(gaio_conv2d_prepare(e->s, &X.t, &W.t, tb, tr, &Y.t, &p, &info));
            if (lanes) CHECK(strcmp(info.engine, "gaio depthwise (lanes)") == 0);
            else if (pairs) CHECK(strcmp(info.engine, "gaio depthwise (pairs)") == 0);
            else if (c->c % 8 == 0) CHECK(strcmp(info.engine, "gaio depthwise (tiled)") == 0);
            else CHECK(strcmp(info.engine, "gaio depthwise") == 0); /* the tiled kernel's channels are 8s */
        }
    }
    /* The fc kernel must take its cases (unless GAIO_DNN_CONV_FC=0 sends them to cuDNN). */
    const char *fc_force = getenv("GAIO_DNN_CONV_FC");
    if (e->cuda && strncmp(c->name, "fc 1x1 maps", 11) == 0 && !(fc_force && !strcmp(fc_force, "0"))) {
        gaio_conv2d_info info;
        OK(gaio_conv2d_prepare(e->s, &X.t, &W.t, tb, tr, &Y.t, &p, &info));
        CHECK(strcmp(info.engine, "gaio fc") == 0);
    }
    if (o && o->prepare) {
        gaio_conv2d_info info;
        memset(&info, 0x5a, sizeof info);
        gaio_status st = gaio_conv2d_prepare(e->s, &X.t, &W.t, tb, tr, &Y.t, &p, &info);
        if (refused(e, c, dt, st, "gaio_conv2d_prepare")) goto done;
        OK(st);
        CHECK(memchr(info.engine, 0, sizeof info.engine) != NULL && info.engine[0] != 0);
        if (e->engine_prefix) CHECK(strncmp(info.engine, e->engine_prefix, strlen(e->engine_prefix)) == 0);
        if (e->engine_has && !is_depthwise(c)) CHECK(strstr(info.engine, e->engine_has) != NULL);
        printf("\n    prepare: engine '%s' fused %d cuda_graph_native %d from_cache %d workspace %zu\n", info.engine,
               info.fused, info.cuda_graph_native, info.from_cache, info.workspace);
        gaio_conv2d_info again;
        memset(&again, 0, sizeof again);
        OK(gaio_conv2d_prepare(e->s, &X.t, &W.t, tb, tr, &Y.t, &p, &again));
        if (e->cuda) {
            CHECK(info.from_cache == (o->expect_cached ? 1 : 0));
            CHECK(again.from_cache == 1);
        } else {
            /* oneDNN's primitives are the host's plans; whether gaio keeps them is up to
             * the host backend, so only the flag's range is checked there. */
            printf("    host: from_cache %d, then %d\n", info.from_cache, again.from_cache);
            CHECK((info.from_cache == 0 || info.from_cache == 1) && (again.from_cache == 0 || again.from_cache == 1));
        }
        CHECK(strcmp(again.engine, info.engine) == 0 && again.fused == info.fused &&
              again.workspace == info.workspace);
        OK(gaio_conv2d_prepare(e->s, &X.t, &W.t, tb, tr, &Y.t, &p, NULL)); /* info may be NULL */
    }
    {
        /* The residual's values are y's initial ones when in place. */
        float *rv = malloc(res ? res->count * sizeof(float) : 1);
        CHECK(rv);
        if (res) memcpy(rv, res->v, res->count * sizeof(float));
        gaio_status st = gaio_conv2d(e->s, &X.t, &W.t, tb, tr, &Y.t, &p);
        if (refused(e, c, dt, st, "gaio_conv2d")) {
            free(rv);
            OK(gaio_stream_synchronize(e->s));
            goto done;
        }
        OK(st);
        if (e->cuda && dt == GAIO_DTYPE_F16 && known_gap(c)) note_name(e->ran_names, &e->nran_names, c->name);
        float *got = malloc(Y.count * sizeof(float));
        CHECK(got);
        hdownload(e, &Y, got);
        double worst = 0;
        int64_t above = 0, below = 0; /* CLIP: outputs clamped at either bound */
        bool *logical = calloc(Y.count, 1);
        CHECK(logical);
        const double slope = act_slope(c->act, c->alpha);
        for (int64_t n = 0; n < c->n; n++)
            for (int64_t k = 0; k < c->k; k++)
                for (int64_t pp = 0; pp < P; pp++)
                    for (int64_t q = 0; q < Q; q++) {
                        const int64_t g = k / kg;
                        double sum = 0, mag = 0;
                        for (int64_t ci = 0; ci < cg; ci++)
                            for (int64_t r = 0; r < c->r; r++) {
                                int64_t ih = pp * sh - c->pad[0] + r * dh;
                                if (ih < 0 || ih >= c->h) continue;
                                for (int64_t s = 0; s < c->s; s++) {
                                    int64_t iw = q * sw - c->pad[1] + s * dw;
                                    if (iw < 0 || iw >= c->w) continue;
                                    double xv = X.v[off4(&X, n, g * cg + ci, ih, iw)];
                                    double wv = W.v[off4(&W, k, ci, r, s)];
                                    sum += xv * wv;
                                    mag += fabs(xv * wv);
                                }
                            }
                        if (c->bias) sum += B.v[k], mag += fabs(B.v[k]);
                        size_t yo = off4(&Y, n, k, pp, q);
                        if (res) {
                            double rvv = rv[off4(res, n, k, pp, q)];
                            sum += rvv, mag += fabs(rvv);
                        }
                        logical[yo] = true;
                        if (c->act == GAIO_UNARY_CLIP) above += sum > c->beta, below += sum < c->alpha;
                        double want = act_ref(c->act, c->alpha, c->beta, sum);
                        double out = got[yo];
                        /* f32: accumulation error, a small multiple of the products' ulps.
                         * f16: inputs are exact f16 values, but the conv output, bias and
                         * residual may each be rounded to f16 before they are added. */
                        /* f16 sums: each partial sum rounded to f16 (about 2^-11 relative),
                         * a few dozen roundings deep at most for these sizes. */
                        double f16_rel = o && o->f16_accumulation ? 2e-2 : 4e-3;
                        double tol = dt == GAIO_DTYPE_F16 ? f16_rel * mag * slope + half_ulp_f16(want)
                                                          : (c->rel > 0 ? c->rel : 1e-4) * mag * slope +
                                                                2e-6 * fabs(want) + 1e-7;
                        double err = fabs(out - want);
                        if (err > worst) worst = err;
                        if (!(err <= tol)) {
                            fprintf(stderr, "\nconv %s %s: y[%lld][%lld][%lld][%lld] = %.7g, want %.7g (pre-act %.7g, tol %.3g)\n",
                                    c->name, gaio_dtype_name(dt), (long long)n, (long long)k, (long long)pp,
                                    (long long)q, out, want, sum, tol);
                            exit(1);
                        }
                    }
        /* y's gaps (padded rows) are untouched. */
        for (size_t i = 0; i < Y.count; i++)
            if (!logical[i] && got[i] != Y.v[i]) {
                fprintf(stderr, "\nconv %s %s: y's gap element %zu changed: %.7g, was %.7g\n", c->name,
                        gaio_dtype_name(dt), i, got[i], Y.v[i]);
                exit(1);
            }
        if (c->act == GAIO_UNARY_CLIP) CHECK(above > 0 && below > 0); /* both bounds were exercised */
        printf(": max err %.3g (%.1f ms)\n", worst, now_ms() - t0);
        free(logical);
        free(got);
        free(rv);
    }
    hfree(&X), hfree(&W), hfree(&Y), hfree(&B), hfree(&R);
    return true;
done:
    hfree(&X), hfree(&W), hfree(&Y), hfree(&B), hfree(&R);
    return false;
}

/* name, n c h w k r s, stride, pad (t l b r), dilation, groups, layouts x w y, row pads x y,
 * bias res in-place, act alpha beta, scale */
static const ccase k_cases[] = {
    {"resnet 3x3", 2, 16, 8, 8, 16, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, NHWC, NHWC, NHWC, 0, 0, true, false, false, GAIO_UNARY_RELU, 0, 0, 1, 0},
    {"3x3 zero=default", 1, 16, 8, 8, 16, 3, 3, {0, 0}, {1, 1, 1, 1}, {0, 0}, 0, NHWC, NHWC, NHWC, 0, 0, false, true, false, NO_ACT, 0, 0, 1, 0},
    {"1x1", 2, 16, 8, 8, 32, 1, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1, NHWC, NHWC, NHWC, 0, 0, true, true, false, GAIO_UNARY_RELU, 0, 0, 1, 0},
    {"1x1 on 1x1", 3, 16, 1, 1, 8, 1, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1, NHWC, NHWC, NHWC, 0, 0, true, false, false, NO_ACT, 0, 0, 1, 0},
    {"stem 7x7/2 nchw", 1, 3, 23, 23, 16, 7, 7, {2, 2}, {3, 3, 3, 3}, {1, 1}, 1, NCHW, NCHW, NCHW, 0, 0, true, false, false, GAIO_UNARY_RELU, 0, 0, 1, 0},
    {"stem 7x7/2 nhwc", 1, 3, 23, 23, 16, 7, 7, {2, 2}, {3, 3, 3, 3}, {1, 1}, 1, NHWC, NHWC, NHWC, 0, 0, true, false, false, GAIO_UNARY_RELU, 0, 0, 1, 0},
    {"1x1/2 downsample", 2, 16, 9, 9, 32, 1, 1, {2, 2}, {0, 0, 0, 0}, {1, 1}, 1, NHWC, NHWC, NHWC, 0, 0, false, false, false, NO_ACT, 0, 0, 1, 0},
    {"3x3/2 pad 1", 2, 16, 8, 8, 32, 3, 3, {2, 2}, {1, 1, 1, 1}, {1, 1}, 1, NHWC, NHWC, NHWC, 0, 0, true, true, false, GAIO_UNARY_RELU, 0, 0, 1, 0},
    {"groups 2", 2, 8, 7, 7, 6, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, 2, NHWC, NHWC, NHWC, 0, 0, true, false, false, NO_ACT, 0, 0, 1, 0},
    {"groups 2 nchw", 1, 8, 7, 7, 6, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, 2, NCHW, NCHW, NCHW, 0, 0, false, true, false, GAIO_UNARY_RELU, 0, 0, 1, 0},
    {"depthwise", 2, 16, 8, 8, 16, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, 16, NHWC, NHWC, NHWC, 0, 0, true, false, false, GAIO_UNARY_CLIP, 0, 6, 3, 0},
    {"depthwise x2", 1, 16, 8, 8, 32, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, 16, NHWC, NHWC, NHWC, 0, 0, true, false, false, NO_ACT, 0, 0, 1, 0},
    {"depthwise/2 nchw", 1, 8, 9, 9, 8, 3, 3, {2, 2}, {1, 1, 1, 1}, {1, 1}, 8, NCHW, NCHW, NCHW, 0, 0, true, false, false, NO_ACT, 0, 0, 1, 0},
    /* Depthwise runs gaio's own kernel on a GPU: MobileNet's layers (bias, ReLU6, stride
     * 2), and the index orders and operands it must also get right. */
    {"depthwise/2 nhwc relu6", 2, 32, 9, 10, 32, 3, 3, {2, 2}, {1, 1, 1, 1}, {1, 1}, 32, NHWC, NHWC, NHWC, 0, 0, true, false, false, GAIO_UNARY_CLIP, 0, 6, 3, 0},
    {"depthwise residual", 2, 24, 7, 7, 24, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, 24, NHWC, NHWC, NHWC, 0, 0, true, true, false, GAIO_UNARY_CLIP, 0, 6, 3, 0},
    {"depthwise in place", 2, 16, 6, 6, 16, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, 16, NHWC, NHWC, NHWC, 0, 0, true, false, true, GAIO_UNARY_RELU, 0, 0, 1, 0},
    {"depthwise in place nchw", 1, 8, 6, 7, 8, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, 8, NCHW, NCHW, NCHW, 0, 0, true, false, true, NO_ACT, 0, 0, 1, 0},
    {"depthwise dil 2 asym", 1, 12, 9, 11, 12, 3, 3, {1, 2}, {2, 1, 2, 0}, {2, 2}, 12, NHWC, NHWC, NHWC, 0, 0, false, true, false, NO_ACT, 0, 0, 1, 0},
    {"depthwise dil nchw", 2, 5, 9, 8, 5, 3, 2, {2, 1}, {2, 0, 1, 1}, {2, 3}, 5, NCHW, NCHW, NCHW, 0, 0, true, true, false, GAIO_UNARY_RELU, 0, 0, 1, 0},
    {"depthwise 5x5 odd C", 2, 7, 8, 8, 7, 5, 5, {1, 1}, {2, 2, 2, 2}, {1, 1}, 7, NHWC, NHWC, NHWC, 0, 0, true, false, false, GAIO_UNARY_HARD_SWISH, 0, 0, 1, 0},
    {"depthwise padded rows", 2, 16, 6, 7, 16, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, 16, NHWC, NHWC, NHWC, 2, 1, true, true, false, GAIO_UNARY_RELU, 0, 0, 1, 0},
    {"depthwise nchw x nhwc y", 2, 8, 6, 6, 8, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, 8, NCHW, NHWC, NHWC, 0, 0, true, true, false, NO_ACT, 0, 0, 1, 0},
    {"depthwise nhwc x nchw y", 1, 8, 6, 6, 8, 3, 3, {2, 2}, {1, 1, 1, 1}, {1, 1}, 8, NHWC, NCHW, NCHW, 0, 0, true, false, false, NO_ACT, 0, 0, 1, 0},
    /* gaio_dnn_conv_depthwise_pairs's cases on a GPU (f16 only; f32 takes the generic
     * kernel): channel pairs split unevenly over blocks (68 = 3 x 23 - 1, 33 = 2 x 17 - 1),
     * one pair, outputs not a multiple of its 2 x 4 tiles, tiles on every border, 3x3 and
     * 5x5 windows, stride 2, one-sided padding, residual in place, an activation it calls,
     * more rows of tiles (4100 images x 16) than a grid's y holds. */
    {"depthwise pairs 3x3 C=136", 2, 136, 9, 11, 136, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, 136, NHWC, NHWC, NHWC, 0, 0, true, true, false, GAIO_UNARY_CLIP, 0, 6, 3, 0},
    {"depthwise pairs 5x5/2 silu", 3, 40, 13, 14, 40, 5, 5, {2, 2}, {2, 2, 2, 2}, {1, 1}, 40, NHWC, NHWC, NHWC, 0, 0, true, false, false, GAIO_UNARY_SILU, 0, 0, 2, 0},
    {"depthwise pairs 3x3/2 one-sided", 2, 24, 15, 15, 24, 3, 3, {2, 2}, {0, 0, 1, 1}, {1, 1}, 24, NHWC, NHWC, NHWC, 0, 0, true, false, false, GAIO_UNARY_HARD_SWISH, 0, 0, 3, 0},
    {"depthwise pairs 5x5 C=66 in place", 2, 66, 9, 13, 66, 5, 5, {1, 1}, {2, 2, 2, 2}, {1, 1}, 66, NHWC, NHWC, NHWC, 0, 0, true, false, true, NO_ACT, 0, 0, 1, 0},
    {"depthwise pairs 3x3 C=2 gelu", 2, 2, 5, 6, 2, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, 2, NHWC, NHWC, NHWC, 0, 0, true, true, false, GAIO_UNARY_GELU, 0, 0, 1, 0},
    {"depthwise pairs 3x3 65600 rows", 4100, 2, 32, 4, 2, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, 2, NHWC, NHWC, NHWC, 0, 0, true, false, false, GAIO_UNARY_RELU, 0, 0, 1, 0},
    /* gaio_dnn_conv_depthwise_lanes7's (a channel a lane, 7x7 windows): a partial
     * group of 32 channels (104 = 3 x 32 + 8, 40), outputs not a multiple of its 4 x 4 (2 x 2)
     * tiles, maps narrower than 8 tiles (blocks of 2 or 4 tiles across), tiles on every
     * border, stride 2, one-sided padding, residual (in place too), activations it calls,
     * x rows padded by a vector. */
    {"depthwise lanes 7x7 C=96 residual", 2, 96, 14, 13, 96, 7, 7, {1, 1}, {3, 3, 3, 3}, {1, 1}, 96, NHWC, NHWC, NHWC, 0, 0, true, true, false, NO_ACT, 0, 0, 1, 0},
    {"depthwise lanes 7x7/2 C=104 gelu", 2, 104, 15, 37, 104, 7, 7, {2, 2}, {3, 3, 3, 3}, {1, 1}, 104, NHWC, NHWC, NHWC, 0, 0, true, false, false, GAIO_UNARY_GELU, 0, 0, 1, 0},
    {"depthwise lanes 7x7 C=40 silu", 3, 40, 9, 11, 40, 7, 7, {1, 1}, {3, 3, 3, 3}, {1, 1}, 40, NHWC, NHWC, NHWC, 0, 0, true, true, false, GAIO_UNARY_SILU, 0, 0, 2, 0},
    {"depthwise lanes 7x7/2 one-sided in place", 2, 48, 13, 12, 48, 7, 7, {2, 2}, {2, 3, 3, 2}, {1, 1}, 48, NHWC, NHWC, NHWC, 0, 0, true, false, true, GAIO_UNARY_HARD_SWISH, 0, 0, 3, 0},
    {"depthwise lanes 7x7 padded rows", 2, 24, 9, 8, 24, 7, 7, {1, 1}, {3, 3, 3, 3}, {1, 1}, 24, NHWC, NHWC, NHWC, 8, 1, true, true, false, GAIO_UNARY_RELU, 0, 0, 1, 0},
    {"depthwise lanes 7x7 tall", 1, 16, 41, 5, 16, 7, 7, {1, 1}, {3, 3, 3, 3}, {1, 1}, 16, NHWC, NHWC, NHWC, 0, 0, true, false, false, NO_ACT, 0, 0, 1, 0},
    /* gaio_dnn_conv_fc's cases on a GPU (a 1x1 window on 1x1 maps): several warps'
     * worth of channels and fewer than one, one channel, both layouts, residual (in
     * place too), activations cuDNN fuses only at run time. */
    {"fc 1x1 maps silu", 4, 70, 1, 1, 20, 1, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1, NHWC, NHWC, NHWC, 0, 0, true, false, false, GAIO_UNARY_SILU, 0, 0, 1, 0},
    {"fc 1x1 maps sigmoid in place", 3, 40, 1, 1, 40, 1, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1, NCHW, NCHW, NCHW, 0, 0, true, false, true, GAIO_UNARY_SIGMOID, 0, 0, 1, 0},
    {"fc 1x1 maps C=1 hardsigmoid", 2, 1, 1, 1, 33, 1, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1, NHWC, NHWC, NHWC, 0, 0, true, false, false, GAIO_UNARY_HARD_SIGMOID, 0.2f, 0.5f, 1, 0},
    {"fc 1x1 maps C=300 gelu", 2, 300, 1, 1, 7, 1, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1, NHWC, NCHW, NHWC, 0, 0, false, true, false, GAIO_UNARY_GELU, 0, 0, 1, 0},
    /* The warp-of-8s order (f16 rows of 8s longer than a thread's sum): 1152 terms, a
     * last run of 8s that only half the lanes take, samples not a multiple of 4. */
    {"fc 1x1 maps se squeeze", 9, 1152, 1, 1, 48, 1, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1, NHWC, NHWC, NHWC, 0, 0, true, false, false, GAIO_UNARY_SILU, 0, 0, 1, 0},
    {"fc 1x1 maps C=136 relu", 5, 136, 1, 1, 3, 1, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1, NCHW, NHWC, NCHW, 0, 0, false, true, false, GAIO_UNARY_RELU, 0, 0, 1, 0},
    {"fc 1x1 maps se expand", 9, 48, 1, 1, 1152, 1, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1, NHWC, NHWC, NHWC, 0, 0, true, false, false, GAIO_UNARY_SIGMOID, 0, 0, 1, 0},
    /* gaio_dnn_conv_depthwise_tiled's: a partial channel group (264 = 256 + 8), rows not a
     * multiple of its strips, 7x7 and 5x3 windows, column stride 2 with row stride 1 and
     * row dilation, residual in place, an activation it calls. */
    {"depthwise pairs 7x7 in place", 1, 16, 10, 9, 16, 7, 7, {1, 1}, {3, 3, 3, 3}, {1, 1}, 16, NHWC, NHWC, NHWC, 0, 0, false, false, true, NO_ACT, 0, 0, 1, 0},
    {"depthwise tiled 5x3 C=264 gelu", 1, 264, 7, 10, 264, 5, 3, {1, 2}, {2, 1, 2, 1}, {2, 1}, 264, NHWC, NHWC, NHWC, 0, 0, true, true, false, GAIO_UNARY_GELU, 0, 0, 1, 0},
    {"depthwise C=1", 3, 1, 7, 5, 1, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, NHWC, NHWC, NHWC, 0, 0, true, true, false, NO_ACT, 0, 0, 1, 0},
    {"dilation 2", 1, 8, 9, 9, 8, 3, 3, {1, 1}, {2, 2, 2, 2}, {2, 2}, 1, NHWC, NHWC, NHWC, 0, 0, true, false, false, NO_ACT, 0, 0, 1, 0},
    {"dilation 2,1 nchw", 1, 4, 9, 10, 8, 3, 3, {1, 2}, {2, 1, 2, 1}, {2, 1}, 1, NCHW, NCHW, NCHW, 0, 0, false, false, false, NO_ACT, 0, 0, 1, 0},
    {"asymmetric pad", 2, 8, 7, 8, 8, 3, 3, {1, 1}, {0, 1, 2, 1}, {1, 1}, 1, NHWC, NHWC, NHWC, 0, 0, true, true, false, NO_ACT, 0, 0, 1, 0},
    {"asymmetric pad nchw", 1, 5, 7, 8, 3, 3, 3, {1, 1}, {0, 1, 2, 1}, {1, 1}, 1, NCHW, NCHW, NCHW, 0, 0, true, false, false, NO_ACT, 0, 0, 1, 0},
    {"kernel 1x3", 1, 8, 6, 7, 16, 1, 3, {1, 1}, {0, 1, 0, 1}, {1, 1}, 1, NHWC, NHWC, NHWC, 0, 0, true, false, false, GAIO_UNARY_RELU, 0, 0, 1, 0},
    {"kernel 3x1", 1, 8, 6, 7, 16, 3, 1, {1, 1}, {1, 0, 1, 0}, {1, 1}, 1, NHWC, NHWC, NHWC, 0, 0, true, false, false, GAIO_UNARY_RELU, 0, 0, 1, 0},
    {"batch 1", 1, 8, 5, 5, 8, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, NHWC, NHWC, NHWC, 0, 0, true, true, false, NO_ACT, 0, 0, 1, 0},
    {"batch 33", 33, 8, 4, 4, 8, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, NHWC, NHWC, NHWC, 0, 0, true, true, false, GAIO_UNARY_RELU, 0, 0, 1, 0},
    {"odd sizes", 2, 5, 9, 11, 7, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, NCHW, NCHW, NCHW, 0, 0, true, true, false, NO_ACT, 0, 0, 1, 0},
    {"odd sizes nhwc /2,1", 2, 5, 9, 11, 7, 3, 2, {2, 1}, {1, 0, 0, 2}, {1, 1}, 1, NHWC, NHWC, NHWC, 0, 0, true, false, false, NO_ACT, 0, 0, 1, 0},
    {"residual in place", 2, 16, 6, 6, 16, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, NHWC, NHWC, NHWC, 0, 0, true, false, true, GAIO_UNARY_RELU, 0, 0, 1, 0},
    {"in place nchw", 1, 8, 6, 6, 8, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, NCHW, NCHW, NCHW, 0, 0, false, false, true, NO_ACT, 0, 0, 1, 0},
    {"x padded rows nchw", 1, 8, 6, 7, 8, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, NCHW, NCHW, NCHW, 3, 0, true, false, false, NO_ACT, 0, 0, 1, 0},
    {"x, y padded rows nhwc", 2, 8, 6, 7, 16, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, NHWC, NHWC, NHWC, 2, 1, true, true, false, GAIO_UNARY_RELU, 0, 0, 1, 0},
    {"nchw x, nhwc y", 2, 8, 6, 6, 16, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, NCHW, NHWC, NHWC, 0, 0, true, true, false, NO_ACT, 0, 0, 1, 0},
    {"nhwc x, nchw w, y", 1, 8, 6, 6, 8, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, NHWC, NCHW, NCHW, 0, 0, true, false, false, NO_ACT, 0, 0, 1, 0},
};

static void test_shapes(env *e) {
    const gaio_dtype dts[] = {GAIO_DTYPE_F32, GAIO_DTYPE_F16};
    for (size_t i = 0; i < sizeof k_cases / sizeof k_cases[0]; i++)
        for (int d = 0; d < 2; d++) run_case(e, &k_cases[i], dts[d], NULL);
    /* On a GPU the pairs, lanes and tiled depthwise cases are small enough to take the
     * kernels' small tiles (strips of one output); again with their larger tiles forced,
     * and the pairs cases on the tiled kernel and on the pairs kernels (their 7x7 windows
     * otherwise go to the lanes kernel). */
    if (e->cuda && !getenv("GAIO_DNN_DEPTHWISE")) {
        const char *modes[] = {"strips", "tiled", "pairs"};
        for (int m = 0; m < 3; m++) {
            setenv("GAIO_DNN_DEPTHWISE", modes[m], 1);
            for (size_t i = 0; i < sizeof k_cases / sizeof k_cases[0]; i++)
                if (!strncmp(k_cases[i].name, "depthwise pairs", 15) ||
                    (m == 0 && !strncmp(k_cases[i].name, "depthwise tiled", 15)) ||
                    (m == 0 && !strncmp(k_cases[i].name, "depthwise lanes", 15))) {
                    printf("  (GAIO_DNN_DEPTHWISE=%s)\n", modes[m]);
                    run_case(e, &k_cases[i], GAIO_DTYPE_F16, NULL);
                }
        }
        unsetenv("GAIO_DNN_DEPTHWISE");
    }
    /* f16 accumulation allowed (the fast engines of the 3-channel stem on a GPU; the
     * host ignores it): still right within f16 sums' precision. */
    const run_opts f16acc = {.f16_accumulation = true};
    for (size_t i = 0; i < sizeof k_cases / sizeof k_cases[0]; i++)
        if (!strcmp(k_cases[i].name, "stem 7x7/2 nhwc") || !strcmp(k_cases[i].name, "resnet 3x3")) {
            printf("  (f16_accumulation)\n");
            run_case(e, &k_cases[i], GAIO_DTYPE_F16, &f16acc);
        }
}

/* Every activation after bias and residual, on one shape. */
static void test_activations(env *e) {
    const gaio_dtype dts[] = {GAIO_DTYPE_F32, GAIO_DTYPE_F16};
    ccase c = {"act", 1, 16, 6, 6, 16, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, NHWC, NHWC, NHWC, 0, 0, true, true, false, NO_ACT, 0, 0, 1, 0};
    for (int op = NO_ACT; op <= GAIO_UNARY_HARD_SWISH; op++) {
        c.act = op, c.alpha = 0, c.beta = 0, c.scale = 1;
        if (op == GAIO_UNARY_CLIP) c.alpha = 0, c.beta = 6, c.scale = 3; /* ReLU6 with values past 6 */
        if (op == GAIO_UNARY_HARD_SIGMOID) c.alpha = 0.2f, c.beta = 0.5f;
        for (int d = 0; d < 2; d++) {
            c.bias = c.res = true;
            run_case(e, &c, dts[d], NULL);
        }
    }
    /* One product per output (1x1, C = 1): exact before the activation but for one
     * rounding, so that a tight tolerance tells the activations apart (GELU's erf form
     * from its tanh approximation, 1e-4 apart near 1 and 2). */
    ccase one = {"act 1x1 C=1", 2, 1, 6, 6, 8, 1, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1, NHWC, NHWC, NHWC, 0, 0, false, false, false, NO_ACT, 0, 0, 4, 1e-5};
    for (int op = GAIO_UNARY_RELU; op <= GAIO_UNARY_HARD_SWISH; op++) {
        one.act = op, one.alpha = 0, one.beta = 0, one.scale = 4;
        /* Past both bounds: some |w| (8 values in [-1, 1)) above 1/4 is all but certain
         * (at 12, all 8 below 1/2 left no output past 6 once in 256 runs). */
        if (op == GAIO_UNARY_CLIP) one.beta = 6, one.scale = 24;
        if (op == GAIO_UNARY_HARD_SIGMOID) one.alpha = 0.2f, one.beta = 0.5f;
        run_case(e, &one, GAIO_DTYPE_F32, NULL);
    }
    /* The unary ops from SQRT on that are defined and smooth enough everywhere (no NaN,
     * pole or step; a bounded slope): gaio's own convolution on the host (oneDNN has no
     * post-op for most), a second pass on a GPU. */
    const int more[] = {GAIO_UNARY_ABS, GAIO_UNARY_NEG, GAIO_UNARY_ERF,   GAIO_UNARY_SOFTPLUS,
                        GAIO_UNARY_SIN, GAIO_UNARY_COS, GAIO_UNARY_AFFINE};
    for (size_t i = 0; i < sizeof more / sizeof more[0]; i++) {
        c.act = more[i], c.alpha = 0, c.beta = 0, c.scale = 1;
        if (more[i] == GAIO_UNARY_AFFINE) c.alpha = -0.5f, c.beta = 0.25f;
        for (int d = 0; d < 2; d++) {
            c.bias = c.res = true;
            run_case(e, &c, dts[d], NULL);
        }
    }
    c.alpha = c.beta = 0;
    /* Bias and residual each off, and a residual in place, with a few activations. */
    c.act = GAIO_UNARY_SILU, c.bias = false, c.res = true;
    run_case(e, &c, GAIO_DTYPE_F32, NULL);
    c.act = GAIO_UNARY_GELU, c.bias = true, c.res = false;
    run_case(e, &c, GAIO_DTYPE_F32, NULL);
    run_case(e, &c, GAIO_DTYPE_F16, NULL);
    c.act = GAIO_UNARY_HARD_SWISH, c.res_in_place = true;
    run_case(e, &c, GAIO_DTYPE_F32, NULL);
    run_case(e, &c, GAIO_DTYPE_F16, NULL);
}

static const ccase k_prep = {"prepare", 2, 16, 8, 8, 16, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, NHWC, NHWC, NHWC, 0, 0, true, true, false, GAIO_UNARY_RELU, 0, 0, 1, 0};

static void test_prepare(env *e) {
    run_opts o = {true, false, false};
    CHECK(run_case(e, &k_prep, GAIO_DTYPE_F32, &o));
    CHECK(run_case(e, &k_prep, GAIO_DTYPE_F16, &o));
    /* A shape gaio_conv2d has already planned is cached too. */
    o.expect_cached = true;
    CHECK(run_case(e, &k_cases[0], GAIO_DTYPE_F32, &o));
}

static void test_plan_cache(env *e) {
    char path[] = "/tmp/gaio_conv_plans_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    size_t count = 12345;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_dnn_plan_cache_save(NULL, path, NULL), "gaio_dnn_plan_cache_save");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_dnn_plan_cache_load(e->ctx, NULL, NULL), "gaio_dnn_plan_cache_load");
    if (!e->cuda) {
        FAILS(GAIO_ERR_NOT_SUPPORTED, gaio_dnn_plan_cache_save(e->ctx, path, &count), "gaio_dnn_plan_cache_save");
        FAILS(GAIO_ERR_NOT_SUPPORTED, gaio_dnn_plan_cache_load(e->ctx, path, &count), "gaio_dnn_plan_cache_load");
        unlink(path);
        return;
    }
    OK(gaio_dnn_plan_cache_save(e->ctx, path, &count));
    printf("plan cache: %zu plans saved to %s\n", count, path);
    CHECK(count > 0);
    env fresh = *e;
    OK(gaio_context_create(e->device, NULL, &fresh.ctx));
    OK(gaio_stream_create(fresh.ctx, 0, 0, &fresh.s));
    size_t loaded = 0;
    OK(gaio_dnn_plan_cache_load(fresh.ctx, path, &loaded));
    printf("plan cache: %zu plans loaded into a new context\n", loaded);
    CHECK(loaded > 0);
    run_opts o = {true, true, false};
    CHECK(run_case(&fresh, &k_prep, GAIO_DTYPE_F32, &o));
    e->rng = fresh.rng;
    OK(gaio_stream_release(fresh.s));
    OK(gaio_context_release(fresh.ctx));
    unlink(path);
}

/* The reference conv of test_bad: x [2, 4, 6, 6], w [6, 4, 3, 3], y [2, 6, 4, 4] in
 * one buffer, all f32 NCHW, no padding. */
static void test_bad(env *e) {
    const char *fn = "gaio_conv2d";
    gaio_buffer *buf;
    OK(gaio_buffer_alloc(e->ctx, GAIO_MEM_DEVICE, 16384, &buf));
    OK(gaio_memset_async(e->s, buf, 0, 0, 16384));
    const gaio_dtype F32 = GAIO_DTYPE_F32;
    gaio_tensor x = gaio_tensor_make(buf, 0, F32, 4, (int64_t[]){2, 4, 6, 6}, GAIO_TENSOR_ROW_MAJOR);
    gaio_tensor w = gaio_tensor_make(buf, 2048, F32, 4, (int64_t[]){6, 4, 3, 3}, GAIO_TENSOR_ROW_MAJOR);
    gaio_tensor y = gaio_tensor_make(buf, 8192, F32, 4, (int64_t[]){2, 6, 4, 4}, GAIO_TENSOR_ROW_MAJOR);
    gaio_tensor bias = gaio_tensor_make(buf, 9216, F32, 1, (int64_t[]){6}, GAIO_TENSOR_ROW_MAJOR);
    gaio_tensor res = gaio_tensor_make(buf, 10240, F32, 4, (int64_t[]){2, 6, 4, 4}, GAIO_TENSOR_ROW_MAJOR);
    gaio_conv2d_params p = {{1, 1}, {0, 0, 0, 0}, {1, 1}, 1, NULL, 0};
    OK(gaio_conv2d(e->s, &x, &w, &bias, &res, &y, &p));
    OK(gaio_stream_synchronize(e->s));

    FAILS(GAIO_ERR_INVALID_ARG, gaio_conv2d(NULL, &x, &w, NULL, NULL, &y, &p), fn);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_conv2d(e->s, NULL, &w, NULL, NULL, &y, &p), fn);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_conv2d(e->s, &x, NULL, NULL, NULL, &y, &p), fn);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_conv2d(e->s, &x, &w, NULL, NULL, NULL, &p), fn);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_conv2d(e->s, &x, &w, NULL, NULL, &y, NULL), fn);
    gaio_tensor t = x;
    t.ndim = 3; /* wrong ndim */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_conv2d(e->s, &t, &w, NULL, NULL, &y, &p), fn);
    t = w, t.ndim = 5, t.shape[4] = 1;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_conv2d(e->s, &x, &t, NULL, NULL, &y, &p), fn);
    t = y, t.ndim = 3;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_conv2d(e->s, &x, &w, NULL, NULL, &t, &p), fn);
    t = w, t.dtype = GAIO_DTYPE_F16; /* x f32, w f16 */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_conv2d(e->s, &x, &t, NULL, NULL, &y, &p), fn);
    {
        gaio_tensor xu = x, wu = w, yu = y;
        xu.dtype = wu.dtype = yu.dtype = GAIO_DTYPE_U8;
        FAILS(GAIO_ERR_NOT_SUPPORTED, gaio_conv2d(e->s, &xu, &wu, NULL, NULL, &yu, &p), fn);
    }
    gaio_conv2d_params q = p;
    q.groups = 3; /* C = 4 is no multiple of 3 (K = 6 is) */
    t = w, t.shape[1] = 1;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_conv2d(e->s, &x, &t, NULL, NULL, &y, &q), fn);
    q.groups = 2; /* w's second dimension must be C / groups = 2 */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_conv2d(e->s, &x, &w, NULL, NULL, &y, &q), fn);
    t = w, t.shape[1] = 3; /* groups 1: must be 4 */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_conv2d(e->s, &x, &t, NULL, NULL, &y, &p), fn);
    q.groups = 4; /* K = 6 is no multiple of 4 (C = 4 is) */
    t = w, t.shape[1] = 1;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_conv2d(e->s, &x, &t, NULL, NULL, &y, &q), fn);
    q.groups = -1;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_conv2d(e->s, &x, &w, NULL, NULL, &y, &q), fn);
    t = y, t.shape[2] = 5; /* P is 4 */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_conv2d(e->s, &x, &w, NULL, NULL, &t, &p), fn);
    t = y, t.shape[3] = 3; /* Q is 4 */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_conv2d(e->s, &x, &w, NULL, NULL, &t, &p), fn);
    t = y, t.shape[1] = 5; /* K is 6 */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_conv2d(e->s, &x, &w, NULL, NULL, &t, &p), fn);
    t = y, t.shape[0] = 1; /* N is 2 */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_conv2d(e->s, &x, &w, NULL, NULL, &t, &p), fn);
    t = res, t.shape[3] = 3;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_conv2d(e->s, &x, &w, NULL, &t, &y, &p), fn);
    t = res, t.dtype = GAIO_DTYPE_F16;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_conv2d(e->s, &x, &w, NULL, &t, &y, &p), fn);
    t = bias, t.shape[0] = 5;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_conv2d(e->s, &x, &w, &t, NULL, &y, &p), fn);
    t = gaio_tensor_make(buf, 9216, F32, 2, (int64_t[]){1, 6}, GAIO_TENSOR_ROW_MAJOR); /* not 1-D */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_conv2d(e->s, &x, &w, &t, NULL, &y, &p), fn);
    t = bias, t.dtype = GAIO_DTYPE_F16;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_conv2d(e->s, &x, &w, &t, NULL, &y, &p), fn);
    for (int i = 0; i < 4; i++) {
        q = p, q.pad[i] = -1;
        FAILS(GAIO_ERR_INVALID_ARG, gaio_conv2d(e->s, &x, &w, NULL, NULL, &y, &q), fn);
    }
    q = p, q.stride[0] = q.stride[1] = 0; /* 0 means 1 */
    OK(gaio_conv2d(e->s, &x, &w, NULL, NULL, &y, &q));
    q = p, q.dilation[0] = q.dilation[1] = 0, q.groups = 0;
    OK(gaio_conv2d(e->s, &x, &w, NULL, NULL, &y, &q));
    q = p, q.stride[0] = -1;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_conv2d(e->s, &x, &w, NULL, NULL, &y, &q), fn);
    q = p, q.stride[1] = -1;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_conv2d(e->s, &x, &w, NULL, NULL, &y, &q), fn);
    q = p, q.dilation[0] = -1;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_conv2d(e->s, &x, &w, NULL, NULL, &y, &q), fn);
    q = p, q.dilation[1] = -1;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_conv2d(e->s, &x, &w, NULL, NULL, &y, &q), fn);
    /* A 7x7 kernel on an unpadded 6x6 input: P would be 0. */
    t = gaio_tensor_make(buf, 2048, F32, 4, (int64_t[]){6, 4, 7, 7}, GAIO_TENSOR_ROW_MAJOR);
    gaio_tensor y1 = gaio_tensor_make(buf, 8192, F32, 4, (int64_t[]){2, 6, 1, 1}, GAIO_TENSOR_ROW_MAJOR);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_conv2d(e->s, &x, &t, NULL, NULL, &y1, &p), fn);
    /* Dilation 3 makes the 3x3 kernel span 7 of the 6 rows. */
    q = p, q.dilation[0] = 3;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_conv2d(e->s, &x, &w, NULL, NULL, &y1, &q), fn);
    t = y, t.offset = 4; /* y overlaps x */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_conv2d(e->s, &x, &w, NULL, NULL, &t, &p), fn);
    t = y, t.offset = 2048 + 64; /* y overlaps w */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_conv2d(e->s, &x, &w, NULL, NULL, &t, &p), fn);
    t = y, t.offset = y.offset + 4; /* residual overlaps y, not identical */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_conv2d(e->s, &x, &w, NULL, &t, &y, &p), fn);
    t = y, t.strides[0] = 96, t.strides[1] = 16, t.strides[2] = 1, t.strides[3] = 4; /* same start, H and W swapped */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_conv2d(e->s, &x, &w, NULL, &t, &y, &p), fn);
    t = y, t.layout = GAIO_TENSOR_NHWC; /* same memory read in another order */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_conv2d(e->s, &x, &w, NULL, &t, &y, &p), fn);
    t = bias, t.offset = y.offset + 8; /* y overlaps bias */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_conv2d(e->s, &x, &w, &t, NULL, &y, &p), fn);
    gaio_unary_params act = {(gaio_unary_op)42, 0, 0};
    q = p, q.act = &act;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_conv2d(e->s, &x, &w, NULL, NULL, &y, &q), fn);
    act.op = (gaio_unary_op)-1;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_conv2d(e->s, &x, &w, NULL, NULL, &y, &q), fn);
    t = y, t.offset = 16384 - 512; /* 768 bytes from here pass the end */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_conv2d(e->s, &x, &w, NULL, NULL, &t, &p), fn);
    t = x, t.strides[0] = 4000, t.strides[1] = 36, t.strides[2] = 6, t.strides[3] = 1; /* image 1 past the end */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_conv2d(e->s, &t, &w, NULL, NULL, &y, &p), fn);
    t = x, t.shape[2] = 0;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_conv2d(e->s, &t, &w, NULL, NULL, &y, &p), fn);

    /* gaio_conv2d_prepare checks as gaio_conv2d does, naming itself. */
    const char *pfn = "gaio_conv2d_prepare";
    gaio_status st;
    gaio_conv2d_info info;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_conv2d_prepare(NULL, &x, &w, NULL, NULL, &y, &p, &info), pfn);
    t = y, t.shape[2] = 5;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_conv2d_prepare(e->s, &x, &w, NULL, NULL, &t, &p, &info), pfn);
    q = p, q.pad[0] = -2;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_conv2d_prepare(e->s, &x, &w, NULL, NULL, &y, &q, &info), pfn);

    /* Nothing bad was enqueued: the stream is fine and a good conv still runs. */
    st = gaio_stream_query(e->s);
    CHECK(st == GAIO_OK || st == GAIO_ERR_NOT_READY);
    OK(gaio_conv2d(e->s, &x, &w, &bias, &res, &y, &p));
    OK(gaio_stream_synchronize(e->s));
    OK(gaio_buffer_release(buf));
    /* And gives right answers. */
    CHECK(run_case(e, &k_cases[21], GAIO_DTYPE_F32, NULL));
}

/* Every test on a fresh context of e->device. */
static void run_pass(env *e) {
    OK(gaio_context_create(e->device, NULL, &e->ctx));
    OK(gaio_stream_create(e->ctx, 0, 0, &e->s));
    double t0 = now_ms();
    printf("shapes:\n");
    test_shapes(e);
    printf("activations:\n");
    test_activations(e);
    printf("prepare:\n");
    test_prepare(e);
    printf("plan cache file:\n");
    test_plan_cache(e);
    printf("bad input:\n");
    test_bad(e);
    /* Again on a DEFERRED stream and on the context's default stream: plans are the
     * context's, so these find them cached. */
    OK(gaio_stream_release(e->s));
    OK(gaio_stream_create(e->ctx, 0, GAIO_STREAM_DEFERRED, &e->s));
    printf("shapes on a DEFERRED stream:\n");
    test_shapes(e);
    OK(gaio_stream_release(e->s));
    OK(gaio_context_default_stream(e->ctx, &e->s));
    printf("activations on the default stream:\n");
    test_activations(e);
    OK(gaio_stream_synchronize(e->s));
    printf("all in %.0f ms\n", now_ms() - t0);
    OK(gaio_context_release(e->ctx));
    e->ctx = NULL, e->s = NULL;
}

static void print_names(const char *what, const char *const *names, int count) {
    printf("%s (%d):", what, count);
    for (int i = 0; i < count; i++) printf("%s '%s'", i ? "," : "", names[i]);
    printf("%s\n", count ? "" : " none");
}

/* Sets (value non-NULL) or removes an environment variable; nothing runs meanwhile (the
 * previous pass's context is gone and its work done). */
static void set_env(const char *name, const char *value) {
    if (value)
        CHECK(setenv(name, value, 1) == 0);
    else
        CHECK(unsetenv(name) == 0);
}

static void run_host(env *e) {
    const char *what = NULL;
    gaio_status st = gaio_dnn_library_status(GAIO_DNN_ONEDNN, &what);
    printf("oneDNN: %s: %s\n", gaio_status_string(st), what ? what : "");
    const bool onednn = st == GAIO_OK;
    const char *blas_what = NULL;
    gaio_status blas_st = gaio_dnn_library_status(GAIO_DNN_OPENBLAS, &blas_what);
    printf("OpenBLAS: %s: %s\n", gaio_status_string(blas_st),
           blas_st == GAIO_OK && blas_what ? blas_what : gaio_last_error());
    const bool blas = blas_st == GAIO_OK && !getenv("GAIO_DNN_CONV_NO_BLAS");
    /* What the caller set is put back at the end. */
    char *no_onednn = getenv("GAIO_DNN_NO_ONEDNN") ? strdup(getenv("GAIO_DNN_NO_ONEDNN")) : NULL;
    char *no_blas = getenv("GAIO_DNN_CONV_NO_BLAS") ? strdup(getenv("GAIO_DNN_CONV_NO_BLAS")) : NULL;
    int passes = 0;
    if (onednn) {
        printf("== host pass %d: oneDNN\n", ++passes);
        e->engine_prefix = "oneDNN ", e->engine_has = NULL;
        run_pass(e);
    } else {
        printf("oneDNN is not there: gaio's own convolution runs every case\n");
    }
    set_env("GAIO_DNN_NO_ONEDNN", "1");
    st = gaio_dnn_library_status(GAIO_DNN_ONEDNN, &what);
    CHECK(st != GAIO_OK); /* switched off */
    printf("with GAIO_DNN_NO_ONEDNN=1, oneDNN: %s: %s\n", gaio_status_string(st), what ? what : "");
    if (blas) {
        printf("== host pass %d: gaio im2col + OpenBLAS sgemm\n", ++passes);
        e->engine_prefix = "gaio ", e->engine_has = "OpenBLAS sgemm";
        run_pass(e);
    }
    set_env("GAIO_DNN_CONV_NO_BLAS", "1");
    printf("== host pass %d: gaio im2col + built-in GEMM loop\n", ++passes);
    e->engine_prefix = "gaio ", e->engine_has = "built-in GEMM loop";
    run_pass(e);
    set_env("GAIO_DNN_NO_ONEDNN", no_onednn);
    set_env("GAIO_DNN_CONV_NO_BLAS", no_blas);
    free(no_onednn);
    free(no_blas);
    printf("host: %d pass%s (%s)\n", passes, passes == 1 ? "" : "es",
           onednn ? "oneDNN and gaio's own" : "gaio's own only: no oneDNN");
}

static void run(int device) {
    env e = {0};
    gaio_device_props props;
    OK(gaio_device_get_props(device, &props));
    e.cuda = props.kind == GAIO_DEVICE_CUDA;
    e.device = device;
    e.rng = test_seed();
    if (!e.cuda) {
        run_host(&e);
    } else {
        const char *what = NULL;
        gaio_status st = gaio_dnn_library_status(GAIO_DNN_CUDNN, &what);
        printf("cuDNN: %s: %s\n", gaio_status_string(st), what ? what : "");
        e.gaps_allowed = !gaps_verified(&props, st == GAIO_OK ? what : NULL);
        printf("sm_%d%d: k_cudnn_gaps %s\n", props.compute_major, props.compute_minor,
               e.gaps_allowed ? "may be refused (not verified on this GPU and cuDNN)"
                              : "must run too (all seen to run on sm_90 with cuDNN 9.14)");
        run_pass(&e);
        printf("cuDNN refused %d f16 runs, every one a known gap (k_cudnn_gaps)\n", e.refused);
        print_names("known gaps refused here", e.refused_names, e.nrefused_names);
        print_names("known gaps that ran here", e.ran_names, e.nran_names);
    }
    test_shutdown();
}
