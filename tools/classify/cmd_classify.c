/* `gaio classify MODEL.onnx IMAGES...`: image classification end to end.
 *
 * The pipeline, per batch of --batch images, on one of SLOTS streams in turn:
 *   host threads (decode_pool.c) read the files ahead, and decode on the CPU into pinned
 *     memory (uploaded by the pool on a GPU) those nvJPEG does not take;
 *   on the stream: nvJPEG decodes the batch's JPEGs it takes on the GPU (the hardware
 *     decoder on an H100), gaio_preprocess_varshape crops, resizes and normalizes them
 *     all into the model's input in one launch, the model runs (gaio_model_run) and its
 *     scores are copied back to pinned memory;
 *   the host prints each image's top K once its batch's future completes.
 * While batch b runs on the GPU, batch b+1 is decoded and enqueued on another stream:
 * the exec orders its runs, everything else overlaps. On the host device (--device 0)
 * the same pipeline runs on gaio's CPU backend with libjpeg-turbo / libpng decoding.
 *
 * nvJPEG takes 0.6 s or more to start. --decode auto (the default) never waits for it:
 * the host threads decode from setup on, and nvJPEG, started after setup for long runs
 * only, takes the JPEGs of batches read once a slot's decoder is up. --decode gpu makes
 * the decoders during setup and gives nvJPEG every JPEG it takes.
 *
 * The engine (gaio_engine_build: the plan, tuned cuDNN plans, the weights in their final
 * form; seconds on a GPU) is cached on disk by engine_cache.c, keyed by the model file's
 * bytes, the options, the device and the library versions: later runs load it
 * (gaio_engine_load_memory) and make their execution context at once. Setup overlaps
 * what it can with the driver's start (0.2-0.3 s): a thread hashes the model file and
 * opens cuDNN and cuBLASLt, another makes the context while this one reads the entry. */
#include "cmd_classify.h"
#include "cli_util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "classify_job.h"

#define CROP 0.875 /* torchvision's Resize(256) + CenterCrop(224) for a 224 input */

static const float IMAGENET_MEAN[3] = {0.485f, 0.456f, 0.406f}, IMAGENET_STD[3] = {0.229f, 0.224f, 0.225f};

static int usage_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "gaio classify: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n(gaio help shows the usage)\n");
    va_end(ap);
    return 2;
}

int classify_failed(job *j, gaio_status st, const char *call) {
    progress_clear(&j->bar);
    fprintf(stderr, "gaio classify: %s failed: %s: %s\n", call, gaio_status_string(st), gaio_last_error());
    return 1;
}

void gaio_cmd_classify_usage(FILE *out) { gaio_cmd_classify_usage_lead(out, "  "); }

void gaio_cmd_classify_usage_lead(FILE *out, const char *lead) {
    fprintf(out,
            "%sclassify   MODEL.onnx IMAGE... [--labels FILE] [--top K] [--batch N] [--device N]\n"
            "             [--threads N] [--decode auto|gpu|host | --host-share F] [--cache DIR | --no-cache]\n"
            "             [-q]\n"
            "             classify PNG / JPEG images with an ONNX classifier (input [N,3,H,W],\n"
            "             ImageNet normalization, center crop 0.875): JPEGs decoded on the GPU\n"
            "             by nvJPEG (the hardware decoder where there is one) or by host threads\n"
            "             (libjpeg-turbo, libpng); prints each image's top K (default 5) and\n"
            "             images/s.\n"
            "             --batch: images per inference (default 32, or the model's fixed\n"
            "             batch); --device: 0 = host, 1.. = GPUs (default: the first GPU);\n"
            "             --threads: host decode threads (default: online cores);\n"
            "             --decode auto (default): the host threads decode from the start, and\n"
            "             for runs of more than %d images a thread nvJPEG starts beside them\n"
            "             and takes the JPEGs of batches read once it is up (it takes about\n"
            "             0.6 s to start); gpu: setup waits for nvJPEG, which takes every JPEG\n"
            "             it can; host: no nvJPEG (also --host-decode);\n"
            "             --host-share: the fraction (0..1) of each batch's JPEGs the host\n"
            "             threads decode beside nvJPEG (default 0; implies --decode gpu);\n"
            "             -q: only the summary line.\n"
            "             The model's engine (plan, tuned convolutions, weights) is cached in\n"
            "             --cache DIR (default $XDG_CACHE_HOME/gaio or ~/.cache/gaio), keyed by\n"
            "             the model file's bytes, batch, device and versions: later runs load it\n"
            "             instead of building it (stderr says which); --no-cache: build, keep\n"
            "             nothing\n",
            lead, AUTO_NVJPEG_PER_THREAD);
}

static bool parse_int(const char *s, int lo, int hi, int *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return false;
    *out = (int)v;
    return true;
}

