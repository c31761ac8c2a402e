/* The DNN tests' device tensors: an environment (context, stream, seeded generator), and
 * test tensors laid out packed, NHWC or with gaps between elements, whose spanned memory
 * is filled with random values (quantised to the dtype) and read back after the stream's
 * work, with checks that a y's gaps kept their values. Shared by test_dnn_reduce.c and
 * test_dnn_norm.c. */
#ifndef GAIO_TESTS_DNN_STRIDED_TENSOR_H
#define GAIO_TESTS_DNN_STRIDED_TENSOR_H

#include <math.h>
#include <stdbool.h>

#include "common.h"
#include "half.h"

typedef struct env {
    gaio_context *ctx;
    gaio_stream *s;
    uint64_t rng;
    bool cuda;
} env;

static const gaio_dtype F32 = GAIO_DTYPE_F32, F16 = GAIO_DTYPE_F16;

static inline float rnd(uint64_t *r) { return (float)((double)(test_rand(r) >> 11) / 9007199254740992.0 * 2.0 - 1.0); }

static inline size_t esize(gaio_dtype dt) { return dt == F16 ? 2 : 4; }

/* How a test tensor lies in memory. */
typedef enum mem_kind {
    MEM_PACKED = 0, /* ROW_MAJOR, strides left 0 for gaio to fill */
    MEM_NHWC = 1,   /* NHWC layout, strides left 0 */
    MEM_GAPS = 2,   /* explicit row-major strides with a gap after every dimension */
    MEM_NHWC_GAPS = 3 /* explicit channels-innermost strides with gaps */
} mem_kind;

/* A device tensor and the host copy of all the memory it spans (element offset
 * 0 .. span), gaps included. */
typedef struct htensor {
    gaio_dtype dt;
    int32_t nd;
    int64_t shape[5], strides[5];
    size_t span, lead; /* elements spanned; elements before element [0, ...] in the buffer */
    float *v;          /* span values, quantised to dt */
    gaio_tensor t;
} htensor;

static inline void make(env *e, htensor *h, gaio_dtype dt, int32_t nd, const int64_t *shape, mem_kind kind, float shift,
                 float scale) {
    memset(h, 0, sizeof *h);
    h->dt = dt, h->nd = nd;
    for (int i = 0; i < nd; i++) h->shape[i] = shape[i];
    int64_t acc = 1, gap = kind >= MEM_GAPS ? 1 + (int64_t)(test_rand(&e->rng) % 3) : 0;
    if (kind == MEM_NHWC || kind == MEM_NHWC_GAPS) {
        CHECK(nd == 4 || nd == 5);
        h->strides[1] = 1;
        acc = shape[1] + gap;
        for (int i = nd - 1; i >= 2; i--) h->strides[i] = acc, acc = acc * shape[i] + gap;
        h->strides[0] = acc;
    } else {
        for (int i = nd - 1; i >= 0; i--) h->strides[i] = acc, acc = acc * shape[i] + gap;
    }
    h->span = 1;
    for (int i = 0; i < nd; i++) h->span += (size_t)(h->strides[i] * (shape[i] - 1));
    h->lead = (size_t)(test_rand(&e->rng) % 3);
    size_t n = h->lead + h->span, es = esize(dt);
    h->v = malloc(h->span * sizeof(float));
    CHECK(h->v);
    gaio_buffer *stage, *dev;
    OK(gaio_buffer_alloc(e->ctx, GAIO_MEM_PINNED, n * es, &stage));
    OK(gaio_buffer_alloc(e->ctx, GAIO_MEM_DEVICE, n * es, &dev));
    void *p;
    OK(gaio_buffer_host_ptr(stage, &p));
    for (size_t i = 0; i < n; i++) {
        float f = shift + scale * rnd(&e->rng);
        if (f == 0) f = 0.5f; /* never all zero */
        if (dt == F16) {
            ((uint16_t *)p)[i] = to_half(f);
            f = from_half(to_half(f));
        } else {
            ((float *)p)[i] = f;
        }
        if (i >= h->lead) h->v[i - h->lead] = f;
    }
    OK(gaio_memcpy_async(e->s, dev, 0, stage, 0, n * es));
    OK(gaio_buffer_release(stage));
    gaio_tensor_layout lay = kind == MEM_NHWC ? GAIO_TENSOR_NHWC : GAIO_TENSOR_ROW_MAJOR;
    h->t = gaio_tensor_make(dev, h->lead * es, dt, nd, shape, lay);
    if (kind >= MEM_GAPS)
        for (int i = 0; i < nd; i++) h->t.strides[i] = h->strides[i];
}

static inline void drop(htensor *h) {
    OK(gaio_buffer_release(h->t.buffer));
    free(h->v);
}

/* The spanned memory after the stream's work. */
static inline float *download(env *e, const htensor *h) {
    size_t es = esize(h->dt), n = h->span;
    gaio_buffer *stage;
    OK(gaio_buffer_alloc(e->ctx, GAIO_MEM_PINNED, n * es, &stage));
    OK(gaio_memcpy_async(e->s, stage, 0, h->t.buffer, h->t.offset, n * es));
    OK(gaio_stream_synchronize(e->s));
    void *p;
    OK(gaio_buffer_host_ptr(stage, &p));
    float *out = malloc(n * sizeof(float));
    CHECK(out);
    for (size_t i = 0; i < n; i++) out[i] = h->dt == F16 ? from_half(((uint16_t *)p)[i]) : ((float *)p)[i];
    OK(gaio_buffer_release(stage));
    return out;
}

static inline int64_t offset_of(const htensor *h, const int64_t *idx) {
    int64_t o = 0;
    for (int i = 0; i < h->nd; i++) o += idx[i] * h->strides[i];
    return o;
}

/* Memory of y that is no element of it kept its old values. */
static inline void check_gaps(const htensor *y, const float *got) {
    char *hit = calloc(y->span, 1);
    CHECK(hit);
    int64_t idx[5] = {0}, total = 1;
    for (int i = 0; i < y->nd; i++) total *= y->shape[i];
    for (int64_t k = 0; k < total; k++) {
        int64_t r = k;
        for (int i = y->nd - 1; i >= 0; i--) idx[i] = r % y->shape[i], r /= y->shape[i];
        hit[offset_of(y, idx)] = 1;
    }
    for (size_t i = 0; i < y->span; i++)
        if (!hit[i] && !(got[i] == y->v[i])) {
            fprintf(stderr, "y's gap element %zu changed: %g, was %g\n", i, got[i], y->v[i]);
            exit(1);
        }
    free(hit);
}

static inline void report(const char *what, const char *where, double got, double want, double tol) {
    if (!(fabs(got - want) <= tol)) {
        fprintf(stderr, "%s: %s = %.9g, want %.9g (tol %.3g)\n", what, where, got, want, tol);
        exit(1);
    }
}

#endif
