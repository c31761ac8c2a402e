/* Native work in stream order (gaio_enqueue_native, and gaio__enqueue_native_held for
 * gaio's own layers), per-stream extension slots (core/stream_ext.h) and the rest of
 * the native interface for gaio's layers (core/native.h).
 *
 * The same source runs on every backend. On the host a native function is the work
 * itself: it runs on a worker once earlier ops have finished, so it reads their
 * results. On CUDA it is called at the op's turn of submission, with the device's
 * context current, and enqueues work of its own on the stream; the test reaches the
 * driver the way a user's library would (libcuda.so.1, which on a machine without a
 * GPU is tests/fake_cuda's) to check the context, to enqueue a memset and a driver host
 * function, and to see that later ops of the stream wait for them. */
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "common.h"
#include "core/error.h"
#include "core/graph.h"
#include "core/native.h"
#include "core/stream_ext.h"
#include "support.h"

/* ---- the driver, as a user's library reaches it (CUDA devices only) ---- */

typedef int (*get_proc_fn)(const char *symbol, void **pfn, int version, unsigned long long flags, int *status);

static struct {
    int (*ctx_get_current)(void **ctx);
    int (*launch_host_func)(void *stream, void (*fn)(void *), void *user);
    int (*memset_d8_async)(unsigned long long dst, unsigned char value, size_t n, void *stream);
    int (*stream_query)(void *stream);
} drv;

static int on_cuda; /* the device under test is a GPU */

static void *drv_sym(get_proc_fn get_proc, const char *name) {
    void *p = NULL;
    int q = 0;
    CHECK(get_proc(name, &p, 12000, 0, &q) == 0 && p);
    return p;
}

static void drv_load(void) {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL); /* the one gaio opened */
    CHECK(lib != NULL);
    get_proc_fn get_proc;
    void *gp = dlsym(lib, "cuGetProcAddress_v2");
    CHECK(gp != NULL);
    memcpy(&get_proc, &gp, sizeof gp);
    void *p = drv_sym(get_proc, "cuCtxGetCurrent");
    memcpy(&drv.ctx_get_current, &p, sizeof p);
    p = drv_sym(get_proc, "cuLaunchHostFunc");
    memcpy(&drv.launch_host_func, &p, sizeof p);
    p = drv_sym(get_proc, "cuMemsetD8Async");
    memcpy(&drv.memset_d8_async, &p, sizeof p);
    p = drv_sym(get_proc, "cuStreamQuery");
    memcpy(&drv.stream_query, &p, sizeof p);
}

static int context_current(void) {
    void *c = NULL;
    return drv.ctx_get_current(&c) == 0 && c != NULL;
}

static void flag_fn(void *user) { atomic_store((atomic_int *)user, 1); }

/* ---- 1. order: with earlier and later ops, and with host functions ---- */

typedef struct step_log {
    atomic_int n;
    int code[16];
} step_log;

static void log_step(step_log *l, int code) {
    int i = atomic_fetch_add(&l->n, 1);
    if (i < 16) l->code[i] = code;
}

typedef struct order_host {
    step_log *log;
    int code;
    atomic_int *must_be_set; /* NULL, or a flag the native work before must have set */
    atomic_int bad;
} order_host;

static gaio_status order_host_fn(gaio_status st, void *user) {
    order_host *h = user;
    if (st != GAIO_OK || (h->must_be_set && !atomic_load(h->must_be_set))) atomic_fetch_add(&h->bad, 1);
    log_step(h->log, h->code);
    return GAIO_OK;
}

typedef struct order_native {
    step_log *log;
    int code;
    void *want_native;  /* gaio_stream_native of the stream */
    pthread_t caller;
    int on_caller;      /* 1: must run on the caller's thread, 0: must not, -1: either */
    gaio_buffer *buf;   /* its work: host, check then write; CUDA, a memset on the stream */
    size_t bytes;
    unsigned char expect, write;
    atomic_int dev_done; /* CUDA: set by a driver host function enqueued after the memset */
    atomic_int calls, bad;
} order_native;

static gaio_status order_native_fn(void *native, gaio_status st, void *user) {
    order_native *n = user;
    atomic_fetch_add(&n->calls, 1);
    if (st != GAIO_OK || native != n->want_native) atomic_fetch_add(&n->bad, 1);
    if (n->on_caller >= 0 && pthread_equal(pthread_self(), n->caller) != n->on_caller) atomic_fetch_add(&n->bad, 1);
    if (on_cuda && !context_current()) atomic_fetch_add(&n->bad, 1);
    if (n->buf && !on_cuda) {
        /* The host: earlier ops have finished, so their result is there to read. */
        unsigned char *p = host_ptr(n->buf);
        for (size_t i = 0; i < n->bytes; i++)
            if (p[i] != n->expect) {
                atomic_fetch_add(&n->bad, 1);
                break;
            }
        memset(p, n->write, n->bytes / 2);
        atomic_store(&n->dev_done, 1);
    } else if (n->buf) {
        void *d;
        OK(gaio_buffer_device_ptr(n->buf, &d));
        if (drv.memset_d8_async((unsigned long long)(uintptr_t)d, n->write, n->bytes / 2, native) != 0 ||
            drv.launch_host_func(native, flag_fn, &n->dev_done) != 0)
            atomic_fetch_add(&n->bad, 1);
    }
    log_step(n->log, n->code);
    return GAIO_OK;
}

