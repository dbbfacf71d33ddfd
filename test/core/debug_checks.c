/* SPDX-License-Identifier: MIT */
/* A debug_checks build (-Ddebug_checks=true) detects every misuse the
 * header names and reports it with the call stack, then aborts.
 *
 * Each case runs in a fork()ed child (this process starts no thread before
 * forking) with stderr on a pipe; the parent checks the child died of
 * SIGABRT and that the report names the misuse and the call site: the
 * function of this program that made the call (linked with -rdynamic, so
 * the stack shows its name).
 *  - spawn into a frame still pending (from a worker, and from outside);
 *  - sync twice; take after sync;
 *  - sync from a thread other than the spawning one;
 *  - group spawn and group wait on a group never initialised;
 *  - a second pool_group_wait while one runs; pool_group_init on a group
 *    whose children are pending;
 *  - a frame spawned in a join's half and synced after the join returned
 *    (another unit of work).
 * One case per misuse, named after it. In other builds: skipped (77). */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <wspool.h>

#include "check.h"
#include "testutil.h"
#include "wspool_test_config.h"

/* After the misusing call, so it stays a call (a tail call would leave
 * the caller's frame off the stack the report prints). */
#define NO_TAIL_CALL() __asm__ __volatile__("" ::: "memory")

static pool_t *pool;
static atomic_int release_flag;

static void nothing(void *arg) { (void)arg; }

static void blocker(void *arg) {
  (void)arg;
  while (!atomic_load(&release_flag)) sched_yield();
}

/* ---- the misuses (each ends in the library's abort) ------------------- */

__attribute__((noinline)) void misuse_spawn_pending_inside(void *arg) {
  (void)arg;
  pool_task_t t;
  CHECK_OK(pool_spawn(NULL, &t, nothing, NULL));
  pool_spawn(NULL, &t, nothing, NULL); /* still pending */
  NO_TAIL_CALL();
}
static void run_spawn_pending_inside(void) {
  CHECK_OK(pool_submit(pool, misuse_spawn_pending_inside, NULL));
  pool_wait_idle(pool);
}

__attribute__((noinline)) void misuse_spawn_pending_outside(void) {
  pool_task_t t;
  atomic_store(&release_flag, 0);
  CHECK_OK(pool_spawn(pool, &t, blocker, NULL));
  pool_spawn(pool, &t, nothing, NULL);
  NO_TAIL_CALL();
}

__attribute__((noinline)) void misuse_sync_twice(void) {
  pool_task_t t;
  CHECK_OK(pool_spawn(pool, &t, nothing, NULL));
  CHECK_OK(pool_sync(&t));
  pool_sync(&t);
  NO_TAIL_CALL();
}

__attribute__((noinline)) void misuse_take_after_sync(void *arg) {
  (void)arg;
  pool_task_t t;
  CHECK_OK(pool_spawn(NULL, &t, nothing, NULL));
  CHECK_OK(pool_sync(&t));
  pool_take(&t);
  NO_TAIL_CALL();
}
static void run_take_after_sync(void) {
  CHECK_OK(pool_submit(pool, misuse_take_after_sync, NULL));
  pool_wait_idle(pool);
}

static pool_task_t shared_frame;
__attribute__((noinline)) void *misuse_sync_other_thread(void *arg) {
  (void)arg;
  pool_sync(&shared_frame);
  NO_TAIL_CALL();
  return NULL;
}
static void run_sync_other_thread(void) {
  CHECK_OK(pool_spawn(pool, &shared_frame, nothing, NULL));
  pthread_t th;
  CHECK_OK(pthread_create(&th, NULL, misuse_sync_other_thread, NULL));
  pthread_join(th, NULL);
}

__attribute__((noinline)) void misuse_group_uninit_spawn(void) {
  pool_group_t g;
  memset(&g, 0x5A, sizeof g);
  pool_group_spawn(&g, nothing, NULL);
  NO_TAIL_CALL();
}

__attribute__((noinline)) void misuse_group_uninit_wait(void) {
  pool_group_t g;
  memset(&g, 0, sizeof g);
  pool_group_wait(&g);
  NO_TAIL_CALL();
}

static pool_group_t group;
static atomic_int waiting;
static void *first_waiter(void *arg) {
  (void)arg;
  atomic_store(&waiting, 1);
  pool_group_wait(&group);
  return NULL;
}
__attribute__((noinline)) void misuse_group_second_wait(void) {
  atomic_store(&release_flag, 0);
  CHECK_OK(pool_group_init(&group, pool));
  CHECK_OK(pool_group_spawn(&group, blocker, NULL));
  pthread_t th;
  CHECK_OK(pthread_create(&th, NULL, first_waiter, NULL));
  while (!atomic_load(&waiting)) sched_yield();
  sleep_ms(20); /* let it get into the wait (either order is a misuse) */
  pool_group_wait(&group);
  NO_TAIL_CALL();
}

