/* oneDNN for the host convolution, opened with dlopen the first time an op needs it:
 * libgaio links no oneDNN. libdnnl.so.2 is the soname of oneDNN 2.x (Debian 12's
 * libdnnl2); the C API used (v2's operation descriptors) is that of 2.x, so 3.x's
 * libdnnl.so.3 is not tried.
 *
 * Debian's oneDNN runs its parallel work on OpenMP threads: a convolution that a gaio
 * worker submits is spread over oneDNN's own OpenMP team (as many threads as cores, the
 * calling worker among them), not over gaio's worker pool.
 *
 * That team sleeps on a futex between parallel regions unless libgomp is told to spin:
 * waking it at every convolution cost about 30 us a step on a 2-vCPU machine
 * (bench/host_overhead.py: MobileNetV2 at 32x32 2.0 -> 0.78 ms, at 224x224 7.9 -> 6.2 ms
 * spinning). libgomp throttles its spinning to 1000 rounds once it counts more threads
 * than cores (each gaio worker that ever ran a convolution is a team's master) unless
 * the wait policy is active, and reads its environment once, when it is loaded. So
 * before opening libdnnl, where the program has set neither OMP_WAIT_POLICY nor
 * GOMP_SPINCOUNT and libgomp is not loaded yet, gaio sets OMP_WAIT_POLICY=active with
 * GOMP_SPINCOUNT=300000: the team spins that many rounds (milliseconds) after a region,
 * then sleeps, so an idle process still costs no CPU. GAIO_ONEDNN_SPIN=0 leaves the
 * environment alone (openmp_wait).
 *
 * GAIO_DNN_NO_ONEDNN=1 (any value but empty or "0") makes gaio act as if oneDNN were not
 * installed: gaio__onednn_load fails as a missing library does, gaio__onednn_ready says
 * false and the host convolution takes its own path (conv_gemm.c). It is read on every
 * call, not once, so that a test can run the same process with and without oneDNN; while
 * it is set, libdnnl is not opened at all. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dynlib.h"
#include "dnn/cpu/onednn.h"

#define NO_ONEDNN_ENV "GAIO_DNN_NO_ONEDNN"

/* The value of GAIO_DNN_NO_ONEDNN when it switches oneDNN off, else NULL. */
static const char *switched_off(void) {
    const char *e = getenv(NO_ONEDNN_ENV);
    return e && *e && strcmp(e, "0") != 0 ? e : NULL;
}

static gaio_status off_fail(const char *fn, const char *value, const char **description) {
    if (description) *description = NULL;
    return gaio__fail(GAIO_ERR_DRIVER, fn ? fn : "gaio_dnn",
                      "oneDNN is switched off by " NO_ONEDNN_ENV "=%s (gaio acts as if it were not installed)", value);
}

#ifdef GAIO_HAVE_ONEDNN_H

gaio__dnnl_api gaio__dnnl;
dnnl_engine_t gaio__dnnl_engine;

static struct {
    gaio_status status;
    char reason[GAIO_MSG_MAX - 24]; /* why it failed (a message has "fn: " before it) */
    char description[128];          /* what was loaded */
} dnnl;

static pthread_once_t dnnl_once = PTHREAD_ONCE_INIT;

const char *gaio__dnnl_status_text(dnnl_status_t st) {
    switch (st) {
    case dnnl_success: return "success";
    case dnnl_out_of_memory: return "out_of_memory";
    case dnnl_invalid_arguments: return "invalid_arguments";
    case dnnl_unimplemented: return "unimplemented";
    case dnnl_iterator_ends: return "iterator_ends";
    case dnnl_runtime_error: return "runtime_error";
    case dnnl_not_required: return "not_required";
    }
    return "unknown status";
}

static const char *runtime_name(unsigned r) {
    switch (r) {
    case DNNL_RUNTIME_SEQ: return "sequential";
    case DNNL_RUNTIME_OMP: return "OMP";
    case DNNL_RUNTIME_TBB: return "TBB";
    case DNNL_RUNTIME_THREADPOOL: return "threadpool";
    }
    return "unknown";
}

