/* SPDX-License-Identifier: MIT */
/* Publication of private frames: on a pool of 2 workers, pool_join(a, b)
 * inside a task where `a` does not return until `b` has started. That only
 * finishes if the spawned `b` is made visible to the other worker (and the
 * other worker is woken) while `a` runs without spawning: the first spawn
 * onto an empty public deque must be published. Two settings: the other
 * worker asleep at the spawn, and the other worker busy at the spawn (a
 * holder task that ends only once `a` runs, so no thief has looked at the
 * deque, or asked for work, when `b` is spawned). A regression hangs
 * (watchdog). Cases: asleep, busy. */
#include <sched.h>
#include <stdatomic.h>
#include <unistd.h>
#include <wspool.h>

#include "check.h"
#include "testutil.h"

typedef struct pair {
  atomic_int b_started, a_started;
  int a_worker, b_worker;
} pair;

static void half_a(void *arg) {
  pair *p = arg;
  p->a_worker = pool_worker_id();
  atomic_store(&p->a_started, 1);
  while (!atomic_load(&p->b_started)) sched_yield(); /* no spawn in here */
}

static void half_b(void *arg) {
  pair *p = arg;
  p->b_worker = pool_worker_id();
  atomic_store(&p->b_started, 1);
}

typedef struct job {
  unsigned long rounds;
  atomic_int ok;
} job;

static void joins(void *arg) {
  job *j = arg;
  for (unsigned long r = 0; r < j->rounds; r++) {
    pair p = {0, 0, -1, -1};
    CHECK_OK(pool_join(NULL, half_a, &p, half_b, &p));
    CHECK(atomic_load(&p.b_started));
    CHECK(p.a_worker >= 0 && p.b_worker >= 0 && p.a_worker != p.b_worker);
    if (r % 64 == 0) usleep(2000); /* let the other worker fall asleep */
  }
  atomic_store(&j->ok, 1);
}

typedef struct busy_round {
  pair p;
  atomic_int holding;
} busy_round;

static void holder(void *arg) {
  busy_round *br = arg;
  atomic_store(&br->holding, 1);
  while (!atomic_load(&br->p.a_started)) sched_yield();
}

static void nothing(void *arg) { (void)arg; }

static void joiner(void *arg) {
  busy_round *br = arg;
  while (!atomic_load(&br->holding)) sched_yield(); /* the other worker is busy */
  /* Use up any earlier request for work: this spawn is published (and
   * synced back by us, as the other worker is busy), so nothing has asked
   * for work when `b` is spawned below. */
  pool_task_t t;
  CHECK_OK(pool_spawn(NULL, &t, nothing, NULL));
  CHECK_OK(pool_sync(&t));
  CHECK_OK(pool_join(NULL, half_a, &br->p, half_b, &br->p));
  CHECK(br->p.a_worker != br->p.b_worker);
}

static void case_asleep(void) {
  pool_t *pool = make_pool(2);
  for (int k = 0; k < 3; k++) {
    usleep(20000); /* both workers asleep */
    job j = {check_iters(2000), 0};
    CHECK_OK(pool_submit(pool, joins, &j));
    CHECK_OK(pool_wait_idle(pool));
    CHECK(atomic_load(&j.ok));
  }
  CHECK_OK(pool_destroy(pool));
}

static void case_busy(void) {
  pool_t *pool = make_pool(2);
  unsigned long rounds = check_iters(300);
  for (unsigned long r = 0; r < rounds; r++) {
    busy_round br = {{0, 0, -1, -1}, 0};
    CHECK_OK(pool_submit(pool, holder, &br));
    CHECK_OK(pool_submit(pool, joiner, &br));
    CHECK_OK(pool_wait_idle(pool));
    CHECK(atomic_load(&br.p.b_started));
  }
  CHECK_OK(pool_destroy(pool));
}

TEST_MAIN(60, TEST_CASE(asleep), TEST_CASE(busy))
