/* gaio_gemm: checks, then one native op on the stream: cuBLASLt on a GPU
 * (dnn/cuda/gemm_cuda.c), OpenBLAS over the worker pool on the host
 * (dnn/cpu/gemm_cpu.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/fail.h"
#include "core/native.h"
#include "core/object.h"
#include "core/op.h"
#include "dnn/dnn_internal.h"
#include "gaio/buffer.h"

/* One operand: its batch, rows, columns, row stride and batch stride (elements). */
typedef struct operand {
    int64_t batch, rows, cols, ld, bstride;
    char *ptr; /* element [0, ...] */
    size_t lo, hi; /* byte range in its buffer, for the overlap checks */
} operand;

static gaio_status matrix(const char *fn, const char *name, const gaio_tensor *t, gaio_stream *s, operand *o) {
    gaio_tensor r;
    size_t bytes;
    gaio_status st = gaio__tensor_check(fn, name, t, &r, &bytes);
    if (st != GAIO_OK) return st;
    if (r.layout != GAIO_TENSOR_ROW_MAJOR || r.ndim < 2 || r.ndim > 3)
        return BAD("%s has %d dimensions (layout %d): a matrix operand is [rows, cols] or [batch, rows, cols], row "
                   "major",
                   name, (int)r.ndim, (int)r.layout);
    int32_t n = r.ndim;
    if (r.strides[n - 1] != 1)
        return BAD("%s's last stride is %lld: a row's elements must be adjacent", name, (long long)r.strides[n - 1]);
    o->batch = n == 3 ? r.shape[0] : 1;
    o->rows = r.shape[n - 2];
    o->cols = r.shape[n - 1];
    o->ld = r.strides[n - 2];
    if (o->rows > 1 && o->ld < o->cols)
        return BAD("%s's row stride %lld is less than its %lld columns", name, (long long)o->ld, (long long)o->cols);
    if (o->rows == 1) o->ld = o->ld < o->cols ? o->cols : o->ld;
    o->bstride = n == 3 && o->batch > 1 ? r.strides[0] : 0;
    if (o->batch > 1 && o->bstride == 0) return BAD("%s's batch stride is 0 with a batch of %lld", name, (long long)o->batch);
    if (!gaio__reachable(r.buffer, s, 0)) return gaio__check_reach(fn, name, r.buffer, s, 0);
    void *base;
    st = gaio_buffer_device_ptr(r.buffer, &base);
    if (st != GAIO_OK) return st;
    o->ptr = (char *)base + r.offset;
    o->lo = r.offset;
    o->hi = r.offset + bytes;
    return GAIO_OK;
}

static bool overlap(const gaio_tensor *x, const operand *ox, const gaio_tensor *y, const operand *oy) {
    return x->buffer == y->buffer && ox->lo < oy->hi && oy->lo < ox->hi;
}

static gaio_status batch_of(const char *fn, const char *name, const operand *o, int64_t batch) {
    if (o->batch != 1 && o->batch != batch)
        return BAD("%s has a batch of %lld but d has %lld: give the same, or 1 (or 2-D) to broadcast it", name,
                   (long long)o->batch, (long long)batch);
    return GAIO_OK;
}

typedef struct gemm_job {
    gaio__gemm_args g;
    gaio_stream *stream; /* the op holds it while the job is pending */
} gemm_job;

static gaio_status run_gemm(void *native_stream, gaio_status stream_status, void *user) {
    gemm_job *job = user;
    gaio_status st = stream_status;
    if (st == GAIO_OK) {
        if (native_stream)
            st = gaio__gemm_cuda(native_stream, &job->g, job->stream);
        else
            st = gaio__gemm_cpu(&job->g);
    }
    free(job);
    return st;
}

