/* Host kernel of gaio_reformat: gaio_img_reformat(gaio_kimg src, gaio_kimg dst).
 * The channels of a pixel are interleaved on one side and in planes on the other;
 * values move bit for bit, so only the element size matters. */
#include <string.h>

#include "image/cpu/host_kernel.h"

gaio_status gaio__img_reformat_host(const gaio_launch_info *info, void *const *args);

#define SEG_PIXELS 8192 /* pixels per work item of the pool: long rows are split */
#define MAX_CHANNELS 64

/* Loops per channel count with restrict pointers, so that the compiler vectorises
 * the interleaved side's strided accesses. */
#define REFORMAT_FNS(T)                                                                                        \
    static void split2_##T(const T *restrict s, T *restrict d0, T *restrict d1, size_t n) {                  \
        for (size_t x = 0; x < n; x++) {                                                                       \
            d0[x] = s[2 * x];                                                                                  \
            d1[x] = s[2 * x + 1];                                                                              \
        }                                                                                                      \
    }                                                                                                          \
    static void split3_##T(const T *restrict s, T *restrict d0, T *restrict d1, T *restrict d2, size_t n) {  \
        for (size_t x = 0; x < n; x++) {                                                                       \
            d0[x] = s[3 * x];                                                                                  \
            d1[x] = s[3 * x + 1];                                                                              \
            d2[x] = s[3 * x + 2];                                                                              \
        }                                                                                                      \
    }                                                                                                          \
    static void split4_##T(const T *restrict s, T *restrict d0, T *restrict d1, T *restrict d2,              \
                           T *restrict d3, size_t n) {                                                         \
        for (size_t x = 0; x < n; x++) {                                                                       \
            d0[x] = s[4 * x];                                                                                  \
            d1[x] = s[4 * x + 1];                                                                              \
            d2[x] = s[4 * x + 2];                                                                              \
            d3[x] = s[4 * x + 3];                                                                              \
        }                                                                                                      \
    }                                                                                                          \
    static void split1_##T(const T *restrict s, T *restrict d, int32_t c, size_t n) {                        \
        for (size_t x = 0; x < n; x++) d[x] = s[(size_t)c * x];                                                \
    }                                                                                                          \
    static void merge2_##T(const T *restrict s0, const T *restrict s1, T *restrict d, size_t n) {            \
        for (size_t x = 0; x < n; x++) {                                                                       \
            d[2 * x] = s0[x];                                                                                  \
            d[2 * x + 1] = s1[x];                                                                              \
        }                                                                                                      \
    }                                                                                                          \
    static void merge3_##T(const T *restrict s0, const T *restrict s1, const T *restrict s2, T *restrict d,  \
                           size_t n) {                                                                         \
        for (size_t x = 0; x < n; x++) {                                                                       \
            d[3 * x] = s0[x];                                                                                  \
            d[3 * x + 1] = s1[x];                                                                              \
            d[3 * x + 2] = s2[x];                                                                              \
        }                                                                                                      \
    }                                                                                                          \
    static void merge4_##T(const T *restrict s0, const T *restrict s1, const T *restrict s2,                 \
                           const T *restrict s3, T *restrict d, size_t n) {                                    \
        for (size_t x = 0; x < n; x++) {                                                                       \
            d[4 * x] = s0[x];                                                                                  \
            d[4 * x + 1] = s1[x];                                                                              \
            d[4 * x + 2] = s2[x];                                                                              \
            d[4 * x + 3] = s3[x];                                                                              \
        }                                                                                                      \
    }                                                                                                          \
    static void merge1_##T(const T *restrict s, T *restrict d, int32_t c, size_t n) {                        \
        for (size_t x = 0; x < n; x++) d[(size_t)c * x] = s[x];                                                \
    }                                                                                                          \
    /* p: the planes; i: the interleaved row */                                                                \
    static void reformat_##T(char *const *p, char *i, int32_t c, size_t n, int to_planar) {                   \
        T *v = (T *)i;                                                                                         \
        if (to_planar) {                                                                                       \
            if (c == 2) split2_##T(v, (T *)p[0], (T *)p[1], n);                                                \
            else if (c == 3) split3_##T(v, (T *)p[0], (T *)p[1], (T *)p[2], n);                                \
            else if (c == 4) split4_##T(v, (T *)p[0], (T *)p[1], (T *)p[2], (T *)p[3], n);                     \
            else                                                                                               \
                for (int32_t k = 0; k < c; k++) split1_##T(v + k, (T *)p[k], c, n);                            \
        } else {                                                                                               \
            if (c == 2) merge2_##T((T *)p[0], (T *)p[1], v, n);                                                \
            else if (c == 3) merge3_##T((T *)p[0], (T *)p[1], (T *)p[2], v, n);                                \
            else if (c == 4) merge4_##T((T *)p[0], (T *)p[1], (T *)p[2], (T *)p[3], v, n);                     \
            else                                                                                               \
                for (int32_t k = 0; k < c; k++) merge1_##T((T *)p[k], v + k, c, n);                            \
        }                                                                                                      \
    }

/* u8 with 3 channels, the commonest case, which GCC does not vectorise without byte
 * shuffles (SSSE3): 4 pixels at a time in 32-bit words (little endian). */
static inline uint32_t ld32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}
static inline void st32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }

