/* SPDX-License-Identifier: MIT */
/* pool_group_cancel(): exact accounting of what runs and what is skipped,
 * cancels from every kind of caller, cancels racing with completion, and
 * how many children may still start once a cancel returned.
 *
 * Everywhere: each child counts its own runs; every child runs at most
 * once; children run + the pool's `skipped` counter (summed over workers,
 * cumulative since the case began) == children spawned, exactly.
 *
 *  from_child    a child at a random index cancels its own group: it runs
 *                (nothing else cancels), then sees pool_cancelled(); the
 *                wait returns ECANCELED; the next round of the same group
 *                (no cancel) runs every child and waits 0. Waiter outside
 *                and inside (a task), pools of 1, 2 and 4.
 *  midspawn      the spawning thread cancels its group after spawning half
 *                of the children: every child spawned after that is skipped.
 *  from_sibling  a child of group B cancels group A (both opened by the same
 *                caller): A waits ECANCELED; B, not nested in A, runs every
 *                child and waits 0, and its children (the canceller too)
 *                see pool_cancelled() == 0.
 *  from_outside  a plain thread cancels while a child of the group is
 *                known to be running (the first child to start waits for
 *                it): ECANCELED; that child then sees pool_cancelled(); the
 *                thread itself sees 0 and gets ENOENT from pool_fail().
 *  from_other_pool  the same, the canceller a task of another pool.
 *  race          many rounds: a thread cancels after a random delay while
 *                the children finish, and in half the rounds a child at a
 *                random index cancels as well (after a random delay): the
 *                wait returns 0 only if every child ran (and then no cancel
 *                can have come from a child), else ECANCELED; the group is
 *                initialised afresh for each round once the canceller is
 *                done, so a cancel that lands after a wait never leaks into
 *                the next round. Waiter outside and inside.
 *  stop_latency  a running child cancels its group, then reads how many
 *                children have started (each child counts itself first
 *                thing, seq_cst): at most one child per worker may start
 *                after that (pools of 2, 4 and 16 workers, 16 more than the
 *                CPUs), and no child starts once the wait returned.
 * No timing assertions; stress scales the round counts (WSPOOL_STRESS). */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <wspool.h>

#include "cancel_util.h"
#include "check.h"
#include "testutil.h"

/* fn(arg) as a task of p; returns when it finished. */
static void run_inside(pool_t *p, pool_fn fn, void *arg) {
  CHECK_OK(pool_submit(p, fn, arg));
  CHECK_OK(pool_wait_idle(p));
}

/* ---- from_child -------------------------------------------------------------- */

enum { FC_N = 1500 };

typedef struct fc_state {
  pool_t *pool; /* for pool_group_init; NULL inside */
  pool_group_t g;
  atomic_uint *ran;
  size_t cancel_idx;
  int cancel_rc, cancelled_after;
  unsigned long rounds;
  uint64_t seed;
  uint64_t spawned, total_ran;
} fc_state;

static fc_state *fcs;

static void fc_child(void *arg) {
  size_t i = (size_t)(uintptr_t)arg;
  atomic_fetch_add(&fcs->ran[i], 1);
  busy_work(100);
  if (i == fcs->cancel_idx) {
    fcs->cancel_rc = pool_group_cancel(&fcs->g);
    fcs->cancelled_after = pool_cancelled();
  }
}

