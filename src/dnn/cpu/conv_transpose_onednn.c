/* oneDNN's deconvolution for gaio_conv_transpose2d on the host (see
 * conv_transpose_onednn.h), on the calling worker; oneDNN spreads it over its own
 * OpenMP threads, as for the convolution (onednn.c).
 *
 * Per call: the descriptors, the primitive descriptor and the primitive (oneDNN's own
 * primitive cache makes a repeated shape's primitive cheap), the weights reordered
 * into the layout the primitive picked ("any": its jit kernels' blocked one), x and y
 * in the caller's strides; scratchpads are the call's own (user mode), so that several
 * workers may run one shape at once. oneDNN's deconvolution pads as a convolution does:
 * the output padding is a smaller end pad (oneDNN takes end pads down to 1 - stride),
 * and a negative begin pad it does not take. Those problems, the reference
 * implementation's (gaio's loop is faster) and any that oneDNN refuses go to gaio's
 * loop: GAIO_ERR_NOT_SUPPORTED.
 *
 * F16: oneDNN 2.6 has no f16 deconvolution on AVX2 CPUs: x, w and the bias are widened
 * to packed f32 copies and y is computed in an f32 one, then rounded to nearest even. */
#include "dnn/cpu/conv_transpose_onednn.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dnn/cpu/onednn.h"

#ifdef GAIO_HAVE_ONEDNN_H

#include "core/half.h"

#define FN "gaio_conv_transpose2d"
#define ALIGN 64

typedef struct prim {
    dnnl_primitive_t deconv, wr; /* wr: the weights' reorder, NULL when none */
    dnnl_memory_desc_t x_md, w_user, w_md, b_md, y_md, scratch_md, wr_scratch_md;
    size_t w_bytes, scratch_bytes, wr_scratch_bytes;
    char impl[64];
} prim;

/* GAIO_ERR_NOT_SUPPORTED for what oneDNN does not take (gaio's loop runs it), else
 * the failure itself. */
static gaio_status dnnl_fail(dnnl_status_t st, const char *call) {
    if (st == dnnl_unimplemented || st == dnnl_invalid_arguments) return GAIO_ERR_NOT_SUPPORTED;
    return gaio__fail(st == dnnl_out_of_memory ? GAIO_ERR_NO_MEMORY : GAIO_ERR_DRIVER, FN, "%s failed: %s", call,
                      gaio__dnnl_status_text(st));
}

#define TRY(call, name)                                   \
    do {                                                  \
        dnnl_status_t st_ = (call);                       \
        if (st_ != dnnl_success) {                        \
            status = dnnl_fail(st_, name);                \
            goto out;                                     \
        }                                                 \
    } while (0)

static size_t md_size(const dnnl_memory_desc_t *md) { return gaio__dnnl.memory_desc_get_size(md); }

static void prim_destroy(prim *p) {
    if (p->deconv) gaio__dnnl.primitive_destroy(p->deconv);
    if (p->wr) gaio__dnnl.primitive_destroy(p->wr);
    memset(p, 0, sizeof *p);
}

/* Packed strides of dims in NCHW order. */
static void packed(const int64_t *dims, int n, int64_t *st) {
    int64_t acc = 1;
    for (int i = n - 1; i >= 0; i--) st[i] = acc, acc *= dims[i];
}