static int parse(job *j, int argc, char **argv) {
    j->top = 5, j->batch = 0, j->device = -1, j->threads = 0, j->hardware = -1;
    j->images = calloc((size_t)argc, sizeof *j->images);
    if (!j->images) return usage_error("out of memory");
    for (int i = 1; i < argc; i++) /* --help wins wherever it is */
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            gaio_cmd_classify_usage_lead(stdout, "usage: gaio ");
            return -1;
        }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--no-cache")) {
            j->no_cache = true;
        } else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
            j->quiet = true;
        } else if (!strcmp(a, "--host-decode")) {
            if (j->decode_given && j->decode != DECODE_HOST) return usage_error("--host-decode and --decode: give one");
            j->decode = DECODE_HOST, j->decode_given = true;
        } else if (!strcmp(a, "--labels") || !strcmp(a, "--top") || !strcmp(a, "--batch") || !strcmp(a, "--device") ||
                   !strcmp(a, "--threads") || !strcmp(a, "--cache") || !strcmp(a, "--host-share") ||
                   !strcmp(a, "--decode")) {
            if (!v || (v[0] == '-' && v[1] == '-')) return usage_error("%s needs a value", a);
            i++;
            if (!strcmp(a, "--host-share")) j->host_share_given = true;
            if (!strcmp(a, "--decode")) {
                decode_mode m = !strcmp(v, "auto") ? DECODE_AUTO : !strcmp(v, "gpu") ? DECODE_GPU : DECODE_HOST;
                if (m == DECODE_HOST && strcmp(v, "host"))
                    return usage_error("--decode '%s' is not auto, gpu or host", v);
                if (j->decode_given && j->decode != m) return usage_error("--host-decode and --decode: give one");
                j->decode = m, j->decode_given = true;
            }
            if (!strcmp(a, "--labels")) j->labels_path = v;
            else if (!strcmp(a, "--cache")) j->cache_dir = v;
            else if (!strcmp(a, "--top") && !parse_int(v, 1, 1000, &j->top))
                return usage_error("--top '%s' is not a number from 1 to 1000", v);
            else if (!strcmp(a, "--batch") && !parse_int(v, 1, MAX_BATCH, &j->batch))
                return usage_error("--batch '%s' is not a number from 1 to %d", v, MAX_BATCH);
            else if (!strcmp(a, "--device") && !parse_int(v, 0, 1 << 20, &j->device))
                return usage_error("--device '%s' is not a device index (0 = host, 1.. = GPUs; see gaio info)", v);
            else if (!strcmp(a, "--threads") && !parse_int(v, 1, 1024, &j->threads))
                return usage_error("--threads '%s' is not a number from 1 to 1024", v);
            else if (!strcmp(a, "--host-share")) {
                char *end;
                errno = 0;
                j->host_share = strtod(v, &end);
                if (errno || end == v || *end || !(j->host_share >= 0 && j->host_share <= 1))
                    return usage_error("--host-share '%s' is not a fraction from 0 to 1", v);
            }
        } else if (a[0] == '-' && a[1] == '-') {
            return usage_error("unknown option '%s'", a);
        } else if (!j->model_path) {
            j->model_path = a;
        } else {
            j->images[j->nimages++] = a;
        }
    }
    if (j->cache_dir && j->no_cache) return usage_error("--cache and --no-cache: give one");
    if (j->host_share_given && j->decode_given && j->decode != DECODE_GPU)
        return usage_error("--host-share needs nvJPEG: --%s and --host-share: give one",
                           j->decode == DECODE_HOST ? "decode host" : "decode auto");
    if (j->host_share_given) j->decode = DECODE_GPU; /* a share of nvJPEG's batches: it must be up */
    if (j->cache_dir && !*j->cache_dir) return usage_error("--cache needs a directory");
    if (!j->model_path) return usage_error("no model given");
    if (!j->nimages) return usage_error("no images given");
    if (!j->threads) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        j->threads = n < 1 ? 1 : n > 64 ? 64 : (int)n;
    }
    return 0;
}

/* ---- setup's host work, beside the device's start ---- */

/* cuInit and the context take 0.2-0.3 s; meanwhile this thread hashes the model file
 * for the engine cache's key (a tenth of a second for ResNet-50) and opens cuDNN,
 * which loading the engine's plans needs. */
typedef struct prelude {
    job *j;
    pthread_t th;
    bool started;
    double hashed_at, opened_at; /* seconds since setup began (GAIO_CLASSIFY_TRACE) */
} prelude;

