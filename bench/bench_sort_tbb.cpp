/* SPDX-License-Identifier: MIT */
// oneTBB peer for bench_sort: the same cilksort with tbb::task_group.
#include <tbb/task_group.h>

#include "bench_sort.h"
#include "bench_tbb.h"
#include "benchutil.h"
#include "peers.h"

static void t_merge(const int32_t *a, size_t na, const int32_t *b, size_t nb, int32_t *d) {
  sort_larger_first(&a, &na, &b, &nb);
  if (na + nb < MERGE_CUTOFF) {
    seq_merge(a, na, b, nb, d);
    return;
  }
  size_t sa, sb;
  sort_split(a, na, b, nb, &sa, &sb);
  tbb::task_group g;
  g.run([=] { t_merge(a, sa, b, sb, d); });
  t_merge(a + sa, na - sa, b + sb, nb - sb, d + sa + sb);
  g.wait();
}

static void t_sort(int32_t *a, int32_t *t, size_t n) {
  if (n < SORT_CUTOFF) {
    seq_quick(a, n);
    return;
  }
  size_t q = n / 4;
  tbb::task_group g;
  g.run([=] { t_sort(a, t, q); });
  g.run([=] { t_sort(a + q, t + q, q); });
  g.run([=] { t_sort(a + 2 * q, t + 2 * q, q); });
  t_sort(a + 3 * q, t + 3 * q, n - 3 * q);
  g.wait();
  g.run([=] { t_merge(a, q, a + q, q, t); });
  t_merge(a + 2 * q, q, a + 3 * q, n - 3 * q, t + 2 * q);
  g.wait();
  t_merge(t, 2 * q, t + 2 * q, n - 2 * q, a);
}

extern "C" double bench_tbb_sort(int32_t *a, int32_t *tmp, size_t n, unsigned threads) {
  return bench_tbb_timed(threads, [=] { t_sort(a, tmp, n); });
}
