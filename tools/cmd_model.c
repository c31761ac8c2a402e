/* `gaio model MODEL.onnx [options]`: trtexec's everyday job.
 *
 * Loads the model (or, with --load, a saved engine), builds an engine for one device
 * with the options given, prints the graph's inputs and outputs (the model's shapes,
 * symbolic dimensions by name, and the engine's), the plan and each of its steps, and
 * the build (or load) time; --save writes the engine. Then it times runs the way a
 * program would make them: one execution context on one stream, inputs filled once
 * with seeded random values in device buffers (copied up from pinned memory; on the
 * host device both are host memory), outputs in device buffers, a warm-up, then N
 * runs each waited on (latency percentiles, throughput); then two execution contexts
 * of the same engine on two streams, each driven by its own host thread, for the
 * throughput of concurrent runs. The copies of inputs and outputs are not timed. */
#include "cmd_model.h"
#include "cli_util.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gaio/gaio.h"

#define MAX_SHAPES 64
#define MAX_ITERATIONS 10000000L
#define WARMUP_SECONDS 0.2 /* the default warm-up: runs until this long has passed ... */
#define WARMUP_MIN_RUNS 2   /* ... and at least this many */
#define WARMUP_MAX_RUNS 1000

typedef struct opts {
    const char *model_path, *load_path, *save_path;
    int64_t batch;
    gaio_engine_shape shapes[MAX_SHAPES];
    char *shape_names[MAX_SHAPES];
    int32_t nshapes;
    gaio_model_precision precision;
    gaio_model_layout layout;
    const char *device_arg;
    long iterations, warmup; /* warmup -1: by time */
    bool no_tune, seed_set;
    uint64_t seed;
    const char *build_opt; /* the first option that only a build takes (with --load: an error) */
} opts;

/* One execution context with its stream and output buffers, for the timing. */
typedef struct runner {
    gaio_model_exec *x;
    gaio_stream *s;
    gaio_buffer **out_bufs;
    gaio_tensor *outs;
    const gaio_tensor *ins;
    int32_t nin, nout;
    long n;        /* runs to make */
    double *lat;   /* seconds of each (may be NULL) */
    double wall;   /* seconds of all */
    gaio_status st;
    char err[512]; /* the failed call and gaio's message */
} runner;

typedef struct job {
    opts o;
    int device;
    gaio_device_props props;
    gaio_context *ctx;
    gaio_model *model;    /* ours when loaded from the ONNX file; else the engine's (borrowed) */
    bool own_model;
    double model_seconds; /* gaio_model_load's */
    gaio_engine *engine;
    gaio_engine_info info;
    int32_t nin, nout;
    gaio_model_io *in_io, *out_io; /* the engine's shapes */
    gaio_buffer **in_bufs;
    gaio_tensor *ins;
    runner r[2];
} job;

/* One line on stderr, whatever the parts hold. */
static void eline(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    cli_veline("model", fmt, ap);
    va_end(ap);
}

static int usage_error(const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    eline("%s (gaio model --help shows the usage)", msg);
    return 2;
}

/* A gaio call failed: gaio's message says what (for a refused model: the node and its
 * operator). */
static int failed(gaio_status st, const char *what) {
    const char *why = gaio_last_error();
    if (why && *why && !strncmp(why, what, strlen(what))) /* the message names the call already */
        eline("%s (%s)", why, gaio_status_string(st));
    else
        eline("%s: %s (%s)", what, why && *why ? why : "failed", gaio_status_string(st));
    return 1;
}

void gaio_cmd_model_usage(FILE *out, const char *lead) {
    fprintf(out,
            "%smodel MODEL.onnx [--batch N | --shape NAME=DIMS ...] [--precision auto|model|f16|f16-fast]\n"
            "             [--layout auto|nchw|nhwc] [--device host|gpu|N] [--save FILE]\n"
            "             [--load FILE] [--iterations N] [--warmup N] [--seed S] [--no-tune]\n"
            "             build an engine of an ONNX model for one device and time it (trtexec's\n"
            "             job): prints the inputs and outputs (symbolic dimensions named, and the\n"
            "             engine's shapes), the plan (steps, batch norms folded, adds and\n"
            "             activations fused, precision, layout, weight and arena bytes, CUDA\n"
            "             graph) and each step's operators and kernel, the build time; then the\n"
            "             latency (p50, p90, p99, min) and throughput of N runs (default 100)\n"
            "             of one execution context with random inputs, each waited on, after a\n"
            "             warm-up, and the throughput of 2 contexts on 2 streams at once.\n"
            "             --batch: the symbolic dimensions' value (default 1); --shape: an\n"
            "             input's whole shape, as input=4x3x224x224 (repeatable; --batch then\n"
            "             serves the inputs not named); --precision: auto = f16 on a GPU, the\n"
            "             model's on the host; f16-fast = f16 with convolutions that may sum in\n"
            "             f16 (PyTorch's default); --layout: of 4-D intermediates (auto = NHWC);\n"
            "             --device: host (= 0), gpu (the first GPU) or an index of gaio info\n"
            "             (default: the first GPU, else the host); --save FILE: write the\n"
            "             engine; --load FILE: load a saved engine instead of building one\n"
            "             (MODEL.onnx may then be omitted; it is not read); --iterations 0:\n"
            "             no timing; --warmup N: warm-up runs (default: 200 ms, at least 2);\n"
            "             --seed: of the random inputs (default: from the clock; printed);\n"
            "             --no-tune: cuDNN's first plan per convolution (a faster build)\n",
            lead);
}

