/* Host kernels of the geometric ops: crop, copy_make_border, flip and rotate move
 * pixels without touching their bits, so one kernel serves every dtype: a pixel
 * is `channels * element size` bytes (HWC) or one element (each CHW plane).
 * warp_affine is in geometry_warp.c. The CUDA twins are in
 * src/kernels/image/geometry.cu. */
#include "image/cpu/host_kernel.h"
#include "image/cpu/tables.h"
#include "image/border_math.h"

gaio_status gaio__img_warp_affine_host(const gaio_launch_info *info, void *const *args);

static int esize(int dtype) { return dtype == GAIO_K_U8 ? 1 : dtype == GAIO_K_F32 ? 4 : 2; }
static int pixel_bytes(const gaio_kimg *k) { return k->channels * esize(k->dtype); }

/* Pixel moves with the common sizes known at compile time, so that memcpy becomes
 * one or two moves and loops vectorise. */
#define PIXEL_SIZES(X) X(1) X(2) X(3) X(4) X(6) X(8) X(12) X(16)

/* dst[x] = src[n - 1 - x] for n pixels. */
static void reverse_pixels(char *restrict d, const char *restrict s, int64_t n, int pb) {
    switch (pb) {
#define REV(PB)                                                                    \
    case PB:                                                                       \
        for (int64_t x = 0; x < n; x++) memcpy(d + x * PB, s + (n - 1 - x) * PB, PB); \
        return;
        PIXEL_SIZES(REV)
#undef REV
    default:
        for (int64_t x = 0; x < n; x++) memcpy(d + x * pb, s + (n - 1 - x) * pb, (size_t)pb);
    }
}

/* n pixels of dst at stride dstep bytes, from src pixels at stride sstep bytes. */
static void strided_pixels(char *restrict d, int64_t dstep, const char *restrict s, int64_t sstep, int64_t n,
                           int pb) {
    switch (pb) {
#define STR(PB)                                                                    \
    case PB:                                                                       \
        for (int64_t x = 0; x < n; x++) memcpy(d + x * dstep, s + x * sstep, PB); \
        return;
        PIXEL_SIZES(STR)
#undef STR
    default:
        for (int64_t x = 0; x < n; x++) memcpy(d + x * dstep, s + x * sstep, (size_t)pb);
    }
}

/* n copies of one pixel. */
static void fill_pixels(char *restrict d, const char *restrict pix, int64_t n, int pb) {
    switch (pb) {
#define FILL(PB)                                                     \
    case PB:                                                         \
        for (int64_t x = 0; x < n; x++) memcpy(d + x * PB, pix, PB); \
        return;
        PIXEL_SIZES(FILL)
#undef FILL
    default:
        for (int64_t x = 0; x < n; x++) memcpy(d + x * pb, pix, (size_t)pb);
    }
}

/* ---- row ops: work items are (plane, row) pairs ---- */

typedef struct row_job {
    gaio_kimg s, d;
    int pb;
    int mode;                     /* flip */
    int top, left, border;        /* copy_make_border */
    /* copy_make_border: the constant pixel of CHW plane p < 4 (cpix[4]: zeros, for
     * planes past the fourth) or of HWC images (cpix[0]) */
    char cpix[5][256];
} row_job;

static void crop_rows(void *arg, size_t begin, size_t end) {
    const row_job *j = arg;
    size_t bytes = (size_t)j->d.width * (size_t)j->pb;
    for (size_t r = begin; r < end; r++) {
        int64_t z = (int64_t)(r / (size_t)j->d.height), y = (int64_t)(r % (size_t)j->d.height);
        memcpy(gaio_kimg_row(&j->d, z, y), gaio_kimg_row(&j->s, z, y), bytes);
    }
}

