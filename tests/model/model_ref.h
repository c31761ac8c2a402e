/* onnxruntime's reference for the model tests: tests/model/make_reference.py's
 * GAIO_MODEL_DIR/ref/manifest.txt read into ref_model records (the inputs it fed, the
 * outputs onnxruntime gave, and for some models the outputs of canaries: the model
 * with one output channel of a layer zeroed), the comparison against them, and the
 * device tensors the tests bind to them. Also the good models of make_models.py's own
 * GAIO_MODEL_DIR/manifest.txt, to check that the reference covers every one. */
#ifndef GAIO_TEST_MODEL_REF_H
#define GAIO_TEST_MODEL_REF_H

#include <math.h>

#include "half.h"
#include "model_files.h"

#define REF_MAX_IO 8
#define REF_MAX_TOKENS 64
#define REF_MAX_CANARIES 64

/* The tolerances in the model's own precision: |got - ref| <= atol + rtol * |ref|. */
#define REF_F32_ATOL 1e-4
#define REF_F32_RTOL 1e-4
#define REF_F16_ATOL 1e-2
#define REF_F16_RTOL 1e-2

typedef struct io_ref {
    gaio_dtype dt;
    int32_t ndim;
    int64_t shape[GAIO_TENSOR_MAX_NDIM];
    size_t count, bytes;
    unsigned char *data; /* the .bin file */
} io_ref;

/* onnxruntime's outputs of the model with one output channel of a layer zeroed (its
 * weights and bias): shapes and dtypes those of the model's outputs. */
typedef struct ref_canary {
    char what[128]; /* "c1_w channel 3" */
    unsigned char *out[REF_MAX_IO];
} ref_canary;

typedef struct ref_model {
    char name[256], file[1024];
    int64_t batch;
    int nin, nout;
    io_ref in[REF_MAX_IO], out[REF_MAX_IO];
    /* owned as the outputs are: freed by ref_free while nout says so */
    int ncanary;
    ref_canary *canary;
} ref_model;

static inline size_t ref_dtype_size(gaio_dtype dt) { return dt == GAIO_DTYPE_F16 ? 2 : dt == GAIO_DTYPE_S64 ? 8 : 4; }

static inline double ref_element(const io_ref *r, const unsigned char *p, size_t i) {
    if (r->dt == GAIO_DTYPE_F16) {
        uint16_t h;
        memcpy(&h, p + 2 * i, 2);
        return from_half(h);
    }
    if (r->dt == GAIO_DTYPE_S64) { /* indices: any error of one is out of every tolerance */
        int64_t v;
        memcpy(&v, p + 8 * i, 8);
        return (double)v;
    }
    float f;
    memcpy(&f, p + 4 * i, 4);
    return f;
}

static inline int ref_split(char *s, char **tok) {
    int n = 0;
    for (char *t = strtok(s, " \t\r\n"); t; t = strtok(NULL, " \t\r\n")) {
        CHECK(n < REF_MAX_TOKENS);
        tok[n++] = t;
    }
    return n;
}

static inline const char *ref_field(char **tok, int n, const char *key) {
    size_t k = strlen(key);
    for (int i = 0; i < n; i++)
        if (!strncmp(tok[i], key, k) && tok[i][k] == '=') return tok[i] + k + 1;
    fprintf(stderr, "ref manifest: record for %s lacks %s\n", tok[1], key);
    exit(1);
}

/* "input|output DTYPE NDIM DIM... BIN": reads BIN, which must hold exactly the shape. */
static inline void ref_parse_io(io_ref *r, char **tok, int n) {
    CHECK(n >= 4);
    CHECK(!strcmp(tok[1], "f32") || !strcmp(tok[1], "f16") || !strcmp(tok[1], "s64"));
    r->dt = !strcmp(tok[1], "f16") ? GAIO_DTYPE_F16 : !strcmp(tok[1], "s64") ? GAIO_DTYPE_S64 : GAIO_DTYPE_F32;
    r->ndim = atoi(tok[2]);
    CHECK(r->ndim >= 1 && r->ndim <= GAIO_TENSOR_MAX_NDIM && n == 4 + r->ndim);
    r->count = 1;
    for (int d = 0; d < r->ndim; d++) {
        r->shape[d] = strtoll(tok[3 + d], NULL, 10);
        CHECK(r->shape[d] >= 1);
        r->count *= (size_t)r->shape[d];
    }
    r->bytes = r->count * ref_dtype_size(r->dt);
    char path[2048];
    CHECK(snprintf(path, sizeof path, "%s/ref/%s", model_dir(), tok[3 + r->ndim]) < (int)sizeof path);
    size_t size = 0;
    r->data = read_all(path, &size);
    if (size != r->bytes) {
        fprintf(stderr, "%s holds %zu bytes, its shape %zu\n", path, size, r->bytes);
        exit(1);
    }
}

