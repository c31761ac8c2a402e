/* gaio_resize, gaio_crop_resize, gaio_crop_resize_varshape: one table-driven
 * kernel family serves all three. The op turns each image into a gaio_kroi (the
 * ROI's top-left address, pitches, ROI size) in a gaio_ktable passed by value, so
 * a batch of any shapes is one launch per GAIO_KTABLE_MAX images with nothing to
 * upload or free; gaio_resize is crop_resize with whole-image views. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fail.h"
#include "image/image_internal.h"
#include "image/resize_math.h"
#include "image/resize_span.h"

static const char *interp_names[] = {"nearest", "linear", "linear", "cubic", "area"};

/* The kernel of a launch: gaio_img_resize_<mode>_<dtype>_c<channels>, where mode
 * NEAREST covers NEAREST_EXACT (the interp argument tells them apart). */
static void kernel_name(char *out, size_t size, gaio_interp interp, gaio_dtype dt, int32_t cn) {
    const char *mode = interp == GAIO_INTERP_NEAREST_EXACT ? "nearest" : interp_names[interp];
    snprintf(out, size, "gaio_img_resize_%s_%s_c%d", mode, gaio_dtype_name(dt), (int)cn);
}

/* CUDA launch shape (src/kernels/image/resize.cu): blocks of RS_THREADS threads,
 * each a band of output rows of one column tile (grid x: tiles, y: bands, z:
 * planes of the launch, strided past 65535). A block keeps in shared memory the x
 * taps of its tile and the y taps of its band (tapb bytes each: the kernel's Tap
 * struct of the mode) and one row of vertical sums over the source columns the
 * tile reads (4-byte elements, staged in chunks of at most 16 bytes: the bound of
 * gaio_rs_stage_elems holds for every chunk size the kernels use). Tiles: the fewest whose
 * shared memory fits RS_SMEM_CAP for every image of the launch (several blocks to
 * an SM) and, down to RS_MIN_TILE columns, whose row each thread loads in one go
 * (one_pass bytes a block: 16 bytes a thread, twice except for AREA, as the
 * kernel's Stage::CU), so that the kernel loads the next row while it finishes the
 * current one. Bands: short enough for about RS_BLOCKS blocks. */
#define RS_THREADS 128
#define RS_SMEM_CAP (28 * 1024)
#define RS_MIN_TILE 32
#define RS_BLOCKS 4096
#define RS_MAX_BAND 16

static void cuda_shape(const gaio_kroi *views, int32_t n, const gaio_kimg *dst, gaio_interp interp, size_t esize,
                       gaio_dim3 *grid, size_t *smem) {
    const int32_t dw = dst->width, dh = dst->height;
    const int64_t pxb = (int64_t)esize * dst->channels;
    const int64_t tapb = interp <= GAIO_INTERP_NEAREST_EXACT ? 8 : interp == GAIO_INTERP_CUBIC ? 32 : 16;
    const int64_t one_pass = (interp == GAIO_INTERP_AREA ? 1 : 2) * RS_THREADS * 16;
    int32_t tiles = 1;
    int64_t need;
    for (;;) {
        const int32_t tw = (dw + tiles - 1) / tiles;
        int64_t stage = 0, bytes = 0;
        for (int32_t i = 0; i < n; i++) {
            if (i > 0 && views[i].width == views[i - 1].width && views[i].height == views[i - 1].height) continue;
            int32_t mx, my, lo, hi;
            gaio_rs_modes((int32_t)interp, views[i].width, views[i].height, dw, dh, &mx, &my);
            gaio_rs_axis ax = gaio_rs_axis_make(views[i].width, dw, mx);
            for (int32_t d0 = 0; d0 < dw; d0 += tw) {
                gaio_rs_tile_span(&ax, d0, d0 + tw < dw ? d0 + tw : dw, &lo, &hi);
                int64_t b = ((int64_t)hi - lo + 1) * pxb, e = gaio_rs_stage_elems(b, (int32_t)esize);
                if (e > stage) stage = e;
                if (b > bytes) bytes = b;
            }
        }
        need = ((tw * tapb + 15) & ~(int64_t)15) + ((RS_MAX_BAND * tapb + 15) & ~(int64_t)15) + stage * 4;
        int fits = need <= RS_SMEM_CAP && (bytes + 32 <= one_pass || tw <= RS_MIN_TILE);
        if (fits || tw == 1) break;
        tiles = tiles * 2 < dw ? tiles * 2 : dw;
    }
    int64_t planes = (int64_t)n * dst->planes, rows = planes * dh * tiles;
    int64_t band = rows / RS_BLOCKS;
    band = band < 1 ? 1 : band > RS_MAX_BAND ? RS_MAX_BAND : band;
    int64_t bands = (dh + band - 1) / band;
    *grid = (gaio_dim3){(uint32_t)tiles, (uint32_t)(bands < 65535 ? bands : 65535),
                        (uint32_t)(planes < 65535 ? planes : 65535)};
    *smem = (size_t)need;
}

