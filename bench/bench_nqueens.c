/* SPDX-License-Identifier: MIT */
/* bench_nqueens: count the solutions of the n-queens problem with one task
 * per placement (every queen that fits spawns a task that owns a copy of
 * the board and tries the next row), no cutoff.
 *
 *   sequential  the same recursion, plain calls
 *   wspool      pool_group (one group per node, pool_group_spawn per
 *               placement, pool_group_wait) and, for comparison,
 *               pool_spawn/pool_sync with the frames on the stack; pools of
 *               1 and 2 workers, the root submitted into the pool; a
 *               typed task (POOL_TASK) taking the board by value, its
 *               frames in an array on the stack or on the thread's frame
 *               stack (NAME_push / NAME_pop)
 *   OpenMP      #pragma omp task per placement + taskwait, 1 and 2 threads
 *   oneTBB      task_group per node, run per placement, in an arena of 1, 2
 *
 * The count is checked against OEIS A000170. Environment:
 * WSPOOL_BENCH_NQUEENS_N (default 12, 4..15), WSPOOL_BENCH_RUNS,
 * WSPOOL_BENCH_BUDGET. Target: the typed version's 2-worker speedup over
 * the sequential program at least 1.9 (n = 12); the peers' ratios beside. */
#include <stdio.h>
#include <string.h>
#include <wspool.h>

#include "bench_nqueens.h"
#include "benchutil.h"
#include "peers.h"

static int nq_n;

static void check(const char *who, long r) {
  if (r != nq_known[nq_n])
    bench_fail("%s: %d-queens has %ld solutions, got %ld", who, nq_n, nq_known[nq_n], r);
}

/* ---- sequential ---- */

__attribute__((noinline)) static long nq_seq(int n, int row, const signed char *b) {
  if (row == n) return 1;
  long count = 0;
  for (int c = 0; c < n; c++) {
    if (!nq_ok(b, row, c)) continue;
    signed char nb[NQ_MAX];
    memcpy(nb, b, (size_t)row);
    nb[row] = (signed char)c;
    count += nq_seq(n, row + 1, nb);
  }
  return count;
}

static double run_seq(bench_variant *v) {
  signed char b[NQ_MAX] = {0};
  double t0 = bench_now();
  long r = nq_seq(nq_n, 0, b);
  double t = bench_now() - t0;
  check(v->name, r);
  return t;
}

/* ---- wspool ---- */

typedef struct nq_arg {
  int n, row;    /* rows [0, row) of b are placed */
  long count;    /* out */
  signed char b[NQ_MAX];
} nq_arg;

/* Child *x of node *a: the next row, with a queen in column c. A macro,
 * as the tasks had these lines written out: clang allocates registers
 * differently around even an always-inlined function here. */
#define NQ_CHILD(x, a, c)                     \
  do {                                        \
    (x)->n = (a)->n;                          \
    (x)->row = (a)->row + 1;                  \
    (x)->count = 0;                           \
    memcpy((x)->b, (a)->b, (size_t)(a)->row); \
    (x)->b[(a)->row] = (signed char)(c);      \
  } while (0)

static void nq_group_task(void *p) {
  nq_arg *a = p;
  if (a->row == a->n) {
    a->count = 1;
    return;
  }
  nq_arg kids[NQ_MAX];
  int k = 0;
  pool_group_t g;
  pool_group_init(&g, NULL);
  for (int c = 0; c < a->n; c++) {
    if (!nq_ok(a->b, a->row, c)) continue;
    nq_arg *x = &kids[k++];
    NQ_CHILD(x, a, c);
    pool_group_spawn(&g, nq_group_task, x);
  }
  pool_group_wait(&g);
  long count = 0;
  for (int i = 0; i < k; i++) count += kids[i].count;
  a->count = count;
}

static void nq_spawn_task(void *p) {
  nq_arg *a = p;
  if (a->row == a->n) {
    a->count = 1;
    return;
  }
  nq_arg kids[NQ_MAX];
  pool_task_t t[NQ_MAX];
  int k = 0;
  for (int c = 0; c < a->n; c++) {
    if (!nq_ok(a->b, a->row, c)) continue;
    nq_arg *x = &kids[k];
    NQ_CHILD(x, a, c);
    pool_spawn(NULL, &t[k], nq_spawn_task, x);
    k++;
  }
  long count = 0;
  for (int i = k; i-- > 0;) { /* newest first: the LIFO fast path */
    pool_sync(&t[i]);
    count += kids[i].count;
  }
  a->count = count;
}

/* Typed: the board travels by value in the child's frame; each sync returns
 * the child's count. */
typedef struct nq_board {
  signed char b[NQ_MAX];
} nq_board;

static long nq_typed(int n, int row, nq_board b);
POOL_TASK(long, nq_typed, int, int, nq_board);

static long nq_typed(int n, int row, nq_board b) {
  if (row == n) return 1;
  nq_typed_frame f[NQ_MAX];
  int k = 0;
  for (int c = 0; c < n; c++) {
    if (!nq_ok(b.b, row, c)) continue;
    nq_board nb = b;
    nb.b[row] = (signed char)c;
    nq_typed_spawn(&f[k++], n, row + 1, nb);
  }
  long count = 0;
  while (k-- > 0) count += nq_typed_sync(&f[k]); /* newest first */
  return count;
}

/* Typed, the frames on the thread's frame stack (NAME_push, NAME_pop)
 * instead of an array sized for the most children. */
static long nq_pushed(int n, int row, nq_board b);
POOL_TASK(long, nq_pushed, int, int, nq_board);

