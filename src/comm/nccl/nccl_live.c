/* Liveness: how a rank learns that a peer's process is gone, which NCCL does not say
 * (a dead peer on the same host leaves its partners' kernels waiting on NVLink
 * forever; measured on 2 x H200, NCCL 2.28).
 *
 * The process that makes a group's id also listens on a TCP port and writes its address
 * into the id (after NCCL's 128 bytes). Every rank connects there when it joins and says
 * which group and rank it is. The maker's side sees a connection close without a
 * goodbye (the peer's process ended, whatever killed it) and tells every other rank of
 * the group; a rank whose connection to the maker closes knows the maker is gone. Either
 * way the rank's communicator fails (nccl_comm.c): NCCL's call is aborted and the
 * streams with its collectives in flight fail, so nothing waits forever.
 *
 * All sockets are served by the communicators' watch thread (gaio__nccl_live_serve and
 * _read), never by the caller's. A rank that cannot reach the maker joins without the
 * channel (refusing would leave the others' joins waiting): it learns of no death. The address is GAIO_COMM_ADDR's (an IPv4 address) where set,
 * else the host's first non-loopback IPv4 address, else 127.0.0.1. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "comm/nccl/nccl_live.h"
#include "core/error.h"

#define LIVE_MAGIC "GAIOLIVE"

/* What the id carries after NCCL's bytes. */
typedef struct live_addr {
    char magic[8];
    uint32_t ipv4; /* network order */
    uint16_t port; /* network order */
    uint16_t pad;
    uint64_t group; /* the group's nonce */
} live_addr;

_Static_assert(128 + sizeof(live_addr) <= GAIO_COMM_ID_BYTES, "the id holds NCCL's bytes and gaio's");

/* Messages, 16 bytes each: hello (rank -> maker), bye (rank -> maker), gone (maker -> rank). */
enum { MSG_HELLO = 1, MSG_BYE = 2, MSG_GONE = 3 };
typedef struct live_msg {
    uint32_t type, rank;
    uint64_t group;
} live_msg;

/* The maker's side: a listener, and the ranks connected to it. */
typedef struct peer {
    int fd;
    uint64_t group;
    int32_t rank; /* -1 until its hello */
    bool said_bye;
} peer;

static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static int listen_fd = -1;
static peer *peers;
static size_t npeers, cappeers;

static void close_quietly(int fd) {
    if (fd >= 0) close(fd);
}

static int send_msg(int fd, uint32_t type, uint64_t group, int32_t rank) {
    live_msg m = {type, (uint32_t)rank, group};
    const char *p = (const char *)&m;
    size_t left = sizeof m;
    while (left) {
        ssize_t k = send(fd, p, left, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        p += k;
        left -= (size_t)k;
    }
    return 0;
}

static uint32_t advertised_ipv4(void) {
    const char *env = getenv("GAIO_COMM_ADDR");
    struct in_addr a;
    if (env && inet_pton(AF_INET, env, &a) == 1) return a.s_addr;
    struct ifaddrs *ifs = NULL;
    uint32_t found = htonl(INADDR_LOOPBACK);
    if (getifaddrs(&ifs) == 0) {
        for (struct ifaddrs *i = ifs; i; i = i->ifa_next)
            if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && (i->ifa_flags & IFF_UP) &&
                !(i->ifa_flags & IFF_LOOPBACK)) {
                found = ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr;
                break;
            }
        freeifaddrs(ifs);
    }
    return found;
}

gaio_status gaio__nccl_live_make(const char *fn, unsigned char *where) {
    pthread_mutex_lock(&live_lock);
    if (listen_fd < 0) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY), .sin_port = 0};
        if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 64) != 0) {
            int e = errno;
            close_quietly(fd);
            pthread_mutex_unlock(&live_lock);
            return gaio__fail(GAIO_ERR_SYSTEM, fn, "cannot listen for the group's liveness channel: %s", strerror(e));
        }
        listen_fd = fd;
    }
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    getsockname(listen_fd, (struct sockaddr *)&a, &len);
    pthread_mutex_unlock(&live_lock);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    static uint64_t counter;
    live_addr la = {.ipv4 = advertised_ipv4(), .port = a.sin_port};
    memcpy(la.magic, LIVE_MAGIC, 8);
    la.group = ((uint64_t)getpid() << 32) ^ ((uint64_t)ts.tv_nsec << 8) ^ __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
    memcpy(where, &la, sizeof la);
    return GAIO_OK;
}

