/* SPDX-License-Identifier: MIT */
/* Blocking regions at work: while tasks block inside pool_blocking_begin()
 * and pool_blocking_end(), stand-ins run the pool's other tasks, never more
 * of them than the limit.
 *
 *  concurrency  pools of 1, 2 and 4 workers, limit 4: 3K tasks (K = workers
 *               + limit) each enter a region and block there until K tasks
 *               have been inside regions at once, which only stand-ins can
 *               bring about (the workers are all blocked), then 20 ms more. Every task runs exactly once; at most K
 *               threads and `limit` stand-ins run tasks at once (every
 *               task's thread checked: a worker, or a stand-in of id below
 *               workers + limit).
 *  cap          the same on 2 workers with limits 1, 3 and the default
 *               (4 per worker: 8).
 *  limit_zero   limit 0: regions do nothing, every task runs on a worker,
 *               exactly once.
 *  publish      1 worker, limit 1: a task spawns a child, enters a region
 *               and waits for the child to have run: the region made the
 *               child public and the pool's other thread ran it.
 *  step_down    1 worker, limit 1: a stand-in runs the first of two
 *               jobs (the second after it), or the first of a submit
 *               batch of two, until the region that needed it has ended;
 *               the second then runs on the worker, not on the stand-in
 *               (a surplus stand-in stops after the task it ran, as a
 *               worker past a shrink: it does not go on with what it
 *               holds in hand).
 *  hint         1 worker, limit 2: a task spawns b and x and blocks; the
 *               stand-in s0 runs b, which blocks too, so s0 builds s1,
 *               which runs x; the task's sync of x then looks at s1 first
 *               (the thief hint), a thread it never synchronised with but
 *               through the hint (for TSan: the hint is a release/acquire
 *               pair). Each child ran once.
 *  bells_standin  16 workers (bells), limit 1: when every worker is in a
 *               region, the idle stand-in sleeps on the shared epoch and
 *               only a wake that falls back to it from the bells runs the
 *               task that ends the round (fails without it).
 *  long_block   1 worker: a task blocks in a region for a second, then
 *               until the other tasks, queued behind it, have all run.
 *  stress       rounds of tasks that compute fib by fork/join, enter short
 *               and nested regions, submit more tasks from inside them, on
 *               pools of 1, 2 and 4 workers with limits 1 and 2 (stand-ins
 *               park and wake all the time); exact sums and counts, and
 *               pool_wait_idle() after each round (the stand-ins' tasks
 *               count as submitted and finished). Scaled by WSPOOL_STRESS.
 * No timing assertions: waits that only a stand-in can end fail after a
 * generous bound (blocking_util.h). */
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <wspool.h>

#include "blocking_util.h"
#include "check.h"
#include "testutil.h"

/* ---- concurrency and cap ------------------------------------------------ */

typedef struct conc {
  occupancy occ;
  unsigned k;           /* tasks that must be inside regions at once */
  atomic_uint inside;   /* tasks inside a region now */
  atomic_uint peak;     /* the most inside at once so far */
  atomic_uint *ran;
} conc;

static conc *cs;

static void conc_task(void *arg) {
  size_t i = (size_t)(uintptr_t)arg;
  atomic_fetch_add(&cs->ran[i], 1);
  int id = occ_enter(&cs->occ);
  CHECK_OK(pool_blocking_begin());
  atomic_max_u(&cs->peak, atomic_fetch_add(&cs->inside, 1) + 1);
  /* The most at once only grows: no moment is missed between two looks. */
  if (!wait_at_least(&cs->peak, cs->k))
    FAIL("at most %u tasks inside regions at once, never %u (workers %u, limit %u)\n",
         atomic_load(&cs->peak), cs->k, cs->occ.nthreads, cs->occ.limit);
  sleep_ms(20);
  atomic_fetch_sub(&cs->inside, 1);
  CHECK_OK(pool_blocking_end());
  occ_leave(&cs->occ, id);
}

