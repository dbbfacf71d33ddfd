/* SPDX-License-Identifier: MIT */
/* Blocking regions and their stand-in threads (wspool.h, group blocking;
 * the protocol and why it holds: docs/design.md 5.9).
 *
 * A task about to block calls pool_blocking_begin(): its thread counts in
 * the pool's `blocked`, and while fewer stand-ins are awake (`active`) than
 * threads are blocked, and than the limit, the region wakes a parked
 * stand-in or starts a new one. A stand-in is a worker of its own (deque,
 * private frames, node cache), id nthreads + k, unbound among the workers'
 * CPUs; it runs the worker loop, steals from every worker (and the workers
 * and other stand-ins from it: worker.c), and parks between tasks once it
 * is surplus (worker.c, standin_park). Here: the regions, the limit, and
 * starting a stand-in; pool.c joins and frees them. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "chaos.h"

/* "<name>-s<k>" within the 15 visible bytes, as hooks.c names workers
 * "<name>-w<index>": the name is cut, never the index. */
static void name_standin(const ws_worker *w) {
  const struct pool *p = w->pool;
  char suffix[16], full[WS_NAME_MAX];
  int sl = snprintf(suffix, sizeof suffix, "-s%u", w->id - p->nthreads);
  if (sl < 0) return;
  size_t keep = strlen(p->hooks.name);
  if (keep > WS_NAME_MAX - 1 - (size_t)sl) keep = WS_NAME_MAX - 1 - (size_t)sl;
  memcpy(full, p->hooks.name, keep);
  memcpy(full + keep, suffix, (size_t)sl + 1);
  (void)pthread_setname_np(pthread_self(), full); /* cosmetic: failure is harmless */
}

/* A bound pool's stand-in runs on any of its workers' CPUs: it stands in
 * for whichever worker blocks, and would otherwise keep the CPU of the
 * worker that started it (a thread inherits its creator's affinity). The
 * union of the workers' own affinities, best effort. */
static void widen_affinity(struct pool *p) {
  if (p->cfg.bind == POOL_BIND_NONE) return;
  cpu_set_t all, one;
  CPU_ZERO(&all);
  for (unsigned i = 0; i < p->nthreads; i++) {
    if (pthread_getaffinity_np(p->workers[i]->thread, sizeof one, &one) != 0) return;
    CPU_OR(&all, &all, &one);
  }
  (void)pthread_setaffinity_np(pthread_self(), sizeof all, &all);
}

/* A stand-in's thread: as a worker's (pool.c), with its own name, and the
 * hooks called directly (the pool's start signal was given long ago). The
 * workers' threads outlive it: destroy joins them only after every thread
 * of the pool passed the loop's exit barrier. */
static void *standin_main(void *arg) {
  ws_worker *w = arg;
  struct pool *p = w->pool;
  ws_set_self(w);
  ws_chaos_thread(w->id);
  ws_worker_stack_bounds(w);
  widen_affinity(p);
  name_standin(w);
  if (p->cfg.on_worker_start) p->cfg.on_worker_start(p, w->id, p->cfg.hook_ctx);
  ws_worker_loop(w);
  if (p->cfg.on_worker_stop) p->cfg.on_worker_stop(p, w->id, p->cfg.hook_ctx);
  ws_set_self(NULL);
  return NULL;
}

/* Stand-in k, built (its victims: every worker, one level). */
static ws_worker *build_standin(struct pool *p, unsigned k) {
  ws_worker *w = ws_worker_build(p, p->nthreads + k);
  if (!w) return NULL;
  w->victims = ws_mem_alloc(&p->mem, p->nthreads * sizeof(unsigned));
  w->nvictims = p->nthreads;
  if (!w->victims) {
    ws_worker_free(p, w);
    return NULL;
  }
  w->victims_own = true;
  for (unsigned i = 0; i < p->nthreads; i++) w->victims[i] = i;
  w->level_end[0] = p->nthreads;
  w->nlevels = 1;
  w->standin = true;
  return w;
}

