// The fused preprocess on the GPU, twin of src/image/cpu/preprocess.c: the same taps
// (image/resize_math.h) and the same float operations in the same order. Products
// and sums go through __fmul_rn / __fadd_rn so that nvcc fuses none of them into an
// FMA: both backends then give the same floats.
//
//   LINEAR (and AREA when it enlarges: area-mode bilinear): each thread gathers the
//   2x2 source pixels of its output straight from global memory, two aligned 8-byte
//   loads per source row (the two pixels are 6 or 7 consecutive bytes); a downscale
//   reads only the sectors of the rows it needs. LINEAR's blocks are 32 x kWarps
//   threads, a column tile by a band of rows (linear_warps, below); AREA's blocks
//   are one band of output rows of one image of the table (blockIdx.y), threads
//   along x.
//   AREA shrinking (box filter): every source byte of the ROI is read once. Rows of a
//   column segment (the whole ROI row up to 8 KiB) stream through a ring of
//   shared-memory slots by cp.async, 16-byte chunks, rows in flight while one is
//   summed; each thread owns 32 bytes of the segment and sums the box's rows
//   vertically in registers; at the end of an output row the vertical sums go
//   through shared memory and each thread sums its outputs' horizontal boxes there.
//   (Measured on an H100 and rejected: a barrier per two rows, deeper rings, fewer
//   bytes per thread, warps working on their own chunks without block barriers,
//   integer sums of the rows between a box's first and last: all slower.)
// Output rows are written plane by plane, consecutive threads on consecutive x.
#include <stdint.h>

#include "image/resize_math.h"
#include "kernels/image/u8_float.cuh"

