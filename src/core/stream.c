#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/native.h"
#include "core/op.h"
#include "core/stream_ext.h"
#include "core/stream_internal.h"

#define KNOWN_STREAM_FLAGS (GAIO_STREAM_DEFERRED)

gaio_status gaio__stream_new(gaio_context *ctx, int priority, unsigned flags, void *native, bool is_default,
                             gaio_stream **out) {
    gaio_stream *s = gaio__calloc_lines(sizeof *s); /* its counters sit on cache lines of their own */
    if (!s) return GAIO_FAIL(GAIO_ERR_NO_MEMORY, "out of host memory for the stream");
    gaio__ref_init(&s->ref);
    s->ctx = ctx;
    s->is_default = is_default;
    s->is_foreign = native != NULL;
    s->priority = priority;
    s->flags = flags;
    pthread_mutex_init(&s->fail_lock, NULL);
    atomic_init(&s->fail_status, GAIO_OK);
    atomic_init(&s->submitted, 0);
    atomic_init(&s->retired, 0);
    for (int k = 0; k < GAIO_STREAM_EXT_COUNT; k++) atomic_init(&s->ext[k], NULL);
    gaio_status st = ctx->be->stream_init(s, native);
    if (st != GAIO_OK) {
        pthread_mutex_destroy(&s->fail_lock);
        free(s);
        return st;
    }
    if (!is_default) gaio__context_ref(ctx);
    pthread_mutex_lock(&ctx->lock);
    s->next = ctx->streams;
    if (ctx->streams) ctx->streams->prev = s;
    ctx->streams = s;
    pthread_mutex_unlock(&ctx->lock);
    *out = s;
    return GAIO_OK;
}

void gaio__stream_destroy(gaio_stream *s) {
    gaio_context *ctx = s->ctx;
    pthread_mutex_lock(&ctx->lock);
    if (s->prev) s->prev->next = s->next;
    else ctx->streams = s->next;
    if (s->next) s->next->prev = s->prev;
    pthread_mutex_unlock(&ctx->lock);
    /* Unlisted first, so that no one finds the stream through its context while its
     * state goes; before stream_fini, which a dtor may still need (a CUstream). */
    for (int k = 0; k < GAIO_STREAM_EXT_COUNT; k++) {
        void *v = atomic_load_explicit(&s->ext[k], memory_order_acquire);
        if (v && s->ext_dtor[k]) s->ext_dtor[k](v, s);
    }
    ctx->be->stream_fini(s);
    pthread_mutex_destroy(&s->fail_lock);
    bool is_default = s->is_default;
    free(s);
    if (!is_default) gaio__context_unref(ctx);
}

void *gaio__stream_ext_get(gaio_stream *s, int key) {
    if (key < 0 || key >= GAIO_STREAM_EXT_COUNT) return NULL;
    return atomic_load_explicit(&s->ext[key], memory_order_acquire);
}

void *gaio__stream_ext_set(gaio_stream *s, int key, void *value, gaio_stream_ext_dtor dtor) {
    if (key < 0 || key >= GAIO_STREAM_EXT_COUNT || !value) return NULL;
    void *expected = NULL;
    /* Release: whoever reads the value sees it built. Acquire on failure: the caller
     * uses the winner's instead. */
    if (!atomic_compare_exchange_strong_explicit(&s->ext[key], &expected, value, memory_order_acq_rel,
                                                 memory_order_acquire))
        return expected;
    s->ext_dtor[key] = dtor;
    return value;
}

void gaio__stream_ref(gaio_stream *s) {
    if (s->is_default) gaio__context_ref(s->ctx);
    else gaio__ref_inc(&s->ref);
}

void gaio__stream_unref(gaio_stream *s) {
    if (s->is_default) gaio__context_unref(s->ctx);
    else if (gaio__ref_dec(&s->ref)) gaio__stream_destroy(s);
}

