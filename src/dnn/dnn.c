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
