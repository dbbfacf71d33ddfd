/* SPDX-License-Identifier: MIT */
/* fork() in a process that uses wspool (include/wspool.h, "Faults and
 * fork()").
 *
 * The parent keeps a pool P and the default pool busy from a background
 * thread with one kind of work at a time (outside submits, parallel_for,
 * groups, spawn/sync, join, wait_idle, or nothing), and forks in the middle
 * of it. Each child, under its own watchdog:
 *  - uses the default pool: pool_submit(NULL) + pool_wait_idle(NULL) run
 *    the task exactly once, pool_parallel_for(NULL), pool_join(NULL) and
 *    a typed task's NAME_run(NULL) work (a fresh default pool, made on
 *    first use in the child);
 *  - gets EOWNERDEAD from every call on the inherited P (submit, wait_idle,
 *    spawn, join, group_init, parallel_for, parallel_reduce, worker_stats,
 *    a typed task's NAME_run_rc, whose NAME_run returns 0 running nothing),
 *    pool_threads(P) == 0, pool_worker_cpu(P) == -1, and pool_destroy(P)
 *    frees it (0);
 *  - can create, use and destroy a new pool;
 *  - then exits with exit() (atexit handlers and stdio run).
 * The parent checks every child exited 0 and, after the last fork, that
 * its own work ran exactly once.
 * The case `fork_trace`, run only when named (meson's fault_fork_trace),
 * runs the same with WSPOOL_TRACE and WSPOOL_STATS set (the program
 * re-executes itself with them to run the case `traced`), while another
 * thread creates and destroys traced pools, so a fork may come while the
 * trace lock is held; the child must neither hang nor write to the
 * parent's trace file, which stays a complete JSON array.
 * The case `fork_in_loader` forks while another thread is inside
 * dl_iterate_phdr (as an exception's unwinder is): the child, which
 * inherits the loader's lock held by a thread it does not have, creates,
 * uses and destroys a pool (it hung in pool_create until the library
 * stopped calling dl_iterate_phdr there).
 * Skipped (77) under the sanitizers: ThreadSanitizer does not support a
 * multi-threaded parent's child starting threads, and AddressSanitizer's
 * allocator (GCC 12) takes no fork handlers, so a child can block in
 * ASan's own malloc on a lock a parent thread held at fork(). */
#define _GNU_SOURCE
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wspool.h>

#include "check.h"
#include "testutil.h"

enum { W_NONE, W_SUBMIT, W_PARFOR, W_GROUP, W_SPAWN, W_JOIN, W_IDLE, NWORK };
static const char *const work_name[NWORK] = {"idle",  "submit", "parallel_for", "group",
                                             "spawn", "join",   "wait_idle"};

/* A child's leak check is off: memory that only the parent's threads
 * referenced (a task a worker had in hand) is unreachable in a child that
 * does not have those threads. LeakSanitizer's documented switch. */
static int in_child;
int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void) { return in_child; }

static pool_t *P;
static atomic_int work_kind, stop_work, work_rounds;
static atomic_long submitted, ran;

static void count(void *arg) {
  (void)arg;
  atomic_fetch_add(&ran, 1);
}

/* count() as a typed task, returning its argument. */
static long tcount(int n) {
  atomic_fetch_add(&ran, 1);
  return n;
}
POOL_TASK(long, tcount, int);

static void range_body(size_t b, size_t e, void *ctx) {
  atomic_fetch_add((atomic_long *)ctx, (long)(e - b));
}

static void *worker_thread(void *arg) {
  (void)arg;
  while (!atomic_load(&stop_work)) {
    pool_t *pool = atomic_load(&work_rounds) % 2 ? P : NULL;
    switch (atomic_load(&work_kind)) {
    case W_SUBMIT:
      for (int i = 0; i < 64; i++) {
        CHECK_OK(pool_submit(pool, count, NULL));
        atomic_fetch_add(&submitted, 1);
      }
      CHECK_OK(pool_wait_idle(pool));
      break;
    case W_PARFOR: {
      atomic_long items;
      atomic_init(&items, 0);
      CHECK_OK(pool_parallel_for(pool, 0, 10000, 10, range_body, &items));
      CHECK_EQ(atomic_load(&items), 10000);
      break;
    }
    case W_GROUP: {
      pool_group_t g;
      CHECK_OK(pool_group_init(&g, pool));
      for (int i = 0; i < 32; i++) {
        CHECK_OK(pool_group_spawn(&g, count, NULL));
        atomic_fetch_add(&submitted, 1);
      }
      CHECK_OK(pool_group_wait(&g));
      break;
    }
    case W_SPAWN: {
      pool_task_t t[8];
      for (int i = 0; i < 8; i++) {
        CHECK_OK(pool_spawn(pool, &t[i], count, NULL));
        atomic_fetch_add(&submitted, 1);
      }
      for (int i = 8; i-- > 0;) CHECK_OK(pool_sync(&t[i]));
      break;
    }
    case W_JOIN:
      CHECK_OK(pool_join(pool, count, NULL, count, NULL));
      atomic_fetch_add(&submitted, 2);
      break;
    case W_IDLE:
      CHECK_OK(pool_wait_idle(pool));
      break;
    default:
      sched_yield();
    }
    atomic_fetch_add(&work_rounds, 1);
  }
  return NULL;
}

