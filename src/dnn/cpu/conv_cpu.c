/* The host convolution: oneDNN's forward convolution with the bias as its bias
 * argument and the residual and activation as post-ops (sum, then eltwise), run on the
 * calling gaio worker. oneDNN spreads the work over its own OpenMP threads (Debian's
 * build), not over gaio's pool: the worker that runs the op is the team's master.
 *
 * Where oneDNN is not there (libdnnl.so.2 missing, a build without its headers, or
 * GAIO_DNN_NO_ONEDNN=1), or has no implementation for a problem, gaio's own convolution
 * runs instead (conv_gemm.c: im2col + OpenBLAS sgemm, a GEMM loop without OpenBLAS, the
 * depthwise host kernel for depthwise problems).
 *
 * Primitives are made once per problem (shapes, strides, params, post-ops) and kept in
 * a process-wide LRU cache of CACHE_ENTRIES; an entry is refcounted, so one evicted
 * while another thread runs it is destroyed by the last user. Scratchpads are the
 * user's (dnnl_scratchpad_mode_user) and come from a buffer of the calling thread, so
 * that several workers may run one primitive at once.
 *
 * Formats: x and y keep the caller's strides (no reorder of activations); the weights
 * are "any", so oneDNN picks its blocked layout and its jit kernels, and the weights
 * are reordered into it on every call (a cache of reordered weights keyed by address
 * would go stale when the caller rewrites the buffer), unless the caller packed them
 * once (gaio__conv_cpu_pack: a model engine's constant weights). Measured on a 2-vCPU AMD EPYC
 * (AVX2), 3x3 64->64 56x56 NHWC f32 batch 1: see WEIGHTS_ANY below.
 *
 * F16: oneDNN 2.6 has no f16 convolution on AVX2 CPUs, so f16 tensors are widened to
 * f32 copies laid out as the caller's (packed), the f32 convolution runs on those, and
 * y is rounded back to nearest even. An f16 residual is widened into the f32 y, which
 * the sum post-op then adds. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dnn/cpu/conv_gemm.h"
#include "dnn/cpu/onednn.h"
#include "dnn/dnn_internal.h"

#ifdef GAIO_HAVE_ONEDNN_H

#include <pthread.h>
#include <stdatomic.h>

#include "core/half.h"

#define FN "gaio_conv2d"
#define CACHE_ENTRIES 64
#define ALIGN 64
/* A thread keeps its scratch buffer between calls up to this size (larger ones are
 * freed after the call that needed them). */
#define KEEP_SCRATCH ((size_t)64 << 20)
/* 1: weights in oneDNN's preferred (blocked) format, reordered each call; 0: the
 * caller's layout as it is (oneDNN then falls back to its gemm-based convolution). */
#ifndef WEIGHTS_ANY
#define WEIGHTS_ANY 1
#endif

/* The f32 problem oneDNN runs (for f16 calls, the one on the widened copies). Compared
 * with memcmp: always zeroed before it is filled. */
typedef struct conv_key {
    int64_t n, c, h, w, k, r, s, p, q;
    int64_t xs[4], ws[4], ys[4];
    int32_t groups, stride[2], pad[4], dilation[2];
    int32_t has_bias, sum, act_op; /* act_op -1: none */
    float alpha, beta;
} conv_key;

/* A reorder between two layouts of one tensor (prim NULL when they are the same). */
typedef struct reorder {
    dnnl_primitive_t prim;
    dnnl_memory_desc_t from, to, scratch_md;
    size_t scratch_bytes;
} reorder;

typedef struct entry {
    conv_key key;
    dnnl_primitive_t conv;
    dnnl_memory_desc_t x_md, w_md, b_md, y_md, scratch_md; /* as the primitive takes them */
    size_t x_bytes, w_bytes, y_bytes, scratch_bytes;        /* those of x, w, y that are reordered */
    /* Into the primitive's layouts and back: the weights (nearly always), and x and y
     * when the caller's layouts have only a slow implementation (see entry_make). */
    reorder wr, xr, yin, yout;
    size_t reorder_scratch; /* the largest of the reorders' scratchpads */
    char impl[64];
    int refs;      /* the cache's one (while cached) and each running call's */
    uint64_t used; /* LRU clock */
    bool cached;
} entry;

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static entry *cache[CACHE_ENTRIES];
static uint64_t cache_clock;

/* Weights packed once (gaio__conv_cpu_pack). */
struct gaio__conv_cpu_weights {
    atomic_int refs;
    entry *e;  /* a reference: the primitive whose w_md the buffer is laid out in */
    void *buf; /* e->w_bytes */
};

/* ---- messages ---- */

static void describe(const conv_key *k, char *out, size_t size) {
    snprintf(out, size,
             "x [%lld, %lld, %lld, %lld] strides [%lld, %lld, %lld, %lld], w [%lld, %lld, %lld, %lld] strides "
             "[%lld, %lld, %lld, %lld], y [%lld, %lld, %lld, %lld] strides [%lld, %lld, %lld, %lld], groups %d, "
             "stride %dx%d, dilation %dx%d",
             (long long)k->n, (long long)k->c, (long long)k->h, (long long)k->w, (long long)k->xs[0],
             (long long)k->xs[1], (long long)k->xs[2], (long long)k->xs[3], (long long)k->k,
             (long long)(k->c / k->groups), (long long)k->r, (long long)k->s, (long long)k->ws[0],
             (long long)k->ws[1], (long long)k->ws[2], (long long)k->ws[3], (long long)k->n, (long long)k->k,
             (long long)k->p, (long long)k->q, (long long)k->ys[0], (long long)k->ys[1], (long long)k->ys[2],
             (long long)k->ys[3], k->groups, k->stride[0], k->stride[1], k->dilation[0], k->dilation[1]);
}

