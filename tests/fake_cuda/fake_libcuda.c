/* A FAKE libcuda.so.1: a test double of the NVIDIA driver that runs nothing on a GPU.
 *
 *   - Kernels do nothing. A launch is checked the way the driver checks it, and its
 *     parameters are read (so that a sanitizer sees a bad argument pointer), and
 *     that is all.
 *   - Copies and memsets are done on the host, synchronously, inside the call that
 *     enqueues them.
 *   - Device, managed and pinned memory are all plain host memory.
 *
 * It exists so that CI, on machines without a GPU, can test gaio's CUDA backend: the
 * host-side control flow around the driver (completion engine, lock-free queues,
 * tickets, host functions, completion queues, futures), in plain, ASan+UBSan and
 * TSan builds. tests/CMakeLists.txt builds it as <build>/fake_cuda/libcuda.so.1 and
 * runs the *_fakecuda tests with that directory first on LD_LIBRARY_PATH, where
 * gaio's dlopen("libcuda.so.1") finds it. It says what it is in the device name.
 *
 * Like the driver it exports one symbol, cuGetProcAddress_v2, and every entry point
 * is found through it. The entry points are those gaio loads, taken from gaio's own
 * list (src/cuda/driver.h), so that an entry point gaio starts to use and this file
 * lacks fails the build here, not a test at run time; each is checked at compile
 * time against the prototype cuda.h gives it.
 *
 * When stream work lands, for the work the host can observe (ticket writes with
 * cuStreamWriteValue64, host functions, event completion):
 *   by default               before the call that enqueues it returns (host functions
 *                            run on the fake's driver thread, as the driver runs them
 *                            on its own, and the call waits for them);
 *   GAIO_FAKE_CUDA_ASYNC=1   later: it all goes, in submission order, through one FIFO
 *                            worker thread that runs each item no sooner than
 *                            LATENCY_NS after it was enqueued. Tickets then land after
 *                            the submitting call has returned, and gaio's completion
 *                            engine really has to wait for them.
 * One FIFO for every stream keeps each stream's order, and every order between
 * streams (cuStreamWaitEvent) with it, without tracking either.
 *
 * Beyond that, it refuses what the driver refuses where a gaio mistake would
 * otherwise pass unnoticed without a GPU: calls that need a current context fail
 * without one (gaio must make its context current), handles must be live, memory
 * must go back through the call matching its allocation, copies must stay inside
 * their allocations, and the primary context is reset (its memory freed) when its
 * last retain is released. Such refusals are also reported on stderr, prefixed
 * "fake libcuda:", as gaio does not check every result (frees, destroys). */
#define _POSIX_C_SOURCE 200809L

#include <ctype.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda/driver.h" /* GAIO_CU_FUNCTIONS, GAIO_CU_OPTIONAL: what to provide */

#define DEVICE_NAME "gaio fake CUDA device (test double)"
#define DRIVER_VERSION 13000
#define TOTAL_MEMORY ((size_t)80 << 30)
#define SHARED_PER_BLOCK (48 << 10)
#define SHARED_PER_BLOCK_OPTIN (227 << 10) /* an H100's */
#define LEAST_PRIORITY 0
#define GREATEST_PRIORITY (-5)
#define ALLOC_ALIGN 256 /* what cuMemAlloc promises */
/* In async mode, how long after its submission a work item runs at the earliest:
 * long enough that the submitter has returned, short enough to keep tests quick. */
#define LATENCY_NS 20000u

/* Reports misuse that the driver would refuse, where the caller may never look at
 * the result; returns r for the caller to return. */
