/* Host kernels of the value and layout ops: gaio_convert and gaio_normalize here,
 * gaio_reformat in convert_reformat.c.
 *
 * A row is read into a small float buffer, computed there and stored, a chunk at a
 * time: every loop is a plain loop over one dtype that the compiler vectorises, and
 * in-place calls need no special case (a chunk is read before it is written). The
 * arithmetic is the CUDA kernels' (src/kernels/image/convert.cu) in the same order,
 * with no contraction into FMA (ISO C mode), so both backends give the same bits.
 * Rounding to integers and f16 uses branch-free forms of kimg.h's helpers that give
 * the same results for every input, NaN and infinities included. */
#include <string.h>

#include "core/half.h"
#include "image/cpu/host_kernel.h"
#include "image/cpu/tables.h"

gaio_status gaio__img_reformat_host(const gaio_launch_info *info, void *const *args);

#define CHUNK 512          /* floats staged at a time: 2 KiB, in L1 */
#define SEG_CHUNKS 32      /* chunks per work item of the pool: long rows are split */
#define MAX_CHANNELS GAIO_KCHAN_MAX

#include "image/kargs.h"

/* ---- bit-exact element conversions, vectorisable (f16: core/half.h) ---- */

/* Clamping the bits (floats of one sign order as their bit patterns do), then adding
 * 1.5 * 2^23 rounds to an integer, to nearest even, and leaves it in the low
 * mantissa bits: gaio_k_sat_*'s results (rint, then clamp; NaN gives 0). */
#define RND_MAGIC 12582912.0f

static inline uint8_t sat_u8(float v) {
    uint32_t x = f2u(v);
    uint32_t c = sel(x >= 0x437f0000u, 0x437f0000u, x);      /* >= 255, and every negative as unsigned */
    c = sel((int32_t)x <= 0 || x > 0x7f800000u, 0, c);      /* negatives, zeros and NaN */
    return (uint8_t)f2u(u2f(c) + RND_MAGIC);
}
static inline uint16_t sat_u16(float v) {
    uint32_t x = f2u(v);
    uint32_t c = sel(x >= 0x477fff00u, 0x477fff00u, x);      /* 65535 */
    c = sel((int32_t)x <= 0 || x > 0x7f800000u, 0, c);
    return (uint16_t)f2u(u2f(c) + RND_MAGIC);
}
static inline int16_t sat_s16(float v) {
    uint32_t x = f2u(v), sign = x & 0x80000000u, m = x ^ sign;
    uint32_t lim = sel(sign != 0, 0x47000000u, 0x46fffe00u); /* 32768, 32767 */
    uint32_t c = sel(m > lim, sign | lim, x);
    c = sel(m > 0x7f800000u, 0, c);
    return (int16_t)(uint16_t)f2u(u2f(c) + RND_MAGIC);
}

/* ---- row pieces ---- */

static void load_chunk(const char *src, int32_t dt, size_t n, float *t) {
    switch (dt) {
    case GAIO_K_U8: {
        const uint8_t *s = (const uint8_t *)src;
        for (size_t i = 0; i < n; i++) t[i] = (float)s[i];
        break;
    }
    case GAIO_K_U16: {
        const uint16_t *s = (const uint16_t *)src;
        for (size_t i = 0; i < n; i++) t[i] = (float)s[i];
        break;
    }
    case GAIO_K_S16: {
        const int16_t *s = (const int16_t *)src;
        for (size_t i = 0; i < n; i++) t[i] = (float)s[i];
        break;
    }
    case GAIO_K_F16: {
        const uint16_t *s = (const uint16_t *)src;
        for (size_t i = 0; i < n; i++) t[i] = h2f(s[i]);
        break;
    }
    default: memcpy(t, src, n * sizeof(float)); break;
    }
}

static void store_chunk(char *dst, int32_t dt, size_t n, const float *t) {
    switch (dt) {
    case GAIO_K_U8: {
        uint8_t *d = (uint8_t *)dst;
        for (size_t i = 0; i < n; i++) d[i] = sat_u8(t[i]);
        break;
    }
    case GAIO_K_U16: {
        uint16_t *d = (uint16_t *)dst;
        for (size_t i = 0; i < n; i++) d[i] = sat_u16(t[i]);
        break;
    }
    case GAIO_K_S16: {
        int16_t *d = (int16_t *)dst;
        for (size_t i = 0; i < n; i++) d[i] = sat_s16(t[i]);
        break;
    }
    case GAIO_K_F16: {
        uint16_t *d = (uint16_t *)dst;
        for (size_t i = 0; i < n; i++) d[i] = f2h(t[i]);
        break;
    }
    default: memcpy(dst, t, n * sizeof(float)); break;
    }
}

