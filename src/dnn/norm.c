/* gaio_norm: LayerNorm, GroupNorm and InstanceNorm as one op. It checks the tensors,
 * rewrites every kind as a LayerNorm over a strided view (dnn/norm_math.h), simplifies
 * that view, picks how the CUDA kernel splits the work, and makes one launch of
 * gaio_dnn_norm or, for rows a warp keeps in registers, gaio_dnn_norm_rows (host:
 * dnn/cpu/norm.c, both names one function; CUDA: kernels/dnn/norm.cu). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/builtin_kernels.h"
#include "core/fail.h"
#include "core/object.h"
#include "core/op.h"
#include "dnn/dnn_internal.h"
#include "dnn/norm_math.h"
#include "gaio/buffer.h"

#define BLOCK 256
#define WARPS_PER_BLOCK (BLOCK / 32)
/* A set of up to this many elements gets a warp; a larger one a block. */
#define WARP_MAX 4096
/* A warp keeps a contiguous set of up to this many elements in registers (32 a lane:
 * more would cost occupancy in registers; ViT-L's and ConvNeXt-B's 1024 channels fit). */
#define ROWS_MAX 1024
#define ROWS8_BLOCKS 528 /* the resident blocks of an H100 or H200: 4 an SM (64 registers) on 132 */
/* Fewer sets than this leave a thread per set too little parallelism. */
#define THREAD_MIN_SETS 2048

typedef gaio__ktensor_view operand;

/* Tensors of the view, in the order of their stride arrays. */
enum { TX, TY, TS, TB, TM, TR, NT };

typedef struct view {
    int32_t ndim, axis;
    int64_t shape[GAIO_KNORM_MAX_NDIM];
    int64_t st[NT][GAIO_KNORM_MAX_NDIM];
} view;

static gaio_status resolve(const char *fn, const char *name, const gaio_tensor *t, gaio_stream *s, operand *o) {
    return gaio__ktensor_view_resolve(fn, name, "normalizations", t, s, o);
}

static bool same_elements(const operand *a, const operand *b) {
    if (a->k.ptr != b->k.ptr || a->t.ndim != b->t.ndim || a->t.dtype != b->t.dtype) return false;
    for (int32_t i = 0; i < a->t.ndim; i++)
        if (a->t.shape[i] != b->t.shape[i] || (a->t.shape[i] > 1 && a->t.strides[i] != b->t.strides[i])) return false;
    return true;
}

static gaio_status shape_error(const char *fn, const char *name, const operand *t, const char *want) {
    char s[128];
    gaio__shape_text(t->t.ndim, t->t.shape, s, sizeof s);
    return BAD("%s is %s: %s", name, s, want);
}

static gaio_status param_dtype(const char *fn, const char *name, const operand *t, gaio_dtype xdt) {
    if (t->t.dtype != GAIO_DTYPE_F32 && t->t.dtype != xdt)
        return BAD("%s is %s but x is %s: it takes f32 or x's dtype", name, gaio_dtype_name(t->t.dtype),
                   gaio_dtype_name(xdt));
    return GAIO_OK;
}

