/* SPDX-License-Identifier: MIT */
/* Thread-creation failure (include/wspool.h, "Faults and fork()" and "The
 * NULL pool"), injected with fault.h's pthread_create interposer.
 *
 *  1. pool_create fails at every worker index (1, 2, 4 and 5 workers,
 *     unbound and POOL_BIND_CORE): EAGAIN, *out untouched, the process is
 *     back to the threads it had and to the allocations it had before (nothing
 *     leaked); a create right after works.
 *  2. The default pool after a failed creation: each NULL-pool call while
 *     creation keeps failing returns EAGAIN (pool_submit, pool_wait_idle,
 *     pool_parallel_for, pool_parallel_reduce, pool_spawn, pool_join,
 *     pool_group_init, pool_worker_stats; pool_default() NULL,
 *     pool_threads() 0), nothing runs, and once threads can be created
 *     again the next call makes the pool and works: the failure is not
 *     remembered.
 * Cases: default_pool_retries (first: the default pool must not exist
 * yet), create_fails. Skipped (77) under sanitizers (fault.h) and under an
 * emulator. */
#include "fault.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <wspool.h>

#include "check.h"
#include "testutil.h"

static atomic_long ran;
static void count(void *arg) {
  (void)arg;
  atomic_fetch_add(&ran, 1);
}
static void body(size_t b, size_t e, void *ctx) {
  (void)ctx;
  atomic_fetch_add(&ran, (long)(e - b));
}
static long threads_now(void) { return proc_status_field("Threads"); }

/* The main thread, and the default pool's workers once it exists. */
static long base_threads = 1;

static void wait_base_threads(void) {
  /* Joined threads leave /proc promptly; allow a moment. */
  for (int i = 0; i < 1000 && threads_now() != base_threads; i++) sleep_ms(1);
  CHECK_EQ(threads_now(), base_threads);
}

static void case_create_fails(void) {
  static const unsigned counts[] = {1, 2, 4, 5};
  for (int bind = 0; bind < 2; bind++) {
    pool_config_t cfg;
    pool_config_default(&cfg);
    cfg.bind = bind ? POOL_BIND_CORE : POOL_BIND_NONE;
    /* Warm up: load the topology, fill the free list of pool structs. */
    cfg.threads = 2;
    pool_t *p;
    CHECK_OK(pool_create(&p, &cfg));
    CHECK_OK(pool_destroy(p));
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
      cfg.threads = counts[c];
      for (unsigned i = 1; i <= counts[c]; i++) {
        wait_base_threads();
        long live = fault_live();
        pool_t *out = (pool_t *)&out; /* must stay untouched */
        fault_thread_arm(i);
        CHECK_EQ(pool_create(&out, &cfg), EAGAIN);
        fault_thread_arm(0);
        CHECK(out == (pool_t *)&out);
        wait_base_threads();
        CHECK_EQ(fault_live(), live);
        CHECK_OK(pool_create(&p, &cfg));
        atomic_store(&ran, 0);
        CHECK_OK(pool_submit(p, count, NULL));
        CHECK_OK(pool_destroy(p));
        CHECK_EQ(atomic_load(&ran), 1);
      }
    }
  }
}

static void case_default_pool_retries(void) {
  atomic_store(&ran, 0);
  pool_task_t t;
  pool_group_t g;
  pool_worker_stats_t s;
  long zero = 0, out = 0;
  pool_reducer_t r = {sizeof(long), &zero, len_body, len_combine, NULL, 0};
  for (int round = 0; round < 3; round++) {
    /* Each call tries again: fail its first thread each time. */
    fault_thread_arm(1);
    CHECK_EQ(pool_submit(NULL, count, NULL), EAGAIN);
    fault_thread_arm(1);
    CHECK_EQ(pool_wait_idle(NULL), EAGAIN);
    fault_thread_arm(1);
    CHECK_EQ(pool_parallel_for(NULL, 0, 10, 1, body, NULL), EAGAIN);
    fault_thread_arm(1);
    CHECK_EQ(pool_parallel_reduce(NULL, 0, 10, 1, &r, &out), EAGAIN);
    fault_thread_arm(1);
    CHECK_EQ(pool_spawn(NULL, &t, count, NULL), EAGAIN);
    fault_thread_arm(1);
    CHECK_EQ(pool_join(NULL, count, NULL, count, NULL), EAGAIN);
    fault_thread_arm(1);
    CHECK_EQ(pool_group_init(&g, NULL), EAGAIN);
    fault_thread_arm(1);
    CHECK_EQ(pool_worker_stats(NULL, 0, &s), EAGAIN);
    fault_thread_arm(1);
    CHECK(pool_default() == NULL);
    fault_thread_arm(1);
    CHECK_EQ(pool_threads(NULL), 0);
    fault_thread_arm(0);
    wait_base_threads();
    CHECK_EQ(atomic_load(&ran), 0);
  }
  /* Threads can be created again: the next call makes the pool. */
  CHECK_OK(pool_submit(NULL, count, NULL));
  CHECK_OK(pool_wait_idle(NULL));
  CHECK_EQ(atomic_load(&ran), 1);
  CHECK_OK(pool_parallel_for(NULL, 0, 100, 1, body, NULL));
  CHECK_EQ(atomic_load(&ran), 101);
  CHECK(pool_default() != NULL);
  base_threads = 1 + pool_threads(NULL);
}

static const char *skip_reason(void) {
  /* Counts the process's threads in /proc/self/task, where qemu-user
   * adds threads of its own. */
  if (getenv("WSPOOL_TEST_EMULATED")) return "thread counts include the emulator's under qemu-user";
  return FAULT_AVAILABLE ? NULL : FAULT_UNAVAILABLE;
}

TEST_MAIN_WITH(skip_reason(), NULL, 120, TEST_CASE(default_pool_retries), TEST_CASE(create_fails))
