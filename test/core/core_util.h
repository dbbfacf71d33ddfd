/* SPDX-License-Identifier: MIT */
/* Helpers shared by the core tests: exactly-once flag arrays and waiting
 * until every worker of a pool is asleep. */
#ifndef WSPOOL_TEST_CORE_UTIL_H
#define WSPOOL_TEST_CORE_UTIL_H

#include <stdatomic.h>
#include <time.h>
#include <wspool.h>

#include "check.h"

/* n zeroed counters, one per task. */
static inline atomic_uint *flags_alloc(size_t n) {
  atomic_uint *f = calloc(n ? n : 1, sizeof(atomic_uint));
  CHECK(f);
  return f;
}

/* Every one of the n tasks counted exactly once. */
static inline void flags_check_once(atomic_uint *f, size_t n, const char *what) {
  for (size_t i = 0; i < n; i++) {
    unsigned v = atomic_load(&f[i]);
    if (v != 1) {
      fprintf(stderr, "%s %zu ran %u times\n", what, i, v);
      CHECK_EQ(v, 1);
    }
  }
}

static inline void sleep_ms(unsigned ms) {
  struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

/* Let every worker pass its spin phase and go to sleep: wait 30 ms, then
 * until each worker has slept at least once and its counters stand still
 * over 2 ms (a spinning worker keeps counting failed steals). This only
 * arranges the situation; nothing is asserted on timing. */
static inline void wait_all_asleep(pool_t *p) {
  unsigned n = pool_threads(p);
  sleep_ms(30);
  for (unsigned w = 0; w < n; w++) {
    for (;;) {
      pool_worker_stats_t a, b;
      CHECK_OK(pool_worker_stats(p, w, &a));
      sleep_ms(2);
      CHECK_OK(pool_worker_stats(p, w, &b));
      if (b.sleeps > 0 && !memcmp(&a, &b, sizeof a)) break;
    }
  }
}

#endif
