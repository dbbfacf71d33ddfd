/* SPDX-License-Identifier: MIT */
/* Allocation failure at every point (include/wspool.h, "Faults and
 * fork()"), injected with fault.h's malloc interposer, which sees the
 * library's allocations, hwloc's and the C library's.
 *
 * For each scenario and every k = 1, 2, ... the k-th allocation after the
 * scenario starts fails (in whatever thread makes it), until a run in which
 * no k-th allocation happened. Each run checks:
 *  - every return is success or a documented code (ENOMEM; EAGAIN for
 *    pool_create, whose threads may fail to start when the C library
 *    cannot allocate for them);
 *  - accepted work ran exactly once, refused work never;
 *  - nothing leaked: the count of live allocations is back to what it was
 *    (the pool is created and destroyed inside each run);
 *  - nothing hangs (watchdog).
 * Scenarios: pool_create unbound and POOL_BIND_CORE (after one bound create
 * loaded the process's topology: later creates never enter hwloc's loader;
 * see the header), outside and inside pool_submit, inside pool_submit_n
 * whose first entry helps while it waits, pool_spawn from outside
 * and inside (more frames than the private array and the deque start with),
 * groups from outside and inside, pool_parallel_for from outside and inside,
 * pool_parallel_reduce: one case each (their names in SCENARIOS below).
 * Then order_nomem: submission order kept when no batch can be allocated.
 * WSPOOL_STRESS repeats each sweep. Skipped (77) under sanitizers
 * (fault.h). */
#include "fault.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <wspool.h>

#include "check.h"
#include "testutil.h"

enum { N = 600 }; /* more than the queue, deque and frame arrays start with */

static atomic_uint *flags;
static pool_t *pool;
static int bound;

static void mark(void *arg) { atomic_fetch_add(&flags[(uintptr_t)arg], 1); }

/* Each accepted index ran once, each refused one never. */
static void check_marks(const char *accepted, size_t n) {
  for (size_t i = 0; i < n; i++) {
    unsigned v = atomic_load(&flags[i]);
    if (v != (accepted[i] ? 1u : 0u)) {
      fprintf(stderr, "task %zu (accepted %d) ran %u times\n", i, accepted[i], v);
      CHECK(0);
    }
  }
}

static void reset_marks(void) {
  for (size_t i = 0; i < N; i++) atomic_store(&flags[i], 0);
}

static void ok_or(int rc, int a, int b) {
  if (rc != 0 && rc != a && rc != b) {
    fprintf(stderr, "unexpected %d (%s)\n", rc, pool_strerror(rc));
    CHECK(0);
  }
}

static pool_t *scenario_pool(void) {
  pool_config_t cfg;
  pool_config_default(&cfg);
  cfg.threads = 2;
  cfg.bind = bound ? POOL_BIND_CORE : POOL_BIND_NONE;
  pool_t *p = NULL;
  CHECK_OK(pool_create(&p, &cfg));
  return p;
}

/* ---- scenarios: each returns with the pool destroyed ------------------- */

static void sc_create(void) {
  pool_config_t cfg;
  pool_config_default(&cfg);
  cfg.threads = 3;
  cfg.bind = bound ? POOL_BIND_CORE : POOL_BIND_NONE;
  pool_t *p = (pool_t *)&p;
  int rc = pool_create(&p, &cfg);
  fault_alloc_arm(0);
  ok_or(rc, ENOMEM, EAGAIN);
  if (rc) {
    CHECK(p == (pool_t *)&p);
    return;
  }
  reset_marks();
  CHECK_OK(pool_submit(p, mark, (void *)0));
  CHECK_OK(pool_destroy(p));
  CHECK_EQ(atomic_load(&flags[0]), 1);
}

static atomic_int hold; /* keeps the first task busy so the queue fills */

static void holder(void *arg) {
  (void)arg;
  while (atomic_load(&hold)) sched_yield();
}

static char accepted[N];

