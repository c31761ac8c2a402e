/* gaio_model_exec_create / gaio_model_run against onnxruntime: every model that
 * tests/model/make_reference.py ran (the model_reference fixture; GAIO_MODEL_DIR names
 * the models, GAIO_MODEL_DIR/ref holds onnxruntime's inputs and outputs and the
 * manifest saying which is which; tests/model/model_ref.h reads it) runs here on the same
 * inputs, and its outputs must agree with onnxruntime's, element by element:
 *   in the model's precision (an exec of precision MODEL):
 *     f32: |got - ref| <= 1e-4 + 1e-4 * |ref|
 *     f16: |got - ref| <= 1e-2 + 1e-2 * |ref| (onnxruntime's CPU kernels compute f16
 *          in f32 and round at each node's output, as gaio may; the error is a few ulps)
 *   in f16 (precision F16, layout AUTO = NHWC: the default GPU path, which the host
 *   backend runs too), against onnxruntime's outputs in the model's precision (f32 for
 *   an f32 model): |got - ref| <= 2e-2 + 2e-2 * |ref| (F16_ATOL, F16_RTOL). Why: the
 *   weights and every intermediate are stored in f16 (a relative rounding of 2^-11 =
 *   4.9e-4 each), accumulated in f32, over a few layers whose outputs spread over
 *   units (tests/model/make_models.py scales the weights so: He's initialisation).
 *   Measured on the host over 60 seeds, the worst error of any element of any model
 *   was 0.22 of this tolerance (0.014 absolute, on the CNNs' logits of magnitude up to
 *   ~10; coverage.onnx's Sub cancels Sigmoid's f16 rounding and scales it by up to 24),
 *   a model's worst typically 0.02 to 0.15: room for another backend's summation order
 *   and kernels.
 *   Not looser, because of what it must catch (the canaries below). Measured with
 *   onnxruntime over 300 seeds of the CNN: zeroing an output channel of its first
 *   convolution moves some output by 5.0 tolerances or more (the weakest of its 8
 *   channels; 10 or more typically); over all 50 output channels of its four layers,
 *   0.3% move no output by a tolerance (the global average pool nearly cancels them),
 *   and at five times this tolerance (1e-1 + 1e-1 |ref|) 4% would pass, the first
 *   convolution's weakest channels among them.
 * The worst absolute and relative errors (relative where |ref| >= F16_ATOL) and the
 * worst error in units of the tolerance are printed per model; any element out of the
 * tolerance fails the test, naming it.
 *
 * Canaries, printed as such, show that the comparisons would catch a wrong result:
 *   - one element of the reference moved 5 tolerances away from gaio's value (at gaio's
 *     worst element): the comparison must find that element out, and only it;
 *   - for the models make_models.py marks (canary=WEIGHT,BIAS: the CNNs' first
 *     convolution, the one convolution of external/model.onnx and of half_conv.onnx:
 *     layers each of whose channels reaches many outputs), onnxruntime's outputs with
 *     each output channel of that layer zeroed in turn: every one must be out of
 *     tolerance of gaio's outputs, in f16 and in the model's precision. The CNNs
 *     output their logits besides Softmax's probabilities, which over near-uniform
 *     logits had let a zeroed channel pass.
 *
 * Per model also: a first run in the model's precision (checked, max error printed), a
 * second on the same exec (the same bits), a third on another stream enqueued right
 * behind a run of other inputs on the first (the exec orders them: they share the
 * intermediates), and for a model with a symbolic batch an exec at batch 1 fed the
 * first sample (the models are per-sample: it must give the first sample of the
 * output). Then bad arguments: each refused with INVALID_ARG naming the function,
 * nothing enqueued (the outputs keep a sentinel), the stream still good afterwards.
 * The reference must hold every good model of make_models.py's manifest exactly once:
 * the models run are those minus the skips make_reference.py allows (ALLOWED_SKIPS:
 * an opset the onnxruntime at hand does not know), each skip printed.
 *
 * A libgaio built without ONNX support (the GPU machine's scripts/gpu-check build)
 * prints "SKIPPED: ..." and exits 77 at once (test_skip): there is nothing to run. */
#include "common.h"
#include "model_ref.h"

#include <errno.h>

#define MAX_IO REF_MAX_IO
#define MAX_MODELS 64
#define WAIT_NS (120ll * 1000 * 1000 * 1000)

