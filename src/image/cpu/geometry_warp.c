/* Host kernel of warp_affine (registered in geometry.c's table). It computes what
 * OpenCV 4's warpAffine computes, step for step:
 *   coordinates: in double, unfused, X0(y) = round((M1*y + M2) * 1024) + delta and
 *     adelta(x) = round(M0*x*1024) (round = cvRound, nearest even), then
 *     X = (X0 + adelta) >> 10 for NEAREST (delta 512) or >> 5 for LINEAR (delta 16):
 *     positions in 1/32 pixel (INTER_BITS = 5) whose low bits pick the weights;
 *   u8 LINEAR: integer weights (32-fx)(32-fy) ... (OpenCV's 2^15-scaled table is
 *     these times 32, so its rounding shift by 15 equals this one by 10);
 *   u16 / f32 LINEAR: OpenCV's float weights, the four products summed in order
 *     in float, unfused; u16 rounds to nearest even and saturates;
 *   taps outside src take the constant; a pixel whose taps are all outside is the
 *   constant itself.
 * The CUDA twin (src/kernels/image/geometry.cu) does the same arithmetic. */
#include <math.h>
#include <stdlib.h>

#include "image/cpu/host_kernel.h"

#ifdef __clang__
#pragma STDC FP_CONTRACT OFF /* GCC contracts nothing in ISO C mode */
#endif

gaio_status gaio__img_warp_affine_host(const gaio_launch_info *info, void *const *args);

typedef struct warp_job {
    gaio_kimg s, d;
    double m[6]; /* dst -> src */
    int linear;
    float cval[4];
    int64_t *adelta, *bdelta; /* per dst column: round(M0*x*1024), round(M3*x*1024) */
} warp_job;

/* cvRound of a coordinate; clamped far outside any image so that sums stay exact
 * in 64 bits (where OpenCV's int arithmetic would overflow). */
static int64_t round_coord(double v) {
    v = v < -0x1p40 ? -0x1p40 : v > 0x1p40 ? 0x1p40 : v;
    return (int64_t)llrint(v);
}

static uint16_t sat_u16(float v) { return gaio_k_sat_u16(v); }

/* One dst row of plane z for element type T, CN interleaved channels. WSUM
 * computes a LINEAR value from the four taps a..d and the fractions fx, fy. */
#define DEFINE_WARP_ROW(NAME, T, CN, WSUM)                                                                 \
    static void NAME(const warp_job *j, int64_t z, int64_t y, const float *cv) {                          \
        T *out = (T *)gaio_kimg_row(&j->d, z, y);                                                        \
        const int64_t W = j->d.width, sw = j->s.width, sh = j->s.height;                                \
        T cvt[CN];                                                                                       \
        for (int c = 0; c < CN; c++) cvt[c] = (T)cv[c];                                                  \
        const int64_t delta = j->linear ? 16 : 512;                                                      \
        const int64_t X0 = round_coord((j->m[1] * (double)y + j->m[2]) * 1024) + delta;                 \
        const int64_t Y0 = round_coord((j->m[4] * (double)y + j->m[5]) * 1024) + delta;                \
        if (!j->linear) {                                                                                \
            for (int64_t x = 0; x < W; x++, out += CN) {                                                 \
                int64_t sx = (X0 + j->adelta[x]) >> 10, sy = (Y0 + j->bdelta[x]) >> 10;                 \
                if (sx >= 0 && sx < sw && sy >= 0 && sy < sh) {                                          \
                    const T *p = (const T *)gaio_kimg_row(&j->s, z, sy) + sx * CN;                       \
                    for (int c = 0; c < CN; c++) out[c] = p[c];                                          \
                } else {                                                                                 \
                    for (int c = 0; c < CN; c++) out[c] = cvt[c];                                        \
                }                                                                                        \
            }                                                                                            \
            return;                                                                                      \
        }                                                                                                \
        for (int64_t x = 0; x < W; x++, out += CN) {                                                     \
            int64_t X = (X0 + j->adelta[x]) >> 5, Y = (Y0 + j->bdelta[x]) >> 5;                          \
            int64_t sx = X >> 5, sy = Y >> 5;                                                            \
            int fx = (int)(X & 31), fy = (int)(Y & 31);                                                  \
            if (sx >= sw || sx + 1 < 0 || sy >= sh || sy + 1 < 0) {                                      \
                for (int c = 0; c < CN; c++) out[c] = cvt[c];                                            \
                continue;                                                                                \
            }                                                                                            \
            int x0in = sx >= 0, x1in = sx + 1 < sw, y0in = sy >= 0, y1in = sy + 1 < sh;                  \
            const T *r0 = y0in ? (const T *)gaio_kimg_row(&j->s, z, sy) : NULL;                          \
            const T *r1 = y1in ? (const T *)gaio_kimg_row(&j->s, z, sy + 1) : NULL;                      \
            for (int c = 0; c < CN; c++) {                                                               \
                T a = x0in && y0in ? r0[sx * CN + c] : cvt[c];                                           \
                T b = x1in && y0in ? r0[(sx + 1) * CN + c] : cvt[c];                                     \
                T cc = x0in && y1in ? r1[sx * CN + c] : cvt[c];                                          \
                T d = x1in && y1in ? r1[(sx + 1) * CN + c] : cvt[c];                                     \
                out[c] = WSUM(T, a, b, cc, d, fx, fy);                                                   \
            }                                                                                            \
        }                                                                                                \
    }

