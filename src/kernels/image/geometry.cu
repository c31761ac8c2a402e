// The geometric image ops on the GPU: crop, copy_make_border, flip, rotate
// (pure data movement) and warp_affine. The host twins are in
// src/image/cpu/geometry.c and geometry_warp.c and give the same bits.
//
// The copies are bound by DRAM bandwidth, so every one moves each byte once each
// way with coalesced, vectorised accesses whatever the pixel size (1 to 256 bytes)
// and alignment:
//   row ops (crop, flip, border; rotate 180 = flip both): each warp takes a run of
//     up to ~2 KiB of one dst row, stages its src bytes in its own slice of shared
//     memory with aligned 16-byte loads (four in flight per lane), then writes the
//     run as aligned 16-byte stores assembled from shared memory: a funnel shift
//     for plain copies and constant borders, a funnel shift and a byte permute for
//     mirrored pixels of 1, 2, 3, 4, 8 or 16 bytes, a per-pixel gather otherwise
//     (other mirrored pixels, replicated/reflected/wrapped border pixels). So src
//     and dst may be misaligned against each other (a crop at an odd x, odd widths
//     of 3-byte pixels) at no cost, and warps never wait for one another.
//   rotate 90/270: a shared-memory tile transpose; tile rows are staged with
//     16-byte loads (four in flight per thread) into rows of an odd number of
//     granules (conflict-free column reads), then each warp writes whole dst rows,
//     one granule per lane (the widest of 16/8/4/2/1 bytes that the pixel size and
//     every address allow).
// Every kernel grid-strides, so any grid covers the images.
#include <stdint.h>

#include "image/border_math.h"
#include "image/kimg.h"