static void run_conc(pool_t *p) {
  unsigned n = pool_threads(p), limit = pool_standin_limit(p);
  conc c = {.occ = {.nthreads = n, .limit = limit}, .k = n + limit};
  size_t ntasks = 3 * (size_t)c.k;
  c.ran = flags_alloc(ntasks);
  cs = &c;
  void **args = malloc(ntasks * sizeof *args);
  CHECK(args);
  for (size_t i = 0; i < ntasks; i++) args[i] = (void *)(uintptr_t)i;
  CHECK_OK(pool_submit_n(p, conc_task, args, ntasks));
  CHECK_OK(pool_wait_idle(p));
  flags_check_once(c.ran, ntasks, "task");
  CHECK_EQ(atomic_load(&c.peak), c.k);
  CHECK_EQ(atomic_load(&c.occ.max_all), c.k); /* reached, and never above */
  CHECK_EQ(atomic_load(&c.occ.max_standins), limit);
  CHECK_EQ(atomic_load(&c.inside), 0);
  free(args);
  free((void *)c.ran);
}

static void case_concurrency(void) { ON_BLOCKING_POOLS(run_conc, 4, 1, 2, 4); }

static void case_cap(void) {
  ON_BLOCKING_POOLS(run_conc, 1, 2);
  ON_BLOCKING_POOLS(run_conc, 3, 2);
  if (getenv("WSPOOL_STANDINS")) return; /* the default is the environment's */
  pool_t *p = make_pool(2);
  CHECK_EQ(pool_standin_limit(p), 8);
  run_conc(p);
  CHECK_OK(pool_destroy(p));
}

/* ---- a stand-in asleep in a pool with bells ------------------------------- */

/* bells_standin: 16 workers (over 8: they sleep on bells, a stand-in on
 * the shared epoch, design.md 5.4), limit 1. A round: 16 tasks enter a
 * region and wait for a flag; once all are inside, and 20 ms later (past
 * any nap), main submits the task that sets it. In a round where the 16
 * ran on the 16 workers, the one idle thread is the stand-in, asleep on
 * the epoch, and no bell is asleep: only the wake of the epoch's waiters
 * (sleep.c, wake_n) reaches it, and without it the round never ends.
 * Rounds until 3 such (at most 200). Every task runs once. */
enum { BS_N = 16 };
static atomic_uint bs_inside, bs_on_standin, bs_ran;
static atomic_bool bs_go;

static void bs_block(void *arg) {
  (void)arg;
  atomic_fetch_add(&bs_ran, 1);
  if (pool_worker_id() >= BS_N) atomic_fetch_add(&bs_on_standin, 1);
  CHECK_OK(pool_blocking_begin());
  atomic_fetch_add(&bs_inside, 1);
  double end = blk_now() + 30.0 * (double)test_stress_factor();
  while (!atomic_load(&bs_go)) {
    if (blk_now() > end) {
      pool_dump_state(2);
      FAIL("the task that ends the round never ran\n");
    }
    sleep_ms(1);
  }
  CHECK_OK(pool_blocking_end());
}

static void bs_release(void *arg) {
  (void)arg;
  atomic_fetch_add(&bs_ran, 1);
  atomic_store(&bs_go, true);
}

static void case_bells_standin(void) {
  pool_t *p = make_blocking_pool(BS_N, 1);
  unsigned covered = 0, rounds = 0;
  for (; rounds < 200 && covered < 3; rounds++) {
    atomic_store(&bs_inside, 0);
    atomic_store(&bs_on_standin, 0);
    atomic_store(&bs_ran, 0);
    atomic_store(&bs_go, false);
    for (int i = 0; i < BS_N; i++) CHECK_OK(pool_submit(p, bs_block, NULL));
    CHECK(wait_at_least(&bs_inside, BS_N));
    sleep_ms(20);
    bool standin_idle = atomic_load(&bs_on_standin) == 0;
    CHECK_OK(pool_submit(p, bs_release, NULL));
    CHECK_OK(pool_wait_idle(p));
    CHECK_EQ(atomic_load(&bs_ran), BS_N + 1);
    covered += standin_idle;
  }
  printf("# %u rounds, %u with the stand-in the idle thread\n", rounds, covered);
  CHECK_OK(pool_destroy(p));
}

/* ---- limit 0 -------------------------------------------------------------- */

static atomic_uint *lz_ran;
static occupancy lz_occ;

