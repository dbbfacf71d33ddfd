/* SPDX-License-Identifier: MIT */
/* pool_config_default and the environment (WSPOOL_THREADS, WSPOOL_BIND).
 *
 *  - Good values are taken (threads 3, 0, 4096; bind none/core/spread) and
 *    print nothing.
 *  - Bad values (abc, -1, 99999, 4097, 3x, +3, " 3", bogus, CORE, "")
 *    fall back to the default and print one message on stderr naming the
 *    variable and the value (stderr captured through dup2 into a file).
 *  - Fields set after pool_config_default win.
 *  - pool_create(&p, NULL) uses the environment (WSPOOL_THREADS=3 -> 3).
 *  - threads == 0 -> one worker per CPU of sched_getaffinity.
 *  - pool_config_default(NULL) does nothing (no crash).
 * Cases: defaults, good_values, bad_values, fields_win, null_config,
 * all_cpus, affinity, bad_with_create. Each sets both variables as it
 * needs them. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wspool.h>

#include "check.h"
#include "testutil.h"

static char captured[8192];

static void config_default_fn(void *cfg) { pool_config_default(cfg); }

/* Run pool_config_default(cfg) with stderr captured: the text written goes
 * to `captured`. */
static void config_captured(pool_config_t *cfg) {
  capture_stderr(captured, sizeof captured, config_default_fn, cfg);
}

static void set_env(const char *name, const char *value) {
  if (value)
    CHECK_OK(setenv(name, value, 1));
  else
    CHECK_OK(unsetenv(name));
}

/* WSPOOL_THREADS and WSPOOL_BIND (NULL: unset). */
static void set_envs(const char *threads, const char *bind) {
  set_env("WSPOOL_THREADS", threads);
  set_env("WSPOOL_BIND", bind);
}

/* pool_config_default into a cfg filled with garbage, with the two
 * variables set (NULL: unset) and stderr captured. */
static void captured_with(const char *threads, const char *bind, pool_config_t *cfg) {
  set_envs(threads, bind);
  memset(cfg, 0xA5, sizeof *cfg);
  config_captured(cfg);
}

static void expect_threads_ok(const char *value, unsigned expect) {
  pool_config_t cfg;
  captured_with(value, NULL, &cfg);
  if (captured[0]) fprintf(stderr, "unexpected message for WSPOOL_THREADS=%s: %s\n", value, captured);
  CHECK(captured[0] == '\0');
  CHECK_EQ(cfg.threads, expect);
  CHECK_EQ(cfg.bind, POOL_BIND_NONE);
  CHECK_EQ(cfg.stack_size, 0);
  CHECK_EQ(cfg.bind_strict, 0);
}

/* `name` (one of the two) set to a bad value, the other unset. */
static void expect_bad(const char *name, const char *value) {
  int threads = !strcmp(name, "WSPOOL_THREADS");
  pool_config_t cfg;
  captured_with(threads ? value : NULL, threads ? NULL : value, &cfg);
  if (!strstr(captured, name) || !strstr(captured, value)) {
    fprintf(stderr, "for %s=\"%s\" expected a message naming both, got: \"%s\"\n", name, value,
            captured);
    CHECK(0);
  }
  /* The default is used. */
  CHECK_EQ(cfg.threads, 0);
  CHECK_EQ(cfg.bind, POOL_BIND_NONE);
  CHECK_EQ(cfg.stack_size, 0);
  CHECK_EQ(cfg.bind_strict, 0);
}

static void expect_bind_ok(const char *value, pool_bind_t expect) {
  pool_config_t cfg;
  captured_with(NULL, value, &cfg);
  CHECK(captured[0] == '\0');
  CHECK_EQ(cfg.bind, expect);
  CHECK_EQ(cfg.threads, 0);
}

/* pool_create(&p, cfg) makes a pool of `expect` workers. */
static void expect_created(const pool_config_t *cfg, int expect) {
  pool_t *p = NULL;
  CHECK_OK(pool_create(&p, cfg));
  CHECK_EQ(pool_threads(p), expect);
  CHECK_OK(pool_destroy(p));
}

/* CPUs of this thread's affinity mask. */
static int allowed_cpus(cpu_set_t *set) {
  CHECK_OK(sched_getaffinity(0, sizeof *set, set));
  int ncpu = CPU_COUNT(set);
  CHECK(ncpu > 0);
  return ncpu;
}

