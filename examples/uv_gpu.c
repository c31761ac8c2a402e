/* uv_gpu: an image-preprocessing service on a libuv loop, the GPU doing the work.
 *
 * One thread runs a libuv loop that keeps `concurrency` requests in flight until
 * `requests` have completed. A request is what an inference front end does to each
 * frame it receives: upload a u8 HWC image from pinned memory, crop + resize +
 * BGR->RGB + normalise it into the f32 CHW 3x224x224 tensor a model takes
 * (gaio_preprocess, one launch), and copy the tensor back. Each in-flight request
 * has its own stream, so requests overlap on the device; its fence future goes to
 * one gaio_cq whose fd the loop watches with uv_poll. The poll callback pops
 * completions in batches, finishes those requests and starts new ones on the
 * streams they free: no call on the loop thread ever waits for the device.
 *
 * It runs on the first CUDA GPU when there is one, else on the host (device 0,
 * the CPU backend): the same code either way. At the end a few outputs are checked
 * against a direct computation of the same maths on this thread, and it prints
 * requests/s, the p50 / p99 latency from submission to the loop seeing the
 * completion, and what kept the loop from its other work: the longest callback,
 * the largest gap of a 1 ms timer, and how often the loop thread slept or was
 * preempted inside its callbacks.
 *
 *   uv_gpu [--requests N] [--concurrency N] [--device N] [--verify N] [--deferred]
 *
 * Exit status: 0 when every request completed and every checked output matched,
 * 1 on any failure, 2 on bad arguments. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RUSAGE_THREAD, and clock_gettime under -std=c11 */
#endif
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <uv.h>

#include "gaio/gaio.h"

#define OUT_W 224
#define OUT_H 224
#define OUT_C 3
#define OUT_FLOATS ((size_t)OUT_W * OUT_H * OUT_C)
#define NSOURCES 8
#define TICK_MS 1
#define STALL_MS 20000 /* no completion for this long: something is stuck */

/* The frames clients "send": random u8 BGR images of the sizes cameras and
 * datasets produce, odd ones and one smaller than the output (an enlarging
 * resize) included. Made once in pinned memory; a real server would receive each
 * request's bytes into a pinned staging buffer instead, which costs the same
 * upload. */
static const int SOURCE_SIZES[NSOURCES][2] = {{640, 480}, {1280, 720}, {500, 375}, {1920, 1080},
                                              {333, 257}, {800, 600},  {224, 224}, {160, 120}};

typedef struct source {
    int width, height;
    gaio_buffer *pinned; /* width * height * 3 bytes, HWC */
    const uint8_t *host; /* its host address: uploads only read it */
} source;

typedef struct slot {
    int index;
    gaio_stream *stream;
    gaio_buffer *out; /* PINNED: the tensor of the request in flight lands here */
    gaio_future *fut; /* kept until completion, for gaio_future_message on failure */
    int req;          /* the request in flight, -1 when idle */
    uint64_t start_ns;
} slot;

typedef struct checked {
    int req;
    float *out; /* a copy of the request's tensor, checked after the run */
} checked;

typedef struct app {
    /* options */
    int requests, concurrency, device, verify;
    unsigned stream_flags;
    /* gaio */
    gaio_context *ctx;
    gaio_cq *cq;
    source sources[NSOURCES];
    slot *slots;
    gaio_preprocess_params params;
    /* libuv */
    uv_loop_t *loop;
    uv_poll_t poll;
    uv_timer_t ticker, watchdog;
    int handles_init;
    /* progress */
    int next_req, completed, failed;
    uint64_t *latency_ns; /* per request */
    checked *checks;
    int nchecks, check_stride;
    /* evidence that the loop stayed free */
    int wakeups, max_batch;
    uint64_t ticks, last_tick_ns, max_tick_gap_ns, max_callback_ns;
    long callback_waits, callback_preemptions; /* context switches of the loop thread inside the callback */
    uint64_t start_ns, end_ns;
} app;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Reports a failed gaio call with the library's message. */
static int gaio_check(gaio_status st, const char *what) {
    if (st == GAIO_OK) return 0;
    fprintf(stderr, "uv_gpu: %s failed: %s: %s\n", what, gaio_status_string(st), gaio_last_error());
    return -1;
}

