/* SPDX-License-Identifier: MIT */
/* bench_fib's take and typed kernels (bench_fib.h) compiled with
 * POOL_NO_TRAMPOLINE: the inline fast paths leave for the library by a
 * plain call instead of the register-preserving trampolines
 * (docs/design.md 8.3). The same source as bench_fib's "take T1" and
 * "typed T1" rows, so the pairs of rows are the trampolines' A/B. */
#define POOL_NO_TRAMPOLINE 1

#include "bench_fib.h"

void fib_plain_setup(int n) { (void)fib_setup(n); }
double fib_plain_run_take(bench_variant *v) { return fib_run_root(v, pfib_task); }
double fib_plain_run_typed(bench_variant *v) { return fib_run_root(v, tfib_root); }
