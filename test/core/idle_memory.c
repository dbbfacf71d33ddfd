/* SPDX-License-Identifier: MIT */
/* Memory given back (docs/design.md 3): after a burst of 10^7 outside
 * submissions from 4 producer threads into a 2-worker pool whose workers
 * are busy (so the global queue holds nearly all of them at once), the
 * pool, once idle, returns its grown queue memory: the process's resident
 * set comes back within 1 MiB of what it was with the fresh pool. A count
 * of memory, not a time: the wait for it is bounded (the watchdog), and
 * what it waits for is the last worker's idle trim (worker.c).
 * Skipped under the sanitizers, whose allocators keep freed memory, and
 * under qemu-user, whose own memory is in the RSS.
 * Case: burst. */
#include <pthread.h>
#include <stdatomic.h>
#include <wspool.h>

#include "check.h"
#include "testutil.h"

enum { PRODUCERS = 4, WORKERS = 2 };
static const long BURST = 10000000;

static atomic_long ran;
static atomic_int release_workers;
static pool_t *pool;

static void tiny(void *arg) {
  (void)arg;
  atomic_fetch_add_explicit(&ran, 1, memory_order_relaxed);
}

static void hold(void *arg) {
  (void)arg;
  while (!atomic_load(&release_workers)) sleep_ms(1);
}

static void *produce(void *arg) {
  long n = (long)(intptr_t)arg;
  for (long i = 0; i < n; i++) CHECK_OK(pool_submit(pool, tiny, NULL));
  return NULL;
}

static long rss_kb(void) { return proc_status_field("VmRSS"); }

static void case_burst(void) {
  if (TEST_UNDER_SANITIZER) TEST_SKIP("the sanitizers' allocators keep freed memory");
  if (getenv("WSPOOL_TEST_EMULATED")) TEST_SKIP("the RSS is qemu-user's too (its code cache)");
  pool = make_pool(WORKERS);
  /* The fresh pool, idle, with the producers' threads already made once
   * (their stacks and malloc arenas are the process's, not the pool's). */
  pthread_t th[PRODUCERS];
  for (int i = 0; i < PRODUCERS; i++) CHECK_OK(pthread_create(&th[i], NULL, produce, (void *)0));
  for (int i = 0; i < PRODUCERS; i++) CHECK_OK(pthread_join(th[i], NULL));
  wait_all_asleep(pool);
  long fresh = rss_kb();

  for (int i = 0; i < WORKERS; i++) CHECK_OK(pool_submit(pool, hold, NULL));
  for (int i = 0; i < PRODUCERS; i++)
    CHECK_OK(pthread_create(&th[i], NULL, produce, (void *)(intptr_t)(BURST / PRODUCERS)));
  for (int i = 0; i < PRODUCERS; i++) CHECK_OK(pthread_join(th[i], NULL));
  long full = rss_kb();
  atomic_store(&release_workers, 1);
  CHECK_OK(pool_wait_idle(pool));
  CHECK_EQ(atomic_load(&ran), BURST);

  long now = rss_kb();
  while (now > fresh + 1024) {
    sleep_ms(20);
    now = rss_kb();
  }
  fprintf(stderr, "RSS: fresh %ld kB, after the burst %ld kB, idle %ld kB\n", fresh, full, now);
  CHECK_OK(pool_destroy(pool));
}

TEST_MAIN(60, TEST_CASE(burst))
