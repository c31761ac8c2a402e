/* Completion slots: 64-byte-apart words in slabs of pinned, device-mapped host
 * memory (PORTABLE: every context of every device can write them). */
#include <stdlib.h>

#include "cuda/cuda_internal.h"

#define SLAB_BYTES 65536
#define STRIDE 64 /* one cache line each: no slot's writes disturb a neighbour's reader */

typedef struct free_slot {
    struct free_slot *next;
    volatile uint64_t *host;
    CUdeviceptr dev;
} free_slot;

typedef struct slab {
    struct slab *next;
    void *host;
    cuda_device *dev;
    CUcontext owner; /* d's primary context, retained by the slab */
} slab;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static free_slot *free_list;
static slab *slabs;
static size_t nslots; /* in every slab together */

/* Called with d's primary context current: the slab belongs to that context. */
static gaio_status grow(cuda_device *d) {
    const gaio_cu_table *cu = gaio__cu();
    /* A slab goes with the context that allocated it, and the driver resets d's primary
     * context (freeing the slab) whenever its last retain goes, as when the last gaio
     * context of d is released. Slabs outlive that, so each holds a retain of its own. */
    CUcontext owner = NULL;
    CUresult r = cu->cuDevicePrimaryCtxRetain(&owner, d->dev);
    if (r != CUDA_SUCCESS) return gaio__cu_fail("gaio_stream_create", "cuDevicePrimaryCtxRetain", r);
    void *mem = NULL;
    r = cu->cuMemHostAlloc(&mem, SLAB_BYTES, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP);
    if (r != CUDA_SUCCESS) {
        cu->cuDevicePrimaryCtxRelease(d->dev);
        return gaio__cu_fail("gaio_stream_create", "cuMemHostAlloc", r);
    }
    CUdeviceptr base = 0;
    r = cu->cuMemHostGetDevicePointer(&base, mem, 0);
    if (r != CUDA_SUCCESS) {
        cu->cuMemFreeHost(mem);
        cu->cuDevicePrimaryCtxRelease(d->dev);
        return gaio__cu_fail("gaio_stream_create", "cuMemHostGetDevicePointer", r);
    }
    /* Slabs live until gaio_shutdown: streams come and go, their slots are reused. */
    slab *sb = malloc(sizeof *sb);
    if (!sb) {
        cu->cuMemFreeHost(mem);
        cu->cuDevicePrimaryCtxRelease(d->dev);
        return GAIO_FAIL(GAIO_ERR_NO_MEMORY, "out of host memory for completion slots");
    }
    *sb = (slab){slabs, mem, d, owner};
    slabs = sb;
    for (size_t off = 0; off < SLAB_BYTES; off += STRIDE) {
        free_slot *f = malloc(sizeof *f);
        if (!f) return GAIO_FAIL(GAIO_ERR_NO_MEMORY, "out of host memory for completion slots");
        f->host = (volatile uint64_t *)((char *)mem + off);
        f->dev = base + off;
        f->next = free_list;
        free_list = f;
        nslots++;
    }
    return GAIO_OK;
}

gaio_status gaio__cuda_slot_alloc(cuda_device *d, volatile uint64_t **host, CUdeviceptr *dev) {
    pthread_mutex_lock(&lock);
    gaio_status st = free_list ? GAIO_OK : grow(d);
    if (st == GAIO_OK) {
        free_slot *f = free_list;
        free_list = f->next;
        *host = f->host;
        *dev = f->dev;
        free(f);
        /* The previous owner retired every ticket it wrote: no write to this word is pending. */
        **host = 0;
    }
    pthread_mutex_unlock(&lock);
    return st;
}

void gaio__cuda_slot_free(volatile uint64_t *host, CUdeviceptr dev) {
    free_slot *f = malloc(sizeof *f);
    if (!f) return; /* leaks one word of a slab; nothing else to do */
    pthread_mutex_lock(&lock);
    f->host = host;
    f->dev = dev;
    f->next = free_list;
    free_list = f;
    pthread_mutex_unlock(&lock);
}

void gaio__cuda_slots_release_all(void) {
    const gaio_cu_table *cu = atomic_load(&gaio__cu_ready); /* no slab was made without it */
    pthread_mutex_lock(&lock);
    size_t nfree = 0;
    for (free_slot *f = free_list; f; f = f->next) nfree++;
    /* Every stream is gone at gaio_shutdown; should one not be, keep its slot's slab. */
    if (cu && nfree == nslots) {
        while (free_list) {
            free_slot *f = free_list;
            free_list = f->next;
            free(f);
        }
        while (slabs) {
            slab *sb = slabs;
            slabs = sb->next;
            CUcontext saved = NULL;
            cu->cuCtxGetCurrent(&saved);
            cu->cuCtxSetCurrent(sb->owner); /* pinned memory is freed in its context */
            cu->cuMemFreeHost(sb->host);   /* errors (a faulted context) leave nothing to do */
            cu->cuCtxSetCurrent(saved == sb->owner ? NULL : saved);
            cu->cuDevicePrimaryCtxRelease(sb->dev->dev);
            free(sb);
        }
        nslots = 0;
    }
    pthread_mutex_unlock(&lock);
}