/* Under standin_lock: one more stand-in awake, by waking a parked one or
 * starting one; false when none can be (memory, thread limits). */
static bool wake_standin(struct pool *p) {
  unsigned ns = ws_u32_load(&p->nstandins, ws_relaxed); /* written under the lock */
  ws_worker **slots = ws_ptr_load(&p->standins, ws_relaxed);
  /* Under the lock, the started stand-ins not parked are exactly `active`
   * of them (both change together, under it): wake a parked one if any. */
  for (unsigned k = 0; k < ns; k++) {
    ws_worker *w = slots[k];
    if (w->started && ws_u32_load(&w->park, ws_relaxed) != 0) {
      /* Release, paired with its acquire load (worker.c, standin_park): our
       * writes before this one are visible to it. It needs none but the
       * value (it reads `active` again under the lock before it parks),
       * but the pairing keeps the hand-over simple to reason about. */
      ws_u32_store(&w->park, 0, ws_release);
      ws_futex_wake(&w->park, 1);
      return true;
    }
  }
  /* None parked: start one, in the first slot without a thread (one whose
   * pthread_create failed before), else in a new slot. */
  if (!slots) {
    slots = ws_mem_calloc(&p->mem, POOL_MAX_THREADS, sizeof(ws_worker *));
    if (!slots) return false;
    /* Relaxed: readers reach it only through the count's release below. */
    ws_ptr_store(&p->standins, slots, ws_relaxed);
  }
  unsigned k = 0;
  while (k < ns && slots[k]->started) k++;
  if (k == POOL_MAX_THREADS) return false;
  if (k == ns) {
    ws_worker *w = build_standin(p, k);
    if (!w) return false;
    slots[k] = w;
    /* Release: thieves that acquire the count find the slot and the whole
     * worker built. Before the thread starts, so that a sleeper's last look
     * covers its deque before it can push (5.9). */
    ws_u32_store(&p->nstandins, k + 1, ws_release);
  }
  ws_worker *w = slots[k];
  pthread_attr_t attr;
  if (pthread_attr_init(&attr) != 0) return false;
  pthread_attr_setstacksize(&attr, p->cfg.stack_size);
  int rc = pthread_create(&w->thread, &attr, standin_main, w);
  pthread_attr_destroy(&attr);
  if (rc != 0) return false; /* the slot stays, empty, for the next try */
  w->started = true; /* read by destroy under the lock, and by this path */
  return true;
}

int pool_blocking_begin(void) {
  ws_worker *w = ws_self();
  if (!w || w->block_depth++ > 0) return 0;
  struct pool *p = w->pool;
  /* What the blocked task spawned is the stand-ins' work: public now. */
  if (ws_top() != w->priv_lo) ws_publish(w, (size_t)(ws_top() - w->priv_lo));
  /* Dekker's pattern with a parking stand-in (worker.c, standin_park),
   * all seq_cst: our increment, then our load of `active`; its decrement of
   * `active`, then its load of `blocked`. One of the two loads sees the
   * other's write, so a region never goes unserved while a stand-in parks. */
  uint32_t b = ws_u32_fetch_add(&p->blocked, 1, ws_seq_cst) + 1;
  uint32_t a = ws_u32_load(&p->active, ws_seq_cst);
  /* Relaxed: a limit set by another thread applies from some later region. */
  bool started = false;
  if (a < b && a < ws_u32_load(&p->standin_limit, ws_relaxed)) {
    pthread_mutex_lock(&p->standin_lock);
    /* Again under the lock, where `active` and `standin_closing` only
     * change: regions that ended meanwhile may have made a stand-in
     * unnecessary. */
    a = ws_u32_load(&p->active, ws_relaxed);
    b = ws_u32_load(&p->blocked, ws_seq_cst);
    if (!p->standin_closing && a < b && a < ws_u32_load(&p->standin_limit, ws_relaxed) &&
        wake_standin(p)) {
      ws_u32_store(&p->active, a + 1, ws_seq_cst); /* seq_cst: the Dekker pair above */
      started = true;
    }
    pthread_mutex_unlock(&p->standin_lock);
  }
  /* No stand-in for this region: one thread fewer free. An awake stand-in
   * counted against it may be asleep in an isolated wait itself, so
   * isolated sleepers look again (ws_none_free; each that finds none free
   * enters a region, until one starts a stand-in). seq_cst load, against
   * a sleeper's increment, then its registration and its load of
   * `blocked`: it sees our increment, or we see it and our notify sees its
   * registration. */
  if (!started && ws_u32_load(&p->iso_asleep, ws_seq_cst) != 0) ws_wait_notify(&p->sleep);
  return 0;
}

