/* SPDX-License-Identifier: MIT */
/* Waiting for jobs (include/wspool.h, pool_job_wait(), pool_job_status()):
 * from outside threads, several at once; from tasks of the job's pool (a
 * job waiting for another job, a group child waiting for a job), which
 * block in a blocking region while a stand-in runs the pool's work; from a
 * task of another pool; and the status through a job's life.
 *
 *  outside_many    6 threads wait for one job (some before it is started,
 *                  some while its predecessor is held back); each gets the
 *                  job's status (0 or its failure), and so does main; the
 *                  job's storage is then initialised again for the next
 *                  round. Pools of 1, 2 and 4.
 *  status_phases   EINPROGRESS before the start, while a predecessor runs,
 *                  while queued behind it and while the job itself runs;
 *                  then its value, the same on every call, also after a
 *                  pool_job_cancel() of the complete job.
 *  job_waits_job   a job submits another and waits for it (on a pool of one
 *                  worker a stand-in must run it); a job waits for a job
 *                  main starts later. Pools of 1, 2 and 4.
 *  wait_chain      40 jobs, job k waiting for job k + 1 from its function,
 *                  started first to last and last to first, many rounds:
 *                  every wait returns (no cycle among the waits, so a
 *                  wait must not make one: it blocks in a blocking region,
 *                  the limit set to the chain's length). Pools of 1, 2, 4.
 *  child_waits_job 24 group children (and main) wait for one job that
 *                  another child releases, and for jobs they submit
 *                  themselves (the stand-in limit set to the children's
 *                  number: every waiting child holds a thread).
 *  other_pool      a task of pool B waits for a job of pool A, and a job of
 *                  A for a job of B.
 *  free_when_complete  jobs on the heap (a chain, fans, edge blocks, two
 *                  pools, a group continuation) freed the moment
 *                  pool_job_status() says complete, never waited for (the
 *                  storage is free then: AddressSanitizer checks it).
 *  storage_reuse   one pool_job_t submitted, waited for and submitted again
 *                  many times, from main and from a task.
 *  pushed_while_waited  outside threads wait for a job (not started, or
 *                  running) while main puts 16 jobs after it, pausing
 *                  between: the edges go on the word that holds the
 *                  waiters' bit, and must keep it. The completer's worker
 *                  is kept busy until every waiter returned (a spinning
 *                  successor), so only the completion's own wake-up can
 *                  wake them (a worker going idle would wake them too).
 *  self_wait       a job waits for itself: from its function, a frame it
 *                  spawned, a group child begun in it, a loop's body in
 *                  it, and a child of a group begun in it that runs after
 *                  its function returned (the job is not complete yet):
 *                  each returns EDEADLK at once, and the job completes 0.
 *  fork_child      fork() while a job runs and its successor waits: in the
 *                  child both are the parent's, and pool_job_wait() and
 *                  pool_job_status() return EOWNERDEAD without waiting,
 *                  before and after the child destroyed the pool and
 *                  created one in its struct (a job complete before the
 *                  fork reports its status); pool_job_after() on such a job
 *                  is EOWNERDEAD; the parent's unstarted job, started in
 *                  the child, completes EOWNERDEAD. The child has its own
 *                  watchdog. Skipped under the sanitizers and qemu-user, as
 *                  test/fault/fork.c.
 *  fork_deep       a chain of 256 nested fork()s (each process forks the
 *                  next and waits for it): the last is 256 generations
 *                  below the one that initialised a job, which the fork
 *                  byte in the job's magic cannot tell (it wraps there);
 *                  pool_job_status() and pool_job_after() still answer
 *                  EOWNERDEAD there and a start completes the job
 *                  EOWNERDEAD, as one generation down. Skipped as
 *                  fork_child.
 * No timing assertions. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include <wspool.h>

#include "check.h"
#include "job_util.h"
#include "testutil.h"

/* ---- outside_many ------------------------------------------------------------ */

enum { OM_THREADS = 6 };

typedef struct om_state {
  pool_job_t job, pred;
  atomic_uint runs, pred_runs;
  int fail;
  atomic_uint ready; /* threads about to wait */
  int got[OM_THREADS];
  jgate gate; /* the predecessor holds until it opens */
} om_state;

static void om_pred(void *arg) {
  om_state *s = arg;
  atomic_fetch_add(&s->pred_runs, 1);
  gate_pass(&s->gate);
}

static void om_job(void *arg) {
  om_state *s = arg;
  CHECK_EQ(atomic_load(&s->pred_runs), 1);
  atomic_fetch_add(&s->runs, 1);
  if (s->fail) CHECK_OK(pool_fail(s->fail));
}

typedef struct om_arg {
  om_state *s;
  int k;
} om_arg;

static void *om_waiter(void *v) {
  om_arg *a = v;
  CHECK_EQ(pool_job_status(&a->s->job), EINPROGRESS); /* the predecessor is held */
  atomic_fetch_add(&a->s->ready, 1);
  a->s->got[a->k] = pool_job_wait(&a->s->job);
  return NULL;
}

