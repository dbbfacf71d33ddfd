/* SPDX-License-Identifier: MIT */
/* bench_cancel: what cancellation saves, and how fast it stops work.
 *
 * (a) Search. Item i of n (default 10^8) is bench_mix(i) (bench_cancel.h),
 *     computed as it is looked at (about 2 ns here); the key matches exactly
 *     one index, `hit` (default n / 100: 1 % in). The rows, 2 threads each
 *     but the plain loops:
 *     - plain loop to the hit: the sequential search, the baseline.
 *     - wspool try (cancels): pool_parallel_for_try from main, grain
 *       automatic; the body that finds the key returns EEXIST, which skips
 *       the subranges not started.
 *     - wspool try, called by a task: the same call made by a task on the
 *       pool (main submits it and waits for idle); the front piece of the
 *       static split then runs on the calling worker.
 *     - wspool parallel_for (all n): pool_parallel_for, no cancellation,
 *       every item looked at: what cancelling saves.
 *     - OpenMP cancel for, static / dynamic: `#pragma omp cancel for` at the
 *       hit, a `cancellation point for` between blocks of BENCH_CANCEL_BLOCK
 *       items. OpenMP cancellation is off unless OMP_CANCELLATION=true is in
 *       the environment when its runtime starts (libgomp reads it as the
 *       library loads, before main, so setenv() in main is too late):
 *       meson's benchmark env sets it, and a run without it re-executes
 *       itself with it. The OpenMP is the compiler's (-fopenmp: libgomp with
 *       GCC, libomp with clang); the build has one.
 *     - oneTBB parallel_for + cancel: tbb::parallel_for (auto_partitioner)
 *       with a task_group_context, cancel_group_execution() at the hit,
 *       is_group_execution_cancelled() polled between blocks.
 *     - plain loop, all n: the sequential scan of every item (reference).
 *     Every run checks the index found; the items each row looked at are
 *     printed too. Target (the issue): the cancelling wspool search within
 *     3x of the sequential time to reach the hit.
 *
 * (b) Stop latency. A group of WSPOOL_BENCH_CANCEL_CHILDREN children
 *     (default 10000), each spinning WSPOOL_BENCH_CANCEL_CHILD_US (default
 *     5) microseconds, on a pool of 2; the child that starts
 *     WSPOOL_BENCH_CANCEL_AFTER-th (default half of them) does its work, then
 *     calls pool_group_cancel(). Each child first reads a seq_cst flag set
 *     right after pool_group_cancel() returned: children that see it started
 *     after the cancel, and are counted per worker (the window between the
 *     runtime's last look at the group and the child's first instruction).
 *     Printed: time from cancel's return to pool_group_wait()'s return, the
 *     cancel call itself, the late starts (max over the workers, per run),
 *     and children run and skipped. Two rows: the group spawned and waited
 *     by main (outside the pool), and by a task on the pool.
 *
 * Environment: WSPOOL_BENCH_CANCEL_N, WSPOOL_BENCH_CANCEL_HIT,
 * WSPOOL_BENCH_CANCEL_CHILDREN, WSPOOL_BENCH_CANCEL_CHILD_US,
 * WSPOOL_BENCH_CANCEL_AFTER, WSPOOL_BENCH_CANCEL_PART (a or b: that part
 * only), WSPOOL_BENCH_RUNS (each row makes 3x as many runs: most are short),
 * WSPOOL_BENCH_BUDGET (half to each part). Exit 1 when an answer is wrong. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wspool.h>

#include "bench_cancel.h"
#include "benchutil.h"
#include "peers.h"

enum { THREADS = 2 };
#define NONE SIZE_MAX

static pool_t *pool;

/* Median, min and max of v[0..n) (v is left as it was). */
typedef struct spread {
  double med, min, max;
} spread;

static spread spread_of(const double *v, int n) {
  double tmp[BENCH_MAX_RUNS];
  memcpy(tmp, v, sizeof(double) * (size_t)n);
  spread s = {bench_median(tmp, n), tmp[0], tmp[n - 1]};
  return s;
}

/* Runs per row: 3x WSPOOL_BENCH_RUNS, as most runs here take milliseconds
 * and their spread is the point. */