static void fc_rounds(void *v) {
  fc_state *s = v;
  CHECK_OK(pool_group_init(&s->g, s->pool));
  for (unsigned long r = 0; r < s->rounds; r++) {
    memset((void *)s->ran, 0, FC_N * sizeof(atomic_uint));
    s->cancel_idx = (size_t)(rng_next(&s->seed) % FC_N);
    s->cancel_rc = s->cancelled_after = -1;
    for (size_t i = 0; i < FC_N; i++)
      CHECK_OK(pool_group_spawn(&s->g, fc_child, (void *)(uintptr_t)i));
    CHECK_EQ(pool_group_wait(&s->g), ECANCELED);
    CHECK_OK(s->cancel_rc);
    CHECK_EQ(s->cancelled_after, 1);
    CHECK_EQ(atomic_load(&s->ran[s->cancel_idx]), 1);
    for (size_t i = 0; i < FC_N; i++) {
      unsigned v2 = atomic_load(&s->ran[i]);
      if (v2 > 1) FAIL("child %zu ran %u times\n", i, v2);
      s->total_ran += v2;
    }
    s->spawned += FC_N;
    /* The same group, next round, no cancel: everything runs, 0. */
    memset((void *)s->ran, 0, FC_N * sizeof(atomic_uint));
    s->cancel_idx = FC_N; /* none */
    for (size_t i = 0; i < FC_N; i++)
      CHECK_OK(pool_group_spawn(&s->g, fc_child, (void *)(uintptr_t)i));
    CHECK_OK(pool_group_wait(&s->g));
    flags_check_once(s->ran, FC_N, "child of a clean round");
    s->spawned += FC_N;
    s->total_ran += FC_N;
  }
}

static void from_child(pool_t *p) {
  for (int inside = 0; inside < 2; inside++) {
    skip_count base = skip_read(p);
    fc_state *s = calloc(1, sizeof *s);
    CHECK(s);
    s->pool = inside ? NULL : p;
    s->ran = flags_alloc(FC_N);
    s->rounds = check_iters(40);
    s->seed = 0x9e3779b97f4a7c15ull + pool_threads(p) * 2 + (unsigned)inside;
    fcs = s;
    if (inside)
      run_inside(p, fc_rounds, s);
    else
      fc_rounds(s);
    skip_expect(p, base, s->spawned - s->total_ran, 0, "from_child");
    free((void *)s->ran);
    free(s);
  }
}

static void case_from_child(void) { ON_POOLS(from_child, 1, 2, 4); }

/* ---- midspawn: the spawner cancels --------------------------------------------- */

enum { MS_N = 2000 };

static void ms_child(void *arg) {
  atomic_fetch_add((atomic_uint *)arg, 1);
  busy_work(50);
}

typedef struct ms_state {
  pool_t *pool;
  atomic_uint *ran;
  unsigned long rounds;
  uint64_t spawned, total_ran;
} ms_state;

static void ms_rounds(void *v) {
  ms_state *s = v;
  for (unsigned long r = 0; r < s->rounds; r++) {
    memset((void *)s->ran, 0, MS_N * sizeof(atomic_uint));
    pool_group_t g;
    CHECK_OK(pool_group_init(&g, s->pool));
    size_t half = MS_N / 2 + r % 97;
    for (size_t i = 0; i < MS_N; i++) {
      if (i == half) CHECK_OK(pool_group_cancel(&g));
      CHECK_OK(pool_group_spawn(&g, ms_child, &s->ran[i]));
    }
    CHECK_EQ(pool_group_wait(&g), ECANCELED);
    for (size_t i = 0; i < MS_N; i++) {
      unsigned v2 = atomic_load(&s->ran[i]);
      if (v2 > (i < half ? 1u : 0u))
        FAIL("child %zu (cancel before %zu) ran %u times\n", i, half, v2);
      s->total_ran += v2;
    }
    s->spawned += MS_N;
  }
}

static void midspawn(pool_t *p) {
  for (int inside = 0; inside < 2; inside++) {
    skip_count base = skip_read(p);
    ms_state s = {inside ? NULL : p, flags_alloc(MS_N), check_iters(30), 0, 0};
    if (inside)
      run_inside(p, ms_rounds, &s);
    else
      ms_rounds(&s);
    skip_expect(p, base, s.spawned - s.total_ran, 0, "midspawn");
    free((void *)s.ran);
  }
}

static void case_midspawn(void) { ON_POOLS(midspawn, 1, 2, 4); }

/* ---- from_sibling ------------------------------------------------------------------ */

enum { SIB_A = 1000, SIB_B = 200 };