namespace {

__device__ __forceinline__ float fmul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ float fadd(float a, float b) { return __fadd_rn(a, b); }

struct Norm {
    float a0, a1, a2, b0, b1, b2;
    int32_t swap;
};

template <bool F16>
__device__ __forceinline__ void put(char *row, int64_t i, float v) {
    if (F16) ((uint16_t *)row)[i] = gaio_k_f32_to_f16(v);
    else ((float *)row)[i] = v;
}

// Output pixel (x, y) of the dst image at img from the three resized source channels.
template <bool F16, bool CHW>
__device__ __forceinline__ void store_px(char *img, const gaio_kimg &d, int32_t y, int32_t x, float v0, float v1,
                                         float v2, const Norm &n) {
    float c0 = n.swap ? v2 : v0, c2 = n.swap ? v0 : v2;
    float o0 = fadd(fmul(c0, n.a0), n.b0), o1 = fadd(fmul(v1, n.a1), n.b1), o2 = fadd(fmul(c2, n.a2), n.b2);
    char *row = img + (uint64_t)y * d.row_pitch;
    if (CHW) {
        put<F16>(row, x, o0);
        put<F16>(row + d.plane_pitch, x, o1);
        put<F16>(row + 2 * d.plane_pitch, x, o2);
    } else {
        put<F16>(row, 3 * (int64_t)x, o0);
        put<F16>(row, 3 * (int64_t)x + 1, o1);
        put<F16>(row, 3 * (int64_t)x + 2, o2);
    }
}

// ---- bilinear ----------------------------------------------------------------------

// The two taps of one source row as floats: channels of pixel i0 in p[], of i1 in q[]
// (the bytes [p0, p0 + CN + 3) from row start rs; i1 is i0 + 1, or i0 at the right
// edge: `same`). `wide`: one or two aligned 8-byte loads from p0 rounded down to 8,
// which stay inside the buffer: before p0 the buffer's start is aligned, after it a
// next row of at least 16 bytes follows (every row but an image's last, pitch >= 16).
template <int CN>
__device__ __forceinline__ void taps(const uint8_t *rs, int64_t p0, bool same, bool wide, float p[3], float q[3]) {
    if (wide) {
        const uintptr_t a = (uintptr_t)(rs + p0);
        const uint32_t e = (uint32_t)(a & 7), sh = 8 * (e & 3);
        // the second word only where the bytes reach it: no extra sector for large steps
        const uint2 lo = __ldg((const uint2 *)(a - e)),
                    hi = e + (same ? 3 : CN + 3) > 8 ? __ldg((const uint2 *)(a - e + 8)) : make_uint2(0, 0);
        const uint32_t w0 = e < 4 ? lo.x : lo.y, w1 = e < 4 ? lo.y : hi.x, w2 = e < 4 ? hi.x : hi.y;
        const uint32_t x0 = __funnelshift_r(w0, w1, sh), x1 = __funnelshift_r(w1, w2, sh);
        // pixel i0: bytes 0..2; pixel i1: bytes CN..CN+2 (of x0:x1)
        p[0] = gaio_u8f(x0, 0), p[1] = gaio_u8f(x0, 1), p[2] = gaio_u8f(x0, 2);
        if (same) {
            q[0] = p[0], q[1] = p[1], q[2] = p[2];
        } else if (CN == 3) {
            q[0] = gaio_u8f(x0, 3), q[1] = gaio_u8f(x1, 0), q[2] = gaio_u8f(x1, 1);
        } else {
            q[0] = gaio_u8f(x1, 0), q[1] = gaio_u8f(x1, 1), q[2] = gaio_u8f(x1, 2);
        }
    } else {
        const uint8_t *s = rs + p0, *t = same ? s : s + CN;
#pragma unroll
        for (int c = 0; c < 3; c++) {
            p[c] = gaio_u8f(__ldg(s + c), 0);
            q[c] = gaio_u8f(__ldg(t + c), 0);
        }
    }
}

// The three channels from the 2x2 taps s[row][tap][channel]: horizontal sums first,
// as the host's (src/image/cpu/preprocess.c), no operation fused.
__device__ __forceinline__ void bilinear(const float (&s)[2][2][3], float wx0, float fx, float fy, float (&o)[3]) {
    const float wy0 = 1.f - fy;
#pragma unroll
    for (int c = 0; c < 3; c++) {
        float h0 = fadd(fmul(s[0][0][c], wx0), fmul(s[0][1][c], fx));
        float h1 = fadd(fmul(s[1][0][c], wx0), fmul(s[1][1][c], fx));
        o[c] = fadd(fmul(h0, wy0), fmul(h1, fy));
    }
}

// Rows [y0, y1) by bilinear taps (LINEAR or AREA_LINEAR axes).
template <int CN, bool F16, bool CHW>
__device__ void linear_band(const gaio_kroi &v, const gaio_kimg &d, char *img, int32_t y0, int32_t y1,
                            const gaio_rs_axis &ax, const gaio_rs_axis &ay, const Norm &n) {
    const uint8_t *src = (const uint8_t *)(uintptr_t)v.ptr;
    const int32_t last = v.height - 1;
    const bool pitch_ok = v.row_pitch >= 16;
    for (int32_t x = threadIdx.x; x < d.width; x += blockDim.x) {
        int32_t i0, i1;
        float fx;
        gaio_rs_linear(&ax, x, &i0, &i1, &fx);
        const float wx0 = 1.f - fx;
        const int64_t p0 = (int64_t)i0 * CN;
        const bool same = i1 == i0;
        for (int32_t y = y0; y < y1; y++) {
            int32_t j0, j1;
            float fy;
            gaio_rs_linear(&ay, y, &j0, &j1, &fy);
            float s[2][2][3]; // [row][tap][channel]
            taps<CN>(src + (uint64_t)j0 * v.row_pitch, p0, same, pitch_ok && j0 < last, s[0][0], s[0][1]);
            taps<CN>(src + (uint64_t)j1 * v.row_pitch, p0, same, pitch_ok && j1 < last, s[1][0], s[1][1]);
            float o[3];
            bilinear(s, wx0, fx, fy, o);
            store_px<F16, CHW>(img, d, y, x, o[0], o[1], o[2], n);
        }
    }
}

// LINEAR kernels' launch: blocks of 32 x kWarps threads, one output column a thread
// (a tile of 32), the block's band of rows taken by its warps in turn (warp w:
// rows y0 + w, y0 + w + kWarps, ...: at most 32). What a thread makes once (the
// axes, its column's taps) is then spread over several rows, and each row's taps
// are computed once a warp: lane j makes the taps of the warp's row j, the row
// loop takes them by shuffle. (One output row a block and a pixel a thread, as
// before, spent most of its instructions on that setup. Loading two rows before
// their sums, as resize_direct.cu's nearest does, measured 8% slower here.)
constexpr int kWarps = 4;

template <int CN, bool F16, bool CHW>
__device__ __forceinline__ void linear_warps(const gaio_ktable &t, const gaio_kimg &d, int32_t first, int32_t interp,
                                             const Norm &n) {
    const int32_t i = (int32_t)blockIdx.z;
    const int32_t rows = (d.height + (int32_t)gridDim.y - 1) / (int32_t)gridDim.y;
    const int32_t y0 = (int32_t)blockIdx.y * rows, y1 = min(y0 + rows, d.height);
    const int32_t yw = y0 + (int32_t)threadIdx.y; // this warp's first row
    if (yw >= y1) return;                         // whole warps: the shuffles see full warps
    const gaio_kroi &v = t.v[i];
    char *img = (char *)(uintptr_t)(d.ptr + (uint64_t)(first + i) * d.image_stride);
    int32_t mx, my;
    gaio_rs_modes(interp, v.width, v.height, d.width, d.height, &mx, &my);
    const gaio_rs_axis ax = gaio_rs_axis_make(v.width, d.width, mx), ay = gaio_rs_axis_make(v.height, d.height, my);
    const uint8_t *src = (const uint8_t *)(uintptr_t)v.ptr;
    const int32_t last = v.height - 1;
    const bool pitch_ok = v.row_pitch >= 16;
    const int32_t x = (int32_t)(blockIdx.x * 32 + threadIdx.x);
    const bool live = x < d.width;
    int32_t i0, i1;
    float fx;
    gaio_rs_linear(&ax, live ? x : d.width - 1, &i0, &i1, &fx);
    const float wx0 = 1.f - fx;
    const int64_t p0 = (int64_t)i0 * CN;
    const bool same = i1 == i0;
    int32_t j0l, j1l;
    float fyl;
    const int32_t yl = yw + kWarps * (int32_t)threadIdx.x;
    gaio_rs_linear(&ay, yl < y1 ? yl : y1 - 1, &j0l, &j1l, &fyl);
    for (int32_t y = yw, j = 0; y < y1 && j < 32; y += kWarps, j++) {
        const int32_t j0 = __shfl_sync(0xffffffffu, j0l, j), j1 = __shfl_sync(0xffffffffu, j1l, j);
        const float fy = __shfl_sync(0xffffffffu, fyl, j);
        float s[2][2][3]; // [row][tap][channel]
        taps<CN>(src + (uint64_t)j0 * v.row_pitch, p0, same, pitch_ok && j0 < last, s[0][0], s[0][1]);
        taps<CN>(src + (uint64_t)j1 * v.row_pitch, p0, same, pitch_ok && j1 < last, s[1][0], s[1][1]);
        float o[3];
        bilinear(s, wx0, fx, fy, o);
        if (live) store_px<F16, CHW>(img, d, y, x, o[0], o[1], o[2], n);
    }
}

// ---- box ---------------------------------------------------------------------------

// Source rows per pipeline step (one barrier each), steps in the ring (all but one
// in flight), and 4-byte words of a row segment each thread owns (words t, t + T,
// t + 2T, ...: a warp's accesses are consecutive). src/image/preprocess.c sizes the
// shared memory with the same numbers.
constexpr int BOX_STEP = 1;
constexpr int BOX_STEPS = 3;
constexpr int BOX_WORDS = 8;

// 16 bytes global -> shared, `valid` of them read (the rest zero), asynchronously
// where the GPU can (sm_80+: cp.async; wait with box_wait).
__device__ __forceinline__ void copy16(uint8_t *dst, const uint8_t *src, uint32_t valid) {
#if __CUDA_ARCH__ >= 800
    const uint32_t d = (uint32_t)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(valid) : "memory");
#else
    if (valid == 16) {
        *(uint4 *)dst = __ldg((const uint4 *)src);
    } else {
        for (uint32_t b = 0; b < 16; b++) dst[b] = b < valid ? __ldg(src + b) : 0;
    }
#endif
}
__device__ __forceinline__ void box_commit() {
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}
// Every step but the newest BOX_STEPS - 2 has landed (for this thread).
__device__ __forceinline__ void box_wait() {
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group %0;\n" ::"n"(BOX_STEPS - 2) : "memory");
#endif
}
__device__ __forceinline__ void box_drain() {
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_all;\n" ::: "memory");
#endif
}

