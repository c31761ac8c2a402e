/* Futures: wait with a timeout, poll, then-callbacks (exactly once, in
 * registration order, at once when already complete, may release the future),
 * join (after all; status of the first failed future in array order; empty join
 * at once), gaio_future_from_event, failure messages, and many threads waiting
 * on one future. The same source runs on every backend (see launch_fail in
 * support.h for the one difference: what fails a stream with GAIO_ERR_DEVICE). */
#include <pthread.h>
#include <stdatomic.h>

#include "common.h"
#include "support.h"

/* A stream held at a gate, and a fence behind it. */
static gaio_future *gated_fence(gaio_stream *s, gate *g) {
    OK(gaio_launch_host_func(s, gate_fn, g));
    gaio_future *f;
    OK(gaio_future_fence(s, &f));
    return f;
}

/* ---- 1. wait with timeout, poll ---- */

static void test_wait_poll(gaio_context *ctx) {
    gaio_stream *s;
    OK(gaio_stream_create(ctx, 0, 0, &s));
    gate g = {0};
    gaio_future *f = gated_fence(s, &g);
    CHECK(gaio_future_poll(f) == GAIO_ERR_NOT_READY);
    FAILS(GAIO_ERR_TIMEOUT, gaio_future_wait(f, 0), "gaio_future_wait");
    int64_t t0 = now_ns();
    FAILS(GAIO_ERR_TIMEOUT, gaio_future_wait(f, 30 * MS), "gaio_future_wait");
    int64_t waited = now_ns() - t0;
    CHECK(waited >= 29 * MS); /* it did wait for the timeout */
    CHECK(gaio_future_poll(f) == GAIO_ERR_NOT_READY);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_future_wait(f, -1), "gaio_future_wait");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_future_wait(NULL, 0), "gaio_future_wait");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_future_poll(NULL), "gaio_future_poll");
    CHECK(strcmp(gaio_future_message(f), "") == 0);
    atomic_store(&g.open, 1);
    OK(gaio_future_wait(f, BIG_TIMEOUT_NS));
    OK(gaio_future_poll(f));
    OK(gaio_future_wait(f, 0));
    OK(gaio_future_wait(f, GAIO_INFINITE));
    CHECK(strcmp(gaio_future_message(f), "") == 0);
    OK(gaio_future_release(f));

    /* Poll until done: NOT_READY for a while, then OK, never anything else. */
    int ms = 15;
    OK(gaio_launch_host_func(s, sleep_fn, &ms));
    OK(gaio_future_fence(s, &f));
    int not_ready = 0;
    gaio_status st;
    int64_t deadline = now_ns() + BIG_TIMEOUT_NS;
    while ((st = gaio_future_poll(f)) == GAIO_ERR_NOT_READY && now_ns() < deadline) {
        not_ready++;
        test_sleep_ms(1);
    }
    CHECK(st == GAIO_OK);
    CHECK(not_ready > 0);
    OK(gaio_future_release(f));
    OK(gaio_future_release(NULL));
    FAILS(GAIO_ERR_INVALID_ARG, gaio_future_retain(NULL), "gaio_future_retain");
    OK(gaio_stream_release(s));
}

/* ---- 2. then-callbacks ---- */

#define NCB 8

typedef struct cb_log {
    atomic_int n;
    int order[64];
    int status[64];
    pthread_t thread[64];
} cb_log;

typedef struct cb_arg {
    cb_log *log;
    int id;
} cb_arg;

static void log_cb(gaio_future *f, gaio_status st, void *user) {
    cb_arg *a = user;
    (void)f;
    int pos = atomic_fetch_add(&a->log->n, 1);
    if (pos < 64) {
        a->log->order[pos] = a->id;
        a->log->status[pos] = st;
        a->log->thread[pos] = pthread_self();
    }
}

static void release_cb(gaio_future *f, gaio_status st, void *user) {
    (void)st;
    atomic_fetch_add((atomic_int *)user, 1);
    OK(gaio_future_release(f)); /* the test's own reference: may be the last one */
}