static void outside_many(pool_t *p) {
  unsigned long rounds = check_iters(150);
  om_state *s = calloc(1, sizeof *s);
  CHECK(s);
  for (unsigned long r = 0; r < rounds; r++) {
    atomic_store(&s->runs, 0);
    atomic_store(&s->pred_runs, 0);
    atomic_store(&s->ready, 0);
    atomic_store(&s->gate.open, 0);
    atomic_store(&s->gate.waiting, 0);
    s->fail = r % 3 == 1 ? EIO : r % 3 == 2 ? ENOTSUP : 0;
    CHECK_OK(pool_job_init(&s->job, p, om_job, s));
    CHECK_OK(pool_job_init(&s->pred, p, om_pred, s));
    CHECK_OK(pool_job_after(&s->job, &s->pred));
    /* Half the rounds: everything started before the waiters come (the
     * predecessor holds at the gate); else the waiters come first. */
    int early = r % 2;
    if (early) {
      CHECK_OK(pool_job_start(&s->job));
      CHECK_OK(pool_job_start(&s->pred));
    }
    pthread_t th[OM_THREADS];
    om_arg a[OM_THREADS];
    for (int k = 0; k < OM_THREADS; k++) {
      s->got[k] = -1;
      a[k] = (om_arg){s, k};
      CHECK_OK(pthread_create(&th[k], NULL, om_waiter, &a[k]));
    }
    CHECK(job_wait_until(&s->ready, OM_THREADS));
    CHECK_EQ(pool_job_status(&s->job), EINPROGRESS);
    if (!early) {
      CHECK_OK(pool_job_start(&s->pred));
      CHECK_OK(pool_job_start(&s->job));
    }
    gate_open(&s->gate);
    CHECK_EQ(pool_job_wait(&s->job), s->fail);
    for (int k = 0; k < OM_THREADS; k++) {
      CHECK_OK(pthread_join(th[k], NULL));
      CHECK_EQ(s->got[k], s->fail);
    }
    CHECK_EQ(pool_job_status(&s->job), s->fail);
    CHECK_OK(pool_job_status(&s->pred));
    CHECK_EQ(atomic_load(&s->runs), 1);
    CHECK_EQ(atomic_load(&s->pred_runs), 1);
  }
  free(s);
}

static void case_outside_many(void) { ON_POOLS(outside_many, 1, 2, 4); }

/* ---- status_phases ------------------------------------------------------------ */

typedef struct sp_state {
  pool_job_t a, b; /* a -> b */
  jgate ga, gb;
  atomic_uint b_running;
} sp_state;

static void sp_a(void *arg) { gate_pass(&((sp_state *)arg)->ga); }
static void sp_b(void *arg) {
  sp_state *s = arg;
  atomic_store(&s->b_running, 1);
  gate_pass(&s->gb);
  CHECK_OK(pool_fail(EPROTO));
}

static void status_phases(pool_t *p) {
  for (int round = 0; round < 20; round++) {
    sp_state *s = calloc(1, sizeof *s);
    CHECK(s);
    CHECK_OK(pool_job_init(&s->a, p, sp_a, s));
    CHECK_OK(pool_job_init(&s->b, p, sp_b, s));
    CHECK_EQ(pool_job_status(&s->b), EINPROGRESS); /* initialised */
    CHECK_OK(pool_job_after(&s->b, &s->a));
    CHECK_EQ(pool_job_status(&s->b), EINPROGRESS);
    CHECK_OK(pool_job_start(&s->b));
    CHECK_EQ(pool_job_status(&s->b), EINPROGRESS); /* started, waiting for a */
    CHECK_OK(pool_job_start(&s->a));
    CHECK(job_wait_until(&s->ga.waiting, 1));
    CHECK_EQ(pool_job_status(&s->a), EINPROGRESS); /* running */
    CHECK_EQ(pool_job_status(&s->b), EINPROGRESS); /* its predecessor runs */
    gate_open(&s->ga);
    CHECK(job_wait_until(&s->gb.waiting, 1));
    CHECK_OK(pool_job_status(&s->a));
    CHECK_EQ(pool_job_status(&s->b), EINPROGRESS); /* running */
    gate_open(&s->gb);
    CHECK_EQ(pool_job_wait(&s->b), EPROTO);
    for (int k = 0; k < 3; k++) {
      CHECK_EQ(pool_job_status(&s->b), EPROTO);
      CHECK_OK(pool_job_status(&s->a));
    }
    /* No effect on a complete job. */
    CHECK_OK(pool_job_cancel(&s->a));
    CHECK_OK(pool_job_cancel(&s->b));
    CHECK_OK(pool_job_status(&s->a));
    CHECK_OK(pool_job_wait(&s->a));
    CHECK_EQ(pool_job_status(&s->b), EPROTO);
    CHECK_EQ(pool_job_wait(&s->b), EPROTO);
    free(s);
  }
}

static void case_status_phases(void) { ON_POOLS(status_phases, 1, 2, 4); }

/* ---- job_waits_job ------------------------------------------------------------ */

typedef struct jw_state {
  pool_job_t outer, inner, later;
  atomic_uint inner_runs, later_runs, outer_runs;
  atomic_uint outer_started;
  int inner_rc, later_rc;
  int mode; /* 0: waits for a job it submits; 1: for one main starts later */
} jw_state;

static void jw_inner(void *arg) {
  jw_state *s = arg;
  atomic_fetch_add(&s->inner_runs, 1);
  job_busy(2000);
  CHECK_OK(pool_fail(ENOLINK));
}

