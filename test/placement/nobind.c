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
 * filters cannot be installed or the architecture is not handled here. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wspool.h>

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "check.h"
#include "probe.h"

#if defined(__x86_64__)
#define TEST_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define TEST_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif

#ifndef TEST_AUDIT_ARCH
int main(void) {
  puts("placement nobind: skipped (architecture not handled)");
  return 77;
}
#else

/* Refuse sched_setaffinity with ENOSYS; when only_others, only for a pid
 * argument other than 0 (the low 32 bits of the first argument; pid_t). */
static int refuse_setaffinity(bool only_others) {
  struct sock_filter f[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TEST_AUDIT_ARCH, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_sched_setaffinity, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, only_others ? 0 : 1, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA)),
  };
  struct sock_fprog prog = {sizeof f / sizeof *f, f};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return errno;
  if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) return errno;
  return 0;
}

/* Run `fn` with stderr captured into buf. */
static void capture_stderr(char *buf, size_t size, void (*fn)(void *), void *arg) {
  char path[] = "/tmp/wspool-nobind-XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  unlink(path);
  fflush(stderr);
  int saved = dup(2);
  CHECK(saved >= 0 && dup2(fd, 2) == 2);
  fn(arg);
  fflush(stderr);
  CHECK(dup2(saved, 2) == 2);
  close(saved);
  memset(buf, 0, size);
  CHECK(pread(fd, buf, size - 1, 0) >= 0);
  close(fd);
}

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

int main(void) {
  check_watchdog(120);
  unsetenv("HWLOC_SYNTHETIC");
  unsetenv("HWLOC_XMLFILE");
  unsetenv("WSPOOL_VERBOSE");
  int err = refuse_setaffinity(true);
  if (err) {
    printf("placement nobind: skipped (seccomp: %s)\n", strerror(err));
    return 77;
  }
  phase("other threads refused");
  CHECK_OK(refuse_setaffinity(false));
  phase("all refused");
  puts("placement nobind: ok");
  return 0;
}
#endif
