/* SPDX-License-Identifier: MIT */
/* bench_submit: fire-and-forget submission, wake latency and idle cost.
 *
 * 1. Idle CPU: a fresh pool of 2 workers idles 2 s; the process CPU time
 *    (CLOCK_PROCESS_CPUTIME_ID) over that window, as a percentage of one
 *    core. Again for the same pool after a burst of work, and for a oneTBB
 *    arena after work. Measured first, before any other runtime exists here.
 *    Target: at most 0.05% of a core.
 * 2. Wake latency: the pool idles (sleep WSPOOL_BENCH_WAKE_SLEEP_MS, default
 *    5 ms, so the workers sleep), then one task is submitted that stamps
 *    CLOCK_MONOTONIC when it starts; latency = start - time just before the
 *    submit. WSPOOL_BENCH_WAKE_REPS times (default 300); p50/p90/p99/max.
 *    Same with tbb::task_arena::enqueue. Target: p50 at most 26 us.
 * 3. Throughput: N tiny tasks (an atomic increment; WSPOOL_BENCH_SUBMIT_N,
 *    default 2000000) on a pool of 2 workers: pool_submit from 1 outside
 *    thread, from 4 outside threads (N/4 each), pool_submit_n in batches of
 *    64 from 1 outside thread, and pool_submit from inside one task; then
 *    pool_wait_idle. Time = first submit until all ran.
 *    Beside it oneTBB: task_arena::enqueue on an arena of 2 worker threads
 *    (no master slot), from 1 and 4 outside threads and from inside one
 *    enqueued task; and GLib's GThreadPool (2 exclusive threads),
 *    g_thread_pool_push from 1 and 4 outside threads. For both peers the
 *    last task to run wakes the waiting main thread.
 *    The sequential row is N direct calls of the same body.
 *    7 measured runs per variant by default; the table shows min, median
 *    and max, so a bimodal variant shows. Targets: 1 outside producer at
 *    least 10 M tasks/s and 3x the faster peer, 4 producers at least the
 *    1-producer rate, batches at least 30 M tasks/s, inside a task at
 *    least 20 M tasks/s.
 *    From inside a task again on a pool of 1 worker: the submission's and
 *    the batch's own cost a task, with no second core to take any of it
 *    (nothing crosses cores there, so this row does not move with the
 *    host's cross-core latency, which the 2-worker rows follow).
 *    Bounded: the 1-producer row again on a pool of 2 workers created with
 *    max_queued = 64 (the producer waits whenever 64 of its tasks wait).
 *    Target: at least half the unbounded 1-producer rate.
 * Environment: WSPOOL_BENCH_SUBMIT_N, WSPOOL_BENCH_WAKE_REPS,
 * WSPOOL_BENCH_WAKE_SLEEP_MS, WSPOOL_BENCH_IDLE_S (default 2), and
 * WSPOOL_BENCH_RUNS (default 7 here) / WSPOOL_BENCH_BUDGET (default 150 s
 * here) for the throughput part.
 * Exit 1 when a task was lost or ran twice. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <wspool.h>
#ifdef BENCH_HAVE_GLIB
#include <glib.h>
#define HAVE_GLIB 1
#else
#define HAVE_GLIB 0
#endif

#include "benchutil.h"
#include "peers.h"

enum { POOL_WORKERS = 2, PRODUCERS = 4, BATCH = 64 };

static long n_tasks;
/* The tasks' counter, on a cache line of its own. Beside n_tasks, which the
 * producers' loops read on every submit, each increment took that line
 * away from the producer: a miss per submit that halved the one-producer
 * rows (false sharing in the benchmark, not a cost of the runtime). */
static struct {
  _Alignas(64) _Atomic long v;
  char pad[64 - sizeof(long)];
} done_line;
#define done_count (done_line.v)

/* The task body: one relaxed atomic increment (the oneTBB shim's body is
 * the same). */