static void test_order(gaio_context *ctx) {
    enum { BYTES = 4096 };
    for (int deferred = 0; deferred < 2; deferred++) {
        gaio_stream *s;
        OK(gaio_stream_create(ctx, 0, deferred ? GAIO_STREAM_DEFERRED : 0, &s));
        void *native;
        OK(gaio_stream_native(s, &native));
        CHECK(on_cuda ? native != NULL : native == NULL);
        gaio_buffer *a, *b;
        OK(gaio_buffer_alloc(ctx, on_cuda ? GAIO_MEM_DEVICE : GAIO_MEM_HOST, BYTES, &a));
        OK(gaio_buffer_alloc(ctx, on_cuda ? GAIO_MEM_PINNED : GAIO_MEM_HOST, BYTES, &b));
        step_log log = {0};
        /* On the host a worker calls every native function; on CUDA the caller itself,
         * at submission, on a plain stream that is not held behind host work. */
        int first_on_caller = on_cuda && !deferred;
        order_native n0 = {.log = &log, .code = 0, .want_native = native, .caller = pthread_self(),
                           .on_caller = first_on_caller};
        order_host h1 = {.log = &log, .code = 1};
        order_native n2 = {.log = &log, .code = 2, .want_native = native, .caller = pthread_self(),
                           .on_caller = on_cuda ? -1 : 0, .buf = a, .bytes = BYTES, .expect = 0x11, .write = 0x22};
        order_host h3 = {.log = &log, .code = 3, .must_be_set = &n2.dev_done};
        order_native n4 = {.log = &log, .code = 4, .want_native = native, .caller = pthread_self(),
                           .on_caller = on_cuda ? -1 : 0};
        OK(gaio_memset_async(s, a, 0, 0x11, BYTES));
        OK(gaio_enqueue_native(s, order_native_fn, &n0));
        if (first_on_caller) CHECK(atomic_load(&n0.calls) == 1); /* called before the enqueue returned */
        OK(gaio_launch_host_func(s, order_host_fn, &h1));
        OK(gaio_enqueue_native(s, order_native_fn, &n2)); /* held behind h1 on CUDA: called by drain */
        OK(gaio_launch_host_func(s, order_host_fn, &h3));
        OK(gaio_memcpy_async(s, b, 0, a, 0, BYTES));
        OK(gaio_enqueue_native(s, order_native_fn, &n4));
        OK(gaio_stream_synchronize(s));
        CHECK(atomic_load(&log.n) == 5);
        for (int i = 0; i < 5; i++) CHECK(log.code[i] == i);
        order_native *ns[3] = {&n0, &n2, &n4};
        for (int i = 0; i < 3; i++) CHECK(atomic_load(&ns[i]->calls) == 1 && atomic_load(&ns[i]->bad) == 0);
        CHECK(atomic_load(&h1.bad) == 0 && atomic_load(&h3.bad) == 0);
        /* The copy after the native op saw its work. */
        const unsigned char *hb = host_ptr(b);
        for (int i = 0; i < BYTES; i++) CHECK(hb[i] == (i < BYTES / 2 ? 0x22 : 0x11));
        test_sleep_ms(5); /* still exactly once */
        for (int i = 0; i < 3; i++) CHECK(atomic_load(&ns[i]->calls) == 1);
        OK(gaio_buffer_release(a));
        OK(gaio_buffer_release(b));
        OK(gaio_stream_release(s));
    }
}

/* ---- 2. several threads submit native and host functions to one stream ---- */

enum { MT_THREADS = 4, MT_PER = 300 };

typedef struct mt_state {
    atomic_int n;
    int entries[MT_THREADS * MT_PER];
    atomic_int bad;
} mt_state;

typedef struct mt_call {
    mt_state *st;
    int code;
} mt_call;

static void mt_record(mt_call *c, gaio_status st) {
    if (st != GAIO_OK) atomic_fetch_add(&c->st->bad, 1);
    int i = atomic_fetch_add(&c->st->n, 1);
    if (i < MT_THREADS * MT_PER) c->st->entries[i] = c->code;
}

static gaio_status mt_native_fn(void *native, gaio_status st, void *user) {
    (void)native;
    mt_record(user, st);
    return GAIO_OK;
}

static gaio_status mt_host_fn(gaio_status st, void *user) {
    mt_record(user, st);
    return GAIO_OK;
}

typedef struct mt_arg {
    gaio_stream *s;
    mt_call *calls;
} mt_arg;

