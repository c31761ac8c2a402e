/* allreduce: data-parallel training's step in miniature. Every rank (every GPU, each
 * driven by a thread of its own; without a GPU, four ranks of the host backend)
 * computes its gradients, all_reduce averages them across the ranks, and each rank
 * checks the average on the host. The ranks join one group through an id that one of
 * them makes; across processes it would travel over a socket or a file instead.
 *
 *   allreduce [--count N]     exit 0 when every rank saw the right average */
#include <gaio/gaio.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_RANKS 16

typedef struct rank {
    gaio_context *ctx;
    const gaio_comm_id *id;
    int rank, nranks;
    size_t count;
    int ok;
} rank;

#define TRY(call)                                                                                           \
    do {                                                                                                    \
        gaio_status st_ = (call);                                                                           \
        if (st_ != GAIO_OK) {                                                                               \
            fprintf(stderr, "rank %d: %s: %s (%s)\n", r->rank, #call, gaio_status_string(st_), gaio_last_error()); \
            return NULL;                                                                                    \
        }                                                                                                   \
    } while (0)

/* Rank k's gradient i: what its shard of the batch would give. */
static float gradient(int k, size_t i) { return sinf((float)i * 0.001f) * (float)(k + 1); }

static void *step(void *p) {
    rank *r = p;
    gaio_comm *comm;
    gaio_future *joined;
    gaio_stream *s;
    gaio_buffer *host, *grads;
    size_t bytes = r->count * sizeof(float);
    TRY(gaio_comm_init_rank(r->ctx, r->id, r->nranks, r->rank, &comm, &joined));
    TRY(gaio_stream_create(r->ctx, 0, 0, &s));
    TRY(gaio_buffer_alloc(r->ctx, GAIO_MEM_PINNED, bytes, &host));
    TRY(gaio_buffer_alloc(r->ctx, GAIO_MEM_DEVICE, bytes, &grads));
    float *g;
    TRY(gaio_buffer_host_ptr(host, (void **)&g));
    for (size_t i = 0; i < r->count; i++) g[i] = gradient(r->rank, i); /* "backward" */
    /* Up, average across the ranks in place, down: three ops queued, one wait. */
    TRY(gaio_memcpy_async(s, grads, 0, host, 0, bytes));
    TRY(gaio_comm_all_reduce(s, comm, grads, 0, grads, 0, r->count, GAIO_DTYPE_F32, GAIO_COMM_AVG));
    TRY(gaio_memcpy_async(s, host, 0, grads, 0, bytes));
    gaio_future *done;
    TRY(gaio_future_fence(s, &done));
    TRY(gaio_future_wait(done, GAIO_INFINITE));
    float mean_factor = (float)(r->nranks + 1) / 2; /* the average of 1 .. nranks */
    size_t bad = 0;
    for (size_t i = 0; i < r->count; i++) {
        float want = sinf((float)i * 0.001f) * mean_factor;
        if (fabsf(g[i] - want) > 1e-5f * (1 + fabsf(want))) bad++;
    }
    r->ok = bad == 0;
    printf("rank %d: averaged %zu gradients over %d ranks: %s\n", r->rank, r->count, r->nranks,
           bad ? "WRONG" : "ok");
    gaio_future_release(done);
    gaio_future_release(joined);
    gaio_buffer_release(grads);
    gaio_buffer_release(host);
    gaio_stream_release(s);
    gaio_comm_release(comm);
    return NULL;
}

int main(int argc, char **argv) {
    size_t count = 1 << 20;
    if (argc == 3 && !strcmp(argv[1], "--count")) count = strtoull(argv[2], NULL, 0);
    int ndev = 0, n = 0;
    if (gaio_device_count(&ndev) != GAIO_OK) return 1;
    gaio_context *ctx[MAX_RANKS];
    for (int d = 0; d < ndev && n < MAX_RANKS; d++) { /* every GPU a rank */
        gaio_device_props p;
        if (gaio_device_get_props(d, &p) == GAIO_OK && p.kind == GAIO_DEVICE_CUDA &&
            gaio_context_create(d, NULL, &ctx[n]) == GAIO_OK)
            n++;
    }
    if (n == 0) { /* no GPU: four ranks of the host */
        if (gaio_context_create(0, NULL, &ctx[0]) != GAIO_OK) return 1;
        for (n = 1; n < 4; n++) {
            ctx[n] = ctx[0];
            gaio_context_retain(ctx[0]);
        }
    }
    gaio_comm_id id;
    gaio_status st = gaio_comm_unique_id(ctx[0], &id);
    if (st != GAIO_OK) {
        fprintf(stderr, "allreduce: %s\n", gaio_last_error());
        return st == GAIO_ERR_NOT_SUPPORTED ? 77 : 1;
    }
    rank ranks[MAX_RANKS];
    pthread_t t[MAX_RANKS];
    for (int k = 0; k < n; k++) {
        ranks[k] = (rank){ctx[k], &id, k, n, count, 0};
        pthread_create(&t[k], NULL, step, &ranks[k]);
    }
    int ok = 1;
    for (int k = 0; k < n; k++) {
        pthread_join(t[k], NULL);
        ok &= ranks[k].ok;
        gaio_context_release(ctx[k]);
    }
    printf("allreduce: %s\n", ok ? "every rank holds the average" : "FAILED");
    return ok ? 0 : 1;
}