/* scale or bias over the view (its strides in v->st[k]). */
static gaio_status param_view(const char *fn, const char *name, const operand *t, const operand *x,
                              const gaio_norm_params *p, int32_t axis, int64_t groups, view *v, int k) {
    gaio_status st = param_dtype(fn, name, t, x->t.dtype);
    if (st != GAIO_OK) return st;
    const int32_t nd = x->t.ndim;
    if (p->kind == GAIO_NORM_LAYER) {
        if (t->t.ndim > nd) return shape_error(fn, name, t, "it has more dimensions than x");
        for (int32_t j = 0; j < t->t.ndim; j++) {
            int32_t d = nd - t->t.ndim + j;
            int64_t n = t->t.shape[j];
            if (n != 1 && (n != x->t.shape[d] || d < axis)) {
                char want[160];
                snprintf(want, sizeof want,
                         "aligned with x's last dimensions, each must be x's size or 1, and 1 before axis %d",
                         (int)axis);
                return shape_error(fn, name, t, want);
            }
            v->st[k][d] = n == 1 ? 0 : t->t.strides[j];
        }
        return GAIO_OK;
    }
    const int64_t C = x->t.shape[1], cpg = C / groups;
    bool per_group = p->kind == GAIO_NORM_GROUP && t->t.ndim == 1 && t->t.shape[0] == groups;
    if (t->t.ndim != 1 || (t->t.shape[0] != C && !per_group)) {
        char want[128];
        if (p->kind == GAIO_NORM_GROUP)
            snprintf(want, sizeof want, "GROUP takes a 1-D tensor of C = %lld or groups = %lld values", (long long)C,
                     (long long)groups);
        else
            snprintf(want, sizeof want, "INSTANCE takes a 1-D tensor of C = %lld values", (long long)C);
        return shape_error(fn, name, t, want);
    }
    /* View [N, G, C / G, ...]: a channel is g * cpg + c. */
    const int64_t s = t->t.strides[0];
    if (per_group && groups != C) {
        v->st[k][1] = s;
    } else {
        v->st[k][1] = s * cpg, v->st[k][2] = s;
    }
    return GAIO_OK;
}

/* mean or inv_std_dev: the set dimensions' shape, then 1s. */
static gaio_status stats_view(const char *fn, const char *name, const operand *t, const operand *x, view *v, int k) {
    gaio_status st = param_dtype(fn, name, t, x->t.dtype);
    if (st != GAIO_OK) return st;
    bool ok = t->t.ndim >= v->axis;
    for (int32_t j = 0; ok && j < t->t.ndim; j++) ok = t->t.shape[j] == (j < v->axis ? v->shape[j] : 1);
    if (!ok) {
        char lead[128], want[256];
        gaio__shape_text(v->axis, v->shape, lead, sizeof lead);
        snprintf(want, sizeof want, "the statistics take the sets' shape %s followed by any number of 1s", lead);
        return shape_error(fn, name, t, want);
    }
    if (!gaio__ktensor_distinct(&t->k))
        return BAD("%s's strides make some of its elements share memory: an output needs each element once", name);
    for (int32_t j = 0; j < v->axis; j++) v->st[k][j] = t->t.strides[j];
    return GAIO_OK;
}

/* Dimensions [lo, hi) of v: size-1 ones dropped, ordered by x's stride (innermost
 * last, stable), neighbours that are one run in every tensor merged; appended to o. */
static void simplify_part(const view *v, int32_t lo, int32_t hi, view *o) {
    int32_t order[GAIO_KNORM_MAX_NDIM], m = 0;
    for (int32_t d = lo; d < hi; d++)
        if (v->shape[d] > 1) order[m++] = d;
    for (int32_t i = 1; i < m; i++) {
        int32_t d = order[i], j = i;
        int64_t sd = v->st[TX][d] < 0 ? -v->st[TX][d] : v->st[TX][d];
        while (j > 0) {
            int64_t sp = v->st[TX][order[j - 1]];
            if ((sp < 0 ? -sp : sp) >= sd) break;
            order[j] = order[j - 1];
            j--;
        }
        order[j] = d;
    }
    const int32_t first = o->ndim;
    for (int32_t i = 0; i < m; i++) {
        int32_t d = order[i];
        bool merge = o->ndim > first;
        for (int k = 0; k < NT && merge; k++) merge = o->st[k][o->ndim - 1] == v->st[k][d] * v->shape[d];
        if (merge) {
            o->shape[o->ndim - 1] *= v->shape[d];
            for (int k = 0; k < NT; k++) o->st[k][o->ndim - 1] = v->st[k][d];
        } else {
            o->shape[o->ndim] = v->shape[d];
            for (int k = 0; k < NT; k++) o->st[k][o->ndim] = v->st[k][d];
            o->ndim++;
        }
    }
}

static int64_t product(const int64_t *shape, int32_t lo, int32_t hi) {
    int64_t n = 1;
    for (int32_t d = lo; d < hi; d++) n *= shape[d];
    return n;
}

