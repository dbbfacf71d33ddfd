/* SPDX-License-Identifier: MIT */
/* The blocking-region calls themselves (wspool.h, group blocking).
 *
 *  outside           from a thread of no pool, begin and end do nothing and
 *                    return 0, unmatched or not.
 *  end_without_begin pool_blocking_end() in a task with no region open:
 *                    EINVAL, nothing changed (skipped in debug_checks
 *                    builds, which abort on it by design); a later region
 *                    works.
 *  nested            regions nest: depth 1..4, and 1000 regions in a row in
 *                    one task; only the outermost counts (a nested begin
 *                    starts no stand-in: 1 worker, the inner regions of a
 *                    task on the lone worker, then a second task must still
 *                    find the stand-in the outer region woke).
 *  limit             pool_set_standin_limit() / pool_standin_limit(): EINVAL
 *                    above POOL_MAX_THREADS (limit unchanged), 0 and
 *                    POOL_MAX_THREADS accepted, NULL is the default pool from
 *                    outside and the caller's pool from a task.
 *  limit_env         WSPOOL_STANDINS sets a new pool's limit; a bad value is
 *                    reported and the default (4 per worker) used.
 *  hooks_and_names   a stand-in runs on_worker_start / on_worker_stop with
 *                    index nthreads + k, pool_worker_id() says the same, its
 *                    thread is named "<name>-s<k>", and it is joined by
 *                    pool_destroy() (every start hook has had its stop hook
 *                    when destroy returns). */
#define _GNU_SOURCE /* pthread_getname_np */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <wspool.h>

#include "blocking_util.h"
#include "check.h"
#include "testutil.h"
#include "wspool_test_config.h"

/* ---- outside --------------------------------------------------------------- */

static void case_outside(void) {
  pool_t *p = make_blocking_pool(2, 4);
  CHECK_OK(pool_blocking_begin());
  CHECK_OK(pool_blocking_begin());
  CHECK_OK(pool_blocking_end());
  CHECK_OK(pool_blocking_end());
  CHECK_OK(pool_blocking_end()); /* unmatched: still nothing to do here */
  CHECK_OK(pool_destroy(p));
}

/* ---- end_without_begin -------------------------------------------------- */

static atomic_int ewb_rc[3];

static void ewb_task(void *arg) {
  (void)arg;
  atomic_store(&ewb_rc[0], pool_blocking_end());
  atomic_store(&ewb_rc[1], pool_blocking_begin());
  atomic_store(&ewb_rc[2], pool_blocking_end());
}

static void case_end_without_begin(void) {
  if (WSPOOL_TEST_DEBUG_CHECKS) TEST_SKIP("a debug_checks build aborts on this misuse");
  pool_t *p = make_blocking_pool(1, 1);
  CHECK_OK(pool_submit(p, ewb_task, NULL));
  CHECK_OK(pool_wait_idle(p));
  CHECK_EQ(atomic_load(&ewb_rc[0]), EINVAL);
  CHECK_EQ(atomic_load(&ewb_rc[1]), 0);
  CHECK_EQ(atomic_load(&ewb_rc[2]), 0);
  CHECK_OK(pool_destroy(p));
}

/* ---- nested ---------------------------------------------------------------- */

static atomic_uint nest_second_ran;

static void nest_second(void *arg) {
  (void)arg;
  atomic_fetch_add(&nest_second_ran, 1);
}

static void nest_first(void *arg) {
  unsigned depth = (unsigned)(uintptr_t)arg;
  for (int i = 0; i < 1000; i++) {
    CHECK_OK(pool_blocking_begin());
    CHECK_OK(pool_blocking_end());
  }
  for (unsigned d = 0; d < depth; d++) CHECK_OK(pool_blocking_begin());
  /* Blocked here: the second task, queued behind this one on the lone
   * worker, runs only on a stand-in. */
  if (!wait_at_least(&nest_second_ran, 1)) FAIL("depth %u: no stand-in ran the next task\n", depth);
  for (unsigned d = 0; d < depth; d++) CHECK_OK(pool_blocking_end());
  if (!WSPOOL_TEST_DEBUG_CHECKS) CHECK_EQ(pool_blocking_end(), EINVAL); /* all closed */
}

