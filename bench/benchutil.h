/* SPDX-License-Identifier: MIT */
/* Shared helpers for the benchmark programs: clocks, environment knobs,
 * medians, the rows of a variant table and their interleaved measurement,
 * the timed run of a root task, the result table, ratio and target lines.
 *
 * Conventions every benchmark follows:
 *  - Each variant is measured WSPOOL_BENCH_RUNS times (default 5) and the
 *    MEDIAN is reported; rounds are interleaved (variant A, B, C, A, B, C,
 *    ...) so slow drift of a noisy machine hits all variants alike.
 *  - One warm-up run per variant precedes the measured ones (thread creation,
 *    page faults).
 *  - Before each measured run the machine rests 20 ms (bench_settle), so the
 *    previous variant's spinning threads sleep, and then the variant runs
 *    once untimed (the primer) when one run is short (< 0.5 s): a short
 *    run straight after an idle pause measures the machine waking up
 *    rather than the runtime (docs/performance.md has the figures).
 *    WSPOOL_BENCH_COLD=1 leaves the primer out, to measure that cold start.
 *  - A variant whose single run takes long enough that a program would
 *    exceed its time budget (WSPOOL_BENCH_BUDGET seconds for warm-up and
 *    runs, default 45) gets fewer runs, never fewer than 3; the table says
 *    how many.
 *  - Every run checks its answer; a wrong answer makes the program exit 1.
 *    Missing a performance target does not (the table says MET / NOT MET).
 *
 * Header-only, C11 (also includable from C++ for the few plain helpers). */
#ifndef WSPOOL_BENCHUTIL_H
#define WSPOOL_BENCHUTIL_H

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <wspool.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- clocks ---------------------------------------------------------- */

static inline double bench_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline uint64_t bench_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline double bench_cpu_time(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline void bench_sleep_ms(double ms) {
  struct timespec ts;
  ts.tv_sec = (time_t)(ms / 1000.0);
  ts.tv_nsec = (long)((ms - (double)ts.tv_sec * 1000.0) * 1e6);
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* Between two measurements: lets the previous runtime's spinning threads
 * (libgomp, TBB, wspool all spin briefly before they sleep) go to sleep, so
 * they do not steal a core from the next variant on this 2-core machine. */
static inline void bench_settle(void) { bench_sleep_ms(20); }

/* The process's CPU seconds while this thread sleeps `seconds`: what the
 * runtime's idle threads cost. *wall receives the window's length. */
static inline double bench_idle_window(double seconds, double *wall) {
  double c0 = bench_cpu_time(), w0 = bench_now();
  bench_sleep_ms(seconds * 1e3);
  double c1 = bench_cpu_time(), w1 = bench_now();
  *wall = w1 - w0;
  return c1 - c0;
}

/* ---- environment ------------------------------------------------------ */

/* An integer from the environment, `def` when unset; a bad or out-of-range
 * value is reported and the default used. */
static inline long bench_env_long(const char *name, long def, long lo, long hi) {
  const char *s = getenv(name);
  if (!s || !*s) return def;
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || *end || v < lo || v > hi) {
    fprintf(stderr, "%s=%s: not an integer in [%ld, %ld]; using %ld\n", name, s, lo, hi, def);
    return def;
  }
  return v;
}

static inline double bench_env_double(const char *name, double def, double lo, double hi) {
  const char *s = getenv(name);
  if (!s || !*s) return def;
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || *end || !(v >= lo && v <= hi)) {
    fprintf(stderr, "%s=%s: not a number in [%g, %g]; using %g\n", name, s, lo, hi, def);
    return def;
  }
  return v;
}

#define BENCH_MAX_RUNS 101

/* WSPOOL_BENCH_RUNS: measured runs per variant (median of these). */
static inline int bench_runs(void) {
  return (int)bench_env_long("WSPOOL_BENCH_RUNS", 5, 1, BENCH_MAX_RUNS);
}

/* WSPOOL_BENCH_BUDGET: seconds a program's measurements (warm-up included)
 * should take; programs with several parts divide it between them. */
static inline double bench_budget(void) {
  return bench_env_double("WSPOOL_BENCH_BUDGET", 45.0, 1.0, 1e6);
}

/* ---- pools ------------------------------------------------------------- */

