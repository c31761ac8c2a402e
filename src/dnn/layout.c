/* gaio_transpose and gaio_concat: checks, then strided copies.
 *
 * Both ops reduce to one kernel, gaio_dnn_layout_copy(x, y): y[i...] = x[i...] for two
 * views of one shape with any strides (host twin in dnn/cpu/layout.c, CUDA in
 * kernels/dnn/layout.cu). A transpose is x viewed with its strides permuted into y's
 * order; a concat is one copy per input into the slab of y it fills. Before the launch
 * the views are simplified (dimensions of 1 dropped, dimensions contiguous on both
 * sides merged), so that packed copies become one long row and the host kernel moves
 * rows with memcpy. */
#include <stdio.h>
#include <string.h>

#include "core/builtin_kernels.h"
#include "core/fail.h"
#include "core/object.h"
#include "core/op.h"
#include "dnn/dnn_internal.h"
#include "dnn/ktensor.h"
#include "gaio/buffer.h"

#define MAX_INPUTS 64
#define KERNEL "gaio_dnn_layout_copy"

typedef gaio__ktensor_view view;

static gaio_status resolve(const char *fn, const char *name, const gaio_tensor *t, gaio_stream *s, view *v) {
    return gaio__ktensor_view_resolve_ex(fn, name, "layout ops", t, s, GAIO__KT_NEGATIVE_STRIDES, v);
}

static int64_t magnitude(int64_t v) { return v < 0 ? -v : v; }

/* Drops dimensions of 1, orders the rest by y's strides (largest first: a copy may
 * visit elements in any order, and an NHWC tensor's channels, dimension 1, are its
 * innermost) and merges neighbours that are contiguous in both x and y (same shape),
 * so that the kernels walk as few, as long, rows as possible: a channel-axis concat of
 * NHWC maps becomes [N * H * W, C] rows. */
static void simplify(gaio_ktensor *x, gaio_ktensor *y) {
    for (int32_t i = 1; i < y->ndim; i++) { /* insertion sort, stable */
        int64_t sh = y->shape[i], xs = x->strides[i], ys = y->strides[i];
        int32_t j = i;
        for (; j > 0 && magnitude(y->strides[j - 1]) < magnitude(ys); j--) {
            y->shape[j] = y->shape[j - 1], x->strides[j] = x->strides[j - 1], y->strides[j] = y->strides[j - 1];
        }
        y->shape[j] = sh, x->strides[j] = xs, y->strides[j] = ys;
    }
    int32_t n = 0;
    for (int32_t i = 0; i < y->ndim; i++) {
        if (y->shape[i] == 1) continue;
        if (n > 0 && x->strides[n - 1] == x->strides[i] * y->shape[i] &&
            y->strides[n - 1] == y->strides[i] * y->shape[i]) {
            y->shape[n - 1] *= y->shape[i];
            x->strides[n - 1] = x->strides[i];
            y->strides[n - 1] = y->strides[i];
            continue;
        }
        y->shape[n] = y->shape[i];
        x->strides[n] = x->strides[i];
        y->strides[n] = y->strides[i];
        n++;
    }
    if (n == 0) y->shape[0] = 1, x->strides[0] = y->strides[0] = 1, n = 1;
    for (int32_t i = n; i < GAIO_KT_MAX_NDIM; i++) y->shape[i] = x->strides[i] = y->strides[i] = 0;
    x->ndim = y->ndim = n;
    memcpy(x->shape, y->shape, sizeof x->shape);
}

/* The CUDA kernel's test for moving 16-byte vectors (kernels/dnn/layout.cu
 * vector_rows): then a thread's work is 16 bytes, not one element. */
/* The CUDA kernel's test (kernels/dnn/layout.cu vector_rows): it moves 16 bytes a thread. */
static bool vector_rows(const gaio_ktensor *x, const gaio_ktensor *y) {
    int64_t es = (int64_t)gaio_dtype_size((gaio_dtype)y->dtype);
    int32_t last = y->ndim - 1;
    if (((x->ptr | y->ptr) & 15u) != 0 || x->strides[last] != 1 || y->strides[last] != 1 ||
        (y->shape[last] * es) % 16 != 0)
        return false;
    for (int32_t d = 0; d < last; d++)
        if ((x->strides[d] * es) % 16 != 0 || (y->strides[d] * es) % 16 != 0) return false;
    return true;
}