/* The f16 runs' tolerance against onnxruntime's f32 outputs (see the header). */
#define F16_ATOL 2e-2
#define F16_RTOL 2e-2
/* The element canary moves one reference element this many tolerances away. */
#define CANARY_TOLERANCES 5.0

typedef struct env {
    int device;
    gaio_context *ctx;
    gaio_stream *s1, *s2;
    int nrun, nskip, bad_done, ncanary;
    char files[MAX_MODELS][1024]; /* the reference's models, run or skipped */
    int nfiles;
    double worst_f16_ratio; /* over every model: max error / tolerance */
    char worst_f16_model[256];
} env;

/* ---- device tensors (tests/model/model_ref.h binds them: inputs uploaded, outputs
 * poisoned with all-ones bytes, NaN in both dtypes) ---- */

/* Outputs poisoned again before a run, so that an output never written cannot pass,
 * and a refused run that wrote anyway is seen. */
static void poison_outputs(gaio_stream *s, const ref_model *r, ref_bound *b) {
    for (int i = 0; i < r->nout; i++) OK(gaio_memset_async(s, b->out_buf[i], 0, 0xFF, r->out[i].bytes));
}

static void expect_poison(env *e, const char *what, gaio_buffer *buf, size_t bytes) {
    unsigned char *p = ref_download(e->ctx, e->s1, buf, bytes);
    for (size_t i = 0; i < bytes; i++) {
        if (p[i] != 0xFF) {
            fprintf(stderr, "%s: the output was written (byte %zu is 0x%02x): a refused run enqueued work\n", what, i,
                    p[i]);
            exit(1);
        }
    }
    free(p);
}

static void wait_done(const char *what, gaio_future *done) {
    CHECK(done != NULL);
    gaio_status st = gaio_future_wait(done, WAIT_NS);
    if (st != GAIO_OK) {
        fprintf(stderr, "%s: the run's future gave %s: %s\n", what, gaio_status_string(st),
                st == GAIO_ERR_TIMEOUT ? "not done after 120 s" : gaio_future_message(done));
        exit(1);
    }
    OK(gaio_future_release(done));
}

/* The outputs' bytes after the work on s finished. */
static void fetch(env *e, gaio_stream *s, const ref_model *r, ref_bound *b, unsigned char **got) {
    for (int i = 0; i < r->nout; i++) got[i] = ref_download(e->ctx, s, b->out_buf[i], r->out[i].bytes);
}

/* ---- canaries: what the comparison must catch ---- */

/* Every canary of make_reference.py (onnxruntime's outputs with one output channel of
 * a layer zeroed) must be out of tolerance of got somewhere: else a kernel that lost
 * that channel would pass. Returns the weakest canary's max error in tolerances. */
static double expect_canaries_caught(const ref_model *r, const char *what, unsigned char **got, double atol,
                                     double rtol, int *weakest) {
    double weakest_ratio = INFINITY;
    for (int c = 0; c < r->ncanary; c++) {
        ref_errors all = {0, 0, 0, 0, 0};
        for (int i = 0; i < r->nout; i++) ref_errors_add(&all, ref_measure(&r->out[i], r->canary[c].out[i], got[i],
                                                                             atol, rtol));
        if (all.nbad == 0) {
            fprintf(stderr,
                    "%s: %s: CANARY NOT CAUGHT: onnxruntime's outputs with %s zeroed are within the tolerance "
                    "(%.3g + %.3g |ref|; at most %.3g of it) of gaio's: a wrong channel would pass\n",
                    r->name, what, r->canary[c].what, atol, rtol, all.max_ratio);
            exit(1);
        }
        if (all.max_ratio < weakest_ratio) weakest_ratio = all.max_ratio, *weakest = c;
    }
    return weakest_ratio;
}

/* One element of output 0's reference moved CANARY_TOLERANCES tolerances away from
 * gaio's value there (at gaio's worst element: where its own error is largest): the
 * comparison must find exactly that element out, and nothing else. */