static void case_nested(void) {
  pool_t *p = make_blocking_pool(1, 1);
  for (uintptr_t depth = 1; depth <= 4; depth++) {
    atomic_store(&nest_second_ran, 0);
    /* From outside: both go to the global queue, in order, and the lone
     * worker takes the first. */
    CHECK_OK(pool_submit(p, nest_first, (void *)depth));
    CHECK_OK(pool_submit(p, nest_second, NULL));
    CHECK_OK(pool_wait_idle(p));
    CHECK_EQ(atomic_load(&nest_second_ran), 1);
  }
  CHECK_OK(pool_destroy(p));
}

/* ---- limit ----------------------------------------------------------------- */

static atomic_int lim_rc;
static atomic_uint lim_seen;

static void lim_task(void *arg) {
  (void)arg;
  atomic_store(&lim_rc, pool_set_standin_limit(NULL, 5));
  atomic_store(&lim_seen, pool_standin_limit(NULL));
}

static void case_limit(void) {
  pool_t *p = make_blocking_pool(2, 3);
  CHECK_EQ(pool_set_standin_limit(p, POOL_MAX_THREADS + 1), EINVAL);
  CHECK_EQ(pool_standin_limit(p), 3);
  CHECK_OK(pool_set_standin_limit(p, POOL_MAX_THREADS));
  CHECK_EQ(pool_standin_limit(p), POOL_MAX_THREADS);
  CHECK_OK(pool_set_standin_limit(p, 0));
  CHECK_EQ(pool_standin_limit(p), 0);
  /* NULL from a task: the task's pool. */
  CHECK_OK(pool_submit(p, lim_task, NULL));
  CHECK_OK(pool_wait_idle(p));
  CHECK_OK(atomic_load(&lim_rc));
  CHECK_EQ(atomic_load(&lim_seen), 5);
  CHECK_EQ(pool_standin_limit(p), 5);
  /* NULL from outside: the default pool, whatever this one's limit. */
  pool_t *d = pool_default();
  CHECK(d != NULL);
  unsigned dl = pool_standin_limit(NULL);
  CHECK_EQ(dl, pool_standin_limit(d));
  CHECK_OK(pool_set_standin_limit(NULL, dl + 1));
  CHECK_EQ(pool_standin_limit(d), dl + 1);
  CHECK_OK(pool_set_standin_limit(NULL, dl));
  CHECK_EQ(pool_standin_limit(p), 5);
  CHECK_OK(pool_destroy(p));
}

/* ---- limit_env ----------------------------------------------------------- */

static pool_t *env_pool;

static void env_create(void *arg) {
  (void)arg;
  env_pool = make_pool(3);
}

static void case_limit_env(void) {
  char *saved = getenv("WSPOOL_STANDINS") ? strdup(getenv("WSPOOL_STANDINS")) : NULL;
  CHECK_OK(unsetenv("WSPOOL_STANDINS"));
  pool_t *p = make_pool(3);
  CHECK_EQ(pool_standin_limit(p), 12);
  CHECK_OK(pool_destroy(p));
  CHECK_OK(setenv("WSPOOL_STANDINS", "7", 1));
  p = make_pool(3);
  CHECK_EQ(pool_standin_limit(p), 7);
  CHECK_OK(pool_destroy(p));
  CHECK_OK(setenv("WSPOOL_STANDINS", "0", 1));
  p = make_pool(3);
  CHECK_EQ(pool_standin_limit(p), 0);
  CHECK_OK(pool_destroy(p));
  CHECK_OK(setenv("WSPOOL_STANDINS", "4097", 1));
  char err[512];
  capture_stderr(err, sizeof err, env_create, NULL);
  CHECK(strstr(err, "WSPOOL_STANDINS=\"4097\"") != NULL);
  CHECK_EQ(pool_standin_limit(env_pool), 12);
  CHECK_OK(pool_destroy(env_pool));
  if (saved) {
    CHECK_OK(setenv("WSPOOL_STANDINS", saved, 1));
    free(saved);
  } else {
    CHECK_OK(unsetenv("WSPOOL_STANDINS"));
  }
}

