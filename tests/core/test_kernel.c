/* The kernel registry and gaio_launch: arguments by value and by buffer, copies
 * made at launch, launch geometry, shared memory, and kernels that outlive their
 * registration. Each test kernel has a host version and a CUDA twin of the same name
 * and arguments (test_kernel in common.h), so the same calls run on every backend.
 * Kernel arguments are DEVICE, PINNED or MANAGED memory: HOST (pageable) memory is
 * refused on every backend. */
#include <stdatomic.h>
#include <stdbool.h>

#include "common.h"
#include "support.h"

#define SAXPY_NAME "test_kernel_saxpy"
#define PROBE_NAME "test_kernel_probe"
#define BLOB_NAME "test_kernel_blob"
#define FAIL_NAME "test_kernel_fail"

/* The CUDA twins, compiled with NVRTC where CUDA devices exist. Their parameters have
 * the sizes the host versions are registered with (the driver reports them and gaio
 * compares). */
static const char *const SAXPY_SRC =
    "extern \"C\" __global__ void test_kernel_saxpy(float a, const float *x, float *y, unsigned int n) {\n"
    "    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    /* a * x rounded, then + y rounded, as the host computes it: no fused multiply-add */\n"
    "    if (i < n) y[i] = __fadd_rn(__fmul_rn(a, x[i]), y[i]);\n"
    "}\n";

/* The last thread of the last block reports, so the whole grid ran. Dynamic shared
 * memory is filled by the block's threads and summed by the reporter. CUDA has no
 * NULL shared memory: shared_null is the host's notion and reads 0 here. */
static const char *const PROBE_SRC =
    "struct probe_report {\n"
    "    unsigned int grid[3], block[3];\n"
    "    unsigned long long shared_bytes, shared_null, shared_sum, tag;\n"
    "};\n"
    "extern \"C\" __global__ void test_kernel_probe(probe_report *r, unsigned long long tag) {\n"
    "    extern __shared__ unsigned char sm[];\n"
    "    if (blockIdx.x != gridDim.x - 1 || blockIdx.y != gridDim.y - 1 || blockIdx.z != gridDim.z - 1) return;\n"
    "    unsigned int bytes;\n"
    "    asm volatile(\"mov.u32 %0, %%dynamic_smem_size;\" : \"=r\"(bytes));\n"
    "    unsigned int nthreads = blockDim.x * blockDim.y * blockDim.z;\n"
    "    unsigned int t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);\n"
    "    for (unsigned int i = t; i < bytes; i += nthreads) sm[i] = (unsigned char)(i * 7ull + tag);\n"
    "    __syncthreads();\n"
    "    if (t != nthreads - 1) return;\n"
    "    unsigned long long sum = 0;\n"
    "    for (unsigned int i = 0; i < bytes; i++) sum += sm[i];\n"
    "    r->grid[0] = gridDim.x, r->grid[1] = gridDim.y, r->grid[2] = gridDim.z;\n"
    "    r->block[0] = blockDim.x, r->block[1] = blockDim.y, r->block[2] = blockDim.z;\n"
    "    r->shared_bytes = bytes;\n"
    "    r->shared_null = 0;\n"
    "    r->shared_sum = sum;\n"
    "    r->tag = tag;\n"
    "}\n";

static const char *const BLOB_SRC =
    "struct blob { unsigned char bytes[37]; };\n"
    "extern \"C\" __global__ void test_kernel_blob(unsigned char *out, blob b, unsigned short extra) {\n"
    "    for (int i = 0; i < 37; i++) out[i] = b.bytes[i];\n"
    "    out[37] = (unsigned char)extra; /* little-endian, like the host's memcpy */\n"
    "    out[38] = (unsigned char)(extra >> 8);\n"
    "}\n";

/* Floats in [-8, 8), never 0. */
static float rand_float(uint64_t *rng) {
    float f = (float)(int64_t)(test_rand(rng) % 2000001u - 1000000) / 125000.0f;
    return f != 0.0f ? f : 0.5f;
}

/* One formula for the kernel and for the reference, so rounding is the same. */
static float saxpy1(float a, float x, float y) { return a * x + y; }