namespace {

constexpr int NT = 256; // threads per block of the copy kernels
constexpr int NWARP = NT / 32;
constexpr int WSEG = 1984;         // dst bytes of a warp's run: at most 125 16-byte chunks, 4 per lane
constexpr int WSTAGE = WSEG + 64;  // + the alignment head and the funnel's over-read
constexpr int MAX_PIXEL = 256;     // 64 channels of 4 bytes
constexpr int MAX_TILE = 128;      // rotate: tile side for 1-byte pixels
constexpr int ROT_STAGE = 18944;   // rotate: the largest tile, 128 rows of 37 words

enum { K_COPY = 0, K_REVERSE = 1, K_BORDER = 2 };

__device__ __forceinline__ int esize(int dtype) { return dtype == GAIO_K_U8 ? 1 : dtype == GAIO_K_F32 ? 4 : 2; }

// Address bits of everything a kernel touches, to find the widest granule that
// every row start and the pixel size allow.
__device__ __forceinline__ uint64_t addr_bits(const gaio_kimg &k) {
    uint64_t a = k.ptr;
    if (k.height > 1) a |= k.row_pitch;
    if (k.planes > 1) a |= k.plane_pitch;
    if (k.batch > 1) a |= k.image_stride;
    return a;
}

// The widest power of two up to `most` dividing pb and every address.
__device__ __forceinline__ int granule(const gaio_kimg &s, const gaio_kimg &d, int pb, int most) {
    uint64_t a = addr_bits(s) | addr_bits(d) | (uint64_t)pb | (uint64_t)most;
    return (int)(a & (~a + 1));
}

template <int G> struct gtype;
template <> struct gtype<1> { typedef uint8_t t; };
template <> struct gtype<2> { typedef uint16_t t; };
template <> struct gtype<4> { typedef uint32_t t; };
template <> struct gtype<8> { typedef uint2 t; };
template <> struct gtype<16> { typedef uint4 t; };

template <int G> __device__ __forceinline__ typename gtype<G>::t ldv(const uint8_t *p) {
    return *(const typename gtype<G>::t *)p;
}
template <int G> __device__ __forceinline__ void stv(uint8_t *p, typename gtype<G>::t v) {
    *(typename gtype<G>::t *)p = v;
}
template <int G> __device__ __forceinline__ uint32_t ld_g(const uint8_t *p) { return (uint32_t)ldv<G>(p); }
template <int G> __device__ __forceinline__ void st_g(uint8_t *p, uint32_t v) {
    stv<G>(p, (typename gtype<G>::t)v);
}

// n / d for n < 2^16 and d < 2^16 with m = 2^32 / d rounded up (d == 1: m unused).
__device__ __forceinline__ int fdiv(int n, int d, uint32_t m) { return d == 1 ? n : (int)__umulhi((uint32_t)n, m); }
__device__ __forceinline__ uint32_t fdiv_magic(int d) { return d == 1 ? 0u : 0xffffffffu / (uint32_t)d + 1u; }


// ---- staging: global bytes -> shared memory ----
// The n bytes at g go to a shared row so that g[i] lands at row[(g & 15) + i]:
// 16-byte chunk c of the row holds global bytes [(g & ~15) + 16c, + 16).

// 16-byte chunks spanned by n bytes at g.
__device__ __forceinline__ int nchunks(const uint8_t *g, int n) {
    return n > 0 ? (int)((((uintptr_t)g & 15) + (unsigned)n + 15) >> 4) : 0;
}

// Chunk c's global address; true when it lies wholly inside [g, g + n).
__device__ __forceinline__ bool whole_chunk(const uint8_t *g, int n, int c, uintptr_t *a) {
    uintptr_t ga = (uintptr_t)g;
    *a = (ga & ~(uintptr_t)15) + 16 * (uintptr_t)c;
    return *a >= ga && *a + 16 <= ga + (uintptr_t)n;
}

// A whole chunk into 4-byte aligned shared memory. The first word stored is
// rotated by lane / 8, so the 32 lanes of a warp storing 512 consecutive bytes
// hit 32 different banks each time.
__device__ __forceinline__ void stage_whole(uint8_t *s, uint4 v, int lane) {
    int r = lane >> 3;
#pragma unroll
    for (int k = 0; k < 4; k++) {
        int q = (k + r) & 3;
        ((uint32_t *)s)[q] = q == 0 ? v.x : q == 1 ? v.y : q == 2 ? v.z : v.w;
    }
}

// The part of chunk (at global a) inside [g, g + n), granule by granule: never
// reads outside the range.
template <int G> __device__ __forceinline__ void stage_part(uint8_t *s, uintptr_t a, const uint8_t *g, int n) {
    uintptr_t ga = (uintptr_t)g, end = ga + (uintptr_t)n;
    uintptr_t lo = a > ga ? a : ga, hi = a + 16 < end ? a + 16 : end;
    for (uintptr_t p = lo; p < hi; p += G) st_g<G>(s + (p - a), ld_g<G>((const uint8_t *)p));
}

// A warp stages the n <= WSEG bytes at g into `row`: four loads in flight per lane.
template <int G> __device__ __forceinline__ void stage_run(uint8_t *row, const uint8_t *g, int n, int lane) {
    const int nch = nchunks(g, n);
    uint4 v[4];
    bool whole[4];
    uintptr_t a[4];
#pragma unroll
    for (int u = 0; u < 4; u++) {
        int c = lane + 32 * u;
        whole[u] = c < nch && whole_chunk(g, n, c, &a[u]);
        if (whole[u]) v[u] = __ldg((const uint4 *)a[u]);
    }
#pragma unroll
    for (int u = 0; u < 4; u++) {
        int c = lane + 32 * u;
        if (whole[u]) stage_whole(row + 16 * c, v[u], lane);
        else if (c < nch) stage_part<G>(row + 16 * c, a[u], g, n);
    }
}

// ---- assembling dst bytes from shared memory ----

// 16 bytes starting at any byte of shared memory, from word loads.
__device__ __forceinline__ uint4 funnel16(const uint8_t *p) {
    const uint32_t *w = (const uint32_t *)((uintptr_t)p & ~(uintptr_t)3);
    int sh = (int)((uintptr_t)p & 3) * 8;
    uint32_t w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3];
    if (sh == 0) return make_uint4(w0, w1, w2, w3);
    uint32_t w4 = w[4];
    return make_uint4(__funnelshift_r(w0, w1, sh), __funnelshift_r(w1, w2, sh), __funnelshift_r(w2, w3, sh),
                      __funnelshift_r(w3, w4, sh));
}

// 16 dst bytes from byte rel0 of a dst run whose pixel i is at pix(i) (shared or
// global memory): granule loads, one division per chunk.
template <int G, class F> __device__ __forceinline__ uint4 gather16(int rel0, int pb, const F &pix) {
    int i = rel0 / pb, sub = rel0 - i * pb;
    const uint8_t *p = pix(i);
    uint32_t w[4] = {0, 0, 0, 0};
#pragma unroll
    for (int k = 0; k < 16; k += G) {
        w[k >> 2] |= ld_g<G>(p + sub) << ((k & 3) * 8);
        sub += G;
        if (sub == pb) {
            sub = 0;
            p = pix(++i);
        }
    }
    return make_uint4(w[0], w[1], w[2], w[3]);
}

// The same for dst bytes [lo, hi) of a run, stored granule by granule.
template <int G, class F> __device__ __forceinline__ void gather_part(uint8_t *d, int lo, int hi, int pb, const F &pix) {
    int i = lo / pb, sub = lo - i * pb;
    const uint8_t *p = pix(i);
    for (int r = lo; r < hi; r += G) {
        st_g<G>(d + r, ld_g<G>(p + sub));
        sub += G;
        if (sub == pb) {
            sub = 0;
            p = pix(++i);
        }
    }
}

