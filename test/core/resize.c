/* SPDX-License-Identifier: MIT */
/* pool_resize (wspool.h): grow and shrink a live pool.
 *
 * Every task counts itself in `running` while it runs and notes the
 * largest count seen since the last reset, and the worker it ran on.
 *
 * Cases:
 *  errors     max_threads below threads, above POOL_MAX_THREADS: EINVAL
 *             from pool_create; threads 0 with max_threads caps the
 *             automatic count; pool_resize(0), above max_threads, NULL
 *             pool handling, from a worker of the pool (EDEADLK).
 *  shrink     4 workers busy with 1 ms tasks from an outside producer;
 *             pool_resize(p, k) for k = 3, 2, 1: from its return on, no
 *             task sees more than k running or runs on a worker >= k.
 *  shrink_waits  a task on each worker sleeps 300 ms; pool_resize(p, 1)
 *             returns only after worker 1's ended (checked by a flag, not
 *             a clock).
 *  shrink_chain  a chain of jobs (each after the one before) running on
 *             worker 1, where each completing job runs the next one
 *             directly: pool_resize(p, 1) returns before the chain ends
 *             (a job in its middle waits for the return), and from then
 *             on no job runs on worker 1; every job runs once.
 *  shrink_batch  200 outside tasks of 2 ms on 4 workers (taken from the
 *             global queue in batches): once pool_resize(p, 1) stored the
 *             new size, a worker >= 1 starts at most one more task (one
 *             that read its park word before), and none after the return.
 *  shrink_strand  a task on worker 1 submits 10 children as its pool
 *             shrinks to 1, then 20000 outside tasks are queued: the
 *             children run before a quarter of those (worker 1 parks with
 *             them on its deque: they go to the global queue, which worker
 *             0 reads before it would steal).
 *  grow       a pool of 1 (max 4): 4 tasks that each wait until 4 run at
 *             once cannot finish until pool_resize(p, 4); after it they
 *             do. Before it, nothing ran on workers 1..3.
 *  race       one thread resizes at random (1..4) while outside producers
 *             submit, fork/join fib runs from outside, parallel_for sums
 *             run from outside, jobs chain: every result exact, every task
 *             once; then a final shrink to 2 caps concurrency at 2.
 *  destroy    two threads' resizes race pool_destroy: each returns 0 or
 *             ESHUTDOWN, and nothing hangs (a shrink that entered before
 *             the close and tells workers to park after they stopped).
 *             Scales with WSPOOL_STRESS. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <wspool.h>

#include "check.h"
#include "testutil.h"

static pool_t *sized_pool(unsigned threads, unsigned max) {
  pool_config_t cfg;
  pool_config_default(&cfg);
  cfg.threads = threads;
  cfg.max_threads = max;
  pool_t *p = NULL;
  CHECK_OK(pool_create(&p, &cfg));
  CHECK_EQ(pool_threads(p), threads);
  return p;
}

/* ---- concurrency accounting -------------------------------------------- */

static atomic_int running;
static atomic_int cap;         /* the size the checks hold tasks to; 0: none */
static atomic_int violations;
static atomic_long tasks_run;

static void enter_task(void) {
  int r = atomic_fetch_add(&running, 1) + 1;
  int c = atomic_load(&cap);
  int id = pool_worker_id();
  if (c && (r > c || id >= c)) {
    fprintf(stderr, "a task ran with %d running on worker %d, size %d\n", r, id, c);
    atomic_fetch_add(&violations, 1);
  }
}
static void leave_task(void) {
  atomic_fetch_add(&running, -1);
  atomic_fetch_add(&tasks_run, 1);
}

static void short_task(void *arg) {
  (void)arg;
  enter_task();
  struct timespec ts = {0, 1000000}; /* 1 ms */
  nanosleep(&ts, NULL);
  leave_task();
}

/* ---- errors ---------------------------------------------------------------- */

static void noop(void *arg) { (void)arg; }

