/* Host communicators: the ranks are threads of this process, their buffers host
 * memory, a collective a meeting in a shared table.
 *
 * A group (one per id) lives in a process-wide registry while a communicator of it
 * does. A rank's collective is two ops on its stream: an arrival (a native function,
 * run in stream order on a worker once the rank's earlier work is done) that leaves
 * the rank's buffer addresses at the collective's slot, and a wait on the slot's
 * future. The rank that arrives last computes the result for every rank and completes
 * the future; no worker ever waits for another rank, so any number of ranks run on any
 * number of workers. Sends and receives meet the same way in a mailbox, matched per
 * (sender, receiver) in order.
 *
 * Ranks number their collectives in the order they enqueue them (NCCL's rule: the
 * same collectives in the same order on every rank): a slot is the n-th collective
 * of the group. A mismatch between ranks (kind, count, dtype, op, root, a send's size
 * against its receive), a rank whose stream had failed before it arrived, or an abort
 * fails the group: every pending op fails with that message and later calls are
 * refused, so no rank waits for one that will never come. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "comm/comm_internal.h"
#include "core/fail.h"
#include "core/native.h"
#include "core/object.h"
#include "core/op.h"

#define HOST_MAGIC "GAIOHOST"

typedef struct host_group host_group;

/* One collective of the group. */
typedef struct host_slot {
    struct host_slot *next;
    uint64_t seq;
    comm_coll want; /* what the first rank asked for (buffers not used) */
    int32_t arrived;
    void **send, **recv;  /* per rank, set on arrival */
    gaio_buffer **held;   /* 2 per rank: kept until the collective has run */
    const void **blocks;  /* per rank: reduce_scatter's sources of one block */
    gaio_future *done;
} host_slot;

/* One rank's part of a group of sends and receives. */
typedef struct host_part {
    int refs;        /* the arrival's, and one per message in the mailbox */
    int outstanding; /* messages not yet delivered */
    bool completed;
    gaio_future *done;
    gaio_buffer **held;
    size_t nheld;
} host_part;

/* A send or a receive waiting for its peer. */
typedef struct host_msg {
    struct host_msg *next;
    bool send;
    int32_t from, to;
    void *ptr;
    size_t count;
    gaio_dtype dtype;
    host_part *part;
} host_msg;

struct host_group {
    host_group *next; /* the registry's list */
    unsigned char id[GAIO_COMM_ID_BYTES];
    int32_t nranks, joined;
    int comms; /* live communicators (under the registry's lock) */
    bool *taken;
    gaio_future **join; /* per rank, completed when every rank has joined */
    pthread_mutex_t lock;
    uint64_t *next_seq; /* per rank: the number of its next collective */
    host_slot *slots;
    host_msg *msgs, **msgs_tail;
    gaio_status failed; /* GAIO_OK while the group works */
    char why[GAIO_MSG_MAX];
    pthread_cond_t cond;     /* a split's ranks wait on it */
    uint64_t *next_split;    /* per rank: the number of its next split */
    struct host_split *splits;
};

/* One gaio_comm_split of the group: every rank's color and key, then its new comm. */
typedef struct host_split {
    struct host_split *next;
    uint64_t seq;
    int32_t arrived, taken;
    int32_t *color, *key;
    gaio_context **ctx;
    gaio_comm **out;
    bool done;
} host_split;

static void split_free(host_split *sp) {
    if (!sp) return;
    free(sp->color);
    free(sp->key);
    free(sp->ctx);
    free(sp->out);
    free(sp);
}

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static host_group *registry;
static atomic_ullong id_counter;

gaio_status gaio__host_comm_unique_id(gaio_comm_id *id) {
    memset(id, 0, sizeof *id);
    memcpy(id->bytes, HOST_MAGIC, 8);
    uint32_t pid = (uint32_t)getpid();
    memcpy(id->bytes + 8, &pid, 4);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t n = atomic_fetch_add(&id_counter, 1) + 1, t = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    memcpy(id->bytes + 12, &n, 8);
    memcpy(id->bytes + 20, &t, 8);
    return GAIO_OK;
}

