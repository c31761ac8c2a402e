/* decode_pool.h: a FIFO of items under one mutex; workers take the next, the caller
 * sleeps on `done_cv` until its item is finished. */
#define _GNU_SOURCE /* gettid for setpriority of one thread (Linux) */
#include "decode_pool.h"

#include <pthread.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct dp_pool {
    gaio_context *ctx;
    bool upload;
    dp_gpu_ok_fn gpu_ok;
    void *user;
    pthread_mutex_t lock;
    pthread_cond_t work_cv, done_cv;
    dp_item **queue; /* a ring */
    int cap, head, count;
    bool stop;
    int nthreads;
    pthread_t *threads;
};

/* A worker's own stream and pinned staging buffer, where it uploads (dp_create's
 * upload): allocated once and reused, since pinning memory takes the driver's locks
 * for milliseconds (other threads' CUDA calls wait) and a pool cannot keep every
 * image in flight cached. */
typedef struct worker_gpu {
    gaio_stream *s;
    gaio_buffer *stage;
    size_t stage_bytes;
    char err[160];
} worker_gpu;

typedef struct alloc_ctx {
    gaio_context *ctx;
    worker_gpu *w;   /* uploading: the pixels go to its stage */
    gaio_buffer *buf;
    uint8_t *gray; /* 1-channel images decode here, then expand to RGB */
    char err[160];
} alloc_ctx;

#define WORKER_NICE 10

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Larger images are refused before any memory is taken: a small file may claim 65500 x
 * 65500 pixels (12 GiB), and classification wants no image that large. */
#define MAX_PIXELS ((size_t)1 << 28)

/* The worker's stage, at least bytes large; NULL with a->err set. */
static uint8_t *stage(alloc_ctx *a, size_t bytes) {
    worker_gpu *w = a->w;
    if (w->stage_bytes < bytes) {
        if (w->stage) gaio_buffer_release(w->stage);
        w->stage = NULL, w->stage_bytes = 0;
        size_t want = (bytes + ((size_t)8 << 20) - 1) / ((size_t)8 << 20) * ((size_t)8 << 20); /* 8 MB steps */
        if (gaio_buffer_alloc(a->ctx, GAIO_MEM_PINNED, want, &w->stage) != GAIO_OK) {
            snprintf(a->err, sizeof a->err, "%s", gaio_last_error());
            return NULL;
        }
        w->stage_bytes = want;
    }
    void *p = NULL;
    if (gaio_buffer_host_ptr(w->stage, &p) != GAIO_OK) snprintf(a->err, sizeof a->err, "%s", gaio_last_error());
    return p;
}

static uint8_t *alloc_pixels(void *user, int width, int height, int channels, size_t bytes) {
    alloc_ctx *a = user;
    if ((size_t)width * (size_t)height > MAX_PIXELS) {
        snprintf(a->err, sizeof a->err, "the image is %dx%d: over the %zu pixels gaio classify takes", width, height,
                 MAX_PIXELS);
        return NULL;
    }
    if (channels == 1) {
        a->gray = malloc(bytes);
        if (!a->gray) snprintf(a->err, sizeof a->err, "out of host memory for a %dx%d image", width, height);
        return a->gray;
    }
    if (a->w) return stage(a, bytes);
    void *p = NULL;
    gaio_status st = gaio_buffer_alloc(a->ctx, GAIO_MEM_PINNED, bytes, &a->buf);
    if (st == GAIO_OK) st = gaio_buffer_host_ptr(a->buf, &p);
    if (st != GAIO_OK) snprintf(a->err, sizeof a->err, "%s", gaio_last_error());
    return p;
}

/* The RGB pixels in the worker's stage into a device buffer of their own. */
static void upload(dp_pool *p, worker_gpu *w, dp_item *it, size_t bytes) {
    gaio_buffer *dev = NULL;
    double t0 = now_s();
    const char *call = "gaio_buffer_alloc";
    gaio_status st = gaio_buffer_alloc(p->ctx, GAIO_MEM_DEVICE, bytes, &dev);
    if (st == GAIO_OK) call = "gaio_memcpy_async", st = gaio_memcpy_async(w->s, dev, 0, w->stage, 0, bytes);
    if (st == GAIO_OK) call = "gaio_stream_synchronize", st = gaio_stream_synchronize(w->s);
    if (st != GAIO_OK) {
        snprintf(it->err, sizeof it->err, "uploading the decoded image: %s: %s", call, gaio_last_error());
        it->failed = true;
        if (dev) gaio_buffer_release(dev);
        return;
    }
    it->pixels = dev;
    it->t_upload = now_s() - t0;
}

