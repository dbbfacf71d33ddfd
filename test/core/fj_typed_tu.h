/* SPDX-License-Identifier: MIT */
/* A typed task shared by two files of fj_typed, as a program declares one
 * in a header: its function has external linkage, fj_typed_tu.c defines
 * it, and each file pops the frames the other pushed. */
#ifndef FJ_TYPED_TU_H
#define FJ_TYPED_TU_H

#include <wspool.h>

long tu_square(long x);
POOL_TASK(long, tu_square, long);

/* Pushes tu_square(1) .. tu_square(k) on the calling thread's frame stack
 * (each push checked). */
void tu_push_range(long k);
/* Pops k frames of tu_square, pushed by the other file, and returns the
 * sum of their results (each pop checked). */
long tu_pop_sum(long k);

#endif
