/* SPDX-License-Identifier: MIT */
/* Spawns from a thread outside the pool, per wspool.h: pool_sync "blocks
 * until a worker has run it (the task runs in the pool, so what it spawns
 * stays there too)", and pool_join from outside runs both halves on the
 * pool's workers while the caller blocks.
 *
 *  - Every worker is first held by a task, the children are spawned from
 *    outside while nobody can take them, then the holders are released and
 *    the children synced (FIFO and LIFO): each child ran exactly once, on a
 *    worker of that pool (pool_current() == pool, a valid worker id), never
 *    on the syncing thread.
 *  - What such a child spawns with the NULL pool stays in that pool (the
 *    grandchildren check pool_current()), also when the pool is not the
 *    default one.
 *  - pool_join from outside (explicit pool and NULL = the default pool):
 *    both halves ran exactly once, each on a worker of that pool.
 * Cases: held (the children spawned while every worker is held), join,
 * default_pool. */
#include <sched.h>
#include <stdatomic.h>
#include <wspool.h>

#include "check.h"
#include "testutil.h"

static atomic_int released, holders_started, holders_done;

static void holder(void *arg) {
  (void)arg;
  atomic_fetch_add(&holders_started, 1);
  while (!atomic_load(&released)) sched_yield();
  atomic_fetch_add(&holders_done, 1);
}

typedef struct child_arg {
  pool_t *expect;
  unsigned nthreads;
  atomic_int runs;
  atomic_int bad;
  atomic_int grand_runs;
} child_arg;

static void where_check(child_arg *c) {
  int id = pool_worker_id();
  if (pool_current() != c->expect || id < 0 || (unsigned)id >= c->nthreads)
    atomic_fetch_add(&c->bad, 1);
}

static void grandchild(void *p) {
  child_arg *c = p;
  where_check(c);
  atomic_fetch_add(&c->grand_runs, 1);
}

static void child(void *p) {
  child_arg *c = p;
  atomic_fetch_add(&c->runs, 1);
  where_check(c);
  /* NULL pool inside = this pool. */
  pool_task_t t[3];
  for (int i = 0; i < 3; i++) CHECK_OK(pool_spawn(NULL, &t[i], grandchild, c));
  for (int i = 0; i < 3; i++) CHECK_OK(pool_sync(&t[i]));
  CHECK_OK(pool_submit(NULL, grandchild, c));
  pool_group_t g;
  CHECK_OK(pool_group_init(&g, NULL));
  CHECK_OK(pool_group_spawn(&g, grandchild, c));
  CHECK_OK(pool_group_wait(&g));
}

static void held(unsigned threads, unsigned nkids, int lifo) {
  pool_t *pool = make_pool(threads);
  atomic_store(&released, 0);
  atomic_store(&holders_started, 0);
  atomic_store(&holders_done, 0);
  for (unsigned i = 0; i < threads; i++) CHECK_OK(pool_submit(pool, holder, NULL));
  while (atomic_load(&holders_started) < (int)threads) sched_yield();

  /* Every worker is held: nobody can take these yet. */
  child_arg kids[8];
  pool_task_t t[8];
  CHECK(nkids <= 8);
  for (unsigned i = 0; i < nkids; i++) {
    kids[i].expect = pool;
    kids[i].nthreads = threads;
    atomic_init(&kids[i].runs, 0);
    atomic_init(&kids[i].bad, 0);
    atomic_init(&kids[i].grand_runs, 0);
    CHECK_OK(pool_spawn(pool, &t[i], child, &kids[i]));
  }
  atomic_store(&released, 1);
  for (unsigned k = 0; k < nkids; k++) {
    unsigned i = lifo ? nkids - 1 - k : k;
    CHECK_OK(pool_sync(&t[i]));
    CHECK_EQ(atomic_load(&kids[i].runs), 1);
    CHECK_EQ(atomic_load(&kids[i].bad), 0);
  }
  CHECK_OK(pool_wait_idle(pool)); /* the submitted grandchildren */
  for (unsigned i = 0; i < nkids; i++) {
    CHECK_EQ(atomic_load(&kids[i].grand_runs), 5);
    CHECK_EQ(atomic_load(&kids[i].bad), 0);
  }
  CHECK_EQ(atomic_load(&holders_done), threads);
  CHECK_OK(pool_destroy(pool));
}

/* pool_join from outside: both halves in the pool. */
static void join(unsigned threads) {
  pool_t *pool = make_pool(threads);
  for (int r = 0; r < 50; r++) {
    child_arg a = {pool, threads, 0, 0, 0}, b = {pool, threads, 0, 0, 0};
    CHECK_OK(pool_join(pool, child, &a, child, &b));
    CHECK_EQ(atomic_load(&a.runs), 1);
    CHECK_EQ(atomic_load(&b.runs), 1);
    CHECK_EQ(atomic_load(&a.bad), 0);
    CHECK_EQ(atomic_load(&b.bad), 0);
    CHECK_OK(pool_wait_idle(pool));
    CHECK_EQ(atomic_load(&a.grand_runs), 5);
    CHECK_EQ(atomic_load(&b.grand_runs), 5);
  }
  CHECK_OK(pool_destroy(pool));
}

static void case_default_pool(void) {
  pool_t *d = pool_default();
  CHECK(d != NULL);
  unsigned n = pool_threads(d);
  child_arg a = {d, n, 0, 0, 0}, b = {d, n, 0, 0, 0};
  CHECK_OK(pool_join(NULL, child, &a, child, &b));
  CHECK_EQ(atomic_load(&a.runs), 1);
  CHECK_EQ(atomic_load(&b.runs), 1);
  CHECK_OK(pool_wait_idle(NULL));
  CHECK_EQ(atomic_load(&a.grand_runs), 5);
  CHECK_EQ(atomic_load(&b.grand_runs), 5);
  CHECK_EQ(atomic_load(&a.bad), 0);
  CHECK_EQ(atomic_load(&b.bad), 0);
  child_arg c = {d, n, 0, 0, 0};
  pool_task_t t;
  CHECK_OK(pool_spawn(NULL, &t, child, &c));
  CHECK_OK(pool_sync(&t));
  CHECK_EQ(atomic_load(&c.runs), 1);
  CHECK_OK(pool_wait_idle(NULL));
  CHECK_EQ(atomic_load(&c.grand_runs), 5);
  CHECK_EQ(atomic_load(&c.bad), 0);
}

static void case_held(void) {
  held(1, 1, 0);
  held(2, 1, 0);
  held(1, 5, 0);
  held(2, 5, 1);
  held(3, 8, 1);
}

static void case_join(void) {
  join(1);
  join(2);
  join(1);
  join(2);
  join(3);
}

TEST_MAIN(60, TEST_CASE(held), TEST_CASE(join), TEST_CASE(default_pool))
