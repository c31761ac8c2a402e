/* DLPack export and import: what a consumer reads through an exported tensor
 * (device, dtype, shape, strides, every value), that the buffer lives exactly
 * until the consumer's deleter, that an imported tensor works in gaio ops and its
 * producer's deleter runs exactly once after gaio's last use, round trips, and
 * that every bad input fails with a message and takes nothing over. */
#include <stdatomic.h>
#include <stdbool.h>

#include "common.h"
#include "support.h"

typedef struct env {
    gaio_context *ctx;
    gaio_stream *s;
    int cuda, ordinal; /* the device is a GPU, and its CUDA ordinal */
    uint64_t rng;
} env;

/* ---- moving bytes between the host and any buffer ---- */

static void read_bytes(env *e, gaio_buffer *buf, size_t off, size_t n, void *out) {
    gaio_buffer *stage;
    OK(gaio_buffer_alloc(e->ctx, GAIO_MEM_HOST, n, &stage));
    OK(gaio_memcpy_async(e->s, stage, 0, buf, off, n));
    OK(gaio_stream_synchronize(e->s));
    memcpy(out, host_ptr(stage), n);
    OK(gaio_buffer_release(stage));
}

static void write_bytes(env *e, gaio_buffer *buf, const void *data, size_t n) {
    gaio_buffer *stage;
    OK(gaio_buffer_alloc(e->ctx, GAIO_MEM_HOST, n, &stage));
    memcpy(host_ptr(stage), data, n);
    OK(gaio_memcpy_async(e->s, buf, 0, stage, 0, n));
    OK(gaio_buffer_release(stage));
    OK(gaio_stream_synchronize(e->s));
}

static void fill_random(uint64_t *rng, unsigned char *p, size_t n) {
    for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(test_rand(rng) >> 56);
}

/* ---- deleters the tests count ---- */

static void count_deleter(void *ptr, void *user) {
    free(ptr);
    atomic_fetch_add((atomic_int *)user, 1);
}

/* A HOST buffer over malloc'd memory whose deleter counts into *calls. */
static gaio_buffer *counted_buffer(env *e, size_t size, atomic_int *calls) {
    void *mem = malloc(size);
    CHECK(mem);
    fill_random(&e->rng, mem, size);
    gaio_buffer *b;
    OK(gaio_buffer_wrap(e->ctx, GAIO_MEM_HOST, mem, size, count_deleter, calls, &b));
    return b;
}

/* A foreign producer: a tensor over malloc'd memory or over a gaio buffer (standing
 * in for another library's device memory); its deleter frees that and counts. */
typedef struct producer {
    DLManagedTensorVersioned v;
    DLManagedTensor l;
    int64_t shape[GAIO_DLPACK_MAX_NDIM + 1], strides[GAIO_DLPACK_MAX_NDIM + 1];
    void *mem;
    gaio_buffer *buf;
    atomic_int deleted;
} producer;

static void producer_free(producer *p) {
    free(p->mem);
    p->mem = NULL;
    OK(gaio_buffer_release(p->buf));
    p->buf = NULL;
    atomic_fetch_add(&p->deleted, 1);
}
static void versioned_deleter(DLManagedTensorVersioned *self) { producer_free(self->manager_ctx); }
static void legacy_deleter(DLManagedTensor *self) { producer_free(self->manager_ctx); }

/* A compact u8 [h, w, c] tensor with random bytes (also copied to `want`): host
 * memory (kDLCPU) or, with on_device, memory of the context's device. */
static void producer_make(env *e, producer *p, bool on_device, int64_t h, int64_t w, int64_t c, unsigned char *want) {
    memset(p, 0, sizeof *p);
    size_t n = (size_t)(h * w * c);
    fill_random(&e->rng, want, n);
    DLTensor t = {0};
    t.device.device_type = kDLCPU;
    if (on_device) {
        OK(gaio_buffer_alloc(e->ctx, GAIO_MEM_DEVICE, n + 64, &p->buf));
        OK(gaio_buffer_device_ptr(p->buf, &t.data));
        unsigned char *staged = calloc(1, n + 64);
        CHECK(staged);
        memcpy(staged + 64, want, n);
        write_bytes(e, p->buf, staged, n + 64);
        free(staged);
        t.byte_offset = 64; /* the tensor starts 64 bytes in */
        if (e->cuda) t.device = (DLDevice){kDLCUDA, e->ordinal};
    } else {
        p->mem = malloc(n);
        CHECK(p->mem);
        memcpy(p->mem, want, n);
        t.data = p->mem;
    }
    t.ndim = 3;
    t.dtype = (DLDataType){kDLUInt, 8, 1};
    p->shape[0] = h, p->shape[1] = w, p->shape[2] = c;
    t.shape = p->shape;
    t.strides = NULL;
    p->v = (DLManagedTensorVersioned){{1, 1}, p, versioned_deleter, 0, t};
    p->l = (DLManagedTensor){t, p, legacy_deleter};
}

