/* Host kernels of the pointwise ops (CUDA twins in src/kernels/dnn/pointwise.cu):
 *   gaio_dnn_unary(gaio_ktensor x, gaio_ktensor y, gaio_kpw_act act)
 *   gaio_dnn_binary(gaio_ktensor a, gaio_ktensor b, gaio_ktensor y, int32_t op, gaio_kpw_act act)
 *   gaio_dnn_binary_packed(uint64_t a, uint64_t b, uint64_t y, int64_t n, int32_t dtype, int32_t op,
 *                          gaio_kpw_act act)
 *   gaio_dnn_binary_rows(uint64_t a, uint64_t b, uint64_t y, int64_t n, int64_t p, int64_t c, int32_t dtype,
 *                        int32_t op, int32_t row_is_b, gaio_kpw_act act)
 *   gaio_dnn_batch_norm(gaio_ktensor x, gaio_ktensor y, gaio_ktensor scale, gaio_ktensor bias,
 *                       gaio_ktensor mean, gaio_ktensor var, float epsilon, gaio_kpw_act act,
 *                       int32_t affine)
 * Every tensor comes over y's shape, simplified by src/dnn/pointwise.c (a packed op is
 * one row). Work items are pieces of rows along the last dimension; a piece is staged
 * through small float buffers a chunk at a time, so each loop is over one dtype and
 * one op (the compiler vectorises the simple ones) and in-place calls need nothing
 * special: a chunk is read before it is written. */
#include <stdbool.h>
#include <string.h>

#include "core/half.h"
#include "core/workers.h"
#include "dnn/cpu/tables.h"
#include "dnn/pointwise_math.h"

#define CHUNK 256       /* floats staged at a time per tensor */
#define SEG_CHUNKS 16   /* chunks per work item of the pool: long rows are split */
#define MAX_T 6

/* ---- staging ---- */

static void load(const char *p, int32_t dt, int64_t stride, size_t n, float *t) {
    if (dt == GAIO_KT_F32) {
        const float *s = (const float *)p;
        if (stride == 1) {
            memcpy(t, s, n * sizeof(float));
        } else if (stride == 0) {
            for (size_t i = 0; i < n; i++) t[i] = s[0];
        } else {
            for (size_t i = 0; i < n; i++) t[i] = s[(int64_t)i * stride];
        }
    } else {
        const uint16_t *s = (const uint16_t *)p;
        if (stride == 1) {
            for (size_t i = 0; i < n; i++) t[i] = h2f(s[i]);
        } else {
            for (size_t i = 0; i < n; i++) t[i] = h2f(s[(int64_t)i * stride]);
        }
    }
}

static void store(char *p, int32_t dt, int64_t stride, size_t n, const float *t) {
    if (dt == GAIO_KT_F32) {
        float *d = (float *)p;
        if (stride == 1) {
            memcpy(d, t, n * sizeof(float));
        } else {
            for (size_t i = 0; i < n; i++) d[(int64_t)i * stride] = t[i];
        }
    } else {
        uint16_t *d = (uint16_t *)p;
        if (stride == 1) {
            for (size_t i = 0; i < n; i++) d[i] = f2h(t[i]);
        } else {
            for (size_t i = 0; i < n; i++) d[(int64_t)i * stride] = f2h(t[i]);
        }
    }
}

/* One loop per op, so that the op is a constant in each. */
#define UNARY_CASE(OP)                                                                \
    case OP:                                                                          \
        for (size_t k = 0; k < n; k++) t[k] = gaio_pw_unary(OP, t[k], alpha, beta); \
        break;

