/* SPDX-License-Identifier: MIT */
/* Helpers shared by the isolation tests (suite 'isolate'; include/wspool.h,
 * pool_isolate(); docs/design.md 7.5): what a thread is running, so that a
 * task can tell, without blocking, that it was started where isolation
 * forbids it.
 *
 * Every task of an isolated computation (its body, and the children,
 * frames and loop pieces it spawns, wherever they run) raises the calling
 * thread's `iso_depth` while it runs; the thread that holds the mutex M
 * also sets `iso_holds`. A task from outside the computation that finds
 * either set on its own thread was started by a wait of the isolated
 * computation (it runs on top of that computation's stack): with M held,
 * the deadlock of Rayon's issue #592 if it locked M, so it records a
 * violation and returns instead. Never blocks on anything the test itself
 * holds, so a broken isolation shows as a count, never as a hang. */
#ifndef WSPOOL_TEST_ISOLATE_UTIL_H
#define WSPOOL_TEST_ISOLATE_UTIL_H

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <wspool.h>

#include "check.h"
#include "testutil.h"

static __thread int iso_depth; /* isolated tasks running on this thread */
static __thread int iso_holds; /* this thread holds M */

static inline void iso_enter(void) { iso_depth++; }
static inline void iso_leave(void) { iso_depth--; }
static inline int iso_here(void) { return iso_depth > 0 || iso_holds; }

/* Under a sanitizer or an emulator (test/meson.build: WSPOOL_TEST_EMULATED)
 * the runtime is several times slower: the long stress loops run `slow`
 * rounds there instead of `fast` (both times WSPOOL_STRESS). */
static inline unsigned long iso_rounds(unsigned long fast, unsigned long slow) {
  const char *e = getenv("WSPOOL_TEST_EMULATED");
  int slow_build = TEST_UNDER_SANITIZER || (e && *e && *e != '0');
  return check_iters(slow_build ? slow : fast);
}

/* A little work the compiler cannot remove: about a nanosecond an
 * iteration. */
static atomic_uint iso_sink_;
static inline void iso_busy(unsigned iters) {
  unsigned x = 0;
  for (unsigned i = 0; i < iters; i++) {
    x = x * 31u + i;
    __asm__ __volatile__("" : "+r"(x));
  }
  atomic_store_explicit(&iso_sink_, x, memory_order_relaxed);
}

static inline double iso_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Polls until *v >= target; false after 30 s times WSPOOL_STRESS (a
 * liveness bound, never a timing figure). */
static inline int iso_wait_until(atomic_uint *v, unsigned target) {
  double end = iso_now() + 30.0 * (double)test_stress_factor();
  for (unsigned spin = 0; atomic_load(v) < target; spin++) {
    if (spin % 256 == 0 && iso_now() > end) return 0;
    sched_yield();
  }
  return 1;
}

#endif
