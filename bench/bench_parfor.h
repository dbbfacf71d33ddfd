/* SPDX-License-Identifier: MIT */
/* The per-item cost of bench_parfor, shared with its oneTBB shim: a chain
 * of dependent multiply/xorshift steps (about 5 cycles each) whose result
 * is stored per item and checked, so it cannot be optimized away or
 * vectorized across items. */
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

#endif