static atomic_int inside_rc;
static void resize_inside(void *arg) { atomic_store(&inside_rc, pool_resize(arg, 1)); }

static void case_errors(void) {
  pool_config_t cfg;
  pool_config_default(&cfg);
  pool_t *p = NULL;
  cfg.threads = 3;
  cfg.max_threads = 2;
  CHECK_EQ(pool_create(&p, &cfg), EINVAL);
  cfg.max_threads = POOL_MAX_THREADS + 1;
  CHECK_EQ(pool_create(&p, &cfg), EINVAL);
  CHECK(p == NULL);
  cfg.threads = 0; /* automatic, capped */
  cfg.max_threads = 1;
  CHECK_OK(pool_create(&p, &cfg));
  CHECK_EQ(pool_threads(p), 1);
  CHECK_EQ(pool_resize(p, 2), EINVAL);
  CHECK_OK(pool_destroy(p));

  p = sized_pool(2, 3);
  CHECK_EQ(pool_resize(p, 0), EINVAL);
  CHECK_EQ(pool_resize(p, 4), EINVAL);
  CHECK_EQ(pool_threads(p), 2);
  CHECK_OK(pool_resize(p, 3));
  CHECK_EQ(pool_threads(p), 3);
  CHECK_OK(pool_resize(p, 3)); /* the same size: nothing to do */
  atomic_store(&inside_rc, -1);
  CHECK_OK(pool_submit(p, resize_inside, p));
  CHECK_OK(pool_wait_idle(p));
  CHECK_EQ(atomic_load(&inside_rc), EDEADLK);
  CHECK_OK(pool_submit(p, noop, NULL));
  CHECK_OK(pool_destroy(p));

  /* A fixed-size pool: max_threads 0 means threads. */
  p = sized_pool(2, 0);
  CHECK_EQ(pool_resize(p, 3), EINVAL);
  CHECK_OK(pool_resize(p, 1));
  CHECK_OK(pool_resize(p, 2));
  CHECK_OK(pool_destroy(p));
}

/* ---- shrink ---------------------------------------------------------------- */

typedef struct feeder {
  pool_t *pool;
  atomic_int stop;
  long submitted;
} feeder;

static void *feed(void *v) {
  feeder *f = v;
  while (!atomic_load(&f->stop)) {
    CHECK_OK(pool_submit(f->pool, short_task, NULL));
    f->submitted++;
    if (f->submitted % 8 == 0) sleep_ms(1); /* keep a backlog of a few ms */
  }
  return NULL;
}

static void reset_counts(void) {
  atomic_store(&running, 0);
  atomic_store(&cap, 0);
  atomic_store(&violations, 0);
  atomic_store(&tasks_run, 0);
}

static void case_shrink(void) {
  pool_t *p = sized_pool(4, 4);
  reset_counts();
  feeder f = {.pool = p};
  pthread_t th;
  CHECK_EQ(pthread_create(&th, NULL, feed, &f), 0);
  for (int k = 3; k >= 1; k--) {
    sleep_ms(30);
    CHECK_OK(pool_resize(p, (unsigned)k));
    CHECK_EQ(pool_threads(p), (unsigned)k);
    /* Every task of a worker >= k ended before the return: none counts. */
    CHECK(atomic_load(&running) <= k);
    atomic_store(&cap, k);
  }
  sleep_ms(30);
  atomic_store(&f.stop, 1);
  CHECK_EQ(pthread_join(th, NULL), 0);
  CHECK_OK(pool_wait_idle(p));
  CHECK_EQ(atomic_load(&violations), 0);
  CHECK_EQ(atomic_load(&tasks_run), f.submitted);
  atomic_store(&cap, 0);
  CHECK_OK(pool_destroy(p));
}

/* ---- a shrink waits for the running task ---------------------------------- */

static atomic_int long_started, long_ended[2];

static void long_task(void *arg) {
  (void)arg;
  int id = pool_worker_id();
  atomic_fetch_add(&long_started, 1);
  sleep_ms(300);
  atomic_store(&long_ended[id], 1);
}

