/* SPDX-License-Identifier: MIT */
/* pool_take: a spawned task that nobody started comes back to the caller
 * (POOL_TAKEN) and must not run anywhere else; one that was started is
 * waited for (0) and has run exactly once. Checked through
 *   - a fib tree on 1, 2, 3 and 8 workers: the answer, and every spawned
 *     task done exactly once, by the pool or by its taker, never both;
 *   - K frames (past the private stack's 256 slots) taken back in LIFO,
 *     FIFO and random order, mixed with pool_sync;
 *   - a task a thief has surely started (it waits for a flag set after
 *     the spawn): take returns 0 and the task ran once;
 *   - an outside thread: take waits (0), the task ran once on the pool;
 *   - misuse: NULL, a frame never spawned, a second take, take after sync;
 *   - the workers' `tasks` statistic: it grows by exactly the task
 *     functions the pool ran (the roots, every frame pool_sync ran or a
 *     thief ran), never by a frame handed back as POOL_TAKEN.
 * Built twice (meson.build): with the header's inline fast paths and with
 * POOL_NO_INLINE, so the library's own versions are checked as well.
 * Cases: fib, orders, stolen (2 workers), outside, misuse; the others on
 * pools of 1, 2, 3 and 8 workers. */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <wspool.h>

#include "check.h"
#include "testutil.h"
#include "wspool_test_config.h"

/* ---- the `tasks` statistic ------------------------------------------------ */

static uint64_t tasks_total(pool_t *pool) {
  uint64_t sum = 0;
  for (unsigned w = 0; w < pool_threads(pool); w++) {
    pool_worker_stats_t s;
    CHECK_OK(pool_worker_stats(pool, w, &s));
    sum += s.tasks;
  }
  return sum;
}

/* A task is counted just after it finished, so the sum may trail
 * pool_wait_idle() for an instant: wait for it, never past it, and for
 * at most about 10 s (a count that never arrives is a failure with the
 * figures, not a watchdog timeout). */
static void check_tasks(pool_t *pool, uint64_t expect) {
  for (long spins = 0;; spins++) {
    uint64_t now = tasks_total(pool);
    CHECK(now <= expect);
    if (now == expect) return;
    if (spins >= 10000) CHECK_EQ(now, expect);
    if (spins < 1000)
      sched_yield();
    else
      sleep_ms(1);
  }
}

/* ---- fib through take: count who ran each spawned task ---------------- */

static atomic_long by_pool, by_taker, spawned;

static long pfib(int n);

static void pfib_task(void *p) {
  fib_arg *a = p;
  atomic_fetch_add_explicit(&by_pool, 1, memory_order_relaxed);
  a->r = pfib(a->n);
}

static long pfib(int n) {
  if (n < 2) return n;
  fib_arg x = {n - 1, -1};
  pool_task_t t;
  CHECK_OK(pool_spawn(NULL, &t, pfib_task, &x));
  atomic_fetch_add_explicit(&spawned, 1, memory_order_relaxed);
  long y = pfib(n - 2);
  int rc = pool_take(&t);
  if (rc == POOL_TAKEN) {
    CHECK_EQ(x.r, -1); /* nobody ran it */
    atomic_fetch_add_explicit(&by_taker, 1, memory_order_relaxed);
    x.r = pfib(n - 1);
  } else {
    CHECK_EQ(rc, 0);
  }
  /* The frame is free again either way: a second take is misuse (which a
   * debug_checks build reports and aborts on: test/core/debug_checks.c). */
  if (!WSPOOL_TEST_DEBUG_CHECKS) CHECK_EQ(pool_take(&t), EINVAL);
  return x.r + y;
}

static void root_task(void *p) {
  fib_arg *a = p;
  a->r = pfib(a->n);
}

static void check_fib(pool_t *pool, int n) {
  atomic_store(&by_pool, 0);
  atomic_store(&by_taker, 0);
  atomic_store(&spawned, 0);
  uint64_t tasks0 = tasks_total(pool);
  fib_arg a = {n, -1};
  CHECK_OK(pool_submit(pool, root_task, &a));
  CHECK_OK(pool_wait_idle(pool));
  CHECK_EQ(a.r, fib_seq(n));
  /* Every spawn was done once: by a worker or by the caller that took it
   * back. */
  CHECK_EQ(atomic_load(&by_pool) + atomic_load(&by_taker), atomic_load(&spawned));
  CHECK_EQ(atomic_load(&spawned), fib_seq(n + 1) - 1);
  /* Counted: the root and each spawned task a worker ran. */
  check_tasks(pool, tasks0 + 1 + (uint64_t)atomic_load(&by_pool));
}

/* ---- K frames, taken in an order ---------------------------------------- */

typedef struct kid {
  atomic_uint runs;
} kid;

static void kid_fn(void *p) { atomic_fetch_add(&((kid *)p)->runs, 1); }

typedef struct order_arg {
  unsigned k;
  int order; /* 0 LIFO, 1 FIFO, 2 random */
  uint64_t seed;
  unsigned ntaken; /* out: frames that came back as POOL_TAKEN */
} order_arg;

