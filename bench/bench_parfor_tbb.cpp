/* SPDX-License-Identifier: MIT */
// oneTBB peer for bench_parfor: tbb::parallel_for with the auto_partitioner
// (its default) in a task_arena of `threads`.
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>
#include <tbb/task_arena.h>

#include <memory>

#include "bench_parfor.h"
#include "benchutil.h"
#include "peers.h"

static tbb::task_arena &arena_of(unsigned threads) {
  static std::unique_ptr<tbb::task_arena> arenas[65];
  if (threads > 64) threads = 64;
  if (!arenas[threads]) arenas[threads].reset(new tbb::task_arena((int)threads));
  return *arenas[threads];
}

extern "C" double bench_tbb_parfor(const uint32_t *work, uint64_t *out, size_t n,
                                   unsigned threads) {
  tbb::task_arena &a = arena_of(threads);
  double t0 = bench_now();
  a.execute([=] {
    tbb::parallel_for(
        tbb::blocked_range<size_t>(0, n),
        [=](const tbb::blocked_range<size_t> &r) {
          for (size_t i = r.begin(); i != r.end(); ++i) out[i] = bench_cost(i, work[i]);
        },
        tbb::auto_partitioner());
  });
  return bench_now() - t0;
}
