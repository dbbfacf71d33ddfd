/* Fork/join: pool_spawn/pool_sync on caller-owned frames, pool_join, and
 * task groups (docs/design.md, "Fork/join").
 *
 * A spawn from a worker is a frame initialised in place (nothing is
 * allocated) and, in the common case, one store into the worker's private
 * frame array; the matching sync finds it on top and calls the function
 * inline: no fence, no atomic RMW. Frames are published to the Chase-Lev
 * deque lazily (below). A published frame is synced through the deque's
 * pop; if it was stolen, the syncer helps: it steals from the thief first
 * (leapfrogging: what the thief pushed is the stolen task's own subtree),
 * then anywhere, within the stack bound described in wspool.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

enum {
  FRAME_IDLE = 0,
  FRAME_SPAWNED = 0x57A5F00Du, /* distinctive, so an unspawned frame rarely passes */
  FRAME_DONE = 0x57A5D0E5u
};

typedef struct ws_frame {
  ws_task hdr;
  pool_fn fn;
  void *arg;
  ws_worker *owner; /* spawning worker; NULL for a spawn from outside */
  struct pool *pool;
  ws_ptr thief;     /* the worker that ran it after a steal (a hint) */
  ws_u32 state;
} ws_frame;

_Static_assert(sizeof(ws_frame) <= sizeof(pool_task_t), "pool_task_t too small for a frame");
_Static_assert(_Alignof(ws_frame) <= _Alignof(pool_task_t), "pool_task_t under-aligned");

/* Runs a frame that left its owner's fast path: stolen, popped while the
 * owner synced another frame, or taken from the global queue. */
static void frame_exec(ws_task *t, ws_worker *w) {
  ws_frame *f = (ws_frame *)t;
  ws_ptr_store(&f->thief, w, ws_relaxed);
  uint64_t t0 = ws_trace_t0(w);
  f->fn(f->arg);
  ws_trace_task(w, (ws_fnptr)f->fn, t0);
  if (f->owner) {
    /* Release: the task's effects are visible to the owner's acquire load.
     * This store is the last touch of the frame. */
    ws_u32_store(&f->state, FRAME_DONE, ws_release);
  } else {
    struct pool *p = f->pool;
    ws_u32_store(&f->state, FRAME_DONE, ws_seq_cst);
    ws_event_notify(&p->ext);
  }
}

/* Private frames (lazy publication, after Lace's split deque). A spawn
 * stays in the owner's private array, which costs no fence and no atomic
 * RMW, while the public deque still holds work for thieves. When the public
 * deque is empty (as the owner sees it: a relaxed read of top, which only
 * changes on a steal), or a thief found it empty and set `hungry`, the
 * spawn publishes the oldest half of the private frames (the biggest
 * subtrees), or itself when there are none; so parallelism appears as soon
 * as anyone can use it, and a recursion that nobody steals from runs at
 * close to plain-call cost. */

void ws_publish(ws_worker *w, size_t n) {
  size_t moved = 0;
  while (moved < n && w->priv_lo < w->priv_hi) {
    int64_t before;
    ws_task *t = w->priv[w->priv_lo];
    /* Only frames are ever private; their steal hint starts empty here. */
    ws_ptr_store(&((ws_frame *)t)->thief, NULL, ws_relaxed);
    if (ws_deque_push(&w->dq, t, &before) != 0) break;
    moved++;
    w->priv_lo++;
  }
  if (w->priv_lo == w->priv_hi) w->priv_lo = w->priv_hi = 0;
  if (moved) ws_after_push(w->pool);
}

static int priv_grow(ws_worker *w) {
  if (w->priv_lo > 0) {
    memmove(w->priv, w->priv + w->priv_lo, (w->priv_hi - w->priv_lo) * sizeof(ws_task *));
    w->priv_hi -= w->priv_lo;
    w->priv_lo = 0;
    return 0;
  }
  /* The first array lives in the worker's NUMA-local block (pool.c): copy
   * out of it instead of reallocating it. */
  ws_task **grown;
  if (w->priv == w->priv_embedded) {
    grown = malloc(2 * w->priv_cap * sizeof(ws_task *));
    if (grown) memcpy(grown, w->priv, w->priv_hi * sizeof(ws_task *));
  } else {
    grown = realloc(w->priv, 2 * w->priv_cap * sizeof(ws_task *));
  }
  if (!grown) return ENOMEM;
  w->priv = grown;
  w->priv_cap *= 2;
  return 0;
}

