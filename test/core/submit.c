/* SPDX-License-Identifier: MIT */
/* pool_submit + pool_wait_idle: every task runs exactly once, and
 * pool_wait_idle waits for everything, including what tasks submitted.
 *
 *  - from one outside thread;
 *  - from 8 outside threads at once (each its own slice of flags);
 *  - from inside tasks: a tree where every task submits its children; the
 *    outside waits once for the whole tree;
 *  - mixed: outside threads submit roots of trees while the trees grow;
 *  - on pools of 1, 2 and 4 workers (1 forces every inside submit through
 *    the worker's own deque; 4 oversubscribes this machine);
 *  - per-worker statistics are consistent: with only submitted tasks, each
 *    task was taken exactly once from somewhere (local_pops + global_pops +
 *    steals == tasks run), the entries taken off the global queue
 *    (global_taken, in batches) == the outside submissions, and the
 *    tasks counters reach the exact total.
 * Cases: one_worker, two_workers, four_workers: each part above on one
 * pool of that size, the statistics accumulating over the parts. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <wspool.h>

#include "check.h"
#include "testutil.h"

static atomic_uint *flags;
static size_t nflags;

static void reset_flags(size_t n) { flags_reset(&flags, &nflags, n); }

static void mark(void *arg) {
  size_t i = (size_t)(uintptr_t)arg;
  CHECK(i < nflags);
  atomic_fetch_add(&flags[i], 1);
}

/* Per-worker stats: sums. `tasks` is bumped after the task finished, so it
 * may lag behind pool_wait_idle(): poll (the watchdog bounds it). The pop
 * counters are bumped before the task runs, so they never fall short; but a
 * submit batch's steal handle taken just as its runner claimed the last
 * entry is counted as a take until the handle finds nothing and undoes it
 * (ws_uncount_take), which may come after the wait returned (seen under
 * the chaos build): they may be one over per such handle until then. */
static void check_stats(pool_t *p, uint64_t expect_tasks, uint64_t expect_global) {
  unsigned n = pool_threads(p);
  CHECK(n > 0);
  uint64_t tasks;
  for (;;) {
    uint64_t sum_tasks = 0, taken = 0, global = 0;
    for (unsigned w = 0; w < n; w++) {
      pool_worker_stats_t s;
      CHECK_OK(pool_worker_stats(p, w, &s));
      sum_tasks += s.tasks;
      taken += s.local_pops + s.global_pops + s.steals;
      global += s.global_taken;
      CHECK(s.global_pops <= s.global_taken);
      CHECK(s.steals_remote <= s.steals);
    }
    CHECK(taken >= expect_tasks);
    CHECK_EQ(global, expect_global);
    CHECK(sum_tasks <= expect_tasks);
    tasks = sum_tasks;
    if (tasks == expect_tasks && taken == expect_tasks) break;
    sched_yield();
  }
  CHECK_EQ(tasks, expect_tasks);
}

/* ---- one outside thread ------------------------------------------------ */

static void test_one_outside(pool_t *p, size_t n, uint64_t *tasks, uint64_t *global) {
  reset_flags(n);
  for (size_t i = 0; i < n; i++) CHECK_OK(pool_submit(p, mark, (void *)(uintptr_t)i));
  CHECK_OK(pool_wait_idle(p));
  flags_check_once(flags, n, "task");
  /* Waiting again with nothing pending returns at once. */
  CHECK_OK(pool_wait_idle(p));
  *tasks += n;
  *global += n;
}

/* ---- many outside threads ---------------------------------------------- */

typedef struct submitter {
  pool_t *pool;
  size_t lo, hi;
  atomic_int *go;
} submitter;

static void *submitter_main(void *a) {
  submitter *s = a;
  while (!atomic_load(s->go)) sched_yield();
  for (size_t i = s->lo; i < s->hi; i++)
    CHECK_OK(pool_submit(s->pool, mark, (void *)(uintptr_t)i));
  return NULL;
}

static void test_many_outside(pool_t *p, unsigned nthreads, size_t per, uint64_t *tasks,
                              uint64_t *global) {
  size_t n = per * nthreads;
  reset_flags(n);
  pthread_t th[16];
  submitter s[16];
  atomic_int go = 0;
  for (unsigned k = 0; k < nthreads; k++) {
    s[k] = (submitter){p, k * per, (k + 1) * per, &go};
    CHECK_OK(pthread_create(&th[k], NULL, submitter_main, &s[k]));
  }
  atomic_store(&go, 1);
  for (unsigned k = 0; k < nthreads; k++) CHECK_OK(pthread_join(th[k], NULL));
  CHECK_OK(pool_wait_idle(p));
  flags_check_once(flags, n, "task");
  *tasks += n;
  *global += n;
}

/* ---- trees of submits from inside tasks --------------------------------- */

/* A complete tree of fanout F and depth D; node ids in heap order:
 * children of v are v*F+1 .. v*F+F. */
