/* gaio_engine behind the handle, as the builder (engine.c), the execution contexts
 * (exec.c) and the engine file (engine_file.c) share it.
 *
 * An engine is everything a build decided for one context's device: the plan's steps,
 * where every value lives (xvalue: a weight at an offset of the weights buffer, an
 * activation at an offset of each execution context's arena, or a caller's tensor),
 * the weights on the device, and the convolution plans it keeps alive. It is
 * immutable once built: execution contexts read it from any thread. */
#ifndef GAIO_MODEL_ENGINE_INTERNAL_H
#define GAIO_MODEL_ENGINE_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>

#include "core/ref.h"
#include "dnn/dnn_internal.h"
#include "gaio/model.h"
#include "model/model_internal.h"
#include "model/plan.h"

#define GAIO_ENGINE_ALIGN 256 /* offsets in the weights and arena buffers: cuDNN plans are keyed by alignment */

/* Where a value lives on the device. */
typedef enum xmem {
    XM_NONE = 0,   /* a caller's input, or a view of another value (root) */
    XM_WEIGHT = 1, /* in the engine's weights at off */
    XM_ARENA = 2   /* in the context's arena at off: intermediates, staged inputs, copied views */
} xmem;

typedef struct xvalue {
    int32_t ndim;
    int64_t dims[GAIO_MODEL_MAX_NDIM]; /* the batch resolved */
    gaio_dtype dtype;
    xmem mem;
    size_t off;
    int32_t root;  /* the value whose memory this is (itself unless a view) */
    bool nhwc;     /* 4-D and stored channels innermost */
    bool staged;   /* a graph input copied in at each run (another precision or layout, or a graph) */
    int32_t input; /* the graph input index this value is, or -1 */
    /* NHWC with room for cpitch channels per pixel (0: packed): a staged image input
     * and its convolutions' weights, those past dims[1] zeros, so that a GPU runs the
     * stem (3 channels) as an 8-channel convolution on tensor cores (engine.c pad_stems);
     * or, vndim 0 and root another value, the channels from voff of the root's cpitch
     * (a Concat input written in place: engine.c concat_in_place). */
    int32_t cpitch;
    /* A strided view of root (model/views.c), vndim > 0: the memory is vdims by vstrides
     * (elements) from element voff of the root; the value's dimensions are products of
     * consecutive ones of these, so that only steps that read any strides, and do not
     * mind how their leading dimensions are split (attention), read it. */
    int32_t vndim;
    int64_t vdims[GAIO_TENSOR_MAX_NDIM], vstrides[GAIO_TENSOR_MAX_NDIM];
    int64_t voff;
} xvalue;

#define GAIO_ENGINE_KERNEL_TEXT 96

/* In gaio_engine.flags, beside the options' bits: precision F16_FAST (engine files keep
 * the flags, so a loaded engine's convolutions accumulate as the built one's did). */
#define GAIO__ENGINE_F16_FAST (1u << 31)

struct gaio_engine {
    gaio_ref ref;
    gaio_model *model;  /* the graph; a loaded engine's is rebuilt from the file */
    gaio_context *ctx;
    bool gpu;           /* ctx is a CUDA context */
    /* What the build resolved of its options. */
    int64_t batch;      /* 0 when the model has no symbolic dimension */
    bool f16, nhwc;
    bool cuda_graph;    /* contexts capture the steps into a CUDA graph */
    uint32_t flags; /* the options' GAIO_ENGINE_* flags, and GAIO__ENGINE_F16_FAST */
    /* The plan. */
    xplan plan;
    int32_t nv;         /* the graph's values, then the planner's constants */
    xvalue *v;
    bool *copy;         /* per step: a view that needs a row-major copy of an NHWC input */
    gaio_buffer *weights;
    size_t weight_bytes, arena_bytes;
    gaio__conv_plan **conv_plans;              /* per step: the plan a CUDA convolution runs (a reference), or NULL */
    /* Host engines, per step: the convolution's constant weights in oneDNN's layout (a
     * reference), or NULL (not packed: the call reorders them); NULL array until packed. */
    gaio__conv_cpu_weights **packed;
    char (*kernel)[GAIO_ENGINE_KERNEL_TEXT];   /* per step: what runs a convolution, for gaio_engine_get_step */
    double build_seconds;
    bool loaded;
    /* A shape profile (gaio_engine_shape's min_dims / max_dims; profile.c): per graph
     * input the range of each dimension, NULL without one. The engines of other shapes
     * in it are built on first use from source with family_opts, and kept in family. */
    int64_t (*prof_min)[GAIO_MODEL_MAX_NDIM], (*prof_max)[GAIO_MODEL_MAX_NDIM];
    gaio_model *source;
    gaio_engine_options family_opts;
    pthread_mutex_t family_lock;
    struct gaio__shape_engine *family;
    /* A build in progress (gaio_engine_build_async): calls wait on cond until it ends. */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool building;
    gaio_status build_status;
    char build_msg[GAIO_MSG_MAX];
};

