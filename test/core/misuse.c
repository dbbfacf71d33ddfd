/* SPDX-License-Identifier: MIT */
/* Misuse and error returns of the pool API, the NULL pool, identity calls
 * and statistics.
 *
 *  - pool_default() from 8 threads at once, first use: one pool for all.
 *  - pool_create: NULL out, threads > POOL_MAX_THREADS, bad bind values ->
 *    EINVAL, and *out untouched; more workers than CPUs works.
 *  - pool_submit NULL fn -> EINVAL (outside and inside), and nothing runs.
 *  - pool_destroy / pool_wait_idle from one of the pool's own workers (with
 *    the pool and with NULL) -> EDEADLK, and the pool stays usable; from a
 *    worker of another pool they work.
 *  - pool_destroy(default pool) and pool_destroy(NULL) outside -> EINVAL;
 *    the default pool still works afterwards.
 *  - Outside submissions after destroy began -> ESHUTDOWN (pool_submit,
 *    pool_spawn, pool_group_spawn, pool_join) with no effect, while a task
 *    that keeps the drain going still submits, spawns and groups from
 *    inside successfully, and all of that runs.
 *  - pool_strerror never NULL (nor empty) for any int.
 *  - pool_worker_id() / pool_current(): -1 / NULL outside; inside, the pool
 *    and a distinct index per worker (N tasks held at a barrier on an
 *    N-worker pool see exactly 0..N-1).
 *  - The NULL pool: outside = the default pool, inside = the caller's pool.
 *  - pool_worker_stats: bad index / NULL out -> EINVAL; counters exact.
 * Cases: default_concurrent (first: before anything touches the default
 * pool), create_args, null_fn, edeadlk, default_pool, eshutdown, strerror,
 * identity, stats. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <wspool.h>

#include "check.h"
#include "testutil.h"

static atomic_int hits;
static void hit(void *arg) {
  (void)arg;
  atomic_fetch_add(&hits, 1);
}

/* ---- pool_default from many threads ------------------------------------- */

static atomic_int dgo;
static void *default_getter(void *out) {
  while (!atomic_load(&dgo)) sched_yield();
  *(pool_t **)out = pool_default();
  return NULL;
}

static void case_default_concurrent(void) {
  pthread_t th[8];
  pool_t *got[8];
  for (int k = 0; k < 8; k++) CHECK_OK(pthread_create(&th[k], NULL, default_getter, &got[k]));
  atomic_store(&dgo, 1);
  for (int k = 0; k < 8; k++) CHECK_OK(pthread_join(th[k], NULL));
  CHECK(got[0] != NULL);
  for (int k = 1; k < 8; k++) CHECK(got[k] == got[0]);
  CHECK(pool_default() == got[0]);
  CHECK_EQ(pool_worker_id(), -1);
  CHECK(pool_current() == NULL);
}

/* ---- pool_create arguments ---------------------------------------------- */

static void case_create_args(void) {
  pool_config_t cfg;
  pool_config_default(&cfg);
  CHECK_EQ(pool_create(NULL, NULL), EINVAL);
  CHECK_EQ(pool_create(NULL, &cfg), EINVAL);

  pool_t *sentinel = (pool_t *)(uintptr_t)0xDEADBEE0u;
  pool_t *p = sentinel;
  cfg.threads = POOL_MAX_THREADS + 1;
  CHECK_EQ(pool_create(&p, &cfg), EINVAL);
  CHECK(p == sentinel);
  cfg.threads = UINT_MAX;
  CHECK_EQ(pool_create(&p, &cfg), EINVAL);
  CHECK(p == sentinel);

  const int bad_binds[] = {3, 4, -1, 1000, INT_MAX, INT_MIN};
  for (unsigned i = 0; i < sizeof bad_binds / sizeof bad_binds[0]; i++) {
    pool_config_default(&cfg);
    cfg.threads = 1;
    cfg.bind = (pool_bind_t)bad_binds[i];
    CHECK_EQ(pool_create(&p, &cfg), EINVAL);
    CHECK(p == sentinel);
  }

  /* Oversubscription is allowed: 32 workers on this machine, small stacks. */
  pool_config_default(&cfg);
  cfg.threads = 32;
  cfg.stack_size = 256 << 10;
  p = NULL;
  CHECK_OK(pool_create(&p, &cfg));
  CHECK_EQ(pool_threads(p), 32);
  atomic_store(&hits, 0);
  for (int i = 0; i < 1000; i++) CHECK_OK(pool_submit(p, hit, NULL));
  CHECK_OK(pool_wait_idle(p));
  CHECK_EQ(atomic_load(&hits), 1000);
  CHECK_OK(pool_destroy(p));
}

