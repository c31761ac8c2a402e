/* gaio_engine_save / gaio_engine_load: an engine as a file.
 *
 * The file is a header (magic, format, gaio's version, the payload's size and a 64-bit
 * checksum of it) and a payload: the device it was built for, the resolved options,
 * the graph as the executor reads it (values, nodes with their parsed attributes, the
 * constants that are not weights), the plan (steps, where every value lives), what runs
 * each convolution, the weights in their final precision and layout, and cuDNN's
 * serialized plans. Loading needs no ONNX file, folds nothing and tunes nothing.
 *
 * A file is input: every count, index, offset and size is bounded and checked against
 * the tables it refers to before anything uses it, so a truncated, corrupted or crafted
 * file is GAIO_ERR_INVALID_ARG saying what is wrong (fuzz/fuzz_engine.c). Saving writes
 * a temporary file beside the path and renames it over: a reader never sees half. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/object.h"
#include "gaio/buffer.h"
#include "gaio/context.h"
#include "gaio/device.h"
#include "gaio/memory.h"
#include "gaio/stream.h"
#include "gaio/version.h"
#include "model/engine_internal.h"

#define MAGIC "GAIOENGN"
#define FORMAT 11u /* 2: Dropout, Softmax coerce_2d (opsets 7-12); 3: Slice .. Where, element-wise ops, Gelu's
                   * approximate; 4: integer values and weights; 5: the reductions, indexing,
                   * ConvTranspose, general Resize and the normalizations; 6: Einsum; 7: values'
                   * channel pitch (padded stems); 8: batch norm steps with an activation, their
                   * statistics folded to a scale and shift; Concat steps reading an earlier
                   * Concat's output for their first inputs; 9: GELU chains as one step, MatMul
                   * biases and activations, Transposes that rename an NHWC value's dimensions
                   * as views; MatMul steps' absorbed scales and transpose; attention steps; 10:
                   * strided views of attention's operands; 11: MatMul steps writing the rows of
                   * an NHWC value (rows_nhwc); Concat inputs written in place as channel slices */
#define HEADER_BYTES 32
#define MAX_COUNT (1 << 24)           /* values, nodes, steps */
#define MAX_NODE_IO 4096
#define MAX_BYTES ((uint64_t)1 << 40) /* weights, arena, one constant */

/* ---- writing ---- */

typedef struct wbuf {
    unsigned char *p;
    size_t n, cap;
    bool oom;
} wbuf;

static void put(wbuf *w, const void *data, size_t n) {
    if (w->oom) return;
    if (w->cap - w->n < n) {
        size_t cap = w->cap ? w->cap : 4096;
        while (cap - w->n < n) {
            if (cap > SIZE_MAX / 2) {
                w->oom = true;
                return;
            }
            cap *= 2;
        }
        unsigned char *grown = realloc(w->p, cap);
        if (!grown) {
            w->oom = true;
            return;
        }
        w->p = grown, w->cap = cap;
    }
    if (n) memcpy(w->p + w->n, data, n);
    w->n += n;
}

static void put_u8(wbuf *w, uint8_t v) { put(w, &v, 1); }
static void put_i32(wbuf *w, int32_t v) { put(w, &v, 4); }
static void put_u32(wbuf *w, uint32_t v) { put(w, &v, 4); }
static void put_i64(wbuf *w, int64_t v) { put(w, &v, 8); }
static void put_u64(wbuf *w, uint64_t v) { put(w, &v, 8); }
static void put_f32(wbuf *w, float v) { put(w, &v, 4); }
static void put_str(wbuf *w, const char *s) {
    if (!s) s = "";
    size_t n = strlen(s);
    put_u32(w, (uint32_t)n);
    put(w, s, n);
}

/* A checksum that catches corruption (not an adversary): 8 bytes at a time. */
static uint64_t checksum(const unsigned char *p, size_t n) {
    uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 29;
    }
    for (; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
    h ^= h >> 33;
    return h * 0xc4ceb9fe1a85ec53ull;
}

/* What the engine was built for: the device kind, its name and compute capability. */
static gaio_status device_of(const char *fn, gaio_context *ctx, gaio_device_props *p) {
    int dev = 0;
    gaio_status st = gaio_context_device(ctx, &dev);
    if (st == GAIO_OK) st = gaio_device_get_props(dev, p);
    if (st != GAIO_OK) return gaio__fail(st, fn, "%s", gaio_last_error());
    return GAIO_OK;
}

/* Float weights live in the weights' bytes; integer constants stay in the graph too,
 * as a load resolves from them what they stand for (axes, K, shapes). */
static bool has_data_to_keep(const gaio_engine *e, int32_t v, const void *data) {
    return data && (e->v[v].mem != XM_WEIGHT || (e->v[v].dtype != GAIO_DTYPE_F32 && e->v[v].dtype != GAIO_DTYPE_F16));
}

