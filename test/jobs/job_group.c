/* SPDX-License-Identifier: MIT */
/* Group continuations (include/wspool.h, pool_job_after_group()): a job
 * released once every child of a group has finished, with the group's
 * result, which nobody waits for. Children record the logical clock
 * (job_util.h) when they end, the continuation when it starts.
 *
 *  pending          children held at a gate when the continuation is put
 *                   after the group: it starts after every child ended,
 *                   status 0; from main and from a task; pools of 1, 2, 4.
 *  none_pending     a group with no child pending (new, or every child
 *                   waited for) releases the job at once; a cancelled empty
 *                   group releases it with ECANCELED.
 *  failing_child    a child's pool_fail(): the job is skipped with that
 *                   code, and so is a job after it; pool_group_cancel():
 *                   ECANCELED; a group nested in cancelled work: ECANCELED;
 *                   the next round of the group starts clean.
 *  spawn_tree       children spawn more children into the group while the
 *                   continuation waits: it starts after the last of them.
 *  racing_spawns    outside threads keep spawning into the group while the
 *                   continuation is put after it and the children finish:
 *                   every child runs once, the job once, after every child
 *                   of its round, and the group is usable afterwards.
 *  spawn_at_zero    a spawn racing with the fall of the count to zero (a
 *                   thread spawns the moment the last child of the round
 *                   returns), many rounds: the job runs once, never before
 *                   its start, and the group waits 0 afterwards (not
 *                   EBUSY): the continuation is released once.
 *  ebusy            a second continuation: EBUSY, and that job is not held
 *                   (it runs at once when started); pool_group_wait while a
 *                   continuation is pending: EBUSY, from main and a task.
 *  concurrent_register  two threads put a job after one group at once:
 *                   one gets 0, the other EBUSY; the winner runs after the
 *                   children, the loser (started) at once, each once.
 *  reuse            the continuation itself spawns the next round into the
 *                   same group and puts the next continuation after it;
 *                   the group initialised again after a continuation ran.
 *  cross_pool       the group on one pool, the job on another, both ways;
 *                   a job after a group and after another job.
 *  in_job           a job's function begins a group (on its own pool or
 *                   another), spawns into it, puts a continuation after it
 *                   and returns: the job completes only after the group's
 *                   last child ended (each child finds it EINPROGRESS; on
 *                   a pool of one worker every child runs after the
 *                   function returned), so once its wait returned every
 *                   child ran, a pool_job_cancel() of it reaches nothing
 *                   (the continuation's status is 0) and its storage is
 *                   freed (AddressSanitizer: the children's units were
 *                   nested in the job's).
 *  fork_child       fork() while one group of the parent has a child
 *                   running and another has none pending: in the child
 *                   every call on either but pool_group_init() (wait,
 *                   cancel, spawn, pool_job_after_group()) returns
 *                   EOWNERDEAD without waiting, before and after the child
 *                   destroyed the group's pool and created one in its
 *                   struct (the group's pool pointer then names a pool of
 *                   the child's); the job refused stays free of the group
 *                   and runs; the idle group initialised again on the new
 *                   pool works. The child has its own watchdog. Skipped
 *                   under the sanitizers and qemu-user, as
 *                   test/fault/fork.c.
 * No timing assertions. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <wspool.h>

#include "check.h"
#include "job_util.h"
#include "testutil.h"

/* A continuation that records when it started and how often it ran. */
typedef struct cont {
  pool_job_t job;
  atomic_ulong t_start;
  atomic_uint runs;
} cont;

static void cont_fn(void *arg) {
  cont *c = arg;
  atomic_store(&c->t_start, job_tick());
  atomic_fetch_add(&c->runs, 1);
}

static void cont_init(cont *c, pool_t *p) {
  atomic_store(&c->t_start, 0);
  atomic_store(&c->runs, 0);
  CHECK_OK(pool_job_init(&c->job, p, cont_fn, c));
}

/* Children: each records its end; the latest end is kept. */
static atomic_ulong last_end;
static atomic_uint children_ran;
static jgate *child_gate; /* NULL: no gate */

static void child_fn(void *arg) {
  (void)arg;
  if (child_gate) gate_pass(child_gate);
  job_busy(200);
  atomic_fetch_add(&children_ran, 1);
  unsigned long t = job_tick(), cur = atomic_load(&last_end);
  while (t > cur && !atomic_compare_exchange_weak(&last_end, &cur, t)) {
  }
}

static void reset_children(void) {
  atomic_store(&last_end, 0);
  atomic_store(&children_ran, 0);
}

/* The continuation ran once, after every child that ended. */
static void check_after_children(cont *c, unsigned nchildren) {
  CHECK_EQ(atomic_load(&c->runs), 1);
  CHECK_EQ(atomic_load(&children_ran), nchildren);
  unsigned long s = atomic_load(&c->t_start), e = atomic_load(&last_end);
  if (nchildren && !(e < s)) FAIL("the continuation started at %lu, a child ended at %lu\n", s, e);
}

