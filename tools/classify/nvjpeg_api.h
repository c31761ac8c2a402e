/* The part of NVIDIA's nvJPEG C API that nvjpeg_decode.c calls, declared here because
 * the build machine's CUDA toolkit ships no nvjpeg.h; the functions are found with dlsym.
 *
 * Matched, value by value and parameter by parameter, against NVIDIA's nvjpeg.h of
 * nvJPEG 12.3.3.54 (CUDA 12.6; public copy: github.com/zspace/system.cuda-12.6,
 * include/nvjpeg.h) and nvJPEG 11.6.2.124 (CUDA 11.6), which agree on everything below,
 * and against the nvJPEG documentation (docs.nvidia.com/cuda/nvjpeg), which lists the
 * same enums for the current release (CUDA 13 adds output formats, none renumbered).
 * Enum values and struct layouts are ABI: do not "tidy" them. */
#ifndef GAIO_TOOLS_NVJPEG_API_H
#define GAIO_TOOLS_NVJPEG_API_H

#include <stddef.h>

#define NVJPEG_MAX_COMPONENT 4
#define NVJPEG_FLAGS_DEFAULT 0

/* An opaque pointer in the CUDA runtime API; the driver's CUstream is the same type. */
typedef struct CUstream_st *cudaStream_t;

typedef enum {
    NVJPEG_STATUS_SUCCESS = 0,
    NVJPEG_STATUS_NOT_INITIALIZED = 1,
    NVJPEG_STATUS_INVALID_PARAMETER = 2,
    NVJPEG_STATUS_BAD_JPEG = 3,
    NVJPEG_STATUS_JPEG_NOT_SUPPORTED = 4,
    NVJPEG_STATUS_ALLOCATOR_FAILURE = 5,
    NVJPEG_STATUS_EXECUTION_FAILED = 6,
    NVJPEG_STATUS_ARCH_MISMATCH = 7,
    NVJPEG_STATUS_INTERNAL_ERROR = 8,
    NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED = 9,
    NVJPEG_STATUS_INCOMPLETE_BITSTREAM = 10
} nvjpegStatus_t;

typedef enum {
    NVJPEG_CSS_444 = 0,
    NVJPEG_CSS_422 = 1,
    NVJPEG_CSS_420 = 2,
    NVJPEG_CSS_440 = 3,
    NVJPEG_CSS_411 = 4,
    NVJPEG_CSS_410 = 5,
    NVJPEG_CSS_GRAY = 6,
    NVJPEG_CSS_410V = 7,
    NVJPEG_CSS_UNKNOWN = -1
} nvjpegChromaSubsampling_t;

/* Only RGBI is used: interleaved RGB written to channel[0] with pitch[0]. */
typedef enum {
    NVJPEG_OUTPUT_UNCHANGED = 0,
    NVJPEG_OUTPUT_YUV = 1,
    NVJPEG_OUTPUT_Y = 2,
    NVJPEG_OUTPUT_RGB = 3,
    NVJPEG_OUTPUT_BGR = 4,
    NVJPEG_OUTPUT_RGBI = 5,
    NVJPEG_OUTPUT_BGRI = 6
} nvjpegOutputFormat_t;

typedef enum {
    NVJPEG_BACKEND_DEFAULT = 0,
    NVJPEG_BACKEND_HYBRID = 1,
    NVJPEG_BACKEND_GPU_HYBRID = 2,
    NVJPEG_BACKEND_HARDWARE = 3,
    NVJPEG_BACKEND_GPU_HYBRID_DEVICE = 4,
    NVJPEG_BACKEND_HARDWARE_DEVICE = 5,
    NVJPEG_BACKEND_LOSSLESS_JPEG = 6
} nvjpegBackend_t;

