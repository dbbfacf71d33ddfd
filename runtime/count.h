/* SPDX-License-Identifier: MIT */
/* Layer 0: the counting build (-Dcount_atomics=true, WS_COUNT_ATOMICS;
 * docs/scaling.md, "Counted: atomic operations per task"). Every atomic
 * read-modify-write (fetch_add, CAS attempt, exchange) and every fence of
 * atomics.h, each heavy barrier of fence.c, each lock attempt on a global
 * queue lane and each futex wake is counted, per thread, by kind; an RMW
 * by where its word is, seen from the calling thread:
 *   own     inside the calling worker's block [w->mem, w->mem + mem_size)
 *           (its struct, first deque ring and private frame array);
 *   other   inside another worker's (or stand-in's) block;
 *   stack   on the calling thread's own stack (its own frames, latches);
 *   shared  anything else: the pool struct, the global queue's lanes,
 *           groups, loop jobs, frames on other threads' stacks, a deque
 *           ring that grew out of its block, a submit batch.
 * Loads and stores are not counted, nor the single-writer statistics
 * (ws_counter_add: a relaxed load and store). In every other build the
 * hooks are empty inline functions and atomics.h compiles to what it did
 * without them; the readers below then return zeros. */
#ifndef WS_COUNT_H
#define WS_COUNT_H

#include <stddef.h>
#include <stdint.h>
#ifdef WS_COUNT_ATOMICS
#include <stdbool.h>
#include <stdio.h>
#endif

enum ws_count_kind {
  WS_CNT_SHARED,   /* RMW on a word of no worker's block and not the caller's stack */
  WS_CNT_OTHER,    /* RMW on a word of another worker's block */
  WS_CNT_OWN,      /* RMW on a word of the calling worker's own block */
  WS_CNT_STACK,    /* RMW on a word of the calling thread's stack */
  WS_CNT_FENCE,    /* ws_fence(ws_seq_cst): an instruction (mfence) on x86 */
  WS_CNT_FENCE_AR, /* ws_fence of an acquire/release order: none on x86 */
  WS_CNT_HEAVY,    /* heavy barriers: membarrier(2) calls (fence.c) */
  WS_CNT_LOCK,     /* lock attempts on a global queue lane (gqueue.c) */
  WS_CNT_WAKE,     /* futex wakes (sleep.c): system calls */
  WS_CNT_N
};

/* Counts by kind, summed over one thread or all. */
typedef struct ws_count {
  uint64_t n[WS_CNT_N];
} ws_count;

#ifdef WS_COUNT_ATOMICS
enum { WS_COUNT_BUILD = 1 };
/* The hooks (atomics.h declares the first two itself). */
void ws_count_rmw(const volatile void *addr);
void ws_count_fence(int seq_cst);
void ws_count_event(enum ws_count_kind k);
/* The calling thread's worker block from now on (NULL, 0: none). */
void ws_count_thread(const void *block, size_t size);
/* A worker block exists / is about to be freed. */
void ws_count_block_add(const void *block, size_t size);
void ws_count_block_remove(const void *block);
#else
enum { WS_COUNT_BUILD = 0 };
static inline void ws_count_event(enum ws_count_kind k) { (void)k; }
static inline void ws_count_thread(const void *block, size_t size) { (void)block, (void)size; }
static inline void ws_count_block_add(const void *block, size_t size) { (void)block, (void)size; }
static inline void ws_count_block_remove(const void *block) { (void)block; }
#endif

/* The calling thread's counts so far (zeros in other builds). */
#ifdef WS_COUNT_ATOMICS
void ws_count_self(ws_count *out);
#else
static inline void ws_count_self(ws_count *out) { *out = (ws_count){{0}}; }
#endif
/* Every thread's counts so far, summed, threads that ended included
 * (zeros in other builds). */
#ifdef WS_COUNT_ATOMICS
void ws_count_all(ws_count *out);
#else
static inline void ws_count_all(ws_count *out) { *out = (ws_count){{0}}; }
#endif
#ifdef WS_COUNT_ATOMICS
/* While on (off at start), each count is also kept by its call site (the
 * code that called the atomic operation, after inlining): dump prints
 * them, most first, as object+offset; reset zeroes them. */
void ws_count_sites_on(bool on);
void ws_count_sites_dump(FILE *f, const char *title);
void ws_count_sites_reset(void);
#endif
/* out = after - before, kind by kind. */
static inline void ws_count_diff(ws_count *out, const ws_count *after, const ws_count *before) {
  for (int k = 0; k < WS_CNT_N; k++) out->n[k] = after->n[k] - before->n[k];
}

#endif /* WS_COUNT_H */