static void case_shrink_waits(void) {
  pool_t *p = sized_pool(2, 2);
  /* Until one long task runs on each worker: two started before either
   * ended ran at once, so on both workers (rarely one worker ran both
   * in turn, the other asleep through the first: then again). Which
   * worker a task wakes is the kernel's choice: waiting for a task on
   * one chosen worker could take hundreds of tries. */
  for (int tries = 0;; tries++) {
    CHECK(tries < 100);
    atomic_store(&long_started, 0);
    atomic_store(&long_ended[0], 0);
    atomic_store(&long_ended[1], 0);
    CHECK_OK(pool_submit(p, long_task, NULL));
    CHECK_OK(pool_submit(p, long_task, NULL));
    while (atomic_load(&long_started) < 2) sched_yield();
    if (!atomic_load(&long_ended[0]) && !atomic_load(&long_ended[1])) break;
    CHECK_OK(pool_wait_idle(p));
  }
  CHECK_OK(pool_resize(p, 1));
  CHECK_EQ(atomic_load(&long_ended[1]), 1); /* worker 1's task ended first */
  CHECK_OK(pool_destroy(p));
}

/* ---- a shrink stops a chain of jobs on the worker it parks ---------------- */

/* The chain: its head records its worker and waits until the shrink has
 * begun (the size reads 1) or is called off; job CHAIN_HOLD waits until
 * the shrink returned. A shrink that waited for the whole chain would
 * wait for that job, which waits for it: the job gives up after 10 s and
 * counts a failure. */
enum { CHAIN_N = 300, CHAIN_HOLD = 150 };
static atomic_int chain_worker; /* the head's worker, -1 before */
static atomic_int chain_off;     /* no shrink this time: let the chain go */
static atomic_int chain_resized; /* the shrink returned */
static atomic_int chain_stuck;   /* a wait that gave up */

static void wait_flag(atomic_int *flag, pool_t *p) {
  for (int ms = 0; !atomic_load(flag) && !(p && pool_threads(p) == 1); ms++) {
    if (ms == 10000) {
      atomic_fetch_add(&chain_stuck, 1);
      return;
    }
    sleep_ms(1);
  }
}

static void chain_head(void *p) {
  enter_task();
  atomic_store(&chain_worker, pool_worker_id());
  wait_flag(&chain_off, p);
  leave_task();
}

static void chain_hold(void *arg) {
  (void)arg;
  enter_task();
  wait_flag(&chain_resized, NULL);
  leave_task();
}

/* Holds the worker it runs on until `steer_go`, steering the chain to the
 * other one. */
static atomic_int steer_worker, steer_go;
static void steer(void *arg) {
  (void)arg;
  atomic_store(&steer_worker, pool_worker_id());
  while (!atomic_load(&steer_go)) sleep_ms(1);
}

