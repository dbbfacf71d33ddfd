/* SPDX-License-Identifier: MIT */
/* bench_sort: cilksort (parallel mergesort with parallel merge, after
 * Cilk-5) of WSPOOL_BENCH_SORT_N random 32-bit ints (default 10^7).
 *
 *   sequential  the same algorithm with plain calls (same cutoffs)
 *   wspool      pool_spawn/pool_sync, frames on the stack; pools of 1 and 2
 *               workers, the root submitted into the pool; and typed tasks
 *               (POOL_VOID_TASK), the arguments as they are
 *   OpenMP      #pragma omp task / taskwait, 1 and 2 threads
 *   oneTBB      task_group per node, task_arena of 1 and 2
 *
 * Every run sorts a fresh copy of the same input (the copy is not timed) and
 * is checked: sorted, and a permutation of the input (an order-independent
 * multiset fingerprint). No target from the issue; prints the 2-worker
 * speedup and the peers' ratios. WSPOOL_BENCH_RUNS, WSPOOL_BENCH_BUDGET. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wspool.h>

#include "bench_sort.h"
#include "benchutil.h"
#include "peers.h"

static size_t n_items;
static int32_t *input, *work, *scratch;
static sort_print input_print;

static void prepare(void) { memcpy(work, input, n_items * sizeof(int32_t)); }

static void check(const char *who) {
  for (size_t i = 1; i < n_items; i++)
    if (work[i - 1] > work[i]) {
      bench_fail("%s: not sorted at index %zu (%d > %d)", who, i, work[i - 1], work[i]);
      return;
    }
  sort_print p = sort_fingerprint(work, n_items);
  if (p.sum != input_print.sum || p.xr != input_print.xr)
    bench_fail("%s: the output is not a permutation of the input", who);
}

/* ---- sequential (the same recursion, plain calls) ---- */

static void s_merge(const int32_t *a, size_t na, const int32_t *b, size_t nb, int32_t *d) {
  sort_larger_first(&a, &na, &b, &nb);
  if (na + nb < MERGE_CUTOFF) {
    seq_merge(a, na, b, nb, d);
    return;
  }
  size_t sa, sb;
  sort_split(a, na, b, nb, &sa, &sb);
  s_merge(a, sa, b, sb, d);
  s_merge(a + sa, na - sa, b + sb, nb - sb, d + sa + sb);
}

static void s_sort(int32_t *a, int32_t *t, size_t n) {
  if (n < SORT_CUTOFF) {
    seq_quick(a, n);
    return;
  }
  size_t q = n / 4;
  s_sort(a, t, q);
  s_sort(a + q, t + q, q);
  s_sort(a + 2 * q, t + 2 * q, q);
  s_sort(a + 3 * q, t + 3 * q, n - 3 * q);
  s_merge(a, q, a + q, q, t);
  s_merge(a + 2 * q, q, a + 3 * q, n - 3 * q, t + 2 * q);
  s_merge(t, 2 * q, t + 2 * q, n - 2 * q, a);
}

static double run_seq(bench_variant *v) {
  prepare();
  double t0 = bench_now();
  s_sort(work, scratch, n_items);
  double t = bench_now() - t0;
  check(v->name);
  return t;
}

/* ---- wspool ---- */

typedef struct w_mrg {
  const int32_t *a, *b;
  size_t na, nb;
  int32_t *d;
} w_mrg;

typedef struct w_srt {
  int32_t *a, *t;
  size_t n;
} w_srt;

static void w_merge(void *p) {
  w_mrg *m = p;
  const int32_t *a = m->a, *b = m->b;
  size_t na = m->na, nb = m->nb;
  sort_larger_first(&a, &na, &b, &nb);
  if (na + nb < MERGE_CUTOFF) {
    seq_merge(a, na, b, nb, m->d);
    return;
  }
  size_t sa, sb;
  sort_split(a, na, b, nb, &sa, &sb);
  w_mrg l = {a, b, sa, sb, m->d};
  w_mrg r = {a + sa, b + sb, na - sa, nb - sb, m->d + sa + sb};
  pool_task_t t;
  pool_spawn(NULL, &t, w_merge, &l);
  w_merge(&r);
  pool_sync(&t);
}

