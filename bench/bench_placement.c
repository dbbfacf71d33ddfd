/* SPDX-License-Identifier: MIT */
/* bench_placement: bound against unbound workers. Fork/join fib and a
 * uniform parallel_for on pools
 * with POOL_BIND_NONE, POOL_BIND_CORE and POOL_BIND_SPREAD, beside the
 * sequential program, as medians and ratios. There is no target on a
 * 2-core machine; the ratio is the figure. fib(30) and 4 * 10^6 items;
 * WSPOOL_BENCH_RUNS, WSPOOL_BENCH_BUDGET. */
#include <stdio.h>
#include <stdlib.h>
#include <wspool.h>

#include "bench_fib.h"
#include "benchutil.h"

/* This program's own spawn/sync kernel: the children's results start at 0,
 * a store that keeps GCC from inlining the recursion into itself as it
 * does bench_fib.h's fib_task, so the two compile to different code; this
 * program's figures are of this one. */
static void fib_task0(void *v) {
  fib_arg *a = v;
  if (a->n < 2) {
    a->r = a->n;
    return;
  }
  fib_arg x = {a->n - 1, 0}, y = {a->n - 2, 0};
  pool_task_t t;
  pool_spawn(NULL, &t, fib_task0, &x);
  fib_task0(&y);
  pool_sync(&t);
  a->r = x.r + y.r;
}

static size_t nitems = 4000000;
static double *data;

static __attribute__((noinline)) double item(size_t i) {
  double x = (double)(i & 1023);
  for (int k = 0; k < 20; k++) x = x * 0.999 + 0.5;
  return x;
}
static void loop_body(size_t b, size_t e, void *ctx) {
  (void)ctx;
  for (size_t i = b; i < e; i++) data[i] = item(i);
}
static double check_loop(void) {
  double s = 0;
  for (size_t i = 0; i < nitems; i += 997) s += data[i] - item(i);
  return s;
}

static pool_t *pools[3];
static const char *bind_names[3] = {"none", "core", "spread"};

/* The root and an empty sibling through pool_join from main. */
static double run_fib(bench_variant *v) {
  fib_arg a = {fib_n, 0};
  double t0 = bench_now();
  pool_join(pools[v->param], fib_task0, &a, fib_task0, &(fib_arg){0, 0});
  double t = bench_now() - t0;
  fib_check(v->name, a.r);
  return t;
}

static double run_loop_seq(bench_variant *v) {
  (void)v;
  double t0 = bench_now();
  loop_body(0, nitems, NULL);
  double t = bench_now() - t0;
  if (check_loop() != 0) bench_fail("loop sequential wrong");
  return t;
}

static double run_loop(bench_variant *v) {
  for (size_t i = 0; i < nitems; i += 997) data[i] = -1;
  double t0 = bench_now();
  pool_parallel_for(pools[v->param], 0, nitems, 0, loop_body, NULL);
  double t = bench_now() - t0;
  if (check_loop() != 0) bench_fail("parallel_for on bind=%s wrong", bind_names[v->param]);
  return t;
}

int main(void) {
  fib_setup(30);
  data = malloc(nitems * sizeof(double));
  if (!data) return 1;
  for (int k = 0; k < 3; k++) {
    static const pool_bind_t binds[3] = {POOL_BIND_NONE, POOL_BIND_CORE, POOL_BIND_SPREAD};
    pools[k] = bench_pool(BENCH_DEFAULT, binds[k]);
    printf("bind=%-6s workers:", bind_names[k]);
    for (unsigned i = 0; i < pool_threads(pools[k]); i++)
      printf(" %d", pool_worker_cpu(pools[k], i));
    printf("\n");
  }
  unsigned nt = pool_threads(pools[0]);
  /* The bound rows are "peers" of the unbound one, so the table's
   * T/Twspool column compares each with bind=none. */
  bench_variant fib[] = {
      BENCH_SEQ_ROW("fib sequential", fib_run_seq),
      BENCH_WSPOOL_ROW("fib bind=none", nt, run_fib, NULL, 0),
      BENCH_PEER_ROW("fib bind=core", nt, 1, run_fib, 1),
      BENCH_PEER_ROW("fib bind=spread", nt, 1, run_fib, 2),
  };
  bench_variant loop[] = {
      BENCH_SEQ_ROW("parallel_for sequential", run_loop_seq),
      BENCH_WSPOOL_ROW("parallel_for bind=none", nt, run_loop, NULL, 0),
      BENCH_PEER_ROW("parallel_for bind=core", nt, 1, run_loop, 1),
      BENCH_PEER_ROW("parallel_for bind=spread", nt, 1, run_loop, 2),
  };
  int runs = bench_runs();
  double budget = bench_budget();
  printf("\nfork/join fib(%d), one task per spawn, %u workers (T/Twspool: time of bind=none / this)\n",
         fib_n, nt);
  bench_measure(fib, 4, runs, budget / 2);
  bench_table(fib, 4);
  printf("\nparallel_for, %zu uniform items, automatic grain, %u workers\n", nitems, nt);
  bench_measure(loop, 4, runs, budget / 2);
  bench_table(loop, 4);
  printf("\nbound/unbound time ratio (median; < 1 means binding helped):\n");
  for (int k = 1; k < 3; k++)
    printf("  bind=%-6s fib %.3f   parallel_for %.3f\n", bind_names[k], fib[k + 1].med / fib[1].med,
           loop[k + 1].med / loop[1].med);
  printf("target: none on this machine (issue 5 reports the ratio only)\n");
  for (int k = 0; k < 3; k++) pool_destroy(pools[k]);
  free(data);
  return bench_exit_status();
}
