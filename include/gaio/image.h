/* gaio — image descriptors and image ops (the NPP / CV-CUDA operator set).
 *
 * A gaio_image is a small value struct that describes memory a buffer owns: one
 * image or a batch of equal-size images (NHWC, NCHW), or an NV12 / I420 frame.
 * Ops take descriptors, check them once (shapes, dtypes, layouts, devices, that
 * the buffer holds every byte the descriptor spans) and enqueue one kernel on the
 * stream: a vectorised host kernel split over the worker pool on the CPU backend,
 * a CUDA kernel on a GPU. The same call runs on either. Like every gaio op they
 * never block and keep their buffers alive until they have run; on bad input
 * they return a status, say which argument was wrong, and enqueue nothing.
 *
 * A variable-size batch ("varshape", as CV-CUDA calls it) is an array of
 * single images of different sizes, in any buffers; the varshape ops process it
 * in one launch and write a uniform batch.
 *
 * Semantics follow OpenCV 4 (cv::resize, cv::cvtColor, cv::copyMakeBorder, cv::flip,
 * cv::rotate, cv::warpAffine); where gaio differs, the op's comment says so. */
#ifndef GAIO_IMAGE_H
#define GAIO_IMAGE_H

#include "gaio/status.h"
#include "gaio/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* NHWC and NCHW are HWC and CHW with batch > 1. */
typedef enum gaio_layout {
    GAIO_LAYOUT_HWC = 1,  /* interleaved: channels of a pixel are adjacent */
    GAIO_LAYOUT_CHW = 2,  /* planar: one plane per channel */
    GAIO_LAYOUT_NV12 = 3, /* 8-bit Y plane, then one plane of interleaved U,V at half resolution */
    GAIO_LAYOUT_I420 = 4  /* 8-bit Y plane, then U and V planes at half resolution */
} gaio_layout;

/* One image or a batch of `batch` equal-size images. Strides are in bytes; a zero
 * stride means "packed" and takes the value in its comment. Row pitch and strides
 * must be multiples of the element size.
 *
 * NV12 / I420 (dtype U8, channels 3, even width and height): the Y plane has
 * `height` rows of `width` bytes at `row_pitch`; the chroma plane(s) start
 * `plane_pitch` bytes after Y. NV12: height/2 rows of width bytes (U,V pairs) at
 * row_pitch. I420: U has height/2 rows of width/2 bytes at row_pitch/2, and V
 * follows U at plane_pitch/4 bytes, as in a packed I420 frame. */
typedef struct gaio_image {
    gaio_buffer *buffer;
    size_t offset; /* bytes from the buffer's start to the first element of image 0 */
    gaio_dtype dtype;
    gaio_layout layout;
    int32_t batch; /* images in the batch, >= 1 */
    int32_t width, height, channels;
    size_t row_pitch;    /* bytes between rows; 0: width * (HWC: channels) * element size */
    size_t plane_pitch;  /* CHW: bytes between channel planes; NV12/I420: Y to chroma; 0: row_pitch * height */
    size_t image_stride; /* bytes between images; 0: the image's packed size */
} gaio_image;

/* A rectangle of pixels: columns [x, x + width), rows [y, y + height). */
typedef struct gaio_rect {
    int32_t x, y, width, height;
} gaio_rect;

/* A packed descriptor (zero strides) over buf at offset. */
gaio_image gaio_image_make(gaio_buffer *buf, size_t offset, gaio_dtype dtype, gaio_layout layout, int32_t batch,
                           int32_t width, int32_t height, int32_t channels);

/* Checks a descriptor on its own (positive sizes, a dtype and layout gaio knows,
 * strides that hold what they separate, the buffer large enough) and fills the
 * zero strides. `*bytes` (may be NULL) receives the bytes the batch spans from
 * offset. */
gaio_status gaio_image_check(const gaio_image *img, gaio_image *resolved, size_t *bytes);

/* A view of the rectangle `roi` of every image of img: no copy, same buffer,
 * same strides (the ROI of NPP and of OpenCV's Mat(roi)). HWC and CHW only. */
gaio_status gaio_image_roi(const gaio_image *img, gaio_rect roi, gaio_image *view);

/* Image `index` of a batch as a descriptor of batch 1. */
gaio_status gaio_image_at(const gaio_image *img, int32_t index, gaio_image *view);

/* ---- geometry ---------------------------------------------------------- */

