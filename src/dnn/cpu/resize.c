/* Host kernel of gaio_resize2d (src/dnn/resize.c): the taps of every output column
 * and row are worked out once per launch (resize_math.h, as the CUDA kernel does per
 * element), then output rows are filled over the worker pool. */
#include <stdlib.h>
#include <string.h>

#include "core/workers.h"
#include "dnn/cpu/tables.h"
#include "dnn/resize_math.h"

typedef struct resize_job {
    gaio_ktensor x, y;
    gaio_kresize p;
    gaio_kresize_taps *th, *tw; /* per output row and column */
} resize_job;

static void put(const gaio_ktensor *t, int64_t off, float v) {
    if (t->dtype == GAIO_KT_F16)
        ((uint16_t *)(uintptr_t)t->ptr)[off] = gaio_k_f32_to_f16(v);
    else
        ((float *)(uintptr_t)t->ptr)[off] = v;
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
        const gaio_kresize_taps *th = &j->th[oh];
        for (int64_t ow = 0; ow < OW; ow++)
            for (int64_t c = c0; c < c1; c++)
                put(&j->y, n * ys[0] + c * ys[1] + oh * ys[2] + ow * ys[3],
                    gaio_kresize_at(&j->x, &j->p, th, &j->tw[ow], n, c));
    }
}

static gaio_status dnn_resize2d(const gaio_launch_info *info, void *const *args) {
    (void)info;
    resize_job j;
    memcpy(&j.x, args[0], sizeof j.x);
    memcpy(&j.y, args[1], sizeof j.y);
    memcpy(&j.p, args[2], sizeof j.p);
    const int64_t H = j.x.shape[2], W = j.x.shape[3], OH = j.y.shape[2], OW = j.y.shape[3];
    j.th = malloc((size_t)(OH + OW) * sizeof *j.th);
    if (!j.th) return GAIO_ERR_NO_MEMORY;
    j.tw = j.th + OH;
    for (int64_t o = 0; o < OH; o++) gaio_kresize_axis(&j.p, 0, H, OH, o, &j.th[o]);
    for (int64_t o = 0; o < OW; o++) gaio_kresize_axis(&j.p, 1, W, OW, o, &j.tw[o]);
    const int64_t rows = j.y.shape[0] * (j.p.c_inner ? 1 : j.y.shape[1]) * OH;
    const int64_t per_row = OW * (j.p.c_inner ? j.y.shape[1] : 1) * (j.p.mode == 2 ? 16 : 4);
    const int64_t grain = per_row > 0 && 16384 / per_row > 1 ? 16384 / per_row : 1;
    gaio__parallel_for((size_t)rows, (size_t)grain, resize_rows, &j);
    free(j.th);
    return GAIO_OK;
}

static const size_t resize_sizes[3] = {sizeof(gaio_ktensor), sizeof(gaio_ktensor), sizeof(gaio_kresize)};

const gaio_builtin_kernel gaio__dnn_resize_kernels[] = {
    {"gaio_dnn_resize2d", dnn_resize2d, 3, resize_sizes},
    {NULL, NULL, 0, NULL},
};
