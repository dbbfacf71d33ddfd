/* SPDX-License-Identifier: MIT */
/* Bounded submission (wspool.h, "Bounded submission"): pool_config_t's
 * max_queued, pool_try_submit, pool_submit_n's E2BIG, pool_pending.
 *
 * Cases:
 *  holds         2 workers, bound 6, every task held at a gate: a producer
 *                gets exactly 6 + 2 tasks in (2 running, 6 waiting) and
 *                no more while the gate is shut; pool_try_submit and
 *                pool_submit_n fail meanwhile with nothing submitted, and
 *                pool_pending reads 6 queued, 2 running. Opening the gate
 *                lets the producer finish: every task runs exactly once.
 *  large_bound   the same with bound 64, where workers report their starts
 *                in credits: the producer gets between 64 and 66 in.
 *  submit_n      E2BIG above the bound, nothing run; runs of up to the
 *                bound wait for room and all run once.
 *  inside        a task on a bounded pool submits 20 x the bound from
 *                inside, with try and plain calls: nothing waits or fails.
 *  order         1 worker, bound 4: tasks still start in submission order.
 *  destroy       a producer waiting for room when pool_destroy begins
 *                returns ESHUTDOWN; what was accepted runs exactly once.
 *  producers     4 producers (plain, try with a fallback, runs of 3) into
 *                pools of 1 and 2 workers with bounds 1, 3 and 32, tiny
 *                tasks: each runs exactly once; pool_pending reads 0 0
 *                once idle. Scales with WSPOOL_STRESS. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <wspool.h>

#include "check.h"
#include "testutil.h"

/* ---- tasks held at a gate ---------------------------------------------- */

static atomic_int gate_open;
static atomic_size_t held_started;
static atomic_uint *ran;

static void held(void *arg) {
  atomic_fetch_add(&held_started, 1);
  while (!atomic_load(&gate_open)) sleep_ms(1);
  atomic_fetch_add(&ran[(uintptr_t)arg], 1);
}

typedef struct producer {
  pool_t *pool;
  size_t n;
  atomic_size_t accepted;
  int rc; /* of the last call */
} producer;

static void *produce_held(void *v) {
  producer *pr = v;
  for (size_t i = 0; i < pr->n; i++) {
    pr->rc = pool_submit(pr->pool, held, (void *)(uintptr_t)i);
    if (pr->rc) return NULL;
    atomic_fetch_add(&pr->accepted, 1);
  }
  return NULL;
}

/* Waits until `cond` holds (the watchdog bounds it). */
#define WAIT_UNTIL(cond)          \
  do {                            \
    while (!(cond)) sleep_ms(1); \
  } while (0)

/* A producer against `workers` held tasks and a bound: it stops between
 * lo and hi accepted, and stays there while the gate is shut. */
static void hold_case(unsigned workers, size_t bound, size_t lo, size_t hi) {
  pool_t *p = bounded_pool(workers, bound);
  enum { N = 200 };
  ran = flags_alloc(N);
  atomic_store(&gate_open, 0);
  atomic_store(&held_started, 0);
  producer pr = {.pool = p, .n = N};
  pthread_t th;
  CHECK_EQ(pthread_create(&th, NULL, produce_held, &pr), 0);
  WAIT_UNTIL(atomic_load(&held_started) == workers && atomic_load(&pr.accepted) >= lo);
  sleep_ms(50); /* a producer past its bound would get further meanwhile */
  size_t got = atomic_load(&pr.accepted);
  if (got < lo || got > hi) fprintf(stderr, "accepted %zu, expected %zu..%zu\n", got, lo, hi);
  CHECK(got >= lo && got <= hi);
  CHECK_EQ(atomic_load(&held_started), workers);
  /* Full: the other calls fail at once, with nothing submitted. */
  CHECK_EQ(pool_try_submit(p, held, (void *)(uintptr_t)0), EAGAIN);
  CHECK_EQ(pool_submit_n(p, held, NULL, bound + 1), E2BIG);
  size_t queued = 99, running = 99;
  CHECK_OK(pool_pending(p, &queued, &running));
  CHECK_EQ(running, workers);
  CHECK_EQ(queued, got - workers);
  CHECK(queued <= bound);
  CHECK_OK(pool_pending(p, NULL, NULL));
  atomic_store(&gate_open, 1);
  CHECK_EQ(pthread_join(th, NULL), 0);
  CHECK_OK(pr.rc);
  CHECK_EQ(atomic_load(&pr.accepted), N);
  CHECK_OK(pool_wait_idle(p));
  flags_check_once(ran, N, "task");
  CHECK_OK(pool_pending(p, &queued, &running));
  CHECK_EQ(queued, 0);
  CHECK_EQ(running, 0);
  CHECK_OK(pool_destroy(p));
  free((void *)ran);
}

