/* SPDX-License-Identifier: MIT */
/* Fork/join: pool_spawn/pool_sync/pool_take on caller-owned frames,
 * pool_join, and task groups (docs/design.md 7 and 11).
 *
 * A spawn from a worker is a frame initialised in place (nothing is
 * allocated) and, in the common case, one store into the worker's private
 * frame stack; the matching sync finds it on top and calls the function
 * inline, or pool_take hands it back to the caller: no fence, no atomic RMW.
 * That common case is also in wspool/inline.h, inline, for callers compiled with
 * optimisation; the functions here do everything. Frames are published to
 * the Chase-Lev deque lazily (below). A published frame is synced through
 * the deque's pop; if it was stolen, the syncer helps: it steals from the
 * thief first (leapfrogging: what the thief pushed is the stolen task's own
 * subtree), then anywhere, within the stack bound described in wspool.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "job.h"
#include "profile.h"

/* A spawn from a thread that is not a worker of p: the frame goes on the
 * global queue; the push and its notify happen inside the pool's gate
 * (pool.c). */
static int spawn_outside(struct pool *p, ws_frame *f) {
  int rc = ws_enter(p);
  if (rc) return rc;
  f->hdr.exec = ws_frame_exec;
  f->owner = NULL;
  f->pool = p;
  f->ctx = ws_ctx_current();
  ws_ptr_store(&f->thief, NULL, ws_relaxed);
  /* Relaxed: the queue's lock publishes it. */
  ws_u32_store(&f->state, frame_state(f, FRAME_SPAWNED), ws_relaxed);
  rc = ws_push_global(p, &f->hdr, 0);
  if (rc) ws_u32_store(&f->state, FRAME_IDLE, ws_relaxed);
  ws_leave(p);
  return rc;
}

/* Keeps f private, like the inline spawn's frames (fn and arg only), when
 * it can: false when it must be public (a trace or the debug checks
 * publish every frame, nothing private is left to publish when the deque
 * is empty, or the private stack cannot grow). When nothing is public, or
 * a thief found it so (limit 0), the oldest half of the private frames is
 * published first. */
static bool spawn_private(ws_worker *w, ws_frame *f) {
  if (w->trace || WS_DEBUG || ws_prof_on(w->pool)) return false;
  if (ws_abi_load(&pool__tls.limit, ws_relaxed) == 0) {
    size_t n = (size_t)(ws_top() - w->priv_lo);
    if (n == 0) return false;
    ws_publish(w, (n + 1) / 2);
  }
  if (ws_top() == w->priv_end && ws_priv_grow(w) != 0) return false;
  *ws_top() = &f->hdr;
  ws_set_top(ws_top() + 1);
  ws_fast_open(w);
  return true;
}

/* Publishes f on w's deque. When neither the private array nor the deque
 * can grow, it runs now and its sync finds it done. */
static void spawn_public(ws_worker *w, ws_frame *f) {
  f->ctx = ws_ctx_current();
  ws_frame_make_public(f, w);
  if (ws_push(w, &f->hdr) == 0) {
    ws_fast_open(w);
    return;
  }
  f->fn(f->arg);
  pool__tls.tasks++; /* joins w->stats.tasks in ws_run() */
  ws_u32_store(&f->state, frame_state(f, FRAME_DONE), ws_relaxed);
}

/* Everything but the common case: publication, growth, outside spawns. */
static __attribute__((noinline)) int spawn_slow(pool_t *pool, pool_task_t *task, pool_fn fn,
                                                void *arg) {
  uint64_t prof_x = ws_prof_entry(); /* profiled: the spawner's strand ends here */
  if (!task || !fn) return EINVAL;
  ws_worker *w = ws_self();
  int rc;
  struct pool *p = ws_resolve_err(pool, &rc);
  if (!p) return rc;
  ws_frame *f = (ws_frame *)task;
  if (WS_DEBUG) {
    /* Every frame is published in these builds, so a pending one has a
     * state; IDLE again once synced. */
    uint32_t st = ws_u32_load(&f->state, ws_relaxed);
    WS_MISUSE_IF(f->hdr.exec == ws_frame_exec &&
                     (st == frame_state(f, FRAME_SPAWNED) || st == frame_state(f, FRAME_DONE)),
                 "pool_spawn into a frame that is still pending (spawned, not yet synced)");
#ifdef WS_DEBUG_CHECKS
    f->spawner = ws_thread_tag();
#endif
  }
  bool inside = w && w->pool == p;
  /* Profiled: the frame runs ws_prof_child with a record of fn and arg,
   * and the publication is no part of the spawner's strand. */
  bool prof = __builtin_expect(ws_prof_on(p), 0);
  if (prof) ws_prof_spawn(p, inside ? w : NULL, prof_x, &fn, &arg);
  f->fn = fn;
  f->arg = arg;
  if (!inside) {
    rc = spawn_outside(p, f);
  } else {
    if (!spawn_private(w, f)) spawn_public(w, f);
    rc = 0;
  }
  if (prof && rc != 0 && f->fn == ws_prof_child) {
    /* Refused (destroy began): the record goes back, the frame is the
     * caller's as it gave it. */
    ws_prof_sync_end((ws_prof_rec *)f->arg, inside ? w : NULL, &f->fn, &f->arg);
  } else if (prof) {
    ws_prof_resume_own(p);
  }
  return rc;
}