static void *prelude_fn(void *arg) {
    prelude *p = arg;
    job *j = p->j;
    double t0 = cli_now_s();
    if (!j->no_cache) engine_cache_hash_model(j->model_path, &j->hashed);
    p->hashed_at = cli_now_s() - t0;
    const char *d; /* a failure is the engine load's to report */
    if (j->device != 0) (void)gaio_dnn_library_status(GAIO_DNN_CUDNN, &d), (void)gaio_dnn_library_status(GAIO_DNN_CUBLASLT, &d);
    p->opened_at = cli_now_s() - t0;
    return NULL;
}

static void prelude_start(job *j, prelude *p) {
    p->j = j;
    p->started = pthread_create(&p->th, NULL, prelude_fn, p) == 0;
}

static void prelude_join(prelude *p) {
    if (p->started) pthread_join(p->th, NULL);
    else prelude_fn(p);
    p->started = false;
}

static int pick_device(job *j) {
    int count = 0;
    gaio_status st = gaio_device_count(&count);
    if (st != GAIO_OK) return classify_failed(j, st, "gaio_device_count");
    if (j->device >= count) return usage_error("--device %d: no such device (devices here: 0..%d, 0 the host)", j->device, count - 1);
    gaio_device_props p;
    if (j->device < 0) {
        j->device = 0;
        for (int d = 1; d < count; d++)
            if (gaio_device_get_props(d, &p) == GAIO_OK && p.kind == GAIO_DEVICE_CUDA) {
                j->device = d;
                break;
            }
    }
    if ((st = gaio_device_get_props(j->device, &p)) != GAIO_OK) return classify_failed(j, st, "gaio_device_get_props");
    j->gpu = p.kind == GAIO_DEVICE_CUDA;
    return 0;
}

static int make_context(job *j) {
    /* Each image in flight has a device buffer of its own (its nvJPEG output, or the
     * decode pool's upload of its host decode): a few batches of 1080p frames are
     * hundreds of MB. The pools keep that much cached, so that the steady state
     * allocates nothing: a miss is a pool allocation that synchronizes. */
    gaio_context_options o;
    memset(&o, 0, sizeof o);
    o.pool_release_threshold = (size_t)2 << 30;
    gaio_status st = gaio_context_create(j->device, &o, &j->ctx);
    if (st != GAIO_OK) return classify_failed(j, st, "gaio_context_create");
    return 0;
}

/* The context is made on a thread of its own (0.1-0.2 s of the driver's on a GPU),
 * while this one reads the cached engine's file. */
typedef struct context_job {
    job *j;
    int rc;
    pthread_t th;
    bool started;
} context_job;

static void *context_thread(void *arg) {
    context_job *c = arg;
    c->rc = make_context(c->j);
    return NULL;
}

/* The cache's directory (dir holds the default's name), or NULL: no cache (said once). */
static const char *cache_dir(job *j, char *dir, size_t size) {
    if (j->no_cache) return NULL;
    if (j->cache_dir) return j->cache_dir;
    if (engine_cache_default_dir(dir, size)) return dir;
    static bool said;
    if (!said) fprintf(stderr, "gaio classify: no engine cache: neither XDG_CACHE_HOME nor HOME is set (--cache DIR)\n");
    said = true;
    return NULL;
}

/* The batch of the engine: --batch, else the images' count up to 32; a model of a fixed
 * batch has its own (open_model sets it). */
static int default_batch(const job *j) { return j->batch ? j->batch : j->nimages < 32 ? (int)j->nimages : 32; }

/* Before there is a context: the cache's entry of the engine of the default batch,
 * read into memory. */
static void read_cached_engine(job *j) {
    char dir[1024];
    const char *cache = cache_dir(j, dir, sizeof dir);
    if (!cache) return;
    gaio_engine_options eo;
    memset(&eo, 0, sizeof eo);
    eo.batch = j->guessed_batch = default_batch(j);
    double t0 = cli_now_s();
    engine_cache_lookup(cache, j->model_path, &j->hashed, j->device, &eo, &j->entry);
    j->t_read = cli_now_s() - t0;
}

/* Before the ONNX file is parsed: the engine read_cached_engine found, loaded, and the
 * model it holds. A hit parses no ONNX file (a fifth of a second for ResNet-50). */
static void find_cached_engine(job *j) {
    char dir[1024];
    const char *cache = cache_dir(j, dir, sizeof dir);
    if (!cache || !j->entry.found) return;
    gaio_engine_options eo;
    memset(&eo, 0, sizeof eo);
    eo.batch = j->guessed_batch;
    double t0 = cli_now_s();
    engine_cache_result res;
    gaio_model *m = NULL;
    if (engine_cache_find(cache, j->model_path, &j->entry, j->ctx, j->device, &eo, &j->engine, &res) != GAIO_OK)
        return;
    if (gaio_engine_model(j->engine, &m) != GAIO_OK || gaio_model_retain(m) != GAIO_OK) {
        gaio_engine_release(j->engine);
        j->engine = NULL;
        return;
    }
    j->model = m;
    j->t_engine = cli_now_s() - t0;
    fprintf(stderr, "gaio classify: %s\n", res.note);
}