static void *mt_thread(void *arg) {
    mt_arg *a = arg;
    for (int i = 0; i < MT_PER; i++) {
        if (i % 3 == 2) OK(gaio_launch_host_func(a->s, mt_host_fn, &a->calls[i]));
        else OK(gaio_enqueue_native(a->s, mt_native_fn, &a->calls[i]));
    }
    return NULL;
}

static void test_threads(gaio_context *ctx) {
    for (int deferred = 0; deferred < 2; deferred++) {
        gaio_stream *s;
        OK(gaio_stream_create(ctx, 0, deferred ? GAIO_STREAM_DEFERRED : 0, &s));
        mt_state *st = calloc(1, sizeof *st);
        mt_call *calls = calloc(MT_THREADS * MT_PER, sizeof *calls);
        CHECK(st && calls);
        mt_arg args[MT_THREADS];
        pthread_t t[MT_THREADS];
        for (int i = 0; i < MT_THREADS; i++) {
            for (int j = 0; j < MT_PER; j++) calls[i * MT_PER + j] = (mt_call){st, i * MT_PER + j};
            args[i] = (mt_arg){s, &calls[i * MT_PER]};
            CHECK(pthread_create(&t[i], NULL, mt_thread, &args[i]) == 0);
        }
        for (int i = 0; i < MT_THREADS; i++) CHECK(pthread_join(t[i], NULL) == 0);
        OK(gaio_stream_synchronize(s));
        CHECK(atomic_load(&st->n) == MT_THREADS * MT_PER);
        CHECK(atomic_load(&st->bad) == 0);
        int next[MT_THREADS] = {0};
        for (int k = 0; k < MT_THREADS * MT_PER; k++) {
            int thr = st->entries[k] / MT_PER, seq = st->entries[k] % MT_PER;
            if (seq != next[thr]) {
                fprintf(stderr, "thread %d's op %d ran where %d was due\n", thr, seq, next[thr]);
                exit(1);
            }
            next[thr]++;
        }
        OK(gaio_stream_release(s));
        free(calls);
        free(st);
    }
}

/* ---- 3. a native function's failure fails the stream; later ones clean up ---- */

typedef struct fail_native {
    atomic_int calls;
    atomic_int status; /* what it saw */
    gaio_status ret;
    void *mem; /* freed whatever the status: cleanup */
} fail_native;

static gaio_status fail_native_fn(void *native, gaio_status st, void *user) {
    (void)native;
    fail_native *f = user;
    atomic_fetch_add(&f->calls, 1);
    atomic_store(&f->status, (int)st);
    free(f->mem);
    f->mem = NULL;
    return f->ret;
}

static void fail_native_init(fail_native *f, gaio_status ret) {
    atomic_init(&f->calls, 0);
    atomic_init(&f->status, -1);
    f->ret = ret;
    f->mem = malloc(64);
    CHECK(f->mem);
}