static void case_defaults(void) {
  pool_config_default(NULL); /* does nothing */
  /* Defaults with nothing set. */
  set_envs(NULL, NULL);
  pool_config_t cfg;
  memset(&cfg, 0x5A, sizeof cfg);
  config_captured(&cfg);
  CHECK(captured[0] == '\0');
  CHECK_EQ(cfg.threads, 0);
  CHECK_EQ(cfg.bind, POOL_BIND_NONE);
  CHECK_EQ(cfg.stack_size, 0);
  CHECK_EQ(cfg.bind_strict, 0);
}

static void case_good_values(void) {
  expect_threads_ok("3", 3);
  expect_threads_ok("0", 0);
  expect_threads_ok("1", 1);
  expect_threads_ok("4096", 4096);

  expect_bind_ok("none", POOL_BIND_NONE);
  expect_bind_ok("core", POOL_BIND_CORE);
  expect_bind_ok("spread", POOL_BIND_SPREAD);
}

static void case_bad_values(void) {
  const char *bad_threads[] = {"abc", "-1", "99999", "4097", "3x", "+3", " 3",
                               "18446744073709551617"};
  for (unsigned i = 0; i < sizeof bad_threads / sizeof bad_threads[0]; i++)
    expect_bad("WSPOOL_THREADS", bad_threads[i]);
  const char *bad_bind[] = {"bogus", "CORE", "spreadx", "1"};
  for (unsigned i = 0; i < sizeof bad_bind / sizeof bad_bind[0]; i++)
    expect_bad("WSPOOL_BIND", bad_bind[i]);

  /* Both bad at once: both reported. */
  pool_config_t cfg;
  captured_with("abc", "bogus", &cfg);
  CHECK(strstr(captured, "WSPOOL_THREADS") && strstr(captured, "abc"));
  CHECK(strstr(captured, "WSPOOL_BIND") && strstr(captured, "bogus"));
  CHECK_EQ(cfg.threads, 0);
  CHECK_EQ(cfg.bind, POOL_BIND_NONE);

  /* One bad, one good: the good one is still taken. */
  captured_with("abc", "spread", &cfg);
  CHECK_EQ(cfg.threads, 0);
  CHECK_EQ(cfg.bind, POOL_BIND_SPREAD);
  captured_with("2", "bogus", &cfg);
  CHECK_EQ(cfg.threads, 2);
  CHECK_EQ(cfg.bind, POOL_BIND_NONE);
}

/* Fields set after pool_config_default win. */
static void case_fields_win(void) {
  set_envs("3", "none");
  pool_config_t cfg;
  pool_config_default(&cfg);
  CHECK_EQ(cfg.threads, 3);
  cfg.threads = 2;
  expect_created(&cfg, 2);
}

/* NULL cfg = pool_config_default(): the environment decides. */
static void case_null_config(void) {
  set_envs("3", NULL);
  expect_created(NULL, 3);
}

/* threads == 0: one worker per CPU of the allowed set. */
static void case_all_cpus(void) {
  cpu_set_t set;
  int ncpu = allowed_cpus(&set);
  set_envs("0", NULL);
  expect_created(NULL, ncpu);
  set_envs("7", NULL);
  pool_config_t cfg;
  pool_config_default(&cfg);
  cfg.threads = 0;
  expect_created(&cfg, ncpu);
}

/* A restricted affinity mask counts: allow one CPU only. */
static void case_affinity(void) {
  cpu_set_t set;
  allowed_cpus(&set);
  cpu_set_t one;
  CPU_ZERO(&one);
  for (int c = 0; c < CPU_SETSIZE; c++)
    if (CPU_ISSET(c, &set)) {
      CPU_SET(c, &one);
      break;
    }
  CHECK_OK(sched_setaffinity(0, sizeof one, &one));
  set_envs(NULL, NULL);
  expect_created(NULL, 1);
  CHECK_OK(sched_setaffinity(0, sizeof set, &set));
}

/* A bad WSPOOL_THREADS with pool_create(NULL cfg): default, still works. */
static void case_bad_with_create(void) {
  cpu_set_t set;
  int ncpu = allowed_cpus(&set);
  set_envs("abc", NULL);
  fflush(stderr);
  int saved = dup(2);
  int devnull = open("/dev/null", O_WRONLY);
  CHECK(saved >= 0 && devnull >= 0);
  dup2(devnull, 2);
  pool_t *p = NULL;
  int rc = pool_create(&p, NULL);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  close(devnull);
  CHECK_OK(rc);
  CHECK_EQ(pool_threads(p), ncpu);
  CHECK_OK(pool_destroy(p));
}

TEST_MAIN(60, TEST_CASE(defaults), TEST_CASE(good_values), TEST_CASE(bad_values),
          TEST_CASE(fields_win), TEST_CASE(null_config), TEST_CASE(all_cpus), TEST_CASE(affinity),
          TEST_CASE(bad_with_create))
