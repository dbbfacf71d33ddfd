/* SPDX-License-Identifier: MIT */
/* bench_count: atomic operations per task, counted, not timed (issue 31).
 * Needs the counting build (meson setup B -Dcount_atomics=true; runtime/
 * count.h); in any other build it says so and exits 0.
 *
 * For unbound pools of 2, 8, 64 and 256 workers (oversubscribed on a small
 * machine, which is the point: nothing here is a time), four workloads,
 * each run once to warm up and once counted:
 *   fib    fib(25) by pool_spawn/pool_sync, one task per spawn;
 *   uts    a geometric UTS tree (T1's shape and seed, depth 8), a task per
 *          node, children synced last first;
 *   loop   pool_parallel_for over 2^20 items, automatic grain, 8 times,
 *          from a task (a worker's loop); "units" are the body's calls
 *          (pieces);
 *   loop-out  the same 8 loops called from main (outside the pool);
 *   submit 100000 pool_submit calls from main (outside), then
 *          pool_wait_idle; "units" are the submissions.
 * Counted over every thread of the process (main included) between the
 * start of the counted run and its pool_wait_idle. Columns, per unit
 * (a task run: pool_worker_stats' `tasks`, summed; for loop and submit as
 * said above):
 *   shared  RMWs on words of no worker's block (pool, lanes, groups, loop
 *           jobs, frames on other threads' stacks, batches)
 *   other   RMWs on another worker's block (its deque's top, ...)
 *   own     RMWs on the calling worker's own block
 *   stack   RMWs on the calling thread's own stack
 *   fence   seq_cst fences (an mfence on x86); acq/rel fences (none on
 *           x86) are in fence_ar
 *   heavy   membarrier(2) calls; lock: global queue lock attempts; wake:
 *           futex wakes
 * and steals per unit, shared RMWs per steal (sh/steal) and in all (sh
 * total: for the loops, over 8 calls). Each answer is
 * checked (fib's value, the tree's node count against a sequential count,
 * the loop's sum, the submissions run); exit 1 on a wrong one.
 * Environment: BENCH_COUNT_P="2 8" (the pool sizes), BENCH_COUNT_ONLY=fib
 * (one workload), BENCH_COUNT_SITES=1 (also print, on stderr, each
 * counted run's counts by call site: offsets into this program, which
 * `nm -n` maps to functions; runtime/count.h). */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wspool.h>

#include "bench_uts.h"
#include "count.h"

static int failures;
#define BAD(...)                        \
  do {                                  \
    fprintf(stderr, "bench_count: ");   \
    fprintf(stderr, __VA_ARGS__);       \
    fputc('\n', stderr);                \
    failures++;                         \
  } while (0)

/* ---- fib ---- */

enum { FIB_N = 25 };

typedef struct fib_arg {
  int n;
  long r;
} fib_arg;

static void fib_task(void *p) {
  fib_arg *a = p;
  if (a->n < 2) {
    a->r = a->n;
    return;
  }
  fib_arg x = {a->n - 1, 0}, y = {a->n - 2, 0};
  pool_task_t t;
  pool_spawn(NULL, &t, fib_task, &x);
  fib_task(&y);
  pool_sync(&t);
  a->r = x.r + y.r;
}

static long fib_seq(int n) {
  long a = 0, b = 1;
  for (int i = 0; i < n; i++) {
    long c = a + b;
    a = b;
    b = c;
  }
  return a;
}

/* ---- UTS ---- */

static const uts_tree uts_small = {"T1 shape, depth 8", UTS_GEO, 4.0, 8, 0, 0, 19, 0, 0};

static long uts_seq(const uts_state *s, int height) {
  int n = uts_children(&uts_small, s, height);
  long c = 1;
  for (int i = 0; i < n; i++) {
    uts_state k;
    uts_rng_spawn(s, &k, i);
    c += uts_seq(&k, height + 1);
  }
  return c;
}

typedef struct uts_arg {
  const uts_state *parent;
  int index, height;
  long count;
} uts_arg;

typedef struct uts_kid {
  pool_task_t t;
  uts_arg a;
} uts_kid;

static void uts_task(void *p);

static long uts_node(const uts_state *s, int height) {
  int n = uts_children(&uts_small, s, height);
  if (n == 0) return 1;
  uts_kid k[UTS_MAX_CHILDREN];
  for (int i = 0; i < n; i++) {
    k[i].a = (uts_arg){s, i, height + 1, 0};
    pool_spawn(NULL, &k[i].t, uts_task, &k[i].a);
  }
  long c = 1;
  for (int i = n; i-- > 0;) {
    pool_sync(&k[i].t);
    c += k[i].a.count;
  }
  return c;
}