static void test_then(gaio_context *ctx) {
    gaio_stream *s;
    OK(gaio_stream_create(ctx, 0, 0, &s));
    gate g = {0};
    gaio_future *f = gated_fence(s, &g);
    cb_log log;
    memset(&log, 0, sizeof log);
    atomic_init(&log.n, 0);
    cb_arg args[NCB + 2];
    for (int i = 0; i < NCB; i++) {
        args[i] = (cb_arg){&log, i};
        OK(gaio_future_then(f, log_cb, &args[i]));
    }
    test_sleep_ms(5);
    CHECK(atomic_load(&log.n) == 0); /* not before completion */
    atomic_store(&g.open, 1);
    OK(gaio_future_wait(f, BIG_TIMEOUT_NS));
    OK(gaio_stream_synchronize(s)); /* the callbacks ran before the stream moved on */
    CHECK(atomic_load(&log.n) == NCB);
    for (int i = 0; i < NCB; i++) {
        CHECK(log.order[i] == i);
        CHECK(log.status[i] == GAIO_OK);
        CHECK(!pthread_equal(log.thread[i], pthread_self())); /* on the completing thread */
    }
    /* Already complete: runs at once, on this thread, before gaio_future_then returns. */
    args[NCB] = (cb_arg){&log, 100};
    OK(gaio_future_then(f, log_cb, &args[NCB]));
    CHECK(atomic_load(&log.n) == NCB + 1);
    CHECK(log.order[NCB] == 100 && log.status[NCB] == GAIO_OK && pthread_equal(log.thread[NCB], pthread_self()));
    FAILS(GAIO_ERR_INVALID_ARG, gaio_future_then(f, NULL, NULL), "gaio_future_then");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_future_then(NULL, log_cb, &args[0]), "gaio_future_then");
    OK(gaio_future_release(f));

    /* A callback may release the future, also the last outside reference, whether it
     * runs at completion or at once. */
    atomic_int released = 0;
    g = (gate){0};
    f = gated_fence(s, &g);
    OK(gaio_future_retain(f));
    OK(gaio_future_then(f, release_cb, &released)); /* takes one of our two references */
    OK(gaio_future_then(f, release_cb, &released)); /* and the other */
    /* no reference of ours left: do not touch f again */
    atomic_store(&g.open, 1);
    OK(gaio_stream_synchronize(s));
    CHECK(atomic_load(&released) == 2);
    OK(gaio_future_fence(s, &f));
    OK(gaio_future_wait(f, BIG_TIMEOUT_NS));
    OK(gaio_future_then(f, release_cb, &released)); /* at once, releasing our only reference */
    CHECK(atomic_load(&released) == 3);

    /* Callbacks see the failure. */
    gaio_stream *bad;
    OK(gaio_stream_create(ctx, 0, 0, &bad));
    g = (gate){0};
    OK(gaio_launch_host_func(bad, gate_fn, &g));
    OK(gaio_launch_host_func(bad, fail_user_fn, NULL));
    OK(gaio_future_fence(bad, &f));
    memset(&log, 0, sizeof log);
    atomic_init(&log.n, 0);
    OK(gaio_future_then(f, log_cb, &args[0]));
    OK(gaio_future_then(f, log_cb, &args[1]));
    atomic_store(&g.open, 1);
    CHECK(gaio_future_wait(f, BIG_TIMEOUT_NS) == GAIO_ERR_USER);
    CHECK(gaio_stream_synchronize(bad) == GAIO_ERR_USER);
    CHECK(atomic_load(&log.n) == 2);
    CHECK(log.order[0] == 0 && log.order[1] == 1);
    CHECK(log.status[0] == GAIO_ERR_USER && log.status[1] == GAIO_ERR_USER);
    OK(gaio_future_release(f));
    OK(gaio_stream_release(bad));
    OK(gaio_stream_release(s));
}

/* A callback added while the completing thread still runs earlier callbacks
 * must run after them ("in the order they were added"), and still on the
 * calling thread ("at once ... if it is complete already"). The first callback
 * lingers (bounded) until the adding thread is about to add the second, then a
 * little longer, so that the second is added while the first still runs. */