static void jw_later(void *arg) { atomic_fetch_add(&((jw_state *)arg)->later_runs, 1); }

static void jw_outer(void *arg) {
  jw_state *s = arg;
  atomic_fetch_add(&s->outer_runs, 1);
  if (s->mode == 0) {
    CHECK_OK(pool_job_submit(NULL, &s->inner, jw_inner, s));
    s->inner_rc = pool_job_wait(&s->inner);
  } else {
    atomic_store(&s->outer_started, 1);
    s->later_rc = pool_job_wait(&s->later);
  }
}

enum { JW_CHAIN = 40 };

typedef struct jw_link {
  pool_job_t job;
  struct jw_link *next; /* the job this one waits for, or NULL */
  atomic_uint runs;
  int rc;
} jw_link;

static void jw_link_fn(void *arg) {
  jw_link *l = arg;
  atomic_fetch_add(&l->runs, 1);
  job_busy(20000); /* thieves come meanwhile */
  l->rc = l->next ? pool_job_wait(&l->next->job) : 0;
  if (l->next) CHECK_EQ(atomic_load(&l->next->runs), 1);
}

static void job_waits_job(pool_t *p) {
  unsigned long rounds = check_iters(300);
  jw_state *s = calloc(1, sizeof *s);
  CHECK(s);
  for (unsigned long r = 0; r < rounds; r++) {
    s->mode = (int)(r % 2);
    atomic_store(&s->inner_runs, 0);
    atomic_store(&s->later_runs, 0);
    atomic_store(&s->outer_runs, 0);
    atomic_store(&s->outer_started, 0);
    s->inner_rc = s->later_rc = -1;
    if (s->mode == 1) CHECK_OK(pool_job_init(&s->later, p, jw_later, s));
    CHECK_OK(pool_job_submit(p, &s->outer, jw_outer, s));
    if (s->mode == 1) {
      /* On one worker the outer job occupies it: the later job runs in
       * its wait (from the global queue). */
      CHECK(job_wait_until(&s->outer_started, 1));
      CHECK_OK(pool_job_start(&s->later));
    }
    CHECK_OK(pool_job_wait(&s->outer));
    CHECK_EQ(atomic_load(&s->outer_runs), 1);
    if (s->mode == 0) {
      CHECK_EQ(s->inner_rc, ENOLINK);
      CHECK_EQ(atomic_load(&s->inner_runs), 1);
      CHECK_EQ(pool_job_status(&s->inner), ENOLINK);
    } else {
      CHECK_OK(s->later_rc);
      CHECK_EQ(atomic_load(&s->later_runs), 1);
    }
  }
  free(s);
}

static void case_job_waits_job(void) { ON_POOLS(job_waits_job, 1, 2, 4); }

/* Job k waits (pool_job_wait, from its function) for job k + 1; all are
 * started by main, first to last or last to first. No cycle: job
 * JW_CHAIN - 1 waits for nothing. (A worker that helps while it waits in
 * job k may run another job that waits for one suspended below it on the
 * same stack; a wait that blocks instead holds a thread per waiting job.) */
static void wait_chain(pool_t *p) {
  /* A task's wait blocks in a blocking region (wspool.h, pool_job_wait):
   * waits nest as deep as the workers plus the stand-in limit, so the
   * chain gets a stand-in per link it may need. */
  CHECK_OK(pool_set_standin_limit(p, JW_CHAIN));
  unsigned long rounds = job_rounds(200, 40);
  jw_link *l = calloc(JW_CHAIN, sizeof *l);
  CHECK(l);
  for (unsigned long r = 0; r < rounds; r++) {
    for (int k = 0; k < JW_CHAIN; k++) {
      atomic_store(&l[k].runs, 0);
      l[k].next = k + 1 < JW_CHAIN ? &l[k + 1] : NULL;
      l[k].rc = -1;
      CHECK_OK(pool_job_init(&l[k].job, p, jw_link_fn, &l[k]));
    }
    if (r % 2)
      for (int k = JW_CHAIN; k-- > 0;) CHECK_OK(pool_job_start(&l[k].job));
    else
      for (int k = 0; k < JW_CHAIN; k++) CHECK_OK(pool_job_start(&l[k].job));
    /* A liveness bound (30 s times WSPOOL_STRESS), not a timing figure:
     * the waits form no cycle, so they must all return. */
    double end = job_now() + 30.0 * (double)test_stress_factor();
    while (pool_job_status(&l[0].job) == EINPROGRESS) {
      if (job_now() > end) {
        unsigned done = 0;
        for (int k = 0; k < JW_CHAIN; k++) done += pool_job_status(&l[k].job) != EINPROGRESS;
        FAIL("round %lu (started %s), %u workers: the chain of waits is stuck with %u of %d "
             "jobs complete, though no wait is part of a cycle\n",
             r, r % 2 ? "last to first" : "first to last", pool_threads(p), done, JW_CHAIN);
      }
      sleep_ms(1);
    }
    for (int k = 0; k < JW_CHAIN; k++) {
      CHECK_OK(pool_job_wait(&l[k].job));
      CHECK_EQ(atomic_load(&l[k].runs), 1);
      CHECK_OK(l[k].rc);
    }
  }
  free(l);
}

