/* SPDX-License-Identifier: MIT */
/* pool_isolate() beyond the lock shape (isolate_lock.c): nesting, calls
 * from a thread outside every pool, what isolated code submits and starts,
 * the return value, and exact results of computations run isolated.
 * isolate_util.h has the flags a task reads to tell that it runs where
 * isolation forbids it.
 *
 *  nested          an isolated computation queues 24 "outer" tasks, then
 *                  runs an inner pool_isolate whose group waits for a child
 *                  main spawns into it from outside (a worker runs it
 *                  meanwhile, long enough for the inner wait to run out of
 *                  the inner work): no outer task runs inside the inner
 *                  waits (they lie below the inner floor); each task once.
 *                  Pools of 1, 2 and 4 (on one worker, a stand-in runs
 *                  the child from outside while the inner wait sleeps).
 *  nested_control  the same with the inner computation not isolated (a
 *                  plain call): prints how many outer tasks its waits ran
 *                  (not asserted), so a reader sees that `nested` would
 *                  catch inner waits that honour only the outer floor.
 *  from_outside    pool_isolate from main: its children run on workers
 *                  whose deques hold other tasks below (feeders); their
 *                  waits run only isolated work; each task once.
 *  submits_and_jobs  inside an isolated computation on a worker:
 *                  pool_submit, pool_submit_n, pool_job_submit, a chain of
 *                  jobs and a job after them; none runs inside the
 *                  computation's waits on its thread (they go to the global
 *                  queue); each runs exactly once; on more than one worker
 *                  the computation may wait for a job it started.
 *  return_value    EINVAL for NULL; 0; pool_fail() inside (directly, in a
 *                  frame it spawned, twice, ECANCELED); a failure in a
 *                  group inside stays the group's; nested in cancelled work
 *                  (a cancelled group's child, a cancelled job): ECANCELED;
 *                  from a thread outside every pool, pool_fail() inside
 *                  records (outside isolation it says ENOENT).
 *  compute         fib, a reduction, pool_join and isolated children that
 *                  isolate again, inside isolation, from a task and from
 *                  main: exact results, every task once. Pools of 1, 2, 4.
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

/* ---- nested ------------------------------------------------------------------- */

enum { OUTER = 24, INNER = 4, OUTER_SPIN = 50000, INNER_SPIN = 10000, TAIL = 40000 };

static __thread int inner_depth; /* inside the inner computation (or its tasks) */

typedef struct nest_state {
  pool_t *pool;
  int isolate_inner;
  pool_group_t inner_g;
  atomic_uint inner_started, child_spawned, inner_done_children, holder_waits;
  atomic_ulong outer_ran, inner_ran, violations, long_ran;
  int inner_rc, outer_rc;
} nest_state;

static nest_state *ns;

static void outer_task(void *arg) {
  (void)arg;
  if (inner_depth > 0) atomic_fetch_add(&ns->violations, 1);
  iso_busy(OUTER_SPIN);
  atomic_fetch_add(&ns->outer_ran, 1);
}

static void inner_child(void *arg) {
  (void)arg;
  inner_depth++;
  iso_busy(INNER_SPIN);
  atomic_fetch_add(&ns->inner_ran, 1);
  atomic_fetch_add(&ns->inner_done_children, 1);
  inner_depth--;
}

/* Spawned into the inner group by main: runs until the inner children are
 * done and the holder is about to wait (at most 20 ms), then a while more,
 * so that the holder's wait has nothing of the inner computation to run. */
static void long_child(void *arg) {
  (void)arg;
  inner_depth++;
  double end = iso_now() + 0.02;
  while ((atomic_load(&ns->inner_done_children) < INNER || !atomic_load(&ns->holder_waits)) &&
         iso_now() < end)
    iso_busy(500);
  iso_busy(TAIL);
  atomic_fetch_add(&ns->long_ran, 1);
  inner_depth--;
}

