/* SPDX-License-Identifier: MIT */
/* Lost wake-ups: a lost wake-up shows as a hang, caught by the watchdog.
 *
 * 1. check_iters(100000) cycles of submit -> pool_wait_idle, alternating
 *    pools of 1, 2 and 3 workers (a third of the cycles each); every cycle
 *    checks that exactly its task ran (a counter equal to the cycle number,
 *    and the task's own flag).
 * 2. Cycles where the task submits a follow-up from inside (the wake for
 *    work pushed on a worker's deque) and the outside waits for both.
 * 3. Every worker asleep first (30 ms idle, then pool_worker_stats shows
 *    each worker has slept and stands still), then a single submit
 *    (outside), or a single spawn/sync or group child from outside, must
 *    complete; and a burst of 100 submits after another sleep.
 * Cases: cycles, inside_cycles, jitter_cycles, asleep. */
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

static atomic_ulong counter;
static atomic_uchar *ran;

static void cycle_task(void *arg) {
  size_t i = (size_t)(uintptr_t)arg;
  atomic_fetch_add(&ran[i], 1);
  atomic_fetch_add(&counter, 1);
}

static void follow_up(void *arg) {
  size_t i = (size_t)(uintptr_t)arg;
  atomic_fetch_add(&ran[i], 1);
  atomic_fetch_add(&counter, 1);
}

static void parent_task(void *arg) {
  size_t i = (size_t)(uintptr_t)arg;
  atomic_fetch_add(&ran[i], 1);
  atomic_fetch_add(&counter, 1);
  CHECK_OK(pool_submit(NULL, follow_up, (void *)(uintptr_t)(i + 1)));
}

static void test_cycles(unsigned long n) {
  ran = calloc(n, 1);
  CHECK(ran);
  atomic_store(&counter, 0);
  pool_t *pools[3] = {make_pool(1), make_pool(2), make_pool(3)};
  /* Blocks of cycles per pool, so each pool's workers go idle between its
   * own cycles and are woken again and again. */
  unsigned long block = 1000;
  for (unsigned long i = 0; i < n; i++) {
    pool_t *p = pools[(i / block) % 3];
    CHECK_OK(pool_submit(p, cycle_task, (void *)(uintptr_t)i));
    CHECK_OK(pool_wait_idle(p));
    CHECK_EQ(atomic_load(&ran[i]), 1);
    CHECK_EQ(atomic_load(&counter), i + 1);
  }
  for (unsigned k = 0; k < 3; k++) CHECK_OK(pool_destroy(pools[k]));
  for (unsigned long i = 0; i < n; i++) CHECK_EQ(ran[i], 1);
  free((void *)ran);
}

static void test_inside_cycles(unsigned long n) {
  ran = calloc(2 * n, 1);
  CHECK(ran);
  atomic_store(&counter, 0);
  pool_t *p = make_pool(2);
  for (unsigned long i = 0; i < n; i++) {
    CHECK_OK(pool_submit(p, parent_task, (void *)(uintptr_t)(2 * i)));
    CHECK_OK(pool_wait_idle(p));
    CHECK_EQ(atomic_load(&ran[2 * i]), 1);
    CHECK_EQ(atomic_load(&ran[2 * i + 1]), 1);
    CHECK_EQ(atomic_load(&counter), 2 * (i + 1));
  }
  CHECK_OK(pool_destroy(p));
  free((void *)ran);
}

/* ---- submits at random points of the workers' way to sleep -------------- */

/* Right after pool_wait_idle the workers are still polling; a lost wake-up
 * can only happen when a submission lands just as a worker gives up polling
 * and goes to sleep. So wait a random 0..`max_us` microseconds (busy, on
 * the clock) before each submit, sweeping the submit over the whole
 * poll-then-sleep transition. */
static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void spin_ns(uint64_t ns) {
  uint64_t end = now_ns() + ns;
  while (now_ns() < end) {
  }
}

static void test_jitter_cycles(unsigned threads, unsigned long n, unsigned max_us) {
  ran = calloc(n, 1);
  CHECK(ran);
  atomic_store(&counter, 0);
  pool_t *p = make_pool(threads);
  uint64_t s = 0x243F6A8885A308D3ull ^ threads;
  for (unsigned long i = 0; i < n; i++) {
    spin_ns(rng_next(&s) % ((uint64_t)max_us * 1000));
    CHECK_OK(pool_submit(p, cycle_task, (void *)(uintptr_t)i));
    CHECK_OK(pool_wait_idle(p));
    CHECK_EQ(atomic_load(&ran[i]), 1);
    CHECK_EQ(atomic_load(&counter), i + 1);
  }
  CHECK_OK(pool_destroy(p));
  free((void *)ran);
}

/* ---- everyone asleep first --------------------------------------------- */

static atomic_int child_ran;
static void child(void *arg) {
  (void)arg;
  atomic_fetch_add(&child_ran, 1);
}

static void test_asleep(unsigned threads, unsigned cycles) {
  pool_t *p = make_pool(threads);
  for (unsigned c = 0; c < cycles; c++) {
    wait_all_asleep(p);
    atomic_store(&child_ran, 0);
    switch (c % 3) {
    case 0:
      CHECK_OK(pool_submit(p, child, NULL));
      CHECK_OK(pool_wait_idle(p));
      break;
    case 1: {
      pool_task_t t;
      CHECK_OK(pool_spawn(p, &t, child, NULL));
      CHECK_OK(pool_sync(&t));
      break;
    }
    default: {
      pool_group_t g;
      CHECK_OK(pool_group_init(&g, p));
      CHECK_OK(pool_group_spawn(&g, child, NULL));
      CHECK_OK(pool_group_wait(&g));
      break;
    }
    }
    CHECK_EQ(atomic_load(&child_ran), 1);
  }
  /* One more sleep, then a burst: all must run. */
  wait_all_asleep(p);
  atomic_store(&child_ran, 0);
  for (unsigned i = 0; i < 100; i++) CHECK_OK(pool_submit(p, child, NULL));
  CHECK_OK(pool_wait_idle(p));
  CHECK_EQ(atomic_load(&child_ran), 100);
  CHECK_OK(pool_destroy(p));
}

static void case_cycles(void) { test_cycles(check_iters(100000)); }

static void case_inside_cycles(void) { test_inside_cycles(check_iters(20000)); }

static void case_jitter_cycles(void) {
  test_jitter_cycles(1, check_iters(20000), 150);
  test_jitter_cycles(2, check_iters(10000), 150);
}

static void case_asleep(void) {
  test_asleep(1, 30);
  test_asleep(2, 30);
  test_asleep(4, 15);
}

TEST_MAIN(200, TEST_CASE(cycles), TEST_CASE(inside_cycles), TEST_CASE(jitter_cycles),
          TEST_CASE(asleep))
