/* SPDX-License-Identifier: MIT */
/* An isolated wait whose computation's remaining tasks lie where the
 * waiter may not take them (docs/design.md 7.5): on another thread's
 * deque, or in the global queue. Once no other thread of the pool is free
 * to run them, the waiter sleeps in a blocking region, so a stand-in runs
 * them; before, it slept with nobody to run them and the wait never
 * ended.
 *
 *  parked_standin  a task runs pool_isolate; inside, a parallel_for (and,
 *                  in a second round, a group whose children spawn more
 *                  children into it) whose pieces block in a region. The
 *                  stand-ins that served the regions steal pieces, split
 *                  them, and park once the regions end with the halves on
 *                  their deques. Every index once, every child once, the
 *                  loop and the group return 0. Pools of 1 and 2.
 *  shrink          a pool of 2: an isolated computation on worker 0 waits
 *                  for a group whose child worker 1 runs; the child spawns
 *                  10 more into the group, then works 20 ms, while main
 *                  shrinks the pool to 1: worker 1 parks and moves its deque
 *                  (the 10) to the global queue, which an isolated wait does
 *                  not read. All 11 run, the wait returns 0. Rounds whose
 *                  computation landed on worker 1 are started again.
 *  spawned_before  a pool of 1: a task spawns a child into a group, then
 *                  waits for the group inside pool_isolate. The child lies
 *                  below the computation's floor, on the waiter's own
 *                  deque: a stand-in runs it.
 *  no_region       a pool of 2 whose tasks never enter a region: an
 *                  isolated group wait runs out of its work while the other
 *                  worker runs the group's 5 ms child and main submits 20
 *                  tasks. The other worker is free, so the waiter sleeps
 *                  without a region: no stand-in starts (no start hook
 *                  with an id past the workers', no task runs on one).
 *  two_sleepers    a pool of 1: a task spawns a child into a group and
 *                  enters a region, so a stand-in runs the child; the child
 *                  spawns a leaf into a second group, and once the task left
 *                  its region, waits for that group in pool_isolate (the
 *                  leaf lies below its floor); the task waits for the first
 *                  group in pool_isolate. Both sleep isolated: the first to
 *                  find no thread free enters a region that starts no
 *                  stand-in (the awake one is the other sleeper), so the
 *                  other looks again, enters one too, and a stand-in runs
 *                  the leaf.
 *  region_after    a pool of 1: a stand-in that served a region runs a
 *                  task which spawns a leaf and then waits for it in
 *                  pool_isolate; the worker, free, is counted, so that wait
 *                  sleeps. The worker's next task enters a region that
 *                  starts no stand-in (the awake one is that sleeper) and
 *                  blocks until the wait ends: the region makes the
 *                  sleeper look again, it enters a region, and a new
 *                  stand-in runs the leaf.
 * No timing assertions. */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <wspool.h>

#include "check.h"
#include "testutil.h"

static void nap_us(long us) {
  struct timespec ts = {0, us * 1000};
  nanosleep(&ts, NULL);
}

/* ---- parked_standin ------------------------------------------------------- */

enum { NI = 4096, GRAIN = 16, FAN = 8, DEPTH = 3 };

static atomic_uchar seen[NI];
static atomic_uint ps_children;
static pool_group_t ps_group;
static int ps_loop_rc, ps_group_rc;

static void ps_body(size_t b, size_t e, void *ctx) {
  (void)ctx;
  for (size_t i = b; i < e; i++) atomic_fetch_add(&seen[i], 1);
  CHECK_OK(pool_blocking_begin());
  nap_us(200);
  CHECK_OK(pool_blocking_end());
}

/* A child at depth d spawns FAN children of depth d + 1 into the group,
 * then blocks: FAN + FAN^2 + FAN^3 children in all, plus the root. */
static void ps_child(void *arg) {
  uintptr_t d = (uintptr_t)arg;
  if (d < DEPTH)
    for (int i = 0; i < FAN; i++) CHECK_OK(pool_group_spawn(&ps_group, ps_child, (void *)(d + 1)));
  atomic_fetch_add(&ps_children, 1);
  CHECK_OK(pool_blocking_begin());
  nap_us(100);
  CHECK_OK(pool_blocking_end());
}

static void ps_loop(void *arg) {
  (void)arg;
  ps_loop_rc = pool_parallel_for(NULL, 0, NI, GRAIN, ps_body, NULL);
}