static void sc_submit_outside(void) {
  reset_marks();
  atomic_store(&hold, 1);
  pool_t *p = pool;
  int first = pool_submit(p, holder, NULL);
  ok_or(first, ENOMEM, 0);
  for (size_t i = 0; i < N; i++) {
    int rc = pool_submit(p, mark, (void *)(uintptr_t)i);
    ok_or(rc, ENOMEM, 0);
    accepted[i] = rc == 0;
  }
  atomic_store(&hold, 0);
  CHECK_OK(pool_wait_idle(p));
  fault_alloc_arm(0);
  check_marks(accepted, N);
}

static void inside_submitter(void *arg) {
  (void)arg;
  for (size_t i = 0; i < N; i++) {
    int rc = pool_submit(NULL, mark, (void *)(uintptr_t)i);
    ok_or(rc, ENOMEM, 0);
    accepted[i] = rc == 0;
  }
}

/* A task running `fn`, which fills accepted[]. */
static void sc_inside(pool_fn fn) {
  reset_marks();
  memset(accepted, 0, sizeof accepted);
  int rc = pool_submit(pool, fn, NULL);
  ok_or(rc, ENOMEM, 0);
  CHECK_OK(pool_wait_idle(pool));
  fault_alloc_arm(0);
  if (rc == 0) check_marks(accepted, N);
}

/* `all` from this outside thread, which fills accepted[]. */
static void sc_outside(void (*all)(void)) {
  reset_marks();
  all();
  fault_alloc_arm(0);
  check_marks(accepted, N);
}

static void sc_submit_inside(void) { sc_inside(inside_submitter); }

/* A batch whose first entry helps while it waits, on a pool of one worker
 * (so the order is fixed): a task queues a group child (index N - 1), then
 * N - 1 tasks with one pool_submit_n; the first of them to run waits for
 * the group and, helping, pops its own batch's steal handle while entries
 * remain (runtime/submit.c). The batch made of the rest can fail to
 * allocate; the rest must still run, once. */
static pool_group_t help_group;
static atomic_int help_waited;

static void helping_entry(void *arg) {
  if (!atomic_exchange(&help_waited, 1)) CHECK_OK(pool_group_wait(&help_group));
  mark(arg);
}

static void helping_submitter(void *arg) {
  (void)arg;
  static void *args[N - 1];
  for (size_t i = 0; i < N - 1; i++) args[i] = (void *)(uintptr_t)i;
  CHECK_OK(pool_group_init(&help_group, NULL));
  int rc = pool_group_spawn(&help_group, mark, (void *)(uintptr_t)(N - 1));
  ok_or(rc, ENOMEM, 0);
  accepted[N - 1] = rc == 0;
  rc = pool_submit_n(NULL, helping_entry, args, N - 1);
  ok_or(rc, ENOMEM, 0);
  memset(accepted, rc == 0, N - 1);
}

static void sc_submit_helping(void) {
  reset_marks();
  atomic_store(&help_waited, 0);
  memset(accepted, 0, sizeof accepted);
  pool_config_t cfg;
  pool_config_default(&cfg);
  cfg.threads = 1;
  pool_t *p = NULL;
  int rc = pool_create(&p, &cfg);
  ok_or(rc, ENOMEM, EAGAIN);
  if (rc) {
    fault_alloc_arm(0);
    return;
  }
  rc = pool_submit(p, helping_submitter, NULL);
  ok_or(rc, ENOMEM, 0);
  CHECK_OK(pool_wait_idle(p));
  fault_alloc_arm(0);
  CHECK_OK(pool_destroy(p));
  if (rc == 0) check_marks(accepted, N);
}

static pool_task_t frames[N];

static void spawn_all(void) {
  for (size_t i = 0; i < N; i++) {
    int rc = pool_spawn(pool_current() ? NULL : pool, &frames[i], mark, (void *)(uintptr_t)i);
    ok_or(rc, ENOMEM, 0);
    accepted[i] = rc == 0;
  }
  for (size_t i = N; i-- > 0;)
    if (accepted[i]) CHECK_OK(pool_sync(&frames[i]));
}

static void spawner(void *arg) {
  (void)arg;
  spawn_all();
}