/* Keep pool_config_default()'s value (the WSPOOL_* environment). */
#define BENCH_DEFAULT (-1)

/* A pool with `threads` workers and binding `bind` (either BENCH_DEFAULT to
 * keep what pool_config_default() chose); a benchmark cannot go on without
 * it, so failure prints why and exits. */
static inline pool_t *bench_pool(int threads, int bind) {
  pool_config_t cfg;
  pool_config_default(&cfg);
  if (threads != BENCH_DEFAULT) cfg.threads = (unsigned)threads;
  if (bind != BENCH_DEFAULT) cfg.bind = (pool_bind_t)bind;
  pool_t *p = NULL;
  int rc = pool_create(&p, &cfg);
  if (rc) {
    fprintf(stderr, "pool_create(threads=%d, bind=%d): %s\n", threads, bind, pool_strerror(rc));
    exit(1);
  }
  return p;
}

/* ---- statistics ------------------------------------------------------- */

static inline int bench_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Median of v[0..n) (sorts v). */
static inline double bench_median(double *v, int n) {
  if (n <= 0) return 0.0;
  qsort(v, (size_t)n, sizeof(double), bench_cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The p-th percentile (0..100) of sorted v[0..n), nearest rank. */
static inline double bench_percentile_sorted(const double *v, int n, double p) {
  if (n <= 0) return 0.0;
  int k = (int)(p / 100.0 * n + 0.999999) - 1;
  if (k < 0) k = 0;
  if (k >= n) k = n - 1;
  return v[k];
}

/* ---- failures --------------------------------------------------------- */

static int bench_failures;

static inline void bench_fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "WRONG ANSWER: ");
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  bench_failures++;
}

/* Exit status of a benchmark: 0 when every answer was right. */
static inline int bench_exit_status(void) {
  if (bench_failures) {
    fprintf(stderr, "%d wrong answer(s)\n", bench_failures);
    return 1;
  }
  return 0;
}

/* ---- variants and interleaved measurement ----------------------------- */

typedef struct bench_variant bench_variant;
/* One timed run: returns its elapsed seconds (the variant times the region
 * it means, leaving out setup such as copying input), checks its answer
 * and calls bench_fail() when it is wrong. */
typedef double (*bench_run_fn)(bench_variant *v);

struct bench_variant {
  const char *name;      /* row label */
  unsigned threads;      /* threads that compute (for the "vs wspool" column) */
  int kind;              /* BENCH_SEQ, BENCH_WSPOOL, BENCH_PEER */
  int available;         /* 0: peer not built; printed as unavailable */
  bench_run_fn run;
  void *ctx;             /* for run() */
  long param;            /* for run() */
  /* results */
  double t[BENCH_MAX_RUNS];
  /* A second per-run figure a run may record at aux[nt] (the index of the
   * run being recorded); its median lands in aux_med. */
  double aux[BENCH_MAX_RUNS];
  double aux_med;
  int nt;
  int first_round;       /* 1 when t[0] is the warm-up run (a long one) */
  int runs;              /* runs planned */
  double med, min, max;
};

enum { BENCH_SEQ, BENCH_WSPOOL, BENCH_PEER };

/* The rows of a variant table, by kind. A wspool row's ctx is its pool;
 * `p` goes to the variant's param. */
#define BENCH_ROW(k, nm, thr, avail, fn, c, p)                                           \
  {                                                                                        \
    .name = (nm), .threads = (thr), .kind = (k), .available = (avail), .run = (fn),        \
    .ctx = (c), .param = (p)                                                               \
  }
#define BENCH_SEQ_ROW(nm, fn) BENCH_ROW(BENCH_SEQ, nm, 1, 1, fn, NULL, 0)
#define BENCH_WSPOOL_ROW(nm, thr, fn, pool, p) BENCH_ROW(BENCH_WSPOOL, nm, thr, 1, fn, pool, p)
#define BENCH_PEER_ROW(nm, thr, avail, fn, p) BENCH_ROW(BENCH_PEER, nm, thr, avail, fn, NULL, p)
/* The rows "<label> T1" and "<label> T2" on pools[0] (1 worker) and
 * pools[1] (2 workers); bench_ratio_pair prints their ratios line. */