static void inner(void *arg) {
  (void)arg;
  inner_depth++;
  CHECK_OK(pool_group_init(&ns->inner_g, NULL));
  for (int k = 0; k < INNER; k++) CHECK_OK(pool_group_spawn(&ns->inner_g, inner_child, NULL));
  atomic_store(&ns->inner_started, 1);
  CHECK(iso_wait_until(&ns->child_spawned, 1)); /* main's child is in the group */
  atomic_store(&ns->holder_waits, 1);
  CHECK_OK(pool_group_wait(&ns->inner_g));
  inner_depth--;
}

static void outer(void *arg) {
  (void)arg;
  pool_group_t g;
  CHECK_OK(pool_group_init(&g, NULL));
  for (int k = 0; k < OUTER; k++) CHECK_OK(pool_group_spawn(&g, outer_task, NULL));
  if (ns->isolate_inner)
    ns->inner_rc = pool_isolate(inner, NULL);
  else
    inner(NULL);
  CHECK_OK(pool_group_wait(&g));
}

static void outer_task_fn(void *arg) {
  (void)arg;
  ns->outer_rc = pool_isolate(outer, NULL);
}

static unsigned long nested_rounds(pool_t *p, unsigned long rounds, int isolate_inner) {
  unsigned long total = 0;
  ns = calloc(1, sizeof *ns);
  CHECK(ns);
  for (unsigned long r = 0; r < rounds; r++) {
    memset(ns, 0, sizeof *ns);
    ns->pool = p;
    ns->isolate_inner = isolate_inner;
    ns->inner_rc = ns->outer_rc = -1;
    pool_job_t j;
    CHECK_OK(pool_job_submit(p, &j, outer_task_fn, NULL));
    CHECK(iso_wait_until(&ns->inner_started, 1));
    CHECK_OK(pool_group_spawn(&ns->inner_g, long_child, NULL)); /* from outside: global queue */
    atomic_store(&ns->child_spawned, 1);
    CHECK_OK(pool_job_wait(&j));
    CHECK_OK(ns->outer_rc);
    if (isolate_inner) CHECK_OK(ns->inner_rc);
    CHECK_EQ(atomic_load(&ns->outer_ran), OUTER);
    CHECK_EQ(atomic_load(&ns->inner_ran), INNER);
    CHECK_EQ(atomic_load(&ns->long_ran), 1);
    unsigned long v = atomic_load(&ns->violations);
    if (isolate_inner && v)
      FAIL("round %lu, %u workers: %lu outer tasks ran inside the inner isolated computation's "
           "waits\n",
           r, pool_threads(p), v);
    total += v;
  }
  free(ns);
  return total;
}

static void nested(pool_t *p) {
  unsigned long rounds = iso_rounds(1000, 200);
  CHECK_EQ(nested_rounds(p, rounds, 1), 0);
}

static void case_nested(void) { ON_POOLS(nested, 1, 2, 4); }

static void nested_control(pool_t *p) {
  unsigned long rounds = iso_rounds(500, 100);
  unsigned long v = nested_rounds(p, rounds, 0);
  printf("# inner computation NOT isolated, %u workers: %lu outer tasks ran inside its waits in "
         "%lu rounds\n",
         pool_threads(p), v, rounds);
}

static void case_nested_control(void) { ON_POOLS(nested_control, 2, 4); }

/* ---- from_outside ----------------------------------------------------------------- */

enum { FO_FEEDERS = 4, FO_OTHERS = 16, FO_CHILDREN = 8 };

static atomic_ulong fo_others, fo_violations, fo_children, fo_grand;
static atomic_uint fo_long_claimed;

static void fo_other(void *arg) {
  (void)arg;
  if (iso_here()) atomic_fetch_add(&fo_violations, 1);
  iso_busy(2000);
  atomic_fetch_add(&fo_others, 1);
}

static void fo_feeder(void *arg) {
  (void)arg;
  pool_group_t g;
  CHECK_OK(pool_group_init(&g, NULL));
  for (int k = 0; k < FO_OTHERS; k++) CHECK_OK(pool_group_spawn(&g, fo_other, NULL));
  iso_busy(30000);
  CHECK_OK(pool_group_wait(&g));
}

