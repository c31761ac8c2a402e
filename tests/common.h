/* Test harness: every test file defines run(device) and gets a main that runs it
 * on the devices chosen on the command line:
 *   --host   device 0 only (the default)
 *   --gpu    every CUDA device; where there is none it prints "SKIPPED: no CUDA device
 *            ..." and exits 77 (ctest's SKIP_RETURN_CODE), or, when the environment sets
 *            GAIO_REQUIRE_GPU=1 (scripts/gpu-check does), says why and fails (exit 1)
 * Checks print file:line, the expression, and gaio's last error, then exit 1.
 * A test that cannot run here calls test_skip(): a line "SKIPPED: why", then exit 77 at
 * once, so that nothing after it (a later check, the leak check) can fail unseen. */
#ifndef GAIO_TEST_COMMON_H
#define GAIO_TEST_COMMON_H

#include <gaio/gaio.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(cond)                                                                                   \
    do {                                                                                              \
        if (!(cond)) {                                                                                \
            fprintf(stderr, "%s:%d: CHECK failed: %s (last error: %s)\n", __FILE__, __LINE__, #cond, \
                    gaio_last_error());                                                               \
            exit(1);                                                                                  \
        }                                                                                             \
    } while (0)

/* The call must return GAIO_OK. */
#define OK(call)                                                                                              \
    do {                                                                                                      \
        gaio_status st_ = (call);                                                                             \
        if (st_ != GAIO_OK) {                                                                                 \
            fprintf(stderr, "%s:%d: %s returned %s: %s\n", __FILE__, __LINE__, #call, gaio_status_string(st_), \
                    gaio_last_error());                                                                       \
            exit(1);                                                                                          \
        }                                                                                                     \
    } while (0)

/* The call must fail with `want` and leave a message naming the function. */
#define FAILS(want, call, fn_name)                                                                            \
    do {                                                                                                      \
        gaio_status st_ = (call);                                                                             \
        if (st_ != (want)) {                                                                                  \
            fprintf(stderr, "%s:%d: %s returned %s, expected %s (%s)\n", __FILE__, __LINE__, #call,           \
                    gaio_status_string(st_), gaio_status_string(want), gaio_last_error());                    \
            exit(1);                                                                                          \
        }                                                                                                     \
        if (strstr(gaio_last_error(), fn_name) == NULL) {                                                     \
            fprintf(stderr, "%s:%d: %s: message does not name %s: '%s'\n", __FILE__, __LINE__, #call, fn_name, \
                    gaio_last_error());                                                                       \
            exit(1);                                                                                          \
        }                                                                                                     \
    } while (0)

/* The exit status of a skipped test: ctest's SKIP_RETURN_CODE (tests/CMakeLists.txt). */
#define TEST_SKIP_CODE 77

