/* Buffers of every kind, copies and fills in stream order, wrapped memory and the
 * context pools. Every result is checked byte for byte against a host mirror that
 * applies the same operations with plain memcpy/memset. Copies and fills take every
 * kind, HOST (pageable) memory included, on every backend. */
#include <stdatomic.h>
#include <stdbool.h>

#include "common.h"
#include "support.h"

static const gaio_mem_kind KINDS[GAIO_MEM_KIND_COUNT] = {GAIO_MEM_DEVICE, GAIO_MEM_HOST, GAIO_MEM_PINNED,
                                                         GAIO_MEM_MANAGED};
static const char *const KIND_NAMES[GAIO_MEM_KIND_COUNT] = {"DEVICE", "HOST", "PINNED", "MANAGED"};

static void fill_random(uint64_t *rng, unsigned char *p, size_t n) {
    for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(test_rand(rng) >> 56);
    if (n) p[0] |= 1; /* never all zero */
}

/* ---- moving bytes between the host and any buffer ---- */

static bool host_visible(gaio_mem_kind k) { return k != GAIO_MEM_DEVICE; }

/* Copies size bytes of buf into out (buf's stream work must be ordered on s). */
static void read_back(gaio_context *ctx, gaio_stream *s, gaio_buffer *buf, size_t size, unsigned char *out) {
    gaio_mem_kind k;
    OK(gaio_buffer_kind(buf, &k));
    if (host_visible(k)) {
        OK(gaio_stream_synchronize(s));
        void *p;
        OK(gaio_buffer_host_ptr(buf, &p));
        memcpy(out, p, size);
        return;
    }
    gaio_buffer *stage;
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_HOST, size, &stage));
    OK(gaio_memcpy_async(s, stage, 0, buf, 0, size));
    OK(gaio_stream_synchronize(s));
    void *p;
    OK(gaio_buffer_host_ptr(stage, &p));
    memcpy(out, p, size);
    OK(gaio_buffer_release(stage));
}

/* Writes size bytes of data into buf and waits until they are there. */
static void write_to(gaio_context *ctx, gaio_stream *s, gaio_buffer *buf, const unsigned char *data, size_t size) {
    gaio_mem_kind k;
    OK(gaio_buffer_kind(buf, &k));
    OK(gaio_stream_synchronize(s));
    if (host_visible(k)) {
        void *p;
        OK(gaio_buffer_host_ptr(buf, &p));
        memcpy(p, data, size);
        return;
    }
    gaio_buffer *stage;
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_PINNED, size, &stage));
    void *p;
    OK(gaio_buffer_host_ptr(stage, &p));
    memcpy(p, data, size);
    OK(gaio_memcpy_async(s, buf, 0, stage, 0, size));
    OK(gaio_buffer_release(stage)); /* the copy in flight keeps it alive */
    OK(gaio_stream_synchronize(s));
}

static void expect_bytes(const unsigned char *got, const unsigned char *want, size_t n, const char *what) {
    for (size_t i = 0; i < n; i++) {
        if (got[i] != want[i]) {
            fprintf(stderr, "%s: byte %zu of %zu is 0x%02x, expected 0x%02x\n", what, i, n, got[i], want[i]);
            exit(1);
        }
    }
}

/* A buffer under test and its host mirror. */
typedef struct tbuf {
    gaio_buffer *buf;
    gaio_mem_kind kind;
    size_t size;
    size_t pitch; /* for 2D buffers; 0 for 1D ones (the copy picks a pitch) */
    unsigned char *mirror;
} tbuf;

static void tbuf_init(gaio_context *ctx, gaio_stream *s, tbuf *t, uint64_t *rng) {
    t->mirror = malloc(t->size);
    CHECK(t->mirror != NULL);
    fill_random(rng, t->mirror, t->size);
    write_to(ctx, s, t->buf, t->mirror, t->size);
}

