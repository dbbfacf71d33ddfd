/* SPDX-License-Identifier: MIT */
/* What a job completes with (include/wspool.h, \ref jobs, "Outcome"): its
 * own failure, a cancellation before its start, while it waits for its
 * predecessors or while it runs, and how a predecessor that did not succeed
 * makes every job after it be skipped with its status.
 *
 *  fail              pool_fail() in a job: 0 for the first, EALREADY after;
 *                    pool_cancelled() then 1; the job's status is the code;
 *                    pool_fail(ECANCELED) completes it ECANCELED; EINVAL for
 *                    a code <= 0 (nothing recorded).
 *  unit_of_its_own   a job is nested in no unit: started from a child of a
 *                    cancelled group it still runs and sees no cancel; its
 *                    failure is not the group's.
 *  cancel_before     cancelled before its start: its function never runs,
 *                    ECANCELED, and so for the chain after it.
 *  cancel_waiting    cancelled while its predecessor runs: skipped,
 *                    ECANCELED, and its successor too; the predecessor 0.
 *  cancel_running    cancelled while it runs: pool_cancelled() in it turns
 *                    1, a group nested in it waits ECANCELED, the job
 *                    completes ECANCELED, its successors are skipped.
 *  cancel_race       many threads cancel a job at random moments around its
 *                    run: it ran at most once; 0 only if it ran; repeated
 *                    and concurrent cancels return 0.
 *  chain_fail        a chain of 200 whose job k fails: jobs before it 0,
 *                    job k its code, every job after it skipped with that
 *                    code (k and the start order random).
 *  diamond_fail      A -> B, C -> D: B fails (D takes B's code, C runs), A
 *                    fails (B, C, D take A's code), B cancelled (D
 *                    ECANCELED).
 *  first_failure     B and C both fail, C only once B's status is there
 *                    (pool_job_status): D takes B's code, the first failed
 *                    predecessor to complete. B also has many other
 *                    successors, released before D.
 *  after_complete    pool_job_after on a complete predecessor: satisfied at
 *                    once (0: runs; failed or cancelled: skipped with its
 *                    status), alone and beside a pending predecessor, and
 *                    for 40 complete predecessors (edge blocks).
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
#include "job_util.h"
#include "testutil.h"

static atomic_uint runs;
static void count_fn(void *arg) {
  (void)arg;
  atomic_fetch_add(&runs, 1);
}

/* ---- fail ---------------------------------------------------------------- */

typedef struct fail_arg {
  int code;
  int first, second, cancelled_before, cancelled_after, bad0, badneg;
} fail_arg;

static void fail_fn(void *arg) {
  fail_arg *a = arg;
  a->cancelled_before = pool_cancelled();
  a->bad0 = pool_fail(0);
  a->badneg = pool_fail(-5);
  if (a->code) {
    a->first = pool_fail(a->code);
    a->second = pool_fail(EDOM);
  }
  a->cancelled_after = pool_cancelled();
}

static void fail(pool_t *p) {
  static const int codes[] = {0, EIO, ECANCELED, 1, 0x7fff};
  for (size_t k = 0; k < sizeof codes / sizeof codes[0]; k++) {
    fail_arg a = {codes[k], -1, -1, -1, -1, -1, -1};
    pool_job_t j;
    CHECK_OK(pool_job_submit(p, &j, fail_fn, &a));
    CHECK_EQ(pool_job_wait(&j), codes[k]);
    CHECK_EQ(a.cancelled_before, 0);
    CHECK_EQ(a.bad0, EINVAL);
    CHECK_EQ(a.badneg, EINVAL);
    if (codes[k]) {
      CHECK_OK(a.first);
      CHECK_EQ(a.second, EALREADY);
      CHECK_EQ(a.cancelled_after, 1);
    } else {
      CHECK_EQ(a.cancelled_after, 0);
    }
  }
}

static void case_fail(void) { ON_POOLS(fail, 1, 2); }

/* ---- unit_of_its_own ------------------------------------------------------ */

typedef struct uo_state {
  pool_group_t g;
  pool_job_t job;
  int job_saw_cancel, job_fail_rc, child_saw_cancel, submit_rc;
  atomic_uint job_runs;
} uo_state;

static void uo_job(void *arg) {
  uo_state *s = arg;
  atomic_fetch_add(&s->job_runs, 1);
  s->job_saw_cancel = pool_cancelled();
  s->job_fail_rc = pool_fail(ENOSPC);
}

