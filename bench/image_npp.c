/* NPP's batched resize through dlopen (image_npp.h). The declarations below follow
 * NVIDIA's NPP documentation (nppdefs.h, nppi_geometry_transforms.h, CUDA 11 to 13):
 * the structs are passed by value, so their layouts must match NPP's exactly. */
#include "image_npp.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int width, height;
} npp_size;

typedef struct {
    int x, y, width, height;
} npp_rect;

/* NppStreamContext, field for field. */
typedef struct {
    void *hStream; /* cudaStream_t, which is a CUstream */
    int nCudaDeviceId;
    int nMultiProcessorCount;
    int nMaxThreadsPerMultiProcessor;
    int nMaxThreadsPerBlock;
    size_t nSharedMemPerBlock;
    int nCudaDevAttrComputeCapabilityMajor;
    int nCudaDevAttrComputeCapabilityMinor;
    unsigned int nStreamFlags;
    int nReserved0;
} npp_stream_ctx;

typedef struct {
    int major, minor, build;
} npp_version;

typedef int (*resize_batch_fn)(npp_size smallest_src, npp_rect src_roi, npp_size smallest_dst, npp_rect dst_roi,
                               int interp, image_npp_cxr *list, unsigned int count, npp_stream_ctx ctx);
typedef int (*resize_fn)(const unsigned char *src, int src_step, npp_size src_size, npp_rect src_roi, unsigned char *dst,
                         int dst_step, npp_size dst_size, npp_rect dst_roi, int interp, npp_stream_ctx ctx);
typedef const npp_version *(*version_fn)(void);

struct image_npp {
    void *cudart, *core, *geom;
    resize_batch_fn resize_batch;
    resize_fn resize;
    npp_stream_ctx ctx;
    char what[192];
};

/* The struct sizes NPP's by-value arguments rely on (x86-64 and aarch64 ABIs). */
_Static_assert(sizeof(npp_stream_ctx) == 48, "NppStreamContext is 48 bytes");
_Static_assert(sizeof(image_npp_cxr) == 32, "NppiResizeBatchCXR is 32 bytes");

static void *open_lib(const char *dir, const char *name, const char *suffix, int flags, char *err, size_t err_size) {
    char path[512];
    snprintf(path, sizeof path, "%s%s%s", dir, name, suffix);
    void *h = dlopen(path, flags);
    if (!h && err && !err[0]) {
        const char *e = dlerror();
        snprintf(err, err_size, "%.200s", e ? e : path);
    }
    return h;
}

int image_npp_open(image_npp **out, char *why, size_t why_size) {
    static const char *const dirs[] = {"", "/usr/local/cuda/lib64/"};
    static const char *const suffixes[] = {".so.13", ".so.12", ".so"};
    *out = NULL;
    image_npp *n = calloc(1, sizeof *n);
    if (!n) {
        snprintf(why, why_size, "out of memory");
        return -1;
    }
    char first_err[256] = "";
    for (size_t d = 0; d < sizeof dirs / sizeof dirs[0] && !n->geom; d++)
        for (size_t s = 0; s < sizeof suffixes / sizeof suffixes[0] && !n->geom; s++) {
            /* NPP needs the CUDA runtime of its own version; where the loader's path
             * lacks it, the copy beside NPP serves (global, so NPP's references bind). */
            void *rt = open_lib(dirs[d], "libcudart", suffixes[s], RTLD_NOW | RTLD_GLOBAL, NULL, 0);
            void *core = open_lib(dirs[d], "libnppc", suffixes[s], RTLD_NOW | RTLD_GLOBAL, first_err, sizeof first_err);
            void *geom = core ? open_lib(dirs[d], "libnppig", suffixes[s], RTLD_NOW | RTLD_LOCAL, first_err,
                                         sizeof first_err)
                              : NULL;
            if (geom) {
                n->cudart = rt;
                n->core = core;
                n->geom = geom;
                snprintf(n->what, sizeof n->what, "%slibnppig%s", dirs[d], suffixes[s]);
            } else {
                if (core) dlclose(core);
                if (rt) dlclose(rt);
            }
        }
    if (!n->geom) {
        snprintf(why, why_size, "no libnppc/libnppig (%s)", first_err[0] ? first_err : "dlopen failed");
        free(n);
        return -1;
    }
    void *sym = dlsym(n->geom, "nppiResizeBatch_8u_C3R_Ctx");
    if (sym) memcpy(&n->resize_batch, &sym, sizeof sym);
    sym = dlsym(n->geom, "nppiResize_8u_C3R_Ctx");
    if (sym) memcpy(&n->resize, &sym, sizeof sym);
    if (!n->resize_batch && !n->resize) {
        snprintf(why, why_size, "%s has neither nppiResizeBatch_8u_C3R_Ctx nor nppiResize_8u_C3R_Ctx", n->what);
        image_npp_close(n);
        return -1;
    }
    sym = dlsym(n->core, "nppGetLibVersion");
    if (sym) {
        version_fn ver;
        memcpy(&ver, &sym, sizeof sym);
        const npp_version *v = ver();
        if (v) {
            char file[sizeof n->what];
            snprintf(file, sizeof file, "%s", n->what);
            snprintf(n->what, sizeof n->what, "NPP %d.%d.%d (%.120s)", v->major, v->minor, v->build, file);
        }
    }
    *out = n;
    return 0;
}

