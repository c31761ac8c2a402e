/* A FAKE libnccl.so.2: a test double of NCCL for the ranks of one process, to run with
 * tests/fake_cuda (whose device memory is host memory and whose copies are done at
 * once, inside the call that enqueues them).
 *
 * It exists so that CI, without GPUs, tests gaio's NCCL layer (src/comm/nccl): loading,
 * the join on its own thread, ops enqueued before the join, the native ops, groups,
 * the watch of asynchronous errors, abort, finalize. Semantics, as far as gaio sees:
 *   - a collective or a send / receive is done when the call (or the group's end)
 *     returns: the call waits for every rank's call, like a kernel that waits for its
 *     peers, and the last rank to arrive computes for all (src/comm/reduce.c's
 *     reductions), so the fake CUDA's next copy sees the result;
 *   - ranks meet by the id's bytes; a communicator's collectives are numbered in call
 *     order, as NCCL requires;
 *   - GAIO_FAKE_NCCL_FAIL_AT=N: the N-th collective of the process (from 1) waits
 *     forever, like one whose peer died, and every communicator's asynchronous error
 *     turns to ncclRemoteError; ncclCommAbort releases the waiting call.
 * Only what gaio calls (src/comm/nccl/nccl_api.h's list) is here. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "comm/comm_internal.h"
#include "comm/nccl/nccl_api.h"

#define EXPORT __attribute__((visibility("default")))

typedef struct fgroup fgroup;

struct ncclComm {
    fgroup *g;
    int rank, nranks;
    uint64_t next_seq;
    atomic_int aborted;
};

typedef struct call {
    struct call *next;
    int p2p_send, p2p_recv, coll; /* kind */
    comm_coll_kind kind;
    ncclComm_t comm;
    const void *send;
    void *recv;
    size_t count;
    int dtype, op, root, peer;
    uint64_t seq;
    int done;
    int hang; /* GAIO_FAKE_NCCL_FAIL_AT's: never meets anyone */
} call;

/* A meeting: one collective of a group (by seq), or one send-receive pair. */
typedef struct meet {
    struct meet *next;
    uint64_t seq;   /* collectives */
    int from, to;   /* p2p */
    int is_p2p;
    int arrived;
    call **calls;   /* per rank (p2p: [0] send, [1] recv) */
    int done;
} meet;

struct fgroup {
    fgroup *next;
    char id[128];
    int nranks, joined;
    ncclComm_t *comms;
    meet *meets;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static fgroup *groups;
static atomic_int collectives, failed;
static _Thread_local int depth;
static _Thread_local call *pending;

static gaio_dtype gdtype(int d) {
    switch (d) {
    case ncclUint8: return GAIO_DTYPE_U8;
    case ncclInt32: return GAIO_DTYPE_S32;
    case ncclInt64: return GAIO_DTYPE_S64;
    case ncclFloat16: return GAIO_DTYPE_F16;
    case ncclBfloat16: return GAIO_DTYPE_BF16;
    default: return GAIO_DTYPE_F32;
    }
}

static gaio_comm_op gop(int op) {
    switch (op) {
    case ncclProd: return GAIO_COMM_PROD;
    case ncclMin: return GAIO_COMM_MIN;
    case ncclMax: return GAIO_COMM_MAX;
    case ncclAvg: return GAIO_COMM_AVG;
    default: return GAIO_COMM_SUM;
    }
}

static size_t esize(int d) {
    return d == ncclUint8 ? 1 : d == ncclFloat16 || d == ncclBfloat16 ? 2 : d == ncclInt64 ? 8 : 4;
}

EXPORT ncclResult_t ncclGetVersion(int *version) {
    *version = 22800;
    return ncclSuccess;
}

EXPORT const char *ncclGetErrorString(ncclResult_t r) {
    return r == ncclSuccess ? "no error" : r == ncclRemoteError ? "remote process exited or there was a network error"
                                                                 : "fake NCCL error";
}

EXPORT const char *ncclGetLastError(ncclComm_t comm) {
    (void)comm;
    return atomic_load(&failed) ? "fake NCCL: a peer stopped answering (GAIO_FAKE_NCCL_FAIL_AT)" : "";
}

EXPORT ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
    static atomic_ullong n;
    memset(id, 0, sizeof *id);
    uint64_t v = atomic_fetch_add(&n, 1) + 1, pid = (uint64_t)getpid();
    memcpy(id->internal, "FAKENCCL", 8);
    memcpy(id->internal + 8, &v, 8);
    memcpy(id->internal + 16, &pid, 8);
    return ncclSuccess;
}

