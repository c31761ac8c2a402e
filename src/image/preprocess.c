/* The fused preprocess of inference pipelines: per-image crop, resize computed in
 * float from u8, optional R/B swap, per-channel normalisation, F32/F16 CHW or HWC.
 *
 * One table-driven kernel serves the uniform and the varshape batch: each image is
 * a gaio_kroi (the ROI's top-left byte, pitch, ROI size) in a gaio_ktable passed
 * by value, so a launch needs no upload and holds nothing but the buffers. Batches
 * over GAIO_KTABLE_MAX images take several launches; every check runs before the
 * first of them, so bad input enqueues nothing. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/fail.h"
#include "image/image_internal.h"
#include "image/resize_math.h"

/* The box path of the CUDA kernel (src/kernels/image/preprocess.cu, box_band): each
 * thread owns BOX_WORDS 4-byte words of a source row segment; shared memory for T
 * threads is BOX_STEP * BOX_STEPS row slots of BOX_WORDS * 4 * T + 16 bytes, then
 * BOX_WORDS * 4 * T floats of vertical sums. The host kernel ignores it. */
#define BOX_STEP 1
#define BOX_STEPS 3
#define BOX_WORDS 8
#define AREA_SMEM(T) (BOX_STEP * BOX_STEPS * (BOX_WORDS * 4 * (T) + 16) + BOX_WORDS * 16 * (T))

/* Blocks a CUDA launch aims at: AREA gains from longer bands (its row pipeline fills
 * once per band); LINEAR (linear_warps in src/kernels/image/preprocess.cu, blocks of
 * LINEAR_WARPS warps, bands of up to LINEAR_BAND rows) from the most rows a thread
 * that still make LINEAR_BLOCKS blocks. */
#define AREA_BLOCKS 2048
#define LINEAR_BLOCKS 4096
#define LINEAR_WARPS 4
#define LINEAR_BAND 64

/* What every launch of a batch shares. */
typedef struct pre_plan {
    gaio_kimg dst;
    int32_t interp, swap, cn;
    float a[3], b[3]; /* out = v * a[c] + b[c] */
} pre_plan;

static const char *interp_name(int32_t interp) {
    switch (interp) {
    case GAIO_INTERP_NEAREST: return "NEAREST";
    case GAIO_INTERP_NEAREST_EXACT: return "NEAREST_EXACT";
    case GAIO_INTERP_CUBIC: return "CUBIC";
    default: return "?";
    }
}

static gaio_status check_params(const char *fn, const gaio_preprocess_params *p, pre_plan *plan) {
    if (!p) return BAD("params is NULL");
    if (p->interp != GAIO_INTERP_LINEAR && p->interp != GAIO_INTERP_AREA) {
        if (p->interp < GAIO_INTERP_NEAREST || p->interp > GAIO_INTERP_AREA)
            return BAD("params->interp %d is not a gaio_interp", (int)p->interp);
        return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn,
                          "params->interp is %s: preprocess resizes with LINEAR or AREA only", interp_name(p->interp));
    }
    if (!isfinite(p->scale)) return BAD("params->scale %g is not finite", (double)p->scale);
    for (int c = 0; c < 3; c++) {
        if (!isfinite(p->mean[c])) return BAD("params->mean[%d] %g is not finite", c, (double)p->mean[c]);
        if (!isfinite(p->std[c]) || p->std[c] == 0)
            return BAD("params->std[%d] is %g: it must be finite and non-zero", c, (double)p->std[c]);
        /* One float formula on both backends: out = v * (scale / std) + (-mean / std). */
        plan->a[c] = p->scale / p->std[c];
        plan->b[c] = -p->mean[c] / p->std[c];
        if (!isfinite(plan->a[c]) || !isfinite(plan->b[c]))
            return BAD("params->std[%d] %g is too small: scale / std or mean / std overflows a float", c,
                       (double)p->std[c]);
    }
    plan->interp = (int32_t)p->interp;
    plan->swap = p->swap_rb != 0;
    return GAIO_OK;
}