static void tiny(void *arg) {
  (void)arg;
  atomic_fetch_add_explicit(&done_count, 1, memory_order_relaxed);
}

static void check_count(const char *who, long want) {
  long got = atomic_load(&done_count);
  if (got != want) bench_fail("%s: %ld tasks ran, %ld submitted", who, got, want);
}

/* ---- throughput variants ---- */

/* The end of a run whose tasks went in from outside the pool (ctx): waits
 * until every task ran (rc: the submission's error, if any), records the
 * submission time ts - t0 in aux and checks the count. */
static double ws_finish(bench_variant *v, int rc, double t0, double ts) {
  if (rc == 0) rc = pool_wait_idle(v->ctx);
  double t = bench_now() - t0;
  if (rc) bench_fail("%s: %s", v->name, pool_strerror(rc));
  v->aux[v->nt] = ts - t0;
  check_count(v->name, n_tasks);
  return t;
}

static double run_seq(bench_variant *v) {
  void (*volatile body)(void *) = tiny; /* a call per task, like the pools */
  atomic_store(&done_count, 0);
  double t0 = bench_now();
  for (long i = 0; i < n_tasks; i++) body(NULL);
  double t = bench_now() - t0;
  v->aux[v->nt] = t;
  check_count(v->name, n_tasks);
  return t;
}

/* A pool of POOL_WORKERS workers whose outside submissions wait at `bound`. */
static pool_t *bounded_pool(size_t bound) {
  pool_config_t cfg;
  pool_config_default(&cfg);
  cfg.threads = POOL_WORKERS;
  cfg.max_queued = bound;
  pool_t *p = NULL;
  int rc = pool_create(&p, &cfg);
  if (rc) bench_fail("pool_create(max_queued=%zu): %s", bound, pool_strerror(rc));
  return p;
}

static double run_ws_one(bench_variant *v) {
  pool_t *p = v->ctx;
  atomic_store(&done_count, 0);
  int rc = 0;
  double t0 = bench_now();
  for (long i = 0; i < n_tasks && rc == 0; i++) rc = pool_submit(p, tiny, NULL);
  return ws_finish(v, rc, t0, bench_now());
}

/* pool_submit_n from one outside thread, BATCH tasks a call. */
static double run_ws_batch(bench_variant *v) {
  pool_t *p = v->ctx;
  atomic_store(&done_count, 0);
  int rc = 0;
  double t0 = bench_now();
  long i = 0;
  for (; i + BATCH <= n_tasks && rc == 0; i += BATCH) rc = pool_submit_n(p, tiny, NULL, BATCH);
  if (rc == 0 && i < n_tasks) rc = pool_submit_n(p, tiny, NULL, (size_t)(n_tasks - i));
  return ws_finish(v, rc, t0, bench_now());
}

/* An outside thread that submits its share of the tasks once the barrier
 * lets it go. */
typedef struct producer {
  pthread_t th;
  pool_t *pool;
  pthread_barrier_t *bar;
  long n;
  double end; /* when its last submit returned */
  int rc;
  void *peer; /* GThreadPool * for the GLib rows */
} producer;

/* Starts np producers running fn, n_tasks shared out between them, all
 * held at the barrier until the caller arrives as its (np + 1)-th. */
static void start_producers(producer *pr, unsigned np, pthread_barrier_t *bar,
                            void *(*fn)(void *), pool_t *pool, void *peer) {
  pthread_barrier_init(bar, NULL, np + 1);
  for (unsigned i = 0; i < np; i++) {
    pr[i].pool = pool;
    pr[i].peer = peer;
    pr[i].bar = bar;
    pr[i].n = n_tasks / np + ((long)i < n_tasks % (long)np);
    pr[i].rc = 0;
    if (pthread_create(&pr[i].th, NULL, fn, &pr[i]) != 0) {
      fprintf(stderr, "pthread_create failed\n");
      exit(1);
    }
  }
}

/* Joins the producers: when the last one finished submitting (not before
 * t0); a producer's error is a wrong answer of `who`. */