static void lz_task(void *arg) {
  int id = occ_enter(&lz_occ);
  atomic_fetch_add(&lz_ran[(uintptr_t)arg], 1);
  CHECK_OK(pool_blocking_begin());
  sleep_ms(2);
  CHECK_OK(pool_blocking_end());
  occ_leave(&lz_occ, id);
}

static void case_limit_zero(void) {
  enum { N = 40 };
  for (unsigned n = 1; n <= 2; n++) {
    pool_t *p = make_blocking_pool(n, 0);
    lz_ran = flags_alloc(N);
    lz_occ = (occupancy){.nthreads = n, .limit = 0};
    for (uintptr_t i = 0; i < N; i++) CHECK_OK(pool_submit(p, lz_task, (void *)i));
    CHECK_OK(pool_wait_idle(p));
    flags_check_once(lz_ran, N, "task");
    CHECK(atomic_load(&lz_occ.max_all) <= n);
    CHECK_EQ(atomic_load(&lz_occ.max_standins), 0);
    CHECK_OK(pool_destroy(p));
    free((void *)lz_ran);
  }
}

/* ---- publish -------------------------------------------------------------- */

static atomic_uint pub_child_ran;
static atomic_int pub_child_id, pub_parent_id;

static void pub_child(void *arg) {
  (void)arg;
  atomic_store(&pub_child_id, pool_worker_id());
  atomic_fetch_add(&pub_child_ran, 1);
}

static void pub_parent(void *arg) {
  (void)arg;
  atomic_store(&pub_parent_id, pool_worker_id());
  pool_task_t t;
  CHECK_OK(pool_spawn(NULL, &t, pub_child, NULL));
  CHECK_OK(pool_blocking_begin());
  /* The child is on this worker's private stack until the region made it
   * public; only a stand-in can run it now. */
  if (!wait_at_least(&pub_child_ran, 1)) FAIL("the child spawned before the region never ran\n");
  CHECK_OK(pool_blocking_end());
  CHECK_OK(pool_sync(&t));
  CHECK_EQ(atomic_load(&pub_child_ran), 1);
}

static void case_publish(void) {
  pool_t *p = make_blocking_pool(1, 1);
  for (int round = 0; round < 20; round++) {
    atomic_store(&pub_child_ran, 0);
    atomic_store(&pub_child_id, -1);
    CHECK_OK(pool_submit(p, pub_parent, NULL));
    CHECK_OK(pool_wait_idle(p));
    CHECK_EQ(atomic_load(&pub_child_ran), 1);
    /* The other thread: the stand-in when the parent ran on the worker,
     * else the worker (a parent on the stand-in, awake from the round
     * before, blocks it: the worker is free). */
    CHECK_EQ(atomic_load(&pub_child_id), 1 - atomic_load(&pub_parent_id));
  }
  CHECK_OK(pool_destroy(p));
}

/* ---- step_down ------------------------------------------------------------ */

static atomic_uint sd_started, sd_ended;
static atomic_int sd_first_id, sd_second_id;
static pool_job_t sd_j1, sd_j2;
static int sd_batch_idx[2] = {0, 1};
static bool sd_jobs; /* the round's kind: jobs, else a submit batch */

/* The first: runs on the stand-in (the worker is in the region) until the
 * region ended; the stand-in is surplus from then on. */
static void sd_first(void) {
  atomic_store(&sd_first_id, pool_worker_id());
  atomic_fetch_add(&sd_started, 1);
  if (!wait_at_least(&sd_ended, 1)) FAIL("the blocking task never ended its region\n");
}

static void sd_job(void *arg) {
  if (arg == &sd_j1)
    sd_first();
  else
    atomic_store(&sd_second_id, pool_worker_id());
}

static void sd_entry(void *arg) {
  if (*(int *)arg == 0)
    sd_first();
  else
    atomic_store(&sd_second_id, pool_worker_id());
}

static void sd_blocker(void *arg) {
  pool_t *p = arg;
  if (sd_jobs) {
    CHECK_OK(pool_job_start(&sd_j2));
    CHECK_OK(pool_job_start(&sd_j1));
  } else {
    void *args[2] = {&sd_batch_idx[0], &sd_batch_idx[1]};
    CHECK_OK(pool_submit_n(p, sd_entry, args, 2));
  }
  CHECK_OK(pool_blocking_begin());
  if (!wait_at_least(&sd_started, 1)) FAIL("no stand-in ran the first task\n");
  CHECK_OK(pool_blocking_end());
  /* Release: the first task's acquire load of sd_ended then sees the
   * region's end (`blocked` back to 0) too. */
  atomic_store(&sd_ended, 1);
}

