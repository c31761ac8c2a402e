/* oneDNN as the host convolution sees it (src/dnn/cpu/onednn.c): every dnnl_* entry
 * point it uses, resolved with dlopen/dlsym from libdnnl.so.2, so that libgaio links no
 * oneDNN. The types come from oneDNN's own headers (libdnnl-dev) when the build has
 * them (GAIO_HAVE_ONEDNN_H); without them gaio__onednn_load says GAIO_ERR_NOT_SUPPORTED
 * and the host convolution always takes gaio's own path (conv_gemm.h), as it does when
 * libdnnl.so.2 is missing or GAIO_DNN_NO_ONEDNN=1 switches oneDNN off. */
#ifndef GAIO_DNN_CPU_ONEDNN_H
#define GAIO_DNN_CPU_ONEDNN_H

#include <stdbool.h>

#include "dnn/dnn_internal.h"

/* For gaio_conv2d_prepare on the host: makes (or finds in the cache) oneDNN's primitive
 * of the convolution a, without running it, and writes its implementation ("oneDNN
 * brg:avx2 ...") to impl (may be NULL); where oneDNN is not there (or has no
 * implementation), names gaio's own path instead ("gaio im2col + OpenBLAS sgemm"). */
gaio_status gaio__conv_cpu_prepare(const gaio__conv_args *a, char *impl, size_t size);

/* Whether the host convolution may use oneDNN: loaded (gaio__onednn_load would succeed)
 * and not switched off by GAIO_DNN_NO_ONEDNN. Sets no error. */
bool gaio__onednn_ready(void);

#ifdef GAIO_HAVE_ONEDNN_H
#include <oneapi/dnnl/dnnl.h>

/* Declared from the headers' own prototypes, so that a signature cannot drift. */
#define GAIO__DNNL_FN(name) __typeof__(dnnl_##name) *name
typedef struct gaio__dnnl_api {
    GAIO__DNNL_FN(version);
    GAIO__DNNL_FN(engine_create);
    GAIO__DNNL_FN(engine_destroy);
    GAIO__DNNL_FN(stream_create);
    GAIO__DNNL_FN(stream_destroy);
    GAIO__DNNL_FN(stream_wait);
    GAIO__DNNL_FN(memory_desc_init_by_strides);
    GAIO__DNNL_FN(memory_desc_init_by_tag);
    GAIO__DNNL_FN(memory_desc_get_size);
    GAIO__DNNL_FN(memory_desc_equal);
    GAIO__DNNL_FN(memory_create);
    GAIO__DNNL_FN(memory_destroy);
    GAIO__DNNL_FN(dilated_convolution_forward_desc_init);
    GAIO__DNNL_FN(dilated_deconvolution_forward_desc_init);
    GAIO__DNNL_FN(primitive_attr_create);
    GAIO__DNNL_FN(primitive_attr_destroy);
    GAIO__DNNL_FN(primitive_attr_set_scratchpad_mode);
    GAIO__DNNL_FN(primitive_attr_set_post_ops);
    GAIO__DNNL_FN(post_ops_create);
    GAIO__DNNL_FN(post_ops_destroy);
    GAIO__DNNL_FN(post_ops_append_sum);
    GAIO__DNNL_FN(post_ops_append_eltwise);
    GAIO__DNNL_FN(primitive_desc_create);
    GAIO__DNNL_FN(primitive_desc_destroy);
    GAIO__DNNL_FN(primitive_desc_query);
    GAIO__DNNL_FN(primitive_desc_query_md);
    GAIO__DNNL_FN(reorder_primitive_desc_create);
    GAIO__DNNL_FN(primitive_create);
    GAIO__DNNL_FN(primitive_destroy);
    GAIO__DNNL_FN(primitive_execute);
} gaio__dnnl_api;
#undef GAIO__DNNL_FN

/* The resolved entry points and the process's CPU engine (thread-safe: oneDNN's
 * engines may create and run primitives from any thread). Only after
 * gaio__onednn_load returned GAIO_OK. */
extern gaio__dnnl_api gaio__dnnl;
extern dnnl_engine_t gaio__dnnl_engine;

/* "unimplemented", "out_of_memory" ... for messages. */
const char *gaio__dnnl_status_text(dnnl_status_t st);
#endif

#endif
