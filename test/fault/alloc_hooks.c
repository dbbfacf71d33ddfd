/* SPDX-License-Identifier: MIT */
/* Allocator hooks and pool_memory() (include/wspool.h, \ref memory). The
 * hooks here count: calls, live blocks and live bytes (each block's size
 * kept in a header before it, with a tag that free checks), and can be
 * armed to fail their k-th call.
 *
 *  one_null        exactly one of alloc_fn and free_fn set: EINVAL, and
 *                  neither hook is called.
 *  workload        a 2-worker pool with hooks runs submits from outside
 *                  and from tasks, fork/join, groups (inside and outside),
 *                  parallel_for, parallel_reduce and jobs with 40
 *                  predecessors; at each idle point pool_memory() equals
 *                  the hooks' live bytes; after destroy the hooks hold
 *                  nothing (allocs == frees, 0 bytes). With fault.h's
 *                  interposer (not under the sanitizers): during a second
 *                  run of the workload (no thread starts), every C-library
 *                  allocation call is one the hooks made, but for the
 *                  job's two edge blocks (the header's exception: they may
 *                  outlive the pool), and the live ones match (no
 *                  bypass).
 *  bound           the same workload on a pool bound to cores (placement
 *                  plan, victims and worker blocks, cache-line aligned
 *                  inside the hooks' blocks, NUMA-local or not): the same
 *                  counts, nothing left after destroy.
 *  blocking        tasks in blocking regions bring in stand-ins; their
 *                  blocks go through the hooks too (counted, freed).
 *  burst           with hooks and without: 40000 outside submissions while
 *                  the workers are held grow the global queue's ring:
 *                  pool_memory() grows by at least the ring, then, once
 *                  the pool is idle, the ring trim brings it back to where
 *                  it was (waited for, bounded by the watchdog); with hooks
 *                  it equals their live bytes throughout.
 *  fail_sweep      for k = 1, 2, ...: the hooks' k-th call fails, in
 *                  pool_create or in the workload, until a run in which no
 *                  k-th call happened. Each call returns 0 or ENOMEM; each
 *                  task accepted runs exactly once; after destroy the hooks
 *                  hold nothing. Then the same for pool_create alone on a
 *                  pool bound with SPREAD (its plan's temporaries).
 *  errors          pool_memory: EINVAL for NULL bytes; ESHUTDOWN after
 *                  destroy; in a child of fork(), EOWNERDEAD, and the
 *                  child's pool_destroy() gives every block back through
 *                  the hooks. */
#include "fault.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <wspool.h>

#include "check.h"
#include "testutil.h"

/* ---- the counting allocator ------------------------------------------------ */

#define TAG 0x600dc0de5a11ull

typedef struct acct {
  atomic_long allocs, frees, live_blocks, fail_at; /* fail_at > 0: armed */
  atomic_size_t live_bytes;
  atomic_int failed;
} acct_t;

typedef struct hdr {
  size_t size;
  uint64_t tag;
} hdr_t;

static void *acct_alloc(void *ctx, size_t size) {
  acct_t *a = ctx;
  if (atomic_load(&a->fail_at) > 0 && atomic_fetch_sub(&a->fail_at, 1) == 1) {
    atomic_store(&a->failed, 1);
    return NULL;
  }
  hdr_t *h = malloc(sizeof(hdr_t) + size);
  if (!h) return NULL;
  h->size = size;
  h->tag = TAG;
  atomic_fetch_add(&a->allocs, 1);
  atomic_fetch_add(&a->live_blocks, 1);
  atomic_fetch_add(&a->live_bytes, size);
  return h + 1;
}

static void acct_free(void *ctx, void *p) {
  acct_t *a = ctx;
  CHECK(p != NULL);
  hdr_t *h = (hdr_t *)p - 1;
  CHECK_EQ(h->tag, TAG); /* one of ours, freed once */
  h->tag = 0;
  atomic_fetch_add(&a->frees, 1);
  atomic_fetch_sub(&a->live_blocks, 1);
  atomic_fetch_sub(&a->live_bytes, h->size);
  free(h);
}

