/* SPDX-License-Identifier: MIT */
/* The work/span profile on three programs with three different answers to
 * "why does this not scale?" (docs/profiling.md walks through the output):
 *
 *  1. fib(30) spawning down to fib(2): ample parallelism, but tasks of a
 *     few hundred nanoseconds (the grain is too fine);
 *  2. the same with a cutoff at 18: ample parallelism, tasks of tens of
 *     microseconds (this one scales);
 *  3. a loop of 4 items of 2 ms after a 6 ms serial phase: parallelism
 *     below 2 (too little parallel work).
 *
 *   profile [workers]
 * Each is one pool_profile_begin() / pool_profile_end() region. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <wspool.h>

typedef struct fib_arg {
  int n, cutoff;
  long r;
} fib_arg;

static long fib_plain(int n) { return n < 2 ? n : fib_plain(n - 1) + fib_plain(n - 2); }

static void fib(void *p) {
  fib_arg *a = p;
  if (a->n < a->cutoff) {
    a->r = fib_plain(a->n);
    return;
  }
  fib_arg x = {a->n - 1, a->cutoff, 0}, y = {a->n - 2, a->cutoff, 0};
  pool_task_t t;
  pool_spawn(NULL, &t, fib, &x);
  fib(&y);
  pool_sync(&t);
  a->r = x.r + y.r;
}

static void spin_ms(double ms) {
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  do clock_gettime(CLOCK_MONOTONIC, &t);
  while ((double)(t.tv_sec - t0.tv_sec) * 1e3 + (double)(t.tv_nsec - t0.tv_nsec) * 1e-6 < ms);
}

static void big_item(size_t b, size_t e, void *ctx) {
  (void)ctx;
  for (size_t i = b; i < e; i++) spin_ms(2);
}

static void report(const char *what, const pool_profile_t *pr) {
  printf("%s\n  work %.2f ms, span %.3f ms: parallelism %.1f (burdened %.1f)\n"
         "  %llu tasks of %.2f us on average, %llu steals\n  speedup bounds:",
         what, pr->work * 1e3, pr->span * 1e3, pr->parallelism, pr->burdened_parallelism,
         (unsigned long long)pr->tasks, pr->mean_task * 1e6, (unsigned long long)pr->steals);
  for (int i = 0; i < POOL_PROFILE_CORES; i++)
    printf(" P=%u [%.1f, %.1f]", pr->cores[i], pr->speedup_min[i], pr->speedup_max[i]);
  printf("\n\n");
}

static int run_fib(pool_t *pool, int cutoff, const char *what) {
  pool_profile_t pr;
  fib_arg a = {30, cutoff, 0};
  pool_task_t t;
  int rc = pool_profile_begin(pool);
  if (rc == 0) rc = pool_spawn(pool, &t, fib, &a);
  if (rc == 0) rc = pool_sync(&t);
  if (rc == 0) rc = pool_profile_end(pool, &pr);
  if (rc != 0 || a.r != 832040) {
    fprintf(stderr, "%s: %s (fib %ld)\n", what, pool_strerror(rc), a.r);
    return 1;
  }
  report(what, &pr);
  return 0;
}

int main(int argc, char **argv) {
  pool_config_t cfg;
  pool_config_default(&cfg);
  if (argc > 1) cfg.threads = (unsigned)strtoul(argv[1], NULL, 10);
  pool_t *pool;
  int rc = pool_create(&pool, &cfg);
  if (rc != 0) {
    fprintf(stderr, "pool_create: %s\n", pool_strerror(rc));
    return 1;
  }
  int bad = run_fib(pool, 2, "1. fib(30), a task per call down to fib(2): too fine a grain");
  bad |= run_fib(pool, 18, "2. fib(30), plain recursion below fib(18): scales");
  pool_profile_t pr;
  rc = pool_profile_begin(pool);
  spin_ms(6); /* the serial phase: part of the region's root strand */
  if (rc == 0) rc = pool_parallel_for(pool, 0, 4, 1, big_item, NULL);
  if (rc == 0) rc = pool_profile_end(pool, &pr);
  if (rc != 0) {
    fprintf(stderr, "loop: %s\n", pool_strerror(rc));
    bad = 1;
  } else {
    report("3. a 6 ms serial phase, then 4 items of 2 ms: too little parallelism", &pr);
  }
  pool_destroy(pool);
  return bad;
}
