/* SPDX-License-Identifier: MIT */
/* matmul: divide-and-conquer matrix multiply, C += A * B, with task groups.
 *
 * Split every matrix in quadrants; then
 *
 *   C11 += A11 B11 + A12 B21      C12 += A11 B12 + A12 B22
 *   C21 += A21 B11 + A22 B21      C22 += A21 B12 + A22 B22
 *
 * is 8 products, in 2 phases of 4: the 4 products of a phase write 4
 * different quadrants of C, so they run at once; the second phase adds into
 * the same quadrants, so it waits for the first (no locks, no temporaries).
 * A pool_group_t runs each phase, and is reused for the second.
 * Below a cutoff a block is multiplied by the plain loops.
 *
 * The matrices are doubles holding small integers, so every sum is exact and
 * the results can be compared with ==.
 *
 *   usage: matmul [n [workers]]
 *     n        matrix order, 1..32768 (default 1000)
 *     workers  0 = the default pool, one worker per CPU (default)
 *
 * Exits 0 only if both the parallel and the sequential divide-and-conquer
 * product equal the naive triple-loop product exactly.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <wspool.h>

enum { CUTOFF = 64 }; /* blocks with every side <= CUTOFF use the loops */

/* A block of a row-major matrix: rows x cols elements, `ld` apart per row. */
typedef struct {
  double *p;
  size_t rows, cols, ld;
} block;

/* The quadrants of a block; odd sides split as n/2 and n - n/2. */
static block quadrant(block m, int i, int j) {
  size_t r = m.rows / 2, c = m.cols / 2;
  block q = {m.p + (i ? r * m.ld : 0) + (j ? c : 0), i ? m.rows - r : r, j ? m.cols - c : c, m.ld};
  return q;
}

/* The leaf kernel, C += A * B with the i-k-j loop order (the inner loop walks
 * rows of B and C contiguously, which the compiler vectorises; `restrict`:
 * C never overlaps A or B). */
static void mul_loops(block c, block a, block b) {
  for (size_t i = 0; i < a.rows; i++) {
    double *restrict ci = c.p + i * c.ld;
    for (size_t k = 0; k < a.cols; k++) {
      double aik = a.p[i * a.ld + k];
      const double *restrict bk = b.p + k * b.ld;
      for (size_t j = 0; j < b.cols; j++) ci[j] += aik * bk[j];
    }
  }
}

static int is_leaf(block c, block a) {
  return (c.rows <= CUTOFF && c.cols <= CUTOFF && a.cols <= CUTOFF) || c.rows < 2 ||
         c.cols < 2 || a.cols < 2;
}

/* The sequential baseline: the same recursion, one product after another. */
static void mul_seq(block c, block a, block b) {
  if (is_leaf(c, a)) {
    mul_loops(c, a, b);
    return;
  }
  for (int k = 0; k < 2; k++)   /* the two phases */
    for (int i = 0; i < 2; i++) /* the four quadrants of C */
      for (int j = 0; j < 2; j++)
        mul_seq(quadrant(c, i, j), quadrant(a, i, k), quadrant(b, k, j));
}

/* Inside a task, group calls fail only on misuse (EINVAL) or when out of
 * memory (ENOMEM, pool_group_spawn): stop loudly. */
#define CHECK(call) check((call), #call)
static void check(int rc, const char *what) {
  if (rc) {
    fprintf(stderr, "matmul: %s: %s\n", what, pool_strerror(rc));
    exit(1);
  }
}

/* A task takes one void *: a product to add into its block of C. */
typedef struct {
  block c, a, b;
} product;

static void mul_task(void *p) {
  product *m = p;
  if (is_leaf(m->c, m->a)) {
    mul_loops(m->c, m->a, m->b);
    return;
  }
  product sub[2][4]; /* [phase][quadrant of C]; alive until the group waits */
  pool_group_t g;
  CHECK(pool_group_init(&g, NULL)); /* NULL: this worker's pool */
  for (int k = 0; k < 2; k++) {
    for (int q = 0; q < 4; q++) {
      int i = q / 2, j = q % 2;
      sub[k][q] = (product){quadrant(m->c, i, j), quadrant(m->a, i, k), quadrant(m->b, k, j)};
      CHECK(pool_group_spawn(&g, mul_task, &sub[k][q]));
    }
    CHECK(pool_group_wait(&g)); /* phase k done; the group is reusable */
  }
}

