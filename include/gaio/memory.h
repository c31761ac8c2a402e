/* gaio — asynchronous copies and fills in stream order.
 *
 * Each op holds references to its buffers until it has run. Ranges are checked
 * against the buffers' sizes before anything is enqueued. Copies go in any
 * direction between any kinds (host<->device, device<->device, peer to peer). */
#ifndef GAIO_MEMORY_H
#define GAIO_MEMORY_H

#include "gaio/status.h"
#include "gaio/types.h"

#ifdef __cplusplus
extern "C" {
#endif

gaio_status gaio_memcpy_async(gaio_stream *stream, gaio_buffer *dst, size_t dst_offset, gaio_buffer *src,
                              size_t src_offset, size_t bytes);

/* Copies `height` rows of `width_bytes`; rows are dst_pitch / src_pitch apart. */
gaio_status gaio_memcpy_2d_async(gaio_stream *stream, gaio_buffer *dst, size_t dst_offset, size_t dst_pitch,
                                 gaio_buffer *src, size_t src_offset, size_t src_pitch, size_t width_bytes,
                                 size_t height);

/* Sets bytes to `value` (0..255). */
gaio_status gaio_memset_async(gaio_stream *stream, gaio_buffer *dst, size_t offset, int value, size_t bytes);
gaio_status gaio_memset_2d_async(gaio_stream *stream, gaio_buffer *dst, size_t offset, size_t pitch, int value,
                                 size_t width_bytes, size_t height);

#ifdef __cplusplus
}
#endif
#endif
