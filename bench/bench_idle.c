/* SPDX-License-Identifier: MIT */
/* bench_idle: small jobs now and then beside busy threads, the shape of
 * zstd's I/O helpers (docs/performance.md, "`bench_idle`: small jobs
 * beside busy threads").
 *
 * Two "pools" of one worker each; a feeder thread per pool submits one
 * small job (a few microseconds of arithmetic) every 100 us, on an absolute
 * schedule (clock_nanosleep TIMER_ABSTIME: a late feeder submits at once,
 * it does not fall further behind). Beside them two foreign threads spin
 * (pinned one per CPU when the process may use two), as a program's own
 * compute threads would. A run lasts WSPOOL_BENCH_IDLE_RUN_S seconds
 * (default 1); then the feeders stop and every job is waited for.
 *
 * Per run: job latency (the feeder's stamp just before its submit, to the
 * job's end) at p50 and p99 over both pools' jobs; throughput (jobs run /
 * time from the first submit to the last job's end; 20 000 jobs/s when
 * nobody is late); and the foreign threads' progress (M spins/s: what the
 * pools left them).
 *
 * Variants, interleaved round by round (WSPOOL_BENCH_RUNS rounds, default
 * 5; one short warm-up round first):
 *  - threads + condvar: each pool is one thread waiting on a condition
 *    variable for a mutex-protected ring, signalled at every submit (the
 *    baseline: a plain thread pool such as zstd's own);
 *  - wspool default: pool_create of 1 worker, pool_config_default()
 *    (POOL_IDLE_POLL_AUTO unless WSPOOL_IDLE_POLL says otherwise);
 *  - wspool idle_poll none: POOL_IDLE_POLL_NONE;
 *  - wspool idle_poll 100 us: a fixed poll, what the default does on a quiet
 *    machine, kept here whatever else runs.
 * The table gives each variant's median over the runs with min and max;
 * then each wspool variant against the baseline as the median, min and max
 * of the paired ratios of the rounds (wspool / threads: > 1 means wspool's
 * latency is higher, its throughput or the spinners' rate higher).
 * Target: wspool default within 5 % of the baseline on p50, p99 and
 * throughput. Built against a wspool without idle_poll_us (an older
 * header), only the first two variants run.
 * Exit 1 when a job was lost or ran twice. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <wspool.h>

#include "benchutil.h"

enum { NPOOLS = 2, NSPIN = 2, PERIOD_NS = 100000, JOB_SPINS = 1500, RING = 1 << 14 };

/* One job: its submission stamp (written by the feeder before the submit,
 * which publishes it) and its end (written by the job). */
typedef struct job {
  uint64_t submitted, ended;
  _Atomic unsigned runs;
} job;

typedef struct feed feed;

/* ---- the baseline: one thread on a condition variable per pool ---------- */

typedef struct cv_pool {
  pthread_mutex_t m;
  pthread_cond_t c;
  job *ring[RING];
  unsigned head, tail; /* under m */
  int stop;            /* under m */
  pthread_t th;
} cv_pool;

static volatile uint64_t job_sink;

/* The job's work: a few microseconds of arithmetic, the same everywhere. */
static void job_run(void *arg) {
  job *j = arg;
  uint64_t x = (uint64_t)(uintptr_t)arg | 1;
  for (int i = 0; i < JOB_SPINS; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
  }
  job_sink = x;
  atomic_fetch_add_explicit(&j->runs, 1, memory_order_relaxed);
  j->ended = bench_now_ns();
}

static void *cv_main(void *arg) {
  cv_pool *p = arg;
  pthread_mutex_lock(&p->m);
  for (;;) {
    while (p->head == p->tail && !p->stop) pthread_cond_wait(&p->c, &p->m);
    if (p->head == p->tail) break;
    job *j = p->ring[p->head++ % RING];
    pthread_mutex_unlock(&p->m);
    job_run(j);
    pthread_mutex_lock(&p->m);
  }
  pthread_mutex_unlock(&p->m);
  return NULL;
}

static int cv_submit(cv_pool *p, job *j) {
  pthread_mutex_lock(&p->m);
  int full = p->tail - p->head == RING;
  if (!full) p->ring[p->tail++ % RING] = j;
  pthread_cond_signal(&p->c);
  pthread_mutex_unlock(&p->m);
  return full;
}

