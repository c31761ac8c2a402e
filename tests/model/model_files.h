/* What the model tests share: where the generated models are (GAIO_MODEL_DIR, set by
 * ctest; the model_data and model_reference fixtures write them there) and reading a
 * whole file. */
#ifndef GAIO_TEST_MODEL_FILES_H
#define GAIO_TEST_MODEL_FILES_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

static inline const char *model_dir(void) {
    const char *d = getenv("GAIO_MODEL_DIR");
    if (!d || !*d) {
        fprintf(stderr, "GAIO_MODEL_DIR is not set (ctest sets it; the model_data fixture runs "
                        "tests/model/make_models.py, and model_reference tests/model/make_reference.py, there)\n");
        exit(1);
    }
    return d;
}

/* The whole file, NUL-terminated; exits when it cannot be read. */
static inline unsigned char *read_all(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s: %s\n", path, strerror(errno));
        exit(1);
    }
    CHECK(fseek(f, 0, SEEK_END) == 0);
    long n = ftell(f);
    CHECK(n >= 0);
    CHECK(fseek(f, 0, SEEK_SET) == 0);
    unsigned char *p = malloc((size_t)n + 1);
    CHECK(p);
    CHECK(fread(p, 1, (size_t)n, f) == (size_t)n);
    fclose(f);
    p[n] = 0;
    *size = (size_t)n;
    return p;
}

#endif
