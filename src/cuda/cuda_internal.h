/* The CUDA backend's own state. */
#ifndef GAIO_CUDA_INTERNAL_H
#define GAIO_CUDA_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "core/kernel_registry.h"
#include "core/mpsc.h"
#include "core/op.h"
#include "core/workers.h"
#include "cuda/cuda_backend.h"
#include "cuda/driver.h"

#define GAIO_CUDA_MAX_DEVICES 64

typedef struct cuda_device {
    CUdevice dev;
    pthread_mutex_t lock;
    int users;          /* contexts holding the primary context */
    CUcontext primary;  /* retained while users > 0 */
    CUstream aux;       /* gaio's own stream: synchronous allocations and frees */
    CUmemoryPool pool;  /* the device's default stream-ordered pool */
    int least_priority, greatest_priority; /* CUDA's numbers: greatest is the most negative */
    bool memops;        /* cuStreamWriteValue64 on host memory works */
    atomic_int fault;   /* a gaio_status once the device context faulted (sticky) */
    char fault_msg[GAIO_MSG_MAX];
} cuda_device;

/* A pending op: retired once the stream's completion slot reaches its ticket. */
typedef struct cuda_pending {
    gaio_work task; /* host work (host functions, pageable fills and copies) runs as an urgent pool item */
    gaio_mpsc_node qn;         /* in the stream's pending queue */
    struct cuda_pending *next; /* in a held list, or the engine's list of ops to finish */
    struct cuda_stream *cs;
    uint64_t ticket;
    gaio_op *op;
    bool dispatched;      /* engine only */
    bool blocks;          /* host work that holds the stream's later ops back until it has run */
    atomic_bool host_done; /* the task ran; the stream's held ops went to the driver */
    gaio_status err;      /* the driver refused the op when its held turn came: fails the stream there */
    char *err_msg;
    struct gaio_kernel *kernel_drop; /* the stream's reference to the kernel launched before, handed over
                                        to this op (cuda_stream.kernel): dropped when it retires */
    /* Launches issued with no op of their own just before this op (cuda_stream.riders):
     * they finish before its ticket, and are counted retired with it. */
    uint64_t riders;
} cuda_pending;

/* A fence issued with no op (gaio__cuda_fence_direct): the ticket written for it,
 * its future (one reference, the fence's), and the launches with no op it carries as
 * an op would (cuda_pending.riders). The ticket, stored last (release), publishes the
 * entry: a stream's tickets only grow, so an entry is new to the engine while its
 * ticket is above the last fence the engine passed (cuda_stream.fence_last), and the
 * engine reads no count of the submitters' to find it. One to a line: the engine
 * reads an entry once its ticket is reached, and the submitter, writing the next,
 * does not find that line taken from it. */
typedef struct cuda_fence {
    _Alignas(64) atomic_ullong ticket;
    gaio_future *fut;
    uint64_t riders;
} cuda_fence;

/* Fences in flight with no op, per stream; more go the op's way. */
#define GAIO_CUDA_FENCE_RING 32u

/* Laid out by who writes what, so that the submitting thread and the completion
 * engine do not take cache lines from each other on every op. */