/* ---- failing the group ---- */

/* What a failure hands to the futures outside the lock. */
typedef struct to_fail {
    gaio_future **futs;
    size_t n, cap;
    gaio_buffer **bufs; /* references to drop */
    size_t nbufs, capbufs;
    host_part **parts; /* to free */
    size_t nparts, capparts;
} to_fail;

static void push(void ***v, size_t *n, size_t *cap, void *x) {
    if (*n == *cap) {
        size_t c = *cap ? 2 * *cap : 16;
        void **g = realloc(*v, c * sizeof *g);
        if (!g) return; /* out of memory: the reference leaks, the rest goes on */
        *v = g;
        *cap = c;
    }
    (*v)[(*n)++] = x;
}

static void slot_free(host_slot *s, int32_t nranks, to_fail *tf) {
    for (int32_t i = 0; i < 2 * nranks; i++)
        if (s->held[i]) push((void ***)&tf->bufs, &tf->nbufs, &tf->capbufs, s->held[i]);
    push((void ***)&tf->futs, &tf->n, &tf->cap, s->done);
    free(s->send);
    free(s->recv);
    free(s->held);
    free(s->blocks);
    free(s);
}

static void part_drop(host_part *p, to_fail *tf) {
    if (--p->refs > 0) return;
    push((void ***)&tf->parts, &tf->nparts, &tf->capparts, p);
}

/* Completes a part's future (once), handing its buffers to tf. */
static void part_complete(host_part *p, to_fail *tf) {
    if (p->completed) return;
    p->completed = true;
    for (size_t i = 0; i < p->nheld; i++) push((void ***)&tf->bufs, &tf->nbufs, &tf->capbufs, p->held[i]);
    p->nheld = 0;
    gaio__future_ref(p->done);
    push((void ***)&tf->futs, &tf->n, &tf->cap, p->done);
}

/* Under g->lock: the group fails; every pending op goes into tf. */
static void group_fail_locked(host_group *g, gaio_status st, const char *why, to_fail *tf) {
    if (g->failed == GAIO_OK) {
        g->failed = st;
        snprintf(g->why, sizeof g->why, "%s", why);
    }
    while (g->slots) {
        host_slot *s = g->slots;
        g->slots = s->next;
        slot_free(s, g->nranks, tf);
    }
    while (g->msgs) {
        host_msg *m = g->msgs;
        g->msgs = m->next;
        part_complete(m->part, tf);
        part_drop(m->part, tf);
        free(m);
    }
    g->msgs_tail = &g->msgs;
    pthread_cond_broadcast(&g->cond); /* a split waiting for ranks gives up */
}

/* Outside the lock: completes tf's futures with status (GAIO_OK for a success), drops
 * its buffers, frees its parts. */
static void settle(to_fail *tf, gaio_status st, const char *why) {
    for (size_t i = 0; i < tf->n; i++) {
        gaio__future_complete(tf->futs[i], st, st == GAIO_OK ? NULL : why);
        gaio__future_unref(tf->futs[i]);
    }
    for (size_t i = 0; i < tf->nbufs; i++) gaio_buffer_release(tf->bufs[i]);
    for (size_t i = 0; i < tf->nparts; i++) {
        gaio__future_unref(tf->parts[i]->done);
        free(tf->parts[i]->held);
        free(tf->parts[i]);
    }
    free(tf->futs);
    free(tf->bufs);
    free(tf->parts);
    *tf = (to_fail){0};
}

static void group_fail(host_group *g, gaio_status st, const char *why) {
    to_fail tf = {0};
    pthread_mutex_lock(&g->lock);
    group_fail_locked(g, st, why, &tf);
    char msg[GAIO_MSG_MAX];
    snprintf(msg, sizeof msg, "%s", g->why);
    st = g->failed;
    pthread_mutex_unlock(&g->lock);
    settle(&tf, st, msg);
}

/* ---- collectives ---- */

static size_t esize(gaio_dtype d) { return gaio_dtype_size(d); }

