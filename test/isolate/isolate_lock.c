/* SPDX-License-Identifier: MIT */
/* The shape of Rayon's issue #592, made deterministic (isolate_util.h): a
 * task locks mutex M, spawns children and waits for them; other tasks of
 * the pool lock M too. A waiting worker runs what it finds, so without
 * isolation the holder's wait (or the wait of one of its children on
 * another worker) may start one of those other tasks on top of the
 * holder's stack: with a real lock, a deadlock. Here such a task finds the
 * thread's flags set, counts a violation and returns.
 *
 * A round: a task R of the pool
 *   1. spawns into a group of its own, on its deque: a "feeder" for every
 *      other worker (a thief takes it, so every worker is awake when the
 *      children come; it waits for them to be spawned, then, but for the
 *      first feeder, which returns, pushes 8 other tasks onto its own
 *      deque and works a while before it waits for them), then, once the
 *      feeders started, one other task: below what comes next;
 *   2. pool_isolate: locks M, spawns 8 children (each spawns two
 *      grandchildren frames and syncs them; the first child a thief runs
 *      is a long one, which runs until the others are done and a while
 *      more, so the holder's wait runs out of its own work while a child
 *      still runs), waits, unlocks. Once the children are spawned, main
 *      submits 8 other tasks to the global queue. An other task that
 *      finds M taken goes back to the global queue, through a helper
 *      pool, without holding its worker. In "shape B" rounds every child
 *      also pool_submit()s an other task and pool_job_submit()s one (from
 *      an isolated computation both go to the global queue; without
 *      isolation, onto the worker's deque, right where the holder's wait
 *      looks first: this makes violations likely on one worker too);
 *   3. waits for its group.
 * The children are spawned three ways, one per round in turn: a group,
 * pool_spawn frames (synced in spawn order, which runs the later ones
 * first), and pool_parallel_for with grain 1.
 *
 *  isolated      pool_isolate around step 2: 0 violations over 10^4 rounds
 *                (2 * 10^3 under sanitizers and emulators; times
 *                WSPOOL_STRESS) on 1, 2 and 4 workers; every task of every
 *                kind ran exactly once; pool_isolate returned 0.
 *  unisolated    the same shape without pool_isolate (a control, fewer
 *                rounds): prints the violations it saw (not asserted: they
 *                depend on the schedule), to show that the test above
 *                would catch a wait that is not isolated; every task still
 *                ran exactly once.
 * No timing assertions. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wspool.h>

#include "check.h"
#include "isolate_util.h"
#include "testutil.h"

enum {
  CHILDREN = 8,
  GRAND = 2,
  FEED_OTHERS = 8,
  GLOBAL_OTHERS = 8,
  CHILD_SPIN = 10000,
  TAIL_SPIN = 40000,
  GRAND_SPIN = 4000,
  RESUBMIT_SPIN = 10000,
  FEEDER_SPIN = 30000,
  MAX_FEEDERS = 8
};

static pthread_mutex_t M = PTHREAD_MUTEX_INITIALIZER;
static unsigned long shared_counter; /* under M */

/* Counts, per round. */
static atomic_ulong violations, attempts, completions, children_ran, children_done, grand_ran,
    feeders_ran;

/* The pool of the rounds, and a helper pool through which an other task
 * that could not have M goes back to the rounds' pool's global queue. */
static pool_t *rounds_pool, *helper_pool;

/* ---- the tasks that lock M ------------------------------------------------ */

static void other(void *arg);

/* On the helper pool: back to the rounds' pool's global queue, after a
 * pause (so that the thief that let it go steals a child meanwhile rather
 * than taking it again at once). */
static void resubmit(void *arg) {
  (void)arg;
  iso_busy(RESUBMIT_SPIN);
  CHECK_OK(pool_submit(rounds_pool, other, NULL));
}

/* An other task locks M, or (M taken by another thread) goes back to the
 * pool's queues to try again later, without holding its worker meanwhile:
 * so the workers keep stealing, as the shape needs, and the test never
 * waits on the lock it holds. Started where isolation forbids it (the
 * thread holds M or runs isolated work), it counts a violation instead,
 * and goes back as well (every other task completes exactly once). */
