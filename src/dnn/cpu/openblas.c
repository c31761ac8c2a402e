/* OpenBLAS for the host GEMM, opened with dlopen the first time an op needs it:
 * libgaio links no BLAS. Tried in order: libopenblas.so.0 (Debian's libopenblas0 and
 * most distributions), libopenblas.so (a source build), then libblas.so.3 when it has
 * cblas_sgemm (Debian's alternatives point it at OpenBLAS, BLIS or the reference BLAS).
 *
 * OpenBLAS is set to one thread: gaio splits a GEMM into row blocks over its own worker
 * pool, one sgemm call per block on one worker each, so OpenBLAS's own threads would
 * only oversubscribe the cores. (The setting is process-wide: a program that calls the
 * same libopenblas itself gets one thread per call too.) */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "core/dynlib.h"
#include "dnn/cpu/openblas.h"

typedef void (*set_threads_fn)(int);
typedef int (*get_threads_fn)(void);
typedef char *(*get_str_fn)(void);

static struct {
    gaio_status status;
    char reason[GAIO_MSG_MAX - 24]; /* why it failed (a message has "fn: " before it) */
    char description[256]; /* what was loaded */
    gaio__cblas_sgemm_fn sgemm;
    gaio__cblas_sgemm64_fn sgemm64; /* ILP64 builds */
    gaio__cblas_sgemv_fn sgemv;     /* optional: one row of C */
    gaio__cblas_sgemv64_fn sgemv64;
} blas;

static pthread_once_t blas_once = PTHREAD_ONCE_INIT;

/* "OpenBLAS 0.3.21" out of "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH ... MAX_THREADS=64". */
static void version_of(const char *config, char *out, size_t size) {
    const char *end = config;
    int words = 0;
    while (*end) {
        if (*end == ' ' && ++words == 2) break;
        end++;
    }
    snprintf(out, size, "%.*s", (int)(end - config), config);
}

static void load_once(void) {
    static const char *const names[] = {"libopenblas.so.0", "libopenblas.so", "libblas.so.3", NULL};
    gaio__dynlib lib;
    if (!gaio__dynlib_open(&lib, &(gaio__dynlib_search){.names = names, .probe = "cblas_sgemm"})) {
        blas.status = GAIO_ERR_DRIVER;
        snprintf(blas.reason, sizeof blas.reason,
                 "OpenBLAS is not installed (dlopen libopenblas.so.0, libopenblas.so, libblas.so.3: %.279s); "
                 "install the libopenblas0 package (apt-get install libopenblas0)",
                 lib.why);
        return;
    }
    const char *name = lib.file;

    void (*sgemm)(void) = NULL; /* gaio__cblas_sgemm_fn or _sgemm64_fn: the configuration says */
    void (*sgemv)(void) = NULL;
    set_threads_fn set_threads = NULL;
    get_threads_fn get_threads = NULL;
    get_str_fn get_config = NULL, get_corename = NULL;
    const gaio__dynsym syms[] = {
        {"cblas_sgemm", &sgemm, true}, /* the search's probe */
        {"cblas_sgemv", &sgemv, false},
        {"openblas_set_num_threads", &set_threads, false},
        {"openblas_get_num_threads", &get_threads, false},
        {"openblas_get_config", &get_config, false},
        {"openblas_get_corename", &get_corename, false},
    };
    if (!gaio__dynlib_resolve(&lib, syms, sizeof syms / sizeof syms[0])) { /* unreachable: the probe found it */
        blas.status = GAIO_ERR_DRIVER;
        snprintf(blas.reason, sizeof blas.reason, "%s", lib.why);
        return;
    }
    const char *config = get_config ? get_config() : NULL;
    const char *core = get_corename ? get_corename() : NULL;

    if (config && strstr(config, "USE64BITINT")) {
        blas.sgemm64 = (gaio__cblas_sgemm64_fn)sgemm;
        blas.sgemv64 = (gaio__cblas_sgemv64_fn)sgemv;
    } else {
        blas.sgemm = (gaio__cblas_sgemm_fn)sgemm;
        blas.sgemv = (gaio__cblas_sgemv_fn)sgemv;
    }

    if (set_threads) set_threads(1);
    int threads = get_threads ? get_threads() : set_threads ? 1 : 0;

    char version[64];
    if (config && strncmp(config, "OpenBLAS", 8) == 0) version_of(config, version, sizeof version);
    else if (config || set_threads) snprintf(version, sizeof version, "OpenBLAS");
    else snprintf(version, sizeof version, "a CBLAS that is not OpenBLAS");
    char kernels[80] = "";
    if (core && *core) snprintf(kernels, sizeof kernels, ", %s kernels", core);
    char thread_text[64];
    if (threads > 0) snprintf(thread_text, sizeof thread_text, "%d thread%s per call", threads, threads == 1 ? "" : "s");
    else snprintf(thread_text, sizeof thread_text, "its own threading (not set by gaio)");
    snprintf(blas.description, sizeof blas.description, "%s (%s%s%s), %s", version, name, kernels,
             blas.sgemm64 ? ", 64-bit integers" : "", thread_text);
    blas.status = GAIO_OK;
    /* lib stays open for the life of the process. */
}

gaio_status gaio__openblas_load(const char *fn, const char **description) {
    pthread_once(&blas_once, load_once);
    if (blas.status != GAIO_OK) {
        if (description) *description = NULL;
        return gaio__fail(blas.status, fn ? fn : "gaio_dnn", "%s", blas.reason);
    }
    if (description) *description = blas.description;
    return GAIO_OK;
}

int64_t gaio__blas_int_max(void) { return blas.sgemm64 ? INT64_MAX : INT32_MAX; }

/* c[0 .. n) = alpha * a op(B) + beta * c, a one row of k (elements inc apart): op(B) =
 * B^T is B (n x k) times a column, op(B) = B is B^T (B k x n) times it. */
static bool blas_sgemv(bool trans_b, int64_t n, int64_t k, float alpha, const float *a, int64_t inc, const float *b,
                       int64_t ldb, float beta, float *c) {
    if (!blas.sgemv && !blas.sgemv64) return false;
    if (beta == 0.0f) memset(c, 0, (size_t)n * sizeof *c); /* not read, as sgemm's C (a NaN there stays out) */
    int t = trans_b ? GAIO__CBLAS_NO_TRANS : GAIO__CBLAS_TRANS;
    int64_t rows = trans_b ? n : k, cols = trans_b ? k : n;
    if (blas.sgemv64)
        blas.sgemv64(GAIO__CBLAS_ROW_MAJOR, t, rows, cols, alpha, b, ldb, a, inc, beta, c, 1);
    else
        blas.sgemv(GAIO__CBLAS_ROW_MAJOR, t, (int)rows, (int)cols, alpha, b, (int)ldb, a, (int)inc, beta, c, 1);
    return true;
}

void gaio__blas_sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                      int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
    if (m == 1 && k > 0 && blas_sgemv(trans_b, n, k, alpha, a, trans_a ? lda : 1, b, ldb, beta, c)) return;
    int ta = trans_a ? GAIO__CBLAS_TRANS : GAIO__CBLAS_NO_TRANS, tb = trans_b ? GAIO__CBLAS_TRANS : GAIO__CBLAS_NO_TRANS;
    if (blas.sgemm64)
        blas.sgemm64(GAIO__CBLAS_ROW_MAJOR, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    else
        blas.sgemm(GAIO__CBLAS_ROW_MAJOR, ta, tb, (int)m, (int)n, (int)k, alpha, a, (int)lda, b, (int)ldb, beta, c,
                   (int)ldc);
}
