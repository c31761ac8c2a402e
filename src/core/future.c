#include <sched.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/hot.h"
#include "core/op.h"
#include "core/op_cache.h"

/* HYBRID: how long a waiter spins before it sleeps on the condition variable. */
#define SPIN_WAIT_NS 50000u

gaio_future *gaio__future_new(void) {
    /* From the op cache: a fence or event point costs no malloc either. */
    bool cached;
    gaio_future *f = gaio__op_block_get(sizeof *f, &cached);
    if (!f) return NULL;
    memset(f, 0, offsetof(gaio_future, cond));
    f->cached = cached;
    gaio__ref_init(&f->ref);
    pthread_mutex_init(&f->lock, NULL);
    atomic_init(&f->done, 0);
    atomic_init(&f->be_recorded, false);
    f->cbs_tail = &f->cbs;
    return f;
}

/* Under f->lock, before a thread sleeps on f->cond (waiters > 0 means it is made). */
static void cond_ready(gaio_future *f) {
    if (f->cond_ready) return;
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&f->cond, &attr);
    pthread_condattr_destroy(&attr);
    f->cond_ready = true;
}

void gaio__future_ref(gaio_future *f) { gaio__ref_inc(&f->ref); }

void gaio__future_unref(gaio_future *f) {
    if (!gaio__ref_dec(&f->ref)) return;
    /* A future is only destroyed complete (pending ones are held by their op), so no
     * callbacks remain; free any anyway for futures that never got an op. */
    for (gaio_callback *c = f->cbs; c;) {
        gaio_callback *next = c->next;
        if (c != &f->cb0) free(c);
        c = next;
    }
    if (f->be_event_free) f->be_event_free(f->be_event);
    if (f->cond_ready) pthread_cond_destroy(&f->cond);
    pthread_mutex_destroy(&f->lock);
    free(f->msg);
    if (f->cached) gaio__op_block_put(f);
    else free(f);
}

/* How many futures this thread is running the callbacks of (nested completions). */
static GAIO_HOT_TLS int tl_dispatching;

void gaio__future_complete(gaio_future *f, gaio_status status, const char *msg) {
    /* The caller's reference (an op's, a join's) keeps f alive while callbacks drop
     * theirs: no reference of our own, whose count the waiter's release would share. */
    pthread_mutex_lock(&f->lock);
    if (atomic_load_explicit(&f->done, memory_order_relaxed)) {
        pthread_mutex_unlock(&f->lock);
        return;
    }
    f->status = status;
    if (status != GAIO_OK) f->msg = strdup(msg && *msg ? msg : gaio_status_string(status));
    /* Callbacks are added in order while these run (see future_add_callback), so
     * every callback runs after those added before it. */
    f->dispatching = true;
    atomic_store_explicit(&f->done, 1, memory_order_release);
    if (f->waiters) pthread_cond_broadcast(&f->cond);
    tl_dispatching++;
    for (;;) {
        gaio_callback *c = f->cbs;
        if (!c) break;
        f->cbs = c->next;
        if (!f->cbs) f->cbs_tail = &f->cbs;
        pthread_mutex_unlock(&f->lock);
        c->fn(f, status, c->user);
        if (c != &f->cb0) free(c);
        pthread_mutex_lock(&f->lock);
    }
    tl_dispatching--;
    f->dispatching = false;
    if (f->waiters) pthread_cond_broadcast(&f->cond); /* callers of then waiting for us */
    pthread_mutex_unlock(&f->lock);
}

gaio_status gaio_future_retain(gaio_future *fut) {
    GAIO_REQUIRE_PTR(fut);
    gaio__future_ref(fut);
    return GAIO_OK;
}

gaio_status gaio_future_release(gaio_future *fut) {
    if (fut) gaio__future_unref(fut);
    return GAIO_OK;
}

static gaio_status future_result(gaio_future *f, const char *fn) {
    if (f->status == GAIO_OK) return GAIO_OK;
    return gaio__fail(f->status, fn, "%s", f->msg ? f->msg : "");
}

gaio_status gaio_future_poll(gaio_future *fut) {
    GAIO_REQUIRE_PTR(fut);
    if (!gaio__future_is_done(fut)) return GAIO_ERR_NOT_READY;
    return future_result(fut, __func__);
}

