/* gaio_transpose and gaio_concat on each backend against a direct reference computed
 * here: random permutations of 2- to 5-D tensors, NCHW <-> NHWC of [33, 3, 7, 5],
 * packed, NHWC and strided (sliced) views on either side with element offsets,
 * concats of 1, 2, 5 and 64 inputs along each axis (negative axes too) with inputs of
 * different sizes along it; f32 and f16; bad input.
 *
 * Tolerance: none. These ops move elements, so every element of y must hold the
 * bits of its source, and every element of y's buffer outside the view keep its bits. */
#include <stdbool.h>

#include "common.h"
#include "half.h"

typedef struct env {
    gaio_context *ctx;
    gaio_stream *s;
    uint64_t rng;
    bool cuda;
} env;

static float rnd(uint64_t *r) { return (float)((double)(test_rand(r) >> 11) / 9007199254740992.0 * 2.0 - 1.0); }

static size_t esize(gaio_dtype dt) { return dt == GAIO_DTYPE_F16 ? 2 : 4; }

enum { PACKED = 0, NHWC = 1, STRIDED = 2, MODES = 3, ALIGNED = 16 /* or'd in: no element offset */ };

/* A tensor over a device buffer of its own, and what the test knows of it: resolved
 * element strides, the element offset, and the buffer's contents (raw element bits). */
typedef struct ht {
    gaio_tensor t;
    int64_t str[GAIO_TENSOR_MAX_NDIM], off;
    size_t nel;
    uint32_t *host; /* one element a word */
} ht;

static void ht_make(env *e, ht *h, gaio_dtype dt, int32_t ndim, const int64_t *shape, int mode) {
    memset(h, 0, sizeof *h);
    bool aligned = (mode & ALIGNED) != 0;
    mode &= ~ALIGNED;
    if (mode == NHWC && ndim != 4 && ndim != 5) mode = STRIDED;
    int64_t acc = 1;
    if (mode == PACKED) {
        for (int32_t i = ndim - 1; i >= 0; i--) h->str[i] = acc, acc *= shape[i];
    } else if (mode == NHWC) {
        h->str[1] = 1, acc = shape[1];
        for (int32_t i = ndim - 1; i >= 2; i--) h->str[i] = acc, acc *= shape[i];
        h->str[0] = acc;
    } else { /* a slice of a larger tensor whose dimensions lie in a random order */
        int32_t order[GAIO_TENSOR_MAX_NDIM];
        for (int32_t i = 0; i < ndim; i++) order[i] = i;
        for (int32_t i = ndim - 1; i > 0; i--) {
            int32_t j = (int32_t)(test_rand(&e->rng) % (uint64_t)(i + 1)), t = order[i];
            order[i] = order[j], order[j] = t;
        }
        acc = 1 + (int64_t)(test_rand(&e->rng) % 2);
        for (int32_t k = ndim - 1; k >= 0; k--) {
            int32_t d = order[k];
            h->str[d] = acc;
            acc *= shape[d] + (int64_t)(test_rand(&e->rng) % 3);
        }
    }
    h->off = aligned ? 0 : (int64_t)(test_rand(&e->rng) % 6);
    int64_t span = 1;
    for (int32_t i = 0; i < ndim; i++) span += (shape[i] - 1) * h->str[i];
    h->nel = (size_t)(h->off + span + (int64_t)(test_rand(&e->rng) % 4));
    h->host = malloc(h->nel * sizeof *h->host);
    CHECK(h->host);
    size_t es = esize(dt);
    gaio_buffer *stage, *dev;
    OK(gaio_buffer_alloc(e->ctx, GAIO_MEM_PINNED, h->nel * es, &stage));
    OK(gaio_buffer_alloc(e->ctx, GAIO_MEM_DEVICE, h->nel * es, &dev));
    void *p;
    OK(gaio_buffer_host_ptr(stage, &p));
    for (size_t i = 0; i < h->nel; i++) {
        float f = rnd(&e->rng);
        if (f == 0) f = 0.5f;
        if (dt == GAIO_DTYPE_F16) {
            uint16_t v = to_half(f);
            h->host[i] = v;
            memcpy((char *)p + i * 2, &v, 2);
        } else {
            memcpy(&h->host[i], &f, 4);
            memcpy((char *)p + i * 4, &f, 4);
        }
    }
    OK(gaio_memcpy_async(e->s, dev, 0, stage, 0, h->nel * es));
    OK(gaio_buffer_release(stage));
    h->t = gaio_tensor_make(dev, (size_t)h->off * es, dt, ndim, shape,
                            mode == NHWC ? GAIO_TENSOR_NHWC : GAIO_TENSOR_ROW_MAJOR);
    if (mode == STRIDED)
        for (int32_t i = 0; i < ndim; i++) h->t.strides[i] = h->str[i];
}