static void test_failure(gaio_context *ctx) {
    for (int deferred = 0; deferred < 2; deferred++) {
        gaio_stream *s;
        OK(gaio_stream_create(ctx, 0, deferred ? GAIO_STREAM_DEFERRED : 0, &s));
        gaio_buffer *src, *dst;
        OK(gaio_buffer_alloc(ctx, GAIO_MEM_HOST, 256, &src));
        OK(gaio_buffer_alloc(ctx, GAIO_MEM_HOST, 256, &dst));
        memset(host_ptr(src), 0x5A, 256);
        memset(host_ptr(dst), 0x00, 256);
        enum { N = 5 };
        fail_native f[N];
        /* 0: ok; 1: fails with USER; 2: sees USER, returns DEVICE (ignored); 3, 4: see USER. */
        gaio_status rets[N] = {GAIO_OK, GAIO_ERR_USER, GAIO_ERR_DEVICE, GAIO_OK, GAIO_OK};
        for (int i = 0; i < N; i++) fail_native_init(&f[i], rets[i]);
        atomic_int host_saw = -1;
        gaio_future *before, *after;
        OK(gaio_enqueue_native(s, fail_native_fn, &f[0]));
        OK(gaio_future_fence(s, &before));
        OK(gaio_enqueue_native(s, fail_native_fn, &f[1]));
        /* On a plain CUDA stream called at once, before the failure has retired: the
         * stream is told of it all the same. */
        OK(gaio_enqueue_native(s, fail_native_fn, &f[2]));
        OK(gaio_memcpy_async(s, dst, 0, src, 0, 256)); /* skipped */
        OK(gaio_launch_host_func(s, status_fn, &host_saw));
        OK(gaio_enqueue_native(s, fail_native_fn, &f[3]));
        OK(gaio_future_fence(s, &after));
        OK(gaio_future_wait(before, BIG_TIMEOUT_NS));
        CHECK(gaio_future_wait(after, BIG_TIMEOUT_NS) == GAIO_ERR_USER);
        const char *m = gaio_future_message(after);
        CHECK(strstr(m, "gaio_enqueue_native") != NULL && strstr(m, "GAIO_ERR_USER") != NULL);
        CHECK(atomic_load(&host_saw) == GAIO_ERR_USER);
        gaio_status saw[N - 1] = {GAIO_OK, GAIO_OK, GAIO_ERR_USER, GAIO_ERR_USER};
        for (int i = 0; i < N - 1; i++) {
            CHECK(atomic_load(&f[i].calls) == 1);
            CHECK(atomic_load(&f[i].status) == (int)saw[i]);
            CHECK(f[i].mem == NULL);
        }
        const unsigned char *hd = host_ptr(dst);
        for (int i = 0; i < 256; i++) CHECK(hd[i] == 0);
        FAILS(GAIO_ERR_USER, gaio_stream_query(s), "gaio_stream_query");
        CHECK(gaio_stream_synchronize(s) == GAIO_ERR_USER);
        CHECK(strstr(gaio_last_error(), "gaio_enqueue_native") != NULL);
        /* Sticky: one submitted now is still called, once, with the failure. */
        OK(gaio_enqueue_native(s, fail_native_fn, &f[4]));
        CHECK(gaio_stream_synchronize(s) == GAIO_ERR_USER);
        CHECK(atomic_load(&f[4].calls) == 1 && atomic_load(&f[4].status) == GAIO_ERR_USER && f[4].mem == NULL);
        OK(gaio_future_release(before));
        OK(gaio_future_release(after));
        OK(gaio_buffer_release(src));
        OK(gaio_buffer_release(dst));
        OK(gaio_stream_release(s));
    }

    /* Another op's failure (a kernel's; on CUDA a host function's: see launch_fail)
     * reaches native functions too. */
    for (int deferred = 0; deferred < 2; deferred++) {
        gaio_stream *s;
        OK(gaio_stream_create(ctx, 0, deferred ? GAIO_STREAM_DEFERRED : 0, &s));
        fail_native f[2];
        fail_native_init(&f[0], GAIO_OK);
        fail_native_init(&f[1], GAIO_ERR_USER); /* ignored: the stream failed already */
        launch_fail(s);
        OK(gaio_enqueue_native(s, fail_native_fn, &f[0]));
        OK(gaio_enqueue_native(s, fail_native_fn, &f[1]));
        CHECK(gaio_stream_synchronize(s) == GAIO_ERR_DEVICE);
        for (int i = 0; i < 2; i++)
            CHECK(atomic_load(&f[i].calls) == 1 && atomic_load(&f[i].status) == GAIO_ERR_DEVICE && f[i].mem == NULL);
        OK(gaio_stream_release(s));
    }
}

/* ---- 4. held buffers live until the op has run ---- */

typedef struct counted {
    void *mem;
    atomic_int deleted;
} counted;

static void counted_deleter(void *ptr, void *user) {
    counted *c = user;
    CHECK(ptr == c->mem);
    free(ptr);
    atomic_fetch_add(&c->deleted, 1);
}

typedef struct held_call {
    counted *c;
    atomic_int calls, bad;
    gaio_status ret;
} held_call;

static gaio_status held_fn(void *native, gaio_status st, void *user) {
    (void)native;
    held_call *h = user;
    atomic_fetch_add(&h->calls, 1);
    if (st != GAIO_OK || atomic_load(&h->c->deleted) != 0) atomic_fetch_add(&h->bad, 1);
    if (on_cuda && !context_current()) atomic_fetch_add(&h->bad, 1); /* called by drain, after the gate */
    return h->ret;
}

static void test_held(gaio_context *ctx) {
    for (int round = 0; round < 4; round++) {
        int deferred = round & 1, failing = round >> 1;
        gaio_stream *s;
        OK(gaio_stream_create(ctx, 0, deferred ? GAIO_STREAM_DEFERRED : 0, &s));
        counted c = {.mem = malloc(256)};
        CHECK(c.mem);
        gaio_buffer *buf;
        OK(gaio_buffer_wrap(ctx, GAIO_MEM_HOST, c.mem, 256, counted_deleter, &c, &buf));
        held_call h = {.c = &c, .ret = failing ? GAIO_ERR_USER : GAIO_OK};
        gate g;
        gate_close(s, &g);
        gaio_buffer *held[3] = {NULL, buf, NULL}; /* NULL entries are skipped */
        OK(gaio__enqueue_native_held("test_native_held_op", s, held_fn, &h, held, 3));
        OK(gaio_buffer_release(buf)); /* the op's reference is the last */
        wait_entered(&g);
        test_sleep_ms(20);
        CHECK(atomic_load(&c.deleted) == 0 && atomic_load(&h.calls) == 0);
        gate_open(&g);
        gaio_status st = gaio_stream_synchronize(s);
        CHECK(atomic_load(&g.timed_out) == 0);
        if (failing) {
            CHECK(st == GAIO_ERR_USER);
            CHECK(strstr(gaio_last_error(), "test_native_held_op") != NULL);
        } else {
            OK(st);
        }
        CHECK(atomic_load(&h.calls) == 1 && atomic_load(&h.bad) == 0);
        CHECK(atomic_load(&c.deleted) == 1); /* retired before the fence behind it */
        OK(gaio_stream_release(s));
    }
}