// Shared memory of the box path for T threads (src/image/preprocess.c gives AREA
// launches as much): BOX_STEP * BOX_STEPS slots, each a 16-byte aligned window over
// one source row's segment, then the segment's vertical sums.
__host__ __device__ constexpr int box_slot_bytes(int T) { return BOX_WORDS * 4 * T + 16; }
__host__ __device__ constexpr int box_smem_bytes(int T) {
    return BOX_STEP * BOX_STEPS * box_slot_bytes(T) + BOX_WORDS * 16 * T;
}

// Output (x, y) from the vertical sums vs of the segment starting at pixel seg_lo.
template <int CN, bool F16, bool CHW>
__device__ __forceinline__ void hbox(const float *vs, const gaio_rs_box &bx, int32_t seg_lo, char *img,
                                     const gaio_kimg &d, int32_t y, int32_t x, const Norm &n) {
    const float *p = vs + (int64_t)(bx.first - seg_lo) * CN;
    float o0 = 0.f, o1 = 0.f, o2 = 0.f;
    for (int32_t t = 0; t < bx.n; t++, p += CN) {
        const float wt = gaio_rs_box_w(&bx, t);
        o0 = fadd(o0, fmul(wt, p[0]));
        o1 = fadd(o1, fmul(wt, p[1]));
        o2 = fadd(o2, fmul(wt, p[2]));
    }
    store_px<F16, CHW>(img, d, y, x, o0, o1, o2, n);
}