static void uo_child(void *arg) {
  uo_state *s = arg;
  CHECK_OK(pool_group_cancel(&s->g));
  s->child_saw_cancel = pool_cancelled();
  s->submit_rc = pool_job_submit(NULL, &s->job, uo_job, s);
  CHECK_EQ(pool_job_wait(&s->job), ENOSPC);
}

static void uo_run(void *arg) {
  uo_state *s = arg;
  CHECK_OK(pool_group_init(&s->g, NULL));
  CHECK_OK(pool_group_spawn(&s->g, uo_child, s));
  CHECK_EQ(pool_group_wait(&s->g), ECANCELED); /* not ENOSPC: not the job's */
}

static void unit_of_its_own(pool_t *p) {
  uo_state s;
  memset(&s, 0, sizeof s);
  pool_job_t t;
  CHECK_OK(pool_job_submit(p, &t, uo_run, &s));
  CHECK_OK(pool_job_wait(&t));
  CHECK_OK(s.submit_rc);
  CHECK_EQ(s.child_saw_cancel, 1);
  CHECK_EQ(atomic_load(&s.job_runs), 1);
  CHECK_EQ(s.job_saw_cancel, 0);
  CHECK_OK(s.job_fail_rc);
  CHECK_EQ(pool_job_status(&s.job), ENOSPC);
}

static void case_unit_of_its_own(void) { ON_POOLS(unit_of_its_own, 1, 2); }

/* ---- cancellation before the start, while waiting ----------------------------- */

enum { CB_CHAIN = 5 };

static void cancel_before(pool_t *p) {
  for (int where = 0; where < CB_CHAIN; where++) {
    atomic_store(&runs, 0);
    pool_job_t j[CB_CHAIN];
    for (int k = 0; k < CB_CHAIN; k++) {
      CHECK_OK(pool_job_init(&j[k], p, count_fn, NULL));
      if (k) CHECK_OK(pool_job_after(&j[k], &j[k - 1]));
    }
    CHECK_OK(pool_job_cancel(&j[where]));
    CHECK_OK(pool_job_cancel(&j[where])); /* idempotent */
    for (int k = CB_CHAIN; k-- > 0;) CHECK_OK(pool_job_start(&j[k]));
    for (int k = 0; k < CB_CHAIN; k++) CHECK_EQ(pool_job_wait(&j[k]), k < where ? 0 : ECANCELED);
    CHECK_EQ(atomic_load(&runs), (unsigned)where);
  }
}

static void case_cancel_before(void) { ON_POOLS(cancel_before, 1, 2); }

typedef struct cw_state {
  pool_job_t g, j, s; /* g -> j -> s */
  jgate gate;
  atomic_uint j_runs, s_runs;
} cw_state;

static void cw_g(void *arg) { gate_pass(&((cw_state *)arg)->gate); }
static void cw_j(void *arg) { atomic_fetch_add(&((cw_state *)arg)->j_runs, 1); }
static void cw_s(void *arg) { atomic_fetch_add(&((cw_state *)arg)->s_runs, 1); }

static void cancel_waiting(pool_t *p) {
  unsigned long rounds = check_iters(200);
  for (unsigned long r = 0; r < rounds; r++) {
    cw_state *c = calloc(1, sizeof *c);
    CHECK(c);
    CHECK_OK(pool_job_init(&c->g, p, cw_g, c));
    CHECK_OK(pool_job_init(&c->j, p, cw_j, c));
    CHECK_OK(pool_job_init(&c->s, p, cw_s, c));
    CHECK_OK(pool_job_after(&c->j, &c->g));
    CHECK_OK(pool_job_after(&c->s, &c->j));
    CHECK_OK(pool_job_start(&c->s));
    CHECK_OK(pool_job_start(&c->j));
    CHECK_OK(pool_job_start(&c->g));
    CHECK(job_wait_until(&c->gate.waiting, 1)); /* g runs; j waits for it */
    CHECK_OK(pool_job_cancel(&c->j));
    gate_open(&c->gate);
    CHECK_EQ(pool_job_wait(&c->s), ECANCELED);
    CHECK_EQ(pool_job_wait(&c->j), ECANCELED);
    CHECK_OK(pool_job_wait(&c->g));
    CHECK_EQ(atomic_load(&c->j_runs), 0);
    CHECK_EQ(atomic_load(&c->s_runs), 0);
    free(c);
  }
}