/* The library's own spawn, sync and take, for callers that do not inline
 * the header's: the same fast paths (wspool/inline.h), then the slow ones
 * here. */
int pool_spawn(pool_t *pool, pool_task_t *task, pool_fn fn, void *arg) {
  POOL__SPAWN_FAST(pool, task, fn, arg);
  return spawn_slow(pool, task, fn, arg);
}

/* Runs private frame g, taken off the stack by an out-of-order sync of an
 * older frame, and marks it done for its own sync. Nobody but its owner
 * (this thread) ever sees it: it was never in the deque. So of the fields
 * publication sets, it needs only the two that sync_slow reads of a
 * finished frame, exec and state, set after the run (relaxed: read on this
 * thread). Counted like an inline sync's run: the thread-local count joins
 * the worker's statistic in ws_run(), which runs the task this sync is
 * in. */
static void run_unwound(ws_frame *g, ws_worker *w) {
  uint64_t t0 = ws_trace_t0(w);
  g->fn(g->arg);
  ws_trace_task(w, (ws_fnptr)g->fn, t0);
  pool__tls.tasks++;
  g->hdr.exec = ws_frame_exec;
  ws_u32_store(&g->state, frame_state(g, FRAME_DONE), ws_relaxed);
}

/* Is f on the private stack of w, the caller's worker? Searched from the
 * top, and only for a frame that carries no published state (sync_slow):
 * everything above f is what the caller spawned after f, which the sync
 * then runs, so the search costs no more than the unwinding it leads to. */
static bool priv_holds(const ws_worker *w, const ws_frame *f) {
  for (ws_task **s = ws_top(); s != w->priv_lo;)
    if (*--s == &f->hdr) return true;
  return false;
}

/* How a sync or take off the fast path found its frame: handed back
 * unstarted (the caller runs it, or takes it back), or finished. */
typedef enum sync_found { FOUND_UNSTARTED, FOUND_DONE } sync_found;

#ifdef WS_DEBUG_CHECKS
/* Where this thread's running pool_sync or pool_take was called from (its
 * return address), for order_note. A sync nested in it (a task it runs
 * while it unwinds or helps) saves and restores it. */
static __thread const void *sync_ra;

/* Does the caller's code at return address `next` follow a call of a
 * trampoline (wspool/inline.h, POOL__TRAMP)? Then the frame below it is
 * the trampoline's, and `next` is the site. The instruction after that
 * call is always `lea 128(%rsp), %rsp`, whose encoding no compiler
 * varies; found by its bytes, the trampolines' addresses are not needed
 * (tramp.S calls this file: naming its symbols here would close a cycle
 * between the two). */
static bool after_tramp(const void *next) {
#if defined(__x86_64__) && !defined(__ILP32__)
  static const unsigned char lea_rsp_128[8] = {0x48, 0x8d, 0xa4, 0x24, 0x80, 0x00, 0x00, 0x00};
  return memcmp(next, lea_rsp_128, sizeof lea_rsp_128) == 0;
#else
  (void)next;
  return false;
#endif
}

/* A sync whose frame was not the newest pending one of its thread: the
 * newer ones ran first, off the inline path. Noted once per call site: a
 * program means to sync newest first in recursive code, and this is how
 * it learns where it does not (release builds keep no such check). */
