/* SPDX-License-Identifier: MIT */
/* An ordinary program linked with wspool, which test_privileged installs
 * setuid root and runs as an unprivileged user: it creates a pool from the
 * environment's defaults (pool_create with no configuration), runs known
 * work and destroys the pool. It prints, on stdout only, whether the kernel
 * marked it privileged (AT_SECURE), the worker count and the tasks run. */
#include <stdatomic.h>
#include <stdio.h>
#include <sys/auxv.h>
#include <wspool.h>

enum { NTASKS = 1000 };

static void task(void *arg) { atomic_fetch_add((atomic_int *)arg, 1); }

int main(void) {
  atomic_int n = 0;
  pool_t *p = NULL;
  if (pool_create(&p, NULL) != 0) return 2;
  unsigned threads = pool_threads(p);
  for (int i = 0; i < NTASKS; i++)
    if (pool_submit(p, task, &n) != 0) return 3;
  if (pool_wait_idle(p) != 0 || pool_destroy(p) != 0) return 4;
  printf("secure=%lu threads=%u tasks=%d\n", getauxval(AT_SECURE), threads, atomic_load(&n));
  return atomic_load(&n) == NTASKS ? 0 : 5;
}