/* ---- export ---- */

static DLDeviceType expected_type(env *e, gaio_mem_kind k) {
    if (!e->cuda || k == GAIO_MEM_HOST) return kDLCPU;
    return k == GAIO_MEM_DEVICE ? kDLCUDA : k == GAIO_MEM_PINNED ? kDLCUDAHost : kDLCUDAManaged;
}

/* Reads every element of t through its shape and strides and checks it against
 * the same element read through view from `mirror` (the buffer's bytes). */
static void expect_tensor(const DLTensor *t, const gaio_dlpack_view *v, const unsigned char *mirror) {
    size_t es = gaio_dtype_size(v->dtype);
    CHECK(t->ndim == v->ndim && t->byte_offset == 0);
    CHECK(t->dtype.bits == es * 8 && t->dtype.lanes == 1);
    int64_t idx[GAIO_DLPACK_MAX_NDIM] = {0}, total = 1;
    for (int i = 0; i < v->ndim; i++) {
        CHECK(t->shape[i] == v->shape[i] && t->strides[i] == v->strides[i]);
        total *= v->shape[i];
    }
    for (int64_t k = 0; k < total; k++) {
        int64_t el = 0;
        for (int i = 0; i < v->ndim; i++) el += idx[i] * t->strides[i];
        const unsigned char *got = (const unsigned char *)t->data + el * (int64_t)es;
        CHECK(memcmp(got, mirror + v->offset + (size_t)el * es, es) == 0);
        for (int i = v->ndim - 1; i >= 0 && ++idx[i] == v->shape[i]; i--) idx[i] = 0;
    }
}

static void test_export_buffer(env *e) {
    static const gaio_dtype dtypes[] = {GAIO_DTYPE_U8, GAIO_DTYPE_U16, GAIO_DTYPE_S16, GAIO_DTYPE_F16, GAIO_DTYPE_F32};
    static const uint8_t codes[] = {kDLUInt, kDLUInt, kDLInt, kDLFloat, kDLFloat};
    for (int round = 0; round < 20; round++) {
        int di = (int)rand_range(&e->rng, 0, 4);
        size_t es = gaio_dtype_size(dtypes[di]);
        int32_t nd = (int32_t)rand_range(&e->rng, 1, GAIO_DLPACK_MAX_NDIM);
        int64_t shape[GAIO_DLPACK_MAX_NDIM];
        for (int i = 0; i < nd; i++) shape[i] = (int64_t)rand_range(&e->rng, 1, nd > 4 ? 3 : 9);
        size_t off = rand_range(&e->rng, 0, 7) * es;
        gaio_dlpack_view v = gaio_dlpack_view_make(NULL, off, dtypes[di], nd, shape);
        if (round % 2) { /* padded and strided, and transposed where there are two dimensions to swap */
            int64_t stride = (int64_t)rand_range(&e->rng, 1, 3), pad = (int64_t)rand_range(&e->rng, 0, 3);
            for (int i = nd - 1; i >= 0; i--) v.strides[i] = stride, stride = stride * v.shape[i] + pad;
            if (nd > 1) {
                int64_t t = v.strides[0];
                v.strides[0] = v.strides[1], v.strides[1] = t;
            }
        }
        size_t span = 1;
        for (int i = 0; i < nd; i++) span += (size_t)((v.shape[i] - 1) * v.strides[i]);
        size_t size = off + span * es;
        atomic_int calls = 0;
        v.buffer = counted_buffer(e, size, &calls);
        v.read_only = round % 3 == 0;
        const unsigned char *mirror = host_ptr(v.buffer);

        DLManagedTensorVersioned *m = NULL;
        DLManagedTensor *l = NULL;
        OK(gaio_dlpack_export(&v, &m));
        OK(gaio_dlpack_export_legacy(&v, &l));
        CHECK(m->version.major == 1 && m->version.minor == 1 && m->deleter && l->deleter);
        CHECK(m->flags == (v.read_only ? DLPACK_FLAG_BITMASK_READ_ONLY : 0u));
        CHECK(m->dl_tensor.device.device_type == kDLCPU && m->dl_tensor.device.device_id == 0);
        CHECK(m->dl_tensor.dtype.code == codes[di] && l->dl_tensor.dtype.code == codes[di]);
        CHECK(m->dl_tensor.data == mirror + off && l->dl_tensor.data == mirror + off);
        expect_tensor(&m->dl_tensor, &v, mirror);
        expect_tensor(&l->dl_tensor, &v, mirror);

        /* The tensors keep the buffer after gaio's reference goes, until both deleters. */
        OK(gaio_buffer_release(v.buffer));
        CHECK(atomic_load(&calls) == 0);
        m->deleter(m);
        CHECK(atomic_load(&calls) == 0);
        l->deleter(l);
        CHECK(atomic_load(&calls) == 1);
    }

    /* The device each kind of memory is on. */
    for (int k = 0; k < GAIO_MEM_KIND_COUNT; k++) {
        gaio_buffer *b;
        OK(gaio_buffer_alloc(e->ctx, (gaio_mem_kind)k, 256, &b));
        gaio_dlpack_view v = gaio_dlpack_view_make(b, 16, GAIO_DTYPE_F32, 2, (int64_t[]){6, 10});
        DLManagedTensorVersioned *m;
        OK(gaio_dlpack_export(&v, &m));
        OK(gaio_buffer_release(b));
        void *base;
        OK(gaio_buffer_device_ptr(b, &base));
        CHECK(m->dl_tensor.data == (char *)base + 16);
        CHECK(m->dl_tensor.device.device_type == expected_type(e, (gaio_mem_kind)k));
        CHECK(m->dl_tensor.device.device_id == (m->dl_tensor.device.device_type == kDLCUDA ? e->ordinal : 0));
        m->deleter(m);
    }
}