static void put_graph(wbuf *w, const gaio_engine *e) {
    const mgraph *g = &e->model->g;
    put_i64(w, g->ir_version), put_i64(w, g->opset), put_str(w, g->producer);
    put_i32(w, g->nvalues);
    for (int32_t i = 0; i < g->nvalues; i++) {
        const mvalue *v = &g->values[i];
        int32_t nd = v->ndim < 0 ? 0 : v->ndim;
        put_str(w, v->name), put_i32(w, v->elem), put_i32(w, v->ndim);
        for (int32_t d = 0; d < nd; d++) put_i64(w, v->dims[d]);
        for (int32_t d = 0; d < nd; d++) put_str(w, v->dim_names[d]);
        bool keep = has_data_to_keep(e, i, v->data);
        put_u8(w, keep);
        if (keep) put_u64(w, v->bytes), put(w, v->data, v->bytes);
        put_i32(w, v->producer), put_u8(w, v->is_input), put_u8(w, v->is_output);
    }
    put_i32(w, g->nnodes);
    for (int32_t i = 0; i < g->nnodes; i++) {
        const mnode *n = &g->nodes[i];
        put_str(w, n->name), put_str(w, n->op_type), put_i32(w, (int32_t)n->op);
        put_i32(w, n->nin), put_i32(w, n->nout);
        for (int32_t j = 0; j < n->nin; j++) put_i32(w, n->in[j]);
        for (int32_t j = 0; j < n->nout; j++) put_i32(w, n->out[j]);
        put_u32(w, (uint32_t)sizeof n->a), put(w, &n->a, sizeof n->a);
    }
    put_i32(w, g->ninputs);
    for (int32_t i = 0; i < g->ninputs; i++) put_i32(w, g->inputs[i]);
    put_i32(w, g->noutputs);
    for (int32_t i = 0; i < g->noutputs; i++) put_i32(w, g->outputs[i]);
}

static void put_plan(wbuf *w, const gaio_engine *e) {
    const xplan *p = &e->plan;
    put_i32(w, p->nsteps);
    for (int32_t i = 0; i < p->nsteps; i++) {
        const xstep *s = &p->steps[i];
        put_i32(w, (int32_t)(s->n - e->model->g.nodes));
        put_i32(w, s->out), put_i32(w, s->w), put_i32(w, s->b), put_i32(w, s->res);
        put_u8(w, s->has_act), put_i32(w, (int32_t)s->act.op), put_f32(w, s->act.alpha), put_f32(w, s->act.beta);
        put_u8(w, s->gelu), put_i32(w, s->x), put_u8(w, s->trans_b), put_f32(w, s->alpha), put_u8(w, s->attention);
        put_u8(w, s->rows_nhwc);
        put_u8(w, e->copy[i]);
        put_str(w, e->kernel[i]);
    }
    put_i32(w, p->folded_bn), put_i32(w, p->fused_add), put_i32(w, p->fused_act), put_i32(w, p->fused_attention);
    put_i32(w, p->nextra);
    for (int32_t i = 0; i < p->nextra; i++) {
        const xconst *c = &p->extra[i];
        put_i32(w, c->elem), put_i32(w, c->ndim);
        for (int32_t d = 0; d < c->ndim; d++) put_i64(w, c->dims[d]);
        bool keep = has_data_to_keep(e, e->model->g.nvalues + i, c->data);
        put_u8(w, keep);
        if (keep) put_u64(w, c->bytes), put(w, c->data, c->bytes);
    }
    put_i32(w, e->nv);
    for (int32_t i = 0; i < e->nv; i++) {
        const xvalue *x = &e->v[i];
        put_i32(w, x->ndim);
        for (int32_t d = 0; d < x->ndim; d++) put_i64(w, x->dims[d]);
        put_i32(w, (int32_t)x->dtype), put_i32(w, (int32_t)x->mem), put_u64(w, x->off), put_i32(w, x->root);
        put_u8(w, x->nhwc), put_u8(w, x->staged), put_i32(w, x->input), put_i32(w, x->cpitch);
        put_i32(w, x->vndim), put_i64(w, x->voff);
        for (int32_t d = 0; d < x->vndim; d++) put_i64(w, x->vdims[d]), put_i64(w, x->vstrides[d]);
    }
}

/* The weights as the device holds them, copied down. */
static gaio_status download_weights(const char *fn, const gaio_engine *e, wbuf *w) {
    size_t n = e->weight_bytes ? e->weight_bytes : 1;
    gaio_buffer *stage = NULL;
    gaio_stream *s = NULL;
    void *p = NULL;
    gaio_status st = gaio_buffer_alloc(e->ctx, GAIO_MEM_PINNED, n, &stage);
    if (st == GAIO_OK) st = gaio_stream_create(e->ctx, 0, 0, &s);
    if (st == GAIO_OK) st = gaio_memcpy_async(s, stage, 0, e->weights, 0, n);
    if (st == GAIO_OK) st = gaio_stream_synchronize(s);
    if (st == GAIO_OK) st = gaio_buffer_host_ptr(stage, &p);
    if (st == GAIO_OK) put(w, p, e->weight_bytes);
    if (s) gaio_stream_release(s);
    if (stage) gaio_buffer_release(stage);
    if (st != GAIO_OK) return gaio__fail(st, fn, "reading the weights back: %s", gaio_last_error());
    return GAIO_OK;
}