/* ---- pending -------------------------------------------------------------- */

enum { PD_CHILDREN = 50 };

typedef struct pd_run {
  pool_t *pool;
  int from_task;
  unsigned long r;
} pd_run;

static void pd_body(void *arg) {
  pd_run *run = arg;
  pool_t *p = run->from_task ? NULL : run->pool;
  jgate gate = {0, 0};
  child_gate = &gate;
  reset_children();
  pool_group_t g;
  CHECK_OK(pool_group_init(&g, p));
  cont c;
  cont_init(&c, p);
  for (int k = 0; k < PD_CHILDREN; k++) CHECK_OK(pool_group_spawn(&g, child_fn, NULL));
  CHECK_OK(pool_job_after_group(&c.job, &g));
  CHECK_OK(pool_job_start(&c.job));
  CHECK_EQ(pool_job_status(&c.job), EINPROGRESS);               /* children held at the gate */
  if (!run->from_task) CHECK(job_wait_until(&gate.waiting, 1)); /* a child holds */
  CHECK_EQ(pool_job_status(&c.job), EINPROGRESS);
  gate_open(&gate);
  CHECK_OK(pool_job_wait(&c.job));
  check_after_children(&c, PD_CHILDREN);
  /* The round ended: the group may be waited for (nothing pending). */
  CHECK_OK(pool_group_wait(&g));
  child_gate = NULL;
}

static void pending(pool_t *p) {
  unsigned long rounds = check_iters(100);
  for (unsigned long r = 0; r < rounds; r++) {
    pd_run run = {p, (int)(r % 2), r};
    if (run.from_task) {
      pool_job_t t;
      CHECK_OK(pool_job_submit(p, &t, pd_body, &run));
      CHECK_OK(pool_job_wait(&t));
    } else {
      pd_body(&run);
    }
  }
}

static void case_pending(void) { ON_POOLS(pending, 1, 2, 4); }

/* ---- none_pending ----------------------------------------------------------- */

static void none_pending(pool_t *p) {
  for (int r = 0; r < 50; r++) {
    reset_children();
    pool_group_t g;
    CHECK_OK(pool_group_init(&g, p));
    cont c;
    cont_init(&c, p);
    CHECK_OK(pool_job_after_group(&c.job, &g)); /* released at once */
    CHECK_OK(pool_job_start(&c.job));
    CHECK_OK(pool_job_wait(&c.job));
    check_after_children(&c, 0);
    /* Every child waited for: nothing pending again. */
    for (int k = 0; k < 10; k++) CHECK_OK(pool_group_spawn(&g, child_fn, NULL));
    CHECK_OK(pool_group_wait(&g));
    cont_init(&c, p);
    CHECK_OK(pool_job_after_group(&c.job, &g));
    CHECK_OK(pool_job_start(&c.job));
    CHECK_OK(pool_job_wait(&c.job));
    check_after_children(&c, 10);
    /* Released at once, but held by its start: not run before it. */
    cont_init(&c, p);
    CHECK_OK(pool_job_after_group(&c.job, &g));
    CHECK_EQ(pool_job_status(&c.job), EINPROGRESS);
    CHECK_EQ(atomic_load(&c.runs), 0);
    CHECK_OK(pool_job_start(&c.job));
    CHECK_OK(pool_job_wait(&c.job));
    /* A cancelled group with no children: the wait would say ECANCELED. */
    CHECK_OK(pool_group_cancel(&g));
    cont_init(&c, p);
    CHECK_OK(pool_job_after_group(&c.job, &g));
    CHECK_OK(pool_job_start(&c.job));
    CHECK_EQ(pool_job_wait(&c.job), ECANCELED);
    CHECK_EQ(atomic_load(&c.runs), 0);
    /* And that ended the group's round: the next one is clean. */
    CHECK_OK(pool_group_spawn(&g, child_fn, NULL));
    CHECK_OK(pool_group_wait(&g));
  }
}

static void case_none_pending(void) { ON_POOLS(none_pending, 1, 2); }

/* ---- failing_child ------------------------------------------------------------ */

static void failing(void *arg) { pool_fail((int)(intptr_t)arg); }

typedef struct nested_state {
  pool_t *pool;
  pool_group_t outer, inner;
  cont c;
  int status;
} nested_state;

/* A child of `outer`, which it cancels; `inner` is nested in it. */
static void nested_child(void *arg) {
  nested_state *s = arg;
  CHECK_OK(pool_group_init(&s->inner, NULL));
  CHECK_OK(pool_group_cancel(&s->outer));
  for (int k = 0; k < 5; k++) CHECK_OK(pool_group_spawn(&s->inner, child_fn, NULL));
  cont_init(&s->c, NULL);
  CHECK_OK(pool_job_after_group(&s->c.job, &s->inner));
  CHECK_OK(pool_job_start(&s->c.job));
  s->status = pool_job_wait(&s->c.job);
}

