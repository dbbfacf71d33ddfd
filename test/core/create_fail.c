/* SPDX-License-Identifier: MIT */
/* Thread creation failure: pool_create returns EAGAIN, does not hang, and
 * leaks nothing (the threads it had started are joined, their stacks freed).
 *
 * In a fork()ed child, RLIMIT_AS is lowered to the current address-space
 * size plus room for about two and a half 64 MiB stacks; a pool of 8 (and
 * of 3) workers with 64 MiB stacks then starts two workers and fails on the
 * third. Checks:
 *  - pool_create -> EAGAIN, *out untouched;
 *  - afterwards the process is back to one thread;
 *  - under the same limit a 2-worker pool with 64 MiB stacks still fits
 *    (it would not if the failed create had leaked its started stacks), and
 *    works; repeated failures do not accumulate anything;
 *  - with the limit raised again, a normal 8-worker pool works.
 * Skipped (77) under AddressSanitizer / ThreadSanitizer, which reserve huge
 * address ranges, and under an emulator. One case: rlimit. */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include <wspool.h>

#include "check.h"
#include "testutil.h"

enum { STACK = 64 << 20 };

static void wait_single_thread(void) {
  /* The joined threads disappear from /proc promptly; a thread that was
   * not joined never does (the watchdog then fails the test). */
  while (proc_status_field("Threads") != 1) usleep(1000);
}

static atomic_int hits;
static void hit(void *arg) {
  (void)arg;
  atomic_fetch_add(&hits, 1);
}

static void use_pool(pool_t *p, int n) {
  atomic_store(&hits, 0);
  for (int i = 0; i < n; i++) CHECK_OK(pool_submit(p, hit, NULL));
  CHECK_OK(pool_wait_idle(p));
  CHECK_EQ(atomic_load(&hits), n);
}

/* Under the lowered limit, six times: an 8-worker (or 3-worker) pool fails
 * at its third stack, and then a 2-worker pool still fits and works. */
static void failing_rounds(pool_config_t *cfg) {
  for (int round = 0; round < 6; round++) {
    pool_t *sentinel = (pool_t *)(uintptr_t)0xBADC0DE0u;
    pool_t *p = sentinel;
    cfg->threads = round % 2 ? 3 : 8;
    int rc = pool_create(&p, cfg);
    if (rc != EAGAIN) fprintf(stderr, "round %d: pool_create -> %d (%s)\n", round, rc, strerror(rc));
    CHECK_EQ(rc, EAGAIN);
    CHECK(p == sentinel);
    wait_single_thread();

    /* Two workers fit under the same limit: nothing of the failed create
     * is left over. */
    cfg->threads = 2;
    p = NULL;
    rc = pool_create(&p, cfg);
    if (rc != 0) fprintf(stderr, "round %d: 2-worker pool -> %d (%s)\n", round, rc, strerror(rc));
    CHECK_OK(rc);
    use_pool(p, 1000);
    CHECK_OK(pool_destroy(p));
    wait_single_thread();
  }
}

static int child(void) {
  check_watchdog(60);
  /* One malloc arena: worker threads must not reserve arenas of their own,
   * so the address-space arithmetic below is about stacks only. */
  CHECK(mallopt(M_ARENA_MAX, 1) == 1);
  pool_config_t cfg;
  pool_config_default(&cfg);
  cfg.stack_size = STACK;

  /* Warm up: the library and libc allocate what they need once. */
  cfg.threads = 1;
  pool_t *p = NULL;
  CHECK_OK(pool_create(&p, &cfg));
  use_pool(p, 10);
  CHECK_OK(pool_destroy(p));
  wait_single_thread();

  struct rlimit old;
  CHECK_OK(getrlimit(RLIMIT_AS, &old));
  long vm_kb = proc_status_field("VmSize");
  struct rlimit lim = old;
  lim.rlim_cur = (rlim_t)vm_kb * 1024 + 2 * (rlim_t)STACK + (rlim_t)(STACK / 2);
  if (old.rlim_cur != RLIM_INFINITY && old.rlim_cur < lim.rlim_cur) {
    fprintf(stderr, "RLIMIT_AS already too low here\n");
    return 77;
  }
  CHECK_OK(setrlimit(RLIMIT_AS, &lim));
  failing_rounds(&cfg);
  CHECK_OK(setrlimit(RLIMIT_AS, &old));
  cfg.threads = 8;
  p = NULL;
  CHECK_OK(pool_create(&p, &cfg));
  CHECK_EQ(pool_threads(p), 8);
  use_pool(p, 10000);
  CHECK_OK(pool_destroy(p));
  wait_single_thread();
  return 0;
}

/* The checks run in a forked child, whose malloc arenas and address-space
 * limit they change. */
static void case_rlimit(void) {
  fflush(NULL);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    int rc = child();
    fflush(NULL);
    _exit(rc);
  }
  int code = child_exit(pid, "the child");
  if (code == 77) TEST_SKIP("RLIMIT_AS already too low here");
  CHECK_EQ(code, 0);
}

static const char *skip_reason(void) {
  if (TEST_UNDER_SANITIZER) return "sanitizers reserve too much address space for RLIMIT_AS";
  /* Under qemu-user RLIMIT_AS limits the emulator's own address space,
   * not the guest's stacks: the arithmetic does not hold. */
  if (getenv("WSPOOL_TEST_EMULATED"))
    return "RLIMIT_AS does not model thread stacks under an emulator";
  return NULL;
}

TEST_MAIN_WITH(skip_reason(), NULL, 90, TEST_CASE(rlimit))