/* ---- gaio_img_convert(gaio_kimg src, gaio_kimg dst, float scale, float offset) ---- */

typedef struct convert_job {
    gaio_kimg s, d;
    float a, b;
    int plain; /* scale 1, offset 0: a conversion without arithmetic */
    size_t es, ed;
    int64_t len, seg, nseg;
} convert_job;

/* The common pairs in one fused loop each (in place is only possible between dtypes
 * of one size, so these may take restrict pointers). */
static bool convert_fast(const convert_job *j, const char *src, char *dst, size_t n) {
    int32_t sd = j->s.dtype, dd = j->d.dtype;
    float a = j->a, b = j->b;
    if (sd == dd && j->plain) {
        if (src != dst) memmove(dst, src, n * j->es);
        return true;
    }
    if (sd == GAIO_K_U8 && dd == GAIO_K_F32) {
        const uint8_t *restrict s = (const uint8_t *)src;
        float *restrict d = (float *)dst;
        for (size_t i = 0; i < n; i++) d[i] = (float)s[i] * a + b;
        return true;
    }
    if (sd == GAIO_K_F32 && dd == GAIO_K_U8) {
        const float *restrict s = (const float *)src;
        uint8_t *restrict d = (uint8_t *)dst;
        if (j->plain)
            for (size_t i = 0; i < n; i++) d[i] = sat_u8(s[i]);
        else
            for (size_t i = 0; i < n; i++) d[i] = sat_u8(s[i] * a + b);
        return true;
    }
    if (sd == GAIO_K_F32 && dd == GAIO_K_F16 && j->plain) {
        const float *restrict s = (const float *)src;
        uint16_t *restrict d = (uint16_t *)dst;
        for (size_t i = 0; i < n; i++) d[i] = f2h(s[i]);
        return true;
    }
    if (sd == GAIO_K_F16 && dd == GAIO_K_F32 && j->plain) {
        const uint16_t *restrict s = (const uint16_t *)src;
        float *restrict d = (float *)dst;
        for (size_t i = 0; i < n; i++) d[i] = h2f(s[i]);
        return true;
    }
    return false;
}

static void convert_span(const convert_job *j, const char *src, char *dst, size_t n) {
    if (convert_fast(j, src, dst, n)) return;
    float t[CHUNK];
    for (size_t i = 0; i < n; i += CHUNK) {
        size_t m = n - i < CHUNK ? n - i : CHUNK;
        load_chunk(src + i * j->es, j->s.dtype, m, t);
        if (!j->plain)
            for (size_t k = 0; k < m; k++) t[k] = t[k] * j->a + j->b;
        store_chunk(dst + i * j->ed, j->d.dtype, m, t);
    }
}

static void convert_range(void *arg, size_t begin, size_t end) {
    const convert_job *j = arg;
    for (size_t it = begin; it < end; it++) {
        int64_t row = (int64_t)it / j->nseg, x0 = ((int64_t)it - row * j->nseg) * j->seg;
        int64_t z = row / j->s.height, y = row - z * j->s.height;
        int64_t n = j->len - x0 < j->seg ? j->len - x0 : j->seg;
        convert_span(j, gaio_kimg_row(&j->s, z, y) + x0 * (int64_t)j->es,
                     gaio_kimg_row(&j->d, z, y) + x0 * (int64_t)j->ed, (size_t)n);
    }
}

static gaio_status img_convert(const gaio_launch_info *info, void *const *args) {
    (void)info;
    convert_job j;
    j.s = GAIO_KARG(gaio_kimg, args, 0);
    j.d = GAIO_KARG(gaio_kimg, args, 1);
    j.a = GAIO_KARG(float, args, 2);
    j.b = GAIO_KARG(float, args, 3);
    j.plain = j.a == 1.0f && j.b == 0.0f;
    j.es = j.s.dtype == GAIO_K_U8 ? 1 : j.s.dtype == GAIO_K_F32 ? 4 : 2;
    j.ed = j.d.dtype == GAIO_K_U8 ? 1 : j.d.dtype == GAIO_K_F32 ? 4 : 2;
    j.len = (int64_t)j.s.width * j.s.channels;
    j.seg = CHUNK * SEG_CHUNKS;
    j.nseg = (j.len + j.seg - 1) / j.seg;
    int64_t rows = (int64_t)j.s.batch * j.s.planes * j.s.height;
    int64_t item_bytes = (j.len < j.seg ? j.len : j.seg) * (int64_t)(j.es + j.ed);
    gaio__parallel_for((size_t)(rows * j.nseg), gaio_rows_grain(item_bytes), convert_range, &j);
    return GAIO_OK;
}