static void other(void *arg) {
  (void)arg;
  atomic_fetch_add(&attempts, 1);
  if (iso_here()) {
    atomic_fetch_add(&violations, 1);
    CHECK_OK(pool_submit(helper_pool, resubmit, NULL));
    return;
  }
  if (pthread_mutex_trylock(&M) != 0) {
    CHECK_OK(pool_submit(helper_pool, resubmit, NULL));
    return;
  }
  shared_counter++;
  pthread_mutex_unlock(&M);
  atomic_fetch_add(&completions, 1);
}

typedef struct round round;
static round *cur;

/* Round events (the children spawned, a thief runs the long child, the
 * held region ended), for threads that wait for them asleep: a spinning
 * waiter would take the CPU the others need (this machine may have fewer
 * CPUs than the test has threads). */
static pthread_mutex_t ev_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ev_cond = PTHREAD_COND_INITIALIZER;

static void ev_set(atomic_uint *flag) {
  pthread_mutex_lock(&ev_lock);
  atomic_store(flag, 1);
  pthread_cond_broadcast(&ev_cond);
  pthread_mutex_unlock(&ev_lock);
}

/* Sleeps until *a or *b (b may be NULL) is set; false after 30 s times
 * WSPOOL_STRESS. */
static int ev_wait(atomic_uint *a, atomic_uint *b) {
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += (time_t)(30 * test_stress_factor());
  int ok = 1;
  pthread_mutex_lock(&ev_lock);
  while (!atomic_load(a) && !(b && atomic_load(b)))
    if (pthread_cond_timedwait(&ev_cond, &ev_lock, &until) != 0) {
      ok = atomic_load(a) || (b && atomic_load(b));
      break;
    }
  pthread_mutex_unlock(&ev_lock);
  return ok;
}

static atomic_uint *round_spawned_flag(void);

/* A feeder runs on a thief (the worker is awake when the children come):
 * it waits until the children are spawned, then (unless it is the waker,
 * arg non-NULL, which returns: its worker is free to steal children at
 * once) pushes other tasks onto its own deque and works a while before it
 * waits for them. */
static void feeder(void *arg) {
  atomic_fetch_add(&feeders_ran, 1);
  if (!ev_wait(round_spawned_flag(), NULL)) FAIL("the round's children were never spawned\n");
  if (arg) return;
  pool_group_t g;
  CHECK_OK(pool_group_init(&g, NULL));
  for (int k = 0; k < FEED_OTHERS; k++) CHECK_OK(pool_group_spawn(&g, other, NULL));
  iso_busy(FEEDER_SPIN); /* its others wait on its deque meanwhile */
  CHECK_OK(pool_group_wait(&g));
}

/* ---- the isolated computation ----------------------------------------------- */

typedef enum kind { K_GROUP, K_FRAMES, K_LOOP, K_KINDS } kind;
static const char *const kind_name[] = {"group", "frames", "parallel_for"};

struct round {
  pool_t *pool;
  kind how;
  int shape_b; /* children submit other tasks and jobs */
  int isolate; /* pool_isolate around the held region (else a plain call) */
  unsigned feeders;
  atomic_uint spawned;   /* 1 once the children are spawned */
  atomic_uint stolen;    /* 1 once a thief runs the long child: main submits */
  atomic_uint held_done; /* 1 once the held region ended */
  atomic_uint long_claimed;
  int iso_rc;
  pool_job_t jobs[CHILDREN]; /* shape B: one job per child */
};

static atomic_uint *round_spawned_flag(void) { return &cur->spawned; }

static void grandchild(void *arg) {
  (void)arg;
  iso_enter();
  iso_busy(GRAND_SPIN);
  atomic_fetch_add(&grand_ran, 1);
  iso_leave();
}

/* The first child a thread other than the holder's runs is a long one: it
 * runs until every other child is done (at most 2 ms: the ones it would
 * wait for may be its own, in a loop piece), then a while more, so that
 * the holder's wait runs out of its own work while it runs. */