/* ---- parsing ------------------------------------------------------------------ */

static bool parse_long(const char *s, long lo, long hi, long *out) {
    if (!s || !*s || !((*s >= '0' && *s <= '9') || *s == '+')) return false;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < lo || v > hi) return false;
    *out = v;
    return true;
}

/* "4x3x224x224" (or with commas). */
static bool parse_dims(const char *s, gaio_engine_shape *sh) {
    sh->ndim = 0;
    const char *p = s;
    if (!*p) return false;
    for (;;) {
        if (sh->ndim == GAIO_MODEL_MAX_NDIM || !(*p >= '0' && *p <= '9')) return false;
        char *end;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (errno || end == p || v < 1 || v > (1LL << 40)) return false;
        sh->dims[sh->ndim++] = v;
        if (!*end) return true;
        if (*end != 'x' && *end != 'X' && *end != ',') return false;
        p = end + 1;
    }
}

static int parse(opts *o, int argc, char **argv) {
    o->iterations = 100, o->warmup = -1;
    for (int i = 1; i < argc; i++) /* --help wins wherever it is */
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            gaio_cmd_model_usage(stdout, "usage: gaio ");
            return -1;
        }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] != '-' || !a[1]) {
            if (o->model_path) return usage_error("unexpected argument '%s': one model at a time", a);
            o->model_path = a;
            continue;
        }
        if (!strcmp(a, "--no-tune")) {
            o->no_tune = true;
            if (!o->build_opt) o->build_opt = a;
            continue;
        }
        static const char *const with_value[] = {"--batch", "--shape",      "--precision", "--layout", "--device",
                                                 "--save",  "--load",       "--iterations", "--warmup", "--seed"};
        size_t k = 0, nk = sizeof with_value / sizeof with_value[0];
        while (k < nk && strcmp(a, with_value[k])) k++;
        if (k == nk) return usage_error("unknown option '%s'", a);
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v || (v[0] == '-' && v[1] == '-')) return usage_error("%s needs a value", a);
        i++;
        long n;
        if (!strcmp(a, "--batch")) {
            if (!parse_long(v, 1, 1L << 20, &n)) return usage_error("--batch '%s' is not a number from 1 to %ld", v, 1L << 20);
            o->batch = n;
            if (!o->build_opt) o->build_opt = a;
        } else if (!strcmp(a, "--shape")) {
            const char *eq = strrchr(v, '=');
            if (!eq || eq == v) return usage_error("--shape '%s' is not NAME=DIMS, as in input=4x3x224x224", v);
            if (o->nshapes == MAX_SHAPES) return usage_error("more than %d --shape options", MAX_SHAPES);
            gaio_engine_shape *sh = &o->shapes[o->nshapes];
            if (!parse_dims(eq + 1, sh))
                return usage_error("--shape '%s': '%s' is not dimensions from 1 up, as in 4x3x224x224 (at most %d)", v,
                                   eq + 1, GAIO_MODEL_MAX_NDIM);
            size_t len = (size_t)(eq - v);
            char *name = malloc(len + 1);
            if (!name) return usage_error("out of memory");
            memcpy(name, v, len);
            name[len] = 0;
            for (int32_t s = 0; s < o->nshapes; s++)
                if (!strcmp(o->shape_names[s], name)) {
                    free(name);
                    return usage_error("--shape gives input '%.*s' twice", (int)len, v);
                }
            o->shape_names[o->nshapes] = name;
            sh->name = name;
            o->nshapes++;
            if (!o->build_opt) o->build_opt = a;
        } else if (!strcmp(a, "--precision")) {
            if (!strcmp(v, "auto")) o->precision = GAIO_MODEL_PRECISION_AUTO;
            else if (!strcmp(v, "model")) o->precision = GAIO_MODEL_PRECISION_MODEL;
            else if (!strcmp(v, "f16")) o->precision = GAIO_MODEL_PRECISION_F16;
            else if (!strcmp(v, "f16-fast")) o->precision = GAIO_MODEL_PRECISION_F16_FAST;
            else return usage_error("--precision '%s' is not auto, model, f16 or f16-fast", v);
            if (!o->build_opt) o->build_opt = a;
        } else if (!strcmp(a, "--layout")) {
            if (!strcmp(v, "auto")) o->layout = GAIO_MODEL_LAYOUT_AUTO;
            else if (!strcmp(v, "nchw")) o->layout = GAIO_MODEL_LAYOUT_NCHW;
            else if (!strcmp(v, "nhwc")) o->layout = GAIO_MODEL_LAYOUT_NHWC;
            else return usage_error("--layout '%s' is not auto, nchw or nhwc", v);
            if (!o->build_opt) o->build_opt = a;
        } else if (!strcmp(a, "--device")) {
            o->device_arg = v;
        } else if (!strcmp(a, "--save")) {
            o->save_path = v;
        } else if (!strcmp(a, "--load")) {
            o->load_path = v;
        } else if (!strcmp(a, "--iterations")) {
            if (!parse_long(v, 0, MAX_ITERATIONS, &o->iterations))
                return usage_error("--iterations '%s' is not a number from 0 to %ld", v, MAX_ITERATIONS);
        } else if (!strcmp(a, "--warmup")) {
            if (!parse_long(v, 0, MAX_ITERATIONS, &o->warmup))
                return usage_error("--warmup '%s' is not a number from 0 to %ld", v, MAX_ITERATIONS);
        } else if (!strcmp(a, "--seed")) {
            char *end;
            errno = 0;
            unsigned long long s = strtoull(v, &end, 0);
            if (errno || end == v || *end || v[0] == '-') return usage_error("--seed '%s' is not a number", v);
            o->seed = s, o->seed_set = true;
        }
    }
    if (!o->model_path && !o->load_path) return usage_error("no model given (MODEL.onnx, or --load FILE)");
    if (o->load_path && o->build_opt)
        return usage_error("%s applies to a build; --load reads an engine built with its options", o->build_opt);
    return 0;
}