// Rows [y0, y1) by box filter over column chunks whose source segment fits the
// block's words. Each source row adds w * row to the vertical sums of the output
// rows whose box holds it (in row order, as the host kernel does); a finished output
// row's sums go to shared memory, where each thread sums its output's horizontal box.
template <int CN, bool F16, bool CHW>
__device__ void box_band(const gaio_kroi &v, const gaio_kimg &d, char *img, int32_t y0, int32_t y1,
                         const gaio_rs_axis &ax, const gaio_rs_axis &ay, const Norm &n, uint8_t *smem) {
    constexpr int SLOTS = BOX_STEP * BOX_STEPS;
    const int32_t T = blockDim.x, tid = threadIdx.x, dw = d.width;
    const int32_t cap = BOX_WORDS * 4 * T, slot = box_slot_bytes(T); // bytes of a segment, of a slot
    float *vs = (float *)(smem + SLOTS * slot);
    // Outputs per column chunk (up to two per thread): C outputs span at most
    // C * scale + 2 source pixels.
    int32_t C = (int32_t)(((double)cap / CN - 2) / ax.scale);
    C = max(1, min(C, min(2 * T, dw)));
    const gaio_rs_box yb0 = gaio_rs_box_at(&ay, y0), yb1 = gaio_rs_box_at(&ay, y1 - 1);
    const int32_t r_lo = yb0.first, r_hi = yb1.first + yb1.n - 1;
    for (int32_t x0 = 0; x0 < dw;) {
        int32_t xe, seg_lo, seg_bytes;
        for (;;) { // C is conservative; shrink it should rounding have made it too large
            xe = min(x0 + C, dw);
            const gaio_rs_box bl = gaio_rs_box_at(&ax, x0), br = gaio_rs_box_at(&ax, xe - 1);
            seg_lo = bl.first;
            seg_bytes = (br.first + br.n - seg_lo) * CN;
            if (seg_bytes <= cap || C == 1) break;
            C--;
        }
        const int32_t nwords = (seg_bytes + 3) / 4, xa = x0 + tid, xb = xa + T;
        const gaio_rs_box bxa = gaio_rs_box_at(&ax, xa < xe ? xa : x0);
        const uint8_t *seg = (const uint8_t *)(uintptr_t)v.ptr + (int64_t)seg_lo * CN;

        // Rows of step i into their slots from each row's 16-byte aligned start: the
        // bytes before the segment are inside the buffer (its start is aligned), and
        // none after it is read.
        auto issue = [&](int32_t i) {
#pragma unroll
            for (int k = 0; k < BOX_STEP; k++) {
                const int32_t r = r_lo + BOX_STEP * i + k;
                if (r > r_hi) break;
                const uint8_t *rb = seg + (uint64_t)r * v.row_pitch;
                const uint8_t *a0 = (const uint8_t *)((uintptr_t)rb & ~(uintptr_t)15), *re = rb + seg_bytes;
                uint8_t *s = smem + ((BOX_STEP * i + k) % SLOTS) * slot;
                const int32_t chunks = (int32_t)((re - a0 + 15) / 16);
                for (int32_t c = tid; c < chunks; c += T) {
                    const int64_t left = re - (a0 + 16 * (int64_t)c);
                    copy16(s + 16 * c, a0 + 16 * c, (uint32_t)(left < 16 ? left : 16));
                }
            }
            box_commit(); // a group per step, empty past the band, keeps box_wait's count
        };

        const int32_t steps = (r_hi - r_lo + BOX_STEP) / BOX_STEP;
        for (int32_t i = 0; i < BOX_STEPS - 1; i++) issue(i);
        int32_t y = y0;
        gaio_rs_box by = yb0;
        float acc[BOX_WORDS * 4];
#pragma unroll
        for (int b = 0; b < BOX_WORDS * 4; b++) acc[b] = 0.f;
        for (int32_t i = 0; i < steps; i++) {
            box_wait();
            __syncthreads();             // step i is in its slots; step i - 1's slots are free
            issue(i + BOX_STEPS - 1);    // into step i - 1's slots
            for (int k = 0; k < BOX_STEP; k++) {
                const int32_t r = r_lo + BOX_STEP * i + k;
                if (r > r_hi) break;
                const uint8_t *s = smem + ((BOX_STEP * i + k) % SLOTS) * slot;
                const int32_t sh = (int32_t)((uintptr_t)(seg + (uint64_t)r * v.row_pitch) & 15);
                uint32_t wrd[BOX_WORDS];
#pragma unroll
                for (int q = 0; q < BOX_WORDS; q++) {
                    const int32_t o = sh + 4 * (tid + q * T); // the word's first byte in the slot
                    const uint32_t *p = (const uint32_t *)(s + (o & ~3));
                    wrd[q] = (sh & 3) ? __funnelshift_r(p[0], p[1], 8 * (o & 3)) : p[0];
                }
                // Row r adds to every output row whose box holds it (one, or two where boxes meet).
                while (y < y1 && r >= by.first) {
                    const int32_t kk = r - by.first;
                    const float w = gaio_rs_box_w(&by, kk);
#pragma unroll
                    for (int b = 0; b < BOX_WORDS * 4; b++) acc[b] = fadd(acc[b], fmul(w, gaio_u8f(wrd[b / 4], b % 4)));
                    if (kk < by.n - 1) break;
                    // Output row y is complete: vertical sums to shared memory, horizontal boxes.
#pragma unroll
                    for (int q = 0; q < BOX_WORDS; q++) {
                        const int32_t j = tid + q * T;
                        if (j < nwords)
                            ((float4 *)vs)[j] =
                                make_float4(acc[4 * q], acc[4 * q + 1], acc[4 * q + 2], acc[4 * q + 3]);
                    }
                    __syncthreads();
                    if (xa < xe) hbox<CN, F16, CHW>(vs, bxa, seg_lo, img, d, y, xa, n);
                    if (xb < xe) hbox<CN, F16, CHW>(vs, gaio_rs_box_at(&ax, xb), seg_lo, img, d, y, xb, n);
                    __syncthreads(); // vs is free again
#pragma unroll
                    for (int b = 0; b < BOX_WORDS * 4; b++) acc[b] = 0.f;
                    if (++y < y1) by = gaio_rs_box_at(&ay, y);
                }
            }
        }
        box_drain();
        __syncthreads(); // the slots are free for the next chunk
        x0 = xe;
    }
}

