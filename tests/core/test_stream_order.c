/* Stream order: ops of one stream (copies, fills, kernels, host functions) run
 * strictly in submission order; several streams in parallel each keep their own
 * order; gaio_stream_query / gaio_stream_synchronize; gaio_context_synchronize
 * covers every stream of the context (the default stream and streams whose
 * handle was released with work still queued included).
 *
 * Each stream runs a random "program" (prog_* in support.h) on a DEVICE state
 * buffer of PROG_NW words: position-dependent affine kernels, fills, rotations
 * (three dependent copies through a scratch buffer), snapshots into a HOST buffer,
 * host functions that log their index. None of these commute, so a host model run
 * in submission order predicts every snapshot and the final state only if the
 * stream kept that order. The affine kernel has a CUDA twin, so the same programs
 * run on every backend. */
#include <stdatomic.h>

#include "common.h"
#include "support.h"

static gaio_kernel *g_affine;

/* ---- 1. one stream, gated: query NOT_READY, then synchronize ---- */

static void test_single_stream(gaio_context *ctx, uint64_t *seed) {
    gaio_stream *s;
    OK(gaio_stream_create(ctx, 0, 0, &s));
    OK(gaio_stream_query(s)); /* nothing submitted yet */
    gate g = {0};
    OK(gaio_launch_host_func(s, gate_fn, &g));
    prog p;
    prog_init(&p, ctx, s, g_affine, 2000, test_rand(seed));
    for (int i = 0; i < 2000; i++) prog_step(&p);
    prog_finish(&p);
    CHECK(gaio_stream_query(s) == GAIO_ERR_NOT_READY);
    CHECK(atomic_load(&p.nlog) == 0); /* everything sits behind the gate */
    atomic_store(&g.open, 1);
    OK(gaio_stream_synchronize(s));
    CHECK(!atomic_load(&g.timed_out));
    OK(gaio_stream_query(s));
    prog_verify(&p, "single stream");
    prog_free(&p);
    OK(gaio_stream_release(s));
}

/* ---- 2. several streams (default included), submissions interleaved; one
 * handle released with work queued; gaio_context_synchronize waits for all ---- */

#define NPAR 5

static void test_parallel_streams(gaio_context *ctx, uint64_t *seed) {
    gaio_stream *s[NPAR];
    OK(gaio_context_default_stream(ctx, &s[0]));
    for (int i = 1; i < NPAR; i++) OK(gaio_stream_create(ctx, 0, 0, &s[i]));
    gate g = {0};
    OK(gaio_launch_host_func(s[1], gate_fn, &g)); /* stream 1 is held back until all is queued */
    prog p[NPAR];
    for (int i = 0; i < NPAR; i++) prog_init(&p[i], ctx, s[i], g_affine, 600, test_rand(seed));
    for (int step = 0; step < 600; step++)
        for (int i = 0; i < NPAR; i++) prog_step(&p[i]);
    for (int i = 0; i < NPAR; i++) prog_finish(&p[i]);
    CHECK(gaio_stream_query(s[1]) == GAIO_ERR_NOT_READY);
    /* Drop our handle of the gated stream: its queued work must still run, and
     * gaio_context_synchronize must still wait for it. */
    OK(gaio_stream_release(s[1]));
    s[1] = NULL;
    atomic_store(&g.open, 1);
    OK(gaio_context_synchronize(ctx));
    CHECK(!atomic_load(&g.timed_out));
    for (int i = 0; i < NPAR; i++) {
        char what[32];
        snprintf(what, sizeof what, "parallel stream %d", i);
        prog_verify(&p[i], what);
        if (s[i]) OK(gaio_stream_query(s[i]));
    }
    for (int i = 0; i < NPAR; i++) prog_free(&p[i]);
    for (int i = 2; i < NPAR; i++) OK(gaio_stream_release(s[i]));
}

/* ---- 3. one thread per stream, submitting concurrently ---- */

static void test_threads_own_streams(gaio_context *ctx, uint64_t *seed) {
    prog_threads_own_streams(ctx, g_affine, seed, 800, 1, 0, "threaded stream");
}

/* ---- 4. several threads submitting to one shared stream: each thread's own
 * ops keep their order (per-thread sequence numbers seen by host functions) ---- */

static void test_shared_stream(gaio_context *ctx) {
    gaio_stream *s;
    OK(gaio_stream_create(ctx, 0, 0, &s));
    shared_stream_order(s, 1500, "shared stream");
    OK(gaio_stream_release(s));
}

/* ---- 5. synchronize/query on a stream with nothing queued, and query reports
 * NOT_READY exactly while work is queued ---- */

static void test_query_sync_idle(gaio_context *ctx) {
    gaio_stream *s;
    OK(gaio_stream_create(ctx, 0, 0, &s));
    OK(gaio_stream_synchronize(s));
    OK(gaio_stream_query(s));
    for (int round = 0; round < 20; round++) {
        gate g = {0};
        OK(gaio_launch_host_func(s, gate_fn, &g));
        CHECK(gaio_stream_query(s) == GAIO_ERR_NOT_READY);
        atomic_store(&g.open, 1);
        OK(gaio_stream_synchronize(s));
        OK(gaio_stream_query(s));
    }
    FAILS(GAIO_ERR_INVALID_ARG, gaio_stream_query(NULL), "gaio_stream_query");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_stream_synchronize(NULL), "gaio_stream_synchronize");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_context_synchronize(NULL), "gaio_context_synchronize");
    OK(gaio_stream_release(s));
}

static void run(int device) {
    uint64_t seed = test_seed();
    g_affine = AFFINE_REGISTER("stream_order_affine");
    gaio_context *ctx;
    OK(gaio_context_create(device, NULL, &ctx));
    test_single_stream(ctx, &seed);
    test_parallel_streams(ctx, &seed);
    test_threads_own_streams(ctx, &seed);
    test_shared_stream(ctx);
    test_query_sync_idle(ctx);
    OK(gaio_context_synchronize(ctx));
    OK(gaio_context_release(ctx));
    OK(gaio_kernel_unregister("stream_order_affine"));
    OK(gaio_kernel_release(g_affine));
    g_affine = NULL;
}