/* The engine of the model for the batch, from the cache or built (and cached), and an
 * execution context of it. */
static int open_engine(job *j) {
    if (j->engine && j->batch != j->guessed_batch) { /* a fixed batch the guess missed: another key */
        gaio_engine_release(j->engine);
        j->engine = NULL;
    }
    gaio_status st;
    if (!j->engine) {
        char dir[1024];
        const char *cache = cache_dir(j, dir, sizeof dir);
        gaio_engine_options eo;
        memset(&eo, 0, sizeof eo);
        eo.batch = j->batch; /* AUTO precision and layout */
        engine_cache_result res;
        double t0 = cli_now_s();
        engine_cache_entry_free(&j->entry); /* another batch's key, or a stale entry: looked up again */
        st = engine_cache_get(cache, j->model_path, NULL, j->model, j->ctx, j->device, &eo, &j->engine, &res);
        if (st != GAIO_OK) return classify_failed(j, st, "gaio_engine_build");
        fprintf(stderr, "gaio classify: %s%s\n", res.note, j->no_cache ? " (--no-cache)" : "");
        j->t_engine += cli_now_s() - t0;
    }
    double t1 = cli_now_s();
    if ((st = gaio_engine_create_exec(j->engine, &j->exec)) != GAIO_OK) return classify_failed(j, st, "gaio_engine_create_exec");
    j->t_exec = cli_now_s() - t1;
    return 0;
}

/* The model: input 0 is [N, 3, H, W], output 0 is [N, classes, (1, 1)]. */
static int open_model(job *j) {
    gaio_status st = GAIO_OK;
    if (!j->model && (st = gaio_model_load(j->model_path, &j->model)) != GAIO_OK) return classify_failed(j, st, "gaio_model_load");
    gaio_model_io in, out;
    if ((st = gaio_model_input(j->model, 0, &in)) != GAIO_OK) return classify_failed(j, st, "gaio_model_input");
    if ((st = gaio_model_output(j->model, 0, &out)) != GAIO_OK) return classify_failed(j, st, "gaio_model_output");
    if (in.ndim != 4 || in.shape[1] != 3 || in.shape[2] < 1 || in.shape[3] < 1) {
        fprintf(stderr, "gaio classify: %s: input '%s' is not [N, 3, H, W] with a fixed H and W\n", j->model_path,
                in.name);
        return 1;
    }
    j->in_h = in.shape[2], j->in_w = in.shape[3], j->in_dtype = in.dtype, j->out_dtype = out.dtype;
    j->classes = 1;
    for (int d = 1; d < out.ndim; d++) j->classes *= out.shape[d] > 0 ? out.shape[d] : -1;
    if (out.ndim < 2 || out.ndim > GAIO_TENSOR_MAX_NDIM || j->classes < 1 || out.shape[0] != in.shape[0]) {
        fprintf(stderr, "gaio classify: %s: output '%s' is not [N, classes] with a fixed class count\n",
                j->model_path, out.name);
        return 1;
    }
    if (in.shape[0] > 0) {
        if (j->batch && j->batch != in.shape[0])
            return usage_error("--batch %d: the model's batch is fixed at %lld", j->batch, (long long)in.shape[0]);
        j->batch = (int)in.shape[0];
    } else {
        j->batch = default_batch(j);
    }
    j->out_ndim = out.ndim;
    for (int d = 0; d < out.ndim; d++) j->out_shape[d] = d ? out.shape[d] : j->batch;
    if (j->top > j->classes) j->top = (int)j->classes;
    if (j->labels_path) {
        char err[300];
        if (labels_load(j->labels_path, &j->names, err, sizeof err) != 0) {
            fprintf(stderr, "gaio classify: %s\n", err);
            return 1;
        }
        if (j->names.count != j->classes) {
            fprintf(stderr, "gaio classify: %s has %d labels but the model has %lld classes\n", j->labels_path,
                    j->names.count, (long long)j->classes);
            return 1;
        }
    }
    return 0;
}

/* ---- slots ---- */

