/* SPDX-License-Identifier: MIT */
/* Batched submission: pool_submit_n and the workers' batch takes from the
 * global queue. Every task runs exactly once:
 *
 *  - 1, 4 and 16 outside producers at once, each submitting its own slice
 *    of flags with a mix of pool_submit and pool_submit_n of sizes 1..300
 *    (the global queue starts at 256 entries, so it grows under the batch
 *    takes), on pools of 1, 2 and 3 workers (3 oversubscribes this machine,
 *    so batch takes race steals of what other batches put on deques);
 *  - inside tasks: pool_submit_n from a worker puts the batch on its own
 *    deque, where the other workers steal it;
 *  - pool_submit_n's edge cases: n == 0, args == NULL (fn(NULL) n times),
 *    a NULL fn;
 *  - destroy racing producers: producers keep submitting while another
 *    thread destroys the pool; each call is accepted (the task runs exactly
 *    once) or refused with ESHUTDOWN (it never runs), and every producer
 *    has seen ESHUTDOWN before destroy returns. A gate task holds the
 *    drain open until every producer has stopped, so no call can start
 *    after destroy returned (that would be a use after free by contract);
 *  - a submitter that blocks: a task submits another from inside and then
 *    spins (in user code, not helping) until that one ran, so only another
 *    worker, possibly asleep or falling asleep, can run it. A lost wake-up
 *    of the inside push hangs here (the watchdog fails the test): the
 *    producer's side of the sleep protocol is only a compiler fence when
 *    membarrier(2) is available (runtime/sleep.h);
 *  - an entry that blocks: 150 tasks submitted from inside one task (one
 *    at a time or in one pool_submit_n), one of which spins until all the
 *    others ran, at positions at and around the batches' edges; the others
 *    must still run (inside submissions share batches, runtime/submit.c);
 *  - lanes: a flood of 20000 tasks from one outside thread does not hold
 *    up a task another thread submits after it (runtime/worker.c serves
 *    the global queue's lanes in turn), whether it comes after the flood
 *    or before it;
 *  - an entry that helps while it waits, and so takes its own batch's
 *    steal handle while entries remain (one worker, deterministic).
 * Iterations scale with WSPOOL_STRESS. Cases: outside_producers,
 * inside_batches, edge_cases, blocking_submitter, blocked_entry,
 * lanes_fair, own_handle, destroy_racing. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <wspool.h>

#include "check.h"
#include "testutil.h"

static atomic_uint *flags;
static size_t nflags;

static void mark(void *arg) {
  size_t i = (size_t)(uintptr_t)arg;
  CHECK(i < nflags);
  atomic_fetch_add(&flags[i], 1);
}

/* A small deterministic generator per producer (the schedule varies, what
 * is submitted does not). */
static unsigned next_rand(uint64_t *s) { return (unsigned)(rng_next(s) >> 32); }

/* Submit flags [lo, hi) in batches of 1..300, alternating the two calls. */
static void submit_range(pool_t *p, size_t lo, size_t hi, uint64_t seed) {
  void *args[300];
  uint64_t s = seed | 1;
  size_t i = lo;
  while (i < hi) {
    size_t k = 1 + next_rand(&s) % 300;
    if (k > hi - i) k = hi - i;
    if (k == 1 && (next_rand(&s) & 1)) {
      CHECK_OK(pool_submit(p, mark, (void *)(uintptr_t)i));
    } else {
      for (size_t j = 0; j < k; j++) args[j] = (void *)(uintptr_t)(i + j);
      CHECK_OK(pool_submit_n(p, mark, args, k));
    }
    i += k;
  }
}

typedef struct producer {
  pthread_t th;
  pool_t *pool;
  size_t lo, hi;
  pthread_barrier_t *bar;
} producer;

static void *producer_main(void *arg) {
  producer *pr = arg;
  pthread_barrier_wait(pr->bar);
  submit_range(pr->pool, pr->lo, pr->hi, pr->lo * 2654435761u + 7);
  return NULL;
}

