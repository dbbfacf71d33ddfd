/* SPDX-License-Identifier: MIT */
// The task arenas of the oneTBB shims (bench_*_tbb.cpp; bench_submit's has
// its own, with no master slot). C++ only.
#ifndef WSPOOL_BENCH_TBB_H
#define WSPOOL_BENCH_TBB_H

#include <tbb/task_arena.h>

#include <memory>
#include <utility>

#include "benchutil.h"

// The arena of `threads` (at most 64). Arenas live for the whole program,
// like the wspool pools: the warm-up run pays for their start, the measured
// runs do not.
inline tbb::task_arena &bench_tbb_arena(unsigned threads) {
  static std::unique_ptr<tbb::task_arena> arenas[65];
  if (threads > 64) threads = 64;
  if (!arenas[threads]) arenas[threads].reset(new tbb::task_arena((int)threads));
  return *arenas[threads];
}

// The seconds f() takes run inside the arena of `threads`: the timed region
// of every oneTBB row but bench_submit's.
template <class F>
double bench_tbb_timed(unsigned threads, F &&f) {
  tbb::task_arena &a = bench_tbb_arena(threads);
  double t0 = bench_now();
  a.execute(std::forward<F>(f));
  return bench_now() - t0;
}

#endif  // WSPOOL_BENCH_TBB_H