/* The direct kernels (src/kernels/image/resize_direct.cu): u8 interleaved images of
 * 1, 3 or 4 channels, for NEAREST, LINEAR, CUBIC and AREA (enlarging, or a box
 * whose rows of taps span at most RSD_WIDE_BYTES): four adjacent output pixels a
 * thread, or one (direct1; not CUBIC, which keeps the staged kernels there) where
 * some image's rows shrink more than twice (sparse reads) or a box takes more than
 * two taps an axis.
 * Blocks of 32 x RSD_WARPS threads make a tile of RSD_TILE (direct1: 32) output
 * columns and a band of up to RSD_BAND rows (a thread's setup, double divisions
 * among it, is then small beside its pixels): fewer rows where that would leave
 * fewer than RSD_BLOCKS blocks, more only where the grid's y would pass 65535 (a
 * warp takes at most 32 rows of a band). */
#define RSD_TILE 128
#define RSD_WARPS 4
#define RSD_BAND 64
#define RSD_BLOCKS 4096
#define RSD_MAX_BAND (RSD_WARPS * 32)
#define RSD_WIDE_BYTES 32 /* a row of direct1's AREA box: kWideTaps in resize_direct.cu */

/* The most taps a box of src -> dst takes at any output. A walk over every output
 * (tens of microseconds for 1280 of them: ten launches' worth), so the last few
 * answers of a thread are kept: a pipeline asks for the same sizes call after call. */
#define BOX_MEMO 4
static int32_t box_taps(int32_t src, int32_t dst) {
    static _Thread_local struct {
        int32_t src, dst, taps;
    } memo[BOX_MEMO];
    static _Thread_local unsigned next;
    for (int i = 0; i < BOX_MEMO; i++)
        if (memo[i].taps && memo[i].src == src && memo[i].dst == dst) return memo[i].taps;
    gaio_rs_axis a = gaio_rs_axis_make(src, dst, GAIO_RS_BOX);
    int32_t most = 0;
    for (int32_t d = 0; d < dst; d++) {
        int32_t n = gaio_rs_box_at(&a, d).n;
        most = n > most ? n : most;
    }
    memo[next % BOX_MEMO].src = src;
    memo[next % BOX_MEMO].dst = dst;
    memo[next % BOX_MEMO].taps = most;
    next++;
    return most;
}