static void case_step_down(void) {
  pool_t *p = make_blocking_pool(1, 1);
  for (int round = 0; round < 20; round++) {
    sd_jobs = round % 2 == 0;
    atomic_store(&sd_started, 0);
    atomic_store(&sd_ended, 0);
    atomic_store(&sd_first_id, -1);
    atomic_store(&sd_second_id, -1);
    if (sd_jobs) {
      CHECK_OK(pool_job_init(&sd_j1, p, sd_job, &sd_j1));
      CHECK_OK(pool_job_init(&sd_j2, p, sd_job, &sd_j2));
      CHECK_OK(pool_job_after(&sd_j2, &sd_j1));
    }
    CHECK_OK(pool_submit(p, sd_blocker, p));
    CHECK_OK(pool_wait_idle(p));
    if (sd_jobs) {
      CHECK_OK(pool_job_wait(&sd_j1));
      CHECK_OK(pool_job_wait(&sd_j2));
    }
    CHECK_EQ(atomic_load(&sd_first_id), 1); /* the stand-in */
    CHECK_EQ(atomic_load(&sd_second_id), 0);
  }
  CHECK_OK(pool_destroy(p));
}

/* ---- hint ----------------------------------------------------------------- */

static atomic_uint hint_b_ran, hint_x_ran;

static void hint_x(void *arg) {
  (void)arg;
  sleep_ms(50);
  atomic_fetch_add(&hint_x_ran, 1);
}

static void hint_b(void *arg) {
  (void)arg;
  CHECK_OK(pool_blocking_begin());
  sleep_ms(20);
  CHECK_OK(pool_blocking_end());
  atomic_fetch_add(&hint_b_ran, 1);
}

static void hint_parent(void *arg) {
  (void)arg;
  pool_task_t b, x;
  CHECK_OK(pool_spawn(NULL, &b, hint_b, NULL)); /* oldest: the first stand-in's */
  CHECK_OK(pool_spawn(NULL, &x, hint_x, NULL));
  CHECK_OK(pool_blocking_begin());
  sleep_ms(10);
  CHECK_OK(pool_blocking_end());
  CHECK_OK(pool_sync(&x));
  CHECK_OK(pool_sync(&b));
}

static void case_hint(void) {
  pool_t *p = make_blocking_pool(1, 2);
  for (int round = 0; round < 3; round++) {
    atomic_store(&hint_b_ran, 0);
    atomic_store(&hint_x_ran, 0);
    CHECK_OK(pool_submit(p, hint_parent, NULL));
    CHECK_OK(pool_wait_idle(p));
    CHECK_EQ(atomic_load(&hint_b_ran), 1);
    CHECK_EQ(atomic_load(&hint_x_ran), 1);
  }
  CHECK_OK(pool_destroy(p));
}

/* ---- long_block ----------------------------------------------------------- */

enum { LB_OTHERS = 200 };
static atomic_uint lb_done, lb_on_standin;

static void lb_other(void *arg) {
  fib_arg f = {15, 0};
  fib_task(&f);
  CHECK_EQ(f.r, fib_seq(15));
  (void)arg;
  if (pool_worker_id() >= 1) atomic_fetch_add(&lb_on_standin, 1);
  atomic_fetch_add(&lb_done, 1);
}

static void lb_blocker(void *arg) {
  (void)arg;
  CHECK_OK(pool_blocking_begin());
  sleep_ms(1000);
  if (!wait_at_least(&lb_done, LB_OTHERS))
    FAIL("%u of %u tasks ran while a task blocked\n", atomic_load(&lb_done), LB_OTHERS);
  CHECK_OK(pool_blocking_end());
}

