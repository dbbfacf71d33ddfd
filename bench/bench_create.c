/* SPDX-License-Identifier: MIT */
/* bench_create: pool_create + pool_destroy of many workers, beside the
 * same number of plain threads (docs/scaling.md, "Creation and
 * destruction").
 *
 * For P = 64, 256, 1024 and 4096 (WSPOOL_BENCH_CREATE_MAX caps it):
 *  - plain threads: P pthreads of the pool's stack size, each blocking on
 *    a condition variable, then a broadcast and P joins (what any pool of
 *    P threads pays at the least);
 *  - wspool: pool_create() of P unbound workers (POOL_BIND_NONE: binding
 *    P threads to two CPUs would time the binder) and pool_destroy(),
 *    nothing run in between: the workers start, look for work once and
 *    sleep; destroy wakes them, they look once more and leave.
 * Each is measured WSPOOL_BENCH_RUNS times (default 5), interleaved
 * (threads, wspool, threads, wspool, ...), after one warm-up of each;
 * the table gives medians with min and max, and wspool / threads as the
 * median with min and max of the paired ratios.
 * Target (issue: 4096 workers): wspool's create + destroy of 4096 under
 * 0.5 s. No peer: OpenMP and oneTBB keep their threads for the process
 * and have no create/destroy of a pool of a given size to set beside it. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <wspool.h>

#include "benchutil.h"

static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static int gate_open;

static void *blocked_thread(void *arg) {
  (void)arg;
  pthread_mutex_lock(&gate_lock);
  while (!gate_open) pthread_cond_wait(&gate_cond, &gate_lock);
  pthread_mutex_unlock(&gate_lock);
  return NULL;
}

/* P plain threads created, released and joined; seconds, or -1. */
static double run_threads(unsigned n, size_t stack) {
  pthread_t *t = malloc(n * sizeof *t);
  pthread_attr_t attr;
  if (!t || pthread_attr_init(&attr) != 0) {
    free(t);
    return -1;
  }
  pthread_attr_setstacksize(&attr, stack);
  gate_open = 0;
  double t0 = bench_now();
  unsigned made = 0;
  while (made < n && pthread_create(&t[made], &attr, blocked_thread, NULL) == 0) made++;
  pthread_mutex_lock(&gate_lock);
  gate_open = 1;
  pthread_cond_broadcast(&gate_cond);
  pthread_mutex_unlock(&gate_lock);
  for (unsigned i = 0; i < made; i++) pthread_join(t[i], NULL);
  double s = bench_now() - t0;
  pthread_attr_destroy(&attr);
  free(t);
  if (made < n) {
    bench_fail("threads: only %u of %u threads could start", made, n);
    return -1;
  }
  return s;
}

/* pool_create + pool_destroy of n workers; seconds, or -1. */
static double run_pool(unsigned n) {
  pool_config_t cfg;
  pool_config_default(&cfg);
  cfg.threads = n;
  cfg.bind = POOL_BIND_NONE;
  pool_t *p = NULL;
  double t0 = bench_now();
  int rc = pool_create(&p, &cfg);
  if (rc == 0) rc = pool_destroy(p);
  double s = bench_now() - t0;
  if (rc != 0) {
    bench_fail("wspool: %u workers: %s", n, pool_strerror(rc));
    return -1;
  }
  return s;
}

static void stats(double *v, int n, double *med, double *lo, double *hi) {
  double s[BENCH_MAX_RUNS];
  for (int i = 0; i < n; i++) s[i] = v[i];
  *med = bench_median(s, n);
  *lo = s[0];
  *hi = s[n - 1];
}

int main(void) {
  int runs = bench_runs();
  long max = bench_env_long("WSPOOL_BENCH_CREATE_MAX", 4096, 2, POOL_MAX_THREADS);
  pool_config_t def;
  pool_config_default(&def);
  if (def.stack_size == 0) def.stack_size = (size_t)8 << 20; /* the pool's default (wspool.h) */
  printf("bench_create: pool_create + pool_destroy of P workers against P plain threads\n"
         "(stack %zu KiB each), %d runs, interleaved; seconds, median [min, max]\n\n",
         def.stack_size >> 10, runs);
  printf("%6s  %-28s  %-28s  %s\n", "P", "plain threads", "wspool", "wspool / threads");
  double at4096 = -1;
  static const unsigned sizes[] = {64, 256, 1024, 4096};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    unsigned n = sizes[k];
    if ((long)n > max) break;
    double th[BENCH_MAX_RUNS], ws[BENCH_MAX_RUNS], ratio[BENCH_MAX_RUNS];
    run_threads(n, def.stack_size); /* warm-up */
    run_pool(n);
    for (int r = 0; r < runs; r++) {
      bench_settle();
      th[r] = run_threads(n, def.stack_size);
      bench_settle();
      ws[r] = run_pool(n);
      ratio[r] = th[r] > 0 ? ws[r] / th[r] : 0;
    }
    double tm, tl, thh, wm, wl, wh, rm, rl, rh;
    stats(th, runs, &tm, &tl, &thh);
    stats(ws, runs, &wm, &wl, &wh);
    stats(ratio, runs, &rm, &rl, &rh);
    printf("%6u  %7.4f [%7.4f, %7.4f]  %7.4f [%7.4f, %7.4f]  %5.2fx [%5.2f, %5.2f]\n", n, tm, tl,
           thh, wm, wl, wh, rm, rl, rh);
    if (n == 4096) at4096 = wm;
  }
  if (at4096 >= 0)
    printf("\ntarget: 4096 workers created and destroyed in under 0.5 s: %.3f s, %s\n", at4096,
           at4096 < 0.5 ? "MET" : "NOT MET");
  return bench_exit_status();
}
