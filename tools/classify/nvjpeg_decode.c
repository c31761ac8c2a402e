/* Batched GPU JPEG decode with nvJPEG, loaded with dlopen (see nvjpeg_decode.h).
 * The nvJPEG declarations used here, and the header version they were checked against,
 * are in nvjpeg_api.h. The only global state is the library's function table, filled
 * once under pthread_once; everything else lives in the njd_decoder. */
#include "nvjpeg_decode.h"

#include "nvjpeg_api.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the library -------------------------------------------------------------- */

typedef struct nvjpeg_lib {
    void *dl;
    pfn_nvjpegCreateEx CreateEx;
    pfn_nvjpegDestroy Destroy;
    pfn_nvjpegJpegStateCreate JpegStateCreate;
    pfn_nvjpegJpegStateDestroy JpegStateDestroy;
    pfn_nvjpegGetImageInfo GetImageInfo;
    pfn_nvjpegDecodeBatchedInitialize DecodeBatchedInitialize;
    pfn_nvjpegDecodeBatched DecodeBatched;
    pfn_nvjpegJpegStreamCreate JpegStreamCreate;
    pfn_nvjpegJpegStreamDestroy JpegStreamDestroy;
    pfn_nvjpegJpegStreamParse JpegStreamParse;
    pfn_nvjpegJpegStreamGetJpegEncoding JpegStreamGetJpegEncoding;
    pfn_nvjpegDecodeBatchedSupported DecodeBatchedSupported;
    pfn_nvjpegJpegStreamGetSamplePrecision JpegStreamGetSamplePrecision; /* may be NULL */
} nvjpeg_lib;

static nvjpeg_lib g_lib;
static int g_lib_ok;
static char g_lib_err[512];
static pthread_once_t g_lib_once = PTHREAD_ONCE_INIT;

/* The loader path often lacks the toolkit's lib64 on CUDA machines, hence the
 * second, absolute try for each name. */
static void *open_nvjpeg(void)
{
    const char *env = getenv("GAIO_NVJPEG_LIBRARY");
    if (env && env[0]) {
        void *h = dlopen(env, RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            const char *e = dlerror();
            snprintf(g_lib_err, sizeof g_lib_err, "dlopen(GAIO_NVJPEG_LIBRARY=%s) failed: %s", env, e ? e : "?");
        }
        return h;
    }
    static const char *const names[] = {"libnvjpeg.so.13", "libnvjpeg.so.12", "libnvjpeg.so.11", "libnvjpeg.so"};
    char path[256];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (h)
            return h;
        snprintf(path, sizeof path, "/usr/local/cuda/lib64/%s", names[i]);
        h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (h)
            return h;
    }
    const char *e = dlerror();
    snprintf(g_lib_err, sizeof g_lib_err,
             "dlopen of libnvjpeg (.so.13, .so.12, .so.11, .so; also under /usr/local/cuda/lib64) failed: %s",
             e ? e : "?");
    return NULL;
}