/* The buffer's contents now, one element a word. */
static uint32_t *ht_read(env *e, const ht *h) {
    size_t es = esize(h->t.dtype);
    gaio_buffer *stage;
    OK(gaio_buffer_alloc(e->ctx, GAIO_MEM_PINNED, h->nel * es, &stage));
    OK(gaio_memcpy_async(e->s, stage, 0, h->t.buffer, 0, h->nel * es));
    OK(gaio_stream_synchronize(e->s));
    void *p;
    OK(gaio_buffer_host_ptr(stage, &p));
    uint32_t *out = malloc(h->nel * sizeof *out);
    CHECK(out);
    for (size_t i = 0; i < h->nel; i++) {
        uint16_t v16;
        if (es == 2) memcpy(&v16, (char *)p + i * 2, 2), out[i] = v16;
        else memcpy(&out[i], (char *)p + i * 4, 4);
    }
    OK(gaio_buffer_release(stage));
    return out;
}

static void ht_free(ht *h) {
    OK(gaio_buffer_release(h->t.buffer));
    free(h->host);
}

/* Element index in the buffer of coordinates c. */
static int64_t at(const ht *h, const int64_t *c) {
    int64_t o = h->off;
    for (int32_t i = 0; i < h->t.ndim; i++) o += c[i] * h->str[i];
    return o;
}

/* Steps c through shape like an odometer; false after the last. */
static bool next(int32_t n, const int64_t *shape, int64_t *c) {
    for (int32_t d = n - 1; d >= 0; d--) {
        if (++c[d] < shape[d]) return true;
        c[d] = 0;
    }
    return false;
}

static void compare(const char *what, const ht *y, const uint32_t *want, const uint32_t *got) {
    for (size_t i = 0; i < y->nel; i++)
        if (want[i] != got[i]) {
            fprintf(stderr, "%s (%s, %d-D): element %zu of y's buffer is 0x%x, want 0x%x\n", what,
                    gaio_dtype_name(y->t.dtype), (int)y->t.ndim, i, (unsigned)got[i], (unsigned)want[i]);
            exit(1);
        }
}

static void run_transpose(env *e, gaio_dtype dt, int32_t n, const int64_t *xshape, const int32_t *perm, int xm,
                          int ym) {
    int64_t yshape[GAIO_TENSOR_MAX_NDIM];
    for (int32_t i = 0; i < n; i++) yshape[i] = xshape[perm[i]];
    ht x, y;
    ht_make(e, &x, dt, n, xshape, xm);
    ht_make(e, &y, dt, n, yshape, ym);
    OK(gaio_transpose(e->s, &x.t, &y.t, perm));
    uint32_t *got = ht_read(e, &y);
    uint32_t *want = malloc(y.nel * sizeof *want);
    CHECK(want);
    memcpy(want, y.host, y.nel * sizeof *want);
    int64_t c[GAIO_TENSOR_MAX_NDIM] = {0}, xc[GAIO_TENSOR_MAX_NDIM];
    do {
        for (int32_t i = 0; i < n; i++) xc[perm[i]] = c[i];
        want[at(&y, c)] = x.host[at(&x, xc)];
    } while (next(n, yshape, c));
    compare("transpose", &y, want, got);
    free(got);
    free(want);
    ht_free(&x);
    ht_free(&y);
}

