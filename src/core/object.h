/* The core objects behind the public handles. */
#ifndef GAIO_CORE_OBJECT_H
#define GAIO_CORE_OBJECT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "core/backend.h"
#include "core/context_ext.h"
#include "core/error.h"
#include "core/pool.h"
#include "core/ref.h"
#include "core/stream_ext.h"

struct gaio_context {
    gaio_ref ref;
    int device;
    const gaio_backend *be;
    void *be_data;
    gaio_stream *default_stream;
    gaio_pool pools[GAIO_MEM_KIND_COUNT];
    pthread_mutex_t lock; /* guards streams and the generator */
    gaio_stream *streams; /* every live stream of the context, default included */
    uint64_t rng_seed, rng_offset;
    gaio_context *rt_prev, *rt_next; /* the runtime's list of live contexts */
    /* Layers' state (core/context_ext.h), published once each by a CAS. */
    _Atomic(void *) ext[GAIO_CONTEXT_EXT_COUNT];
    gaio_context_ext_dtor ext_dtor[GAIO_CONTEXT_EXT_COUNT];
};

struct gaio_stream {
    gaio_ref ref; /* unused by the default stream, which shares its context's count */
    gaio_context *ctx;
    bool is_default;
    bool is_foreign;
    int priority;
    unsigned flags;
    void *native;
    void *be_data;
    gaio_stream *prev, *next; /* in ctx->streams */
    /* Sticky failure: status is read lock-free on the hot path; the message under lock. */
    pthread_mutex_t fail_lock;
    atomic_int fail_status;
    char fail_msg[GAIO_MSG_MAX];
    /* Layers' state (core/stream_ext.h): each value is published once by a CAS; its dtor
     * is written by the winner after it and read only at destruction, which the last
     * reference's acquire-release drop orders after every publisher. */
    _Atomic(void *) ext[GAIO_STREAM_EXT_COUNT];
    gaio_stream_ext_dtor ext_dtor[GAIO_STREAM_EXT_COUNT];
    /* Written on every op by different threads (the submitter, and the worker or
     * completion thread): a cache line each, so neither write evicts the other. */
    _Alignas(64) atomic_ullong submitted;
    _Alignas(64) atomic_ullong retired;
};

struct gaio_buffer {
    gaio_ref ref;
    gaio_context *ctx;
    gaio_mem_kind kind;
    char *ptr;
    size_t size;     /* what the user asked for */
    size_t capacity; /* what the pool handed out; 0 for wrapped memory */
    size_t pitch;
    gaio_deleter deleter;
    void *deleter_user;
};

struct gaio_event {
    gaio_ref ref;
    gaio_context *ctx;
    unsigned flags;
    pthread_mutex_t lock;
    gaio_future *point; /* the last recorded point, NULL if never recorded */
};

typedef struct gaio_callback {
    struct gaio_callback *next;
    gaio_future_fn fn;
    void *user;
} gaio_callback;

/* A future's first 64 bytes are all that a fence's future touches: the submitter
 * writes them when it makes one and the completion thread when it completes it, so
 * each line more is a line the two pass back and forth on every fence. The rest is
 * written only where used: the message on failure, the point fields for events. */
struct gaio_future {
    gaio_ref ref;
    atomic_int done;
    atomic_int lock;        /* 0 free, 1 held, 2 held with sleepers (future.c: a futex word) */
    atomic_int waiters;     /* threads asleep on `done` or `dispatching` */
    atomic_int dispatching; /* the completing thread still runs callbacks: later ones queue behind */
    gaio_status status;
    bool timed;
    bool marker; /* an event's point: other streams may wait on it, so devices mark it (CUevent);
                    a fence is only watched by the host and needs none */
    bool cached; /* its memory goes back to the op cache */
    bool cb0_taken;
    atomic_bool be_recorded; /* the marker was enqueued: streams may wait on it */
    /* The first callback, in place: a future mostly gets one (a then, a completion
     * queue's), and it costs no malloc that the completing thread would free. Later
     * ones are nodes in `cbs`, in the order added. */
    gaio_future_fn cb0_fn;
    void *cb0_user;
    gaio_callback *cbs;
    /* Not cleared by gaio__future_new: */
    char *msg;     /* set once on failure (status != GAIO_OK) */
    uint64_t t_ns; /* when the point was reached (record ops; set by event points) */
    /* A point recorded on a device stream carries the backend's own marker (CUDA: a
     * CUevent), set before the record op is submitted and freed with the future; valid
     * where `marker` is set (gaio_event_record clears them). */
    void *be_event;
    void (*be_event_free)(void *be_event);
    gaio_status (*be_elapsed)(gaio_future *start, gaio_future *end, float *ms);
};