static void child_body(round *r, size_t i) {
  iso_enter();
  atomic_fetch_add(&children_ran, 1);
  unsigned no = 0;
  if (!iso_holds && atomic_compare_exchange_strong(&r->long_claimed, &no, 1)) {
    ev_set(&r->stolen);
    double end = iso_now() + 0.002;
    while (atomic_load(&children_done) < CHILDREN - 1 && iso_now() < end) iso_busy(500);
    iso_busy(TAIL_SPIN);
  } else {
    iso_busy(CHILD_SPIN);
  }
  pool_task_t t[GRAND];
  for (int k = 0; k < GRAND; k++) CHECK_OK(pool_spawn(NULL, &t[k], grandchild, NULL));
  for (int k = 0; k < GRAND; k++) CHECK_OK(pool_sync(&t[k]));
  if (r->shape_b) {
    CHECK_OK(pool_submit(NULL, other, NULL));
    CHECK_OK(pool_job_submit(NULL, &r->jobs[i], other, NULL));
  }
  atomic_fetch_add(&children_done, 1);
  iso_leave();
}

static void child(void *arg) { child_body(cur, (size_t)(uintptr_t)arg); }
static void child_loop(size_t b, size_t e, void *ctx) {
  for (size_t i = b; i < e; i++) child_body(ctx, i);
}

/* Locks M, spawns the children, waits for them, unlocks. */
static void held(void *arg) {
  round *r = arg;
  pthread_mutex_lock(&M);
  iso_holds = 1;
  iso_enter();
  switch (r->how) {
  case K_GROUP: {
    pool_group_t g;
    CHECK_OK(pool_group_init(&g, NULL));
    for (size_t i = 0; i < CHILDREN; i++)
      CHECK_OK(pool_group_spawn(&g, child, (void *)(uintptr_t)i));
    ev_set(&r->spawned);
    CHECK_OK(pool_group_wait(&g));
    break;
  }
  case K_FRAMES: {
    pool_task_t t[CHILDREN];
    for (size_t i = 0; i < CHILDREN; i++)
      CHECK_OK(pool_spawn(NULL, &t[i], child, (void *)(uintptr_t)i));
    ev_set(&r->spawned);
    for (size_t i = 0; i < CHILDREN; i++) CHECK_OK(pool_sync(&t[i]));
    break;
  }
  default:
    ev_set(&r->spawned);
    CHECK_OK(pool_parallel_for(NULL, 0, CHILDREN, 1, child_loop, r));
    break;
  }
  iso_leave();
  iso_holds = 0;
  pthread_mutex_unlock(&M);
  ev_set(&r->held_done);
}

static void round_task(void *arg) {
  round *r = arg;
  pool_group_t outer;
  CHECK_OK(pool_group_init(&outer, NULL));
  for (unsigned f = 0; f < r->feeders; f++)
    CHECK_OK(pool_group_spawn(&outer, feeder, f == 0 ? (void *)r : NULL));
  /* Once thieves took every feeder (they are awake then): an other task
   * below the children. */
  double end = iso_now() + 30.0 * (double)test_stress_factor();
  while (atomic_load(&feeders_ran) < r->feeders) {
    if (iso_now() > end) FAIL("the feeders never started\n");
    sched_yield();
  }
  CHECK_OK(pool_group_spawn(&outer, other, NULL));
  if (r->isolate)
    r->iso_rc = pool_isolate(held, r);
  else
    held(r);
  CHECK_OK(pool_group_wait(&outer));
}

/* ---- rounds ------------------------------------------------------------------- */

static void reset_counts(void) {
  atomic_store(&violations, 0);
  atomic_store(&attempts, 0);
  atomic_store(&completions, 0);
  atomic_store(&children_ran, 0);
  atomic_store(&children_done, 0);
  atomic_store(&grand_ran, 0);
  atomic_store(&feeders_ran, 0);
}

/* Runs `rounds` rounds on p; returns the violations seen, having checked
 * that every task ran exactly once. */
