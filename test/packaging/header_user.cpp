// SPDX-License-Identifier: MIT
// A user's C++ file for test header_warnings: wspool.hpp and the C API
// through it, compiled there with every warning the test names and -Werror.
#include <wspool.hpp>

#include <cstddef>
#include <vector>

static long tfib(int n);
POOL_TASK(long, tfib, int);

static long tfib(int n) {
  if (n < 2) return n;
  tfib_frame f;
  tfib_spawn(&f, n - 1);
  long y = tfib(n - 2);
  return tfib_sync(&f) + y;
}

int main() {
  long s = 0;
  wspool::join([&] { s += tfib(10); }, [] {});
  std::vector<int> v(100, 0);
  wspool::parallel_for(0, 100, [&](int i) { v[static_cast<std::size_t>(i)] = i; });
  int sum = wspool::parallel_reduce(
      0, 100, 0, [&](int a, int i) { return a + v[static_cast<std::size_t>(i)]; },
      [](int a, int b) { return a + b; });
  wspool::task_group g;
  g.run([] {});
  bool ok = g.wait();
  pool_worker_stats_t st;
  (void)pool_worker_stats(nullptr, 0, &st);
  return ok && s == 55 && sum == 4950 && !wspool::is_cancelled() ? 0 : 1;
}
