/* CUDA-only behaviour: wrapping foreign streams, priorities, NVRTC success and
 * failure, library kernels on every device, __device__ and __managed__ variables,
 * and one kernel name launched on both backends. On the host it only checks that
 * these calls say "not supported" clearly. */
#include <dlfcn.h>

#include "common.h"

static const char *SOURCE =
    "extern \"C\" __global__ void cuda_scale(float *x, unsigned long long n, float a) {\n"
    "    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;\n"
    "    if (i < n) x[i] *= a;\n"
    "}\n"
    "__device__ int counter_dev;\n"
    "__managed__ int counter_managed;\n"
    "extern \"C\" __global__ void cuda_bump(int by) { atomicAdd(&counter_dev, by); atomicAdd(&counter_managed, by); }\n";

static gaio_status host_scale(const gaio_launch_info *info, void *const *args) {
    (void)info;
    float *x;
    unsigned long long n;
    float a;
    memcpy(&x, args[0], sizeof x);
    memcpy(&n, args[1], sizeof n);
    memcpy(&a, args[2], sizeof a);
    for (unsigned long long i = 0; i < n; i++) x[i] *= a;
    return GAIO_OK;
}

/* A raw driver stream made outside gaio, as PyTorch or CuPy would. */
static gaio_status slow_host_fn(gaio_status status, void *user) {
    (void)user;
    struct timespec ts = {0, 200 * 1000 * 1000};
    nanosleep(&ts, NULL);
    return status;
}

static void *foreign_stream(int ordinal, int *priority_out) {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    CHECK(lib != NULL);
    int (*get_dev)(int *, int) = (int (*)(int *, int))dlsym(lib, "cuDeviceGet");
    int (*retain)(void **, int) = (int (*)(void **, int))dlsym(lib, "cuDevicePrimaryCtxRetain");
    int (*set_current)(void *) = (int (*)(void *))dlsym(lib, "cuCtxSetCurrent");
    int (*create)(void **, unsigned, int) = (int (*)(void **, unsigned, int))dlsym(lib, "cuStreamCreateWithPriority");
    CHECK(get_dev && retain && set_current && create);
    int dev = 0;
    void *ctx = NULL, *stream = NULL;
    CHECK(get_dev(&dev, ordinal) == 0);
    CHECK(retain(&ctx, dev) == 0);
    CHECK(set_current(ctx) == 0);
    CHECK(create(&stream, 1 /* CU_STREAM_NON_BLOCKING */, -1) == 0);
    *priority_out = -1;
    return stream;
}