static void apply_unary(const gaio_kpw_act *act, float *t, size_t n) {
    float alpha = act->alpha, beta = act->beta;
    switch (act->op) {
        UNARY_CASE(GAIO_KPW_RELU)
        UNARY_CASE(GAIO_KPW_CLIP)
        UNARY_CASE(GAIO_KPW_SIGMOID)
        UNARY_CASE(GAIO_KPW_SILU)
        UNARY_CASE(GAIO_KPW_GELU)
        UNARY_CASE(GAIO_KPW_GELU_TANH)
        UNARY_CASE(GAIO_KPW_TANH)
        UNARY_CASE(GAIO_KPW_HARD_SIGMOID)
        UNARY_CASE(GAIO_KPW_HARD_SWISH)
        UNARY_CASE(GAIO_KPW_SQRT)
        UNARY_CASE(GAIO_KPW_EXP)
        UNARY_CASE(GAIO_KPW_LOG)
        UNARY_CASE(GAIO_KPW_ABS)
        UNARY_CASE(GAIO_KPW_NEG)
        UNARY_CASE(GAIO_KPW_RECIPROCAL)
        UNARY_CASE(GAIO_KPW_FLOOR)
        UNARY_CASE(GAIO_KPW_CEIL)
        UNARY_CASE(GAIO_KPW_ERF)
        UNARY_CASE(GAIO_KPW_SOFTPLUS)
        UNARY_CASE(GAIO_KPW_SIN)
        UNARY_CASE(GAIO_KPW_COS)
        UNARY_CASE(GAIO_KPW_AFFINE)
    default: break; /* identity */
    }
}

#define BINARY_CASE(OP)                                                         \
    case OP:                                                                    \
        for (size_t k = 0; k < n; k++) t[k] = gaio_pw_binary(OP, t[k], u[k]); \
        break;

static void apply_binary(int32_t op, float *t, const float *u, size_t n) {
    switch (op) {
        BINARY_CASE(GAIO_KPW_ADD)
        BINARY_CASE(GAIO_KPW_SUB)
        BINARY_CASE(GAIO_KPW_MUL)
        BINARY_CASE(GAIO_KPW_DIV)
        BINARY_CASE(GAIO_KPW_POW)
        BINARY_CASE(GAIO_KPW_MIN)
        BINARY_CASE(GAIO_KPW_MAX)
        BINARY_CASE(GAIO_KPW_FMOD)
    default: break;
    }
}

/* ---- the shared walk ---- */

enum { KIND_UNARY, KIND_BINARY, KIND_BN };

typedef struct pw_job {
    int kind;
    int n;                 /* tensors: t[0] is y */
    gaio_ktensor t[MAX_T]; /* y, then the inputs in argument order */
    size_t es[MAX_T];
    gaio_kpw_act act;
    int32_t op;
    float epsilon;
    int32_t affine;         /* batch norm: y = x * scale + bias */
    int64_t len, seg, nseg; /* the last dimension, split in pieces of seg */
    bool direct;            /* binary_direct_ok: rows run without staging */
} pw_job;

/* f32 binary ops whose rows are packed or broadcast (y's stride 1, a's and b's 1 or 0:
 * the squeeze-and-excitation scale, the bias of an unfused epilogue) run straight over
 * the row, without staging: each op and stride pair its own vectorised loop. Reads
 * a[k] and b[k] before y[k] is written, as staging does (y may be a or b). */
#define DIRECT_LOOP(OP)                                                                \
    case OP:                                                                           \
        if (sa == 1 && sb == 1)                                                        \
            for (size_t k = 0; k < n; k++) y[k] = gaio_pw_binary(OP, a[k], b[k]);      \
        else if (sa == 1)                                                              \
            for (size_t k = 0; k < n; k++) y[k] = gaio_pw_binary(OP, a[k], b0);        \
        else                                                                           \
            for (size_t k = 0; k < n; k++) y[k] = gaio_pw_binary(OP, a0, b[k]);        \
        break;

