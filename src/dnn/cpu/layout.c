/* Host kernel of the layout ops (src/dnn/layout.c): gaio_dnn_layout_copy(x, y), a
 * copy between two views of one shape, y[i...] = x[i...].
 *
 * The op has merged every dimension it could, so a packed copy arrives as one row.
 * Work items are rows (every dimension but the last); a chunk of rows decodes its
 * first row's coordinates once and then steps through the others like an odometer.
 * A row whose elements are adjacent on both sides is one memcpy. */
#include <string.h>

#include "core/workers.h"
#include "dnn/cpu/tables.h"
#include "dnn/ktensor.h"

typedef struct copy_job {
    gaio_ktensor x, y;
    size_t es;
} copy_job;

#define ROW_LOOP(T)                                                                                 \
    do {                                                                                            \
        const T *s_ = (const T *)xr;                                                                \
        T *d_ = (T *)yr;                                                                            \
        for (int64_t i_ = 0; i_ < len; i_++) d_[i_ * ys] = s_[i_ * xs];                            \
    } while (0)

static void copy_rows(void *arg, size_t begin, size_t end) {
    const copy_job *j = arg;
    int32_t n = j->y.ndim, last = n - 1;
    int64_t len = j->y.shape[last], xs = j->x.strides[last], ys = j->y.strides[last];
    int64_t c[GAIO_KT_MAX_NDIM] = {0};
    int64_t r = (int64_t)begin;
    for (int32_t d = last - 1; d >= 0; d--) c[d] = r % j->y.shape[d], r /= j->y.shape[d];
    for (size_t row = begin; row < end; row++) {
        int64_t xo = 0, yo = 0;
        for (int32_t d = 0; d < last; d++) xo += c[d] * j->x.strides[d], yo += c[d] * j->y.strides[d];
        const char *xr = (const char *)(uintptr_t)j->x.ptr + xo * (int64_t)j->es;
        char *yr = (char *)(uintptr_t)j->y.ptr + yo * (int64_t)j->es;
        if (xs == 1 && ys == 1)
            memcpy(yr, xr, (size_t)len * j->es);
        else if (j->es == 2)
            ROW_LOOP(uint16_t);
        else if (j->es == 4)
            ROW_LOOP(uint32_t);
        else if (j->es == 8)
            ROW_LOOP(uint64_t);
        else
            ROW_LOOP(uint8_t);
        for (int32_t d = last - 1; d >= 0 && ++c[d] == j->y.shape[d]; d--) c[d] = 0;
    }
}

static gaio_status layout_copy(const gaio_launch_info *info, void *const *args) {
    (void)info;
    copy_job j;
    memcpy(&j.x, args[0], sizeof j.x);
    memcpy(&j.y, args[1], sizeof j.y);
    j.es = gaio_kt_size(j.y.dtype);
    int32_t last = j.y.ndim - 1;
    int64_t rows = 1;
    for (int32_t d = 0; d < last; d++) rows *= j.y.shape[d];
    /* Chunks of at least ~64 KiB moved, so that small copies stay on one thread. */
    int64_t row_bytes = j.y.shape[last] * (int64_t)j.es;
    size_t grain = (size_t)((65536 + row_bytes - 1) / row_bytes);
    gaio__parallel_for((size_t)rows, grain ? grain : 1, copy_rows, &j);
    return GAIO_OK;
}

static const size_t copy_sizes[2] = {sizeof(gaio_ktensor), sizeof(gaio_ktensor)};

const gaio_builtin_kernel gaio__dnn_layout_kernels[] = {
    {"gaio_dnn_layout_copy", layout_copy, 2, copy_sizes},
    {NULL, NULL, 0, NULL},
};
