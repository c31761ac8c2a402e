/* A context's cuDNN plans (conv_cuda.c) as the plan-cache file code (plan_file.c)
 * sees them. */
#ifndef GAIO_DNN_CUDA_CONV_CACHE_H
#define GAIO_DNN_CUDA_CONV_CACHE_H

#include <pthread.h>
#include <stddef.h>

#include "dnn/cuda/cudnn_graph.h"

typedef struct conv_cache {
    pthread_mutex_t lock;       /* the list */
    pthread_mutex_t build_lock; /* one build (or load) at a time: it uses handle */
    cudnnHandle_t handle;       /* builds plans; made on first build */
    gaio__conv_plan *plans;     /* most recently used first */
} conv_cache;

/* The context's cache, made on first use (NULL with the thread's error set). */
conv_cache *gaio__conv_cache(const char *fn, gaio_context *ctx);

/* Makes c->handle if needed; under build_lock with the device's context current. */
gaio_status gaio__conv_cache_handle(const char *fn, conv_cache *c, const gaio_cudnn_table *t);

/* The cached plan of k with a reference for the caller (release it with
 * gaio__conv_plan_release), or NULL. */
gaio__conv_plan *gaio__conv_cache_get(conv_cache *c, const conv_key *k);

/* Adds a plan built elsewhere (a loaded one): 1 when added (the cache owns b->plan
 * from then on); 0 when the key is cached already, -1 out of memory (b->plan stays
 * the caller's in both). */
int gaio__conv_cache_add(conv_cache *c, const conv_key *k, const conv_built *b);

/* Adds b (a loaded plan) unless its key is cached, and returns the cached plan of the
 * key with a reference for the caller in *out: 0, or -1 out of memory (b->plan stays
 * the caller's then). When the key was cached, b->plan is destroyed here. */
int gaio__conv_cache_put(conv_cache *c, const conv_key *k, const conv_built *b, gaio__conv_plan **out);

/* Up to max plans, each with a reference (release each with gaio__conv_plan_release). */
size_t gaio__conv_cache_snapshot(conv_cache *c, gaio__conv_plan **out, size_t max);
const conv_key *gaio__conv_plan_key(const gaio__conv_plan *p);
const conv_built *gaio__conv_plan_built(const gaio__conv_plan *p);

#endif
