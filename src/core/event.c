#include <stdlib.h>

#include "core/op.h"

#define KNOWN_EVENT_FLAGS (GAIO_EVENT_DISABLE_TIMING)

gaio_status gaio_event_create(gaio_context *ctx, unsigned flags, gaio_event **out) {
    GAIO_REQUIRE_PTR(out);
    *out = NULL;
    GAIO_REQUIRE_PTR(ctx);
    GAIO_REQUIRE((flags & ~KNOWN_EVENT_FLAGS) == 0, "flags 0x%x has unknown bits 0x%x", flags,
                 flags & ~KNOWN_EVENT_FLAGS);
    gaio_event *e = calloc(1, sizeof *e);
    if (!e) return GAIO_FAIL(GAIO_ERR_NO_MEMORY, "out of host memory for the event");
    gaio__ref_init(&e->ref);
    e->ctx = ctx;
    gaio__context_ref(ctx);
    e->flags = flags;
    pthread_mutex_init(&e->lock, NULL);
    *out = e;
    return GAIO_OK;
}

gaio_status gaio_event_retain(gaio_event *event) {
    GAIO_REQUIRE_PTR(event);
    gaio__ref_inc(&event->ref);
    return GAIO_OK;
}

gaio_status gaio_event_release(gaio_event *event) {
    if (!event || !gaio__ref_dec(&event->ref)) return GAIO_OK;
    if (event->point) gaio__future_unref(event->point);
    pthread_mutex_destroy(&event->lock);
    gaio_context *ctx = event->ctx;
    free(event);
    gaio__context_unref(ctx);
    return GAIO_OK;
}

/* The event's current point with a reference, or NULL if never recorded. */
static gaio_future *event_point(gaio_event *e) {
    pthread_mutex_lock(&e->lock);
    gaio_future *p = e->point;
    if (p) gaio__future_ref(p);
    pthread_mutex_unlock(&e->lock);
    return p;
}

static gaio_status check_same_kind(const char *fn, gaio_event *e, gaio_stream *s) {
    if (e->ctx->be == s->ctx->be) return GAIO_OK;
    return gaio__fail(GAIO_ERR_INVALID_ARG, fn,
                      "the event belongs to device %d (%s) but the stream to device %d (%s); events order streams "
                      "of one device kind (use a future to cross kinds)",
                      e->ctx->device, e->ctx->be->name, s->ctx->device, s->ctx->be->name);
}

gaio_status gaio_event_record(gaio_event *event, gaio_stream *stream) {
    GAIO_REQUIRE_PTR(event);
    GAIO_REQUIRE_PTR(stream);
    gaio_status st = check_same_kind(__func__, event, stream);
    if (st != GAIO_OK) return st;
    gaio_future *f = gaio__future_new();
    gaio_op *op = f ? gaio__op_new(GAIO_OP_RECORD, stream, 0, 0, NULL) : NULL;
    if (!op) {
        if (f) gaio__future_unref(f);
        return GAIO_FAIL(GAIO_ERR_NO_MEMORY, "out of host memory for the event record");
    }
    f->timed = !(event->flags & GAIO_EVENT_DISABLE_TIMING);
    f->marker = true; /* the point fields are valid from here (core/object.h) */
    f->t_ns = 0;
    f->be_event = NULL;
    f->be_event_free = NULL;
    f->be_elapsed = NULL;
    gaio__future_ref(f);
    op->u.point.fut = f;
    /* Publish the new point before submitting, so that waits made after this call
     * returns see it even on a deferred stream. */
    pthread_mutex_lock(&event->lock);
    gaio_future *old = event->point;
    event->point = f;
    pthread_mutex_unlock(&event->lock);
    if (old) gaio__future_unref(old);
    return gaio__submit(op);
}

