/* gaio_shutdown frees gaio's process-wide state and gaio starts again after it.
 * Three cycles of: a context, a stream, a fill by one of gaio's own kernels
 * checked word by word against Philox computed here, release, shutdown. On a CUDA
 * device each shutdown must leave the device's primary context unretained by gaio
 * (its completion-slot slabs freed) and gaio's kernel libraries unloaded: the next
 * cycle loads them again and gets the same numbers. */
#include <dlfcn.h>
#include <inttypes.h>

#include "common.h"

#define CYCLES 3
#define COUNT 4099 /* not a multiple of the 4 words of a Philox block */

static uint32_t ref_word(uint64_t seed, uint64_t offset, uint64_t i) {
    uint64_t counter = offset + i / 4;
    const uint32_t ctr[4] = {(uint32_t)counter, (uint32_t)(counter >> 32), 0, 0};
    const uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    uint32_t out[4];
    gaio_philox4x32_10(ctr, key, out);
    return out[i % 4];
}

/* Whether the device's primary context is active, asked of the driver directly
 * (gaio's own view would prove nothing): -1 where the driver cannot say. */
static int primary_active(int cuda_ordinal) {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!lib) return -1;
    int (*get_dev)(int *, int) = (int (*)(int *, int))dlsym(lib, "cuDeviceGet");
    int (*get_state)(int, unsigned *, int *) = (int (*)(int, unsigned *, int *))dlsym(lib, "cuDevicePrimaryCtxGetState");
    int dev = 0, active = -1;
    unsigned flags = 0;
    if (!get_dev || !get_state || get_dev(&dev, cuda_ordinal) != 0 || get_state(dev, &flags, &active) != 0) active = -1;
    dlclose(lib);
    return active;
}

static void cycle(int device, uint64_t seed, uint64_t offset) {
    gaio_context *ctx;
    OK(gaio_context_create(device, NULL, &ctx));
    gaio_stream *s;
    OK(gaio_stream_create(ctx, 0, 0, &s));
    gaio_buffer *dst, *host;
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_DEVICE, COUNT * 4, &dst));
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_PINNED, COUNT * 4, &host));
    OK(gaio_rng_set_state(ctx, seed, offset));
    OK(gaio_rng_bits_u32(s, dst, 0, COUNT));
    OK(gaio_memcpy_async(s, host, 0, dst, 0, COUNT * 4));
    OK(gaio_stream_synchronize(s));
    uint32_t *got;
    OK(gaio_buffer_host_ptr(host, (void **)&got));
    for (uint64_t i = 0; i < COUNT; i++) {
        uint32_t want = ref_word(seed, offset, i);
        if (got[i] != want) {
            fprintf(stderr, "seed 0x%016" PRIx64 " offset %" PRIu64 " word %" PRIu64 ": 0x%08x, expected 0x%08x\n",
                    seed, offset, i, got[i], want);
            exit(1);
        }
    }
    OK(gaio_buffer_release(dst));
    OK(gaio_buffer_release(host));
    OK(gaio_stream_release(s));
    OK(gaio_context_release(ctx));
}

static void run(int device) {
    uint64_t rng = test_seed();
    gaio_device_props p;
    OK(gaio_device_get_props(device, &p));
    for (int c = 0; c < CYCLES; c++) {
        uint64_t seed = test_rand(&rng), offset = test_rand(&rng) >> 8;
        cycle(device, seed, offset);
        test_shutdown(); /* fails the test if anything of gaio's is still alive */
        if (p.kind == GAIO_DEVICE_CUDA) {
            int active = primary_active(p.ordinal);
            printf("cycle %d: primary context of CUDA device %d active after gaio_shutdown: %d\n", c, p.ordinal,
                   active);
            CHECK(active == 0);
        }
    }
}
