/* SPDX-License-Identifier: MIT */
/* The counting build (-Dcount_atomics=true; runtime/count.h), checked on
 * cases whose counts are known exactly. Skipped (77) in every other build.
 *
 * 1. hooks: on the main thread (no worker), each atomics.h operation
 *    counts what count.h says: an RMW on a word of this stack as "stack",
 *    on a static word as "shared"; a CAS that fails counts (it is an RMW
 *    attempt all the same); an exchange counts; a seq_cst fence as
 *    "fence", an acquire or release one as "fence_ar", a relaxed one not
 *    at all; loads, stores and ws_counter_add (a load and a store) not at
 *    all.
 * 2. own_other: on a worker of a 2-worker pool, an RMW (fetch_add of 0)
 *    on its own block's word counts "own", on the other worker's block's
 *    word "other", on the pool struct's word "shared"; from the main
 *    thread both workers' words count "other"; once the pool is destroyed
 *    (its blocks freed and unregistered), that address counts "shared".
 * 3. fib_one_worker: fib(k) by pool_spawn/pool_sync inside a task on a
 *    1-worker pool, counted on that worker, for k = 16 and 10: exactly
 *    k - 1 RMWs, all on the worker's own block, and 2 (k - 1) seq_cst
 *    fences; no shared or other RMW, lock or wake. With no thief, a spawn
 *    stays on the private stack (runtime/split.h) unless the deque is
 *    empty, when the fast path is closed and the spawn publishes
 *    (spawn_slow: ws_fast_open's fence). So the frames spawned down the
 *    leftmost path, fib(k-1), fib(k-2) .. fib(1), are published, one at a
 *    time, and each one's sync pops it as the deque's last item
 *    (ws_deque_pop: a fence and the CAS of `top` in the worker's block).
 *    The other fib(k+1) - k spawns cost no atomic at all. A change in
 *    these numbers is a change in the fork/join path's atomics.
 * Cases: hooks, own_other, fib_one_worker. */
#include "check.h"
#include "count.h"
#include "scheduler.h"
#include "testutil.h"

/* The libatomic_ops backend makes every non-relaxed fence a full one. */
#ifdef WS_ATOMICS_AO
enum { WS_ATOMICS_FULL_FENCES = 1 };
#else
enum { WS_ATOMICS_FULL_FENCES = 0 };
#endif

static ws_count before_;

static void mark(void) { ws_count_self(&before_); }

/* The calling thread's counts since mark(), checked kind by kind. */
static void expect(const char *what, uint64_t shared, uint64_t other, uint64_t own,
                   uint64_t stack, uint64_t fence, uint64_t fence_ar) {
  ws_count now, d;
  ws_count_self(&now);
  ws_count_diff(&d, &now, &before_);
  if (d.n[WS_CNT_SHARED] != shared || d.n[WS_CNT_OTHER] != other || d.n[WS_CNT_OWN] != own ||
      d.n[WS_CNT_STACK] != stack || d.n[WS_CNT_FENCE] != fence ||
      d.n[WS_CNT_FENCE_AR] != fence_ar)
    FAIL("%s: counted shared %llu other %llu own %llu stack %llu fence %llu fence_ar %llu;"
               " expected %llu %llu %llu %llu %llu %llu\n",
               what, (unsigned long long)d.n[WS_CNT_SHARED], (unsigned long long)d.n[WS_CNT_OTHER],
               (unsigned long long)d.n[WS_CNT_OWN], (unsigned long long)d.n[WS_CNT_STACK],
               (unsigned long long)d.n[WS_CNT_FENCE], (unsigned long long)d.n[WS_CNT_FENCE_AR],
               (unsigned long long)shared, (unsigned long long)other, (unsigned long long)own,
               (unsigned long long)stack, (unsigned long long)fence, (unsigned long long)fence_ar);
}

static ws_u64 static_word;

