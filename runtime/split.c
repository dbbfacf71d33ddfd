/* SPDX-License-Identifier: MIT */
/* The split deque (split.h; docs/design.md 6): private frame stacks,
 * lazy publication, and the thread-local block of the header's inline fast
 * paths. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "split.h"

/* The header's inline paths write frames and workers through its own
 * declarations of the same layouts. */
#define SAME_FIELD(a, fa, b, fb) \
  (offsetof(a, fa) == offsetof(b, fb) && sizeof(((a *)0)->fa) == sizeof(((b *)0)->fb))
_Static_assert(sizeof(ws_frame) <= sizeof(pool_task_t), "pool_task_t too small for a frame");
_Static_assert(_Alignof(ws_frame) <= _Alignof(pool_task_t), "pool_task_t under-aligned");
_Static_assert(SAME_FIELD(ws_frame, fn, struct pool__frame, fn) &&
                   SAME_FIELD(ws_frame, arg, struct pool__frame, arg) &&
                   SAME_FIELD(ws_frame, state, struct pool__frame, state),
               "ws_frame and struct pool__frame differ");
/* Thieves write `limit`; the owner's fields sit WS_CACHELINE apart. */
_Static_assert(offsetof(struct pool__tls, limit) >= WS_CACHELINE &&
                   sizeof(struct pool__tls) - offsetof(struct pool__tls, limit) >= WS_CACHELINE,
               "struct pool__tls: limit must be on a line pair of its own");

/* What top points past on threads that are not workers: top[-1] is never
 * a frame, so the inline sync and take call the library without testing
 * for NULL (and limit 0 does the same for spawn). Nothing writes it. */
static void *idle_slots[1] = {idle_slots};

/* The inline paths find the current worker's private stack and fast-path
 * limit here. */
POOL_API __thread struct pool__tls pool__tls __attribute__((tls_model("initial-exec"))) = {
    .top = idle_slots + 1};

void ws_set_self(ws_worker *w) {
  if (w) {
    ws__self = w;
    pool__tls.top = (void **)w->priv_lo;
    pool__tls.pool = w->pool;
    ws_abi_store(&pool__tls.limit, 0, ws_relaxed);
    /* Release: a thief that loads this pointer (acquire) may write the
     * word it points to. Stored before this worker pushes anything, so a
     * thief that took one of its tasks sees it (the deque's release and
     * acquire order the two). A thief that still reads the parked word has
     * taken nothing of this worker's, and whoever later empties the deque
     * (the owner's pop, a thief's take) closes through this pointer
     * (docs/design.md 6.5). */
    ws_ptr_store(&w->limitp, &pool__tls.limit, ws_release);
    return;
  }
  /* Leaving: every worker of the pool has stopped looking for work
   * (worker.c), so nobody holds the pointer to this thread's word. */
  ws_worker *me = ws__self;
  if (me) ws_ptr_store(&me->limitp, &me->limit_parked, ws_release);
  ws__self = NULL;
  pool__tls.top = idle_slots + 1;
  pool__tls.pool = NULL;
  ws_abi_store(&pool__tls.limit, 0, ws_relaxed);
}

/* Runs a frame that left its owner's fast path: stolen, popped while the
 * owner synced another frame, or taken from the global queue. Its owner,
 * pool and state are set (spawn_slow or frame_make_public). */
void ws_frame_exec(ws_task *t, ws_worker *w) {
  ws_frame *f = (ws_frame *)t;
  WS_ASSERT(ws_u32_load(&f->state, ws_relaxed) == frame_state(f, FRAME_SPAWNED));
  ws_ptr_store(&f->thief, w, ws_relaxed);
  uint64_t t0 = ws_trace_t0(w);
  f->fn(f->arg);
  ws_trace_task(w, (ws_fnptr)f->fn, t0);
  ws_worker *owner = f->owner;
  if (owner == w) {
    /* Its owner ran it (popped while syncing another frame): nobody waits
     * for it. Release: as below. */
    ws_u32_store(&f->state, frame_state(f, FRAME_DONE), ws_release);
  } else if (owner) {
    /* Release: the task's effects are visible to the owner's acquire load.
     * This store is the last touch of the frame; then the owner, which
     * may be asleep waiting for it, is told (the pool outlives it). */
    struct pool *p = owner->pool;
    ws_u32_store(&f->state, frame_state(f, FRAME_DONE), ws_release);
    ws_wait_notify(&p->sleep);
  } else {
    struct pool *p = f->pool;
    ws_u32_store(&f->state, frame_state(f, FRAME_DONE), ws_seq_cst);
    ws_event_notify(&p->ext);
  }
}

