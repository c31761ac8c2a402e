/* Picking the fastest of cuDNN's candidate plans for a shape by running each (what
 * PyTorch's cudnn.benchmark does): the heuristics' first choice is not always the
 * fastest (ResNet-50's 7x7 stem on an H100 ran 2x slower than the best).
 *
 * On scratch tensors of the key's shapes, on a private stream with the building
 * handle, so that nothing of the user's is touched or ordered after it. The scratch is
 * zeroed: values do not change a convolution's time. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "dnn/cuda/cudnn_graph.h"
#include "dnn/cuda/dnn_driver.h"

#define WARMUP 2
#define RUNS 5

/* Bytes from element [0, 0, 0, 0] to one past the last of dims with strides. */
static size_t span(const int64_t *dims, const int64_t *strides, size_t esize) {
    int64_t last = 0;
    for (int i = 0; i < 4; i++) last += (dims[i] - 1) * strides[i];
    return (size_t)(last + 1) * esize;
}

/* Whether plan b can be captured into a CUDA graph: run once into a trial capture of
 * stream. Engines that spread work over cuDNN's internal streams synchronize the
 * device, which no capture survives, and which would also block the submitting thread
 * and break other threads' captures at run time. The caller holds gaio's capture lock
 * alone, so no capture of anyone else's is under way. */
static bool capturable(const gaio_dnn_cu_table *cu, const gaio_cudnn_table *t, cudnnHandle_t h, const conv_built *b,
                       void *const ptrs[5], void *workspace, CUstream stream) {
    if (cu->cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_RELAXED) != CUDA_SUCCESS) return false;
    const char *call = NULL;
    cudnnStatus_t cr = gaio__conv_execute(t, h, b, ptrs, workspace, &call);
    CUgraph g = NULL;
    CUresult r = cu->cuStreamEndCapture(stream, &g);
    if (g) cu->cuGraphDestroy(g);
    return cr == CUDNN_STATUS_SUCCESS && r == CUDA_SUCCESS && g != NULL;
}

/* RUNS copies of `bytes` from src to dst on stream, timed: *ms in all. */
static gaio_status time_copy(const char *fn, const gaio_dnn_cu_table *cu, CUstream stream, CUevent ev[2],
                             CUdeviceptr dst, CUdeviceptr src, size_t bytes, float *ms) {
    CUresult r = cu->cuMemcpyAsync(dst, src, bytes, stream); /* warm-up */
    if (r == CUDA_SUCCESS) r = cu->cuEventRecord(ev[0], stream);
    for (int j = 0; j < RUNS && r == CUDA_SUCCESS; j++) r = cu->cuMemcpyAsync(dst, src, bytes, stream);
    if (r == CUDA_SUCCESS) r = cu->cuEventRecord(ev[1], stream);
    if (r == CUDA_SUCCESS) r = cu->cuStreamSynchronize(stream);
    if (r == CUDA_SUCCESS) r = cu->cuEventElapsedTime(ms, ev[0], ev[1]);
    return r == CUDA_SUCCESS ? GAIO_OK : gaio__dnn_cu_fail(fn, "timing a copy of y (cuMemcpyAsync / cuEventRecord)", r);
}