/* ---- 5. extension slots ---- */

static gaio_status noop_native_fn(void *native, gaio_status st, void *user) {
    (void)native;
    (void)st;
    (void)user;
    return GAIO_OK;
}

typedef struct ext_record {
    atomic_int calls;
    atomic_uintptr_t value, stream;
    atomic_int saw_done; /* the stream's work had finished when the dtor ran */
    atomic_int *work_done;
    atomic_int bad;
} ext_record;

typedef struct ext_val {
    ext_record *rec;
    int id;
    void *native; /* CUDA: the stream's CUstream, which must still be valid in the dtor */
} ext_val;

static void ext_dtor(void *value, gaio_stream *stream) {
    ext_val *v = value;
    ext_record *r = v->rec;
    atomic_store(&r->value, (uintptr_t)value);
    atomic_store(&r->stream, (uintptr_t)stream);
    if (r->work_done) atomic_store(&r->saw_done, atomic_load(r->work_done));
    if (on_cuda && v->native && drv.stream_query(v->native) == 400 /* CUDA_ERROR_INVALID_HANDLE */)
        atomic_fetch_add(&r->bad, 1);
    atomic_fetch_add(&r->calls, 1);
    free(v);
}

static ext_val *ext_val_new(ext_record *rec, int id, gaio_stream *s) {
    ext_val *v = calloc(1, sizeof *v);
    CHECK(v);
    v->rec = rec;
    v->id = id;
    OK(gaio_stream_native(s, &v->native));
    return v;
}

static void wait_calls(atomic_int *calls, int want) {
    for (int i = 0; i < 30000 && atomic_load(calls) < want; i++) test_sleep_ms(1);
    CHECK(atomic_load(calls) == want);
}

static gaio_status set_done_fn(gaio_status st, void *user) {
    (void)st;
    atomic_store((atomic_int *)user, 1);
    return GAIO_OK;
}

static void test_ext(int device, gaio_context *ctx) {
    for (int deferred = 0; deferred < 2; deferred++) {
        gaio_stream *s;
        OK(gaio_stream_create(ctx, 0, deferred ? GAIO_STREAM_DEFERRED : 0, &s));
        atomic_int work_done = 0;
        ext_record rec = {.work_done = &work_done};
        for (int k = 0; k < GAIO_STREAM_EXT_COUNT; k++) CHECK(gaio__stream_ext_get(s, k) == NULL);
        CHECK(gaio__stream_ext_get(s, -1) == NULL && gaio__stream_ext_get(s, GAIO_STREAM_EXT_COUNT) == NULL);
        ext_val *v1 = ext_val_new(&rec, 1, s), *v2 = ext_val_new(&rec, 2, s);
        CHECK(gaio__stream_ext_set(s, GAIO_STREAM_EXT_DNN, v1, ext_dtor) == v1);
        CHECK(gaio__stream_ext_get(s, GAIO_STREAM_EXT_DNN) == v1);
        CHECK(gaio__stream_ext_set(s, GAIO_STREAM_EXT_DNN, v2, ext_dtor) == v1); /* lost: free our own */
        free(v2);
        CHECK(gaio__stream_ext_get(s, GAIO_STREAM_EXT_DNN) == v1);
        /* Another key, no dtor: nothing is freed for it. */
        static int plain;
        CHECK(gaio__stream_ext_set(s, 3, &plain, NULL) == &plain);
        CHECK(gaio__stream_ext_get(s, 3) == &plain && gaio__stream_ext_get(s, 1) == NULL);
        CHECK(gaio__stream_ext_set(s, GAIO_STREAM_EXT_COUNT, v1, ext_dtor) == NULL);
        CHECK(gaio__stream_ext_set(s, 1, NULL, ext_dtor) == NULL && gaio__stream_ext_get(s, 1) == NULL);
        /* Released with work queued: the dtor waits for it. */
        gate g;
        gate_close(s, &g);
        OK(gaio_launch_host_func(s, set_done_fn, &work_done));
        OK(gaio_stream_release(s));
        wait_entered(&g);
        test_sleep_ms(20);
        CHECK(atomic_load(&rec.calls) == 0);
        gate_open(&g);
        wait_calls(&rec.calls, 1);
        CHECK(atomic_load(&g.timed_out) == 0);
        CHECK(atomic_load(&rec.value) == (uintptr_t)v1 && atomic_load(&rec.stream) == (uintptr_t)s);
        CHECK(atomic_load(&rec.saw_done) == 1 && atomic_load(&rec.bad) == 0);
        test_sleep_ms(5);
        CHECK(atomic_load(&rec.calls) == 1);
    }

    /* A context's default stream: freed with its context, once its work is done. */
    gaio_context *c2;
    OK(gaio_context_create(device, NULL, &c2));
    gaio_stream *ds;
    OK(gaio_context_default_stream(c2, &ds));
    atomic_int done2 = 0;
    ext_record rec = {.work_done = &done2};
    ext_val *v = ext_val_new(&rec, 7, ds);
    CHECK(gaio__stream_ext_set(ds, GAIO_STREAM_EXT_DNN, v, ext_dtor) == v);
    OK(gaio_enqueue_native(ds, noop_native_fn, NULL));
    static const int ten_ms = 10;
    OK(gaio_launch_host_func(ds, sleep_fn, (void *)&ten_ms));
    OK(gaio_launch_host_func(ds, set_done_fn, &done2));
    OK(gaio_context_release(c2)); /* its work still runs */
    wait_calls(&rec.calls, 1);
    CHECK(atomic_load(&rec.value) == (uintptr_t)v && atomic_load(&rec.stream) == (uintptr_t)ds);
    CHECK(atomic_load(&rec.saw_done) == 1 && atomic_load(&rec.bad) == 0);
}

