/* SPDX-License-Identifier: MIT */
/* cpp_sort: the C++ layer (wspool.hpp) on a small program.
 *
 * Fills an array in parallel (wspool::parallel_for), sorts it with a
 * parallel quicksort (wspool::join on the two partitions, std::sort below
 * a cutoff), checks it with a parallel reduction that keeps index order
 * (wspool::parallel_reduce: "is the concatenation sorted?", a combine that
 * is associative, not commutative), sums it in a task_group, and shows an
 * exception thrown inside a task coming out of the join that waits for it.
 *
 *   usage: cpp_sort [n [workers]]   (default 10^7 items, one worker per CPU)
 * Exits 0 only when the array is sorted, is a permutation of the input
 * (same sum and same xor), and the exception arrived. */
#include <wspool.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

uint64_t mix(uint64_t i) {
  uint64_t x = i * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  return x ^ (x >> 29);
}

/* Quicksort: partition around the median of three, then sort both sides
 * with join. Below the cutoff a task is not worth its cost: std::sort. */
void psort(uint64_t *a, std::ptrdiff_t n) {
  if (n < 4096) {
    std::sort(a, a + n);
    return;
  }
  uint64_t x = a[0], y = a[n / 2], z = a[n - 1];
  uint64_t pivot = std::max(std::min(x, y), std::min(std::max(x, y), z));
  uint64_t *mid1 = std::partition(a, a + n, [pivot](uint64_t v) { return v < pivot; });
  uint64_t *mid2 = std::partition(mid1, a + n, [pivot](uint64_t v) { return v == pivot; });
  std::ptrdiff_t left = mid1 - a, right = (a + n) - mid2;
  wspool::join([a, left] { psort(a, left); }, [mid2, right] { psort(mid2, right); });
}

/* The reduction's accumulator: the first and last value of a stretch, and
 * whether the stretch is sorted. Trivially copyable, as parallel_reduce
 * requires. */
struct stretch {
  uint64_t first, last;
  bool sorted, empty;
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char **argv) {
  long n = argc > 1 ? std::atol(argv[1]) : 10000000;
  long workers = argc > 2 ? std::atol(argv[2]) : 0;
  if (n < 1 || workers < 0 || workers > static_cast<long>(POOL_MAX_THREADS)) {
    std::fprintf(stderr, "usage: %s [n (>= 1) [workers (0 = one per CPU)]]\n", argv[0]);
    return 1;
  }
  try {
    wspool::pool pool(static_cast<unsigned>(workers)); /* destroyed at the end of the block */
    std::vector<uint64_t> v(static_cast<std::size_t>(n));
    uint64_t *a = v.data();

    pool.parallel_for(0L, n, [a](long i) { a[i] = mix(static_cast<uint64_t>(i)); });
    uint64_t sum_in = 0, xor_in = 0;
    for (long i = 0; i < n; i++) {
      sum_in += a[i];
      xor_in ^= a[i];
    }

    auto t0 = std::chrono::steady_clock::now();
    pool.join([a, n] { psort(a, n); }, [] {}); /* from main: runs inside the pool */
    double t_sort = seconds_since(t0);

    stretch none = {0, 0, true, true};
    stretch s = pool.parallel_reduce(
        0L, n, none,
        [a](stretch acc, long i) {
          if (acc.empty) return stretch{a[i], a[i], true, false};
          return stretch{acc.first, a[i], acc.sorted && acc.last <= a[i], false};
        },
        [](stretch l, stretch r) {
          if (l.empty) return r;
          if (r.empty) return l;
          return stretch{l.first, r.last, l.sorted && r.sorted && l.last <= r.first, false};
        });

    /* The sum and xor of the sorted array, in 16 tasks of a group. */
    std::vector<uint64_t> part_sum(16), part_xor(16);
    wspool::task_group g(pool);
    for (long k = 0; k < 16; k++)
      g.run([&, k] {
        for (long i = n * k / 16; i < n * (k + 1) / 16; i++) {
          part_sum[static_cast<std::size_t>(k)] += a[i];
          part_xor[static_cast<std::size_t>(k)] ^= a[i];
        }
      });
    g.wait();
    uint64_t sum_out = 0, xor_out = 0;
    for (int k = 0; k < 16; k++) {
      sum_out += part_sum[static_cast<std::size_t>(k)];
      xor_out ^= part_xor[static_cast<std::size_t>(k)];
    }

    /* An exception inside a task reaches whoever waits for it. */
    bool caught = false;
    try {
      pool.join([] {}, [] { throw std::runtime_error("thrown in a task"); });
    } catch (const std::runtime_error &e) {
      caught = std::string(e.what()) == "thrown in a task";
    }

    bool ok = s.sorted && sum_out == sum_in && xor_out == xor_in && caught;
    std::printf("sorted %ld items on %u workers in %.3f s: %s (sorted %s, permutation %s, "
                "exception %s)\n",
                n, pool.threads(), t_sort, ok ? "ok" : "WRONG", s.sorted ? "yes" : "NO",
                sum_out == sum_in && xor_out == xor_in ? "yes" : "NO", caught ? "caught" : "LOST");
    return ok ? 0 : 1;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "cpp_sort: %s\n", e.what());
    return 1;
  }
}
