/* The liveness channel of NCCL communicators (src/comm/nccl/nccl_live.c) on its own,
 * over loopback, without a GPU: ranks join the maker's listener; one that leaves in
 * order says goodbye and is not reported; one whose socket closes without it (its
 * process died) is reported to the others; an id without the channel's address is
 * refused with a reason. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "comm/nccl/nccl_live.h"

#define CHECK(c)                                                                 \
    do {                                                                         \
        if (!(c)) {                                                              \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #c); \
            exit(1);                                                             \
        }                                                                        \
    } while (0)

static void pause_ms(int ms) {
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

/* Serves until fd reports a gone rank (1) or 2 s pass (0). */
static int wait_gone(int fd, int32_t *gone) {
    for (int i = 0; i < 400; i++) {
        gaio__nccl_live_serve();
        if (gaio__nccl_live_read(fd, gone)) return 1;
        pause_ms(5);
    }
    return 0;
}

int main(void) {
    setenv("GAIO_COMM_ADDR", "127.0.0.1", 1);
    unsigned char where[128];
    memset(where, 0, sizeof where);
    CHECK(gaio__nccl_live_make("test", where) == GAIO_OK);
    char why[256];
    uint64_t g0, g1, g2;
    int fd0 = gaio__nccl_live_join(where, 0, &g0, why, sizeof why);
    int fd1 = gaio__nccl_live_join(where, 1, &g1, why, sizeof why);
    int fd2 = gaio__nccl_live_join(where, 2, &g2, why, sizeof why);
    CHECK(fd0 >= 0 && fd1 >= 0 && fd2 >= 0);
    CHECK(g0 == g1 && g1 == g2);
    for (int i = 0; i < 20; i++) { /* the hellos in */
        gaio__nccl_live_serve();
        pause_ms(5);
    }
    int32_t gone = -7;
    gaio__nccl_live_leave(fd2, g2, 2); /* in order: not reported */
    for (int i = 0; i < 20; i++) {
        gaio__nccl_live_serve();
        pause_ms(5);
    }
    CHECK(gaio__nccl_live_read(fd0, &gone) == 0);
    close(fd1); /* rank 1's process "dies" */
    CHECK(wait_gone(fd0, &gone) == 1);
    CHECK(gone == 1);
    printf("a rank gone without goodbye is reported to the others; one that left in order is not\n");

    /* Another group of the same maker is not told. */
    unsigned char other[128] = {0};
    CHECK(gaio__nccl_live_make("test", other) == GAIO_OK);
    uint64_t h0, h1;
    int a0 = gaio__nccl_live_join(other, 0, &h0, why, sizeof why), a1 = gaio__nccl_live_join(other, 1, &h1, why, sizeof why);
    CHECK(a0 >= 0 && a1 >= 0 && h0 != g0);
    int b1 = gaio__nccl_live_join(where, 1, &g1, why, sizeof why);
    CHECK(b1 >= 0);
    for (int i = 0; i < 20; i++) {
        gaio__nccl_live_serve();
        pause_ms(5);
    }
    close(b1);
    CHECK(wait_gone(fd0, &gone) == 1 && gone == 1);
    CHECK(gaio__nccl_live_read(a0, &gone) == 0);
    printf("groups are told apart\n");

    unsigned char bad[128] = {0};
    CHECK(gaio__nccl_live_join(bad, 0, &g0, why, sizeof why) < 0);
    CHECK(strstr(why, "no liveness address") != NULL);
    printf("an id without the channel's address is refused: %s\n", why);
    gaio__nccl_live_leave(fd0, g0, 0);
    gaio__nccl_live_leave(a0, h0, 0);
    gaio__nccl_live_leave(a1, h1, 1);
    printf("PASS\n");
    return 0;
}
