/* core/dynlib: opening run-time libraries and filling tables of entry points, on the
 * C library's own files (libm.so.6, libc.so.6), so that it runs anywhere: the search
 * order, extra directories, the environment override, the probe symbol, required
 * and optional symbols, and the words of every failure. Host logic only: --gpu
 * skips. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/dynlib.h"

#define CHECK(c)                                                                     \
    do {                                                                             \
        if (!(c)) {                                                                  \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #c);    \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)

#define HAS(text, part)                                                                                 \
    do {                                                                                                \
        if (!strstr((text), (part))) {                                                                  \
            fprintf(stderr, "%s:%d: '%s' does not say '%s'\n", __FILE__, __LINE__, (text), (part));     \
            exit(1);                                                                                    \
        }                                                                                               \
    } while (0)

static double identity(double x) { return x; }

#define NONE "libgaio-test-no-such-library.so.7"
#define ENV "GAIO_TEST_DYNLIB_LIBRARY"

static void search_order(void) {
    gaio__dynlib lib;
    static const char *const names[] = {NONE, "libm.so.6", "libc.so.6", NULL};
    CHECK(gaio__dynlib_open(&lib, &(gaio__dynlib_search){.names = names}));
    CHECK(lib.handle && !strcmp(lib.file, "libm.so.6") && !lib.why[0]);

    static const char *const none[] = {NONE, NULL};
    CHECK(!gaio__dynlib_open(&lib, &(gaio__dynlib_search){.names = none}));
    CHECK(!lib.handle && !lib.file);
    HAS(lib.why, NONE); /* dlerror() names the file */
    CHECK(!strstr(lib.why, "; "));
    printf("not found: %s\n", lib.why);
}

/* A file without the probe is passed over and said so; the first with it is taken. */
static void probe(void) {
    gaio__dynlib lib;
    static const char *const names[] = {NONE, "libc.so.6", "libm.so.6", NULL};
    CHECK(gaio__dynlib_open(&lib, &(gaio__dynlib_search){.names = names, .probe = "cos"}));
    CHECK(!strcmp(lib.file, "libm.so.6"));

    CHECK(!gaio__dynlib_open(&lib, &(gaio__dynlib_search){.names = names, .probe = "gaio_test_no_such_symbol"}));
    HAS(lib.why, NONE);
    HAS(lib.why, "; libc.so.6 has no gaio_test_no_such_symbol; libm.so.6 has no gaio_test_no_such_symbol");
    printf("no probe: %s\n", lib.why);
}

/* Extra directories are tried after the loader's search, and only their names are
 * reported when all fails; the env override replaces the search. */
static void dirs_and_env(void) {
    Dl_info info;
    void *m = dlopen("libm.so.6", RTLD_NOW | RTLD_LOCAL);
    CHECK(m);
    void *cos_p = dlsym(m, "cos");
    CHECK(cos_p && dladdr(cos_p, &info) && info.dli_fname && info.dli_fname[0] == '/');
    char dir[] = "/tmp/gaio-dynlib-XXXXXX";
    CHECK(mkdtemp(dir));
    char link[512], dir_slash[512];
    snprintf(link, sizeof link, "%s/libgaio-test-dynlib.so", dir);
    snprintf(dir_slash, sizeof dir_slash, "%s/", dir);
    CHECK(symlink(info.dli_fname, link) == 0);

    gaio__dynlib lib;
    static const char *const names[] = {"libgaio-test-dynlib.so", NULL};
    const char *const far[] = {"/nonexistent-gaio-dir/", dir_slash, NULL};
    CHECK(!gaio__dynlib_open(&lib, &(gaio__dynlib_search){.names = names}));
    CHECK(gaio__dynlib_open(&lib, &(gaio__dynlib_search){.names = names, .dirs = far}));
    CHECK(!strcmp(lib.file, "libgaio-test-dynlib.so") && !lib.why[0]);
    const char *const nowhere[] = {"/nonexistent-gaio-dir/", NULL};
    CHECK(!gaio__dynlib_open(&lib, &(gaio__dynlib_search){.names = names, .dirs = nowhere}));
    CHECK(!strstr(lib.why, "nonexistent-gaio-dir") && !strstr(lib.why, "; "));

    static const char *const none[] = {NONE, NULL};
    const gaio__dynlib_search env_search = {.names = none, .env = ENV};
    CHECK(setenv(ENV, "", 1) == 0); /* empty: no override */
    CHECK(!gaio__dynlib_open(&lib, &env_search));
    HAS(lib.why, NONE);
    CHECK(setenv(ENV, link, 1) == 0);
    CHECK(gaio__dynlib_open(&lib, &env_search));
    CHECK(!strcmp(lib.file, link));
    CHECK(setenv(ENV, "/nonexistent-gaio-dir/libx.so", 1) == 0);
    CHECK(!gaio__dynlib_open(&lib, &env_search));
    HAS(lib.why, ENV "=/nonexistent-gaio-dir/libx.so: ");
    CHECK(!strstr(lib.why, NONE)); /* the override is the only file tried */
    CHECK(setenv(ENV, link, 1) == 0);
    CHECK(!gaio__dynlib_open(&lib, &(gaio__dynlib_search){.names = none, .env = ENV, .probe = "gaio_test_nothing"}));
    HAS(lib.why, "has no gaio_test_nothing");
    printf("override: %s\n", lib.why);
    unsetenv(ENV);

    CHECK(unlink(link) == 0 && rmdir(dir) == 0);
    dlclose(m);
}

static void resolve(void) {
    gaio__dynlib lib;
    static const char *const names[] = {"libm.so.6", NULL};
    CHECK(gaio__dynlib_open(&lib, &(gaio__dynlib_search){.names = names}));
    double (*cos_fn)(double) = NULL, (*none_fn)(double) = identity;
    const gaio__dynsym ok[] = {{"cos", &cos_fn, true}, {"gaio_test_no_such_symbol", &none_fn, false}};
    CHECK(gaio__dynlib_resolve(&lib, ok, 2));
    CHECK(cos_fn && cos_fn(0.0) == 1.0 && none_fn == NULL && !lib.missing);

    double (*sin_fn)(double) = NULL, (*after)(double) = NULL;
    const gaio__dynsym bad[] = {
        {"sin", &sin_fn, true}, {"gaio_test_no_such_symbol", &none_fn, true}, {"tan", &after, true}};
    CHECK(!gaio__dynlib_resolve(&lib, bad, 3));
    CHECK(sin_fn && !after && !strcmp(lib.missing, "gaio_test_no_such_symbol"));
    CHECK(!strcmp(lib.why, "libm.so.6 lacks gaio_test_no_such_symbol"));
    gaio__dynlib_close(&lib);
    CHECK(!lib.handle);
}

/* Many failures fill the message to its end, never past it. */
static void long_messages(void) {
    const char *names[64];
    char buf[63][80];
    for (int i = 0; i < 63; i++) {
        snprintf(buf[i], sizeof buf[i], "libgaio-test-no-such-library-number-%02d.so", i);
        names[i] = buf[i];
    }
    names[63] = NULL;
    gaio__dynlib lib;
    CHECK(!gaio__dynlib_open(&lib, &(gaio__dynlib_search){.names = names}));
    CHECK(strlen(lib.why) == sizeof lib.why - 1);
    HAS(lib.why, "number-00");
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "--gpu")) {
        printf("SKIPPED: host logic only\n");
        return 77;
    }
    search_order();
    probe();
    dirs_and_env();
    resolve();
    long_messages();
    printf("test_dynlib: ok\n");
    return 0;
}
