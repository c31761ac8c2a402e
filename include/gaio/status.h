/* gaio — status codes and the thread-local error message.
 *
 * Every gaio call returns a gaio_status. When it is not GAIO_OK, gaio_last_error()
 * on the same thread says in words what was wrong, naming the function and the
 * argument at fault ("gaio_memcpy_async: dst_offset 96 + bytes 64 exceeds dst size 128").
 * Invalid input is rejected before anything is enqueued. */
#ifndef GAIO_STATUS_H
#define GAIO_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gaio_status {
    GAIO_OK = 0,
    GAIO_ERR_INVALID_ARG = 1,   /* an argument is NULL, out of range, or of the wrong kind */
    GAIO_ERR_NO_MEMORY = 2,     /* host or device allocation failed */
    GAIO_ERR_NOT_READY = 3,     /* poll/query: the work has not finished yet (not a failure) */
    GAIO_ERR_TIMEOUT = 4,       /* a wait ran out of time; the work goes on */
    GAIO_ERR_NOT_SUPPORTED = 5, /* the feature does not exist on this backend or device */
    GAIO_ERR_NOT_FOUND = 6,     /* no kernel or device of that name or index */
    GAIO_ERR_STATE = 7,         /* the object is in the wrong state for this call */
    GAIO_ERR_DEVICE = 8,        /* the device faulted; the context's futures fail with this */
    GAIO_ERR_DRIVER = 9,        /* a driver or run-time library is missing or failed */
    GAIO_ERR_SYSTEM = 10,       /* an operating-system call failed (errno in the message) */
    GAIO_ERR_CANCELLED = 11,    /* the work was abandoned: an earlier op of its stream failed */
    GAIO_ERR_USER = 12          /* a user callback or host kernel reported failure */
    /* 13 is retired (GAIO_ERR_NOT_IMPLEMENTED, never returned): not to be reused, so
     * that a binding written against an older libgaio never misreads a new code. */
} gaio_status;

/* A constant name for the status, e.g. "GAIO_ERR_TIMEOUT". Never NULL. */
const char *gaio_status_string(gaio_status status);

/* The message of the last failed gaio call on this thread ("" if none yet).
 * Valid until the next gaio call on this thread. */
const char *gaio_last_error(void);

#ifdef __cplusplus
}
#endif
#endif
