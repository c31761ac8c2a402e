/* Collectives on the host backend: ranks as threads joined through an id, and ranks of
 * one thread made together. Every operation (all_reduce, reduce, broadcast, all_gather,
 * reduce_scatter; in place and not) on every dtype and reduction, checked against a
 * direct computation over the ranks' inputs, which every rank regenerates from the
 * printed seed; grouped sends and receives (all-to-all); ops enqueued before the group
 * has joined; and the ways a group fails without anyone waiting forever: ranks that
 * disagree, a rank whose stream failed, an abort. Then bad input, refused before
 * anything is enqueued. With --gpu, the same collectives on every GPU over NCCL (a
 * thread per GPU, and one thread driving all of them in a group), against the same
 * computation; SKIPPED without NCCL. */
#include <pthread.h>

#include "common.h"
#include "support.h"

#define NRANKS 4
#define COUNT 1000

static uint64_t g_seed;

static const gaio_dtype dtypes[] = {GAIO_DTYPE_U8, GAIO_DTYPE_S32, GAIO_DTYPE_S64, GAIO_DTYPE_F16, GAIO_DTYPE_BF16,
                                     GAIO_DTYPE_F32};
static const gaio_comm_op ops[] = {GAIO_COMM_SUM, GAIO_COMM_PROD, GAIO_COMM_MIN, GAIO_COMM_MAX, GAIO_COMM_AVG};

static int is_float(gaio_dtype d) { return d == GAIO_DTYPE_F16 || d == GAIO_DTYPE_F32 || d == GAIO_DTYPE_BF16; }

/* bfloat16 <-> float: the upper half of a float's bits (exact for the inputs here). */
static uint16_t bf16_of(double v) {
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)(u >> 16);
}
static double bf16_val(uint16_t b) {
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* f16 <-> double for exactly representable small values (quarter steps up to 2^10). */
static uint16_t f16_of(double v) {
    if (v == 0) return 0;
    uint16_t sign = v < 0 ? 0x8000 : 0;
    double a = v < 0 ? -v : v;
    int e = 0;
    while (a >= 2) { a /= 2; e++; }
    while (a < 1) { a *= 2; e--; }
    return (uint16_t)(sign | (uint16_t)((e + 15) << 10) | (uint16_t)((a - 1) * 1024 + 0.5));
}
static double f16_val(uint16_t h) {
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? m / 1024.0 / 16384.0 : (1 + m / 1024.0) * (e >= 15 ? (double)(1 << (e - 15)) : 1.0 / (1 << (15 - e)));
    return h & 0x8000 ? -v : v;
}

/* Rank r's input element i of round `round`: small values, so that sums and products of
 * NRANKS of them are exact (ints) or nearly so (floats: quarter steps in [-2, 2]). */
static double input(uint64_t seed, int round, int r, size_t i, gaio_dtype d) {
    uint64_t s = seed ^ ((uint64_t)round << 40) ^ ((uint64_t)r << 32) ^ (i * 0x9E3779B97F4A7C15ull);
    s = s ? s : 1;
    uint64_t x = test_rand(&s);
    if (d == GAIO_DTYPE_U8) return (double)(x % 4);
    if (is_float(d)) return ((double)(x % 17) - 8) / 4;
    return (double)(x % 7) - 3;
}

static void store(void *p, size_t i, gaio_dtype d, double v) {
    switch (d) {
    case GAIO_DTYPE_U8: ((uint8_t *)p)[i] = (uint8_t)(int)v; break;
    case GAIO_DTYPE_S32: ((int32_t *)p)[i] = (int32_t)v; break;
    case GAIO_DTYPE_S64: ((int64_t *)p)[i] = (int64_t)v; break;
    case GAIO_DTYPE_F16: ((uint16_t *)p)[i] = f16_of(v); break;
    case GAIO_DTYPE_BF16: ((uint16_t *)p)[i] = bf16_of(v); break;
    default: ((float *)p)[i] = (float)v; break;
    }
}

static double load(const void *p, size_t i, gaio_dtype d) {
    switch (d) {
    case GAIO_DTYPE_U8: return ((const uint8_t *)p)[i];
    case GAIO_DTYPE_S32: return ((const int32_t *)p)[i];
    case GAIO_DTYPE_S64: return (double)((const int64_t *)p)[i];
    case GAIO_DTYPE_F16: return f16_val(((const uint16_t *)p)[i]);
    case GAIO_DTYPE_BF16: return bf16_val(((const uint16_t *)p)[i]);
    default: return ((const float *)p)[i];
    }
}

/* The reduction of element i over every rank, in double. */
static double reduced(int round, size_t i, gaio_dtype d, gaio_comm_op op, int n) {
    double acc = input(g_seed, round, 0, i, d);
    for (int r = 1; r < n; r++) {
        double v = input(g_seed, round, r, i, d);
        switch (op) {
        case GAIO_COMM_SUM: case GAIO_COMM_AVG: acc += v; break;
        case GAIO_COMM_PROD: acc *= v; break;
        case GAIO_COMM_MIN: acc = v < acc ? v : acc; break;
        case GAIO_COMM_MAX: acc = v > acc ? v : acc; break;
        }
    }
    if (op == GAIO_COMM_AVG) acc /= n;
    if (d == GAIO_DTYPE_U8) acc = (double)((uint8_t)(int64_t)acc);
    return acc;
}

static void expect(const char *what, int rank, const void *p, size_t i, gaio_dtype d, double want) {
    double got = load(p, i, d);
    double a = want < 0 ? -want : want;
    double tol = d == GAIO_DTYPE_F16 ? 4e-3 * a + 1e-3 : d == GAIO_DTYPE_BF16 ? 2e-2 * a + 1e-2 : 1e-6 * a;
    if (got - want > tol || want - got > tol) {
        fprintf(stderr, "%s, rank %d, %s element %zu: got %g, want %g\n", what, rank, gaio_dtype_name(d), i, got, want);
        exit(1);
    }
}

static void fence_ok(gaio_stream *s) {
    gaio_future *f;
    OK(gaio_future_fence(s, &f));
    OK(gaio_future_wait(f, BIG_TIMEOUT_NS));
    OK(gaio_future_release(f));
}

/* ---- 1. every collective, dtype and op, ranks as threads ---- */

typedef struct rank_args {
    gaio_context *ctx;
    const gaio_comm_id *id;
    int rank, nranks;
} rank_args;

/* A host buffer of rank r's first count inputs of the round. */
static gaio_buffer *filled(gaio_context *ctx, int round, int r, size_t count, gaio_dtype d) {
    gaio_buffer *b;
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_HOST, count * gaio_dtype_size(d), &b));
    for (size_t i = 0; i < count; i++) store(host_ptr(b), i, d, input(g_seed, round, r, i, d));
    return b;
}

