/* progress.h */
#include "progress.h"

#include <stdio.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

void progress_start(progress *p, long total, bool enabled) {
    p->on = enabled && isatty(STDERR_FILENO);
    p->total = total;
    p->start_s = now_s();
    p->last_draw_s = 0;
}

void progress_update(progress *p, long done) {
    if (!p->on) return;
    double t = now_s();
    if (done < p->total && t - p->last_draw_s < 0.1) return;
    p->last_draw_s = t;
    enum { WIDTH = 30 };
    int fill = p->total > 0 ? (int)(WIDTH * done / p->total) : WIDTH;
    char bar[WIDTH + 1];
    for (int i = 0; i < WIDTH; i++) bar[i] = i < fill ? '=' : i == fill ? '>' : ' ';
    bar[WIDTH] = 0;
    double el = t - p->start_s;
    fprintf(stderr, "\r[%s] %ld/%ld images  %.0f images/s ", bar, done, p->total, el > 0 ? (double)done / el : 0.0);
    fflush(stderr);
}

void progress_clear(progress *p) {
    if (!p->on) return;
    fprintf(stderr, "\r\033[K");
    fflush(stderr);
}
