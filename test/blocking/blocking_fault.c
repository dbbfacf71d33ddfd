/* SPDX-License-Identifier: MIT */
/* A stand-in that cannot be started (include/wspool.h, pool_blocking_begin:
 * "not an error"), injected with the fault suite's interposers
 * (test/fault/fault.h).
 *
 *  thread_fails  1 worker: the stand-in's pthread_create fails: the region
 *                returns 0 and is not served (nothing else runs meanwhile);
 *                the next region starts the stand-in in the same slot
 *                (id 1) and it runs the task queued behind.
 *  alloc_fails   1 worker: the k-th allocation of a region that starts the
 *                first stand-in fails, for every k until one succeeds: 0
 *                each time, the next region works, pool_destroy() joins and
 *                frees everything (the interposer's count of live blocks is
 *                back where it was).
 * Skipped (77) under sanitizers, which replace the interposed calls. */
#include "fault/fault.h"

#include <stdatomic.h>
#include <stdint.h>
#include <wspool.h>

#include "blocking_util.h"
#include "check.h"
#include "testutil.h"

static atomic_uint queued_ran, queued_id;
static atomic_int armed_rc, hit;
static long arm_alloc; /* 0: pthread_create fails instead; -1: nothing fails */

static void queued(void *arg) {
  (void)arg;
  atomic_store(&queued_id, (unsigned)pool_worker_id());
  atomic_fetch_add(&queued_ran, 1);
}

/* The first region fails to get a stand-in; the second gets one, which
 * runs the child spawned before it. */
static void blocker(void *arg) {
  (void)arg;
  if (arm_alloc > 0)
    fault_alloc_arm(arm_alloc);
  else if (arm_alloc == 0)
    fault_thread_arm(1);
  atomic_store(&armed_rc, pool_blocking_begin());
  fault_alloc_arm(0);
  fault_thread_arm(0);
  atomic_store(&hit, arm_alloc > 0 ? fault_alloc_failed() : arm_alloc == 0);
  CHECK_OK(pool_blocking_end());
  pool_task_t t;
  CHECK_OK(pool_spawn(NULL, &t, queued, NULL));
  CHECK_OK(pool_blocking_begin());
  if (!wait_at_least(&queued_ran, 1)) FAIL("no stand-in after the failed one\n");
  CHECK_OK(pool_blocking_end());
  CHECK_OK(pool_sync(&t));
}

/* One pool, one blocker; whether the injected failure happened. */
static int one_run(long k) {
  long live = fault_live();
  bool first = k < 0;
  pool_t *p = make_blocking_pool(1, 2);
  arm_alloc = k;
  atomic_store(&queued_ran, 0);
  CHECK_OK(pool_submit(p, blocker, NULL));
  CHECK_OK(pool_wait_idle(p));
  CHECK_OK(atomic_load(&armed_rc));
  CHECK_EQ(atomic_load(&queued_ran), 1);
  /* The first slot's stand-in, unless it was started by the first region
   * and the task queued behind ran on the worker. */
  if (k >= 0) CHECK_EQ(atomic_load(&queued_id), 1);
  CHECK_OK(pool_destroy(p));
  if (!first && fault_live() != live) FAIL("k %ld: %ld blocks leaked\n", k, fault_live() - live);
  return atomic_load(&hit);
}

/* The same once with no failure, so that what the process keeps for
 * good (the pool struct on the free list, this thread's lane and visitor
 * slot) is there before the counts. */
static void warm(void) { (void)one_run(-1); }

static void case_thread_fails(void) {
  if (!FAULT_AVAILABLE) TEST_SKIP(FAULT_UNAVAILABLE);
  warm();
  CHECK_EQ(one_run(0), 1);
}

static void case_alloc_fails(void) {
  if (!FAULT_AVAILABLE) TEST_SKIP(FAULT_UNAVAILABLE);
  warm();
  long k = 1;
  while (one_run(k)) {
    if (++k > 1000) FAIL("a region allocates more than 1000 times\n");
  }
  CHECK(k > 3); /* the slots, the stand-in's block, its victims at least */
}

TEST_MAIN(240, TEST_CASE(thread_fails), TEST_CASE(alloc_fails))
