/* Image descriptors: checks, views, and the launch every image op ends with. */
#include <stdio.h>

#include "core/builtin_kernels.h"
#include "core/fail.h"
#include "core/op.h"
#include "image/image_internal.h"

/* Larger than any real image side; keeps every product below in 64 bits. */
#define MAX_SIDE (1 << 20)
#define MAX_CHANNELS 64

const char *gaio__img_layout_name(gaio_layout l) {
    switch (l) {
    case GAIO_LAYOUT_HWC: return "HWC";
    case GAIO_LAYOUT_CHW: return "CHW";
    case GAIO_LAYOUT_NV12: return "NV12";
    case GAIO_LAYOUT_I420: return "I420";
    }
    return "?";
}

gaio_image gaio_image_make(gaio_buffer *buf, size_t offset, gaio_dtype dtype, gaio_layout layout, int32_t batch,
                           int32_t width, int32_t height, int32_t channels) {
    gaio_image im = {0};
    im.buffer = buf;
    im.offset = offset;
    im.dtype = dtype;
    im.layout = layout;
    im.batch = batch;
    im.width = width;
    im.height = height;
    im.channels = channels;
    return im;
}

static bool is_yuv(gaio_layout l) { return l == GAIO_LAYOUT_NV12 || l == GAIO_LAYOUT_I420; }

/* Bytes of one row's elements (luma for YUV). */
static uint64_t row_bytes(const gaio_image *im, size_t esize) {
    return (uint64_t)im->width * esize * (im->layout == GAIO_LAYOUT_HWC ? (uint64_t)im->channels : 1u);
}

/* Bytes of one image from its first byte to one past its last, strides resolved. */
static uint64_t image_span(const gaio_image *im, size_t esize) {
    uint64_t rows = (uint64_t)im->row_pitch * (uint64_t)(im->height - 1) + row_bytes(im, esize);
    switch (im->layout) {
    case GAIO_LAYOUT_CHW: return (uint64_t)im->plane_pitch * (uint64_t)(im->channels - 1) + rows;
    case GAIO_LAYOUT_NV12: /* chroma: height/2 rows of width bytes */
        return im->plane_pitch + (uint64_t)im->row_pitch * (uint64_t)(im->height / 2 - 1) + (uint64_t)im->width;
    case GAIO_LAYOUT_I420: /* U, then V a quarter of the Y-to-U distance later, each height/2 rows of width/2 */
        return im->plane_pitch + im->plane_pitch / 4 +
               (uint64_t)(im->row_pitch / 2) * (uint64_t)(im->height / 2 - 1) + (uint64_t)(im->width / 2);
    default: return rows;
    }
}

