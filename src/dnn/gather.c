/* The indexing ops: gaio_gather, gaio_gather_elements, gaio_where, gaio_pad. Each
 * checks its tensors, rewrites them over the output's shape (gather_math.h: a
 * dimension a tensor does not vary along gets stride 0), orders the dimensions by the
 * output's strides so that NHWC outputs are written in memory order, and makes one
 * launch of a built-in kernel both backends have (host: dnn/cpu/gather.c, CUDA:
 * kernels/dnn/gather.cu). They move elements without computing on them, so they take
 * every dtype; indices and masks are read as they are. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/builtin_kernels.h"
#include "core/fail.h"
#include "core/half.h"
#include "core/object.h"
#include "core/op.h"
#include "dnn/dnn_internal.h"
#include "dnn/gather_math.h"
#include "gaio/buffer.h"

#define BLOCK 256

typedef gaio__ktensor_view view;

_Static_assert((int)GAIO_PAD_CONSTANT == GAIO_KPAD_CONSTANT && (int)GAIO_PAD_REFLECT == GAIO_KPAD_REFLECT &&
                   (int)GAIO_PAD_EDGE == GAIO_KPAD_EDGE && (int)GAIO_PAD_WRAP == GAIO_KPAD_WRAP,
               "gaio_pad_mode and gather_math.h's GAIO_KPAD_* differ");

static gaio_status resolve(const char *fn, const char *name, const gaio_tensor *t, gaio_stream *s, view *v) {
    return gaio__ktensor_view_resolve_ex(fn, name, "indexing ops", t, s,
                                         GAIO__KT_NEGATIVE_STRIDES | GAIO__KT_ANY_DTYPE, v);
}

static gaio_status check_output(const char *fn, const view *y) {
    if (!gaio__ktensor_distinct(&y->k))
        return BAD("y's strides make some of its elements share memory: an output needs each element once");
    return GAIO_OK;
}

static gaio_status apart(const char *fn, const char *name, const view *in, const view *y) {
    if (gaio__ktensor_view_overlap(in, y)) return BAD("y overlaps %s: the indexing ops cannot work in place", name);
    return GAIO_OK;
}

static gaio_status same_dtype(const char *fn, const char *an, const view *a, const char *bn, const view *b) {
    if (a->t.dtype == b->t.dtype) return GAIO_OK;
    return BAD("%s is %s but %s is %s: they take one dtype", an, gaio_dtype_name(a->t.dtype), bn,
               gaio_dtype_name(b->t.dtype));
}

static gaio_status index_dtype(const char *fn, const view *ind) {
    if (ind->t.dtype == GAIO_DTYPE_S32 || ind->t.dtype == GAIO_DTYPE_S64) return GAIO_OK;
    return BAD("indices is %s: indices are s32 or s64", gaio_dtype_name(ind->t.dtype));
}

static gaio_status norm_axis(const char *fn, int32_t axis, int32_t nd, int32_t *out) {
    if (axis < -nd || axis >= nd)
        return BAD("axis %d is outside [%d, %d] for x's %d dimensions", (int)axis, (int)-nd, (int)(nd - 1), (int)nd);
    *out = axis < 0 ? axis + nd : axis;
    return GAIO_OK;
}

static gaio_status shape_error(const char *fn, const char *what, const gaio_tensor *y, int32_t nd, const int64_t *want) {
    char a[128], b[128];
    gaio__shape_text(y->ndim, y->shape, a, sizeof a);
    gaio__shape_text(nd, want, b, sizeof b);
    return BAD("y is %s but %s gives %s", a, what, b);
}

/* The kernels' view of the n tensors (t[0] the output; the rest already over its
 * dimensions) and of `extra` (one value per dimension, may be NULL): the output's
 * dimensions of 1 dropped (no tensor moves along them), the rest ordered by the
 * output's strides, outermost first. */