static void w_sort(void *p) {
  w_srt *s = p;
  int32_t *a = s->a, *t = s->t;
  size_t n = s->n;
  if (n < SORT_CUTOFF) {
    seq_quick(a, n);
    return;
  }
  size_t q = n / 4;
  w_srt k[4] = {{a, t, q}, {a + q, t + q, q}, {a + 2 * q, t + 2 * q, q},
                {a + 3 * q, t + 3 * q, n - 3 * q}};
  pool_task_t tk[3];
  for (int i = 0; i < 3; i++) pool_spawn(NULL, &tk[i], w_sort, &k[i]);
  w_sort(&k[3]);
  for (int i = 3; i-- > 0;) pool_sync(&tk[i]);
  w_mrg m1 = {a, a + q, q, q, t};
  w_mrg m2 = {a + 2 * q, a + 3 * q, q, n - 3 * q, t + 2 * q};
  pool_task_t tm;
  pool_spawn(NULL, &tm, w_merge, &m1);
  w_merge(&m2);
  pool_sync(&tm);
  w_mrg m3 = {t, t + 2 * q, 2 * q, n - 2 * q, a};
  w_merge(&m3);
}

/* Typed: the same recursion with POOL_VOID_TASK, no argument structs. */
static void y_merge(const int32_t *a, size_t na, const int32_t *b, size_t nb, int32_t *d);
POOL_VOID_TASK(y_merge, const int32_t *, size_t, const int32_t *, size_t, int32_t *);

static void y_merge(const int32_t *a, size_t na, const int32_t *b, size_t nb, int32_t *d) {
  sort_larger_first(&a, &na, &b, &nb);
  if (na + nb < MERGE_CUTOFF) {
    seq_merge(a, na, b, nb, d);
    return;
  }
  size_t sa, sb;
  sort_split(a, na, b, nb, &sa, &sb);
  y_merge_frame f;
  y_merge_spawn(&f, a, sa, b, sb, d);
  y_merge(a + sa, na - sa, b + sb, nb - sb, d + sa + sb);
  y_merge_sync(&f);
}

static void y_sort(int32_t *a, int32_t *t, size_t n);
POOL_VOID_TASK(y_sort, int32_t *, int32_t *, size_t);

static void y_sort(int32_t *a, int32_t *t, size_t n) {
  if (n < SORT_CUTOFF) {
    seq_quick(a, n);
    return;
  }
  size_t q = n / 4;
  y_sort_frame k[3];
  for (size_t i = 0; i < 3; i++) y_sort_spawn(&k[i], a + i * q, t + i * q, q);
  y_sort(a + 3 * q, t + 3 * q, n - 3 * q);
  for (int i = 3; i-- > 0;) y_sort_sync(&k[i]);
  y_merge_frame m;
  y_merge_spawn(&m, a, q, a + q, q, t);
  y_merge(a + 2 * q, q, a + 3 * q, n - 3 * q, t + 2 * q);
  y_merge_sync(&m);
  y_merge(t, 2 * q, t + 2 * q, n - 2 * q, a);
}

static void y_root(void *p) {
  w_srt *s = p;
  y_sort(s->a, s->t, s->n);
}

/* param: 1 typed, 0 argument structs. */
static double run_wspool(bench_variant *v) {
  prepare();
  w_srt root = {work, scratch, n_items};
  double t = bench_run_root(v, v->param ? y_root : w_sort, &root);
  check(v->name);
  return t;
}

/* ---- OpenMP ---- */

