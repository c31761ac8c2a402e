/* Philox4x32-10 against the published known answers, and the context's random
 * fills: raw bits equal the generator evaluated directly at counter offset + i/4
 * under key = seed; uniform and normal numbers have the right distribution; the
 * numbers depend only on (seed, offset, i), and every backend gives the host's
 * numbers. Fills write DEVICE, PINNED or MANAGED memory: HOST (pageable) memory is
 * refused on every backend. */
#include <float.h>
#include <math.h>

#include "common.h"
#include "support.h"

/* A 64-bit value whose two 32-bit halves are both non-zero. */
static uint64_t rand_u64_both_halves(uint64_t *rng) {
    uint64_t v = test_rand(rng);
    if ((uint32_t)v == 0) v |= 1;
    if ((v >> 32) == 0) v |= (uint64_t)1 << 40;
    return v;
}

/* ---- known answers ---- */

typedef struct kat {
    uint32_t ctr[4], key[2], out[4];
} kat;

/* Random123 1.09 examples/kat_vectors, the "philox4x32 10" lines (columns: counter
 * words 0..3, key words 0..1, expected output words 0..3). */
static const kat KATS[] = {
    {{0x00000000, 0x00000000, 0x00000000, 0x00000000},
     {0x00000000, 0x00000000},
     {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
    {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
     {0xffffffff, 0xffffffff},
     {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
    {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
     {0xa4093822, 0x299f31d0},
     {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
    /* The extended table of the same format in github.com/girving/random123-manual
     * (examples/kat_vectors): single bits in each counter and key word. */
    {{0x00000001, 0x00000000, 0x00000000, 0x00000000},
     {0x00000001, 0x00000000},
     {0xac08141b, 0xdfc5ccbe, 0x79c07a47, 0xa7f66093}},
    {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
     {0x00000000, 0x00000001},
     {0x126514c3, 0xd1898b69, 0xda2707b3, 0x6e6fb436}},
    {{0x00000000, 0x00000000, 0x00000000, 0x80000000},
     {0x00000000, 0x80000000},
     {0xf7a0b371, 0xe51dc93d, 0x56ce135d, 0x1d4b5580}},
};

static void test_known_answers(void) {
    for (size_t i = 0; i < sizeof KATS / sizeof KATS[0]; i++) {
        uint32_t out[4] = {0, 0, 0, 0};
        gaio_philox4x32_10(KATS[i].ctr, KATS[i].key, out);
        for (int w = 0; w < 4; w++) {
            if (out[w] != KATS[i].out[w]) {
                fprintf(stderr, "philox4x32_10 known answer %zu word %d: 0x%08x, expected 0x%08x\n", i, w, out[w],
                        KATS[i].out[w]);
                exit(1);
            }
        }
    }
}

/* ---- the reference for fills: element i of a fill at (seed, offset) ---- */

static void ref_block(uint64_t seed, uint64_t counter, uint32_t out[4]) {
    const uint32_t ctr[4] = {(uint32_t)counter, (uint32_t)(counter >> 32), 0, 0};
    const uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    gaio_philox4x32_10(ctr, key, out);
}

static uint32_t ref_word(uint64_t seed, uint64_t offset, uint64_t i) {
    uint32_t out[4];
    ref_block(seed, offset + i / 4, out);
    return out[i % 4];
}

static uint64_t ceil4(uint64_t n) { return n / 4 + (n % 4 != 0); }

/* The kinds a fill may write (device code reaches them on every backend). */
static const gaio_mem_kind FILL_KINDS[3] = {GAIO_MEM_DEVICE, GAIO_MEM_PINNED, GAIO_MEM_MANAGED};

static void expect_state(gaio_context *ctx, uint64_t seed, uint64_t offset) {
    uint64_t s, o;
    OK(gaio_rng_get_state(ctx, &s, &o));
    if (s != seed || o != offset) {
        fprintf(stderr, "rng state (0x%016" PRIx64 ", %" PRIu64 "), expected (0x%016" PRIx64 ", %" PRIu64 ")\n", s,
                o, seed, offset);
        exit(1);
    }
}

/* Reads n 4-byte words at byte offset off of any buffer. */
static void read_words(gaio_context *ctx, gaio_stream *s, gaio_buffer *buf, size_t off, size_t n, void *out) {
    gaio_mem_kind k;
    OK(gaio_buffer_kind(buf, &k));
    if (k != GAIO_MEM_DEVICE) {
        OK(gaio_stream_synchronize(s));
        memcpy(out, (char *)host_ptr(buf) + off, n * 4);
        return;
    }
    gaio_buffer *stage;
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_HOST, n * 4, &stage));
    OK(gaio_memcpy_async(s, stage, 0, buf, off, n * 4));
    OK(gaio_stream_synchronize(s));
    memcpy(out, host_ptr(stage), n * 4);
    OK(gaio_buffer_release(stage));
}

/* ---- raw bits ---- */

static void test_bits(int device, uint64_t *rng) {
    uint64_t seed = rand_u64_both_halves(rng);
    gaio_context_options opt = {.rng_seed = seed};
    gaio_context *ctx;
    OK(gaio_context_create(device, &opt, &ctx));
    gaio_stream *s;
    OK(gaio_stream_create(ctx, 0, 0, &s));
    expect_state(ctx, seed, 0);

    /* HOST (pageable) memory is no fill destination, on any backend: refused before
     * any counter is reserved. (test_bad_input covers every fill.) */
    {
        gaio_buffer *pageable;
        OK(gaio_buffer_alloc(ctx, GAIO_MEM_HOST, 64, &pageable));
        FAILS(GAIO_ERR_INVALID_ARG, gaio_rng_bits_u32(s, pageable, 0, 16), "gaio_rng_bits_u32");
        CHECK(strstr(gaio_last_error(), "HOST (pageable)") != NULL);
        expect_state(ctx, seed, 0);
        OK(gaio_buffer_release(pageable));
    }

    for (int iter = 0; iter < 12; iter++) {
        /* Offsets where the counter's low word carries into its high word mid-fill,
         * and offsets anywhere in 64 bits. */
        uint64_t offset = iter % 2 ? 0xffffffffu - rand_range(rng, 0, 40) : rand_u64_both_halves(rng);
        if (iter == 0) offset = 0;
        size_t count = rand_range(rng, 1, 3000);
        if (iter < 4) count = (size_t)iter + 1; /* shorter than one block */
        size_t pad = 4 * rand_range(rng, 0, 16);
        size_t size = pad + count * 4 + 64;
        gaio_mem_kind kind = FILL_KINDS[iter % 3];
        gaio_buffer *dst;
        OK(gaio_buffer_alloc(ctx, kind, size, &dst));
        OK(gaio_memset_async(s, dst, 0, 0xC3, size));
        OK(gaio_rng_set_state(ctx, seed, offset));
        expect_state(ctx, seed, offset);
        OK(gaio_rng_bits_u32(s, dst, pad, count));
        expect_state(ctx, seed, offset + ceil4(count)); /* advanced at submission */

        unsigned char *got = malloc(size);
        CHECK(got != NULL);
        read_words(ctx, s, dst, 0, size / 4, got);
        for (size_t i = 0; i < pad; i++) CHECK(got[i] == 0xC3);
        for (size_t i = 0; i < count; i++) {
            uint32_t w, want = ref_word(seed, offset, i);
            memcpy(&w, got + pad + i * 4, 4);
            if (w != want) {
                fprintf(stderr, "bits: seed 0x%016" PRIx64 " offset %" PRIu64 " element %zu of %zu: 0x%08x, expected 0x%08x\n",
                        seed, offset, i, count, w, want);
                exit(1);
            }
        }
        for (size_t i = pad + count * 4; i < size; i++) CHECK(got[i] == 0xC3);
        free(got);
        OK(gaio_buffer_release(dst));
    }

    /* Back to back fills take consecutive counters: the second starts at the
     * block after the last one the first touched, even a partial one. */
    {
        uint64_t offset = rand_u64_both_halves(rng);
        size_t n1 = 4 * rand_range(rng, 1, 200) + rand_range(rng, 1, 3), n2 = rand_range(rng, 1, 500);
        gaio_buffer *dst;
        OK(gaio_buffer_alloc(ctx, GAIO_MEM_PINNED, (n1 + n2) * 4, &dst));
        OK(gaio_rng_set_state(ctx, seed, offset));
        OK(gaio_rng_bits_u32(s, dst, 0, n1));
        OK(gaio_rng_bits_u32(s, dst, n1 * 4, n2));
        expect_state(ctx, seed, offset + ceil4(n1) + ceil4(n2));
        OK(gaio_stream_synchronize(s));
        const uint32_t *w = host_ptr(dst);
        for (size_t i = 0; i < n1; i++) CHECK(w[i] == ref_word(seed, offset, i));
        for (size_t i = 0; i < n2; i++) CHECK(w[n1 + i] == ref_word(seed, offset + ceil4(n1), i));
        OK(gaio_buffer_release(dst));
    }

    /* Fills from two streams of one context take their counters in submission order. */
    {
        gaio_stream *s2;
        OK(gaio_stream_create(ctx, 1, 0, &s2));
        uint64_t offset = rand_u64_both_halves(rng);
        size_t n1 = rand_range(rng, 1, 4000), n2 = rand_range(rng, 1, 4000);
        gaio_buffer *a, *b;
        OK(gaio_buffer_alloc(ctx, GAIO_MEM_PINNED, n1 * 4, &a));
        OK(gaio_buffer_alloc(ctx, GAIO_MEM_MANAGED, n2 * 4, &b));
        OK(gaio_rng_set_state(ctx, seed, offset));
        OK(gaio_rng_bits_u32(s, a, 0, n1));
        OK(gaio_rng_bits_u32(s2, b, 0, n2));
        OK(gaio_context_synchronize(ctx));
        const uint32_t *wa = host_ptr(a), *wb = host_ptr(b);
        for (size_t i = 0; i < n1; i++) CHECK(wa[i] == ref_word(seed, offset, i));
        for (size_t i = 0; i < n2; i++) CHECK(wb[i] == ref_word(seed, offset + ceil4(n1), i));
        OK(gaio_buffer_release(a));
        OK(gaio_buffer_release(b));
        OK(gaio_stream_release(s2));
    }

    /* The offset advances by ceil(count / 4) for every kind of fill. */
    {
        gaio_buffer *dst;
        OK(gaio_buffer_alloc(ctx, GAIO_MEM_DEVICE, 64 * 4, &dst));
        uint64_t offset = rand_u64_both_halves(rng);
        OK(gaio_rng_set_state(ctx, seed, offset));
        for (size_t count = 1; count <= 64; count++) {
            switch (count % 3) {
            case 0: OK(gaio_rng_bits_u32(s, dst, 0, count)); break;
            case 1: OK(gaio_rng_uniform_f32(s, dst, 0, count, -1.0f, 1.0f)); break;
            default: OK(gaio_rng_normal_f32(s, dst, 0, count, 0.0f, 1.0f)); break;
            }
            offset += (count + 3) / 4;
            expect_state(ctx, seed, offset);
        }
        OK(gaio_stream_synchronize(s));
        OK(gaio_buffer_release(dst));
    }

    /* The offset wraps around at 2^64 like the counter it stands for. */
    {
        uint64_t offset = UINT64_MAX - 1;
        gaio_buffer *dst;
        size_t count = 16;
        OK(gaio_buffer_alloc(ctx, GAIO_MEM_MANAGED, count * 4, &dst));
        OK(gaio_rng_set_state(ctx, seed, offset));
        OK(gaio_rng_bits_u32(s, dst, 0, count));
        expect_state(ctx, seed, offset + 4); /* = 2 */
        OK(gaio_stream_synchronize(s));
        const uint32_t *w = host_ptr(dst);
        for (size_t i = 0; i < count; i++) CHECK(w[i] == ref_word(seed, offset, i));
        OK(gaio_buffer_release(dst));
    }

    /* get_state with one of its outputs left out. */
    {
        uint64_t seed2 = test_rand(rng), off2 = test_rand(rng), got = 0;
        OK(gaio_rng_set_state(ctx, seed2, off2));
        OK(gaio_rng_get_state(ctx, &got, NULL));
        CHECK(got == seed2);
        OK(gaio_rng_get_state(ctx, NULL, &got));
        CHECK(got == off2);
    }

    OK(gaio_stream_release(s));
    OK(gaio_context_release(ctx));
}

/* ---- the same (seed, offset) gives the same numbers ---- */

typedef enum fill_kind { FILL_BITS, FILL_UNIFORM, FILL_NORMAL } fill_kind;

static void fill(gaio_stream *s, fill_kind fk, gaio_buffer *dst, size_t off_bytes, size_t count, float p0, float p1) {
    switch (fk) {
    case FILL_BITS: OK(gaio_rng_bits_u32(s, dst, off_bytes, count)); break;
    case FILL_UNIFORM: OK(gaio_rng_uniform_f32(s, dst, off_bytes, count, p0, p1)); break;
    case FILL_NORMAL: OK(gaio_rng_normal_f32(s, dst, off_bytes, count, p0, p1)); break;
    }
}

static void test_reproducible(int device, uint64_t *rng) {
    gaio_context *c1, *c2;
    OK(gaio_context_create(device, NULL, &c1));
    OK(gaio_context_create(device, NULL, &c2));
    gaio_stream *s1, *s2;
    OK(gaio_context_default_stream(c1, &s1));
    OK(gaio_stream_create(c2, 0, 0, &s2));
    for (int fk = FILL_BITS; fk <= FILL_NORMAL; fk++) {
        for (int iter = 0; iter < 4; iter++) {
            uint64_t seed = rand_u64_both_halves(rng), offset = rand_u64_both_halves(rng);
            size_t count = rand_range(rng, 8, 20000);
            size_t split = 4 * rand_range(rng, 1, (count - 1) / 4); /* a multiple of 4 inside the fill */
            float p0 = fk == FILL_UNIFORM ? -3.5f : 1.25f, p1 = fk == FILL_UNIFORM ? 7.0f : 2.5f;
            gaio_buffer *a, *b, *c;
            OK(gaio_buffer_alloc(c1, GAIO_MEM_DEVICE, count * 4, &a));
            OK(gaio_buffer_alloc(c2, GAIO_MEM_DEVICE, count * 4, &b));
            OK(gaio_buffer_alloc(c1, GAIO_MEM_PINNED, count * 4, &c));
            OK(gaio_rng_set_state(c1, seed, offset));
            OK(gaio_rng_set_state(c2, seed, offset));
            fill(s1, fk, a, 0, count, p0, p1);
            fill(s2, fk, b, 0, count, p0, p1);
            /* The same again in two calls, split at a block boundary. */
            OK(gaio_rng_set_state(c1, seed, offset));
            fill(s1, fk, c, 0, split, p0, p1);
            fill(s1, fk, c, split * 4, count - split, p0, p1);
            expect_state(c1, seed, offset + ceil4(count));
            expect_state(c2, seed, offset + ceil4(count));
            unsigned char *ga = malloc(count * 4), *gb = malloc(count * 4), *gc = malloc(count * 4);
            CHECK(ga && gb && gc);
            read_words(c1, s1, a, 0, count, ga);
            read_words(c2, s2, b, 0, count, gb);
            read_words(c1, s1, c, 0, count, gc);
            CHECK(memcmp(ga, gb, count * 4) == 0); /* two contexts */
            CHECK(memcmp(ga, gc, count * 4) == 0); /* one call or two */
            if (fk == FILL_BITS)
                for (size_t i = 0; i < count; i++) {
                    uint32_t w;
                    memcpy(&w, ga + i * 4, 4);
                    CHECK(w == ref_word(seed, offset, i));
                }
            /* A different seed gives different numbers. */
            OK(gaio_rng_set_state(c2, seed ^ 0x100000000ull, offset));
            fill(s2, fk, b, 0, count, p0, p1);
            read_words(c2, s2, b, 0, count, gb);
            size_t same = 0;
            for (size_t i = 0; i < count; i++) same += memcmp(ga + i * 4, gb + i * 4, 4) == 0;
            CHECK(same < count / 4 + 1);
            free(ga);
            free(gb);
            free(gc);
            OK(gaio_buffer_release(a));
            OK(gaio_buffer_release(b));
            OK(gaio_buffer_release(c));
        }
    }
    OK(gaio_stream_release(s2));
    OK(gaio_context_release(c1));
    OK(gaio_context_release(c2));
}

/* ---- every backend gives the host's numbers ---- */

/* Parameters for fill kind fk, iteration iter: ordinary intervals, intervals a few
 * floats wide (where low + span * u rounds up to high and takes the float below),
 * and intervals near the largest floats; normal numbers around various means. */
static void fill_params(fill_kind fk, int iter, uint64_t *rng, float *p0, float *p1) {
    *p0 = *p1 = 0.0f;
    if (fk == FILL_UNIFORM) {
        switch (iter % 4) {
        case 0:
            *p0 = (float)((double)(int64_t)(test_rand(rng) % 2000001 - 1000000) / 1000.0);
            *p1 = *p0 + (float)(0.5 + (double)(test_rand(rng) % 100000) / 1000.0);
            break;
        case 1: {
            *p0 = ldexpf(1.0f, (int)(test_rand(rng) % 60) - 30);
            if (test_rand(rng) % 2) *p0 = -*p0;
            *p1 = *p0;
            for (int u = 0, n = 1 + (int)(test_rand(rng) % 3); u < n; u++) *p1 = nextafterf(*p1, INFINITY);
            break;
        }
        case 2: *p0 = -1.0e38f, *p1 = 1.5e38f; break;
        default: *p0 = -3.5f, *p1 = 7.0f; break;
        }
    } else if (fk == FILL_NORMAL) {
        *p0 = (float)((double)(int64_t)(test_rand(rng) % 20001 - 10000) / 100.0);
        *p1 = (float)(0.1 + (double)(test_rand(rng) % 1000) / 100.0);
        if (iter % 4 == 0) *p0 = 0.0f, *p1 = 1.0f;
        if (iter % 4 == 3) *p1 = 0.0f; /* every number is the mean */
    }
}

/* The fills of `device` against those of the host backend (device 0) at the same
 * (seed, offset): raw bits and uniform numbers bit for bit; normal numbers within
 * a small relative tolerance, since a GPU's logf, sinf and cosf differ from the
 * host's by a few ulp (and it may fuse mean + stddev * z into one fma). On the host
 * this compares two host contexts, which agree exactly. */
static void test_matches_host(int device, uint64_t *rng) {
    gaio_device_props props;
    OK(gaio_device_get_props(device, &props));
    gaio_context *dc, *hc;
    OK(gaio_context_create(device, NULL, &dc));
    OK(gaio_context_create(0, NULL, &hc));
    gaio_stream *ds, *hs;
    OK(gaio_stream_create(dc, 0, 0, &ds));
    OK(gaio_context_default_stream(hc, &hs));
    double worst_normal = 0.0; /* largest |device - host| / (|mean| + |host - mean|) seen */
    for (int fk = FILL_BITS; fk <= FILL_NORMAL; fk++) {
        for (int iter = 0; iter < 8; iter++) {
            uint64_t seed = rand_u64_both_halves(rng), offset = rand_u64_both_halves(rng);
            if (iter == 1) offset = 0xffffffffu - rand_range(rng, 0, 40); /* the counter's low word carries */
            if (iter == 2) offset = UINT64_MAX - rand_range(rng, 0, 40);  /* the counter wraps */
            size_t count = rand_range(rng, 8, 100000);
            if (iter == 0) count = rand_range(rng, 1, 7);                   /* part of one block */
            if (iter == 5) count = rand_range(rng, (size_t)1 << 20, (size_t)3 << 20); /* thousands of thread blocks */
            size_t pad = 4 * rand_range(rng, 0, 8), size = pad + count * 4;
            float p0, p1;
            fill_params((fill_kind)fk, iter, rng, &p0, &p1);

            gaio_buffer *dbuf, *hbuf;
            OK(gaio_buffer_alloc(dc, FILL_KINDS[iter % 3], size, &dbuf));
            OK(gaio_buffer_alloc(hc, GAIO_MEM_PINNED, size, &hbuf));
            OK(gaio_rng_set_state(dc, seed, offset));
            OK(gaio_rng_set_state(hc, seed, offset));
            fill(ds, (fill_kind)fk, dbuf, pad, count, p0, p1);
            fill(hs, (fill_kind)fk, hbuf, pad, count, p0, p1);
            expect_state(dc, seed, offset + ceil4(count));
            uint32_t *got = malloc(count * 4), *want = malloc(count * 4);
            CHECK(got && want);
            read_words(dc, ds, dbuf, pad, count, got);
            read_words(hc, hs, hbuf, pad, count, want);
            for (size_t i = 0; i < count; i++) {
                if (fk == FILL_BITS) CHECK(want[i] == ref_word(seed, offset, i));
                if (fk != FILL_NORMAL || p1 == 0.0f || props.kind == GAIO_DEVICE_HOST) {
                    if (got[i] != want[i]) {
                        float g, w;
                        memcpy(&g, &got[i], 4);
                        memcpy(&w, &want[i], 4);
                        fprintf(stderr,
                                "fill %d (%.9g, %.9g) seed 0x%016" PRIx64 " offset %" PRIu64 " element %zu of %zu: "
                                "0x%08x (%.9g) on device %d, 0x%08x (%.9g) on the host\n",
                                fk, (double)p0, (double)p1, seed, offset, i, count, got[i], (double)g, device,
                                want[i], (double)w);
                        exit(1);
                    }
                    continue;
                }
                float g, w;
                memcpy(&g, &got[i], 4);
                memcpy(&w, &want[i], 4);
                CHECK(isfinite(g));
                double scale = fabs((double)p0) + fabs((double)w - p0), err = fabs((double)g - w);
                double tol = 1e-5 * scale + 1e-6 * p1;
                if (scale > 0 && err / scale > worst_normal) worst_normal = err / scale;
                if (err > tol) {
                    fprintf(stderr,
                            "normal (%.9g, %.9g) seed 0x%016" PRIx64 " offset %" PRIu64 " element %zu of %zu: "
                            "%.9g on device %d, %.9g on the host (tolerance %.3g)\n",
                            (double)p0, (double)p1, seed, offset, i, count, (double)g, device, (double)w, tol);
                    exit(1);
                }
            }
            free(got);
            free(want);
            OK(gaio_buffer_release(dbuf));
            OK(gaio_buffer_release(hbuf));
        }
    }
    printf("normal fills: largest relative difference from the host %.3g\n", worst_normal);
    OK(gaio_stream_release(ds));
    OK(gaio_context_release(dc));
    OK(gaio_context_release(hc));
}

/* ---- distributions ---- */

#define NSAMPLES (1u << 20)
#define SIGMAS 6.0 /* tolerance in standard errors: a false alarm about once in 10^9 runs */

static void check_close(double got, double want, double se, const char *what) {
    if (fabs(got - want) > SIGMAS * se) {
        fprintf(stderr, "%s: %.9g, expected %.9g +- %.3g (%g standard errors)\n", what, got, want, SIGMAS * se,
                fabs(got - want) / se);
        exit(1);
    }
}

static void test_uniform(gaio_context *ctx, gaio_stream *s, uint64_t *rng) {
    gaio_buffer *buf;
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_MANAGED, NSAMPLES * 4, &buf));
    for (int iter = 0; iter < 3; iter++) {
        float low = (float)((double)(test_rand(rng) % 2000) / 10.0 - 100.0);
        float high = low + (float)(0.5 + (double)(test_rand(rng) % 1000) / 10.0);
        if (iter == 0) low = 0.0f, high = 1.0f;
        OK(gaio_rng_set_state(ctx, test_rand(rng), test_rand(rng)));
        OK(gaio_rng_uniform_f32(s, buf, 0, NSAMPLES, low, high));
        OK(gaio_stream_synchronize(s));
        const float *v = host_ptr(buf);
        enum { BINS = 16 };
        uint32_t hist[BINS] = {0};
        double sum = 0, sum2 = 0;
        for (uint32_t i = 0; i < NSAMPLES; i++) {
            if (!(v[i] >= low && v[i] < high)) {
                fprintf(stderr, "uniform [%.9g, %.9g): element %u is %.9g\n", (double)low, (double)high, i,
                        (double)v[i]);
                exit(1);
            }
            double x = ((double)v[i] - low) / ((double)high - low); /* [0, 1) */
            sum += x;
            sum2 += x * x;
            int bin = (int)(x * BINS);
            hist[bin < BINS ? bin : BINS - 1]++;
        }
        /* On [0, 1): mean 1/2, variance 1/12, fourth central moment 1/80. */
        double n = NSAMPLES, mean = sum / n, var = sum2 / n - mean * mean;
        check_close(mean, 0.5, sqrt(1.0 / 12.0 / n), "uniform mean (scaled to [0, 1))");
        check_close(var, 1.0 / 12.0, sqrt((1.0 / 80.0 - 1.0 / 144.0) / n), "uniform variance (scaled to [0, 1))");
        double p = 1.0 / BINS;
        for (int b = 0; b < BINS; b++) check_close(hist[b], n * p, sqrt(n * p * (1 - p)), "uniform histogram bin");
    }
    OK(gaio_buffer_release(buf));

    /* Intervals a few floats wide: every number stays below high. [x, next(x)) holds one float, x. */
    gaio_buffer *small;
    const size_t count = 4096;
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_PINNED, count * 4, &small));
    for (int iter = 0; iter < 40; iter++) {
        float low = (float)((double)(int64_t)(test_rand(rng) % 2000001 - 1000000) / 1000.0);
        if (iter % 4 == 0) low = ldexpf(1.0f, (int)(test_rand(rng) % 60) - 30); /* a power of two */
        float high = low;
        int ulps = 1 + iter % 3;
        for (int u = 0; u < ulps; u++) high = nextafterf(high, INFINITY);
        OK(gaio_rng_uniform_f32(s, small, 0, count, low, high));
        OK(gaio_stream_synchronize(s));
        const float *v = host_ptr(small);
        for (size_t i = 0; i < count; i++) {
            if (!(v[i] >= low && v[i] < high)) {
                fprintf(stderr, "uniform [%.9g, %.9g) (%d ulp): element %zu is %.9g\n", (double)low, (double)high,
                        ulps, i, (double)v[i]);
                exit(1);
            }
        }
    }
    OK(gaio_buffer_release(small));
}