static void order(gaio_ktensor *const *t, int n, int64_t *extra) {
    const gaio_ktensor *y = t[0];
    int32_t keep[GAIO_KT_MAX_NDIM], m = 0;
    for (int32_t d = 0; d < y->ndim; d++)
        if (y->shape[d] > 1) keep[m++] = d;
    for (int32_t i = 1; i < m; i++) { /* insertion sort: descending |stride| */
        int32_t d = keep[i], j = i;
        int64_t sd = y->strides[d] < 0 ? -y->strides[d] : y->strides[d];
        while (j > 0) {
            int64_t sp = y->strides[keep[j - 1]];
            if ((sp < 0 ? -sp : sp) >= sd) break;
            keep[j] = keep[j - 1];
            j--;
        }
        keep[j] = d;
    }
    int64_t shape[8][GAIO_KT_MAX_NDIM], strides[8][GAIO_KT_MAX_NDIM], ex[GAIO_KT_MAX_NDIM];
    for (int k = 0; k < n; k++)
        for (int32_t i = 0; i < m; i++) shape[k][i] = t[k]->shape[keep[i]], strides[k][i] = t[k]->strides[keep[i]];
    for (int32_t i = 0; extra && i < m; i++) ex[i] = extra[keep[i]];
    int32_t out = m ? m : 1;
    for (int k = 0; k < n; k++) {
        t[k]->ndim = out;
        for (int32_t d = 0; d < GAIO_KT_MAX_NDIM; d++) {
            t[k]->shape[d] = d < m ? shape[k][d] : d < out ? 1 : 0;
            t[k]->strides[d] = d < m ? strides[k][d] : 0;
        }
    }
    for (int32_t d = 0; extra && d < GAIO_KT_MAX_NDIM; d++) extra[d] = d < m ? ex[d] : 0;
}

static int64_t count(const gaio_ktensor *t) {
    int64_t n = 1;
    for (int32_t d = 0; d < t->ndim; d++) n *= t->shape[d];
    return n;
}

static gaio_status launch(const char *fn, gaio_stream *s, const char *name, int64_t work, const gaio_arg *args,
                          size_t nargs, gaio_buffer *const *held, size_t nheld) {
    gaio_dim3 grid = {1, 1, 1}, block = {1, 1, 1};
    if (s->ctx->be->kind == GAIO_DEVICE_CUDA) { /* the host kernels split the work themselves */
        int64_t b = (work + BLOCK - 1) / BLOCK;
        grid.x = (uint32_t)(b < GAIO_DNN_MAX_BLOCKS ? b : GAIO_DNN_MAX_BLOCKS);
        block.x = BLOCK;
    }
    gaio_kernel *k;
    gaio_status st = gaio__kernel_builtin(name, &k);
    if (st != GAIO_OK) return gaio__fail(st, fn, "%s", gaio_last_error());
    st = gaio__launch_held(fn, s, k, grid, block, 0, args, nargs, held, nheld);
    gaio__kernel_unref(k);
    return st;
}

/* The shared tail of both gathers: x and indices already over y's dimensions. */
static gaio_status gather_launch(const char *fn, gaio_stream *s, view *vx, view *vi, view *vy, gaio_kgather g) {
    gaio_ktensor *ts[3] = {&vy->k, &vx->k, &vi->k};
    order(ts, 3, NULL);
    gaio_arg args[4] = {GAIO_ARG(vx->k), GAIO_ARG(vi->k), GAIO_ARG(vy->k), GAIO_ARG(g)};
    gaio_buffer *held[3] = {vx->t.buffer, vi->t.buffer, vy->t.buffer};
    return launch(fn, s, "gaio_dnn_gather", count(&vy->k), args, 4, held, 3);
}

static gaio_status gather_views(const char *fn, gaio_stream *s, const gaio_tensor *x, const gaio_tensor *indices,
                                const gaio_tensor *y, view *vx, view *vi, view *vy) {
    gaio_status st;
    if ((st = resolve(fn, "x", x, s, vx)) != GAIO_OK || (st = resolve(fn, "indices", indices, s, vi)) != GAIO_OK ||
        (st = resolve(fn, "y", y, s, vy)) != GAIO_OK)
        return st;
    if ((st = index_dtype(fn, vi)) != GAIO_OK || (st = same_dtype(fn, "x", vx, "y", vy)) != GAIO_OK ||
        (st = check_output(fn, vy)) != GAIO_OK || (st = apart(fn, "x", vx, vy)) != GAIO_OK ||
        (st = apart(fn, "indices", vi, vy)) != GAIO_OK)
        return st;
    return GAIO_OK;
}