static __attribute__((cold, noinline)) void order_note(void) {
  ws_debug_note_site("a sync took the slow path because of its order: newer frames spawned "
                     "by this thread were still pending, and ran first (sync the newest spawn "
                     "first to stay on the inline path)",
                     sync_ra, after_tramp);
}
#define ORDER_NOTE() order_note()
#else
#define ORDER_NOTE() ((void)0)
#endif

/* Frame f, pending on worker w (the caller's), and what w did since:
 * what was spawned after it runs first, here (each one's own sync then
 * finds it done). All private frames are newer than the public ones. A
 * frame run here may spawn and publish, f included: then f is public (its
 * state set) when the private stack runs out. If f is not found, a thief
 * took it: w helps until the thief finishes it. */
static sync_found unwind_to(ws_frame *f, ws_worker *w) {
  /* Debug builds note the first newer frame (ORDER_NOTE): private ones
   * here, public ones (all of them, in those builds) in the deque. */
  bool newer = false;
  while (ws_top() != w->priv_lo) {
    ws_task *t = ws_top()[-1];
    ws_set_top(ws_top() - 1);
    if (t == &f->hdr) return FOUND_UNSTARTED;
    if (WS_DEBUG && !newer) {
      newer = true;
      ORDER_NOTE();
    }
    run_unwound((ws_frame *)t, w);
  }
  /* Isolated: not below the computation's floor (design.md 7.5). */
  const ws_scope *iso = ws_isolation();
  for (;;) {
    ws_task *t = iso ? ws_pop_own_from(w, iso->floor) : ws_pop_own(w);
    if (t == &f->hdr) return FOUND_UNSTARTED;
    if (!t) break;
    if (WS_DEBUG && !newer && t->exec == ws_frame_exec) {
      newer = true;
      ORDER_NOTE();
    }
    ws_counter_add(&w->stats.local_pops, 1);
    ws_run(w, t);
  }
  ws_latch done = ws_latch_value(&f->state, frame_state(f, FRAME_DONE));
  /* Acquire: pairs with the thief's release store (ws_frame_exec), so the
   * worker it names, perhaps a stand-in built since, is complete. */
  ws_latch_wait(w->pool, &done, (ws_worker *)ws_ptr_load(&f->thief, ws_acquire));
  return FOUND_DONE;
}

/* A frame spawned from outside its pool (it has no owner): block until a
 * worker ran it. Accepted work: destroy runs it before it waits for the
 * gate, so only a pool of the parent process (fork) refuses. */
static int wait_outside(ws_frame *f) {
  int rc = ws_enter_any(f->pool);
  if (rc) return rc;
  ws_latch done = ws_latch_value(&f->state, frame_state(f, FRAME_DONE));
  ws_latch_wait(f->pool, &done, NULL);
  ws_leave(f->pool);
  return 0;
}

/* Sync (take = false) or take (true) of a frame off the fast path.
 *
 * The state first: a frame that finished (run by a thief, or by an earlier
 * out-of-order sync that unwound past it) or was published is told by it
 * in O(1). Only a frame with neither state can be private, and only then
 * is the private stack searched. The private stack may hold far more than
 * the caller's own frames (an out-of-order sync runs the caller's later
 * children with the ancestors' pending siblings still below), so searching
 * it first would make every out-of-order sync below pay for all of them
 * (docs/design.md 7.2). A private frame's memory never holds its own
 * published state: the library sets every state it gives back to IDLE
 * when the frame's sync returns. */
