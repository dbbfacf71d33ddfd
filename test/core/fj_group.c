/* SPDX-License-Identifier: MIT */
/* Task groups: every child exactly once, and pool_group_wait waits for all.
 *
 *  - groups of 0, 1 and check_iters(100000) children, from inside a task and
 *    from an outside thread, on 1, 2 and 4 workers;
 *  - a group reused after its wait (spawn, wait, spawn more, wait, wait on
 *    nothing);
 *  - nested groups: each child opens its own group for its own children
 *    (depth 3, fanout 12), every node exactly once, exact subtree sums;
 *  - children that spawn further children into their own group while the
 *    parent waits: the wait covers them too (they are spawned before the
 *    spawning child finishes);
 *  - pool_group_init(g, NULL): inside = the caller's pool, outside = the
 *    default pool (each child checks pool_current());
 *  - a wait for the group from its own work (a child, a frame, a loop body,
 *    an isolated computation in a child) is EDEADLK, at once.
 * Cases: flat, nested, selfspawn, selfwait (each on pools of 1, 2 and 4
 * workers), null_pool. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <wspool.h>

#include "check.h"
#include "testutil.h"

static atomic_uint *flags;
static size_t nflags;
static pool_t *expect_pool; /* where children must run */
static atomic_int wrong_pool;

static void reset_flags(size_t n) { flags_reset(&flags, &nflags, n); }

/* Children 0..n-1 each ran exactly once. */
static void check_once(size_t n) { flags_check_once(flags, n, "child"); }

static void mark(void *arg) {
  size_t i = (size_t)(uintptr_t)arg;
  CHECK(i < nflags);
  if (pool_current() != expect_pool) atomic_fetch_add(&wrong_pool, 1);
  atomic_fetch_add(&flags[i], 1);
}

/* ---- flat groups ---------------------------------------------------------- */

typedef struct flat_arg {
  pool_t *pool; /* for pool_group_init: NULL allowed */
  size_t n;
  int done;
} flat_arg;

static void flat(void *p) {
  flat_arg *a = p;
  pool_group_t g;
  CHECK_OK(pool_group_init(&g, a->pool));
  CHECK_OK(pool_group_wait(&g)); /* empty group: returns at once */
  for (size_t i = 0; i < a->n; i++) CHECK_OK(pool_group_spawn(&g, mark, (void *)(uintptr_t)i));
  CHECK_OK(pool_group_wait(&g));
  check_once(a->n);
  /* Reuse: more children into the same group, then wait again. */
  size_t more = a->n / 2 + 1;
  CHECK(a->n + more <= nflags);
  for (size_t i = a->n; i < a->n + more; i++)
    CHECK_OK(pool_group_spawn(&g, mark, (void *)(uintptr_t)i));
  CHECK_OK(pool_group_wait(&g));
  check_once(a->n + more);
  CHECK_OK(pool_group_wait(&g)); /* nothing new: returns at once */
  check_once(a->n + more);
  a->done = 1;
}

static void test_flat(pool_t *pool, size_t n) {
  /* Inside a task, with the explicit pool and with NULL (= this pool). */
  for (int use_null = 0; use_null < 2; use_null++) {
    reset_flags(n + n / 2 + 1);
    expect_pool = pool;
    flat_arg a = {use_null ? NULL : pool, n, 0};
    CHECK_OK(pool_submit(pool, flat, &a));
    CHECK_OK(pool_wait_idle(pool));
    CHECK_EQ(a.done, 1);
  }
  /* From this outside thread. */
  reset_flags(n + n / 2 + 1);
  flat_arg a = {pool, n, 0};
  flat(&a);
  CHECK_EQ(a.done, 1);
  CHECK_EQ(atomic_load(&wrong_pool), 0);
}

/* ---- nested groups -------------------------------------------------------- */

enum { FAN = 12, DEPTH = 3 };

typedef struct nest {
  size_t id; /* heap order with fanout FAN */
  unsigned depth;
  uint64_t sum;
} nest;

static size_t nest_count(unsigned depth) {
  size_t n = 1, level = 1;
  for (unsigned d = 0; d < depth; d++) {
    level *= FAN;
    n += level;
  }
  return n;
}

static void nest_fn(void *p) {
  nest *n = p;
  CHECK(n->id < nflags);
  atomic_fetch_add(&flags[n->id], 1);
  uint64_t sum = n->id;
  if (n->depth < DEPTH) {
    nest kids[FAN];
    pool_group_t g;
    CHECK_OK(pool_group_init(&g, NULL));
    for (unsigned c = 0; c < FAN; c++) {
      kids[c] = (nest){n->id * FAN + c + 1, n->depth + 1, 0};
      CHECK_OK(pool_group_spawn(&g, nest_fn, &kids[c]));
    }
    CHECK_OK(pool_group_wait(&g));
    for (unsigned c = 0; c < FAN; c++) sum += kids[c].sum;
  }
  n->sum = sum;
}

static void test_nested(pool_t *pool) {
  size_t total = nest_count(DEPTH);
  uint64_t expect = (uint64_t)total * (total - 1) / 2; /* ids 0..total-1 */
  reset_flags(total);
  nest root = {0, 0, 0};
  CHECK_OK(pool_submit(pool, nest_fn, &root));
  CHECK_OK(pool_wait_idle(pool));
  CHECK_EQ(root.sum, expect);
  check_once(total);
  /* The root's group from outside: only the root runs here. */
  reset_flags(total);
  nest root2 = {0, 0, 0};
  pool_group_t g;
  CHECK_OK(pool_group_init(&g, pool));
  CHECK_OK(pool_group_spawn(&g, nest_fn, &root2));
  CHECK_OK(pool_group_wait(&g));
  CHECK_EQ(root2.sum, expect);
  check_once(total);
}