int gaio__nccl_live_join(const unsigned char *where, int32_t rank, uint64_t *group, char *why, size_t why_size) {
    live_addr la;
    memcpy(&la, where, sizeof la);
    if (memcmp(la.magic, LIVE_MAGIC, 8) != 0) {
        snprintf(why, why_size, "the id carries no liveness address (made by an older gaio?)");
        return -1;
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = la.ipv4, .sin_port = la.port};
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0 || send_msg(fd, MSG_HELLO, la.group, rank) != 0) {
        char ip[INET_ADDRSTRLEN] = "?";
        inet_ntop(AF_INET, &la.ipv4, ip, sizeof ip);
        snprintf(why, why_size, "cannot reach the group's maker at %s:%u: %s (set GAIO_COMM_ADDR where it runs?)", ip,
                 ntohs(la.port), strerror(errno));
        close_quietly(fd);
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    *group = la.group;
    return fd;
}

void gaio__nccl_live_leave(int fd, uint64_t group, int32_t rank) {
    if (fd < 0) return;
    (void)send_msg(fd, MSG_BYE, group, rank);
    close(fd);
}

/* ---- the maker's side, and reading the ranks' sockets (the watch thread) ---- */

static void peer_gone(size_t i) {
    peer p = peers[i];
    close_quietly(p.fd);
    peers[i] = peers[--npeers];
    if (p.said_bye || p.rank < 0) return;
    for (size_t k = 0; k < npeers; k++)
        if (peers[k].group == p.group) (void)send_msg(peers[k].fd, MSG_GONE, p.group, p.rank);
}

static void serve_maker(void) {
    pthread_mutex_lock(&live_lock);
    if (listen_fd < 0) {
        pthread_mutex_unlock(&live_lock);
        return;
    }
    for (;;) {
        int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) break;
        if (npeers == cappeers) {
            size_t c = cappeers ? 2 * cappeers : 16;
            peer *g = realloc(peers, c * sizeof *g);
            if (!g) {
                close(fd);
                continue;
            }
            peers = g;
            cappeers = c;
        }
        peers[npeers++] = (peer){.fd = fd, .rank = -1};
    }
    for (size_t i = 0; i < npeers;) {
        live_msg m;
        ssize_t k = recv(peers[i].fd, &m, sizeof m, MSG_DONTWAIT | MSG_PEEK);
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            i++;
            continue;
        }
        if (k < (ssize_t)sizeof m && k > 0) { /* a message not whole yet */
            i++;
            continue;
        }
        if (k <= 0) { /* closed: the peer's process is gone unless it said bye */
            peer_gone(i);
            continue;
        }
        (void)recv(peers[i].fd, &m, sizeof m, MSG_DONTWAIT);
        if (m.type == MSG_HELLO) {
            peers[i].group = m.group;
            peers[i].rank = (int32_t)m.rank;
        } else if (m.type == MSG_BYE) {
            peers[i].said_bye = true;
        }
    }
    pthread_mutex_unlock(&live_lock);
}

int gaio__nccl_live_read(int fd, int32_t *gone_rank) {
    live_msg m;
    ssize_t k = recv(fd, &m, sizeof m, MSG_DONTWAIT | MSG_PEEK);
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
    if (k > 0 && k < (ssize_t)sizeof m) return 0;
    if (k <= 0) {
        *gone_rank = -1; /* the maker's side */
        return 1;
    }
    (void)recv(fd, &m, sizeof m, MSG_DONTWAIT);
    if (m.type != MSG_GONE) return 0;
    *gone_rank = (int32_t)m.rank;
    return 1;
}

void gaio__nccl_live_serve(void) { serve_maker(); }
