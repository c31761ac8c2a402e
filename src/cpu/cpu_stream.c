/* Draining a CPU stream: run ops in order, park on unfinished waits, yield to
 * more urgent streams. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/op.h"
#include "cpu/cpu_stream.h"

/* Ops one worker runs from one stream before letting equally urgent streams in. */
#define BATCH 64

static void exec_launch(gaio_op *op) {
    gaio_stream *s = op->stream;
    gaio_kernel *k = op->u.launch.kernel;
    gaio_launch_info info = op->u.launch.info;
    void *scratch = NULL;
    if (info.shared_mem_bytes) {
        scratch = aligned_alloc(64, (info.shared_mem_bytes + 63) & ~(size_t)63);
        if (!scratch) {
            gaio__stream_fail(s, GAIO_ERR_NO_MEMORY, "kernel '%s': out of host memory for %zu bytes of shared memory",
                              k->name, info.shared_mem_bytes);
            return;
        }
        info.shared_mem = scratch;
    }
    gaio_host_kernel fn = atomic_load_explicit(&k->host_fn, memory_order_acquire); /* set before the launch */
    gaio_status st = fn(&info, op->u.launch.argv);
    free(scratch);
    if (st != GAIO_OK)
        gaio__stream_fail(s, st, "kernel '%s' failed with %s", k->name, gaio_status_string(st));
}

/* Runs one op of a stream that is not blocked on it. */
static void exec_op(gaio_op *op) {
    gaio_stream *s = op->stream;
    gaio_status failed = gaio__stream_status(s);
    switch (op->kind) {
    case GAIO_OP_COPY:
        if (!failed) gaio__op_copy_on_host(op);
        break;
    case GAIO_OP_FILL:
        if (!failed) gaio__op_fill_on_host(op);
        break;
    case GAIO_OP_LAUNCH:
        if (!failed) exec_launch(op);
        break;
    case GAIO_OP_HOST_FN: {
        gaio_status st = op->u.host.fn(failed, op->u.host.user);
        if (st != GAIO_OK && !failed)
            gaio__stream_fail(s, st, "a host function returned %s", gaio_status_string(st));
        break;
    }
    case GAIO_OP_NATIVE: {
        /* No native stream on the host: fn is the work, run here in order like a kernel. */
        char msg[GAIO_MSG_MAX];
        gaio_status st = gaio__op_call_native(op, NULL, failed, msg);
        if (st != GAIO_OK) gaio__stream_fail(s, st, "%s", msg);
        break;
    }
    case GAIO_OP_RECORD: {
        gaio_future *f = op->u.point.fut;
        f->t_ns = gaio__now_ns();
        gaio__op_count_done(op); /* before waking anyone: the stream has passed this point */
        if (!failed) {
            gaio__future_complete(f, GAIO_OK, NULL);
        } else {
            char msg[GAIO_MSG_MAX];
            gaio__stream_fail_msg(s, msg);
            gaio__future_complete(f, failed, msg);
        }
        break;
    }
    case GAIO_OP_RELEASE:
        break;
    case GAIO_OP_WAIT: {
        gaio_future *f = op->u.point.fut; /* complete: the drain loop saw to that */
        if (f->status != GAIO_OK && !failed) {
            if (op->u.point.own_message) gaio__stream_fail(s, f->status, "%s", f->msg ? f->msg : "");
            else gaio__stream_fail(s, f->status, "waited on an event whose stream failed: %s", f->msg ? f->msg : "");
        }
        break;
    }
    }
}

/* Future callback: the awaited point of a blocked stream was reached. */
static void wake_stream(gaio_future *f, gaio_status status, void *user) {
    (void)f;
    (void)status;
    cpu_stream *cs = user;
    pthread_mutex_lock(&cs->lock);
    if (cs->state == CPU_STREAM_BLOCKED) {
        cs->state = CPU_STREAM_QUEUED;
        pthread_mutex_unlock(&cs->lock);
        gaio__pool_push(&cs->work, cs->level); /* hands over the callback's stream reference */
        return;
    }
    cs->wake_pending = true; /* the worker has not parked yet; it will see this */
    pthread_mutex_unlock(&cs->lock);
    gaio__stream_unref(cs->stream);
}

/* The stream's work item, popped from the run queue: drains the stream. */
static void stream_drain(gaio_work *w) {
    cpu_stream *cs = (cpu_stream *)((char *)w - offsetof(cpu_stream, work));
    gaio_stream *s = cs->stream; /* the run queue's reference keeps it alive until the end */
    int ran = 0;
    pthread_mutex_lock(&cs->lock);
    cs->state = CPU_STREAM_RUNNING;
    for (;;) {
        gaio_op *op = cs->head;
        if (!op) {
            cs->state = CPU_STREAM_IDLE;
            pthread_mutex_unlock(&cs->lock);
            break;
        }
        if (op->kind == GAIO_OP_WAIT && !gaio__future_is_done(op->u.point.fut)) {
            cs->wake_pending = false;
            pthread_mutex_unlock(&cs->lock);
            gaio__stream_ref(s); /* for the callback */
            if (gaio__future_on_complete(op->u.point.fut, wake_stream, cs) != GAIO_OK) {
                /* Cannot park without a callback: wait here instead. It only costs this worker. */
                gaio__stream_unref(s);
                (void)gaio_future_wait(op->u.point.fut, GAIO_INFINITE);
                pthread_mutex_lock(&cs->lock);
                continue;
            }
            pthread_mutex_lock(&cs->lock);
            if (cs->wake_pending) {
                cs->wake_pending = false;
                continue;
            }
            cs->state = CPU_STREAM_BLOCKED;
            pthread_mutex_unlock(&cs->lock);
            break;
        }
        cs->head = op->next;
        if (!cs->head) cs->tail = NULL;
        pthread_mutex_unlock(&cs->lock);
        exec_op(op);
        gaio__op_retire(op);
        pthread_mutex_lock(&cs->lock);
        if (++ran >= BATCH || gaio__pool_more_urgent(cs->level)) {
            if (cs->head) {
                cs->state = CPU_STREAM_QUEUED;
                pthread_mutex_unlock(&cs->lock);
                gaio__pool_push(&cs->work, cs->level); /* the run queue keeps our reference */
                return;
            }
        }
    }
    gaio__stream_unref(s);
}

void gaio__cpu_stream_setup(cpu_stream *cs, gaio_stream *s) {
    pthread_mutex_init(&cs->lock, NULL);
    cs->work.run = stream_drain;
    cs->stream = s;
    cs->level = s->priority;
}

/* The backend's submit: append, and queue the stream if it was idle. */
gaio_status gaio__cpu_submit(gaio_op *op) {
    cpu_stream *cs = op->stream->be_data;
    op->next = NULL;
    pthread_mutex_lock(&cs->lock);
    if (cs->tail) cs->tail->next = op;
    else cs->head = op;
    cs->tail = op;
    bool queue = cs->state == CPU_STREAM_IDLE;
    if (queue) cs->state = CPU_STREAM_QUEUED;
    pthread_mutex_unlock(&cs->lock);
    if (queue) {
        gaio__stream_ref(op->stream);
        gaio__pool_push(&cs->work, cs->level);
    }
    return GAIO_OK;
}