/* ---- The driver. */

static int equal(const double *x, const double *y, size_t len) {
  for (size_t i = 0; i < len; i++)
    if (x[i] != y[i]) return 0;
  return 1;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int parse(const char *s, long lo, long hi, long *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi) return EINVAL;
  *out = v;
  return 0;
}

int main(int argc, char **argv) {
  long n = 1000, workers = 0;
  if (argc > 3 || (argc > 1 && parse(argv[1], 1, 1L << 15, &n)) ||
      (argc > 2 && parse(argv[2], 0, POOL_MAX_THREADS, &workers))) {
    fprintf(stderr, "usage: %s [n (1..32768) [workers (0..%u, 0 = all CPUs)]]\n", argv[0],
            POOL_MAX_THREADS);
    return 1;
  }
  size_t len = (size_t)n * (size_t)n;
  double *A = malloc(len * sizeof(double)), *B = malloc(len * sizeof(double));
  double *ref = calloc(len, sizeof(double)), *C = calloc(len, sizeof(double));
  if (!A || !B || !ref || !C) {
    fprintf(stderr, "matmul: out of memory for %ld x %ld matrices\n", n, n);
    return 1;
  }
  /* Small integers (-8..8): every product and sum is an exact double. */
  unsigned seed = 12345;
  for (size_t i = 0; i < len; i++) {
    seed = seed * 1103515245u + 12345u;
    A[i] = (double)((int)(seed >> 16) % 17 - 8);
    seed = seed * 1103515245u + 12345u;
    B[i] = (double)((int)(seed >> 16) % 17 - 8);
  }

  /* The process-wide default pool (one worker per CPU), or a pool of our own. */
  pool_t *pool = NULL;
  if (workers == 0) {
    pool = pool_default();
    if (!pool) {
      fprintf(stderr, "matmul: cannot create the default pool\n");
      return 1;
    }
  } else {
    pool_config_t cfg;
    pool_config_default(&cfg);
    cfg.threads = (unsigned)workers;
    int rc = pool_create(&pool, &cfg);
    if (rc) {
      fprintf(stderr, "matmul: pool_create: %s\n", pool_strerror(rc));
      return 1;
    }
  }

  /* The reference: the naive triple loop, one dot product per element. */
  size_t N = (size_t)n;
  double t0 = now();
  for (size_t i = 0; i < N; i++)
    for (size_t j = 0; j < N; j++) {
      double s = 0;
      for (size_t k = 0; k < N; k++) s += A[i * N + k] * B[k * N + j];
      ref[i * N + j] = s;
    }
  double t_naive = now() - t0;

  block a = {A, N, N, N}, b = {B, N, N, N}, c = {C, N, N, N};

  /* The sequential baseline. */
  t0 = now();
  mul_seq(c, a, b);
  double t_seq = now() - t0;
  int seq_ok = equal(C, ref, len);

  /* The parallel product. pool_submit() from outside the pool hands the root
   * to a worker; pool_wait_idle() returns once the whole tree has finished. */
  memset(C, 0, len * sizeof(double));
  product root = {c, a, b};
  t0 = now();
  int rc = pool_submit(pool, mul_task, &root);
  if (rc == 0) rc = pool_wait_idle(pool);
  double t_par = now() - t0;
  if (rc) fprintf(stderr, "matmul: %s\n", pool_strerror(rc));
  int par_ok = rc == 0 && equal(C, ref, len);

  printf("%ld x %ld: parallel %s, sequential %s (checked against the triple loop)\n", n, n,
         par_ok ? "ok" : "WRONG", seq_ok ? "ok" : "WRONG");
  printf("naive %.3f s, sequential d&c %.3f s, parallel %.3f s on %u workers, speedup %.2fx\n",
         t_naive, t_seq, t_par, pool_threads(pool), t_seq / t_par);

  int ok = par_ok && seq_ok;
  if (workers != 0 && (rc = pool_destroy(pool)) != 0) {
    fprintf(stderr, "matmul: pool_destroy: %s\n", pool_strerror(rc));
    ok = 0;
  }
  free(A);
  free(B);
  free(ref);
  free(C);
  return ok ? 0 : 1;
}
