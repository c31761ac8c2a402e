/* The CUDA backend: devices 1..n, each on its primary context. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/cuda_internal.h"

static cuda_device devices[GAIO_CUDA_MAX_DEVICES];
static int device_total = -1;
static pthread_once_t devices_once = PTHREAD_ONCE_INIT;

static void devices_init(void) {
    const gaio_cu_table *cu = gaio__cu();
    device_total = 0;
    if (!cu) return;
    int n = 0;
    if (cu->cuDeviceGetCount(&n) != CUDA_SUCCESS) return;
    if (n > GAIO_CUDA_MAX_DEVICES) n = GAIO_CUDA_MAX_DEVICES;
    for (int i = 0; i < n; i++) {
        cuda_device *d = &devices[i];
        pthread_mutex_init(&d->lock, NULL);
        atomic_init(&d->fault, GAIO_OK);
        if (cu->cuDeviceGet(&d->dev, i) != CUDA_SUCCESS) return;
        int memops = 0;
        cu->cuDeviceGetAttribute(&memops, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, d->dev);
        /* GAIO_CUDA_NO_MEMOPS=1 takes the event fallback on any GPU (how it is tested). */
        const char *force = getenv("GAIO_CUDA_NO_MEMOPS");
        d->memops = memops != 0 && !(force && *force == '1');
        device_total = i + 1;
    }
}

static int cuda_device_count(void) {
    pthread_once(&devices_once, devices_init);
    return device_total;
}

cuda_device *gaio__cuda_device(int ordinal) {
    pthread_once(&devices_once, devices_init);
    return ordinal >= 0 && ordinal < device_total ? &devices[ordinal] : NULL;
}

gaio_status gaio__cuda_enter(const char *fn, cuda_device *d, cuda_scope *sc) {
    const gaio_cu_table *cu = gaio__cu();
    sc->saved = NULL;
    sc->switched = false;
    cu->cuCtxGetCurrent(&sc->saved);
    if (sc->saved == d->primary) return GAIO_OK;
    CUresult r = cu->cuCtxSetCurrent(d->primary);
    if (r != CUDA_SUCCESS) return gaio__cu_fail(fn, "cuCtxSetCurrent", r);
    sc->switched = true;
    return GAIO_OK;
}

void gaio__cuda_exit(cuda_scope *sc) {
    if (sc->switched) gaio__cu()->cuCtxSetCurrent(sc->saved);
}

/* gaio_shutdown, with no context alive: the process-wide CUDA state goes too, so
 * that nothing of gaio's keeps a primary context retained (the core unloads gaio's
 * own kernel libraries after this, through lib_unload). */
static void cuda_shutdown(void) {
    gaio__cuda_engine_stop();
    gaio__cuda_slots_release_all();
}

static int attr(cuda_device *d, CUdevice_attribute a) {
    int v = 0;
    gaio__cu()->cuDeviceGetAttribute(&v, a, d->dev);
    return v;
}

/* Retains the primary context and sets up what every context of the device shares. */
gaio_status gaio__cuda_device_enter(const char *fn, cuda_device *d) {
    const gaio_cu_table *cu = gaio__cu();
    pthread_mutex_lock(&d->lock);
    gaio_status st = GAIO_OK;
    if (d->users == 0) {
        /* With no context current: one of another device that faulted would hand its
         * sticky error to calls about this device. */
        CUcontext outer = NULL;
        cu->cuCtxGetCurrent(&outer);
        cu->cuCtxSetCurrent(NULL);
        CUresult r = cu->cuDevicePrimaryCtxRetain(&d->primary, d->dev);
        cu->cuCtxSetCurrent(outer);
        if (r != CUDA_SUCCESS) {
            st = gaio__cu_fail(fn, "cuDevicePrimaryCtxRetain", r);
            goto out;
        }
        CUcontext saved = NULL;
        cu->cuCtxGetCurrent(&saved);
        cu->cuCtxSetCurrent(d->primary);
        r = cu->cuCtxGetStreamPriorityRange(&d->least_priority, &d->greatest_priority);
        if (r == CUDA_SUCCESS) r = cu->cuStreamCreateWithPriority(&d->aux, CU_STREAM_NON_BLOCKING, 0);
        const char *what = r == CUDA_SUCCESS ? NULL : "cuStreamCreateWithPriority";
        if (r == CUDA_SUCCESS) {
            r = cu->cuDeviceGetDefaultMemPool(&d->pool, d->dev);
            what = "cuDeviceGetDefaultMemPool";
        }
        if (r == CUDA_SUCCESS) {
            /* Keep freed device memory in the driver's pool up to 256 MiB across syncs. */
            cuuint64_t threshold = (cuuint64_t)256 << 20;
            r = cu->cuMemPoolSetAttribute(d->pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold);
            what = "cuMemPoolSetAttribute";
        }
        cu->cuCtxSetCurrent(saved);
        if (r != CUDA_SUCCESS) {
            st = gaio__cu_fail(fn, what, r);
            cu->cuDevicePrimaryCtxRelease(d->dev);
            d->primary = NULL;
            goto out;
        }
    }
    d->users++;
out:
    pthread_mutex_unlock(&d->lock);
    return st;
}

