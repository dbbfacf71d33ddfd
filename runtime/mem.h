/* SPDX-License-Identifier: MIT */
/* A pool's allocator (pool_config_t's alloc_fn, free_fn and alloc_ctx, or
 * the C library) and the count of the bytes the pool holds from it
 * (pool_memory). Every allocation the library makes for a pool goes
 * through ws_mem_alloc and friends with that pool's ws_mem; the exceptions
 * are listed in wspool.h ("Memory"). docs/design.md 14.
 *
 * The count is a sum of per-thread nets (bytes allocated minus bytes
 * freed, wrapping): each worker and stand-in of the pool keeps its own,
 * written by it alone (a relaxed load and store, as ws_counter_add), and
 * every other thread (creator, destroyer, outside callers, a producer
 * growing a ring) adds to `shared` with an RMW. A block freed by a thread
 * other than the one that allocated it moves bytes between nets; the sum
 * is exact whenever no allocation or free is under way. */
#ifndef WS_MEM_H
#define WS_MEM_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "atomics.h"

typedef struct ws_mem {
  void *(*alloc_fn)(void *ctx, size_t size); /* NULL: the C library */
  void (*free_fn)(void *ctx, void *ptr);     /* NULL exactly when alloc_fn is */
  void *ctx;
  /* The net of threads that are not the pool's workers: its own line,
   * since outside threads write it while workers read the struct. */
  WS_ALIGNED ws_u64 shared;
} ws_mem;

/* The calling thread's own net and the allocator it belongs to: set by
 * ws_set_self for a worker or stand-in, NULL elsewhere. */
typedef struct ws_mem_self {
  ws_mem *mem;
  ws_u64 *net;
} ws_mem_self;
extern __thread ws_mem_self ws__mem_self __attribute__((tls_model("initial-exec")));

/* The C library, for the few users with no pool (the deque's own tests). */
extern ws_mem ws_mem_libc;

static inline void ws_mem_count(ws_mem *m, uint64_t delta) {
  /* Relaxed: a statistic. The owner's net has one writer (a load and a
   * store, no locked instruction on the batch path); `shared` takes an RMW
   * so that concurrent outside threads lose nothing. A reader wants a
   * recent sum, never an order with other data; at a quiescent point the
   * synchronisation that made it quiescent also orders these. */
  if (ws__mem_self.mem == m)
    ws_u64_store(ws__mem_self.net, ws_u64_load(ws__mem_self.net, ws_relaxed) + delta, ws_relaxed);
  else
    ws_u64_fetch_add(&m->shared, delta, ws_relaxed);
}

/* `size` bytes from the pool's allocator, counted; NULL when it fails.
 * Without hooks this is malloc plus one predictable branch and the count. */
static inline void *ws_mem_alloc(ws_mem *m, size_t size) {
  void *p = m->alloc_fn ? m->alloc_fn(m->ctx, size) : malloc(size);
  if (p) ws_mem_count(m, size);
  return p;
}

/* Gives back a block of ws_mem_alloc(m, size); NULL does nothing. The
 * size is the caller's to know, so blocks carry no header. */
static inline void ws_mem_free(ws_mem *m, void *p, size_t size) {
  if (!p) return;
  ws_mem_count(m, (uint64_t)0 - size);
  if (m->free_fn)
    m->free_fn(m->ctx, p);
  else
    free(p);
}

/* n zeroed elements of `size` bytes; NULL on overflow or failure. */
void *ws_mem_calloc(ws_mem *m, size_t n, size_t size);
/* A WS_CACHELINE-aligned block: posix_memalign without hooks; with them,
 * WS_CACHELINE more bytes from the hook, aligned inside, the hook's pointer
 * kept just below the block. Free with ws_mem_free_aligned(m, p, size). */
void *ws_mem_alloc_aligned(ws_mem *m, size_t size);
void ws_mem_free_aligned(ws_mem *m, void *p, size_t size);
/* The bytes ws_mem_alloc_aligned(m, size) takes from the allocator. */
static inline size_t ws_mem_aligned_bytes(const ws_mem *m, size_t size) {
  return m->alloc_fn ? size + WS_CACHELINE : size;
}

#endif /* WS_MEM_H */