static void *collectives_rank(void *p) {
    rank_args *a = p;
    int r = a->rank, n = a->nranks;
    gaio_comm *comm;
    gaio_future *joined;
    OK(gaio_comm_init_rank(a->ctx, a->id, n, r, &comm, &joined));
    gaio_stream *s;
    OK(gaio_stream_create(a->ctx, 0, 0, &s));
    int round = 0;
    for (size_t di = 0; di < sizeof dtypes / sizeof *dtypes; di++) {
        gaio_dtype d = dtypes[di];
        size_t es = gaio_dtype_size(d);
        for (size_t oi = 0; oi < sizeof ops / sizeof *ops; oi++) {
            gaio_comm_op op = ops[oi];
            if (op == GAIO_COMM_AVG && !is_float(d)) continue;
            int root = round % n;
            for (int inplace = 0; inplace < 2; inplace++, round++) {
                /* all_reduce */
                gaio_buffer *send = filled(a->ctx, round, r, COUNT, d), *recv = send;
                if (!inplace) OK(gaio_buffer_alloc(a->ctx, GAIO_MEM_HOST, COUNT * es, &recv));
                OK(gaio_comm_all_reduce(s, comm, send, 0, recv, 0, COUNT, d, op));
                /* reduce to root */
                gaio_buffer *rsend = filled(a->ctx, round, r, COUNT, d), *rrecv = rsend;
                if (!inplace) OK(gaio_buffer_alloc(a->ctx, GAIO_MEM_HOST, COUNT * es, &rrecv));
                OK(gaio_comm_reduce(s, comm, rsend, 0, rrecv, 0, COUNT, d, op, root));
                /* reduce_scatter: rank r's send holds n blocks; block k of every rank reduces into rank k's recv */
                gaio_buffer *ssend;
                OK(gaio_buffer_alloc(a->ctx, GAIO_MEM_HOST, (size_t)n * COUNT * es, &ssend));
                for (int k = 0; k < n; k++)
                    for (size_t i = 0; i < COUNT; i++)
                        store(host_ptr(ssend), (size_t)k * COUNT + i, d, input(g_seed, round, r, (size_t)k * COUNT + i, d));
                gaio_buffer *srecv = ssend;
                size_t srecv_off = inplace ? (size_t)r * COUNT * es : 0;
                if (!inplace) OK(gaio_buffer_alloc(a->ctx, GAIO_MEM_HOST, COUNT * es, &srecv));
                OK(gaio_comm_reduce_scatter(s, comm, ssend, 0, srecv, srecv_off, COUNT, d, op));
                fence_ok(s);
                for (size_t i = 0; i < COUNT; i++) {
                    double want = reduced(round, i, d, op, n);
                    expect("all_reduce", r, host_ptr(recv), i, d, want);
                    if (r == root) expect("reduce", r, host_ptr(rrecv), i, d, want);
                    else expect("reduce (a non-root's send is untouched)", r, host_ptr(rsend), i, d,
                                input(g_seed, round, r, i, d));
                    expect("reduce_scatter", r, (char *)host_ptr(srecv) + srecv_off, i, d,
                           reduced(round, (size_t)r * COUNT + i, d, op, n));
                }
                gaio_buffer *bufs[] = {send, recv, rsend, rrecv, ssend, srecv};
                for (size_t b = 0; b < 6; b++)
                    if (b % 2 == 0 || bufs[b] != bufs[b - 1]) OK(gaio_buffer_release(bufs[b]));
            }
        }
        /* broadcast and all_gather: no op */
        for (int inplace = 0; inplace < 2; inplace++, round++) {
            int root = (round + 1) % n;
            gaio_buffer *bsend = filled(a->ctx, round, r, COUNT, d), *brecv = bsend;
            if (!inplace) OK(gaio_buffer_alloc(a->ctx, GAIO_MEM_HOST, COUNT * es, &brecv));
            OK(gaio_comm_broadcast(s, comm, bsend, 0, brecv, 0, COUNT, d, root));
            gaio_buffer *grecv;
            OK(gaio_buffer_alloc(a->ctx, GAIO_MEM_HOST, (size_t)n * COUNT * es, &grecv));
            gaio_buffer *gsend = grecv;
            size_t gsend_off = (size_t)r * COUNT * es;
            if (inplace) {
                for (size_t i = 0; i < COUNT; i++) store((char *)host_ptr(grecv) + gsend_off, i, d, input(g_seed, round, r, i, d));
            } else {
                gsend = filled(a->ctx, round, r, COUNT, d);
                gsend_off = 0;
            }
            OK(gaio_comm_all_gather(s, comm, gsend, gsend_off, grecv, 0, COUNT, d));
            fence_ok(s);
            for (size_t i = 0; i < COUNT; i++) {
                expect("broadcast", r, host_ptr(brecv), i, d, input(g_seed, round, root, i, d));
                for (int k = 0; k < n; k++)
                    expect("all_gather", r, host_ptr(grecv), (size_t)k * COUNT + i, d, input(g_seed, round, k, i, d));
            }
            OK(gaio_buffer_release(bsend));
            if (brecv != bsend) OK(gaio_buffer_release(brecv));
            if (gsend != grecv) OK(gaio_buffer_release(gsend));
            OK(gaio_buffer_release(grecv));
        }
    }
    CHECK(gaio_future_poll(joined) == GAIO_OK);
    OK(gaio_future_release(joined));
    OK(gaio_stream_release(s));
    OK(gaio_comm_release(comm));
    return NULL;
}