gaio_status gaio_future_wait(gaio_future *fut, int64_t timeout_ns) {
    GAIO_REQUIRE_PTR(fut);
    GAIO_REQUIRE(timeout_ns >= 0, "timeout_ns is %lld; it must be >= 0 (0 polls, GAIO_INFINITE waits)",
                 (long long)timeout_ns);
    if (gaio__future_is_done(fut)) return future_result(fut, __func__);
    if (timeout_ns == 0) return GAIO_FAIL(GAIO_ERR_TIMEOUT, "the future is not complete");
    /* Spin first, as the wait policy says: a condition-variable wake-up costs
     * microseconds, often more than the work waited for. */
    gaio_wait_policy policy = gaio__runtime_wait_policy();
    if (policy != GAIO_WAIT_BLOCK) {
        uint64_t start = gaio__now_ns();
        uint64_t budget = policy == GAIO_WAIT_SPIN ? (uint64_t)timeout_ns : SPIN_WAIT_NS;
        if (budget > (uint64_t)timeout_ns) budget = (uint64_t)timeout_ns;
        const bool few = gaio__runtime_few_cores();
        for (unsigned i = 0; !gaio__future_is_done(fut); i++) {
            if ((i & 63) == 63 && gaio__now_ns() - start >= budget) break;
            /* After a short pure spin, yield between looks where cores are few: the
             * thread that completes the future may be waiting for this one's core. */
            if (few && i >= 256) sched_yield();
#if defined(__x86_64__) || defined(__i386__)
            else __builtin_ia32_pause();
#endif
        }
        if (gaio__future_is_done(fut)) return future_result(fut, __func__);
        uint64_t spent = gaio__now_ns() - start;
        if (timeout_ns != GAIO_INFINITE) {
            if (spent >= (uint64_t)timeout_ns)
                return GAIO_FAIL(GAIO_ERR_TIMEOUT, "the future did not complete within %lld ns", (long long)timeout_ns);
            timeout_ns -= (int64_t)spent;
        }
    }
    pthread_mutex_lock(&fut->lock);
    cond_ready(fut);
    fut->waiters++;
    if (timeout_ns == GAIO_INFINITE) {
        while (!atomic_load_explicit(&fut->done, memory_order_relaxed)) pthread_cond_wait(&fut->cond, &fut->lock);
    } else {
        struct timespec deadline = gaio__deadline(timeout_ns);
        while (!atomic_load_explicit(&fut->done, memory_order_relaxed))
            if (pthread_cond_timedwait(&fut->cond, &fut->lock, &deadline) != 0) break;
    }
    fut->waiters--;
    bool done = atomic_load_explicit(&fut->done, memory_order_relaxed);
    pthread_mutex_unlock(&fut->lock);
    if (!done) return GAIO_FAIL(GAIO_ERR_TIMEOUT, "the future did not complete within %lld ns", (long long)timeout_ns);
    return future_result(fut, __func__);
}

const char *gaio_future_message(gaio_future *fut) {
    if (!fut || !gaio__future_is_done(fut) || !fut->msg) return "";
    return fut->msg;
}

/* Adds a callback; runs it at once (outside the lock) when f is complete. If the
 * completing thread is still running earlier callbacks, waits for them first
 * (they must not block), so that callbacks run in the order they were added.
 * A callback that adds one while callbacks run on its own thread must not wait
 * (it could wait on itself, or on another thread waiting for it): its callback
 * joins the list and the completing thread runs it after the earlier ones. */
static gaio_status future_add_callback(gaio_future *f, gaio_future_fn fn, void *user) {
    pthread_mutex_lock(&f->lock);
    if (f->dispatching && tl_dispatching == 0) {
        cond_ready(f);
        f->waiters++;
        while (f->dispatching) pthread_cond_wait(&f->cond, &f->lock);
        f->waiters--;
    }
    if (!atomic_load_explicit(&f->done, memory_order_relaxed) || f->dispatching) {
        gaio_callback *c = &f->cb0; /* used once: a node already run may still be in a loop's hands */
        if (f->cb0_taken) c = malloc(sizeof *c);
        if (!c) {
            pthread_mutex_unlock(&f->lock);
            return GAIO_FAIL(GAIO_ERR_NO_MEMORY, "out of host memory for the callback");
        }
        f->cb0_taken = true;
        c->next = NULL;
        c->fn = fn;
        c->user = user;
        *f->cbs_tail = c;
        f->cbs_tail = &c->next;
        pthread_mutex_unlock(&f->lock);
        return GAIO_OK;
    }
    pthread_mutex_unlock(&f->lock);
    fn(f, f->status, user);
    return GAIO_OK;
}

gaio_status gaio_future_then(gaio_future *fut, gaio_future_fn fn, void *user) {
    GAIO_REQUIRE_PTR(fut);
    GAIO_REQUIRE_PTR(fn);
    return future_add_callback(fut, fn, user);
}

