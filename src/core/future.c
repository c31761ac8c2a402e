#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/hot.h"
#include "core/op.h"
#include "core/op_cache.h"

/* HYBRID: how long a waiter spins before it sleeps. */
#define SPIN_WAIT_NS 50000u
/* How many times the lock is tried before its taker sleeps: it is held for a few
 * stores (callbacks run outside it). */
#define LOCK_SPINS 100

/* A future's lock and its sleepers use Linux futexes on words inside the future's
 * first line, so that a future is one line to make and to complete (object.h); a
 * pthread mutex and condition variable took 88 bytes. The lock is the three-state
 * mutex of Drepper's "Futexes Are Tricky". */
static void futex_wait(atomic_int *word, int expect, const struct timespec *rel) {
    (void)syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, expect, rel, NULL, 0); /* EINTR, EAGAIN: the caller looks again */
}

static void futex_wake(atomic_int *word, int n) { (void)syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0); }

static inline void cpu_pause(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static void f_lock(gaio_future *f) {
    int c = 0;
    if (atomic_compare_exchange_strong_explicit(&f->lock, &c, 1, memory_order_acquire, memory_order_relaxed)) return;
    for (int i = 0; i < LOCK_SPINS; i++) {
        cpu_pause();
        c = 0;
        if (atomic_load_explicit(&f->lock, memory_order_relaxed) == 0 &&
            atomic_compare_exchange_strong_explicit(&f->lock, &c, 1, memory_order_acquire, memory_order_relaxed))
            return;
    }
    while (atomic_exchange_explicit(&f->lock, 2, memory_order_acquire) != 0) futex_wait(&f->lock, 2, NULL);
}

static void f_unlock(gaio_future *f) {
    if (atomic_exchange_explicit(&f->lock, 0, memory_order_release) == 2) futex_wake(&f->lock, 1);
}

gaio_future *gaio__future_new(void) {
    /* From the op cache: a fence or event point costs no malloc either. */
    bool cached;
    gaio_future *f = gaio__op_block_get(sizeof *f, &cached);
    if (!f) return NULL;
    memset(f, 0, offsetof(gaio_future, msg)); /* the rest is written where used (object.h) */
    f->cached = cached;
    gaio__ref_init(&f->ref);
    atomic_init(&f->done, 0);
    atomic_init(&f->lock, 0);
    atomic_init(&f->waiters, 0);
    atomic_init(&f->dispatching, 0);
    atomic_init(&f->be_recorded, false);
    return f;
}

void gaio__future_ref(gaio_future *f) { gaio__ref_inc(&f->ref); }

void gaio__future_unref(gaio_future *f) {
    if (!gaio__ref_dec(&f->ref)) return;
    /* A future is only destroyed complete (pending ones are held by their op), so no
     * callbacks remain; free any anyway for futures that never got an op. */
    for (gaio_callback *c = f->cbs; c;) {
        gaio_callback *next = c->next;
        free(c);
        c = next;
    }
    if (f->marker && f->be_event_free) f->be_event_free(f->be_event);
    if (f->status != GAIO_OK) free(f->msg);
    if (f->cached) gaio__op_block_put(f);
    else free(f);
}

/* How many futures this thread is running the callbacks of (nested completions). */
static GAIO_HOT_TLS int tl_dispatching;

/* Wakes the threads asleep on `word` (done or dispatching) after the caller changed it. */
static void wake_sleepers(gaio_future *f, atomic_int *word) {
    if (atomic_load_explicit(&f->waiters, memory_order_seq_cst)) futex_wake(word, INT_MAX);
}

void gaio__future_complete(gaio_future *f, gaio_status status, const char *msg) {
    /* The caller's reference (an op's, a join's) keeps f alive while callbacks drop
     * theirs: no reference of our own, whose count the waiter's release would share. */
    f_lock(f);
    if (atomic_load_explicit(&f->done, memory_order_relaxed)) {
        f_unlock(f);
        return;
    }
    f->status = status;
    if (status != GAIO_OK) f->msg = strdup(msg && *msg ? msg : gaio_status_string(status));
    /* Callbacks are added in order while these run (see future_add_callback), so
     * every callback runs after those added before it. */
    atomic_store_explicit(&f->dispatching, 1, memory_order_relaxed);
    atomic_store_explicit(&f->done, 1, memory_order_seq_cst); /* then the sleepers: see wake_sleepers */
    wake_sleepers(f, &f->done);
    tl_dispatching++;
    for (;;) {
        gaio_future_fn fn;
        void *user;
        gaio_callback *node = NULL;
        if (f->cb0_fn) {
            fn = f->cb0_fn;
            user = f->cb0_user;
            f->cb0_fn = NULL;
        } else if (f->cbs) {
            node = f->cbs;
            f->cbs = node->next;
            fn = node->fn;
            user = node->user;
        } else {
            break;
        }
        f_unlock(f);
        fn(f, status, user);
        free(node);
        f_lock(f);
    }
    tl_dispatching--;
    atomic_store_explicit(&f->dispatching, 0, memory_order_seq_cst);
    wake_sleepers(f, &f->dispatching); /* callers of then waiting for us */
    f_unlock(f);
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

/* Sleeps until f is done or timeout_ns (GAIO_INFINITE: none) has passed; whether it is done. */
static bool sleep_until_done(gaio_future *f, int64_t timeout_ns) {
    uint64_t deadline = timeout_ns == GAIO_INFINITE ? 0 : gaio__now_ns() + (uint64_t)timeout_ns;
    /* seq_cst: the completing thread stores done, then reads waiters; we count
     * ourselves, then the futex reads done: one of us sees the other. */
    atomic_fetch_add_explicit(&f->waiters, 1, memory_order_seq_cst);
    while (!atomic_load_explicit(&f->done, memory_order_acquire)) {
        if (timeout_ns == GAIO_INFINITE) {
            futex_wait(&f->done, 0, NULL);
            continue;
        }
        uint64_t now = gaio__now_ns();
        if (now >= deadline) break;
        uint64_t left = deadline - now;
        struct timespec rel = {(time_t)(left / 1000000000u), (long)(left % 1000000000u)};
        futex_wait(&f->done, 0, &rel);
    }
    atomic_fetch_sub_explicit(&f->waiters, 1, memory_order_relaxed);
    return atomic_load_explicit(&f->done, memory_order_acquire);
}

gaio_status gaio_future_wait(gaio_future *fut, int64_t timeout_ns) {
    GAIO_REQUIRE_PTR(fut);
    GAIO_REQUIRE(timeout_ns >= 0, "timeout_ns is %lld; it must be >= 0 (0 polls, GAIO_INFINITE waits)",
                 (long long)timeout_ns);
    if (gaio__future_is_done(fut)) return future_result(fut, __func__);
    if (timeout_ns == 0) return GAIO_FAIL(GAIO_ERR_TIMEOUT, "the future is not complete");
    /* Spin first, as the wait policy says: a wake-up from sleep costs microseconds,
     * often more than the work waited for. */
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
            else cpu_pause();
        }
        if (gaio__future_is_done(fut)) return future_result(fut, __func__);
        uint64_t spent = gaio__now_ns() - start;
        if (timeout_ns != GAIO_INFINITE) {
            if (spent >= (uint64_t)timeout_ns)
                return GAIO_FAIL(GAIO_ERR_TIMEOUT, "the future did not complete within %lld ns", (long long)timeout_ns);
            timeout_ns -= (int64_t)spent;
        }
    }
    if (!sleep_until_done(fut, timeout_ns))
        return GAIO_FAIL(GAIO_ERR_TIMEOUT, "the future did not complete within %lld ns", (long long)timeout_ns);
    return future_result(fut, __func__);
}