static void failing_child(pool_t *p) {
  for (int r = 0; r < 100; r++) {
    reset_children();
    pool_group_t g;
    CHECK_OK(pool_group_init(&g, p));
    cont c, after;
    cont_init(&c, p);
    cont_init(&after, p);
    CHECK_OK(pool_job_after(&after.job, &c.job));
    for (int k = 0; k < 20; k++)
      CHECK_OK(pool_group_spawn(&g, k == r % 20 ? failing : child_fn, (void *)(intptr_t)EBADMSG));
    CHECK_OK(pool_job_after_group(&c.job, &g));
    CHECK_OK(pool_job_start(&after.job));
    CHECK_OK(pool_job_start(&c.job));
    CHECK_EQ(pool_job_wait(&c.job), EBADMSG);
    CHECK_EQ(pool_job_wait(&after.job), EBADMSG);
    CHECK_EQ(atomic_load(&c.runs), 0);
    CHECK_EQ(atomic_load(&after.runs), 0);
    /* The failure was that round's: the next one is clean. */
    cont_init(&c, p);
    for (int k = 0; k < 20; k++) CHECK_OK(pool_group_spawn(&g, child_fn, NULL));
    CHECK_OK(pool_job_after_group(&c.job, &g));
    CHECK_OK(pool_job_start(&c.job));
    CHECK_OK(pool_job_wait(&c.job));
    CHECK_EQ(atomic_load(&c.runs), 1);
    /* Cancelled: ECANCELED. */
    cont_init(&c, p);
    for (int k = 0; k < 20; k++) CHECK_OK(pool_group_spawn(&g, child_fn, NULL));
    CHECK_OK(pool_group_cancel(&g));
    CHECK_OK(pool_job_after_group(&c.job, &g));
    CHECK_OK(pool_job_start(&c.job));
    CHECK_EQ(pool_job_wait(&c.job), ECANCELED);
    CHECK_EQ(atomic_load(&c.runs), 0);
    CHECK_OK(pool_group_wait(&g)); /* clean again */
  }
  /* Nested in cancelled work. */
  for (int r = 0; r < 50; r++) {
    nested_state *s = calloc(1, sizeof *s);
    CHECK(s);
    s->status = -1;
    CHECK_OK(pool_group_init(&s->outer, p));
    CHECK_OK(pool_group_spawn(&s->outer, nested_child, s));
    CHECK_EQ(pool_group_wait(&s->outer), ECANCELED);
    CHECK_EQ(s->status, ECANCELED);
    CHECK_EQ(atomic_load(&s->c.runs), 0);
    free(s);
  }
}

static void case_failing_child(void) { ON_POOLS(failing_child, 1, 2, 4); }

/* ---- spawn_tree: children spawn into the group ------------------------------------ */

static pool_group_t *tree_group;
static atomic_uint tree_nodes;

static void tree_child(void *arg) {
  uintptr_t depth = (uintptr_t)arg;
  atomic_fetch_add(&tree_nodes, 1);
  if (depth > 0) {
    job_busy(300);
    CHECK_OK(pool_group_spawn(tree_group, tree_child, (void *)(depth - 1)));
    CHECK_OK(pool_group_spawn(tree_group, tree_child, (void *)(depth - 1)));
  }
  job_busy(100);
  unsigned long t = job_tick(), cur = atomic_load(&last_end);
  while (t > cur && !atomic_compare_exchange_weak(&last_end, &cur, t)) {
  }
}

static void spawn_tree(pool_t *p) {
  enum { DEPTH = 9 };
  unsigned long rounds = check_iters(60);
  static pool_group_t g;
  CHECK_OK(pool_group_init(&g, p));
  tree_group = &g;
  for (unsigned long r = 0; r < rounds; r++) {
    reset_children();
    atomic_store(&tree_nodes, 0);
    cont c;
    cont_init(&c, p);
    CHECK_OK(pool_group_spawn(&g, tree_child, (void *)(uintptr_t)DEPTH));
    CHECK_OK(pool_job_after_group(&c.job, &g));
    CHECK_OK(pool_job_start(&c.job));
    CHECK_OK(pool_job_wait(&c.job));
    CHECK_EQ(atomic_load(&tree_nodes), (1u << (DEPTH + 1)) - 1);
    CHECK_EQ(atomic_load(&c.runs), 1);
    if (!(atomic_load(&last_end) < atomic_load(&c.t_start)))
      FAIL("the continuation started before a child spawned into the group ended\n");
  }
}

static void case_spawn_tree(void) { ON_POOLS(spawn_tree, 1, 2, 4); }

/* ---- racing_spawns ---------------------------------------------------------------- */

enum { RS_THREADS = 2, RS_PER_THREAD = 300 };

typedef struct rs_state {
  pool_group_t g;
  atomic_uint go, spawned;
  atomic_uint *ran; /* per child */
} rs_state;

static void rs_child(void *arg) {
  atomic_uint *f = arg;
  atomic_fetch_add(f, 1);
  job_busy(50);
}

