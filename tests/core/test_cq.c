/* Completion queues: a real epoll_wait on gaio_cq_fd, level- and edge-triggered
 * (readable exactly while entries wait), pops in batches smaller than what
 * waits, user_data and status per entry (failed futures included), gaio_cq_wait
 * with a timeout, futures from several streams and threads into one queue, and
 * releasing the queue while futures are pending. The same source runs on every
 * backend (see launch_fail in support.h for what fails a stream with
 * GAIO_ERR_DEVICE). */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "common.h"
#include "support.h"

/* Number of ready events from epoll within timeout_ms (0: just look). */
static int ready(int epfd, int timeout_ms) {
    struct epoll_event ev[4];
    int n;
    do n = epoll_wait(epfd, ev, 4, timeout_ms);
    while (n < 0 && errno == EINTR);
    CHECK(n >= 0);
    return n;
}

static int readable_now(int fd) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int n = poll(&p, 1, 0);
    CHECK(n >= 0);
    return n == 1 && (p.revents & POLLIN);
}

static int make_epoll(int fd, uint32_t events) {
    int epfd = epoll_create1(EPOLL_CLOEXEC);
    CHECK(epfd >= 0);
    struct epoll_event ev = {.events = events, .data.fd = fd};
    CHECK(epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) == 0);
    return epfd;
}

/* Adds n fences of s to cq, user data base+1 .. base+n. */
static void add_fences(gaio_cq *cq, gaio_stream *s, int n, int base) {
    for (int i = 0; i < n; i++) {
        gaio_future *f;
        OK(gaio_future_fence(s, &f));
        OK(gaio_cq_add(cq, f, (void *)(uintptr_t)(base + i + 1)));
        OK(gaio_future_release(f)); /* the queue holds its own reference */
    }
}

/* ---- 1. level-triggered ---- */

static void test_level_triggered(gaio_context *ctx, uint64_t *seed) {
    gaio_stream *s;
    OK(gaio_stream_create(ctx, 0, 0, &s));
    gaio_cq *cq;
    OK(gaio_cq_create(&cq));
    int fd = -1;
    OK(gaio_cq_fd(cq, &fd));
    CHECK(fd >= 0);
    int epfd = make_epoll(fd, EPOLLIN);
    CHECK(ready(epfd, 0) == 0);
    const int n = 50 + (int)(test_rand(seed) % 50);
    gate g = {0};
    OK(gaio_launch_host_func(s, gate_fn, &g));
    add_fences(cq, s, n, 0);
    CHECK(ready(epfd, 10) == 0); /* pending futures post nothing */
    CHECK(!readable_now(fd));
    atomic_store(&g.open, 1);
    CHECK(ready(epfd, 30000) == 1);
    OK(gaio_stream_synchronize(s)); /* every fence before it has posted its entry */
    int *seen = calloc((size_t)n, sizeof *seen);
    CHECK(seen);
    int got = 0;
    const size_t max = 7; /* smaller than what waits */
    while (got < n) {
        CHECK(ready(epfd, 0) == 1); /* level-triggered: readable while entries wait */
        CHECK(readable_now(fd));
        gaio_cq_entry e[7];
        size_t cnt = 99;
        OK(gaio_cq_pop(cq, e, max, &cnt));
        size_t want = (size_t)(n - got) < max ? (size_t)(n - got) : max;
        CHECK(cnt == want);
        for (size_t i = 0; i < cnt; i++) {
            uintptr_t id = (uintptr_t)e[i].user_data;
            CHECK(id >= 1 && id <= (uintptr_t)n);
            CHECK(e[i].status == GAIO_OK);
            /* one stream: fences complete, and post, in order */
            CHECK((int)id == got + (int)i + 1);
            seen[id - 1]++;
        }
        got += (int)cnt;
    }
    CHECK(ready(epfd, 0) == 0); /* drained: not readable */
    CHECK(!readable_now(fd));
    gaio_cq_entry e[4];
    size_t cnt = 99;
    OK(gaio_cq_pop(cq, e, 4, &cnt));
    CHECK(cnt == 0);
    for (int i = 0; i < n; i++) CHECK(seen[i] == 1);
    free(seen);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_cq_pop(cq, e, 0, &cnt), "gaio_cq_pop");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_cq_pop(cq, NULL, 4, &cnt), "gaio_cq_pop");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_cq_fd(NULL, &fd), "gaio_cq_fd");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_cq_add(cq, NULL, NULL), "gaio_cq_add");
    close(epfd);
    OK(gaio_cq_release(cq));
    OK(gaio_stream_release(s));
}

/* ---- 2. edge-triggered: an edge each time the queue goes from empty to not ---- */