static atomic_int saxpy_runs;

/* y[i] = a * x[i] + y[i] for i < n, over a CUDA-style grid of blocks of threads. */
static gaio_status saxpy_kernel(const gaio_launch_info *info, void *const *args) {
    float a;
    const float *x;
    float *y;
    uint32_t n;
    memcpy(&a, args[0], sizeof a);
    memcpy(&x, args[1], sizeof x);
    memcpy(&y, args[2], sizeof y);
    memcpy(&n, args[3], sizeof n);
    for (uint32_t b = 0; b < info->grid.x; b++)
        for (uint32_t t = 0; t < info->block.x; t++) {
            uint64_t i = (uint64_t)b * info->block.x + t;
            if (i < n) y[i] = saxpy1(a, x[i], y[i]);
        }
    atomic_fetch_add(&saxpy_runs, 1);
    return GAIO_OK;
}

/* What the probe kernel saw, written to its buffer argument. */
typedef struct probe_report {
    uint32_t grid[3], block[3];
    uint64_t shared_bytes;
    uint64_t shared_null;
    uint64_t shared_sum; /* after writing i*7+tag to every byte and reading back */
    uint64_t tag;
} probe_report;

static gaio_status probe_kernel(const gaio_launch_info *info, void *const *args) {
    probe_report *r;
    uint64_t tag;
    memcpy(&r, args[0], sizeof r);
    memcpy(&tag, args[1], sizeof tag);
    r->grid[0] = info->grid.x, r->grid[1] = info->grid.y, r->grid[2] = info->grid.z;
    r->block[0] = info->block.x, r->block[1] = info->block.y, r->block[2] = info->block.z;
    r->shared_bytes = info->shared_mem_bytes;
    r->shared_null = info->shared_mem == NULL;
    r->tag = tag;
    uint64_t sum = 0;
    if (info->shared_mem) {
        unsigned char *sm = info->shared_mem;
        for (size_t i = 0; i < info->shared_mem_bytes; i++) sm[i] = (unsigned char)(i * 7 + tag);
        for (size_t i = 0; i < info->shared_mem_bytes; i++) sum += sm[i];
    }
    r->shared_sum = sum;
    return GAIO_OK;
}

/* A by-value argument of odd size, copied byte for byte. */
typedef struct blob {
    unsigned char bytes[37];
} blob;

static gaio_status blob_kernel(const gaio_launch_info *info, void *const *args) {
    (void)info;
    unsigned char *out;
    memcpy(&out, args[0], sizeof out);
    memcpy(out, args[1], sizeof(blob));
    uint16_t extra;
    memcpy(&extra, args[2], sizeof extra);
    memcpy(out + sizeof(blob), &extra, sizeof extra);
    return GAIO_OK;
}

static gaio_status fail_kernel(const gaio_launch_info *info, void *const *args) {
    (void)info;
    (void)args;
    return GAIO_ERR_USER;
}

static const size_t saxpy_sizes[4] = {sizeof(float), sizeof(void *), sizeof(void *), sizeof(uint32_t)};
static const size_t probe_sizes[2] = {sizeof(void *), sizeof(uint64_t)};
static const size_t blob_sizes[3] = {sizeof(void *), sizeof(blob), sizeof(uint16_t)};

static bool on_host(int device) {
    gaio_device_props props;
    OK(gaio_device_get_props(device, &props));
    return props.kind == GAIO_DEVICE_HOST;
}

/* saxpy_runs counts runs of the host version only: a launch on a CUDA stream runs
 * the twin on the GPU and leaves it as it was. */
static int expected_runs(int device, int before, int launches) { return before + (on_host(device) ? launches : 0); }

/* Where CUDA devices exist: compiles the twin of a kernel registered for the host
 * already and checks that it joins that registration (test_kernel does both steps;
 * this is the second alone, for a registration made without a handle). */
