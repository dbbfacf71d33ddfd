/* SPDX-License-Identifier: MIT */
/* Allocation failure in jobs (include/wspool.h, \ref jobs), injected with
 * fault.h's malloc interposer. A job holds its first two predecessors'
 * edges itself and takes blocks of 31 for more: pool_job_after() beyond two
 * predecessors may return ENOMEM, and then adds no edge and has no effect.
 *
 *  third_edge      the third pool_job_after of a job fails: ENOMEM; the job
 *                  runs once its two other predecessors completed, while
 *                  the third has not even started (no edge); the third's
 *                  completion later does not touch it; nothing leaks.
 *  block_boundary  the same for the 34th predecessor (the second block),
 *                  and for a complete predecessor that failed (its status
 *                  does not reach the job: no effect).
 *  sweep           a graph over two pools (jobs with up to 45
 *                  predecessors, a group continuation, jobs started from
 *                  main and from tasks, a job whose completion releases
 *                  400 jobs onto its worker's deque, which must grow or
 *                  run them there): for every k = 1, 2, ... the k-th
 *                  allocation after the graph's construction begins fails,
 *                  until a run in which no k-th allocation happened. Each
 *                  run: every call returns 0 or ENOMEM; a job ran at most
 *                  once, and only after every predecessor whose edge was
 *                  accepted ended; a job complete with 0 ran; a job whose
 *                  function never ran completed with a status (ENOMEM
 *                  where its queue could not take it, or a predecessor's);
 *                  nothing leaked (the pools are created and destroyed in
 *                  each run); nothing hangs (watchdog).
 * WSPOOL_STRESS repeats the sweep. Skipped (77) under sanitizers (fault.h),
 * where the job suite's fan-in cases run the edge blocks under
 * LeakSanitizer. */
#include "fault.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <wspool.h>

#include "check.h"
#include "testutil.h"

static atomic_ulong clk;

typedef struct node {
  pool_job_t job;
  atomic_ulong t_start, t_end;
  atomic_uint runs;
  int status;
} node;

static void node_fn(void *arg) {
  node *n = arg;
  atomic_store(&n->t_start, atomic_fetch_add(&clk, 1) + 1);
  atomic_fetch_add(&n->runs, 1);
  atomic_store(&n->t_end, atomic_fetch_add(&clk, 1) + 1);
}

static void node_reset(node *n, size_t count) {
  for (size_t i = 0; i < count; i++) {
    atomic_store(&n[i].t_start, 0);
    atomic_store(&n[i].t_end, 0);
    atomic_store(&n[i].runs, 0);
    n[i].status = -1;
  }
}

/* ---- third_edge, block_boundary ------------------------------------------------ */

enum { MAXP = 40 };

/* Job j after `good` predecessors, then one more whose pool_job_after
 * fails (the first allocation after arming): ENOMEM, no edge, no effect.
 * `extra_done`: that extra predecessor is complete and failed (EIO). */
static void one_failing_edge(unsigned good, int extra_done, int check_leaks) {
  static node pred[MAXP + 1], j;
  long live = fault_live();
  pool_t *p = make_pool(2);
  node_reset(pred, MAXP + 1);
  node_reset(&j, 1);
  CHECK_OK(pool_job_init(&j.job, p, node_fn, &j));
  for (unsigned k = 0; k < good; k++) {
    CHECK_OK(pool_job_init(&pred[k].job, p, node_fn, &pred[k]));
    CHECK_OK(pool_job_after(&j.job, &pred[k].job));
  }
  node *extra = &pred[MAXP];
  if (extra_done) {
    CHECK_OK(pool_job_init(&extra->job, p, node_fn, extra));
    CHECK_OK(pool_job_cancel(&extra->job));
    CHECK_OK(pool_job_start(&extra->job));
    CHECK_EQ(pool_job_wait(&extra->job), ECANCELED);
  } else {
    CHECK_OK(pool_job_init(&extra->job, p, node_fn, extra));
  }
  CHECK_OK(pool_wait_idle(p)); /* no worker allocates meanwhile */
  fault_alloc_arm_here(1); /* this thread's: the edge block */
  int rc = pool_job_after(&j.job, &extra->job);
  fault_alloc_arm(0);
  CHECK_EQ(rc, ENOMEM);
  CHECK(fault_alloc_failed());
  /* The job waits for its good predecessors only. */
  CHECK_OK(pool_job_start(&j.job));
  for (unsigned k = 0; k < good; k++) CHECK_OK(pool_job_start(&pred[k].job));
  CHECK_OK(pool_job_wait(&j.job)); /* not the extra's ECANCELED */
  CHECK_EQ(atomic_load(&j.runs), 1);
  for (unsigned k = 0; k < good; k++) CHECK(atomic_load(&pred[k].t_end) < atomic_load(&j.t_start));
  if (!extra_done) {
    CHECK_EQ(atomic_load(&extra->runs), 0); /* it had not even started */
    CHECK_OK(pool_job_start(&extra->job));
    CHECK_OK(pool_job_wait(&extra->job));
  }
  CHECK_OK(pool_wait_idle(p));
  CHECK_EQ(atomic_load(&j.runs), 1);
  CHECK_OK(pool_destroy(p));
  if (check_leaks && fault_live() != live)
    FAIL("%ld allocations leaked (%u good predecessors)\n", fault_live() - live, good);
}

