/* SPDX-License-Identifier: MIT */
/* bench_chain: what one job of a dependency graph costs, on the longest
 * graph there is: a chain of WSPOOL_BENCH_CHAIN_N (default 10^6) jobs, each
 * an atomic increment of a counter, each after the one before.
 *
 * Rows (pools of 1 and 2 workers), every run checks the count:
 *   submit+run inside T1/T2   the cost of a task without a dependency: one
 *                             task submits the n increments with pool_submit
 *                             from inside the pool (bench_submit's "from
 *                             inside a task"); main waits with
 *                             pool_wait_idle. Time: the root's first submit
 *                             until main's wait returned.
 *   job chain T1/T2           main, outside the pool, builds the whole chain
 *                             up front: pool_job_init every job,
 *                             pool_job_after(job k, job k-1), starts jobs
 *                             n-1 .. 1 (none can run: each waits for its
 *                             predecessor) and then job 0, and waits on job
 *                             n-1 (pool_job_wait). Job 0 goes to the pool;
 *                             from there each completing worker runs the
 *                             successor it released directly. Time: the
 *                             first init until the wait returned, split
 *                             into the build (init + after + the starts of
 *                             1..n-1, nothing runs meanwhile) and the run
 *                             (the start of job 0 until the wait returned).
 *   gated chain T1/T2         the same chain built in one pass, as a
 *                             program that makes its jobs as it goes would:
 *                             job 0 after a gate job not started yet, and
 *                             each job started right after its
 *                             pool_job_after (it cannot run: its
 *                             predecessors wait, down to the gate); the
 *                             gate's start lets it go. The same calls per
 *                             job as above, without the second pass over
 *                             the jobs (128 MB at the default n) that the
 *                             starts in reverse make.
 *   direct calls              n calls of the same increment through a
 *                             function pointer (reference).
 * The jobs' storage (n pool_job_t, 128 bytes each) is allocated and touched
 * once, before the runs, and reused: a caller's storage, as a frame is.
 *
 * Target (issue 29): the chain's cost per job, build included (the whole
 * timed region), at most 2x the cost per task of pool_submit + run from
 * inside a task; judged on 2 workers (bench_submit's pool) by the paired
 * ratio of elapsed times, for each way of building the chain; the 1-worker
 * ratios are printed beside them. Each row also prints the CPU time the
 * process spent over its region (CLOCK_PROCESS_CPUTIME_ID), and its ratio:
 * a chain runs one job at a time whatever the pool, so on 2 workers the
 * ratio of elapsed times holds submit+run's speedup too, which follows the
 * host (8.4 to 22 ns a task from round to round; 1 worker: within 3 %).
 *
 * Environment: WSPOOL_BENCH_CHAIN_N, WSPOOL_BENCH_RUNS, WSPOOL_BENCH_BUDGET.
 * Exit 1 when a count is wrong or a call fails. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wspool.h>

#include "benchutil.h"

static long n_tasks;
static pool_job_t *jobs;

/* The CPU time of each run of each row (the row's param is its index). */
enum { ROWS = 7 };
static double cpu_s[ROWS][BENCH_MAX_RUNS];
static double cpu0;

static void cpu_begin(void) { cpu0 = bench_cpu_time(); }
static void cpu_end(const bench_variant *v) { cpu_s[v->param][v->nt] = bench_cpu_time() - cpu0; }

/* The increment of every row, on a cache line of its own (bench_submit). */
static struct {
  _Alignas(64) _Atomic long v;
  char pad[64 - sizeof(long)];
} done_line;
#define done_count (done_line.v)

static void tiny(void *arg) {
  (void)arg;
  atomic_fetch_add_explicit(&done_count, 1, memory_order_relaxed);
}

static void check_count(const char *who) {
  long got = atomic_load(&done_count);
  if (got != n_tasks) bench_fail("%s: %ld tasks ran, expected %ld", who, got, n_tasks);
}

static double run_direct(bench_variant *v) {
  void (*volatile body)(void *) = tiny;
  atomic_store(&done_count, 0);
  double t0 = bench_now();
  for (long i = 0; i < n_tasks; i++) body(NULL);
  double t = bench_now() - t0;
  check_count(v->name);
  return t;
}

typedef struct inside_arg {
  long n;
  double t0;
  int rc;
} inside_arg;