static double join_producers(producer *pr, unsigned np, double t0, const char *who) {
  double ts = t0;
  for (unsigned i = 0; i < np; i++) {
    pthread_join(pr[i].th, NULL);
    if (pr[i].rc) bench_fail("%s: %s", who, pool_strerror(pr[i].rc));
    if (pr[i].end > ts) ts = pr[i].end;
  }
  return ts;
}

static void *producer_main(void *arg) {
  producer *pr = arg;
  pthread_barrier_wait(pr->bar);
  int rc = 0;
  for (long i = 0; i < pr->n && rc == 0; i++) rc = pool_submit(pr->pool, tiny, NULL);
  pr->end = bench_now();
  pr->rc = rc;
  return NULL;
}

static double run_ws_many(bench_variant *v) {
  producer pr[PRODUCERS];
  pthread_barrier_t bar;
  atomic_store(&done_count, 0);
  start_producers(pr, PRODUCERS, &bar, producer_main, v->ctx, NULL);
  pthread_barrier_wait(&bar);
  double t0 = bench_now();
  double ts = join_producers(pr, PRODUCERS, t0, v->name);
  double t = ws_finish(v, 0, t0, ts);
  pthread_barrier_destroy(&bar);
  return t;
}

typedef struct inside_arg {
  pool_t *pool;
  long n;
  double t0, ts;
  int rc;
} inside_arg;

static void inside_root(void *arg) {
  inside_arg *a = arg;
  int rc = 0;
  a->t0 = bench_now();
  for (long i = 0; i < a->n && rc == 0; i++) rc = pool_submit(NULL, tiny, NULL);
  a->ts = bench_now();
  a->rc = rc;
}

static double run_ws_inside(bench_variant *v) {
  pool_t *p = v->ctx;
  inside_arg a = {p, n_tasks, 0, 0, 0};
  atomic_store(&done_count, 0);
  int rc = pool_submit(p, inside_root, &a);
  if (rc == 0) rc = pool_wait_idle(p);
  double t = bench_now() - a.t0; /* from the root's first submit */
  if (rc || a.rc) bench_fail("%s: %s", v->name, pool_strerror(rc ? rc : a.rc));
  v->aux[v->nt] = a.ts - a.t0;
  check_count(v->name, n_tasks);
  return t;
}

#ifdef BENCH_HAVE_GLIB
/* GLib's GThreadPool: the body is the same increment, and the last task
 * wakes the waiting thread, as in the oneTBB shim. GLib queues data
 * pointers and refuses NULL, so each task gets a dummy non-NULL one. */
static long glib_target;
static GMutex glib_m;
static GCond glib_c;
static int glib_finished;

static void glib_task(gpointer data, gpointer user) {
  (void)data;
  (void)user;
  if (atomic_fetch_add_explicit(&done_count, 1, memory_order_relaxed) + 1 == glib_target) {
    g_mutex_lock(&glib_m);
    glib_finished = 1;
    g_cond_signal(&glib_c);
    g_mutex_unlock(&glib_m);
  }
}

static void *glib_producer_main(void *arg) {
  producer *pr = arg;
  pthread_barrier_wait(pr->bar);
  for (long i = 0; i < pr->n; i++) g_thread_pool_push(pr->peer, &glib_target, NULL);
  pr->end = bench_now();
  return NULL;
}

static double run_glib(bench_variant *v) {
  unsigned np = v->threads;
  atomic_store(&done_count, 0);
  glib_target = n_tasks;
  glib_finished = 0;
  producer pr[PRODUCERS];
  pthread_barrier_t bar;
  start_producers(pr, np, &bar, glib_producer_main, NULL, v->ctx);
  pthread_barrier_wait(&bar);
  double t0 = bench_now();
  double ts = join_producers(pr, np, t0, v->name);
  g_mutex_lock(&glib_m);
  while (!glib_finished) g_cond_wait(&glib_c, &glib_m);
  g_mutex_unlock(&glib_m);
  double t = bench_now() - t0;
  pthread_barrier_destroy(&bar);
  v->aux[v->nt] = ts - t0;
  check_count(v->name, n_tasks);
  return t;
}
#else
#define run_glib NULL
#endif