/* The primitive of a; f16 problems as the f32 one on packed copies. */
static gaio_status prim_make(const gaio__convt_args *a, prim *p) {
    memset(p, 0, sizeof *p);
    gaio_status status = GAIO_OK;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t pd = NULL, rpd = NULL;
    const bool f16 = a->dtype == GAIO_DTYPE_F16;
    const int64_t g = a->groups, cg = a->c / g, kg = a->k / g;
    dnnl_dims_t strides = {a->stride[0], a->stride[1]};
    dnnl_dims_t dil = {a->dilation[0] - 1, a->dilation[1] - 1}; /* oneDNN's 0 is none */
    int64_t pad_end[2];
    for (int i = 0; i < 2; i++) { /* the output padding as a smaller end pad: see above */
        int64_t in = i ? a->w : a->h, k = i ? a->s : a->r, out = i ? a->q : a->p;
        pad_end[i] = (in - 1) * a->stride[i] + (k - 1) * a->dilation[i] + 1 - a->pad[i] - out;
        if (a->pad[i] < 0 || pad_end[i] <= -a->stride[i]) return GAIO_ERR_NOT_SUPPORTED;
    }
    dnnl_dims_t pad_l = {a->pad[0], a->pad[1]}, pad_r = {pad_end[0], pad_end[1]};
    dnnl_dims_t xd = {a->n, a->c, a->h, a->w}, yd = {a->n, a->k, a->p, a->q}, xs, ys;
    if (f16) {
        packed(xd, 4, xs), packed(yd, 4, ys);
    } else {
        memcpy(xs, a->xs, sizeof a->xs);
        memcpy(ys, a->ys, sizeof a->ys);
    }
    /* ONNX's w[c, k', r, s] as oneDNN's [G, K / G, C / G, R, S] (or [K, C, R, S]); the f16
     * copy is w packed in its own order. */
    int64_t ws[4];
    if (f16) {
        int64_t wd4[4] = {a->c, kg, a->r, a->s};
        packed(wd4, 4, ws);
    } else {
        memcpy(ws, a->ws, sizeof ws);
    }
    int wnd = g > 1 ? 5 : 4;
    dnnl_dims_t wd, wst;
    if (g > 1) {
        int64_t d[5] = {g, kg, cg, a->r, a->s}, st[5] = {cg * ws[0], ws[1], ws[0], ws[2], ws[3]};
        memcpy(wd, d, sizeof d), memcpy(wst, st, sizeof st);
    } else {
        int64_t d[4] = {a->k, a->c, a->r, a->s}, st[4] = {ws[1], ws[0], ws[2], ws[3]};
        memcpy(wd, d, sizeof d), memcpy(wst, st, sizeof st);
    }
    dnnl_memory_desc_t w_any, b_md;
    TRY(gaio__dnnl.memory_desc_init_by_strides(&p->x_md, 4, xd, dnnl_f32, xs), "dnnl_memory_desc_init_by_strides(x)");
    TRY(gaio__dnnl.memory_desc_init_by_strides(&p->y_md, 4, yd, dnnl_f32, ys), "dnnl_memory_desc_init_by_strides(y)");
    TRY(gaio__dnnl.memory_desc_init_by_strides(&p->w_user, wnd, wd, dnnl_f32, wst),
        "dnnl_memory_desc_init_by_strides(w)");
    TRY(gaio__dnnl.memory_desc_init_by_tag(&w_any, wnd, wd, dnnl_f32, dnnl_format_tag_any),
        "dnnl_memory_desc_init_by_tag(w, any)");
    dnnl_dims_t bd = {a->k};
    TRY(gaio__dnnl.memory_desc_init_by_tag(&b_md, 1, bd, dnnl_f32, dnnl_a), "dnnl_memory_desc_init_by_tag(bias)");
    dnnl_deconvolution_desc_t dd;
    TRY(gaio__dnnl.dilated_deconvolution_forward_desc_init(&dd, dnnl_forward_inference, dnnl_deconvolution_direct,
                                                           &p->x_md, &w_any, a->bias ? &b_md : NULL, &p->y_md,
                                                           strides, dil, pad_l, pad_r),
        "dnnl_dilated_deconvolution_forward_desc_init");
    TRY(gaio__dnnl.primitive_attr_create(&attr), "dnnl_primitive_attr_create");
    TRY(gaio__dnnl.primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user),
        "dnnl_primitive_attr_set_scratchpad_mode");
    TRY(gaio__dnnl.primitive_desc_create(&pd, &dd, attr, gaio__dnnl_engine, NULL), "dnnl_primitive_desc_create");
    const char *impl = NULL;
    if (gaio__dnnl.primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success || !impl) impl = "";
    if (strncmp(impl, "ref", 3) == 0) { /* element by element: gaio's loop is faster */
        status = GAIO_ERR_NOT_SUPPORTED;
        goto out;
    }
    snprintf(p->impl, sizeof p->impl, "%s", impl);
    p->b_md = b_md;
    p->w_md = *gaio__dnnl.primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    p->scratch_md = *gaio__dnnl.primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    p->scratch_bytes = md_size(&p->scratch_md);
    TRY(gaio__dnnl.primitive_create(&p->deconv, pd), "dnnl_primitive_create(deconvolution)");
    if (!gaio__dnnl.memory_desc_equal(&p->w_user, &p->w_md)) {
        p->w_bytes = md_size(&p->w_md);
        TRY(gaio__dnnl.reorder_primitive_desc_create(&rpd, &p->w_user, gaio__dnnl_engine, &p->w_md, gaio__dnnl_engine,
                                                      attr),
            "dnnl_reorder_primitive_desc_create(w)");
        p->wr_scratch_md = *gaio__dnnl.primitive_desc_query_md(rpd, dnnl_query_scratchpad_md, 0);
        p->wr_scratch_bytes = md_size(&p->wr_scratch_md);
        TRY(gaio__dnnl.primitive_create(&p->wr, rpd), "dnnl_primitive_create(reorder)");
    }