typedef struct cuda_stream {
    /* Set at creation, read by both. */
    gaio_stream *stream;
    cuda_device *dev;
    CUstream cu;
    bool foreign;
    /* cu is a stream of its own, not a default stream (NULL, CU_STREAM_LEGACY or
     * CU_STREAM_PER_THREAD): a launch of a CUkernel on it runs in the stream's
     * context, whichever is current (cuLaunchKernel's documentation: "the context to
     * launch the kernel on will either be taken from the specified stream hStream or
     * the current context in case of NULL stream"). Such launches skip making the
     * device's context current (cuda_submit.c: needs_context). */
    bool launch_any_ctx;
    volatile uint64_t *slot; /* pinned, mapped host memory the GPU writes tickets into */
    CUdeviceptr slot_dev;

    /* The submitters' (under the lock, unless atomic). */
    _Alignas(64) pthread_mutex_t lock; /* submission order, tickets, held ops */
    uint64_t next_ticket;      /* the last ticket written (or being written) to the slot */
    unsigned unwritten;        /* ops issued since, waiting for the next ticket */
    /* Set by the submitter that hands the stream to the engine, cleared by the engine
     * when it finds the queue empty (completion.c: track, go_idle). Read on every op. */
    atomic_bool active;
    struct cuda_stream *incoming_next; /* in the engine's incoming list (a separate link: a stream can
                                          be re-queued while the engine still walks its own list) */
    /* Without stream memory operations, a ticket is a CUevent recorded in its place:
     * a FIFO the engine queries in order (fallback_seen, under the lock). */
    struct ticket_event *ev_head, *ev_tail;
    uint64_t ev_seen;
    /* While the stream waits on the host (for its host work to run, or for a point no
     * stream has enqueued yet), later ops are held here in order instead of reaching
     * the driver: if the host work fails the stream, they are skipped, not run. */
    bool blocked;
    cuda_pending *held_head, *held_tail;
    /* Between gaio__cuda_capture_begin and _end (one thread, a private stream): ops go
     * into the driver's stream capture and retire at once, with no ticket; the graph's
     * owner keeps what they use alive for as long as it replays them. Changed under
     * `lock`: the completion engine, which reads it under the lock too, must not query
     * a capturing stream or write a ticket into it (either ends the capture in failure,
     * and the query's error is no device fault). */
    bool capturing;
    /* The first failure of a native function called into the capture (it ran, so its
     * op counts as enqueued): the capture's end reports it. */
    gaio_status capture_status;
    char capture_msg[GAIO_MSG_MAX];
    bool doomed; /* an op already issued fails the stream: later ops skip their device work */
    gaio_status doom_status; /* the failure it will record: what later native functions are told */
    /* The kernel of the last launch issued, with one reference that covers every
     * launch of it in flight whose op holds none of its own (the backend covers_ops):
     * a run of launches of one kernel costs no atomic on the kernel's line, which the
     * engine would otherwise write as it retires them. A launch of another kernel
     * takes over the reference (cuda_pending.kernel_drop, dropped once the ops before
     * it retired); the engine drops the last when it hands the stream back (go_idle). */
    struct gaio_kernel *kernel;
    /* Launches of `kernel` with nothing to hold, issued with no op of their own
     * (gaio__cuda_launch_direct) since the last op was issued: the next op or fence
     * issued takes them (cuda_pending.riders, cuda_fence.riders), its ticket being
     * written after them, and counts them retired with itself. Until then they keep
     * the stream busy (go_idle), so `kernel` and its reference stay; a quiet stream
     * gets an op to carry them (gaio__cuda_flush). 64 bits: a loop of launches with no
     * op and no pause counts them for as long as it runs. */
    uint64_t riders;
    /* Fences issued with no op, ever: each sits in fences[n % GAIO_CUDA_FENCE_RING]
     * until the engine has passed it (fence_tail). Ops and these fences form one
     * sequence in ticket order; an op and a fence of one ticket were issued op first
     * (a fence writes its ticket, so the ops after it take the next). */
    uint64_t fence_head;
    uint64_t fence_room; /* fence_tail as last read: the ring has room below fence_room + its size */

    /* What the engine's look for quiet streams reads (gaio__cuda_flush), written by
     * submitters under the lock: on a line of their own, so that a look does not take
     * the lock's line away, which the next op's lock would have to fetch back. */
    _Alignas(64) atomic_bool unflushed; /* unwritten > 0 or riders > 0, for the engine to read without the lock */
    atomic_ullong issued;               /* ops issued without a ticket write, ever (one writer) */
    /* Written by submitters under the lock, read by the engine. */
    _Alignas(64) cuda_fence fences[GAIO_CUDA_FENCE_RING];

    /* Issued ops in ticket order: submitters push (under the lock), the completion
     * engine pops without it, so neither ever waits for the other. Its ends are
     * 64-aligned lines of their own. */
    gaio_mpsc pending;

    /* The engine's own. */
    _Alignas(64) struct cuda_stream *active_next; /* in the engine's list while it has pending ops */
    uint64_t due; /* the ticket of the oldest pending op as last seen, 0 if unknown: the
                     engine compares the slot with it without touching the op, whose line
                     the submitter writes when it links the next op */
    uint64_t flush_issued, flush_since; /* issued as last read by gaio__cuda_flush, and when */
    uint64_t passed, flush_passed; /* engine passes that retired work here; its value at the last flush look */
    uint64_t empty_since; /* when the engine found the queue empty, 0 if it is not */
    uint64_t looked_seen, looked_at; /* the slot at the engine's last look at the queue, and when */
    bool look_again; /* look at the queue next pass whatever the slot says (host work, a push under way) */
    atomic_ullong fence_tail; /* fences passed, ever: their ring entries may be reused */
    uint64_t fence_last;      /* the ticket of the last fence passed */
} cuda_stream;