static __attribute__((noinline)) int sync_slow(ws_frame *f, ws_worker *self, bool take) {
  /* A profiled frame: the caller's strand ends here (profile.h). */
  ws_prof_rec *pr = f->fn == ws_prof_child ? (ws_prof_rec *)f->arg : NULL;
  if (pr) (void)ws_prof_pause(pr->pool);
  uint32_t st = ws_u32_load(&f->state, ws_acquire);
  bool finished = st == frame_state(f, FRAME_DONE);
  bool published = (finished || st == frame_state(f, FRAME_SPAWNED)) && f->hdr.exec == ws_frame_exec;
  sync_found found = FOUND_DONE;
  if (!published) {
    if (!(self && priv_holds(self, f))) {
      WS_MISUSE_IF(true, "pool_sync/pool_take of a frame that is not pending (synced twice, or "
                         "never spawned)");
      return EINVAL;
    }
    found = unwind_to(f, self);
  } else {
#ifdef WS_DEBUG_CHECKS
    WS_MISUSE_IF(f->spawner != ws_thread_tag(),
                 "pool_sync/pool_take from a thread other than the one that spawned the frame");
#endif
    /* Every frame is published in debug builds, its unit set at the spawn
     * (spawn_public): the same unit must be current at its sync. */
    WS_MISUSE_IF(WS_DEBUG && f->ctx != ws_ctx_current(),
                 "pool_sync/pool_take of a frame spawned in another unit of work (in a group "
                 "child, join half or loop body that has returned, or synced inside a join, "
                 "loop or group child it was not spawned in)");
    if (finished) {
      /* Run by a thief, or by an earlier out-of-order sync. */
    } else if (!f->owner) {
      int rc = wait_outside(f);
      if (rc) {
        if (pr) ws_prof_sync_end(pr, self, &f->fn, &f->arg);
        return rc;
      }
    } else if (f->owner != self) {
      return EINVAL; /* (debug: reported above) */
    } else {
      found = unwind_to(f, self);
    }
  }
  if (found == FOUND_UNSTARTED) {
    /* Handed back: not a task run (the caller does the work); but a
     * profiled frame runs here, as a strand of its own (wspool.h). */
    if (take && !pr) {
      ws_u32_store(&f->state, FRAME_IDLE, ws_relaxed);
      return POOL_TAKEN;
    }
    uint64_t t0 = ws_trace_t0(self);
    f->fn(f->arg);
    ws_trace_task(self, ws_prof_fn_of(f->fn, f->arg), t0);
    ws_counter_add(&self->stats.tasks, 1);
  }
  if (pr) ws_prof_sync_end(pr, self, &f->fn, &f->arg);
  ws_u32_store(&f->state, FRAME_IDLE, ws_relaxed);
  return 0;
}

#ifdef WS_DEBUG_CHECKS
static __attribute__((noinline)) int sync_slow_from(ws_frame *f, bool take, const void *ra) {
  const void *outer = sync_ra;
  sync_ra = ra;
  int rc = sync_slow(f, ws_self(), take);
  sync_ra = outer;
  return rc;
}
/* In pool_sync and pool_take: their caller is the site order_note names. */
#define SYNC_SLOW(f, take) sync_slow_from(f, take, __builtin_return_address(0))
#else
#define SYNC_SLOW(f, take) sync_slow(f, ws_self(), take)
#endif

int pool_sync(pool_task_t *task) {
  /* Tracing never leaves a frame private, so the fast path has no trace
   * to record. */
  if (__builtin_expect(pool__pop_private(task), 1)) {
    ws_frame *f = (ws_frame *)task;
    f->fn(f->arg);
    pool__tls.tasks++; /* joins w->stats.tasks in ws_run() */
    return 0;
  }
  if (!task) return EINVAL;
  return SYNC_SLOW((ws_frame *)task, false);
}

int pool_take(pool_task_t *task) {
  if (__builtin_expect(pool__pop_private(task), 1)) return POOL_TAKEN;
  if (!task) return EINVAL;
  return SYNC_SLOW((ws_frame *)task, true);
}

/* The names the header's inline versions call (wspool/inline.h). */
int pool__spawn_full(pool_t *pool, pool_task_t *task, pool_fn fn, void *arg)
    __attribute__((alias("pool_spawn")));
int pool__sync_full(pool_task_t *task) __attribute__((alias("pool_sync")));
int pool__take_full(pool_task_t *task) __attribute__((alias("pool_take")));

/* A half of a pool_join: run in the join's unit, or skipped if that is
 * cancelled (a failure of the other half, or of work it is nested in). */
typedef struct join_half {
  pool_fn fn;
  void *arg;
  ws_ctx *unit;
  bool frame; /* runs as a frame, which counts as a task run */
} join_half;

static void join_run(void *arg) {
  join_half *h = arg;
  ws_scope s;
  ws_scope_enter(&s, h->unit);
  if (!ws_ctx_cancelled(h->unit)) {
    h->fn(h->arg);
  } else if (ws_self()) {
    ws_counter_add(&ws_self()->stats.skipped, 1);
    if (h->frame) pool__tls.tasks--; /* not a run after all */
  }
  ws_scope_pop(&s);
}

/* A pool_join from outside, run by a worker of the pool as one frame: the
 * join as a worker does it (b spawned, a run, b synced). */
typedef struct join_pair {
  join_half a, b;
} join_pair;

