/* What the image ops share: descriptor checks that name the argument at fault,
 * and the launch of a built-in image kernel. Ops are written like a user of the
 * core would write them (DESIGN.md: layers above the core). */
#ifndef GAIO_IMAGE_INTERNAL_H
#define GAIO_IMAGE_INTERNAL_H

#include <stdbool.h>

#include "core/error.h"
#include "gaio/image.h"
#include "gaio/kernel.h"
#include "image/kimg.h"

/* Checks img as argument `arg` of fn, for ops on `stream` (the buffer must be
 * memory the stream's kernels may touch: its device's, or pinned or managed host
 * memory) and resolves it for kernels. */
gaio_status gaio__img_resolve(const char *fn, const char *arg, const gaio_image *img, gaio_stream *stream,
                              gaio_kimg *out);

/* The prologue of ops on an HWC or CHW src and dst: resolves both, and fails with
 * `layout_status` (INVALID_ARG or NOT_SUPPORTED) naming the frame if either is a
 * YUV frame ("src is a NV12 frame: <op> takes HWC or CHW images"). */
gaio_status gaio__img_resolve_planar(const char *fn, const char *op, gaio_stream *stream, const gaio_image *src,
                                     const gaio_image *dst, gaio_kimg *ks, gaio_kimg *kd,
                                     gaio_status layout_status);

/* The same for a descriptor on its own (no stream): fills zero strides. */
gaio_status gaio__img_check(const char *fn, const char *arg, const gaio_image *img, gaio_image *resolved,
                            size_t *bytes);

/* Do the bytes spanned by two resolved images overlap? */
bool gaio__img_overlap(const gaio_kimg *a, const gaio_kimg *b);

/* Bytes from the first to one past the last byte of a resolved image batch. */
uint64_t gaio__img_span(const gaio_kimg *k);

/* "HWC", "CHW", "NV12", "I420" ("?" if none). */
const char *gaio__img_layout_name(gaio_layout layout);

/* Each failure names fn; these format the common ones. */
gaio_status gaio__img_mismatch(const char *fn, const char *what, const gaio_image *src, const gaio_image *dst);

/* True when the stream runs on a CUDA device (ops pick grids with it). */
bool gaio__img_on_cuda(const gaio_stream *stream);

/* Grid of the warp-tiled kernels (resize_direct.cu, preprocess.cu's LINEAR): x tiles
 * of `tile` output columns, z the n images, y bands of rows. A band is the tallest of
 * band_max, band_max / 2, ... down to `warps` rows (one a warp) that still makes
 * `blocks` blocks, taller only where y would pass 65535; 0 when that passes
 * band_max_rows (the kernels take at most that many rows a block). Tall bands spread
 * a thread's setup over more rows; many blocks fill the GPU. */
int64_t gaio__img_warp_grid(int64_t width, int64_t height, int64_t n, int64_t tile, int64_t warps, int64_t band_max,
                            int64_t blocks, int64_t band_max_rows, gaio_dim3 *grid);

/* Launches the built-in kernel `name` on stream, holding the `nheld` buffers until
 * it has run (images reach kernels as addresses inside gaio_kimg arguments). */
gaio_status gaio__img_launch(const char *fn, gaio_stream *stream, const char *name, gaio_dim3 grid, gaio_dim3 block,
                             size_t shared_mem, const gaio_arg *args, size_t nargs, gaio_buffer *const *held,
                             size_t nheld);

/* A CUDA grid of 2D tiles over width x height for every plane of a batch:
 * blockDim (bx, by), grid (ceil(w / (bx * per_x)), ceil(h / (by * per_y)), planes)
 * with z capped at 65535 (kernels stride over z). */
gaio_dim3 gaio__img_grid2d(int64_t width, int64_t height, int64_t planes, uint32_t bx, uint32_t by, uint32_t per_x,
                           uint32_t per_y);

#endif
