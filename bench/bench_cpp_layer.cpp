/* SPDX-License-Identifier: MIT */
/* bench_cpp's C++ rows: fib and parallel_for written with wspool.hpp, the
 * way a C++ user would (bench_cpp.h). */
#include <wspool.hpp>

#include <cstdio>
#include <memory>

#include "bench_cpp.h"
#include "bench_parfor.h"

namespace {

std::unique_ptr<wspool::pool> pools[4];

/* n by value, results by reference: the C rows' data flow (n goes into
 * the spawned task's argument, the results come back through memory). */
long fib(int n) {
  if (n < 2) return n;
  long x, y;
  wspool::join([&y, n] { y = fib(n - 2); }, [&x, n] { x = fib(n - 1); });
  return x + y;
}

/* Everything by reference: n becomes addressable, and GCC then stores it
 * on entry, before the base-case test, so every leaf pays the full
 * prologue (docs/cpp.md). */
long fib_ref(int n) {
  if (n < 2) return n;
  long x, y;
  wspool::join([&] { y = fib_ref(n - 2); }, [&] { x = fib_ref(n - 1); });
  return x + y;
}

struct fib_root {
  int n;
  long r;
};

void fib_root_task(void *p) {
  fib_root *a = static_cast<fib_root *>(p);
  a->r = fib(a->n);
}

void fib_ref_root_task(void *p) {
  fib_root *a = static_cast<fib_root *>(p);
  a->r = fib_ref(a->n);
}

}  // namespace

extern "C" int bench_cpp_pool(int slot, unsigned threads) {
  try {
    pools[slot] = std::make_unique<wspool::pool>(threads);
    return 0;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "bench_cpp: %s\n", e.what());
    return -1;
  }
}

extern "C" void bench_cpp_free(void) {
  for (auto &p : pools) p.reset();
}

/* The root goes in like the C rows' (pool_submit, pool_wait_idle): what
 * differs is the recursion, which is where the layer could cost. */
extern "C" long bench_cpp_fib(int slot, int n, int by_ref) {
  fib_root root = {n, -1};
  pool_t *p = pools[slot]->get();
  if (pool_submit(p, by_ref ? fib_ref_root_task : fib_root_task, &root) != 0 ||
      pool_wait_idle(p) != 0)
    return -1;
  return root.r;
}

extern "C" int bench_cpp_parfor(int slot, uint64_t *out, size_t n, uint32_t iters) {
  try {
    pools[slot]->parallel_for(std::size_t{0}, n, [=](std::size_t i) { out[i] = bench_cost(i, iters); });
    return 0;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "bench_cpp: %s\n", e.what());
    return -1;
  }
}