static int open_slots(job *j) {
    size_t in_bytes = (size_t)j->batch * 3 * (size_t)(j->in_h * j->in_w) * gaio_dtype_size(j->in_dtype);
    size_t out_bytes = (size_t)j->batch * (size_t)j->classes * gaio_dtype_size(j->out_dtype);
    for (int k = 0; k < SLOTS; k++) {
        slot *sl = &j->slots[k];
        sl->j = j;
        gaio_status st = gaio_stream_create(j->ctx, 0, 0, &sl->s);
        if (st == GAIO_OK) st = gaio_buffer_alloc(j->ctx, GAIO_MEM_DEVICE, in_bytes, &sl->in);
        if (st == GAIO_OK) st = gaio_buffer_alloc(j->ctx, GAIO_MEM_DEVICE, out_bytes, &sl->out);
        if (st == GAIO_OK) st = gaio_buffer_alloc(j->ctx, GAIO_MEM_PINNED, out_bytes, &sl->out_host);
        if (st != GAIO_OK) return classify_failed(j, st, "creating the pipeline's streams and buffers");
        size_t b = (size_t)j->batch;
        sl->data = calloc(b, sizeof *sl->data), sl->sizes = calloc(b, sizeof *sl->sizes);
        sl->pitch = calloc(b, sizeof *sl->pitch), sl->dst = calloc(b, sizeof *sl->dst);
        sl->gpu_item = calloc(b, sizeof *sl->gpu_item), sl->row_of = calloc(b, sizeof *sl->row_of);
        sl->srcs = calloc(b, sizeof *sl->srcs), sl->rois = calloc(b, sizeof *sl->rois);
        sl->bufs = calloc(b, sizeof *sl->bufs);
        if (!sl->data || !sl->sizes || !sl->pitch || !sl->dst || !sl->gpu_item || !sl->row_of || !sl->srcs ||
            !sl->rois || !sl->bufs) {
            fprintf(stderr, "gaio classify: out of host memory\n");
            return 1;
        }
    }
    return 0;
}

static void close_slots(job *j) {
    for (int k = 0; k < SLOTS; k++) {
        slot *sl = &j->slots[k];
        if (sl->done) gaio_future_wait(sl->done, GAIO_INFINITE), gaio_future_release(sl->done);
        if (sl->nj) njd_destroy(sl->nj);
        if (sl->in) gaio_buffer_release(sl->in);
        if (sl->out) gaio_buffer_release(sl->out);
        if (sl->out_host) gaio_buffer_release(sl->out_host);
        if (sl->s) gaio_stream_release(sl->s);
        free(sl->data), free(sl->sizes), free(sl->pitch), free(sl->dst), free(sl->gpu_item), free(sl->row_of);
        free(sl->srcs), free(sl->rois), free(sl->bufs);
    }
}

/* The center crop of the model's aspect, CROP of the shorter side's scale. */
static gaio_rect center_crop(const job *j, int w, int h) {
    double side = (double)(j->in_h < j->in_w ? j->in_h : j->in_w) / CROP;
    double f = side / (double)(w < h ? w : h); /* source -> resized */
    int cw = (int)((double)j->in_w / f + 0.5), ch = (int)((double)j->in_h / f + 0.5);
    if (cw < 1) cw = 1;
    if (ch < 1) ch = 1;
    if (cw > w) cw = w;
    if (ch > h) ch = h;
    gaio_rect r = {(w - cw) / 2, (h - ch) / 2, cw, ch};
    return r;
}

