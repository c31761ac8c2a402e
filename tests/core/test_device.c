/* Devices and contexts: the device table, device properties, and a context's
 * lifetime, device and default stream. */
#include <stdatomic.h>
#include <stdbool.h>

#include "common.h"
#include "support.h"

static bool is_pow2(size_t x) { return x && (x & (x - 1)) == 0; }

static void check_props(int device, const gaio_device_props *p) {
    CHECK(memchr(p->name, '\0', sizeof p->name) != NULL);
    CHECK(strlen(p->name) > 0);
    CHECK(p->total_memory > 0);
    CHECK(p->processor_count >= 1);
    CHECK(p->max_priority >= 1);
    CHECK(is_pow2(p->pitch_alignment));
    if (device == 0) {
        CHECK(p->kind == GAIO_DEVICE_HOST);
        CHECK(p->ordinal == 0);
        CHECK(p->compute_major == 0 && p->compute_minor == 0);
    } else {
        CHECK(p->kind == GAIO_DEVICE_CUDA);
        CHECK(p->ordinal == device - 1); /* GPUs follow the host in driver order */
        CHECK(p->compute_major >= 3);
    }
}

static void test_device_table(void) {
    int count = -1;
    OK(gaio_device_count(&count));
    CHECK(count >= 1);
    for (int d = 0; d < count; d++) {
        gaio_device_props p;
        memset(&p, 0xA5, sizeof p);
        OK(gaio_device_get_props(d, &p));
        check_props(d, &p);
        /* The same answer twice. */
        gaio_device_props q;
        memset(&q, 0x5A, sizeof q);
        OK(gaio_device_get_props(d, &q));
        CHECK(p.kind == q.kind && p.ordinal == q.ordinal && strcmp(p.name, q.name) == 0);
        CHECK(p.total_memory == q.total_memory && p.max_priority == q.max_priority);
        CHECK(p.pitch_alignment == q.pitch_alignment && p.processor_count == q.processor_count);
    }
    gaio_device_props p;
    FAILS(GAIO_ERR_NOT_FOUND, gaio_device_get_props(count, &p), "gaio_device_get_props");
    FAILS(GAIO_ERR_NOT_FOUND, gaio_device_get_props(-1, &p), "gaio_device_get_props");
}

/* The host's processor_count is the size of the worker pool: the configured
 * number when set before the first context. */
static void test_host_workers(void) {
    /* Nothing of ours is alive yet: gaio can be stopped and reconfigured. */
    OK(gaio_shutdown());
    gaio_config cfg = {.cpu_workers = 3};
    OK(gaio_configure(&cfg));
    gaio_device_props p;
    OK(gaio_device_get_props(0, &p));
    CHECK(p.processor_count == 3);
    gaio_context *ctx;
    OK(gaio_context_create(0, NULL, &ctx));
    OK(gaio_device_get_props(0, &p));
    CHECK(p.processor_count == 3);
    FAILS(GAIO_ERR_STATE, gaio_configure(NULL), "gaio_configure");
    OK(gaio_context_release(ctx));
    test_shutdown();
    OK(gaio_configure(NULL)); /* back to the defaults */
    OK(gaio_device_get_props(0, &p));
    CHECK(p.processor_count >= 1);
}