#ifdef BENCH_HAVE_TBB
static double run_tbb(bench_variant *v) {
  double ts = 0;
  long ran = -1;
  double t = bench_tbb_submit(POOL_WORKERS, (int)v->param, v->param ? 1 : v->threads, n_tasks, &ts,
                              &ran);
  if (ran != n_tasks) bench_fail("%s: %ld tasks ran, %ld submitted", v->name, ran, n_tasks);
  v->aux[v->nt] = ts;
  return t;
}
#else
#define run_tbb NULL
#endif

/* ---- wake latency ---- */

typedef struct stamp {
  uint64_t start;
} stamp;

static void stamp_task(void *arg) { ((stamp *)arg)->start = bench_now_ns(); }

static void print_latency(const char *who, double *lat_ns, int reps, double *p50_out) {
  qsort(lat_ns, (size_t)reps, sizeof(double), bench_cmp_double);
  double p50 = bench_percentile_sorted(lat_ns, reps, 50);
  printf("%-30s %10.1f %10.1f %10.1f %10.1f %10.1f %6d\n", who, lat_ns[0] / 1e3, p50 / 1e3,
         bench_percentile_sorted(lat_ns, reps, 90) / 1e3,
         bench_percentile_sorted(lat_ns, reps, 99) / 1e3, lat_ns[reps - 1] / 1e3, reps);
  if (p50_out) *p50_out = p50;
}

/* Wake latency: `reps` times, idle `sleep_ms`, submit one task and time
 * until it starts; then the same for oneTBB. Returns wspool's p50 in ns. */
static double latency_part(pool_t *pool, int reps, double sleep_ms) {
  printf("\n-- wake latency: idle %.1f ms, submit one task, time until it starts (us)\n",
         sleep_ms);
  printf("%-30s %10s %10s %10s %10s %10s %6s\n", "variant", "min", "p50", "p90", "p99", "max",
         "reps");
  double *lat = malloc(sizeof(double) * (size_t)reps);
  if (!lat) exit(1);
  for (int i = 0; i < reps; i++) {
    stamp s = {0};
    bench_sleep_ms(sleep_ms);
    uint64_t t0 = bench_now_ns();
    int rc = pool_submit(pool, stamp_task, &s);
    if (rc == 0) rc = pool_wait_idle(pool);
    if (rc || s.start == 0) {
      bench_fail("wake latency: task did not run (%s)", pool_strerror(rc));
      lat[i] = 0;
      continue;
    }
    lat[i] = (double)(s.start - t0);
  }
  double ws_p50 = 0;
  print_latency("wspool pool_submit (2 workers)", lat, reps, &ws_p50);
#ifdef BENCH_HAVE_TBB
  if (bench_tbb_wake_latency(POOL_WORKERS, reps, sleep_ms, lat) != 0)
    bench_fail("oneTBB wake latency: a task did not run");
  print_latency("oneTBB arena.enqueue (2 workers)", lat, reps, NULL);
#else
  printf("%-30s (peer unavailable: built without oneTBB)\n", "oneTBB arena.enqueue");
#endif
  free(lat);
  fflush(stdout);
  return ws_p50;
}

/* ---- idle CPU ---- */

/* One row of the idle table; returns the percentage of a core. */
static double idle_row(const char *who, double cpu, double wall) {
  printf("%-30s %8.3f ms CPU in %.3f s = %.3f%% of a core\n", who, cpu * 1e3, wall,
         100.0 * cpu / wall);
  return 100.0 * cpu / wall;
}

/* Idle CPU of a fresh pool (*fresh) and of the same pool after work
 * (*after), in % of a core; then of a oneTBB arena after work. */
