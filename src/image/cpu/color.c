/* Host kernels of gaio_cvt_color (src/image/color.c). Each row loop is
 * specialised for its channel counts and swap so that the compiler turns the
 * interleaved accesses into vector shuffles; the arithmetic is OpenCV's (and the
 * CUDA kernels' in src/kernels/image/color.cu), integer where OpenCV's is. */
#include "image/cpu/host_kernel.h"
#include "image/cpu/tables.h"

#include "image/kargs.h"

#define FORCE_INLINE static inline __attribute__((always_inline))

/* ---- RGB <-> BGR, alpha, gray ---------------------------------------------- */

/* OpenCV's RGB2Gray for u8 and u16: BT.601 weights in 15-bit fixed point
 * (0.299, 0.587, 0.114 -> 9798, 19235, 3735; they sum to 2^15) with rounding. */
enum { GRAY_R = 9798, GRAY_G = 19235, GRAY_B = 3735, GRAY_SHIFT = 15 };

#define GRAY_INT(T, r, g, b)                                                                         \
    ((T)(((uint32_t)(r) * GRAY_R + (uint32_t)(g) * GRAY_G + (uint32_t)(b) * GRAY_B + (1u << (GRAY_SHIFT - 1))) \
         >> GRAY_SHIFT))
/* Float: OpenCV's weights; the sum in this order, unfused, as on the GPU. */
#define GRAY_F32(T, r, g, b) ((r) * 0.299f + (g) * 0.587f + (b) * 0.114f)

/* One row of n pixels; scn, dcn and swap are constants at every call site. */
#define DEFINE_ROW(T, sfx, AMAX, GRAY)                                                                           \
    FORCE_INLINE void row_##sfx(const T *restrict s, T *restrict d, int64_t n, const int scn, const int dcn,     \
                                const int swap) {                                                                \
        if (dcn == 1) {                                                                                          \
            for (int64_t i = 0; i < n; i++) {                                                                    \
                T r = s[i * scn + (swap ? 2 : 0)], g = s[i * scn + 1], b = s[i * scn + (swap ? 0 : 2)];          \
                d[i] = GRAY(T, r, g, b);                                                                         \
            }                                                                                                    \
        } else if (scn == 1) {                                                                                   \
            for (int64_t i = 0; i < n; i++) {                                                                    \
                T v = s[i];                                                                                      \
                d[i * dcn] = v;                                                                                  \
                d[i * dcn + 1] = v;                                                                              \
                d[i * dcn + 2] = v;                                                                              \
                if (dcn == 4) d[i * dcn + 3] = AMAX;                                                             \
            }                                                                                                    \
        } else {                                                                                                 \
            for (int64_t i = 0; i < n; i++) {                                                                    \
                T r = s[i * scn + (swap ? 2 : 0)], g = s[i * scn + 1], b = s[i * scn + (swap ? 0 : 2)];          \
                d[i * dcn] = r;                                                                                  \
                d[i * dcn + 1] = g;                                                                              \
                d[i * dcn + 2] = b;                                                                              \
                if (dcn == 4) d[i * dcn + 3] = scn == 4 ? s[i * scn + 3] : AMAX;                                 \
            }                                                                                                    \
        }                                                                                                        \
    }                                                                                                            \
    static void rows_##sfx(const T *s, T *d, int64_t n, int scn, int dcn, int swap) {                            \
        switch (scn * 100 + dcn * 10 + swap) {                                                                   \
        case 331: row_##sfx(s, d, n, 3, 3, 1); break;                                                            \
        case 441: row_##sfx(s, d, n, 4, 4, 1); break;                                                            \
        case 340: row_##sfx(s, d, n, 3, 4, 0); break;                                                            \
        case 341: row_##sfx(s, d, n, 3, 4, 1); break;                                                            \
        case 430: row_##sfx(s, d, n, 4, 3, 0); break;                                                            \
        case 431: row_##sfx(s, d, n, 4, 3, 1); break;                                                            \
        case 130: row_##sfx(s, d, n, 1, 3, 0); break;                                                            \
        case 140: row_##sfx(s, d, n, 1, 4, 0); break;                                                            \
        case 310: row_##sfx(s, d, n, 3, 1, 0); break;                                                            \
        case 311: row_##sfx(s, d, n, 3, 1, 1); break;                                                            \
        case 410: row_##sfx(s, d, n, 4, 1, 0); break;                                                            \
        case 411: row_##sfx(s, d, n, 4, 1, 1); break;                                                            \
        default: break; /* the op admits no other combination */                                                \
        }                                                                                                        \
    }

