/* gaio's own kernels whichever layer a process uses first. Each layer (the core's
 * random numbers, image, dnn) registers its kernels with the core itself; a fresh
 * process that starts with any one of them must still find every built-in kernel
 * by name and run every layer's ops, and again after gaio_shutdown (which unloads
 * the device code: the next use loads it again). The test re-runs itself once per
 * layer that goes first (GAIO_TEST_FIRST), each a fresh process. */
#include <math.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"
#include "gaio/dnn.h"
#include "gaio/image.h"
#include "gaio/rng.h"

enum { N = 64, W = 4, H = 2 };

static const char *const LAYERS[3] = {"rng", "image", "dnn"};

/* Built-in kernels of each layer, one each, as the ops launch them. */
static const char *const KERNELS[3] = {"gaio_philox_uniform_f32", "gaio_img_flip", "gaio_dnn_unary"};

static void *host_ptr(gaio_buffer *b) {
    void *p = NULL;
    OK(gaio_buffer_host_ptr(b, &p));
    return p;
}

static void run_rng(gaio_stream *s, gaio_buffer *buf) {
    OK(gaio_rng_uniform_f32(s, buf, 0, N, 2.0f, 3.0f));
    OK(gaio_stream_synchronize(s));
    const float *v = host_ptr(buf);
    for (int i = 0; i < N; i++) CHECK(v[i] >= 2.0f && v[i] < 3.0f);
}

static void run_image(gaio_stream *s, gaio_buffer *src, gaio_buffer *dst) {
    uint8_t *in = host_ptr(src);
    for (int i = 0; i < W * H; i++) in[i] = (uint8_t)i;
    gaio_image a = gaio_image_make(src, 0, GAIO_DTYPE_U8, GAIO_LAYOUT_HWC, 1, W, H, 1);
    gaio_image b = gaio_image_make(dst, 0, GAIO_DTYPE_U8, GAIO_LAYOUT_HWC, 1, W, H, 1);
    OK(gaio_flip(s, &a, &b, GAIO_FLIP_HORIZONTAL));
    OK(gaio_stream_synchronize(s));
    const uint8_t *out = host_ptr(dst);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) CHECK(out[y * W + x] == in[y * W + (W - 1 - x)]);
}

static void run_dnn(gaio_stream *s, gaio_buffer *xb, gaio_buffer *yb) {
    float *x = host_ptr(xb);
    for (int i = 0; i < N; i++) x[i] = (float)(i - N / 2);
    const int64_t shape[1] = {N};
    gaio_tensor tx = gaio_tensor_make(xb, 0, GAIO_DTYPE_F32, 1, shape, GAIO_TENSOR_ROW_MAJOR);
    gaio_tensor ty = gaio_tensor_make(yb, 0, GAIO_DTYPE_F32, 1, shape, GAIO_TENSOR_ROW_MAJOR);
    gaio_unary_params relu = {GAIO_UNARY_RELU, 0, 0};
    OK(gaio_unary(s, &tx, &ty, &relu));
    OK(gaio_stream_synchronize(s));
    const float *y = host_ptr(yb);
    for (int i = 0; i < N; i++) CHECK(y[i] == fmaxf(x[i], 0.0f));
}

/* One round on a fresh context: the layer `first` goes first, then every built-in
 * kernel is found by name, then the other layers run. */
static void round_on(int device, int first) {
    gaio_context *ctx;
    OK(gaio_context_create(device, NULL, &ctx));
    gaio_stream *s;
    OK(gaio_context_default_stream(ctx, &s));
    const gaio_mem_kind kind = GAIO_MEM_MANAGED; /* the host reads it back directly */
    gaio_buffer *a, *b;
    OK(gaio_buffer_alloc(ctx, kind, N * sizeof(float), &a));
    OK(gaio_buffer_alloc(ctx, kind, N * sizeof(float), &b));
    for (int i = 0; i < 3; i++) {
        int layer = (first + i) % 3;
        if (i == 1) /* after the first layer's op: every layer's kernels are registered */
            for (int k = 0; k < 3; k++) {
                gaio_kernel *kernel = NULL;
                OK(gaio_kernel_find(KERNELS[k], &kernel));
                CHECK(strcmp(gaio_kernel_name(kernel), KERNELS[k]) == 0);
                OK(gaio_kernel_release(kernel));
            }
        switch (layer) {
        case 0: run_rng(s, a); break;
        case 1: run_image(s, a, b); break;
        default: run_dnn(s, a, b); break;
        }
    }
    OK(gaio_buffer_release(a));
    OK(gaio_buffer_release(b));
    OK(gaio_context_release(ctx));
}

/* In a child: the layer named by GAIO_TEST_FIRST goes first, twice (a shutdown in
 * between). */
static void child(int device, const char *first_name) {
    int first = -1;
    for (int i = 0; i < 3; i++)
        if (strcmp(first_name, LAYERS[i]) == 0) first = i;
    CHECK(first >= 0);
    round_on(device, first);
    test_shutdown();
    round_on(device, first);
}

static void run(int device) {
    const char *first = getenv("GAIO_TEST_FIRST"), *only = getenv("GAIO_TEST_DEVICE");
    if (first) {
        if (only && atoi(only) == device) child(device, first);
        return;
    }
    gaio_device_props p;
    OK(gaio_device_get_props(device, &p));
    for (int i = 0; i < 3; i++) {
        printf("  %s first\n", LAYERS[i]);
        fflush(stdout);
        pid_t pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) { /* a fresh process: exec ourselves, so that no CUDA state crosses the fork */
            char dev[16];
            snprintf(dev, sizeof dev, "%d", device);
            setenv("GAIO_TEST_FIRST", LAYERS[i], 1);
            setenv("GAIO_TEST_DEVICE", dev, 1);
            char *const argv[] = {"test_kernel_registry", p.kind == GAIO_DEVICE_CUDA ? "--gpu" : "--host", NULL};
            execv("/proc/self/exe", argv);
            _exit(127);
        }
        int status = 0;
        CHECK(waitpid(pid, &status, 0) == pid);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
}
