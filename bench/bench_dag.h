/* SPDX-License-Identifier: MIT */
/* The kernel of bench_dag: Smith-Waterman local alignment with affine gaps
 * (Gotoh) of two seeded random DNA sequences, as a 2-D wavefront over a
 * blocked grid. Block (bi, bj) needs the bottom row of block (bi-1, bj) and
 * the right column of block (bi, bj-1) (and the corner of (bi-1, bj-1),
 * which both of those follow).
 *
 * The functions are compiled once, by the C compiler, into a static library
 * (bench_dag.c with BENCH_DAG_KERNEL) that every variant links: the
 * sequential loop, the wspool jobs, OpenMP with libgomp and the libomp
 * executable that clang builds (bench_dag_omp.c) all run the same machine
 * code, so the rows differ by their runtime alone.
 *
 * Plain C, no wspool: the libomp executable includes it too. */
#ifndef WSPOOL_BENCH_DAG_H
#define WSPOOL_BENCH_DAG_H

#include <stdint.h>

/* Scores: match, mismatch, gap open (the first gap cell), gap extension. */
enum { DAG_MATCH = 2, DAG_MISMATCH = -1, DAG_GAP_OPEN = 3, DAG_GAP_EXT = 1 };

typedef struct dag_problem {
  int n;      /* rows: length of a */
  int bs;     /* block side */
  int nb;     /* blocks per side: ceil(n / bs) */
  uint8_t *a; /* a[1..n], b[1..n] in 0..3 (index 0 unused) */
  uint8_t *b;
  /* Boundaries, each (nb + 1) x (n + 1) cells, k-th line at k * (n + 1):
   * hrow[k][j], frow[k][j]: H and F along matrix row k * bs (the bottom
   * row of block row k - 1; line 0 is the zero border);
   * hcol[k][i], ecol[k][i]: H and E along matrix column k * bs. */
  int32_t *hrow, *frow, *hcol, *ecol;
  int32_t *bmax; /* the best score of each block, nb x nb */
} dag_problem;

/* What a run computed: the best local score and a hash of the matrix's
 * last row (H and F), which every cell above it feeds. */
typedef struct dag_answer {
  int32_t best;
  uint64_t hash;
} dag_answer;

/* Allocates p for sequences of length n (seeded, the same every call) in
 * blocks of bs; 0, or -1 when out of memory. */
int dag_init(dag_problem *p, int n, int bs);
void dag_free(dag_problem *p);
/* Clears the borders of the boundary lines (line 0 of hrow/frow and of
 * hcol/ecol are the zero border); the rest is written by the blocks. */
void dag_reset(dag_problem *p);
/* Block (bi, bj), 0-based: reads hrow/frow line bi and hcol/ecol line bj,
 * writes line bi + 1 of hrow/frow, line bj + 1 of hcol/ecol and
 * bmax[bi * nb + bj]. */
void dag_block(dag_problem *p, int bi, int bj);
/* The answer after every block ran. */
dag_answer dag_answer_of(const dag_problem *p);

/* The sequential program: the plain double loop over the whole matrix
 * with one row of H and F (no blocks); its own scratch of 2 (n + 1) ints. */
dag_answer dag_sequential(const dag_problem *p, int32_t *hbuf, int32_t *fbuf);

/* Every block in row-major order, no runtime: what blocking costs. */
void dag_blocked_sequential(dag_problem *p);

/* bench_dag_omp.c: the blocks as OpenMP tasks with depend clauses on
 * `threads` threads; returns the elapsed seconds. */
double dag_omp_depend(dag_problem *p, int threads);

#endif