static void case_shrink_chain(void) {
  static pool_job_t jobs[CHAIN_N];
  for (int tries = 0;; tries++) {
    /* Which worker runs the chain is the scheduler's choice: again until
     * it is worker 1 (a completing job runs the next on its own worker).
     * A task holding worker 0 sends it to worker 1; one that landed on
     * worker 1 is let go at once (the chain's start follows the same
     * choice, then). */
    CHECK(tries < 100);
    pool_t *p = sized_pool(2, 2);
    reset_counts();
    atomic_store(&steer_worker, -1);
    atomic_store(&steer_go, 0);
    CHECK_OK(pool_submit(p, steer, NULL));
    while (atomic_load(&steer_worker) < 0) sched_yield();
    if (atomic_load(&steer_worker) != 0) atomic_store(&steer_go, 1);
    atomic_store(&chain_worker, -1);
    atomic_store(&chain_off, 0);
    atomic_store(&chain_resized, 0);
    atomic_store(&chain_stuck, 0);
    for (int k = 0; k < CHAIN_N; k++) {
      pool_fn fn = k == 0 ? chain_head : k == CHAIN_HOLD ? chain_hold : short_task;
      CHECK_OK(pool_job_init(&jobs[k], p, fn, p));
      if (k) CHECK_OK(pool_job_after(&jobs[k], &jobs[k - 1]));
    }
    for (int k = CHAIN_N - 1; k >= 0; k--) CHECK_OK(pool_job_start(&jobs[k]));
    while (atomic_load(&chain_worker) < 0) sched_yield();
    bool on_1 = atomic_load(&chain_worker) == 1;
    if (on_1) {
      CHECK_OK(pool_resize(p, 1));
      atomic_store(&cap, 1); /* from here on, nothing on worker 1 */
    } else {
      atomic_store(&chain_off, 1);
    }
    atomic_store(&chain_resized, 1);
    atomic_store(&steer_go, 1);
    CHECK_OK(pool_job_wait(&jobs[CHAIN_N - 1]));
    CHECK_EQ(atomic_load(&chain_stuck), 0);
    CHECK_EQ(atomic_load(&tasks_run), CHAIN_N);
    CHECK_EQ(atomic_load(&violations), 0);
    atomic_store(&cap, 0);
    CHECK_OK(pool_destroy(p));
    if (on_1) break;
  }
}

/* ---- a shrink stops a worker's submit batch ------------------------------- */

static atomic_int late_starts[4]; /* per worker, once the shrink stored the size */

/* arg: the pool. The shrink stores the new size after it told the workers
 * to park, so a start that reads it has the shrink under way. */
static void batch_task(void *arg) {
  int id = pool_worker_id();
  if (id >= 1 && id < 4 && pool_threads(arg) == 1) atomic_fetch_add(&late_starts[id], 1);
  enter_task();
  sleep_ms(2);
  leave_task();
}

static void case_shrink_batch(void) {
  for (unsigned long r = 0; r < check_iters(2); r++) {
    pool_t *p = sized_pool(4, 4);
    reset_counts();
    for (int k = 0; k < 4; k++) atomic_store(&late_starts[k], 0);
    for (int k = 0; k < 200; k++) CHECK_OK(pool_submit(p, batch_task, p));
    for (int ms = 0; atomic_load(&running) < 4 && ms < 5000; ms++) sleep_ms(1);
    CHECK_OK(pool_resize(p, 1));
    atomic_store(&cap, 1);
    CHECK_OK(pool_wait_idle(p));
    CHECK_EQ(atomic_load(&tasks_run), 200);
    CHECK_EQ(atomic_load(&violations), 0);
    for (int k = 1; k < 4; k++) CHECK(atomic_load(&late_starts[k]) <= 1);
    atomic_store(&cap, 0);
    CHECK_OK(pool_destroy(p));
  }
}

/* ---- what a parked worker leaves is not starved by a stream ------------- */

enum { STREAM_N = 20000 };
static atomic_int strand_ran, stream_ran, stream_at_children;

static void strand_child(void *arg) {
  (void)arg;
  if (atomic_fetch_add(&strand_ran, 1) + 1 == 10) atomic_store(&stream_at_children, atomic_load(&stream_ran));
}

/* On worker 1: submits its children once the shrink began (they go on its
 * deque), then ends, and its worker parks. */
static void strand_parent(void *p) {
  atomic_store(&steer_worker, 100 + pool_worker_id());
  for (int ms = 0; pool_threads(p) != 1 && ms < 10000; ms++) sleep_ms(1);
  for (int i = 0; i < 10; i++) CHECK_OK(pool_submit(NULL, strand_child, NULL));
}

/* The stream: 5 us each. */
static void strand_busy(void *arg) {
  (void)arg;
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  do
    clock_gettime(CLOCK_MONOTONIC, &t);
  while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 5000);
  atomic_fetch_add(&stream_ran, 1);
}