void gaio__stream_unref_n(gaio_stream *s, long n) {
    if (n <= 0) return;
    if (s->is_default) gaio__context_unref_n(s->ctx, n);
    else if (gaio__ref_sub(&s->ref, n)) gaio__stream_destroy(s);
}

void gaio__stream_fail(gaio_stream *s, gaio_status status, const char *fmt, ...) {
    if (gaio__stream_status(s) != GAIO_OK) return;
    pthread_mutex_lock(&s->fail_lock);
    if (atomic_load_explicit(&s->fail_status, memory_order_relaxed) == GAIO_OK) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(s->fail_msg, sizeof s->fail_msg, fmt, ap);
        va_end(ap);
        atomic_store_explicit(&s->fail_status, status, memory_order_release);
    }
    pthread_mutex_unlock(&s->fail_lock);
}

void gaio__stream_fail_msg(gaio_stream *s, char *out) {
    pthread_mutex_lock(&s->fail_lock);
    memcpy(out, s->fail_msg, GAIO_MSG_MAX);
    pthread_mutex_unlock(&s->fail_lock);
}

static gaio_status check_priority(gaio_context *ctx, int priority) {
    gaio_device_props props;
    gaio_status st = gaio_device_get_props(ctx->device, &props);
    if (st != GAIO_OK) return st;
    if (priority < 0 || priority > props.max_priority)
        return gaio__fail(GAIO_ERR_INVALID_ARG, "gaio_stream_create",
                          "priority %d is out of range; device %d takes 0 (normal) .. %d (most urgent)", priority,
                          ctx->device, props.max_priority);
    return GAIO_OK;
}

gaio_status gaio_stream_create(gaio_context *ctx, int priority, unsigned flags, gaio_stream **out) {
    GAIO_REQUIRE_PTR(out);
    *out = NULL;
    GAIO_REQUIRE_PTR(ctx);
    GAIO_REQUIRE((flags & ~KNOWN_STREAM_FLAGS) == 0, "flags 0x%x has unknown bits 0x%x", flags,
                 flags & ~KNOWN_STREAM_FLAGS);
    gaio_status st = check_priority(ctx, priority);
    if (st != GAIO_OK) return st;
    return gaio__stream_new(ctx, priority, flags, NULL, false, out);
}

gaio_status gaio_stream_wrap(gaio_context *ctx, void *native_stream, unsigned flags, gaio_stream **out) {
    GAIO_REQUIRE_PTR(out);
    *out = NULL;
    GAIO_REQUIRE_PTR(ctx);
    GAIO_REQUIRE((flags & ~KNOWN_STREAM_FLAGS) == 0, "flags 0x%x has unknown bits 0x%x", flags,
                 flags & ~KNOWN_STREAM_FLAGS);
    if (ctx->be->kind != GAIO_DEVICE_CUDA)
        return GAIO_FAIL(GAIO_ERR_NOT_SUPPORTED,
                         "device %d is the host, which has no native streams to wrap; wrap on a CUDA device",
                         ctx->device);
    GAIO_REQUIRE(native_stream != NULL, "native_stream is NULL (the legacy default stream cannot be wrapped)");
    return gaio__stream_new(ctx, 0, flags, native_stream, false, out);
}

gaio_status gaio_stream_retain(gaio_stream *stream) {
    GAIO_REQUIRE_PTR(stream);
    gaio__stream_ref(stream);
    return GAIO_OK;
}

gaio_status gaio_stream_release(gaio_stream *stream) {
    if (stream) gaio__stream_unref(stream);
    return GAIO_OK;
}

gaio_status gaio_stream_native(gaio_stream *stream, void **native) {
    GAIO_REQUIRE_PTR(stream);
    GAIO_REQUIRE_PTR(native);
    *native = stream->native;
    return GAIO_OK;
}