template <bool AREA, int CN, bool F16, bool CHW>
__device__ __forceinline__ void preprocess(const gaio_ktable &t, const gaio_kimg &d, int32_t first, int32_t count,
                                           int32_t interp, int32_t band, int32_t smem_bytes, const Norm &n) {
    const int32_t i = (int32_t)blockIdx.y, y0 = (int32_t)blockIdx.x * band;
    if (i >= count || y0 >= d.height) return;
    const int32_t y1 = min(y0 + band, d.height);
    const gaio_kroi v = t.v[i];
    char *img = (char *)(uintptr_t)(d.ptr + (uint64_t)(first + i) * d.image_stride);
    int32_t mx, my;
    gaio_rs_modes(interp, v.width, v.height, d.width, d.height, &mx, &my);
    const gaio_rs_axis ax = gaio_rs_axis_make(v.width, d.width, mx), ay = gaio_rs_axis_make(v.height, d.height, my);
    if (AREA && mx == GAIO_RS_BOX) { // uniform over the block
        if (smem_bytes < box_smem_bytes((int)blockDim.x)) __trap(); // the host gives AREA launches as much
        extern __shared__ uint4 gaio_pre_smem[];
        box_band<CN, F16, CHW>(v, d, img, y0, y1, ax, ay, n, (uint8_t *)gaio_pre_smem);
    } else {
        linear_band<CN, F16, CHW>(v, d, img, y0, y1, ax, ay, n);
    }
}

} // namespace