/* ---- children spawning into their own group ------------------------------- */

typedef struct selfspawn {
  pool_group_t *g;
  size_t id; /* binary heap order */
  size_t limit;
} selfspawn;

static selfspawn *ss_nodes;

static void ss_fn(void *p) {
  selfspawn *s = p;
  atomic_fetch_add(&flags[s->id], 1);
  for (size_t c = 2 * s->id + 1; c <= 2 * s->id + 2 && c < s->limit; c++) {
    ss_nodes[c] = (selfspawn){s->g, c, s->limit};
    CHECK_OK(pool_group_spawn(s->g, ss_fn, &ss_nodes[c]));
  }
}

static void ss_root(void *p) {
  size_t n = (size_t)(uintptr_t)p;
  pool_group_t g;
  CHECK_OK(pool_group_init(&g, NULL));
  ss_nodes[0] = (selfspawn){&g, 0, n};
  CHECK_OK(pool_group_spawn(&g, ss_fn, &ss_nodes[0]));
  CHECK_OK(pool_group_wait(&g));
  check_once(n);
}

static void test_selfspawn(pool_t *pool, size_t n) {
  reset_flags(n);
  ss_nodes = calloc(n, sizeof(selfspawn));
  CHECK(ss_nodes);
  CHECK_OK(pool_submit(pool, ss_root, (void *)(uintptr_t)n));
  CHECK_OK(pool_wait_idle(pool));
  check_once(n);
  reset_flags(n);
  ss_root((void *)(uintptr_t)n); /* the waiter outside */
  free(ss_nodes);
}

/* ---- the NULL pool ------------------------------------------------------- */

static void case_null_pool(void) {
  reset_flags(1000);
  expect_pool = pool_default();
  CHECK(expect_pool != NULL);
  pool_group_t g;
  CHECK_OK(pool_group_init(&g, NULL));
  for (size_t i = 0; i < 1000; i++) CHECK_OK(pool_group_spawn(&g, mark, (void *)(uintptr_t)i));
  CHECK_OK(pool_group_wait(&g));
  check_once(1000);
  CHECK_EQ(atomic_load(&wrong_pool), 0);
}

static void flats(pool_t *pool) {
  test_flat(pool, 0);
  test_flat(pool, 1);
  test_flat(pool, 2);
  test_flat(pool, 300);
  test_flat(pool, check_iters(100000));
}

static void nested(pool_t *pool) {
  expect_pool = pool;
  test_nested(pool);
  CHECK_EQ(atomic_load(&wrong_pool), 0);
}

static void selfspawns(pool_t *pool) {
  test_selfspawn(pool, check_iters(20000));
  CHECK_EQ(atomic_load(&wrong_pool), 0);
}

/* A wait for the group from its own work returns EDEADLK at once: from a
 * child, from a frame a child spawned (run by a thief or taken back), from
 * a loop body in a child, from an isolated computation in a child. A wait
 * there for another group (one a child made) is fine. */
static pool_group_t selfg;
static atomic_int self_rcs[4], self_inner_rc;
static void self_frame(void *p) {
  (void)p;
  atomic_store(&self_rcs[1], pool_group_wait(&selfg));
}
static void self_body(size_t b, size_t e, void *ctx) {
  (void)e, (void)ctx;
  if (b == 0) atomic_store(&self_rcs[2], pool_group_wait(&selfg));
}
static void self_iso(void *p) {
  (void)p;
  atomic_store(&self_rcs[3], pool_group_wait(&selfg));
}
static void self_leaf(void *p) { (void)p; }
static void self_child(void *p) {
  (void)p;
  atomic_store(&self_rcs[0], pool_group_wait(&selfg));
  pool_task_t f;
  CHECK_OK(pool_spawn(NULL, &f, self_frame, NULL));
  CHECK_OK(pool_sync(&f));
  CHECK_OK(pool_parallel_for(NULL, 0, 8, 1, self_body, NULL));
  CHECK_OK(pool_isolate(self_iso, NULL));
  pool_group_t inner;
  CHECK_OK(pool_group_init(&inner, NULL));
  CHECK_OK(pool_group_spawn(&inner, self_leaf, NULL));
  atomic_store(&self_inner_rc, pool_group_wait(&inner));
}
static void selfwaits(pool_t *pool) {
  for (int i = 0; i < 4; i++) atomic_store(&self_rcs[i], -1);
  atomic_store(&self_inner_rc, -1);
  CHECK_OK(pool_group_init(&selfg, pool));
  CHECK_OK(pool_group_spawn(&selfg, self_child, NULL));
  CHECK_OK(pool_group_wait(&selfg));
  for (int i = 0; i < 4; i++) CHECK_EQ(atomic_load(&self_rcs[i]), EDEADLK);
  CHECK_EQ(atomic_load(&self_inner_rc), 0);
}

static void case_flat(void) { ON_POOLS(flats, 1, 2, 4); }
static void case_selfwait(void) { ON_POOLS(selfwaits, 1, 2, 4); }
static void case_nested(void) { ON_POOLS(nested, 1, 2, 4); }
static void case_selfspawn(void) { ON_POOLS(selfspawns, 1, 2, 4); }

TEST_MAIN(240, TEST_CASE(flat), TEST_CASE(nested), TEST_CASE(selfspawn), TEST_CASE(null_pool),
          TEST_CASE(selfwait))