out:
    if (rpd) gaio__dnnl.primitive_desc_destroy(rpd);
    if (pd) gaio__dnnl.primitive_desc_destroy(pd);
    if (attr) gaio__dnnl.primitive_attr_destroy(attr);
    if (status != GAIO_OK) prim_destroy(p);
    return status;
}

static size_t up(size_t n) { return (n + ALIGN - 1) / ALIGN * ALIGN; }

static float get(gaio_dtype dt, const void *p, int64_t i) {
    return dt == GAIO_DTYPE_F16 ? h2f(((const uint16_t *)p)[i]) : ((const float *)p)[i];
}

/* Runs p over f32 buffers; scratch holds the reordered weights and both scratchpads. */
static gaio_status prim_run(const prim *p, char *scratch, const float *x, const float *w, const float *bias, float *y) {
    gaio_status status = GAIO_OK;
    dnnl_stream_t stream = NULL;
    dnnl_memory_t m[7] = {NULL};
    char *wbuf = scratch, *sbuf = wbuf + up(p->w_bytes), *rsbuf = sbuf + up(p->scratch_bytes);
    TRY(gaio__dnnl.stream_create(&stream, gaio__dnnl_engine, dnnl_stream_default_flags), "dnnl_stream_create");
    const void *wc = w;
    if (p->wr) {
        TRY(gaio__dnnl.memory_create(&m[0], &p->w_user, gaio__dnnl_engine, (void *)w), "dnnl_memory_create(w)");
        TRY(gaio__dnnl.memory_create(&m[1], &p->w_md, gaio__dnnl_engine, wbuf), "dnnl_memory_create(w reordered)");
        dnnl_exec_arg_t ra[3] = {{DNNL_ARG_FROM, m[0]}, {DNNL_ARG_TO, m[1]}};
        int nra = 2;
        if (p->wr_scratch_bytes) {
            TRY(gaio__dnnl.memory_create(&m[2], &p->wr_scratch_md, gaio__dnnl_engine, rsbuf),
                "dnnl_memory_create(scratchpad)");
            ra[nra++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, m[2]};
        }
        TRY(gaio__dnnl.primitive_execute(p->wr, stream, nra, ra), "dnnl_primitive_execute(reorder)");
        wc = wbuf;
    }
    TRY(gaio__dnnl.memory_create(&m[3], &p->x_md, gaio__dnnl_engine, (void *)x), "dnnl_memory_create(x)");
    TRY(gaio__dnnl.memory_create(&m[4], &p->w_md, gaio__dnnl_engine, (void *)wc), "dnnl_memory_create(w)");
    TRY(gaio__dnnl.memory_create(&m[5], &p->y_md, gaio__dnnl_engine, y), "dnnl_memory_create(y)");
    dnnl_exec_arg_t args[5] = {{DNNL_ARG_SRC, m[3]}, {DNNL_ARG_WEIGHTS, m[4]}, {DNNL_ARG_DST, m[5]}};
    int nargs = 3;
    if (bias) {
        TRY(gaio__dnnl.memory_create(&m[6], &p->b_md, gaio__dnnl_engine, (void *)bias), "dnnl_memory_create(bias)");
        args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, m[6]};
    }
    dnnl_memory_t ms = NULL;
    if (p->scratch_bytes) {
        TRY(gaio__dnnl.memory_create(&ms, &p->scratch_md, gaio__dnnl_engine, sbuf), "dnnl_memory_create(scratchpad)");
        args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, ms};
    }
    dnnl_status_t st = gaio__dnnl.primitive_execute(p->deconv, stream, nargs, args);
    if (st == dnnl_success) st = gaio__dnnl.stream_wait(stream);
    if (ms) gaio__dnnl.memory_destroy(ms);
    /* Past the primitive's creation a failure is real: no fallback that could hide it. */
    if (st != dnnl_success)
        status = gaio__fail(GAIO_ERR_DRIVER, FN, "dnnl_primitive_execute(deconvolution) failed: %s",
                            gaio__dnnl_status_text(st));