static void test_export_image(env *e) {
    for (int round = 0; round < 10; round++) {
        gaio_layout layout = round % 2 ? GAIO_LAYOUT_CHW : GAIO_LAYOUT_HWC;
        gaio_dtype dt = round % 3 ? GAIO_DTYPE_U8 : GAIO_DTYPE_F32;
        size_t es = gaio_dtype_size(dt);
        int32_t n = (int32_t)rand_range(&e->rng, 1, 3), w = (int32_t)rand_range(&e->rng, 1, 17),
                h = (int32_t)rand_range(&e->rng, 1, 9), c = (int32_t)rand_range(&e->rng, 1, 4);
        gaio_image im = gaio_image_make(NULL, es * rand_range(&e->rng, 0, 5), dt, layout, n, w, h, c);
        size_t row = (size_t)w * es * (layout == GAIO_LAYOUT_HWC ? (size_t)c : 1);
        im.row_pitch = row + es * rand_range(&e->rng, 0, 3);
        if (layout == GAIO_LAYOUT_CHW) im.plane_pitch = im.row_pitch * (size_t)h + es * rand_range(&e->rng, 0, 3);
        size_t one = layout == GAIO_LAYOUT_CHW ? im.plane_pitch * (size_t)c : im.row_pitch * (size_t)h;
        im.image_stride = one + es * rand_range(&e->rng, 0, 3);
        atomic_int calls = 0;
        im.buffer = counted_buffer(e, im.offset + im.image_stride * (size_t)n, &calls);

        gaio_dlpack_view v;
        OK(gaio_dlpack_view_from_image(&im, &v));
        CHECK(v.buffer == im.buffer && v.ndim == 4 && v.offset == im.offset && v.dtype == dt);
        int64_t want_shape[4] = {n, h, w, c}, want_strides[4] = {(int64_t)(im.image_stride / es),
                                                                  (int64_t)(im.row_pitch / es), c, 1};
        if (layout == GAIO_LAYOUT_CHW) {
            int64_t s2[4] = {n, c, h, w}, t2[4] = {want_strides[0], (int64_t)(im.plane_pitch / es), want_strides[1], 1};
            memcpy(want_shape, s2, sizeof s2);
            memcpy(want_strides, t2, sizeof t2);
        }
        for (int i = 0; i < 4; i++) CHECK(v.shape[i] == want_shape[i] && v.strides[i] == want_strides[i]);

        const unsigned char *mirror = host_ptr(im.buffer);
        DLManagedTensorVersioned *m;
        OK(gaio_dlpack_export(&v, &m));
        OK(gaio_buffer_release(im.buffer));
        expect_tensor(&m->dl_tensor, &v, mirror);

        /* And back: the same image as gaio resolves it. */
        gaio_image back, a, b;
        OK(gaio_dlpack_view_to_image(&v, layout, &back));
        OK(gaio_image_check(&im, &a, NULL));
        OK(gaio_image_check(&back, &b, NULL));
        CHECK(b.buffer == a.buffer && b.offset == a.offset && b.dtype == a.dtype && b.layout == a.layout);
        CHECK(b.batch == n && b.width == w && b.height == h && b.channels == c);
        CHECK(b.row_pitch == a.row_pitch || h == 1);
        CHECK(b.plane_pitch == a.plane_pitch || c == 1 || layout == GAIO_LAYOUT_HWC);
        CHECK(b.image_stride == a.image_stride || n == 1);
        CHECK(atomic_load(&calls) == 0);
        m->deleter(m);
        CHECK(atomic_load(&calls) == 1);
    }
}

