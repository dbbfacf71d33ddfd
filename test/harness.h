/* SPDX-License-Identifier: MIT */
/* The runner every C and C++ test program shares (included by check.h):
 * named cases, in the manner of libuv's test list. A program defines each
 * case as `static void case_NAME(void)` and lists them:
 *
 *   TEST_MAIN(240, TEST_CASE(model), TEST_CASE(steal_all))
 *
 *   prog                    every case, in the list's order
 *   prog NAME...            only the cases named (in the list's order)
 *   WSPOOL_TEST_CASE=NAME   the same as one argument, when there is none
 *   prog --list             the names, one a line
 * A name the program does not have prints the list and exits 1. A
 * TEST_CASE_NAMED case runs only when named: another mode of the program
 * (meson runs it as a test of its own) or a case a re-executed child runs.
 *
 * Each case run prints "ok N NAME" on stdout (N: its place in the list), or
 * "ok N NAME # SKIP why" when it called TEST_SKIP. A failed check (check.h)
 * or the watchdog prints "not ok N NAME" and exits 1 at once; a child
 * process a case forks prints no such line (its parent reports it). The
 * exit status is 0, or 77 (meson's "skipped") when every case run skipped.
 *
 * The watchdog is armed once, before the first case, for the whole run:
 * the program's bound, whichever cases it runs. Written for C11 and C++17. */
#ifndef WSPOOL_TEST_HARNESS_H
#define WSPOOL_TEST_HARNESS_H

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wspool.h>

typedef struct test_case {
  const char *name;
  void (*fn)(void);
  int only_named; /* run only when named */
} test_case;

#define TEST_CASE(name) {#name, case_##name, 0}
#define TEST_CASE_NAMED(name) {#name, case_##name, 1}

/* The program's main. TEST_MAIN_WITH adds `skip`, an expression giving
 * why no case can run in this build or on this machine (const char *, NULL
 * when they can: every case is then reported skipped without running), and
 * `setup`, a function run once before the first case (or NULL). */
#define TEST_MAIN_WITH(skip, setup, watchdog_seconds, ...)                                  \
  int main(int argc, char **argv) {                                                         \
    static const test_case test_cases_[] = {__VA_ARGS__};                                   \
    return test_main(argc, argv, test_cases_, sizeof test_cases_ / sizeof test_cases_[0],   \
                     (watchdog_seconds), (skip), (setup));                                  \
  }
#define TEST_MAIN(watchdog_seconds, ...) TEST_MAIN_WITH(NULL, NULL, watchdog_seconds, __VA_ARGS__)

/* Ends the current case as skipped; `why` (a string that outlives the
 * case) says what this build or machine lacks. */
#define TEST_SKIP(why)    \
  do {                    \
    test_skip_(why);      \
    return;               \
  } while (0)

typedef struct test_state_ {
  pid_t pid;            /* the runner's process */
  const char *argv0;    /* for a case that re-executes the program */
  const char *skip_why; /* set by TEST_SKIP in the current case */
  char fail_line[192];  /* "not ok N NAME\n" of the current case */
  size_t fail_len;      /* 0 between cases */
} test_state_;

static inline test_state_ *test_state(void) {
  static test_state_ s;
  return &s;
}

static inline void test_skip_(const char *why) { test_state()->skip_why = why; }

/* The program's path as it was started (argv[0]). */
static inline const char *test_argv0(void) { return test_state()->argv0; }

/* "not ok" for the current case, from the runner's process only (a forked
 * child's failure reaches its parent as an exit status). Async-signal-safe. */
static inline void test_report_failure_(void) {
  test_state_ *s = test_state();
  if (s->fail_len && getpid() == s->pid && write(1, s->fail_line, s->fail_len) < 0) {
  }
}

/* Every failed check ends here. */
static inline void test_fail_exit_(void) {
  fflush(stdout);
  test_report_failure_();
  exit(1);
}

static inline void check_watchdog_fired_(int sig) {
  (void)sig;
  static const char msg[] = "watchdog: test hung (a lost wake-up or deadlock)\n";
  if (write(2, msg, sizeof msg - 1) < 0) {
  }
  /* Where: every live pool's sleepers, epochs and each worker's state
   * (async-signal-safe). */
  pool_dump_state(2);
  test_report_failure_();
  _exit(1);
}

/* Fail the test, instead of hanging CI, if it runs longer than `seconds`
 * (scaled by WSPOOL_STRESS like the iteration counts). The runner arms it
 * once; a forked child that needs one arms its own (alarms are not
 * inherited). */
/* WSPOOL_STRESS, at least 1: how many times longer stress tests run (their
 * iteration counts, check.h's check_iters, and the watchdog below). */
static inline unsigned long test_stress_factor(void) {
  const char *s = getenv("WSPOOL_STRESS");
  unsigned long m = s ? strtoul(s, NULL, 10) : 1;
  return m < 1 ? 1 : m;
}

static inline void check_watchdog(unsigned seconds) {
  signal(SIGALRM, check_watchdog_fired_);
  alarm((unsigned)(seconds * test_stress_factor()));
}

static inline void test_list_(FILE *f, const test_case *cases, size_t n) {
  for (size_t i = 0; i < n; i++) fprintf(f, "%s\n", cases[i].name);
}

/* Marks the case called `name` in `want`; 0 if there is none. */
static inline int test_select_(const char *name, const test_case *cases, size_t n,
                               unsigned char *want) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(cases[i].name, name)) {
      want[i] = 1;
      return 1;
    }
  return 0;
}

static inline int test_main(int argc, char **argv, const test_case *cases, size_t n,
                            unsigned watchdog_seconds, const char *skip_all,
                            void (*setup)(void)) {
  if (argc > 1 && !strcmp(argv[1], "--list")) {
    test_list_(stdout, cases, n);
    return 0;
  }
  unsigned char *want = (unsigned char *)calloc(n, 1);
  if (!want) return 1;
  const char *env = getenv("WSPOOL_TEST_CASE");
  const char *unknown = NULL;
  if (argc > 1) {
    for (int i = 1; i < argc && !unknown; i++)
      if (!test_select_(argv[i], cases, n, want)) unknown = argv[i];
  } else if (env && *env) {
    if (!test_select_(env, cases, n, want)) unknown = env;
  } else {
    for (size_t i = 0; i < n; i++) want[i] = !cases[i].only_named;
  }
  if (unknown) {
    fprintf(stderr, "%s: no case \"%s\"; the cases are:\n", argv[0], unknown);
    test_list_(stderr, cases, n);
    free(want);
    return 1;
  }

  test_state_ *s = test_state();
  s->pid = getpid();
  s->argv0 = argv[0];
  check_watchdog(watchdog_seconds);
  if (!skip_all && setup) setup();
  size_t ran = 0, skipped = 0;
  for (size_t i = 0; i < n; i++) {
    if (!want[i]) continue;
    int len = snprintf(s->fail_line, sizeof s->fail_line, "not ok %zu %s\n", i + 1, cases[i].name);
    s->fail_len = len > 0 && (size_t)len < sizeof s->fail_line ? (size_t)len : 0;
    s->skip_why = skip_all;
    if (!skip_all) cases[i].fn();
    s->fail_len = 0;
    ran++;
    if (s->skip_why) {
      skipped++;
      printf("ok %zu %s # SKIP %s\n", i + 1, cases[i].name, s->skip_why);
    } else {
      printf("ok %zu %s\n", i + 1, cases[i].name);
    }
    fflush(stdout);
  }
  free(want);
  return ran == skipped ? 77 : 0;
}

#endif