/* Prints "SKIPPED: <why>" and exits with TEST_SKIP_CODE at once. */
static inline void test_skip(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static inline void test_skip(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("SKIPPED: ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    fflush(stdout);
    exit(TEST_SKIP_CODE);
}

/* Whether GAIO_REQUIRE_GPU is set (to anything but "" or "0"): on a GPU machine a
 * missing CUDA device is then a failure, not a skip. */
static inline int test_require_gpu(void) {
    const char *e = getenv("GAIO_REQUIRE_GPU");
    return e && *e && strcmp(e, "0") != 0;
}

/* No CUDA device in this process: skips the test, or fails it under GAIO_REQUIRE_GPU,
 * quoting why the CUDA backend did not start (gaio_backend_status: no libcuda.so.1, a
 * missing entry point, cuInit's error, or a build without it) and gaio's last error. */
static inline void test_no_cuda_device(void) __attribute__((noreturn));
static inline void test_no_cuda_device(void) {
    char last[512];
    snprintf(last, sizeof last, "%s", gaio_last_error()); /* before gaio_backend_status sets its own */
    const char *why = "";
    gaio_status st = gaio_backend_status(GAIO_DEVICE_CUDA, &why);
    char backend[768];
    snprintf(backend, sizeof backend, "CUDA backend: %s%s%s", st == GAIO_OK ? "" : gaio_status_string(st),
             st == GAIO_OK ? "" : ": ", why && *why ? why : "(no description)");
    if (test_require_gpu()) {
        fflush(stdout);
        fprintf(stderr, "FAILED: GAIO_REQUIRE_GPU=%s is set but gaio sees no CUDA device (%s%s%s)\n",
                getenv("GAIO_REQUIRE_GPU"), backend, *last ? "; last error: " : "", last);
        exit(1);
    }
    test_skip("no CUDA device in this process (%s)", backend);
}

/* xorshift64*: test inputs reproducible from the printed seed. */
static inline uint64_t test_rand(uint64_t *s) {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

/* A seed from GAIO_TEST_SEED or the clock, printed so a failure can be replayed. */
static inline uint64_t test_seed(void) {
    const char *env = getenv("GAIO_TEST_SEED");
    uint64_t s = env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL) * 2654435761u + (uint64_t)clock();
    if (s == 0) s = 1;
    printf("seed %" PRIu64 " (set GAIO_TEST_SEED to replay)\n", s);
    return s;
}

static inline void test_sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Releases everything, then checks that gaio shut down cleanly: every context
 * went away once its work finished (nothing leaked a reference). */
static inline void test_shutdown(void) {
    /* gaio_shutdown itself waits up to 1 s for work in flight to let go. */
    for (int i = 0; i < 10; i++) {
        if (gaio_shutdown() == GAIO_OK) return;
        fprintf(stderr, "gaio_shutdown: %s\n", gaio_last_error());
    }
    fprintf(stderr, "gaio_shutdown still fails after 10 s: a reference leaked\n");
    exit(1);
}

/* True when this process has a CUDA device. */
static inline int test_have_cuda(void) {
    int n = 0;
    OK(gaio_device_count(&n));
    for (int d = 0; d < n; d++) {
        gaio_device_props p;
        OK(gaio_device_get_props(d, &p));
        if (p.kind == GAIO_DEVICE_CUDA) return 1;
    }
    return 0;
}

/* Registers a test kernel for the host and, where CUDA devices exist, compiles its
 * CUDA twin from `cuda_source` (an extern "C" __global__ function of the same name and
 * arguments) with NVRTC, so one gaio_launch runs it on either backend. Returns a
 * reference to the kernel. */
static inline gaio_kernel *test_kernel(const char *name, gaio_host_kernel fn, size_t nargs, const size_t *arg_sizes,
                                       const char *cuda_source) {
    gaio_kernel *k = NULL;
    OK(gaio_kernel_register(name, fn, nargs, arg_sizes, &k));
    if (cuda_source && test_have_cuda()) {
        static const char *const opts[] = {"-std=c++17"};
        char log[8192];
        gaio_library *lib = NULL;
        gaio_status st = gaio_library_compile(cuda_source, name, opts, 1, log, sizeof log, &lib);
        if (st != GAIO_OK) {
            fprintf(stderr, "CUDA twin of kernel '%s' did not compile (%s):\n%s\n", name, gaio_status_string(st), log);
            exit(1);
        }
        gaio_kernel *same = NULL;
        OK(gaio_library_get_kernel(lib, name, &same));
        CHECK(same == k);
        OK(gaio_kernel_release(same));
        OK(gaio_library_release(lib)); /* the kernel keeps it loaded */
    }
    return k;
}

static void run(int device);

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0); /* progress survives a crash or a timeout */
    int gpu = argc > 1 && strcmp(argv[1], "--gpu") == 0;
    int count = 0;
    OK(gaio_device_count(&count));
    int ran = 0;
    for (int d = 0; d < count; d++) {
        gaio_device_props p;
        OK(gaio_device_get_props(d, &p));
        if ((p.kind == GAIO_DEVICE_CUDA) != gpu) continue;
        printf("== device %d: %s\n", d, p.name);
        fflush(stdout);
        run(d);
        ran++;
    }
    if (!ran) test_no_cuda_device(); /* exits: 77, or 1 under GAIO_REQUIRE_GPU */
    test_shutdown();
    printf("PASS\n");
    return 0;
}

#endif