static void expect_element_canary(const ref_model *r, const char *what, unsigned char **got, double atol,
                                  double rtol) {
    const io_ref *o = &r->out[0];
    size_t k = ref_measure(o, o->data, got[0], atol, rtol).worst;
    unsigned char *moved = malloc(o->bytes);
    CHECK(moved);
    memcpy(moved, o->data, o->bytes);
    double w = ref_element(o, o->data, k), g = ref_element(o, got[0], k);
    double v = w + (w >= g ? 1 : -1) * CANARY_TOLERANCES * (atol + rtol * fabs(w));
    if (o->dt == GAIO_DTYPE_F16) {
        uint16_t h = to_half((float)v);
        memcpy(moved + 2 * k, &h, 2);
    } else {
        float f = (float)v;
        memcpy(moved + 4 * k, &f, 4);
    }
    ref_errors e = ref_measure(o, moved, got[0], atol, rtol);
    if (e.nbad != 1 || e.worst != k) {
        fprintf(stderr,
                "%s: %s: CANARY NOT CAUGHT: output 0 element %zu moved from %.6g to %.6g (%.0f tolerances): %zu "
                "elements out of tolerance, the worst %zu (expected exactly that one)\n",
                r->name, what, k, w, ref_element(o, moved, k), CANARY_TOLERANCES, e.nbad, e.worst);
        exit(1);
    }
    free(moved);
}

/* An exec in the model's own precision (AUTO runs f16 on a GPU), so that every
 * backend is held to onnxruntime's f32 results; layout AUTO (NHWC). */
static gaio_status exec_in_model_precision(gaio_model *m, gaio_context *ctx, int64_t batch, gaio_model_exec **out) {
    gaio_model_exec_options o = {batch, GAIO_MODEL_PRECISION_MODEL, GAIO_MODEL_LAYOUT_AUTO};
    return gaio_model_exec_create_ex(m, ctx, &o, out);
}

/* An exec at batch 1 fed the first sample of every input must give the first sample
 * of every output: checks that the batch given to gaio_model_exec_create is used
 * (the reference was made at batch 2). Only where the symbolic dimension is the first
 * of every input and output, and the model per-sample, as make_models.py's are. */
static void test_batch_one(env *e, gaio_model *m, const ref_model *r) {
    for (int i = 0; i < r->nin + r->nout; i++) {
        gaio_model_io io;
        OK(i < r->nin ? gaio_model_input(m, i, &io) : gaio_model_output(m, i - r->nin, &io));
        for (int d = 0; d < io.ndim; d++)
            if (io.shape[d] < 0 && d != 0) return;
        if (io.ndim < 1 || io.shape[0] >= 0) return;
    }
    ref_model one = *r; /* borrows r's data: never freed */
    one.batch = 1;
    one.ncanary = 0;
    for (int i = 0; i < r->nin + r->nout; i++) {
        io_ref *x = i < r->nin ? &one.in[i] : &one.out[i - r->nin];
        CHECK(x->shape[0] == r->batch);
        x->count /= (size_t)x->shape[0];
        x->bytes /= (size_t)x->shape[0];
        x->shape[0] = 1;
    }
    gaio_model_exec *x = NULL;
    OK(exec_in_model_precision(m, e->ctx, 1, &x));
    ref_bound b;
    ref_bind(e->ctx, e->s1, &one, &b);
    gaio_future *done = NULL;
    OK(gaio_model_run(x, e->s1, b.in, one.nin, b.out, one.nout, &done));
    wait_done(r->name, done);
    unsigned char *got[MAX_IO];
    fetch(e, e->s1, &one, &b, got);
    double max_err = 0;
    for (int i = 0; i < one.nout; i++) {
        double err = ref_compare(r->name, "batch 1", i, &one.out[i], got[i]);
        if (err > max_err) max_err = err;
        free(got[i]);
    }
    printf("    batch 1 (first sample): max error %.3g\n", max_err);
    ref_unbind(&one, &b);
    OK(gaio_model_exec_release(x));
}

/* The default GPU path on every backend: an exec in f16 (weights and activations;
 * the inputs and outputs keep the model's dtype), layout AUTO (NHWC), held element by
 * element to onnxruntime's outputs in the model's precision within F16_ATOL +
 * F16_RTOL |ref|. Then the canaries: the comparison must catch a reference element
 * moved by CANARY_TOLERANCES tolerances, and every model with a zeroed channel. */