static gaio_status dnnl_fail(dnnl_status_t st, const char *call, const conv_key *k) {
    char problem[400];
    describe(k, problem, sizeof problem);
    gaio_status s = st == dnnl_unimplemented ? GAIO_ERR_NOT_SUPPORTED
                    : st == dnnl_out_of_memory ? GAIO_ERR_NO_MEMORY
                                               : GAIO_ERR_DRIVER;
    return gaio__fail(s, FN, "%s failed: %s (%s)", call, gaio__dnnl_status_text(st), problem);
}

#define TRY(call, name)                                         \
    do {                                                        \
        dnnl_status_t st_ = (call);                             \
        if (st_ != dnnl_success) {                              \
            status = dnnl_fail(st_, name, key);                 \
            goto out;                                           \
        }                                                       \
    } while (0)

/* ---- making a primitive ---- */

static void entry_destroy(entry *e) {
    if (!e) return;
    dnnl_primitive_t all[] = {e->conv, e->wr.prim, e->xr.prim, e->yin.prim, e->yout.prim};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i]) gaio__dnnl.primitive_destroy(all[i]);
    free(e);
}

static size_t md_size(const dnnl_memory_desc_t *md) { return md ? gaio__dnnl.memory_desc_get_size(md) : 0; }

/* The post-ops: the residual (already in dst) added, then the activation. */
static dnnl_status_t add_post_ops(dnnl_post_ops_t po, const conv_key *k) {
    dnnl_status_t st = dnnl_success;
    if (k->sum) st = gaio__dnnl.post_ops_append_sum(po, 1.0f);
    if (st != dnnl_success || k->act_op < 0) return st;
    switch ((gaio_unary_op)k->act_op) {
    case GAIO_UNARY_RELU: return gaio__dnnl.post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_relu, 0.0f, 0.0f);
    case GAIO_UNARY_CLIP: return gaio__dnnl.post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_clip, k->alpha, k->beta);
    case GAIO_UNARY_SIGMOID: return gaio__dnnl.post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_logistic, 0.0f, 0.0f);
    case GAIO_UNARY_SILU: return gaio__dnnl.post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_swish, 1.0f, 0.0f);
    case GAIO_UNARY_GELU: return gaio__dnnl.post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_gelu_erf, 0.0f, 0.0f);
    case GAIO_UNARY_GELU_TANH:
        return gaio__dnnl.post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_gelu_tanh, 0.0f, 0.0f);
    case GAIO_UNARY_TANH: return gaio__dnnl.post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_tanh, 0.0f, 0.0f);
    case GAIO_UNARY_HARD_SIGMOID:
        /* oneDNN 2.6 has no hardsigmoid: alpha x + beta, then clipped to [0, 1]. */
        st = gaio__dnnl.post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_linear, k->alpha, k->beta);
        if (st != dnnl_success) return st;
        return gaio__dnnl.post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_clip, 0.0f, 1.0f);
    case GAIO_UNARY_HARD_SWISH:
        /* 2.6's hardswish is x * relu6(x + 3) / 6, gaio's formula; alpha and beta unused. */
        return gaio__dnnl.post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_hardswish, 0.0f, 0.0f);
    case GAIO_UNARY_IDENTITY: return dnnl_success;
    case GAIO_UNARY_SQRT:
    case GAIO_UNARY_EXP:
    case GAIO_UNARY_LOG:
    case GAIO_UNARY_ABS:
    case GAIO_UNARY_NEG:
    case GAIO_UNARY_RECIPROCAL:
    case GAIO_UNARY_FLOOR:
    case GAIO_UNARY_CEIL:
    case GAIO_UNARY_ERF:
    case GAIO_UNARY_SOFTPLUS:
    case GAIO_UNARY_SIN:
    case GAIO_UNARY_COS:
    case GAIO_UNARY_AFFINE:
        /* Not as post-ops: gaio's own convolution (conv_gemm.c) runs these. */
        return dnnl_unimplemented;
    }
    return dnnl_invalid_arguments;
}

/* The convolution's primitive descriptor for these layouts of x, w and y. */
static gaio_status make_pd(const conv_key *key, const dnnl_memory_desc_t *x, const dnnl_memory_desc_t *w,
                           const dnnl_memory_desc_t *b, const dnnl_memory_desc_t *y, dnnl_primitive_desc_t *pd) {
    gaio_status status = GAIO_OK;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    dnnl_convolution_desc_t cd;
    dnnl_dims_t strides = {key->stride[0], key->stride[1]};
    dnnl_dims_t dil = {key->dilation[0] - 1, key->dilation[1] - 1}; /* oneDNN's 0 is no dilation */
    dnnl_dims_t pad_l = {key->pad[0], key->pad[1]}, pad_r = {key->pad[2], key->pad[3]};
    TRY(gaio__dnnl.dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference, dnnl_convolution_direct, x,
                                                         w, b, y, strides, dil, pad_l, pad_r),
        "dnnl_dilated_convolution_forward_desc_init");
    TRY(gaio__dnnl.primitive_attr_create(&attr), "dnnl_primitive_attr_create");
    TRY(gaio__dnnl.primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user),
        "dnnl_primitive_attr_set_scratchpad_mode");
    TRY(gaio__dnnl.post_ops_create(&po), "dnnl_post_ops_create");
    TRY(add_post_ops(po, key), "dnnl_post_ops_append");
    TRY(gaio__dnnl.primitive_attr_set_post_ops(attr, po), "dnnl_primitive_attr_set_post_ops");
    TRY(gaio__dnnl.primitive_desc_create(pd, &cd, attr, gaio__dnnl_engine, NULL), "dnnl_primitive_desc_create");