static void flip_rows(void *arg, size_t begin, size_t end) {
    const row_job *j = arg;
    int64_t w = j->d.width, h = j->d.height;
    for (size_t r = begin; r < end; r++) {
        int64_t z = (int64_t)(r / (size_t)h), y = (int64_t)(r % (size_t)h);
        const char *s = gaio_kimg_row(&j->s, z, (j->mode & FLIP_VERTICAL) ? h - 1 - y : y);
        char *d = gaio_kimg_row(&j->d, z, y);
        if (j->mode & FLIP_HORIZONTAL) reverse_pixels(d, s, w, j->pb);
        else memcpy(d, s, (size_t)(w * j->pb));
    }
}

static void border_rows(void *arg, size_t begin, size_t end) {
    const row_job *j = arg;
    const int64_t w = j->d.width, h = j->d.height, sw = j->s.width, pb = j->pb;
    for (size_t r = begin; r < end; r++) {
        int64_t z = (int64_t)(r / (size_t)h), y = (int64_t)(r % (size_t)h);
        int64_t p = j->d.planes > 1 ? z % j->d.planes : 0;
        const char *cpix = j->cpix[p < 4 ? p : 4];
        char *d = gaio_kimg_row(&j->d, z, y);
        int sy = gaio_border_index((int)y - j->top, j->s.height, j->border);
        if (sy < 0) {
            fill_pixels(d, cpix, w, (int)pb);
            continue;
        }
        const char *s = gaio_kimg_row(&j->s, z, sy);
        for (int64_t x = 0; x < w; x++) {
            if (x == j->left) { /* the interior, then the right border */
                memcpy(d + x * pb, s, (size_t)(sw * pb));
                x += sw - 1;
                continue;
            }
            int sx = gaio_border_index((int)x - j->left, (int)sw, j->border);
            memcpy(d + x * pb, sx < 0 ? cpix : s + sx * pb, (size_t)pb);
        }
    }
}

static gaio_status run_rows(row_job *j, gaio_range_fn fn) {
    size_t rows = (size_t)j->d.batch * (size_t)j->d.planes * (size_t)j->d.height;
    gaio__parallel_for(rows, gaio_rows_grain((int64_t)j->d.width * j->pb), fn, j);
    return GAIO_OK;
}

static gaio_status k_crop(const gaio_launch_info *info, void *const *args) {
    (void)info;
    row_job j = {.s = GAIO_KARG(gaio_kimg, args, 0), .d = GAIO_KARG(gaio_kimg, args, 1)};
    j.pb = pixel_bytes(&j.d);
    return run_rows(&j, crop_rows);
}

static gaio_status k_flip(const gaio_launch_info *info, void *const *args) {
    (void)info;
    row_job j = {.s = GAIO_KARG(gaio_kimg, args, 0), .d = GAIO_KARG(gaio_kimg, args, 1),
                 .mode = GAIO_KARG(int32_t, args, 2)};
    j.pb = pixel_bytes(&j.d);
    return run_rows(&j, flip_rows);
}

static gaio_status k_border(const gaio_launch_info *info, void *const *args) {
    (void)info;
    row_job job = {0}, *j = &job;
    j->s = GAIO_KARG(gaio_kimg, args, 0);
    j->d = GAIO_KARG(gaio_kimg, args, 1);
    j->top = GAIO_KARG(int32_t, args, 2);
    j->left = GAIO_KARG(int32_t, args, 3);
    j->border = GAIO_KARG(int32_t, args, 4);
    j->pb = pixel_bytes(&j->d);
    uint32_t cbits[4];
    for (int c = 0; c < 4; c++) cbits[c] = GAIO_KARG(uint32_t, args, 5 + c);
    /* Channels (HWC) or planes (CHW) past the fourth have no value: the op lets
     * them through only with value NULL, i.e. zeros. */
    int e = esize(j->d.dtype);
    for (int p = 0; p < 4; p++)
        for (int t = 0; t < j->pb; t++) {
            int c = j->d.planes > 1 ? p : t / e;
            j->cpix[p][t] = (char)(c < 4 ? (uint8_t)(cbits[c] >> (8 * (t % e))) : 0);
        }
    return run_rows(j, border_rows);
}