static void test_f16(env *e, gaio_model *m, const ref_model *r) {
    gaio_model_exec_options o = {r->batch, GAIO_MODEL_PRECISION_F16, GAIO_MODEL_LAYOUT_AUTO};
    gaio_model_exec *x = NULL;
    OK(gaio_model_exec_create_ex(m, e->ctx, &o, &x));
    /* the engine really is f16 NHWC: else the f32 path would be checked twice */
    gaio_engine *eng = NULL;
    OK(gaio_model_exec_engine(x, &eng));
    gaio_engine_info info;
    OK(gaio_engine_get_info(eng, &info));
    if (info.dtype != GAIO_DTYPE_F16 || info.layout != GAIO_MODEL_LAYOUT_NHWC) {
        fprintf(stderr, "%s: an exec of precision F16, layout AUTO has an engine of dtype %d, layout %d\n", r->name,
                (int)info.dtype, (int)info.layout);
        exit(1);
    }
    ref_bound b;
    ref_bind(e->ctx, e->s1, r, &b);
    gaio_future *done = NULL;
    OK(gaio_model_run(x, e->s1, b.in, r->nin, b.out, r->nout, &done));
    wait_done(r->name, done);
    unsigned char *got[MAX_IO];
    fetch(e, e->s1, r, &b, got);
    ref_errors all = {0, 0, 0, 0, 0};
    int worst_out = 0;
    for (int i = 0; i < r->nout; i++) {
        ref_errors one = ref_compare_tol(r->name, "f16 NHWC run", i, &r->out[i], got[i], F16_ATOL, F16_RTOL);
        if (one.max_ratio > all.max_ratio) worst_out = i;
        ref_errors_add(&all, one);
    }
    printf("    f16 NHWC: worst abs error %.3g, worst rel error %.3g (where |ref| >= %g), at most %.3f of the "
           "tolerance %g + %g |ref| (output %d element %zu)\n",
           all.max_abs, all.max_rel, F16_ATOL, all.max_ratio, F16_ATOL, F16_RTOL, worst_out, all.worst);
    if (all.max_ratio > e->worst_f16_ratio) {
        e->worst_f16_ratio = all.max_ratio;
        snprintf(e->worst_f16_model, sizeof e->worst_f16_model, "%s", r->name);
    }

    expect_element_canary(r, "f16 NHWC run", got, F16_ATOL, F16_RTOL);
    printf("    canary: output 0's reference moved %.0f tolerances at gaio's worst element: caught, alone\n",
           CANARY_TOLERANCES);
    if (r->ncanary) {
        int weakest = 0;
        double ratio = expect_canaries_caught(r, "f16 NHWC run", got, F16_ATOL, F16_RTOL, &weakest);
        printf("    canary: onnxruntime's outputs with one output channel zeroed, %d channels in turn: each caught by "
               "the f16 comparison; the closest, %s zeroed, is %.3g tolerances away\n",
               r->ncanary, r->canary[weakest].what, ratio);
        e->ncanary += r->ncanary;
    }
    for (int i = 0; i < r->nout; i++) free(got[i]);
    ref_unbind(r, &b);
    OK(gaio_model_exec_release(x));
}