/* ---- NULL fn ------------------------------------------------------------ */

static atomic_int inside_rc_null_fn = -1;
static void submit_null_inside(void *arg) {
  (void)arg;
  atomic_store(&inside_rc_null_fn, pool_submit(NULL, NULL, NULL));
}

static void case_null_fn(void) {
  pool_t *p = make_pool(2);
  CHECK_EQ(pool_submit(p, NULL, NULL), EINVAL);
  CHECK_EQ(pool_submit(p, NULL, (void *)1), EINVAL);
  CHECK_EQ(pool_submit(NULL, NULL, NULL), EINVAL);
  CHECK_OK(pool_submit(p, submit_null_inside, NULL));
  CHECK_OK(pool_wait_idle(p));
  CHECK_EQ(atomic_load(&inside_rc_null_fn), EINVAL);
  CHECK_OK(pool_destroy(p));
}

/* ---- EDEADLK ------------------------------------------------------------ */

typedef struct deadlk {
  pool_t *self_pool;
  pool_t *other; /* another pool: waiting on / destroying it is fine */
  int rc_destroy, rc_destroy_null, rc_wait, rc_wait_null, rc_wait_other, rc_destroy_other;
  int other_done_at_destroy;
} deadlk;

static atomic_int other_marks;
static void other_mark(void *arg) {
  (void)arg;
  volatile unsigned x = 0;
  for (unsigned i = 0; i < 3000; i++) x += i;
  (void)x;
  atomic_fetch_add(&other_marks, 1);
}

static void deadlk_task(void *arg) {
  deadlk *d = arg;
  CHECK(pool_current() == d->self_pool);
  d->rc_destroy = pool_destroy(d->self_pool);
  d->rc_destroy_null = pool_destroy(NULL);
  d->rc_wait = pool_wait_idle(d->self_pool);
  d->rc_wait_null = pool_wait_idle(NULL);
  if (d->other) {
    for (int i = 0; i < 50; i++) CHECK_OK(pool_submit(d->other, other_mark, NULL));
    d->rc_wait_other = pool_wait_idle(d->other);
    CHECK_EQ(atomic_load(&other_marks), 50);
    for (int i = 0; i < 50; i++) CHECK_OK(pool_submit(d->other, other_mark, NULL));
    d->rc_destroy_other = pool_destroy(d->other);
    d->other_done_at_destroy = atomic_load(&other_marks);
  }
}

static void case_edeadlk(void) {
  pool_t *p = make_pool(2);
  pool_t *q = make_pool(2);
  deadlk d = {p, q, -1, -1, -1, -1, -1, -1, -1};
  CHECK_OK(pool_submit(p, deadlk_task, &d));
  CHECK_OK(pool_wait_idle(p));
  CHECK_EQ(d.rc_destroy, EDEADLK);
  CHECK_EQ(d.rc_destroy_null, EDEADLK);
  CHECK_EQ(d.rc_wait, EDEADLK);
  CHECK_EQ(d.rc_wait_null, EDEADLK);
  CHECK_EQ(d.rc_wait_other, 0);
  CHECK_EQ(d.rc_destroy_other, 0);
  CHECK_EQ(d.other_done_at_destroy, 100);
  /* The pool is still usable, several times over. */
  for (int round = 0; round < 3; round++) {
    atomic_store(&hits, 0);
    for (int i = 0; i < 100; i++) CHECK_OK(pool_submit(p, hit, NULL));
    CHECK_OK(pool_wait_idle(p));
    CHECK_EQ(atomic_load(&hits), 100);
    deadlk d2 = {p, NULL, -1, -1, -1, -1, -1, -1, -1};
    CHECK_OK(pool_submit(p, deadlk_task, &d2));
    CHECK_OK(pool_wait_idle(p));
    CHECK_EQ(d2.rc_destroy, EDEADLK);
    CHECK_EQ(d2.rc_wait, EDEADLK);
  }
  atomic_store(&hits, 0);
  for (int i = 0; i < 10; i++) CHECK_OK(pool_submit(p, hit, NULL));
  CHECK_OK(pool_destroy(p));
  CHECK_EQ(atomic_load(&hits), 10);
}