DEFINE_ROW(uint8_t, u8, (uint8_t)255, GRAY_INT)
DEFINE_ROW(uint16_t, u16, (uint16_t)65535, GRAY_INT)
DEFINE_ROW(float, f32, 1.0f, GRAY_F32)

/* Long rows (packed batches are one row) are cut into segments of this many
 * pixels so that they spread over the pool too. */
#define SEG_PIXELS 16384

typedef struct color_job {
    gaio_kimg src, dst;
    gaio_kcolor a;
    int64_t nseg;
    size_t esize;
} color_job;

static void color_range(void *arg, size_t begin, size_t end) {
    const color_job *j = arg;
    for (size_t i = begin; i < end; i++) {
        int64_t r = (int64_t)i / j->nseg, x0 = ((int64_t)i % j->nseg) * SEG_PIXELS;
        int64_t n = j->a.cols - x0 < SEG_PIXELS ? j->a.cols - x0 : SEG_PIXELS;
        int64_t img = r / j->a.rows_per_image, y = r % j->a.rows_per_image;
        const char *s = gaio_kimg_row(&j->src, img, y) + (size_t)x0 * (size_t)j->a.scn * j->esize;
        char *d = gaio_kimg_row(&j->dst, img, y) + (size_t)x0 * (size_t)j->a.dcn * j->esize;
        switch (j->src.dtype) {
        case GAIO_K_U8: rows_u8((const uint8_t *)s, (uint8_t *)d, n, j->a.scn, j->a.dcn, j->a.swap); break;
        case GAIO_K_U16:
            rows_u16((const uint16_t *)(const void *)s, (uint16_t *)(void *)d, n, j->a.scn, j->a.dcn, j->a.swap);
            break;
        default:
            rows_f32((const float *)(const void *)s, (float *)(void *)d, n, j->a.scn, j->a.dcn, j->a.swap);
            break;
        }
    }
}

static gaio_status cvt_color(const gaio_launch_info *info, void *const *args) {
    (void)info;
    color_job j;
    j.src = GAIO_KARG(gaio_kimg, args, 0);
    j.dst = GAIO_KARG(gaio_kimg, args, 1);
    j.a = GAIO_KARG(gaio_kcolor, args, 2);
    j.esize = j.src.dtype == GAIO_K_U8 ? 1 : j.src.dtype == GAIO_K_U16 ? 2 : 4;
    j.nseg = (j.a.cols + SEG_PIXELS - 1) / SEG_PIXELS;
    int64_t seg = j.a.cols < SEG_PIXELS ? j.a.cols : SEG_PIXELS;
    size_t grain = gaio_rows_grain(seg * (j.a.scn + j.a.dcn) * (int64_t)j.esize);
    gaio__parallel_for((size_t)(j.a.rows * j.nseg), grain, color_range, &j);
    return GAIO_OK;
}

/* ---- NV12 / I420 -> RGB ----------------------------------------------------- */

FORCE_INLINE uint8_t yuv_sat(int32_t v) {
    v = v < 0 ? 0 : v >> 20;
    return (uint8_t)(v > 255 ? 255 : v);
}

/* Two output rows sharing one chroma row: each U,V sample covers a 2x2 block
 * (nearest-neighbour chroma, as OpenCV). */
FORCE_INLINE void yuv_pair(const gaio_kyuv *m, const uint8_t *restrict y0, const uint8_t *restrict y1,
                           const uint8_t *restrict u, const uint8_t *restrict v, const int cstep,
                           uint8_t *restrict d0, uint8_t *restrict d1, int64_t cw, const int dcn, const int bidx) {
    /* locals: the stores below cannot change them, so the loop needs no alias checks */
    const int32_t half = 1 << 19, cy = m->cy, r_v = m->r_v, g_u = m->g_u, g_v = m->g_v, b_u = m->b_u;
    const int32_t y_off = m->y_off, y_min = m->y_min;
    for (int64_t i = 0; i < cw; i++) {
        int32_t uu = (int32_t)u[i * cstep] - 128, vv = (int32_t)v[i * cstep] - 128;
        int32_t ruv = half + r_v * vv, guv = half + g_u * uu + g_v * vv, buv = half + b_u * uu;
        for (int k = 0; k < 4; k++) {
            const uint8_t *ys = k < 2 ? y0 : y1;
            uint8_t *o = (k < 2 ? d0 : d1) + (2 * i + (k & 1)) * dcn;
            int32_t yv = (int32_t)ys[2 * i + (k & 1)] - y_off;
            yv = (yv < y_min ? y_min : yv) * cy;
            o[bidx] = yuv_sat(yv + ruv);
            o[1] = yuv_sat(yv + guv);
            o[bidx ^ 2] = yuv_sat(yv + buv);
            if (dcn == 4) o[3] = 255;
        }
    }
}