/* Under g->lock, with every rank arrived: the collective's result in every rank's recv. */
static void compute(host_group *g, host_slot *s) {
    const comm_coll *w = &s->want;
    int32_t n = g->nranks;
    size_t es = esize(w->dtype), bytes = w->count * es;
    switch (w->kind) {
    case COMM_ALL_REDUCE:
        /* Into rank 0's recv first (each element read from every send before it is
         * written, so in place is fine), then copied to the others. */
        gaio__comm_reduce(w->dtype, w->op, s->recv[0], (const void *const *)s->send, n, w->count);
        for (int32_t r = 1; r < n; r++)
            if (s->recv[r] != s->recv[0]) memmove(s->recv[r], s->recv[0], bytes);
        break;
    case COMM_REDUCE:
        gaio__comm_reduce(w->dtype, w->op, s->recv[w->root], (const void *const *)s->send, n, w->count);
        break;
    case COMM_BROADCAST:
        for (int32_t r = 0; r < n; r++)
            if (r != w->root) memmove(s->recv[r], s->send[w->root], bytes);
        if (s->recv[w->root] != s->send[w->root]) memmove(s->recv[w->root], s->send[w->root], bytes);
        break;
    case COMM_ALL_GATHER:
        /* A rank's send may sit in its own recv (in place): it is only read there. */
        for (int32_t r = 0; r < n; r++)
            for (int32_t k = 0; k < n; k++) {
                char *dst = (char *)s->recv[r] + (size_t)k * bytes;
                if (dst != s->send[k]) memmove(dst, s->send[k], bytes);
            }
        break;
    case COMM_REDUCE_SCATTER:
        /* recv[r] may be send[r]'s block r (in place): only rank r's result reads it. */
        for (int32_t r = 0; r < n; r++) {
            for (int32_t k = 0; k < n; k++) s->blocks[k] = (const char *)s->send[k] + (size_t)r * bytes;
            gaio__comm_reduce(w->dtype, w->op, s->recv[r], s->blocks, n, w->count);
        }
        break;
    }
}

typedef struct arrival {
    gaio_comm *comm; /* held: the group lives while a communicator does */
    host_group *g;
    host_slot *slot;
    int32_t rank;
    gaio_buffer *send, *recv;
    size_t send_offset, recv_offset;
} arrival;

static void *at(gaio_buffer *b, size_t off) { return b ? b->ptr + off : NULL; }

/* The native function of a rank's collective, in stream order on a worker. */
static gaio_status arrive(void *native_stream, gaio_status stream_status, void *user) {
    (void)native_stream;
    arrival *a = user;
    host_group *g = a->g;
    to_fail tf = {0};
    gaio_status st = GAIO_OK;
    char why[GAIO_MSG_MAX] = "";
    pthread_mutex_lock(&g->lock);
    host_slot *s = NULL;
    for (host_slot *p = g->slots; p; p = p->next)
        if (p == a->slot) s = p;
    if (!s) {
        /* the group failed meanwhile: the slot's future has failed already */
    } else if (stream_status != GAIO_OK) {
        snprintf(why, sizeof why, "%s: rank %d's stream had failed before it reached collective %llu",
                 s->want.fn, a->rank, (unsigned long long)s->seq);
        group_fail_locked(g, GAIO_ERR_DEVICE, why, &tf);
    } else {
        s->send[a->rank] = at(a->send, a->send_offset);
        s->recv[a->rank] = at(a->recv, a->recv_offset);
        if (++s->arrived == g->nranks) {
            compute(g, s);
            host_slot **pp = &g->slots;
            while (*pp != s) pp = &(*pp)->next;
            *pp = s->next;
            slot_free(s, g->nranks, &tf);
        }
    }
    st = g->failed;
    if (st != GAIO_OK) snprintf(why, sizeof why, "%s", g->why);
    pthread_mutex_unlock(&g->lock);
    settle(&tf, st, why);
    gaio_comm_release(a->comm);
    free(a);
    return GAIO_OK; /* the rank's stream fails, if it does, through its wait */
}