static void decode_host(dp_pool *p, worker_gpu *w, dp_item *it) {
    alloc_ctx a = {p->ctx, w, NULL, NULL, ""};
    imgio_image img;
    char err[200];
    imgio_status s = imgio_decode(&it->file, alloc_pixels, &a, &img, err, sizeof err);
    uint8_t *rgb = NULL; /* where the RGB pixels end up */
    if (s != IMGIO_OK) {
        snprintf(it->err, sizeof it->err, "%s", s == IMGIO_ALLOC_FAILED ? a.err : err);
        it->failed = true;
    } else if (img.channels == 1) {
        size_t n = (size_t)img.width * (size_t)img.height;
        void *px = NULL;
        if (w) {
            px = stage(&a, n * 3);
        } else if (gaio_buffer_alloc(p->ctx, GAIO_MEM_PINNED, n * 3, &a.buf) != GAIO_OK ||
                   gaio_buffer_host_ptr(a.buf, &px) != GAIO_OK) {
            snprintf(a.err, sizeof a.err, "%s", gaio_last_error());
            px = NULL;
        }
        if (!px) {
            snprintf(it->err, sizeof it->err, "%s", a.err);
            it->failed = true;
        } else {
            uint8_t *d = px;
            for (size_t i = 0; i < n; i++) d[3 * i] = d[3 * i + 1] = d[3 * i + 2] = a.gray[i];
            img.channels = 3;
            rgb = d;
        }
    } else {
        rgb = img.pixels;
    }
    if (!it->failed && img.channels == 4) { /* RGBA -> RGB in place (a batch has one channel count) */
        size_t n = (size_t)img.width * (size_t)img.height;
        for (size_t i = 0; i < n; i++)
            rgb[3 * i] = rgb[4 * i], rgb[3 * i + 1] = rgb[4 * i + 1], rgb[3 * i + 2] = rgb[4 * i + 2];
        img.channels = 3;
    }
    free(a.gray);
    if (!it->failed) {
        it->width = img.width, it->height = img.height, it->channels = img.channels;
        if (w) upload(p, w, it, (size_t)img.width * (size_t)img.height * 3);
        else it->pixels = a.buf, a.buf = NULL;
    }
    if (a.buf) gaio_buffer_release(a.buf);
    if (!it->failed) imgio_free(&it->file); /* the pixels are all we need */
}

static void process(dp_pool *p, worker_gpu *w, dp_item *it) {
    char err[200];
    if (imgio_load(it->path, &it->file, err, sizeof err) != IMGIO_OK) {
        snprintf(it->err, sizeof it->err, "%s", err);
        it->failed = true;
        return;
    }
    if (p->gpu_ok && !it->host && it->file.format == IMGIO_JPEG &&
        p->gpu_ok(p->user, it->file.data, it->file.size, &it->width, &it->height) &&
        (size_t)it->width * (size_t)it->height <= MAX_PIXELS) {
        it->on_gpu = true;
        it->channels = 3;
        return;
    }
    decode_host(p, w, it);
}

