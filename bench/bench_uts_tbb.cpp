/* SPDX-License-Identifier: MIT */
// oneTBB peer for bench_uts: one task_group per node, a run() per child.
#include <tbb/task_arena.h>
#include <tbb/task_group.h>

#include <memory>
#include <vector>

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

// Arenas live for the whole program, like the wspool pools.
static tbb::task_arena &arena_of(unsigned threads) {
  static std::unique_ptr<tbb::task_arena> arenas[65];
  if (threads > 64) threads = 64;
  if (!arenas[threads]) arenas[threads].reset(new tbb::task_arena((int)threads));
  return *arenas[threads];
}

extern "C" double bench_tbb_uts(const struct uts_tree *tree, unsigned threads, long *nodes) {
  tbb::task_arena &a = arena_of(threads);
  long r = -1;
  double t0 = bench_now();
  a.execute([&] {
    uts_state root;
    uts_rng_init(&root, tree->seed);
    r = uts_tbb(tree, &root, 0);
  });
  double t = bench_now() - t0;
  *nodes = r;
  return t;
}