out:
    if (po) gaio__dnnl.post_ops_destroy(po);
    if (attr) gaio__dnnl.primitive_attr_destroy(attr);
    return status;
}

static const char *impl_of(const_dnnl_primitive_desc_t pd) {
    const char *impl = NULL;
    if (gaio__dnnl.primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success || !impl) return "";
    return impl;
}

/* The reference and gemm-based implementations are what oneDNN falls back on for
 * layouts its jit kernels do not take (ref:any ran 3x3 64->64 56x56 NHWC with plain
 * weights in 7 s; gemm:jit NCHW ran it about 2x slower than jit:avx2 NHWC). */
static bool slow_impl(const char *impl) { return strncmp(impl, "ref", 3) == 0 || strstr(impl, "gemm") != NULL; }

static gaio_status reorder_make(const conv_key *key, const dnnl_memory_desc_t *from, const dnnl_memory_desc_t *to,
                                reorder *r, const char *what) {
    gaio_status status = GAIO_OK;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t pd = NULL;
    r->from = *from;
    r->to = *to;
    if (gaio__dnnl.memory_desc_equal(from, to)) return GAIO_OK;
    TRY(gaio__dnnl.primitive_attr_create(&attr), "dnnl_primitive_attr_create");
    TRY(gaio__dnnl.primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user),
        "dnnl_primitive_attr_set_scratchpad_mode");
    TRY(gaio__dnnl.reorder_primitive_desc_create(&pd, from, gaio__dnnl_engine, to, gaio__dnnl_engine, attr), what);
    r->scratch_md = *gaio__dnnl.primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    r->scratch_bytes = md_size(&r->scratch_md);
    TRY(gaio__dnnl.primitive_create(&r->prim, pd), "dnnl_primitive_create(reorder)");
out:
    if (pd) gaio__dnnl.primitive_desc_destroy(pd);
    if (attr) gaio__dnnl.primitive_attr_destroy(attr);
    return status;
}