static void tbuf_verify(gaio_context *ctx, gaio_stream *s, const tbuf *t, const char *what) {
    unsigned char *got = malloc(t->size);
    CHECK(got != NULL);
    read_back(ctx, s, t->buf, t->size, got);
    char label[128];
    snprintf(label, sizeof label, "%s (%s buffer of %zu bytes)", what, KIND_NAMES[t->kind], t->size);
    expect_bytes(got, t->mirror, t->size, label);
    free(got);
}

static void tbuf_fini(tbuf *t) {
    OK(gaio_buffer_release(t->buf));
    free(t->mirror);
}

/* ---- properties of fresh buffers ---- */

static void test_buffer_props(gaio_context *ctx, gaio_stream *s, int device, uint64_t *rng) {
    for (int k = 0; k < GAIO_MEM_KIND_COUNT; k++) {
        size_t size = rand_range(rng, 1, 100000);
        for (int async = 0; async < 2; async++) {
            gaio_buffer *b;
            if (async) OK(gaio_buffer_alloc_async(s, KINDS[k], size, &b));
            else OK(gaio_buffer_alloc(ctx, KINDS[k], size, &b));
            size_t got_size, pitch;
            gaio_mem_kind got_kind;
            int got_dev;
            void *dptr;
            OK(gaio_buffer_size(b, &got_size));
            OK(gaio_buffer_kind(b, &got_kind));
            OK(gaio_buffer_device(b, &got_dev));
            OK(gaio_buffer_pitch(b, &pitch));
            OK(gaio_buffer_device_ptr(b, &dptr));
            CHECK(got_size == size);
            CHECK(got_kind == KINDS[k]);
            CHECK(got_dev == device);
            CHECK(pitch == size); /* 1D: the pitch is the size */
            CHECK(dptr != NULL);
            void *hptr = (void *)&hptr;
            if (host_visible(KINDS[k])) {
                OK(gaio_buffer_host_ptr(b, &hptr));
                CHECK(hptr != NULL);
                /* The whole range is writable and readable from the host. */
                memset(hptr, 0xA5, size);
                CHECK(((unsigned char *)hptr)[size - 1] == 0xA5);
            } else {
                FAILS(GAIO_ERR_INVALID_ARG, gaio_buffer_host_ptr(b, &hptr), "gaio_buffer_host_ptr");
            }
            OK(gaio_buffer_retain(b));
            OK(gaio_buffer_release(b));
            OK(gaio_buffer_release(b));
        }
    }
}

/* ---- 1D copies between every pair of kinds ---- */

static void do_copy_1d(gaio_stream *s, tbuf *dst, size_t doff, tbuf *src, size_t soff, size_t n) {
    OK(gaio_memcpy_async(s, dst->buf, doff, src->buf, soff, n));
    memcpy(dst->mirror + doff, src->mirror + soff, n);
}

static void random_copy_1d(gaio_stream *s, tbuf *dst, tbuf *src, uint64_t *rng) {
    size_t max = dst->size < src->size ? dst->size : src->size;
    size_t n;
    switch (test_rand(rng) % 4) {
    case 0: n = 1; break;
    case 1: n = max; break;
    default: n = rand_range(rng, 1, max); break;
    }
    size_t doff = rand_range(rng, 0, dst->size - n), soff = rand_range(rng, 0, src->size - n);
    do_copy_1d(s, dst, doff, src, soff, n);
}

