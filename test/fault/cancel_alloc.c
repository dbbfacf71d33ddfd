/* SPDX-License-Identifier: MIT */
/* Allocation failure during cancelled work, injected with fault.h's malloc
 * interposer (as alloc.c): for each scenario and every k = 1, 2, ... the
 * k-th allocation after the scenario starts fails (in whatever thread
 * makes it), until a run in which no k-th allocation happened. Each run
 * checks:
 *  - every return is success, ENOMEM where the call allocates, or what the
 *    cancellation makes it (ECANCELED, the failure's code);
 *  - refused work never ran, accepted work ran at most once, and the
 *    accounting is exact: accepted group children run + the pool's
 *    `skipped` counter grew by == accepted; loop items run + skipped_items
 *    == n for a loop called from a task (an outside caller's own pieces
 *    count on no worker: there, at most n);
 *  - a group whose canceller child was accepted waits ECANCELED, else 0
 *    with every accepted child run; a loop returns its failure, or ENOMEM
 *    having run nothing;
 *  - nothing leaked (the pool is created and destroyed in each run) and
 *    nothing hangs (watchdog).
 * Scenarios (one case each): group_outside and group_inside (600 children
 * spawned from outside / from a task; child 200 cancels the group while
 * the rest are being spawned), nested (30 children each spawning 15
 * grandchildren into a group of its own, nested in the first; child 5
 * cancels the outer group after spawning), loop_inside and loop_outside
 * (pool_parallel_for whose bodies call pool_fail() past item 300 of 600),
 * reduce_inside (the same with pool_parallel_reduce: the result is the
 * identity). WSPOOL_STRESS repeats each sweep. Skipped (77) under
 * sanitizers (fault.h). */
#include "fault.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <wspool.h>

#include "../cancel/cancel_util.h"
#include "check.h"
#include "testutil.h"

enum { N = 600, CANCEL_AT = 200, NC = 30, NG = 15, NEST_CANCEL = 5, LOOP_AT = 300 };

static atomic_uint *flags;
static char accepted[N];
static pool_t *pool;
static skip_count base0;         /* the pool's skip counters before the run */
static pool_group_t *cur_group;  /* the group the canceller cancels */

static void mark(void *arg) { atomic_fetch_add(&flags[(uintptr_t)arg], 1); }

static void ok_or(int rc, int a, int b) {
  if (rc != 0 && rc != a && rc != b) {
    fprintf(stderr, "unexpected %d (%s)\n", rc, pool_strerror(rc));
    CHECK(0);
  }
}

static void reset_marks(void) {
  for (size_t i = 0; i < N; i++) atomic_store(&flags[i], 0);
  memset(accepted, 0, sizeof accepted);
}

/* Refused never ran, accepted at most once; returns how many ran. */
static uint64_t count_marks(size_t n) {
  uint64_t ran = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned v = atomic_load(&flags[i]);
    if (v > (accepted[i] ? 1u : 0u)) {
      fprintf(stderr, "task %zu (accepted %d) ran %u times\n", i, accepted[i], v);
      CHECK(0);
    }
    ran += v;
  }
  return ran;
}

static uint64_t count_accepted(size_t n) {
  uint64_t a = 0;
  for (size_t i = 0; i < n; i++) a += accepted[i] != 0;
  return a;
}

static void run_in_task(pool_fn fn, int *submit_rc) {
  *submit_rc = pool_submit(pool, fn, NULL);
  ok_or(*submit_rc, ENOMEM, 0);
  CHECK_OK(pool_wait_idle(pool));
}

/* ---- a group cancelled by one of its children while it is spawned ------ */

static int group_rc;

static void cancelling_child(void *arg) {
  mark(arg);
  CHECK_OK(pool_group_cancel(cur_group));
}

static void group_all(void) {
  pool_group_t g;
  CHECK_OK(pool_group_init(&g, pool_current() ? NULL : pool));
  cur_group = &g;
  for (size_t i = 0; i < N; i++) {
    int rc = pool_group_spawn(&g, i == CANCEL_AT ? cancelling_child : mark, (void *)(uintptr_t)i);
    ok_or(rc, ENOMEM, 0);
    accepted[i] = rc == 0;
  }
  group_rc = pool_group_wait(&g);
}

static void grouper(void *arg) {
  (void)arg;
  group_all();
}

