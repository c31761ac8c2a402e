#include "image/elementwise.h"

#include "gaio/image.h"
#include "image/image_internal.h"

/* Longest merged row: the CUDA kernels index a row's elements in 32 bits. */
#define MAX_ROW_ELEMS ((int64_t)1 << 30)

bool gaio__img_same_place(const gaio_kimg *s, const gaio_kimg *d) {
    return s->ptr == d->ptr && gaio_dtype_size((gaio_dtype)s->dtype) == gaio_dtype_size((gaio_dtype)d->dtype) &&
           (s->height == 1 || s->row_pitch == d->row_pitch) && (s->planes == 1 || s->plane_pitch == d->plane_pitch) &&
           (s->batch == 1 || s->image_stride == d->image_stride);
}

void gaio__img_merge_rows(gaio_kimg *s, gaio_kimg *d, bool merge_planes, bool keep_pixels) {
    int64_t es = (int64_t)gaio_dtype_size((gaio_dtype)s->dtype), ed = (int64_t)gaio_dtype_size((gaio_dtype)d->dtype);
    int64_t len = (int64_t)s->width * s->channels;
    if (s->height > 1 && s->row_pitch == (uint64_t)(len * es) && d->row_pitch == (uint64_t)(len * ed) &&
        len * s->height <= MAX_ROW_ELEMS) {
        len *= s->height;
        s->height = d->height = 1;
    }
    if (merge_planes && s->height == 1 && s->planes > 1 && s->plane_pitch == (uint64_t)(len * es) &&
        d->plane_pitch == (uint64_t)(len * ed) && len * s->planes <= MAX_ROW_ELEMS) {
        len *= s->planes;
        s->planes = d->planes = 1;
    }
    if (s->height == 1 && s->planes == 1 && s->batch > 1 && s->image_stride == (uint64_t)(len * es) &&
        d->image_stride == (uint64_t)(len * ed) && len * s->batch <= MAX_ROW_ELEMS) {
        len *= s->batch;
        s->batch = d->batch = 1;
    }
    if (keep_pixels) {
        s->width = d->width = (int32_t)(len / s->channels);
    } else {
        s->width = d->width = (int32_t)len;
        s->channels = d->channels = 1;
    }
    gaio_kimg *k[2] = {s, d};
    for (int i = 0; i < 2; i++) {
        if (k[i]->height == 1) k[i]->row_pitch = 0;
        if (k[i]->planes == 1) k[i]->plane_pitch = 0;
        if (k[i]->batch == 1) k[i]->image_stride = 0;
    }
}

void gaio__img_elementwise_shape(int64_t len, int64_t rows, size_t es, size_t ed, gaio_dim3 *grid, gaio_dim3 *block) {
    int64_t ew = (int64_t)(es > ed ? es : ed), per = (ew == 1 ? 32 : 64) / ew, threads = (len + per - 1) / per;
    uint32_t bx = 32;
    while (bx < 256 && (int64_t)bx < threads) bx *= 2;
    *block = (gaio_dim3){bx, 256 / bx, 1};
    *grid = gaio__img_grid2d(len, rows, 1, block->x, block->y, (uint32_t)per, 1);
}