__attribute__((format(printf, 2, 3))) static CUresult misuse(CUresult r, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("fake libcuda: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return r;
}

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* ---- errors ---- */

static const struct {
    CUresult code;
    const char *name, *text;
} errors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_NO_BINARY_FOR_GPU, "CUDA_ERROR_NO_BINARY_FOR_GPU",
     "no kernel image is available for execution on the device (the fake CUDA driver loads PTX text only)"},
    {CUDA_ERROR_INVALID_PTX, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {CUDA_ERROR_FILE_NOT_FOUND, "CUDA_ERROR_FILE_NOT_FOUND", "file not found"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {CUDA_ERROR_NOT_PERMITTED, "CUDA_ERROR_NOT_PERMITTED", "operation not permitted"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
};

static CUresult fake_cuGetErrorName(CUresult r, const char **name) {
    if (!name) return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
        if (errors[i].code == r) {
            *name = errors[i].name;
            return CUDA_SUCCESS;
        }
    *name = NULL; /* as the driver answers an unknown code */
    return CUDA_ERROR_INVALID_VALUE;
}

static CUresult fake_cuGetErrorString(CUresult r, const char **text) {
    if (!text) return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
        if (errors[i].code == r) {
            *text = errors[i].text;
            return CUDA_SUCCESS;
        }
    *text = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

/* ---- the device and its primary context ---- */

static atomic_bool initialized;

static CUresult fake_cuInit(unsigned int flags) {
    if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
    atomic_store(&initialized, true);
    return CUDA_SUCCESS;
}

static CUresult fake_cuDriverGetVersion(int *version) {
    if (!version) return CUDA_ERROR_INVALID_VALUE;
    *version = DRIVER_VERSION;
    return CUDA_SUCCESS;
}

static CUresult check_device(CUdevice dev) {
    if (!atomic_load(&initialized)) return CUDA_ERROR_NOT_INITIALIZED;
    return dev == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

static CUresult fake_cuDeviceGetCount(int *count) {
    if (!count) return CUDA_ERROR_INVALID_VALUE;
    if (!atomic_load(&initialized)) return CUDA_ERROR_NOT_INITIALIZED;
    *count = 1;
    return CUDA_SUCCESS;
}

static CUresult fake_cuDeviceGet(CUdevice *dev, int ordinal) {
    if (!dev) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = check_device(ordinal);
    if (r == CUDA_SUCCESS) *dev = ordinal;
    return r;
}

static CUresult fake_cuDeviceGetName(char *name, int len, CUdevice dev) {
    if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = check_device(dev);
    if (r == CUDA_SUCCESS) snprintf(name, (size_t)len, "%s", DEVICE_NAME);
    return r;
}

static CUresult fake_cuDeviceTotalMem(size_t *bytes, CUdevice dev) {
    if (!bytes) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = check_device(dev);
    if (r == CUDA_SUCCESS) *bytes = TOTAL_MEMORY;
    return r;
}

/* An sm_90 GPU, or the compute capability GAIO_FAKE_CUDA_CC names ("7.5": for code
 * that refuses older GPUs). Attributes not named read as 1: the feature flags among
 * them (64-bit stream memory operations, unified addressing, ...) say "supported". */
static void fake_cc(int *major, int *minor) {
    *major = 9, *minor = 0;
    const char *v = getenv("GAIO_FAKE_CUDA_CC");
    if (v && sscanf(v, "%d.%d", major, minor) != 2) *major = 9, *minor = 0;
}

static CUresult fake_cuDeviceGetAttribute(int *value, CUdevice_attribute attrib, CUdevice dev) {
    if (!value) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = check_device(dev);
    if (r != CUDA_SUCCESS) return r;
    int major, minor;
    fake_cc(&major, &minor);
    switch (attrib) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *value = major; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *value = minor; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *value = 132; break;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT: *value = 32; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *value = 1024; break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *value = 32; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *value = SHARED_PER_BLOCK; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *value = SHARED_PER_BLOCK_OPTIN; break;
    default: *value = 1; break;
    }
    return CUDA_SUCCESS;
}

struct CUctx_st {
    int device;
};

static struct CUctx_st primary = {0};
static pthread_mutex_t primary_lock = PTHREAD_MUTEX_INITIALIZER; /* retains and releases */
static atomic_int primary_refs;
/* Bumped each time the primary context is reset: streams, events and memory of an
 * older generation died with the context they belonged to. */
static atomic_uint generation = 1;
/* Thread-locals take the initial-exec model, as the real driver's do: in a dlopen'd
 * library the default model goes through __tls_get_addr, whose ThreadSanitizer
 * interceptor (GCC 12) at times dies with "ThreadSanitizer failed to allocate ...". */
#define THREAD_LOCAL _Thread_local __attribute__((tls_model("initial-exec")))

static THREAD_LOCAL CUcontext current;

static CUresult need_ctx(void) {
    if (current == NULL) return CUDA_ERROR_INVALID_CONTEXT;
    /* The handle outlives a reset, but a context released to zero retains is gone. */
    return atomic_load(&primary_refs) > 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

static bool alive(unsigned gen) { return gen == atomic_load(&generation); }

static void reset_primary(void);

static CUresult fake_cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev) {
    if (!ctx) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = check_device(dev);
    if (r != CUDA_SUCCESS) return r;
    pthread_mutex_lock(&primary_lock);
    atomic_fetch_add(&primary_refs, 1);
    pthread_mutex_unlock(&primary_lock);
    *ctx = &primary;
    return CUDA_SUCCESS;
}

static CUresult fake_cuDevicePrimaryCtxRelease(CUdevice dev) {
    CUresult r = check_device(dev);
    if (r != CUDA_SUCCESS) return r;
    pthread_mutex_lock(&primary_lock);
    if (atomic_load(&primary_refs) == 0) {
        pthread_mutex_unlock(&primary_lock);
        return misuse(CUDA_ERROR_INVALID_CONTEXT, "cuDevicePrimaryCtxRelease: the primary context is not retained");
    }
    /* The driver resets the primary context when its last retain goes. */
    if (atomic_fetch_sub(&primary_refs, 1) == 1) reset_primary();
    pthread_mutex_unlock(&primary_lock);
    return CUDA_SUCCESS;
}

static CUresult fake_cuCtxSetCurrent(CUcontext ctx) {
    if (ctx != NULL && ctx != &primary) return CUDA_ERROR_INVALID_CONTEXT;
    current = ctx;
    return CUDA_SUCCESS;
}

static CUresult fake_cuCtxGetCurrent(CUcontext *ctx) {
    if (!ctx) return CUDA_ERROR_INVALID_VALUE;
    *ctx = current;
    return CUDA_SUCCESS;
}

static CUresult fake_cuCtxGetStreamPriorityRange(int *least, int *greatest) {
    CUresult r = need_ctx();
    if (r != CUDA_SUCCESS) return r;
    if (least) *least = LEAST_PRIORITY;
    if (greatest) *greatest = GREATEST_PRIORITY;
    return CUDA_SUCCESS;
}

/* ---- the work queue: stream work the host observes, in submission order ---- */

static pthread_once_t async_once = PTHREAD_ONCE_INIT;
static bool async_flag;

static void read_async_flag(void) {
    const char *v = getenv("GAIO_FAKE_CUDA_ASYNC");
    async_flag = v && strcmp(v, "1") == 0;
}

static bool async_mode(void) {
    pthread_once(&async_once, read_async_flag);
    return async_flag;
}

typedef enum job_kind {
    JOB_WRITE64, /* cuStreamWriteValue64 */
    JOB_HOST_FN, /* cuLaunchHostFunc */
    JOB_MARK     /* cuEventRecord: the event completes when the worker passes it */
} job_kind;

typedef struct job {
    struct job *next;
    job_kind kind;
    uint64_t seq;    /* submission order, from 1 */
    uint64_t due_ns; /* no sooner than this */
    union {
        struct {
            uint64_t *addr;
            uint64_t value;
        } write;
        struct {
            CUhostFn fn;
            void *user;
        } host;
    } u;
} job;

static struct {
    pthread_mutex_t lock;
    pthread_cond_t wake;    /* the worker: a job came */
    pthread_cond_t drained; /* synchronizing callers: `completed` moved */
    job *head, *tail;
    uint64_t enqueued;          /* the seq of the last job queued */
    _Atomic uint64_t completed; /* every job up to this seq has run (read without the lock) */
    unsigned waiters;           /* callers blocked on `drained` */
    bool started;
} queue = {.lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER, .drained = PTHREAD_COND_INITIALIZER};

/* The driver runs host functions on a thread of its own, where CUDA calls are
 * forbidden; this one is the fake's. */
static THREAD_LOCAL bool on_worker;

static void run_job(job *j) {
    switch (j->kind) {
    case JOB_WRITE64: __atomic_store_n(j->u.write.addr, j->u.write.value, __ATOMIC_RELEASE); break;
    case JOB_HOST_FN: j->u.host.fn(j->u.host.user); break;
    case JOB_MARK: break;
    }
}

static void *worker_main(void *arg) {
    (void)arg;
    on_worker = true;
    for (;;) {
        pthread_mutex_lock(&queue.lock);
        while (!queue.head) pthread_cond_wait(&queue.wake, &queue.lock);
        job *j = queue.head;
        queue.head = j->next;
        if (!queue.head) queue.tail = NULL;
        pthread_mutex_unlock(&queue.lock);
        /* A busy wait, as the delay is LATENCY_NS at most; yielding leaves the core to
         * the threads under test on a small CI machine. */
        while (now_ns() < j->due_ns) sched_yield();
        run_job(j);
        pthread_mutex_lock(&queue.lock);
        atomic_store_explicit(&queue.completed, j->seq, memory_order_release);
        if (queue.waiters) pthread_cond_broadcast(&queue.drained);
        pthread_mutex_unlock(&queue.lock);
        free(j);
    }
    return NULL;
}

/* Blocks until every job up to seq has run. */
static CUresult wait_for(uint64_t seq) {
    if (atomic_load_explicit(&queue.completed, memory_order_acquire) >= seq) return CUDA_SUCCESS;
    if (on_worker) return CUDA_ERROR_NOT_PERMITTED; /* a host function waiting for itself */
    pthread_mutex_lock(&queue.lock);
    queue.waiters++;
    while (atomic_load_explicit(&queue.completed, memory_order_acquire) < seq)
        pthread_cond_wait(&queue.drained, &queue.lock);
    queue.waiters--;
    pthread_mutex_unlock(&queue.lock);
    return CUDA_SUCCESS;
}

static bool job_done(uint64_t seq) { return atomic_load_explicit(&queue.completed, memory_order_acquire) >= seq; }

/* ---- streams ---- */

#define STREAM_MAGIC 0x5354524du /* "STRM" */
#define EVENT_MAGIC 0x45564e54u  /* "EVNT" */
#define DEAD_MAGIC 0xdeadbeefu

struct CUstream_st {
    uint32_t magic;
    unsigned generation;
    uint64_t last_job; /* the seq of its newest job (under queue.lock) */
    int priority;      /* as created, clamped into the range (cuStreamGetPriority) */
};

/* The NULL, legacy and per-thread default streams: all one here, of normal priority. */
static struct CUstream_st default_stream = {STREAM_MAGIC, 0, 0, LEAST_PRIORITY};

static bool is_default_stream(CUstream s) { return s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD; }

static CUresult stream_of(const char *call, CUstream s, struct CUstream_st **out) {
    if (is_default_stream(s)) {
        *out = &default_stream;
        return CUDA_SUCCESS;
    }
    if (s->magic != STREAM_MAGIC)
        return misuse(CUDA_ERROR_INVALID_HANDLE, "%s: %p is not a live stream", call, (void *)s);
    if (!alive(s->generation))
        return misuse(CUDA_ERROR_INVALID_HANDLE, "%s: stream %p died with its context (the primary context was reset)",
                      call, (void *)s);
    *out = s;
    return CUDA_SUCCESS;
}

/* Work on a stream needs a current context, and the stream must belong to it (one
 * context here). */
static CUresult stream_work(const char *call, CUstream s, struct CUstream_st **out) {
    CUresult r = need_ctx();
    if (r != CUDA_SUCCESS) return misuse(r, "%s: no current context (gaio must make its context current)", call);
    return stream_of(call, s, out);
}

/* Queues a job on s; *seq gets its place in the order. */
static CUresult enqueue(struct CUstream_st *s, job_kind kind, uint64_t delay_ns, job *proto, uint64_t *seq) {
    job *j = malloc(sizeof *j);
    if (!j) return CUDA_ERROR_OUT_OF_MEMORY;
    *j = *proto;
    j->kind = kind;
    j->next = NULL;
    j->due_ns = now_ns() + delay_ns;
    pthread_mutex_lock(&queue.lock);
    if (!queue.started) {
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED); /* it runs until the process exits */
        int rc = pthread_create(&t, &attr, worker_main, NULL);
        pthread_attr_destroy(&attr);
        if (rc != 0) {
            pthread_mutex_unlock(&queue.lock);
            free(j);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        queue.started = true;
    }
    *seq = j->seq = ++queue.enqueued; /* j is the worker's once the lock goes */
    s->last_job = j->seq;
    if (queue.tail) queue.tail->next = j;
    else queue.head = j;
    queue.tail = j;
    pthread_cond_signal(&queue.wake);
    pthread_mutex_unlock(&queue.lock);
    return CUDA_SUCCESS;
}

static uint64_t last_job_of(struct CUstream_st *s) {
    pthread_mutex_lock(&queue.lock);
    uint64_t seq = s->last_job;
    pthread_mutex_unlock(&queue.lock);
    return seq;
}

static CUresult fake_cuStreamCreateWithPriority(CUstream *out, unsigned int flags, int priority) {
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = need_ctx();
    if (r != CUDA_SUCCESS) return misuse(r, "cuStreamCreateWithPriority: no current context");
    if (flags != CU_STREAM_DEFAULT && flags != CU_STREAM_NON_BLOCKING) return CUDA_ERROR_INVALID_VALUE;
    struct CUstream_st *s = malloc(sizeof *s);
    if (!s) return CUDA_ERROR_OUT_OF_MEMORY;
    s->magic = STREAM_MAGIC;
    s->generation = atomic_load(&generation);
    s->last_job = 0;
    /* The driver clamps it into the range and reports it back; the fake runs all
     * streams alike all the same. */
    s->priority = priority > LEAST_PRIORITY      ? LEAST_PRIORITY
                  : priority < GREATEST_PRIORITY ? GREATEST_PRIORITY
                                                 : priority;
    *out = s;
    return CUDA_SUCCESS;
}

/* Jobs name no stream, so a stream can go while its work is queued, as the driver
 * allows. */
static CUresult fake_cuStreamDestroy(CUstream hs) {
    if (is_default_stream(hs)) return misuse(CUDA_ERROR_INVALID_HANDLE, "cuStreamDestroy: a default stream");
    struct CUstream_st *s = hs;
    if (s->magic != STREAM_MAGIC)
        return misuse(CUDA_ERROR_INVALID_HANDLE, "cuStreamDestroy: %p is not a live stream", (void *)s);
    CUresult r = alive(s->generation) ? CUDA_SUCCESS
                                      : misuse(CUDA_ERROR_INVALID_HANDLE,
                                               "cuStreamDestroy: stream %p died with its context earlier", (void *)s);
    s->magic = DEAD_MAGIC;
    free(s);
    return r;
}

static CUresult fake_cuStreamQuery(CUstream hs) {
    struct CUstream_st *s = NULL;
    CUresult r = stream_of("cuStreamQuery", hs, &s);
    if (r != CUDA_SUCCESS) return r;
    return job_done(last_job_of(s)) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

static CUresult fake_cuStreamSynchronize(CUstream hs) {
    struct CUstream_st *s = NULL;
    CUresult r = stream_work("cuStreamSynchronize", hs, &s);
    if (r != CUDA_SUCCESS) return r;
    /* Jobs run in one order for every stream: waiting for the stream's last one
     * waits for everything it could depend on. */
    return wait_for(last_job_of(s));
}

static CUresult fake_cuStreamGetCtx(CUstream hs, CUcontext *ctx) {
    if (!ctx) return CUDA_ERROR_INVALID_VALUE;
    struct CUstream_st *s = NULL;
    CUresult r = stream_of("cuStreamGetCtx", hs, &s);
    if (r != CUDA_SUCCESS) return r;
    if (s == &default_stream && current == NULL) return CUDA_ERROR_INVALID_CONTEXT;
    *ctx = &primary;
    return CUDA_SUCCESS;
}

static CUresult fake_cuStreamGetPriority(CUstream hs, int *priority) {
    if (!priority) return CUDA_ERROR_INVALID_VALUE;
    struct CUstream_st *s = NULL;
    CUresult r = stream_of("cuStreamGetPriority", hs, &s);
    if (r != CUDA_SUCCESS) return r;
    if (s == &default_stream && current == NULL) return CUDA_ERROR_INVALID_CONTEXT;
    *priority = s->priority;
    return CUDA_SUCCESS;
}

/* ---- memory: every allocation is registered, so frees and ranges can be checked ---- */

typedef enum mem_kind { MEM_DEVICE, MEM_POOL, MEM_MANAGED, MEM_PINNED } mem_kind;

typedef struct mem_block {
    struct mem_block *next;
    uintptr_t base;
    size_t size;
    mem_kind kind;
    unsigned flags; /* cuMemHostAlloc's */
} mem_block;

static pthread_mutex_t mem_lock = PTHREAD_MUTEX_INITIALIZER;
static mem_block *mem_blocks;

static const char *mem_kind_name(mem_kind k) {
    switch (k) {
    case MEM_DEVICE: return "cuMemAlloc";
    case MEM_POOL: return "cuMemAllocFromPoolAsync";
    case MEM_MANAGED: return "cuMemAllocManaged";
    case MEM_PINNED: return "cuMemHostAlloc";
    }
    return "?";
}

static CUresult mem_new(mem_kind kind, unsigned flags, size_t size, uintptr_t *out) {
    if (size == 0) return CUDA_ERROR_INVALID_VALUE;
    if (size > TOTAL_MEMORY) return CUDA_ERROR_OUT_OF_MEMORY;
    void *p = NULL;
    mem_block *b = malloc(sizeof *b);
    if (!b || posix_memalign(&p, ALLOC_ALIGN, size) != 0) {
        free(b);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    /* Fresh device memory holds garbage: never zeros that code could come to rely on. */
    memset(p, 0xA5, size);
    b->base = (uintptr_t)p;
    b->size = size;
    b->kind = kind;
    b->flags = flags;
    pthread_mutex_lock(&mem_lock);
    b->next = mem_blocks;
    mem_blocks = b;
    pthread_mutex_unlock(&mem_lock);
    *out = b->base;
    return CUDA_SUCCESS;
}

/* The allocation holding p, copied out (another thread may free it meanwhile). */
static bool mem_lookup(uintptr_t p, mem_block *out) {
    pthread_mutex_lock(&mem_lock);
    mem_block *b = mem_blocks;
    while (b && !(p >= b->base && p - b->base < b->size)) b = b->next;
    if (b) *out = *b;
    pthread_mutex_unlock(&mem_lock);
    return b != NULL;
}

/* Frees the allocation that starts at p if its kind is one of `kinds` (a bit mask). */
static CUresult mem_free(const char *call, uintptr_t p, unsigned kinds) {
    pthread_mutex_lock(&mem_lock);
    mem_block **pp = &mem_blocks;
    while (*pp && (*pp)->base != p) pp = &(*pp)->next;
    mem_block *b = *pp;
    if (b && (kinds & (1u << b->kind))) *pp = b->next;
    pthread_mutex_unlock(&mem_lock);
    if (!b)
        return misuse(CUDA_ERROR_INVALID_VALUE, "%s(%#" PRIxPTR "): not the start of a live allocation", call, p);
    if (!(kinds & (1u << b->kind)))
        return misuse(CUDA_ERROR_INVALID_VALUE, "%s(%#" PRIxPTR "): that memory came from %s", call, p,
                      mem_kind_name(b->kind));
    free((void *)b->base);
    free(b);
    return CUDA_SUCCESS;
}

/* The driver's reset frees the context's memory; what gaio still holds of it dangles. */
static void mem_reset(void) {
    pthread_mutex_lock(&mem_lock);
    mem_block *b = mem_blocks;
    mem_blocks = NULL;
    pthread_mutex_unlock(&mem_lock);
    while (b) {
        mem_block *next = b->next;
        free((void *)b->base);
        free(b);
        b = next;
    }
}

static void reset_primary(void) {
    /* A reset waits for the context's work, then frees what the context owned. */
    if (!on_worker) {
        pthread_mutex_lock(&queue.lock);
        uint64_t last = queue.enqueued;
        pthread_mutex_unlock(&queue.lock);
        wait_for(last);
    }
    atomic_fetch_add(&generation, 1);
    mem_reset();
}

/* Bytes [p, p + n) that a copy or fill touches: within one allocation when they start
 * in one. Memory the fake did not allocate is pageable host memory, which the driver
 * accepts too. */
static CUresult check_range(const char *call, uintptr_t p, size_t n) {
    mem_block b;
    if (n == 0 || !mem_lookup(p, &b)) return CUDA_SUCCESS;
    if (n <= b.size - (p - b.base)) return CUDA_SUCCESS;
    return misuse(CUDA_ERROR_INVALID_VALUE,
                  "%s: %zu bytes at %#" PRIxPTR " run past the end of its %zu-byte allocation", call, n, p, b.size);
}

/* The bytes a pitched region of `height` rows of `width` bytes spans. */
static size_t span_2d(size_t pitch, size_t width, size_t height) { return height ? (height - 1) * pitch + width : 0; }

static CUresult fake_cuMemAlloc(CUdeviceptr *dptr, size_t size) {
    if (!dptr) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = need_ctx();
    if (r != CUDA_SUCCESS) return misuse(r, "cuMemAlloc: no current context");
    uintptr_t p;
    r = mem_new(MEM_DEVICE, 0, size, &p);
    if (r == CUDA_SUCCESS) *dptr = (CUdeviceptr)p;
    return r;
}

static CUresult fake_cuMemFree(CUdeviceptr dptr) {
    if (dptr == 0) return CUDA_SUCCESS;
    return mem_free("cuMemFree", (uintptr_t)dptr, 1u << MEM_DEVICE | 1u << MEM_POOL | 1u << MEM_MANAGED);
}

static CUresult fake_cuMemAllocManaged(CUdeviceptr *dptr, size_t size, unsigned int flags) {
    if (!dptr) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = need_ctx();
    if (r != CUDA_SUCCESS) return misuse(r, "cuMemAllocManaged: no current context");
    if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST) return CUDA_ERROR_INVALID_VALUE;
    uintptr_t p;
    r = mem_new(MEM_MANAGED, 0, size, &p);
    if (r == CUDA_SUCCESS) *dptr = (CUdeviceptr)p;
    return r;
}

static CUresult fake_cuMemHostAlloc(void **pp, size_t size, unsigned int flags) {
    if (!pp) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = need_ctx();
    if (r != CUDA_SUCCESS) return misuse(r, "cuMemHostAlloc: no current context");
    if (flags & ~(unsigned)(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED))
        return CUDA_ERROR_INVALID_VALUE;
    uintptr_t p;
    r = mem_new(MEM_PINNED, flags, size, &p);
    if (r == CUDA_SUCCESS) *pp = (void *)p;
    return r;
}

static CUresult fake_cuMemFreeHost(void *p) { return mem_free("cuMemFreeHost", (uintptr_t)p, 1u << MEM_PINNED); }

static CUresult fake_cuMemHostGetDevicePointer(CUdeviceptr *dptr, void *p, unsigned int flags) {
    if (!dptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = need_ctx();
    if (r != CUDA_SUCCESS) return misuse(r, "cuMemHostGetDevicePointer: no current context");
    mem_block b;
    if (!mem_lookup((uintptr_t)p, &b) || b.kind != MEM_PINNED || !(b.flags & CU_MEMHOSTALLOC_DEVICEMAP))
        return misuse(CUDA_ERROR_INVALID_VALUE, "cuMemHostGetDevicePointer(%p): not mapped pinned memory", p);
    *dptr = (CUdeviceptr)(uintptr_t)p; /* unified addressing: one address for both */
    return CUDA_SUCCESS;
}

struct CUmemPoolHandle_st {
    int device;
};

static struct CUmemPoolHandle_st default_pool = {0};

static CUresult fake_cuDeviceGetDefaultMemPool(CUmemoryPool *pool, CUdevice dev) {
    if (!pool) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = check_device(dev);
    if (r == CUDA_SUCCESS) *pool = &default_pool;
    return r;
}

static CUresult fake_cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value) {
    (void)attr; /* the fake's pool is malloc */
    if (pool != &default_pool || !value) return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

static CUresult fake_cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t size, CUmemoryPool pool, CUstream hs) {
    if (!dptr || pool != &default_pool) return CUDA_ERROR_INVALID_VALUE;
    struct CUstream_st *s = NULL;
    CUresult r = stream_work("cuMemAllocFromPoolAsync", hs, &s);
    if (r != CUDA_SUCCESS) return r;
    uintptr_t p;
    r = mem_new(MEM_POOL, 0, size, &p);
    if (r == CUDA_SUCCESS) *dptr = (CUdeviceptr)p;
    return r;
}

/* Freed at once: no queued job touches device memory. */
static CUresult fake_cuMemFreeAsync(CUdeviceptr dptr, CUstream hs) {
    struct CUstream_st *s = NULL;
    CUresult r = stream_work("cuMemFreeAsync", hs, &s);
    if (r != CUDA_SUCCESS) return r;
    return mem_free("cuMemFreeAsync", (uintptr_t)dptr, 1u << MEM_DEVICE | 1u << MEM_POOL);
}

static CUresult fake_cuPointerGetAttribute(void *data, CUpointer_attribute attrib, CUdeviceptr ptr) {
    if (!data) return CUDA_ERROR_INVALID_VALUE;
    mem_block b;
    if (!mem_lookup((uintptr_t)ptr, &b)) return CUDA_ERROR_INVALID_VALUE; /* not a CUDA pointer */
    switch (attrib) {
    case CU_POINTER_ATTRIBUTE_CONTEXT: *(CUcontext *)data = &primary; break;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *(unsigned *)data = b.kind == MEM_PINNED ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
        break;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: *(CUdeviceptr *)data = ptr; break;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        if (b.kind == MEM_DEVICE || b.kind == MEM_POOL) return CUDA_ERROR_INVALID_VALUE;
        *(void **)data = (void *)(uintptr_t)ptr;
        break;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED: *(int *)data = b.kind == MEM_MANAGED; break;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *(int *)data = 0; break;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: *(CUdeviceptr *)data = (CUdeviceptr)b.base; break;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE: *(size_t *)data = b.size; break;
    default: return CUDA_ERROR_NOT_SUPPORTED;
    }
    return CUDA_SUCCESS;
}

/* ---- copies and fills: on the host, at once ---- */

static CUresult fake_cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream hs) {
    struct CUstream_st *s = NULL;
    CUresult r = stream_work("cuMemcpyAsync", hs, &s);
    if (r == CUDA_SUCCESS) r = check_range("cuMemcpyAsync (destination)", (uintptr_t)dst, n);
    if (r == CUDA_SUCCESS) r = check_range("cuMemcpyAsync (source)", (uintptr_t)src, n);
    if (r == CUDA_SUCCESS && n) memcpy((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
    return r;
}

static CUresult fake_cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx, size_t n,
                                       CUstream hs) {
    if (dst_ctx != &primary || src_ctx != &primary) return CUDA_ERROR_INVALID_CONTEXT;
    struct CUstream_st *s = NULL;
    CUresult r = stream_work("cuMemcpyPeerAsync", hs, &s);
    if (r == CUDA_SUCCESS) r = check_range("cuMemcpyPeerAsync (destination)", (uintptr_t)dst, n);
    if (r == CUDA_SUCCESS) r = check_range("cuMemcpyPeerAsync (source)", (uintptr_t)src, n);
    if (r == CUDA_SUCCESS && n) memcpy((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
    return r;
}

/* One side of a pitched copy: where it starts, and its rows' layout. */
typedef struct copy_side {
    uintptr_t start;
    size_t pitch, height; /* height: rows per slice, for 3D copies */
} copy_side;

/* The start of one side of a 2D or 3D copy; arrays are not modelled. */
static CUresult side_start(CUmemorytype type, const void *host, CUdeviceptr dev, size_t x, size_t y, size_t z,
                           size_t pitch, size_t height, copy_side *out) {
    uintptr_t base;
    switch (type) {
    case CU_MEMORYTYPE_HOST: base = (uintptr_t)host; break;
    case CU_MEMORYTYPE_DEVICE:
    case CU_MEMORYTYPE_UNIFIED: base = (uintptr_t)dev; break;
    default: return CUDA_ERROR_NOT_SUPPORTED;
    }
    *out = (copy_side){base + (z * height + y) * pitch + x, pitch, height};
    return CUDA_SUCCESS;
}

/* depth slices of height rows of width bytes, checked against the allocations. */
static CUresult copy_pitched(const char *call, copy_side dst, copy_side src, size_t width, size_t height,
                             size_t depth) {
    if (!width || !height || !depth) return CUDA_SUCCESS;
    if ((height > 1 || depth > 1) && (src.pitch < width || dst.pitch < width))
        return misuse(CUDA_ERROR_INVALID_VALUE, "%s: a pitch (source %zu, destination %zu) below the width %zu", call,
                      src.pitch, dst.pitch, width);
    if (depth > 1 && (src.height < height || dst.height < height))
        return misuse(CUDA_ERROR_INVALID_VALUE, "%s: a slice height below the copy's height %zu", call, height);
    size_t src_rows = (depth - 1) * src.height + height, dst_rows = (depth - 1) * dst.height + height;
    CUresult r = check_range(call, src.start, span_2d(src.pitch, width, src_rows));
    if (r == CUDA_SUCCESS) r = check_range(call, dst.start, span_2d(dst.pitch, width, dst_rows));
    if (r != CUDA_SUCCESS) return r;
    for (size_t z = 0; z < depth; z++)
        for (size_t y = 0; y < height; y++)
            memcpy((void *)(dst.start + (z * dst.height + y) * dst.pitch),
                   (const void *)(src.start + (z * src.height + y) * src.pitch), width);
    return CUDA_SUCCESS;
}

static CUresult fake_cuMemcpy2DAsync(const CUDA_MEMCPY2D *m, CUstream hs) {
    if (!m) return CUDA_ERROR_INVALID_VALUE;
    struct CUstream_st *s = NULL;
    CUresult r = stream_work("cuMemcpy2DAsync", hs, &s);
    copy_side src, dst;
    if (r == CUDA_SUCCESS)
        r = side_start(m->srcMemoryType, m->srcHost, m->srcDevice, m->srcXInBytes, m->srcY, 0, m->srcPitch, 0, &src);
    if (r == CUDA_SUCCESS)
        r = side_start(m->dstMemoryType, m->dstHost, m->dstDevice, m->dstXInBytes, m->dstY, 0, m->dstPitch, 0, &dst);
    if (r != CUDA_SUCCESS) return r;
    return copy_pitched("cuMemcpy2DAsync", dst, src, m->WidthInBytes, m->Height, 1);
}

static CUresult fake_cuMemcpy3DPeerAsync(const CUDA_MEMCPY3D_PEER *m, CUstream hs) {
    if (!m) return CUDA_ERROR_INVALID_VALUE;
    if ((m->srcContext && m->srcContext != &primary) || (m->dstContext && m->dstContext != &primary))
        return CUDA_ERROR_INVALID_CONTEXT;
    struct CUstream_st *s = NULL;
    CUresult r = stream_work("cuMemcpy3DPeerAsync", hs, &s);
    copy_side src, dst;
    if (r == CUDA_SUCCESS)
        r = side_start(m->srcMemoryType, m->srcHost, m->srcDevice, m->srcXInBytes, m->srcY, m->srcZ, m->srcPitch,
                       m->srcHeight, &src);
    if (r == CUDA_SUCCESS)
        r = side_start(m->dstMemoryType, m->dstHost, m->dstDevice, m->dstXInBytes, m->dstY, m->dstZ, m->dstPitch,
                       m->dstHeight, &dst);
    if (r != CUDA_SUCCESS) return r;
    return copy_pitched("cuMemcpy3DPeerAsync", dst, src, m->WidthInBytes, m->Height, m->Depth);
}

static CUresult fake_cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t n, CUstream hs) {
    struct CUstream_st *s = NULL;
    CUresult r = stream_work("cuMemsetD8Async", hs, &s);
    if (r == CUDA_SUCCESS) r = check_range("cuMemsetD8Async", (uintptr_t)dst, n);
    if (r == CUDA_SUCCESS && n) memset((void *)(uintptr_t)dst, value, n);
    return r;
}

static CUresult fake_cuMemsetD2D8Async(CUdeviceptr dst, size_t pitch, unsigned char value, size_t width, size_t height,
                                       CUstream hs) {
    struct CUstream_st *s = NULL;
    CUresult r = stream_work("cuMemsetD2D8Async", hs, &s);
    if (r != CUDA_SUCCESS) return r;
    if (height > 1 && pitch < width)
        return misuse(CUDA_ERROR_INVALID_VALUE, "cuMemsetD2D8Async: pitch %zu below the width %zu", pitch, width);
    r = check_range("cuMemsetD2D8Async", (uintptr_t)dst, span_2d(pitch, width, height));
    if (r != CUDA_SUCCESS || width == 0) return r;
    for (size_t row = 0; row < height; row++) memset((void *)(uintptr_t)(dst + row * pitch), value, width);
    return CUDA_SUCCESS;
}

/* ---- work the host observes: ticket writes, host functions ---- */

static CUresult fake_cuStreamWriteValue64(CUstream hs, CUdeviceptr addr, cuuint64_t value, unsigned int flags) {
    struct CUstream_st *s = NULL;
    CUresult r = stream_work("cuStreamWriteValue64", hs, &s);
    if (r != CUDA_SUCCESS) return r;
    if (flags != CU_STREAM_WRITE_VALUE_DEFAULT && flags != CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER)
        return CUDA_ERROR_INVALID_VALUE;
    mem_block b;
    if (addr % 8 != 0 || !mem_lookup((uintptr_t)addr, &b) || b.size - ((uintptr_t)addr - b.base) < 8 ||
        (b.kind == MEM_PINNED && !(b.flags & CU_MEMHOSTALLOC_DEVICEMAP)))
        return misuse(CUDA_ERROR_INVALID_VALUE,
                      "cuStreamWriteValue64(%#llx): not an aligned word of device-accessible memory",
                      (unsigned long long)addr);
    uint64_t *word = (uint64_t *)(uintptr_t)addr;
    if (!async_mode()) {
        __atomic_store_n(word, value, __ATOMIC_RELEASE); /* and the stream's earlier work before it */
        return CUDA_SUCCESS;
    }
    job j = {.u.write = {word, value}};
    uint64_t seq;
    return enqueue(s, JOB_WRITE64, LATENCY_NS, &j, &seq);
}

static CUresult fake_cuLaunchHostFunc(CUstream hs, CUhostFn fn, void *user) {
    if (!fn) return CUDA_ERROR_INVALID_VALUE;
    if (on_worker) return CUDA_ERROR_NOT_PERMITTED; /* host functions may make no CUDA call */
    struct CUstream_st *s = NULL;
    CUresult r = stream_work("cuLaunchHostFunc", hs, &s);
    if (r != CUDA_SUCCESS) return r;
    job j = {.u.host = {fn, user}};
    uint64_t seq;
    bool async = async_mode();
    r = enqueue(s, JOB_HOST_FN, async ? LATENCY_NS : 0, &j, &seq);
    /* Synchronous mode: done before the call returns, but on the driver's thread, as
     * the caller may hold locks the function takes. */
    if (r == CUDA_SUCCESS && !async) r = wait_for(seq);
    return r;
}

/* ---- events ---- */

struct CUevent_st {
    uint32_t magic;
    unsigned generation;
    unsigned flags;
    _Atomic uint64_t done_at; /* the job whose passing completes it; 0: complete */
    _Atomic uint64_t stamp_ns; /* when last recorded (its timing, a host clock); 0: never */
};

static CUresult event_of(const char *call, CUevent ev, struct CUevent_st **out) {
    if (!ev || ev->magic != EVENT_MAGIC)
        return misuse(CUDA_ERROR_INVALID_HANDLE, "%s: %p is not a live event", call, (void *)ev);
    if (!alive(ev->generation))
        return misuse(CUDA_ERROR_INVALID_HANDLE, "%s: event %p died with its context (the primary context was reset)",
                      call, (void *)ev);
    *out = ev;
    return CUDA_SUCCESS;
}

static CUresult fake_cuEventCreate(CUevent *out, unsigned int flags) {
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = need_ctx();
    if (r != CUDA_SUCCESS) return misuse(r, "cuEventCreate: no current context");
    if (flags & ~(unsigned)(CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS))
        return CUDA_ERROR_INVALID_VALUE;
    struct CUevent_st *e = malloc(sizeof *e);
    if (!e) return CUDA_ERROR_OUT_OF_MEMORY;
    e->magic = EVENT_MAGIC;
    e->generation = atomic_load(&generation);
    e->flags = flags;
    atomic_init(&e->done_at, 0);
    atomic_init(&e->stamp_ns, 0);
    *out = e;
    return CUDA_SUCCESS;
}

/* No job names an event (completion is a place in the queue), so an event can go
 * while it is pending, as the driver allows. */
static CUresult fake_cuEventDestroy(CUevent ev) {
    if (!ev || ev->magic != EVENT_MAGIC)
        return misuse(CUDA_ERROR_INVALID_HANDLE, "cuEventDestroy: %p is not a live event", (void *)ev);
    CUresult r = alive(ev->generation) ? CUDA_SUCCESS
                                       : misuse(CUDA_ERROR_INVALID_HANDLE,
                                                "cuEventDestroy: event %p died with its context earlier", (void *)ev);
    ev->magic = DEAD_MAGIC;
    free(ev);
    return r;
}

static CUresult fake_cuEventRecord(CUevent hev, CUstream hs) {
    struct CUevent_st *e = NULL;
    struct CUstream_st *s = NULL;
    CUresult r = stream_work("cuEventRecord", hs, &s);
    if (r == CUDA_SUCCESS) r = event_of("cuEventRecord", hev, &e);
    if (r != CUDA_SUCCESS) return r;
    uint64_t seq = 0;
    if (async_mode()) {
        job j = {.kind = JOB_MARK};
        r = enqueue(s, JOB_MARK, LATENCY_NS, &j, &seq);
        if (r != CUDA_SUCCESS) return r;
    }
    atomic_store(&e->stamp_ns, now_ns());
    atomic_store(&e->done_at, seq);
    return CUDA_SUCCESS;
}

static CUresult fake_cuEventQuery(CUevent hev) {
    struct CUevent_st *e = NULL;
    CUresult r = event_of("cuEventQuery", hev, &e);
    if (r != CUDA_SUCCESS) return r;
    return job_done(atomic_load(&e->done_at)) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

static CUresult fake_cuEventElapsedTime(float *ms, CUevent hstart, CUevent hend) {
    if (!ms) return CUDA_ERROR_INVALID_VALUE;
    struct CUevent_st *a = NULL, *b = NULL;
    CUresult r = event_of("cuEventElapsedTime", hstart, &a);
    if (r == CUDA_SUCCESS) r = event_of("cuEventElapsedTime", hend, &b);
    if (r != CUDA_SUCCESS) return r;
    if ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING) return CUDA_ERROR_INVALID_HANDLE;
    uint64_t ta = atomic_load(&a->stamp_ns), tb = atomic_load(&b->stamp_ns);
    if (!ta || !tb) return CUDA_ERROR_INVALID_HANDLE; /* never recorded */
    if (!job_done(atomic_load(&a->done_at)) || !job_done(atomic_load(&b->done_at))) return CUDA_ERROR_NOT_READY;
    *ms = (float)((double)(int64_t)(tb - ta) / 1e6);
    return CUDA_SUCCESS;
}

/* Orders nothing: with one queue for all streams, everything recorded before the wait
 * is ahead of everything submitted after it. */
static CUresult fake_cuStreamWaitEvent(CUstream hs, CUevent hev, unsigned int flags) {
    struct CUstream_st *s = NULL;
    struct CUevent_st *e = NULL;
    CUresult r = stream_work("cuStreamWaitEvent", hs, &s);
    if (r == CUDA_SUCCESS) r = event_of("cuStreamWaitEvent", hev, &e);
    if (r == CUDA_SUCCESS && flags != CU_EVENT_WAIT_DEFAULT && flags != CU_EVENT_WAIT_EXTERNAL)
        r = CUDA_ERROR_INVALID_VALUE;
    return r;
}

/* ---- libraries and kernels, from PTX text ---- */

#define LIBRARY_MAGIC 0x4c494252u /* "LIBR" */
#define KERNEL_MAGIC 0x4b45524eu  /* "KERN" */

typedef struct param_info {
    size_t offset, size;
} param_info;

struct CUkern_st {
    uint32_t magic;
    char *name;
    size_t nparams;
    param_info *params;
    atomic_int max_dynamic_shared; /* set by cuKernelSetAttribute, read by launches on any thread */
};

struct CUlib_st {
    uint32_t magic;
    size_t nkernels;
    struct CUkern_st *kernels;
};

static bool ptx_ident_char(char c) { return isalnum((unsigned char)c) || c == '_' || c == '$' || c == '%'; }

static const char *skip_space(const char *p, const char *end) {
    while (p < end && isspace((unsigned char)*p)) p++;
    return p;
}

/* The bytes of a PTX scalar type such as .u64, .b8, .f16x2; 0 if tok is none. */
static size_t ptx_type_size(const char *tok, size_t len) {
    if (len < 3 || tok[0] != '.' || !strchr("bsuf", tok[1])) return 0;
    size_t i = 2, bits = 0;
    while (i < len && isdigit((unsigned char)tok[i])) bits = bits * 10 + (size_t)(tok[i++] - '0');
    size_t lanes = 1;
    if (i + 2 == len && tok[i] == 'x' && isdigit((unsigned char)tok[i + 1])) {
        lanes = (size_t)(tok[i + 1] - '0');
        i += 2;
    }
    if (i != len || (bits != 8 && bits != 16 && bits != 32 && bits != 64 && bits != 128)) return 0;
    return bits / 8 * lanes;
}

/* One parameter declaration, [p, end): ".param .u64 x", ".param .align 8 .b8 x[24]",
 * ".param .u64 .ptr .global .align 1 x". Its size and alignment, false if malformed. */
static bool parse_param(const char *p, const char *end, size_t *size, size_t *align) {
    bool is_param = false;
    size_t type = 0, count = 1;
    *align = 0;
    for (p = skip_space(p, end); p < end; p = skip_space(p, end)) {
        const char *tok = p;
        while (p < end && !isspace((unsigned char)*p)) p++;
        size_t len = (size_t)(p - tok), sz;
        if (len == 6 && !strncmp(tok, ".param", 6)) {
            is_param = true;
        } else if (len == 6 && !strncmp(tok, ".align", 6)) {
            p = skip_space(p, end);
            char *after;
            *align = strtoul(p, &after, 10);
            if (after == p || after > end) return false;
            p = after;
        } else if (!type && (sz = ptx_type_size(tok, len)) != 0) {
            type = sz;
        } else {
            const char *bracket = memchr(tok, '[', len);
            if (bracket) {
                char *after;
                count = strtoul(bracket + 1, &after, 10);
                if (after == bracket + 1 || after >= end || *after != ']') return false;
                p = after + 1;
            }
        }
    }
    if (!is_param || !type || count == 0) return false;
    if (!*align) *align = type;
    if (*align & (*align - 1)) return false;
    *size = type * count;
    return true;
}

/* The parameters of the entry whose list starts after its '(' at p; *p_out is past ')'. */
static bool parse_params(const char *p, const char *text_end, struct CUkern_st *k, const char **p_out) {
    const char *close = memchr(p, ')', (size_t)(text_end - p));
    if (!close) return false;
    size_t end_of_last = 0;
    while (skip_space(p, close) < close) {
        const char *comma = memchr(p, ',', (size_t)(close - p));
        const char *seg_end = comma ? comma : close;
        size_t size, align;
        if (!parse_param(p, seg_end, &size, &align)) return false;
        param_info *grown = realloc(k->params, (k->nparams + 1) * sizeof *grown);
        if (!grown) return false;
        k->params = grown;
        size_t offset = (end_of_last + align - 1) / align * align;
        k->params[k->nparams++] = (param_info){offset, size};
        end_of_last = offset + size;
        p = comma ? comma + 1 : close;
    }
    *p_out = close + 1;
    return true;
}

static void library_free(struct CUlib_st *lib) {
    for (size_t i = 0; i < lib->nkernels; i++) {
        lib->kernels[i].magic = DEAD_MAGIC;
        free(lib->kernels[i].name);
        free(lib->kernels[i].params);
    }
    free(lib->kernels);
    lib->magic = DEAD_MAGIC;
    free(lib);
}

/* Whether the image starts with a 4-byte magic number. None holds a zero byte, so
 * this stops at the end of a short text image instead of reading past it. */
static bool has_magic(const unsigned char *image, const unsigned char magic[4]) {
    for (int i = 0; i < 4; i++)
        if (image[i] != magic[i]) return false;
    return true;
}

/* A library of every ".entry NAME(...)" in PTX text. Machine code (cubin, fatbin)
 * cannot run here: the driver's answer for an image with nothing for the device. */
static CUresult library_from_image(const void *image, CUlibrary *out) {
    static const unsigned char elf[4] = {0x7f, 'E', 'L', 'F'}, fatbin[4] = {0x50, 0xed, 0x55, 0xba},
                               fatbin_wrapper[4] = {0xb1, 0x43, 0x62, 0x46};
    if (has_magic(image, elf) || has_magic(image, fatbin) || has_magic(image, fatbin_wrapper))
        return CUDA_ERROR_NO_BINARY_FOR_GPU;
    const char *text = image, *end = text + strlen(text);
    if (!strstr(text, ".version") || !strstr(text, ".target")) return CUDA_ERROR_INVALID_PTX;
    struct CUlib_st *lib = calloc(1, sizeof *lib);
    if (!lib) return CUDA_ERROR_OUT_OF_MEMORY;
    lib->magic = LIBRARY_MAGIC;
    for (const char *p = text; (p = strstr(p, ".entry")) != NULL;) {
        p += 6;
        if (!isspace((unsigned char)*p)) continue; /* .entry_something: not the directive */
        p = skip_space(p, end);
        const char *name = p;
        while (ptx_ident_char(*p)) p++;
        struct CUkern_st *grown = realloc(lib->kernels, (lib->nkernels + 1) * sizeof *grown);
        if (!grown) {
            library_free(lib);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        lib->kernels = grown;
        struct CUkern_st *k = &lib->kernels[lib->nkernels++];
        memset(k, 0, sizeof *k);
        k->magic = KERNEL_MAGIC;
        atomic_init(&k->max_dynamic_shared, SHARED_PER_BLOCK);
        k->name = strndup(name, (size_t)(p - name));
        if (!k->name) {
            library_free(lib);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        p = skip_space(p, end);
        if (p == name || (*p == '(' && !parse_params(p + 1, end, k, &p))) {
            library_free(lib);
            return CUDA_ERROR_INVALID_PTX;
        }
    }
    *out = lib;
    return CUDA_SUCCESS;
}

static CUresult fake_cuLibraryLoadData(CUlibrary *out, const void *code, CUjit_option *jit_options,
                                       void **jit_values, unsigned int njit, CUlibraryOption *lib_options,
                                       void **lib_values, unsigned int nlib) {
    if (!out || !code || (njit && (!jit_options || !jit_values)) || (nlib && (!lib_options || !lib_values)))
        return CUDA_ERROR_INVALID_VALUE;
    return library_from_image(code, out);
}

static CUresult fake_cuLibraryLoadFromFile(CUlibrary *out, const char *path, CUjit_option *jit_options,
                                           void **jit_values, unsigned int njit, CUlibraryOption *lib_options,
                                           void **lib_values, unsigned int nlib) {
    if (!out || !path || (njit && (!jit_options || !jit_values)) || (nlib && (!lib_options || !lib_values)))
        return CUDA_ERROR_INVALID_VALUE;
    FILE *f = fopen(path, "rb");
    if (!f) return CUDA_ERROR_FILE_NOT_FOUND;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n - 1, f);
        if (n < cap - 1) break;
        char *grown = realloc(buf, cap * 2);
        if (!grown) free(buf);
        buf = grown;
        cap *= 2;
    }
    bool failed = ferror(f);
    fclose(f);
    if (!buf) return CUDA_ERROR_OUT_OF_MEMORY;
    if (failed) {
        free(buf);
        return CUDA_ERROR_FILE_NOT_FOUND;
    }
    buf[n] = '\0';
    CUresult r = n ? library_from_image(buf, out) : CUDA_ERROR_INVALID_IMAGE;
    free(buf);
    return r;
}

static CUresult library_of(const char *call, CUlibrary lib) {
    if (!lib || lib->magic != LIBRARY_MAGIC)
        return misuse(CUDA_ERROR_INVALID_HANDLE, "%s: %p is not a loaded library", call, (void *)lib);
    return CUDA_SUCCESS;
}

static CUresult fake_cuLibraryUnload(CUlibrary lib) {
    CUresult r = library_of("cuLibraryUnload", lib);
    if (r == CUDA_SUCCESS) library_free(lib);
    return r;
}

static CUresult fake_cuLibraryGetKernel(CUkernel *out, CUlibrary lib, const char *name) {
    if (!out || !name) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = library_of("cuLibraryGetKernel", lib);
    if (r != CUDA_SUCCESS) return r;
    for (size_t i = 0; i < lib->nkernels; i++)
        if (!strcmp(lib->kernels[i].name, name)) {
            *out = &lib->kernels[i];
            return CUDA_SUCCESS;
        }
    return CUDA_ERROR_NOT_FOUND;
}

static CUresult fake_cuLibraryGetKernelCount(unsigned int *count, CUlibrary lib) {
    if (!count) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = library_of("cuLibraryGetKernelCount", lib);
    if (r == CUDA_SUCCESS) *count = (unsigned)lib->nkernels;
    return r;
}

static CUresult fake_cuLibraryEnumerateKernels(CUkernel *kernels, unsigned int n, CUlibrary lib) {
    if (!kernels) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = library_of("cuLibraryEnumerateKernels", lib);
    if (r != CUDA_SUCCESS) return r;
    for (size_t i = 0; i < n && i < lib->nkernels; i++) kernels[i] = &lib->kernels[i];
    return CUDA_SUCCESS;
}

static CUresult fake_cuKernelGetName(const char **name, CUkernel k) {
    if (!name || !k) return CUDA_ERROR_INVALID_VALUE;
    *name = k->name;
    return CUDA_SUCCESS;
}

/* Libraries here hold no variables. */
static CUresult fake_cuLibraryGetManaged(CUdeviceptr *dptr, size_t *bytes, CUlibrary lib, const char *name) {
    (void)dptr;
    (void)bytes;
    if (!name) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = need_ctx();
    if (r != CUDA_SUCCESS) return misuse(r, "cuLibraryGetManaged: no current context");
    r = library_of("cuLibraryGetManaged", lib);
    return r != CUDA_SUCCESS ? r : CUDA_ERROR_NOT_FOUND;
}

static CUresult fake_cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary lib, const char *name) {
    (void)dptr;
    (void)bytes;
    if (!name) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = need_ctx();
    if (r != CUDA_SUCCESS) return misuse(r, "cuLibraryGetGlobal: no current context");
    r = library_of("cuLibraryGetGlobal", lib);
    return r != CUDA_SUCCESS ? r : CUDA_ERROR_NOT_FOUND;
}

static CUresult kernel_of(const char *call, struct CUkern_st *k) {
    if (!k || k->magic != KERNEL_MAGIC)
        return misuse(CUDA_ERROR_INVALID_HANDLE, "%s: %p is not a kernel of a loaded library", call, (void *)k);
    return CUDA_SUCCESS;
}

/* A CUfunction is its CUkernel's own handle here: gaio launches a CUkernel cast to
 * CUfunction, as the driver allows, and both must work. */
static struct CUkern_st *kernel_of_function(CUfunction f) { return (struct CUkern_st *)(void *)f; }

static CUresult fake_cuKernelGetFunction(CUfunction *out, CUkernel k) {
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = need_ctx();
    if (r != CUDA_SUCCESS) return misuse(r, "cuKernelGetFunction: no current context");
    r = kernel_of("cuKernelGetFunction", k);
    if (r == CUDA_SUCCESS) *out = (CUfunction)(void *)k;
    return r;
}

static CUresult fake_cuKernelGetAttribute(int *value, CUfunction_attribute attrib, CUkernel k, CUdevice dev) {
    if (!value) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = check_device(dev);
    if (r == CUDA_SUCCESS) r = kernel_of("cuKernelGetAttribute", k);
    if (r != CUDA_SUCCESS) return r;
    switch (attrib) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *value = 1024; break;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *value = atomic_load(&k->max_dynamic_shared); break;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION:
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *value = 90; break;
    default: *value = 0; break; /* static shared memory, registers, local memory: none */
    }
    return CUDA_SUCCESS;
}

static CUresult fake_cuKernelSetAttribute(CUfunction_attribute attrib, int value, CUkernel k, CUdevice dev) {
    CUresult r = check_device(dev);
    if (r == CUDA_SUCCESS) r = kernel_of("cuKernelSetAttribute", k);
    if (r != CUDA_SUCCESS) return r;
    if (attrib == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) {
        if (value < 0 || value > SHARED_PER_BLOCK_OPTIN) return CUDA_ERROR_INVALID_VALUE;
        atomic_store(&k->max_dynamic_shared, value);
    }
    return CUDA_SUCCESS;
}

static CUresult param_info_of(struct CUkern_st *k, size_t i, size_t *offset, size_t *size) {
    CUresult r = kernel_of("cuKernelGetParamInfo", k);
    if (r != CUDA_SUCCESS) return r;
    if (i >= k->nparams) return CUDA_ERROR_INVALID_VALUE; /* how callers find the count */
    if (offset) *offset = k->params[i].offset;
    if (size) *size = k->params[i].size;
    return CUDA_SUCCESS;
}

static CUresult fake_cuKernelGetParamInfo(CUkernel k, size_t i, size_t *offset, size_t *size) {
    return param_info_of(k, i, offset, size);
}

static CUresult fake_cuFuncGetParamInfo(CUfunction f, size_t i, size_t *offset, size_t *size) {
    return param_info_of(kernel_of_function(f), i, offset, size);
}

/* Checks the launch as the driver would and reads every argument; runs nothing. */
static CUresult fake_cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                                    unsigned int by, unsigned int bz, unsigned int shared, CUstream hs,
                                    void **params, void **extra) {
    struct CUstream_st *s = NULL;
    struct CUkern_st *k = kernel_of_function(f);
    /* A CUkernel runs in hs's context, current or not, and only on a default stream
     * in the current one (cuLaunchKernel's documentation). gaio launches CUkernels
     * only (a CUfunction is a CUkernel here), so the rule is the CUkernel's. */
    CUresult r = is_default_stream(hs) ? stream_work("cuLaunchKernel", hs, &s) : stream_of("cuLaunchKernel", hs, &s);
    if (r == CUDA_SUCCESS) r = kernel_of("cuLaunchKernel", k);
    if (r != CUDA_SUCCESS) return r;
    if (extra) return CUDA_ERROR_NOT_SUPPORTED; /* CU_LAUNCH_PARAM_* buffers: not modelled */
    if (!gx || !gy || !gz || gy > 65535 || gz > 65535 || gx > INT32_MAX) return CUDA_ERROR_INVALID_VALUE;
    if (!bx || !by || !bz || bx > 1024 || by > 1024 || bz > 64 || (uint64_t)bx * by * bz > 1024)
        return CUDA_ERROR_INVALID_VALUE;
    if (shared > (unsigned)atomic_load(&k->max_dynamic_shared)) return CUDA_ERROR_INVALID_VALUE;
    if (k->nparams && !params) return CUDA_ERROR_INVALID_VALUE;
    unsigned char sum = 0;
    for (size_t i = 0; i < k->nparams; i++) {
        const volatile unsigned char *arg = params[i]; /* volatile: the reads stay, for the sanitizers */
        sum ^= arg[0] ^ arg[k->params[i].size - 1];
    }
    (void)sum;
    return CUDA_SUCCESS;
}

/* ---- graphs: not modelled; gaio runs the captured work step by step instead ---- */

static CUresult fake_cuStreamBeginCapture(CUstream hs, CUstreamCaptureMode mode) {
    struct CUstream_st *s = NULL;
    CUresult r = stream_of("cuStreamBeginCapture", hs, &s);
    if (r != CUDA_SUCCESS) return r;
    if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL && mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
        mode != CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_ERROR_NOT_SUPPORTED;
}

static CUresult fake_cuStreamEndCapture(CUstream hs, CUgraph *graph) {
    (void)hs;
    if (!graph) return CUDA_ERROR_INVALID_VALUE;
    return CUDA_ERROR_ILLEGAL_STATE; /* no capture ever begins */
}

static CUresult fake_cuGraphInstantiateWithFlags(CUgraphExec *exec, CUgraph graph, unsigned long long flags) {
    (void)graph, (void)flags;
    (void)exec;
    return CUDA_ERROR_INVALID_VALUE; /* no graph exists to instantiate */
}

static CUresult fake_cuGraphLaunch(CUgraphExec exec, CUstream hs) {
    (void)exec, (void)hs;
    return CUDA_ERROR_INVALID_VALUE;
}

static CUresult fake_cuGraphExecDestroy(CUgraphExec exec) {
    (void)exec;
    return CUDA_ERROR_INVALID_VALUE;
}

static CUresult fake_cuGraphDestroy(CUgraph graph) {
    (void)graph;
    return CUDA_ERROR_INVALID_VALUE;
}

/* ---- the one exported symbol ---- */

/* Every entry point must have the prototype cuda.h gives it (gaio calls it as that). */
#define FAKE_CHECK(name)                                                                         \
    _Static_assert(_Generic(&fake_##name, __typeof__(&name): 1, default: 0),                     \
                   "fake_" #name " does not have the prototype cuda.h declares for " #name);
#define FAKE_CHECK_SINCE(name, version) FAKE_CHECK(name)
GAIO_CU_FUNCTIONS(FAKE_CHECK)
GAIO_CU_OPTIONAL(FAKE_CHECK_SINCE)

typedef void (*any_fn)(void);

static const struct entry_point {
    const char *name;
    any_fn fn;
    int since; /* the lowest cudaVersion a caller may ask for it at */
} entry_points[] = {
#define FAKE_ENTRY(name) {#name, (any_fn)fake_##name, 0},
#define FAKE_ENTRY_SINCE(name, version) {#name, (any_fn)fake_##name, version},
    GAIO_CU_FUNCTIONS(FAKE_ENTRY) GAIO_CU_OPTIONAL(FAKE_ENTRY_SINCE)
#undef FAKE_ENTRY
#undef FAKE_ENTRY_SINCE
};

__attribute__((visibility("default"))) CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cuda_version,
                                                                     cuuint64_t flags,
                                                                     CUdriverProcAddressQueryResult *status) {
    (void)flags; /* one default stream here: legacy and per-thread alike */
    if (!symbol || !pfn) return CUDA_ERROR_INVALID_VALUE;
    *pfn = NULL;
    for (size_t i = 0; i < sizeof entry_points / sizeof entry_points[0]; i++) {
        const struct entry_point *e = &entry_points[i];
        if (strcmp(e->name, symbol) != 0) continue;
        if (cuda_version < e->since) {
            if (status) *status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
            return CUDA_ERROR_NOT_FOUND;
        }
        memcpy(pfn, &e->fn, sizeof e->fn);
        if (status) *status = CU_GET_PROC_ADDRESS_SUCCESS;
        return CUDA_SUCCESS;
    }
    if (status) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return misuse(CUDA_ERROR_NOT_FOUND, "no entry point %s in this test double (tests/fake_cuda/fake_libcuda.c)",
                  symbol);
}
