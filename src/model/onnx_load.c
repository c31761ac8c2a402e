/* The ONNX loader: protobuf bytes -> gaio's graph (graph.h).
 *
 * The file is input from anywhere, so every count, size and name is checked before it
 * is used: dims against overflow and a sane total, raw data against the size the dims
 * give, external data against its file (and its path against leaving the model's
 * directory), every name a node reads against what produces it, the graph against
 * cycles. Operators and attributes are the operator table's (ops.c). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <onnx/onnx.pb-c.h>

#include "core/error.h"
#include "core/fail.h"
#include "model/model_internal.h"

#define MIN_OPSET 7
#define MAX_OPSET 22
#define MAX_TENSOR_BYTES ((uint64_t)1 << 36) /* 64 GiB: beyond any model gaio runs */

static const char *str(const char *s) { return s ? s : ""; }

int32_t gaio__graph_add_value(mgraph *g, const char *name) {
    if (g->nvalues == g->cap_values) {
        int32_t cap = g->cap_values ? g->cap_values * 2 : 64;
        mvalue *grown = realloc(g->values, (size_t)cap * sizeof *grown);
        if (!grown) return -1;
        g->values = grown;
        g->cap_values = cap;
    }
    mvalue *v = &g->values[g->nvalues];
    memset(v, 0, sizeof *v);
    v->name = gaio__bump_strdup(&g->bump, name);
    if (!v->name) return -1;
    v->ndim = -1;
    v->producer = -1;
    for (int i = 0; i < GAIO_MODEL_MAX_NDIM; i++) v->dim_names[i] = "";
    return g->nvalues++;
}

/* Linear: graphs of a few thousand values load in well under a millisecond per node,
 * and the loader runs once. */
int32_t gaio__graph_find(const mgraph *g, const char *name) {
    for (int32_t i = g->nvalues - 1; i >= 0; i--)
        if (!strcmp(g->values[i].name, name)) return i;
    return -1;
}

void gaio__graph_free(mgraph *g) {
    free(g->values);
    free(g->nodes);
    gaio__bump_free(&g->bump);
    memset(g, 0, sizeof *g);
}

/* ---- tensors ---- */

/* An external data file's path: relative, inside dir (no "..", no absolute path). */
static gaio_status external_path(const char *fn, const char *what, const char *dir, const char *location, char *out,
                                 size_t size) {
    if (!dir) return BAD("%s keeps its data in an external file, which a model loaded from memory cannot reach", what);
    if (!location || !location[0]) return BAD("%s's external data has no location", what);
    if (location[0] == '/') return BAD("%s's external data location '%.200s' is absolute: it must be inside the "
                                       "model's directory", what, location);
    for (const char *p = location; *p; p++)
        if (p[0] == '.' && p[1] == '.' && (p == location || p[-1] == '/') && (p[2] == '/' || p[2] == 0))
            return BAD("%s's external data location '%.200s' leaves the model's directory", what, location);
    int n = snprintf(out, size, "%s/%s", dir, location);
    if (n < 0 || (size_t)n >= size) return BAD("%s's external data path is too long", what);
    return GAIO_OK;
}

/* The tensor's bytes from its external file into the graph's bump allocator (*out),
 * allocated only once the file is known to hold them. */