static void outside_producers(unsigned workers, unsigned nprod, size_t per) {
  pool_t *p = make_pool(workers);
  size_t n = per * nprod;
  flags_reset(&flags, &nflags, n);
  producer pr[16];
  pthread_barrier_t bar;
  CHECK_OK(pthread_barrier_init(&bar, NULL, nprod));
  for (unsigned i = 0; i < nprod; i++) {
    pr[i] = (producer){.pool = p, .lo = i * per, .hi = (i + 1) * per, .bar = &bar};
    CHECK_OK(pthread_create(&pr[i].th, NULL, producer_main, &pr[i]));
  }
  for (unsigned i = 0; i < nprod; i++) CHECK_OK(pthread_join(pr[i].th, NULL));
  CHECK_OK(pool_wait_idle(p));
  flags_check_once(flags, n, "outside task");
  uint64_t taken = 0;
  for (unsigned w = 0; w < workers; w++) {
    pool_worker_stats_t s;
    CHECK_OK(pool_worker_stats(p, w, &s));
    taken += s.global_taken;
  }
  CHECK_EQ(taken, n); /* each outside task left the global queue once */
  pthread_barrier_destroy(&bar);
  CHECK_OK(pool_destroy(p));
}

/* Inside: a root task submits `fanout` children with pool_submit_n; each
 * child of depth < 2 does the same. Flags index the nodes of the tree. */
typedef struct node_arg {
  size_t index;
  unsigned depth;
} node_arg;
static node_arg *tree;
static size_t fanout;

static void tree_task(void *arg) {
  node_arg *a = arg;
  CHECK(pool_worker_id() >= 0);
  atomic_fetch_add(&flags[a->index], 1);
  if (a->depth == 2) return;
  void *args[64];
  size_t first = a->index * fanout + 1;
  for (size_t j = 0; j < fanout; j++) {
    tree[first + j] = (node_arg){first + j, a->depth + 1};
    args[j] = &tree[first + j];
  }
  CHECK_OK(pool_submit_n(NULL, tree_task, args, fanout));
}

static void inside_batches(unsigned workers) {
  pool_t *p = make_pool(workers);
  fanout = 48;
  size_t n = 1 + fanout + fanout * fanout;
  flags_reset(&flags, &nflags, n);
  free(tree);
  tree = calloc(n, sizeof *tree);
  CHECK(tree);
  tree[0] = (node_arg){0, 0};
  CHECK_OK(pool_submit(p, tree_task, &tree[0]));
  CHECK_OK(pool_wait_idle(p));
  flags_check_once(flags, n, "tree node");
  CHECK_OK(pool_destroy(p));
}

static atomic_uint null_calls;
static void count_null(void *arg) {
  CHECK(arg == NULL);
  atomic_fetch_add(&null_calls, 1);
}

/* args NULL from a worker: one task (its own path) and a batch. */
static void submit_null_args_inside(void *arg) {
  (void)arg;
  CHECK_OK(pool_submit_n(NULL, count_null, NULL, 1));
  CHECK_OK(pool_submit_n(NULL, count_null, NULL, 3));
}

/* n near SIZE_MAX is refused whole (ENOMEM), nothing queued: the sizes
 * computed from it must not wrap. From a worker, and from outside with
 * entries already waiting in the caller's lane. */
static atomic_int hold_workers;

static void held(void *arg) {
  (void)arg;
  while (atomic_load(&hold_workers)) sched_yield();
}

static void submit_huge_inside(void *arg) {
  (void)arg;
  CHECK_EQ(pool_submit_n(NULL, count_null, NULL, SIZE_MAX), ENOMEM);
  CHECK_EQ(pool_submit_n(NULL, count_null, NULL, SIZE_MAX - 60), ENOMEM);
}

static void huge_n(pool_t *p) {
  CHECK_OK(pool_submit(p, submit_huge_inside, NULL));
  CHECK_OK(pool_wait_idle(p));
  atomic_store(&hold_workers, 1);
  for (unsigned i = 0; i < pool_threads(p); i++) CHECK_OK(pool_submit(p, held, NULL));
  CHECK_OK(pool_submit(p, count_null, NULL)); /* waits in the lane */
  CHECK_EQ(pool_submit_n(p, count_null, NULL, SIZE_MAX), ENOMEM);
  CHECK_EQ(pool_submit_n(p, count_null, NULL, SIZE_MAX - 1), ENOMEM);
  atomic_store(&hold_workers, 0);
  CHECK_OK(pool_wait_idle(p));
}