static void test_copy_1d(gaio_context *ctx, gaio_stream *s, uint64_t *rng) {
    enum { PER_KIND = 2, NB = GAIO_MEM_KIND_COUNT * PER_KIND };
    tbuf t[NB];
    for (int i = 0; i < NB; i++) {
        t[i].kind = KINDS[i / PER_KIND];
        t[i].size = rand_range(rng, 1024, 20000);
        t[i].pitch = 0;
        if (i % 2) OK(gaio_buffer_alloc_async(s, t[i].kind, t[i].size, &t[i].buf));
        else OK(gaio_buffer_alloc(ctx, t[i].kind, t[i].size, &t[i].buf));
        tbuf_init(ctx, s, &t[i], rng);
    }
    /* Every direction at least once (same kind: between its two buffers), checked
     * at once, then long chains of random copies whose order matters. */
    for (int sk = 0; sk < GAIO_MEM_KIND_COUNT; sk++) {
        for (int dk = 0; dk < GAIO_MEM_KIND_COUNT; dk++) {
            tbuf *src = &t[sk * PER_KIND], *dst = &t[dk * PER_KIND + 1];
            random_copy_1d(s, dst, src, rng);
            char what[64];
            snprintf(what, sizeof what, "memcpy %s -> %s", KIND_NAMES[sk], KIND_NAMES[dk]);
            tbuf_verify(ctx, s, dst, what);
            tbuf_verify(ctx, s, src, what);
        }
    }
    for (int round = 0; round < 4; round++) {
        for (int i = 0; i < 150; i++) {
            int a = (int)(test_rand(rng) % NB), b;
            do b = (int)(test_rand(rng) % NB);
            while (b == a);
            random_copy_1d(s, &t[b], &t[a], rng);
        }
        for (int i = 0; i < NB; i++) tbuf_verify(ctx, s, &t[i], "random 1D copy chain");
    }
    for (int i = 0; i < NB; i++) tbuf_fini(&t[i]);
}

/* ---- 2D copies ---- */

static size_t view_pitch(const tbuf *t, uint64_t *rng, size_t min_width) {
    if (t->pitch) return t->pitch;
    size_t hi = t->size / 3 > min_width ? t->size / 3 : min_width;
    return rand_range(rng, min_width, hi);
}

static void random_copy_2d(gaio_stream *s, tbuf *dst, tbuf *src, uint64_t *rng) {
    size_t maxw = 300; /* rows must fit the pitch of a 2D buffer */
    if (dst->pitch && dst->pitch < maxw) maxw = dst->pitch;
    if (src->pitch && src->pitch < maxw) maxw = src->pitch;
    if (dst->pitch && src->pitch) maxw = dst->pitch < src->pitch ? dst->pitch : src->pitch;
    if (maxw > dst->size) maxw = dst->size;
    if (maxw > src->size) maxw = src->size;
    size_t w = rand_range(rng, 1, maxw);
    size_t dp = view_pitch(dst, rng, w), sp = view_pitch(src, rng, w);
    if (dp > dst->size) dp = w; /* a pitch no bigger than the buffer: w fits, since w <= size */
    if (sp > src->size) sp = w;
    size_t hd = (dst->size - w) / dp + 1, hs = (src->size - w) / sp + 1;
    size_t hmax = hd < hs ? hd : hs;
    if (hmax > 48) hmax = 48;
    size_t h = rand_range(rng, 1, hmax);
    size_t dspan = (h - 1) * dp + w, sspan = (h - 1) * sp + w;
    size_t doff = rand_range(rng, 0, dst->size - dspan), soff = rand_range(rng, 0, src->size - sspan);
    OK(gaio_memcpy_2d_async(s, dst->buf, doff, dp, src->buf, soff, sp, w, h));
    for (size_t r = 0; r < h; r++) memcpy(dst->mirror + doff + r * dp, src->mirror + soff + r * sp, w);
}

