/* SPDX-License-Identifier: MIT */
/* sort: parallel mergesort with a parallel merge (cilksort-style).
 *
 * Sorting splits the array in halves, sorts both at once (pool_join), then
 * merges them; the merge itself is split too: take the middle element of the
 * longer run, binary-search its place in the shorter one, and merge the two
 * lower parts and the two upper parts at once. With a parallel merge no step
 * is sequential over the whole array, so the work O(n log n) has a span of
 * O(log^3 n). Below a cutoff both fall back to the sequential code, which is
 * also the baseline: the same algorithm with the pool_join()s taken out.
 *
 * The parallel sort is written twice: with pool_join() and an argument
 * struct per call, and with typed tasks (POOL_VOID_TASK), which take the
 * arguments as they are.
 *
 * The two buffers ping-pong: a sort of a[] that must end up in b[] sorts its
 * halves into a[] and merges them into b[], and the other way round, so no
 * step copies a whole array back.
 *
 *   usage: sort [n [workers]]
 *     n        number of random ints (default 4000000)
 *     workers  0 = the default pool, one worker per CPU (default)
 *
 * Exits 0 only if both the parallel and the sequential output equal qsort()'s
 * output for the same input: sorted and a permutation of the input.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <wspool.h>

enum {
  INSERTION_CUTOFF = 32,  /* insertion sort below this many elements */
  SORT_CUTOFF = 4096,     /* a parallel sort of fewer elements runs sequentially */
  MERGE_CUTOFF = 8192     /* likewise for a merge of this many elements in all */
};

/* ---- The sequential code: the baseline, and the leaves of the parallel one. */

static void insertion_sort(int *a, size_t n) {
  for (size_t i = 1; i < n; i++) {
    int v = a[i];
    size_t j = i;
    for (; j > 0 && a[j - 1] > v; j--) a[j] = a[j - 1];
    a[j] = v;
  }
}

/* Merge the sorted runs x[0..nx) and y[0..ny) into out. */
static void merge_seq(const int *x, size_t nx, const int *y, size_t ny, int *out) {
  size_t i = 0, j = 0, k = 0;
  while (i < nx && j < ny) out[k++] = y[j] < x[i] ? y[j++] : x[i++];
  memcpy(out + k, x + i, (nx - i) * sizeof(int));
  memcpy(out + k + (nx - i), y + j, (ny - j) * sizeof(int));
}

/* Sort a[0..n), using b[0..n) as scratch; the result ends up in b when
 * `into_b`, else in a. */
static void sort_seq(int *a, int *b, size_t n, bool into_b) {
  if (n <= INSERTION_CUTOFF) {
    if (into_b) memcpy(b, a, n * sizeof(int));
    insertion_sort(into_b ? b : a, n);
    return;
  }
  size_t h = n / 2;
  /* The halves go to the other buffer, and merge from there into ours. */
  sort_seq(a, b, h, !into_b);
  sort_seq(a + h, b + h, n - h, !into_b);
  if (into_b)
    merge_seq(a, h, a + h, n - h, b);
  else
    merge_seq(b, h, b + h, n - h, a);
}

/* ---- The parallel code. A task takes one void *, so each recursive call
 * packs its arguments in a struct. */

/* Inside a task, pool_join() only fails on misuse (EINVAL): stop loudly. */
#define CHECK(call) check((call), #call)
static void check(int rc, const char *what) {
  if (rc) {
    fprintf(stderr, "sort: %s: %s\n", what, pool_strerror(rc));
    exit(1);
  }
}

typedef struct {
  const int *x, *y;
  size_t nx, ny;
  int *out;
} merge_args;

