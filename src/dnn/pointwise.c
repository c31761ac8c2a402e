/* The pointwise ops: gaio_unary, gaio_binary, gaio_cast, gaio_batch_norm. Each checks
 * its tensors, then makes ONE launch of a built-in kernel (host twins in
 * dnn/cpu/pointwise.c, CUDA ones in kernels/dnn/pointwise.cu).
 *
 * Before the launch every tensor of the op is rewritten over the output's shape
 * (broadcast dimensions get stride 0, the channel parameters of batch norm too), the
 * dimensions are ordered by the output's strides (so NHWC walks memory in order) and
 * dimensions that follow each other in every tensor are merged. A packed op thus
 * reaches the kernels as one long row, and an NCHW batch norm as [N, C, H*W]. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/builtin_kernels.h"
#include "core/fail.h"
#include "core/object.h"
#include "core/op.h"
#include "dnn/dnn_internal.h"
#include "dnn/pointwise_math.h"
#include "gaio/buffer.h"

typedef gaio__ktensor_view pw_tensor;

/* pointwise_math.h's op numbers are the public enums' (the kernels take them as given). */
_Static_assert((int)GAIO_UNARY_IDENTITY == GAIO_KPW_IDENTITY && (int)GAIO_UNARY_SQRT == GAIO_KPW_SQRT &&
                   (int)GAIO_UNARY_SOFTPLUS == GAIO_KPW_SOFTPLUS && (int)GAIO_UNARY_AFFINE == GAIO_KPW_UNARY_LAST,
               "gaio_unary_op and pointwise_math.h's GAIO_KPW_* differ");
_Static_assert((int)GAIO_BINARY_DIV == GAIO_KPW_DIV && (int)GAIO_BINARY_POW == GAIO_KPW_POW &&
                   (int)GAIO_BINARY_MIN == GAIO_KPW_MIN && (int)GAIO_BINARY_MAX == GAIO_KPW_MAX &&
                   (int)GAIO_BINARY_FMOD == GAIO_KPW_BINARY_LAST,
               "gaio_binary_op and pointwise_math.h's GAIO_KPW_* differ");

static gaio_status resolve(const char *fn, const char *name, const gaio_tensor *t, gaio_stream *s, pw_tensor *o) {
    return gaio__ktensor_view_resolve_ex(fn, name, "pointwise ops", t, s, GAIO__KT_NEGATIVE_STRIDES, o);
}

/* The output must not write one element twice. Zero strides are the usual way to
 * get that wrong; other self-overlapping strides are the caller's to avoid. */
static gaio_status check_output(const char *fn, const char *name, const pw_tensor *y) {
    for (int32_t i = 0; i < y->t.ndim; i++)
        if (y->t.shape[i] > 1 && y->t.strides[i] == 0)
            return BAD("%s->strides[%d] is 0 over %lld elements: an output may not repeat elements", name, (int)i,
                       (long long)y->t.shape[i]);
    return GAIO_OK;
}

static bool same_shape(const gaio_tensor *a, const gaio_tensor *b) {
    if (a->ndim != b->ndim) return false;
    for (int32_t i = 0; i < a->ndim; i++)
        if (a->shape[i] != b->shape[i]) return false;
    return true;
}

/* The same elements: in place. */
static bool identical(const pw_tensor *a, const pw_tensor *b) {
    if (a->t.buffer != b->t.buffer || a->t.offset != b->t.offset || a->t.dtype != b->t.dtype || !same_shape(&a->t, &b->t))
        return false;
    for (int32_t i = 0; i < a->t.ndim; i++)
        if (a->t.shape[i] > 1 && a->t.strides[i] != b->t.strides[i]) return false;
    return true;
}

/* Input `in` may be output y itself, or apart from it. */
static gaio_status check_apart(const char *fn, const char *in_name, const pw_tensor *in, const char *y_name,
                               const pw_tensor *y) {
    if (gaio__ktensor_view_overlap(in, y) && !identical(in, y))
        return BAD("%s overlaps %s without being %s itself (same buffer, offset, dtype, shape and strides)", y_name,
                   in_name, in_name);
    return GAIO_OK;
}

static gaio_status shape_mismatch(const char *fn, const char *an, const gaio_tensor *a, const char *bn,
                                  const gaio_tensor *b) {
    char sa[128], sb[128];
    gaio__shape_text(a->ndim, a->shape, sa, sizeof sa);
    gaio__shape_text(b->ndim, b->shape, sb, sizeof sb);
    return BAD("%s is [%s] but %s is [%s]: they must have the same shape", an, sa, bn, sb);
}