gaio_status gaio_gather(gaio_stream *stream, const gaio_tensor *x, const gaio_tensor *indices, const gaio_tensor *y,
                        int32_t axis) {
    const char *fn = __func__;
    if (!stream) return BAD("stream is NULL");
    view vx, vi, vy;
    gaio_status st = gather_views(fn, stream, x, indices, y, &vx, &vi, &vy);
    if (st != GAIO_OK) return st;
    int32_t nd = vx.t.ndim, q = vi.t.ndim, ax = 0;
    if ((st = norm_axis(fn, axis, nd, &ax)) != GAIO_OK) return st;
    /* A single index may stand for a scalar one: the axis dropped. */
    bool scalar = vy.t.ndim != nd - 1 + q && count(&vi.k) == 1 && nd > 1 && vy.t.ndim == nd - 1;
    if (scalar) q = 0;
    int64_t want[2 * GAIO_TENSOR_MAX_NDIM];
    int32_t ny = 0;
    for (int32_t d = 0; d < ax; d++) want[ny++] = vx.t.shape[d];
    for (int32_t d = 0; d < q; d++) want[ny++] = vi.t.shape[d];
    for (int32_t d = ax + 1; d < nd; d++) want[ny++] = vx.t.shape[d];
    bool same = vy.t.ndim == ny;
    for (int32_t d = 0; same && d < ny; d++) same = vy.t.shape[d] == want[d];
    if (!same) return shape_error(fn, "x with its axis replaced by indices' dimensions", &vy.t, ny, want);
    gaio_kgather g = {vx.t.strides[ax], vx.t.shape[ax]};
    /* x and the indices over y's dimensions. */
    gaio_ktensor kx = vy.k, ki = vy.k;
    kx.ptr = vx.k.ptr, kx.dtype = vx.k.dtype;
    ki.ptr = vi.k.ptr, ki.dtype = vi.k.dtype;
    for (int32_t d = 0; d < ny; d++) {
        bool idx = d >= ax && d < ax + q;
        kx.strides[d] = idx ? 0 : vx.t.strides[d < ax ? d : d - q + 1];
        ki.strides[d] = idx ? vi.t.strides[d - ax] : 0;
    }
    vx.k = kx, vi.k = ki;
    return gather_launch(fn, stream, &vx, &vi, &vy, g);
}

gaio_status gaio_gather_elements(gaio_stream *stream, const gaio_tensor *x, const gaio_tensor *indices,
                                 const gaio_tensor *y, int32_t axis) {
    const char *fn = __func__;
    if (!stream) return BAD("stream is NULL");
    view vx, vi, vy;
    gaio_status st = gather_views(fn, stream, x, indices, y, &vx, &vi, &vy);
    if (st != GAIO_OK) return st;
    int32_t nd = vx.t.ndim, ax = 0;
    if ((st = norm_axis(fn, axis, nd, &ax)) != GAIO_OK) return st;
    if (vi.t.ndim != nd) return BAD("indices has %d dimensions but x has %d: they take one rank", (int)vi.t.ndim, (int)nd);
    bool same = vy.t.ndim == nd;
    for (int32_t d = 0; same && d < nd; d++) same = vy.t.shape[d] == vi.t.shape[d];
    if (!same) return shape_error(fn, "indices' shape", &vy.t, vi.t.ndim, vi.t.shape);
    for (int32_t d = 0; d < nd; d++)
        if (d != ax && vi.t.shape[d] > vx.t.shape[d])
            return BAD("indices->shape[%d] is %lld but x's is %lld: past the gathered axis, indices take no more than "
                       "x has", (int)d, (long long)vi.t.shape[d], (long long)vx.t.shape[d]);
    gaio_kgather g = {vx.t.strides[ax], vx.t.shape[ax]};
    gaio_ktensor kx = vy.k;
    kx.ptr = vx.k.ptr, kx.dtype = vx.k.dtype;
    for (int32_t d = 0; d < nd; d++) kx.strides[d] = d == ax ? 0 : vx.t.strides[d];
    vx.k = kx;
    vi.k.ndim = nd;
    for (int32_t d = 0; d < nd; d++) vi.k.shape[d] = vy.k.shape[d];
    return gather_launch(fn, stream, &vx, &vi, &vy, g);
}

