/* Deferred submission: a per-device runtime thread fed by a lock-free MPSC queue,
 * so that a DEFERRED stream's caller only validates and appends. */
#ifndef GAIO_CORE_SUBMITTER_H
#define GAIO_CORE_SUBMITTER_H

#include "gaio/status.h"

typedef struct gaio_op gaio_op;

/* Never blocks on the device; the thread hands the op to the backend in order. */
gaio_status gaio__submitter_push(int device, gaio_op *op);
/* Joins every submitter thread (process shutdown: no op may be in flight). */
void gaio__submitters_stop(void);

#endif