/* Rewrites the n tensors (t[0] the output, whose shape they all share, broadcast
 * dimensions at stride 0) for the kernels: size-1 dimensions dropped, the rest in
 * the order of the output's strides, outermost first, and neighbours that are one
 * run in every tensor merged. */
static void simplify(gaio_ktensor *const *t, int n) {
    const gaio_ktensor *y = t[0];
    int32_t ndim = y->ndim, order[GAIO_KT_MAX_NDIM], m = 0;
    for (int32_t d = 0; d < ndim; d++)
        if (y->shape[d] > 1) order[m++] = d;
    /* Insertion sort, stable: descending output stride. */
    for (int32_t i = 1; i < m; i++) {
        int32_t d = order[i], j = i;
        while (j > 0 && y->strides[order[j - 1]] < y->strides[d]) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = d;
    }
    int64_t shape[GAIO_KT_MAX_NDIM] = {0}, strides[8][GAIO_KT_MAX_NDIM] = {{0}};
    int32_t out = 0;
    for (int32_t i = 0; i < m; i++) {
        int32_t d = order[i];
        bool merge = out > 0;
        for (int k = 0; k < n && merge; k++)
            merge = strides[k][out - 1] == t[k]->strides[d] * y->shape[d];
        if (merge) {
            shape[out - 1] *= y->shape[d];
            for (int k = 0; k < n; k++) strides[k][out - 1] = t[k]->strides[d];
        } else {
            shape[out] = y->shape[d];
            for (int k = 0; k < n; k++) strides[k][out] = t[k]->strides[d];
            out++;
        }
    }
    if (out == 0) { /* one element */
        shape[0] = 1;
        for (int k = 0; k < n; k++) strides[k][0] = 0;
        out = 1;
    }
    for (int k = 0; k < n; k++) {
        t[k]->ndim = out;
        for (int32_t d = 0; d < GAIO_KT_MAX_NDIM; d++) {
            t[k]->shape[d] = d < out ? shape[d] : 0;
            t[k]->strides[d] = d < out ? strides[k][d] : 0;
        }
    }
}

static int64_t elements(const gaio_ktensor *t) {
    int64_t n = 1;
    for (int32_t d = 0; d < t->ndim; d++) n *= t->shape[d];
    return n;
}

/* One launch: grid-stride over the output's elements on a GPU; the host kernels
 * split the same work over the pool themselves. */
static gaio_status launch(const char *fn, gaio_stream *stream, const char *name, int64_t n, const gaio_arg *args,
                          size_t nargs, gaio_buffer *const *held, size_t nheld) {
    enum { BLOCK = 256, MAX_BLOCKS = GAIO_DNN_MAX_BLOCKS };
    int64_t blocks = (n + BLOCK - 1) / BLOCK;
    gaio_dim3 grid = {(uint32_t)(blocks < MAX_BLOCKS ? blocks : MAX_BLOCKS), 1, 1}, block = {BLOCK, 1, 1};
    gaio_kernel *k;
    gaio_status st = gaio__kernel_builtin(name, &k);
    if (st != GAIO_OK) return gaio__fail(st, fn, "%s", gaio_last_error());
    st = gaio__launch_held(fn, stream, k, grid, block, 0, args, nargs, held, nheld);
    gaio__kernel_unref(k);
    return st;
}

gaio_status gaio__unary_params_check(const char *fn, const char *name, const gaio_unary_params *p) {
    if ((int)p->op < GAIO_KPW_RELU || (int)p->op > GAIO_KPW_UNARY_LAST)
        return BAD("%s->op %d is not a gaio_unary_op (0 to %d)", name, (int)p->op, (int)GAIO_KPW_UNARY_LAST);
    if (p->op == GAIO_UNARY_CLIP && !(p->alpha <= p->beta))
        return BAD("%s: CLIP's bounds alpha %g and beta %g must be numbers with alpha <= beta", name,
                   (double)p->alpha, (double)p->beta);
    if (p->op == GAIO_UNARY_HARD_SIGMOID && !(isfinite(p->alpha) && isfinite(p->beta)))
        return BAD("%s: HARD_SIGMOID's alpha %g and beta %g must be finite", name, (double)p->alpha,
                   (double)p->beta);
    if (p->op == GAIO_UNARY_AFFINE && !(isfinite(p->alpha) && isfinite(p->beta)))
        return BAD("%s: AFFINE's alpha %g and beta %g must be finite", name, (double)p->alpha, (double)p->beta);
    return GAIO_OK;
}