static void case_long_block(void) {
  pool_t *p = make_blocking_pool(1, 2);
  atomic_store(&lb_done, 0);
  atomic_store(&lb_on_standin, 0);
  CHECK_OK(pool_submit(p, lb_blocker, NULL));
  for (int i = 0; i < LB_OTHERS; i++) CHECK_OK(pool_submit(p, lb_other, NULL));
  CHECK_OK(pool_wait_idle(p));
  CHECK_EQ(atomic_load(&lb_done), LB_OTHERS);
  CHECK(atomic_load(&lb_on_standin) > 0);
  CHECK_OK(pool_destroy(p));
}

/* ---- stress --------------------------------------------------------------- */

typedef struct st_arg {
  uint64_t seed;
  unsigned depth; /* submissions left below this task */
  bool heap;      /* a child's: freed by the task */
} st_arg;

static atomic_ulong st_sum, st_tasks;
static occupancy st_occ;

static void st_task(void *arg) {
  st_arg *a = arg;
  int id = occ_enter(&st_occ);
  uint64_t r = rng_next(&a->seed);
  fib_arg f = {(int)(r % 12), 0};
  fib_task(&f);
  atomic_fetch_add(&st_sum, (unsigned long)f.r);
  unsigned nest = (unsigned)(r >> 8) % 3;
  for (unsigned i = 0; i <= nest; i++) CHECK_OK(pool_blocking_begin());
  switch ((r >> 16) % 4) {
  case 0: break;
  case 1: sched_yield(); break;
  default: {
    struct timespec ts = {0, (long)((r >> 24) % 200) * 1000};
    nanosleep(&ts, NULL);
  }
  }
  if (a->depth) {
    /* Submitted from inside a region: onto this thread's deque. */
    for (int k = 0; k < 2; k++) {
      st_arg *c = malloc(sizeof *c);
      CHECK(c);
      *c = (st_arg){rng_next(&a->seed) | 1, a->depth - 1, true};
      CHECK_OK(pool_submit(NULL, st_task, c));
    }
  }
  for (unsigned i = 0; i <= nest; i++) CHECK_OK(pool_blocking_end());
  atomic_fetch_add(&st_tasks, 1);
  occ_leave(&st_occ, id);
  if (a->heap) free(a);
}

/* fib(k) summed as st_task computes it, for the expected total. */
static void st_expect(st_arg a, uint64_t *sum, uint64_t *tasks) {
  uint64_t r = rng_next(&a.seed);
  *sum += (uint64_t)fib_seq((int)(r % 12));
  ++*tasks;
  if (!a.depth) return;
  st_arg c0 = {rng_next(&a.seed) | 1, a.depth - 1, true};
  st_arg c1 = {rng_next(&a.seed) | 1, a.depth - 1, true};
  st_expect(c0, sum, tasks);
  st_expect(c1, sum, tasks);
}

static void case_stress(void) {
  enum { ROOTS = 24, DEPTH = 3 };
  static const unsigned sizes[] = {1, 2, 4};
  unsigned long rounds = check_iters(8);
  uint64_t seed = 0x5eed;
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
    for (unsigned limit = 1; limit <= 2; limit++) {
      pool_t *p = make_blocking_pool(sizes[s], limit);
      st_occ = (occupancy){.nthreads = sizes[s], .limit = limit};
      for (unsigned long r = 0; r < rounds; r++) {
        st_arg roots[ROOTS];
        uint64_t sum = 0, tasks = 0;
        for (int i = 0; i < ROOTS; i++) {
          roots[i] = (st_arg){rng_next(&seed) | 1, DEPTH, false};
          st_expect(roots[i], &sum, &tasks);
        }
        atomic_store(&st_sum, 0);
        atomic_store(&st_tasks, 0);
        for (int i = 0; i < ROOTS; i++) CHECK_OK(pool_submit(p, st_task, &roots[i]));
        CHECK_OK(pool_wait_idle(p));
        CHECK_EQ(atomic_load(&st_tasks), tasks);
        CHECK_EQ(atomic_load(&st_sum), sum);
      }
      CHECK_OK(pool_destroy(p));
    }
  }
}

TEST_MAIN(300, TEST_CASE(concurrency), TEST_CASE(cap), TEST_CASE(limit_zero), TEST_CASE(publish),
          TEST_CASE(step_down), TEST_CASE(hint), TEST_CASE(bells_standin),
          TEST_CASE(long_block), TEST_CASE(stress))
