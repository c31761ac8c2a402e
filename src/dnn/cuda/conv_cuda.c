/* Convolution on a GPU: each context keeps its cuDNN plans (core/context_ext.h), one
 * per shape (cudnn_graph.h's key), built on the thread that first asks for the shape
 * and run on any stream of the context with that stream's own cuDNN handle.
 *
 * Plans are not per stream (as the GEMM's are): finalizing a runtime-fusion plan
 * compiles code, so a plan is made once per context and device. cuDNN 9 plans no
 * longer depend on the handle that built them (the plan's handle attribute is
 * deprecated), and the handle that runs one only gives the stream. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/context_ext.h"
#include "core/error.h"
#include "core/native.h"
#include "core/object.h"
#include "dnn/cuda/conv_cache.h"
#include "dnn/cuda/cudnn_graph.h"
#include "dnn/cuda/dnn_state.h"

#define MAX_PLANS 512

struct gaio__conv_plan {
    atomic_int refs; /* the cache's, and one per op that will run it */
    gaio__conv_plan *next;
    conv_key key;
    conv_built b;
};

static void plan_free(const gaio_cudnn_table *t, gaio__conv_plan *p) {
    if (p->b.plan) t->cudnnBackendDestroyDescriptor(p->b.plan);
    free(p);
}

void gaio__conv_plan_release(gaio__conv_plan *p) {
    if (p && atomic_fetch_sub_explicit(&p->refs, 1, memory_order_acq_rel) == 1) {
        const gaio_cudnn_table *t = gaio__cudnn("gaio_conv2d");
        if (t) plan_free(t, p);
    }
}

gaio__conv_fusion gaio__conv_plan_fusion(const gaio__conv_plan *p) { return p->b.fusion; }

bool gaio__conv_plan_graph_hazard(const gaio__conv_plan *p) {
    /* The engine's name carries the runtime-compilation note (describe(); kept in plan
     * files), so a loaded plan answers as the built one did. */
    return p && p->key.has_res && !p->b.fusion.residual_from_y && !p->b.fusion.residual_after &&
           strstr(p->b.engine, "(runtime fusion)");
}

static void cache_free(void *value, gaio_context *ctx) {
    (void)ctx;
    conv_cache *c = value;
    const gaio_cudnn_table *t = gaio__cudnn("gaio_context_release");
    while (c->plans) {
        gaio__conv_plan *p = c->plans;
        c->plans = p->next;
        gaio__conv_plan_release(p);
    }
    if (c->handle && t) { /* needs no current context; may synchronize: no capture meanwhile */
        gaio__native_exclusive_begin(GAIO_DEVICE_CUDA);
        t->cudnnDestroy(c->handle);
        gaio__native_exclusive_end(GAIO_DEVICE_CUDA);
    }
    pthread_mutex_destroy(&c->lock);
    pthread_mutex_destroy(&c->build_lock);
    free(c);
}

conv_cache *gaio__conv_cache(const char *fn, gaio_context *ctx) {
    conv_cache *c = gaio__context_ext_get(ctx, GAIO_CONTEXT_EXT_DNN);
    if (c) return c;
    conv_cache *mine = calloc(1, sizeof *mine);
    if (!mine) {
        gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory for the context's plan cache");
        return NULL;
    }
    pthread_mutex_init(&mine->lock, NULL);
    pthread_mutex_init(&mine->build_lock, NULL);
    c = gaio__context_ext_set(ctx, GAIO_CONTEXT_EXT_DNN, mine, cache_free);
    if (c != mine) {
        pthread_mutex_destroy(&mine->lock);
        pthread_mutex_destroy(&mine->build_lock);
        free(mine);
    }
    return c;
}

/* The cached plan of k with a reference for the caller, moved to the front; NULL if
 * none. Under c->lock. */
static gaio__conv_plan *find_locked(conv_cache *c, const conv_key *k) {
    for (gaio__conv_plan **link = &c->plans, *p; (p = *link); link = &p->next)
        if (!memcmp(&p->key, k, sizeof *k)) {
            *link = p->next;
            p->next = c->plans;
            c->plans = p;
            atomic_fetch_add_explicit(&p->refs, 1, memory_order_relaxed);
            return p;
        }
    return NULL;
}

