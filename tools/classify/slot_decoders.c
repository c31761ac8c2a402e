/* The slots' nvJPEG decoders of gaio classify: made during setup (--decode gpu) or
 * beside the running batches (--decode auto), and the native function that decodes a
 * slot's batch on its stream. nvJPEG's calls run inside gaio_enqueue_native, with the
 * context current. */
#include <stdio.h>
#include <string.h>

#include "classify_job.h"

typedef struct create_args {
    slot *sl;
    int batch, hardware;
    njd_status st;
    char err[256];
} create_args;

static gaio_status create_fn(void *native, gaio_status status, void *user) {
    (void)native;
    create_args *a = user;
    if (status != GAIO_OK) return GAIO_OK;
    a->st = njd_create(a->batch, &a->sl->nj, &a->hardware, a->err, sizeof a->err);
    return GAIO_OK;
}

gaio_status nvjpeg_decode_fn(void *native, gaio_status status, void *user) {
    slot *sl = user;
    if (status != GAIO_OK || !sl->ngpu) return GAIO_OK;
    char err[200];
    if (njd_decode_batch(sl->nj, native, sl->data, sl->sizes, sl->ngpu, sl->dst, sl->pitch, err, sizeof err) ==
        NJD_OK)
        return GAIO_OK;
    /* One bad file fails the batch: decode them one by one to find it; the rest stand. */
    for (int i = 0; i < sl->ngpu; i++)
        if (njd_decode_batch(sl->nj, native, &sl->data[i], &sl->sizes[i], 1, &sl->dst[i], &sl->pitch[i], err,
                             sizeof err) != NJD_OK) {
            dp_item *it = &sl->j->items[sl->first + sl->gpu_item[i]];
            snprintf(it->err, sizeof it->err, "nvJPEG: %s", err);
            it->failed = true;
        }
    return GAIO_OK;
}

bool nvjpeg_gpu_ok(void *user, const uint8_t *data, size_t size, int *w, int *h) {
    job *j = user;
    char err[256];
    return njd_probe(j->slots[0].nj, data, size, w, h, err, sizeof err) == NJD_OK;
}

/* One slot's decoder, made on a thread of its own: making a hardware decoder takes about
 * a third of a second, so the slots' are made at once, while the engine loads. */
typedef struct create_job {
    create_args a;
    gaio_status st;
    pthread_t th;
    bool started;
} create_job;

static void *create_thread(void *arg) {
    create_job *c = arg;
    c->st = gaio_enqueue_native(c->a.sl->s, create_fn, &c->a);
    if (c->st == GAIO_OK) c->st = gaio_stream_synchronize(c->a.sl->s);
    return NULL;
}

static create_job creating[SLOTS];

int nvjpeg_ready_slots(job *j) { return atomic_load_explicit(&j->nv_ready, memory_order_acquire); }

void nvjpeg_setup_start(job *j) {
    if (!j->gpu || j->decode != DECODE_GPU) return;
    for (int k = 0; k < SLOTS; k++) {
        create_job *c = &creating[k];
        memset(c, 0, sizeof *c);
        c->a = (create_args){&j->slots[k], j->batch, 0, NJD_FAILED, ""};
        c->started = pthread_create(&c->th, NULL, create_thread, c) == 0;
        if (!c->started) create_thread(c); /* no thread: made here */
    }
}

int nvjpeg_setup_finish(job *j) {
    if (!j->gpu || j->decode != DECODE_GPU) return 0;
    gaio_status st = GAIO_OK;
    const char *err = NULL;
    for (int k = 0; k < SLOTS; k++) {
        create_job *c = &creating[k];
        if (c->started) pthread_join(c->th, NULL);
        if (st == GAIO_OK) st = c->st;
        if (!err && c->st == GAIO_OK && c->a.st != NJD_OK) err = c->a.err;
        j->hardware = c->a.hardware;
    }
    if (st != GAIO_OK || err) {
        for (int k = 0; k < SLOTS; k++)
            if (j->slots[k].nj) njd_destroy(j->slots[k].nj), j->slots[k].nj = NULL;
    }
    if (st != GAIO_OK) return classify_failed(j, st, "gaio_enqueue_native (nvJPEG)");
    if (err) {
        snprintf(j->nv_err, sizeof j->nv_err, "no nvJPEG: %.200s", err);
        return 0;
    }
    atomic_store_explicit(&j->nv_ready, SLOTS, memory_order_release);
    return 0;
}

