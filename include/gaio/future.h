/* gaio — futures: one-shot completions.
 *
 * A future completes exactly once, with GAIO_OK or the failure of the work it
 * covers; nothing waits forever (a context torn down with work pending still
 * runs that work and completes its futures). Futures are thread-safe: any
 * number of threads may wait, poll or add callbacks. */
#ifndef GAIO_FUTURE_H
#define GAIO_FUTURE_H

#include "gaio/status.h"
#include "gaio/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Completes when `stream` reaches this point: every op submitted before has run.
 * On a CUDA stream already busy with work of the caller's it costs one driver call
 * (the stream's ticket, written behind that work) and no op. */
gaio_status gaio_future_fence(gaio_stream *stream, gaio_future **out);

/* Completes when the event's current point is reached (at once if never recorded). */
gaio_status gaio_future_from_event(gaio_event *event, gaio_future **out);

/* Completes when all `count` futures have; its status is that of the first
 * failed future in array order, or GAIO_OK. */
gaio_status gaio_future_join(gaio_future *const *futures, size_t count, gaio_future **out);

gaio_status gaio_future_retain(gaio_future *fut);
gaio_status gaio_future_release(gaio_future *fut);

/* Blocks up to timeout_ns (0 polls, GAIO_INFINITE waits). Returns the future's
 * status once complete, or GAIO_ERR_TIMEOUT. */
gaio_status gaio_future_wait(gaio_future *fut, int64_t timeout_ns);

/* GAIO_ERR_NOT_READY until complete, then the future's status. Never blocks. */
gaio_status gaio_future_poll(gaio_future *fut);

/* The failure's message once complete with an error ("" otherwise). Valid while fut is. */
const char *gaio_future_message(gaio_future *fut);

/* `fn` runs exactly once: on the thread that completes the future, or at once on
 * the calling thread if it is complete already. Callbacks run in the order they
 * were added, must not block, and may release the future. */
typedef void (*gaio_future_fn)(gaio_future *fut, gaio_status status, void *user);
gaio_status gaio_future_then(gaio_future *fut, gaio_future_fn fn, void *user);

#ifdef __cplusplus
}
#endif
#endif
