/* SPDX-License-Identifier: MIT */
/* pool_destroy while outside threads are blocked on the pool in pool_sync
 * and pool_group_wait: the task they wait for keeps running until destroy
 * has visibly begun (an outside submit is refused with ESHUTDOWN), so the
 * waiters are certainly still blocked inside the pool when destroy drains.
 * Destroy must release them before freeing the pool (ASan would report the
 * use after free; a hang trips the watchdog). One case: blocked_waiters. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <wspool.h>

#include "check.h"
#include "testutil.h"

static pool_t *pool;
static atomic_int ran, waiters_ready, closing;

static void nothing(void *arg) { (void)arg; }

/* An outside thread: destroy has begun once its submissions are refused
 * (a worker's own submissions are still accepted during the drain). */
static void *prober(void *arg) {
  (void)arg;
  while (pool_submit(pool, nothing, NULL) != ESHUTDOWN) sched_yield();
  atomic_store(&closing, 1);
  return NULL;
}

static void hold_until_destroy(void *arg) {
  (void)arg;
  while (!atomic_load(&closing)) sched_yield();
  atomic_fetch_add(&ran, 1);
}

static void *sync_waiter(void *arg) {
  (void)arg;
  pool_task_t t;
  CHECK_OK(pool_spawn(pool, &t, hold_until_destroy, NULL));
  atomic_fetch_add(&waiters_ready, 1);
  CHECK_OK(pool_sync(&t));
  return NULL;
}

static void *group_waiter(void *arg) {
  (void)arg;
  pool_group_t g;
  CHECK_OK(pool_group_init(&g, pool));
  CHECK_OK(pool_group_spawn(&g, hold_until_destroy, NULL));
  atomic_fetch_add(&waiters_ready, 1);
  CHECK_OK(pool_group_wait(&g));
  return NULL;
}

static void case_blocked_waiters(void) {
  unsigned long rounds = check_iters(50);
  for (unsigned long r = 0; r < rounds; r++) {
    pool = make_pool(1 + (unsigned)(r % 3));
    atomic_store(&ran, 0);
    atomic_store(&waiters_ready, 0);
    atomic_store(&closing, 0);
    pthread_t a, b, c;
    CHECK_OK(pthread_create(&a, NULL, sync_waiter, NULL));
    CHECK_OK(pthread_create(&b, NULL, group_waiter, NULL));
    while (atomic_load(&waiters_ready) < 2) sched_yield();
    CHECK_OK(pthread_create(&c, NULL, prober, NULL));
    CHECK_OK(pool_destroy(pool));
    CHECK_OK(pthread_join(c, NULL));
    CHECK_EQ(atomic_load(&ran), 2);
    CHECK_OK(pthread_join(a, NULL));
    CHECK_OK(pthread_join(b, NULL));
  }
}

TEST_MAIN(60, TEST_CASE(blocked_waiters))