cuda_device *gaio__cuda_device(int ordinal);
/* Retains the device's primary context and gaio's per-device state (refcounted). */
gaio_status gaio__cuda_device_enter(const char *fn, cuda_device *d);
void gaio__cuda_device_leave(cuda_device *d);
/* Makes the device's primary context current on this thread for the span of a gaio
 * call; exit puts back whatever the caller had current (PyTorch and the CUDA
 * runtime read the current context as "the current device"). */
typedef struct cuda_scope {
    CUcontext saved;
    bool switched;
} cuda_scope;
gaio_status gaio__cuda_enter(const char *fn, cuda_device *d, cuda_scope *sc);
void gaio__cuda_exit(cuda_scope *sc);

/* Completion slots: 8-byte words in pinned, device-mapped host memory. */
gaio_status gaio__cuda_slot_alloc(cuda_device *d, volatile uint64_t **host, CUdeviceptr *dev);
void gaio__cuda_slot_free(volatile uint64_t *host, CUdeviceptr dev);
/* At gaio_shutdown (no stream alive): frees the slabs and their context retains. */
void gaio__cuda_slots_release_all(void);

/* The completion engine (completion.c). */
gaio_status gaio__cuda_engine_start(void);
/* Puts the op of p (its backend space; p->op set) under watch, under cs->lock: it
 * retires when the slot passes `ticket`, and the engine owns it from here. */
void gaio__cuda_track(cuda_stream *cs, cuda_pending *p, uint64_t ticket);
void gaio__cuda_engine_stop(void);
void CUDA_CB gaio__cuda_engine_kick(void *unused);
gaio_wait_policy gaio__cuda_engine_policy(void);
/* Fails every op of every stream of the device (a fault); later submissions fail too. */
void gaio__cuda_device_fault(cuda_device *d, gaio_status st, const char *msg);

/* The backend table's library entries (core/backend.h): cuda_library.c, and
 * compiling through NVRTC in nvrtc.c. */
gaio_status gaio__cuda_lib_load(const char *fn, const void *image, const char *path, void **handle);
void gaio__cuda_lib_unload(void *handle);
gaio_status gaio__cuda_lib_compile(const char *fn, const char *source, const char *name, const char *const *options,
                                   size_t noptions, char *log, size_t log_size, void **image);
gaio_status gaio__cuda_lib_kernel(const char *fn, void *handle, const char *name, void **kernel, size_t *nargs,
                                  size_t **sizes);
gaio_status gaio__cuda_lib_kernels(const char *fn, void *handle,
                                   void (*each)(void *user, const char *name, void *kernel), void *user);
gaio_status gaio__cuda_lib_symbol(const char *fn, void *handle, gaio_context *ctx, const char *name, bool managed,
                                  void **ptr, size_t *bytes);

/* The CUkernel of a kernel to launch: cached in it once resolved; gaio's own kernels
 * are resolved by the core, which loads their layer's device code through the
 * library entries above on first use (core/kernel_registry.h). */
static inline gaio_status gaio__cuda_kernel_handle(const char *fn, gaio_kernel *k, CUkernel *out) {
    void *h = atomic_load_explicit(&k->cu_kernel, memory_order_acquire);
    if (!h) {
        gaio_status st = gaio__kernel_device_handle(fn, &gaio__cuda_backend, k, &h);
        if (st != GAIO_OK) return st;
    }
    *out = (CUkernel)h;
    return GAIO_OK;
}