static void test_transpose(env *e) {
    const gaio_dtype F32 = GAIO_DTYPE_F32, F16 = GAIO_DTYPE_F16;
    /* NCHW <-> NHWC, as a permutation of dimensions and as a change of layout. */
    const int64_t nchw[4] = {33, 3, 7, 5}, nhwc[4] = {33, 7, 5, 3};
    const int32_t to_nhwc[4] = {0, 2, 3, 1}, to_nchw[4] = {0, 3, 1, 2}, same[5] = {0, 1, 2, 3, 4};
    for (int dt = 0; dt < 2; dt++) {
        gaio_dtype d = dt ? F16 : F32;
        run_transpose(e, d, 4, nchw, to_nhwc, PACKED, PACKED);
        run_transpose(e, d, 4, nhwc, to_nchw, PACKED, PACKED);
        run_transpose(e, d, 4, nchw, same, PACKED, NHWC);
        run_transpose(e, d, 4, nchw, same, NHWC, PACKED);
        run_transpose(e, d, 4, nchw, to_nhwc, STRIDED, PACKED);
        run_transpose(e, d, 4, nhwc, to_nchw, PACKED, STRIDED);
    }
    /* Odd shapes: 1-D, all ones, a long row, batch 1. */
    run_transpose(e, F32, 1, (int64_t[]){1000}, same, STRIDED, PACKED);
    run_transpose(e, F16, 5, (int64_t[]){1, 1, 1, 1, 1}, (int32_t[]){4, 2, 0, 1, 3}, PACKED, PACKED);
    run_transpose(e, F32, 2, (int64_t[]){1, 4099}, (int32_t[]){1, 0}, PACKED, PACKED);
    run_transpose(e, F32, 2, (int64_t[]){513, 300}, (int32_t[]){1, 0}, PACKED, PACKED);
    run_transpose(e, F16, 3, (int64_t[]){1, 67, 129}, (int32_t[]){0, 2, 1}, PACKED, STRIDED);
    /* The last dimension kept, rows of 16-byte vectors (the CUDA kernel's vector path):
     * attention's head splits and merges, ViT's move to tokens first, a 5-D one, and
     * rows of 8 bytes or an element offset that keep it off the path. */
    run_transpose(e, F16, 4, (int64_t[]){5, 7, 3, 16}, (int32_t[]){0, 2, 1, 3}, PACKED | ALIGNED, PACKED | ALIGNED);
    run_transpose(e, F16, 3, (int64_t[]){4, 6, 24}, (int32_t[]){1, 0, 2}, PACKED | ALIGNED, PACKED | ALIGNED);
    run_transpose(e, F32, 5, (int64_t[]){2, 3, 5, 4, 8}, (int32_t[]){3, 0, 2, 1, 4}, PACKED | ALIGNED, PACKED | ALIGNED);
    run_transpose(e, F16, 4, (int64_t[]){3, 4, 5, 8}, (int32_t[]){2, 0, 1, 3}, NHWC | ALIGNED, PACKED | ALIGNED);
    run_transpose(e, F16, 3, (int64_t[]){4, 6, 4}, (int32_t[]){1, 0, 2}, PACKED | ALIGNED, PACKED | ALIGNED);
    run_transpose(e, F16, 3, (int64_t[]){4, 6, 24}, (int32_t[]){1, 0, 2}, PACKED, PACKED);
    /* Random permutations of 2- to 5-D tensors, any mix of views. */
    for (int r = 0; r < 60; r++) {
        int32_t n = 2 + (int32_t)(test_rand(&e->rng) % 4);
        int64_t shape[GAIO_TENSOR_MAX_NDIM];
        int32_t perm[GAIO_TENSOR_MAX_NDIM];
        for (int32_t i = 0; i < n; i++) {
            shape[i] = 1 + (int64_t)(test_rand(&e->rng) % (n > 3 ? 6 : 20));
            perm[i] = i;
        }
        for (int32_t i = n - 1; i > 0; i--) {
            int32_t j = (int32_t)(test_rand(&e->rng) % (uint64_t)(i + 1)), t = perm[i];
            perm[i] = perm[j], perm[j] = t;
        }
        run_transpose(e, (test_rand(&e->rng) & 1) ? F16 : F32, n, shape, perm, (int)(test_rand(&e->rng) % MODES),
                      (int)(test_rand(&e->rng) % MODES));
    }
}

