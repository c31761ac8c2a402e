/* gaio's NCCL layer on the fake NCCL and fake CUDA driver (tests/fake_nccl,
 * tests/fake_cuda), without a GPU: three ranks as threads on the fake device, one
 * joining late; every collective and a grouped all-to-all against a direct
 * computation; memory NCCL cannot read refused; then a collective whose peer never
 * answers (GAIO_FAKE_NCCL_FAIL_AT): the watch sees NCCL's asynchronous error and the
 * rank's future fails with it instead of waiting. Meant for the fakes
 * (test_comm_fake_fakecuda); on a real GPU it says SKIPPED, on the host it has
 * nothing to do. */
#include <pthread.h>

#include "common.h"
#include "support.h"

#define N 3
#define COUNT 256

static int g_dev;
static gaio_comm_id g_id;

static float val(int r, size_t i) { return (float)((int)(i % 13) - 6 + r); }

static void fence_ok(gaio_stream *s) {
    gaio_future *f;
    OK(gaio_future_fence(s, &f));
    OK(gaio_future_wait(f, BIG_TIMEOUT_NS));
    OK(gaio_future_release(f));
}

static void *rank_main(void *p) {
    int r = (int)(intptr_t)p;
    gaio_context *ctx;
    OK(gaio_context_create(g_dev, NULL, &ctx));
    if (r == N - 1) test_sleep_ms(50); /* the others' ops wait for it */
    gaio_comm *comm;
    gaio_future *joined;
    OK(gaio_comm_init_rank(ctx, &g_id, N, r, &comm, &joined));
    gaio_stream *s;
    OK(gaio_stream_create(ctx, 0, 0, &s));
    gaio_buffer *h, *a, *b, *g;
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_PINNED, N * COUNT * 4, &h));
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_DEVICE, N * COUNT * 4, &a));
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_DEVICE, N * COUNT * 4, &b));
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_HOST, COUNT * 4, &g));
    float *x = host_ptr(h);
    for (size_t i = 0; i < N * COUNT; i++) x[i] = val(r, i);
    OK(gaio_memcpy_async(s, a, 0, h, 0, N * COUNT * 4));
    /* all_reduce (sum), then max into b, all_gather, reduce_scatter, broadcast */
    OK(gaio_comm_all_reduce(s, comm, a, 0, b, 0, COUNT, GAIO_DTYPE_F32, GAIO_COMM_SUM));
    OK(gaio_memcpy_async(s, h, 0, b, 0, COUNT * 4));
    fence_ok(s);
    for (size_t i = 0; i < COUNT; i++) CHECK(x[i] == val(0, i) + val(1, i) + val(2, i));
    for (size_t i = 0; i < N * COUNT; i++) x[i] = val(r, i);
    OK(gaio_memcpy_async(s, a, 0, h, 0, N * COUNT * 4));
    OK(gaio_comm_all_gather(s, comm, a, 0, b, 0, COUNT, GAIO_DTYPE_F32));
    OK(gaio_memcpy_async(s, h, 0, b, 0, N * COUNT * 4));
    fence_ok(s);
    for (int k = 0; k < N; k++)
        for (size_t i = 0; i < COUNT; i++) CHECK(x[k * COUNT + i] == val(k, i));
    for (size_t i = 0; i < N * COUNT; i++) x[i] = val(r, i);
    OK(gaio_memcpy_async(s, a, 0, h, 0, N * COUNT * 4));
    OK(gaio_comm_reduce_scatter(s, comm, a, 0, b, 0, COUNT, GAIO_DTYPE_F32, GAIO_COMM_MAX));
    OK(gaio_comm_broadcast(s, comm, a, 0, a, 0, COUNT, GAIO_DTYPE_F32, 1));
    OK(gaio_memcpy_async(s, h, 0, b, 0, COUNT * 4));
    OK(gaio_memcpy_async(s, h, COUNT * 4, a, 0, COUNT * 4));
    fence_ok(s);
    for (size_t i = 0; i < COUNT; i++) {
        CHECK(x[i] == val(2, (size_t)r * COUNT + i)); /* the max over ranks is rank 2's */
        CHECK(x[COUNT + i] == val(1, i));
    }
    /* all-to-all in a group */
    for (size_t i = 0; i < N * COUNT; i++) x[i] = val(r, i) * 10 + (float)r;
    OK(gaio_memcpy_async(s, a, 0, h, 0, N * COUNT * 4));
    OK(gaio_comm_group_start());
    for (int k = 0; k < N; k++) {
        OK(gaio_comm_send(s, comm, a, (size_t)k * COUNT * 4, COUNT, GAIO_DTYPE_F32, k));
        OK(gaio_comm_recv(s, comm, b, (size_t)k * COUNT * 4, COUNT, GAIO_DTYPE_F32, k));
    }
    OK(gaio_comm_group_end());
    OK(gaio_memcpy_async(s, h, 0, b, 0, N * COUNT * 4));
    fence_ok(s);
    for (int k = 0; k < N; k++)
        for (size_t i = 0; i < COUNT; i++) CHECK(x[k * COUNT + i] == val(k, (size_t)r * COUNT + i) * 10 + (float)k);
    /* pageable host memory is not NCCL's */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_comm_all_reduce(s, comm, g, 0, g, 0, COUNT, GAIO_DTYPE_F32, GAIO_COMM_SUM),
          "pageable host memory");
    OK(gaio_future_wait(joined, BIG_TIMEOUT_NS));
    OK(gaio_future_release(joined));
    gaio_buffer *bs[] = {h, a, b, g};
    for (int i = 0; i < 4; i++) OK(gaio_buffer_release(bs[i]));
    OK(gaio_stream_release(s));
    OK(gaio_comm_release(comm));
    OK(gaio_context_release(ctx));
    return NULL;
}