static void join_cuda_twin(const char *name, const char *source) {
    if (!test_have_cuda()) return;
    static const char *const opts[] = {"-std=c++17"};
    char log[8192];
    gaio_library *lib = NULL;
    gaio_status st = gaio_library_compile(source, name, opts, 1, log, sizeof log, &lib);
    if (st != GAIO_OK) {
        fprintf(stderr, "CUDA twin of kernel '%s' did not compile (%s):\n%s\n", name, gaio_status_string(st), log);
        exit(1);
    }
    gaio_kernel *registered, *joined;
    OK(gaio_kernel_find(name, &registered));
    OK(gaio_library_get_kernel(lib, name, &joined));
    CHECK(joined == registered);
    OK(gaio_kernel_release(joined));
    OK(gaio_kernel_release(registered));
    OK(gaio_library_release(lib)); /* the kernel keeps it loaded */
}

static void test_registry(uint64_t *rng) {
    (void)rng;
    gaio_kernel *k, *k2;
    FAILS(GAIO_ERR_NOT_FOUND, gaio_kernel_find(SAXPY_NAME, &k), "gaio_kernel_find");
    k = test_kernel(SAXPY_NAME, saxpy_kernel, 4, saxpy_sizes, SAXPY_SRC);
    CHECK(k != NULL);
    CHECK(strcmp(gaio_kernel_name(k), SAXPY_NAME) == 0);
    OK(gaio_kernel_find(SAXPY_NAME, &k2));
    CHECK(k2 == k);
    OK(gaio_kernel_release(k2));

    /* A name is registered once; gaio_ names are gaio's. */
    FAILS(GAIO_ERR_STATE, gaio_kernel_register(SAXPY_NAME, probe_kernel, 2, probe_sizes, &k2), "gaio_kernel_register");
    FAILS(GAIO_ERR_STATE, gaio_kernel_register(SAXPY_NAME, saxpy_kernel, 4, saxpy_sizes, NULL), "gaio_kernel_register");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_kernel_register("gaio_mine", probe_kernel, 2, probe_sizes, NULL),
          "gaio_kernel_register");
    FAILS(GAIO_ERR_NOT_FOUND, gaio_kernel_find("gaio_mine", &k2), "gaio_kernel_find");
    /* The failed duplicate did not replace the first registration. */
    OK(gaio_kernel_find(SAXPY_NAME, &k2));
    CHECK(k2 == k);
    OK(gaio_kernel_release(k2));

    /* Retain/release pairs keep the handle usable. */
    OK(gaio_kernel_retain(k));
    OK(gaio_kernel_retain(k));
    OK(gaio_kernel_release(k));
    OK(gaio_kernel_release(k));
    CHECK(strcmp(gaio_kernel_name(k), SAXPY_NAME) == 0);

    /* Unregistering removes the name; our handle keeps the kernel and its name. */
    OK(gaio_kernel_unregister(SAXPY_NAME));
    FAILS(GAIO_ERR_NOT_FOUND, gaio_kernel_find(SAXPY_NAME, &k2), "gaio_kernel_find");
    FAILS(GAIO_ERR_NOT_FOUND, gaio_kernel_unregister(SAXPY_NAME), "gaio_kernel_unregister");
    CHECK(strcmp(gaio_kernel_name(k), SAXPY_NAME) == 0);
    /* The name is free again: a new kernel, not the old handle. */
    gaio_kernel *k3 = test_kernel(SAXPY_NAME, saxpy_kernel, 4, saxpy_sizes, SAXPY_SRC);
    OK(gaio_kernel_find(SAXPY_NAME, &k2));
    CHECK(k2 == k3 && k2 != k);
    CHECK(strcmp(gaio_kernel_name(k2), SAXPY_NAME) == 0);
    OK(gaio_kernel_release(k2));
    OK(gaio_kernel_release(k3));
    OK(gaio_kernel_unregister(SAXPY_NAME));
    OK(gaio_kernel_release(k));

    /* Registering without asking for a handle (then the CUDA twin joins it). */
    OK(gaio_kernel_register(PROBE_NAME, probe_kernel, 2, probe_sizes, NULL));
    join_cuda_twin(PROBE_NAME, PROBE_SRC);
    OK(gaio_kernel_find(PROBE_NAME, &k));
    CHECK(strcmp(gaio_kernel_name(k), PROBE_NAME) == 0);
    OK(gaio_kernel_release(k));
    OK(gaio_kernel_unregister(PROBE_NAME));
}