static gaio_status check_dst(const char *fn, gaio_stream *stream, const gaio_image *dst, int32_t batch,
                             const char *batch_what, pre_plan *plan) {
    gaio_status st = gaio__img_resolve(fn, "dst", dst, stream, &plan->dst);
    if (st != GAIO_OK) return st;
    if (dst->dtype != GAIO_DTYPE_F32 && dst->dtype != GAIO_DTYPE_F16)
        return BAD("dst is %s: preprocess writes f32 or f16", gaio_dtype_name(dst->dtype));
    if (dst->layout != GAIO_LAYOUT_CHW && dst->layout != GAIO_LAYOUT_HWC)
        return BAD("dst.layout is %d: preprocess writes CHW (NCHW) or HWC (NHWC)", (int)dst->layout);
    if (dst->channels != 3) return BAD("dst has %d channels: preprocess writes 3", (int)dst->channels);
    if (dst->batch != batch) return BAD("dst.batch is %d but %s is %d", (int)dst->batch, batch_what, (int)batch);
    return GAIO_OK;
}

/* A source image as the kernels see it: U8 HWC with 3 or 4 channels. */
static gaio_status check_src_format(const char *fn, const char *arg, const gaio_image *src) {
    if (src->dtype != GAIO_DTYPE_U8 || src->layout != GAIO_LAYOUT_HWC || src->channels < 3 || src->channels > 4)
        return BAD("%s is %s %s with %d channels: preprocess reads u8 HWC with 3 or 4 channels", arg,
                   gaio_dtype_name(src->dtype), src->layout == GAIO_LAYOUT_HWC ? "HWC" : "non-HWC",
                   (int)src->channels);
    return GAIO_OK;
}

/* The ROI `roi_arg` (NULL roi: the whole image) of a w x h image, checked, and
 * for AREA the shrink the kernels can take (a box holds at most GAIO_RS_MAX_BOX taps). */
static gaio_status check_roi(const char *fn, const char *roi_arg, const char *img_arg, const gaio_rect *roi,
                             int32_t w, int32_t h, const pre_plan *plan, gaio_rect *out) {
    gaio_rect r = roi ? *roi : (gaio_rect){0, 0, w, h};
    if (r.width < 1 || r.height < 1 || r.x < 0 || r.y < 0 || r.x > w - r.width || r.y > h - r.height)
        return BAD("%s (x %d, y %d, %dx%d) is empty or outside %s (%dx%d)", roi_arg, (int)r.x, (int)r.y,
                   (int)r.width, (int)r.height, img_arg, (int)w, (int)h);
    if (plan->interp == GAIO_INTERP_AREA) {
        int32_t mx, my;
        gaio_rs_modes(GAIO_INTERP_AREA, r.width, r.height, plan->dst.width, plan->dst.height, &mx, &my);
        gaio_rs_axis ax = gaio_rs_axis_make(r.width, plan->dst.width, mx);
        gaio_rs_axis ay = gaio_rs_axis_make(r.height, plan->dst.height, my);
        if (mx == GAIO_RS_BOX && (ax.scale > GAIO_RS_MAX_BOX - 1 || ay.scale > GAIO_RS_MAX_BOX - 1))
            return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn,
                              "AREA would shrink %s (%dx%d) to %dx%d, by %.1f x %.1f: more than %d per axis is "
                              "not supported",
                              roi ? roi_arg : img_arg, (int)r.width, (int)r.height, (int)plan->dst.width,
                              (int)plan->dst.height, ax.scale, ay.scale, GAIO_RS_MAX_BOX - 1);
    }
    *out = r;
    return GAIO_OK;
}

static gaio_kroi view_of(const gaio_kimg *img, int32_t index, gaio_rect r) {
    gaio_kroi v;
    v.ptr = img->ptr + (uint64_t)index * img->image_stride + (uint64_t)r.y * img->row_pitch +
            (uint64_t)r.x * (uint64_t)img->channels;
    v.row_pitch = img->row_pitch;
    v.plane_pitch = 0;
    v.width = r.width;
    v.height = r.height;
    return v;
}

/* gaio_img_preprocess_<linear|area>_<f32|f16>_<chw|hwc>_c<3|4>: the CUDA kernels
 * are specialised on each; one host kernel serves all. */
static void kernel_name(const pre_plan *plan, char *name, size_t size) {
    snprintf(name, size, "gaio_img_preprocess_%s_%s_%s_c%d", plan->interp == GAIO_INTERP_AREA ? "area" : "linear",
             plan->dst.dtype == GAIO_K_F16 ? "f16" : "f32", plan->dst.planes == 3 ? "chw" : "hwc", (int)plan->cn);
}

/* One launch over images [first, first + n) of the batch; `table` holds their
 * views, `held` the buffers (dst's among them). */