/* One rank alone whose collective never completes: NCCL reports an error, the watch
 * fails the stream with it and aborts; nothing waits. */
static void test_hung_peer(void) {
    setenv("GAIO_FAKE_NCCL_FAIL_AT", "1", 1); /* every collective from here on hangs */
    gaio_context *ctx[2];
    gaio_comm_id id;
    OK(gaio_context_create(g_dev, NULL, &ctx[0]));
    OK(gaio_comm_unique_id(ctx[0], &id));
    gaio_comm *comm;
    gaio_future *joined;
    OK(gaio_comm_init_rank(ctx[0], &id, 1, 0, &comm, &joined));
    OK(gaio_future_wait(joined, BIG_TIMEOUT_NS));
    gaio_stream *s;
    OK(gaio_stream_create(ctx[0], 0, 0, &s));
    gaio_buffer *a;
    OK(gaio_buffer_alloc(ctx[0], GAIO_MEM_DEVICE, 64, &a));
    int64_t t0 = now_ns();
    (void)gaio_comm_all_reduce(s, comm, a, 0, a, 0, 16, GAIO_DTYPE_F32, GAIO_COMM_SUM);
    gaio_future *f;
    OK(gaio_future_fence(s, &f));
    gaio_status st = gaio_future_wait(f, BIG_TIMEOUT_NS);
    double secs = (double)(now_ns() - t0) / 1e9;
    printf("  a collective that never completes: %s after %.3f s: %s\n", gaio_status_string(st), secs,
           gaio_future_message(f));
    CHECK(st == GAIO_ERR_DEVICE && secs < 5);
    CHECK(strstr(gaio_future_message(f), "NCCL reports an error") != NULL);
    OK(gaio_future_release(f));
    OK(gaio_future_release(joined));
    OK(gaio_buffer_release(a));
    OK(gaio_stream_release(s));
    OK(gaio_comm_release(comm));
    OK(gaio_context_release(ctx[0]));
}

static void run(int device) {
    gaio_device_props p;
    OK(gaio_device_get_props(device, &p));
    if (p.kind == GAIO_DEVICE_HOST) return; /* (the host's collectives: test_comm) */
    if (!strstr(p.name, "fake")) test_skip("needs the fake CUDA driver and NCCL (ctest's test_comm_fake_fakecuda)");
    g_dev = device;
    gaio_context *ctx;
    OK(gaio_context_create(device, NULL, &ctx));
    gaio_status st = gaio_comm_unique_id(ctx, &g_id);
    if (st == GAIO_ERR_NOT_SUPPORTED) test_skip("no (fake) NCCL: %s", gaio_last_error());
    OK(st);
    pthread_t t[N];
    for (int r = 0; r < N; r++) CHECK(pthread_create(&t[r], NULL, rank_main, (void *)(intptr_t)r) == 0);
    for (int r = 0; r < N; r++) CHECK(pthread_join(t[r], NULL) == 0);
    printf("  %d ranks on the fake NCCL: every collective, all-to-all, a late join, memory refused: ok\n", N);
    test_hung_peer();
    OK(gaio_context_release(ctx));
}