/* Holds `stream` until f completes; a failure of f fails the stream with f's message. */
static gaio_status enqueue_wait(const char *fn, gaio_stream *stream, gaio_future *f) {
    gaio_op *op = gaio__op_new(GAIO_OP_WAIT, stream, 0, 0, NULL);
    if (!op) return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory for the collective's wait");
    gaio__future_ref(f);
    op->u.point.fut = f;
    op->u.point.own_message = true;
    return gaio__submit_from(fn, op);
}

static bool same_call(const comm_coll *a, const comm_coll *b) {
    return a->kind == b->kind && a->count == b->count && a->dtype == b->dtype &&
           (a->kind == COMM_BROADCAST || a->kind == COMM_ALL_GATHER || a->op == b->op) &&
           (a->kind != COMM_BROADCAST && a->kind != COMM_REDUCE ? true : a->root == b->root);
}

static const char *kind_name(comm_coll_kind k) {
    static const char *const names[] = {"all_reduce", "broadcast", "reduce", "all_gather", "reduce_scatter"};
    return names[k];
}

static gaio_status failed_status(host_group *g, const char *fn) {
    return gaio__fail(g->failed, fn, "the communicator's group has failed: %s", g->why);
}

static gaio_status host_collective(gaio_comm *comm, gaio_stream *stream, const comm_coll *c) {
    host_group *g = comm->state;
    const char *fn = c->fn;
    int32_t r = comm->rank, n = g->nranks;
    arrival *a = malloc(sizeof *a);
    if (!a) return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory");
    pthread_mutex_lock(&g->lock);
    if (g->failed != GAIO_OK) {
        gaio_status st = failed_status(g, fn);
        pthread_mutex_unlock(&g->lock);
        free(a);
        return st;
    }
    uint64_t seq = g->next_seq[r];
    host_slot *s = g->slots;
    while (s && s->seq != seq) s = s->next;
    if (!s) {
        s = calloc(1, sizeof *s);
        if (s) {
            s->send = calloc((size_t)n, sizeof *s->send);
            s->recv = calloc((size_t)n, sizeof *s->recv);
            s->held = calloc(2 * (size_t)n, sizeof *s->held);
            s->blocks = calloc((size_t)n, sizeof *s->blocks);
            s->done = gaio__future_new();
        }
        if (!s || !s->send || !s->recv || !s->held || !s->blocks || !s->done) {
            if (s) {
                if (s->done) gaio__future_unref(s->done);
                free(s->send);
                free(s->recv);
                free(s->held);
                free(s->blocks);
                free(s);
            }
            pthread_mutex_unlock(&g->lock);
            free(a);
            return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory");
        }
        s->seq = seq;
        s->want = *c;
        s->want.send = s->want.recv = NULL;
        s->next = g->slots;
        g->slots = s;
    } else if (!same_call(&s->want, c)) {
        char why[GAIO_MSG_MAX];
        snprintf(why, sizeof why,
                 "collective %llu of the group: rank %d called %s (%zu elements of %s, op %d, root %d) where an "
                 "earlier rank called %s (%zu elements of %s, op %d, root %d): every rank must make the same "
                 "collectives in the same order",
                 (unsigned long long)seq, r, kind_name(c->kind), c->count, gaio_dtype_name(c->dtype), (int)c->op,
                 c->root, kind_name(s->want.kind), s->want.count, gaio_dtype_name(s->want.dtype), (int)s->want.op,
                 s->want.root);
        to_fail tf = {0};
        group_fail_locked(g, GAIO_ERR_INVALID_ARG, why, &tf);
        pthread_mutex_unlock(&g->lock);
        settle(&tf, GAIO_ERR_INVALID_ARG, why);
        free(a);
        return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "%s", why);
    }
    g->next_seq[r]++;
    if (c->send) gaio_buffer_retain(c->send);
    if (c->recv) gaio_buffer_retain(c->recv);
    s->held[2 * r] = c->send;
    s->held[2 * r + 1] = c->recv;
    gaio_future *done = s->done;
    gaio__future_ref(done);
    pthread_mutex_unlock(&g->lock);

    gaio_comm_retain(comm);
    *a = (arrival){.comm = comm, .g = g, .slot = s, .rank = r, .send = c->send, .recv = c->recv, .send_offset = c->send_offset,
                   .recv_offset = c->recv_offset};
    gaio_buffer *held[2] = {c->send, c->recv};
    gaio_status st = gaio__enqueue_native_held(fn, stream, arrive, a, held, 2);
    if (st == GAIO_OK) {
        st = enqueue_wait(fn, stream, done);
    } else {
        gaio_comm_release(comm);
        free(a);
    }
    gaio__future_unref(done);
    if (st != GAIO_OK) {
        /* This rank will not arrive (or not wait): the others must not wait for it. */
        char why[GAIO_MSG_MAX];
        snprintf(why, sizeof why, "rank %d could not enqueue collective %llu: %s", r, (unsigned long long)seq,
                 gaio_last_error());
        group_fail(g, GAIO_ERR_DEVICE, why);
        return gaio__fail(st, fn, "%s", why);
    }
    return GAIO_OK;
}

