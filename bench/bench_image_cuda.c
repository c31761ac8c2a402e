/* The image ops on the CUDA backend against their bandwidth floor, NPP, PyTorch and
 * CV-CUDA.
 *
 * Input: a batch of BATCH RGB u8 1920x1080 NHWC frames (random bytes) in one DEVICE
 * buffer; for the varshape row, BATCH frames of the sizes in var_sizes (cycling) in
 * another; for the NV12 row, BATCH packed NV12 1920x1080 frames in a third. Each row
 * times one call over the whole batch:
 *   gaio    gaio_resize / gaio_preprocess / gaio_preprocess_varshape / gaio_cvt_color
 *           on a gaio stream;
 *   NPP     nppiResizeBatch_8u_C3R_Ctx over the batch, and BATCH nppiResize_8u_C3R_Ctx
 *           calls; the faster is shown (image_npp.c; NPP has no fused call, and its
 *           NV12 conversion is not run);
 *   torch   bench/image_torch.py, the same rows with torch.cuda.Event, run afterwards;
 *   CV-CUDA bench/image_cvcuda.py, likewise (its "-" and a note when the cvcuda
 *           wheel is not importable).
 * A sample is the time between two CUDA events recorded on the stream's CUstream
 * around the call (the driver is opened with dlopen as in bench_cuda.c; the events
 * live in the primary context, which gaio uses too). Before each sample, a
 * FLUSH_BYTES memset evicts the L2 so every sample reads its source from DRAM, as
 * a pipeline that decodes frames into fresh buffers would. Figures are medians of
 * SAMPLES samples after WARM unrecorded ones.
 *
 * The floor of a row is the bytes the op must move over the device-to-device copy
 * bandwidth measured in the same run (cuMemcpyDtoDAsync of COPY_BYTES: 2 x bytes /
 * time, read + write). The bytes are the source the op's filter reads, by the index
 * rules of src/image/resize_math.h (the same header the kernels use), counted in
 * the whole 32-byte sectors DRAM delivers, plus the bytes written; the touched-pixel
 * count of an earlier issue's floor is shown in the notes where it is > 5% less.
 * Targets (reported, never a failure): gaio <= FLOOR_TARGET x floor and <=
 * CV_TARGET x CV-CUDA. */
#include "bench_image_cuda.h"

#ifndef GAIO_BENCH_HAVE_CUDA

int gaio_bench_image_cuda_run(FILE *out) {
    fprintf(out, "gaio image benchmark (CUDA): this build has no CUDA backend\n");
    return 0;
}

#else /* GAIO_BENCH_HAVE_CUDA */

#include <cuda.h>
#include <dlfcn.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_image_cpu.h" /* image_peer_run */
#include "bench_cu.h"
#include "bench_util.h"
#include "gaio/gaio.h"
#include "gaio/image.h"
#include "image/resize_math.h"
#include "image_npp.h"

#define PROG "gaio bench image cuda"

#define BATCH 64
#define SRC_W 1920
#define SRC_H 1080
#define CH 3
#define CROP 1080 /* the fused rows' centre ROI: CROP x CROP */
#define OUT 224
#define SAMPLES 25
#define WARM 3
#define COPY_BYTES ((size_t)1 << 30)
#define COPY_SAMPLES 10
#define FLUSH_BYTES ((size_t)256 << 20) /* over twice the L2 of any current GPU */
#define VAR_ALIGN 256
#define TIMEOUT_NS BENCH_TIMEOUT_NS /* no single wait may take longer */
#define PEER_TIMEOUT_S 400
#define NV12_FRAME ((size_t)SRC_W * SRC_H * 3 / 2) /* Y, then W/2 x H/2 interleaved U,V pairs */
#define FLOOR_TARGET 1.5 /* gaio / floor, every row */
#define CV_TARGET 0.9    /* gaio / CV-CUDA, every row */

static const int var_sizes[][2] = {{640, 480}, {1280, 720}, {1920, 1080}, {2560, 1440}, {3840, 2160}};
#define NVAR_SIZES (sizeof var_sizes / sizeof var_sizes[0])

/* ImageNet's, as torchvision's models use them; scale 1/255 first. */
static const float MEAN[3] = {0.485f, 0.456f, 0.406f}, STD[3] = {0.229f, 0.224f, 0.225f};

/* ---- the rows ---- */

typedef enum row_kind { K_RESIZE, K_PRE, K_PRE_VAR, K_NV12 } row_kind;

typedef struct row_def {
    const char *label;
    const char *key; /* the peers' name for it (image_torch.py, image_cvcuda.py) */
    row_kind kind;
    gaio_interp interp;
    int dw, dh;
    int npp_interp; /* 0: NPP has no such call */
} row_def;

static const row_def rows[] = {
    {"linear -> 1280x720", "linear_720", K_RESIZE, GAIO_INTERP_LINEAR, 1280, 720, IMAGE_NPP_LINEAR},
    {"area -> 1280x720", "area_720", K_RESIZE, GAIO_INTERP_AREA, 1280, 720, IMAGE_NPP_SUPER},
    {"cubic -> 1280x720", "cubic_720", K_RESIZE, GAIO_INTERP_CUBIC, 1280, 720, IMAGE_NPP_CUBIC},
    {"nearest -> 1280x720", "nearest_720", K_RESIZE, GAIO_INTERP_NEAREST, 1280, 720, IMAGE_NPP_NN},
    {"area -> 224x224", "area_224", K_RESIZE, GAIO_INTERP_AREA, OUT, OUT, IMAGE_NPP_SUPER},
    {"linear -> 224x224", "linear_224", K_RESIZE, GAIO_INTERP_LINEAR, OUT, OUT, IMAGE_NPP_LINEAR},
    {"cubic -> 224x224", "cubic_224", K_RESIZE, GAIO_INTERP_CUBIC, OUT, OUT, IMAGE_NPP_CUBIC},
    {"nearest -> 224x224", "nearest_224", K_RESIZE, GAIO_INTERP_NEAREST, OUT, OUT, IMAGE_NPP_NN},
    {"fused crop+linear+norm -> 224 NCHW f32", "fused_linear_224", K_PRE, GAIO_INTERP_LINEAR, OUT, OUT, 0},
    {"fused crop+area+norm -> 224 NCHW f32", "fused_area_224", K_PRE, GAIO_INTERP_AREA, OUT, OUT, 0},
    {"fused varshape 640x480..4K -> 224 f32", "fused_varshape_224", K_PRE_VAR, GAIO_INTERP_LINEAR, OUT, OUT, 0},
    /* BT.601 limited range, OpenCV's COLOR_YUV2RGB_NV12; interp is not used */
    {"NV12 -> RGB 1080p", "nv12_rgb_1080p", K_NV12, GAIO_INTERP_NEAREST, SRC_W, SRC_H, 0},
};
#define NROWS (sizeof rows / sizeof rows[0])

