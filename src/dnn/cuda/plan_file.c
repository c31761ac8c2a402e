/* gaio_dnn_plan_cache_save / _load: a context's cuDNN plans in a file, as cuDNN's own
 * serialization (the plan's JSON representation, which carries a runtime-fusion
 * engine's compiled code), so that a loaded plan skips heuristics and compilation.
 *
 * The file: a header (magic, format, sizeof the key, cuDNN's version, the GPU's name
 * and compute capability), then per plan its key, what gaio knows of it, and cuDNN's
 * JSON. Written to a temporary file renamed into place, so that a reader never sees
 * half a file; read defensively (a file is input: lengths are bounded and checked). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "core/native.h"
#include "core/object.h"
#include "dnn/cuda/conv_cache.h"
#include "dnn/dnn_internal.h"

#define MAGIC "GAIOCDNN"
/* 2: no runtime-compiled plans with a fused residual (cudnn_graph.c suitable());
 * 3: the residual may run after the plan (RES_AFTER) */
#define FORMAT 3
#define MAX_JSON ((uint64_t)64 << 20)
#define MAX_ENTRIES 4096

typedef struct file_header {
    char magic[8];
    uint32_t format, key_size;
    uint64_t cudnn_version;
    char device[128];
    int32_t cc_major, cc_minor;
    uint64_t count;
} file_header;

typedef struct file_entry {
    conv_key key;
    int32_t bias_in, act_in, residual, cuda_graph_native; /* residual: RES_* */
    int64_t workspace;
    char engine[64];
    uint64_t json_size;
} file_entry;

/* Where a plan's residual goes (gaio__conv_fusion). */
enum { RES_FUSED = 0, RES_FROM_Y = 1, RES_AFTER = 2 };

static void entry_fusion(file_entry *e, const gaio__conv_fusion *f) {
    e->bias_in = f->bias, e->act_in = f->act;
    e->residual = f->residual_from_y ? RES_FROM_Y : f->residual_after ? RES_AFTER : RES_FUSED;
}

/* The arguments checked, cuDNN loaded and the context's cache found. */
static gaio_status prologue(const char *fn, gaio_context *ctx, const char *path, size_t *count,
                            const gaio_cudnn_table **t, conv_cache **c) {
    if (count) *count = 0;
    if (!ctx) return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "ctx is NULL");
    if (!path || !path[0]) return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "path is NULL or empty");
    if (ctx->be->kind != GAIO_DEVICE_CUDA)
        return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn, "ctx is on the host: plan caches hold cuDNN plans");
    if (!(*t = gaio__cudnn(fn))) return GAIO_ERR_DRIVER;
    if (!(*c = gaio__conv_cache(fn, ctx))) return GAIO_ERR_NO_MEMORY;
    return GAIO_OK;
}

/* The device as gaio describes it (the driver's name and compute capability); the name
 * is cut where the driver's was when it wrote straight into the header (126 bytes). */
static void describe_device(const gaio_cudnn_table *t, gaio_context *ctx, file_header *h) {
    memset(h, 0, sizeof *h);
    memcpy(h->magic, MAGIC, 8);
    h->format = FORMAT;
    h->key_size = sizeof(conv_key);
    h->cudnn_version = t->cudnnGetVersion();
    gaio_device_props props;
    if (gaio_device_get_props(ctx->device, &props) != GAIO_OK) return;
    memcpy(h->device, props.name, strnlen(props.name, sizeof h->device - 2));
    h->cc_major = props.compute_major;
    h->cc_minor = props.compute_minor;
}

static gaio_status sys_fail(const char *fn, const char *what, const char *path) {
    return gaio__fail(GAIO_ERR_SYSTEM, fn, "%s %s: %s", what, path, strerror(errno));
}