static int runs_here(void) {
  int r = 3 * bench_runs();
  return r < BENCH_MAX_RUNS ? r : BENCH_MAX_RUNS;
}

/* ---- (a) search -------------------------------------------------------- */

static size_t n_items, hit_at;
static uint64_t key;
static atomic_size_t found, examined;
static int omp_cancel_on; /* OpenMP cancellation is active */

static void reset(void) {
  atomic_store(&found, NONE);
  atomic_store(&examined, 0);
}

/* The end of every row's run: checks the index, records the items looked
 * at in aux. */
static double finish(bench_variant *v, double t) {
  size_t f = atomic_load(&found);
  if (f != hit_at) bench_fail("%s: found %zu, expected %zu", v->name, f, hit_at);
  v->aux[v->nt] = (double)atomic_load(&examined);
  return t;
}

static double run_seq_hit(bench_variant *v) {
  reset();
  double t0 = bench_now();
  size_t i = bench_scan(0, n_items, key);
  double t = bench_now() - t0;
  atomic_store(&found, i < n_items ? i : NONE);
  atomic_store(&examined, i < n_items ? i + 1 : n_items);
  return finish(v, t);
}

static double run_seq_all(bench_variant *v) {
  reset();
  size_t n = n_items, f = NONE;
  double t0 = bench_now();
  for (size_t i = 0; (i = bench_scan(i, n, key)) < n; i++) f = i;
  double t = bench_now() - t0;
  atomic_store(&found, f);
  atomic_store(&examined, n);
  return finish(v, t);
}

/* A hit: keep the first (the key is unique, so there is one). */
static void record(size_t i) {
  size_t none = NONE;
  atomic_compare_exchange_strong(&found, &none, i);
}

static int try_body(size_t lo, size_t hi, void *ctx) {
  (void)ctx;
  size_t i = bench_scan(lo, hi, key);
  atomic_fetch_add_explicit(&examined, (i < hi ? i + 1 : hi) - lo, memory_order_relaxed);
  if (i == hi) return 0;
  record(i);
  return EEXIST; /* stops the loop */
}

static double run_try(bench_variant *v) {
  reset();
  double t0 = bench_now();
  int rc = pool_parallel_for_try(v->ctx, 0, n_items, 0, try_body, NULL);
  double t = bench_now() - t0;
  if (rc != EEXIST) bench_fail("%s: returned %d (%s), expected EEXIST", v->name, rc,
                               pool_strerror(rc));
  return finish(v, t);
}

/* The same loop called by a task on the pool (main submits it and waits
 * for the pool to be idle): piece 0 of the static split, the front of the
 * range, then runs on the calling worker. */
static int root_rc;
static void try_root(void *arg) {
  (void)arg;
  root_rc = pool_parallel_for_try(NULL, 0, n_items, 0, try_body, NULL);
}

static double run_try_inside(bench_variant *v) {
  reset();
  root_rc = -1;
  double t = bench_run_root(v, try_root, NULL);
  if (root_rc != EEXIST) bench_fail("%s: returned %d (%s), expected EEXIST", v->name, root_rc,
                                    pool_strerror(root_rc));
  return finish(v, t);
}

static void all_body(size_t lo, size_t hi, void *ctx) {
  (void)ctx;
  for (size_t i = lo; (i = bench_scan(i, hi, key)) < hi; i++) record(i);
  atomic_fetch_add_explicit(&examined, hi - lo, memory_order_relaxed);
}

static double run_all(bench_variant *v) {
  reset();
  double t0 = bench_now();
  int rc = pool_parallel_for(v->ctx, 0, n_items, 0, all_body, NULL);
  double t = bench_now() - t0;
  if (rc) bench_fail("%s: %s", v->name, pool_strerror(rc));
  return finish(v, t);
}

#ifdef BENCH_HAVE_OPENMP
/* Block b of the OpenMP rows; 1 on the hit. */
static int omp_block(size_t b) {
  size_t lo = b * BENCH_CANCEL_BLOCK;
  size_t hi = n_items - lo > BENCH_CANCEL_BLOCK ? lo + BENCH_CANCEL_BLOCK : n_items;
  size_t i = bench_scan(lo, hi, key);
  atomic_fetch_add_explicit(&examined, (i < hi ? i + 1 : hi) - lo, memory_order_relaxed);
  if (i == hi) return 0;
  record(i);
  return 1;
}

