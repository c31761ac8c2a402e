/* The process-wide worker pool: threads started with the first context and stopped
 * by gaio_shutdown (core/runtime.c), and their priority run queue. Work items wait
 * in one FIFO per level and the most urgent level goes first. The pool knows
 * nothing of what an item is: the CPU backend queues its streams here (each drained
 * by one worker at a time), the CUDA backend its host work, and host kernels split
 * their loops over it with gaio__parallel_for. */
#ifndef GAIO_CORE_WORKERS_H
#define GAIO_CORE_WORKERS_H

#include <stdbool.h>
#include <stddef.h>

#include "gaio/status.h"

/* Levels 0 (least urgent) .. GAIO_POOL_MAX_LEVEL, the priorities of streams. */
#define GAIO_POOL_MAX_LEVEL 7
/* Ahead of every level: short host work that others wait for (a CUDA stream's
 * host function, a parallel_for's helpers). */
#define GAIO_POOL_URGENT (GAIO_POOL_MAX_LEVEL + 1)

/* A unit of work, embedded in its owner's struct: each push runs run(work) once,
 * on a worker. An item is in the queue at most once at a time. */
typedef struct gaio_work {
    struct gaio_work *next;
    void (*run)(struct gaio_work *work);
} gaio_work;

/* Queues work at `level` (0 .. GAIO_POOL_URGENT), behind the items of its level. */
void gaio__pool_push(gaio_work *work, int level);
/* True when an item more urgent than `level` waits: a worker running a long item
 * of that level checks this to yield between pieces of it. */
bool gaio__pool_more_urgent(int level);
/* The pool's size (0 while it is stopped). */
int gaio__pool_size(void);

gaio_status gaio__pool_start(int count);
/* Joins the workers; items still queued stay queued (no context is alive then). */
void gaio__pool_stop(void);

/* Runs fn(arg, begin, end) over [0, n) split into chunks of at least `grain`
 * items, on the calling thread and on workers of the pool that are free; returns
 * when every chunk has run. The caller never waits for a worker that has not
 * started: it runs what nobody took itself, so a pool busy with other streams
 * costs speed, never progress. Host kernels use it to split a batch. */
typedef void (*gaio_range_fn)(void *arg, size_t begin, size_t end);
void gaio__parallel_for(size_t n, size_t grain, gaio_range_fn fn, void *arg);

#endif
