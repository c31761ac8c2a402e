/* The completion engine: one thread watches the completion slot of every CUDA
 * stream with ops in flight, retires ops whose ticket the GPU has written, and
 * completes their futures. Reading a slot costs a load, not a driver call, so
 * no stream's completion waits behind another's. While work is outstanding the
 * thread spins for a short window after the last submission or progress, then
 * backs off to short sleeps; with nothing outstanding it spins a moment more
 * (SPIN_NS, or IDLE_SPIN_SPIN_NS under SPIN) and then blocks on a condition
 * variable, costing no CPU. Submitters and the engine share no lock: ops reach it
 * through lock-free queues. Every FAULT_CHECK_NS without progress it asks the
 * driver whether a stream's context faulted. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "cuda/cuda_internal.h"

#define SPIN_NS 50000u
#ifndef GAIO_CUDA_LINGER_NS /* a knob for A/B runs of the benchmark (1: hand back at once) */
#define GAIO_CUDA_LINGER_NS 50000u /* an empty stream stays in the engine's list this long */
#endif
#define IDLE_SPIN_SPIN_NS 1000000u /* SPIN: how long the engine spins with nothing in flight */
#define MAX_SLEEP_NS 200000u
#define FAULT_CHECK_NS 2000000u

static struct {
    pthread_mutex_t lock; /* only to sleep and to wake the engine: never on its polling path */
    pthread_cond_t cond;
    bool started;
    atomic_bool stop; /* read by the engine while it spins idle */
    bool kicked; /* BLOCK: the driver signalled a completed point */
    gaio_wait_policy policy;
    atomic_bool sleeping; /* nothing active: blocked on cond until a stream becomes active */
    atomic_bool napping;  /* HYBRID: in a short timed sleep; new work pokes it awake */
    bool poked;
    pthread_t thread;
    /* Written by submitters; each on a line of its own so that the engine's reads of
     * one do not evict the other. */
    _Alignas(64) _Atomic(cuda_stream *) incoming; /* newly active streams (a stack), linked by incoming_next */
    _Alignas(64) atomic_bool hint; /* set by submitters (only when clear), cleared by the engine: "work came" */
} eng = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

/* Tells the engine work came, so that it keeps spinning: a store only when the flag is
 * clear, and the engine clears it only when it is about to nap, so this is a load on
 * nearly every op, not a write. */
static inline void engine_hint(void) {
    if (!atomic_load_explicit(&eng.hint, memory_order_relaxed))
        atomic_store_explicit(&eng.hint, true, memory_order_relaxed);
}

/* New work or finished host work: end a HYBRID nap at once, so the engine spins again
 * while the GPU gets to the new tickets. A poke that races with the start of a nap
 * is lost; the nap is short (MAX_SLEEP_NS). */
static void engine_poke(void) {
    if (!atomic_load_explicit(&eng.napping, memory_order_relaxed)) return;
    pthread_mutex_lock(&eng.lock);
    eng.poked = true;
    pthread_cond_signal(&eng.cond);
    pthread_mutex_unlock(&eng.lock);
}

void gaio__cuda_fence_tracked(void) {
    engine_hint();
    engine_poke();
}