static unsigned long run_rounds(pool_t *p, unsigned long rounds, int isolate,
                                unsigned long *per_kind) {
  unsigned feeders = pool_threads(p) - 1;
  if (feeders > MAX_FEEDERS) feeders = MAX_FEEDERS;
  round *r = calloc(1, sizeof *r);
  CHECK(r);
  rounds_pool = p;
  helper_pool = make_pool(1);
  unsigned long total = 0;
  for (unsigned long k = 0; k < rounds; k++) {
    reset_counts();
    memset(r, 0, sizeof *r);
    r->pool = p;
    r->how = (kind)(k % K_KINDS);
    r->shape_b = (k / K_KINDS) % 2;
    r->isolate = isolate;
    r->feeders = feeders;
    r->iso_rc = -1;
    cur = r;
    pool_job_t rj;
    CHECK_OK(pool_job_submit(p, &rj, round_task, r));
    /* Other tasks on the global queue once the children are spawned. */
    if (!ev_wait(&r->spawned, &r->held_done)) FAIL("round %lu never ended\n", k);
    void *none[GLOBAL_OTHERS] = {0};
    CHECK_OK(pool_submit_n(p, other, none, GLOBAL_OTHERS));
    CHECK_OK(pool_job_wait(&rj));
    if (r->shape_b)
      for (int i = 0; i < CHILDREN; i++) CHECK_OK(pool_job_wait(&r->jobs[i]));
    if (isolate) CHECK_OK(r->iso_rc);
    unsigned long want_others = 1 + (unsigned long)(feeders ? feeders - 1 : 0) * FEED_OTHERS +
                                GLOBAL_OTHERS + (r->shape_b ? 2ul * CHILDREN : 0);
    /* Every other task completes once M is free (some may still be on
     * their way back through the helper pool). */
    double end = iso_now() + 30.0 * (double)test_stress_factor();
    while (atomic_load(&completions) < want_others) {
      if (iso_now() > end) FAIL("round %lu: other tasks never completed\n", k);
      sched_yield();
    }
    CHECK_OK(pool_wait_idle(helper_pool));
    CHECK_OK(pool_wait_idle(p));
    CHECK_EQ(atomic_load(&children_ran), CHILDREN);
    CHECK_EQ(atomic_load(&grand_ran), CHILDREN * GRAND);
    CHECK_EQ(atomic_load(&feeders_ran), feeders);
    CHECK_EQ(atomic_load(&completions), want_others);
    unsigned long v = atomic_load(&violations);
    CHECK(atomic_load(&attempts) >= want_others + v);
    total += v;
    per_kind[r->how * 2 + (unsigned)r->shape_b] += v;
    if (isolate && v)
      FAIL("round %lu (%s, shape %c, %u workers): %lu tasks from outside the isolated "
           "computation ran inside its waits\n",
           k, kind_name[r->how], r->shape_b ? 'B' : 'A', pool_threads(p), v);
  }
  free(r);
  CHECK_OK(pool_destroy(helper_pool));
  return total;
}

static unsigned long rounds_for(unsigned long base) { return iso_rounds(base, base / 5); }

static void isolated(pool_t *p) {
  unsigned long per_kind[K_KINDS * 2] = {0};
  unsigned long rounds = rounds_for(10000);
  CHECK_EQ(run_rounds(p, rounds, 1, per_kind), 0);
  printf("# isolated, %u workers: %lu rounds, 0 violations\n", pool_threads(p), rounds);
}

static void case_isolated(void) { ON_POOLS(isolated, 1, 2, 4); }

static void unisolated(pool_t *p) {
  unsigned long per_kind[K_KINDS * 2] = {0};
  unsigned long rounds = rounds_for(2000);
  unsigned long v = run_rounds(p, rounds, 0, per_kind);
  printf("# WITHOUT pool_isolate, %u workers: %lu violations in %lu rounds (", pool_threads(p), v,
         rounds);
  for (int k = 0; k < K_KINDS; k++)
    printf("%s%s A %lu, B %lu", k ? "; " : "", kind_name[k], per_kind[2 * k], per_kind[2 * k + 1]);
  printf(")\n");
}

static void case_unisolated(void) { ON_POOLS(unisolated, 1, 2, 4); }

TEST_MAIN(600, TEST_CASE(isolated), TEST_CASE(unisolated))
