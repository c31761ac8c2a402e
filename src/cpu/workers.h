/* The CPU backend's worker pool and its priority run queue. Each stream is an
 * in-order queue of ops drained by at most one worker at a time; ready streams
 * wait in one FIFO per priority level and the most urgent level goes first. */
#ifndef GAIO_CPU_WORKERS_H
#define GAIO_CPU_WORKERS_H

#include <pthread.h>
#include <stdbool.h>

#include "gaio/status.h"

#define GAIO_CPU_MAX_PRIORITY 7

typedef struct gaio_op gaio_op;
typedef struct gaio_stream gaio_stream;

typedef enum cpu_stream_state {
    CPU_STREAM_IDLE,    /* no ops */
    CPU_STREAM_QUEUED,  /* in the run queue */
    CPU_STREAM_RUNNING, /* a worker drains it */
    CPU_STREAM_BLOCKED  /* its head op waits for a future of another stream */
} cpu_stream_state;

typedef struct cpu_stream {
    pthread_mutex_t lock;
    gaio_op *head, *tail;
    cpu_stream_state state;
    bool wake_pending; /* the awaited future completed while the stream was still running */
    struct cpu_stream *rq_next;
    gaio_stream *stream;
    int level;
} cpu_stream;

/* A unit of host work for the pool, run ahead of any stream: the CUDA backend runs
 * host functions here so that a slow one holds up only its own stream. */
typedef struct gaio_task {
    struct gaio_task *next;
    void (*fn)(struct gaio_task *task);
} gaio_task;
void gaio__cpu_task_push(gaio_task *task);

/* Runs fn(arg, begin, end) over [0, n) split into chunks of at least `grain`
 * items, on the calling thread and on workers of the pool that are free; returns
 * when every chunk has run. The caller never waits for a worker that has not
 * started: it runs what nobody took itself, so a pool busy with other streams
 * costs speed, never progress. Host kernels use it to split a batch. */
typedef void (*gaio_range_fn)(void *arg, size_t begin, size_t end);
void gaio__cpu_parallel_for(size_t n, size_t grain, gaio_range_fn fn, void *arg);
/* The pool's size (0 while it is stopped). */
int gaio__cpu_worker_count(void);

gaio_status gaio__cpu_workers_start(int count);
void gaio__cpu_workers_stop(void);

/* Puts a stream in the run queue; the queue takes over one stream reference. */
void gaio__cpu_rq_push(cpu_stream *cs);

/* The backend's submit: appends the op and queues the stream if it was idle. */
gaio_status gaio__cpu_submit(gaio_op *op);

/* Drains a stream popped from the run queue (cpu_stream.c). */
void gaio__cpu_stream_drain(cpu_stream *cs);
/* True when a stream more urgent than `level` waits in the run queue. */
bool gaio__cpu_rq_more_urgent(int level);

#endif
