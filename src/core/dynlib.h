/* Run-time libraries: gaio links none of the driver, NVRTC, cuDNN, cuBLAS, oneDNN or
 * OpenBLAS, but opens them with dlopen the first time they are needed (DESIGN.md:
 * "a missing library is a clear status, not a link error"). This is the one way to
 * do it: find the file, then fill a table of entry points, and say in words what
 * went wrong. Each loader keeps its own once-only state and its own messages, built
 * from what these functions report.
 *
 *     static const char *const names[] = {"libfoo.so.2", "libfoo.so", NULL};
 *     gaio__dynlib lib;
 *     if (!gaio__dynlib_open(&lib, &(gaio__dynlib_search){.names = names}))
 *         return fail("foo is not installed (%s)", lib.why);
 *     const gaio__dynsym syms[] = {{"foo_run", &api.run, true}, {"foo_run2", &api.run2, false}};
 *     if (!gaio__dynlib_resolve(&lib, syms, 2))
 *         return fail("%s", lib.why); // "libfoo.so.2 lacks foo_run"; or words of its own
 *                                     // around lib.file and lib.missing
 *
 * Libraries are opened RTLD_NOW | RTLD_LOCAL. A loader that succeeded keeps its handle
 * for the life of the process (handles made from a library outlive any point where
 * closing it would be safe). Each call works on its own gaio__dynlib only; loaders
 * make theirs once, under a pthread_once. */
#ifndef GAIO_CORE_DYNLIB_H
#define GAIO_CORE_DYNLIB_H

#include <stdbool.h>
#include <stddef.h>

/* Where to look. */
typedef struct gaio__dynlib_search {
    /* File names tried in order, NULL-terminated: sonames for the loader's own search
     * path (LD_LIBRARY_PATH, the cache, RUNPATH), or paths. */
    const char *const *names;
    /* NULL, or NULL-terminated directories, each ending in '/', where all of names are
     * tried again, in order, once the loader's search found none of them (the CUDA
     * toolkit's /usr/local/cuda/lib64/ is often not on it). Their failures are not
     * reported: a file that is not there says nothing new. */
    const char *const *dirs;
    /* NULL, or an environment variable (GAIO_<LIB>_LIBRARY): when set and not empty, the
     * file it names is the only one tried. */
    const char *env;
    /* NULL, or a symbol a file must define to count as found: one without it is closed
     * and the search goes on ("libblas.so.3 has no cblas_sgemm"). */
    const char *probe;
} gaio__dynlib_search;

#define GAIO_DYNLIB_WHY 400

/* An opened library, or why there is none. */
typedef struct gaio__dynlib {
    void *handle;        /* NULL until opened */
    const char *file;    /* what opened: an entry of names (without the directory), or env's value */
    const char *missing; /* after a failed resolve: the first required symbol not found */
    /* Why open or resolve failed: for open, each try's dlerror() (which names the file),
     * or "<file> has no <probe>", "; " between, truncated to fit; for env,
     * "<env>=<value>: <dlerror>"; for resolve, "<file> lacks <symbol>". */
    char why[GAIO_DYNLIB_WHY];
} gaio__dynlib;

/* Opens the first file of search that loads (and defines search->probe). Returns
 * whether one did; lib->why says why not. */
bool gaio__dynlib_open(gaio__dynlib *lib, const gaio__dynlib_search *search);

/* One entry point: slot is the address of a function pointer (of any type) that
 * receives it. A required one that is missing fails the table; an optional one
 * leaves its slot NULL. */
typedef struct gaio__dynsym {
    const char *name;
    void *slot;
    bool required;
} gaio__dynsym;

/* Fills every slot of syms from lib->handle, in order. Returns false at the first
 * required symbol that is missing (lib->missing, lib->why); slots before it are
 * filled, those after it are not touched. */
bool gaio__dynlib_resolve(gaio__dynlib *lib, const gaio__dynsym *syms, size_t n);

/* dlclose, for a library found wanting before anything was made from it. */
void gaio__dynlib_close(gaio__dynlib *lib);

#endif