static void test_model(env *e, const ref_model *r) {
    char path[2048];
    CHECK(snprintf(path, sizeof path, "%s/%s", model_dir(), r->file) < (int)sizeof path);
    gaio_model *m = NULL;
    OK(gaio_model_load(path, &m));
    /* the model's own description agrees with the reference's, the batch resolved */
    for (int i = 0; i < r->nin + r->nout; i++) {
        gaio_model_io io;
        const io_ref *want = i < r->nin ? &r->in[i] : &r->out[i - r->nin];
        OK(i < r->nin ? gaio_model_input(m, i, &io) : gaio_model_output(m, i - r->nin, &io));
        CHECK(io.dtype == want->dt && io.ndim == want->ndim);
        for (int d = 0; d < io.ndim; d++) CHECK(io.shape[d] == (io.shape[d] < 0 ? -1 : want->shape[d]));
    }
    gaio_model_exec *x = NULL;
    OK(exec_in_model_precision(m, e->ctx, r->batch, &x));

    ref_bound b;
    ref_bind(e->ctx, e->s1, r, &b);
    unsigned char *first[MAX_IO], *got[MAX_IO];
    double max_err = 0;

    /* 1: checked against onnxruntime */
    gaio_future *done = NULL;
    OK(gaio_model_run(x, e->s1, b.in, r->nin, b.out, r->nout, &done));
    wait_done(r->name, done);
    fetch(e, e->s1, r, &b, first);
    for (int i = 0; i < r->nout; i++) {
        double err = ref_compare(r->name, "first run", i, &r->out[i], first[i]);
        if (err > max_err) max_err = err;
    }
    int f16 = r->out[0].dt == GAIO_DTYPE_F16;
    printf("%-16s %s batch %" PRId64 ": max abs error %.3g over %d output(s) (%s, tolerance %g + %g |ref|)\n",
           r->name, r->file, r->batch, max_err, r->nout, f16 ? "f16" : "f32", f16 ? REF_F16_ATOL : REF_F32_ATOL,
           f16 ? REF_F16_RTOL : REF_F32_RTOL);
    if (r->ncanary) { /* at the model precision's tolerance too */
        int weakest = 0;
        expect_canaries_caught(r, "first run", first, f16 ? REF_F16_ATOL : REF_F32_ATOL,
                               f16 ? REF_F16_RTOL : REF_F32_RTOL, &weakest);
    }
    if (r->batch > 0) test_batch_one(e, m, r);
    test_f16(e, m, r);
    OK(gaio_model_release(m)); /* the exec holds its own reference */

    /* 2: the same exec again, no future asked: the same bits */
    poison_outputs(e->s1, r, &b);
    OK(gaio_model_run(x, e->s1, b.in, r->nin, b.out, r->nout, NULL));
    OK(gaio_stream_synchronize(e->s1));
    fetch(e, e->s1, r, &b, got);
    for (int i = 0; i < r->nout; i++) {
        ref_expect_same_bits(r->name, "second run", i, &r->out[i], first[i], got[i]);
        free(got[i]);
    }

    /* 3: a run of other inputs on s1, and at once a run of the reference's on s2,
     * nothing waited for in between: the exec must order them (they share its
     * intermediates), so s2's outputs are the reference's and s1's those of its
     * inputs run alone */
    ref_model other = *r; /* borrows r's outputs: only its inputs are its own */
    other.ncanary = 0;
    ref_bound ob;
    for (int i = 0; i < r->nin; i++) {
        other.in[i].data = malloc(r->in[i].bytes);
        CHECK(other.in[i].data);
        /* the reference's inputs reversed: other values, the same range */
        size_t es = ref_dtype_size(r->in[i].dt);
        for (size_t k = 0; k < r->in[i].count; k++)
            memcpy(other.in[i].data + k * es, r->in[i].data + (r->in[i].count - 1 - k) * es, es);
    }
    ref_bind(e->ctx, e->s1, &other, &ob);
    poison_outputs(e->s2, r, &b);
    OK(gaio_stream_synchronize(e->s1));
    OK(gaio_stream_synchronize(e->s2));
    gaio_future *done1 = NULL, *done2 = NULL;
    OK(gaio_model_run(x, e->s1, ob.in, r->nin, ob.out, r->nout, &done1));
    OK(gaio_model_run(x, e->s2, b.in, r->nin, b.out, r->nout, &done2));
    wait_done(r->name, done2);
    wait_done(r->name, done1);
    fetch(e, e->s2, r, &b, got);
    int same_bits = 1;
    for (int i = 0; i < r->nout; i++) {
        ref_compare(r->name, "run on a second stream", i, &r->out[i], got[i]);
        same_bits &= memcmp(got[i], first[i], r->out[i].bytes) == 0;
        free(got[i]);
    }
    unsigned char *other_got[MAX_IO];
    fetch(e, e->s1, r, &ob, other_got);
    poison_outputs(e->s1, r, &ob);
    OK(gaio_model_run(x, e->s1, ob.in, r->nin, ob.out, r->nout, NULL));
    fetch(e, e->s1, r, &ob, got);
    for (int i = 0; i < r->nout; i++) {
        ref_expect_same_bits(r->name, "other inputs run alone (vs. beside a run on another stream)", i, &r->out[i],
                             other_got[i], got[i]);
        free(got[i]);
        free(other_got[i]);
    }
    printf("    second run: the same bits; run on a second stream: within tolerance, %s\n",
           same_bits ? "the same bits" : "other bits (another stream's library handles may pick other algorithms)");
    ref_unbind(&other, &ob);
    for (int i = 0; i < r->nin; i++) free(other.in[i].data);
    for (int i = 0; i < r->nout; i++) free(first[i]);
    ref_unbind(r, &b);
    OK(gaio_model_exec_release(x));
}

/* ---- bad arguments ---- */