/* Casting dlsym's void * to a function pointer is what POSIX requires to work. */
#define NJD_LOAD(field, sym)                                                                                     \
    do {                                                                                                         \
        g_lib.field = (pfn_##sym)dlsym(g_lib.dl, #sym);                                                          \
        if (!g_lib.field) {                                                                                      \
            snprintf(g_lib_err, sizeof g_lib_err, "libnvjpeg has no symbol %s", #sym);                           \
            goto fail;                                                                                           \
        }                                                                                                        \
    } while (0)

static void load_lib(void)
{
    g_lib.dl = open_nvjpeg();
    if (!g_lib.dl)
        return;
    NJD_LOAD(CreateEx, nvjpegCreateEx);
    NJD_LOAD(Destroy, nvjpegDestroy);
    NJD_LOAD(JpegStateCreate, nvjpegJpegStateCreate);
    NJD_LOAD(JpegStateDestroy, nvjpegJpegStateDestroy);
    NJD_LOAD(GetImageInfo, nvjpegGetImageInfo);
    NJD_LOAD(DecodeBatchedInitialize, nvjpegDecodeBatchedInitialize);
    NJD_LOAD(DecodeBatched, nvjpegDecodeBatched);
    NJD_LOAD(JpegStreamCreate, nvjpegJpegStreamCreate);
    NJD_LOAD(JpegStreamDestroy, nvjpegJpegStreamDestroy);
    NJD_LOAD(JpegStreamParse, nvjpegJpegStreamParse);
    NJD_LOAD(JpegStreamGetJpegEncoding, nvjpegJpegStreamGetJpegEncoding);
    NJD_LOAD(DecodeBatchedSupported, nvjpegDecodeBatchedSupported);
    g_lib.JpegStreamGetSamplePrecision =
        (pfn_nvjpegJpegStreamGetSamplePrecision)dlsym(g_lib.dl, "nvjpegJpegStreamGetSamplePrecision");
    g_lib_ok = 1;
    return;
fail:
    /* g_lib_ok stays 0. The library stays open: unloading a CUDA library mid-process
     * is riskier than the few megabytes it keeps mapped. */
    return;
}

#undef NJD_LOAD

static const char *status_name(nvjpegStatus_t s)
{
    switch (s) {
    case NVJPEG_STATUS_SUCCESS: return "NVJPEG_STATUS_SUCCESS";
    case NVJPEG_STATUS_NOT_INITIALIZED: return "NVJPEG_STATUS_NOT_INITIALIZED";
    case NVJPEG_STATUS_INVALID_PARAMETER: return "NVJPEG_STATUS_INVALID_PARAMETER";
    case NVJPEG_STATUS_BAD_JPEG: return "NVJPEG_STATUS_BAD_JPEG";
    case NVJPEG_STATUS_JPEG_NOT_SUPPORTED: return "NVJPEG_STATUS_JPEG_NOT_SUPPORTED";
    case NVJPEG_STATUS_ALLOCATOR_FAILURE: return "NVJPEG_STATUS_ALLOCATOR_FAILURE";
    case NVJPEG_STATUS_EXECUTION_FAILED: return "NVJPEG_STATUS_EXECUTION_FAILED";
    case NVJPEG_STATUS_ARCH_MISMATCH: return "NVJPEG_STATUS_ARCH_MISMATCH";
    case NVJPEG_STATUS_INTERNAL_ERROR: return "NVJPEG_STATUS_INTERNAL_ERROR";
    case NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED: return "NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED";
    case NVJPEG_STATUS_INCOMPLETE_BITSTREAM: return "NVJPEG_STATUS_INCOMPLETE_BITSTREAM";
    }
    return "unknown nvjpegStatus_t";
}

static void set_err(char *err, size_t errlen, const char *call, nvjpegStatus_t s)
{
    if (err && errlen)
        snprintf(err, errlen, "%s failed: %s (%d)", call, status_name(s), (int)s);
}

static void set_msg(char *err, size_t errlen, const char *msg)
{
    if (err && errlen)
        snprintf(err, errlen, "%s", msg);
}

/* ---- the decoder -------------------------------------------------------------- */

/* Batch states, each initialised for one batch size: nvjpegDecodeBatched decodes exactly
 * the size its state was initialised with, and re-initialising a hardware-backend state
 * costs host time at every change. The caller's batches alternate between a few sizes
 * (the share left to the host threads moves, the last batch is short), so a decoder
 * keeps NJD_STATES of them, the least recently used one re-initialised for a new size. */
#define NJD_STATES 4

struct njd_decoder {
    nvjpegHandle_t handle;
    nvjpegJpegState_t state[NJD_STATES];
    int state_n[NJD_STATES];            /* the batch size each state holds; 0: none (or failed) */
    unsigned long state_used[NJD_STATES]; /* tick of its last batch */
    unsigned long tick;
    int nstates; /* created */
    int hardware;
    int max_batch;
    /* njd_probe runs on the read-ahead threads: the library handle is thread safe
     * (nvJPEG docs), a parse stream is not, so each has a lock; several of them let
     * probes of big files (nvjpegJpegStreamParse reads the whole file) run in parallel. */
#define NJD_PROBE_STREAMS 16
    pthread_mutex_t stream_lock[NJD_PROBE_STREAMS];
    nvjpegJpegStream_t stream[NJD_PROBE_STREAMS];
    int nstreams; /* created, with their locks */
    atomic_uint next_stream;
    nvjpegImage_t *images; /* max_batch output descriptors, reused by every batch */
};

/* nvJPEG documents max_cpu_threads as no longer used; older releases reject 0. */
static int cpu_threads(const njd_decoder *d)
{
    return d->hardware ? 1 : 4;
}

static njd_status batched_init(njd_decoder *d, int k, int n, char *err, size_t errlen)
{
    nvjpegStatus_t s = g_lib.DecodeBatchedInitialize(d->handle, d->state[k], n, cpu_threads(d), NVJPEG_OUTPUT_RGBI);
    if (s != NVJPEG_STATUS_SUCCESS) {
        d->state_n[k] = 0;
        set_err(err, errlen, "nvjpegDecodeBatchedInitialize", s);
        return NJD_FAILED;
    }
    d->state_n[k] = n;
    return NJD_OK;
}

static njd_status state_create(njd_decoder *d, char *err, size_t errlen)
{
    nvjpegStatus_t s = g_lib.JpegStateCreate(d->handle, &d->state[d->nstates]);
    if (s != NVJPEG_STATUS_SUCCESS) {
        d->state[d->nstates] = NULL;
        set_err(err, errlen, "nvjpegJpegStateCreate", s);
        return NJD_FAILED;
    }
    d->state_n[d->nstates++] = 0;
    return NJD_OK;
}

/* The state initialised for n images: one that is, else a new one while fewer than
 * NJD_STATES exist, else the least recently used one, re-initialised. -1: failed. */
static int state_for(njd_decoder *d, int n, char *err, size_t errlen)
{
    int k = -1;
    for (int i = 0; i < d->nstates && k < 0; i++)
        if (d->state_n[i] == n)
            k = i;
    if (k < 0) {
        if (d->nstates < NJD_STATES && state_create(d, err, errlen) == NJD_OK) {
            k = d->nstates - 1;
        } else {
            if (!d->nstates)
                return -1;
            k = 0;
            for (int i = 1; i < d->nstates; i++)
                if (d->state_used[i] < d->state_used[k])
                    k = i;
        }
        if (batched_init(d, k, n, err, errlen) != NJD_OK)
            return -1;
    }
    d->state_used[k] = ++d->tick;
    return k;
}

njd_status njd_create(int max_batch, njd_decoder **out, int *hardware_out, char *err, size_t errlen)
{
    if (out)
        *out = NULL;
    if (!out || max_batch < 1) {
        set_msg(err, errlen, "njd_create: out is NULL or max_batch < 1");
        return NJD_FAILED;
    }
    pthread_once(&g_lib_once, load_lib);
    if (!g_lib_ok) {
        set_msg(err, errlen, g_lib_err);
        return NJD_UNAVAILABLE;
    }
    njd_decoder *d = calloc(1, sizeof *d);
    if (d)
        d->images = calloc((size_t)max_batch, sizeof *d->images);
    if (!d || !d->images) {
        free(d);
        set_msg(err, errlen, "njd_create: out of memory");
        return NJD_FAILED;
    }
    d->max_batch = max_batch;

    /* GPUs without the JPEG engine answer the hardware backend with ARCH_MISMATCH
     * (or another failure on older libraries): any failure means the default one. */
    nvjpegStatus_t s = g_lib.CreateEx(NVJPEG_BACKEND_HARDWARE, NULL, NULL, NVJPEG_FLAGS_DEFAULT, &d->handle);
    d->hardware = s == NVJPEG_STATUS_SUCCESS;
    if (!d->hardware) {
        d->handle = NULL;
        s = g_lib.CreateEx(NVJPEG_BACKEND_DEFAULT, NULL, NULL, NVJPEG_FLAGS_DEFAULT, &d->handle);
        if (s != NVJPEG_STATUS_SUCCESS) {
            d->handle = NULL;
            set_err(err, errlen, "nvjpegCreateEx(NVJPEG_BACKEND_DEFAULT)", s);
            njd_destroy(d);
            return NJD_FAILED;
        }
    }
    if (state_create(d, err, errlen) != NJD_OK) {
        njd_destroy(d);
        return NJD_FAILED;
    }
    for (int i = 0; i < NJD_PROBE_STREAMS; i++) {
        s = g_lib.JpegStreamCreate(d->handle, &d->stream[i]);
        if (s != NVJPEG_STATUS_SUCCESS) {
            set_err(err, errlen, "nvjpegJpegStreamCreate", s);
            njd_destroy(d);
            return NJD_FAILED;
        }
        pthread_mutex_init(&d->stream_lock[i], NULL);
        d->nstreams++;
    }
    if (batched_init(d, 0, max_batch, err, errlen) != NJD_OK) {
        njd_destroy(d);
        return NJD_FAILED;
    }
    if (hardware_out)
        *hardware_out = d->hardware;
    *out = d;
    return NJD_OK;
}

void njd_destroy(njd_decoder *d)
{
    if (!d)
        return;
    /* Destroy statuses are ignored: there is no one left to tell. */
    for (int i = 0; i < d->nstreams; i++) {
        g_lib.JpegStreamDestroy(d->stream[i]);
        pthread_mutex_destroy(&d->stream_lock[i]);
    }
    for (int k = 0; k < d->nstates; k++)
        g_lib.JpegStateDestroy(d->state[k]);
    if (d->handle)
        g_lib.Destroy(d->handle);
    free(d->images);
    free(d);
}

/* ---- probe -------------------------------------------------------------------- */

static const char *sampling_name(nvjpegChromaSubsampling_t c)
{
    switch (c) {
    case NVJPEG_CSS_444: return "4:4:4";
    case NVJPEG_CSS_422: return "4:2:2";
    case NVJPEG_CSS_420: return "4:2:0";
    case NVJPEG_CSS_440: return "4:4:0";
    case NVJPEG_CSS_411: return "4:1:1";
    case NVJPEG_CSS_410: return "4:1:0";
    case NVJPEG_CSS_GRAY: return "gray";
    case NVJPEG_CSS_410V: return "4:1:0V";
    case NVJPEG_CSS_UNKNOWN: break;
    }
    return "unknown";
}

/* What the parsed stream says beyond nvjpegGetImageInfo: the encoding, the sample
 * precision, and for the hardware backend its own verdict. Called with that stream's lock. */
static njd_status probe_stream(njd_decoder *d, nvjpegJpegStream_t stream, const uint8_t *data, size_t size,
                               char *err, size_t errlen)
{
    nvjpegStatus_t s = g_lib.JpegStreamParse(d->handle, data, size, 0, 0, stream);
    if (s != NVJPEG_STATUS_SUCCESS) {
        set_err(err, errlen, "nvjpegJpegStreamParse", s);
        return NJD_UNSUPPORTED;
    }
    nvjpegJpegEncoding_t enc = NVJPEG_ENCODING_UNKNOWN;
    s = g_lib.JpegStreamGetJpegEncoding(stream, &enc);
    if (s != NVJPEG_STATUS_SUCCESS) {
        set_err(err, errlen, "nvjpegJpegStreamGetJpegEncoding", s);
        return NJD_UNSUPPORTED;
    }
    if (enc != NVJPEG_ENCODING_BASELINE_DCT && enc != NVJPEG_ENCODING_EXTENDED_SEQUENTIAL_DCT_HUFFMAN &&
        enc != NVJPEG_ENCODING_PROGRESSIVE_DCT_HUFFMAN) {
        if (err && errlen)
            snprintf(err, errlen, "JPEG encoding (SOF 0x%x) not decoded on the GPU", (unsigned)enc);
        return NJD_UNSUPPORTED;
    }
    if (g_lib.JpegStreamGetSamplePrecision) {
        unsigned int precision = 0;
        s = g_lib.JpegStreamGetSamplePrecision(stream, &precision);
        if (s != NVJPEG_STATUS_SUCCESS) {
            set_err(err, errlen, "nvjpegJpegStreamGetSamplePrecision", s);
            return NJD_UNSUPPORTED;
        }
        if (precision != 8) {
            if (err && errlen)
                snprintf(err, errlen, "%u-bit samples: only 8-bit JPEGs are decoded on the GPU", precision);
            return NJD_UNSUPPORTED;
        }
    }
    if (d->hardware) {
        int is_supported = -1;
        s = g_lib.DecodeBatchedSupported(d->handle, stream, &is_supported);
        if (s != NVJPEG_STATUS_SUCCESS) {
            set_err(err, errlen, "nvjpegDecodeBatchedSupported", s);
            return NJD_UNSUPPORTED;
        }
        /* nvJPEG's convention: 0 means the backend can decode it. */
        if (is_supported != 0) {
            set_msg(err, errlen, "the hardware JPEG decoder cannot take this file (nvjpegDecodeBatchedSupported)");
            return NJD_UNSUPPORTED;
        }
    }
    return NJD_OK;
}

njd_status njd_probe(njd_decoder *d, const uint8_t *data, size_t size, int *width, int *height, char *err,
                     size_t errlen)
{
    if (width)
        *width = 0;
    if (height)
        *height = 0;
    if (!d || !width || !height) {
        set_msg(err, errlen, "njd_probe: decoder, width or height is NULL");
        return NJD_FAILED;
    }
    if (!data || size == 0) {
        set_msg(err, errlen, "njd_probe: empty file");
        return NJD_UNSUPPORTED;
    }
    int ncomp = 0, w[NVJPEG_MAX_COMPONENT] = {0}, h[NVJPEG_MAX_COMPONENT] = {0};
    nvjpegChromaSubsampling_t css = NVJPEG_CSS_UNKNOWN;
    nvjpegStatus_t s = g_lib.GetImageInfo(d->handle, data, size, &ncomp, &css, w, h);
    if (s != NVJPEG_STATUS_SUCCESS) {
        set_err(err, errlen, "nvjpegGetImageInfo", s);
        return NJD_UNSUPPORTED;
    }
    /* Grey, CMYK/YCCK and odd samplings go to the host decoder, whose colour handling
     * of them is the reference; the GPU takes the common 3-component YCbCr files. */
    if (ncomp != 3 || css == NVJPEG_CSS_UNKNOWN || css == NVJPEG_CSS_GRAY) {
        if (err && errlen)
            snprintf(err, errlen, "%d components, sampling %s: decoded on the host", ncomp, sampling_name(css));
        return NJD_UNSUPPORTED;
    }
    if (d->hardware && (css == NVJPEG_CSS_411 || css == NVJPEG_CSS_410 || css == NVJPEG_CSS_410V)) {
        if (err && errlen)
            snprintf(err, errlen, "sampling %s: not taken by the hardware JPEG decoder", sampling_name(css));
        return NJD_UNSUPPORTED;
    }
    /* Component 0 is luma, full size for every sampling accepted above. */
    if (w[0] <= 0 || h[0] <= 0) {
        if (err && errlen)
            snprintf(err, errlen, "nvjpegGetImageInfo gave size %dx%d", w[0], h[0]);
        return NJD_UNSUPPORTED;
    }
    unsigned k = atomic_fetch_add(&d->next_stream, 1u) % (unsigned)d->nstreams;
    pthread_mutex_lock(&d->stream_lock[k]);
    njd_status st = probe_stream(d, d->stream[k], data, size, err, errlen);
    pthread_mutex_unlock(&d->stream_lock[k]);
    if (st != NJD_OK)
        return st;
    *width = w[0];
    *height = h[0];
    return NJD_OK;
}

/* ---- decode ------------------------------------------------------------------- */

njd_status njd_decode_batch(njd_decoder *d, void *stream, const uint8_t *const *data, const size_t *sizes, int n,
                            uint8_t *const *dst, const size_t *pitch, char *err, size_t errlen)
{
    if (!d || !data || !sizes || !dst || !pitch) {
        set_msg(err, errlen, "njd_decode_batch: NULL decoder or array");
        return NJD_FAILED;
    }
    if (n < 1 || n > d->max_batch) {
        if (err && errlen)
            snprintf(err, errlen, "njd_decode_batch: n = %d, outside 1..%d", n, d->max_batch);
        return NJD_FAILED;
    }
    for (int i = 0; i < n; i++) {
        /* The decoder cannot know each width here: a pitch below width * 3 is the
         * caller's bug, one of 0 is caught. */
        if (!data[i] || sizes[i] == 0 || !dst[i] || pitch[i] == 0) {
            if (err && errlen)
                snprintf(err, errlen, "njd_decode_batch: item %d has no data, size, destination or pitch", i);
            return NJD_FAILED;
        }
        memset(&d->images[i], 0, sizeof d->images[i]);
        d->images[i].channel[0] = dst[i];
        d->images[i].pitch[0] = pitch[i];
    }
    int k = state_for(d, n, err, errlen);
    if (k < 0)
        return NJD_FAILED;
    nvjpegStatus_t s = g_lib.DecodeBatched(d->handle, d->state[k], (const unsigned char *const *)data, sizes,
                                           d->images, (cudaStream_t)stream);
    if (s != NVJPEG_STATUS_SUCCESS) {
        /* nvJPEG asks for a new initialisation after a failed batch. */
        d->state_n[k] = 0;
        set_err(err, errlen, "nvjpegDecodeBatched", s);
        return NJD_FAILED;
    }
    return NJD_OK;
}