static bool direct_fits(const gaio_kroi *views, int32_t n, const gaio_kimg *dst, const gaio_image *d,
                        gaio_interp interp, gaio_dim3 *grid, bool *sparse) {
    if (d->dtype != GAIO_DTYPE_U8 || d->layout != GAIO_LAYOUT_HWC || d->channels == 2) return false;
    *sparse = false;
    for (int32_t i = 0; i < n; i++) {
        if (views[i].width > 2 * dst->width) *sparse = true; /* one pixel a thread */
        if (interp != GAIO_INTERP_AREA || (i > 0 && views[i].width == views[i - 1].width &&
                                           views[i].height == views[i - 1].height))
            continue;
        int32_t mx, my;
        gaio_rs_modes((int32_t)interp, views[i].width, views[i].height, dst->width, dst->height, &mx, &my);
        if (mx != GAIO_RS_BOX) continue;
        int32_t tx = box_taps(views[i].width, dst->width), ty = box_taps(views[i].height, dst->height);
        if (tx > RSD_WIDE_BYTES / d->channels) return false; /* wider than direct1's window */
        if (tx > 2 || ty > 2) *sparse = true;                /* direct1's wide box */
    }
    if (*sparse && interp == GAIO_INTERP_CUBIC) return false; /* no direct1 cubic: staged */
    return gaio__img_warp_grid(dst->width, dst->height, n, *sparse ? 32 : RSD_TILE, RSD_WARPS, RSD_BAND, RSD_BLOCKS,
                               RSD_MAX_BAND, grid) > 0;
}

/* Checks one source image against dst (dtype, layout, channels) as argument `arg`. */
static gaio_status check_src(const char *fn, const char *arg, const gaio_image *s, const gaio_image *d) {
    if (s->dtype != d->dtype || s->layout != d->layout || s->channels != d->channels) {
        char what[128];
        snprintf(what, sizeof what, "%s and dst differ in dtype, layout or channels", arg);
        return gaio__img_mismatch(fn, what, s, d);
    }
    return GAIO_OK;
}

static gaio_status check_roi(const char *fn, const gaio_rect *rois, int32_t i, const char *img, int32_t w,
                             int32_t h) {
    const gaio_rect r = rois[i];
    if (r.width < 1 || r.height < 1 || r.x < 0 || r.y < 0 || r.x > w - r.width || r.y > h - r.height)
        return BAD("rois[%d] (x %d, y %d, %dx%d) is empty or outside %s's %dx%d image", (int)i, (int)r.x, (int)r.y,
                   (int)r.width, (int)r.height, img, (int)w, (int)h);
    return GAIO_OK;
}

/* AREA shrinking both axes is a box whose taps per axis are bounded. */
static gaio_status check_area(const char *fn, gaio_interp interp, int32_t i, int32_t sw, int32_t sh,
                              const gaio_kimg *dst) {
    if (interp != GAIO_INTERP_AREA) return GAIO_OK;
    int32_t mx, my;
    gaio_rs_modes(interp, sw, sh, dst->width, dst->height, &mx, &my);
    if (mx != GAIO_RS_BOX) return GAIO_OK;
    double fx = (double)sw / dst->width, fy = (double)sh / dst->height;
    if (fx > GAIO_RS_MAX_BOX - 1 || fy > GAIO_RS_MAX_BOX - 1)
        return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn,
                          "AREA shrinks image %d (%dx%d -> %dx%d) by %.3g x %.3g; more than %d on an axis is not "
                          "supported (resize in two steps)",
                          (int)i, (int)sw, (int)sh, (int)dst->width, (int)dst->height, fx, fy, GAIO_RS_MAX_BOX - 1);
    return GAIO_OK;
}

static gaio_status check_dst(const char *fn, gaio_stream *stream, const gaio_image *dst, gaio_interp interp,
                             gaio_kimg *kdst) {
    gaio_status st = gaio__img_resolve(fn, "dst", dst, stream, kdst);
    if (st != GAIO_OK) return st;
    if ((int)interp < GAIO_INTERP_NEAREST || (int)interp > GAIO_INTERP_AREA)
        return BAD("interp %d is not a gaio_interp (NEAREST, NEAREST_EXACT, LINEAR, CUBIC, AREA)", (int)interp);
    if (dst->dtype != GAIO_DTYPE_U8 && dst->dtype != GAIO_DTYPE_U16 && dst->dtype != GAIO_DTYPE_F32)
        return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn, "dst is %s: resize takes u8, u16 or f32",
                          gaio_dtype_name(dst->dtype));
    if (dst->layout != GAIO_LAYOUT_HWC && dst->layout != GAIO_LAYOUT_CHW)
        return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn, "dst is a YUV frame: resize takes HWC or CHW images");
    if (dst->layout == GAIO_LAYOUT_HWC && dst->channels > 4)
        return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn,
                          "dst is HWC with %d channels: resize takes 1 to 4 interleaved channels (CHW takes any)",
                          (int)dst->channels);
    return GAIO_OK;
}