static cv_pool *cv_create(void) {
  cv_pool *p = calloc(1, sizeof *p);
  if (!p) exit(1);
  pthread_mutex_init(&p->m, NULL);
  pthread_cond_init(&p->c, NULL);
  if (pthread_create(&p->th, NULL, cv_main, p) != 0) exit(1);
  return p;
}

/* Runs what is queued, then joins the thread. */
static void cv_destroy(cv_pool *p) {
  pthread_mutex_lock(&p->m);
  p->stop = 1;
  pthread_cond_signal(&p->c);
  pthread_mutex_unlock(&p->m);
  pthread_join(p->th, NULL);
  pthread_mutex_destroy(&p->m);
  pthread_cond_destroy(&p->c);
  free(p);
}

/* ---- variants --------------------------------------------------------- */

enum { V_THREADS, V_DEFAULT, V_NONE, V_FIXED, V_ADAPTIVE, NVARIANTS };

#ifdef POOL_IDLE_POLL_AUTO
#define HAVE_IDLE_POLL 1
#else
#define HAVE_IDLE_POLL 0
#endif

static const char *const vname[NVARIANTS] = {
    "threads + condvar", "wspool default", "wspool idle_poll none", "wspool idle_poll 100 us",
    "wspool idle_poll adaptive"};

static int nvariants(void) { return HAVE_IDLE_POLL ? NVARIANTS : V_NONE; }

static pool_t *ws_create(int v) {
  pool_config_t cfg;
  pool_config_default(&cfg);
  cfg.threads = 1;
#if HAVE_IDLE_POLL
  if (v == V_NONE) cfg.idle_poll_us = POOL_IDLE_POLL_NONE;
  if (v == V_FIXED) cfg.idle_poll_us = 100;
#ifdef POOL_IDLE_POLL_ADAPTIVE
  if (v == V_ADAPTIVE) cfg.idle_poll_us = POOL_IDLE_POLL_ADAPTIVE;
#endif
#else
  (void)v;
#endif
  pool_t *p = NULL;
  int rc = pool_create(&p, &cfg);
  if (rc) {
    fprintf(stderr, "pool_create: %s\n", pool_strerror(rc));
    exit(1);
  }
  return p;
}

/* ---- one run ---------------------------------------------------------- */

struct feed {
  int variant;
  pool_t *ws;
  cv_pool *cv;
  job *jobs;
  size_t cap, n; /* jobs allotted, jobs submitted */
  uint64_t start, stop_at;
  int lost; /* submissions that failed */
};

static _Atomic int spinning;
static _Atomic uint64_t spins_total;

static void *spinner(void *arg) {
  int cpu = (int)(intptr_t)arg;
  if (cpu >= 0) bench_pin(cpu);
  uint64_t n = 0, x = 88172645463325252ull;
  while (atomic_load_explicit(&spinning, memory_order_relaxed)) {
    for (int i = 0; i < 1000; i++) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
    }
    n++;
  }
  job_sink = x;
  atomic_fetch_add(&spins_total, n);
  return NULL;
}

static void *feeder(void *arg) {
  feed *f = arg;
  struct timespec ts;
  for (size_t k = 0; k < f->cap; k++) {
    uint64_t due = f->start + (uint64_t)k * PERIOD_NS;
    if (due >= f->stop_at) break;
    ts.tv_sec = (time_t)(due / 1000000000u);
    ts.tv_nsec = (long)(due % 1000000000u);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0) {
    }
    job *j = &f->jobs[k];
    j->submitted = bench_now_ns();
    int rc = f->variant == V_THREADS ? cv_submit(f->cv, j) : pool_submit(f->ws, job_run, j);
    if (rc) f->lost++;
    f->n = k + 1;
  }
  return NULL;
}

typedef struct result {
  double p50_us, p99_us, jobs_per_s, spins_m_per_s;
} result;

static double *lat_buf;
static size_t lat_cap;

