/* Labels and top K (labels.h). */
#include "labels.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int labels_load(const char *path, labels *out, char *err, size_t errlen) {
    out->names = NULL, out->count = 0;
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "cannot open labels file '%s': %s", path, strerror(errno));
        return -1;
    }
    char *line = NULL;
    size_t cap = 0, room = 0;
    ssize_t len;
    int rc = 0;
    while ((len = getline(&line, &cap, f)) >= 0) {
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
        if ((size_t)out->count == room) {
            size_t want = room ? room * 2 : 1024;
            char **grown = realloc(out->names, want * sizeof *grown);
            if (!grown) {
                rc = -1;
                break;
            }
            out->names = grown, room = want;
        }
        if (!(out->names[out->count] = strdup(line))) {
            rc = -1;
            break;
        }
        out->count++;
    }
    if (rc == 0 && ferror(f)) {
        snprintf(err, errlen, "reading labels file '%s': %s", path, strerror(errno));
        rc = -1;
    } else if (rc != 0) {
        snprintf(err, errlen, "out of memory reading labels file '%s'", path);
    }
    free(line);
    fclose(f);
    if (rc != 0) labels_free(out);
    return rc;
}

void labels_free(labels *l) {
    for (int i = 0; i < l->count; i++) free(l->names[i]);
    free(l->names);
    l->names = NULL, l->count = 0;
}

void top_k(const float *scores, int n, int k, int *idx, float *val) {
    int m = 0; /* insertion into a sorted list of k: k stays small (5) */
    for (int i = 0; i < n; i++) {
        float s = scores[i];
        if (m == k && !(s > val[k - 1])) continue;
        int at = m < k ? m++ : k - 1;
        while (at > 0 && s > val[at - 1]) {
            val[at] = val[at - 1], idx[at] = idx[at - 1];
            at--;
        }
        val[at] = s, idx[at] = i;
    }
}

void to_probabilities(float *scores, int n) {
    double sum = 0;
    int in_range = 1;
    float top = -INFINITY;
    for (int i = 0; i < n; i++) {
        sum += scores[i];
        in_range &= scores[i] >= 0.0f && scores[i] <= 1.0f;
        if (scores[i] > top) top = scores[i];
    }
    if (in_range && fabs(sum - 1.0) < 1e-3) return;
    double z = 0;
    for (int i = 0; i < n; i++) z += exp((double)scores[i] - top);
    for (int i = 0; i < n; i++) scores[i] = (float)(exp((double)scores[i] - top) / z);
}
