/* SPDX-License-Identifier: MIT */
/* pool_destroy drains: everything submitted before it, and everything those
 * tasks submit while the drain runs, has run exactly once when it returns.
 *
 *  1. Queued work: many slow-ish tasks submitted, destroy at once.
 *  2. Destroy while every worker sleeps (idle pool, then after a burst).
 *  3. Running tasks submit more (a tree grown during the drain), and tasks
 *     that do fork/join (spawn/sync, groups) inside during the drain.
 *  4. Create/destroy churn with work in flight: check_iters(200) cycles of
 *     varied worker counts and loads, including destroy right after create
 *     and destroy of a pool that never got work.
 *  5. Two destroys at once: the one that comes second gets ESHUTDOWN.
 *  6. pool_join from outside racing destroy: refused whole, or both halves
 *     run on the pool's workers.
 * Cases: queued, asleep, drain_submits, churn, destroy_twice, join_destroy. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <wspool.h>

#include "check.h"
#include "testutil.h"

static atomic_uint *flags;
static size_t nflags;

static void reset_flags(size_t n) { flags_reset(&flags, &nflags, n); }

/* A few microseconds of work the compiler cannot remove. */
static void busy(unsigned iters) {
  volatile unsigned x = 0;
  for (unsigned i = 0; i < iters; i++) x += i;
  (void)x;
}

static void slow_mark(void *arg) {
  size_t i = (size_t)(uintptr_t)arg;
  CHECK(i < nflags);
  busy(2000);
  atomic_fetch_add(&flags[i], 1);
}

/* ---- 1. queued work ----------------------------------------------------- */

static void test_queued(unsigned threads, size_t n) {
  reset_flags(n);
  pool_t *p = make_pool(threads);
  for (size_t i = 0; i < n; i++) CHECK_OK(pool_submit(p, slow_mark, (void *)(uintptr_t)i));
  CHECK_OK(pool_destroy(p));
  flags_check_once(flags, n, "task");
}

/* ---- 2. destroy while asleep -------------------------------------------- */

static void test_asleep(unsigned threads) {
  pool_t *p = make_pool(threads);
  wait_all_asleep(p);
  CHECK_OK(pool_destroy(p));

  reset_flags(200);
  p = make_pool(threads);
  for (size_t i = 0; i < 100; i++) CHECK_OK(pool_submit(p, slow_mark, (void *)(uintptr_t)i));
  CHECK_OK(pool_wait_idle(p));
  wait_all_asleep(p);
  for (size_t i = 100; i < 200; i++) CHECK_OK(pool_submit(p, slow_mark, (void *)(uintptr_t)i));
  CHECK_OK(pool_destroy(p));
  flags_check_once(flags, 200, "task");
}

/* ---- 3. submissions during the drain ------------------------------------ */

/* Separate flag arrays per kind of task. */
static atomic_uint *tree_flags, *child_flags, *follow_flags;
static size_t tree_nodes, fj_children;

/* Tree in heap order, fanout 3; each node works a little before submitting
 * its children, so the drain is well under way when they arrive. */
static void tree_node(void *arg) {
  size_t v = (size_t)(uintptr_t)arg;
  CHECK(v < tree_nodes);
  busy(500);
  for (size_t c = 3 * v + 1; c <= 3 * v + 3 && c < tree_nodes; c++)
    CHECK_OK(pool_submit(NULL, tree_node, (void *)(uintptr_t)c));
  atomic_fetch_add(&tree_flags[v], 1);
}

/* Fork/join inside a task during the drain: fib with spawn/sync
 * (fib_task), and a group of children, all of which must have run. */
static void group_child(void *arg) {
  size_t i = (size_t)(uintptr_t)arg;
  busy(100);
  atomic_fetch_add(&child_flags[i], 1);
}

static void follow_up(void *arg) {
  size_t i = (size_t)(uintptr_t)arg;
  busy(2000);
  atomic_fetch_add(&follow_flags[i], 1);
}