static gaio_status read_external(const char *fn, mgraph *g, const Onnx__TensorProto *t, const char *what,
                                 const char *dir, uint64_t bytes, void **out) {
    const char *location = NULL;
    uint64_t offset = 0, length = bytes;
    bool has_length = false;
    for (size_t i = 0; i < t->n_external_data; i++) {
        const Onnx__StringStringEntryProto *e = t->external_data[i];
        const char *k = str(e->key), *v = str(e->value);
        char *end = NULL;
        if (!strcmp(k, "location")) {
            location = v;
        } else if (!strcmp(k, "offset") || !strcmp(k, "length")) {
            errno = 0;
            unsigned long long x = strtoull(v, &end, 10);
            if (errno || end == v || *end || v[0] == '-')
                return BAD("%s's external data %s '%.40s' is not a byte count", what, k, v);
            if (!strcmp(k, "offset"))
                offset = x;
            else
                length = x, has_length = true;
        } else if (strcmp(k, "checksum") != 0) {
            return BAD("%s's external data has an unknown key '%.60s'", what, k);
        }
    }
    if (has_length && length != bytes)
        return BAD("%s's external data is %llu bytes but its dims say %llu", what, (unsigned long long)length,
                   (unsigned long long)bytes);
    char path[4096];
    gaio_status st = external_path(fn, what, dir, location, path, sizeof path);
    if (st != GAIO_OK) return st;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return BAD("%s's external data file %.300s cannot be opened: %s", what, path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return BAD("%s's external data %.300s is not a regular file", what, path);
    }
    if (offset > (uint64_t)sb.st_size || bytes > (uint64_t)sb.st_size - offset) {
        close(fd);
        return BAD("%s's external data (%llu bytes from offset %llu) runs past the end of %.300s (%lld bytes)", what,
                   (unsigned long long)bytes, (unsigned long long)offset, path, (long long)sb.st_size);
    }
    char *dst = gaio__bump_alloc(&g->bump, bytes ? (size_t)bytes : 1);
    if (!dst) {
        close(fd);
        return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory for %s (%llu bytes)", what,
                          (unsigned long long)bytes);
    }
    uint64_t done = 0;
    while (done < bytes) {
        ssize_t r = pread(fd, dst + done, (size_t)(bytes - done), (off_t)(offset + done));
        if (r <= 0) {
            if (r < 0 && errno == EINTR) continue;
            int e = r < 0 ? errno : EIO;
            close(fd);
            return gaio__fail(GAIO_ERR_SYSTEM, fn, "reading %s's external data from %.300s: %s", what, path,
                              strerror(e));
        }
        done += (uint64_t)r;
    }
    close(fd);
    *out = dst;
    return GAIO_OK;
}

/* Reads tensor t (an initializer, or a Constant's value) into v. */
static gaio_status tensor_into(const char *fn, mgraph *g, const Onnx__TensorProto *t, const char *what,
                               const char *dir, mvalue *v) {
    int32_t elem = t->has_data_type ? t->data_type : MT_UNDEFINED;
    size_t es = gaio__mt_size(elem);
    if (!es)
        return UNSUPPORTED("%s has element type %s (%d): gaio takes float32, float16, int64 and int32 tensors",
                           what, gaio__mt_name(elem), (int)elem);
    if (t->n_dims > GAIO_MODEL_MAX_NDIM)
        return UNSUPPORTED("%s has %zu dimensions: gaio takes up to %d", what, t->n_dims, GAIO_MODEL_MAX_NDIM);
    if (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL && t->has_raw_data)
        return BAD("%s is external and has raw_data too", what);
    uint64_t count = 1;
    for (size_t i = 0; i < t->n_dims; i++) {
        if (t->dims[i] < 0) return BAD("%s has dimension %zu of %lld: dimensions are >= 0", what, i, (long long)t->dims[i]);
        if (__builtin_mul_overflow(count, (uint64_t)t->dims[i], &count) || count > MAX_TENSOR_BYTES)
            return BAD("%s's dimensions multiply past any real tensor", what);
        v->dims[i] = t->dims[i];
    }
    uint64_t bytes = count * es;
    if (bytes > MAX_TENSOR_BYTES) return BAD("%s would be %llu bytes: past any real tensor", what, (unsigned long long)bytes);
    v->elem = elem;
    v->ndim = (int32_t)t->n_dims;
    /* Memory is taken only once the data is known to be there: the dims alone are the
     * file's word, and a hostile file can claim any size (a libFuzzer finding). */
    void *data = NULL;
    bool external = t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    size_t have = elem == MT_F32 ? t->n_float_data : elem == MT_I64 ? t->n_int64_data : t->n_int32_data;
    if (!external && t->has_raw_data && t->raw_data.len != bytes)
        return BAD("%s's raw_data holds %zu bytes but its dims say %llu", what, t->raw_data.len,
                   (unsigned long long)bytes);
    if (!external && !t->has_raw_data && have != count)
        return BAD("%s holds %zu values but its dims say %llu", what, have, (unsigned long long)count);
    if (external) {
        gaio_status st = read_external(fn, g, t, what, dir, bytes, &data);
        if (st != GAIO_OK) return st;
    } else if (!(data = gaio__bump_alloc(&g->bump, bytes ? (size_t)bytes : 1))) {
        return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory for %s (%llu bytes)", what,
                          (unsigned long long)bytes);
    } else if (t->has_raw_data) {
        if (bytes) memcpy(data, t->raw_data.data, (size_t)bytes); /* little-endian, as ONNX stores it */
    } else {
        /* The typed fields: float_data; int64_data; int32_data (also f16's bits). */
        for (uint64_t i = 0; i < count; i++) {
            if (elem == MT_F32)
                ((float *)data)[i] = t->float_data[i];
            else if (elem == MT_I64)
                ((int64_t *)data)[i] = t->int64_data[i];
            else if (elem == MT_I32)
                ((int32_t *)data)[i] = t->int32_data[i];
            else if (elem == MT_BOOL)
                ((uint8_t *)data)[i] = t->int32_data[i] != 0;
            else
                ((uint16_t *)data)[i] = (uint16_t)t->int32_data[i];
        }
    }
    v->data = data;
    v->bytes = (size_t)bytes;
    return GAIO_OK;
}

