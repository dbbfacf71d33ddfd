/* SPDX-License-Identifier: MIT */
/* Layer 1: the split deque (docs/design.md 6): each worker's private frame
 * stack in front of its public Chase-Lev deque, the fast-path `limit`
 * thieves close, and the frames it holds. split.c; pushes go through here
 * so that private frames are published before newer public work. */
#ifndef WS_SPLIT_H
#define WS_SPLIT_H

#include "scheduler.h"

/* Sets ws__self, and the header's pool__tls, for this thread (NULL: the
 * thread leaves its pool). */
void ws_set_self(ws_worker *w);

/* Move the oldest `n` private frames to the public deque. */
void ws_publish(ws_worker *w, size_t n);
/* Points the private frame array at `block` (cap + 1 slots, the first the
 * marker), empty. */
void ws_priv_init(ws_worker *w, ws_task **block, size_t cap);
/* Frees the private stack's array unless it is the worker block's own. */
void ws_priv_free(ws_worker *w);

/* Closing the fast spawn path: the owner when its deque looks
 * empty, a thief that found it empty or took its last task. */
static inline void ws_fast_close(void) {
  if (ws_abi_load(&pool__tls.limit, ws_relaxed) != 0) ws_abi_store(&pool__tls.limit, 0, ws_relaxed);
}
void ws_ask_publish(ws_worker *victim);

/* The owner's pop: closes the fast path once the deque is empty, so the
 * next spawn publishes. */
static inline ws_task *ws_pop_own(ws_worker *w) {
  ws_task *t = ws_deque_pop(&w->dq);
  if (ws_deque_size_hint(&w->dq) <= 0) ws_fast_close();
  return t;
}

/* The owner's pop of its tasks at index `floor` or above only: an
 * isolated wait's (ws_isolation). Relaxed: only the owner writes bottom. */
static inline ws_task *ws_pop_own_from(ws_worker *w, int64_t floor) {
  if (ws_i64_load(&w->dq.bottom, ws_relaxed) <= floor) return NULL;
  return ws_pop_own(w);
}

/* Push a task on w's deque and tell sleepers; w is the caller's worker.
 * ENOMEM if the deque can't grow.
 * Private frames are newer than every public task, so they are published
 * first: the deque keeps the order the owner created its work in. */
static inline int ws_push(ws_worker *w, ws_task *t) {
  if (ws_top() != w->priv_lo) ws_publish(w, (size_t)(ws_top() - w->priv_lo));
  int rc = ws_deque_push(&w->dq, t);
  if (rc == 0) ws_after_push(w->pool);
  return rc;
}

/* ws_push for tasks[0..n), one announcement; tasks[n-1] is popped first.
 * ENOMEM (nothing pushed) unless ws_deque_reserve made room before. */
static inline int ws_push_n(ws_worker *w, ws_task *const *tasks, size_t n) {
  if (ws_top() != w->priv_lo) ws_publish(w, (size_t)(ws_top() - w->priv_lo));
  int rc = ws_deque_push_n(&w->dq, tasks, (int64_t)n);
  if (rc == 0) ws_after_push(w->pool);
  return rc;
}

/* Frames: caller-owned pool_task_t memory, what the private stack holds.
 * A frame's state. A private frame (on its owner's private stack) has no
 * state: the inline spawn sets only fn and arg, and taking it back off the
 * stack (sync or take, inline or here) writes nothing either, so a frame
 * there keeps whatever its memory held before the spawn. Every frame the
 * library gives a state (publication, an outside spawn) is IDLE again when
 * its sync or take returns, so that is IDLE if a frame ever lived there
 * before, or else the memory's earlier contents. A frame that is neither on
 * the private stack nor SPAWNED or DONE is not spawned (EINVAL): a second
 * sync or take, or a frame never spawned.
 * So stale memory must not pass for SPAWNED or DONE. The two values carry a
 * tag of the frame's own address (frame_state) beside a kind byte, and such
 * a frame must also hold the library's exec function: the library's own
 * stack may hold copies of a state value (an argument it passed, a register
 * it saved), but always of another frame's, which does not match here. */
enum { FRAME_IDLE = POOL__FRAME_IDLE, FRAME_SPAWNED = 0x5Au, FRAME_DONE = 0xD0u };

typedef struct ws_frame {
  ws_task hdr;
  pool_fn fn;
  void *arg;
  ws_worker *owner; /* spawning worker; NULL for a spawn from outside */
  struct pool *pool;
  ws_ptr thief;     /* the worker that ran it after a steal (a hint) */
  ws_u32 state;
#ifdef WS_DEBUG_CHECKS
  uint32_t spawner; /* the spawning thread: ws_thread_tag() */
#endif
  /* The unit it was spawned in (cancel.h), for whoever runs it once
   * public; set with the rest at publication. */
  ws_ctx *ctx;
} ws_frame;

#ifdef WS_DEBUG_CHECKS
/* The calling thread, folded to 32 bits from the address of its
 * ws__self (distinct for threads alive together but for a fold collision,
 * which only hides a misuse report). */
static inline uint32_t ws_thread_tag(void) {
  uint64_t a = (uint64_t)(uintptr_t)&ws__self;
  return (uint32_t)(a ^ a >> 32);
}
#endif

/* The state word of frame f in a given kind: the kind in the top byte, never
 * 0 (IDLE), and below it 24 bits folded from all of f's address (frames
 * are 8-aligned), so frames 2^27 bytes apart rarely share a tag. */
static inline uint32_t frame_state(const ws_frame *f, uint32_t kind) {
  uint64_t a = (uint64_t)(uintptr_t)f >> 3;
  return kind << 24 | ((uint32_t)(a ^ a >> 24 ^ a >> 48) & 0xFFFFFFu);
}

/* Runs a frame that left its owner's private stack (stolen, popped while
 * the owner synced another frame, or taken from the global queue). */
void ws_frame_exec(ws_task *t, ws_worker *w);
/* Gives a private frame (fn and arg only; the inline spawn sets no more)
 * the rest, for whoever runs or syncs it once it leaves the private stack
 * (but its unit, ctx, which the caller sets).
 * Inline, as ws_fast_open: spawn_slow (forkjoin.c) runs both on every
 * publication. */
static inline void ws_frame_make_public(ws_frame *f, ws_worker *w) {
  f->hdr.exec = ws_frame_exec;
  f->owner = w;
  f->pool = w->pool;
  ws_ptr_store(&f->thief, NULL, ws_relaxed);
  /* Relaxed: the push that publishes it is a release, and the owner's own
   * sync reads it on this thread. */
  ws_u32_store(&f->state, frame_state(f, FRAME_SPAWNED), ws_relaxed);
}

/* Opens the caller's fast spawn path if its deque holds work (6.4). */
static inline void ws_fast_open(ws_worker *w) {
  /* Debug checks see every spawn and sync: the fast path stays closed. */
  if (w->trace || WS_DEBUG || ws_u32_load(&w->pool->prof_on, ws_relaxed)) return;
  ws_abi_store(&pool__tls.limit, (uintptr_t)w->priv_end, ws_relaxed);
  ws_fence(ws_seq_cst);
  if (ws_deque_size_hint(&w->dq) <= 0) ws_abi_store(&pool__tls.limit, 0, ws_relaxed);
}
/* Makes room on w's full private stack; ENOMEM. */
int ws_priv_grow(ws_worker *w);

#endif /* WS_SPLIT_H */