/* Enqueues the launches for `count` views into dst, GAIO_KTABLE_MAX at a time.
 * held: every buffer the views read, then dst's (duplicates are fine). */
static gaio_status launch_all(const char *fn, gaio_stream *stream, const gaio_kroi *views, int32_t count,
                              const gaio_kimg *kdst, const gaio_image *dst, gaio_interp interp,
                              gaio_buffer *const *src_bufs, int32_t nsrc_bufs) {
    char name[64];
    kernel_name(name, sizeof name, interp, dst->dtype, kdst->channels);
    char direct[72], direct1[72];
    snprintf(direct, sizeof direct, "gaio_img_resize_direct_%s", name + strlen("gaio_img_resize_"));
    snprintf(direct1, sizeof direct1, "gaio_img_resize_direct1_%s", name + strlen("gaio_img_resize_"));
    bool cuda = gaio__img_on_cuda(stream);
    gaio_dim3 block = cuda ? (gaio_dim3){RS_THREADS, 1, 1} : (gaio_dim3){1, 1, 1};
    size_t esize = gaio_dtype_size(dst->dtype);
    int32_t mode = (int32_t)interp;
    for (int32_t first = 0; first < count; first += GAIO_KTABLE_MAX) {
        int32_t n = count - first < GAIO_KTABLE_MAX ? count - first : GAIO_KTABLE_MAX;
        gaio_ktable tab;
        memset(&tab, 0, sizeof tab);
        memcpy(tab.v, views + first, (size_t)n * sizeof *views);
        gaio_dim3 grid = {1, 1, 1}, blk = block;
        size_t smem = 0;
        const char *kname = name;
        bool sparse;
        if (cuda && direct_fits(views + first, n, kdst, dst, interp, &grid, &sparse)) {
            kname = sparse ? direct1 : direct;
            blk = (gaio_dim3){32, RSD_WARPS, 1};
        } else if (cuda) {
            cuda_shape(views + first, n, kdst, interp, esize, &grid, &smem);
        }
        gaio_arg args[5] = {GAIO_ARG(tab), GAIO_ARG(*kdst), GAIO_ARG(first), GAIO_ARG(n), GAIO_ARG(mode)};
        gaio_buffer *held[GAIO_KTABLE_MAX + 1];
        int32_t nheld = 0;
        if (nsrc_bufs == 1) held[nheld++] = src_bufs[0];
        else
            for (int32_t i = 0; i < n; i++) held[nheld++] = src_bufs[first + i];
        held[nheld++] = dst->buffer;
        gaio_status st = gaio__img_launch(fn, stream, kname, grid, blk, smem, args, 5, held, (size_t)nheld);
        if (st != GAIO_OK) return st;
    }
    return GAIO_OK;
}

static gaio_kroi view_of(const gaio_kimg *k, uint64_t image_offset, const gaio_rect *roi, size_t esize) {
    gaio_kroi v;
    v.ptr = k->ptr + image_offset;
    v.row_pitch = k->row_pitch;
    v.plane_pitch = k->plane_pitch;
    v.width = k->width;
    v.height = k->height;
    if (roi) {
        v.ptr += (uint64_t)roi->y * k->row_pitch + (uint64_t)roi->x * (uint64_t)k->channels * esize;
        v.width = roi->width;
        v.height = roi->height;
    }
    return v;
}