/* Views of fewer dimensions than an image's four. */
static void test_view_ranks(env *e) {
    gaio_buffer *b;
    OK(gaio_buffer_alloc(e->ctx, GAIO_MEM_HOST, 4 * 5 * 7 * 3, &b));
    gaio_image im;
    gaio_dlpack_view hw = gaio_dlpack_view_make(b, 4, GAIO_DTYPE_F32, 2, (int64_t[]){5, 7});
    OK(gaio_dlpack_view_to_image(&hw, GAIO_LAYOUT_HWC, &im));
    CHECK(im.batch == 1 && im.height == 5 && im.width == 7 && im.channels == 1 && im.offset == 4);
    CHECK(im.row_pitch == 4 * 7 && im.layout == GAIO_LAYOUT_HWC && im.buffer == b);
    gaio_dlpack_view hwc = gaio_dlpack_view_make(b, 0, GAIO_DTYPE_U8, 3, (int64_t[]){5, 7, 3});
    hwc.strides[0] = 24; /* padded rows */
    OK(gaio_dlpack_view_to_image(&hwc, GAIO_LAYOUT_HWC, &im));
    CHECK(im.batch == 1 && im.height == 5 && im.width == 7 && im.channels == 3 && im.row_pitch == 24);
    gaio_dlpack_view chw = gaio_dlpack_view_make(b, 0, GAIO_DTYPE_U16, 3, (int64_t[]){3, 5, 7});
    OK(gaio_dlpack_view_to_image(&chw, GAIO_LAYOUT_CHW, &im));
    CHECK(im.channels == 3 && im.height == 5 && im.width == 7 && im.row_pitch == 14 && im.plane_pitch == 70);
    OK(gaio_buffer_release(b));
}

/* ---- import ---- */

/* An imported tensor feeds a gaio copy held back by a gate: releasing the view
 * leaves the producer's memory alone until the copy has run. */
static void test_import_copy(env *e, bool legacy) {
    producer p;
    unsigned char want[5 * 7 * 3];
    producer_make(e, &p, false, 5, 7, 3, want);
    gaio_dlpack_view v;
    if (legacy)
        OK(gaio_dlpack_import_legacy(e->ctx, &p.l, &v));
    else
        OK(gaio_dlpack_import(e->ctx, &p.v, &v));
    CHECK(v.ndim == 3 && v.dtype == GAIO_DTYPE_U8 && v.offset == 0 && !v.read_only);
    CHECK(v.strides[0] == 21 && v.strides[1] == 3 && v.strides[2] == 1 && v.shape[0] == 5);
    gaio_mem_kind kind;
    OK(gaio_buffer_kind(v.buffer, &kind));
    CHECK(kind == (e->cuda ? GAIO_MEM_HOST : GAIO_MEM_MANAGED));
    gaio_buffer *dst;
    OK(gaio_buffer_alloc(e->ctx, GAIO_MEM_DEVICE, sizeof want, &dst));
    gate g;
    gate_close(e->s, &g);
    OK(gaio_memcpy_async(e->s, dst, 0, v.buffer, 0, sizeof want));
    OK(gaio_buffer_release(v.buffer));
    test_sleep_ms(5);
    CHECK(atomic_load(&p.deleted) == 0);
    gate_open(&g);
    OK(gaio_stream_synchronize(e->s));
    CHECK(atomic_load(&p.deleted) == 1);
    unsigned char got[sizeof want];
    read_bytes(e, dst, 0, sizeof got, got);
    CHECK(memcmp(got, want, sizeof want) == 0);
    OK(gaio_buffer_release(dst));
    test_sleep_ms(2);
    CHECK(atomic_load(&p.deleted) == 1); /* exactly once */
}

/* Deferred: gaio never calls the deleter; the released future completes once the
 * copy that still reads the memory has run, and the caller deletes then. */
