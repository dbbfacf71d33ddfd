/* SPDX-License-Identifier: MIT */
/* Shared helpers for wspool's tests: exact checks, a watchdog, stress scaling.
 * Every test is a program that exits 0 on success, 1 on failure, 77 when
 * it cannot run here (meson's "skipped"). */
#ifndef WSPOOL_TEST_CHECK_H
#define WSPOOL_TEST_CHECK_H

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHECK(cond)                                                                  \
  do {                                                                               \
    if (!(cond)) {                                                                   \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);       \
      exit(1);                                                                       \
    }                                                                                \
  } while (0)

#define CHECK_EQ(a, b)                                                               \
  do {                                                                               \
    long long check_a_ = (long long)(a), check_b_ = (long long)(b);                  \
    if (check_a_ != check_b_) {                                                      \
      fprintf(stderr, "%s:%d: CHECK_EQ failed: %s == %lld, %s == %lld\n", __FILE__,  \
              __LINE__, #a, check_a_, #b, check_b_);                                 \
      exit(1);                                                                       \
    }                                                                                \
  } while (0)

/* An API call that must return 0. */
#define CHECK_OK(call) CHECK_EQ((call), 0)

static void check_watchdog_fired(int sig) {
  (void)sig;
  static const char msg[] = "watchdog: test hung (a lost wake-up or deadlock)\n";
  if (write(2, msg, sizeof msg - 1) < 0) {
  }
  _exit(1);
}

/* Fail the test, instead of hanging CI, if it runs longer than `seconds`
 * (scaled by WSPOOL_STRESS like the iteration counts). */
static inline void check_watchdog(unsigned seconds) {
  const char *s = getenv("WSPOOL_STRESS");
  unsigned long m = s ? strtoul(s, NULL, 10) : 1;
  if (m < 1) m = 1;
  signal(SIGALRM, check_watchdog_fired);
  alarm((unsigned)(seconds * m));
}

/* Iteration counts for stress tests: `base` times WSPOOL_STRESS (default 1),
 * so CI stays fast and a long soak is one variable away. */
static inline unsigned long check_iters(unsigned long base) {
  const char *s = getenv("WSPOOL_STRESS");
  unsigned long m = s ? strtoul(s, NULL, 10) : 1;
  return base * (m < 1 ? 1 : m);
}

#endif
