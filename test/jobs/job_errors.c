/* SPDX-License-Identifier: MIT */
/* Misuse the job calls report (include/wspool.h, \ref jobs): EINVAL for
 * NULL, uninitialised (zeroed, or a copy of a real job at another
 * address), started-twice jobs and a job put after itself, with no effect
 * on the jobs involved; and dependencies across pools.
 *
 *  einval_null      NULL jobs, functions and groups.
 *  einval_uninit    zeroed storage and byte copies of initialised, started
 *                   and complete jobs (and of a group) are not jobs (or
 *                   groups): every call says EINVAL.
 *  einval_started   after(), after_group() and start() on a job already
 *                   started (queued, held, complete): EINVAL; a job put
 *                   after itself: EINVAL. Failed calls change nothing: the
 *                   jobs then run exactly as if they had not been made.
 *  default_pool     a NULL pool from a thread of none is the default pool;
 *                   from a task, the task's pool.
 *  cross_pool       edges between pools of 1, 2 and 4 workers, a chain
 *                   alternating between them and random graphs over three
 *                   pools, checked edge by edge (job_util.h).
 * No timing assertions. */
#include <errno.h>
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

/* ---- NULL ------------------------------------------------------------------- */

static void einval_null(pool_t *p) {
  pool_job_t j, ok;
  pool_group_t g;
  CHECK_OK(pool_group_init(&g, p));
  CHECK_EQ(pool_job_init(NULL, p, count_fn, NULL), EINVAL);
  CHECK_EQ(pool_job_init(&j, p, NULL, NULL), EINVAL);
  CHECK_EQ(pool_job_submit(p, NULL, count_fn, NULL), EINVAL);
  CHECK_EQ(pool_job_submit(p, &j, NULL, NULL), EINVAL);
  CHECK_OK(pool_job_init(&ok, p, count_fn, NULL));
  CHECK_EQ(pool_job_after(NULL, &ok), EINVAL);
  CHECK_EQ(pool_job_after(&ok, NULL), EINVAL);
  CHECK_EQ(pool_job_after(NULL, NULL), EINVAL);
  CHECK_EQ(pool_job_after_group(NULL, &g), EINVAL);
  CHECK_EQ(pool_job_after_group(&ok, NULL), EINVAL);
  CHECK_EQ(pool_job_start(NULL), EINVAL);
  CHECK_EQ(pool_job_wait(NULL), EINVAL);
  CHECK_EQ(pool_job_status(NULL), EINVAL);
  CHECK_EQ(pool_job_cancel(NULL), EINVAL);
  /* ok is untouched by all of it: it runs once, with no predecessor. */
  atomic_store(&runs, 0);
  CHECK_OK(pool_job_start(&ok));
  CHECK_OK(pool_job_wait(&ok));
  CHECK_EQ(atomic_load(&runs), 1);
  CHECK_OK(pool_group_wait(&g)); /* no continuation was registered */
}

static void case_einval_null(void) { ON_POOLS(einval_null, 1, 2); }

/* ---- uninitialised ------------------------------------------------------------ */

/* Every call on `bad` (not a job) says EINVAL; `ok` (an initialised job
 * not started) and `g` (a group) are left as they were. */
static void all_einval(pool_job_t *bad, pool_job_t *ok, pool_group_t *g) {
  CHECK_EQ(pool_job_after(bad, ok), EINVAL);
  CHECK_EQ(pool_job_after(ok, bad), EINVAL);
  CHECK_EQ(pool_job_after(bad, bad), EINVAL);
  CHECK_EQ(pool_job_after_group(bad, g), EINVAL);
  CHECK_EQ(pool_job_start(bad), EINVAL);
  CHECK_EQ(pool_job_wait(bad), EINVAL);
  CHECK_EQ(pool_job_status(bad), EINVAL);
  CHECK_EQ(pool_job_cancel(bad), EINVAL);
}