void gaio__cuda_device_leave(cuda_device *d) {
    const gaio_cu_table *cu = gaio__cu();
    pthread_mutex_lock(&d->lock);
    if (--d->users == 0) {
        CUcontext saved = NULL;
        cu->cuCtxGetCurrent(&saved);
        cu->cuCtxSetCurrent(d->primary);
        cu->cuStreamSynchronize(d->aux);
        cu->cuStreamDestroy(d->aux);
        cu->cuCtxSetCurrent(saved == d->primary ? NULL : saved);
        cu->cuDevicePrimaryCtxRelease(d->dev);
        d->primary = NULL;
        d->aux = NULL;
    }
    pthread_mutex_unlock(&d->lock);
}

static gaio_status cuda_device_props(int ordinal, gaio_device_props *p) {
    cuda_device *d = gaio__cuda_device(ordinal);
    if (!d) return GAIO_FAIL(GAIO_ERR_NOT_FOUND, "CUDA device %d does not exist", ordinal);
    const gaio_cu_table *cu = gaio__cu();
    p->kind = GAIO_DEVICE_CUDA;
    p->ordinal = ordinal;
    if (cu->cuDeviceGetName(p->name, (int)sizeof p->name, d->dev) != CUDA_SUCCESS)
        snprintf(p->name, sizeof p->name, "CUDA device %d", ordinal);
    size_t mem = 0;
    cu->cuDeviceTotalMem(&mem, d->dev);
    p->total_memory = mem;
    p->compute_major = attr(d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
    p->compute_minor = attr(d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    p->processor_count = attr(d, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    /* The priority range is a property of the device's contexts; every current GPU
     * has 0 (least) .. -5 (greatest). Read it from a live context when there is one. */
    pthread_mutex_lock(&d->lock);
    int range = d->users ? d->least_priority - d->greatest_priority : 5;
    pthread_mutex_unlock(&d->lock);
    p->max_priority = range;
    size_t align = (size_t)attr(d, CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT);
    p->pitch_alignment = align > 256 ? align : 256;
    return GAIO_OK;
}

static gaio_status cuda_context_init(gaio_context *ctx) {
    int n = cuda_device_count();
    cuda_device *d = gaio__cuda_device(ctx->device - 1);
    if (!d) return GAIO_FAIL(GAIO_ERR_NOT_FOUND, "CUDA device %d of %d does not exist", ctx->device - 1, n);
    gaio_status st = gaio__cuda_device_enter("gaio_context_create", d);
    if (st != GAIO_OK) return st;
    st = gaio__cuda_engine_start();
    if (st != GAIO_OK) {
        gaio__cuda_device_leave(d);
        return st;
    }
    ctx->be_data = d;
    return GAIO_OK;
}

static void cuda_context_fini(gaio_context *ctx) { gaio__cuda_device_leave(ctx->be_data); }

/* A wrapped stream's priority on gaio's scale: the inverse of gaio_stream_create's
 * CUDA priority (least - p), clamped into 0 .. max_priority (least - greatest).
 * The legacy and per-thread default streams are normal (0) by definition. Runs
 * with the device's context current. */
static gaio_status wrapped_priority(const cuda_device *d, CUstream native, int *priority) {
    *priority = 0;
    if (native == CU_STREAM_LEGACY || native == CU_STREAM_PER_THREAD) return GAIO_OK;
    int cu_prio = d->least_priority;
    CUresult r = gaio__cu()->cuStreamGetPriority(native, &cu_prio);
    if (r != CUDA_SUCCESS) return gaio__cu_fail("gaio_stream_wrap", "cuStreamGetPriority", r);
    int p = d->least_priority - cu_prio, max = d->least_priority - d->greatest_priority;
    *priority = p < 0 ? 0 : p > max ? max : p;
    return GAIO_OK;
}

static gaio_status cuda_stream_init(gaio_stream *s, void *native) {
    cuda_device *d = s->ctx->be_data;
    const gaio_cu_table *cu = gaio__cu();
    cuda_stream *cs = gaio__calloc_lines(sizeof *cs); /* fields grouped by writer, a line each */
    if (!cs) return GAIO_FAIL(GAIO_ERR_NO_MEMORY, "out of host memory for the stream");
    cs->stream = s;
    cs->dev = d;
    pthread_mutex_init(&cs->lock, NULL);
    gaio__mpsc_init(&cs->pending);
    atomic_init(&cs->unflushed, false);
    atomic_init(&cs->issued, 0);
    cuda_scope sc;
    gaio_status st = gaio__cuda_enter("gaio_stream_create", d, &sc);
    if (st != GAIO_OK) {
        pthread_mutex_destroy(&cs->lock);
        free(cs);
        return st;
    }
    st = gaio__cuda_slot_alloc(d, &cs->slot, &cs->slot_dev);
    if (st == GAIO_OK) {
        if (native) {
            CUcontext sctx = NULL;
            CUresult r = cu->cuStreamGetCtx((CUstream)native, &sctx);
            if (r != CUDA_SUCCESS)
                st = gaio__cu_fail("gaio_stream_wrap", "cuStreamGetCtx", r);
            else if (sctx != d->primary)
                st = gaio__fail(GAIO_ERR_INVALID_ARG, "gaio_stream_wrap",
                                "native_stream belongs to another CUDA context than device %d's primary context",
                                s->ctx->device);
            else
                st = wrapped_priority(d, (CUstream)native, &s->priority);
            cs->cu = (CUstream)native;
            cs->foreign = true;
        } else {
            CUresult r = cu->cuStreamCreateWithPriority(&cs->cu, CU_STREAM_NON_BLOCKING,
                                                        d->least_priority - s->priority);
            if (r != CUDA_SUCCESS) st = gaio__cu_fail("gaio_stream_create", "cuStreamCreateWithPriority", r);
        }
    }
    gaio__cuda_exit(&sc);
    if (st != GAIO_OK) {
        if (cs->slot) gaio__cuda_slot_free(cs->slot, cs->slot_dev);
        pthread_mutex_destroy(&cs->lock);
        free(cs);
        return st;
    }
    cs->launch_any_ctx = cs->cu != NULL && cs->cu != CU_STREAM_LEGACY && cs->cu != CU_STREAM_PER_THREAD;
    s->native = cs->cu;
    s->be_data = cs;
    return GAIO_OK;
}

static void cuda_stream_fini(gaio_stream *s) {
    cuda_stream *cs = s->be_data;
    if (cs->kernel) gaio__kernel_unref(cs->kernel); /* normally dropped when the engine let the stream go */
    cuda_scope sc;
    if (!cs->foreign && gaio__cuda_enter("gaio_stream_release", cs->dev, &sc) == GAIO_OK) {
        gaio__cu()->cuStreamDestroy(cs->cu);
        gaio__cuda_exit(&sc);
    }
    gaio__cuda_fallback_free(cs);
    gaio__cuda_slot_free(cs->slot, cs->slot_dev);
    pthread_mutex_destroy(&cs->lock);
    free(cs);
}

static gaio_status cuda_mem_alloc(gaio_context *ctx, gaio_mem_kind kind, size_t size, void **ptr) {
    cuda_device *d = ctx->be_data;
    const gaio_cu_table *cu = gaio__cu();
    if (kind == GAIO_MEM_HOST) {
        *ptr = aligned_alloc(256, (size + 255) & ~(size_t)255);
        return *ptr ? GAIO_OK : GAIO_FAIL(GAIO_ERR_NO_MEMORY, "aligned_alloc of %zu bytes failed", size);
    }
    cuda_scope sc;
    gaio_status st = gaio__cuda_enter(__func__, d, &sc);
    if (st != GAIO_OK) return st;
    CUresult r;
    const char *call = NULL;
    switch (kind) {
    case GAIO_MEM_DEVICE: {
        /* The driver's stream-ordered pool; synchronizing gaio's own stream makes the
         * block usable by every stream (only on a miss of gaio's size-class cache). */
        CUdeviceptr p = 0;
        call = "cuMemAllocFromPoolAsync";
        r = cu->cuMemAllocFromPoolAsync(&p, size, d->pool, d->aux);
        if (r == CUDA_SUCCESS) {
            call = "cuStreamSynchronize";
            r = cu->cuStreamSynchronize(d->aux);
        }
        *ptr = (void *)(uintptr_t)p;
        break;
    }
    case GAIO_MEM_PINNED:
        call = "cuMemHostAlloc";
        r = cu->cuMemHostAlloc(ptr, size, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP);
        break;
    default: {
        CUdeviceptr p = 0;
        call = "cuMemAllocManaged";
        r = cu->cuMemAllocManaged(&p, size, CU_MEM_ATTACH_GLOBAL);
        *ptr = (void *)(uintptr_t)p;
        break;
    }
    }
    gaio__cuda_exit(&sc);
    return r == CUDA_SUCCESS ? GAIO_OK : gaio__cu_fail(__func__, call, r);
}

static void cuda_mem_free(gaio_context *ctx, gaio_mem_kind kind, void *ptr, size_t size) {
    (void)size;
    cuda_device *d = ctx->be_data;
    const gaio_cu_table *cu = gaio__cu();
    if (kind == GAIO_MEM_HOST) {
        free(ptr);
        return;
    }
    cuda_scope sc;
    if (gaio__cuda_enter(__func__, d, &sc) != GAIO_OK) return;
    /* Every op that used the block has retired (the host saw it finish), so it can
     * go back in any stream's order. */
    if (kind == GAIO_MEM_DEVICE) cu->cuMemFreeAsync((CUdeviceptr)(uintptr_t)ptr, d->aux);
    else if (kind == GAIO_MEM_PINNED) cu->cuMemFreeHost(ptr);
    else cu->cuMemFree((CUdeviceptr)(uintptr_t)ptr);
    gaio__cuda_exit(&sc);
}

static gaio_status cuda_describe(const char **description) {
    static _Thread_local char text[320]; /* valid on the calling thread until its next call */
    if (!gaio__cu()) {
        *description = gaio__cu_unavailable_reason();
        return GAIO_ERR_DRIVER;
    }
    int n = cuda_device_count(), v = gaio__cu_driver_version();
    snprintf(text, sizeof text, "ready: driver API %d.%d, %d device%s", v / 1000, v % 1000 / 10, n,
             n == 1 ? "" : "s");
    *description = text;
    return GAIO_OK;
}

static const char *kind_text(gaio_mem_kind k) {
    return k == GAIO_MEM_DEVICE ? "DEVICE" : k == GAIO_MEM_PINNED ? "PINNED" : "MANAGED";
}

/* What the driver knows of the pointer must match the kind the user claims. */
static gaio_status cuda_wrap_check(gaio_context *ctx, gaio_mem_kind kind, void *ptr, size_t size) {
    (void)size;
    if (kind == GAIO_MEM_HOST) return GAIO_OK;
    const gaio_cu_table *cu = gaio__cu();
    cuda_device *d = ctx->be_data;
    CUdeviceptr p = (CUdeviceptr)(uintptr_t)ptr;
    unsigned type = 0;
    int managed = 0, ordinal = -1;
    CUresult r = cu->cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p);
    if (r == CUDA_SUCCESS) r = cu->cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, p);
    if (r == CUDA_SUCCESS) cu->cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p);
    bool ok = r == CUDA_SUCCESS &&
              ((kind == GAIO_MEM_MANAGED && managed) ||
               (kind == GAIO_MEM_PINNED && !managed && type == CU_MEMORYTYPE_HOST) ||
               (kind == GAIO_MEM_DEVICE && !managed && type == CU_MEMORYTYPE_DEVICE && ordinal == (int)(d - gaio__cuda_device(0))));
    if (ok) return GAIO_OK;
    return gaio__fail(GAIO_ERR_INVALID_ARG, "gaio_buffer_wrap",
                      "ptr %p is not %s memory of device %d (the driver %s); wrap plain host memory as HOST", ptr,
                      kind_text(kind), ctx->device,
                      r != CUDA_SUCCESS ? "does not know it"
                      : managed         ? "says it is managed memory"
                      : type == CU_MEMORYTYPE_HOST ? "says it is page-locked host memory"
                                                   : "says it is device memory of another device");
}