/* Adds p (holding one reference, the cache's) at the front, dropping the least
 * recently used beyond MAX_PLANS. Under c->lock. */
static void insert_locked(conv_cache *c, gaio__conv_plan *p) {
    p->next = c->plans;
    c->plans = p;
    int n = 0;
    for (gaio__conv_plan **link = &c->plans, *q; (q = *link);) {
        if (++n > MAX_PLANS) {
            *link = q->next;
            gaio__conv_plan_release(q);
            continue;
        }
        link = &q->next;
    }
}

gaio_status gaio__conv_cache_handle(const char *fn, conv_cache *c, const gaio_cudnn_table *t) {
    if (c->handle) return GAIO_OK;
    cudnnStatus_t r = t->cudnnCreate(&c->handle);
    if (r != CUDNN_STATUS_SUCCESS) {
        c->handle = NULL;
        return gaio__cudnn_fail(fn, t, "cudnnCreate", r);
    }
    return GAIO_OK;
}

gaio__conv_plan *gaio__conv_cache_get(conv_cache *c, const conv_key *k) {
    pthread_mutex_lock(&c->lock);
    gaio__conv_plan *p = find_locked(c, k);
    pthread_mutex_unlock(&c->lock);
    return p;
}

int gaio__conv_cache_add(conv_cache *c, const conv_key *k, const conv_built *b) {
    gaio__conv_plan *p = calloc(1, sizeof *p);
    if (!p) return -1;
    atomic_init(&p->refs, 1);
    p->key = *k;
    p->b = *b;
    pthread_mutex_lock(&c->lock);
    gaio__conv_plan *old = find_locked(c, k);
    if (old) { /* already there: keep the one in use */
        gaio__conv_plan_release(old);
        pthread_mutex_unlock(&c->lock);
        free(p);
        return 0;
    }
    insert_locked(c, p);
    pthread_mutex_unlock(&c->lock);
    return 1;
}

int gaio__conv_cache_put(conv_cache *c, const conv_key *k, const conv_built *b, gaio__conv_plan **out) {
    *out = NULL;
    gaio__conv_plan *p = calloc(1, sizeof *p);
    if (!p) return -1;
    atomic_init(&p->refs, 2); /* the cache's and the caller's */
    p->key = *k;
    p->b = *b;
    pthread_mutex_lock(&c->lock);
    gaio__conv_plan *old = find_locked(c, k);
    if (!old) insert_locked(c, p);
    pthread_mutex_unlock(&c->lock);
    if (old) { /* keep the one in use */
        free(p);
        const gaio_cudnn_table *t = gaio__cudnn("gaio_engine_load");
        if (t) t->cudnnBackendDestroyDescriptor(b->plan);
        p = old;
    }
    *out = p;
    return 0;
}

static void fill_info(gaio_conv2d_info *info, const gaio__conv_plan *p, bool from_cache) {
    if (!info) return;
    const gaio__conv_fusion *f = &p->b.fusion;
    info->fused = (!p->key.has_bias || f->bias) && (!p->key.has_act || f->act) && !f->residual_from_y &&
                  !f->residual_after;
    info->cuda_graph_native = p->b.cuda_graph_native;
    info->from_cache = from_cache;
    info->workspace = (size_t)p->b.workspace;
    snprintf(info->engine, sizeof info->engine, "%s", p->b.engine);
}