out:
    for (int i = 0; i < 7; i++)
        if (m[i]) gaio__dnnl.memory_destroy(m[i]);
    if (stream) gaio__dnnl.stream_destroy(stream);
    return status; /* GAIO_ERR_NOT_SUPPORTED before the primitive ran: gaio's loop writes y instead */
}

gaio_status gaio__convt_onednn(const gaio__convt_args *a) {
    if (!gaio__onednn_ready()) return GAIO_ERR_NOT_SUPPORTED;
    prim p;
    gaio_status st = prim_make(a, &p);
    if (st != GAIO_OK) return st;
    const bool f16 = a->dtype == GAIO_DTYPE_F16;
    const int64_t kg = a->k / a->groups;
    const size_t xe = (size_t)(a->n * a->c * a->h * a->w), we = (size_t)(a->c * kg * a->r * a->s),
                 ye = (size_t)(a->n * a->k * a->p * a->q);
    size_t need = up(p.w_bytes) + up(p.scratch_bytes) + up(p.wr_scratch_bytes);
    size_t f16_at = need;
    if (f16) need += up(xe * 4) + up(we * 4) + up((size_t)a->k * 4) + up(ye * 4);
    char *scratch = NULL;
    if (posix_memalign((void **)&scratch, ALIGN, need ? need : ALIGN) != 0) {
        prim_destroy(&p);
        return gaio__fail(GAIO_ERR_NO_MEMORY, FN, "out of host memory for %zu bytes of scratch", need);
    }
    if (!f16) {
        st = prim_run(&p, scratch, a->x, a->wt, a->bias, a->y);
    } else {
        float *x32 = (float *)(scratch + f16_at), *w32 = (float *)((char *)x32 + up(xe * 4));
        float *b32 = (float *)((char *)w32 + up(we * 4)), *y32 = (float *)((char *)b32 + up((size_t)a->k * 4));
        size_t i = 0;
        for (int64_t n = 0; n < a->n; n++)
            for (int64_t c = 0; c < a->c; c++)
                for (int64_t h = 0; h < a->h; h++)
                    for (int64_t w = 0; w < a->w; w++)
                        x32[i++] = get(a->dtype, a->x, n * a->xs[0] + c * a->xs[1] + h * a->xs[2] + w * a->xs[3]);
        i = 0;
        for (int64_t c = 0; c < a->c; c++)
            for (int64_t k = 0; k < kg; k++)
                for (int64_t r = 0; r < a->r; r++)
                    for (int64_t s = 0; s < a->s; s++)
                        w32[i++] = get(a->dtype, a->wt, c * a->ws[0] + k * a->ws[1] + r * a->ws[2] + s * a->ws[3]);
        for (int64_t k = 0; a->bias && k < a->k; k++) b32[k] = get(a->dtype, a->bias, k);
        st = prim_run(&p, scratch, x32, w32, a->bias ? b32 : NULL, y32);
        i = 0;
        for (int64_t n = 0; st == GAIO_OK && n < a->n; n++)
            for (int64_t k = 0; k < a->k; k++)
                for (int64_t h = 0; h < a->p; h++)
                    for (int64_t w = 0; w < a->q; w++)
                        ((uint16_t *)a->y)[n * a->ys[0] + k * a->ys[1] + h * a->ys[2] + w * a->ys[3]] = f2h(y32[i++]);
    }
    free(scratch);
    prim_destroy(&p);
    return st;
}

gaio_status gaio__convt_onednn_prepare(const gaio__convt_args *a, char *impl, size_t size) {
    if (!gaio__onednn_ready()) return GAIO_ERR_NOT_SUPPORTED;
    prim p;
    gaio_status st = prim_make(a, &p);
    if (st != GAIO_OK) return st;
    if (impl && size) snprintf(impl, size, "oneDNN %s%s", p.impl, p.wr ? ", w reordered" : "");
    prim_destroy(&p);
    return GAIO_OK;
}

#else

gaio_status gaio__convt_onednn(const gaio__convt_args *a) {
    (void)a;
    return GAIO_ERR_NOT_SUPPORTED;
}

gaio_status gaio__convt_onednn_prepare(const gaio__convt_args *a, char *impl, size_t size) {
    (void)a, (void)impl, (void)size;
    return GAIO_ERR_NOT_SUPPORTED;
}

#endif
