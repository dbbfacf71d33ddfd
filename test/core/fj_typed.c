/* SPDX-License-Identifier: MIT */
/* Typed tasks (POOL_TASK, wspool_typed.h), as fj_compute, fj_sync_order,
 * fj_outside and fj_misuse check pool_spawn/pool_sync:
 *  - fib(n) for n = 0..24 through a one-argument typed task, and a
 *    range sum through a three-argument one, on pools of 1 to 8 workers:
 *    exact results, so results of stolen tasks (read from the frame) and
 *    of unstolen ones (a direct call) are both right;
 *  - arities 0..7, 12 and 14, value and void, each argument landing in its
 *    place (the results mix the arguments by position);
 *  - K typed children (K from 1 to past the private stack, 256) synced in
 *    FIFO, LIFO and random order, each run exactly once, its result there
 *    right after its sync; frames reused;
 *  - spawns from outside threads (the main thread and several others at
 *    once) into a named pool and into the default pool;
 *  - a task surely stolen (its spawner waits until another worker has
 *    started it): the sync returns the result the thief stored;
 *  - misuse: NAME_sync_rc of a frame never spawned or already synced is
 *    EINVAL and leaves the output alone;
 *  - NAME_run and NAME_run_rc: from the main thread and several others at
 *    once (the task runs once, on a worker of the named pool, with the
 *    exact result), with NULL (the default pool), from a worker of the
 *    pool (on a pool of one worker, on the calling thread) and from a
 *    worker of another pool; into a pool being destroyed: ESHUTDOWN, the
 *    output untouched, nothing run, and NAME_run's result the type's zero;
 *  - NAME_push and NAME_pop: n-queens with every child's frame on the
 *    thread's frame stack (n = 1..10 on pools of 1 to 8 workers, and
 *    n = 11 with the first row pushed from outside): the published
 *    counts; pool_frame_push/top/pop themselves (3000 frames of mixed
 *    sizes, more than a chunk, and one bigger than a chunk, each intact
 *    until popped; the errors); typed pops with nothing pushed or another
 *    task's frame on top are EINVAL and pop nothing;
 *  - the one-piece forms (POOL_STATIC_TASK, _0, VOID, VOID_0), a
 *    definition with `inline` among them: fib, a knapsack against its
 *    sequential answer, a tree's nodes pushed and popped, each counted
 *    once, run from outside.
 * Built twice: with the header's inline paths and with POOL_NO_INLINE.
 * Cases (each on pools of 1 to 8 workers, made from a zeroed
 * configuration): fib, sum, arities, sync_orders, misuse, stolen (2 or
 * more workers), outside, run_outside, run_worker, push_pop,
 * static_forms; and
 * default_pool, run_shutdown (a pool of 2). */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <wspool.h>

#include "check.h"
#include "fj_typed_tu.h"
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
/* Past six arguments: each argument of another type, mixed in by position,
 * so that two arguments swapped or dropped change the result. */