static void frame_init(ws_frame *f, pool_fn fn, void *arg, ws_worker *owner, struct pool *p) {
  f->hdr.exec = frame_exec;
  f->fn = fn;
  f->arg = arg;
  f->owner = owner;
  f->pool = p;
  ws_ptr_store(&f->thief, NULL, ws_relaxed);
  /* Relaxed: publication (a release push, or the queue lock) orders it. */
  ws_u32_store(&f->state, FRAME_SPAWNED, ws_relaxed);
}

/* Everything but the common case: publication, growth, outside spawns. */
static __attribute__((noinline)) int spawn_slow(pool_t *pool, pool_task_t *task, pool_fn fn,
                                                void *arg) {
  if (!task || !fn) return EINVAL;
  ws_worker *w = ws_self();
  struct pool *p = ws_resolve(pool);
  if (!p) return EINVAL;
  ws_frame *f = (ws_frame *)task;
  if (!(w && w->pool == p)) {
    frame_init(f, fn, arg, NULL, p);
    int rc = ws_push_global(p, &f->hdr, true);
    if (rc) ws_u32_store(&f->state, FRAME_IDLE, ws_relaxed);
    return rc;
  }
  frame_init(f, fn, arg, w, p);
  if (ws_u32_load(&w->hungry, ws_relaxed) || ws_deque_size_hint(&w->dq) <= 0) {
    /* Nothing public, or a thief found it so: publish the oldest half of
     * the private frames, or this one if there are none. */
    if (ws_u32_load(&w->hungry, ws_relaxed)) ws_u32_store(&w->hungry, 0, ws_relaxed);
    size_t n = w->priv_hi - w->priv_lo;
    if (n == 0) {
      if (ws_push(w, &f->hdr) == 0) return 0;
      goto inline_run;
    }
    ws_publish(w, (n + 1) / 2);
  }
  if (w->priv_hi == w->priv_cap && priv_grow(w) != 0) {
    if (ws_push(w, &f->hdr) == 0) return 0;
    goto inline_run;
  }
  w->priv[w->priv_hi++] = &f->hdr;
  return 0;
inline_run:
  /* Neither the private array nor the deque can grow: run it now; the sync
   * finds it done. */
  fn(arg);
  ws_u32_store(&f->state, FRAME_DONE, ws_relaxed);
  return 0;
}

int pool_spawn(pool_t *pool, pool_task_t *task, pool_fn fn, void *arg) {
  ws_worker *w = ws_self();
  if (__builtin_expect(w && task && fn && (!pool || pool == w->pool) &&
                           w->priv_hi != w->priv_cap &&
                           !ws_u32_load(&w->hungry, ws_relaxed) &&
                           ws_deque_size_hint(&w->dq) > 0,
                       1)) {
    /* The common case: a private frame. Only the owner will read it unless
     * it is published later (ws_publish sets the rest). */
    ws_frame *f = (ws_frame *)task;
    f->hdr.exec = frame_exec;
    f->fn = fn;
    f->arg = arg;
    f->owner = w;
    ws_u32_store(&f->state, FRAME_SPAWNED, ws_relaxed);
    w->priv[w->priv_hi++] = &f->hdr;
    return 0;
  }
  return spawn_slow(pool, task, fn, arg);
}