static gaio_dim3 grid_for(gaio_stream *s, const gaio_ktensor *x, const gaio_ktensor *y, gaio_dim3 *block) {
    gaio_dim3 grid = {1, 1, 1};
    *block = (gaio_dim3){1, 1, 1};
    if (s->ctx->be->kind != GAIO_DEVICE_CUDA) return grid; /* the host kernel splits the work itself */
    int64_t total = 1;
    for (int32_t i = 0; i < y->ndim; i++) total *= y->shape[i];
    if (vector_rows(x, y)) total = total * (int64_t)gaio_dtype_size((gaio_dtype)y->dtype) / 16;
    *block = (gaio_dim3){256, 1, 1};
    int64_t blocks = (total + 255) / 256;
    /* The kernel strides over the rest: enough blocks to fill any GPU. */
    grid.x = (uint32_t)(blocks < 65536 ? blocks : 65536);
    return grid;
}

static gaio_status launch(const char *fn, gaio_stream *s, gaio_kernel *k, gaio_ktensor x, gaio_ktensor y,
                          gaio_buffer *xb, gaio_buffer *yb) {
    simplify(&x, &y);
    gaio_dim3 block, grid = grid_for(s, &x, &y, &block);
    gaio_arg args[2] = {GAIO_ARG(x), GAIO_ARG(y)};
    gaio_buffer *held[2] = {xb, yb};
    return gaio__launch_held(fn, s, k, grid, block, 0, args, 2, held, 2);
}

static gaio_status kernel_ref(const char *fn, gaio_kernel **k) {
    gaio_status st = gaio__kernel_builtin(KERNEL, k);
    if (st != GAIO_OK) return gaio__fail(st, fn, "%s", gaio_last_error());
    return GAIO_OK;
}

gaio_status gaio_transpose(gaio_stream *stream, const gaio_tensor *x, const gaio_tensor *y, const int32_t *perm) {
    const char *fn = __func__;
    if (!stream) return BAD("stream is NULL");
    if (!perm) return BAD("perm is NULL");
    view vx, vy;
    gaio_status st;
    if ((st = resolve(fn, "x", x, stream, &vx)) != GAIO_OK || (st = resolve(fn, "y", y, stream, &vy)) != GAIO_OK)
        return st;
    if (vx.k.dtype != vy.k.dtype)
        return BAD("x is %s but y is %s: transpose moves elements, it does not convert them (gaio_cast does)",
                   gaio_dtype_name((gaio_dtype)vx.k.dtype), gaio_dtype_name((gaio_dtype)vy.k.dtype));
    int32_t n = vx.k.ndim;
    if (vy.k.ndim != n) return BAD("x has %d dimensions but y has %d", (int)n, (int)vy.k.ndim);
    bool seen[GAIO_KT_MAX_NDIM] = {false};
    for (int32_t i = 0; i < n; i++) {
        if (perm[i] < 0 || perm[i] >= n || seen[perm[i]])
            return BAD("perm[%d] is %d: perm must hold each of 0 .. %d once", (int)i, (int)perm[i], (int)(n - 1));
        seen[perm[i]] = true;
    }
    for (int32_t i = 0; i < n; i++)
        if (vy.k.shape[i] != vx.k.shape[perm[i]]) {
            char xs[128], ys[128];
            gaio__shape_text(vx.k.ndim, vx.k.shape, xs, sizeof xs);
            gaio__shape_text(vy.k.ndim, vy.k.shape, ys, sizeof ys);
            return BAD("y.shape[%d] is %lld but x.shape[perm[%d] = %d] is %lld (x %s, y %s)", (int)i,
                       (long long)vy.k.shape[i], (int)i, (int)perm[i], (long long)vx.k.shape[perm[i]], xs, ys);
        }
    if (!gaio__ktensor_distinct(&vy.k)) return BAD("y's strides make some of its elements share memory");
    if (gaio__ktensor_view_overlap(&vx, &vy)) return BAD("y overlaps x: transpose cannot work in place");

    /* x seen in y's order. */
    gaio_ktensor xp = vx.k;
    for (int32_t i = 0; i < n; i++) xp.shape[i] = vx.k.shape[perm[i]], xp.strides[i] = vx.k.strides[perm[i]];
    gaio_kernel *k;
    if ((st = kernel_ref(fn, &k)) != GAIO_OK) return st;
    st = launch(fn, stream, k, xp, vy.k, x->buffer, y->buffer);
    gaio__kernel_unref(k);
    return st;
}