static void run_ranks(gaio_context *ctx, int n, void *(*body)(void *), const gaio_comm_id *id) {
    pthread_t t[8];
    rank_args a[8];
    for (int r = 0; r < n; r++) {
        a[r] = (rank_args){ctx, id, r, n};
        CHECK(pthread_create(&t[r], NULL, body, &a[r]) == 0);
    }
    for (int r = 0; r < n; r++) CHECK(pthread_join(t[r], NULL) == 0);
}

static void test_collectives_threads(gaio_context *ctx) {
    gaio_comm_id id;
    OK(gaio_comm_unique_id(ctx, &id));
    run_ranks(ctx, NRANKS, collectives_rank, &id);
    printf("  every collective, dtype and op on %d ranks as threads: ok\n", NRANKS);
}

/* ---- 2. ranks of one thread ---- */

static void test_local(gaio_context *ctx) {
    enum { N = 3 };
    gaio_context *ctxs[N] = {ctx, ctx, ctx};
    gaio_comm *comms[N];
    OK(gaio_comm_create_local(ctxs, N, comms));
    gaio_stream *s[N];
    gaio_buffer *b[N];
    int round = 1000;
    for (int r = 0; r < N; r++) {
        int32_t rank, size;
        OK(gaio_comm_rank(comms[r], &rank));
        OK(gaio_comm_size(comms[r], &size));
        CHECK(rank == r && size == N);
        gaio_context *c;
        OK(gaio_comm_context(comms[r], &c));
        CHECK(c == ctx);
        OK(gaio_stream_create(ctx, 0, 0, &s[r]));
        b[r] = filled(ctx, round, r, COUNT, GAIO_DTYPE_F32);
    }
    /* One thread enqueues every rank's side: nothing blocks. */
    for (int r = 0; r < N; r++) OK(gaio_comm_all_reduce(s[r], comms[r], b[r], 0, b[r], 0, COUNT, GAIO_DTYPE_F32, GAIO_COMM_SUM));
    for (int r = 0; r < N; r++) {
        fence_ok(s[r]);
        for (size_t i = 0; i < COUNT; i++) expect("local all_reduce", r, host_ptr(b[r]), i, GAIO_DTYPE_F32, reduced(round, i, GAIO_DTYPE_F32, GAIO_COMM_SUM, N));
        OK(gaio_buffer_release(b[r]));
        OK(gaio_stream_release(s[r]));
        OK(gaio_comm_release(comms[r]));
    }
    printf("  %d ranks of one thread (gaio_comm_create_local): ok\n", N);
}

/* ---- 3. grouped sends and receives: all-to-all ---- */

static void *all_to_all_rank(void *p) {
    rank_args *a = p;
    int r = a->rank, n = a->nranks;
    gaio_comm *comm;
    gaio_future *joined;
    OK(gaio_comm_init_rank(a->ctx, a->id, n, r, &comm, &joined));
    gaio_stream *s;
    OK(gaio_stream_create(a->ctx, 0, 0, &s));
    int round = 2000;
    /* Rank r's block k goes to rank k; rank r receives rank k's block r into its block k. */
    gaio_buffer *send = filled(a->ctx, round, r, (size_t)n * COUNT, GAIO_DTYPE_S32), *recv;
    OK(gaio_buffer_alloc(a->ctx, GAIO_MEM_HOST, (size_t)n * COUNT * 4, &recv));
    OK(gaio_comm_group_start());
    for (int k = 0; k < n; k++) {
        OK(gaio_comm_send(s, comm, send, (size_t)k * COUNT * 4, COUNT, GAIO_DTYPE_S32, k));
        OK(gaio_comm_recv(s, comm, recv, (size_t)k * COUNT * 4, COUNT, GAIO_DTYPE_S32, k));
    }
    OK(gaio_comm_group_end());
    fence_ok(s);
    for (int k = 0; k < n; k++)
        for (size_t i = 0; i < COUNT; i++)
            expect("all-to-all", r, host_ptr(recv), (size_t)k * COUNT + i, GAIO_DTYPE_S32,
                   input(g_seed, round, k, (size_t)r * COUNT + i, GAIO_DTYPE_S32));
    /* One pair outside a group: rank 0 sends rank 1 its first block. */
    if (r < 2) {
        if (r == 0) OK(gaio_comm_send(s, comm, send, 0, COUNT, GAIO_DTYPE_S32, 1));
        else OK(gaio_comm_recv(s, comm, recv, 0, COUNT, GAIO_DTYPE_S32, 0));
        fence_ok(s);
        if (r == 1)
            for (size_t i = 0; i < COUNT; i++)
                expect("send / recv", r, host_ptr(recv), i, GAIO_DTYPE_S32, input(g_seed, round, 0, i, GAIO_DTYPE_S32));
    }
    OK(gaio_buffer_release(send));
    OK(gaio_buffer_release(recv));
    OK(gaio_future_release(joined));
    OK(gaio_stream_release(s));
    OK(gaio_comm_release(comm));
    return NULL;
}

static void test_all_to_all(gaio_context *ctx) {
    gaio_comm_id id;
    OK(gaio_comm_unique_id(ctx, &id));
    run_ranks(ctx, NRANKS, all_to_all_rank, &id);
    printf("  grouped sends and receives, all-to-all on %d ranks: ok\n", NRANKS);
}

/* ---- 3b. splitting: sub-groups by color, ordered by key ---- */