/* Private frames (lazy publication, after Lace's split deque).
 *
 * A spawn stays in the owner's private stack [priv_lo, ws_top()), which
 * costs no fence and no atomic RMW, while the public deque still holds work
 * for thieves. The spawn fast path (forkjoin.c, and inline in
 * wspool/inline.h) is taken while ws_top() < pool__tls.limit; `limit` folds
 * every reason to leave it into one relaxed load:
 *   - the stack is full (limit is its end),
 *   - the public deque is empty: the owner closes the path (limit = 0) when
 *     its own pop leaves the deque empty, a thief when it finds the deque
 *     empty or takes its last task (ws_ask_publish),
 *   - tracing is on (the path never opens; every frame goes through the
 *     deque, where the trace sees it run).
 * A closed path sends the next spawn here: it publishes the oldest half of
 * the private frames (the biggest subtrees), or itself when there are none,
 * and reopens the path if the deque then holds work. So parallelism appears
 * as soon as anyone can use it, and a recursion nobody steals from runs at
 * close to plain-call cost.
 *
 * Opening races with a thief's closing. A lost close would leave private
 * frames unpublished while a thief waits, e.g. pool_join(a, b) with a long
 * `a` would run serially. The owner opens with: store limit; seq_cst fence;
 * read the deque's top; close again if the deque is empty. A thief closes
 * after its CAS on top with a seq_cst load and store of limit. If the
 * owner's read misses the thief's CAS, the fence precedes that CAS in the
 * single total order S, so the thief's seq_cst load sees the owner's store
 * (C11 fence rules) and its store of 0 comes later in limit's modification
 * order; otherwise the owner sees the steal and closes itself.
 *
 * An owner's pop races with a steal in the same way: the owner's pop stores
 * bottom, fences (seq_cst) and reads top; afterwards ws_pop_own reads top
 * again and closes if the deque is empty. A thief that took a task reads
 * bottom with a seq_cst load after its CAS and closes if the deque is
 * empty. If the owner's read missed the CAS, its fence precedes the CAS in
 * S, so the thief's load sees the owner's new bottom: one of the two sees
 * the deque empty. (A relaxed read of bottom could miss the owner's store
 * on a weakly ordered machine and leave the path open on an empty deque.)
 *
 * Slots below priv_lo and priv_base[-1] hold a marker that is never a frame
 * (the worker's own address), so the inline "is it on top?" check needs no
 * bounds test. */

#define PRIV_MARK(w) ((ws_task *)(void *)(w))

void ws_priv_init(ws_worker *w, ws_task **block, size_t cap) {
  block[0] = PRIV_MARK(w);
  w->priv_block = block;
  w->priv_base = w->priv_lo = block + 1;
  w->priv_end = block + 1 + cap;
}

void ws_ask_publish(ws_worker *v) {
  /* v's limit, in v's thread-local block while v's thread runs (see
   * ws_set_self; acquire pairs with its release). */
  uintptr_t *limit = ws_ptr_load(&v->limitp, ws_acquire);
  /* Test first so idle thieves do not keep the line bouncing. */
  if (ws_abi_load(limit, ws_seq_cst) != 0) ws_abi_store(limit, 0, ws_seq_cst);
}

void ws_publish(ws_worker *w, size_t n) {
  size_t moved = 0;
  while (moved < n && w->priv_lo < ws_top()) {
    ws_frame *f = (ws_frame *)*w->priv_lo;
    ws_frame_make_public(f, w);
    if (ws_deque_push(&w->dq, &f->hdr) != 0) {
      /* It stays private, where a frame carries no state: a published
       * state left here would outlive its sync (docs/design.md 7.1). */
      ws_u32_store(&f->state, FRAME_IDLE, ws_relaxed);
      break;
    }
    *w->priv_lo++ = PRIV_MARK(w);
    moved++;
  }
  if (w->priv_lo == ws_top()) {
    w->priv_lo = w->priv_base;
    ws_set_top(w->priv_base);
  }
  if (moved) ws_after_push(w->pool);
}

int ws_priv_grow(ws_worker *w) {
  size_t n = (size_t)(ws_top() - w->priv_lo);
  size_t cap = (size_t)(w->priv_end - w->priv_base);
  if (w->priv_lo > w->priv_base) {
    memmove(w->priv_base, w->priv_lo, n * sizeof(ws_task *));
    w->priv_lo = w->priv_base;
    ws_set_top(w->priv_base + n);
    return 0;
  }
  /* The first array lives in the worker's NUMA-local block (pool.c): copy
   * out of it, never free it. */
  ws_task **grown = malloc((2 * cap + 1) * sizeof(ws_task *));
  if (!grown) return ENOMEM;
  memcpy(grown + 1, w->priv_lo, n * sizeof(ws_task *));
  if (w->priv_block != w->priv_embedded) free(w->priv_block);
  ws_priv_init(w, grown, 2 * cap);
  ws_set_top(w->priv_base + n);
  return 0;
}

