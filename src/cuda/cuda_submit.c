/* Ops to driver calls. Each op is followed by a write of the stream's next ticket
 * into its completion slot; the completion engine retires the op when it sees it. */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/prefetch.h"
#include "cuda/cuda_internal.h"

static void event_free(void *ev) {
    /* cuEventDestroy needs no current context and is safe while the event is pending. */
    if (ev) gaio__cu()->cuEventDestroy((CUevent)ev);
}

static gaio_status event_elapsed(gaio_future *a, gaio_future *b, float *ms) {
    CUresult r = gaio__cu()->cuEventElapsedTime(ms, (CUevent)a->be_event, (CUevent)b->be_event);
    return r == CUDA_SUCCESS ? GAIO_OK : gaio__cu_fail("gaio_event_elapsed_ms", "cuEventElapsedTime", r);
}

/* The point a WAIT names may be recorded on a deferred stream whose submission thread
 * still has the record queued, ahead of us: its marker appears within microseconds.
 * A record held behind host work may take any time: after a short spin, the waiting
 * stream waits for the point on the host instead (issue). */
#define AWAIT_SPIN_NS 200000u
static void await_recorded(gaio_future *f) {
    uint64_t t0 = gaio__now_ns();
    while (!atomic_load_explicit(&f->be_recorded, memory_order_acquire) && !gaio__future_is_done(f) &&
           gaio__now_ns() - t0 < AWAIT_SPIN_NS)
        sched_yield();
}

/* A launch may use more than 48 KiB of dynamic shared memory only once its kernel
 * has opted in on the device. The limit set is the most the device allows beside
 * the kernel's static shared memory: the same value every time, so launches on
 * other threads never lower it under one another. */
#define DEFAULT_DYNAMIC_SHARED_BYTES (48u << 10)

static CUresult allow_dynamic_shared(CUkernel k, CUdevice dev, const char **call) {
    const gaio_cu_table *cu = gaio__cu();
    int optin = 0, static_bytes = 0;
    *call = "cuDeviceGetAttribute";
    CUresult r = cu->cuDeviceGetAttribute(&optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev);
    if (r != CUDA_SUCCESS) return r;
    *call = "cuKernelGetAttribute";
    r = cu->cuKernelGetAttribute(&static_bytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, k, dev);
    if (r != CUDA_SUCCESS) return r;
    *call = "cuKernelSetAttribute";
    return cu->cuKernelSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, optin - static_bytes, k, dev);
}

/* The device's context on this thread, made current only once a driver call needs
 * it, and put back as the caller had it at the end of the gaio call (ctx_done). */
typedef struct ctx_use {
    cuda_scope sc;
    bool entered;
} ctx_use;

static gaio_status ctx_need(const char *fn, cuda_device *d, ctx_use *u) {
    if (u->entered) return GAIO_OK;
    gaio_status st = gaio__cuda_enter(fn, d, &u->sc);
    u->entered = st == GAIO_OK;
    return st;
}

static void ctx_done(ctx_use *u) {
    if (u->entered) gaio__cuda_exit(&u->sc);
    u->entered = false;
}

/* Whether issuing op needs the device's context current from the start. A launch
 * whose only driver call is cuLaunchKernel, on a stream of its own, does not
 * (cuda_stream.launch_any_ctx): it then costs no cuCtxGetCurrent, and no switch and
 * switch back where the caller has another context (or none) current. A ticket
 * written behind it makes the context current then (issue). */
static bool needs_context(const cuda_stream *cs, const gaio_op *op) {
    return op->kind != GAIO_OP_LAUNCH || !cs->launch_any_ctx ||
           op->u.launch.info.shared_mem_bytes > DEFAULT_DYNAMIC_SHARED_BYTES;
}

/* DEVICE memory of two different GPUs: the driver wants the two contexts named. A 2D
 * copy is one 3D peer copy of depth 1. */
