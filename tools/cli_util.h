/* What the CLI's commands share: a monotonic clock and gaio's messages on one line. */
#ifndef GAIO_TOOLS_CLI_UTIL_H
#define GAIO_TOOLS_CLI_UTIL_H

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

/* Seconds on the monotonic clock. */
static inline double cli_now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* "gaio CMD: message" on stderr as one line, however many lines the parts hold. */
static inline void cli_veline(const char *cmd, const char *fmt, va_list ap) {
    char msg[2048];
    vsnprintf(msg, sizeof msg, fmt, ap);
    for (char *p = msg; *p; p++)
        if (*p == '\n' || *p == '\r') *p = ' ';
    fprintf(stderr, "gaio %s: %s\n", cmd, msg);
}

#endif
