/* Images as 4-D views and back. */
#include "dlpack/dlpack_internal.h"
#include "image/image_internal.h"

gaio_status gaio_dlpack_view_from_image(const gaio_image *img, gaio_dlpack_view *view) {
    GAIO_REQUIRE_PTR(view);
    *view = (gaio_dlpack_view){0};
    gaio_image im;
    gaio_status st = gaio__img_check(__func__, "img", img, &im, NULL);
    if (st != GAIO_OK) return st;
    if (im.layout != GAIO_LAYOUT_HWC && im.layout != GAIO_LAYOUT_CHW)
        return GAIO_FAIL(GAIO_ERR_NOT_SUPPORTED, "img is %s: a YUV 4:2:0 frame has no single strided shape",
                         gaio__img_layout_name(im.layout));
    /* gaio_image's pitches are whole elements already: they divide exactly. */
    size_t e = gaio_dtype_size(im.dtype);
    int64_t n = (int64_t)(im.image_stride / e), row = (int64_t)(im.row_pitch / e);
    int64_t plane = (int64_t)(im.plane_pitch / e);
    gaio_dlpack_view v = {.buffer = im.buffer, .offset = im.offset, .dtype = im.dtype, .ndim = 4};
    if (im.layout == GAIO_LAYOUT_HWC) {
        int64_t shape[4] = {im.batch, im.height, im.width, im.channels}, strides[4] = {n, row, im.channels, 1};
        for (int i = 0; i < 4; i++) v.shape[i] = shape[i], v.strides[i] = strides[i];
    } else {
        int64_t shape[4] = {im.batch, im.channels, im.height, im.width}, strides[4] = {n, plane, row, 1};
        for (int i = 0; i < 4; i++) v.shape[i] = shape[i], v.strides[i] = strides[i];
    }
    *view = v;
    return GAIO_OK;
}

/* The byte pitch of a dimension of size n and stride s: 0 (gaio's "packed") where
 * the dimension has one entry, since its stride is then meaningless. */
static bool pitch_of(int64_t n, int64_t s, size_t e, size_t *pitch) {
    if (n == 1) {
        *pitch = 0;
        return true;
    }
    return s > 0 && gaio__mul_ok((size_t)s, e, pitch);
}

#define UNSUPPORTED(...) GAIO_FAIL(GAIO_ERR_NOT_SUPPORTED, __VA_ARGS__)

gaio_status gaio_dlpack_view_to_image(const gaio_dlpack_view *view, gaio_layout layout, gaio_image *img) {
    GAIO_REQUIRE_PTR(img);
    *img = (gaio_image){0};
    gaio_status st = gaio__dlpack_view_check(__func__, view, NULL);
    if (st != GAIO_OK) return st;
    GAIO_REQUIRE(layout == GAIO_LAYOUT_HWC || layout == GAIO_LAYOUT_CHW, "layout %d is not HWC or CHW", (int)layout);
    int32_t nd = view->ndim, lo = layout == GAIO_LAYOUT_HWC ? 2 : 3;
    if (nd < lo || nd > 4)
        return UNSUPPORTED("view has %d dimensions: a %s image takes %d to 4", (int)nd,
                           layout == GAIO_LAYOUT_HWC ? "HWC" : "CHW", (int)lo);
    /* To [N, a, b, c]: a batch of one in front, and one channel behind [H, W]. */
    int64_t shape[4] = {1, 1, 1, 1}, strides[4] = {0, 0, 0, 1};
    int32_t at = nd == 2 ? 1 : 4 - nd;
    for (int32_t i = 0; i < nd; i++) {
        shape[at + i] = view->shape[i];
        strides[at + i] = view->strides[i];
    }
    for (int i = 0; i < 4; i++)
        if (shape[i] > INT32_MAX)
            return UNSUPPORTED("view's dimension of %lld entries is too large for an image", (long long)shape[i]);
    size_t e = gaio_dtype_size(view->dtype);
    gaio_image im = {.buffer = view->buffer, .offset = view->offset, .dtype = view->dtype, .layout = layout};
    im.batch = (int32_t)shape[0];
    bool ok = pitch_of(shape[0], strides[0], e, &im.image_stride);
    if (layout == GAIO_LAYOUT_HWC) {
        im.height = (int32_t)shape[1], im.width = (int32_t)shape[2], im.channels = (int32_t)shape[3];
        if ((im.channels > 1 && strides[3] != 1) || (im.width > 1 && strides[2] != shape[3]))
            return UNSUPPORTED("view's strides [.., %lld, %lld] do not hold a row's pixels and channels adjacent, as "
                               "an HWC image must",
                               (long long)strides[2], (long long)strides[3]);
        ok = ok && pitch_of(shape[1], strides[1], e, &im.row_pitch);
    } else {
        im.channels = (int32_t)shape[1], im.height = (int32_t)shape[2], im.width = (int32_t)shape[3];
        if (im.width > 1 && strides[3] != 1)
            return UNSUPPORTED("view's last stride %lld does not hold a row's elements adjacent, as a CHW image must",
                               (long long)strides[3]);
        ok = ok && pitch_of(shape[1], strides[1], e, &im.plane_pitch) &&
             pitch_of(shape[2], strides[2], e, &im.row_pitch);
    }
    if (!ok) return UNSUPPORTED("view's strides (0 for a dimension of more than one entry) do not describe an image");
    /* The image's own rules (pitches that hold what they separate) are gaio_image_check's. */
    st = gaio__img_check(__func__, "img", &im, NULL, NULL);
    if (st != GAIO_OK) return st;
    *img = im;
    return GAIO_OK;
}
