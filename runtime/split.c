/* SPDX-License-Identifier: MIT */
/* The split deque (split.h; docs/design.md 6): private frame stacks,
 * lazy publication, and the thread-local block of the header's inline fast
 * paths. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "split.h"

#include "count.h"
#include "latch.h"
#include "profile.h"

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

/* The calling thread's worker (scheduler.h), set here with the block. */
__thread ws_worker *ws__self __attribute__((tls_model("initial-exec")));
/* The strand this thread runs in a profiled pool (profile.h). */
__thread ws_strand ws__strand __attribute__((tls_model("initial-exec")));

void ws_set_self(ws_worker *w) {
  if (w) {
    ws__self = w;
    ws_count_thread(w->mem, w->mem_size);
    pool__tls.top = (void **)w->priv_lo;
    pool__tls.pool = w->pool;
    ws_abi_store(&pool__tls.limit, 0, ws_relaxed);
    ws__mem_self = (ws_mem_self){&w->pool->mem, &w->mem_net};
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
  ws_count_thread(NULL, 0);
  ws__mem_self = (ws_mem_self){NULL, NULL};
  pool__tls.top = idle_slots + 1;
  pool__tls.pool = NULL;
  ws_abi_store(&pool__tls.limit, 0, ws_relaxed);
}

/* A profiled frame's function (profile.h): the record's fn(arg), as a
 * strand of its own that starts at the spawn's span. */
void ws_prof_child(void *rec) {
  ws_prof_rec *r = rec;
  ws_worker *w = ws_self();
  if (w && w->pool != r->pool) w = NULL;
  ws_strand old = ws_prof_task_begin(r->pool, w, r->at);
  r->fn(r->arg);
  r->at = ws_prof_task_end(old);
}

/* Runs a frame that left its owner's fast path: stolen, popped while the
 * owner synced another frame, or taken from the global queue. Its owner,
 * pool and state are set (spawn_slow or frame_make_public). */
void ws_frame_exec(ws_task *t, ws_worker *w) {
  ws_frame *f = (ws_frame *)t;
  WS_ASSERT(ws_u32_load(&f->state, ws_relaxed) == frame_state(f, FRAME_SPAWNED));
  /* Release: the owner's sync loads the hint acquire and steals from w's
   * deque; w may be a stand-in another thread built after the owner last
   * synchronised with anyone (design.md 5.9), so its fields must happen
   * before that look. */
  ws_ptr_store(&f->thief, w, ws_release);
  ws_scope_set_ctx(ws__scope, f->ctx); /* never skipped: its sync uses what it computes */
  uint64_t t0 = ws_trace_t0(w);
  f->fn(f->arg);
  ws_trace_task(w, ws_prof_fn_of(f->fn, f->arg), t0);
  /* The latch's last touch (latch.h): release for a worker owner (its
   * acquire load sees the task's effects), seq_cst for an outside one. */
  ws_worker *owner = f->owner;
  if (owner == w) {
    /* Its owner ran it (popped while syncing another frame): nobody waits
     * for it. */
    ws_u32_store(&f->state, frame_state(f, FRAME_DONE), ws_release);
  } else if (owner) {
    struct pool *p = owner->pool;
    ws_u32_store(&f->state, frame_state(f, FRAME_DONE), ws_release);
    ws_latch_notify(p, WS_WAKE_WORKER);
  } else {
    struct pool *p = f->pool;
    ws_u32_store(&f->state, frame_state(f, FRAME_DONE), ws_seq_cst);
    ws_latch_notify(p, WS_WAKE_OUTSIDE);
  }
}

/* Private frames (lazy publication, after Lace's split deque; the
 * arguments are docs/design.md 6.1-6.5).
 *
 * A spawn stays in the owner's private stack [priv_lo, ws_top()), no fence
 * and no atomic RMW, while the public deque still holds work for thieves.
 * The fast path is taken while ws_top() < pool__tls.limit, which folds
 * every reason to leave it into one relaxed load: the stack is full (limit
 * is its end); the public deque is empty (the owner's pop or a thief sets
 * limit 0, ws_ask_publish); tracing is on (the path never opens). A closed
 * path sends the next spawn here: it publishes the oldest half of the
 * private frames, or itself, and reopens the path if the deque holds work.
 *
 * No close is lost (6.4): the owner opens with store limit; seq_cst fence;
 * read top; close again if empty. A thief closes after its CAS on top with
 * a seq_cst load and store of limit. Its pop likewise: the owner re-reads
 * top after its pop, the thief reads bottom (seq_cst) after its CAS, and
 * one of the two sees the deque empty.
 *
 * Slots below priv_lo and priv_base[-1] hold a marker that is never a frame
 * (the worker's own address), so the inline "is it on top?" check needs no
 * bounds test. */

#define PRIV_MARK(w) ((ws_task *)(void *)(w))

void ws_priv_free(ws_worker *w) {
  if (w->priv_block != w->priv_embedded)
    ws_mem_free(&w->pool->mem, w->priv_block, (size_t)(w->priv_end - w->priv_block) * sizeof(ws_task *));
}

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

/* The floor of an isolated computation entered on this thread at scope s
 * (design.md 7.5): the deque index its first task lands at, i.e. past
 * the deque and the private frames not yet published (which a later push
 * publishes first, below it). */
void ws_scope_isolate(ws_scope *s) {
  ws_worker *w = ws_self();
  if (!w) return; /* a thread of no pool blocks in its waits */
  /* Relaxed: only this thread (the owner) writes bottom. */
  s->floor = ws_i64_load(&w->dq.bottom, ws_relaxed) + (int64_t)(ws_top() - w->priv_lo);
}

void ws_publish(ws_worker *w, size_t n) {
  size_t avail = (size_t)(ws_top() - w->priv_lo);
  if (n > avail) n = avail;
  /* Each frame's unit (cancel.h): the scopes and the frames both in
   * descending position, so one pass over each. */
  ws_scope *sc = ws__scope;
  for (size_t i = n; i-- > 0;) {
    sc = ws_scope_at(sc, w->priv_seq + i);
    ((ws_frame *)w->priv_lo[i])->ctx = sc ? sc->ctx : NULL;
  }
  size_t moved = 0;
  while (moved < n) {
    ws_frame *f = (ws_frame *)*w->priv_lo;
    ws_frame_make_public(f, w);
    if (ws_deque_push(&w->dq, &f->hdr) != 0) {
      /* It stays private, where a frame carries no state: a published
       * state left here would outlive its sync (docs/design.md 7.1). */
      ws_u32_store(&f->state, FRAME_IDLE, ws_relaxed);
      break;
    }
    *w->priv_lo++ = PRIV_MARK(w);
    w->priv_seq++;
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
  if (cap > (SIZE_MAX / sizeof(ws_task *) - 1) / 2) return ENOMEM;
  ws_task **grown = ws_mem_alloc(&w->pool->mem, (2 * cap + 1) * sizeof(ws_task *));
  if (!grown) return ENOMEM;
  memcpy(grown + 1, w->priv_lo, n * sizeof(ws_task *));
  ws_priv_free(w);
  ws_priv_init(w, grown, 2 * cap);
  ws_set_top(w->priv_base + n);
  return 0;
}

