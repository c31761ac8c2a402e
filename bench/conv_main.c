/* gaio_bench_conv: gaio_conv2d on each convolution shape of ResNet-50 (conv_layers.h),
 * unfused (y = conv(x, w)) and fused (y = relu(conv(x, w) + bias + residual)), on a GPU
 * or on the host. bench/conv_resnet50.py runs it with --json and puts PyTorch / cuDNN
 * (GPU) or onnxruntime (host) and the floors beside it.
 *
 * Each figure is wall-clock time (CLOCK_MONOTONIC) over `iters` back-to-back calls on
 * one stream closed by one gaio_stream_synchronize, divided by iters: the throughput a
 * network's layer sees when the stream never runs dry, and what PyTorch's side times
 * too. The median of REPS such runs is kept. gaio_conv2d_prepare makes each plan before
 * the warm-up, so no figure includes cuDNN's heuristics or runtime compilation.
 *
 * Every layer gets its own stream: a failed op fails its stream for good, and one
 * layer's failure should not hide the others' figures. A failure prints gaio's
 * message, is reported in the layer's JSON line, and makes the exit status 1. */
/* clock_gettime for bench_util.h under -std=c11. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "conv_layers.h"

#define PROG "gaio_bench_conv"
#define REPS 5

typedef struct opts {
    int gpu;
    int batch;
    gaio_dtype dtype;
    int iters;
    int json;
    gaio_tensor_layout layout;
    int f16_accumulation; /* gaio_conv2d_params.f16_accumulation */
    const char *only; /* a substring of the layer names to run; NULL: all */
} opts;

/* One layer's tensors and its stream. */
typedef struct layer_run {
    gaio_stream *s;
    gaio_buffer *bx, *bw, *bb, *br, *by;
    gaio_tensor x, w, bias, res, y;
} layer_run;

typedef struct layer_result {
    double ms, fused_ms;
    gaio_conv2d_info info, fused_info;
    char err[512];
} layer_result;

static void set_err(layer_result *r, gaio_status st, const char *what) {
    snprintf(r->err, sizeof r->err, "%s failed: %s: %s", what, gaio_status_string(st), gaio_last_error());
    fprintf(stderr, PROG ": %s\n", r->err);
}

