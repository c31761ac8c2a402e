/* Collectives across processes, on two GPUs: two processes (this program again, run
 * fresh: CUDA does not survive fork) join one NCCL group through an id that rank 0
 * makes and passes to rank 1 over a pipe and check an all_reduce against a direct
 * computation; then rank 1 kills itself with collectives in flight and rank 0's future
 * must fail with GAIO_ERR_DEVICE within 5 s, not hang. NCCL reports nothing when a peer
 * on the same host dies (its kernels wait on NVLink forever; measured on 2 x H200, NCCL
 * 2.28): gaio's liveness channel (src/comm/nccl/nccl_live.c) is what notices. SKIPPED
 * with fewer than two GPUs or without NCCL; nothing to do on the host. */
#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"
#include "support.h"

extern char **environ;

#define N (1u << 20)
#define BIG (64u << 20) /* floats per rank in the fault phase: 256 MiB */

static int read_all(int fd, void *p, size_t n) {
    char *c = p;
    while (n) {
        ssize_t k = read(fd, c, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        c += k;
        n -= (size_t)k;
    }
    return 0;
}

static int write_all(int fd, const void *p, size_t n) {
    const char *c = p;
    while (n) {
        ssize_t k = write(fd, c, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        c += k;
        n -= (size_t)k;
    }
    return 0;
}

/* ---- a rank ---- */

static int child(int rank, int id_fd) {
    int gpus[2], n = 0, count = 0;
    OK(gaio_device_count(&count));
    for (int d = 0; d < count && n < 2; d++) {
        gaio_device_props p;
        OK(gaio_device_get_props(d, &p));
        if (p.kind == GAIO_DEVICE_CUDA) gpus[n++] = d;
    }
    CHECK(n == 2);
    gaio_context *ctx;
    OK(gaio_context_create(gpus[rank], NULL, &ctx));
    gaio_comm_id id;
    if (rank == 0) {
        OK(gaio_comm_unique_id(ctx, &id));
        CHECK(write_all(id_fd, &id, sizeof id) == 0);
    } else {
        CHECK(read_all(id_fd, &id, sizeof id) == 0);
    }
    gaio_comm *comm;
    gaio_future *joined;
    OK(gaio_comm_init_rank(ctx, &id, 2, rank, &comm, &joined));
    gaio_stream *s;
    OK(gaio_stream_create(ctx, 0, 0, &s));
    /* A checked all_reduce: rank r holds x[i] = (i % 97) + r; the sum is 2 (i % 97) + 1. */
    gaio_buffer *h, *d;
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_PINNED, N * 4, &h));
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_DEVICE, (size_t)BIG * 4, &d));
    float *x = host_ptr(h);
    for (uint32_t i = 0; i < N; i++) x[i] = (float)(i % 97) + (float)rank;
    OK(gaio_memcpy_async(s, d, 0, h, 0, N * 4));
    OK(gaio_comm_all_reduce(s, comm, d, 0, d, 0, N, GAIO_DTYPE_F32, GAIO_COMM_SUM));
    OK(gaio_memcpy_async(s, h, 0, d, 0, N * 4));
    gaio_future *f;
    OK(gaio_future_fence(s, &f));
    OK(gaio_future_wait(f, BIG_TIMEOUT_NS));
    OK(gaio_future_release(f));
    for (uint32_t i = 0; i < N; i++)
        if (x[i] != (float)(2 * (i % 97) + 1)) {
            fprintf(stderr, "rank %d: element %u is %g, want %u\n", rank, i, x[i], 2 * (i % 97) + 1);
            return 1;
        }
    printf("rank %d: all_reduce across two processes: ok\n", rank);
    OK(gaio_future_wait(joined, BIG_TIMEOUT_NS));
    if (getenv("GAIO_COMM_NO_FAULT")) { /* (the first half alone, to debug it) */
        OK(gaio_future_release(joined));
        OK(gaio_buffer_release(h));
        OK(gaio_buffer_release(d));
        OK(gaio_stream_release(s));
        OK(gaio_comm_release(comm));
        OK(gaio_context_release(ctx));
        return 0;
    }
    /* The fault: both enqueue big all_reduces; rank 1 dies with them in flight. */
    for (int i = 0; i < 400; i++) OK(gaio_comm_all_reduce(s, comm, d, 0, d, 0, BIG, GAIO_DTYPE_F32, GAIO_COMM_SUM));
    OK(gaio_future_fence(s, &f));
    if (rank == 1) {
        test_sleep_ms(100); /* a tenth of them done: the rest in flight (~0.7 s in all) */
        fflush(stdout);
        raise(SIGKILL);
    }
    int64_t t0 = now_ns();
    gaio_status st = gaio_future_wait(f, 10ll * 1000000000ll);
    double secs = (double)(now_ns() - t0) / 1e9;
    printf("rank 0: with rank 1 killed, the fence returned %s after %.2f s: %s\n", gaio_status_string(st), secs,
           gaio_future_message(f));
    fflush(stdout);
    /* Leave at once, releasing nothing: its stream and communicator are broken (and a
     * kernel still waiting on the dead peer would hold up a normal exit). */
    _exit(st == GAIO_ERR_DEVICE && secs <= 5.5 ? 0 : 1);
}

