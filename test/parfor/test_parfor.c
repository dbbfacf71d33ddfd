/* SPDX-License-Identifier: MIT */
/* pool_parallel_for: exact coverage (every index exactly once), grain
 * respected, nesting across mechanisms and pools, huge ranges, errors.
 * Cases: errors, sweep, large, nested, mixed, huge (all but errors on
 * pools of 1, 2, 3 and 8 workers). */
#include <stdatomic.h>
#include <stdint.h>
#include <wspool.h>

#include "check.h"
#include "testutil.h"

typedef struct cover {
  size_t begin, end, grain;
  atomic_uchar *seen; /* one per index, offset by begin */
  atomic_size_t calls, short_calls;
} cover;

static void cover_body(size_t b, size_t e, void *ctx) {
  cover *c = ctx;
  CHECK(c->begin <= b && b < e && e <= c->end);
  if (e - b < c->grain) {
    /* Only the chunk that ends the whole range may be shorter than grain. */
    CHECK(e == c->end);
    atomic_fetch_add(&c->short_calls, 1);
  }
  for (size_t i = b; i < e; i++) atomic_fetch_add_explicit(&c->seen[i - c->begin], 1, memory_order_relaxed);
  atomic_fetch_add(&c->calls, 1);
}

static void check_cover(pool_t *p, size_t begin, size_t n, size_t grain) {
  cover c = {begin, begin + n, grain, NULL, 0, 0};
  c.seen = calloc(n ? n : 1, 1);
  CHECK(c.seen);
  CHECK_OK(pool_parallel_for(p, begin, begin + n, grain, cover_body, &c));
  for (size_t i = 0; i < n; i++)
    if (c.seen[i] != 1) FAIL("n=%zu grain=%zu: index %zu seen %d times\n", n, grain, begin + i, c.seen[i]);
  CHECK(atomic_load(&c.short_calls) <= 1);
  if (n == 0) CHECK_EQ(atomic_load(&c.calls), 0);
  free(c.seen);
}

static void sweep(pool_t *p) {
  static const size_t sizes[] = {0, 1, 2, 3, 5, 17, 100, 1000, 4097, 12345, 100000, 1000000};
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
    size_t n = sizes[s];
    size_t grains[] = {0, 1, 2, 7, n / 3 + 1, n ? n : 1, n + 5};
    for (size_t g = 0; g < sizeof grains / sizeof *grains; g++) {
      if (n >= 1000000 && grains[g] < 7 && grains[g] != 0) continue; /* keep it quick */
      check_cover(p, 1000, n, grains[g]);
    }
  }
}

/* Nesting: a parallel_for whose body runs parallel_for, spawn/sync and a
 * parallel_for on another pool. */
typedef struct nest {
  pool_t *other;
  atomic_long *cells; /* rows x cols, each must end at exactly 1 */
  size_t cols;
} nest;

typedef struct row_ctx {
  nest *ns;
  size_t row;
} row_ctx;

static void inner_body(size_t b, size_t e, void *ctx) {
  row_ctx *rc = ctx;
  for (size_t j = b; j < e; j++) atomic_fetch_add(&rc->ns->cells[rc->row * rc->ns->cols + j], 1);
}

static void outer_body(size_t b, size_t e, void *ctx) {
  nest *ns = ctx;
  for (size_t i = b; i < e; i++) {
    row_ctx rc = {ns, i};
    pool_t *target = (i % 3 == 2 && ns->other) ? ns->other : NULL;
    CHECK_OK(pool_parallel_for(target, 0, ns->cols, 1 + i % 4, inner_body, &rc));
  }
}

static void check_nested(pool_t *p, pool_t *other) {
  size_t rows = 64, cols = 300;
  nest ns = {other, calloc(rows * cols, sizeof(atomic_long)), cols};
  CHECK(ns.cells);
  CHECK_OK(pool_parallel_for(p, 0, rows, 1, outer_body, &ns));
  for (size_t k = 0; k < rows * cols; k++) CHECK_EQ(ns.cells[k], 1);
  free(ns.cells);
}

/* Fork/join inside parallel_for (fib_task), and parallel_for inside
 * fork/join. */

static const long fibs[] = {0, 1, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233, 377, 610, 987, 1597};