EXPORT ncclResult_t ncclCommInitRank(ncclComm_t *out, int nranks, ncclUniqueId id, int rank) {
    if (nranks < 1 || rank < 0 || rank >= nranks || memcmp(id.internal, "FAKENCCL", 8)) return ncclInvalidArgument;
    pthread_mutex_lock(&lock);
    fgroup *g = groups;
    while (g && memcmp(g->id, id.internal, 128)) g = g->next;
    if (!g) {
        g = calloc(1, sizeof *g);
        memcpy(g->id, id.internal, 128);
        g->nranks = nranks;
        g->comms = calloc((size_t)nranks, sizeof *g->comms);
        g->next = groups;
        groups = g;
    }
    if (g->nranks != nranks || g->comms[rank]) {
        pthread_mutex_unlock(&lock);
        return ncclInvalidArgument;
    }
    ncclComm_t c = calloc(1, sizeof *c);
    c->g = g;
    c->rank = rank;
    c->nranks = nranks;
    g->comms[rank] = c;
    g->joined++;
    pthread_cond_broadcast(&cond);
    while (g->joined < g->nranks) pthread_cond_wait(&cond, &lock); /* NCCL's init waits for every rank */
    pthread_mutex_unlock(&lock);
    *out = c;
    return ncclSuccess;
}

EXPORT ncclResult_t ncclCommInitAll(ncclComm_t *comms, int n, const int *devs) {
    (void)devs;
    ncclUniqueId id;
    ncclGetUniqueId(&id);
    /* Every rank's init waits for the others: one thread each. */
    pthread_mutex_lock(&lock);
    fgroup *g = calloc(1, sizeof *g);
    memcpy(g->id, id.internal, 128);
    g->nranks = g->joined = n;
    g->comms = calloc((size_t)n, sizeof *g->comms);
    g->next = groups;
    groups = g;
    for (int r = 0; r < n; r++) {
        ncclComm_t c = calloc(1, sizeof *c);
        c->g = g;
        c->rank = r;
        c->nranks = n;
        g->comms[r] = comms[r] = c;
    }
    pthread_mutex_unlock(&lock);
    return ncclSuccess;
}

EXPORT ncclResult_t ncclCommFinalize(ncclComm_t comm) {
    (void)comm;
    return ncclSuccess;
}

EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm) {
    pthread_mutex_lock(&lock);
    comm->g->comms[comm->rank] = NULL; /* the group itself stays: other ranks may still use it */
    pthread_mutex_unlock(&lock);
    free(comm);
    return ncclSuccess;
}

EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm) {
    pthread_mutex_lock(&lock);
    atomic_store(&comm->aborted, 1);
    pthread_cond_broadcast(&cond);
    pthread_mutex_unlock(&lock);
    /* The handle stays allocated: a call still waiting on it returns first. */
    return ncclSuccess;
}

EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *e) {
    *e = atomic_load(&comm->aborted) ? ncclSuccess : atomic_load(&failed) ? ncclRemoteError : ncclSuccess;
    return ncclSuccess;
}

/* ---- meetings (under lock) ---- */

static void compute(fgroup *g, meet *m) {
    if (m->is_p2p) {
        call *s = m->calls[0], *r = m->calls[1];
        memmove(r->recv, s->send, s->count * esize(s->dtype));
        return;
    }
    call *c0 = m->calls[0];
    int n = g->nranks;
    size_t bytes = c0->count * esize(c0->dtype);
    const void *srcs[64];
    switch (c0->kind) {
    case COMM_ALL_REDUCE:
    case COMM_REDUCE: {
        for (int k = 0; k < n; k++) srcs[k] = m->calls[k]->send;
        int root = c0->kind == COMM_REDUCE ? c0->root : 0;
        gaio__comm_reduce(gdtype(c0->dtype), gop(c0->op), m->calls[root]->recv, srcs, n, c0->count);
        if (c0->kind == COMM_ALL_REDUCE)
            for (int k = 1; k < n; k++) memmove(m->calls[k]->recv, m->calls[0]->recv, bytes);
        break;
    }
    case COMM_BROADCAST:
        for (int k = 0; k < n; k++)
            if (k != c0->root) memmove(m->calls[k]->recv, m->calls[c0->root]->send, bytes);
        memmove(m->calls[c0->root]->recv, m->calls[c0->root]->send, bytes);
        break;
    case COMM_ALL_GATHER:
        for (int r = 0; r < n; r++)
            for (int k = 0; k < n; k++) memmove((char *)m->calls[r]->recv + (size_t)k * bytes, m->calls[k]->send, bytes);
        break;
    case COMM_REDUCE_SCATTER:
        for (int r = 0; r < n; r++) {
            for (int k = 0; k < n; k++) srcs[k] = (const char *)m->calls[k]->send + (size_t)r * bytes;
            gaio__comm_reduce(gdtype(c0->dtype), gop(c0->op), m->calls[r]->recv, srcs, n, c0->count);
        }
        break;
    }
}

