/* gaio_gemm on each backend against a direct computation in double precision:
 * shapes from 1x1x1 to a few hundred, transposes, batches with broadcast operands,
 * row strides, C (also in place), bias, ReLU and GELU, f32 and f16; bad input. */
#include <math.h>
#include <stdbool.h>

#include "common.h"
#include "half.h"

typedef struct env {
    gaio_context *ctx;
    gaio_stream *s;
    uint64_t rng;
    bool cuda;
} env;

static float rnd(uint64_t *r) { return (float)((double)(test_rand(r) >> 11) / 9007199254740992.0 * 2.0 - 1.0); }

typedef struct gcase {
    int64_t batch, m, n, k;
    bool ta, tb;
    gaio_dtype ab, cd;
    bool bias, c, c_is_d, bcast_a, bcast_b;
    int pad; /* extra elements per row of A and D */
    gaio_activation act;
    float alpha, beta;
} gcase;

/* Host matrix of rows x cols with row stride ld, batch copies (stride rows*ld). */
typedef struct hmat {
    int64_t batch, rows, cols, ld;
    gaio_dtype dt;
    float *v; /* the values (quantised to dt) */
} hmat;

static void hmat_make(env *e, hmat *h, int64_t batch, int64_t rows, int64_t cols, int64_t ld, gaio_dtype dt) {
    h->batch = batch, h->rows = rows, h->cols = cols, h->ld = ld, h->dt = dt;
    size_t n = (size_t)(batch * rows * ld);
    h->v = malloc(n * sizeof(float));
    CHECK(h->v);
    for (size_t i = 0; i < n; i++) {
        float f = rnd(&e->rng);
        h->v[i] = dt == GAIO_DTYPE_F16 ? from_half(to_half(f)) : f;
    }
}

static size_t esize(gaio_dtype dt) { return dt == GAIO_DTYPE_F16 ? 2 : 4; }

/* A device tensor holding h (3-D [batch, rows, cols] with row stride ld). */
static gaio_tensor upload(env *e, const hmat *h) {
    size_t n = (size_t)(h->batch * h->rows * h->ld), es = esize(h->dt);
    gaio_buffer *stage, *dev;
    OK(gaio_buffer_alloc(e->ctx, GAIO_MEM_PINNED, n * es, &stage));
    OK(gaio_buffer_alloc(e->ctx, GAIO_MEM_DEVICE, n * es, &dev));
    void *p;
    OK(gaio_buffer_host_ptr(stage, &p));
    for (size_t i = 0; i < n; i++) {
        if (h->dt == GAIO_DTYPE_F16)
            ((uint16_t *)p)[i] = to_half(h->v[i]);
        else
            ((float *)p)[i] = h->v[i];
    }
    OK(gaio_memcpy_async(e->s, dev, 0, stage, 0, n * es));
    OK(gaio_buffer_release(stage));
    gaio_tensor t = gaio_tensor_make(dev, 0, h->dt, 3, (int64_t[]){h->batch, h->rows, h->cols}, GAIO_TENSOR_ROW_MAJOR);
    t.strides[0] = h->rows * h->ld, t.strides[1] = h->ld, t.strides[2] = 1;
    return t;
}

static void download(env *e, const gaio_tensor *t, const hmat *h, float *out) {
    size_t n = (size_t)(h->batch * h->rows * h->ld), es = esize(h->dt);
    gaio_buffer *stage;
    OK(gaio_buffer_alloc(e->ctx, GAIO_MEM_PINNED, n * es, &stage));
    OK(gaio_memcpy_async(e->s, stage, 0, t->buffer, t->offset, n * es));
    OK(gaio_stream_synchronize(e->s));
    void *p;
    OK(gaio_buffer_host_ptr(stage, &p));
    for (size_t i = 0; i < n; i++) out[i] = h->dt == GAIO_DTYPE_F16 ? from_half(((uint16_t *)p)[i]) : ((float *)p)[i];
    OK(gaio_buffer_release(stage));
}

