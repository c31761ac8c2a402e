/* The JPEG decoders' rates alone, on the same files: the floor of `gaio classify`.
 *
 *   gaio_jpeg_rate [--batch B] [--threads T] [--reps R] FILE.jpg...
 *
 * The files are read into memory once; then each decoder runs over all of them, R times
 * after one warm-up pass, and prints images/s:
 *   nvJPEG (the hardware engine where the GPU has one): batches of B on 3 gaio streams,
 *     a decoder each (as gaio classify's slots), each batch one nvjpegDecodeBatched from
 *     this thread (one thread a stream was not faster on the H200: 2,760 images/s once,
 *     against 2,960-3,600 from one);
 *   the host: T threads of libjpeg-turbo (tools/image_io.c, as classify's decode pool).
 * They share nothing, so the two rates add up to what both decoders could do side by
 * side: bench/classify_bench.py prints that sum as the pipeline's floor. A machine
 * without a GPU prints the host's rate and says why nvJPEG's is missing. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "classify/nvjpeg_decode.h"
#include "gaio/gaio.h"
#include "image_io.h"

#define STREAMS 3

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

typedef struct files {
    int n;
    imgio_file *f;
    int *width, *height;
} files;

/* ---- the host: threads over the files ---- */

typedef struct host_run {
    const files *fs;
    int reps;
    atomic_long next;
    atomic_int failed;
    char err[200];
} host_run;

static uint8_t *host_alloc(void *user, int width, int height, int channels, size_t bytes) {
    (void)user, (void)width, (void)height, (void)channels;
    return malloc(bytes);
}

static void *host_worker(void *arg) {
    host_run *r = arg;
    long total = (long)r->fs->n * r->reps;
    for (long k; (k = atomic_fetch_add(&r->next, 1)) < total;) {
        imgio_image img;
        char err[200];
        img.pixels = NULL;
        if (imgio_decode(&r->fs->f[k % r->fs->n], host_alloc, NULL, &img, err, sizeof err) != IMGIO_OK &&
            !atomic_exchange(&r->failed, 1))
            snprintf(r->err, sizeof r->err, "%s", err);
        free(img.pixels);
    }
    return NULL;
}

static double host_rate(const files *fs, int threads, int reps) {
    pthread_t *th = calloc((size_t)threads, sizeof *th);
    if (!th) return -1;
    double rate = 0;
    for (int pass = 0; pass < 2; pass++) { /* a warm-up pass of one rep, then the timed one */
        host_run r = {.fs = fs, .reps = pass ? reps : 1};
        double t0 = now_s();
        int started = 0;
        for (; started < threads; started++)
            if (pthread_create(&th[started], NULL, host_worker, &r) != 0) break;
        if (!started) host_worker(&r);
        for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
        if (r.failed) {
            fprintf(stderr, "gaio_jpeg_rate: host decode failed: %s\n", r.err);
            free(th);
            return -1;
        }
        rate = (double)fs->n * r.reps / (now_s() - t0);
    }
    free(th);
    return rate;
}

/* ---- nvJPEG: batches on STREAMS streams ---- */

typedef struct lane {
    gaio_stream *s;
    njd_decoder *nj;
    njd_status st;
    int hardware;
    int max_batch;
    char err[256];
    /* the batch in flight */
    int n;
    const uint8_t **data;
    size_t *sizes, *pitch;
    uint8_t **dst;
    gaio_future *done;
} lane;

static gaio_status create_fn(void *native, gaio_status status, void *user) {
    (void)native;
    lane *l = user;
    if (status == GAIO_OK) l->st = njd_create(l->max_batch, &l->nj, &l->hardware, l->err, sizeof l->err);
    return GAIO_OK;
}

static gaio_status decode_fn(void *native, gaio_status status, void *user) {
    lane *l = user;
    if (status != GAIO_OK) return GAIO_OK;
    l->st = njd_decode_batch(l->nj, native, l->data, l->sizes, l->n, l->dst, l->pitch, l->err, sizeof l->err);
    return GAIO_OK;
}