// `NW` words starting at any byte of shared memory (word loads and funnel shifts).
template <int NW> __device__ __forceinline__ void funnel_words(const uint8_t *p, uint32_t *out) {
    const uint32_t *w = (const uint32_t *)((uintptr_t)p & ~(uintptr_t)3);
    int sh = (int)((uintptr_t)p & 3) * 8;
#pragma unroll
    for (int k = 0; k < NW; k++) out[k] = __funnelshift_r(w[k], w[k + 1], sh);
}

// Mirrored pixels for PB dividing 16 and a chunk starting at a pixel boundary:
// the 16 src bytes are contiguous, so one funnel load and a reversal of the
// PB-byte elements inside the 16 bytes.
template <int PB> __device__ __forceinline__ uint4 reverse16(const uint8_t *st, int n, int rel0) {
    uint4 v = funnel16(st + n * PB - rel0 - 16);
    if (PB == 1)
        return make_uint4(__byte_perm(v.w, 0, 0x0123), __byte_perm(v.z, 0, 0x0123), __byte_perm(v.y, 0, 0x0123),
                          __byte_perm(v.x, 0, 0x0123));
    if (PB == 2)
        return make_uint4(__byte_perm(v.w, 0, 0x1032), __byte_perm(v.z, 0, 0x1032), __byte_perm(v.y, 0, 0x1032),
                          __byte_perm(v.x, 0, 0x1032));
    if (PB == 4) return make_uint4(v.w, v.z, v.y, v.x);
    if (PB == 8) return make_uint4(v.z, v.w, v.x, v.y);
    return v;
}

// Mirrored 3-byte pixels (u8 RGB) at any phase: the chunk's six src pixels
// (18 bytes) in five words, each dst byte picked at a compile-time position.
template <int PHI> __device__ __forceinline__ uint4 reverse16_rgb_phase(const uint32_t *w) {
    uint32_t o[4] = {0, 0, 0, 0};
#pragma unroll
    for (int k = 0; k < 16; k++) {
        const int i = (PHI + k) / 3, sub = (PHI + k) % 3, last = (PHI + 15) / 3;
        const int off = (last - i) * 3 + sub; // byte of the window
        o[k >> 2] |= ((w[off >> 2] >> ((off & 3) * 8)) & 0xffu) << ((k & 3) * 8);
    }
    return make_uint4(o[0], o[1], o[2], o[3]);
}

__device__ __forceinline__ uint4 reverse16_rgb(const uint8_t *st, int n, int rel0) {
    const int i0 = rel0 / 3, phi = rel0 - i0 * 3, last = (rel0 + 15) / 3;
    uint32_t w[5];
    funnel_words<5>(st + (n - 1 - last) * 3, w);
    return phi == 0 ? reverse16_rgb_phase<0>(w) : phi == 1 ? reverse16_rgb_phase<1>(w) : reverse16_rgb_phase<2>(w);
}

// ---- row ops ----

// A warp's run: n pixels of one dst row at d, made from the ns staged bytes at s.
struct RowJob {
    const uint8_t *s;    // staged src bytes (global); unused when ns == 0
    uint8_t *d;          // first dst byte of the run
    const uint8_t *srow; // K_BORDER: the src row border pixels come from; NULL: a constant row
    int ns, kind;
    int ix0, ix1; // K_BORDER: run pixels [ix0, ix1) are the staged interior
};

struct WarpRows {
    __align__(16) uint8_t stage[WSTAGE];
};

// copy_make_border's warps also keep the constant pixel repeated past 16 bytes
// (byte t = pixel byte t % pb): a constant chunk at phase f within a pixel is the
// 16 bytes at crow + f.
struct WarpBorder {
    __align__(16) uint8_t stage[WSTAGE];
    __align__(16) uint8_t crow[MAX_PIXEL + 32];
};

struct RowShared {
    WarpRows w[NWARP];
};

struct BorderShared {
    WarpBorder w[NWARP];
};

struct TileShared {
    int rowoff[MAX_TILE]; // where staged row j's data starts
    __align__(16) uint8_t stage[ROT_STAGE];
};

union GeoShared {
    RowShared r;
    TileShared t;
};

struct CropOp {
    gaio_kimg s, d;
    static constexpr bool border = false;
    __device__ void job(int64_t z, int y, int x0, int n, int pb, RowJob &j) const {
        j.s = (const uint8_t *)gaio_kimg_row(&s, z, y) + (int64_t)x0 * pb;
        j.d = (uint8_t *)gaio_kimg_row(&d, z, y) + (int64_t)x0 * pb;
        j.srow = nullptr;
        j.ns = n * pb;
        j.kind = K_COPY;
        j.ix0 = j.ix1 = 0;
    }
};