static void fo_grandchild(void *arg) {
  (void)arg;
  iso_enter();
  unsigned no = 0;
  iso_busy(atomic_compare_exchange_strong(&fo_long_claimed, &no, 1) ? 100000 : 3000);
  atomic_fetch_add(&fo_grand, 1);
  iso_leave();
}

static void fo_child(void *arg) {
  (void)arg;
  iso_enter();
  CHECK(pool_current() != NULL);
  pool_task_t t[2];
  CHECK_OK(pool_spawn(NULL, &t[0], fo_grandchild, NULL));
  CHECK_OK(pool_spawn(NULL, &t[1], fo_grandchild, NULL));
  iso_busy(5000);
  CHECK_OK(pool_sync(&t[1]));
  CHECK_OK(pool_sync(&t[0]));
  atomic_fetch_add(&fo_children, 1);
  iso_leave();
}

static pool_t *fo_pool;

static void fo_body(void *arg) {
  (void)arg;
  CHECK(pool_current() == NULL); /* on main */
  pool_group_t g;
  CHECK_OK(pool_group_init(&g, fo_pool));
  for (int k = 0; k < FO_CHILDREN; k++) CHECK_OK(pool_group_spawn(&g, fo_child, NULL));
  CHECK_OK(pool_group_wait(&g));
}

static void from_outside(pool_t *p) {
  fo_pool = p;
  unsigned long rounds = iso_rounds(500, 100);
  for (unsigned long r = 0; r < rounds; r++) {
    atomic_store(&fo_others, 0);
    atomic_store(&fo_violations, 0);
    atomic_store(&fo_children, 0);
    atomic_store(&fo_grand, 0);
    atomic_store(&fo_long_claimed, 0);
    for (int f = 0; f < FO_FEEDERS; f++) CHECK_OK(pool_submit(p, fo_feeder, NULL));
    CHECK_OK(pool_isolate(fo_body, NULL));
    CHECK_OK(pool_wait_idle(p));
    CHECK_EQ(atomic_load(&fo_children), FO_CHILDREN);
    CHECK_EQ(atomic_load(&fo_grand), 2 * FO_CHILDREN);
    CHECK_EQ(atomic_load(&fo_others), FO_FEEDERS * FO_OTHERS);
    unsigned long v = atomic_load(&fo_violations);
    if (v) FAIL("round %lu: %lu other tasks ran inside the isolated children's waits\n", r, v);
  }
}

static void case_from_outside(void) { ON_POOLS(from_outside, 1, 2, 4); }

/* ---- submits_and_jobs -------------------------------------------------------------- */

enum { SJ_SUBMITS = 20, SJ_BATCH = 40, SJ_JOBS = 10, SJ_CHAIN = 30 };

typedef struct sj_state {
  pool_t *pool;
  atomic_uint *ran; /* per task */
  atomic_ulong violations;
  pool_job_t jobs[SJ_JOBS], chain[SJ_CHAIN], last;
  int waited_rc;
  atomic_uint children;
} sj_state;

static sj_state *sjs;

/* Task i: counts itself; a violation if it runs inside the isolated
 * computation's waits (on its thread, inside it). */
static void sj_task(void *arg) {
  if (iso_here()) atomic_fetch_add(&sjs->violations, 1);
  atomic_fetch_add(&sjs->ran[(uintptr_t)arg], 1);
}

static void sj_child(void *arg) {
  (void)arg;
  iso_enter();
  iso_busy(20000);
  atomic_fetch_add(&sjs->children, 1);
  iso_leave();
}

enum { SJ_TOTAL = SJ_SUBMITS + SJ_BATCH + SJ_JOBS + SJ_CHAIN + 1 };