/* ---- the default pool --------------------------------------------------- */

static atomic_int default_seen, default_bad;
static void on_default(void *arg) {
  (void)arg;
  if (pool_current() != pool_default() || pool_worker_id() < 0) atomic_fetch_add(&default_bad, 1);
  atomic_fetch_add(&default_seen, 1);
}

static void case_default_pool(void) {
  pool_t *d = pool_default();
  CHECK(d != NULL);
  CHECK_EQ(pool_destroy(d), EINVAL);
  CHECK_EQ(pool_destroy(NULL), EINVAL);
  CHECK(pool_threads(NULL) > 0);
  CHECK_EQ(pool_threads(NULL), pool_threads(d));
  /* NULL outside = the default pool, for submit and wait. */
  for (int i = 0; i < 100; i++) CHECK_OK(pool_submit(NULL, on_default, NULL));
  for (int i = 0; i < 100; i++) CHECK_OK(pool_submit(d, on_default, NULL));
  CHECK_OK(pool_wait_idle(NULL));
  CHECK_EQ(atomic_load(&default_seen), 200);
  CHECK_EQ(atomic_load(&default_bad), 0);
  pool_worker_stats_t s;
  CHECK_OK(pool_worker_stats(NULL, 0, &s));
  CHECK_EQ(pool_worker_stats(NULL, pool_threads(NULL), &s), EINVAL);
  CHECK(pool_default() == d);
}

/* ---- ESHUTDOWN ---------------------------------------------------------- */

enum { SHUT_CAP = 1 << 20 };

typedef struct shut {
  pool_t *pool;
  atomic_int holder_started;
  atomic_int release;          /* set by the outside submitter once refused */
  atomic_int holder_runs;
  atomic_int inner_runs, spawn_runs, group_runs;
  int inner_rc, spawn_rc, sync_rc, group_rc;
  atomic_ulong accepted_runs;  /* outside tasks accepted before the close */
  unsigned long accepted;      /* written by the submitter */
  atomic_uchar *accepted_flag; /* per accepted task (first SHUT_CAP) */
  atomic_int refused_ran;      /* anything that must not run */
} shut;

static shut sh;

static void accepted_task(void *arg) {
  size_t i = (size_t)(uintptr_t)arg;
  if (i < SHUT_CAP) atomic_fetch_add(&sh.accepted_flag[i], 1);
  atomic_fetch_add(&sh.accepted_runs, 1);
}

static void must_not_run(void *arg) {
  (void)arg;
  atomic_fetch_add(&sh.refused_ran, 1);
}

static void inner_task(void *arg) { atomic_fetch_add((atomic_int *)arg, 1); }

static void holder(void *arg) {
  (void)arg;
  atomic_fetch_add(&sh.holder_runs, 1);
  atomic_store(&sh.holder_started, 1);
  /* Keep the drain going until an outside submit was refused. */
  while (!atomic_load(&sh.release)) sched_yield();
  /* From inside, during the drain: all allowed. */
  sh.inner_rc = pool_submit(NULL, inner_task, &sh.inner_runs);
  pool_task_t t;
  sh.spawn_rc = pool_spawn(NULL, &t, inner_task, &sh.spawn_runs);
  if (sh.spawn_rc == 0) sh.sync_rc = pool_sync(&t);
  pool_group_t g;
  CHECK_OK(pool_group_init(&g, NULL));
  sh.group_rc = pool_group_spawn(&g, inner_task, &sh.group_runs);
  CHECK_OK(pool_group_wait(&g));
}