struct FlipOp {
    gaio_kimg s, d;
    int mode;
    static constexpr bool border = false;
    __device__ void job(int64_t z, int y, int x0, int n, int pb, RowJob &j) const {
        int sy = (mode & FLIP_VERTICAL) ? d.height - 1 - y : y;
        int sx = (mode & FLIP_HORIZONTAL) ? d.width - x0 - n : x0;
        j.s = (const uint8_t *)gaio_kimg_row(&s, z, sy) + (int64_t)sx * pb;
        j.d = (uint8_t *)gaio_kimg_row(&d, z, y) + (int64_t)x0 * pb;
        j.srow = nullptr;
        j.ns = n * pb;
        j.kind = (mode & FLIP_HORIZONTAL) ? K_REVERSE : K_COPY;
        j.ix0 = j.ix1 = 0;
    }
};

struct BorderOp {
    gaio_kimg s, d;
    int top, left, type;
    uint32_t cbits[4]; // element bits of the constant of channels (HWC) or planes (CHW) 0..3
    static constexpr bool border = true;
    __device__ void job(int64_t z, int y, int x0, int n, int pb, RowJob &j) const {
        int sy = gaio_border_index(y - top, s.height, type);
        j.d = (uint8_t *)gaio_kimg_row(&d, z, y) + (int64_t)x0 * pb;
        j.s = nullptr;
        j.ns = 0;
        j.ix0 = j.ix1 = 0;
        j.kind = K_BORDER;
        j.srow = nullptr;
        if (sy < 0) return;
        j.srow = (const uint8_t *)gaio_kimg_row(&s, z, sy);
        int a = max(x0, left), b = min(x0 + n, left + s.width);
        if (a < b) {
            j.s = j.srow + (int64_t)(a - left) * pb;
            j.ns = (b - a) * pb;
            j.ix0 = a - x0;
            j.ix1 = b - x0;
            if (j.ix0 == 0 && j.ix1 == n) j.kind = K_COPY;
        }
    }
    __device__ int bx(int x) const { return gaio_border_index(x - left, s.width, type); }
    // Byte t of the constant pixel of plane p (CHW: the plane's channel).
    __device__ uint8_t cbyte(int p, int t) const {
        int e = esize(d.dtype), c = d.planes > 1 ? p : t / e;
        uint32_t v = c == 0 ? cbits[0] : c == 1 ? cbits[1] : c == 2 ? cbits[2] : c == 3 ? cbits[3] : 0u;
        return (uint8_t)(v >> (8 * (t % e)));
    }
};

template <int G, class Op, class Sh>
__device__ __forceinline__ void store_chunk(const Op &op, const RowJob &j, Sh &sh, int n, int pb, int c, int x0) {
    const int nd = n * pb;
    uintptr_t d = (uintptr_t)j.d, a = (d & ~(uintptr_t)15) + 16 * (uintptr_t)c;
    int rel0 = (int)((intptr_t)a - (intptr_t)d);
    const uint8_t *st = sh.stage + ((uintptr_t)j.s & 15);
    bool full = rel0 >= 0 && rel0 + 16 <= nd;
    int lo = rel0 > 0 ? rel0 : 0, hi = rel0 + 16 < nd ? rel0 + 16 : nd;
    if (j.kind == K_COPY) {
        if (full) *(uint4 *)a = funnel16(st + rel0);
        else
            for (int r = lo; r < hi; r += G) st_g<G>(j.d + r, ld_g<G>(st + r));
    } else if (j.kind == K_REVERSE) {
        if (full) {
            if (pb == 3) {
                *(uint4 *)a = reverse16_rgb(st, n, rel0);
                return;
            }
            if ((pb & (pb - 1)) == 0 && pb <= 16 && rel0 % pb == 0) {
                *(uint4 *)a = pb == 1   ? reverse16<1>(st, n, rel0)
                              : pb == 2 ? reverse16<2>(st, n, rel0)
                              : pb == 4 ? reverse16<4>(st, n, rel0)
                              : pb == 8 ? reverse16<8>(st, n, rel0)
                                        : reverse16<16>(st, n, rel0);
                return;
            }
        }
        auto pix = [&](int i) { return st + (n - 1 - i) * pb; };
        if (full) *(uint4 *)a = gather16<G>(rel0, pb, pix);
        else gather_part<G>(j.d, lo, hi, pb, pix);
    } else if constexpr (Op::border) {
        const int in0 = j.ix0 * pb, in1 = j.ix1 * pb; // the staged interior, in run bytes
        // Constant rows, and constant borders, from the run's worth of the constant.
        const bool constant = !j.srow || (op.type == BORDER_CONSTANT && (hi <= in0 || lo >= in1));
        if (constant) {
            if (full) *(uint4 *)a = funnel16(sh.crow + rel0 % pb);
            else
                for (int r = lo; r < hi; r += G) st_g<G>(j.d + r, ld_g<G>(sh.crow + r % pb));
            return;
        }
        if (full && rel0 >= in0 && rel0 + 16 <= in1) {
            *(uint4 *)a = funnel16(st + (rel0 - in0));
            return;
        }
        const uint8_t *cpix = sh.crow;
        auto pix = [&](int i) -> const uint8_t * {
            if (i >= j.ix0 && i < j.ix1) return st + (i - j.ix0) * pb;
            int sx = op.bx(x0 + i);
            return sx < 0 ? cpix : j.srow + (int64_t)sx * pb;
        };
        if (full) *(uint4 *)a = gather16<G>(rel0, pb, pix);
        else gather_part<G>(j.d, lo, hi, pb, pix);
    }
}