#define MIX(h, v) ((h) * 1000003u + (uint64_t)(v))
static uint64_t ar7(int a, long b, short c, unsigned d, char e, long long f, int g) {
  uint64_t h = MIX(MIX(MIX(MIX(1, a), b), c), d);
  return MIX(MIX(MIX(h, e), f), g);
}
static uint64_t ar12(uint8_t a, int8_t b, uint16_t c, int16_t d, uint32_t e, int32_t f,
                     uint64_t g, int64_t h, float i, double j, pair k, const char *l) {
  uint64_t r = MIX(MIX(MIX(MIX(MIX(MIX(MIX(MIX(2, a), b), c), d), e), f), g), h);
  r = MIX(MIX(r, (int64_t)(i * 4)), (int64_t)(j * 8));
  return MIX(MIX(MIX(r, k.x), (int64_t)(k.y * 2)), l[0]);
}
static uint64_t ar14(int a1, int a2, int a3, int a4, int a5, int a6, int a7, int a8, int a9,
                     int a10, int a11, int a12, long a13, double a14) {
  uint64_t h = MIX(MIX(MIX(MIX(MIX(MIX(MIX(3, a1), a2), a3), a4), a5), a6), a7);
  h = MIX(MIX(MIX(MIX(MIX(MIX(h, a8), a9), a10), a11), a12), a13);
  return MIX(h, (int64_t)(a14 * 2));
}
static void v14(uint64_t *out, int a2, int a3, int a4, int a5, int a6, int a7, int a8, int a9,
                int a10, int a11, int a12, long a13, double a14) {
  *out = ar14(1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14);
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
POOL_TASK(uint64_t, ar7, int, long, short, unsigned, char, long long, int);
POOL_TASK_12(uint64_t, ar12, uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, uint64_t,
             int64_t, float, double, pair, const char *);
POOL_TASK(uint64_t, ar14, int, int, int, int, int, int, int, int, int, int, int, int, long,
          double);
POOL_VOID_TASK(v14, uint64_t *, int, int, int, int, int, int, int, int, int, int, int, long,
               double);

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
  ar7_frame f7;
  ar12_frame f12;
  ar14_frame f14;
  v14_frame g14;
  pair p = {5, 1.5};
  long o1 = 0, o6 = 0;
  uint64_t o14 = 0;
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
  CHECK_OK(ar7_spawn(&f7, -1, 2, -3, 4u, 'e', -6, 7));
  CHECK_OK(ar12_spawn(&f12, 250, -2, 60000, -4, 5u, -6, 7u, -8, 2.25f, 1.5, p, "l"));
  CHECK_OK(ar14_spawn(&f14, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 7.5));
  CHECK_OK(v14_spawn(&g14, &o14, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 7.5));
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
  /* The newest first, then the rest out of order. */
  v14_sync(&g14);
  CHECK(ar7_sync(&f7) == ar7(-1, 2, -3, 4u, 'e', -6, 7));
  uint64_t r14;
  CHECK_OK(ar14_sync_rc(&f14, &r14));
  CHECK(r14 == ar14(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 7.5));
  CHECK(o14 == r14);
  CHECK(ar12_sync(&f12) == ar12(250, -2, 60000, -4, 5u, -6, 7u, -8, 2.25f, 1.5, p, "l"));
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

/* ---- NAME_run: one call, from outside, from a worker, across pools ------- */

/* Counts its runs in *runs, the caller's (threads run these at once). */
static long counted(atomic_long *runs, int n) {
  atomic_fetch_add(runs, 1);
  return fib(n);
}
POOL_TASK(long, counted, atomic_long *, int);
static void vcount(atomic_long *runs) { atomic_fetch_add(runs, 1); }
POOL_VOID_TASK(vcount, atomic_long *);

/* Where a task runs: its pool, and its thread. */
static pool_t *where(void) { return pool_current(); }
POOL_TASK_0(pool_t *, where);
static pthread_t which_thread(int unused) {
  (void)unused;
  return pthread_self();
}
POOL_TASK(pthread_t, which_thread, int);

/* From a thread that is not a worker of p: each task runs once, on a
 * worker of p, and its result comes back; every kind of task. */
static void run_from_outside(pool_t *p) {
  for (int n = 0; n <= 24; n += 3) CHECK_EQ(fib_run(p, n), fib_seq(n));
  atomic_long runs;
  atomic_init(&runs, 0);
  long out = -1;
  CHECK_OK(counted_run_rc(p, &out, &runs, 20));
  CHECK_EQ(out, 6765);
  CHECK_EQ(counted_run(p, &runs, 21), 10946);
  CHECK_EQ(atomic_load(&runs), 2);
  CHECK(where_run(p) == p);
  CHECK(!pthread_equal(which_thread_run(p, 0), pthread_self()));
  CHECK_EQ(ar0_run(p), 42);
  pair q = {5, 1.5};
  pair r3 = ar3_run(p, q, 2, 4u);
  CHECK(r3.x == 7 && r3.y == 6.0);
  double r2 = 0;
  CHECK_OK(ar2_run_rc(p, &r2, 0.5f, 0.25));
  CHECK(r2 == 1.0);
  CHECK(ar14_run(p, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 7.5) ==
        ar14(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 7.5));
  uint64_t o14 = 0;
  CHECK_OK(v14_run_rc(p, &o14, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 7.5));
  CHECK(o14 == ar14(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 7.5));
  long o1 = 0;
  v1_run(p, &o1);
  CHECK_EQ(o1, 7);
  atomic_store(&runs, 0);
  CHECK_OK(vcount_run_rc(p, &runs));
  vcount_run(p, &runs);
  CHECK_EQ(atomic_load(&runs), 2);
}

/* From a worker of the pool: a spawn and its sync, so on a pool of one
 * worker the task runs on this thread; with NULL too. Then from this
 * worker into another pool (`other`, unless NULL), as an outside thread. */
static void run_from_worker(pool_t *other) {
  pool_t *self = pool_current();
  CHECK(self != NULL);
  for (int n = 0; n <= 20; n += 4) {
    CHECK_EQ(fib_run(NULL, n), fib_seq(n));
    long out = -1;
    CHECK_OK(fib_run_rc(self, &out, n));
    CHECK_EQ(out, fib_seq(n));
  }
  atomic_long runs;
  atomic_init(&runs, 0);
  CHECK_EQ(counted_run(self, &runs, 15), 610);
  CHECK_EQ(atomic_load(&runs), 1);
  long hits = atomic_load(&void_hits); /* one job at a time uses v0 */
  CHECK_OK(v0_run_rc(NULL));
  v0_run(self);
  CHECK_EQ(atomic_load(&void_hits), hits + 2);
  CHECK(where_run(NULL) == self);
  if (pool_threads(self) == 1) CHECK(pthread_equal(which_thread_run(self, 0), pthread_self()));
  if (other) run_from_outside(other);
}

/* ---- NAME_push / NAME_pop: as many children as a loop finds ------------- */

/* n-queens, one task per placement, the board as bit masks (columns and
 * both diagonals): each child's frame on the thread's frame stack, popped
 * newest first. */
static long queens(int n, int row, uint32_t cols, uint32_t d1, uint32_t d2);
POOL_TASK(long, queens, int, int, uint32_t, uint32_t, uint32_t);

static long queens(int n, int row, uint32_t cols, uint32_t d1, uint32_t d2) {
  if (row == n) return 1;
  int k = 0;
  for (int c = 0; c < n; c++) {
    uint32_t col = 1u << c, up = 1u << (row + c), down = 1u << (row - c + n - 1);
    if ((cols & col) || (d1 & up) || (d2 & down)) continue;
    CHECK_OK(queens_push(NULL, n, row + 1, cols | col, d1 | up, d2 | down));
    k++;
  }
  long total = 0;
  while (k-- > 0) {
    if (k % 2) {
      total += queens_pop();
    } else {
      long r = -1;
      CHECK_OK(queens_pop_rc(&r));
      total += r;
    }
  }
  return total;
}

/* Solutions for n = 0..11 (OEIS A000170). */
static const long queens_count[] = {1, 1, 0, 0, 2, 10, 4, 40, 92, 352, 724, 2680};

/* Frames of every size class, more than a chunk holds, each written
 * whole and checked after the pushes above it; a frame bigger than a
 * chunk; the errors. */
static void frame_stack(void) {
  enum { NF = 3000 };
  static unsigned char *frames[NF];
  static size_t sizes[NF];
  CHECK(pool_frame_top() == NULL);
  for (size_t i = 0; i < NF; i++) {
    void *m = NULL;
    sizes[i] = i == NF / 2 ? 100000 : 1 + (i * 37) % 200;
    size_t align = (size_t)1 << (i % 5);
    CHECK_OK(pool_frame_push(sizes[i], align, &m));
    CHECK(((uintptr_t)m & 15u) == 0);
    CHECK(pool_frame_top() == m);
    frames[i] = m;
    memset(frames[i], (int)(i & 0xff), sizes[i]);
  }
  for (size_t i = NF; i-- > 0;) {
    CHECK(pool_frame_top() == frames[i]);
    for (size_t b = 0; b < sizes[i]; b++) CHECK_EQ(frames[i][b], i & 0xff);
    if (i > 0) CHECK_EQ(pool_frame_pop(frames[i - 1]), EINVAL); /* not the newest */
    CHECK_OK(pool_frame_pop(frames[i]));
  }
  CHECK(pool_frame_top() == NULL);
  void *m = &m;
  CHECK_EQ(pool_frame_push(0, 8, &m), EINVAL);
  CHECK_EQ(pool_frame_push(8, 32, &m), EINVAL);
  CHECK_EQ(pool_frame_push(8, 3, &m), EINVAL);
  CHECK_EQ(pool_frame_push(8, 8, NULL), EINVAL);
  CHECK(m == &m);
  CHECK_EQ(pool_frame_pop(NULL), EINVAL);
  CHECK_EQ(pool_frame_pop(&m), EINVAL);
}

/* The typed pops' checks: nothing pushed, or the newest frame another
 * task's, is EINVAL (and the zero value) and pops nothing. */
static void push_misuse(void) {
  long r = -5;
  CHECK_EQ(queens_pop_rc(&r), EINVAL);
  CHECK_EQ(r, -5);
  CHECK_EQ(queens_pop(), 0);
  CHECK_EQ(v0_pop_rc(), EINVAL);
  long hits = atomic_load(&void_hits);
  CHECK_OK(v0_push(NULL));
  CHECK_EQ(queens_pop_rc(&r), EINVAL); /* the newest is v0's */
  CHECK_EQ(r, -5);
  CHECK_EQ(fib_pop(), 0);
  void *top = pool_frame_top();
  CHECK(top != NULL);
  CHECK_OK(v0_pop_rc());
  CHECK_EQ(atomic_load(&void_hits), hits + 1);
  CHECK(pool_frame_top() == NULL);
  CHECK_OK(v1_push(NULL, &r));
  CHECK_OK(ar14_push(NULL, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 7.5));
  CHECK(ar14_pop() == ar14(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 7.5));
  v1_pop();
  CHECK_EQ(r, 7);
  CHECK(pool_frame_top() == NULL);
}

/* A pop nested in the sync of its own task's frame (a task that pops what
 * it did not push): the newest frame is the one being synced, so the pop
 * finds none of its own, is EINVAL and pops nothing, where it used to run
 * that frame again (or, on a worker whose frame a thief held, wait for
 * itself). nest(d) = 1 + 3 nest(d - 1): 1, 4, 13, 40. */
static long nest(int d);
POOL_TASK(long, nest, int);

static long nest(int d) {
  void *top = pool_frame_top();
  long r = -7;
  CHECK_EQ(nest_pop_rc(&r), EINVAL);
  CHECK_EQ(r, -7);
  CHECK_EQ(nest_pop(), 0);
  CHECK(pool_frame_top() == top);
  if (d == 0) return 1;
  for (int i = 0; i < 3; i++) CHECK_OK(nest_push(NULL, d - 1));
  long total = 1;
  for (int i = 0; i < 3; i++) total += nest_pop();
  CHECK(pool_frame_top() == top);
  return total;
}

/* A frame aligned past the frame stack's 16 bytes (its result is): pushed
 * at its alignment, and popped. */
typedef struct wide {
  _Alignas(64) long v;
} wide;
static wide twice(long v);
POOL_TASK(wide, twice, long);

static wide twice(long v) {
  wide w;
  w.v = 2 * v;
  return w;
}

/* Cross-file pushes and pops (fj_typed_tu.h), nested pops, over-aligned
 * frames. */
static void push_shapes(void) {
  tu_push_range(4);
  long sum = 0;
  for (int i = 0; i < 4; i++) sum += tu_square_pop();
  CHECK_EQ(sum, 30);
  for (long x = 1; x <= 5; x++) CHECK_OK(tu_square_push(NULL, x));
  CHECK_EQ(tu_pop_sum(5), 55);
  CHECK(pool_frame_top() == NULL);
  CHECK_EQ(nest(3), 40);
  CHECK(pool_frame_top() == NULL);
  for (long x = 1; x <= 5; x++) {
    CHECK_OK(twice_push(NULL, x));
    CHECK(((uintptr_t)pool__pushed_frame(pool_frame_top(), 64) & 63u) == 0);
  }
  for (long x = 5; x >= 1; x--) CHECK_EQ(twice_pop().v, 2 * x);
  CHECK(pool_frame_top() == NULL);
}

/* ---- the tests, run inside a pool --------------------------------------- */

typedef struct job {
  int what;
  unsigned arg;
  uint64_t seed;
} job;

static int *values;
enum { NVALUES = 5000 };
static pool_t *run_other; /* the pool case run_worker runs into from a worker */

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
  case 6:
    run_from_worker(run_other);
    break;
  case 7:
    for (int n = 1; n <= 10; n++) CHECK_EQ(queens(n, 0, 0, 0, 0), queens_count[n]);
    CHECK(pool_frame_top() == NULL);
    frame_stack();
    push_misuse();
    push_shapes();
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

/* NAME_push and NAME_pop on pools of 1 to 8 workers: n-queens for n = 1
 * to 10, the frame stack itself, misuse. From outside too: the first
 * row's children pushed by the main thread into the pool, the main
 * thread's own frame stack holding them. */
static void case_push_pop(void) {
  each_pool(7, 1);
  for (unsigned nw = 1; nw <= 8; nw += 7) {
    pool_t *p = zeroed_config_pool(nw);
    int n = 11;
    for (int c = 0; c < n; c++)
      CHECK_OK(queens_push(p, n, 1, 1u << c, 1u << c, 1u << (n - 1 - c)));
    long total = 0;
    for (int c = 0; c < n; c++) total += queens_pop();
    CHECK_EQ(total, queens_count[n]);
    CHECK(pool_frame_top() == NULL);
    /* Profiled: a profiled spawn's frame runs another function (the
     * profile's), which the pops must not take for another task's. */
    pool_profile_t pr;
    CHECK_OK(pool_profile_begin(p));
    CHECK_EQ(queens_run(p, 9, 0, 0, 0, 0), queens_count[9]);
    CHECK_OK(pool_profile_end(p, &pr));
    CHECK(pool_frame_top() == NULL);
    pool_destroy(p);
  }
  frame_stack();
  push_shapes();
}

/* ---- the one-piece forms: POOL_STATIC_TASK and its kin ----------------- */

/* Declared by the macro (static), defined after it: plainly, and with
 * `inline` on the definition (the knapsack advice of typed.md). */
POOL_STATIC_TASK(long, sfib, int);
static long sfib(int n) {
  if (n < 2) return n;
  sfib_frame f;
  CHECK_OK(sfib_spawn(&f, n - 1));
  long y = sfib(n - 2);
  return sfib_sync(&f) + y;
}

/* 0/1 knapsack of items i.. with capacity c: the best value. */
enum { SK_N = 14 };
static const int sk_w[SK_N] = {3, 5, 7, 2, 9, 4, 6, 8, 1, 5, 3, 7, 2, 6};
static const int sk_v[SK_N] = {4, 6, 9, 3, 11, 5, 8, 9, 2, 7, 3, 10, 1, 7};
POOL_STATIC_TASK(int, sknap, int, int);
static inline int sknap(int i, int c) {
  if (c < 0) return -1000000;
  if (i == SK_N) return 0;
  sknap_frame f;
  CHECK_OK(sknap_spawn(&f, i + 1, c));
  int with = sknap(i + 1, c - sk_w[i]) + sk_v[i];
  int without = sknap_sync(&f);
  return with > without ? with : without;
}
static int sknap_seq(int i, int c) {
  if (c < 0) return -1000000;
  if (i == SK_N) return 0;
  int with = sknap_seq(i + 1, c - sk_w[i]) + sk_v[i], without = sknap_seq(i + 1, c);
  return with > without ? with : without;
}

/* Each node of a binary tree of depth d counts itself once, its children
 * pushed and popped. */
POOL_STATIC_VOID_TASK(snodes, atomic_long *, int);
static void snodes(atomic_long *count, int d) {
  atomic_fetch_add(count, 1);
  if (d == 0) return;
  int k = 0;
  for (int c = 0; c < 2; c++) {
    if (snodes_push(NULL, count, d - 1) == 0)
      k++;
    else
      snodes(count, d - 1); /* ENOMEM: here */
  }
  while (k-- > 0) snodes_pop();
}

POOL_STATIC_TASK_0(int, sseven);
static int sseven(void) { return 7; }

static atomic_int svoid_runs;
POOL_STATIC_VOID_TASK_0(svoid);
static void svoid(void) { atomic_fetch_add(&svoid_runs, 1); }

/* Every form on pools of 1 to 8 workers, from outside (NAME_run) and
 * inside (spawn and sync, push and pop): exact results, each run once. */
static void case_static_forms(void) {
  const int knap_best = sknap_seq(0, 30);
  for (unsigned long r = 0; r < check_iters(1); r++)
    for (unsigned nw = 1; nw <= 8; nw++) {
      pool_t *p = zeroed_config_pool(nw);
      for (int n = 0; n <= 22; n += 2) CHECK_EQ(sfib_run(p, n), fib_seq(n));
      CHECK_EQ(sknap_run(p, 0, 30), knap_best);
      atomic_long count;
      atomic_init(&count, 0);
      snodes_run(p, &count, 12);
      CHECK_EQ(atomic_load(&count), (1L << 13) - 1);
      CHECK_EQ(sseven_run(p), 7);
      int before = atomic_load(&svoid_runs);
      CHECK_OK(svoid_run_rc(p));
      CHECK_EQ(atomic_load(&svoid_runs), before + 1);
      pool_destroy(p);
    }
}

static void *run_thread(void *p) {
  run_from_outside(p);
  return NULL;
}

/* NAME_run from main and from several threads at once, on pools of 1 to
 * 8 workers; with NULL, on the default pool. */
static void case_run_outside(void) {
  for (unsigned long r = 0; r < check_iters(1); r++)
    for (unsigned nw = 1; nw <= 8; nw++) {
      pool_t *p = zeroed_config_pool(nw);
      run_from_outside(p);
      pthread_t th[3];
      for (int i = 0; i < 3; i++) CHECK_OK(pthread_create(&th[i], NULL, run_thread, p));
      for (int i = 0; i < 3; i++) CHECK_OK(pthread_join(th[i], NULL));
      pool_destroy(p);
    }
  CHECK_EQ(fib_run(NULL, 20), 6765);
  CHECK(where_run(NULL) == pool_default());
}

/* NAME_run from a worker: into its own pool, and into another pool of 1
 * or 2 workers. */
static void case_run_worker(void) {
  for (unsigned long r = 0; r < check_iters(1); r++)
    for (unsigned nw = 1; nw <= 8; nw++) {
      run_other = zeroed_config_pool(nw % 2 + 1);
      pool_t *p = zeroed_config_pool(nw);
      in_pool(p, 6, 0, 0);
      pool_destroy(p);
      pool_destroy(run_other);
      run_other = NULL;
    }
}

/* A pool being destroyed refuses NAME_run_rc with ESHUTDOWN: nothing runs
 * and *out stays; NAME_run returns the result type's zero. The destroy is
 * held open by a task on one of the two workers until the checks are done
 * (as destroy.c's second destroy). */
static atomic_int run_release;
static void hold_until_released(void *arg) {
  (void)arg;
  while (!atomic_load(&run_release)) sched_yield();
}
static void *destroy_thread(void *p) {
  CHECK_OK(pool_destroy(p));
  return NULL;
}

static void case_run_shutdown(void) {
  for (unsigned long r = 0; r < check_iters(1); r++) {
    atomic_store(&run_release, 0);
    pool_t *p = zeroed_config_pool(2);
    CHECK_OK(pool_submit(p, hold_until_released, NULL));
    pthread_t th;
    CHECK_OK(pthread_create(&th, NULL, destroy_thread, p));
    atomic_long runs;
    atomic_init(&runs, 0);
    long out, accepted = 0;
    int rc;
    for (;;) { /* accepted (and run) until the destroy began */
      out = -5;
      rc = counted_run_rc(p, &out, &runs, 10);
      if (rc != 0) break;
      CHECK_EQ(out, 55);
      CHECK_EQ(atomic_load(&runs), ++accepted);
      sched_yield();
    }
    CHECK_EQ(rc, ESHUTDOWN);
    CHECK_EQ(out, -5);
    long hits = atomic_load(&void_hits);
    CHECK_EQ(counted_run(p, &runs, 10), 0);
    CHECK(where_run(p) == NULL);
    pair q = {5, 1.5};
    pair z = ar3_run(p, q, 2, 4u);
    CHECK(z.x == 0 && z.y == 0.0);
    CHECK_EQ(v0_run_rc(p), ESHUTDOWN);
    v0_run(p);
    uint64_t o14 = 1;
    CHECK_EQ(v14_run_rc(p, &o14, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 7.5), ESHUTDOWN);
    CHECK(o14 == 1);
    CHECK_EQ(atomic_load(&runs), accepted);
    CHECK_EQ(atomic_load(&void_hits), hits);
    atomic_store(&run_release, 1);
    CHECK_OK(pthread_join(th, NULL));
  }
}

TEST_MAIN(240, TEST_CASE(fib), TEST_CASE(sum), TEST_CASE(arities), TEST_CASE(sync_orders),
          TEST_CASE(misuse), TEST_CASE(stolen), TEST_CASE(outside), TEST_CASE(default_pool),
          TEST_CASE(run_outside), TEST_CASE(run_worker), TEST_CASE(run_shutdown),
          TEST_CASE(push_pop), TEST_CASE(static_forms))