static double run_omp(bench_variant *v) {
  reset();
  size_t nb = (n_items - 1) / BENCH_CANCEL_BLOCK + 1;
  double t0 = bench_now();
  /* Not the combined `parallel for`: its loop has no barrier of its own
   * (the region's ends it), and GCC warns of a `cancel for` in a nowait
   * loop. */
  if (v->param == 0) {
#pragma omp parallel num_threads(THREADS)
#pragma omp for schedule(static)
    for (size_t b = 0; b < nb; b++) {
      if (omp_block(b)) {
#pragma omp cancel for
      }
#pragma omp cancellation point for
    }
  } else {
#pragma omp parallel num_threads(THREADS)
#pragma omp for schedule(dynamic)
    for (size_t b = 0; b < nb; b++) {
      if (omp_block(b)) {
#pragma omp cancel for
      }
#pragma omp cancellation point for
    }
  }
  double t = bench_now() - t0;
  return finish(v, t);
}

/* clang's -fopenmp is LLVM's libomp: libomp 14 (Debian 12) aborts on a
 * cancelled schedule(dynamic) loop (assertion at kmp_dispatch.cpp(403),
 * steal_flag == THIEF), and with monotonic:dynamic the next loop starts
 * cancelled; so that row is left out there. */
#if defined(__clang__)
#define OMP_LIB "libomp"
#define OMP_DYNAMIC_OK 0
#else
#define OMP_LIB "libgomp"
#define OMP_DYNAMIC_OK 1
#endif

/* OpenMP reads OMP_CANCELLATION once, when its runtime starts (libgomp: as
 * the library loads, before main): too late to setenv() here. Without it,
 * run this program again with it. */
static void omp_cancellation(char **argv) {
  omp_cancel_on = omp_get_cancellation();
  if (omp_cancel_on) return;
  const char *e = getenv("OMP_CANCELLATION");
  if (!e || strcmp(e, "true") != 0) {
    setenv("OMP_CANCELLATION", "true", 1);
    fflush(NULL);
    execv("/proc/self/exe", argv);
    perror("bench_cancel: execv(/proc/self/exe) with OMP_CANCELLATION=true");
  }
  fprintf(stderr, "bench_cancel: OpenMP cancellation is off; the OpenMP rows are left out\n");
}
#else
#define run_omp NULL
#define OMP_LIB "OpenMP"
#define OMP_DYNAMIC_OK 1
#endif

#ifdef BENCH_HAVE_TBB
static double run_tbb(bench_variant *v) {
  reset();
  size_t f, ex;
  double t = bench_tbb_cancel_search(n_items, key, THREADS, &f, &ex);
  atomic_store(&found, f);
  atomic_store(&examined, ex);
  return finish(v, t);
}
#else
#define run_tbb NULL
#endif

