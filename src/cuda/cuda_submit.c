/* Ops to driver calls. Each op is followed by a write of the stream's next ticket
 * into its completion slot; the completion engine retires the op when it sees it. */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/cuda_internal.h"

static void event_free(void *ev) {
    /* cuEventDestroy needs no current context and is safe while the event is pending. */
    if (ev) gaio__cu()->cuEventDestroy((CUevent)ev);
}

static gaio_status event_elapsed(gaio_future *a, gaio_future *b, float *ms) {
    CUresult r = gaio__cu()->cuEventElapsedTime(ms, (CUevent)a->be_event, (CUevent)b->be_event);
    return r == CUDA_SUCCESS ? GAIO_OK : gaio__cu_fail("gaio_event_elapsed_ms", "cuEventElapsedTime", r);
}

/* The point a WAIT names is recorded on some stream of this backend, maybe not yet
 * handed to the driver (a deferred stream's submission thread has it queued, ahead of
 * us). Its marker appears within microseconds. */
static void await_recorded(gaio_future *f) {
    while (!atomic_load_explicit(&f->be_recorded, memory_order_acquire) && !gaio__future_is_done(f)) sched_yield();
}

static CUresult enqueue(cuda_stream *cs, gaio_op *op, const char **call) {
    if (gaio__cuda_is_host_op(op)) return CUDA_SUCCESS;
    const gaio_cu_table *cu = gaio__cu();
    CUstream s = cs->cu;
    switch (op->kind) {
    case GAIO_OP_COPY: {
        if (op->u.copy.height == 1) {
            *call = "cuMemcpyAsync";
            return cu->cuMemcpyAsync((CUdeviceptr)(uintptr_t)op->u.copy.dst, (CUdeviceptr)(uintptr_t)op->u.copy.src,
                                     op->u.copy.width, s);
        }
        CUDA_MEMCPY2D m;
        memset(&m, 0, sizeof m);
        m.srcMemoryType = CU_MEMORYTYPE_UNIFIED;
        m.srcDevice = (CUdeviceptr)(uintptr_t)op->u.copy.src;
        m.srcPitch = op->u.copy.spitch;
        m.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
        m.dstDevice = (CUdeviceptr)(uintptr_t)op->u.copy.dst;
        m.dstPitch = op->u.copy.dpitch;
        m.WidthInBytes = op->u.copy.width;
        m.Height = op->u.copy.height;
        *call = "cuMemcpy2DAsync";
        return cu->cuMemcpy2DAsync(&m, s);
    }
    case GAIO_OP_FILL: {
        CUdeviceptr dst = (CUdeviceptr)(uintptr_t)op->u.fill.dst;
        unsigned char v = (unsigned char)op->u.fill.value;
        if (op->u.fill.height == 1) {
            *call = "cuMemsetD8Async";
            return cu->cuMemsetD8Async(dst, v, op->u.fill.width, s);
        }
        *call = "cuMemsetD2D8Async";
        return cu->cuMemsetD2D8Async(dst, op->u.fill.pitch, v, op->u.fill.width, op->u.fill.height, s);
    }
    case GAIO_OP_LAUNCH: {
        CUkernel k;
        /* Resolved before the lock in submit; this lookup hits the kernel's cache. */
        if (gaio__cuda_kernel_handle("gaio_launch", op->u.launch.kernel, &k) != GAIO_OK) {
            *call = "cuLibraryGetKernel";
            return CUDA_ERROR_NOT_FOUND;
        }
        const gaio_launch_info *li = &op->u.launch.info;
        *call = "cuLaunchKernel";
        return cu->cuLaunchKernel((CUfunction)k, li->grid.x, li->grid.y, li->grid.z, li->block.x, li->block.y,
                                  li->block.z, (unsigned)li->shared_mem_bytes, s, op->u.launch.argv, NULL);
    }
    case GAIO_OP_HOST_FN:
        return CUDA_SUCCESS; /* runs_on_host */
    case GAIO_OP_RECORD: {
        gaio_future *f = op->u.point.fut;
        CUevent ev = NULL;
        *call = "cuEventCreate";
        CUresult r = cu->cuEventCreate(&ev, f->timed ? CU_EVENT_DEFAULT : CU_EVENT_DISABLE_TIMING);
        if (r != CUDA_SUCCESS) return r;
        *call = "cuEventRecord";
        r = cu->cuEventRecord(ev, s);
        if (r != CUDA_SUCCESS) {
            cu->cuEventDestroy(ev);
            return r;
        }
        f->be_event = ev;
        f->be_event_free = event_free;
        f->be_elapsed = event_elapsed;
        atomic_store_explicit(&f->be_recorded, true, memory_order_release);
        return CUDA_SUCCESS;
    }
    case GAIO_OP_WAIT: {
        gaio_future *f = op->u.point.fut;
        if (!atomic_load_explicit(&f->be_recorded, memory_order_acquire)) return CUDA_SUCCESS; /* done already */
        *call = "cuStreamWaitEvent";
        return cu->cuStreamWaitEvent(s, (CUevent)f->be_event, 0);
    }
    case GAIO_OP_RELEASE:
        return CUDA_SUCCESS;
    }
    return CUDA_ERROR_INVALID_VALUE;
}