/* Many threads race to publish on one stream while others read. */

enum { RACE_SETTERS = 6, RACE_READERS = 2, RACE_ROUNDS = 40 };

typedef struct race {
    gaio_stream *s;
    pthread_barrier_t start;
    ext_record *rec;
    ext_val *won[RACE_SETTERS];
    atomic_int losers_freed;
    atomic_int bad;
} race;

typedef struct race_arg {
    race *r;
    int id;
} race_arg;

static void *race_setter(void *arg) {
    race_arg *a = arg;
    race *r = a->r;
    ext_val *mine = ext_val_new(r->rec, 100 + a->id, r->s);
    pthread_barrier_wait(&r->start);
    ext_val *got = gaio__stream_ext_set(r->s, GAIO_STREAM_EXT_DNN, mine, ext_dtor);
    CHECK(got != NULL);
    if (got != mine) {
        if (got->id < 100 || got->id >= 100 + RACE_SETTERS) atomic_fetch_add(&r->bad, 1); /* read the winner's */
        free(mine);
        atomic_fetch_add(&r->losers_freed, 1);
    }
    r->won[a->id] = got;
    return NULL;
}

static void *race_reader(void *arg) {
    race_arg *a = arg;
    race *r = a->r;
    pthread_barrier_wait(&r->start);
    ext_val *v;
    while (!(v = gaio__stream_ext_get(r->s, GAIO_STREAM_EXT_DNN))) sched_yield();
    if (v->id < 100 || v->id >= 100 + RACE_SETTERS || v->rec != r->rec) atomic_fetch_add(&r->bad, 1);
    return NULL;
}

static void test_ext_race(gaio_context *ctx) {
    for (int round = 0; round < RACE_ROUNDS; round++) {
        race r = {0};
        ext_record rec = {0};
        r.rec = &rec;
        OK(gaio_stream_create(ctx, 0, round & 1 ? GAIO_STREAM_DEFERRED : 0, &r.s));
        CHECK(pthread_barrier_init(&r.start, NULL, RACE_SETTERS + RACE_READERS) == 0);
        pthread_t t[RACE_SETTERS + RACE_READERS];
        race_arg a[RACE_SETTERS + RACE_READERS];
        for (int i = 0; i < RACE_SETTERS + RACE_READERS; i++) {
            a[i] = (race_arg){&r, i};
            CHECK(pthread_create(&t[i], NULL, i < RACE_SETTERS ? race_setter : race_reader, &a[i]) == 0);
        }
        for (int i = 0; i < RACE_SETTERS + RACE_READERS; i++) CHECK(pthread_join(t[i], NULL) == 0);
        pthread_barrier_destroy(&r.start);
        CHECK(atomic_load(&r.bad) == 0);
        CHECK(atomic_load(&r.losers_freed) == RACE_SETTERS - 1);
        ext_val *winner = r.won[0];
        for (int i = 1; i < RACE_SETTERS; i++) CHECK(r.won[i] == winner);
        CHECK(gaio__stream_ext_get(r.s, GAIO_STREAM_EXT_DNN) == winner);
        gaio_stream *s = r.s;
        OK(gaio_stream_release(r.s));
        wait_calls(&rec.calls, 1);
        CHECK(atomic_load(&rec.value) == (uintptr_t)winner && atomic_load(&rec.stream) == (uintptr_t)s);
    }
}

/* ---- 6. bad input ---- */