static void child_checks(void) {
  check_watchdog(30); /* alarms are not inherited */
  CHECK(pool_current() == NULL);
  CHECK_EQ(pool_worker_id(), -1);
  /* The default pool: a fresh one. */
  atomic_store(&ran, 0);
  CHECK_OK(pool_submit(NULL, count, NULL));
  CHECK_OK(pool_wait_idle(NULL));
  CHECK_EQ(atomic_load(&ran), 1);
  atomic_long items;
  atomic_init(&items, 0);
  CHECK_OK(pool_parallel_for(NULL, 0, 5000, 0, range_body, &items));
  CHECK_EQ(atomic_load(&items), 5000);
  CHECK_OK(pool_join(NULL, count, NULL, count, NULL));
  CHECK_EQ(atomic_load(&ran), 3);
  CHECK_EQ(tcount_run(NULL, 9), 9);
  CHECK_EQ(atomic_load(&ran), 4);
  CHECK(pool_default() != NULL);
  CHECK(pool_threads(NULL) > 0);

  /* The inherited pool answers EOWNERDEAD. */
  CHECK_EQ(pool_submit(P, count, NULL), EOWNERDEAD);
  CHECK_EQ(pool_wait_idle(P), EOWNERDEAD);
  pool_task_t t;
  CHECK_EQ(pool_spawn(P, &t, count, NULL), EOWNERDEAD);
  CHECK_EQ(pool_join(P, count, NULL, count, NULL), EOWNERDEAD);
  pool_group_t g;
  CHECK_EQ(pool_group_init(&g, P), EOWNERDEAD);
  CHECK_EQ(pool_parallel_for(P, 0, 10, 1, range_body, &items), EOWNERDEAD);
  long zero = 0, out = -1;
  pool_reducer_t r = {sizeof(long), &zero, len_body, len_combine, NULL, 0};
  CHECK_EQ(pool_parallel_reduce(P, 0, 10, 1, &r, &out), EOWNERDEAD);
  pool_worker_stats_t s;
  CHECK_EQ(pool_worker_stats(P, 0, &s), EOWNERDEAD);
  CHECK_EQ(pool_threads(P), 0);
  long tout = -1;
  CHECK_EQ(tcount_run_rc(P, &tout, 5), EOWNERDEAD);
  CHECK_EQ(tout, -1);
  CHECK_EQ(tcount_run(P, 5), 0);
  CHECK_EQ(pool_worker_cpu(P, 0), -1);
  CHECK_EQ(atomic_load(&ran), 4); /* nothing of that ran */
  CHECK_OK(pool_destroy(P));

  /* A new pool works. */
  pool_t *q = make_pool(2);
  for (int i = 0; i < 100; i++) CHECK_OK(pool_submit(q, count, NULL));
  CHECK_OK(pool_destroy(q));
  CHECK_EQ(atomic_load(&ran), 104);
}

/* Creates and destroys traced pools: the trace lock is often held. */
static atomic_int churn_stop;
static void *churn_thread(void *arg) {
  (void)arg;
  while (!atomic_load(&churn_stop)) {
    pool_t *q = make_pool(1);
    for (int i = 0; i < 200; i++) CHECK_OK(pool_submit(q, count, NULL));
    atomic_fetch_add(&submitted, 200);
    CHECK_OK(pool_destroy(q));
  }
  return NULL;
}

/* Forks during each kind of work, WSPOOL_STRESS times 3 each. */
static void forks_during_work(void) {
  unsigned long forks = check_iters(3);
  for (int k = 0; k < NWORK; k++) {
    atomic_store(&work_kind, k);
    for (unsigned long i = 0; i < forks; i++) {
      int r0 = atomic_load(&work_rounds);
      while (atomic_load(&work_rounds) < r0 + 2) sched_yield(); /* in the middle of it */
      fflush(NULL);
      pid_t pid = fork();
      CHECK(pid >= 0);
      if (pid == 0) {
        in_child = 1;
        child_checks();
        exit(0);
      }
      char who[64];
      snprintf(who, sizeof who, "child forked during %s work", work_name[k]);
      child_ok(pid, who);
    }
  }
}

