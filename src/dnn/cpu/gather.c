/* Host kernels of the indexing ops (src/dnn/gather.c): gaio_dnn_gather,
 * gaio_dnn_where and gaio_dnn_pad, the twins of kernels/dnn/gather.cu.
 *
 * Every tensor arrives over the output's dimensions, ordered by its strides. Work items
 * are rows (every dimension but the last): a chunk of rows decodes its first row's
 * coordinates once and steps through the others like an odometer; along a row each
 * tensor moves by its last stride. Elements are moved as bytes of their size. */
#include <stdbool.h>
#include <string.h>

#include "core/workers.h"
#include "dnn/cpu/tables.h"
#include "dnn/gather_math.h"
#include "dnn/ktensor.h"

enum { KIND_GATHER, KIND_WHERE, KIND_PAD };

typedef struct job {
    int kind;
    gaio_ktensor y, x, i, a, b; /* gather: x, i; where: i the condition, a, b; pad: x */
    gaio_kgather g;
    gaio_kpad p;
    int32_t es;
} job;

static inline void move(char *d, const char *s, int32_t es) {
    switch (es) {
    case 1: *d = *s; break;
    case 2: memcpy(d, s, 2); break;
    case 8: memcpy(d, s, 8); break;
    default: memcpy(d, s, 4); break;
    }
}

static inline int64_t load_index(const gaio_ktensor *t, int64_t off) {
    if (t->dtype == GAIO_KG_S64) return ((const int64_t *)(uintptr_t)t->ptr)[off];
    return ((const int32_t *)(uintptr_t)t->ptr)[off];
}

static inline char *at(const gaio_ktensor *t, int64_t off, int32_t es) {
    return (char *)(uintptr_t)t->ptr + off * es;
}

/* The offsets of row r's first element in the tensors of c (coordinates of every
 * dimension but the last). */
static int64_t row_offset(const gaio_ktensor *t, const int64_t *c, int32_t last) {
    int64_t o = 0;
    for (int32_t d = 0; d < last; d++) o += c[d] * t->strides[d];
    return o;
}

static void gather_row(const job *j, const int64_t *c, int32_t last, int64_t len) {
    int64_t xo = row_offset(&j->x, c, last), io = row_offset(&j->i, c, last), yo = row_offset(&j->y, c, last);
    int64_t xs = j->x.strides[last], is = j->i.strides[last], ys = j->y.strides[last];
    for (int64_t k = 0; k < len; k++) {
        int64_t idx = gaio_kg_index(load_index(&j->i, io + k * is), j->g.axis_len);
        move(at(&j->y, yo + k * ys, j->es), at(&j->x, xo + k * xs + idx * j->g.axis_stride, j->es), j->es);
    }
}

static void where_row(const job *j, const int64_t *c, int32_t last, int64_t len) {
    int64_t co = row_offset(&j->i, c, last), ao = row_offset(&j->a, c, last), bo = row_offset(&j->b, c, last);
    int64_t yo = row_offset(&j->y, c, last);
    int64_t cs = j->i.strides[last], as = j->a.strides[last], bs = j->b.strides[last], ys = j->y.strides[last];
    const uint8_t *cond = (const uint8_t *)(uintptr_t)j->i.ptr;
    for (int64_t k = 0; k < len; k++) {
        const char *src = cond[co + k * cs] ? at(&j->a, ao + k * as, j->es) : at(&j->b, bo + k * bs, j->es);
        move(at(&j->y, yo + k * ys, j->es), src, j->es);
    }
}