static void acct_reset(acct_t *a) {
  atomic_store(&a->allocs, 0);
  atomic_store(&a->frees, 0);
  atomic_store(&a->live_blocks, 0);
  atomic_store(&a->live_bytes, 0);
  atomic_store(&a->fail_at, 0);
  atomic_store(&a->failed, 0);
}

static void acct_check_empty(acct_t *a) {
  CHECK_EQ(atomic_load(&a->live_bytes), 0);
  CHECK_EQ(atomic_load(&a->live_blocks), 0);
  CHECK_EQ(atomic_load(&a->allocs), atomic_load(&a->frees));
}

/* With a start hook, pool_create() returns once every worker has started
 * (wspool.h, \ref hooks). A worker thread's start makes the C library's
 * own allocations (pthread_getattr_np() for its stack bounds), which no
 * hook can see; without the hook, a worker the scheduler kept off its CPU
 * through the first run made them inside workload's checked window. */
static int hooked_pool_bind(pool_t **out, unsigned threads, acct_t *a, pool_bind_t bind) {
  pool_config_t cfg;
  pool_config_default(&cfg);
  cfg.threads = threads;
  cfg.bind = bind;
  cfg.on_worker_start = start_hook_nothing;
  if (a) {
    cfg.alloc_fn = acct_alloc;
    cfg.free_fn = acct_free;
    cfg.alloc_ctx = a;
  }
  return pool_create(out, &cfg);
}

static int hooked_pool(pool_t **out, unsigned threads, acct_t *a) {
  return hooked_pool_bind(out, threads, a, POOL_BIND_NONE);
}

/* Waits (bounded by the watchdog) until pool_memory() equals the hooks'
 * live bytes: once the pool is idle every count has landed, but a worker
 * may still be between its last free and its next sleep. */
static size_t settle(pool_t *p, acct_t *a) {
  size_t m = 0;
  for (unsigned i = 0;; i++) {
    CHECK_OK(pool_memory(p, &m));
    if (m == atomic_load(&a->live_bytes)) return m;
    if (i > 20000) CHECK_EQ(m, atomic_load(&a->live_bytes));
    sleep_ms(1);
  }
}

/* ---- the workload ------------------------------------------------------------ */

static atomic_long ran;

static void count_task(void *arg) {
  (void)arg;
  atomic_fetch_add_explicit(&ran, 1, memory_order_relaxed);
}

static void nop_range(size_t b, size_t e, void *ctx) {
  (void)ctx;
  atomic_fetch_add_explicit(&ran, (long)(e - b), memory_order_relaxed);
}

enum { INNER = 300, NPRED = 40 };
/* The successor's edge blocks, from the C library: its edges past the two
 * it holds, 31 a block. */
enum { EDGE_BLOCKS = (NPRED - 2 + 30) / 31 };

typedef struct inner_arg {
  long accepted; /* tasks this task's calls accepted */
  int strict;    /* every call must succeed */
} inner_arg;

/* Run on a worker: submits, fork/join, a group, a loop, a reduce. */
static void inner(void *p) {
  inner_arg *ia = p;
  for (int i = 0; i < INNER; i++) {
    int rc = pool_submit(NULL, count_task, NULL);
    CHECK(rc == 0 || (!ia->strict && rc == ENOMEM));
    ia->accepted += rc == 0;
  }
  fib_arg f = {18, 0};
  fib_task(&f); /* a spawn that cannot allocate runs inline */
  CHECK_EQ(f.r, fib_seq(18));
  pool_group_t g;
  CHECK_OK(pool_group_init(&g, NULL));
  for (int i = 0; i < 100; i++) {
    int rc = pool_group_spawn(&g, count_task, NULL);
    CHECK(rc == 0 || (!ia->strict && rc == ENOMEM));
    ia->accepted += rc == 0;
  }
  CHECK_OK(pool_group_wait(&g));
  CHECK_OK(pool_parallel_for(NULL, 0, 5000, 16, nop_range, NULL));
  ia->accepted += 5000;
  uint64_t sum = 0, zero = 0;
  pool_reducer_t r = {sizeof(uint64_t), &zero, sum_body, sum_combine, NULL, 0};
  int rc = pool_parallel_reduce(NULL, 0, 10000, 8, &r, &sum);
  CHECK(rc == 0 || (!ia->strict && rc == ENOMEM));
  if (rc == 0) CHECK_EQ(sum, (uint64_t)10000 * 9999 / 2);
}

