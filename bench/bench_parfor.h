/* SPDX-License-Identifier: MIT */
/* The per-item cost of bench_parfor and bench_cpp, shared with the oneTBB
 * shim and the C++ rows: a chain of dependent multiply/xorshift steps
 * whose result is stored per item and checked, so it cannot be optimized
 * away or vectorized across items; and the check of those results. */
#ifndef WSPOOL_BENCH_PARFOR_H
#define WSPOOL_BENCH_PARFOR_H

#include <stddef.h>
#include <stdint.h>

static inline uint64_t bench_cost(size_t i, uint32_t iters) {
  uint64_t x = (uint64_t)i * 0x9E3779B97F4A7C15ull + 1;
  for (uint32_t k = 0; k < iters; k++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    x ^= x >> 29;
  }
  return x;
}

#ifndef __cplusplus
#include "benchutil.h"

/* Every item's result against the plain loop's: the first that differs is
 * a wrong answer of `who` (on `load`, when not NULL). */
static inline void bench_check_items(const char *who, const char *load, const uint64_t *out,
                                     const uint64_t *ref, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (out[i] != ref[i]) {
      if (load)
        bench_fail("%s (%s): item %zu has %llu, expected %llu", who, load, i,
                   (unsigned long long)out[i], (unsigned long long)ref[i]);
      else
        bench_fail("%s: item %zu has %llu, expected %llu", who, i, (unsigned long long)out[i],
                   (unsigned long long)ref[i]);
      return;
    }
}
#endif

#endif