static void test_import_deferred(env *e, bool legacy) {
    producer p;
    unsigned char want[4 * 9 * 3];
    producer_make(e, &p, false, 4, 9, 3, want);
    gaio_dlpack_view v;
    gaio_future *released;
    if (legacy)
        OK(gaio_dlpack_import_legacy_deferred(e->ctx, &p.l, &v, &released));
    else
        OK(gaio_dlpack_import_deferred(e->ctx, &p.v, &v, &released));
    CHECK(v.ndim == 3 && v.shape[1] == 9 && released != NULL);
    gaio_buffer *dst;
    OK(gaio_buffer_alloc(e->ctx, GAIO_MEM_DEVICE, sizeof want, &dst));
    gate g;
    gate_close(e->s, &g);
    OK(gaio_memcpy_async(e->s, dst, 0, v.buffer, 0, sizeof want));
    OK(gaio_buffer_release(v.buffer));
    test_sleep_ms(5);
    CHECK(gaio_future_poll(released) == GAIO_ERR_NOT_READY);
    gate_open(&g);
    OK(gaio_future_wait(released, GAIO_INFINITE));
    CHECK(atomic_load(&p.deleted) == 0); /* left to the caller */
    OK(gaio_future_release(released));
    if (legacy)
        p.l.deleter(&p.l);
    else
        p.v.deleter(&p.v);
    CHECK(atomic_load(&p.deleted) == 1);
    unsigned char got[sizeof want];
    read_bytes(e, dst, 0, sizeof got, got);
    CHECK(memcmp(got, want, sizeof want) == 0);
    OK(gaio_buffer_release(dst));
}

/* Memory of the device under test (kDLCUDA on a GPU), read-only, at a byte offset,
 * as the source of an image op. */
static void test_import_convert(env *e, bool legacy) {
    enum { H = 6, W = 11, C = 3 };
    producer p;
    unsigned char want[H * W * C];
    producer_make(e, &p, true, H, W, C, want);
    p.v.flags = DLPACK_FLAG_BITMASK_READ_ONLY;
    gaio_dlpack_view v;
    if (legacy)
        OK(gaio_dlpack_import_legacy(e->ctx, &p.l, &v));
    else
        OK(gaio_dlpack_import(e->ctx, &p.v, &v));
    CHECK(v.read_only == !legacy);
    gaio_mem_kind kind;
    OK(gaio_buffer_kind(v.buffer, &kind));
    CHECK(kind == (e->cuda ? GAIO_MEM_DEVICE : GAIO_MEM_MANAGED));
    gaio_image src, dst;
    OK(gaio_dlpack_view_to_image(&v, GAIO_LAYOUT_HWC, &src));
    CHECK(src.batch == 1 && src.height == H && src.width == W && src.channels == C);
    gaio_buffer *out;
    OK(gaio_buffer_alloc(e->ctx, GAIO_MEM_DEVICE, sizeof(float) * H * W * C, &out));
    dst = gaio_image_make(out, 0, GAIO_DTYPE_F32, GAIO_LAYOUT_HWC, 1, W, H, C);
    gate g;
    gate_close(e->s, &g);
    OK(gaio_convert(e->s, &src, &dst, 0.5, -3.0));
    OK(gaio_buffer_release(v.buffer));
    test_sleep_ms(5);
    CHECK(atomic_load(&p.deleted) == 0);
    gate_open(&g);
    OK(gaio_stream_synchronize(e->s));
    CHECK(atomic_load(&p.deleted) == 1);
    float got[H * W * C];
    read_bytes(e, out, 0, sizeof got, got);
    for (int i = 0; i < H * W * C; i++) CHECK(got[i] == (float)(want[i] * 0.5 - 3.0));
    OK(gaio_buffer_release(out));
}

