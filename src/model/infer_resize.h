/* Resize and Upsample's output shape and plan (src/model/infer_resize.c), from the
 * constant inputs ops_infer.c reads, and their run by gaio_resize2d (exec_resize.c). */
#ifndef GAIO_MODEL_INFER_RESIZE_H
#define GAIO_MODEL_INFER_RESIZE_H

#include "gaio/dnn.h"
#include "model/graph.h"

/* A node's scales, sizes and roi as the model gives them (count -1: not given). */
typedef struct gaio__resize_inputs {
    int32_t nscales, nsizes, nroi;
    float scales[GAIO_MODEL_MAX_NDIM];
    int64_t sizes[GAIO_MODEL_MAX_NDIM];
    float roi[2 * GAIO_MODEL_MAX_NDIM];
} gaio__resize_inputs;

/* Node n's output dims (out[4], -1 for a symbolic one kept) from its 4-D input x's,
 * as ONNX computes them (floor(in * scale), or sizes with keep_aspect_ratio_policy),
 * and how it runs, in n->a: the whole factors (rs_factor) of a nearest resize that is
 * a broadcast copy, else rs_general with gaio_resize2d's scales and roi. Refuses
 * (GAIO_ERR_NOT_SUPPORTED) resizing the batch or the channels, a symbolic dimension,
 * antialiasing by more taps than gaio_resize2d takes; GAIO_ERR_INVALID_ARG for what
 * ONNX forbids. */
gaio_status gaio__resize_infer(const char *fn, const mgraph *g, mnode *n, const mvalue *x, const gaio__resize_inputs *in,
                               int64_t out[4]);

/* Enqueues node n (rs_general) on s: y = x resized by gaio_resize2d. */
gaio_status gaio__exec_resize2d(gaio_stream *s, const mnode *n, const gaio_tensor *x, const gaio_tensor *y);

#endif