typedef struct sib_state {
  pool_t *pool;
  pool_group_t a, b;
  atomic_uint *ran_a, *ran_b;
  size_t canceller; /* index of B's child that cancels A */
  int cancel_rc;
  atomic_int b_saw_cancel;
  unsigned long rounds;
  uint64_t seed;
  uint64_t spawned, total_ran;
} sib_state;

static sib_state *sibs;

static void sib_a_child(void *arg) {
  atomic_fetch_add((atomic_uint *)arg, 1);
  busy_work(100);
}

static void sib_b_child(void *arg) {
  size_t i = (size_t)(uintptr_t)arg;
  atomic_fetch_add(&sibs->ran_b[i], 1);
  busy_work(100);
  if (i == sibs->canceller) sibs->cancel_rc = pool_group_cancel(&sibs->a);
  if (pool_cancelled()) atomic_fetch_add(&sibs->b_saw_cancel, 1);
}

static void sib_rounds(void *v) {
  sib_state *s = v;
  for (unsigned long r = 0; r < s->rounds; r++) {
    memset((void *)s->ran_a, 0, SIB_A * sizeof(atomic_uint));
    memset((void *)s->ran_b, 0, SIB_B * sizeof(atomic_uint));
    s->canceller = (size_t)(rng_next(&s->seed) % SIB_B);
    s->cancel_rc = -1;
    CHECK_OK(pool_group_init(&s->a, s->pool));
    CHECK_OK(pool_group_init(&s->b, s->pool));
    /* Interleaved, so A's children are still queued when B's canceller
     * runs on any schedule. */
    for (size_t i = 0; i < SIB_A; i++) {
      CHECK_OK(pool_group_spawn(&s->a, sib_a_child, &s->ran_a[i]));
      if (i % (SIB_A / SIB_B) == 0)
        CHECK_OK(pool_group_spawn(&s->b, sib_b_child, (void *)(uintptr_t)(i / (SIB_A / SIB_B))));
    }
    /* B first: its canceller has cancelled A before A's wait begins. */
    CHECK_OK(pool_group_wait(&s->b));
    CHECK_EQ(pool_group_wait(&s->a), ECANCELED);
    CHECK_OK(s->cancel_rc);
    flags_check_once(s->ran_b, SIB_B, "child of the sibling group");
    for (size_t i = 0; i < SIB_A; i++) {
      unsigned v2 = atomic_load(&s->ran_a[i]);
      if (v2 > 1) FAIL("child %zu of the cancelled group ran %u times\n", i, v2);
      s->total_ran += v2;
    }
    s->spawned += SIB_A;
  }
  CHECK_EQ(atomic_load(&s->b_saw_cancel), 0);
}

static void from_sibling(pool_t *p) {
  for (int inside = 0; inside < 2; inside++) {
    skip_count base = skip_read(p);
    sib_state *s = calloc(1, sizeof *s);
    CHECK(s);
    s->pool = inside ? NULL : p;
    s->ran_a = flags_alloc(SIB_A);
    s->ran_b = flags_alloc(SIB_B);
    s->rounds = check_iters(40);
    s->seed = 0x51b1u + pool_threads(p) * 2 + (unsigned)inside;
    sibs = s;
    if (inside)
      run_inside(p, sib_rounds, s);
    else
      sib_rounds(s);
    skip_expect(p, base, s->spawned - s->total_ran, 0, "from_sibling");
    free((void *)s->ran_a);
    free((void *)s->ran_b);
    free(s);
  }
}

static void case_from_sibling(void) { ON_POOLS(from_sibling, 1, 2, 4); }

/* ---- from_outside / from_other_pool ---------------------------------------------- */

enum { OUT_N = 1000 };

typedef struct out_state {
  pool_t *pool;
  pool_t *other; /* from_other_pool: the canceller's pool */
  pool_group_t g;
  atomic_uint *ran;
  atomic_uint started;
  atomic_int cancel_done;
  int cancel_rc, canceller_cancelled, canceller_fail;
  int first_saw_cancel;
  unsigned long rounds;
  uint64_t spawned, total_ran;
} out_state;

static out_state *outs;

