/* Several GPUs: one library loaded once launches on every device (context-independent
 * loading), copies go peer to peer, events order streams of different devices, and
 * DEVICE memory of one GPU is refused in another GPU's kernels. Needs two CUDA
 * devices; otherwise it prints "SKIPPED: ..." and exits 77 at once (test_skip). */
#include "common.h"

static const char *SOURCE =
    "extern \"C\" __global__ void multi_iota(unsigned *x, unsigned n, unsigned base) {\n"
    "    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)\n"
    "        x[i] = base + i * 3u;\n"
    "}\n";

static int cuda_devices(int *first) {
    int n = 0, found = 0;
    OK(gaio_device_count(&n));
    for (int d = 0; d < n; d++) {
        gaio_device_props p;
        OK(gaio_device_get_props(d, &p));
        if (p.kind != GAIO_DEVICE_CUDA) continue;
        if (!found) *first = d;
        found++;
    }
    return found;
}

static void run(int device) {
    gaio_device_props props;
    OK(gaio_device_get_props(device, &props));
    if (props.kind == GAIO_DEVICE_HOST) {
        printf("host: multi-GPU work is a CUDA matter; nothing to check here\n");
        return;
    }
    int first = -1, ncuda = cuda_devices(&first);
    if (ncuda < 2) test_skip("needs two CUDA devices, this process has %d", ncuda);
    if (device != first) return; /* one pass covers every pair */
    uint64_t seed = test_seed();
    int n = 0;
    OK(gaio_device_count(&n));
    enum { N = 1 << 20 };
    char log[4096];
    gaio_library *lib;
    OK(gaio_library_compile(SOURCE, "multi.cu", NULL, 0, log, sizeof log, &lib));
    gaio_kernel *k;
    OK(gaio_library_get_kernel(lib, "multi_iota", &k));

    gaio_context *ctx[2];
    gaio_stream *s[2];
    gaio_buffer *dev[2], *pinned;
    OK(gaio_context_create(first, NULL, &ctx[0]));
    OK(gaio_context_create(first + 1, NULL, &ctx[1]));
    OK(gaio_buffer_alloc(ctx[0], GAIO_MEM_PINNED, N * sizeof(unsigned), &pinned));
    unsigned *h;
    OK(gaio_buffer_host_ptr(pinned, (void **)&h));
    unsigned base[2] = {(unsigned)test_rand(&seed) & 0xffff, (unsigned)test_rand(&seed) & 0xffff};
    for (int i = 0; i < 2; i++) {
        OK(gaio_stream_create(ctx[i], 0, 0, &s[i]));
        OK(gaio_buffer_alloc(ctx[i], GAIO_MEM_DEVICE, N * sizeof(unsigned), &dev[i]));
        unsigned count = N;
        gaio_arg args[3] = {GAIO_ARG_BUFFER(dev[i]), GAIO_ARG(count), GAIO_ARG(base[i])};
        OK(gaio_launch(s[i], k, (gaio_dim3){256, 1, 1}, (gaio_dim3){256, 1, 1}, 0, args, 3));
    }
    /* the same kernel handle ran on both devices */
    for (int i = 0; i < 2; i++) {
        OK(gaio_memcpy_async(s[i], pinned, 0, dev[i], 0, N * sizeof(unsigned)));
        OK(gaio_stream_synchronize(s[i]));
        for (unsigned j = 0; j < N; j++) CHECK(h[j] == base[i] + j * 3u);
    }

    /* device 0 -> device 1, peer to peer, ordered by an event of device 0 */
    gaio_event *e;
    OK(gaio_event_create(ctx[0], 0, &e));
    unsigned count = N, base2 = base[0] + 7;
    gaio_arg args[3] = {GAIO_ARG_BUFFER(dev[0]), GAIO_ARG(count), GAIO_ARG(base2)};
    OK(gaio_launch(s[0], k, (gaio_dim3){256, 1, 1}, (gaio_dim3){256, 1, 1}, 0, args, 3));
    OK(gaio_event_record(e, s[0]));
    OK(gaio_stream_wait_event(s[1], e));
    OK(gaio_memcpy_async(s[1], dev[1], 0, dev[0], 0, N * sizeof(unsigned)));
    OK(gaio_memcpy_async(s[1], pinned, 0, dev[1], 0, N * sizeof(unsigned)));
    OK(gaio_stream_synchronize(s[1]));
    for (unsigned j = 0; j < N; j++) CHECK(h[j] == base2 + j * 3u);

    /* 2D, peer to peer: a W x H byte rectangle of device 0's memory (pitch SP, from
     * byte X0 of each row) into device 1's (pitch DP); bytes between rows untouched */
    enum { W = 1000, H = 300, SP = 4096, DP = 2048, X0 = 12 };
    OK(gaio_memset_async(s[1], dev[1], 0, 0x5A, (size_t)H * DP));
    OK(gaio_memcpy_2d_async(s[1], dev[1], 0, DP, dev[0], X0, SP, W, H));
    OK(gaio_memcpy_async(s[1], pinned, 0, dev[1], 0, (size_t)H * DP));
    OK(gaio_stream_synchronize(s[1]));
    const unsigned char *got = (const unsigned char *)h;
    for (size_t r = 0; r < H; r++)
        for (size_t x = 0; x < DP; x++) {
            size_t src_byte = r * SP + X0 + x; /* device 0 holds base2 + j * 3 at word j */
            unsigned word = base2 + (unsigned)(src_byte / 4) * 3u;
            unsigned char want = x < W ? (unsigned char)(word >> (8 * (src_byte % 4))) : 0x5A;
            if (got[r * DP + x] != want) {
                fprintf(stderr, "2D peer copy: row %zu byte %zu is 0x%02x, expected 0x%02x\n", r, x, got[r * DP + x],
                        want);
                exit(1);
            }
        }

    /* DEVICE memory of device 0 in a kernel on device 1: refused, nothing enqueued */
    gaio_arg wrong[3] = {GAIO_ARG_BUFFER(dev[0]), GAIO_ARG(count), GAIO_ARG(base2)};
    FAILS(GAIO_ERR_INVALID_ARG, gaio_launch(s[1], k, (gaio_dim3){1, 1, 1}, (gaio_dim3){1, 1, 1}, 0, wrong, 3),
          "gaio_launch");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_memset_async(s[1], dev[0], 0, 0, 4), "gaio_memset_async");
    OK(gaio_stream_query(s[1]));
    printf("%d CUDA devices: one library on both, peer copy and cross-device event checked\n", n - 1);

    OK(gaio_event_release(e));
    for (int i = 0; i < 2; i++) {
        OK(gaio_buffer_release(dev[i]));
        OK(gaio_stream_release(s[i]));
    }
    OK(gaio_buffer_release(pinned));
    OK(gaio_kernel_release(k));
    OK(gaio_library_release(lib));
    OK(gaio_context_release(ctx[0]));
    OK(gaio_context_release(ctx[1]));
}
