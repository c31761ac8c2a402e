/* Per-stream library state on CUDA: see dnn_state.h. */
#include "dnn/cuda/dnn_state.h"

#include <stdlib.h>

#include "core/error.h"
#include "core/native.h"
#include "core/object.h"
#include "core/stream_ext.h"
#include "dnn/cuda/dnn_driver.h"
#include "dnn/cuda/gemm_plans.h"
#include "gaio/dnn.h"
#include "gaio/stream.h"

static void state_free(void *value, gaio_stream *stream) {
    dnn_stream_state *s = value;
    /* Destroying a cuBLASLt handle synchronizes the device, which ends any stream
     * capture under way in another thread in failure: not while one is. */
    gaio__native_exclusive_begin(GAIO_DEVICE_CUDA);
    gaio__gemm_plans_free(s);
    /* The stream's work has all run (its last reference went): handles and workspaces
     * are idle. Destroying a handle needs no particular context in cuDNN 9 / cuBLAS 12+. */
    if (s->cudnn) {
        const gaio_cudnn_table *t = gaio__cudnn("gaio_stream_release");
        if (t) t->cudnnDestroy(s->cudnn);
    }
    if (s->cublas) {
        const gaio_cublas_table *t = gaio__cublas("gaio_stream_release");
        if (t) t->cublasDestroy_v2(s->cublas);
    }
    if (s->lt) {
        const gaio_cublaslt_table *t = gaio__cublaslt("gaio_stream_release");
        if (t) t->cublasLtDestroy(s->lt);
    }
    /* cuMemFree, not the context's pool: CUDA graphs captured on this stream (a model
     * execution context's) embed the workspace and may still be running on other
     * streams; cuMemFree waits for them, a pool would hand the block out at once. */
    if (s->workspace.ptr || s->nretired) {
        const gaio_dnn_cu_table *cu = gaio__dnn_cu("gaio_stream_release");
        gaio__native_scope sc;
        if (cu && gaio__native_enter("gaio_stream_release", stream->ctx, &sc) == GAIO_OK) {
            if (s->workspace.ptr) cu->cuMemFree((CUdeviceptr)(uintptr_t)s->workspace.ptr);
            for (int i = 0; i < s->nretired; i++) cu->cuMemFree((CUdeviceptr)(uintptr_t)s->retired[i].ptr);
            gaio__native_exit(&sc);
        }
    }
    gaio__native_exclusive_end(GAIO_DEVICE_CUDA);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

dnn_stream_state *gaio__dnn_state(const char *fn, gaio_stream *stream) {
    dnn_stream_state *s = gaio__stream_ext_get(stream, GAIO_STREAM_EXT_DNN);
    if (s) return s;
    dnn_stream_state *mine = calloc(1, sizeof *mine);
    if (!mine) {
        gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory for the stream's library state");
        return NULL;
    }
    mine->stream = stream;
    pthread_mutex_init(&mine->lock, NULL);
    s = gaio__stream_ext_set(stream, GAIO_STREAM_EXT_DNN, mine, state_free);
    if (s != mine) { /* another thread's came first */
        pthread_mutex_destroy(&mine->lock);
        free(mine);
    }
    return s;
}

gaio_status gaio__dnn_cublaslt(const char *fn, dnn_stream_state *s, cublasLtHandle_t *out) {
    if (s->lt) {
        *out = s->lt;
        return GAIO_OK;
    }
    const gaio_cublaslt_table *t = gaio__cublaslt(fn);
    if (!t) return GAIO_ERR_DRIVER;
    gaio_status st = GAIO_OK;
    pthread_mutex_lock(&s->lock);
    if (!s->lt) {
        cublasStatus_t r = t->cublasLtCreate(&s->lt);
        if (r != CUBLAS_STATUS_SUCCESS) {
            s->lt = NULL;
            st = gaio__fail(GAIO_ERR_DRIVER, fn, "cublasLtCreate failed: %s", t->cublasLtGetStatusName(r));
        }
    }
    pthread_mutex_unlock(&s->lock);
    *out = s->lt;
    return st;
}

static gaio_status make_cudnn(const char *fn, dnn_stream_state *s, void *native) {
    const gaio_cudnn_table *t = gaio__cudnn(fn);
    if (!t) return GAIO_ERR_DRIVER;
    cudnnStatus_t r = t->cudnnCreate(&s->cudnn);
    if (r == CUDNN_STATUS_SUCCESS) r = t->cudnnSetStream(s->cudnn, (cudaStream_t)native);
    if (r != CUDNN_STATUS_SUCCESS) {
        if (s->cudnn) t->cudnnDestroy(s->cudnn);
        s->cudnn = NULL;
        return gaio__fail(GAIO_ERR_DRIVER, fn, "cudnnCreate / cudnnSetStream failed: %s", t->cudnnGetErrorString(r));
    }
    return GAIO_OK;
}

static gaio_status make_cublas(const char *fn, dnn_stream_state *s, void *native) {
    const gaio_cublas_table *t = gaio__cublas(fn);
    if (!t) return GAIO_ERR_DRIVER;
    cublasStatus_t r = t->cublasCreate_v2(&s->cublas);
    if (r == CUBLAS_STATUS_SUCCESS) r = t->cublasSetStream_v2(s->cublas, (cudaStream_t)native);
    if (r != CUBLAS_STATUS_SUCCESS) {
        if (s->cublas) t->cublasDestroy_v2(s->cublas);
        s->cublas = NULL;
        return gaio__fail(GAIO_ERR_DRIVER, fn, "cublasCreate / cublasSetStream failed: %s", t->cublasGetStatusName(r));
    }
    return GAIO_OK;
}

gaio_status gaio__dnn_cudnn(const char *fn, dnn_stream_state *s, void *native, cudnnHandle_t *out) {
    if (s->cudnn) {
        *out = s->cudnn;
        return GAIO_OK;
    }
    gaio_status st = GAIO_OK;
    pthread_mutex_lock(&s->lock);
    if (!s->cudnn) st = make_cudnn(fn, s, native);
    *out = s->cudnn;
    pthread_mutex_unlock(&s->lock);
    return st;
}

gaio_status gaio__dnn_workspace(const char *fn, dnn_stream_state *s, size_t bytes, void **ptr) {
    if (bytes > s->workspace_size) {
        size_t want = s->workspace_size * 2 > bytes ? s->workspace_size * 2 : bytes;
        if (s->workspace.ptr && s->nretired == (int)(sizeof s->retired / sizeof s->retired[0]))
            return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "the stream's workspace grew too often");
        const gaio_dnn_cu_table *cu = gaio__dnn_cu(fn);
        if (!cu) return GAIO_ERR_DRIVER;
        CUdeviceptr p = 0;
        CUresult r = cu->cuMemAlloc(&p, want); /* the device's context is current: inside a native function */
        if (r != CUDA_SUCCESS) return gaio__dnn_cu_fail(fn, "cuMemAlloc (the stream's workspace)", r);
        gaio__native_mem m = {(void *)(uintptr_t)p, want, GAIO_MEM_DEVICE};
        if (s->workspace.ptr) s->retired[s->nretired++] = s->workspace;
        s->workspace = m;
        s->workspace_size = want;
    }
    *ptr = s->workspace.ptr;
    return GAIO_OK;
}