gaio_status gaio_dnn_plan_cache_save(gaio_context *ctx, const char *path, size_t *count) {
    const char *fn = __func__;
    const gaio_cudnn_table *t = NULL;
    conv_cache *c = NULL;
    gaio_status st = prologue(fn, ctx, path, count, &t, &c);
    if (st != GAIO_OK) return st;
    gaio__conv_plan **plans = calloc(MAX_ENTRIES, sizeof *plans);
    if (!plans) return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory");
    size_t n = gaio__conv_cache_snapshot(c, plans, MAX_ENTRIES);
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) st = sys_fail(fn, "cannot create", tmp);
    file_header h;
    describe_device(t, ctx, &h);
    h.count = n;
    if (st == GAIO_OK && fwrite(&h, sizeof h, 1, f) != 1) st = sys_fail(fn, "cannot write", tmp);
    char *json = NULL;
    for (size_t i = 0; i < n && st == GAIO_OK; i++) {
        const conv_built *b = gaio__conv_plan_built(plans[i]);
        int64_t size = 0;
        cudnnStatus_t r = t->cudnnBackendGetAttribute(b->plan, CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION,
                                                      CUDNN_TYPE_CHAR, 0, &size, NULL);
        if (r == CUDNN_STATUS_SUCCESS && (size <= 0 || (uint64_t)size > MAX_JSON)) r = CUDNN_STATUS_NOT_SUPPORTED;
        char *grown = r == CUDNN_STATUS_SUCCESS ? realloc(json, (size_t)size) : NULL;
        if (r == CUDNN_STATUS_SUCCESS && !grown) {
            st = gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory for a plan's serialization");
            break;
        }
        if (grown) json = grown;
        if (r == CUDNN_STATUS_SUCCESS)
            r = t->cudnnBackendGetAttribute(b->plan, CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION, CUDNN_TYPE_CHAR,
                                            size, &size, json);
        if (r != CUDNN_STATUS_SUCCESS) {
            st = gaio__cudnn_fail(fn, t, "cudnnBackendGetAttribute (plan serialization)", r);
            break;
        }
        file_entry e;
        memset(&e, 0, sizeof e);
        e.key = *gaio__conv_plan_key(plans[i]);
        entry_fusion(&e, &b->fusion);
        e.cuda_graph_native = b->cuda_graph_native;
        e.workspace = b->workspace;
        memcpy(e.engine, b->engine, sizeof e.engine);
        e.json_size = (uint64_t)size;
        if (fwrite(&e, sizeof e, 1, f) != 1 || fwrite(json, 1, (size_t)size, f) != (size_t)size)
            st = sys_fail(fn, "cannot write", tmp);
    }
    free(json);
    for (size_t i = 0; i < n; i++) gaio__conv_plan_release(plans[i]);
    free(plans);
    if (f && fclose(f) != 0 && st == GAIO_OK) st = sys_fail(fn, "cannot write", tmp);
    if (st == GAIO_OK && rename(tmp, path) != 0) st = sys_fail(fn, "cannot rename the temporary file to", path);
    if (st != GAIO_OK) {
        if (f) unlink(tmp);
        return st;
    }
    if (count) *count = n;
    return GAIO_OK;
}

static gaio_status bad_file(const char *fn, const char *path, const char *why) {
    return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "%s is not a gaio plan cache: %s", path, why);
}

/* One plan from its JSON: finalized with the cache's handle (device current). */
static gaio_status load_plan(const char *fn, const gaio_cudnn_table *t, conv_cache *c, const file_entry *e,
                             const char *json, conv_built *b) {
    memset(b, 0, sizeof *b);
    cudnnBackendDescriptor_t plan = NULL;
    const char *call = "cudnnBackendCreateDescriptor (execution plan)";
    cudnnStatus_t r = t->cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan);
    if (r == CUDNN_STATUS_SUCCESS) {
        call = "cudnnBackendSetAttribute (plan handle)";
        r = t->cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &c->handle);
    }
    if (r == CUDNN_STATUS_SUCCESS) {
        call = "cudnnBackendSetAttribute (plan serialization)";
        r = t->cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION, CUDNN_TYPE_CHAR,
                                        (int64_t)e->json_size, json);
    }
    if (r == CUDNN_STATUS_SUCCESS) {
        call = "cudnnBackendFinalize (loaded plan)";
        r = t->cudnnBackendFinalize(plan);
    }
    int64_t n = 0, ws = 0;
    if (r == CUDNN_STATUS_SUCCESS) {
        call = "cudnnBackendGetAttribute (workspace size)";
        r = t->cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n, &ws);
    }
    if (r != CUDNN_STATUS_SUCCESS) {
        if (plan) t->cudnnBackendDestroyDescriptor(plan);
        return gaio__cudnn_fail(fn, t, call, r);
    }
    b->plan = plan;
    b->workspace = ws;
    b->fusion.bias = e->bias_in != 0;
    b->fusion.act = e->act_in != 0;
    b->fusion.residual_from_y = e->residual == RES_FROM_Y;
    b->fusion.residual_after = e->residual == RES_AFTER;
    b->cuda_graph_native = e->cuda_graph_native != 0;
    memcpy(b->engine, e->engine, sizeof b->engine);
    b->engine[sizeof b->engine - 1] = 0;
    return GAIO_OK;
}

