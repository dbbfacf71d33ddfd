/* SPDX-License-Identifier: MIT */
/* bench_knapsack: 0/1 knapsack by branch and bound, a task per branch: the
 * fine-grained, pruned fork/join program of issue 33 (fib's counterpart
 * with irregular, data-dependent work).
 *
 * Items (KNAP_N, default 24, from a fixed seed) are sorted by value per
 * weight; a node takes or leaves the next item and gives up when even the
 * fractional relaxation (capacity times the next ratio) cannot beat the
 * best value found so far, a word all branches share. The instance is the
 * method's worst case (make_items): nothing is pruned, so every run and
 * every variant does the same work, the whole feasible tree, with the
 * bound's test and the shared best's updates on every node.
 *
 *   Ts      the plain recursion, `best` an ordinary variable
 *   wspool  typed tasks, POOL_STATIC_TASK(int, knap, ...): spawn the "leave"
 *           branch, run the "take" branch (the sequential order), sync; `best` a relaxed atomic;
 *           pools of 1 and 2 workers
 *   OpenMP  #pragma omp task / taskwait (the program's compiler's runtime),
 *           1 and 2 threads
 * Each variant WSPOOL_BENCH_RUNS times (default 5), interleaved after a
 * warm-up; medians with min and max; T1/Ts and T2/Ts against the plain
 * program. Lace's own knapsack is measured outside this repository
 * (docs/performance.md, "Lace"), on the instance KNAP_DUMP=file writes. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <wspool.h>
#include <wspool_typed.h>
#ifdef BENCH_HAVE_OPENMP
#include <omp.h>
#endif

#include "benchutil.h"

typedef struct item {
  int value, weight;
} item;

enum { MAX_N = 64 };
static item items[MAX_N];
static int nitems;

static int by_ratio(const void *a, const void *b) {
  const item *x = a, *y = b;
  /* x before y when x's value/weight is larger: compare cross products. */
  long l = (long)y->value * x->weight, r = (long)x->value * y->weight;
  return (l > r) - (l < r);
}

static void make_items(int n, int *capacity) {
  uint64_t s = 0x9E3779B97F4A7C15u;
  long total = 0;
  for (int i = 0; i < n; i++) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    /* Values equal to even weights and an odd capacity no subset fills:
     * the relaxation (v + c) never falls below the best value, so the
     * bound prunes nothing and the search is the whole feasible tree, the
     * method's worst case, the same work in every run and every order. */
    items[i].weight = 2 * (50 + (int)(s % 500));
    items[i].value = items[i].weight;
    total += items[i].weight;
  }
  qsort(items, (size_t)n, sizeof(item), by_ratio);
  nitems = n;
  *capacity = (int)(total / 2) | 1;
}

/* ---- sequential ------------------------------------------------------- */

static int best_seq;

static int knap_seq(int i, int c, int v) {
  if (c < 0) return -1;
  if (i == nitems || c == 0) return v;
  /* The relaxation: no solution below this node is worth more. */
  if (v + (long)c * items[i].value / items[i].weight < best_seq) return -1;
  int with = knap_seq(i + 1, c - items[i].weight, v + items[i].value);
  int without = knap_seq(i + 1, c, v);
  int b = with > without ? with : without;
  if (b > best_seq) best_seq = b;
  return b;
}

/* ---- wspool typed tasks ----------------------------------------------- */

static atomic_int best;

static void raise_best(int b) {
  int old = atomic_load_explicit(&best, memory_order_relaxed);
  while (b > old && !atomic_compare_exchange_weak_explicit(&best, &old, b, memory_order_relaxed,
                                                           memory_order_relaxed)) {
  }
}

/* bench_knapsack_inline is this file with BENCH_KNAP_INLINE: the task's
 * definition `static inline` (typed.md, "In one piece, and inline"), all
 * else the same. */
#ifdef BENCH_KNAP_INLINE
#define KNAP_INLINE inline
#define KNAP_NAME "bench_knapsack_inline"
#else
#define KNAP_INLINE
#define KNAP_NAME "bench_knapsack"
#endif

POOL_STATIC_TASK(int, knap, int, int, int);

static KNAP_INLINE int knap(int i, int c, int v) {
  if (c < 0) return -1;
  if (i == nitems || c == 0) return v;
  if (v + (long)c * items[i].value / items[i].weight <
      atomic_load_explicit(&best, memory_order_relaxed))
    return -1;
  /* The sequential order: "take" first, here; "leave" spawned. */
  knap_frame f;
  knap_spawn(&f, i + 1, c, v);
  int with = knap(i + 1, c - items[i].weight, v + items[i].value);
  int without = knap_sync(&f);
  int b = with > without ? with : without;
  raise_best(b);
  return b;
}