static void group_check(void) {
  uint64_t ran = count_marks(N), acc = count_accepted(N);
  if (accepted[CANCEL_AT]) {
    CHECK_EQ(group_rc, ECANCELED);
    CHECK_EQ(atomic_load(&flags[CANCEL_AT]), 1);
  } else {
    CHECK_OK(group_rc);
    CHECK_EQ(ran, acc);
  }
  skip_expect(pool, base0, acc - ran, 0, "group");
}

static void sc_group_outside(void) {
  reset_marks();
  group_rc = -1;
  group_all();
  fault_alloc_arm(0);
  group_check();
}

static void sc_group_inside(void) {
  reset_marks();
  group_rc = -1;
  int rc;
  run_in_task(grouper, &rc);
  fault_alloc_arm(0);
  if (rc == 0) group_check();
}

/* ---- nested groups, the outer one cancelled ------------------------------ */

static int nest_rc[NC];
static int outer_rc;

/* Child k is flags[k]; its grandchild j is flags[NC + k * NG + j]. */
static void nest_child(void *arg) {
  size_t k = (size_t)(uintptr_t)arg;
  mark(arg);
  pool_group_t g;
  CHECK_OK(pool_group_init(&g, NULL));
  for (size_t j = 0; j < NG; j++) {
    size_t i = NC + k * NG + j;
    int rc = pool_group_spawn(&g, mark, (void *)(uintptr_t)i);
    ok_or(rc, ENOMEM, 0);
    accepted[i] = rc == 0;
  }
  if (k == NEST_CANCEL) CHECK_OK(pool_group_cancel(cur_group));
  int rc = pool_group_wait(&g);
  ok_or(rc, ECANCELED, ECANCELED);
  if (k == NEST_CANCEL) CHECK_EQ(rc, ECANCELED); /* nested in what it cancelled */
  nest_rc[k] = rc;
}

static void nester(void *arg) {
  (void)arg;
  pool_group_t g;
  CHECK_OK(pool_group_init(&g, NULL));
  cur_group = &g;
  for (size_t k = 0; k < NC; k++) {
    int rc = pool_group_spawn(&g, nest_child, (void *)(uintptr_t)k);
    ok_or(rc, ENOMEM, 0);
    accepted[k] = rc == 0;
  }
  outer_rc = pool_group_wait(&g);
}

static void sc_nested(void) {
  reset_marks();
  for (size_t k = 0; k < NC; k++) nest_rc[k] = -1;
  outer_rc = -1;
  int rc;
  run_in_task(nester, &rc);
  fault_alloc_arm(0);
  if (rc) return;
  size_t n = NC + NC * NG;
  uint64_t ran = count_marks(n), acc = count_accepted(n);
  CHECK_EQ(outer_rc, accepted[NEST_CANCEL] ? ECANCELED : 0);
  for (size_t k = 0; k < NC; k++) {
    if (!atomic_load(&flags[k])) continue;
    if (nest_rc[k] == 0) /* not cancelled: every accepted grandchild ran */
      for (size_t j = 0; j < NG; j++) {
        size_t i = NC + k * NG + j;
        CHECK_EQ(atomic_load(&flags[i]), accepted[i] ? 1 : 0);
      }
  }
  skip_expect(pool, base0, acc - ran, 0, "nested");
}

/* ---- loops failing midway ------------------------------------------------- */

static atomic_size_t loop_count;
static atomic_uint loop_winners;
static int loop_rc;

static int loop_step(size_t b, size_t e) {
  for (size_t i = b; i < e; i++) atomic_fetch_add(&flags[i], 1);
  size_t before = atomic_fetch_add(&loop_count, e - b);
  if (before + (e - b) <= LOOP_AT) return 0;
  int rc = pool_fail(EDOM);
  if (rc == 0) atomic_fetch_add(&loop_winners, 1);
  else CHECK_EQ(rc, EALREADY);
  return 1;
}

static void loop_body(size_t b, size_t e, void *ctx) {
  (void)ctx;
  loop_step(b, e);
}

static void reduce_body(size_t b, size_t e, void *acc, void *ctx) {
  (void)ctx;
  loop_step(b, e);
  for (size_t i = b; i < e; i++) *(uint64_t *)acc += i + 1;
}

static uint64_t reduce_out;
static int use_reduce;

static void looper(void *arg) {
  (void)arg;
  if (use_reduce) {
    uint64_t zero = 0;
    pool_reducer_t r = {sizeof(uint64_t), &zero, reduce_body, sum_combine, NULL, 0};
    reduce_out = 12345;
    loop_rc = pool_parallel_reduce(pool_current() ? NULL : pool, 0, N, 3, &r, &reduce_out);
  } else {
    loop_rc = pool_parallel_for(pool_current() ? NULL : pool, 0, N, 3, loop_body, NULL);
  }
}