static double act_ref(gaio_activation a, double x) {
    if (a == GAIO_ACT_RELU) return x > 0 ? x : 0;
    if (a == GAIO_ACT_GELU) return 0.5 * x * (1 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
    return x;
}

static void run_case(env *e, const gcase *g) {
    int64_t ra = g->ta ? g->k : g->m, ca = g->ta ? g->m : g->k, rb = g->tb ? g->n : g->k, cb = g->tb ? g->k : g->n;
    hmat A, B, C, D, bias;
    hmat_make(e, &A, g->bcast_a ? 1 : g->batch, ra, ca, ca + g->pad, g->ab);
    hmat_make(e, &B, g->bcast_b ? 1 : g->batch, rb, cb, cb, g->ab);
    hmat_make(e, &D, g->batch, g->m, g->n, g->n + g->pad, g->cd);
    hmat_make(e, &C, g->batch, g->m, g->n, g->n, g->cd);
    hmat_make(e, &bias, 1, 1, g->n, g->n, g->cd);
    gaio_tensor ta = upload(e, &A), tb = upload(e, &B), td = upload(e, &D), tc = upload(e, &C), tbias = upload(e, &bias);
    if (A.batch == 1 && (test_rand(&e->rng) & 1)) { /* a 2-D broadcast operand, as often as a batch of 1 */
        ta.ndim = 2, ta.shape[0] = A.rows, ta.shape[1] = A.cols, ta.strides[0] = A.ld, ta.strides[1] = 1;
    }
    tbias.ndim = 1, tbias.shape[0] = g->n, tbias.strides[0] = 1;
    const hmat *cin = g->c_is_d ? &D : &C;
    gaio_gemm_params p = {g->ta, g->tb, g->alpha, g->beta, g->act};
    OK(gaio_gemm(e->s, &ta, &tb, g->c ? (g->c_is_d ? &td : &tc) : NULL, g->bias ? &tbias : NULL, &td, &p));
    float *got = malloc((size_t)(D.batch * D.rows * D.ld) * sizeof(float));
    CHECK(got);
    download(e, &td, &D, got);
    double worst = 0;
    for (int64_t bi = 0; bi < g->batch; bi++) {
        const float *a = A.v + (A.batch == 1 ? 0 : bi * A.rows * A.ld), *b = B.v + (B.batch == 1 ? 0 : bi * B.rows * B.ld);
        for (int64_t i = 0; i < g->m; i++)
            for (int64_t j = 0; j < g->n; j++) {
                double sum = 0, mag = 0;
                for (int64_t l = 0; l < g->k; l++) {
                    double x = g->ta ? a[l * A.ld + i] : a[i * A.ld + l], y = g->tb ? b[j * B.ld + l] : b[l * B.ld + j];
                    sum += x * y;
                    mag += fabs(x * y);
                }
                double v = g->alpha * sum;
                mag = fabs(g->alpha) * mag;
                double terms = fabs(v); /* the epilogue's addends, each rounded to f16 where D is */
                if (g->c) {
                    double cv = cin->v[(bi * cin->rows + i) * cin->ld + j];
                    v += g->beta * cv;
                    mag += fabs(g->beta * cv);
                    terms += fabs(g->beta * cv);
                }
                if (g->bias) v += bias.v[j], mag += fabs(bias.v[j]), terms += fabs(bias.v[j]);
                double want = act_ref(g->act, v);
                double out = got[(bi * D.rows + i) * D.ld + j];
                /* f32: accumulation error ~ sqrt(k) ulp of the magnitudes. f16 D: a few ulp of
                 * its addends (cuBLASLt may round the product, then add C and bias in f16). */
                double tol = (g->ab == GAIO_DTYPE_F16 ? 1e-5 : 2e-6) * (mag + 1) * sqrt((double)g->k) +
                             (g->cd == GAIO_DTYPE_F16 ? 2.5e-3 * (terms + 1e-3) : 0);
                double err = fabs(out - want);
                if (err > worst) worst = err;
                if (!(err <= tol)) {
                    fprintf(stderr,
                            "gemm b%lld m%lld n%lld k%lld ta%d tb%d ab %s cd %s bias%d c%d(d%d) act %d: d[%lld][%lld][%lld] = %.7g, "
                            "want %.7g (tol %.3g)\n",
                            (long long)g->batch, (long long)g->m, (long long)g->n, (long long)g->k, g->ta, g->tb,
                            gaio_dtype_name(g->ab), gaio_dtype_name(g->cd), g->bias, g->c, g->c_is_d, (int)g->act,
                            (long long)bi, (long long)i, (long long)j, out, want, tol);
                    exit(1);
                }
            }
        /* The padding after each row of D is untouched. */
        for (int64_t i = 0; i < g->m; i++)
            for (int64_t j = g->n; j < D.ld; j++)
                CHECK(got[(bi * D.rows + i) * D.ld + j] == D.v[(bi * D.rows + i) * D.ld + j]);
    }
    free(got);
    gaio_tensor *ts[] = {&ta, &tb, &tc, &td, &tbias};
    for (int i = 0; i < 5; i++) OK(gaio_buffer_release(ts[i]->buffer));
    hmat *hs[] = {&A, &B, &C, &D, &bias};
    for (int i = 0; i < 5; i++) free(hs[i]->v);
}

static void test_shapes(env *e) {
    const gaio_dtype F32 = GAIO_DTYPE_F32, F16 = GAIO_DTYPE_F16;
    const gcase cases[] = {
        {1, 1, 1, 1, false, false, F32, F32, false, false, false, false, false, 0, GAIO_ACT_NONE, 1, 0},
        {1, 33, 17, 5, false, false, F32, F32, true, false, false, false, false, 0, GAIO_ACT_RELU, 1, 0},
        {1, 33, 17, 5, true, false, F32, F32, false, true, false, false, false, 3, GAIO_ACT_NONE, 0.5f, -2},
        {1, 64, 48, 96, false, true, F32, F32, true, true, true, false, false, 0, GAIO_ACT_GELU, 1, 1},
        {3, 31, 40, 19, true, true, F32, F32, true, true, false, false, true, 2, GAIO_ACT_RELU, -1.5f, 0.25f},
        {4, 7, 9, 300, false, false, F32, F32, false, false, false, true, false, 0, GAIO_ACT_NONE, 1, 0},
        {1, 128, 256, 64, false, false, F16, F16, true, false, false, false, false, 0, GAIO_ACT_RELU, 1, 0},
        {2, 37, 24, 40, false, true, F16, F32, true, true, false, false, false, 0, GAIO_ACT_GELU, 1, 0.5f},
        {3, 16, 8, 64, true, false, F16, F16, false, true, true, true, false, 1, GAIO_ACT_NONE, 2, 1},
        {1, 1, 200, 1, false, false, F16, F16, true, false, false, false, false, 0, GAIO_ACT_GELU, 1, 0},
        {2, 200, 1, 3, true, true, F32, F32, true, true, false, false, false, 0, GAIO_ACT_NONE, 1, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(e, &cases[i]);
    /* Random shapes. */
    for (int r = 0; r < 12; r++) {
        gcase g = {1 + (int64_t)(test_rand(&e->rng) % 3), 1 + (int64_t)(test_rand(&e->rng) % 70),
                   1 + (int64_t)(test_rand(&e->rng) % 70), 1 + (int64_t)(test_rand(&e->rng) % 90),
                   test_rand(&e->rng) & 1, test_rand(&e->rng) & 1, (test_rand(&e->rng) & 1) ? F16 : F32, F32,
                   test_rand(&e->rng) & 1, test_rand(&e->rng) & 1, false, test_rand(&e->rng) & 1,
                   test_rand(&e->rng) & 1, (int)(test_rand(&e->rng) % 3), (gaio_activation)(test_rand(&e->rng) % 3),
                   1, 0.5f};
        if (g.ab == F16 && (test_rand(&e->rng) & 1)) g.cd = F16;
        run_case(e, &g);
    }
}

static void test_bad(env *e) {
    gaio_buffer *buf;
    OK(gaio_buffer_alloc(e->ctx, GAIO_MEM_DEVICE, 4096, &buf));
    gaio_tensor a = gaio_tensor_make(buf, 0, GAIO_DTYPE_F32, 2, (int64_t[]){4, 8}, GAIO_TENSOR_ROW_MAJOR);
    gaio_tensor b = gaio_tensor_make(buf, 128, GAIO_DTYPE_F32, 2, (int64_t[]){8, 5}, GAIO_TENSOR_ROW_MAJOR);
    gaio_tensor d = gaio_tensor_make(buf, 512, GAIO_DTYPE_F32, 2, (int64_t[]){4, 5}, GAIO_TENSOR_ROW_MAJOR);
    gaio_gemm_params p = {0, 0, 1, 0, GAIO_ACT_NONE};
    OK(gaio_gemm(e->s, &a, &b, NULL, NULL, &d, &p));
    const char *fn = "gaio_gemm";
    FAILS(GAIO_ERR_INVALID_ARG, gaio_gemm(NULL, &a, &b, NULL, NULL, &d, &p), fn);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_gemm(e->s, NULL, &b, NULL, NULL, &d, &p), fn);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_gemm(e->s, &a, &b, NULL, NULL, &d, NULL), fn);
    gaio_tensor x = b;
    x.shape[0] = 7; /* inner dimensions differ */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_gemm(e->s, &a, &x, NULL, NULL, &d, &p), fn);
    x = d;
    x.shape[1] = 6;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_gemm(e->s, &a, &b, NULL, NULL, &x, &p), fn);
    x = b;
    x.dtype = GAIO_DTYPE_F16;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_gemm(e->s, &a, &x, NULL, NULL, &d, &p), fn);
    x = a;
    x.dtype = GAIO_DTYPE_U8;
    gaio_tensor y = b;
    y.dtype = GAIO_DTYPE_U8;
    FAILS(GAIO_ERR_NOT_SUPPORTED, gaio_gemm(e->s, &x, &y, NULL, NULL, &d, &p), fn);
    x = d;
    x.dtype = GAIO_DTYPE_F16; /* f32 inputs write f32 */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_gemm(e->s, &a, &b, NULL, NULL, &x, &p), fn);
    x = d;
    x.offset = 64; /* d overlaps a */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_gemm(e->s, &a, &b, NULL, NULL, &x, &p), fn);
    x = d;
    x.offset = 4040; /* 80 bytes from here pass the end */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_gemm(e->s, &a, &b, NULL, NULL, &x, &p), fn);
    gaio_tensor bias = gaio_tensor_make(buf, 1024, GAIO_DTYPE_F32, 1, (int64_t[]){4}, GAIO_TENSOR_ROW_MAJOR);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_gemm(e->s, &a, &b, NULL, &bias, &d, &p), fn); /* n is 5 */
    x = a;
    x.strides[0] = 8, x.strides[1] = 2; /* a row's elements not adjacent */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_gemm(e->s, &x, &b, NULL, NULL, &d, &p), fn);
    x = a;
    x.ndim = 4, x.shape[2] = x.shape[3] = 1;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_gemm(e->s, &x, &b, NULL, NULL, &d, &p), fn);
    gaio_tensor a3 = gaio_tensor_make(buf, 0, GAIO_DTYPE_F32, 3, (int64_t[]){2, 4, 8}, GAIO_TENSOR_ROW_MAJOR);
    gaio_tensor d3 = gaio_tensor_make(buf, 2048, GAIO_DTYPE_F32, 3, (int64_t[]){3, 4, 5}, GAIO_TENSOR_ROW_MAJOR);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_gemm(e->s, &a3, &b, NULL, NULL, &d3, &p), fn); /* batch 2 vs 3 */
    p.act = (gaio_activation)9;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_gemm(e->s, &a, &b, NULL, NULL, &d, &p), fn);
    p.act = GAIO_ACT_NONE;
    p.alpha = NAN;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_gemm(e->s, &a, &b, NULL, NULL, &d, &p), fn);
    gaio_tensor r;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_tensor_check(NULL, &r, NULL), "gaio_tensor_check");
    x = gaio_tensor_make(buf, 0, GAIO_DTYPE_F32, 3, (int64_t[]){1, 2, 3}, GAIO_TENSOR_NHWC);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_tensor_check(&x, &r, NULL), "gaio_tensor_check");
    x = gaio_tensor_make(buf, 0, GAIO_DTYPE_F32, 4, (int64_t[]){2, 3, 4, 5}, GAIO_TENSOR_NHWC);
    size_t bytes;
    OK(gaio_tensor_check(&x, &r, &bytes));
    CHECK(r.strides[1] == 1 && r.strides[3] == 3 && r.strides[2] == 15 && r.strides[0] == 60 && bytes == 480);
    OK(gaio_stream_synchronize(e->s)); /* nothing bad was enqueued */
    OK(gaio_buffer_release(buf));
}

