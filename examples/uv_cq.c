/* uv_cq: gaio completions inside a libuv event loop.
 *
 * Several streams of real work (random fills, copies, a registered host kernel
 * that sums, host functions that sleep to simulate latency) complete into one
 * gaio_cq. The loop watches the queue's fd with uv_poll, pops entries in
 * batches and checks every result against a direct computation on this
 * thread, while a uv_timer keeps ticking to show the loop never blocks.
 *
 * Exit status: 0 when every job completed and matched, 1 otherwise. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <uv.h>

#include "gaio/gaio.h"

#define NSTREAMS 4
#define NJOBS 48
#define POP_BATCH 8
#define TICK_MS 1
#define WATCHDOG_MS 30000

typedef struct job {
    int index;
    size_t count;      /* floats in this job's fill */
    float low, high;
    uint64_t seed, offset; /* the generator state the fill drew from */
    gaio_buffer *host_data; /* HOST copy of the filled DEVICE buffer */
    gaio_buffer *host_sum;  /* HOST copy of the kernel's DEVICE result */
    int host_fn_calls;      /* written by the host function (a gaio thread) before the fence */
    gaio_status host_fn_status;
    int done;
} job;

typedef struct app {
    uv_loop_t *loop;
    uv_poll_t poll;
    uv_timer_t ticker;
    uv_timer_t watchdog;
    gaio_cq *cq;
    job jobs[NJOBS];
    int completed;
    int mismatches;
    int poll_wakeups;
    int max_batch;
    uint64_t ticks;
    uint64_t last_tick_ns, max_tick_gap_ns;
    uint64_t start_ns;
    int failed;       /* a loop-level failure: uv error, watchdog */
    int handles_init; /* poll and both timers are initialized */
} app;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Reports a failed gaio call with the library's message. */
static int gaio_check(gaio_status st, const char *what) {
    if (st == GAIO_OK) return 0;
    fprintf(stderr, "uv_cq: %s failed: %s: %s\n", what, gaio_status_string(st), gaio_last_error());
    return -1;
}

