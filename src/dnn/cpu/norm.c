/* Host kernel of gaio_norm (src/dnn/norm.c; CUDA twin in src/kernels/dnn/norm.cu):
 *   gaio_dnn_norm(gaio_knorm p), and the same as gaio_dnn_norm_rows
 * Sets are split over the worker pool. A set is walked as lines along its innermost
 * dimension (the others decoded once per line), three times: the sum, the squared
 * deviations from the mean, the output. The sums run in f64, so the host is the
 * more exact of the two backends; the CUDA kernel's f32 sums over a warp's or a
 * block's lanes agree with it to rounding. */
#include <math.h>
#include <string.h>

#include "core/workers.h"
#include "dnn/cpu/tables.h"
#include "dnn/norm_math.h"

/* Line j of a set (all of its dimensions but the innermost), from the set's start. */
static gaio_knorm_at line_at(const gaio_knorm *p, int64_t j) {
    gaio_knorm_at o = {0, 0, 0, 0, 0, 0};
    for (int32_t d = p->ndim - 2; d >= p->axis; d--) {
        const int64_t n = p->shape[d], k = j % n;
        j /= n;
        o.x += k * p->xs[d], o.y += k * p->ys[d], o.s += k * p->ss[d], o.b += k * p->bs[d];
    }
    return o;
}

static void norm_sets(void *arg, size_t begin, size_t end) {
    const gaio_knorm *p = arg;
    const bool inner = p->ndim > p->axis; /* else every set is one element */
    const int32_t last = p->ndim - 1;
    const int64_t len = inner ? p->shape[last] : 1, lines = p->count / len;
    const int64_t xs = inner ? p->xs[last] : 0, ys = inner ? p->ys[last] : 0;
    const int64_t ss = inner ? p->ss[last] : 0, bs = inner ? p->bs[last] : 0;
    for (size_t r = begin; r < end; r++) {
        const gaio_knorm_at set = gaio_knorm_set(p, (int64_t)r);
        double sum = 0.0;
        for (int64_t j = 0; j < lines; j++) {
            const int64_t xo = set.x + line_at(p, j).x;
            for (int64_t i = 0; i < len; i++) sum += gaio_knorm_ld(p->x, p->xdt, xo + i * xs);
        }
        const double mean = sum / (double)p->count;
        double sq = 0.0;
        for (int64_t j = 0; j < lines; j++) {
            const int64_t xo = set.x + line_at(p, j).x;
            for (int64_t i = 0; i < len; i++) {
                const double d = gaio_knorm_ld(p->x, p->xdt, xo + i * xs) - mean;
                sq += d * d;
            }
        }
        const float m = (float)mean, rstd = (float)(1.0 / sqrt(sq / (double)p->count + (double)p->epsilon));
        gaio_knorm_stats(p, &set, m, rstd);
        if (!p->y) continue;
        /* Every read of x for the statistics is done: y may be x itself. */
        for (int64_t j = 0; j < lines; j++) {
            const gaio_knorm_at l = line_at(p, j);
            const int64_t xo = set.x + l.x, yo = set.y + l.y, so = set.s + l.s, bo = set.b + l.b;
            for (int64_t i = 0; i < len; i++) {
                const float v = gaio_knorm_ld(p->x, p->xdt, xo + i * xs);
                gaio_knorm_st(p->y, p->xdt, yo + i * ys, gaio_knorm_out(p, v, m, rstd, so + i * ss, bo + i * bs));
            }
        }
    }
}

static gaio_status dnn_norm(const gaio_launch_info *info, void *const *args) {
    (void)info;
    gaio_knorm p;
    memcpy(&p, args[0], sizeof p);
    int64_t per = 3 * p.count, g = per > 0 ? 16384 / per : 1;
    gaio__parallel_for((size_t)p.sets, (size_t)(g < 1 ? 1 : g), norm_sets, &p);
    return GAIO_OK;
}

static const size_t norm_sizes[1] = {sizeof(gaio_knorm)};

const gaio_builtin_kernel gaio__dnn_norm_kernels[] = {
    {"gaio_dnn_norm", dnn_norm, 1, norm_sizes},
    {"gaio_dnn_norm_rows", dnn_norm, 1, norm_sizes},  /* the CUDA kernel's register-resident split */
    {"gaio_dnn_norm_rows8", dnn_norm, 1, norm_sizes}, /* and its f16 vector one */
    {NULL, NULL, 0, NULL},
};
