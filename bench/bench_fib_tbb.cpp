/* SPDX-License-Identifier: MIT */
// oneTBB peer for bench_fib: one task_group per node, no cutoff.
#include <tbb/task_arena.h>
#include <tbb/task_group.h>

#include <memory>

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

// Arenas live for the whole program, like the wspool pools: the warm-up run
// pays for their start, the measured runs do not.
static tbb::task_arena &arena_of(unsigned threads) {
  static std::unique_ptr<tbb::task_arena> arenas[65];
  if (threads > 64) threads = 64;
  if (!arenas[threads]) arenas[threads].reset(new tbb::task_arena((int)threads));
  return *arenas[threads];
}

extern "C" double bench_tbb_fib(int n, unsigned threads, long *result) {
  tbb::task_arena &a = arena_of(threads);
  long r = -1;
  double t0 = bench_now();
  a.execute([&] { r = fib_tbb(n); });
  double t = bench_now() - t0;
  *result = r;
  return t;
}