static gaio_status crop_resize_uniform(const char *fn, gaio_stream *stream, const gaio_image *src,
                                       const gaio_rect *rois, const gaio_image *dst, gaio_interp interp) {
    gaio_kimg kdst, ksrc;
    if (!stream) return BAD("stream is NULL");
    gaio_status st = gaio__img_resolve(fn, "src", src, stream, &ksrc);
    if (st != GAIO_OK) return st;
    st = check_dst(fn, stream, dst, interp, &kdst);
    if (st != GAIO_OK) return st;
    st = check_src(fn, "src", src, dst);
    if (st != GAIO_OK) return st;
    if (src->batch != dst->batch) return gaio__img_mismatch(fn, "src and dst differ in batch", src, dst);
    if (gaio__img_overlap(&ksrc, &kdst)) return BAD("src and dst overlap: resize cannot work in place");
    int32_t n = dst->batch;
    size_t esize = gaio_dtype_size(dst->dtype);
    gaio_kroi *views = malloc((size_t)n * sizeof *views);
    if (!views) return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory for %d views", (int)n);
    for (int32_t i = 0; i < n && st == GAIO_OK; i++) {
        if (rois) st = check_roi(fn, rois, i, "src", src->width, src->height);
        if (st != GAIO_OK) break;
        views[i] = view_of(&ksrc, (uint64_t)i * ksrc.image_stride, rois ? &rois[i] : NULL, esize);
        st = check_area(fn, interp, i, views[i].width, views[i].height, &kdst);
    }
    if (st == GAIO_OK) st = launch_all(fn, stream, views, n, &kdst, dst, interp, &src->buffer, 1);
    free(views);
    return st;
}

gaio_status gaio_resize(gaio_stream *stream, const gaio_image *src, const gaio_image *dst, gaio_interp interp) {
    return crop_resize_uniform(__func__, stream, src, NULL, dst, interp);
}

gaio_status gaio_crop_resize(gaio_stream *stream, const gaio_image *src, const gaio_rect *rois, const gaio_image *dst,
                             gaio_interp interp) {
    return crop_resize_uniform(__func__, stream, src, rois, dst, interp);
}

gaio_status gaio_crop_resize_varshape(gaio_stream *stream, const gaio_image *srcs, int32_t count,
                                      const gaio_rect *rois, const gaio_image *dst, gaio_interp interp) {
    const char *fn = __func__;
    if (!stream) return BAD("stream is NULL");
    if (!srcs) return BAD("srcs is NULL");
    if (count < 1) return BAD("count is %d; a batch holds at least one image", (int)count);
    gaio_kimg kdst;
    gaio_status st = check_dst(fn, stream, dst, interp, &kdst);
    if (st != GAIO_OK) return st;
    if (count != dst->batch)
        return BAD("count is %d but dst holds a batch of %d images", (int)count, (int)dst->batch);
    size_t esize = gaio_dtype_size(dst->dtype);
    gaio_kroi *views = malloc((size_t)count * sizeof *views);
    gaio_buffer **bufs = malloc((size_t)count * sizeof *bufs);
    if (!views || !bufs) {
        free(views);
        free(bufs);
        return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory for %d views", (int)count);
    }
    for (int32_t i = 0; i < count && st == GAIO_OK; i++) {
        char arg[32];
        snprintf(arg, sizeof arg, "srcs[%d]", (int)i);
        gaio_kimg k;
        st = gaio__img_resolve(fn, arg, &srcs[i], stream, &k);
        if (st != GAIO_OK) break;
        if (srcs[i].batch != 1) {
            st = BAD("%s.batch is %d: a varshape batch takes single images", arg, (int)srcs[i].batch);
            break;
        }
        st = check_src(fn, arg, &srcs[i], dst);
        if (st != GAIO_OK) break;
        if (gaio__img_overlap(&k, &kdst)) {
            st = BAD("%s and dst overlap: resize cannot work in place", arg);
            break;
        }
        if (rois) st = check_roi(fn, rois, i, arg, srcs[i].width, srcs[i].height);
        if (st != GAIO_OK) break;
        views[i] = view_of(&k, 0, rois ? &rois[i] : NULL, esize);
        bufs[i] = srcs[i].buffer;
        st = check_area(fn, interp, i, views[i].width, views[i].height, &kdst);
    }
    if (st == GAIO_OK) st = launch_all(fn, stream, views, count, &kdst, dst, interp, bufs, count);
    free(views);
    free(bufs);
    return st;
}