static void out_child(void *arg) {
  atomic_fetch_add((atomic_uint *)arg, 1);
  if (atomic_fetch_add(&outs->started, 1) == 0) {
    /* The first child to start waits for the cancel: it is running then. */
    while (!atomic_load(&outs->cancel_done)) sched_yield();
    outs->first_saw_cancel = pool_cancelled();
  }
  busy_work(100);
}

static void out_cancel(out_state *s) {
  while (atomic_load(&s->started) == 0) sched_yield();
  s->cancel_rc = pool_group_cancel(&s->g);
  s->canceller_cancelled = pool_cancelled();
  s->canceller_fail = pool_fail(EIO);
  atomic_store(&s->cancel_done, 1);
}

static void *out_thread(void *v) {
  out_cancel(v);
  return NULL;
}

static void out_task(void *v) { out_cancel(v); }

static void out_rounds(void *v) {
  out_state *s = v;
  for (unsigned long r = 0; r < s->rounds; r++) {
    memset((void *)s->ran, 0, OUT_N * sizeof(atomic_uint));
    atomic_store(&s->started, 0);
    atomic_store(&s->cancel_done, 0);
    s->cancel_rc = s->canceller_cancelled = s->canceller_fail = s->first_saw_cancel = -1;
    CHECK_OK(pool_group_init(&s->g, s->pool));
    pthread_t t;
    if (s->other)
      CHECK_OK(pool_submit(s->other, out_task, s));
    else
      CHECK_OK(pthread_create(&t, NULL, out_thread, s));
    for (size_t i = 0; i < OUT_N; i++) CHECK_OK(pool_group_spawn(&s->g, out_child, &s->ran[i]));
    CHECK_EQ(pool_group_wait(&s->g), ECANCELED);
    if (s->other)
      CHECK_OK(pool_wait_idle(s->other));
    else
      CHECK_OK(pthread_join(t, NULL));
    CHECK_OK(s->cancel_rc);
    CHECK_EQ(s->canceller_cancelled, 0);
    CHECK_EQ(s->canceller_fail, ENOENT);
    CHECK_EQ(s->first_saw_cancel, 1);
    unsigned ran = 0;
    for (size_t i = 0; i < OUT_N; i++) {
      unsigned v2 = atomic_load(&s->ran[i]);
      if (v2 > 1) FAIL("child %zu ran %u times\n", i, v2);
      ran += v2;
    }
    CHECK_EQ(atomic_load(&s->started), ran);
    s->total_ran += ran;
    s->spawned += OUT_N;
  }
}

static void from_outside_on(pool_t *p, pool_t *other) {
  for (int inside = 0; inside < 2; inside++) {
    skip_count base = skip_read(p);
    out_state *s = calloc(1, sizeof *s);
    CHECK(s);
    s->pool = inside ? NULL : p;
    s->other = other;
    s->ran = flags_alloc(OUT_N);
    s->rounds = check_iters(30);
    outs = s;
    if (inside)
      run_inside(p, out_rounds, s);
    else
      out_rounds(s);
    skip_expect(p, base, s->spawned - s->total_ran, 0, other ? "from_other_pool" : "from_outside");
    free((void *)s->ran);
    free(s);
  }
}

static void from_outside(pool_t *p) { from_outside_on(p, NULL); }

static void from_other_pool(pool_t *p) {
  pool_t *other = make_pool(1);
  from_outside_on(p, other);
  CHECK_OK(pool_destroy(other));
}

static void case_from_outside(void) { ON_POOLS(from_outside, 1, 2, 4); }
static void case_from_other_pool(void) { ON_POOLS(from_other_pool, 1, 2, 4); }

/* ---- race ----------------------------------------------------------------------- */

enum { RACE_M = 24 };

typedef struct race_state {
  pool_t *pool;
  pool_group_t g;
  atomic_uint ran[RACE_M];
  atomic_uint go, done; /* the round the canceller may cancel in, the last it finished */
  atomic_int stop;
  unsigned delay[2];    /* busy_work before the thread's cancel, before the child's */
  size_t child_canceller; /* RACE_M: none this round */
  atomic_int child_cancelled;
  unsigned long rounds;
  uint64_t seed;
  uint64_t spawned, total_ran;
  unsigned long rc0, rc_cancelled; /* how the rounds ended: information */
} race_state;