static void split3_u8_words(const uint8_t *restrict s, uint8_t *restrict d0, uint8_t *restrict d1,
                            uint8_t *restrict d2, size_t n) {
    size_t x = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    for (; x + 4 <= n; x += 4) {
        uint32_t a = ld32(s + 3 * x), b = ld32(s + 3 * x + 4), c = ld32(s + 3 * x + 8); /* bytes 0-3, 4-7, 8-11 */
        st32(d0 + x, (a & 0xffu) | ((a >> 16) & 0xff00u) | (b & 0xff0000u) | ((c << 16) & 0xff000000u));
        st32(d1 + x, ((a >> 8) & 0xffu) | ((b << 8) & 0xff00u) | ((b >> 8) & 0xff0000u) | ((c << 8) & 0xff000000u));
        st32(d2 + x, ((a >> 16) & 0xffu) | (b & 0xff00u) | ((c << 16) & 0xff0000u) | (c & 0xff000000u));
    }
#endif
    for (; x < n; x++) {
        d0[x] = s[3 * x];
        d1[x] = s[3 * x + 1];
        d2[x] = s[3 * x + 2];
    }
}

static void merge3_u8_words(const uint8_t *restrict s0, const uint8_t *restrict s1, const uint8_t *restrict s2,
                            uint8_t *restrict d, size_t n) {
    size_t x = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    for (; x + 4 <= n; x += 4) {
        uint32_t p = ld32(s0 + x), q = ld32(s1 + x), r = ld32(s2 + x); /* 4 pixels of each plane */
        st32(d + 3 * x, (p & 0xffu) | ((q & 0xffu) << 8) | ((r & 0xffu) << 16) | ((p & 0xff00u) << 16));
        st32(d + 3 * x + 4, ((q >> 8) & 0xffu) | (r & 0xff00u) | (p & 0xff0000u) | ((q & 0xff0000u) << 8));
        st32(d + 3 * x + 8, ((r >> 16) & 0xffu) | ((p >> 16) & 0xff00u) | ((q >> 8) & 0xff0000u) | (r & 0xff000000u));
    }
#endif
    for (; x < n; x++) {
        d[3 * x] = s0[x];
        d[3 * x + 1] = s1[x];
        d[3 * x + 2] = s2[x];
    }
}

REFORMAT_FNS(uint8_t)
REFORMAT_FNS(uint16_t)
REFORMAT_FNS(uint32_t)

typedef struct reformat_job {
    gaio_kimg s, d;
    int32_t c;
    int to_planar;
    size_t e;
    int64_t nseg;
} reformat_job;

static void reformat_range(void *arg, size_t begin, size_t end) {
    const reformat_job *j = arg;
    const gaio_kimg *pl = j->to_planar ? &j->d : &j->s, *il = j->to_planar ? &j->s : &j->d;
    int64_t h = j->s.height, w = j->s.width;
    for (size_t it = begin; it < end; it++) {
        int64_t row = (int64_t)it / j->nseg, x0 = ((int64_t)it - row * j->nseg) * SEG_PIXELS;
        int64_t n = row / h, y = row - n * h, cnt = w - x0 < SEG_PIXELS ? w - x0 : SEG_PIXELS;
        char *planes[MAX_CHANNELS];
        for (int32_t k = 0; k < j->c; k++) planes[k] = gaio_kimg_row(pl, n * j->c + k, y) + x0 * (int64_t)j->e;
        char *inter = gaio_kimg_row(il, n, y) + x0 * j->c * (int64_t)j->e;
        if (j->c == 1) {
            if (j->to_planar) memcpy(planes[0], inter, (size_t)cnt * j->e);
            else memcpy(inter, planes[0], (size_t)cnt * j->e);
            continue;
        }
        if (j->e == 1 && j->c == 3) {
            uint8_t *v = (uint8_t *)inter, *p0 = (uint8_t *)planes[0], *p1 = (uint8_t *)planes[1],
                    *p2 = (uint8_t *)planes[2];
            if (j->to_planar) split3_u8_words(v, p0, p1, p2, (size_t)cnt);
            else merge3_u8_words(p0, p1, p2, v, (size_t)cnt);
            continue;
        }
        switch (j->e) {
        case 1: reformat_uint8_t(planes, inter, j->c, (size_t)cnt, j->to_planar); break;
        case 2: reformat_uint16_t(planes, inter, j->c, (size_t)cnt, j->to_planar); break;
        default: reformat_uint32_t(planes, inter, j->c, (size_t)cnt, j->to_planar); break;
        }
    }
}

gaio_status gaio__img_reformat_host(const gaio_launch_info *info, void *const *args) {
    (void)info;
    reformat_job j;
    j.s = GAIO_KARG(gaio_kimg, args, 0);
    j.d = GAIO_KARG(gaio_kimg, args, 1);
    j.to_planar = j.s.planes == 1; /* with one channel both sides are one plane: a copy either way */
    j.c = j.to_planar ? j.d.planes : j.s.planes;
    j.e = j.s.dtype == GAIO_K_U8 ? 1 : j.s.dtype == GAIO_K_F32 ? 4 : 2;
    j.nseg = ((int64_t)j.s.width + SEG_PIXELS - 1) / SEG_PIXELS;
    int64_t rows = (int64_t)j.s.batch * j.s.height;
    int64_t w = j.s.width < SEG_PIXELS ? j.s.width : SEG_PIXELS;
    gaio__parallel_for((size_t)(rows * j.nseg), gaio_rows_grain(w * j.c * (int64_t)j.e * 2), reformat_range, &j);
    return GAIO_OK;
}
