/* Communicators of CUDA devices, over NCCL.
 *
 * A collective is one native op on the rank's stream: in stream order, with the
 * device's context current, it makes NCCL's call on the stream's CUstream and holds the
 * buffers until the device has run it. Joining a group (ncclCommInitRank blocks until
 * every rank has come) runs on a thread of its own, so gaio_comm_init_rank returns at
 * once; ops enqueued before the join completes wait behind it in their streams. A
 * thread that drives several ranks of one group (gaio_comm_create_local) makes their
 * calls between gaio_comm_group_start and _end, which wraps them in NCCL's group: NCCL
 * launches grouped calls together, so no rank's call waits for a rank this thread has
 * yet to reach.
 *
 * NCCL's asynchronous errors are watched (below): one fails the streams of the
 * communicator's latest ops. A communicator's last release waits for its work in flight
 * (ncclCommFinalize). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "comm/comm_internal.h"
#include "comm/nccl/nccl_api.h"
#include "comm/nccl/nccl_live.h"
#include "core/fail.h"
#include "core/native.h"
#include "core/object.h"
#include "core/op.h"

#define WATCHED_STREAMS 8

typedef struct nccl_state {
    pthread_mutex_t lock;
    ncclComm_t comm;     /* NULL until joined */
    gaio_future *joined; /* completes when comm is set, or the join failed */
    bool aborted;
    int32_t rank;
    /* The streams its latest ops went to (held): an asynchronous error fails them. */
    gaio_stream *streams[WATCHED_STREAMS];
    int nstreams, next_slot;
    struct nccl_state *watch_next; /* the watch's list (watch_lock) */
    bool watched;
    int live_fd; /* the liveness channel to the group's maker (nccl_live.c), or -1 */
    uint64_t group;
} nccl_state;

/* ---- the watch: NCCL's asynchronous errors ----
 *
 * One thread, started with the first communicator or id, polls every 2 ms every live
 * communicator's ncclCommGetAsyncError and liveness channel (nccl_live.c), and serves
 * the channels of the groups this process made. An error, or a peer's process gone,
 * aborts the communicator (its kernels in flight return) and fails those of its latest
 * streams still busy, with NCCL's words or the peer's rank, so their futures fail
 * instead of waiting. */

static pthread_mutex_t watch_lock = PTHREAD_MUTEX_INITIALIZER;
static nccl_state *watch_list;
static pthread_once_t watch_once = PTHREAD_ONCE_INIT;

/* Aborts the communicator (NCCL's kernels in flight return) and fails those of its
 * latest streams that still have work (a collective stuck there); idle ones go on. */
static void fail_comm(nccl_state *s, ncclComm_t c, const char *msg) {
    const gaio_nccl_table *n = gaio__nccl_if_loaded();
    gaio_stream *streams[WATCHED_STREAMS];
    pthread_mutex_lock(&s->lock);
    s->aborted = true;
    int k = s->nstreams;
    for (int i = 0; i < k; i++) {
        streams[i] = s->streams[i];
        gaio_stream_retain(streams[i]);
    }
    pthread_mutex_unlock(&s->lock);
    /* The streams fail first: once aborted, the stuck kernels return and the work behind
     * them would complete as if nothing had happened. */
    for (int i = 0; i < k; i++) {
        if (gaio_stream_query(streams[i]) == GAIO_ERR_NOT_READY) gaio__stream_fail(streams[i], GAIO_ERR_DEVICE, "%s", msg);
        gaio_stream_release(streams[i]);
    }
    if (c) (void)n->ncclCommAbort(c);
}

static void fail_nccl_error(nccl_state *s, ncclComm_t c, ncclResult_t e) {
    const gaio_nccl_table *n = gaio__nccl_if_loaded();
    char msg[GAIO_MSG_MAX];
    const char *last = n->ncclGetLastError(c);
    snprintf(msg, sizeof msg, "NCCL reports an error on rank %d of the communicator: %s (%d)%s%s; it was aborted",
             s->rank, n->ncclGetErrorString(e), e, last && *last ? ": " : "", last ? last : "");
    fail_comm(s, c, msg);
}