const char *gaio_future_message(gaio_future *fut) {
    if (!fut || !gaio__future_is_done(fut) || fut->status == GAIO_OK || !fut->msg) return "";
    return fut->msg;
}

/* Adds a callback; runs it at once (outside the lock) when f is complete. If the
 * completing thread is still running earlier callbacks, waits for them first
 * (they must not block), so that callbacks run in the order they were added.
 * A callback that adds one while callbacks run on its own thread must not wait
 * (it could wait on itself, or on another thread waiting for it): its callback
 * joins the list and the completing thread runs it after the earlier ones. */
static gaio_status future_add_callback(gaio_future *f, gaio_future_fn fn, void *user) {
    f_lock(f);
    while (atomic_load_explicit(&f->dispatching, memory_order_relaxed) && tl_dispatching == 0) {
        /* As sleep_until_done: count ourselves, then the futex reads the word. */
        atomic_fetch_add_explicit(&f->waiters, 1, memory_order_seq_cst);
        f_unlock(f);
        futex_wait(&f->dispatching, 1, NULL);
        atomic_fetch_sub_explicit(&f->waiters, 1, memory_order_relaxed);
        f_lock(f);
    }
    if (!atomic_load_explicit(&f->done, memory_order_relaxed) ||
        atomic_load_explicit(&f->dispatching, memory_order_relaxed)) {
        if (!f->cb0_taken) { /* in place, once: a later callback must not run before an earlier node */
            f->cb0_taken = true;
            f->cb0_fn = fn;
            f->cb0_user = user;
        } else {
            gaio_callback *c = malloc(sizeof *c);
            if (!c) {
                f_unlock(f);
                return GAIO_FAIL(GAIO_ERR_NO_MEMORY, "out of host memory for the callback");
            }
            c->next = NULL;
            c->fn = fn;
            c->user = user;
            gaio_callback **tail = &f->cbs; /* more than one callback is rare: walk to the end */
            while (*tail) tail = &(*tail)->next;
            *tail = c;
        }
        f_unlock(f);
        return GAIO_OK;
    }
    f_unlock(f);
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