static void case_wait_chain(void) { ON_POOLS(wait_chain, 1, 2, 4); }

/* ---- child_waits_job ------------------------------------------------------------ */

enum { CW_CHILDREN = 24 };

typedef struct cw_state {
  pool_job_t shared, held; /* held -> shared; the releaser child starts held */
  atomic_uint shared_runs, own_runs;
  int rc[CW_CHILDREN], own_rc[CW_CHILDREN];
  pool_job_t own[CW_CHILDREN];
} cw_state;

static cw_state *cws;

static void cw_held(void *arg) { (void)arg; }
static void cw_shared(void *arg) {
  (void)arg;
  atomic_fetch_add(&cws->shared_runs, 1);
  job_busy(3000);
  CHECK_OK(pool_fail(EXDEV));
}
static void cw_own(void *arg) {
  (void)arg;
  atomic_fetch_add(&cws->own_runs, 1);
}

static atomic_uint cw_waiting; /* children inside their wait for `shared` */

static void cw_child(void *arg) {
  size_t i = (size_t)(uintptr_t)arg;
  if (i == CW_CHILDREN / 2) CHECK_OK(pool_job_start(&cws->held)); /* the releaser */
  CHECK_OK(pool_job_submit(NULL, &cws->own[i], cw_own, NULL));
  atomic_fetch_add(&cw_waiting, 1);
  cws->rc[i] = pool_job_wait(&cws->shared);
  atomic_fetch_sub(&cw_waiting, 1);
  cws->own_rc[i] = pool_job_wait(&cws->own[i]);
}

typedef struct cw_run {
  pool_t *pool;
  int from_task;
} cw_run;

static void cw_group(void *arg) {
  cw_run *run = arg;
  pool_group_t g;
  CHECK_OK(pool_group_init(&g, run->from_task ? NULL : run->pool));
  for (size_t i = 0; i < CW_CHILDREN; i++)
    CHECK_OK(pool_group_spawn(&g, cw_child, (void *)(uintptr_t)i));
  CHECK_OK(pool_group_wait(&g));
}

typedef struct cw_round {
  cw_run run;
  atomic_uint done;
} cw_round;

/* A round, on a thread of its own: from main's point of view, a group
 * waited for from outside, or from a task. */
static void *cw_round_thread(void *arg) {
  cw_round *cr = arg;
  if (cr->run.from_task) {
    pool_job_t t;
    CHECK_OK(pool_job_submit(cr->run.pool, &t, cw_group, &cr->run));
    CHECK_OK(pool_job_wait(&t));
  } else {
    cw_group(&cr->run);
  }
  atomic_store(&cr->done, 1);
  return NULL;
}

static void child_waits_job(pool_t *p) {
  /* Each waiting child holds its thread (wspool.h, pool_job_wait): up to
   * all of them at once, before the releaser runs. */
  CHECK_OK(pool_set_standin_limit(p, CW_CHILDREN));
  unsigned long rounds = check_iters(100);
  cws = calloc(1, sizeof *cws);
  CHECK(cws);
  for (unsigned long r = 0; r < rounds; r++) {
    atomic_store(&cws->shared_runs, 0);
    atomic_store(&cws->own_runs, 0);
    CHECK_OK(pool_job_init(&cws->held, p, cw_held, NULL));
    CHECK_OK(pool_job_init(&cws->shared, p, cw_shared, NULL));
    CHECK_OK(pool_job_after(&cws->shared, &cws->held));
    CHECK_OK(pool_job_start(&cws->shared));
    cw_round cr = {{p, (int)(r % 2)}, 0};
    pthread_t th;
    CHECK_OK(pthread_create(&th, NULL, cw_round_thread, &cr));
    /* A liveness bound (30 s times WSPOOL_STRESS), not a timing figure. */
    if (!job_wait_until(&cr.done, 1))
      FAIL("round %lu (group waited for %s), %u workers: stuck, %u children waiting for the "
           "job that another child (not run yet) releases\n",
           r, cr.run.from_task ? "from a task" : "from outside", pool_threads(p),
           atomic_load(&cw_waiting));
    CHECK_OK(pthread_join(th, NULL));
    CHECK_EQ(pool_job_wait(&cws->shared), EXDEV);
    CHECK_EQ(atomic_load(&cws->shared_runs), 1);
    CHECK_EQ(atomic_load(&cws->own_runs), CW_CHILDREN);
    for (size_t i = 0; i < CW_CHILDREN; i++) {
      CHECK_EQ(cws->rc[i], EXDEV);
      CHECK_OK(cws->own_rc[i]);
    }
  }
  free(cws);
}

static void case_child_waits_job(void) { ON_POOLS(child_waits_job, 1, 2, 4); }

/* ---- other_pool ------------------------------------------------------------------ */

typedef struct op_state {
  pool_t *a, *b;
  pool_job_t ja, jb;
  atomic_uint ra, rb;
  int rc_task, rc_job;
} op_state;