static gaio_status put_conv_plans(const char *fn, const gaio_engine *e, wbuf *w) {
    int32_t n = 0;
    for (int32_t i = 0; i < e->plan.nsteps; i++) n += e->conv_plans[i] != NULL;
    put_i32(w, n);
    for (int32_t i = 0; i < e->plan.nsteps; i++) {
        if (!e->conv_plans[i]) continue;
        void *data = NULL;
        size_t size = 0;
        gaio_status st = gaio__conv_plan_export(fn, e->ctx, e->conv_plans[i], &data, &size);
        if (st != GAIO_OK) return st;
        put_i32(w, i), put_u64(w, size), put(w, data, size);
        free(data);
    }
    return GAIO_OK;
}

static gaio_status write_all(const char *fn, const char *path, const wbuf *w) {
    char tmp[4096];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= sizeof tmp)
        return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "path is too long");
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return gaio__fail(GAIO_ERR_SYSTEM, fn, "cannot create %s: %s", tmp, strerror(errno));
    size_t done = 0;
    int err = 0;
    while (done < w->n) {
        ssize_t r = write(fd, w->p + done, w->n - done);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            err = r < 0 ? errno : EIO;
            break;
        }
        done += (size_t)r;
    }
    if (!err && fsync(fd) != 0) err = errno;
    if (close(fd) != 0 && !err) err = errno;
    if (!err && rename(tmp, path) != 0) err = errno;
    if (err) {
        unlink(tmp);
        return gaio__fail(GAIO_ERR_SYSTEM, fn, "cannot write %s: %s", path, strerror(err));
    }
    return GAIO_OK;
}

gaio_status gaio_engine_save(gaio_engine *e, const char *path) {
    const char *fn = __func__;
    GAIO_REQUIRE_PTR(e);
    if (!path || !path[0]) return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "path is NULL or empty");
    gaio_status st = gaio__engine_ready(fn, e);
    if (st != GAIO_OK) return st;
    if (e->prof_min)
        return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn, "the engine has a shape profile, which engine files do not "
                          "hold yet: build it from the model (or save an engine built without one)");
    gaio_device_props dp;
    if ((st = device_of(fn, e->ctx, &dp)) != GAIO_OK) return st;
    wbuf w = {0};
    unsigned char header[HEADER_BYTES] = {0};
    put(&w, header, sizeof header); /* filled in last */
    put_i32(&w, (int32_t)dp.kind), put_str(&w, dp.name), put_i32(&w, dp.compute_major), put_i32(&w, dp.compute_minor);
    put_i64(&w, e->batch), put_u8(&w, e->f16), put_u8(&w, e->nhwc), put_u8(&w, e->cuda_graph), put_u32(&w, e->flags);
    put_graph(&w, e);
    put_plan(&w, e);
    put_u64(&w, e->weight_bytes), put_u64(&w, e->arena_bytes);
    st = download_weights(fn, e, &w);
    if (st == GAIO_OK) st = put_conv_plans(fn, e, &w);
    if (st == GAIO_OK && w.oom) st = gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory writing the engine");
    if (st == GAIO_OK) {
        uint32_t format = FORMAT, version = (uint32_t)GAIO_VERSION;
        uint64_t size = w.n - HEADER_BYTES, sum = checksum(w.p + HEADER_BYTES, size);
        memcpy(w.p, MAGIC, 8);
        memcpy(w.p + 8, &format, 4), memcpy(w.p + 12, &version, 4);
        memcpy(w.p + 16, &size, 8), memcpy(w.p + 24, &sum, 8);
        st = write_all(fn, path, &w);
    }
    free(w.p);
    return st;
}

/* The header's size and checksum made right for the bytes after it: for the fuzzer,
 * whose mutations would otherwise stop at the checksum. */
void gaio__engine_file_seal(unsigned char *data, size_t size);
void gaio__engine_file_seal(unsigned char *data, size_t size) {
    if (size < HEADER_BYTES || memcmp(data, MAGIC, 8)) return;
    uint64_t n = size - HEADER_BYTES, sum = checksum(data + HEADER_BYTES, (size_t)n);
    memcpy(data + 16, &n, 8), memcpy(data + 24, &sum, 8);
}

/* ---- reading ---- */

typedef struct rbuf {
    const unsigned char *p;
    size_t n, at;
    const char *bad; /* the first thing found wrong */
} rbuf;

static bool take(rbuf *r, void *out, size_t n) {
    if (r->bad) return false;
    if (r->n - r->at < n) {
        r->bad = "it ends early (truncated)";
        if (out) memset(out, 0, n);
        return false;
    }
    if (out) memcpy(out, r->p + r->at, n);
    r->at += n;
    return true;
}

static uint8_t get_u8(rbuf *r) {
    uint8_t v = 0;
    take(r, &v, 1);
    return v;
}
static int32_t get_i32(rbuf *r) {
    int32_t v = 0;
    take(r, &v, 4);
    return v;
}
static uint32_t get_u32(rbuf *r) {
    uint32_t v = 0;
    take(r, &v, 4);
    return v;
}
static int64_t get_i64(rbuf *r) {
    int64_t v = 0;
    take(r, &v, 8);
    return v;
}
static uint64_t get_u64(rbuf *r) {
    uint64_t v = 0;
    take(r, &v, 8);
    return v;
}
static float get_f32(rbuf *r) {
    float v = 0;
    take(r, &v, 4);
    return v;
}