static void test_copy_2d(gaio_context *ctx, gaio_stream *s, int device, uint64_t *rng) {
    gaio_device_props props;
    OK(gaio_device_get_props(device, &props));
    CHECK(props.pitch_alignment > 0);
    /* Per kind: two 2D buffers of different shapes and one 1D buffer (caller-chosen pitches). */
    enum { PER_KIND = 3, NB = GAIO_MEM_KIND_COUNT * PER_KIND };
    tbuf t[NB];
    for (int i = 0; i < NB; i++) {
        t[i].kind = KINDS[i / PER_KIND];
        if (i % PER_KIND == 2) {
            t[i].size = rand_range(rng, 2000, 30000);
            t[i].pitch = 0;
            OK(gaio_buffer_alloc(ctx, t[i].kind, t[i].size, &t[i].buf));
        } else {
            size_t width = rand_range(rng, 1, 700), height = rand_range(rng, 1, 40);
            if (i % PER_KIND == 1) width = props.pitch_alignment * rand_range(rng, 1, 3); /* exact multiple */
            OK(gaio_buffer_alloc_2d(ctx, t[i].kind, width, height, &t[i].buf));
            size_t pitch, size;
            OK(gaio_buffer_pitch(t[i].buf, &pitch));
            OK(gaio_buffer_size(t[i].buf, &size));
            CHECK(pitch >= width);
            CHECK(pitch % props.pitch_alignment == 0);
            CHECK(size >= (height - 1) * pitch + width);
            t[i].pitch = pitch;
            t[i].size = size;
        }
        tbuf_init(ctx, s, &t[i], rng);
    }
    for (int sk = 0; sk < GAIO_MEM_KIND_COUNT; sk++) {
        for (int dk = 0; dk < GAIO_MEM_KIND_COUNT; dk++) {
            for (int v = 0; v < PER_KIND; v++) {
                tbuf *src = &t[sk * PER_KIND + v], *dst = &t[dk * PER_KIND + (v + 1) % PER_KIND];
                random_copy_2d(s, dst, src, rng);
            }
        }
        for (int i = 0; i < NB; i++) tbuf_verify(ctx, s, &t[i], "2D copy from each kind");
    }
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 120; i++) {
            int a = (int)(test_rand(rng) % NB), b;
            do b = (int)(test_rand(rng) % NB);
            while (b == a);
            random_copy_2d(s, &t[b], &t[a], rng);
        }
        for (int i = 0; i < NB; i++) tbuf_verify(ctx, s, &t[i], "random 2D copy chain");
    }
    for (int i = 0; i < NB; i++) tbuf_fini(&t[i]);
}

/* ---- memset 1D and 2D ---- */

static void test_memset(gaio_context *ctx, gaio_stream *s, uint64_t *rng) {
    for (int k = 0; k < GAIO_MEM_KIND_COUNT; k++) {
        tbuf one = {.kind = KINDS[k], .size = rand_range(rng, 500, 20000)};
        OK(gaio_buffer_alloc(ctx, one.kind, one.size, &one.buf));
        tbuf_init(ctx, s, &one, rng);
        tbuf two = {.kind = KINDS[k]};
        size_t width = rand_range(rng, 1, 600), height = rand_range(rng, 2, 30);
        OK(gaio_buffer_alloc_2d(ctx, two.kind, width, height, &two.buf));
        OK(gaio_buffer_pitch(two.buf, &two.pitch));
        OK(gaio_buffer_size(two.buf, &two.size));
        tbuf_init(ctx, s, &two, rng);

        for (int i = 0; i < 40; i++) {
            int value = (int)rand_range(rng, 1, 255);
            size_t n = rand_range(rng, 1, one.size), off = rand_range(rng, 0, one.size - n);
            OK(gaio_memset_async(s, one.buf, off, value, n));
            memset(one.mirror + off, value, n);

            /* A rectangle inside the 2D buffer's rows: the padding between width and
             * pitch and the rows outside stay as they were. */
            size_t w = rand_range(rng, 1, width), x = rand_range(rng, 0, width - w);
            size_t h = rand_range(rng, 1, height), y = rand_range(rng, 0, height - h);
            size_t o2 = y * two.pitch + x;
            value = (int)rand_range(rng, 1, 255);
            OK(gaio_memset_2d_async(s, two.buf, o2, two.pitch, value, w, h));
            for (size_t r = 0; r < h; r++) memset(two.mirror + o2 + r * two.pitch, value, w);

            /* A 2D fill over the 1D buffer with a pitch of the caller's choosing. */
            size_t pitch = rand_range(rng, 1, 200);
            w = rand_range(rng, 1, pitch);
            size_t hmax = (one.size - w) / pitch + 1;
            h = rand_range(rng, 1, hmax < 20 ? hmax : 20);
            size_t span = (h - 1) * pitch + w;
            off = rand_range(rng, 0, one.size - span);
            value = (int)rand_range(rng, 0, 255);
            OK(gaio_memset_2d_async(s, one.buf, off, pitch, value, w, h));
            for (size_t r = 0; r < h; r++) memset(one.mirror + off + r * pitch, value, w);
        }
        tbuf_verify(ctx, s, &one, "memset 1D/2D over a 1D buffer");
        tbuf_verify(ctx, s, &two, "memset 2D rectangle");
        /* Fill the whole 2D buffer row by row over its width only. */
        OK(gaio_memset_2d_async(s, two.buf, 0, two.pitch, 0x5C, width, height));
        for (size_t r = 0; r < height; r++) memset(two.mirror + r * two.pitch, 0x5C, width);
        tbuf_verify(ctx, s, &two, "memset 2D full width");
        tbuf_fini(&one);
        tbuf_fini(&two);
    }
}