gaio_status gaio__future_on_complete(gaio_future *f, gaio_future_fn fn, void *user) {
    return future_add_callback(f, fn, user);
}

gaio_status gaio_future_fence(gaio_stream *stream, gaio_future **out) {
    GAIO_REQUIRE_PTR(out);
    *out = NULL;
    GAIO_REQUIRE_PTR(stream);
    gaio_future *f = gaio__future_new();
    if (!f) return GAIO_FAIL(GAIO_ERR_NO_MEMORY, "out of host memory for the future");
    /* The caller's reference and the op's (or the backend's); f is not shared yet: no atomic step. */
    atomic_init(&f->ref.n, 2);
    const gaio_backend *be = stream->ctx->be;
    if (be->fence_direct && !(stream->flags & GAIO_STREAM_DEFERRED)) {
        /* The backend may track the future itself, with no op (backend.h). Counted
         * first: it may complete before the call returns. */
        gaio__submitting_fn = __func__;
        atomic_fetch_add_explicit(&stream->submitted, 1, memory_order_relaxed);
        if (be->fence_direct(__func__, stream, f)) {
            *out = f;
            return GAIO_OK;
        }
        atomic_fetch_sub_explicit(&stream->submitted, 1, memory_order_relaxed);
    }
    gaio_op *op = gaio__op_new(GAIO_OP_RECORD, stream, 0, 0, NULL);
    if (!op) {
        atomic_init(&f->ref.n, 1);
        gaio__future_unref(f);
        return GAIO_FAIL(GAIO_ERR_NO_MEMORY, "out of host memory for the future");
    }
    op->u.point.fut = f;
    gaio_status st = gaio__submit(op);
    if (st != GAIO_OK) {
        gaio__future_unref(f);
        return st;
    }
    *out = f;
    return GAIO_OK;
}

/* ---- join ---- */

typedef struct join_state {
    gaio_future *result;
    pthread_mutex_t lock;
    size_t remaining;
    size_t first_error; /* lowest failed index so far, or SIZE_MAX */
    gaio_status status;
    char *msg;
} join_state;

typedef struct join_slot {
    join_state *js;
    size_t index;
} join_slot;

/* Counts one child (or the setup hold) as finished; the last one completes the join. */
static void join_settle(join_state *js, size_t index, gaio_status status, const char *msg) {
    pthread_mutex_lock(&js->lock);
    if (status != GAIO_OK && index < js->first_error) {
        js->first_error = index;
        js->status = status;
        free(js->msg);
        js->msg = strdup(msg);
    }
    bool last = --js->remaining == 0;
    pthread_mutex_unlock(&js->lock);
    if (!last) return;
    gaio__future_complete(js->result, js->status, js->msg);
    gaio__future_unref(js->result);
    pthread_mutex_destroy(&js->lock);
    free(js->msg);
    free(js);
}

static void join_child_done(gaio_future *child, gaio_status status, void *user) {
    join_slot *slot = user;
    join_state *js = slot->js;
    size_t index = slot->index;
    free(slot);
    join_settle(js, index, status, gaio_future_message(child));
}

gaio_status gaio_future_join(gaio_future *const *futures, size_t count, gaio_future **out) {
    GAIO_REQUIRE_PTR(out);
    *out = NULL;
    GAIO_REQUIRE(count == 0 || futures != NULL, "futures is NULL but count is %zu", count);
    for (size_t i = 0; i < count; i++) GAIO_REQUIRE(futures[i] != NULL, "futures[%zu] is NULL", i);
    gaio_future *result = gaio__future_new();
    join_state *js = result ? calloc(1, sizeof *js) : NULL;
    if (!js) {
        if (result) gaio__future_unref(result);
        return GAIO_FAIL(GAIO_ERR_NO_MEMORY, "out of host memory for the join");
    }
    pthread_mutex_init(&js->lock, NULL);
    js->result = result;
    gaio__future_ref(result); /* the join's own reference, dropped when it completes */
    js->remaining = count + 1; /* +1: children finishing during setup cannot complete it early */
    js->first_error = SIZE_MAX;
    for (size_t i = 0; i < count; i++) {
        join_slot *slot = malloc(sizeof *slot);
        if (slot) {
            slot->js = js;
            slot->index = i;
            if (future_add_callback(futures[i], join_child_done, slot) == GAIO_OK) continue;
            free(slot);
        }
        /* Out of memory: count the child as failed so the join still completes, once. */
        join_settle(js, i, GAIO_ERR_NO_MEMORY, "out of host memory while joining");
    }
    *out = result;
    join_settle(js, SIZE_MAX, GAIO_OK, NULL);
    return GAIO_OK;
}