void gaio__cuda_track(cuda_stream *cs, cuda_pending *p, uint64_t ticket) {
    /* Under cs->lock (the caller holds it): pushes are in ticket order. */
    p->next = NULL;
    p->cs = cs;
    p->dispatched = false;
    atomic_init(&p->host_done, false);
    p->ticket = ticket;
    gaio__mpsc_push(&cs->pending, &p->qn);
    engine_hint();
    /* `active` changes only under cs->lock (here, and in go_idle). */
    if (atomic_load_explicit(&cs->active, memory_order_relaxed)) {
        engine_poke();
        return;
    }
    atomic_store_explicit(&cs->active, true, memory_order_relaxed);
    gaio__stream_ref(cs->stream); /* the engine's, dropped when the stream goes idle */
    /* A lock-free push: the engine takes the whole stack at once, so no ABA. The
     * seq_cst push and the load of `sleeping` pair with the engine's store of
     * `sleeping` and its load of `incoming` (engine_sleep): one of us sees the other. */
    cuda_stream *top = atomic_load_explicit(&eng.incoming, memory_order_relaxed);
    do {
        cs->incoming_next = top;
    } while (!atomic_compare_exchange_weak_explicit(&eng.incoming, &top, cs, memory_order_seq_cst,
                                                    memory_order_relaxed));
    if (atomic_load_explicit(&eng.sleeping, memory_order_seq_cst)) {
        pthread_mutex_lock(&eng.lock);
        pthread_cond_signal(&eng.cond);
        pthread_mutex_unlock(&eng.lock);
    } else {
        engine_poke();
    }
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
static void host_task(gaio_work *t) {
    cuda_pending *p = (cuda_pending *)t;
    run_host_op(p);
    engine_hint(); /* keep the engine alert: the ops held behind this one now go to the GPU */
    atomic_store_explicit(&p->host_done, true, memory_order_release);
    engine_poke();
}

/* A point the stream passed completes: with the stream's failure, if it failed. */
static void complete_point(gaio_stream *s, gaio_future *f) {
    gaio_status st = gaio__stream_status(s);
    if (st == GAIO_OK) {
        gaio__future_complete(f, GAIO_OK, NULL);
        return;
    }
    char msg[GAIO_MSG_MAX];
    gaio__stream_fail_msg(s, msg);
    gaio__future_complete(f, st, msg);
}

/* What the stream's passing an op means on the host. */
static void finish_op(cuda_pending *p, gaio_status fault, const char *fault_msg, gaio_retire_batch *batch) {
    gaio_op *op = p->op;
    gaio_stream *s = op->stream;
    if (fault) gaio__stream_fail(s, fault, "%s", fault_msg);
    if (p->err) gaio__stream_fail(s, p->err, "%s", p->err_msg ? p->err_msg : gaio_status_string(p->err));
    if (gaio__cuda_is_host_op(op) && !atomic_load_explicit(&p->host_done, memory_order_acquire))
        run_host_op(p); /* after a fault, never dispatched: run it here, once, with the failure */
    switch (op->kind) {
    case GAIO_OP_RECORD: /* counted as done already, with its batch */
        complete_point(s, op->u.point.fut);
        break;
    case GAIO_OP_WAIT: {
        gaio_future *f = op->u.point.fut;
        if (gaio__future_is_done(f) && f->status != GAIO_OK) {
            if (op->u.point.own_message) gaio__stream_fail(s, f->status, "%s", f->msg ? f->msg : "");
            else gaio__stream_fail(s, f->status, "waited on an event whose stream failed: %s", f->msg ? f->msg : "");
        }
        break;
    }
    default:
        break;
    }
    gaio_kernel *drop = p->kernel_drop; /* p goes with its op */
    gaio__op_retire_in(op, batch);
    if (drop) gaio__kernel_unref(drop);
}

/* What the stream's passing a fence with no op means: the fence and the launches it
 * carries count as retired and its future completes, as a fence's op would (finish_op). */
static void finish_fence(cuda_stream *cs, gaio_future *fut, uint64_t riders, gaio_status fault) {
    gaio_stream *s = cs->stream;
    if (fault) gaio__stream_fail(s, fault, "%s", cs->dev->fault_msg);
    atomic_fetch_add_explicit(&s->retired, 1 + riders, memory_order_release);
    complete_point(s, fut);
    gaio__future_unref(fut);
}

/* Finishes the ops the engine took off the queue (a list by `next`, in order), ndone
 * counted retired with the launches they carry. */
static void finish_ops(cuda_stream *cs, cuda_pending *done, size_t ndone, gaio_status fault) {
    gaio_retire_batch batch;
    gaio__retire_batch_begin(&batch, cs->stream, ndone); /* the engine's reference keeps the stream */
    while (done) {
        cuda_pending *next = done->next;
        char *err_msg = done->err_msg;
        finish_op(done, fault, fault ? cs->dev->fault_msg : NULL, &batch); /* frees done with its op */
        free(err_msg);
        done = next;
    }
    gaio__retire_batch_end(&batch);
}

static inline cuda_pending *pending_of(gaio_mpsc_node *n) {
    return (cuda_pending *)((char *)n - offsetof(cuda_pending, qn));
}

/* The oldest fence the engine has not passed, or NULL. Acquire: the ops issued before
 * it (under the stream's lock, which orders them before it) are in the queue by then. */
static inline cuda_fence *next_fence(cuda_stream *cs) {
    cuda_fence *e = &cs->fences[atomic_load_explicit(&cs->fence_tail, memory_order_relaxed) % GAIO_CUDA_FENCE_RING];
    return atomic_load_explicit(&e->ticket, memory_order_acquire) > cs->fence_last ? e : NULL;
}

/* How long the engine may leave a stream's queue unread while its slot stands still:
 * nothing in it comes due meanwhile, and an empty stream's linger is measured in steps
 * of this. */
#define LOOK_NS 10000u

/* The slot as far as this engine pass may trust it. */
static uint64_t slot_seen(cuda_stream *cs) {
    if (cs->dev->memops) return __atomic_load_n(cs->slot, __ATOMIC_ACQUIRE); /* and the GPU's writes before it */
    /* Events stand in for the slot; their list is shared with submitters. */
    if (pthread_mutex_trylock(&cs->lock) != 0) return cs->ev_seen;
    uint64_t seen = gaio__cuda_fallback_seen(cs);
    pthread_mutex_unlock(&cs->lock);
    return seen;
}

/* The stream's queue looked empty: give the stream back (active = false) unless a
 * submitter pushed meanwhile; a later push hands it to the engine again through
 * `incoming`. Returns true if the stream went idle (the engine drops it from its
 * list, and its reference). Under the stream's lock, which every push holds, and
 * only between submissions for another reason too: a submitter still inside its
 * critical section may have had its op retired already, and the stream must
 * outlive its unlock (the engine's reference may be the last). */
static bool go_idle(cuda_stream *cs) {
    if (pthread_mutex_trylock(&cs->lock) != 0) return false;
    bool idle = gaio__mpsc_empty(&cs->pending) && cs->fence_head == atomic_load(&cs->fence_tail);
    if (idle && cs->riders && atomic_load_explicit(&cs->dev->fault, memory_order_acquire) != GAIO_OK) {
        /* Launches no op will carry any more (a faulted device writes no tickets): as
         * finished as everything else on the device. */
        atomic_fetch_add_explicit(&cs->stream->retired, cs->riders, memory_order_release);
        cs->riders = 0;
    }
    idle = idle && !cs->riders; /* else launches in flight still use `kernel`: the flush carries them */
    gaio_kernel *k = NULL;
    if (idle) {
        atomic_store_explicit(&cs->active, false, memory_order_relaxed);
        k = cs->kernel; /* no launch of it is in flight any more */
        cs->kernel = NULL;
    }
    pthread_mutex_unlock(&cs->lock);
    if (k) gaio__kernel_unref(k);
    return idle;
}

/* Retires what the slot (or a fault) lets go; returns true if the stream went idle.
 * Takes no lock: submitters never wait for the engine, nor it for them. */
static bool poll_stream(cuda_stream *cs, uint64_t now, bool *progress) {
    gaio_status fault = (gaio_status)atomic_load_explicit(&cs->dev->fault, memory_order_acquire);
    uint64_t seen = fault ? UINT64_MAX : slot_seen(cs);
    if (cs->due && seen < cs->due) return false;
    /* Unless the slot moved since the last look at the queue, no op in it came due:
     * leave it alone (but for a look now and then, for the linger and for quiet
     * streams' flushes). Its newest op's line is the submitter's, which writes it
     * when it links the next op: each look at it would cost the submitter a miss. */
    if (seen == cs->looked_seen && !cs->look_again && now - cs->looked_at < LOOK_NS) return false;
    cs->looked_seen = seen;
    cs->looked_at = now;
    cs->look_again = fault != GAIO_OK; /* after a fault, ops held back come in with no ticket */
    /* The fence first: every op issued before it is linked by now, so none is passed over. */
    cuda_fence *fence = next_fence(cs);
    gaio_mpsc_node *front = gaio__mpsc_peek(&cs->pending);
    cs->due = front ? pending_of(front)->ticket : 0;
    if (fence && (!front || atomic_load_explicit(&fence->ticket, memory_order_relaxed) < cs->due))
        cs->due = atomic_load_explicit(&fence->ticket, memory_order_relaxed);
    if (!front && !fence) {
        /* Empty: keep watching a moment before giving the stream back, so that a
         * caller submitting again soon pays neither the hand-over (a reference, a
         * push to `incoming`) nor a race with go_idle for the stream's lock. */
        if (!gaio__mpsc_empty(&cs->pending)) {
            cs->look_again = true; /* a producer is mid-push */
            return false;
        }
        if (!cs->empty_since) cs->empty_since = now;
        if (now - cs->empty_since < GAIO_CUDA_LINGER_NS) return false;
        cs->empty_since = 0;
        return go_idle(cs);
    }
    cs->empty_since = 0;
    if (cs->due > seen) return false;
    cs->due = 0; /* the front moves: look again next pass */
    cuda_pending *done = NULL, **tail = &done, *dispatch = NULL;
    size_t ndone = 0;
    for (;;) {
        fence = next_fence(cs); /* before the queue's front: see next_fence */
        gaio_mpsc_node *n = gaio__mpsc_peek(&cs->pending);
        cuda_pending *p = n ? pending_of(n) : NULL;
        uint64_t fticket = fence ? atomic_load_explicit(&fence->ticket, memory_order_relaxed) : 0;
        if (fence && (!p || fticket < p->ticket)) { /* the fence is next (an op of its ticket is before it) */
            if (fticket > seen) {
                cs->due = fticket;
                break;
            }
            if (done) { /* the ops before it finish first */
                finish_ops(cs, done, ndone, fault);
                done = NULL;
                tail = &done;
                ndone = 0;
            }
            gaio_future *fut = fence->fut;
            uint64_t riders = fence->riders;
            cs->fence_last = fticket;
            atomic_store_explicit(&cs->fence_tail, atomic_load_explicit(&cs->fence_tail, memory_order_relaxed) + 1,
                                  memory_order_release); /* its entry is free (the engine alone writes this) */
            finish_fence(cs, fut, riders, fault);
            *progress = true;
            cs->passed++;
            /* Everything after it has a later ticket, so nothing more is due: the next
             * entry is left unread until the slot moves (reading it now would take its
             * line from the submitter that is about to write it). */
            if (fticket == seen) break;
            continue;
        }
        if (!p) break;
        if (p->ticket > seen) {
            cs->due = p->ticket;
            break;
        }
        if (gaio__cuda_is_host_op(p->op) && !atomic_load_explicit(&p->host_done, memory_order_acquire)) {
            if (!p->dispatched && !fault) {
                p->dispatched = true;
                dispatch = p;
            }
            if (p->dispatched) { /* its task is running; the ops after it are held until it is done */
                cs->look_again = true; /* for host_done */
                break;
            }
        }
        if (!gaio__mpsc_pop(&cs->pending)) { /* its successor is mid-push: next pass */
            cs->look_again = true;
            break;
        }
        p->next = NULL;
        p->op->counted = true; /* all at once, below, with the launches that rode on it */
        *tail = p;
        tail = &p->next;
        ndone += 1 + p->riders;
    }
    if (done) {
        *progress = true;
        cs->passed++;
        finish_ops(cs, done, ndone, fault);
    }
    /* After the ops before it have retired: a host function sees the failure of a wait
     * or of a refused op just ahead of it. */
    if (dispatch) {
        dispatch->task.run = host_task;
        gaio__pool_push(&dispatch->task, GAIO_POOL_URGENT);
        *progress = true;
    }
    return false; /* idle only once a later pass finds the queue empty */
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
    /* Not a capturing stream: a query would end its capture in failure. The lock keeps
     * a capture from starting while the query runs; a busy lock skips this pass. */
    if (pthread_mutex_trylock(&cs->lock) != 0) return;
    if (cs->capturing) {
        pthread_mutex_unlock(&cs->lock);
        return;
    }
    cuda_scope sc;
    CUresult r = CUDA_SUCCESS;
    if (gaio__cuda_enter("gaio completion engine", cs->dev, &sc) == GAIO_OK) {
        r = gaio__cu()->cuStreamQuery(cs->cu);
        gaio__cuda_exit(&sc);
    }
    pthread_mutex_unlock(&cs->lock);
    if (r == CUDA_SUCCESS || r == CUDA_ERROR_NOT_READY) return;
    gaio_status st = gaio__cu_fail("the GPU", "a kernel or copy", r);
    gaio__cuda_device_fault(cs->dev, st == GAIO_ERR_DEVICE ? st : GAIO_ERR_DEVICE, gaio_last_error());
}

/* Blocks until a stream becomes active; false once told to stop with none. */
static bool engine_sleep(void) {
    pthread_mutex_lock(&eng.lock);
    atomic_store_explicit(&eng.sleeping, true, memory_order_seq_cst);
    while (!atomic_load_explicit(&eng.incoming, memory_order_seq_cst) && !atomic_load(&eng.stop))
        pthread_cond_wait(&eng.cond, &eng.lock);
    atomic_store_explicit(&eng.sleeping, false, memory_order_relaxed);
    bool go_on = atomic_load_explicit(&eng.incoming, memory_order_relaxed) != NULL || !atomic_load(&eng.stop);
    pthread_mutex_unlock(&eng.lock);
    return go_on;
}

static struct timespec realtime_after(uint64_t ns) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_nsec += (long)ns;
    if (t.tv_nsec >= 1000000000) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000;
    }
    return t;
}