static void op_a(void *arg) {
  op_state *s = arg;
  job_busy(5000);
  atomic_fetch_add(&s->ra, 1);
}
static void op_b(void *arg) {
  op_state *s = arg;
  atomic_fetch_add(&s->rb, 1);
  CHECK_OK(pool_fail(EMLINK));
}
/* A task of b: waits for ja (pool a), then starts jb and waits for it. */
static void op_task(void *arg) {
  op_state *s = arg;
  CHECK(pool_current() == s->b);
  s->rc_task = pool_job_wait(&s->ja);
  CHECK_OK(pool_job_start(&s->jb));
  s->rc_job = pool_job_wait(&s->jb);
}

static void case_other_pool(void) {
  unsigned long rounds = check_iters(300);
  op_state s = {make_pool(1), make_pool(2), {{0}}, {{0}}, 0, 0, 0, 0};
  for (unsigned long r = 0; r < rounds; r++) {
    atomic_store(&s.ra, 0);
    atomic_store(&s.rb, 0);
    s.rc_task = s.rc_job = -1;
    CHECK_OK(pool_job_init(&s.jb, s.a, op_b, &s));
    CHECK_OK(pool_job_submit(s.a, &s.ja, op_a, &s));
    pool_job_t t;
    CHECK_OK(pool_job_submit(s.b, &t, op_task, &s));
    CHECK_OK(pool_job_wait(&t));
    CHECK_OK(s.rc_task);
    CHECK_EQ(s.rc_job, EMLINK);
    CHECK_EQ(atomic_load(&s.ra), 1);
    CHECK_EQ(atomic_load(&s.rb), 1);
  }
  CHECK_OK(pool_destroy(s.a));
  CHECK_OK(pool_destroy(s.b));
}

/* ---- free_when_complete ------------------------------------------------------------ */

/* Jobs on the heap, one allocation each, freed by main the moment
 * pool_job_status() says complete (the header's promise: the storage is
 * free then), in whatever order they complete: a chain, a fan-out and a
 * fan-in (edge blocks) over two pools, and a group continuation. Under
 * AddressSanitizer, a touch of a job after that is a use after free. */
enum { FW_N = 48 };

static atomic_uint fw_runs;
static void fw_fn(void *arg) {
  (void)arg;
  job_busy(200);
  atomic_fetch_add(&fw_runs, 1);
}

static void free_when_complete(pool_t *p) {
  pool_t *q = make_pool(1);
  unsigned long rounds = job_rounds(100, 30);
  for (unsigned long r = 0; r < rounds; r++) {
    pool_job_t *j[FW_N + 1];
    atomic_store(&fw_runs, 0);
    for (int k = 0; k <= FW_N; k++) {
      j[k] = malloc(sizeof(pool_job_t));
      CHECK(j[k]);
      CHECK_OK(pool_job_init(j[k], k % 3 ? p : q, fw_fn, NULL));
    }
    /* 0 -> 1 -> ... -> 15; 15 -> 16..31; 16..31 and 32..47 -> 48; and
     * job 32 after a group of the pool. */
    for (int k = 1; k < 16; k++) CHECK_OK(pool_job_after(j[k], j[k - 1]));
    for (int k = 16; k < 32; k++) CHECK_OK(pool_job_after(j[k], j[15]));
    for (int k = 16; k < FW_N; k++) CHECK_OK(pool_job_after(j[FW_N], j[k]));
    pool_group_t g;
    CHECK_OK(pool_group_init(&g, p));
    for (int c = 0; c < 4; c++) CHECK_OK(pool_group_spawn(&g, fw_fn, NULL));
    CHECK_OK(pool_job_after_group(j[32], &g));
    for (int k = FW_N; k >= 0; k--) CHECK_OK(pool_job_start(j[k]));
    int left = FW_N + 1;
    double end = job_now() + 30.0 * (double)test_stress_factor();
    while (left) {
      sched_yield(); /* the pools' threads need the cores more */
      for (int k = 0; k <= FW_N; k++) {
        if (!j[k]) continue;
        int st = pool_job_status(j[k]);
        if (st == EINPROGRESS) continue;
        CHECK_OK(st);
        free(j[k]);
        j[k] = NULL;
        left--;
      }
      if (left && job_now() > end) FAIL("round %lu: %d jobs never completed\n", r, left);
    }
    CHECK_EQ(atomic_load(&fw_runs), FW_N + 1 + 4);
    CHECK_OK(pool_group_wait(&g)); /* the round ended: nothing pending */
  }
  CHECK_OK(pool_destroy(q));
}

static void case_free_when_complete(void) { ON_POOLS(free_when_complete, 1, 2, 4); }

/* ---- storage_reuse ---------------------------------------------------------------- */

static atomic_ulong reuse_sum;
static void reuse_fn(void *arg) { atomic_fetch_add(&reuse_sum, (unsigned long)(uintptr_t)arg); }

static void reuse_loop(void *arg) {
  unsigned long n = (unsigned long)(uintptr_t)arg;
  pool_job_t j;
  for (unsigned long i = 1; i <= n; i++) {
    CHECK_OK(pool_job_submit(NULL, &j, reuse_fn, (void *)(uintptr_t)i));
    CHECK_OK(pool_job_wait(&j));
  }
}