static float half_to_float(uint16_t h) {
    uint32_t s = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 31, m = h & 1023, bits;
    if (e == 0) {
        float f = (float)m * (1.0f / 16777216.0f);
        return s ? -f : f;
    }
    bits = e == 31 ? s | 0x7f800000u | (m << 13) : s | ((e + 112) << 23) | (m << 13);
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* The batch in sl is done: print each image's classes, free its files. */
static int finish(job *j, slot *sl) {
    if (!sl->n) return 0;
    gaio_status st = gaio_future_wait(sl->done, GAIO_INFINITE);
    gaio_future_release(sl->done);
    sl->done = NULL;
    if (st != GAIO_OK) return classify_failed(j, st, "the batch's inference");
    void *host = NULL;
    if ((st = gaio_buffer_host_ptr(sl->out_host, &host)) != GAIO_OK) return classify_failed(j, st, "gaio_buffer_host_ptr");
    progress_clear(&j->bar);
    for (int i = 0; i < sl->n; i++) {
        dp_item *it = &j->items[sl->first + i];
        if (it->failed || sl->row_of[i] < 0) {
            fprintf(stderr, "gaio classify: %s: %s\n", it->path, it->err);
            j->failed_images++;
        } else if (!j->quiet) {
            size_t row = (size_t)sl->row_of[i] * (size_t)j->classes;
            for (int64_t c = 0; c < j->classes; c++)
                j->scores[c] = j->out_dtype == GAIO_DTYPE_F16 ? half_to_float(((const uint16_t *)host)[row + c])
                                                               : ((const float *)host)[row + c];
            to_probabilities(j->scores, (int)j->classes);
            top_k(j->scores, (int)j->classes, j->top, j->top_idx, j->top_val);
            printf("%s:", it->path);
            for (int k = 0; k < j->top; k++) {
                printf("%s %d", k ? "," : "", j->top_idx[k]);
                if (j->names.count) printf(" %s", j->names.names[j->top_idx[k]]);
                printf(" (%.4f)", j->top_val[k]);
            }
            printf("\n");
        }
        dp_item_reset(it);
    }
    j->done_images += sl->n;
    sl->n = 0;
    progress_update(&j->bar, j->done_images);
    return 0;
}

/* Batch [first, first + n): its images (decoded by the pool) into the slot's stream. */
static int enqueue(job *j, slot *sl, long first, int n) {
    gaio_image *srcs = sl->srcs;
    gaio_rect *rois = sl->rois;
    gaio_buffer **bufs = sl->bufs;
    memset(bufs, 0, (size_t)n * sizeof *bufs);
    sl->first = first, sl->n = n, sl->ngpu = 0;
    gaio_status st = GAIO_OK;
    const char *call = "";
    int rows = 0;
    for (int i = 0; i < n && st == GAIO_OK; i++) {
        dp_item *it = &j->items[first + i];
        sl->row_of[i] = -1;
        if (it->failed) continue;
        size_t pitch = (size_t)it->width * (size_t)it->channels, bytes = pitch * (size_t)it->height;
        gaio_buffer *b = NULL;
        if (it->on_gpu) {
            call = "gaio_buffer_alloc_async";
            st = gaio_buffer_alloc_async(sl->s, GAIO_MEM_DEVICE, bytes, &b);
        } else {
            /* decoded by the pool: uploaded by it on a GPU, pinned pixels the host device reads */
            b = it->pixels;
            gaio_buffer_retain(b);
        }
        if (st != GAIO_OK) break;
        bufs[i] = b;
        if (it->on_gpu) {
            void *p = NULL;
            call = "gaio_buffer_device_ptr";
            if ((st = gaio_buffer_device_ptr(b, &p)) != GAIO_OK) break;
            int g = sl->ngpu++;
            sl->data[g] = it->file.data, sl->sizes[g] = it->file.size;
            sl->dst[g] = p, sl->pitch[g] = pitch, sl->gpu_item[g] = i;
        }
        srcs[rows] = gaio_image_make(b, 0, GAIO_DTYPE_U8, GAIO_LAYOUT_HWC, 1, it->width, it->height, it->channels);
        rois[rows] = center_crop(j, it->width, it->height);
        sl->row_of[i] = rows++;
    }
    if (st == GAIO_OK && sl->ngpu) {
        call = "gaio_enqueue_native (nvJPEG)";
        st = gaio_enqueue_native(sl->s, nvjpeg_decode_fn, sl);
    }
    if (st == GAIO_OK && rows) {
        gaio_preprocess_params pp;
        memset(&pp, 0, sizeof pp);
        pp.interp = GAIO_INTERP_LINEAR, pp.scale = 1.0f / 255.0f;
        for (int c = 0; c < 3; c++) pp.mean[c] = IMAGENET_MEAN[c], pp.std[c] = IMAGENET_STD[c];
        gaio_image dst = gaio_image_make(sl->in, 0, j->in_dtype, GAIO_LAYOUT_CHW, rows, (int32_t)j->in_w,
                                         (int32_t)j->in_h, 3);
        call = "gaio_preprocess_varshape";
        st = gaio_preprocess_varshape(sl->s, srcs, rows, rois, &dst, &pp);
    }
    for (int i = 0; i < n; i++)
        if (bufs[i]) gaio_buffer_release(bufs[i]); /* the ops hold them until they have run */
    if (st != GAIO_OK) return classify_failed(j, st, call);
    if (rows) {
        int64_t ishape[4] = {j->batch, 3, j->in_h, j->in_w};
        gaio_tensor in = gaio_tensor_make(sl->in, 0, j->in_dtype, 4, ishape, GAIO_TENSOR_ROW_MAJOR);
        gaio_tensor out = gaio_tensor_make(sl->out, 0, j->out_dtype, j->out_ndim, j->out_shape, GAIO_TENSOR_ROW_MAJOR);
        if ((st = gaio_model_run(j->exec, sl->s, &in, 1, &out, 1, NULL)) != GAIO_OK) return classify_failed(j, st, "gaio_model_run");
        size_t bytes = (size_t)rows * (size_t)j->classes * gaio_dtype_size(j->out_dtype);
        if ((st = gaio_memcpy_async(sl->s, sl->out_host, 0, sl->out, 0, bytes)) != GAIO_OK)
            return classify_failed(j, st, "gaio_memcpy_async");
    }
    if ((st = gaio_future_fence(sl->s, &sl->done)) != GAIO_OK) return classify_failed(j, st, "gaio_future_fence");
    return 0;
}

/* GAIO_CLASSIFY_TRACE=1: where each batch's files spent their time in the pool. */
static void trace_items(const dp_item *items, int n, long b, double waited) {
    double q[2] = {0, 0}, work[2] = {0, 0}, up = 0;
    int c[2] = {0, 0};
    for (int i = 0; i < n; i++) {
        const dp_item *it = &items[i];
        int h = !it->on_gpu;
        q[h] += it->t_start - it->t_queued, work[h] += it->t_done - it->t_start, c[h]++;
        if (h) up += it->t_upload;
    }
    for (int h = 0; h < 2; h++)
        if (c[h]) q[h] /= c[h], work[h] /= c[h];
    fprintf(stderr,
            "gaio classify: batch %ld: waited %.1f ms for its files; %d for nvJPEG: queued %.1f ms, read %.2f ms; %d on "
            "the host: queued %.1f ms, decoded %.1f ms, uploaded %.2f ms (means)\n",
            b, waited * 1e3, c[0], q[0] * 1e3, work[0] * 1e3, c[1], q[1] * 1e3, (work[1] - (c[1] ? up / c[1] : 0)) * 1e3,
            c[1] ? up / c[1] * 1e3 : 0);
}

/* The decode pool, made as soon as the context is: with --decode auto or host its
 * threads read and decode the first batches while the engine loads. */
static int open_pool(job *j) {
    char err[256];
    dp_gpu_ok_fn ok = j->gpu && j->decode != DECODE_HOST ? nvjpeg_gpu_ok : NULL; /* asked only once a decoder is up */
    if (dp_create(j->ctx, j->threads, j->gpu, ok, j, &j->pool, err, sizeof err) != 0) {
        fprintf(stderr, "gaio classify: %s\n", err);
        return 1;
    }
    return 0;
}

/* Hands the pool the items before upto. An item may go to nvJPEG only when the slot
 * its batch will run on has a decoder by now; --host-share's quota of each batch (of
 * the JPEGs nvJPEG could take, spread over the batch; a short last batch the same
 * share) stays on the host, so that nvJPEG keeps one batch size. Before the batch
 * size is known (setup), nothing has a decoder: every item is the host's. */
static void submit_upto(job *j, long upto) {
    if (upto > j->nimages) upto = j->nimages;
    int ready = j->batch ? nvjpeg_ready_slots(j) : 0;
    while (j->submitted < upto) {
        long first = j->submitted, b = j->batch ? first / j->batch : 0, start = b * j->batch;
        long end = j->batch ? (start + j->batch < j->nimages ? start + j->batch : j->nimages) : upto;
        long stop = end < upto ? end : upto, n = end - start;
        bool gpu = (int)(b % SLOTS) < ready;
        long h = gpu ? (long)j->host_quota * n / j->batch : n;
        for (long i = first; i < stop; i++) j->items[i].host = (i - start + 1) * h / n > (i - start) * h / n;
        if (gpu && h < n && j->first_gpu_batch < 0) j->first_gpu_batch = b;
        dp_submit(j->pool, &j->items[first], (int)(stop - first));
        j->submitted = stop;
    }
}

static int run(job *j) {
    long nb = (j->nimages + j->batch - 1) / j->batch;
    j->host_quota = nvjpeg_ready_slots(j) ? (int)(j->host_share * j->batch + 0.5) : 0;
    const char *trace = getenv("GAIO_CLASSIFY_TRACE");
    const long ahead = SLOTS + 1; /* batches read and decoded ahead: bounds the host memory */
    int rc = 0;
    progress_start(&j->bar, j->nimages, !j->quiet);
    for (long b = 0; b < nb && !rc; b++) {
        slot *sl = &j->slots[b % SLOTS];
        rc = finish(j, sl);
        if (!rc) submit_upto(j, (b + ahead + 1) * j->batch);
        long first = b * j->batch;
        int n = (int)(j->nimages - first < j->batch ? j->nimages - first : j->batch);
        double t0 = cli_now_s();
        for (int i = 0; i < n; i++) dp_wait(j->pool, &j->items[first + i]);
        if (trace && *trace && *trace != '0') trace_items(&j->items[first], n, b, cli_now_s() - t0);
        if (!rc) rc = enqueue(j, sl, first, n);
    }
    for (long b = nb; b < nb + SLOTS && !rc; b++) rc = finish(j, &j->slots[b % SLOTS]);
    progress_clear(&j->bar);
    return rc;
}

int gaio_cmd_classify(int argc, char **argv) {
    job j;
    memset(&j, 0, sizeof j);
    j.first_gpu_batch = -1;
    atomic_init(&j.nv_ready, 0);
    double t0 = cli_now_s();
    int rc = parse(&j, argc, argv);
    if (rc < 0) {
        free(j.images);
        return 0; /* --help */
    }
    prelude pre = {0};
    if (!rc) prelude_start(&j, &pre);
    double ts = cli_now_s();
    if (!rc) rc = pick_device(&j); /* cuInit */
    context_job cj = {&j, 0, 0, false};
    if (!rc) cj.started = pthread_create(&cj.th, NULL, context_thread, &cj) == 0;
    double waited = cli_now_s();
    if (!rc || pre.started) prelude_join(&pre); /* joined whatever failed */
    waited = cli_now_s() - waited;
    if (!rc) read_cached_engine(&j);
    if (cj.started) pthread_join(cj.th, NULL);
    else if (!rc) context_thread(&cj); /* no thread: made here */
    if (!rc) rc = cj.rc;
    j.t_device = cli_now_s() - ts;
    if (!rc) {
        j.items = calloc((size_t)j.nimages, sizeof *j.items);
        if (!j.items) fprintf(stderr, "gaio classify: out of host memory\n"), rc = 1;
        for (long i = 0; !rc && i < j.nimages; i++) j.items[i].path = j.images[i];
    }
    /* Without waiting for nvJPEG, the host threads start on the first batches now. */
    if (!rc && j.decode != DECODE_GPU && !(rc = open_pool(&j)))
        submit_upto(&j, (long)(SLOTS + 2) * default_batch(&j));
    if (!rc) find_cached_engine(&j); /* its time is the engine's */
    ts = cli_now_s();
    if (!rc) rc = open_model(&j);
    j.t_model = cli_now_s() - ts;
    if (!rc) rc = open_slots(&j);
    /* --decode gpu: the decoders are made while the engine loads (or builds);
     * decoders: the wait left. */
    bool decoders = !rc;
    if (decoders) nvjpeg_setup_start(&j);
    if (!rc) rc = open_engine(&j);
    ts = cli_now_s();
    if (decoders) {
        int nrc = nvjpeg_setup_finish(&j);
        if (!rc) rc = nrc;
    }
    j.t_nvjpeg = cli_now_s() - ts;
    if (!rc && !j.pool) rc = open_pool(&j);
    if (!rc) {
        j.scores = malloc((size_t)j.classes * sizeof *j.scores);
        j.top_idx = malloc((size_t)j.top * sizeof *j.top_idx), j.top_val = malloc((size_t)j.top * sizeof *j.top_val);
        if (!j.scores || !j.top_idx || !j.top_val) {
            fprintf(stderr, "gaio classify: out of host memory\n");
            rc = 1;
        }
    }
    if (!rc) nvjpeg_background_start(&j);
    double t1 = cli_now_s();
    const char *trace = getenv("GAIO_CLASSIFY_TRACE");
    if (!rc && trace && *trace && *trace != '0')
        fprintf(stderr, "gaio classify: setup: beside the device's start: model hashed %.3f s, DNN libraries open "
                "%.3f s (waited for %.3f s more), cached engine's key and file %.3f s (of device)\n", pre.hashed_at,
                pre.opened_at, waited, j.t_read);
    if (!rc) rc = run(&j);
    nvjpeg_finish(&j); /* a run shorter than nvJPEG's start waits for it here: counted */
    double t2 = cli_now_s();
    if (j.pool) dp_destroy(j.pool); /* finishes what was queued (an early failure leaves some) */
    for (long i = 0; j.items && i < j.nimages; i++) dp_item_reset(&j.items[i]);
    if (!rc) {
        gaio_device_props p;
        gaio_device_get_props(j.device, &p);
        long ok = j.done_images - j.failed_images;
        printf("gaio classify: %ld image%s in %.3f s: %.1f images/s on device %d (%s), batch %d, decode %s, "
               "%d host threads; setup %.2f s (device %.2f, model %.2f, engine %.2f, context %.2f, decoders %.2f more)"
               "%s%ld failed\n",
               ok, ok == 1 ? "" : "s", t2 - t1, (double)j.done_images / (t2 - t1 > 0 ? t2 - t1 : 1e-9), j.device,
               p.name, j.batch, j.nvjpeg_note, j.threads, t1 - t0, j.t_device, j.t_model, j.t_engine, j.t_exec,
               j.t_nvjpeg, j.failed_images ? ", " : "; ", j.failed_images);
        if (j.failed_images) rc = 1;
    }
    close_slots(&j);
    if (j.exec) gaio_model_exec_release(j.exec);
    if (j.engine) gaio_engine_release(j.engine);
    if (j.model) gaio_model_release(j.model);
    if (j.ctx) gaio_context_release(j.ctx);
    labels_free(&j.names);
    engine_cache_entry_free(&j.entry);
    free(j.items), free(j.scores), free(j.top_idx), free(j.top_val), free(j.images);
    /* gaio's worker threads stopped and joined before exit: leak checkers then see no
     * thread holding a dlopen'd library's thread-local data (oneDNN's). */
    gaio_shutdown();
    return rc;
}