static result run_once(int v, double seconds, int allowed_cpus) {
  size_t cap = (size_t)(seconds * 1e9 / PERIOD_NS) + 2;
  feed f[NPOOLS];
  memset(f, 0, sizeof f);
  for (int i = 0; i < NPOOLS; i++) {
    f[i].variant = v;
    f[i].jobs = calloc(cap, sizeof(job));
    if (!f[i].jobs) exit(1);
    f[i].cap = cap;
    if (v == V_THREADS)
      f[i].cv = cv_create();
    else
      f[i].ws = ws_create(v);
  }
  bench_settle();
  atomic_store(&spinning, 1);
  atomic_store(&spins_total, 0);
  pthread_t sp[NSPIN], fd[NPOOLS];
  for (int i = 0; i < NSPIN; i++)
    if (pthread_create(&sp[i], NULL, spinner, (void *)(intptr_t)(allowed_cpus >= NSPIN ? i : -1)))
      exit(1);
  bench_sleep_ms(20); /* the spinners own the CPUs before the first job */
  uint64_t start = bench_now_ns() + 1000000, stop_at = start + (uint64_t)(seconds * 1e9);
  for (int i = 0; i < NPOOLS; i++) {
    /* The feeders' schedules are offset by half a period from each other,
     * so the two pools' jobs do not arrive together. */
    f[i].start = start + (uint64_t)i * PERIOD_NS / 2;
    f[i].stop_at = stop_at;
    if (pthread_create(&fd[i], NULL, feeder, &f[i])) exit(1);
  }
  for (int i = 0; i < NPOOLS; i++) pthread_join(fd[i], NULL);
  for (int i = 0; i < NPOOLS; i++) {
    if (v == V_THREADS) {
      cv_destroy(f[i].cv);
    } else {
      pool_wait_idle(f[i].ws);
      pool_destroy(f[i].ws);
    }
  }
  uint64_t end_spin = bench_now_ns();
  atomic_store(&spinning, 0);
  for (int i = 0; i < NSPIN; i++) pthread_join(sp[i], NULL);

  size_t total = 0;
  uint64_t last = 0;
  for (int i = 0; i < NPOOLS; i++) total += f[i].n;
  if (total > lat_cap) {
    free(lat_buf);
    lat_cap = total;
    lat_buf = malloc(sizeof(double) * lat_cap);
    if (!lat_buf) exit(1);
  }
  size_t k = 0;
  for (int i = 0; i < NPOOLS; i++) {
    if (f[i].lost) bench_fail("%s: %d submissions failed", vname[v], f[i].lost);
    for (size_t j = 0; j < f[i].n; j++) {
      job *jb = &f[i].jobs[j];
      unsigned r = atomic_load(&jb->runs);
      if (r != 1) {
        bench_fail("%s: job %zu of pool %d ran %u times", vname[v], j, i, r);
        continue;
      }
      lat_buf[k++] = (double)(jb->ended - jb->submitted);
      if (jb->ended > last) last = jb->ended;
    }
    free(f[i].jobs);
  }
  result res = {0, 0, 0, 0};
  if (k) {
    qsort(lat_buf, k, sizeof(double), bench_cmp_double);
    res.p50_us = bench_percentile_sorted(lat_buf, (int)k, 50) / 1e3;
    res.p99_us = bench_percentile_sorted(lat_buf, (int)k, 99) / 1e3;
    res.jobs_per_s = (double)k / ((double)(last - start) * 1e-9);
  }
  res.spins_m_per_s = (double)atomic_load(&spins_total) * 1e-6 / ((double)(end_spin - start) * 1e-9);
  return res;
}

/* ---- the report -------------------------------------------------------- */

static double field(const result *r, int which) {
  return which == 0 ? r->p50_us : which == 1 ? r->p99_us : which == 2 ? r->jobs_per_s
                                                                      : r->spins_m_per_s;
}

static void med_min_max(double *v, int n, double *med, double *lo, double *hi) {
  *med = bench_median(v, n); /* sorts v */
  *lo = v[0];
  *hi = v[n - 1];
}

static int allowed_cpu_count(void) {
  cpu_set_t s;
  if (sched_getaffinity(0, sizeof s, &s) != 0) return 1;
  return CPU_COUNT(&s);
}

