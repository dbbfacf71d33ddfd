/* SPDX-License-Identifier: MIT */
/* Blocking regions and pool_destroy(): destroy runs every task, joins every
 * stand-in (awake, asleep or parked) and frees them (ASan's leak check in
 * the sanitizer builds).
 *
 *  while_blocked  pools of 1, 2 and 4 workers, limit 4: 40 tasks that block
 *                 20 ms in a region, half of them submitting another such
 *                 task from inside it; destroy is called at once, from main,
 *                 while they block: every task runs exactly once, and every
 *                 stand-in's start hook has had its stop hook.
 *  parked         stand-ins started (workers + limit tasks inside regions at
 *                 once), then left to park or sleep before destroy; rounds
 *                 of create, use, destroy.
 *  race           rounds: a pool of 2, limit 2, 300 tasks with regions of a
 *                 yield each, destroyed at once: stand-ins wake and park
 *                 while destroy drains and closes. Scaled by WSPOOL_STRESS.
 * No timing assertions. */
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <wspool.h>

#include "blocking_util.h"
#include "check.h"
#include "testutil.h"

static atomic_uint starts, stops;

static void on_start(pool_t *pool, unsigned worker, void *ctx) {
  (void)pool;
  (void)worker;
  (void)ctx;
  atomic_fetch_add(&starts, 1);
}

static void on_stop(pool_t *pool, unsigned worker, void *ctx) {
  (void)pool;
  (void)worker;
  (void)ctx;
  atomic_fetch_add(&stops, 1);
}

/* A pool with the counting hooks. */
static pool_t *hooked_pool(unsigned threads, unsigned limit) {
  pool_config_t cfg;
  pool_config_default(&cfg);
  cfg.threads = threads;
  cfg.on_worker_start = on_start;
  cfg.on_worker_stop = on_stop;
  pool_t *p;
  CHECK_OK(pool_create(&p, &cfg));
  CHECK_OK(pool_set_standin_limit(p, limit));
  return p;
}

/* Destroys p; every thread that started (workers and stand-ins) stopped. */
static void destroy_checked(pool_t *p) {
  CHECK_OK(pool_destroy(p));
  CHECK_EQ(atomic_load(&starts), atomic_load(&stops));
}

/* ---- while_blocked ----------------------------------------------------------- */

enum { WB_N = 40 };
static atomic_uint *wb_ran;

static void wb_task(void *arg) {
  uintptr_t i = (uintptr_t)arg;
  atomic_fetch_add(&wb_ran[i], 1);
  CHECK_OK(pool_blocking_begin());
  sleep_ms(20);
  /* Submitted from inside a region, during destroy's drain: it runs too. */
  if (i < WB_N / 2) CHECK_OK(pool_submit(NULL, wb_task, (void *)(i + WB_N)));
  CHECK_OK(pool_blocking_end());
}

static void case_while_blocked(void) {
  static const unsigned sizes[] = {1, 2, 4};
  for (size_t s = 0; s < 3; s++) {
    pool_t *p = hooked_pool(sizes[s], 4);
    wb_ran = flags_alloc(WB_N + WB_N / 2);
    for (uintptr_t i = 0; i < WB_N; i++) CHECK_OK(pool_submit(p, wb_task, (void *)i));
    destroy_checked(p);
    flags_check_once(wb_ran, WB_N + WB_N / 2, "task");
    free((void *)wb_ran);
  }
}

/* ---- parked ------------------------------------------------------------------ */

static atomic_uint pk_inside, pk_peak; /* inside regions now; the most ever */
static unsigned pk_k;

static void pk_task(void *arg) {
  (void)arg;
  CHECK_OK(pool_blocking_begin());
  atomic_max_u(&pk_peak, atomic_fetch_add(&pk_inside, 1) + 1);
  if (!wait_at_least(&pk_peak, pk_k)) FAIL("never %u tasks inside regions at once\n", pk_k);
  atomic_fetch_sub(&pk_inside, 1);
  CHECK_OK(pool_blocking_end());
}

static void case_parked(void) {
  unsigned long rounds = check_iters(4);
  for (unsigned long r = 0; r < rounds; r++) {
    unsigned n = 1 + (unsigned)(r % 2), limit = 3;
    pool_t *p = hooked_pool(n, limit);
    pk_k = n + limit;
    atomic_store(&pk_inside, 0);
    atomic_store(&pk_peak, 0);
    for (unsigned i = 0; i < 2 * pk_k; i++) CHECK_OK(pool_submit(p, pk_task, NULL));
    CHECK_OK(pool_wait_idle(p));
    CHECK_EQ(atomic_load(&pk_peak), pk_k);
    /* Every thread of the pool has run its start hook. */
    CHECK_EQ(atomic_load(&starts) - atomic_load(&stops), n + limit);
    sleep_ms(r % 3 == 0 ? 0 : 50); /* parked (after their idle search), or not yet */
    destroy_checked(p);
  }
}

/* ---- race -------------------------------------------------------------------- */

enum { RC_N = 300 };
static atomic_uint rc_ran;

static void rc_task(void *arg) {
  (void)arg;
  CHECK_OK(pool_blocking_begin());
  sched_yield();
  CHECK_OK(pool_blocking_end());
  atomic_fetch_add(&rc_ran, 1);
}

static void case_race(void) {
  unsigned long rounds = check_iters(60);
  for (unsigned long r = 0; r < rounds; r++) {
    pool_t *p = hooked_pool(2, 2);
    atomic_store(&rc_ran, 0);
    for (int i = 0; i < RC_N; i++) CHECK_OK(pool_submit(p, rc_task, NULL));
    destroy_checked(p);
    CHECK_EQ(atomic_load(&rc_ran), RC_N);
  }
}

TEST_MAIN(300, TEST_CASE(while_blocked), TEST_CASE(parked), TEST_CASE(race))