static void case_cancel_waiting(void) { ON_POOLS(cancel_waiting, 1, 2, 4); }

/* ---- cancellation while running ------------------------------------------------- */

typedef struct cr_state {
  pool_job_t j, s1, s2; /* j -> s1, j -> s2 */
  atomic_uint running, saw, s_runs, children;
  int group_rc, timed_out;
} cr_state;

static void cr_child(void *arg) { atomic_fetch_add(&((cr_state *)arg)->children, 1); }

static void cr_j(void *arg) {
  cr_state *c = arg;
  atomic_store(&c->running, 1);
  double end = job_now() + 30.0 * (double)test_stress_factor();
  while (!pool_cancelled()) {
    if (job_now() > end) {
      c->timed_out = 1;
      return;
    }
    sched_yield();
  }
  atomic_store(&c->saw, 1);
  /* A group started now is nested in the cancelled job: its children are
   * skipped and its wait says so. */
  pool_group_t g;
  CHECK_OK(pool_group_init(&g, NULL));
  for (int k = 0; k < 10; k++) CHECK_OK(pool_group_spawn(&g, cr_child, c));
  c->group_rc = pool_group_wait(&g);
}

static void cr_s(void *arg) { atomic_fetch_add(&((cr_state *)arg)->s_runs, 1); }

static void cancel_running(pool_t *p) {
  unsigned long rounds = check_iters(100);
  for (unsigned long r = 0; r < rounds; r++) {
    cr_state *c = calloc(1, sizeof *c);
    CHECK(c);
    c->group_rc = -1;
    CHECK_OK(pool_job_init(&c->j, p, cr_j, c));
    CHECK_OK(pool_job_init(&c->s1, p, cr_s, c));
    CHECK_OK(pool_job_init(&c->s2, p, cr_s, c));
    CHECK_OK(pool_job_after(&c->s1, &c->j));
    CHECK_OK(pool_job_after(&c->s2, &c->j));
    CHECK_OK(pool_job_start(&c->s1));
    CHECK_OK(pool_job_start(&c->j));
    CHECK_OK(pool_job_start(&c->s2));
    CHECK(job_wait_until(&c->running, 1));
    CHECK_EQ(pool_job_status(&c->j), EINPROGRESS);
    CHECK_OK(pool_job_cancel(&c->j));
    CHECK_EQ(pool_job_wait(&c->j), ECANCELED);
    CHECK_EQ(c->timed_out, 0);
    CHECK_EQ(atomic_load(&c->saw), 1);
    CHECK_EQ(c->group_rc, ECANCELED);
    CHECK_EQ(atomic_load(&c->children), 0);
    CHECK_EQ(pool_job_wait(&c->s1), ECANCELED);
    CHECK_EQ(pool_job_wait(&c->s2), ECANCELED);
    CHECK_EQ(atomic_load(&c->s_runs), 0);
    free(c);
  }
}

static void case_cancel_running(void) { ON_POOLS(cancel_running, 1, 2, 4); }

/* ---- cancels racing with the run ------------------------------------------------ */

enum { CRACE_THREADS = 3 };

typedef struct crace {
  pool_job_t j;
  atomic_uint ran, go;
  unsigned delay[CRACE_THREADS];
  int rc[CRACE_THREADS][2];
} crace;

static void crace_fn(void *arg) {
  crace *c = arg;
  atomic_fetch_add(&c->ran, 1);
  job_busy(300);
}

typedef struct crace_arg {
  crace *c;
  int k;
} crace_arg;

static void *crace_thread(void *v) {
  crace_arg *a = v;
  while (!atomic_load(&a->c->go)) sched_yield();
  job_busy(a->c->delay[a->k]);
  a->c->rc[a->k][0] = pool_job_cancel(&a->c->j);
  a->c->rc[a->k][1] = pool_job_cancel(&a->c->j);
  return NULL;
}

