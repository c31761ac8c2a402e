/* The CUDA backend's one entry: its table, which src/gaio.c lists in builds that
 * have the backend. */
#ifndef GAIO_CUDA_BACKEND_H
#define GAIO_CUDA_BACKEND_H

#include "core/backend.h"

extern const gaio_backend gaio__cuda_backend;

#endif