__attribute__((noinline)) void misuse_group_reinit_pending(void) {
  atomic_store(&release_flag, 0);
  CHECK_OK(pool_group_init(&group, pool));
  CHECK_OK(pool_group_spawn(&group, blocker, NULL));
  pool_group_init(&group, pool);
  NO_TAIL_CALL();
}

typedef struct misuse_case {
  const char *name;
  void (*run)(void);
  const char *report; /* in the message */
  const char *site;   /* the caller's name in the stack */
} misuse_case;

static void run_case(const misuse_case *c) {
  int fds[2];
  CHECK_OK(pipe(fds));
  fflush(NULL);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    check_watchdog(20);
    dup2(fds[1], 2);
    close(fds[0]);
    pool = make_pool(2);
    c->run();
    _exit(3); /* not detected */
  }
  close(fds[1]);
  char buf[16384];
  size_t len = 0;
  ssize_t n;
  while ((n = read(fds[0], buf + len, sizeof buf - 1 - len)) > 0) len += (size_t)n;
  buf[len] = 0;
  close(fds[0]);
  int st;
  CHECK_EQ(waitpid(pid, &st, 0), pid);
  int ok = WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT && strstr(buf, "wspool: misuse:") &&
           strstr(buf, c->report) && strstr(buf, c->site);
  if (!ok) {
    fprintf(stderr, "case \"%s\": status %d, report:\n%s\n", c->name, st, buf);
    CHECK(0);
  }
}

/* A join's half spawns a frame and returns without syncing it: the frame
 * belongs to the join, which is over when the caller syncs it. */
static pool_task_t late_frame;
static void spawn_late(void *arg) {
  (void)arg;
  CHECK_OK(pool_spawn(NULL, &late_frame, nothing, NULL));
}
__attribute__((noinline)) void misuse_sync_other_unit(void *arg) {
  (void)arg;
  CHECK_OK(pool_join(NULL, spawn_late, NULL, nothing, NULL));
  pool_sync(&late_frame);
  NO_TAIL_CALL();
}
static void run_sync_other_unit(void) {
  CHECK_OK(pool_submit(pool, misuse_sync_other_unit, NULL));
  pool_wait_idle(pool);
}

/* The case NAME: RUN misuses the API; the report says REPORT and its stack
 * names SITE. */
#define MISUSE_CASE(name, run, report, site)                  \
  static void case_##name(void) {                             \
    static const misuse_case c = {#name, run, report, site}; \
    run_case(&c);                                             \
  }

MISUSE_CASE(spawn_pending_inside, run_spawn_pending_inside, "still pending",
            "misuse_spawn_pending_inside")
MISUSE_CASE(spawn_pending_outside, misuse_spawn_pending_outside, "still pending",
            "misuse_spawn_pending_outside")
MISUSE_CASE(sync_twice, misuse_sync_twice, "not pending", "misuse_sync_twice")
MISUSE_CASE(take_after_sync, run_take_after_sync, "not pending", "misuse_take_after_sync")
MISUSE_CASE(sync_other_thread, run_sync_other_thread, "other than the one that spawned",
            "misuse_sync_other_thread")
MISUSE_CASE(group_uninit_spawn, misuse_group_uninit_spawn, "never initialised",
            "misuse_group_uninit_spawn")
MISUSE_CASE(group_uninit_wait, misuse_group_uninit_wait, "never initialised",
            "misuse_group_uninit_wait")
MISUSE_CASE(group_second_wait, misuse_group_second_wait, "two pool_group_wait", "pool_group_wait")
MISUSE_CASE(group_reinit_pending, misuse_group_reinit_pending, "children pending",
            "misuse_group_reinit_pending")
MISUSE_CASE(sync_other_unit, run_sync_other_unit, "another unit of work", "misuse_sync_other_unit")

TEST_MAIN_WITH(WSPOOL_TEST_DEBUG_CHECKS ? NULL : "not a debug_checks build", NULL, 120,
               TEST_CASE(spawn_pending_inside), TEST_CASE(spawn_pending_outside),
               TEST_CASE(sync_twice), TEST_CASE(take_after_sync), TEST_CASE(sync_other_thread),
               TEST_CASE(group_uninit_spawn), TEST_CASE(group_uninit_wait),
               TEST_CASE(group_second_wait), TEST_CASE(group_reinit_pending),
               TEST_CASE(sync_other_unit))