#define CHECK(call)                                \
    do {                                           \
        if (gaio_check((call), #call) != 0) goto fail; \
    } while (0)

static int uv_check(int rc, const char *what) {
    if (rc == 0) return 0;
    fprintf(stderr, "uv_cq: %s failed: %s\n", what, uv_strerror(rc));
    return -1;
}

/* ---- the host kernel: out[0] = sum of src[0..n) in double, in index order ---- */

static gaio_status sum_kernel(const gaio_launch_info *info, void *const *args) {
    (void)info;
    const float *src;
    uint64_t n;
    double *out;
    memcpy(&src, args[0], sizeof src);
    memcpy(&n, args[1], sizeof n);
    memcpy(&out, args[2], sizeof out);
    double s = 0.0;
    for (uint64_t i = 0; i < n; i++) s += src[i];
    *out = s;
    return GAIO_OK;
}

/* ---- a host function that simulates a few milliseconds of I/O latency ---- */

static gaio_status slow_host_fn(gaio_status stream_status, void *user) {
    job *j = user;
    struct timespec ts = {0, (long)(1 + j->index % 4) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
    j->host_fn_status = stream_status;
    j->host_fn_calls++;
    return GAIO_OK;
}

/* ---- the direct computation ---- */

static float expected_uniform(const job *j, size_t i) {
    const uint64_t c = j->offset + i / 4;
    const uint32_t ctr[4] = {(uint32_t)c, (uint32_t)(c >> 32), 0, 0};
    const uint32_t key[2] = {(uint32_t)j->seed, (uint32_t)(j->seed >> 32)};
    uint32_t w[4];
    gaio_philox4x32_10(ctr, key, w);
    float unit = (float)(w[i % 4] >> 8) * (1.0f / 16777216.0f);
    return j->low + (j->high - j->low) * unit;
}

/* 0 when the job's results match; prints what differs otherwise. */
static int verify_job(const job *j, gaio_status status) {
    if (status != GAIO_OK) {
        fprintf(stderr, "uv_cq: job %d completed with %s\n", j->index, gaio_status_string(status));
        return -1;
    }
    if (j->host_fn_calls != 1 || j->host_fn_status != GAIO_OK) {
        fprintf(stderr, "uv_cq: job %d: host function ran %d times with %s\n", j->index, j->host_fn_calls,
                gaio_status_string(j->host_fn_status));
        return -1;
    }
    void *pd, *ps;
    if (gaio_check(gaio_buffer_host_ptr(j->host_data, &pd), "gaio_buffer_host_ptr(data)") != 0 ||
        gaio_check(gaio_buffer_host_ptr(j->host_sum, &ps), "gaio_buffer_host_ptr(sum)") != 0)
        return -1;
    const float *data = pd;
    double want_sum = 0.0;
    for (size_t i = 0; i < j->count; i++) {
        float want = expected_uniform(j, i);
        if (memcmp(&want, &data[i], sizeof want) != 0) {
            fprintf(stderr, "uv_cq: job %d: element %zu is %.9g, expected %.9g\n", j->index, i, (double)data[i],
                    (double)want);
            return -1;
        }
        if (data[i] < j->low || data[i] >= j->high) {
            fprintf(stderr, "uv_cq: job %d: element %zu = %.9g outside [%g, %g)\n", j->index, i, (double)data[i],
                    (double)j->low, (double)j->high);
            return -1;
        }
        want_sum += want;
    }
    double got_sum;
    memcpy(&got_sum, ps, sizeof got_sum);
    if (got_sum != want_sum) {
        fprintf(stderr, "uv_cq: job %d: kernel sum %.17g, expected %.17g\n", j->index, got_sum, want_sum);
        return -1;
    }
    return 0;
}

/* ---- loop callbacks ---- */

static void stop_all(app *a) {
    if (!a->handles_init) return;
    if (uv_is_active((uv_handle_t *)&a->poll)) (void)uv_poll_stop(&a->poll);
    if (!uv_is_closing((uv_handle_t *)&a->poll)) uv_close((uv_handle_t *)&a->poll, NULL);
    if (!uv_is_closing((uv_handle_t *)&a->ticker)) uv_close((uv_handle_t *)&a->ticker, NULL);
    if (!uv_is_closing((uv_handle_t *)&a->watchdog)) uv_close((uv_handle_t *)&a->watchdog, NULL);
}

static void on_cq_readable(uv_poll_t *handle, int status, int events) {
    app *a = handle->data;
    if (status < 0) {
        fprintf(stderr, "uv_cq: poll error: %s\n", uv_strerror(status));
        a->failed = 1;
        stop_all(a);
        return;
    }
    if (!(events & UV_READABLE)) return;
    a->poll_wakeups++;
    for (;;) {
        gaio_cq_entry entries[POP_BATCH];
        size_t n = 0;
        if (gaio_check(gaio_cq_pop(a->cq, entries, POP_BATCH, &n), "gaio_cq_pop") != 0) {
            a->failed = 1;
            stop_all(a);
            return;
        }
        if (n == 0) break;
        if ((int)n > a->max_batch) a->max_batch = (int)n;
        for (size_t i = 0; i < n; i++) {
            job *j = entries[i].user_data;
            if (j->done) {
                fprintf(stderr, "uv_cq: job %d completed twice\n", j->index);
                a->mismatches++;
                continue;
            }
            j->done = 1;
            a->completed++;
            if (verify_job(j, entries[i].status) != 0) a->mismatches++;
        }
    }
    if (a->completed == NJOBS) stop_all(a);
}

static void on_tick(uv_timer_t *t) {
    app *a = t->data;
    uint64_t now = now_ns();
    if (a->ticks && now - a->last_tick_ns > a->max_tick_gap_ns) a->max_tick_gap_ns = now - a->last_tick_ns;
    a->last_tick_ns = now;
    a->ticks++;
}

static void on_watchdog(uv_timer_t *t) {
    app *a = t->data;
    fprintf(stderr, "uv_cq: only %d of %d jobs completed within %d ms\n", a->completed, NJOBS, WATCHDOG_MS);
    a->failed = 1;
    stop_all(a);
}

/* ---- submission ---- */

/* Job j on stream s: fill DEVICE memory with uniform floats, copy it to HOST
 * memory, sum it with the host kernel into DEVICE memory, copy the sum out, run a
 * slow host function, then fence; the fence's future goes to the queue. */
static int submit_job(app *a, gaio_context *ctx, gaio_stream *s, gaio_kernel *sum, job *j) {
    gaio_buffer *dev_data = NULL, *dev_sum = NULL;
    gaio_future *fut = NULL;
    size_t bytes = j->count * sizeof(float);
    CHECK(gaio_buffer_alloc(ctx, GAIO_MEM_DEVICE, bytes, &dev_data));
    CHECK(gaio_buffer_alloc_async(s, GAIO_MEM_DEVICE, sizeof(double), &dev_sum));
    CHECK(gaio_buffer_alloc(ctx, GAIO_MEM_HOST, bytes, &j->host_data));
    CHECK(gaio_buffer_alloc(ctx, GAIO_MEM_HOST, sizeof(double), &j->host_sum));
    CHECK(gaio_memset_async(s, j->host_sum, 0, 0xff, sizeof(double))); /* NaN until the copy lands */

    CHECK(gaio_rng_get_state(ctx, &j->seed, &j->offset));
    CHECK(gaio_rng_uniform_f32(s, dev_data, 0, j->count, j->low, j->high));
    CHECK(gaio_memcpy_async(s, j->host_data, 0, dev_data, 0, bytes));
    uint64_t n = j->count;
    gaio_arg args[3] = {GAIO_ARG_BUFFER(dev_data), GAIO_ARG(n), GAIO_ARG_BUFFER(dev_sum)};
    CHECK(gaio_launch(s, sum, (gaio_dim3){1, 1, 1}, (gaio_dim3){1, 1, 1}, 0, args, 3));
    CHECK(gaio_memcpy_async(s, j->host_sum, 0, dev_sum, 0, sizeof(double)));
    CHECK(gaio_launch_host_func(s, slow_host_fn, j));
    CHECK(gaio_future_fence(s, &fut));
    CHECK(gaio_cq_add(a->cq, fut, j));
    /* The queue and the ops in flight hold what they need: drop our references now. */
    CHECK(gaio_future_release(fut));
    CHECK(gaio_buffer_release(dev_data));
    CHECK(gaio_buffer_release(dev_sum));
    return 0;
fail:
    gaio_future_release(fut);
    gaio_buffer_release(dev_data);
    gaio_buffer_release(dev_sum);
    return -1;
}

int main(void) {
    static app a; /* large: keep it off the stack */
    gaio_context *ctx = NULL;
    gaio_stream *streams[NSTREAMS] = {0};
    gaio_kernel *sum = NULL;
    int rc = 1, fd = -1;

    a.loop = uv_default_loop();
    const size_t sum_arg_sizes[3] = {sizeof(void *), sizeof(uint64_t), sizeof(void *)};
    CHECK(gaio_kernel_register("uv_cq_sum_f32", sum_kernel, 3, sum_arg_sizes, &sum));
    gaio_context_options opts = {.rng_seed = 0x5eed0fa110ULL};
    CHECK(gaio_context_create(0, &opts, &ctx));
    for (int i = 0; i < NSTREAMS; i++) CHECK(gaio_stream_create(ctx, i % 2, 0, &streams[i]));
    CHECK(gaio_cq_create(&a.cq));
    CHECK(gaio_cq_fd(a.cq, &fd));

    if (uv_check(uv_poll_init(a.loop, &a.poll, fd), "uv_poll_init") != 0 ||
        uv_check(uv_timer_init(a.loop, &a.ticker), "uv_timer_init") != 0 ||
        uv_check(uv_timer_init(a.loop, &a.watchdog), "uv_timer_init") != 0)
        goto fail; /* not reached in practice: these only fail on bad arguments */
    a.handles_init = 1;
    a.poll.data = a.ticker.data = a.watchdog.data = &a;
    if (uv_check(uv_poll_start(&a.poll, UV_READABLE, on_cq_readable), "uv_poll_start") != 0 ||
        uv_check(uv_timer_start(&a.ticker, on_tick, TICK_MS, TICK_MS), "uv_timer_start") != 0 ||
        uv_check(uv_timer_start(&a.watchdog, on_watchdog, WATCHDOG_MS, 0), "uv_timer_start") != 0)
        goto fail;

    a.start_ns = now_ns();
    size_t total_floats = 0;
    for (int i = 0; i < NJOBS; i++) {
        job *j = &a.jobs[i];
        j->index = i;
        j->count = 1 + (size_t)(i * 7919) % 60000; /* odd sizes: partial Philox blocks too */
        j->low = -1.0f - (float)(i % 3);
        j->high = 1.0f + (float)(i % 5);
        total_floats += j->count;
        if (submit_job(&a, ctx, streams[i % NSTREAMS], sum, j) != 0) goto fail;
    }
    uint64_t submitted_ns = now_ns();

    if (uv_check(uv_run(a.loop, UV_RUN_DEFAULT), "uv_run") != 0) goto fail;
    uint64_t end_ns = now_ns();

    CHECK(gaio_context_synchronize(ctx));
    printf("uv_cq: %d jobs on %d streams (%zu floats: fill, copy, sum kernel, copy, %s host function)\n", NJOBS,
           NSTREAMS, total_floats, "1-4 ms");
    printf("uv_cq: submitted in %.3f ms; all complete after %.3f ms\n", (double)(submitted_ns - a.start_ns) / 1e6,
           (double)(end_ns - a.start_ns) / 1e6);
    printf("uv_cq: %d completions over %d poll wake-ups (largest batch %d), %d mismatches\n", a.completed,
           a.poll_wakeups, a.max_batch, a.mismatches);
    printf("uv_cq: timer ticked %" PRIu64 " times every %d ms while waiting (largest gap %.3f ms)\n", a.ticks, TICK_MS,
           (double)a.max_tick_gap_ns / 1e6);
    if (a.failed || a.completed != NJOBS || a.mismatches) {
        printf("uv_cq: FAILED\n");
        rc = 1;
    } else if (a.ticks == 0) {
        printf("uv_cq: FAILED (the timer never ticked: the loop was blocked)\n");
        rc = 1;
    } else {
        printf("uv_cq: OK\n");
        rc = 0;
    }
    goto out;
fail:
    rc = 1;
out:
    stop_all(&a); /* no-op when the loop already closed them */
    (void)uv_run(a.loop, UV_RUN_DEFAULT);
    if (uv_loop_close(a.loop) != 0) fprintf(stderr, "uv_cq: uv_loop_close: handles still open\n");
    for (int i = 0; i < NJOBS; i++) {
        gaio_buffer_release(a.jobs[i].host_data);
        gaio_buffer_release(a.jobs[i].host_sum);
    }
    gaio_cq_release(a.cq);
    for (int i = 0; i < NSTREAMS; i++) gaio_stream_release(streams[i]);
    gaio_kernel_release(sum);
    gaio_context_release(ctx);
    return rc;
}