/* saxpy over n elements at element offsets xo, yo of two device buffers. */
static void test_saxpy(gaio_context *ctx, gaio_stream *s, int device, uint64_t *rng) {
    gaio_kernel *k = test_kernel(SAXPY_NAME, saxpy_kernel, 4, saxpy_sizes, SAXPY_SRC);
    for (int iter = 0; iter < 6; iter++) {
        uint32_t n = (uint32_t)rand_range(rng, 1, 50000);
        size_t xo = rand_range(rng, 0, 100), yo = rand_range(rng, 0, 100);
        size_t xs = (xo + n) * sizeof(float), ys = (yo + n + 7) * sizeof(float);
        float *hx = malloc(xs), *hy = malloc(ys), *want = malloc(ys);
        CHECK(hx && hy && want);
        for (size_t i = 0; i < xs / sizeof(float); i++) hx[i] = rand_float(rng);
        for (size_t i = 0; i < ys / sizeof(float); i++) hy[i] = rand_float(rng);
        float a = rand_float(rng);
        memcpy(want, hy, ys);
        for (size_t i = 0; i < n; i++) want[yo + i] = saxpy1(a, hx[xo + i], hy[yo + i]);

        gaio_buffer *stage, *dx, *dy;
        OK(gaio_buffer_alloc(ctx, GAIO_MEM_PINNED, xs > ys ? xs : ys, &stage));
        OK(gaio_buffer_alloc(ctx, GAIO_MEM_DEVICE, xs, &dx));
        OK(gaio_buffer_alloc(ctx, GAIO_MEM_DEVICE, ys, &dy));
        memcpy(host_ptr(stage), hx, xs);
        OK(gaio_memcpy_async(s, dx, 0, stage, 0, xs));
        OK(gaio_stream_synchronize(s));
        memcpy(host_ptr(stage), hy, ys);
        OK(gaio_memcpy_async(s, dy, 0, stage, 0, ys));

        uint32_t block = (uint32_t)(32u << (iter % 6)); /* 32 .. 1024 */
        gaio_dim3 grid = {(n + block - 1) / block, 1, 1}, blk = {block, 1, 1};
        gaio_arg args[4] = {GAIO_ARG(a), GAIO_ARG_BUFFER_AT(dx, xo * sizeof(float)),
                            GAIO_ARG_BUFFER_AT(dy, yo * sizeof(float)), GAIO_ARG(n)};
        if (xo == 0) args[1] = GAIO_ARG_BUFFER(dx);
        int runs = atomic_load(&saxpy_runs);
        OK(gaio_launch(s, k, grid, blk, 0, args, 4));
        OK(gaio_memcpy_async(s, stage, 0, dy, 0, ys));
        OK(gaio_stream_synchronize(s));
        CHECK(atomic_load(&saxpy_runs) == expected_runs(device, runs, 1));
        const float *got = host_ptr(stage);
        for (size_t i = 0; i < ys / sizeof(float); i++) {
            if (memcmp(&got[i], &want[i], sizeof(float)) != 0) {
                fprintf(stderr, "saxpy n=%u xo=%zu yo=%zu: y[%zu] = %.9g, expected %.9g\n", n, xo, yo, i,
                        (double)got[i], (double)want[i]);
                exit(1);
            }
        }
        OK(gaio_buffer_release(stage));
        OK(gaio_buffer_release(dx));
        OK(gaio_buffer_release(dy));
        free(hx);
        free(hy);
        free(want);
    }
    OK(gaio_kernel_release(k));
    OK(gaio_kernel_unregister(SAXPY_NAME));
}

/* Values are copied when gaio_launch returns: later changes to the caller's
 * variables (and to the gaio_arg array) do not reach the kernel. */