static void case_shrink_strand(void) {
  for (int tries = 0;; tries++) {
    CHECK(tries < 100);
    pool_t *p = sized_pool(2, 2);
    atomic_store(&strand_ran, 0);
    atomic_store(&stream_ran, 0);
    atomic_store(&stream_at_children, -1);
    /* Worker 0 held, so that the parent runs on worker 1 (as shrink_chain). */
    atomic_store(&steer_worker, -1);
    atomic_store(&steer_go, 0);
    CHECK_OK(pool_submit(p, steer, NULL));
    while (atomic_load(&steer_worker) < 0) sched_yield();
    if (atomic_load(&steer_worker) != 0) {
      atomic_store(&steer_go, 1);
      CHECK_OK(pool_destroy(p));
      continue;
    }
    atomic_store(&steer_worker, -1);
    CHECK_OK(pool_submit(p, strand_parent, p));
    while (atomic_load(&steer_worker) < 0) sched_yield();
    CHECK_EQ(atomic_load(&steer_worker), 101); /* on worker 1 */
    CHECK_OK(pool_resize(p, 1)); /* returns once worker 1 parked */
    /* A stream queued behind the children: worker 0, free again, reaches
     * them before the stream's end (a thief reads the queue first: on the
     * parked deque they waited for all of it). */
    for (int i = 0; i < STREAM_N; i++) CHECK_OK(pool_submit(p, strand_busy, NULL));
    atomic_store(&steer_go, 1);
    CHECK_OK(pool_wait_idle(p));
    CHECK_EQ(atomic_load(&strand_ran), 10);
    CHECK(atomic_load(&stream_at_children) < STREAM_N / 4);
    CHECK_OK(pool_destroy(p));
    break;
  }
}

/* ---- grow ------------------------------------------------------------------ */

static atomic_int meet;
static atomic_int grow_violations;

static void meet_task(void *arg) {
  (void)arg;
  atomic_fetch_add(&meet, 1);
  while (atomic_load(&meet) < 4) sched_yield(); /* all four at once */
}

static void id_task(void *arg) {
  (void)arg;
  if (pool_worker_id() != 0) atomic_fetch_add(&grow_violations, 1);
}

static void case_grow(void) {
  pool_t *p = sized_pool(1, 4);
  atomic_store(&grow_violations, 0);
  for (int i = 0; i < 1000; i++) CHECK_OK(pool_submit(p, id_task, NULL));
  CHECK_OK(pool_wait_idle(p));
  CHECK_EQ(atomic_load(&grow_violations), 0);
  atomic_store(&meet, 0);
  for (int i = 0; i < 4; i++) CHECK_OK(pool_submit(p, meet_task, NULL));
  sleep_ms(20);
  CHECK(atomic_load(&meet) <= 1); /* one worker: one meets, and waits */
  CHECK_OK(pool_resize(p, 4));
  CHECK_OK(pool_wait_idle(p)); /* the watchdog fails it if they never meet */
  CHECK_EQ(atomic_load(&meet), 4);
  CHECK_OK(pool_destroy(p));
}

/* ---- racing resizes --------------------------------------------------------- */

typedef struct resizer {
  pool_t *pool;
  atomic_int stop;
  uint64_t seed;
  long done;
  int last_rc;
} resizer;

static void *resize_loop(void *v) {
  resizer *r = v;
  while (!atomic_load(&r->stop)) {
    int rc = pool_resize(r->pool, 1 + (unsigned)(rng_next(&r->seed) % 4));
    r->last_rc = rc;
    if (rc == ESHUTDOWN) break;
    CHECK_OK(rc);
    r->done++;
    if (r->done % 4 == 0) sched_yield();
  }
  return NULL;
}

static void sum_into(size_t b, size_t e, void *ctx) {
  atomic_size_t *s = ctx;
  size_t acc = 0;
  for (size_t i = b; i < e; i++) acc += i;
  atomic_fetch_add(s, acc);
}

static atomic_long job_hits;
static void job_body(void *arg) {
  (void)arg;
  atomic_fetch_add(&job_hits, 1);
}