typedef struct slow_state {
    atomic_int entered, about_to_add, pos;
    int slow_at, fast_at;
    pthread_t fast_thread;
    gaio_future *f;
} slow_state;

static void slow_cb(gaio_future *f, gaio_status st, void *user) {
    (void)f;
    (void)st;
    slow_state *s = user;
    atomic_store(&s->entered, 1);
    for (int i = 0; i < 10000 && !atomic_load(&s->about_to_add); i++) test_sleep_ms(1);
    test_sleep_ms(20);
    s->slow_at = atomic_fetch_add(&s->pos, 1);
}

static void fast_cb(gaio_future *f, gaio_status st, void *user) {
    (void)f;
    (void)st;
    slow_state *s = user;
    s->fast_thread = pthread_self();
    s->fast_at = atomic_fetch_add(&s->pos, 1);
}

static void *add_fast(void *arg) {
    slow_state *s = arg;
    atomic_store(&s->about_to_add, 1);
    OK(gaio_future_then(s->f, fast_cb, s));
    return NULL;
}

static void test_then_order_while_running(gaio_context *ctx) {
    gaio_stream *s;
    OK(gaio_stream_create(ctx, 0, 0, &s));
    for (int round = 0; round < 3; round++) {
        gate g = {0};
        gaio_future *f = gated_fence(s, &g);
        slow_state st;
        memset(&st, 0, sizeof st);
        st.slow_at = st.fast_at = -1;
        st.f = f;
        OK(gaio_future_then(f, slow_cb, &st));
        atomic_store(&g.open, 1);
        for (int i = 0; i < 30000 && !atomic_load(&st.entered); i++) test_sleep_ms(1);
        CHECK(atomic_load(&st.entered));
        OK(gaio_future_poll(f)); /* complete, its callbacks still running */
        pthread_t t;
        CHECK(pthread_create(&t, NULL, add_fast, &st) == 0);
        CHECK(pthread_join(t, NULL) == 0);
        /* gaio_future_then has returned: the callback ran, on the adding thread */
        CHECK(atomic_load(&st.pos) == 2);
        if (!(st.slow_at == 0 && st.fast_at == 1)) {
            fprintf(stderr, "callback added second ran at %d, the first at %d\n", st.fast_at, st.slow_at);
            exit(1);
        }
        CHECK(pthread_equal(st.fast_thread, t));
        OK(gaio_stream_synchronize(s));
        OK(gaio_future_release(f));
    }
    OK(gaio_stream_release(s));
}

/* A callback may add callbacks, to its own future (they run after the ones
 * already queued, before the completion returns) or to another. */
typedef struct nest_state {
    gaio_future *other;
    atomic_int pos;
    int order[4];
} nest_state;

static void nest_log(gaio_future *f, gaio_status st, void *user);

static void nest_first(gaio_future *f, gaio_status st, void *user) {
    (void)st;
    nest_state *n = user;
    n->order[0] = atomic_fetch_add(&n->pos, 1);
    OK(gaio_future_then(f, nest_log, n));        /* own future: after nest_second */
    OK(gaio_future_then(n->other, nest_log, n)); /* another, complete: at once */
}

static void nest_second(gaio_future *f, gaio_status st, void *user) {
    (void)f;
    (void)st;
    nest_state *n = user;
    n->order[1] = atomic_fetch_add(&n->pos, 1);
}

static void nest_log(gaio_future *f, gaio_status st, void *user) {
    (void)st;
    nest_state *n = user;
    int p = atomic_fetch_add(&n->pos, 1);
    n->order[f == n->other ? 2 : 3] = p;
}