gaio_status gaio__cuda_submit(gaio_op *op);
gaio_status gaio__cuda_launch_direct(const char *fn, gaio_stream *s, struct gaio_kernel *kernel,
                                     const gaio_launch_info *li, void **argv, bool *taken);
bool gaio__cuda_fence_direct(const char *fn, gaio_stream *s, gaio_future *fut);
/* A fence went into cs->fences (under cs->lock, the stream active): keeps the engine alert. */
void gaio__cuda_fence_tracked(void);
/* Stream capture (cuda_graph.c): the backend table's capture_begin, capture_end,
 * graph_launch and graph_free. */
/* Stream captures and work that would break them (cuDNN's plan tuning, whose engines
 * may synchronize the whole device) exclude each other process-wide: captures share
 * the lock among themselves from their begin to their end; the other work takes it
 * alone. A thread that is capturing must not ask for it alone. */
void gaio__cuda_exclusive_begin(void);
void gaio__cuda_exclusive_end(void);
/* The backend's side of the native interface for library layers (native_iface.c). */
extern const struct gaio_native_ops gaio__cuda_native_ops;

gaio_status gaio__cuda_capture_begin(const char *fn, gaio_stream *stream);
gaio_status gaio__cuda_capture_end(const char *fn, gaio_stream *stream, void **graph);
gaio_status gaio__cuda_graph_launch(const char *fn, gaio_stream *stream, void *graph, gaio_buffer *const *held,
                                    size_t nheld);
void gaio__cuda_graph_free(gaio_context *ctx, void *graph);
/* Enqueues a COPY op's copy on stream s (1D or 2D, any memory through UVA). */
CUresult gaio__cuda_copy(const gaio_op *op, CUstream s, const char **call);

/* Lazy tickets (cuda_submit.c): at most this many ops share one ticket, and the engine
 * writes a pending ticket itself once the stream has been quiet this long. */
#define GAIO_CUDA_TICKET_BATCH 32u
#define GAIO_CUDA_FLUSH_NS 20000u
void gaio__cuda_flush(cuda_stream *cs, uint64_t now);
/* Writes `ticket` into the stream's slot after the work enqueued so far (under cs->lock,
 * with the device's context current): cuStreamWriteValue64, or the event fallback. */
CUresult gaio__cuda_write_ticket(cuda_stream *cs, uint64_t ticket, const char **call);
/* The event fallback's view of the slot: the highest ticket whose event has completed
 * (under cs->lock). Frees the events it passes. */
uint64_t gaio__cuda_fallback_seen(cuda_stream *cs);
void gaio__cuda_fallback_free(cuda_stream *cs);
/* The host work the stream waited for has run, or the point it waited for was reached:
 * hands its held ops to the driver until it has to wait again (cuda_submit.c). */
void gaio__cuda_unblock(cuda_stream *cs);

static inline bool gaio__cuda_host_mem(gaio_mem_kind k) { return k == GAIO_MEM_HOST || k == GAIO_MEM_PINNED; }

/* Ops the host performs in stream order: the stream writes the op's ticket; when the
 * engine sees it, a pool worker does the work, then hands the ops held behind it to
 * the driver (completion.c). No GPU-side wait is involved: a stream blocked in a
 * cuStreamWaitValue can stall unrelated streams that share its hardware queue. Copies
 * touching pageable memory and copies between host memories are among them: the
 * driver would make the submitting thread wait for the stream to reach them. */
static inline bool gaio__cuda_is_host_op(const gaio_op *op) {
    switch (op->kind) {
    case GAIO_OP_HOST_FN: return true;
    case GAIO_OP_FILL: return op->bufs[0]->kind == GAIO_MEM_HOST;
    case GAIO_OP_COPY:
        return op->bufs[0]->kind == GAIO_MEM_HOST || op->bufs[1]->kind == GAIO_MEM_HOST ||
               (gaio__cuda_host_mem(op->bufs[0]->kind) && gaio__cuda_host_mem(op->bufs[1]->kind));
    default: return false;
    }
}

#endif
