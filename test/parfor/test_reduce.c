/* SPDX-License-Identifier: MIT */
/* pool_parallel_reduce: exact sums, a non-commutative combine, bit-exact
 * floating point in deterministic mode across worker counts, errors.
 * Cases: sums, noncommutative, float_bits, errors, each on pools of 1, 2,
 * 3 and 8 workers; refused (ENOMEM, ESHUTDOWN, EOWNERDEAD leave the result
 * as it was; empty loops are refused too); skipped (a failed reduce over
 * [0, SIZE_MAX): what ran and what was skipped add up to every item). */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <wspool.h>

#include "cancel/cancel_util.h"
#include "check.h"
#include "testutil.h"

/* 2x2 matrices mod 2^64: associative, not commutative. The product over
 * i of M(i) in index order has a closed form only by brute force, so the
 * test compares against a sequential fold. */
typedef struct mat {
  uint64_t a, b, c, d;
} mat;
static mat mat_of(size_t i) { return (mat){1, i % 7 + 1, i % 5, 1 + (i % 3)}; }
static void mat_mul(mat *x, const mat *y) {
  mat r = {x->a * y->a + x->b * y->c, x->a * y->b + x->b * y->d, x->c * y->a + x->d * y->c,
           x->c * y->b + x->d * y->d};
  *x = r;
}
static void mat_body(size_t b, size_t e, void *acc, void *ctx) {
  (void)ctx;
  for (size_t i = b; i < e; i++) {
    mat m = mat_of(i);
    mat_mul(acc, &m);
  }
}
static void mat_combine(void *into, const void *from, void *ctx) {
  (void)ctx;
  mat_mul(into, from);
}

static void fsum_body(size_t b, size_t e, void *acc, void *ctx) {
  (void)ctx;
  double *s = acc;
  for (size_t i = b; i < e; i++) *s += 1.0 / (double)(i + 1);
}
static void fsum_combine(void *into, const void *from, void *ctx) {
  (void)ctx;
  *(double *)into += *(const double *)from;
}

static const uint64_t zero = 0;

/* The sum of the indices of 5..5+n for several n and grains. */
static void sums(pool_t *p) {
  pool_reducer_t r = {sizeof(uint64_t), &zero, sum_body, sum_combine, NULL, 0};
  static const size_t ns[] = {0, 1, 2, 10, 999, 100000, 3000000};
  for (size_t i = 0; i < sizeof ns / sizeof *ns; i++) {
    for (size_t grain = 0; grain < 3; grain++) {
      uint64_t got = 12345;
      r.deterministic = (int)(grain & 1);
      CHECK_OK(pool_parallel_reduce(p, 5, 5 + ns[i], grain * 100, &r, &got));
      uint64_t n = ns[i], want = n * (n - 1) / 2 + 5 * n; /* sum of 5..5+n-1 */
      if (n == 0) want = 0;
      CHECK_EQ(got, want);
    }
  }
}

static void noncommutative(pool_t *p) {
  const mat ident = {1, 0, 0, 1};
  pool_reducer_t rm = {sizeof(mat), &ident, mat_body, mat_combine, NULL, 0};
  mat want = ident;
  for (size_t i = 0; i < 200000; i++) {
    mat m = mat_of(i);
    mat_mul(&want, &m);
  }
  for (int det = 0; det < 2; det++) {
    mat got;
    rm.deterministic = det;
    CHECK_OK(pool_parallel_reduce(p, 0, 200000, 0, &rm, &got));
    CHECK(memcmp(&got, &want, sizeof want) == 0);
  }
}

/* Deterministic floating point: the same bits on every worker count (the
 * first pool's result is the reference). */
static double fref;
static int have_fref;

static void float_bits(pool_t *p) {
  const double fzero = 0.0;
  pool_reducer_t rf = {sizeof(double), &fzero, fsum_body, fsum_combine, NULL, 1};
  double f;
  CHECK_OK(pool_parallel_reduce(p, 0, 1000003, 0, &rf, &f));
  if (!have_fref) {
    fref = f;
    have_fref = 1;
  }
  CHECK(memcmp(&f, &fref, sizeof f) == 0);
}

