/* Resize (opsets 10-19) and Upsample (7-9) of a 4-D tensor over H and W: the output
 * size as ONNX's reference computes it, and whether the whole-factor broadcast copy or
 * gaio_resize2d runs it. Scales, sizes and roi are constants (ops_infer.c reads them).
 *
 * The reference (onnx/reference/ops/op_resize.py) resizes every axis, the batch and
 * the channels too; gaio resizes H and W only, so N and C must come out the same and
 * their coordinate rule must map each index to itself, which every rule does at scale
 * 1 except tf_half_pixel_for_nn (half an element to the right: linear mixes neighbours,
 * nearest rounding up moves one) and tf_crop_and_resize with a crop of them. */
#include <math.h>
#include <string.h>

#include "model/infer_resize.h"
#include "model/ops_internal.h"

#define RANK 4
/* Output lengths past this are refused: no image model gets near, and it keeps
 * products of lengths far from overflowing. */
#define MAX_LEN ((int64_t)1 << 31)

static const char *const modes[] = {"nearest", "linear", "cubic"};
static const char *const axis_names[] = {"batch", "channel", "height", "width"};

static const char *sym(const mvalue *v, int d) { return v->dim_names[d] ? v->dim_names[d] : ""; }

/* Whether the coordinate rule maps index o of an axis at scale 1 to o itself
 * (resize_math.h's arithmetic at scale 1; roi aside). */
static bool rule_is_identity(const mattrs *a) {
    if (a->rs_coord != 3) return true;
    return a->rs_mode == 0 && (a->rs_nearest == 0 || a->rs_nearest == 2); /* (o + 0.5) rounded down */
}

/* Whether nearest output index o of an axis resized by the whole factor f reads index
 * o / f (rounded down) under the node's rule: the broadcast copy's indexing. */
static bool whole_factor_rule(const mattrs *a, int64_t f) {
    if (a->rs_mode != 0) return false;
    if (f == 1 && a->rs_coord != 5 && rule_is_identity(a)) return true;
    switch (a->rs_coord) {
    case 0: case 2: case 6: return a->rs_nearest <= 1; /* o / f + a fraction in (-0.5, 0.5): rounds to o / f */
    case 1: case 3: return a->rs_nearest == 2;      /* o / f, (o + 0.5) / f: floored */
    default: return false;
    }
}

