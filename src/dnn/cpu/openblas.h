/* OpenBLAS as the host GEMM sees it (src/dnn/cpu/openblas.c): cblas_sgemm resolved
 * with dlopen, so libgaio links no BLAS and needs no cblas.h to build.
 *
 * The CBLAS enum values are the standard's (the same in every CBLAS); the names carry
 * gaio's prefix so that a file that also includes cblas.h does not clash. */
#ifndef GAIO_DNN_CPU_OPENBLAS_H
#define GAIO_DNN_CPU_OPENBLAS_H

#include <stdbool.h>
#include <stdint.h>

#include "dnn/dnn_internal.h"

enum gaio__cblas_order { GAIO__CBLAS_ROW_MAJOR = 101, GAIO__CBLAS_COL_MAJOR = 102 };
enum gaio__cblas_transpose { GAIO__CBLAS_NO_TRANS = 111, GAIO__CBLAS_TRANS = 112 };

/* cblas_sgemm of an LP64 build (blasint is int) and of an ILP64 one (OpenBLAS built
 * with INTERFACE64=1 under its plain name: its config says USE64BITINT). */
typedef void (*gaio__cblas_sgemm_fn)(int order, int trans_a, int trans_b, int m, int n, int k, float alpha,
                                     const float *a, int lda, const float *b, int ldb, float beta, float *c,
                                     int ldc);
typedef void (*gaio__cblas_sgemm64_fn)(int order, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                                       float alpha, const float *a, int64_t lda, const float *b, int64_t ldb,
                                       float beta, float *c, int64_t ldc);

/* cblas_sgemv, LP64 and ILP64, as above. */
typedef void (*gaio__cblas_sgemv_fn)(int order, int trans, int m, int n, float alpha, const float *a, int lda,
                                     const float *x, int incx, float beta, float *y, int incy);
typedef void (*gaio__cblas_sgemv64_fn)(int order, int trans, int64_t m, int64_t n, float alpha, const float *a,
                                       int64_t lda, const float *x, int64_t incx, float beta, float *y, int64_t incy);

/* The largest dimension or leading dimension sgemm takes: INT32_MAX for LP64, INT64_MAX
 * for ILP64. Only after gaio__openblas_load returned GAIO_OK. */
int64_t gaio__blas_int_max(void);

/* Row-major C = alpha * op(A) op(B) + beta * C (C m x n, op(A) m x k, op(B) k x n)
 * through the loaded cblas_sgemm. With beta == 0, C is not read (BLAS semantics).
 * Every argument must be <= gaio__blas_int_max(); only after gaio__openblas_load
 * returned GAIO_OK. Runs on the calling thread (OpenBLAS is set to 1 thread). One row
 * of C (a classifier at batch 1) goes to cblas_sgemv where the library has it: sgemm
 * packs all of op(B) first, which for a 1 x 1280 by 1280 x 1000 product is most of
 * the work. */
void gaio__blas_sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                      int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc);

#endif