static void test_then_nested(gaio_context *ctx) {
    gaio_stream *s;
    OK(gaio_stream_create(ctx, 0, 0, &s));
    nest_state n;
    memset(&n, 0, sizeof n);
    OK(gaio_future_fence(s, &n.other));
    OK(gaio_future_wait(n.other, BIG_TIMEOUT_NS));
    gate g = {0};
    gaio_future *f = gated_fence(s, &g);
    OK(gaio_future_then(f, nest_first, &n));
    OK(gaio_future_then(f, nest_second, &n));
    atomic_store(&g.open, 1);
    OK(gaio_future_wait(f, BIG_TIMEOUT_NS));
    OK(gaio_stream_synchronize(s));
    for (int i = 0; i < 10000 && atomic_load(&n.pos) < 4; i++) test_sleep_ms(1);
    CHECK(atomic_load(&n.pos) == 4);
    /* first, then (at once) the other future's, then second, then first's own */
    CHECK(n.order[0] == 0 && n.order[2] == 1 && n.order[1] == 2 && n.order[3] == 3);
    OK(gaio_future_release(f));
    OK(gaio_future_release(n.other));
    OK(gaio_stream_release(s));
}

/* Several threads add callbacks to one pending future: every callback runs once,
 * and each thread's callbacks run in the order that thread added them. */
#define CB_THREADS 4
#define CB_PER_THREAD 200

typedef struct mt_log {
    atomic_int n;
    int entries[CB_THREADS * CB_PER_THREAD];
    atomic_int runs[CB_THREADS * CB_PER_THREAD];
} mt_log;

typedef struct mt_cb {
    mt_log *log;
    int code;
} mt_cb;

static void mt_log_cb(gaio_future *f, gaio_status st, void *user) {
    (void)f;
    mt_cb *c = user;
    atomic_fetch_add(&c->log->runs[c->code], 1);
    int pos = atomic_fetch_add(&c->log->n, 1);
    if (pos < CB_THREADS * CB_PER_THREAD) c->log->entries[pos] = st == GAIO_OK ? c->code : -1;
}

typedef struct mt_arg {
    gaio_future *f;
    mt_cb *cbs;
} mt_arg;

static void *add_callbacks(void *arg) {
    mt_arg *a = arg;
    for (int i = 0; i < CB_PER_THREAD; i++) OK(gaio_future_then(a->f, mt_log_cb, &a->cbs[i]));
    return NULL;
}

static void test_then_threads(gaio_context *ctx) {
    gaio_stream *s;
    OK(gaio_stream_create(ctx, 0, 0, &s));
    mt_log *log = calloc(1, sizeof *log);
    mt_cb *cbs = calloc(CB_THREADS * CB_PER_THREAD, sizeof *cbs);
    CHECK(log && cbs);
    for (int i = 0; i < CB_THREADS * CB_PER_THREAD; i++) cbs[i] = (mt_cb){log, i};
    /* The future completes while the threads are still adding (a short sleep):
     * callbacks added before run on the completing thread, the rest at once. */
    int ms = 2;
    OK(gaio_launch_host_func(s, sleep_fn, &ms));
    gaio_future *f;
    OK(gaio_future_fence(s, &f));
    mt_arg a[CB_THREADS];
    pthread_t t[CB_THREADS];
    for (int i = 0; i < CB_THREADS; i++) {
        a[i] = (mt_arg){f, &cbs[i * CB_PER_THREAD]};
        CHECK(pthread_create(&t[i], NULL, add_callbacks, &a[i]) == 0);
    }
    for (int i = 0; i < CB_THREADS; i++) CHECK(pthread_join(t[i], NULL) == 0);
    OK(gaio_future_wait(f, BIG_TIMEOUT_NS));
    OK(gaio_stream_synchronize(s));
    CHECK(atomic_load(&log->n) == CB_THREADS * CB_PER_THREAD);
    for (int i = 0; i < CB_THREADS * CB_PER_THREAD; i++) CHECK(atomic_load(&log->runs[i]) == 1);
    /* Per thread, in the order that thread added them. */
    int next[CB_THREADS] = {0};
    for (int k = 0; k < CB_THREADS * CB_PER_THREAD; k++) {
        int code = log->entries[k];
        CHECK(code >= 0);
        int thr = code / CB_PER_THREAD, seq = code % CB_PER_THREAD;
        if (seq != next[thr]) {
            fprintf(stderr, "thread %d's callback %d ran where %d was due\n", thr, seq, next[thr]);
            exit(1);
        }
        next[thr]++;
    }
    free(log);
    free(cbs);
    OK(gaio_future_release(f));
    OK(gaio_stream_release(s));
}