/* ---- graph inputs ---- */

static gaio_status input_type(const char *fn, mgraph *g, const Onnx__ValueInfoProto *vi, mvalue *v, const char *what) {
    const char *name = v->name;
    const Onnx__TypeProto *tp = vi->type;
    if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type)
        return UNSUPPORTED("graph %s '%s' is not a tensor", what, name);
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    int32_t elem = tt->has_elem_type ? tt->elem_type : MT_UNDEFINED;
    /* Integers and booleans feed the steps that take them (indices, conditions, moved
     * data: model/exec_index.c); the build refuses them elsewhere. */
    if (elem != MT_F32 && elem != MT_F16 && elem != MT_I32 && elem != MT_I64 && elem != MT_BOOL)
        return UNSUPPORTED("graph %s '%s' has element type %s (%d): gaio takes float32, float16, int32, int64 or "
                           "bool tensors", what, name, gaio__mt_name(elem), (int)elem);
    v->elem = elem;
    if (!tt->shape) return UNSUPPORTED("graph %s '%s' has no shape: gaio needs each input's rank", what, name);
    if (tt->shape->n_dim > GAIO_MODEL_MAX_NDIM)
        return UNSUPPORTED("graph %s '%s' has %zu dimensions: gaio takes up to %d", what, name, tt->shape->n_dim,
                           GAIO_MODEL_MAX_NDIM);
    v->ndim = (int32_t)tt->shape->n_dim;
    for (size_t i = 0; i < tt->shape->n_dim; i++) {
        const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
        if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
            if (d->dim_value == 0)
                return UNSUPPORTED("graph %s '%s' has dimension %zu of 0: gaio runs no empty tensors", what, name, i);
            if (d->dim_value < 1 || d->dim_value > (int64_t)1 << 31)
                return BAD("graph %s '%s' has dimension %zu of %lld", what, name, i, (long long)d->dim_value);
            v->dims[i] = d->dim_value;
        } else {
            v->dims[i] = -1;
            const char *p = d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM ? d->dim_param : "?";
            if (!(v->dim_names[i] = gaio__bump_strdup(&g->bump, p)))
                return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory");
        }
    }
    return GAIO_OK;
}

/* ---- nodes ---- */