static gaio_status entry_make(const conv_key *key, entry **out) {
    gaio_status status = GAIO_OK;
    dnnl_primitive_desc_t pd = NULL, pd_any = NULL;
    entry *e = calloc(1, sizeof *e);
    if (!e) return gaio__fail(GAIO_ERR_NO_MEMORY, FN, "out of host memory for a convolution's plan");
    e->key = *key;

    int64_t g = key->groups;
    dnnl_memory_desc_t x_user, y_user, w_user, x_any, y_any, w_any;
    dnnl_dims_t xd = {key->n, key->c, key->h, key->w}, yd = {key->n, key->k, key->p, key->q};
    dnnl_dims_t xs = {key->xs[0], key->xs[1], key->xs[2], key->xs[3]};
    dnnl_dims_t ys = {key->ys[0], key->ys[1], key->ys[2], key->ys[3]};
    TRY(gaio__dnnl.memory_desc_init_by_strides(&x_user, 4, xd, dnnl_f32, xs), "dnnl_memory_desc_init_by_strides(x)");
    TRY(gaio__dnnl.memory_desc_init_by_strides(&y_user, 4, yd, dnnl_f32, ys), "dnnl_memory_desc_init_by_strides(y)");
    TRY(gaio__dnnl.memory_desc_init_by_tag(&x_any, 4, xd, dnnl_f32, dnnl_format_tag_any),
        "dnnl_memory_desc_init_by_tag(x, any)");
    TRY(gaio__dnnl.memory_desc_init_by_tag(&y_any, 4, yd, dnnl_f32, dnnl_format_tag_any),
        "dnnl_memory_desc_init_by_tag(y, any)");
    int wnd = g > 1 ? 5 : 4;
    dnnl_dims_t wd, wst;
    if (g > 1) {
        /* [G, K / G, C / G, R, S]: output channel k = group * K / G + kk. */
        int64_t d[5] = {g, key->k / g, key->c / g, key->r, key->s};
        int64_t st[5] = {key->k / g * key->ws[0], key->ws[0], key->ws[1], key->ws[2], key->ws[3]};
        memcpy(wd, d, sizeof d);
        memcpy(wst, st, sizeof st);
    } else {
        int64_t d[4] = {key->k, key->c, key->r, key->s};
        memcpy(wd, d, sizeof d);
        memcpy(wst, key->ws, sizeof key->ws);
    }
    TRY(gaio__dnnl.memory_desc_init_by_strides(&w_user, wnd, wd, dnnl_f32, wst),
        "dnnl_memory_desc_init_by_strides(w)");
    w_any = w_user;
    if (WEIGHTS_ANY)
        TRY(gaio__dnnl.memory_desc_init_by_tag(&w_any, wnd, wd, dnnl_f32, dnnl_format_tag_any),
            "dnnl_memory_desc_init_by_tag(w, any)");
    if (key->has_bias) {
        dnnl_dims_t bd = {key->k};
        TRY(gaio__dnnl.memory_desc_init_by_tag(&e->b_md, 1, bd, dnnl_f32, dnnl_a), "dnnl_memory_desc_init_by_tag(bias)");
    }
    const dnnl_memory_desc_t *b = key->has_bias ? &e->b_md : NULL;

    /* x and y as the caller lays them out, unless that has only a slow implementation
     * and oneDNN's own layouts (reordered to and from) have a faster one. */
    status = make_pd(key, &x_user, &w_any, b, &y_user, &pd);
    if (status != GAIO_OK && status != GAIO_ERR_NOT_SUPPORTED) goto out;
    if (status != GAIO_OK || slow_impl(impl_of(pd))) {
        gaio_status st_any = make_pd(key, &x_any, &w_any, b, &y_any, &pd_any);
        if (st_any == GAIO_OK && (!pd || strncmp(impl_of(pd_any), "ref", 3) != 0)) {
            if (pd) gaio__dnnl.primitive_desc_destroy(pd);
            pd = pd_any;
            pd_any = NULL;
            status = GAIO_OK;
        } else if (status != GAIO_OK) {
            goto out; /* the first failure's message */
        }
    }
    snprintf(e->impl, sizeof e->impl, "%s", impl_of(pd));
    e->x_md = *gaio__dnnl.primitive_desc_query_md(pd, dnnl_query_src_md, 0);
    e->w_md = *gaio__dnnl.primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    e->y_md = *gaio__dnnl.primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
    e->scratch_md = *gaio__dnnl.primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    e->scratch_bytes = md_size(&e->scratch_md);
    TRY(gaio__dnnl.primitive_create(&e->conv, pd), "dnnl_primitive_create");

    status = reorder_make(key, &w_user, &e->w_md, &e->wr, "dnnl_reorder_primitive_desc_create(w)");
    if (status == GAIO_OK) status = reorder_make(key, &x_user, &e->x_md, &e->xr, "dnnl_reorder_primitive_desc_create(x)");
    if (status == GAIO_OK)
        status = reorder_make(key, &e->y_md, &y_user, &e->yout, "dnnl_reorder_primitive_desc_create(y)");
    if (status == GAIO_OK && key->sum)
        status = reorder_make(key, &y_user, &e->y_md, &e->yin, "dnnl_reorder_primitive_desc_create(residual)");
    if (status != GAIO_OK) goto out;
    e->w_bytes = e->wr.prim ? md_size(&e->w_md) : 0;
    e->x_bytes = e->xr.prim ? md_size(&e->x_md) : 0;
    e->y_bytes = e->yout.prim ? md_size(&e->y_md) : 0;
    const reorder *rs[] = {&e->wr, &e->xr, &e->yin, &e->yout};
    for (size_t i = 0; i < 4; i++)
        if (rs[i]->scratch_bytes > e->reorder_scratch) e->reorder_scratch = rs[i]->scratch_bytes;
out:
    if (pd_any) gaio__dnnl.primitive_desc_destroy(pd_any);
    if (pd) gaio__dnnl.primitive_desc_destroy(pd);
    if (status != GAIO_OK) {
        entry_destroy(e);
        e = NULL;
    }
    *out = e;
    return status;
}

/* ---- the cache ---- */

static void entry_release(entry *e) {
    pthread_mutex_lock(&cache_lock);
    bool last = --e->refs == 0;
    pthread_mutex_unlock(&cache_lock);
    if (last) entry_destroy(e);
}

/* One more reference to an entry the caller holds one of already. */
static void entry_ref(entry *e) {
    pthread_mutex_lock(&cache_lock);
    e->refs++;
    pthread_mutex_unlock(&cache_lock);
}

/* The cached entry of key with a reference for the caller, or NULL. Under cache_lock. */
static entry *find_locked(const conv_key *key) {
    for (int i = 0; i < CACHE_ENTRIES; i++) {
        entry *e = cache[i];
        if (e && memcmp(&e->key, key, sizeof *key) == 0) {
            e->refs++;
            e->used = ++cache_clock;
            return e;
        }
    }
    return NULL;
}

/* The entry of key, made if it is not cached; the caller holds a reference. */
static gaio_status entry_get(const conv_key *key, entry **out) {
    pthread_mutex_lock(&cache_lock);
    entry *found = find_locked(key);
    pthread_mutex_unlock(&cache_lock);
    if (found) {
        *out = found;
        return GAIO_OK;
    }

    /* Made outside the lock: oneDNN's jit takes milliseconds. Two threads may make the
     * same one; the second to insert uses the first's. */
    entry *made;
    gaio_status status = entry_make(key, &made);
    if (status != GAIO_OK) return status;

    entry *evicted = NULL;
    pthread_mutex_lock(&cache_lock);
    if ((found = find_locked(key))) {
        pthread_mutex_unlock(&cache_lock);
        entry_destroy(made);
        *out = found;
        return GAIO_OK;
    }
    int slot = -1;
    for (int i = 0; i < CACHE_ENTRIES; i++) {
        entry *e = cache[i];
        if (!e) {
            if (slot < 0 || cache[slot]) slot = i;
        } else if (slot < 0 || (cache[slot] && e->used < cache[slot]->used)) {
            slot = i;
        }
    }
    if (cache[slot]) {
        evicted = cache[slot];
        evicted->cached = false;
        if (--evicted->refs != 0) evicted = NULL; /* a running call destroys it */
    }
    made->refs = 2; /* the cache's and the caller's */
    made->cached = true;
    made->used = ++cache_clock;
    cache[slot] = made;
    pthread_mutex_unlock(&cache_lock);
    entry_destroy(evicted);
    *out = made;
    return GAIO_OK;
}

