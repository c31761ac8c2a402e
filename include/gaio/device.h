/* gaio — devices and process-wide configuration.
 *
 * Devices are numbered 0..count-1 across all backends. Device 0 is always the
 * host (kind GAIO_DEVICE_HOST, the CPU backend); CUDA GPUs follow in driver order
 * when a driver and GPUs are present. */
#ifndef GAIO_DEVICE_H
#define GAIO_DEVICE_H

#include "gaio/status.h"
#include "gaio/types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gaio_device_kind {
    GAIO_DEVICE_HOST = 0,
    GAIO_DEVICE_CUDA = 1
} gaio_device_kind;

typedef struct gaio_device_props {
    gaio_device_kind kind;
    int ordinal;              /* index among devices of the same kind */
    char name[128];
    uint64_t total_memory;    /* bytes */
    int compute_major;        /* CUDA compute capability; 0 on the host */
    int compute_minor;
    int processor_count;      /* SMs on a GPU, worker threads on the host */
    int max_priority;         /* streams take priorities 0 (normal) .. max_priority (most urgent) */
    size_t pitch_alignment;   /* the row pitch of 2D buffers is a multiple of this */
} gaio_device_props;

/* How gaio's completion thread waits for device work (CUDA backend). */
typedef enum gaio_wait_policy {
    GAIO_WAIT_HYBRID = 0, /* default: spin briefly while work is outstanding, then back off to short
                             sleeps; an idle process costs no CPU */
    GAIO_WAIT_SPIN = 1,   /* spin while any work is outstanding: lowest latency, one core busy */
    GAIO_WAIT_BLOCK = 2   /* sleep until the driver signals a completed future or event point */
} gaio_wait_policy;

/* Process-wide settings, read once when the first context is created. */
typedef struct gaio_config {
    int cpu_workers; /* threads of the CPU backend's worker pool; 0: the number of online
                        cores, or the GAIO_CPU_WORKERS environment variable when set */
    gaio_wait_policy wait_policy; /* GAIO_WAIT_HYBRID (the default) yields to the environment
                                     variable GAIO_WAIT_POLICY=spin|block|hybrid when set */
} gaio_config;

/* Sets the configuration. Call before the first context is created; afterwards it
 * returns GAIO_ERR_STATE. NULL restores the defaults. */
gaio_status gaio_configure(const gaio_config *config);

/* Stops gaio's threads and frees its process-wide state. Optional (for leak
 * checkers and plug-ins that unload). Waits up to 1 s for work in flight to drop
 * the last references to contexts, then fails with GAIO_ERR_STATE if any context
 * is still alive. gaio starts again on the next context creation. */
gaio_status gaio_shutdown(void);

gaio_status gaio_device_count(int *count);

/* Whether the backend of a device kind works in this process, in words: GAIO_OK and
 * e.g. "driver 13.0, 1 device"; GAIO_ERR_NOT_SUPPORTED when this build lacks the
 * backend; GAIO_ERR_DRIVER with the reason (no libcuda.so.1, cuInit failed, ...).
 * The text stays valid until the next call on the same thread. */
gaio_status gaio_backend_status(gaio_device_kind kind, const char **description);
gaio_status gaio_device_get_props(int device, gaio_device_props *props);

#ifdef __cplusplus
}
#endif
#endif