/* Frees what r owns. A copy that took over the data may zero nin and nout of the
 * original, which then frees nothing (the canaries go with the outputs). */
static inline void ref_free(ref_model *r) {
    for (int i = 0; i < r->nin; i++) free(r->in[i].data);
    for (int i = 0; i < r->nout; i++) free(r->out[i].data);
    if (r->nout > 0) {
        for (int c = 0; c < r->ncanary; c++)
            for (int i = 0; i < r->nout; i++) free(r->canary[c].out[i]);
        free(r->canary);
    }
    r->ncanary = 0;
    r->canary = NULL;
}

/* "canary OUTPUT BIN WHAT...": onnxruntime's output OUTPUT of the model with one channel
 * zeroed (WHAT says which), in BIN, of the output's dtype and shape. Every output of a
 * canary comes in one record each, in order, before the next canary's. */
static inline void ref_parse_canary(ref_model *r, char **tok, int n, const char *line, const char *copy) {
    CHECK(n >= 4);
    int index = atoi(tok[1]);
    CHECK(index >= 0 && index < r->nout);
    if (index == 0) {
        CHECK(r->ncanary < REF_MAX_CANARIES);
        if (r->ncanary == 0) {
            r->canary = calloc(REF_MAX_CANARIES, sizeof *r->canary);
            CHECK(r->canary);
        }
        ref_canary *c = &r->canary[r->ncanary++];
        snprintf(c->what, sizeof c->what, "%s", line + (tok[3] - copy));
    }
    CHECK(r->ncanary >= 1);
    ref_canary *c = &r->canary[r->ncanary - 1];
    CHECK(c->out[index] == NULL && (index == 0 || c->out[index - 1] != NULL));
    char path[2048];
    CHECK(snprintf(path, sizeof path, "%s/ref/%s", model_dir(), tok[2]) < (int)sizeof path);
    size_t size = 0;
    c->out[index] = read_all(path, &size);
    if (size != r->out[index].bytes) {
        fprintf(stderr, "%s holds %zu bytes, output %d of %s %zu\n", path, size, index, r->name,
                r->out[index].bytes);
        exit(1);
    }
}

/* Calls fn for every model of the reference (the record is freed after), and prints
 * each model onnxruntime refused (make_reference.py writes those only for models it
 * allows to be refused), calling skip for it where not NULL; returns the number of
 * those. */
static inline int ref_foreach_ex(void (*fn)(void *user, ref_model *r),
                                 void (*skip)(void *user, const char *name, const char *file), void *user) {
    char mpath[2048];
    CHECK(snprintf(mpath, sizeof mpath, "%s/ref/manifest.txt", model_dir()) < (int)sizeof mpath);
    size_t size = 0;
    char *text = (char *)read_all(mpath, &size);
    int nskip = 0, in_model = 0;
    ref_model *r = calloc(1, sizeof *r);
    CHECK(r);
    char *save = NULL;
    for (char *ln = strtok_r(text, "\n", &save); ln; ln = strtok_r(NULL, "\n", &save)) {
        char copy[4096];
        snprintf(copy, sizeof copy, "%s", ln);
        char *tok[REF_MAX_TOKENS];
        int n = ref_split(copy, tok);
        if (n == 0) continue;
        if (!strcmp(tok[0], "skip")) {
            CHECK(!in_model && n >= 3);
            /* onnxruntime refused the model: said aloud, never silently */
            printf("%-16s %s: NOT CHECKED: %s\n", tok[1], tok[2], ln + (tok[n > 3 ? 3 : 2] - copy));
            if (skip) skip(user, tok[1], tok[2]);
            nskip++;
        } else if (!strcmp(tok[0], "canary")) {
            CHECK(in_model && r->nout >= 1);
            ref_parse_canary(r, tok, n, ln, copy);
        } else if (!strcmp(tok[0], "model")) {
            CHECK(!in_model && n >= 3);
            memset(r, 0, sizeof *r);
            snprintf(r->name, sizeof r->name, "%s", tok[1]);
            snprintf(r->file, sizeof r->file, "%s", tok[2]);
            r->batch = strtoll(ref_field(tok, n, "batch"), NULL, 10);
            in_model = 1;
        } else if (!strcmp(tok[0], "input") || !strcmp(tok[0], "output")) {
            CHECK(in_model && r->ncanary == 0);
            int out = tok[0][0] == 'o';
            CHECK((out ? r->nout : r->nin) < REF_MAX_IO);
            ref_parse_io(out ? &r->out[r->nout++] : &r->in[r->nin++], tok, n);
        } else if (!strcmp(tok[0], "end")) {
            CHECK(in_model && r->nin >= 1 && r->nout >= 1);
            for (int c = 0; c < r->ncanary; c++) CHECK(r->canary[c].out[r->nout - 1] != NULL); /* all outputs */
            fn(user, r);
            ref_free(r);
            in_model = 0;
        } else {
            fprintf(stderr, "ref manifest: unknown record '%s'\n", tok[0]);
            exit(1);
        }
    }
    CHECK(!in_model);
    free(r);
    free(text);
    return nskip;
}

