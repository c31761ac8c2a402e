/* Host kernel of gaio_dnn_attention (src/kernels/dnn/attention.cu): for each query row,
 * the scores in f32, their softmax (max subtracted) and the weighted sum of v's rows.
 * The CUDA kernel's online softmax and f16 probabilities agree with it to rounding. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/workers.h"
#include "dnn/attention_math.h"
#include "dnn/cpu/tables.h"
#include "dnn/reduce_math.h"

typedef struct attn_job {
    gaio_ktensor q, k, v, bias, y;
    gaio_kattn p;
} attn_job;

static void attn_rows(void *arg, size_t begin, size_t end) {
    const attn_job *j = arg;
    const int64_t B1 = j->q.shape[1], L = j->q.shape[2], Lk = j->k.shape[2], D = j->q.shape[3];
    float *s = malloc((size_t)Lk * sizeof *s), *o = malloc((size_t)D * sizeof *o);
    if (!s || !o) { /* no memory to report through: leave y as it was (the caller's arena) */
        free(s), free(o);
        return;
    }
    for (size_t row = begin; row < end; row++) {
        const int64_t i = (int64_t)row % L, b = (int64_t)row / L, b1 = b % B1, b0 = b / B1;
        const int64_t qb = b0 * j->q.strides[0] + b1 * j->q.strides[1] + i * j->q.strides[2];
        float m = -INFINITY;
        for (int64_t t = 0; t < Lk; t++) {
            const int64_t kb = b0 * j->k.strides[0] + b1 * j->k.strides[1] + t * j->k.strides[2];
            float acc = 0.0f;
            for (int64_t d = 0; d < D; d++) acc = fmaf(gaio_kt_get(&j->q, qb + d), gaio_kt_get(&j->k, kb + d), acc);
            acc *= j->p.alpha;
            if (j->p.has_bias)
                acc += gaio_kt_get(&j->bias, (b0 % j->bias.shape[0]) * j->bias.strides[0] +
                                                 (b1 % j->bias.shape[1]) * j->bias.strides[1] + i * j->bias.strides[2] +
                                                 t * j->bias.strides[3]);
            s[t] = acc;
            if (acc > m) m = acc;
        }
        float sum = 0.0f;
        for (int64_t t = 0; t < Lk; t++) s[t] = m == -INFINITY ? 0.0f : expf(s[t] - m), sum += s[t];
        for (int64_t d = 0; d < D; d++) o[d] = 0.0f;
        for (int64_t t = 0; t < Lk; t++) {
            const int64_t vb = b0 * j->v.strides[0] + b1 * j->v.strides[1] + t * j->v.strides[2];
            for (int64_t d = 0; d < D; d++) o[d] = fmaf(s[t], gaio_kt_get(&j->v, vb + d), o[d]);
        }
        const int64_t yb = b0 * j->y.strides[0] + b1 * j->y.strides[1] + i * j->y.strides[2];
        for (int64_t d = 0; d < D; d++) gaio_kt_put(&j->y, yb + d, sum > 0.0f ? o[d] / sum : 0.0f);
    }
    free(s), free(o);
}

static gaio_status dnn_attention(const gaio_launch_info *info, void *const *args) {
    (void)info;
    attn_job j;
    memcpy(&j.q, args[0], sizeof j.q);
    memcpy(&j.k, args[1], sizeof j.k);
    memcpy(&j.v, args[2], sizeof j.v);
    memcpy(&j.bias, args[3], sizeof j.bias);
    memcpy(&j.y, args[4], sizeof j.y);
    memcpy(&j.p, args[5], sizeof j.p);
    const int64_t rows = j.q.shape[0] * j.q.shape[1] * j.q.shape[2];
    gaio__parallel_for((size_t)rows, 4, attn_rows, &j);
    return GAIO_OK;
}

static const size_t attn_sizes[6] = {sizeof(gaio_ktensor), sizeof(gaio_ktensor), sizeof(gaio_ktensor),
                                     sizeof(gaio_ktensor), sizeof(gaio_ktensor), sizeof(gaio_kattn)};

const gaio_builtin_kernel gaio__dnn_attention_kernels[] = {
    {"gaio_dnn_attention", dnn_attention, 6, attn_sizes},
    {NULL, NULL, 0, NULL},
};