static void fib_body(size_t b, size_t e, void *ctx) {
  atomic_long *ok = ctx;
  for (size_t i = b; i < e; i++) {
    fib_arg a = {(int)(i % 18), 0};
    fib_task(&a);
    if (a.r == fibs[i % 18]) atomic_fetch_add(ok, 1);
  }
}

typedef struct pf_in_task {
  size_t n;
  atomic_long ok;
} pf_in_task;

static void pf_task(void *v) {
  pf_in_task *t = v;
  CHECK_OK(pool_parallel_for(NULL, 0, t->n, 3, fib_body, &t->ok));
}

static void check_mixed(pool_t *p) {
  atomic_long ok = 0;
  CHECK_OK(pool_parallel_for(p, 0, 500, 1, fib_body, &ok));
  CHECK_EQ(atomic_load(&ok), 500);
  pf_in_task a = {300, 0}, b = {301, 0};
  CHECK_OK(pool_join(p, pf_task, &a, pf_task, &b));
  CHECK_EQ(atomic_load(&a.ok), 300);
  CHECK_EQ(atomic_load(&b.ok), 301);
}

/* Huge ranges: no overflow near SIZE_MAX, lengths add up exactly. */
typedef struct span {
  size_t b, e;
} span;
typedef struct huge {
  size_t begin, end;
  atomic_size_t nspans;
  span spans[1 << 16];
} huge;

static void huge_body(size_t b, size_t e, void *ctx) {
  huge *h = ctx;
  CHECK(h->begin <= b && b < e && e <= h->end);
  size_t k = atomic_fetch_add(&h->nspans, 1);
  CHECK(k < (1u << 16));
  h->spans[k].b = b;
  h->spans[k].e = e;
}

static int span_cmp(const void *a, const void *b) {
  const span *x = a, *y = b;
  return x->b < y->b ? -1 : x->b > y->b;
}

static void check_huge(pool_t *p, size_t begin, size_t end, size_t grain) {
  static huge h;
  h.begin = begin;
  h.end = end;
  atomic_store(&h.nspans, 0);
  CHECK_OK(pool_parallel_for(p, begin, end, grain, huge_body, &h));
  size_t k = atomic_load(&h.nspans);
  CHECK(k > 0);
  qsort(h.spans, k, sizeof(span), span_cmp);
  CHECK(h.spans[0].b == begin);
  for (size_t i = 1; i < k; i++) CHECK(h.spans[i].b == h.spans[i - 1].e); /* disjoint, no gap */
  CHECK(h.spans[k - 1].e == end);
}

static void noop_body(size_t b, size_t e, void *ctx) {
  (void)b;
  (void)e;
  (void)ctx;
  CHECK(0);
}

static void case_errors(void) {
  pool_t *p = make_pool(2);
  CHECK_EQ(pool_parallel_for(p, 5, 4, 1, noop_body, NULL), EINVAL);
  CHECK_EQ(pool_parallel_for(p, 0, 4, 1, NULL, NULL), EINVAL);
  CHECK_OK(pool_parallel_for(p, 7, 7, 1, noop_body, NULL));
  CHECK_OK(pool_destroy(p));
}

static void large(pool_t *p) { check_cover(p, 0, 10000000, 0); }

/* With a parallel_for on another pool (of 2 workers) in some rows. */
static void nested(pool_t *p) {
  pool_t *other = make_pool(2);
  check_nested(p, other);
  CHECK_OK(pool_destroy(other));
}

static void huge_ranges(pool_t *p) {
  check_huge(p, 0, SIZE_MAX - 1, SIZE_MAX / 1000);
  check_huge(p, SIZE_MAX - 100000, SIZE_MAX - 1, 2);
  check_huge(p, 0, SIZE_MAX - 1, 0);
}

static void case_sweep(void) { ON_POOLS(sweep, 1, 2, 3, 8); }
static void case_large(void) { ON_POOLS(large, 1, 2, 3, 8); }
static void case_nested(void) { ON_POOLS(nested, 1, 2, 3, 8); }
static void case_mixed(void) { ON_POOLS(check_mixed, 1, 2, 3, 8); }
static void case_huge(void) { ON_POOLS(huge_ranges, 1, 2, 3, 8); }

TEST_MAIN(240, TEST_CASE(errors), TEST_CASE(sweep), TEST_CASE(large), TEST_CASE(nested),
          TEST_CASE(mixed), TEST_CASE(huge))