gaio_status gaio__img_check(const char *fn, const char *arg, const gaio_image *img, gaio_image *resolved,
                            size_t *bytes) {
    if (!img) return BAD("%s is NULL", arg);
    gaio_image im = *img;
    size_t e = im.dtype == GAIO_DTYPE_S32 || im.dtype == GAIO_DTYPE_S64 || im.dtype == GAIO_DTYPE_BF16
                   ? 0
                   : gaio_dtype_size(im.dtype);
    if (!e) return BAD("%s.dtype %d is not a gaio_dtype (U8, U16, S16, F16, F32)", arg, (int)im.dtype);
    if (im.layout < GAIO_LAYOUT_HWC || im.layout > GAIO_LAYOUT_I420)
        return BAD("%s.layout %d is not a gaio_layout (HWC, CHW, NV12, I420)", arg, (int)im.layout);
    if (im.batch < 1) return BAD("%s.batch is %d; a batch holds at least one image", arg, (int)im.batch);
    if (im.width < 1 || im.height < 1 || im.width > MAX_SIDE || im.height > MAX_SIDE)
        return BAD("%s is %dx%d: sides must be in [1, %d]", arg, (int)im.width, (int)im.height, MAX_SIDE);
    if (im.channels < 1 || im.channels > MAX_CHANNELS)
        return BAD("%s.channels is %d: must be in [1, %d]", arg, (int)im.channels, MAX_CHANNELS);
    if (is_yuv(im.layout)) {
        if (im.dtype != GAIO_DTYPE_U8 || im.channels != 3)
            return BAD("%s is %s %s with %d channels: YUV frames are u8 with 3 channels", arg,
                       gaio__img_layout_name(im.layout), gaio_dtype_name(im.dtype), (int)im.channels);
        if ((im.width | im.height) & 1)
            return BAD("%s is a %dx%d %s frame: YUV 4:2:0 needs an even width and height", arg, (int)im.width,
                       (int)im.height, gaio__img_layout_name(im.layout));
    }
    if (im.offset % e) return BAD("%s.offset %zu is not a multiple of the %s element size %zu", arg, im.offset,
                                  gaio_dtype_name(im.dtype), e);
    uint64_t rb = row_bytes(&im, e);
    if (!im.row_pitch) im.row_pitch = (size_t)rb;
    if (im.row_pitch < rb) return BAD("%s.row_pitch %zu is less than a row's %llu bytes", arg, im.row_pitch,
                                      (unsigned long long)rb);
    if (im.row_pitch % e) return BAD("%s.row_pitch %zu is not a multiple of the element size %zu", arg, im.row_pitch, e);
    if (im.layout == GAIO_LAYOUT_I420 && (im.row_pitch & 1))
        return BAD("%s.row_pitch %zu is odd: I420 chroma rows are row_pitch / 2 apart", arg, im.row_pitch);
    if (im.layout == GAIO_LAYOUT_HWC) {
        im.plane_pitch = 0;
    } else {
        uint64_t plane = (uint64_t)im.row_pitch * (uint64_t)(im.height - 1) + rb;
        if (is_yuv(im.layout)) plane = (uint64_t)im.row_pitch * (uint64_t)im.height;
        if (!im.plane_pitch) im.plane_pitch = (size_t)((uint64_t)im.row_pitch * (uint64_t)im.height);
        if (im.plane_pitch < plane)
            return BAD("%s.plane_pitch %zu is less than the %llu bytes of a %s plane", arg, im.plane_pitch,
                       (unsigned long long)plane, is_yuv(im.layout) ? "Y" : "channel");
        if (im.plane_pitch % e)
            return BAD("%s.plane_pitch %zu is not a multiple of the element size %zu", arg, im.plane_pitch, e);
        if (im.layout == GAIO_LAYOUT_I420 && (im.plane_pitch % 4))
            return BAD("%s.plane_pitch %zu is not a multiple of 4: I420's V plane starts plane_pitch / 4 after U", arg,
                       im.plane_pitch);
    }
    uint64_t span = image_span(&im, e);
    if (!im.image_stride) im.image_stride = (size_t)span;
    if (im.batch > 1 && im.image_stride < span)
        return BAD("%s.image_stride %zu is less than an image's %llu bytes", arg, im.image_stride,
                   (unsigned long long)span);
    if (im.image_stride % e)
        return BAD("%s.image_stride %zu is not a multiple of the element size %zu", arg, im.image_stride, e);
    unsigned __int128 total = (unsigned __int128)im.image_stride * (unsigned)(im.batch - 1) + span;
    if (!im.buffer) return BAD("%s.buffer is NULL", arg);
    size_t size = 0;
    gaio_buffer_size(im.buffer, &size);
    if (total > (unsigned __int128)size || im.offset > size - (size_t)total)
        return BAD("%s (%d x %dx%dx%d %s %s) spans %llu bytes from offset %zu but its buffer holds %zu", arg,
                   (int)im.batch, (int)im.width, (int)im.height, (int)im.channels, gaio_dtype_name(im.dtype),
                   gaio__img_layout_name(im.layout), (unsigned long long)total, im.offset, size);
    if (resolved) *resolved = im;
    if (bytes) *bytes = (size_t)total;
    return GAIO_OK;
}

gaio_status gaio__img_resolve(const char *fn, const char *arg, const gaio_image *img, gaio_stream *stream,
                              gaio_kimg *out) {
    if (!stream) return BAD("stream is NULL");
    gaio_image im;
    gaio_status st = gaio__img_check(fn, arg, img, &im, NULL);
    if (st != GAIO_OK) return st;
    if (!gaio__reachable(im.buffer, stream, 0)) {
        char what[64];
        snprintf(what, sizeof what, "%s's buffer", arg);
        return gaio__check_reach(fn, what, im.buffer, stream, 0);
    }
    out->ptr = (uint64_t)(uintptr_t)(im.buffer->ptr + im.offset);
    out->row_pitch = im.row_pitch;
    out->plane_pitch = im.plane_pitch;
    out->image_stride = im.image_stride;
    out->width = im.width;
    out->height = im.height;
    out->channels = im.layout == GAIO_LAYOUT_HWC ? im.channels : 1;
    out->planes = im.layout == GAIO_LAYOUT_CHW ? im.channels : 1;
    out->batch = im.batch;
    out->dtype = (int32_t)im.dtype;
    return GAIO_OK;
}

gaio_status gaio__img_resolve_planar(const char *fn, const char *op, gaio_stream *stream, const gaio_image *src,
                                     const gaio_image *dst, gaio_kimg *ks, gaio_kimg *kd,
                                     gaio_status layout_status) {
    gaio_status st = gaio__img_resolve(fn, "src", src, stream, ks);
    if (st != GAIO_OK) return st;
    st = gaio__img_resolve(fn, "dst", dst, stream, kd);
    if (st != GAIO_OK) return st;
    if (is_yuv(src->layout))
        return gaio__fail(layout_status, fn, "src is a %s frame: %s takes HWC or CHW images",
                          gaio__img_layout_name(src->layout), op);
    if (is_yuv(dst->layout))
        return gaio__fail(layout_status, fn, "dst is a %s frame: %s takes HWC or CHW images",
                          gaio__img_layout_name(dst->layout), op);
    return GAIO_OK;
}

gaio_status gaio_image_check(const gaio_image *img, gaio_image *resolved, size_t *bytes) {
    return gaio__img_check(__func__, "img", img, resolved, bytes);
}