static inline int ref_foreach(void (*fn)(void *user, ref_model *r), void *user) {
    return ref_foreach_ex(fn, NULL, user);
}

/* The FILE of every "good FILE ..." record of make_models.py's GAIO_MODEL_DIR/manifest.txt
 * (the models the reference must cover), at most max; returns how many there are. */
static inline int ref_good_models(char (*files)[1024], int max) {
    char mpath[2048];
    CHECK(snprintf(mpath, sizeof mpath, "%s/manifest.txt", model_dir()) < (int)sizeof mpath);
    size_t size = 0;
    char *text = (char *)read_all(mpath, &size);
    int n = 0;
    char *save = NULL;
    for (char *ln = strtok_r(text, "\n", &save); ln; ln = strtok_r(NULL, "\n", &save)) {
        char copy[4096];
        snprintf(copy, sizeof copy, "%s", ln);
        char *tok[REF_MAX_TOKENS];
        int nt = ref_split(copy, tok);
        if (nt < 2 || strcmp(tok[0], "good")) continue;
        CHECK(n < max);
        snprintf(files[n++], 1024, "%s", tok[1]);
    }
    free(text);
    return n;
}

/* ---- comparisons ---- */

/* How far got is from want (both of want's dtype and shape), against the tolerance
 * |got - ref| <= atol + rtol * |ref|:
 *   max_abs    max |got - ref|
 *   max_rel    max |got - ref| / |ref| over the elements with |ref| >= atol (below it
 *              the absolute term is the bound, and a relative error means nothing)
 *   max_ratio  max |got - ref| / (atol + rtol * |ref|): above 1 is out of tolerance
 *   worst      the element of max_ratio; nbad: the elements out of tolerance (NaN
 *              counts as out, with an infinite ratio). */
typedef struct ref_errors {
    double max_abs, max_rel, max_ratio;
    size_t worst, nbad;
} ref_errors;

static inline ref_errors ref_measure(const io_ref *want, const unsigned char *ref, const unsigned char *got,
                                     double atol, double rtol) {
    ref_errors e = {0, 0, -1, 0, 0};
    for (size_t i = 0; i < want->count; i++) {
        double w = ref_element(want, ref, i), g = ref_element(want, got, i), err = fabs(g - w);
        double tol = atol + rtol * fabs(w);
        if (!(err <= tol)) { /* NaN lands here too */
            e.nbad++;
            if (err != err) err = INFINITY;
        }
        if (err / tol > e.max_ratio) e.max_ratio = err / tol, e.worst = i;
        if (err > e.max_abs) e.max_abs = err;
        if (fabs(w) >= atol && err / fabs(w) > e.max_rel) e.max_rel = err / fabs(w);
    }
    if (e.max_ratio < 0) e.max_ratio = 0;
    return e;
}

/* Folds b into a (the worst of both; nbad summed). */
static inline void ref_errors_add(ref_errors *a, ref_errors b) {
    if (b.max_abs > a->max_abs) a->max_abs = b.max_abs;
    if (b.max_rel > a->max_rel) a->max_rel = b.max_rel;
    if (b.max_ratio > a->max_ratio) a->max_ratio = b.max_ratio, a->worst = b.worst;
    a->nbad += b.nbad;
}

/* got against onnxruntime's want within atol + rtol * |ref|; returns the errors, exits
 * naming the worst element when any is out of it. */
