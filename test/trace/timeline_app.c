/* SPDX-License-Identifier: MIT */
/* The program test_timeline.py traces: known work on a pool of 2 workers,
 * then prints the number of task runs the trace must hold ("tasks=N").
 *   timeline_app TRACE_FILE
 * Its phases give the picture each kind of event:
 *   - a fork/join tree (pool_spawn, pool_sync) under one submitted task:
 *     children the owner syncs run inside their parent, nested slices;
 *   - a spawn the spawner does not sync until another worker has started
 *     it: at least one steal;
 *   - every worker asleep (wait_all_asleep), then flat submitted tasks and
 *     the pool's destruction wake them: at least one sleep per worker. */
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <wspool.h>

#include "check.h"
#include "testutil.h"

enum { DEPTH = 8, FLAT = 100 };

static atomic_int runs;

/* Exported (the executable is linked with -rdynamic) so the trace names
 * them. */
void tree_task(void *arg);
void spawner_task(void *arg);
void stolen_task(void *arg);
void flat_task(void *arg);

/* tree(d) spawns one subtree of depth d - 1 and calls the other: 2^d - 1
 * spawned tasks in all. */
static void tree(int d) {
  if (d == 0) {
    atomic_fetch_add(&runs, 1);
    return;
  }
  int child = d - 1;
  pool_task_t t;
  CHECK_OK(pool_spawn(NULL, &t, tree_task, &child));
  tree(d - 1);
  CHECK_OK(pool_sync(&t));
}

void tree_task(void *arg) { tree(*(int *)arg); }

static atomic_int stolen_started;

void stolen_task(void *arg) {
  (void)arg;
  atomic_store(&stolen_started, 1);
}

/* Runs on one worker and waits, without syncing, until the child it
 * spawned has started: only another worker, by stealing it, can start it. */
void spawner_task(void *arg) {
  (void)arg;
  pool_task_t t;
  CHECK_OK(pool_spawn(NULL, &t, stolen_task, NULL));
  while (!atomic_load(&stolen_started)) sched_yield();
  CHECK_OK(pool_sync(&t));
}

void flat_task(void *arg) {
  (void)arg;
  atomic_fetch_add(&runs, 1);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: timeline_app TRACE_FILE\n");
    return 2;
  }
  CHECK_OK(setenv("WSPOOL_TRACE", argv[1], 1));
  pool_t *p = make_pool(2);
  int depth = DEPTH;
  CHECK_OK(pool_submit(p, tree_task, &depth));
  CHECK_OK(pool_wait_idle(p));
  CHECK_EQ(atomic_load(&runs), 1 << DEPTH);
  CHECK_OK(pool_submit(p, spawner_task, NULL));
  CHECK_OK(pool_wait_idle(p));
  wait_all_asleep(p);
  for (int i = 0; i < FLAT; i++) CHECK_OK(pool_submit(p, flat_task, NULL));
  CHECK_OK(pool_wait_idle(p));
  CHECK_OK(pool_destroy(p));
  CHECK_EQ(atomic_load(&runs), (1 << DEPTH) + FLAT);
  /* The submitted root and its 2^DEPTH - 1 spawns, spawner and stolen, the
   * flat tasks. */
  printf("tasks=%d\n", (1 << DEPTH) + 2 + FLAT);
  return 0;
}