gaio_status gaio_image_roi(const gaio_image *img, gaio_rect roi, gaio_image *view) {
    const char *fn = __func__;
    if (!view) return BAD("view is NULL");
    gaio_image im;
    gaio_status st = gaio__img_check(fn, "img", img, &im, NULL);
    if (st != GAIO_OK) return st;
    if (is_yuv(im.layout))
        return BAD("img is a %s frame: ROIs are for HWC and CHW images", gaio__img_layout_name(im.layout));
    if (roi.width < 1 || roi.height < 1 || roi.x < 0 || roi.y < 0 || roi.x > im.width - roi.width ||
        roi.y > im.height - roi.height)
        return BAD("roi (x %d, y %d, %dx%d) is empty or outside the %dx%d image", (int)roi.x, (int)roi.y,
                   (int)roi.width, (int)roi.height, (int)im.width, (int)im.height);
    size_t px = gaio_dtype_size(im.dtype) * (im.layout == GAIO_LAYOUT_HWC ? (size_t)im.channels : 1u);
    im.offset += (size_t)roi.y * im.row_pitch + (size_t)roi.x * px;
    im.width = roi.width;
    im.height = roi.height;
    *view = im;
    return GAIO_OK;
}

gaio_status gaio_image_at(const gaio_image *img, int32_t index, gaio_image *view) {
    const char *fn = __func__;
    if (!view) return BAD("view is NULL");
    gaio_image im;
    gaio_status st = gaio__img_check(fn, "img", img, &im, NULL);
    if (st != GAIO_OK) return st;
    if (index < 0 || index >= im.batch) return BAD("index %d is outside the batch of %d", (int)index, (int)im.batch);
    im.offset += (size_t)index * im.image_stride;
    im.batch = 1;
    *view = im;
    return GAIO_OK;
}

uint64_t gaio__img_span(const gaio_kimg *k) {
    size_t e = gaio_dtype_size((gaio_dtype)k->dtype);
    uint64_t rows = k->row_pitch * (uint64_t)(k->height - 1) + (uint64_t)k->width * (uint64_t)k->channels * e;
    uint64_t img = k->plane_pitch * (uint64_t)(k->planes - 1) + rows;
    return k->image_stride * (uint64_t)(k->batch - 1) + img;
}

bool gaio__img_overlap(const gaio_kimg *a, const gaio_kimg *b) {
    uint64_t a0 = a->ptr, a1 = a0 + gaio__img_span(a), b0 = b->ptr, b1 = b0 + gaio__img_span(b);
    return a0 < b1 && b0 < a1;
}

gaio_status gaio__img_mismatch(const char *fn, const char *what, const gaio_image *src, const gaio_image *dst) {
    return BAD("%s: src is %d x %dx%dx%d %s %s but dst is %d x %dx%dx%d %s %s", what, (int)src->batch, (int)src->width,
               (int)src->height, (int)src->channels, gaio_dtype_name(src->dtype), gaio__img_layout_name(src->layout),
               (int)dst->batch, (int)dst->width, (int)dst->height, (int)dst->channels, gaio_dtype_name(dst->dtype),
               gaio__img_layout_name(dst->layout));
}

bool gaio__img_on_cuda(const gaio_stream *stream) { return stream->ctx->be->kind == GAIO_DEVICE_CUDA; }

int64_t gaio__img_warp_grid(int64_t width, int64_t height, int64_t n, int64_t tile, int64_t warps, int64_t band_max,
                            int64_t blocks, int64_t band_max_rows, gaio_dim3 *grid) {
    const int64_t tiles = (width + tile - 1) / tile;
    int64_t band = band_max;
    while (band > warps && tiles * n * ((height + band - 1) / band) < blocks) band /= 2;
    while ((height + band - 1) / band > 65535) band *= 2;
    if (band > band_max_rows) return 0;
    *grid = (gaio_dim3){(uint32_t)tiles, (uint32_t)((height + band - 1) / band), (uint32_t)n};
    return band;
}

gaio_dim3 gaio__img_grid2d(int64_t width, int64_t height, int64_t planes, uint32_t bx, uint32_t by, uint32_t per_x,
                           uint32_t per_y) {
    int64_t tx = (int64_t)bx * per_x, ty = (int64_t)by * per_y;
    gaio_dim3 g = {(uint32_t)((width + tx - 1) / tx), (uint32_t)((height + ty - 1) / ty),
                   (uint32_t)(planes < 65535 ? planes : 65535)};
    if (g.y > 65535) g.y = 65535; /* kernels stride over y as well */
    return g;
}

gaio_status gaio__img_launch(const char *fn, gaio_stream *stream, const char *name, gaio_dim3 grid, gaio_dim3 block,
                             size_t shared_mem, const gaio_arg *args, size_t nargs, gaio_buffer *const *held,
                             size_t nheld) {
    gaio_kernel *k;
    gaio_status st = gaio__kernel_builtin(name, &k);
    if (st != GAIO_OK) return gaio__fail(st, fn, "%s", gaio_last_error());
    st = gaio__launch_held(fn, stream, k, grid, block, shared_mem, args, nargs, held, nheld);
    gaio__kernel_unref(k);
    return st;
}
