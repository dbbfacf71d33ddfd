/* SPDX-License-Identifier: MIT */
/* bench_cpp: what the C++ layer (wspool.hpp) costs over the C calls.
 *
 * The same two programs written twice, each row beside its twin:
 *   fib(n)        no cutoff, one task per spawn: the C rows spawn, recurse
 *                 and pool_take (bench_fib's fastest form); the C++ rows
 *                 call wspool::join with two lambdas, which expands to the
 *                 same calls: capturing n by value ([&x, n], the C rows'
 *                 data flow), and everything by reference ([&]), which
 *                 makes n addressable and costs the leaves a prologue
 *                 (docs/cpp.md). Roots are submitted from main, which
 *                 waits.
 *   parallel_for  out[i] = bench_cost(i, k) over n items (bench_parfor.h):
 *                 pool_parallel_for with a range body against
 *                 wspool::pool::parallel_for with a per-index lambda. Two
 *                 loads: light (k = 1, the loop's own overhead shows) and
 *                 uniform (k = 40).
 * 1 and 2 workers each; the sequential programs beside them. Printed: the
 * medians, and the C++/C ratio of each pair (paired: the median over
 * rounds of the ratio of two runs made moments apart) with the ratio of
 * the medians; 1.00 is "costs nothing". No target: a ratio within the
 * noise of this machine is the expected outcome. At 1 step per item the
 * two loop bodies compile to the same instructions and their times follow
 * where the loop lands in the code, so both halves are built with every
 * function and loop aligned to 64 bytes (bench/meson.build).
 * WSPOOL_BENCH_FIB_N (default 30), WSPOOL_BENCH_CPP_N (items, default
 * 4 * 10^6), WSPOOL_BENCH_RUNS, WSPOOL_BENCH_BUDGET as everywhere. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wspool.h>

#include "bench_cpp.h"
#include "bench_fib.h"
#include "bench_parfor.h"
#include "benchutil.h"

static size_t n_items;
static uint32_t iters;
static uint64_t *out, *ref;
static pool_t *cpools[2];

static double run_fib_c(bench_variant *v) { return fib_run_root(v, pfib_task); }

static double run_fib_cpp(bench_variant *v) {
  double t0 = bench_now();
  long r = bench_cpp_fib((int)v->param & 1, fib_n, (int)v->param >> 1);
  double t = bench_now() - t0;
  fib_check(v->name, r);
  return t;
}

static void check_out(const char *who) { bench_check_items(who, NULL, out, ref, n_items); }

static double run_loop_seq(bench_variant *v) {
  memset(out, 0, n_items * sizeof *out);
  double t0 = bench_now();
  for (size_t i = 0; i < n_items; i++) out[i] = bench_cost(i, iters);
  double t = bench_now() - t0;
  check_out(v->name);
  return t;
}

static void pf_body(size_t lo, size_t hi, void *ctx) {
  (void)ctx;
  for (size_t i = lo; i < hi; i++) out[i] = bench_cost(i, iters);
}

static double run_loop_c(bench_variant *v) {
  memset(out, 0, n_items * sizeof *out);
  double t0 = bench_now();
  int rc = pool_parallel_for(v->ctx, 0, n_items, 0, pf_body, NULL);
  double t = bench_now() - t0;
  if (rc) bench_fail("%s: %s", v->name, pool_strerror(rc));
  check_out(v->name);
  return t;
}

static double run_loop_cpp(bench_variant *v) {
  memset(out, 0, n_items * sizeof *out);
  double t0 = bench_now();
  int rc = bench_cpp_parfor((int)v->param, out, n_items, iters);
  double t = bench_now() - t0;
  if (rc) bench_fail("%s: failed", v->name);
  check_out(v->name);
  return t;
}

static void pair_line(bench_variant *v, int nv, const char *cpp, const char *c) {
  bench_variant *a = bench_find(v, nv, cpp), *b = bench_find(v, nv, c);
  printf("  %-28s / %-28s paired %.3f   medians %.3f\n", cpp, c, bench_paired_ratio(a, b),
         a->med / b->med);
}

static void fib_part(double budget) {
  printf("\n-- fib(%d)\n", fib_n);
  bench_variant f[] = {
      BENCH_SEQ_ROW("sequential fib()", fib_run_seq),
      BENCH_WSPOOL_ROW("C pool_take T1", 1, run_fib_c, cpools[0], 0),
      BENCH_WSPOOL_ROW("C++ wspool::join T1", 1, run_fib_cpp, NULL, 0),
      BENCH_WSPOOL_ROW("C++ join [&] T1", 1, run_fib_cpp, NULL, 2),
      BENCH_WSPOOL_ROW("C pool_take T2", 2, run_fib_c, cpools[1], 0),
      BENCH_WSPOOL_ROW("C++ wspool::join T2", 2, run_fib_cpp, NULL, 1),
      BENCH_WSPOOL_ROW("C++ join [&] T2", 2, run_fib_cpp, NULL, 3),
  };
  int nf = BENCH_COUNT(f);
  bench_measure(f, nf, bench_runs(), budget);
  bench_table(f, nf);
  printf("C++ / C (1.00 = no cost):\n");
  pair_line(f, nf, "C++ wspool::join T1", "C pool_take T1");
  pair_line(f, nf, "C++ wspool::join T2", "C pool_take T2");
  pair_line(f, nf, "C++ join [&] T1", "C pool_take T1");
  pair_line(f, nf, "C++ join [&] T2", "C pool_take T2");
}

/* One load of the parallel_for part: `steps` of bench_cost per item. */
static void loop_part(const char *load, uint32_t steps, double budget) {
  iters = steps;
  for (size_t i = 0; i < n_items; i++) ref[i] = bench_cost(i, iters);
  printf("\n-- parallel_for, %s\n", load);
  bench_variant v[] = {
      BENCH_SEQ_ROW("plain loop", run_loop_seq),
      BENCH_WSPOOL_ROW("C pool_parallel_for T1", 1, run_loop_c, cpools[0], 0),
      BENCH_WSPOOL_ROW("C++ parallel_for T1", 1, run_loop_cpp, NULL, 0),
      BENCH_WSPOOL_ROW("C pool_parallel_for T2", 2, run_loop_c, cpools[1], 0),
      BENCH_WSPOOL_ROW("C++ parallel_for T2", 2, run_loop_cpp, NULL, 1),
  };
  int nv = BENCH_COUNT(v);
  bench_measure(v, nv, bench_runs(), budget);
  bench_table(v, nv);
  printf("C++ / C (1.00 = no cost):\n");
  pair_line(v, nv, "C++ parallel_for T1", "C pool_parallel_for T1");
  pair_line(v, nv, "C++ parallel_for T2", "C pool_parallel_for T2");
}