/* How the CUDA kernel splits the sets, and its grid. */
static int32_t pick_mode(const gaio_knorm *k, bool has_y, int64_t *blocks) {
    const int32_t last_set = k->axis - 1;
    int64_t min_inner = INT64_MAX;
    for (int32_t d = k->axis; d < k->ndim; d++) {
        int64_t s = k->xs[d] < 0 ? -k->xs[d] : k->xs[d];
        if (s < min_inner) min_inner = s;
    }
    int32_t mode;
    if (k->ndim == 2 && k->axis == 1 && k->xs[1] == 1 && (!has_y || k->ys[1] == 1) && k->count <= ROWS_MAX &&
        k->ss[0] == 0 && k->bs[0] == 0)
        mode = GAIO_KNORM_ROWS; /* [sets | count], one scale and bias for all: what the CUDA rows take */
    else if (last_set >= 0 && k->xs[last_set] == 1 && (!has_y || k->ys[last_set] == 1) && min_inner > 1 &&
             k->sets >= THREAD_MIN_SETS)
        mode = GAIO_KNORM_THREAD;
    else if (k->count <= WARP_MAX)
        mode = GAIO_KNORM_WARP;
    else
        mode = GAIO_KNORM_BLOCK;
    int64_t per_block = mode == GAIO_KNORM_THREAD ? BLOCK : mode == GAIO_KNORM_BLOCK ? 1 : WARPS_PER_BLOCK;
    int64_t b = (k->sets + per_block - 1) / per_block;
    *blocks = b < GAIO_DNN_MAX_BLOCKS ? b : GAIO_DNN_MAX_BLOCKS;
    return mode;
}