// Arguments as the host kernel's: table, dst, first, count, interp, rows per block,
// shared memory bytes, swap, source channels, a[3], b[3] (out = v * a[c] + b[c]).
#define GAIO_PREPROCESS_KERNEL(name, AREA, CN, F16, CHW)                                                         \
    extern "C" __global__ void __launch_bounds__(256)                                                             \
        name(const __grid_constant__ gaio_ktable t, const __grid_constant__ gaio_kimg dst, int32_t first,         \
             int32_t count, int32_t interp, int32_t band, int32_t smem_bytes, int32_t swap, int32_t channels,     \
             float a0, float a1, float a2, float b0, float b1, float b2) {                                        \
        (void)channels;                                                                                           \
        const Norm n = {a0, a1, a2, b0, b1, b2, swap};                                                            \
        if (AREA) preprocess<AREA, CN, F16, CHW>(t, dst, first, count, interp, band, smem_bytes, n);              \
        else linear_warps<CN, F16, CHW>(t, dst, first, interp, n);                                                \
    }

GAIO_PREPROCESS_KERNEL(gaio_img_preprocess_linear_f32_chw_c3, false, 3, false, true)
GAIO_PREPROCESS_KERNEL(gaio_img_preprocess_linear_f32_chw_c4, false, 4, false, true)
GAIO_PREPROCESS_KERNEL(gaio_img_preprocess_linear_f32_hwc_c3, false, 3, false, false)
GAIO_PREPROCESS_KERNEL(gaio_img_preprocess_linear_f32_hwc_c4, false, 4, false, false)
GAIO_PREPROCESS_KERNEL(gaio_img_preprocess_linear_f16_chw_c3, false, 3, true, true)
GAIO_PREPROCESS_KERNEL(gaio_img_preprocess_linear_f16_chw_c4, false, 4, true, true)
GAIO_PREPROCESS_KERNEL(gaio_img_preprocess_linear_f16_hwc_c3, false, 3, true, false)
GAIO_PREPROCESS_KERNEL(gaio_img_preprocess_linear_f16_hwc_c4, false, 4, true, false)
GAIO_PREPROCESS_KERNEL(gaio_img_preprocess_area_f32_chw_c3, true, 3, false, true)
GAIO_PREPROCESS_KERNEL(gaio_img_preprocess_area_f32_chw_c4, true, 4, false, true)
GAIO_PREPROCESS_KERNEL(gaio_img_preprocess_area_f32_hwc_c3, true, 3, false, false)
GAIO_PREPROCESS_KERNEL(gaio_img_preprocess_area_f32_hwc_c4, true, 4, false, false)
GAIO_PREPROCESS_KERNEL(gaio_img_preprocess_area_f16_chw_c3, true, 3, true, true)
GAIO_PREPROCESS_KERNEL(gaio_img_preprocess_area_f16_chw_c4, true, 4, true, true)
GAIO_PREPROCESS_KERNEL(gaio_img_preprocess_area_f16_hwc_c3, true, 3, true, false)
GAIO_PREPROCESS_KERNEL(gaio_img_preprocess_area_f16_hwc_c4, true, 4, true, false)