static gaio_status launch(const char *fn, gaio_stream *stream, const pre_plan *plan, const gaio_ktable *table,
                          int32_t first, int32_t n, gaio_buffer *const *held, size_t nheld) {
    int32_t dw = plan->dst.width, dh = plan->dst.height;
    /* Rows per block (AREA, and the host kernel ignores it): enough blocks to fill a large
     * GPU several times over, bands long enough that a source row shared by two bands
     * is rarely read twice. */
    int64_t rows = (int64_t)dh * n / AREA_BLOCKS;
    int32_t band = (int32_t)(rows < 1 ? 1 : rows > 8 ? 8 : rows);
    int32_t smem_arg = 0;
    gaio_dim3 grid = {1, 1, 1}, block = {1, 1, 1};
    size_t smem = 0;
    if (gaio__img_on_cuda(stream) && plan->interp == GAIO_INTERP_AREA) {
        /* the threads own BOX_WORDS words each of a source row segment: as many as the
         * widest ROI row needs, whole warps */
        int64_t widest = 0; /* bytes of the widest ROI row */
        for (int32_t i = 0; i < n; i++)
            if ((int64_t)table->v[i].width * plan->cn > widest) widest = (int64_t)table->v[i].width * plan->cn;
        int64_t t = (widest + BOX_WORDS * 4 - 1) / (BOX_WORDS * 4);
        t = (t + 31) / 32 * 32;
        block.x = (uint32_t)(t < 64 ? 64 : t > 256 ? 256 : t);
        grid = (gaio_dim3){(uint32_t)((dh + band - 1) / band), (uint32_t)n, 1};
        smem = AREA_SMEM((size_t)block.x);
        smem_arg = (int32_t)smem;
    } else if (gaio__img_on_cuda(stream)) {
        /* LINEAR: 32 x LINEAR_WARPS threads a block, a tile of 32 columns by a band of
         * rows (a warp's share <= 32; the kernel derives the band from grid y) */
        block = (gaio_dim3){32, LINEAR_WARPS, 1};
        if (!gaio__img_warp_grid(dw, dh, n, 32, LINEAR_WARPS, LINEAR_BAND, LINEAR_BLOCKS, LINEAR_WARPS * 32, &grid))
            return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn, "dst is %d rows high: the CUDA kernel takes at most %d",
                              (int)dh, 65535 * LINEAR_WARPS * 32);
    }
    int32_t cn = plan->cn;
    gaio_arg args[] = {
        {table, sizeof *table, NULL, 0},
        GAIO_ARG(plan->dst),
        GAIO_ARG(first),
        GAIO_ARG(n),
        GAIO_ARG(plan->interp),
        GAIO_ARG(band),
        GAIO_ARG(smem_arg),
        GAIO_ARG(plan->swap),
        GAIO_ARG(cn),
        GAIO_ARG(plan->a[0]),
        GAIO_ARG(plan->a[1]),
        GAIO_ARG(plan->a[2]),
        GAIO_ARG(plan->b[0]),
        GAIO_ARG(plan->b[1]),
        GAIO_ARG(plan->b[2]),
    };
    char name[64];
    kernel_name(plan, name, sizeof name);
    return gaio__img_launch(fn, stream, name, grid, block, smem, args, sizeof args / sizeof *args, held, nheld);
}

/* Adds buf to the held list unless it is there already. */
static void hold(gaio_buffer **held, size_t *n, gaio_buffer *buf) {
    for (size_t i = 0; i < *n; i++)
        if (held[i] == buf) return;
    held[(*n)++] = buf;
}

gaio_status gaio_preprocess(gaio_stream *stream, const gaio_image *src, const gaio_rect *rois, const gaio_image *dst,
                            const gaio_preprocess_params *params) {
    const char *fn = __func__;
    gaio_kimg ksrc;
    gaio_status st = gaio__img_resolve(fn, "src", src, stream, &ksrc);
    if (st != GAIO_OK) return st;
    if (!dst) return BAD("dst is NULL");
    pre_plan plan;
    if ((st = check_params(fn, params, &plan)) != GAIO_OK) return st;
    if ((st = check_src_format(fn, "src", src)) != GAIO_OK) return st;
    if ((st = check_dst(fn, stream, dst, src->batch, "src.batch", &plan)) != GAIO_OK) return st;
    plan.cn = src->channels;
    if (gaio__img_overlap(&ksrc, &plan.dst)) return BAD("dst overlaps src: preprocess cannot work in place");
    for (int32_t i = 0; i < src->batch; i++) {
        char roi_arg[32], img_arg[48];
        snprintf(roi_arg, sizeof roi_arg, "rois[%d]", (int)i);
        snprintf(img_arg, sizeof img_arg, "image %d of src", (int)i);
        gaio_rect r;
        if ((st = check_roi(fn, roi_arg, img_arg, rois ? &rois[i] : NULL, src->width, src->height, &plan, &r)) !=
            GAIO_OK)
            return st;
    }
    gaio_ktable table;
    gaio_buffer *held[2] = {dst->buffer, src->buffer};
    size_t nheld = dst->buffer == src->buffer ? 1 : 2;
    for (int32_t first = 0; first < src->batch; first += GAIO_KTABLE_MAX) {
        int32_t n = src->batch - first < GAIO_KTABLE_MAX ? src->batch - first : GAIO_KTABLE_MAX;
        memset(&table, 0, sizeof table);
        for (int32_t i = 0; i < n; i++) {
            const gaio_rect *roi = rois ? &rois[first + i] : NULL;
            table.v[i] = view_of(&ksrc, first + i, roi ? *roi : (gaio_rect){0, 0, src->width, src->height});
        }
        if ((st = launch(fn, stream, &plan, &table, first, n, held, nheld)) != GAIO_OK) return st;
    }
    return GAIO_OK;
}

