/* NVIDIA NPP's batched resize, the peer of the image benchmark, opened at run time.
 *
 * Nothing of NPP is needed to build: libnppc and libnppig are opened with dlopen
 * (soname .13, then .12, then the unversioned name; the bare name first, then
 * under /usr/local/cuda/lib64) and the few types and prototypes the benchmark
 * uses are declared in image_npp.c from NVIDIA's NPP documentation (nppdefs.h,
 * nppi_geometry_transforms.h). */
#ifndef GAIO_BENCH_IMAGE_NPP_H
#define GAIO_BENCH_IMAGE_NPP_H

#include <stddef.h>
#include <stdint.h>

/* NppiInterpolationMode values. */
enum { IMAGE_NPP_NN = 1, IMAGE_NPP_LINEAR = 2, IMAGE_NPP_CUBIC = 4, IMAGE_NPP_SUPER = 8 };

/* One entry of a batch list: NppiResizeBatchCXR's layout. Lists live in device memory. */
typedef struct image_npp_cxr {
    const void *src; /* device addresses */
    int src_step;
    void *dst;
    int dst_step;
} image_npp_cxr;

/* What NppStreamContext carries besides the stream, read from the driver by the caller. */
typedef struct image_npp_device {
    int ordinal;                 /* CUDA device ordinal */
    int sm_count;                /* CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT */
    int max_threads_per_sm;      /* ..._MAX_THREADS_PER_MULTIPROCESSOR */
    int max_threads_per_block;   /* ..._MAX_THREADS_PER_BLOCK */
    size_t shared_mem_per_block; /* ..._MAX_SHARED_MEMORY_PER_BLOCK */
    int cc_major, cc_minor;      /* ..._COMPUTE_CAPABILITY_MAJOR / _MINOR */
    unsigned stream_flags;       /* cuStreamGetFlags of the stream */
} image_npp_device;

typedef struct image_npp image_npp;

/* 0 and *out, or -1 with the reason in why (NPP not installed, a symbol missing). */
int image_npp_open(image_npp **out, char *why, size_t why_size);
void image_npp_close(image_npp *npp);

/* "NPP 13.0.1 (libnppig.so.13)". */
const char *image_npp_describe(const image_npp *npp);

/* Work goes to `stream` (a CUstream) from now on. */
void image_npp_set_stream(image_npp *npp, void *stream, const image_npp_device *dev);

/* nppiResizeBatch_8u_C3R_Ctx: `count` packed RGB u8 images of sw x sh -> dw x dh,
 * whole images, `list` a device array of count entries. Returns the NppStatus
 * (0: success, < 0: error, > 0: a warning). */
int image_npp_resize_batch_c3(image_npp *npp, int sw, int sh, int dw, int dh, int interp, uint64_t list, int count);

/* nppiResize_8u_C3R_Ctx on one image (whole image). Returns the NppStatus. */
int image_npp_resize_c3(image_npp *npp, const void *src, int src_step, int sw, int sh, void *dst, int dst_step, int dw,
                        int dh, int interp);

/* Text for an NppStatus: "NPP_INTERPOLATION_ERROR (-22)", or just the number. */
const char *image_npp_status_name(int status, char *buf, size_t size);

#endif
