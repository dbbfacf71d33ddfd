/* SPDX-License-Identifier: MIT */
/* bench_fib: fib(n) with one task per spawn and no cutoff, the classic
 * measure of a fork/join runtime's spawn overhead and of its scaling.
 *
 *   Ts      plain recursion `long fib(int n)` (noinline)
 *   wspool  pool_spawn/pool_sync on a pool_task_t frame on the stack; the
 *           root is submitted into the pool (it runs on a worker) and main
 *           waits with pool_wait_idle. Pools of 1, 2 and 16 workers.
 *   wspool take  the same with pool_take: an unstarted task comes back and
 *           the caller calls pfib() directly.
 *   wspool typed  a typed task, POOL_TASK(long, tfib, int): the argument
 *           lives in the frame, the result comes back by value, and an
 *           unstolen task is a direct call the compiler inlines.
 *   wspool typed push/pop  the typed task with its frame on the thread's
 *           frame stack (sfib_push / sfib_pop) instead of the caller's.
 *   wspool typed isolated  the typed tree inside pool_isolate (called by
 *           the root task): its waits run only its own work, and one that
 *           runs out of it sleeps in a blocking region (design.md 7.5).
 *   ..., plain calls  take and typed T1 compiled with POOL_NO_TRAMPOLINE
 *           (bench_fib_plain.c): the trampolines' A/B (design.md 8.3).
 *   OpenMP  #pragma omp task shared(x) / taskwait, 1 and 2 threads
 *   oneTBB  tbb::task_group per node (run + wait), task_arena of 1 and 2
 *
 * Targets: on pool_take, T1/Ts <= 3, T1/T2 >= 1.6, T16 <= 1.5 x T2, and
 * wspool at least 20x faster than oneTBB's task_group on this program; on
 * typed tasks, T1/Ts <= 2.0 and T2/Ts <= 0.9; on spawn/sync, T1/Ts <= 4.
 * Environment: WSPOOL_BENCH_FIB_N (default 32), WSPOOL_BENCH_RUNS,
 * WSPOOL_BENCH_BUDGET. Exit 1 when a result is wrong. */
#include <stdio.h>
#include <stdlib.h>
#include <wspool.h>

#include "bench_fib.h"
#include "benchutil.h"
#include "peers.h"

/* The same source as fib() with both recursive calls kept: GCC's
 * tail-recursion pass turns fib() into a loop around one call (an
 * accumulator), which halves its calls. Informational row only; the
 * targets use fib(). */
#if defined(__clang__)
#define FIB_KEEP_CALLS __attribute__((noinline, disable_tail_calls))
#else
#define FIB_KEEP_CALLS __attribute__((noinline, optimize("no-optimize-sibling-calls")))
#endif
FIB_KEEP_CALLS static long fib_calls(int n) {
  if (n < 2) return n;
  return fib_calls(n - 1) + fib_calls(n - 2);
}

static pool_t *pools[3];

static double run_seq_calls(bench_variant *v) { return fib_run_seq_of(v, fib_calls); }
static double run_wspool(bench_variant *v) { return fib_run_root(v, fib_task); }
static double run_take(bench_variant *v) { return fib_run_root(v, pfib_task); }
static double run_typed(bench_variant *v) { return fib_run_root(v, tfib_root); }

/* The typed tree with its frame on the thread's frame stack (NAME_push,
 * NAME_pop) instead of in the caller's C frame: what a child of a loop
 * costs beyond a typed spawn, at the finest grain there is. */
static long sfib(int n);
POOL_TASK(long, sfib, int);

static long sfib(int n) {
  if (n < 2) return n;
  if (sfib_push(NULL, n - 1) != 0) bench_fail("sfib_push failed");
  long y = sfib(n - 2);
  return sfib_pop() + y;
}

static void sfib_root(void *p) {
  fib_arg *a = p;
  a->r = sfib(a->n);
}
static double run_pushed(bench_variant *v) { return fib_run_root(v, sfib_root); }

static void tfib_isolated_root(void *p) {
  if (pool_isolate(tfib_root, p) != 0) bench_fail("pool_isolate failed");
}
static double run_isolated(bench_variant *v) { return fib_run_root(v, tfib_isolated_root); }