/* ---- wrapped memory ---- */

typedef struct deleter_log {
    atomic_int calls;
    void *_Atomic ptr;
    void *_Atomic user;
} deleter_log;

static void log_deleter(void *ptr, void *user) {
    deleter_log *log = user;
    atomic_store(&log->ptr, ptr);
    atomic_store(&log->user, user);
    atomic_fetch_add(&log->calls, 1);
}

/* Memory to wrap as a given kind. On the host backend it is plain malloc() memory
 * for every kind: the host is the device, so any host memory is its DEVICE, PINNED
 * and MANAGED memory too. A CUDA backend asks the driver what a wrapped pointer is,
 * so there DEVICE, PINNED and MANAGED memory comes from a gaio buffer of that kind
 * (its gaio_buffer_device_ptr), and only HOST memory is malloc()'s. */
typedef struct wrap_mem {
    unsigned char *ptr;  /* what gets wrapped */
    gaio_buffer *owner;  /* the gaio buffer ptr belongs to, or NULL for malloc() memory */
    bool host_access;    /* the host may read and write ptr directly */
} wrap_mem;

static void wrap_mem_get(gaio_context *ctx, int device, gaio_mem_kind kind, size_t size, wrap_mem *m) {
    gaio_device_props props;
    OK(gaio_device_get_props(device, &props));
    m->owner = NULL;
    m->host_access = true;
    if (props.kind == GAIO_DEVICE_HOST || kind == GAIO_MEM_HOST) {
        m->ptr = malloc(size);
        CHECK(m->ptr != NULL);
        return;
    }
    OK(gaio_buffer_alloc(ctx, kind, size, &m->owner));
    void *p;
    OK(gaio_buffer_device_ptr(m->owner, &p));
    m->ptr = p;
    m->host_access = host_visible(kind);
}

static void wrap_mem_write(gaio_context *ctx, gaio_stream *s, const wrap_mem *m, const unsigned char *data,
                           size_t size) {
    if (m->host_access) {
        OK(gaio_stream_synchronize(s));
        memcpy(m->ptr, data, size);
    } else {
        write_to(ctx, s, m->owner, data, size);
    }
}

static void wrap_mem_read(gaio_context *ctx, gaio_stream *s, const wrap_mem *m, unsigned char *out, size_t size) {
    if (m->host_access) {
        OK(gaio_stream_synchronize(s));
        memcpy(out, m->ptr, size);
    } else {
        read_back(ctx, s, m->owner, size, out);
    }
}

static void wrap_mem_free(wrap_mem *m) {
    if (m->owner) OK(gaio_buffer_release(m->owner));
    else free(m->ptr);
}