static void *split_rank(void *p) {
    rank_args *a = p;
    int r = a->rank, n = a->nranks;
    gaio_comm *comm, *sub, *none;
    gaio_future *joined;
    OK(gaio_comm_init_rank(a->ctx, a->id, n, r, &comm, &joined));
    /* Colors r % 2, keys -r: the even ranks in reverse order, the odd ones too. */
    OK(gaio_comm_split(comm, r % 2, -r, &sub));
    int32_t sr, ss;
    OK(gaio_comm_rank(sub, &sr));
    OK(gaio_comm_size(sub, &ss));
    int members = (n + 1 - r % 2) / 2, want_rank = (members - 1) - r / 2;
    CHECK(ss == members && sr == want_rank);
    gaio_stream *s;
    OK(gaio_stream_create(a->ctx, 0, 0, &s));
    gaio_buffer *b;
    OK(gaio_buffer_alloc(a->ctx, GAIO_MEM_HOST, 4, &b));
    *(int32_t *)host_ptr(b) = r;
    OK(gaio_comm_all_reduce(s, sub, b, 0, b, 0, 1, GAIO_DTYPE_S32, GAIO_COMM_SUM));
    fence_ok(s);
    int32_t sum = 0;
    for (int k = r % 2; k < n; k += 2) sum += k;
    CHECK(*(int32_t *)host_ptr(b) == sum);
    /* A second split where only rank 0 takes part. */
    OK(gaio_comm_split(comm, r == 0 ? 7 : -1, 0, &none));
    CHECK((r == 0) == (none != NULL));
    if (none) {
        OK(gaio_comm_size(none, &ss));
        CHECK(ss == 1);
        OK(gaio_comm_release(none));
    }
    OK(gaio_buffer_release(b));
    OK(gaio_stream_release(s));
    OK(gaio_comm_release(sub));
    OK(gaio_future_release(joined));
    OK(gaio_comm_release(comm));
    return NULL;
}

static void test_split(gaio_context *ctx) {
    gaio_comm_id id;
    OK(gaio_comm_unique_id(ctx, &id));
    run_ranks(ctx, NRANKS, split_rank, &id);
    printf("  gaio_comm_split: sub-groups by color ordered by key, a rank in none: ok\n");
}

/* ---- 4. ops enqueued before the group has joined ---- */

static void test_join_later(gaio_context *ctx) {
    gaio_comm_id id;
    OK(gaio_comm_unique_id(ctx, &id));
    gaio_comm *c0, *c1;
    gaio_future *j0, *j1;
    OK(gaio_comm_init_rank(ctx, &id, 2, 0, &c0, &j0));
    CHECK(gaio_future_poll(j0) == GAIO_ERR_NOT_READY);
    gaio_stream *s0, *s1;
    OK(gaio_stream_create(ctx, 0, 0, &s0));
    OK(gaio_stream_create(ctx, 0, 0, &s1));
    int round = 3000;
    gaio_buffer *b0 = filled(ctx, round, 0, COUNT, GAIO_DTYPE_S64), *b1 = filled(ctx, round, 1, COUNT, GAIO_DTYPE_S64);
    OK(gaio_comm_all_reduce(s0, c0, b0, 0, b0, 0, COUNT, GAIO_DTYPE_S64, GAIO_COMM_MAX));
    gaio_future *f0;
    OK(gaio_future_fence(s0, &f0));
    test_sleep_ms(20);
    CHECK(gaio_future_poll(f0) == GAIO_ERR_NOT_READY); /* waits for rank 1 */
    OK(gaio_comm_init_rank(ctx, &id, 2, 1, &c1, &j1));
    OK(gaio_future_wait(j0, BIG_TIMEOUT_NS));
    OK(gaio_future_wait(j1, BIG_TIMEOUT_NS));
    OK(gaio_comm_all_reduce(s1, c1, b1, 0, b1, 0, COUNT, GAIO_DTYPE_S64, GAIO_COMM_MAX));
    OK(gaio_future_wait(f0, BIG_TIMEOUT_NS));
    fence_ok(s1);
    for (size_t i = 0; i < COUNT; i++) {
        double want = reduced(round, i, GAIO_DTYPE_S64, GAIO_COMM_MAX, 2);
        expect("join later", 0, host_ptr(b0), i, GAIO_DTYPE_S64, want);
        expect("join later", 1, host_ptr(b1), i, GAIO_DTYPE_S64, want);
    }
    gaio_future *fs[] = {j0, j1, f0};
    for (int i = 0; i < 3; i++) OK(gaio_future_release(fs[i]));
    OK(gaio_buffer_release(b0));
    OK(gaio_buffer_release(b1));
    OK(gaio_stream_release(s0));
    OK(gaio_stream_release(s1));
    OK(gaio_comm_release(c0));
    OK(gaio_comm_release(c1));
    printf("  ops enqueued before the group joined wait for it: ok\n");
}

/* ---- 5. failures: nobody waits forever ---- */

static void pair(gaio_context *ctx, gaio_comm **c, gaio_stream **s) {
    gaio_context *ctxs[2] = {ctx, ctx};
    OK(gaio_comm_create_local(ctxs, 2, c));
    OK(gaio_stream_create(ctx, 0, 0, &s[0]));
    OK(gaio_stream_create(ctx, 0, 0, &s[1]));
}

static void unpair(gaio_comm **c, gaio_stream **s) {
    for (int r = 0; r < 2; r++) {
        OK(gaio_stream_release(s[r]));
        OK(gaio_comm_release(c[r]));
    }
}

static void fence_fails(gaio_stream *s, gaio_status want, const char *words) {
    gaio_future *f;
    OK(gaio_future_fence(s, &f));
    int64_t t0 = now_ns();
    gaio_status st = gaio_future_wait(f, BIG_TIMEOUT_NS);
    if (st != want || !strstr(gaio_future_message(f), words)) {
        fprintf(stderr, "fence: %s '%s', want %s with '%s'\n", gaio_status_string(st), gaio_future_message(f),
                gaio_status_string(want), words);
        exit(1);
    }
    CHECK(now_ns() - t0 < 5000000000ll);
    OK(gaio_future_release(f));
}