/* y = act(x), also the cast: x and y of one shape, any dtypes. */
static gaio_status unary_launch(const char *fn, gaio_stream *stream, const gaio_tensor *x, const gaio_tensor *y,
                                gaio_kpw_act act, bool cast) {
    pw_tensor tx, ty;
    gaio_status st;
    if ((st = resolve(fn, "x", x, stream, &tx)) != GAIO_OK || (st = resolve(fn, "y", y, stream, &ty)) != GAIO_OK)
        return st;
    if (!cast && tx.t.dtype != ty.t.dtype)
        return BAD("x is %s but y is %s: they must match (gaio_cast converts)", gaio_dtype_name(tx.t.dtype),
                   gaio_dtype_name(ty.t.dtype));
    if (!same_shape(&tx.t, &ty.t)) return shape_mismatch(fn, "x", &tx.t, "y", &ty.t);
    if ((st = check_output(fn, "y", &ty)) != GAIO_OK || (st = check_apart(fn, "x", &tx, "y", &ty)) != GAIO_OK)
        return st;
    gaio_ktensor *ts[2] = {&ty.k, &tx.k};
    simplify(ts, 2);
    gaio_arg args[3] = {GAIO_ARG(tx.k), GAIO_ARG(ty.k), GAIO_ARG(act)};
    gaio_buffer *held[2] = {tx.t.buffer, ty.t.buffer};
    /* A few channels moving innermost (an NCHW image batch cast to NHWC): the CUDA
     * kernel gives each (n, p) of y's [N, P, C] (or [P, C]) one thread, under the same
     * test (channels_inner in kernels/dnn/pointwise.cu). */
    int64_t work = elements(&ty.k);
    const int32_t last = ty.k.ndim - 1;
    if ((ty.k.ndim == 2 || ty.k.ndim == 3) && ty.k.strides[last] == 1 && tx.k.strides[last - 1] == 1 &&
        ty.k.shape[last] <= 8)
        work /= ty.k.shape[last];
    return launch(fn, stream, "gaio_dnn_unary", work, args, 3, held, 2);
}

gaio_status gaio_unary(gaio_stream *stream, const gaio_tensor *x, const gaio_tensor *y, const gaio_unary_params *params) {
    const char *fn = __func__;
    if (!stream) return BAD("stream is NULL");
    if (!params) return BAD("params is NULL");
    gaio_status st = gaio__unary_params_check(fn, "params", params);
    if (st != GAIO_OK) return st;
    gaio_kpw_act act = {(int32_t)params->op, params->alpha, params->beta};
    return unary_launch(fn, stream, x, y, act, false);
}

gaio_status gaio_cast(gaio_stream *stream, const gaio_tensor *x, const gaio_tensor *y) {
    const char *fn = __func__;
    if (!stream) return BAD("stream is NULL");
    /* Integers and bytes (indices, masks) are only copied. */
    if (x && y && x->dtype == y->dtype && x->dtype != GAIO_DTYPE_F32 && x->dtype != GAIO_DTYPE_F16)
        return gaio__copy_any(fn, stream, x, y);
    /* Floats of one dtype whose innermost dimension in memory is packed on both sides (a
     * slice of attention's q, k, v, Swin's rolls, a Split along an NHWC tensor's
     * channels): the layout copy, which moves rows of 16-byte vectors; the element-wise
     * kernel keeps the rest (channels moving innermost). */
    gaio_tensor rx, ry;
    if (x && y && x->dtype == y->dtype && gaio_tensor_check(x, &rx, NULL) == GAIO_OK &&
        gaio_tensor_check(y, &ry, NULL) == GAIO_OK && rx.ndim == ry.ndim) {
        bool rows = false;
        for (int32_t d = 0; d < ry.ndim; d++) rows = rows || (ry.shape[d] > 1 && ry.strides[d] == 1 && rx.strides[d] == 1);
        if (rows) return gaio__copy_any(fn, stream, x, y);
    }
    gaio_kpw_act act = {GAIO_KPW_IDENTITY, 0.0f, 0.0f};
    return unary_launch(fn, stream, x, y, act, true);
}

