/* SPDX-License-Identifier: MIT */
/* Fork/join from outside threads and pool_join inside tasks.
 *
 *  - 4 outside threads at once on the same pool (1, 2 and 4 workers), each
 *    doing its own trees:
 *      * a recursion on the outside thread that spawns from outside at every
 *        level (the child runs inside and recurses with spawn/sync there),
 *        then syncs;
 *      * pool_join from outside with the explicit pool (both halves go to
 *        the pool, the caller blocks), recursing with pool_join inside;
 *      * K children spawned from outside, synced in a random order;
 *    exact results and exact call counts per thread.
 *  - pool_join inside tasks (fib by pool_join; a join whose halves do
 *    spawn/sync and groups).
 *  - From a worker of pool A into pool B: pool_spawn/pool_sync and pool_join
 *    with an explicit other pool, exact results.
 *  - Outside spawn and pool_join with the NULL pool go to the default pool.
 * (fj_sync_outside checks where outside-spawned work runs.)
 * Cases, on pools of 1, 2 and 4 workers: outsiders, inside_joins (into
 * another pool too, on 2 workers), mixed (both at once); and default_pool. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <wspool.h>

#include "check.h"
#include "testutil.h"

static long fib_calls(int n) { return 2 * fib_seq(n + 1) - 1; }

/* fib(n), with a count of the calls made. */
typedef struct cfib_arg {
  int n;
  long r;
  atomic_long *calls;
} cfib_arg;

/* Inside (or anywhere): spawn/sync fib. */
static void fib_ss(void *p) {
  cfib_arg *f = p;
  atomic_fetch_add_explicit(f->calls, 1, memory_order_relaxed);
  if (f->n < 2) {
    f->r = f->n;
    return;
  }
  cfib_arg x = {f->n - 1, -1, f->calls}, y = {f->n - 2, -1, f->calls};
  pool_task_t t;
  CHECK_OK(pool_spawn(NULL, &t, fib_ss, &x));
  fib_ss(&y);
  CHECK_OK(pool_sync(&t));
  f->r = x.r + y.r;
}

/* pool_join fib with an explicit pool (NULL = the caller's pool inside). */
typedef struct jfib_arg {
  pool_t *pool;
  int n;
  long r;
  atomic_long *calls;
} jfib_arg;

static void fib_join(void *p) {
  jfib_arg *f = p;
  atomic_fetch_add_explicit(f->calls, 1, memory_order_relaxed);
  if (f->n < 2) {
    f->r = f->n;
    return;
  }
  jfib_arg x = {f->pool, f->n - 1, -1, f->calls}, y = {f->pool, f->n - 2, -1, f->calls};
  /* From outside both halves run in the pool; inside, `a` runs here and
   * `b` is spawned. The explicit pool works both ways. */
  CHECK_OK(pool_join(f->pool, fib_join, &x, fib_join, &y));
  f->r = x.r + y.r;
}

/* Outside recursion: spawn fib(n-1) into the pool from this thread, recurse
 * on n-2 here (more outside spawns), sync. */
static long outside_fib(pool_t *pool, int n, atomic_long *calls) {
  atomic_fetch_add_explicit(calls, 1, memory_order_relaxed);
  if (n < 2) return n;
  cfib_arg x = {n - 1, -1, calls};
  pool_task_t t;
  CHECK_OK(pool_spawn(pool, &t, fib_ss, &x));
  long y = outside_fib(pool, n - 2, calls);
  CHECK_OK(pool_sync(&t));
  return x.r + y;
}

typedef struct outsider {
  pool_t *pool;
  unsigned rounds;
  uint64_t seed;
  atomic_int *go;
} outsider;

static void *outsider_main(void *p) {
  outsider *o = p;
  while (!atomic_load(o->go)) sched_yield();
  for (unsigned r = 0; r < o->rounds; r++) {
    atomic_long calls = 0;
    int n = 10 + (int)(rng_next(&o->seed) % 8);
    CHECK_EQ(outside_fib(o->pool, n, &calls), fib_seq(n));
    CHECK_EQ(atomic_load(&calls), fib_calls(n));

    atomic_store(&calls, 0);
    jfib_arg j = {o->pool, n, -1, &calls};
    fib_join(&j);
    CHECK_EQ(j.r, fib_seq(n));
    CHECK_EQ(atomic_load(&calls), fib_calls(n));

    enum { K = 40 };
    cfib_arg kids[K];
    atomic_long kid_calls[K];
    pool_task_t t[K];
    unsigned ord[K];
    for (unsigned i = 0; i < K; i++) {
      atomic_init(&kid_calls[i], 0);
      kids[i] = (cfib_arg){(int)(i % 13), -1, &kid_calls[i]};
      CHECK_OK(pool_spawn(o->pool, &t[i], fib_ss, &kids[i]));
      ord[i] = i;
    }
    shuffle(ord, K, &o->seed);
    for (unsigned i = 0; i < K; i++) {
      unsigned c = ord[i];
      CHECK_OK(pool_sync(&t[c]));
      CHECK_EQ(kids[c].r, fib_seq((int)(c % 13)));
      CHECK_EQ(atomic_load(&kid_calls[c]), fib_calls((int)(c % 13)));
    }
  }
  return NULL;
}

static void test_outsiders(pool_t *pool, unsigned nthreads, unsigned rounds) {
  pthread_t th[8];
  outsider o[8];
  atomic_int go = 0;
  for (unsigned k = 0; k < nthreads; k++) {
    o[k] = (outsider){pool, rounds, 0xC0FFEEull * (k + 1), &go};
    CHECK_OK(pthread_create(&th[k], NULL, outsider_main, &o[k]));
  }
  atomic_store(&go, 1);
  for (unsigned k = 0; k < nthreads; k++) CHECK_OK(pthread_join(th[k], NULL));
}

