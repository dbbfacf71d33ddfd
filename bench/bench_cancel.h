/* SPDX-License-Identifier: MIT */
/* The search kernel of bench_cancel, shared with its oneTBB shim so every
 * row scans with the same code: item i is bench_mix(i), a bijection on
 * 64-bit integers (the splitmix64 finaliser), so the key bench_mix(hit)
 * matches exactly one index, and no compiler can find it without computing
 * the items (the loop has an early exit, which GCC 12 does not vectorise). */
#ifndef WSPOOL_BENCH_CANCEL_H
#define WSPOOL_BENCH_CANCEL_H

#include <stddef.h>
#include <stdint.h>

static inline uint64_t bench_mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

/* The first index in [lo, hi) whose item is key, or hi. */
static inline size_t bench_scan(size_t lo, size_t hi, uint64_t key) {
  for (size_t i = lo; i < hi; i++)
    if (bench_mix(i) == key) return i;
  return hi;
}

/* The peers scan a subrange in blocks of this many items and look for a
 * cancellation between blocks (about 4 us here): OpenMP's `cancellation
 * point for`, oneTBB's is_group_execution_cancelled(). */
enum { BENCH_CANCEL_BLOCK = 4096 };

#ifdef __cplusplus
extern "C" {
#endif

/* The oneTBB row (bench_cancel_tbb.cpp): tbb::parallel_for over [0, n)
 * (auto_partitioner) with a task_group_context, in an arena of `threads`;
 * the body that finds key stores its index in *found and calls
 * cancel_group_execution(). *examined: items the bodies looked at. */
double bench_tbb_cancel_search(size_t n, uint64_t key, unsigned threads, size_t *found,
                               size_t *examined);

#ifdef __cplusplus
}
#endif

#endif