/* t seen over the broadcast shape of y (t's dimensions aligned at the last). */
static gaio_status broadcast(const char *fn, const char *name, pw_tensor *t, const pw_tensor *y) {
    gaio_ktensor k = t->k;
    int32_t shift = y->t.ndim - t->t.ndim;
    for (int32_t d = 0; d < y->t.ndim; d++) {
        int32_t s = d - shift;
        int64_t n = s >= 0 ? t->t.shape[s] : 1;
        if (n != y->t.shape[d] && n != 1) {
            char st[128], sy[128];
            gaio__shape_text(t->t.ndim, t->t.shape, st, sizeof st);
            gaio__shape_text(y->t.ndim, y->t.shape, sy, sizeof sy);
            return BAD("%s is [%s] but y is [%s]: dimension %d of y (%lld) is neither %s's nor broadcast from 1",
                       name, st, sy, (int)d, (long long)y->t.shape[d], name);
        }
        k.shape[d] = y->t.shape[d];
        k.strides[d] = n == 1 ? 0 : t->t.strides[s];
    }
    k.ndim = y->t.ndim;
    t->k = k;
    return GAIO_OK;
}

/* Whether simplify() left y, a and b as [n, p, c] (or [p, c]: n = 1) with y and one
 * operand packed and the other one row of c per n, broadcast over p: 1 when that row
 * is b, 0 when it is a, -1 otherwise. */
static int32_t rows_form(const gaio_ktensor *y, const gaio_ktensor *a, const gaio_ktensor *b, int64_t *n, int64_t *p,
                         int64_t *c) {
    const int32_t nd = y->ndim;
    if (nd != 2 && nd != 3) return -1;
    *n = nd == 3 ? y->shape[0] : 1, *p = y->shape[nd - 2], *c = y->shape[nd - 1];
    const int64_t pc = *p * *c;
    bool packed[3], row[3];
    const gaio_ktensor *t[3] = {y, a, b};
    for (int k = 0; k < 3; k++) {
        const int64_t *st = t[k]->strides + (nd - 2);
        packed[k] = st[1] == 1 && st[0] == *c && (nd == 2 || t[k]->strides[0] == pc);
        row[k] = st[1] == 1 && st[0] == 0 && (nd == 2 || t[k]->strides[0] == *c);
    }
    if (!packed[0]) return -1;
    if (packed[1] && row[2]) return 1;
    if (row[1] && packed[2]) return 0;
    return -1;
}