// The constant of plane p, repeated, into sh.crow (border ops only).
template <class Op, class Sh> __device__ __forceinline__ void make_constant(const Op &op, Sh &sh, int p, int pb, int lane) {
    if constexpr (Op::border)
        for (int t = lane; t < pb + 20; t += 32) sh.crow[t] = op.cbyte(p, t % pb);
}

// Runs are (plane, row, segment) items, one per warp at a time: rows of up to WSEG
// bytes whole, longer ones in equal segments of at most WSEG bytes.
template <int G, class Op, class Sh> __device__ void row_items(const Op &op, int pb, Sh &sh) {
    const gaio_kimg &d = op.d;
    const int W = d.width, H = d.height, spmax = WSEG / pb;
    const int nseg = (W + spmax - 1) / spmax, SP = (W + nseg - 1) / nseg;
    const int64_t items = (int64_t)d.batch * d.planes * H * nseg;
    const int lane = threadIdx.x & 31;
    int plane = -1; // the plane whose constant the warp holds
    for (int64_t it = (int64_t)blockIdx.x * NWARP + (threadIdx.x >> 5); it < items; it += (int64_t)gridDim.x * NWARP) {
        int64_t z;
        int y, sg;
        if (items <= 0xffffffffll) { // 32-bit divisions: the usual case, much cheaper
            uint32_t t = (uint32_t)it / (uint32_t)nseg;
            sg = (int)((uint32_t)it - t * (uint32_t)nseg);
            z = t / (uint32_t)H;
            y = (int)(t - (uint32_t)z * (uint32_t)H);
        } else {
            int64_t t = it / nseg;
            sg = (int)(it - t * nseg);
            z = t / H;
            y = (int)(t - z * H);
        }
        const int x0 = sg * SP, n = min(SP, W - x0);
        RowJob j;
        op.job(z, y, x0, n, pb, j);
        if (Op::border) {
            int p = d.planes > 1 ? (int)(z % d.planes) : 0;
            if (p != plane) make_constant(op, sh, p, pb, lane);
            plane = p;
        }
        stage_run<G>(sh.stage, j.s, j.ns, lane);
        __syncwarp();
        const int dch = nchunks(j.d, n * pb);
#pragma unroll
        for (int u = 0; u < 4; u++) {
            int c = lane + 32 * u;
            if (c < dch) store_chunk<G>(op, j, sh, n, pb, c, x0);
        }
        __syncwarp();
    }
}

template <class Op, class Sh> __device__ __forceinline__ void run_rows(const Op &op, Sh &sh) {
    int pb = op.d.channels * esize(op.d.dtype);
    auto &w = sh.w[threadIdx.x >> 5];
    switch (granule(op.s, op.d, pb, 4)) {
    case 4: row_items<4>(op, pb, w); break;
    case 2: row_items<2>(op, pb, w); break;
    default: row_items<1>(op, pb, w); break;
    }
}

// ---- rotate 90 / 270: tile transpose ----

// Tiles of about 16 KiB: T x T pixels (must match rot_tile in src/image/geometry.c).
__device__ __forceinline__ int rot_tile(int pb) {
    return pb == 1 ? 128 : pb <= 4 ? 64 : pb <= 16 ? 32 : pb <= 64 ? 16 : 8;
}