static __attribute__((noinline)) int sync_slow(ws_frame *f, ws_worker *self) {
  uint32_t st = ws_u32_load(&f->state, ws_acquire);
  if (st == FRAME_DONE) goto done;
  if (st != FRAME_SPAWNED) return EINVAL;
  ws_worker *w = f->owner;
  if (w) {
    if (w != self) return EINVAL;
    /* Synced out of order: what was spawned after it runs first (its own
     * sync then finds it done). */
    while (w->priv_hi != w->priv_lo) {
      ws_task *t = w->priv[--w->priv_hi];
      if (t == &f->hdr) goto run_inline;
      ws_run(w, t);
    }
    for (;;) {
      ws_task *t = ws_deque_pop(&w->dq);
      if (t == &f->hdr) goto run_inline;
      if (!t) break;
      ws_counter_add(&w->stats.local_pops, 1);
      ws_run(w, t);
    }
    /* Stolen: work while the thief finishes it. */
    ws_help_until_value(w, &f->state, FRAME_DONE,
                        (ws_worker *)ws_ptr_load(&f->thief, ws_relaxed));
  } else {
    ws_block_until_value(f->pool, &f->state, FRAME_DONE);
  }
  goto done;
run_inline : {
  uint64_t t0 = ws_trace_t0(w);
  f->fn(f->arg);
  ws_trace_task(w, (ws_fnptr)f->fn, t0);
  ws_counter_add(&w->stats.tasks, 1);
}
done:
  ws_u32_store(&f->state, FRAME_IDLE, ws_relaxed);
  return 0;
}

int pool_sync(pool_task_t *task) {
  ws_worker *w = ws_self();
  ws_frame *f = (ws_frame *)task;
  if (__builtin_expect(w && f, 1)) {
    size_t hi = w->priv_hi;
    if (hi > w->priv_lo && w->priv[hi - 1] == &f->hdr) {
      /* The fast path: our newest private frame, never published. */
      w->priv_hi = hi - 1;
      if (__builtin_expect(w->trace != NULL, 0)) {
        uint64_t t0 = ws_trace_now();
        f->fn(f->arg);
        ws_trace_task(w, (ws_fnptr)f->fn, t0);
      } else {
        f->fn(f->arg);
      }
      ws_counter_add(&w->stats.tasks, 1);
      ws_u32_store(&f->state, FRAME_IDLE, ws_relaxed);
      return 0;
    }
  }
  if (!f) return EINVAL;
  return sync_slow(f, w);
}

int pool_join(pool_t *pool, pool_fn a, void *a_arg, pool_fn b, void *b_arg) {
  if (!a || !b) return EINVAL;
  ws_worker *w = ws_self();
  struct pool *p = ws_resolve(pool);
  if (!p) return EINVAL;
  pool_task_t ta, tb;
  int rc = pool_spawn(p, &tb, b, b_arg);
  if (rc) return rc;
  if (w && w->pool == p) {
    a(a_arg);
    return pool_sync(&tb);
  }
  /* From outside the pool both halves run on its workers, so that what
   * they spawn (a NULL pool means "my pool" there) stays in this pool. */
  rc = pool_spawn(p, &ta, a, a_arg);
  if (rc) {
    /* b is queued already: wait for it, then run a here. */
    pool_sync(&tb);
    a(a_arg);
    return 0;
  }
  pool_sync(&ta);
  return pool_sync(&tb);
}

/* Groups. */

#define GROUP_MAGIC 0x67726F7570ull /* "group" */
/* `pending` holds the child count in its low bits and, in this bit, "an
 * outside thread is blocked in pool_group_wait". A finishing child learns
 * both from its own decrement, so it notifies the pool's outside-waiter
 * event only when this group has such a waiter, and never reads the group
 * after the decrement. */
#define GROUP_WAITER ((int64_t)1 << 62)
#define GROUP_COUNT (GROUP_WAITER - 1)

typedef struct ws_group {
  struct pool *pool;
  ws_i64 pending;
  uint64_t magic;
} ws_group;

_Static_assert(sizeof(ws_group) <= sizeof(pool_group_t), "pool_group_t too small");

typedef struct group_child {
  ws_task hdr;
  pool_fn fn;
  void *arg;
  ws_group *group;
} group_child;

_Static_assert(sizeof(group_child) <= sizeof(((ws_node *)0)->payload), "node too small");

