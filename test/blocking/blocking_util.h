/* SPDX-License-Identifier: MIT */
/* Helpers shared by the blocking-region tests (suite 'blocking'): pools
 * with a stand-in limit, a bounded wait for a counter, and the bookkeeping
 * of which threads run tasks at once.
 *
 * The tests wait for conditions that only a stand-in can bring about (a
 * task blocked in a region waits for work queued behind it); a wait that
 * runs out is a failure, never a timing figure: the bound (30 s times
 * WSPOOL_STRESS) is far beyond the milliseconds they take. */
#ifndef WSPOOL_TEST_BLOCKING_UTIL_H
#define WSPOOL_TEST_BLOCKING_UTIL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>
#include <wspool.h>

#include "check.h"
#include "testutil.h"

/* A pool of `threads` workers whose stand-in limit is `limit`. */
static inline pool_t *make_blocking_pool(unsigned threads, unsigned limit) {
  pool_t *p = make_pool(threads);
  CHECK_OK(pool_set_standin_limit(p, limit));
  CHECK_EQ(pool_standin_limit(p), limit);
  return p;
}

static inline double blk_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Waits (sleeping, as a blocked task would) until *v >= target; false if
 * it has not after 30 s times WSPOOL_STRESS (with every pool's state on
 * stderr). */
static inline bool wait_at_least(atomic_uint *v, unsigned target) {
  double end = blk_now() + 30.0 * (double)test_stress_factor();
  while (atomic_load(v) < target) {
    if (blk_now() > end) {
      pool_dump_state(2); /* where the stand-ins are, for the failure */
      return false;
    }
    sleep_ms(1);
  }
  return true;
}

/* fn(pool) on fresh pools of `threads` workers and stand-in limit
 * `limit`, each size listed: ON_BLOCKING_POOLS(fn, limit, 1, 2, 4). */
#define ON_BLOCKING_POOLS(fn, limit, ...)                                          \
  do {                                                                             \
    static const unsigned on_bp_sizes_[] = {__VA_ARGS__};                          \
    for (size_t on_bp_i_ = 0; on_bp_i_ < sizeof on_bp_sizes_ / sizeof(unsigned); \
         on_bp_i_++) {                                                             \
      pool_t *on_bp_p_ = make_blocking_pool(on_bp_sizes_[on_bp_i_], (limit));      \
      fn(on_bp_p_);                                                                \
      CHECK_OK(pool_destroy(on_bp_p_));                                            \
    }                                                                              \
  } while (0)

/* Threads running tasks at once: each task calls occ_enter() first and
 * occ_leave() last. A task that waits (pool_sync) may run others inside
 * it on its thread: only a thread's outermost task counts, so the counts
 * are of threads: `all` every thread, `standins` those with
 * pool_worker_id() >= nthreads. The maxima are kept. */
typedef struct occupancy {
  unsigned nthreads, limit;
  atomic_uint all, standins, max_all, max_standins;
} occupancy;

/* The task's thread, checked: a worker, or a stand-in of an id below
 * nthreads + limit (stand-ins are numbered from nthreads, and no more than
 * `limit` are ever started: one starts only when every one is awake). */
static _Thread_local unsigned occ_depth_;

static inline int occ_enter(occupancy *o) {
  int id = pool_worker_id();
  if (id < 0 || (unsigned)id >= o->nthreads + o->limit)
    FAIL("a task ran on worker id %d; the pool has %u workers and at most %u stand-ins\n", id,
         o->nthreads, o->limit);
  if (occ_depth_++ > 0) return id;
  atomic_max_u(&o->max_all, atomic_fetch_add(&o->all, 1) + 1);
  if ((unsigned)id >= o->nthreads) {
    unsigned s = atomic_fetch_add(&o->standins, 1) + 1;
    atomic_max_u(&o->max_standins, s);
    if (s > o->limit) FAIL("%u stand-ins run tasks at once; the limit is %u\n", s, o->limit);
  }
  return id;
}

static inline void occ_leave(occupancy *o, int id) {
  if (--occ_depth_ > 0) return;
  if ((unsigned)id >= o->nthreads) atomic_fetch_sub(&o->standins, 1);
  atomic_fetch_sub(&o->all, 1);
}

#endif
