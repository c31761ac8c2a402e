/* libFuzzer harness for the CLI's image decoders (tools/image_io.c over libpng and
 * libjpeg-turbo): any bytes, sniffed as imgio_load does, into imgio_decode. One path,
 * the one `gaio resize` and `gaio convert` take. A finding is a crash, a sanitizer
 * report, a leak, or a broken contract (checked below and reported with abort()):
 * a refusal is the expected answer to most inputs. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image_io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Headers may claim up to 65500 x 65500 (JPEG) or a million per side (PNG) from a
 * few bytes; past this the allocator refuses, so libFuzzer's malloc limit is not
 * what stops them. The refusal is the same path a failed malloc takes in the CLI. */
#define PIXEL_BUDGET ((size_t)16 << 20)

typedef struct alloc_log {
    int calls;
    int width, height, channels;
    size_t bytes;
    uint8_t *pixels;
    int refused;
} alloc_log;

static uint8_t *fuzz_alloc(void *user, int width, int height, int channels, size_t bytes) {
    alloc_log *log = user;
    log->calls++;
    log->width = width;
    log->height = height;
    log->channels = channels;
    log->bytes = bytes;
    if (width < 1 || height < 1 || (channels != 1 && channels != 3 && channels != 4) ||
        bytes != (size_t)width * (size_t)height * (size_t)channels) {
        fprintf(stderr, "fuzz_image_decode: alloc asked for %dx%dx%d in %zu bytes\n", width, height, channels, bytes);
        abort();
    }
    if (bytes > PIXEL_BUDGET * (size_t)channels) {
        log->refused = 1;
        return NULL;
    }
    log->pixels = malloc(bytes);
    return log->pixels;
}

static void fail(const char *why, const char *err) {
    fprintf(stderr, "fuzz_image_decode: %s (err: \"%s\")\n", why, err);
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* imgio_decode reads but does not own file->data: a const view of libFuzzer's
     * buffer is enough. */
    imgio_file file = {.data = (uint8_t *)data, .size = size, .format = imgio_sniff(data, size)};
    if (file.format == IMGIO_NONE) return 0;

    alloc_log log = {0};
    imgio_image img;
    memset(&img, 0, sizeof img);
    char err[256];
    err[0] = 0;
    imgio_status st = imgio_decode(&file, fuzz_alloc, &log, &img, err, sizeof err);

    if (log.calls > 1) fail("the allocator was called more than once", err);
    if (log.refused && st != IMGIO_ALLOC_FAILED) fail("a refused allocation did not end in IMGIO_ALLOC_FAILED", err);
    if (st == IMGIO_ALLOC_FAILED && !log.refused) fail("IMGIO_ALLOC_FAILED without a refusal", err);
    if (st == IMGIO_FAILED && (!err[0] || strchr(err, '\n'))) fail("IMGIO_FAILED without one line of reason", err);
    if (st == IMGIO_OK) {
        if (!log.pixels || img.pixels != log.pixels || img.width != log.width || img.height != log.height ||
            img.channels != log.channels || img.pitch != (size_t)img.width * (size_t)img.channels)
            fail("the image returned is not the one allocated", err);
        /* Every decoded byte read once, so the sanitizers see a read of any the
         * decoder left unwritten or wrote out of bounds. */
        volatile uint32_t sum = 0;
        for (size_t i = 0; i < log.bytes; i++) sum += img.pixels[i];
        (void)sum;
    }
    free(log.pixels); /* the caller's, also when decoding failed afterwards */
    return 0;
}