gaio_status gaio_binary(gaio_stream *stream, gaio_binary_op op, const gaio_tensor *a, const gaio_tensor *b,
                        const gaio_tensor *y, const gaio_unary_params *act) {
    const char *fn = __func__;
    if (!stream) return BAD("stream is NULL");
    if ((int)op < GAIO_KPW_ADD || (int)op > GAIO_KPW_BINARY_LAST)
        return BAD("op %d is not a gaio_binary_op (0 to %d)", (int)op, (int)GAIO_KPW_BINARY_LAST);
    gaio_status st;
    if (act && (st = gaio__unary_params_check(fn, "act", act)) != GAIO_OK) return st;
    pw_tensor ta, tb, ty;
    if ((st = resolve(fn, "a", a, stream, &ta)) != GAIO_OK || (st = resolve(fn, "b", b, stream, &tb)) != GAIO_OK ||
        (st = resolve(fn, "y", y, stream, &ty)) != GAIO_OK)
        return st;
    if (ta.t.dtype != ty.t.dtype || tb.t.dtype != ty.t.dtype)
        return BAD("a is %s, b %s and y %s: they must match", gaio_dtype_name(ta.t.dtype), gaio_dtype_name(tb.t.dtype),
                   gaio_dtype_name(ty.t.dtype));
    int32_t nd = ta.t.ndim > tb.t.ndim ? ta.t.ndim : tb.t.ndim;
    if (ty.t.ndim != nd)
        return BAD("y has %d dimensions but a has %d and b %d: y has the broadcast shape, of %d", (int)ty.t.ndim,
                   (int)ta.t.ndim, (int)tb.t.ndim, (int)nd);
    if ((st = broadcast(fn, "a", &ta, &ty)) != GAIO_OK || (st = broadcast(fn, "b", &tb, &ty)) != GAIO_OK) return st;
    /* y equals the broadcast shape exactly: some input spans each dimension of y. */
    for (int32_t d = 0; d < nd; d++) {
        int32_t sa = d - (nd - ta.t.ndim), sb = d - (nd - tb.t.ndim);
        int64_t na = sa >= 0 ? ta.t.shape[sa] : 1, nb = sb >= 0 ? tb.t.shape[sb] : 1;
        if (ty.t.shape[d] != (na > nb ? na : nb))
            return BAD("y->shape[%d] is %lld but a and b broadcast to %lld there", (int)d, (long long)ty.t.shape[d],
                       (long long)(na > nb ? na : nb));
    }
    if ((st = check_output(fn, "y", &ty)) != GAIO_OK || (st = check_apart(fn, "a", &ta, "y", &ty)) != GAIO_OK ||
        (st = check_apart(fn, "b", &tb, "y", &ty)) != GAIO_OK)
        return st;
    gaio_ktensor *ts[3] = {&ty.k, &ta.k, &tb.k};
    simplify(ts, 3);
    int32_t kop = (int32_t)op;
    gaio_kpw_act ka = {GAIO_KPW_IDENTITY, 0.0f, 0.0f};
    if (act) ka.op = (int32_t)act->op, ka.alpha = act->alpha, ka.beta = act->beta;
    gaio_buffer *held[3] = {ta.t.buffer, tb.t.buffer, ty.t.buffer};
    if (ty.k.ndim == 1 && ty.k.strides[0] == 1 && ta.k.strides[0] == 1 && tb.k.strides[0] == 1) {
        /* one packed row each: the kernel of scalar arguments, 16 bytes per access */
        int64_t n = ty.k.shape[0];
        int32_t dt = ty.k.dtype;
        gaio_arg args[7] = {GAIO_ARG(ta.k.ptr), GAIO_ARG(tb.k.ptr), GAIO_ARG(ty.k.ptr), GAIO_ARG(n),
                            GAIO_ARG(dt),       GAIO_ARG(kop),      GAIO_ARG(ka)};
        return launch(fn, stream, "gaio_dnn_binary_packed", (n + 7) / 8, args, 7, held, 3);
    }
    int64_t rn, rp, rc;
    int32_t row_is_b = rows_form(&ty.k, &ta.k, &tb.k, &rn, &rp, &rc);
    if (row_is_b >= 0) { /* x * s of a squeeze-and-excitation block: the kernel of scalar arguments */
        int32_t dt = ty.k.dtype;
        int64_t per = dt == GAIO_KT_F16 ? 8 : 4, threads = rc % per ? rn * rp * rc : rn * rp * rc / per;
        gaio_arg args[10] = {GAIO_ARG(ta.k.ptr), GAIO_ARG(tb.k.ptr), GAIO_ARG(ty.k.ptr), GAIO_ARG(rn),
                             GAIO_ARG(rp),       GAIO_ARG(rc),       GAIO_ARG(dt),       GAIO_ARG(kop),
                             GAIO_ARG(row_is_b), GAIO_ARG(ka)};
        return launch(fn, stream, "gaio_dnn_binary_rows", threads, args, 10, held, 3);
    }
    gaio_arg args[5] = {GAIO_ARG(ta.k), GAIO_ARG(tb.k), GAIO_ARG(ty.k), GAIO_ARG(kop), GAIO_ARG(ka)};
    return launch(fn, stream, "gaio_dnn_binary", elements(&ty.k), args, 5, held, 3);
}

/* A per-channel parameter: 1-D f32 of C values, seen over y's shape along dimension 1. */
static gaio_status channel_param(const char *fn, const char *name, const gaio_tensor *t, gaio_stream *stream,
                                 const pw_tensor *y, pw_tensor *o) {
    gaio_status st = resolve(fn, name, t, stream, o);
    if (st != GAIO_OK) return st;
    if (o->t.dtype != GAIO_DTYPE_F32) return BAD("%s is %s: batch norm parameters are f32", name, gaio_dtype_name(o->t.dtype));
    if (o->t.ndim != 1 || o->t.shape[0] != y->t.shape[1])
        return BAD("%s must be a 1-D tensor of C = %lld values (x's dimension 1)", name, (long long)y->t.shape[1]);
    if (gaio__ktensor_view_overlap(o, y)) return BAD("y overlaps %s", name);
    int64_t stride = o->t.strides[0];
    memset(o->k.shape, 0, sizeof o->k.shape);
    memset(o->k.strides, 0, sizeof o->k.strides);
    o->k.ndim = y->t.ndim;
    for (int32_t d = 0; d < y->t.ndim; d++) o->k.shape[d] = y->t.shape[d];
    o->k.strides[1] = stride;
    return GAIO_OK;
}