static void cancel_race(pool_t *p) {
  unsigned long rounds = check_iters(300);
  uint64_t seed = 0xcace + pool_threads(p);
  unsigned ran = 0, cancelled = 0;
  crace *c = calloc(1, sizeof *c);
  CHECK(c);
  for (unsigned long r = 0; r < rounds; r++) {
    atomic_store(&c->ran, 0);
    atomic_store(&c->go, 0);
    CHECK_OK(pool_job_init(&c->j, p, crace_fn, c));
    pthread_t th[CRACE_THREADS];
    crace_arg a[CRACE_THREADS];
    for (int k = 0; k < CRACE_THREADS; k++) {
      c->delay[k] = (unsigned)(rng_next(&seed) % 3000);
      a[k] = (crace_arg){c, k};
      CHECK_OK(pthread_create(&th[k], NULL, crace_thread, &a[k]));
    }
    atomic_store(&c->go, 1);
    CHECK_OK(pool_job_start(&c->j));
    int rc = pool_job_wait(&c->j);
    for (int k = 0; k < CRACE_THREADS; k++) {
      CHECK_OK(pthread_join(th[k], NULL));
      CHECK_OK(c->rc[k][0]);
      CHECK_OK(c->rc[k][1]);
    }
    unsigned n = atomic_load(&c->ran);
    CHECK(n <= 1);
    if (rc == 0)
      CHECK_EQ(n, 1);
    else
      CHECK_EQ(rc, ECANCELED);
    CHECK_EQ(pool_job_status(&c->j), rc); /* cancels after the end change nothing */
    ran += n;
    cancelled += rc == ECANCELED;
  }
  free(c);
  printf("# cancel_race, %u workers: %u ran, %u cancelled of %lu\n", pool_threads(p), ran,
         cancelled, rounds);
}

static void case_cancel_race(void) { ON_POOLS(cancel_race, 1, 2); }

/* ---- failures down a chain and a diamond ---------------------------------------- */

enum { CF_N = 200 };

static void chain_fail(pool_t *p) {
  unsigned long rounds = check_iters(60);
  uint64_t seed = 0xfa11 + pool_threads(p);
  jdag *d = jdag_new(CF_N);
  for (size_t i = 1; i < CF_N; i++) jdag_edge(d, i - 1, i);
  jdag_seal(d);
  for (unsigned long r = 0; r < rounds; r++) {
    size_t k = (size_t)(rng_next(&seed) % CF_N);
    for (size_t i = 0; i < CF_N; i++) {
      jnode *n = &d->n[i];
      atomic_store(&n->runs, 0);
      atomic_store(&n->t_start, 0);
      atomic_store(&n->t_end, 0);
      n->fail = i == k ? 1000 + (int)k : 0;
      n->cancel = 0;
      jdag_init(d, i, p);
    }
    jdag_link(d);
    unsigned *o = jorder(CF_N, (int)(r % 3), rng_next(&seed));
    jdag_start(d, o);
    free(o);
    jdag_wait(d, rng_next(&seed));
    jdag_check(d, "chain with a failure");
    for (size_t i = 0; i < CF_N; i++) CHECK_EQ(d->n[i].status, i < k ? 0 : 1000 + (int)k);
  }
  jdag_free(d);
}

static void case_chain_fail(void) { ON_POOLS(chain_fail, 1, 2, 4); }

/* A -> B, A -> C, B -> D, C -> D; `fail[i]` for node i, `cancel` one
 * node (or -1). Returns the graph, checked, for the caller's exact checks. */
static jdag *diamond(pool_t *p, const int fail[4], int cancel, int order) {
  jdag *d = jdag_new(4);
  jdag_edge(d, 0, 1);
  jdag_edge(d, 0, 2);
  jdag_edge(d, 1, 3);
  jdag_edge(d, 2, 3);
  jdag_seal(d);
  for (int i = 0; i < 4; i++) {
    d->n[i].fail = fail[i];
    d->n[i].cancel = i == cancel;
    jdag_init(d, (size_t)i, p);
  }
  jdag_link(d);
  unsigned *o = jorder(4, order, (uint64_t)order + 1);
  jdag_start(d, o);
  free(o);
  jdag_wait(d, 3);
  jdag_check(d, "diamond");
  return d;
}

