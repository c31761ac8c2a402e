/* gaio_tensor: descriptor checks and packed strides. */
#include <stdio.h>
#include <string.h>

#include "core/fail.h"
#include "core/object.h"
#include "core/op.h"
#include "dlpack/dlpack_internal.h"
#include "dnn/dnn_internal.h"
#include "gaio/buffer.h"

gaio_tensor gaio_tensor_make(gaio_buffer *buf, size_t offset, gaio_dtype dtype, int32_t ndim, const int64_t *shape,
                             gaio_tensor_layout layout) {
    gaio_tensor t;
    memset(&t, 0, sizeof t);
    t.buffer = buf;
    t.offset = offset;
    t.dtype = dtype;
    t.ndim = ndim;
    t.layout = layout;
    for (int32_t i = 0; shape && i < ndim && i < GAIO_TENSOR_MAX_NDIM; i++) t.shape[i] = shape[i];
    return t;
}

/* Packed strides of shape in layout; false on overflow. */
static bool packed(const gaio_tensor *t, int64_t *strides) {
    int32_t n = t->ndim;
    int64_t acc = 1;
    if (t->layout == GAIO_TENSOR_NHWC) {
        /* Logical [N, C, (D,) H, W]; memory N, (D,) H, W, C. */
        strides[1] = 1;
        acc = t->shape[1];
        for (int32_t i = n - 1; i >= 2; i--) {
            strides[i] = acc;
            if (__builtin_mul_overflow(acc, t->shape[i], &acc)) return false;
        }
        strides[0] = acc;
        return !__builtin_mul_overflow(acc, t->shape[0], &acc);
    }
    for (int32_t i = n - 1; i >= 0; i--) {
        strides[i] = acc;
        if (__builtin_mul_overflow(acc, t->shape[i], &acc)) return false;
    }
    return true;
}

bool gaio__tensor_strides(const gaio_tensor *t, int64_t *strides) {
    bool zero = true;
    for (int32_t d = 0; d < t->ndim; d++) zero = zero && t->strides[d] == 0;
    if (zero) return packed(t, strides);
    for (int32_t d = 0; d < t->ndim; d++) strides[d] = t->strides[d];
    return true;
}

/* gaio__tensor_check, and with `negative` the reversed views some ops take: *below
 * receives the bytes that elements reach below element [0, ...] (0 without negative
 * strides). */
static gaio_status check_signed(const char *fn, const char *name, const gaio_tensor *t, bool negative,
                                gaio_tensor *resolved, size_t *bytes, size_t *below) {
    if (!t) return BAD("%s is NULL", name);
    if (!t->buffer) return BAD("%s->buffer is NULL", name);
    size_t e = gaio_dtype_size(t->dtype);
    if (!e) return BAD("%s->dtype %d is not a gaio_dtype", name, (int)t->dtype);
    if (t->ndim < 1 || t->ndim > GAIO_TENSOR_MAX_NDIM)
        return BAD("%s->ndim is %d: tensors have 1 to %d dimensions", name, (int)t->ndim, GAIO_TENSOR_MAX_NDIM);
    if (t->layout != GAIO_TENSOR_ROW_MAJOR && t->layout != GAIO_TENSOR_NHWC)
        return BAD("%s->layout %d is not ROW_MAJOR or NHWC", name, (int)t->layout);
    if (t->layout == GAIO_TENSOR_NHWC && t->ndim != 4 && t->ndim != 5)
        return BAD("%s is NHWC with %d dimensions: NHWC takes 4 (N, C, H, W) or 5 (N, C, D, H, W)", name,
                   (int)t->ndim);
    bool zero = true;
    for (int32_t i = 0; i < t->ndim; i++) {
        if (t->shape[i] < 1) return BAD("%s->shape[%d] is %lld: each must be >= 1", name, (int)i, (long long)t->shape[i]);
        if (t->strides[i] < 0 && !negative)
            return BAD("%s->strides[%d] is %lld: strides must be >= 0", name, (int)i, (long long)t->strides[i]);
        if (t->strides[i] < -(INT64_MAX / 2))
            return BAD("%s->strides[%d] is %lld: out of range", name, (int)i, (long long)t->strides[i]);
        if (t->strides[i]) zero = false;
    }
    gaio_tensor r = *t;
    for (int32_t i = t->ndim; i < GAIO_TENSOR_MAX_NDIM; i++) r.shape[i] = r.strides[i] = 0;
    if (zero && !packed(t, r.strides)) return BAD("%s's shape overflows 64 bits", name);
    /* The elements above element [0, ...] (positive strides) and below it (negative). */
    int64_t up[GAIO_TENSOR_MAX_NDIM], down[GAIO_TENSOR_MAX_NDIM];
    for (int32_t i = 0; i < r.ndim; i++) up[i] = r.strides[i] > 0 ? r.strides[i] : 0, down[i] = r.strides[i] < 0 ? -r.strides[i] : 0;
    size_t span, low = 0, size;
    if (!gaio__dlpack_extent(r.ndim, r.shape, up, e, &span) || !gaio__dlpack_extent(r.ndim, r.shape, down, e, &low))
        return BAD("%s's shape and strides span more bytes than an address holds", name);
    low -= e; /* the extent counts element [0, ...] itself */
    gaio_status st = gaio_buffer_size(t->buffer, &size);
    if (st != GAIO_OK) return st;
    if (low > t->offset)
        return BAD("%s's negative strides reach %zu bytes below its offset %zu: before its buffer's start", name, low,
                   t->offset);
    if (!gaio__range_ok(t->offset - low, span + low, size))
        return BAD("%s spans %zu bytes from offset %zu but its buffer holds %zu", name, span, t->offset, size);
    if (resolved) *resolved = r;
    if (bytes) *bytes = span;
    if (below) *below = low;
    return GAIO_OK;
}