/* ---- sends and receives ---- */

typedef struct p2p_arrival {
    gaio_comm *comm; /* held, as an arrival's */
    host_group *g;
    host_part *part;
    int32_t rank;
    size_t n;
    comm_p2p ops[];
} p2p_arrival;

/* Under g->lock: a send meets its receive. */
static void deliver(host_group *g, host_msg *snd, host_msg *rcv, to_fail *tf) {
    if (snd->count != rcv->count || snd->dtype != rcv->dtype) {
        char why[GAIO_MSG_MAX];
        snprintf(why, sizeof why, "rank %d sends %zu elements of %s to rank %d, which receives %zu elements of %s",
                 snd->from, snd->count, gaio_dtype_name(snd->dtype), snd->to, rcv->count, gaio_dtype_name(rcv->dtype));
        group_fail_locked(g, GAIO_ERR_INVALID_ARG, why, tf);
        part_complete(snd->part, tf); /* (the one taken out of the mailbox is not in it) */
        part_complete(rcv->part, tf);
        return;
    }
    memmove(rcv->ptr, snd->ptr, snd->count * esize(snd->dtype));
    host_part *parts[2] = {snd->part, rcv->part};
    for (int i = 0; i < 2; i++)
        if (--parts[i]->outstanding == 0) part_complete(parts[i], tf);
}

/* Under g->lock: removes and returns the first waiting message of kind `send` from
 * `from` to `to`, or NULL. */
static host_msg *take(host_group *g, bool send, int32_t from, int32_t to) {
    for (host_msg **pp = &g->msgs; *pp; pp = &(*pp)->next) {
        host_msg *m = *pp;
        if (m->send == send && m->from == from && m->to == to) {
            *pp = m->next;
            if (g->msgs_tail == &m->next) g->msgs_tail = pp;
            return m;
        }
    }
    return NULL;
}

static gaio_status arrive_p2p(void *native_stream, gaio_status stream_status, void *user) {
    (void)native_stream;
    p2p_arrival *a = user;
    host_group *g = a->g;
    to_fail tf = {0};
    char why[GAIO_MSG_MAX] = "";
    pthread_mutex_lock(&g->lock);
    if (g->failed == GAIO_OK && stream_status != GAIO_OK) {
        snprintf(why, sizeof why, "rank %d's stream had failed before it reached its sends and receives", a->rank);
        group_fail_locked(g, GAIO_ERR_DEVICE, why, &tf);
    }
    for (size_t i = 0; i < a->n && g->failed == GAIO_OK; i++) {
        const comm_p2p *o = &a->ops[i];
        host_msg me = {.send = o->send, .from = o->send ? a->rank : o->peer, .to = o->send ? o->peer : a->rank,
                       .ptr = o->buf->ptr + o->offset, .count = o->count, .dtype = o->dtype, .part = a->part};
        host_msg *peer = take(g, !o->send, me.from, me.to);
        if (peer) {
            deliver(g, o->send ? &me : peer, o->send ? peer : &me, &tf);
            part_drop(peer->part, &tf);
            free(peer);
            continue;
        }
        host_msg *m = malloc(sizeof *m);
        if (!m) {
            group_fail_locked(g, GAIO_ERR_NO_MEMORY, "out of host memory for a send or a receive", &tf);
            break;
        }
        *m = me;
        m->next = NULL;
        *g->msgs_tail = m;
        g->msgs_tail = &m->next;
        a->part->refs++;
    }
    if (g->failed != GAIO_OK) part_complete(a->part, &tf); /* its future fails below, if not yet */
    part_drop(a->part, &tf);
    gaio_status st = g->failed;
    if (st != GAIO_OK) snprintf(why, sizeof why, "%s", g->why);
    pthread_mutex_unlock(&g->lock);
    settle(&tf, st, why);
    gaio_comm_release(a->comm);
    free(a);
    return GAIO_OK;
}