static void case_third_edge(void) {
  if (!FAULT_AVAILABLE) TEST_SKIP(FAULT_UNAVAILABLE);
  for (int r = 0; r < 20; r++) {
    one_failing_edge(2, 0, r > 0); /* the first run warms up (pool structs, stdio) */
    one_failing_edge(2, 1, r > 0);
  }
}

static void case_block_boundary(void) {
  if (!FAULT_AVAILABLE) TEST_SKIP(FAULT_UNAVAILABLE);
  for (int r = 0; r < 20; r++) {
    one_failing_edge(33, 0, r > 0); /* 2 inside the job, 31 in the first block */
    one_failing_edge(33, 1, r > 0);
  }
}

/* ---- sweep ---------------------------------------------------------------------- */

enum { SN = 60, SMAXE = 1200, SCHILD = 6, SFAN = 400 };

static node sn[SN];
static unsigned se_pred[SMAXE], se_succ[SMAXE]; /* accepted edges */
static size_t sne;
static char child_spawned[SCHILD];
static atomic_uint child_ran[SCHILD];
static atomic_ulong child_end[SCHILD];
static pool_group_t sg;
static pool_t *pa, *pb;
static int cont_idx = SN - 1; /* the continuation of the group */
static unsigned enomem_status;
/* A job of A with SFAN successors in A, which its worker pushes on its
 * deque (more than the deque starts with: it grows, or they run there). */
static node fan[SFAN + 1];

static void child_fn(void *arg) {
  size_t i = (size_t)(uintptr_t)arg;
  atomic_fetch_add(&child_ran[i], 1);
  atomic_store(&child_end[i], atomic_fetch_add(&clk, 1) + 1);
}

static void ok_enomem(int rc, const char *what) {
  if (rc != 0 && rc != ENOMEM) FAIL("%s returned %d\n", what, rc);
}

/* The graph's candidate edges, fixed: node i after up to 45 earlier ones. */
static unsigned cand_n(size_t i) { return i % 10 == 9 ? 45 : (unsigned)(i % 4); }
static size_t cand_pred(size_t i, unsigned e) { return (i * 7 + e * 13) % i; }

/* Starts nodes [lo, hi) from a task of pool A. */
typedef struct range {
  size_t lo, hi;
} range;
static range task_range;
static void starter(void *arg) {
  (void)arg;
  for (size_t i = task_range.hi; i-- > task_range.lo;) CHECK_OK(pool_job_start(&sn[i].job));
}

static void sweep_run(void) {
  node_reset(sn, SN);
  sne = 0;
  for (size_t i = 0; i < SCHILD; i++) {
    child_spawned[i] = 0;
    atomic_store(&child_ran[i], 0);
    atomic_store(&child_end[i], 0);
  }
  for (size_t i = 0; i < SN; i++)
    CHECK_OK(pool_job_init(&sn[i].job, i % 3 ? pa : pb, node_fn, &sn[i]));
  for (size_t i = 1; i < SN; i++)
    for (unsigned e = 0; e < cand_n(i); e++) {
      size_t pr = cand_pred(i, e);
      int rc = pool_job_after(&sn[i].job, &sn[pr].job);
      ok_enomem(rc, "pool_job_after");
      if (rc == 0) {
        se_pred[sne] = (unsigned)pr;
        se_succ[sne] = (unsigned)i;
        sne++;
      }
    }
  CHECK_OK(pool_group_init(&sg, pa));
  for (size_t c = 0; c < SCHILD; c++) {
    int rc = pool_group_spawn(&sg, child_fn, (void *)(uintptr_t)c);
    ok_enomem(rc, "pool_group_spawn");
    child_spawned[c] = rc == 0;
  }
  CHECK_OK(pool_job_after_group(&sn[cont_idx].job, &sg));
  node_reset(fan, SFAN + 1);
  CHECK_OK(pool_job_init(&fan[SFAN].job, pa, node_fn, &fan[SFAN]));
  for (size_t i = 0; i < SFAN; i++) {
    CHECK_OK(pool_job_init(&fan[i].job, pa, node_fn, &fan[i]));
    CHECK_OK(pool_job_after(&fan[i].job, &fan[SFAN].job)); /* inside the job: no memory */
    CHECK_OK(pool_job_start(&fan[i].job));
  }
  CHECK_OK(pool_job_start(&fan[SFAN].job));
  /* The first third from a task of A, the rest from main, last first. */
  task_range = (range){0, SN / 3};
  int rc = pool_submit(pa, starter, NULL);
  ok_enomem(rc, "pool_submit");
  if (rc) starter(NULL);
  for (size_t i = SN; i-- > SN / 3;) CHECK_OK(pool_job_start(&sn[i].job));
  for (size_t i = 0; i < SN; i++) sn[i].status = pool_job_wait(&sn[i].job);
  for (size_t i = 0; i <= SFAN; i++) fan[i].status = pool_job_wait(&fan[i].job);
  CHECK_OK(pool_wait_idle(pa));
}