static void test_wrap(gaio_context *ctx, gaio_stream *s, int device, uint64_t *rng) {
    for (int k = 0; k < GAIO_MEM_KIND_COUNT; k++) {
        size_t size = rand_range(rng, 64, 5000);
        wrap_mem m;
        wrap_mem_get(ctx, device, KINDS[k], size, &m);
        unsigned char *mem = m.ptr, *want = malloc(size), *now = malloc(size);
        CHECK(want && now);
        fill_random(rng, want, size);
        wrap_mem_write(ctx, s, &m, want, size);
        deleter_log log;
        atomic_init(&log.calls, 0);
        atomic_init(&log.ptr, NULL);
        atomic_init(&log.user, NULL);

        gaio_buffer *w;
        OK(gaio_buffer_wrap(ctx, KINDS[k], mem, size, log_deleter, &log, &w));
        size_t got_size;
        gaio_mem_kind got_kind;
        void *dptr;
        OK(gaio_buffer_size(w, &got_size));
        OK(gaio_buffer_kind(w, &got_kind));
        OK(gaio_buffer_device_ptr(w, &dptr));
        CHECK(got_size == size);
        CHECK(got_kind == KINDS[k]);
        CHECK(dptr == mem); /* the device address is the wrapped pointer */
        if (host_visible(KINDS[k])) {
            void *hptr;
            OK(gaio_buffer_host_ptr(w, &hptr));
            CHECK(hptr == mem);
        } else {
            void *hptr;
            FAILS(GAIO_ERR_INVALID_ARG, gaio_buffer_host_ptr(w, &hptr), "gaio_buffer_host_ptr");
        }

        /* Wrapped memory takes part in copies like any buffer. */
        gaio_buffer *other;
        OK(gaio_buffer_alloc(ctx, GAIO_MEM_HOST, size, &other));
        OK(gaio_memcpy_async(s, other, 0, w, 0, size));
        unsigned char *got = malloc(size);
        CHECK(got != NULL);
        read_back(ctx, s, other, size, got);
        expect_bytes(got, want, size, "copy out of wrapped memory");
        free(got);

        /* Extra references do not run the deleter. */
        OK(gaio_buffer_retain(w));
        OK(gaio_buffer_release(w));
        CHECK(atomic_load(&log.calls) == 0);

        /* Work in flight keeps the wrapped buffer: the deleter waits for it. */
        gate g;
        gate_close(s, &g);
        size_t off = rand_range(rng, 0, size - 1), n = rand_range(rng, 1, size - off);
        int value = (int)rand_range(rng, 1, 255);
        OK(gaio_memset_async(s, w, off, value, n));
        memset(want + off, value, n);
        OK(gaio_buffer_release(w));
        test_sleep_ms(5);
        CHECK(atomic_load(&log.calls) == 0);
        gate_open(&g);
        OK(gaio_stream_synchronize(s));
        CHECK(atomic_load(&log.calls) == 1);
        CHECK(atomic_load(&log.ptr) == mem);
        CHECK(atomic_load(&log.user) == &log);
        wrap_mem_read(ctx, s, &m, now, size);
        expect_bytes(now, want, size, "memset on wrapped memory"); /* the deleter did not free it */
        OK(gaio_buffer_release(other));
        test_sleep_ms(2);
        CHECK(atomic_load(&log.calls) == 1); /* exactly once */

        /* A NULL deleter: nothing runs, the memory stays the caller's. */
        OK(gaio_buffer_wrap(ctx, KINDS[k], mem, size, NULL, NULL, &w));
        OK(gaio_memset_async(s, w, 0, 0x11, size));
        OK(gaio_buffer_release(w));
        OK(gaio_stream_synchronize(s));
        wrap_mem_read(ctx, s, &m, now, size);
        for (size_t i = 0; i < size; i++) CHECK(now[i] == 0x11);
        wrap_mem_free(&m);
        free(want);
        free(now);
    }
}

/* ---- pools ---- */