static void idle_part(double idle_s, double *fresh, double *after) {
  printf("\n-- idle CPU: process CPU time while the pool idles %.1f s (%% of one core)\n", idle_s);
  double wall, cpu;
  pool_t *ip = bench_pool(POOL_WORKERS, BENCH_DEFAULT);
  cpu = bench_idle_window(idle_s, &wall);
  *fresh = idle_row("wspool fresh pool (2 workers)", cpu, wall);
  atomic_store(&done_count, 0);
  for (int i = 0; i < 1000; i++) pool_submit(ip, tiny, NULL);
  pool_wait_idle(ip);
  check_count("idle warm-up", 1000);
  cpu = bench_idle_window(idle_s, &wall);
  *after = idle_row("wspool after 1000 tasks", cpu, wall);
  pool_destroy(ip);
#ifdef BENCH_HAVE_TBB
  cpu = bench_tbb_idle_cpu(POOL_WORKERS, idle_s, &wall);
  idle_row("oneTBB arena(2) after work", cpu, wall);
#else
  printf("%-30s (peer unavailable: built without oneTBB)\n", "oneTBB arena(2) after work");
#endif
  fflush(stdout);
}

/* ---- throughput: the table and the targets ---- */

static void throughput_table(bench_variant *v, int nv) {
  printf("%-32s %9s %9s %9s %4s %9s %9s %9s %8s %12s %9s\n", "variant", "min ms", "median ms",
         "max ms", "runs", "Mt/s max", "Mt/s med", "Mt/s min", "ns/task", "submit Mt/s",
         "vs wspool");
  for (int i = 0; i < nv; i++) {
    bench_variant *x = &v[i];
    if (!x->available) {
      printf("%-32s   (peer unavailable: not built)\n", x->name);
      continue;
    }
    /* "vs wspool": this time / wspool's pool_submit time for the same
     * producer setup (the "threads" field is the producer count, 0 =
     * inside a task). */
    char vs[16] = "-";
    if (x->kind == BENCH_PEER)
      for (int j = 0; j < nv; j++)
        if (v[j].kind == BENCH_WSPOOL && v[j].threads == x->threads)
          snprintf(vs, sizeof vs, "%.2fx", x->med / v[j].med);
    printf("%-32s %9.3f %9.3f %9.3f %4d %9.2f %9.2f %9.2f %8.1f %12.2f %9s\n", x->name,
           x->min * 1e3, x->med * 1e3, x->max * 1e3, x->nt, (double)n_tasks / x->min / 1e6,
           (double)n_tasks / x->med / 1e6, (double)n_tasks / x->max / 1e6,
           x->med * 1e9 / (double)n_tasks, (double)n_tasks / x->aux_med / 1e6, vs);
  }
  printf("(Mt/s = M tasks / (first submit .. all ran) for the fastest, median and slowest run;\n"
         " submit Mt/s = tasks / time the producers spent submitting; vs wspool = peer time /\n"
         " wspool pool_submit time for the same producers, >1 means wspool is that much faster)\n");
}

/* The rate of variant x in measured round r (0-based), 0 when it has none:
 * a long warm-up run counts as x's first (bench_warm_up), and that variant
 * then skips the last round. */
static double round_rate(const bench_variant *x, int r) {
  if (!x || !x->available) return 0;
  int i = r + x->first_round;
  return i < x->nt ? (double)n_tasks / x->t[i] / 1e6 : 0;
}

/* The one-producer rows round by round, beside the cross-core round trip
 * measured before the round: a slow run of every variant in one round is
 * the machine (bench_round_trip_ns), a slow run of one variant is its own. */