#define CU(call)                                                          \
    do {                                                                  \
        CUresult r_ = (call);                                             \
        if (r_ != CUDA_SUCCESS) return bench_cu_fail(PROG, r_, #call);    \
    } while (0)
#define CK(call) BENCH_CK(PROG, call)

/* ---- state ---- */

typedef struct row_result {
    double bytes;                /* what the op must move, reads counted in touched pixels */
    double sector_bytes;         /* the same with reads in whole 32-byte sectors: the floor's */
    double gaio, npp, torch, cv; /* ms; < 0: none */
    char npp_how;                /* 'b': the batch call, 'l': the per-frame loop */
    char gaio_err[240];          /* why gaio has no figure */
    char npp_err[160];
    const char *torch_variant, *cv_variant;
} row_result;

typedef struct bench {
    int gdev;
    gaio_device_props props;
    CUdevice dev;
    CUcontext primary, saved;
    bool retained;
    CUevent e0, e1;
    gaio_context *ctx;
    gaio_stream *s;
    CUstream cs;
    gaio_buffer *src, *dst, *pre, *var, *nv12, *flush, *lists;
    CUdeviceptr src_p, dst_p, var_p, flush_p, list_p[2]; /* lists: [0] -> 1280x720, [1] -> 224x224 */
    uint8_t flush_value;
    gaio_image var_imgs[BATCH];
    gaio_rect var_rois[BATCH], rois[BATCH];
    image_npp *npp;
    image_npp_device nppdev;
    char npp_why[256];
    double copy_ms, copy_bw; /* bytes per second, read + write */
    row_result res[NROWS];
    int gaio_failures;
} bench;

static CUdeviceptr dptr(const gaio_buffer *buf) {
    void *p = NULL;
    if (gaio_buffer_device_ptr(buf, &p) != GAIO_OK) return 0;
    return (CUdeviceptr)(uintptr_t)p;
}

static int raw_current(bench *b) {
    CU(bench_cu.cuCtxSetCurrent(b->primary));
    return 0;
}

/* ---- bytes an op must move ---- */

/* Marks hit[i] for each source index on one axis that a resize of src -> dst
 * samples with a non-zero weight, by resize_math.h's rules (a tap of weight 0
 * need not be read); returns how many. */
static int64_t axis_touched(int32_t src, int32_t dst, int32_t mode, unsigned char *hit) {
    memset(hit, 0, (size_t)src);
    gaio_rs_axis a = gaio_rs_axis_make(src, dst, mode);
    for (int32_t d = 0; d < dst; d++) {
        switch (mode) {
        case GAIO_RS_NEAREST:
        case GAIO_RS_NEAREST_EXACT: hit[gaio_rs_nearest(&a, d)] = 1; break;
        case GAIO_RS_LINEAR:
        case GAIO_RS_AREA_LINEAR: {
            int32_t i0, i1;
            float f;
            gaio_rs_linear(&a, d, &i0, &i1, &f);
            hit[i0] = 1;
            if (f != 0.f) hit[i1] = 1;
            break;
        }
        case GAIO_RS_CUBIC: {
            int32_t idx[4];
            float w[4];
            gaio_rs_cubic(&a, d, idx, w);
            for (int k = 0; k < 4; k++)
                if (w[k] != 0.f) hit[idx[k]] = 1;
            break;
        }
        default: { /* GAIO_RS_BOX */
            gaio_rs_box bx = gaio_rs_box_at(&a, d);
            for (int32_t k = 0; k < bx.n; k++)
                if (gaio_rs_box_w(&bx, k) != 0.f) hit[bx.first + k] = 1;
            break;
        }
        }
    }
    int64_t n = 0;
    for (int32_t i = 0; i < src; i++) n += hit[i];
    return n;
}

#define SECTOR 32

/* Source bytes a resize of the sw x sh ROI whose first pixel is x0 pixels into a
 * 32-byte-aligned row reads, both ways (the floor uses *sectors):
 *   *pixels:  touched columns x touched rows x 3 bytes;
 *   *sectors: touched rows x the 32-byte sectors that hold touched pixels, x 32.
 * The GPU reads whole sectors, so even an ideal kernel that skips pixels of an
 * interleaved RGB row (nearest, strong linear downscales) pays the sector figure;
 * the touched-pixel count (an earlier issue's floor) is below what any kernel can
 * reach there. Every frame and row of this benchmark starts on a 32-byte boundary
 * (pitches are multiples of 32, buffers and offsets 256-aligned). */
static int touched_bytes(int32_t x0, int32_t sw, int32_t sh, int32_t dw, int32_t dh, gaio_interp interp,
                         double *pixels, double *sectors) {
    int32_t mx, my;
    gaio_rs_modes((int32_t)interp, sw, sh, dw, dh, &mx, &my);
    int32_t n = sw > sh ? sw : sh;
    size_t nsec = ((size_t)(x0 + sw) * CH + SECTOR - 1) / SECTOR + 1;
    unsigned char *hit = malloc((size_t)n), *sec = calloc(nsec, 1);
    if (!hit || !sec) {
        free(hit);
        free(sec);
        fprintf(stderr, PROG ": out of memory\n");
        return -1;
    }
    int64_t rows_hit = axis_touched(sh, dh, my, hit);
    int64_t cols_hit = axis_touched(sw, dw, mx, hit);
    int64_t secs = 0;
    for (int32_t x = 0; x < sw; x++)
        if (hit[x]) {
            size_t first = (size_t)(x0 + x) * CH / SECTOR, last = ((size_t)(x0 + x) * CH + CH - 1) / SECTOR;
            for (size_t k = first; k <= last; k++) {
                secs += !sec[k];
                sec[k] = 1;
            }
        }
    free(hit);
    free(sec);
    *pixels = (double)cols_hit * (double)rows_hit * CH;
    *sectors = (double)secs * SECTOR * (double)rows_hit;
    return 0;
}

/* The bytes a row's op moves: source reads (both ways, above) plus what it writes. */
static int row_bytes(const bench *b, const row_def *r, double *bytes, double *sector_bytes) {
    const bool f32 = r->kind == K_PRE || r->kind == K_PRE_VAR;
    double px = 0, sc = 0, out = (double)r->dw * r->dh * CH * (f32 ? sizeof(float) : 1);
    if (r->kind == K_NV12) { /* every byte of the packed frames is read, whole sectors and all */
        *bytes = *sector_bytes = (double)BATCH * ((double)NV12_FRAME + out);
        return 0;
    }
    *bytes = *sector_bytes = 0;
    for (int i = 0; i < BATCH; i++) {
        int x0 = 0, w = SRC_W, h = SRC_H;
        if (r->kind == K_PRE) {
            x0 = b->rois[i].x;
            w = b->rois[i].width;
            h = b->rois[i].height;
        } else if (r->kind == K_PRE_VAR) {
            x0 = b->var_rois[i].x;
            w = b->var_rois[i].width;
            h = b->var_rois[i].height;
        }
        /* a uniform batch: every frame reads the same, so one is enough */
        if (i == 0 || r->kind == K_PRE_VAR)
            if (touched_bytes(x0, w, h, r->dw, r->dh, r->interp, &px, &sc) != 0) return -1;
        *bytes += px + out;
        *sector_bytes += sc + out;
    }
    return 0;
}

/* ---- timing ---- */

static int wait_event(CUevent e, const char *what) {
    uint64_t t0 = bench_now_ns();
    for (unsigned n = 0;; n++) {
        CUresult r = bench_cu.cuEventQuery(e);
        if (r == CUDA_SUCCESS) return 0;
        if (r != CUDA_ERROR_NOT_READY) return bench_cu_fail(PROG, r, what);
        if (n % 1024 == 1023) {
            if (bench_now_ns() - t0 > TIMEOUT_NS) {
                fprintf(stderr, PROG ": %s: no completion within %llu s\n", what,
                        (unsigned long long)(TIMEOUT_NS / 1000000000u));
                return -1;
            }
            sched_yield();
        } else {
            bench_cpu_relax();
        }
    }
}

/* One call of the op under test: 0, or 1 with the reason in err (the op refused
 * or failed: the row has no figure, the run goes on). */
typedef int (*op_fn)(bench *b, const row_def *r, char *err, size_t err_size);

/* 0 and the median ms, 1 when op failed (err says why), -1 when the driver did. */
static int time_op(bench *b, op_fn op, const row_def *r, double *ms, char *err, size_t err_size) {
    double v[SAMPLES];
    for (int i = -WARM; i < SAMPLES; i++) {
        CU(bench_cu.cuMemsetD8Async(b->flush_p, ++b->flush_value, FLUSH_BYTES, b->cs));
        CU(bench_cu.cuEventRecord(b->e0, b->cs));
        int rc = op(b, r, err, err_size);
        CU(bench_cu.cuEventRecord(b->e1, b->cs));
        if (wait_event(b->e1, r->label) != 0) return -1;
        if (rc != 0) return 1;
        float t = 0;
        CU(bench_cu.cuEventElapsedTime(&t, b->e0, b->e1));
        if (i >= 0) v[i] = t;
    }
    *ms = bench_median(v, SAMPLES);
    return 0;
}

static gaio_image src_batch(const bench *b) {
    return gaio_image_make(b->src, 0, GAIO_DTYPE_U8, GAIO_LAYOUT_HWC, BATCH, SRC_W, SRC_H, CH);
}

static gaio_image nv12_batch(const bench *b) {
    return gaio_image_make(b->nv12, 0, GAIO_DTYPE_U8, GAIO_LAYOUT_NV12, BATCH, SRC_W, SRC_H, 3);
}

static gaio_preprocess_params pre_params(gaio_interp interp) {
    gaio_preprocess_params p;
    memset(&p, 0, sizeof p);
    p.interp = interp;
    p.swap_rb = 0;
    p.scale = 1.f / 255.f;
    for (int c = 0; c < 3; c++) {
        p.mean[c] = MEAN[c];
        p.std[c] = STD[c];
    }
    p.std[3] = 1.f;
    return p;
}

static int op_gaio(bench *b, const row_def *r, char *err, size_t err_size) {
    gaio_status st = GAIO_OK;
    const char *what = "";
    gaio_image src = src_batch(b);
    if (r->kind == K_RESIZE) {
        gaio_image dst = gaio_image_make(b->dst, 0, GAIO_DTYPE_U8, GAIO_LAYOUT_HWC, BATCH, r->dw, r->dh, CH);
        st = gaio_resize(b->s, &src, &dst, r->interp);
        what = "gaio_resize";
    } else if (r->kind == K_NV12) {
        gaio_image yuv = nv12_batch(b);
        gaio_image dst = gaio_image_make(b->dst, 0, GAIO_DTYPE_U8, GAIO_LAYOUT_HWC, BATCH, r->dw, r->dh, CH);
        st = gaio_cvt_color(b->s, &yuv, &dst, GAIO_COLOR_YUV2RGB, GAIO_YUV_BT601_LIMITED);
        what = "gaio_cvt_color";
    } else {
        gaio_image dst = gaio_image_make(b->pre, 0, GAIO_DTYPE_F32, GAIO_LAYOUT_CHW, BATCH, r->dw, r->dh, CH);
        gaio_preprocess_params p = pre_params(r->interp);
        if (r->kind == K_PRE) {
            st = gaio_preprocess(b->s, &src, b->rois, &dst, &p);
            what = "gaio_preprocess";
        } else {
            st = gaio_preprocess_varshape(b->s, b->var_imgs, BATCH, b->var_rois, &dst, &p);
            what = "gaio_preprocess_varshape";
        }
    }
    if (st == GAIO_OK) return 0;
    snprintf(err, err_size, "%s: %s: %s", what, gaio_status_string(st), gaio_last_error());
    return 1;
}

static size_t frame_bytes(int w, int h) { return (size_t)w * (size_t)h * CH; }

static int npp_result(int st, const char *what, char *err, size_t err_size) {
    if (st >= 0) return 0; /* > 0 is a warning: the work was done */
    char name[96];
    snprintf(err, err_size, "%s: %s", what, image_npp_status_name(st, name, sizeof name));
    return 1;
}

static int op_npp_batch(bench *b, const row_def *r, char *err, size_t err_size) {
    int st = image_npp_resize_batch_c3(b->npp, SRC_W, SRC_H, r->dw, r->dh, r->npp_interp,
                                       (uint64_t)b->list_p[r->dw == OUT], BATCH);
    return npp_result(st, "nppiResizeBatch_8u_C3R_Ctx", err, err_size);
}

static int op_npp_loop(bench *b, const row_def *r, char *err, size_t err_size) {
    const size_t sf = frame_bytes(SRC_W, SRC_H), df = frame_bytes(r->dw, r->dh);
    for (int i = 0; i < BATCH; i++) {
        int st = image_npp_resize_c3(b->npp, (const void *)(uintptr_t)(b->src_p + i * sf), SRC_W * CH, SRC_W, SRC_H,
                                     (void *)(uintptr_t)(b->dst_p + i * df), r->dw * CH, r->dw, r->dh, r->npp_interp);
        if (npp_result(st, "nppiResize_8u_C3R_Ctx", err, err_size) != 0) return 1;
    }
    return 0;
}

/* A fresh gaio stream (after a failed op failed the old one) and NPP on its CUstream. */
static int open_stream(bench *b) {
    if (b->s) {
        (void)gaio_stream_synchronize(b->s); /* its failure is reported already */
        gaio_stream_release(b->s);
        b->s = NULL;
    }
    CK(gaio_stream_create(b->ctx, 0, 0, &b->s));
    void *native = NULL;
    CK(gaio_stream_native(b->s, &native));
    if (!native) {
        fprintf(stderr, PROG ": gaio_stream_native gave no CUstream\n");
        return -1;
    }
    b->cs = (CUstream)native;
    if (raw_current(b) != 0) return -1;
    unsigned flags = 0;
    CU(bench_cu.cuStreamGetFlags(b->cs, &flags));
    b->nppdev.stream_flags = flags;
    if (b->npp) image_npp_set_stream(b->npp, b->cs, &b->nppdev);
    return 0;
}

static int measure_row(bench *b, size_t i) {
    const row_def *r = &rows[i];
    row_result *res = &b->res[i];

    int rc = time_op(b, op_gaio, r, &res->gaio, res->gaio_err, sizeof res->gaio_err);
    if (rc < 0) return -1;
    /* A kernel that failed fails the stream: the events above still complete, so
     * ask the stream itself. */
    gaio_status st = gaio_stream_synchronize(b->s);
    if (rc == 0 && st != GAIO_OK) {
        snprintf(res->gaio_err, sizeof res->gaio_err, "the stream failed: %s: %s", gaio_status_string(st),
                 gaio_last_error());
        rc = 1;
    }
    if (rc != 0) {
        res->gaio = -1;
        b->gaio_failures++;
        fprintf(stderr, PROG ": %s: %s\n", r->label, res->gaio_err);
        if (st != GAIO_OK && open_stream(b) != 0) return -1;
    }

    if (!b->npp || !r->npp_interp) return 0;
    double batch_ms = -1, loop_ms = -1;
    char e1[160] = "", e2[160] = "";
    rc = time_op(b, op_npp_batch, r, &batch_ms, e1, sizeof e1);
    if (rc < 0) return -1;
    if (rc) batch_ms = -1;
    rc = time_op(b, op_npp_loop, r, &loop_ms, e2, sizeof e2);
    if (rc < 0) return -1;
    if (rc) loop_ms = -1;
    if (batch_ms > 0 && (loop_ms < 0 || batch_ms <= loop_ms)) {
        res->npp = batch_ms;
        res->npp_how = 'b';
    } else if (loop_ms > 0) {
        res->npp = loop_ms;
        res->npp_how = 'l';
    } else {
        snprintf(res->npp_err, sizeof res->npp_err, "%.75s; %.75s", e1, e2);
    }
    return 0;
}

/* ---- the copy bandwidth ---- */

static int measure_copy(bench *b) {
    gaio_buffer *a = NULL, *c = NULL;
    int rc = -1;
    double v[COPY_SAMPLES];
    if (bench_ck(PROG, gaio_buffer_alloc(b->ctx, GAIO_MEM_DEVICE, COPY_BYTES, &a), "gaio_buffer_alloc (copy src)") ||
        bench_ck(PROG, gaio_buffer_alloc(b->ctx, GAIO_MEM_DEVICE, COPY_BYTES, &c), "gaio_buffer_alloc (copy dst)") ||
        raw_current(b) != 0)
        goto out;
    CUdeviceptr pa = dptr(a), pc = dptr(c);
    for (int i = -2; i < COPY_SAMPLES; i++) {
        CUresult r = bench_cu.cuEventRecord(b->e0, b->cs);
        if (r == CUDA_SUCCESS) r = bench_cu.cuMemcpyDtoDAsync(pc, pa, COPY_BYTES, b->cs);
        if (r == CUDA_SUCCESS) r = bench_cu.cuEventRecord(b->e1, b->cs);
        if (r != CUDA_SUCCESS) {
            bench_cu_fail(PROG, r, "cuMemcpyDtoDAsync of the copy bandwidth");
            goto out;
        }
        if (wait_event(b->e1, "the copy bandwidth") != 0) goto out;
        float t = 0;
        r = bench_cu.cuEventElapsedTime(&t, b->e0, b->e1);
        if (r != CUDA_SUCCESS) {
            bench_cu_fail(PROG, r, "cuEventElapsedTime");
            goto out;
        }
        if (i >= 0) v[i] = t;
    }
    b->copy_ms = bench_median(v, COPY_SAMPLES);
    b->copy_bw = 2.0 * (double)COPY_BYTES / (b->copy_ms / 1e3);
    rc = 0;
out:
    /* gaio keeps freed memory for reuse up to the pool's threshold (64 MiB), so these
     * 2 GiB go back to the device */
    gaio_buffer_release(a);
    gaio_buffer_release(c);
    return rc;
}

/* ---- setup ---- */

static int attr(bench *b, CUdevice_attribute a, int *v, const char *what) {
    CUresult r = bench_cu.cuDeviceGetAttribute(v, a, b->dev);
    return r == CUDA_SUCCESS ? 0 : bench_cu_fail(PROG, r, what);
}

static int raw_open(bench *b) {
    if (bench_cu_load(PROG) != 0) return -1;
    CU(bench_cu.cuInit(0));
    CU(bench_cu.cuCtxGetCurrent(&b->saved));
    CU(bench_cu.cuDeviceGet(&b->dev, b->props.ordinal));
    CU(bench_cu.cuDevicePrimaryCtxRetain(&b->primary, b->dev));
    b->retained = true;
    if (raw_current(b) != 0) return -1;
    CU(bench_cu.cuEventCreate(&b->e0, CU_EVENT_DEFAULT));
    CU(bench_cu.cuEventCreate(&b->e1, CU_EVENT_DEFAULT));
    image_npp_device *d = &b->nppdev;
    int smem = 0;
    d->ordinal = b->props.ordinal;
    if (attr(b, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &d->sm_count, "SM count") ||
        attr(b, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, &d->max_threads_per_sm, "threads per SM") ||
        attr(b, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, &d->max_threads_per_block, "threads per block") ||
        attr(b, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, &smem, "shared memory per block") ||
        attr(b, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &d->cc_major, "compute capability") ||
        attr(b, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &d->cc_minor, "compute capability"))
        return -1;
    d->shared_mem_per_block = (size_t)smem;
    return 0;
}

static void raw_close(bench *b) {
    if (!b->retained) return;
    if (bench_cu.cuCtxSetCurrent(b->primary) == CUDA_SUCCESS) {
        if (b->e0) bench_cu.cuEventDestroy(b->e0);
        if (b->e1) bench_cu.cuEventDestroy(b->e1);
    }
    b->e0 = b->e1 = NULL;
    bench_cu.cuCtxSetCurrent(b->saved);
    bench_cu.cuDevicePrimaryCtxRelease(b->dev);
    b->retained = false;
}

static size_t align_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

static int alloc_device(bench *b, size_t size, gaio_buffer **buf, const char *what) {
    gaio_status st = gaio_buffer_alloc(b->ctx, GAIO_MEM_DEVICE, size, buf);
    if (st != GAIO_OK) {
        char w[96];
        snprintf(w, sizeof w, "gaio_buffer_alloc of %zu MiB (%s)", size >> 20, what);
        return bench_fail(PROG, st, w);
    }
    return 0;
}

static int gaio_open(bench *b) {
    CK(gaio_context_create(b->gdev, NULL, &b->ctx));
    if (open_stream(b) != 0) return -1;
    const size_t sf = frame_bytes(SRC_W, SRC_H);
    size_t var_size = 0;
    for (int i = 0; i < BATCH; i++) {
        const int *sz = var_sizes[(size_t)i % NVAR_SIZES];
        var_size = align_up(var_size, VAR_ALIGN) + frame_bytes(sz[0], sz[1]);
    }
    var_size = align_up(var_size, VAR_ALIGN);
    /* dst holds the largest u8 output: the NV12 row's full-size RGB frames */
    if (alloc_device(b, sf * BATCH, &b->src, "frames") || alloc_device(b, sf * BATCH, &b->dst, "dst") ||
        alloc_device(b, (size_t)OUT * OUT * CH * sizeof(float) * BATCH, &b->pre, "preprocess dst") ||
        alloc_device(b, var_size, &b->var, "varshape frames") ||
        alloc_device(b, NV12_FRAME * BATCH, &b->nv12, "NV12 frames") ||
        alloc_device(b, FLUSH_BYTES, &b->flush, "L2 flush") ||
        alloc_device(b, 2 * BATCH * sizeof(image_npp_cxr), &b->lists, "NPP lists"))
        return -1;
    b->src_p = dptr(b->src);
    b->dst_p = dptr(b->dst);
    b->var_p = dptr(b->var);
    b->flush_p = dptr(b->flush);
    CUdeviceptr lp = dptr(b->lists);
    if (!b->src_p || !b->dst_p || !b->var_p || !b->flush_p || !lp) {
        fprintf(stderr, PROG ": gaio_buffer_device_ptr gave no address\n");
        return -1;
    }
    b->list_p[0] = lp;
    b->list_p[1] = lp + BATCH * sizeof(image_npp_cxr);

    /* random bytes, never all zeros: all three sizes are multiples of 4 */
    CK(gaio_rng_set_state(b->ctx, 0x1a9e5eedull, 0));
    CK(gaio_rng_bits_u32(b->s, b->src, 0, sf * BATCH / 4));
    CK(gaio_rng_bits_u32(b->s, b->var, 0, var_size / 4));
    CK(gaio_rng_bits_u32(b->s, b->nv12, 0, NV12_FRAME * BATCH / 4));
    CK(gaio_stream_synchronize(b->s));

    size_t off = 0;
    for (int i = 0; i < BATCH; i++) {
        const int *sz = var_sizes[(size_t)i % NVAR_SIZES];
        off = align_up(off, VAR_ALIGN);
        b->var_imgs[i] = gaio_image_make(b->var, off, GAIO_DTYPE_U8, GAIO_LAYOUT_HWC, 1, sz[0], sz[1], CH);
        off += frame_bytes(sz[0], sz[1]);
        int side = sz[0] < sz[1] ? sz[0] : sz[1];
        b->var_rois[i] = (gaio_rect){(sz[0] - side) / 2, (sz[1] - side) / 2, side, side};
        b->rois[i] = (gaio_rect){(SRC_W - CROP) / 2, (SRC_H - CROP) / 2, CROP, CROP};
    }

    /* NPP's batch lists, one per output size, in device memory as NPP requires */
    image_npp_cxr host[2][BATCH];
    static const int dsz[2][2] = {{1280, 720}, {OUT, OUT}};
    for (int l = 0; l < 2; l++)
        for (int i = 0; i < BATCH; i++) {
            host[l][i].src = (const void *)(uintptr_t)(b->src_p + (size_t)i * sf);
            host[l][i].src_step = SRC_W * CH;
            host[l][i].dst = (void *)(uintptr_t)(b->dst_p + (size_t)i * frame_bytes(dsz[l][0], dsz[l][1]));
            host[l][i].dst_step = dsz[l][0] * CH;
        }
    if (raw_current(b) != 0) return -1;
    CU(bench_cu.cuMemcpyHtoD(lp, host, sizeof host));
    return 0;
}

static void gaio_close(bench *b) {
    if (b->s) (void)gaio_stream_synchronize(b->s);
    gaio_buffer_release(b->src);
    gaio_buffer_release(b->dst);
    gaio_buffer_release(b->pre);
    gaio_buffer_release(b->var);
    gaio_buffer_release(b->nv12);
    gaio_buffer_release(b->flush);
    gaio_buffer_release(b->lists);
    b->src = b->dst = b->pre = b->var = b->nv12 = b->flush = b->lists = NULL;
    gaio_stream_release(b->s);
    b->s = NULL;
    if (b->ctx) (void)gaio_context_synchronize(b->ctx);
    gaio_context_release(b->ctx);
    b->ctx = NULL;
}

/* ---- the table ---- */

static void fmt_ms(char *buf, size_t size, double ms) {
    if (ms <= 0) snprintf(buf, size, "-");
    else if (ms < 10) snprintf(buf, size, "%.3f", ms);
    else if (ms < 100) snprintf(buf, size, "%.2f", ms);
    else snprintf(buf, size, "%.1f", ms);
}

static void fmt_ratio(char *buf, size_t size, double a, double b) {
    if (a > 0 && b > 0) snprintf(buf, size, "%.2f", a / b);
    else snprintf(buf, size, "-");
}

/* gaio against both targets, e.g. "floor<=1.5 ok, cv<=0.9 MISSED"; "-" where a figure is missing. */
static void fmt_targets(char *buf, size_t size, double gaio, double floor_ms, double cv) {
    const char *f = gaio > 0 && floor_ms > 0 ? (gaio <= FLOOR_TARGET * floor_ms ? "ok" : "MISSED") : "-";
    if (gaio > 0 && cv > 0)
        snprintf(buf, size, "floor<=%.1f %s, cv<=%.1f %s", FLOOR_TARGET, f, CV_TARGET,
                 gaio <= CV_TARGET * cv ? "ok" : "MISSED");
    else
        snprintf(buf, size, "floor<=%.1f %s, cv -", FLOOR_TARGET, f);
}

static void fmt_npp(char *buf, size_t size, const bench *b, const row_def *r, const row_result *res) {
    if (!r->npp_interp) {
        snprintf(buf, size, "-");
    } else if (!b->npp) {
        snprintf(buf, size, "not found");
    } else if (res->npp > 0) {
        char v[24];
        fmt_ms(v, sizeof v, res->npp);
        snprintf(buf, size, "%s %c", v, res->npp_how);
    } else {
        snprintf(buf, size, res->npp_err[0] ? "failed" : "-");
    }
}

static double floor_of(const bench *b, double bytes) { return b->copy_bw > 0 ? bytes / b->copy_bw * 1e3 : -1; }

static void print_table(FILE *out, const bench *b) {
    static const int widths[] = {4, 8, 7, 7, 9, 8, 10, 5};
    const bench_table t = {out, 38, widths, 8, 30};
    bench_table_row(&t, "op (one call, batch of 64 frames)",
                    (const char *const[]){"MB", "floor ms", "gaio ms", "g/floor", "NPP ms", "torch ms", "CV-CUDA ms",
                                          "g/CV"},
                    "targets");
    bench_table_sep(&t);
    for (size_t i = 0; i < NROWS; i++) {
        const row_def *r = &rows[i];
        const row_result *res = &b->res[i];
        double floor_ms = floor_of(b, res->sector_bytes);
        char c[8][32], last[48];
        snprintf(c[0], sizeof c[0], "%.0f", res->sector_bytes / 1e6);
        fmt_ms(c[1], sizeof c[1], floor_ms);
        fmt_ms(c[2], sizeof c[2], res->gaio);
        if (res->gaio < 0 && res->gaio_err[0]) snprintf(c[2], sizeof c[2], "failed");
        fmt_ratio(c[3], sizeof c[3], res->gaio, floor_ms);
        fmt_npp(c[4], sizeof c[4], b, r, res);
        fmt_ms(c[5], sizeof c[5], res->torch);
        fmt_ms(c[6], sizeof c[6], res->cv);
        fmt_ratio(c[7], sizeof c[7], res->gaio, res->cv);
        fmt_targets(last, sizeof last, res->gaio, floor_ms, res->cv);
        bench_table_row(&t, r->label, (const char *const[]){c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]}, last);
    }
}