static int part_a(double budget) {
  key = bench_mix(hit_at);
  printf("\n-- (a) search %zu items for the one at index %zu (%.2f%% in), %d threads\n", n_items,
         hit_at, 100.0 * (double)hit_at / (double)n_items, THREADS);
#ifdef BENCH_HAVE_OPENMP
  printf("   OpenMP (%s): OMP_CANCELLATION %s%s\n", OMP_LIB,
         omp_cancel_on ? "on" : "OFF (rows left out)",
         OMP_DYNAMIC_OK ? "" : "; schedule(dynamic) left out: libomp fails it when cancelled");
#endif
  bench_variant v[] = {
      BENCH_SEQ_ROW("plain loop to the hit", run_seq_hit),
      BENCH_WSPOOL_ROW("wspool try (cancels)", THREADS, run_try, pool, 0),
      BENCH_WSPOOL_ROW("wspool try, called by a task", THREADS, run_try_inside, pool, 0),
      BENCH_WSPOOL_ROW("wspool parallel_for (all n)", THREADS, run_all, pool, 0),
      BENCH_PEER_ROW("OpenMP cancel for, static", THREADS, HAVE_OMP && omp_cancel_on, run_omp, 0),
      BENCH_PEER_ROW("OpenMP cancel for, dynamic", THREADS,
                     HAVE_OMP && omp_cancel_on && OMP_DYNAMIC_OK, run_omp, 1),
      BENCH_PEER_ROW("oneTBB parallel_for + cancel", THREADS, HAVE_TBB, run_tbb, 0),
      BENCH_SEQ_ROW("plain loop, all n", run_seq_all),
  };
  int nv = BENCH_COUNT(v);
  bench_measure(v, nv, runs_here(), budget);
  bench_table(v, nv);

  bench_variant *ts = bench_find(v, nv, "plain loop to the hit");
  printf("per row: time to return (ms) median [min..max] and its ratio to the plain loop's "
         "median time to the hit; runs over 3x that; items looked at, median [min..max]\n");
  for (int i = 0; i < nv; i++) {
    if (!v[i].available || !v[i].nt) continue;
    spread s = spread_of(v[i].aux, v[i].nt);
    int over = 0;
    for (int k = 0; k < v[i].nt; k++) over += v[i].t[k] > 3.0 * ts->med;
    printf("  %-30s %8.3f [%7.3f..%8.3f] %6.2fx [%5.2f..%6.2f]  %2d of %2d  %10.0f [%.0f..%.0f]\n",
           v[i].name, v[i].med * 1e3, v[i].min * 1e3, v[i].max * 1e3, v[i].med / ts->med,
           v[i].min / ts->med, v[i].max / ts->med, over, v[i].nt, s.med, s.min, s.max);
  }

  bench_variant *w = bench_find(v, nv, "wspool try (cancels)");
  bench_variant *all = bench_find(v, nv, "wspool parallel_for (all n)");
  double r = w->med / ts->med;
  printf("wspool try: %.2fx the sequential time to the hit (paired by round: %.2fx); "
         "cancelling saves %.1fx over the loop that looks at all n (%.3f ms vs %.3f ms)\n",
         r, bench_paired_ratio(w, ts), all->med / w->med, w->med * 1e3, all->med * 1e3);
  int over = 0;
  for (int k = 0; k < w->nt; k++) over += w->t[k] > 3.0 * ts->med;
  bench_target("wspool pool_parallel_for_try within 3x of the sequential time to the hit",
               r <= 3.0, "median %.3f ms vs %.3f ms: %.2fx; %d of %d runs over 3x, the slowest "
               "%.1fx", w->med * 1e3, ts->med * 1e3, r, over, w->nt, w->max / ts->med);
  fflush(stdout);
  return r <= 3.0;
}

/* ---- (b) stop latency -------------------------------------------------- */

enum { MAX_SLOTS = 65 }; /* per-worker counters; the last: not a worker */

static size_t n_children, cancel_after;
static uint64_t child_ns;

/* One run's shared state. */
static struct {
  pool_group_t g;
  atomic_size_t started;     /* tickets, in start order */
  atomic_int cancelled;      /* 1 once pool_group_cancel() returned */
  atomic_ulong late[MAX_SLOTS];
  int rc, canceller;         /* the wait's return; the canceller's slot */
  uint64_t t_spawned, t_cancel0, t_cancel1, t_return;
} lat;

static int slot(void) {
  int w = pool_worker_id();
  return w >= 0 && w < MAX_SLOTS - 1 ? w : MAX_SLOTS - 1;
}

static void child(void *arg) {
  (void)arg;
  /* First: did this child start after the cancel returned? */
  if (atomic_load(&lat.cancelled)) atomic_fetch_add(&lat.late[slot()], 1);
  size_t ticket = atomic_fetch_add(&lat.started, 1);
  uint64_t end = bench_now_ns() + child_ns;
  while (bench_now_ns() < end) {
  }
  if (ticket == cancel_after) {
    uint64_t t0 = bench_now_ns();
    int rc = pool_group_cancel(&lat.g);
    uint64_t t1 = bench_now_ns();
    atomic_store(&lat.cancelled, 1);
    if (rc) bench_fail("pool_group_cancel: %s", pool_strerror(rc));
    lat.t_cancel0 = t0; /* read after the wait: it orders them */
    lat.t_cancel1 = t1;
    lat.canceller = slot();
  }
}

