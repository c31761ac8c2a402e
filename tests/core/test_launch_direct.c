/* Launches with nothing to hold (value arguments only), which the CUDA backend issues
 * with no op of their own, counted finished by the next op or fence issued on the stream
 * (src/cuda/cuda_internal.h: cuda_stream.riders): every such launch runs exactly once
 * and in order among ops of every kind, counts in gaio_stream_query until it has run,
 * and is covered by gaio_stream_synchronize; from several threads on one stream too.
 * The same calls run on the host backend (ops throughout) as the reference. On the fake
 * driver kernels do not run: the counts are checked, the sums are not. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "direct_kernels.h"

static gaio_kernel *k_a, *k_b, *k_spin;
static bool kernels_run; /* false on the fake driver */

static void add(gaio_stream *s, gaio_kernel *k, counter *c, unsigned v) { counter_add(s, k, c, v); }

static gaio_status count_host_fn(gaio_status st, void *user) {
    if (st == GAIO_OK) atomic_fetch_add((atomic_int *)user, 1);
    return GAIO_OK;
}

/* A random program: mostly launches of one kernel (the direct path), among kernel
 * switches, fences, host functions, fills and event points, which each end or restart
 * a run of direct launches. */
static void test_mixed_program(gaio_context *ctx, unsigned flags, uint64_t *seed) {
    gaio_stream *s;
    OK(gaio_stream_create(ctx, 0, flags, &s));
    counter c;
    counter_init(ctx, s, &c);
    gaio_buffer *scratch;
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_DEVICE, 4096, &scratch));
    gaio_event *ev;
    OK(gaio_event_create(ctx, 0, &ev));
    enum { STEPS = 4000, MAXF = 64 };
    gaio_future *fences[MAXF];
    int nf = 0;
    atomic_int host_runs = 0;
    int host_want = 0;
    unsigned want = 0;
    for (int i = 0; i < STEPS; i++) {
        uint64_t r = test_rand(seed) % 1000;
        unsigned v = (unsigned)(test_rand(seed) % 7) + 1;
        if (r < 900) {
            add(s, k_a, &c, v);
            want += v;
        } else if (r < 940) {
            add(s, k_b, &c, v);
            want += 3 * v;
        } else if (r < 960 && nf < MAXF) {
            OK(gaio_future_fence(s, &fences[nf++]));
        } else if (r < 975) {
            OK(gaio_launch_host_func(s, count_host_fn, &host_runs));
            host_want++;
        } else if (r < 990) {
            OK(gaio_memset_async(s, scratch, 0, (int)(r & 0xff), 4096));
        } else {
            OK(gaio_event_record(ev, s));
            OK(gaio_stream_wait_event(s, ev));
        }
    }
    OK(gaio_stream_synchronize(s));
    OK(gaio_stream_query(s)); /* every launch counted as finished, none missing */
    for (int i = 0; i < nf; i++) {
        OK(gaio_future_wait(fences[i], 0));
        OK(gaio_future_release(fences[i]));
    }
    CHECK(atomic_load(&host_runs) == host_want);
    if (kernels_run) {
        if (atomic_load(c.host) != want) printf("sum %u, want %u\n", atomic_load(c.host), want);
        CHECK(atomic_load(c.host) == want);
    }
    printf("mixed program (%s stream): %d steps, sum %u%s\n", flags ? "deferred" : "inline", STEPS, want,
           kernels_run ? "" : " (not run: fake driver)");
    OK(gaio_event_release(ev));
    OK(gaio_buffer_release(scratch));
    OK(gaio_buffer_release(c.buf));
    OK(gaio_stream_release(s));
}

typedef struct hammer {
    gaio_stream *s;
    counter *c;
    int launches;
    unsigned sum;
    uint64_t seed;
} hammer;

static void *hammer_main(void *arg) {
    hammer *h = arg;
    for (int i = 0; i < h->launches; i++) {
        unsigned v = (unsigned)(test_rand(&h->seed) % 5) + 1;
        add(h->s, k_a, h->c, v);
        h->sum += v;
        if (i % 97 == 96) {
            gaio_future *f;
            OK(gaio_future_fence(h->s, &f));
            OK(gaio_future_release(f));
        }
    }
    return NULL;
}

/* Several threads on one stream: direct launches and ops interleave under the
 * stream's lock. */