/* ---- 3. join ---- */

static void test_join(gaio_context *ctx) {
    gaio_stream *s[3];
    for (int i = 0; i < 3; i++) OK(gaio_stream_create(ctx, 0, 0, &s[i]));
    gate g[3] = {{0}, {0}, {0}};
    gaio_future *f[3];
    for (int i = 0; i < 3; i++) f[i] = gated_fence(s[i], &g[i]);
    gaio_future *j;
    OK(gaio_future_join(f, 3, &j));
    /* Open in an order unlike the array's: the join waits for the last. */
    int open_order[3] = {2, 0, 1};
    for (int k = 0; k < 3; k++) {
        CHECK(gaio_future_poll(j) == GAIO_ERR_NOT_READY);
        atomic_store(&g[open_order[k]].open, 1);
        OK(gaio_future_wait(f[open_order[k]], BIG_TIMEOUT_NS));
    }
    OK(gaio_future_wait(j, BIG_TIMEOUT_NS));
    CHECK(strcmp(gaio_future_message(j), "") == 0);
    OK(gaio_future_release(j));
    for (int i = 0; i < 3; i++) OK(gaio_future_release(f[i]));

    /* Status: the first failed future in array order, not in time order.
     * f[0] OK, f[1] fails with USER (later), f[2] fails with DEVICE (first). */
    gaio_stream *bad1, *bad2;
    OK(gaio_stream_create(ctx, 0, 0, &bad1));
    OK(gaio_stream_create(ctx, 0, 0, &bad2));
    gate g1 = {0};
    OK(gaio_future_fence(s[0], &f[0]));
    OK(gaio_launch_host_func(bad1, gate_fn, &g1));
    OK(gaio_launch_host_func(bad1, fail_user_fn, NULL));
    OK(gaio_future_fence(bad1, &f[1]));
    launch_fail(bad2);
    OK(gaio_future_fence(bad2, &f[2]));
    OK(gaio_future_join(f, 3, &j));
    CHECK(gaio_future_wait(f[2], BIG_TIMEOUT_NS) == GAIO_ERR_DEVICE);
    CHECK(gaio_future_poll(j) == GAIO_ERR_NOT_READY); /* f[1] still pending */
    atomic_store(&g1.open, 1);
    CHECK(gaio_future_wait(j, BIG_TIMEOUT_NS) == GAIO_ERR_USER);
    CHECK(strcmp(gaio_future_message(j), gaio_future_message(f[1])) == 0);
    CHECK(strstr(gaio_future_message(j), "GAIO_ERR_USER") != NULL);
    OK(gaio_future_release(j));
    /* Reversed array: now the DEVICE failure comes first. */
    OK(gaio_future_wait(f[0], BIG_TIMEOUT_NS));
    gaio_future *rev[3] = {f[2], f[1], f[0]};
    OK(gaio_future_join(rev, 3, &j));
    CHECK(gaio_future_poll(j) == GAIO_ERR_DEVICE); /* all complete: at once */
    CHECK(strstr(gaio_future_message(j), fail_name()) != NULL);
    OK(gaio_future_release(j));
    /* The same future twice, and a join of joins. */
    gaio_future *twice[2] = {f[0], f[0]};
    gaio_future *j1, *j2;
    OK(gaio_future_join(twice, 2, &j1));
    OK(gaio_future_poll(j1));
    gaio_future *nested[2] = {j1, f[1]};
    OK(gaio_future_join(nested, 2, &j2));
    CHECK(gaio_future_poll(j2) == GAIO_ERR_USER);
    OK(gaio_future_release(j1));
    OK(gaio_future_release(j2));
    for (int i = 0; i < 3; i++) OK(gaio_future_release(f[i]));

    /* Empty join: complete at once; NULL array allowed when count is 0. */
    OK(gaio_future_join(NULL, 0, &j));
    OK(gaio_future_poll(j));
    OK(gaio_future_release(j));
    gaio_future *none[1] = {NULL};
    j = (gaio_future *)&g1;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_future_join(none, 1, &j), "gaio_future_join");
    CHECK(j == NULL);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_future_join(NULL, 2, &j), "gaio_future_join");

    /* A join released before its children complete still completes them cleanly. */
    g[0] = (gate){0};
    f[0] = gated_fence(s[0], &g[0]);
    OK(gaio_future_join(f, 1, &j));
    OK(gaio_future_release(j));
    atomic_store(&g[0].open, 1);
    OK(gaio_future_wait(f[0], BIG_TIMEOUT_NS));
    OK(gaio_future_release(f[0]));

    OK(gaio_stream_release(bad1));
    OK(gaio_stream_release(bad2));
    for (int i = 0; i < 3; i++) OK(gaio_stream_release(s[i]));
}

