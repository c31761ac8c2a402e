/* The image-op benchmark on the CPU backend, against OpenCV (bench/image_opencv.py),
 * shared by bench/gaio_bench_image and `gaio bench`; and the helpers both image
 * benchmarks use to run their Python peers. */
#ifndef GAIO_BENCH_IMAGE_CPU_H
#define GAIO_BENCH_IMAGE_CPU_H

#include <stddef.h>
#include <stdio.h>

/* Resizes u8 RGB 1920x1080 frames on the host backend with 1 worker and with one
 * worker per online core, and prints one table to `out` beside OpenCV's figures
 * (1 thread and its default threads). Returns 0 (also when OpenCV is missing: its
 * columns read "-"), or 1 when a gaio call failed (the reason goes to stderr).
 *
 * It restarts gaio (gaio_shutdown, gaio_configure) for each worker count, so no
 * gaio context may be alive in the process while it runs, and it leaves gaio
 * configured with the defaults. */
int gaio_bench_image_cpu_run(FILE *out);

/* ---- Python peers ----
 * A peer script prints one line per figure, "NAME MS [VARIANT...]", and lines that
 * start with "note:" to be shown under the table; anything else is ignored. */

#define IMAGE_PEER_ROWS 32
#define IMAGE_PEER_NOTES 12

typedef struct image_peer_row {
    char name[48];
    double ms;
    char variant[96];
} image_peer_row;

typedef struct image_peer {
    image_peer_row rows[IMAGE_PEER_ROWS];
    int nrows;
    char notes[IMAGE_PEER_NOTES][240];
    int nnotes;
    char python[256]; /* the interpreter whose rows these are ("" if none gave any) */
} image_peer;

/* Runs bench/`script` with `args` under each interpreter of `pythons` in turn (the
 * environment variable GAIO_BENCH_PYTHON, when set, goes first) until one prints
 * at least one row; each run is stopped after timeout_s seconds (through
 * timeout(1) where it exists). The script is looked for in $GAIO_BENCH_SCRIPTS,
 * the source tree this was built from, ./bench, and beside the executable.
 * Never fails: what went wrong becomes notes, and rows may be empty. */
void image_peer_run(const char *const *pythons, size_t npythons, const char *script, const char *args, int timeout_s,
                    image_peer *out);

/* The figure called name, or -1; *variant (may be NULL) gets its variant text. */
double image_peer_ms(const image_peer *p, const char *name, const char **variant);

#endif
