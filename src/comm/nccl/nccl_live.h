/* Liveness of a group's processes (nccl_live.c): a TCP channel to the process that
 * made the group's id, since NCCL does not say when a peer's process is gone. */
#ifndef GAIO_COMM_NCCL_LIVE_H
#define GAIO_COMM_NCCL_LIVE_H

#include <stddef.h>
#include <stdint.h>

#include "gaio/comm.h"

/* Listens (once per process) and writes the address and a new group nonce at `where`
 * (the id's bytes after NCCL's). */
gaio_status gaio__nccl_live_make(const char *fn, unsigned char *where);

/* Connects rank to the maker named at `where`: the socket, or -1 with *why. */
int gaio__nccl_live_join(const unsigned char *where, int32_t rank, uint64_t *group, char *why, size_t why_size);

/* Says goodbye and closes (a communicator released in order). */
void gaio__nccl_live_leave(int fd, uint64_t group, int32_t rank);

/* The watch thread's turn: the maker's side accepts ranks and tells a group's ranks
 * when one of them is gone. */
void gaio__nccl_live_serve(void);

/* A rank's socket: 1 with *gone_rank when a peer is gone (-1: the maker's process),
 * else 0. Never blocks. */
int gaio__nccl_live_read(int fd, int32_t *gone_rank);

#endif
