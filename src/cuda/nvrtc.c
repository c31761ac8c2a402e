/* CUDA C++ to PTX or cubin at run time through NVRTC, opened with dlopen. */
#include <nvrtc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dynlib.h"
#include "cuda/cuda_internal.h"

#define NVRTC_FUNCTIONS(X)                                                                                   \
    X(nvrtcGetErrorString) X(nvrtcCreateProgram) X(nvrtcCompileProgram) X(nvrtcDestroyProgram)              \
    X(nvrtcGetProgramLogSize) X(nvrtcGetProgramLog) X(nvrtcGetPTXSize) X(nvrtcGetPTX) X(nvrtcGetCUBINSize)   \
    X(nvrtcGetCUBIN)

static struct {
#define NVRTC_FIELD(name) __typeof__(&name) name;
    NVRTC_FUNCTIONS(NVRTC_FIELD)
#undef NVRTC_FIELD
} rtc;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static char missing[GAIO_MSG_MAX - 24]; /* why NVRTC cannot be used (a message has "fn: " before it) */

static void load(void) {
    static const char *const names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so", NULL};
    gaio__dynlib lib;
    if (!gaio__dynlib_open(&lib, &(gaio__dynlib_search){.names = names})) {
        snprintf(missing, sizeof missing, "NVRTC is not installed (dlopen libnvrtc.so.13/.12 failed: %.400s)",
                 lib.why);
        return;
    }
    static const gaio__dynsym syms[] = {
#define NVRTC_SYM(name) {#name, &rtc.name, true},
        NVRTC_FUNCTIONS(NVRTC_SYM)
#undef NVRTC_SYM
    };
    if (!gaio__dynlib_resolve(&lib, syms, sizeof syms / sizeof syms[0]))
        snprintf(missing, sizeof missing, "libnvrtc lacks %s", lib.missing);
}

/* -arch=compute_XX for the oldest GPU present, so one PTX image JITs on every device. */
static void default_arch(char *out, size_t size) {
    int lowest = 0;
    int n = 0;
    gaio_device_count(&n);
    for (int d = 0; d < n; d++) {
        gaio_device_props p;
        if (gaio_device_get_props(d, &p) != GAIO_OK || p.kind != GAIO_DEVICE_CUDA) continue;
        int cc = p.compute_major * 10 + p.compute_minor;
        if (!lowest || cc < lowest) lowest = cc;
    }
    snprintf(out, size, "-arch=compute_%d", lowest ? lowest : 75);
}

static bool has_arch(const char *const *options, size_t n, bool *real) {
    for (size_t i = 0; i < n; i++) {
        const char *o = options[i], *v = NULL;
        if (!strncmp(o, "-arch=", 6)) v = o + 6;
        else if (!strncmp(o, "--gpu-architecture=", 19)) v = o + 19;
        if (v) {
            *real = !strncmp(v, "sm_", 3);
            return true;
        }
    }
    return false;
}

gaio_status gaio__cuda_lib_compile(const char *fn, const char *source, const char *name, const char *const *options,
                                   size_t noptions, char *log, size_t log_size, void **image) {
    pthread_once(&once, load);
    if (missing[0]) return gaio__fail(GAIO_ERR_DRIVER, fn, "%s", missing);
    bool real = false;
    char arch[32];
    const char **opts = calloc(noptions + 1, sizeof *opts);
    if (!opts) return GAIO_FAIL(GAIO_ERR_NO_MEMORY, "out of host memory");
    size_t n = 0;
    for (size_t i = 0; i < noptions; i++) opts[n++] = options[i];
    if (!has_arch(options, noptions, &real)) {
        default_arch(arch, sizeof arch);
        opts[n++] = arch;
    }
    nvrtcProgram prog;
    nvrtcResult r = rtc.nvrtcCreateProgram(&prog, source, name, 0, NULL, NULL);
    if (r != NVRTC_SUCCESS) {
        free(opts);
        return gaio__fail(GAIO_ERR_DRIVER, fn, "nvrtcCreateProgram failed: %s", rtc.nvrtcGetErrorString(r));
    }
    nvrtcResult cr = rtc.nvrtcCompileProgram(prog, (int)n, opts);
    free(opts);
    size_t log_len = 0;
    char *full = NULL;
    if (rtc.nvrtcGetProgramLogSize(prog, &log_len) == NVRTC_SUCCESS && log_len > 1 && (full = malloc(log_len))) {
        if (rtc.nvrtcGetProgramLog(prog, full) != NVRTC_SUCCESS) full[0] = '\0';
        if (log) snprintf(log, log_size, "%s", full);
    }
    gaio_status st = GAIO_OK;
    if (cr != NVRTC_SUCCESS) {
        st = gaio__fail(GAIO_ERR_INVALID_ARG, fn, "NVRTC could not compile '%s' (%s): %s", name,
                        rtc.nvrtcGetErrorString(cr), full ? full : "no log");
    } else {
        size_t size = 0;
        r = real ? rtc.nvrtcGetCUBINSize(prog, &size) : rtc.nvrtcGetPTXSize(prog, &size);
        char *out = r == NVRTC_SUCCESS ? malloc(size) : NULL;
        if (out) r = real ? rtc.nvrtcGetCUBIN(prog, out) : rtc.nvrtcGetPTX(prog, out);
        if (!out || r != NVRTC_SUCCESS) {
            free(out);
            st = out ? gaio__fail(GAIO_ERR_DRIVER, fn, "nvrtcGet%s failed: %s", real ? "CUBIN" : "PTX",
                                  rtc.nvrtcGetErrorString(r))
                     : GAIO_FAIL(GAIO_ERR_NO_MEMORY, "out of host memory for the compiled image");
        } else {
            *image = out;
        }
    }
    free(full);
    rtc.nvrtcDestroyProgram(&prog);
    return st;
}