static void case_race(void) {
  pool_t *p = sized_pool(2, 4);
  reset_counts();
  resizer r = {.pool = p, .seed = 0x1234567};
  pthread_t th;
  CHECK_EQ(pthread_create(&th, NULL, resize_loop, &r), 0);
  unsigned long reps = check_iters(20);
  long submitted = 0;
  for (unsigned long i = 0; i < reps; i++) {
    for (int k = 0; k < 50; k++, submitted++) CHECK_OK(pool_submit(p, short_task, NULL));
    fib_arg fa = {18, 0};
    CHECK_OK(pool_join(p, fib_task, &fa, noop, NULL));
    CHECK_EQ(fa.r, fib_seq(18));
    atomic_size_t s = 0;
    CHECK_OK(pool_parallel_for(p, 0, 100000, 64, sum_into, &s));
    CHECK_EQ(atomic_load(&s), (size_t)100000 * 99999 / 2);
    enum { CHAIN = 64 };
    pool_job_t jobs[CHAIN];
    atomic_store(&job_hits, 0);
    for (int j = 0; j < CHAIN; j++) {
      CHECK_OK(pool_job_init(&jobs[j], p, job_body, NULL));
      if (j) CHECK_OK(pool_job_after(&jobs[j], &jobs[j - 1]));
    }
    for (int j = 0; j < CHAIN; j++) CHECK_OK(pool_job_start(&jobs[j]));
    CHECK_OK(pool_job_wait(&jobs[CHAIN - 1]));
    for (int j = 0; j < CHAIN; j++) CHECK_OK(pool_job_wait(&jobs[j]));
    CHECK_EQ(atomic_load(&job_hits), CHAIN);
  }
  atomic_store(&r.stop, 1);
  CHECK_EQ(pthread_join(th, NULL), 0);
  CHECK(r.done > 0);
  CHECK_OK(pool_wait_idle(p));
  CHECK_EQ(atomic_load(&tasks_run), submitted);
  /* Then a shrink holds as in `shrink`. */
  CHECK_OK(pool_resize(p, 2));
  atomic_store(&cap, 2);
  for (int k = 0; k < 200; k++) CHECK_OK(pool_submit(p, short_task, NULL));
  CHECK_OK(pool_wait_idle(p));
  CHECK_EQ(atomic_load(&violations), 0);
  atomic_store(&cap, 0);
  CHECK_OK(pool_destroy(p));
}

/* ---- resize racing destroy --------------------------------------------------- */

static void case_destroy(void) {
  unsigned long reps = check_iters(12);
  for (unsigned long i = 0; i < reps; i++) {
    pool_t *p = sized_pool(1 + (unsigned)(i % 3), 4);
    /* Two resizers: one waits for resize_lock inside the gate while the
     * other shrinks, so destroy often closes the gate and stops the
     * workers between a resize's entry and its stores. */
    resizer r[2] = {{.pool = p, .seed = 0x9e3779b9u + i}, {.pool = p, .seed = 0x7f4a7c15u + i}};
    pthread_t th[2];
    for (int k = 0; k < 2; k++) CHECK_EQ(pthread_create(&th[k], NULL, resize_loop, &r[k]), 0);
    for (int k = 0; k < 20; k++) CHECK_OK(pool_submit(p, noop, NULL));
    if (i % 2) sleep_ms(1);
    CHECK_OK(pool_destroy(p));
    for (int k = 0; k < 2; k++) {
      CHECK_EQ(pthread_join(th[k], NULL), 0);
      CHECK(r[k].last_rc == 0 || r[k].last_rc == ESHUTDOWN);
    }
  }
}

TEST_MAIN(240, TEST_CASE(errors), TEST_CASE(shrink), TEST_CASE(shrink_waits),
          TEST_CASE(shrink_chain), TEST_CASE(shrink_batch), TEST_CASE(shrink_strand),
          TEST_CASE(grow),
          TEST_CASE(race), TEST_CASE(destroy))