/* t over y's shape (NumPy broadcasting: dimensions aligned at the last, 1s repeated). */
static gaio_status broadcast(const char *fn, const char *name, view *t, const view *y) {
    gaio_ktensor k = t->k;
    int32_t shift = y->t.ndim - t->t.ndim;
    if (shift < 0) return BAD("%s has %d dimensions, more than y's %d", name, (int)t->t.ndim, (int)y->t.ndim);
    for (int32_t d = 0; d < y->t.ndim; d++) {
        int32_t s = d - shift;
        int64_t n = s >= 0 ? t->t.shape[s] : 1;
        if (n != y->t.shape[d] && n != 1) {
            char a[128], b[128];
            gaio__shape_text(t->t.ndim, t->t.shape, a, sizeof a);
            gaio__shape_text(y->t.ndim, y->t.shape, b, sizeof b);
            return BAD("%s is %s but y is %s: dimension %d of y is neither %s's nor broadcast from 1", name, a, b,
                       (int)d, name);
        }
        k.shape[d] = y->t.shape[d];
        k.strides[d] = n == 1 ? 0 : t->t.strides[s];
    }
    k.ndim = y->t.ndim;
    t->k = k;
    return GAIO_OK;
}

gaio_status gaio_where(gaio_stream *stream, const gaio_tensor *cond, const gaio_tensor *a, const gaio_tensor *b,
                       const gaio_tensor *y) {
    const char *fn = __func__;
    if (!stream) return BAD("stream is NULL");
    view vc, va, vb, vy;
    gaio_status st;
    if ((st = resolve(fn, "cond", cond, stream, &vc)) != GAIO_OK || (st = resolve(fn, "a", a, stream, &va)) != GAIO_OK ||
        (st = resolve(fn, "b", b, stream, &vb)) != GAIO_OK || (st = resolve(fn, "y", y, stream, &vy)) != GAIO_OK)
        return st;
    if (vc.t.dtype != GAIO_DTYPE_U8) return BAD("cond is %s: a condition is u8", gaio_dtype_name(vc.t.dtype));
    if ((st = same_dtype(fn, "a", &va, "y", &vy)) != GAIO_OK || (st = same_dtype(fn, "b", &vb, "y", &vy)) != GAIO_OK)
        return st;
    const view *in[3] = {&vc, &va, &vb};
    static const char *const names[3] = {"cond", "a", "b"};
    int32_t nd = 1;
    for (int i = 0; i < 3; i++) nd = in[i]->t.ndim > nd ? in[i]->t.ndim : nd;
    if (vy.t.ndim != nd)
        return BAD("y has %d dimensions but cond, a and b broadcast to %d", (int)vy.t.ndim, (int)nd);
    for (int32_t d = 0; d < nd; d++) { /* y is the broadcast shape exactly */
        int64_t m = 1;
        for (int i = 0; i < 3; i++) {
            int32_t s = d - (nd - in[i]->t.ndim);
            int64_t n = s >= 0 ? in[i]->t.shape[s] : 1;
            m = n > m ? n : m;
        }
        if (vy.t.shape[d] != m)
            return BAD("y->shape[%d] is %lld but cond, a and b broadcast to %lld there", (int)d,
                       (long long)vy.t.shape[d], (long long)m);
    }
    if ((st = check_output(fn, &vy)) != GAIO_OK) return st;
    for (int i = 0; i < 3; i++)
        if ((st = apart(fn, names[i], in[i], &vy)) != GAIO_OK) return st;
    if ((st = broadcast(fn, "cond", &vc, &vy)) != GAIO_OK || (st = broadcast(fn, "a", &va, &vy)) != GAIO_OK ||
        (st = broadcast(fn, "b", &vb, &vy)) != GAIO_OK)
        return st;
    gaio_ktensor *ts[4] = {&vy.k, &vc.k, &va.k, &vb.k};
    order(ts, 4, NULL);
    gaio_arg args[4] = {GAIO_ARG(vc.k), GAIO_ARG(va.k), GAIO_ARG(vb.k), GAIO_ARG(vy.k)};
    gaio_buffer *held[4] = {vc.t.buffer, va.t.buffer, vb.t.buffer, vy.t.buffer};
    return launch(fn, stream, "gaio_dnn_where", count(&vy.k), args, 4, held, 4);
}