static void fail(rbuf *r, const char *why) {
    if (!r->bad) r->bad = why;
}

#define FAIL_RETURN(r, why)                                                                                          \
    do {                                                                                                             \
        fail((r), (why));                                                                                            \
        return;                                                                                                      \
    } while (0)

/* Whether count records of at least min_bytes each can still follow: tables are sized
 * by what the file holds, never by a count alone. */
static bool fits(const rbuf *r, int64_t count, size_t min_bytes) {
    return count >= 0 && count <= MAX_COUNT && (uint64_t)count <= (r->n - r->at) / min_bytes;
}

/* A string into the bump allocator (NULL with r->bad set when it cannot be). */
static char *get_str(rbuf *r, gaio_bump *a) {
    uint32_t n = get_u32(r);
    if (r->bad) return NULL;
    if (n > r->n - r->at) {
        fail(r, "a string runs past the end");
        return NULL;
    }
    char *s = gaio__bump_alloc(a, (size_t)n + 1);
    if (!s) {
        fail(r, "out of host memory");
        return NULL;
    }
    take(r, s, n);
    s[n] = 0;
    return s;
}

/* Element count of dims (all >= 0), or false on overflow. */
static bool count_dims(int32_t ndim, const int64_t *dims, uint64_t *out) {
    uint64_t n = 1;
    for (int32_t d = 0; d < ndim; d++) {
        if (dims[d] < 0 || (dims[d] && n > MAX_BYTES / (uint64_t)dims[d])) return false;
        n *= (uint64_t)dims[d];
    }
    *out = n;
    return true;
}

/* Optional constant data of elem over dims: the byte count must be the shape's. */
static void *get_data(rbuf *r, gaio_bump *a, int32_t elem, int32_t ndim, const int64_t *dims, size_t *bytes) {
    *bytes = 0;
    if (!get_u8(r)) return NULL;
    uint64_t n = get_u64(r), count = 0;
    if (r->bad) return NULL;
    if (!count_dims(ndim, dims, &count) || gaio__mt_size(elem) == 0 || n != count * gaio__mt_size(elem) ||
        n > r->n - r->at) {
        fail(r, "a constant's size does not match its type and shape");
        return NULL;
    }
    void *p = gaio__bump_alloc(a, (size_t)n ? (size_t)n : 1);
    if (!p) {
        fail(r, "out of host memory");
        return NULL;
    }
    take(r, p, (size_t)n);
    *bytes = (size_t)n;
    return p;
}

static bool known_elem(int32_t e) {
    return e == MT_UNDEFINED || e == MT_F32 || e == MT_F16 || e == MT_I32 || e == MT_I64 || gaio__mt_size(e) > 0;
}

static void get_graph(rbuf *r, mgraph *g) {
    g->ir_version = get_i64(r), g->opset = get_i64(r);
    g->producer = get_str(r, &g->bump);
    int32_t nv = get_i32(r);
    if (!fits(r, nv, 19)) fail(r, "its value count is out of range");
    if (r->bad) return;
    g->values = calloc((size_t)nv + 1, sizeof *g->values);
    if (!g->values) FAIL_RETURN(r, "out of host memory");
    g->nvalues = g->cap_values = nv;
    for (int32_t i = 0; i < nv && !r->bad; i++) {
        mvalue *v = &g->values[i];
        v->name = get_str(r, &g->bump);
        v->elem = get_i32(r), v->ndim = get_i32(r);
        if (!known_elem(v->elem) || v->ndim < -1 || v->ndim > GAIO_MODEL_MAX_NDIM)
            FAIL_RETURN(r, "a value's type or rank is out of range");
        int32_t nd = v->ndim < 0 ? 0 : v->ndim;
        for (int32_t d = 0; d < nd; d++) {
            v->dims[d] = get_i64(r);
            if (v->dims[d] < -1) FAIL_RETURN(r, "a value has a negative dimension");
        }
        for (int32_t d = 0; d < nd; d++) v->dim_names[d] = get_str(r, &g->bump);
        v->data = get_data(r, &g->bump, v->elem, nd, v->dims, &v->bytes);
        v->producer = get_i32(r), v->is_input = get_u8(r) != 0, v->is_output = get_u8(r) != 0;
    }
    int32_t nn = get_i32(r);
    if (!fits(r, nn, 24 + sizeof(mattrs))) fail(r, "its node count is out of range");
    if (r->bad) return;
    g->nodes = calloc((size_t)nn + 1, sizeof *g->nodes);
    if (!g->nodes) FAIL_RETURN(r, "out of host memory");
    g->nnodes = nn;
    for (int32_t i = 0; i < nn && !r->bad; i++) {
        mnode *n = &g->nodes[i];
        n->name = get_str(r, &g->bump), n->op_type = get_str(r, &g->bump);
        int32_t op = get_i32(r);
        n->nin = get_i32(r), n->nout = get_i32(r);
        if (op < 0 || op >= OP_COUNT || n->nin < 0 || n->nin > MAX_NODE_IO || n->nout < 1 || n->nout > MAX_NODE_IO ||
            !fits(r, (int64_t)n->nin + n->nout, 4))
            FAIL_RETURN(r, "a node's operator or input / output count is out of range");
        n->op = (model_op)op;
        n->in = gaio__bump_array(&g->bump, (size_t)n->nin + 1, sizeof *n->in);
        n->out = gaio__bump_array(&g->bump, (size_t)n->nout + 1, sizeof *n->out);
        if (!n->in || !n->out) FAIL_RETURN(r, "out of host memory");
        for (int32_t j = 0; j < n->nin; j++)
            if ((n->in[j] = get_i32(r)) < -1 || n->in[j] >= nv) FAIL_RETURN(r, "a node reads a value that does not exist");
        for (int32_t j = 0; j < n->nout; j++)
            if ((n->out[j] = get_i32(r)) < 0 || n->out[j] >= nv)
                FAIL_RETURN(r, "a node writes a value that does not exist");
        if (get_u32(r) != sizeof n->a) FAIL_RETURN(r, "its node attributes are of another layout");
        take(r, &n->a, sizeof n->a);
        if (n->a.nperm < 0 || n->a.nperm > GAIO_MODEL_MAX_NDIM || n->a.naxes < 0 || n->a.naxes > GAIO_MODEL_MAX_NDIM)
            FAIL_RETURN(r, "a node's attributes are out of range");
    }
    for (int io = 0; io < 2 && !r->bad; io++) {
        int32_t n = get_i32(r);
        if (n < 0 || n > nv || !fits(r, n, 4)) FAIL_RETURN(r, "its input or output count is out of range");
        int32_t *list = gaio__bump_array(&g->bump, (size_t)n + 1, sizeof *list);
        if (!list) FAIL_RETURN(r, "out of host memory");
        for (int32_t i = 0; i < n; i++)
            if ((list[i] = get_i32(r)) < 0 || list[i] >= nv) FAIL_RETURN(r, "a graph input or output does not exist");
        if (io == 0) g->inputs = list, g->ninputs = n;
        else g->outputs = list, g->noutputs = n;
    }
}