static void ps_tree(void *arg) {
  (void)arg;
  CHECK_OK(pool_group_init(&ps_group, NULL));
  CHECK_OK(pool_group_spawn(&ps_group, ps_child, (void *)0));
  ps_group_rc = pool_group_wait(&ps_group);
}

/* The isolated computation: the loop (arg NULL) or the group tree. */
static void ps_task(void *arg) { CHECK_OK(pool_isolate(arg ? ps_tree : ps_loop, NULL)); }

static void parked_standin(pool_t *p) {
  unsigned long rounds = check_iters(10);
  for (unsigned long r = 0; r < rounds; r++) {
    memset(seen, 0, sizeof seen);
    atomic_store(&ps_children, 0);
    ps_loop_rc = ps_group_rc = -1;
    pool_job_t j;
    CHECK_OK(pool_job_submit(p, &j, ps_task, NULL));
    CHECK_OK(pool_job_wait(&j));
    CHECK_OK(ps_loop_rc);
    for (int i = 0; i < NI; i++) CHECK_EQ(atomic_load(&seen[i]), 1);
    CHECK_OK(pool_job_submit(p, &j, ps_task, &j));
    CHECK_OK(pool_job_wait(&j));
    CHECK_OK(ps_group_rc);
    CHECK_EQ(atomic_load(&ps_children), 1 + FAN + FAN * FAN + FAN * FAN * FAN);
  }
}

static void case_parked_standin(void) { ON_POOLS(parked_standin, 1, 2); }

/* ---- shrink --------------------------------------------------------------- */

static pool_group_t sh_group;
static atomic_int sh_ran, sh_in_parent, sh_where;
static int sh_rc;

static void sh_leaf(void *arg) {
  (void)arg;
  atomic_fetch_add(&sh_ran, 1);
}

static void sh_parent(void *arg) {
  (void)arg;
  for (int i = 0; i < 10; i++) CHECK_OK(pool_group_spawn(&sh_group, sh_leaf, NULL));
  atomic_store(&sh_in_parent, 1);
  nap_us(20000);
  atomic_fetch_add(&sh_ran, 1);
}

static void sh_inner(void *arg) {
  (void)arg;
  CHECK_OK(pool_group_init(&sh_group, NULL));
  CHECK_OK(pool_group_spawn(&sh_group, sh_parent, NULL));
  /* Not a wait: this thread takes nothing, so worker 1 steals the child. */
  while (!atomic_load(&sh_in_parent)) nap_us(50);
  sh_rc = pool_group_wait(&sh_group);
}

static void sh_task(void *arg) {
  (void)arg;
  int id = pool_worker_id();
  atomic_store(&sh_where, id);
  if (id == 0) CHECK_OK(pool_isolate(sh_inner, NULL));
}

static void case_shrink(void) {
  pool_config_t c;
  pool_config_default(&c);
  c.threads = 2;
  c.max_threads = 2;
  pool_t *p;
  CHECK_OK(pool_create(&p, &c));
  unsigned long rounds = check_iters(10), done = 0;
  for (unsigned long tries = 0; done < rounds; tries++) {
    CHECK(tries < 100 * rounds); /* half the tries land on worker 0 */
    atomic_store(&sh_ran, 0);
    atomic_store(&sh_in_parent, 0);
    atomic_store(&sh_where, -1);
    sh_rc = -1;
    CHECK_OK(pool_resize(p, 2));
    pool_job_t j;
    CHECK_OK(pool_job_submit(p, &j, sh_task, NULL));
    while (atomic_load(&sh_where) < 0) nap_us(50);
    if (atomic_load(&sh_where) != 0) {
      CHECK_OK(pool_job_wait(&j));
      continue;
    }
    while (!atomic_load(&sh_in_parent)) nap_us(50);
    CHECK_OK(pool_resize(p, 1)); /* worker 1 parks once the child returns */
    CHECK_OK(pool_job_wait(&j));
    CHECK_OK(sh_rc);
    CHECK_EQ(atomic_load(&sh_ran), 11);
    done++;
  }
  CHECK_OK(pool_destroy(p));
}

/* ---- spawned_before ------------------------------------------------------ */

static pool_group_t sb_group;
static atomic_int sb_ran;
static int sb_rc;

static void sb_child(void *arg) {
  (void)arg;
  atomic_fetch_add(&sb_ran, 1);
}

static void sb_inner(void *arg) {
  (void)arg;
  sb_rc = pool_group_wait(&sb_group);
}

