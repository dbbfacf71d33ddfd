/* SPDX-License-Identifier: MIT */
/* pool_config_t::idle_poll_us and WSPOOL_IDLE_POLL.
 *
 *  - config: pool_config_default fills POOL_IDLE_POLL_AUTO when the
 *    variable is unset, POOL_IDLE_POLL_NONE for 0, the count for 1 to
 *    1000000; a bad value (-1, 1000001, abc, 10us) prints one message
 *    naming the variable and the value, and the default is used.
 *  - validate: pool_create takes -1, 0, 1 and POOL_IDLE_POLL_MAX (and a
 *    config zeroed by code that never heard of the field: automatic), and
 *    fails with EINVAL, creating nothing, for -2, INT_MIN,
 *    POOL_IDLE_POLL_MAX + 1 and INT_MAX.
 *  - none_once: on pools of 1 and 2 workers that never poll, outside
 *    submissions, submissions from inside tasks and a parallel_for run
 *    every task exactly once, round after round with the workers going idle
 *    in between.
 *  - none_late: the same pools, every worker asleep, then one late submit
 *    (and one late spawn from outside) must run: a hang is the watchdog's.
 *  - long_poll: a pool polling POOL_IDLE_POLL_MAX runs its work and is
 *    destroyed while its workers poll.
 *  - busy_backoff: beside a spinning thread per CPU the process may use,
 *    the default poll's worker of a 1-worker pool sleeps after at least
 *    half of 20 tasks spaced 20 ms (the 64 yielding looks it made before
 *    the neighbour rule took 64 scheduler slices, and slept after 0-4).
 * Nothing here is timed: the watchdog bounds the program. */
#define _GNU_SOURCE /* sched_getaffinity */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <wspool.h>

#include "check.h"
#include "testutil.h"

static char captured[4096];

static void config_default_fn(void *cfg) { pool_config_default(cfg); }

/* pool_config_default with WSPOOL_IDLE_POLL = value (NULL: unset), into a
 * config filled with garbage, stderr captured. The variable is unset again
 * afterwards, for the cases that follow. */
static int idle_poll_from_env(const char *value) {
  if (value)
    CHECK_OK(setenv("WSPOOL_IDLE_POLL", value, 1));
  else
    CHECK_OK(unsetenv("WSPOOL_IDLE_POLL"));
  pool_config_t cfg;
  memset(&cfg, 0xA5, sizeof cfg);
  capture_stderr(captured, sizeof captured, config_default_fn, &cfg);
  CHECK_OK(unsetenv("WSPOOL_IDLE_POLL"));
  return cfg.idle_poll_us;
}

static void expect_env_ok(const char *value, int expect) {
  CHECK_EQ(idle_poll_from_env(value), expect);
  if (captured[0]) fprintf(stderr, "unexpected message for \"%s\": %s\n", value, captured);
  CHECK(captured[0] == '\0');
}

static void expect_env_bad(const char *value) {
  CHECK_EQ(idle_poll_from_env(value), POOL_IDLE_POLL_AUTO);
  if (!strstr(captured, "WSPOOL_IDLE_POLL") || !strstr(captured, value)) {
    fprintf(stderr, "for \"%s\" expected a message naming both, got: \"%s\"\n", value, captured);
    CHECK(0);
  }
}

static void case_config(void) {
  expect_env_ok(NULL, POOL_IDLE_POLL_AUTO);
  expect_env_ok("0", POOL_IDLE_POLL_NONE);
  expect_env_ok("1", 1);
  expect_env_ok("250", 250);
  expect_env_ok("1000000", POOL_IDLE_POLL_MAX);
  const char *bad[] = {"-1", "1000001", "abc", "10us", " 5", "99999999999999999999"};
  for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) expect_env_bad(bad[i]);
}

static void expect_created(const pool_config_t *cfg) {
  pool_t *p = NULL;
  CHECK_OK(pool_create(&p, cfg));
  CHECK(p != NULL);
  CHECK_OK(pool_destroy(p));
}

static void case_validate(void) {
  pool_config_t cfg;
  pool_config_default(&cfg);
  cfg.threads = 1;
  const int good[] = {POOL_IDLE_POLL_ADAPTIVE, POOL_IDLE_POLL_NONE, POOL_IDLE_POLL_AUTO, 1,
                      POOL_IDLE_POLL_MAX};
  for (unsigned i = 0; i < sizeof good / sizeof good[0]; i++) {
    cfg.idle_poll_us = good[i];
    expect_created(&cfg);
  }
  const int bad[] = {-3, INT_MIN, POOL_IDLE_POLL_MAX + 1, INT_MAX};
  for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    cfg.idle_poll_us = bad[i];
    pool_t *p = (pool_t *)&cfg; /* untouched on failure */
    CHECK_EQ(pool_create(&p, &cfg), EINVAL);
    CHECK(p == (pool_t *)&cfg);
  }
  /* Code written before the field: a zeroed config with a thread count. */
  pool_config_t old = {0};
  old.threads = 2;
  CHECK_EQ(old.idle_poll_us, POOL_IDLE_POLL_AUTO);
  expect_created(&old);
}

/* ---- pools that never poll ---------------------------------------------- */

enum { OUTSIDE = 2000, INSIDE_PARENTS = 200, CHILDREN = 8, LOOP_N = 5000 };

static atomic_uint *flags; /* one per task of a round */

static void mark(void *arg) { atomic_fetch_add(&flags[(uintptr_t)arg], 1); }

/* Marks itself, then submits its CHILDREN from inside the pool. */
static void parent(void *arg) {
  uintptr_t i = (uintptr_t)arg;
  atomic_fetch_add(&flags[i], 1);
  uintptr_t first = OUTSIDE + INSIDE_PARENTS + (i - OUTSIDE) * CHILDREN;
  for (uintptr_t c = 0; c < CHILDREN; c++) CHECK_OK(pool_submit(NULL, mark, (void *)(first + c)));
}

