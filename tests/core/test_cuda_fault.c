/* A kernel that writes to an invalid address fails the futures of its context with
 * GAIO_ERR_DEVICE within 1 s; later calls on that device say so; the host backend
 * keeps working; nothing hangs. A device fault poisons the whole device context for
 * the process, so this test has an executable of its own. */
#include "common.h"

static const char *SOURCE =
    "extern \"C\" __global__ void fault_write(int *p) { *(volatile int *)((char *)p + 0x10) = 1; }\n"
    "extern \"C\" __global__ void fault_spin(unsigned long long cycles) {\n"
    "    unsigned long long t = clock64(); while (clock64() - t < cycles) {}\n"
    "}\n";

static gaio_status after_fault(gaio_status status, void *user) {
    *(gaio_status *)user = status;
    return GAIO_OK;
}

static void run(int device) {
    gaio_device_props props;
    OK(gaio_device_get_props(device, &props));
    if (props.kind == GAIO_DEVICE_HOST) {
        printf("host: device faults are a GPU matter; nothing to check here\n");
        return;
    }
    /* The fault poisons its device's context for the whole process: fault the first
     * CUDA device only, and check the others from there. */
    static int faulted_device = -1;
    if (faulted_device >= 0) {
        printf("device %d: checked after the fault on device %d\n", device, faulted_device);
        return;
    }
    faulted_device = device;
    gaio_context *ctx;
    OK(gaio_context_create(device, NULL, &ctx));
    gaio_stream *a, *b;
    OK(gaio_stream_create(ctx, 0, 0, &a));
    OK(gaio_stream_create(ctx, 0, 0, &b));
    char log[4096];
    gaio_library *lib;
    OK(gaio_library_compile(SOURCE, "fault.cu", NULL, 0, log, sizeof log, &lib));
    gaio_kernel *bad, *spin;
    OK(gaio_library_get_kernel(lib, "fault_write", &bad));
    OK(gaio_library_get_kernel(lib, "fault_spin", &spin));

    /* contexts on the other GPUs, made before the fault */
    int count = 0, n_other = 0;
    OK(gaio_device_count(&count));
    gaio_context *octx[8];
    gaio_buffer *ob[8];
    for (int other = device + 1; other < count && n_other < 8; other++, n_other++) {
        OK(gaio_context_create(other, NULL, &octx[n_other]));
        OK(gaio_buffer_alloc(octx[n_other], GAIO_MEM_PINNED, 64, &ob[n_other]));
    }
    gaio_buffer *buf; /* allocated before the fault: a faulted context allocates nothing */
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_PINNED, 64, &buf));

    /* b runs long work that the fault will cut short; a faults */
    unsigned long long cycles = 2000000000ull; /* ~1 s at 2 GHz */
    gaio_arg sargs[1] = {GAIO_ARG(cycles)};
    OK(gaio_launch(b, spin, (gaio_dim3){1, 1, 1}, (gaio_dim3){1, 1, 1}, 0, sargs, 1));
    /* Launches of the same kernel behind it ride on its op (no op of their own): the
     * fault must retire them with it too. */
    unsigned long long short_cycles = 1000;
    gaio_arg rargs[1] = {GAIO_ARG(short_cycles)};
    for (int i = 0; i < 3; i++) OK(gaio_launch(b, spin, (gaio_dim3){1, 1, 1}, (gaio_dim3){1, 1, 1}, 0, rargs, 1));
    gaio_future *fb;
    OK(gaio_future_fence(b, &fb));
    void *invalid = (void *)(uintptr_t)0x1000;
    gaio_arg args[1] = {{&invalid, sizeof invalid, NULL, 0}};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    OK(gaio_launch(a, bad, (gaio_dim3){1, 1, 1}, (gaio_dim3){1, 1, 1}, 0, args, 1));
    OK(gaio_launch(a, bad, (gaio_dim3){1, 1, 1}, (gaio_dim3){1, 1, 1}, 0, args, 1)); /* rides on the first */
    gaio_status seen = GAIO_OK;
    OK(gaio_launch_host_func(a, after_fault, &seen));
    gaio_future *fa;
    OK(gaio_future_fence(a, &fa));
    gaio_status st = gaio_future_wait(fa, 5000000000ll);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double waited = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("fault reported after %.3f s: %s: %s\n", waited, gaio_status_string(st), gaio_future_message(fa));
    CHECK(st == GAIO_ERR_DEVICE);
    CHECK(waited < 1.5);
    CHECK(gaio_future_wait(fb, 5000000000ll) == GAIO_ERR_DEVICE); /* the whole context is gone */
    CHECK(seen == GAIO_ERR_DEVICE); /* the host function still ran, once, told of the fault */
    CHECK(gaio_stream_query(a) == GAIO_ERR_DEVICE);

    /* later calls on the device say so, at once; launches that could ride too */
    FAILS(GAIO_ERR_DEVICE, gaio_memset_async(b, buf, 0, 1, 64), "gaio_memset_async");
    FAILS(GAIO_ERR_DEVICE, gaio_launch(b, spin, (gaio_dim3){1, 1, 1}, (gaio_dim3){1, 1, 1}, 0, rargs, 1),
          "gaio_launch");
    CHECK(gaio_stream_query(b) == GAIO_ERR_DEVICE);

    /* the host backend is untouched */
    gaio_context *hctx;
    OK(gaio_context_create(0, NULL, &hctx));
    gaio_stream *hs;
    OK(gaio_context_default_stream(hctx, &hs));
    gaio_buffer *hb;
    OK(gaio_buffer_alloc(hctx, GAIO_MEM_HOST, 64, &hb));
    OK(gaio_memset_async(hs, hb, 0, 0x5a, 64));
    OK(gaio_stream_synchronize(hs));
    unsigned char *p;
    OK(gaio_buffer_host_ptr(hb, (void **)&p));
    for (int i = 0; i < 64; i++) CHECK(p[i] == 0x5a);

    /* Other GPUs: CUDA documents an illegal address as fatal to the process's CUDA
     * state, so work there may fail too; gaio must then say so, with GAIO_ERR_DEVICE
     * and within the fault window, never hang. */
    for (int i = 0; i < n_other; i++) {
        gaio_stream *os;
        OK(gaio_context_default_stream(octx[i], &os));
        gaio_status ost = gaio_memset_async(os, ob[i], 0, 0x3c, 64);
        gaio_future *of = NULL;
        if (ost == GAIO_OK) ost = gaio_future_fence(os, &of);
        if (ost == GAIO_OK) ost = gaio_future_wait(of, 5000000000ll);
        CHECK(ost == GAIO_OK || ost == GAIO_ERR_DEVICE);
        if (ost == GAIO_OK) {
            unsigned char *q;
            OK(gaio_buffer_host_ptr(ob[i], (void **)&q));
            for (int j = 0; j < 64; j++) CHECK(q[j] == 0x3c);
        }
        printf("another GPU after the fault: %s\n", ost == GAIO_OK ? "still works" : gaio_last_error());
        OK(gaio_future_release(of));
        OK(gaio_buffer_release(ob[i]));
        OK(gaio_context_release(octx[i]));
    }

    OK(gaio_buffer_release(hb));
    OK(gaio_context_release(hctx));
    OK(gaio_buffer_release(buf));
    OK(gaio_future_release(fa));
    OK(gaio_future_release(fb));
    OK(gaio_kernel_release(bad));
    OK(gaio_kernel_release(spin));
    OK(gaio_library_release(lib));
    OK(gaio_stream_release(a));
    OK(gaio_stream_release(b));
    OK(gaio_context_release(ctx));
}