#ifdef BENCH_HAVE_OPENMP
static void o_merge(const int32_t *a, size_t na, const int32_t *b, size_t nb, int32_t *d) {
  sort_larger_first(&a, &na, &b, &nb);
  if (na + nb < MERGE_CUTOFF) {
    seq_merge(a, na, b, nb, d);
    return;
  }
  size_t sa, sb;
  sort_split(a, na, b, nb, &sa, &sb);
#pragma omp task
  o_merge(a, sa, b, sb, d);
  o_merge(a + sa, na - sa, b + sb, nb - sb, d + sa + sb);
#pragma omp taskwait
}

static void o_sort(int32_t *a, int32_t *t, size_t n) {
  if (n < SORT_CUTOFF) {
    seq_quick(a, n);
    return;
  }
  size_t q = n / 4;
#pragma omp task
  o_sort(a, t, q);
#pragma omp task
  o_sort(a + q, t + q, q);
#pragma omp task
  o_sort(a + 2 * q, t + 2 * q, q);
  o_sort(a + 3 * q, t + 3 * q, n - 3 * q);
#pragma omp taskwait
#pragma omp task
  o_merge(a, q, a + q, q, t);
  o_merge(a + 2 * q, q, a + 3 * q, n - 3 * q, t + 2 * q);
#pragma omp taskwait
  o_merge(t, 2 * q, t + 2 * q, n - 2 * q, a);
}

static double run_omp(bench_variant *v) {
  prepare();
  double t0 = bench_now();
#pragma omp parallel num_threads(v->threads)
#pragma omp single
  o_sort(work, scratch, n_items);
  double t = bench_now() - t0;
  check(v->name);
  return t;
}
#else
#define run_omp NULL
#endif

#ifdef BENCH_HAVE_TBB
static double run_tbb(bench_variant *v) {
  prepare();
  double t = bench_tbb_sort(work, scratch, n_items, v->threads);
  check(v->name);
  return t;
}
#else
#define run_tbb NULL
#endif

int main(void) {
  n_items = (size_t)bench_env_long("WSPOOL_BENCH_SORT_N", 10000000, 1, 1000000000);
  char what[160];
  snprintf(what, sizeof what, "cilksort of %zu random int32 (leaf quicksort < %d, merge < %d)",
           n_items, SORT_CUTOFF, MERGE_CUTOFF);
  bench_header("bench_sort", what);

  input = malloc(n_items * sizeof(int32_t));
  work = malloc(n_items * sizeof(int32_t));
  scratch = malloc(n_items * sizeof(int32_t));
  if (!input || !work || !scratch) {
    fprintf(stderr, "out of memory\n");
    return 1;
  }
  sort_fill(input, n_items, 0x5EED2024u);
  input_print = sort_fingerprint(input, n_items);
  memset(work, 0, n_items * sizeof(int32_t)); /* fault the pages in once */
  memset(scratch, 0, n_items * sizeof(int32_t));

  pool_t *pools[2];
  for (int i = 0; i < 2; i++) pools[i] = bench_pool(i + 1, BENCH_DEFAULT);
  bench_variant v[] = {
      BENCH_SEQ_ROW("sequential cilksort", run_seq),
      BENCH_WSPOOL_PAIR("wspool", run_wspool, pools, 0),
      BENCH_WSPOOL_PAIR("wspool typed", run_wspool, pools, 1),
      BENCH_TASK_PEER_ROWS(run_omp, run_tbb),
  };
  int nv = BENCH_COUNT(v);
  bench_measure(v, nv, bench_runs(), bench_budget());
  bench_table(v, nv);

  bench_variant *ts = bench_find(v, nv, "sequential cilksort");
  printf("\nratios (medians):\n");
  bench_ratio_pair(v, nv, ts, "wspool");
  bench_ratio_pair(v, nv, ts, "wspool typed");
  bench_ratio_task_peers(v, nv, ts);
  printf("\ntarget: none set by the issue for sort (reference figures only)\n");

  for (int i = 0; i < 2; i++) pool_destroy(pools[i]);
  free(input);
  free(work);
  free(scratch);
  return bench_finish();
}