static void storage_reuse(pool_t *p) {
  unsigned long n = check_iters(5000);
  atomic_store(&reuse_sum, 0);
  pool_job_t j;
  for (unsigned long i = 1; i <= n; i++) {
    CHECK_OK(pool_job_submit(p, &j, reuse_fn, (void *)(uintptr_t)i));
    if (i % 2) {
      CHECK_OK(pool_job_wait(&j));
    } else {
      while (pool_job_status(&j) == EINPROGRESS) sched_yield();
      CHECK_OK(pool_job_status(&j));
    }
  }
  CHECK_EQ(atomic_load(&reuse_sum), n * (n + 1) / 2);
  atomic_store(&reuse_sum, 0);
  CHECK_OK(pool_job_submit(p, &j, reuse_loop, (void *)(uintptr_t)n));
  CHECK_OK(pool_job_wait(&j));
  CHECK_EQ(atomic_load(&reuse_sum), n * (n + 1) / 2);
}

static void case_storage_reuse(void) { ON_POOLS(storage_reuse, 1, 2, 4); }

/* ---- pushed_while_waited ---------------------------------------------------------- */

enum { PW_THREADS = 4, PW_SUCCS = 16 };

typedef struct pw_state {
  pool_job_t job, spin, succ[PW_SUCCS];
  jgate gate; /* the job holds here, in the rounds that start it first */
  atomic_uint ready, done, job_runs, succ_runs, spin_timeouts;
  int got[PW_THREADS];
} pw_state;

static void pw_job(void *arg) {
  pw_state *s = arg;
  gate_pass(&s->gate);
  atomic_fetch_add(&s->job_runs, 1);
}

/* After the job, on its completer's worker (the successor it runs next):
 * busy until every waiter returned, or 10 s (a lost wake-up). */
static void pw_spin(void *arg) {
  pw_state *s = arg;
  double end = job_now() + 10.0 * (double)test_stress_factor();
  while (atomic_load(&s->done) < PW_THREADS) {
    if (job_now() > end) {
      atomic_fetch_add(&s->spin_timeouts, 1);
      return;
    }
  }
}

static void pw_succ(void *arg) {
  pw_state *s = arg;
  CHECK_EQ(atomic_load(&s->job_runs), 1);
  atomic_fetch_add(&s->succ_runs, 1);
}

typedef struct pw_arg {
  pw_state *s;
  int k;
} pw_arg;

static void *pw_waiter(void *v) {
  pw_arg *a = v;
  atomic_fetch_add(&a->s->ready, 1);
  a->s->got[a->k] = pool_job_wait(&a->s->job);
  atomic_fetch_add(&a->s->done, 1);
  return NULL;
}

static void pushed_while_waited(pool_t *p) {
  unsigned long rounds = check_iters(12);
  pw_state *s = calloc(1, sizeof *s);
  CHECK(s);
  for (unsigned long r = 0; r < rounds; r++) {
    atomic_store(&s->ready, 0);
    atomic_store(&s->done, 0);
    atomic_store(&s->job_runs, 0);
    atomic_store(&s->succ_runs, 0);
    atomic_store(&s->gate.open, 0);
    atomic_store(&s->gate.waiting, 0);
    CHECK_OK(pool_job_init(&s->job, p, pw_job, s));
    CHECK_OK(pool_job_init(&s->spin, p, pw_spin, s));
    CHECK_OK(pool_job_after(&s->spin, &s->job));
    CHECK_OK(pool_job_start(&s->spin));
    int early = r % 2; /* running (held at the gate) while waited for */
    if (early) {
      CHECK_OK(pool_job_start(&s->job));
      CHECK(job_wait_until(&s->gate.waiting, 1));
    }
    pthread_t th[PW_THREADS];
    pw_arg a[PW_THREADS];
    for (int k = 0; k < PW_THREADS; k++) {
      s->got[k] = -1;
      a[k] = (pw_arg){s, k};
      CHECK_OK(pthread_create(&th[k], NULL, pw_waiter, &a[k]));
    }
    CHECK(job_wait_until(&s->ready, PW_THREADS));
    /* Not started: released by the completion, run after the waits. */
    for (int i = 0; i < PW_SUCCS; i++) {
      sleep_ms(1); /* the waiters block meanwhile, their bit set */
      CHECK_OK(pool_job_init(&s->succ[i], p, pw_succ, s));
      CHECK_OK(pool_job_after(&s->succ[i], &s->job));
    }
    CHECK_EQ(pool_job_status(&s->job), EINPROGRESS);
    if (!early) CHECK_OK(pool_job_start(&s->job));
    gate_open(&s->gate);
    CHECK_OK(pool_job_wait(&s->spin));
    CHECK_EQ(atomic_load(&s->spin_timeouts), 0); /* every waiter woke */
    for (int k = 0; k < PW_THREADS; k++) {
      CHECK_OK(pthread_join(th[k], NULL));
      CHECK_OK(s->got[k]);
    }
    CHECK_EQ(atomic_load(&s->succ_runs), 0);
    for (int i = 0; i < PW_SUCCS; i++) CHECK_OK(pool_job_start(&s->succ[i]));
    for (int i = 0; i < PW_SUCCS; i++) CHECK_OK(pool_job_wait(&s->succ[i]));
    CHECK_EQ(atomic_load(&s->succ_runs), PW_SUCCS);
    CHECK_EQ(atomic_load(&s->job_runs), 1);
  }
  free(s);
}

static void case_pushed_while_waited(void) { ON_POOLS(pushed_while_waited, 1, 2, 4); }