static void test_failures(gaio_context *ctx, int device) {
    gaio_comm *c[2];
    gaio_stream *s[2];
    gaio_buffer *b;
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_HOST, 64 * 4, &b));

    /* Ranks that disagree: the second rank's call is refused, the first's fence fails. */
    pair(ctx, c, s);
    OK(gaio_comm_all_reduce(s[0], c[0], b, 0, b, 0, 10, GAIO_DTYPE_F32, GAIO_COMM_SUM));
    FAILS(GAIO_ERR_INVALID_ARG, gaio_comm_all_reduce(s[1], c[1], b, 0, b, 0, 12, GAIO_DTYPE_F32, GAIO_COMM_SUM),
          "same collectives in the same order");
    fence_fails(s[0], GAIO_ERR_INVALID_ARG, "rank 1 called all_reduce (12 elements");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_comm_broadcast(s[0], c[0], b, 0, b, 0, 1, GAIO_DTYPE_F32, 0), "has failed");
    unpair(c, s);

    /* A rank that never comes, then an abort: the waiting rank's future fails. */
    pair(ctx, c, s);
    OK(gaio_comm_all_reduce(s[0], c[0], b, 0, b, 0, 10, GAIO_DTYPE_S32, GAIO_COMM_SUM));
    gaio_future *f;
    OK(gaio_future_fence(s[0], &f));
    test_sleep_ms(20);
    CHECK(gaio_future_poll(f) == GAIO_ERR_NOT_READY);
    OK(gaio_comm_abort(c[1]));
    CHECK(gaio_future_wait(f, BIG_TIMEOUT_NS) == GAIO_ERR_DEVICE);
    CHECK(strstr(gaio_future_message(f), "aborted") != NULL);
    OK(gaio_future_release(f));
    FAILS(GAIO_ERR_DEVICE, gaio_comm_all_reduce(s[1], c[1], b, 0, b, 0, 10, GAIO_DTYPE_S32, GAIO_COMM_SUM), "aborted");
    unpair(c, s);

    /* A rank whose stream failed before it arrived fails the collective everywhere. */
    fail_setup(device, "test_comm_fail");
    pair(ctx, c, s);
    launch_fail(s[1]);
    OK(gaio_comm_all_reduce(s[0], c[0], b, 0, b, 0, 10, GAIO_DTYPE_S32, GAIO_COMM_SUM));
    OK(gaio_comm_all_reduce(s[1], c[1], b, 0, b, 0, 10, GAIO_DTYPE_S32, GAIO_COMM_SUM));
    fence_fails(s[0], GAIO_ERR_DEVICE, "rank 1's stream had failed");
    unpair(c, s);
    fail_teardown();

    /* Sends and receives that disagree. */
    pair(ctx, c, s);
    OK(gaio_comm_send(s[0], c[0], b, 0, 8, GAIO_DTYPE_S32, 1));
    OK(gaio_comm_recv(s[1], c[1], b, 0, 9, GAIO_DTYPE_S32, 0));
    fence_fails(s[0], GAIO_ERR_INVALID_ARG, "rank 0 sends 8 elements of s32 to rank 1, which receives 9");
    fence_fails(s[1], GAIO_ERR_INVALID_ARG, "rank 0 sends 8 elements");
    unpair(c, s);

    /* Every communicator released with a collective pending. */
    pair(ctx, c, s);
    OK(gaio_comm_all_reduce(s[0], c[0], b, 0, b, 0, 10, GAIO_DTYPE_S32, GAIO_COMM_SUM));
    OK(gaio_future_fence(s[0], &f));
    gaio_stream *keep = s[0];
    OK(gaio_stream_retain(keep));
    unpair(c, s);
    CHECK(gaio_future_wait(f, BIG_TIMEOUT_NS) == GAIO_ERR_DEVICE);
    OK(gaio_future_release(f));
    OK(gaio_stream_release(keep));
    OK(gaio_buffer_release(b));
    printf("  disagreeing ranks, an abort, a failed stream, released communicators: futures fail, none hangs\n");
}

/* ---- 6. bad input ---- */

