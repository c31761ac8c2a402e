/* The core's own kernels, the random numbers of core/rng.c: their host versions
 * here, their CUDA versions in src/kernels/rng.cu (embedded as gaio__core_device_code). */
#include <string.h>

#include "core/kernel_registry.h"
#include "core/philox.h"

typedef struct rng_args {
    void *dst;
    uint64_t count, seed, offset;
} rng_args;

static rng_args rng_unpack(void *const *args) {
    rng_args a;
    memcpy(&a.dst, args[0], sizeof a.dst);
    memcpy(&a.count, args[1], sizeof a.count);
    memcpy(&a.seed, args[2], sizeof a.seed);
    memcpy(&a.offset, args[3], sizeof a.offset);
    return a;
}

static float f32_arg(void *const *args, int i) {
    float v;
    memcpy(&v, args[i], sizeof v);
    return v;
}

/* Walks the words of a fill; out may be unaligned to a Philox block only at the end. */
#define FOR_EACH_BLOCK(a, w, body)                                        \
    for (uint64_t i = 0; i < (a).count; i += 4) {                         \
        uint32_t w[4];                                                    \
        gaio__philox_words((a).seed, (a).offset + i / 4, w);              \
        uint64_t n = (a).count - i < 4 ? (a).count - i : 4;               \
        body                                                              \
    }

static gaio_status philox_bits_u32(const gaio_launch_info *info, void *const *args) {
    (void)info;
    rng_args a = rng_unpack(args);
    uint32_t *out = a.dst;
    FOR_EACH_BLOCK(a, w, { memcpy(out + i, w, n * sizeof *out); })
    return GAIO_OK;
}

static gaio_status philox_uniform_f32(const gaio_launch_info *info, void *const *args) {
    (void)info;
    rng_args a = rng_unpack(args);
    float low = f32_arg(args, 4), high = f32_arg(args, 5), span = high - low;
    float *out = a.dst;
    FOR_EACH_BLOCK(a, w, {
        for (uint64_t j = 0; j < n; j++) out[i + j] = gaio__u32_to_uniform(w[j], low, span, high);
    })
    return GAIO_OK;
}

static gaio_status philox_normal_f32(const gaio_launch_info *info, void *const *args) {
    (void)info;
    rng_args a = rng_unpack(args);
    float mean = f32_arg(args, 4), stddev = f32_arg(args, 5);
    float *out = a.dst;
    FOR_EACH_BLOCK(a, w, {
        float z[4];
        gaio__box_muller(w[0], w[1], &z[0], &z[1]);
        gaio__box_muller(w[2], w[3], &z[2], &z[3]);
        for (uint64_t j = 0; j < n; j++) out[i + j] = mean + stddev * z[j];
    })
    return GAIO_OK;
}

static const size_t rng_sizes[6] = {sizeof(void *), 8, 8, 8, 4, 4};

static const gaio_builtin_kernel builtins[] = {
    {"gaio_philox_bits_u32", philox_bits_u32, 4, rng_sizes},
    {"gaio_philox_uniform_f32", philox_uniform_f32, 6, rng_sizes},
    {"gaio_philox_normal_f32", philox_normal_f32, 6, rng_sizes},
    {NULL, NULL, 0, NULL},
};

extern const gaio_device_code gaio__core_device_code[]; /* generated: cmake/embed_fatbin.cmake */

static const gaio_builtin_kernel *const host_tables[] = {builtins, NULL};

static const gaio_kernel_set rng_kernels = {"core", host_tables, gaio__core_device_code};

void gaio__rng_register_kernels(void) { gaio__kernels_register(&rng_kernels); }