/* Deposits c at its meeting; the last to come computes. */
static void arrive(call *c) {
    fgroup *g = c->comm->g;
    int is_p2p = !c->coll, from = c->p2p_send ? c->comm->rank : c->peer, to = c->p2p_send ? c->peer : c->comm->rank;
    meet *m = NULL;
    for (meet *x = g->meets; x && !m; x = x->next) {
        if (x->done || x->is_p2p != is_p2p) continue;
        if (!is_p2p && x->seq == c->seq) m = x;
        if (is_p2p && x->from == from && x->to == to && !x->calls[c->p2p_send ? 0 : 1]) m = x;
    }
    if (!m) {
        m = calloc(1, sizeof *m);
        m->is_p2p = is_p2p;
        m->seq = c->seq;
        m->from = from;
        m->to = to;
        m->calls = calloc((size_t)(is_p2p ? 2 : g->nranks), sizeof *m->calls);
        m->next = g->meets;
        g->meets = m;
    }
    m->calls[is_p2p ? (c->p2p_send ? 0 : 1) : c->comm->rank] = c;
    if (++m->arrived == (is_p2p ? 2 : g->nranks)) {
        compute(g, m);
        m->done = 1;
        for (int k = 0; k < (is_p2p ? 2 : g->nranks); k++) m->calls[k]->done = 1;
        pthread_cond_broadcast(&cond);
    }
}

/* Issues the thread's pending calls and waits for each: NCCL's group end. */
static ncclResult_t flush(void) {
    call *list = pending;
    pending = NULL;
    pthread_mutex_lock(&lock);
    for (call *c = list; c; c = c->next)
        if (!c->hang) arrive(c);
    ncclResult_t r = ncclSuccess;
    for (call *c = list; c; c = c->next)
        while (!c->done) {
            if (atomic_load(&c->comm->aborted)) {
                r = ncclInvalidUsage; /* (NCCL's calls on an aborted communicator fail) */
                break;
            }
            pthread_cond_wait(&cond, &lock);
        }
    pthread_mutex_unlock(&lock);
    while (list) {
        call *n = list->next;
        if (list->done || list->hang) free(list); /* one left waiting stays: its meeting points at it */
        list = n;
    }
    return r;
}

static ncclResult_t add(call c) {
    if (atomic_load(&c.comm->aborted)) return ncclInvalidUsage;
    if (c.coll) {
        int at = atoi(getenv("GAIO_FAKE_NCCL_FAIL_AT") ? getenv("GAIO_FAKE_NCCL_FAIL_AT") : "0");
        int k = atomic_fetch_add(&collectives, 1) + 1;
        if (at > 0 && k >= at) {
            atomic_store(&failed, 1);
            c.hang = 1;
        } else {
            c.seq = c.comm->next_seq++;
        }
    }
    call *p = malloc(sizeof *p);
    *p = c;
    p->next = NULL;
    call **tail = &pending;
    while (*tail) tail = &(*tail)->next;
    *tail = p;
    return depth ? ncclSuccess : flush();
}

EXPORT ncclResult_t ncclGroupStart(void) {
    depth++;
    return ncclSuccess;
}

EXPORT ncclResult_t ncclGroupEnd(void) {
    if (depth == 0) return ncclInvalidUsage;
    return --depth ? ncclSuccess : flush();
}

#define COLL(K) (call){.coll = 1, .kind = (K), .comm = comm, .send = sendbuff, .recv = recvbuff, .dtype = datatype}

EXPORT ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count, int datatype, int op,
                                  ncclComm_t comm, CUstream stream) {
    (void)stream;
    call c = COLL(COMM_ALL_REDUCE);
    c.count = count, c.op = op;
    return add(c);
}

EXPORT ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count, int datatype, int root,
                                  ncclComm_t comm, CUstream stream) {
    (void)stream;
    call c = COLL(COMM_BROADCAST);
    c.count = count, c.root = root;
    return add(c);
}

EXPORT ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count, int datatype, int op, int root,
                               ncclComm_t comm, CUstream stream) {
    (void)stream;
    call c = COLL(COMM_REDUCE);
    c.count = count, c.op = op, c.root = root;
    return add(c);
}

EXPORT ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount, int datatype,
                                  ncclComm_t comm, CUstream stream) {
    (void)stream;
    call c = COLL(COMM_ALL_GATHER);
    c.count = sendcount;
    return add(c);
}

EXPORT ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount, int datatype, int op,
                                      ncclComm_t comm, CUstream stream) {
    (void)stream;
    call c = COLL(COMM_REDUCE_SCATTER);
    c.count = recvcount, c.op = op;
    return add(c);
}

EXPORT ncclResult_t ncclSend(const void *sendbuff, size_t count, int datatype, int peer, ncclComm_t comm,
                             CUstream stream) {
    (void)stream;
    return add((call){.p2p_send = 1, .comm = comm, .send = sendbuff, .count = count, .dtype = datatype, .peer = peer});
}

EXPORT ncclResult_t ncclRecv(void *recvbuff, size_t count, int datatype, int peer, ncclComm_t comm, CUstream stream) {
    (void)stream;
    return add((call){.p2p_recv = 1, .comm = comm, .recv = recvbuff, .count = count, .dtype = datatype, .peer = peer});
}

EXPORT ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm, void *config) {
    (void)comm, (void)color, (void)key, (void)config;
    *newcomm = NULL;
    return ncclInvalidUsage; /* not in the fake */
}

EXPORT ncclResult_t ncclCommCount(const ncclComm_t comm, int *count) {
    *count = comm->nranks;
    return ncclSuccess;
}

EXPORT ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank) {
    *rank = comm->rank;
    return ncclSuccess;
}