static void edge_cases(void) {
  atomic_store(&null_calls, 0);
  pool_t *p = make_pool(2);
  CHECK_OK(pool_submit_n(p, count_null, NULL, 0));
  CHECK_EQ(pool_submit_n(p, NULL, NULL, 5), EINVAL);
  CHECK_OK(pool_submit_n(p, count_null, NULL, 1000));
  CHECK_OK(pool_submit_n(p, count_null, NULL, 1));
  CHECK_OK(pool_submit(p, submit_null_args_inside, NULL));
  CHECK_OK(pool_wait_idle(p));
  CHECK_EQ(atomic_load(&null_calls), 1000 + 1 + 4);
  huge_n(p);
  CHECK_EQ(atomic_load(&null_calls), 1000 + 1 + 4 + 1);
  CHECK_OK(pool_destroy(p));
}

/* ---- destroy racing producers ----------------------------------------- */

enum { RACE_PRODUCERS = 4, RACE_MAX = 1 << 16 };
static atomic_uint race_stopped;
static atomic_uint race_started;
static atomic_ulong nops_ran;

static void nop(void *arg) {
  (void)arg;
  atomic_fetch_add(&nops_ran, 1);
}

typedef struct race_producer {
  pthread_t th;
  pool_t *pool;
  size_t lo;         /* its flags: [lo, lo + RACE_MAX) */
  size_t accepted;   /* flagged tasks accepted: [lo, lo + accepted) */
  unsigned long nops; /* unflagged tasks accepted once the flags ran out */
  unsigned refusals; /* calls refused with ESHUTDOWN */
} race_producer;

static void *race_main(void *arg) {
  race_producer *pr = arg;
  void *args[8];
  uint64_t s = pr->lo + 11;
  atomic_fetch_add(&race_started, 1);
  for (;;) {
    size_t i = pr->lo + pr->accepted;
    size_t k = 1 + next_rand(&s) % 8;
    int rc;
    if (pr->accepted + k > RACE_MAX) {
      /* Out of flags before destroy began: keep knocking with tasks that
       * only count themselves. */
      rc = pool_submit(pr->pool, nop, NULL);
      if (rc == 0) {
        pr->nops++;
        continue;
      }
    } else {
      for (size_t j = 0; j < k; j++) args[j] = (void *)(uintptr_t)(i + j);
      rc = k == 1 ? pool_submit(pr->pool, mark, args[0]) : pool_submit_n(pr->pool, mark, args, k);
      if (rc == 0) {
        pr->accepted += k;
        continue;
      }
    }
    CHECK_EQ(rc, ESHUTDOWN);
    pr->refusals++;
    break;
  }
  atomic_fetch_add(&race_stopped, 1);
  return NULL;
}

/* Holds destroy's drain open until every producer has stopped. */
static void gate(void *arg) {
  (void)arg;
  while (atomic_load(&race_stopped) < RACE_PRODUCERS) sched_yield();
}

static void destroy_racing_producers(unsigned workers, unsigned delay_ms) {
  size_t n = RACE_PRODUCERS * (size_t)RACE_MAX;
  flags_reset(&flags, &nflags, n);
  atomic_store(&race_stopped, 0);
  atomic_store(&race_started, 0);
  atomic_store(&nops_ran, 0);
  pool_t *p = make_pool(workers);
  CHECK_OK(pool_submit(p, gate, NULL));
  race_producer pr[RACE_PRODUCERS];
  for (unsigned i = 0; i < RACE_PRODUCERS; i++) {
    pr[i] = (race_producer){.pool = p, .lo = i * (size_t)RACE_MAX};
    CHECK_OK(pthread_create(&pr[i].th, NULL, race_main, &pr[i]));
  }
  while (atomic_load(&race_started) < RACE_PRODUCERS) sched_yield();
  if (delay_ms) sleep_ms(delay_ms);
  CHECK_OK(pool_destroy(p));
  CHECK_EQ(atomic_load(&race_stopped), RACE_PRODUCERS); /* all stopped before it returned */
  unsigned long nops = 0;
  for (unsigned i = 0; i < RACE_PRODUCERS; i++) {
    CHECK_OK(pthread_join(pr[i].th, NULL));
    CHECK_EQ(pr[i].refusals, 1);
    nops += pr[i].nops;
    for (size_t j = 0; j < RACE_MAX; j++) {
      unsigned v = atomic_load(&flags[pr[i].lo + j]);
      CHECK_EQ(v, j < pr[i].accepted ? 1u : 0u); /* accepted: once; refused: never */
    }
  }
  CHECK_EQ(atomic_load(&nops_ran), nops);
}