/* A Constant node's value (value, value_float(s), value_int(s)) into its output. */
static gaio_status constant_value(const char *fn, mgraph *g, const Onnx__NodeProto *p, const mnode *n,
                                  const char *dir) {
    if (p->n_attribute != 1)
        return BAD("node '%s' (Constant) has %zu attributes: it takes exactly one value", n->name, p->n_attribute);
    const Onnx__AttributeProto *a = p->attribute[0];
    mvalue *v = &g->values[n->out[0]];
    char what[256];
    snprintf(what, sizeof what, "node '%.100s' (Constant)", n->name);
    const char *an = str(a->name);
    if (!strcmp(an, "value")) {
        if (!a->t) return BAD("%s: its value is not a tensor", what);
        return tensor_into(fn, g, a->t, what, dir, v);
    }
    bool is_list = !strcmp(an, "value_floats") || !strcmp(an, "value_ints");
    bool is_float = !strcmp(an, "value_float") || !strcmp(an, "value_floats");
    if (!is_list && strcmp(an, "value_float") && strcmp(an, "value_int"))
        return UNSUPPORTED("%s: attribute '%s' is not supported (value, value_float(s), value_int(s) are)", what, an);
    size_t count = is_list ? (is_float ? a->n_floats : a->n_ints) : 1;
    size_t es = is_float ? 4 : 8;
    void *data = gaio__bump_array(&g->bump, count ? count : 1, es);
    if (!data) return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory");
    for (size_t i = 0; i < count; i++) {
        if (is_float)
            ((float *)data)[i] = is_list ? a->floats[i] : a->f;
        else
            ((int64_t *)data)[i] = is_list ? a->ints[i] : a->i;
    }
    v->elem = is_float ? MT_F32 : MT_I64;
    v->ndim = is_list ? 1 : 0;
    v->dims[0] = (int64_t)count;
    v->data = data;
    v->bytes = count * es;
    return GAIO_OK;
}

/* Kahn's order of the nodes; GAIO_ERR_INVALID_ARG naming a node on a cycle. */
static gaio_status topo_sort(const char *fn, mgraph *g, const Onnx__NodeProto *const *protos,
                             const Onnx__NodeProto **sorted_protos) {
    int32_t n = g->nnodes;
    int32_t *pending = calloc((size_t)n + 1, sizeof *pending), *order = calloc((size_t)n + 1, sizeof *order);
    mnode *sorted = calloc((size_t)n + 1, sizeof *sorted);
    if (!pending || !order || !sorted) {
        free(pending), free(order), free(sorted);
        return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory");
    }
    for (int32_t i = 0; i < n; i++)
        for (int32_t j = 0; j < g->nodes[i].nin; j++) {
            int32_t v = g->nodes[i].in[j];
            if (v >= 0 && g->values[v].producer >= 0) pending[i]++;
        }
    int32_t head = 0, tail = 0;
    for (int32_t i = 0; i < n; i++)
        if (!pending[i]) order[tail++] = i;
    while (head < tail) {
        int32_t i = order[head++];
        /* Each consumer of i's outputs loses one pending input per edge. */
        for (int32_t c = 0; c < n; c++) {
            if (!pending[c]) continue;
            for (int32_t j = 0; j < g->nodes[c].nin; j++) {
                int32_t v = g->nodes[c].in[j];
                if (v >= 0 && g->values[v].producer == i && --pending[c] == 0) order[tail++] = c;
            }
        }
    }
    gaio_status st = GAIO_OK;
    if (tail < n) {
        int32_t stuck = 0;
        while (stuck < n && !pending[stuck]) stuck++;
        st = BAD("the graph has a cycle: node '%s' (%s) depends on its own output", g->nodes[stuck].name,
                 g->nodes[stuck].op_type);
    } else {
        int32_t *where = pending; /* reuse: old index -> new */
        for (int32_t k = 0; k < n; k++) {
            sorted[k] = g->nodes[order[k]];
            sorted_protos[k] = protos[order[k]];
            where[order[k]] = k;
        }
        for (int32_t v = 0; v < g->nvalues; v++)
            if (g->values[v].producer >= 0) g->values[v].producer = where[g->values[v].producer];
        memcpy(g->nodes, sorted, (size_t)n * sizeof *sorted);
    }
    free(pending), free(order), free(sorted);
    return st;
}

