/* What the operator table's files (ops.c, ops_attrs.c, ops_infer.c) share. */
#ifndef GAIO_MODEL_OPS_INTERNAL_H
#define GAIO_MODEL_OPS_INTERNAL_H

#include "model/graph.h"

/* Records "fn: node 'name' (Op): message" and returns st: every message about a node
 * names it the same way, so that a user can find it in the file. */
gaio_status gaio__node_fail(const char *fn, const mnode *n, gaio_status st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* In the inference files, where fn and n are the call's and the node's: fail naming
 * the node; return a failed status. */
#define FAIL(st, ...) gaio__node_fail(fn, n, (st), __VA_ARGS__)
#define TRY(x)                                  \
    do {                                        \
        gaio_status try_st_ = (x);              \
        if (try_st_ != GAIO_OK) return try_st_; \
    } while (0)

#endif
