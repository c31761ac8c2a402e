/* Completion queue: a growable ring of entries guarded by a mutex, and an eventfd
 * that is readable whenever the ring is non-empty, so level- and edge-triggered
 * pollers both work. A post signals the fd after it unlocks: signalling under the
 * lock made the woken event-loop thread block on that lock in gaio_cq_pop while
 * the poster finished (a convoy on every wake-up). The price is a spurious
 * wake-up now and then: a pop can take the entry before the poster's signal
 * lands, and the fd is then readable with the ring empty. A pop that finds the
 * ring empty therefore drains the fd, so a level-triggered poller is woken once,
 * not forever. No signal is lost: the fd is drained only while the ring is empty,
 * and the post that makes it non-empty signals afterwards. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/object.h"


struct gaio_cq {
    gaio_ref ref;
    pthread_mutex_t lock;
    int fd;
    gaio_cq_entry *ring;
    size_t cap, head, len;
};

typedef struct cq_watch {
    gaio_cq *cq;
    void *user_data;
} cq_watch;

gaio_status gaio_cq_create(gaio_cq **out) {
    GAIO_REQUIRE_PTR(out);
    *out = NULL;
    gaio_cq *cq = calloc(1, sizeof *cq);
    if (!cq) return GAIO_FAIL(GAIO_ERR_NO_MEMORY, "out of host memory for the queue");
    cq->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (cq->fd < 0) {
        int e = errno;
        free(cq);
        return GAIO_FAIL(GAIO_ERR_SYSTEM, "eventfd failed: %s", strerror(e));
    }
    gaio__ref_init(&cq->ref);
    pthread_mutex_init(&cq->lock, NULL);
    *out = cq;
    return GAIO_OK;
}

gaio_status gaio_cq_retain(gaio_cq *cq) {
    GAIO_REQUIRE_PTR(cq);
    gaio__ref_inc(&cq->ref);
    return GAIO_OK;
}

static void cq_unref(gaio_cq *cq) {
    if (!gaio__ref_dec(&cq->ref)) return;
    close(cq->fd);
    pthread_mutex_destroy(&cq->lock);
    free(cq->ring);
    free(cq);
}

gaio_status gaio_cq_release(gaio_cq *cq) {
    if (cq) cq_unref(cq);
    return GAIO_OK;
}

gaio_status gaio_cq_fd(gaio_cq *cq, int *fd) {
    GAIO_REQUIRE_PTR(cq);
    GAIO_REQUIRE_PTR(fd);
    *fd = cq->fd;
    return GAIO_OK;
}

static void fd_signal(gaio_cq *cq) {
    uint64_t one = 1;
    /* Cannot overflow: the counter holds at most the posts racing with one drain. */
    while (write(cq->fd, &one, sizeof one) < 0 && errno == EINTR) {
    }
}

static void fd_drain(gaio_cq *cq) {
    uint64_t v;
    while (read(cq->fd, &v, sizeof v) < 0 && errno == EINTR) {
    }
}

static void cq_post(gaio_future *fut, gaio_status status, void *user) {
    (void)fut;
    cq_watch *w = user;
    gaio_cq *cq = w->cq;
    pthread_mutex_lock(&cq->lock);
    if (cq->len == cq->cap) {
        size_t cap = cq->cap ? cq->cap * 2 : 64;
        gaio_cq_entry *ring = malloc(cap * sizeof *ring);
        if (!ring) {
            /* Nowhere to put it; keep the queue consistent rather than crash. */
            pthread_mutex_unlock(&cq->lock);
            free(w);
            cq_unref(cq);
            return;
        }
        for (size_t i = 0; i < cq->len; i++) ring[i] = cq->ring[(cq->head + i) % cq->cap];
        free(cq->ring);
        cq->ring = ring;
        cq->cap = cap;
        cq->head = 0;
    }
    cq->ring[(cq->head + cq->len) % cq->cap] = (gaio_cq_entry){w->user_data, status};
    bool first = cq->len++ == 0;
    pthread_mutex_unlock(&cq->lock);
    if (first) fd_signal(cq); /* after the unlock (see the top of the file); cq lives: our reference */
    free(w);
    cq_unref(cq);
}

gaio_status gaio_cq_add(gaio_cq *cq, gaio_future *fut, void *user_data) {
    GAIO_REQUIRE_PTR(cq);
    GAIO_REQUIRE_PTR(fut);
    cq_watch *w = malloc(sizeof *w);
    if (!w) return GAIO_FAIL(GAIO_ERR_NO_MEMORY, "out of host memory for the queue entry");
    w->cq = cq;
    w->user_data = user_data;
    gaio__ref_inc(&cq->ref);
    gaio_status st = gaio__future_on_complete(fut, cq_post, w);
    if (st != GAIO_OK) {
        free(w);
        cq_unref(cq);
    }
    return st;
}

gaio_status gaio_cq_pop(gaio_cq *cq, gaio_cq_entry *entries, size_t max, size_t *count) {
    GAIO_REQUIRE_PTR(count);
    *count = 0;
    GAIO_REQUIRE_PTR(cq);
    GAIO_REQUIRE_PTR(entries);
    GAIO_REQUIRE(max > 0, "max is 0; pass the capacity of entries");
    pthread_mutex_lock(&cq->lock);
    size_t n = cq->len < max ? cq->len : max;
    for (size_t i = 0; i < n; i++) entries[i] = cq->ring[(cq->head + i) % cq->cap];
    if (n) {
        cq->head = (cq->head + n) % cq->cap;
        cq->len -= n;
    }
    if (cq->len == 0) fd_drain(cq); /* also when it was empty already: a late signal's spurious count */
    pthread_mutex_unlock(&cq->lock);
    *count = n;
    return GAIO_OK;
}

gaio_status gaio_cq_wait(gaio_cq *cq, gaio_cq_entry *entries, size_t max, size_t *count, int64_t timeout_ns) {
    GAIO_REQUIRE_PTR(count);
    *count = 0;
    GAIO_REQUIRE_PTR(cq);
    GAIO_REQUIRE_PTR(entries);
    GAIO_REQUIRE(max > 0, "max is 0; pass the capacity of entries");
    GAIO_REQUIRE(timeout_ns >= 0, "timeout_ns is %lld; it must be >= 0", (long long)timeout_ns);
    uint64_t deadline = timeout_ns == GAIO_INFINITE ? UINT64_MAX : gaio__now_ns() + (uint64_t)timeout_ns;
    for (;;) {
        gaio_status st = gaio_cq_pop(cq, entries, max, count);
        if (st != GAIO_OK || *count) return st;
        uint64_t now = gaio__now_ns();
        if (now >= deadline) return GAIO_FAIL(GAIO_ERR_TIMEOUT, "no entry within %lld ns", (long long)timeout_ns);
        uint64_t left_ms = deadline == UINT64_MAX ? (uint64_t)-1 : (deadline - now + 999999) / 1000000;
        struct pollfd p = {.fd = cq->fd, .events = POLLIN};
        int ms = left_ms > 1000000 ? 1000000 : (int)left_ms;
        if (poll(&p, 1, deadline == UINT64_MAX ? -1 : ms) < 0 && errno != EINTR)
            return GAIO_FAIL(GAIO_ERR_SYSTEM, "poll on the queue's eventfd failed: %s", strerror(errno));
    }
}
