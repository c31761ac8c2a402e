/* A one-line progress bar on stderr, redrawn at most 10 times a second, only where
 * stderr is a terminal (so logs and pipes get none). */
#ifndef GAIO_TOOLS_PROGRESS_H
#define GAIO_TOOLS_PROGRESS_H

#include <stdbool.h>

typedef struct progress {
    bool on;
    long total;
    double start_s, last_draw_s;
} progress;

void progress_start(progress *p, long total, bool enabled);
void progress_update(progress *p, long done);
/* Erases the bar (call before printing other lines to stderr or stdout, and at the end). */
void progress_clear(progress *p);

#endif