static void einval_uninit(pool_t *p) {
  pool_job_t *mem = calloc(4, sizeof(pool_job_t)); /* [0] zero, [1..3] copies */
  pool_job_t ok, src, done;
  pool_group_t g, gcopy, gzero;
  CHECK(mem);
  CHECK_OK(pool_group_init(&g, p));
  CHECK_OK(pool_job_init(&ok, p, count_fn, NULL));
  atomic_store(&runs, 0);
  all_einval(&mem[0], &ok, &g);
  /* A copy of an initialised job, elsewhere, is not that job. */
  CHECK_OK(pool_job_init(&src, p, count_fn, NULL));
  memcpy(&mem[1], &src, sizeof src);
  all_einval(&mem[1], &ok, &g);
  /* Nor a copy of a complete one. */
  CHECK_OK(pool_job_submit(p, &done, count_fn, NULL));
  CHECK_OK(pool_job_wait(&done));
  memcpy(&mem[2], &done, sizeof done);
  all_einval(&mem[2], &ok, &g);
  /* Nor of a started one (held by a predecessor). */
  CHECK_OK(pool_job_after(&src, &ok));
  CHECK_OK(pool_job_start(&src));
  memcpy(&mem[3], &src, sizeof src);
  all_einval(&mem[3], &ok, &g);
  /* Groups: zeroed, and a copy of a real one. */
  memset(&gzero, 0, sizeof gzero);
  memcpy(&gcopy, &g, sizeof g);
  CHECK_EQ(pool_job_after_group(&ok, &gzero), EINVAL);
  CHECK_EQ(pool_job_after_group(&ok, &gcopy), EINVAL);
  /* The real ones work, untouched: src after ok only. */
  CHECK_EQ(atomic_load(&runs), 1); /* done */
  CHECK_EQ(pool_job_status(&src), EINPROGRESS);
  CHECK_OK(pool_job_start(&ok));
  CHECK_OK(pool_job_wait(&src));
  CHECK_OK(pool_job_wait(&ok));
  CHECK_EQ(atomic_load(&runs), 3);
  CHECK_OK(pool_group_wait(&g));
  free(mem);
}

static void case_einval_uninit(void) { ON_POOLS(einval_uninit, 1, 2); }

/* ---- started twice, put after itself -------------------------------------------- */

static void einval_started(pool_t *p) {
  for (int r = 0; r < 20; r++) {
    pool_job_t a, b, c, held, fresh;
    pool_group_t g;
    CHECK_OK(pool_group_init(&g, p));
    atomic_store(&runs, 0);
    CHECK_OK(pool_job_init(&a, p, count_fn, NULL));
    CHECK_OK(pool_job_init(&held, p, count_fn, NULL));
    CHECK_OK(pool_job_init(&fresh, p, count_fn, NULL));
    CHECK_EQ(pool_job_after(&a, &a), EINVAL);
    CHECK_OK(pool_job_after(&held, &a));
    /* held: started, waiting for a. */
    CHECK_OK(pool_job_start(&held));
    CHECK_EQ(pool_job_start(&held), EINVAL);
    CHECK_EQ(pool_job_after(&held, &fresh), EINVAL);
    CHECK_EQ(pool_job_after_group(&held, &g), EINVAL);
    CHECK_EQ(pool_job_after(&held, &held), EINVAL);
    /* b: submitted (started), maybe running or complete. */
    CHECK_OK(pool_job_submit(p, &b, count_fn, NULL));
    CHECK_EQ(pool_job_start(&b), EINVAL);
    CHECK_EQ(pool_job_after(&b, &fresh), EINVAL);
    CHECK_OK(pool_job_wait(&b));
    /* Complete: still started. */
    CHECK_EQ(pool_job_start(&b), EINVAL);
    CHECK_EQ(pool_job_after(&b, &fresh), EINVAL);
    CHECK_EQ(pool_job_after_group(&b, &g), EINVAL);
    /* c, initialised again from b's storage once complete: a new job. */
    memcpy(&c, &b, sizeof b); /* (a copy is not it) */
    CHECK_EQ(pool_job_start(&c), EINVAL);
    CHECK_OK(pool_job_init(&b, p, count_fn, NULL));
    CHECK_OK(pool_job_after(&b, &held));
    CHECK_OK(pool_job_start(&b));
    /* None of the failed calls added an edge: fresh (never started) holds
     * nothing back; a releases held, held releases b. */
    CHECK_EQ(pool_job_status(&held), EINPROGRESS);
    CHECK_OK(pool_job_start(&a));
    CHECK_OK(pool_job_wait(&b));
    CHECK_OK(pool_job_wait(&held));
    CHECK_OK(pool_job_wait(&a));
    CHECK_EQ(atomic_load(&runs), 4);  /* b's first run, a, held, b again */
    CHECK_OK(pool_job_start(&fresh)); /* every job initialised is started */
    CHECK_OK(pool_job_wait(&fresh));
    CHECK_OK(pool_group_wait(&g));
  }
}