static void test_bad_input(gaio_context *ctx) {
    gaio_stream *s;
    OK(gaio_stream_create(ctx, 0, 0, &s));
    FAILS(GAIO_ERR_INVALID_ARG, gaio_enqueue_native(NULL, noop_native_fn, NULL), "gaio_enqueue_native");
    CHECK(strstr(gaio_last_error(), "stream") != NULL);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_enqueue_native(s, NULL, NULL), "gaio_enqueue_native");
    CHECK(strstr(gaio_last_error(), "fn") != NULL);
    FAILS(GAIO_ERR_INVALID_ARG, gaio__enqueue_native_held("gaio_some_op", NULL, noop_native_fn, NULL, NULL, 0),
          "gaio_some_op");
    FAILS(GAIO_ERR_INVALID_ARG, gaio__enqueue_native_held("gaio_some_op", s, NULL, NULL, NULL, 0), "gaio_some_op");
    FAILS(GAIO_ERR_INVALID_ARG, gaio__enqueue_native_held("gaio_some_op", s, noop_native_fn, NULL, NULL, 2),
          "gaio_some_op");
    OK(gaio_stream_synchronize(s)); /* nothing was enqueued, nothing failed */
    OK(gaio_stream_release(s));
}

/* ---- 7. a native function that fails inside a CUDA graph's capture ---- */

static atomic_int capture_calls;

/* Frees its user data, as every layer's native function does: a second free (the op
 * counted as not enqueued while its function had run) is a double free. */
static gaio_status refusing_native_fn(void *native_stream, gaio_status status, void *user) {
    (void)native_stream, (void)status;
    atomic_fetch_add(&capture_calls, 1);
    free(user);
    return gaio__fail(GAIO_ERR_NOT_SUPPORTED, "refusing_native_fn", "refused under capture");
}

static void test_capture_failure(gaio_context *ctx) {
    gaio_stream *s;
    OK(gaio_stream_create(ctx, 0, 0, &s));
    gaio_status st = gaio__devgraph_capture_begin("test_capture", s);
    if (st != GAIO_OK) { /* the host backend has no graphs; nor does the fake driver */
        CHECK(st == GAIO_ERR_NOT_SUPPORTED || (on_cuda && st == GAIO_ERR_DRIVER));
        OK(gaio_stream_release(s));
        return;
    }
    atomic_store(&capture_calls, 0);
    /* It ran, so it was enqueued: OK here, the failure at the capture's end. */
    OK(gaio__enqueue_native_held("gaio_some_op", s, refusing_native_fn, malloc(64), NULL, 0));
    CHECK(atomic_load(&capture_calls) == 1);
    gaio__devgraph *g = NULL;
    FAILS(GAIO_ERR_NOT_SUPPORTED, gaio__devgraph_capture_end("test_capture", s, &g), "test_capture");
    CHECK(g == NULL && strstr(gaio_last_error(), "refused under capture") != NULL);
    CHECK(atomic_load(&capture_calls) == 1);
    /* The stream itself never failed, and a capture after it starts clean. */
    OK(gaio_stream_synchronize(s));
    OK(gaio__devgraph_capture_begin("test_capture", s));
    OK(gaio__enqueue_native_held("gaio_some_op", s, noop_native_fn, NULL, NULL, 0));
    OK(gaio__devgraph_capture_end("test_capture", s, &g));
    CHECK(g != NULL);
    gaio__devgraph_free(g);
    OK(gaio_stream_release(s));
}

/* ---- 8. the native interface for library layers (core/native.h) ---- */

typedef struct scratch_native {
    gaio_context *ctx;
    gaio_mem_kind kind;
    gaio__native_mem mem;
    gaio_status st;
    atomic_int calls, bad;
} scratch_native;

/* What a layer's native function does the first time it needs scratch: a block of the
 * context's pool, taken under the stream's submission lock with the context current. */
static gaio_status scratch_native_fn(void *native, gaio_status st, void *user) {
    (void)native;
    scratch_native *n = user;
    atomic_fetch_add(&n->calls, 1);
    if (st != GAIO_OK) atomic_fetch_add(&n->bad, 1);
    if (on_cuda && !context_current()) atomic_fetch_add(&n->bad, 1);
    n->st = gaio__native_mem_alloc("gaio_some_op", "a test's scratch", n->ctx, n->kind, 3000, &n->mem);
    return n->st;
}