static void pad_row(const job *j, const int64_t *c, int32_t last, int64_t len) {
    int64_t yo = row_offset(&j->y, c, last), ys = j->y.strides[last], xo = 0;
    bool fill = false;
    for (int32_t d = 0; d < last && !fill; d++) {
        int64_t s = gaio_kpad_source(c[d], j->p.begin[d], j->x.shape[d], j->p.mode);
        if (s < 0) fill = true;
        else xo += s * j->x.strides[d];
    }
    const char *value = (const char *)&j->p.fill; /* little-endian: the low bytes */
    for (int64_t k = 0; k < len; k++) {
        int64_t s = fill ? -1 : gaio_kpad_source(k, j->p.begin[last], j->x.shape[last], j->p.mode);
        move(at(&j->y, yo + k * ys, j->es), s < 0 ? value : at(&j->x, xo + s * j->x.strides[last], j->es), j->es);
    }
}

static void rows(void *arg, size_t begin, size_t end) {
    const job *j = arg;
    int32_t last = j->y.ndim - 1;
    int64_t len = j->y.shape[last], c[GAIO_KT_MAX_NDIM] = {0}, r = (int64_t)begin;
    for (int32_t d = last - 1; d >= 0; d--) c[d] = r % j->y.shape[d], r /= j->y.shape[d];
    for (size_t row = begin; row < end; row++) {
        if (j->kind == KIND_GATHER) gather_row(j, c, last, len);
        else if (j->kind == KIND_WHERE) where_row(j, c, last, len);
        else pad_row(j, c, last, len);
        for (int32_t d = last - 1; d >= 0 && ++c[d] == j->y.shape[d]; d--) c[d] = 0;
    }
}

static gaio_status run(job *j) {
    j->es = gaio_kt_size(j->y.dtype);
    int32_t last = j->y.ndim - 1;
    int64_t n = 1;
    for (int32_t d = 0; d < last; d++) n *= j->y.shape[d];
    /* Chunks of at least ~64 KiB moved, so that small ops stay on one thread. */
    int64_t row_bytes = j->y.shape[last] * (int64_t)j->es;
    size_t grain = (size_t)((65536 + row_bytes - 1) / row_bytes);
    gaio__parallel_for((size_t)n, grain ? grain : 1, rows, j);
    return GAIO_OK;
}

static void arg(void *out, void *const *args, int i, size_t size) { memcpy(out, args[i], size); }

static gaio_status dnn_gather(const gaio_launch_info *info, void *const *args) {
    (void)info;
    job j;
    memset(&j, 0, sizeof j);
    j.kind = KIND_GATHER;
    arg(&j.x, args, 0, sizeof j.x);
    arg(&j.i, args, 1, sizeof j.i);
    arg(&j.y, args, 2, sizeof j.y);
    arg(&j.g, args, 3, sizeof j.g);
    return run(&j);
}

static gaio_status dnn_where(const gaio_launch_info *info, void *const *args) {
    (void)info;
    job j;
    memset(&j, 0, sizeof j);
    j.kind = KIND_WHERE;
    arg(&j.i, args, 0, sizeof j.i);
    arg(&j.a, args, 1, sizeof j.a);
    arg(&j.b, args, 2, sizeof j.b);
    arg(&j.y, args, 3, sizeof j.y);
    return run(&j);
}

static gaio_status dnn_pad(const gaio_launch_info *info, void *const *args) {
    (void)info;
    job j;
    memset(&j, 0, sizeof j);
    j.kind = KIND_PAD;
    arg(&j.x, args, 0, sizeof j.x);
    arg(&j.y, args, 1, sizeof j.y);
    arg(&j.p, args, 2, sizeof j.p);
    return run(&j);
}

#define KT sizeof(gaio_ktensor)
static const size_t gather_sizes[4] = {KT, KT, KT, sizeof(gaio_kgather)};
static const size_t where_sizes[4] = {KT, KT, KT, KT};
static const size_t pad_sizes[3] = {KT, KT, sizeof(gaio_kpad)};

const gaio_builtin_kernel gaio__dnn_gather_kernels[] = {
    {"gaio_dnn_gather", dnn_gather, 4, gather_sizes},
    {"gaio_dnn_where", dnn_where, 4, where_sizes},
    {"gaio_dnn_pad", dnn_pad, 3, pad_sizes},
    {NULL, NULL, 0, NULL},
};