#define TRY(r, call)                  \
    do {                              \
        gaio_status st_ = (call);     \
        if (st_ != GAIO_OK) {         \
            set_err((r), st_, #call); \
            return -1;                \
        }                             \
    } while (0)

/* n random values in [lo, hi) into dst: drawn in F32 (the only dtype the
 * generator writes) and cast when dtype is F16. Runs on the layer's stream. */
static int fill(gaio_context *ctx, layer_run *lr, gaio_buffer *dst, gaio_dtype dtype, size_t n, float lo, float hi,
                layer_result *r) {
    if (dtype == GAIO_DTYPE_F32) {
        TRY(r, gaio_rng_uniform_f32(lr->s, dst, 0, n, lo, hi));
        return 0;
    }
    gaio_buffer *tmp = NULL;
    TRY(r, gaio_buffer_alloc(ctx, GAIO_MEM_DEVICE, n * sizeof(float), &tmp));
    int64_t shape[1] = {(int64_t)n};
    gaio_tensor src = gaio_tensor_make(tmp, 0, GAIO_DTYPE_F32, 1, shape, GAIO_TENSOR_ROW_MAJOR);
    gaio_tensor out = gaio_tensor_make(dst, 0, dtype, 1, shape, GAIO_TENSOR_ROW_MAJOR);
    gaio_status st = gaio_rng_uniform_f32(lr->s, tmp, 0, n, lo, hi);
    if (st == GAIO_OK) st = gaio_cast(lr->s, &src, &out);
    gaio_buffer_release(tmp); /* the cast in flight keeps it alive */
    if (st != GAIO_OK) {
        set_err(r, st, "filling a tensor (gaio_rng_uniform_f32, gaio_cast)");
        return -1;
    }
    return 0;
}

static int alloc_tensor(gaio_context *ctx, const opts *o, int ndim, const int64_t *shape, gaio_tensor_layout layout,
                        gaio_buffer **buf, gaio_tensor *t, layer_result *r) {
    size_t n = 1;
    for (int i = 0; i < ndim; i++)
        n *= (size_t)shape[i];
    TRY(r, gaio_buffer_alloc(ctx, GAIO_MEM_DEVICE, n * gaio_dtype_size(o->dtype), buf));
    *t = gaio_tensor_make(*buf, 0, o->dtype, ndim, shape, layout);
    return 0;
}

static void layer_free(layer_run *lr) {
    if (lr->s) {
        (void)gaio_stream_synchronize(lr->s); /* a failure is reported already */
        gaio_stream_release(lr->s);
    }
    gaio_buffer_release(lr->bx);
    gaio_buffer_release(lr->bw);
    gaio_buffer_release(lr->bb);
    gaio_buffer_release(lr->br);
    gaio_buffer_release(lr->by);
    memset(lr, 0, sizeof *lr);
}

static int layer_setup(gaio_context *ctx, const opts *o, const conv_layer *l, layer_run *lr, layer_result *r) {
    int p = conv_layer_out(l);
    int64_t xs[4] = {o->batch, l->c, l->h, l->h};
    int64_t ws[4] = {l->k, l->c, l->r, l->r};
    int64_t ys[4] = {o->batch, l->k, p, p};
    int64_t bs[1] = {l->k};
    TRY(r, gaio_stream_create(ctx, 0, 0, &lr->s));
    if (alloc_tensor(ctx, o, 4, xs, o->layout, &lr->bx, &lr->x, r) ||
        alloc_tensor(ctx, o, 4, ws, o->layout, &lr->bw, &lr->w, r) ||
        alloc_tensor(ctx, o, 1, bs, GAIO_TENSOR_ROW_MAJOR, &lr->bb, &lr->bias, r) ||
        alloc_tensor(ctx, o, 4, ys, o->layout, &lr->br, &lr->res, r) ||
        alloc_tensor(ctx, o, 4, ys, o->layout, &lr->by, &lr->y, r))
        return -1;
    /* Weights scaled by the fan-in keep the sums near 1, far from F16's range. */
    float wscale = 1.0f / (float)(l->c * l->r * l->r);
    size_t nx = (size_t)xs[0] * (size_t)xs[1] * (size_t)xs[2] * (size_t)xs[3];
    size_t nw = (size_t)ws[0] * (size_t)ws[1] * (size_t)ws[2] * (size_t)ws[3];
    size_t ny = (size_t)ys[0] * (size_t)ys[1] * (size_t)ys[2] * (size_t)ys[3];
    if (fill(ctx, lr, lr->bx, o->dtype, nx, -1.0f, 1.0f, r) ||
        fill(ctx, lr, lr->bw, o->dtype, nw, -wscale, wscale, r) ||
        fill(ctx, lr, lr->bb, o->dtype, (size_t)l->k, -0.1f, 0.1f, r) ||
        fill(ctx, lr, lr->br, o->dtype, ny, -1.0f, 1.0f, r))
        return -1;
    TRY(r, gaio_stream_synchronize(lr->s));
    return 0;
}

/* Median ms per call of `iters` back-to-back calls, over REPS runs. */
static int time_conv(const opts *o, layer_run *lr, const gaio_conv2d_params *pr, int fused, double *ms,
                     layer_result *r) {
    const gaio_tensor *b = fused ? &lr->bias : NULL, *res = fused ? &lr->res : NULL;
    int warm = o->iters < 3 ? 3 : o->iters / 4;
    for (int i = 0; i < warm; i++)
        TRY(r, gaio_conv2d(lr->s, &lr->x, &lr->w, b, res, &lr->y, pr));
    TRY(r, gaio_stream_synchronize(lr->s));
    double v[REPS];
    for (int k = 0; k < REPS; k++) {
        uint64_t t0 = bench_now_ns();
        for (int i = 0; i < o->iters; i++)
            TRY(r, gaio_conv2d(lr->s, &lr->x, &lr->w, b, res, &lr->y, pr));
        TRY(r, gaio_stream_synchronize(lr->s));
        v[k] = (double)(bench_now_ns() - t0) / 1e6 / o->iters;
    }
    *ms = bench_median(v, REPS);
    return 0;
}

static int run_layer(gaio_context *ctx, const opts *o, const conv_layer *l, layer_result *r) {
    layer_run lr;
    memset(&lr, 0, sizeof lr);
    int rc = layer_setup(ctx, o, l, &lr, r);
    static const gaio_unary_params relu = {GAIO_UNARY_RELU, 0.0f, 0.0f};
    gaio_conv2d_params plain;
    memset(&plain, 0, sizeof plain);
    plain.stride[0] = plain.stride[1] = l->stride;
    plain.f16_accumulation = o->f16_accumulation;
    for (int i = 0; i < 4; i++)
        plain.pad[i] = l->pad;
    gaio_conv2d_params fused = plain;
    fused.act = &relu;
    if (rc == 0) {
        gaio_status st = gaio_conv2d_prepare(lr.s, &lr.x, &lr.w, NULL, NULL, &lr.y, &plain, &r->info);
        if (st == GAIO_OK)
            st = gaio_conv2d_prepare(lr.s, &lr.x, &lr.w, &lr.bias, &lr.res, &lr.y, &fused, &r->fused_info);
        if (st != GAIO_OK) {
            set_err(r, st, "gaio_conv2d_prepare");
            rc = -1;
        }
    }
    if (rc == 0) rc = time_conv(o, &lr, &plain, 0, &r->ms, r);
    if (rc == 0) rc = time_conv(o, &lr, &fused, 1, &r->fused_ms, r);
    layer_free(&lr);
    return rc;
}

/* s as a JSON string body (quotes and control characters escaped). */
static void json_str(FILE *out, const char *s) {
    fputc('"', out);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(out, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(out, "\\u%04x", ch);
        else
            fputc(ch, out);
    }
    fputc('"', out);
}

static void print_json(const opts *o, const conv_layer *l, const layer_result *r, int ok) {
    printf("{\"layer\":");
    json_str(stdout, l->name);
    printf(",\"C\":%d,\"K\":%d,\"R\":%d,\"S\":%d,\"stride\":%d,\"pad\":%d,\"H\":%d,\"W\":%d,\"P\":%d,\"Q\":%d,"
           "\"N\":%d,\"groups\":1,\"count\":%d,\"residual\":%d,\"dtype\":\"%s\",\"layout\":\"%s\",\"device\":\"%s\"",
           l->c, l->k, l->r, l->r, l->stride, l->pad, l->h, l->h, conv_layer_out(l), conv_layer_out(l), o->batch,
           l->count, l->residual, o->dtype == GAIO_DTYPE_F16 ? "f16" : "f32",
           o->layout == GAIO_TENSOR_NHWC ? "nhwc" : "nchw", o->gpu ? "gpu" : "host");
    if (ok) {
        printf(",\"gaio_ms\":%.6f,\"gaio_fused_ms\":%.6f,\"engine\":", r->ms, r->fused_ms);
        json_str(stdout, r->info.engine);
        printf(",\"fused_engine\":");
        json_str(stdout, r->fused_info.engine);
        printf(",\"fused\":%d,\"workspace\":%zu,\"fused_workspace\":%zu", r->fused_info.fused, r->info.workspace,
               r->fused_info.workspace);
    } else {
        printf(",\"error\":");
        json_str(stdout, r->err);
    }
    printf("}\n");
    fflush(stdout);
}

static void print_text(const conv_layer *l, const layer_result *r, int ok) {
    if (!ok) {
        printf("%-20s %5d %3d  ERROR: %s\n", l->name, l->count, l->residual, r->err);
    } else {
        printf("%-20s %5d %3d %10.4f %10.4f %5s  %s | %s\n", l->name, l->count, l->residual, r->ms, r->fused_ms,
               r->fused_info.fused ? "yes" : "no", r->info.engine, r->fused_info.engine);
    }
    fflush(stdout);
}

static int usage(void) {
    fprintf(stderr,
            "usage: " PROG " [--gpu|--host] [--batch N] [--dtype f16|f32] [--layout nhwc|nchw] [--iters N]\n"
            "       [--f16-accumulation]\n"
            "       [--layer SUBSTRING] [--json]\n"
            "  defaults: --gpu --batch 32 --dtype f16 (with --host: --batch 1 --dtype f32), --layout nhwc,\n"
            "  --iters 20. Times gaio_conv2d on ResNet-50's convolutions, unfused and fused\n"
            "  (bias + residual + ReLU), median of %d runs of iters back-to-back calls.\n",
            REPS);
    return 2;
}

static int parse(int argc, char **argv, opts *o) {
    int batch = 0, iters = 20, dtype = 0;
    o->gpu = 1;
    o->json = 0;
    o->layout = GAIO_TENSOR_NHWC;
    o->only = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--gpu")) {
            o->gpu = 1;
        } else if (!strcmp(a, "--host")) {
            o->gpu = 0;
        } else if (!strcmp(a, "--json")) {
            o->json = 1;
        } else if (!strcmp(a, "--batch") && v) {
            batch = atoi(v), i++;
            if (batch < 1) return usage();
        } else if (!strcmp(a, "--iters") && v) {
            iters = atoi(v), i++;
            if (iters < 1) return usage();
        } else if (!strcmp(a, "--dtype") && v) {
            if (!strcmp(v, "f16"))
                dtype = GAIO_DTYPE_F16;
            else if (!strcmp(v, "f32"))
                dtype = GAIO_DTYPE_F32;
            else
                return usage();
            i++;
        } else if (!strcmp(a, "--f16-accumulation")) {
            o->f16_accumulation = 1;
        } else if (!strcmp(a, "--layout") && v) {
            if (!strcmp(v, "nhwc"))
                o->layout = GAIO_TENSOR_NHWC;
            else if (!strcmp(v, "nchw"))
                o->layout = GAIO_TENSOR_ROW_MAJOR;
            else
                return usage();
            i++;
        } else if (!strcmp(a, "--layer") && v) {
            o->only = v, i++;
        } else {
            return usage();
        }
    }
    o->batch = batch ? batch : o->gpu ? 32 : 1;
    o->dtype = dtype ? (gaio_dtype)dtype : o->gpu ? GAIO_DTYPE_F16 : GAIO_DTYPE_F32;
    o->iters = iters;
    return 0;
}

