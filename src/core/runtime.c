/* Process-wide state: configuration, the count of live contexts, and start/stop
 * of the threads every backend shares. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/kernel_registry.h"
#include "core/object.h"
#include "core/op_cache.h"
#include "core/submitter.h"
#include "core/workers.h"

_Thread_local bool gaio__on_gaio_thread;

static pthread_mutex_t rt_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t rt_idle = PTHREAD_COND_INITIALIZER;
static gaio_config rt_config;
/* rt_config.wait_policy, read on every future wait: kept apart from rt_lock. */
static atomic_int rt_policy = GAIO_WAIT_HYBRID;
static int rt_contexts;
static gaio_context *rt_live; /* linked by rt_next: what gaio_shutdown reports when it cannot stop */
static bool rt_running;
static int rt_workers;

int gaio_version(void) { return GAIO_VERSION; }

static int default_workers(void) {
    const char *env = getenv("GAIO_CPU_WORKERS");
    if (env) {
        char *end;
        long v = strtol(env, &end, 10);
        if (*end == '\0' && v > 0 && v <= 1024) return (int)v;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* GAIO_WAIT_POLICY=hybrid|spin|block: the completion thread's policy where the program
 * leaves it at the default; -1 when unset or not one of those. */
static int env_wait_policy(void) {
    const char *env = getenv("GAIO_WAIT_POLICY");
    if (!env) return -1;
    if (strcmp(env, "hybrid") == 0) return GAIO_WAIT_HYBRID;
    if (strcmp(env, "spin") == 0) return GAIO_WAIT_SPIN;
    if (strcmp(env, "block") == 0) return GAIO_WAIT_BLOCK;
    return -1;
}

bool gaio__runtime_few_cores(void) {
    static atomic_int few = -1; /* unknown yet; the answer does not change */
    int v = atomic_load_explicit(&few, memory_order_relaxed);
    if (v < 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        v = n > 0 && n <= 2;
        atomic_store_explicit(&few, v, memory_order_relaxed);
    }
    return v != 0;
}

gaio_status gaio_configure(const gaio_config *config) {
    if (config) {
        GAIO_REQUIRE(config->cpu_workers >= 0 && config->cpu_workers <= 1024,
                     "config->cpu_workers is %d; it must be 0 (default) .. 1024", config->cpu_workers);
        GAIO_REQUIRE((unsigned)config->wait_policy <= GAIO_WAIT_BLOCK,
                     "config->wait_policy is %d; it must be GAIO_WAIT_HYBRID, _SPIN or _BLOCK", (int)config->wait_policy);
    }
    pthread_mutex_lock(&rt_lock);
    if (rt_running) {
        pthread_mutex_unlock(&rt_lock);
        return GAIO_FAIL(GAIO_ERR_STATE, "gaio is running (a context was created); configure before the first "
                                         "context or after gaio_shutdown");
    }
    if (config)
        rt_config = *config;
    else
        rt_config = (gaio_config){0};
    atomic_store(&rt_policy, (int)rt_config.wait_policy);
    pthread_mutex_unlock(&rt_lock);
    return GAIO_OK;
}

gaio_status gaio__runtime_enter(gaio_context *ctx) {
    pthread_mutex_lock(&rt_lock);
    if (!rt_running) {
        int n = rt_config.cpu_workers > 0 ? rt_config.cpu_workers : default_workers();
        gaio_status st = gaio__pool_start(n);
        if (st != GAIO_OK) {
            pthread_mutex_unlock(&rt_lock);
            return st;
        }
        rt_workers = n;
        rt_running = true;
        int env_policy = env_wait_policy();
        if (rt_config.wait_policy == GAIO_WAIT_HYBRID && env_policy >= 0) atomic_store(&rt_policy, env_policy);
    }
    rt_contexts++;
    ctx->rt_next = rt_live;
    ctx->rt_prev = NULL;
    if (rt_live) rt_live->rt_prev = ctx;
    rt_live = ctx;
    pthread_mutex_unlock(&rt_lock);
    return GAIO_OK;
}

void gaio__runtime_leave(gaio_context *ctx) {
    pthread_mutex_lock(&rt_lock);
    if (ctx->rt_prev) ctx->rt_prev->rt_next = ctx->rt_next;
    else rt_live = ctx->rt_next;
    if (ctx->rt_next) ctx->rt_next->rt_prev = ctx->rt_prev;
    if (--rt_contexts == 0) pthread_cond_broadcast(&rt_idle);
    pthread_mutex_unlock(&rt_lock);
}

gaio_wait_policy gaio__runtime_wait_policy(void) {
    return (gaio_wait_policy)atomic_load_explicit(&rt_policy, memory_order_relaxed);
}

int gaio__runtime_cpu_workers(void) {
    pthread_mutex_lock(&rt_lock);
    int n = rt_running ? rt_workers : (rt_config.cpu_workers > 0 ? rt_config.cpu_workers : default_workers());
    pthread_mutex_unlock(&rt_lock);
    return n;
}

gaio_status gaio_shutdown(void) {
    if (gaio__on_gaio_thread)
        return GAIO_FAIL(GAIO_ERR_STATE, "called from a gaio thread (a callback, host function or host kernel); "
                                         "it would wait for itself");
    pthread_mutex_lock(&rt_lock);
    /* Work that just finished may still be dropping the last references (a fence's
     * future completes before its op lets go of the stream): give it a moment. */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 1;
    while (rt_contexts > 0)
        if (pthread_cond_timedwait(&rt_idle, &rt_lock, &until) != 0) break;
    if (rt_contexts > 0) {
        /* Say which: the references each context has, and what each stream has not finished. */
        char detail[384] = "";
        size_t used = 0;
        for (gaio_context *c = rt_live; c && used < sizeof detail - 64; c = c->rt_next) {
            used += (size_t)snprintf(detail + used, sizeof detail - used, " [device %d: %ld references;", c->device,
                                     atomic_load(&c->ref.n));
            pthread_mutex_lock(&c->lock);
            for (gaio_stream *st = c->streams; st && used < sizeof detail - 48; st = st->next)
                used += (size_t)snprintf(detail + used, sizeof detail - used, " %sstream %llu/%llu done%s",
                                         st->is_default ? "default " : "",
                                         (unsigned long long)atomic_load(&st->retired),
                                         (unsigned long long)atomic_load(&st->submitted), st->next ? "," : "");
            pthread_mutex_unlock(&c->lock);
            used += (size_t)snprintf(detail + used, sizeof detail - used, "]");
        }
        int n = rt_contexts;
        pthread_mutex_unlock(&rt_lock);
        return GAIO_FAIL(GAIO_ERR_STATE,
                         "%d context(s) still alive (held by the caller, or by streams, buffers, events or work "
                         "in flight); release them and wait for their work first:%s",
                         n, detail);
    }
    if (rt_running) {
        gaio__submitters_stop();
        gaio__pool_stop();
        for (const gaio_backend *const *b = gaio__backends; *b; b++)
            if ((*b)->shutdown) (*b)->shutdown();
        gaio__kernels_unload_device_code();
        gaio__op_cache_trim();
        rt_running = false;
    }
    pthread_mutex_unlock(&rt_lock);
    return GAIO_OK;
}