/* ---- 4. from_event ---- */

static void test_from_event(gaio_context *ctx) {
    gaio_stream *s;
    OK(gaio_stream_create(ctx, 0, 0, &s));
    gaio_event *ev;
    OK(gaio_event_create(ctx, 0, &ev));
    gaio_future *f0, *f1, *f2;
    OK(gaio_future_from_event(ev, &f0)); /* never recorded: complete */
    OK(gaio_future_poll(f0));
    gate g1 = {0}, g2 = {0};
    OK(gaio_launch_host_func(s, gate_fn, &g1));
    OK(gaio_event_record(ev, s));
    OK(gaio_future_from_event(ev, &f1));
    OK(gaio_launch_host_func(s, gate_fn, &g2));
    OK(gaio_event_record(ev, s)); /* moves the event; f1 keeps its point */
    OK(gaio_future_from_event(ev, &f2));
    CHECK(gaio_future_poll(f1) == GAIO_ERR_NOT_READY);
    atomic_store(&g1.open, 1);
    OK(gaio_future_wait(f1, BIG_TIMEOUT_NS));
    CHECK(gaio_future_wait(f2, 20 * MS) == GAIO_ERR_TIMEOUT);
    atomic_store(&g2.open, 1);
    OK(gaio_future_wait(f2, BIG_TIMEOUT_NS));
    OK(gaio_future_release(f0));
    OK(gaio_future_release(f1));
    OK(gaio_future_release(f2));
    gaio_future *nul = (gaio_future *)&g1;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_future_from_event(NULL, &nul), "gaio_future_from_event");
    CHECK(nul == NULL);
    /* The event outlives nothing: a future from it stays valid after release. */
    g1 = (gate){0};
    OK(gaio_launch_host_func(s, gate_fn, &g1));
    OK(gaio_event_record(ev, s));
    OK(gaio_future_from_event(ev, &f1));
    OK(gaio_event_release(ev));
    atomic_store(&g1.open, 1);
    OK(gaio_future_wait(f1, BIG_TIMEOUT_NS));
    OK(gaio_future_release(f1));
    OK(gaio_stream_release(s));
}

/* ---- 5. messages ---- */

static void test_messages(gaio_context *ctx) {
    gaio_stream *s, *t;
    OK(gaio_stream_create(ctx, 0, 0, &s));
    OK(gaio_stream_create(ctx, 0, 0, &t));
    gaio_future *before, *after, *hf;
    OK(gaio_future_fence(s, &before));
    launch_fail(s);
    OK(gaio_future_fence(s, &after));
    OK(gaio_launch_host_func(t, fail_user_fn, NULL));
    OK(gaio_future_fence(t, &hf));
    OK(gaio_future_wait(before, BIG_TIMEOUT_NS));
    CHECK(strcmp(gaio_future_message(before), "") == 0);
    CHECK(gaio_future_wait(after, BIG_TIMEOUT_NS) == GAIO_ERR_DEVICE);
    /* wait records the message as this thread's last error too */
    CHECK(strstr(gaio_last_error(), fail_name()) != NULL);
    const char *m = gaio_future_message(after);
    CHECK(strstr(m, fail_name()) != NULL && strstr(m, "GAIO_ERR_DEVICE") != NULL);
    CHECK(gaio_future_poll(after) == GAIO_ERR_DEVICE);
    CHECK(strstr(gaio_last_error(), "gaio_future_poll") != NULL);
    CHECK(gaio_future_message(after) == m); /* stable while the future lives */
    CHECK(gaio_future_wait(hf, BIG_TIMEOUT_NS) == GAIO_ERR_USER);
    CHECK(strstr(gaio_future_message(hf), "host function") != NULL);
    CHECK(strstr(gaio_future_message(hf), "GAIO_ERR_USER") != NULL);
    CHECK(strcmp(gaio_future_message(NULL), "") == 0);
    OK(gaio_future_release(before));
    OK(gaio_future_release(after));
    OK(gaio_future_release(hf));
    OK(gaio_stream_release(s));
    OK(gaio_stream_release(t));
}

