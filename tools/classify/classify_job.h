/* gaio classify's state, shared by cmd_classify.c (the command: setup, the pipeline's
 * batches) and slot_decoders.c (the slots' nvJPEG decoders). */
#ifndef GAIO_TOOLS_CLASSIFY_JOB_H
#define GAIO_TOOLS_CLASSIFY_JOB_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "decode_pool.h"
#include "engine_cache.h"
#include "gaio/gaio.h"
#include "labels.h"
#include "nvjpeg_decode.h"
#include "progress.h"

#define SLOTS 3
#define MAX_BATCH 1024
/* --decode auto starts nvJPEG only for runs of more images than this per host thread:
 * its decoders take about 0.6 s to make (perf-notes, "The 0.5 s setup target"), in
 * which the threads decode about 30 1080p JPEGs each. */
#define AUTO_NVJPEG_PER_THREAD 32

typedef enum decode_mode {
    DECODE_AUTO, /* host threads from the start, nvJPEG's batches once its decoders are up */
    DECODE_GPU,  /* setup waits for nvJPEG: it takes every JPEG it can */
    DECODE_HOST  /* no nvJPEG */
} decode_mode;

typedef struct slot {
    struct job *j;
    gaio_stream *s;
    njd_decoder *nj;
    gaio_buffer *in, *out, *out_host;
    gaio_future *done;
    long first;  /* the batch's first image */
    int n;       /* images in the batch (0: the slot is free) */
    /* The nvJPEG part of the batch, read by decode_fn in stream order. */
    int ngpu;
    const uint8_t **data;
    size_t *sizes, *pitch;
    uint8_t **dst;
    int *gpu_item;     /* batch index of each */
    int *row_of;       /* batch index -> row of the model's input, or -1 (failed) */
    /* The preprocess's sources and crops, and the batch's buffers until enqueued. */
    gaio_image *srcs;
    gaio_rect *rois;
    gaio_buffer **bufs;
    bool decode_failed;
} slot;

typedef struct job {
    const char *model_path, *labels_path, *cache_dir;
    int top, batch, device, threads;
    double host_share; /* --host-share */
    bool host_share_given;
    bool quiet, no_cache;
    decode_mode decode;
    bool decode_given;
    const char **images;
    long nimages;
    gaio_context *ctx;
    bool gpu;
    gaio_model *model;
    gaio_engine *engine;
    gaio_model_exec *exec;
    gaio_dtype in_dtype, out_dtype;
    int64_t in_h, in_w, classes;
    int32_t out_ndim;
    int64_t out_shape[GAIO_TENSOR_MAX_NDIM]; /* the batch resolved */
    labels names;
    dp_item *items;
    dp_pool *pool;
    long submitted;        /* items handed to the pool */
    long first_gpu_batch;  /* the first batch any of whose items went to nvJPEG, or -1 */
    slot slots[SLOTS];
    /* Slots 0..nv_ready-1 have a decoder: set once before the run (--decode gpu), or
     * raised by the background thread that makes them one after another (auto). */
    atomic_int nv_ready;
    pthread_t nv_thread;
    bool nv_started;
    gaio_stream *nv_stream; /* the background thread's: the slots' streams carry batches */
    char nv_err[256];
    engine_cache_model hashed; /* the model file's part of the engine cache's key */
    int hardware; /* nvJPEG's backend: 1 hardware, 0 default, -1 none */
    int host_quota; /* of a full batch's JPEGs nvJPEG could take, those the host threads decode */
    char nvjpeg_note[320];
    double t_device, t_model, t_engine, t_exec, t_nvjpeg; /* setup's parts, seconds */
    double t_read; /* the cache's key and file, beside the context's making */
    engine_cache_entry entry; /* read_cached_engine's */
    int guessed_batch; /* of an engine found in the cache before the model was parsed */
    long done_images, failed_images;
    progress bar;
    float *scores;
    int *top_idx;
    float *top_val;
} job;

/* Prints "gaio classify: CALL failed: ..." with gaio's message; returns 1. */
int classify_failed(job *j, gaio_status st, const char *call);

/* ---- the slots' nvJPEG decoders (slot_decoders.c) ---- */

/* Slots 0..n-1 have a decoder: batches run there may hand nvJPEG their JPEGs. */
int nvjpeg_ready_slots(job *j);
/* --decode gpu: every slot's decoder made on a thread of its own during setup, and
 * waited for (1 when a gaio call failed; nvJPEG's own failure leaves the host to decode). */
void nvjpeg_setup_start(job *j);
int nvjpeg_setup_finish(job *j);
/* --decode auto, after setup: the decoders made one after another beside the batches,
 * for runs long enough to pay for them. */
void nvjpeg_background_start(job *j);
/* The background thread joined, and j->nvjpeg_note says how the run decoded. */
void nvjpeg_finish(job *j);
/* gaio_enqueue_native's function decoding a slot's nvJPEG items, and the decode pool's
 * question whether nvJPEG takes a file (asked only once slot 0 has a decoder). */
gaio_status nvjpeg_decode_fn(void *native, gaio_status status, void *user);
bool nvjpeg_gpu_ok(void *user, const uint8_t *data, size_t size, int *w, int *h);

#endif