static race_state *races;

static void *race_thread(void *v) {
  race_state *s = v;
  for (unsigned r = 1;; r++) {
    while (atomic_load(&s->go) < r) {
      if (atomic_load(&s->stop)) return NULL;
      sched_yield();
    }
    busy_work(s->delay[0]);
    CHECK_OK(pool_group_cancel(&s->g));
    CHECK_OK(pool_group_cancel(&s->g)); /* idempotent */
    atomic_store(&s->done, r);
  }
}

static void race_child(void *arg) {
  size_t i = (size_t)(uintptr_t)arg;
  atomic_fetch_add(&races->ran[i], 1);
  busy_work(200);
  if (i == races->child_canceller) {
    busy_work(races->delay[1]);
    CHECK_OK(pool_group_cancel(&races->g));
    atomic_store(&races->child_cancelled, 1);
  }
}

static void race_rounds(void *v) {
  race_state *s = v;
  for (unsigned r = 1; r <= s->rounds; r++) {
    for (size_t i = 0; i < RACE_M; i++) atomic_store(&s->ran[i], 0);
    /* Afresh each round: a cancel that landed after the last wait is gone. */
    CHECK_OK(pool_group_init(&s->g, s->pool));
    s->delay[0] = (unsigned)(rng_next(&s->seed) % 6000);
    s->delay[1] = (unsigned)(rng_next(&s->seed) % 2000);
    s->child_canceller = (r & 1) ? (size_t)(rng_next(&s->seed) % RACE_M) : RACE_M;
    atomic_store(&s->child_cancelled, 0);
    atomic_store(&s->go, r);
    for (size_t i = 0; i < RACE_M; i++)
      CHECK_OK(pool_group_spawn(&s->g, race_child, (void *)(uintptr_t)i));
    int rc = pool_group_wait(&s->g);
    unsigned ran = 0;
    for (size_t i = 0; i < RACE_M; i++) {
      unsigned v2 = atomic_load(&s->ran[i]);
      if (v2 > 1) FAIL("round %u: child %zu ran %u times\n", r, i, v2);
      ran += v2;
    }
    if (rc != 0 && rc != ECANCELED) FAIL("round %u: the wait returned %d\n", r, rc);
    if (ran < RACE_M && rc != ECANCELED)
      FAIL("round %u: %u of %d ran, the wait returned %d\n", r, ran, RACE_M, rc);
    if (atomic_load(&s->child_cancelled) && rc != ECANCELED)
      FAIL("round %u: a child cancelled, the wait returned %d\n", r, rc);
    if (rc == 0)
      s->rc0++;
    else
      s->rc_cancelled++;
    s->spawned += RACE_M;
    s->total_ran += ran;
    while (atomic_load(&s->done) < r) sched_yield();
  }
}

static void race(pool_t *p) {
  for (int inside = 0; inside < 2; inside++) {
    skip_count base = skip_read(p);
    race_state *s = calloc(1, sizeof *s);
    CHECK(s);
    s->pool = inside ? NULL : p;
    s->rounds = check_iters(TEST_UNDER_SANITIZER ? 400 : 1500);
    s->seed = 0xace0fba5eull + pool_threads(p) * 2 + (unsigned)inside;
    races = s;
    pthread_t t;
    CHECK_OK(pthread_create(&t, NULL, race_thread, s));
    if (inside)
      run_inside(p, race_rounds, s);
    else
      race_rounds(s);
    atomic_store(&s->stop, 1);
    CHECK_OK(pthread_join(t, NULL));
    skip_expect(p, base, s->spawned - s->total_ran, 0, "race");
    fprintf(stderr, "race, %u workers, waiter %s: %lu rounds waited 0, %lu ECANCELED\n",
            pool_threads(p), inside ? "inside" : "outside", s->rc0, s->rc_cancelled);
    free(s);
  }
}

