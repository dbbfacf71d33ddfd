/* SPDX-License-Identifier: MIT */
/* Fork/join misuse, inside a task and from an outside thread:
 *  - pool_spawn with a NULL task or NULL fn -> EINVAL, nothing runs, and a
 *    frame whose spawn failed is not syncable (EINVAL);
 *  - pool_sync(NULL) -> EINVAL; on a zeroed or garbage never-spawned frame
 *    -> EINVAL; a second sync of the same frame -> EINVAL (after an inline
 *    run, after an out-of-order sync, and for a frame spawned from outside
 *    and run by a worker);
 *  - pool_group_spawn NULL fn -> EINVAL; group calls on NULL -> EINVAL; on
 *    a zeroed (uninitialised) group -> EINVAL;
 *  - pool_join with a NULL function -> EINVAL and neither side runs;
 *  - a frame whose memory holds a copy of another frame that the pool is
 *    running (the library's own bytes: its exec function, its state): a
 *    sync of the copy -> EINVAL, not a wait for the other frame; spawned
 *    privately over that memory (on a one-worker pool, so it surely stays
 *    private) and synced, a second sync -> EINVAL. This is what stale
 *    stack contents look like to a frame that keeps no state of its own
 *    while private;
 * and the pool keeps working afterwards.
 * Cases (pools of 1 to 3 workers): inside (a task; also with the NULL
 * pool), outside, outside_spawned (double sync of a frame an outside
 * thread spawned), stale_images (2 and 3 workers), stolen (double sync with
 * thieves around), default_pool (outside, the NULL pool). In a
 * debug_checks build every case is skipped: the library reports each of
 * these misuses and aborts, which debug_checks.c checks. */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <wspool.h>

#include "check.h"
#include "testutil.h"
#include "wspool_test_config.h"

static atomic_int runs;
static void count(void *p) {
  (void)p;
  atomic_fetch_add(&runs, 1);
}

static atomic_int release_flag;
static void wait_release(void *p) {
  (void)p;
  while (!atomic_load(&release_flag)) sched_yield();
  atomic_fetch_add(&runs, 1);
}

/* Spawn and sync; `runs` counts from 0. */
static void misuse_frames(pool_t *pool) {
  pool_task_t t;

  CHECK_EQ(pool_spawn(pool, NULL, count, NULL), EINVAL);
  CHECK_EQ(pool_spawn(NULL, NULL, count, NULL), EINVAL);
  memset(&t, 0, sizeof t);
  CHECK_EQ(pool_spawn(pool, &t, NULL, NULL), EINVAL);
  CHECK_EQ(pool_spawn(NULL, &t, NULL, (void *)1), EINVAL);
  CHECK_EQ(pool_spawn(pool, NULL, NULL, NULL), EINVAL);
  CHECK_EQ(pool_sync(&t), EINVAL); /* its spawn failed: not a spawned frame */

  CHECK_EQ(pool_sync(NULL), EINVAL);
  memset(&t, 0, sizeof t);
  CHECK_EQ(pool_sync(&t), EINVAL);
  CHECK_EQ(pool_sync(&t), EINVAL);
  memset(&t, 0xFF, sizeof t);
  CHECK_EQ(pool_sync(&t), EINVAL);

  /* Double sync: the common inline case. */
  CHECK_OK(pool_spawn(pool, &t, count, NULL));
  CHECK_OK(pool_sync(&t));
  CHECK_EQ(pool_sync(&t), EINVAL);
  CHECK_EQ(atomic_load(&runs), 1);

  /* Double sync after an out-of-order sync (the newer one ran first). */
  pool_task_t a, b;
  CHECK_OK(pool_spawn(pool, &a, count, NULL));
  CHECK_OK(pool_spawn(pool, &b, count, NULL));
  CHECK_OK(pool_sync(&a));
  CHECK_OK(pool_sync(&b));
  CHECK_EQ(pool_sync(&a), EINVAL);
  CHECK_EQ(pool_sync(&b), EINVAL);
  CHECK_EQ(atomic_load(&runs), 3);

  /* Many frames, synced, then each synced again. */
  pool_task_t many[300];
  for (int i = 0; i < 300; i++) CHECK_OK(pool_spawn(pool, &many[i], count, NULL));
  for (int i = 0; i < 300; i += 2) CHECK_OK(pool_sync(&many[i]));
  for (int i = 1; i < 300; i += 2) CHECK_OK(pool_sync(&many[i]));
  for (int i = 0; i < 300; i++) CHECK_EQ(pool_sync(&many[i]), EINVAL);
  CHECK_EQ(atomic_load(&runs), 303);
}