static void case_einval_started(void) { ON_POOLS(einval_started, 1, 2, 4); }

/* ---- the NULL pool ---------------------------------------------------------------- */

typedef struct dp_state {
  pool_t *seen_outer, *seen_inner;
  pool_job_t inner;
} dp_state;

static void dp_inner(void *arg) { ((dp_state *)arg)->seen_inner = pool_current(); }
static void dp_outer(void *arg) {
  dp_state *s = arg;
  s->seen_outer = pool_current();
  CHECK_OK(pool_job_submit(NULL, &s->inner, dp_inner, s));
  CHECK_OK(pool_job_wait(&s->inner));
}

static void case_default_pool(void) {
  dp_state s = {NULL, NULL, {{0}}};
  pool_job_t j;
  CHECK_OK(pool_job_submit(NULL, &j, dp_outer, &s));
  CHECK_OK(pool_job_wait(&j));
  CHECK(s.seen_outer == pool_default());
  CHECK(s.seen_inner == pool_default());
  pool_t *p = make_pool(2);
  s.seen_outer = s.seen_inner = NULL;
  CHECK_OK(pool_job_submit(p, &j, dp_outer, &s));
  CHECK_OK(pool_job_wait(&j));
  CHECK(s.seen_outer == p);
  CHECK(s.seen_inner == p);
  CHECK_OK(pool_destroy(p));
}

/* ---- across pools ---------------------------------------------------------------------- */

static void case_cross_pool(void) {
  pool_t *pools[3] = {make_pool(1), make_pool(2), make_pool(4)};
  /* A chain alternating A, B, C, started in each order. */
  for (int kind = 0; kind < 3; kind++) {
    size_t n = 3000;
    jdag *d = jdag_new(n);
    for (size_t i = 1; i < n; i++) jdag_edge(d, i - 1, i);
    jdag_seal(d);
    for (size_t i = 0; i < n; i++) jdag_init(d, i, pools[i % 3]);
    jdag_link(d);
    unsigned *o = jorder(n, kind, 21);
    jdag_start(d, o);
    free(o);
    jdag_wait(d, 22);
    jdag_check(d, "chain across three pools");
    jdag_free(d);
  }
  /* Random graphs over the three pools, some nodes failing. */
  uint64_t seed = 0xc505;
  unsigned long rounds = check_iters(8);
  for (unsigned long r = 0; r < rounds; r++) {
    size_t n = 2000;
    jdag *d = jdag_new(n);
    for (size_t i = 1; i < n; i++) {
      unsigned k = (unsigned)(rng_next(&seed) % 4);
      for (unsigned e = 0; e < k; e++) {
        size_t span = i < 50 ? i : 50;
        jdag_edge(d, i - 1 - (size_t)(rng_next(&seed) % span), i);
      }
    }
    jdag_seal(d);
    for (size_t i = 0; i < n; i++) {
      d->n[i].fail = rng_next(&seed) % 100 == 0 ? 500 + (int)(i % 7) : 0;
      d->n[i].spin = (unsigned)(rng_next(&seed) % 200);
      jdag_init(d, i, pools[rng_next(&seed) % 3]);
    }
    jdag_link(d);
    unsigned *o = jorder(n, 2, rng_next(&seed));
    jdag_start(d, o);
    free(o);
    jdag_wait(d, rng_next(&seed));
    jdag_check(d, "random graph across three pools");
    jdag_free(d);
  }
  for (int k = 0; k < 3; k++) CHECK_OK(pool_destroy(pools[k]));
}

TEST_MAIN(300, TEST_CASE(einval_null), TEST_CASE(einval_uninit), TEST_CASE(einval_started),
          TEST_CASE(default_pool), TEST_CASE(cross_pool))