int main(void) {
  fib_setup((int)bench_env_long("WSPOOL_BENCH_FIB_N", 30, 2, 45));
  n_items = (size_t)bench_env_long("WSPOOL_BENCH_CPP_N", 4000000, 1, 1L << 30);
  char what[200];
  snprintf(what, sizeof what,
           "the C++ layer against the C calls: fib(%d) (no cutoff) and parallel_for over %zu items",
           fib_n, n_items);
  bench_header("bench_cpp", what);

  const unsigned nthr[2] = {1, 2};
  for (int i = 0; i < 2; i++) {
    cpools[i] = bench_pool((int)nthr[i], BENCH_DEFAULT);
    if (bench_cpp_pool(i, nthr[i]) != 0) return 1;
  }
  out = malloc(n_items * sizeof *out);
  ref = malloc(n_items * sizeof *ref);
  if (!out || !ref) {
    fprintf(stderr, "bench_cpp: out of memory\n");
    return 1;
  }
  double budget = bench_budget() / 3;
  fib_part(budget);
  loop_part("light (1 step per item)", 1, budget);
  loop_part("uniform (40 steps per item)", 40, budget);

  bench_cpp_free();
  for (int i = 0; i < 2; i++) pool_destroy(cpools[i]);
  free(out);
  free(ref);
  return bench_finish();
}