/* ---- self_wait -------------------------------------------------------------------- */

typedef struct sw_state {
  pool_job_t job, cont;
  pool_group_t g, late;
  atomic_int rc_fn, rc_frame, rc_child, rc_late;
  atomic_uint loop_calls, loop_other; /* body calls; waits that did not say EDEADLK */
  atomic_uint fn_done;
} sw_state;

static void sw_frame(void *arg) {
  sw_state *s = arg;
  atomic_store(&s->rc_frame, pool_job_wait(&s->job));
}
static void sw_child(void *arg) {
  sw_state *s = arg;
  atomic_store(&s->rc_child, pool_job_wait(&s->job));
}
static void sw_body(size_t b, size_t e, void *ctx) {
  sw_state *s = ctx;
  for (size_t i = b; i < e; i++) {
    atomic_fetch_add(&s->loop_calls, 1);
    if (pool_job_wait(&s->job) != EDEADLK) atomic_fetch_add(&s->loop_other, 1);
  }
}
/* A child of a group begun in the job, given a continuation: it waits
 * until the job's function returned (the job still not complete). */
static void sw_late(void *arg) {
  sw_state *s = arg;
  CHECK(job_wait_until(&s->fn_done, 1));
  atomic_store(&s->rc_late, pool_job_wait(&s->job));
}
static void sw_cont(void *arg) { (void)arg; }

static void sw_fn(void *arg) {
  sw_state *s = arg;
  atomic_store(&s->rc_fn, pool_job_wait(&s->job));
  pool_task_t f;
  CHECK_OK(pool_spawn(NULL, &f, sw_frame, s));
  CHECK_OK(pool_sync(&f));
  CHECK_OK(pool_group_init(&s->g, NULL));
  CHECK_OK(pool_group_spawn(&s->g, sw_child, s));
  CHECK_OK(pool_group_wait(&s->g));
  CHECK_OK(pool_parallel_for(NULL, 0, 8, 1, sw_body, s));
  CHECK_OK(pool_group_init(&s->late, NULL));
  CHECK_OK(pool_group_spawn(&s->late, sw_late, s));
  CHECK_OK(pool_job_init(&s->cont, NULL, sw_cont, s));
  CHECK_OK(pool_job_after_group(&s->cont, &s->late));
  CHECK_OK(pool_job_start(&s->cont));
  atomic_store(&s->fn_done, 1);
}

static void self_wait(pool_t *p) {
  sw_state *s = calloc(1, sizeof *s);
  CHECK(s);
  atomic_store(&s->rc_fn, -1);
  atomic_store(&s->rc_frame, -1);
  atomic_store(&s->rc_child, -1);
  atomic_store(&s->rc_late, -1);
  CHECK_OK(pool_job_submit(p, &s->job, sw_fn, s));
  /* Bounded: a wait that blocks for itself never lets the function end. */
  if (!job_wait_until(&s->fn_done, 1))
    FAIL("the job's function did not return: a wait for its own job blocked (%d)\n",
         atomic_load(&s->rc_fn));
  CHECK_OK(pool_job_wait(&s->job));
  CHECK_OK(pool_job_wait(&s->cont));
  CHECK_EQ(atomic_load(&s->rc_fn), EDEADLK);
  CHECK_EQ(atomic_load(&s->rc_frame), EDEADLK);
  CHECK_EQ(atomic_load(&s->rc_child), EDEADLK);
  CHECK_EQ(atomic_load(&s->rc_late), EDEADLK);
  CHECK_EQ(atomic_load(&s->loop_calls), 8);
  CHECK_EQ(atomic_load(&s->loop_other), 0);
  free(s);
}

static void case_self_wait(void) { ON_POOLS(self_wait, 1, 2); }

/* ---- fork_child ------------------------------------------------------------------- */

static void fk_hold(void *arg) { gate_pass((jgate *)arg); }
static void fk_nop(void *arg) { (void)arg; }

/* In the child: the parent's open jobs report EOWNERDEAD, its complete
 * one its status. */
static void fk_check(pool_job_t *run, pool_job_t *queued, pool_job_t *done) {
  CHECK_EQ(pool_job_wait(run), EOWNERDEAD);
  CHECK_EQ(pool_job_wait(queued), EOWNERDEAD);
  CHECK_EQ(pool_job_status(run), EOWNERDEAD);
  CHECK_EQ(pool_job_status(queued), EOWNERDEAD);
  CHECK_EQ(pool_job_cancel(run), EOWNERDEAD);
  CHECK_EQ(pool_job_cancel(queued), EOWNERDEAD);
  CHECK_OK(pool_job_cancel(done));
  CHECK_OK(pool_job_wait(done));
  CHECK_OK(pool_job_status(done));
}

