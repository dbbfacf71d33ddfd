/* SPDX-License-Identifier: MIT */
/* The per-worker work-stealing deque: Chase and Lev's growable circular
 * array ("Dynamic circular work-stealing deque", SPAA 2005) in the C11 form
 * proved correct by Le, Pop, Cohen and Zappa Nardelli ("Correct and efficient
 * work-stealing for weak memory models", PPoPP 2013, fig. 1).
 *
 * The owner pushes and pops at `bottom` (LIFO); thieves take at `top` (FIFO).
 * Indices are signed 64-bit and only grow, so `top` never repeats a value
 * (no ABA on the CAS) and `bottom - 1` may be -1 on an empty deque.
 *
 * Memory orders (the paper's, with two deliberate strengthenings marked (S)):
 *  push:  load bottom relaxed   - only the owner writes bottom.
 *         load top acquire      - pairs with a thief's successful CAS on top,
 *                                 so the thief has finished reading a slot
 *                                 before the owner may overwrite it.
 *         store slot relaxed; store bottom RELEASE (S) - the paper uses a
 *                                 release fence then a relaxed store; a
 *                                 release store orders the slot and the
 *                                 task's contents the same way for the thief
 *                                 that acquires bottom, and ThreadSanitizer
 *                                 understands it (it ignores fences).
 *  pop:   store bottom relaxed, then a SEQ_CST FENCE, then load top: the
 *         Dekker-style store->load order that makes an owner taking the last
 *         item and a thief stealing it see each other; they then race on one
 *         seq_cst CAS of top and exactly one wins.
 *  steal: load top acquire, SEQ_CST FENCE, load bottom acquire - the fence is
 *         the thief's half of the Dekker pair; acquire on bottom pairs with
 *         push's release so the slot and the task are visible.
 *         load array ACQUIRE (S) - the paper's consume; pairs with the
 *         release store of a grown array.
 *         CAS top seq_cst - linearises thieves and the owner's last take.
 *
 * Retired arrays: when the owner grows the array, the old one may still be
 * read by a thief that loaded the array pointer before the switch. Retired
 * arrays are kept on a list owned by the deque and freed only by
 * ws_deque_destroy(), which runs after every worker of the pool has been
 * joined, so no thief can hold one. Each array is twice its predecessor, so
 * the retired ones together are smaller than the live one. */
#ifndef WS_DEQUE_H
#define WS_DEQUE_H

#include <errno.h>

#include "atomics.h"
#include "task.h"

typedef struct ws_array {
  int64_t mask;             /* size - 1; size is a power of two */
  struct ws_array *retired; /* next older retired array (owner only) */
  ws_ptr slot[];            /* ws_task * */
} ws_array;

struct ws_mem;

typedef struct ws_deque {
  WS_ALIGNED ws_i64 top; /* thieves' end: written only by CAS */
  WS_ALIGNED ws_i64 bottom; /* owner's end */
  ws_ptr array;             /* ws_array *, written only by the owner */
  ws_array *retired;        /* owner only */
  ws_array *embedded;       /* the first array when the caller provided it */
  struct ws_mem *mem;       /* where grown arrays come from (mem.h) */
} ws_deque;

/* With arrays from the C library (no pool: the deque's tests). */
int ws_deque_init(ws_deque *d, unsigned log_size);
/* Bytes of the first array for ws_deque_init_in. */
size_t ws_deque_array_bytes(unsigned log_size);
/* The first array in `storage` (ws_deque_array_bytes(log_size) bytes,
 * pointer-aligned, owned by the caller and never freed here): how a worker
 * keeps its deque in its NUMA node's memory. Cannot fail. */
void ws_deque_init_in(ws_deque *d, unsigned log_size, void *storage, struct ws_mem *mem);
void ws_deque_destroy(ws_deque *d);
/* Owner only: replace the array by one twice as large. 0 or ENOMEM. */
int ws_deque_grow(ws_deque *d, int64_t top, int64_t bottom);

static inline int64_t ws_deque_size_hint(const ws_deque *d) {
  /* Relaxed: a hint for "is there anything to steal", never a decision. */
  int64_t b = ws_i64_load(&d->bottom, ws_relaxed);
  int64_t t = ws_i64_load(&d->top, ws_relaxed);
  return b - t;
}

/* For a thief right after its successful steal: is the deque now empty?
 * Bottom is read seq_cst so that, if the owner's pop (store bottom, fence,
 * read top) missed this thief's CAS, this read sees the owner's bottom
 * (the fence precedes the CAS in S); one of the two then sees it empty
 * (split.c, above ws_priv_init). Top is our own CAS or later. */
static inline bool ws_deque_empty_after_steal(const ws_deque *d) {
  int64_t b = ws_i64_load(&d->bottom, ws_seq_cst);
  return b <= ws_i64_load(&d->top, ws_relaxed);
}

