/* SPDX-License-Identifier: MIT */
/* What grows with the number of workers, counted (docs/design.md 5.10,
 * docs/scaling.md). Oversubscribed here: 64 and 256 workers on whatever
 * CPUs the machine has; nothing is timed.
 *
 * 0. ramp_depth: a burst of 4 P outside submissions into P sleeping
 *    workers (64, then 256), as one pool_submit_n, then as 4 P calls of
 *    pool_submit. Each task holds its worker until every worker has run
 *    one, so all P must be woken; blocked, so that the OS runs each woken
 *    thread at once, the order that makes a tree of wakes deepest. The
 *    deepest wake, in wakes from the submitting thread (ws_sleep_depth: a
 *    ring carries the ringer's depth, so it is exact): for the batch at
 *    most 2 log2(P) + 2 (the submitter rings every sleeper itself, 1; more
 *    only for a worker whose task others took and that slept again after
 *    its poll, design.md 5.4); for the single calls printed, not bounded
 *    (a tree whose depth follows the OS's order: docs/scaling.md,
 *    "Ramp-up"). With one wake in flight and Go's chain alone it is P.
 *    Each task runs once.
 * 1. wake_small: one task into 64 sleeping workers wakes at most two of
 *    them (the producer's wake and the chain's one, 5.4): no herd, five
 *    rounds.
 * 2. idle_round: an idle worker's rounds look at a bounded number of
 *    victims. Of 256 workers, 255 hold tasks (awake, deques empty) while
 *    the last one's search runs: its failed steals are at most 8 a round
 *    (IDLE_VICTIMS) over its look and 64 rounds of poll, plus a look at
 *    every awake worker before its nap and one after it; a poll looking at
 *    every victim would fail 255 times a round.
 * 3. asleep_skipped: the look before a sleep passes over sleeping workers:
 *    a worker that ran the one task of a pool of 256 sleepers fails no
 *    steal at all in its search (every other worker is marked asleep).
 * Cases: ramp_depth, wake_small, idle_round, asleep_skipped. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "check.h"
#include "fence.h"
#include "scheduler.h"
#include "sleep.h"
#include "testutil.h"

/* A pool of n workers, unbound (256 threads bound to two CPUs would test
 * the binder, not the wakes). */