static gaio_status nodes(const char *fn, mgraph *g, const Onnx__GraphProto *gp, const char *dir) {
    size_t count = gp->n_node;
    if (count > (1u << 20)) return BAD("the graph has %zu nodes: past any model gaio runs", count);
    g->nodes = calloc(count + 1, sizeof *g->nodes);
    const Onnx__NodeProto **protos = calloc(count + 1, sizeof *protos);
    if (!g->nodes || !protos) {
        free(protos);
        return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory");
    }
    gaio_status st = GAIO_OK;
    /* First every node with its outputs, so that inputs resolve whatever the file's order. */
    for (size_t i = 0; i < count && st == GAIO_OK; i++) {
        const Onnx__NodeProto *p = gp->node[i];
        mnode *n = &g->nodes[i];
        n->name = gaio__bump_strdup(&g->bump, p->name);
        n->op_type = gaio__bump_strdup(&g->bump, p->op_type);
        if (!n->name || !n->op_type) {
            st = gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory");
            break;
        }
        g->nnodes = (int32_t)i + 1;
        const char *domain = str(p->domain);
        if (domain[0] && strcmp(domain, "ai.onnx")) {
            st = UNSUPPORTED("node '%s' (%s) is of domain '%s': gaio runs the default domain's operators", n->name,
                             n->op_type, domain);
            break;
        }
        int32_t op = gaio__op_lookup(n->op_type);
        if (op < 0) {
            st = UNSUPPORTED("node '%s' (%s): gaio does not run this operator", n->name, n->op_type);
            break;
        }
        n->op = (model_op)op;
        if (p->n_input > 64 || p->n_output > 16 || p->n_output == 0) {
            st = BAD("node '%s' (%s) has %zu inputs and %zu outputs", n->name, n->op_type, p->n_input, p->n_output);
            break;
        }
        n->nin = (int32_t)p->n_input, n->nout = (int32_t)p->n_output;
        n->in = gaio__bump_array(&g->bump, p->n_input + 1, sizeof *n->in);
        n->out = gaio__bump_array(&g->bump, p->n_output, sizeof *n->out);
        if (!n->in || !n->out) {
            st = gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory");
            break;
        }
        for (size_t j = 0; j < p->n_output && st == GAIO_OK; j++) {
            const char *name = str(p->output[j]);
            if (!name[0]) {
                n->out[j] = -1; /* an omitted optional output */
                continue;
            }
            int32_t prev = gaio__graph_find(g, name);
            if (prev >= 0) {
                const mvalue *pv = &g->values[prev];
                st = BAD("value '%s' is written by node '%s' (%s) and %s", name, n->name, n->op_type,
                         pv->producer >= 0 ? "an earlier node" : pv->is_input ? "is a graph input" : "is an initializer");
                break;
            }
            int32_t v = gaio__graph_add_value(g, name);
            if (v < 0) {
                st = gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory");
                break;
            }
            g->values[v].producer = (int32_t)i;
            n->out[j] = v;
        }
        protos[i] = p;
    }
    for (int32_t i = 0; i < g->nnodes && st == GAIO_OK; i++) {
        const Onnx__NodeProto *p = protos[i];
        mnode *n = &g->nodes[i];
        for (size_t j = 0; j < p->n_input; j++) {
            const char *name = str(p->input[j]);
            if (!name[0]) {
                n->in[j] = -1;
                continue;
            }
            int32_t v = gaio__graph_find(g, name);
            if (v < 0) {
                st = BAD("node '%s' (%s) reads '%s', which no graph input, initializer or node gives", n->name,
                         n->op_type, name);
                break;
            }
            n->in[j] = v;
        }
    }
    const Onnx__NodeProto **sorted = st == GAIO_OK ? calloc(count + 1, sizeof *sorted) : NULL;
    if (st == GAIO_OK && !sorted) st = gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory");
    if (st == GAIO_OK && (st = topo_sort(fn, g, protos, sorted)) == GAIO_OK)
        memcpy(protos, sorted, (size_t)g->nnodes * sizeof *protos);
    free(sorted);
    if (st == GAIO_OK) {
        g->src_values = gaio__bump_array(&g->bump, (size_t)g->nvalues + 1, sizeof *g->src_values);
        g->src_attrs = gaio__bump_array(&g->bump, (size_t)g->nnodes + 1, sizeof *g->src_attrs);
        if (!g->src_values || !g->src_attrs) st = gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory");
        else memcpy(g->src_values, g->values, (size_t)g->nvalues * sizeof *g->values);
    }
    /* In order: attributes, Constant values, then types and shapes (folding what can). */
    for (int32_t i = 0; i < g->nnodes && st == GAIO_OK; i++) {
        mnode *n = &g->nodes[i];
        if (n->op == OP_CONSTANT) {
            if (n->nin != 0 || n->nout != 1 || n->out[0] < 0)
                st = BAD("node '%s' (Constant) must have no inputs and one output", n->name);
            else
                st = constant_value(fn, g, protos[i], n, dir);
            continue;
        }
        if ((st = gaio__op_parse_attrs(fn, g, protos[i], n)) != GAIO_OK) break;
        g->src_attrs[i] = n->a;
        if (g->deferred) continue;
        st = gaio__op_infer(fn, g, n);
        if (st == GAIO_ERR_NOT_SUPPORTED && gaio__graph_deferrable(g)) {
            /* A symbolic height or width the operator needs: shapes come at build. */
            g->deferred = true;
            if (!(g->deferred_why = gaio__bump_strdup(&g->bump, gaio_last_error())))
                st = gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory");
            else
                st = GAIO_OK;
        }
    }
    free(protos);
    return st;
}

