/* A GPU-machine check of nvjpeg_decode.c: decodes the JPEGs named on the command line
 * in one batch, then again one at a time (which re-initialises nvJPEG's batch size),
 * and prints per file its size and the mean of R, G and B, for comparison with a host
 * decode (libjpeg-turbo through OpenCV, which gives BGR). Files the decoder refuses are
 * listed with its reason. Exit status 0 when every GPU decode succeeded and the two
 * passes gave identical bytes.
 *
 *   cc -std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Werror \
 *      nvjpeg_decode_check.c nvjpeg_decode.c -o nvjpeg_decode_check -ldl -lpthread
 *   ./nvjpeg_decode_check a.jpg b.jpg ...
 *
 * The CUDA driver API is opened with dlopen like nvJPEG, so that this builds on
 * machines without a GPU; the few declarations below match CUDA 13's cuda.h (the _v2
 * names are the symbols its macros resolve cuMemAlloc & co. to). */
#include "nvjpeg_decode.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef unsigned long long CUdeviceptr;

static struct {
    CUresult (*Init)(unsigned int flags);
    CUresult (*DeviceGet)(CUdevice *dev, int ordinal);
    CUresult (*PrimaryCtxRetain)(CUcontext *ctx, CUdevice dev);
    CUresult (*PrimaryCtxRelease)(CUdevice dev);
    CUresult (*CtxSetCurrent)(CUcontext ctx);
    CUresult (*MemAlloc)(CUdeviceptr *p, size_t bytes);
    CUresult (*MemFree)(CUdeviceptr p);
    CUresult (*MemcpyDtoH)(void *dst, CUdeviceptr src, size_t bytes);
    CUresult (*StreamSynchronize)(CUstream s);
    CUresult (*GetErrorName)(CUresult r, const char **name);
} cu;

static int load_cuda(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "dlopen(libcuda.so.1) failed: %s\n", dlerror());
        return -1;
    }
    struct {
        void **slot;
        const char *name;
    } syms[] = {
        {(void **)&cu.Init, "cuInit"},
        {(void **)&cu.DeviceGet, "cuDeviceGet"},
        {(void **)&cu.PrimaryCtxRetain, "cuDevicePrimaryCtxRetain"},
        {(void **)&cu.PrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"},
        {(void **)&cu.CtxSetCurrent, "cuCtxSetCurrent"},
        {(void **)&cu.MemAlloc, "cuMemAlloc_v2"},
        {(void **)&cu.MemFree, "cuMemFree_v2"},
        {(void **)&cu.MemcpyDtoH, "cuMemcpyDtoH_v2"},
        {(void **)&cu.StreamSynchronize, "cuStreamSynchronize"},
        {(void **)&cu.GetErrorName, "cuGetErrorName"},
    };
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        *syms[i].slot = dlsym(h, syms[i].name);
        if (!*syms[i].slot) {
            fprintf(stderr, "libcuda.so.1 has no symbol %s\n", syms[i].name);
            return -1;
        }
    }
    return 0;
}

static int cu_ok(CUresult r, const char *call)
{
    if (r == 0)
        return 1;
    const char *name = NULL;
    if (cu.GetErrorName(r, &name) != 0 || !name)
        name = "?";
    fprintf(stderr, "%s failed: %s (%d)\n", call, name, r);
    return 0;
}

static uint8_t *read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    uint8_t *buf = NULL;
    long n = -1;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0) {
        buf = malloc((size_t)n);
        if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
            free(buf);
            buf = NULL;
        }
    }
    fclose(f);
    *size = buf ? (size_t)n : 0;
    return buf;
}

typedef struct item {
    const char *path;
    uint8_t *data;
    size_t size;
    int ok; /* probed NJD_OK */
    int width, height;
    size_t pitch;
    CUdeviceptr batch_out, single_out;
} item;