static void inside_root(void *arg) {
  inside_arg *a = arg;
  int rc = 0;
  a->t0 = bench_now();
  for (long i = 0; i < a->n && rc == 0; i++) rc = pool_submit(NULL, tiny, NULL);
  a->rc = rc;
}

static double run_inside(bench_variant *v) {
  inside_arg a = {n_tasks, 0, 0};
  atomic_store(&done_count, 0);
  cpu_begin();
  int rc = pool_submit(v->ctx, inside_root, &a);
  if (rc == 0) rc = pool_wait_idle(v->ctx);
  double t = bench_now() - a.t0;
  cpu_end(v);
  if (rc || a.rc) bench_fail("%s: %s", v->name, pool_strerror(rc ? rc : a.rc));
  check_count(v->name);
  return t;
}

/* The chain's run, once built (from t0, with `rc` the build's result):
 * starts `first`, which lets the chain go, and waits for its last job. */
static double chain_run(bench_variant *v, int rc, pool_job_t *first, double t0) {
  double tb = bench_now();
  if (rc == 0) rc = pool_job_start(first);
  if (rc == 0) rc = pool_job_wait(&jobs[n_tasks - 1]);
  double t = bench_now() - t0;
  cpu_end(v);
  if (rc) {
    /* Jobs initialised and not started may hold the rest: stop here. */
    fprintf(stderr, "WRONG ANSWER: %s: %s\n", v->name, pool_strerror(rc));
    exit(1);
  }
  v->aux[v->nt] = tb - t0; /* the build */
  check_count(v->name);
  return t;
}

static double run_chain(bench_variant *v) {
  pool_t *p = v->ctx;
  const long n = n_tasks;
  int rc = 0;
  atomic_store(&done_count, 0);
  cpu_begin();
  double t0 = bench_now();
  for (long k = 0; k < n && rc == 0; k++) {
    rc = pool_job_init(&jobs[k], p, tiny, NULL);
    if (rc == 0 && k) rc = pool_job_after(&jobs[k], &jobs[k - 1]);
  }
  for (long k = n - 1; k >= 1 && rc == 0; k--) rc = pool_job_start(&jobs[k]);
  return chain_run(v, rc, &jobs[0], t0);
}

static pool_job_t gate;

/* The chain built in one pass behind a gate (the gated rows, above). */
static double run_chain_gated(bench_variant *v) {
  pool_t *p = v->ctx;
  const long n = n_tasks;
  atomic_store(&done_count, -1); /* the gate's own increment makes n + 1 */
  cpu_begin();
  double t0 = bench_now();
  int rc = pool_job_init(&gate, p, tiny, NULL);
  for (long k = 0; k < n && rc == 0; k++) {
    rc = pool_job_init(&jobs[k], p, tiny, NULL);
    if (rc == 0) rc = pool_job_after(&jobs[k], k ? &jobs[k - 1] : &gate);
    if (rc == 0) rc = pool_job_start(&jobs[k]);
  }
  return chain_run(v, rc, &gate, t0);
}

static double ns_per(double s) { return s * 1e9 / (double)n_tasks; }

/* The median of a chain row's run part (each run's time less its own
 * build), not the difference of two medians taken from different runs. */
static double run_med(const bench_variant *x) {
  double tmp[BENCH_MAX_RUNS];
  for (int k = 0; k < x->nt; k++) tmp[k] = x->t[k] - x->aux[k];
  return bench_median(tmp, x->nt);
}

/* The median CPU time of a row's runs (as bench_summarise takes `med`). */
static double cpu_med(const bench_variant *x) {
  double tmp[BENCH_MAX_RUNS];
  memcpy(tmp, cpu_s[x->param], sizeof(double) * (size_t)x->nt);
  return bench_median(tmp, x->nt);
}

/* The paired ratio of two rows' CPU times, round by round (as
 * bench_paired_ratio pairs their elapsed times). */
static double cpu_paired(const bench_variant *a, const bench_variant *b) {
  double r = bench_paired_of(a, cpu_s[a->param], b, cpu_s[b->param]);
  return r > 0 ? r : cpu_med(a) / cpu_med(b);
}

/* The paired ratio a/b, or that of the medians when they share no round. */
static double paired(const bench_variant *a, const bench_variant *b) {
  double r = bench_paired_ratio(a, b);
  return r > 0 ? r : a->med / b->med;
}