typedef struct rs_arg {
  rs_state *s;
  int k;
} rs_arg;

static void *rs_spawner(void *v) {
  rs_arg *a = v;
  while (!atomic_load(&a->s->go)) sched_yield();
  for (int i = 0; i < RS_PER_THREAD; i++) {
    CHECK_OK(pool_group_spawn(&a->s->g, rs_child, &a->s->ran[a->k * RS_PER_THREAD + i]));
    atomic_fetch_add(&a->s->spawned, 1);
    if (i % 16 == 0) sched_yield();
  }
  return NULL;
}

static void racing_spawns(pool_t *p) {
  unsigned long rounds = check_iters(100);
  rs_state *s = calloc(1, sizeof *s);
  CHECK(s);
  s->ran = calloc(RS_THREADS * RS_PER_THREAD, sizeof(atomic_uint));
  CHECK(s->ran);
  CHECK_OK(pool_group_init(&s->g, p));
  for (unsigned long r = 0; r < rounds; r++) {
    memset((void *)s->ran, 0, RS_THREADS * RS_PER_THREAD * sizeof(atomic_uint));
    atomic_store(&s->go, 0);
    atomic_store(&s->spawned, 0);
    cont c;
    cont_init(&c, p);
    pthread_t th[RS_THREADS];
    rs_arg a[RS_THREADS];
    for (int k = 0; k < RS_THREADS; k++) {
      a[k] = (rs_arg){s, k};
      CHECK_OK(pthread_create(&th[k], NULL, rs_spawner, &a[k]));
    }
    atomic_store(&s->go, 1);
    /* Put the job after the group while the spawners run. */
    CHECK(job_wait_until(&s->spawned, (unsigned)(r % (RS_THREADS * RS_PER_THREAD))));
    unsigned before = atomic_load(&s->spawned);
    CHECK_OK(pool_job_after_group(&c.job, &s->g));
    CHECK_OK(pool_job_start(&c.job));
    for (int k = 0; k < RS_THREADS; k++) CHECK_OK(pthread_join(th[k], NULL));
    CHECK_OK(pool_job_wait(&c.job));
    CHECK_EQ(atomic_load(&c.runs), 1);
    /* Children spawned after the round ended are the next round's: the
     * group's wait takes them. */
    CHECK_OK(pool_group_wait(&s->g));
    (void)before;
    flags_check_once(s->ran, RS_THREADS * RS_PER_THREAD, "child spawned during a continuation");
  }
  free((void *)s->ran);
  free(s);
}

static void case_racing_spawns(void) { ON_POOLS(racing_spawns, 1, 2, 4); }

/* ---- spawn_at_zero --------------------------------------------------------------- */

typedef struct sz_state {
  pool_group_t g;
  atomic_uint c1_returning, c1_ran, c2_ran, stop, round, spawned_round;
  unsigned c1_delay, cur;
} sz_state;

/* The round's last child: once the continuation is registered (main sets
 * `round`), it lets the racer go and returns. */
static void sz_c1(void *arg) {
  sz_state *s = arg;
  atomic_fetch_add(&s->c1_ran, 1);
  /* Yielding: main needs a core to get there (the race is at the return). */
  while (atomic_load(&s->round) != s->cur) sched_yield();
  atomic_store(&s->c1_returning, 1); /* the racer spawns now */
  job_busy(s->c1_delay);
}

static void sz_c2(void *arg) { atomic_fetch_add(&((sz_state *)arg)->c2_ran, 1); }

/* Spawns c2 the moment c1 is about to return, once per round. */
static void *sz_racer(void *v) {
  sz_state *s = v;
  unsigned done = 0;
  while (!atomic_load(&s->stop)) {
    unsigned r = atomic_load(&s->round);
    if (r == done || !atomic_load(&s->c1_returning)) {
      sched_yield();
      continue;
    }
    CHECK_OK(pool_group_spawn(&s->g, sz_c2, s));
    done = r;
    atomic_store(&s->spawned_round, r);
  }
  return NULL;
}

