/* SPDX-License-Identifier: MIT */
// oneTBB peer for bench_nqueens: one task_group per node, g.run per placement.
#include <tbb/task_group.h>

#include <cstring>

#include "bench_nqueens.h"
#include "bench_tbb.h"
#include "benchutil.h"
#include "peers.h"

static long nq_tbb(int n, int row, const signed char *b) {
  if (row == n) return 1;
  long counts[NQ_MAX];
  signed char boards[NQ_MAX][NQ_MAX];
  int k = 0;
  tbb::task_group g;
  for (int c = 0; c < n; c++) {
    if (!nq_ok(b, row, c)) continue;
    std::memcpy(boards[k], b, (size_t)row);
    boards[k][row] = (signed char)c;
    g.run([&counts, &boards, n, row, k] { counts[k] = nq_tbb(n, row + 1, boards[k]); });
    k++;
  }
  g.wait();
  long count = 0;
  for (int i = 0; i < k; i++) count += counts[i];
  return count;
}

extern "C" double bench_tbb_nqueens(int n, unsigned threads, long *result) {
  signed char b[NQ_MAX] = {0};
  long r = -1;
  double t = bench_tbb_timed(threads, [&] { r = nq_tbb(n, 0, b); });
  *result = r;
  return t;
}