/* A refused run: INVALID_ARG naming gaio_model_run, done left NULL. */
#define RUN_FAILS(what, ...)                                                                                     \
    do {                                                                                                         \
        gaio_future *d_ = NULL;                                                                                  \
        gaio_status st_ = gaio_model_run(__VA_ARGS__, &d_);                                                      \
        if (st_ != GAIO_ERR_INVALID_ARG || !strstr(gaio_last_error(), "gaio_model_run")) {                       \
            fprintf(stderr, "%s:%d: %s: gaio_model_run returned %s, expected GAIO_ERR_INVALID_ARG naming "     \
                            "gaio_model_run (%s)\n",                                                             \
                    __FILE__, __LINE__, what, gaio_status_string(st_), st_ == GAIO_OK ? "" : gaio_last_error()); \
            if (d_) gaio_future_wait(d_, WAIT_NS);                                                               \
            exit(1);                                                                                             \
        }                                                                                                        \
        CHECK(d_ == NULL);                                                                                       \
    } while (0)

static void test_bad_arguments(env *e, const ref_model *r) {
    char path[2048];
    CHECK(snprintf(path, sizeof path, "%s/%s", model_dir(), r->file) < (int)sizeof path);
    gaio_model *m = NULL;
    OK(gaio_model_load(path, &m));
    gaio_model_exec *x = NULL;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_model_exec_create(NULL, e->ctx, r->batch, &x), "gaio_model_exec_create");
    CHECK(x == NULL);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_model_exec_create(m, NULL, r->batch, &x), "gaio_model_exec_create");
    CHECK(x == NULL);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_model_exec_create(m, e->ctx, r->batch, NULL), "gaio_model_exec_create");
    CHECK(r->batch > 0); /* the caller picks a model with a symbolic batch */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_model_exec_create(m, e->ctx, 0, &x), "gaio_model_exec_create");
    CHECK(x == NULL);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_model_exec_create(m, e->ctx, -2, &x), "gaio_model_exec_create");
    CHECK(x == NULL);
    OK(gaio_model_exec_release(NULL));
    OK(exec_in_model_precision(m, e->ctx, r->batch, &x)); /* held to f32 tolerances below */

    ref_bound b;
    ref_bind(e->ctx, e->s1, r, &b); /* the outputs poisoned */
    OK(gaio_stream_synchronize(e->s1));
    const gaio_tensor *in = b.in, *out = b.out;
    int ni = r->nin, no = r->nout;

    RUN_FAILS("exec NULL", NULL, e->s1, in, ni, out, no);
    RUN_FAILS("stream NULL", x, NULL, in, ni, out, no);
    RUN_FAILS("inputs NULL", x, e->s1, NULL, ni, out, no);
    RUN_FAILS("outputs NULL", x, e->s1, in, ni, NULL, no);
    RUN_FAILS("no inputs", x, e->s1, in, 0, out, no);
    RUN_FAILS("no outputs", x, e->s1, in, ni, out, 0);
    RUN_FAILS("negative ninputs", x, e->s1, in, -1, out, no);
    gaio_tensor in2[MAX_IO + 1], out2[MAX_IO + 1];
    memcpy(in2, in, sizeof(gaio_tensor) * (size_t)ni);
    in2[ni] = in[0];
    memcpy(out2, out, sizeof(gaio_tensor) * (size_t)no);
    out2[no] = out[0];
    RUN_FAILS("one input too many", x, e->s1, in2, ni + 1, out, no);
    RUN_FAILS("one output too many", x, e->s1, in, ni, out2, no + 1);

    /* a larger buffer, so that only the descriptor is wrong */
    gaio_buffer *big = NULL;
    OK(gaio_buffer_alloc(e->ctx, GAIO_MEM_DEVICE, r->in[0].bytes * 4, &big));
    gaio_tensor t = in[0];
    t.buffer = big;
    OK(gaio_tensor_check(&t, NULL, NULL)); /* the same shape on the big buffer: fine */
    memcpy(in2, in, sizeof(gaio_tensor) * (size_t)ni);
    in2[0] = t;
    in2[0].shape[0] = r->batch + 1; /* another batch than the exec's */
    RUN_FAILS("an input of another batch", x, e->s1, in2, ni, out, no);
    in2[0] = t;
    in2[0].shape[in2[0].ndim - 1] += 1;
    RUN_FAILS("an input one element wider", x, e->s1, in2, ni, out, no);
    in2[0] = t;
    if (t.ndim < GAIO_TENSOR_MAX_NDIM) {
        in2[0].shape[in2[0].ndim++] = 1; /* the same elements, one dimension more */
        RUN_FAILS("an input with an extra dimension of 1", x, e->s1, in2, ni, out, no);
    }
    in2[0] = t;
    in2[0].dtype = t.dtype == GAIO_DTYPE_F32 ? GAIO_DTYPE_F16 : GAIO_DTYPE_F32;
    RUN_FAILS("an input of the other float dtype", x, e->s1, in2, ni, out, no);
    in2[0] = t;
    in2[0].dtype = GAIO_DTYPE_U8;
    RUN_FAILS("a u8 input", x, e->s1, in2, ni, out, no);
    in2[0] = in[0];
    in2[0].offset = 4; /* past the end of its exact-size buffer */
    RUN_FAILS("an input past its buffer's end", x, e->s1, in2, ni, out, no);
    in2[0] = in[0];
    in2[0].buffer = NULL;
    RUN_FAILS("an input without a buffer", x, e->s1, in2, ni, out, no);
    memcpy(out2, out, sizeof(gaio_tensor) * (size_t)no);
    out2[0].shape[0] = r->batch + 1;
    out2[0].buffer = big;
    RUN_FAILS("an output of another batch", x, e->s1, in, ni, out2, no);
    out2[0] = out[0];
    out2[0].dtype = out[0].dtype == GAIO_DTYPE_F32 ? GAIO_DTYPE_F16 : GAIO_DTYPE_F32;
    RUN_FAILS("an output of the other float dtype", x, e->s1, in, ni, out2, no);

    /* memory the device cannot reach: pageable HOST memory (refused by every kernel
     * on every backend), and DEVICE memory of another device of the same kind */
    gaio_buffer *pageable = NULL;
    OK(gaio_buffer_alloc(e->ctx, GAIO_MEM_HOST, r->in[0].bytes, &pageable));
    in2[0] = in[0];
    in2[0].buffer = pageable;
    RUN_FAILS("an input in pageable host memory", x, e->s1, in2, ni, out, no);
    OK(gaio_buffer_release(pageable));
    OK(gaio_buffer_alloc(e->ctx, GAIO_MEM_HOST, r->out[0].bytes, &pageable));
    memcpy(out2, out, sizeof(gaio_tensor) * (size_t)no);
    out2[0].buffer = pageable; /* found only after every node, if not checked first */
    RUN_FAILS("an output in pageable host memory", x, e->s1, in, ni, out2, no);
    OK(gaio_buffer_release(pageable));
    int count = 0;
    OK(gaio_device_count(&count));
    gaio_device_props mine;
    OK(gaio_device_get_props(e->device, &mine));
    for (int d = 0; d < count; d++) {
        gaio_device_props p;
        OK(gaio_device_get_props(d, &p));
        if (d == e->device || p.kind != mine.kind) continue;
        gaio_context *c2 = NULL;
        OK(gaio_context_create(d, NULL, &c2));
        gaio_buffer *far = NULL;
        OK(gaio_buffer_alloc(c2, GAIO_MEM_DEVICE, r->in[0].bytes, &far));
        in2[0] = in[0];
        in2[0].buffer = far;
        RUN_FAILS("an input on another device", x, e->s1, in2, ni, out, no);
        /* and a stream of another context than the exec's */
        gaio_stream *s_far = NULL;
        OK(gaio_stream_create(c2, 0, 0, &s_far));
        RUN_FAILS("a stream of another device's context", x, s_far, in, ni, out, no);
        OK(gaio_stream_release(s_far));
        OK(gaio_buffer_release(far));
        OK(gaio_context_release(c2));
        printf("    refused an input and a stream of device %d\n", d);
        break;
    }
    /* a stream of another context on the same device: not the exec's */
    gaio_context *c3 = NULL;
    OK(gaio_context_create(e->device, NULL, &c3));
    gaio_stream *s3 = NULL;
    OK(gaio_stream_create(c3, 0, 0, &s3));
    RUN_FAILS("a stream of another context", x, s3, in, ni, out, no);
    OK(gaio_stream_release(s3));
    OK(gaio_context_release(c3));
    OK(gaio_buffer_release(big));

    /* nothing ran: the outputs hold the poison; the stream still works */
    for (int i = 0; i < no; i++) expect_poison(e, "after the refused runs", b.out_buf[i], r->out[i].bytes);
    OK(gaio_stream_query(e->s1));
    gaio_future *done = NULL;
    OK(gaio_model_run(x, e->s1, in, ni, out, no, &done));
    wait_done("a good run after the refused ones", done);
    unsigned char *got[MAX_IO];
    fetch(e, e->s1, r, &b, got);
    for (int i = 0; i < no; i++) {
        ref_compare(r->name, "a good run after refused ones", i, &r->out[i], got[i]);
        free(got[i]);
    }
    printf("bad arguments (%s): refused with INVALID_ARG, nothing enqueued, the stream still runs\n", r->name);
    ref_unbind(r, &b);
    OK(gaio_model_exec_release(x));
    /* exec_create holds m: releasing the exec after the model works either way */
    OK(gaio_model_release(m));
}