/* Drops the nodes whose outputs all became constants: they never run. */
gaio_status gaio__graph_drop_folded(const char *fn, mgraph *g) {
    int32_t *where = calloc((size_t)g->nnodes + 1, sizeof *where);
    if (!where) return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory");
    int32_t kept = 0;
    for (int32_t i = 0; i < g->nnodes; i++) {
        const mnode *n = &g->nodes[i];
        bool folded = true;
        for (int32_t j = 0; j < n->nout; j++)
            if (n->out[j] >= 0 && !g->values[n->out[j]].data) folded = false;
        where[i] = folded ? -1 : kept;
        if (!folded) g->nodes[kept++] = *n;
    }
    for (int32_t v = 0; v < g->nvalues; v++) {
        mvalue *val = &g->values[v];
        if (val->producer >= 0) val->producer = val->data ? -1 : where[val->producer];
    }
    free(where);
    g->nnodes = kept;
    return GAIO_OK;
}

static gaio_status graph(const char *fn, mgraph *g, const Onnx__GraphProto *gp, const char *dir) {
    if (gp->n_sparse_initializer) return UNSUPPORTED("the graph has sparse initializers");
    gaio_status st;
    for (size_t i = 0; i < gp->n_initializer; i++) {
        const Onnx__TensorProto *t = gp->initializer[i];
        const char *name = str(t->name);
        if (!name[0]) return BAD("initializer %zu has no name", i);
        if (gaio__graph_find(g, name) >= 0) return BAD("initializer '%s' is defined twice", name);
        int32_t v = gaio__graph_add_value(g, name);
        if (v < 0) return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory");
        char what[256];
        snprintf(what, sizeof what, "initializer '%.200s'", name);
        if ((st = tensor_into(fn, g, t, what, dir, &g->values[v])) != GAIO_OK) return st;
    }
    g->inputs = gaio__bump_array(&g->bump, gp->n_input + 1, sizeof *g->inputs);
    g->outputs = gaio__bump_array(&g->bump, gp->n_output + 1, sizeof *g->outputs);
    if (!g->inputs || !g->outputs) return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory");
    for (size_t i = 0; i < gp->n_input; i++) {
        const char *name = str(gp->input[i]->name);
        if (!name[0]) return BAD("graph input %zu has no name", i);
        int32_t v = gaio__graph_find(g, name);
        if (v >= 0) {
            if (g->values[v].is_input) return BAD("graph input '%s' is listed twice", name);
            continue; /* an initializer listed as an input too (older exporters): a weight */
        }
        if ((v = gaio__graph_add_value(g, name)) < 0) return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory");
        g->values[v].is_input = true;
        if ((st = input_type(fn, g, gp->input[i], &g->values[v], "input")) != GAIO_OK) return st;
        g->inputs[g->ninputs++] = v;
    }
    if (!g->ninputs)
        return UNSUPPORTED("the graph has no inputs: gaio runs models fed by at least one input (one of constants "
                           "only is a constant)");
    if ((st = nodes(fn, g, gp, dir)) != GAIO_OK) return st;
    if (!gp->n_output) return BAD("the graph has no outputs");
    for (size_t i = 0; i < gp->n_output; i++) {
        const char *name = str(gp->output[i]->name);
        int32_t v = gaio__graph_find(g, name);
        if (v < 0) return BAD("graph output '%s' is produced by no node", name);
        mvalue *val = &g->values[v];
        if (g->deferred && val->ndim < 0) { /* typed by its declaration until an engine's shapes come */
            if ((st = input_type(fn, g, gp->output[i], val, "output")) != GAIO_OK) return st;
        }
        if (val->elem != MT_F32 && val->elem != MT_F16 && val->elem != MT_I32 && val->elem != MT_I64 &&
            val->elem != MT_BOOL)
            return UNSUPPORTED("graph output '%s' is %s: gaio's outputs are float32, float16, int32, int64 or bool",
                               name, gaio__mt_name(val->elem));
        val->is_output = true;
        g->outputs[g->noutputs++] = v;
    }
    return g->deferred ? GAIO_OK : gaio__graph_drop_folded(fn, g);
}

