/* SPDX-License-Identifier: MIT */
/* Shared by every test program: exact checks, the runner with its named
 * cases and watchdog (harness.h), stress scaling, and which sanitizer the
 * build runs under. A program exits 0 on success, 1 on failure, 77 when it
 * cannot run here (meson's "skipped"). C11 and C++17. */
#ifndef WSPOOL_TEST_CHECK_H
#define WSPOOL_TEST_CHECK_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define CHECK(cond)                                                                  \
  do {                                                                               \
    if (!(cond)) {                                                                   \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);       \
      test_fail_exit_();                                                             \
    }                                                                                \
  } while (0)

#define CHECK_EQ(a, b)                                                               \
  do {                                                                               \
    long long check_a_ = (long long)(a), check_b_ = (long long)(b);                  \
    if (check_a_ != check_b_) {                                                      \
      fprintf(stderr, "%s:%d: CHECK_EQ failed: %s == %lld, %s == %lld\n", __FILE__,  \
              __LINE__, #a, check_a_, #b, check_b_);                                 \
      test_fail_exit_();                                                             \
    }                                                                                \
  } while (0)

/* An API call that must return 0. */
#define CHECK_OK(call) CHECK_EQ((call), 0)

/* A failure found by the test's own logic: the message (printf-style),
 * then the exit of a failed check. */
#define FAIL(...)                                       \
  do {                                                  \
    fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);     \
    fprintf(stderr, __VA_ARGS__);                       \
    test_fail_exit_();                                  \
  } while (0)

/* Iteration counts for stress tests: `base` times WSPOOL_STRESS (default 1),
 * so CI stays fast and a long soak is one variable away. */
static inline unsigned long check_iters(unsigned long base) { return base * test_stress_factor(); }

/* The sanitizer this build runs under (GCC's __SANITIZE_* macros, clang's
 * __has_feature): each 1 or 0. */
#ifdef __has_feature
#define TEST_HAS_FEATURE_(x) __has_feature(x)
#else
#define TEST_HAS_FEATURE_(x) 0
#endif
#if defined(__SANITIZE_ADDRESS__) || TEST_HAS_FEATURE_(address_sanitizer)
#define TEST_UNDER_ASAN 1
#else
#define TEST_UNDER_ASAN 0
#endif
#if defined(__SANITIZE_THREAD__) || TEST_HAS_FEATURE_(thread_sanitizer)
#define TEST_UNDER_TSAN 1
#else
#define TEST_UNDER_TSAN 0
#endif
#if TEST_UNDER_ASAN || TEST_UNDER_TSAN || TEST_HAS_FEATURE_(memory_sanitizer)
#define TEST_UNDER_SANITIZER 1
#else
#define TEST_UNDER_SANITIZER 0
#endif

#endif