static void sweep_check(void) {
  for (size_t i = 0; i < SN; i++) {
    unsigned runs = atomic_load(&sn[i].runs);
    int st = sn[i].status;
    if (runs > 1) FAIL("job %zu ran %u times\n", i, runs);
    if (st == 0 && runs != 1) FAIL("job %zu completed with 0 without running\n", i);
    if (st != 0 && runs != 0) FAIL("job %zu ran but completed with %d\n", i, st);
    if (st != 0 && st != ENOMEM) FAIL("job %zu completed with %d\n", i, st);
    enomem_status += st == ENOMEM;
  }
  for (size_t k = 0; k < sne; k++) {
    const node *p = &sn[se_pred[k]], *s = &sn[se_succ[k]];
    if (p->status != 0 && s->status == 0)
      FAIL("job %u ran after job %u, which completed with %d\n", se_succ[k], se_pred[k], p->status);
    if (s->status == 0 && !(atomic_load(&p->t_end) < atomic_load(&s->t_start)))
      FAIL("job %u started before its predecessor %u ended\n", se_succ[k], se_pred[k]);
  }
  for (size_t i = 0; i <= SFAN; i++) {
    unsigned runs = atomic_load(&fan[i].runs);
    int st = fan[i].status;
    if (runs > 1 || (st == 0) != (runs == 1) || (st != 0 && st != ENOMEM))
      FAIL("fan job %zu: status %d, ran %u times\n", i, st, runs);
    enomem_status += st == ENOMEM;
    if (i < SFAN && st == 0 && !(atomic_load(&fan[SFAN].t_end) < atomic_load(&fan[i].t_start)))
      FAIL("fan job %zu started before its predecessor ended\n", i);
  }
  for (size_t c = 0; c < SCHILD; c++) {
    CHECK_EQ(atomic_load(&child_ran[c]), child_spawned[c] ? 1u : 0u);
    if (child_spawned[c] && sn[cont_idx].status == 0 &&
        !(atomic_load(&child_end[c]) < atomic_load(&sn[cont_idx].t_start)))
      FAIL("the group's continuation started before child %zu ended\n", c);
  }
}

/* One run with the k-th allocation failing; whether it did. */
static int sweep_once(long k, int check_leaks) {
  long live = fault_live();
  pa = make_pool(2);
  pb = make_pool(1);
  fault_alloc_arm(k);
  sweep_run();
  fault_alloc_arm(0);
  int hit = fault_alloc_failed();
  sweep_check();
  CHECK_OK(pool_destroy(pa));
  CHECK_OK(pool_destroy(pb));
  if (check_leaks && fault_live() != live)
    FAIL("allocation %ld failing: %ld allocations leaked\n", k, fault_live() - live);
  return hit;
}

static void case_sweep(void) {
  if (!FAULT_AVAILABLE) TEST_SKIP(FAULT_UNAVAILABLE);
  for (int w = 0; w < 2; w++) sweep_once(0, 0);
  unsigned long rounds = check_iters(1);
  for (unsigned long r = 0; r < rounds; r++) {
    long k = 1;
    enomem_status = 0;
    while (sweep_once(k, 1)) k++;
    if (r == 0)
      fprintf(stderr, "job sweep: %ld allocation points; %u jobs completed with ENOMEM\n", k - 1,
              enomem_status);
  }
}

TEST_MAIN(240, TEST_CASE(third_edge), TEST_CASE(block_boundary), TEST_CASE(sweep))
