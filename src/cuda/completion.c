/* The completion engine: one thread watches the completion slot of every CUDA
 * stream with ops in flight, retires ops whose ticket the GPU has written, and
 * completes their futures. Reading a slot costs a load, not a driver call, so
 * no stream's completion waits behind another's. While work is outstanding the
 * thread spins for a short window after the last submission or progress, then
 * backs off to short sleeps; with nothing outstanding it blocks on a condition
 * variable and costs no CPU. Every FAULT_CHECK_NS without progress it asks the
 * driver whether a stream's context faulted. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "cuda/cuda_internal.h"

#define SPIN_NS 50000u
#define MAX_SLEEP_NS 200000u
#define FAULT_CHECK_NS 2000000u

static struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool started;
    bool stop;
    bool kicked; /* BLOCK: the driver signalled a completed point */
    gaio_wait_policy policy;
    int sleeping;
    atomic_bool napping; /* HYBRID: in a short timed sleep; new work pokes it awake */
    bool poked;
    cuda_stream *incoming; /* newly active streams, linked by incoming_next */
    atomic_bool hint; /* set by submitters (only when clear), cleared by the engine: "work came" */
    pthread_t thread;
} eng = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

/* New work or finished host work: end a HYBRID nap at once, so the engine spins again
 * while the GPU gets to the new tickets. A poke that races with the start of a nap
 * is lost; the nap is short (MAX_SLEEP_NS). */
/* Tells the engine work came, so that it keeps spinning: a store only when the flag is
 * clear, i.e. at most once per engine loop, not once per op. */
static inline void engine_hint(void) {
    if (!atomic_load_explicit(&eng.hint, memory_order_relaxed))
        atomic_store_explicit(&eng.hint, true, memory_order_relaxed);
}

static void engine_poke(void) {
    if (!atomic_load_explicit(&eng.napping, memory_order_relaxed)) return;
    pthread_mutex_lock(&eng.lock);
    eng.poked = true;
    pthread_cond_signal(&eng.cond);
    pthread_mutex_unlock(&eng.lock);
}

void gaio__cuda_track(cuda_stream *cs, gaio_op *op, uint64_t ticket, cuda_pending *p) {
    p->next = NULL;
    p->cs = cs;
    p->dispatched = false;
    atomic_init(&p->host_done, false);
    p->ticket = ticket;
    p->op = op;
    /* Under cs->lock (the caller holds it). */
    if (cs->tail) {
        cs->tail->next = p;
    } else {
        cs->head = p;
        atomic_store_explicit(&cs->head_ticket, ticket, memory_order_release);
    }
    cs->tail = p;
    engine_hint();
    if (cs->active) {
        engine_poke();
        return;
    }
    cs->active = true;
    gaio__stream_ref(cs->stream); /* the engine's, dropped when the stream goes idle */
    pthread_mutex_lock(&eng.lock);
    cs->incoming_next = eng.incoming;
    eng.incoming = cs;
    if (eng.sleeping) pthread_cond_signal(&eng.cond);
    pthread_mutex_unlock(&eng.lock);
}

/* A copy with a pageable side, or between host memories. Host memories: the worker
 * copies. Device-side memory: a copy on gaio's own stream, finished before the ops
 * held behind it go to the driver (the driver stages pageable memory itself). */
static void host_copy(gaio_op *op, cuda_device *d) {
    if (gaio__cuda_host_mem(op->bufs[0]->kind) && gaio__cuda_host_mem(op->bufs[1]->kind)) {
        gaio__op_copy_on_host(op);
        return;
    }
    const gaio_cu_table *cu = gaio__cu();
    cuda_scope sc;
    gaio_status st = gaio__cuda_enter("gaio_memcpy_async", d, &sc);
    if (st == GAIO_OK) {
        const char *call = "";
        CUresult r = gaio__cuda_copy(op, d->aux, &call);
        if (r == CUDA_SUCCESS) {
            call = "cuStreamSynchronize";
            r = cu->cuStreamSynchronize(d->aux);
        }
        gaio__cuda_exit(&sc);
        if (r != CUDA_SUCCESS) st = gaio__cu_fail("gaio_memcpy_async", call, r);
    }
    if (st == GAIO_OK) return;
    if (st == GAIO_ERR_DEVICE) gaio__cuda_device_fault(d, st, gaio_last_error());
    gaio__stream_fail(op->stream, st, "%s", gaio_last_error());
}

