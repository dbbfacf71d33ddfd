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
 *  - pool_config_default(NULL) does nothing (no crash). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wspool.h>

#include "check.h"

static char captured[8192];

/* Run pool_config_default(cfg) with fd 2 redirected to a temp file; the
 * text written goes to `captured`. */
static void config_captured(pool_config_t *cfg) {
  char path[] = "/tmp/wspool-env-XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  unlink(path);
  fflush(stderr);
  int saved = dup(2);
  CHECK(saved >= 0);
  CHECK(dup2(fd, 2) == 2);
  pool_config_default(cfg);
  fflush(stderr);
  CHECK(dup2(saved, 2) == 2);
  close(saved);
  CHECK(lseek(fd, 0, SEEK_SET) == 0);
  ssize_t n = read(fd, captured, sizeof captured - 1);
  CHECK(n >= 0);
  captured[n] = '\0';
  close(fd);
}

static void set_env(const char *name, const char *value) {
  if (value)
    CHECK_OK(setenv(name, value, 1));
  else
    CHECK_OK(unsetenv(name));
}

static void expect_threads_ok(const char *value, unsigned expect) {
  set_env("WSPOOL_THREADS", value);
  set_env("WSPOOL_BIND", NULL);
  pool_config_t cfg;
  memset(&cfg, 0xA5, sizeof cfg);
  config_captured(&cfg);
  if (captured[0]) fprintf(stderr, "unexpected message for WSPOOL_THREADS=%s: %s\n", value, captured);
  CHECK(captured[0] == '\0');
  CHECK_EQ(cfg.threads, expect);
  CHECK_EQ(cfg.bind, POOL_BIND_NONE);
  CHECK_EQ(cfg.stack_size, 0);
  CHECK_EQ(cfg.bind_strict, 0);
}

static void expect_bad(const char *name, const char *value) {
  set_env("WSPOOL_THREADS", NULL);
  set_env("WSPOOL_BIND", NULL);
  set_env(name, value);
  pool_config_t cfg;
  memset(&cfg, 0xA5, sizeof cfg);
  config_captured(&cfg);
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
  set_env("WSPOOL_THREADS", NULL);
  set_env("WSPOOL_BIND", value);
  pool_config_t cfg;
  memset(&cfg, 0xA5, sizeof cfg);
  config_captured(&cfg);
  CHECK(captured[0] == '\0');
  CHECK_EQ(cfg.bind, expect);
  CHECK_EQ(cfg.threads, 0);
}

