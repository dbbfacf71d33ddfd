/* SPDX-License-Identifier: MIT */
/* A recursion chain 100000 deep (8000 under ThreadSanitizer, see below), f(d): spawn f(d-1); sync, on 1 and 2
 * workers with 512 MiB (virtual) worker stacks: no crash, every level runs
 * exactly once, and the exact depth comes back. Also the same chain through
 * pool_join and through one-child groups, and started from an outside
 * thread (the root is spawned from outside, the chain runs in the pool).
 * Cases: spawn (from a task and from outside), join, group (from outside). */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <wspool.h>

#include "check.h"

/* ThreadSanitizer keeps a fixed shadow call stack of 64 Ki frames per
 * thread (C/C++ mode) and crashes past it, whatever the real stack size;
 * a chain level is 2-6 instrumented frames, so under TSan the chain is
 * shortened to stay within that tool limit. */
enum { DEPTH = TEST_UNDER_TSAN ? 8000 : 100000 };

static atomic_uchar *seen;

typedef struct chain_link {
  unsigned d;
  unsigned r; /* depth reached below this level */
} chain_link;

static void visit(unsigned d) {
  CHECK(d <= DEPTH);
  atomic_fetch_add_explicit(&seen[d], 1, memory_order_relaxed);
}

static void chain_spawn(void *p) {
  chain_link *l = p;
  visit(l->d);
  if (l->d == 0) {
    l->r = 0;
    return;
  }
  chain_link next = {l->d - 1, 0};
  pool_task_t t;
  CHECK_OK(pool_spawn(NULL, &t, chain_spawn, &next));
  CHECK_OK(pool_sync(&t));
  l->r = next.r + 1;
}

static void nothing(void *p) { (void)p; }

static void chain_join(void *p) {
  chain_link *l = p;
  visit(l->d);
  if (l->d == 0) {
    l->r = 0;
    return;
  }
  chain_link next = {l->d - 1, 0};
  /* Alternate which side recurses, so the chain goes through both. */
  if (l->d % 2)
    CHECK_OK(pool_join(NULL, chain_join, &next, nothing, NULL));
  else
    CHECK_OK(pool_join(NULL, nothing, NULL, chain_join, &next));
  l->r = next.r + 1;
}

static void chain_group(void *p) {
  chain_link *l = p;
  visit(l->d);
  if (l->d == 0) {
    l->r = 0;
    return;
  }
  chain_link next = {l->d - 1, 0};
  pool_group_t g;
  CHECK_OK(pool_group_init(&g, NULL));
  CHECK_OK(pool_group_spawn(&g, chain_group, &next));
  CHECK_OK(pool_group_wait(&g));
  l->r = next.r + 1;
}

static void check_seen(void) {
  for (unsigned d = 0; d <= DEPTH; d++) {
    unsigned v = atomic_load(&seen[d]);
    if (v != 1) {
      fprintf(stderr, "level %u ran %u times\n", d, v);
      CHECK_EQ(v, 1);
    }
  }
  for (unsigned d = 0; d <= DEPTH; d++) atomic_store(&seen[d], 0);
}

static void run(pool_t *pool, pool_fn fn, int from_outside) {
  chain_link root = {DEPTH, 0};
  if (from_outside) {
    pool_task_t t;
    CHECK_OK(pool_spawn(pool, &t, fn, &root));
    CHECK_OK(pool_sync(&t));
  } else {
    CHECK_OK(pool_submit(pool, fn, &root));
    CHECK_OK(pool_wait_idle(pool));
  }
  CHECK_EQ(root.r, DEPTH);
  check_seen();
}

typedef struct chain_run {
  pool_fn fn;
  int from_outside;
} chain_run;

/* The chains runs[0..n), in turn, on pools of 1 and 2 workers with 512 MiB
 * (virtual) stacks, WSPOOL_STRESS times. */
static void chains(const chain_run *runs, unsigned n) {
  seen = calloc(DEPTH + 1, 1);
  CHECK(seen);
  unsigned long reps = check_iters(1);
  for (unsigned threads = 1; threads <= 2; threads++) {
    pool_config_t cfg;
    pool_config_default(&cfg);
    cfg.threads = threads;
    cfg.stack_size = (size_t)512 << 20;
    pool_t *pool;
    int rc = pool_create(&pool, &cfg);
    if (rc != 0) {
      fprintf(stderr, "pool_create with 512 MiB stacks: %s\n", pool_strerror(rc));
      CHECK_OK(rc);
    }
    for (unsigned long r = 0; r < reps; r++)
      for (unsigned k = 0; k < n; k++) run(pool, runs[k].fn, runs[k].from_outside);
    CHECK_OK(pool_destroy(pool));
  }
  free((void *)seen);
}

static void case_spawn(void) {
  static const chain_run r[] = {{chain_spawn, 0}, {chain_spawn, 1}};
  chains(r, 2);
}

static void case_join(void) {
  static const chain_run r[] = {{chain_join, 0}};
  chains(r, 1);
}

static void case_group(void) {
  static const chain_run r[] = {{chain_group, 1}};
  chains(r, 1);
}

TEST_MAIN(240, TEST_CASE(spawn), TEST_CASE(join), TEST_CASE(group))
