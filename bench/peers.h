/* SPDX-License-Identifier: MIT */
/* The oneTBB peer baselines: C entry points implemented in the bench_*_tbb.cpp
 * shims (built only when the `peers` option finds oneTBB and a C++ compiler;
 * BENCH_HAVE_TBB is defined then). Each returns the elapsed seconds of the
 * timed region and its answer through out-parameters; the C side checks. */
#ifndef WSPOOL_BENCH_PEERS_H
#define WSPOOL_BENCH_PEERS_H

#include <stddef.h>
#include <stdint.h>

/* Which peers this build has, as 0/1 for the variants' `available`. */
#if defined(BENCH_HAVE_OPENMP) && !defined(__cplusplus)
#include <omp.h>
#endif
#ifdef BENCH_HAVE_OPENMP
#define HAVE_OMP 1
#else
#define HAVE_OMP 0
#endif
#ifdef BENCH_HAVE_TBB
#define HAVE_TBB 1
#else
#define HAVE_TBB 0
#endif

#ifndef __cplusplus
#include "benchutil.h"

/* The peer rows of the fork/join benchmarks (bench_nqueens, bench_sort,
 * bench_uts): OpenMP tasks and oneTBB task_group on 1 and 2 threads, in
 * this order; bench_ratio_task_peers prints their ratios lines. */
#define BENCH_TASK_PEER_ROWS(omp_run, tbb_run)                       \
  BENCH_PEER_ROW("OpenMP tasks 1 thr", 1, HAVE_OMP, omp_run, 0),      \
  BENCH_PEER_ROW("OpenMP tasks 2 thr", 2, HAVE_OMP, omp_run, 0),      \
  BENCH_PEER_ROW("oneTBB task_group 1 thr", 1, HAVE_TBB, tbb_run, 0), \
  BENCH_PEER_ROW("oneTBB task_group 2 thr", 2, HAVE_TBB, tbb_run, 0)

static inline void bench_ratio_task_peers(bench_variant *v, int nv, const bench_variant *ts) {
  bench_ratio_line("OpenMP tasks", ts, bench_find(v, nv, "OpenMP tasks 1 thr"),
                   bench_find(v, nv, "OpenMP tasks 2 thr"), "built without OpenMP");
  bench_ratio_line("oneTBB task_group", ts, bench_find(v, nv, "oneTBB task_group 1 thr"),
                   bench_find(v, nv, "oneTBB task_group 2 thr"), "built without oneTBB");
}
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* bench_submit: tiny tasks through tbb::task_arena::enqueue on an arena of
 * `workers` worker threads (no master slot). mode 0: `producers` outside
 * threads enqueue n tasks between them; mode 1: one task enqueues n tasks
 * from inside the arena. Returns seconds from the start of submission until
 * every task ran; *submit_s receives the producers' submission time alone
 * (the slowest producer). *ran receives the tasks that ran. */
double bench_tbb_submit(unsigned workers, int mode, unsigned producers, long n, double *submit_s,
                        long *ran);
/* Wake latency of an idle arena of `workers`: `reps` times, sleep
 * `sleep_ms`, enqueue one task that stamps CLOCK_MONOTONIC; lat_ns[i] is
 * start - submit. Returns 0, or -1 on a lost task. */
int bench_tbb_wake_latency(unsigned workers, int reps, double sleep_ms, double *lat_ns);
/* CPU seconds the process used while an arena of `workers`, after running
 * one task on each worker, idled for `idle_s` seconds. */
double bench_tbb_idle_cpu(unsigned workers, double idle_s, double *wall_s);

/* bench_fib: fib(n) with one tbb::task_group per node (run + wait), inside
 * a task_arena of `threads`. */
double bench_tbb_fib(int n, unsigned threads, long *result);

/* bench_nqueens: count solutions, one task_group child per placement. */
double bench_tbb_nqueens(int n, unsigned threads, long *result);

/* bench_sort: sort a[0..n) with the shared cilksort (tmp of n ints), one
 * task_group child per half / merge half above the cutoffs. */
double bench_tbb_sort(int32_t *a, int32_t *tmp, size_t n, unsigned threads);

/* bench_parfor: out[i] = bench_cost(i, work[i]) with tbb::parallel_for
 * (auto_partitioner) in an arena of `threads`. */
double bench_tbb_parfor(const uint32_t *work, uint64_t *out, size_t n, unsigned threads);

/* bench_uts: the nodes of a UTS tree (bench_uts.h), one task_group per
 * node with a run() per child. */
struct uts_tree;
double bench_tbb_uts(const struct uts_tree *tree, unsigned threads, long *nodes);

#ifdef __cplusplus
}
#endif

#endif /* WSPOOL_BENCH_PEERS_H */