static long nq_pushed(int n, int row, nq_board b) {
  if (row == n) return 1;
  int k = 0;
  for (int c = 0; c < n; c++) {
    if (!nq_ok(b.b, row, c)) continue;
    nq_board nb = b;
    nb.b[row] = (signed char)c;
    if (nq_pushed_push(NULL, n, row + 1, nb) != 0) bench_fail("nq_pushed_push failed");
    k++;
  }
  long count = 0;
  while (k-- > 0) count += nq_pushed_pop(); /* newest first */
  return count;
}

static void nq_typed_root(void *p) {
  nq_arg *a = p;
  nq_board b;
  memset(&b, 0, sizeof b);
  a->count = nq_typed(a->n, 0, b);
}

static void nq_pushed_root(void *p) {
  nq_arg *a = p;
  nq_board b;
  memset(&b, 0, sizeof b);
  a->count = nq_pushed(a->n, 0, b);
}

/* param: 0 group, 1 spawn/sync, 2 typed, 3 typed push/pop. */
static double run_wspool(bench_variant *v) {
  static const pool_fn roots[] = {nq_group_task, nq_spawn_task, nq_typed_root, nq_pushed_root};
  nq_arg root;
  memset(&root, 0, sizeof root);
  root.n = nq_n;
  root.count = -1;
  pool_fn root_fn = roots[v->param];
  double t = bench_run_root(v, root_fn, &root);
  check(v->name, root.count);
  return t;
}

/* ---- OpenMP ---- */

#ifdef BENCH_HAVE_OPENMP
static long nq_omp(int n, int row, const signed char *b) {
  if (row == n) return 1;
  long counts[NQ_MAX];
  signed char boards[NQ_MAX][NQ_MAX];
  int k = 0;
  for (int c = 0; c < n; c++) {
    if (!nq_ok(b, row, c)) continue;
    memcpy(boards[k], b, (size_t)row);
    boards[k][row] = (signed char)c;
#pragma omp task shared(counts, boards) firstprivate(k)
    counts[k] = nq_omp(n, row + 1, boards[k]);
    k++;
  }
#pragma omp taskwait
  long count = 0;
  for (int i = 0; i < k; i++) count += counts[i];
  return count;
}

static double run_omp(bench_variant *v) {
  long r = -1;
  signed char b[NQ_MAX] = {0};
  double t0 = bench_now();
#pragma omp parallel num_threads(v->threads)
#pragma omp single
  r = nq_omp(nq_n, 0, b);
  double t = bench_now() - t0;
  check(v->name, r);
  return t;
}
#else
#define run_omp NULL
#endif

#ifdef BENCH_HAVE_TBB
static double run_tbb(bench_variant *v) {
  long r = -1;
  double t = bench_tbb_nqueens(nq_n, v->threads, &r);
  check(v->name, r);
  return t;
}
#else
#define run_tbb NULL
#endif

int main(void) {
  nq_n = (int)bench_env_long("WSPOOL_BENCH_NQUEENS_N", 12, 4, NQ_MAX - 1);
  char what[160];
  snprintf(what, sizeof what, "%d-queens = %ld solutions, one task per placement, no cutoff",
           nq_n, nq_known[nq_n]);
  bench_header("bench_nqueens", what);

  pool_t *pools[2];
  for (int i = 0; i < 2; i++) pools[i] = bench_pool(i + 1, BENCH_DEFAULT);
  bench_variant v[] = {
      BENCH_SEQ_ROW("sequential", run_seq),
      BENCH_WSPOOL_PAIR("wspool group", run_wspool, pools, 0),
      BENCH_WSPOOL_PAIR("wspool spawn/sync", run_wspool, pools, 1),
      BENCH_WSPOOL_PAIR("wspool typed", run_wspool, pools, 2),
      BENCH_WSPOOL_PAIR("wspool typed push/pop", run_wspool, pools, 3),
      BENCH_TASK_PEER_ROWS(run_omp, run_tbb),
  };
  int nv = BENCH_COUNT(v);
  bench_measure(v, nv, bench_runs(), bench_budget());
  bench_table(v, nv);
  printf("(T/Twspool compares with the wspool group row of the same thread count)\n");

  bench_variant *ts = bench_find(v, nv, "sequential");
  bench_variant *y2 = bench_find(v, nv, "wspool typed T2");
  printf("\nratios (medians):\n");
  bench_ratio_pair(v, nv, ts, "wspool group");
  bench_ratio_pair(v, nv, ts, "wspool spawn/sync");
  bench_ratio_pair(v, nv, ts, "wspool typed");
  bench_ratio_pair(v, nv, ts, "wspool typed push/pop");
  bench_ratio_task_peers(v, nv, ts);
  double p_sp = 1.0 / bench_paired_ratio(y2, ts);
  printf("\npaired: typed T2 speedup over sequential %.2f\n\n", p_sp);
  bench_target("typed T2 speedup over sequential >= 1.9", p_sp >= 1.9,
               "paired %.2f; medians %.2f", p_sp, ts->med / y2->med);
  /* The frame stack against the array: a push at the cost of a spawn. */
  for (int w = 1; w <= 2; w++) {
    char a[64], b[64];
    snprintf(a, sizeof a, "wspool typed push/pop T%d", w);
    snprintf(b, sizeof b, "wspool typed T%d", w);
    double r = bench_paired_ratio(bench_find(v, nv, a), bench_find(v, nv, b));
    printf("paired: typed push/pop T%d / typed T%d %.3f\n", w, w, r);
  }

  for (int i = 0; i < 2; i++) pool_destroy(pools[i]);
  return bench_finish();
}
