#include <stdio.h>
#include <stdlib.h>

#include "core/op.h"

static const char *kind_name(gaio_mem_kind k) {
    switch (k) {
    case GAIO_MEM_DEVICE: return "DEVICE";
    case GAIO_MEM_HOST: return "HOST";
    case GAIO_MEM_PINNED: return "PINNED";
    case GAIO_MEM_MANAGED: return "MANAGED";
    }
    return "?";
}

#define REQUIRE_KIND(k)                                                                                        \
    GAIO_REQUIRE((unsigned)(k) < GAIO_MEM_KIND_COUNT, "kind %d is not a gaio_mem_kind (DEVICE, HOST, PINNED, " \
                                                      "MANAGED)",                                              \
                 (int)(k))

/* Larger than any real allocation; catches sizes computed from negative numbers. */
#define MAX_BUFFER_BYTES ((size_t)1 << 48)

void gaio__buffer_ref(gaio_buffer *b) { gaio__ref_inc(&b->ref); }

void gaio__buffer_unref(gaio_buffer *b) {
    if (!gaio__ref_dec(&b->ref)) return;
    gaio_context *ctx = b->ctx;
    if (b->capacity)
        gaio__pool_free(&ctx->pools[b->kind], b->ptr, b->capacity);
    else if (b->deleter)
        b->deleter(b->ptr, b->deleter_user);
    free(b);
    gaio__context_unref(ctx);
}

/* Failures name fn, the public function that asked. */
static gaio_status buffer_new(const char *fn, gaio_context *ctx, gaio_mem_kind kind, size_t size, size_t pitch,
                              gaio_buffer **out) {
    gaio_buffer *b = calloc(1, sizeof *b);
    if (!b) return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory for the buffer");
    void *ptr;
    gaio_status st = gaio__pool_alloc(&ctx->pools[kind], size, &ptr, &b->capacity);
    if (st != GAIO_OK) {
        free(b);
        char why[GAIO_MSG_MAX]; /* the backend's message, which names the backend's function */
        snprintf(why, sizeof why, "%s", gaio_last_error());
        return gaio__fail(st, fn, "cannot allocate %zu bytes of %s memory (%s)", size, kind_name(kind), why);
    }
    gaio__ref_init(&b->ref);
    b->ctx = ctx;
    gaio__context_ref(ctx);
    b->kind = kind;
    b->ptr = ptr;
    b->size = size;
    b->pitch = pitch;
    *out = b;
    return GAIO_OK;
}

gaio_status gaio_buffer_alloc(gaio_context *ctx, gaio_mem_kind kind, size_t size, gaio_buffer **out) {
    GAIO_REQUIRE_PTR(out);
    *out = NULL;
    GAIO_REQUIRE_PTR(ctx);
    REQUIRE_KIND(kind);
    GAIO_REQUIRE(size > 0, "size is 0; a buffer holds at least one byte");
    GAIO_REQUIRE(size <= MAX_BUFFER_BYTES, "size %zu is larger than any device can hold", size);
    return buffer_new(__func__, ctx, kind, size, size, out);
}

gaio_status gaio_buffer_alloc_async(gaio_stream *stream, gaio_mem_kind kind, size_t size, gaio_buffer **out) {
    GAIO_REQUIRE_PTR(out);
    *out = NULL;
    GAIO_REQUIRE_PTR(stream);
    REQUIRE_KIND(kind);
    GAIO_REQUIRE(size > 0, "size is 0; a buffer holds at least one byte");
    GAIO_REQUIRE(size <= MAX_BUFFER_BYTES, "size %zu is larger than any device can hold", size);
    /* The host pool hands out memory no op uses any more, so it is ready for the
     * stream at once; the CUDA backend orders it on the stream instead. */
    return buffer_new(__func__, stream->ctx, kind, size, size, out);
}

gaio_status gaio_buffer_alloc_2d(gaio_context *ctx, gaio_mem_kind kind, size_t width_bytes, size_t height,
                                 gaio_buffer **out) {
    GAIO_REQUIRE_PTR(out);
    *out = NULL;
    GAIO_REQUIRE_PTR(ctx);
    REQUIRE_KIND(kind);
    GAIO_REQUIRE(width_bytes > 0 && height > 0, "width_bytes %zu x height %zu is empty", width_bytes, height);
    gaio_device_props props;
    gaio_status st = gaio_device_get_props(ctx->device, &props);
    if (st != GAIO_OK) return st;
    size_t align = props.pitch_alignment ? props.pitch_alignment : 1;
    GAIO_REQUIRE(width_bytes <= MAX_BUFFER_BYTES, "width_bytes %zu is larger than any device can hold", width_bytes);
    size_t pitch = (width_bytes + align - 1) / align * align, size;
    GAIO_REQUIRE(gaio__mul_ok(pitch, height, &size) && size <= MAX_BUFFER_BYTES,
                 "pitch %zu x height %zu overflows or is larger than any device can hold", pitch, height);
    return buffer_new(__func__, ctx, kind, size, pitch, out);
}

