/* A convolution as a cuDNN operation graph, and the execution plan cuDNN's heuristics
 * pick for it (src/dnn/cuda/cudnn_graph.c). Apart from the plan cache so that the
 * graph's construction (descriptor by descriptor, through the backend API) reads on
 * its own. */
#ifndef GAIO_DNN_CUDA_CUDNN_GRAPH_H
#define GAIO_DNN_CUDA_CUDNN_GRAPH_H

#include <stdbool.h>
#include <stdint.h>

#include "dnn/cuda/dnn_libs.h"
#include "dnn/dnn_internal.h"

/* The tensors' unique ids in every gaio graph (the variant pack names them). */
enum { CONV_UID_X = 1, CONV_UID_W = 2, CONV_UID_Y = 3, CONV_UID_BIAS = 4, CONV_UID_RES = 5 };

/* What a plan depends on: everything of the arguments but the addresses, and the
 * addresses' alignment (plans may assume it). Compared with memcmp: zeroed first. */
typedef struct conv_key {
    int32_t dtype, groups, stride[2], pad[4], dilation[2];
    int64_t n, c, h, w, k, r, s, p, q;
    int64_t xs[4], ws[4], ys[4], rs[4];
    int32_t has_bias, has_res, res_is_y, has_act, act_op, f16_accumulation;
    float act_alpha, act_beta;
    int32_t align[5]; /* bytes, by uid - 1 */
    /* Backward data (gaio_conv_transpose2d): x is written from y. In what was the
     * struct's tail padding, so that the key's size and older plan files stay. */
    int32_t transposed;
} conv_key;

void gaio__conv_key_make(const gaio__conv_args *a, conv_key *k);
/* The logical dimensions of x, w and y. */
void gaio__conv_key_dims(const conv_key *k, int64_t xd[4], int64_t wd[4], int64_t yd[4]);

/* A finalized execution plan and what gaio needs to run it. */
typedef struct conv_built {
    cudnnBackendDescriptor_t plan;
    int64_t workspace;
    gaio__conv_fusion fusion;
    bool cuda_graph_native; /* the engine's behaviour notes say so */
    char engine[64];
} conv_built;

#define MAX_TUNE 32

/* Builds the graph of k and finalizes the first `tune` plans the heuristics offer that
 * keep gaio's precision and finalize (all of the epilogue fused, the activation where
 * cuDNN has it; else the convolution alone with the residual as its beta = 1 over y);
 * of several, keeps the fastest (gaio__conv_tune). handle is the context's building
 * handle; the device's context is current. */
gaio_status gaio__conv_graph_build(const char *fn, const gaio_cudnn_table *t, cudnnHandle_t handle,
                                   const conv_key *k, int tune, conv_built *out);

/* Runs b on h's stream: ptrs are x, w, y, bias, residual (the last two may be NULL).
 * *call names the cuDNN call that failed. */
cudnnStatus_t gaio__conv_execute(const gaio_cudnn_table *t, cudnnHandle_t h, const conv_built *b,
                                 void *const ptrs[5], void *workspace, const char **call);

/* Times each of n candidate plans of k on scratch tensors (src/dnn/cuda/conv_tune.c)
 * and sets *best to the fastest of those a stream capture takes (any, if none does).
 * The caller is in the exclusive section (gaio__native_exclusive_begin, core/native.h). */
gaio_status gaio__conv_tune(const char *fn, const gaio_cudnn_table *t, cudnnHandle_t h, const conv_key *k,
                            const conv_built *cands, int n, int *best);

/* A cuDNN failure of `call` as GAIO_ERR_DRIVER (GAIO_ERR_NOT_SUPPORTED for cuDNN's
 * NOT_SUPPORTED family), with cuDNN's own last message. */
gaio_status gaio__cudnn_fail(const char *fn, const gaio_cudnn_table *t, const char *call, cudnnStatus_t r);

#endif