static CUresult copy_peer(const gaio_op *op, CUstream s, const char **call) {
    const gaio_cu_table *cu = gaio__cu();
    CUcontext dctx = ((cuda_device *)op->bufs[0]->ctx->be_data)->primary;
    CUcontext sctx = ((cuda_device *)op->bufs[1]->ctx->be_data)->primary;
    if (op->u.copy.height == 1) {
        *call = "cuMemcpyPeerAsync";
        return cu->cuMemcpyPeerAsync((CUdeviceptr)(uintptr_t)op->u.copy.dst, dctx,
                                     (CUdeviceptr)(uintptr_t)op->u.copy.src, sctx, op->u.copy.width, s);
    }
    CUDA_MEMCPY3D_PEER m;
    memset(&m, 0, sizeof m);
    m.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    m.srcDevice = (CUdeviceptr)(uintptr_t)op->u.copy.src;
    m.srcContext = sctx;
    m.srcPitch = op->u.copy.spitch;
    m.srcHeight = op->u.copy.height;
    m.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    m.dstDevice = (CUdeviceptr)(uintptr_t)op->u.copy.dst;
    m.dstContext = dctx;
    m.dstPitch = op->u.copy.dpitch;
    m.dstHeight = op->u.copy.height;
    m.WidthInBytes = op->u.copy.width;
    m.Height = op->u.copy.height;
    m.Depth = 1;
    *call = "cuMemcpy3DPeerAsync";
    return cu->cuMemcpy3DPeerAsync(&m, s);
}

