/* SPDX-License-Identifier: MIT */
/* Fork/join computations with exact answers, on pools of 1..8 workers
 * (8 oversubscribes a 2-core machine), started from inside a task and from
 * an outside thread:
 *
 *  - fib(n) three ways: spawn one + call one + sync; spawn both + sync both
 *    (LIFO); pool_join. Exact value for n = 0..N, and the exact number of
 *    calls (2*fib(n+1) - 1), so no call is lost or repeated;
 *  - an array sum by halves (spawn/sync, grain 1..64) over sizes 0..big,
 *    every element visited exactly once (per-element counters), exact sum;
 *  - a sum over an irregular tree (node degree 0..7 from a hash), each node
 *    using a task group for its children: exact sum and every node once.
 * Cases: fib, fib_pair (two at once through an outside pool_join), sum,
 * tree; each on a fresh pool of every size. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <wspool.h>

#include "check.h"
#include "testutil.h"

static atomic_ulong calls;

/* ---- fib ---------------------------------------------------------------- */

static void fib_spawn1(void *p) {
  fib_arg *f = p;
  atomic_fetch_add_explicit(&calls, 1, memory_order_relaxed);
  if (f->n < 2) {
    f->r = f->n;
    return;
  }
  fib_arg x = {f->n - 1, -1}, y = {f->n - 2, -1};
  pool_task_t t;
  CHECK_OK(pool_spawn(NULL, &t, fib_spawn1, &x));
  fib_spawn1(&y);
  CHECK_OK(pool_sync(&t));
  f->r = x.r + y.r;
}

static void fib_spawn2(void *p) {
  fib_arg *f = p;
  atomic_fetch_add_explicit(&calls, 1, memory_order_relaxed);
  if (f->n < 2) {
    f->r = f->n;
    return;
  }
  fib_arg x = {f->n - 1, -1}, y = {f->n - 2, -1};
  pool_task_t tx, ty;
  CHECK_OK(pool_spawn(NULL, &tx, fib_spawn2, &x));
  CHECK_OK(pool_spawn(NULL, &ty, fib_spawn2, &y));
  CHECK_OK(pool_sync(&ty));
  CHECK_OK(pool_sync(&tx));
  f->r = x.r + y.r;
}

static void fib_join(void *p) {
  fib_arg *f = p;
  atomic_fetch_add_explicit(&calls, 1, memory_order_relaxed);
  if (f->n < 2) {
    f->r = f->n;
    return;
  }
  fib_arg x = {f->n - 1, -1}, y = {f->n - 2, -1};
  CHECK_OK(pool_join(NULL, fib_join, &x, fib_join, &y));
  f->r = x.r + y.r;
}

/* ---- array sum by halves ------------------------------------------------ */

typedef struct sum_arg {
  const uint64_t *a;
  atomic_uchar *seen;
  size_t lo, hi, grain;
  uint64_t r;
} sum_arg;

static void sum_halves(void *p) {
  sum_arg *s = p;
  if (s->hi - s->lo <= s->grain) {
    uint64_t r = 0;
    for (size_t i = s->lo; i < s->hi; i++) {
      r += s->a[i];
      atomic_fetch_add_explicit(&s->seen[i], 1, memory_order_relaxed);
    }
    s->r = r;
    return;
  }
  size_t mid = s->lo + (s->hi - s->lo) / 2;
  sum_arg left = {s->a, s->seen, s->lo, mid, s->grain, 0};
  sum_arg right = {s->a, s->seen, mid, s->hi, s->grain, 0};
  pool_task_t t;
  CHECK_OK(pool_spawn(NULL, &t, sum_halves, &right));
  sum_halves(&left);
  CHECK_OK(pool_sync(&t));
  s->r = left.r + right.r;
}

/* ---- irregular tree with groups ----------------------------------------- */

static uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

/* Node v at depth d: degree from a hash (0..7), 0 beyond max depth. */
typedef struct tnode {
  uint64_t id;
  unsigned depth, max_depth;
  uint64_t r;
} tnode;

static unsigned degree(uint64_t id, unsigned depth, unsigned max_depth) {
  if (depth >= max_depth) return 0;
  return depth == 0 ? 6 : (unsigned)(mix(id) % 5);
}

static uint64_t tree_seq(uint64_t id, unsigned depth, unsigned max_depth, uint64_t *count) {
  (*count)++;
  uint64_t r = mix(id ^ 0x1234) & 0xffff;
  unsigned k = degree(id, depth, max_depth);
  for (unsigned c = 0; c < k; c++) r += tree_seq(id * 8 + c + 1, depth + 1, max_depth, count);
  return r;
}

static void tree_par(void *p) {
  tnode *n = p;
  atomic_fetch_add_explicit(&calls, 1, memory_order_relaxed);
  uint64_t r = mix(n->id ^ 0x1234) & 0xffff;
  unsigned k = degree(n->id, n->depth, n->max_depth);
  tnode kids[8];
  pool_group_t g;
  CHECK_OK(pool_group_init(&g, NULL));
  for (unsigned c = 0; c < k; c++) {
    kids[c] = (tnode){n->id * 8 + c + 1, n->depth + 1, n->max_depth, 0};
    CHECK_OK(pool_group_spawn(&g, tree_par, &kids[c]));
  }
  CHECK_OK(pool_group_wait(&g));
  for (unsigned c = 0; c < k; c++) r += kids[c].r;
  n->r = r;
}