#define BENCH_WSPOOL_PAIR(label, fn, pools, p)          \
  BENCH_WSPOOL_ROW(label " T1", 1, fn, (pools)[0], p), \
  BENCH_WSPOOL_ROW(label " T2", 2, fn, (pools)[1], p)
/* The number of rows of a table (an array, not a pointer). */
#define BENCH_COUNT(rows) ((int)(sizeof(rows) / sizeof((rows)[0])))

/* What bench_measure learns from the warm-up round, per variant. */
typedef struct bench_plan {
  double warm[64]; /* what one more run costs: the whole call and the pause */
  int primed[64];  /* 1: each timed run follows an untimed one (a short run) */
} bench_plan;

/* The warm-up round: one run of each available variant. A long run is warm
 * after its first fraction of a second, so it counts as the first measured
 * run and gets no primer. Returns what the planned runs would take. */
static inline double bench_warm_up(bench_variant *v, int nv, int runs, int prime,
                                   bench_plan *pl) {
  double total = 0;
  for (int i = 0; i < nv; i++) {
    v[i].nt = 0;
    v[i].first_round = 0;
    v[i].runs = runs;
    if (!v[i].available) continue;
    bench_settle();
    double w0 = bench_now();
    double t = v[i].run(&v[i]);
    /* What one more run costs: the whole call (setup and check included)
     * and the pause before it. */
    pl->warm[i] = bench_now() - w0 + 0.02;
    pl->primed[i] = prime && t < 0.5;
    /* The primer: one more run, no pause. */
    if (pl->primed[i]) pl->warm[i] += pl->warm[i] - 0.02;
    if (t >= 0.5) {
      v[i].t[v[i].nt++] = t;
      v[i].first_round = 1;
    }
    total += pl->warm[i] * (runs - v[i].nt);
    fflush(stdout);
    fprintf(stderr, "  warm-up %-30s %10.3f ms\n", v[i].name, t * 1e3);
  }
  return total;
}

/* Trim: take a run from the variant with the largest projected time, until
 * the projected `total` fits in `budget`; never below `minruns`. */
static inline void bench_trim(bench_variant *v, int nv, const bench_plan *pl, double total,
                              double budget, int minruns) {
  while (total > budget) {
    int best = -1;
    double bt = 0;
    for (int i = 0; i < nv; i++) {
      if (!v[i].available || v[i].runs <= minruns) continue;
      double proj = pl->warm[i] * (v[i].runs - v[i].nt);
      if (proj > bt) {
        bt = proj;
        best = i;
      }
    }
    if (best < 0) break;
    v[best].runs--;
    total -= pl->warm[best];
  }
}

/* Median, min and max of each variant's runs, and the median of aux. */
static inline void bench_summarise(bench_variant *v, int nv) {
  for (int i = 0; i < nv; i++) {
    if (!v[i].available || v[i].nt == 0) continue;
    double tmp[BENCH_MAX_RUNS];
    memcpy(tmp, v[i].t, sizeof(double) * (size_t)v[i].nt);
    v[i].med = bench_median(tmp, v[i].nt);
    v[i].min = tmp[0];
    v[i].max = tmp[v[i].nt - 1];
    memcpy(tmp, v[i].aux, sizeof(double) * (size_t)v[i].nt);
    v[i].aux_med = bench_median(tmp, v[i].nt);
  }
}

/* ---- cross-core round trip -------------------------------------------- */

/* What moving a cache line between two cores costs right now: two threads,
 * pinned to the first two CPUs this process may use, hand one line back
 * and forth BENCH_RT_TRIPS times; the mean round trip in ns (0 with fewer
 * than two CPUs). On this project's VM it flips between about 100 ns and
 * about 400 ns for seconds to minutes at a time (the host moves the
 * vCPUs), and every figure that moves work between cores moves with it
 * (docs/performance.md); bench_measure records it before every round. */
enum { BENCH_RT_TRIPS = 20000 };

typedef struct bench_rt_arg {
  volatile int turn __attribute__((aligned(64))); /* 1: the helper's move, 0: the caller's */
  int cpu;
} bench_rt_arg;

static inline void bench_pin(int cpu) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  (void)pthread_setaffinity_np(pthread_self(), sizeof one, &one);
}