/* ---- the calling thread's stream and scratch ---- */

typedef struct thread_state {
    dnnl_stream_t stream;
    void *buf;
    size_t size;
} thread_state;

static pthread_key_t state_key;
static pthread_once_t state_once = PTHREAD_ONCE_INIT;
static int state_key_error;

static void state_free(void *p) {
    thread_state *t = p;
    if (t->stream) gaio__dnnl.stream_destroy(t->stream);
    free(t->buf);
    free(t);
}

static void state_key_make(void) { state_key_error = pthread_key_create(&state_key, state_free); }

static gaio_status thread_get(const conv_key *key, size_t bytes, thread_state **out) {
    pthread_once(&state_once, state_key_make);
    if (state_key_error)
        return gaio__fail(GAIO_ERR_SYSTEM, FN, "pthread_key_create failed: %s", strerror(state_key_error));
    gaio_status status = GAIO_OK;
    thread_state *t = pthread_getspecific(state_key);
    if (!t) {
        t = calloc(1, sizeof *t);
        if (!t) return gaio__fail(GAIO_ERR_NO_MEMORY, FN, "out of host memory");
        if (pthread_setspecific(state_key, t) != 0) {
            free(t);
            return gaio__fail(GAIO_ERR_NO_MEMORY, FN, "pthread_setspecific failed");
        }
    }
    if (!t->stream) TRY(gaio__dnnl.stream_create(&t->stream, gaio__dnnl_engine, dnnl_stream_default_flags),
                        "dnnl_stream_create");
    if (t->size < bytes) {
        free(t->buf);
        t->buf = NULL;
        t->size = 0;
        size_t rounded = (bytes + ALIGN - 1) / ALIGN * ALIGN;
        if (posix_memalign(&t->buf, ALIGN, rounded) != 0) {
            t->buf = NULL;
            return gaio__fail(GAIO_ERR_NO_MEMORY, FN, "out of host memory for %zu bytes of convolution scratch",
                              bytes);
        }
        t->size = rounded;
    }
    *out = t;
out:
    return status;
}

/* After the call: a large buffer is not kept. */
static void thread_trim(thread_state *t) {
    if (t->size > KEEP_SCRATCH) {
        free(t->buf);
        t->buf = NULL;
        t->size = 0;
    }
}

/* ---- strided conversions ---- */

typedef enum { CONV_H2F, CONV_F2H, CONV_F2F } conv_kind;

/* dst[i] = convert(src[i]) over a 4-D index space, the loop nest ordered by dst's
 * strides (largest outside), so that a packed dst is written in order. */
static void convert4(conv_kind kind, const int64_t dims[4], const void *src, const int64_t ss[4], void *dst,
                     const int64_t ds[4]) {
    int o[4] = {0, 1, 2, 3};
    for (int i = 1; i < 4; i++) /* insertion sort by dst stride, descending */
        for (int j = i; j > 0 && ds[o[j]] > ds[o[j - 1]]; j--) {
            int t = o[j];
            o[j] = o[j - 1];
            o[j - 1] = t;
        }
    int64_t n3 = dims[o[3]], s3 = ss[o[3]], d3 = ds[o[3]];
    for (int64_t a = 0; a < dims[o[0]]; a++)
        for (int64_t b = 0; b < dims[o[1]]; b++)
            for (int64_t c = 0; c < dims[o[2]]; c++) {
                int64_t so = a * ss[o[0]] + b * ss[o[1]] + c * ss[o[2]];
                int64_t dof = a * ds[o[0]] + b * ds[o[1]] + c * ds[o[2]];
                if (kind == CONV_H2F) {
                    const uint16_t *restrict s = (const uint16_t *)src + so;
                    float *restrict d = (float *)dst + dof;
                    if (s3 == 1 && d3 == 1)
                        for (int64_t i = 0; i < n3; i++) d[i] = h2f(s[i]);
                    else
                        for (int64_t i = 0; i < n3; i++) d[i * d3] = h2f(s[i * s3]);
                } else if (kind == CONV_F2H) {
                    const float *restrict s = (const float *)src + so;
                    uint16_t *restrict d = (uint16_t *)dst + dof;
                    if (s3 == 1 && d3 == 1)
                        for (int64_t i = 0; i < n3; i++) d[i] = f2h(s[i]);
                    else
                        for (int64_t i = 0; i < n3; i++) d[i * d3] = f2h(s[i * s3]);
                } else {
                    const float *restrict s = (const float *)src + so;
                    float *restrict d = (float *)dst + dof;
                    if (s3 == 1 && d3 == 1)
                        memcpy(d, s, (size_t)n3 * sizeof(float));
                    else
                        for (int64_t i = 0; i < n3; i++) d[i * d3] = s[i * s3];
                }
            }
}