static void spawn_at_zero(pool_t *p) {
  unsigned long rounds = job_rounds(20000, 3000);
  uint64_t seed = 0x2e50 + pool_threads(p);
  sz_state *s = calloc(1, sizeof *s);
  CHECK(s);
  CHECK_OK(pool_group_init(&s->g, p));
  pthread_t racer;
  CHECK_OK(pthread_create(&racer, NULL, sz_racer, s));
  cont *c = calloc(1, sizeof *c);
  CHECK(c);
  for (unsigned long r = 1; r <= rounds; r++) {
    atomic_store(&s->c1_returning, 0);
    atomic_store(&s->c1_ran, 0);
    atomic_store(&s->c2_ran, 0);
    s->c1_delay = (unsigned)(rng_next(&seed) % 64);
    s->cur = (unsigned)r;
    cont_init(c, p);
    CHECK_OK(pool_group_spawn(&s->g, sz_c1, s));
    int rc = pool_job_after_group(&c->job, &s->g);
    if (rc != 0) FAIL("round %lu: pool_job_after_group returned %d\n", r, rc);
    atomic_store(&s->round, (unsigned)r);
    /* Both children ran (c2 spawned and run): then start the job. */
    CHECK(job_wait_until(&s->spawned_round, (unsigned)r));
    CHECK(job_wait_until(&s->c2_ran, 1));
    if (atomic_load(&c->runs) != 0)
      FAIL("round %lu: the continuation ran before its start (released twice)\n", r);
    CHECK_OK(pool_job_start(&c->job));
    CHECK_OK(pool_job_wait(&c->job));
    CHECK_EQ(atomic_load(&c->runs), 1);
    CHECK_EQ(atomic_load(&s->c1_ran), 1);
    /* c2 was this round's or the next's; either way the group waits 0. */
    rc = pool_group_wait(&s->g);
    if (rc != 0) FAIL("round %lu: pool_group_wait after the continuation returned %d\n", r, rc);
    CHECK_EQ(atomic_load(&s->c2_ran), 1);
  }
  atomic_store(&s->stop, 1);
  CHECK_OK(pthread_join(racer, NULL));
  free(c);
  free(s);
}

static void case_spawn_at_zero(void) { ON_POOLS(spawn_at_zero, 1, 2, 4); }

/* ---- ebusy ---------------------------------------------------------------------------- */

typedef struct eb_state {
  pool_group_t *g;
  int rc;
} eb_state;

static void eb_wait_task(void *arg) {
  eb_state *e = arg;
  e->rc = pool_group_wait(e->g);
}

/* One child held at the gate (it occupies one worker), four free ones. */
static jgate eb_gate;
static void eb_child(void *arg) {
  if (arg) gate_pass(&eb_gate);
  child_fn(NULL);
}

/* `tp`: the pool of the task that waits for the group (one with a worker
 * free while the held child occupies one). */
static void ebusy_on(pool_t *p, pool_t *tp) {
  for (int r = 0; r < 50; r++) {
    atomic_store(&eb_gate.open, 0);
    atomic_store(&eb_gate.waiting, 0);
    reset_children();
    pool_group_t g;
    CHECK_OK(pool_group_init(&g, p));
    cont c1, c2;
    cont_init(&c1, p);
    cont_init(&c2, p);
    for (int k = 0; k < 5; k++)
      CHECK_OK(pool_group_spawn(&g, eb_child, (void *)(uintptr_t)(k == 0)));
    CHECK_OK(pool_job_after_group(&c1.job, &g));
    CHECK_EQ(pool_job_after_group(&c2.job, &g), EBUSY);
    CHECK_EQ(pool_group_wait(&g), EBUSY);
    eb_state e = {&g, -1};
    pool_job_t t;
    CHECK_OK(pool_job_submit(tp, &t, eb_wait_task, &e));
    CHECK_OK(pool_job_wait(&t));
    CHECK_EQ(e.rc, EBUSY);
    /* c2 is not held by the group: started, it runs now (on a worker the
     * held child leaves free). */
    if (pool_threads(p) > 1) {
      CHECK_OK(pool_job_start(&c2.job));
      CHECK_OK(pool_job_wait(&c2.job));
      CHECK_EQ(atomic_load(&c2.runs), 1);
    }
    CHECK_EQ(pool_job_after_group(&c1.job, &g), EBUSY);
    CHECK_OK(pool_job_start(&c1.job));
    CHECK_EQ(pool_job_status(&c1.job), EINPROGRESS);
    CHECK_EQ(pool_job_after_group(&c1.job, &g), EINVAL); /* started */
    gate_open(&eb_gate);
    CHECK_OK(pool_job_wait(&c1.job));
    check_after_children(&c1, 5);
    CHECK_OK(pool_group_wait(&g));
    if (pool_threads(p) == 1) {
      CHECK_OK(pool_job_start(&c2.job));
      CHECK_OK(pool_job_wait(&c2.job));
      CHECK_EQ(atomic_load(&c2.runs), 1);
    }
    CHECK_EQ(pool_job_after_group(&c2.job, &g), EINVAL); /* started */
  }
}

static void ebusy(pool_t *p) {
  pool_t *other = make_pool(1);
  ebusy_on(p, pool_threads(p) > 1 ? p : other);
  ebusy_on(p, other);
  CHECK_OK(pool_destroy(other));
}

static void case_ebusy(void) { ON_POOLS(ebusy, 1, 2, 4); }

/* ---- concurrent_register ---------------------------------------------------------------- */

typedef struct cr_state {
  pool_group_t g;
  cont c[2];
  int rc[2];
  atomic_uint go, stop;
  pthread_barrier_t begin, end; /* main and the two registrars */
} cr_state;

typedef struct cr_arg {
  cr_state *s;
  int k;
} cr_arg;

/* A registrar: in round r puts its job after the group. Both wait at the
 * barrier, then spin until main says go, so that their calls overlap as
 * often as they can. */