static void test_args_copied(gaio_context *ctx, gaio_stream *s, uint64_t *rng) {
    gaio_kernel *k = test_kernel(SAXPY_NAME, saxpy_kernel, 4, saxpy_sizes, SAXPY_SRC);
    gaio_kernel *kb0 = test_kernel(BLOB_NAME, blob_kernel, 3, blob_sizes, BLOB_SRC);
    gaio_kernel *kb;
    OK(gaio_kernel_find(BLOB_NAME, &kb));
    CHECK(kb == kb0);
    OK(gaio_kernel_release(kb0));

    uint32_t n = (uint32_t)rand_range(rng, 100, 4000);
    gaio_buffer *x, *y, *out;
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_PINNED, n * sizeof(float), &x));
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_PINNED, n * sizeof(float), &y));
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_MANAGED, sizeof(blob) + 2, &out));
    float *hx = host_ptr(x), *hy = host_ptr(y);
    float *want = malloc(n * sizeof(float));
    CHECK(want != NULL);
    for (uint32_t i = 0; i < n; i++) hx[i] = rand_float(rng), hy[i] = rand_float(rng);
    float a = rand_float(rng);
    uint32_t count = n / 2; /* only the first half */
    for (uint32_t i = 0; i < n; i++) want[i] = i < count ? saxpy1(a, hx[i], hy[i]) : hy[i];

    blob bl, bl_want;
    for (size_t i = 0; i < sizeof bl.bytes; i++) bl.bytes[i] = (unsigned char)(test_rand(rng) | 1);
    bl_want = bl;
    uint16_t extra = (uint16_t)(test_rand(rng) | 1), extra_want = extra;

    gate g;
    gate_close(s, &g);
    gaio_arg args[4] = {GAIO_ARG(a), GAIO_ARG_BUFFER(x), GAIO_ARG_BUFFER(y), GAIO_ARG(count)};
    OK(gaio_launch(s, k, (gaio_dim3){(n + 127) / 128, 1, 1}, (gaio_dim3){128, 1, 1}, 0, args, 4));
    gaio_arg bargs[3] = {GAIO_ARG_BUFFER(out), GAIO_ARG(bl), GAIO_ARG(extra)};
    OK(gaio_launch(s, kb, (gaio_dim3){1, 1, 1}, (gaio_dim3){1, 1, 1}, 0, bargs, 3));
    /* Scribble over everything the launches were given. */
    a = 1000.0f;
    count = n;
    memset(&bl, 0xEE, sizeof bl);
    extra = 0;
    memset(args, 0, sizeof args);
    memset(bargs, 0, sizeof bargs);
    gate_open(&g);
    OK(gaio_stream_synchronize(s));

    for (uint32_t i = 0; i < n; i++) {
        if (memcmp(&hy[i], &want[i], sizeof(float)) != 0) {
            fprintf(stderr, "args copied: y[%u] = %.9g, expected %.9g (count %u)\n", i, (double)hy[i],
                    (double)want[i], n / 2);
            exit(1);
        }
    }
    const unsigned char *o = host_ptr(out);
    CHECK(memcmp(o, bl_want.bytes, sizeof bl_want.bytes) == 0);
    uint16_t got_extra;
    memcpy(&got_extra, o + sizeof(blob), sizeof got_extra);
    CHECK(got_extra == extra_want);

    OK(gaio_buffer_release(x));
    OK(gaio_buffer_release(y));
    OK(gaio_buffer_release(out));
    free(want);
    OK(gaio_kernel_release(k));
    OK(gaio_kernel_release(kb));
    OK(gaio_kernel_unregister(SAXPY_NAME));
    OK(gaio_kernel_unregister(BLOB_NAME));
}

