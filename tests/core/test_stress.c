/* Stress: GAIO_STRESS_FUTURES futures (default 1,000,000) made from 8 threads
 * over 16 streams (each thread round-robins the streams; a quarter of them are
 * deferred). Each future goes either to one completion queue, drained by a
 * consumer thread through epoll, or to a then-callback. Every completion is
 * counted per future (an atomic counter indexed by the future's id): none may
 * be lost and none doubled. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "common.h"

#define THREADS 8
#define STREAMS 16
#define WINDOW 4096 /* futures a producer may have outstanding */

typedef struct padded_counter {
    atomic_long n;
    char pad[64 - sizeof(atomic_long)];
} padded_counter;

static struct {
    size_t total;
    size_t per_thread;
    atomic_uchar *counts; /* completions per future id */
    padded_counter done[THREADS];
    atomic_long completions;
    atomic_long cq_entries, callbacks;
    atomic_long bad_status;
    gaio_stream *streams[STREAMS];
    gaio_cq *cq;
    atomic_int stop;
} st;

static int thread_of(size_t id) {
    size_t t = id / st.per_thread;
    return t >= THREADS ? THREADS - 1 : (int)t;
}

static void count_completion(size_t id, gaio_status status) {
    if (id >= st.total) {
        atomic_fetch_add(&st.bad_status, 1);
        return;
    }
    if (status != GAIO_OK) atomic_fetch_add(&st.bad_status, 1);
    unsigned char prev = atomic_fetch_add(&st.counts[id], 1);
    if (prev == 255) atomic_store(&st.counts[id], 255); /* saturate: still "doubled" */
    atomic_fetch_add(&st.done[thread_of(id)].n, 1);
    atomic_fetch_add(&st.completions, 1);
}

static void then_cb(gaio_future *f, gaio_status status, void *user) {
    (void)f;
    atomic_fetch_add(&st.callbacks, 1);
    count_completion((size_t)(uintptr_t)user - 1, status);
}

typedef struct producer_arg {
    int t;
    size_t first, count;
    uint64_t seed;
} producer_arg;

static void *producer(void *arg) {
    producer_arg *a = arg;
    uint64_t rng = a->seed;
    for (size_t i = 0; i < a->count; i++) {
        /* Flow control: keep memory bounded when workers fall behind. */
        while ((long)i - atomic_load_explicit(&st.done[a->t].n, memory_order_relaxed) > WINDOW) sched_yield();
        size_t id = a->first + i;
        gaio_stream *s = st.streams[(size_t)(a->t + (int)i) % STREAMS];
        gaio_future *f;
        OK(gaio_future_fence(s, &f));
        /* Randomly (not by parity, so both paths mix on every stream) cq or callback. */
        if (test_rand(&rng) & 1)
            OK(gaio_cq_add(st.cq, f, (void *)(uintptr_t)(id + 1)));
        else
            OK(gaio_future_then(f, then_cb, (void *)(uintptr_t)(id + 1)));
        OK(gaio_future_release(f));
    }
    return NULL;
}