static void case_hooks(void) {
  ws_u64 on_stack;
  ws_u64_store(&on_stack, 0, ws_relaxed);
  mark();
  ws_u64_fetch_add(&on_stack, 1, ws_relaxed);
  expect("fetch_add on the stack", 0, 0, 0, 1, 0, 0);
  mark();
  ws_u64_fetch_add(&static_word, 1, ws_seq_cst);
  expect("fetch_add on a static word", 1, 0, 0, 0, 0, 0);
  mark();
  uint64_t wrong = 12345;
  CHECK(!ws_u64_cas(&static_word, &wrong, 7, ws_acq_rel));
  CHECK(ws_u64_cas(&static_word, &wrong, 7, ws_acq_rel));
  CHECK_EQ(ws_u64_xchg(&static_word, 9, ws_acquire), 7);
  expect("a failed CAS, a CAS, an exchange", 3, 0, 0, 0, 0, 0);
  mark();
  ws_fence(ws_seq_cst);
  ws_fence(ws_acquire);
  ws_fence(ws_release);
  ws_fence(ws_relaxed);
  expect("fences", 0, 0, 0, 0, WS_ATOMICS_FULL_FENCES ? 3 : 1, WS_ATOMICS_FULL_FENCES ? 0 : 2);
  mark();
  CHECK_EQ(ws_u64_load(&static_word, ws_seq_cst), 9);
  ws_u64_store(&static_word, 10, ws_seq_cst);
  ws_counter_add(&static_word, 1);
  ws_u32 w32;
  ws_u32_store(&w32, 1, ws_release);
  CHECK_EQ(ws_u32_load(&w32, ws_acquire), 1);
  expect("loads, stores, a statistics counter", 0, 0, 0, 0, 0, 0);
}

typedef struct probe {
  struct pool *p;
  unsigned id; /* the worker it ran on */
} probe;

static void probe_task(void *arg) {
  probe *pr = arg;
  ws_worker *w = ws_self();
  CHECK(w != NULL);
  pr->id = w->id;
  ws_worker *other = pr->p->workers[1 - w->id];
  mark();
  ws_u64_fetch_add(&w->wait_value, 0, ws_relaxed);
  expect("own block", 0, 0, 1, 0, 0, 0);
  mark();
  ws_u64_fetch_add(&other->wait_value, 0, ws_relaxed);
  expect("the other worker's block", 0, 1, 0, 0, 0, 0);
  mark();
  ws_u32_fetch_add(&pr->p->size, 0, ws_relaxed);
  expect("the pool struct", 1, 0, 0, 0, 0, 0);
}

static void case_own_other(void) {
  pool_t *pool = make_pool(2);
  probe pr = {(struct pool *)pool, 99};
  CHECK_OK(pool_submit(pool, probe_task, &pr));
  CHECK_OK(pool_wait_idle(pool));
  CHECK(pr.id < 2);
  ws_u64 *w0 = &pr.p->workers[0]->wait_value, *w1 = &pr.p->workers[1]->wait_value;
  mark();
  ws_u64_fetch_add(w0, 0, ws_relaxed);
  ws_u64_fetch_add(w1, 0, ws_relaxed);
  expect("workers' blocks from outside", 0, 2, 0, 0, 0, 0);
  CHECK_OK(pool_destroy(pool));
  mark();
#ifdef WS_COUNT_ATOMICS /* (other builds skip every case) */
  ws_count_rmw(w0); /* the address only: the block is gone */
#endif
  expect("a freed block", 1, 0, 0, 0, 0, 0);
}

typedef struct fib_run {
  int k;
  ws_count d;
  long r;
} fib_run;

static void fib_root(void *arg) {
  fib_run *run = arg;
  ws_count a, b;
  fib_arg f = {run->k, 0};
  ws_count_self(&a);
  fib_task(&f);
  ws_count_self(&b);
  ws_count_diff(&run->d, &b, &a);
  run->r = f.r;
}

static void case_fib_one_worker(void) {
  static const int ks[] = {16, 10};
  for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
    int k = ks[i];
    pool_t *pool = make_pool(1);
    fib_run run = {k, {{0}}, 0};
    CHECK_OK(pool_submit(pool, fib_root, &run));
    CHECK_OK(pool_wait_idle(pool));
    CHECK_EQ(run.r, fib_seq(k));
    pool_worker_stats_t st;
    CHECK_OK(pool_worker_stats(pool, 0, &st));
    CHECK_EQ(st.steals, 0);
    /* fib(k) spawns fib(k + 1) - 1 times; those frames and the root task
     * are the worker's tasks. */
    CHECK_EQ(st.tasks, fib_seq(k + 1));
    ws_count want = {{0}};
    want.n[WS_CNT_OWN] = (uint64_t)k - 1;
    want.n[WS_CNT_FENCE] = 2 * ((uint64_t)k - 1);
    for (int c = 0; c < WS_CNT_N; c++)
      if (run.d.n[c] != want.n[c])
        FAIL("fib(%d) on one worker: kind %d counted %llu, expected %llu\n", k, c,
             (unsigned long long)run.d.n[c], (unsigned long long)want.n[c]);
    CHECK_OK(pool_destroy(pool));
  }
}

static const char *skip_why(void) {
  return WS_COUNT_BUILD ? NULL : "not the counting build (-Dcount_atomics=true)";
}

TEST_MAIN_WITH(skip_why(), NULL, 120, TEST_CASE(hooks), TEST_CASE(own_other),
               TEST_CASE(fib_one_worker))