/* Errors leave nothing half-done. */
static void errors(pool_t *p) {
  pool_reducer_t r = {sizeof(uint64_t), &zero, sum_body, sum_combine, NULL, 0};
  uint64_t out;
  CHECK_EQ(pool_parallel_reduce(p, 3, 2, 0, &r, &out), EINVAL);
  CHECK_EQ(pool_parallel_reduce(p, 0, 2, 0, NULL, &out), EINVAL);
  CHECK_EQ(pool_parallel_reduce(p, 0, 2, 0, &r, NULL), EINVAL);
  pool_reducer_t bad = r;
  bad.size = 0;
  CHECK_EQ(pool_parallel_reduce(p, 0, 2, 0, &bad, &out), EINVAL);
  bad = r;
  bad.combine = NULL;
  CHECK_EQ(pool_parallel_reduce(p, 0, 2, 0, &bad, &out), EINVAL);
}

/* A call refused before it ran leaves *result as it was: too large an
 * accumulator array (ENOMEM); a destroyed pool (ESHUTDOWN), an empty range
 * too, and pool_parallel_for's empty range likewise; a pool of the parent
 * in a child of fork() (EOWNERDEAD). */
static void nop_body(size_t b, size_t e, void *ctx) {
  (void)b, (void)e, (void)ctx;
}
static int refused_calls(pool_t *p, int want) {
  pool_reducer_t r = {sizeof(uint64_t), &zero, sum_body, sum_combine, NULL, 0};
  uint64_t out = 777;
  int bad = 0;
  bad |= pool_parallel_reduce(p, 0, 1000, 0, &r, &out) != want;
  bad |= pool_parallel_reduce(p, 9, 9, 0, &r, &out) != want;
  bad |= pool_parallel_for(p, 9, 9, 0, nop_body, NULL) != want;
  bad |= pool_parallel_for(p, 0, 10, 0, nop_body, NULL) != want;
  return bad || out != 777;
}
static void case_refused(void) {
  pool_t *p = make_pool(2);
  pool_reducer_t big = {SIZE_MAX / 4, &zero, sum_body, sum_combine, NULL, 0};
  uint64_t out = 777;
  CHECK_EQ(pool_parallel_reduce(p, 0, 1000, 0, &big, &out), ENOMEM);
  CHECK_EQ(out, 777);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) _exit(refused_calls(p, EOWNERDEAD));
  child_ok(pid, "the child");
  CHECK_OK(pool_destroy(p));
  CHECK_EQ(refused_calls(p, ESHUTDOWN), 0); /* late calls: wspool.h, faults */
}

/* skipped_items counts what a failed loop skipped, the short last block
 * included, on the whole range [0, SIZE_MAX): with what ran, every item. */
static _Atomic size_t ran_items;
static void fail_first(size_t b, size_t e, void *acc, void *ctx) {
  (void)acc, (void)ctx;
  atomic_fetch_add(&ran_items, e - b);
  if (b == 0) pool_fail(EIO);
}
static void case_skipped(void) {
  for (unsigned nw = 1; nw <= 3; nw++) {
    pool_t *p = make_pool(nw);
    atomic_store(&ran_items, 0);
    uint64_t out = 777;
    pool_reducer_t r = {sizeof(uint64_t), &zero, fail_first, sum_combine, NULL, (int)(nw & 1)};
    CHECK_EQ(pool_parallel_reduce(p, 0, SIZE_MAX, 0, &r, &out), EIO);
    CHECK_EQ(out, 0); /* the identity */
    const skip_count none = {0, 0};
    skip_expect(p, none, 0, (uint64_t)(SIZE_MAX - atomic_load(&ran_items)),
                "reduce over [0, SIZE_MAX) failed by its first block");
    CHECK_OK(pool_destroy(p));
  }
}

static void case_sums(void) { ON_POOLS(sums, 1, 2, 3, 8); }
static void case_noncommutative(void) { ON_POOLS(noncommutative, 1, 2, 3, 8); }
static void case_float_bits(void) { ON_POOLS(float_bits, 1, 2, 3, 8); }
static void case_errors(void) { ON_POOLS(errors, 1, 2, 3, 8); }

TEST_MAIN(120, TEST_CASE(sums), TEST_CASE(noncommutative), TEST_CASE(float_bits),
          TEST_CASE(errors), TEST_CASE(refused), TEST_CASE(skipped))
