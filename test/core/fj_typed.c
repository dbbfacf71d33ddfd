/* SPDX-License-Identifier: MIT */
/* Typed tasks (POOL_TASK, wspool_typed.h), as fj_compute, fj_sync_order,
 * fj_outside and fj_misuse check pool_spawn/pool_sync:
 *  - fib(n) for n = 0..24 through a one-argument typed task, and a
 *    range sum through a three-argument one, on pools of 1 to 8 workers:
 *    exact results, so results of stolen tasks (read from the frame) and
 *    of unstolen ones (a direct call) are both right;
 *  - every arity 0..6, value and void, each argument landing in its place;
 *  - K typed children (K from 1 to past the private stack, 256) synced in
 *    FIFO, LIFO and random order, each run exactly once, its result there
 *    right after its sync; frames reused;
 *  - spawns from outside threads (the main thread and several others at
 *    once) into a named pool and into the default pool;
 *  - a task surely stolen (its spawner waits until another worker has
 *    started it): the sync returns the result the thief stored;
 *  - misuse: NAME_sync_rc of a frame never spawned or already synced is
 *    EINVAL and leaves the output alone.
 * Built twice: with the header's inline paths and with POOL_NO_INLINE.
 * Cases (each on pools of 1 to 8 workers, made from a zeroed
 * configuration): fib, sum, arities, sync_orders, misuse, stolen (2 or
 * more workers), outside; and default_pool. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <wspool.h>

#include "check.h"
#include "testutil.h"
#include "wspool_test_config.h"

/* ---- fib: one argument, a result ---------------------------------------- */

static long fib(int n);
POOL_TASK(long, fib, int);

static long fib(int n) {
  if (n < 2) return n;
  fib_frame f;
  CHECK_OK(fib_spawn(&f, n - 1));
  long y = fib(n - 2);
  return fib_sync(&f) + y;
}

/* ---- a range sum: three arguments, two children, synced in either order - */

static long sum(const int *v, size_t lo, size_t hi);
POOL_TASK(long, sum, const int *, size_t, size_t);

static long sum(const int *v, size_t lo, size_t hi) {
  if (hi - lo <= 4) {
    long s = 0;
    for (size_t i = lo; i < hi; i++) s += v[i];
    return s;
  }
  size_t mid = lo + (hi - lo) / 2, q = lo + (mid - lo) / 2;
  sum_frame a, b;
  CHECK_OK(sum_spawn(&a, v, lo, q));
  CHECK_OK(sum_spawn(&b, v, q, mid));
  long r = sum(v, mid, hi);
  if ((lo / 5) % 2) { /* out of order: the older frame first */
    r += sum_sync(&a);
    r += sum_sync(&b);
  } else {
    long rb;
    CHECK_OK(sum_sync_rc(&b, &rb));
    r += rb + sum_sync(&a);
  }
  return r;
}

/* ---- every arity ------------------------------------------------------- */

typedef struct pair {
  int x;
  double y;
} pair;

static atomic_long void_hits;

static int ar0(void) { return 42; }
static long ar1(long a) { return a * 3; }
static double ar2(float a, double b) { return (double)a + b * 2; }
static pair ar3(pair p, char c, unsigned u) {
  pair r = {p.x + c, p.y * (double)u};
  return r;
}
static uint64_t ar4(uint8_t a, uint16_t b, uint32_t c, uint64_t d) {
  return a | (uint64_t)b << 8 | (uint64_t)c << 24 | d << 56;
}
static long ar5(int a, int b, int c, int d, int e) { return a + 10 * b + 100 * c + 1000 * d + 10000 * e; }
static long ar6(short a, long b, int c, long d, int e, long f) {
  return a - b + c - d + e - f * 2;
}
static void v0(void) { atomic_fetch_add(&void_hits, 1); }
static void v1(long *out) { *out = 7; }
static void v6(long *out, int a, int b, int c, int d, int e) { *out = a * b * c * d * e; }

POOL_TASK_0(int, ar0);
POOL_TASK(long, ar1, long);
POOL_TASK(double, ar2, float, double);
POOL_TASK(pair, ar3, pair, char, unsigned);
POOL_TASK(uint64_t, ar4, uint8_t, uint16_t, uint32_t, uint64_t);
POOL_TASK(long, ar5, int, int, int, int, int);
POOL_TASK(long, ar6, short, long, int, long, int, long);
POOL_VOID_TASK_0(v0);
POOL_VOID_TASK(v1, long *);
POOL_VOID_TASK(v6, long *, int, int, int, int, int);