/* Everything once on pool p; returns the tasks its calls accepted (each
 * must run once: the caller compares with `ran`). */
static long workload(pool_t *p, int strict) {
  long accepted = 0;
  for (int i = 0; i < 2000; i++) {
    int rc = pool_submit(p, count_task, NULL);
    CHECK(rc == 0 || (!strict && rc == ENOMEM));
    accepted += rc == 0;
  }
  /* From outside, a join or a spawn goes through the global queue, whose
   * ring may have to grow: ENOMEM then, and nothing ran. */
  inner_arg ia[4] = {{0, strict}, {0, strict}, {0, strict}, {0, strict}};
  int rc = pool_join(p, inner, &ia[0], inner, &ia[1]);
  CHECK(rc == 0 || (!strict && rc == ENOMEM));
  pool_task_t t;
  rc = pool_spawn(p, &t, inner, &ia[2]);
  CHECK(rc == 0 || (!strict && rc == ENOMEM));
  if (rc == 0) CHECK_OK(pool_sync(&t));
  /* A group from outside: its children are nodes from the hooks. */
  pool_group_t g;
  CHECK_OK(pool_group_init(&g, p));
  rc = pool_group_spawn(&g, inner, &ia[3]);
  CHECK(rc == 0 || (!strict && rc == ENOMEM));
  for (int i = 0; i < 200; i++) {
    int r2 = pool_group_spawn(&g, count_task, NULL);
    CHECK(r2 == 0 || (!strict && r2 == ENOMEM));
    accepted += r2 == 0;
  }
  CHECK_OK(pool_group_wait(&g));
  if (rc != 0) ia[3].accepted = 0;
  for (int i = 0; i < 4; i++) accepted += ia[i].accepted;
  CHECK_OK(pool_parallel_for(p, 0, 20000, 0, nop_range, NULL));
  accepted += 20000;
  /* Jobs: one successor after NPRED predecessors (edge blocks beyond the
   * first two), all on the pool. */
  static pool_job_t pred[NPRED], succ;
  CHECK_OK(pool_job_init(&succ, p, count_task, NULL));
  int edges = 0;
  for (int i = 0; i < NPRED; i++) {
    CHECK_OK(pool_job_init(&pred[i], p, count_task, NULL));
    rc = pool_job_after(&succ, &pred[i]);
    CHECK(rc == 0 || (!strict && rc == ENOMEM));
    edges += rc == 0;
  }
  for (int i = 0; i < NPRED; i++) {
    rc = pool_job_start(&pred[i]);
    CHECK(rc == 0 || (!strict && rc == ENOMEM));
  }
  rc = pool_job_start(&succ);
  CHECK(rc == 0 || (!strict && rc == ENOMEM));
  for (int i = 0; i < NPRED; i++) {
    int st = pool_job_wait(&pred[i]);
    CHECK(st == 0 || (!strict && st == ENOMEM));
    accepted += st == 0;
  }
  int st = pool_job_wait(&succ);
  CHECK(st == 0 || (!strict && st != 0));
  accepted += st == 0;
  (void)edges;
  CHECK_OK(pool_wait_idle(p));
  return accepted;
}

static void run_checked(pool_t *p, int strict) {
  atomic_store(&ran, 0);
  long accepted = workload(p, strict);
  CHECK_OK(pool_wait_idle(p));
  CHECK_EQ(atomic_load(&ran), accepted);
}