gaio_status gaio_buffer_wrap(gaio_context *ctx, gaio_mem_kind kind, void *ptr, size_t size, gaio_deleter deleter,
                             void *user, gaio_buffer **out) {
    GAIO_REQUIRE_PTR(out);
    *out = NULL;
    GAIO_REQUIRE_PTR(ctx);
    REQUIRE_KIND(kind);
    GAIO_REQUIRE_PTR(ptr);
    GAIO_REQUIRE(size > 0, "size is 0; a buffer holds at least one byte");
    GAIO_REQUIRE(size <= MAX_BUFFER_BYTES, "size %zu is larger than any device can hold", size);
    GAIO_REQUIRE((uintptr_t)ptr <= UINTPTR_MAX - size, "ptr %p + size %zu overflows the address space", ptr, size);
    if (ctx->be->wrap_check) {
        gaio_status st = ctx->be->wrap_check(ctx, kind, ptr, size);
        if (st != GAIO_OK) return st;
    }
    gaio_buffer *b = calloc(1, sizeof *b);
    if (!b) return GAIO_FAIL(GAIO_ERR_NO_MEMORY, "out of host memory for the buffer");
    gaio__ref_init(&b->ref);
    b->ctx = ctx;
    gaio__context_ref(ctx);
    b->kind = kind;
    b->ptr = ptr;
    b->size = size;
    b->pitch = size;
    b->deleter = deleter;
    b->deleter_user = user;
    *out = b;
    return GAIO_OK;
}

gaio_status gaio_buffer_retain(gaio_buffer *buf) {
    GAIO_REQUIRE_PTR(buf);
    gaio__buffer_ref(buf);
    return GAIO_OK;
}

gaio_status gaio_buffer_release(gaio_buffer *buf) {
    if (buf) gaio__buffer_unref(buf);
    return GAIO_OK;
}

gaio_status gaio_buffer_free_async(gaio_buffer *buf, gaio_stream *stream) {
    GAIO_REQUIRE_PTR(buf);
    GAIO_REQUIRE_PTR(stream);
    gaio_op *op = gaio__op_new(GAIO_OP_RELEASE, stream, 1, 0, NULL);
    if (!op) return GAIO_FAIL(GAIO_ERR_NO_MEMORY, "out of host memory for the op");
    gaio__op_hold_buffer(op, 0, buf);
    gaio_status st = gaio__submit(op);
    if (st == GAIO_OK) gaio__buffer_unref(buf); /* the caller's; on failure they keep it */
    return st;
}

gaio_status gaio_buffer_size(const gaio_buffer *buf, size_t *size) {
    GAIO_REQUIRE_PTR(buf);
    GAIO_REQUIRE_PTR(size);
    *size = buf->size;
    return GAIO_OK;
}

gaio_status gaio_buffer_kind(const gaio_buffer *buf, gaio_mem_kind *kind) {
    GAIO_REQUIRE_PTR(buf);
    GAIO_REQUIRE_PTR(kind);
    *kind = buf->kind;
    return GAIO_OK;
}

gaio_status gaio_buffer_device(const gaio_buffer *buf, int *device) {
    GAIO_REQUIRE_PTR(buf);
    GAIO_REQUIRE_PTR(device);
    *device = buf->ctx->device;
    return GAIO_OK;
}

gaio_status gaio_buffer_pitch(const gaio_buffer *buf, size_t *pitch) {
    GAIO_REQUIRE_PTR(buf);
    GAIO_REQUIRE_PTR(pitch);
    *pitch = buf->pitch;
    return GAIO_OK;
}

gaio_status gaio_buffer_device_ptr(const gaio_buffer *buf, void **ptr) {
    GAIO_REQUIRE_PTR(buf);
    GAIO_REQUIRE_PTR(ptr);
    *ptr = buf->ptr;
    return GAIO_OK;
}

gaio_status gaio_buffer_host_ptr(const gaio_buffer *buf, void **ptr) {
    GAIO_REQUIRE_PTR(ptr);
    *ptr = NULL;
    GAIO_REQUIRE_PTR(buf);
    GAIO_REQUIRE(buf->kind != GAIO_MEM_DEVICE,
                 "the buffer is %s memory, which the host cannot address (on every backend, so that programs "
                 "stay portable); copy it into a HOST or PINNED buffer",
                 kind_name(buf->kind));
    *ptr = buf->ptr;
    return GAIO_OK;
}
