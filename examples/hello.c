/* SPDX-License-Identifier: MIT */
/* hello: a pool, a few tasks, and a parallel fib(n). usage: hello [n] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <wspool.h>

typedef struct { int n; long result; } fib_args;

static void fib(void *p) {
  fib_args *f = p;
  if (f->n < 2) { f->result = f->n; return; }
  fib_args x = {f->n - 1, 0}, y = {f->n - 2, 0};
  pool_join(NULL, fib, &x, fib, &y);  /* both calls, possibly in parallel */
  f->result = x.result + y.result;
}

static void hello(void *arg) { printf("hello from task %d\n", (int)(intptr_t)arg); }

int main(int argc, char **argv) {
  fib_args f = {argc > 1 ? atoi(argv[1]) : 30, 0};
  pool_t *pool;
  int rc = pool_create(&pool, NULL);  /* one worker per CPU */
  if (rc) { fprintf(stderr, "pool_create: %s\n", pool_strerror(rc)); return 1; }
  for (intptr_t i = 0; i < 4 && rc == 0; i++) rc = pool_submit(pool, hello, (void *)i);
  if (rc == 0) rc = pool_submit(pool, fib, &f);
  if (rc == 0) rc = pool_wait_idle(pool);  /* until all of the above has run */
  if (rc) fprintf(stderr, "wspool: %s\n", pool_strerror(rc));
  pool_destroy(pool);  /* runs anything still queued, then stops the workers */
  long a = 0, b = 1;  /* check: fib(n) with a plain loop */
  for (int i = 0; i < f.n; i++) { long s = a + b; a = b; b = s; }
  printf("fib(%d) = %ld (%s)\n", f.n, f.result, f.result == a ? "ok" : "WRONG");
  return rc == 0 && f.result == a ? 0 : 1;
}