static void *bench_rt_helper(void *p) {
  bench_rt_arg *a = (bench_rt_arg *)p;
  bench_pin(a->cpu);
  for (int i = 0; i < BENCH_RT_TRIPS; i++) {
    while (__atomic_load_n(&a->turn, __ATOMIC_ACQUIRE) != 1) {
    }
    __atomic_store_n(&a->turn, 0, __ATOMIC_RELEASE);
  }
  return NULL;
}

static inline double bench_round_trip_ns(void) {
  cpu_set_t mask;
  if (pthread_getaffinity_np(pthread_self(), sizeof mask, &mask) != 0) return 0;
  int cpus[2], n = 0;
  for (int c = 0; c < CPU_SETSIZE && n < 2; c++)
    if (CPU_ISSET(c, &mask)) cpus[n++] = c;
  if (n < 2) return 0;
  static bench_rt_arg a;
  a.turn = 0;
  a.cpu = cpus[1];
  pthread_t th;
  bench_pin(cpus[0]);
  double ns = 0;
  if (pthread_create(&th, NULL, bench_rt_helper, &a) == 0) {
    double t0 = bench_now();
    for (int i = 0; i < BENCH_RT_TRIPS; i++) {
      __atomic_store_n(&a.turn, 1, __ATOMIC_RELEASE);
      while (__atomic_load_n(&a.turn, __ATOMIC_ACQUIRE) != 0) {
      }
    }
    ns = (bench_now() - t0) / BENCH_RT_TRIPS * 1e9;
    pthread_join(th, NULL);
  }
  (void)pthread_setaffinity_np(pthread_self(), sizeof mask, &mask);
  return ns;
}

/* The round trip before the warm-up ([0]) and before each round. */
static double bench_rt_ns[BENCH_MAX_RUNS + 1];
static int bench_rt_n;

/* One line: the round trip before each round, "slow" where it was over
 * twice the fastest (the runs of that round all paid for it). */
static inline void bench_print_round_trips(void) {
  if (bench_rt_n == 0 || bench_rt_ns[0] == 0) return;
  double lo = bench_rt_ns[0];
  for (int i = 1; i < bench_rt_n; i++)
    if (bench_rt_ns[i] < lo) lo = bench_rt_ns[i];
  printf("cross-core round trip before each round (ns): warm-up %.0f%s", bench_rt_ns[0],
         bench_rt_ns[0] > 2 * lo ? " slow" : "");
  for (int i = 1; i < bench_rt_n; i++)
    printf(", %d: %.0f%s", i, bench_rt_ns[i], bench_rt_ns[i] > 2 * lo ? " slow" : "");
  printf("\n");
}

/* Measure all available variants: one warm-up round, then `runs` rounds,
 * interleaved, trimming the runs of slow variants to stay in `budget`
 * seconds (never below 3 runs, or `runs` when that is smaller). */
static inline void bench_measure(bench_variant *v, int nv, int runs, double budget) {
  bench_plan pl;
  const char *cold = getenv("WSPOOL_BENCH_COLD");
  int prime = !(cold && *cold && strcmp(cold, "0") != 0);
  if (nv > 64) nv = 64; /* no benchmark has nearly as many variants */
  double start = bench_now();
  bench_rt_n = 0;
  bench_rt_ns[bench_rt_n++] = bench_round_trip_ns();
  double total = bench_warm_up(v, nv, runs, prime, &pl);
  bench_trim(v, nv, &pl, total, budget - (bench_now() - start), runs < 3 ? runs : 3);
  for (int r = 0; r < runs; r++) {
    bench_rt_ns[bench_rt_n++] = bench_round_trip_ns();
    for (int i = 0; i < nv; i++) {
      if (!v[i].available || v[i].nt >= v[i].runs) continue;
      bench_settle();
      if (pl.primed[i]) (void)v[i].run(&v[i]); /* untimed; checks its answer */
      v[i].t[v[i].nt++] = v[i].run(&v[i]);
    }
  }
  bench_summarise(v, nv);
}

#ifndef __cplusplus
/* The timed region of a run whose root task fn(arg) is submitted into the
 * variant's pool (ctx) from this thread, which then waits until the pool
 * is idle: submission, the whole computation and this thread's wake-up.
 * An error from either call counts as a wrong answer; the caller checks
 * the result. */