/* Runs the loop; `inside`: from a task (exact accounting). */
static void sc_loop(int inside, int reduce) {
  reset_marks();
  for (size_t i = 0; i < N; i++) accepted[i] = 1;
  atomic_store(&loop_count, 0);
  atomic_store(&loop_winners, 0);
  loop_rc = -1;
  use_reduce = reduce;
  int rc = 0;
  if (inside)
    run_in_task(looper, &rc);
  else
    looper(NULL);
  fault_alloc_arm(0);
  if (rc) return;
  ok_or(loop_rc, EDOM, ENOMEM);
  uint64_t ran = count_marks(N);
  if (loop_rc == ENOMEM) {
    if (ran != 0) FAIL("the loop returned ENOMEM having run %llu items\n", (unsigned long long)ran);
    return;
  }
  CHECK_EQ(loop_rc, EDOM);
  CHECK(ran > LOOP_AT);
  CHECK_EQ(atomic_load(&loop_winners), 1);
  if (reduce) CHECK_EQ(reduce_out, 0);
  if (inside) {
    skip_expect(pool, base0, 0, N - ran, reduce ? "reduce from a task" : "loop from a task");
  } else {
    skip_count c = skip_read(pool);
    CHECK(c.items - base0.items <= N - ran);
    CHECK_EQ(c.skipped - base0.skipped, 0);
  }
}

static void sc_loop_inside(void) { sc_loop(1, 0); }
static void sc_loop_outside(void) { sc_loop(0, 0); }
static void sc_reduce_inside(void) { sc_loop(1, 1); }

typedef struct scenario {
  const char *name;
  void (*run)(void);
} scenario;

#define SCENARIOS(X)                       \
  X(group_outside, sc_group_outside)       \
  X(group_inside, sc_group_inside)         \
  X(nested, sc_nested)                     \
  X(loop_inside, sc_loop_inside)           \
  X(loop_outside, sc_loop_outside)         \
  X(reduce_inside, sc_reduce_inside)

#define SCENARIO_ENTRY(name, run) {#name, run},
static const scenario scenarios[] = {SCENARIOS(SCENARIO_ENTRY)};

static int check_leaks; /* the case's scenario has been warmed up */

/* One run with the k-th allocation failing; returns whether it did. */
static int run_once(const scenario *s, long k) {
  long live = fault_live();
  pool_config_t cfg;
  pool_config_default(&cfg);
  cfg.threads = 2;
  CHECK_OK(pool_create(&pool, &cfg));
  base0 = skip_read(pool);
  fault_alloc_arm(k);
  s->run();
  fault_alloc_arm(0);
  int hit = fault_alloc_failed();
  CHECK_OK(pool_destroy(pool));
  if (check_leaks && fault_live() != live) {
    fprintf(stderr, "%s, allocation %ld failing: %ld allocations leaked\n", s->name, k,
            fault_live() - live);
    CHECK(0);
  }
  return hit;
}

static void warm_up(void) { flags = flags_alloc(N); }

/* The case: its scenario twice without a failure (which warms up the free
 * list of pool structs and the C library's lazily made state: stdio,
 * thread stacks; each case warms its own, so that one scenario's failure
 * never hides the others), then every k = 1, 2, ... until a run where no
 * k-th allocation happened, WSPOOL_STRESS times. */
static void sweep(const char *name) {
  const scenario *s = NULL;
  for (size_t i = 0; i < sizeof scenarios / sizeof scenarios[0]; i++)
    if (!strcmp(scenarios[i].name, name)) s = &scenarios[i];
  CHECK(s != NULL);
  check_leaks = 0;
  for (int w = 0; w < 2; w++) run_once(s, 0);
  check_leaks = 1;
  unsigned long rounds = check_iters(1);
  for (unsigned long r = 0; r < rounds; r++) {
    long k = 1;
    while (run_once(s, k)) k++;
    if (r == 0) fprintf(stderr, "%-16s %ld allocation points\n", s->name, k - 1);
  }
}

#define SCENARIO_CASE(name, run) \
  static void case_##name(void) { sweep(#name); }
SCENARIOS(SCENARIO_CASE)

#define SCENARIO_TEST(name, run) TEST_CASE(name),
TEST_MAIN_WITH(FAULT_AVAILABLE ? NULL : FAULT_UNAVAILABLE, warm_up, 240, SCENARIOS(SCENARIO_TEST))