static void test_pool(int device, uint64_t *rng) {
    gaio_context_options opt = {.pool_release_threshold = (size_t)16 << 20, .rng_seed = test_rand(rng)};
    gaio_context *ctx;
    OK(gaio_context_create(device, &opt, &ctx));
    gaio_stream *s;
    OK(gaio_context_default_stream(ctx, &s));

    for (int k = 0; k < GAIO_MEM_KIND_COUNT; k++) {
        gaio_mem_kind kind = KINDS[k];
        gaio_pool_stats st = stats_of(ctx, kind);
        CHECK(st.bytes_in_use == 0 && st.bytes_cached == 0 && st.allocations == 0 && st.reuses == 0);

        size_t size = rand_range(rng, 1000, 100000);
        gaio_pool_stats before[GAIO_MEM_KIND_COUNT];
        for (int o = 0; o < GAIO_MEM_KIND_COUNT; o++) before[o] = stats_of(ctx, KINDS[o]);
        gaio_buffer *a;
        OK(gaio_buffer_alloc(ctx, kind, size, &a));
        st = stats_of(ctx, kind);
        size_t block = st.bytes_in_use; /* the size class the request was rounded to */
        CHECK(block >= size);
        CHECK(st.bytes_cached == 0 && st.allocations == 1 && st.reuses == 0);
        /* The other kinds' pools are untouched. */
        for (int o = 0; o < GAIO_MEM_KIND_COUNT; o++) {
            if (o == k) continue;
            gaio_pool_stats now = stats_of(ctx, KINDS[o]);
            CHECK(now.allocations == before[o].allocations && now.bytes_in_use == before[o].bytes_in_use);
        }

        OK(gaio_buffer_release(a));
        st = stats_of(ctx, kind);
        CHECK(st.bytes_in_use == 0 && st.bytes_cached == block);

        /* The same size comes from the cache. */
        OK(gaio_buffer_alloc(ctx, kind, size, &a));
        st = stats_of(ctx, kind);
        CHECK(st.allocations == 2 && st.reuses == 1);
        CHECK(st.bytes_in_use == block && st.bytes_cached == 0);
        /* So does a stream-ordered allocation of that size once it is back. */
        OK(gaio_buffer_release(a));
        OK(gaio_buffer_alloc_async(s, kind, size, &a));
        st = stats_of(ctx, kind);
        CHECK(st.allocations == 3 && st.reuses == 2);
        CHECK(st.bytes_in_use == block && st.bytes_cached == 0);
        OK(gaio_buffer_release(a));

        /* A request four times bigger is another size class: not served by the cached block. */
        gaio_buffer *big;
        OK(gaio_buffer_alloc(ctx, kind, size * 4, &big));
        st = stats_of(ctx, kind);
        CHECK(st.allocations == 4 && st.reuses == 2);
        CHECK(st.bytes_cached == block);
        size_t big_block = st.bytes_in_use;
        CHECK(big_block >= size * 4);
        OK(gaio_buffer_release(big));
        st = stats_of(ctx, kind);
        CHECK(st.bytes_in_use == 0 && st.bytes_cached == block + big_block);

        /* Trim keeps at most `keep` bytes; 0 gives everything back. */
        OK(gaio_context_trim(ctx, block + big_block - 1));
        st = stats_of(ctx, kind);
        CHECK(st.bytes_cached <= block + big_block - 1);
        CHECK(st.bytes_in_use == 0);
        OK(gaio_context_trim(ctx, 0));
        st = stats_of(ctx, kind);
        CHECK(st.bytes_cached == 0 && st.bytes_in_use == 0);
        /* After the trim the same size is a fresh allocation, not a reuse. */
        uint64_t reuses = st.reuses;
        OK(gaio_buffer_alloc(ctx, kind, size, &a));
        st = stats_of(ctx, kind);
        CHECK(st.reuses == reuses && st.bytes_in_use == block);

        /* Memory used by work in flight returns to the pool only when the stream passes it. */
        gate g;
        gate_close(s, &g);
        OK(gaio_memset_async(s, a, 0, 0x42, size));
        OK(gaio_buffer_release(a));
        test_sleep_ms(2);
        st = stats_of(ctx, kind);
        CHECK(st.bytes_in_use == block && st.bytes_cached == 0);
        gate_open(&g);
        OK(gaio_stream_synchronize(s));
        st = stats_of(ctx, kind);
        CHECK(st.bytes_in_use == 0 && st.bytes_cached == block);

        /* A stream-ordered free gives the memory back when the stream reaches it
         * (served from the cache: the block just cached). */
        OK(gaio_buffer_alloc(ctx, kind, size, &a));
        st = stats_of(ctx, kind);
        CHECK(st.bytes_in_use == block && st.bytes_cached == 0);
        gate_close(s, &g);
        OK(gaio_buffer_free_async(a, s));
        test_sleep_ms(2);
        st = stats_of(ctx, kind);
        CHECK(st.bytes_in_use == block && st.bytes_cached == 0);
        gate_open(&g);
        OK(gaio_stream_synchronize(s));
        st = stats_of(ctx, kind);
        CHECK(st.bytes_in_use == 0 && st.bytes_cached == block);
        OK(gaio_context_trim(ctx, 0));
    }
    OK(gaio_context_release(ctx));

    /* The release threshold caps the cache of each pool. */
    const size_t threshold = (size_t)1 << 20;
    opt.pool_release_threshold = threshold;
    OK(gaio_context_create(device, &opt, &ctx));
    for (int k = 0; k < GAIO_MEM_KIND_COUNT; k++) {
        enum { N = 12 };
        gaio_buffer *b[N];
        size_t size = rand_range(rng, 200000, 300000);
        for (int i = 0; i < N; i++) OK(gaio_buffer_alloc(ctx, KINDS[k], size, &b[i]));
        gaio_pool_stats st = stats_of(ctx, KINDS[k]);
        size_t block = st.bytes_in_use / N;
        CHECK(st.bytes_in_use == block * N && block >= size);
        for (int i = 0; i < N; i++) OK(gaio_buffer_release(b[i]));
        st = stats_of(ctx, KINDS[k]);
        CHECK(st.bytes_in_use == 0);
        CHECK(st.bytes_cached <= threshold);
        CHECK(st.bytes_cached >= block); /* it does cache what fits */
        CHECK(st.bytes_cached / block == threshold / block);
    }
    OK(gaio_context_release(ctx));
}