int main(void) {
  n_tasks = bench_env_long("WSPOOL_BENCH_CHAIN_N", 1000000, 2, 100000000);
  char what[200];
  snprintf(what, sizeof what, "a chain of %ld dependent jobs against pool_submit + run", n_tasks);
  bench_header("bench_chain", what);

  /* Line-aligned, as a caller's array of jobs would best be: a 128-byte
   * job then spans two lines, not three. */
  jobs = aligned_alloc(64, (size_t)n_tasks * sizeof(pool_job_t));
  if (!jobs) {
    fprintf(stderr, "out of memory\n");
    return 1;
  }
  memset(jobs, 0, (size_t)n_tasks * sizeof(pool_job_t)); /* touched once, before the runs */

  pool_t *pools[2] = {bench_pool(1, BENCH_DEFAULT), bench_pool(2, BENCH_DEFAULT)};
  bench_variant v[] = {
      BENCH_SEQ_ROW("direct calls", run_direct),
      BENCH_WSPOOL_ROW("submit+run inside T1", 1, run_inside, pools[0], 1),
      BENCH_WSPOOL_ROW("job chain T1", 1, run_chain, pools[0], 2),
      BENCH_WSPOOL_ROW("submit+run inside T2", 2, run_inside, pools[1], 3),
      BENCH_WSPOOL_ROW("job chain T2", 2, run_chain, pools[1], 4),
      BENCH_WSPOOL_ROW("gated chain T1", 1, run_chain_gated, pools[0], 5),
      BENCH_WSPOOL_ROW("gated chain T2", 2, run_chain_gated, pools[1], 6),
  };
  int nv = BENCH_COUNT(v);
  _Static_assert(BENCH_COUNT(v) == ROWS, "a CPU-time slot a row");
  bench_measure(v, nv, bench_runs(), bench_budget());
  bench_table(v, nv);
  printf("(T/Twspool of the chain rows: chain / submit+run on the same pool)\n");
  if (bench_exit_status()) return 1;

  printf("ns per task (medians [min, max]), and the process's CPU time a task (median):\n");
  for (int i = 0; i < nv; i++) {
    bench_variant *x = &v[i];
    printf("  %-22s %7.1f [%6.1f, %6.1f]", x->name, ns_per(x->med), ns_per(x->min),
           ns_per(x->max));
    if (x->kind == BENCH_WSPOOL) printf("  cpu %.1f", ns_per(cpu_med(x)));
    if (x->run == run_chain || x->run == run_chain_gated)
      printf("  = build %.1f (init + after + start), run %.1f (medians of each)",
             ns_per(x->aux_med), ns_per(run_med(x)));
    printf("\n");
  }
  /* The ratio per pool and way of building: 1 worker as information, 2
   * workers the target. */
  static const char *const kinds[2][2] = {{"job chain", "two passes"},
                                          {"gated chain", "one pass"}};
  for (int k = 0; k < 2; k++) {
    for (int w = 1; w <= 2; w++) {
      char cn[32], sn[32], what[100];
      snprintf(cn, sizeof cn, "%s T%d", kinds[k][0], w);
      snprintf(sn, sizeof sn, "submit+run inside T%d", w);
      bench_variant *c = bench_find(v, nv, cn), *s = bench_find(v, nv, sn);
      double r = paired(c, s);
      char detail[240];
      snprintf(detail, sizeof detail,
               "%.1f vs %.1f ns per task: %.2fx paired (build alone %.2fx, run alone %.2fx); "
               "CPU time %.1f vs %.1f ns: %.2fx paired",
               ns_per(c->med), ns_per(s->med), r, c->aux_med / s->med, run_med(c) / s->med,
               ns_per(cpu_med(c)), ns_per(cpu_med(s)), cpu_paired(c, s));
      if (w == 1) {
        printf("1 worker, built in %s: chain / submit+run %s\n", kinds[k][1], detail);
      } else {
        snprintf(what, sizeof what,
                 "chain built in %s, cost per job (build included) <= 2x submit+run's, "
                 "2 workers",
                 kinds[k][1]);
        bench_target(what, r <= 2.0, "%s", detail);
      }
    }
  }

  pool_destroy(pools[0]);
  pool_destroy(pools[1]);
  free(jobs);
  return bench_finish();
}
