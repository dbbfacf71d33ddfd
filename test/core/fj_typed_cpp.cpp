/* SPDX-License-Identifier: MIT */
/* Typed tasks from C++: wspool.h's POOL_TASK compiles in C++ (warning
 * level 3, -Werror in CI) and computes the same results: fib through a
 * one-argument task and a void task writing through a pointer, on 1, 2 and
 * 4 workers, and from this (outside) thread; and a type with default
 * member initialisers (trivially copyable, but not trivially default
 * constructible) as argument and result, run, spawned and pushed.
 * The one-piece forms (POOL_STATIC_TASK, POOL_STATIC_VOID_TASK_0), one
 * definition `inline`: fib, and a void task run once.
 * Cases: inside, outside, initialisers, static_forms. */
#include <wspool.h>

#include "check.h"

static long fib(int n);
POOL_TASK(long, fib, int);

static long fib(int n) {
  if (n < 2) return n;
  fib_frame f;
  CHECK_OK(fib_spawn(&f, n - 1));
  long y = fib(n - 2);
  return fib_sync(&f) + y;
}

static void fill(long *out, int n);
POOL_VOID_TASK(fill, long *, int);

static void fill(long *out, int n) {
  if (n <= 1) {
    if (n == 1) *out = fib(20);
    return;
  }
  fill_frame f;
  CHECK_OK(fill_spawn(&f, out, n / 2));
  fill(out + n / 2, n - n / 2);
  fill_sync(&f);
}

struct pt {
  int x = 1;
  int y = 2;
};
static pt flip(pt p);
POOL_TASK(pt, flip, pt);

static pt flip(pt p) {
  pt r;
  r.x = p.y;
  r.y = p.x;
  return r;
}

struct job {
  long fib25;
  long outs[64];
};

static void root(void *p) {
  job *j = static_cast<job *>(p);
  j->fib25 = fib(25);
  fill(j->outs, 64);
}

/* The one-piece forms: the macro declares the function static; the
 * definitions follow, one of them `inline`. */
POOL_STATIC_TASK(long, sfib, int);
static inline long sfib(int n) {
  if (n < 2) return n;
  sfib_frame f;
  CHECK_OK(sfib_spawn(&f, n - 1));
  long y = sfib(n - 2);
  return sfib_sync(&f) + y;
}

static int void_runs;
POOL_STATIC_VOID_TASK_0(count_run);
static void count_run() { void_runs++; }

/* A pool of nw workers from a zeroed configuration. */
static pool_t *zeroed_config_pool(unsigned nw) {
  pool_config_t cfg{};
  cfg.threads = nw;
  pool_t *p = nullptr;
  CHECK_OK(pool_create(&p, &cfg));
  return p;
}

static const unsigned nws[] = {1, 2, 4};

static void case_inside() {
  for (unsigned nw : nws) {
    pool_t *p = zeroed_config_pool(nw);
    job j = {};
    CHECK_OK(pool_submit(p, root, &j));
    CHECK_OK(pool_wait_idle(p));
    CHECK_EQ(j.fib25, 75025);
    for (long v : j.outs) CHECK_EQ(v, 6765);
    pool_destroy(p);
  }
}

static void case_outside() {
  for (unsigned nw : nws) {
    pool_t *p = zeroed_config_pool(nw);
    fib_frame f;
    CHECK_OK(fib_spawn_in(p, &f, 20));
    long r = 0;
    CHECK_OK(fib_sync_rc(&f, &r));
    CHECK_EQ(r, 6765);
    pool_destroy(p);
  }
}

static void case_initialisers() {
  for (unsigned nw : nws) {
    pool_t *p = zeroed_config_pool(nw);
    pt a;
    a.x = 3;
    a.y = 4;
    pt r = flip_run(p, a);
    CHECK_EQ(r.x, 4);
    CHECK_EQ(r.y, 3);
    flip_frame f;
    CHECK_OK(flip_spawn_in(p, &f, a));
    r = flip_sync(&f);
    CHECK_EQ(r.x, 4);
    CHECK_OK(flip_push(p, r));
    r = flip_pop();
    CHECK_EQ(r.x, 3);
    CHECK_EQ(r.y, 4);
    CHECK(pool_frame_top() == nullptr);
    pool_destroy(p);
  }
}

static void case_static_forms() {
  for (unsigned nw : nws) {
    pool_t *p = zeroed_config_pool(nw);
    CHECK_EQ(sfib_run(p, 20), 6765);
    int before = void_runs;
    count_run_run(p); /* on a worker; its run happens before the return */
    CHECK_EQ(void_runs, before + 1);
    pool_destroy(p);
  }
}

TEST_MAIN(120, TEST_CASE(inside), TEST_CASE(outside), TEST_CASE(initialisers),
          TEST_CASE(static_forms))