static int lane_wait(lane *l) {
    if (!l->done) return 0;
    gaio_status st = gaio_future_wait(l->done, GAIO_INFINITE);
    gaio_future_release(l->done);
    l->done = NULL;
    if (st != GAIO_OK) {
        fprintf(stderr, "gaio_jpeg_rate: a decode batch failed: %s: %s\n", gaio_status_string(st), gaio_last_error());
        return -1;
    }
    if (l->st != NJD_OK) {
        fprintf(stderr, "gaio_jpeg_rate: nvJPEG: %s\n", l->err);
        return -1;
    }
    return 0;
}

/* The rate, or -1 after saying why (no GPU, no nvJPEG: *why set, the run goes on). */
static double gpu_rate(const files *fs, int batch, int reps, const char **why, int *hardware) {
    static char reason[300];
    int count = 0, dev = -1;
    if (gaio_device_count(&count) == GAIO_OK)
        for (int d = 1; d < count && dev < 0; d++) {
            gaio_device_props p;
            if (gaio_device_get_props(d, &p) == GAIO_OK && p.kind == GAIO_DEVICE_CUDA) dev = d;
        }
    if (dev < 0) {
        *why = "no CUDA device";
        return -1;
    }
    gaio_context *ctx = NULL;
    lane lanes[STREAMS];
    memset(lanes, 0, sizeof lanes);
    gaio_buffer *out = NULL;
    double rate = -1;
    size_t max_bytes = 0;
    for (int i = 0; i < fs->n; i++) {
        size_t b = (size_t)fs->width[i] * 3 * (size_t)fs->height[i];
        if (b > max_bytes) max_bytes = b;
    }
    if (gaio_context_create(dev, NULL, &ctx) != GAIO_OK ||
        gaio_buffer_alloc(ctx, GAIO_MEM_DEVICE, max_bytes * (size_t)batch * STREAMS, &out) != GAIO_OK) {
        snprintf(reason, sizeof reason, "%s", gaio_last_error());
        *why = reason;
        goto done;
    }
    uint8_t *base = NULL;
    if (gaio_buffer_device_ptr(out, (void **)&base) != GAIO_OK) goto done;
    for (int k = 0; k < STREAMS; k++) {
        lane *l = &lanes[k];
        l->max_batch = batch;
        l->data = calloc((size_t)batch, sizeof *l->data), l->sizes = calloc((size_t)batch, sizeof *l->sizes);
        l->pitch = calloc((size_t)batch, sizeof *l->pitch), l->dst = calloc((size_t)batch, sizeof *l->dst);
        if (!l->data || !l->sizes || !l->pitch || !l->dst || gaio_stream_create(ctx, 0, 0, &l->s) != GAIO_OK ||
            gaio_enqueue_native(l->s, create_fn, l) != GAIO_OK || gaio_stream_synchronize(l->s) != GAIO_OK) {
            snprintf(reason, sizeof reason, "making a stream and its decoder: %s", gaio_last_error());
            *why = reason;
            goto done;
        }
        if (l->st != NJD_OK) {
            snprintf(reason, sizeof reason, "nvJPEG: %s", l->err);
            *why = reason;
            goto done;
        }
        *hardware = l->hardware;
        for (int i = 0; i < batch; i++) l->dst[i] = base + ((size_t)k * (size_t)batch + (size_t)i) * max_bytes;
    }
    for (int pass = 0; pass < 2; pass++) {
        int r = pass ? reps : 1;
        double t0 = now_s();
        long nb = 0;
        for (int rep = 0; rep < r; rep++)
            for (int first = 0; first < fs->n; first += batch, nb++) {
                lane *l = &lanes[nb % STREAMS];
                if (lane_wait(l) != 0) goto done;
                l->n = fs->n - first < batch ? fs->n - first : batch;
                for (int i = 0; i < l->n; i++) {
                    l->data[i] = fs->f[first + i].data, l->sizes[i] = fs->f[first + i].size;
                    l->pitch[i] = (size_t)fs->width[first + i] * 3;
                }
                if (gaio_enqueue_native(l->s, decode_fn, l) != GAIO_OK ||
                    gaio_future_fence(l->s, &l->done) != GAIO_OK) {
                    fprintf(stderr, "gaio_jpeg_rate: enqueueing a batch: %s\n", gaio_last_error());
                    goto done;
                }
            }
        for (int k = 0; k < STREAMS; k++)
            if (lane_wait(&lanes[k]) != 0) goto done;
        rate = (double)fs->n * r / (now_s() - t0);
    }
done:
    for (int k = 0; k < STREAMS; k++) {
        lane *l = &lanes[k];
        if (l->done) gaio_future_wait(l->done, GAIO_INFINITE), gaio_future_release(l->done);
        if (l->s) gaio_stream_synchronize(l->s);
        if (l->nj) njd_destroy(l->nj);
        if (l->s) gaio_stream_release(l->s);
        free(l->data), free(l->sizes), free(l->pitch), free(l->dst);
    }
    if (out) gaio_buffer_release(out);
    if (ctx) gaio_context_release(ctx);
    return rate;
}