static void join_inside(void *arg) {
  join_pair *j = arg;
  pool_task_t tb;
  /* From a worker into its own pool: 0 (a spawn that cannot publish or
   * grow runs b at once, and the sync finds it done). */
  (void)pool_spawn(NULL, &tb, join_run, &j->b);
  join_run(&j->a);
  pool_sync(&tb);
}

int pool_join(pool_t *pool, pool_fn a, void *a_arg, pool_fn b, void *b_arg) {
  if (!a || !b) return EINVAL;
  ws_worker *w = ws_self();
  int rc;
  struct pool *p = ws_resolve_err(pool, &rc);
  if (!p) return rc;
  ws_ctx unit;
  ws_ctx_init(&unit, ws_ctx_current());
  if (w && w->pool == p) {
    join_half ha = {a, a_arg, &unit, false}, hb = {b, b_arg, &unit, true};
    pool_task_t tb;
    rc = pool_spawn(p, &tb, join_run, &hb);
    if (rc) return rc;
    join_run(&ha);
    pool_sync(&tb);
    return ws_ctx_result(&unit);
  }
  /* From outside the pool both halves run on its workers, so that what
   * they spawn (a NULL pool means "my pool" there) stays in this pool; in
   * one frame, which the pool takes whole or refuses (a destroy that
   * began: ESHUTDOWN, neither half run). */
  join_pair j = {{a, a_arg, &unit, false}, {b, b_arg, &unit, true}};
  pool_task_t t;
  rc = pool_spawn(p, &t, join_inside, &j);
  if (rc) return rc;
  pool_sync(&t);
  return ws_ctx_result(&unit);
}

/* Groups. */

#define GROUP_MAGIC 0x67726F7570ull /* "group" */
/* What an initialised group holds in `magic`: the constant folded with the
 * group's own address, so that stale stack memory, where another group
 * once lived at another address, never passes for an initialised (or a
 * busy) group at this one. */
#define GROUP_TAG(g) (GROUP_MAGIC ^ (uint64_t)(uintptr_t)(g))
/* `pending` holds the child count in its low bits and, in this bit, "an
 * outside thread is blocked in pool_group_wait". A finishing child learns
 * both from its own decrement, so it notifies the pool's outside-waiter
 * event only when this group has such a waiter, and never reads the group
 * after the decrement. */
#define GROUP_WAITER ((int64_t)1 << 62)
/* A continuation (pool_job_after_group) waits in `cont` for the count to
 * fall to zero. */
#define GROUP_CONT ((int64_t)1 << 61)
#define GROUP_COUNT (GROUP_CONT - 1)

typedef struct ws_group {
  struct pool *pool;
  ws_i64 pending;
  uint64_t magic;
  ws_u32 waiting; /* debug checks: a pool_group_wait is running */
  /* ws_fork_gen at the init: in a child of fork() a group of the parent's
   * is told apart even once its pool's struct is a new pool's
   * (group_forked). */
  unsigned fork_gen;
  ws_ctx unit;    /* the group as a unit of work (cancel.h) */
  ws_ptr cont;    /* ws_job *: the continuation, while GROUP_CONT is set */
} ws_group;

_Static_assert(sizeof(ws_group) <= sizeof(pool_group_t), "pool_group_t too small");

/* A group initialised before a fork() this process is a child of: its
 * pool is the parent's and its children the parent's threads' (they
 * never end here), so every call on it but the init is refused. */
static bool group_forked(const ws_group *g) { return g->fork_gen != ws_fork_gen; }

/* 0 for a group the calling process may use; EINVAL when not initialised,
 * EOWNERDEAD when initialised before a fork() (group_forked). */
static int group_usable(const ws_group *g) {
  if (g->magic != GROUP_TAG(g)) return EINVAL;
  return group_forked(g) ? EOWNERDEAD : 0;
}

typedef struct group_child {
  ws_task hdr;
  pool_fn fn;
  void *arg;
  ws_group *group;
  pool_fn drop; /* called instead of fn when the child is skipped, or NULL */
  uint64_t prof_at; /* profiled: the spawner's span (packed; profile.h) */
} group_child;

_Static_assert(sizeof(group_child) <= sizeof(((ws_node *)0)->payload), "node too small");

/* A child finished (or failed to enqueue). The last child's decrement is
 * the latch's last touch (latch.h): seq_cst, as an outside waiter may
 * block on it; after it the group may be gone and only the pool is
 * touched. Outside threads are woken only when one set GROUP_WAITER. */