int main(void) {
  int runs = bench_runs();
  double seconds = bench_env_double("WSPOOL_BENCH_IDLE_RUN_S", 1.0, 0.05, 60.0);
  int nv = nvariants();
  int cpus = allowed_cpu_count();
  char what[240];
  snprintf(what, sizeof what,
           "%d pools of 1 worker, a job (%d spins) every %d us each, beside %d spinning threads; "
           "%.2f s per run",
           NPOOLS, JOB_SPINS, PERIOD_NS / 1000, NSPIN, seconds);
  bench_header("bench_idle", what);
  if (!HAVE_IDLE_POLL)
    printf("   (built against a wspool without idle_poll_us: the idle_poll rows are left out)\n");

  static result res[NVARIANTS][BENCH_MAX_RUNS];
  /* A short warm-up round: thread stacks, page faults, the first
   * /proc read. */
  for (int v = 0; v < nv; v++) run_once(v, seconds < 0.2 ? seconds : 0.2, cpus);
  for (int r = 0; r < runs; r++) {
    /* Every other round in reverse order, so drift hits all alike. */
    for (int i = 0; i < nv; i++) {
      int v = r % 2 ? nv - 1 - i : i;
      res[v][r] = run_once(v, seconds, cpus);
    }
  }

  static const char *const what_col[4] = {"p50 us", "p99 us", "jobs/s", "spin M/s"};
  printf("\n-- per variant: median over %d runs [min, max]\n", runs);
  printf("%-26s", "variant");
  for (int c = 0; c < 4; c++) printf(" %26s", what_col[c]);
  printf("\n");
  double med[NVARIANTS][4];
  for (int v = 0; v < nv; v++) {
    printf("%-26s", vname[v]);
    for (int c = 0; c < 4; c++) {
      double x[BENCH_MAX_RUNS], lo, hi;
      for (int r = 0; r < runs; r++) x[r] = field(&res[v][r], c);
      med_min_max(x, runs, &med[v][c], &lo, &hi);
      static const char *const fmt[4] = {"%.1f [%.1f, %.1f]", "%.0f [%.0f, %.0f]",
                                         "%.0f [%.0f, %.0f]", "%.3f [%.3f, %.3f]"};
      char cell[64];
      snprintf(cell, sizeof cell, fmt[c], med[v][c], lo, hi);
      printf(" %26s", cell);
    }
    printf("\n");
  }

  printf("\n-- against threads + condvar: paired ratios of the rounds, wspool / threads, "
         "median [min, max]\n");
  printf("%-26s", "variant");
  for (int c = 0; c < 4; c++) printf(" %26s", what_col[c]);
  printf("\n");
  double ratio_med[NVARIANTS][4];
  for (int v = 1; v < nv; v++) {
    printf("%-26s", vname[v]);
    for (int c = 0; c < 4; c++) {
      double x[BENCH_MAX_RUNS], lo, hi;
      for (int r = 0; r < runs; r++) {
        double base = field(&res[V_THREADS][r], c);
        x[r] = base > 0 ? field(&res[v][r], c) / base : 0;
      }
      med_min_max(x, runs, &ratio_med[v][c], &lo, &hi);
      char cell[64];
      snprintf(cell, sizeof cell, "%.3f [%.3f, %.3f]", ratio_med[v][c], lo, hi);
      printf(" %26s", cell);
    }
    printf("\n");
  }
  printf("(latency: the feeder's stamp before its submit to the job's end; jobs/s: jobs run /\n"
         " first submit .. last end, %d when nobody is late; spin M/s: the spinning threads'\n"
         " progress, what the pools left them)\n\n",
         NPOOLS * 1000000000 / PERIOD_NS);

  /* The default, and the adaptive poll a program beside busy threads may
   * ask for (when this library has it). */
  static const int checked[] = {V_DEFAULT, V_ADAPTIVE};
  for (int k = 0; k < 2 && checked[k] < nvariants(); k++) {
    const double *d = ratio_med[checked[k]];
    char what[120];
    snprintf(what, sizeof what, "%s: p50 latency within 5%% of threads + condvar", vname[checked[k]]);
    bench_target(what, d[0] <= 1.05, "paired ratio %.3f", d[0]);
    snprintf(what, sizeof what, "%s: p99 latency within 5%% of threads + condvar", vname[checked[k]]);
    bench_target(what, d[1] <= 1.05, "paired ratio %.3f", d[1]);
    snprintf(what, sizeof what, "%s: throughput within 5%% of threads + condvar", vname[checked[k]]);
    bench_target(what, d[2] >= 0.95, "paired ratio %.3f", d[2]);
  }
  free(lat_buf);
  return bench_finish();
}