static void sj_body(void *arg) {
  (void)arg;
  iso_enter();
  /* Children first: what follows would lie above them on this worker's
   * deque, where the group's wait looks first, if it went there. */
  pool_group_t g;
  CHECK_OK(pool_group_init(&g, NULL));
  for (int k = 0; k < 6; k++) CHECK_OK(pool_group_spawn(&g, sj_child, NULL));
  uintptr_t id = 0;
  for (int k = 0; k < SJ_SUBMITS; k++) CHECK_OK(pool_submit(NULL, sj_task, (void *)id++));
  void *args[SJ_BATCH];
  for (int k = 0; k < SJ_BATCH; k++) args[k] = (void *)id++;
  CHECK_OK(pool_submit_n(NULL, sj_task, args, SJ_BATCH));
  for (int k = 0; k < SJ_JOBS; k++)
    CHECK_OK(pool_job_submit(NULL, &sjs->jobs[k], sj_task, (void *)id++));
  for (int k = 0; k < SJ_CHAIN; k++) {
    CHECK_OK(pool_job_init(&sjs->chain[k], NULL, sj_task, (void *)id++));
    if (k) CHECK_OK(pool_job_after(&sjs->chain[k], &sjs->chain[k - 1]));
  }
  CHECK_OK(pool_job_init(&sjs->last, NULL, sj_task, (void *)id++));
  for (int k = 0; k < SJ_JOBS; k++) CHECK_OK(pool_job_after(&sjs->last, &sjs->jobs[k]));
  CHECK_OK(pool_job_after(&sjs->last, &sjs->chain[SJ_CHAIN - 1]));
  for (int k = SJ_CHAIN; k-- > 0;) CHECK_OK(pool_job_start(&sjs->chain[k]));
  CHECK_OK(pool_job_start(&sjs->last));
  CHECK_EQ(id, SJ_TOTAL);
  CHECK_OK(pool_group_wait(&g));
  /* Another worker runs what this one queued globally. */
  if (pool_threads(NULL) > 1) sjs->waited_rc = pool_job_wait(&sjs->last);
  iso_leave();
}

static void sj_outer(void *arg) {
  (void)arg;
  CHECK_OK(pool_isolate(sj_body, NULL));
}

static void submits_and_jobs(pool_t *p) {
  unsigned long rounds = check_iters(300);
  sjs = calloc(1, sizeof *sjs);
  CHECK(sjs);
  sjs->ran = calloc(SJ_TOTAL, sizeof(atomic_uint));
  CHECK(sjs->ran);
  for (unsigned long r = 0; r < rounds; r++) {
    memset((void *)sjs->ran, 0, SJ_TOTAL * sizeof(atomic_uint));
    atomic_store(&sjs->violations, 0);
    atomic_store(&sjs->children, 0);
    sjs->waited_rc = -1;
    sjs->pool = p;
    pool_job_t j;
    CHECK_OK(pool_job_submit(p, &j, sj_outer, NULL));
    CHECK_OK(pool_job_wait(&j));
    CHECK_OK(pool_job_wait(&sjs->last));
    for (int k = 0; k < SJ_JOBS; k++) CHECK_OK(pool_job_wait(&sjs->jobs[k]));
    for (int k = 0; k < SJ_CHAIN; k++) CHECK_OK(pool_job_wait(&sjs->chain[k]));
    CHECK_OK(pool_wait_idle(p));
    if (pool_threads(p) > 1) CHECK_OK(sjs->waited_rc);
    CHECK_EQ(atomic_load(&sjs->children), 6);
    flags_check_once(sjs->ran, SJ_TOTAL, "task submitted or job started inside an isolation");
    unsigned long v = atomic_load(&sjs->violations);
    if (v)
      FAIL("round %lu, %u workers: %lu of %d tasks submitted or jobs started inside the isolated "
           "computation ran inside its waits (they should have gone to the global queue)\n",
           r, pool_threads(p), v, SJ_TOTAL);
  }
  free((void *)sjs->ran);
  free(sjs);
}

static void case_submits_and_jobs(void) { ON_POOLS(submits_and_jobs, 1, 2, 4); }

/* ---- return_value ------------------------------------------------------------------- */

typedef struct rv {
  int mode;
  int rc1, rc2, cancelled_before, cancelled_after, group_rc;
} rv;

static pool_t *rv_pool; /* the case's pool: what NULL means on a worker of it */
static pool_t *rv_here(void) { return pool_current() ? NULL : rv_pool; }

