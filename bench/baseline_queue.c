#include "baseline_queue.h"

#include <errno.h>
#include <stdlib.h>

typedef struct bq_node {
    struct bq_node *next;
    bq_fn fn;
    void *arg;
} bq_node;

struct bq {
    pthread_mutex_t lock;
    pthread_cond_t cond;      /* workers wait here for nodes */
    pthread_cond_t idle_cond; /* bq_drain waits here for pending == 0 */
    bq_node *head, *tail;
    unsigned long pending; /* submitted and not yet returned */
    bool stop;
    int count;
    pthread_t *threads;
};

static void *bq_worker(void *arg) {
    bq *q = arg;
    pthread_mutex_lock(&q->lock);
    for (;;) {
        bq_node *n = q->head;
        if (!n) {
            if (q->stop) break;
            pthread_cond_wait(&q->cond, &q->lock);
            continue;
        }
        q->head = n->next;
        if (!q->head) q->tail = NULL;
        pthread_mutex_unlock(&q->lock);
        n->fn(n->arg);
        free(n);
        pthread_mutex_lock(&q->lock);
        if (--q->pending == 0) pthread_cond_broadcast(&q->idle_cond);
    }
    pthread_mutex_unlock(&q->lock);
    return NULL;
}

int bq_create(int workers, bq **out) {
    *out = NULL;
    if (workers < 1) return EINVAL;
    bq *q = calloc(1, sizeof *q);
    pthread_t *threads = calloc((size_t)workers, sizeof *threads);
    if (!q || !threads) {
        free(q);
        free(threads);
        return ENOMEM;
    }
    pthread_mutex_init(&q->lock, NULL);
    pthread_cond_init(&q->cond, NULL);
    pthread_cond_init(&q->idle_cond, NULL);
    q->threads = threads;
    for (int i = 0; i < workers; i++) {
        int rc = pthread_create(&threads[i], NULL, bq_worker, q);
        if (rc != 0) {
            q->count = i;
            bq_destroy(q);
            return rc;
        }
    }
    q->count = workers;
    *out = q;
    return 0;
}

void bq_destroy(bq *q) {
    if (!q) return;
    pthread_mutex_lock(&q->lock);
    q->stop = true;
    pthread_cond_broadcast(&q->cond);
    pthread_mutex_unlock(&q->lock);
    for (int i = 0; i < q->count; i++) pthread_join(q->threads[i], NULL);
    pthread_cond_destroy(&q->idle_cond);
    pthread_cond_destroy(&q->cond);
    pthread_mutex_destroy(&q->lock);
    free(q->threads);
    free(q);
}

int bq_submit(bq *q, bq_fn fn, void *arg) {
    bq_node *n = malloc(sizeof *n);
    if (!n) return ENOMEM;
    n->next = NULL;
    n->fn = fn;
    n->arg = arg;
    pthread_mutex_lock(&q->lock);
    if (q->tail) q->tail->next = n;
    else q->head = n;
    q->tail = n;
    q->pending++;
    pthread_cond_signal(&q->cond);
    pthread_mutex_unlock(&q->lock);
    return 0;
}

void bq_drain(bq *q) {
    pthread_mutex_lock(&q->lock);
    while (q->pending) pthread_cond_wait(&q->idle_cond, &q->lock);
    pthread_mutex_unlock(&q->lock);
}

void bq_future_init(bq_future *f) {
    pthread_mutex_init(&f->lock, NULL);
    pthread_cond_init(&f->cond, NULL);
    f->done = false;
}

void bq_future_destroy(bq_future *f) {
    pthread_cond_destroy(&f->cond);
    pthread_mutex_destroy(&f->lock);
}

void bq_future_reset(bq_future *f) {
    pthread_mutex_lock(&f->lock);
    f->done = false;
    pthread_mutex_unlock(&f->lock);
}

void bq_future_set(bq_future *f) {
    pthread_mutex_lock(&f->lock);
    f->done = true;
    pthread_cond_broadcast(&f->cond);
    pthread_mutex_unlock(&f->lock);
}

void bq_future_wait(bq_future *f) {
    pthread_mutex_lock(&f->lock);
    while (!f->done) pthread_cond_wait(&f->cond, &f->lock);
    pthread_mutex_unlock(&f->lock);
}

void bq_future_set_fn(void *arg) { bq_future_set(arg); }
