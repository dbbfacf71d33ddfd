/* SPDX-License-Identifier: MIT */
// oneTBB peer for bench_cancel: a search that stops at the hit. The body
// that finds the key cancels the parallel_for's task_group_context; the
// others poll it between blocks of BENCH_CANCEL_BLOCK items, and the
// scheduler skips the subranges not yet started.
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>
#include <tbb/task_group.h>

#include <atomic>

#include "bench_cancel.h"
#include "bench_tbb.h"
#include "benchutil.h"

extern "C" double bench_tbb_cancel_search(size_t n, uint64_t key, unsigned threads, size_t *found,
                                          size_t *examined) {
  std::atomic<size_t> hit{SIZE_MAX}, seen{0};
  double t = bench_tbb_timed(threads, [&] {
    tbb::task_group_context ctx;
    tbb::parallel_for(
        tbb::blocked_range<size_t>(0, n),
        [&](const tbb::blocked_range<size_t> &r) {
          for (size_t lo = r.begin(); lo < r.end(); lo += BENCH_CANCEL_BLOCK) {
            if (ctx.is_group_execution_cancelled()) return;
            size_t hi = r.end() - lo > BENCH_CANCEL_BLOCK ? lo + BENCH_CANCEL_BLOCK : r.end();
            size_t i = bench_scan(lo, hi, key);
            seen.fetch_add((i < hi ? i + 1 : hi) - lo, std::memory_order_relaxed);
            if (i < hi) {
              size_t none = SIZE_MAX;
              hit.compare_exchange_strong(none, i);
              ctx.cancel_group_execution();
              return;
            }
          }
        },
        tbb::auto_partitioner(), ctx);
  });
  *found = hit.load();
  *examined = seen.load();
  return t;
}
