/* SPDX-License-Identifier: MIT */
// oneTBB peer for bench_parfor: tbb::parallel_for with the auto_partitioner
// (its default) in a task_arena of `threads`.
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>

#include "bench_parfor.h"
#include "bench_tbb.h"
#include "benchutil.h"
#include "peers.h"

extern "C" double bench_tbb_parfor(const uint32_t *work, uint64_t *out, size_t n,
                                   unsigned threads) {
  return bench_tbb_timed(threads, [=] {
    tbb::parallel_for(
        tbb::blocked_range<size_t>(0, n),
        [=](const tbb::blocked_range<size_t> &r) {
          for (size_t i = r.begin(); i != r.end(); ++i) out[i] = bench_cost(i, work[i]);
        },
        tbb::auto_partitioner());
  });
}