/* --decode auto: the decoders made one after another on a thread of their own while
 * the batches run (the first costs about 0.6 s, each later one about 0.15 s), each
 * slot's published as soon as it is made; slot 0's first, as njd_probe uses it. Made
 * through a stream of their own, on this thread (a plain stream runs native work on
 * the caller's thread): the slots' streams carry batches meanwhile. */
static void *nv_background(void *arg) {
    job *j = arg;
    for (int k = 0; k < SLOTS; k++) {
        create_args a = {&j->slots[k], j->batch, 0, NJD_FAILED, ""};
        gaio_status st = gaio_enqueue_native(j->nv_stream, create_fn, &a);
        if (st == GAIO_OK) st = gaio_stream_synchronize(j->nv_stream);
        if (st != GAIO_OK || a.st != NJD_OK) {
            if (!k) /* a later slot's failure only leaves its batches to the host */
                snprintf(j->nv_err, sizeof j->nv_err, "no nvJPEG: %.200s", st != GAIO_OK ? gaio_last_error() : a.err);
            return NULL;
        }
        j->hardware = a.hardware;
        atomic_store_explicit(&j->nv_ready, k + 1, memory_order_release);
    }
    return NULL;
}

void nvjpeg_background_start(job *j) {
    if (!j->gpu || j->decode != DECODE_AUTO) return;
    if (j->nimages <= (long)j->threads * AUTO_NVJPEG_PER_THREAD) {
        snprintf(j->nv_err, sizeof j->nv_err, "%ld images for %d threads: nvJPEG not started", j->nimages,
                 j->threads);
        return;
    }
    gaio_status st = gaio_stream_create(j->ctx, 0, 0, &j->nv_stream);
    if (st != GAIO_OK) {
        snprintf(j->nv_err, sizeof j->nv_err, "no nvJPEG: gaio_stream_create: %.200s", gaio_last_error());
        return;
    }
    j->nv_started = pthread_create(&j->nv_thread, NULL, nv_background, j) == 0;
    if (!j->nv_started) snprintf(j->nv_err, sizeof j->nv_err, "no nvJPEG: no thread to start it on");
}

/* The background thread done (its decoders are the slots' to destroy), and the
 * summary's words for the decoders. */
void nvjpeg_finish(job *j) {
    if (j->nv_started) pthread_join(j->nv_thread, NULL);
    j->nv_started = false;
    if (j->nv_stream) gaio_stream_release(j->nv_stream), j->nv_stream = NULL;
    const char *hw = j->hardware ? "hardware" : "CUDA";
    if (!j->gpu)
        snprintf(j->nvjpeg_note, sizeof j->nvjpeg_note, "host");
    else if (j->decode == DECODE_HOST)
        snprintf(j->nvjpeg_note, sizeof j->nvjpeg_note, "host (--decode host)");
    else if (j->nv_err[0])
        snprintf(j->nvjpeg_note, sizeof j->nvjpeg_note, "host (%.250s)", j->nv_err);
    else if (j->decode == DECODE_GPU)
        snprintf(j->nvjpeg_note, sizeof j->nvjpeg_note, "nvJPEG %s + host", hw);
    else if (j->first_gpu_batch < 0)
        snprintf(j->nvjpeg_note, sizeof j->nvjpeg_note, "host (nvJPEG %s was up only after the last batch was read)",
                 hw);
    else
        snprintf(j->nvjpeg_note, sizeof j->nvjpeg_note, "host, then nvJPEG %s + host from batch %ld", hw,
                 j->first_gpu_batch + 1);
    if (j->host_quota) {
        size_t len = strlen(j->nvjpeg_note);
        snprintf(j->nvjpeg_note + len, sizeof j->nvjpeg_note - len, " (host share %d/%d)", j->host_quota, j->batch);
    }
}