/* Groups and pool_join; `runs` counts from 303. */
static void misuse_groups_join(pool_t *pool) {
  pool_group_t g;
  CHECK_EQ(pool_group_init(NULL, pool), EINVAL);
  CHECK_EQ(pool_group_spawn(NULL, count, NULL), EINVAL);
  CHECK_EQ(pool_group_spawn(NULL, NULL, NULL), EINVAL);
  CHECK_EQ(pool_group_wait(NULL), EINVAL);
  memset(&g, 0, sizeof g);
  CHECK_EQ(pool_group_spawn(&g, count, NULL), EINVAL); /* uninitialised */
  CHECK_EQ(pool_group_wait(&g), EINVAL);
  CHECK_OK(pool_group_init(&g, pool));
  CHECK_EQ(pool_group_spawn(&g, NULL, NULL), EINVAL);
  CHECK_EQ(pool_group_spawn(&g, NULL, (void *)1), EINVAL);
  CHECK_OK(pool_group_wait(&g)); /* the failed spawns added nothing */
  CHECK_OK(pool_group_spawn(&g, count, NULL));
  CHECK_OK(pool_group_wait(&g));
  CHECK_EQ(atomic_load(&runs), 304);

  /* pool_join. */
  CHECK_EQ(pool_join(pool, NULL, NULL, count, NULL), EINVAL);
  CHECK_EQ(pool_join(pool, count, NULL, NULL, NULL), EINVAL);
  CHECK_EQ(pool_join(pool, NULL, NULL, NULL, NULL), EINVAL);
  CHECK_EQ(pool_join(NULL, NULL, NULL, count, NULL), EINVAL);
  CHECK_EQ(atomic_load(&runs), 304); /* no side ran */
  CHECK_OK(pool_join(pool, count, NULL, count, NULL));
  CHECK_EQ(atomic_load(&runs), 306);
}

static void misuse(pool_t *pool) {
  atomic_store(&runs, 0);
  misuse_frames(pool);
  misuse_groups_join(pool);
}

static void misuse_task(void *p) {
  pool_t *pool = p;
  misuse(pool);
  misuse(NULL);
}

/* Double sync where the older frame is synced first, repeatedly, with idle
 * thieves around (on 2+ workers they may ask for and steal it). */
typedef struct stolen_arg {
  int sync1, sync2;
} stolen_arg;

static void stolen_task(void *p) {
  stolen_arg *s = p;
  pool_task_t t;
  CHECK_OK(pool_spawn(NULL, &t, count, NULL));
  /* A second spawn publishes older frames when a thief asked for work. */
  pool_task_t u;
  CHECK_OK(pool_spawn(NULL, &u, count, NULL));
  s->sync1 = pool_sync(&t);
  s->sync2 = pool_sync(&t);
  CHECK_OK(pool_sync(&u));
  CHECK_EQ(pool_sync(&u), EINVAL);
}

/* ---- stale frame images ------------------------------------------------ */

/* The bytes of a frame an outside thread spawned, before its function has
 * returned (it waits for release_flag), except `thief`, which a worker that
 * runs it writes: everything the library wrote at the spawn. */
static void copy_running_frame(pool_task_t *dst, const pool_task_t *src) {
  memset(dst, 0, sizeof *dst);
  size_t thief = offsetof(struct pool__frame, thief);
  size_t after = thief + sizeof(void *);
  memcpy(dst, src, thief);
  memcpy((char *)dst + after, (const char *)src + after, sizeof *dst - after);
}

/* On the only worker of a pool: a frame over the stale image, spawned
 * privately and synced inline, then synced again. The first spawn, `u`,
 * finds the deque empty and is pushed publicly, which opens the private
 * path; with no thief to close it again, `v` stays private, which its
 * untouched state shows. */