int main(void) {
  check_watchdog(60);
  pool_config_default(NULL); /* does nothing */

  /* Defaults with nothing set. */
  set_env("WSPOOL_THREADS", NULL);
  set_env("WSPOOL_BIND", NULL);
  pool_config_t cfg;
  memset(&cfg, 0x5A, sizeof cfg);
  config_captured(&cfg);
  CHECK(captured[0] == '\0');
  CHECK_EQ(cfg.threads, 0);
  CHECK_EQ(cfg.bind, POOL_BIND_NONE);
  CHECK_EQ(cfg.stack_size, 0);
  CHECK_EQ(cfg.bind_strict, 0);

  expect_threads_ok("3", 3);
  expect_threads_ok("0", 0);
  expect_threads_ok("1", 1);
  expect_threads_ok("4096", 4096);

  expect_bind_ok("none", POOL_BIND_NONE);
  expect_bind_ok("core", POOL_BIND_CORE);
  expect_bind_ok("spread", POOL_BIND_SPREAD);

  const char *bad_threads[] = {"abc", "-1", "99999", "4097", "3x", "+3", " 3",
                               "18446744073709551617"};
  for (unsigned i = 0; i < sizeof bad_threads / sizeof bad_threads[0]; i++)
    expect_bad("WSPOOL_THREADS", bad_threads[i]);
  const char *bad_bind[] = {"bogus", "CORE", "spreadx", "1"};
  for (unsigned i = 0; i < sizeof bad_bind / sizeof bad_bind[0]; i++)
    expect_bad("WSPOOL_BIND", bad_bind[i]);

  /* Both bad at once: both reported. */
  set_env("WSPOOL_THREADS", "abc");
  set_env("WSPOOL_BIND", "bogus");
  config_captured(&cfg);
  CHECK(strstr(captured, "WSPOOL_THREADS") && strstr(captured, "abc"));
  CHECK(strstr(captured, "WSPOOL_BIND") && strstr(captured, "bogus"));
  CHECK_EQ(cfg.threads, 0);
  CHECK_EQ(cfg.bind, POOL_BIND_NONE);

  /* One bad, one good: the good one is still taken. */
  set_env("WSPOOL_THREADS", "abc");
  set_env("WSPOOL_BIND", "spread");
  config_captured(&cfg);
  CHECK_EQ(cfg.threads, 0);
  CHECK_EQ(cfg.bind, POOL_BIND_SPREAD);
  set_env("WSPOOL_THREADS", "2");
  set_env("WSPOOL_BIND", "bogus");
  config_captured(&cfg);
  CHECK_EQ(cfg.threads, 2);
  CHECK_EQ(cfg.bind, POOL_BIND_NONE);

  /* Fields set after pool_config_default win. */
  set_env("WSPOOL_THREADS", "3");
  set_env("WSPOOL_BIND", "none");
  pool_config_default(&cfg);
  CHECK_EQ(cfg.threads, 3);
  cfg.threads = 2;
  pool_t *p = NULL;
  CHECK_OK(pool_create(&p, &cfg));
  CHECK_EQ(pool_threads(p), 2);
  CHECK_OK(pool_destroy(p));

  /* NULL cfg = pool_config_default(): the environment decides. */
  set_env("WSPOOL_THREADS", "3");
  set_env("WSPOOL_BIND", NULL);
  p = NULL;
  CHECK_OK(pool_create(&p, NULL));
  CHECK_EQ(pool_threads(p), 3);
  CHECK_OK(pool_destroy(p));

  /* threads == 0: one worker per CPU of the allowed set. */
  cpu_set_t set;
  CHECK_OK(sched_getaffinity(0, sizeof set, &set));
  int ncpu = CPU_COUNT(&set);
  CHECK(ncpu > 0);
  set_env("WSPOOL_THREADS", "0");
  p = NULL;
  CHECK_OK(pool_create(&p, NULL));
  CHECK_EQ(pool_threads(p), ncpu);
  CHECK_OK(pool_destroy(p));
  set_env("WSPOOL_THREADS", "7");
  pool_config_default(&cfg);
  cfg.threads = 0;
  p = NULL;
  CHECK_OK(pool_create(&p, &cfg));
  CHECK_EQ(pool_threads(p), ncpu);
  CHECK_OK(pool_destroy(p));

  /* A restricted affinity mask counts: allow one CPU only. */
  cpu_set_t one;
  CPU_ZERO(&one);
  for (int c = 0; c < CPU_SETSIZE; c++)
    if (CPU_ISSET(c, &set)) {
      CPU_SET(c, &one);
      break;
    }
  CHECK_OK(sched_setaffinity(0, sizeof one, &one));
  set_env("WSPOOL_THREADS", NULL);
  p = NULL;
  CHECK_OK(pool_create(&p, NULL));
  CHECK_EQ(pool_threads(p), 1);
  CHECK_OK(pool_destroy(p));
  CHECK_OK(sched_setaffinity(0, sizeof set, &set));

  /* A bad WSPOOL_THREADS with pool_create(NULL cfg): default, still works. */
  set_env("WSPOOL_THREADS", "abc");
  fflush(stderr);
  int saved = dup(2);
  int devnull = open("/dev/null", O_WRONLY);
  CHECK(saved >= 0 && devnull >= 0);
  dup2(devnull, 2);
  p = NULL;
  int rc = pool_create(&p, NULL);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  close(devnull);
  CHECK_OK(rc);
  CHECK_EQ(pool_threads(p), ncpu);
  CHECK_OK(pool_destroy(p));
  return 0;
}