/* ---- the device ---------------------------------------------------------------- */

static int pick_device(job *j) {
    int count = 0;
    gaio_status st = gaio_device_count(&count);
    if (st != GAIO_OK) return failed(st, "gaio_device_count");
    int first_gpu = -1;
    for (int d = 0; d < count && first_gpu < 0; d++) {
        gaio_device_props p;
        if (gaio_device_get_props(d, &p) == GAIO_OK && p.kind == GAIO_DEVICE_CUDA) first_gpu = d;
    }
    const char *v = j->o.device_arg;
    long n;
    if (!v) {
        j->device = first_gpu >= 0 ? first_gpu : 0;
    } else if (!strcmp(v, "host")) {
        j->device = 0;
    } else if (!strcmp(v, "gpu")) {
        if (first_gpu < 0) {
            eline("--device gpu: no CUDA device here (gaio info lists the devices)");
            return 1;
        }
        j->device = first_gpu;
    } else if (parse_long(v, 0, 1 << 20, &n)) {
        if (n >= count)
            return usage_error("--device %ld: no such device (devices here: 0..%d, 0 the host; see gaio info)", n,
                               count - 1);
        j->device = (int)n;
    } else {
        return usage_error("--device '%s' is not host, gpu or a device index (see gaio info)", v);
    }
    if ((st = gaio_device_get_props(j->device, &j->props)) != GAIO_OK) return failed(st, "gaio_device_get_props");
    if ((st = gaio_context_create(j->device, NULL, &j->ctx)) != GAIO_OK) return failed(st, "gaio_context_create");
    return 0;
}

/* ---- printing ------------------------------------------------------------------ */

static const char *fmt_bytes(size_t bytes, char *buf, size_t size) {
    static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024.0 && u < 4) v /= 1024.0, u++;
    if (u == 0) snprintf(buf, size, "%zu B", bytes);
    else snprintf(buf, size, "%.1f %s", v, units[u]);
    return buf;
}

static const char *precision_name(const gaio_engine_info *in) {
    if (in->f16_accumulation) return "f16 (convolutions may sum in f16: f16-fast)";
    return in->dtype == GAIO_DTYPE_F16 ? "f16" : in->dtype == GAIO_DTYPE_F32 ? "f32" : gaio_dtype_name(in->dtype);
}

