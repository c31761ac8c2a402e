/* gaio__parallel_for: data parallelism for host kernels over the worker pool.
 *
 * A job is shared by its caller and by helper tasks queued on the pool. Everyone
 * claims chunks from one atomic counter; the caller waits only for chunks that
 * were claimed and are running, never for a helper that has not started (a helper
 * that starts late finds nothing left and drops its reference). So the pool can be
 * busy, or a host kernel can run on every worker at once, without deadlock. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "core/object.h"
#include "core/workers.h"

#define MAX_HELPERS 63

typedef struct pjob {
    atomic_size_t next;  /* the next chunk to claim */
    atomic_size_t done;  /* chunks finished */
    atomic_int refs;     /* the caller and each queued helper */
    size_t n, chunk, chunks;
    gaio_range_fn fn;
    void *arg;
    pthread_mutex_t lock; /* with cond: the caller sleeps until done == chunks */
    pthread_cond_t cond;
    int waiting;
    struct phelper {
        gaio_work work;
        struct pjob *job;
    } helpers[MAX_HELPERS];
} pjob;

static void pjob_unref(pjob *j) {
    if (atomic_fetch_sub_explicit(&j->refs, 1, memory_order_acq_rel) != 1) return;
    pthread_mutex_destroy(&j->lock);
    pthread_cond_destroy(&j->cond);
    free(j);
}

/* Claims and runs chunks until none is left. */
static void pjob_work(pjob *j) {
    for (;;) {
        size_t c = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed);
        if (c >= j->chunks) return;
        size_t b = c * j->chunk, e = b + j->chunk < j->n ? b + j->chunk : j->n;
        j->fn(j->arg, b, e);
        if (atomic_fetch_add_explicit(&j->done, 1, memory_order_acq_rel) + 1 == j->chunks) {
            pthread_mutex_lock(&j->lock);
            if (j->waiting) pthread_cond_signal(&j->cond);
            pthread_mutex_unlock(&j->lock);
        }
    }
}

static void helper_run(gaio_work *w) {
    pjob *j = ((struct phelper *)w)->job;
    pjob_work(j);
    pjob_unref(j);
}

void gaio__parallel_for(size_t n, size_t grain, gaio_range_fn fn, void *arg) {
    if (n == 0) return;
    if (grain == 0) grain = 1;
    int threads = gaio__pool_size();
    if (threads < 1) threads = 1;
    size_t max_chunks = (size_t)threads * 4; /* some slack for uneven chunks */
    size_t chunk = (n + max_chunks - 1) / max_chunks;
    if (chunk < grain) chunk = grain;
    size_t chunks = (n + chunk - 1) / chunk;
    size_t helpers = chunks - 1 < (size_t)threads - 1 ? chunks - 1 : (size_t)threads - 1;
    if (helpers > MAX_HELPERS) helpers = MAX_HELPERS;
    pjob *j = helpers ? malloc(sizeof *j) : NULL;
    if (!j) { /* one chunk, one thread, or no memory for a job: run it here */
        fn(arg, 0, n);
        return;
    }
    atomic_init(&j->next, 0);
    atomic_init(&j->done, 0);
    atomic_init(&j->refs, (int)helpers + 1);
    j->n = n;
    j->chunk = chunk;
    j->chunks = chunks;
    j->fn = fn;
    j->arg = arg;
    j->waiting = 0;
    pthread_mutex_init(&j->lock, NULL);
    pthread_cond_init(&j->cond, NULL);
    for (size_t i = 0; i < helpers; i++) {
        j->helpers[i].job = j;
        j->helpers[i].work.run = helper_run;
        gaio__pool_push(&j->helpers[i].work, GAIO_POOL_URGENT);
    }
    pjob_work(j);
    if (atomic_load_explicit(&j->done, memory_order_acquire) != chunks) {
        pthread_mutex_lock(&j->lock);
        j->waiting = 1;
        while (atomic_load_explicit(&j->done, memory_order_acquire) != chunks) pthread_cond_wait(&j->cond, &j->lock);
        pthread_mutex_unlock(&j->lock);
    }
    pjob_unref(j);
}