static inline double bench_run_root(const bench_variant *v, pool_fn fn, void *arg) {
  pool_t *p = v->ctx;
  double t0 = bench_now();
  int rc = pool_submit(p, fn, arg);
  if (rc == 0) rc = pool_wait_idle(p);
  double t = bench_now() - t0;
  if (rc) bench_fail("%s: %s", v->name, pool_strerror(rc));
  return t;
}
#endif

/* The same over per-run figures of a's and b's own (xa[k] is a's run k,
 * as a->t[k] is): the CPU time of each run, say. */
static inline double bench_paired_of(const bench_variant *a, const double *xa,
                                     const bench_variant *b, const double *xb) {
  double r[BENCH_MAX_RUNS];
  int n = 0;
  for (int k = 0; k < BENCH_MAX_RUNS; k++) {
    int ia = k + a->first_round, ib = k + b->first_round;
    if (ia >= a->nt || ib >= b->nt) break;
    r[n++] = xa[ia] / xb[ib];
  }
  return n ? bench_median(r, n) : 0.0;
}

/* The median over rounds of a's time over b's time in the same round, or 0
 * when they share no round. A shared machine's speed drifts in phases that
 * last seconds, so a ratio of two runs made within the same round, moments
 * apart, is steadier than a ratio of two medians taken over the whole
 * program; benchmarks print both. Variants compared this way are listed
 * next to each other, so a round runs them back to back. */
static inline double bench_paired_ratio(const bench_variant *a, const bench_variant *b) {
  return bench_paired_of(a, a->t, b, b->t);
}

/* One line of the ratios summary: T1/Ts, T1/T2 and the speedup Ts/T2 of a
 * runtime measured with 1 and 2 threads, or "unavailable (why)" when either
 * run is missing (a peer that was not built). */
static inline void bench_ratio_line(const char *label, const bench_variant *ts,
                                    const bench_variant *t1, const bench_variant *t2,
                                    const char *why_missing) {
  if (t1 && t2)
    printf("  %-18s T1/Ts = %.2f  T1/T2 = %.2f  speedup Ts/T2 = %.2f\n", label, t1->med / ts->med,
           t1->med / t2->med, ts->med / t2->med);
  else
    printf("  %-18s unavailable (%s)\n", label, why_missing);
}

/* The variant named `name`, or NULL (or not available). */
static inline bench_variant *bench_find(bench_variant *v, int nv, const char *name) {
  for (int i = 0; i < nv; i++)
    if (strcmp(v[i].name, name) == 0) return v[i].available && v[i].nt ? &v[i] : NULL;
  return NULL;
}

/* The ratios line of the rows BENCH_WSPOOL_PAIR(label, ...) made. */
static inline void bench_ratio_pair(bench_variant *v, int nv, const bench_variant *ts,
                                    const char *label) {
  char n1[64], n2[64];
  snprintf(n1, sizeof n1, "%s T1", label);
  snprintf(n2, sizeof n2, "%s T2", label);
  bench_ratio_line(label, ts, bench_find(v, nv, n1), bench_find(v, nv, n2), "");
}

/* Table: variant, threads, median ms, min..max spread, runs, ratio vs
 * sequential (time / Ts: 1.00 = as fast as sequential, <1 faster), ratio
 * vs the wspool row with the same thread count (time / wspool: >1 means
 * wspool is faster by that factor). */