gaio_status gaio__tensor_check(const char *fn, const char *name, const gaio_tensor *t, gaio_tensor *resolved,
                               size_t *bytes) {
    return check_signed(fn, name, t, false, resolved, bytes, NULL);
}

gaio_status gaio_tensor_check(const gaio_tensor *t, gaio_tensor *resolved, size_t *bytes) {
    return gaio__tensor_check(__func__, "t", t, resolved, bytes);
}

gaio_status gaio__ktensor_view_resolve_ex(const char *fn, const char *name, const char *what, const gaio_tensor *t,
                                          gaio_stream *s, unsigned flags, gaio__ktensor_view *v) {
    size_t bytes, below;
    gaio_status st = check_signed(fn, name, t, (flags & GAIO__KT_NEGATIVE_STRIDES) != 0, &v->t, &bytes, &below);
    if (st != GAIO_OK) return st;
    const gaio_tensor *r = &v->t;
    if (!(flags & GAIO__KT_ANY_DTYPE) && r->dtype != GAIO_DTYPE_F32 && r->dtype != GAIO_DTYPE_F16)
        return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn, "%s is %s: %s take f32 or f16", name, gaio_dtype_name(r->dtype),
                          what);
    size_t e = gaio_dtype_size(r->dtype);
    if (r->offset % e)
        return BAD("%s->offset %zu is not a multiple of the %s element size %zu", name, r->offset,
                   gaio_dtype_name(r->dtype), e);
    if (!gaio__reachable(r->buffer, s, 0)) return gaio__check_reach(fn, name, r->buffer, s, 0);
    void *base;
    if ((st = gaio_buffer_device_ptr(r->buffer, &base)) != GAIO_OK) return st;
    memset(&v->k, 0, sizeof v->k);
    v->k.ptr = (uint64_t)(uintptr_t)((char *)base + r->offset);
    v->k.ndim = r->ndim;
    v->k.dtype = (int32_t)r->dtype; /* GAIO_KT_* are the gaio_dtype values */
    for (int32_t i = 0; i < r->ndim; i++) v->k.shape[i] = r->shape[i], v->k.strides[i] = r->strides[i];
    v->lo = v->k.ptr - below;
    v->hi = v->k.ptr + bytes;
    return GAIO_OK;
}

gaio_status gaio__ktensor_view_resolve(const char *fn, const char *name, const char *what, const gaio_tensor *t,
                                       gaio_stream *s, gaio__ktensor_view *v) {
    return gaio__ktensor_view_resolve_ex(fn, name, what, t, s, 0, v);
}

/* A reversed dimension reaches the same elements as the forward one: distinctness goes
 * by the strides' magnitudes. */
static int64_t mag(int64_t s) { return s < 0 ? -s : s; }