/* ---- main ---- */

static int arg_int(const char *name, const char *v, int lo, int hi, int *out) {
    char *end;
    errno = 0;
    long x = v ? strtol(v, &end, 10) : 0;
    if (!v || errno || end == v || *end || x < lo || x > hi) {
        fprintf(stderr, "gaio_jpeg_rate: %s needs a number from %d to %d\n", name, lo, hi);
        return -1;
    }
    *out = (int)x;
    return 0;
}

int main(int argc, char **argv) {
    int batch = 32, threads = 0, reps = 3;
    files fs = {0};
    fs.f = calloc((size_t)argc, sizeof *fs.f);
    fs.width = calloc((size_t)argc, sizeof *fs.width), fs.height = calloc((size_t)argc, sizeof *fs.height);
    if (!fs.f || !fs.width || !fs.height) return 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--batch") || !strcmp(a, "--threads") || !strcmp(a, "--reps")) {
            int *dst = a[2] == 'b' ? &batch : a[2] == 't' ? &threads : &reps;
            if (arg_int(a, i + 1 < argc ? argv[++i] : NULL, 1, 4096, dst) != 0) return 2;
            continue;
        }
        char err[200] = "";
        imgio_file *f = &fs.f[fs.n];
        if (imgio_load(a, f, err, sizeof err) != IMGIO_OK || f->format != IMGIO_JPEG) {
            fprintf(stderr, "gaio_jpeg_rate: %s: %s\n", a, f->format != IMGIO_JPEG && !*err ? "not a JPEG" : err);
            return 2;
        }
        imgio_image img; /* the size, for the GPU's output pitch: one host decode per file */
        img.pixels = NULL;
        if (imgio_decode(f, host_alloc, NULL, &img, err, sizeof err) != IMGIO_OK) {
            fprintf(stderr, "gaio_jpeg_rate: %s: %s\n", a, err);
            return 2;
        }
        fs.width[fs.n] = img.width, fs.height[fs.n] = img.height;
        free(img.pixels);
        fs.n++;
    }
    if (!fs.n) {
        fprintf(stderr, "usage: gaio_jpeg_rate [--batch B] [--threads T] [--reps R] FILE.jpg...\n");
        return 2;
    }
    if (!threads) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        threads = n < 1 ? 1 : n > 64 ? 64 : (int)n;
    }
    const char *why = NULL;
    int hardware = 0;
    double g = gpu_rate(&fs, batch < fs.n ? batch : fs.n, reps, &why, &hardware);
    if (g > 0)
        printf("nvJPEG %s: %.1f images/s (batches of %d on %d streams)\n", hardware ? "hardware" : "CUDA", g,
               batch < fs.n ? batch : fs.n, STREAMS);
    else
        printf("nvJPEG: none (%s)\n", why ? why : "failed");
    double h = host_rate(&fs, threads, reps);
    if (h < 0) return 1;
    printf("host libjpeg-turbo: %.1f images/s (%d threads)\n", h, threads);
    for (int i = 0; i < fs.n; i++) imgio_free(&fs.f[i]);
    free(fs.f), free(fs.width), free(fs.height);
    gaio_shutdown();
    return g > 0 || why ? 0 : 1;
}
