/* gaio — kernels: named device functions launched in stream order.
 *
 * A kernel name is registered once per process. On the CPU backend a kernel is a
 * C function registered with gaio_kernel_register; CUDA libraries (a later
 * release) resolve the same names to device code, so one gaio_launch call runs
 * on whichever device the stream belongs to.
 *
 * Arguments are copied at launch, like CUDA's kernel parameters. A buffer
 * argument passes the buffer's device address (plus offset) and keeps the buffer
 * alive until the kernel has run. A launch with value arguments only (at most 16),
 * on a stream without GAIO_STREAM_DEFERRED, of the kernel last launched there, costs
 * one driver call and no allocation on CUDA: gaio keeps nothing for it but a count. */
#ifndef GAIO_KERNEL_H
#define GAIO_KERNEL_H

#include "gaio/status.h"
#include "gaio/types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gaio_arg {
    const void *value;   /* by-value argument: `size` bytes copied at launch */
    size_t size;
    gaio_buffer *buffer; /* when not NULL: the argument is a pointer to buffer memory + offset */
    size_t offset;
} gaio_arg;

#define GAIO_ARG(lvalue) ((gaio_arg){&(lvalue), sizeof(lvalue), NULL, 0})
#define GAIO_ARG_BUFFER(buf) ((gaio_arg){NULL, sizeof(void *), (buf), 0})
#define GAIO_ARG_BUFFER_AT(buf, off) ((gaio_arg){NULL, sizeof(void *), (buf), (off)})

/* What a host kernel sees of its launch. */
typedef struct gaio_launch_info {
    gaio_dim3 grid;
    gaio_dim3 block;
    size_t shared_mem_bytes;
    void *shared_mem; /* scratch of shared_mem_bytes for this launch, or NULL */
} gaio_launch_info;

/* A host kernel: args[i] points to a copy of argument i (for a buffer argument, to
 * a void * holding its address). It covers the whole grid itself. A status other
 * than GAIO_OK fails the stream, as a device fault would. */
typedef gaio_status (*gaio_host_kernel)(const gaio_launch_info *info, void *const *args);

/* Registers a host kernel under `name` taking `nargs` arguments of the given
 * sizes. out may be NULL; otherwise it receives a reference. */
gaio_status gaio_kernel_register(const char *name, gaio_host_kernel fn, size_t nargs, const size_t *arg_sizes,
                                 gaio_kernel **out);
/* Removes the name; handles and launches in flight keep the kernel alive. */
gaio_status gaio_kernel_unregister(const char *name);
gaio_status gaio_kernel_find(const char *name, gaio_kernel **out);
gaio_status gaio_kernel_retain(gaio_kernel *kernel);
gaio_status gaio_kernel_release(gaio_kernel *kernel);
/* Borrowed; valid while kernel is. */
const char *gaio_kernel_name(const gaio_kernel *kernel);

gaio_status gaio_launch(gaio_stream *stream, gaio_kernel *kernel, gaio_dim3 grid, gaio_dim3 block,
                        size_t shared_mem_bytes, const gaio_arg *args, size_t nargs);

#ifdef __cplusplus
}
#endif
#endif