#define WSUM_INT(T, a, b, c, d, fx, fy)                                                                  \
    (T)(((int)(a) * ((32 - (fx)) * (32 - (fy))) + (int)(b) * ((fx) * (32 - (fy))) +                      \
         (int)(c) * ((32 - (fx)) * (fy)) + (int)(d) * ((fx) * (fy)) + 512) >>                            \
        10)

/* Left to right: ((a*w00 + b*w01) + c*w10) + d*w11, as OpenCV's remapBilinear. */
static float wsum_float(float a, float b, float c, float d, int fx, int fy) {
    float ax = (float)fx * (1.0f / 32), ay = (float)fy * (1.0f / 32);
    float w00 = (1.0f - ay) * (1.0f - ax), w01 = (1.0f - ay) * ax, w10 = ay * (1.0f - ax), w11 = ay * ax;
    return a * w00 + b * w01 + c * w10 + d * w11;
}
#define WSUM_U16(T, a, b, c, d, fx, fy) sat_u16(wsum_float((float)(a), (float)(b), (float)(c), (float)(d), fx, fy))
#define WSUM_F32(T, a, b, c, d, fx, fy) wsum_float(a, b, c, d, fx, fy)

DEFINE_WARP_ROW(warp_u8_1, uint8_t, 1, WSUM_INT)
DEFINE_WARP_ROW(warp_u8_2, uint8_t, 2, WSUM_INT)
DEFINE_WARP_ROW(warp_u8_3, uint8_t, 3, WSUM_INT)
DEFINE_WARP_ROW(warp_u8_4, uint8_t, 4, WSUM_INT)
DEFINE_WARP_ROW(warp_u16_1, uint16_t, 1, WSUM_U16)
DEFINE_WARP_ROW(warp_u16_2, uint16_t, 2, WSUM_U16)
DEFINE_WARP_ROW(warp_u16_3, uint16_t, 3, WSUM_U16)
DEFINE_WARP_ROW(warp_u16_4, uint16_t, 4, WSUM_U16)
DEFINE_WARP_ROW(warp_f32_1, float, 1, WSUM_F32)
DEFINE_WARP_ROW(warp_f32_2, float, 2, WSUM_F32)
DEFINE_WARP_ROW(warp_f32_3, float, 3, WSUM_F32)
DEFINE_WARP_ROW(warp_f32_4, float, 4, WSUM_F32)

typedef void (*warp_row_fn)(const warp_job *j, int64_t z, int64_t y, const float *cv);

static warp_row_fn pick_row(int dtype, int cn) {
    static const warp_row_fn fns[3][4] = {{warp_u8_1, warp_u8_2, warp_u8_3, warp_u8_4},
                                          {warp_u16_1, warp_u16_2, warp_u16_3, warp_u16_4},
                                          {warp_f32_1, warp_f32_2, warp_f32_3, warp_f32_4}};
    int t = dtype == GAIO_K_U8 ? 0 : dtype == GAIO_K_U16 ? 1 : 2;
    return fns[t][cn - 1];
}

static void warp_rows(void *arg, size_t begin, size_t end) {
    const warp_job *j = arg;
    warp_row_fn fn = pick_row(j->d.dtype, j->d.channels);
    for (size_t r = begin; r < end; r++) {
        int64_t z = (int64_t)(r / (size_t)j->d.height), y = (int64_t)(r % (size_t)j->d.height);
        float cv[4] = {j->cval[0], j->cval[1], j->cval[2], j->cval[3]};
        if (j->d.planes > 1) { /* CHW: one value per plane */
            int64_t p = z % j->d.planes;
            cv[0] = p < 4 ? j->cval[p] : 0.0f;
        }
        fn(j, z, y, cv);
    }
}

gaio_status gaio__img_warp_affine_host(const gaio_launch_info *info, void *const *args) {
    (void)info;
    warp_job j = {.s = GAIO_KARG(gaio_kimg, args, 0), .d = GAIO_KARG(gaio_kimg, args, 1)};
    for (int i = 0; i < 6; i++) j.m[i] = GAIO_KARG(double, args, 2 + i);
    j.linear = GAIO_KARG(int32_t, args, 8) != 0; /* GAIO_INTERP_NEAREST is 0; the op passes NEAREST or LINEAR */
    for (int c = 0; c < 4; c++) j.cval[c] = GAIO_KARG(float, args, 9 + c);
    if (j.d.channels < 1 || j.d.channels > 4) return GAIO_ERR_NOT_SUPPORTED;
    j.adelta = malloc(sizeof(int64_t) * 2 * (size_t)j.d.width);
    if (!j.adelta) return GAIO_ERR_NO_MEMORY;
    j.bdelta = j.adelta + j.d.width;
    for (int64_t x = 0; x < j.d.width; x++) {
        j.adelta[x] = round_coord(j.m[0] * (double)x * 1024);
        j.bdelta[x] = round_coord(j.m[3] * (double)x * 1024);
    }
    size_t rows = (size_t)j.d.batch * (size_t)j.d.planes * (size_t)j.d.height;
    int64_t cost = (int64_t)j.d.width * j.d.channels * (j.linear ? 16 : 4); /* rough work per row, in bytes moved */
    gaio__parallel_for(rows, gaio_rows_grain(cost), warp_rows, &j);
    free(j.adelta);
    return GAIO_OK;
}
