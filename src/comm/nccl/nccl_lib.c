/* Loading NCCL (libnccl.so.2) once, on first use; a failure is remembered with its
 * reason so that every later call reports it at once. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include "comm/nccl/nccl_api.h"
#include "core/dynlib.h"
#include "core/error.h"
#include "gaio/status.h"

#define NAME_OF(fn) #fn,
static const char *const syms[] = {GAIO_NCCL_FUNCTIONS(NAME_OF)};
#undef NAME_OF

static pthread_once_t once = PTHREAD_ONCE_INIT;
static gaio_nccl_table table;
static const gaio_nccl_table *_Atomic loaded;
static char why_not[GAIO_MSG_MAX];

static void load(void) {
    static const char *const names[] = {"libnccl.so.2", NULL};
    static const char *const dirs[] = {"/usr/local/cuda/lib64/", "/usr/local/cuda/lib/", NULL};
    gaio__dynlib lib;
    if (!gaio__dynlib_open(&lib, &(gaio__dynlib_search){.names = names, .dirs = dirs})) {
        snprintf(why_not, sizeof why_not, "cannot open libnccl.so.2 (%.300s); install NCCL 2", lib.why);
        return;
    }
    size_t n = sizeof syms / sizeof *syms;
    gaio__dynsym want[sizeof syms / sizeof *syms];
    for (size_t i = 0; i < n; i++) want[i] = (gaio__dynsym){syms[i], (void **)&table + i, true};
    if (!gaio__dynlib_resolve(&lib, want, n)) {
        snprintf(why_not, sizeof why_not, "%s: %.300s (NCCL older than 2.18?)", lib.file, lib.why);
        gaio__dynlib_close(&lib);
        return;
    }
    loaded = &table; /* never closed: communicators live until the process ends */
}

const gaio_nccl_table *gaio__nccl_if_loaded(void) { return loaded; }

const gaio_nccl_table *gaio__nccl(const char **why) {
    pthread_once(&once, load);
    if (!loaded && why) *why = why_not;
    return loaded;
}

int gaio__nccl_fail(const char *fn, const char *call, ncclResult_t r, ncclComm_t comm) {
    const gaio_nccl_table *n = loaded;
    const char *what = n ? n->ncclGetErrorString(r) : "?";
    const char *last = n && comm ? n->ncclGetLastError(comm) : "";
    gaio_status st = r == ncclInvalidArgument || r == ncclInvalidUsage ? GAIO_ERR_INVALID_ARG : GAIO_ERR_DEVICE;
    return gaio__fail(st, fn, "%s failed: %s (%d)%s%s", call, what ? what : "?", r, last && *last ? ": " : "",
                      last ? last : "");
}