static void group_done(ws_group *g, struct pool *p) {
  /* Read while the group is ours: a job whose function began it outlives
   * the round (its hold, pool_group_spawn_drop). */
  ws_ctx *job_unit = g->unit.parent && g->unit.parent->job ? g->unit.parent : NULL;
  /* The decrement that ends a round also clears GROUP_CONT, in one step:
   * a child spawned and finished right after it must not find the bit and
   * release the continuation a second time. */
  int64_t old = ws_i64_load(&g->pending, ws_relaxed), nv;
  do {
    nv = old - 1;
    if ((old & GROUP_COUNT) == 1) nv &= ~GROUP_CONT;
  } while (!ws_i64_cas(&g->pending, &old, nv, ws_seq_cst));
  WS_ASSERT((old & GROUP_COUNT) >= 1);
  /* By address only: the group may be gone (or reused: then this may
   * clear the new one's entry, a missed report, never a false one). */
  if (WS_DEBUG && (old & GROUP_COUNT) == 1) ws_debug_busy_set(g, false);
  if ((old & GROUP_COUNT) != 1) return;
  if (old & GROUP_CONT) {
    /* The last child of a group with a continuation, which nobody waits
     * for and which stays valid until the continuation is released (the
     * contract of pool_job_after_group): end the round as a wait would,
     * then let the continuation go. Relaxed: the registration stored it
     * before its release CAS of the bit, which our decrement read. */
    ws_job *j = ws_ptr_load(&g->cont, ws_relaxed);
    int status = ws_ctx_take_result(&g->unit);
    /* Free for the next one (a registration meanwhile finds it taken:
     * EBUSY). Release: what the round did happens before whatever reuses
     * the group after taking the slot. After it, g is not touched. */
    ws_ptr_store(&g->cont, NULL, ws_release);
    ws_job_release(j, status);
  } else {
    ws_latch_notify(p, WS_WAKE_WORKER | (old & GROUP_WAITER ? WS_WAKE_OUTSIDE : 0));
  }
  /* Last: the round's reads of the group's unit walk up into the job's. */
  if (job_unit) ws_job_round_end(job_unit);
}

/* Runs a child of g on worker w in the calling thread's current scope,
 * which is g's; or skips it, once g is cancelled. True if it ran. */
static bool child_run(ws_group *g, pool_fn fn, pool_fn drop, void *arg, ws_worker *w,
                      uint64_t prof_at) {
  if (ws_ctx_cancelled(&g->unit)) {
    ws_counter_add(&w->stats.skipped, 1);
    if (drop) drop(arg);
    return false;
  }
  uint64_t t0 = ws_trace_t0(w);
  if (__builtin_expect(ws_prof_on(g->pool), 0)) {
    /* From its spawner's span; its end counts in the region's span
     * (profile.h: a group's wait does not take it up). */
    uint32_t gen = ws_prof_gen(g->pool);
    ws_strand old = ws_prof_task_begin(g->pool, w, prof_at);
    fn(arg);
    ws_prof_comp(g->pool, gen, ws_prof_task_end(old));
  } else {
    fn(arg);
  }
  ws_trace_task(w, (ws_fnptr)fn, t0);
  return true;
}

static void child_exec(ws_task *t, ws_worker *w) {
  group_child *c = (group_child *)t;
  pool_fn fn = c->fn, drop = c->drop;
  void *arg = c->arg;
  ws_group *g = c->group;
  uint64_t prof_at = c->prof_at;
  ws_node_free(&w->pool->mem, ws_node_of(c), &w->nodes);
  ws_scope_set_ctx(ws__scope, &g->unit);
  if (!child_run(g, fn, drop, arg, w, prof_at)) pool__tls.tasks--; /* ws_run() counts a run */
  struct pool *p = g->pool;
  /* seq_cst (group_done): pairs with an outside waiter's registration
   * (ws_event). After this decrement the group may be gone; only the pool
   * is touched. */
  group_done(g, p);
}