gaio_status gaio_stream_priority(gaio_stream *stream, int *priority) {
    GAIO_REQUIRE_PTR(stream);
    GAIO_REQUIRE_PTR(priority);
    *priority = stream->priority;
    return GAIO_OK;
}

gaio_status gaio_stream_flags(gaio_stream *stream, unsigned *flags) {
    GAIO_REQUIRE_PTR(stream);
    GAIO_REQUIRE_PTR(flags);
    *flags = stream->flags;
    return GAIO_OK;
}

gaio_status gaio_stream_context(gaio_stream *stream, gaio_context **ctx) {
    GAIO_REQUIRE_PTR(stream);
    GAIO_REQUIRE_PTR(ctx);
    *ctx = stream->ctx;
    return GAIO_OK;
}

static gaio_status stream_failure(gaio_stream *s, const char *fn) {
    char msg[GAIO_MSG_MAX];
    gaio__stream_fail_msg(s, msg);
    return gaio__fail(gaio__stream_status(s), fn, "the stream failed earlier: %s", msg);
}

gaio_status gaio_stream_query(gaio_stream *stream) {
    GAIO_REQUIRE_PTR(stream);
    unsigned long long retired = atomic_load_explicit(&stream->retired, memory_order_acquire);
    unsigned long long submitted = atomic_load_explicit(&stream->submitted, memory_order_acquire);
    if (gaio__stream_status(stream) != GAIO_OK) return stream_failure(stream, __func__);
    return retired >= submitted ? GAIO_OK : GAIO_ERR_NOT_READY;
}

gaio_status gaio_stream_synchronize(gaio_stream *stream) {
    GAIO_REQUIRE_PTR(stream);
    gaio_future *f;
    gaio_status st = gaio_future_fence(stream, &f);
    if (st != GAIO_OK) return st;
    st = gaio_future_wait(f, GAIO_INFINITE);
    if (st != GAIO_OK) st = GAIO_FAIL(st, "%s", gaio_future_message(f));
    gaio__future_unref(f);
    return st;
}

gaio_status gaio_launch_host_func(gaio_stream *stream, gaio_host_fn fn, void *user) {
    GAIO_REQUIRE_PTR(stream);
    GAIO_REQUIRE_PTR(fn);
    gaio_op *op = gaio__op_new(GAIO_OP_HOST_FN, stream, 0, 0, NULL);
    if (!op) return GAIO_FAIL(GAIO_ERR_NO_MEMORY, "out of host memory for the op");
    op->u.host.fn = fn;
    op->u.host.user = user;
    return gaio__submit(op);
}

gaio_status gaio__enqueue_native_held(const char *fn_name, gaio_stream *stream, gaio_native_fn fn, void *user,
                                      gaio_buffer *const *held, size_t nheld) {
    if (!stream) return gaio__fail(GAIO_ERR_INVALID_ARG, fn_name, "stream is NULL");
    if (!fn) return gaio__fail(GAIO_ERR_INVALID_ARG, fn_name, "fn is NULL");
    if (nheld && !held) return gaio__fail(GAIO_ERR_INVALID_ARG, fn_name, "held is NULL but nheld is %zu", nheld);
    size_t n = 0;
    for (size_t i = 0; i < nheld; i++) n += held[i] != NULL;
    gaio_op *op = gaio__op_new(GAIO_OP_NATIVE, stream, n, 0, NULL);
    if (!op) return gaio__fail(GAIO_ERR_NO_MEMORY, fn_name, "out of host memory for the op");
    for (size_t i = 0, k = 0; i < nheld; i++)
        if (held[i]) gaio__op_hold_buffer(op, k++, held[i]);
    op->u.native.fn = fn;
    op->u.native.user = user;
    op->u.native.fn_name = fn_name;
    return gaio__submit_from(fn_name, op);
}

gaio_status gaio_enqueue_native(gaio_stream *stream, gaio_native_fn fn, void *user) {
    return gaio__enqueue_native_held(__func__, stream, fn, user, NULL, 0);
}