static void rv_frame_fail(void *arg) { ((rv *)arg)->rc1 = pool_fail(EPIPE); }
static void rv_child_fail(void *arg) {
  (void)arg;
  pool_fail(ENOEXEC);
}

static void rv_body(void *arg) {
  rv *v = arg;
  v->cancelled_before = pool_cancelled();
  switch (v->mode) {
  case 0: /* nothing */
    break;
  case 1: /* fails */
    v->rc1 = pool_fail(EIO);
    v->rc2 = pool_fail(EDOM);
    break;
  case 2: { /* a frame it spawned fails: the frame is in its unit */
    pool_task_t t;
    CHECK_OK(pool_spawn(rv_here(), &t, rv_frame_fail, v));
    CHECK_OK(pool_sync(&t));
    break;
  }
  case 3: { /* a group's child fails: the group's failure */
    pool_group_t g;
    CHECK_OK(pool_group_init(&g, rv_here()));
    CHECK_OK(pool_group_spawn(&g, rv_child_fail, NULL));
    v->group_rc = pool_group_wait(&g);
    break;
  }
  case 4: /* cancels itself */
    v->rc1 = pool_fail(ECANCELED);
    break;
  }
  v->cancelled_after = pool_cancelled();
}

static int run_rv(int mode, rv *v) {
  memset(v, 0, sizeof *v);
  v->mode = mode;
  v->rc1 = v->rc2 = v->group_rc = -1;
  return pool_isolate(rv_body, v);
}

static void rv_checks(void) {
  rv v;
  CHECK_OK(run_rv(0, &v));
  CHECK_EQ(v.cancelled_before, 0);
  CHECK_EQ(v.cancelled_after, 0);
  CHECK_EQ(run_rv(1, &v), EIO);
  CHECK_OK(v.rc1);
  CHECK_EQ(v.rc2, EALREADY);
  CHECK_EQ(v.cancelled_after, 1);
  CHECK_EQ(run_rv(2, &v), EPIPE);
  CHECK_OK(v.rc1);
  CHECK_OK(run_rv(3, &v));
  CHECK_EQ(v.group_rc, ENOEXEC);
  CHECK_EQ(v.cancelled_after, 0);
  CHECK_EQ(run_rv(4, &v), ECANCELED);
  CHECK_OK(v.rc1);
}

static void rv_task(void *arg) {
  (void)arg;
  rv_checks();
}

/* In a child of a group it cancels: nested in cancelled work. */
typedef struct rv_nest {
  pool_group_t g;
  int rc, saw;
} rv_nest;
static void rv_saw(void *arg) { ((rv_nest *)arg)->saw = pool_cancelled(); }
static void rv_cancelled_child(void *arg) {
  rv_nest *n = arg;
  CHECK_OK(pool_group_cancel(&n->g));
  n->rc = pool_isolate(rv_saw, n);
}

typedef struct rv_job {
  pool_job_t job;
  atomic_uint running, go;
  int rc, saw;
} rv_job;
static void rv_job_body(void *arg) {
  rv_job *j = arg;
  atomic_store(&j->running, 1);
  CHECK(iso_wait_until(&j->go, 1));
  j->saw = pool_cancelled();
}
static void rv_job_fn(void *arg) {
  rv_job *j = arg;
  j->rc = pool_isolate(rv_job_body, j);
}