#ifdef BENCH_HAVE_OPENMP
static long fib_omp(int n) {
  if (n < 2) return n;
  long x, y;
#pragma omp task shared(x)
  x = fib_omp(n - 1);
  y = fib_omp(n - 2);
#pragma omp taskwait
  return x + y;
}

static double run_omp(bench_variant *v) {
  long r = -1;
  double t0 = bench_now();
#pragma omp parallel num_threads(v->threads)
#pragma omp single
  r = fib_omp(fib_n);
  double t = bench_now() - t0;
  fib_check(v->name, r);
  return t;
}
#else
#define run_omp NULL
#endif

#ifdef BENCH_HAVE_TBB
static double run_tbb(bench_variant *v) {
  long r = -1;
  double t = bench_tbb_fib(fib_n, v->threads, &r);
  fib_check(v->name, r);
  return t;
}
#else
#define run_tbb NULL
#endif

/* The rows the ratios and targets read (NULL: a peer not built). */
typedef struct fib_rows {
  bench_variant *ts, *tc;       /* sequential fib(), both calls kept */
  bench_variant *s1, *s2, *s16; /* spawn/sync */
  bench_variant *t1, *t2, *t16; /* spawn/take */
  bench_variant *y1, *y2, *y16; /* typed */
  bench_variant *tp, *yp;       /* take and typed T1 with plain calls */
  bench_variant *q1, *q2;       /* typed push/pop */
  bench_variant *i1, *i2;       /* typed isolated */
  bench_variant *o1, *o2, *b1, *b2;
} fib_rows;

static fib_rows find_rows(bench_variant *v, int nv) {
  fib_rows r;
  r.ts = bench_find(v, nv, "sequential fib()");
  r.tc = bench_find(v, nv, "sequential, both calls kept");
  r.s1 = bench_find(v, nv, "wspool T1");
  r.s2 = bench_find(v, nv, "wspool T2");
  r.s16 = bench_find(v, nv, "wspool T16 (on 2 cores)");
  r.t1 = bench_find(v, nv, "wspool take T1");
  r.t2 = bench_find(v, nv, "wspool take T2");
  r.t16 = bench_find(v, nv, "wspool take T16 (on 2 cores)");
  r.y1 = bench_find(v, nv, "wspool typed T1");
  r.y2 = bench_find(v, nv, "wspool typed T2");
  r.y16 = bench_find(v, nv, "wspool typed T16 (on 2 cores)");
  r.tp = bench_find(v, nv, "wspool take T1, plain calls");
  r.yp = bench_find(v, nv, "wspool typed T1, plain calls");
  r.q1 = bench_find(v, nv, "wspool typed push/pop T1");
  r.q2 = bench_find(v, nv, "wspool typed push/pop T2");
  r.i1 = bench_find(v, nv, "wspool typed isolated T1");
  r.i2 = bench_find(v, nv, "wspool typed isolated T2");
  r.o1 = bench_find(v, nv, "OpenMP tasks 1 thr");
  r.o2 = bench_find(v, nv, "OpenMP tasks 2 thr");
  r.b1 = bench_find(v, nv, "oneTBB task_group 1 thr");
  r.b2 = bench_find(v, nv, "oneTBB task_group 2 thr");
  return r;
}

