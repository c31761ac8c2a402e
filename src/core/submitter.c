/* A per-device thread takes DEFERRED streams' ops from a lock-free MPSC queue
 * (core/mpsc.h) and hands them to the backend in order. With the queue empty it
 * spins a moment (SPIN_NS) before it sleeps: work arrives in bursts (an event
 * loop submits a request's few ops, then the next request's), and a sleeping
 * thread costs each producer a system call and the op a wake-up of tens of
 * microseconds. It sleeps on a condition variable only after announcing it
 * (Dekker-style with seq_cst), so producers make a system call only when the
 * thread is really asleep. */
#include "core/submitter.h"

#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdlib.h>

#include "core/clock.h"
#include "core/hot.h"
#include "core/mpsc.h"
#include "core/op.h"

#define MAX_DEVICES 64
#define SPIN_NS 50000u

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

typedef struct submitter {
    gaio_mpsc q;
    atomic_int sleeping;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool wake;
    bool stop;
    pthread_t thread;
} submitter;

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static submitter *_Atomic table[MAX_DEVICES];

static gaio_op *q_pop(submitter *q) {
    gaio_mpsc_node *n = gaio__mpsc_pop(&q->q);
    return n ? (gaio_op *)((char *)n - offsetof(gaio_op, mq)) : NULL;
}

static void *submitter_main(void *arg) {
    submitter *q = arg;
    gaio__on_gaio_thread = true;
    for (;;) {
        gaio_op *op = q_pop(q);
        if (op) {
            gaio__submitting_fn = "gaio deferred submission";
            gaio_status st = op->stream->ctx->be->submit(op);
            if (st != GAIO_OK) gaio__op_abandon(op, st, gaio_last_error());
            continue;
        }
        if (!gaio__mpsc_empty(&q->q)) {
            sched_yield(); /* a producer is mid-push: its link lands in a moment */
            continue;
        }
        uint64_t until = gaio__now_ns() + SPIN_NS;
        bool came = false;
        for (unsigned i = 1; !came; i++) {
            for (int k = 0; k < 32 && !(came = !gaio__mpsc_empty(&q->q)); k++) cpu_relax();
            if (!came && (i & 7) == 0 && gaio__now_ns() >= until) break;
        }
        if (came) continue;
        atomic_store_explicit(&q->sleeping, 1, memory_order_seq_cst);
        if (gaio__mpsc_empty(&q->q)) {
            pthread_mutex_lock(&q->lock);
            while (!q->wake && !q->stop) pthread_cond_wait(&q->cond, &q->lock);
            q->wake = false;
            bool stop = q->stop;
            pthread_mutex_unlock(&q->lock);
            atomic_store_explicit(&q->sleeping, 0, memory_order_relaxed);
            if (stop && gaio__mpsc_empty(&q->q)) return NULL;
        } else {
            atomic_store_explicit(&q->sleeping, 0, memory_order_relaxed);
        }
    }
}

static gaio_status submitter_get(int device, submitter **out) {
    if (device < 0 || device >= MAX_DEVICES)
        return GAIO_FAIL(GAIO_ERR_NOT_SUPPORTED, "deferred streams support devices 0..%d", MAX_DEVICES - 1);
    submitter *q = atomic_load_explicit(&table[device], memory_order_acquire);
    if (q) {
        *out = q;
        return GAIO_OK;
    }
    pthread_mutex_lock(&table_lock);
    q = atomic_load_explicit(&table[device], memory_order_relaxed);
    if (!q) {
        q = gaio__calloc_lines(sizeof *q); /* the queue's ends sit on lines of their own */
        if (!q) {
            pthread_mutex_unlock(&table_lock);
            return GAIO_FAIL(GAIO_ERR_NO_MEMORY, "out of host memory for the submission thread");
        }
        gaio__mpsc_init(&q->q);
        pthread_mutex_init(&q->lock, NULL);
        pthread_cond_init(&q->cond, NULL);
        int rc = pthread_create(&q->thread, NULL, submitter_main, q);
        if (rc != 0) {
            pthread_mutex_unlock(&table_lock);
            pthread_cond_destroy(&q->cond);
            pthread_mutex_destroy(&q->lock);
            free(q);
            return GAIO_FAIL(GAIO_ERR_SYSTEM, "pthread_create for the submission thread failed (error %d)", rc);
        }
        atomic_store_explicit(&table[device], q, memory_order_release);
    }
    pthread_mutex_unlock(&table_lock);
    *out = q;
    return GAIO_OK;
}

gaio_status gaio__submitter_push(int device, gaio_op *op) {
    submitter *q = NULL;
    gaio_status st = submitter_get(device, &q);
    if (st != GAIO_OK) return st;
    gaio__mpsc_push(&q->q, &op->mq);
    if (atomic_load_explicit(&q->sleeping, memory_order_seq_cst)) {
        pthread_mutex_lock(&q->lock);
        q->wake = true;
        pthread_cond_signal(&q->cond);
        pthread_mutex_unlock(&q->lock);
    }
    return GAIO_OK;
}

void gaio__submitters_stop(void) {
    pthread_mutex_lock(&table_lock);
    for (int i = 0; i < MAX_DEVICES; i++) {
        submitter *q = atomic_load(&table[i]);
        if (!q) continue;
        pthread_mutex_lock(&q->lock);
        q->stop = true;
        pthread_cond_signal(&q->cond);
        pthread_mutex_unlock(&q->lock);
        pthread_join(q->thread, NULL);
        pthread_cond_destroy(&q->cond);
        pthread_mutex_destroy(&q->lock);
        free(q);
        atomic_store(&table[i], NULL);
    }
    pthread_mutex_unlock(&table_lock);
}
