/* The DNN stage's library status, and what a build without the CUDA backend says
 * for the GPU parts. */
#include "dnn/dnn_internal.h"

#ifdef GAIO_HAVE_CUDA
#include "dnn/cuda/dnn_libs.h"
#endif

gaio_status gaio_dnn_library_status(gaio_dnn_library lib, const char **description) {
    GAIO_REQUIRE_PTR(description);
    *description = "";
    if (lib == GAIO_DNN_OPENBLAS) return gaio__openblas_load(__func__, description);
    if (lib == GAIO_DNN_ONEDNN) {
        gaio_status st = gaio__onednn_load(__func__, description);
        if (st != GAIO_OK) *description = gaio_last_error();
        return st;
    }
    if (lib != GAIO_DNN_CUDNN && lib != GAIO_DNN_CUBLAS && lib != GAIO_DNN_CUBLASLT)
        return GAIO_FAIL(GAIO_ERR_INVALID_ARG, "lib %d is not a gaio_dnn_library", (int)lib);
#ifdef GAIO_HAVE_CUDA
    return gaio__dnn_cuda_library_status((int)lib, description);
#else
    *description = "this libgaio was built without the CUDA backend";
    return GAIO_FAIL(GAIO_ERR_NOT_SUPPORTED, "%s", *description);
#endif
}

#ifndef GAIO_HAVE_CUDA
static gaio_status no_cuda(const char *fn) {
    return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn, "this libgaio was built without the CUDA backend");
}
gaio_status gaio__gemm_cuda(void *native_stream, const gaio__gemm_args *g, gaio_stream *stream) {
    (void)native_stream, (void)g, (void)stream;
    return no_cuda("gaio_gemm");
}
gaio_status gaio__gemm_cuda_ready(const char *fn) { return no_cuda(fn); }
gaio_status gaio__conv_cuda_plan(const char *fn, gaio_stream *stream, const gaio__conv_args *a, int tune,
                                 gaio__conv_plan **plan, gaio_conv2d_info *info) {
    (void)stream, (void)a, (void)tune, (void)info;
    *plan = NULL;
    return no_cuda(fn);
}
gaio__conv_fusion gaio__conv_plan_fusion(const gaio__conv_plan *p) {
    (void)p;
    gaio__conv_fusion f = {.bias = false};
    return f;
}
bool gaio__conv_plan_graph_hazard(const gaio__conv_plan *p) {
    (void)p;
    return false;
}
void gaio__conv_plan_release(gaio__conv_plan *p) { (void)p; }
gaio_status gaio__conv_cuda_run(void *native_stream, const gaio__conv_plan *p, const gaio__conv_args *a,
                                gaio_stream *stream) {
    (void)native_stream, (void)p, (void)a, (void)stream;
    return no_cuda("gaio_conv2d");
}
gaio_status gaio__conv_plan_export(const char *fn, gaio_context *ctx, const gaio__conv_plan *p, void **data,
                                   size_t *size) {
    (void)ctx, (void)p;
    *data = NULL, *size = 0;
    return no_cuda(fn);
}
gaio_status gaio__conv_plan_import(const char *fn, gaio_context *ctx, const void *data, size_t size,
                                   gaio__conv_plan **out) {
    (void)ctx, (void)data, (void)size;
    *out = NULL;
    return no_cuda(fn);
}
static gaio_status plan_cache(const char *fn, gaio_context *ctx, const char *path, size_t *count) {
    if (count) *count = 0;
    if (!ctx) return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "ctx is NULL");
    if (!path || !path[0]) return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "path is NULL or empty");
    return no_cuda(fn);
}
gaio_status gaio_dnn_plan_cache_save(gaio_context *ctx, const char *path, size_t *count) {
    return plan_cache(__func__, ctx, path, count);
}
gaio_status gaio_dnn_plan_cache_load(gaio_context *ctx, const char *path, size_t *count) {
    return plan_cache(__func__, ctx, path, count);
}
gaio_status gaio_dnn_cudnn_handle(gaio_stream *stream, void **handle) {
    (void)stream;
    GAIO_REQUIRE_PTR(handle);
    *handle = NULL;
    return no_cuda(__func__);
}
gaio_status gaio_dnn_cublas_handle(gaio_stream *stream, void **handle) {
    (void)stream;
    GAIO_REQUIRE_PTR(handle);
    *handle = NULL;
    return no_cuda(__func__);
}
#endif