/* SOF marker values. */
typedef enum {
    NVJPEG_ENCODING_UNKNOWN = 0x0,
    NVJPEG_ENCODING_BASELINE_DCT = 0xc0,
    NVJPEG_ENCODING_EXTENDED_SEQUENTIAL_DCT_HUFFMAN = 0xc1,
    NVJPEG_ENCODING_PROGRESSIVE_DCT_HUFFMAN = 0xc2,
    NVJPEG_ENCODING_LOSSLESS_HUFFMAN = 0xc3
} nvjpegJpegEncoding_t;

typedef struct {
    unsigned char *channel[NVJPEG_MAX_COMPONENT];
    size_t pitch[NVJPEG_MAX_COMPONENT];
} nvjpegImage_t;

/* Only ever passed as NULL (nvJPEG then uses cudaMalloc / cudaHostAlloc), so the
 * allocator structs stay opaque. */
typedef struct nvjpegDevAllocator_s nvjpegDevAllocator_t;
typedef struct nvjpegPinnedAllocator_s nvjpegPinnedAllocator_t;

typedef struct nvjpegHandle *nvjpegHandle_t;
typedef struct nvjpegJpegState *nvjpegJpegState_t;
typedef struct nvjpegJpegStream *nvjpegJpegStream_t;

typedef nvjpegStatus_t (*pfn_nvjpegCreateEx)(nvjpegBackend_t backend, nvjpegDevAllocator_t *dev_allocator,
                                             nvjpegPinnedAllocator_t *pinned_allocator, unsigned int flags,
                                             nvjpegHandle_t *handle);
typedef nvjpegStatus_t (*pfn_nvjpegDestroy)(nvjpegHandle_t handle);
typedef nvjpegStatus_t (*pfn_nvjpegJpegStateCreate)(nvjpegHandle_t handle, nvjpegJpegState_t *jpeg_handle);
typedef nvjpegStatus_t (*pfn_nvjpegJpegStateDestroy)(nvjpegJpegState_t jpeg_handle);
typedef nvjpegStatus_t (*pfn_nvjpegGetImageInfo)(nvjpegHandle_t handle, const unsigned char *data, size_t length,
                                                 int *nComponents, nvjpegChromaSubsampling_t *subsampling,
                                                 int *widths, int *heights);
typedef nvjpegStatus_t (*pfn_nvjpegDecodeBatchedInitialize)(nvjpegHandle_t handle, nvjpegJpegState_t jpeg_handle,
                                                            int batch_size, int max_cpu_threads,
                                                            nvjpegOutputFormat_t output_format);
typedef nvjpegStatus_t (*pfn_nvjpegDecodeBatched)(nvjpegHandle_t handle, nvjpegJpegState_t jpeg_handle,
                                                  const unsigned char *const *data, const size_t *lengths,
                                                  nvjpegImage_t *destinations, cudaStream_t stream);
typedef nvjpegStatus_t (*pfn_nvjpegJpegStreamCreate)(nvjpegHandle_t handle, nvjpegJpegStream_t *jpeg_stream);
typedef nvjpegStatus_t (*pfn_nvjpegJpegStreamDestroy)(nvjpegJpegStream_t jpeg_stream);
typedef nvjpegStatus_t (*pfn_nvjpegJpegStreamParse)(nvjpegHandle_t handle, const unsigned char *data, size_t length,
                                                    int save_metadata, int save_stream,
                                                    nvjpegJpegStream_t jpeg_stream);
typedef nvjpegStatus_t (*pfn_nvjpegJpegStreamGetJpegEncoding)(nvjpegJpegStream_t jpeg_stream,
                                                              nvjpegJpegEncoding_t *jpeg_encoding);
/* nvJPEG 12.x and later only: looked up optionally. */
typedef nvjpegStatus_t (*pfn_nvjpegJpegStreamGetSamplePrecision)(nvjpegJpegStream_t jpeg_stream,
                                                                 unsigned int *precision);
/* *is_supported is set to 0 when the handle's backend CAN decode the stream. */
typedef nvjpegStatus_t (*pfn_nvjpegDecodeBatchedSupported)(nvjpegHandle_t handle, nvjpegJpegStream_t jpeg_stream,
                                                           int *is_supported);

#endif