/* ---- hooks_and_names --------------------------------------------------------- */

enum { HK_MAX = 16 };
static atomic_uint hk_started[HK_MAX], hk_stopped[HK_MAX], hk_child_ran;
static atomic_int hk_child_id;
static char hk_child_name[16];

static void hk_start(pool_t *pool, unsigned worker, void *ctx) {
  (void)pool;
  (void)ctx;
  CHECK(worker < HK_MAX);
  CHECK_EQ(pool_worker_id(), worker);
  atomic_fetch_add(&hk_started[worker], 1);
}

static void hk_stop(pool_t *pool, unsigned worker, void *ctx) {
  (void)pool;
  (void)ctx;
  CHECK(worker < HK_MAX);
  CHECK_EQ(pool_worker_id(), worker);
  atomic_fetch_add(&hk_stopped[worker], 1);
}

static void hk_child(void *arg) {
  (void)arg;
  CHECK_OK(pthread_getname_np(pthread_self(), hk_child_name, sizeof hk_child_name));
  atomic_store(&hk_child_id, pool_worker_id());
  atomic_fetch_add(&hk_child_ran, 1); /* after the name: read once it is 1 */
}

static void hk_parent(void *arg) {
  (void)arg;
  pool_task_t t;
  CHECK_OK(pool_spawn(NULL, &t, hk_child, NULL));
  CHECK_OK(pool_blocking_begin());
  if (!wait_at_least(&hk_child_ran, 1)) FAIL("no stand-in ran the child\n");
  CHECK_OK(pool_blocking_end());
  CHECK_OK(pool_sync(&t));
}

static void case_hooks_and_names(void) {
  pool_config_t cfg;
  pool_config_default(&cfg);
  cfg.threads = 1;
  cfg.name = "blk";
  cfg.on_worker_start = hk_start;
  cfg.on_worker_stop = hk_stop;
  pool_t *p;
  CHECK_OK(pool_create(&p, &cfg));
  CHECK_OK(pool_set_standin_limit(p, 2));
  /* The lone worker blocked in a region, waiting for a child only a
   * stand-in can run: stand-in 0, id 1. */
  atomic_store(&hk_child_ran, 0);
  CHECK_OK(pool_submit(p, hk_parent, NULL));
  CHECK_OK(pool_wait_idle(p));
  CHECK_EQ(atomic_load(&hk_child_ran), 1);
  CHECK_EQ(atomic_load(&hk_child_id), 1);
  if (strcmp(hk_child_name, "blk-s0") != 0) FAIL("the stand-in is named \"%s\"\n", hk_child_name);
  CHECK_EQ(atomic_load(&hk_started[1]), 1);
  CHECK_OK(pool_destroy(p));
  for (unsigned i = 0; i < HK_MAX; i++)
    CHECK_EQ(atomic_load(&hk_started[i]), atomic_load(&hk_stopped[i]));
  CHECK_EQ(atomic_load(&hk_started[0]), 1);
  CHECK_EQ(atomic_load(&hk_started[1]), 1);
  CHECK_EQ(atomic_load(&hk_started[2]), 0);
}

TEST_MAIN(240, TEST_CASE(outside), TEST_CASE(end_without_begin), TEST_CASE(nested),
          TEST_CASE(limit), TEST_CASE(limit_env), TEST_CASE(hooks_and_names))