typedef enum gaio_interp {
    GAIO_INTERP_NEAREST = 0,       /* OpenCV's INTER_NEAREST: src = floor(dst * scale) */
    GAIO_INTERP_NEAREST_EXACT = 1, /* pixel centres, as PIL, CV-CUDA and OpenCV >= 4.7's INTER_NEAREST_EXACT
                                      (OpenCV 4.6 takes the other pixel at exact ties of even sizes) */
    GAIO_INTERP_LINEAR = 2,        /* bilinear with pixel-centre alignment (INTER_LINEAR) */
    GAIO_INTERP_CUBIC = 3,         /* bicubic, a = -0.75 (INTER_CUBIC) */
    GAIO_INTERP_AREA = 4           /* pixel-area average when shrinking, INTER_AREA's rules (linear-like when enlarging) */
} gaio_interp;

/* dst = src resized to dst's width and height, for each image of the batch.
 * dtype U8, U16 or F32 (the same in src and dst); HWC with 1, 3 or 4 channels or
 * CHW with any; the same layout, channels and batch in src and dst. */
gaio_status gaio_resize(gaio_stream *stream, const gaio_image *src, const gaio_image *dst, gaio_interp interp);

/* Image i of dst = rois[i] of image i of src, resized to dst's size (rois NULL:
 * whole images). One launch for the batch. */
gaio_status gaio_crop_resize(gaio_stream *stream, const gaio_image *src, const gaio_rect *rois, const gaio_image *dst,
                             gaio_interp interp);

/* The same over a variable-size batch: srcs[i] (batch 1 each, any sizes and
 * buffers, all of one dtype, layout and channel count) -> image i of dst (batch ==
 * count). Up to 256 images per launch; larger batches take ceil(count / 256). */
gaio_status gaio_crop_resize_varshape(gaio_stream *stream, const gaio_image *srcs, int32_t count,
                                      const gaio_rect *rois, const gaio_image *dst, gaio_interp interp);

/* dst = the rectangle roi of src (same size as dst), copied. */
gaio_status gaio_crop(gaio_stream *stream, const gaio_image *src, gaio_rect roi, const gaio_image *dst);

typedef enum gaio_border {
    GAIO_BORDER_CONSTANT = 0,    /* iiiiii|abcdefgh|iiiiiii */
    GAIO_BORDER_REPLICATE = 1,   /* aaaaaa|abcdefgh|hhhhhhh */
    GAIO_BORDER_REFLECT = 2,     /* fedcba|abcdefgh|hgfedcb */
    GAIO_BORDER_REFLECT_101 = 3, /* gfedcb|abcdefgh|gfedcba */
    GAIO_BORDER_WRAP = 4         /* cdefgh|abcdefgh|abcdefg */
} gaio_border;

/* dst = src placed at (left, top) inside dst, the rest filled by `border`
 * (OpenCV's copyMakeBorder; bottom and right follow from dst's size). value[c]
 * is the constant of channel c for GAIO_BORDER_CONSTANT (may be NULL: zeros),
 * converted to the dtype with rounding and saturation. */
gaio_status gaio_copy_make_border(gaio_stream *stream, const gaio_image *src, const gaio_image *dst, int32_t top,
                                  int32_t left, gaio_border border, const float value[4]);

typedef enum gaio_flip_mode {
    GAIO_FLIP_HORIZONTAL = 1, /* around the vertical axis: cv::flip code 1 */
    GAIO_FLIP_VERTICAL = 2,   /* around the horizontal axis: code 0 */
    GAIO_FLIP_BOTH = 3        /* code -1 */
} gaio_flip_mode;

gaio_status gaio_flip(gaio_stream *stream, const gaio_image *src, const gaio_image *dst, gaio_flip_mode mode);

/* Clockwise by 90, 180 or 270 degrees (cv::rotate). dst is height x width for 90 and 270. */
gaio_status gaio_rotate(gaio_stream *stream, const gaio_image *src, const gaio_image *dst, int32_t degrees);

/* dst(x, y) = src(M^-1 (x, y)) with M the 2x3 matrix mapping src to dst (row
 * major, cv::warpAffine), or dst(x, y) = src(M (x, y)) with GAIO_WARP_INVERSE_MAP.
 * NEAREST or LINEAR; pixels mapped outside src take value[c] (NULL: zeros). */
#define GAIO_WARP_INVERSE_MAP 1u
gaio_status gaio_warp_affine(gaio_stream *stream, const gaio_image *src, const gaio_image *dst, const double m[6],
                             gaio_interp interp, unsigned flags, const float value[4]);

