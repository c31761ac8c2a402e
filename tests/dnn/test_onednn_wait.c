/* oneDNN's OpenMP team told to spin (src/dnn/cpu/onednn.c openmp_wait): loading oneDNN
 * sets OMP_WAIT_POLICY=active and GOMP_SPINCOUNT=300000 where the program set neither
 * and libgomp was not loaded, and leaves a program's own setting, or any setting under
 * GAIO_ONEDNN_SPIN=0, alone. Each case in a child process of its own (libgomp reads its
 * environment once, and gaio loads oneDNN once), forked before gaio starts a thread.
 * Exit 77 (SKIPPED) where oneDNN is not there or libgomp is already loaded. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dnn/dnn_internal.h"

enum { SKIP = 77 };

/* In a child: the environment given, then oneDNN loaded; 0 when what it finds is want
 * (NULL: unset), 1 when not, SKIP when oneDNN cannot load. */
static int child(const char *set_var, const char *set_val, const char *want_policy, const char *want_spin) {
    unsetenv("OMP_WAIT_POLICY"), unsetenv("GOMP_SPINCOUNT"), unsetenv("GAIO_ONEDNN_SPIN");
    if (set_var) setenv(set_var, set_val, 1);
    if (gaio__onednn_load("test", NULL) != GAIO_OK) return SKIP;
    const char *p = getenv("OMP_WAIT_POLICY"), *s = getenv("GOMP_SPINCOUNT");
    int ok = (want_policy ? p && !strcmp(p, want_policy) : !p) && (want_spin ? s && !strcmp(s, want_spin) : !s);
    if (!ok)
        fprintf(stderr, "  %s=%s: OMP_WAIT_POLICY '%s' GOMP_SPINCOUNT '%s', wanted '%s' and '%s'\n",
                set_var ? set_var : "(none)", set_val ? set_val : "", p ? p : "(unset)", s ? s : "(unset)",
                want_policy ? want_policy : "(unset)", want_spin ? want_spin : "(unset)");
    return ok ? 0 : 1;
}

static int run(const char *what, const char *set_var, const char *set_val, const char *want_policy,
               const char *want_spin) {
    fflush(stdout), fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return 1;
    }
    if (pid == 0) _exit(child(set_var, set_val, want_policy, want_spin));
    int status = 0;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) {
        fprintf(stderr, "%s: the child did not exit\n", what);
        return 1;
    }
    int rc = WEXITSTATUS(status);
    printf("  %s: %s\n", what, rc == 0 ? "ok" : rc == SKIP ? "oneDNN not loaded" : "FAILED");
    return rc;
}

int main(void) {
    void *gomp = dlopen("libgomp.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (gomp) {
        printf("SKIPPED: libgomp is loaded in this process already; its environment is read\n");
        return SKIP;
    }
    int rc = run("nothing set: active, 300000", NULL, NULL, "active", "300000");
    if (rc == SKIP) {
        printf("SKIPPED: oneDNN (libdnnl.so.2) does not load here\n");
        return SKIP;
    }
    int bad = rc != 0;
    bad |= run("the program's OMP_WAIT_POLICY kept", "OMP_WAIT_POLICY", "passive", "passive", NULL) != 0;
    bad |= run("the program's GOMP_SPINCOUNT kept", "GOMP_SPINCOUNT", "1000", NULL, "1000") != 0;
    bad |= run("GAIO_ONEDNN_SPIN=0 sets nothing", "GAIO_ONEDNN_SPIN", "0", NULL, NULL) != 0;
    printf("%s\n", bad ? "FAIL" : "PASS");
    return bad;
}
