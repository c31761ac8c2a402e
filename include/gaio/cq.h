/* gaio — completion queues for event loops.
 *
 * A future added to a queue posts one entry (its user data and status) when it
 * completes. gaio_cq_fd gives an eventfd that is readable exactly while entries
 * wait: register it with epoll, libuv (uv_poll), asyncio (add_reader) or Tokio
 * (AsyncFd), then pop in batches when it fires. Do not read the fd yourself. */
#ifndef GAIO_CQ_H
#define GAIO_CQ_H

#include "gaio/status.h"
#include "gaio/types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gaio_cq_entry {
    void *user_data;
    gaio_status status;
} gaio_cq_entry;

gaio_status gaio_cq_create(gaio_cq **out);
gaio_status gaio_cq_retain(gaio_cq *cq);
/* Entries still waiting are dropped; futures added but not complete post nowhere. */
gaio_status gaio_cq_release(gaio_cq *cq);

gaio_status gaio_cq_fd(gaio_cq *cq, int *fd);

/* The queue holds its own reference to fut until it completes. */
gaio_status gaio_cq_add(gaio_cq *cq, gaio_future *fut, void *user_data);

/* Takes up to `max` waiting entries without blocking; *count may be 0. */
gaio_status gaio_cq_pop(gaio_cq *cq, gaio_cq_entry *entries, size_t max, size_t *count);

/* Like pop, but first waits up to timeout_ns for at least one entry
 * (GAIO_ERR_TIMEOUT with *count == 0 if none came). */
gaio_status gaio_cq_wait(gaio_cq *cq, gaio_cq_entry *entries, size_t max, size_t *count, int64_t timeout_ns);

#ifdef __cplusplus
}
#endif
#endif