/* ---- rotate 90 / 270: tiles of 32 x 32 dst pixels, items are (plane, 32-row band) ---- */

#define ROT_TILE 32

typedef struct rot_job {
    gaio_kimg s, d;
    int pb, degrees;
    int64_t bands;
} rot_job;

static void rotate_bands(void *arg, size_t begin, size_t end) {
    const rot_job *j = arg;
    const int64_t W = j->d.width, H = j->d.height, sw = j->s.width, sh = j->s.height, pb = j->pb;
    const int64_t srp = (int64_t)j->s.row_pitch;
    for (size_t item = begin; item < end; item++) {
        int64_t z = (int64_t)(item / (size_t)j->bands), r0 = (int64_t)(item % (size_t)j->bands) * ROT_TILE;
        int64_t r1 = r0 + ROT_TILE < H ? r0 + ROT_TILE : H;
        const char *sp = gaio_kimg_plane(&j->s, z);
        for (int64_t c0 = 0; c0 < W; c0 += ROT_TILE) {
            int64_t n = W - c0 < ROT_TILE ? W - c0 : ROT_TILE;
            for (int64_t r = r0; r < r1; r++) {
                char *d = gaio_kimg_row(&j->d, z, r) + c0 * pb;
                /* 90: dst(r, c) = src(row sh-1-c, col r), walking src rows upward;
                 * 270: dst(r, c) = src(row c, col sw-1-r), walking them downward. */
                if (j->degrees == 90) strided_pixels(d, pb, sp + (sh - 1 - c0) * srp + r * pb, -srp, n, (int)pb);
                else strided_pixels(d, pb, sp + c0 * srp + (sw - 1 - r) * pb, srp, n, (int)pb);
            }
        }
    }
}

static gaio_status k_rotate(const gaio_launch_info *info, void *const *args) {
    (void)info;
    int32_t degrees = GAIO_KARG(int32_t, args, 2);
    if (degrees == 180) {
        row_job j = {.s = GAIO_KARG(gaio_kimg, args, 0), .d = GAIO_KARG(gaio_kimg, args, 1),
                     .mode = FLIP_HORIZONTAL | FLIP_VERTICAL};
        j.pb = pixel_bytes(&j.d);
        return run_rows(&j, flip_rows);
    }
    rot_job j = {.s = GAIO_KARG(gaio_kimg, args, 0), .d = GAIO_KARG(gaio_kimg, args, 1), .degrees = degrees};
    j.pb = pixel_bytes(&j.d);
    j.bands = (j.d.height + ROT_TILE - 1) / ROT_TILE;
    size_t items = (size_t)j.d.batch * (size_t)j.d.planes * (size_t)j.bands;
    gaio__parallel_for(items, gaio_rows_grain((int64_t)j.d.width * j.pb * ROT_TILE), rotate_bands, &j);
    return GAIO_OK;
}

#define K sizeof(gaio_kimg)
static const size_t crop_sizes[] = {K, K};
static const size_t flip_sizes[] = {K, K, 4};
static const size_t border_sizes[] = {K, K, 4, 4, 4, 4, 4, 4, 4};
static const size_t rotate_sizes[] = {K, K, 4};
static const size_t warp_sizes[] = {K, K, 8, 8, 8, 8, 8, 8, 4, 4, 4, 4, 4};
#undef K

const gaio_builtin_kernel gaio__img_geometry_kernels[] = {
    {"gaio_img_crop", k_crop, 2, crop_sizes},
    {"gaio_img_flip", k_flip, 3, flip_sizes},
    {"gaio_img_copy_make_border", k_border, 9, border_sizes},
    {"gaio_img_rotate", k_rotate, 3, rotate_sizes},
    {"gaio_img_warp_affine", gaio__img_warp_affine_host, 13, warp_sizes},
    {NULL, NULL, 0, NULL},
};
