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

// Past six arguments, and the one-call run from outside the pool.
static long wide(int a, long b, short c, unsigned d, double e, const char *f, float g, int h, int i,
                 int j, int k, int l) {
  return a + b + c + static_cast<long>(d) + static_cast<long>(e) + f[0] + static_cast<long>(g) +
         h + i + j + k + l;
}
POOL_TASK(long, wide, int, long, short, unsigned, double, const char *, float, int, int, int, int,
          int);
static void vwide(long *out, int a) { *out = a; }
POOL_VOID_TASK(vwide, long *, int);

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
  long wr = 0, vr = 0;
  if (wide_run_rc(nullptr, &wr, 1, 2, 3, 4u, 5.0, "\x06", 7.0f, 8, 9, 10, 11, 12) != 0 ||
      wide_run(nullptr, 1, 2, 3, 4u, 5.0, "\x06", 7.0f, 8, 9, 10, 11, 12) != wr || wr != 78)
    return 1;
  vwide_run(nullptr, &vr, 3);
  if (vwide_run_rc(nullptr, &vr, 4) != 0 || vr != 4) return 1;
  if (wide_push(nullptr, 1, 2, 3, 4u, 5.0, "\x06", 7.0f, 8, 9, 10, 11, 12) != 0 ||
      vwide_push(nullptr, &vr, 5) != 0)
    return 1;
  vwide_pop();
  if (wide_pop() != 78 || vwide_push(nullptr, &vr, 6) != 0 || vwide_pop_rc() != 0 || vr != 6)
    return 1;
  pool_worker_stats_t st;
  (void)pool_worker_stats(nullptr, 0, &st);
  return ok && s == 55 && sum == 4950 && !wspool::is_cancelled() ? 0 : 1;
}