static void child_exec(ws_task *t, ws_worker *w) {
  group_child *c = (group_child *)t;
  pool_fn fn = c->fn;
  void *arg = c->arg;
  ws_group *g = c->group;
  ws_node_free(ws_node_of(c), w);
  uint64_t t0 = ws_trace_t0(w);
  fn(arg);
  ws_trace_task(w, (ws_fnptr)fn, t0);
  struct pool *p = g->pool;
  /* seq_cst: pairs with an outside waiter's registration (ws_event). After
   * this decrement the group may be gone; only the pool is touched. */
  if (ws_i64_fetch_add(&g->pending, -1, ws_seq_cst) == (GROUP_WAITER | 1)) ws_event_notify(&p->ext);
}

int pool_group_init(pool_group_t *pg, pool_t *pool) {
  if (!pg) return EINVAL;
  struct pool *p = ws_resolve(pool);
  if (!p) return EINVAL;
  ws_group *g = (ws_group *)pg;
  g->pool = p;
  ws_i64_store(&g->pending, 0, ws_relaxed);
  g->magic = GROUP_MAGIC;
  return 0;
}

int pool_group_spawn(pool_group_t *pg, pool_fn fn, void *arg) {
  if (!pg || !fn) return EINVAL;
  ws_group *g = (ws_group *)pg;
  if (g->magic != GROUP_MAGIC) return EINVAL;
  struct pool *p = g->pool;
  ws_worker *w = ws_self();
  bool inside = w && w->pool == p;
  ws_node *n = ws_node_alloc(inside ? w : NULL);
  if (!n) return ENOMEM;
  group_child *c = (group_child *)n->payload;
  c->hdr.exec = child_exec;
  c->fn = fn;
  c->arg = arg;
  c->group = g;
  /* Relaxed: the push publishes it, and the child's decrement comes after
   * its run, which comes after this in happens-before. */
  ws_i64_fetch_add(&g->pending, 1, ws_relaxed);
  int rc = inside ? ws_push(w, &c->hdr) : ws_push_global(p, &c->hdr, true);
  if (rc == 0) return 0;
  ws_node_free(n, inside ? w : NULL);
  if (inside && rc == ENOMEM) {
    fn(arg); /* the deque cannot grow: run it now */
    rc = 0;
  }
  if (ws_i64_fetch_add(&g->pending, -1, ws_seq_cst) == (GROUP_WAITER | 1)) ws_event_notify(&p->ext);
  return rc;
}

int pool_group_wait(pool_group_t *pg) {
  if (!pg) return EINVAL;
  ws_group *g = (ws_group *)pg;
  if (g->magic != GROUP_MAGIC) return EINVAL;
  ws_worker *w = ws_self();
  if (w && w->pool == g->pool) {
    ws_help_until_zero(w, &g->pending, GROUP_COUNT);
    return 0;
  }
  struct pool *p = g->pool;
  if ((ws_i64_load(&g->pending, ws_acquire) & GROUP_COUNT) == 0) return 0;
  /* Register on the pool's event first, then flag the group: a child that
   * sees the flag in its decrement also sees the registration. */
  ws_event_prepare(&p->ext);
  int64_t v = ws_i64_load(&g->pending, ws_relaxed);
  while ((v & GROUP_COUNT) != 0 && !(v & GROUP_WAITER) &&
         !ws_i64_cas(&g->pending, &v, v | GROUP_WAITER, ws_seq_cst)) {
  }
  for (;;) {
    uint32_t e = ws_event_epoch(&p->ext);
    if ((ws_i64_load(&g->pending, ws_seq_cst) & GROUP_COUNT) == 0) break;
    ws_event_wait(&p->ext, e);
  }
  ws_event_finish(&p->ext);
  /* Clear the flag (the count is 0, so no child can be deciding on it), so
   * a reused group does not notify for nothing. */
  v = ws_i64_load(&g->pending, ws_relaxed);
  while ((v & GROUP_WAITER) && (v & GROUP_COUNT) == 0 &&
         !ws_i64_cas(&g->pending, &v, v & ~GROUP_WAITER, ws_acq_rel)) {
  }
  return 0;
}
