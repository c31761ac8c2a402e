/* onnxruntime's reference for the model tests: tests/model/make_reference.py's
 * GAIO_MODEL_DIR/ref/manifest.txt read into ref_model records (the inputs it fed, the
 * outputs onnxruntime gave), the comparison against them, and the device tensors the
 * tests bind to them. */
#ifndef GAIO_TEST_MODEL_REF_H
#define GAIO_TEST_MODEL_REF_H

#include <math.h>

#include "half.h"
#include "model_files.h"

#define REF_MAX_IO 8
#define REF_MAX_TOKENS 64

typedef struct io_ref {
    gaio_dtype dt;
    int32_t ndim;
    int64_t shape[GAIO_TENSOR_MAX_NDIM];
    size_t count, bytes;
    unsigned char *data; /* the .bin file */
} io_ref;

typedef struct ref_model {
    char name[256], file[1024];
    int64_t batch;
    int nin, nout;
    io_ref in[REF_MAX_IO], out[REF_MAX_IO];
} ref_model;

static inline size_t ref_dtype_size(gaio_dtype dt) { return dt == GAIO_DTYPE_F16 ? 2 : 4; }

static inline double ref_element(const io_ref *r, const unsigned char *p, size_t i) {
    if (r->dt == GAIO_DTYPE_F16) {
        uint16_t h;
        memcpy(&h, p + 2 * i, 2);
        return from_half(h);
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
    CHECK(!strcmp(tok[1], "f32") || !strcmp(tok[1], "f16"));
    r->dt = !strcmp(tok[1], "f16") ? GAIO_DTYPE_F16 : GAIO_DTYPE_F32;
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

static inline void ref_free(ref_model *r) {
    for (int i = 0; i < r->nin; i++) free(r->in[i].data);
    for (int i = 0; i < r->nout; i++) free(r->out[i].data);
}

/* Calls fn for every model of the reference (the record is freed after), and prints
 * each model onnxruntime refused; returns the number of those. */
static inline int ref_foreach(void (*fn)(void *user, ref_model *r), void *user) {
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
            nskip++;
        } else if (!strcmp(tok[0], "model")) {
            CHECK(!in_model && n >= 3);
            memset(r, 0, sizeof *r);
            snprintf(r->name, sizeof r->name, "%s", tok[1]);
            snprintf(r->file, sizeof r->file, "%s", tok[2]);
            r->batch = strtoll(ref_field(tok, n, "batch"), NULL, 10);
            in_model = 1;
        } else if (!strcmp(tok[0], "input") || !strcmp(tok[0], "output")) {
            CHECK(in_model);
            int out = tok[0][0] == 'o';
            CHECK((out ? r->nout : r->nin) < REF_MAX_IO);
            ref_parse_io(out ? &r->out[r->nout++] : &r->in[r->nin++], tok, n);
        } else if (!strcmp(tok[0], "end")) {
            CHECK(in_model && r->nin >= 1 && r->nout >= 1);
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

/* got against onnxruntime's want within the dtype's tolerance (f32: 1e-4 + 1e-4 |ref|;
 * f16: 1e-2 + 1e-2 |ref|); returns the max absolute error, exits on the first element
 * out of it. */
static inline double ref_compare(const char *model, const char *what, int index, const io_ref *want,
                                 const unsigned char *got) {
    double atol = want->dt == GAIO_DTYPE_F16 ? 1e-2 : 1e-4, rtol = atol, max_err = 0;
    for (size_t i = 0; i < want->count; i++) {
        double w = ref_element(want, want->data, i), g = ref_element(want, got, i), err = fabs(g - w);
        if (!(err <= atol + rtol * fabs(w))) { /* NaN lands here too */
            fprintf(stderr,
                    "%s: %s output %d element %zu of %zu: got %.9g, onnxruntime %.9g (error %.3g, tolerance %.3g "
                    "+ %.3g * |ref| = %.3g)\n",
                    model, what, index, i, want->count, g, w, err, atol, rtol, atol + rtol * fabs(w));
            exit(1);
        }
        if (err > max_err) max_err = err;
    }
    return max_err;
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