/* Copies one decoded image back and prints its means; compares it with the other pass. */
static int report(const item *it, uint8_t *host, uint8_t *host2)
{
    size_t bytes = it->pitch * (size_t)it->height;
    if (!cu_ok(cu.MemcpyDtoH(host, it->batch_out, bytes), "cuMemcpyDtoH") ||
        !cu_ok(cu.MemcpyDtoH(host2, it->single_out, bytes), "cuMemcpyDtoH"))
        return -1;
    double sum[3] = {0, 0, 0};
    int same = 1;
    for (int y = 0; y < it->height; y++) {
        const uint8_t *row = host + (size_t)y * it->pitch;
        const uint8_t *row2 = host2 + (size_t)y * it->pitch;
        for (int x = 0; x < it->width; x++)
            for (int c = 0; c < 3; c++)
                sum[c] += row[3 * x + c];
        if (memcmp(row, row2, (size_t)it->width * 3) != 0)
            same = 0;
    }
    double px = (double)it->width * it->height;
    printf("%s: %dx%d mean R %.3f G %.3f B %.3f%s\n", it->path, it->width, it->height, sum[0] / px, sum[1] / px,
           sum[2] / px, same ? "" : "  [batch and single decode DIFFER]");
    return same ? 0 : -1;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s file.jpg...\n", argv[0]);
        return 2;
    }
    if (load_cuda() != 0)
        return 1;
    CUdevice dev = 0;
    CUcontext ctx = NULL;
    if (!cu_ok(cu.Init(0), "cuInit") || !cu_ok(cu.DeviceGet(&dev, 0), "cuDeviceGet") ||
        !cu_ok(cu.PrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain") ||
        !cu_ok(cu.CtxSetCurrent(ctx), "cuCtxSetCurrent"))
        return 1;

    int n = argc - 1, failed = 0, hardware = 0;
    char err[512];
    njd_decoder *d = NULL;
    njd_status st = njd_create(n, &d, &hardware, err, sizeof err);
    if (st != NJD_OK) {
        fprintf(stderr, "njd_create: status %d: %s\n", (int)st, err);
        return 1;
    }
    printf("backend: %s\n", hardware ? "hardware" : "default");

    item *items = calloc((size_t)n, sizeof *items);
    const uint8_t **data = calloc((size_t)n, sizeof *data);
    size_t *sizes = calloc((size_t)n, sizeof *sizes), *pitches = calloc((size_t)n, sizeof *pitches);
    uint8_t **dst = calloc((size_t)n, sizeof *dst);
    if (!items || !data || !sizes || !pitches || !dst) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    size_t max_bytes = 0;
    int k = 0; /* files in the batch */
    for (int i = 0; i < n; i++) {
        item *it = &items[i];
        it->path = argv[i + 1];
        it->data = read_file(it->path, &it->size);
        if (!it->data) {
            printf("%s: cannot read\n", it->path);
            failed = 1;
            continue;
        }
        st = njd_probe(d, it->data, it->size, &it->width, &it->height, err, sizeof err);
        if (st != NJD_OK) {
            printf("%s: %s (status %d): %s\n", it->path, st == NJD_UNSUPPORTED ? "UNSUPPORTED" : "FAILED", (int)st,
                   err);
            failed |= st != NJD_UNSUPPORTED;
            continue;
        }
        /* A pitch wider than the row, as the caller's buffers may have. */
        it->pitch = ((size_t)it->width * 3 + 255) / 256 * 256;
        size_t bytes = it->pitch * (size_t)it->height;
        if (!cu_ok(cu.MemAlloc(&it->batch_out, bytes), "cuMemAlloc") ||
            !cu_ok(cu.MemAlloc(&it->single_out, bytes), "cuMemAlloc"))
            return 1;
        it->ok = 1;
        if (bytes > max_bytes)
            max_bytes = bytes;
        data[k] = it->data;
        sizes[k] = it->size;
        dst[k] = (uint8_t *)(uintptr_t)it->batch_out;
        pitches[k] = it->pitch;
        k++;
    }
    if (k > 0) {
        st = njd_decode_batch(d, NULL, data, sizes, k, dst, pitches, err, sizeof err);
        if (st != NJD_OK) {
            fprintf(stderr, "njd_decode_batch(%d files): %s\n", k, err);
            return 1;
        }
        for (int i = 0; i < n; i++) {
            if (!items[i].ok)
                continue;
            const uint8_t *one = items[i].data;
            uint8_t *out = (uint8_t *)(uintptr_t)items[i].single_out;
            st = njd_decode_batch(d, NULL, &one, &items[i].size, 1, &out, &items[i].pitch, err, sizeof err);
            if (st != NJD_OK) {
                fprintf(stderr, "njd_decode_batch(%s alone): %s\n", items[i].path, err);
                return 1;
            }
        }
        if (!cu_ok(cu.StreamSynchronize(NULL), "cuStreamSynchronize"))
            return 1;
        uint8_t *host = malloc(max_bytes), *host2 = malloc(max_bytes);
        if (!host || !host2) {
            fprintf(stderr, "out of memory\n");
            return 1;
        }
        for (int i = 0; i < n; i++)
            if (items[i].ok && report(&items[i], host, host2) != 0)
                failed = 1;
        free(host);
        free(host2);
    }
    printf("decoded on the GPU: %d of %d\n", k, n);

    njd_destroy(d);
    for (int i = 0; i < n; i++) {
        if (items[i].ok) {
            cu.MemFree(items[i].batch_out);
            cu.MemFree(items[i].single_out);
        }
        free(items[i].data);
    }
    free(items);
    free(data);
    free(sizes);
    free(pitches);
    free(dst);
    cu.PrimaryCtxRelease(dev);
    return failed;
}