static void rounds_table(bench_variant *v, int nv, int runs) {
  bench_variant *w1 = bench_find(v, nv, "wspool 1 outside producer");
  bench_variant *b1 = bench_find(v, nv, "oneTBB enqueue 1 producer");
  bench_variant *g1 = bench_find(v, nv, "GLib GThreadPool 1 producer");
  printf("\n-- 1 outside producer round by round (M tasks/s)\n");
  printf("%5s %14s %10s %10s %10s %14s\n", "round", "round trip ns", "wspool", "oneTBB", "GLib",
         "wspool/faster");
  for (int r = 0; r < runs && r + 1 < bench_rt_n; r++) {
    double w = round_rate(w1, r), b = round_rate(b1, r), g = round_rate(g1, r);
    double peer = b > g ? b : g;
    printf("%5d %14.0f %10.2f %10.2f %10.2f %14.2f\n", r + 1, bench_rt_ns[r + 1], w, b, g,
           peer > 0 ? w / peer : 0);
  }
}

/* Every target: throughput from the table, then wake latency (wspool's
 * p50 in ns) and idle CPU (% of a core, fresh and after work). */
static void print_targets(bench_variant *v, int nv, double ws_p50, double idle_fresh,
                          double idle_after) {
  bench_variant *w1 = bench_find(v, nv, "wspool 1 outside producer");
  bench_variant *w4 = bench_find(v, nv, "wspool 4 outside producers");
  bench_variant *wn = bench_find(v, nv, "wspool submit_n x64, 1 producer");
  bench_variant *wi = bench_find(v, nv, "wspool from inside a task");
  bench_variant *wb = bench_find(v, nv, "wspool 1 producer, bound 64");
  bench_variant *b1 = bench_find(v, nv, "oneTBB enqueue 1 producer");
  bench_variant *g1 = bench_find(v, nv, "GLib GThreadPool 1 producer");
  bench_variant *peer = b1;
  if (g1 && (!peer || g1->med < peer->med)) peer = g1;
  double r1 = (double)n_tasks / w1->med / 1e6;
  bench_target("1 outside producer: median >= 10 M tasks/s", r1 >= 10.0, "%.2f M tasks/s", r1);
  if (peer) {
    bench_target("1 outside producer: median >= 3x the faster peer", peer->med / w1->med >= 3.0,
                 "%s %.2f M tasks/s: %.2fx", peer->name, (double)n_tasks / peer->med / 1e6,
                 peer->med / w1->med);
    bench_target("1 outside producer: slowest run >= 2x the faster peer's median",
                 peer->med / w1->max >= 2.0, "slowest %.2f M tasks/s: %.2fx",
                 (double)n_tasks / w1->max / 1e6, peer->med / w1->max);
  } else {
    bench_target("1 outside producer: >= 3x the faster peer", -1, "no peer built");
  }
  bench_target("4 outside producers: at least the 1-producer rate", w4->med <= w1->med,
               "%.2f against %.2f M tasks/s", (double)n_tasks / w4->med / 1e6, r1);
  bench_target("pool_submit_n, batches of 64: >= 30 M tasks/s", n_tasks / wn->med / 1e6 >= 30.0,
               "%.2f M tasks/s", (double)n_tasks / wn->med / 1e6);
  bench_target("from inside a task: >= 20 M tasks/s", n_tasks / wi->med / 1e6 >= 20.0,
               "%.2f M tasks/s", (double)n_tasks / wi->med / 1e6);
  bench_target("bound 64, 1 producer: >= half the unbounded rate", w1->med / wb->med >= 0.5,
               "%.2f M tasks/s: %.2fx the unbounded", (double)n_tasks / wb->med / 1e6,
               w1->med / wb->med);
  bench_target("wake latency p50 <= 26 us", ws_p50 <= 26e3, "p50 = %.1f us", ws_p50 / 1e3);
  bench_target("idle pool CPU <= 0.05% of a core", idle_fresh <= 0.05 && idle_after <= 0.05,
               "fresh %.3f%%, after work %.3f%%", idle_fresh, idle_after);
}