CUresult gaio__cuda_copy(const gaio_op *op, CUstream s, const char **call) {
    const gaio_cu_table *cu = gaio__cu();
    const gaio_buffer *dst = op->bufs[0], *src = op->bufs[1];
    if (dst->kind == GAIO_MEM_DEVICE && src->kind == GAIO_MEM_DEVICE && dst->ctx->device != src->ctx->device)
        return copy_peer(op, s, call);
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

static CUresult enqueue(cuda_stream *cs, gaio_op *op, const char **call) {
    if (gaio__cuda_is_host_op(op)) return CUDA_SUCCESS;
    const gaio_cu_table *cu = gaio__cu();
    CUstream s = cs->cu;
    switch (op->kind) {
    case GAIO_OP_COPY:
        return gaio__cuda_copy(op, s, call);
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
        if (li->shared_mem_bytes > DEFAULT_DYNAMIC_SHARED_BYTES) {
            CUresult r = allow_dynamic_shared(k, cs->dev->dev, call);
            if (r != CUDA_SUCCESS) return r;
        }
        *call = "cuLaunchKernel";
        return cu->cuLaunchKernel((CUfunction)k, li->grid.x, li->grid.y, li->grid.z, li->block.x, li->block.y,
                                  li->block.z, (unsigned)li->shared_mem_bytes, s, op->u.launch.argv, NULL);
    }
    case GAIO_OP_HOST_FN:
        return CUDA_SUCCESS; /* runs_on_host */
    case GAIO_OP_RECORD: {
        gaio_future *f = op->u.point.fut;
        if (!f->marker) return CUDA_SUCCESS; /* a fence: its ticket is all the host needs */
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
    case GAIO_OP_NATIVE:
        return CUDA_SUCCESS; /* issue calls its function: it has no CUresult */
    }
    return CUDA_ERROR_INVALID_VALUE;
}

/* Under cs->lock: work issued under the stream's next, unwritten ticket (an op, or a
 * launch with no op). The engine reads these two in its spin: store only on change,
 * to keep the cache line from bouncing between the cores on every op; no clock read
 * here: the engine notices the count stand still (gaio__cuda_flush). */
static void issued_unwritten(cuda_stream *cs) {
    if (!atomic_load_explicit(&cs->unflushed, memory_order_relaxed))
        atomic_store_explicit(&cs->unflushed, true, memory_order_relaxed);
    atomic_store_explicit(&cs->issued, atomic_load_explicit(&cs->issued, memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

/* Under cs->lock: `ticket` is (being) written, after everything issued so far. */
static void ticket_written(cuda_stream *cs, uint64_t ticket) {
    cs->next_ticket = ticket;
    cs->unwritten = 0;
    if (atomic_load_explicit(&cs->unflushed, memory_order_relaxed))
        atomic_store_explicit(&cs->unflushed, false, memory_order_relaxed);
}

/* Under cs->lock: whether work may go to the stream with no op (direct launches and
 * fences): the engine watches it (`active` changes under the lock only, and the engine
 * keeps the stream while set), and nothing needs an op's care: no host work or point
 * holds it back, no issued op will fail it, it is not being captured, it has not
 * failed, the device has not faulted. */
static bool direct_ok(cuda_stream *cs, gaio_stream *s) {
    return atomic_load_explicit(&cs->active, memory_order_relaxed) && !cs->blocked && !cs->doomed && !cs->capturing &&
           atomic_load_explicit(&cs->dev->fault, memory_order_acquire) == GAIO_OK && gaio__stream_status(s) == GAIO_OK;
}

/* An op already issued will fail the stream when it retires (the first one's failure
 * sticks): later ops skip their device work. */
static void doom(cuda_stream *cs, gaio_status st) {
    if (cs->doomed) return;
    cs->doomed = true;
    cs->doom_status = st;
}

/* A NATIVE op's turn: its function enqueues the caller's device work on the stream
 * now, in submission order, or only cleans up if the stream is failing. Its failure
 * is the op's, recorded when the op retires like a refused launch held behind host
 * work: the function has run, so the submitting call cannot refuse the op any more. */
static void issue_native(cuda_stream *cs, cuda_pending *p, gaio_status fault) {
    gaio_op *op = p->op;
    gaio_status status = gaio__stream_status(op->stream);
    if (status == GAIO_OK) status = fault;
    if (status == GAIO_OK && cs->doomed) status = cs->doom_status;
    char msg[GAIO_MSG_MAX];
    gaio_status r = gaio__op_call_native(op, cs->cu, status, msg);
    if (r == GAIO_OK) return;
    p->err = r;
    p->err_msg = strdup(msg);
    doom(cs, r);
}

/* Under cs->lock, with the device's context current in *ctx unless the op does not
 * need it (needs_context: then made current here for its ticket, if one is written):
 * hands p's op to the driver (its device work, unless the stream fails before it or
 * the device faulted; then its ticket) and puts it under watch. Host work blocks the
 * stream: later ops are held until it has run. A WAIT on a point that no stream has
 * enqueued yet is not issued: *wait_on gets the point, and the stream blocks on it.
 * When submitting, an op the driver refuses is not issued and its error returned; a
 * held op the driver refuses fails the stream at its turn instead. A NATIVE op's
 * function is called here either way, on every path (submit, the deferred thread,
 * drain): each enters the context first, and only a context that cannot be entered
 * (a device fault, so skip holds) leaves it to clean up without one. */
static gaio_status issue(cuda_stream *cs, cuda_pending *p, bool submitting, gaio_future **wait_on, ctx_use *ctx) {
    const gaio_cu_table *cu = gaio__cu();
    gaio_op *op = p->op;
    const char *fn = submitting ? gaio__submitting_fn : "gaio (an op held behind host work)";
    gaio_status fault_status = (gaio_status)atomic_load_explicit(&cs->dev->fault, memory_order_acquire);
    bool fault = fault_status != GAIO_OK;
    bool skip = fault || cs->doomed || gaio__stream_status(op->stream) != GAIO_OK;
    if (op->kind == GAIO_OP_WAIT && !skip) {
        gaio_future *f = op->u.point.fut;
        if (!atomic_load_explicit(&f->be_recorded, memory_order_acquire)) {
            if (!gaio__future_is_done(f)) {
                *wait_on = f;
                return GAIO_OK;
            }
            if (f->status != GAIO_OK) doom(cs, f->status); /* the wait fails the stream when it retires */
        }
    }
    if (op->kind == GAIO_OP_NATIVE) {
        issue_native(cs, p, fault_status); /* called under skip too: it must clean up */
    } else if (!skip) {
        const char *call = "";
        CUresult r = enqueue(cs, op, &call);
        /* A launch refused with the caller's context current may be refused for that
         * context's sake (a sticky error of its own): a failed launch enqueued nothing,
         * so it is tried again with the device's context current, as every other op
         * goes, and that answer stands. */
        if (r != CUDA_SUCCESS && !ctx->entered && ctx_need(fn, cs->dev, ctx) == GAIO_OK) r = enqueue(cs, op, &call);
        if (r != CUDA_SUCCESS) {
            gaio_status st = gaio__cu_fail(fn, call, r);
            if (st == GAIO_ERR_DEVICE) gaio__cuda_device_fault(cs->dev, st, gaio_last_error());
            if (submitting) return st;
            p->err = st;
            p->err_msg = strdup(gaio_last_error());
            doom(cs, st);
        }
    }
    /* Tickets are written lazily: an op someone waits for (a fence or event point,
     * host work) writes one at once; other ops share the next ticket, written by a
     * later op, every GAIO_CUDA_TICKET_BATCH ops, or by the engine once the stream
     * has been quiet a moment (gaio__cuda_flush). A launch then costs one driver call. */
    bool host = gaio__cuda_is_host_op(op);
    uint64_t ticket = cs->next_ticket + 1;
    bool write = op->kind == GAIO_OP_RECORD || host || ++cs->unwritten >= GAIO_CUDA_TICKET_BATCH;
    if (write) ticket_written(cs, ticket);
    else issued_unwritten(cs);
    bool kick = false; /* BLOCK: wake the engine by a host callback once the GPU gets here */
    if (!fault && write) {
        const char *call = "";
        bool written = ctx_need(fn, cs->dev, ctx) == GAIO_OK; /* if not, gaio_last_error says why */
        if (written) {
            CUresult r = gaio__cuda_write_ticket(cs, ticket, &call);
            written = r == CUDA_SUCCESS;
            if (!written) (void)gaio__cu_fail(fn, call, r);
        }
        /* The op is in the stream but its ticket is not: only a broken context does
         * this. Fail the device so the engine retires everything, this op included. */
        if (!written) gaio__cuda_device_fault(cs->dev, GAIO_ERR_DEVICE, gaio_last_error());
        kick = written && op->kind == GAIO_OP_RECORD && gaio__cuda_engine_policy() == GAIO_WAIT_BLOCK;
    }
    if (host && !skip) {
        p->blocks = true;
        cs->blocked = true;
    }
    if (op->kind == GAIO_OP_LAUNCH && !op->owns_refs && op->u.launch.kernel != cs->kernel) {
        /* Issued, so it retires after every earlier launch: it may drop their kernel. */
        gaio__kernel_ref(op->u.launch.kernel);
        p->kernel_drop = cs->kernel;
        cs->kernel = op->u.launch.kernel;
    }
    /* The launches issued with no op just before this one finish before its ticket. */
    p->riders = cs->riders;
    cs->riders = 0;
    gaio__cuda_track(cs, p, ticket); /* the engine may retire and free the op from here on */
    if (kick) {
        /* After track: a kick that ran before the op was under watch would wake the
         * engine to find nothing, and the op would wait out the engine's 1 ms timeout. */
        CUresult r = cu->cuLaunchHostFunc(cs->cu, gaio__cuda_engine_kick, NULL);
        if (r != CUDA_SUCCESS) {
            (void)gaio__cu_fail(fn, "cuLaunchHostFunc", r);
            gaio__cuda_device_fault(cs->dev, GAIO_ERR_DEVICE, gaio_last_error());
        }
    }
    return GAIO_OK;
}

/* Issues held ops in order until the stream blocks again; returns the point it blocked
 * on, if it did on one (the caller registers the wake-up, outside the lock). */
static gaio_future *drain(cuda_stream *cs) {
    ctx_use ctx = {0};
    if (ctx_need("gaio (ops held behind host work)", cs->dev, &ctx) != GAIO_OK)
        gaio__cuda_device_fault(cs->dev, GAIO_ERR_DEVICE, gaio_last_error());
    gaio_future *wait_on = NULL;
    pthread_mutex_lock(&cs->lock);
    cs->blocked = false;
    while (cs->held_head && !cs->blocked) {
        cuda_pending *p = cs->held_head;
        cs->held_head = p->next;
        if (!cs->held_head) cs->held_tail = NULL;
        p->next = NULL;
        (void)issue(cs, p, false, &wait_on, &ctx); /* not submitting: never fails */
        if (wait_on) {                        /* back to the head, to be issued once the point is reached */
            p->next = cs->held_head;
            cs->held_head = p;
            if (!cs->held_tail) cs->held_tail = p;
            cs->blocked = true;
        }
    }
    pthread_mutex_unlock(&cs->lock);
    ctx_done(&ctx);
    return wait_on;
}

static void point_reached(gaio_future *f, gaio_status status, void *user) {
    (void)f;
    (void)status;
    gaio__cuda_unblock(user); /* the held WAIT keeps the stream alive */
}

/* The stream blocked on the point f: drain it again once f completes (maybe at once,
 * on this thread). */
static void wake_on(cuda_stream *cs, gaio_future *f) {
    while (f) {
        if (gaio__future_on_complete(f, point_reached, cs) == GAIO_OK) return;
        /* No memory for the wake-up: fail the stream at the wait rather than hang. */
        pthread_mutex_lock(&cs->lock);
        cuda_pending *p = cs->held_head; /* the WAIT */
        p->err = GAIO_ERR_NO_MEMORY;
        p->err_msg = strdup("gaio_stream_wait_event: out of host memory to wait for the event");
        doom(cs, GAIO_ERR_NO_MEMORY);
        pthread_mutex_unlock(&cs->lock);
        f = drain(cs);
    }
}

void gaio__cuda_unblock(cuda_stream *cs) { wake_on(cs, drain(cs)); }

typedef struct ticket_event {
    struct ticket_event *next;
    uint64_t ticket;
    CUevent ev;
} ticket_event;

CUresult gaio__cuda_write_ticket(cuda_stream *cs, uint64_t ticket, const char **call) {
    const gaio_cu_table *cu = gaio__cu();
    if (cs->dev->memops) {
        *call = "cuStreamWriteValue64";
        return cu->cuStreamWriteValue64(cs->cu, cs->slot_dev, ticket, CU_STREAM_WRITE_VALUE_DEFAULT);
    }
    ticket_event *t = malloc(sizeof *t);
    if (!t) {
        *call = "malloc (a ticket event)";
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *call = "cuEventCreate";
    CUresult r = cu->cuEventCreate(&t->ev, CU_EVENT_DISABLE_TIMING);
    if (r == CUDA_SUCCESS) {
        *call = "cuEventRecord";
        r = cu->cuEventRecord(t->ev, cs->cu);
        if (r != CUDA_SUCCESS) cu->cuEventDestroy(t->ev);
    }
    if (r != CUDA_SUCCESS) {
        free(t);
        return r;
    }
    t->ticket = ticket;
    t->next = NULL;
    if (cs->ev_tail) cs->ev_tail->next = t;
    else cs->ev_head = t;
    cs->ev_tail = t;
    return CUDA_SUCCESS;
}

uint64_t gaio__cuda_fallback_seen(cuda_stream *cs) {
    const gaio_cu_table *cu = gaio__cu();
    while (cs->ev_head && cu->cuEventQuery(cs->ev_head->ev) == CUDA_SUCCESS) {
        ticket_event *t = cs->ev_head;
        cs->ev_seen = t->ticket;
        cs->ev_head = t->next;
        if (!cs->ev_head) cs->ev_tail = NULL;
        cu->cuEventDestroy(t->ev);
        free(t);
    }
    return cs->ev_seen;
}

void gaio__cuda_fallback_free(cuda_stream *cs) {
    while (cs->ev_head) {
        ticket_event *t = cs->ev_head;
        cs->ev_head = t->next;
        gaio__cu()->cuEventDestroy(t->ev);
        free(t);
    }
    cs->ev_tail = NULL;
}

/* Under cs->lock, on the engine's thread: launches issued with no op and no op
 * after them (the stream went quiet) get one, of no work, that counts them retired
 * with itself once the ticket the caller writes next is seen. Without memory for it
 * they wait for the next look. */
static void carry_riders(cuda_stream *cs, ctx_use *ctx) {
    gaio_stream *s = cs->stream;
    gaio_op *op = gaio__op_new(GAIO_OP_RELEASE, s, 0, 0, NULL);
    if (!op) return;
    atomic_fetch_add_explicit(&s->submitted, 1, memory_order_relaxed);
    cuda_pending *p = op->be;
    p->op = op;
    gaio_future *wait_on = NULL;
    (void)issue(cs, p, false, &wait_on, ctx); /* not submitting, no point: never fails or blocks */
}

/* The engine's side of lazy tickets: a stream quiet for a moment with ops under an
 * unwritten ticket, or launches that no op carries yet, gets that ticket written, so
 * that they retire. Never blocks.
 * It reads the submitters' counters at most once every half GAIO_CUDA_FLUSH_NS per
 * stream: each read costs the submitter's next op a cache miss to take the line back.
 * Quiet means no op issued between two reads. A stream on which the engine retired
 * work since its last look is not quiet, and is not read at all: a stream busy with
 * fences (a launch then a fence, again and again) never has its line taken. Retiring
 * stops once no more tickets are written, so this delays the flush by one look at
 * most: the ticket is written between half and one and a half GAIO_CUDA_FLUSH_NS
 * after the last op. */
void gaio__cuda_flush(cuda_stream *cs, uint64_t now) {
    if (now - cs->flush_since < GAIO_CUDA_FLUSH_NS / 2) return;
    cs->flush_since = now;
    if (cs->passed != cs->flush_passed) {
        cs->flush_passed = cs->passed;
        cs->flush_issued = UINT64_MAX; /* not read: the next read cannot call it quiet */
        return;
    }
    uint64_t issued = atomic_load_explicit(&cs->issued, memory_order_relaxed);
    bool quiet = issued == cs->flush_issued;
    cs->flush_issued = issued;
    if (!quiet || !atomic_load_explicit(&cs->unflushed, memory_order_relaxed)) return;
    if (pthread_mutex_trylock(&cs->lock) != 0) return;
    /* A capturing stream's ticket would land in the graph: its ops retired already. */
    if (!cs->capturing && atomic_load_explicit(&cs->unflushed, memory_order_relaxed) &&
        atomic_load_explicit(&cs->dev->fault, memory_order_acquire) == GAIO_OK) {
        ctx_use ctx = {0};
        if (ctx_need("gaio completion engine", cs->dev, &ctx) == GAIO_OK) {
            if (cs->riders) carry_riders(cs, &ctx); /* an op of no work to count them */
            uint64_t ticket = cs->next_ticket + 1;
            const char *call = "";
            CUresult r = gaio__cuda_write_ticket(cs, ticket, &call);
            ticket_written(cs, ticket);
            ctx_done(&ctx);
            if (r != CUDA_SUCCESS) {
                (void)gaio__cu_fail("gaio completion engine", call, r);
                gaio__cuda_device_fault(cs->dev, GAIO_ERR_DEVICE, gaio_last_error());
            }
        }
    }
    pthread_mutex_unlock(&cs->lock);
}

/* A launch with nothing to hold, on one of gaio's own streams, of the kernel the
 * stream launched last, while the completion engine watches the stream: one
 * cuLaunchKernel under the lock and no op; the next op issued counts it retired
 * (cuda_stream.riders). Declined (*taken false, nothing done) where anything needs an
 * op's care: another kernel, a stream the engine does not watch, a blocked, doomed,
 * failed or capturing stream, a faulted device, dynamic shared memory to opt into, or
 * a launch the driver refuses (the op's path tries it again with the context current
 * and reports the error). */
gaio_status gaio__cuda_launch_direct(const char *fn, gaio_stream *s, gaio_kernel *kernel, const gaio_launch_info *li,
                                     void **argv, bool *taken) {
    cuda_stream *cs = s->be_data;
    *taken = false;
    if (!cs->launch_any_ctx || li->shared_mem_bytes > DEFAULT_DYNAMIC_SHARED_BYTES) return GAIO_OK;
    CUkernel k;
    if (gaio__cuda_kernel_handle(fn, kernel, &k) != GAIO_OK) return GAIO_OK; /* the op's path reports it */
    pthread_mutex_lock(&cs->lock);
    gaio__prefetch_for_write(&cs->unflushed); /* for issued_unwritten, while the driver runs */
    bool ok = cs->kernel == kernel && direct_ok(cs, s) &&
              gaio__cu()->cuLaunchKernel((CUfunction)k, li->grid.x, li->grid.y, li->grid.z, li->block.x, li->block.y,
                                         li->block.z, (unsigned)li->shared_mem_bytes, cs->cu, argv, NULL) == CUDA_SUCCESS;
    if (ok) {
        cs->riders++;
        issued_unwritten(cs); /* as an op's: the engine flushes once the stream is quiet */
    }
    pthread_mutex_unlock(&cs->lock);
    *taken = ok;
    return GAIO_OK;
}

/* A fence on a stream the completion engine watches, with room in its ring: under
 * the lock, the ticket written and (ticket, future) put in the ring, which the engine
 * passes in ticket order with the stream's ops. No op to make, queue, retire and free,
 * and no count of the submitters' for the engine to read: each was a line the engine
 * read or wrote moments after the op was queued, which the submitter then fetched back.
 * Declined (false, nothing done) where anything needs an op's care: a stream that is
 * blocked, doomed, failed, capturing or not watched, a faulted device, the BLOCK
 * policy (its fences wake the engine through the driver), a full ring, a ticket the
 * driver refuses (the op's path writes it again, and fails the device if it must). */
bool gaio__cuda_fence_direct(const char *fn, gaio_stream *s, gaio_future *fut) {
    cuda_stream *cs = s->be_data;
    if (gaio__cuda_engine_policy() == GAIO_WAIT_BLOCK) return false;
    ctx_use ctx = {0};
    pthread_mutex_lock(&cs->lock);
    uint64_t head = cs->fence_head;
    if (head - cs->fence_room >= GAIO_CUDA_FENCE_RING)
        cs->fence_room = atomic_load_explicit(&cs->fence_tail, memory_order_acquire); /* the entries it passed are free */
    /* The context last, as issue() makes it current for a ticket: a declined fence
     * costs no context work (a context that cannot be entered: the op's path reports it). */
    bool ok = head - cs->fence_room < GAIO_CUDA_FENCE_RING && direct_ok(cs, s) && ctx_need(fn, cs->dev, &ctx) == GAIO_OK;
    if (ok) {
        const char *call = "";
        uint64_t ticket = cs->next_ticket + 1;
        cuda_fence *e = &cs->fences[head % GAIO_CUDA_FENCE_RING];
        /* The engine read both lines last (the entry a ring ago): they arrive while the
         * driver writes the ticket, not at the unlock. */
        gaio__prefetch_for_write(e);
        gaio__prefetch_for_write(&cs->unflushed);
        ok = gaio__cuda_write_ticket(cs, ticket, &call) == CUDA_SUCCESS; /* refused: nothing enqueued */
        if (ok) {
            ticket_written(cs, ticket);
            e->fut = fut;
            e->riders = cs->riders; /* the launches with no op before it finish before its ticket */
            cs->riders = 0;
            atomic_store_explicit(&e->ticket, ticket, memory_order_release); /* the engine may take it now */
            cs->fence_head = head + 1;
            gaio__cuda_fence_tracked();
        }
    }
    pthread_mutex_unlock(&cs->lock);
    ctx_done(&ctx);
    return ok;
}

/* A capturing stream's op: its device work goes into the capture, and it retires at
 * once (nothing will run until the graph is launched, so there is no ticket to wait
 * for). Points and host work cannot be captured: refused, which ends the capture in
 * failure when its owner ends it. A native function that fails has still run (and
 * consumed its user data, as it does on a stream): its op is enqueued and retires, and
 * the failure goes to the capture, as it would fail a stream, reported at its end. */
static gaio_status submit_captured(cuda_stream *cs, gaio_op *op) {
    const char *fn = gaio__submitting_fn;
    if (op->kind == GAIO_OP_RECORD || op->kind == GAIO_OP_WAIT || gaio__cuda_is_host_op(op))
        return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn, "the stream is being captured into a CUDA graph, which cannot "
                          "hold events, waits or host work");
    cuda_scope sc;
    gaio_status st = gaio__cuda_enter(fn, cs->dev, &sc);
    if (st != GAIO_OK) return st;
    pthread_mutex_lock(&cs->lock);
    if (op->kind == GAIO_OP_NATIVE) {
        char msg[GAIO_MSG_MAX];
        gaio_status r = gaio__op_call_native(op, cs->cu, GAIO_OK, msg);
        if (r != GAIO_OK && cs->capture_status == GAIO_OK) {
            cs->capture_status = r;
            snprintf(cs->capture_msg, sizeof cs->capture_msg, "%.200s (%.300s)", msg, gaio_last_error());
        }
    } else {
        const char *call = "";
        CUresult r = enqueue(cs, op, &call);
        if (r != CUDA_SUCCESS) st = gaio__cu_fail(fn, call, r);
    }
    pthread_mutex_unlock(&cs->lock);
    gaio__cuda_exit(&sc);
    if (st == GAIO_OK) gaio__op_retire(op);
    return st;
}

gaio_status gaio__cuda_submit(gaio_op *op) {
    cuda_stream *cs = op->stream->be_data;
    cuda_device *d = cs->dev;
    int fault = atomic_load_explicit(&d->fault, memory_order_acquire);
    if (fault != GAIO_OK)
        return gaio__fail((gaio_status)fault, gaio__submitting_fn, "device %d faulted earlier and cannot run more work: %s",
                          op->stream->ctx->device, d->fault_msg);
    if (cs->capturing) return submit_captured(cs, op);
    if (op->kind == GAIO_OP_LAUNCH) {
        CUkernel k;
        gaio_status st = gaio__cuda_kernel_handle("gaio_launch", op->u.launch.kernel, &k);
        if (st != GAIO_OK) return st;
    }
    if (op->kind == GAIO_OP_WAIT) await_recorded(op->u.point.fut);
    cuda_pending *p = op->be; /* allocated with the op: freed when it retires */
    p->op = op;
    ctx_use ctx = {0};
    gaio_status st = needs_context(cs, op) ? ctx_need(gaio__submitting_fn, d, &ctx) : GAIO_OK;
    if (st != GAIO_OK) return st;
    gaio_future *wait_on = NULL;
    pthread_mutex_lock(&cs->lock);
    if (cs->blocked) {
        /* The stream waits on the host: the op reaches the driver in its turn (drain).
         * Until then nothing covers it: it holds its stream and kernel itself. */
        gaio__op_hold_refs(op);
        if (cs->held_tail) cs->held_tail->next = p;
        else cs->held_head = p;
        cs->held_tail = p;
    } else {
        st = issue(cs, p, true, &wait_on, &ctx);
        if (wait_on) {
            gaio__op_hold_refs(op);
            cs->held_head = cs->held_tail = p;
            cs->blocked = true;
        }
    }
    pthread_mutex_unlock(&cs->lock);
    ctx_done(&ctx);
    if (st != GAIO_OK) return st;
    if (wait_on) wake_on(cs, wait_on);
    return GAIO_OK;
}