static void binary_direct(int32_t op, float *y, const float *a, int64_t sa, const float *b, int64_t sb, size_t n) {
    const float a0 = a[0], b0 = b[0]; /* a broadcast operand, read before y is written */
    switch (op) {
        DIRECT_LOOP(GAIO_KPW_ADD)
        DIRECT_LOOP(GAIO_KPW_SUB)
        DIRECT_LOOP(GAIO_KPW_MUL)
        DIRECT_LOOP(GAIO_KPW_DIV)
        DIRECT_LOOP(GAIO_KPW_MIN)
        DIRECT_LOOP(GAIO_KPW_MAX)
    default: break; /* binary_direct_ok refuses the others */
    }
}

static bool binary_direct_ok(const pw_job *j) {
    if (j->kind != KIND_BINARY) return false;
    int32_t last = j->t[0].ndim - 1;
    for (int k = 0; k < 3; k++)
        if (j->t[k].dtype != GAIO_KT_F32) return false;
    int64_t sa = j->t[1].strides[last], sb = j->t[2].strides[last];
    bool ops = j->op == GAIO_KPW_ADD || j->op == GAIO_KPW_SUB || j->op == GAIO_KPW_MUL || j->op == GAIO_KPW_DIV ||
               j->op == GAIO_KPW_MIN || j->op == GAIO_KPW_MAX;
    return ops && j->t[0].strides[last] == 1 && (sa == 0 || sa == 1) && (sb == 0 || sb == 1) && (sa | sb) == 1;
}

static void piece(const pw_job *j, char *const *p, size_t cnt) {
    if (j->direct) {
        int32_t last = j->t[0].ndim - 1;
        float *y = (float *)p[0];
        binary_direct(j->op, y, (const float *)p[1], j->t[1].strides[last], (const float *)p[2],
                      j->t[2].strides[last], cnt);
        apply_unary(&j->act, y, cnt);
        return;
    }
    float t[CHUNK], u[CHUNK], s[CHUNK], b[CHUNK], m[CHUNK], v[CHUNK];
    int32_t last = j->t[0].ndim - 1;
    for (size_t i = 0; i < cnt; i += CHUNK) {
        size_t c = cnt - i < CHUNK ? cnt - i : CHUNK;
        const char *q[MAX_T];
        for (int k = 0; k < j->n; k++) q[k] = p[k] + (int64_t)i * j->t[k].strides[last] * (int64_t)j->es[k];
        switch (j->kind) {
        case KIND_UNARY:
            load(q[1], j->t[1].dtype, j->t[1].strides[last], c, t);
            apply_unary(&j->act, t, c);
            break;
        case KIND_BINARY:
            load(q[1], j->t[1].dtype, j->t[1].strides[last], c, t);
            load(q[2], j->t[2].dtype, j->t[2].strides[last], c, u);
            apply_binary(j->op, t, u, c);
            apply_unary(&j->act, t, c);
            break;
        default: {
            load(q[1], j->t[1].dtype, j->t[1].strides[last], c, t);
            load(q[2], GAIO_KT_F32, j->t[2].strides[last], c, s);
            load(q[3], GAIO_KT_F32, j->t[3].strides[last], c, b);
            load(q[4], GAIO_KT_F32, j->t[4].strides[last], c, m);
            load(q[5], GAIO_KT_F32, j->t[5].strides[last], c, v);
            float eps = j->epsilon;
            if (j->affine) /* two roundings, as the CUDA kernel's __fmul_rn, __fadd_rn */
                for (size_t k = 0; k < c; k++) t[k] = t[k] * s[k] + b[k];
            else
                for (size_t k = 0; k < c; k++) t[k] = gaio_pw_batch_norm(t[k], s[k], b[k], m[k], v[k], eps);
            apply_unary(&j->act, t, c);
            break;
        }
        }
        store((char *)q[0], j->t[0].dtype, j->t[0].strides[last], c, t);
    }
}