static void *cr_thread(void *v) {
  cr_arg *a = v;
  cr_state *s = a->s;
  for (unsigned r = 1;; r++) {
    pthread_barrier_wait(&s->begin);
    if (atomic_load(&s->stop)) return NULL;
    while (atomic_load(&s->go) < r) sched_yield(); /* the other needs a core too */
    s->rc[a->k] = pool_job_after_group(&s->c[a->k].job, &s->g);
    pthread_barrier_wait(&s->end);
  }
}

/* Waits for a job with a liveness bound: false if it is still not complete
 * after 30 s times WSPOOL_STRESS (the test then fails instead of hanging). */
static int job_done_within(pool_job_t *j) {
  double end = job_now() + 30.0 * (double)test_stress_factor();
  for (unsigned spin = 0; pool_job_status(j) == EINPROGRESS; spin++) {
    if (job_now() > end) return 0;
    if (spin < 2000)
      sched_yield();
    else
      sleep_ms(1);
  }
  return 1;
}

static void concurrent_register(pool_t *p) {
  unsigned long rounds = job_rounds(20000, 3000);
  cr_state *s = calloc(1, sizeof *s);
  CHECK(s);
  CHECK_OK(pool_group_init(&s->g, p));
  CHECK_OK(pthread_barrier_init(&s->begin, NULL, 3));
  CHECK_OK(pthread_barrier_init(&s->end, NULL, 3));
  pthread_t th[2];
  cr_arg a[2] = {{s, 0}, {s, 1}};
  for (int k = 0; k < 2; k++) CHECK_OK(pthread_create(&th[k], NULL, cr_thread, &a[k]));
  for (unsigned long r = 1; r <= rounds; r++) {
    atomic_store(&eb_gate.open, 0);
    atomic_store(&eb_gate.waiting, 0);
    reset_children();
    cont_init(&s->c[0], p);
    cont_init(&s->c[1], p);
    /* One child held (it occupies one worker), two free. */
    for (int k = 0; k < 3; k++)
      CHECK_OK(pool_group_spawn(&s->g, eb_child, (void *)(uintptr_t)(k == 0)));
    pthread_barrier_wait(&s->begin);
    atomic_store(&s->go, (unsigned)r);
    pthread_barrier_wait(&s->end);
    if (!((s->rc[0] == 0 && s->rc[1] == EBUSY) || (s->rc[0] == EBUSY && s->rc[1] == 0)))
      FAIL("round %lu: the two registrations returned %d and %d\n", r, s->rc[0], s->rc[1]);
    int win = s->rc[0] == 0 ? 0 : 1, lose = 1 - win;
    /* The loser is not held by the group: it runs when started, before
     * the held child is let go. */
    CHECK_EQ(atomic_load(&s->c[lose].runs), 0);
    CHECK_OK(pool_job_start(&s->c[lose].job));
    CHECK_OK(pool_job_start(&s->c[win].job));
    CHECK_OK(pool_job_wait(&s->c[lose].job));
    CHECK_EQ(atomic_load(&s->c[lose].runs), 1);
    CHECK_EQ(atomic_load(&s->c[win].runs), 0);
    gate_open(&eb_gate);
    if (!job_done_within(&s->c[win].job))
      FAIL("round %lu: the continuation of the registration that returned 0 was never "
           "released (the group holds the job of the one that returned EBUSY instead)\n",
           r);
    check_after_children(&s->c[win], 3);
    CHECK_OK(pool_job_status(&s->c[win].job));
    CHECK_EQ(atomic_load(&s->c[lose].runs), 1);
    CHECK_OK(pool_group_wait(&s->g));
  }
  atomic_store(&s->stop, 1);
  pthread_barrier_wait(&s->begin);
  for (int k = 0; k < 2; k++) CHECK_OK(pthread_join(th[k], NULL));
  pthread_barrier_destroy(&s->begin);
  pthread_barrier_destroy(&s->end);
  free(s);
}

static void case_concurrent_register(void) { ON_POOLS(concurrent_register, 2); }

/* ---- reuse: the continuation starts the next round ------------------------------------ */

typedef struct ru_state ru_state;

typedef struct ru_round {
  ru_state *s;
  unsigned k;
} ru_round;

struct ru_state {
  pool_t *pool;
  pool_group_t g;
  cont *c;      /* one per round */
  ru_round *rr; /* each continuation's argument */
  unsigned rounds;
  atomic_uint done; /* continuations that ran */
  atomic_uint children;
};

static void ru_child(void *arg) {
  atomic_fetch_add(&((ru_state *)arg)->children, 1);
  job_busy(100);
}

/* Round k's continuation: spawns round k + 1 into the same group and puts
 * the next continuation after it. */