/* ---- the whole reference ---- */

static void one_model(void *user, ref_model *r) {
    env *e = user;
    CHECK(e->nfiles < MAX_MODELS);
    snprintf(e->files[e->nfiles++], sizeof e->files[0], "%s", r->file);
    test_model(e, r);
    if (!e->bad_done && r->batch > 0 && r->in[0].dt == GAIO_DTYPE_F32) {
        test_bad_arguments(e, r);
        e->bad_done = 1;
    }
    e->nrun++;
}

static void one_skip(void *user, const char *name, const char *file) {
    env *e = user;
    (void)name;
    CHECK(e->nfiles < MAX_MODELS);
    snprintf(e->files[e->nfiles++], sizeof e->files[0], "%s", file);
}

/* The reference covers make_models.py's good models exactly: each once, run or
 * skipped (make_reference.py skips only the models it allows to be, and fails on any
 * other that onnxruntime refuses); a reference cut short must not pass. */
static void expect_every_model(env *e) {
    static char good[MAX_MODELS][1024];
    int ngood = ref_good_models(good, MAX_MODELS);
    for (int i = 0; i < e->nfiles; i++)
        for (int j = i + 1; j < e->nfiles; j++)
            if (!strcmp(e->files[i], e->files[j])) {
                fprintf(stderr, "the reference holds %s twice\n", e->files[i]);
                exit(1);
            }
    for (int i = 0; i < ngood; i++) {
        int found = 0;
        for (int j = 0; j < e->nfiles && !found; j++) found = !strcmp(good[i], e->files[j]);
        if (!found) {
            fprintf(stderr, "%s (a good model of %s/manifest.txt) is neither run nor skipped in the reference\n",
                    good[i], model_dir());
            exit(1);
        }
    }
    if (e->nrun != ngood - e->nskip || e->nfiles != ngood) {
        fprintf(stderr, "%d models run, %d skipped: make_models.py wrote %d good ones\n", e->nrun, e->nskip, ngood);
        exit(1);
    }
}

