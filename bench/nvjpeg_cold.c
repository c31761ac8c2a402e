/* What nvJPEG costs to start, per backend, in this fresh process: the CUDA runtime's
 * start (cudaFree(NULL)), nvjpegCreateEx, the first nvjpegJpegStateCreate,
 * nvjpegDecodeBatchedInitialize and a second state. `gaio classify` cannot decode a
 * batch on the GPU before these are done (docs/perf-notes.md, the 0.5 s setup target).
 * Run it once per backend, each in its own process: only the first start is cold.
 *
 *   gaio_nvjpeg_cold [hardware|default|hybrid|gpu_hybrid]
 *
 * libcudart and libnvjpeg are dlopened (the build machine has no nvjpeg.h: the types
 * are tools/classify/nvjpeg_api.h's); without them it says why and exits 0. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "classify/nvjpeg_api.h"

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void *open_first(const char *const *names) {
    for (; *names; names++) {
        void *h = dlopen(*names, RTLD_NOW | RTLD_LOCAL);
        if (h) return h;
    }
    return NULL;
}

int main(int argc, char **argv) {
    static const char *const backends[] = {"default", "hybrid", "gpu_hybrid", "hardware"};
    int backend = 3;
    if (argc > 1) {
        backend = -1;
        for (int i = 0; i < 4; i++)
            if (strcmp(argv[1], backends[i]) == 0) backend = i;
    }
    if (argc > 2 || backend < 0) {
        fprintf(stderr, "usage: %s [hardware|default|hybrid|gpu_hybrid]\n", argv[0]);
        return 2;
    }
    double t0 = now_s();
    static const char *const rt_names[] = {"libcudart.so.13", "/usr/local/cuda/lib64/libcudart.so.13",
                                           "libcudart.so.12", "/usr/local/cuda/lib64/libcudart.so.12", NULL};
    static const char *const nj_names[] = {"libnvjpeg.so.13", "/usr/local/cuda/lib64/libnvjpeg.so.13",
                                           "libnvjpeg.so.12", "/usr/local/cuda/lib64/libnvjpeg.so.12", NULL};
    void *rt = open_first(rt_names), *nj = rt ? open_first(nj_names) : NULL;
    if (!rt || !nj) {
        printf("gaio_nvjpeg_cold: skipped: no %s (%s)\n", rt ? "libnvjpeg" : "libcudart", dlerror());
        return 0;
    }
    /* Casting dlsym's void * to a function pointer is what POSIX requires to work. */
    int (*cuda_free)(void *) = (int (*)(void *))dlsym(rt, "cudaFree");
    pfn_nvjpegCreateEx create = (pfn_nvjpegCreateEx)dlsym(nj, "nvjpegCreateEx");
    pfn_nvjpegJpegStateCreate state_create = (pfn_nvjpegJpegStateCreate)dlsym(nj, "nvjpegJpegStateCreate");
    pfn_nvjpegDecodeBatchedInitialize init = (pfn_nvjpegDecodeBatchedInitialize)dlsym(nj, "nvjpegDecodeBatchedInitialize");
    if (!cuda_free || !create || !state_create || !init) {
        fprintf(stderr, "gaio_nvjpeg_cold: a symbol is missing from libcudart or libnvjpeg\n");
        return 1;
    }
    int rc = cuda_free(NULL);
    double t1 = now_s();
    if (rc != 0) {
        printf("gaio_nvjpeg_cold: skipped: the CUDA runtime did not start (cudaFree(NULL): error %d)\n", rc);
        return 0;
    }
    nvjpegHandle_t h;
    nvjpegJpegState_t s1, s2;
    nvjpegStatus_t st = create((nvjpegBackend_t)backend, NULL, NULL, NVJPEG_FLAGS_DEFAULT, &h);
    double t2 = now_s();
    if (st != NVJPEG_STATUS_SUCCESS) {
        printf("gaio_nvjpeg_cold: backend %s: nvjpegCreateEx: status %d (7: this GPU has no such engine)\n",
               backends[backend], (int)st);
        return st == NVJPEG_STATUS_ARCH_MISMATCH ? 0 : 1;
    }
    const char *call = "nvjpegJpegStateCreate";
    if ((st = state_create(h, &s1)) != NVJPEG_STATUS_SUCCESS) goto fail;
    double t3 = now_s();
    call = "nvjpegDecodeBatchedInitialize";
    if ((st = init(h, s1, 32, 1, NVJPEG_OUTPUT_RGBI)) != NVJPEG_STATUS_SUCCESS) goto fail;
    double t4 = now_s();
    call = "nvjpegJpegStateCreate (second)";
    if ((st = state_create(h, &s2)) != NVJPEG_STATUS_SUCCESS) goto fail;
    double t5 = now_s();
    printf("backend %-10s runtime start %.3f s, CreateEx %.3f, first state %.3f, batched init %.3f, "
           "second state %.3f; ready after %.3f s\n",
           backends[backend], t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t4 - t0);
    return 0;
fail:
    fprintf(stderr, "gaio_nvjpeg_cold: %s: status %d\n", call, (int)st);
    return 1;
}