/* Packed strides with the dimensions in the order of st (largest stride outermost;
 * ties in logical order), so that a widened copy keeps the caller's layout. */
static void packed_like(const int64_t dims[4], const int64_t st[4], int64_t out[4]) {
    int o[4] = {0, 1, 2, 3};
    for (int i = 1; i < 4; i++)
        for (int j = i; j > 0 && st[o[j]] > st[o[j - 1]]; j--) {
            int t = o[j];
            o[j] = o[j - 1];
            o[j - 1] = t;
        }
    int64_t acc = 1;
    for (int i = 3; i >= 0; i--) {
        out[o[i]] = acc;
        acc *= dims[o[i]];
    }
}

/* ---- the call ---- */

static void key_fill(const gaio__conv_args *a, conv_key *k) {
    memset(k, 0, sizeof *k);
    k->n = a->n, k->c = a->c, k->h = a->h, k->w = a->w, k->k = a->k, k->r = a->r, k->s = a->s, k->p = a->p,
    k->q = a->q;
    k->groups = a->groups > 0 ? a->groups : 1;
    memcpy(k->stride, a->stride, sizeof k->stride);
    memcpy(k->pad, a->pad, sizeof k->pad);
    memcpy(k->dilation, a->dilation, sizeof k->dilation);
    k->has_bias = a->bias != NULL;
    k->sum = a->residual != NULL;
    k->act_op = -1;
    if (a->has_act && a->act.op != GAIO_UNARY_IDENTITY) {
        k->act_op = (int32_t)a->act.op;
        if (a->act.op == GAIO_UNARY_CLIP || a->act.op == GAIO_UNARY_HARD_SIGMOID) {
            k->alpha = a->act.alpha;
            k->beta = a->act.beta;
        }
    }
    if (a->dtype == GAIO_DTYPE_F16) {
        int64_t xd[4] = {a->n, a->c, a->h, a->w}, wd[4] = {a->k, a->c / k->groups, a->r, a->s},
                yd[4] = {a->n, a->k, a->p, a->q};
        packed_like(xd, a->xs, k->xs);
        packed_like(wd, a->ws, k->ws);
        packed_like(yd, a->ys, k->ys);
    } else {
        memcpy(k->xs, a->xs, sizeof k->xs);
        memcpy(k->ws, a->ws, sizeof k->ws);
        memcpy(k->ys, a->ys, sizeof k->ys);
    }
}

static size_t up(size_t n) { return (n + ALIGN - 1) / ALIGN * ALIGN; }

/* Bytes of the thread's scratch a call of e takes: the reordered w, x and y, the
 * convolution's scratchpad and the reorders' (one at a time). */
static size_t conv_scratch(const entry *e) {
    return up(e->w_bytes) + up(e->x_bytes) + up(e->y_bytes) + up(e->scratch_bytes) + up(e->reorder_scratch);
}

static gaio_status reorder_run(const entry *e, const reorder *r, thread_state *t, const void *from, void *to,
                               void *scratch) {
    const conv_key *key = &e->key;
    gaio_status status = GAIO_OK;
    dnnl_memory_t mf = NULL, mt = NULL, ms = NULL;
    TRY(gaio__dnnl.memory_create(&mf, &r->from, gaio__dnnl_engine, (void *)from), "dnnl_memory_create(reorder)");
    TRY(gaio__dnnl.memory_create(&mt, &r->to, gaio__dnnl_engine, to), "dnnl_memory_create(reorder)");
    dnnl_exec_arg_t args[3] = {{DNNL_ARG_FROM, mf}, {DNNL_ARG_TO, mt}};
    int nargs = 2;
    if (r->scratch_bytes) {
        TRY(gaio__dnnl.memory_create(&ms, &r->scratch_md, gaio__dnnl_engine, scratch), "dnnl_memory_create(scratchpad)");
        args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, ms};
    }
    TRY(gaio__dnnl.primitive_execute(r->prim, t->stream, nargs, args), "dnnl_primitive_execute(reorder)");
out:
    if (ms) gaio__dnnl.memory_destroy(ms);
    if (mt) gaio__dnnl.memory_destroy(mt);
    if (mf) gaio__dnnl.memory_destroy(mf);
    return status;
}