gaio_status gaio__resize_infer(const char *fn, const mgraph *g, mnode *n, const mvalue *x, const gaio__resize_inputs *in,
                               int64_t out[4]) {
    mattrs *a = &n->a;
    const bool old = n->op == OP_UPSAMPLE || g->opset < 11; /* Upsample, Resize-10: nearest or linear, no roi */
    if (a->rs_mode == 2 && old)
        return FAIL(GAIO_ERR_INVALID_ARG, "mode 'cubic' came in Resize-11; opset %lld has nearest and linear",
                    (long long)g->opset);
    if (x->ndim != RANK)
        return FAIL(GAIO_ERR_NOT_SUPPORTED, "input '%s' has rank %d: gaio resizes 4-D tensors (over H and W)", x->name,
                    x->ndim);
    /* The axes the scales or sizes are for (opset 18's attribute, else all). */
    int32_t naxes = a->naxes ? a->naxes : RANK;
    if (naxes > RANK) return FAIL(GAIO_ERR_INVALID_ARG, "axes has %d values for a 4-D input", naxes);
    int axis_of[RANK];
    bool listed[RANK] = {false, false, false, false};
    for (int i = 0; i < naxes; i++) {
        int64_t d = a->naxes ? a->axes[i] : i;
        if (d < -RANK || d >= RANK)
            return FAIL(GAIO_ERR_INVALID_ARG, "axes has %lld, outside the input's rank %d", (long long)d, RANK);
        if (d < 0) d += RANK;
        if (listed[d]) return FAIL(GAIO_ERR_INVALID_ARG, "axes names axis %lld twice", (long long)d);
        listed[d] = true, axis_of[i] = (int)d;
    }
    if (in->nscales >= 0 && in->nsizes >= 0) return FAIL(GAIO_ERR_INVALID_ARG, "both scales and sizes are given");
    if (in->nscales < 0 && in->nsizes < 0) return FAIL(GAIO_ERR_INVALID_ARG, "neither scales nor sizes is given");
    const bool by_scales = in->nscales >= 0;
    const int32_t count = by_scales ? in->nscales : in->nsizes;
    if (count != naxes)
        return FAIL(GAIO_ERR_INVALID_ARG, "%s has %d values for %d %s", by_scales ? "scales" : "sizes", count, naxes,
                    a->naxes ? "axes" : "dimensions of a 4-D input");
    float roi[2 * RANK] = {0, 0, 0, 0, 1, 1, 1, 1};
    if (a->rs_coord == 5) {
        if (in->nroi < 0) return FAIL(GAIO_ERR_INVALID_ARG, "tf_crop_and_resize needs roi, which is not given");
        if (in->nroi != 2 * naxes)
            return FAIL(GAIO_ERR_INVALID_ARG, "roi has %d values; %d axes take %d", in->nroi, naxes, 2 * naxes);
        for (int i = 0; i < naxes; i++) {
            roi[axis_of[i]] = in->roi[i], roi[RANK + axis_of[i]] = in->roi[naxes + i];
            if (!isfinite(in->roi[i]) || !isfinite(in->roi[naxes + i]))
                return FAIL(GAIO_ERR_INVALID_ARG, "roi of axis %d is not finite", axis_of[i]);
        }
    }
    if (a->rs_keep_aspect && by_scales)
        return FAIL(GAIO_ERR_INVALID_ARG, "keep_aspect_ratio_policy '%s' takes sizes, not scales",
                    a->rs_keep_aspect == 1 ? "not_larger" : "not_smaller");

    /* Per axis: the scale the coordinate rule uses and the output length, as the
     * reference computes them (in double; floor of in * scale from scales). */
    double scale[RANK];
    for (int d = 0; d < RANK; d++) scale[d] = 1.0, out[d] = x->dims[d];
    for (int i = 0; i < naxes; i++) {
        const int d = axis_of[i];
        const int64_t len = x->dims[d];
        if (by_scales) {
            const double s = (double)in->scales[i];
            if (!(s > 0.0) || isinf(s)) return FAIL(GAIO_ERR_INVALID_ARG, "scale %g of axis %d must be > 0", s, d);
            if (s == 1.0) continue;
            if (len < 0)
                return FAIL(GAIO_ERR_NOT_SUPPORTED, "resizing symbolic dimension '%s' is not supported", sym(x, d));
            const double o = floor(s * (double)len);
            if (o < 1.0)
                return FAIL(GAIO_ERR_NOT_SUPPORTED, "scale %g makes axis %d of length %lld empty: gaio runs no empty "
                            "tensors", s, d, (long long)len);
            if (o > (double)MAX_LEN) return FAIL(GAIO_ERR_NOT_SUPPORTED, "scale %g makes axis %d over 2^31 long", s, d);
            scale[d] = s, out[d] = (int64_t)o;
        } else {
            const int64_t o = in->sizes[i];
            if (o < 0) return FAIL(GAIO_ERR_INVALID_ARG, "sizes has %lld for axis %d", (long long)o, d);
            if (o == 0) return FAIL(GAIO_ERR_NOT_SUPPORTED, "sizes has 0 for axis %d: gaio runs no empty tensors", d);
            if (o > MAX_LEN) return FAIL(GAIO_ERR_NOT_SUPPORTED, "sizes has %lld for axis %d: over 2^31", (long long)o, d);
            if (len < 0)
                return FAIL(GAIO_ERR_NOT_SUPPORTED, "resizing symbolic dimension '%s' (to sizes) is not supported",
                            sym(x, d));
            scale[d] = (double)o / (double)len, out[d] = o;
        }
    }
    if (!by_scales && a->rs_keep_aspect) { /* one scale for the listed axes: the smaller or the larger */
        double s = scale[axis_of[0]];
        for (int i = 1; i < naxes; i++) {
            double t = scale[axis_of[i]];
            s = a->rs_keep_aspect == 1 ? (t < s ? t : s) : (t > s ? t : s);
        }
        for (int i = 0; i < naxes; i++) {
            const int d = axis_of[i];
            const double o = floor(s * (double)x->dims[d] + 0.5); /* the reference's round half up */
            if (o < 1.0 || o > (double)MAX_LEN)
                return FAIL(GAIO_ERR_NOT_SUPPORTED, "keep_aspect_ratio_policy makes axis %d %s", d,
                            o < 1.0 ? "empty: gaio runs no empty tensors" : "over 2^31 long");
            scale[d] = s, out[d] = (int64_t)o;
        }
    }

    /* Batch and channels stay as they are; the rule must keep every index in place on
     * the axes gaio_resize2d does not resize and on those the reference leaves alone. */
    for (int d = 0; d < RANK; d++) {
        const bool resized_by_reference = !a->naxes || listed[d];
        if (d < 2 && (scale[d] != 1.0 || out[d] != x->dims[d]))
            return FAIL(GAIO_ERR_NOT_SUPPORTED, "resizing axis %d (the %s) is not supported: gaio resizes H and W", d,
                        axis_names[d]);
        const bool moves = x->dims[d] != 1 && (d < 2 ? resized_by_reference : !resized_by_reference);
        if (moves && !rule_is_identity(a))
            return FAIL(GAIO_ERR_NOT_SUPPORTED, "coordinate_transformation_mode 'tf_half_pixel_for_nn' with mode '%s'%s "
                        "moves the %s axis by half an element at scale 1, which gaio does not do",
                        modes[a->rs_mode], a->rs_mode == 0 ? " and this nearest_mode" : "", axis_names[d]);
        if (d < 2 && a->rs_coord == 5 && x->dims[d] != 1 && (roi[d] != 0.0f || roi[RANK + d] != 1.0f))
            return FAIL(GAIO_ERR_NOT_SUPPORTED, "roi crops axis %d (the %s) to [%g, %g]: gaio crops H and W only", d,
                        axis_names[d], (double)roi[d], (double)roi[RANK + d]);
    }

    /* Resize-10 and Upsample name no rounding for nearest: onnxruntime (and ONNX 1.5's
     * Resize-10 cases) floor o / scale when upscaling and round it up when downscaling,
     * per axis; gaio takes one rounding for both, so not both at once. */
    if (old && a->rs_mode == 0) {
        const bool down = scale[2] < 1.0 || scale[3] < 1.0, up = scale[2] > 1.0 || scale[3] > 1.0;
        if (down && up)
            return FAIL(GAIO_ERR_NOT_SUPPORTED, "nearest upscaling one axis (floor) and downscaling the other (ceil) "
                        "in opset %lld is not supported", (long long)g->opset);
        a->rs_nearest = down ? 3 : 2;
    }
    /* antialias stretches linear and cubic's filter by 1 / scale when downscaling:
     * gaio_resize2d takes up to 64 taps per axis (nearest ignores it). */
    for (int i = 0; a->rs_antialias && a->rs_mode != 0 && i < 2; i++) {
        const double s = scale[2 + i] < 1.0 ? scale[2 + i] : 1.0;
        const double taps = 2.0 - 2.0 * (floor((a->rs_mode == 2 ? -2.0 : -1.0) / s) + 1.0);
        if (taps > 64.0)
            return FAIL(GAIO_ERR_NOT_SUPPORTED, "antialias at the %s scale %g takes %.0f taps: gaio takes up to 64 "
                        "(a scale of 1/32 for linear, 1/16 for cubic)", axis_names[2 + i], scale[2 + i], taps);
    }
    /* The broadcast copy where nearest picks index o / f on both axes; else gaio_resize2d. */
    bool whole = true;
    for (int i = 0; i < 2; i++) {
        const int64_t len = x->dims[2 + i], o = out[2 + i], f = o / len;
        a->rs_factor[i] = f;
        whole = whole && f * len == o && scale[2 + i] == (double)f && whole_factor_rule(a, f);
    }
    a->rs_general = !whole;
    for (int i = 0; i < 2; i++) {
        a->rs_scale[i] = scale[2 + i];
        a->rs_roi[i] = roi[2 + i], a->rs_roi[2 + i] = roi[RANK + 2 + i];
    }
    return GAIO_OK;
}