/* ---- cases -------------------------------------------------------------------- */

static void case_one_null(void) {
  acct_t a;
  acct_reset(&a);
  pool_config_t cfg;
  pool_config_default(&cfg);
  cfg.threads = 2;
  cfg.alloc_ctx = &a;
  pool_t *p = NULL;
  cfg.alloc_fn = acct_alloc;
  CHECK_EQ(pool_create(&p, &cfg), EINVAL);
  cfg.alloc_fn = NULL;
  cfg.free_fn = acct_free;
  CHECK_EQ(pool_create(&p, &cfg), EINVAL);
  CHECK(p == NULL);
  CHECK_EQ(atomic_load(&a.allocs), 0);
}

static void case_workload(void) {
  acct_t a;
  acct_reset(&a);
  pool_t *p;
  CHECK_OK(hooked_pool(&p, 2, &a));
  size_t m0 = settle(p, &a);
  CHECK(m0 > 0);
  /* The first run makes what stays (deques, caches); the second, checked
   * for bypass, should find the C library's live blocks moving only with
   * the hooks' own. */
  run_checked(p, 1);
  settle(p, &a);
  long lib0 = fault_live(), hook0 = atomic_load(&a.live_blocks);
  long calls0 = fault_allocs(), hcalls0 = atomic_load(&a.allocs);
  run_checked(p, 1);
  settle(p, &a);
  if (FAULT_AVAILABLE) {
    CHECK_EQ(fault_allocs() - calls0, atomic_load(&a.allocs) - hcalls0 + EDGE_BLOCKS);
    CHECK_EQ(fault_live() - lib0, atomic_load(&a.live_blocks) - hook0);
  }
  CHECK(atomic_load(&a.allocs) > 10);
  CHECK_OK(pool_destroy(p));
  acct_check_empty(&a);
}

/* Where binding is impossible the pool starts unbound (a warning): the
 * plan is made either way. */
static void case_bound(void) {
  acct_t a;
  acct_reset(&a);
  pool_t *p;
  CHECK_OK(hooked_pool_bind(&p, 2, &a, POOL_BIND_CORE));
  settle(p, &a);
  run_checked(p, 1);
  settle(p, &a);
  CHECK_OK(pool_destroy(p));
  acct_check_empty(&a);
}

static atomic_int in_region;

static void blocker(void *arg) {
  (void)arg;
  CHECK_OK(pool_blocking_begin());
  atomic_fetch_add(&in_region, 1);
  sleep_ms(20);
  CHECK_OK(pool_blocking_end());
  atomic_fetch_add_explicit(&ran, 1, memory_order_relaxed);
}

static void case_blocking(void) {
  acct_t a;
  acct_reset(&a);
  pool_t *p;
  CHECK_OK(hooked_pool(&p, 2, &a));
  size_t m0 = settle(p, &a);
  atomic_store(&ran, 0);
  for (int i = 0; i < 8; i++) CHECK_OK(pool_submit(p, blocker, NULL));
  for (int i = 0; i < 2000; i++) CHECK_OK(pool_submit(p, count_task, NULL));
  CHECK_OK(pool_wait_idle(p));
  CHECK_EQ(atomic_load(&ran), 2008);
  size_t m1 = settle(p, &a);
  CHECK(m1 > m0); /* stand-in blocks, from the hooks */
  CHECK_OK(pool_destroy(p));
  acct_check_empty(&a);
}

static atomic_int hold_flag, holding;

static void hold(void *arg) {
  (void)arg;
  atomic_fetch_add(&holding, 1);
  while (!atomic_load(&hold_flag)) sleep_ms(1);
}