static const char *layout_name(gaio_model_layout l) {
    return l == GAIO_MODEL_LAYOUT_NCHW ? "NCHW" : l == GAIO_MODEL_LAYOUT_NHWC ? "NHWC" : "auto";
}

/* "[N, 3, 224, 224]": the model's dimensions, symbolic ones by name. */
static void fmt_model_shape(const gaio_model_io *io, char *buf, size_t size) {
    size_t at = 0;
    at += (size_t)snprintf(buf + at, size - at, "[");
    for (int32_t d = 0; d < io->ndim && at < size; d++) {
        const char *sep = d ? ", " : "";
        if (io->shape[d] >= 0)
            at += (size_t)snprintf(buf + at, size - at, "%s%lld", sep, (long long)io->shape[d]);
        else
            at += (size_t)snprintf(buf + at, size - at, "%s%s", sep,
                                   io->dim_names[d] && *io->dim_names[d] ? io->dim_names[d] : "?");
    }
    if (at < size) snprintf(buf + at, size - at, "]");
}

static void fmt_engine_shape(const gaio_model_io *io, char *buf, size_t size) {
    size_t at = 0;
    at += (size_t)snprintf(buf + at, size - at, "[");
    for (int32_t d = 0; d < io->ndim && at < size; d++)
        at += (size_t)snprintf(buf + at, size - at, "%s%lld", d ? ", " : "", (long long)io->shape[d]);
    if (at < size) snprintf(buf + at, size - at, "]");
}

static int print_io(job *j) {
    gaio_model_summary sum;
    gaio_status st = gaio_model_summarize(j->model, &sum);
    if (st != GAIO_OK) return failed(st, "gaio_model_summarize");
    j->nin = sum.inputs, j->nout = sum.outputs;
    j->in_io = calloc((size_t)(j->nin ? j->nin : 1), sizeof *j->in_io);
    j->out_io = calloc((size_t)(j->nout ? j->nout : 1), sizeof *j->out_io);
    if (!j->in_io || !j->out_io) {
        eline("out of host memory");
        return 1;
    }
    char b[64];
    if (j->o.load_path)
        printf("graph: from the engine file, opset %lld, %d nodes%s%s%s\n", (long long)sum.opset, sum.nodes,
               j->o.model_path ? " (" : "", j->o.model_path ? j->o.model_path : "",
               j->o.model_path ? " not read: --load)" : "");
    else
        printf("model: %s, loaded in %.3f s: ir %lld, opset %lld, %d nodes, %d initializers (%s)%s%s\n",
               j->o.model_path, j->model_seconds, (long long)sum.ir_version, (long long)sum.opset, sum.nodes,
               sum.initializers, fmt_bytes(sum.weight_bytes, b, sizeof b),
               sum.producer && *sum.producer ? ", producer " : "", sum.producer ? sum.producer : "");
    /* Column widths over every input and output. */
    int wname = 4, wmodel = 5;
    for (int pass = 0; pass < 2; pass++) {
        for (int k = 0; k < 2; k++) {
            int32_t n = k ? j->nout : j->nin;
            if (pass == 1) printf("%s:\n", k ? "outputs" : "inputs");
            for (int32_t i = 0; i < n; i++) {
                gaio_model_io mio, eio;
                st = k ? gaio_model_output(j->model, i, &mio) : gaio_model_input(j->model, i, &mio);
                if (st != GAIO_OK) return failed(st, k ? "gaio_model_output" : "gaio_model_input");
                st = k ? gaio_engine_output(j->engine, i, &eio) : gaio_engine_input(j->engine, i, &eio);
                if (st != GAIO_OK) return failed(st, k ? "gaio_engine_output" : "gaio_engine_input");
                (k ? j->out_io : j->in_io)[i] = eio;
                char ms[256], es[256];
                fmt_model_shape(&mio, ms, sizeof ms);
                fmt_engine_shape(&eio, es, sizeof es);
                if (pass == 0) {
                    int ln = (int)strlen(mio.name ? mio.name : ""), lm = (int)strlen(ms);
                    if (ln > wname) wname = ln;
                    if (lm > wmodel) wmodel = lm;
                } else {
                    printf("  %-*s  %-3s  model %-*s  engine %s\n", wname, mio.name ? mio.name : "",
                           gaio_dtype_name(mio.dtype), wmodel, ms, es);
                }
            }
        }
    }
    return 0;
}