int pool_group_init(pool_group_t *pg, pool_t *pool) {
  if (!pg) return EINVAL;
  int rc;
  struct pool *p = ws_resolve_err(pool, &rc);
  if (!p) return rc;
  if (ws_pool_forked(p)) return EOWNERDEAD;
  ws_group *g = (ws_group *)pg;
  /* Busy when both say so: the table of groups with children pending
   * (debug.c), since the group's memory may be a stale group's whose magic
   * survived beside garbage; and the group's memory, since its last child
   * leaves the table just after the decrement its waiter already saw. */
  WS_MISUSE_IF(ws_debug_busy(g) && g->magic == GROUP_TAG(g) && !group_forked(g) &&
                   (ws_u32_load(&g->waiting, ws_relaxed) != 0 ||
                    (ws_i64_load(&g->pending, ws_acquire) & GROUP_COUNT)),
               "pool_group_init on a group with children pending or being waited on");
  g->pool = p;
  ws_i64_store(&g->pending, 0, ws_relaxed);
  ws_u32_store(&g->waiting, 0, ws_relaxed);
  ws_ctx_init(&g->unit, ws_ctx_current());
  ws_ptr_store(&g->cont, NULL, ws_relaxed);
  g->fork_gen = ws_fork_gen;
  g->magic = GROUP_TAG(g);
  return 0;
}

int pool_job_after_group(pool_job_t *pj, pool_group_t *pg) {
  ws_job *j = ws_job_unstarted(pj);
  if (!j || !pg) return EINVAL;
  ws_group *g = (ws_group *)pg;
  int rc = group_usable(g);
  if (rc) return rc;
  /* The slot first: one registration at a time holds it (relaxed: only
   * its value matters; the bit's CAS below publishes it). */
  void *none = NULL;
  if (!ws_ptr_cas(&g->cont, &none, j, ws_acquire)) return EBUSY;
  ws_job_hold(j);
  /* Acquire (here and the CAS's failure): a count of 0 read from the last
   * child's decrement (a release) orders everything the round's children
   * did before the job, which may run at once (a wait's acquire, 5.6). */
  int64_t v = ws_i64_load(&g->pending, ws_acquire);
  for (;;) {
    if ((v & GROUP_COUNT) == 0) {
      /* Nothing pending: the round ends here. */
      ws_ptr_store(&g->cont, NULL, ws_relaxed);
      ws_job_release(j, ws_ctx_take_result(&g->unit));
      return 0;
    }
    /* Release: `cont` before the last child, which reads it after its
     * decrement finds the bit. */
    if (ws_i64_cas(&g->pending, &v, v | GROUP_CONT, ws_acq_rel)) return 0;
  }
}

int pool_group_spawn(pool_group_t *pg, pool_fn fn, void *arg) {
  return pool_group_spawn_drop(pg, fn, arg, NULL);
}

int pool_group_spawn_drop(pool_group_t *pg, pool_fn fn, void *arg, pool_fn drop) {
  uint64_t prof_x = ws_prof_entry(); /* profiled: the spawner's strand ends here */
  if (!pg || !fn) return EINVAL;
  ws_group *g = (ws_group *)pg;
  WS_MISUSE_IF(g->magic != GROUP_TAG(g), "pool_group_spawn on a group never initialised");
  int rc = group_usable(g);
  if (rc) return rc;
  struct pool *p = g->pool;
  ws_worker *w = ws_self();
  bool inside = w && w->pool == p;
  /* From outside, the push, a refusal's decrement and its notify happen
   * inside the pool's gate (pool.c). */
  rc = inside ? 0 : ws_enter(p);
  if (rc) return rc;
  ws_node *n = ws_node_alloc(&p->mem, inside ? &w->nodes : NULL);
  if (!n) {
    if (!inside) ws_leave(p);
    return ENOMEM;
  }
  group_child *c = (group_child *)n->payload;
  c->hdr.exec = child_exec;
  c->fn = fn;
  c->arg = arg;
  c->group = g;
  c->drop = drop;
  bool prof = __builtin_expect(ws_prof_on(p), 0);
  c->prof_at = prof ? ws_prof_fork(p, prof_x) : 0;
  /* Relaxed: the push publishes it, and the child's decrement comes after
   * its run, which comes after this in happens-before. */
  int64_t had = ws_i64_fetch_add(&g->pending, 1, ws_relaxed);
  if ((had & GROUP_COUNT) == 0) {
    if (WS_DEBUG) ws_debug_busy_set(g, true);
    /* A round of a group begun in a job's function: the job completes
     * after it ends (group_done), as its unit is the group's parent. */
    if (g->unit.parent && g->unit.parent->job) ws_job_round_begin(g->unit.parent);
  }
  rc = inside ? ws_push(w, &c->hdr) : ws_push_global(p, &c->hdr, 0);
  if (rc == 0) {
    if (!inside) ws_leave(p);
    if (prof) ws_prof_resume_own(p); /* the push is no part of the strand */
    return 0;
  }
  uint64_t prof_at = c->prof_at;
  ws_node_free(&p->mem, n, inside ? &w->nodes : NULL);
  if (inside && rc == ENOMEM) {
    /* The deque cannot grow: run it now, as the group's. */
    ws_scope sc;
    ws_scope_enter(&sc, &g->unit);
    if (child_run(g, fn, drop, arg, w, prof_at)) pool__tls.tasks++; /* joins stats.tasks in ws_run() */
    ws_scope_pop(&sc);
    rc = 0;
  }
  group_done(g, p);
  if (!inside) ws_leave(p);
  if (prof) ws_prof_resume_own(p);
  return rc;
}