static inline ref_errors ref_compare_tol(const char *model, const char *what, int index, const io_ref *want,
                                         const unsigned char *got, double atol, double rtol) {
    ref_errors e = ref_measure(want, want->data, got, atol, rtol);
    if (e.nbad) {
        double w = ref_element(want, want->data, e.worst), g = ref_element(want, got, e.worst);
        fprintf(stderr,
                "%s: %s output %d: %zu of %zu elements out of tolerance; the worst, element %zu: got %.9g, "
                "onnxruntime %.9g (error %.3g, tolerance %.3g + %.3g * |ref| = %.3g)\n",
                model, what, index, e.nbad, want->count, e.worst, g, w, fabs(g - w), atol, rtol,
                atol + rtol * fabs(w));
        exit(1);
    }
    return e;
}

/* got against onnxruntime's want within the dtype's tolerance (f32: 1e-4 + 1e-4 |ref|;
 * f16: 1e-2 + 1e-2 |ref|); returns the max absolute error, exits when any element is
 * out of it. */
static inline double ref_compare(const char *model, const char *what, int index, const io_ref *want,
                                 const unsigned char *got) {
    int f16 = want->dt == GAIO_DTYPE_F16;
    return ref_compare_tol(model, what, index, want, got, f16 ? REF_F16_ATOL : REF_F32_ATOL,
                           f16 ? REF_F16_RTOL : REF_F32_RTOL)
        .max_abs;
}

static inline void ref_expect_same_bits(const char *model, const char *what, int index, const io_ref *r,
                                        const unsigned char *a, const unsigned char *b) {
    if (memcmp(a, b, r->bytes) == 0) return;
    size_t es = ref_dtype_size(r->dt);
    for (size_t i = 0; i < r->count; i++) {
        if (memcmp(a + i * es, b + i * es, es)) {
            fprintf(stderr, "%s: %s output %d element %zu: %.9g, the first run gave %.9g\n", model, what, index, i,
                    ref_element(r, b, i), ref_element(r, a, i));
            exit(1);
        }
    }
}

/* ---- device tensors ---- */

static inline gaio_tensor ref_alloc_tensor(gaio_context *ctx, const io_ref *r, gaio_buffer **buf) {
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_DEVICE, r->bytes, buf));
    return gaio_tensor_make(*buf, 0, r->dt, r->ndim, r->shape, GAIO_TENSOR_ROW_MAJOR);
}

static inline void ref_upload(gaio_context *ctx, gaio_stream *s, gaio_buffer *dst, const void *src, size_t bytes) {
    gaio_buffer *stage = NULL;
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_PINNED, bytes, &stage));
    void *p = NULL;
    OK(gaio_buffer_host_ptr(stage, &p));
    memcpy(p, src, bytes);
    OK(gaio_memcpy_async(s, dst, 0, stage, 0, bytes));
    OK(gaio_buffer_release(stage)); /* the copy holds it */
}

/* The bytes of src (synchronizes s); free() them. */
static inline unsigned char *ref_download(gaio_context *ctx, gaio_stream *s, gaio_buffer *src, size_t bytes) {
    gaio_buffer *stage = NULL;
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_PINNED, bytes, &stage));
    OK(gaio_memcpy_async(s, stage, 0, src, 0, bytes));
    OK(gaio_stream_synchronize(s));
    void *p = NULL;
    OK(gaio_buffer_host_ptr(stage, &p));
    unsigned char *out = malloc(bytes);
    CHECK(out);
    memcpy(out, p, bytes);
    OK(gaio_buffer_release(stage));
    return out;
}

/* A model's inputs (uploaded on s) and outputs (poisoned: all-ones bytes, NaN in both
 * dtypes, so that an output never written cannot pass) as device tensors. */
typedef struct ref_bound {
    gaio_buffer *in_buf[REF_MAX_IO], *out_buf[REF_MAX_IO];
    gaio_tensor in[REF_MAX_IO], out[REF_MAX_IO];
} ref_bound;

static inline void ref_bind(gaio_context *ctx, gaio_stream *s, const ref_model *r, ref_bound *b) {
    for (int i = 0; i < r->nin; i++) {
        b->in[i] = ref_alloc_tensor(ctx, &r->in[i], &b->in_buf[i]);
        ref_upload(ctx, s, b->in_buf[i], r->in[i].data, r->in[i].bytes);
    }
    for (int i = 0; i < r->nout; i++) {
        b->out[i] = ref_alloc_tensor(ctx, &r->out[i], &b->out_buf[i]);
        OK(gaio_memset_async(s, b->out_buf[i], 0, 0xFF, r->out[i].bytes));
    }
}

static inline void ref_unbind(const ref_model *r, ref_bound *b) {
    for (int i = 0; i < r->nin; i++) OK(gaio_buffer_release(b->in_buf[i]));
    for (int i = 0; i < r->nout; i++) OK(gaio_buffer_release(b->out_buf[i]));
}

#endif