static void test_edge_triggered(gaio_context *ctx) {
    gaio_stream *s;
    OK(gaio_stream_create(ctx, 0, 0, &s));
    gaio_cq *cq;
    OK(gaio_cq_create(&cq));
    int fd;
    OK(gaio_cq_fd(cq, &fd));
    int epfd = make_epoll(fd, EPOLLIN | EPOLLET);
    int base = 0;
    for (int round = 0; round < 5; round++) {
        const int n = 10 + round * 7;
        gate g = {0};
        OK(gaio_launch_host_func(s, gate_fn, &g));
        add_fences(cq, s, n, base);
        CHECK(ready(epfd, 5) == 0);
        atomic_store(&g.open, 1);
        CHECK(ready(epfd, 30000) == 1); /* the edge */
        OK(gaio_stream_synchronize(s));
        /* Drain as an edge-triggered loop must: pop until fewer than max came. */
        int got = 0;
        for (;;) {
            gaio_cq_entry e[4];
            size_t cnt;
            OK(gaio_cq_pop(cq, e, 4, &cnt));
            for (size_t i = 0; i < cnt; i++) {
                CHECK((uintptr_t)e[i].user_data == (uintptr_t)(base + got + (int)i + 1));
                CHECK(e[i].status == GAIO_OK);
            }
            got += (int)cnt;
            if (cnt < 4) break;
        }
        CHECK(got == n);
        CHECK(!readable_now(fd));
        CHECK(ready(epfd, 0) == 0);
        base += n;
    }
    /* A single completion after the queue was drained is a new edge. */
    add_fences(cq, s, 1, base);
    CHECK(ready(epfd, 30000) == 1);
    gaio_cq_entry e[2];
    size_t cnt;
    OK(gaio_cq_wait(cq, e, 2, &cnt, BIG_TIMEOUT_NS));
    CHECK(cnt == 1 && (uintptr_t)e[0].user_data == (uintptr_t)(base + 1));
    CHECK(!readable_now(fd));
    close(epfd);
    OK(gaio_cq_release(cq));
    OK(gaio_stream_release(s));
}

/* ---- 3. status per entry, a failed future included ---- */

static void test_status(gaio_context *ctx) {
    gaio_stream *good, *bad;
    OK(gaio_stream_create(ctx, 0, 0, &good));
    OK(gaio_stream_create(ctx, 0, 0, &bad));
    gaio_cq *cq;
    OK(gaio_cq_create(&cq));
    /* user data are addresses of tags here, not small integers */
    int tags[6];
    gaio_status want[6];
    gaio_future *f;
    OK(gaio_future_fence(bad, &f));
    OK(gaio_cq_add(cq, f, &tags[0]));
    want[0] = GAIO_OK;
    OK(gaio_future_release(f));
    launch_fail(bad);
    for (int i = 1; i < 4; i++) {
        OK(gaio_future_fence(bad, &f));
        OK(gaio_cq_add(cq, f, &tags[i]));
        want[i] = GAIO_ERR_DEVICE;
        OK(gaio_future_release(f));
    }
    for (int i = 4; i < 6; i++) {
        OK(gaio_future_fence(good, &f));
        OK(gaio_cq_add(cq, f, &tags[i]));
        want[i] = GAIO_OK;
        OK(gaio_future_release(f));
    }
    /* NULL user data is allowed and comes back NULL. */
    gaio_future *fnull;
    OK(gaio_future_fence(good, &fnull));
    OK(gaio_cq_add(cq, fnull, NULL));
    CHECK(gaio_stream_synchronize(bad) == GAIO_ERR_DEVICE);
    OK(gaio_stream_synchronize(good));
    OK(gaio_future_wait(fnull, BIG_TIMEOUT_NS));
    int seen[6] = {0}, nulls = 0;
    for (int got = 0; got < 7;) {
        gaio_cq_entry e[3];
        size_t cnt;
        OK(gaio_cq_wait(cq, e, 3, &cnt, BIG_TIMEOUT_NS));
        for (size_t i = 0; i < cnt; i++) {
            if (e[i].user_data == NULL) {
                CHECK(e[i].status == GAIO_OK);
                nulls++;
                continue;
            }
            int k = (int)((int *)e[i].user_data - tags);
            CHECK(k >= 0 && k < 6);
            CHECK(e[i].status == want[k]);
            seen[k]++;
        }
        got += (int)cnt;
    }
    for (int k = 0; k < 6; k++) CHECK(seen[k] == 1);
    CHECK(nulls == 1);
    /* A future that is complete already posts at once. */
    OK(gaio_cq_add(cq, fnull, &tags[5]));
    gaio_cq_entry e[1];
    size_t cnt;
    OK(gaio_cq_pop(cq, e, 1, &cnt));
    CHECK(cnt == 1 && e[0].user_data == &tags[5] && e[0].status == GAIO_OK);
    OK(gaio_future_release(fnull));
    OK(gaio_cq_release(cq));
    OK(gaio_stream_release(good));
    OK(gaio_stream_release(bad));
}