static void run(int device) {
    uint64_t rng = test_seed();
    gaio_context *ctx;
    OK(gaio_context_create(device, NULL, &ctx));
    gaio_stream *s;
    OK(gaio_stream_create(ctx, 0, 0, &s));

    test_buffer_props(ctx, s, device, &rng);
    test_copy_1d(ctx, s, &rng);
    test_copy_2d(ctx, s, device, &rng);
    test_memset(ctx, s, &rng);
    test_wrap(ctx, s, device, &rng);

    /* The default stream serves the same operations. */
    gaio_stream *ds;
    OK(gaio_context_default_stream(ctx, &ds));
    tbuf a = {.kind = GAIO_MEM_DEVICE, .size = rand_range(&rng, 100, 5000)};
    tbuf b = {.kind = GAIO_MEM_MANAGED, .size = a.size};
    OK(gaio_buffer_alloc(ctx, a.kind, a.size, &a.buf));
    OK(gaio_buffer_alloc(ctx, b.kind, b.size, &b.buf));
    tbuf_init(ctx, ds, &a, &rng);
    tbuf_init(ctx, ds, &b, &rng);
    for (int i = 0; i < 20; i++) random_copy_1d(ds, i % 2 ? &a : &b, i % 2 ? &b : &a, &rng);
    tbuf_verify(ctx, ds, &a, "default stream copies");
    tbuf_verify(ctx, ds, &b, "default stream copies");
    tbuf_fini(&a);
    tbuf_fini(&b);

    OK(gaio_stream_synchronize(s));
    OK(gaio_stream_release(s));
    OK(gaio_context_release(ctx));

    test_pool(device, &rng);
}