static void test_status(env *e) {
    const char *what = NULL;
    gaio_status st = gaio_dnn_library_status(GAIO_DNN_OPENBLAS, &what);
    printf("OpenBLAS: %s: %s\n", gaio_status_string(st), what);
    if (e->cuda) {
        for (int lib = GAIO_DNN_CUDNN; lib <= GAIO_DNN_CUBLASLT; lib++) {
            st = gaio_dnn_library_status((gaio_dnn_library)lib, &what);
            printf("library %d: %s: %s\n", lib, gaio_status_string(st), what);
        }
        void *h = NULL;
        OK(gaio_dnn_cublas_handle(e->s, &h));
        CHECK(h != NULL);
        void *again = NULL;
        OK(gaio_dnn_cublas_handle(e->s, &again));
        CHECK(again == h);
        st = gaio_dnn_cudnn_handle(e->s, &h);
        printf("cudnn handle: %s %p\n", gaio_status_string(st), h);
        OK(st);
    } else {
        void *h = (void *)1;
        FAILS(GAIO_ERR_NOT_SUPPORTED, gaio_dnn_cudnn_handle(e->s, &h), "gaio_dnn_cudnn_handle");
        CHECK(h == NULL);
    }
    FAILS(GAIO_ERR_INVALID_ARG, gaio_dnn_library_status((gaio_dnn_library)17, &what), "gaio_dnn_library_status");
}

static void run(int device) {
    env e = {0};
    gaio_device_props props;
    OK(gaio_device_get_props(device, &props));
    e.cuda = props.kind == GAIO_DEVICE_CUDA;
    e.rng = test_seed();
    OK(gaio_context_create(device, NULL, &e.ctx));
    OK(gaio_stream_create(e.ctx, 0, 0, &e.s));
    test_status(&e);
    test_shapes(&e);
    test_bad(&e);
    /* The same on a DEFERRED stream and on the context's default stream (its library
     * state goes with the context). */
    OK(gaio_stream_release(e.s));
    OK(gaio_stream_create(e.ctx, 0, GAIO_STREAM_DEFERRED, &e.s));
    test_shapes(&e);
    OK(gaio_stream_release(e.s));
    OK(gaio_context_default_stream(e.ctx, &e.s));
    test_shapes(&e);
    OK(gaio_context_release(e.ctx));
    test_shutdown();
}