/* The OpenMP team's wait between regions, set before libgomp loads (the file's head). */
static void openmp_wait(void) {
    const char *e = getenv("GAIO_ONEDNN_SPIN");
    if ((e && !strcmp(e, "0")) || getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT")) return;
    void *gomp = dlopen("libgomp.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (gomp) { /* loaded: it has read its environment already */
        dlclose(gomp);
        return;
    }
    setenv("OMP_WAIT_POLICY", "active", 0);
    setenv("GOMP_SPINCOUNT", "300000", 0);
}

static void load_once(void) {
    static const char *const names[] = {"libdnnl.so.2", NULL};
    openmp_wait();
    const char *const lib_name = names[0];
    gaio__dynlib lib;
    if (!gaio__dynlib_open(&lib, &(gaio__dynlib_search){.names = names})) {
        dnnl.status = GAIO_ERR_DRIVER;
        snprintf(dnnl.reason, sizeof dnnl.reason,
                 "oneDNN is not installed (dlopen %s: %.300s); "
                 "install the libdnnl2 package (apt-get install libdnnl2)",
                 lib_name, lib.why);
        return;
    }
    static gaio__dnnl_api api; /* the table fills it; gaio__dnnl once all is well */
    static const gaio__dynsym syms[] = {
#define SYM(n) {"dnnl_" #n, &api.n, true}
        SYM(version), SYM(engine_create), SYM(engine_destroy), SYM(stream_create), SYM(stream_destroy),
        SYM(stream_wait), SYM(memory_desc_init_by_strides), SYM(memory_desc_init_by_tag),
        SYM(memory_desc_get_size), SYM(memory_desc_equal), SYM(memory_create), SYM(memory_destroy),
        SYM(dilated_convolution_forward_desc_init), SYM(dilated_deconvolution_forward_desc_init),
        SYM(primitive_attr_create), SYM(primitive_attr_destroy),
        SYM(primitive_attr_set_scratchpad_mode), SYM(primitive_attr_set_post_ops), SYM(post_ops_create),
        SYM(post_ops_destroy), SYM(post_ops_append_sum), SYM(post_ops_append_eltwise),
        SYM(primitive_desc_create), SYM(primitive_desc_destroy), SYM(primitive_desc_query),
        SYM(primitive_desc_query_md), SYM(reorder_primitive_desc_create), SYM(primitive_create),
        SYM(primitive_destroy), SYM(primitive_execute),
#undef SYM
    };
    if (!gaio__dynlib_resolve(&lib, syms, sizeof syms / sizeof syms[0])) {
        dnnl.status = GAIO_ERR_DRIVER;
        snprintf(dnnl.reason, sizeof dnnl.reason,
                 "%s has no %s: not oneDNN 2.x (install the libdnnl2 package: apt-get install libdnnl2)",
                 lib_name, lib.missing);
        gaio__dynlib_close(&lib);
        return;
    }
    const dnnl_version_t *v = api.version();
    if (!v || v->major != 2) {
        dnnl.status = GAIO_ERR_DRIVER;
        snprintf(dnnl.reason, sizeof dnnl.reason, "%s is oneDNN %d.%d, gaio needs 2.x (the libdnnl2 package)",
                 lib_name, v ? v->major : 0, v ? v->minor : 0);
        gaio__dynlib_close(&lib);
        return;
    }
    dnnl_status_t st = api.engine_create(&gaio__dnnl_engine, dnnl_cpu, 0);
    if (st != dnnl_success) {
        dnnl.status = GAIO_ERR_DRIVER;
        snprintf(dnnl.reason, sizeof dnnl.reason, "dnnl_engine_create(cpu) failed: %s",
                 gaio__dnnl_status_text(st));
        gaio__dynlib_close(&lib);
        return;
    }
    gaio__dnnl = api;
    snprintf(dnnl.description, sizeof dnnl.description, "oneDNN %d.%d.%d (%s, cpu runtime %s)", v->major,
             v->minor, v->patch, lib_name, runtime_name(v->cpu_runtime));
    dnnl.status = GAIO_OK;
    /* lib and the engine stay for the life of the process. */
}

gaio_status gaio__onednn_load(const char *fn, const char **description) {
    const char *off = switched_off();
    if (off) return off_fail(fn, off, description);
    pthread_once(&dnnl_once, load_once);
    if (dnnl.status != GAIO_OK) {
        if (description) *description = NULL;
        return gaio__fail(dnnl.status, fn ? fn : "gaio_dnn", "%s", dnnl.reason);
    }
    if (description) *description = dnnl.description;
    return GAIO_OK;
}

bool gaio__onednn_ready(void) {
    if (switched_off()) return false;
    pthread_once(&dnnl_once, load_once);
    return dnnl.status == GAIO_OK;
}

#else

gaio_status gaio__onednn_load(const char *fn, const char **description) {
    const char *off = switched_off();
    if (off) return off_fail(fn, off, description);
    if (description) *description = NULL;
    return gaio__fail(GAIO_ERR_NOT_SUPPORTED, fn ? fn : "gaio_dnn",
                      "this libgaio was built without oneDNN's headers (libdnnl-dev)");
}

bool gaio__onednn_ready(void) { return false; }

#endif
