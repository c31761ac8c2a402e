/* The model API in a build without ONNX support (no protoc-c, onnx.proto or
 * protobuf-c at build time): every call says so. */
#include <string.h>

#include "core/error.h"
#include "gaio/model.h"

#define NO_ONNX GAIO_FAIL(GAIO_ERR_NOT_SUPPORTED, "this libgaio was built without ONNX support (it needs "            \
                          "protobuf-c-compiler, libprotobuf-c-dev and libonnx-dev at build time)")

gaio_status gaio_model_load(const char *path, gaio_model **out) {
    (void)path;
    if (out) *out = NULL;
    return NO_ONNX;
}
gaio_status gaio_model_load_memory(const void *data, size_t size, gaio_model **out) {
    (void)data, (void)size;
    if (out) *out = NULL;
    return NO_ONNX;
}
gaio_status gaio_model_retain(gaio_model *m) {
    (void)m;
    return NO_ONNX;
}
gaio_status gaio_model_release(gaio_model *m) {
    (void)m;
    return GAIO_OK;
}
gaio_status gaio_model_summarize(const gaio_model *m, gaio_model_summary *out) {
    (void)m, (void)out;
    return NO_ONNX;
}
gaio_status gaio_model_input(const gaio_model *m, int32_t i, gaio_model_io *out) {
    (void)m, (void)i, (void)out;
    return NO_ONNX;
}
gaio_status gaio_model_output(const gaio_model *m, int32_t i, gaio_model_io *out) {
    (void)m, (void)i, (void)out;
    return NO_ONNX;
}
gaio_status gaio_model_node(const gaio_model *m, int32_t i, const char **name, const char **op_type) {
    (void)m, (void)i, (void)name, (void)op_type;
    return NO_ONNX;
}
gaio_status gaio_model_exec_create(gaio_model *m, gaio_context *ctx, int64_t batch, gaio_model_exec **out) {
    (void)m, (void)ctx, (void)batch;
    if (out) *out = NULL;
    return NO_ONNX;
}
gaio_status gaio_model_exec_release(gaio_model_exec *e) {
    (void)e;
    return GAIO_OK;
}
gaio_status gaio_model_run(gaio_model_exec *e, gaio_stream *stream, const gaio_tensor *inputs, int32_t ninputs,
                           const gaio_tensor *outputs, int32_t noutputs, gaio_future **done) {
    (void)e, (void)stream, (void)inputs, (void)ninputs, (void)outputs, (void)noutputs;
    if (done) *done = NULL;
    return NO_ONNX;
}
gaio_status gaio_model_exec_create_ex(gaio_model *m, gaio_context *ctx, const gaio_model_exec_options *options,
                                      gaio_model_exec **out) {
    (void)m, (void)ctx, (void)options;
    if (out) *out = NULL;
    return NO_ONNX;
}
gaio_status gaio_engine_build(gaio_model *m, gaio_context *ctx, const gaio_engine_options *options,
                              gaio_engine **out) {
    (void)m, (void)ctx, (void)options;
    if (out) *out = NULL;
    return NO_ONNX;
}
gaio_status gaio_engine_build_async(gaio_model *m, gaio_context *ctx, const gaio_engine_options *options,
                                    gaio_engine **out, gaio_future **built) {
    (void)m, (void)ctx, (void)options;
    if (out) *out = NULL;
    if (built) *built = NULL;
    return NO_ONNX;
}
gaio_status gaio_engine_retain(gaio_engine *e) {
    (void)e;
    return NO_ONNX;
}
gaio_status gaio_engine_release(gaio_engine *e) {
    (void)e;
    return GAIO_OK;
}
gaio_status gaio_engine_get_info(gaio_engine *e, gaio_engine_info *out) {
    (void)e, (void)out;
    return NO_ONNX;
}
gaio_status gaio_engine_model(gaio_engine *e, gaio_model **out) {
    (void)e;
    if (out) *out = NULL;
    return NO_ONNX;
}
gaio_status gaio_engine_input(gaio_engine *e, int32_t i, gaio_model_io *out) {
    (void)e, (void)i, (void)out;
    return NO_ONNX;
}
gaio_status gaio_engine_output(gaio_engine *e, int32_t i, gaio_model_io *out) {
    (void)e, (void)i, (void)out;
    return NO_ONNX;
}
gaio_status gaio_model_exec_set_shapes(gaio_model_exec *x, const gaio_engine_shape *shapes, int32_t nshapes) {
    (void)x, (void)shapes, (void)nshapes;
    return NO_ONNX;
}
gaio_status gaio_model_exec_input(gaio_model_exec *x, int32_t i, gaio_model_io *out) {
    (void)x, (void)i, (void)out;
    return NO_ONNX;
}
gaio_status gaio_model_exec_output(gaio_model_exec *x, int32_t i, gaio_model_io *out) {
    (void)x, (void)i, (void)out;
    return NO_ONNX;
}
gaio_status gaio_engine_get_step(gaio_engine *e, int32_t i, gaio_engine_step *out) {
    (void)e, (void)i, (void)out;
    return NO_ONNX;
}
gaio_status gaio_engine_save(gaio_engine *e, const char *path) {
    (void)e, (void)path;
    return NO_ONNX;
}
gaio_status gaio_engine_load(const char *path, gaio_context *ctx, gaio_engine **out) {
    (void)path, (void)ctx;
    if (out) *out = NULL;
    return NO_ONNX;
}
gaio_status gaio_engine_load_memory(const void *data, size_t size, gaio_context *ctx, gaio_engine **out) {
    (void)data, (void)size, (void)ctx;
    if (out) *out = NULL;
    return NO_ONNX;
}
gaio_status gaio_engine_create_exec(gaio_engine *e, gaio_model_exec **out) {
    (void)e;
    if (out) *out = NULL;
    return NO_ONNX;
}
gaio_status gaio_model_exec_engine(gaio_model_exec *x, gaio_engine **out) {
    (void)x;
    if (out) *out = NULL;
    return NO_ONNX;
}

gaio_status gaio_model_operator_info(int32_t i, gaio_model_operator *out) {
    (void)i;
    GAIO_REQUIRE_PTR(out);
    memset(out, 0, sizeof *out);
    return GAIO_FAIL(GAIO_ERR_NOT_SUPPORTED, "libgaio was built without ONNX support (protobuf-c): it has no operators");
}
