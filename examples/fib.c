/* SPDX-License-Identifier: MIT */
/* fib: fork/join at its finest grain.
 *
 * fib(n) spawns fib(n-1), computes fib(n-2) itself, then syncs: one task per
 * call and no sequential cutoff, so this measures what a spawn/sync pair
 * costs. The frame lives on the caller's stack; spawning allocates nothing.
 * It runs the tree three times: with pool_sync, with pool_take, and as a
 * typed task (POOL_STATIC_TASK, below), the way to write it for speed.
 *
 *   usage: fib [n [workers]]
 *     n        0..92 (default 37)
 *     workers  0 = the default pool, one worker per CPU (default)
 *
 * Exits 0 only if the parallel result equals the sequential one.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <wspool.h>

/* The sequential baseline. */
static long fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

/* Inside a task, spawn and sync only fail on misuse (EINVAL): stop loudly. */
#define CHECK(call) check((call), #call)
static void check(int rc, const char *what) {
  if (rc) {
    fprintf(stderr, "fib: %s: %s\n", what, pool_strerror(rc));
    exit(1);
  }
}

/* A task takes one void *: its input and its output live in a small struct. */
typedef struct {
  int n;
  long result;
} fib_args;

static void fib_task(void *p) {
  fib_args *a = p;
  if (a->n < 2) {
    a->result = a->n;
    return;
  }
  fib_args x = {a->n - 1, 0}, y = {a->n - 2, 0};
  pool_task_t t;                             /* the child's frame, on our stack */
  CHECK(pool_spawn(NULL, &t, fib_task, &x)); /* NULL: this worker's pool */
  fib_task(&y);                              /* meanwhile, the other half here */
  CHECK(pool_sync(&t));                      /* x.result is ready after this */
  a->result = x.result + y.result;
}

/* The same tree written for speed with pool_take(): when no thief has
 * started the spawned half, the caller takes it back and calls pfib()
 * directly, so the common case is a plain call (arguments and result in
 * registers); the frame and its struct are used only when it was stolen. */
static long pfib(int n);

static void pfib_task(void *p) {
  fib_args *a = p;
  a->result = pfib(a->n);
}

static long pfib(int n) {
  if (n < 2) return n;
  fib_args x = {n - 1, 0};
  pool_task_t t;
  CHECK(pool_spawn(NULL, &t, pfib_task, &x));
  long y = pfib(n - 2);
  int rc = pool_take(&t);
  if (rc == POOL_TAKEN)
    x.result = pfib(n - 1); /* nobody started it: do it here */
  else
    CHECK(rc); /* 0: a thief ran it, x.result is ready */
  return x.result + y;
}

/* The same tree as a typed task. POOL_STATIC_TASK declares the function
 * (static long tfib(int)), tfib_frame (the frame: a pool_task_t, the
 * argument, room for the result) and tfib_spawn/tfib_sync: spawn stores n
 * and spawns; sync returns tfib(n - 1) by value, calling tfib() right there
 * when nobody stole the task. No struct, no cast, no void *. */
POOL_STATIC_TASK(long, tfib, int);

static long tfib(int n) {
  if (n < 2) return n;
  tfib_frame f;
  CHECK(tfib_spawn(&f, n - 1));
  long y = tfib(n - 2);
  return tfib_sync(&f) + y;
}

static void tfib_task(void *p) {
  fib_args *a = p;
  a->result = tfib(a->n);
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int parse(const char *s, long lo, long hi, long *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi) return EINVAL;
  *out = v;
  return 0;
}

int main(int argc, char **argv) {
  long n = 37, workers = 0;
  if (argc > 3 || (argc > 1 && parse(argv[1], 0, 92, &n)) ||
      (argc > 2 && parse(argv[2], 0, POOL_MAX_THREADS, &workers))) {
    fprintf(stderr, "usage: %s [n (0..92) [workers (0..%u, 0 = all CPUs)]]\n", argv[0],
            POOL_MAX_THREADS);
    return 1;
  }

  /* The process-wide default pool (one worker per CPU), or a pool of our own. */
  pool_t *pool = NULL;
  if (workers == 0) {
    pool = pool_default();
    if (!pool) {
      fprintf(stderr, "fib: cannot create the default pool\n");
      return 1;
    }
  } else {
    pool_config_t cfg;
    pool_config_default(&cfg);
    cfg.threads = (unsigned)workers;
    int rc = pool_create(&pool, &cfg);
    if (rc) {
      fprintf(stderr, "fib: pool_create: %s\n", pool_strerror(rc));
      return 1;
    }
  }

  double t0 = now();
  long expect = fib((int)n);
  double t_seq = now() - t0;

  /* Start the recursion on a worker: pool_submit() from outside the pool puts
   * it on the global queue, and pool_wait_idle() blocks until it (and so the
   * whole tree, which it syncs) has finished. */
  fib_args root = {(int)n, 0};
  t0 = now();
  int rc = pool_submit(pool, fib_task, &root);
  if (rc == 0) rc = pool_wait_idle(pool);
  double t_par = now() - t0;
  if (rc) fprintf(stderr, "fib: %s\n", pool_strerror(rc));

  fib_args root2 = {(int)n, 0};
  t0 = now();
  if (rc == 0) rc = pool_submit(pool, pfib_task, &root2);
  if (rc == 0) rc = pool_wait_idle(pool);
  double t_take = now() - t0;
  if (rc) fprintf(stderr, "fib: %s\n", pool_strerror(rc));

  fib_args root3 = {(int)n, 0};
  t0 = now();
  if (rc == 0) rc = pool_submit(pool, tfib_task, &root3);
  if (rc == 0) rc = pool_wait_idle(pool);
  double t_typed = now() - t0;
  if (rc) fprintf(stderr, "fib: %s\n", pool_strerror(rc));

  int ok = rc == 0 && root.result == expect && root2.result == expect && root3.result == expect;
  printf("fib(%ld) = %ld (spawn/sync), %ld (spawn/take), %ld (typed), expected %ld: %s\n", n,
         root.result, root2.result, root3.result, expect, ok ? "ok" : "WRONG");
  printf("sequential %.3f s; on %u workers: spawn/sync %.3f s (speedup %.2fx), spawn/take %.3f s"
         " (%.2fx), typed %.3f s (%.2fx)\n",
         t_seq, pool_threads(pool), t_par, t_seq / t_par, t_take, t_seq / t_take, t_typed,
         t_seq / t_typed);
  /* fib(n) makes 2 fib(n+1) - 1 calls, each one task here. The compiler turns
   * the sequential fib() into far fewer calls (a loop around one recursion),
   * so with no cutoff expect a speedup below 1 on a few cores: this example
   * measures the cost of a spawn/sync pair (run it with 1 worker for that). */
  long a = 0, b = 1; /* b = fib(n + 1) */
  for (long i = 0; i < n; i++) {
    long s = a + b;
    a = b;
    b = s;
  }
  printf("%ld tasks, %.1f ns of wall time each\n", 2 * b - 1, 1e9 * t_par / (double)(2 * b - 1));

  if (workers != 0 && (rc = pool_destroy(pool)) != 0) {
    fprintf(stderr, "fib: pool_destroy: %s\n", pool_strerror(rc));
    ok = 0;
  }
  return ok ? 0 : 1;
}
