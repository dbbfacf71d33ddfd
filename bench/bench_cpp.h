/* SPDX-License-Identifier: MIT */
/* bench_cpp's C++ half (bench_cpp_layer.cpp): the same programs as the C
 * rows of bench_cpp.c, written with wspool.hpp, on pools the C++ side owns
 * (wspool::pool), so both sides are measured the same way. */
#ifndef WSPOOL_BENCH_CPP_H
#define WSPOOL_BENCH_CPP_H

#include <stddef.h>
#include <stdint.h>
#include <wspool.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Create a wspool::pool of `threads` workers in slot `slot` (0..3); 0 on
 * success. */
int bench_cpp_pool(int slot, unsigned threads);
void bench_cpp_free(void);
/* fib(n) through wspool::join, its root submitted into slot's pool from
 * this thread, which waits (as bench_fib's rows do); -1 on an error.
 * by_ref: the lambdas capture everything by reference ([&]), else n by
 * value ([&x, n]). */
long bench_cpp_fib(int slot, int n, int by_ref);
/* out[i] = bench_cost(i, iters) for i in [0, n) through
 * wspool::pool::parallel_for (automatic grain); 0 or -1. */
int bench_cpp_parfor(int slot, uint64_t *out, size_t n, uint32_t iters);

#ifdef __cplusplus
}
#endif

#endif
