/* libFuzzer harness for the engine file reader: any bytes into gaio_engine_load_memory
 * on the host. The header's size and checksum are filled in for the bytes first
 * (gaio__engine_file_seal), so that mutations reach the payload's parser instead of
 * stopping at the checksum; an engine that loads is inspected, given an execution
 * context and run once on zeroed inputs. A finding is a crash, a sanitizer report or
 * a leak; a refusal is the expected answer to most inputs. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gaio/gaio.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);
void gaio__engine_file_seal(unsigned char *data, size_t size);

/* Convolutions on gaio's own host path, not oneDNN: oneDNN's thread-local state in the
 * worker threads crashes LeakSanitizer's tracer (a finding about the harness, not gaio). */
int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    setenv("GAIO_DNN_NO_ONEDNN", "1", 1);
    return 0;
}

static gaio_context *host(void) {
    static gaio_context *ctx;
    if (!ctx) {
        int n = 0;
        gaio_device_count(&n);
        for (int d = 0; d < n && !ctx; d++) {
            gaio_device_props p;
            if (gaio_device_get_props(d, &p) == GAIO_OK && p.kind == GAIO_DEVICE_HOST) gaio_context_create(d, NULL, &ctx);
        }
    }
    return ctx;
}

/* One run on zeroed inputs, when they are small. */
static void run_once(gaio_context *ctx, gaio_engine *e, gaio_model *m) {
    gaio_model_summary s;
    if (gaio_model_summarize(m, &s) != GAIO_OK || s.inputs > 8 || s.outputs > 8) return;
    gaio_model_exec *x = NULL;
    if (gaio_engine_create_exec(e, &x) != GAIO_OK) return;
    gaio_stream *st = NULL;
    gaio_tensor t[16];
    gaio_buffer *b[16] = {0};
    int n = 0, ok = gaio_stream_create(ctx, 0, 0, &st) == GAIO_OK;
    for (int32_t i = 0; ok && i < s.inputs + s.outputs; i++, n++) {
        gaio_model_io io;
        ok = (i < s.inputs ? gaio_engine_input(e, i, &io) : gaio_engine_output(e, i - s.inputs, &io)) == GAIO_OK &&
             io.ndim >= 1 && io.ndim <= GAIO_TENSOR_MAX_NDIM;
        size_t count = 1;
        for (int32_t d = 0; ok && d < io.ndim; d++) {
            ok = io.shape[d] >= 1 && io.shape[d] <= (1 << 20) && count * (size_t)io.shape[d] <= ((size_t)1 << 22);
            if (ok) count *= (size_t)io.shape[d];
        }
        ok = ok && gaio_buffer_alloc(ctx, GAIO_MEM_DEVICE, count * gaio_dtype_size(io.dtype), &b[i]) == GAIO_OK &&
             gaio_memset_async(st, b[i], 0, 0, count * gaio_dtype_size(io.dtype)) == GAIO_OK;
        if (ok) t[i] = gaio_tensor_make(b[i], 0, io.dtype, io.ndim, io.shape, GAIO_TENSOR_ROW_MAJOR);
    }
    if (ok && gaio_model_run(x, st, t, s.inputs, t + s.inputs, s.outputs, NULL) == GAIO_OK)
        gaio_stream_synchronize(st);
    for (int i = 0; i < n; i++)
        if (b[i]) gaio_buffer_release(b[i]);
    if (st) gaio_stream_release(st);
    gaio_model_exec_release(x);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    gaio_context *ctx = host();
    if (!ctx) return 0;
    unsigned char *copy = malloc(size ? size : 1);
    if (!copy) return 0;
    memcpy(copy, data, size);
    gaio__engine_file_seal(copy, size);
    gaio_engine *e = NULL;
    gaio_status st = gaio_engine_load_memory(copy, size, ctx, &e);
    free(copy);
    if (st != GAIO_OK) return 0;
    gaio_engine_info info;
    gaio_model *m = NULL;
    if (gaio_engine_get_info(e, &info) == GAIO_OK && gaio_engine_model(e, &m) == GAIO_OK) {
        gaio_engine_step step;
        for (int32_t i = 0; i < info.steps; i++) gaio_engine_get_step(e, i, &step);
        /* A file may ask for any arena (a real one takes gigabytes): an allocation the
         * fuzzer's malloc limit would report is not a finding. */
        if (info.arena_bytes <= ((size_t)64 << 20)) run_once(ctx, e, m);
    }
    gaio_engine_release(e);
    return 0;
}