/* The inputs a node's step reads unconditionally must exist (run_step indexes them). */
static bool step_inputs_ok(const mnode *n) {
    int32_t need = 1;
    switch (n->op) {
    case OP_GEMM:
    case OP_MATMUL:
    case OP_ADD:
    case OP_SUB:
    case OP_MUL:
    case OP_DIV:
    case OP_CONV_TRANSPOSE:
        need = 2;
        break;
    case OP_BATCH_NORM:
        need = 5;
        break;
    case OP_CONCAT:
        need = n->nin;
        break;
    default:
        break;
    }
    if (n->nin < need || need < 1) return false;
    for (int32_t j = 0; j < need; j++)
        if (n->in[j] < 0) return false;
    return true;
}

static void get_plan(rbuf *r, gaio_engine *e) {
    mgraph *g = &e->model->g;
    xplan *p = &e->plan;
    int32_t ns = get_i32(r);
    if (!fits(r, ns, 49)) fail(r, "its step count is out of range");
    if (r->bad) return;
    p->steps = calloc((size_t)ns + 1, sizeof *p->steps);
    e->copy = calloc((size_t)ns + 1, sizeof *e->copy);
    e->conv_plans = calloc((size_t)ns + 1, sizeof *e->conv_plans);
    e->kernel = calloc((size_t)ns + 1, sizeof *e->kernel);
    if (!p->steps || !e->copy || !e->conv_plans || !e->kernel) FAIL_RETURN(r, "out of host memory");
    p->nsteps = ns;
    int32_t nv_max = MAX_COUNT; /* indexes are checked against e->nv below, once known */
    for (int32_t i = 0; i < ns && !r->bad; i++) {
        xstep *s = &p->steps[i];
        int32_t node = get_i32(r);
        if (node < 0 || node >= g->nnodes) FAIL_RETURN(r, "a step runs a node that does not exist");
        s->n = &g->nodes[node];
        s->out = get_i32(r), s->w = get_i32(r), s->b = get_i32(r), s->res = get_i32(r);
        s->has_act = get_u8(r) != 0;
        s->act.op = (gaio_unary_op)get_i32(r), s->act.alpha = get_f32(r), s->act.beta = get_f32(r);
        s->gelu = get_u8(r) != 0;
        s->x = get_i32(r), s->trans_b = get_u8(r) != 0, s->alpha = get_f32(r), s->attention = get_u8(r) != 0;
        s->rows_nhwc = get_u8(r) != 0;
        e->copy[i] = get_u8(r) != 0;
        uint32_t len = get_u32(r);
        if (len >= GAIO_ENGINE_KERNEL_TEXT) FAIL_RETURN(r, "a step's kernel text is too long");
        take(r, e->kernel[i], len);
        if (s->out < 0 || s->out >= nv_max || s->w < -1 || s->b < -1 || s->res < -1 || s->x < -1 ||
            (s->x >= 0 && s->n->op != OP_MATMUL) || !step_inputs_ok(s->n) ||
            (s->attention && (s->n->op != OP_MATMUL || s->w < 0 || s->res < 0)) ||
            (s->rows_nhwc && (s->n->op != OP_MATMUL || s->attention)) ||
            (s->n->op == OP_CONV && s->w < 0) || (s->n->op == OP_BATCH_NORM && (s->w < 0) != (s->b < 0)) ||
            (s->n->op == OP_CONCAT && s->res >= 0 && (s->w < 1 || s->w >= s->n->nin)) ||
            (s->gelu && ((s->n->op != OP_DIV && s->n->op != OP_MUL) || s->n->nin != 2)))
            FAIL_RETURN(r, "a step's values are out of range");
    }
    p->folded_bn = get_i32(r), p->fused_add = get_i32(r), p->fused_act = get_i32(r), p->fused_attention = get_i32(r);
    int32_t nx = get_i32(r);
    if (!fits(r, nx, 9)) fail(r, "its constant count is out of range");
    if (r->bad) return;
    p->extra = calloc((size_t)nx + 1, sizeof *p->extra);
    if (!p->extra) FAIL_RETURN(r, "out of host memory");
    for (int32_t i = 0; i < nx && !r->bad; i++) {
        xconst *c = &p->extra[i];
        c->elem = get_i32(r), c->ndim = get_i32(r);
        if (!known_elem(c->elem) || c->ndim < 0 || c->ndim > GAIO_MODEL_MAX_NDIM)
            FAIL_RETURN(r, "a folded constant's type or rank is out of range");
        for (int32_t d = 0; d < c->ndim; d++)
            if ((c->dims[d] = get_i64(r)) < 0) FAIL_RETURN(r, "a folded constant has a negative dimension");
        p->nextra = i + 1;
        size_t bytes = 0;
        void *data = get_data(r, &g->bump, c->elem, c->ndim, c->dims, &bytes);
        if (data) { /* the plan frees its constants: a copy of its own */
            c->data = malloc(bytes ? bytes : 1);
            if (!c->data) FAIL_RETURN(r, "out of host memory");
            memcpy(c->data, data, bytes);
            c->bytes = bytes;
        }
    }
    int32_t nv = get_i32(r);
    if (r->bad) return;
    if (nv != g->nvalues + p->nextra || !fits(r, nv, 30))
        FAIL_RETURN(r, "its value table does not match the graph and plan");
    e->nv = nv;
    e->v = calloc((size_t)nv + 1, sizeof *e->v);
    if (!e->v) FAIL_RETURN(r, "out of host memory");
    for (int32_t i = 0; i < nv && !r->bad; i++) {
        xvalue *x = &e->v[i];
        x->ndim = get_i32(r);
        if (x->ndim < 0 || x->ndim > GAIO_MODEL_MAX_NDIM) FAIL_RETURN(r, "a value's rank is out of range");
        for (int32_t d = 0; d < x->ndim; d++) x->dims[d] = get_i64(r);
        int32_t dt = get_i32(r), mem = get_i32(r);
        x->off = (size_t)get_u64(r);
        x->root = get_i32(r), x->nhwc = get_u8(r) != 0, x->staged = get_u8(r) != 0, x->input = get_i32(r);
        x->cpitch = get_i32(r);
        x->vndim = get_i32(r), x->voff = get_i64(r);
        if (x->vndim < 0 || x->vndim > GAIO_TENSOR_MAX_NDIM) FAIL_RETURN(r, "a view's rank is out of range");
        for (int32_t d = 0; d < x->vndim; d++) x->vdims[d] = get_i64(r), x->vstrides[d] = get_i64(r);
        uint64_t count = 0;
        if ((dt != GAIO_DTYPE_F32 && dt != GAIO_DTYPE_F16 && dt != GAIO_DTYPE_S32 && dt != GAIO_DTYPE_S64 &&
             dt != GAIO_DTYPE_U8) ||
            mem < XM_NONE || mem > XM_ARENA ||
            !count_dims(x->ndim, x->dims, &count) || x->root < 0 || x->root >= nv || x->input < -1 ||
            x->input >= g->ninputs ||
            (x->cpitch != 0 && (x->ndim != 4 || !x->nhwc || x->cpitch < x->dims[1] || x->cpitch > (1 << 20))))
            FAIL_RETURN(r, "a value's type, shape or place is out of range");
        x->dtype = (gaio_dtype)dt, x->mem = (xmem)mem;
    }
    for (int32_t i = 0; i < ns && !r->bad; i++) {
        const xstep *s = &p->steps[i];
        if (s->out >= nv || s->w >= nv || s->b >= nv || s->res >= nv || s->x >= nv)
            FAIL_RETURN(r, "a step's values are out of range");
    }
}