/* ---- 6. many threads waiting on one future ---- */

#define WAITERS 16

typedef struct waiter_arg {
    gaio_future *f;
    int mode; /* 0: infinite wait, 1: short timeouts in a loop, 2: poll loop */
    gaio_status result;
    int timeouts;
} waiter_arg;

static void *waiter(void *arg) {
    waiter_arg *a = arg;
    int64_t deadline = now_ns() + BIG_TIMEOUT_NS;
    gaio_status st;
    switch (a->mode) {
    case 0: st = gaio_future_wait(a->f, GAIO_INFINITE); break;
    case 1:
        while ((st = gaio_future_wait(a->f, 2 * MS)) == GAIO_ERR_TIMEOUT && now_ns() < deadline) a->timeouts++;
        break;
    default:
        while ((st = gaio_future_poll(a->f)) == GAIO_ERR_NOT_READY && now_ns() < deadline) test_sleep_ms(1);
        break;
    }
    a->result = st;
    return NULL;
}

static void test_many_waiters(gaio_context *ctx) {
    gaio_stream *s;
    OK(gaio_stream_create(ctx, 0, 0, &s));
    for (int round = 0; round < 3; round++) {
        gate g = {0};
        gaio_future *f = gated_fence(s, &g);
        if (round == 2) OK(gaio_launch_host_func(s, fail_user_fn, NULL));
        gaio_future *f2;
        OK(gaio_future_fence(s, &f2));
        gaio_future *target = round == 2 ? f2 : f;
        waiter_arg a[WAITERS];
        pthread_t t[WAITERS];
        for (int i = 0; i < WAITERS; i++) {
            a[i] = (waiter_arg){target, i % 3, (gaio_status)-1, 0};
            CHECK(pthread_create(&t[i], NULL, waiter, &a[i]) == 0);
        }
        test_sleep_ms(round == 0 ? 20 : 3);
        atomic_store(&g.open, 1);
        for (int i = 0; i < WAITERS; i++) CHECK(pthread_join(t[i], NULL) == 0);
        gaio_status want = round == 2 ? GAIO_ERR_USER : GAIO_OK;
        for (int i = 0; i < WAITERS; i++) CHECK(a[i].result == want);
        OK(gaio_future_release(f));
        OK(gaio_future_release(f2));
        if (round == 2) {
            CHECK(gaio_stream_synchronize(s) == GAIO_ERR_USER);
            OK(gaio_stream_release(s));
            OK(gaio_stream_create(ctx, 0, 0, &s));
        }
    }
    OK(gaio_stream_release(s));
}

static void run(int device) {
    configure_workers(4);
    (void)test_seed(); /* no random data here; printed for the record */
    fail_setup(device, "join_fail"); /* host only: see launch_fail */
    gaio_context *ctx;
    OK(gaio_context_create(device, NULL, &ctx));
    test_wait_poll(ctx);
    test_then(ctx);
    test_then_order_while_running(ctx);
    test_then_nested(ctx);
    test_then_threads(ctx);
    test_join(ctx);
    test_from_event(ctx);
    test_messages(ctx);
    test_many_waiters(ctx);
    OK(gaio_context_release(ctx));
    fail_teardown();
}
