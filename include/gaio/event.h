/* gaio — events: points in a stream.
 *
 * gaio_event_record marks the point reached by everything submitted to the
 * stream so far; a later record moves the event to a new point. Other streams
 * wait on the point without the host. An event never recorded counts as done. */
#ifndef GAIO_EVENT_H
#define GAIO_EVENT_H

#include "gaio/status.h"
#include "gaio/types.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
    GAIO_EVENT_DISABLE_TIMING = 1u << 0 /* no timestamps: cheaper on CUDA */
};

gaio_status gaio_event_create(gaio_context *ctx, unsigned flags, gaio_event **out);
gaio_status gaio_event_retain(gaio_event *event);
gaio_status gaio_event_release(gaio_event *event);

/* The stream may belong to another context of the same device kind. */
gaio_status gaio_event_record(gaio_event *event, gaio_stream *stream);

/* Work submitted to `stream` after this call starts only after the event's
 * current point is reached. A failure before that point fails `stream` too.
 * On a wrapped (foreign) stream the wait is in the native stream when this returns,
 * so the owner's own work enqueued there afterwards waits too: where the point is
 * still held behind host work, this call blocks until the point is reached. */
gaio_status gaio_stream_wait_event(gaio_stream *stream, gaio_event *event);

/* GAIO_OK if reached, GAIO_ERR_NOT_READY if not yet, or the failure of the recording stream. */
gaio_status gaio_event_query(gaio_event *event);
gaio_status gaio_event_synchronize(gaio_event *event);

/* Milliseconds between two reached points; both events recorded with timing.
 * GAIO_ERR_NOT_READY until gaio has seen both points reached (wait for both, not
 * only for the later one: each point's completion is observed on its own stream). */
gaio_status gaio_event_elapsed_ms(gaio_event *start, gaio_event *end, float *ms);

#ifdef __cplusplus
}
#endif
#endif
