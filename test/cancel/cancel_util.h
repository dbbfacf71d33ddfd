/* SPDX-License-Identifier: MIT */
/* Helpers shared by the cancellation tests (suite 'cancel'): the skip
 * counters of pool_worker_stats_t summed over a pool's workers (or over
 * several pools), and a check that they reached an exact expected value.
 *
 * The counters are per-worker relaxed counters updated by the worker that
 * skipped, so right after a wait they may still be catching up for an
 * instant (include/wspool.h, \ref stats). skip_expect() therefore reads
 * them until they reach the expected totals, bounded in time (a liveness
 * bound, not a timing assertion: the totals must get there at all), then
 * checks that they are exactly the expected ones. Counters only grow, so a
 * double count shows up as a total above the expected one, at this check
 * or at a later one: the cases keep cumulative expectations against a
 * base read once, so nothing a round miscounts is forgiven later. */
#ifndef WSPOOL_TEST_CANCEL_UTIL_H
#define WSPOOL_TEST_CANCEL_UTIL_H

#include <inttypes.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
#include <wspool.h>

#include "check.h"
#include "testutil.h"

typedef struct skip_count {
  uint64_t skipped; /* group children and join halves */
  uint64_t items;   /* loop items */
} skip_count;

/* The sums over the workers of every pool in pools[0..n). */
static inline skip_count skip_read_n(pool_t *const *pools, size_t n) {
  skip_count c = {0, 0};
  for (size_t k = 0; k < n; k++) {
    unsigned nt = pool_threads(pools[k]);
    for (unsigned w = 0; w < nt; w++) {
      pool_worker_stats_t s;
      CHECK_OK(pool_worker_stats(pools[k], w, &s));
      c.skipped += s.skipped;
      c.items += s.skipped_items;
    }
  }
  return c;
}

static inline skip_count skip_read(pool_t *p) { return skip_read_n(&p, 1); }

static inline double skip_now_(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The totals of pools[0..n) minus `base` must be exactly `skipped` and
 * `items`: read until they reach them (at most 20 s times WSPOOL_STRESS,
 * far beyond any catching up), then compare. */
static inline void skip_expect_n_(pool_t *const *pools, size_t n, skip_count base,
                                  uint64_t skipped, uint64_t items, const char *what,
                                  const char *file, int line) {
  double deadline = skip_now_() + 20.0 * (double)test_stress_factor();
  skip_count c;
  for (unsigned spin = 0;; spin++) {
    c = skip_read_n(pools, n);
    if (c.skipped - base.skipped >= skipped && c.items - base.items >= items) break;
    if (skip_now_() > deadline) break;
    if (spin < 100)
      sched_yield();
    else
      sleep_ms(1);
  }
  uint64_t ds = c.skipped - base.skipped, di = c.items - base.items;
  if (ds != skipped || di != items) {
    fprintf(stderr,
            "%s:%d: %s: skip stats: skipped %" PRIu64 " (expected %" PRIu64
            "), skipped_items %" PRIu64 " (expected %" PRIu64 ")\n",
            file, line, what, ds, skipped, di, items);
    test_fail_exit_();
  }
}

#define skip_expect_n(pools, n, base, skipped, items, what) \
  skip_expect_n_((pools), (n), (base), (skipped), (items), (what), __FILE__, __LINE__)
#define skip_expect(pool, base, skipped, items, what) \
  skip_expect_n_(&(pool), 1, (base), (skipped), (items), (what), __FILE__, __LINE__)

/* A little work that the compiler cannot remove: a few hundred ns to a few
 * us, so that children overlap with cancels. */
static atomic_uint busy_sink_;
static inline void busy_work(unsigned iters) {
  unsigned x = 0;
  for (unsigned i = 0; i < iters; i++) {
    x = x * 31u + i;
    __asm__ __volatile__("" : "+r"(x)); /* keeps the loop */
  }
  atomic_store_explicit(&busy_sink_, x, memory_order_relaxed);
}

#endif