static void fj_root(void *arg) {
  size_t slot = (size_t)(uintptr_t)arg;
  fib_arg f = {16, 0};
  fib_task(&f);
  CHECK_EQ(f.r, fib_seq(16));
  pool_group_t g;
  CHECK_OK(pool_group_init(&g, NULL));
  size_t base = slot * fj_children;
  for (size_t i = 0; i < fj_children; i++)
    CHECK_OK(pool_group_spawn(&g, group_child, (void *)(uintptr_t)(base + i)));
  CHECK_OK(pool_group_wait(&g));
  for (size_t i = 0; i < fj_children; i++) CHECK_EQ(atomic_load(&child_flags[base + i]), 1);
  /* A fire-and-forget task submitted after the wait, still in the drain. */
  CHECK_OK(pool_submit(NULL, follow_up, (void *)(uintptr_t)slot));
}

static void test_drain_submits(unsigned threads, size_t nodes, size_t roots) {
  tree_nodes = nodes;
  fj_children = 300;
  tree_flags = flags_alloc(nodes);
  child_flags = flags_alloc(roots * fj_children);
  follow_flags = flags_alloc(roots);
  pool_t *p = make_pool(threads);
  CHECK_OK(pool_submit(p, tree_node, (void *)(uintptr_t)0));
  for (size_t r = 0; r < roots; r++) CHECK_OK(pool_submit(p, fj_root, (void *)(uintptr_t)r));
  CHECK_OK(pool_destroy(p));
  flags_check_once(tree_flags, nodes, "tree node");
  flags_check_once(child_flags, roots * fj_children, "group child");
  flags_check_once(follow_flags, roots, "follow-up");
  free((void *)tree_flags);
  free((void *)child_flags);
  free((void *)follow_flags);
}

/* ---- 4. churn ------------------------------------------------------------ */

static void churn_task(void *arg) {
  size_t i = (size_t)(uintptr_t)arg;
  CHECK(i < nflags);
  /* Every 4th task submits a child at index i + 1 (reserved for it). */
  if (i % 4 == 0) CHECK_OK(pool_submit(NULL, churn_task, (void *)(uintptr_t)(i + 1)));
  busy(200);
  atomic_fetch_add(&flags[i], 1);
}

static void test_churn(unsigned long cycles) {
  uint64_t s = 0x9E3779B97F4A7C15ull;
  for (unsigned long c = 0; c < cycles; c++) {
    rng_next(&s);
    unsigned threads = 1 + (unsigned)(s % 4);
    size_t roots = (c % 5 == 0) ? 0 : (size_t)((s >> 16) % 64);
    /* Indices: roots at multiples of 4 spawn index+1; others are plain.
     * Use 4 slots per root: [4k] spawns [4k+1]; [4k+2] plain; [4k+3] unused. */
    size_t n = 4 * roots;
    reset_flags(n);
    pool_t *p = make_pool(threads);
    for (size_t k = 0; k < roots; k++) {
      CHECK_OK(pool_submit(p, churn_task, (void *)(uintptr_t)(4 * k)));
      CHECK_OK(pool_submit(p, churn_task, (void *)(uintptr_t)(4 * k + 2)));
    }
    if (c % 7 == 3) CHECK_OK(pool_wait_idle(p));
    CHECK_OK(pool_destroy(p));
    for (size_t i = 0; i < n; i++) CHECK_EQ(atomic_load(&flags[i]), i % 4 == 3 ? 0 : 1);
  }
}

/* 5. Two destroys of one pool at once: the second, called while the
 * first drains (held open by a task until the second returned), gets
 * ESHUTDOWN and frees nothing; the first returns 0 once the task ran. */
static atomic_int second_done;
static pool_t *twice_pool;

static void hold_until_second(void *arg) {
  (void)arg;
  while (!atomic_load(&second_done)) sched_yield();
}

static void *first_destroy(void *arg) {
  *(int *)arg = pool_destroy(twice_pool);
  return NULL;
}

static void nothing(void *arg) { (void)arg; }