static void fail_peer_gone(nccl_state *s, ncclComm_t c, int32_t gone) {
    char msg[GAIO_MSG_MAX];
    if (gone >= 0)
        snprintf(msg, sizeof msg, "rank %d of the communicator's group is gone (its process ended without releasing "
                 "its communicator); rank %d's communicator was aborted", gone, s->rank);
    else
        snprintf(msg, sizeof msg, "the process that made the group's id is gone (its liveness channel closed); rank "
                 "%d's communicator was aborted", s->rank);
    fail_comm(s, c, msg);
}

static void *watch(void *unused) {
    (void)unused;
    const gaio_nccl_table *n = gaio__nccl_if_loaded();
    for (;;) {
        gaio__nccl_live_serve();
        pthread_mutex_lock(&watch_lock);
        for (nccl_state *s = watch_list; s; s = s->watch_next) {
            pthread_mutex_lock(&s->lock);
            ncclComm_t c = s->aborted ? NULL : s->comm;
            pthread_mutex_unlock(&s->lock);
            if (!c) continue;
            int32_t gone = 0;
            if (s->live_fd >= 0 && gaio__nccl_live_read(s->live_fd, &gone)) {
                fail_peer_gone(s, c, gone);
                continue;
            }
            ncclResult_t e = ncclSuccess, r = n->ncclCommGetAsyncError(c, &e);
            if (r != ncclSuccess) e = r;
            if (e != ncclSuccess && e != ncclInProgress) fail_nccl_error(s, c, e);
        }
        pthread_mutex_unlock(&watch_lock);
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

static void start_watch(void) {
    pthread_t t;
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    (void)pthread_create(&t, &a, watch, NULL); /* without it, errors surface only at abort */
    pthread_attr_destroy(&a);
}

static void watch_add(nccl_state *s) {
    pthread_once(&watch_once, start_watch);
    pthread_mutex_lock(&watch_lock);
    s->watch_next = watch_list;
    watch_list = s;
    s->watched = true;
    pthread_mutex_unlock(&watch_lock);
}

static void watch_remove(nccl_state *s) {
    if (!s->watched) return;
    pthread_mutex_lock(&watch_lock);
    nccl_state **pp = &watch_list;
    while (*pp && *pp != s) pp = &(*pp)->watch_next;
    if (*pp) *pp = s->watch_next;
    pthread_mutex_unlock(&watch_lock);
}

/* Remembers that an op of s went to stream (the latest WATCHED_STREAMS streams). */
static void note_stream(nccl_state *s, gaio_stream *stream) {
    pthread_mutex_lock(&s->lock);
    for (int i = 0; i < s->nstreams; i++)
        if (s->streams[i] == stream) {
            pthread_mutex_unlock(&s->lock);
            return;
        }
    gaio_stream_retain(stream);
    gaio_stream *old = NULL;
    if (s->nstreams < WATCHED_STREAMS) {
        s->streams[s->nstreams++] = stream;
    } else {
        old = s->streams[s->next_slot];
        s->streams[s->next_slot] = stream;
        s->next_slot = (s->next_slot + 1) % WATCHED_STREAMS;
    }
    pthread_mutex_unlock(&s->lock);
    if (old) gaio_stream_release(old);
}

static const gaio_nccl_table *nccl_or_fail(const char *fn, gaio_status *st) {
    const char *why = "";
    const gaio_nccl_table *n = gaio__nccl(&why);
    *st = n ? GAIO_OK : gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn, "collectives on CUDA devices need NCCL: %s", why);
    return n;
}

static int nccl_dtype(gaio_dtype d) {
    switch (d) {
    case GAIO_DTYPE_U8: return ncclUint8;
    case GAIO_DTYPE_S32: return ncclInt32;
    case GAIO_DTYPE_S64: return ncclInt64;
    case GAIO_DTYPE_F16: return ncclFloat16;
    case GAIO_DTYPE_BF16: return ncclBfloat16;
    default: return ncclFloat32;
    }
}

static int nccl_op(gaio_comm_op op) {
    switch (op) {
    case GAIO_COMM_PROD: return ncclProd;
    case GAIO_COMM_MIN: return ncclMin;
    case GAIO_COMM_MAX: return ncclMax;
    case GAIO_COMM_AVG: return ncclAvg;
    default: return ncclSum;
    }
}

/* ---- ops ---- */

typedef struct nccl_call {
    gaio_comm *comm; /* held until the call is made */
    bool p2p;
    comm_coll c;
    void *send, *recv;
    size_t n;
    comm_p2p ops[];
} nccl_call;

static void *dev_ptr(gaio_buffer *b, size_t off) { return b ? b->ptr + off : NULL; }

/* The native function: NCCL's call on the stream's CUstream, in stream order. */
static gaio_status make_call(void *native_stream, gaio_status stream_status, void *user) {
    nccl_call *k = user;
    nccl_state *s = k->comm->state;
    const gaio_nccl_table *n = gaio__nccl(NULL);
    gaio_status st = GAIO_OK;
    const char *fn = k->p2p ? "gaio_comm_send" : k->c.fn;
    pthread_mutex_lock(&s->lock);
    ncclComm_t comm = s->comm;
    bool aborted = s->aborted;
    pthread_mutex_unlock(&s->lock);
    if (stream_status != GAIO_OK) {
        /* the stream failed before: nothing to launch */
    } else if (aborted) {
        st = gaio__fail(GAIO_ERR_DEVICE, fn, "the communicator was aborted (gaio_comm_abort)");
    } else if (!comm) {
        st = gaio__fail(GAIO_ERR_DEVICE, fn, "the communicator never joined its group: %s",
                        gaio_future_message(s->joined));
    } else if (k->p2p) {
        CUstream cs = native_stream;
        ncclResult_t r = n->ncclGroupStart();
        for (size_t i = 0; r == ncclSuccess && i < k->n; i++) {
            const comm_p2p *o = &k->ops[i];
            r = o->send ? n->ncclSend(dev_ptr(o->buf, o->offset), o->count, nccl_dtype(o->dtype), o->peer, comm, cs)
                        : n->ncclRecv(dev_ptr(o->buf, o->offset), o->count, nccl_dtype(o->dtype), o->peer, comm, cs);
        }
        ncclResult_t e = n->ncclGroupEnd();
        if (r == ncclSuccess) r = e;
        if (r != ncclSuccess) st = gaio__nccl_fail(fn, "ncclSend / ncclRecv", r, comm);
    } else {
        const comm_coll *c = &k->c;
        CUstream cs = native_stream;
        int dt = nccl_dtype(c->dtype), op = nccl_op(c->op);
        ncclResult_t r = ncclSuccess;
        const char *call = "";
        switch (c->kind) {
        case COMM_ALL_REDUCE: call = "ncclAllReduce"; r = n->ncclAllReduce(k->send, k->recv, c->count, dt, op, comm, cs); break;
        case COMM_BROADCAST: call = "ncclBroadcast"; r = n->ncclBroadcast(k->send, k->recv, c->count, dt, c->root, comm, cs); break;
        case COMM_REDUCE: call = "ncclReduce"; r = n->ncclReduce(k->send, k->recv, c->count, dt, op, c->root, comm, cs); break;
        case COMM_ALL_GATHER: call = "ncclAllGather"; r = n->ncclAllGather(k->send, k->recv, c->count, dt, comm, cs); break;
        case COMM_REDUCE_SCATTER: call = "ncclReduceScatter"; r = n->ncclReduceScatter(k->send, k->recv, c->count, dt, op, comm, cs); break;
        }
        if (r != ncclSuccess) st = gaio__nccl_fail(fn, call, r, comm);
    }
    gaio_comm_release(k->comm);
    free(k);
    return st;
}

/* Ops enqueued before the join completes wait for it in their stream. */
static gaio_status wait_join(const char *fn, gaio_comm *comm, gaio_stream *stream) {
    nccl_state *s = comm->state;
    if (gaio__future_is_done(s->joined)) return GAIO_OK;
    gaio_op *op = gaio__op_new(GAIO_OP_WAIT, stream, 0, 0, NULL);
    if (!op) return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory for the join's wait");
    gaio__future_ref(s->joined);
    op->u.point.fut = s->joined;
    op->u.point.own_message = true;
    return gaio__submit_from(fn, op);
}

static gaio_status check_memory(const char *fn, gaio_buffer *b, const char *what) {
    if (b && b->kind == GAIO_MEM_HOST)
        return BAD("%s is pageable host memory: NCCL reads device, pinned or managed memory", what);
    return GAIO_OK;
}

static gaio_status nccl_collective(gaio_comm *comm, gaio_stream *stream, const comm_coll *c) {
    const char *fn = c->fn;
    gaio_status st = check_memory(fn, c->send, "send");
    if (st == GAIO_OK) st = check_memory(fn, c->recv, "recv");
    if (st != GAIO_OK) return st;
    nccl_call *k = malloc(sizeof *k);
    if (!k) return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory");
    *k = (nccl_call){.comm = comm, .c = *c, .send = dev_ptr(c->send, c->send_offset),
                     .recv = dev_ptr(c->recv, c->recv_offset)};
    st = wait_join(fn, comm, stream);
    if (st != GAIO_OK) {
        free(k);
        return st;
    }
    note_stream(comm->state, stream);
    gaio_comm_retain(comm);
    gaio_buffer *held[2] = {c->send, c->recv};
    st = gaio__enqueue_native_held(fn, stream, make_call, k, held, 2);
    if (st != GAIO_OK) {
        gaio_comm_release(comm);
        free(k);
    }
    return st;
}

static gaio_status nccl_p2p(gaio_comm *comm, gaio_stream *stream, const comm_p2p *ops, size_t n) {
    const char *fn = ops[0].send ? "gaio_comm_send" : "gaio_comm_recv";
    for (size_t i = 0; i < n; i++) {
        gaio_status st = check_memory(fn, ops[i].buf, "buf");
        if (st != GAIO_OK) return st;
    }
    nccl_call *k = malloc(sizeof *k + n * sizeof *ops);
    gaio_buffer **held = malloc(n * sizeof *held);
    if (!k || !held) {
        free(k);
        free(held);
        return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory");
    }
    *k = (nccl_call){.comm = comm, .p2p = true, .n = n};
    memcpy(k->ops, ops, n * sizeof *ops);
    for (size_t i = 0; i < n; i++) held[i] = ops[i].buf;
    gaio_status st = wait_join(fn, comm, stream);
    if (st == GAIO_OK) {
        note_stream(comm->state, stream);
        gaio_comm_retain(comm);
        st = gaio__enqueue_native_held(fn, stream, make_call, k, held, n);
        if (st != GAIO_OK) gaio_comm_release(comm);
    }
    if (st != GAIO_OK) free(k);
    free(held);
    return st;
}

/* ---- lifecycle ---- */

static void nccl_abort(gaio_comm *comm) {
    nccl_state *s = comm->state;
    pthread_mutex_lock(&s->lock);
    s->aborted = true;
    ncclComm_t c = s->comm;
    pthread_mutex_unlock(&s->lock);
    if (c) (void)gaio__nccl(NULL)->ncclCommAbort(c); /* NCCL's kernels in flight return */
}

/* The last release finalizes the communicator (waits for its work in flight) and
 * destroys it, on the releasing thread: done before the process may exit, where NCCL's
 * own threads would otherwise still be tearing it down. */
static void nccl_destroy(gaio_comm *comm) {
    nccl_state *s = comm->state;
    watch_remove(s);
    for (int i = 0; i < s->nstreams; i++) gaio_stream_release(s->streams[i]);
    const gaio_nccl_table *n = gaio__nccl_if_loaded();
    if (s->comm && !s->aborted && n) { /* (ncclCommAbort freed an aborted one) */
        if (n->ncclCommFinalize(s->comm) == ncclSuccess) (void)n->ncclCommDestroy(s->comm);
        else (void)n->ncclCommAbort(s->comm);
    }
    gaio__nccl_live_leave(s->live_fd, s->group, s->rank); /* after: its work is done */
    gaio__future_unref(s->joined);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

static gaio_status nccl_split(gaio_comm *comm, int32_t color, int32_t key, gaio_comm **out);

static const comm_impl nccl_impl = {
    .name = "nccl",
    .collective = nccl_collective,
    .p2p = nccl_p2p,
    .abort = nccl_abort,
    .destroy = nccl_destroy,
    .split = nccl_split,
};

static nccl_state *state_new(void) {
    nccl_state *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->joined = gaio__future_new();
    if (!s->joined) {
        free(s);
        return NULL;
    }
    pthread_mutex_init(&s->lock, NULL);
    s->live_fd = -1;
    return s;
}

static int cuda_ordinal(gaio_context *ctx) {
    gaio_device_props p;
    return gaio_device_get_props(ctx->device, &p) == GAIO_OK ? p.ordinal : -1;
}

gaio_status gaio__nccl_comm_unique_id(const char *fn, gaio_comm_id *id) {
    gaio_status st;
    const gaio_nccl_table *n = nccl_or_fail(fn, &st);
    if (!n) return st;
    ncclUniqueId u;
    ncclResult_t r = n->ncclGetUniqueId(&u);
    if (r != ncclSuccess) return gaio__nccl_fail(fn, "ncclGetUniqueId", r, NULL);
    memcpy(id->bytes, u.internal, sizeof u.internal);
    st = gaio__nccl_live_make(fn, id->bytes + sizeof u.internal);
    if (st == GAIO_OK) pthread_once(&watch_once, start_watch); /* serves the channel */
    return st;
}

typedef struct join_job {
    gaio_comm *comm; /* held while joining */
    ncclUniqueId id;
    unsigned char live[GAIO_COMM_ID_BYTES - sizeof(ncclUniqueId)];
} join_job;

static void *join(void *p) {
    join_job *j = p;
    gaio_comm *comm = j->comm;
    nccl_state *s = comm->state;
    const gaio_nccl_table *n = gaio__nccl(NULL);
    const char *fn = "gaio_comm_init_rank";
    /* A rank that cannot reach the maker still joins (refusing would leave the other
     * ranks' joins waiting for it); it then learns of no peer's death. */
    char why[GAIO_MSG_MAX];
    s->live_fd = gaio__nccl_live_join(j->live, comm->rank, &s->group, why, sizeof why);
    gaio__native_scope sc;
    gaio_status st = gaio__native_enter(fn, comm->ctx, &sc);
    ncclComm_t c = NULL;
    if (st == GAIO_OK) {
        ncclResult_t r = n->ncclCommInitRank(&c, comm->nranks, j->id, comm->rank);
        if (r != ncclSuccess) st = gaio__nccl_fail(fn, "ncclCommInitRank", r, NULL);
        gaio__native_exit(&sc);
    }
    char msg[GAIO_MSG_MAX];
    snprintf(msg, sizeof msg, "%s", st == GAIO_OK ? "" : gaio_last_error());
    pthread_mutex_lock(&s->lock);
    s->comm = c;
    bool aborted = s->aborted;
    pthread_mutex_unlock(&s->lock);
    if (c && aborted) (void)n->ncclCommAbort(c);
    if (c && !aborted) watch_add(s);
    gaio__future_complete(s->joined, st, st == GAIO_OK ? NULL : msg);
    gaio_comm_release(comm);
    free(j);
    return NULL;
}

gaio_status gaio__nccl_comm_init_rank(const char *fn, gaio_context *ctx, const gaio_comm_id *id, int32_t nranks,
                                      int32_t rank, gaio_comm **out, gaio_future **joined) {
    gaio_status st;
    if (!nccl_or_fail(fn, &st)) return st;
    nccl_state *s = state_new();
    join_job *j = malloc(sizeof *j);
    gaio_comm *c = s && j ? gaio__comm_new(ctx, rank, nranks, &nccl_impl, s) : NULL;
    if (!c) {
        if (s) nccl_destroy(&(gaio_comm){.state = s});
        free(j);
        return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory");
    }
    s->rank = rank;
    memcpy(j->id.internal, id->bytes, sizeof j->id.internal);
    memcpy(j->live, id->bytes + sizeof j->id.internal, sizeof j->live);
    gaio_comm_retain(c);
    j->comm = c;
    pthread_t t;
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    int e = pthread_create(&t, &a, join, j);
    pthread_attr_destroy(&a);
    if (e != 0) {
        gaio_comm_release(c);
        gaio_comm_release(c);
        free(j);
        return gaio__fail(GAIO_ERR_SYSTEM, fn, "pthread_create failed for the join: %s", strerror(e));
    }
    gaio__future_ref(s->joined);
    *joined = s->joined;
    *out = c;
    return GAIO_OK;
}

gaio_status gaio__nccl_comm_create_local(const char *fn, gaio_context *const *ctxs, int32_t n, gaio_comm **comms) {
    gaio_status st;
    const gaio_nccl_table *t = nccl_or_fail(fn, &st);
    if (!t) return st;
    int *devs = malloc((size_t)n * sizeof *devs);
    ncclComm_t *nc = calloc((size_t)n, sizeof *nc);
    if (!devs || !nc) {
        free(devs);
        free(nc);
        return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory");
    }
    for (int32_t i = 0; i < n; i++) {
        devs[i] = cuda_ordinal(ctxs[i]);
        for (int32_t k = 0; k < i; k++)
            if (ctxs[k]->device == ctxs[i]->device) {
                free(devs);
                free(nc);
                return BAD("ctxs[%d] and ctxs[%d] are of one device: NCCL's ranks are distinct GPUs", k, i);
            }
    }
    ncclResult_t r = t->ncclCommInitAll(nc, n, devs);
    free(devs);
    if (r != ncclSuccess) {
        free(nc);
        return gaio__nccl_fail(fn, "ncclCommInitAll", r, NULL);
    }
    st = GAIO_OK;
    for (int32_t i = 0; i < n; i++) {
        nccl_state *s = st == GAIO_OK ? state_new() : NULL;
        comms[i] = s ? gaio__comm_new(ctxs[i], i, n, &nccl_impl, s) : NULL;
        if (!comms[i]) {
            if (s) nccl_destroy(&(gaio_comm){.state = s});
            if (st == GAIO_OK) st = gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory");
            (void)t->ncclCommDestroy(nc[i]);
            continue;
        }
        s->comm = nc[i];
        s->rank = i;
        watch_add(s);
        gaio__future_complete(s->joined, GAIO_OK, NULL);
    }
    free(nc);
    if (st != GAIO_OK)
        for (int32_t i = 0; i < n; i++) {
            if (comms[i]) gaio_comm_release(comms[i]);
            comms[i] = NULL;
        }
    return st;
}

gaio_status gaio__nccl_group(const char *fn, bool start) {
    const gaio_nccl_table *n = gaio__nccl_if_loaded(); /* a process without NCCL communicators never loads it */
    if (!n) return GAIO_OK;
    ncclResult_t r = start ? n->ncclGroupStart() : n->ncclGroupEnd();
    return r == ncclSuccess ? GAIO_OK : gaio__nccl_fail(fn, start ? "ncclGroupStart" : "ncclGroupEnd", r, NULL);
}

void *gaio__nccl_comm_native(gaio_comm *comm) {
    if (comm->impl != &nccl_impl) return NULL;
    nccl_state *s = comm->state;
    pthread_mutex_lock(&s->lock);
    void *c = s->comm;
    pthread_mutex_unlock(&s->lock);
    return c;
}

/* ncclCommSplit on the caller's thread (it returns once every rank has called), after
 * the parent's join. The new communicator has no liveness channel of its own: a dead
 * peer is seen on the parent's streams. */
static gaio_status nccl_split(gaio_comm *comm, int32_t color, int32_t key, gaio_comm **out) {
    const char *fn = "gaio_comm_split";
    nccl_state *ps = comm->state;
    const gaio_nccl_table *n = gaio__nccl_if_loaded();
    if (gaio_future_wait(ps->joined, GAIO_INFINITE) != GAIO_OK)
        return gaio__fail(GAIO_ERR_DEVICE, fn, "the communicator never joined its group: %s",
                          gaio_future_message(ps->joined));
    pthread_mutex_lock(&ps->lock);
    ncclComm_t pc = ps->aborted ? NULL : ps->comm;
    pthread_mutex_unlock(&ps->lock);
    if (!pc) return gaio__fail(GAIO_ERR_DEVICE, fn, "the communicator was aborted");
    gaio__native_scope sc;
    gaio_status st = gaio__native_enter(fn, comm->ctx, &sc);
    if (st != GAIO_OK) return st;
    ncclComm_t nc = NULL;
    ncclResult_t r = n->ncclCommSplit(pc, color < 0 ? NCCL_SPLIT_NOCOLOR : color, key, &nc, NULL);
    gaio__native_exit(&sc);
    if (r != ncclSuccess) return gaio__nccl_fail(fn, "ncclCommSplit", r, pc);
    if (!nc) return GAIO_OK; /* a negative color: in no sub-group */
    int rank = 0, count = 0;
    n->ncclCommUserRank(nc, &rank);
    n->ncclCommCount(nc, &count);
    nccl_state *s = state_new();
    gaio_comm *c = s ? gaio__comm_new(comm->ctx, rank, count, &nccl_impl, s) : NULL;
    if (!c) {
        if (s) nccl_destroy(&(gaio_comm){.state = s});
        (void)n->ncclCommDestroy(nc);
        return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory");
    }
    s->comm = nc;
    s->rank = rank;
    watch_add(s);
    gaio__future_complete(s->joined, GAIO_OK, NULL);
    *out = c;
    return GAIO_OK;
}