static int print_plan(job *j, double wall) {
    char wb[64], ab[64];
    const gaio_engine_info *in = &j->info;
    const char *kind = j->props.kind == GAIO_DEVICE_CUDA ? "cuda" : "host";
    if (in->loaded)
        printf("engine: loaded from %s in %.3f s on device %d (%s: %s)\n", j->o.load_path, wall, j->device, kind,
               j->props.name);
    else
        printf("engine: built in %.3f s on device %d (%s: %s)%s\n", in->build_seconds, j->device, kind,
               j->props.name, j->o.no_tune ? ", --no-tune" : "");
    char batch[96];
    if (in->batch > 0) snprintf(batch, sizeof batch, "batch %lld", (long long)in->batch);
    else snprintf(batch, sizeof batch, "batch fixed by the model%s", j->o.batch ? " (--batch not used)" : "");
    printf("  %s, precision %s, layout %s, CUDA graph %s\n", batch, precision_name(in), layout_name(in->layout),
           in->cuda_graph ? "yes (one replay per run)" : "no");
    printf("  %d node%s -> %d step%s (%d convolution%s): %d batch norm%s folded, %d add%s and %d activation%s "
           "fused\n",
           in->nodes, in->nodes == 1 ? "" : "s", in->steps, in->steps == 1 ? "" : "s", in->convs, in->convs == 1 ? "" : "s", in->folded_bn, in->folded_bn == 1 ? "" : "s",
           in->fused_add, in->fused_add == 1 ? "" : "s", in->fused_act, in->fused_act == 1 ? "" : "s");
    printf("  weights %s (once per engine), arena %s (per execution context)\n",
           fmt_bytes(in->weight_bytes, wb, sizeof wb), fmt_bytes(in->arena_bytes, ab, sizeof ab));
    /* The steps, in columns. */
    gaio_engine_step *steps = calloc((size_t)(in->steps > 0 ? in->steps : 1), sizeof *steps);
    if (!steps) {
        eline("out of host memory");
        return 1;
    }
    int wops = 3, wname = 4;
    for (int32_t i = 0; i < in->steps; i++) {
        gaio_status st = gaio_engine_get_step(j->engine, i, &steps[i]);
        if (st != GAIO_OK) {
            free(steps);
            return failed(st, "gaio_engine_get_step");
        }
        steps[i].ops[sizeof steps[i].ops - 1] = 0, steps[i].kernel[sizeof steps[i].kernel - 1] = 0;
        int lo = (int)strlen(steps[i].ops), ln = steps[i].name ? (int)strlen(steps[i].name) : 0;
        if (lo > wops) wops = lo;
        if (ln > wname) wname = ln;
    }
    if (wname > 48) wname = 48;
    printf("steps:\n  %4s  %-*s  %-*s  %s\n", "step", wops, "ops", wname, "name", "kernel");
    for (int32_t i = 0; i < in->steps; i++)
        printf("  %4d  %-*s  %-*s  %s\n", i, wops, steps[i].ops, wname,
               steps[i].name && *steps[i].name ? steps[i].name : "-", steps[i].kernel[0] ? steps[i].kernel : "-");
    free(steps);
    return 0;
}

/* ---- random inputs --------------------------------------------------------------- */

static uint64_t splitmix64(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* f32 -> f16, round to nearest even (the values here are finite, in [-1, 1)). */
static uint16_t float_to_half(float f) {
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint32_t sign = (x >> 16) & 0x8000u;
    int32_t e = (int32_t)((x >> 23) & 0xff) - 127 + 15;
    uint32_t m = x & 0x7fffffu;
    if (e >= 31) return (uint16_t)(sign | 0x7c00u);
    if (e <= 0) {
        if (e < -10) return (uint16_t)sign;
        m |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - e), h = m >> shift, rest = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rest > half || (rest == half && (h & 1))) h++;
        return (uint16_t)(sign | h);
    }
    uint32_t h = ((uint32_t)e << 10) | (m >> 13), rest = m & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1))) h++;
    return (uint16_t)(sign | h);
}

static size_t io_elements(const gaio_model_io *io) {
    size_t n = 1;
    for (int32_t d = 0; d < io->ndim; d++) n *= (size_t)(io->shape[d] > 0 ? io->shape[d] : 1);
    return n;
}

/* Device buffers of the inputs, filled with uniform values in [-1, 1) through pinned
 * memory; the tensors that name them. */