static void test_threads_one_stream(gaio_context *ctx, uint64_t *seed) {
    gaio_stream *s;
    OK(gaio_stream_create(ctx, 0, 0, &s));
    counter c;
    counter_init(ctx, s, &c);
    enum { T = 4 };
    hammer h[T];
    pthread_t th[T];
    for (int i = 0; i < T; i++) {
        h[i] = (hammer){s, &c, 3000, 0, test_rand(seed)};
        CHECK(pthread_create(&th[i], NULL, hammer_main, &h[i]) == 0);
    }
    unsigned want = 0;
    for (int i = 0; i < T; i++) {
        CHECK(pthread_join(th[i], NULL) == 0);
        want += h[i].sum;
    }
    OK(gaio_stream_synchronize(s));
    OK(gaio_stream_query(s));
    if (kernels_run) CHECK(atomic_load(c.host) == want);
    printf("%d threads on one stream: sum %u\n", T, want);
    OK(gaio_buffer_release(c.buf));
    OK(gaio_stream_release(s));
}

/* A run of launches of one kernel: the stream is busy until the last has run, and
 * they run one after another. */
static void test_query_waits(gaio_context *ctx) {
    if (!kernels_run) return;
    gaio_stream *s;
    OK(gaio_stream_create(ctx, 0, 0, &s));
    OK(gaio_stream_synchronize(s));
    enum { N = 6 };
    unsigned long long ns = 2000000; /* 2 ms each */
    gaio_arg args[1] = {GAIO_ARG(ns)};
    int64_t t0 = now_ns();
    for (int i = 0; i < N; i++) OK(gaio_launch(s, k_spin, (gaio_dim3){1, 1, 1}, (gaio_dim3){1, 1, 1}, 0, args, 1));
    CHECK(gaio_stream_query(s) == GAIO_ERR_NOT_READY);
    while (gaio_stream_query(s) == GAIO_ERR_NOT_READY) test_sleep_ms(1);
    double ms = (double)(now_ns() - t0) / 1e6;
    printf("%d launches of 2 ms: the stream was busy %.1f ms\n", N, ms);
    CHECK(ms >= 0.95 * N * 2.0);
    OK(gaio_stream_query(s));
    OK(gaio_stream_release(s));
}

/* Direct launches with no op after them: the stream goes quiet, and the completion
 * engine gives them an op to count them by (cuda_submit.c: carry_riders). */
static void test_quiet_stream(gaio_context *ctx) {
    gaio_stream *s;
    OK(gaio_stream_create(ctx, 0, 0, &s));
    counter c;
    counter_init(ctx, s, &c);
    for (int round = 0; round < 20; round++) {
        add(s, k_a, &c, 1); /* after the fill: an op (the kernel is new to the stream), then direct */
        for (int i = 0; i < 40; i++) add(s, k_a, &c, 1);
        int64_t t0 = now_ns();
        while (gaio_stream_query(s) == GAIO_ERR_NOT_READY && now_ns() - t0 < 5000000000ll) test_sleep_ms(0);
        OK(gaio_stream_query(s));
        if (kernels_run) CHECK(atomic_load(c.host) == (unsigned)(41 * (round + 1)));
        OK(gaio_memset_async(s, c.buf, 4, 0, 4)); /* another op kind between rounds */
    }
    printf("quiet stream: 20 rounds of 41 launches counted finished with no fence\n");
    OK(gaio_stream_synchronize(s));
    OK(gaio_buffer_release(c.buf));
    OK(gaio_stream_release(s));
}

static void run(int device) {
    kernels_run = direct_kernels_run(device);
    direct_kernels dk = direct_kernels_register();
    k_a = dk.add1;
    k_b = dk.add3;
    k_spin = dk.spin;
    uint64_t seed = test_seed();
    gaio_context *ctx;
    OK(gaio_context_create(device, NULL, &ctx));
    test_mixed_program(ctx, 0, &seed);
    test_mixed_program(ctx, GAIO_STREAM_DEFERRED, &seed);
    test_threads_one_stream(ctx, &seed);
    test_query_waits(ctx);
    test_quiet_stream(ctx);
    /* Unregistered and released with launches maybe in flight: the streams' hold on
     * the kernel they launched last covers the direct launches. */
    gaio_stream *s;
    OK(gaio_stream_create(ctx, 0, 0, &s));
    counter c;
    counter_init(ctx, s, &c);
    for (int i = 0; i < 100; i++) add(s, k_a, &c, 1);
    direct_kernels_release(&dk);
    OK(gaio_stream_synchronize(s));
    if (kernels_run) CHECK(atomic_load(c.host) == 100);
    OK(gaio_buffer_release(c.buf));
    OK(gaio_stream_release(s));
    OK(gaio_context_release(ctx));
}