static void print_medians(const fib_rows *r) {
  const bench_variant *ts = r->ts, *tc = r->tc, *s1 = r->s1, *s2 = r->s2, *t1 = r->t1,
                      *t2 = r->t2, *y1 = r->y1, *y2 = r->y2;
  printf("\nratios (medians):\n");
  printf("  spawn/sync  T1/Ts = %.2f   T1/T2 = %.2f   T16/T2 = %.2f   (T1 / both-calls Ts = %.2f)\n",
         s1->med / ts->med, s1->med / s2->med, r->s16->med / s2->med, s1->med / tc->med);
  printf("  spawn/take  T1/Ts = %.2f   T1/T2 = %.2f   T16/T2 = %.2f   (T1 / both-calls Ts = %.2f)\n",
         t1->med / ts->med, t1->med / t2->med, r->t16->med / t2->med, t1->med / tc->med);
  printf("  typed       T1/Ts = %.2f   T2/Ts = %.2f   T1/T2 = %.2f   T16/T2 = %.2f\n",
         y1->med / ts->med, y2->med / ts->med, y1->med / y2->med, r->y16->med / y2->med);
  if (r->o1 && r->o2)
    printf("  OpenMP  T1/Ts = %.2f   T1/T2 = %.2f   OpenMP/wspool take: 1 thr %.2fx, 2 thr %.2fx\n",
           r->o1->med / ts->med, r->o1->med / r->o2->med, r->o1->med / t1->med,
           r->o2->med / t2->med);
  else
    printf("  OpenMP  unavailable (built without OpenMP)\n");
  if (r->b1 && r->b2)
    printf("  oneTBB  T1/Ts = %.2f   T1/T2 = %.2f   TBB/wspool: spawn/sync 1 thr %.2fx, 2 thr %.2fx;"
           " spawn/take 1 thr %.2fx, 2 thr %.2fx\n",
           r->b1->med / ts->med, r->b1->med / r->b2->med, r->b1->med / s1->med,
           r->b2->med / s2->med, r->b1->med / t1->med, r->b2->med / t2->med);
  else
    printf("  oneTBB  unavailable (built without oneTBB)\n");
}

/* The targets are read on the fastest way to write this program with
 * wspool (pool_take); the spawn/sync rows show the other. Each is judged
 * on the paired ratio (the median over rounds of the ratio of two runs
 * made moments apart); the ratio of the medians is printed beside it. */
static void print_targets(const fib_rows *r) {
  const bench_variant *ts = r->ts, *t1 = r->t1, *t2 = r->t2, *t16 = r->t16, *y1 = r->y1,
                      *y2 = r->y2, *s1 = r->s1, *b1 = r->b1, *b2 = r->b2;
  double p_t1s = bench_paired_ratio(t1, ts), p_t12 = bench_paired_ratio(t1, t2);
  double p_t162 = bench_paired_ratio(t16, t2);
  printf("\npaired ratios (median over rounds of the ratio within a round):\n");
  printf("  spawn/take  T1/Ts = %.2f   T1/T2 = %.2f   T16/T2 = %.2f\n", p_t1s, p_t12, p_t162);
  double p_y1s = bench_paired_ratio(y1, ts), p_y2s = bench_paired_ratio(y2, ts);
  double p_s1s = bench_paired_ratio(s1, ts);
  printf("  typed       T1/Ts = %.2f   T2/Ts = %.2f\n", p_y1s, p_y2s);
  printf("  spawn/sync  T1/Ts = %.2f\n", p_s1s);
  printf("  trampolines (T1 with plain calls / T1): take %.2f, typed %.2f\n",
         bench_paired_ratio(r->tp, t1), bench_paired_ratio(r->yp, y1));
  printf("  frame stack (typed push/pop / typed): T1 %.2f, T2 %.2f\n",
         bench_paired_ratio(r->q1, y1), bench_paired_ratio(r->q2, y2));
  printf("  isolation (typed isolated / typed): T1 %.2f, T2 %.2f\n", bench_paired_ratio(r->i1, y1),
         bench_paired_ratio(r->i2, y2));
  if (b1 && b2)
    printf("  oneTBB/wspool take: 1 thr %.2fx, 2 thr %.2fx\n", bench_paired_ratio(b1, t1),
           bench_paired_ratio(b2, t2));
  printf("\n");
  bench_target("T1/Ts <= 3", p_t1s <= 3.0, "paired %.2f; medians %.2f", p_t1s, t1->med / ts->med);
  bench_target("T1/T2 >= 1.6", p_t12 >= 1.6, "paired %.2f; medians %.2f", p_t12,
               t1->med / t2->med);
  bench_target("T16 <= 1.5 x T2", p_t162 <= 1.5, "T16/T2 paired %.2f; medians %.2f", p_t162,
               t16->med / t2->med);
  bench_target("typed T1/Ts <= 2.0", p_y1s <= 2.0, "paired %.2f; medians %.2f", p_y1s,
               y1->med / ts->med);
  bench_target("typed T2/Ts <= 0.9", p_y2s <= 0.9, "paired %.2f; medians %.2f", p_y2s,
               y2->med / ts->med);
  bench_target("spawn/sync T1/Ts <= 4", p_s1s <= 4.0, "paired %.2f; medians %.2f", p_s1s,
               s1->med / ts->med);
  if (b2) {
    double p_b2 = bench_paired_ratio(b2, t2);
    bench_target("wspool >= 20x faster than oneTBB task_group (2 threads)", p_b2 >= 20.0,
                 "TBB/wspool at 2 threads paired %.1fx, medians %.1fx; at 1 thread paired %.1fx",
                 p_b2, b2->med / t2->med, b1 ? bench_paired_ratio(b1, t1) : 0.0);
  } else {
    bench_target("wspool >= 20x faster than oneTBB task_group", -1, "oneTBB unavailable");
  }
}