template <int G> __device__ void rotate_tiles(const gaio_kimg &s, const gaio_kimg &d, int deg, int pb, TileShared &sh) {
    const int T = rot_tile(pb);
    // Staged rows: an odd number of granules (of at least a word) apart, so that
    // lanes reading one granule from each of consecutive rows hit distinct banks.
    const int Q = G < 4 ? 4 : G;
    const int CAP = (((T * pb + 20 + Q - 1) / Q) | 1) * Q;
    const int W = d.width, H = d.height, sw = s.width, shh = s.height;
    const int64_t Z = (int64_t)d.batch * d.planes;
    const int tx_n = (W + T - 1) / T, ty_n = (H + T - 1) / T;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const uint32_t mpb = fdiv_magic(pb);
    for (int64_t z = blockIdx.z; z < Z; z += gridDim.z) {
        const uint8_t *splane = (const uint8_t *)gaio_kimg_plane(&s, z);
        uint8_t *dplane = (uint8_t *)gaio_kimg_plane(&d, z);
        for (int ty = blockIdx.y; ty < ty_n; ty += gridDim.y) {
            for (int tx = blockIdx.x; tx < tx_n; tx += gridDim.x) {
                const int C0 = tx * T, R0 = ty * T, tc = min(T, W - C0), tr = min(T, H - R0);
                // Staged row j: the src pixels of dst column C0 + j, dst rows [R0, R0 + tr).
                // 90: dst(r, c) = src(row sh-1-c, col r); 270: dst(r, c) = src(row c, col sw-1-r).
                const int n = tr * pb, slots = (n + 30) >> 4, items = tc * slots;
                const uint32_t mslots = fdiv_magic(slots);
                const int64_t scol = deg == 90 ? R0 : sw - R0 - tr;
                for (int k0 = tid; k0 < items; k0 += 4 * NT) {
                    uint4 v[4];
                    bool whole[4];
                    uintptr_t a[4];
                    const uint8_t *g[4];
                    int jj[4], cc[4];
#pragma unroll
                    for (int u = 0; u < 4; u++) {
                        int k = k0 + u * NT;
                        jj[u] = fdiv(k, slots, mslots);
                        cc[u] = k - jj[u] * slots;
                        int64_t srow = deg == 90 ? shh - 1 - C0 - jj[u] : C0 + jj[u];
                        g[u] = splane + srow * (int64_t)s.row_pitch + scol * pb;
                        whole[u] = k < items && cc[u] < nchunks(g[u], n) && whole_chunk(g[u], n, cc[u], &a[u]);
                        if (whole[u]) v[u] = __ldg((const uint4 *)a[u]);
                    }
#pragma unroll
                    for (int u = 0; u < 4; u++) {
                        if (k0 + u * NT >= items) break;
                        uint8_t *row = sh.stage + jj[u] * CAP;
                        if (cc[u] == 0) sh.rowoff[jj[u]] = jj[u] * CAP + (int)((uintptr_t)g[u] & 15);
                        if (whole[u]) stage_whole(row + 16 * cc[u], v[u], lane);
                        else if (cc[u] < nchunks(g[u], n)) stage_part<(G < 4 ? G : 4)>(row + 16 * cc[u], a[u], g[u], n);
                    }
                }
                __syncthreads();
                // Each warp writes whole dst rows, one granule per lane: coalesced.
                const int nb = tc * pb;
                for (int i = warp; i < tr; i += NWARP) {
                    uint8_t *drow = dplane + (int64_t)(R0 + i) * (int64_t)d.row_pitch + (int64_t)C0 * pb;
                    const uint8_t *sq = sh.stage + (deg == 90 ? i : tr - 1 - i) * pb;
                    for (int b = lane * G; b < nb; b += 32 * G) {
                        int j = fdiv(b, pb, mpb);
                        stv<G>(drow + b, ldv<G>(sq + sh.rowoff[j] + (b - j * pb)));
                    }
                }
                __syncthreads();
            }
        }
    }
}

// ---- warp_affine: OpenCV's fixed-point coordinates ----

__device__ __forceinline__ int64_t round_coord(double v) {
    // cvRound (nearest even) of an in-range value; clamped far outside any image
    // so that sums stay exact in 64 bits (OpenCV's int arithmetic would wrap there).
    v = fmin(fmax(v, -1099511627776.0), 1099511627776.0);
    return __double2ll_rn(v);
}

template <typename T> __device__ __forceinline__ T from_cval(float v) { return (T)v; }

// The tap-position terms OpenCV computes in double without fused multiply-adds
// (imgwarp.cpp): X0(y) = round((M1*y + M2) * 1024) + delta per dst row and
// adelta(x) = round(M0*x*1024) per dst column (round = cvRound, nearest even); a
// pixel's position is X = (X0 + adelta) >> 10 (NEAREST, delta 512) or >> 5
// (LINEAR, delta 16: 1/32-pixel positions whose low 5 bits pick the weights).
__device__ __forceinline__ int64_t row_term(double a, double b, int y) {
    return round_coord(__dmul_rn(__dadd_rn(__dmul_rn(a, (double)y), b), 1024.0));
}
__device__ __forceinline__ int64_t col_term(double a, int x) {
    return round_coord(__dmul_rn(__dmul_rn(a, (double)x), 1024.0));
}