static gaio_status host_p2p(gaio_comm *comm, gaio_stream *stream, const comm_p2p *ops, size_t n) {
    host_group *g = comm->state;
    const char *fn = ops[0].send ? "gaio_comm_send" : "gaio_comm_recv";
    p2p_arrival *a = malloc(sizeof *a + n * sizeof *ops);
    host_part *p = calloc(1, sizeof *p);
    gaio_buffer **held = calloc(n, sizeof *held);
    gaio_future *done = gaio__future_new();
    if (!a || !p || !held || !done) {
        free(a);
        free(p);
        free(held);
        if (done) gaio__future_unref(done);
        return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory");
    }
    pthread_mutex_lock(&g->lock);
    if (g->failed != GAIO_OK) {
        gaio_status st = failed_status(g, fn);
        pthread_mutex_unlock(&g->lock);
        free(a);
        free(p);
        free(held);
        gaio__future_unref(done);
        return st;
    }
    pthread_mutex_unlock(&g->lock);
    for (size_t i = 0; i < n; i++) {
        held[i] = ops[i].buf;
        gaio_buffer_retain(held[i]);
    }
    *p = (host_part){.refs = 1, .outstanding = (int)n, .done = done, .held = held, .nheld = n};
    *a = (p2p_arrival){.comm = comm, .g = g, .part = p, .rank = comm->rank, .n = n};
    memcpy(a->ops, ops, n * sizeof *ops);
    gaio_comm_retain(comm);
    gaio__future_ref(done); /* the part may be gone once it arrives: keep the future for the wait */
    gaio_status st = gaio__enqueue_native_held(fn, stream, arrive_p2p, a, held, n);
    if (st != GAIO_OK) { /* it never arrives: nothing else holds the part */
        for (size_t i = 0; i < n; i++) gaio_buffer_release(held[i]);
        free(held);
        gaio__future_unref(done);
        free(p);
        gaio_comm_release(comm);
        free(a);
    } else {
        st = enqueue_wait(fn, stream, done);
    }
    gaio__future_unref(done);
    if (st != GAIO_OK) {
        char why[GAIO_MSG_MAX];
        snprintf(why, sizeof why, "rank %d could not enqueue its sends and receives: %s", comm->rank,
                 gaio_last_error());
        group_fail(g, GAIO_ERR_DEVICE, why);
        return gaio__fail(st, fn, "%s", why);
    }
    return GAIO_OK;
}

/* ---- joining, aborting, leaving ---- */

static void host_abort(gaio_comm *comm) {
    char why[GAIO_MSG_MAX];
    snprintf(why, sizeof why, "aborted: gaio_comm_abort on rank %d", comm->rank);
    group_fail(comm->state, GAIO_ERR_DEVICE, why);
}

/* Frees a group nobody refers to any more (or one half made). */
static void group_free(host_group *g) {
    for (int32_t i = 0; g->join && i < g->nranks; i++)
        if (g->join[i]) gaio__future_unref(g->join[i]);
    while (g->splits) {
        host_split *sp = g->splits;
        g->splits = sp->next;
        split_free(sp);
    }
    pthread_mutex_destroy(&g->lock);
    pthread_cond_destroy(&g->cond);
    free(g->join);
    free(g->taken);
    free(g->next_seq);
    free(g->next_split);
    free(g);
}