/* Every place inside its buffer, every view over a root, every graph input where the
 * executor looks for it. */
static void check_places(rbuf *r, const gaio_engine *e) {
    const mgraph *g = &e->model->g;
    for (int32_t i = 0; i < e->nv && !r->bad; i++) {
        const xvalue *x = &e->v[i];
        if (e->v[x->root].root != x->root) FAIL_RETURN(r, "a view's memory is itself a view");
        if (x->vndim > 0) { /* a strided view (views.c): inside its root's elements */
            const xvalue *rx = &e->v[x->root];
            int64_t last = x->voff;
            bool ok = x->voff >= 0 && x->mem == XM_NONE && rx->dtype == x->dtype && x->root != i;
            for (int32_t d = 0; d < x->vndim && ok; d++) {
                ok = x->vdims[d] >= 1 && x->vstrides[d] >= 0 && x->vstrides[d] <= INT64_MAX / x->vdims[d];
                if (ok) last += (x->vdims[d] - 1) * x->vstrides[d];
            }
            if (!ok || last < 0 || (uint64_t)last >= gaio__xvalue_count(rx))
                FAIL_RETURN(r, "a strided view lies outside its memory");
        }
        if (x->vndim == 0 && x->cpitch > 0 && x->root != i) { /* a channel slice (engine.c concat_in_place) */
            const xvalue *rx = &e->v[x->root];
            if (rx->ndim != 4 || !rx->nhwc || rx->cpitch || rx->dims[1] != x->cpitch || rx->dtype != x->dtype ||
                rx->dims[0] != x->dims[0] || rx->dims[2] != x->dims[2] || rx->dims[3] != x->dims[3] || x->voff < 0 ||
                x->voff > x->cpitch - x->dims[1] || x->mem != XM_NONE)
                FAIL_RETURN(r, "a channel slice lies outside its memory");
        } else if (x->vndim == 0 && x->voff != 0) {
            FAIL_RETURN(r, "a value has an offset but is no view");
        }
        size_t bytes = gaio__xvalue_bytes(x), lim = x->mem == XM_WEIGHT ? e->weight_bytes : e->arena_bytes;
        if (x->mem != XM_NONE && (x->off > lim || bytes > lim - x->off))
            FAIL_RETURN(r, "a value lies outside its buffer");
    }
    for (int32_t i = 0; i < g->ninputs && !r->bad; i++)
        if (e->v[g->inputs[i]].input != i) FAIL_RETURN(r, "a graph input's value does not say it is one");
    /* The arena holds the values placed in it: a placement by lifetimes never needs more
     * than all of them side by side (each aligned), so a larger size is no engine's (the
     * fuzzer's flipped high bit made a load allocate 4 GiB of scratch). */
    uint64_t all = GAIO_ENGINE_ALIGN;
    for (int32_t i = 0; i < e->nv && !r->bad; i++)
        if (e->v[i].mem == XM_ARENA) {
            const uint64_t b = gaio__xvalue_bytes(&e->v[i]) ? gaio__xvalue_bytes(&e->v[i]) : 1;
            all += (b + GAIO_ENGINE_ALIGN - 1) / GAIO_ENGINE_ALIGN * GAIO_ENGINE_ALIGN;
        }
    if (!r->bad && e->arena_bytes > all) FAIL_RETURN(r, "the arena is larger than its values need");
}