/* Spawn the children into a group and wait: called by main itself (the
 * group lives outside the pool) or as a task on the pool. */
static void group_root(void *arg) {
  (void)arg;
  int rc = pool_group_init(&lat.g, pool);
  for (size_t i = 0; i < n_children && rc == 0; i++) rc = pool_group_spawn(&lat.g, child, NULL);
  lat.t_spawned = bench_now_ns();
  if (rc) bench_fail("pool_group_init/spawn: %s", pool_strerror(rc));
  lat.rc = pool_group_wait(&lat.g);
  lat.t_return = bench_now_ns();
}

/* Per run of a row (index v->nt). */
typedef struct lat_row {
  int inside;
  double cancel_s[BENCH_MAX_RUNS], late_max[BENCH_MAX_RUNS], late_all[BENCH_MAX_RUNS],
      late_self[BENCH_MAX_RUNS], ran[BENCH_MAX_RUNS], skipped[BENCH_MAX_RUNS];
  int spawned_first[BENCH_MAX_RUNS]; /* spawning had ended before the cancel */
} lat_row;

static uint64_t skipped_so_far(void) {
  uint64_t s = 0;
  for (unsigned w = 0; w < pool_threads(pool); w++) {
    pool_worker_stats_t st;
    if (pool_worker_stats(pool, w, &st) == 0) s += st.skipped;
  }
  return s;
}

static double run_latency(bench_variant *v) {
  lat_row *row = v->ctx;
  atomic_store(&lat.started, 0);
  atomic_store(&lat.cancelled, 0);
  for (int i = 0; i < MAX_SLOTS; i++) atomic_store(&lat.late[i], 0);
  lat.t_cancel0 = lat.t_cancel1 = 0;
  lat.canceller = -1;
  uint64_t skipped0 = skipped_so_far();
  if (row->inside) {
    int rc = pool_submit(pool, group_root, NULL);
    if (rc == 0) rc = pool_wait_idle(pool);
    if (rc) bench_fail("%s: %s", v->name, pool_strerror(rc));
  } else {
    group_root(NULL);
  }
  if (lat.rc != ECANCELED)
    bench_fail("%s: pool_group_wait returned %d (%s), expected ECANCELED", v->name, lat.rc,
               pool_strerror(lat.rc));
  if (!lat.t_cancel1) {
    bench_fail("%s: the cancelling child never ran", v->name);
    return 0;
  }
  int k = v->nt;
  unsigned long mx = 0, all = 0;
  for (int i = 0; i < MAX_SLOTS; i++) {
    unsigned long c = atomic_load(&lat.late[i]);
    all += c;
    if (c > mx) mx = c;
  }
  row->late_max[k] = (double)mx;
  row->late_all[k] = (double)all;
  row->late_self[k] = (double)atomic_load(&lat.late[lat.canceller]);
  row->cancel_s[k] = (double)(lat.t_cancel1 - lat.t_cancel0) * 1e-9;
  row->ran[k] = (double)atomic_load(&lat.started);
  row->skipped[k] = (double)(skipped_so_far() - skipped0);
  row->spawned_first[k] = lat.t_spawned <= lat.t_cancel0;
  if (atomic_load(&lat.started) <= cancel_after)
    bench_fail("%s: %zu children ran, fewer than the canceller's ticket", v->name,
               atomic_load(&lat.started));
  return (double)(lat.t_return - lat.t_cancel1) * 1e-9;
}