static void pw_range(void *arg, size_t begin, size_t end) {
    const pw_job *j = arg;
    const gaio_ktensor *ts[MAX_T];
    for (int k = 0; k < j->n; k++) ts[k] = &j->t[k];
    int32_t last = j->t[0].ndim - 1;
    for (size_t it = begin; it < end; it++) {
        int64_t row = (int64_t)it / j->nseg, x0 = ((int64_t)it - row * j->nseg) * j->seg;
        int64_t cnt = j->len - x0 < j->seg ? j->len - x0 : j->seg;
        int64_t off[MAX_T];
        gaio_pw_offsets(ts, j->n, j->t[0].shape, last, row, off);
        char *p[MAX_T];
        for (int k = 0; k < j->n; k++)
            p[k] = (char *)(uintptr_t)j->t[k].ptr + (off[k] + x0 * j->t[k].strides[last]) * (int64_t)j->es[k];
        piece(j, p, (size_t)cnt);
    }
}

static gaio_status pw_run(pw_job *j) {
    size_t bytes = 0;
    for (int k = 0; k < j->n; k++) {
        j->es[k] = j->t[k].dtype == GAIO_KT_F16 ? 2 : 4;
        bytes += j->es[k];
    }
    int32_t last = j->t[0].ndim - 1;
    int64_t rows = 1;
    for (int32_t d = 0; d < last; d++) rows *= j->t[0].shape[d];
    j->len = j->t[0].shape[last];
    j->direct = binary_direct_ok(j);
    j->seg = CHUNK * SEG_CHUNKS;
    j->nseg = (j->len + j->seg - 1) / j->seg;
    /* Work items of at least ~64 KiB: small tensors stay on one thread. */
    int64_t item = (j->len < j->seg ? j->len : j->seg) * (int64_t)bytes;
    size_t grain = (size_t)((65536 + item - 1) / item);
    gaio__parallel_for((size_t)(rows * j->nseg), grain ? grain : 1, pw_range, j);
    return GAIO_OK;
}

/* A zeroed job of `kind` over n tensors. */
static pw_job job_of(int kind, int n) {
    pw_job j;
    memset(&j, 0, sizeof j);
    j.kind = kind;
    j.n = n;
    return j;
}

/* A copy of by-value argument i (arguments are only 16-byte aligned). */
static void arg(void *out, void *const *args, int i, size_t size) { memcpy(out, args[i], size); }

static gaio_status dnn_unary(const gaio_launch_info *info, void *const *args) {
    (void)info;
    pw_job j = job_of(KIND_UNARY, 2);
    arg(&j.t[1], args, 0, sizeof(gaio_ktensor));
    arg(&j.t[0], args, 1, sizeof(gaio_ktensor));
    arg(&j.act, args, 2, sizeof j.act);
    return pw_run(&j);
}

static gaio_status dnn_binary(const gaio_launch_info *info, void *const *args) {
    (void)info;
    pw_job j = job_of(KIND_BINARY, 3);
    arg(&j.t[1], args, 0, sizeof(gaio_ktensor));
    arg(&j.t[2], args, 1, sizeof(gaio_ktensor));
    arg(&j.t[0], args, 2, sizeof(gaio_ktensor));
    arg(&j.op, args, 3, sizeof j.op);
    arg(&j.act, args, 4, sizeof j.act);
    return pw_run(&j);
}

/* The packed form: three rows of n elements of one dtype, run as dnn_binary's. */
static gaio_status dnn_binary_packed(const gaio_launch_info *info, void *const *args) {
    (void)info;
    pw_job j = job_of(KIND_BINARY, 3);
    int64_t n;
    int32_t dtype;
    arg(&n, args, 3, sizeof n);
    arg(&dtype, args, 4, sizeof dtype);
    const int from[3] = {2, 0, 1}; /* y, a, b */
    for (int k = 0; k < 3; k++) {
        arg(&j.t[k].ptr, args, from[k], sizeof j.t[k].ptr);
        j.t[k].ndim = 1, j.t[k].dtype = dtype, j.t[k].shape[0] = n, j.t[k].strides[0] = 1;
    }
    arg(&j.op, args, 5, sizeof j.op);
    arg(&j.act, args, 6, sizeof j.act);
    return pw_run(&j);
}

