/* gaio — the GPU as an asynchronous I/O device. One include for the whole C API.
 *
 * Devices (0 is the host) -> contexts -> streams of ops (copies, fills, kernels,
 * host functions) ordered by events; completion through futures and completion
 * queues whose fd plugs into any event loop. See the per-concept headers. */
#ifndef GAIO_GAIO_H
#define GAIO_GAIO_H

#include "gaio/version.h"
#include "gaio/status.h"
#include "gaio/types.h"
#include "gaio/device.h"
#include "gaio/context.h"
#include "gaio/stream.h"
#include "gaio/event.h"
#include "gaio/buffer.h"
#include "gaio/memory.h"
#include "gaio/future.h"
#include "gaio/cq.h"
#include "gaio/kernel.h"
#include "gaio/rng.h"
#include "gaio/image.h"
#include "gaio/dlpack.h"
#include "gaio/comm.h"
#include "gaio/dnn.h"
#include "gaio/model.h"
#include "gaio/library.h"

#endif