gaio_status gaio__conv_tune(const char *fn, const gaio_cudnn_table *t, cudnnHandle_t h, const conv_key *k,
                            const conv_built *cands, int n, int *best) {
    *best = 0;
    const gaio_dnn_cu_table *cu = gaio__dnn_cu(fn);
    if (!cu) return GAIO_ERR_DRIVER;
    size_t e = k->dtype == GAIO_DTYPE_F16 ? 2 : 4;
    int64_t xd[4], wd[4], yd[4];
    gaio__conv_key_dims(k, xd, wd, yd);
    size_t sizes[5] = {span(xd, k->xs, e), span(wd, k->ws, e), span(yd, k->ys, e), k->has_bias ? (size_t)k->k * e : 0,
                       k->has_res && !k->res_is_y ? span(yd, k->rs, e) : 0};
    size_t ws = 0;
    for (int i = 0; i < n; i++)
        if ((size_t)cands[i].workspace > ws) ws = (size_t)cands[i].workspace;
    CUdeviceptr mem[6] = {0};
    CUstream stream = NULL;
    CUevent ev[2] = {NULL, NULL};
    gaio_status st = GAIO_OK;
    CUresult r = CUDA_SUCCESS;
    /* Everything on a private non-blocking stream: the legacy stream would join (and
     * so break) other threads' stream captures. */
    const char *call = "cuStreamCreateWithPriority";
    r = cu->cuStreamCreateWithPriority(&stream, CU_STREAM_NON_BLOCKING, 0);
    for (int i = 0; i < 6 && r == CUDA_SUCCESS; i++) {
        size_t bytes = i < 5 ? sizes[i] : ws;
        if (!bytes) continue;
        call = "cuMemAlloc (scratch tensors to time plans on)";
        r = cu->cuMemAlloc(&mem[i], bytes);
        /* The alignment the plans were built for holds: allocations are 256-byte aligned. */
        if (r == CUDA_SUCCESS) r = cu->cuMemsetD8Async(mem[i], 0, bytes, stream);
    }
    if (r == CUDA_SUCCESS) {
        call = "cuEventCreate";
        r = cu->cuEventCreate(&ev[0], CU_EVENT_DEFAULT);
        if (r == CUDA_SUCCESS) r = cu->cuEventCreate(&ev[1], CU_EVENT_DEFAULT);
    }
    if (r == CUDA_SUCCESS) {
        call = "cuStreamSynchronize (scratch zeroed)";
        r = cu->cuStreamSynchronize(stream);
    }
    if (r != CUDA_SUCCESS) st = gaio__dnn_cu_fail(fn, call, r);
    if (st == GAIO_OK) {
        cudnnStatus_t cr = t->cudnnSetStream(h, stream);
        if (cr != CUDNN_STATUS_SUCCESS) st = gaio__cudnn_fail(fn, t, "cudnnSetStream", cr);
    }
    void *ptrs[5] = {(void *)(uintptr_t)mem[0], (void *)(uintptr_t)mem[1], (void *)(uintptr_t)mem[2],
                     (void *)(uintptr_t)mem[3], k->res_is_y ? (void *)(uintptr_t)mem[2] : (void *)(uintptr_t)mem[4]};
    if (!k->has_bias) ptrs[3] = NULL;
    if (!k->has_res) ptrs[4] = NULL;
    /* A plan that leaves y = act(y + residual) to gaio's kernel (residual_after) pays one
     * more pass: reading y and the residual and writing y, estimated as 1.5 times a copy
     * of y (which reads it and writes it) timed here. */
    float after_ms = 0;
    for (int i = 0; i < n && st == GAIO_OK && !after_ms; i++)
        if (cands[i].fusion.residual_after && mem[4])
            st = time_copy(fn, cu, stream, ev, mem[4], mem[2], sizes[2] < sizes[4] ? sizes[2] : sizes[4], &after_ms);
    after_ms *= 1.5f;
    float best_ms = 0;
    bool timed = false, best_graph = false; /* a candidate that cannot run is never the best */
    for (int i = 0; i < n && st == GAIO_OK; i++) {
        const char *ccall = NULL;
        cudnnStatus_t cr = CUDNN_STATUS_SUCCESS;
        for (int j = 0; j < WARMUP && cr == CUDNN_STATUS_SUCCESS; j++)
            cr = gaio__conv_execute(t, h, &cands[i], ptrs, (void *)(uintptr_t)mem[5], &ccall);
        if (cr == CUDNN_STATUS_SUCCESS && (r = cu->cuEventRecord(ev[0], stream)) != CUDA_SUCCESS) {
            st = gaio__dnn_cu_fail(fn, "cuEventRecord", r);
            break;
        }
        for (int j = 0; j < RUNS && cr == CUDNN_STATUS_SUCCESS; j++)
            cr = gaio__conv_execute(t, h, &cands[i], ptrs, (void *)(uintptr_t)mem[5], &ccall);
        if (cr != CUDNN_STATUS_SUCCESS) continue; /* a candidate that cannot run is not the fastest */
        float ms = 0;
        r = cu->cuEventRecord(ev[1], stream);
        if (r == CUDA_SUCCESS) r = cu->cuStreamSynchronize(stream);
        if (r == CUDA_SUCCESS) r = cu->cuEventElapsedTime(&ms, ev[0], ev[1]);
        if (r != CUDA_SUCCESS) {
            st = gaio__dnn_cu_fail(fn, "timing cuDNN plans (cuEventRecord / cuStreamSynchronize / cuEventElapsedTime)",
                                   r);
            break;
        }
        bool graph = capturable(cu, t, h, &cands[i], ptrs, (void *)(uintptr_t)mem[5], stream);
        if (cands[i].fusion.residual_after) ms += after_ms;
        if (getenv("GAIO_DNN_TRACE"))
            fprintf(stderr, "gaio: conv plan %d: %s%s: %.4f ms%s\n", i, cands[i].engine,
                    cands[i].fusion.residual_after ? " + residual after" : "", ms / RUNS,
                    graph ? "" : " (breaks a stream capture)");
        /* A capturable plan beats any other: a model's layers replay as one CUDA graph. */
        if (!timed || (graph && !best_graph) || (graph == best_graph && ms < best_ms))
            best_ms = ms, *best = i, timed = true, best_graph = graph;
    }
    if (stream) {
        cu->cuStreamSynchronize(stream);
        t->cudnnSetStream(h, NULL);
        cu->cuStreamDestroy(stream);
    }
    for (int i = 0; i < 2; i++)
        if (ev[i]) cu->cuEventDestroy(ev[i]);
    for (int i = 0; i < 6; i++)
        if (mem[i]) cu->cuMemFree(mem[i]);
    return st;
}
