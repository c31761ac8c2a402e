/* The normalizations' step (norm_ops.h): one gaio_norm. A LayerNormalization whose
 * Mean or InvStdDev is used runs one step per output (plan.c), each step writing its
 * own: the statistics cost a second read of X, and only where a model asks for them
 * (exported vision models use Y alone). */
#include "model/norm_ops.h"

gaio_status gaio__exec_norm(gaio_stream *s, const mnode *n, int32_t out, const gaio_tensor *x,
                            const gaio_tensor *scale, const gaio_tensor *bias, const gaio_tensor *y) {
    gaio_norm_params p = {GAIO_NORM_LAYER, (int32_t)n->a.axis, 0, n->a.epsilon};
    if (n->op == OP_GROUP_NORM) p.kind = GAIO_NORM_GROUP, p.groups = (int32_t)n->a.num_groups;
    if (n->op == OP_INSTANCE_NORM) p.kind = GAIO_NORM_INSTANCE;
    return gaio_norm(s, x, scale, bias, out == 0 ? y : NULL, out == 1 ? y : NULL, out == 2 ? y : NULL, &p);
}