/* ---- drivers ------------------------------------------------------------ */

typedef struct job {
  int kind; /* 0..2 fib variants, 3 array sum, 4 tree */
  fib_arg f;
  sum_arg s;
  tnode t;
} job;

static void run_job(void *p) {
  job *j = p;
  switch (j->kind) {
  case 0: fib_spawn1(&j->f); break;
  case 1: fib_spawn2(&j->f); break;
  case 2: fib_join(&j->f); break;
  case 3: sum_halves(&j->s); break;
  default: tree_par(&j->t); break;
  }
}

/* mode 0: submit the root and wait; 1: spawn it from outside and sync;
 * 2: two roots at once through an outside pool_join (j[0] and j[1]). */
static void run(pool_t *pool, job *j, int mode) {
  atomic_store(&calls, 0);
  if (mode == 0) {
    CHECK_OK(pool_submit(pool, run_job, j));
    CHECK_OK(pool_wait_idle(pool));
  } else if (mode == 1) {
    pool_task_t t;
    CHECK_OK(pool_spawn(pool, &t, run_job, j));
    CHECK_OK(pool_sync(&t));
  } else {
    CHECK_OK(pool_join(pool, run_job, j, run_job, j + 1));
  }
}

enum { NFIB = 20, TREE_DEPTH = 9 };

static void fib_kinds(pool_t *pool) {
  job j[2];
  for (int kind = 0; kind < 3; kind++)
    for (int n = 0; n <= NFIB; n++) {
      int mode = (n + kind) % 2;
      j[0] = (job){.kind = kind, .f = {n, -1}};
      run(pool, j, mode);
      CHECK_EQ(j[0].f.r, fib_seq(n));
      CHECK_EQ(atomic_load(&calls), 2 * fib_seq(n + 1) - 1);
    }
}

/* Two computations at once through an outside pool_join. */
static void fib_pair(pool_t *pool) {
  job j[2];
  j[0] = (job){.kind = 0, .f = {NFIB, -1}};
  j[1] = (job){.kind = 2, .f = {NFIB - 1, -1}};
  run(pool, j, 2);
  CHECK_EQ(j[0].f.r, fib_seq(NFIB));
  CHECK_EQ(j[1].f.r, fib_seq(NFIB - 1));
  CHECK_EQ(atomic_load(&calls), 2 * fib_seq(NFIB + 1) - 1 + 2 * fib_seq(NFIB) - 1);
}

static uint64_t *arr;
static atomic_uchar *seen;
static size_t nsum;

static void sums(pool_t *pool) {
  job j[2];
  const size_t sizes[] = {0, 1, 2, 3, 7, 64, 1000, 4097, nsum};
  const size_t grains[] = {1, 3, 64};
  for (unsigned si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
    for (unsigned gi = 0; gi < 3; gi++) {
      size_t n = sizes[si];
      uint64_t expect = 0;
      for (size_t i = 0; i < n; i++) expect += arr[i];
      for (size_t i = 0; i < n; i++) atomic_store_explicit(&seen[i], 0, memory_order_relaxed);
      j[0] = (job){.kind = 3, .s = {arr, seen, 0, n, grains[gi], 0}};
      run(pool, j, (int)((si + gi) % 2));
      CHECK_EQ(j[0].s.r, expect);
      for (size_t i = 0; i < n; i++) CHECK_EQ(atomic_load(&seen[i]), 1);
    }
}

static void trees(pool_t *pool) {
  job j[2];
  for (unsigned d = 0; d <= TREE_DEPTH; d++) {
    uint64_t count = 0;
    uint64_t expect = tree_seq(0, 0, d, &count);
    j[0] = (job){.kind = 4, .t = {0, 0, d, 0}};
    run(pool, j, (int)(d % 2));
    CHECK_EQ(j[0].t.r, expect);
    CHECK_EQ(atomic_load(&calls), count);
  }
}

/* fn on a fresh pool of each size from 1 to 8 workers (8 oversubscribes). */
#define ON_EVERY_SIZE(fn) ON_POOLS(fn, 1, 2, 3, 4, 5, 6, 7, 8)

static void case_fib(void) { ON_EVERY_SIZE(fib_kinds); }
static void case_fib_pair(void) { ON_EVERY_SIZE(fib_pair); }
static void case_tree(void) { ON_EVERY_SIZE(trees); }

static void case_sum(void) {
  nsum = check_iters(200000);
  arr = malloc(nsum * sizeof(uint64_t));
  seen = malloc(nsum);
  CHECK(arr && seen);
  for (size_t i = 0; i < nsum; i++) arr[i] = mix(i) >> 20;
  ON_EVERY_SIZE(sums);
  free(arr);
  free((void *)seen);
}

TEST_MAIN(240, TEST_CASE(fib), TEST_CASE(fib_pair), TEST_CASE(sum), TEST_CASE(tree))
