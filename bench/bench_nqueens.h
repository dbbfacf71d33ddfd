/* SPDX-License-Identifier: MIT */
/* N-queens shared by bench_nqueens.c and its oneTBB shim: a board is the
 * column of the queen in each row; a placement is tried by checking the new
 * queen against the rows above it (as in Cilk's nqueens), and each task
 * owns a copy of its board. */
#ifndef WSPOOL_BENCH_NQUEENS_H
#define WSPOOL_BENCH_NQUEENS_H

#define NQ_MAX 16

/* Solutions for n = 0..15 (OEIS A000170). */
static const long nq_known[NQ_MAX] = {1,    1,     0,     0,      2,       10,
                                      4,    40,    92,    352,    724,     2680,
                                      14200, 73712, 365596, 2279184};

/* May a queen go in row `row`, column `col`, below the queens b[0..row)? */
static inline int nq_ok(const signed char *b, int row, int col) {
  for (int r = 0; r < row; r++) {
    int c = b[r], d = row - r;
    if (c == col || c == col - d || c == col + d) return 0;
  }
  return 1;
}

#endif