static void run_host_op(cuda_pending *p) {
    gaio_op *op = p->op;
    gaio_stream *s = op->stream;
    gaio_status st = gaio__stream_status(s);
    if (op->kind == GAIO_OP_HOST_FN) {
        gaio_status r = op->u.host.fn(st, op->u.host.user);
        if (r != GAIO_OK && st == GAIO_OK) gaio__stream_fail(s, r, "a host function returned %s", gaio_status_string(r));
    } else if (st == GAIO_OK && op->kind == GAIO_OP_COPY) {
        host_copy(op, p->cs->dev);
    } else if (st == GAIO_OK) {
        gaio__op_fill_on_host(op);
    }
    if (p->blocks) gaio__cuda_unblock(p->cs); /* the stream's later ops go to the driver now, or are skipped */
}

/* A pool worker runs host work so that a slow host function holds up only its stream. */
static void host_task(gaio_task *t) {
    cuda_pending *p = (cuda_pending *)t;
    run_host_op(p);
    engine_hint(); /* keep the engine alert: the ops held behind this one now go to the GPU */
    atomic_store_explicit(&p->host_done, true, memory_order_release);
    engine_poke();
}

/* What the stream's passing an op means on the host. */
static void finish_op(cuda_pending *p, gaio_status fault, const char *fault_msg) {
    gaio_op *op = p->op;
    gaio_stream *s = op->stream;
    if (fault) gaio__stream_fail(s, fault, "%s", fault_msg);
    if (p->err) gaio__stream_fail(s, p->err, "%s", p->err_msg ? p->err_msg : gaio_status_string(p->err));
    gaio_status st = gaio__stream_status(s);
    if (gaio__cuda_is_host_op(op) && !atomic_load_explicit(&p->host_done, memory_order_acquire))
        run_host_op(p); /* after a fault, never dispatched: run it here, once, with the failure */
    switch (op->kind) {
    case GAIO_OP_RECORD: {
        gaio__op_count_done(op);
        if (st == GAIO_OK) {
            gaio__future_complete(op->u.point.fut, GAIO_OK, NULL);
        } else {
            char msg[GAIO_MSG_MAX];
            gaio__stream_fail_msg(s, msg);
            gaio__future_complete(op->u.point.fut, st, msg);
        }
        break;
    }
    case GAIO_OP_WAIT: {
        gaio_future *f = op->u.point.fut;
        if (gaio__future_is_done(f) && f->status != GAIO_OK)
            gaio__stream_fail(s, f->status, "waited on an event whose stream failed: %s", f->msg ? f->msg : "");
        break;
    }
    default:
        break;
    }
    gaio__op_retire(op);
}