/* ---- OpenMP ----------------------------------------------------------- */

#ifdef BENCH_HAVE_OPENMP
static int knap_omp(int i, int c, int v) {
  if (c < 0) return -1;
  if (i == nitems || c == 0) return v;
  if (v + (long)c * items[i].value / items[i].weight <
      atomic_load_explicit(&best, memory_order_relaxed))
    return -1;
  int without;
#pragma omp task shared(without)
  without = knap_omp(i + 1, c, v);
  int with = knap_omp(i + 1, c - items[i].weight, v + items[i].value);
#pragma omp taskwait
  int b = with > without ? with : without;
  raise_best(b);
  return b;
}
#endif

/* ---- the runs ----------------------------------------------------------- */

enum { V_SEQ, V_WS1, V_WS2, V_OMP1, V_OMP2, NV };
static const char *vname[NV] = {"sequential (Ts)", "wspool typed, 1 worker",
                                "wspool typed, 2 workers", "OpenMP tasks, 1 thread",
                                "OpenMP tasks, 2 threads"};

static int capacity, answer;
static pool_t *pools[3];

static double run(int v) {
  int r = -1;
  double t0 = bench_now();
  switch (v) {
  case V_SEQ:
    best_seq = 0;
    r = knap_seq(0, capacity, 0);
    break;
  case V_WS1:
  case V_WS2:
    atomic_store(&best, 0);
    if (knap_run_rc(pools[v - V_WS1 + 1], &r, 0, capacity, 0) != 0) r = -2;
    break;
  default:
#ifdef BENCH_HAVE_OPENMP
    atomic_store(&best, 0);
#pragma omp parallel num_threads(v - V_OMP1 + 1)
#pragma omp single
    r = knap_omp(0, capacity, 0);
#endif
    break;
  }
  double s = bench_now() - t0;
  if (v == V_SEQ && answer == 0) answer = r;
  if (r != answer) bench_fail("%s: value %d, expected %d", vname[v], r, answer);
  return s;
}

static void stats(const double *x, int n, double *med, double *lo, double *hi) {
  double s[BENCH_MAX_RUNS];
  for (int i = 0; i < n; i++) s[i] = x[i];
  *med = bench_median(s, n);
  *lo = s[0];
  *hi = s[n - 1];
}

int main(void) {
  int runs = bench_runs();
  int n = (int)bench_env_long("KNAP_N", 24, 4, MAX_N);
  make_items(n, &capacity);
  /* KNAP_DUMP=file: the instance as "n capacity" and a "value weight" line
   * per item, for other programs to solve the same one. */
  const char *dump = getenv("KNAP_DUMP");
  if (dump) {
    FILE *f = fopen(dump, "w");
    if (!f) {
      bench_fail("KNAP_DUMP: cannot write %s", dump);
      return bench_exit_status();
    }
    fprintf(f, "%d %d\n", n, capacity);
    for (int i = 0; i < n; i++) fprintf(f, "%d %d\n", items[i].value, items[i].weight);
    fclose(f);
  }
  pools[1] = bench_pool(1, BENCH_DEFAULT);
  pools[2] = bench_pool(2, BENCH_DEFAULT);
  int nv = NV;
#ifndef BENCH_HAVE_OPENMP
  nv = V_OMP1;
#endif
  printf("%s: %d items, capacity %d, branch and bound, a task per branch\n"
         "%d runs each, interleaved; seconds, median [min, max]\n\n",
         KNAP_NAME, n, capacity, runs);
  double t[NV][BENCH_MAX_RUNS], med[NV];
  for (int v = 0; v < nv; v++) run(v); /* warm-up; the sequential run sets the answer */
  for (int r = 0; r < runs; r++)
    for (int v = 0; v < nv; v++) {
      bench_settle();
      t[v][r] = run(v);
    }
  printf("%-26s %-28s %s\n", "variant", "time", "/ Ts");
  for (int v = 0; v < nv; v++) {
    double lo, hi;
    stats(t[v], runs, &med[v], &lo, &hi);
    printf("%-26s %7.4f [%7.4f, %7.4f]  %5.2f\n", vname[v], med[v], lo, hi, med[v] / med[V_SEQ]);
  }
  if (nv == V_OMP1) printf("(OpenMP rows: built without OpenMP)\n");
  printf("\noptimum %d; wspool typed T1/Ts = %.2f, T2/Ts = %.2f\n", answer, med[V_WS1] / med[V_SEQ],
         med[V_WS2] / med[V_SEQ]);
  pool_destroy(pools[1]);
  pool_destroy(pools[2]);
  return bench_exit_status();
}