/* ---- 4. gaio_cq_wait with timeouts ---- */

typedef struct opener_arg {
    gate *g;
    int delay_ms;
} opener_arg;

static void *opener(void *arg) {
    opener_arg *a = arg;
    test_sleep_ms(a->delay_ms);
    atomic_store(&a->g->open, 1);
    return NULL;
}

static void test_wait_timeout(gaio_context *ctx) {
    gaio_cq *cq;
    OK(gaio_cq_create(&cq));
    gaio_cq_entry e[4];
    size_t cnt = 99;
    int64_t t0 = now_ns();
    FAILS(GAIO_ERR_TIMEOUT, gaio_cq_wait(cq, e, 4, &cnt, 25 * MS), "gaio_cq_wait");
    CHECK(now_ns() - t0 >= 24 * MS);
    CHECK(cnt == 0);
    cnt = 99;
    FAILS(GAIO_ERR_TIMEOUT, gaio_cq_wait(cq, e, 4, &cnt, 0), "gaio_cq_wait");
    CHECK(cnt == 0);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_cq_wait(cq, e, 4, &cnt, -5), "gaio_cq_wait");

    gaio_stream *s;
    OK(gaio_stream_create(ctx, 0, 0, &s));
    gate g = {0};
    OK(gaio_launch_host_func(s, gate_fn, &g));
    add_fences(cq, s, 3, 0);
    FAILS(GAIO_ERR_TIMEOUT, gaio_cq_wait(cq, e, 4, &cnt, 10 * MS), "gaio_cq_wait");
    CHECK(cnt == 0);
    /* Another thread opens the gate while this one waits. */
    opener_arg oa = {&g, 30};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, opener, &oa) == 0);
    t0 = now_ns();
    OK(gaio_cq_wait(cq, e, 1, &cnt, BIG_TIMEOUT_NS));
    CHECK(cnt == 1 && (uintptr_t)e[0].user_data == 1);
    CHECK(now_ns() - t0 < BIG_TIMEOUT_NS);
    CHECK(pthread_join(t, NULL) == 0);
    OK(gaio_stream_synchronize(s));
    OK(gaio_cq_wait(cq, e, 4, &cnt, GAIO_INFINITE)); /* entries wait: returns at once */
    CHECK(cnt == 2 && (uintptr_t)e[0].user_data == 2 && (uintptr_t)e[1].user_data == 3);
    OK(gaio_stream_release(s));
    OK(gaio_cq_release(cq));
}

/* ---- 5. several streams and threads into one queue, consumed with epoll ---- */

#define MT_THREADS 4
#define MT_STREAMS_PER_THREAD 2
#define MT_PER_THREAD 1500

typedef struct mt_arg {
    gaio_cq *cq;
    gaio_stream *s[MT_STREAMS_PER_THREAD];
    int base;
    int fail; /* thread 0 fails one of its streams half-way */
} mt_arg;

static void *mt_producer(void *arg) {
    mt_arg *a = arg;
    for (int i = 0; i < MT_PER_THREAD; i++) {
        gaio_stream *s = a->s[i % MT_STREAMS_PER_THREAD];
        if (a->fail && i == MT_PER_THREAD / 2) launch_fail(a->s[1]);
        gaio_future *f;
        OK(gaio_future_fence(s, &f));
        OK(gaio_cq_add(a->cq, f, (void *)(uintptr_t)(a->base + i + 1)));
        OK(gaio_future_release(f));
    }
    return NULL;
}

