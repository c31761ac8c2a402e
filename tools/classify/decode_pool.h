/* Reading and decoding image files on a pool of host threads, ahead of the GPU.
 *
 * Each item is one file: a worker reads it, then either leaves it to the GPU (the
 * `gpu_ok` callback accepts its bytes: nvJPEG decodes it later, in a batch) or decodes
 * it itself with libjpeg-turbo or libpng into an RGB image in pinned memory of the
 * context (gray is expanded, alpha dropped: a batch has one channel count). Items are taken in
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
    /* Results, valid once dp_wait returned: */
    bool failed;           /* err says why */
    char err[256];
    bool on_gpu;           /* file holds the bytes for the GPU decoder */
    imgio_file file;
    int width, height;
    int channels;          /* 3 */
    gaio_buffer *pixels;   /* host-decoded: pinned, rows of width * channels bytes, packed */
    atomic_int done;
} dp_item;

/* May the GPU decode these bytes? Sets *width, *height when it may. Thread safe. */
typedef bool (*dp_gpu_ok_fn)(void *user, const uint8_t *data, size_t size, int *width, int *height);

typedef struct dp_pool dp_pool;

/* threads >= 1; gpu_ok may be NULL (everything on the host). */
int dp_create(gaio_context *ctx, int threads, dp_gpu_ok_fn gpu_ok, void *user, dp_pool **out, char *err,
              size_t errlen);
/* Queues n items (the array stays the caller's, untouched until each is done). */
void dp_submit(dp_pool *p, dp_item *items, int n);
void dp_wait(dp_pool *p, dp_item *item);
/* Frees an item's bytes and pixels (after dp_wait). */
void dp_item_reset(dp_item *item);
/* Finishes the queued items, then stops the threads. */
void dp_destroy(dp_pool *p);

#endif
