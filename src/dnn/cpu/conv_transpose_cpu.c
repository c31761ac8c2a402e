/* The host transposed convolution (gaio_conv_transpose2d on a CPU context): oneDNN's
 * deconvolution where oneDNN loads (conv_transpose_onednn.c), else gaio's own loop
 * here, which takes every problem the front end accepts.
 *
 * gaio's loop gathers rather than scatters, so that output rows are independent work
 * items for the worker pool: y row (n, p) takes, for each kernel row r with
 * p + pad_top - r dilation = h stride for an x row h, and alike for each column, the
 * product of x's channels of the group at (h, w) with the packed weights of the tap,
 * accumulated in f32 over all of the group's output channels at once:
 *   x  widened to f32 with channels innermost (an f32 x already so is read in place),
 *   w  packed to f32 as [group][r][s][C / groups][K / groups] (output channels innermost,
 *      the loop the compiler vectorises),
 * then each output channel gets the bias and is stored through y's strides (rounded to
 * nearest even for f16). */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/half.h"
#include "core/workers.h"
#include "dnn/conv_transpose_kernel.h"
#include "dnn/cpu/conv_transpose_onednn.h"
#include "dnn/cpu/tables.h"
#include "dnn/dnn_internal.h"

#define FN "gaio_conv_transpose2d"
#define MIN_ITEM_FLOPS 1048576.0 /* 2^20: below this a row is not worth waking a worker */

typedef struct convt_job {
    const gaio__convt_args *a;
    const float *x;    /* [n][h][w][c] */
    const float *w;    /* [g][r][s][cg][kg] */
    float *bias;       /* k values, or NULL */
    int64_t cg, kg;
    atomic_int failed; /* a worker ran out of memory */
} convt_job;

static float load(gaio_dtype dt, const void *p, int64_t i) {
    return dt == GAIO_DTYPE_F16 ? h2f(((const uint16_t *)p)[i]) : ((const float *)p)[i];
}

/* The taps of one axis that reach output index o: kernel index and input index. */
static int64_t taps(int64_t o, int64_t pad0, int64_t k, int64_t stride, int64_t dil, int64_t in, int64_t *ki,
                    int64_t *ii) {
    int64_t n = 0;
    for (int64_t r = 0; r < k; r++) {
        int64_t t = o + pad0 - r * dil;
        if (t < 0) break; /* later taps reach further back */
        if (t % stride) continue;
        int64_t i = t / stride;
        if (i >= in) continue;
        ki[n] = r, ii[n++] = i;
    }
    return n;
}

/* Items are output rows (n, p). */
static void convt_rows(void *arg, size_t begin, size_t end) {
    convt_job *j = arg;
    const gaio__convt_args *a = j->a;
    const int64_t C = a->c, H = a->h, W = a->w, R = a->r, S = a->s, P = a->p, Q = a->q;
    const int64_t cg = j->cg, kg = j->kg;
    const bool f16 = a->dtype == GAIO_DTYPE_F16;
    /* The taps' indexes first, then the accumulators: the int64s stay 8-byte aligned
     * whatever kg is. */
    int64_t *rk = malloc((size_t)(2 * R + 2 * S) * sizeof(int64_t) + (size_t)kg * sizeof(float));
    if (!rk) {
        atomic_store(&j->failed, 1);
        return;
    }
    int64_t *ri = rk + R, *sk = ri + R, *si = sk + S;
    float *acc = (float *)(void *)(si + S);
    for (size_t item = begin; item < end; item++) {
        const int64_t n = (int64_t)item / P, oh = (int64_t)item % P;
        const int64_t nr = taps(oh, a->pad[0], R, a->stride[0], a->dilation[0], H, rk, ri);
        for (int64_t ow = 0; ow < Q; ow++) {
            const int64_t ns = taps(ow, a->pad[1], S, a->stride[1], a->dilation[1], W, sk, si);
            for (int64_t g = 0; g < a->groups; g++) {
                for (int64_t ko = 0; ko < kg; ko++) acc[ko] = j->bias ? j->bias[g * kg + ko] : 0.0f;
                for (int64_t tr = 0; tr < nr; tr++)
                    for (int64_t ts = 0; ts < ns; ts++) {
                        const float *xp = j->x + ((n * H + ri[tr]) * W + si[ts]) * C + g * cg;
                        const float *wp = j->w + ((g * R + rk[tr]) * S + sk[ts]) * cg * kg;
                        for (int64_t ci = 0; ci < cg; ci++) {
                            const float xv = xp[ci];
                            const float *restrict wr = wp + ci * kg;
                            float *restrict ac = acc;
                            for (int64_t ko = 0; ko < kg; ko++) ac[ko] += xv * wr[ko];
                        }
                    }
                const int64_t yb = n * a->ys[0] + g * kg * a->ys[1] + oh * a->ys[2] + ow * a->ys[3];
                if (f16)
                    for (int64_t ko = 0; ko < kg; ko++) ((uint16_t *)a->y)[yb + ko * a->ys[1]] = f2h(acc[ko]);
                else
                    for (int64_t ko = 0; ko < kg; ko++) ((float *)a->y)[yb + ko * a->ys[1]] = acc[ko];
            }
        }
    }
    free(rk);
}