/* ---- the public getters: the caller's thread, so the context is entered here ---- */

static gaio_status get_handle(const char *fn, gaio_stream *stream, void **handle, bool cudnn) {
    GAIO_REQUIRE_PTR(handle);
    *handle = NULL;
    GAIO_REQUIRE_PTR(stream);
    if (stream->ctx->be->kind != GAIO_DEVICE_CUDA)
        return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn, "stream is on the host: library handles are CUDA's");
    dnn_stream_state *s = gaio__dnn_state(fn, stream);
    if (!s) return GAIO_ERR_NO_MEMORY;
    void **slot = cudnn ? (void **)&s->cudnn : (void **)&s->cublas;
    gaio_status st = GAIO_OK;
    pthread_mutex_lock(&s->lock);
    if (!*slot) {
        gaio__native_scope sc;
        st = gaio__native_enter(fn, stream->ctx, &sc);
        if (st == GAIO_OK) {
            st = (cudnn ? make_cudnn : make_cublas)(fn, s, gaio__native_stream(stream));
            gaio__native_exit(&sc);
        }
    }
    *handle = *slot;
    pthread_mutex_unlock(&s->lock);
    return st;
}

gaio_status gaio_dnn_cudnn_handle(gaio_stream *stream, void **handle) {
    return get_handle(__func__, stream, handle, true);
}

gaio_status gaio_dnn_cublas_handle(gaio_stream *stream, void **handle) {
    return get_handle(__func__, stream, handle, false);
}
