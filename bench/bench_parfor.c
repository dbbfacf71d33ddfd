/* SPDX-License-Identifier: MIT */
/* bench_parfor: pool_parallel_for on four load shapes, beside OpenMP's
 * three schedules and oneTBB's parallel_for, 2 threads each.
 *
 * Item i costs work[i] steps of bench_cost() (bench_parfor.h); its result
 * goes to out[i] and every run is checked against the plain loop's output.
 * WSPOOL_BENCH_PARFOR_N items (default 10^6) and WSPOOL_BENCH_PARFOR_WORK
 * steps in all (default 10^8):
 *
 *   uniform      every item costs the same
 *   triangular   cost of item i proportional to i
 *   heavy tail   the last 1% of the items cost 100x the others
 *   spikes       2% of the items, at seeded random places, cost 50x
 *
 * Variants: the plain loop; pool_parallel_for on a pool of 2 workers (grain
 * 0 = automatic, called from main, which waits); OpenMP parallel for with
 * schedule(static), schedule(dynamic), schedule(guided) and num_threads(2);
 * tbb::parallel_for with auto_partitioner in a task_arena of 2.
 * Targets (the issue), per load: speedup over the plain loop >= 1.85 on 2
 * workers, and time within 5% of the best OpenMP schedule for that load.
 * WSPOOL_BENCH_PARFOR_LOAD=0..3 runs one load only (in the order above);
 * WSPOOL_BENCH_RUNS, WSPOOL_BENCH_BUDGET as everywhere. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wspool.h>

#include "bench_parfor.h"
#include "benchutil.h"
#include "peers.h"

enum { THREADS = 2 };

static size_t n_items;
static uint32_t *work;
static uint64_t *out, *ref;
static const char *load_name;

static void prepare(void) { memset(out, 0, n_items * sizeof(uint64_t)); }

static void check(const char *who) { bench_check_items(who, load_name, out, ref, n_items); }

static void plain_loop(uint64_t *o) {
  for (size_t i = 0; i < n_items; i++) o[i] = bench_cost(i, work[i]);
}

static double run_seq(bench_variant *v) {
  prepare();
  double t0 = bench_now();
  plain_loop(out);
  double t = bench_now() - t0;
  check(v->name);
  return t;
}

static void pf_body(size_t begin, size_t end, void *ctx) {
  (void)ctx;
  for (size_t i = begin; i < end; i++) out[i] = bench_cost(i, work[i]);
}

static double run_wspool(bench_variant *v) {
  prepare();
  double t0 = bench_now();
  int rc = pool_parallel_for(v->ctx, 0, n_items, 0, pf_body, NULL);
  double t = bench_now() - t0;
  if (rc) bench_fail("%s: %s", v->name, pool_strerror(rc));
  check(v->name);
  return t;
}

#ifdef BENCH_HAVE_OPENMP
static double run_omp(bench_variant *v) {
  prepare();
  size_t n = n_items;
  double t0 = bench_now();
  switch (v->param) {
  case 0:
#pragma omp parallel for schedule(static) num_threads(THREADS)
    for (size_t i = 0; i < n; i++) out[i] = bench_cost(i, work[i]);
    break;
  case 1:
#pragma omp parallel for schedule(dynamic) num_threads(THREADS)
    for (size_t i = 0; i < n; i++) out[i] = bench_cost(i, work[i]);
    break;
  default:
#pragma omp parallel for schedule(guided) num_threads(THREADS)
    for (size_t i = 0; i < n; i++) out[i] = bench_cost(i, work[i]);
    break;
  }
  double t = bench_now() - t0;
  check(v->name);
  return t;
}
#else
#define run_omp NULL
#endif

#ifdef BENCH_HAVE_TBB
static double run_tbb(bench_variant *v) {
  prepare();
  double t = bench_tbb_parfor(work, out, n_items, THREADS);
  check(v->name);
  return t;
}
#else
#define run_tbb NULL
#endif

/* Fill work[] for a load so that the total is about `total` steps. */
static void make_load(int load, double total) {
  double mean = total / (double)n_items;
  size_t n = n_items;
  switch (load) {
  case 0: /* uniform */
    for (size_t i = 0; i < n; i++) work[i] = (uint32_t)(mean + 0.5);
    break;
  case 1: /* triangular: item i costs ~ i */
    for (size_t i = 0; i < n; i++) work[i] = (uint32_t)(2.0 * mean * (double)i / (double)n + 0.5);
    break;
  case 2: { /* heavy tail: the last 1% cost 100x */
    size_t tail = n / 100 ? n / 100 : 1;
    double base = total / ((double)(n - tail) + 100.0 * (double)tail);
    for (size_t i = 0; i < n; i++)
      work[i] = (uint32_t)((i >= n - tail ? 100.0 * base : base) + 0.5);
    break;
  }
  default: { /* spikes: 2% of the items, seeded random places, cost 50x */
    uint64_t x = 0x5EED5EEDull;
    size_t spikes = 0;
    char *is = calloc(n, 1);
    if (!is) exit(1);
    for (size_t i = 0; i < n; i++) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      if (x % 50 == 0) {
        is[i] = 1;
        spikes++;
      }
    }
    double base = total / ((double)(n - spikes) + 50.0 * (double)spikes);
    for (size_t i = 0; i < n; i++) work[i] = (uint32_t)((is[i] ? 50.0 * base : base) + 0.5);
    free(is);
    break;
  }
  }
}