static void sc_spawn_outside(void) { sc_outside(spawn_all); }
static void sc_spawn_inside(void) { sc_inside(spawner); }

static void group_all(void) {
  pool_group_t g;
  CHECK_OK(pool_group_init(&g, pool));
  for (size_t i = 0; i < N; i++) {
    int rc = pool_group_spawn(&g, mark, (void *)(uintptr_t)i);
    ok_or(rc, ENOMEM, 0);
    accepted[i] = rc == 0;
  }
  CHECK_OK(pool_group_wait(&g));
}

static void grouper(void *arg) {
  (void)arg;
  group_all();
}

static void sc_group_outside(void) { sc_outside(group_all); }
static void sc_group_inside(void) { sc_inside(grouper); }

static void range_mark(size_t b, size_t e, void *ctx) {
  (void)ctx;
  for (size_t i = b; i < e; i++) atomic_fetch_add(&flags[i], 1);
}

static int parfor_rc;
static void parfor_all(void) {
  parfor_rc = pool_parallel_for(pool_current() ? NULL : pool, 0, N, 3, range_mark, NULL);
  ok_or(parfor_rc, ENOMEM, 0);
}
static void parforer(void *arg) {
  (void)arg;
  parfor_all();
}

static void sc_parfor_outside(void) {
  reset_marks();
  parfor_all();
  fault_alloc_arm(0);
  memset(accepted, parfor_rc == 0, sizeof accepted);
  check_marks(accepted, N);
}

static void sc_parfor_inside(void) {
  reset_marks();
  parfor_rc = -1;
  int rc = pool_submit(pool, parforer, NULL);
  ok_or(rc, ENOMEM, 0);
  CHECK_OK(pool_wait_idle(pool));
  fault_alloc_arm(0);
  memset(accepted, rc == 0 && parfor_rc == 0, sizeof accepted);
  check_marks(accepted, N);
}

static void sc_reduce(void) {
  uint64_t zero = 0, out = 1;
  pool_reducer_t r = {sizeof(uint64_t), &zero, sum_body, sum_combine, NULL, 1};
  int rc = pool_parallel_reduce(pool, 0, 10000, 0, &r, &out);
  fault_alloc_arm(0);
  ok_or(rc, ENOMEM, 0);
  if (rc == 0) CHECK_EQ(out, (uint64_t)10000 * 9999 / 2);
}

typedef struct scenario {
  const char *name;
  void (*run)(void);
  int needs_pool;
  int bound;
} scenario;

/* X(case name, what it runs, whether it needs a pool, whether bound) */
#define SCENARIOS(X)                                  \
  X(create, sc_create, 0, 0)                          \
  X(create_bound, sc_create, 0, 1)                    \
  X(submit_outside, sc_submit_outside, 1, 0)          \
  X(submit_inside, sc_submit_inside, 1, 0)            \
  X(submit_helping, sc_submit_helping, 0, 0)          \
  X(spawn_outside, sc_spawn_outside, 1, 0)            \
  X(spawn_inside, sc_spawn_inside, 1, 0)              \
  X(group_outside, sc_group_outside, 1, 0)            \
  X(group_inside, sc_group_inside, 1, 0)              \
  X(parallel_for_outside, sc_parfor_outside, 1, 0)    \
  X(parallel_for_inside, sc_parfor_inside, 1, 0)      \
  X(parallel_for_bound, sc_parfor_outside, 1, 1)      \
  X(parallel_reduce, sc_reduce, 1, 0)

#define SCENARIO_ENTRY(name, run, needs_pool, bound) {#name, run, needs_pool, bound},
static const scenario scenarios[] = {SCENARIOS(SCENARIO_ENTRY)};

/* One run with the k-th allocation failing; returns whether it did. */
static int check_leaks;