static unsigned state_word(const pool_task_t *t) {
  unsigned st;
  memcpy(&st, (const char *)t + offsetof(struct pool__frame, state), sizeof st);
  return st;
}

static void stale_private_task(void *p) {
  const pool_task_t *image = p;
  const unsigned image_state = state_word(image);
  pool_task_t u, v;
  memcpy(&v, image, sizeof v);
  CHECK_OK(pool_spawn(NULL, &u, count, NULL));
  CHECK_OK(pool_spawn(NULL, &v, count, NULL));
  CHECK_EQ(state_word(&v), image_state); /* private */
  CHECK_OK(pool_sync(&v));
  CHECK_EQ(pool_sync(&v), EINVAL);
  CHECK_EQ(pool_take(&v), EINVAL);
  CHECK_OK(pool_sync(&u));
  memcpy(&v, image, sizeof v);
  CHECK_EQ(pool_sync(&v), EINVAL); /* never spawned here at all */
}

static void stale_images(pool_t *pool) {
  atomic_store(&runs, 0);
  atomic_store(&release_flag, 0);
  pool_task_t t, image;
  CHECK_OK(pool_spawn(pool, &t, wait_release, NULL));
  /* Queued or running, t is SPAWNED until its function returns, which it
   * does only after release_flag is set below. */
  copy_running_frame(&image, &t);
  /* Not spawned: must not wait for t (with a stale copy of t's state it
   * would wait forever) nor report it done. */
  CHECK_EQ(pool_sync(&image), EINVAL);
  CHECK_EQ(pool_take(&image), EINVAL);
  /* The same image under a private frame of a one-worker pool. */
  pool_t *solo = make_pool(1);
  CHECK_OK(pool_submit(solo, stale_private_task, &image));
  CHECK_OK(pool_wait_idle(solo));
  CHECK_OK(pool_destroy(solo));
  atomic_store(&release_flag, 1);
  CHECK_OK(pool_sync(&t));
  CHECK_EQ(pool_sync(&t), EINVAL);
  CHECK_EQ(atomic_load(&runs), 3); /* t, u, and v once */
}

static void inside(pool_t *pool) {
  CHECK_OK(pool_submit(pool, misuse_task, pool));
  CHECK_OK(pool_wait_idle(pool));
}

/* A frame spawned from outside, run by a worker: double sync. */
static void outside_spawned(pool_t *pool) {
  atomic_store(&runs, 0);
  atomic_store(&release_flag, 1);
  pool_task_t t;
  CHECK_OK(pool_spawn(pool, &t, wait_release, NULL));
  CHECK_OK(pool_sync(&t));
  CHECK_EQ(pool_sync(&t), EINVAL);
  CHECK_EQ(atomic_load(&runs), 1);
}

static void stolen(pool_t *pool) {
  for (int r = 0; r < 20; r++) {
    stolen_arg s = {-1, -1};
    CHECK_OK(pool_submit(pool, stolen_task, &s));
    CHECK_OK(pool_wait_idle(pool));
    CHECK_EQ(s.sync1, 0);
    CHECK_EQ(s.sync2, EINVAL);
  }
}

static void case_inside(void) { ON_POOLS(inside, 1, 2, 3); }
/* From outside (the frames go through the global queue). */
static void case_outside(void) { ON_POOLS(misuse, 1, 2, 3); }
static void case_outside_spawned(void) { ON_POOLS(outside_spawned, 1, 2, 3); }
static void case_stale_images(void) { ON_POOLS(stale_images, 2, 3); }
static void case_stolen(void) { ON_POOLS(stolen, 1, 2, 3); }
/* The NULL pool from outside is the default pool. */
static void case_default_pool(void) { misuse(NULL); }

TEST_MAIN_WITH(WSPOOL_TEST_DEBUG_CHECKS ? "a debug_checks build aborts on these misuses" : NULL,
               NULL, 60, TEST_CASE(inside), TEST_CASE(outside), TEST_CASE(outside_spawned),
               TEST_CASE(stale_images), TEST_CASE(stolen), TEST_CASE(default_pool))
