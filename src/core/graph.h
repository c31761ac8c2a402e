/* Replayable graphs of ops (CUDA graphs), for layers that run the same sequence many
 * times (a model's layers): capture the sequence once on a private stream, then launch
 * the graph on any stream of the context as one op.
 *
 * While a stream is captured its ops do not run: each op's device work is recorded,
 * and the op retires at once. So the owner of a graph keeps every buffer the captured
 * ops use alive, unchanged in place, for as long as it launches the graph (launch's
 * `held` buffers are kept until that launch has run), and the private stream too
 * (libraries keep per-stream scratch memory the graph may use). Events, waits and host
 * work cannot be captured: their submission fails. */
#ifndef GAIO_CORE_GRAPH_H
#define GAIO_CORE_GRAPH_H

#include <stdbool.h>
#include <stddef.h>

#include "gaio/gaio.h"

typedef struct gaio__devgraph gaio__devgraph;

/* Does the stream's backend have graphs? */
bool gaio__devgraph_supported(gaio_stream *stream);
gaio_status gaio__devgraph_capture_begin(const char *fn, gaio_stream *stream);
/* Ends the capture (also after a failed op, to give the stream back) and, when it
 * worked, instantiates the graph. */
gaio_status gaio__devgraph_capture_end(const char *fn, gaio_stream *stream, gaio__devgraph **out);
gaio_status gaio__devgraph_launch(const char *fn, gaio_stream *stream, gaio__devgraph *graph, gaio_buffer *const *held,
                               size_t nheld);
/* No launch of it may be pending (the owner waits for its last one first). */
void gaio__devgraph_free(gaio__devgraph *graph);

#endif