/* Grid and block dimensions and shared memory arrive as given. */
static void test_geometry(gaio_context *ctx, gaio_stream *s, int device, uint64_t *rng) {
    const bool host = on_host(device);
    gaio_kernel *k = test_kernel(PROBE_NAME, probe_kernel, 2, probe_sizes, PROBE_SRC);
    enum { N = 24 };
    gaio_buffer *rep;
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_MANAGED, N * sizeof(probe_report), &rep));
    memset(host_ptr(rep), 0xFF, N * sizeof(probe_report));
    gaio_dim3 grids[N], blocks[N];
    size_t shared[N];
    for (int i = 0; i < N; i++) {
        if (host) {
            grids[i] = (gaio_dim3){(uint32_t)rand_range(rng, 1, 100000), (uint32_t)rand_range(rng, 1, 65535),
                                   (uint32_t)rand_range(rng, 1, 65535)};
        } else {
            /* A GPU runs every block of the grid (the host version is one call for the
             * whole grid): at most 2^16 blocks in all, any shape. */
            uint32_t gx = (uint32_t)rand_range(rng, 1, (size_t)1 << rand_range(rng, 0, 16));
            uint32_t gy = (uint32_t)rand_range(rng, 1, 65536 / gx < 65535 ? 65536 / gx : 65535);
            uint32_t gz = (uint32_t)rand_range(rng, 1, 65536 / (gx * gy) < 65535 ? 65536 / (gx * gy) : 65535);
            grids[i] = (gaio_dim3){gx, gy, gz};
        }
        /* Blocks up to the limit of 1024 threads (z <= 64). */
        uint32_t bx = (uint32_t)rand_range(rng, 1, 1024);
        uint32_t by = (uint32_t)rand_range(rng, 1, 1024 / bx);
        uint32_t bz = (uint32_t)rand_range(rng, 1, 1024 / (bx * by) < 64 ? 1024 / (bx * by) : 64);
        blocks[i] = (gaio_dim3){bx, by, bz};
        switch (i % 4) {
        case 0: shared[i] = 0; break;
        case 1: shared[i] = 1; break;
        case 2: shared[i] = (size_t)48 << 10; break;
        default: shared[i] = rand_range(rng, 2, (size_t)100 << 10); break;
        }
        if (i == 0) grids[i] = (gaio_dim3){1, 1, 1}, blocks[i] = (gaio_dim3){1024, 1, 1};
        /* Every grid limit at once: 9.2e18 blocks, one call of the host version. On a
         * GPU, which runs each block, each limit alone, with the other two small. */
        if (i == 1 && host) grids[i] = (gaio_dim3){0x7fffffffu, 65535, 65535}, blocks[i] = (gaio_dim3){1, 1, 64};
        if (i == 1 && !host) grids[i] = (gaio_dim3){3, 65535, 1}, blocks[i] = (gaio_dim3){1, 1, 64};
        if (i == 2 && !host) grids[i] = (gaio_dim3){2, 1, 65535}, blocks[i] = (gaio_dim3){32, 2, 1};
        if (i == 3 && !host) grids[i] = (gaio_dim3){(1u << 20) + 1, 1, 1}, blocks[i] = (gaio_dim3){64, 1, 1};
        uint64_t tag = test_rand(rng) | 1;
        gaio_arg args[2] = {GAIO_ARG_BUFFER_AT(rep, (size_t)i * sizeof(probe_report)), GAIO_ARG(tag)};
        OK(gaio_launch(s, k, grids[i], blocks[i], shared[i], args, 2));
        OK(gaio_stream_synchronize(s));
        const probe_report *r = (const probe_report *)host_ptr(rep) + i;
        CHECK(r->tag == tag);
        CHECK(r->grid[0] == grids[i].x && r->grid[1] == grids[i].y && r->grid[2] == grids[i].z);
        CHECK(r->block[0] == blocks[i].x && r->block[1] == blocks[i].y && r->block[2] == blocks[i].z);
        CHECK(r->shared_bytes == shared[i]);
        /* The host hands a kernel a scratch pointer, NULL when it asked for no shared
         * memory; CUDA shared memory has no such pointer (its twin reports 0). */
        if (host) CHECK(r->shared_null == (shared[i] == 0));
        else CHECK(r->shared_null == 0);
        uint64_t sum = 0;
        for (size_t j = 0; j < shared[i]; j++) sum += (unsigned char)(j * 7 + tag);
        CHECK(r->shared_sum == sum);
    }
    OK(gaio_buffer_release(rep));
    OK(gaio_kernel_release(k));
    OK(gaio_kernel_unregister(PROBE_NAME));
}