static int group_wait(ws_group *g);

int pool_group_wait(pool_group_t *pg) {
  if (!pg) return EINVAL;
  ws_group *g = (ws_group *)pg;
  WS_MISUSE_IF(g->magic != GROUP_TAG(g), "pool_group_wait on a group never initialised");
  int rc = group_usable(g); /* EOWNERDEAD: without waiting, its round unended */
  if (rc) return rc;
  /* Relaxed: only a concurrent wait (the misuse) races with it. */
  if (ws_i64_load(&g->pending, ws_relaxed) & GROUP_CONT) return EBUSY;
  /* From inside the group's own work (a child, what a child spawned or
   * runs in a loop; they are all in units nested in the group's), the
   * wait would wait for its caller. The unit current at the init (the
   * group's parent) is not nested in the group: a wait from there, the
   * common case, needs no walk, which would cost the depth of nesting at
   * every level of a recursion through groups. */
  const ws_ctx *cur = ws_ctx_current();
  if (cur != g->unit.parent)
    for (const ws_ctx *c = cur; c; c = c->parent)
      if (c == &g->unit) return EDEADLK;
  WS_MISUSE_IF(ws_u32_xchg(&g->waiting, 1, ws_relaxed) != 0,
               "two pool_group_wait calls on one group at once");
  uint64_t at = ws_prof_wait_begin(g->pool);
  rc = group_wait(g);
  ws_prof_wait_end(g->pool, at);
  /* The next round starts uncancelled: a cancel or failure racing with
   * this lands before it (this round's) or after (the next round's). */
  if (rc == 0) rc = ws_ctx_take_result(&g->unit);
  if (WS_DEBUG) ws_u32_store(&g->waiting, 0, ws_relaxed);
  return rc;
}

int pool_group_cancel(pool_group_t *pg) {
  if (!pg) return EINVAL;
  ws_group *g = (ws_group *)pg;
  WS_MISUSE_IF(g->magic != GROUP_TAG(g), "pool_group_cancel on a group never initialised");
  int rc = group_usable(g);
  if (rc) return rc;
  ws_ctx_cancel(&g->unit);
  return 0;
}

int pool_isolate(pool_fn fn, void *arg) {
  if (!fn) return EINVAL;
  ws_ctx unit;
  ws_ctx_init(&unit, ws_ctx_current());
  unit.iso = true;
  ws_scope s;
  ws_scope_enter(&s, &unit);
  /* A new floor even inside another isolation: an inner one's waits run
   * only the inner one's work. */
  ws_scope_isolate(&s);
  fn(arg);
  ws_scope_pop(&s);
  return ws_ctx_result(&unit);
}

int pool_cancelled(void) {
  ws_ctx *c = ws_ctx_current();
  return c && ws_ctx_cancelled(c);
}

int pool_fail(int err) {
  if (err <= 0) return EINVAL;
  ws_ctx *c = ws_ctx_current();
  if (!c) return ENOENT;
  return ws_ctx_fail(c, err);
}

static int group_wait(ws_group *g) {
  struct pool *p = g->pool;
  ws_latch done = ws_latch_zero(&g->pending, GROUP_COUNT, GROUP_WAITER);
  ws_worker *w = ws_self();
  if (w && w->pool == p) {
    ws_latch_wait(p, &done, NULL);
    return 0;
  }
  if ((ws_i64_load(&g->pending, ws_acquire) & GROUP_COUNT) == 0) return 0;
  /* Children are accepted work: destroy runs them before it waits for the
   * gate, so this wait is never refused (pool.c). */
  int rc = ws_enter_any(p);
  if (rc) return rc; /* the pool is the parent's (fork) */
  ws_latch_wait(p, &done, NULL);
  ws_leave(p);
  return 0;
}