static void diamond_fail(pool_t *p) {
  unsigned long rounds = check_iters(100);
  for (unsigned long r = 0; r < rounds; r++) {
    int order = (int)(r % 3);
    static const int b_fails[4] = {0, EIO, 0, 0}, a_fails[4] = {ENXIO, EIO, EDOM, 0},
                     none[4] = {0, 0, 0, 0};
    jdag *d = diamond(p, b_fails, -1, order);
    CHECK_EQ(d->n[1].status, EIO);
    CHECK_OK(d->n[2].status);
    CHECK_EQ(d->n[3].status, EIO);
    CHECK_EQ(atomic_load(&d->n[2].runs), 1);
    CHECK_EQ(atomic_load(&d->n[3].runs), 0);
    jdag_free(d);
    d = diamond(p, a_fails, -1, order);
    for (int i = 0; i < 4; i++) CHECK_EQ(d->n[i].status, ENXIO);
    CHECK_EQ(atomic_load(&d->n[0].runs), 1);
    jdag_free(d);
    d = diamond(p, none, 2, order); /* C cancelled */
    CHECK_OK(d->n[1].status);
    CHECK_EQ(d->n[2].status, ECANCELED);
    CHECK_EQ(d->n[3].status, ECANCELED);
    CHECK_EQ(atomic_load(&d->n[3].runs), 0);
    jdag_free(d);
  }
}

static void case_diamond_fail(void) { ON_POOLS(diamond_fail, 1, 2, 4); }

/* ---- the first failed predecessor to complete ------------------------------------ */

enum { FF_OTHERS = 100000 };

typedef struct ff_state {
  pool_job_t a, b, c, d;
  pool_job_t *others;
  int c_saw;
} ff_state;

static void ff_nop(void *arg) { (void)arg; }
static void ff_b(void *arg) {
  (void)arg;
  CHECK_OK(pool_fail(EIO));
}
/* C fails only once B's status is there: B completed first. */
static void ff_c(void *arg) {
  ff_state *s = arg;
  double end = job_now() + 30.0 * (double)test_stress_factor();
  for (unsigned spin = 0; pool_job_status(&s->b) == EINPROGRESS; spin++) {
    if (spin % 1024 == 0 && job_now() > end) FAIL("B never completed\n");
  }
  s->c_saw = pool_job_status(&s->b);
  CHECK_OK(pool_fail(EDOM));
}

/* `q`: the pool of B's other successors (another pool: each release goes
 * through its global queue, so B's completion takes its time to reach D). */
static void first_failure_on(pool_t *p, pool_t *q) {
  unsigned long rounds = check_iters(6);
  ff_state *s = calloc(1, sizeof *s);
  CHECK(s);
  s->others = malloc(FF_OTHERS * sizeof(pool_job_t));
  CHECK(s->others);
  for (unsigned long r = 0; r < rounds; r++) {
    /* Half the rounds B has FF_OTHERS more successors, put after it after
     * D: its completion releases them first (they are a stack). */
    size_t nothers = r % 2 ? FF_OTHERS : 0;
    CHECK_OK(pool_job_init(&s->a, p, ff_nop, s));
    CHECK_OK(pool_job_init(&s->b, p, ff_b, s));
    CHECK_OK(pool_job_init(&s->c, p, ff_c, s));
    CHECK_OK(pool_job_init(&s->d, p, ff_nop, s));
    CHECK_OK(pool_job_after(&s->b, &s->a));
    CHECK_OK(pool_job_after(&s->c, &s->a));
    CHECK_OK(pool_job_after(&s->d, &s->b));
    CHECK_OK(pool_job_after(&s->d, &s->c));
    for (size_t i = 0; i < nothers; i++) {
      CHECK_OK(pool_job_init(&s->others[i], q, ff_nop, s));
      CHECK_OK(pool_job_after(&s->others[i], &s->b));
      CHECK_OK(pool_job_start(&s->others[i]));
    }
    s->c_saw = -1;
    CHECK_OK(pool_job_start(&s->d));
    CHECK_OK(pool_job_start(&s->c));
    CHECK_OK(pool_job_start(&s->b));
    CHECK_OK(pool_job_start(&s->a));
    int rd = pool_job_wait(&s->d);
    CHECK_EQ(pool_job_wait(&s->b), EIO);
    CHECK_EQ(pool_job_wait(&s->c), EDOM);
    CHECK_EQ(s->c_saw, EIO);
    for (size_t i = 0; i < nothers; i++) CHECK_EQ(pool_job_wait(&s->others[i]), EIO);
    if (rd != EIO)
      FAIL("D's status is %d (%s), the second failed predecessor's; B (EIO) completed first "
           "(round %lu, B with %zu other successors)\n",
           rd, strerror(rd), r, nothers);
  }
  free(s->others);
  free(s);
}

static void first_failure(pool_t *p) {
  pool_t *q = make_pool(1);
  first_failure_on(p, q);
  CHECK_OK(pool_destroy(q));
}