static void arities(void) {
  ar0_frame f0;
  ar1_frame f1;
  ar2_frame f2;
  ar3_frame f3;
  ar4_frame f4;
  ar5_frame f5;
  ar6_frame f6;
  v0_frame g0;
  v1_frame g1;
  v6_frame g6;
  pair p = {5, 1.5};
  long o1 = 0, o6 = 0;
  long before = atomic_load(&void_hits);
  CHECK_OK(ar0_spawn(&f0));
  CHECK_OK(ar1_spawn(&f1, 14));
  CHECK_OK(ar2_spawn(&f2, 0.5f, 0.25));
  CHECK_OK(ar3_spawn(&f3, p, 2, 4u));
  CHECK_OK(ar4_spawn(&f4, 0x12, 0x3456, 0x789abcu, 0x0d));
  CHECK_OK(ar5_spawn(&f5, 1, 2, 3, 4, 5));
  CHECK_OK(ar6_spawn(&f6, 1, 2, 3, 4, 5, 6));
  CHECK_OK(v0_spawn(&g0));
  CHECK_OK(v1_spawn(&g1, &o1));
  CHECK_OK(v6_spawn(&g6, &o6, 1, 2, 3, 4, 5));
  /* Oldest first: everything newer is still on the stack. */
  CHECK_EQ(ar0_sync(&f0), 42);
  CHECK_EQ(ar1_sync(&f1), 42);
  CHECK(ar2_sync(&f2) == 1.0);
  pair r3 = ar3_sync(&f3);
  CHECK(r3.x == 7 && r3.y == 6.0);
  CHECK(ar4_sync(&f4) == (0x12u | 0x3456u << 8 | (uint64_t)0x789abcu << 24 | (uint64_t)0x0d << 56));
  CHECK_EQ(ar5_sync(&f5), 54321);
  CHECK_EQ(ar6_sync(&f6), 1 - 2 + 3 - 4 + 5 - 12);
  v0_sync(&g0);
  CHECK_OK(v1_sync_rc(&g1));
  v6_sync(&g6);
  CHECK_EQ(atomic_load(&void_hits), before + 1);
  CHECK_EQ(o1, 7);
  CHECK_EQ(o6, 120);
}

/* ---- children synced in every order ------------------------------------ */

enum { KMAX = 600 };

typedef struct child {
  atomic_uint runs;
  unsigned idx;
} child;

static long child_fn(child *c, int n);
POOL_TASK(long, child_fn, child *, int);

static long child_fn(child *c, int n) {
  atomic_fetch_add(&c->runs, 1);
  return fib(n) * 1000 + c->idx;
}

static void sync_orders(unsigned k, uint64_t seed) {
  static child kids[KMAX];
  static child_fn_frame frames[KMAX];
  static unsigned ord[KMAX];
  for (int order = 0; order < 3; order++) {
    for (unsigned i = 0; i < k; i++) {
      atomic_store(&kids[i].runs, 0);
      kids[i].idx = i;
      ord[i] = order == 1 ? k - 1 - i : i;
    }
    if (order == 2) shuffle(ord, k, &seed);
    for (unsigned i = 0; i < k; i++) CHECK_OK(child_fn_spawn(&frames[i], &kids[i], (int)(i % 14)));
    for (unsigned j = 0; j < k; j++) {
      unsigned i = ord[j];
      long r = child_fn_sync(&frames[i]);
      CHECK_EQ(r, fib_seq((int)(i % 14)) * 1000 + i);
      CHECK_EQ(atomic_load(&kids[i].runs), 1);
    }
  }
}

/* ---- a stolen task ------------------------------------------------------ */

static atomic_int stolen_started;
static pthread_t stolen_runner;

static long stolen_fn(int x, long y) {
  stolen_runner = pthread_self();
  atomic_store(&stolen_started, 1); /* seq_cst: stolen_runner before it */
  return x * y + fib(12);
}
POOL_TASK(long, stolen_fn, int, long);

/* On a pool of two or more workers: the spawner does not sync until a thief
 * has started the task, so the sync finds it run elsewhere. */
static void stolen(void) {
  atomic_store(&stolen_started, 0);
  stolen_fn_frame f;
  CHECK_OK(stolen_fn_spawn(&f, 6, 7));
  while (!atomic_load(&stolen_started)) sched_yield();
  CHECK(!pthread_equal(stolen_runner, pthread_self()));
  CHECK_EQ(stolen_fn_sync(&f), 42 + 144);
  atomic_store(&stolen_started, 0);
  CHECK_OK(stolen_fn_spawn(&f, 3, 5));
  while (!atomic_load(&stolen_started)) sched_yield();
  long r = 0;
  CHECK_OK(stolen_fn_sync_rc(&f, &r));
  CHECK_EQ(r, 15 + 144);
}

/* ---- misuse ------------------------------------------------------------ */

static void misuse(void) {
  /* A -Ddebug_checks=true library reports these and aborts, by design
   * (debug_checks.c checks that); here only the normal build's EINVAL. */
  if (WSPOOL_TEST_DEBUG_CHECKS) return;
  fib_frame f;
  memset(&f, 0, sizeof f);
  long out = -5;
  CHECK_EQ(fib_sync_rc(&f, &out), EINVAL); /* never spawned */
  CHECK_EQ(out, -5);
  CHECK_OK(fib_spawn(&f, 10));
  CHECK_OK(fib_sync_rc(&f, &out));
  CHECK_EQ(out, 55);
  out = -5;
  CHECK_EQ(fib_sync_rc(&f, &out), EINVAL); /* second sync */
  CHECK_EQ(out, -5);
  v1_frame g;
  memset(&g, 0, sizeof g);
  CHECK_EQ(v1_sync_rc(&g), EINVAL);
}