/* ---- pool_join inside tasks --------------------------------------------- */

typedef struct mixed {
  int n;
  long r;
  atomic_long *calls;
  atomic_uint *marks;
  unsigned nmarks;
} mixed;

static void mark(void *p) { atomic_fetch_add((atomic_uint *)p, 1); }

static void half_spawn(void *p) {
  mixed *m = p;
  cfib_arg f = {m->n, -1, m->calls};
  fib_ss(&f);
  m->r = f.r;
}

static void half_group(void *p) {
  mixed *m = p;
  pool_group_t g;
  CHECK_OK(pool_group_init(&g, NULL));
  for (unsigned i = 0; i < m->nmarks; i++) CHECK_OK(pool_group_spawn(&g, mark, &m->marks[i]));
  CHECK_OK(pool_group_wait(&g));
  for (unsigned i = 0; i < m->nmarks; i++) CHECK_EQ(atomic_load(&m->marks[i]), 1);
  m->r = 1;
}

typedef struct inside_arg {
  pool_t *other; /* another pool for cross-pool calls, or NULL */
  int ok;
} inside_arg;

static void inside_joins(void *p) {
  inside_arg *ia = p;
  atomic_long calls = 0;
  for (int n = 0; n <= 18; n++) {
    atomic_store(&calls, 0);
    jfib_arg j = {NULL, n, -1, &calls};
    fib_join(&j);
    CHECK_EQ(j.r, fib_seq(n));
    CHECK_EQ(atomic_load(&calls), fib_calls(n));
  }
  enum { M = 2000 };
  atomic_uint *marks = calloc(M, sizeof(atomic_uint));
  CHECK(marks);
  atomic_store(&calls, 0);
  mixed a = {17, -1, &calls, NULL, 0}, b = {0, -1, NULL, marks, M};
  CHECK_OK(pool_join(NULL, half_spawn, &a, half_group, &b));
  CHECK_EQ(a.r, fib_seq(17));
  CHECK_EQ(atomic_load(&calls), fib_calls(17));
  CHECK_EQ(b.r, 1);
  free((void *)marks);

  if (ia->other) {
    /* From this worker into another pool. */
    pool_t *self = pool_current();
    CHECK(self != NULL && self != ia->other);
    atomic_store(&calls, 0);
    cfib_arg f = {15, -1, &calls};
    pool_task_t t;
    CHECK_OK(pool_spawn(ia->other, &t, fib_ss, &f));
    CHECK_OK(pool_sync(&t));
    CHECK_EQ(f.r, fib_seq(15));
    CHECK_EQ(atomic_load(&calls), fib_calls(15));

    atomic_store(&calls, 0);
    jfib_arg x = {NULL, 14, -1, &calls};
    cfib_arg y = {13, -1, &calls};
    CHECK_OK(pool_join(ia->other, fib_join, &x, fib_ss, &y));
    CHECK_EQ(x.r, fib_seq(14));
    CHECK_EQ(y.r, fib_seq(13));
    CHECK_EQ(atomic_load(&calls), fib_calls(14) + fib_calls(13));
    CHECK(pool_current() == self);
  }
  ia->ok = 1;
}

/* ---- the NULL pool from outside = the default pool ----------------------- */

static void on_default(void *p) { *(int *)p = pool_current() == pool_default() ? 1 : 2; }

static void case_default_pool(void) {
  int where = 0;
  pool_task_t t;
  CHECK_OK(pool_spawn(NULL, &t, on_default, &where));
  CHECK_OK(pool_sync(&t));
  CHECK_EQ(where, 1);
  int w1 = 0, w2 = 0;
  CHECK_OK(pool_join(NULL, on_default, &w1, on_default, &w2));
  /* From outside, both halves run on the (default) pool's workers. */
  CHECK_EQ(w1, 1);
  CHECK_EQ(w2, 1);
}

static const unsigned pool_sizes[] = {1, 2, 4};

static void case_outsiders(void) {
  for (unsigned si = 0; si < 3; si++) {
    pool_t *pool = make_pool(pool_sizes[si]);
    test_outsiders(pool, 4, (unsigned)check_iters(6));
    CHECK_OK(pool_destroy(pool));
  }
}

/* Joins inside; on 2 workers also into another pool. */
static void case_inside_joins(void) {
  pool_t *other = make_pool(2);
  for (unsigned si = 0; si < 3; si++) {
    pool_t *pool = make_pool(pool_sizes[si]);
    inside_arg ia = {si == 1 ? other : NULL, 0};
    CHECK_OK(pool_submit(pool, inside_joins, &ia));
    CHECK_OK(pool_wait_idle(pool));
    CHECK_EQ(ia.ok, 1);
    CHECK_OK(pool_destroy(pool));
  }
  CHECK_OK(pool_destroy(other));
}

/* Outside threads and inside joins at the same time. */
static void case_mixed(void) {
  pool_t *other = make_pool(2);
  for (unsigned si = 0; si < 3; si++) {
    pool_t *pool = make_pool(pool_sizes[si]);
    inside_arg ib = {other, 0};
    CHECK_OK(pool_submit(pool, inside_joins, &ib));
    test_outsiders(pool, 3, 2);
    CHECK_OK(pool_wait_idle(pool));
    CHECK_EQ(ib.ok, 1);
    CHECK_OK(pool_destroy(pool));
  }
  CHECK_OK(pool_destroy(other));
}

TEST_MAIN(240, TEST_CASE(outsiders), TEST_CASE(inside_joins), TEST_CASE(mixed),
          TEST_CASE(default_pool))