gaio_status gaio__onnx_load(const char *fn, const void *data, size_t size, const char *dir, mgraph *g) {
    if (!size) return BAD("the model is empty (0 bytes)");
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, size, data);
    if (!m) return BAD("not an ONNX model: its %zu bytes do not parse as a ModelProto (truncated or corrupt)", size);
    gaio_status st = GAIO_OK;
    g->ir_version = m->has_ir_version ? m->ir_version : 0;
    bool found = false;
    for (size_t i = 0; i < m->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = m->opset_import[i];
        const char *d = str(o->domain);
        if (!d[0] || !strcmp(d, "ai.onnx")) g->opset = o->has_version ? o->version : 0, found = true;
    }
    char producer[256];
    snprintf(producer, sizeof producer, "%.120s%s%.120s", str(m->producer_name), m->producer_version ? " " : "",
             str(m->producer_version));
    if (!(g->producer = gaio__bump_strdup(&g->bump, producer))) st = gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory");
    else if (g->ir_version < 3) st = UNSUPPORTED("the model's IR version is %lld: gaio loads 3 and later", (long long)g->ir_version);
    else if (!found) st = BAD("the model imports no opset of the default domain");
    else if (g->opset < MIN_OPSET || g->opset > MAX_OPSET)
        st = UNSUPPORTED("the model uses opset %lld: gaio loads opsets %d to %d (re-export it, e.g. torch.onnx.export "
                         "with opset_version=17)",
                         (long long)g->opset, MIN_OPSET, MAX_OPSET);
    else if (!m->graph) st = BAD("the model has no graph");
    else st = graph(fn, g, m->graph, dir);
    onnx__model_proto__free_unpacked(m, NULL);
    return st;
}