static void ru_cont(void *arg) {
  ru_round *rr = arg;
  ru_state *s = rr->s;
  unsigned k = rr->k;
  cont_fn(&s->c[k]);
  CHECK_EQ(atomic_load(&s->children), 4 * (k + 1));
  if (k + 1 < s->rounds) {
    for (int i = 0; i < 4; i++) CHECK_OK(pool_group_spawn(&s->g, ru_child, s));
    CHECK_OK(pool_job_init(&s->c[k + 1].job, s->pool, ru_cont, &s->rr[k + 1]));
    CHECK_OK(pool_job_after_group(&s->c[k + 1].job, &s->g));
    CHECK_OK(pool_job_start(&s->c[k + 1].job));
  }
  atomic_fetch_add(&s->done, 1);
}

static void reuse(pool_t *p) {
  ru_state *s = calloc(1, sizeof *s);
  CHECK(s);
  s->pool = p;
  s->rounds = (unsigned)check_iters(500);
  s->c = calloc(s->rounds, sizeof(cont));
  s->rr = calloc(s->rounds, sizeof(ru_round));
  CHECK(s->c && s->rr);
  for (unsigned k = 0; k < s->rounds; k++) s->rr[k] = (ru_round){s, k};
  CHECK_OK(pool_group_init(&s->g, p));
  for (int i = 0; i < 4; i++) CHECK_OK(pool_group_spawn(&s->g, ru_child, s));
  CHECK_OK(pool_job_init(&s->c[0].job, p, ru_cont, &s->rr[0]));
  CHECK_OK(pool_job_after_group(&s->c[0].job, &s->g));
  CHECK_OK(pool_job_start(&s->c[0].job));
  if (!job_wait_until(&s->done, s->rounds))
    FAIL("the chain of continuations stopped after %u rounds\n", atomic_load(&s->done));
  for (unsigned k = 0; k < s->rounds; k++) {
    CHECK_OK(pool_job_wait(&s->c[k].job));
    CHECK_EQ(atomic_load(&s->c[k].runs), 1);
  }
  CHECK_EQ(atomic_load(&s->children), 4 * s->rounds);
  CHECK_OK(pool_group_wait(&s->g));
  /* Initialised again after a continuation ran. */
  CHECK_OK(pool_group_init(&s->g, p));
  cont c;
  cont_init(&c, p);
  for (int i = 0; i < 4; i++) CHECK_OK(pool_group_spawn(&s->g, ru_child, s));
  CHECK_OK(pool_job_after_group(&c.job, &s->g));
  CHECK_OK(pool_job_start(&c.job));
  CHECK_OK(pool_job_wait(&c.job));
  CHECK_OK(pool_group_init(&s->g, p));
  CHECK_OK(pool_group_wait(&s->g));
  free(s->c);
  free(s->rr);
  free(s);
}

static void case_reuse(void) { ON_POOLS(reuse, 1, 2, 4); }

/* ---- cross_pool --------------------------------------------------------------------------- */

static void cross(pool_t *gp, pool_t *jp) {
  for (int r = 0; r < 100; r++) {
    jgate gate = {0, 0};
    child_gate = r % 2 ? &gate : NULL;
    reset_children();
    pool_group_t g;
    CHECK_OK(pool_group_init(&g, gp));
    cont c, pred;
    cont_init(&c, jp);
    cont_init(&pred, gp);
    for (int k = 0; k < 8; k++) CHECK_OK(pool_group_spawn(&g, child_fn, NULL));
    CHECK_OK(pool_job_after(&c.job, &pred.job));
    CHECK_OK(pool_job_after_group(&c.job, &g));
    CHECK_OK(pool_job_start(&c.job));
    CHECK_OK(pool_job_start(&pred.job));
    gate_open(&gate);
    CHECK_OK(pool_job_wait(&c.job));
    check_after_children(&c, 8);
    CHECK(atomic_load(&pred.t_start) < atomic_load(&c.t_start));
    child_gate = NULL;
  }
}

static void case_cross_pool(void) {
  pool_t *a = make_pool(1), *b = make_pool(2);
  cross(a, b);
  cross(b, a);
  CHECK_OK(pool_destroy(a));
  CHECK_OK(pool_destroy(b));
}

/* ---- in_job ------------------------------------------------------------------------ */

enum { IJ_KIDS = 16 };

typedef struct ij_state {
  pool_job_t job, cont;
  pool_group_t g;
  pool_t *gpool; /* the group's pool, NULL: the job's */
  atomic_uint kids, saw_complete, cont_runs;
} ij_state;

static void ij_kid(void *arg) {
  ij_state *s = arg;
  if (pool_job_status(&s->job) != EINPROGRESS) atomic_fetch_add(&s->saw_complete, 1);
  job_busy(2000);
  atomic_fetch_add(&s->kids, 1);
}
static void ij_cont(void *arg) {
  ij_state *s = arg;
  CHECK_EQ(atomic_load(&s->kids), IJ_KIDS);
  atomic_fetch_add(&s->cont_runs, 1);
}
static void ij_fn(void *arg) {
  ij_state *s = arg;
  CHECK_OK(pool_group_init(&s->g, s->gpool));
  for (int k = 0; k < IJ_KIDS; k++) CHECK_OK(pool_group_spawn(&s->g, ij_kid, s));
  CHECK_OK(pool_job_init(&s->cont, NULL, ij_cont, s));
  CHECK_OK(pool_job_after_group(&s->cont, &s->g));
  CHECK_OK(pool_job_start(&s->cont));
}