/* The engine once any build has ended: GAIO_OK, or the build's failure (message set
 * for fn). */
gaio_status gaio__engine_ready(const char *fn, gaio_engine *e);

/* gaio_engine_build, its failures naming fn. */
gaio_status gaio__engine_build(const char *fn, gaio_model *m, gaio_context *ctx, const gaio_engine_options *options,
                               gaio_engine **out);

/* An engine with nothing planned yet, holding m and ctx (NULL out of memory). */
gaio_engine *gaio__engine_new(gaio_model *m, gaio_context *ctx);
/* Frees what the engine holds (called on the last release, or on a failed build/load). */
void gaio__engine_free(gaio_engine *e);

/* The dtype of an ONNX element type the executor runs (F16 or F32). */
/* Turns the engine's CUDA graphs off where a kept cuDNN plan must not be captured
 * (gaio__conv_plan_graph_hazard); after its plans are made or loaded. */
void gaio__engine_graph_hazards(gaio_engine *e);
gaio_dtype gaio__engine_dtype_of(int32_t elem);
/* Whether values of ONNX element type elem are floats (f16 engines make them f16). */
bool gaio__engine_is_float(int32_t elem);
size_t gaio__xvalue_count(const xvalue *x);
size_t gaio__xvalue_bytes(const xvalue *x);

/* The value a step reads at input slot j (0 .. n->nin + GAIO__STEP_SLOTS - 1), or -1:
 * see engine.c. */
#define GAIO__STEP_SLOTS 4
int32_t gaio__step_value(const xstep *sp, int32_t j);

/* Places the activations by lifetime into e->arena_bytes (offsets in e->v). */
gaio_status gaio__engine_place_arena(const char *fn, gaio_engine *e);

/* Uploads `bytes` of host weights (already in final form) into a new e->weights,
 * blocking until they are on the device. */
gaio_status gaio__engine_upload(const char *fn, gaio_engine *e, const void *host, size_t bytes);

/* ---- execution (exec.c): what the builder needs of it ---- */

/* Host engines: packs every convolution's constant weights once into the layout its
 * oneDNN primitive takes (gaio__conv2d_pack_weights) over the given arena; a no-op on
 * a GPU. A step left unpacked reorders its weights at each call, as before. */
gaio_status gaio__engine_pack_convs(gaio_engine *e, gaio_stream *s, gaio_buffer *arena);
/* The same over a scratch arena and stream of its own (a loaded engine's). */
gaio_status gaio__engine_pack_host(gaio_engine *e);

/* Runs gaio_conv2d_prepare for every convolution step over the given arena (a caller's
 * input read directly is skipped: its plan depends on that buffer's alignment), keeping
 * each CUDA plan in e->conv_plans and what runs it in e->kernel. */
gaio_status gaio__engine_prepare_convs(gaio_engine *e, gaio_stream *s, gaio_buffer *arena);

/* Whether the executor runs every node, graph input and output of g;
 * GAIO_ERR_NOT_SUPPORTED naming the first it cannot run otherwise (a build checks the
 * model, a load the graph the file holds). */
gaio_status gaio__engine_check_graph(const char *fn, const mgraph *g);

/* ---- shape profiles (profile.c) ---- */

/* Whether options give any input a range (min_dims / max_dims not all 0). */
bool gaio__profile_given(const gaio_engine_options *o);
/* Checks options' ranges against graph g (the model's, before any shapes): each
 * dimension min <= dims <= max, fixed ones equal. */
gaio_status gaio__profile_check(const char *fn, const mgraph *g, const gaio_engine_options *o);
/* Keeps options' profile in built engine e (whose model came from source), checking
 * that the model's shapes infer at the range's ends. */
gaio_status gaio__profile_set(const char *fn, gaio_engine *e, gaio_model *source, const gaio_engine_options *o);
void gaio__profile_free(gaio_engine *e);
/* The engine of e's family for input shapes dims (one row per graph input): e itself
 * for its own, else one found or built (a borrowed pointer, valid while e is);
 * GAIO_ERR_INVALID_ARG for shapes outside the profile. */
gaio_status gaio__profile_engine(const char *fn, gaio_engine *e, int64_t (*dims)[GAIO_MODEL_MAX_NDIM],
                                 gaio_engine **out);

#endif