gaio_status gaio_dnn_plan_cache_load(gaio_context *ctx, const char *path, size_t *count) {
    const char *fn = __func__;
    const gaio_cudnn_table *t = NULL;
    conv_cache *c = NULL;
    gaio_status st = prologue(fn, ctx, path, count, &t, &c);
    if (st != GAIO_OK) return st;
    FILE *f = fopen(path, "rb");
    if (!f) return sys_fail(fn, "cannot open", path);
    file_header h, mine;
    describe_device(t, ctx, &mine);
    if (fread(&h, sizeof h, 1, f) != 1 || memcmp(h.magic, MAGIC, 8)) {
        fclose(f);
        return bad_file(fn, path, "no gaio header");
    }
    h.device[sizeof h.device - 1] = 0;
    if (h.format != FORMAT || h.key_size != sizeof(conv_key)) {
        fclose(f);
        return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn, "%s has plan-cache format %u (key %u bytes); this gaio writes %u (%u)",
                          path, h.format, h.key_size, FORMAT, (unsigned)sizeof(conv_key));
    }
    if (h.cudnn_version != mine.cudnn_version || strcmp(h.device, mine.device) || h.cc_major != mine.cc_major ||
        h.cc_minor != mine.cc_minor) {
        fclose(f);
        return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn,
                          "%s was written by cuDNN %llu on %s (sm_%d%d); this is cuDNN %llu on %s (sm_%d%d)", path,
                          (unsigned long long)h.cudnn_version, h.device, h.cc_major, h.cc_minor,
                          (unsigned long long)mine.cudnn_version, mine.device, mine.cc_major, mine.cc_minor);
    }
    if (h.count > MAX_ENTRIES) {
        fclose(f);
        return bad_file(fn, path, "more plans than a cache holds");
    }
    size_t loaded = 0;
    char *json = NULL;
    pthread_mutex_lock(&c->build_lock);
    gaio__native_scope sc;
    st = gaio__native_enter(fn, ctx, &sc);
    if (st == GAIO_OK) {
        st = gaio__conv_cache_handle(fn, c, t);
        for (uint64_t i = 0; i < h.count && st == GAIO_OK; i++) {
            file_entry e;
            if (fread(&e, sizeof e, 1, f) != 1 || e.json_size == 0 || e.json_size > MAX_JSON) {
                st = bad_file(fn, path, "a plan entry is truncated or too large");
                break;
            }
            char *grown = realloc(json, (size_t)e.json_size);
            if (!grown) {
                st = gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory reading %s", path);
                break;
            }
            json = grown;
            if (fread(json, 1, (size_t)e.json_size, f) != (size_t)e.json_size) {
                st = bad_file(fn, path, "a plan's serialization is truncated");
                break;
            }
            conv_built b;
            if ((st = load_plan(fn, t, c, &e, json, &b)) != GAIO_OK) break;
            int added = gaio__conv_cache_add(c, &e.key, &b);
            if (added <= 0) t->cudnnBackendDestroyDescriptor(b.plan);
            if (added < 0) st = gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory for a loaded plan");
            if (added > 0) loaded++;
        }
        gaio__native_exit(&sc);
    }
    pthread_mutex_unlock(&c->build_lock);
    free(json);
    fclose(f);
    if (count) *count = loaded;
    return st;
}

/* ---- one plan as bytes, for an engine file (dnn_internal.h) ---- */