static void test_destroy_twice(unsigned threads) {
  atomic_store(&second_done, 0);
  twice_pool = make_pool(threads);
  CHECK_OK(pool_submit(twice_pool, hold_until_second, NULL));
  int first_rc = -1;
  pthread_t th;
  CHECK_OK(pthread_create(&th, NULL, first_destroy, &first_rc));
  /* The first destroy has begun once an outside submit is refused. */
  int rc;
  while ((rc = pool_submit(twice_pool, nothing, NULL)) == 0) sched_yield();
  CHECK_EQ(rc, ESHUTDOWN);
  CHECK_EQ(pool_destroy(twice_pool), ESHUTDOWN);
  atomic_store(&second_done, 1);
  CHECK_OK(pthread_join(th, NULL));
  CHECK_EQ(first_rc, 0);
}

static void case_queued(void) {
  test_queued(1, check_iters(2000));
  test_queued(2, check_iters(5000));
  test_queued(4, check_iters(5000));
}

static void case_asleep(void) {
  test_asleep(1);
  test_asleep(2);
  test_asleep(3);
}

static void case_drain_submits(void) {
  test_drain_submits(1, check_iters(3000), 4);
  test_drain_submits(2, check_iters(10000), 8);
  test_drain_submits(4, check_iters(10000), 8);
}

static void case_churn(void) { test_churn(check_iters(200)); }

static void case_destroy_twice(void) {
  for (unsigned long c = 0; c < check_iters(20); c++) test_destroy_twice(1 + (unsigned)(c % 3));
}

/* 6. pool_join from an outside thread racing destroy: refused whole
 * (ESHUTDOWN, neither half run) or run whole, both halves on the pool's
 * workers (before, b could be accepted and a refused, then run on the
 * caller: 0.4-3 % of rounds here). A joiner joins until refused. */
typedef struct join_half_rec {
  pool_t *pool;
  atomic_int ran, in_pool;
} join_half_rec;
static void join_half_mark(void *arg) {
  join_half_rec *h = arg;
  atomic_fetch_add(&h->ran, 1);
  atomic_store(&h->in_pool, pool_current() == h->pool && pool_worker_id() >= 0);
}
enum { JOINS = 64 };
typedef struct joiner {
  pool_t *pool;
  atomic_int go;
  int n, rc[JOINS];
  join_half_rec a[JOINS], b[JOINS];
} joiner;
static void *join_until_refused(void *arg) {
  joiner *j = arg;
  while (!atomic_load(&j->go)) sched_yield();
  for (int i = 0; i < JOINS; i++) {
    j->a[i].pool = j->b[i].pool = j->pool;
    j->rc[i] = pool_join(j->pool, join_half_mark, &j->a[i], join_half_mark, &j->b[i]);
    j->n = i + 1;
    if (j->rc[i] != 0) break;
  }
  return NULL;
}
static void case_join_destroy(void) {
  for (unsigned long r = 0; r < check_iters(1000); r++) {
    joiner *j = calloc(1, sizeof *j);
    CHECK(j != NULL);
    j->pool = make_pool(2);
    pthread_t th;
    CHECK_OK(pthread_create(&th, NULL, join_until_refused, j));
    atomic_store(&j->go, 1);
    busy((unsigned)(r % 64) * 50);
    CHECK_OK(pool_destroy(j->pool));
    CHECK_OK(pthread_join(th, NULL));
    for (int i = 0; i < j->n; i++) {
      int ra = atomic_load(&j->a[i].ran), rb = atomic_load(&j->b[i].ran);
      if (j->rc[i] == 0) {
        CHECK(ra == 1 && rb == 1);
        CHECK(atomic_load(&j->a[i].in_pool) && atomic_load(&j->b[i].in_pool));
      } else {
        CHECK_EQ(j->rc[i], ESHUTDOWN);
        CHECK(ra == 0 && rb == 0);
      }
    }
    free(j);
  }
}

TEST_MAIN(200, TEST_CASE(queued), TEST_CASE(asleep), TEST_CASE(drain_submits), TEST_CASE(churn),
          TEST_CASE(destroy_twice), TEST_CASE(join_destroy))