/* The broadcast-row form: y and the full operand [n, p, c] packed, the other [n, c]
 * seen with stride 0 over p; run as dnn_binary's. */
static gaio_status dnn_binary_rows(const gaio_launch_info *info, void *const *args) {
    (void)info;
    pw_job j = job_of(KIND_BINARY, 3);
    int64_t n, p, c;
    int32_t dtype, row_is_b;
    arg(&n, args, 3, sizeof n);
    arg(&p, args, 4, sizeof p);
    arg(&c, args, 5, sizeof c);
    arg(&dtype, args, 6, sizeof dtype);
    arg(&j.op, args, 7, sizeof j.op);
    arg(&row_is_b, args, 8, sizeof row_is_b);
    arg(&j.act, args, 9, sizeof j.act);
    const int from[3] = {2, 0, 1}; /* y, a, b */
    for (int k = 0; k < 3; k++) {
        gaio_ktensor *t = &j.t[k];
        arg(&t->ptr, args, from[k], sizeof t->ptr);
        bool row = k == (row_is_b ? 2 : 1);
        t->ndim = 3, t->dtype = dtype;
        t->shape[0] = n, t->shape[1] = p, t->shape[2] = c;
        t->strides[0] = row ? c : p * c, t->strides[1] = row ? 0 : c, t->strides[2] = 1;
    }
    return pw_run(&j);
}

static gaio_status dnn_batch_norm(const gaio_launch_info *info, void *const *args) {
    (void)info;
    pw_job j = job_of(KIND_BN, 6);
    arg(&j.t[1], args, 0, sizeof(gaio_ktensor));
    arg(&j.t[0], args, 1, sizeof(gaio_ktensor));
    for (int k = 2; k < 6; k++) arg(&j.t[k], args, k, sizeof(gaio_ktensor));
    arg(&j.epsilon, args, 6, sizeof j.epsilon);
    arg(&j.act, args, 7, sizeof j.act);
    arg(&j.affine, args, 8, sizeof j.affine);
    return pw_run(&j);
}

#define KT sizeof(gaio_ktensor)
static const size_t unary_sizes[3] = {KT, KT, sizeof(gaio_kpw_act)};
static const size_t binary_sizes[5] = {KT, KT, KT, sizeof(int32_t), sizeof(gaio_kpw_act)};
static const size_t binary_packed_sizes[7] = {sizeof(uint64_t), sizeof(uint64_t), sizeof(uint64_t), sizeof(int64_t),
                                             sizeof(int32_t),  sizeof(int32_t),  sizeof(gaio_kpw_act)};
static const size_t binary_rows_sizes[10] = {sizeof(uint64_t), sizeof(uint64_t), sizeof(uint64_t), sizeof(int64_t),
                                            sizeof(int64_t),  sizeof(int64_t),  sizeof(int32_t),  sizeof(int32_t),
                                            sizeof(int32_t),  sizeof(gaio_kpw_act)};
static const size_t batch_norm_sizes[9] = {KT, KT, KT, KT, KT, KT, sizeof(float), sizeof(gaio_kpw_act), sizeof(int32_t)};

const gaio_builtin_kernel gaio__dnn_pointwise_kernels[] = {
    {"gaio_dnn_unary", dnn_unary, 3, unary_sizes},
    {"gaio_dnn_binary", dnn_binary, 5, binary_sizes},
    {"gaio_dnn_binary_packed", dnn_binary_packed, 7, binary_packed_sizes},
    {"gaio_dnn_binary_rows", dnn_binary_rows, 10, binary_rows_sizes},
    {"gaio_dnn_batch_norm", dnn_batch_norm, 9, batch_norm_sizes},
    {NULL, NULL, 0, NULL},
};