/* x widened to [n][h][w][c], a row (n, h) per item. */
typedef struct widen_job {
    const gaio__convt_args *a;
    float *out;
} widen_job;

static void widen_rows(void *arg, size_t begin, size_t end) {
    const widen_job *j = arg;
    const gaio__convt_args *a = j->a;
    for (size_t item = begin; item < end; item++) {
        const int64_t n = (int64_t)item / a->h, h = (int64_t)item % a->h;
        float *o = j->out + (size_t)item * (size_t)(a->w * a->c);
        for (int64_t w = 0; w < a->w; w++)
            for (int64_t c = 0; c < a->c; c++)
                o[w * a->c + c] = load(a->dtype, a->x, n * a->xs[0] + c * a->xs[1] + h * a->xs[2] + w * a->xs[3]);
    }
}

static bool packed_nhwc_f32(const gaio__convt_args *a) {
    return a->dtype == GAIO_DTYPE_F32 && (a->c == 1 || a->xs[1] == 1) && (a->w == 1 || a->xs[3] == a->c) &&
           (a->h == 1 || a->xs[2] == a->w * a->c) && (a->n == 1 || a->xs[0] == a->h * a->w * a->c);
}

static gaio_status own_loop(const gaio__convt_args *a) {
    convt_job j;
    memset(&j, 0, sizeof j);
    j.a = a;
    j.cg = a->c / a->groups, j.kg = a->k / a->groups;
    const size_t wcount = (size_t)(a->c * j.kg * a->r * a->s);
    bool in_place = packed_nhwc_f32(a);
    float *xw = in_place ? NULL : malloc((size_t)(a->n * a->h * a->w * a->c) * sizeof(float));
    float *wp = malloc(wcount * sizeof(float));
    float *bias = a->bias ? malloc((size_t)a->k * sizeof(float)) : NULL;
    if ((!in_place && !xw) || !wp || (a->bias && !bias)) {
        free(xw), free(wp), free(bias);
        return gaio__fail(GAIO_ERR_NO_MEMORY, FN, "out of host memory for the transposed convolution's scratch");
    }
    if (!in_place) {
        widen_job wj = {a, xw};
        gaio__parallel_for((size_t)(a->n * a->h), 16, widen_rows, &wj);
    }
    /* w[c, ko, r, s] of group g = c / cg -> wp[g][r][s][c % cg][ko] */
    for (int64_t c = 0; c < a->c; c++)
        for (int64_t ko = 0; ko < j.kg; ko++)
            for (int64_t r = 0; r < a->r; r++)
                for (int64_t s = 0; s < a->s; s++) {
                    int64_t g = c / j.cg, ci = c % j.cg;
                    wp[(((g * a->r + r) * a->s + s) * j.cg + ci) * j.kg + ko] =
                        load(a->dtype, a->wt, c * a->ws[0] + ko * a->ws[1] + r * a->ws[2] + s * a->ws[3]);
                }
    for (int64_t k = 0; bias && k < a->k; k++) bias[k] = load(a->dtype, a->bias, k);
    j.x = in_place ? a->x : xw, j.w = wp, j.bias = bias;
    atomic_init(&j.failed, 0);
    /* A row's work: its taps (about R S / strides of them) times C / groups times K. */
    double row = (double)a->q * (double)a->r * (double)a->s / ((double)a->stride[0] * (double)a->stride[1]) *
                 (double)j.cg * (double)a->k;
    double grain = row > 0 ? MIN_ITEM_FLOPS / row : 1;
    gaio__parallel_for((size_t)(a->n * a->p), grain < 1 ? 1 : (size_t)grain, convt_rows, &j);
    free(xw), free(wp), free(bias);
    if (atomic_load(&j.failed)) return gaio__fail(GAIO_ERR_NO_MEMORY, FN, "out of host memory for accumulators");
    return GAIO_OK;
}

