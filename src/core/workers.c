/* The worker pool's run queue: one FIFO per level, a mask of the non-empty ones
 * that workers read without the lock. */
#include "core/workers.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/object.h"

#define LEVELS (GAIO_POOL_URGENT + 1)
/* Before sleeping, an idle worker watches the queue this long: new work then
 * starts without a futex wake-up, and an idle process still costs no CPU. */
#define SPIN_NS 20000

static struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    gaio_work *head[LEVELS], *tail[LEVELS];
    atomic_uint ready_mask; /* bit l: level l is non-empty */
    int sleeping;
    bool stop;
    pthread_t *threads;
} rq = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

/* The pool's size: set before the workers start, so that host kernels running on
 * them read it without a lock (gaio__parallel_for). */
static atomic_int worker_count;

int gaio__pool_size(void) { return atomic_load_explicit(&worker_count, memory_order_relaxed); }

void gaio__pool_push(gaio_work *work, int l) {
    pthread_mutex_lock(&rq.lock);
    work->next = NULL;
    if (rq.tail[l]) rq.tail[l]->next = work;
    else rq.head[l] = work;
    rq.tail[l] = work;
    atomic_fetch_or_explicit(&rq.ready_mask, 1u << l, memory_order_release);
    if (rq.sleeping) pthread_cond_signal(&rq.cond);
    pthread_mutex_unlock(&rq.lock);
}

bool gaio__pool_more_urgent(int level) {
    return (atomic_load_explicit(&rq.ready_mask, memory_order_relaxed) >> (level + 1)) != 0;
}

/* Under rq.lock: the oldest item of the most urgent non-empty level, or NULL. */
static gaio_work *rq_take(void) {
    unsigned mask = atomic_load_explicit(&rq.ready_mask, memory_order_relaxed);
    if (!mask) return NULL;
    int l = 31 - __builtin_clz(mask);
    gaio_work *w = rq.head[l];
    rq.head[l] = w->next;
    if (!rq.head[l]) {
        rq.tail[l] = NULL;
        atomic_fetch_and_explicit(&rq.ready_mask, ~(1u << l), memory_order_relaxed);
    }
    return w;
}

static void *worker_main(void *arg) {
    (void)arg;
    gaio__on_gaio_thread = true;
    pthread_mutex_lock(&rq.lock);
    for (;;) {
        if (rq.stop) break;
        gaio_work *w = rq_take();
        if (w) {
            pthread_mutex_unlock(&rq.lock);
            w->run(w);
            pthread_mutex_lock(&rq.lock);
            continue;
        }
        pthread_mutex_unlock(&rq.lock);
        uint64_t until = gaio__now_ns() + SPIN_NS;
        bool seen = false;
        for (int i = 0; !seen; i++) {
            seen = atomic_load_explicit(&rq.ready_mask, memory_order_acquire) != 0;
            if ((i & 63) == 63 && gaio__now_ns() > until) break;
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#endif
        }
        pthread_mutex_lock(&rq.lock);
        if (seen || rq.stop || atomic_load_explicit(&rq.ready_mask, memory_order_relaxed)) continue;
        rq.sleeping++;
        pthread_cond_wait(&rq.cond, &rq.lock);
        rq.sleeping--;
    }
    pthread_mutex_unlock(&rq.lock);
    return NULL;
}

gaio_status gaio__pool_start(int count) {
    pthread_t *threads = calloc((size_t)count, sizeof *threads);
    if (!threads) return GAIO_FAIL(GAIO_ERR_NO_MEMORY, "out of host memory for %d worker threads", count);
    pthread_mutex_lock(&rq.lock);
    rq.stop = false;
    pthread_mutex_unlock(&rq.lock);
    atomic_store(&worker_count, count);
    for (int i = 0; i < count; i++) {
        int rc = pthread_create(&threads[i], NULL, worker_main, NULL);
        if (rc != 0) {
            pthread_mutex_lock(&rq.lock);
            rq.stop = true;
            pthread_cond_broadcast(&rq.cond);
            pthread_mutex_unlock(&rq.lock);
            for (int j = 0; j < i; j++) pthread_join(threads[j], NULL);
            free(threads);
            atomic_store(&worker_count, 0);
            return GAIO_FAIL(GAIO_ERR_SYSTEM, "pthread_create for worker %d of %d failed: %s", i, count, strerror(rc));
        }
    }
    rq.threads = threads;
    return GAIO_OK;
}

void gaio__pool_stop(void) {
    pthread_mutex_lock(&rq.lock);
    rq.stop = true;
    pthread_cond_broadcast(&rq.cond);
    pthread_mutex_unlock(&rq.lock);
    int count = atomic_load(&worker_count);
    for (int i = 0; i < count; i++) pthread_join(rq.threads[i], NULL);
    free(rq.threads);
    rq.threads = NULL;
    atomic_store(&worker_count, 0);
}