static void test_bad_input(gaio_context *ctx) {
    gaio_comm *c[2];
    gaio_stream *s[2];
    pair(ctx, c, s);
    gaio_buffer *b, *small;
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_HOST, 1024, &b));
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_HOST, 8, &small));
    gaio_comm_id id;
    OK(gaio_comm_unique_id(ctx, &id));
    gaio_comm *x = NULL;
    gaio_future *j = NULL;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_comm_unique_id(NULL, &id), "gaio_comm_unique_id");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_comm_init_rank(ctx, &id, 2, 2, &x, &j), "ranks of 2 are 0 to 1");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_comm_init_rank(ctx, &id, 0, 0, &x, &j), "at least one rank");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_comm_init_rank(ctx, &id, 2, 0, &x, NULL), "joined is NULL");
    OK(gaio_comm_init_rank(ctx, &id, 2, 0, &x, &j));
    gaio_comm *y = NULL;
    gaio_future *k = NULL;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_comm_init_rank(ctx, &id, 3, 1, &y, &k), "joined with 2");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_comm_init_rank(ctx, &id, 2, 0, &y, &k), "rank 0 of the group has joined already");
    CHECK(y == NULL && k == NULL);
    OK(gaio_future_release(j));
    OK(gaio_comm_release(x));
    gaio_comm_id other = id;
    other.bytes[8] ^= 0xff; /* another process's */
    FAILS(GAIO_ERR_NOT_SUPPORTED, gaio_comm_init_rank(ctx, &other, 2, 0, &x, &j), "threads of one process");
    memset(&other, 0, sizeof other);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_comm_init_rank(ctx, &other, 2, 0, &x, &j), "not a host communicator's id");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_comm_create_local(NULL, 2, c), "ctxs is NULL");

    FAILS(GAIO_ERR_INVALID_ARG, gaio_comm_all_reduce(NULL, c[0], b, 0, b, 0, 4, GAIO_DTYPE_F32, GAIO_COMM_SUM), "stream is NULL");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_comm_all_reduce(s[0], NULL, b, 0, b, 0, 4, GAIO_DTYPE_F32, GAIO_COMM_SUM), "comm is NULL");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_comm_all_reduce(s[0], c[0], b, 0, b, 0, 4, GAIO_DTYPE_U16, GAIO_COMM_SUM), "u16");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_comm_all_reduce(s[0], c[0], b, 0, b, 0, 4, GAIO_DTYPE_S32, GAIO_COMM_AVG), "floating-point");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_comm_all_reduce(s[0], c[0], b, 0, b, 0, 4, GAIO_DTYPE_S32, (gaio_comm_op)9), "op 9");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_comm_all_reduce(s[0], c[0], small, 0, b, 0, 4, GAIO_DTYPE_F32, GAIO_COMM_SUM), "send holds 8 bytes");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_comm_all_reduce(s[0], c[0], b, 2, b, 0, 4, GAIO_DTYPE_F32, GAIO_COMM_SUM), "not a multiple");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_comm_all_reduce(s[0], c[0], b, 0, NULL, 0, 4, GAIO_DTYPE_F32, GAIO_COMM_SUM), "recv is NULL");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_comm_all_reduce(s[0], c[0], b, 0, b, 0, SIZE_MAX / 2, GAIO_DTYPE_F32, GAIO_COMM_SUM), "overflow");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_comm_broadcast(s[0], c[0], b, 0, b, 0, 4, GAIO_DTYPE_F32, 2), "root is 2");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_comm_reduce(s[0], c[0], b, 0, b, 0, 4, GAIO_DTYPE_F32, GAIO_COMM_SUM, -1), "root is -1");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_comm_all_gather(s[0], c[0], b, 0, b, 0, 200, GAIO_DTYPE_F32), "recv holds 1024 bytes");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_comm_reduce_scatter(s[0], c[0], b, 0, b, 0, 200, GAIO_DTYPE_F32, GAIO_COMM_SUM), "send holds 1024 bytes");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_comm_send(s[0], c[0], b, 0, 4, GAIO_DTYPE_F32, 2), "peer is 2");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_comm_group_end(), "no group was started");
    OK(gaio_comm_group_start());
    OK(gaio_comm_send(s[0], c[0], b, 0, 4, GAIO_DTYPE_F32, 1));
    OK(gaio_comm_recv(s[1], c[0], b, 16, 4, GAIO_DTYPE_F32, 1));
    FAILS(GAIO_ERR_INVALID_ARG, gaio_comm_group_end(), "two streams");
    /* Nothing was enqueued: the pair still works. */
    OK(gaio_comm_all_reduce(s[0], c[0], b, 0, b, 0, 4, GAIO_DTYPE_F32, GAIO_COMM_SUM));
    OK(gaio_comm_all_reduce(s[1], c[1], b, 16, b, 16, 4, GAIO_DTYPE_F32, GAIO_COMM_SUM));
    fence_ok(s[0]);
    fence_ok(s[1]);
    OK(gaio_buffer_release(b));
    OK(gaio_buffer_release(small));
    unpair(c, s);
    printf("  bad input refused before anything is enqueued: ok\n");
}

/* ---- 7. on every GPU: NCCL ---- */

typedef struct gpu_rank_args {
    gaio_context *ctx;
    const gaio_comm_id *id;
    int rank, nranks;
} gpu_rank_args;

/* Device memory holding host buffer h's bytes (copied on s). */
static gaio_buffer *to_device(gaio_context *ctx, gaio_stream *s, gaio_buffer *h, size_t bytes) {
    gaio_buffer *d;
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_DEVICE, bytes, &d));
    OK(gaio_memcpy_async(s, d, 0, h, 0, bytes));
    return d;
}

/* Pinned memory holding device buffer d's bytes, once s has run. */
static gaio_buffer *to_host(gaio_context *ctx, gaio_stream *s, gaio_buffer *d, size_t bytes) {
    gaio_buffer *h;
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_PINNED, bytes, &h));
    OK(gaio_memcpy_async(s, h, 0, d, 0, bytes));
    fence_ok(s);
    return h;
}

static gaio_buffer *pinned_inputs(gaio_context *ctx, int round, int r, size_t count, gaio_dtype d) {
    gaio_buffer *b;
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_PINNED, count * gaio_dtype_size(d), &b));
    for (size_t i = 0; i < count; i++) store(host_ptr(b), i, d, input(g_seed, round, r, i, d));
    return b;
}

