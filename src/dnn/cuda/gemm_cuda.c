/* GEMM on a GPU: cuBLASLt, with the bias and the activation as its epilogue.
 *
 * cuBLASLt is column major; gaio's matrices are row major. A row-major m x n matrix
 * with row stride ld is the column-major n x m matrix with leading dimension ld, so
 * D = op(A) op(B) is computed as D^T = op(B)^T op(A)^T: B's memory first, then A's,
 * each transposed when the caller asked for it. The bias epilogue adds a value per row
 * of the column-major result, which is a value per column of gaio's D: the n values.
 *
 * The plan of a shape (descriptors and the heuristic's algorithm) is made once per
 * stream and reused; the call then sets only the pointers. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/object.h"
#include "dnn/cuda/dnn_libs.h"
#include "dnn/cuda/dnn_state.h"
#include "dnn/cuda/gemm_plans.h"
#include "dnn/dnn_internal.h"

#define MAX_PLANS 32
#define WORKSPACE_BYTES ((size_t)32 << 20) /* what NVIDIA suggests for Hopper */

typedef struct gemm_key {
    int32_t ab, cd, act, has_bias, has_c, ta, tb;
    int64_t batch, m, n, k, lda, ldb, ldc, ldd, sa, sb, sc, sd;
} gemm_key;

struct gemm_plan {
    gemm_plan *next;
    gemm_key key;
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t la, lb, lc, ld;
    cublasLtMatmulAlgo_t algo;
    size_t workspace;
};

static const char *FN = "gaio_gemm";

static gaio_status lt_fail(const gaio_cublaslt_table *t, const char *call, cublasStatus_t r) {
    return gaio__fail(GAIO_ERR_DRIVER, FN, "%s failed: %s", call, t->cublasLtGetStatusName(r));
}

static void plan_free(const gaio_cublaslt_table *t, gemm_plan *p) {
    if (p->desc) t->cublasLtMatmulDescDestroy(p->desc);
    if (p->la) t->cublasLtMatrixLayoutDestroy(p->la);
    if (p->lb) t->cublasLtMatrixLayoutDestroy(p->lb);
    if (p->lc) t->cublasLtMatrixLayoutDestroy(p->lc);
    if (p->ld) t->cublasLtMatrixLayoutDestroy(p->ld);
    free(p);
}

void gaio__gemm_plans_free(dnn_stream_state *s) {
    const gaio_cublaslt_table *t = s->plans ? gaio__cublaslt(FN) : NULL;
    while (s->plans) {
        gemm_plan *p = s->plans;
        s->plans = p->next;
        if (t) plan_free(t, p);
    }
}

static cudaDataType_t dt(int32_t dtype) { return dtype == GAIO_DTYPE_F16 ? CUDA_R_16F : CUDA_R_32F; }

/* A column-major layout of rows x cols, leading dimension ld, batched. */
static cublasStatus_t layout(const gaio_cublaslt_table *t, cublasLtMatrixLayout_t *l, int32_t dtype, int64_t rows,
                             int64_t cols, int64_t ld, int64_t batch, int64_t stride) {
    cublasStatus_t r = t->cublasLtMatrixLayoutCreate(l, dt(dtype), (uint64_t)rows, (uint64_t)cols, ld);
    if (r != CUBLAS_STATUS_SUCCESS || batch == 1) return r;
    int32_t count = (int32_t)batch;
    r = t->cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count);
    if (r == CUBLAS_STATUS_SUCCESS)
        r = t->cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride);
    return r;
}