/* Unregistering and releasing a kernel while launches of it wait in a stream:
 * they still run, with the right results. */
static void test_unregister_in_flight(gaio_context *ctx, gaio_stream *s, int device, uint64_t *rng) {
    gaio_kernel *k = test_kernel(SAXPY_NAME, saxpy_kernel, 4, saxpy_sizes, SAXPY_SRC);
    uint32_t n = (uint32_t)rand_range(rng, 10, 3000);
    gaio_buffer *x, *y;
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_PINNED, n * sizeof(float), &x));
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_PINNED, n * sizeof(float), &y));
    float *hx = host_ptr(x), *hy = host_ptr(y);
    float *want = malloc(n * sizeof(float));
    CHECK(want != NULL);
    float a = rand_float(rng), b = rand_float(rng);
    for (uint32_t i = 0; i < n; i++) {
        hx[i] = rand_float(rng), hy[i] = rand_float(rng);
        want[i] = saxpy1(b, hx[i], saxpy1(a, hx[i], hy[i]));
    }
    int runs = atomic_load(&saxpy_runs);
    gate g;
    gate_close(s, &g);
    gaio_arg args[4] = {GAIO_ARG(a), GAIO_ARG_BUFFER(x), GAIO_ARG_BUFFER(y), GAIO_ARG(n)};
    OK(gaio_launch(s, k, (gaio_dim3){(n + 1023) / 1024, 1, 1}, (gaio_dim3){1024, 1, 1}, 0, args, 4));
    args[0] = GAIO_ARG(b);
    OK(gaio_launch(s, k, (gaio_dim3){(n + 63) / 64, 1, 1}, (gaio_dim3){64, 1, 1}, 0, args, 4));
    /* The registry's reference and ours go while both launches still wait. */
    OK(gaio_kernel_unregister(SAXPY_NAME));
    OK(gaio_kernel_release(k));
    OK(gaio_buffer_release(x));
    gaio_kernel *gone;
    FAILS(GAIO_ERR_NOT_FOUND, gaio_kernel_find(SAXPY_NAME, &gone), "gaio_kernel_find");
    gate_open(&g);
    OK(gaio_stream_synchronize(s));
    CHECK(atomic_load(&saxpy_runs) == expected_runs(device, runs, 2));
    for (uint32_t i = 0; i < n; i++) CHECK(memcmp(&hy[i], &want[i], sizeof(float)) == 0);
    OK(gaio_buffer_release(y));
    free(want);
}

/* A host kernel that reports failure fails its stream; other streams go on.
 * Host only: a CUDA kernel has no status to return, so fail_kernel has no CUDA twin
 * (a real GPU fault, which poisons the device, is tested in test_cuda_fault.c). */
static void test_kernel_failure(gaio_context *ctx, int device) {
    if (!on_host(device)) return;
    gaio_kernel *k;
    OK(gaio_kernel_register(FAIL_NAME, fail_kernel, 0, NULL, &k));
    gaio_stream *bad, *good;
    OK(gaio_stream_create(ctx, 0, 0, &bad));
    OK(gaio_stream_create(ctx, 0, 0, &good));
    gaio_buffer *buf; /* HOST: fills reach pageable memory (kernels do not) */
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_HOST, 64, &buf));
    memset(host_ptr(buf), 0x33, 64);
    OK(gaio_launch(bad, k, (gaio_dim3){1, 1, 1}, (gaio_dim3){1, 1, 1}, 0, NULL, 0));
    OK(gaio_memset_async(bad, buf, 0, 0x44, 64)); /* skipped: the stream failed before it */
    FAILS(GAIO_ERR_USER, gaio_stream_synchronize(bad), "gaio_stream_synchronize");
    CHECK(strstr(gaio_last_error(), FAIL_NAME) != NULL);
    for (int i = 0; i < 64; i++) CHECK(((unsigned char *)host_ptr(buf))[i] == 0x33);
    OK(gaio_memset_async(good, buf, 0, 0x55, 64));
    OK(gaio_stream_synchronize(good));
    for (int i = 0; i < 64; i++) CHECK(((unsigned char *)host_ptr(buf))[i] == 0x55);
    OK(gaio_buffer_release(buf));
    OK(gaio_stream_release(bad));
    OK(gaio_stream_release(good));
    OK(gaio_kernel_release(k));
    OK(gaio_kernel_unregister(FAIL_NAME));
}