static void in_job(pool_t *p) {
  unsigned long rounds = job_rounds(200, 40);
  pool_t *other = make_pool(2);
  for (unsigned long r = 0; r < rounds; r++) {
    ij_state *s = calloc(1, sizeof *s);
    CHECK(s);
    s->gpool = r % 2 ? other : NULL;
    CHECK_OK(pool_job_submit(p, &s->job, ij_fn, s));
    CHECK_OK(pool_job_wait(&s->job));
    CHECK_EQ(atomic_load(&s->kids), IJ_KIDS);
    CHECK_OK(pool_job_cancel(&s->job)); /* complete: nothing nested in it is left */
    CHECK_OK(pool_job_wait(&s->cont));
    CHECK_EQ(atomic_load(&s->cont_runs), 1);
    CHECK_EQ(atomic_load(&s->saw_complete), 0);
    free(s);
  }
  CHECK_OK(pool_destroy(other));
}

static void case_in_job(void) { ON_POOLS(in_job, 1, 2, 4); }

/* ---- fork_child ------------------------------------------------------------------- */

static void fk_hold(void *arg) { gate_pass((jgate *)arg); }
static void fk_nop(void *arg) { (void)arg; }

/* In the child: every call on a group of the parent is refused at once;
 * a job refused by pool_job_after_group() is not held by it. */
static void fk_check(pool_group_t *busy, pool_group_t *idle) {
  pool_group_t *gs[2] = {busy, idle};
  for (int k = 0; k < 2; k++) {
    CHECK_EQ(pool_group_wait(gs[k]), EOWNERDEAD);
    CHECK_EQ(pool_group_cancel(gs[k]), EOWNERDEAD);
    CHECK_EQ(pool_group_spawn(gs[k], fk_nop, NULL), EOWNERDEAD);
    CHECK_EQ(pool_group_spawn_drop(gs[k], fk_nop, NULL, fk_nop), EOWNERDEAD);
    cont c;
    cont_init(&c, NULL);
    CHECK_EQ(pool_job_after_group(&c.job, gs[k]), EOWNERDEAD);
    CHECK_OK(pool_job_start(&c.job));
    CHECK_OK(pool_job_wait(&c.job));
    CHECK_EQ(atomic_load(&c.runs), 1);
  }
}

static void case_fork_child(void) {
  if (getenv("WSPOOL_TEST_EMULATED")) TEST_SKIP("fork() of a threaded process under qemu-user");
  if (TEST_UNDER_ASAN || TEST_UNDER_TSAN)
    TEST_SKIP("a threaded fork under ThreadSanitizer or AddressSanitizer (see test/fault/fork.c)");
  static jgate gate;
  pool_t *p = make_pool(1);
  pool_group_t busy, idle;
  CHECK_OK(pool_group_init(&idle, p));
  CHECK_OK(pool_group_spawn(&idle, fk_nop, NULL));
  CHECK_OK(pool_group_wait(&idle));
  CHECK_OK(pool_group_init(&busy, p));
  CHECK_OK(pool_group_spawn(&busy, fk_hold, &gate));
  CHECK(job_wait_until(&gate.waiting, 1)); /* busy's child is running */
  fflush(NULL);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    check_watchdog(60); /* a wait that blocks ends the child */
    fk_check(&busy, &idle);
    CHECK_OK(pool_destroy(p));
    fk_check(&busy, &idle);
    /* Takes p's struct (destroyed structs are reused last in, first out):
     * the groups' pool pointer is a live pool of the child's now. */
    pool_t *c = make_pool(1);
    fk_check(&busy, &idle);
    CHECK_OK(pool_group_init(&idle, c));
    CHECK_OK(pool_group_spawn(&idle, fk_nop, NULL));
    CHECK_OK(pool_group_wait(&idle));
    CHECK_OK(pool_group_cancel(&idle));
    CHECK_EQ(pool_group_wait(&idle), ECANCELED);
    CHECK_OK(pool_destroy(c));
    fflush(NULL);
    _exit(0);
  }
  gate_open(&gate);
  child_ok(pid, "the child");
  CHECK_OK(pool_group_wait(&busy));
  CHECK_OK(pool_group_cancel(&idle));
  CHECK_EQ(pool_group_wait(&idle), ECANCELED);
  CHECK_OK(pool_destroy(p));
}

TEST_MAIN(600, TEST_CASE(pending), TEST_CASE(none_pending), TEST_CASE(failing_child),
          TEST_CASE(spawn_tree), TEST_CASE(racing_spawns), TEST_CASE(spawn_at_zero),
          TEST_CASE(ebusy), TEST_CASE(concurrent_register), TEST_CASE(reuse), TEST_CASE(cross_pool),
          TEST_CASE(in_job), TEST_CASE(fork_child))