/* Runs e on the f32 buffers (y already holds the residual when e sums). */
static gaio_status run(const entry *e, thread_state *t, char *scratch, const float *x, const float *w,
                       const void *w_ready, const float *bias, float *y) {
    const conv_key *key = &e->key;
    gaio_status status = GAIO_OK;
    dnnl_memory_t mx = NULL, mw = NULL, mb = NULL, my = NULL, ms = NULL;
    char *wbuf = scratch, *xbuf = wbuf + up(e->w_bytes), *ybuf = xbuf + up(e->x_bytes);
    char *sbuf = ybuf + up(e->y_bytes), *rsbuf = sbuf + up(e->scratch_bytes);
    const void *xc = x, *wc = w_ready ? w_ready : w;
    void *yc = y;
    if (e->wr.prim && !w_ready) {
        status = reorder_run(e, &e->wr, t, w, wbuf, rsbuf);
        wc = wbuf;
    }
    if (status == GAIO_OK && e->xr.prim) {
        status = reorder_run(e, &e->xr, t, x, xbuf, rsbuf);
        xc = xbuf;
    }
    if (e->yout.prim) {
        yc = ybuf;
        if (status == GAIO_OK && e->yin.prim) status = reorder_run(e, &e->yin, t, y, ybuf, rsbuf);
    }
    if (status != GAIO_OK) return status;

    TRY(gaio__dnnl.memory_create(&mx, &e->x_md, gaio__dnnl_engine, (void *)xc), "dnnl_memory_create(x)");
    TRY(gaio__dnnl.memory_create(&mw, &e->w_md, gaio__dnnl_engine, (void *)wc), "dnnl_memory_create(w)");
    TRY(gaio__dnnl.memory_create(&my, &e->y_md, gaio__dnnl_engine, yc), "dnnl_memory_create(y)");
    dnnl_exec_arg_t args[5] = {{DNNL_ARG_SRC, mx}, {DNNL_ARG_WEIGHTS, mw}, {DNNL_ARG_DST, my}};
    int nargs = 3;
    if (bias) {
        TRY(gaio__dnnl.memory_create(&mb, &e->b_md, gaio__dnnl_engine, (void *)bias), "dnnl_memory_create(bias)");
        args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, mb};
    }
    if (e->scratch_bytes) {
        TRY(gaio__dnnl.memory_create(&ms, &e->scratch_md, gaio__dnnl_engine, sbuf), "dnnl_memory_create(scratchpad)");
        args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, ms};
    }
    TRY(gaio__dnnl.primitive_execute(e->conv, t->stream, nargs, args), "dnnl_primitive_execute(convolution)");
    if (e->yout.prim) {
        status = reorder_run(e, &e->yout, t, ybuf, y, rsbuf);
        if (status != GAIO_OK) goto out;
    }
    TRY(gaio__dnnl.stream_wait(t->stream), "dnnl_stream_wait");
out:;
    dnnl_memory_t all[] = {mx, mw, mb, my, ms};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i]) gaio__dnnl.memory_destroy(all[i]);
    return status;
}

static gaio_status onednn_conv(const gaio__conv_args *a) {
    gaio_status status = GAIO_OK;
    if (a->dtype != GAIO_DTYPE_F32 && a->dtype != GAIO_DTYPE_F16)
        return gaio__fail(GAIO_ERR_NOT_SUPPORTED, FN, "the host convolution takes f32 or f16");
    if (a->n == 0 || a->k == 0 || a->p == 0 || a->q == 0) return GAIO_OK; /* y is empty */

    conv_key key;
    key_fill(a, &key);
    entry *e = NULL;
    /* Packed weights hold their primitive: it runs them even once the cache has evicted
     * it (a model of more than CACHE_ENTRIES problems would otherwise rebuild entries at
     * every call). Weights packed for another problem are not used. */
    const void *w_ready = NULL;
    if (a->packed && memcmp(&a->packed->e->key, &key, sizeof key) == 0) {
        entry_ref(e = a->packed->e);
        w_ready = a->packed->buf;
    } else if ((status = entry_get(&key, &e)) != GAIO_OK) {
        return status;
    }

    bool f16 = a->dtype == GAIO_DTYPE_F16;
    int64_t xd[4] = {a->n, a->c, a->h, a->w}, wd[4] = {a->k, a->c / key.groups, a->r, a->s},
            yd[4] = {a->n, a->k, a->p, a->q};
    size_t xe = (size_t)(a->n * a->c * a->h * a->w), we = (size_t)(wd[0] * wd[1] * wd[2] * wd[3]),
           ye = (size_t)(a->n * a->k * a->p * a->q);
    size_t conv_bytes = conv_scratch(e);
    size_t f16_bytes = f16 ? up(xe * 4) + up(we * 4) + up((size_t)a->k * 4) + up(ye * 4) : 0;
    thread_state *t = NULL;
    status = thread_get(&key, conv_bytes + f16_bytes, &t);
    if (status != GAIO_OK) {
        entry_release(e);
        return status;
    }
    char *scratch = t->buf;
    if (!f16) {
        /* The sum post-op adds what y holds: a residual elsewhere is copied in first. */
        if (a->residual && a->residual != a->y) convert4(CONV_F2F, yd, a->residual, a->rs, a->y, a->ys);
        status = run(e, t, scratch, a->x, a->wt, w_ready, a->bias, a->y);
    } else {
        char *p = scratch + conv_bytes;
        float *x32 = (float *)p, *w32 = (float *)(p + up(xe * 4)), *b32 = (float *)((char *)w32 + up(we * 4)),
              *y32 = (float *)((char *)b32 + up((size_t)a->k * 4));
        convert4(CONV_H2F, xd, a->x, a->xs, x32, key.xs);
        if (!w_ready) convert4(CONV_H2F, wd, a->wt, a->ws, w32, key.ws);
        if (a->bias) {
            const uint16_t *b = a->bias;
            for (int64_t i = 0; i < a->k; i++) b32[i] = h2f(b[i]);
        }
        if (a->residual) convert4(CONV_H2F, yd, a->residual, a->rs, y32, key.ys);
        status = run(e, t, scratch, x32, w32, w_ready, a->bias ? b32 : NULL, y32);
        if (status == GAIO_OK) convert4(CONV_F2H, yd, y32, key.ys, a->y, a->ys);
    }
    thread_trim(t);
    entry_release(e);
    return status;
}