/* A peer's per-row variants (or why it has no figures), then its notes. */
static void print_peer(FILE *out, const bench *b, const image_peer *p, bool cv, bool peers) {
    if (p->python[0]) {
        for (size_t i = 0; i < NROWS; i++) {
            const row_result *res = &b->res[i];
            const char *v = cv ? res->cv_variant : res->torch_variant;
            if ((cv ? res->cv : res->torch) > 0) fprintf(out, "  %-38s %s\n", rows[i].label, v ? v : "");
        }
    } else {
        fprintf(out, "%s: %s\n", cv ? "CV-CUDA" : "torch",
                !peers ? "not run (GAIO_BENCH_PEERS=0)" : p->nnotes ? "no figures (\"-\"), because:" : "no figures (\"-\")");
    }
    for (int i = 0; i < p->nnotes; i++) fprintf(out, "  %s\n", p->notes[i]);
}

static void print_notes(FILE *out, const bench *b, const image_peer *torch, const image_peer *cv, bool peers) {
    fprintf(out,
            "\nms: median of %d samples after %d warm-up, CUDA events around one call over the whole batch, on a\n"
            "  cold L2 (a %zu MiB memset before each sample). Source: %d RGB u8 %dx%d NHWC frames in one DEVICE\n"
            "  buffer; fused rows: centre %dx%d ROI -> %dx%d NCHW f32, scale 1/255, ImageNet mean/std; varshape:\n"
            "  %d frames cycling 640x480, 1280x720, 1920x1080, 2560x1440, 3840x2160, centre square ROI, linear;\n"
            "  NV12: %d packed NV12 %dx%d frames (Y, then interleaved U,V) -> u8 RGB NHWC, BT.601 limited range.\n",
            SAMPLES, WARM, FLUSH_BYTES >> 20, BATCH, SRC_W, SRC_H, CROP, CROP, OUT, OUT, BATCH, BATCH, SRC_W, SRC_H);
    fprintf(out,
            "floor = MB / copy bandwidth. MB: the source the op's filter reads with a non-zero weight (the index\n"
            "  rules of src/image/resize_math.h), counted in the whole 32-byte sectors DRAM delivers (touched rows\n"
            "  x sectors that hold touched pixels x 32; all of the source for area and for linear/cubic at 720p),\n"
            "  plus the bytes written; NV12: 1.5 x W x H read and 3 x W x H written per frame. Targets, every row:\n"
            "  gaio <= %.1f x floor and <= %.1f x CV-CUDA (a missed target is reported, not a failure).\n",
            FLOOR_TARGET, CV_TARGET);
    bool any = false;
    for (size_t i = 0; i < NROWS; i++) {
        const row_result *res = &b->res[i];
        if (b->copy_bw <= 0 || res->sector_bytes <= 1.05 * res->bytes) continue;
        double fl = floor_of(b, res->bytes);
        if (!any)
            fprintf(out, "  Touched pixels only (an earlier issue's floor), on the rows where that is > 5%% less (the\n"
                         "  filter skips pixels of an interleaved row, but DRAM still delivers their sectors):\n");
        any = true;
        char g[32];
        fmt_ratio(g, sizeof g, res->gaio, fl);
        fprintf(out, "  %-38s %5.0f MB, floor %.3f ms, gaio / that %s\n", rows[i].label, res->bytes / 1e6, fl, g);
    }
    if (b->npp)
        fprintf(out,
                "NPP: %s; b = one nppiResizeBatch_8u_C3R_Ctx over the batch, l = %d nppiResize_8u_C3R_Ctx calls,\n"
                "  whichever was faster; NPPI_INTER_LINEAR, SUPER (area), CUBIC, NN on NPP's own sampling rules;\n"
                "  NPP has no single fused crop+resize+normalize call, and its NV12 conversion is not run (\"-\").\n",
                image_npp_describe(b->npp), BATCH);
    else
        fprintf(out, "NPP: no figures (%s)\n", b->npp_why);
    for (size_t i = 0; i < NROWS; i++)
        if (b->res[i].npp_err[0]) fprintf(out, "  NPP %s: %s\n", rows[i].label, b->res[i].npp_err);
    if (torch->python[0])
        fprintf(out,
                "torch: %s bench/image_torch.py, torch.cuda.Event medians of the same rows on its own random\n"
                "  uint8 [64,1080,1920,3] cuda tensor (NV12: [64,1620,1920]), cold L2 likewise; the figure includes\n"
                "  the layout and dtype conversions a user pays (permute, .float(), round/clamp/.to(uint8),\n"
                "  .contiguous()) to get the same output as gaio (u8 NHWC, or f32 NCHW); the fastest variant of\n"
                "  each row is shown:\n",
                torch->python);
    print_peer(out, b, torch, false, peers);
    if (cv->python[0])
        fprintf(out,
                "CV-CUDA: %s bench/image_cvcuda.py, cvcuda's *_into operators on torch's current stream into\n"
                "  preallocated outputs of gaio's shapes and dtypes (cvcuda.as_tensor over torch tensors), timed\n"
                "  like torch. Its NEAREST samples pixel centres (nearest-exact) while gaio follows OpenCV's\n"
                "  INTER_NEAREST (floor(dst x scale)), as its NEAREST_FLOOR does where the wheel has it. Its fused\n"
                "  op (resize_crop_convert_reformat) resizes the whole frame then crops, with one scalar scale and\n"
                "  offset for every channel (ImageNet's mean/std averaged): no per-channel mean/std, and no per-image\n"
                "  crop (varshape \"-\"). What ran, per row:\n",
                cv->python);
    print_peer(out, b, cv, true, peers);
    for (size_t i = 0; i < NROWS; i++)
        if (b->res[i].gaio_err[0]) fprintf(out, "gaio %s: %s\n", rows[i].label, b->res[i].gaio_err);
}

