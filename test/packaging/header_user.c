/* SPDX-License-Identifier: MIT */
/* A user's file for test header_warnings: what a program writes with
 * wspool.h (fork/join on the inline fast paths, typed tasks, a group, a
 * loop), compiled there with every warning the test names and -Werror. */
#include <errno.h>
#include <wspool.h>
#include <wspool.h> /* twice: the include guards */

static void nothing(void *arg) { (void)arg; }

static long tfib(int n);
POOL_TASK(long, tfib, int);

static long tfib(int n) {
  tfib_frame f;
  long y;
  if (n < 2) return n;
  tfib_spawn(&f, n - 1);
  y = tfib(n - 2);
  return tfib_sync(&f) + y;
}

static int body(size_t lo, size_t hi, void *ctx) {
  (void)ctx;
  return lo < hi && pool_cancelled() ? ECANCELED : 0;
}

int main(void) {
  pool_task_t t;
  pool_group_t g;
  int rc = pool_spawn(NULL, &t, nothing, NULL);
  if (rc == 0) rc = pool_sync(&t);
  if (rc == 0 && pool_spawn(NULL, &t, nothing, NULL) == 0 && pool_take(&t) == POOL_TAKEN)
    nothing(NULL);
  if (rc == 0) rc = pool_group_init(&g, NULL);
  if (rc == 0) rc = pool_group_spawn(&g, nothing, NULL);
  if (rc == 0) rc = pool_group_wait(&g);
  if (rc == 0) rc = pool_parallel_for_try(NULL, 0, 100, 0, body, NULL);
  return rc == 0 && tfib(10) == 55 ? 0 : 1;
}
