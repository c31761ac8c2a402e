/* What the element-wise ops (convert, normalize) share: the in-place rule and the
 * merging of gap-free rows, planes and images into long rows. */
#ifndef GAIO_IMAGE_ELEMENTWISE_H
#define GAIO_IMAGE_ELEMENTWISE_H

#include <stdbool.h>

#include "gaio/types.h"
#include "image/kimg.h"

/* In place means every element is read and written at the same address by the same
 * thread: same start, same element size, same strides. */
bool gaio__img_same_place(const gaio_kimg *s, const gaio_kimg *d);

/* Element-wise ops see rows of width * channels elements. Where rows (and, with
 * merge_planes, CHW planes) and images of both sides follow each other without a
 * gap they become one long row, so that small or packed images still give every
 * CUDA thread a full vector and the host kernel long loops. Rows keep whole pixels:
 * the channel of element x stays x % channels unless keep_pixels is false, when
 * channels becomes 1. Strides that no longer separate anything become 0. */
void gaio__img_merge_rows(gaio_kimg *s, gaio_kimg *d, bool merge_planes, bool keep_pixels);

/* The CUDA launch shape of the element-wise kernels over rows of len elements
 * (src/kernels/image/convert.cu): a thread takes 4 vectors of 16 bytes of the wider
 * side (es, ed: element sizes), 2 between u8 images. */
void gaio__img_elementwise_shape(int64_t len, int64_t rows, size_t es, size_t ed, gaio_dim3 *grid, gaio_dim3 *block);

#endif