int main(int argc, char **argv) {
    opts o;
    int rc = parse(argc, argv, &o);
    if (rc) return rc;

    int dev = 0;
    gaio_device_props props;
    if (o.gpu) {
        /* No GPU is a failure here, not a skip: the driver asked for GPU figures. */
        dev = bench_find_cuda_device(PROG, stderr, PROG, &props);
        if (dev < 0) {
            fprintf(stderr, PROG ": --gpu needs a CUDA device (--host runs on the CPU)\n");
            return 1;
        }
    } else if (bench_ck(PROG, gaio_device_get_props(0, &props), "gaio_device_get_props") != 0) {
        return 1;
    }
    gaio_context *ctx = NULL;
    if (bench_ck(PROG, gaio_context_create(dev, NULL, &ctx), "gaio_context_create") != 0) return 1;
    /* The library gaio's convolutions run on, for the driver's header. */
    const char *lib = "";
    gaio_status lst = gaio_dnn_library_status(o.gpu ? GAIO_DNN_CUDNN : GAIO_DNN_ONEDNN, &lib);
    char libtext[256];
    snprintf(libtext, sizeof libtext, "%s%s%s", lst == GAIO_OK ? "" : gaio_status_string(lst),
             lst == GAIO_OK ? "" : ": ", lib ? lib : "");
    if (o.json) {
        printf("{\"meta\":1,\"device_name\":");
        json_str(stdout, props.name);
        printf(",\"library\":");
        json_str(stdout, libtext);
        printf(",\"iters\":%d,\"reps\":%d}\n", o.iters, REPS);
    } else {
        printf("%s\n", libtext);
        printf("gaio_conv2d on ResNet-50's convolutions: %s, batch %d, %s %s, %d iters x %d runs (median)\n",
               props.name, o.batch, o.dtype == GAIO_DTYPE_F16 ? "f16" : "f32",
               o.layout == GAIO_TENSOR_NHWC ? "NHWC" : "NCHW", o.iters, REPS);
        printf("%-20s %5s %3s %10s %10s %5s  %s\n", "layer", "count", "res", "ms", "fused ms", "fused",
               "engine | fused engine");
    }
    int failed = 0, ran = 0;
    double sum = 0.0, fused_sum = 0.0;
    for (size_t i = 0; i < CONV_LAYER_COUNT; i++) {
        const conv_layer *l = &conv_layers[i];
        if (o.only && !strstr(l->name, o.only)) continue;
        layer_result r;
        memset(&r, 0, sizeof r);
        int ok = run_layer(ctx, &o, l, &r) == 0;
        failed |= !ok;
        ran++;
        if (ok) {
            sum += l->count * r.ms;
            fused_sum += l->count * r.fused_ms;
        }
        if (o.json)
            print_json(&o, l, &r, ok);
        else
            print_text(l, &r, ok);
    }
    if (!o.json && ran)
        printf("%-20s %5s %3s %10.4f %10.4f%s\n", "sum x count", "", "", sum, fused_sum,
               failed ? "  (failed layers left out)" : "");
    if (!ran) {
        fprintf(stderr, PROG ": no layer matches --layer %s\n", o.only);
        failed = 1;
    }
    if (bench_ck(PROG, gaio_context_release(ctx), "gaio_context_release") != 0) failed = 1;
    return failed ? 1 : 0;
}