/* ---- color --------------------------------------------------------------- */

typedef enum gaio_color {
    GAIO_COLOR_SWAP_RB = 1,    /* RGB <-> BGR, RGBA <-> BGRA (3 -> 3 or 4 -> 4 channels) */
    GAIO_COLOR_RGB2GRAY = 2,   /* 3 or 4 channels -> 1; BT.601 weights as cv::COLOR_RGB2GRAY */
    GAIO_COLOR_BGR2GRAY = 3,   /* 3 or 4 channels -> 1 */
    GAIO_COLOR_GRAY2RGB = 4,   /* 1 -> 3 or 4 (alpha = max) */
    GAIO_COLOR_RGB2RGBA = 5,   /* 3 -> 4, alpha = the dtype's max (1.0 for floats) */
    GAIO_COLOR_RGBA2RGB = 6,   /* 4 -> 3, alpha dropped */
    GAIO_COLOR_RGB2BGRA = 7,   /* 3 -> 4 with R and B swapped */
    GAIO_COLOR_RGBA2BGR = 8,   /* 4 -> 3 with R and B swapped */
    GAIO_COLOR_YUV2RGB = 9,    /* NV12 or I420 src (by its layout), U8 HWC dst of 3 or 4 channels */
    GAIO_COLOR_YUV2BGR = 10
} gaio_color;

/* The YUV -> RGB matrix and range of GAIO_COLOR_YUV2*. OpenCV's COLOR_YUV2RGB_NV12
 * and _I420 are GAIO_YUV_BT601_LIMITED. */
typedef enum gaio_yuv {
    GAIO_YUV_BT601_LIMITED = 0,
    GAIO_YUV_BT601_FULL = 1,
    GAIO_YUV_BT709_LIMITED = 2,
    GAIO_YUV_BT709_FULL = 3
} gaio_yuv;

/* HWC src and dst of the same dtype (U8, U16, F32; YUV: U8) and size; `yuv` is
 * read by the YUV codes only. */
gaio_status gaio_cvt_color(gaio_stream *stream, const gaio_image *src, const gaio_image *dst, gaio_color code,
                           gaio_yuv yuv);

/* ---- values and layout --------------------------------------------------- */

/* dst = saturate(src * scale + offset) in dst's dtype, rounding to nearest even
 * for integer dsts (OpenCV's convertTo). Same layout and shape; F32 <-> F16 with
 * scale 1, offset 0 is a plain conversion. */
gaio_status gaio_convert(gaio_stream *stream, const gaio_image *src, const gaio_image *dst, double scale,
                         double offset);

/* dst(c) = (src(c) * scale - mean[c]) / std[c] per channel, dst F32 or F16; same layout
 * and shape. mean and std hold `channels` values; every std must be non-zero. */
gaio_status gaio_normalize(gaio_stream *stream, const gaio_image *src, const gaio_image *dst, float scale,
                           const float *mean, const float *std);

/* HWC <-> CHW (NHWC <-> NCHW) with the same dtype, size and channels. */
gaio_status gaio_reformat(gaio_stream *stream, const gaio_image *src, const gaio_image *dst);

/* ---- the fused preprocess of inference pipelines ------------------------ */

typedef struct gaio_preprocess_params {
    gaio_interp interp; /* LINEAR or AREA */
    int32_t swap_rb;    /* non-zero: RGB <-> BGR on the way */
    float scale;        /* applied before mean and std: 1/255 for torchvision's convention */
    float mean[4], std[4];
} gaio_preprocess_params;

/* In one pass and one launch per batch: image i of dst = normalize(swap(resize(
 * rois[i] of image i of src))) with out = (v * scale - mean[c]) / std[c]. src is U8
 * HWC (NHWC) with 3 or 4 channels (4: alpha dropped, dst has 3); dst is F32 or F16,
 * CHW (NCHW) or HWC (NHWC). The resize is computed in float from the u8 source, not
 * rounded to u8 first (so it is more exact than resize-then-normalize chains). */
gaio_status gaio_preprocess(gaio_stream *stream, const gaio_image *src, const gaio_rect *rois, const gaio_image *dst,
                            const gaio_preprocess_params *params);

gaio_status gaio_preprocess_varshape(gaio_stream *stream, const gaio_image *srcs, int32_t count,
                                     const gaio_rect *rois, const gaio_image *dst,
                                     const gaio_preprocess_params *params);

#ifdef __cplusplus
}
#endif
#endif