static void *gpu_rank(void *p) {
    gpu_rank_args *a = p;
    int r = a->rank, n = a->nranks;
    gaio_comm *comm;
    gaio_future *joined;
    OK(gaio_comm_init_rank(a->ctx, a->id, n, r, &comm, &joined));
    gaio_stream *s;
    /* Odd ranks on a DEFERRED stream: their NCCL calls come from gaio's submission thread. */
    OK(gaio_stream_create(a->ctx, 0, r % 2 ? GAIO_STREAM_DEFERRED : 0, &s));
    int round = 5000;
    for (size_t di = 0; di < sizeof dtypes / sizeof *dtypes; di++) {
        gaio_dtype d = dtypes[di];
        size_t es = gaio_dtype_size(d), bytes = COUNT * es;
        for (size_t oi = 0; oi < sizeof ops / sizeof *ops; oi++, round++) {
            gaio_comm_op op = ops[oi];
            if (op == GAIO_COMM_AVG && !is_float(d)) continue;
            gaio_buffer *h = pinned_inputs(a->ctx, round, r, COUNT, d);
            gaio_buffer *dv = to_device(a->ctx, s, h, bytes), *out;
            OK(gaio_buffer_alloc(a->ctx, GAIO_MEM_DEVICE, bytes, &out));
            int inplace = round % 2;
            OK(gaio_comm_all_reduce(s, comm, dv, 0, inplace ? dv : out, 0, COUNT, d, op));
            gaio_buffer *back = to_host(a->ctx, s, inplace ? dv : out, bytes);
            for (size_t i = 0; i < COUNT; i++) expect("NCCL all_reduce", r, host_ptr(back), i, d, reduced(round, i, d, op, n));
            gaio_buffer *bs[] = {h, dv, out, back};
            for (int b = 0; b < 4; b++) OK(gaio_buffer_release(bs[b]));
        }
        /* broadcast, reduce, all_gather, reduce_scatter (sum) */
        round++;
        int root = round % n;
        gaio_buffer *h = pinned_inputs(a->ctx, round, r, (size_t)n * COUNT, d);
        gaio_buffer *dv = to_device(a->ctx, s, h, (size_t)n * bytes), *o1, *o2, *o3, *o4;
        OK(gaio_buffer_alloc(a->ctx, GAIO_MEM_DEVICE, bytes, &o1));
        OK(gaio_buffer_alloc(a->ctx, GAIO_MEM_DEVICE, bytes, &o2));
        OK(gaio_buffer_alloc(a->ctx, GAIO_MEM_DEVICE, (size_t)n * bytes, &o3));
        OK(gaio_buffer_alloc(a->ctx, GAIO_MEM_DEVICE, bytes, &o4));
        OK(gaio_comm_broadcast(s, comm, dv, 0, o1, 0, COUNT, d, root));
        OK(gaio_comm_reduce(s, comm, dv, 0, o2, 0, COUNT, d, GAIO_COMM_SUM, root));
        OK(gaio_comm_all_gather(s, comm, dv, 0, o3, 0, COUNT, d));
        OK(gaio_comm_reduce_scatter(s, comm, dv, 0, o4, 0, COUNT, d, GAIO_COMM_SUM));
        gaio_buffer *b1 = to_host(a->ctx, s, o1, bytes), *b2 = to_host(a->ctx, s, o2, bytes);
        gaio_buffer *b3 = to_host(a->ctx, s, o3, (size_t)n * bytes), *b4 = to_host(a->ctx, s, o4, bytes);
        for (size_t i = 0; i < COUNT; i++) {
            expect("NCCL broadcast", r, host_ptr(b1), i, d, input(g_seed, round, root, i, d));
            if (r == root) expect("NCCL reduce", r, host_ptr(b2), i, d, reduced(round, i, d, GAIO_COMM_SUM, n));
            for (int k = 0; k < n; k++)
                expect("NCCL all_gather", r, host_ptr(b3), (size_t)k * COUNT + i, d, input(g_seed, round, k, i, d));
            expect("NCCL reduce_scatter", r, host_ptr(b4), i, d, reduced(round, (size_t)r * COUNT + i, d, GAIO_COMM_SUM, n));
        }
        gaio_buffer *bs[] = {h, dv, o1, o2, o3, o4, b1, b2, b3, b4};
        for (int b = 0; b < 10; b++) OK(gaio_buffer_release(bs[b]));
    }
    /* all-to-all in a group */
    round++;
    size_t bytes = COUNT * 4;
    gaio_buffer *h = pinned_inputs(a->ctx, round, r, (size_t)n * COUNT, GAIO_DTYPE_S32);
    gaio_buffer *send = to_device(a->ctx, s, h, (size_t)n * bytes), *recv;
    OK(gaio_buffer_alloc(a->ctx, GAIO_MEM_DEVICE, (size_t)n * bytes, &recv));
    OK(gaio_comm_group_start());
    for (int k = 0; k < n; k++) {
        OK(gaio_comm_send(s, comm, send, (size_t)k * bytes, COUNT, GAIO_DTYPE_S32, k));
        OK(gaio_comm_recv(s, comm, recv, (size_t)k * bytes, COUNT, GAIO_DTYPE_S32, k));
    }
    OK(gaio_comm_group_end());
    gaio_buffer *back = to_host(a->ctx, s, recv, (size_t)n * bytes);
    for (int k = 0; k < n; k++)
        for (size_t i = 0; i < COUNT; i++)
            expect("NCCL all-to-all", r, host_ptr(back), (size_t)k * COUNT + i, GAIO_DTYPE_S32,
                   input(g_seed, round, k, (size_t)r * COUNT + i, GAIO_DTYPE_S32));
    gaio_buffer *bs[] = {h, send, recv, back};
    for (int b = 0; b < 4; b++) OK(gaio_buffer_release(bs[b]));

    /* Collectives and other device work interleaved on two streams, ordered by events:
     * on s, x = r + 1 (a fill), then the sum over ranks; on s2, after it, y = the
     * bytes of x copied, then their max over ranks. */
    gaio_stream *s2;
    OK(gaio_stream_create(a->ctx, 0, 0, &s2));
    gaio_event *e;
    OK(gaio_event_create(a->ctx, GAIO_EVENT_DISABLE_TIMING, &e));
    gaio_buffer *x, *y;
    OK(gaio_buffer_alloc(a->ctx, GAIO_MEM_DEVICE, COUNT, &x));
    OK(gaio_buffer_alloc(a->ctx, GAIO_MEM_DEVICE, COUNT, &y));
    OK(gaio_memset_async(s, x, 0, r + 1, COUNT));
    OK(gaio_comm_all_reduce(s, comm, x, 0, x, 0, COUNT, GAIO_DTYPE_U8, GAIO_COMM_SUM));
    OK(gaio_event_record(e, s));
    OK(gaio_stream_wait_event(s2, e));
    OK(gaio_memcpy_async(s2, y, 0, x, 0, COUNT));
    OK(gaio_memset_async(s2, y, 0, (r + 1) * 3, COUNT / 2)); /* the first half: 3 (r + 1) */
    OK(gaio_comm_all_reduce(s2, comm, y, 0, y, 0, COUNT, GAIO_DTYPE_U8, GAIO_COMM_MAX));
    gaio_buffer *yb = to_host(a->ctx, s2, y, COUNT);
    int sum = n * (n + 1) / 2;
    for (size_t i = 0; i < COUNT; i++) {
        int want = i < COUNT / 2 ? 3 * n : sum;
        if (((uint8_t *)host_ptr(yb))[i] != (uint8_t)want) {
            fprintf(stderr, "interleaved, rank %d, byte %zu: %d, want %d\n", r, i, ((uint8_t *)host_ptr(yb))[i], want);
            exit(1);
        }
    }
    OK(gaio_buffer_release(yb));
    OK(gaio_buffer_release(x));
    OK(gaio_buffer_release(y));
    OK(gaio_event_release(e));
    OK(gaio_stream_release(s2));

    /* A split with every rank, keys reversed: ranks renumbered, the sum the same. */
    gaio_comm *sub;
    OK(gaio_comm_split(comm, 0, -r, &sub));
    int32_t sr;
    OK(gaio_comm_rank(sub, &sr));
    CHECK(sr == n - 1 - r);
    gaio_buffer *sb;
    OK(gaio_buffer_alloc(a->ctx, GAIO_MEM_DEVICE, COUNT, &sb));
    OK(gaio_memset_async(s, sb, 0, r + 1, COUNT));
    OK(gaio_comm_all_reduce(s, sub, sb, 0, sb, 0, COUNT, GAIO_DTYPE_U8, GAIO_COMM_SUM));
    gaio_buffer *sbh = to_host(a->ctx, s, sb, COUNT);
    for (size_t i = 0; i < COUNT; i++) CHECK(((uint8_t *)host_ptr(sbh))[i] == (uint8_t)(n * (n + 1) / 2));
    OK(gaio_buffer_release(sbh));
    OK(gaio_buffer_release(sb));
    OK(gaio_comm_release(sub));
    OK(gaio_future_wait(joined, BIG_TIMEOUT_NS));
    OK(gaio_future_release(joined));
    OK(gaio_stream_release(s));
    OK(gaio_comm_release(comm));
    return NULL;
}