static void host_destroy(gaio_comm *comm) {
    host_group *g = comm->state;
    pthread_mutex_lock(&registry_lock);
    bool last = --g->comms == 0;
    if (last) {
        host_group **pp = &registry;
        while (*pp != g) pp = &(*pp)->next;
        *pp = g->next;
    }
    pthread_mutex_unlock(&registry_lock);
    if (!last) return;
    group_fail(g, GAIO_ERR_DEVICE, "every rank's communicator was released with the collective pending");
    for (int32_t i = 0; i < g->nranks; i++)
        if (!gaio__future_is_done(g->join[i]))
            gaio__future_complete(g->join[i], GAIO_ERR_DEVICE, "every communicator of the group was released");
    group_free(g);
}

static gaio_status host_split_call(gaio_comm *comm, int32_t color, int32_t key, gaio_comm **out);

static const comm_impl host_impl = {
    .name = "host",
    .collective = host_collective,
    .p2p = host_p2p,
    .abort = host_abort,
    .destroy = host_destroy,
    .split = host_split_call,
};

static host_group *group_new(const gaio_comm_id *id, int32_t nranks) {
    host_group *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    pthread_mutex_init(&g->lock, NULL);
    pthread_cond_init(&g->cond, NULL);
    g->msgs_tail = &g->msgs;
    g->nranks = nranks;
    memcpy(g->id, id->bytes, sizeof g->id);
    g->taken = calloc((size_t)nranks, sizeof *g->taken);
    g->join = calloc((size_t)nranks, sizeof *g->join);
    g->next_seq = calloc((size_t)nranks, sizeof *g->next_seq);
    g->next_split = calloc((size_t)nranks, sizeof *g->next_split);
    bool ok = g->taken && g->join && g->next_seq && g->next_split;
    for (int32_t i = 0; ok && i < nranks; i++) ok = (g->join[i] = gaio__future_new()) != NULL;
    if (!ok) {
        group_free(g);
        return NULL;
    }
    return g;
}

gaio_status gaio__host_comm_init_rank(const char *fn, gaio_context *ctx, const gaio_comm_id *id, int32_t nranks,
                                      int32_t rank, gaio_comm **out, gaio_future **joined) {
    if (memcmp(id->bytes, HOST_MAGIC, 8) != 0)
        return BAD("id is not a host communicator's id (make it with gaio_comm_unique_id on a host context)");
    uint32_t pid;
    memcpy(&pid, id->bytes + 8, 4);
    if (pid != (uint32_t)getpid())
        return UNSUPPORTED("id was made by process %u: host communicators span the threads of one process "
                           "(across processes, use GPU contexts and NCCL)",
                           pid);
    pthread_mutex_lock(&registry_lock);
    host_group *g = registry;
    while (g && memcmp(g->id, id->bytes, sizeof g->id) != 0) g = g->next;
    bool made = false;
    if (!g) {
        g = group_new(id, nranks);
        if (!g) {
            pthread_mutex_unlock(&registry_lock);
            return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory");
        }
        made = true;
    } else if (g->nranks != nranks) {
        int32_t has = g->nranks;
        pthread_mutex_unlock(&registry_lock);
        return BAD("nranks is %d but the group was joined with %d", nranks, has);
    } else if (g->taken[rank]) {
        pthread_mutex_unlock(&registry_lock);
        return BAD("rank %d of the group has joined already", rank);
    }
    gaio_comm *c = gaio__comm_new(ctx, rank, nranks, &host_impl, g);
    if (!c) {
        if (made) group_free(g);
        pthread_mutex_unlock(&registry_lock);
        return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory");
    }
    if (made) {
        g->next = registry;
        registry = g;
    }
    g->taken[rank] = true;
    g->comms++;
    bool all = ++g->joined == nranks;
    gaio__future_ref(g->join[rank]);
    *joined = g->join[rank];
    *out = c;
    pthread_mutex_unlock(&registry_lock);
    if (all)
        for (int32_t i = 0; i < nranks; i++) gaio__future_complete(g->join[i], GAIO_OK, NULL);
    return GAIO_OK;
}