static void test_context(int device) {
    gaio_context *ctx;
    OK(gaio_context_create(device, NULL, &ctx));
    CHECK(ctx != NULL);
    int dev = -1;
    OK(gaio_context_device(ctx, &dev));
    CHECK(dev == device);

    /* The default stream: borrowed, the same every time, priority 0, no flags. */
    gaio_stream *ds, *ds2;
    OK(gaio_context_default_stream(ctx, &ds));
    OK(gaio_context_default_stream(ctx, &ds2));
    CHECK(ds != NULL && ds == ds2);
    int prio = -1;
    unsigned flags = 99;
    gaio_context *owner = NULL;
    OK(gaio_stream_priority(ds, &prio));
    OK(gaio_stream_flags(ds, &flags));
    OK(gaio_stream_context(ds, &owner));
    CHECK(prio == 0 && flags == 0 && owner == ctx);
    gaio_device_props props;
    OK(gaio_device_get_props(device, &props));
    void *native = (void *)&native;
    OK(gaio_stream_native(ds, &native));
    if (props.kind == GAIO_DEVICE_HOST) CHECK(native == NULL); /* the host has no native streams */
    else CHECK(native != NULL && native != (void *)&native);   /* a CUstream of gaio's own */
    OK(gaio_stream_query(ds));
    OK(gaio_stream_synchronize(ds));

    /* The default stream does work. */
    gaio_buffer *buf;
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_HOST, 4096, &buf));
    OK(gaio_memset_async(ds, buf, 0, 0x7E, 4096));
    OK(gaio_stream_synchronize(ds));
    void *hp;
    OK(gaio_buffer_host_ptr(buf, &hp));
    for (int i = 0; i < 4096; i++) CHECK(((unsigned char *)hp)[i] == 0x7E);
    int bdev = -1;
    OK(gaio_buffer_device(buf, &bdev));
    CHECK(bdev == device);

    /* Two contexts on one device are separate: their own default streams. */
    gaio_context_options opt = {.pool_release_threshold = 1 << 20, .rng_seed = 0x0123456789abcdefull};
    gaio_context *ctx2;
    OK(gaio_context_create(device, &opt, &ctx2));
    CHECK(ctx2 != ctx);
    gaio_stream *ds3;
    OK(gaio_context_default_stream(ctx2, &ds3));
    CHECK(ds3 != ds);
    OK(gaio_stream_context(ds3, &owner));
    CHECK(owner == ctx2);
    uint64_t seed = 0;
    OK(gaio_rng_get_state(ctx2, &seed, NULL));
    CHECK(seed == 0x0123456789abcdefull);
    OK(gaio_context_synchronize(ctx2));
    OK(gaio_context_release(ctx2));

    /* Retain and release in pairs: the context lives on while a reference remains. */
    OK(gaio_context_retain(ctx));
    OK(gaio_context_retain(ctx));
    OK(gaio_context_release(ctx));
    OK(gaio_context_release(ctx));
    OK(gaio_context_device(ctx, &dev));
    CHECK(dev == device);
    OK(gaio_context_retain(ctx));
    OK(gaio_context_release(ctx)); /* drops the retain; the creator's reference remains */
    OK(gaio_memset_async(ds, buf, 0, 0x11, 16));
    OK(gaio_context_synchronize(ctx));
    CHECK(((unsigned char *)hp)[0] == 0x11 && ((unsigned char *)hp)[16] == 0x7E);

    /* Releasing the context with work pending: the work finishes and its future
     * completes normally; the buffer keeps the context alive meanwhile. */
    gate g = {0};
    OK(gaio_launch_host_func(ds, gate_fn, &g));
    OK(gaio_memset_async(ds, buf, 0, 0x22, 4096));
    gaio_future *fut;
    OK(gaio_future_fence(ds, &fut));
    OK(gaio_context_release(ctx));
    CHECK(gaio_future_poll(fut) == GAIO_ERR_NOT_READY);
    FAILS(GAIO_ERR_STATE, gaio_shutdown(), "gaio_shutdown");
    atomic_store(&g.open, 1);
    OK(gaio_future_wait(fut, GAIO_INFINITE));
    OK(gaio_future_release(fut));
    for (int i = 0; i < 4096; i++) CHECK(((unsigned char *)hp)[i] == 0x22);
    OK(gaio_buffer_release(buf)); /* the last reference: the context goes with it */
}

static void run(int device) {
    test_device_table();
    gaio_device_props p;
    OK(gaio_device_get_props(0, &p));
    CHECK(p.kind == GAIO_DEVICE_HOST); /* device 0 is always the host */
    if (device == 0) test_host_workers();
    test_context(device);
}