gaio_status gaio_stream_wait_event(gaio_stream *stream, gaio_event *event) {
    GAIO_REQUIRE_PTR(stream);
    GAIO_REQUIRE_PTR(event);
    gaio_status st = check_same_kind(__func__, event, stream);
    if (st != GAIO_OK) return st;
    gaio_future *p = event_point(event);
    if (!p) return GAIO_OK;
    /* A wrapped stream's owner enqueues on the native stream directly, right after this
     * returns: the wait must be in that stream by then. A point still held behind host
     * work (or queued for a deferred stream) has no device event yet, so the caller
     * waits for the point itself; the wait below then costs nothing. */
    if (stream->is_foreign && !atomic_load_explicit(&p->be_recorded, memory_order_acquire) &&
        !gaio__future_is_done(p))
        (void)gaio_future_wait(p, GAIO_INFINITE);
    if (gaio__future_is_done(p) && p->status == GAIO_OK) {
        gaio__future_unref(p);
        return GAIO_OK;
    }
    gaio_op *op = gaio__op_new(GAIO_OP_WAIT, stream, 0, 0, NULL);
    if (!op) {
        gaio__future_unref(p);
        return GAIO_FAIL(GAIO_ERR_NO_MEMORY, "out of host memory for the wait");
    }
    op->u.point.fut = p;
    return gaio__submit(op);
}

gaio_status gaio_event_query(gaio_event *event) {
    GAIO_REQUIRE_PTR(event);
    gaio_future *p = event_point(event);
    if (!p) return GAIO_OK;
    gaio_status st = gaio_future_poll(p);
    if (st != GAIO_OK && st != GAIO_ERR_NOT_READY) st = GAIO_FAIL(st, "%s", gaio_future_message(p));
    gaio__future_unref(p);
    return st;
}

gaio_status gaio_event_synchronize(gaio_event *event) {
    GAIO_REQUIRE_PTR(event);
    gaio_future *p = event_point(event);
    if (!p) return GAIO_OK;
    gaio_status st = gaio_future_wait(p, GAIO_INFINITE);
    if (st != GAIO_OK) st = GAIO_FAIL(st, "%s", gaio_future_message(p));
    gaio__future_unref(p);
    return st;
}

gaio_status gaio_future_from_event(gaio_event *event, gaio_future **out) {
    GAIO_REQUIRE_PTR(out);
    *out = NULL;
    GAIO_REQUIRE_PTR(event);
    gaio_future *p = event_point(event);
    if (!p) {
        p = gaio__future_new();
        if (!p) return GAIO_FAIL(GAIO_ERR_NO_MEMORY, "out of host memory for the future");
        gaio__future_complete(p, GAIO_OK, NULL);
    }
    *out = p;
    return GAIO_OK;
}

gaio_status gaio_event_elapsed_ms(gaio_event *start, gaio_event *end, float *ms) {
    GAIO_REQUIRE_PTR(start);
    GAIO_REQUIRE_PTR(end);
    GAIO_REQUIRE_PTR(ms);
    GAIO_REQUIRE(!(start->flags & GAIO_EVENT_DISABLE_TIMING), "start was created with GAIO_EVENT_DISABLE_TIMING");
    GAIO_REQUIRE(!(end->flags & GAIO_EVENT_DISABLE_TIMING), "end was created with GAIO_EVENT_DISABLE_TIMING");
    gaio_future *a = event_point(start), *b = event_point(end);
    gaio_status st = GAIO_OK;
    if (!a || !b)
        st = GAIO_FAIL(GAIO_ERR_STATE, "%s was never recorded", !a ? "start" : "end");
    else if (!gaio__future_is_done(a) || !gaio__future_is_done(b))
        st = GAIO_FAIL(GAIO_ERR_NOT_READY, "%s has not been reached yet", !gaio__future_is_done(a) ? "start" : "end");
    else if (a->status != GAIO_OK || b->status != GAIO_OK)
        st = GAIO_FAIL(a->status != GAIO_OK ? a->status : b->status, "the stream of %s failed",
                       a->status != GAIO_OK ? "start" : "end");
    else if (a->be_elapsed && b->be_elapsed == a->be_elapsed)
        st = a->be_elapsed(a, b, ms); /* the device's own clock */
    else
        *ms = (float)((double)((int64_t)(b->t_ns - a->t_ns)) / 1e6);
    if (a) gaio__future_unref(a);
    if (b) gaio__future_unref(b);
    return st;
}