/* ---- the run ---- */

int gaio_bench_image_cuda_run(FILE *out) {
    static bench b; /* large: keep it off the stack */
    static image_peer torch, cv;
    memset(&b, 0, sizeof b);
    memset(&torch, 0, sizeof torch);
    memset(&cv, 0, sizeof cv);
    uint64_t start = bench_now_ns();
    int rc = 1;

    b.gdev = bench_find_cuda_device(PROG, out, "gaio image benchmark (CUDA)", &b.props);
    if (b.gdev == -2) goto done;
    if (b.gdev < 0) {
        rc = 0;
        goto done;
    }
    if (raw_open(&b) != 0) {
        fprintf(out, "gaio image benchmark (CUDA): the driver failed (stderr says how)\n");
        goto done;
    }
    /* GAIO_BENCH_PEERS=0: gaio's rows only (quick runs, profiling one kernel) */
    const char *peers_env = getenv("GAIO_BENCH_PEERS");
    const bool peers = !peers_env || strcmp(peers_env, "0") != 0;
    if (!peers) snprintf(b.npp_why, sizeof b.npp_why, "not run (GAIO_BENCH_PEERS=0)");
    else if (image_npp_open(&b.npp, b.npp_why, sizeof b.npp_why) != 0) b.npp = NULL;
    if (gaio_open(&b) != 0) {
        fprintf(out, "gaio image benchmark (CUDA): setup failed (stderr says how)\n");
        goto done;
    }
    for (size_t i = 0; i < NROWS; i++) {
        b.res[i].gaio = b.res[i].npp = b.res[i].torch = b.res[i].cv = -1;
        if (row_bytes(&b, &rows[i], &b.res[i].bytes, &b.res[i].sector_bytes) != 0) goto done;
    }
    /* A driver failure (a sticky context error, a timeout) ends the measuring, but
     * what was measured is still shown. */
    bool no_copy = measure_copy(&b) != 0, aborted = false; /* without it, floors read "-" */
    for (size_t i = 0; i < NROWS && !aborted; i++)
        if (measure_row(&b, i) != 0) aborted = true;
    gaio_close(&b);

    static const char *const pythons[] = {"python3", "/usr/bin/python3"};
    char args[256];
    snprintf(args, sizeof args,
             "--batch %d --width %d --height %d --crop %d --out %d --samples %d --warmup %d --flush-mib %zu "
             "--varshape 640x480,1280x720,1920x1080,2560x1440,3840x2160",
             BATCH, SRC_W, SRC_H, CROP, OUT, SAMPLES, WARM, FLUSH_BYTES >> 20);
    if (peers) {
        image_peer_run(pythons, 2, "image_torch.py", args, PEER_TIMEOUT_S, &torch);
        image_peer_run(pythons, 2, "image_cvcuda.py", args, PEER_TIMEOUT_S, &cv);
    }
    for (size_t i = 0; i < NROWS; i++) {
        b.res[i].torch = image_peer_ms(&torch, rows[i].key, &b.res[i].torch_variant);
        b.res[i].cv = image_peer_ms(&cv, rows[i].key, &b.res[i].cv_variant);
    }

    int driver = 0;
    if (bench_cu.cuDriverGetVersion(&driver) != CUDA_SUCCESS) driver = 0;
    fprintf(out, "gaio %d.%d.%d image ops, CUDA backend: device %d, %s (sm_%d%d, %d SMs), driver API %d.%d\n",
            GAIO_VERSION_MAJOR, GAIO_VERSION_MINOR, GAIO_VERSION_PATCH, b.gdev, b.props.name, b.props.compute_major,
            b.props.compute_minor, b.props.processor_count, driver / 1000, driver % 1000 / 10);
    fprintf(out, "device-to-device copy bandwidth: %.0f GB/s (read + write: 2 x %zu MiB / %.3f ms, cuMemcpyDtoDAsync, "
                 "median of %d)\n\n",
            b.copy_bw / 1e9, COPY_BYTES >> 20, b.copy_ms, COPY_SAMPLES);
    print_table(out, &b);
    print_notes(out, &b, &torch, &cv, peers);
    if (no_copy) fprintf(out, "the copy bandwidth was not measured (stderr says why): no floors\n");
    if (aborted) fprintf(out, "the run stopped early: a driver call failed (stderr says which); \"-\": not measured\n");
    fprintf(out, "total run time %.1f s\n", (double)(bench_now_ns() - start) / 1e9);
    rc = b.gaio_failures || aborted || no_copy ? 1 : 0;
done:
    gaio_close(&b);
    raw_close(&b);
    image_npp_close(b.npp);
    b.npp = NULL;
    fflush(out);
    return rc;
}

#endif /* GAIO_BENCH_HAVE_CUDA */