static int make_inputs(job *j) {
    j->in_bufs = calloc((size_t)(j->nin ? j->nin : 1), sizeof *j->in_bufs);
    j->ins = calloc((size_t)(j->nin ? j->nin : 1), sizeof *j->ins);
    if (!j->in_bufs || !j->ins) {
        eline("out of host memory");
        return 1;
    }
    gaio_stream *s = NULL;
    gaio_status st = gaio_context_default_stream(j->ctx, &s);
    if (st != GAIO_OK) return failed(st, "gaio_context_default_stream");
    uint64_t state = j->o.seed;
    for (int32_t i = 0; i < j->nin; i++) {
        const gaio_model_io *io = &j->in_io[i];
        if (io->ndim > GAIO_TENSOR_MAX_NDIM) {
            eline("input '%s' has %d dimensions; gaio_model_run's tensors take at most %d", io->name, io->ndim,
                  GAIO_TENSOR_MAX_NDIM);
            return 1;
        }
        size_t n = io_elements(io), bytes = n * gaio_dtype_size(io->dtype);
        gaio_buffer *stage = NULL;
        void *host = NULL;
        st = gaio_buffer_alloc(j->ctx, GAIO_MEM_PINNED, bytes, &stage);
        if (st == GAIO_OK) st = gaio_buffer_host_ptr(stage, &host);
        if (st != GAIO_OK) {
            gaio_buffer_release(stage);
            return failed(st, "pinned memory for the inputs");
        }
        for (size_t k = 0; k < n; k++) {
            float v = (float)(splitmix64(&state) >> 40) * (1.0f / 16777216.0f) * 2.0f - 1.0f;
            if (io->dtype == GAIO_DTYPE_F16) ((uint16_t *)host)[k] = float_to_half(v);
            else ((float *)host)[k] = v;
        }
        st = gaio_buffer_alloc(j->ctx, GAIO_MEM_DEVICE, bytes, &j->in_bufs[i]);
        if (st == GAIO_OK) st = gaio_memcpy_async(s, j->in_bufs[i], 0, stage, 0, bytes);
        if (st == GAIO_OK) st = gaio_stream_synchronize(s);
        gaio_buffer_release(stage);
        if (st != GAIO_OK) return failed(st, "the inputs' copy to the device");
        j->ins[i] = gaio_tensor_make(j->in_bufs[i], 0, io->dtype, io->ndim, io->shape, GAIO_TENSOR_ROW_MAJOR);
    }
    return 0;
}

static int make_runner(job *j, runner *r) {
    r->nin = j->nin, r->nout = j->nout, r->ins = j->ins;
    r->out_bufs = calloc((size_t)(j->nout ? j->nout : 1), sizeof *r->out_bufs);
    r->outs = calloc((size_t)(j->nout ? j->nout : 1), sizeof *r->outs);
    if (!r->out_bufs || !r->outs) {
        eline("out of host memory");
        return 1;
    }
    gaio_status st = gaio_engine_create_exec(j->engine, &r->x);
    if (st != GAIO_OK) return failed(st, "gaio_engine_create_exec");
    if ((st = gaio_stream_create(j->ctx, 0, 0, &r->s)) != GAIO_OK) return failed(st, "gaio_stream_create");
    for (int32_t i = 0; i < j->nout; i++) {
        const gaio_model_io *io = &j->out_io[i];
        if (io->ndim > GAIO_TENSOR_MAX_NDIM) {
            eline("output '%s' has %d dimensions; gaio_model_run's tensors take at most %d", io->name, io->ndim,
                  GAIO_TENSOR_MAX_NDIM);
            return 1;
        }
        size_t bytes = io_elements(io) * gaio_dtype_size(io->dtype);
        if ((st = gaio_buffer_alloc(j->ctx, GAIO_MEM_DEVICE, bytes, &r->out_bufs[i])) != GAIO_OK)
            return failed(st, "gaio_buffer_alloc (outputs)");
        r->outs[i] = gaio_tensor_make(r->out_bufs[i], 0, io->dtype, io->ndim, io->shape, GAIO_TENSOR_ROW_MAJOR);
    }
    return 0;
}

static void free_runner(runner *r) {
    if (r->x) gaio_model_exec_release(r->x);
    for (int32_t i = 0; r->out_bufs && i < r->nout; i++) gaio_buffer_release(r->out_bufs[i]);
    if (r->s) gaio_stream_release(r->s);
    free(r->out_bufs), free(r->outs), free(r->lat);
}

/* One run, waited on. */
static gaio_status run_once(runner *r) {
    gaio_future *f = NULL;
    gaio_status st = gaio_model_run(r->x, r->s, r->ins, r->nin, r->outs, r->nout, &f);
    if (st != GAIO_OK) {
        snprintf(r->err, sizeof r->err, "gaio_model_run: %s (%s)", gaio_last_error(), gaio_status_string(st));
        return st;
    }
    st = gaio_future_wait(f, GAIO_INFINITE);
    if (st != GAIO_OK)
        snprintf(r->err, sizeof r->err, "the run's future: %s (%s)", gaio_last_error(), gaio_status_string(st));
    gaio_future_release(f);
    return st;
}