/* ---- a submitter that blocks ------------------------------------------ */

static atomic_uint child_ran;

static void child(void *arg) {
  (void)arg;
  atomic_store(&child_ran, 1);
}

/* mode 0: submit at once; 1: as soon as the other worker counts a sleep
 * (it is between its last look and futex_wait, the window a lost wake-up
 * needs), or after 5 ms if it was asleep already; 2: the same, then 1 ms
 * more. Odd cycles submit with
 * pool_submit_n, even ones with pool_submit. */
typedef struct parent_arg {
  unsigned mode;
  int batch;
} parent_arg;

static void blocking_parent(void *arg) {
  parent_arg *a = arg;
  pool_t *p = pool_current();
  CHECK(p != NULL && pool_threads(p) == 2);
  unsigned other = 1u - (unsigned)pool_worker_id();
  if (a->mode) {
    pool_worker_stats_t s0, s;
    CHECK_OK(pool_worker_stats(p, other, &s0));
    /* The other worker may be asleep already (its count does not move
     * until it wakes): wait at most 5 ms for a new sleep, then go on. */
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
      sched_yield();
      CHECK_OK(pool_worker_stats(p, other, &s));
      clock_gettime(CLOCK_MONOTONIC, &t);
    } while (s.sleeps == s0.sleeps &&
             (t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 5000000L);
    if (a->mode == 2) sleep_ms(1);
  }
  void *args[1] = {NULL};
  if (a->batch)
    CHECK_OK(pool_submit_n(NULL, child, args, 1));
  else
    CHECK_OK(pool_submit(NULL, child, NULL));
  while (!atomic_load(&child_ran)) sched_yield();
}

static void blocking_submitter(void) {
  pool_t *p = make_pool(2);
  unsigned long cycles = check_iters(3000);
  for (unsigned long c = 0; c < cycles; c++) {
    parent_arg a = {(unsigned)(c % 3), (int)(c & 1)};
    atomic_store(&child_ran, 0);
    CHECK_OK(pool_submit(p, blocking_parent, &a));
    CHECK_OK(pool_wait_idle(p));
    CHECK_EQ(atomic_load(&child_ran), 1);
  }
  CHECK_OK(pool_destroy(p));
}

/* ---- an entry that blocks: the rest of its batch must not wait --------- */

/* A task on a pool of `workers` submits K tasks from inside (pool_submit
 * one at a time, which fills the worker's open batch, or pool_submit_n);
 * task `blocker` spins until every other one ran. Tasks submitted together
 * share a batch on the deque: if a runner held a batch's remaining entries
 * while one of them blocked, this would hang (the watchdog fails it). */
enum { BLOCK_K = 150 };
static atomic_uint others_ran;
static size_t block_at;

static void block_task(void *arg) {
  size_t i = (size_t)(uintptr_t)arg;
  mark(arg);
  if (i == block_at) {
    while (atomic_load(&others_ran) != BLOCK_K - 1) sched_yield();
  } else {
    atomic_fetch_add(&others_ran, 1);
  }
}

static void block_submitter(void *arg) {
  void *args[BLOCK_K];
  for (size_t i = 0; i < BLOCK_K; i++) args[i] = (void *)(uintptr_t)i;
  if (arg) {
    CHECK_OK(pool_submit_n(NULL, block_task, args, BLOCK_K));
  } else {
    for (size_t i = 0; i < BLOCK_K; i++) CHECK_OK(pool_submit(NULL, block_task, args[i]));
  }
}