/* Bound 6 on 2 workers: a credit of 1 (6 / 4), every start reported. */
static void case_holds(void) { hold_case(2, 6, 8, 8); }

/* Bound 64 on 2 workers: credits of 16; each held worker may not have
 * reported its one start yet. */
static void case_large_bound(void) { hold_case(2, 64, 64, 66); }

/* ---- pool_submit_n ------------------------------------------------------- */

static atomic_size_t count;
static void bump(void *arg) {
  (void)arg;
  atomic_fetch_add(&count, 1);
}

static void case_submit_n(void) {
  pool_t *p = bounded_pool(2, 8);
  atomic_store(&count, 0);
  CHECK_EQ(pool_submit_n(p, bump, NULL, 9), E2BIG);
  CHECK_OK(pool_wait_idle(p));
  CHECK_EQ(atomic_load(&count), 0);
  size_t total = 0;
  unsigned long reps = check_iters(2000);
  for (unsigned long r = 0; r < reps; r++) {
    size_t n = 1 + r % 8;
    CHECK_OK(pool_submit_n(p, bump, NULL, n));
    total += n;
  }
  CHECK_OK(pool_wait_idle(p));
  CHECK_EQ(atomic_load(&count), total);
  CHECK_OK(pool_destroy(p));
}

/* ---- from inside --------------------------------------------------------- */

enum { INSIDE_BOUND = 4, INSIDE_N = 20 * INSIDE_BOUND };

static void spawner(void *arg) {
  pool_t *p = arg;
  for (int i = 0; i < INSIDE_N; i++) {
    CHECK_OK(pool_try_submit(p, bump, NULL));
    CHECK_OK(pool_submit(p, bump, NULL));
  }
  CHECK_OK(pool_submit_n(p, bump, NULL, INSIDE_N)); /* above the bound: fine inside */
}

static void case_inside(void) {
  pool_t *p = bounded_pool(2, INSIDE_BOUND);
  atomic_store(&count, 0);
  CHECK_OK(pool_submit(p, spawner, p));
  CHECK_OK(pool_wait_idle(p));
  CHECK_EQ(atomic_load(&count), 3 * INSIDE_N);
  CHECK_OK(pool_destroy(p));
}

/* ---- order --------------------------------------------------------------- */

static atomic_size_t next_seq;
static atomic_int out_of_order;

static void in_order(void *arg) {
  size_t want = atomic_fetch_add(&next_seq, 1);
  if ((size_t)(uintptr_t)arg != want) atomic_store(&out_of_order, 1);
}

static void case_order(void) {
  pool_t *p = bounded_pool(1, 4);
  atomic_store(&next_seq, 0);
  atomic_store(&out_of_order, 0);
  size_t n = check_iters(20000);
  for (size_t i = 0; i < n; i++) {
    if (i % 7 == 3) {
      void *args[3] = {(void *)(uintptr_t)i, (void *)(uintptr_t)(i + 1), (void *)(uintptr_t)(i + 2)};
      if (i + 2 < n) {
        CHECK_OK(pool_submit_n(p, in_order, args, 3));
        i += 2;
        continue;
      }
    }
    int rc;
    while ((rc = pool_try_submit(p, in_order, (void *)(uintptr_t)i)) == EAGAIN && i % 2)
      sched_yield();
    if (rc == EAGAIN) rc = pool_submit(p, in_order, (void *)(uintptr_t)i);
    CHECK_OK(rc);
  }
  CHECK_OK(pool_wait_idle(p));
  CHECK_EQ(atomic_load(&next_seq), n);
  CHECK_EQ(atomic_load(&out_of_order), 0);
  CHECK_OK(pool_destroy(p));
}