static void run(int device) {
    /* a build without ONNX: nothing to run (the GPU machine's own build) */
    gaio_model *probe = NULL;
    gaio_status st = gaio_model_load("/nonexistent/gaio-probe.onnx", &probe);
    if (st == GAIO_ERR_NOT_SUPPORTED && strstr(gaio_last_error(), "ONNX")) test_skip("%s", gaio_last_error());
    CHECK(st != GAIO_OK && probe == NULL);

    env *e = calloc(1, sizeof *e);
    CHECK(e);
    e->device = device;
    OK(gaio_context_create(device, NULL, &e->ctx));
    OK(gaio_stream_create(e->ctx, 0, 0, &e->s1));
    OK(gaio_stream_create(e->ctx, 0, 0, &e->s2));
    e->nskip = ref_foreach_ex(one_model, one_skip, e);
    expect_every_model(e);
    CHECK(e->nrun >= 1);
    if (!e->bad_done) {
        fprintf(stderr, "no f32 model with a symbolic batch in the reference: the bad arguments went untested\n");
        exit(1);
    }
    if (e->ncanary == 0) {
        fprintf(stderr, "no model of the reference has canaries (make_models.py's canary=): the f16 tolerance went "
                        "untested against a zeroed channel\n");
        exit(1);
    }
    printf("%d models agree with onnxruntime, in their precision and in f16 (worst: %s, %.3f of the f16 tolerance); "
           "%d canaries caught; %d not checked (onnxruntime refused them, as make_reference.py allows)\n",
           e->nrun, e->worst_f16_model, e->worst_f16_ratio, e->ncanary, e->nskip);
    OK(gaio_stream_release(e->s1));
    OK(gaio_stream_release(e->s2));
    OK(gaio_context_release(e->ctx));
    free(e);
}