static int run_once(const scenario *s, long k) {
  bound = s->bound;
  long live = fault_live();
  if (s->needs_pool) pool = scenario_pool();
  fault_alloc_arm(k);
  s->run();
  fault_alloc_arm(0); /* (each scenario disarms before it checks) */
  int hit = fault_alloc_failed();
  if (s->needs_pool) CHECK_OK(pool_destroy(pool));
  if (check_leaks && fault_live() != live) {
    fprintf(stderr, "%s, allocation %ld failing: %ld allocations leaked\n", s->name, k,
            fault_live() - live);
    CHECK(0);
  }
  return hit;
}

/* Warm up, before the first case: the shared topology, the free list of
 * pool structs, the C library's lazily made state (stdio, thread stacks). */
static void warm_up(void) {
  flags = flags_alloc(N);
  for (int w = 0; w < 2; w++)
    for (size_t i = 0; i < sizeof scenarios / sizeof scenarios[0]; i++) run_once(&scenarios[i], 0);
  check_leaks = 1;
}

/* The case: every k = 1, 2, ... until a run where no k-th allocation
 * happened, WSPOOL_STRESS times. */
static void sweep(const char *name) {
  const scenario *s = NULL;
  for (size_t i = 0; i < sizeof scenarios / sizeof scenarios[0]; i++)
    if (!strcmp(scenarios[i].name, name)) s = &scenarios[i];
  CHECK(s != NULL);
  unsigned long rounds = check_iters(1);
  for (unsigned long r = 0; r < rounds; r++) {
    long k = 1;
    while (run_once(s, k)) k++;
    if (r == 0) fprintf(stderr, "%-22s %ld allocation points\n", s->name, k - 1);
  }
}

/* Order with no memory for batches: a 1-worker pool is a FIFO executor
 * for one outside thread (wspool.h, pool_submit(), "Order") also when the
 * worker's look at the global queue cannot allocate a submit batch and
 * runs what it took itself. A task holds the worker while ORDER_N entries
 * queue (one look takes them all); then the next allocation fails, which
 * is the look's first batch (the newest entries). Each entry records the
 * position it started at. Repeated WSPOOL_STRESS times. */
enum { ORDER_N = 128 };

static atomic_int order_held, order_go;
static atomic_uint order_next;
static unsigned order_at[ORDER_N];

static void order_holder(void *arg) {
  (void)arg;
  atomic_store(&order_held, 1);
  while (!atomic_load(&order_go)) sleep_ms(1);
}

static void order_record(void *arg) { order_at[(uintptr_t)arg] = atomic_fetch_add(&order_next, 1); }

static void case_order_nomem(void) {
  unsigned long rounds = check_iters(1);
  for (unsigned long r = 0; r < rounds; r++) {
    pool_config_t cfg;
    pool_config_default(&cfg);
    cfg.threads = 1;
    cfg.on_worker_start = start_hook_nothing; /* create returns once it started */
    pool_t *p;
    CHECK_OK(pool_create(&p, &cfg));
    atomic_store(&order_held, 0);
    atomic_store(&order_go, 0);
    atomic_store(&order_next, 0);
    CHECK_OK(pool_submit(p, order_holder, NULL));
    while (!atomic_load(&order_held)) sleep_ms(1);
    for (size_t i = 0; i < ORDER_N; i++) CHECK_OK(pool_submit(p, order_record, (void *)(uintptr_t)i));
    fault_alloc_arm(1);
    atomic_store(&order_go, 1);
    CHECK_OK(pool_wait_idle(p));
    fault_alloc_arm(0);
    CHECK(fault_alloc_failed());
    for (size_t i = 0; i < ORDER_N; i++)
      if (order_at[i] != i) FAIL("entry %zu started %u-th\n", i, order_at[i]);
    CHECK_OK(pool_destroy(p));
  }
}

#define SCENARIO_CASE(name, run, needs_pool, bound) \
  static void case_##name(void) { sweep(#name); }
SCENARIOS(SCENARIO_CASE)

#define SCENARIO_TEST(name, run, needs_pool, bound) TEST_CASE(name),
TEST_MAIN_WITH(FAULT_AVAILABLE ? NULL : FAULT_UNAVAILABLE, warm_up, 240, SCENARIOS(SCENARIO_TEST)
                   TEST_CASE(order_nomem))
