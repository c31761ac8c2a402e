#include "cpu/workers.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/object.h"

#define LEVELS (GAIO_CPU_MAX_PRIORITY + 1)
/* Before sleeping, an idle worker watches the queue this long: new work then
 * starts without a futex wake-up, and an idle process still costs no CPU. */
#define SPIN_NS 20000

#define TASK_BIT (1u << 31)

static struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    cpu_stream *head[LEVELS], *tail[LEVELS];
    atomic_uint ready_mask; /* bit l: level l is non-empty; TASK_BIT: tasks wait */
    gaio_task *task_head, *task_tail;
    int sleeping;
    bool stop;
    pthread_t *threads;
} rq = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

/* The pool's size: set before the workers start, so that host kernels running on
 * them read it without a lock (gaio__cpu_parallel_for). */
static atomic_int worker_count;

int gaio__cpu_worker_count(void) { return atomic_load_explicit(&worker_count, memory_order_relaxed); }

void gaio__cpu_rq_push(cpu_stream *cs) {
    int l = cs->level;
    pthread_mutex_lock(&rq.lock);
    cs->rq_next = NULL;
    if (rq.tail[l]) rq.tail[l]->rq_next = cs;
    else rq.head[l] = cs;
    rq.tail[l] = cs;
    atomic_fetch_or_explicit(&rq.ready_mask, 1u << l, memory_order_release);
    if (rq.sleeping) pthread_cond_signal(&rq.cond);
    pthread_mutex_unlock(&rq.lock);
}

void gaio__cpu_task_push(gaio_task *task) {
    pthread_mutex_lock(&rq.lock);
    task->next = NULL;
    if (rq.task_tail) rq.task_tail->next = task;
    else rq.task_head = task;
    rq.task_tail = task;
    atomic_fetch_or_explicit(&rq.ready_mask, TASK_BIT, memory_order_release);
    if (rq.sleeping) pthread_cond_signal(&rq.cond);
    pthread_mutex_unlock(&rq.lock);
}

/* Under rq.lock: the oldest task, or NULL. */
static gaio_task *task_take(void) {
    gaio_task *t = rq.task_head;
    if (!t) return NULL;
    rq.task_head = t->next;
    if (!rq.task_head) {
        rq.task_tail = NULL;
        atomic_fetch_and_explicit(&rq.ready_mask, ~TASK_BIT, memory_order_relaxed);
    }
    return t;
}

bool gaio__cpu_rq_more_urgent(int level) {
    return (atomic_load_explicit(&rq.ready_mask, memory_order_relaxed) >> (level + 1)) != 0;
}

/* Under rq.lock: the most urgent ready stream, or NULL. */
static cpu_stream *rq_take(void) {
    unsigned mask = atomic_load_explicit(&rq.ready_mask, memory_order_relaxed) & ~TASK_BIT;
    if (!mask) return NULL;
    int l = 31 - __builtin_clz(mask);
    cpu_stream *cs = rq.head[l];
    rq.head[l] = cs->rq_next;
    if (!rq.head[l]) {
        rq.tail[l] = NULL;
        atomic_fetch_and_explicit(&rq.ready_mask, ~(1u << l), memory_order_relaxed);
    }
    return cs;
}

static void *worker_main(void *arg) {
    (void)arg;
    gaio__on_gaio_thread = true;
    pthread_mutex_lock(&rq.lock);
    for (;;) {
        if (rq.stop) break;
        gaio_task *task = task_take();
        if (task) {
            pthread_mutex_unlock(&rq.lock);
            task->fn(task);
            pthread_mutex_lock(&rq.lock);
            continue;
        }
        cpu_stream *cs = rq_take();
        if (cs) {
            pthread_mutex_unlock(&rq.lock);
            gaio__cpu_stream_drain(cs);
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

gaio_status gaio__cpu_workers_start(int count) {
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

void gaio__cpu_workers_stop(void) {
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
