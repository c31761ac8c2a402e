/* The baseline the CPU backend is measured against: the plainest thread-pool
 * work queue. N worker threads, one mutex, one condition variable, a FIFO of
 * (function, argument) nodes, and a "future" made of a mutex and a condition
 * variable. No streams, no ordering between workers, no spinning. */
#ifndef GAIO_BENCH_BASELINE_QUEUE_H
#define GAIO_BENCH_BASELINE_QUEUE_H

#include <pthread.h>
#include <stdbool.h>

typedef void (*bq_fn)(void *arg);

typedef struct bq bq;

/* 0 on success, an errno value otherwise. */
int bq_create(int workers, bq **out);
/* Runs what is queued, then stops and joins the workers. */
void bq_destroy(bq *q);

/* Appends fn(arg) to the FIFO: malloc a node, lock, link, signal, unlock.
 * 0 on success, ENOMEM. */
int bq_submit(bq *q, bq_fn fn, void *arg);

/* Blocks until every submitted function has returned. */
void bq_drain(bq *q);

typedef struct bq_future {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool done;
} bq_future;

void bq_future_init(bq_future *f);
void bq_future_destroy(bq_future *f);
void bq_future_reset(bq_future *f);
void bq_future_set(bq_future *f);
void bq_future_wait(bq_future *f);
/* A bq_fn that sets the bq_future passed as arg. */
void bq_future_set_fn(void *arg);

#endif