static void case_first_failure(void) { ON_POOLS(first_failure, 2, 4); }

/* ---- after a complete predecessor ---------------------------------------------- */

static void fail_with(void *arg) { CHECK_OK(pool_fail((int)(intptr_t)arg)); }

static void after_complete(pool_t *p) {
  pool_job_t ok, bad, cancelled, pending, j;
  CHECK_OK(pool_job_submit(p, &ok, count_fn, NULL));
  CHECK_OK(pool_job_submit(p, &bad, fail_with, (void *)(intptr_t)ETIME));
  CHECK_OK(pool_job_init(&cancelled, p, count_fn, NULL));
  CHECK_OK(pool_job_cancel(&cancelled));
  CHECK_OK(pool_job_start(&cancelled));
  CHECK_OK(pool_job_wait(&ok));
  CHECK_EQ(pool_job_wait(&bad), ETIME);
  CHECK_EQ(pool_job_wait(&cancelled), ECANCELED);
  for (int round = 0; round < 50; round++) {
    atomic_store(&runs, 0);
    /* After a complete successful one: runs. */
    CHECK_OK(pool_job_init(&j, p, count_fn, NULL));
    CHECK_OK(pool_job_after(&j, &ok));
    CHECK_OK(pool_job_after(&j, &ok));
    CHECK_OK(pool_job_start(&j));
    CHECK_OK(pool_job_wait(&j));
    CHECK_EQ(atomic_load(&runs), 1);
    /* After a failed one: skipped with its status. */
    CHECK_OK(pool_job_init(&j, p, count_fn, NULL));
    CHECK_OK(pool_job_after(&j, &ok));
    CHECK_OK(pool_job_after(&j, &bad));
    CHECK_OK(pool_job_start(&j));
    CHECK_EQ(pool_job_wait(&j), ETIME);
    CHECK_EQ(atomic_load(&runs), 1);
    /* After a cancelled one: ECANCELED. */
    CHECK_OK(pool_job_init(&j, p, count_fn, NULL));
    CHECK_OK(pool_job_after(&j, &cancelled));
    CHECK_OK(pool_job_start(&j));
    CHECK_EQ(pool_job_wait(&j), ECANCELED);
    CHECK_EQ(atomic_load(&runs), 1);
    /* A failed complete one beside a pending one: waits for the pending
     * one, then is skipped with the failed one's status. */
    CHECK_OK(pool_job_init(&pending, p, count_fn, NULL));
    CHECK_OK(pool_job_init(&j, p, count_fn, NULL));
    CHECK_OK(pool_job_after(&j, &pending));
    CHECK_OK(pool_job_after(&j, &bad));
    CHECK_OK(pool_job_start(&j));
    CHECK_EQ(pool_job_status(&j), EINPROGRESS);
    CHECK_OK(pool_job_start(&pending));
    CHECK_EQ(pool_job_wait(&j), ETIME);
    CHECK_OK(pool_job_wait(&pending));
    CHECK_EQ(atomic_load(&runs), 2);
    /* 40 complete predecessors and one pending (blocks given back, then
     * one more taken). */
    CHECK_OK(pool_job_init(&pending, p, count_fn, NULL));
    CHECK_OK(pool_job_init(&j, p, count_fn, NULL));
    for (int k = 0; k < 40; k++) CHECK_OK(pool_job_after(&j, &ok));
    CHECK_OK(pool_job_after(&j, &pending));
    for (int k = 0; k < 40; k++) CHECK_OK(pool_job_after(&j, &ok));
    CHECK_OK(pool_job_start(&j));
    CHECK_EQ(pool_job_status(&j), EINPROGRESS);
    CHECK_EQ(atomic_load(&runs), 2);
    CHECK_OK(pool_job_start(&pending));
    CHECK_OK(pool_job_wait(&j));
    CHECK_EQ(atomic_load(&runs), 4);
  }
}

static void case_after_complete(void) { ON_POOLS(after_complete, 1, 2); }

TEST_MAIN(300, TEST_CASE(fail), TEST_CASE(unit_of_its_own), TEST_CASE(cancel_before),
          TEST_CASE(cancel_waiting), TEST_CASE(cancel_running), TEST_CASE(cancel_race),
          TEST_CASE(chain_fail), TEST_CASE(diamond_fail), TEST_CASE(first_failure),
          TEST_CASE(after_complete))