static void test_normal(gaio_context *ctx, gaio_stream *s, uint64_t *rng) {
    gaio_buffer *buf;
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_PINNED, NSAMPLES * 4, &buf));
    for (int iter = 0; iter < 3; iter++) {
        float mean = (float)((double)(int64_t)(test_rand(rng) % 20001 - 10000) / 100.0);
        float sd = (float)(0.1 + (double)(test_rand(rng) % 1000) / 100.0);
        if (iter == 0) mean = 0.0f, sd = 1.0f;
        OK(gaio_rng_set_state(ctx, test_rand(rng), test_rand(rng)));
        OK(gaio_rng_normal_f32(s, buf, 0, NSAMPLES, mean, sd));
        OK(gaio_stream_synchronize(s));
        const float *v = host_ptr(buf);
        double sum = 0, sum2 = 0, sum4 = 0;
        uint32_t within1 = 0, within2 = 0;
        for (uint32_t i = 0; i < NSAMPLES; i++) {
            CHECK(isfinite(v[i]));
            double z = ((double)v[i] - mean) / sd;
            sum += z;
            sum2 += z * z;
            sum4 += z * z * z * z;
            within1 += fabs(z) < 1.0;
            within2 += fabs(z) < 2.0;
        }
        double n = NSAMPLES, m = sum / n, var = sum2 / n - m * m;
        check_close(m, 0.0, 1.0 / sqrt(n), "normal mean (standardized)");
        check_close(var, 1.0, sqrt(2.0 / n), "normal variance (standardized)");
        check_close(sum4 / n, 3.0, sqrt(96.0 / n), "normal fourth moment (standardized)");
        const double p1 = 0.682689492137086, p2 = 0.954499736103642;
        check_close(within1, n * p1, sqrt(n * p1 * (1 - p1)), "normal: samples within 1 stddev");
        check_close(within2, n * p2, sqrt(n * p2 * (1 - p2)), "normal: samples within 2 stddev");
    }
    /* stddev 0: every number is the mean. */
    float mean = (float)((double)(test_rand(rng) % 1000) / 7.0);
    OK(gaio_rng_normal_f32(s, buf, 0, 1001, mean, 0.0f));
    OK(gaio_stream_synchronize(s));
    const float *v = host_ptr(buf);
    for (int i = 0; i < 1001; i++) CHECK(v[i] == mean);
    OK(gaio_buffer_release(buf));
}

static void run(int device) {
    uint64_t rng = test_seed();
    test_known_answers();
    test_bits(device, &rng);
    test_reproducible(device, &rng);
    test_matches_host(device, &rng);

    gaio_context *ctx;
    OK(gaio_context_create(device, NULL, &ctx));
    gaio_stream *s;
    OK(gaio_stream_create(ctx, 0, 0, &s));
    test_uniform(ctx, s, &rng);
    test_normal(ctx, s, &rng);
    OK(gaio_stream_release(s));
    OK(gaio_context_release(ctx));

    /* The generator writes nothing where its arguments are NULL (and does not crash). */
    uint32_t ctr[4] = {1, 2, 3, 4}, key[2] = {5, 6}, out[4] = {7, 7, 7, 7};
    gaio_philox4x32_10(NULL, key, out);
    gaio_philox4x32_10(ctr, NULL, out);
    gaio_philox4x32_10(ctr, key, NULL);
    CHECK(out[0] == 7 && out[1] == 7 && out[2] == 7 && out[3] == 7);
}