static void burst(int hooks) {
  enum { N = 40000, RING_ENTRY = 16 };
  acct_t a;
  acct_reset(&a);
  pool_t *p;
  CHECK_OK(hooked_pool(&p, 2, hooks ? &a : NULL));
  CHECK_OK(pool_wait_idle(p));
  size_t m0;
  if (hooks)
    m0 = settle(p, &a);
  else
    CHECK_OK(pool_memory(p, &m0));
  atomic_store(&hold_flag, 0);
  atomic_store(&holding, 0);
  atomic_store(&ran, 0);
  CHECK_OK(pool_submit(p, hold, NULL));
  CHECK_OK(pool_submit(p, hold, NULL));
  while (atomic_load(&holding) < 2) sleep_ms(1); /* both workers held */
  for (int i = 0; i < N; i++) CHECK_OK(pool_submit(p, count_task, NULL));
  size_t m1;
  CHECK_OK(pool_memory(p, &m1));
  /* The ring grew to hold them (at least N entries; the first ring of
   * 256 is gone). */
  CHECK(m1 >= m0 + (size_t)N * RING_ENTRY / 2);
  atomic_store(&hold_flag, 1);
  CHECK_OK(pool_wait_idle(p));
  CHECK_EQ(atomic_load(&ran), N);
  /* The idle trim gives the ring back: wait for it. */
  for (;;) {
    size_t m;
    CHECK_OK(pool_memory(p, &m));
    if (m < m0 + (size_t)N * RING_ENTRY / 2 && (!hooks || m == atomic_load(&a.live_bytes))) break;
    sleep_ms(1);
  }
  CHECK_OK(pool_destroy(p));
  if (hooks) acct_check_empty(&a);
}

static void case_burst(void) {
  burst(1);
  burst(0);
}

static void case_fail_sweep(void) {
  acct_t a;
  for (long k = 1;; k++) {
    acct_reset(&a);
    atomic_store(&a.fail_at, k);
    pool_t *p = NULL;
    int rc = hooked_pool(&p, 2, &a);
    if (rc != 0) {
      CHECK_EQ(rc, ENOMEM);
      CHECK(atomic_load(&a.failed));
      acct_check_empty(&a);
      continue;
    }
    run_checked(p, 0);
    CHECK_OK(pool_destroy(p));
    acct_check_empty(&a);
    if (!atomic_load(&a.failed)) break; /* no k-th call: past the last */
    CHECK(k < 1000000);
    /* Every point of pool_create and the first few hundred; beyond, a
     * stride (the workload's calls repeat the same sites). */
    if (k > 400) k += k / (TEST_UNDER_SANITIZER ? 4 : 32);
  }
  for (long k = 1;; k++) {
    acct_reset(&a);
    atomic_store(&a.fail_at, k);
    pool_t *p = NULL;
    int rc = hooked_pool_bind(&p, 3, &a, POOL_BIND_SPREAD);
    CHECK(rc == 0 || rc == ENOMEM);
    CHECK_EQ(rc != 0, atomic_load(&a.failed));
    if (rc == 0) CHECK_OK(pool_destroy(p));
    acct_check_empty(&a);
    if (rc == 0) break;
    CHECK(k < 10000);
  }
}

static void case_errors(void) {
  acct_t a;
  acct_reset(&a);
  pool_t *p;
  CHECK_OK(hooked_pool(&p, 2, &a));
  CHECK_EQ(pool_memory(p, NULL), EINVAL);
  run_checked(p, 1);
  settle(p, &a);
  fflush(stdout);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    size_t m;
    int ok = pool_memory(p, &m) == EOWNERDEAD && pool_destroy(p) == 0 &&
             atomic_load(&a.live_bytes) == 0 && atomic_load(&a.live_blocks) == 0;
    _exit(ok ? 0 : 1);
  }
  child_ok(pid, "the child");
  CHECK_OK(pool_destroy(p));
  acct_check_empty(&a);
  size_t m;
  CHECK_EQ(pool_memory(p, &m), ESHUTDOWN); /* no pool_create since */
}

TEST_MAIN(240, TEST_CASE(one_null), TEST_CASE(workload), TEST_CASE(bound), TEST_CASE(blocking), TEST_CASE(burst),
          TEST_CASE(fail_sweep), TEST_CASE(errors))