/* ---- gaio_img_normalize(gaio_kimg src, gaio_kimg dst, float scale, gaio_kchan mean,
 *      gaio_kchan inv): dst = (src * scale - mean[c]) * inv[c] ---- */

typedef struct normalize_job {
    gaio_kimg s, d;
    float scale;
    gaio_kchan mean, inv;
    size_t es, ed;
    int64_t len, chunk, seg, nseg;
    /* HWC: mean and inv repeated over a chunk (chunk is a whole number of pixels, and
     * every chunk starts at a pixel), so the inner loop has no channel index. */
    float pm[CHUNK], pi[CHUNK];
} normalize_job;

static void normalize_span(const normalize_job *j, const char *src, char *dst, size_t n, int32_t plane_c) {
    float t[CHUNK];
    float sc = j->scale, m = j->mean.v[plane_c], r = j->inv.v[plane_c];
    for (size_t i = 0; i < n; i += (size_t)j->chunk) {
        size_t cnt = n - i < (size_t)j->chunk ? n - i : (size_t)j->chunk;
        load_chunk(src + i * j->es, j->s.dtype, cnt, t);
        if (j->s.channels > 1)
            for (size_t k = 0; k < cnt; k++) t[k] = (t[k] * sc - j->pm[k]) * j->pi[k];
        else
            for (size_t k = 0; k < cnt; k++) t[k] = (t[k] * sc - m) * r;
        store_chunk(dst + i * j->ed, j->d.dtype, cnt, t);
    }
}

static void normalize_range(void *arg, size_t begin, size_t end) {
    const normalize_job *j = arg;
    for (size_t it = begin; it < end; it++) {
        int64_t row = (int64_t)it / j->nseg, x0 = ((int64_t)it - row * j->nseg) * j->seg;
        int64_t z = row / j->s.height, y = row - z * j->s.height;
        int64_t n = j->len - x0 < j->seg ? j->len - x0 : j->seg;
        int32_t c = (int32_t)(z % j->s.planes); /* CHW: the plane; HWC: planes is 1 */
        normalize_span(j, gaio_kimg_row(&j->s, z, y) + x0 * (int64_t)j->es,
                       gaio_kimg_row(&j->d, z, y) + x0 * (int64_t)j->ed, (size_t)n, c);
    }
}

static gaio_status img_normalize(const gaio_launch_info *info, void *const *args) {
    (void)info;
    normalize_job job, *j = &job;
    j->s = GAIO_KARG(gaio_kimg, args, 0);
    j->d = GAIO_KARG(gaio_kimg, args, 1);
    j->scale = GAIO_KARG(float, args, 2);
    j->mean = GAIO_KARG(gaio_kchan, args, 3);
    j->inv = GAIO_KARG(gaio_kchan, args, 4);
    j->es = j->s.dtype == GAIO_K_U8 ? 1 : j->s.dtype == GAIO_K_F32 ? 4 : 2;
    j->ed = j->d.dtype == GAIO_K_F32 ? 4 : 2;
    int32_t ch = j->s.channels;
    j->chunk = CHUNK / ch * ch;
    for (int64_t k = 0; k < j->chunk; k++) {
        j->pm[k] = j->mean.v[k % ch];
        j->pi[k] = j->inv.v[k % ch];
    }
    j->len = (int64_t)j->s.width * ch;
    j->seg = j->chunk * SEG_CHUNKS;
    j->nseg = (j->len + j->seg - 1) / j->seg;
    int64_t rows = (int64_t)j->s.batch * j->s.planes * j->s.height;
    int64_t item_bytes = (j->len < j->seg ? j->len : j->seg) * (int64_t)(j->es + j->ed);
    gaio__parallel_for((size_t)(rows * j->nseg), gaio_rows_grain(item_bytes), normalize_range, j);
    return GAIO_OK;
}

static const size_t convert_sizes[4] = {sizeof(gaio_kimg), sizeof(gaio_kimg), sizeof(float), sizeof(float)};
static const size_t normalize_sizes[5] = {sizeof(gaio_kimg), sizeof(gaio_kimg), sizeof(float), sizeof(gaio_kchan),
                                          sizeof(gaio_kchan)};
static const size_t reformat_sizes[2] = {sizeof(gaio_kimg), sizeof(gaio_kimg)};

const gaio_builtin_kernel gaio__img_convert_kernels[] = {
    {"gaio_img_convert", img_convert, 4, convert_sizes},
    {"gaio_img_normalize", img_normalize, 5, normalize_sizes},
    {"gaio_img_reformat", gaio__img_reformat_host, 2, reformat_sizes},
    {NULL, NULL, 0, NULL},
};