static void *run_loop(void *arg) {
    runner *r = arg;
    double t0 = cli_now_s(), t = t0;
    r->st = GAIO_OK;
    for (long i = 0; i < r->n; i++) {
        if ((r->st = run_once(r)) != GAIO_OK) break;
        double t1 = cli_now_s();
        if (r->lat) r->lat[i] = t1 - t;
        t = t1;
    }
    r->wall = t - t0;
    return NULL;
}

/* Warm-up: o.warmup runs, or by default until WARMUP_SECONDS have passed and
 * WARMUP_MIN_RUNS were made. */
static int warm_up(job *j, runner *r, long *runs, double *secs) {
    double t0 = cli_now_s();
    long n = 0;
    for (;; n++) {
        if (j->o.warmup >= 0 ? n >= j->o.warmup
                             : n >= WARMUP_MAX_RUNS || (n >= WARMUP_MIN_RUNS && cli_now_s() - t0 >= WARMUP_SECONDS))
            break;
        if (run_once(r) != GAIO_OK) {
            eline("%s", r->err);
            return 1;
        }
    }
    *runs = n, *secs = cli_now_s() - t0;
    return 0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Nearest rank. */
static double percentile(const double *sorted, long n, double p) {
    long k = (long)(p * (double)n + 0.999999);
    if (k < 1) k = 1;
    if (k > n) k = n;
    return sorted[k - 1];
}

static int64_t samples_per_run(const job *j) {
    if (j->info.batch > 0) return j->info.batch;
    if (j->nin > 0 && j->in_io[0].ndim >= 2 && j->in_io[0].shape[0] > 0) return j->in_io[0].shape[0];
    return 1;
}

static int time_runs(job *j) {
    long n = j->o.iterations;
    if (n == 0) {
        printf("timing: none (--iterations 0)\n");
        return 0;
    }
    int rc = make_inputs(j);
    if (!rc) rc = make_runner(j, &j->r[0]);
    if (rc) return rc;
    int64_t batch = samples_per_run(j);
    printf("inputs: uniform random values in [-1, 1), seed %llu (--seed %llu repeats them); inputs and outputs in "
           "%s memory, their copies not timed\n",
           (unsigned long long)j->o.seed, (unsigned long long)j->o.seed,
           j->props.kind == GAIO_DEVICE_CUDA ? "device" : "host");

    long wruns;
    double wsecs;
    if ((rc = warm_up(j, &j->r[0], &wruns, &wsecs))) return rc;
    printf("warm-up: %ld run%s in %.3f s\n", wruns, wruns == 1 ? "" : "s", wsecs);

    runner *r = &j->r[0];
    r->n = n;
    r->lat = malloc((size_t)n * sizeof *r->lat);
    if (!r->lat) {
        eline("out of host memory");
        return 1;
    }
    run_loop(r);
    if (r->st != GAIO_OK) {
        eline("%s", r->err);
        return 1;
    }
    double *sorted = malloc((size_t)n * sizeof *sorted);
    if (!sorted) {
        eline("out of host memory");
        return 1;
    }
    memcpy(sorted, r->lat, (size_t)n * sizeof *sorted);
    qsort(sorted, (size_t)n, sizeof *sorted, cmp_double);
    double sum = 0;
    for (long i = 0; i < n; i++) sum += sorted[i];
    double rate = r->wall > 0 ? (double)n / r->wall : 0;
    printf("latency, 1 context, %ld run%s each waited on: p50 %.3f ms, p90 %.3f ms, p99 %.3f ms, min %.3f ms, "
           "mean %.3f ms, max %.3f ms\n",
           n, n == 1 ? "" : "s", percentile(sorted, n, 0.50) * 1e3, percentile(sorted, n, 0.90) * 1e3,
           percentile(sorted, n, 0.99) * 1e3, sorted[0] * 1e3, sum / (double)n * 1e3, sorted[n - 1] * 1e3);
    printf("throughput, 1 context: %.1f inferences/s, %.1f samples/s (batch %lld)\n", rate, rate * (double)batch,
           (long long)batch);
    free(sorted);

    /* Two contexts of the engine, two streams, a host thread each. */
    runner *r2 = &j->r[1];
    if ((rc = make_runner(j, r2))) return rc;
    if ((rc = warm_up(j, r2, &wruns, &wsecs))) return rc;
    j->r[0].n = j->r[1].n = n;
    double t0 = cli_now_s();
    pthread_t th[2];
    bool started[2] = {false, false};
    for (int k = 0; k < 2; k++) started[k] = pthread_create(&th[k], NULL, run_loop, &j->r[k]) == 0;
    for (int k = 0; k < 2; k++) {
        if (started[k]) pthread_join(th[k], NULL);
        else run_loop(&j->r[k]); /* no thread: run it here (then not concurrent) */
    }
    double wall = cli_now_s() - t0;
    for (int k = 0; k < 2; k++)
        if (j->r[k].st != GAIO_OK) {
            eline("%s", j->r[k].err);
            return 1;
        }
    double rate2 = wall > 0 ? 2.0 * (double)n / wall : 0;
    printf("throughput, 2 contexts on 2 streams at once: %.1f inferences/s, %.1f samples/s (2 x %ld runs in %.3f s; "
           "%.2fx 1 context)\n",
           rate2, rate2 * (double)batch, n, wall, rate > 0 ? rate2 / rate : 0.0);
    return 0;
}

/* ---- the command ------------------------------------------------------------------ */

static int make_engine(job *j) {
    gaio_status st;
    double t0 = cli_now_s();
    if (j->o.load_path) {
        if ((st = gaio_engine_load(j->o.load_path, j->ctx, &j->engine)) != GAIO_OK) {
            char what[1200];
            snprintf(what, sizeof what, "%s", j->o.load_path);
            return failed(st, what);
        }
        if ((st = gaio_engine_model(j->engine, &j->model)) != GAIO_OK) return failed(st, "gaio_engine_model");
    } else {
        if ((st = gaio_model_load(j->o.model_path, &j->model)) != GAIO_OK) {
            char what[1200];
            snprintf(what, sizeof what, "%s", j->o.model_path);
            return failed(st, what);
        }
        j->own_model = true;
        j->model_seconds = cli_now_s() - t0;
        gaio_engine_options eo;
        memset(&eo, 0, sizeof eo);
        eo.batch = j->o.batch ? j->o.batch : 1; /* where --shape gives none */
        eo.precision = j->o.precision;
        eo.layout = j->o.layout;
        eo.shapes = j->o.nshapes ? j->o.shapes : NULL;
        eo.nshapes = j->o.nshapes;
        eo.flags = j->o.no_tune ? GAIO_ENGINE_NO_TUNE : 0;
        t0 = cli_now_s();
        if ((st = gaio_engine_build(j->model, j->ctx, &eo, &j->engine)) != GAIO_OK)
            return failed(st, "gaio_engine_build");
    }
    double wall = cli_now_s() - t0;
    if ((st = gaio_engine_get_info(j->engine, &j->info)) != GAIO_OK) return failed(st, "gaio_engine_get_info");
    int rc = print_io(j);
    if (!rc) rc = print_plan(j, wall);
    return rc;
}

static int save_engine(job *j) {
    if (!j->o.save_path) return 0;
    double t0 = cli_now_s();
    gaio_status st = gaio_engine_save(j->engine, j->o.save_path);
    if (st != GAIO_OK) {
        char what[1200];
        snprintf(what, sizeof what, "%s", j->o.save_path);
        return failed(st, what);
    }
    double t = cli_now_s() - t0;
    struct stat sb;
    char b[64];
    printf("saved %s (%s) in %.3f s\n", j->o.save_path,
           stat(j->o.save_path, &sb) == 0 ? fmt_bytes((size_t)sb.st_size, b, sizeof b) : "?", t);
    return 0;
}

int gaio_cmd_model(int argc, char **argv) {
    job j;
    memset(&j, 0, sizeof j);
    int rc = parse(&j.o, argc, argv);
    if (rc) {
        for (int32_t i = 0; i < j.o.nshapes; i++) free(j.o.shape_names[i]);
        return rc < 0 ? 0 : rc;
    }
    if (!j.o.seed_set) {
        struct timespec t;
        clock_gettime(CLOCK_REALTIME, &t);
        j.o.seed = ((uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec) ^ ((uint64_t)getpid() << 32);
        j.o.seed &= 0xffffffffull; /* short enough to type back */
    }
    rc = pick_device(&j);
    if (!rc) rc = make_engine(&j);
    if (!rc) rc = save_engine(&j);
    fflush(stdout);
    if (!rc) rc = time_runs(&j);
    for (int k = 0; k < 2; k++) free_runner(&j.r[k]);
    for (int32_t i = 0; j.in_bufs && i < j.nin; i++) gaio_buffer_release(j.in_bufs[i]);
    free(j.in_bufs), free(j.ins), free(j.in_io), free(j.out_io);
    if (j.engine) gaio_engine_release(j.engine);
    if (j.own_model) gaio_model_release(j.model);
    if (j.ctx) gaio_context_release(j.ctx);
    for (int32_t i = 0; i < j.o.nshapes; i++) free(j.o.shape_names[i]);
    gaio_shutdown(); /* worker threads joined: leak checkers see none holding oneDNN's data */
    return rc;
}
