/* core/graph.h over the backend table's capture entries. */
#include "core/graph.h"

#include <stdlib.h>

#include "core/backend.h"
#include "core/error.h"
#include "core/object.h"

struct gaio__devgraph {
    gaio_context *ctx; /* a reference: the backend frees the graph in it */
    void *native;
};

bool gaio__devgraph_supported(gaio_stream *stream) { return stream && stream->ctx->be->capture_begin; }

gaio_status gaio__devgraph_capture_begin(const char *fn, gaio_stream *stream) {
    if (!gaio__devgraph_supported(stream))
        return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn, "the %s backend has no graphs", stream->ctx->be->name);
    return stream->ctx->be->capture_begin(fn, stream);
}

gaio_status gaio__devgraph_capture_end(const char *fn, gaio_stream *stream, gaio__devgraph **out) {
    *out = NULL;
    if (!gaio__devgraph_supported(stream))
        return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn, "the %s backend has no graphs", stream->ctx->be->name);
    void *native = NULL;
    gaio_status st = stream->ctx->be->capture_end(fn, stream, &native);
    if (st != GAIO_OK) return st;
    gaio__devgraph *g = calloc(1, sizeof *g);
    if (!g) {
        stream->ctx->be->graph_free(stream->ctx, native);
        return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory");
    }
    gaio_context_retain(stream->ctx);
    g->ctx = stream->ctx, g->native = native;
    *out = g;
    return GAIO_OK;
}

gaio_status gaio__devgraph_launch(const char *fn, gaio_stream *stream, gaio__devgraph *graph, gaio_buffer *const *held,
                               size_t nheld) {
    if (stream->ctx != graph->ctx)
        return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "the stream is not of the graph's context");
    return stream->ctx->be->graph_launch(fn, stream, graph->native, held, nheld);
}

void gaio__devgraph_free(gaio__devgraph *graph) {
    if (!graph) return;
    graph->ctx->be->graph_free(graph->ctx, graph->native);
    gaio_context_release(graph->ctx);
    free(graph);
}