/* count inputs whose sizes along `axis` are sizes[], other dimensions `shape`. */
/* mode: every tensor's layout, -1 for random ones. */
static void run_concat(env *e, gaio_dtype dt, int32_t n, const int64_t *shape, int32_t axis, int32_t count,
                       const int64_t *sizes, int mode) {
    const bool random_modes = mode < 0;
    int32_t ax = axis < 0 ? axis + n : axis;
    ht *xs = calloc((size_t)count, sizeof *xs);
    const gaio_tensor **tp = calloc((size_t)count, sizeof *tp);
    CHECK(xs && tp);
    int64_t yshape[GAIO_TENSOR_MAX_NDIM] = {0};
    for (int32_t i = 0; i < n; i++) yshape[i] = shape[i];
    yshape[ax] = 0;
    for (int32_t j = 0; j < count; j++) {
        int64_t s[GAIO_TENSOR_MAX_NDIM] = {0};
        for (int32_t i = 0; i < n; i++) s[i] = shape[i];
        s[ax] = sizes[j];
        yshape[ax] += sizes[j];
        ht_make(e, &xs[j], dt, n, s, random_modes ? (int)(test_rand(&e->rng) % MODES) : mode);
        tp[j] = &xs[j].t;
    }
    ht y;
    ht_make(e, &y, dt, n, yshape, random_modes ? (int)(test_rand(&e->rng) % MODES) : mode);
    OK(gaio_concat(e->s, tp, count, axis, &y.t));
    uint32_t *got = ht_read(e, &y);
    uint32_t *want = malloc(y.nel * sizeof *want);
    CHECK(want);
    memcpy(want, y.host, y.nel * sizeof *want);
    int64_t base = 0;
    for (int32_t j = 0; j < count; j++) {
        int64_t c[GAIO_TENSOR_MAX_NDIM] = {0}, yc[GAIO_TENSOR_MAX_NDIM];
        do {
            memcpy(yc, c, sizeof yc);
            yc[ax] += base;
            want[at(&y, yc)] = xs[j].host[at(&xs[j], c)];
        } while (next(n, xs[j].t.shape, c));
        base += sizes[j];
    }
    compare("concat", &y, want, got);
    free(got);
    free(want);
    for (int32_t j = 0; j < count; j++) ht_free(&xs[j]);
    ht_free(&y);
    free(xs);
    free(tp);
}