/* srcs[i] checked, resolved and viewed through its ROI. */
static gaio_status varshape_src(const char *fn, gaio_stream *stream, const gaio_image *srcs, const gaio_rect *rois,
                                int32_t i, const pre_plan *plan, gaio_kroi *view) {
    char arg[32], roi_arg[32];
    snprintf(arg, sizeof arg, "srcs[%d]", (int)i);
    snprintf(roi_arg, sizeof roi_arg, "rois[%d]", (int)i);
    gaio_kimg k;
    gaio_status st = gaio__img_resolve(fn, arg, &srcs[i], stream, &k);
    if (st != GAIO_OK) return st;
    if ((st = check_src_format(fn, arg, &srcs[i])) != GAIO_OK) return st;
    if (srcs[i].batch != 1) return BAD("%s.batch is %d: each image of a varshape batch is one image", arg,
                                       (int)srcs[i].batch);
    if (srcs[i].channels != plan->cn)
        return BAD("%s has %d channels but srcs[0] has %d: a varshape batch has one channel count", arg,
                   (int)srcs[i].channels, (int)plan->cn);
    if (gaio__img_overlap(&k, &plan->dst)) return BAD("dst overlaps %s: preprocess cannot work in place", arg);
    gaio_rect r;
    if ((st = check_roi(fn, roi_arg, arg, rois ? &rois[i] : NULL, srcs[i].width, srcs[i].height, plan, &r)) !=
        GAIO_OK)
        return st;
    *view = view_of(&k, 0, r);
    return GAIO_OK;
}

gaio_status gaio_preprocess_varshape(gaio_stream *stream, const gaio_image *srcs, int32_t count,
                                     const gaio_rect *rois, const gaio_image *dst,
                                     const gaio_preprocess_params *params) {
    const char *fn = __func__;
    if (!stream) return BAD("stream is NULL");
    if (!srcs) return BAD("srcs is NULL");
    if (count < 1) return BAD("count is %d; a batch holds at least one image", (int)count);
    if (!dst) return BAD("dst is NULL");
    pre_plan plan;
    gaio_status st = check_params(fn, params, &plan);
    if (st != GAIO_OK) return st;
    if ((st = check_dst(fn, stream, dst, count, "count", &plan)) != GAIO_OK) return st;
    plan.cn = srcs[0].channels;
    gaio_kroi v;
    /* Everything is checked before the first launch: bad input enqueues nothing. */
    for (int32_t i = 0; i < count; i++)
        if ((st = varshape_src(fn, stream, srcs, rois, i, &plan, &v)) != GAIO_OK) return st;
    gaio_ktable table;
    gaio_buffer *held[GAIO_KTABLE_MAX + 1];
    for (int32_t first = 0; first < count; first += GAIO_KTABLE_MAX) {
        int32_t n = count - first < GAIO_KTABLE_MAX ? count - first : GAIO_KTABLE_MAX;
        size_t nheld = 0;
        hold(held, &nheld, dst->buffer);
        memset(&table, 0, sizeof table);
        for (int32_t i = 0; i < n; i++) {
            (void)varshape_src(fn, stream, srcs, rois, first + i, &plan, &table.v[i]);
            hold(held, &nheld, srcs[first + i].buffer);
        }
        if ((st = launch(fn, stream, &plan, &table, first, n, held, nheld)) != GAIO_OK) return st;
    }
    return GAIO_OK;
}