typedef struct tree {
  pool_t *pool;
  unsigned fanout;
  size_t nnodes;
  size_t base; /* flag offset */
} tree;

static tree trees[16];

typedef union tref {
  struct {
    uint32_t tree;
    uint32_t node;
  } s;
  void *p;
} tref;

static void tree_node(void *arg) {
  tref r;
  r.p = arg;
  tree *t = &trees[r.s.tree];
  size_t v = r.s.node;
  CHECK(v < t->nnodes);
  CHECK(pool_current() == t->pool);
  atomic_fetch_add(&flags[t->base + v], 1);
  for (unsigned c = 1; c <= t->fanout; c++) {
    size_t child = v * t->fanout + c;
    if (child >= t->nnodes) break;
    tref cr;
    cr.p = NULL;
    cr.s.tree = r.s.tree;
    cr.s.node = (uint32_t)child;
    /* Alternate explicit pool and NULL (= the caller's pool, inside). */
    CHECK_OK(pool_submit(child & 1 ? t->pool : NULL, tree_node, cr.p));
  }
}

static void submit_tree_root(unsigned k) {
  tref r;
  r.p = NULL;
  r.s.tree = k;
  r.s.node = 0;
  CHECK_OK(pool_submit(trees[k].pool, tree_node, r.p));
}

static void test_tree(pool_t *p, unsigned fanout, size_t nnodes, uint64_t *tasks,
                      uint64_t *global) {
  CHECK(sizeof(void *) >= 8);
  reset_flags(nnodes);
  trees[0] = (tree){p, fanout, nnodes, 0};
  submit_tree_root(0);
  CHECK_OK(pool_wait_idle(p));
  flags_check_once(flags, nnodes, "task");
  *tasks += nnodes;
  *global += 1;
}

/* Several outside threads each submit the root of its own tree. */
typedef struct tree_submitter {
  unsigned k;
  atomic_int *go;
} tree_submitter;

static void *tree_submitter_main(void *a) {
  tree_submitter *ts = a;
  while (!atomic_load(ts->go)) sched_yield();
  submit_tree_root(ts->k);
  return NULL;
}

static void test_trees_from_threads(pool_t *p, unsigned nthreads, size_t nnodes, uint64_t *tasks,
                                    uint64_t *global) {
  reset_flags(nnodes * nthreads);
  pthread_t th[16];
  tree_submitter ts[16];
  atomic_int go = 0;
  for (unsigned k = 0; k < nthreads; k++) {
    trees[k] = (tree){p, 2 + k % 3, nnodes, k * nnodes};
    ts[k] = (tree_submitter){k, &go};
    CHECK_OK(pthread_create(&th[k], NULL, tree_submitter_main, &ts[k]));
  }
  atomic_store(&go, 1);
  for (unsigned k = 0; k < nthreads; k++) CHECK_OK(pthread_join(th[k], NULL));
  CHECK_OK(pool_wait_idle(p));
  flags_check_once(flags, nnodes * nthreads, "task");
  *tasks += nnodes * nthreads;
  *global += nthreads;
}

/* ---- a long chain: each task submits the next one ---------------------- */

static size_t chain_len;
static pool_t *chain_pool;

static void chain_step(void *arg) {
  size_t i = (size_t)(uintptr_t)arg;
  atomic_fetch_add(&flags[i], 1);
  if (i + 1 < chain_len) CHECK_OK(pool_submit(chain_pool, chain_step, (void *)(uintptr_t)(i + 1)));
}

static void test_chain(pool_t *p, size_t n, uint64_t *tasks, uint64_t *global) {
  reset_flags(n);
  chain_len = n;
  chain_pool = p;
  CHECK_OK(pool_submit(p, chain_step, (void *)(uintptr_t)0));
  CHECK_OK(pool_wait_idle(p));
  flags_check_once(flags, n, "task");
  *tasks += n;
  *global += 1;
}

static void run_all(unsigned workers) {
  pool_t *p = make_pool(workers);
  uint64_t tasks = 0, global = 0;
  test_one_outside(p, 1, &tasks, &global);
  test_one_outside(p, check_iters(50000), &tasks, &global);
  check_stats(p, tasks, global);
  test_many_outside(p, 8, check_iters(10000), &tasks, &global);
  check_stats(p, tasks, global);
  test_tree(p, 2, check_iters(65535), &tasks, &global);
  test_tree(p, 7, check_iters(40000), &tasks, &global);
  test_tree(p, 1, 1, &tasks, &global);
  check_stats(p, tasks, global);
  test_trees_from_threads(p, 8, check_iters(5000), &tasks, &global);
  test_chain(p, check_iters(20000), &tasks, &global);
  check_stats(p, tasks, global);
  CHECK_OK(pool_destroy(p));
}

static void case_one_worker(void) { run_all(1); }
static void case_two_workers(void) { run_all(2); }
static void case_four_workers(void) { run_all(4); }

TEST_MAIN(240, TEST_CASE(one_worker), TEST_CASE(two_workers), TEST_CASE(four_workers))