/* The first index in y[0..n) whose element is >= v. */
static size_t lower_bound(const int *y, size_t n, int v) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (y[mid] < v)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static void merge_task(void *p) {
  merge_args *m = p;
  const int *x = m->x, *y = m->y;
  size_t nx = m->nx, ny = m->ny;
  if (nx < ny) { /* let x be the longer run (the merge is then not stable: fine for ints) */
    const int *t = x;
    x = y;
    y = t;
    nx = m->ny;
    ny = m->nx;
  }
  if (nx + ny <= MERGE_CUTOFF) {
    merge_seq(x, nx, y, ny, m->out);
    return;
  }
  /* x's middle element goes to its final place; what is below it in x and y
   * merges to its left, what is above to its right. */
  size_t mx = nx / 2, my = lower_bound(y, ny, x[mx]);
  m->out[mx + my] = x[mx];
  merge_args lo = {x, y, mx, my, m->out};
  merge_args hi = {x + mx + 1, y + my, nx - mx - 1, ny - my, m->out + mx + my + 1};
  CHECK(pool_join(NULL, merge_task, &lo, merge_task, &hi)); /* NULL: this worker's pool */
}

typedef struct {
  int *a, *b;
  size_t n;
  bool into_b;
} sort_args;

static void sort_task(void *p) {
  sort_args *s = p;
  if (s->n <= SORT_CUTOFF) {
    sort_seq(s->a, s->b, s->n, s->into_b);
    return;
  }
  size_t h = s->n / 2;
  sort_args lo = {s->a, s->b, h, !s->into_b};
  sort_args hi = {s->a + h, s->b + h, s->n - h, !s->into_b};
  CHECK(pool_join(NULL, sort_task, &lo, sort_task, &hi)); /* both halves at once */
  /* The sorted halves are in the other buffer; merge them into ours. */
  int *from = s->into_b ? s->a : s->b, *to = s->into_b ? s->b : s->a;
  merge_args m = {from, from + h, h, s->n - h, to};
  merge_task(&m);
}

/* ---- The same with typed tasks: each spawns one half and does the other
 * itself, with no argument structs. */

static void tmerge(const int *x, size_t nx, const int *y, size_t ny, int *out);
POOL_VOID_TASK(tmerge, const int *, size_t, const int *, size_t, int *);

static void tmerge(const int *x, size_t nx, const int *y, size_t ny, int *out) {
  if (nx < ny) {
    const int *t = x;
    size_t tn = nx;
    x = y;
    y = t;
    nx = ny;
    ny = tn;
  }
  if (nx + ny <= MERGE_CUTOFF) {
    merge_seq(x, nx, y, ny, out);
    return;
  }
  size_t mx = nx / 2, my = lower_bound(y, ny, x[mx]);
  out[mx + my] = x[mx];
  tmerge_frame hi;
  CHECK(tmerge_spawn(&hi, x + mx + 1, nx - mx - 1, y + my, ny - my, out + mx + my + 1));
  tmerge(x, mx, y, my, out);
  tmerge_sync(&hi);
}

static void tsort(int *a, int *b, size_t n, bool into_b);
POOL_VOID_TASK(tsort, int *, int *, size_t, bool);

static void tsort(int *a, int *b, size_t n, bool into_b) {
  if (n <= SORT_CUTOFF) {
    sort_seq(a, b, n, into_b);
    return;
  }
  size_t h = n / 2;
  tsort_frame hi;
  CHECK(tsort_spawn(&hi, a + h, b + h, n - h, !into_b));
  tsort(a, b, h, !into_b);
  tsort_sync(&hi);
  int *from = into_b ? a : b, *to = into_b ? b : a;
  tmerge(from, h, from + h, n - h, to);
}

static void tsort_task(void *p) {
  sort_args *s = p;
  tsort(s->a, s->b, s->n, s->into_b);
}

/* ---- The driver. */

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static int random_int(void) { /* xorshift64*, full int range */
  rng ^= rng >> 12;
  rng ^= rng << 25;
  rng ^= rng >> 27;
  return (int)(uint32_t)((rng * 0x2545F4914F6CDD1Dull) >> 32);
}