struct gaio_kernel {
    gaio_ref ref;
    char *name;
    _Atomic(gaio_host_kernel) host_fn; /* joined under the registry's lock while launches read it */
    size_t nargs;
    size_t *arg_sizes;
    _Atomic(void *) cu_kernel; /* the CUkernel, once resolved (context-independent) */
    gaio_library *lib;         /* the library cu_kernel comes from (a reference), or NULL */
    struct kernel_set_state *set; /* gaio's own kernels: the registered set (core/kernel.c), else NULL */
};

struct gaio_library {
    gaio_ref ref;
    const gaio_backend *be; /* the backend that loaded it (its lib_* entries) */
    void *handle;           /* the backend's (CUDA: a CUlibrary) */
};

void gaio__library_ref(gaio_library *lib);
void gaio__library_unref(gaio_library *lib);
/* Registers (or joins) a CUDA kernel under name; arg sizes from the driver. */
gaio_status gaio__kernel_bind_cuda(const char *fn, const char *name, void *cu_kernel, gaio_library *lib, size_t nargs,
                                   const size_t *arg_sizes, gaio_kernel **out);

/* Retain/release used inside the library: no argument checks, no messages. */
void gaio__context_ref(gaio_context *ctx);
void gaio__context_unref(gaio_context *ctx);
void gaio__context_unref_n(gaio_context *ctx, long n); /* n at once */
void gaio__stream_ref(gaio_stream *s);
void gaio__stream_unref(gaio_stream *s);
void gaio__stream_unref_n(gaio_stream *s, long n);
void gaio__buffer_ref(gaio_buffer *b);
void gaio__buffer_unref(gaio_buffer *b);
void gaio__future_ref(gaio_future *f);
void gaio__future_unref(gaio_future *f);
void gaio__kernel_ref(gaio_kernel *k);
void gaio__kernel_unref(gaio_kernel *k);
void gaio__kernel_unref_n(gaio_kernel *k, long n);

/* A pending future (one reference, owned by the caller). NULL when out of memory. */
gaio_future *gaio__future_new(void);
/* Completes f once; msg may be NULL. Runs callbacks on this thread. The caller
 * holds a reference to f across the call (callbacks may drop the others). */
void gaio__future_complete(gaio_future *f, gaio_status status, const char *msg);
static inline bool gaio__future_is_done(gaio_future *f) {
    return atomic_load_explicit(&f->done, memory_order_acquire) != 0;
}

/* Internal then-callback (no argument checks). */
gaio_status gaio__future_on_complete(gaio_future *f, gaio_future_fn fn, void *user);

/* Marks the stream failed (first failure sticks); message formatted like printf. */
void gaio__stream_fail(gaio_stream *s, gaio_status status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static inline gaio_status gaio__stream_status(gaio_stream *s) {
    return (gaio_status)atomic_load_explicit(&s->fail_status, memory_order_acquire);
}
/* Copies the failure message into out (size GAIO_MSG_MAX). */
void gaio__stream_fail_msg(gaio_stream *s, char *out);

/* Device table. A missing device fails with a message naming fn; the macro passes
 * the calling function's name. */
gaio_status gaio__device_backend_for(const char *fn, int device, const gaio_backend **be, int *ordinal);
#define gaio__device_backend(device, be, ordinal) gaio__device_backend_for(__func__, (device), (be), (ordinal))

/* The process-wide runtime (worker threads), started with the first context. */
gaio_status gaio__runtime_enter(gaio_context *ctx);
void gaio__runtime_leave(gaio_context *ctx);
int gaio__runtime_cpu_workers(void);
gaio_wait_policy gaio__runtime_wait_policy(void);
/* Two online cores or fewer: spinners yield now and then, since the thread they wait
 * for may need their core. */
bool gaio__runtime_few_cores(void);
/* Set on gaio's own threads (workers, submitters): they must not join themselves. */
extern _Thread_local bool gaio__on_gaio_thread;

#endif