static void order_task(void *p) {
  order_arg *a = p;
  unsigned k = a->k;
  kid *kids = calloc(k, sizeof *kids);
  pool_task_t *t = calloc(k, sizeof *t);
  unsigned *ord = calloc(k, sizeof *ord);
  unsigned char *taken = calloc(k, 1);
  CHECK(kids && t && ord && taken);
  for (unsigned i = 0; i < k; i++) CHECK_OK(pool_spawn(NULL, &t[i], kid_fn, &kids[i]));
  for (unsigned i = 0; i < k; i++) ord[i] = a->order == 0 ? k - 1 - i : i;
  if (a->order == 2) shuffle(ord, k, &a->seed);
  for (unsigned i = 0; i < k; i++) {
    unsigned c = ord[i];
    /* Every third one by pool_sync, the rest by pool_take. */
    if (c % 3 == 0) {
      CHECK_OK(pool_sync(&t[c]));
      CHECK_EQ(atomic_load(&kids[c].runs), 1);
      continue;
    }
    int rc = pool_take(&t[c]);
    if (rc == POOL_TAKEN) {
      CHECK_EQ(atomic_load(&kids[c].runs), 0);
      taken[c] = 1;
      kid_fn(&kids[c]);
    } else {
      CHECK_EQ(rc, 0);
      CHECK_EQ(atomic_load(&kids[c].runs), 1);
    }
  }
  for (unsigned i = 0; i < k; i++) CHECK_EQ(atomic_load(&kids[i].runs), 1);
  a->ntaken = 0;
  for (unsigned i = 0; i < k; i++) a->ntaken += taken[i];
  /* LIFO from one worker that spawned them all: the newest is on top of
   * its private stack unless a thief asked for work, so at least the last
   * spawned one comes back on a single worker. */
  if (a->order == 0 && (k - 1) % 3 != 0 && pool_threads(pool_current()) == 1)
    CHECK(taken[k - 1]);
  free(kids);
  free(t);
  free(ord);
  free(taken);
}

/* ---- a task that a thief has surely started ------------------------------ */

typedef struct started_arg {
  atomic_int started, release, runs;
} started_arg;

static void started_fn(void *p) {
  started_arg *s = p;
  atomic_store(&s->started, 1);
  while (!atomic_load(&s->release)) {
  }
  atomic_fetch_add(&s->runs, 1);
}

static void stolen_task(void *p) {
  (void)p;
  started_arg s;
  atomic_init(&s.started, 0);
  atomic_init(&s.release, 0);
  atomic_init(&s.runs, 0);
  pool_task_t t;
  CHECK_OK(pool_spawn(NULL, &t, started_fn, &s));
  /* With 2 workers and nothing else queued, the other worker steals it
   * (the spawn published it: the deque was empty). Wait until it runs. */
  while (!atomic_load(&s.started)) {
  }
  atomic_store(&s.release, 1);
  CHECK_EQ(pool_take(&t), 0);
  CHECK_EQ(atomic_load(&s.runs), 1);
}

/* ---- misuse -------------------------------------------------------------- */

static void noop(void *p) { (void)p; }

static void misuse_task(void *p) {
  (void)p;
  CHECK_EQ(pool_take(NULL), EINVAL);
  if (WSPOOL_TEST_DEBUG_CHECKS) return; /* the rest aborts there, by design */
  pool_task_t never;
  memset(&never, 0, sizeof never);
  CHECK_EQ(pool_take(&never), EINVAL);
  pool_task_t t;
  CHECK_OK(pool_spawn(NULL, &t, noop, NULL));
  CHECK_OK(pool_sync(&t));
  CHECK_EQ(pool_take(&t), EINVAL);
  CHECK_EQ(pool_sync(&t), EINVAL);
}

/* ---- the cases ------------------------------------------------------------ */

static void fibs(pool_t *pool) {
  unsigned long reps = check_iters(3);
  for (unsigned long r = 0; r < reps; r++)
    for (int n = 0; n <= 22; n += (n < 5 ? 1 : 6)) check_fib(pool, n);
}

static void orders(pool_t *pool) {
  const unsigned ks[] = {1, 2, 255, 256, 257, 1000, 5000};
  for (unsigned j = 0; j < sizeof ks / sizeof ks[0]; j++)
    for (int order = 0; order < 3; order++) {
      order_arg a = {ks[j], order, 0x1234567u + j, 0};
      uint64_t tasks0 = tasks_total(pool);
      CHECK_OK(pool_submit(pool, order_task, &a));
      CHECK_OK(pool_wait_idle(pool));
      /* The root and every kid not handed back. */
      check_tasks(pool, tasks0 + 1 + ks[j] - a.ntaken);
    }
}

/* From outside: the task runs on the pool; take waits for it. */
static void outside(pool_t *pool) {
  kid k;
  atomic_init(&k.runs, 0);
  pool_task_t t;
  CHECK_OK(pool_spawn(pool, &t, kid_fn, &k));
  CHECK_EQ(pool_take(&t), 0);
  CHECK_EQ(atomic_load(&k.runs), 1);
  if (!WSPOOL_TEST_DEBUG_CHECKS) CHECK_EQ(pool_take(&t), EINVAL);
}

static void misuse(pool_t *pool) {
  CHECK_OK(pool_submit(pool, misuse_task, NULL));
  CHECK_OK(pool_wait_idle(pool));
}

static void case_fib(void) { ON_POOLS(fibs, 1, 2, 3, 8); }
static void case_orders(void) { ON_POOLS(orders, 1, 2, 3, 8); }
static void case_outside(void) { ON_POOLS(outside, 1, 2, 3, 8); }
static void case_misuse(void) { ON_POOLS(misuse, 1, 2, 3, 8); }

static void case_stolen(void) {
  pool_t *pool = make_pool(2);
  for (unsigned long r = 0; r < check_iters(20); r++) {
    CHECK_OK(pool_submit(pool, stolen_task, NULL));
    CHECK_OK(pool_wait_idle(pool));
  }
  CHECK_OK(pool_destroy(pool));
}

TEST_MAIN(120, TEST_CASE(fib), TEST_CASE(orders), TEST_CASE(stolen), TEST_CASE(outside),
          TEST_CASE(misuse))