static void *consumer(void *arg) {
    (void)arg;
    int fd;
    OK(gaio_cq_fd(st.cq, &fd));
    int epfd = epoll_create1(EPOLL_CLOEXEC);
    CHECK(epfd >= 0);
    struct epoll_event ev = {.events = EPOLLIN | EPOLLET, .data.fd = fd};
    CHECK(epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) == 0);
    gaio_cq_entry e[256];
    for (;;) {
        /* Edge-triggered: drain until a pop comes back short. */
        size_t cnt;
        do {
            OK(gaio_cq_pop(st.cq, e, 256, &cnt));
            for (size_t i = 0; i < cnt; i++) {
                atomic_fetch_add(&st.cq_entries, 1);
                count_completion((size_t)(uintptr_t)e[i].user_data - 1, e[i].status);
            }
        } while (cnt == 256);
        if (atomic_load(&st.stop)) break;
        struct epoll_event out[1];
        int n = epoll_wait(epfd, out, 1, 50);
        CHECK(n >= 0 || errno == EINTR);
    }
    close(epfd);
    return NULL;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void run(int device) {
    uint64_t seed = test_seed();
    const char *env = getenv("GAIO_STRESS_FUTURES");
    st.total = env ? (size_t)strtoull(env, NULL, 10) : 1000000;
    if (st.total < THREADS) st.total = THREADS;
    st.per_thread = st.total / THREADS;
    st.counts = calloc(st.total, sizeof *st.counts);
    CHECK(st.counts);
    for (size_t i = 0; i < st.total; i++) atomic_init(&st.counts[i], 0);
    for (int t = 0; t < THREADS; t++) atomic_init(&st.done[t].n, 0);
    atomic_init(&st.completions, 0);
    atomic_init(&st.cq_entries, 0);
    atomic_init(&st.callbacks, 0);
    atomic_init(&st.bad_status, 0);
    atomic_init(&st.stop, 0);

    gaio_context *ctx;
    OK(gaio_context_create(device, NULL, &ctx));
    for (int i = 0; i < STREAMS; i++)
        OK(gaio_stream_create(ctx, 0, (i % 4 == 3) ? GAIO_STREAM_DEFERRED : 0, &st.streams[i]));
    OK(gaio_cq_create(&st.cq));

    pthread_t cons;
    CHECK(pthread_create(&cons, NULL, consumer, NULL) == 0);
    producer_arg a[THREADS];
    pthread_t prod[THREADS];
    double t0 = now_s();
    for (int t = 0; t < THREADS; t++) {
        a[t].t = t;
        a[t].first = (size_t)t * st.per_thread;
        a[t].count = t == THREADS - 1 ? st.total - a[t].first : st.per_thread;
        a[t].seed = test_rand(&seed) | 1;
        CHECK(pthread_create(&prod[t], NULL, producer, &a[t]) == 0);
    }
    for (int t = 0; t < THREADS; t++) CHECK(pthread_join(prod[t], NULL) == 0);
    double t_submit = now_s() - t0;
    /* Wait for every completion (generously: 300 s, CI under sanitizers included). */
    double deadline = now_s() + 300.0;
    while ((size_t)atomic_load(&st.completions) < st.total && now_s() < deadline) test_sleep_ms(1);
    double secs = now_s() - t0;
    OK(gaio_context_synchronize(ctx));
    /* Give any duplicate a moment to show up, then stop the consumer (it drains once more). */
    test_sleep_ms(20);
    atomic_store(&st.stop, 1);
    CHECK(pthread_join(cons, NULL) == 0);

    size_t lost = 0, doubled = 0;
    for (size_t i = 0; i < st.total; i++) {
        unsigned char c = atomic_load(&st.counts[i]);
        if (c == 0) lost++;
        if (c > 1) doubled++;
    }
    long comp = atomic_load(&st.completions);
    printf("stress: %zu futures from %d threads over %d streams in %.3f s (submitted in %.3f s): %.0f completions/s; "
           "%ld via cq, %ld via callbacks; lost %zu, doubled %zu\n",
           st.total, THREADS, STREAMS, secs, t_submit, (double)comp / secs, atomic_load(&st.cq_entries),
           atomic_load(&st.callbacks), lost, doubled);
    CHECK(lost == 0);
    CHECK(doubled == 0);
    CHECK((size_t)comp == st.total);
    CHECK((size_t)(atomic_load(&st.cq_entries) + atomic_load(&st.callbacks)) == st.total);
    CHECK(atomic_load(&st.bad_status) == 0);
    CHECK(atomic_load(&st.cq_entries) > 0 && atomic_load(&st.callbacks) > 0);

    OK(gaio_cq_release(st.cq));
    for (int i = 0; i < STREAMS; i++) OK(gaio_stream_release(st.streams[i]));
    OK(gaio_context_release(ctx));
    free(st.counts);
}
