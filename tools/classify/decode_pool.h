/* Reading and decoding image files on a pool of host threads, ahead of the GPU.
 *
 * Each item is one file: a worker reads it, then either leaves it to the GPU (the
 * `gpu_ok` callback accepts its bytes and the item is not marked `host`: nvJPEG decodes
 * it later, in a batch) or decodes it itself with libjpeg-turbo or libpng into an RGB
 * image in pinned memory of the context, or in device memory where the pool uploads
 * (gray is expanded, alpha dropped: a batch has one channel count). Items are taken in
 * submission order; the caller waits for each in the same order. */
#ifndef GAIO_TOOLS_DECODE_POOL_H
#define GAIO_TOOLS_DECODE_POOL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gaio/gaio.h"
#include "image_io.h"

typedef struct dp_item {
    const char *path;
    bool host;             /* in: decode on the host even where the GPU could */
    /* Results, valid once dp_wait returned: */
    bool failed;           /* err says why */
    char err[256];
    bool on_gpu;           /* file holds the bytes for the GPU decoder */
    imgio_file file;
    int width, height;
    int channels;          /* 3 */
    gaio_buffer *pixels;   /* host-decoded: rows of width * channels bytes, packed; pinned,
                              or device memory where the pool uploads */
    double t_queued, t_start, t_upload, t_done; /* seconds (CLOCK_MONOTONIC): when queued, taken, done; upload's time */
    atomic_int done;
} dp_item;

/* May the GPU decode these bytes? Sets *width, *height when it may. Thread safe. */
typedef bool (*dp_gpu_ok_fn)(void *user, const uint8_t *data, size_t size, int *width, int *height);

typedef struct dp_pool dp_pool;

/* threads >= 1; gpu_ok may be NULL (everything on the host). upload (ctx on a GPU):
 * each worker copies its host-decoded images to device memory itself, through a
 * pinned buffer of its own, on a stream of its own, so the images arrive on the GPU
 * with no pinned allocation per image and no copy for the caller to enqueue. */
int dp_create(gaio_context *ctx, int threads, bool upload, dp_gpu_ok_fn gpu_ok, void *user, dp_pool **out,
              char *err, size_t errlen);
/* Queues n items (the array stays the caller's, untouched until each is done). */
void dp_submit(dp_pool *p, dp_item *items, int n);
void dp_wait(dp_pool *p, dp_item *item);
/* Frees an item's bytes and pixels (after dp_wait). */
void dp_item_reset(dp_item *item);
/* Finishes the queued items, then stops the threads. */
void dp_destroy(dp_pool *p);

#endif
