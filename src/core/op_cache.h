/* Recycled memory for ops (and the futures of fences and events). An op is allocated by the thread that submits it and
 * freed by the thread that retires it (a CPU worker, the CUDA completion engine):
 * with malloc, every such pair takes the allocator's arena lock on both threads.
 * Here each thread keeps a small list of blocks; a retiring thread hands blocks
 * back in chains through one lock-free stack, and a submitting thread whose list
 * is empty takes every chain at once. */
#ifndef GAIO_CORE_OP_CACHE_H
#define GAIO_CORE_OP_CACHE_H

#include <stdbool.h>
#include <stddef.h>

/* Blocks are this large; bigger ops come from malloc (gaio__op_block_get says which). */
#define GAIO_OP_BLOCK_BYTES 512u

/* A block of at least `bytes`, not zeroed; *cached says whether it must go back
 * through gaio__op_block_put (true) or free (false). NULL when out of memory. */
void *gaio__op_block_get(size_t bytes, bool *cached);
void gaio__op_block_put(void *block);
/* Frees the blocks parked for other threads (gaio_shutdown). */
void gaio__op_cache_trim(void);

#endif