gaio_status gaio__convt_cpu(const gaio__convt_args *a) {
    gaio_status st = gaio__convt_onednn(a);
    if (st != GAIO_ERR_NOT_SUPPORTED) return st; /* ran, or failed for real */
    return own_loop(a);
}

void gaio__convt_cpu_prepare(const gaio__convt_args *a, char *impl, size_t size) {
    if (!impl || !size) return;
    if (gaio__convt_onednn_prepare(a, impl, size) == GAIO_OK) return;
    snprintf(impl, size, "gaio gather loop (f32 accumulation)");
}

/* ---- gaio_dnn_conv_transpose's host twin ----
 * gaio_conv_transpose2d launches the kernel on a GPU only (the host runs the paths
 * above); it is here because every built-in kernel has a host twin under its name,
 * which also registers the arguments' sizes. A row (n, k, oh) per item. */

typedef struct twin_job {
    gaio_ktensor x, w, b, y;
    gaio_kconvt p;
} twin_job;

static void twin_rows(void *arg, size_t begin, size_t end) {
    const twin_job *j = arg;
    const int64_t K = j->y.shape[1], P = j->y.shape[2], Q = j->y.shape[3];
    for (size_t i = begin; i < end; i++) {
        const int64_t oh = (int64_t)i % P, nk = (int64_t)i / P, k = nk % K, n = nk / K;
        for (int64_t ow = 0; ow < Q; ow++)
            gaio_kt_put(&j->y, n * j->y.strides[0] + k * j->y.strides[1] + oh * j->y.strides[2] + ow * j->y.strides[3],
                        gaio_convt_at(&j->x, &j->w, &j->b, &j->p, n, k, oh, ow));
    }
}

static gaio_status dnn_conv_transpose(const gaio_launch_info *info, void *const *args) {
    (void)info;
    twin_job j;
    memcpy(&j.x, args[0], sizeof j.x);
    memcpy(&j.w, args[1], sizeof j.w);
    memcpy(&j.b, args[2], sizeof j.b);
    memcpy(&j.y, args[3], sizeof j.y);
    memcpy(&j.p, args[4], sizeof j.p);
    const int64_t rows = j.y.shape[0] * j.y.shape[1] * j.y.shape[2];
    const int64_t per_row = j.y.shape[3] * j.w.shape[2] * j.w.shape[3] * (j.w.shape[0] / j.p.groups);
    const int64_t grain = per_row > 0 ? 16384 / per_row : 1;
    gaio__parallel_for((size_t)rows, (size_t)(grain < 1 ? 1 : grain), twin_rows, &j);
    return GAIO_OK;
}

static const size_t twin_sizes[5] = {sizeof(gaio_ktensor), sizeof(gaio_ktensor), sizeof(gaio_ktensor),
                                     sizeof(gaio_ktensor), sizeof(gaio_kconvt)};

const gaio_builtin_kernel gaio__dnn_convt_kernels[] = {
    {"gaio_dnn_conv_transpose", dnn_conv_transpose, 5, twin_sizes},
    {NULL, NULL, 0, NULL},
};
