/* The CPU backend: the host as device 0. Device memory is host memory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/object.h"
#include "cpu/cpu_backend.h"
#include "cpu/cpu_stream.h"

#define HOST_ALIGN 256

static int cpu_device_count(void) { return 1; }

static gaio_status cpu_device_props(int ordinal, gaio_device_props *p) {
    (void)ordinal;
    p->kind = GAIO_DEVICE_HOST;
    p->ordinal = 0;
    snprintf(p->name, sizeof p->name, "host CPU");
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    p->total_memory = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
    p->processor_count = gaio__runtime_cpu_workers();
    p->max_priority = GAIO_CPU_MAX_PRIORITY;
    p->pitch_alignment = HOST_ALIGN;
    return GAIO_OK;
}

static gaio_status cpu_context_init(gaio_context *ctx) {
    (void)ctx;
    return GAIO_OK;
}

static void cpu_context_fini(gaio_context *ctx) { (void)ctx; }

static gaio_status cpu_stream_init(gaio_stream *s, void *native) {
    if (native) return GAIO_FAIL(GAIO_ERR_NOT_SUPPORTED, "the host has no native streams to wrap");
    cpu_stream *cs = calloc(1, sizeof *cs);
    if (!cs) return GAIO_FAIL(GAIO_ERR_NO_MEMORY, "out of host memory for the stream");
    gaio__cpu_stream_setup(cs, s);
    s->be_data = cs;
    return GAIO_OK;
}

static void cpu_stream_fini(gaio_stream *s) {
    cpu_stream *cs = s->be_data;
    pthread_mutex_destroy(&cs->lock);
    free(cs);
}

static gaio_status cpu_mem_alloc(gaio_context *ctx, gaio_mem_kind kind, size_t size, void **ptr) {
    (void)ctx;
    (void)kind;
    size_t rounded = (size + HOST_ALIGN - 1) & ~(size_t)(HOST_ALIGN - 1);
    *ptr = rounded >= size ? aligned_alloc(HOST_ALIGN, rounded) : NULL;
    if (!*ptr) return GAIO_FAIL(GAIO_ERR_NO_MEMORY, "aligned_alloc of %zu bytes failed", size);
    return GAIO_OK;
}

static void cpu_mem_free(gaio_context *ctx, gaio_mem_kind kind, void *ptr, size_t size) {
    (void)ctx;
    (void)kind;
    (void)size;
    free(ptr);
}

static gaio_status cpu_describe(const char **description) {
    *description = "ready: device 0, the host";
    return GAIO_OK;
}

const gaio_backend gaio__cpu_backend = {
    .name = "cpu",
    .kind = GAIO_DEVICE_HOST,
    .device_count = cpu_device_count,
    .device_props = cpu_device_props,
    .context_init = cpu_context_init,
    .context_fini = cpu_context_fini,
    .stream_init = cpu_stream_init,
    .stream_fini = cpu_stream_fini,
    .mem_alloc = cpu_mem_alloc,
    .mem_free = cpu_mem_free,
    .submit = gaio__cpu_submit,
    .describe = cpu_describe,
};