static inline void bench_table(bench_variant *v, int nv) {
  const bench_variant *seq = NULL;
  for (int i = 0; i < nv && !seq; i++) /* the first sequential row is the baseline */
    if (v[i].kind == BENCH_SEQ && v[i].available && v[i].nt) seq = &v[i];
  printf("%-30s %4s %11s %9s %7s %4s %8s %8s %9s\n", "variant", "thr", "median ms", "min ms",
         "spread", "runs", "T/Tseq", "Tseq/T", "T/Twspool");
  for (int i = 0; i < nv; i++) {
    bench_variant *x = &v[i];
    if (!x->available) {
      printf("%-30s %4u %11s   (peer unavailable: built without it)\n", x->name, x->threads,
             "-");
      continue;
    }
    const bench_variant *ws = NULL;
    for (int j = 0; j < nv; j++)
      if (v[j].kind == BENCH_WSPOOL && v[j].threads == x->threads && v[j].available && v[j].nt) {
        ws = &v[j];
        break;
      }
    char sp[16], r1[16], r2[16], r3[16];
    snprintf(sp, sizeof sp, "%.0f%%", x->med > 0 ? 100.0 * (x->max - x->min) / x->med : 0.0);
    if (seq && x->med > 0) {
      snprintf(r1, sizeof r1, "%.2f", x->med / seq->med);
      snprintf(r2, sizeof r2, "%.2f", seq->med / x->med);
    } else {
      snprintf(r1, sizeof r1, "-");
      snprintf(r2, sizeof r2, "-");
    }
    if (ws && x->kind != BENCH_SEQ)
      snprintf(r3, sizeof r3, "%.2f", x->med / ws->med);
    else
      snprintf(r3, sizeof r3, "-");
    printf("%-30s %4u %11.3f %9.3f %7s %4d %8s %8s %9s\n", x->name, x->threads, x->med * 1e3,
           x->min * 1e3, sp, x->nt, r1, r2, r3);
  }
  printf("(ratios use the medians; spread = (max-min)/median; T/Tseq = time relative to\n"
         " the sequential program; Tseq/T = speedup; T/Twspool = time relative to wspool\n"
         " with the same thread count, >1 means wspool is faster)\n");
  bench_print_round_trips();
}

#ifndef __cplusplus
#include <pthread.h>

/* ---- machine check ---------------------------------------------------- */

/* How much of a second core this process gets right now: the throughput of
 * two threads of pure arithmetic running together, relative to one thread
 * alone (2.00 = two free cores, 1.00 = one). Scaling figures measured while
 * this is well below 2 say more about the machine than about the runtime. */
static void *bench_probe_spin(void *arg) {
  double *secs = (double *)arg;
  volatile uint64_t sink;
  uint64_t x = 88172645463325252ull;
  double t0 = bench_now();
  for (long i = 0; i < 20000000; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
  }
  sink = x;
  (void)sink;
  *secs = bench_now() - t0;
  return NULL;
}

static inline double bench_capacity(void) {
  double one[3], both[3];
  for (int r = 0; r < 3; r++) {
    double a = 0, b = 0;
    bench_probe_spin(&one[r]);
    pthread_t th;
    double t0 = bench_now();
    if (pthread_create(&th, NULL, bench_probe_spin, &a) != 0) return 0;
    bench_probe_spin(&b);
    pthread_join(th, NULL);
    both[r] = bench_now() - t0;
  }
  return 2.0 * bench_median(one, 3) / bench_median(both, 3);
}

static inline void bench_print_capacity(const char *when) {
  double c = bench_capacity();
  printf("   machine check (%s): 2 busy threads ran at %.2fx one thread's rate "
         "(2.00 = two free cores)%s; cross-core round trip %.0f ns\n",
         when, c, c < 1.7 ? "  <- the machine is busy: scaling figures are unreliable" : "",
         bench_round_trip_ns());
  fflush(stdout);
}
#endif

/* "target: <what> -> MET / NOT MET (<detail>)". `met` < 0: cannot tell. */
static inline void bench_target(const char *what, int met, const char *fmt, ...) {
  char detail[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(detail, sizeof detail, fmt, ap);
  va_end(ap);
  printf("target: %s -> %s (%s)\n", what, met < 0 ? "N/A" : met ? "MET" : "NOT MET", detail);
}

static inline void bench_header(const char *prog, const char *what) {
  printf("== %s: %s\n", prog, what);
  printf("   runs per variant: %d (WSPOOL_BENCH_RUNS), median reported; budget %.0f s "
         "(WSPOOL_BENCH_BUDGET)\n",
         bench_runs(), bench_budget());
#if defined(BENCH_HAVE_OPENMP)
  printf("   peers: OpenMP yes, ");
#else
  printf("   peers: OpenMP unavailable, ");
#endif
#if defined(BENCH_HAVE_TBB)
  printf("oneTBB yes\n");
#else
  printf("oneTBB unavailable\n");
#endif
  fflush(stdout);
#ifndef __cplusplus
  bench_print_capacity("start");
#endif
}

#ifndef __cplusplus
/* The end of a benchmark: the machine check again, then the exit status. */
static inline int bench_finish(void) {
  bench_print_capacity("end");
  return bench_exit_status();
}
#endif

#ifdef __cplusplus
}
#endif

#endif /* WSPOOL_BENCHUTIL_H */
