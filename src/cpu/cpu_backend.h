/* The CPU backend's one entry: its table, which src/gaio.c lists. */
#ifndef GAIO_CPU_BACKEND_H
#define GAIO_CPU_BACKEND_H

#include "core/backend.h"

extern const gaio_backend gaio__cpu_backend;

#endif