/* Retires what the slot (or a fault) lets go; returns true if the stream went idle. */
static bool poll_stream(cuda_stream *cs, bool *progress) {
    gaio_status fault = (gaio_status)atomic_load_explicit(&cs->dev->fault, memory_order_acquire);
    uint64_t seen = __atomic_load_n(cs->slot, __ATOMIC_ACQUIRE); /* and the GPU's writes before it */
    cuda_pending *done = NULL, **tail = &done, *dispatch = NULL;
    /* Never block on a stream's lock: its submitter holds it across driver calls, and a
     * blocked engine would cost the submitter a futex wake-up on every op. */
    uint64_t due = atomic_load_explicit(&cs->head_ticket, memory_order_acquire);
    if (cs->dev->memops && !fault && due != UINT64_MAX && seen < due) return false;
    if (pthread_mutex_trylock(&cs->lock) != 0) return false;
    if (!cs->dev->memops) seen = gaio__cuda_fallback_seen(cs); /* events stand in for the slot */
    while (cs->head) {
        cuda_pending *p = cs->head;
        if (!fault && p->ticket > seen) break;
        if (gaio__cuda_is_host_op(p->op) && !atomic_load_explicit(&p->host_done, memory_order_acquire)) {
            if (!p->dispatched && !fault) {
                p->dispatched = true;
                dispatch = p;
            }
            if (p->dispatched) break; /* its task is running; the ops after it are held until it is done */
        }
        cs->head = p->next;
        p->next = NULL;
        *tail = p;
        tail = &p->next;
    }
    if (!cs->head) cs->tail = NULL;
    atomic_store_explicit(&cs->head_ticket, cs->head ? cs->head->ticket : UINT64_MAX, memory_order_release);
    bool idle = cs->head == NULL;
    if (idle) cs->active = false;
    pthread_mutex_unlock(&cs->lock);
    if (done) *progress = true;
    while (done) {
        cuda_pending *next = done->next;
        char *err_msg = done->err_msg;
        finish_op(done, fault, fault ? cs->dev->fault_msg : NULL); /* frees done with its op */
        free(err_msg);
        done = next;
    }
    /* After the ops before it have retired: a host function sees the failure of a wait
     * or of a refused op just ahead of it. */
    if (dispatch) {
        dispatch->task.fn = host_task;
        gaio__cpu_task_push(&dispatch->task);
        *progress = true;
    }
    return idle;
}

void gaio__cuda_device_fault(cuda_device *d, gaio_status st, const char *msg) {
    int expected = GAIO_OK;
    pthread_mutex_lock(&d->lock);
    if (atomic_load(&d->fault) == GAIO_OK) snprintf(d->fault_msg, sizeof d->fault_msg, "%s", msg);
    pthread_mutex_unlock(&d->lock);
    atomic_compare_exchange_strong(&d->fault, &expected, (int)st);
}

/* Asks the driver whether the stream's context faulted (a kernel's illegal address
 * stops every later ticket from being written). */
static void check_fault(cuda_stream *cs) {
    if (atomic_load(&cs->dev->fault) != GAIO_OK) return;
    cuda_scope sc;
    if (gaio__cuda_enter("gaio completion engine", cs->dev, &sc) != GAIO_OK) return;
    CUresult r = gaio__cu()->cuStreamQuery(cs->cu);
    gaio__cuda_exit(&sc);
    if (r == CUDA_SUCCESS || r == CUDA_ERROR_NOT_READY) return;
    gaio_status st = gaio__cu_fail("the GPU", "a kernel or copy", r);
    gaio__cuda_device_fault(cs->dev, st == GAIO_ERR_DEVICE ? st : GAIO_ERR_DEVICE, gaio_last_error());
}