// dst pixel (x, y) of plane z, its src position XA = X0 + adelta, YA likewise.
template <typename T, int CN, bool LINEAR>
__device__ __forceinline__ void warp_pixel(const gaio_kimg &s, const gaio_kimg &d, int64_t z, int x, int y, int64_t XA,
                                           int64_t YA, const float *cv) {
    T *out = (T *)gaio_kimg_row(&d, z, y) + (int64_t)x * CN;
    const int sw = s.width, sh = s.height;
    if (!LINEAR) {
        int64_t sx = XA >> 10, sy = YA >> 10;
        if (sx >= 0 && sx < sw && sy >= 0 && sy < sh) {
            const T *p = (const T *)gaio_kimg_row(&s, z, sy) + sx * CN;
#pragma unroll
            for (int c = 0; c < CN; c++) out[c] = __ldg(p + c);
        } else {
#pragma unroll
            for (int c = 0; c < CN; c++) out[c] = from_cval<T>(cv[c]);
        }
        return;
    }
    const int64_t X = XA >> 5, Y = YA >> 5;
    const int64_t sx = X >> 5, sy = Y >> 5;
    const int fx = (int)(X & 31), fy = (int)(Y & 31);
    if (sx >= sw || sx + 1 < 0 || sy >= sh || sy + 1 < 0) {
#pragma unroll
        for (int c = 0; c < CN; c++) out[c] = from_cval<T>(cv[c]);
        return;
    }
    const bool x0in = sx >= 0, x1in = sx + 1 < sw, y0in = sy >= 0, y1in = sy + 1 < sh;
    const int64_t cx0 = x0in ? sx : 0, cx1 = x1in ? sx + 1 : 0, cy0 = y0in ? sy : 0, cy1 = y1in ? sy + 1 : 0;
    const T *r0 = (const T *)gaio_kimg_row(&s, z, cy0), *r1 = (const T *)gaio_kimg_row(&s, z, cy1);
    const bool in00 = x0in && y0in, in01 = x1in && y0in, in10 = x0in && y1in, in11 = x1in && y1in;
#pragma unroll
    for (int c = 0; c < CN; c++) {
        T cc = from_cval<T>(cv[c]);
        T v00 = in00 ? __ldg(r0 + cx0 * CN + c) : cc, v01 = in01 ? __ldg(r0 + cx1 * CN + c) : cc;
        T v10 = in10 ? __ldg(r1 + cx0 * CN + c) : cc, v11 = in11 ? __ldg(r1 + cx1 * CN + c) : cc;
        if (sizeof(T) == 1) {
            // INTER_REMAP_COEF_BITS weights ((32-fx)(32-fy) ... ) * 32 summing to 2^15,
            // rounded >> 15: the same as these 2^10 weights rounded >> 10.
            int w00 = (32 - fx) * (32 - fy), w01 = fx * (32 - fy), w10 = (32 - fx) * fy, w11 = fx * fy;
            int acc = (int)v00 * w00 + (int)v01 * w01 + (int)v10 * w10 + (int)v11 * w11;
            out[c] = (T)((acc + 512) >> 10);
        } else {
            // OpenCV's float table: products of (1 - a) / a with a = f / 32, exact in
            // float; the sum in source order, unfused, as the host computes it.
            float ax = fx * (1.0f / 32), ay = fy * (1.0f / 32);
            float w00 = (1.0f - ay) * (1.0f - ax), w01 = (1.0f - ay) * ax, w10 = ay * (1.0f - ax), w11 = ay * ax;
            float t = __fmul_rn((float)v00, w00);
            t = __fadd_rn(t, __fmul_rn((float)v01, w01));
            t = __fadd_rn(t, __fmul_rn((float)v10, w10));
            t = __fadd_rn(t, __fmul_rn((float)v11, w11));
            if (sizeof(T) == 2) out[c] = (T)gaio_k_sat_u16(t);
            else out[c] = (T)t;
        }
    }
}

// Tiles of 32 x 32 dst pixels per block of 256 threads: a thread's column term
// serves its 4 rows, the tile's 32 row terms come from shared memory, so the
// double-precision work is a few operations per pixel. A warp takes patches of
// 8 x 4 pixels rather than rows of 32: under rotation their taps fall on fewer
// cache lines (the gathers, not DRAM, bound this kernel).
constexpr int WT = 32;

template <typename T, int CN, bool LINEAR>
__device__ void warp_planes(const gaio_kimg &s, const gaio_kimg &d, const double *M, const float *cval, int64_t *rx,
                            int64_t *ry) {
    const int64_t Z = (int64_t)d.batch * d.planes;
    const int W = d.width, H = d.height, tx_n = (W + WT - 1) / WT, ty_n = (H + WT - 1) / WT;
    const int tid = threadIdx.y * 32 + threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int px = (warp & 3) * 8 + (lane & 7), py = (warp >> 2) * 4 + (lane >> 3); // in the tile: 0..31, 0..7
    const int64_t delta = LINEAR ? 16 : 512;
    for (int64_t z = blockIdx.z; z < Z; z += gridDim.z) {
        float cv[CN];
        if (d.planes > 1) { // CHW: one value per plane (selects keep cval in registers)
            int p = (int)(z % d.planes);
            cv[0] = p == 0 ? cval[0] : p == 1 ? cval[1] : p == 2 ? cval[2] : p == 3 ? cval[3] : 0.0f;
        } else {
#pragma unroll
            for (int c = 0; c < CN; c++) cv[c] = cval[c];
        }
        for (int ty = blockIdx.y; ty < ty_n; ty += gridDim.y) {
            __syncthreads(); // the previous tile's row terms are used up
            if (tid < WT) {
                rx[tid] = row_term(M[1], M[2], ty * WT + tid) + delta;
                ry[tid] = row_term(M[4], M[5], ty * WT + tid) + delta;
            }
            __syncthreads();
            for (int tx = blockIdx.x; tx < tx_n; tx += gridDim.x) {
                const int x = tx * WT + px;
                if (x >= W) continue;
                const int64_t ad = col_term(M[0], x), bd = col_term(M[3], x);
#pragma unroll
                for (int r = 0; r < WT / 8; r++) {
                    const int k = py + 8 * r, y = ty * WT + k;
                    if (y < H) warp_pixel<T, CN, LINEAR>(s, d, z, x, y, rx[k] + ad, ry[k] + bd, cv);
                }
            }
        }
    }
}