static void blocked_entry(unsigned workers) {
  static const size_t at[] = {0, 1, 30, 61, 62, 100, BLOCK_K - 1};
  pool_t *p = make_pool(workers);
  for (unsigned k = 0; k < sizeof at / sizeof at[0]; k++) {
    for (int batch = 0; batch < 2; batch++) {
      flags_reset(&flags, &nflags, BLOCK_K);
      atomic_store(&others_ran, 0);
      block_at = at[k];
      CHECK_OK(pool_submit(p, block_submitter, batch ? p : NULL));
      CHECK_OK(pool_wait_idle(p));
      flags_check_once(flags, BLOCK_K, "task");
    }
  }
  CHECK_OK(pool_destroy(p));
}

/* ---- a flood from one thread does not hold up another's task ---------- */

/* The global queue has a lane per outside thread (WS_LANES of them, given
 * out round-robin at a thread's first call), and a worker serves the lanes
 * in turn. One worker is held busy while thread A queues FLOOD tasks and
 * thread B one marker, B after A in even rounds and before it in odd ones;
 * once released, the marker must run long before A's flood is through (a
 * single FIFO queue runs it last when it comes last; a worker that prefers
 * full lanes and passes a short one over for as long as another stays
 * full runs it last either way). Threads make their first call one after
 * another, so A and B get different lanes; the eight rounds put the pair
 * on neighbouring lanes in every position and either order. */
enum { FLOOD = 20000 };
static atomic_uint flood_ran, marker_at, release_hold;
static pool_t *lane_pool;

static void flood_task(void *arg) {
  (void)arg;
  atomic_fetch_add(&flood_ran, 1);
}

static void marker_task(void *arg) {
  (void)arg;
  atomic_store(&marker_at, atomic_load(&flood_ran) + 1);
}

static void hold_task(void *arg) {
  (void)arg;
  while (!atomic_load(&release_hold)) sched_yield();
}

static void *flooder(void *arg) {
  (void)arg;
  for (unsigned i = 0; i < FLOOD; i++) CHECK_OK(pool_submit(lane_pool, flood_task, NULL));
  return NULL;
}

static void *marker_submitter(void *arg) {
  (void)arg;
  CHECK_OK(pool_submit(lane_pool, marker_task, NULL));
  return NULL;
}

static void lanes_fair(void) {
  lane_pool = make_pool(1);
  for (unsigned round = 0; round < 8; round++) {
    atomic_store(&flood_ran, 0);
    atomic_store(&marker_at, 0);
    atomic_store(&release_hold, 0);
    CHECK_OK(pool_submit(lane_pool, hold_task, NULL));
    pthread_t a, b;
    bool marker_first = round % 2;
    if (marker_first) {
      CHECK_OK(pthread_create(&b, NULL, marker_submitter, NULL));
      CHECK_OK(pthread_join(b, NULL));
    }
    CHECK_OK(pthread_create(&a, NULL, flooder, NULL));
    CHECK_OK(pthread_join(a, NULL));
    if (!marker_first) {
      CHECK_OK(pthread_create(&b, NULL, marker_submitter, NULL));
      CHECK_OK(pthread_join(b, NULL));
    }
    atomic_store(&release_hold, 1);
    CHECK_OK(pool_wait_idle(lane_pool));
    CHECK_EQ(atomic_load(&flood_ran), FLOOD);
    unsigned at = atomic_load(&marker_at);
    CHECK(at >= 1 && at <= FLOOD / 2);
  }
  CHECK_OK(pool_destroy(lane_pool));
}

/* ---- an entry that helps: its runner takes its own batch's rest ------- */

/* One worker. A task spawns a group child C, then submits OWN_K tasks with
 * pool_submit_n: the deque holds [C, batch]. The worker pops the batch and
 * runs its entry 0, which waits for the group: helping, it pops the batch's
 * steal handle (newer than C) while entries 1.. are unclaimed, so the
 * runner takes its own batch's rest further down its stack, then runs C.
 * Back in entry 0's runner, the next claim must find the rest gone. Every
 * entry once, C once, and the statistics exact (the handle left on the
 * nested batch runs nothing and is counted back). */
enum { OWN_K = 10 };
static pool_group_t own_group;
static atomic_uint own_c_ran;

