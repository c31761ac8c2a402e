/* Opening run-time libraries: see dynlib.h. */
#include "core/dynlib.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Appends an entry a b c (NULLs left out) to lib->why, "; " before all but the first,
 * truncating. */
static void note(gaio__dynlib *lib, const char *a, const char *b, const char *c) {
    size_t used = strlen(lib->why);
    if (used + 1 < sizeof lib->why)
        snprintf(lib->why + used, sizeof lib->why - used, "%s%s%s%s", used ? "; " : "", a, b ? b : "", c ? c : "");
}

/* Whether h defines the probe symbol (when there is one). */
static bool has_probe(void *h, const char *probe) {
    if (!probe) return true;
    dlerror();
    return dlsym(h, probe) != NULL;
}

/* dlopen of path; a file without search->probe is closed again. Failures are noted
 * when report is set. */
static void *try_open(gaio__dynlib *lib, const gaio__dynlib_search *search, const char *path, bool report) {
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        if (report) note(lib, e ? e : path, NULL, NULL);
        return NULL;
    }
    if (!has_probe(h, search->probe)) {
        if (report) note(lib, path, " has no ", search->probe);
        dlclose(h);
        return NULL;
    }
    return h;
}

bool gaio__dynlib_open(gaio__dynlib *lib, const gaio__dynlib_search *search) {
    memset(lib, 0, sizeof *lib);
    const char *env = search->env ? getenv(search->env) : NULL;
    if (env && *env) { /* that file or nothing */
        void *h = dlopen(env, RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            const char *e = dlerror();
            snprintf(lib->why, sizeof lib->why, "%s=%s: %s", search->env, env, e ? e : "dlopen failed");
            return false;
        }
        if (!has_probe(h, search->probe)) {
            snprintf(lib->why, sizeof lib->why, "%s=%s: %s has no %s", search->env, env, env, search->probe);
            dlclose(h);
            return false;
        }
        lib->handle = h, lib->file = env;
        return true;
    }
    for (size_t i = 0; search->names[i]; i++) {
        void *h = try_open(lib, search, search->names[i], true);
        if (h) {
            lib->handle = h, lib->file = search->names[i];
            lib->why[0] = '\0';
            return true;
        }
    }
    for (size_t d = 0; search->dirs && search->dirs[d]; d++) {
        for (size_t i = 0; search->names[i]; i++) {
            char path[512];
            if (snprintf(path, sizeof path, "%s%s", search->dirs[d], search->names[i]) >= (int)sizeof path) continue;
            void *h = try_open(lib, search, path, false);
            if (h) {
                lib->handle = h, lib->file = search->names[i];
                lib->why[0] = '\0';
                return true;
            }
        }
    }
    return false;
}

bool gaio__dynlib_resolve(gaio__dynlib *lib, const gaio__dynsym *syms, size_t n) {
    for (size_t i = 0; i < n; i++) {
        dlerror();
        void *p = dlsym(lib->handle, syms[i].name);
        if (!p && syms[i].required) {
            lib->missing = syms[i].name;
            snprintf(lib->why, sizeof lib->why, "%s lacks %s", lib->file ? lib->file : "the library", syms[i].name);
            return false;
        }
        /* Stored through its bytes: ISO C has no conversion from void * to a function
         * pointer, POSIX guarantees that the two have one representation. */
        memcpy(syms[i].slot, &p, sizeof p);
    }
    return true;
}

void gaio__dynlib_close(gaio__dynlib *lib) {
    if (lib->handle) dlclose(lib->handle);
    lib->handle = NULL;
}
