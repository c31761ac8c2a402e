/* ConvTranspose's output shape, per ONNX (the same at opsets 1 and 11): for each
 * spatial axis, with ext = (kernel - 1) dilation + 1,
 *   output_shape given:  total = stride (in - 1) + output_padding + ext - output_shape,
 *                        split SAME_UPPER: begin = total / 2, else end = total / 2
 *                        (floor division: an odd total's extra unit goes to the other side);
 *   auto_pad SAME_*:     the same with output_shape = in * stride;
 *   VALID:               no pads;
 *   else:                stride (in - 1) + output_padding + ext - pads_begin - pads_end.
 * A negative total (output_shape past the taps) makes negative pads: rows of the bias
 * alone, which gaio_conv_transpose2d takes. */
#include "model/infer_conv_transpose.h"

#include <stdint.h>

#include "model/ops_internal.h"

#define DIM_LIMIT ((int64_t)1 << 48) /* as ops_infer.c */

static int64_t floor_half(int64_t v) { return v >= 0 ? v / 2 : -((-v + 1) / 2); }

static gaio_status spatial_input(const char *fn, const mnode *n, const mvalue *v) {
    if (v->ndim == 3 || v->ndim == 5)
        return FAIL(GAIO_ERR_NOT_SUPPORTED, "%d-D transposed convolutions are not supported (input '%s')", v->ndim - 2,
                    v->name);
    if (v->ndim != 4) return FAIL(GAIO_ERR_INVALID_ARG, "input '%s' has rank %d; it must be 4", v->name, v->ndim);
    return GAIO_OK;
}

gaio_status gaio__infer_conv_transpose(const char *fn, mgraph *g, mnode *n, int64_t out[4], const char **batch_name) {
    const mvalue *x = &g->values[n->in[0]], *w = &g->values[n->in[1]];
    const mvalue *b = n->nin > 2 && n->in[2] >= 0 ? &g->values[n->in[2]] : NULL;
    mattrs *a = &n->a;
    gaio_status st;
    if (x->elem != MT_F32 && x->elem != MT_F16)
        return FAIL(GAIO_ERR_NOT_SUPPORTED, "input '%s' is %s; ConvTranspose runs on float32 or float16", x->name,
                    gaio__mt_name(x->elem));
    if (w->elem != x->elem || (b && b->elem != x->elem))
        return FAIL(GAIO_ERR_INVALID_ARG, "inputs '%s', '%s'%s%s differ in type", x->name, w->name, b ? " and " : "",
                    b ? b->name : "");
    if ((st = spatial_input(fn, n, x)) != GAIO_OK || (st = spatial_input(fn, n, w)) != GAIO_OK) return st;
    for (int i = 0; i < 4; i++)
        if (w->dims[i] < 0) return FAIL(GAIO_ERR_NOT_SUPPORTED, "the weights '%s' have a symbolic dimension", w->name);
    for (int i = 1; i < 4; i++)
        if (x->dims[i] < 0)
            return FAIL(GAIO_ERR_NOT_SUPPORTED, "input '%s' has a symbolic %s", x->name,
                        i == 1 ? "channel count" : "spatial dimension");
    if (w->dims[0] != x->dims[1] || x->dims[1] % a->group)
        return FAIL(GAIO_ERR_INVALID_ARG,
                    "input '%s' has %lld channels; weights '%s' [%lld, %lld, ...] with group %lld do not match it "
                    "(ConvTranspose's weights are [C, K / group, kH, kW])",
                    x->name, (long long)x->dims[1], w->name, (long long)w->dims[0], (long long)w->dims[1],
                    (long long)a->group);
    if (w->dims[1] > DIM_LIMIT / a->group)
        return FAIL(GAIO_ERR_INVALID_ARG, "the weights '%s' have too many output channels", w->name);
    int64_t k = w->dims[1] * a->group;
    if (a->nkernel && (a->kernel[0] != w->dims[2] || a->kernel[1] != w->dims[3]))
        return FAIL(GAIO_ERR_INVALID_ARG, "kernel_shape [%lld, %lld] differs from the weights' [%lld, %lld]",
                    (long long)a->kernel[0], (long long)a->kernel[1], (long long)w->dims[2], (long long)w->dims[3]);
    if (w->dims[2] < 1 || w->dims[3] < 1 || w->dims[2] > INT32_MAX || w->dims[3] > INT32_MAX)
        return FAIL(GAIO_ERR_INVALID_ARG, "the weights '%s' have an empty or huge kernel", w->name);
    a->kernel[0] = w->dims[2], a->kernel[1] = w->dims[3];
    if (b && (b->ndim != 1 || b->dims[0] != k))
        return FAIL(GAIO_ERR_INVALID_ARG, "the bias '%s' must have shape [%lld]", b->name, (long long)k);
    for (int i = 0; i < 2; i++) {
        /* Every factor is below 2^48 or 2^31: the arithmetic stays inside int64_t. */
        int64_t in = x->dims[2 + i], s = a->strides[i], op = a->output_padding[i];
        int64_t ext = (a->kernel[i] - 1) * a->dilations[i] + 1, natural = s * (in - 1) + op + ext;
        int64_t want = a->noutput_shape ? a->output_shape[i] : a->auto_pad == 1 || a->auto_pad == 2 ? in * s : -1;
        if (want >= 0) {
            int64_t total = natural - want, half = floor_half(total);
            bool upper = a->auto_pad == 1;
            a->pads[i] = upper ? half : total - half;
            a->pads[i + 2] = upper ? total - half : half;
        } else if (a->auto_pad == 3) {
            a->pads[i] = a->pads[i + 2] = 0;
        }
        if (a->pads[i] < -INT32_MAX || a->pads[i] > INT32_MAX || a->pads[i + 2] < -INT32_MAX ||
            a->pads[i + 2] > INT32_MAX)
            return FAIL(GAIO_ERR_INVALID_ARG, "the pads ConvTranspose's output shape makes are out of range");
        int64_t o = natural - a->pads[i] - a->pads[i + 2];
        if (o < 1 || o > DIM_LIMIT)
            return FAIL(GAIO_ERR_INVALID_ARG, "the output's %s would be %lld", i ? "width" : "height", (long long)o);
        out[2 + i] = o;
    }
    a->auto_pad = 0, a->noutput_shape = 0; /* explicit pads from here on */
    out[0] = x->dims[0], out[1] = k;
    *batch_name = x->dims[0] < 0 && x->dim_names[0] ? x->dim_names[0] : "";
    return GAIO_OK;
}