#define CHECK(call)                                    \
    do {                                               \
        if (gaio_check((call), #call) != 0) goto fail; \
    } while (0)

static int uv_check(int rc, const char *what) {
    if (rc == 0) return 0;
    fprintf(stderr, "uv_gpu: %s failed: %s\n", what, uv_strerror(rc));
    return -1;
}

/* splitmix64: a tiny seeded generator, so that a request's crop can be recomputed
 * from its number when its output is checked. */
static uint64_t mix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static const source *source_of(const app *a, int req) { return &a->sources[req % NSOURCES]; }

/* The crop of request `req`: every fourth takes the whole frame (the plain resize of
 * a classifier), the others a box of at least half of each side (a detector's crop). */
static gaio_rect roi_of(const app *a, int req) {
    const source *s = source_of(a, req);
    if (req % 4 == 0) return (gaio_rect){0, 0, s->width, s->height};
    uint64_t h = mix64((uint64_t)req);
    int w = s->width / 2 + (int)(h % (uint64_t)(s->width - s->width / 2 + 1));
    int ht = s->height / 2 + (int)((h >> 16) % (uint64_t)(s->height - s->height / 2 + 1));
    int x = (int)((h >> 32) % (uint64_t)(s->width - w + 1));
    int y = (int)((h >> 48) % (uint64_t)(s->height - ht + 1));
    return (gaio_rect){x, y, w, ht};
}

/* ---- one request ---- */

/* Enqueues request `req` on slot `sl`'s stream and hands its fence to the queue.
 * Nothing here waits: each call validates, takes references and appends (or, with
 * --deferred, only appends to the device's submission thread). */
static int start_request(app *a, slot *sl, int req) {
    const source *src = source_of(a, req);
    gaio_rect roi = roi_of(a, req);
    size_t in_bytes = (size_t)src->width * (size_t)src->height * 3;
    gaio_buffer *dev_in = NULL, *dev_out = NULL;
    gaio_future *fut = NULL;

    sl->req = req;
    sl->start_ns = now_ns();
    /* Stream-ordered allocations: after the first round they come from the pool's
     * cache, and the memory returns to it when the ops that use it have run. */
    CHECK(gaio_buffer_alloc_async(sl->stream, GAIO_MEM_DEVICE, in_bytes, &dev_in));
    CHECK(gaio_buffer_alloc_async(sl->stream, GAIO_MEM_DEVICE, OUT_FLOATS * sizeof(float), &dev_out));
    CHECK(gaio_memcpy_async(sl->stream, dev_in, 0, src->pinned, 0, in_bytes));
    gaio_image in = gaio_image_make(dev_in, 0, GAIO_DTYPE_U8, GAIO_LAYOUT_HWC, 1, src->width, src->height, 3);
    gaio_image out = gaio_image_make(dev_out, 0, GAIO_DTYPE_F32, GAIO_LAYOUT_CHW, 1, OUT_W, OUT_H, OUT_C);
    CHECK(gaio_preprocess(sl->stream, &in, &roi, &out, &a->params));
    CHECK(gaio_memcpy_async(sl->stream, sl->out, 0, dev_out, 0, OUT_FLOATS * sizeof(float)));
    CHECK(gaio_future_fence(sl->stream, &fut));
    CHECK(gaio_cq_add(a->cq, fut, sl));
    /* The ops hold the device buffers until they have run. */
    CHECK(gaio_buffer_release(dev_in));
    CHECK(gaio_buffer_release(dev_out));
    sl->fut = fut;
    return 0;
fail:
    gaio_future_release(fut);
    gaio_buffer_release(dev_in);
    gaio_buffer_release(dev_out);
    sl->req = -1;
    return -1;
}

/* The loop's side of a completion: latency, a copy of the output when it is one of
 * those checked, then the slot takes the next request. */
static int finish_request(app *a, slot *sl, gaio_status status) {
    int req = sl->req;
    uint64_t t = now_ns();
    if (req < 0) {
        fprintf(stderr, "uv_gpu: a completion for idle stream %d\n", sl->index);
        return -1;
    }
    if (status != GAIO_OK) {
        /* The stream is failed for good (stream.h): report and stop rather than feed it. */
        fprintf(stderr, "uv_gpu: request %d failed: %s: %s\n", req, gaio_status_string(status),
                gaio_future_message(sl->fut));
        return -1;
    }
    gaio_future_release(sl->fut);
    sl->fut = NULL;
    sl->req = -1;
    a->latency_ns[req] = t - sl->start_ns;
    a->completed++;
    if (a->verify > 0 && (req % a->check_stride == 0 || req == a->requests - 1)) {
        checked *c = &a->checks[a->nchecks];
        void *p;
        if (gaio_check(gaio_buffer_host_ptr(sl->out, &p), "gaio_buffer_host_ptr") != 0) return -1;
        c->out = malloc(OUT_FLOATS * sizeof(float));
        if (!c->out) {
            fprintf(stderr, "uv_gpu: out of memory\n");
            return -1;
        }
        /* The fence covered the copy into sl->out, and nothing writes it until the
         * slot's next request is submitted below. */
        memcpy(c->out, p, OUT_FLOATS * sizeof(float));
        c->req = req;
        a->nchecks++;
    }
    if (a->next_req < a->requests) return start_request(a, sl, a->next_req++);
    return 0;
}

/* ---- loop callbacks ---- */

static void stop_all(app *a) {
    if (!a->handles_init) return;
    if (!uv_is_closing((uv_handle_t *)&a->poll)) uv_close((uv_handle_t *)&a->poll, NULL);
    if (!uv_is_closing((uv_handle_t *)&a->ticker)) uv_close((uv_handle_t *)&a->ticker, NULL);
    if (!uv_is_closing((uv_handle_t *)&a->watchdog)) uv_close((uv_handle_t *)&a->watchdog, NULL);
}

/* The loop thread's voluntary context switches (it waited: a lock, a blocking
 * call) and involuntary ones (the scheduler took the core away). */
static void thread_switches(long *waits, long *preemptions) {
    struct rusage ru;
    if (getrusage(RUSAGE_THREAD, &ru) != 0) {
        *waits = *preemptions = 0;
        return;
    }
    *waits = ru.ru_nvcsw;
    *preemptions = ru.ru_nivcsw;
}

static void on_cq_readable(uv_poll_t *handle, int status, int events) {
    app *a = handle->data;
    uint64_t t0 = now_ns();
    long waits0, preempt0;
    thread_switches(&waits0, &preempt0);
    if (status < 0) {
        fprintf(stderr, "uv_gpu: poll error: %s\n", uv_strerror(status));
        a->failed = 1;
        stop_all(a);
        return;
    }
    if (!(events & UV_READABLE)) return;
    a->wakeups++;
    /* At most one round of the requests in flight per wake-up: on a fast device the
     * requests started here could complete while we pop, and popping until empty
     * would then keep the loop from its other handles. The fd stays readable while
     * entries wait, so uv_poll brings us back. */
    int budget = a->concurrency;
    while (budget > 0) {
        gaio_cq_entry entries[32];
        size_t n = 0;
        size_t want = (size_t)budget < 32 ? (size_t)budget : 32;
        if (gaio_check(gaio_cq_pop(a->cq, entries, want, &n), "gaio_cq_pop") != 0) {
            a->failed = 1;
            break;
        }
        if (n == 0) break;
        if ((int)n > a->max_batch) a->max_batch = (int)n;
        budget -= (int)n;
        for (size_t i = 0; i < n && !a->failed; i++)
            if (finish_request(a, entries[i].user_data, entries[i].status) != 0) a->failed = 1;
        if (a->failed) break;
    }
    if (a->failed || a->completed == a->requests) {
        a->end_ns = now_ns();
        stop_all(a);
    } else {
        (void)uv_timer_again(&a->watchdog); /* progress: push the stall deadline back */
    }
    uint64_t dt = now_ns() - t0;
    if (dt > a->max_callback_ns) a->max_callback_ns = dt;
    long waits1, preempt1;
    thread_switches(&waits1, &preempt1);
    a->callback_waits += waits1 - waits0;
    a->callback_preemptions += preempt1 - preempt0;
}

static void on_tick(uv_timer_t *t) {
    app *a = t->data;
    uint64_t now = now_ns();
    if (a->ticks && now - a->last_tick_ns > a->max_tick_gap_ns) a->max_tick_gap_ns = now - a->last_tick_ns;
    a->last_tick_ns = now;
    a->ticks++;
}

static void on_watchdog(uv_timer_t *t) {
    app *a = t->data;
    fprintf(stderr, "uv_gpu: no completion for %d ms (%d of %d requests done)\n", STALL_MS, a->completed,
            a->requests);
    a->failed = 1;
    stop_all(a);
}

/* ---- the direct computation ---- */

/* One axis of OpenCV's INTER_LINEAR (what gaio_preprocess documents): output d
 * samples source position (d + 0.5) * scale - 0.5, replicating the border. The
 * position is rounded to float as OpenCV does; in double the fraction would differ
 * by up to ~1e-4 on 1920-pixel axes, more than the tolerance below allows. */
static void linear_taps(int src, int dst, int d, int *i0, int *i1, double *f) {
    double scale = 1.0 / ((double)dst / (double)src);
    float fx = (float)(((double)d + 0.5) * scale - 0.5);
    int s = (int)floorf(fx);
    double frac = (double)(fx - (float)s);
    if (s < 0) {
        s = 0;
        frac = 0;
    }
    if (s >= src - 1) {
        s = src - 1;
        frac = 0;
    }
    *i0 = s;
    *i1 = s + 1 < src ? s + 1 : src - 1;
    *f = frac;
}

/* Channel c of pixel (x, y) of the crop `roi` of a source frame. */
static double pixel(const source *s, gaio_rect roi, int x, int y, int c) {
    return (double)s->host[((size_t)(roi.y + y) * (size_t)s->width + (size_t)(roi.x + x)) * 3 + (size_t)c];
}

/* 0 when the output of request `req` matches crop + bilinear resize + BGR->RGB +
 * (v * scale - mean) / std computed here in double; the worst difference goes to
 * *max_diff. */
static int verify_output(const app *a, const checked *c, double *max_diff) {
    const source *src = source_of(a, c->req);
    gaio_rect roi = roi_of(a, c->req);
    const gaio_preprocess_params *pp = &a->params;
    size_t bad = 0;
    for (int y = 0; y < OUT_H; y++) {
        int y0, y1;
        double fy;
        linear_taps(roi.height, OUT_H, y, &y0, &y1, &fy);
        for (int x = 0; x < OUT_W; x++) {
            int x0, x1;
            double fx;
            linear_taps(roi.width, OUT_W, x, &x0, &x1, &fx);
            for (int ch = 0; ch < OUT_C; ch++) {
                int sc = pp->swap_rb ? 2 - ch : ch;
                double v = (1 - fy) * ((1 - fx) * pixel(src, roi, x0, y0, sc) + fx * pixel(src, roi, x1, y0, sc)) +
                           fy * ((1 - fx) * pixel(src, roi, x0, y1, sc) + fx * pixel(src, roi, x1, y1, sc));
                double want = (v * pp->scale - pp->mean[ch]) / pp->std[ch];
                double got = c->out[((size_t)ch * OUT_H + (size_t)y) * OUT_W + (size_t)x];
                double diff = fabs(got - want);
                if (diff > *max_diff || isnan(got)) *max_diff = isnan(got) ? INFINITY : diff;
                /* float sums in another order: ~1e-6 here. One u8 step of the input
                 * moves an output by 1 / 255 / std ~ 0.017, far above this. */
                if (!(diff <= 1e-4 + 1e-4 * fabs(want))) {
                    if (bad++ == 0)
                        fprintf(stderr, "uv_gpu: request %d: out[%d][%d][%d] = %.7g, expected %.7g\n", c->req, ch, y,
                                x, got, want);
                }
            }
        }
    }
    if (bad) {
        fprintf(stderr, "uv_gpu: request %d (%dx%d crop %dx%d at %d,%d): %zu of %zu values differ\n", c->req,
                src->width, src->height, roi.width, roi.height, roi.x, roi.y, bad, OUT_FLOATS);
        return -1;
    }
    return 0;
}

/* ---- setup ---- */

static int cmp_u64(const void *x, const void *y) {
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return (a > b) - (a < b);
}

/* Nearest-rank percentile of sorted values. */
static double percentile_ms(const uint64_t *sorted, size_t n, double p) {
    size_t rank = (size_t)ceil(p / 100.0 * (double)n);
    if (rank < 1) rank = 1;
    return (double)sorted[rank - 1] / 1e6;
}

/* The first CUDA GPU when its backend works, else device 0, the host. */
static int pick_device(app *a) {
    int count = 0;
    if (gaio_check(gaio_device_count(&count), "gaio_device_count") != 0) return -1;
    if (a->device >= count) {
        fprintf(stderr, "uv_gpu: --device %d: no such device (0..%d here, 0 the host)\n", a->device, count - 1);
        return -1;
    }
    if (a->device >= 0) return 0;
    a->device = 0;
    const char *why = "";
    gaio_status st = gaio_backend_status(GAIO_DEVICE_CUDA, &why);
    if (count > 1 && st == GAIO_OK) {
        for (int d = 1; d < count; d++) {
            gaio_device_props p;
            if (gaio_check(gaio_device_get_props(d, &p), "gaio_device_get_props") != 0) return -1;
            if (p.kind == GAIO_DEVICE_CUDA) {
                a->device = d;
                break;
            }
        }
    } else {
        printf("uv_gpu: no GPU (%s): running on the host\n", why && *why ? why : gaio_status_string(st));
    }
    return 0;
}

static int make_sources(app *a) {
    for (int i = 0; i < NSOURCES; i++) {
        source *s = &a->sources[i];
        s->width = SOURCE_SIZES[i][0];
        s->height = SOURCE_SIZES[i][1];
        size_t bytes = (size_t)s->width * (size_t)s->height * 3;
        void *p;
        if (gaio_check(gaio_buffer_alloc(a->ctx, GAIO_MEM_PINNED, bytes, &s->pinned), "gaio_buffer_alloc") != 0 ||
            gaio_check(gaio_buffer_host_ptr(s->pinned, &p), "gaio_buffer_host_ptr") != 0)
            return -1;
        uint8_t *b = p;
        s->host = b;
        uint64_t state = 0x5eed0000ULL + (uint64_t)i;
        for (size_t k = 0; k < bytes; k += 8) {
            uint64_t r = mix64(state++);
            size_t n = bytes - k < 8 ? bytes - k : 8;
            memcpy(b + k, &r, n);
        }
    }
    return 0;
}

static int parse_int(const char *s, int lo, int hi, int *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return -1;
    *out = (int)v;
    return 0;
}

static int parse_args(app *a, int argc, char **argv) {
    a->requests = 1000;
    a->concurrency = 64;
    a->device = -1;
    a->verify = 8;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        int *dst = NULL, lo = 1, hi = 1 << 24;
        if (!strcmp(arg, "--deferred")) {
            a->stream_flags |= GAIO_STREAM_DEFERRED;
            continue;
        }
        if (!strcmp(arg, "--requests")) dst = &a->requests;
        else if (!strcmp(arg, "--concurrency")) dst = &a->concurrency, hi = 4096;
        else if (!strcmp(arg, "--device")) dst = &a->device, lo = 0;
        else if (!strcmp(arg, "--verify")) dst = &a->verify, lo = 0;
        if (!dst || i + 1 >= argc || parse_int(argv[i + 1], lo, hi, dst) != 0) {
            fprintf(stderr,
                    "usage: uv_gpu [--requests N] [--concurrency N] [--device N] [--verify N] [--deferred]\n"
                    "  --requests N     requests to serve (default 1000)\n"
                    "  --concurrency N  requests in flight, one stream each (default 64)\n"
                    "  --device N       0 = the host, 1.. = CUDA GPUs (default: the first GPU, else the host)\n"
                    "  --verify N       outputs checked against a direct computation (default 8, plus the last)\n"
                    "  --deferred       submit through gaio's per-device thread (GAIO_STREAM_DEFERRED)\n");
            return -1;
        }
        i++;
    }
    if (a->concurrency > a->requests) a->concurrency = a->requests;
    return 0;
}

int main(int argc, char **argv) {
    static app a; /* large: keep it off the stack */
    int rc = 1, fd = -1;

    if (parse_args(&a, argc, argv) != 0) return 2;
    a.params = (gaio_preprocess_params){GAIO_INTERP_LINEAR, 1, 1.0f / 255.0f, {0.485f, 0.456f, 0.406f, 0.0f},
                                        {0.229f, 0.224f, 0.225f, 1.0f}};
    a.check_stride = a.verify > 0 ? (a.requests + a.verify - 1) / a.verify : 1;
    a.latency_ns = calloc((size_t)a.requests, sizeof *a.latency_ns);
    a.checks = calloc((size_t)a.verify + 2, sizeof *a.checks);
    a.slots = calloc((size_t)a.concurrency, sizeof *a.slots);
    if (!a.latency_ns || !a.checks || !a.slots) {
        fprintf(stderr, "uv_gpu: out of memory\n");
        goto fail;
    }
    for (int i = 0; i < a.concurrency; i++) a.slots[i].req = -1;
    a.loop = uv_default_loop();

    if (pick_device(&a) != 0) goto fail;
    gaio_device_props props;
    CHECK(gaio_device_get_props(a.device, &props));
    /* 64 requests in flight hold up to ~7 MB of device memory each: a pool that keeps
     * more than the default 64 MiB cached serves them all from its cache after the
     * first rounds, instead of going to the driver, whose frees can synchronize. */
    gaio_context_options opts = {.pool_release_threshold = (size_t)256 << 20};
    CHECK(gaio_context_create(a.device, &opts, &a.ctx));
    if (make_sources(&a) != 0) goto fail;
    for (int i = 0; i < a.concurrency; i++) {
        slot *sl = &a.slots[i];
        sl->index = i;
        CHECK(gaio_stream_create(a.ctx, 0, a.stream_flags, &sl->stream));
        CHECK(gaio_buffer_alloc(a.ctx, GAIO_MEM_PINNED, OUT_FLOATS * sizeof(float), &sl->out));
    }
    CHECK(gaio_cq_create(&a.cq));
    CHECK(gaio_cq_fd(a.cq, &fd));

    if (uv_check(uv_poll_init(a.loop, &a.poll, fd), "uv_poll_init") != 0 ||
        uv_check(uv_timer_init(a.loop, &a.ticker), "uv_timer_init") != 0 ||
        uv_check(uv_timer_init(a.loop, &a.watchdog), "uv_timer_init") != 0)
        goto fail;
    a.handles_init = 1;
    a.poll.data = a.ticker.data = a.watchdog.data = &a;
    if (uv_check(uv_poll_start(&a.poll, UV_READABLE, on_cq_readable), "uv_poll_start") != 0 ||
        uv_check(uv_timer_start(&a.ticker, on_tick, TICK_MS, TICK_MS), "uv_timer_start") != 0 ||
        uv_check(uv_timer_start(&a.watchdog, on_watchdog, STALL_MS, STALL_MS), "uv_timer_start") != 0)
        goto fail;

    printf("uv_gpu: device %d (%s%s), %d requests, %d in flight%s\n", a.device, props.name,
           props.kind == GAIO_DEVICE_CUDA ? "" : ", the CPU backend", a.requests, a.concurrency,
           a.stream_flags & GAIO_STREAM_DEFERRED ? ", deferred submission" : "");
    printf("uv_gpu: each: upload u8 HWC %d frame sizes (160x120 .. 1920x1080), crop + linear resize + BGR->RGB + "
           "normalize -> f32 CHW %dx%dx%d, download\n",
           NSOURCES, OUT_C, OUT_H, OUT_W);
    a.start_ns = now_ns();
    for (int i = 0; i < a.concurrency; i++)
        if (start_request(&a, &a.slots[i], a.next_req++) != 0) goto fail;

    if (uv_check(uv_run(a.loop, UV_RUN_DEFAULT), "uv_run") != 0) goto fail;
    if (a.failed || a.completed != a.requests) goto fail;
    CHECK(gaio_context_synchronize(a.ctx));

    double secs = (double)(a.end_ns - a.start_ns) / 1e9;
    qsort(a.latency_ns, (size_t)a.requests, sizeof *a.latency_ns, cmp_u64);
    printf("uv_gpu: %.1f requests/s (%d in %.3f s); latency p50 %.3f ms, p99 %.3f ms, max %.3f ms\n",
           (double)a.requests / secs, a.requests, secs, percentile_ms(a.latency_ns, (size_t)a.requests, 50),
           percentile_ms(a.latency_ns, (size_t)a.requests, 99), (double)a.latency_ns[a.requests - 1] / 1e6);
    printf("uv_gpu: loop: %d poll wake-ups (largest batch %d), longest callback %.3f ms; "
           "%d ms timer ticked %" PRIu64 " times (largest gap %.3f ms)\n",
           a.wakeups, a.max_batch, (double)a.max_callback_ns / 1e6, TICK_MS, a.ticks,
           (double)a.max_tick_gap_ns / 1e6);
    printf("uv_gpu: inside its callbacks the loop thread slept %ld times (a contended lock or a blocking call) "
           "and was preempted %ld times\n",
           a.callback_waits, a.callback_preemptions);
    gaio_pool_stats ps;
    CHECK(gaio_context_pool_stats(a.ctx, GAIO_MEM_DEVICE, &ps));
    printf("uv_gpu: device pool: %" PRIu64 " allocations, %" PRIu64 " from its cache\n", ps.allocations, ps.reuses);

    int mismatches = 0;
    double max_diff = 0;
    for (int i = 0; i < a.nchecks; i++)
        if (verify_output(&a, &a.checks[i], &max_diff) != 0) mismatches++;
    printf("uv_gpu: %d outputs checked against a direct computation: %d mismatches (max |diff| %.3g)\n", a.nchecks,
           mismatches, max_diff);
    if (mismatches) goto fail;
    if (a.ticks == 0) {
        printf("uv_gpu: FAILED (the timer never ticked: the loop was blocked)\n");
        goto out;
    }
    printf("uv_gpu: OK\n");
    rc = 0;
    goto out;
fail:
    if (a.next_req > 0 && a.completed != a.requests)
        fprintf(stderr, "uv_gpu: %d of %d requests completed\n", a.completed, a.requests);
    printf("uv_gpu: FAILED\n");
    rc = 1;
out:
    stop_all(&a); /* a no-op when the loop closed them already */
    (void)uv_run(a.loop, UV_RUN_DEFAULT);
    if (uv_loop_close(a.loop) != 0) fprintf(stderr, "uv_gpu: uv_loop_close: handles still open\n");
    /* Releasing with work in flight (after a failure) is safe: the ops hold what
     * they use, and the queue drops the entries still to come. */
    gaio_cq_release(a.cq);
    if (a.slots) {
        for (int i = 0; i < a.concurrency; i++) {
            gaio_future_release(a.slots[i].fut);
            gaio_buffer_release(a.slots[i].out);
            gaio_stream_release(a.slots[i].stream);
        }
    }
    for (int i = 0; i < NSOURCES; i++) gaio_buffer_release(a.sources[i].pinned);
    gaio_context_release(a.ctx);
    if (a.checks)
        for (int i = 0; i < a.nchecks; i++) free(a.checks[i].out);
    free(a.checks);
    free(a.slots);
    free(a.latency_ns);
    return rc;
}