static void *outside_submitter(void *arg) {
  (void)arg;
  unsigned long n = 0;
  int rc;
  for (;;) {
    rc = pool_submit(sh.pool, accepted_task, (void *)(uintptr_t)n);
    if (rc != 0) break;
    n++;
  }
  CHECK_EQ(rc, ESHUTDOWN);
  sh.accepted = n;
  /* Once closed, stays closed; refused calls have no effect. */
  for (int i = 0; i < 100; i++) CHECK_EQ(pool_submit(sh.pool, must_not_run, NULL), ESHUTDOWN);
  pool_task_t t;
  CHECK_EQ(pool_spawn(sh.pool, &t, must_not_run, NULL), ESHUTDOWN);
  pool_group_t g;
  CHECK_OK(pool_group_init(&g, sh.pool));
  CHECK_EQ(pool_group_spawn(&g, must_not_run, NULL), ESHUTDOWN);
  CHECK_OK(pool_group_wait(&g)); /* nothing was spawned: returns at once */
  CHECK_EQ(pool_join(sh.pool, must_not_run, NULL, must_not_run, NULL), ESHUTDOWN);
  CHECK_EQ(pool_submit(sh.pool, NULL, NULL), EINVAL); /* argument check first */
  /* Last touch of the pool; from here the holder may finish. */
  atomic_store(&sh.release, 1);
  return NULL;
}

static void test_eshutdown(unsigned threads) {
  memset(&sh, 0, sizeof sh);
  sh.accepted_flag = calloc(SHUT_CAP, 1);
  CHECK(sh.accepted_flag);
  sh.pool = make_pool(threads);
  CHECK_OK(pool_submit(sh.pool, holder, NULL));
  while (!atomic_load(&sh.holder_started)) sched_yield();
  pthread_t th;
  CHECK_OK(pthread_create(&th, NULL, outside_submitter, NULL));
  CHECK_OK(pool_destroy(sh.pool));
  CHECK_OK(pthread_join(th, NULL));
  CHECK_EQ(atomic_load(&sh.holder_runs), 1);
  CHECK_EQ(sh.inner_rc, 0);
  CHECK_EQ(sh.spawn_rc, 0);
  CHECK_EQ(sh.sync_rc, 0);
  CHECK_EQ(sh.group_rc, 0);
  CHECK_EQ(atomic_load(&sh.inner_runs), 1);
  CHECK_EQ(atomic_load(&sh.spawn_runs), 1);
  CHECK_EQ(atomic_load(&sh.group_runs), 1);
  CHECK_EQ(atomic_load(&sh.refused_ran), 0);
  CHECK_EQ(atomic_load(&sh.accepted_runs), sh.accepted);
  unsigned long cap = sh.accepted < SHUT_CAP ? sh.accepted : SHUT_CAP;
  for (unsigned long i = 0; i < cap; i++) CHECK_EQ(sh.accepted_flag[i], 1);
  for (unsigned long i = cap; i < SHUT_CAP; i++) CHECK_EQ(sh.accepted_flag[i], 0);
  free((void *)sh.accepted_flag);
}

/* ---- pool_strerror ------------------------------------------------------ */

static void case_strerror(void) {
  for (int e = -5000; e <= 5000; e++) {
    const char *m = pool_strerror(e);
    CHECK(m != NULL);
    CHECK(m[0] != '\0');
  }
  const int odd[] = {INT_MIN, INT_MIN + 1, INT_MAX, INT_MAX - 1, -EINVAL, 0x7fff0000};
  for (unsigned i = 0; i < sizeof odd / sizeof odd[0]; i++) {
    CHECK(pool_strerror(odd[i]) != NULL);
    CHECK(pool_strerror(odd[i])[0] != '\0');
  }
  /* The documented errors have their own messages. */
  const int known[] = {EINVAL,  ENOMEM,     EAGAIN,    ESHUTDOWN, EDEADLK,     ENOTSUP, E2BIG,
                       EBUSY,   EOWNERDEAD, ECANCELED, EALREADY,  EINPROGRESS, ENOENT};
  const char *unknown = pool_strerror(-12345);
  for (unsigned i = 0; i < sizeof known / sizeof known[0]; i++) {
    CHECK(strcmp(pool_strerror(known[i]), unknown) != 0);
    for (unsigned j = 0; j < i; j++) CHECK(strcmp(pool_strerror(known[i]), pool_strerror(known[j])) != 0);
  }
}

/* ---- identity: pool_worker_id, pool_current, NULL inside ---------------- */

typedef struct ident {
  pool_t *pool;
  unsigned n;
  atomic_uint arrived;
  atomic_uint id_seen[64];
  atomic_int bad;
  atomic_int null_child_ok;
} ident;