int main(void) {
  n_tasks = bench_env_long("WSPOOL_BENCH_SUBMIT_N", 2000000, PRODUCERS * BATCH, 100000000);
  int runs = (int)bench_env_long("WSPOOL_BENCH_RUNS", 7, 1, BENCH_MAX_RUNS);
  double budget = bench_env_double("WSPOOL_BENCH_BUDGET", 150.0, 1.0, 1e6);
  int reps = (int)bench_env_long("WSPOOL_BENCH_WAKE_REPS", 300, 10, 100000);
  double wake_sleep = bench_env_double("WSPOOL_BENCH_WAKE_SLEEP_MS", 5.0, 0.0, 10000.0);
  double idle_s = bench_env_double("WSPOOL_BENCH_IDLE_S", 2.0, 0.1, 3600.0);
  double prog_start = bench_now();

  char what[200];
  snprintf(what, sizeof what,
           "pool_submit throughput (%ld tiny tasks, pool of %d workers), wake latency, idle CPU",
           n_tasks, POOL_WORKERS);
  bench_header("bench_submit", what);

  /* Idle CPU first: nothing else has threads in this process yet. */
  double idle_fresh, idle_after;
  idle_part(idle_s, &idle_fresh, &idle_after);
  pool_t *pool = bench_pool(POOL_WORKERS, BENCH_DEFAULT);
  pool_t *bpool = bounded_pool(64);
  pool_t *pool1 = bench_pool(1, BENCH_DEFAULT);
  double ws_p50 = latency_part(pool, reps, wake_sleep);

#ifdef BENCH_HAVE_GLIB
  GThreadPool *gp = g_thread_pool_new(glib_task, NULL, POOL_WORKERS, TRUE, NULL);
  if (!gp) bench_fail("g_thread_pool_new failed");
#else
  void *gp = NULL;
#endif
  printf("\n-- throughput: %ld tasks, time from the first submit until all ran; %d runs per "
         "variant\n",
         n_tasks, runs);
  /* A row's threads is its producer count, 0 = inside a task. */
  bench_variant v[] = {
      BENCH_SEQ_ROW("sequential: direct calls", run_seq),
      BENCH_WSPOOL_ROW("wspool 1 outside producer", 1, run_ws_one, pool, 0),
      BENCH_WSPOOL_ROW("wspool 4 outside producers", 4, run_ws_many, pool, 0),
      BENCH_WSPOOL_ROW("wspool submit_n x64, 1 producer", 1, run_ws_batch, pool, 0),
      BENCH_WSPOOL_ROW("wspool from inside a task", 0, run_ws_inside, pool, 0),
      BENCH_WSPOOL_ROW("wspool inside a task, 1 worker", 0, run_ws_inside, pool1, 0),
      BENCH_WSPOOL_ROW("wspool 1 producer, bound 64", 1, run_ws_one, bpool, 0),
      BENCH_PEER_ROW("oneTBB enqueue 1 producer", 1, HAVE_TBB, run_tbb, 0),
      BENCH_PEER_ROW("oneTBB enqueue 4 producers", 4, HAVE_TBB, run_tbb, 0),
      BENCH_PEER_ROW("oneTBB enqueue inside a task", 0, HAVE_TBB, run_tbb, 1),
      BENCH_ROW(BENCH_PEER, "GLib GThreadPool 1 producer", 1, HAVE_GLIB && gp, run_glib, gp, 0),
      BENCH_ROW(BENCH_PEER, "GLib GThreadPool 4 producers", 4, HAVE_GLIB && gp, run_glib, gp, 0),
  };
  int nv = BENCH_COUNT(v);
  double left = budget - (bench_now() - prog_start); /* idle + latency used some */
  bench_measure(v, nv, runs, left > 5 ? left : 5);
  throughput_table(v, nv);
  rounds_table(v, nv, runs);
  bench_print_round_trips();

  printf("\n");
  print_targets(v, nv, ws_p50, idle_fresh, idle_after);

#ifdef BENCH_HAVE_GLIB
  if (gp) g_thread_pool_free(gp, FALSE, TRUE);
#endif
  pool_destroy(bpool);
  pool_destroy(pool1);
  pool_destroy(pool);
  return bench_finish();
}
