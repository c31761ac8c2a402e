/* Vyukov's intrusive MPSC queue: producers exchange the head pointer (wait-free,
 * one atomic exchange and one store), the single consumer walks from the tail and
 * needs no lock. Used where a thread of gaio's own consumes what callers produce
 * (the deferred-submission thread, the CUDA completion engine), so that neither
 * side ever waits for the other. */
#ifndef GAIO_CORE_MPSC_H
#define GAIO_CORE_MPSC_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct gaio_mpsc_node {
    _Atomic(struct gaio_mpsc_node *) next;
} gaio_mpsc_node;

/* Producers' and consumer's ends on cache lines of their own: allocate the
 * structure holding a queue with gaio__calloc_lines (core/hot.h). */
typedef struct gaio_mpsc {
    _Alignas(64) _Atomic(gaio_mpsc_node *) head; /* producers */
    _Alignas(64) gaio_mpsc_node *tail;           /* the consumer */
    gaio_mpsc_node stub;
} gaio_mpsc;

static inline void gaio__mpsc_init(gaio_mpsc *q) {
    atomic_init(&q->stub.next, NULL);
    atomic_init(&q->head, &q->stub);
    q->tail = &q->stub;
}

/* seq_cst, so that a producer's later seq_cst load pairs with a consumer's
 * seq_cst store and gaio__mpsc_empty (Dekker-style sleep/wake protocols). */
static inline void gaio__mpsc_push(gaio_mpsc *q, gaio_mpsc_node *n) {
    atomic_store_explicit(&n->next, NULL, memory_order_relaxed);
    gaio_mpsc_node *prev = atomic_exchange_explicit(&q->head, n, memory_order_seq_cst);
    atomic_store_explicit(&prev->next, n, memory_order_release);
}

/* The oldest node, left in the queue; NULL when empty or when the only producer
 * ahead is between its two steps. Consumer only. */
static inline gaio_mpsc_node *gaio__mpsc_peek(gaio_mpsc *q) {
    gaio_mpsc_node *tail = q->tail;
    if (tail == &q->stub) {
        gaio_mpsc_node *next = atomic_load_explicit(&tail->next, memory_order_acquire);
        if (!next) return NULL;
        q->tail = tail = next;
    }
    return tail;
}

/* Takes the oldest node; NULL when empty or when a producer is mid-push (it lands
 * in a moment). Consumer only. Once returned, the queue no longer touches the node. */
static inline gaio_mpsc_node *gaio__mpsc_pop(gaio_mpsc *q) {
    gaio_mpsc_node *tail = gaio__mpsc_peek(q);
    if (!tail) return NULL;
    gaio_mpsc_node *next = atomic_load_explicit(&tail->next, memory_order_acquire);
    if (next) {
        q->tail = next;
        return tail;
    }
    if (tail != atomic_load_explicit(&q->head, memory_order_acquire)) return NULL;
    gaio__mpsc_push(q, &q->stub);
    next = atomic_load_explicit(&tail->next, memory_order_acquire);
    if (next) {
        q->tail = next;
        return tail;
    }
    return NULL;
}

/* Nothing queued and no producer mid-push. Consumer only; seq_cst (see push). */
static inline bool gaio__mpsc_empty(gaio_mpsc *q) {
    return atomic_load_explicit(&q->head, memory_order_seq_cst) == q->tail && q->tail == &q->stub;
}

#endif