/* The bytes: the header of a plan-cache file with a count of 1, one entry, cuDNN's JSON. */
gaio_status gaio__conv_plan_export(const char *fn, gaio_context *ctx, const gaio__conv_plan *p, void **data,
                                   size_t *size) {
    *data = NULL, *size = 0;
    const gaio_cudnn_table *t = gaio__cudnn(fn);
    if (!t) return GAIO_ERR_DRIVER;
    const conv_built *b = gaio__conv_plan_built(p);
    int64_t n = 0;
    cudnnStatus_t r = t->cudnnBackendGetAttribute(b->plan, CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION,
                                                  CUDNN_TYPE_CHAR, 0, &n, NULL);
    if (r == CUDNN_STATUS_SUCCESS && (n <= 0 || (uint64_t)n > MAX_JSON)) r = CUDNN_STATUS_NOT_SUPPORTED;
    if (r != CUDNN_STATUS_SUCCESS) return gaio__cudnn_fail(fn, t, "cudnnBackendGetAttribute (plan serialization)", r);
    size_t total = sizeof(file_header) + sizeof(file_entry) + (size_t)n;
    unsigned char *out = malloc(total);
    if (!out) return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory for a plan's serialization");
    r = t->cudnnBackendGetAttribute(b->plan, CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION, CUDNN_TYPE_CHAR, n, &n,
                                    out + sizeof(file_header) + sizeof(file_entry));
    if (r != CUDNN_STATUS_SUCCESS) {
        free(out);
        return gaio__cudnn_fail(fn, t, "cudnnBackendGetAttribute (plan serialization)", r);
    }
    file_header h;
    describe_device(t, ctx, &h);
    h.count = 1;
    file_entry e;
    memset(&e, 0, sizeof e);
    e.key = *gaio__conv_plan_key(p);
    entry_fusion(&e, &b->fusion);
    e.cuda_graph_native = b->cuda_graph_native;
    e.workspace = b->workspace;
    memcpy(e.engine, b->engine, sizeof e.engine);
    e.json_size = (uint64_t)n;
    memcpy(out, &h, sizeof h);
    memcpy(out + sizeof h, &e, sizeof e);
    *data = out;
    *size = sizeof h + sizeof e + (size_t)n;
    return GAIO_OK;
}

gaio_status gaio__conv_plan_import(const char *fn, gaio_context *ctx, const void *data, size_t size,
                                   gaio__conv_plan **out) {
    *out = NULL;
    const gaio_cudnn_table *t = NULL;
    conv_cache *c = NULL;
    gaio_status st = prologue(fn, ctx, "(engine)", NULL, &t, &c);
    if (st != GAIO_OK) return st;
    file_header h, mine;
    file_entry e;
    if (size < sizeof h + sizeof e) return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "a cuDNN plan's record is truncated");
    memcpy(&h, data, sizeof h);
    memcpy(&e, (const unsigned char *)data + sizeof h, sizeof e);
    h.device[sizeof h.device - 1] = 0;
    if (memcmp(h.magic, MAGIC, 8) || h.format != FORMAT || h.key_size != sizeof(conv_key) || h.count != 1 ||
        e.json_size != size - sizeof h - sizeof e || e.json_size == 0 || e.json_size > MAX_JSON)
        return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "a cuDNN plan's record is malformed");
    describe_device(t, ctx, &mine);
    if (h.cudnn_version != mine.cudnn_version || strcmp(h.device, mine.device) || h.cc_major != mine.cc_major ||
        h.cc_minor != mine.cc_minor)
        return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn,
                          "its cuDNN plans were made by cuDNN %llu on %s (sm_%d%d); this is cuDNN %llu on %s (sm_%d%d)",
                          (unsigned long long)h.cudnn_version, h.device, h.cc_major, h.cc_minor,
                          (unsigned long long)mine.cudnn_version, mine.device, mine.cc_major, mine.cc_minor);
    /* An engine holds a record per convolution step, and steps of one shape share a
     * plan (ResNet-50: 53 steps, 27 plans): a key the context has already is taken
     * as it is, not rebuilt from its JSON and then dropped. */
    if ((*out = gaio__conv_cache_get(c, &e.key))) return GAIO_OK;
    conv_built b;
    pthread_mutex_lock(&c->build_lock);
    gaio__native_scope sc;
    st = gaio__native_enter(fn, ctx, &sc);
    if (st == GAIO_OK) {
        st = gaio__conv_cache_handle(fn, c, t);
        if (st == GAIO_OK) st = load_plan(fn, t, c, &e, (const char *)data + sizeof h + sizeof e, &b);
        gaio__native_exit(&sc);
    }
    pthread_mutex_unlock(&c->build_lock);
    if (st != GAIO_OK) return st;
    if (gaio__conv_cache_put(c, &e.key, &b, out) != 0) {
        t->cudnnBackendDestroyDescriptor(b.plan);
        return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory for a loaded plan");
    }
    return GAIO_OK;
}