static void loop_body(size_t b, size_t e, void *ctx) {
  (void)ctx;
  for (size_t i = b; i < e; i++) atomic_fetch_add(&flags[i], 1);
}

static pool_t *poll_pool(unsigned threads, int idle_poll_us) {
  pool_config_t cfg;
  pool_config_default(&cfg);
  cfg.threads = threads;
  cfg.idle_poll_us = idle_poll_us;
  pool_t *p = NULL;
  CHECK_OK(pool_create(&p, &cfg));
  return p;
}

/* One round: outside submissions and parents whose children are submitted
 * from inside, then a parallel_for; each task exactly once. */
static void round_once(pool_t *p) {
  size_t n = OUTSIDE + INSIDE_PARENTS + (size_t)INSIDE_PARENTS * CHILDREN;
  flags = flags_alloc(n);
  for (uintptr_t i = 0; i < OUTSIDE; i++) CHECK_OK(pool_submit(p, mark, (void *)i));
  for (uintptr_t i = OUTSIDE; i < OUTSIDE + INSIDE_PARENTS; i++)
    CHECK_OK(pool_submit(p, parent, (void *)i));
  CHECK_OK(pool_wait_idle(p));
  flags_check_once(flags, n, "submitted task");
  free((void *)flags);
  flags = flags_alloc(LOOP_N);
  CHECK_OK(pool_parallel_for(p, 0, LOOP_N, 16, loop_body, NULL));
  flags_check_once(flags, LOOP_N, "loop index");
  free((void *)flags);
}

static void case_none_once(void) {
  for (unsigned threads = 1; threads <= 2; threads++) {
    pool_t *p = poll_pool(threads, POOL_IDLE_POLL_NONE);
    for (unsigned r = 0; r < 20; r++) round_once(p);
    CHECK_OK(pool_destroy(p));
  }
}

static void spawned(void *arg) { atomic_fetch_add((atomic_uint *)arg, 1); }

static void case_none_late(void) {
  for (unsigned threads = 1; threads <= 2; threads++) {
    pool_t *p = poll_pool(threads, POOL_IDLE_POLL_NONE);
    for (unsigned r = 0; r < 3; r++) {
      wait_all_asleep(p);
      flags = flags_alloc(1);
      CHECK_OK(pool_submit(p, mark, (void *)0));
      CHECK_OK(pool_wait_idle(p));
      flags_check_once(flags, 1, "late task");
      free((void *)flags);
      wait_all_asleep(p);
      atomic_uint hit = 0;
      pool_task_t t;
      CHECK_OK(pool_spawn(p, &t, spawned, &hit));
      CHECK_OK(pool_sync(&t));
      CHECK_EQ(atomic_load(&hit), 1);
    }
    CHECK_OK(pool_destroy(p));
  }
}

static void case_long_poll(void) {
  pool_t *p = poll_pool(2, POOL_IDLE_POLL_MAX);
  round_once(p);
  CHECK_OK(pool_destroy(p)); /* its workers poll now: destroy ends it */
}

/* ---- the default beside busy threads ----------------------------------- */

enum { WARM_TASKS = 2, BUSY_TASKS = 20, BUSY_GAP_MS = 20 };

static atomic_bool spin_stop;

static void *spinner(void *arg) {
  (void)arg;
  while (!atomic_load_explicit(&spin_stop, memory_order_relaxed)) {
  }
  return NULL;
}

static uint64_t sleeps_of(pool_t *p) {
  pool_worker_stats_t st;
  CHECK_OK(pool_worker_stats(p, 0, &st));
  return st.sleeps;
}

static void case_busy_backoff(void) {
  cpu_set_t set;
  CHECK_OK(sched_getaffinity(0, sizeof set, &set));
  int n = CPU_COUNT(&set);
  CHECK(n >= 1);
  pthread_t *th = calloc((size_t)n, sizeof *th);
  CHECK(th != NULL);
  atomic_store(&spin_stop, false);
  for (int i = 0; i < n; i++) CHECK_OK(pthread_create(&th[i], NULL, spinner, NULL));
  pool_t *p = poll_pool(1, POOL_IDLE_POLL_AUTO);
  /* The first tasks find the worker without a verdict on its neighbours. */
  flags = flags_alloc(WARM_TASKS + BUSY_TASKS);
  uint64_t before = 0;
  for (uintptr_t i = 0; i < WARM_TASKS + BUSY_TASKS; i++) {
    if (i == WARM_TASKS) before = sleeps_of(p);
    CHECK_OK(pool_submit(p, mark, (void *)i));
    CHECK_OK(pool_wait_idle(p));
    struct timespec gap = {0, BUSY_GAP_MS * 1000000L};
    nanosleep(&gap, NULL);
  }
  uint64_t slept = sleeps_of(p) - before;
  flags_check_once(flags, WARM_TASKS + BUSY_TASKS, "task beside busy threads");
  free((void *)flags);
  CHECK_OK(pool_destroy(p));
  atomic_store(&spin_stop, true);
  for (int i = 0; i < n; i++) CHECK_OK(pthread_join(th[i], NULL));
  free(th);
  if (slept < BUSY_TASKS / 2)
    FAIL("the idle worker slept %llu times after %d tasks beside %d spinning threads\n",
         (unsigned long long)slept, BUSY_TASKS, n);
}

TEST_MAIN(120, TEST_CASE(config), TEST_CASE(validate), TEST_CASE(none_once),
          TEST_CASE(none_late), TEST_CASE(long_poll), TEST_CASE(busy_backoff))
