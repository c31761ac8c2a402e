/* Class names for `gaio classify --labels FILE` (one per line, line i naming class i)
 * and the top K of a row of scores. */
#ifndef GAIO_TOOLS_LABELS_H
#define GAIO_TOOLS_LABELS_H

#include <stddef.h>

typedef struct labels {
    char **names;
    int count;
} labels;

/* Reads path; blank lines count (as empty names), a trailing \r is dropped. Returns 0,
 * or -1 with err set. */
int labels_load(const char *path, labels *out, char *err, size_t errlen);
void labels_free(labels *l);

/* The k highest of scores[0..n) in descending order (ties: the lower index first) into
 * idx and val; k <= n. */
void top_k(const float *scores, int n, int k, int *idx, float *val);

/* Scores as probabilities: a softmax unless they are one already (all in [0, 1] and
 * summing to 1 within 1e-3, as after a model's own Softmax). */
void to_probabilities(float *scores, int n);

#endif