static void print_latency(bench_variant *v) {
  lat_row *row = v->ctx;
  int n = v->nt;
  if (!v->available || n == 0) return;
  spread t = spread_of(v->t, n), c = spread_of(row->cancel_s, n), lm = spread_of(row->late_max, n),
         la = spread_of(row->late_all, n), ls = spread_of(row->late_self, n),
         ran = spread_of(row->ran, n), sk = spread_of(row->skipped, n);
  int first = 0, sums = 0;
  for (int i = 0; i < n; i++) {
    first += row->spawned_first[i];
    sums += row->ran[i] + row->skipped[i] == (double)n_children;
  }
  printf("%s, %d runs:\n", v->name, n);
  printf("  cancel returned -> pool_group_wait returned: median %.1f us (min %.1f, max %.1f; "
         "spread %.0f%%)\n",
         t.med * 1e6, t.min * 1e6, t.max * 1e6, 100.0 * (t.max - t.min) / t.med);
  printf("  pool_group_cancel call: median %.2f us (min %.2f, max %.2f)\n", c.med * 1e6,
         c.min * 1e6, c.max * 1e6);
  printf("  children started after cancel returned, max over the workers per run: median %.0f, "
         "max %.0f\n",
         lm.med, lm.max);
  printf("    (all workers: median %.0f, max %.0f; the canceller's own worker: max %.0f)\n",
         la.med, la.max, ls.max);
  printf("  children run: median %.0f (min %.0f, max %.0f); skipped (pool_worker_stats): "
         "median %.0f (min %.0f, max %.0f);\n",
         ran.med, ran.min, ran.max, sk.med, sk.min, sk.max);
  printf("    run + skipped = %zu in %d of %d runs; spawning had ended before the cancel in %d\n",
         n_children, sums, n, first);
}

static void part_b(double budget) {
  printf("\n-- (b) stop latency: a group of %zu children of %.1f us each on %d workers; the "
         "child with ticket %zu (in start order) cancels the group after its own work\n",
         n_children, (double)child_ns * 1e-3, THREADS, cancel_after);
  static lat_row rows[2] = {{.inside = 0}, {.inside = 1}};
  bench_variant v[] = {
      BENCH_ROW(BENCH_WSPOOL, "group spawned and waited by main", THREADS, 1, run_latency,
                &rows[0], 0),
      BENCH_ROW(BENCH_WSPOOL, "group spawned and waited by a task", THREADS, 1, run_latency,
                &rows[1], 1),
  };
  int nv = BENCH_COUNT(v);
  bench_measure(v, nv, runs_here(), budget);
  for (int i = 0; i < nv; i++) print_latency(&v[i]);
  bench_print_round_trips();
  fflush(stdout);
}

int main(int argc, char **argv) {
  (void)argc;
#ifdef BENCH_HAVE_OPENMP
  omp_cancellation(argv);
#else
  (void)argv;
#endif
  n_items = (size_t)bench_env_long("WSPOOL_BENCH_CANCEL_N", 100000000, 1000, 1000000000000L);
  hit_at = (size_t)bench_env_long("WSPOOL_BENCH_CANCEL_HIT", (long)(n_items / 100), 0,
                                  (long)n_items - 1);
  n_children = (size_t)bench_env_long("WSPOOL_BENCH_CANCEL_CHILDREN", 10000, 2, 10000000);
  child_ns = (uint64_t)bench_env_long("WSPOOL_BENCH_CANCEL_CHILD_US", 5, 0, 1000000) * 1000;
  cancel_after = (size_t)bench_env_long("WSPOOL_BENCH_CANCEL_AFTER", (long)(n_children / 2), 0,
                                        (long)n_children - 1);
  const char *part = getenv("WSPOOL_BENCH_CANCEL_PART");
  int do_a = !part || !*part || strcmp(part, "a") == 0;
  int do_b = !part || !*part || strcmp(part, "b") == 0;

  char what[200];
  snprintf(what, sizeof what,
           "cancellation: a search of %zu items stopping at the hit, and the stop latency of a "
           "group of %zu children",
           n_items, n_children);
  bench_header("bench_cancel", what);
  printf("   this program: %d runs per row (3x WSPOOL_BENCH_RUNS)\n", runs_here());
  pool = bench_pool(THREADS, BENCH_DEFAULT);

  double budget = bench_budget() / (do_a && do_b ? 2 : 1);
  int met = -1;
  if (do_a) met = part_a(budget);
  if (do_b) part_b(budget);
  if (met >= 0)
    printf("\nsummary: wspool try within 3x of the sequential time to the hit: %s\n",
           met ? "MET" : "NOT MET");
  pool_destroy(pool);
  return bench_finish();
}
