/* JPEG decode on a CUDA GPU with nvJPEG, opened with dlopen on first use (libgaio and
 * the gaio tool link no GPU library). Batched: one call decodes up to max_batch files
 * into interleaved RGB (3 x u8 per pixel) device memory, on the hardware JPEG decoder
 * (NVJPEG_BACKEND_HARDWARE) where the GPU has one (A100, H100), else nvJPEG's default
 * backend. Files the chosen backend cannot take (progressive, CMYK, unusual sampling)
 * are left to the caller to decode on the host: njd_probe says which. */
#ifndef GAIO_TOOLS_NVJPEG_DECODE_H
#define GAIO_TOOLS_NVJPEG_DECODE_H

#include <stddef.h>
#include <stdint.h>

typedef struct njd_decoder njd_decoder;

typedef enum njd_status {
    NJD_OK = 0,
    NJD_UNAVAILABLE = 1, /* no libnvjpeg, or it has no symbol gaio needs: err says which */
    NJD_UNSUPPORTED = 2, /* this file: decode it on the host instead */
    NJD_FAILED = 3       /* an nvJPEG or CUDA call failed: err names it and its status */
} njd_status;

/* Opens libnvjpeg (libnvjpeg.so.13, .so.12, .so.11, then libnvjpeg.so, each by name and then
 * under /usr/local/cuda/lib64; GAIO_NVJPEG_LIBRARY names another, tried alone) and creates a handle and a batched state for max_batch images (>= 1).
 * Must be called with the CUDA context of the target device current on the calling
 * thread (the primary context gaio uses). hardware_out: 1 when the hardware decoder
 * backend was taken, 0 when nvJPEG's default backend was. */
njd_status njd_create(int max_batch, njd_decoder **out, int *hardware_out, char *err, size_t errlen);
void njd_destroy(njd_decoder *d);

/* The size of a JPEG in memory, and whether this decoder's backend can decode it
 * (NJD_OK) or not (NJD_UNSUPPORTED, err says why; a corrupt header is NJD_UNSUPPORTED
 * too, so that the host decoder reports it with its own words). Host work only. Only
 * 3-component (YCbCr) files are taken: grey, CMYK/YCCK, lossless and 12-bit files are
 * NJD_UNSUPPORTED. Thread safe: may run on other threads, also while njd_decode_batch runs. */
njd_status njd_probe(njd_decoder *d, const uint8_t *data, size_t size, int *width, int *height, char *err,
                     size_t errlen);

/* Decodes n (1..max_batch) files, each probed NJD_OK, into dst[i]: width * 3 bytes per
 * row, pitch[i] bytes apart, device memory of the current context, interleaved RGB.
 * Enqueued on stream (a CUstream / cudaStream_t); the host buffers data[i] must stay
 * valid until the call returns (nvJPEG copies what it needs), the device ones until the
 * stream has run it. Not thread safe per decoder: one thread at a time. Each batch size
 * needs a batch state initialised for it (host work); the decoder keeps the states of
 * the last few sizes, so a caller alternating between a few sizes pays that once each.
 * NJD_FAILED leaves the decoder usable; the batch's outputs are then undefined. */
njd_status njd_decode_batch(njd_decoder *d, void *stream, const uint8_t *const *data, const size_t *sizes, int n,
                            uint8_t *const *dst, const size_t *pitch, char *err, size_t errlen);

#endif