gaio_status gaio__conv_cuda_plan(const char *fn, gaio_stream *stream, const gaio__conv_args *a, int tune,
                                 gaio__conv_plan **plan, gaio_conv2d_info *info) {
    *plan = NULL;
    const gaio_cudnn_table *t = gaio__cudnn(fn);
    if (!t) return GAIO_ERR_DRIVER;
    conv_cache *c = gaio__conv_cache(fn, stream->ctx);
    if (!c) return GAIO_ERR_NO_MEMORY;
    conv_key k;
    gaio__conv_key_make(a, &k);
    pthread_mutex_lock(&c->lock);
    gaio__conv_plan *p = find_locked(c, &k);
    pthread_mutex_unlock(&c->lock);
    if (p) {
        fill_info(info, p, true);
        *plan = p;
        return GAIO_OK;
    }
    /* One build at a time per context (its handle is not shared between threads);
     * lookups of other shapes go on meanwhile. Tuning runs cuDNN's candidates, some of
     * which synchronize the device: no stream capture may be under way meanwhile (taken
     * before build_lock, which a capturing thread may wait for). */
    bool exclusive = tune > 1;
    if (exclusive) gaio__native_exclusive_begin(GAIO_DEVICE_CUDA);
    pthread_mutex_lock(&c->build_lock);
    pthread_mutex_lock(&c->lock);
    p = find_locked(c, &k); /* another thread may have built it while we waited */
    pthread_mutex_unlock(&c->lock);
    gaio_status st = GAIO_OK;
    bool cached = p != NULL;
    if (!p) {
        gaio__native_scope sc;
        st = gaio__native_enter(fn, stream->ctx, &sc);
        if (st == GAIO_OK) {
            st = gaio__conv_cache_handle(fn, c, t);
            conv_built b;
            if (st == GAIO_OK) st = gaio__conv_graph_build(fn, t, c->handle, &k, tune, &b);
            gaio__native_exit(&sc);
            if (st == GAIO_OK) {
                p = calloc(1, sizeof *p);
                if (!p) {
                    t->cudnnBackendDestroyDescriptor(b.plan);
                    st = gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory for a cuDNN plan");
                } else {
                    atomic_init(&p->refs, 2); /* the cache's and the caller's */
                    p->key = k;
                    p->b = b;
                    pthread_mutex_lock(&c->lock);
                    insert_locked(c, p);
                    pthread_mutex_unlock(&c->lock);
                }
            }
        }
    }
    pthread_mutex_unlock(&c->build_lock);
    if (exclusive) gaio__native_exclusive_end(GAIO_DEVICE_CUDA);
    if (st != GAIO_OK) return st;
    fill_info(info, p, cached);
    *plan = p;
    return GAIO_OK;
}

gaio_status gaio__conv_cuda_run(void *native_stream, const gaio__conv_plan *p, const gaio__conv_args *a,
                                gaio_stream *stream) {
    const char *FN = a->transposed ? "gaio_conv_transpose2d" : "gaio_conv2d";
    const gaio_cudnn_table *t = gaio__cudnn(FN);
    if (!t) return GAIO_ERR_DRIVER;
    dnn_stream_state *s = gaio__dnn_state(FN, stream);
    if (!s) return GAIO_ERR_NO_MEMORY;
    cudnnHandle_t h;
    gaio_status st = gaio__dnn_cudnn(FN, s, native_stream, &h);
    if (st != GAIO_OK) return st;
    void *ws = NULL;
    if (p->b.workspace > 0 && (st = gaio__dnn_workspace(FN, s, (size_t)p->b.workspace, &ws)) != GAIO_OK) return st;
    void *ptrs[5] = {(void *)a->x, (void *)a->wt, a->y, (void *)a->bias, (void *)a->residual};
    const char *call;
    cudnnStatus_t r = gaio__conv_execute(t, h, &p->b, ptrs, ws, &call);
    return r == CUDNN_STATUS_SUCCESS ? GAIO_OK : gaio__cudnn_fail(FN, t, call, r);
}

/* ---- the cache as conv_cache.h shows it to the save / load code ---- */

size_t gaio__conv_cache_snapshot(conv_cache *c, gaio__conv_plan **out, size_t max) {
    size_t n = 0;
    pthread_mutex_lock(&c->lock);
    for (gaio__conv_plan *p = c->plans; p && n < max; p = p->next) {
        atomic_fetch_add_explicit(&p->refs, 1, memory_order_relaxed);
        out[n++] = p;
    }
    pthread_mutex_unlock(&c->lock);
    return n;
}

const conv_key *gaio__conv_plan_key(const gaio__conv_plan *p) { return &p->key; }
const conv_built *gaio__conv_plan_built(const gaio__conv_plan *p) { return &p->b; }
