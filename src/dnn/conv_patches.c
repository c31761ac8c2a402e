/* Patch convolutions on a GPU as a layout copy and one GEMM (dnn_internal.h).
 *
 * A convolution whose window equals its stride, without padding or dilation (ViT's
 * 16 x 16 patch embedding, Swin's 4 x 4), reads every input pixel once: it is a matrix
 * product of the image cut into patches [N * OH * OW, C * kh * kw] by the weights
 * [O, C * kh * kw]. cuDNN ran ViT-B/16's (batch 32, f16, H200) in an implicit-GEMM
 * kernel without shared memory (`indexed_wo_smem`, 0.28 ms, about 30x the product's
 * time); the copy into patches and cuBLASLt's GEMM do it at memory and tensor-core
 * speed. The patches go to a scratch the caller owns (a model's execution context). */
#include <stdlib.h>
#include <string.h>

#include "core/fail.h"
#include "dnn/dnn_internal.h"
#include "gaio/dnn.h"

/* The patch order the weights' memory gives: 0 (c, i, j), 1 (i, j, c), -1 neither. */
static int weight_order(const gaio_tensor *w) {
    int64_t s[4];
    if (!gaio__tensor_strides(w, s)) return -1;
    const int64_t C = w->shape[1], kh = w->shape[2], kw = w->shape[3], K = C * kh * kw;
    if (s[0] == K && s[1] == kh * kw && s[2] == kw && s[3] == 1) return 0;
    if (s[0] == K && s[1] == 1 && s[2] == kw * C && s[3] == C) return 1;
    return -1;
}

size_t gaio__conv2d_patches_bytes(bool cuda, const gaio_tensor *x, const gaio_tensor *w, const gaio_tensor *bias,
                                  const gaio_tensor *residual, const gaio_tensor *y, const gaio_conv2d_params *p) {
    const char *env = getenv("GAIO_DNN_PATCHES"); /* =0: cuDNN's, to compare */
    if (!cuda || (env && !strcmp(env, "0")) || residual || !x || !w || !y || !p) return 0;
    if (x->ndim != 4 || w->ndim != 4 || y->ndim != 4 || x->dtype != GAIO_DTYPE_F16 || w->dtype != x->dtype ||
        y->dtype != x->dtype || (bias && (bias->dtype != y->dtype || bias->ndim != 1)))
        return 0;
    const int64_t kh = w->shape[2], kw = w->shape[3], C = x->shape[1], O = w->shape[0];
    const int32_t sh = p->stride[0] ? p->stride[0] : 1, sw = p->stride[1] ? p->stride[1] : 1;
    if ((p->groups && p->groups != 1) || (p->dilation[0] > 1) || (p->dilation[1] > 1) || p->pad[0] || p->pad[1] ||
        p->pad[2] || p->pad[3] || sh != kh || sw != kw || kh * kw < 4 || w->shape[1] != C)
        return 0;
    const int64_t OH = y->shape[2], OW = y->shape[3];
    if (y->shape[0] != x->shape[0] || y->shape[1] != O || x->shape[2] != OH * kh || x->shape[3] != OW * kw) return 0;
    if ((C * kh * kw) % 8 != 0 || O % 8 != 0 || weight_order(w) < 0) return 0; /* 16-byte rows for cuBLASLt */
    int64_t xs[4], ys[4];
    if (!gaio__tensor_strides(x, xs) || !gaio__tensor_strides(y, ys)) return 0;
    /* x NHWC (its pixels' channels together), y packed NHWC: the GEMM's rows */
    if (xs[1] != 1 || xs[3] < C || xs[2] != OW * kw * xs[3] || xs[0] != OH * kh * xs[2]) return 0;
    if (ys[1] != 1 || ys[3] != O || ys[2] != OW * O || ys[0] != OH * OW * O) return 0;
    return (size_t)(x->shape[0] * OH * OW) * (size_t)(C * kh * kw) * 2;
}

gaio_status gaio__conv2d_patches(gaio_stream *stream, const gaio_tensor *x, const gaio_tensor *w,
                                 const gaio_tensor *bias, const gaio_tensor *y, const gaio_conv2d_params *p,
                                 const gaio_tensor *scratch) {
    const char *fn = "gaio_conv2d";
    const int64_t N = x->shape[0], C = x->shape[1], kh = w->shape[2], kw = w->shape[3], O = w->shape[0];
    const int64_t OH = y->shape[2], OW = y->shape[3], K = C * kh * kw, rows = N * OH * OW;
    int64_t xs[4];
    gaio__tensor_strides(x, xs); /* gaio__conv2d_patches_bytes resolved them once already */
    /* x as [N * OH, OW, patch], the patch in the weights' order, into the scratch packed */
    gaio_tensor src = *x, dst = *scratch;
    src.ndim = 5, src.layout = GAIO_TENSOR_ROW_MAJOR;
    const int64_t so[2] = {kh * xs[2], kw * xs[3]};
    if (weight_order(w) == 0) { /* [N * OH, OW, C, kh, kw] */
        const int64_t sh[5] = {N * OH, OW, C, kh, kw}, st[5] = {so[0], so[1], 1, xs[2], xs[3]};
        memcpy(src.shape, sh, sizeof sh), memcpy(src.strides, st, sizeof st);
    } else { /* [N * OH, OW, kh, kw, C] */
        const int64_t sh[5] = {N * OH, OW, kh, kw, C}, st[5] = {so[0], so[1], xs[2], xs[3], 1};
        memcpy(src.shape, sh, sizeof sh), memcpy(src.strides, st, sizeof st);
    }
    dst.ndim = 5, dst.layout = GAIO_TENSOR_ROW_MAJOR;
    memcpy(dst.shape, src.shape, sizeof dst.shape);
    memset(dst.strides, 0, sizeof dst.strides);
    gaio_status st = gaio__copy_any(fn, stream, &src, &dst);
    if (st != GAIO_OK) return st;
    /* y [rows, O] = patches [rows, K] @ w [O, K]^T (+ bias, ReLU in the epilogue) */
    gaio_tensor a = *scratch, b = *w, d = *y;
    a.ndim = 2, a.shape[0] = rows, a.shape[1] = K, a.layout = GAIO_TENSOR_ROW_MAJOR;
    b.ndim = 2, b.shape[0] = O, b.shape[1] = K, b.layout = GAIO_TENSOR_ROW_MAJOR;
    d.ndim = 2, d.shape[0] = rows, d.shape[1] = O, d.layout = GAIO_TENSOR_ROW_MAJOR;
    memset(a.strides, 0, sizeof a.strides), memset(b.strides, 0, sizeof b.strides), memset(d.strides, 0, sizeof d.strides);
    const bool relu = p->act && p->act->op == GAIO_UNARY_RELU;
    gaio_gemm_params gp = {0, 1, 1.0f, 0.0f, relu ? GAIO_ACT_RELU : GAIO_ACT_NONE};
    if ((st = gaio_gemm(stream, &a, &b, NULL, bias, &d, &gp)) != GAIO_OK) return st;
    if (p->act && !relu) return gaio_unary(stream, y, y, p->act);
    return GAIO_OK;
}