/* Export then import: the same memory, and one chain of lifetimes. */
static void test_round_trip(env *e, bool legacy) {
    atomic_int calls = 0;
    gaio_buffer *b = counted_buffer(e, 4 * 24, &calls);
    gaio_dlpack_view v = gaio_dlpack_view_make(b, 8, GAIO_DTYPE_F32, 2, (int64_t[]){4, 5}), in;
    if (legacy) {
        DLManagedTensor *l;
        OK(gaio_dlpack_export_legacy(&v, &l));
        OK(gaio_buffer_release(b));
        OK(gaio_dlpack_import_legacy(e->ctx, l, &in));
    } else {
        DLManagedTensorVersioned *m;
        OK(gaio_dlpack_export(&v, &m));
        OK(gaio_buffer_release(b));
        OK(gaio_dlpack_import(e->ctx, m, &in));
    }
    CHECK(in.ndim == 2 && in.shape[0] == 4 && in.shape[1] == 5 && in.strides[0] == 5 && in.dtype == GAIO_DTYPE_F32);
    void *p, *q;
    OK(gaio_buffer_host_ptr(b, &p));
    OK(gaio_buffer_host_ptr(in.buffer, &q));
    CHECK(q == (char *)p + 8);
    OK(gaio_memset_async(e->s, in.buffer, 0, 0x5a, 4 * 20));
    OK(gaio_stream_synchronize(e->s));
    CHECK(((unsigned char *)p)[8] == 0x5a && ((unsigned char *)p)[8 + 79] == 0x5a);
    CHECK(atomic_load(&calls) == 0);
    OK(gaio_buffer_release(in.buffer)); /* -> the export's deleter -> the last reference of b */
    CHECK(atomic_load(&calls) == 1);
}

/* ---- bad input ---- */

#define BAD_IMPORT(want, p, field_change)                                                \
    do {                                                                                 \
        producer_make(e, &p, false, 2, 3, 4, scratch);                                   \
        DLManagedTensorVersioned *m_ = &p.v;                                             \
        DLTensor *t_ = &m_->dl_tensor;                                                   \
        (void)t_;                                                                        \
        field_change;                                                                    \
        gaio_dlpack_view v_;                                                             \
        FAILS(want, gaio_dlpack_import(e->ctx, m_, &v_), "gaio_dlpack_import");          \
        CHECK(v_.buffer == NULL && atomic_load(&p.deleted) == 0);                        \
        p.l.dl_tensor = *t_;                                                             \
        if (m_->version.major == 1)                                                      \
            FAILS(want, gaio_dlpack_import_legacy(e->ctx, &p.l, &v_), "gaio_dlpack_import_legacy"); \
        CHECK(atomic_load(&p.deleted) == 0);                                             \
        m_->deleter(m_); /* a failed import leaves the tensor to the caller */          \
        CHECK(atomic_load(&p.deleted) == 1);                                             \
    } while (0)

static void test_bad_import(env *e) {
    producer p;
    unsigned char scratch[24];
    gaio_dlpack_view v;
    producer_make(e, &p, false, 2, 3, 4, scratch);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_dlpack_import(NULL, &p.v, &v), "gaio_dlpack_import");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_dlpack_import(e->ctx, NULL, &v), "gaio_dlpack_import");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_dlpack_import(e->ctx, &p.v, NULL), "gaio_dlpack_import");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_dlpack_import_legacy(NULL, &p.l, &v), "gaio_dlpack_import_legacy");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_dlpack_import_legacy(e->ctx, NULL, &v), "gaio_dlpack_import_legacy");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_dlpack_import_legacy(e->ctx, &p.l, NULL), "gaio_dlpack_import_legacy");
    gaio_future *rel = (gaio_future *)&p; /* must come back NULL */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_dlpack_import_deferred(e->ctx, &p.v, &v, NULL), "gaio_dlpack_import_deferred");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_dlpack_import_deferred(NULL, &p.v, &v, &rel), "gaio_dlpack_import_deferred");
    CHECK(rel == NULL);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_dlpack_import_legacy_deferred(e->ctx, NULL, &v, &rel),
          "gaio_dlpack_import_legacy_deferred");
    p.v.version.major = 3;
    FAILS(GAIO_ERR_NOT_SUPPORTED, gaio_dlpack_import_deferred(e->ctx, &p.v, &v, &rel), "gaio_dlpack_import_deferred");
    CHECK(rel == NULL && atomic_load(&p.deleted) == 0);
    p.v.deleter(&p.v);

    BAD_IMPORT(GAIO_ERR_NOT_SUPPORTED, p, m_->version.major = 2);
    BAD_IMPORT(GAIO_ERR_NOT_SUPPORTED, p, t_->device.device_type = kDLROCM);
    BAD_IMPORT(GAIO_ERR_NOT_SUPPORTED, p, t_->device.device_type = (DLDeviceType)99);
    /* CUDA memory on the host device, or on another GPU than the context's. */
    BAD_IMPORT(GAIO_ERR_INVALID_ARG, p, t_->device = ((DLDevice){kDLCUDA, e->cuda ? e->ordinal + 7 : 0}));
    BAD_IMPORT(GAIO_ERR_NOT_SUPPORTED, p, t_->dtype.lanes = 4);
    BAD_IMPORT(GAIO_ERR_NOT_SUPPORTED, p, t_->dtype.lanes = 0);
    BAD_IMPORT(GAIO_ERR_NOT_SUPPORTED, p, t_->dtype = ((DLDataType){kDLComplex, 64, 1}));
    BAD_IMPORT(GAIO_ERR_NOT_SUPPORTED, p, t_->dtype = ((DLDataType){kDLFloat, 64, 1}));
    BAD_IMPORT(GAIO_ERR_NOT_SUPPORTED, p, t_->dtype = ((DLDataType){kDLInt, 8, 1}));
    BAD_IMPORT(GAIO_ERR_NOT_SUPPORTED, p, t_->dtype = ((DLDataType){kDLUInt, 32, 1}));
    BAD_IMPORT(GAIO_ERR_NOT_SUPPORTED, p, t_->dtype = ((DLDataType){kDLComplex, 64, 1}));
    BAD_IMPORT(GAIO_ERR_NOT_SUPPORTED, p, t_->ndim = 0);
    BAD_IMPORT(GAIO_ERR_NOT_SUPPORTED, p, t_->ndim = GAIO_DLPACK_MAX_NDIM + 1);
    BAD_IMPORT(GAIO_ERR_NOT_SUPPORTED, p, t_->ndim = -1);
    BAD_IMPORT(GAIO_ERR_INVALID_ARG, p, t_->shape = NULL);
    BAD_IMPORT(GAIO_ERR_INVALID_ARG, p, p.shape[1] = -3);
    BAD_IMPORT(GAIO_ERR_NOT_SUPPORTED, p, p.shape[2] = 0);
    BAD_IMPORT(GAIO_ERR_INVALID_ARG, p, t_->data = NULL);
    BAD_IMPORT(GAIO_ERR_INVALID_ARG, p, t_->byte_offset = UINT64_MAX - 2);
    /* A stride that goes backwards, and strides whose span overflows 64 bits. */
    BAD_IMPORT(GAIO_ERR_NOT_SUPPORTED, p, (p.strides[1] = -4, t_->strides = p.strides));
    BAD_IMPORT(GAIO_ERR_INVALID_ARG, p, (p.strides[0] = p.strides[1] = INT64_MAX, t_->strides = p.strides));
    BAD_IMPORT(GAIO_ERR_INVALID_ARG, p, (p.shape[0] = INT64_MAX / 2, p.shape[1] = INT64_MAX / 2));
}