typedef struct yuv_job {
    gaio_kimg src, dst;
    gaio_kyuv m;
} yuv_job;

static void yuv_range(void *arg, size_t begin, size_t end) {
    const yuv_job *j = arg;
    const gaio_kimg *s = &j->src;
    int64_t hh = s->height / 2, cw = s->width / 2;
    for (size_t p = begin; p < end; p++) {
        int64_t n = (int64_t)p / hh, r = (int64_t)p % hh;
        const uint8_t *base = (const uint8_t *)gaio_kimg_plane(s, n);
        const uint8_t *y0 = base + (uint64_t)(2 * r) * s->row_pitch, *y1 = y0 + s->row_pitch, *u, *v;
        int cstep;
        if (j->m.i420) {
            u = base + s->plane_pitch + (uint64_t)r * (s->row_pitch / 2);
            v = u + s->plane_pitch / 4;
            cstep = 1;
        } else {
            u = base + s->plane_pitch + (uint64_t)r * s->row_pitch;
            v = u + 1;
            cstep = 2;
        }
        uint8_t *d0 = (uint8_t *)gaio_kimg_row(&j->dst, n, 2 * r), *d1 = d0 + j->dst.row_pitch;
        int sel = (j->m.dcn == 4) * 2 + (j->m.bidx == 2);
        if (cstep == 1) {
            switch (sel) {
            case 0: yuv_pair(&j->m, y0, y1, u, v, 1, d0, d1, cw, 3, 0); break;
            case 1: yuv_pair(&j->m, y0, y1, u, v, 1, d0, d1, cw, 3, 2); break;
            case 2: yuv_pair(&j->m, y0, y1, u, v, 1, d0, d1, cw, 4, 0); break;
            default: yuv_pair(&j->m, y0, y1, u, v, 1, d0, d1, cw, 4, 2); break;
            }
        } else {
            switch (sel) {
            case 0: yuv_pair(&j->m, y0, y1, u, v, 2, d0, d1, cw, 3, 0); break;
            case 1: yuv_pair(&j->m, y0, y1, u, v, 2, d0, d1, cw, 3, 2); break;
            case 2: yuv_pair(&j->m, y0, y1, u, v, 2, d0, d1, cw, 4, 0); break;
            default: yuv_pair(&j->m, y0, y1, u, v, 2, d0, d1, cw, 4, 2); break;
            }
        }
    }
}

static gaio_status yuv420_to_rgb(const gaio_launch_info *info, void *const *args) {
    (void)info;
    yuv_job j;
    j.src = GAIO_KARG(gaio_kimg, args, 0);
    j.dst = GAIO_KARG(gaio_kimg, args, 1);
    j.m = GAIO_KARG(gaio_kyuv, args, 2);
    int64_t pairs = (int64_t)j.src.batch * (j.src.height / 2);
    size_t grain = gaio_rows_grain((int64_t)j.src.width * (3 + 2 * j.m.dcn)); /* a pair's bytes, in and out */
    gaio__parallel_for((size_t)pairs, grain, yuv_range, &j);
    return GAIO_OK;
}

static const size_t color_sizes[3] = {sizeof(gaio_kimg), sizeof(gaio_kimg), sizeof(gaio_kcolor)};
static const size_t yuv_sizes[3] = {sizeof(gaio_kimg), sizeof(gaio_kimg), sizeof(gaio_kyuv)};

const gaio_builtin_kernel gaio__img_color_kernels[] = {
    /* the GPU has a kernel per result's channels; the host, one loop nest for all */
    {"gaio_img_cvt_color_u8_to1", cvt_color, 3, color_sizes},
    {"gaio_img_cvt_color_u8_to3", cvt_color, 3, color_sizes},
    {"gaio_img_cvt_color_u8_to4", cvt_color, 3, color_sizes},
    {"gaio_img_cvt_color_u16_to1", cvt_color, 3, color_sizes},
    {"gaio_img_cvt_color_u16_to3", cvt_color, 3, color_sizes},
    {"gaio_img_cvt_color_u16_to4", cvt_color, 3, color_sizes},
    {"gaio_img_cvt_color_f32_to1", cvt_color, 3, color_sizes},
    {"gaio_img_cvt_color_f32_to3", cvt_color, 3, color_sizes},
    {"gaio_img_cvt_color_f32_to4", cvt_color, 3, color_sizes},
    {"gaio_img_yuv420_to_rgb", yuv420_to_rgb, 3, yuv_sizes},
    {"gaio_img_yuv420_to_rgba", yuv420_to_rgb, 3, yuv_sizes},
    {NULL, NULL, 0, NULL},
};
