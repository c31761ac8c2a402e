/* The CPU backend's streams: each an in-order queue of ops, drained by at most one
 * worker of the core's pool at a time; a stream with ops waits in the pool's run
 * queue at its priority's level. */
#ifndef GAIO_CPU_STREAM_H
#define GAIO_CPU_STREAM_H

#include <pthread.h>
#include <stdbool.h>

#include "core/workers.h"
#include "gaio/status.h"

#define GAIO_CPU_MAX_PRIORITY GAIO_POOL_MAX_LEVEL

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
    gaio_work work;    /* in the pool's run queue while QUEUED; runs the drain */
    gaio_stream *stream;
    int level;
} cpu_stream;

/* Sets up cs for stream s (its lock, its work item). */
void gaio__cpu_stream_setup(cpu_stream *cs, gaio_stream *s);

/* The backend's submit: appends the op and queues the stream if it was idle. */
gaio_status gaio__cpu_submit(gaio_op *op);

#endif
