/* The arena placement of a model exec's activations (src/model/lifetime.c), checked
 * directly on random lifetimes (seed printed): no two values live at the same step
 * share a byte, offsets are aligned, the arena is no larger than all values laid end
 * to end and no smaller than the bytes live at the busiest step, and a chain whose
 * values die as the next is written (a network's layers) reuses memory. Host logic
 * only: --gpu prints SKIPPED and exits 77. */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model/lifetime.h"

#define CHECK(c)                                                                           \
    do {                                                                                   \
        if (!(c)) {                                                                        \
            fprintf(stderr, "%s:%d: CHECK failed: %s (seed %" PRIu64 ")\n", __FILE__, __LINE__, #c, seed); \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

static uint64_t seed, state;
static uint64_t next(void) { /* splitmix64 */
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static size_t up(size_t n, size_t a) { return (n + a - 1) / a * a; }

static void check_placement(const mlive *v, int32_t n, size_t align, size_t total, int32_t steps) {
    size_t sum = 0, peak = 0;
    for (int32_t i = 0; i < n; i++) {
        sum += up(v[i].bytes, align);
        if (!v[i].bytes) continue;
        CHECK(v[i].offset % align == 0);
        CHECK(v[i].offset + v[i].bytes <= total);
        for (int32_t j = 0; j < i; j++) {
            if (!v[j].bytes) continue;
            bool together = v[i].first <= v[j].last && v[j].first <= v[i].last;
            bool apart = v[i].offset + v[i].bytes <= v[j].offset || v[j].offset + v[j].bytes <= v[i].offset;
            CHECK(!together || apart);
        }
    }
    for (int32_t s = -1; s <= steps; s++) {
        size_t live = 0;
        for (int32_t i = 0; i < n; i++)
            if (v[i].bytes && v[i].first <= s && s <= v[i].last) live += v[i].bytes;
        if (live > peak) peak = live;
    }
    CHECK(total <= sum);
    CHECK(total >= peak);
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "--gpu")) {
        printf("SKIPPED: host logic only (the placement runs on the host for every device)\n");
        return 77;
    }
    const char *env = getenv("GAIO_TEST_SEED");
    seed = env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL) ^ ((uint64_t)clock() << 32);
    state = seed;
    printf("seed %" PRIu64 " (set GAIO_TEST_SEED to replay)\n", seed);

    /* Random lifetimes: sizes from 0 (no memory) to 1 MB, spans anywhere in 60 steps. */
    for (int round = 0; round < 200; round++) {
        int32_t n = 1 + (int32_t)(next() % 120), steps = 60;
        mlive v[120];
        memset(v, 0, sizeof v);
        for (int32_t i = 0; i < n; i++) {
            v[i].bytes = next() % 8 == 0 ? 0 : 1 + (size_t)(next() % (1u << 20));
            v[i].first = (int32_t)(next() % (uint64_t)(steps + 1)) - 1;
            v[i].last = v[i].first + (int32_t)(next() % 12);
        }
        size_t align = (size_t)1 << (next() % 9), total = 0;
        CHECK(gaio__place_by_lifetime(v, n, align, &total) == 0);
        check_placement(v, n, align, total, steps + 12);
    }

    /* A chain of 50 layers, each value read by the next step only: two buffers suffice. */
    mlive chain[50];
    memset(chain, 0, sizeof chain);
    for (int32_t i = 0; i < 50; i++) chain[i].bytes = 4096, chain[i].first = i, chain[i].last = i + 1;
    size_t total = 0;
    CHECK(gaio__place_by_lifetime(chain, 50, 256, &total) == 0);
    check_placement(chain, 50, 256, total, 51);
    CHECK(total == 2 * 4096);

    /* Nothing to place. */
    CHECK(gaio__place_by_lifetime(chain, 0, 256, &total) == 0 && total == 0);
    printf("PASS\n");
    return 0;
}