static void test_iface(gaio_context *ctx) {
    gaio_device_kind kind = on_cuda ? GAIO_DEVICE_CUDA : GAIO_DEVICE_HOST;
    gaio_stream *s;
    OK(gaio_stream_create(ctx, 0, 0, &s));
    /* Native handles: the stream's is the one gaio_stream_native gives (and native
     * functions receive); the context's is the one they find current. */
    void *ns = NULL;
    OK(gaio_stream_native(s, &ns));
    CHECK(gaio__native_stream(s) == ns);
    void *nctx = gaio__native_context(ctx);
    CHECK(on_cuda ? nctx != NULL : nctx == NULL);
    /* Entering: the context's current inside, the caller's back after. */
    void *before = NULL, *inside = NULL, *after = NULL;
    if (on_cuda) drv.ctx_get_current(&before);
    gaio__native_scope sc;
    OK(gaio__native_enter("gaio_some_op", ctx, &sc));
    if (on_cuda) {
        drv.ctx_get_current(&inside);
        CHECK(inside == nctx);
    }
    gaio__native_exit(&sc);
    if (on_cuda) {
        drv.ctx_get_current(&after);
        CHECK(after == before);
    }
    /* The driver by name: the backend's own entry points, the ones a user's library
     * finds at the same ABI version; nothing on the host or for an unknown name. */
    gaio__native_proc_fn f = gaio__native_proc(kind, "cuMemsetD8Async");
    CHECK(on_cuda ? f != NULL : f == NULL);
    if (on_cuda) {
        void *mine, *users;
        memcpy(&mine, &f, sizeof mine);
        memcpy(&users, &drv.memset_d8_async, sizeof users);
        CHECK(mine == users);
    }
    CHECK(gaio__native_proc(kind, "cuNoSuchFunction") == NULL);
    CHECK(gaio__native_proc(GAIO_DEVICE_HOST, "cuMemsetD8Async") == NULL);
    /* A failed call names the public function and the call. */
    if (on_cuda) {
        FAILS(GAIO_ERR_NO_MEMORY, gaio__native_fail(kind, "gaio_some_op", "cuMemAlloc (scratch)", 2), "gaio_some_op");
        CHECK(strstr(gaio_last_error(), "cuMemAlloc (scratch) failed: CUDA_ERROR_OUT_OF_MEMORY") != NULL);
    } else {
        FAILS(GAIO_ERR_DRIVER, gaio__native_fail(kind, "gaio_some_op", "someCall", 7), "gaio_some_op");
        CHECK(strstr(gaio_last_error(), "someCall failed") != NULL);
    }
    /* The exclusive section: entered and left, again (no capture is under way). */
    for (int i = 0; i < 2; i++) {
        gaio__native_exclusive_begin(kind);
        gaio__native_exclusive_end(kind);
    }
    /* Pool memory: counted as the context's while held, back in its pool after. */
    gaio_mem_kind mk = on_cuda ? GAIO_MEM_DEVICE : GAIO_MEM_HOST;
    gaio_pool_stats st0 = stats_of(ctx, mk);
    gaio__native_mem m;
    OK(gaio__native_mem_alloc("gaio_some_op", "a test's scratch", ctx, mk, 1000, &m));
    CHECK(m.ptr != NULL && m.size >= 1000 && m.kind == mk);
    if (!on_cuda) memset(m.ptr, 0x5a, 1000);
    gaio_pool_stats st1 = stats_of(ctx, mk);
    CHECK(st1.bytes_in_use == st0.bytes_in_use + m.size && st1.allocations == st0.allocations + 1);
    gaio__native_mem_free(ctx, &m);
    CHECK(m.ptr == NULL && m.size == 0);
    gaio__native_mem_free(ctx, &m); /* empty: nothing */
    CHECK(stats_of(ctx, mk).bytes_in_use == st0.bytes_in_use);
    if (on_cuda) { /* more than any device has: the failure names fn, the use and the call */
        gaio_status big = gaio__native_mem_alloc("gaio_some_op", "a test's scratch", ctx, mk, (size_t)1 << 50, &m);
        CHECK((big == GAIO_ERR_NO_MEMORY || big == GAIO_ERR_INVALID_ARG) && m.ptr == NULL);
        CHECK(strncmp(gaio_last_error(), "gaio_some_op", 12) == 0 &&
              strstr(gaio_last_error(), "a test's scratch") != NULL &&
              strstr(gaio_last_error(), "cuMemAllocFromPoolAsync") != NULL);
        CHECK(stats_of(ctx, mk).bytes_in_use == st0.bytes_in_use);
    }
    /* From inside a native function, as a layer's workspace grows. */
    scratch_native n = {.ctx = ctx, .kind = mk};
    OK(gaio__enqueue_native_held("gaio_some_op", s, scratch_native_fn, &n, NULL, 0));
    OK(gaio_stream_synchronize(s));
    CHECK(atomic_load(&n.calls) == 1 && atomic_load(&n.bad) == 0 && n.st == GAIO_OK && n.mem.ptr != NULL);
    CHECK(stats_of(ctx, mk).bytes_in_use == st0.bytes_in_use + n.mem.size);
    gaio__native_mem_free(ctx, &n.mem);
    CHECK(stats_of(ctx, mk).bytes_in_use == st0.bytes_in_use);
    OK(gaio_stream_release(s));
}

static void run(int device) {
    gaio_device_props props;
    OK(gaio_device_get_props(device, &props));
    on_cuda = props.kind == GAIO_DEVICE_CUDA;
    if (on_cuda) drv_load();
    fail_setup(device, "native_fail"); /* host only: see launch_fail */
    gaio_context *ctx;
    OK(gaio_context_create(device, NULL, &ctx));
    test_order(ctx);
    test_threads(ctx);
    test_failure(ctx);
    test_held(ctx);
    test_ext(device, ctx);
    test_ext_race(ctx);
    test_bad_input(ctx);
    test_capture_failure(ctx);
    test_iface(ctx);
    OK(gaio_context_release(ctx));
    fail_teardown();
}