/* ---- the tests, run inside a pool --------------------------------------- */

typedef struct job {
  int what;
  unsigned arg;
  uint64_t seed;
} job;

static int *values;
enum { NVALUES = 5000 };

static void run_job(void *p) {
  job *j = p;
  switch (j->what) {
  case 0:
    for (int n = 0; n <= 24; n++) CHECK_EQ(fib(n), fib_seq(n));
    break;
  case 1:
    for (size_t len = 0; len <= NVALUES; len = len * 3 + 1) {
      long want = 0;
      for (size_t i = 0; i < len; i++) want += values[i];
      CHECK_EQ(sum(values, 0, len), want);
    }
    break;
  case 2:
    arities();
    break;
  case 3:
    sync_orders(j->arg, j->seed);
    break;
  case 4:
    misuse();
    break;
  case 5:
    stolen();
    break;
  }
}

static void in_pool(pool_t *p, int what, unsigned arg, uint64_t seed) {
  job j = {what, arg, seed};
  CHECK_OK(pool_submit(p, run_job, &j));
  CHECK_OK(pool_wait_idle(p));
}

/* ---- outside threads --------------------------------------------------- */

static void *outside_thread(void *p) {
  pool_t *pool = p;
  for (int n = 0; n < 22; n += 3) {
    fib_frame f;
    CHECK_OK(pool ? fib_spawn_in(pool, &f, n) : fib_spawn(&f, n));
    CHECK_EQ(fib_sync(&f), fib_seq(n));
  }
  return NULL;
}

static void outside(pool_t *pool) {
  outside_thread(pool);
  /* Several children at once from main, synced out of order. */
  child kids[8];
  child_fn_frame frames[8];
  for (unsigned i = 0; i < 8; i++) {
    atomic_store(&kids[i].runs, 0);
    kids[i].idx = i;
    CHECK_OK(child_fn_spawn_in(pool, &frames[i], &kids[i], (int)(10 + i)));
  }
  for (unsigned i = 0; i < 8; i++) {
    unsigned k = (i * 5) % 8;
    long r;
    CHECK_OK(child_fn_sync_rc(&frames[k], &r));
    CHECK_EQ(r, fib_seq((int)(10 + k)) * 1000 + k);
    CHECK_EQ(atomic_load(&kids[k].runs), 1);
  }
  pthread_t th[3];
  for (int i = 0; i < 3; i++) CHECK_OK(pthread_create(&th[i], NULL, outside_thread, pool));
  for (int i = 0; i < 3; i++) CHECK_OK(pthread_join(th[i], NULL));
}

/* ---- the cases: each on pools of 1 to 8 workers, WSPOOL_STRESS times ---- */

/* A pool of nw workers from a zeroed configuration (the environment not
 * read). */
static pool_t *zeroed_config_pool(unsigned nw) {
  pool_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.threads = nw;
  pool_t *p;
  CHECK_OK(pool_create(&p, &cfg));
  return p;
}

/* Job `what` in a pool of each size from `from` to 8. */
static void each_pool(int what, unsigned from) {
  for (unsigned long r = 0; r < check_iters(1); r++)
    for (unsigned nw = from; nw <= 8; nw++) {
      pool_t *p = zeroed_config_pool(nw);
      in_pool(p, what, 0, 0);
      pool_destroy(p);
    }
}

static void case_fib(void) { each_pool(0, 1); }

static void case_sum(void) {
  static int v[NVALUES];
  for (int i = 0; i < NVALUES; i++) v[i] = (i * 7919) % 1000 - 500;
  values = v;
  each_pool(1, 1);
}

static void case_arities(void) { each_pool(2, 1); }
static void case_misuse(void) { each_pool(4, 1); }
static void case_stolen(void) { each_pool(5, 2); }

static void case_sync_orders(void) {
  static const unsigned ks[] = {1, 2, 3, 17, 255, 256, 257, 300, KMAX};
  for (unsigned long r = 0; r < check_iters(1); r++)
    for (unsigned nw = 1; nw <= 8; nw++) {
      pool_t *p = zeroed_config_pool(nw);
      for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++)
        in_pool(p, 3, ks[i], 0x9e3779b97f4a7c15ull + i + nw + r);
      pool_destroy(p);
    }
}

static void case_outside(void) {
  for (unsigned long r = 0; r < check_iters(1); r++)
    for (unsigned nw = 1; nw <= 8; nw++) {
      pool_t *p = zeroed_config_pool(nw);
      outside(p);
      pool_destroy(p);
    }
}

static void case_default_pool(void) { outside_thread(NULL); }

TEST_MAIN(240, TEST_CASE(fib), TEST_CASE(sum), TEST_CASE(arities), TEST_CASE(sync_orders),
          TEST_CASE(misuse), TEST_CASE(stolen), TEST_CASE(outside), TEST_CASE(default_pool))
