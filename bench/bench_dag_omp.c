/* SPDX-License-Identifier: MIT */
/* bench_dag's OpenMP peer: the wavefront's blocks as tasks with `depend`
 * clauses (bench_dag.c has the whole story). Built twice from this file:
 *  - by the C compiler with -fopenmp into bench_dag itself: dag_omp_depend()
 *    on gcc's libgomp;
 *  - by clang -fopenmp with BENCH_DAG_OMP_MAIN into bench_dag_libomp, a
 *    small program on LLVM's libomp (libgomp and libomp cannot share a
 *    process), linked with the same kernel library (the C compiler's
 *    code):
 *      bench_dag_libomp N BS THREADS [RUNS]
 *    makes one untimed run, then RUNS (default 1) timed ones, each printing
 *    "time <seconds> best <score> hash <hex>"; exit 1 on a bad argument,
 *    a missing block or no memory (bench_dag checks the answers).
 * With BENCH_DAG_OMP_PROBE it is only a test that clang can build and link
 * an OpenMP program (bench/meson.build, at configure time). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <omp.h>

#ifdef BENCH_DAG_OMP_PROBE
int main(void) { return omp_get_max_threads() > 0 ? 0 : 1; }
#else

#include "bench_dag.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* One dependence object per block, with a border line and column that no
 * task writes (the blocks of the first row and column depend on them,
 * which is no dependence). */
static char *deps;
static size_t deps_size;

double dag_omp_depend(dag_problem *p, int threads) {
  const int nb = p->nb;
  const size_t ld = (size_t)nb + 1;
  if (deps_size < ld * ld) {
    free(deps);
    deps = calloc(ld * ld, 1);
    if (!deps) {
      fprintf(stderr, "out of memory\n");
      exit(1);
    }
    deps_size = ld * ld;
  }
  double t0 = now();
#pragma omp parallel num_threads(threads)
#pragma omp single
  for (int bi = 0; bi < nb; bi++)
    for (int bj = 0; bj < nb; bj++) {
      size_t self = (size_t)(bi + 1) * ld + (size_t)(bj + 1);
#pragma omp task firstprivate(bi, bj) depend(in: deps[self - ld], deps[self - 1]) \
    depend(out: deps[self])
      dag_block(p, bi, bj);
    }
  return now() - t0;
}

#ifdef BENCH_DAG_OMP_MAIN
static long arg(const char *s, long lo, long hi) {
  char *end;
  long v = strtol(s, &end, 10);
  if (*end || v < lo || v > hi) {
    fprintf(stderr, "bench_dag_libomp: bad argument %s\n", s);
    exit(1);
  }
  return v;
}

int main(int argc, char **argv) {
  if (argc < 4 || argc > 5) {
    fprintf(stderr, "usage: bench_dag_libomp N BS THREADS [RUNS]\n");
    return 1;
  }
  int n = (int)arg(argv[1], 64, 1 << 16), bs = (int)arg(argv[2], 4, 1 << 16);
  int threads = (int)arg(argv[3], 1, 1024), runs = argc > 4 ? (int)arg(argv[4], 1, 1000) : 1;
  dag_problem p;
  if (dag_init(&p, n, bs) != 0) {
    fprintf(stderr, "bench_dag_libomp: out of memory\n");
    return 1;
  }
  for (int r = 0; r <= runs; r++) { /* run 0: the untimed warm-up */
    dag_reset(&p);
    double t = dag_omp_depend(&p, threads);
    dag_answer a = dag_answer_of(&p);
    if (a.best < 0) {
      fprintf(stderr, "bench_dag_libomp: a block did not run\n");
      return 1;
    }
    if (r) printf("time %.9f best %d hash %016llx\n", t, (int)a.best, (unsigned long long)a.hash);
  }
  fflush(stdout);
  dag_free(&p);
  free(deps);
  return 0;
}
#endif /* BENCH_DAG_OMP_MAIN */
#endif /* BENCH_DAG_OMP_PROBE */