/* Owner only. Returns 0 or ENOMEM (the deque is unchanged then). */
static inline int ws_deque_push(ws_deque *d, ws_task *task) {
  int64_t b = ws_i64_load(&d->bottom, ws_relaxed);
  int64_t t = ws_i64_load(&d->top, ws_acquire);
  ws_array *a = (ws_array *)ws_ptr_load(&d->array, ws_relaxed);
  if (b - t > a->mask) {
    if (ws_deque_grow(d, t, b) != 0) return ENOMEM;
    a = (ws_array *)ws_ptr_load(&d->array, ws_relaxed);
  }
  ws_ptr_store(&a->slot[b & a->mask], task, ws_relaxed);
  ws_i64_store(&d->bottom, b + 1, ws_release);
  return 0;
}

/* Owner only: room for n more tasks, so that pushes of that many cannot
 * fail (thieves only make room). 0 or ENOMEM (the deque is unchanged). */
static inline int ws_deque_reserve(ws_deque *d, int64_t n) {
  int64_t b = ws_i64_load(&d->bottom, ws_relaxed);
  int64_t t = ws_i64_load(&d->top, ws_acquire); /* as in ws_deque_push */
  ws_array *a = (ws_array *)ws_ptr_load(&d->array, ws_relaxed);
  while (b - t + n > a->mask + 1) {
    if (ws_deque_grow(d, t, b) != 0) return ENOMEM;
    a = (ws_array *)ws_ptr_load(&d->array, ws_relaxed);
  }
  return 0;
}

/* Owner only: pushes tasks[0], ..., tasks[n-1] (tasks[n-1] ends up at the
 * owner's end) with one release store of bottom, growing the array first as
 * often as needed. A thief that acquires the new bottom sees all n slots,
 * as after n single pushes whose intermediate bottoms nobody read; a thief
 * that reads the old bottom sees none of them. Returns 0 or ENOMEM (the
 * deque is unchanged then). */
static inline int ws_deque_push_n(ws_deque *d, ws_task *const *tasks, int64_t n) {
  if (ws_deque_reserve(d, n) != 0) return ENOMEM;
  int64_t b = ws_i64_load(&d->bottom, ws_relaxed);
  ws_array *a = (ws_array *)ws_ptr_load(&d->array, ws_relaxed);
  for (int64_t i = 0; i < n; i++) ws_ptr_store(&a->slot[(b + i) & a->mask], tasks[i], ws_relaxed);
  ws_i64_store(&d->bottom, b + n, ws_release);
  return 0;
}

/* Owner only: the most recently pushed task, or NULL when empty. */
static inline ws_task *ws_deque_pop(ws_deque *d) {
  int64_t b = ws_i64_load(&d->bottom, ws_relaxed) - 1;
  /* Empty at a glance, no fence (docs/design.md 2.2): relaxed, as `top`
   * only grows and only this thread moves `bottom`. */
  if (b < ws_i64_load(&d->top, ws_relaxed)) return NULL;
  ws_array *a = (ws_array *)ws_ptr_load(&d->array, ws_relaxed);
  ws_i64_store(&d->bottom, b, ws_relaxed);
  ws_fence(ws_seq_cst);
  int64_t t = ws_i64_load(&d->top, ws_relaxed);
  ws_task *x = NULL;
  if (t <= b) {
    x = (ws_task *)ws_ptr_load(&a->slot[b & a->mask], ws_relaxed);
    if (t == b) {
      /* The last item: race the thieves for it on top. */
      if (!ws_i64_cas(&d->top, &t, t + 1, ws_seq_cst)) x = NULL;
      ws_i64_store(&d->bottom, b + 1, ws_relaxed);
    }
  } else {
    ws_i64_store(&d->bottom, b + 1, ws_relaxed);
  }
  return x;
}

/* Any thread: the oldest task, or NULL. *lost is set when the deque was not
 * empty but another thread won the race (worth trying again). */
static inline ws_task *ws_deque_steal(ws_deque *d, int *lost) {
  int64_t t = ws_i64_load(&d->top, ws_acquire);
  *lost = 0;
  /* Empty at a glance, no fence (docs/design.md 2.2): relaxed; the
   * acquire above keeps this load after the read of `top`. */
  if (t >= ws_i64_load(&d->bottom, ws_relaxed)) return NULL;
  ws_fence(ws_seq_cst);
  int64_t b = ws_i64_load(&d->bottom, ws_acquire);
  if (t >= b) return NULL;
  ws_array *a = (ws_array *)ws_ptr_load(&d->array, ws_acquire);
  ws_task *x = (ws_task *)ws_ptr_load(&a->slot[t & a->mask], ws_relaxed);
  if (!ws_i64_cas(&d->top, &t, t + 1, ws_seq_cst)) {
    *lost = 1;
    return NULL;
  }
  return x;
}

#endif /* WS_DEQUE_H */