static void run(int device) {
    uint64_t seed = test_seed();
    gaio_device_props props;
    OK(gaio_device_get_props(device, &props));
    gaio_context *ctx;
    OK(gaio_context_create(device, NULL, &ctx));
    gaio_stream *s;
    if (props.kind == GAIO_DEVICE_HOST) {
        FAILS(GAIO_ERR_NOT_SUPPORTED, gaio_stream_wrap(ctx, (void *)0x1, 0, &s), "gaio_stream_wrap");
        OK(gaio_context_release(ctx));
        return;
    }

    /* priorities: every level creates, native handles differ */
    CHECK(props.max_priority >= 1);
    gaio_stream *lo, *hi;
    OK(gaio_stream_create(ctx, 0, 0, &lo));
    OK(gaio_stream_create(ctx, props.max_priority, 0, &hi));
    void *nlo, *nhi;
    OK(gaio_stream_native(lo, &nlo));
    OK(gaio_stream_native(hi, &nhi));
    CHECK(nlo && nhi && nlo != nhi);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_stream_create(ctx, props.max_priority + 1, 0, &s), "gaio_stream_create");

    printf("step: %s\n", "NVRTC failure comes ba");
    /* NVRTC failure comes back with its log */
    char log[4096];
    gaio_library *bad = NULL;
    FAILS(GAIO_ERR_INVALID_ARG,
          gaio_library_compile("extern \"C\" __global__ void k() { undefined_thing(); }", "bad.cu", NULL, 0, log,
                               sizeof log, &bad),
          "gaio_library_compile");
    CHECK(bad == NULL && strstr(log, "undefined_thing") != NULL);

    printf("step: %s\n", "NVRTC success:");
    /* NVRTC success: a kernel of the same name as a host kernel runs on both backends */
    const size_t sizes[3] = {sizeof(void *), 8, 4};
    gaio_kernel *k;
    OK(gaio_kernel_register("cuda_scale", host_scale, 3, sizes, &k));
    gaio_library *lib;
    OK(gaio_library_compile(SOURCE, "cuda_test.cu", NULL, 0, log, sizeof log, &lib));
    gaio_kernel *k2;
    OK(gaio_library_get_kernel(lib, "cuda_scale", &k2));
    CHECK(k2 == k);
    OK(gaio_kernel_release(k2));

    enum { N = 100003 };
    float *ref = malloc(N * sizeof *ref);
    CHECK(ref);
    gaio_buffer *host, *dev;
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_PINNED, N * sizeof(float), &host));
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_DEVICE, N * sizeof(float), &dev));
    float *h;
    OK(gaio_buffer_host_ptr(host, (void **)&h));
    for (int i = 0; i < N; i++) ref[i] = h[i] = (float)(test_rand(&seed) % 1000) / 7.0f + 1.0f;
    float a = 3.0f;
    unsigned long long n = N;
    gaio_arg args[3] = {GAIO_ARG_BUFFER(dev), GAIO_ARG(n), GAIO_ARG(a)};

    printf("step: %s\n", "through a foreign stre");
    /* through a foreign stream: gaio uses it and never destroys it */
    int fprio;
    void *raw = foreign_stream(props.ordinal, &fprio);
    gaio_stream *wrapped;
    OK(gaio_stream_wrap(ctx, raw, 0, &wrapped));
    void *back;
    OK(gaio_stream_native(wrapped, &back));
    CHECK(back == raw);
    int wprio = -1; /* CUDA -1 is one step above normal (0): gaio's 1 */
    OK(gaio_stream_priority(wrapped, &wprio));
    CHECK(wprio == -fprio);
    OK(gaio_memcpy_async(wrapped, dev, 0, host, 0, N * sizeof(float)));
    OK(gaio_launch(wrapped, k, (gaio_dim3){(N + 255) / 256, 1, 1}, (gaio_dim3){256, 1, 1}, 0, args, 3));
    OK(gaio_memcpy_async(wrapped, host, 0, dev, 0, N * sizeof(float)));
    OK(gaio_stream_synchronize(wrapped));
    for (int i = 0; i < N; i++) CHECK(h[i] == ref[i] * a);
    printf("step: %s\n", "a wait on a foreign str");
    /* a wait on a foreign stream orders the owner's own work too, even where the
     * event's point is held behind host work (the DLPack export to PyTorch) */
    {
        void *cuda = dlopen("libcuda.so.1", RTLD_NOW);
        CHECK(cuda != NULL);
        int (*dtoh)(void *, unsigned long long, size_t, void *) =
            (int (*)(void *, unsigned long long, size_t, void *))dlsym(cuda, "cuMemcpyDtoHAsync_v2");
        int (*sync)(void *) = (int (*)(void *))dlsym(cuda, "cuStreamSynchronize");
        CHECK(dtoh && sync);
        float *back_h = malloc(N * sizeof(float));
        CHECK(back_h);
        OK(gaio_memset_async(lo, dev, 0, 0, N * sizeof(float)));
        OK(gaio_stream_synchronize(lo));
        OK(gaio_launch_host_func(lo, slow_host_fn, NULL)); /* holds lo's copy below on the host */
        OK(gaio_memcpy_async(lo, dev, 0, host, 0, N * sizeof(float)));
        gaio_event *ev;
        OK(gaio_event_create(ctx, GAIO_EVENT_DISABLE_TIMING, &ev));
        OK(gaio_event_record(ev, lo));
        OK(gaio_stream_wait_event(wrapped, ev));
        void *dp;
        OK(gaio_buffer_device_ptr(dev, &dp));
        CHECK(dtoh(back_h, (unsigned long long)(uintptr_t)dp, N * sizeof(float), raw) == 0); /* not through gaio */
        CHECK(sync(raw) == 0);
        CHECK(memcmp(back_h, h, N * sizeof(float)) == 0);
        OK(gaio_event_release(ev));
        free(back_h);
        dlclose(cuda);
    }
    OK(gaio_stream_release(wrapped)); /* raw stays valid: used again below through a new wrap */
    OK(gaio_stream_wrap(ctx, raw, 0, &wrapped));
    OK(gaio_stream_synchronize(wrapped));
    OK(gaio_stream_release(wrapped));

    printf("step: %s\n", "the same launch on the");
    /* the same launch on the host backend gives the same numbers */
    gaio_context *hctx;
    OK(gaio_context_create(0, NULL, &hctx));
    gaio_stream *hs;
    OK(gaio_context_default_stream(hctx, &hs));
    gaio_buffer *hb;
    OK(gaio_buffer_alloc(hctx, GAIO_MEM_PINNED, N * sizeof(float), &hb));
    float *hp;
    OK(gaio_buffer_host_ptr(hb, (void **)&hp));
    memcpy(hp, ref, N * sizeof(float));
    gaio_arg hargs[3] = {GAIO_ARG_BUFFER(hb), GAIO_ARG(n), GAIO_ARG(a)};
    OK(gaio_launch(hs, k, (gaio_dim3){(N + 255) / 256, 1, 1}, (gaio_dim3){256, 1, 1}, 0, hargs, 3));
    OK(gaio_stream_synchronize(hs));
    CHECK(memcmp(hp, h, N * sizeof(float)) == 0);

    printf("step: %s\n", "__device__ and __manag");
    /* __device__ and __managed__ variables */
    gaio_kernel *bump;
    OK(gaio_library_get_kernel(lib, "cuda_bump", &bump));
    gaio_buffer *gvar, *mvar;
    OK(gaio_library_get_global(lib, ctx, "counter_dev", &gvar));
    OK(gaio_library_get_managed(lib, ctx, "counter_managed", &mvar));
    size_t gsize;
    OK(gaio_buffer_size(gvar, &gsize));
    CHECK(gsize == sizeof(int));
    OK(gaio_memset_async(lo, gvar, 0, 0, sizeof(int)));
    OK(gaio_memset_async(lo, mvar, 0, 0, sizeof(int)));
    int by = 5;
    gaio_arg bargs[1] = {GAIO_ARG(by)};
    OK(gaio_launch(lo, bump, (gaio_dim3){4, 1, 1}, (gaio_dim3){32, 1, 1}, 0, bargs, 1));
    OK(gaio_memcpy_async(lo, host, 0, gvar, 0, sizeof(int)));
    OK(gaio_stream_synchronize(lo));
    int got;
    memcpy(&got, h, sizeof got);
    CHECK(got == 4 * 32 * 5);
    int *m;
    OK(gaio_buffer_host_ptr(mvar, (void **)&m));
    CHECK(*m == 4 * 32 * 5);
    gaio_buffer *none = NULL;
    FAILS(GAIO_ERR_NOT_FOUND, gaio_library_get_global(lib, ctx, "no_such_var", &none), "gaio_library_get_global");
    CHECK(none == NULL);
    FAILS(GAIO_ERR_NOT_FOUND, gaio_library_get_kernel(lib, "no_such_kernel", &k2), "gaio_library_get_kernel");

    printf("step: %s\n", "event timing on the de");
    /* event timing on the device clock */
    gaio_event *e0, *e1;
    OK(gaio_event_create(ctx, 0, &e0));
    OK(gaio_event_create(ctx, 0, &e1));
    OK(gaio_event_record(e0, hi));
    for (int i = 0; i < 50; i++)
        OK(gaio_launch(hi, k, (gaio_dim3){(N + 255) / 256, 1, 1}, (gaio_dim3){256, 1, 1}, 0, args, 3));
    OK(gaio_event_record(e1, hi));
    OK(gaio_event_synchronize(e1));
    float ms = -1;
    OK(gaio_event_elapsed_ms(e0, e1, &ms));
    CHECK(ms > 0 && ms < 1000);
    printf("50 launches: %.3f ms on the device clock\n", (double)ms);

    printf("step: teardown\n");
    OK(gaio_event_release(e0));
    OK(gaio_event_release(e1));
    OK(gaio_buffer_release(gvar));
    OK(gaio_buffer_release(mvar));
    OK(gaio_kernel_release(bump));
    OK(gaio_buffer_release(hb));
    OK(gaio_context_release(hctx));
    OK(gaio_buffer_release(host));
    OK(gaio_buffer_release(dev));
    OK(gaio_library_release(lib));
    OK(gaio_kernel_unregister("cuda_scale"));
    OK(gaio_kernel_unregister("cuda_bump"));
    OK(gaio_kernel_release(k));
    OK(gaio_stream_release(lo));
    OK(gaio_stream_release(hi));
    printf("step: release the context\n");
    OK(gaio_context_release(ctx));
    printf("step: released\n");
    free(ref);
}