static void null_child(void *arg) {
  ident *id = arg;
  if (pool_current() == id->pool) atomic_fetch_add(&id->null_child_ok, 1);
}

static void barrier_task(void *arg) {
  ident *id = arg;
  if (pool_current() != id->pool) atomic_fetch_add(&id->bad, 1);
  if (pool_threads(NULL) != id->n) atomic_fetch_add(&id->bad, 1);
  int w = pool_worker_id();
  if (w < 0 || (unsigned)w >= id->n) {
    atomic_fetch_add(&id->bad, 1);
  } else {
    atomic_fetch_add(&id->id_seen[w], 1);
  }
  /* NULL inside means this pool, not the default one. */
  CHECK_OK(pool_submit(NULL, null_child, id));
  /* Hold this worker until every task has one: N tasks on N workers. */
  atomic_fetch_add(&id->arrived, 1);
  while (atomic_load(&id->arrived) < id->n) sched_yield();
  if (pool_worker_id() != w) atomic_fetch_add(&id->bad, 1);
}

static void test_identity(unsigned n) {
  CHECK(n <= 64);
  CHECK_EQ(pool_worker_id(), -1);
  CHECK(pool_current() == NULL);
  ident *id = calloc(1, sizeof *id);
  CHECK(id);
  id->pool = make_pool(n);
  id->n = n;
  for (unsigned i = 0; i < n; i++) CHECK_OK(pool_submit(id->pool, barrier_task, id));
  CHECK_OK(pool_wait_idle(id->pool));
  CHECK_EQ(atomic_load(&id->bad), 0);
  for (unsigned w = 0; w < n; w++) CHECK_EQ(atomic_load(&id->id_seen[w]), 1);
  CHECK_EQ(atomic_load(&id->null_child_ok), n);
  CHECK_OK(pool_destroy(id->pool));
  free(id);
  CHECK_EQ(pool_worker_id(), -1);
  CHECK(pool_current() == NULL);
}

/* ---- stats --------------------------------------------------------------- */

static void case_stats(void) {
  pool_t *p = make_pool(3);
  pool_worker_stats_t s;
  CHECK_EQ(pool_worker_stats(p, 3, &s), EINVAL);
  CHECK_EQ(pool_worker_stats(p, UINT_MAX, &s), EINVAL);
  CHECK_EQ(pool_worker_stats(p, 0, NULL), EINVAL);
  CHECK_OK(pool_worker_stats(p, 2, &s));
  uint64_t sleeps0[3];
  for (unsigned w = 0; w < 3; w++) {
    CHECK_OK(pool_worker_stats(p, w, &s));
    sleeps0[w] = s.sleeps;
  }
  const uint64_t n = 20000;
  atomic_store(&hits, 0);
  for (uint64_t i = 0; i < n; i++) CHECK_OK(pool_submit(p, hit, NULL));
  CHECK_OK(pool_wait_idle(p));
  CHECK_EQ(atomic_load(&hits), n);
  /* `tasks` is counted after a task finished, so it may trail
   * pool_wait_idle(); it must reach the exact count (watchdog bounds it). */
  for (;;) {
    uint64_t tasks = 0, global = 0;
    for (unsigned w = 0; w < 3; w++) {
      CHECK_OK(pool_worker_stats(p, w, &s));
      tasks += s.tasks;
      global += s.global_taken;
      CHECK(s.steals_remote <= s.steals);
      CHECK(s.sleeps >= sleeps0[w]); /* counters never go back */
    }
    CHECK(tasks <= n);
    CHECK_EQ(global, n); /* each outside task came from the global queue once */
    if (tasks == n) break;
    sched_yield();
  }
  CHECK_OK(pool_destroy(p));
}

static void case_eshutdown(void) {
  for (unsigned t = 1; t <= 3; t++)
    for (int r = 0; r < 5; r++) test_eshutdown(t);
}

static void case_identity(void) {
  test_identity(1);
  test_identity(2);
  test_identity(5);
}

TEST_MAIN(120, TEST_CASE(default_concurrent), TEST_CASE(create_args), TEST_CASE(null_fn),
          TEST_CASE(edeadlk), TEST_CASE(default_pool), TEST_CASE(eshutdown), TEST_CASE(strerror),
          TEST_CASE(identity), TEST_CASE(stats))