static void test_concat(env *e) {
    const gaio_dtype F32 = GAIO_DTYPE_F32, F16 = GAIO_DTYPE_F16;
    const int32_t counts[3] = {1, 2, 5};
    for (int32_t n = 1; n <= 5; n++)
        for (int32_t ax = 0; ax < n; ax++)
            for (int ci = 0; ci < 3; ci++) {
                int64_t shape[GAIO_TENSOR_MAX_NDIM] = {0}, sizes[5];
                for (int32_t i = 0; i < n; i++) shape[i] = 1 + (int64_t)(test_rand(&e->rng) % (n > 3 ? 5 : 13));
                for (int j = 0; j < counts[ci]; j++) sizes[j] = 1 + (int64_t)(test_rand(&e->rng) % 6);
                gaio_dtype dt = (test_rand(&e->rng) & 1) ? F16 : F32;
                int32_t axis = (test_rand(&e->rng) & 1) ? ax - n : ax; /* negative from the end */
                run_concat(e, dt, n, shape, axis, counts[ci], sizes, -1);
                run_concat(e, dt, n, shape, axis, counts[ci], sizes, PACKED);
            }
    /* Channels of NCHW feature maps (Inception, DenseNet), batch 33, 1x1 spatial. */
    run_concat(e, F16, 4, (int64_t[]){33, 0, 7, 5}, 1, 3, (int64_t[]){3, 16, 1}, PACKED);
    run_concat(e, F32, 4, (int64_t[]){33, 0, 1, 1}, -3, 2, (int64_t[]){5, 7}, -1);
    run_concat(e, F32, 2, (int64_t[]){300, 0}, -1, 2, (int64_t[]){129, 1}, PACKED);
    /* Channels of NHWC feature maps (DenseNet's, SqueezeNet's): rows of 16-byte vectors
     * on a GPU where channel counts and row pitches allow, elements where they do not. */
    run_concat(e, F16, 4, (int64_t[]){3, 9, 11, 0}, 3, 3, (int64_t[]){64, 32, 8}, PACKED);
    run_concat(e, F16, 4, (int64_t[]){2, 14, 14, 0}, -1, 2, (int64_t[]){256, 32}, PACKED);
    run_concat(e, F32, 4, (int64_t[]){2, 5, 7, 0}, -1, 3, (int64_t[]){4, 8, 12}, PACKED);
    run_concat(e, F16, 4, (int64_t[]){2, 5, 7, 0}, 3, 2, (int64_t[]){8, 4}, PACKED);  /* rows of 24 bytes */
    run_concat(e, F16, 1, (int64_t[]){0}, 0, 2, (int64_t[]){1000, 24}, PACKED);      /* long packed slabs */
    run_concat(e, F16, 1, (int64_t[]){0}, 0, 3, (int64_t[]){3, 16, 8}, PACKED);       /* misaligned slabs */
    /* The engine's form: NCHW shapes stored NHWC, concatenated along dimension 1. */
    run_concat(e, F16, 4, (int64_t[]){3, 0, 9, 11}, 1, 3, (int64_t[]){64, 32, 8}, NHWC | ALIGNED);
    run_concat(e, F32, 4, (int64_t[]){2, 0, 5, 7}, 1, 2, (int64_t[]){12, 20}, NHWC | ALIGNED);
    run_concat(e, F16, 4, (int64_t[]){2, 0, 5, 7}, 1, 2, (int64_t[]){12, 20}, NHWC | ALIGNED); /* 24-byte rows */
    /* The most inputs one call takes. */
    int64_t sizes[64];
    for (int j = 0; j < 64; j++) sizes[j] = 1 + (int64_t)(test_rand(&e->rng) % 3);
    run_concat(e, F32, 3, (int64_t[]){0, 3, 5}, 0, 64, sizes, -1);
    run_concat(e, F16, 3, (int64_t[]){2, 3, 0}, 2, 64, sizes, PACKED);
}