static void sb_task(void *arg) {
  (void)arg;
  CHECK_OK(pool_group_init(&sb_group, NULL));
  CHECK_OK(pool_group_spawn(&sb_group, sb_child, NULL));
  CHECK_OK(pool_isolate(sb_inner, NULL));
}

static void spawned_before(pool_t *p) {
  unsigned long rounds = check_iters(20);
  for (unsigned long r = 0; r < rounds; r++) {
    atomic_store(&sb_ran, 0);
    sb_rc = -1;
    pool_job_t j;
    CHECK_OK(pool_job_submit(p, &j, sb_task, NULL));
    CHECK_OK(pool_job_wait(&j));
    CHECK_OK(sb_rc);
    CHECK_EQ(atomic_load(&sb_ran), 1);
  }
}

static void case_spawned_before(void) { ON_POOLS(spawned_before, 1); }

/* ---- no_region ------------------------------------------------------------ */

enum { NR_THREADS = 2, NR_PLAIN = 20 };

static atomic_uint nr_starts_beyond, nr_tasks_beyond, nr_plain_done;
static atomic_int nr_started;
static pool_group_t nr_group;

static void nr_on_start(pool_t *p, unsigned id, void *ctx) {
  (void)p;
  (void)ctx;
  if (id >= NR_THREADS) atomic_fetch_add(&nr_starts_beyond, 1);
}

static void spin_us(long us) {
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  do clock_gettime(CLOCK_MONOTONIC, &b);
  while ((b.tv_sec - a.tv_sec) * 1000000L + (b.tv_nsec - a.tv_nsec) / 1000 < us);
}

static void nr_child(void *arg) {
  (void)arg;
  atomic_store(&nr_started, 1);
  spin_us(5000);
}

static void nr_inner(void *arg) {
  (void)arg;
  CHECK_OK(pool_group_init(&nr_group, NULL));
  CHECK_OK(pool_group_spawn(&nr_group, nr_child, NULL));
  while (!atomic_load(&nr_started)) nap_us(50); /* not a wait: the other worker takes it */
  CHECK_OK(pool_group_wait(&nr_group));
}

static void nr_task(void *arg) {
  (void)arg;
  CHECK_OK(pool_isolate(nr_inner, NULL));
}

static void nr_plain(void *arg) {
  (void)arg;
  int id = pool_worker_id();
  if (id < 0 || id >= NR_THREADS) atomic_fetch_add(&nr_tasks_beyond, 1);
  spin_us(200);
  atomic_fetch_add(&nr_plain_done, 1);
}

static void case_no_region(void) {
  pool_config_t c;
  pool_config_default(&c);
  c.threads = NR_THREADS;
  c.on_worker_start = nr_on_start;
  pool_t *p;
  CHECK_OK(pool_create(&p, &c));
  unsigned long rounds = check_iters(10);
  for (unsigned long r = 0; r < rounds; r++) {
    atomic_store(&nr_started, 0);
    atomic_store(&nr_plain_done, 0);
    pool_job_t j;
    CHECK_OK(pool_job_submit(p, &j, nr_task, NULL));
    while (!atomic_load(&nr_started)) nap_us(50);
    for (int k = 0; k < NR_PLAIN; k++) CHECK_OK(pool_submit(p, nr_plain, NULL));
    CHECK_OK(pool_job_wait(&j));
    CHECK_OK(pool_wait_idle(p));
    CHECK_EQ(atomic_load(&nr_plain_done), NR_PLAIN);
  }
  CHECK_OK(pool_destroy(p));
  CHECK_EQ(atomic_load(&nr_starts_beyond), 0);
  CHECK_EQ(atomic_load(&nr_tasks_beyond), 0);
}

/* ---- two_sleepers ---------------------------------------------------------- */

static pool_group_t ts_outer, ts_inner;
static atomic_int ts_child_started, ts_region_left, ts_leaf_ran;
static int ts_outer_rc, ts_inner_rc;

static void ts_leaf(void *arg) {
  (void)arg;
  atomic_fetch_add(&ts_leaf_ran, 1);
}

static void ts_wait_inner(void *arg) {
  (void)arg;
  ts_inner_rc = pool_group_wait(&ts_inner);
}