bool gaio__ktensor_distinct(const gaio_ktensor *k) {
    int32_t d[GAIO_KT_MAX_NDIM], n = 0;
    for (int32_t i = 0; i < k->ndim; i++)
        if (k->shape[i] > 1) d[n++] = i;
    for (int32_t i = 1; i < n; i++)
        for (int32_t j = i; j > 0 && mag(k->strides[d[j]]) < mag(k->strides[d[j - 1]]); j--) {
            int32_t tmp = d[j];
            d[j] = d[j - 1];
            d[j - 1] = tmp;
        }
    int64_t reach = 0; /* the largest offset reached by the dimensions so far */
    for (int32_t i = 0; i < n; i++) {
        int64_t st = mag(k->strides[d[i]]);
        if (st <= reach) return false;
        reach += st * (k->shape[d[i]] - 1);
    }
    return true;
}

bool gaio__ktensor_apart(const gaio_ktensor *a, const gaio_ktensor *b) {
    if (a->dtype != b->dtype || a->ndim != b->ndim) return false;
    const int64_t es = gaio_kt_size(a->dtype);
    if ((b->ptr - a->ptr) % (uint64_t)es) return false;
    const int64_t d = (int64_t)(b->ptr - a->ptr) / es; /* b's first element from a's, in elements */
    int32_t c = -1;
    int64_t p = 0;
    for (int32_t i = 0; i < a->ndim; i++) {
        if (a->shape[i] != b->shape[i] && (a->strides[i] != 1 || b->strides[i] != 1)) return false;
        if (a->strides[i] == 1 && b->strides[i] == 1 && c < 0) {
            c = i;
            continue;
        }
        for (int k = 0; k < 2; k++) {
            const gaio_ktensor *t = k ? b : a;
            if (t->shape[i] > 1 && t->strides[i] <= 0) return false;
            if (t->shape[i] > 1 && (p == 0 || t->strides[i] < p)) p = t->strides[i];
        }
    }
    if (c < 0 || p == 0) return false;
    for (int32_t i = 0; i < a->ndim; i++)
        for (int k = 0; k < 2; k++) {
            const gaio_ktensor *t = k ? b : a;
            if (i != c && t->shape[i] > 1 && t->strides[i] % p) return false;
        }
    /* a's channels take places [0, Ca) of every p elements, b's [r, r + Cb) */
    const int64_t ca = a->shape[c], cb = b->shape[c], r = ((d % p) + p) % p;
    return ca <= p && cb <= p && r >= ca && r + cb <= p;
}

void gaio__shape_text(int32_t ndim, const int64_t *shape, char *out, size_t size) {
    size_t n = 0;
    out[0] = 0;
    for (int32_t i = 0; i < ndim && n < size; i++)
        n += (size_t)snprintf(out + n, size - n, "%s%lld", i ? ", " : "[", (long long)shape[i]);
    if (n < size) snprintf(out + n, size - n, "]");
}

gaio_status gaio__conv_view_4d(const char *fn, const char *name, const char *op, const gaio__ktensor_view *v) {
    if (v->t.ndim == 4) return GAIO_OK;
    char sh[128];
    gaio__shape_text(v->t.ndim, v->t.shape, sh, sizeof sh);
    return BAD("%s is %s: %s takes 4-D tensors (N, C, H, W in logical order)", name, sh, op);
}

gaio_status gaio__conv_views(const char *fn, const char *what, const char *op, gaio_stream *s, const gaio_tensor *x,
                             const gaio_tensor *w, const gaio_tensor *y, gaio__ktensor_view v[3]) {
    static const char *const names[3] = {"x", "w", "y"};
    const gaio_tensor *ts[3] = {x, w, y};
    for (int i = 0; i < 3; i++) {
        gaio_status st = gaio__ktensor_view_resolve(fn, names[i], what, ts[i], s, &v[i]);
        if (st == GAIO_OK) st = gaio__conv_view_4d(fn, names[i], op, &v[i]);
        if (st != GAIO_OK) return st;
    }
    gaio_dtype dt = v[0].t.dtype;
    if (v[1].t.dtype != dt || v[2].t.dtype != dt)
        return BAD("x is %s, w %s and y %s: they must match", gaio_dtype_name(dt), gaio_dtype_name(v[1].t.dtype),
                   gaio_dtype_name(v[2].t.dtype));
    return GAIO_OK;
}
