#include "core/op_cache.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

#include "core/hot.h"
#include "core/prefetch.h"

/* Under AddressSanitizer every op comes from malloc, so that a use after retire
 * is reported rather than hidden by reuse. */
#if defined(__SANITIZE_ADDRESS__)
#define GAIO_OP_CACHE 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GAIO_OP_CACHE 0
#endif
#endif
#ifndef GAIO_OP_CACHE
#define GAIO_OP_CACHE 1
#endif

#define CHAIN 64         /* blocks handed back at once */
#define LOCAL_MAX 64     /* a thread's own list keeps at most this many of what it frees */
#define PARKED_MAX 4096  /* blocks parked for other threads; beyond, freed */

typedef struct block {
    struct block *next;
    /* In the first block of a parked chain: */
    struct block *chain_next, *chain_tail;
} block;

static _Atomic(block *) parked; /* chains, linked by chain_next */
static atomic_long parked_blocks;

typedef struct local {
    block *free; /* blocks this thread allocates from */
    unsigned nfree;
    block *out, *out_tail; /* blocks this thread retired, beyond LOCAL_MAX: the next chain */
    unsigned nout;
    unsigned lines; /* cache lines the last request used */
    bool registered;
} local;

static GAIO_HOT_TLS local tl;

static pthread_key_t exit_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

static void free_list(block *b) {
    while (b) {
        block *next = b->next;
        free(b);
        b = next;
    }
}

/* A thread that ends frees what it holds (its list may be long after a refill). */
static void on_thread_exit(void *unused) {
    (void)unused;
    free_list(tl.free);
    free_list(tl.out);
    tl = (local){0};
}

static void make_key(void) {
    if (pthread_key_create(&exit_key, on_thread_exit) != 0) exit_key = 0;
}

static void register_thread(void) {
    pthread_once(&key_once, make_key);
    /* Any non-NULL value arms the destructor; failing that, blocks leak at thread exit. */
    (void)pthread_setspecific(exit_key, (void *)1);
    tl.registered = true;
}

/* Takes every parked chain onto this thread's list. */
static void refill(void) {
    if (!atomic_load_explicit(&parked, memory_order_relaxed)) return;
    block *c = atomic_exchange_explicit(&parked, NULL, memory_order_acquire);
    long n = 0;
    while (c) {
        block *next_chain = c->chain_next;
        c->chain_tail->next = tl.free;
        tl.free = c;
        n += CHAIN;
        c = next_chain;
    }
    tl.nfree += (unsigned)n;
    atomic_fetch_sub_explicit(&parked_blocks, n, memory_order_relaxed);
}

static void park_chain(void) {
    block *c = tl.out;
    c->chain_tail = tl.out_tail;
    tl.out = tl.out_tail = NULL;
    tl.nout = 0;
    if (atomic_load_explicit(&parked_blocks, memory_order_relaxed) >= PARKED_MAX) {
        free_list(c);
        return;
    }
    atomic_fetch_add_explicit(&parked_blocks, CHAIN, memory_order_relaxed);
    block *top = atomic_load_explicit(&parked, memory_order_relaxed);
    do {
        c->chain_next = top;
    } while (!atomic_compare_exchange_weak_explicit(&parked, &top, c, memory_order_release, memory_order_relaxed));
}

void *gaio__op_block_get(size_t bytes, bool *cached) {
    if (!GAIO_OP_CACHE || bytes > GAIO_OP_BLOCK_BYTES) {
        *cached = false;
        return malloc(bytes);
    }
    *cached = true;
    if (!tl.registered) register_thread();
    if (!tl.free) refill();
    block *b = tl.free;
    if (!b) return aligned_alloc(64, GAIO_OP_BLOCK_BYTES); /* on lines of its own: an op touches fewer */
    tl.free = b->next;
    tl.nfree--;
    /* The next block was last written by the thread that retired it: fetch its lines
     * for writing now, so that the next op does not wait for them: as many as the
     * larger of the last two requests used (a future uses one line of eight; a thread
     * may alternate launches and fences). */
    unsigned lines = (unsigned)((bytes + 63) / 64), n = lines > tl.lines ? lines : tl.lines;
    tl.lines = lines;
    if (tl.free)
        for (unsigned i = 0; i < n; i++) gaio__prefetch_for_write((char *)tl.free + 64 * i);
    return b;
}

void gaio__op_block_put(void *p) {
    block *b = p;
    if (!GAIO_OP_CACHE) {
        free(b);
        return;
    }
    if (!tl.registered) register_thread();
    if (tl.nfree < LOCAL_MAX) {
        b->next = tl.free;
        tl.free = b;
        tl.nfree++;
        return;
    }
    b->next = NULL;
    if (tl.out_tail) tl.out_tail->next = b;
    else tl.out = b;
    tl.out_tail = b;
    if (++tl.nout == CHAIN) park_chain();
}

void gaio__op_cache_trim(void) {
    block *c = atomic_exchange_explicit(&parked, NULL, memory_order_acquire);
    long n = 0;
    while (c) {
        block *next_chain = c->chain_next;
        c->chain_tail->next = NULL;
        free_list(c);
        n += CHAIN;
        c = next_chain;
    }
    atomic_fetch_sub_explicit(&parked_blocks, n, memory_order_relaxed);
}
