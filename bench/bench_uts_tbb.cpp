/* SPDX-License-Identifier: MIT */
// oneTBB peer for bench_uts: one task_group per node, a run() per child.
#include <tbb/task_group.h>

#include <vector>

#include "bench_tbb.h"
#include "bench_uts.h"
#include "benchutil.h"
#include "peers.h"

static long uts_tbb(const uts_tree *t, const uts_state *s, int height) {
  int n = uts_children(t, s, height);
  if (n == 0) return 1;
  long onstack[16];
  std::vector<long> heap(n > 16 ? (size_t)n : 0);
  long *cnt = n > 16 ? heap.data() : onstack;
  tbb::task_group g;
  for (int i = 0; i < n; i++)
    g.run([&, i] {
      uts_state k;
      uts_rng_spawn(s, &k, i);
      cnt[i] = uts_tbb(t, &k, height + 1);
    });
  g.wait();
  long c = 1;
  for (int i = 0; i < n; i++) c += cnt[i];
  return c;
}

extern "C" double bench_tbb_uts(const struct uts_tree *tree, unsigned threads, long *nodes) {
  long r = -1;
  double t = bench_tbb_timed(threads, [&] {
    uts_state root;
    uts_rng_init(&root, tree->seed);
    r = uts_tbb(tree, &root, 0);
  });
  *nodes = r;
  return t;
}