/* How often an idle pass looks for quiet streams to flush (gaio__cuda_flush, which
 * reads a stream's counters less often). */
#define FLUSH_LOOK_NS 2000u

static void *engine_main(void *arg) {
    (void)arg;
    gaio__on_gaio_thread = true;
    cuda_stream *active = NULL; /* this thread's list, linked by active_next */
    uint64_t last_progress = gaio__now_ns(), last_check = last_progress, last_activity = last_progress, sleep_ns = 1000;
    uint64_t last_flush = last_progress;
    const gaio_wait_policy policy = eng.policy;
    const uint64_t idle_spin_ns = policy == GAIO_WAIT_SPIN ? IDLE_SPIN_SPIN_NS : SPIN_NS;
    for (;;) {
        if (!active && !atomic_load_explicit(&eng.incoming, memory_order_acquire)) {
            /* Nothing in flight. Spin a while before sleeping: a caller that submits
             * again soon (a request loop) then pays no wake-up, neither its own system
             * call nor the engine's scheduling delay. */
            uint64_t now = gaio__now_ns();
            uint64_t busy = last_activity > last_progress ? last_activity : last_progress;
            if (policy != GAIO_WAIT_BLOCK && now - busy < idle_spin_ns && !atomic_load(&eng.stop)) {
#if defined(__x86_64__) || defined(__i386__)
                __builtin_ia32_pause();
#endif
                continue;
            }
            if (!engine_sleep()) return NULL;
            last_activity = gaio__now_ns();
        }
        /* Loads first: the exchange writes the line, which submitters then miss on. */
        if (atomic_load_explicit(&eng.incoming, memory_order_relaxed)) {
            cuda_stream *cs = atomic_exchange_explicit(&eng.incoming, NULL, memory_order_acquire);
            while (cs) {
                cuda_stream *next = cs->incoming_next;
                cs->active_next = active;
                active = cs;
                cs = next;
            }
        }

        bool progress = false;
        uint64_t now = gaio__now_ns(); /* once per pass: a clock read is most of an idle pass */
        for (cuda_stream **pp = &active; *pp;) {
            cuda_stream *cs = *pp;
            if (poll_stream(cs, now, &progress)) {
                *pp = cs->active_next;
                gaio__stream_unref(cs->stream);
            } else {
                pp = &cs->active_next;
            }
        }
        if (progress) {
            last_progress = now;
            last_check = now;
            sleep_ns = 1000;
            continue;
        }
        if (now - last_flush >= FLUSH_LOOK_NS) {
            last_flush = now;
            for (cuda_stream *cs = active; cs; cs = cs->active_next) gaio__cuda_flush(cs, now);
        }
        if (active && now - last_check > FAULT_CHECK_NS) {
            last_check = now;
            for (cuda_stream *cs = active; cs; cs = cs->active_next) check_fault(cs);
        }
        if (policy == GAIO_WAIT_BLOCK) {
            /* Sleep until a host callback behind a record op kicks us; time out to retire
             * other ops and to look for faults. */
            struct timespec until = realtime_after(1000000);
            pthread_mutex_lock(&eng.lock);
            if (!eng.kicked && !atomic_load(&eng.incoming)) pthread_cond_timedwait(&eng.cond, &eng.lock, &until);
            eng.kicked = false;
            pthread_mutex_unlock(&eng.lock);
            continue;
        }
        uint64_t last = last_activity > last_progress ? last_activity : last_progress;
        if (policy == GAIO_WAIT_SPIN || now - last < SPIN_NS) {
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#endif
            continue;
        }
        /* About to nap: did work come meanwhile? Read here only, not on every pass, so
         * that the flag's line stays in the submitters' caches while they submit. */
        if (atomic_load_explicit(&eng.hint, memory_order_relaxed)) {
            atomic_store_explicit(&eng.hint, false, memory_order_relaxed);
            last_activity = now;
            continue;
        }
        struct timespec until = realtime_after(sleep_ns);
        pthread_mutex_lock(&eng.lock);
        atomic_store_explicit(&eng.napping, true, memory_order_seq_cst);
        if (!eng.poked && !atomic_load(&eng.incoming)) pthread_cond_timedwait(&eng.cond, &eng.lock, &until);
        atomic_store_explicit(&eng.napping, false, memory_order_relaxed);
        bool poked = eng.poked;
        eng.poked = false;
        pthread_mutex_unlock(&eng.lock);
        if (poked) {
            sleep_ns = 1000;
            last_activity = gaio__now_ns();
        } else if (sleep_ns < MAX_SLEEP_NS) {
            sleep_ns *= 2;
        }
    }
    return NULL;
}

/* At gaio_shutdown: no context is alive, so no stream is active. */
void gaio__cuda_engine_stop(void) {
    pthread_mutex_lock(&eng.lock);
    bool started = eng.started;
    atomic_store(&eng.stop, true);
    pthread_cond_broadcast(&eng.cond);
    pthread_mutex_unlock(&eng.lock);
    if (started) pthread_join(eng.thread, NULL);
    pthread_mutex_lock(&eng.lock);
    eng.started = false;
    atomic_store(&eng.stop, false);
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