/* Launches of one kernel from several streams at once. */
static void test_many_streams(gaio_context *ctx, uint64_t *rng) {
    gaio_kernel *k = test_kernel(SAXPY_NAME, saxpy_kernel, 4, saxpy_sizes, SAXPY_SRC);
    enum { NS = 4, REPS = 25 };
    gaio_stream *st[NS];
    gaio_buffer *x[NS], *y[NS];
    float *want[NS], a[NS];
    uint32_t n = (uint32_t)rand_range(rng, 100, 2000);
    for (int i = 0; i < NS; i++) {
        OK(gaio_stream_create(ctx, i % 2, 0, &st[i]));
        OK(gaio_buffer_alloc(ctx, GAIO_MEM_PINNED, n * sizeof(float), &x[i]));
        OK(gaio_buffer_alloc(ctx, GAIO_MEM_PINNED, n * sizeof(float), &y[i]));
        float *hx = host_ptr(x[i]), *hy = host_ptr(y[i]);
        want[i] = malloc(n * sizeof(float));
        CHECK(want[i] != NULL);
        a[i] = rand_float(rng) / 16.0f;
        for (uint32_t j = 0; j < n; j++) {
            hx[j] = rand_float(rng), hy[j] = rand_float(rng);
            want[i][j] = hy[j];
            for (int r = 0; r < REPS; r++) want[i][j] = saxpy1(a[i], hx[j], want[i][j]);
        }
    }
    for (int r = 0; r < REPS; r++)
        for (int i = 0; i < NS; i++) {
            gaio_arg args[4] = {GAIO_ARG(a[i]), GAIO_ARG_BUFFER(x[i]), GAIO_ARG_BUFFER(y[i]), GAIO_ARG(n)};
            OK(gaio_launch(st[i], k, (gaio_dim3){(n + 255) / 256, 1, 1}, (gaio_dim3){256, 1, 1}, 0, args, 4));
        }
    for (int i = 0; i < NS; i++) {
        OK(gaio_stream_synchronize(st[i]));
        const float *hy = host_ptr(y[i]);
        for (uint32_t j = 0; j < n; j++) CHECK(memcmp(&hy[j], &want[i][j], sizeof(float)) == 0);
        OK(gaio_buffer_release(x[i]));
        OK(gaio_buffer_release(y[i]));
        OK(gaio_stream_release(st[i]));
        free(want[i]);
    }
    OK(gaio_kernel_release(k));
    OK(gaio_kernel_unregister(SAXPY_NAME));
}

static void run(int device) {
    uint64_t rng = test_seed();
    gaio_context *ctx;
    OK(gaio_context_create(device, NULL, &ctx));
    gaio_stream *s;
    OK(gaio_stream_create(ctx, 0, 0, &s));

    test_registry(&rng);
    test_saxpy(ctx, s, device, &rng);
    test_args_copied(ctx, s, &rng);
    test_geometry(ctx, s, device, &rng);
    test_unregister_in_flight(ctx, s, device, &rng);
    test_kernel_failure(ctx, device);
    test_many_streams(ctx, &rng);

    /* The built-in kernels are registered and cannot be taken away. */
    gaio_kernel *bk;
    OK(gaio_kernel_find("gaio_philox_bits_u32", &bk));
    CHECK(strcmp(gaio_kernel_name(bk), "gaio_philox_bits_u32") == 0);
    OK(gaio_kernel_release(bk));
    FAILS(GAIO_ERR_INVALID_ARG, gaio_kernel_unregister("gaio_philox_bits_u32"), "gaio_kernel_unregister");
    OK(gaio_kernel_find("gaio_philox_bits_u32", &bk));
    OK(gaio_kernel_release(bk));

    OK(gaio_stream_release(s));
    OK(gaio_context_release(ctx));
}