static gaio_status plan_make(const gaio_cublaslt_table *t, cublasLtHandle_t lt, const gemm_key *k, gemm_plan **out) {
    gemm_plan *p = calloc(1, sizeof *p);
    if (!p) return gaio__fail(GAIO_ERR_NO_MEMORY, FN, "out of host memory for a cuBLASLt plan");
    p->key = *k;
    cublasStatus_t r = t->cublasLtMatmulDescCreate(&p->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    const char *call = "cublasLtMatmulDescCreate";
    /* Swapped operands (see the top of the file): the first is B's memory. */
    cublasOperation_t op1 = k->tb ? CUBLAS_OP_T : CUBLAS_OP_N, op2 = k->ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    if (r == CUBLAS_STATUS_SUCCESS) {
        call = "cublasLtMatmulDescSetAttribute";
        r = t->cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &op1, sizeof op1);
        if (r == CUBLAS_STATUS_SUCCESS)
            r = t->cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &op2, sizeof op2);
        cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_DEFAULT;
        if (k->act == GAIO_ACT_RELU) epi = k->has_bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
        else if (k->act == GAIO_ACT_GELU) epi = k->has_bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
        else if (k->has_bias) epi = CUBLASLT_EPILOGUE_BIAS;
        if (r == CUBLAS_STATUS_SUCCESS)
            r = t->cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi);
        if (r == CUBLAS_STATUS_SUCCESS && k->has_bias) {
            cudaDataType_t bt = dt(k->cd);
            r = t->cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt);
        }
    }
    /* Memory shapes, column major: B is stored k x n row major (n x k with trans_b),
     * i.e. n x k column major (k x n); the same for A; C and D are n x m. */
    if (r == CUBLAS_STATUS_SUCCESS) {
        call = "cublasLtMatrixLayoutCreate";
        r = layout(t, &p->lb, k->ab, k->tb ? k->k : k->n, k->tb ? k->n : k->k, k->ldb, k->batch, k->sb);
    }
    if (r == CUBLAS_STATUS_SUCCESS)
        r = layout(t, &p->la, k->ab, k->ta ? k->m : k->k, k->ta ? k->k : k->m, k->lda, k->batch, k->sa);
    if (r == CUBLAS_STATUS_SUCCESS) r = layout(t, &p->ld, k->cd, k->n, k->m, k->ldd, k->batch, k->sd);
    if (r == CUBLAS_STATUS_SUCCESS)
        r = k->has_c ? layout(t, &p->lc, k->cd, k->n, k->m, k->ldc, k->batch, k->sc)
                     : layout(t, &p->lc, k->cd, k->n, k->m, k->ldd, k->batch, k->sd);
    cublasLtMatmulPreference_t pref = NULL;
    if (r == CUBLAS_STATUS_SUCCESS) {
        call = "cublasLtMatmulPreferenceCreate";
        r = t->cublasLtMatmulPreferenceCreate(&pref);
        size_t ws = WORKSPACE_BYTES;
        if (r == CUBLAS_STATUS_SUCCESS)
            r = t->cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
    }
    if (r == CUBLAS_STATUS_SUCCESS) {
        call = "cublasLtMatmulAlgoGetHeuristic";
        cublasLtMatmulHeuristicResult_t h;
        int found = 0;
        r = t->cublasLtMatmulAlgoGetHeuristic(lt, p->desc, p->lb, p->la, p->lc, p->ld, pref, 1, &h, &found);
        if (r == CUBLAS_STATUS_SUCCESS && found < 1) r = CUBLAS_STATUS_NOT_SUPPORTED;
        if (r == CUBLAS_STATUS_SUCCESS) {
            p->algo = h.algo;
            p->workspace = h.workspaceSize;
        }
    }
    if (pref) t->cublasLtMatmulPreferenceDestroy(pref);
    if (r != CUBLAS_STATUS_SUCCESS) {
        plan_free(t, p);
        return lt_fail(t, call, r);
    }
    *out = p;
    return GAIO_OK;
}

static gaio_status plan_for(const gaio_cublaslt_table *t, dnn_stream_state *s, cublasLtHandle_t lt, const gemm_key *k,
                            gemm_plan **out) {
    gemm_plan **link = &s->plans, *p;
    int depth = 0;
    while ((p = *link)) {
        if (!memcmp(&p->key, k, sizeof *k)) {
            *link = p->next; /* to the front */
            p->next = s->plans;
            s->plans = p;
            *out = p;
            return GAIO_OK;
        }
        if (++depth == MAX_PLANS - 1 && p->next) { /* drop the least recently used */
            plan_free(t, p->next);
            p->next = NULL;
        }
        link = &p->next;
    }
    gaio_status st = plan_make(t, lt, k, &p);
    if (st != GAIO_OK) return st;
    p->next = s->plans;
    s->plans = p;
    *out = p;
    return GAIO_OK;
}

gaio_status gaio__gemm_cuda_ready(const char *fn) { return gaio__cublaslt(fn) ? GAIO_OK : GAIO_ERR_DRIVER; }

gaio_status gaio__gemm_cuda(void *native_stream, const gaio__gemm_args *g, gaio_stream *stream) {
    const gaio_cublaslt_table *t = gaio__cublaslt(FN);
    if (!t) return GAIO_ERR_DRIVER;
    dnn_stream_state *s = gaio__dnn_state(FN, stream);
    if (!s) return GAIO_ERR_NO_MEMORY;
    cublasLtHandle_t lt;
    gaio_status st = gaio__dnn_cublaslt(FN, s, &lt);
    if (st != GAIO_OK) return st;
    gemm_key k;
    memset(&k, 0, sizeof k); /* padding too: the key is compared with memcmp */
    k.ab = g->ab_dtype, k.cd = g->cd_dtype, k.act = g->act, k.has_bias = g->bias != NULL, k.has_c = g->c != NULL;
    k.ta = g->trans_a, k.tb = g->trans_b;
    k.batch = g->batch, k.m = g->m, k.n = g->n, k.k = g->k;
    k.lda = g->lda, k.ldb = g->ldb, k.ldc = g->ldc, k.ldd = g->ldd;
    k.sa = g->a_batch_stride, k.sb = g->b_batch_stride, k.sc = g->c_batch_stride, k.sd = g->d_batch_stride;
    gemm_plan *p;
    if ((st = plan_for(t, s, lt, &k, &p)) != GAIO_OK) return st;
    void *ws = NULL;
    if (p->workspace && (st = gaio__dnn_workspace(FN, s, p->workspace, &ws)) != GAIO_OK) return st;
    if (g->bias) {
        cublasStatus_t r =
            t->cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g->bias, sizeof g->bias);
        if (r != CUBLAS_STATUS_SUCCESS) return lt_fail(t, "cublasLtMatmulDescSetAttribute (bias)", r);
    }
    float beta = g->c ? g->beta : 0.0f;
    const void *c = g->c ? g->c : g->d;
    cublasStatus_t r = t->cublasLtMatmul(lt, p->desc, &g->alpha, g->b, p->lb, g->a, p->la, &beta, c, p->lc, g->d, p->ld,
                                         &p->algo, ws, p->workspace, (cudaStream_t)native_stream);
    if (r != CUBLAS_STATUS_SUCCESS) return lt_fail(t, "cublasLtMatmul", r);
    return GAIO_OK;
}