static void own_child(void *arg) {
  (void)arg;
  atomic_fetch_add(&own_c_ran, 1);
}

static void own_entry(void *arg) {
  if ((uintptr_t)arg == 0) {
    CHECK_EQ(atomic_load(&own_c_ran), 0);
    CHECK_OK(pool_group_wait(&own_group));
    CHECK_EQ(atomic_load(&own_c_ran), 1);
    /* The rest ran while entry 0 waited, on this worker. */
    for (size_t i = 1; i < OWN_K; i++) CHECK_EQ(atomic_load(&flags[i]), 1);
  }
  mark(arg);
}

static void own_parent(void *arg) {
  pool_t *p = arg;
  void *args[OWN_K];
  for (size_t i = 0; i < OWN_K; i++) args[i] = (void *)(uintptr_t)i;
  CHECK_OK(pool_group_init(&own_group, p));
  CHECK_OK(pool_group_spawn(&own_group, own_child, NULL));
  CHECK_OK(pool_submit_n(p, own_entry, args, OWN_K));
}

static void own_handle(void) {
  pool_t *p = make_pool(1);
  for (int round = 0; round < 3; round++) {
    pool_worker_stats_t s0, s;
    CHECK_OK(pool_worker_stats(p, 0, &s0));
    flags_reset(&flags, &nflags, OWN_K);
    atomic_store(&own_c_ran, 0);
    CHECK_OK(pool_submit(p, own_parent, p));
    CHECK_OK(pool_wait_idle(p));
    flags_check_once(flags, OWN_K, "task");
    CHECK_EQ(atomic_load(&own_c_ran), 1);
    /* The parent, C and the OWN_K entries; each taken once. Counted just
     * after each task: wait for the last count to land. */
    uint64_t want = OWN_K + 2;
    do {
      sched_yield();
      CHECK_OK(pool_worker_stats(p, 0, &s));
    } while (s.tasks - s0.tasks < want);
    CHECK_EQ(s.tasks - s0.tasks, want);
    CHECK_EQ((s.local_pops + s.global_pops + s.steals) -
                 (s0.local_pops + s0.global_pops + s0.steals),
             want);
  }
  CHECK_OK(pool_destroy(p));
}

/* ---- the cases: each repeated WSPOOL_STRESS times ---------------------- */

static const unsigned pool_sizes[] = {1, 2, 3};

static void case_outside_producers(void) {
  static const unsigned producers[] = {1, 4, 16};
  for (unsigned long r = 0; r < check_iters(1); r++)
    for (unsigned w = 0; w < 3; w++)
      for (unsigned k = 0; k < 3; k++) outside_producers(pool_sizes[w], producers[k], 20000);
}

static void case_inside_batches(void) {
  for (unsigned long r = 0; r < check_iters(1); r++)
    for (unsigned w = 0; w < 3; w++) inside_batches(pool_sizes[w]);
}

static void case_edge_cases(void) {
  for (unsigned long r = 0; r < check_iters(1); r++) edge_cases();
}

static void case_blocking_submitter(void) {
  for (unsigned long r = 0; r < check_iters(1); r++) blocking_submitter();
}

static void case_blocked_entry(void) {
  for (unsigned long r = 0; r < check_iters(1); r++)
    for (unsigned w = 2; w <= 4; w++) blocked_entry(w);
}

static void case_lanes_fair(void) {
  for (unsigned long r = 0; r < check_iters(1); r++) lanes_fair();
}

static void case_own_handle(void) {
  for (unsigned long r = 0; r < check_iters(1); r++) own_handle();
}

static void case_destroy_racing(void) {
  for (unsigned long r = 0; r < check_iters(1); r++)
    for (unsigned w = 1; w <= 3; w++)
      for (unsigned d = 0; d < 3; d++) destroy_racing_producers(w, d);
}

TEST_MAIN(240, TEST_CASE(outside_producers), TEST_CASE(inside_batches), TEST_CASE(edge_cases),
          TEST_CASE(blocking_submitter), TEST_CASE(blocked_entry), TEST_CASE(lanes_fair),
          TEST_CASE(own_handle), TEST_CASE(destroy_racing))