static void test_gpus(void) {
    int count = 0, n = 0;
    OK(gaio_device_count(&count));
    gaio_context *ctx[16];
    for (int d = 0; d < count && n < 16; d++) {
        gaio_device_props p;
        OK(gaio_device_get_props(d, &p));
        if (p.kind == GAIO_DEVICE_CUDA) OK(gaio_context_create(d, NULL, &ctx[n++]));
    }
    gaio_comm_id id;
    gaio_status st = gaio_comm_unique_id(ctx[0], &id);
    if (st == GAIO_ERR_NOT_SUPPORTED) {
        char why[600];
        snprintf(why, sizeof why, "%s", gaio_last_error());
        for (int i = 0; i < n; i++) OK(gaio_context_release(ctx[i]));
        test_skip("no NCCL here: %s", why);
    }
    OK(st);
    g_seed = test_seed();
    pthread_t t[16];
    gpu_rank_args a[16];
    for (int r = 0; r < n; r++) {
        a[r] = (gpu_rank_args){ctx[r], &id, r, n};
        CHECK(pthread_create(&t[r], NULL, gpu_rank, &a[r]) == 0);
    }
    for (int r = 0; r < n; r++) CHECK(pthread_join(t[r], NULL) == 0);
    printf("  NCCL on %d GPU(s), a thread each (odd ranks on DEFERRED streams): every collective and dtype, "
           "all-to-all, collectives and copies interleaved on two streams, a split: ok\n", n);

    /* One thread, every GPU a rank: the calls grouped. */
    gaio_comm *comms[16];
    OK(gaio_comm_create_local(ctx, n, comms));
    gaio_stream *s[16];
    gaio_buffer *h[16], *dv[16];
    int round = 9000;
    for (int r = 0; r < n; r++) {
        OK(gaio_stream_create(ctx[r], 0, 0, &s[r]));
        h[r] = pinned_inputs(ctx[r], round, r, COUNT, GAIO_DTYPE_F32);
        dv[r] = to_device(ctx[r], s[r], h[r], COUNT * 4);
    }
    OK(gaio_comm_group_start());
    for (int r = 0; r < n; r++) OK(gaio_comm_all_reduce(s[r], comms[r], dv[r], 0, dv[r], 0, COUNT, GAIO_DTYPE_F32, GAIO_COMM_SUM));
    OK(gaio_comm_group_end());
    for (int r = 0; r < n; r++) {
        gaio_buffer *back = to_host(ctx[r], s[r], dv[r], COUNT * 4);
        for (size_t i = 0; i < COUNT; i++) expect("NCCL local all_reduce", r, host_ptr(back), i, GAIO_DTYPE_F32, reduced(round, i, GAIO_DTYPE_F32, GAIO_COMM_SUM, n));
        OK(gaio_buffer_release(back));
        OK(gaio_buffer_release(h[r]));
        OK(gaio_buffer_release(dv[r]));
        OK(gaio_stream_release(s[r]));
        OK(gaio_comm_release(comms[r]));
    }
    printf("  NCCL, one thread driving %d GPU(s) (gaio_comm_create_local, a group): ok\n", n);
    for (int i = 0; i < n; i++) OK(gaio_context_release(ctx[i]));
}

static void run(int device) {
    gaio_context *ctx;
    OK(gaio_context_create(device, NULL, &ctx));
    gaio_device_props props;
    OK(gaio_device_get_props(device, &props));
    if (props.kind != GAIO_DEVICE_HOST) {
        /* Every GPU takes part at once: once, on the first. */
        static int done;
        OK(gaio_context_release(ctx));
        if (!done++) test_gpus();
        return;
    }
    g_seed = test_seed();
    test_collectives_threads(ctx);
    test_local(ctx);
    test_all_to_all(ctx);
    test_split(ctx);
    test_join_later(ctx);
    test_failures(ctx, device);
    test_bad_input(ctx);
    OK(gaio_context_release(ctx));
}