static void test_bad(env *e) {
    const int64_t cap = 4096; /* floats */
    gaio_buffer *buf, *stage;
    OK(gaio_buffer_alloc(e->ctx, GAIO_MEM_DEVICE, (size_t)cap * 4, &buf));
    OK(gaio_buffer_alloc(e->ctx, GAIO_MEM_PINNED, (size_t)cap * 4, &stage));
    void *pv;
    OK(gaio_buffer_host_ptr(stage, &pv));
    float *p = pv;
    for (int64_t i = 0; i < cap; i++) p[i] = (float)(i + 1);
    OK(gaio_memcpy_async(e->s, buf, 0, stage, 0, (size_t)cap * 4));
    OK(gaio_stream_synchronize(e->s));

    /* x at 0, y after it: one buffer, no overlap. */
    gaio_tensor x = gaio_tensor_make(buf, 0, GAIO_DTYPE_F32, 3, (int64_t[]){2, 3, 4}, GAIO_TENSOR_ROW_MAJOR);
    gaio_tensor y = gaio_tensor_make(buf, 1024, GAIO_DTYPE_F32, 3, (int64_t[]){4, 2, 3}, GAIO_TENSOR_ROW_MAJOR);
    const int32_t perm[3] = {2, 0, 1};
    OK(gaio_transpose(e->s, &x, &y, perm));
    OK(gaio_stream_synchronize(e->s));
    OK(gaio_memcpy_async(e->s, stage, 0, buf, 0, (size_t)cap * 4)); /* the contents from here on */
    OK(gaio_stream_synchronize(e->s));
    float *before = malloc((size_t)cap * 4);
    CHECK(before);
    memcpy(before, p, (size_t)cap * 4);
    CHECK(before[256] == 1 && before[257] == 5 && before[262] == 2); /* y[0][0][0] = x[0][0][0], y[0][0][1] = x[0][1][0] */

    const char *fn = "gaio_transpose";
    FAILS(GAIO_ERR_INVALID_ARG, gaio_transpose(NULL, &x, &y, perm), fn);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_transpose(e->s, NULL, &y, perm), fn);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_transpose(e->s, &x, NULL, perm), fn);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_transpose(e->s, &x, &y, NULL), fn);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_transpose(e->s, &x, &y, (int32_t[]){2, 0, 0}), fn); /* not a permutation */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_transpose(e->s, &x, &y, (int32_t[]){2, 0, 3}), fn);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_transpose(e->s, &x, &y, (int32_t[]){-1, 0, 1}), fn);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_transpose(e->s, &x, &y, (int32_t[]){0, 1, 2}), fn); /* shapes differ */
    gaio_tensor t = y;
    t.shape[0] = 5;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_transpose(e->s, &x, &t, perm), fn);
    t = y;
    t.ndim = 4, t.shape[3] = 1;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_transpose(e->s, &x, &t, (int32_t[]){2, 0, 1, 3}), fn); /* ndim differs */
    t = y;
    t.dtype = GAIO_DTYPE_F16;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_transpose(e->s, &x, &t, perm), fn);
    gaio_tensor u = x;
    u.dtype = GAIO_DTYPE_U8;
    t = y;
    t.dtype = GAIO_DTYPE_U8;
    FAILS(GAIO_ERR_NOT_SUPPORTED, gaio_transpose(e->s, &u, &t, perm), fn);
    if (strstr(gaio_last_error(), "u8") == NULL) {
        fprintf(stderr, "the message does not name the dtype: %s\n", gaio_last_error());
        exit(1);
    }
    t = y;
    t.offset = 64; /* y overlaps x */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_transpose(e->s, &x, &t, perm), fn);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_transpose(e->s, &x, &x, (int32_t[]){0, 1, 2}), fn); /* in place */
    t = y;
    t.strides[0] = 6, t.strides[1] = 0, t.strides[2] = 1; /* y's elements share memory */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_transpose(e->s, &x, &t, perm), fn);
    t = y;
    t.strides[0] = 2, t.strides[1] = 3, t.strides[2] = 1;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_transpose(e->s, &x, &t, perm), fn);
    t = y;
    t.offset = (size_t)cap * 4 - 40; /* past the end */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_transpose(e->s, &x, &t, perm), fn);
    t = y;
    t.offset = 1026; /* not a multiple of the element size */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_transpose(e->s, &x, &t, perm), fn);

    fn = "gaio_concat";
    gaio_tensor a = gaio_tensor_make(buf, 0, GAIO_DTYPE_F32, 2, (int64_t[]){3, 4}, GAIO_TENSOR_ROW_MAJOR);
    gaio_tensor b = gaio_tensor_make(buf, 256, GAIO_DTYPE_F32, 2, (int64_t[]){3, 2}, GAIO_TENSOR_ROW_MAJOR);
    gaio_tensor c = gaio_tensor_make(buf, 2048, GAIO_DTYPE_F32, 2, (int64_t[]){3, 6}, GAIO_TENSOR_ROW_MAJOR);
    const gaio_tensor *ab[2] = {&a, &b};
    OK(gaio_concat(e->s, ab, 2, 1, &c)); /* good, and the same bytes as before: checks below stay valid */
    OK(gaio_stream_synchronize(e->s));
    OK(gaio_memcpy_async(e->s, stage, 0, buf, 0, (size_t)cap * 4));
    OK(gaio_stream_synchronize(e->s));
    memcpy(before, p, (size_t)cap * 4);
    CHECK(before[512] == 1 && before[516] == 65 && before[518] == 5);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_concat(NULL, ab, 2, 1, &c), fn);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_concat(e->s, NULL, 2, 1, &c), fn);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_concat(e->s, ab, 2, 1, NULL), fn);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_concat(e->s, ab, 0, 1, &c), fn);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_concat(e->s, ab, -1, 1, &c), fn);
    const gaio_tensor *many[65];
    for (int i = 0; i < 65; i++) many[i] = &a;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_concat(e->s, many, 65, 0, &c), fn);
    const gaio_tensor *anull[2] = {&a, NULL};
    FAILS(GAIO_ERR_INVALID_ARG, gaio_concat(e->s, anull, 2, 1, &c), fn);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_concat(e->s, ab, 2, 2, &c), fn);  /* axis out of range */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_concat(e->s, ab, 2, -3, &c), fn);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_concat(e->s, ab, 2, 0, &c), fn);  /* widths differ off the axis */
    OK(gaio_concat(e->s, ab, 2, -1, &c)); /* -1 is axis 1 */
    t = c;
    t.shape[1] = 7; /* 4 + 2 is not 7 */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_concat(e->s, ab, 2, 1, &t), fn);
    t = b;
    t.dtype = GAIO_DTYPE_F16;
    const gaio_tensor *mixed[2] = {&a, &t};
    FAILS(GAIO_ERR_INVALID_ARG, gaio_concat(e->s, mixed, 2, 1, &c), fn); /* dtype mismatch */
    t = b;
    t.ndim = 3, t.shape[2] = 1;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_concat(e->s, mixed, 2, 1, &c), fn); /* ndim differs */
    t = c;
    t.offset = 40; /* y overlaps a */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_concat(e->s, ab, 2, 1, &t), fn);
    t = b;
    t.offset = 2048 + 8; /* b overlaps y */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_concat(e->s, mixed, 2, 1, &c), fn);
    t = c;
    t.strides[0] = 0, t.strides[1] = 1; /* rows of y on top of each other */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_concat(e->s, ab, 2, 1, &t), fn);
    u = a, u.dtype = GAIO_DTYPE_S16;
    gaio_tensor v = b, w = c;
    v.dtype = GAIO_DTYPE_S16, w.dtype = GAIO_DTYPE_S16;
    const gaio_tensor *ints[2] = {&u, &v};
    FAILS(GAIO_ERR_NOT_SUPPORTED, gaio_concat(e->s, ints, 2, 1, &w), fn);
    if (strstr(gaio_last_error(), "s16") == NULL) {
        fprintf(stderr, "the message does not name the dtype: %s\n", gaio_last_error());
        exit(1);
    }

    /* Nothing bad was enqueued: the buffer holds what it held. */
    OK(gaio_memcpy_async(e->s, stage, 0, buf, 0, (size_t)cap * 4));
    OK(gaio_stream_synchronize(e->s));
    CHECK(memcmp(before, p, (size_t)cap * 4) == 0);
    free(before);
    OK(gaio_buffer_release(stage));
    OK(gaio_buffer_release(buf));
}

static void run(int device) {
    env e = {0};
    gaio_device_props props;
    OK(gaio_device_get_props(device, &props));
    e.cuda = props.kind == GAIO_DEVICE_CUDA;
    e.rng = test_seed();
    OK(gaio_context_create(device, NULL, &e.ctx));
    OK(gaio_stream_create(e.ctx, 0, 0, &e.s));
    test_transpose(&e);
    test_concat(&e);
    test_bad(&e);
    /* The same on a DEFERRED stream. */
    OK(gaio_stream_release(e.s));
    OK(gaio_stream_create(e.ctx, 0, GAIO_STREAM_DEFERRED, &e.s));
    test_transpose(&e);
    test_concat(&e);
    OK(gaio_stream_release(e.s));
    OK(gaio_context_release(e.ctx));
    test_shutdown();
}