gaio_status gaio_concat(gaio_stream *stream, const gaio_tensor *const *xs, int32_t count, int32_t axis,
                        const gaio_tensor *y) {
    const char *fn = __func__;
    if (!stream) return BAD("stream is NULL");
    if (!xs) return BAD("xs is NULL");
    if (count < 1 || count > MAX_INPUTS) return BAD("count is %d: concat takes 1 to %d inputs", (int)count, MAX_INPUTS);
    view vy, vx[MAX_INPUTS];
    gaio_status st;
    if ((st = resolve(fn, "y", y, stream, &vy)) != GAIO_OK) return st;
    if (!gaio__ktensor_distinct(&vy.k)) return BAD("y's strides make some of its elements share memory");
    int32_t n = vy.k.ndim;
    if (axis < -n || axis >= n) return BAD("axis %d is outside [%d, %d] for y's %d dimensions", (int)axis, (int)-n, (int)(n - 1), (int)n);
    int32_t ax = axis < 0 ? axis + n : axis;
    int64_t along = 0;
    for (int32_t j = 0; j < count; j++) {
        char name[16];
        snprintf(name, sizeof name, "xs[%d]", (int)j);
        if ((st = resolve(fn, name, xs[j], stream, &vx[j])) != GAIO_OK) return st;
        const gaio_ktensor *k = &vx[j].k;
        if (k->dtype != vy.k.dtype)
            return BAD("%s is %s but y is %s: concat takes one dtype", name, gaio_dtype_name((gaio_dtype)k->dtype),
                       gaio_dtype_name((gaio_dtype)vy.k.dtype));
        if (k->ndim != n) return BAD("%s has %d dimensions but y has %d", name, (int)k->ndim, (int)n);
        for (int32_t i = 0; i < n; i++)
            if (i != ax && k->shape[i] != vy.k.shape[i]) {
                char a[128], b[128];
                gaio__shape_text(k->ndim, k->shape, a, sizeof a);
                gaio__shape_text(vy.k.ndim, vy.k.shape, b, sizeof b);
                return BAD("%s is %s but y is %s: dimension %d differs and only axis %d may", name, a, b, (int)i,
                           (int)ax);
            }
        along += k->shape[ax];
        if (gaio__ktensor_view_overlap(&vx[j], &vy)) return BAD("y overlaps %s: concat cannot work in place", name);
    }
    if (along != vy.k.shape[ax])
        return BAD("the inputs add up to %lld along axis %d but y has %lld", (long long)along, (int)ax,
                   (long long)vy.k.shape[ax]);

    gaio_kernel *k;
    if ((st = kernel_ref(fn, &k)) != GAIO_OK) return st;
    uint64_t es = gaio_dtype_size((gaio_dtype)vy.k.dtype);
    int64_t at = 0;
    for (int32_t j = 0; j < count && st == GAIO_OK; j++) {
        gaio_ktensor slab = vy.k;
        slab.ptr += (uint64_t)(at * vy.k.strides[ax]) * es;
        slab.shape[ax] = vx[j].k.shape[ax];
        at += vx[j].k.shape[ax];
        st = launch(fn, stream, k, vx[j].k, slab, xs[j]->buffer, y->buffer);
    }
    gaio__kernel_unref(k);
    return st;
}

gaio_status gaio__copy_any(const char *fn, gaio_stream *stream, const gaio_tensor *x, const gaio_tensor *y) {
    view vx, vy;
    gaio_status st;
    const unsigned any = GAIO__KT_NEGATIVE_STRIDES | GAIO__KT_ANY_DTYPE;
    if ((st = gaio__ktensor_view_resolve_ex(fn, "x", "copies", x, stream, any, &vx)) != GAIO_OK ||
        (st = gaio__ktensor_view_resolve_ex(fn, "y", "copies", y, stream, any, &vy)) != GAIO_OK)
        return st;
    if (vx.k.dtype != vy.k.dtype)
        return BAD("x is %s but y is %s: integers are copied, not converted", gaio_dtype_name((gaio_dtype)vx.k.dtype),
                   gaio_dtype_name((gaio_dtype)vy.k.dtype));
    bool same = vx.k.ndim == vy.k.ndim;
    for (int32_t i = 0; same && i < vx.k.ndim; i++) same = vx.k.shape[i] == vy.k.shape[i];
    if (!same) {
        char a[128], b[128];
        gaio__shape_text(vx.k.ndim, vx.k.shape, a, sizeof a);
        gaio__shape_text(vy.k.ndim, vy.k.shape, b, sizeof b);
        return BAD("x is %s but y is %s: they must have the same shape", a, b);
    }
    if (!gaio__ktensor_distinct(&vy.k)) return BAD("y's strides make some of its elements share memory");
    if (gaio__ktensor_view_overlap(&vx, &vy)) {
        bool identical = vx.k.ptr == vy.k.ptr;
        for (int32_t i = 0; identical && i < vx.k.ndim; i++)
            identical = vx.k.shape[i] == 1 || vx.k.strides[i] == vy.k.strides[i];
        if (identical) return GAIO_OK; /* in place: nothing moves */
        return BAD("y overlaps x without being x itself");
    }
    gaio_kernel *k;
    if ((st = kernel_ref(fn, &k)) != GAIO_OK) return st;
    st = launch(fn, stream, k, vx.k, vy.k, x->buffer, y->buffer);
    gaio__kernel_unref(k);
    return st;
}
