/* What the tests of launches and fences with no op share (test_launch_direct.c,
 * test_fence_direct.c): adder kernels and a timed spin, each with its host twin, and a
 * counter in pinned memory that kernels add to through a raw pointer: a value
 * argument, so that a launch of them may go with no op. */
#ifndef GAIO_TESTS_DIRECT_KERNELS_H
#define GAIO_TESTS_DIRECT_KERNELS_H

#include <stdatomic.h>

#include "common.h"
#include "support.h"

/* Adds v (ADD1) or 3v (ADD3) to *p. */
#define DIRECT_ADD1 "test_direct_add1"
#define DIRECT_ADD3 "test_direct_add3"
#define DIRECT_SPIN "test_direct_spin" /* runs for its argument's nanoseconds */

static const char *const DIRECT_ADD1_SRC =
    "extern \"C\" __global__ void test_direct_add1(unsigned int *p, unsigned int v) { atomicAdd(p, v); }\n";
static const char *const DIRECT_ADD3_SRC =
    "extern \"C\" __global__ void test_direct_add3(unsigned int *p, unsigned int v) { atomicAdd(p, v * 3u); }\n";
static const char *const DIRECT_SPIN_SRC =
    "extern \"C\" __global__ void test_direct_spin(unsigned long long ns) {\n"
    "    unsigned long long t0, t;\n"
    "    asm volatile(\"mov.u64 %0, %%globaltimer;\" : \"=l\"(t0));\n"
    "    do { asm volatile(\"mov.u64 %0, %%globaltimer;\" : \"=l\"(t)); } while (t - t0 < ns);\n"
    "}\n";

static inline void direct_host_add(void *const *args, unsigned mul) {
    _Atomic unsigned *p;
    memcpy(&p, args[0], sizeof p);
    atomic_fetch_add(p, *(const unsigned *)args[1] * mul);
}

static inline gaio_status direct_host_add1(const gaio_launch_info *info, void *const *args) {
    (void)info;
    direct_host_add(args, 1);
    return GAIO_OK;
}

static inline gaio_status direct_host_add3(const gaio_launch_info *info, void *const *args) {
    (void)info;
    direct_host_add(args, 3);
    return GAIO_OK;
}

static inline gaio_status direct_host_spin(const gaio_launch_info *info, void *const *args) {
    (void)info;
    int64_t t0 = now_ns(), ns = (int64_t)*(const unsigned long long *)args[0];
    while (now_ns() - t0 < ns) {
    }
    return GAIO_OK;
}

/* Whether launches on `device` run their kernels: on the host and on a real GPU, not on
 * the fake driver (tests/fake_cuda), whose launches do nothing. */
static inline bool direct_kernels_run(int device) {
    gaio_device_props props;
    OK(gaio_device_get_props(device, &props));
    return props.kind == GAIO_DEVICE_HOST || strstr(props.name, "fake") == NULL;
}

typedef struct direct_kernels {
    gaio_kernel *add1, *add3, *spin;
} direct_kernels;

static inline direct_kernels direct_kernels_register(void) {
    size_t add_sizes[2] = {sizeof(void *), sizeof(unsigned)};
    size_t spin_sizes[1] = {sizeof(unsigned long long)};
    direct_kernels k;
    k.add1 = test_kernel(DIRECT_ADD1, direct_host_add1, 2, add_sizes, DIRECT_ADD1_SRC);
    k.add3 = test_kernel(DIRECT_ADD3, direct_host_add3, 2, add_sizes, DIRECT_ADD3_SRC);
    k.spin = test_kernel(DIRECT_SPIN, direct_host_spin, 1, spin_sizes, DIRECT_SPIN_SRC);
    return k;
}

/* Unregistered and released; launches of them may still be in flight. */
static inline void direct_kernels_release(direct_kernels *k) {
    const char *names[3] = {DIRECT_ADD1, DIRECT_ADD3, DIRECT_SPIN};
    gaio_kernel *ks[3] = {k->add1, k->add3, k->spin};
    for (int i = 0; i < 3; i++) {
        OK(gaio_kernel_unregister(names[i]));
        OK(gaio_kernel_release(ks[i]));
    }
}

/* A counter the kernels add to, passed by value as a raw pointer. */
typedef struct counter {
    gaio_buffer *buf;
    _Atomic unsigned *host; /* read after a synchronize, or while kernels run */
    void *dev;              /* what kernels get */
} counter;

static inline void counter_init(gaio_context *ctx, gaio_stream *s, counter *c) {
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_PINNED, 64, &c->buf));
    void *h;
    OK(gaio_buffer_host_ptr(c->buf, &h));
    c->host = h;
    if (gaio_buffer_device_ptr(c->buf, &c->dev) != GAIO_OK) c->dev = h;
    OK(gaio_memset_async(s, c->buf, 0, 0, 64));
}

static inline void counter_add(gaio_stream *s, gaio_kernel *k, counter *c, unsigned v) {
    gaio_arg args[2] = {GAIO_ARG(c->dev), GAIO_ARG(v)};
    OK(gaio_launch(s, k, (gaio_dim3){1, 1, 1}, (gaio_dim3){1, 1, 1}, 0, args, 2));
}

#endif