static void uts_task(void *p) {
  uts_arg *a = p;
  uts_state s;
  uts_rng_spawn(a->parent, &s, a->index);
  a->count = uts_node(&s, a->height);
}

static void uts_root(void *p) {
  long *count = p;
  uts_state s;
  uts_rng_init(&s, uts_small.seed);
  *count = uts_node(&s, 0);
}

/* ---- loop and submit ---- */

enum { LOOP_N = 1 << 20, LOOP_REPS = 8, SUBMITS = 100000 };

static pool_t *loop_pool; /* the pool the loops run on */
static _Atomic unsigned long loop_sum, loop_pieces, submits_run;

/* Counted into locals and added once per piece: the bench's own atomics
 * (C11, not the runtime's) are not counted, but stay off the items. */
static void loop_body(size_t b, size_t e, void *ctx) {
  (void)ctx;
  unsigned long s = 0;
  for (size_t i = b; i < e; i++) s += i;
  atomic_fetch_add_explicit(&loop_sum, s, memory_order_relaxed);
  atomic_fetch_add_explicit(&loop_pieces, 1, memory_order_relaxed);
}

/* LOOP_REPS loops, each checked; *ok cleared on a wrong one. Run as a
 * task (loop: from a worker, loops nested in other work) or from main
 * (loop-out). */
static void loops(void *arg) {
  int *ok = arg;
  unsigned long want = (unsigned long)LOOP_N * (LOOP_N - 1) / 2;
  for (int r = 0; r < LOOP_REPS; r++) {
    atomic_store(&loop_sum, 0);
    if (pool_parallel_for(loop_pool, 0, LOOP_N, 0, loop_body, NULL) || atomic_load(&loop_sum) != want)
      *ok = 0;
  }
}

static void submitted(void *arg) {
  (void)arg;
  atomic_fetch_add_explicit(&submits_run, 1, memory_order_relaxed);
}

/* ---- running and counting ---- */

typedef struct totals {
  ws_count c;
  uint64_t tasks, steals;
} totals;

/* The workers' statistics and every thread's counts. pool_worker_stats
 * enters the pool's gate (an RMW on the pool struct, and one to leave) for
 * each worker: so the counts are read after the statistics at the start
 * and before them at the end, and the measurement's own RMWs fall outside
 * what is counted. */
static void stats(pool_t *p, totals *t) {
  t->tasks = t->steals = 0;
  for (unsigned i = 0, n = pool_threads(p); i < n; i++) {
    pool_worker_stats_t st;
    if (pool_worker_stats(p, i, &st) != 0) continue;
    t->tasks += st.tasks;
    t->steals += st.steals;
  }
}

static long uts_expected;

/* One run of workload `w`; returns its units other than tasks (loop
 * pieces, submissions), or 0 when units are the tasks run. */
static uint64_t run(pool_t *p, const char *w) {
  if (!strcmp(w, "fib")) {
    fib_arg a = {FIB_N, -1};
    if (pool_submit(p, fib_task, &a) || pool_wait_idle(p)) BAD("fib: submit or wait failed");
    if (a.r != fib_seq(FIB_N)) BAD("fib(%d) = %ld, expected %ld", FIB_N, a.r, fib_seq(FIB_N));
    return 0;
  }
  if (!strcmp(w, "uts")) {
    long count = -1;
    if (pool_submit(p, uts_root, &count) || pool_wait_idle(p)) BAD("uts: submit or wait failed");
    if (count != uts_expected) BAD("uts: %ld nodes, expected %ld", count, uts_expected);
    return 0;
  }
  if (!strcmp(w, "loop") || !strcmp(w, "loop-out")) {
    atomic_store(&loop_pieces, 0);
    loop_pool = p;
    int ok = 1;
    if (w[4]) {
      loops(&ok); /* from main: the outside caller's path */
    } else if (pool_submit(p, loops, &ok)) {
      BAD("loop: submit failed");
    }
    if (pool_wait_idle(p)) BAD("loop: wait failed");
    if (!ok) BAD("%s: a loop failed or summed wrong", w);
    return atomic_load(&loop_pieces);
  }
  atomic_store(&submits_run, 0);
  for (int i = 0; i < SUBMITS; i++)
    if (pool_submit(p, submitted, NULL)) BAD("submit: pool_submit failed");
  if (pool_wait_idle(p)) BAD("submit: wait failed");
  if (atomic_load(&submits_run) != SUBMITS)
    BAD("submit: %lu run, expected %d", atomic_load(&submits_run), SUBMITS);
  return SUBMITS;
}

