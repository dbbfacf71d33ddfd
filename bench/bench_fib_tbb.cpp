/* SPDX-License-Identifier: MIT */
// oneTBB peer for bench_fib: one task_group per node, no cutoff.
#include <tbb/task_group.h>

#include "bench_tbb.h"
#include "benchutil.h"
#include "peers.h"

static long fib_tbb(int n) {
  if (n < 2) return n;
  long x, y;
  tbb::task_group g;
  g.run([&] { x = fib_tbb(n - 1); });
  y = fib_tbb(n - 2);
  g.wait();
  return x + y;
}

extern "C" double bench_tbb_fib(int n, unsigned threads, long *result) {
  long r = -1;
  double t = bench_tbb_timed(threads, [&] { r = fib_tbb(n); });
  *result = r;
  return t;
}
