/* SPDX-License-Identifier: MIT */
/* fib(n) with one task per spawn and no cutoff: the kernels and the run
 * functions bench_fib.c, bench_cpp.c and bench_placement.c share.
 *
 * Every function here is `static`, so each program compiles its own copy
 * exactly as if it were written in its file (the measured code is the same
 * instructions in each program); `unused` silences the ones a program
 * does not call. */
#ifndef WSPOOL_BENCH_FIB_H
#define WSPOOL_BENCH_FIB_H

#include <wspool.h>
#include <wspool_typed.h>

#include "benchutil.h"

#define FIB_SHARED static __attribute__((unused))

/* The sequential program, Ts: plain recursion, a call per node. */
FIB_SHARED __attribute__((noinline)) long fib(int n) {
  if (n < 2) return n;
  return fib(n - 1) + fib(n - 2);
}

/* A task's argument: n in, r out. Whoever runs the task writes r, so, as
 * with the peers' `long x;`, nothing initialises it. */
typedef struct fib_arg {
  int n;
  long r;
} fib_arg;

/* pool_spawn/pool_sync: the child's argument and result in its fib_arg,
 * the frame on the stack. */
FIB_SHARED void fib_task(void *p) {
  fib_arg *a = p;
  if (a->n < 2) {
    a->r = a->n;
    return;
  }
  fib_arg x, y;
  x.n = a->n - 1;
  y.n = a->n - 2;
  pool_task_t t;
  pool_spawn(NULL, &t, fib_task, &x);
  fib_task(&y);
  pool_sync(&t);
  a->r = x.r + y.r;
}

/* pool_spawn/pool_take: the caller takes an unstarted task back and calls
 * pfib() directly, so arguments and results stay in registers; only a
 * stolen task goes through its frame. */
FIB_SHARED long pfib(int n);

FIB_SHARED void pfib_task(void *p) {
  fib_arg *a = p;
  a->r = pfib(a->n);
}

FIB_SHARED long pfib(int n) {
  if (n < 2) return n;
  fib_arg x;
  x.n = n - 1;
  pool_task_t t;
  pool_spawn(NULL, &t, pfib_task, &x);
  long y = pfib(n - 2);
  if (pool_take(&t) == POOL_TAKEN) x.r = pfib(n - 1);
  return x.r + y;
}

/* The same tree as a typed task: tfib_spawn stores n in the frame;
 * tfib_sync takes the frame back and calls tfib() directly when nobody
 * stole it, or reads the result the thief stored. */
FIB_SHARED long tfib(int n);
POOL_TASK(long, tfib, int);

FIB_SHARED long tfib(int n) {
  if (n < 2) return n;
  tfib_frame f;
  tfib_spawn(&f, n - 1);
  long y = tfib(n - 2);
  return tfib_sync(&f) + y;
}

FIB_SHARED void tfib_root(void *p) {
  fib_arg *a = p;
  a->r = tfib(a->n);
}

/* bench_fib_plain.c (bench_fib only): fib_setup and the take and typed
 * rows compiled with POOL_NO_TRAMPOLINE, for the trampolines' A/B rows. */
void fib_plain_setup(int n);
double fib_plain_run_take(bench_variant *v);
double fib_plain_run_typed(bench_variant *v);

/* ---- the program around them ---- */

/* The n every row computes and its answer (fib_setup sets both). */
static int fib_n;
static long fib_expected;

/* fib_n = n and fib_expected, by iteration; returns fib(n + 1), as the
 * tree has fib(n + 1) - 1 internal nodes (spawns). */
FIB_SHARED long fib_setup(int n) {
  fib_n = n;
  long a = 0, b = 1;
  for (int i = 0; i < fib_n; i++) {
    long c = a + b;
    a = b;
    b = c;
  }
  fib_expected = a;
  return b;
}

FIB_SHARED void fib_check(const char *who, long r) {
  if (r != fib_expected)
    bench_fail("%s: fib(%d) = %ld, expected %ld", who, fib_n, r, fib_expected);
}

/* Ts: the plain recursion f (fib, or bench_fib's variant of it). */
FIB_SHARED double fib_run_seq_of(bench_variant *v, long (*f)(int)) {
  double t0 = bench_now();
  long r = f(fib_n);
  double t = bench_now() - t0;
  fib_check(v->name, r);
  return t;
}

FIB_SHARED double fib_run_seq(bench_variant *v) { return fib_run_seq_of(v, fib); }

/* A wspool row: the root task (fib_task, pfib_task, ...) submitted into the
 * variant's pool from main, which waits until the pool is idle. */
FIB_SHARED double fib_run_root(bench_variant *v, pool_fn root_task) {
  fib_arg root = {fib_n, -1};
  double t = bench_run_root(v, root_task, &root);
  fib_check(v->name, root.r);
  return t;
}

#undef FIB_SHARED

#endif /* WSPOOL_BENCH_FIB_H */
