/* SPDX-License-Identifier: MIT */
/* Bound against unbound workers (issue 5): fork/join fib and a uniform
 * parallel_for on pools with POOL_BIND_NONE, POOL_BIND_CORE and
 * POOL_BIND_SPREAD, beside the sequential program, as medians and ratios.
 * There is no target on a 2-core machine; the ratio is the figure. */
#include <stdio.h>
#include <stdlib.h>
#include <wspool.h>

#include "benchutil.h"

typedef struct fib_arg {
  int n;
  long r;
} fib_arg;

static void fib_task(void *v) {
  fib_arg *a = v;
  if (a->n < 2) {
    a->r = a->n;
    return;
  }
  fib_arg x = {a->n - 1, 0}, y = {a->n - 2, 0};
  pool_task_t t;
  pool_spawn(NULL, &t, fib_task, &x);
  fib_task(&y);
  pool_sync(&t);
  a->r = x.r + y.r;
}

static __attribute__((noinline)) long fib_seq(int n) { return n < 2 ? n : fib_seq(n - 1) + fib_seq(n - 2); }

enum { FIB_N = 30 };
static long fib_want;

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

static double run_fib_seq(bench_variant *v) {
  (void)v;
  double t0 = bench_now();
  long r = fib_seq(FIB_N);
  double t = bench_now() - t0;
  if (r != fib_want) bench_fail("fib sequential wrong");
  return t;
}

static double run_fib(bench_variant *v) {
  fib_arg a = {FIB_N, 0};
  double t0 = bench_now();
  pool_join(pools[v->param], fib_task, &a, fib_task, &(fib_arg){0, 0});
  double t = bench_now() - t0;
  if (a.r != fib_want) bench_fail("fib on bind=%s wrong", bind_names[v->param]);
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
  fib_want = fib_seq(FIB_N);
  data = malloc(nitems * sizeof(double));
  if (!data) return 1;
  for (int k = 0; k < 3; k++) {
    static const pool_bind_t binds[3] = {POOL_BIND_NONE, POOL_BIND_CORE, POOL_BIND_SPREAD};
    pools[k] = bench_pool(BENCH_DEFAULT, binds[k]);
    printf("bind=%-6s workers:", bind_names[k]);
    for (unsigned i = 0; i < pool_threads(pools[k]); i++) printf(" %d", pool_worker_cpu(pools[k], i));
    printf("\n");
  }
  unsigned nt = pool_threads(pools[0]);
  bench_variant fib[] = {
      {.name = "fib sequential", .threads = 1, .kind = BENCH_SEQ, .available = 1, .run = run_fib_seq},
      {.name = "fib bind=none", .threads = nt, .kind = BENCH_WSPOOL, .available = 1, .run = run_fib, .param = 0},
      {.name = "fib bind=core", .threads = nt, .kind = BENCH_PEER, .available = 1, .run = run_fib, .param = 1},
      {.name = "fib bind=spread", .threads = nt, .kind = BENCH_PEER, .available = 1, .run = run_fib, .param = 2},
  };
  bench_variant loop[] = {
      {.name = "parallel_for sequential", .threads = 1, .kind = BENCH_SEQ, .available = 1, .run = run_loop_seq},
      {.name = "parallel_for bind=none", .threads = nt, .kind = BENCH_WSPOOL, .available = 1, .run = run_loop, .param = 0},
      {.name = "parallel_for bind=core", .threads = nt, .kind = BENCH_PEER, .available = 1, .run = run_loop, .param = 1},
      {.name = "parallel_for bind=spread", .threads = nt, .kind = BENCH_PEER, .available = 1, .run = run_loop, .param = 2},
  };
  int runs = bench_runs();
  double budget = bench_budget();
  printf("\nfork/join fib(%d), one task per spawn, %u workers (T/Twspool: time of bind=none / this)\n", FIB_N, nt);
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
