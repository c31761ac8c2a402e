/* The public model functions: loading (a file or memory), refcounting, inspection. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "model/engine_internal.h"
#include "model/model_internal.h"

#define MAX_MODEL_BYTES ((size_t)2 << 30) /* protobuf's own limit for one message */

static gaio_status load(const char *fn, const void *data, size_t size, const char *dir, gaio_model **out) {
    gaio_model *m = calloc(1, sizeof *m);
    if (!m) return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory for the model");
    gaio__ref_init(&m->ref);
    gaio_status st = gaio__onnx_load(fn, data, size, dir, &m->g);
    if (st != GAIO_OK) {
        gaio__graph_free(&m->g);
        free(m);
        return st;
    }
    *out = m;
    return GAIO_OK;
}

gaio_status gaio__read_file(const char *fn, const char *path, size_t max, const char *too_large, void **data,
                            size_t *size) {
    *data = NULL, *size = 0;
    if (!path[0]) return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "path is empty");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return gaio__fail(errno == ENOENT ? GAIO_ERR_NOT_FOUND : GAIO_ERR_SYSTEM, fn, "cannot open %s: %s", path,
                          strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "%s is not a regular file", path);
    }
    if ((uint64_t)sb.st_size > max) {
        close(fd);
        return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn, "%s is %lld bytes: %s", path, (long long)sb.st_size, too_large);
    }
    size_t n = (size_t)sb.st_size, done = 0;
    unsigned char *p = malloc(n ? n : 1);
    if (!p) {
        close(fd);
        return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory reading %s (%zu bytes)", path, n);
    }
    while (done < n) {
        ssize_t r = read(fd, p + done, n - done);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            int e = r < 0 ? errno : EIO;
            free(p);
            close(fd);
            return gaio__fail(GAIO_ERR_SYSTEM, fn, "reading %s: %s", path, strerror(e));
        }
        done += (size_t)r;
    }
    close(fd);
    *data = p, *size = n;
    return GAIO_OK;
}

gaio_status gaio_model_load(const char *path, gaio_model **out) {
    GAIO_REQUIRE_PTR(out);
    *out = NULL;
    GAIO_REQUIRE_PTR(path);
    void *data = NULL;
    size_t size = 0;
    gaio_status st = gaio__read_file(__func__, path, MAX_MODEL_BYTES,
                                     "an ONNX file holds at most 2 GiB (larger models keep their weights as external "
                                     "data)", &data, &size);
    if (st != GAIO_OK) return st;
    char *copy = strdup(path);
    if (!copy) {
        free(data);
        return GAIO_FAIL(GAIO_ERR_NO_MEMORY, "out of host memory");
    }
    st = load(__func__, data, size, dirname(copy), out);
    free(copy);
    free(data);
    return st;
}

gaio_status gaio_model_load_memory(const void *data, size_t size, gaio_model **out) {
    GAIO_REQUIRE_PTR(out);
    *out = NULL;
    GAIO_REQUIRE_PTR(data);
    return load(__func__, data, size, NULL, out);
}

gaio_status gaio_model_retain(gaio_model *m) {
    GAIO_REQUIRE_PTR(m);
    gaio__ref_inc(&m->ref);
    return GAIO_OK;
}

gaio_status gaio_model_release(gaio_model *m) {
    if (m && gaio__ref_dec(&m->ref)) {
        gaio_model *parent = m->parent;
        gaio__graph_free(&m->g);
        free(m);
        gaio_model_release(parent);
    }
    return GAIO_OK;
}

gaio_status gaio_model_summarize(const gaio_model *m, gaio_model_summary *out) {
    GAIO_REQUIRE_PTR(out);
    memset(out, 0, sizeof *out);
    GAIO_REQUIRE_PTR(m);
    const mgraph *g = &m->g;
    out->ir_version = g->ir_version, out->opset = g->opset;
    out->inputs = g->ninputs, out->outputs = g->noutputs, out->nodes = g->nnodes;
    for (int32_t v = 0; v < g->nvalues; v++)
        if (g->values[v].data) out->initializers++, out->weight_bytes += g->values[v].bytes;
    out->producer = g->producer;
    return GAIO_OK;
}

static gaio_status io(const char *fn, const gaio_model *m, int32_t i, bool input, gaio_model_io *out) {
    if (!out) return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "out is NULL");
    memset(out, 0, sizeof *out);
    if (!m) return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "m is NULL");
    int32_t n = input ? m->g.ninputs : m->g.noutputs;
    if (i < 0 || i >= n)
        return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "%s %d does not exist: the model has %d", input ? "input" : "output",
                          (int)i, (int)n);
    const mvalue *v = &m->g.values[input ? m->g.inputs[i] : m->g.outputs[i]];
    out->name = v->name;
    out->dtype = gaio__engine_dtype_of(v->elem);
    out->ndim = v->ndim;
    for (int32_t d = 0; d < v->ndim && d < GAIO_MODEL_MAX_NDIM; d++) {
        out->shape[d] = v->dims[d];
        out->dim_names[d] = v->dim_names[d] ? v->dim_names[d] : "";
    }
    return GAIO_OK;
}

gaio_status gaio_model_input(const gaio_model *m, int32_t i, gaio_model_io *out) { return io(__func__, m, i, true, out); }
gaio_status gaio_model_output(const gaio_model *m, int32_t i, gaio_model_io *out) {
    return io(__func__, m, i, false, out);
}

gaio_status gaio_model_node(const gaio_model *m, int32_t i, const char **name, const char **op_type) {
    GAIO_REQUIRE_PTR(name);
    GAIO_REQUIRE_PTR(op_type);
    *name = *op_type = NULL;
    GAIO_REQUIRE_PTR(m);
    if (i < 0 || i >= m->g.nnodes)
        return GAIO_FAIL(GAIO_ERR_INVALID_ARG, "node %d does not exist: the model runs %d", (int)i, (int)m->g.nnodes);
    *name = m->g.nodes[i].name;
    *op_type = m->g.nodes[i].op_type;
    return GAIO_OK;
}