int pool_blocking_end(void) {
  ws_worker *w = ws_self();
  if (!w) return 0;
  WS_MISUSE_IF(w->block_depth == 0, "pool_blocking_end() without pool_blocking_begin()");
  if (w->block_depth == 0) return EINVAL;
  if (--w->block_depth > 0) return 0;
  /* Relaxed: it publishes nothing; a stand-in that reads the old value
   * stays awake a task longer (worker.c), never parks too early. */
  ws_u32_fetch_add(&w->pool->blocked, (uint32_t)-1, ws_relaxed);
  return 0;
}

void ws_latch_wait_isolated(struct pool *p, const ws_latch *l, ws_worker *hint) {
  /* Nothing this thread may run is left: what remains lies on other
   * deques or in the global queue (a parked stand-in's deque, a shrunk
   * worker's tasks, work spawned below the floor), for the pool's other
   * threads. It sleeps while one of them is free, and after each wake
   * looks and spins as any waiter; once none is free, it sleeps as a task
   * that blocks, and a stand-in runs in its place. A region of the task's
   * own counts it already. */
  ws_worker *w = ws_self();
  bool counted = w->block_depth == 0;
  for (;;) {
    /* seq_cst: ws_none_free's loads, by this thread and the others. */
    if (counted) ws_u32_fetch_add(&p->iso_asleep, 1, ws_seq_cst);
    ws_slept r = ws_latch_sleep_once(w, l, counted);
    if (r == WS_SLEPT_NONE_FREE) pool_blocking_begin(); /* in `blocked` before it leaves iso_asleep */
    if (counted) ws_u32_fetch_add(&p->iso_asleep, (uint32_t)-1, ws_seq_cst);
    if (r == WS_SLEPT_HELD) return;
    if (r == WS_SLEPT_NONE_FREE) {
      while (ws_latch_sleep_once(w, l, false) != WS_SLEPT_HELD) {
      }
      pool_blocking_end();
      return;
    }
    if (ws_latch_help(p, l, hint)) return;
  }
}

int pool_set_standin_limit(pool_t *pool, unsigned limit) {
  int rc;
  struct pool *p = ws_resolve_err(pool, &rc);
  if (!p) return rc;
  if (limit > POOL_MAX_THREADS) return EINVAL;
  /* From outside, inside the gate: the struct may be another pool's by now. */
  ws_worker *self = ws_self();
  bool inside = self && self->pool == p;
  if (!inside && (rc = ws_enter(p)) != 0) return rc;
  /* Relaxed: regions read it as a hint, and again under the lock. */
  ws_u32_store(&p->standin_limit, limit, ws_relaxed);
  if (!inside) ws_leave(p);
  return 0;
}

unsigned pool_standin_limit(const pool_t *pool) {
  struct pool *p = ws_resolve((struct pool *)pool);
  /* As pool_threads(): the struct is never freed. */
  return p && !ws_pool_forked(p) ? ws_u32_load(&p->standin_limit, ws_relaxed) : 0;
}