/* On the stand-in: the leaf goes below this computation's floor. */
static void ts_child(void *arg) {
  (void)arg;
  CHECK_OK(pool_group_init(&ts_inner, NULL));
  CHECK_OK(pool_group_spawn(&ts_inner, ts_leaf, NULL));
  atomic_store(&ts_child_started, 1);
  while (!atomic_load(&ts_region_left)) nap_us(50);
  CHECK_OK(pool_isolate(ts_wait_inner, NULL));
}

static void ts_wait_outer(void *arg) {
  (void)arg;
  ts_outer_rc = pool_group_wait(&ts_outer);
}

static void ts_task(void *arg) {
  (void)arg;
  CHECK_OK(pool_group_init(&ts_outer, NULL));
  CHECK_OK(pool_group_spawn(&ts_outer, ts_child, NULL));
  CHECK_OK(pool_blocking_begin()); /* a stand-in takes the child */
  while (!atomic_load(&ts_child_started)) nap_us(50);
  CHECK_OK(pool_blocking_end());
  atomic_store(&ts_region_left, 1);
  CHECK_OK(pool_isolate(ts_wait_outer, NULL));
}

static void two_sleepers(pool_t *p) {
  unsigned long rounds = check_iters(20);
  for (unsigned long r = 0; r < rounds; r++) {
    atomic_store(&ts_child_started, 0);
    atomic_store(&ts_region_left, 0);
    atomic_store(&ts_leaf_ran, 0);
    ts_outer_rc = ts_inner_rc = -1;
    pool_job_t j;
    CHECK_OK(pool_job_submit(p, &j, ts_task, NULL));
    CHECK_OK(pool_job_wait(&j));
    CHECK_OK(ts_outer_rc);
    CHECK_OK(ts_inner_rc);
    CHECK_EQ(atomic_load(&ts_leaf_ran), 1);
  }
}

static void case_two_sleepers(void) { ON_POOLS(two_sleepers, 1); }

/* ---- region_after --------------------------------------------------------- */

static pool_group_t ra_group;
static atomic_int ra_b_started, ra_r1_left, ra_leaf_ran, ra_done;
static int ra_rc;

static void ra_leaf(void *arg) {
  (void)arg;
  atomic_fetch_add(&ra_leaf_ran, 1);
}

static void ra_wait(void *arg) {
  (void)arg;
  ra_rc = pool_group_wait(&ra_group);
  atomic_store(&ra_done, 1);
}

/* Run by the stand-in: the leaf goes below this computation's floor. */
static void ra_b(void *arg) {
  (void)arg;
  CHECK_OK(pool_group_init(&ra_group, NULL));
  CHECK_OK(pool_group_spawn(&ra_group, ra_leaf, NULL));
  atomic_store(&ra_b_started, 1);
  while (!atomic_load(&ra_r1_left)) nap_us(50);
  CHECK_OK(pool_isolate(ra_wait, NULL));
}

static void ra_task(void *arg) {
  (void)arg;
  CHECK_OK(pool_submit(NULL, ra_b, NULL));
  CHECK_OK(pool_blocking_begin()); /* a stand-in takes ra_b */
  while (!atomic_load(&ra_b_started)) nap_us(50);
  CHECK_OK(pool_blocking_end());
  atomic_store(&ra_r1_left, 1);
  nap_us(20000); /* ra_b's wait finds this worker free and sleeps */
  /* A second region, which starts no stand-in (the awake one is that
   * sleeper), blocks until the isolated wait ends. */
  CHECK_OK(pool_blocking_begin());
  while (!atomic_load(&ra_done)) nap_us(100);
  CHECK_OK(pool_blocking_end());
}

static void case_region_after(void) {
  pool_t *p = make_pool(1);
  unsigned long rounds = check_iters(5);
  for (unsigned long r = 0; r < rounds; r++) {
    atomic_store(&ra_b_started, 0);
    atomic_store(&ra_r1_left, 0);
    atomic_store(&ra_leaf_ran, 0);
    atomic_store(&ra_done, 0);
    ra_rc = -1;
    CHECK_OK(pool_submit(p, ra_task, NULL));
    CHECK_OK(pool_wait_idle(p));
    CHECK_OK(ra_rc);
    CHECK_EQ(atomic_load(&ra_leaf_ran), 1);
  }
  CHECK_OK(pool_destroy(p));
}

TEST_MAIN(120, TEST_CASE(parked_standin), TEST_CASE(shrink), TEST_CASE(spawned_before),
          TEST_CASE(no_region), TEST_CASE(two_sleepers), TEST_CASE(region_after))