static void case_fork_child(void) {
  if (getenv("WSPOOL_TEST_EMULATED")) TEST_SKIP("fork() of a threaded process under qemu-user");
  if (TEST_UNDER_ASAN || TEST_UNDER_TSAN)
    TEST_SKIP("a threaded fork under ThreadSanitizer or AddressSanitizer (see test/fault/fork.c)");
  static jgate gate;
  pool_t *p = make_pool(1);
  pool_job_t run, queued, done, unstarted;
  CHECK_OK(pool_job_submit(p, &done, fk_nop, NULL));
  CHECK_OK(pool_job_wait(&done));
  CHECK_OK(pool_job_init(&run, p, fk_hold, &gate));
  CHECK_OK(pool_job_init(&queued, p, fk_nop, NULL));
  CHECK_OK(pool_job_after(&queued, &run));
  CHECK_OK(pool_job_start(&queued));
  CHECK_OK(pool_job_start(&run));
  CHECK_OK(pool_job_init(&unstarted, p, fk_nop, NULL));
  CHECK(job_wait_until(&gate.waiting, 1)); /* `run` is running */
  fflush(NULL);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    check_watchdog(60); /* a wait that blocks ends the child */
    fk_check(&run, &queued, &done);
    CHECK_OK(pool_destroy(p));
    fk_check(&run, &queued, &done);
    /* Takes p's struct (destroyed structs are reused last in, first out):
     * the gate and the generation are a live pool's again. */
    pool_t *c = make_pool(1);
    fk_check(&run, &queued, &done);
    pool_job_t mine;
    CHECK_OK(pool_job_init(&mine, c, fk_nop, NULL));
    CHECK_EQ(pool_job_after(&mine, &queued), EOWNERDEAD);
    CHECK_OK(pool_job_after(&mine, &done)); /* complete: satisfied at once */
    CHECK_OK(pool_job_start(&mine));
    CHECK_OK(pool_job_wait(&mine));
    CHECK_OK(pool_job_start(&unstarted));
    CHECK_EQ(pool_job_wait(&unstarted), EOWNERDEAD);
    CHECK_OK(pool_destroy(c));
    fflush(NULL);
    _exit(0);
  }
  gate_open(&gate);
  child_ok(pid, "the child");
  CHECK_OK(pool_job_wait(&queued));
  CHECK_OK(pool_job_wait(&run));
  CHECK_OK(pool_job_start(&unstarted));
  CHECK_OK(pool_job_wait(&unstarted));
  CHECK_OK(pool_destroy(p));
}

/* ---- fork_deep ------------------------------------------------------------------- */

enum { FD_DEPTH = 256 };

/* In a descendant of the process that initialised both jobs (open: one
 * running there, one not started). */
static void fd_check(pool_job_t *started, pool_job_t *unstarted) {
  CHECK_EQ(pool_job_status(started), EOWNERDEAD);
  CHECK_EQ(pool_job_status(unstarted), EOWNERDEAD);
  CHECK_EQ(pool_job_wait(started), EOWNERDEAD);
  pool_job_t mine;
  CHECK_OK(pool_job_init(&mine, NULL, fk_nop, NULL));
  CHECK_EQ(pool_job_after(&mine, started), EOWNERDEAD);
  CHECK_EQ(pool_job_after(&mine, unstarted), EOWNERDEAD);
  CHECK_OK(pool_job_start(&mine));
  CHECK_OK(pool_job_wait(&mine));
}

static void case_fork_deep(void) {
  if (getenv("WSPOOL_TEST_EMULATED")) TEST_SKIP("fork() of a threaded process under qemu-user");
  if (TEST_UNDER_ASAN || TEST_UNDER_TSAN)
    TEST_SKIP("a threaded fork under ThreadSanitizer or AddressSanitizer (see test/fault/fork.c)");
  static jgate gate;
  pool_t *p = make_pool(1);
  pool_job_t started, unstarted;
  CHECK_OK(pool_job_init(&started, p, fk_hold, &gate));
  CHECK_OK(pool_job_start(&started));
  CHECK_OK(pool_job_init(&unstarted, p, fk_nop, NULL));
  CHECK(job_wait_until(&gate.waiting, 1)); /* `started` is running */
  fflush(NULL);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    for (int depth = 1;; depth++) {
      check_watchdog(60); /* alarms are not inherited */
      if (depth == 1 || depth == FD_DEPTH) fd_check(&started, &unstarted);
      if (depth == FD_DEPTH) {
        CHECK_OK(pool_job_start(&unstarted));
        CHECK_EQ(pool_job_wait(&unstarted), EOWNERDEAD);
        break;
      }
      fflush(NULL);
      pid_t next = fork();
      CHECK(next >= 0);
      if (next != 0) {
        /* Passes the outcome up, quietly: the test's own process reports it. */
        int st;
        CHECK_EQ(waitpid(next, &st, 0), next);
        _exit(WIFEXITED(st) ? WEXITSTATUS(st) : 1);
      }
    }
    fflush(NULL);
    _exit(0);
  }
  gate_open(&gate);
  child_ok(pid, "a descendant");
  CHECK_OK(pool_job_wait(&started));
  CHECK_OK(pool_job_start(&unstarted));
  CHECK_OK(pool_job_wait(&unstarted));
  CHECK_OK(pool_destroy(p));
}

TEST_MAIN(300, TEST_CASE(outside_many), TEST_CASE(status_phases), TEST_CASE(job_waits_job),
          TEST_CASE(wait_chain), TEST_CASE(child_waits_job), TEST_CASE(other_pool),
          TEST_CASE(free_when_complete), TEST_CASE(storage_reuse),
          TEST_CASE(pushed_while_waited), TEST_CASE(self_wait), TEST_CASE(fork_child),
          TEST_CASE(fork_deep))