static void return_value(pool_t *p) {
  rv_pool = p;
  CHECK_EQ(pool_isolate(NULL, NULL), EINVAL);
  /* From a task. */
  pool_job_t t;
  CHECK_OK(pool_job_submit(p, &t, rv_task, NULL));
  CHECK_OK(pool_job_wait(&t));
  /* From main, outside every pool: pool_fail records inside only. */
  CHECK_EQ(pool_fail(EIO), ENOENT);
  CHECK_EQ(pool_cancelled(), 0);
  rv_checks();
  CHECK_EQ(pool_fail(EIO), ENOENT);
  /* Nested in a cancelled group. */
  rv_nest *n = calloc(1, sizeof *n);
  CHECK(n);
  n->rc = n->saw = -1;
  CHECK_OK(pool_group_init(&n->g, p));
  CHECK_OK(pool_group_spawn(&n->g, rv_cancelled_child, n));
  CHECK_EQ(pool_group_wait(&n->g), ECANCELED);
  CHECK_EQ(n->rc, ECANCELED);
  CHECK_EQ(n->saw, 1);
  free(n);
  /* In a job cancelled while the isolated computation runs. */
  rv_job *j = calloc(1, sizeof *j);
  CHECK(j);
  j->rc = j->saw = -1;
  CHECK_OK(pool_job_submit(p, &j->job, rv_job_fn, j));
  CHECK(iso_wait_until(&j->running, 1));
  CHECK_OK(pool_job_cancel(&j->job));
  atomic_store(&j->go, 1);
  CHECK_EQ(pool_job_wait(&j->job), ECANCELED);
  CHECK_EQ(j->saw, 1);
  CHECK_EQ(j->rc, ECANCELED);
  free(j);
}

static void case_return_value(void) { ON_POOLS(return_value, 1, 2); }

/* ---- compute ---------------------------------------------------------------------- */

static atomic_ulong cp_leaves;

static void cp_fib(void *arg) { fib_task(arg); }

static void cp_join_half(void *arg) {
  fib_arg *f = arg;
  CHECK_OK(pool_isolate(cp_fib, f)); /* isolated again, wherever it runs */
}

static void cp_loop(size_t b, size_t e, void *ctx) {
  (void)ctx;
  for (size_t i = b; i < e; i++) atomic_fetch_add(&cp_leaves, 1);
}

static void cp_loop_nop(void *arg) { (void)arg; }

typedef struct cp_state {
  pool_t *pool;
  fib_arg a, b, c;
  uint64_t sum;
  int join_rc, loop_rc, reduce_rc;
} cp_state;

static void cp_body(void *arg) {
  cp_state *s = arg;
  pool_t *p = pool_current() ? NULL : s->pool;
  s->join_rc = pool_join(p, cp_join_half, &s->a, cp_join_half, &s->b);
  if (p)
    CHECK_OK(pool_join(p, cp_fib, &s->c, cp_loop_nop, NULL)); /* from main: on the workers */
  else
    fib_task(&s->c);
  s->loop_rc = pool_parallel_for(p, 0, 100000, 0, cp_loop, NULL);
  uint64_t zero = 0;
  pool_reducer_t r = {sizeof(uint64_t), &zero, sum_body, sum_combine, NULL, 0};
  s->reduce_rc = pool_parallel_reduce(p, 0, 200000, 0, &r, &s->sum);
}

static void cp_task(void *arg) { CHECK_OK(pool_isolate(cp_body, arg)); }

static void compute(pool_t *p) {
  unsigned long rounds = check_iters(20);
  for (unsigned long r = 0; r < rounds; r++) {
    cp_state s;
    memset(&s, 0, sizeof s);
    s.pool = p;
    s.a.n = 20;
    s.b.n = 19;
    s.c.n = 21;
    atomic_store(&cp_leaves, 0);
    if (r % 2) {
      CHECK_OK(pool_isolate(cp_body, &s)); /* from main */
    } else {
      pool_job_t j;
      CHECK_OK(pool_job_submit(p, &j, cp_task, &s));
      CHECK_OK(pool_job_wait(&j));
    }
    CHECK_OK(s.join_rc);
    CHECK_OK(s.loop_rc);
    CHECK_OK(s.reduce_rc);
    CHECK_EQ(s.a.r, fib_seq(20));
    CHECK_EQ(s.b.r, fib_seq(19));
    CHECK_EQ(s.c.r, fib_seq(21));
    CHECK_EQ(atomic_load(&cp_leaves), 100000);
    CHECK_EQ(s.sum, (uint64_t)200000 * 199999 / 2);
  }
}

static void case_compute(void) { ON_POOLS(compute, 1, 2, 4); }

TEST_MAIN(600, TEST_CASE(nested), TEST_CASE(nested_control), TEST_CASE(from_outside),
          TEST_CASE(submits_and_jobs), TEST_CASE(return_value), TEST_CASE(compute))