gaio_status gaio__cuda_submit(gaio_op *op) {
    cuda_stream *cs = op->stream->be_data;
    cuda_device *d = cs->dev;
    const gaio_cu_table *cu = gaio__cu();
    int fault = atomic_load_explicit(&d->fault, memory_order_acquire);
    if (fault != GAIO_OK)
        return gaio__fail((gaio_status)fault, gaio__submitting_fn, "device %d faulted earlier and cannot run more work: %s",
                          op->stream->ctx->device, d->fault_msg);
    if (op->kind == GAIO_OP_LAUNCH) {
        CUkernel k;
        gaio_status st = gaio__cuda_kernel_handle("gaio_launch", op->u.launch.kernel, &k);
        if (st != GAIO_OK) return st;
    }
    if (op->kind == GAIO_OP_WAIT) await_recorded(op->u.point.fut);
    cuda_pending *p = malloc(sizeof *p);
    if (!p) return gaio__fail(GAIO_ERR_NO_MEMORY, gaio__submitting_fn, "out of host memory for the op");
    cuda_scope sc;
    gaio_status st = gaio__cuda_enter(gaio__submitting_fn, d, &sc);
    if (st != GAIO_OK) {
        free(p);
        return st;
    }
    pthread_mutex_lock(&cs->lock);
    const char *call = "";
    CUresult r = enqueue(cs, op, &call);
    if (r != CUDA_SUCCESS) {
        pthread_mutex_unlock(&cs->lock);
        gaio__cuda_exit(&sc);
        free(p);
        st = gaio__cu_fail(gaio__submitting_fn, call, r);
        if (st == GAIO_ERR_DEVICE) gaio__cuda_device_fault(d, st, gaio_last_error());
        return st;
    }
    uint64_t ticket = ++cs->next_ticket;
    r = cu->cuStreamWriteValue64(cs->cu, cs->slot_dev, ticket, CU_STREAM_WRITE_VALUE_DEFAULT);
    call = "cuStreamWriteValue64";
    if (r == CUDA_SUCCESS && gaio__cuda_is_host_op(op)) {
        r = cu->cuStreamWaitValue64(cs->cu, cs->gate_dev, ticket, CU_STREAM_WAIT_VALUE_GEQ);
        call = "cuStreamWaitValue64";
    }
    if (r != CUDA_SUCCESS) {
        /* The op is in the stream but its ticket is not: only a broken context does
         * this. Fail the device so the engine retires everything, this op included. */
        gaio_status fst = gaio__cu_fail(gaio__submitting_fn, call, r);
        gaio__cuda_device_fault(d, GAIO_ERR_DEVICE, gaio_last_error());
        (void)fst;
    }
    gaio__cuda_track(cs, op, ticket, p);
    pthread_mutex_unlock(&cs->lock);
    gaio__cuda_exit(&sc);
    return GAIO_OK;
}