static pool_t *pool;
static const char *loads[4] = {"uniform", "triangular", "heavy tail (last 1% x100)",
                               "random spikes (2% x50, seeded)"};

/* The targets of one load, and its line of the summary. */
typedef struct load_result {
  int ok_speed, ok_omp; /* ok_omp: -1 without OpenMP */
  char summary[160];
} load_result;

static load_result one_load(int load, double total, double budget) {
  load_name = loads[load];
  make_load(load, total);
  plain_loop(ref);
  printf("\n-- load: %s\n", load_name);
  bench_variant v[] = {
      BENCH_SEQ_ROW("plain loop", run_seq),
      BENCH_WSPOOL_ROW("wspool pool_parallel_for", THREADS, run_wspool, pool, 0),
      BENCH_PEER_ROW("OpenMP schedule(static)", THREADS, HAVE_OMP, run_omp, 0),
      BENCH_PEER_ROW("OpenMP schedule(dynamic)", THREADS, HAVE_OMP, run_omp, 1),
      BENCH_PEER_ROW("OpenMP schedule(guided)", THREADS, HAVE_OMP, run_omp, 2),
      BENCH_PEER_ROW("oneTBB parallel_for (auto)", THREADS, HAVE_TBB, run_tbb, 0),
  };
  int nv = BENCH_COUNT(v);
  bench_measure(v, nv, bench_runs(), budget);
  bench_table(v, nv);
  bench_variant *ts = bench_find(v, nv, "plain loop");
  bench_variant *w = bench_find(v, nv, "wspool pool_parallel_for");
  load_result res = {.ok_omp = -1};
  double speedup = ts->med / w->med;
  res.ok_speed = speedup >= 1.85;
  bench_variant *best = NULL; /* the fastest OpenMP schedule, rows 2..4 */
  for (int i = 2; i <= 4; i++)
    if (v[i].available && v[i].nt && (!best || v[i].med < best->med)) best = &v[i];
  char what_t[160];
  snprintf(what_t, sizeof what_t, "%s: speedup >= 1.85 on 2 workers", load_name);
  bench_target(what_t, res.ok_speed, "speedup %.2f", speedup);
  snprintf(what_t, sizeof what_t, "%s: within 5%% of the best OpenMP schedule", load_name);
  if (best) {
    res.ok_omp = w->med <= 1.05 * best->med;
    bench_target(what_t, res.ok_omp, "wspool %.2f ms, best OpenMP %s %.2f ms: %+.1f%%",
                 w->med * 1e3, best->name + 7, best->med * 1e3,
                 100.0 * (w->med / best->med - 1.0));
    snprintf(res.summary, sizeof res.summary, "%-32s speedup %.2f, vs best OpenMP %+.1f%%",
             load_name, speedup, 100.0 * (w->med / best->med - 1.0));
  } else {
    bench_target(what_t, -1, "OpenMP unavailable");
    snprintf(res.summary, sizeof res.summary, "%-32s speedup %.2f", load_name, speedup);
  }
  fflush(stdout);
  return res;
}

int main(void) {
  n_items = (size_t)bench_env_long("WSPOOL_BENCH_PARFOR_N", 1000000, 1000, 1000000000);
  double total = bench_env_double("WSPOOL_BENCH_PARFOR_WORK", 1e8, 1e5, 1e12);
  char what[200];
  snprintf(what, sizeof what,
           "pool_parallel_for, %zu items, %.3g cost steps per loop, %d threads, 4 loads", n_items,
           total, THREADS);
  bench_header("bench_parfor", what);

  work = malloc(n_items * sizeof(uint32_t));
  out = malloc(n_items * sizeof(uint64_t));
  ref = malloc(n_items * sizeof(uint64_t));
  if (!work || !out || !ref) {
    fprintf(stderr, "out of memory\n");
    return 1;
  }
  pool = bench_pool(THREADS, BENCH_DEFAULT);

  /* WSPOOL_BENCH_PARFOR_LOAD=k (0..3) runs only that load. */
  int only = (int)bench_env_long("WSPOOL_BENCH_PARFOR_LOAD", -1, -1, 3);
  double budget = bench_budget() / (only < 0 ? 4 : 1);
  int met_speedup = 1, met_omp = 1, omp_known = HAVE_OMP;
  char summary[4][160];
  for (int load = 0; load < 4; load++) {
    snprintf(summary[load], sizeof summary[load], "%-32s not run", loads[load]);
    if (only >= 0 && load != only) continue;
    load_result r = one_load(load, total, budget);
    met_speedup &= r.ok_speed;
    if (r.ok_omp >= 0) met_omp &= r.ok_omp;
    memcpy(summary[load], r.summary, sizeof r.summary);
  }
  printf("\n-- summary (wspool pool_parallel_for, %d workers)\n", THREADS);
  for (int load = 0; load < 4; load++) printf("  %s\n", summary[load]);
  bench_target("speedup >= 1.85 on every load", met_speedup, "see the loads above");
  bench_target("within 5% of the best OpenMP schedule on every load", omp_known ? met_omp : -1,
               omp_known ? "see the loads above" : "OpenMP unavailable");

  pool_destroy(pool);
  free(work);
  free(out);
  free(ref);
  return bench_finish();
}