static double per(uint64_t n, uint64_t units) { return units ? (double)n / (double)units : 0.0; }

int main(void) {
  if (!WS_COUNT_BUILD) {
    printf("bench_count: counting build off (meson setup B -Dcount_atomics=true); nothing to count\n");
    return 0;
  }
  static const char *const loads[] = {"fib", "uts", "loop", "loop-out", "submit"};
  const char *only = getenv("BENCH_COUNT_ONLY");
  unsigned sizes[16], nsizes = 0;
  const char *env = getenv("BENCH_COUNT_P");
  if (env) {
    for (char *end; nsizes < 16; env = end) {
      unsigned long v = strtoul(env, &end, 10);
      if (end == env) break;
      if (v) sizes[nsizes++] = (unsigned)v;
    }
  }
  if (!nsizes) {
    static const unsigned def[] = {2, 8, 64, 256};
    for (; nsizes < 4; nsizes++) sizes[nsizes] = def[nsizes];
  }
#ifdef WS_COUNT_ATOMICS
  const char *se = getenv("BENCH_COUNT_SITES");
  bool sites = se && *se && *se != '0';
  ws_count_sites_on(sites);
#endif
  uts_state root;
  uts_rng_init(&root, uts_small.seed);
  uts_expected = uts_seq(&root, 0);

  printf("Atomic operations per unit (counting build; counts, not times). fib(%d): %ld tasks;"
         " uts %s: %ld nodes;\nloop: %d x %d items, per piece; submit: %d outside pool_submit calls,"
         " per call. Unbound pools.\n\n",
         FIB_N, fib_seq(FIB_N + 1), uts_small.name, uts_expected, LOOP_REPS, LOOP_N, SUBMITS);
  printf("%-8s %4s %8s %8s | %7s %7s %7s %7s | %7s %7s %7s %7s %7s | %8s %8s\n", "work", "P",
         "units", "steals/u", "shared", "other", "own", "stack", "fence", "fnc_ar", "heavy", "lock",
         "wake", "sh/steal", "sh total");
  for (unsigned s = 0; s < nsizes; s++) {
    pool_config_t cfg;
    pool_config_default(&cfg);
    cfg.threads = sizes[s];
    cfg.bind = POOL_BIND_NONE;
    pool_t *p = NULL;
    int rc = pool_create(&p, &cfg);
    if (rc) {
      BAD("pool_create(%u): %s", sizes[s], pool_strerror(rc));
      continue;
    }
    for (size_t l = 0; l < sizeof loads / sizeof loads[0]; l++) {
      const char *w = loads[l];
      if (only && strcmp(only, w)) continue;
      run(p, w); /* warm up: grown arrays, node caches, sleeping workers */
      totals a, b;
      stats(p, &a);
#ifdef WS_COUNT_ATOMICS
      ws_count_sites_reset();
#endif
      ws_count_all(&a.c);
      uint64_t units = run(p, w);
      ws_count_all(&b.c);
#ifdef WS_COUNT_ATOMICS
      char title[64];
      snprintf(title, sizeof title, "%s, %u workers", w, sizes[s]);
      if (sites) ws_count_sites_dump(stderr, title);
#endif
      stats(p, &b);
      ws_count d;
      ws_count_diff(&d, &b.c, &a.c);
      uint64_t tasks = b.tasks - a.tasks, steals = b.steals - a.steals;
      if (!units) units = tasks;
      char shs[32] = "-";
      if (steals) snprintf(shs, sizeof shs, "%.2f", per(d.n[WS_CNT_SHARED], steals));
      printf("%-8s %4u %8llu %8.4f | %7.4f %7.4f %7.4f %7.4f | %7.4f %7.4f %7.4f %7.4f %7.4f | %8s %8llu\n",
             w, sizes[s], (unsigned long long)units, per(steals, units), per(d.n[WS_CNT_SHARED], units),
             per(d.n[WS_CNT_OTHER], units), per(d.n[WS_CNT_OWN], units), per(d.n[WS_CNT_STACK], units),
             per(d.n[WS_CNT_FENCE], units), per(d.n[WS_CNT_FENCE_AR], units),
             per(d.n[WS_CNT_HEAVY], units), per(d.n[WS_CNT_LOCK], units), per(d.n[WS_CNT_WAKE], units),
             shs, (unsigned long long)d.n[WS_CNT_SHARED]);
      fflush(stdout);
    }
    pool_destroy(p);
  }
  if (failures) {
    fprintf(stderr, "bench_count: %d wrong answers\n", failures);
    return 1;
  }
  return 0;
}