static gaio_status bad(const char *fn, const char *what, const char *why) {
    return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "%s is not a gaio engine: %s", what, why);
}

static gaio_status load(const char *fn, const unsigned char *data, size_t size, const char *what, gaio_context *ctx,
                        gaio_engine **out) {
    double t0 = gaio__now_s();
    if (size < HEADER_BYTES || memcmp(data, MAGIC, 8)) return bad(fn, what, "no gaio engine header");
    uint32_t format, version;
    uint64_t psize, sum;
    memcpy(&format, data + 8, 4), memcpy(&version, data + 12, 4);
    memcpy(&psize, data + 16, 8), memcpy(&sum, data + 24, 8);
    if (format != FORMAT || version != (uint32_t)gaio_version())
        return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn, "%s is engine format %u of gaio %u.%u.%u; this is format %u of "
                          "gaio %u.%u.%u: build the engine again", what, format, version / 10000, version / 100 % 100,
                          version % 100, FORMAT, (unsigned)gaio_version() / 10000,
                          (unsigned)gaio_version() / 100 % 100, (unsigned)gaio_version() % 100);
    if (psize != size - HEADER_BYTES) return bad(fn, what, "its size is not the one its header gives (truncated?)");
    if (checksum(data + HEADER_BYTES, (size_t)psize) != sum)
        return bad(fn, what, "its checksum does not match (the file is corrupted)");
    rbuf r = {data + HEADER_BYTES, (size_t)psize, 0, NULL};
    gaio_device_props mine, built;
    gaio_status st = device_of(fn, ctx, &mine);
    if (st != GAIO_OK) return st;
    memset(&built, 0, sizeof built);
    built.kind = (gaio_device_kind)get_i32(&r);
    uint32_t nlen = get_u32(&r);
    if (nlen >= sizeof built.name) fail(&r, "its device name is too long");
    take(&r, built.name, nlen);
    built.compute_major = get_i32(&r), built.compute_minor = get_i32(&r);
    if (r.bad) return bad(fn, what, r.bad);
    if (built.kind != mine.kind || (mine.kind == GAIO_DEVICE_CUDA &&
                                    (strcmp(built.name, mine.name) || built.compute_major != mine.compute_major ||
                                     built.compute_minor != mine.compute_minor)))
        return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn, "%s was built for %s (sm_%d%d); ctx's device is %s (sm_%d%d): "
                          "build the engine on this device", what, built.name, built.compute_major, built.compute_minor,
                          mine.name, mine.compute_major, mine.compute_minor);
    gaio_model *m = calloc(1, sizeof *m);
    if (!m) return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory");
    gaio__ref_init(&m->ref);
    gaio_engine *e = gaio__engine_new(m, ctx);
    gaio_model_release(m); /* the engine's now */
    if (!e) {
        gaio__graph_free(&m->g);
        free(m);
        return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory");
    }
    e->loaded = true;
    e->batch = get_i64(&r), e->f16 = get_u8(&r) != 0, e->nhwc = get_u8(&r) != 0, e->cuda_graph = get_u8(&r) != 0;
    e->flags = get_u32(&r);
    if (e->cuda_graph && !e->gpu) fail(&r, "it asks for CUDA graphs on the host");
    if ((e->flags & GAIO__ENGINE_F16_FAST) && !e->f16) fail(&r, "it asks for f16 accumulation in an f32 engine");
    const char *env = getenv("GAIO_MODEL_CUDA_GRAPH");
    if (env && !strcmp(env, "0")) e->cuda_graph = false;
    get_graph(&r, &m->g);
    get_plan(&r, e);
    uint64_t wb = get_u64(&r), ab = get_u64(&r);
    if (!r.bad && (wb > MAX_BYTES || ab > MAX_BYTES || wb > r.n - r.at)) fail(&r, "its weight or arena size is wrong");
    e->weight_bytes = (size_t)wb, e->arena_bytes = (size_t)ab;
    check_places(&r, e);
    const unsigned char *weights = r.p + r.at;
    take(&r, NULL, (size_t)wb);
    int32_t nplans = get_i32(&r);
    if (!r.bad && (nplans < 0 || nplans > e->plan.nsteps)) fail(&r, "its plan count is out of range");
    if (r.bad) {
        gaio__engine_free(e);
        return bad(fn, what, r.bad);
    }
    st = gaio__engine_check_graph(fn, &m->g);
    double t1 = gaio__now_s();
    /* Not on a thread beside the plans: tried, it made cuDNN's rebuild of them 0.1 s
     * slower than the upload itself takes (H200, ResNet-50). */
    if (st == GAIO_OK) st = gaio__engine_upload(fn, e, weights, e->weight_bytes);
    double t2 = gaio__now_s(), t_first = 0;
    for (int32_t i = 0; i < nplans && st == GAIO_OK; i++) {
        int32_t step = get_i32(&r);
        uint64_t n = get_u64(&r);
        if (r.bad || step < 0 || step >= e->plan.nsteps ||
            (e->plan.steps[step].n->op != OP_CONV && e->plan.steps[step].n->op != OP_CONV_TRANSPOSE) ||
            e->conv_plans[step] || n > r.n - r.at) {
            st = bad(fn, what, r.bad ? r.bad : "a cuDNN plan's record is out of range");
            break;
        }
        st = gaio__conv_plan_import(fn, ctx, r.p + r.at, (size_t)n, &e->conv_plans[step]);
        if (i == 0) t_first = gaio__now_s() - t2; /* also opens cuDNN and makes the context's handle */
        if (st != GAIO_OK) st = gaio__fail(st, fn, "%s: %s", what, gaio_last_error());
        take(&r, NULL, (size_t)n);
    }
    if (st == GAIO_OK && r.at != r.n) st = bad(fn, what, "it has bytes after its end");
    if (st == GAIO_OK) gaio__engine_graph_hazards(e);
    if (st == GAIO_OK) st = gaio__engine_pack_host(e);
    if (st != GAIO_OK) {
        gaio__engine_free(e);
        return st;
    }
    e->build_seconds = gaio__now_s() - t0;
    if (getenv("GAIO_MODEL_TRACE")) {
        int distinct = 0; /* steps of one shape share their plan */
        for (int32_t i = 0; i < e->plan.nsteps; i++) {
            bool seen = !e->conv_plans[i];
            for (int32_t k = 0; k < i && !seen; k++) seen = e->conv_plans[k] == e->conv_plans[i];
            distinct += !seen;
        }
        fprintf(stderr, "gaio: engine loaded in %.3f s: checked and parsed %.3f s, weights up %.3f s, %d cuDNN plans "
                "(%d distinct) %.3f s (the first %.3f s)\n", e->build_seconds, t1 - t0, t2 - t1, (int)nplans, distinct,
                gaio__now_s() - t2, t_first);
    }
    *out = e;
    return GAIO_OK;
}

gaio_status gaio_engine_load_memory(const void *data, size_t size, gaio_context *ctx, gaio_engine **out) {
    GAIO_REQUIRE_PTR(out);
    *out = NULL;
    GAIO_REQUIRE_PTR(data);
    GAIO_REQUIRE_PTR(ctx);
    return load(__func__, data, size, "the data", ctx, out);
}

gaio_status gaio_engine_load(const char *path, gaio_context *ctx, gaio_engine **out) {
    const char *fn = __func__;
    GAIO_REQUIRE_PTR(out);
    *out = NULL;
    GAIO_REQUIRE_PTR(path);
    GAIO_REQUIRE_PTR(ctx);
    void *data = NULL;
    size_t size = 0;
    gaio_status st = gaio__read_file(fn, path, MAX_BYTES, "too large to be an engine", &data, &size);
    if (st != GAIO_OK) return st;
    st = load(fn, data, size, path, ctx, out);
    free(data);
    return st;
}