/* ---- destroy while a producer waits -------------------------------------- */

static void *destroy_thread(void *v) {
  CHECK_OK(pool_destroy(v));
  return NULL;
}

static void case_destroy(void) {
  pool_t *p = bounded_pool(1, 2);
  enum { N = 50 };
  ran = flags_alloc(N);
  atomic_store(&gate_open, 0);
  atomic_store(&held_started, 0);
  producer pr = {.pool = p, .n = N};
  pthread_t th, dt;
  CHECK_EQ(pthread_create(&th, NULL, produce_held, &pr), 0);
  WAIT_UNTIL(atomic_load(&held_started) == 1 && atomic_load(&pr.accepted) == 3);
  CHECK_EQ(pthread_create(&dt, NULL, destroy_thread, p), 0);
  /* The drain cannot end while the gate is shut: the producer's wait ends
   * because destroy began. */
  CHECK_EQ(pthread_join(th, NULL), 0);
  CHECK_EQ(pr.rc, ESHUTDOWN);
  CHECK_EQ(atomic_load(&pr.accepted), 3);
  atomic_store(&gate_open, 1);
  CHECK_EQ(pthread_join(dt, NULL), 0);
  for (size_t i = 0; i < N; i++) CHECK_EQ(atomic_load(&ran[i]), i < 3 ? 1u : 0u);
  free((void *)ran);
}

/* ---- many producers ------------------------------------------------------ */

typedef struct mixer {
  pool_t *pool;
  size_t n, first;
  uint64_t seed;
} mixer;

static void mark(void *arg) { atomic_fetch_add(&ran[(uintptr_t)arg], 1); }

static void *produce_mixed(void *v) {
  mixer *m = v;
  size_t max_run = 3;
  for (size_t i = 0; i < m->n;) {
    uintptr_t id = m->first + i;
    switch (rng_next(&m->seed) % 3) {
    case 0: CHECK_OK(pool_submit(m->pool, mark, (void *)id)); i++; break;
    case 1: {
      int rc = pool_try_submit(m->pool, mark, (void *)id);
      if (rc == EAGAIN) continue; /* full: try again (or another form) */
      CHECK_OK(rc);
      i++;
      break;
    }
    default: {
      size_t k = m->n - i < max_run ? m->n - i : max_run;
      void *args[3];
      for (size_t j = 0; j < k; j++) args[j] = (void *)(id + j);
      int rc = pool_submit_n(m->pool, mark, args, k);
      if (rc == E2BIG) {
        CHECK_OK(pool_submit(m->pool, mark, (void *)id)); /* a bound of 1 or 2 */
        i++;
        break;
      }
      CHECK_OK(rc);
      i += k;
    }
    }
  }
  return NULL;
}

static void case_producers(void) {
  enum { P = 4 };
  static const unsigned workers[] = {1, 2};
  static const size_t bounds[] = {1, 3, 32};
  size_t per = check_iters(5000);
  for (size_t wi = 0; wi < 2; wi++) {
    for (size_t bi = 0; bi < 3; bi++) {
      pool_t *p = bounded_pool(workers[wi], bounds[bi]);
      ran = flags_alloc(P * per);
      mixer m[P];
      pthread_t th[P];
      for (unsigned t = 0; t < P; t++) {
        m[t] = (mixer){p, per, t * per, 0x9e3779b97f4a7c15ull * (wi * 3 + bi + 1) + t};
        CHECK_EQ(pthread_create(&th[t], NULL, produce_mixed, &m[t]), 0);
      }
      for (unsigned t = 0; t < P; t++) CHECK_EQ(pthread_join(th[t], NULL), 0);
      CHECK_OK(pool_wait_idle(p));
      flags_check_once(ran, P * per, "task");
      size_t queued = 99, running = 99;
      CHECK_OK(pool_pending(p, &queued, &running));
      CHECK_EQ(queued, 0);
      CHECK_EQ(running, 0);
      CHECK_OK(pool_destroy(p));
      free((void *)ran);
    }
  }
}

TEST_MAIN(240, TEST_CASE(holds), TEST_CASE(large_bound), TEST_CASE(submit_n), TEST_CASE(inside),
          TEST_CASE(order), TEST_CASE(destroy), TEST_CASE(producers))