static void run(int device) {
    const char *role = getenv("GAIO_COMM_PROCS_CHILD");
    if (role) {
        int rank = 0, fd = -1;
        CHECK(sscanf(role, "%d,%d", &rank, &fd) == 2);
        exit(child(rank, fd));
    }
    gaio_device_props p;
    OK(gaio_device_get_props(device, &p));
    if (p.kind != GAIO_DEVICE_CUDA) return; /* host: nothing to do */
    static int done;
    if (done++) return;
    int count = 0, gpus = 0;
    OK(gaio_device_count(&count));
    for (int d = 0; d < count; d++) {
        gaio_device_props q;
        OK(gaio_device_get_props(d, &q));
        gpus += q.kind == GAIO_DEVICE_CUDA;
    }
    if (gpus < 2) test_skip("needs two GPUs (this machine has %d)", gpus);
    int pipefd[2];
    CHECK(pipe(pipefd) == 0);
    pid_t pid[2];
    for (int r = 0; r < 2; r++) {
        char env[64];
        snprintf(env, sizeof env, "GAIO_COMM_PROCS_CHILD=%d,%d", r, r == 0 ? pipefd[1] : pipefd[0]);
        char *envp[256];
        int k = 0;
        for (char **e = environ; *e && k < 254; e++)
            if (strncmp(*e, "GAIO_COMM_PROCS_CHILD=", 22)) envp[k++] = *e;
        envp[k++] = env;
        envp[k] = NULL;
        char self[4096];
        ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
        CHECK(len > 0);
        self[len] = 0;
        char *argv[] = {self, "--gpu", NULL};
        CHECK(posix_spawn(&pid[r], self, NULL, NULL, argv, envp) == 0);
    }
    close(pipefd[0]);
    close(pipefd[1]);
    int fault = getenv("GAIO_COMM_NO_FAULT") == NULL;
    int status[2];
    for (int r = 0; r < 2; r++) {
        /* A rank stuck past 60 s is killed, and fails the test. */
        int waited = 0;
        pid_t got;
        while ((got = waitpid(pid[r], &status[r], WNOHANG)) == 0 && waited++ < 6000) test_sleep_ms(10);
        if (got == 0) {
            kill(pid[r], SIGKILL);
            CHECK(waitpid(pid[r], &status[r], 0) == pid[r]);
            fprintf(stderr, "rank %d did not finish within 60 s\n", r);
            exit(1);
        }
    }
    if (fault) CHECK(WIFSIGNALED(status[1]) && WTERMSIG(status[1]) == SIGKILL); /* rank 1 died as planned */
    for (int r = 0; r < 2 - fault; r++)
        if (!WIFEXITED(status[r]) || WEXITSTATUS(status[r]) != 0) {
            fprintf(stderr, "rank %d failed (status %d)\n", r, status[r]);
            exit(1);
        }
    printf("  two processes joined through an id passed over a pipe: ok\n");
    if (fault) printf("  a killed peer fails the survivor's future within 5 s: ok\n");
    else printf("  the fault part: not run (GAIO_COMM_NO_FAULT)\n");
}
