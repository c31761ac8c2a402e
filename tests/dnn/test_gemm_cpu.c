/* The host GEMM (src/dnn/cpu/gemm_cpu.c, openblas.c) on its own, against a naive
 * double-precision loop: the cases gaio_gemm's own test (tests/dnn/test_gemm.c) leaves to
 * this one (k = 100000, m = 1 with n = 4099, alpha 0 with NaN in A, broadcast C; run
 * it with GAIO_CPU_WORKERS=1..8 for other splits). Registered as test_gemm_cpu; by
 * hand: `test_gemm_cpu [seed] [--bench]`.
 * Each case runs as a host function on a CPU stream (as the op will: on a worker,
 * splitting over the pool) and a few also straight from the main thread. */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/kmath.h"
#include "dnn/cpu/openblas.h"
#include "dnn/dnn_internal.h"
#include "gaio/gaio.h"

static unsigned long long rng_state;
static double urand(void) { /* [-1, 1) */
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

static int failures;
static gaio_stream *g_stream;

/* A matrix of one operand: `count` batches of rows x cols with row stride ld and batch
 * stride bs (0: one shared), as f32 or f16 bits. */
typedef struct mat {
    void *p;
    int f16;
    int64_t rows, cols, ld, bs, nbatch;
    size_t elems;
} mat;

static size_t esz(int f16) { return f16 ? 2 : 4; }

static void mat_make(mat *x, int f16, int64_t rows, int64_t cols, int64_t pad, int64_t batch, int bcast,
                     double scale) {
    x->f16 = f16;
    x->rows = rows;
    x->cols = cols;
    x->ld = cols + pad;
    x->nbatch = bcast ? 1 : batch;
    x->bs = bcast ? 0 : rows * x->ld + pad * 3;
    x->elems = (size_t)((x->nbatch - 1) * x->bs + (rows - 1) * x->ld + cols) + (size_t)pad;
    x->p = malloc(x->elems * esz(f16) + 16);
    for (size_t i = 0; i < x->elems; i++) {
        float v = (float)(urand() * scale);
        if (f16) ((uint16_t *)x->p)[i] = gaio_k_f32_to_f16(v);
        else ((float *)x->p)[i] = v;
    }
}

static double mat_get(const mat *x, int64_t b, int64_t r, int64_t c) {
    size_t i = (size_t)(b * x->bs + r * x->ld + c);
    return x->f16 ? (double)gaio_k_f16_to_f32(((const uint16_t *)x->p)[i]) : (double)((const float *)x->p)[i];
}

typedef struct tcase {
    const char *name;
    int64_t batch, m, n, k;
    int ta, tb, ab16, cd16;
    int has_c, c_is_d, has_bias;
    gaio_activation act;
    float alpha, beta;
    int64_t pad;
    int bcast_a, bcast_b, bcast_c;
    int direct; /* call from the main thread too */
} tcase;

typedef struct host_call {
    const gaio__gemm_args *g;
    gaio_status st;
    char msg[512];
} host_call;

static gaio_status host_gemm(gaio_status stream_status, void *user) {
    host_call *h = user;
    if (stream_status != GAIO_OK) return stream_status;
    h->st = gaio__gemm_cpu(h->g);
    if (h->st != GAIO_OK) snprintf(h->msg, sizeof h->msg, "%s", gaio_last_error());
    return GAIO_OK;
}

static gaio_status run_gemm(const gaio__gemm_args *g, int direct, char *msg, size_t msg_size) {
    if (direct) {
        gaio_status st = gaio__gemm_cpu(g);
        if (st != GAIO_OK) snprintf(msg, msg_size, "%s", gaio_last_error());
        return st;
    }
    host_call h = {.g = g, .st = GAIO_OK};
    gaio_status st = gaio_launch_host_func(g_stream, host_gemm, &h);
    if (st == GAIO_OK) st = gaio_stream_synchronize(g_stream);
    if (st != GAIO_OK) {
        snprintf(msg, msg_size, "launch/sync: %s", gaio_last_error());
        return st;
    }
    if (h.st != GAIO_OK) snprintf(msg, msg_size, "%s", h.msg);
    return h.st;
}

static double act_ref(double x, gaio_activation act) {
    if (act == GAIO_ACT_RELU) return x < 0 ? 0 : x;
    if (act == GAIO_ACT_GELU) return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
    return x;
}

static void run_case(const tcase *t, int direct) {
    mat A, B, C, D, bias;
    int64_t ar = t->ta ? t->k : t->m, ac = t->ta ? t->m : t->k;
    int64_t br = t->tb ? t->n : t->k, bc = t->tb ? t->k : t->n;
    mat_make(&A, t->ab16, ar, ac, t->pad, t->batch, t->bcast_a, 1.0);
    mat_make(&B, t->ab16, br, bc, t->pad + (t->pad ? 1 : 0), t->batch, t->bcast_b, 1.0);
    mat_make(&D, t->cd16, t->m, t->n, t->pad, t->batch, 0, 1.0);
    if (t->alpha == 0.0f) { /* A and B must not be read */
        for (size_t i = 0; i < A.elems; i++)
            if (t->ab16) ((uint16_t *)A.p)[i] = 0x7e00;
            else ((float *)A.p)[i] = NAN;
    }
    int beta_used = t->has_c && t->beta != 0.0f;
    if (t->c_is_d) {
        C = D; /* D holds C's values */
    } else if (t->has_c) {
        mat_make(&C, t->cd16, t->m, t->n, t->pad + 2 * (t->pad ? 1 : 0), t->batch, t->bcast_c, 1.0);
    }
    if (!beta_used && !t->c_is_d) { /* D is write-only: poison it */
        for (size_t i = 0; i < D.elems; i++)
            if (t->cd16) ((uint16_t *)D.p)[i] = 0x7e00;
            else ((float *)D.p)[i] = NAN;
    }
    if (t->has_bias) mat_make(&bias, t->cd16, 1, t->n, 0, 1, 1, 1.0);

    /* the reference, and D's untouched copy for the padding check */
    size_t dbytes = D.elems * esz(t->cd16);
    unsigned char *d0 = malloc(dbytes);
    memcpy(d0, D.p, dbytes);
    size_t nout = (size_t)(t->batch * t->m * t->n);
    double *ref = malloc(nout * sizeof(double)), *scale = malloc(nout * sizeof(double));
    for (int64_t b = 0; b < t->batch; b++)
        for (int64_t i = 0; i < t->m; i++)
            for (int64_t j = 0; j < t->n; j++) {
                double acc = 0, mag = 0;
                if (t->alpha != 0.0f)
                    for (int64_t p = 0; p < t->k; p++) {
                        double x = t->ta ? mat_get(&A, t->bcast_a ? 0 : b, p, i) : mat_get(&A, t->bcast_a ? 0 : b, i, p);
                        double y = t->tb ? mat_get(&B, t->bcast_b ? 0 : b, j, p) : mat_get(&B, t->bcast_b ? 0 : b, p, j);
                        acc += x * y;
                        mag += fabs(x * y);
                    }
                double v = (double)t->alpha * acc;
                mag *= fabs((double)t->alpha);
                if (beta_used) {
                    double c = mat_get(&C, (t->bcast_c && !t->c_is_d) ? 0 : b, i, j);
                    v += (double)t->beta * c;
                    mag += fabs((double)t->beta * c);
                }
                if (t->has_bias) {
                    v += mat_get(&bias, 0, 0, j);
                    mag += fabs(mat_get(&bias, 0, 0, j));
                }
                size_t o = (size_t)((b * t->m + i) * t->n + j);
                ref[o] = act_ref(v, t->act);
                scale[o] = mag;
            }

    gaio__gemm_args g = {
        .a = A.p, .b = B.p, .c = t->has_c ? C.p : NULL, .bias = t->has_bias ? bias.p : NULL, .d = D.p,
        .ab_dtype = t->ab16 ? GAIO_DTYPE_F16 : GAIO_DTYPE_F32, .cd_dtype = t->cd16 ? GAIO_DTYPE_F16 : GAIO_DTYPE_F32,
        .batch = t->batch, .m = t->m, .n = t->n, .k = t->k,
        .lda = A.ld, .ldb = B.ld, .ldc = t->has_c ? C.ld : 0, .ldd = D.ld,
        .a_batch_stride = A.bs, .b_batch_stride = B.bs, .c_batch_stride = t->has_c ? C.bs : 0,
        .d_batch_stride = D.bs, .trans_a = t->ta, .trans_b = t->tb, .alpha = t->alpha, .beta = t->beta, .act = t->act};
    char msg[512] = "";
    gaio_status st = run_gemm(&g, direct, msg, sizeof msg);
    int bad = 0;
    double worst = 0;
    if (st != GAIO_OK) {
        printf("FAIL %-34s %s: %s\n", t->name, gaio_status_string(st), msg);
        failures++;
        goto out;
    }
    /* the f32 compute's error: ~1e-5 sqrt(k) of the terms' magnitude; f16 output adds half an ulp */
    double rel = 1e-5 * sqrt((double)(t->k > 0 ? t->k : 1));
    for (int64_t b = 0; b < t->batch; b++)
        for (int64_t i = 0; i < t->m; i++)
            for (int64_t j = 0; j < t->n; j++) {
                size_t o = (size_t)((b * t->m + i) * t->n + j);
                double got = mat_get(&D, b, i, j), want = ref[o];
                double tol = rel * (scale[o] + 1e-30) * 1.2 + 1e-30;
                if (t->cd16) tol += fabs(want) * (1.0 / 2048.0) * 1.0001 + 6e-8;
                double err = fabs(got - want);
                if (!(err <= tol)) {
                    if (bad < 5)
                        printf("  %s: D[%lld][%lld][%lld] = %.9g, want %.9g (tol %.3g)\n", t->name, (long long)b,
                               (long long)i, (long long)j, got, want, tol);
                    bad++;
                }
                if (tol > 0 && err / tol > worst) worst = err / tol;
            }
    /* nothing outside D's elements written */
    for (int64_t b = 0; b < D.nbatch; b++)
        for (int64_t i = 0; i < t->m; i++) {
            size_t row = (size_t)(b * D.bs + i * D.ld);
            memcpy(d0 + row * esz(t->cd16), (char *)D.p + row * esz(t->cd16), (size_t)t->n * esz(t->cd16));
        }
    if (memcmp(d0, D.p, dbytes) != 0) {
        printf("  %s: D's padding was written\n", t->name);
        bad++;
    }
    printf("%s %-34s %s%lld x %lldx%lldx%lld worst err/tol %.3f\n", bad ? "FAIL" : "ok  ", t->name,
           direct ? "(main thread) " : "", (long long)t->batch, (long long)t->m, (long long)t->n, (long long)t->k,
           worst);
    if (bad) failures++;
out:
    free(A.p);
    free(B.p);
    free(D.p);
    if (t->has_c && !t->c_is_d) free(C.p);
    if (t->has_bias) free(bias.p);
    free(d0);
    free(ref);
    free(scale);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void bench(int64_t m, int64_t n, int64_t k, int f16) {
    int ab = f16 ? 2 : 4;
    void *a = malloc((size_t)(m * k) * ab), *b = malloc((size_t)(k * n) * ab);
    float *d = malloc((size_t)(m * n) * 4), *af = malloc((size_t)(m * k) * 4), *bfl = malloc((size_t)(k * n) * 4);
    for (int64_t i = 0; i < m * k; i++) {
        af[i] = (float)urand();
        if (f16) ((uint16_t *)a)[i] = gaio_k_f32_to_f16(af[i]);
        else ((float *)a)[i] = af[i];
    }
    for (int64_t i = 0; i < k * n; i++) {
        bfl[i] = (float)urand();
        if (f16) ((uint16_t *)b)[i] = gaio_k_f32_to_f16(bfl[i]);
        else ((float *)b)[i] = bfl[i];
    }
    gaio__gemm_args g = {.a = a, .b = b, .d = d, .ab_dtype = f16 ? GAIO_DTYPE_F16 : GAIO_DTYPE_F32,
                         .cd_dtype = GAIO_DTYPE_F32, .batch = 1, .m = m, .n = n, .k = k, .lda = k, .ldb = n, .ldd = n,
                         .alpha = 1, .beta = 0, .act = GAIO_ACT_NONE};
    double flop = 2.0 * m * n * k;
    char msg[512];
    int reps = 20;
    for (int mode = 0; mode < 2; mode++) {
        run_gemm(&g, mode, msg, sizeof msg); /* warm up */
        double best = 1e9, sum = 0;
        for (int r = 0; r < reps; r++) {
            double t0 = now_s();
            run_gemm(&g, mode, msg, sizeof msg);
            double dt = now_s() - t0;
            sum += dt;
            if (dt < best) best = dt;
        }
        printf("bench %s %lldx%lldx%lld gaio__gemm_cpu (%s): best %.3f ms (%.1f GFLOP/s), mean %.3f ms\n",
               f16 ? "f16->f32" : "f32", (long long)m, (long long)n, (long long)k,
               mode ? "main thread + pool" : "host func on a worker + pool", best * 1e3, flop / best * 1e-9,
               sum / reps * 1e3);
    }
    if (!f16) {
        void *lib = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_NOLOAD);
        void (*set_threads)(int) = lib ? (void (*)(int))dlsym(lib, "openblas_set_num_threads") : NULL;
        for (int threads = 1; threads <= 2; threads++) {
            if (threads > 1 && !set_threads) break;
            if (set_threads) set_threads(threads);
            gaio__blas_sgemm(false, false, m, n, k, 1.0f, af, k, bfl, n, 0.0f, d, n);
            double best = 1e9, sum = 0;
            for (int r = 0; r < reps; r++) {
                double t0 = now_s();
                gaio__blas_sgemm(false, false, m, n, k, 1.0f, af, k, bfl, n, 0.0f, d, n);
                double dt = now_s() - t0;
                sum += dt;
                if (dt < best) best = dt;
            }
            printf("bench f32 %lldx%lldx%lld one cblas_sgemm call, OpenBLAS %d thread%s: best %.3f ms (%.1f GFLOP/s), "
                   "mean %.3f ms\n",
                   (long long)m, (long long)n, (long long)k, threads, threads > 1 ? "s" : "", best * 1e3,
                   flop / best * 1e-9, sum / reps * 1e3);
        }
        if (set_threads) set_threads(1);
        if (lib) dlclose(lib);
    }
    free(a);
    free(b);
    free(d);
    free(af);
    free(bfl);
}

int main(int argc, char **argv) {
    unsigned long long seed = (unsigned long long)time(NULL);
    int do_bench = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--bench") == 0) do_bench = 1;
        else seed = strtoull(argv[i], NULL, 0);
    }
    printf("seed %llu\n", seed);
    rng_state = seed;

    const char *desc = NULL;
    gaio_status st = gaio__openblas_load("gemm_cpu_unit", &desc);
    if (st != GAIO_OK) {
        printf("openblas: %s: %s\n", gaio_status_string(st), gaio_last_error());
        return 1;
    }
    printf("openblas: %s\n", desc);

    gaio_context *ctx;
    if (gaio_context_create(0, NULL, &ctx) != GAIO_OK || gaio_stream_create(ctx, 0, 0, &g_stream) != GAIO_OK) {
        printf("context: %s\n", gaio_last_error());
        return 1;
    }

    const gaio_activation N = GAIO_ACT_NONE, R = GAIO_ACT_RELU, G = GAIO_ACT_GELU;
    const tcase cases[] = {
        /* name                 batch m    n    k   ta tb a16 c16 C CisD bias act alpha beta pad bA bB bC direct */
        {"1x1x1", 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, N, 1, 0, 0, 0, 0, 0, 1},
        {"1x1x1 f16", 1, 1, 1, 1, 0, 0, 1, 1, 1, 0, 1, R, 1, 1, 0, 0, 0, 0, 0},
        {"33x17x5", 1, 33, 17, 5, 0, 0, 0, 0, 0, 0, 0, N, 1, 0, 0, 0, 0, 0, 1},
        {"33x17x5 tA tB", 1, 33, 17, 5, 1, 1, 0, 0, 0, 0, 0, N, 1, 0, 0, 0, 0, 0, 0},
        {"33x17x5 tA", 1, 33, 17, 5, 1, 0, 0, 0, 0, 0, 0, N, 1, 0, 0, 0, 0, 0, 0},
        {"33x17x5 tB", 1, 33, 17, 5, 0, 1, 0, 0, 0, 0, 0, N, 1, 0, 0, 0, 0, 0, 0},
        {"128x256x64", 1, 128, 256, 64, 0, 0, 0, 0, 0, 0, 0, N, 1, 0, 0, 0, 0, 0, 1},
        {"128x256x64 C bias gelu", 1, 128, 256, 64, 0, 0, 0, 0, 1, 0, 1, G, 0.5f, 0.75f, 0, 0, 0, 0, 0},
        {"128x256x64 C==D relu", 1, 128, 256, 64, 0, 1, 0, 0, 1, 1, 0, R, 1, 1, 0, 0, 0, 0, 0},
        {"batch3 strides C bias relu", 3, 128, 256, 64, 1, 0, 0, 0, 1, 0, 1, R, 1.5f, -0.5f, 7, 0, 0, 0, 1},
        {"batch3 bcast A", 3, 33, 17, 5, 0, 0, 0, 0, 1, 0, 0, N, 1, 1, 3, 1, 0, 0, 0},
        {"batch3 bcast B", 3, 128, 256, 64, 0, 1, 0, 0, 0, 0, 1, N, 1, 0, 2, 0, 1, 0, 0},
        {"batch3 bcast C", 3, 33, 17, 5, 1, 1, 0, 0, 1, 0, 0, G, 1, 2, 1, 0, 0, 1, 0},
        {"batch3 C==D strides gelu", 3, 33, 17, 5, 0, 0, 0, 0, 1, 1, 1, G, 1, 0.5f, 5, 0, 0, 0, 0},
        {"alpha 0 (A NaN) C bias", 2, 33, 17, 5, 0, 0, 0, 0, 1, 0, 1, R, 0, 0.5f, 1, 0, 0, 0, 0},
        {"alpha 0 beta 0 no C", 1, 33, 17, 5, 0, 0, 0, 0, 0, 0, 0, N, 0, 0, 0, 0, 0, 0, 0},
        {"beta 0 with C (C ignored)", 1, 33, 17, 5, 0, 0, 0, 0, 1, 0, 0, N, 1, 0, 0, 0, 0, 0, 0},
        {"m 1", 2, 1, 300, 70, 0, 0, 0, 0, 1, 0, 1, G, 1, 1, 4, 0, 0, 0, 0},
        {"n 1", 2, 300, 1, 70, 1, 1, 0, 0, 1, 0, 1, R, 1, 1, 4, 0, 0, 0, 0},
        {"k 1", 2, 70, 300, 1, 1, 0, 0, 0, 1, 1, 1, N, 1, 1, 4, 0, 0, 0, 0},
        {"k large", 1, 9, 13, 100000, 0, 1, 0, 0, 0, 0, 0, N, 1, 0, 0, 0, 0, 0, 0},
        {"m 1 n large (column tiles)", 1, 1, 4099, 300, 0, 0, 0, 0, 0, 0, 1, R, 1, 0, 0, 0, 0, 0, 0},
        /* one row of D: sgemv where the BLAS has it, op(A) a row or a strided column */
        {"m 1 tB (a classifier)", 1, 1, 1000, 1280, 0, 1, 0, 0, 0, 0, 1, N, 1, 0, 0, 0, 0, 0, 0},
        {"m 1 tA tB C", 2, 1, 300, 70, 1, 1, 0, 0, 1, 0, 1, G, 0.5f, 1.5f, 4, 0, 0, 0, 0},
        {"m 1 tA", 1, 1, 257, 33, 1, 0, 0, 0, 0, 0, 0, N, 2, 0, 3, 0, 0, 0, 0},
        {"m 1 beta 0 with C (C ignored)", 1, 1, 64, 9, 0, 1, 0, 0, 1, 0, 0, N, 1, 0, 0, 0, 0, 0, 0},
        {"big 520x530x300 tA", 2, 520, 530, 300, 1, 0, 0, 0, 1, 0, 1, G, 1, 1, 3, 0, 0, 0, 1},
        /* f16 A and B */
        {"f16/f16 33x17x5", 1, 33, 17, 5, 0, 0, 1, 1, 0, 0, 0, N, 1, 0, 0, 0, 0, 0, 1},
        {"f16/f32 33x17x5 tA tB", 1, 33, 17, 5, 1, 1, 1, 0, 0, 0, 0, N, 1, 0, 0, 0, 0, 0, 0},
        {"f16/f16 128x256x64 C bias gelu", 1, 128, 256, 64, 0, 0, 1, 1, 1, 0, 1, G, 0.5f, 0.75f, 0, 0, 0, 0, 0},
        {"f16/f32 128x256x64 C bias relu", 1, 128, 256, 64, 1, 0, 1, 0, 1, 0, 1, R, 1, 1, 0, 0, 0, 0, 0},
        {"f16/f16 batch3 C==D strides tB", 3, 128, 256, 64, 0, 1, 1, 1, 1, 1, 1, R, 1, 1, 7, 0, 0, 0, 1},
        {"f16/f32 batch3 C==D strides tA", 3, 33, 17, 5, 1, 0, 1, 0, 1, 1, 1, G, 2, 1, 3, 0, 0, 0, 0},
        {"f16/f16 batch3 bcast A C", 3, 33, 17, 5, 0, 0, 1, 1, 1, 0, 1, N, 1, 1, 2, 1, 0, 1, 0},
        {"f16/f16 batch3 bcast B", 3, 128, 256, 64, 1, 1, 1, 1, 0, 0, 1, G, 1, 0, 1, 0, 1, 0, 0},
        {"f16/f16 alpha 0 (A NaN)", 3, 33, 17, 5, 0, 0, 1, 1, 1, 0, 1, N, 0, 2, 0, 0, 0, 0, 0},
        {"f16/f16 n large (tiles > 2048)", 1, 20, 5000, 40, 0, 0, 1, 1, 1, 0, 1, R, 1, 1, 2, 0, 0, 0, 0},
        {"f16/f32 m 1 n 1", 4, 1, 1, 77, 1, 1, 1, 0, 1, 0, 1, N, 1, 1, 1, 0, 0, 0, 0},
        {"f16/f16 1x1x1", 1, 1, 1, 1, 0, 0, 1, 1, 0, 0, 0, N, 1, 0, 0, 0, 0, 0, 0},
        {"f16/f32 big 300x520x260 batch 5", 5, 300, 520, 260, 0, 0, 1, 0, 0, 0, 0, N, 1, 0, 0, 0, 0, 0, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        run_case(&cases[i], 0);
        if (cases[i].direct) run_case(&cases[i], 1);
    }

    /* argument errors */
    {
        float x[4] = {1, 2, 3, 4}, y[4];
        gaio__gemm_args g = {.a = x, .b = x, .d = y, .ab_dtype = GAIO_DTYPE_F32, .cd_dtype = GAIO_DTYPE_F32,
                             .batch = 1, .m = 2, .n = 2, .k = 2, .lda = 1, .ldb = 2, .ldd = 2, .alpha = 1};
        st = gaio__gemm_cpu(&g);
        printf("%s lda < k rejected: %s: %s\n", st == GAIO_ERR_INVALID_ARG ? "ok  " : "FAIL", gaio_status_string(st),
               gaio_last_error());
        if (st != GAIO_ERR_INVALID_ARG) failures++;
        g.lda = 2;
        g.cd_dtype = GAIO_DTYPE_F16;
        st = gaio__gemm_cpu(&g);
        printf("%s f32 A with f16 D rejected: %s: %s\n", st == GAIO_ERR_INVALID_ARG ? "ok  " : "FAIL",
               gaio_status_string(st), gaio_last_error());
        if (st != GAIO_ERR_INVALID_ARG) failures++;
    }

    if (do_bench) {
        bench(512, 512, 512, 0);
        bench(512, 512, 512, 1);
        bench(64, 64, 64, 0);
        bench(2048, 2048, 2048, 0);
    }

    gaio_stream_release(g_stream);
    gaio_context_release(ctx);
    printf("%s (%d failure%s), seed %llu\n", failures ? "FAILED" : "PASSED", failures, failures == 1 ? "" : "s", seed);
    return failures ? 1 : 0;
}