static void run(int traced) {
  P = make_pool(2);
  CHECK_OK(pool_submit(NULL, count, NULL)); /* the parent's default pool */
  atomic_fetch_add(&submitted, 1);
  CHECK_OK(pool_wait_idle(NULL));
  pthread_t bg, churn;
  CHECK_OK(pthread_create(&bg, NULL, worker_thread, NULL));
  if (traced) CHECK_OK(pthread_create(&churn, NULL, churn_thread, NULL));
  forks_during_work();
  atomic_store(&stop_work, 1);
  CHECK_OK(pthread_join(bg, NULL));
  if (traced) {
    atomic_store(&churn_stop, 1);
    CHECK_OK(pthread_join(churn, NULL));
  }
  CHECK_OK(pool_wait_idle(NULL));
  CHECK_OK(pool_destroy(P));
  CHECK_EQ(atomic_load(&ran), atomic_load(&submitted));
}

static void case_fork(void) { run(0); }

/* With traced pools: the case fork_trace re-executes the program for it. */
static void case_traced(void) { run(1); }

/* The parent's trace file, whole: one '[' first, one ']' last. */
static void check_trace_file(const char *path) {
  FILE *f = fopen(path, "r");
  CHECK(f != NULL);
  int c, first = -1, last = -1, opens = 0, closes = 0;
  while ((c = fgetc(f)) != EOF) {
    if (first < 0 && c != '\n' && c != ' ') first = c;
    if (c == '[') opens++;
    if (c == ']') closes++;
    if (c != '\n' && c != ' ') last = c;
  }
  fclose(f);
  CHECK_EQ(first, '[');
  CHECK_EQ(last, ']');
  CHECK_EQ(opens, 1);
  CHECK_EQ(closes, 1);
}

/* Re-runs the program traced (tracing starts with the first pool of a
 * process): the case `traced` with WSPOOL_TRACE and WSPOOL_STATS set. */
static void case_fork_trace(void) {
  char path[64];
  snprintf(path, sizeof path, "/tmp/wspool-fork-trace-%d.json", (int)getpid());
  check_watchdog(300);
  CHECK_OK(setenv("WSPOOL_TRACE", path, 1));
  CHECK_OK(setenv("WSPOOL_STATS", "1", 1));
  fflush(NULL);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    execl("/proc/self/exe", test_argv0(), "traced", (char *)NULL);
    _exit(2);
  }
  CHECK_OK(unsetenv("WSPOOL_TRACE"));
  CHECK_OK(unsetenv("WSPOOL_STATS"));
  child_ok(pid, "the traced run");
  check_trace_file(path);
  unlink(path);
}

/* fork_in_loader: a thread held inside dl_iterate_phdr's callback. */
static sem_t in_loader, leave_loader;
static int loader_cb(struct dl_phdr_info *info, size_t size, void *ctx) {
  (void)info;
  (void)size;
  (void)ctx;
  sem_post(&in_loader);
  while (sem_wait(&leave_loader) != 0) {
  }
  return 1;
}
static void *loader_thread(void *arg) {
  (void)arg;
  dl_iterate_phdr(loader_cb, NULL);
  return NULL;
}

static void case_fork_in_loader(void) {
  CHECK_OK(sem_init(&in_loader, 0, 0));
  CHECK_OK(sem_init(&leave_loader, 0, 0));
  pthread_t t;
  CHECK_OK(pthread_create(&t, NULL, loader_thread, NULL));
  while (sem_wait(&in_loader) != 0) {
  }
  fflush(NULL);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    in_child = 1;
    check_watchdog(30); /* alarms are not inherited */
    pool_t *q = make_pool(2);
    atomic_store(&ran, 0);
    for (int i = 0; i < 10; i++) CHECK_OK(pool_submit(q, count, NULL));
    CHECK_OK(pool_wait_idle(q));
    CHECK_EQ(atomic_load(&ran), 10);
    CHECK_OK(pool_destroy(q));
    exit(0);
  }
  CHECK_OK(sem_post(&leave_loader));
  child_ok(pid, "a child forked with a thread inside dl_iterate_phdr");
  CHECK_OK(pthread_join(t, NULL));
}

static const char *skip_reason(void) {
  /* qemu-user asserts in its own code when a multithreaded guest forks
   * (plugins/core.c, cpu-exec.c), before the child runs any of ours. */
  if (getenv("WSPOOL_TEST_EMULATED")) return "fork() of a threaded process under qemu-user";
  if (TEST_UNDER_ASAN || TEST_UNDER_TSAN) return "a threaded fork under ThreadSanitizer or AddressSanitizer (see fork.c)";
  return NULL;
}

TEST_MAIN_WITH(skip_reason(), NULL, 120, TEST_CASE(fork), TEST_CASE(fork_in_loader),
               TEST_CASE_NAMED(fork_trace), TEST_CASE_NAMED(traced))
