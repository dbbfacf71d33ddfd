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

/* Past six arguments, and every generated function of a value task and a
 * void one. */
static long wide(char a, short b, int c, long d, unsigned e, float f, double g, const int *h,
                 signed char i, unsigned short j, unsigned long k, long long l, size_t m,
                 unsigned char n) {
  return (long)(a + b + c + d + (long)e + (long)f + (long)g + *h + i + j + (long)k + (long)l +
                (long)m + n);
}
POOL_TASK(long, wide, char, short, int, long, unsigned, float, double, const int *, signed char,
          unsigned short, unsigned long, long long, size_t, unsigned char);
static void vwide(long *out, int a, int b, int c, int d, int e, int f, int g, int h, int i,
                  int j, int k, int l) {
  *out = a + b + c + d + e + f + g + h + i + j + k + l;
}
POOL_VOID_TASK_13(vwide, long *, int, int, int, int, int, int, int, int, int, int, int, int);
static int zero(void) { return 0; }
POOL_TASK_0(int, zero);

static int wide_all(void) {
  int one = 1;
  long r = 0, v = 0;
  wide_frame f;
  vwide_frame g;
  int rc = wide_spawn(&f, 1, 2, 3, 4, 5u, 6.0f, 7.0, &one, 9, 10, 11ul, 12, 13, 14);
  if (rc == 0) rc = vwide_spawn_in(NULL, &g, &v, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12);
  if (rc == 0) rc = vwide_sync_rc(&g);
  if (rc == 0) rc = wide_sync_rc(&f, &r);
  if (rc == 0 && (r != 98 || v != 78)) rc = 1;
  if (rc == 0) rc = wide_run_rc(NULL, &r, 1, 2, 3, 4, 5u, 6.0f, 7.0, &one, 9, 10, 11ul, 12, 13, 14);
  if (rc == 0 && wide_run(NULL, 1, 2, 3, 4, 5u, 6.0f, 7.0, &one, 9, 10, 11ul, 12, 13, 14) != r)
    rc = 1;
  if (rc == 0) rc = vwide_run_rc(NULL, &v, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12);
  if (rc == 0) vwide_run(NULL, &v, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12);
  if (rc == 0) rc = zero_run(NULL) + tfib_run(NULL, 10) == 55 ? 0 : 1;
  if (rc == 0) rc = wide_push(NULL, 1, 2, 3, 4, 5u, 6.0f, 7.0, &one, 9, 10, 11ul, 12, 13, 14);
  if (rc == 0) rc = vwide_push(NULL, &v, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12);
  if (rc == 0) rc = zero_push(NULL);
  if (rc == 0) rc = zero_pop_rc(&one);
  if (rc == 0) vwide_pop();
  if (rc == 0) rc = vwide_push(NULL, &v, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12);
  if (rc == 0) rc = vwide_pop_rc();
  if (rc == 0 && wide_pop() != 98) rc = 1;
  return rc;
}

/* The frame stack's inline paths, with a size known only at run time and
 * a pop of a local's address (which must not read as out of bounds). */
static int frames(size_t size) {
  void *m = &m;
  int rc = pool_frame_push(size, 8, &m);
  if (rc == 0 && pool_frame_top() != m) rc = 1;
  if (rc == 0) rc = pool_frame_pop(m);
  if (rc == 0) rc = pool_frame_pop(&m) == EINVAL ? 0 : 1;
  return rc;
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
  if (rc == 0) rc = wide_all();
  if (rc == 0) rc = frames((size_t)rc + 24);
  return rc == 0 && tfib(10) == 55 ? 0 : 1;
}