static int compare_ints(const void *p, const void *q) {
  int x = *(const int *)p, y = *(const int *)q;
  return (x > y) - (x < y);
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
  long n = 4000000, workers = 0;
  if (argc > 3 || (argc > 1 && parse(argv[1], 0, (long)(SIZE_MAX / 4 / sizeof(int)), &n)) ||
      (argc > 2 && parse(argv[2], 0, POOL_MAX_THREADS, &workers))) {
    fprintf(stderr, "usage: %s [n [workers (0..%u, 0 = all CPUs)]]\n", argv[0],
            POOL_MAX_THREADS);
    return 1;
  }
  size_t len = (size_t)n, bytes = len * sizeof(int) + 1; /* +1: malloc(0) may be NULL */
  int *input = malloc(bytes), *ref = malloc(bytes), *a = malloc(bytes), *b = malloc(bytes);
  if (!input || !ref || !a || !b) {
    fprintf(stderr, "sort: out of memory for %zu ints\n", len);
    return 1;
  }
  for (size_t i = 0; i < len; i++) input[i] = random_int();

  /* The process-wide default pool (one worker per CPU), or a pool of our own. */
  pool_t *pool = NULL;
  if (workers == 0) {
    pool = pool_default();
    if (!pool) {
      fprintf(stderr, "sort: cannot create the default pool\n");
      return 1;
    }
  } else {
    pool_config_t cfg;
    pool_config_default(&cfg);
    cfg.threads = (unsigned)workers;
    int rc = pool_create(&pool, &cfg);
    if (rc) {
      fprintf(stderr, "sort: pool_create: %s\n", pool_strerror(rc));
      return 1;
    }
  }

  /* The reference: the C library's sort of the same input. */
  memcpy(ref, input, len * sizeof(int));
  double t0 = now();
  qsort(ref, len, sizeof(int), compare_ints);
  double t_qsort = now() - t0;

  /* The sequential baseline. */
  memcpy(a, input, len * sizeof(int));
  t0 = now();
  sort_seq(a, b, len, false);
  double t_seq = now() - t0;
  int seq_ok = memcmp(a, ref, len * sizeof(int)) == 0;

  /* The parallel sort. pool_submit() from outside the pool hands the root to
   * a worker; pool_wait_idle() returns once it (and the joins below it) have
   * finished. */
  memcpy(a, input, len * sizeof(int));
  sort_args root = {a, b, len, false};
  t0 = now();
  int rc = pool_submit(pool, sort_task, &root);
  if (rc == 0) rc = pool_wait_idle(pool);
  double t_par = now() - t0;
  if (rc) fprintf(stderr, "sort: %s\n", pool_strerror(rc));
  int par_ok = rc == 0 && memcmp(a, ref, len * sizeof(int)) == 0;

  /* The typed version, from the same input. */
  memcpy(a, input, len * sizeof(int));
  sort_args troot = {a, b, len, false};
  t0 = now();
  if (rc == 0) rc = pool_submit(pool, tsort_task, &troot);
  if (rc == 0) rc = pool_wait_idle(pool);
  double t_typed = now() - t0;
  if (rc) fprintf(stderr, "sort: %s\n", pool_strerror(rc));
  int typed_ok = rc == 0 && memcmp(a, ref, len * sizeof(int)) == 0;

  printf("sorted %zu ints: parallel %s, typed %s, sequential %s (checked against qsort)\n", len,
         par_ok ? "ok" : "WRONG", typed_ok ? "ok" : "WRONG", seq_ok ? "ok" : "WRONG");
  printf("qsort %.3f s, sequential mergesort %.3f s; on %u workers: parallel %.3f s "
         "(speedup %.2fx), typed %.3f s (%.2fx)\n",
         t_qsort, t_seq, pool_threads(pool), t_par, t_seq / t_par, t_typed, t_seq / t_typed);

  int ok = par_ok && typed_ok && seq_ok;
  if (workers != 0 && (rc = pool_destroy(pool)) != 0) {
    fprintf(stderr, "sort: pool_destroy: %s\n", pool_strerror(rc));
    ok = 0;
  }
  free(input);
  free(ref);
  free(a);
  free(b);
  return ok ? 0 : 1;
}
