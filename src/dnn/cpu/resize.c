/* Host kernel of gaio_resize2d (src/dnn/resize.c): the taps and weights of every
 * output row and column are worked out once per launch (resize_math.h, as the CUDA
 * kernel does per element), then output rows are filled over the worker pool, x's
 * rows interpolated along W first, then those along H, as the reference nests them. */
#include <stdlib.h>
#include <string.h>

#include "core/workers.h"
#include "dnn/cpu/tables.h"
#include "dnn/resize_math.h"

/* One output index's taps along an axis: count (0: the extrapolation value) from
 * first on, their weights at w[index * stride]. */
typedef struct axis_taps {
    int64_t first;
    int32_t count;
} axis_taps;

typedef struct resize_job {
    gaio_ktensor x, y;
    gaio_kresize p;
    axis_taps *th, *tw; /* per output row and column */
    float *wh, *ww;
    int32_t sh, sw; /* weights per row, per column */
} resize_job;

static float get(const gaio_ktensor *t, int64_t off) {
    if (t->dtype == GAIO_KT_F16) return gaio_k_f16_to_f32(((const uint16_t *)(uintptr_t)t->ptr)[off]);
    return ((const float *)(uintptr_t)t->ptr)[off];
}

static void put(const gaio_ktensor *t, int64_t off, float v) {
    if (t->dtype == GAIO_KT_F16)
        ((uint16_t *)(uintptr_t)t->ptr)[off] = gaio_k_f32_to_f16(v);
    else
        ((float *)(uintptr_t)t->ptr)[off] = v;
}

static float at(const resize_job *j, int64_t n, int64_t c, int64_t oh, int64_t ow) {
    const axis_taps *th = &j->th[oh], *tw = &j->tw[ow];
    if (!th->count || !tw->count) return j->p.extrapolation;
    const float *wh = j->wh + oh * j->sh, *ww = j->ww + ow * j->sw;
    const int64_t H = j->x.shape[2], W = j->x.shape[3], *xs = j->x.strides;
    const int64_t base = n * xs[0] + c * xs[1];
    float acc = 0.0f;
    for (int32_t i = 0; i < th->count; i++) {
        const int64_t row = base + gaio_kresize_clamp(th->first + i, H) * xs[2];
        float v = 0.0f;
        for (int32_t k = 0; k < tw->count; k++) v += ww[k] * get(&j->x, row + gaio_kresize_clamp(tw->first + k, W) * xs[3]);
        acc += wh[i] * v;
    }
    return acc;
}

/* Items are output rows: (n, c, oh), or (n, oh) with every channel when y's channels
 * are innermost, so that writes run along memory. */
static void resize_rows(void *arg, size_t begin, size_t end) {
    const resize_job *j = arg;
    const int64_t C = j->y.shape[1], OH = j->y.shape[2], OW = j->y.shape[3];
    const int64_t *ys = j->y.strides;
    for (size_t r = begin; r < end; r++) {
        const int64_t oh = (int64_t)r % OH, rest = (int64_t)r / OH;
        const int64_t n = j->p.c_inner ? rest : rest / C, c0 = j->p.c_inner ? 0 : rest % C;
        const int64_t c1 = j->p.c_inner ? C : c0 + 1;
        for (int64_t ow = 0; ow < OW; ow++)
            for (int64_t c = c0; c < c1; c++) put(&j->y, n * ys[0] + c * ys[1] + oh * ys[2] + ow * ys[3], at(j, n, c, oh, ow));
    }
}

/* The taps of every output index of axis a into t and w (stride weights each). */
static void axis_table(const gaio_kresize *p, int a, int64_t in, int64_t out, int32_t stride, axis_taps *t, float *w) {
    for (int64_t o = 0; o < out; o++) {
        float *wo = w + o * stride;
        if (p->antialias) {
            gaio_kresize_wide wide;
            gaio_kresize_wide_axis(p, a, in, out, o, &wide);
            t[o].first = wide.first, t[o].count = wide.count;
            for (int32_t i = 0; i < wide.count; i++) wo[i] = gaio_kresize_aa_weight(p, &wide, i, in);
        } else {
            gaio_kresize_taps k;
            gaio_kresize_axis(p, a, in, out, o, &k);
            t[o].first = k.first, t[o].count = k.count;
            for (int32_t i = 0; i < k.count; i++) wo[i] = k.w[i];
        }
    }
}

static gaio_status dnn_resize2d(const gaio_launch_info *info, void *const *args) {
    (void)info;
    resize_job j;
    memcpy(&j.x, args[0], sizeof j.x);
    memcpy(&j.y, args[1], sizeof j.y);
    memcpy(&j.p, args[2], sizeof j.p);
    const int64_t H = j.x.shape[2], W = j.x.shape[3], OH = j.y.shape[2], OW = j.y.shape[3];
    j.sh = j.p.antialias ? (int32_t)gaio_kresize_aa_count(j.p.mode, j.p.scale[0]) : 4;
    j.sw = j.p.antialias ? (int32_t)gaio_kresize_aa_count(j.p.mode, j.p.scale[1]) : 4;
    j.th = malloc((size_t)(OH + OW) * sizeof *j.th);
    j.wh = malloc((size_t)(OH * j.sh + OW * j.sw) * sizeof *j.wh);
    if (!j.th || !j.wh) {
        free(j.th);
        free(j.wh);
        return GAIO_ERR_NO_MEMORY;
    }
    j.tw = j.th + OH, j.ww = j.wh + OH * j.sh;
    axis_table(&j.p, 0, H, OH, j.sh, j.th, j.wh);
    axis_table(&j.p, 1, W, OW, j.sw, j.tw, j.ww);
    const int64_t rows = j.y.shape[0] * (j.p.c_inner ? 1 : j.y.shape[1]) * OH;
    const int64_t per_row = OW * (j.p.c_inner ? j.y.shape[1] : 1) * (int64_t)j.sh * j.sw;
    const int64_t grain = per_row > 0 && 16384 / per_row > 1 ? 16384 / per_row : 1;
    gaio__parallel_for((size_t)rows, (size_t)grain, resize_rows, &j);
    free(j.th);
    free(j.wh);
    return GAIO_OK;
}

static const size_t resize_sizes[3] = {sizeof(gaio_ktensor), sizeof(gaio_ktensor), sizeof(gaio_kresize)};

const gaio_builtin_kernel gaio__dnn_resize_kernels[] = {
    {"gaio_dnn_resize2d", dnn_resize2d, 3, resize_sizes},
    {NULL, NULL, 0, NULL},
};
