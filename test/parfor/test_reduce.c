/* SPDX-License-Identifier: MIT */
/* pool_parallel_reduce: exact sums, a non-commutative combine, bit-exact
 * floating point in deterministic mode across worker counts, errors. */
#include <stdint.h>
#include <string.h>
#include <wspool.h>

#include "check.h"

static void sum_body(size_t b, size_t e, void *acc, void *ctx) {
  (void)ctx;
  uint64_t *s = acc;
  for (size_t i = b; i < e; i++) *s += i;
}
static void sum_combine(void *into, const void *from, void *ctx) {
  (void)ctx;
  *(uint64_t *)into += *(const uint64_t *)from;
}

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

int main(void) {
  check_watchdog(120);
  static const unsigned workers[] = {1, 2, 3, 8};
  const uint64_t zero = 0;
  const mat ident = {1, 0, 0, 1};
  const double fzero = 0.0;
  double fref = 0;
  int have_fref = 0;
  for (size_t k = 0; k < sizeof workers / sizeof *workers; k++) {
    pool_t *p;
    pool_config_t cfg;
    pool_config_default(&cfg);
    cfg.threads = workers[k];
    CHECK_OK(pool_create(&p, &cfg));

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

    /* Deterministic floating point: the same bits on every worker count. */
    pool_reducer_t rf = {sizeof(double), &fzero, fsum_body, fsum_combine, NULL, 1};
    double f;
    CHECK_OK(pool_parallel_reduce(p, 0, 1000003, 0, &rf, &f));
    if (!have_fref) {
      fref = f;
      have_fref = 1;
    }
    CHECK(memcmp(&f, &fref, sizeof f) == 0);

    /* Errors leave nothing half-done. */
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
    CHECK_OK(pool_destroy(p));
  }
  return 0;
}