const gaio_backend gaio__cuda_backend = {
    .name = "cuda",
    .kind = GAIO_DEVICE_CUDA,
    .op_space = sizeof(cuda_pending),
    .device_count = cuda_device_count,
    .device_props = cuda_device_props,
    .context_init = cuda_context_init,
    .context_fini = cuda_context_fini,
    .stream_init = cuda_stream_init,
    .stream_fini = cuda_stream_fini,
    .mem_alloc = cuda_mem_alloc,
    .mem_free = cuda_mem_free,
    .wrap_check = cuda_wrap_check,
    .submit = gaio__cuda_submit,
    .covers_ops = true, /* the engine's stream reference and cuda_stream.kernel (cuda_internal.h) */
    .launch_direct = gaio__cuda_launch_direct,
    .fence_direct = gaio__cuda_fence_direct,
    .capture_begin = gaio__cuda_capture_begin,
    .capture_end = gaio__cuda_capture_end,
    .graph_launch = gaio__cuda_graph_launch,
    .graph_free = gaio__cuda_graph_free,
    .describe = cuda_describe,
    .shutdown = cuda_shutdown,
    .lib_load = gaio__cuda_lib_load,
    .lib_unload = gaio__cuda_lib_unload,
    .lib_compile = gaio__cuda_lib_compile,
    .lib_kernel = gaio__cuda_lib_kernel,
    .lib_kernels = gaio__cuda_lib_kernels,
    .lib_symbol = gaio__cuda_lib_symbol,
    .native = &gaio__cuda_native_ops,
};
