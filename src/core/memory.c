#include "core/op.h"

gaio_status gaio__check_reach(const char *fn, const char *what, const gaio_buffer *b, const gaio_stream *s,
                               unsigned how) {
    if (gaio__reachable(b, s, how)) return GAIO_OK;
    if (b->kind == GAIO_MEM_HOST)
        return gaio__fail(GAIO_ERR_INVALID_ARG, fn,
                          "%s is HOST (pageable) memory, which device code cannot reach; use DEVICE, PINNED or MANAGED "
                          "memory (refused on every backend, so that programs stay portable)",
                          what);
    return gaio__fail(GAIO_ERR_INVALID_ARG, fn,
                      "%s is DEVICE memory of device %d but the stream runs on device %d%s", what, b->ctx->device,
                      s->ctx->device, (how & GAIO_REACH_PEER) ? " of another kind" : "");
}

/* rows of width bytes, `pitch` apart, starting at offset: the last byte touched is
 * offset + (height-1)*pitch + width. */
static gaio_status check_rect(const char *fn, const char *what, const gaio_buffer *b, size_t offset, size_t pitch,
                              size_t width, size_t height) {
    size_t span;
    if (height > 1 && width > pitch)
        return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "%s rows of %zu bytes do not fit its pitch of %zu bytes", what,
                          width, pitch);
    if (!gaio__mul_ok(pitch, height - 1, &span) || __builtin_add_overflow(span, width, &span) ||
        !gaio__range_ok(offset, span, b->size))
        return gaio__fail(GAIO_ERR_INVALID_ARG, fn,
                          "%s range (offset %zu, %zu rows of %zu bytes, pitch %zu) exceeds its size of %zu bytes",
                          what, offset, height, width, pitch, b->size);
    return GAIO_OK;
}

static gaio_status copy_2d(const char *fn, gaio_stream *stream, gaio_buffer *dst, size_t dst_offset, size_t dst_pitch,
                           gaio_buffer *src, size_t src_offset, size_t src_pitch, size_t width, size_t height) {
    if (!stream) return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "stream is NULL");
    if (!dst) return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "dst is NULL");
    if (!src) return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "src is NULL");
    if (width == 0 || height == 0)
        return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "the copy is empty (%zu bytes x %zu rows)", width, height);
    gaio_status st;
    if ((st = gaio__check_reach(fn, "dst", dst, stream, GAIO_REACH_PEER | GAIO_REACH_PAGEABLE)) != GAIO_OK) return st;
    if ((st = gaio__check_reach(fn, "src", src, stream, GAIO_REACH_PEER | GAIO_REACH_PAGEABLE)) != GAIO_OK) return st;
    if ((st = check_rect(fn, "dst", dst, dst_offset, dst_pitch, width, height)) != GAIO_OK) return st;
    if ((st = check_rect(fn, "src", src, src_offset, src_pitch, width, height)) != GAIO_OK) return st;
    gaio_op *op = gaio__op_new(GAIO_OP_COPY, stream, 2, 0, NULL);
    if (!op) return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory for the op");
    gaio__op_hold_buffer(op, 0, dst);
    gaio__op_hold_buffer(op, 1, src);
    op->u.copy.dst = dst->ptr + dst_offset;
    op->u.copy.src = src->ptr + src_offset;
    op->u.copy.dpitch = dst_pitch;
    op->u.copy.spitch = src_pitch;
    op->u.copy.width = width;
    op->u.copy.height = height;
    return gaio__submit_from(fn, op);
}

gaio_status gaio_memcpy_async(gaio_stream *stream, gaio_buffer *dst, size_t dst_offset, gaio_buffer *src,
                              size_t src_offset, size_t bytes) {
    return copy_2d(__func__, stream, dst, dst_offset, bytes, src, src_offset, bytes, bytes, 1);
}

gaio_status gaio_memcpy_2d_async(gaio_stream *stream, gaio_buffer *dst, size_t dst_offset, size_t dst_pitch,
                                 gaio_buffer *src, size_t src_offset, size_t src_pitch, size_t width_bytes,
                                 size_t height) {
    return copy_2d(__func__, stream, dst, dst_offset, dst_pitch, src, src_offset, src_pitch, width_bytes, height);
}

static gaio_status fill_2d(const char *fn, gaio_stream *stream, gaio_buffer *dst, size_t offset, size_t pitch,
                           int value, size_t width, size_t height) {
    if (!stream) return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "stream is NULL");
    if (!dst) return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "dst is NULL");
    if (value < 0 || value > 255)
        return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "value %d is not a byte (0..255)", value);
    if (width == 0 || height == 0)
        return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "the fill is empty (%zu bytes x %zu rows)", width, height);
    gaio_status st;
    if ((st = gaio__check_reach(fn, "dst", dst, stream, GAIO_REACH_PAGEABLE)) != GAIO_OK) return st;
    if ((st = check_rect(fn, "dst", dst, offset, pitch, width, height)) != GAIO_OK) return st;
    gaio_op *op = gaio__op_new(GAIO_OP_FILL, stream, 1, 0, NULL);
    if (!op) return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory for the op");
    gaio__op_hold_buffer(op, 0, dst);
    op->u.fill.dst = dst->ptr + offset;
    op->u.fill.pitch = pitch;
    op->u.fill.width = width;
    op->u.fill.height = height;
    op->u.fill.value = value;
    return gaio__submit_from(fn, op);
}

gaio_status gaio_memset_async(gaio_stream *stream, gaio_buffer *dst, size_t offset, int value, size_t bytes) {
    return fill_2d(__func__, stream, dst, offset, bytes, value, bytes, 1);
}

gaio_status gaio_memset_2d_async(gaio_stream *stream, gaio_buffer *dst, size_t offset, size_t pitch, int value,
                                 size_t width_bytes, size_t height) {
    return fill_2d(__func__, stream, dst, offset, pitch, value, width_bytes, height);
}