int main(void) {
  long next = fib_setup((int)bench_env_long("WSPOOL_BENCH_FIB_N", 32, 2, 45));
  fib_plain_setup(fib_n);
  char what[160];
  snprintf(what, sizeof what, "fib(%d) = %ld, one task per spawn, no cutoff (%.2fM spawns)",
           fib_n, fib_expected, (double)(next - 1) / 1e6);
  bench_header("bench_fib", what);

  const unsigned nthr[3] = {1, 2, 16};
  for (int i = 0; i < 3; i++) pools[i] = bench_pool((int)nthr[i], BENCH_DEFAULT);

  /* Round order: the rows the targets compare come first and next to each
   * other (Ts, take T1, T2, T16, oneTBB), so their paired ratios compare
   * runs made moments apart (bench_paired_ratio). */
  bench_variant v[] = {
      BENCH_SEQ_ROW("sequential fib()", fib_run_seq),
      BENCH_WSPOOL_ROW("wspool take T1", 1, run_take, pools[0], 0),
      BENCH_WSPOOL_ROW("wspool take T2", 2, run_take, pools[1], 0),
      BENCH_WSPOOL_ROW("wspool take T16 (on 2 cores)", 16, run_take, pools[2], 0),
      BENCH_WSPOOL_ROW("wspool typed T1", 1, run_typed, pools[0], 0),
      BENCH_WSPOOL_ROW("wspool typed T2", 2, run_typed, pools[1], 0),
      BENCH_WSPOOL_ROW("wspool typed T16 (on 2 cores)", 16, run_typed, pools[2], 0),
      BENCH_WSPOOL_ROW("wspool typed push/pop T1", 1, run_pushed, pools[0], 0),
      BENCH_WSPOOL_ROW("wspool typed push/pop T2", 2, run_pushed, pools[1], 0),
      BENCH_WSPOOL_ROW("wspool typed isolated T1", 1, run_isolated, pools[0], 0),
      BENCH_WSPOOL_ROW("wspool typed isolated T2", 2, run_isolated, pools[1], 0),
      BENCH_WSPOOL_ROW("wspool typed T1, plain calls", 1, fib_plain_run_typed, pools[0], 0),
      BENCH_WSPOOL_ROW("wspool take T1, plain calls", 1, fib_plain_run_take, pools[0], 0),
      BENCH_PEER_ROW("oneTBB task_group 2 thr", 2, HAVE_TBB, run_tbb, 0),
      BENCH_PEER_ROW("oneTBB task_group 1 thr", 1, HAVE_TBB, run_tbb, 0),
      BENCH_SEQ_ROW("sequential, both calls kept", run_seq_calls),
      BENCH_WSPOOL_ROW("wspool T1", 1, run_wspool, pools[0], 0),
      BENCH_WSPOOL_ROW("wspool T2", 2, run_wspool, pools[1], 0),
      BENCH_WSPOOL_ROW("wspool T16 (on 2 cores)", 16, run_wspool, pools[2], 0),
      BENCH_PEER_ROW("OpenMP tasks 1 thr", 1, HAVE_OMP, run_omp, 0),
      BENCH_PEER_ROW("OpenMP tasks 2 thr", 2, HAVE_OMP, run_omp, 0),
  };
  int nv = BENCH_COUNT(v);
  bench_measure(v, nv, bench_runs(), bench_budget());
  bench_table(v, nv);

  fib_rows r = find_rows(v, nv);
  print_medians(&r);
  print_targets(&r);

  for (int i = 0; i < 3; i++) pool_destroy(pools[i]);
  return bench_finish();
}