gaio_status gaio_norm(gaio_stream *stream, const gaio_tensor *x, const gaio_tensor *scale, const gaio_tensor *bias,
                      const gaio_tensor *y, const gaio_tensor *mean, const gaio_tensor *inv_std_dev,
                      const gaio_norm_params *params) {
    const char *fn = __func__;
    if (!stream) return BAD("stream is NULL");
    if (!params) return BAD("params is NULL");
    if (!x) return BAD("x is NULL");
    if (!y && !mean && !inv_std_dev) return BAD("y, mean and inv_std_dev are all NULL: nothing to compute");
    const gaio_norm_params *p = params;
    if (p->kind != GAIO_NORM_LAYER && p->kind != GAIO_NORM_GROUP && p->kind != GAIO_NORM_INSTANCE)
        return BAD("params->kind %d is not a gaio_norm_kind", (int)p->kind);
    if (!(p->epsilon >= 0.0f) || !isfinite(p->epsilon))
        return BAD("params->epsilon %g must be finite and >= 0", (double)p->epsilon);
    operand ox, oy, os, ob, om, orr;
    gaio_status st = resolve(fn, "x", x, stream, &ox);
    if (st != GAIO_OK) return st;
    if (y) {
        if ((st = resolve(fn, "y", y, stream, &oy)) != GAIO_OK) return st;
        if (oy.t.dtype != ox.t.dtype)
            return BAD("y is %s but x is %s: they take one dtype", gaio_dtype_name(oy.t.dtype),
                       gaio_dtype_name(ox.t.dtype));
        bool same = oy.t.ndim == ox.t.ndim;
        for (int32_t i = 0; same && i < ox.t.ndim; i++) same = oy.t.shape[i] == ox.t.shape[i];
        if (!same) {
            char a[128], b[128];
            gaio__shape_text(ox.t.ndim, ox.t.shape, a, sizeof a);
            gaio__shape_text(oy.t.ndim, oy.t.shape, b, sizeof b);
            return BAD("y is %s but x is %s: they take one shape", b, a);
        }
        if (!gaio__ktensor_distinct(&oy.k))
            return BAD("y's strides make some of its elements share memory: an output needs each element once");
        /* In place works: a set is read whole before any of it is written. */
        if (gaio__ktensor_view_overlap(&ox, &oy) && !same_elements(&ox, &oy))
            return BAD("y overlaps x: only an in-place normalization (y the same elements as x) may share memory");
    }

    const int32_t nd = ox.t.ndim;
    view v;
    memset(&v, 0, sizeof v);
    int32_t axis = 0;
    int64_t groups = 1;
    if (p->kind == GAIO_NORM_LAYER) {
        if (p->axis < -nd || p->axis >= nd)
            return BAD("params->axis %d is outside the %d dimensions of x (give -%d to %d)", (int)p->axis, (int)nd,
                       (int)nd, (int)nd - 1);
        axis = p->axis < 0 ? p->axis + nd : p->axis;
        v.ndim = nd, v.axis = axis;
        for (int32_t d = 0; d < nd; d++) {
            v.shape[d] = ox.t.shape[d];
            v.st[TX][d] = ox.t.strides[d];
            v.st[TY][d] = y ? oy.t.strides[d] : ox.t.strides[d];
        }
    } else {
        if (nd < 2) return BAD("x has %d dimension: group and instance norms take [N, C, ...]", (int)nd);
        const int64_t C = ox.t.shape[1];
        groups = p->kind == GAIO_NORM_INSTANCE ? C : p->groups;
        if (groups < 1 || groups > C || C % groups)
            return BAD("params->groups is %d: it must divide x's C = %lld channels", (int)p->groups, (long long)C);
        const int64_t cpg = C / groups;
        v.ndim = nd + 1, v.axis = 2;
        v.shape[0] = ox.t.shape[0], v.shape[1] = groups, v.shape[2] = cpg;
        const gaio__ktensor_view *yy = y ? &oy : &ox;
        v.st[TX][0] = ox.t.strides[0], v.st[TX][1] = ox.t.strides[1] * cpg, v.st[TX][2] = ox.t.strides[1];
        v.st[TY][0] = yy->t.strides[0], v.st[TY][1] = yy->t.strides[1] * cpg, v.st[TY][2] = yy->t.strides[1];
        for (int32_t d = 2; d < nd; d++) {
            v.shape[d + 1] = ox.t.shape[d];
            v.st[TX][d + 1] = ox.t.strides[d], v.st[TY][d + 1] = yy->t.strides[d];
        }
    }
    const operand *outs[3] = {y ? &oy : NULL, NULL, NULL};
    if (scale) {
        if ((st = resolve(fn, "scale", scale, stream, &os)) != GAIO_OK) return st;
        if ((st = param_view(fn, "scale", &os, &ox, p, axis, groups, &v, TS)) != GAIO_OK) return st;
    }
    if (bias) {
        if ((st = resolve(fn, "bias", bias, stream, &ob)) != GAIO_OK) return st;
        if ((st = param_view(fn, "bias", &ob, &ox, p, axis, groups, &v, TB)) != GAIO_OK) return st;
    }
    if (mean) {
        if ((st = resolve(fn, "mean", mean, stream, &om)) != GAIO_OK) return st;
        if ((st = stats_view(fn, "mean", &om, &ox, &v, TM)) != GAIO_OK) return st;
        outs[1] = &om;
    }
    if (inv_std_dev) {
        if ((st = resolve(fn, "inv_std_dev", inv_std_dev, stream, &orr)) != GAIO_OK) return st;
        if ((st = stats_view(fn, "inv_std_dev", &orr, &ox, &v, TR)) != GAIO_OK) return st;
        outs[2] = &orr;
    }
    /* Outputs apart from every input (y from x: checked above) and from each other. */
    static const char *const out_names[3] = {"y", "mean", "inv_std_dev"};
    const operand *ins[3] = {&ox, scale ? &os : NULL, bias ? &ob : NULL};
    static const char *const in_names[3] = {"x", "scale", "bias"};
    for (int i = 0; i < 3; i++) {
        if (!outs[i]) continue;
        for (int j = i == 0 ? 1 : 0; j < 3; j++)
            if (ins[j] && gaio__ktensor_view_overlap(outs[i], ins[j]))
                return BAD("%s overlaps %s: an output may share memory with no input but y with x (in place)",
                           out_names[i], in_names[j]);
        for (int j = 0; j < i; j++)
            if (outs[j] && gaio__ktensor_view_overlap(outs[i], outs[j]))
                return BAD("%s overlaps %s: outputs take memory of their own", out_names[i], out_names[j]);
    }

    view s;
    memset(&s, 0, sizeof s);
    simplify_part(&v, 0, v.axis, &s);
    s.axis = s.ndim;
    simplify_part(&v, v.axis, v.ndim, &s);

    gaio_knorm k;
    memset(&k, 0, sizeof k);
    k.x = ox.k.ptr, k.y = y ? oy.k.ptr : 0;
    k.scale = scale ? os.k.ptr : 0, k.bias = bias ? ob.k.ptr : 0;
    k.mean = mean ? om.k.ptr : 0, k.rstd = inv_std_dev ? orr.k.ptr : 0;
    k.xdt = (int32_t)ox.t.dtype; /* GAIO_KT_* are the gaio_dtype values */
    k.sdt = scale ? (int32_t)os.t.dtype : GAIO_KT_F32, k.bdt = bias ? (int32_t)ob.t.dtype : GAIO_KT_F32;
    k.mdt = mean ? (int32_t)om.t.dtype : GAIO_KT_F32, k.rdt = inv_std_dev ? (int32_t)orr.t.dtype : GAIO_KT_F32;
    k.ndim = s.ndim, k.axis = s.axis, k.epsilon = p->epsilon;
    for (int32_t d = 0; d < s.ndim; d++) {
        k.shape[d] = s.shape[d];
        k.xs[d] = s.st[TX][d], k.ys[d] = s.st[TY][d], k.ss[d] = s.st[TS][d], k.bs[d] = s.st[TB][d];
        k.ms[d] = s.st[TM][d], k.rs[d] = s.st[TR][d];
    }
    k.sets = product(k.shape, 0, k.axis), k.count = product(k.shape, k.axis, k.ndim);
    int64_t blocks = 1;
    k.mode = pick_mode(&k, y != NULL, &blocks);

    /* f16 rows of whole 16-byte vectors: the CUDA kernel that moves them so
     * (kernels/dnn/norm.cu rows_vec), its grid capped at a few blocks an SM so that
     * each block stages the scale and bias for many rows. */
    bool vec = k.mode == GAIO_KNORM_ROWS && k.xdt == GAIO_KT_F16 && k.count % 8 == 0 && k.xs[0] % 8 == 0 &&
               (k.x % 16) == 0 && (!y || (k.ys[0] % 8 == 0 && k.y % 16 == 0));
    if (vec && blocks > ROWS8_BLOCKS) blocks = ROWS8_BLOCKS;
    gaio_dim3 grid = {1, 1, 1}, block = {1, 1, 1};
    if (stream->ctx->be->kind == GAIO_DEVICE_CUDA) grid.x = (uint32_t)blocks, block.x = BLOCK;
    gaio_kernel *kern;
    const char *name = vec ? "gaio_dnn_norm_rows8" : k.mode == GAIO_KNORM_ROWS ? "gaio_dnn_norm_rows" : "gaio_dnn_norm";
    if ((st = gaio__kernel_builtin(name, &kern)) != GAIO_OK) return gaio__fail(st, fn, "%s", gaio_last_error());
    gaio_arg args[1] = {GAIO_ARG(k)};
    gaio_buffer *held[6];
    size_t nheld = 0;
    held[nheld++] = ox.t.buffer;
    if (y) held[nheld++] = oy.t.buffer;
    if (scale) held[nheld++] = os.t.buffer;
    if (bias) held[nheld++] = ob.t.buffer;
    if (mean) held[nheld++] = om.t.buffer;
    if (inv_std_dev) held[nheld++] = orr.t.buffer;
    st = gaio__launch_held(fn, stream, kern, grid, block, 0, args, 1, held, nheld);
    gaio__kernel_unref(kern);
    return st;
}