static pool_t *unbound_pool(unsigned n) {
  pool_config_t cfg;
  pool_config_default(&cfg);
  cfg.threads = n;
  cfg.bind = POOL_BIND_NONE;
  pool_t *p = NULL;
  CHECK_OK(pool_create(&p, &cfg));
  return p;
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Worker i of pool is in the sleep after its last look, past any nap
 * (WS_DOING_SLEEP, worker.c): its counters stand still until a wake. */
static bool past_nap(pool_t *pool, unsigned i) {
  return ws_u32_load(&((struct pool *)pool)->workers[i]->doing, ws_relaxed) == WS_DOING_SLEEP;
}

/* Until every worker of p is registered asleep with its deque marked
 * empty (scheduler.h) and past its nap (a napper wakes by itself when its
 * nap ends, and treats work it then finds as a wake: counted here, it
 * would be one wake too many), read as stable twice 1 ms apart; gives up
 * after 60 s x WSPOOL_STRESS (a failure, not a hang). */
static void until_all_asleep(pool_t *pool) {
  struct pool *p = (struct pool *)pool;
  uint64_t give_up = now_ns() + check_iters(60) * 1000000000ull;
  for (unsigned stable = 0; stable < 2;) {
    bool all = ws_u32_load(&p->sleep.sleepers, ws_seq_cst) == p->nthreads;
    for (unsigned i = 0; all && i < p->nthreads; i++)
      all = ws_u32_load(&p->asleep[i], ws_seq_cst) != 0 && past_nap(pool, i);
    stable = all ? stable + 1 : 0;
    CHECK(now_ns() < give_up);
    sleep_ms(1);
  }
}

static uint64_t total_sleeps(pool_t *p) {
  uint64_t n = 0;
  for (unsigned w = 0; w < pool_threads(p); w++) {
    pool_worker_stats_t s;
    CHECK_OK(pool_worker_stats(p, w, &s));
    n += s.sleeps;
  }
  return n;
}

/* Once a heavy barrier failed (fence.h), sleepers also wake every
 * millisecond on their own to look: sleeps and depths no longer count
 * the wakes alone (the -Dmembarrier=failing build). */
#define SKIP_IF_DEGRADED()                                                  \
  do {                                                                      \
    pool_t *probe_ = unbound_pool(1);                                       \
    CHECK_OK(pool_destroy(probe_));                                         \
    if (ws_fence_degraded()) TEST_SKIP("heavy barrier failed: timed sleeps"); \
  } while (0)

/* Without futexes (-Dfutex=false) a wake broadcasts to every waiter of
 * its word's bucket (sleep.c), so sleeps count those woken for nothing. */
#ifdef WS_NO_FUTEX
#define SKIP_IF_BROADCAST() TEST_SKIP("no futex: a wake broadcasts to its bucket")
#else
#define SKIP_IF_BROADCAST() ((void)0)
#endif

/* ---- ramp_depth ---------------------------------------------------------- */

typedef struct ramp {
  unsigned workers;
  atomic_uint *ran;      /* per task: runs */
  atomic_uchar *seen;    /* per worker: ran a task */
  atomic_uint distinct;  /* workers seen */
  atomic_uint max_depth; /* deepest wake among the tasks' threads */
  uint64_t give_up;
  atomic_bool late;
  pthread_mutex_t m;
  pthread_cond_t c;
} ramp;

static ramp R = {.m = PTHREAD_MUTEX_INITIALIZER, .c = PTHREAD_COND_INITIALIZER};

static void ramp_task(void *arg) {
  atomic_fetch_add(&R.ran[(uintptr_t)arg], 1);
  unsigned id = (unsigned)pool_worker_id();
  CHECK(id < R.workers);
  atomic_max_u(&R.max_depth, ws_sleep_depth());
  if (!atomic_exchange(&R.seen[id], 1)) atomic_fetch_add(&R.distinct, 1);
  /* Hold this worker until every worker has run a task: all P must be
   * woken, and the last to start ends the ramp. */
  pthread_mutex_lock(&R.m);
  if (atomic_load(&R.distinct) == R.workers) pthread_cond_broadcast(&R.c);
  while (atomic_load(&R.distinct) < R.workers) {
    if (now_ns() > R.give_up) {
      atomic_store(&R.late, true);
      break;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 1;
    pthread_cond_timedwait(&R.c, &R.m, &ts);
  }
  pthread_mutex_unlock(&R.m);
}

static unsigned log2_floor(unsigned n) {
  unsigned l = 0;
  while (n >>= 1) l++;
  return l;
}

static void ramp_once(unsigned workers, bool batch) {
  pool_t *pool = unbound_pool(workers);
  until_all_asleep(pool);
  size_t n = 4 * (size_t)workers;
  R.workers = workers;
  R.ran = flags_alloc(n);
  R.seen = calloc(workers, sizeof *R.seen);
  CHECK(R.seen);
  atomic_store(&R.distinct, 0);
  atomic_store(&R.max_depth, 0);
  atomic_store(&R.late, false);
  R.give_up = now_ns() + check_iters(120) * 1000000000ull;
  void **args = malloc(n * sizeof *args);
  CHECK(args);
  for (size_t i = 0; i < n; i++) args[i] = (void *)(uintptr_t)i;
  if (batch)
    CHECK_OK(pool_submit_n(pool, ramp_task, args, n));
  else
    for (size_t i = 0; i < n; i++) CHECK_OK(pool_submit(pool, ramp_task, args[i]));
  CHECK_OK(pool_wait_idle(pool));
  CHECK(!atomic_load(&R.late));
  flags_check_once(R.ran, n, "task");
  unsigned depth = atomic_load(&R.max_depth), bound = 2 * log2_floor(workers) + 2;
  printf("# %u workers, %s: deepest wake %u (bound %u%s)\n", workers,
         batch ? "one pool_submit_n" : "pool_submit calls", depth, bound,
         batch ? "" : ", not checked");
  CHECK(depth >= 1);
  if (batch) CHECK(depth <= bound);
  free(args);
  free((void *)R.ran);
  free(R.seen);
  CHECK_OK(pool_destroy(pool));
}

static void case_ramp_depth(void) {
  SKIP_IF_BROADCAST(); /* a ring would wake its bucket: depths not exact */
  SKIP_IF_DEGRADED();
  ramp_once(64, true);
  ramp_once(256, true);
  ramp_once(64, false);
  ramp_once(256, false);
}

/* ---- wake_small ---------------------------------------------------------- */

static atomic_uint small_ran;
static void small_task(void *arg) {
  (void)arg;
  atomic_fetch_add(&small_ran, 1);
}

static void case_wake_small(void) {
  SKIP_IF_BROADCAST();
  SKIP_IF_DEGRADED();
  pool_t *pool = unbound_pool(64);
  for (unsigned round = 0; round < 5; round++) {
    until_all_asleep(pool);
    uint64_t before = total_sleeps(pool);
    atomic_store(&small_ran, 0);
    CHECK_OK(pool_submit(pool, small_task, NULL));
    CHECK_OK(pool_wait_idle(pool));
    CHECK_EQ(atomic_load(&small_ran), 1);
    until_all_asleep(pool);
    /* Every worker woken has slept again: the new sleeps count the wakes. */
    uint64_t woken = total_sleeps(pool) - before;
    printf("# round %u: %llu workers woken for one task\n", round, (unsigned long long)woken);
    CHECK(woken >= 1);
    CHECK(woken <= 2);
  }
  CHECK_OK(pool_destroy(pool));
}

/* ---- idle_round ---------------------------------------------------------- */

/* P tasks, one a worker: each holds its worker until all have started;
 * then the last to start returns and its worker searches among P - 1 busy
 * workers with empty deques, while the others hold until released. */
enum { HOLD_P = 256 };
static atomic_uint hold_started;
static atomic_bool late;
static atomic_int searcher = -1;
static pool_worker_stats_t snap; /* written before `searcher` */
static atomic_bool hold_release;

static void hold_task(void *arg) {
  (void)arg;
  uint64_t give_up = now_ns() + check_iters(120) * 1000000000ull;
  if (atomic_fetch_add(&hold_started, 1) + 1 == HOLD_P) {
    /* Its counters as its search begins (its own: read here, exactly). */
    CHECK_OK(pool_worker_stats(pool_current(), (unsigned)pool_worker_id(), &snap));
    atomic_store(&searcher, pool_worker_id());
    return;
  }
  while (!atomic_load(&hold_release)) {
    if (now_ns() > give_up) {
      atomic_store(&late, true);
      return;
    }
    sched_yield();
  }
}

static void case_idle_round(void) {
  enum { P = HOLD_P, ROUNDS = 64, VICTIMS = 8 };
  pool_t *pool = unbound_pool(P);
  until_all_asleep(pool);
  atomic_store(&late, false);
  atomic_store(&hold_started, 0);
  atomic_store(&searcher, -1);
  atomic_store(&hold_release, false);
  for (unsigned i = 0; i < P; i++) CHECK_OK(pool_submit(pool, hold_task, NULL));
  uint64_t give_up = now_ns() + check_iters(120) * 1000000000ull;
  while (atomic_load(&searcher) < 0) {
    CHECK(now_ns() < give_up);
    sleep_ms(1);
  }
  /* Until the searcher has slept after its task and is past its nap
   * (until_all_asleep): its poll and both its last looks are over, and its
   * counters stand still. */
  int w = atomic_load(&searcher);
  pool_worker_stats_t s;
  for (;;) {
    CHECK_OK(pool_worker_stats(pool, (unsigned)w, &s));
    if (s.sleeps > snap.sleeps && past_nap(pool, (unsigned)w)) {
      CHECK_OK(pool_worker_stats(pool, (unsigned)w, &s));
      break;
    }
    CHECK(now_ns() < give_up);
    sleep_ms(1);
  }
  atomic_store(&hold_release, true);
  CHECK_OK(pool_wait_idle(pool));
  CHECK(!atomic_load(&late));
  /* Its look after its task and its poll's rounds, at most VICTIMS each,
   * and the last look before its nap and the one after it (design.md 5.3;
   * none after a nap a wake ended), each looking at every awake worker: up
   * to P - 1 failures each. A poll looking at every victim would fail
   * (ROUNDS + 2) (P - 1) times. */
  uint64_t failures = s.steal_failures - snap.steal_failures;
  CHECK_EQ(s.steals, snap.steals); /* nothing to take: all it saw failed */
  uint64_t bound = (ROUNDS + 1) * VICTIMS + 2 * (P - 1);
  printf("# worker %d: %llu failed steals in its search among %u busy workers (bound %llu, "
         "unbounded rounds %u)\n",
         w, (unsigned long long)failures, P - 1, (unsigned long long)bound, (ROUNDS + 2) * (P - 1));
  CHECK(failures >= ROUNDS); /* it polled */
  CHECK(failures <= bound);
  CHECK_OK(pool_destroy(pool));
}

/* ---- asleep_skipped ------------------------------------------------------ */

static void one_task(void *arg) { (void)arg; }

static void case_asleep_skipped(void) {
  SKIP_IF_BROADCAST();
  SKIP_IF_DEGRADED();
  enum { P = 256 };
  pool_t *pool = unbound_pool(P);
  for (unsigned round = 0; round < 3; round++) {
    until_all_asleep(pool);
    pool_worker_stats_t before[P];
    for (unsigned w = 0; w < P; w++) CHECK_OK(pool_worker_stats(pool, w, &before[w]));
    CHECK_OK(pool_submit(pool, one_task, NULL));
    CHECK_OK(pool_wait_idle(pool));
    until_all_asleep(pool);
    uint64_t failures = 0, ran = 0;
    for (unsigned w = 0; w < P; w++) {
      pool_worker_stats_t s;
      CHECK_OK(pool_worker_stats(pool, w, &s));
      failures += s.steal_failures - before[w].steal_failures;
      ran += s.tasks - before[w].tasks;
    }
    printf("# round %u: %llu failed steals among %u workers for one task\n", round,
           (unsigned long long)failures, P);
    CHECK_EQ(ran, 1);
    /* The two woken (wake_small) may each see the other awake for a
     * while: a few failures, not P. */
    CHECK(failures <= 2 * (64 + 2) * 8);
  }
  CHECK_OK(pool_destroy(pool));
}

TEST_MAIN(600, TEST_CASE(ramp_depth), TEST_CASE(wake_small), TEST_CASE(idle_round), TEST_CASE(asleep_skipped))
