#include "core/error.h"

#include <stdarg.h>
#include <stdio.h>

static _Thread_local char last_error[GAIO_MSG_MAX];

gaio_status gaio__fail(gaio_status status, const char *fn, const char *fmt, ...) {
    int n = snprintf(last_error, sizeof last_error, "%s: ", fn);
    if (n < 0 || (size_t)n >= sizeof last_error) n = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error + n, sizeof last_error - (size_t)n, fmt, ap);
    va_end(ap);
    return status;
}

const char *gaio_last_error(void) { return last_error; }

const char *gaio_status_string(gaio_status status) {
    switch (status) {
    case GAIO_OK: return "GAIO_OK";
    case GAIO_ERR_INVALID_ARG: return "GAIO_ERR_INVALID_ARG";
    case GAIO_ERR_NO_MEMORY: return "GAIO_ERR_NO_MEMORY";
    case GAIO_ERR_NOT_READY: return "GAIO_ERR_NOT_READY";
    case GAIO_ERR_TIMEOUT: return "GAIO_ERR_TIMEOUT";
    case GAIO_ERR_NOT_SUPPORTED: return "GAIO_ERR_NOT_SUPPORTED";
    case GAIO_ERR_NOT_FOUND: return "GAIO_ERR_NOT_FOUND";
    case GAIO_ERR_STATE: return "GAIO_ERR_STATE";
    case GAIO_ERR_DEVICE: return "GAIO_ERR_DEVICE";
    case GAIO_ERR_DRIVER: return "GAIO_ERR_DRIVER";
    case GAIO_ERR_SYSTEM: return "GAIO_ERR_SYSTEM";
    case GAIO_ERR_CANCELLED: return "GAIO_ERR_CANCELLED";
    case GAIO_ERR_USER: return "GAIO_ERR_USER";
    }
    return "GAIO_ERR_UNKNOWN";
}
