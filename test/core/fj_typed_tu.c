/* SPDX-License-Identifier: MIT */
/* The other file of fj_typed's cross-file push and pop (fj_typed_tu.h). */
#include "fj_typed_tu.h"

#include "check.h"

long tu_square(long x) { return x * x; }

void tu_push_range(long k) {
  for (long x = 1; x <= k; x++) CHECK_OK(tu_square_push(NULL, x));
}

long tu_pop_sum(long k) {
  long sum = 0;
  while (k-- > 0) {
    long r = -1;
    CHECK_OK(tu_square_pop_rc(&r));
    sum += r;
  }
  return sum;
}