static void *engine_main(void *arg) {
    (void)arg;
    gaio__on_gaio_thread = true;
    cuda_stream *active = NULL; /* this thread's list, linked by active_next */
    uint64_t last_progress = gaio__now_ns(), last_check = last_progress, last_activity = last_progress, sleep_ns = 1000;
    const gaio_wait_policy policy = eng.policy;
    for (;;) {
        pthread_mutex_lock(&eng.lock);
        while (!active && !eng.incoming) {
            if (eng.stop) {
                pthread_mutex_unlock(&eng.lock);
                return NULL;
            }
            eng.sleeping++;
            pthread_cond_wait(&eng.cond, &eng.lock);
            eng.sleeping--;
        }
        while (eng.incoming) {
            cuda_stream *cs = eng.incoming;
            eng.incoming = cs->incoming_next;
            cs->active_next = active;
            active = cs;
        }
        pthread_mutex_unlock(&eng.lock);

        bool progress = false;
        for (cuda_stream **pp = &active; *pp;) {
            cuda_stream *cs = *pp;
            if (poll_stream(cs, &progress)) {
                *pp = cs->active_next;
                gaio__stream_unref(cs->stream);
            } else {
                pp = &cs->active_next;
            }
        }
        uint64_t now = gaio__now_ns();
        if (progress) {
            last_progress = now;
            last_check = now;
            sleep_ns = 1000;
            continue;
        }
        for (cuda_stream *cs = active; cs; cs = cs->active_next) gaio__cuda_flush(cs, now);
        if (active && now - last_check > FAULT_CHECK_NS) {
            last_check = now;
            for (cuda_stream *cs = active; cs; cs = cs->active_next) check_fault(cs);
        }
        if (policy == GAIO_WAIT_BLOCK) {
            /* Sleep until a host callback behind a record op kicks us; time out to retire
             * other ops and to look for faults. */
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_nsec += 1000000;
            if (until.tv_nsec >= 1000000000) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000;
            }
            pthread_mutex_lock(&eng.lock);
            if (!eng.kicked && !eng.incoming) pthread_cond_timedwait(&eng.cond, &eng.lock, &until);
            eng.kicked = false;
            pthread_mutex_unlock(&eng.lock);
            continue;
        }
        if (atomic_load_explicit(&eng.hint, memory_order_relaxed)) {
            atomic_store_explicit(&eng.hint, false, memory_order_relaxed);
            last_activity = now;
        }
        uint64_t last = last_activity > last_progress ? last_activity : last_progress;
        if (policy == GAIO_WAIT_SPIN || now - last < SPIN_NS) {
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#endif
            continue;
        }
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += (long)sleep_ns;
        if (until.tv_nsec >= 1000000000) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000;
        }
        pthread_mutex_lock(&eng.lock);
        atomic_store_explicit(&eng.napping, true, memory_order_relaxed);
        if (!eng.poked && !eng.incoming) pthread_cond_timedwait(&eng.cond, &eng.lock, &until);
        atomic_store_explicit(&eng.napping, false, memory_order_relaxed);
        bool poked = eng.poked;
        eng.poked = false;
        pthread_mutex_unlock(&eng.lock);
        if (poked) {
            sleep_ns = 1000;
            last_activity = gaio__now_ns();
        }
        else if (sleep_ns < MAX_SLEEP_NS) sleep_ns *= 2;
    }
    return NULL;
}

/* At gaio_shutdown: no context is alive, so no stream is active. */
void gaio__cuda_engine_stop(void) {
    pthread_mutex_lock(&eng.lock);
    bool started = eng.started;
    eng.stop = true;
    pthread_cond_broadcast(&eng.cond);
    pthread_mutex_unlock(&eng.lock);
    if (started) pthread_join(eng.thread, NULL);
    pthread_mutex_lock(&eng.lock);
    eng.started = false;
    eng.stop = false;
    pthread_mutex_unlock(&eng.lock);
}

/* Called by the driver's callback thread after a record op (BLOCK policy). It may
 * make no CUDA call, and does none. */
void CUDA_CB gaio__cuda_engine_kick(void *unused) {
    (void)unused;
    pthread_mutex_lock(&eng.lock);
    eng.kicked = true;
    pthread_cond_signal(&eng.cond);
    pthread_mutex_unlock(&eng.lock);
}

gaio_wait_policy gaio__cuda_engine_policy(void) { return eng.policy; }

gaio_status gaio__cuda_engine_start(void) {
    pthread_mutex_lock(&eng.lock);
    gaio_status st = GAIO_OK;
    if (!eng.started) {
        eng.policy = gaio__runtime_wait_policy();
        int rc = pthread_create(&eng.thread, NULL, engine_main, NULL);
        if (rc != 0) st = GAIO_FAIL(GAIO_ERR_SYSTEM, "pthread_create for the completion thread failed (error %d)", rc);
        else eng.started = true;
    }
    pthread_mutex_unlock(&eng.lock);
    return st;
}