static void *worker(void *arg) {
    dp_pool *p = arg;
    worker_gpu w = {0}, *wp = NULL;
    if (p->upload) {
        /* Decoding beside a GPU, the workers only take cores the pipeline's thread
         * leaves: it hands nvJPEG its batches, about a quarter of a millisecond of host
         * time an image, and preempted by decodes it starves the JPEG engine.
         * Linux gives each thread its own nice value; elsewhere this fails, harmlessly. */
        (void)setpriority(PRIO_PROCESS, (id_t)gettid(), WORKER_NICE);
        /* Without a stream of its own, the worker's items fail with the reason. */
        if (gaio_stream_create(p->ctx, 0, 0, &w.s) == GAIO_OK) wp = &w;
        else snprintf(w.err, sizeof w.err, "gaio_stream_create: %s", gaio_last_error());
    }
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (!p->count && !p->stop) pthread_cond_wait(&p->work_cv, &p->lock);
        if (!p->count) break; /* stopping, and nothing left */
        dp_item *it = p->queue[p->head];
        p->head = (p->head + 1) % p->cap, p->count--;
        pthread_mutex_unlock(&p->lock);
        it->t_start = now_s();
        if (p->upload && !wp) {
            snprintf(it->err, sizeof it->err, "%s", w.err);
            it->failed = true;
        } else {
            process(p, wp, it);
        }
        it->t_done = now_s();
        pthread_mutex_lock(&p->lock);
        atomic_store(&it->done, 1);
        pthread_cond_broadcast(&p->done_cv);
    }
    pthread_mutex_unlock(&p->lock);
    if (w.stage) gaio_buffer_release(w.stage);
    if (w.s) gaio_stream_release(w.s);
    return NULL;
}

int dp_create(gaio_context *ctx, int threads, bool upload, dp_gpu_ok_fn gpu_ok, void *user, dp_pool **out,
              char *err, size_t errlen) {
    *out = NULL;
    dp_pool *p = calloc(1, sizeof *p);
    if (!p || !(p->threads = calloc((size_t)threads, sizeof *p->threads))) {
        free(p);
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    p->ctx = ctx, p->upload = upload, p->gpu_ok = gpu_ok, p->user = user;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->work_cv, NULL);
    pthread_cond_init(&p->done_cv, NULL);
    for (int i = 0; i < threads; i++) {
        int rc = pthread_create(&p->threads[i], NULL, worker, p);
        if (rc != 0) {
            snprintf(err, errlen, "pthread_create failed: %s", strerror(rc));
            dp_destroy(p);
            return -1;
        }
        p->nthreads++;
    }
    *out = p;
    return 0;
}

void dp_submit(dp_pool *p, dp_item *items, int n) {
    pthread_mutex_lock(&p->lock);
    if (p->count + n > p->cap) { /* grow the ring, unrolled into the new array */
        int cap = p->cap ? p->cap : 64;
        while (cap < p->count + n) cap *= 2;
        dp_item **q = malloc((size_t)cap * sizeof *q);
        if (!q) { /* out of memory: the caller gets the items back failed */
            pthread_mutex_unlock(&p->lock);
            for (int i = 0; i < n; i++) {
                snprintf(items[i].err, sizeof items[i].err, "out of host memory queueing the file");
                items[i].failed = true;
                atomic_store(&items[i].done, 1);
            }
            return;
        }
        for (int i = 0; i < p->count; i++) q[i] = p->queue[(p->head + i) % p->cap];
        free(p->queue);
        p->queue = q, p->cap = cap, p->head = 0;
    }
    double t = now_s();
    for (int i = 0; i < n; i++) items[i].t_queued = t, p->queue[(p->head + p->count++) % p->cap] = &items[i];
    pthread_cond_broadcast(&p->work_cv);
    pthread_mutex_unlock(&p->lock);
}

void dp_wait(dp_pool *p, dp_item *item) {
    if (atomic_load(&item->done)) return;
    pthread_mutex_lock(&p->lock);
    while (!atomic_load(&item->done)) pthread_cond_wait(&p->done_cv, &p->lock);
    pthread_mutex_unlock(&p->lock);
}

void dp_item_reset(dp_item *item) {
    imgio_free(&item->file);
    if (item->pixels) gaio_buffer_release(item->pixels);
    const char *path = item->path;
    memset(item, 0, sizeof *item);
    item->path = path;
}

void dp_destroy(dp_pool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->lock);
    p->stop = true;
    pthread_cond_broadcast(&p->work_cv);
    pthread_mutex_unlock(&p->lock);
    for (int i = 0; i < p->nthreads; i++) pthread_join(p->threads[i], NULL);
    pthread_cond_destroy(&p->work_cv);
    pthread_cond_destroy(&p->done_cv);
    pthread_mutex_destroy(&p->lock);
    free(p->queue);
    free(p->threads);
    free(p);
}