static void test_bad_export(env *e) {
    atomic_int calls = 0;
    gaio_buffer *b = counted_buffer(e, 64, &calls);
    gaio_dlpack_view good = gaio_dlpack_view_make(b, 0, GAIO_DTYPE_U16, 2, (int64_t[]){4, 8}), v;
    DLManagedTensorVersioned *m = (void *)1;
    DLManagedTensor *l = (void *)1;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_dlpack_export(NULL, &m), "gaio_dlpack_export");
    CHECK(m == NULL);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_dlpack_export(&good, NULL), "gaio_dlpack_export");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_dlpack_export_legacy(NULL, &l), "gaio_dlpack_export_legacy");
    CHECK(l == NULL);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_dlpack_export_legacy(&good, NULL), "gaio_dlpack_export_legacy");
#define BAD_EXPORT(change)                                                                             \
    do {                                                                                               \
        v = good;                                                                                      \
        change;                                                                                        \
        FAILS(GAIO_ERR_INVALID_ARG, gaio_dlpack_export(&v, &m), "gaio_dlpack_export");                 \
        FAILS(GAIO_ERR_INVALID_ARG, gaio_dlpack_export_legacy(&v, &l), "gaio_dlpack_export_legacy");   \
        CHECK(m == NULL && l == NULL);                                                                 \
    } while (0)
    BAD_EXPORT(v.buffer = NULL);
    BAD_EXPORT(v.dtype = (gaio_dtype)0);
    BAD_EXPORT(v.dtype = (gaio_dtype)99);
    BAD_EXPORT(v.ndim = 0);
    BAD_EXPORT(v.ndim = GAIO_DLPACK_MAX_NDIM + 1);
    BAD_EXPORT(v.shape[1] = 0);
    BAD_EXPORT(v.shape[0] = -1);
    BAD_EXPORT(v.strides[0] = -8);
    BAD_EXPORT(v.offset = 2);                                  /* one element past the buffer's end */
    BAD_EXPORT(v.strides[1] = 2);                              /* spans more than the buffer */
    BAD_EXPORT((v.strides[0] = INT64_MAX, v.shape[0] = 3));   /* overflows */
    BAD_EXPORT(v.offset = SIZE_MAX);

    /* Images: bad descriptors, YUV frames, and views that are no image. */
    gaio_image im = gaio_image_make(b, 0, GAIO_DTYPE_U16, GAIO_LAYOUT_HWC, 1, 4, 2, 3), back;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_dlpack_view_from_image(NULL, &v), "gaio_dlpack_view_from_image");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_dlpack_view_from_image(&im, NULL), "gaio_dlpack_view_from_image");
    gaio_image odd = im;
    odd.row_pitch = 25; /* not whole u16 elements */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_dlpack_view_from_image(&odd, &v), "gaio_dlpack_view_from_image");
    odd = im;
    odd.width = 0;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_dlpack_view_from_image(&odd, &v), "gaio_dlpack_view_from_image");
    gaio_image yuv = gaio_image_make(b, 0, GAIO_DTYPE_U8, GAIO_LAYOUT_NV12, 1, 4, 4, 3);
    FAILS(GAIO_ERR_NOT_SUPPORTED, gaio_dlpack_view_from_image(&yuv, &v), "gaio_dlpack_view_from_image");
    yuv.layout = GAIO_LAYOUT_I420;
    FAILS(GAIO_ERR_NOT_SUPPORTED, gaio_dlpack_view_from_image(&yuv, &v), "gaio_dlpack_view_from_image");
    CHECK(v.buffer == NULL);

    gaio_dlpack_view hwc = gaio_dlpack_view_make(b, 0, GAIO_DTYPE_U8, 3, (int64_t[]){2, 4, 3});
    FAILS(GAIO_ERR_INVALID_ARG, gaio_dlpack_view_to_image(NULL, GAIO_LAYOUT_HWC, &back), "gaio_dlpack_view_to_image");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_dlpack_view_to_image(&hwc, GAIO_LAYOUT_HWC, NULL), "gaio_dlpack_view_to_image");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_dlpack_view_to_image(&hwc, GAIO_LAYOUT_NV12, &back), "gaio_dlpack_view_to_image");
    v = hwc;
    v.ndim = 1;
    FAILS(GAIO_ERR_NOT_SUPPORTED, gaio_dlpack_view_to_image(&v, GAIO_LAYOUT_HWC, &back), "gaio_dlpack_view_to_image");
    v = gaio_dlpack_view_make(b, 0, GAIO_DTYPE_U8, 5, (int64_t[]){1, 1, 2, 2, 2});
    FAILS(GAIO_ERR_NOT_SUPPORTED, gaio_dlpack_view_to_image(&v, GAIO_LAYOUT_CHW, &back), "gaio_dlpack_view_to_image");
    v = hwc;
    v.strides[0] = 24, v.strides[1] = 6, v.strides[2] = 2; /* channels 2 apart */
    FAILS(GAIO_ERR_NOT_SUPPORTED, gaio_dlpack_view_to_image(&v, GAIO_LAYOUT_HWC, &back), "gaio_dlpack_view_to_image");
    v = hwc;
    v.strides[0] = 6; /* rows overlap */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_dlpack_view_to_image(&v, GAIO_LAYOUT_HWC, &back), "gaio_dlpack_view_to_image");
    v = hwc;
    v.strides[0] = 0; /* every row the same */
    FAILS(GAIO_ERR_NOT_SUPPORTED, gaio_dlpack_view_to_image(&v, GAIO_LAYOUT_HWC, &back), "gaio_dlpack_view_to_image");
    CHECK(back.buffer == NULL);

    CHECK(atomic_load(&calls) == 0);
    OK(gaio_buffer_release(b)); /* no failed call kept a reference */
    CHECK(atomic_load(&calls) == 1);
}

static void run(int device) {
    env e = {0};
    gaio_device_props props;
    OK(gaio_device_get_props(device, &props));
    e.cuda = props.kind == GAIO_DEVICE_CUDA;
    e.ordinal = props.ordinal;
    e.rng = test_seed();
    OK(gaio_context_create(device, NULL, &e.ctx));
    OK(gaio_stream_create(e.ctx, 0, 0, &e.s));
    test_export_buffer(&e);
    test_export_image(&e);
    test_view_ranks(&e);
    for (int legacy = 0; legacy < 2; legacy++) {
        test_import_copy(&e, legacy);
        test_import_deferred(&e, legacy);
        test_import_convert(&e, legacy);
        test_round_trip(&e, legacy);
    }
    test_bad_import(&e);
    test_bad_export(&e);
    OK(gaio_stream_release(e.s));
    OK(gaio_context_release(e.ctx));
}
