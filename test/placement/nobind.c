/* SPDX-License-Identifier: MIT */
/* Binding made impossible: a seccomp filter makes sched_setaffinity fail
 * with ENOSYS, as in sandboxes that refuse it.
 *
 *  1. Only for other threads (pid argument != 0): setting the creating
 *     thread's own affinity still works, so the plan's probe passes and the
 *     failure shows when a worker thread is bound after pthread_create:
 *     bind_strict -> ENOTSUP, else a warning and unbound workers.
 *  2. For every thread: the plan already knows, so the same outcome comes
 *     from ws_placement_plan, before any thread exists.
 * In both, an unbound pool still runs tasks. Skipped (77) where seccomp
 * filters cannot be installed or the architecture is not handled here.
 * Cases: others_refused, all_refused (a filter cannot be removed: in one
 * run, in this order). */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wspool.h>

#include "check.h"
#include "no_affinity.h"
#include "probe.h"
#include "testutil.h"

typedef struct attempt {
  pool_bind_t bind;
  int strict;
  int rc;
  pool_t *pool;
} attempt;

static void create(void *arg) {
  attempt *a = arg;
  pool_config_t cfg;
  pool_config_default(&cfg);
  cfg.bind = a->bind;
  cfg.bind_strict = a->strict;
  cfg.threads = 3;
  cfg.stack_size = 256u << 10;
  a->pool = NULL;
  a->rc = pool_create(&a->pool, &cfg);
}

static void phase(const char *what) {
  static const pool_bind_t binds[] = {POOL_BIND_CORE, POOL_BIND_SPREAD};
  char buf[2048];
  for (unsigned b = 0; b < 2; b++) {
    attempt a = {binds[b], 1, -1, NULL};
    capture_stderr(buf, sizeof buf, create, &a);
    CHECK_EQ(a.rc, ENOTSUP);
    CHECK(a.pool == NULL);

    a.strict = 0;
    capture_stderr(buf, sizeof buf, create, &a);
    CHECK_OK(a.rc);
    if (!strstr(buf, "cannot bind workers here")) {
      fprintf(stderr, "%s: expected a warning, got:\n%s", what, buf);
      CHECK(0);
    }
    for (unsigned i = 0; i < 3; i++) CHECK_EQ(pool_worker_cpu(a.pool, i), -1);
    cpu_set_t mine;
    CHECK_OK(sched_getaffinity(0, sizeof(mine), &mine));
    probe *pr = probe_run(a.pool); /* it still runs tasks, on every worker */
    for (unsigned i = 0; i < 3; i++) CHECK(CPU_EQUAL(&pr->mask[i], &mine));
    probe_free(pr);
    check_victims_shape(a.pool);
    CHECK_OK(pool_destroy(a.pool));
  }
  /* NONE never binds: no warning, no error even when strict. */
  attempt a = {POOL_BIND_NONE, 1, -1, NULL};
  capture_stderr(buf, sizeof buf, create, &a);
  CHECK_OK(a.rc);
  CHECK(!strstr(buf, "cannot bind"));
  CHECK_OK(pool_destroy(a.pool));
}

/* Whether a filter is installed already (earlier in this run). */
static int filtered;

/* Installs the filter: a failure is a skip unless one is installed. */
static const char *refuse(bool only_others) {
  static char why[128];
  int err = refuse_setaffinity(only_others);
  if (err && !filtered) {
    snprintf(why, sizeof why, "seccomp: %s", strerror(err));
    return why;
  }
  CHECK_OK(err);
  filtered = 1;
  return NULL;
}

static void case_others_refused(void) {
  const char *why = refuse(true);
  if (why) TEST_SKIP(why);
  phase("other threads refused");
}

static void case_all_refused(void) {
  const char *why = refuse(false);
  if (why) TEST_SKIP(why);
  phase("all refused");
}

static void setup(void) {
  unsetenv("HWLOC_SYNTHETIC");
  unsetenv("HWLOC_XMLFILE");
  unsetenv("WSPOOL_VERBOSE");
}

TEST_MAIN_WITH(NO_AFFINITY_AVAILABLE ? NULL : "architecture not handled", setup, 120,
               TEST_CASE(others_refused), TEST_CASE(all_refused))