static void case_race(void) { ON_POOLS(race, 1, 2, 4); }

/* ---- stop_latency ----------------------------------------------------------------- */

typedef struct sl_state {
  pool_t *pool;
  pool_group_t g;
  unsigned nthreads;
  size_t n;
  atomic_ulong started; /* every child of every round, first thing */
  atomic_uint over;     /* the last round whose wait returned */
  atomic_uint late;     /* children that started after their round's wait */
  unsigned round;
  unsigned long trigger; /* the value of `started` whose child cancels */
  unsigned long snapshot;
  int cancel_rc;
  unsigned long rounds;
  uint64_t seed;
  uint64_t spawned, total_ran;
  unsigned long worst; /* most children started after a cancel: information */
} sl_state;

static sl_state *sls;

static void sl_child(void *arg) {
  unsigned round = (unsigned)(uintptr_t)arg;
  unsigned long t = atomic_fetch_add(&sls->started, 1); /* seq_cst */
  if (atomic_load(&sls->over) >= round) atomic_fetch_add(&sls->late, 1);
  busy_work(300);
  if (t == sls->trigger) {
    sls->cancel_rc = pool_group_cancel(&sls->g);
    sls->snapshot = atomic_load(&sls->started); /* seq_cst, after the cancel */
  }
}

static void sl_rounds(void *v) {
  sl_state *s = v;
  CHECK_OK(pool_group_init(&s->g, s->pool));
  for (unsigned r = 1; r <= s->rounds; r++) {
    unsigned long before = atomic_load(&s->started);
    s->round = r;
    s->trigger = before + rng_next(&s->seed) % (s->n / 2);
    s->snapshot = 0;
    s->cancel_rc = -1;
    for (size_t i = 0; i < s->n; i++)
      CHECK_OK(pool_group_spawn(&s->g, sl_child, (void *)(uintptr_t)r));
    CHECK_EQ(pool_group_wait(&s->g), ECANCELED);
    atomic_store(&s->over, r);
    unsigned long end = atomic_load(&s->started);
    CHECK_OK(s->cancel_rc);
    CHECK(s->snapshot > s->trigger);
    unsigned long after = end - s->snapshot;
    if (after > s->worst) s->worst = after;
    if (after > s->nthreads)
      FAIL("round %u: %lu children started after the cancel returned, %u workers\n", r, after,
           s->nthreads);
    s->spawned += s->n;
    s->total_ran += end - before;
  }
}

static void stop_latency(pool_t *p) {
  for (int inside = 0; inside < 2; inside++) {
    skip_count base = skip_read(p);
    sl_state *s = calloc(1, sizeof *s);
    CHECK(s);
    s->pool = inside ? NULL : p;
    s->nthreads = pool_threads(p);
    s->n = 64 * (size_t)s->nthreads < 512 ? 512 : 64 * (size_t)s->nthreads;
    s->rounds = check_iters(60);
    s->seed = 0x5709u + s->nthreads * 2 + (unsigned)inside;
    sls = s;
    if (inside)
      run_inside(p, sl_rounds, s);
    else
      sl_rounds(s);
    skip_expect(p, base, s->spawned - s->total_ran, 0, "stop_latency");
    /* Nothing of any round started after its wait, then or since. */
    CHECK_EQ(atomic_load(&s->late), 0);
    CHECK_EQ(atomic_load(&s->started), s->total_ran);
    fprintf(stderr, "stop_latency, %u workers, waiter %s: at most %lu started after a cancel\n",
            s->nthreads, inside ? "inside" : "outside", s->worst);
    free(s);
  }
}

static void case_stop_latency(void) { ON_POOLS(stop_latency, 2, 4, 16); }

TEST_MAIN(240, TEST_CASE(from_child), TEST_CASE(midspawn), TEST_CASE(from_sibling),
          TEST_CASE(from_outside), TEST_CASE(from_other_pool), TEST_CASE(race),
          TEST_CASE(stop_latency))