gaio_status gaio_batch_norm(gaio_stream *stream, const gaio_tensor *x, const gaio_tensor *y, const gaio_tensor *scale,
                            const gaio_tensor *bias, const gaio_tensor *mean, const gaio_tensor *var, float epsilon) {
    return gaio__batch_norm_act(__func__, stream, x, y, scale, bias, mean, var, epsilon, NULL, false);
}

/* The CUDA kernel's rows form (kernels/dnn/pointwise.cu bn_rows_form): y simplified to
 * [rows, C] or [C] with the channels packed and each parameter one row of C. A thread
 * then moves up to 16 bytes. */
static int64_t bn_threads(const gaio_ktensor *const *t) {
    const gaio_ktensor *y = t[0], *x = t[1];
    int64_t n = elements(y);
    int32_t nd = y->ndim;
    if (nd > 2 || y->strides[nd - 1] != 1 || x->strides[nd - 1] != 1) return n;
    for (int k = 2; k < 6; k++)
        if (t[k]->strides[nd - 1] != 1 || (nd == 2 && t[k]->strides[0] != 0)) return n;
    int64_t per = y->dtype == GAIO_KT_F16 ? 8 : 4;
    return y->shape[nd - 1] % per == 0 ? n / per : n;
}

gaio_status gaio__batch_norm_act(const char *fn, gaio_stream *stream, const gaio_tensor *x, const gaio_tensor *y,
                                 const gaio_tensor *scale, const gaio_tensor *bias, const gaio_tensor *mean,
                                 const gaio_tensor *var, float epsilon, const gaio_unary_params *act, bool affine) {
    if (!stream) return BAD("stream is NULL");
    if (affine) mean = scale, var = bias; /* unread: the kernels take four parameters */
    if (!(epsilon >= 0.0f) || !isfinite(epsilon)) return BAD("epsilon %g must be finite and >= 0", (double)epsilon);
    pw_tensor tx, ty, tp[4];
    gaio_status st;
    if ((st = resolve(fn, "x", x, stream, &tx)) != GAIO_OK || (st = resolve(fn, "y", y, stream, &ty)) != GAIO_OK)
        return st;
    if (tx.t.dtype != ty.t.dtype)
        return BAD("x is %s but y is %s: they must match", gaio_dtype_name(tx.t.dtype), gaio_dtype_name(ty.t.dtype));
    if (tx.t.ndim < 2) return BAD("x has %d dimension: batch norm takes [N, C, ...]", (int)tx.t.ndim);
    if (!same_shape(&tx.t, &ty.t)) return shape_mismatch(fn, "x", &tx.t, "y", &ty.t);
    if ((st = check_output(fn, "y", &ty)) != GAIO_OK || (st = check_apart(fn, "x", &tx, "y", &ty)) != GAIO_OK)
        return st;
    const gaio_tensor *params[4] = {scale, bias, mean, var};
    static const char *const names[4] = {"scale", "bias", "mean", "var"};
    for (int i = 0; i < 4; i++)
        if ((st = channel_param(fn, names[i], params[i], stream, &ty, &tp[i])) != GAIO_OK) return st;
    gaio_kpw_act ka = {GAIO_KPW_IDENTITY, 0.0f, 0.0f};
    if (act) {
        if ((st = gaio__unary_params_check(fn, "act", act)) != GAIO_OK) return st;
        ka.op = (int32_t)act->op, ka.alpha = act->alpha, ka.beta = act->beta;
    }
    gaio_ktensor *ts[6] = {&ty.k, &tx.k, &tp[0].k, &tp[1].k, &tp[2].k, &tp[3].k};
    simplify(ts, 6);
    int32_t kaffine = affine;
    gaio_arg args[9] = {GAIO_ARG(tx.k),    GAIO_ARG(ty.k),    GAIO_ARG(tp[0].k), GAIO_ARG(tp[1].k), GAIO_ARG(tp[2].k),
                        GAIO_ARG(tp[3].k), GAIO_ARG(epsilon), GAIO_ARG(ka),      GAIO_ARG(kaffine)};
    gaio_buffer *held[6] = {tx.t.buffer, ty.t.buffer, tp[0].t.buffer, tp[1].t.buffer, tp[2].t.buffer, tp[3].t.buffer};
    return launch(fn, stream, "gaio_dnn_batch_norm", bn_threads((const gaio_ktensor *const *)ts), args, 9, held, 6);
}