static void test_many_producers(gaio_context *ctx) {
    gaio_cq *cq;
    OK(gaio_cq_create(&cq));
    int fd;
    OK(gaio_cq_fd(cq, &fd));
    int epfd = make_epoll(fd, EPOLLIN);
    mt_arg a[MT_THREADS];
    pthread_t t[MT_THREADS];
    for (int i = 0; i < MT_THREADS; i++) {
        a[i].cq = cq;
        a[i].base = i * MT_PER_THREAD;
        a[i].fail = i == 0;
        for (int j = 0; j < MT_STREAMS_PER_THREAD; j++)
            OK(gaio_stream_create(ctx, j, (i == 3 && j == 0) ? GAIO_STREAM_DEFERRED : 0, &a[i].s[j]));
        CHECK(pthread_create(&t[i], NULL, mt_producer, &a[i]) == 0);
    }
    enum { TOTAL = MT_THREADS * MT_PER_THREAD };
    unsigned char *seen = calloc(TOTAL, 1);
    gaio_status *status = calloc(TOTAL, sizeof *status);
    CHECK(seen && status);
    int got = 0;
    int64_t deadline = now_ns() + BIG_TIMEOUT_NS;
    while (got < TOTAL && now_ns() < deadline) {
        if (ready(epfd, 100) == 0) continue;
        gaio_cq_entry e[64];
        size_t cnt;
        do {
            OK(gaio_cq_pop(cq, e, 64, &cnt));
            for (size_t i = 0; i < cnt; i++) {
                uintptr_t id = (uintptr_t)e[i].user_data;
                CHECK(id >= 1 && id <= TOTAL);
                seen[id - 1]++;
                status[id - 1] = e[i].status;
            }
            got += (int)cnt;
        } while (cnt == 64);
    }
    for (int i = 0; i < MT_THREADS; i++) CHECK(pthread_join(t[i], NULL) == 0);
    CHECK(got == TOTAL);
    CHECK(ready(epfd, 0) == 0);
    for (int id = 0; id < TOTAL; id++) {
        CHECK(seen[id] == 1);
        int thr = id / MT_PER_THREAD, i = id % MT_PER_THREAD;
        /* thread 0's second stream failed before its fence number MT_PER_THREAD/2 */
        gaio_status want = (thr == 0 && i % 2 == 1 && i > MT_PER_THREAD / 2) ? GAIO_ERR_DEVICE : GAIO_OK;
        if (status[id] != want) {
            fprintf(stderr, "entry %d (thread %d, #%d): %s, expected %s\n", id, thr, i,
                    gaio_status_string(status[id]), gaio_status_string(want));
            exit(1);
        }
    }
    free(seen);
    free(status);
    for (int i = 0; i < MT_THREADS; i++)
        for (int j = 0; j < MT_STREAMS_PER_THREAD; j++) OK(gaio_stream_release(a[i].s[j]));
    close(epfd);
    OK(gaio_cq_release(cq));
}

/* ---- 6. releasing the queue with futures pending or entries waiting ---- */

static void test_release_pending(gaio_context *ctx) {
    gaio_stream *s;
    OK(gaio_stream_create(ctx, 0, 0, &s));
    gaio_cq *cq;
    OK(gaio_cq_create(&cq));
    gate g = {0};
    OK(gaio_launch_host_func(s, gate_fn, &g));
    gaio_future *kept[10];
    for (int i = 0; i < 10; i++) {
        OK(gaio_future_fence(s, &kept[i]));
        OK(gaio_cq_add(cq, kept[i], (void *)(uintptr_t)(i + 1)));
    }
    add_fences(cq, s, 100, 10);
    OK(gaio_cq_release(cq)); /* pending futures now post nowhere */
    atomic_store(&g.open, 1);
    for (int i = 0; i < 10; i++) {
        OK(gaio_future_wait(kept[i], BIG_TIMEOUT_NS));
        OK(gaio_future_release(kept[i]));
    }
    OK(gaio_stream_synchronize(s));

    /* Entries waiting when the queue goes are dropped. */
    OK(gaio_cq_create(&cq));
    add_fences(cq, s, 20, 0);
    OK(gaio_stream_synchronize(s));
    int fd;
    OK(gaio_cq_fd(cq, &fd));
    CHECK(readable_now(fd));
    OK(gaio_cq_release(cq));
    OK(gaio_cq_release(NULL));

    /* A retained queue lives on after the first release. */
    OK(gaio_cq_create(&cq));
    OK(gaio_cq_retain(cq));
    OK(gaio_cq_release(cq));
    add_fences(cq, s, 3, 0);
    gaio_cq_entry e[4];
    size_t got = 0;
    while (got < 3) {
        size_t cnt;
        OK(gaio_cq_wait(cq, e, 4, &cnt, BIG_TIMEOUT_NS));
        got += cnt;
    }
    CHECK(got == 3);
    OK(gaio_cq_release(cq));
    OK(gaio_stream_release(s));
}

static void run(int device) {
    configure_workers(4);
    uint64_t seed = test_seed();
    fail_setup(device, "cq_fail"); /* host only: see launch_fail */
    gaio_context *ctx;
    OK(gaio_context_create(device, NULL, &ctx));
    test_level_triggered(ctx, &seed);
    test_edge_triggered(ctx);
    test_status(ctx);
    test_wait_timeout(ctx);
    test_many_producers(ctx);
    test_release_pending(ctx);
    OK(gaio_context_release(ctx));
    fail_teardown();
}