template <typename T, bool LINEAR>
__device__ __forceinline__ void warp_cn(const gaio_kimg &s, const gaio_kimg &d, const double *M, const float *cv,
                                        int64_t *rx, int64_t *ry) {
    switch (d.channels) {
    case 1: warp_planes<T, 1, LINEAR>(s, d, M, cv, rx, ry); break;
    case 2: warp_planes<T, 2, LINEAR>(s, d, M, cv, rx, ry); break;
    case 3: warp_planes<T, 3, LINEAR>(s, d, M, cv, rx, ry); break;
    default: warp_planes<T, 4, LINEAR>(s, d, M, cv, rx, ry); break;
    }
}

template <typename T>
__device__ __forceinline__ void warp_interp(const gaio_kimg &s, const gaio_kimg &d, const double *M, int linear,
                                            const float *cv, int64_t *rx, int64_t *ry) {
    if (linear) warp_cn<T, true>(s, d, M, cv, rx, ry);
    else warp_cn<T, false>(s, d, M, cv, rx, ry);
}

} // namespace

extern "C" __global__ void __launch_bounds__(NT, 3) gaio_img_crop(gaio_kimg src, gaio_kimg dst) {
    __shared__ RowShared sh;
    run_rows(CropOp{src, dst}, sh);
}

extern "C" __global__ void __launch_bounds__(NT, 3) gaio_img_flip(gaio_kimg src, gaio_kimg dst, int32_t mode) {
    __shared__ RowShared sh;
    run_rows(FlipOp{src, dst, mode}, sh);
}

extern "C" __global__ void __launch_bounds__(NT, 3)
    gaio_img_copy_make_border(gaio_kimg src, gaio_kimg dst, int32_t top, int32_t left, int32_t border, uint32_t c0,
                              uint32_t c1, uint32_t c2, uint32_t c3) {
    __shared__ BorderShared sh;
    run_rows(BorderOp{src, dst, top, left, border, {c0, c1, c2, c3}}, sh);
}

extern "C" __global__ void __launch_bounds__(NT, 3) gaio_img_rotate(gaio_kimg src, gaio_kimg dst, int32_t degrees) {
    __shared__ GeoShared sh;
    if (degrees == 180) {
        run_rows(FlipOp{src, dst, FLIP_HORIZONTAL | FLIP_VERTICAL}, sh.r);
        return;
    }
    int pb = dst.channels * esize(dst.dtype);
    switch (granule(src, dst, pb, 16)) {
    case 16: rotate_tiles<16>(src, dst, degrees, pb, sh.t); break;
    case 8: rotate_tiles<8>(src, dst, degrees, pb, sh.t); break;
    case 4: rotate_tiles<4>(src, dst, degrees, pb, sh.t); break;
    case 2: rotate_tiles<2>(src, dst, degrees, pb, sh.t); break;
    default: rotate_tiles<1>(src, dst, degrees, pb, sh.t); break;
    }
}

extern "C" __global__ void __launch_bounds__(NT) gaio_img_warp_affine(gaio_kimg src, gaio_kimg dst, double m0, double m1, double m2,
                                                double m3, double m4, double m5, int32_t interp, float v0, float v1,
                                                float v2, float v3) {
    const double M[6] = {m0, m1, m2, m3, m4, m5};
    const float cv[4] = {v0, v1, v2, v3};
    __shared__ int64_t rx[WT], ry[WT]; // the current tile's row terms
    const int linear = interp != 0;     // GAIO_INTERP_NEAREST is 0; the op lets only NEAREST and LINEAR through
    switch (dst.dtype) {
    case GAIO_K_U8: warp_interp<uint8_t>(src, dst, M, linear, cv, rx, ry); break;
    case GAIO_K_U16: warp_interp<uint16_t>(src, dst, M, linear, cv, rx, ry); break;
    default: warp_interp<float>(src, dst, M, linear, cv, rx, ry); break;
    }
}