gaio_status gaio_gemm(gaio_stream *stream, const gaio_tensor *a, const gaio_tensor *b, const gaio_tensor *c,
                      const gaio_tensor *bias, const gaio_tensor *d, const gaio_gemm_params *params) {
    const char *fn = __func__;
    if (!stream) return BAD("stream is NULL");
    if (!params) return BAD("params is NULL");
    operand oa = {0}, ob = {0}, oc = {0}, od = {0}, obias = {0};
    gaio_status st;
    if ((st = matrix(fn, "a", a, stream, &oa)) != GAIO_OK || (st = matrix(fn, "b", b, stream, &ob)) != GAIO_OK ||
        (st = matrix(fn, "d", d, stream, &od)) != GAIO_OK)
        return st;
    if (c && (st = matrix(fn, "c", c, stream, &oc)) != GAIO_OK) return st;
    if (a->dtype != b->dtype) return BAD("a is %s but b is %s: they must match", gaio_dtype_name(a->dtype), gaio_dtype_name(b->dtype));
    if (a->dtype != GAIO_DTYPE_F32 && a->dtype != GAIO_DTYPE_F16)
        return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn, "a and b are %s: gemm takes f32 or f16", gaio_dtype_name(a->dtype));
    if (d->dtype != GAIO_DTYPE_F32 && d->dtype != GAIO_DTYPE_F16)
        return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn, "d is %s: gemm writes f32 or f16", gaio_dtype_name(d->dtype));
    if (a->dtype == GAIO_DTYPE_F32 && d->dtype != GAIO_DTYPE_F32)
        return BAD("d is %s with f32 a and b: f32 inputs write f32", gaio_dtype_name(d->dtype));
    if (c && c->dtype != d->dtype)
        return BAD("c is %s but d is %s: they must match", gaio_dtype_name(c->dtype), gaio_dtype_name(d->dtype));
    bool ta = params->trans_a != 0, tb = params->trans_b != 0;
    int64_t m = ta ? oa.cols : oa.rows, k = ta ? oa.rows : oa.cols;
    int64_t kb = tb ? ob.cols : ob.rows, n = tb ? ob.rows : ob.cols;
    if (k != kb)
        return BAD("op(a) is %lld x %lld but op(b) is %lld x %lld: the inner dimensions differ", (long long)m,
                   (long long)k, (long long)kb, (long long)n);
    if (od.rows != m || od.cols != n)
        return BAD("d is %lld x %lld but op(a) op(b) is %lld x %lld", (long long)od.rows, (long long)od.cols,
                   (long long)m, (long long)n);
    if (c && (oc.rows != m || oc.cols != n))
        return BAD("c is %lld x %lld but d is %lld x %lld", (long long)oc.rows, (long long)oc.cols, (long long)m,
                   (long long)n);
    int64_t batch = od.batch;
    if ((st = batch_of(fn, "a", &oa, batch)) != GAIO_OK || (st = batch_of(fn, "b", &ob, batch)) != GAIO_OK ||
        (c && (st = batch_of(fn, "c", &oc, batch)) != GAIO_OK))
        return st;
    if (bias) {
        gaio_tensor r;
        size_t bytes;
        if ((st = gaio__tensor_check(fn, "bias", bias, &r, &bytes)) != GAIO_OK) return st;
        if (r.ndim != 1 || r.shape[0] != n || r.strides[0] != 1)
            return BAD("bias must be a packed 1-D tensor of n = %lld values", (long long)n);
        if (r.dtype != d->dtype) return BAD("bias is %s but d is %s: they must match", gaio_dtype_name(r.dtype), gaio_dtype_name(d->dtype));
        if (!gaio__reachable(r.buffer, stream, 0)) return gaio__check_reach(fn, "bias", r.buffer, stream, 0);
        void *base;
        if ((st = gaio_buffer_device_ptr(r.buffer, &base)) != GAIO_OK) return st;
        obias.ptr = (char *)base + r.offset;
        obias.lo = r.offset;
        obias.hi = r.offset + bytes;
        if (overlap(d, &od, bias, &obias)) return BAD("d overlaps bias");
    }
    if (overlap(d, &od, a, &oa) || overlap(d, &od, b, &ob)) return BAD("d overlaps a or b: gemm cannot work in place");
    if (c && overlap(d, &od, c, &oc) && !(c->buffer == d->buffer && oc.ptr == od.ptr && oc.ld == od.ld &&
                                          oc.bstride == od.bstride && oc.batch == od.batch))
        return BAD("c overlaps d without being d itself (same offset and strides)");
    if (!isfinite(params->alpha) || !isfinite(params->beta)) return BAD("alpha and beta must be finite");
    if (params->act != GAIO_ACT_NONE && params->act != GAIO_ACT_RELU && params->act != GAIO_ACT_GELU)
        return BAD("params->act %d is not a gaio_activation", (int)params->act);

    bool cuda = stream->ctx->be->kind == GAIO_DEVICE_CUDA;
    if (!cuda && (st = gaio__openblas_load(fn, NULL)) != GAIO_OK) return st;
    if (cuda && (st = gaio__gemm_cuda_ready(fn)) != GAIO_OK) return st;

    gemm_job *job = calloc(1, sizeof *job);
    if (!job) return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory for the op");
    gaio__gemm_args *g = &job->g;
    g->a = oa.ptr, g->b = ob.ptr, g->c = c ? oc.ptr : NULL, g->bias = bias ? obias.ptr : NULL, g->d = od.ptr;
    g->ab_dtype = a->dtype, g->cd_dtype = d->dtype;
    g->batch = batch, g->m = m, g->n = n, g->k = k;
    g->lda = oa.ld, g->ldb = ob.ld, g->ldc = c ? oc.ld : 0, g->ldd = od.ld;
    g->a_batch_stride = oa.bstride, g->b_batch_stride = ob.bstride, g->c_batch_stride = c ? oc.bstride : 0;
    g->d_batch_stride = od.bstride;
    g->trans_a = ta, g->trans_b = tb;
    g->alpha = params->alpha, g->beta = c ? params->beta : 0.0f;
    g->act = params->act;
    job->stream = stream;
    gaio_buffer *held[5];
    size_t nheld = 0;
    held[nheld++] = a->buffer;
    held[nheld++] = b->buffer;
    held[nheld++] = d->buffer;
    if (c) held[nheld++] = c->buffer;
    if (bias) held[nheld++] = bias->buffer;
    /* On failure the native fn was not enqueued and never runs: free the job here. */
    st = gaio__enqueue_native_held(fn, stream, run_gemm, job, held, nheld);
    if (st != GAIO_OK) free(job);
    return st;
}