/* ---- splitting ---- */

/* Under g->lock, the last rank in: the new groups, one per color, ranks ordered by key
 * then by the old rank; a communicator for each rank of them (the ranks take theirs). */
static gaio_status split_now(host_group *g, host_split *sp) {
    int32_t n = g->nranks;
    for (int32_t r = 0; r < n; r++) {
        if (sp->color[r] < 0 || sp->out[r]) continue;
        int32_t size = 0;
        for (int32_t k = 0; k < n; k++) size += sp->color[k] == sp->color[r];
        gaio_comm_id id;
        gaio__host_comm_unique_id(&id);
        host_group *ng = group_new(&id, size);
        if (!ng) return GAIO_ERR_NO_MEMORY;
        pthread_mutex_lock(&registry_lock);
        ng->next = registry;
        registry = ng;
        for (int32_t k = 0; k < n; k++) {
            if (sp->color[k] != sp->color[r]) continue;
            int32_t nr = 0; /* its rank in the new group */
            for (int32_t j = 0; j < n; j++)
                if (sp->color[j] == sp->color[r] && (sp->key[j] < sp->key[k] || (sp->key[j] == sp->key[k] && j < k)))
                    nr++;
            sp->out[k] = gaio__comm_new(sp->ctx[k], nr, size, &host_impl, ng);
            if (sp->out[k]) {
                ng->taken[nr] = true;
                ng->joined++;
                ng->comms++;
            }
        }
        pthread_mutex_unlock(&registry_lock);
        for (int32_t i = 0; i < size; i++) gaio__future_complete(ng->join[i], GAIO_OK, NULL);
    }
    return GAIO_OK;
}

static gaio_status host_split_call(gaio_comm *comm, int32_t color, int32_t key, gaio_comm **out) {
    host_group *g = comm->state;
    const char *fn = "gaio_comm_split";
    int32_t r = comm->rank, n = g->nranks;
    pthread_mutex_lock(&g->lock);
    if (g->failed != GAIO_OK) {
        gaio_status st = failed_status(g, fn);
        pthread_mutex_unlock(&g->lock);
        return st;
    }
    uint64_t seq = g->next_split[r]++;
    host_split *sp = g->splits;
    while (sp && sp->seq != seq) sp = sp->next;
    if (!sp) {
        sp = calloc(1, sizeof *sp);
        if (sp) {
            sp->color = calloc((size_t)n, sizeof *sp->color);
            sp->key = calloc((size_t)n, sizeof *sp->key);
            sp->ctx = calloc((size_t)n, sizeof *sp->ctx);
            sp->out = calloc((size_t)n, sizeof *sp->out);
        }
        if (!sp || !sp->color || !sp->key || !sp->ctx || !sp->out) {
            split_free(sp);
            pthread_mutex_unlock(&g->lock);
            return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory");
        }
        sp->seq = seq;
        sp->next = g->splits;
        g->splits = sp;
    }
    sp->color[r] = color;
    sp->key[r] = key;
    sp->ctx[r] = comm->ctx;
    gaio_status st = GAIO_OK;
    if (++sp->arrived == n) {
        st = split_now(g, sp);
        sp->done = true;
        pthread_cond_broadcast(&g->cond);
    }
    while (!sp->done && g->failed == GAIO_OK) pthread_cond_wait(&g->cond, &g->lock);
    if (!sp->done) st = failed_status(g, fn);
    *out = sp->done ? sp->out[r] : NULL;
    if (sp->done && ++sp->taken == n) { /* the last to leave frees it */
        host_split **pp = &g->splits;
        while (*pp != sp) pp = &(*pp)->next;
        *pp = sp->next;
        split_free(sp);
    }
    pthread_mutex_unlock(&g->lock);
    if (st == GAIO_ERR_NO_MEMORY) st = gaio__fail(st, fn, "out of host memory");
    if (st == GAIO_OK && color >= 0 && !*out) st = gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory");
    return st;
}
