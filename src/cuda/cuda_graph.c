/* CUDA graphs by stream capture: a private gaio stream records a fixed sequence of
 * ops once (core/graph.h), and the instantiated graph is replayed on any stream of
 * the context as one NATIVE op: one cuGraphLaunch instead of one driver call per op.
 *
 * The capture is RELAXED: other threads of the process keep calling the driver as
 * they like (GLOBAL mode would fail their cuMemAlloc while we capture), and so may
 * this one (a cuDNN workspace growing is an allocation outside the graph). */
#include <pthread.h>

#include "core/error.h"
#include "core/native.h"
#include "core/object.h"
#include "cuda/cuda_internal.h"

static pthread_rwlock_t capture_lock = PTHREAD_RWLOCK_INITIALIZER;
/* This thread's captures under way, and exclusive sections it entered while it had one
 * (those cannot wait for its own capture: they go ahead, as a thread's own calls would). */
static _Thread_local int tl_capturing, tl_skipped;

void gaio__cuda_exclusive_begin(void) {
    if (tl_capturing) {
        tl_skipped++;
        return;
    }
    pthread_rwlock_wrlock(&capture_lock);
}

void gaio__cuda_exclusive_end(void) {
    if (tl_skipped) {
        tl_skipped--;
        return;
    }
    pthread_rwlock_unlock(&capture_lock);
}

gaio_status gaio__cuda_capture_begin(const char *fn, gaio_stream *stream) {
    cuda_stream *cs = stream->be_data;
    if (cs->capturing) return gaio__fail(GAIO_ERR_STATE, fn, "the stream is being captured already");
    cuda_scope sc;
    gaio_status st = gaio__cuda_enter(fn, cs->dev, &sc);
    if (st != GAIO_OK) return st;
    pthread_rwlock_rdlock(&capture_lock); /* held until the capture's end */
    pthread_mutex_lock(&cs->lock);
    CUresult r = gaio__cu()->cuStreamBeginCapture(cs->cu, CU_STREAM_CAPTURE_MODE_RELAXED);
    if (r == CUDA_SUCCESS) {
        cs->capturing = true;
        cs->capture_status = GAIO_OK;
        cs->capture_msg[0] = 0;
    }
    pthread_mutex_unlock(&cs->lock);
    gaio__cuda_exit(&sc);
    if (r != CUDA_SUCCESS) {
        pthread_rwlock_unlock(&capture_lock);
        return gaio__cu_fail(fn, "cuStreamBeginCapture", r);
    }
    tl_capturing++;
    return GAIO_OK;
}

gaio_status gaio__cuda_capture_end(const char *fn, gaio_stream *stream, void **graph) {
    cuda_stream *cs = stream->be_data;
    *graph = NULL;
    if (!cs->capturing) return gaio__fail(GAIO_ERR_STATE, fn, "the stream is not being captured");
    const gaio_cu_table *cu = gaio__cu();
    cuda_scope sc;
    gaio_status st = gaio__cuda_enter(fn, cs->dev, &sc);
    if (st != GAIO_OK) return st; /* still capturing: the caller may try again */
    CUgraph g = NULL;
    CUgraphExec x = NULL;
    pthread_mutex_lock(&cs->lock);
    CUresult r = cu->cuStreamEndCapture(cs->cu, &g);
    cs->capturing = false;
    pthread_mutex_unlock(&cs->lock);
    tl_capturing--;
    pthread_rwlock_unlock(&capture_lock);
    if (cs->capture_status != GAIO_OK) {
        st = gaio__fail(cs->capture_status, fn, "an op failed while the stream was captured: %s", cs->capture_msg);
    } else if (r != CUDA_SUCCESS) {
        st = gaio__cu_fail(fn, "cuStreamEndCapture", r);
    } else if ((r = cu->cuGraphInstantiateWithFlags(&x, g, 0)) != CUDA_SUCCESS) {
        st = gaio__cu_fail(fn, "cuGraphInstantiateWithFlags", r);
    }
    if (g) cu->cuGraphDestroy(g); /* the executable graph is independent of it */
    gaio__cuda_exit(&sc);
    if (st == GAIO_OK) *graph = x;
    return st;
}

static gaio_status launch(void *native_stream, gaio_status status, void *user) {
    if (status != GAIO_OK) return GAIO_OK; /* the stream failed before: nothing to run */
    CUresult r = gaio__cu()->cuGraphLaunch((CUgraphExec)user, (CUstream)native_stream);
    return r == CUDA_SUCCESS ? GAIO_OK : gaio__cu_fail("gaio (a CUDA graph replay)", "cuGraphLaunch", r);
}

gaio_status gaio__cuda_graph_launch(const char *fn, gaio_stream *stream, void *graph, gaio_buffer *const *held,
                                    size_t nheld) {
    return gaio__enqueue_native_held(fn, stream, launch, graph, held, nheld);
}

void gaio__cuda_graph_free(gaio_context *ctx, void *graph) {
    if (!graph) return;
    cuda_device *d = ctx->be_data;
    cuda_scope sc;
    if (gaio__cuda_enter("gaio (freeing a CUDA graph)", d, &sc) != GAIO_OK) return; /* a faulted device: leaked */
    gaio__cu()->cuGraphExecDestroy((CUgraphExec)graph);
    gaio__cuda_exit(&sc);
}