/* CONSTANT's value as the bits of an element of dtype dt. */
static gaio_status fill_bits(const char *fn, double v, gaio_dtype dt, uint64_t *out) {
    *out = 0;
    if (dt == GAIO_DTYPE_F32 || dt == GAIO_DTYPE_F16) {
        float f = (float)v;
        if (dt == GAIO_DTYPE_F32) {
            uint32_t u;
            memcpy(&u, &f, 4);
            *out = u;
        } else {
            *out = f2h(f);
        }
        return GAIO_OK;
    }
    double lo = dt == GAIO_DTYPE_U8 || dt == GAIO_DTYPE_U16 ? 0 : dt == GAIO_DTYPE_S16 ? -32768.0
                : dt == GAIO_DTYPE_S32 ? -2147483648.0 : -9223372036854775808.0;
    double hi = dt == GAIO_DTYPE_U8 ? 255.0 : dt == GAIO_DTYPE_U16 ? 65535.0 : dt == GAIO_DTYPE_S16 ? 32767.0
                : dt == GAIO_DTYPE_S32 ? 2147483647.0 : 9223372036854775807.0;
    if (!(v >= lo && v <= hi) || v != floor(v))
        return BAD("params->value %g is no %s value", v, gaio_dtype_name(dt));
    int64_t k = v >= 9223372036854775807.0 ? INT64_MAX : (int64_t)v;
    uint64_t bits = (uint64_t)k;
    size_t es = gaio_dtype_size(dt);
    *out = es == 8 ? bits : bits & ((1ull << (8 * es)) - 1);
    return GAIO_OK;
}

gaio_status gaio_pad(gaio_stream *stream, const gaio_tensor *x, const gaio_tensor *y, const gaio_pad_params *params) {
    const char *fn = __func__;
    if (!stream) return BAD("stream is NULL");
    if (!params) return BAD("params is NULL");
    view vx, vy;
    gaio_status st;
    if ((st = resolve(fn, "x", x, stream, &vx)) != GAIO_OK || (st = resolve(fn, "y", y, stream, &vy)) != GAIO_OK)
        return st;
    if ((st = same_dtype(fn, "x", &vx, "y", &vy)) != GAIO_OK) return st;
    if ((int)params->mode < GAIO_PAD_CONSTANT || (int)params->mode > GAIO_PAD_WRAP)
        return BAD("params->mode %d is not a gaio_pad_mode (0 to 3)", (int)params->mode);
    int32_t nd = vx.t.ndim;
    if (vy.t.ndim != nd) return BAD("y has %d dimensions but x has %d", (int)vy.t.ndim, (int)nd);
    gaio_kpad kp;
    memset(&kp, 0, sizeof kp);
    kp.mode = (int32_t)params->mode;
    if (params->mode == GAIO_PAD_CONSTANT && (st = fill_bits(fn, params->value, vy.t.dtype, &kp.fill)) != GAIO_OK)
        return st;
    size_t es = gaio_dtype_size(vx.t.dtype);
    gaio_ktensor kx = vx.k; /* what the cuts leave of x */
    for (int32_t d = 0; d < nd; d++) {
        int64_t n = vx.t.shape[d], b = params->begin[d], e;
        if (b < -n || b > vy.t.shape[d])
            return BAD("params->begin[%d] is %lld: x's %lld and y's %lld elements there leave no room for it", (int)d,
                       (long long)b, (long long)n, (long long)vy.t.shape[d]);
        e = vy.t.shape[d] - n - b; /* no overflow: every term is within a shape's range */
        int64_t cut_b = b < 0 ? -b : 0, cut_e = e < 0 ? -e : 0, left = n - cut_b - cut_e;
        if (left < 1)
            return BAD("dimension %d: pads %lld and %lld cut all %lld elements of x: nothing is left to pad from",
                       (int)d, (long long)b, (long long)e, (long long)n);
        kx.ptr += (uint64_t)(cut_b * vx.t.strides[d] * (int64_t)es);
        kx.shape[d] = left;
        kp.begin[d] = b > 0 ? b : 0;
    }
    if ((st = check_output(fn, &vy)) != GAIO_OK || (st = apart(fn, "x", &vx, &vy)) != GAIO_OK) return st;
    vx.k = kx;
    gaio_ktensor *ts[2] = {&vy.k, &vx.k};
    order(ts, 2, kp.begin);
    gaio_arg args[3] = {GAIO_ARG(vx.k), GAIO_ARG(vy.k), GAIO_ARG(kp)};
    gaio_buffer *held[2] = {vx.t.buffer, vy.t.buffer};
    return launch(fn, stream, "gaio_dnn_pad", count(&vy.k), args, 3, held, 2);
}