void image_npp_close(image_npp *n) {
    if (!n) return;
    /* NPP keeps runtime state (and the runtime its own threads) tied to the device;
     * unloading it under a live context is not supported, so the libraries stay. */
    free(n);
}

const char *image_npp_describe(const image_npp *n) { return n ? n->what : "NPP: not loaded"; }

void image_npp_set_stream(image_npp *n, void *stream, const image_npp_device *dev) {
    memset(&n->ctx, 0, sizeof n->ctx);
    n->ctx.hStream = stream;
    n->ctx.nCudaDeviceId = dev->ordinal;
    n->ctx.nMultiProcessorCount = dev->sm_count;
    n->ctx.nMaxThreadsPerMultiProcessor = dev->max_threads_per_sm;
    n->ctx.nMaxThreadsPerBlock = dev->max_threads_per_block;
    n->ctx.nSharedMemPerBlock = dev->shared_mem_per_block;
    n->ctx.nCudaDevAttrComputeCapabilityMajor = dev->cc_major;
    n->ctx.nCudaDevAttrComputeCapabilityMinor = dev->cc_minor;
    n->ctx.nStreamFlags = dev->stream_flags;
}

#define NPP_MISSING INT_MIN /* not an NppStatus: the entry point is absent */

int image_npp_resize_batch_c3(image_npp *n, int sw, int sh, int dw, int dh, int interp, uint64_t list, int count) {
    if (!n->resize_batch) return NPP_MISSING;
    npp_size ss = {sw, sh}, ds = {dw, dh};
    npp_rect sr = {0, 0, sw, sh}, dr = {0, 0, dw, dh};
    return n->resize_batch(ss, sr, ds, dr, interp, (image_npp_cxr *)(uintptr_t)list, (unsigned)count, n->ctx);
}

int image_npp_resize_c3(image_npp *n, const void *src, int src_step, int sw, int sh, void *dst, int dst_step, int dw,
                        int dh, int interp) {
    if (!n->resize) return NPP_MISSING;
    npp_size ss = {sw, sh}, ds = {dw, dh};
    npp_rect sr = {0, 0, sw, sh}, dr = {0, 0, dw, dh};
    return n->resize(src, src_step, ss, sr, dst, dst_step, ds, dr, interp, n->ctx);
}

const char *image_npp_status_name(int st, char *buf, size_t size) {
    const char *name = NULL;
    switch (st) {
    case INT_MIN: snprintf(buf, size, "entry point missing"); return buf;
    case 0: name = "NPP_SUCCESS"; break;
    case -9999: name = "NPP_NOT_SUPPORTED_MODE_ERROR"; break;
    case -1031: name = "NPP_INVALID_DEVICE_POINTER_ERROR"; break;
    case -1027: name = "NPP_NOT_SUFFICIENT_COMPUTE_CAPABILITY"; break;
    case -1000: name = "NPP_CUDA_KERNEL_EXECUTION_ERROR"; break;
    case -201: name = "NPP_RESIZE_NO_OPERATION_ERROR"; break;
    case -23: name = "NPP_RESIZE_FACTOR_ERROR"; break;
    case -22: name = "NPP_INTERPOLATION_ERROR"; break;
    case -17: name = "NPP_CONTEXT_MATCH_ERROR"; break;
    case -14: name = "NPP_STEP_ERROR"; break;
    case -9: name = "NPP_MEMORY_ALLOCATION_ERR"; break;
    case -8: name = "NPP_NULL_POINTER_ERROR"; break;
    case -6: name = "NPP_SIZE_ERROR"; break;
    case -5: name = "NPP_BAD_ARGUMENT_ERROR"; break;
    case -4: name = "NPP_NO_MEMORY_ERROR"; break;
    case -3: name = "NPP_NOT_IMPLEMENTED_ERROR"; break;
    case -2: name = "NPP_ERROR"; break;
    case 1: name = "NPP_NO_OPERATION_WARNING"; break;
    case 10000: name = "NPP_MISALIGNED_DST_ROI_WARNING"; break;
    default: break;
    }
    if (name) snprintf(buf, size, "%s (%d)", name, st);
    else snprintf(buf, size, "NppStatus %d", st);
    return buf;
}