static gaio_status onednn_prepare(const gaio__conv_args *a, char *impl, size_t size) {
    gaio_status status = GAIO_OK;
    if (a->n == 0 || a->k == 0 || a->p == 0 || a->q == 0) return GAIO_OK;
    conv_key key;
    key_fill(a, &key);
    entry *e = NULL;
    status = entry_get(&key, &e);
    if (status != GAIO_OK) return status;
    if (impl && size) snprintf(impl, size, "oneDNN %s%s%s", e->impl, e->wr.prim ? ", w reordered" : "",
                                 e->xr.prim || e->yout.prim ? ", x/y reordered" : "");
    entry_release(e);
    return GAIO_OK;
}

gaio__conv_cpu_weights *gaio__conv_cpu_weights_ref(gaio__conv_cpu_weights *w) {
    atomic_fetch_add_explicit(&w->refs, 1, memory_order_relaxed);
    return w;
}

void gaio__conv_cpu_weights_release(gaio__conv_cpu_weights *w) {
    if (!w || atomic_fetch_sub_explicit(&w->refs, 1, memory_order_acq_rel) != 1) return;
    entry_release(w->e);
    free(w->buf);
    free(w);
}

gaio_status gaio__conv_cpu_pack(const gaio__conv_args *a, gaio__conv_cpu_weights **out) {
    *out = NULL;
    if (!gaio__onednn_ready() || (a->dtype != GAIO_DTYPE_F32 && a->dtype != GAIO_DTYPE_F16) || a->n == 0 ||
        a->k == 0 || a->p == 0 || a->q == 0)
        return GAIO_OK;
    conv_key key;
    key_fill(a, &key);
    entry *e = NULL;
    gaio_status status = entry_get(&key, &e);
    if (status == GAIO_ERR_NOT_SUPPORTED) return GAIO_OK; /* gaio's own convolution: nothing to pack */
    if (status != GAIO_OK) return status;
    if (!e->wr.prim) {
        entry_release(e);
        return GAIO_OK;
    }
    const bool f16 = a->dtype == GAIO_DTYPE_F16;
    int64_t wd[4] = {a->k, a->c / key.groups, a->r, a->s};
    size_t we = (size_t)(wd[0] * wd[1] * wd[2] * wd[3]);
    gaio__conv_cpu_weights *w = calloc(1, sizeof *w);
    void *buf = aligned_alloc(ALIGN, up(e->w_bytes));
    thread_state *t = NULL;
    if (!w || !buf) status = gaio__fail(GAIO_ERR_NO_MEMORY, FN, "out of host memory for %zu bytes of weights", e->w_bytes);
    if (status == GAIO_OK) status = thread_get(&key, up(e->reorder_scratch) + (f16 ? up(we * 4) : 0), &t);
    if (status == GAIO_OK) {
        const void *src = a->wt;
        if (f16) { /* widened as onednn_conv widens it: the primitive is the f32 one */
            float *w32 = (float *)((char *)t->buf + up(e->reorder_scratch));
            convert4(CONV_H2F, wd, a->wt, a->ws, w32, key.ws);
            src = w32;
        }
        status = reorder_run(e, &e->wr, t, src, buf, t->buf);
        if (status == GAIO_OK && gaio__dnnl.stream_wait(t->stream) != dnnl_success)
            status = gaio__fail(GAIO_ERR_DRIVER, FN, "dnnl_stream_wait failed after the weights' reorder");
        thread_trim(t);
    }
    if (status != GAIO_OK) {
        free(buf);
        free(w);
        entry_release(e);
        return status;
    }
    atomic_init(&w->refs, 1);
    w->e = e;
    w->buf = buf;
    *out = w;
    return GAIO_OK;
}

/* oneDNN when it is there; gaio's own convolution when it is not, or when oneDNN has
 * no implementation for the problem (dnnl_unimplemented: GAIO_ERR_NOT_SUPPORTED). */
gaio_status gaio__conv_cpu(const gaio__conv_args *a) {
    if (gaio__onednn_ready()) {
        gaio_status status = onednn_conv(a);
        if (status != GAIO_ERR_NOT_SUPPORTED) return status;
    }
    return gaio__conv_gemm(a);
}

gaio_status gaio__conv_cpu_prepare(const gaio__conv_args *a, char *impl, size_t size) {
    if (impl && size) impl[0] = 0;
    if (gaio__onednn_ready()) {
        gaio_status status = onednn_prepare(a, impl, size);
        if (status != GAIO_ERR_NOT_SUPPORTED) return status;
    }
    gaio__conv_gemm_engine(a, impl, size);
    return GAIO_OK;
}

#else

gaio_status gaio__conv_cpu(const gaio__conv_args *a) { return gaio__conv_gemm(a); }

gaio_status gaio__conv_cpu_pack(const gaio__conv_args *a, gaio__conv_cpu_weights **out) {
    (void)a;
    *out = NULL; /* gaio's own convolution reads w as it is */
    return GAIO_OK;
}

gaio__conv_cpu_weights *gaio__conv_cpu_weights_ref(gaio__conv_cpu_weights *w) { return w; }

void gaio__conv_cpu_weights_release(gaio__conv_cpu_weights *w) { (void)w; }

gaio_status gaio__conv_cpu_prepare(const gaio__conv_args *a, char *impl, size_t size) {
    if (impl && size) impl[0] = 0;
    gaio__conv_gemm_engine(a, impl, size);
    return GAIO_OK;
}

#endif
