/* SPDX-License-Identifier: MIT */
/* Worker hooks and thread names (pool_config_t on_worker_start,
 * on_worker_stop, name).
 *
 *  - each hook runs exactly once per worker, with the pool, the worker's
 *    index and hook_ctx, on that worker's thread (pool_worker_id() and
 *    pool_current() agree; stop runs on the thread start ran on);
 *  - pool_create() returns after every start hook has returned, and a start
 *    hook runs before its worker takes work (every task finds it done) and after binding: with POOL_BIND_CORE the
 *    thread's affinity is exactly pool_worker_cpu()'s CPU, inside the
 *    process's allowed set;
 *  - no stop hook runs before pool_destroy();
 *  - threads are named "<name>-w<index>", visible in
 *    /proc/self/task/N/comm; a long name is cut so the index fits; the
 *    default name is "wspool-p<N>-w<index>";
 *  - a pool_create() that fails after workers started (strict binding
 *    refused by a seccomp filter, in a child process) runs no hook.
 * Cases: unbound, bound, long_name, default_name, failed_create. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <wspool.h>

#include "check.h"
#include "no_affinity.h"
#include "testutil.h"

#define MAXW 16

typedef struct {
  pool_t *pool;               /* set by main after create; hooks check the argument */
  atomic_int starts[MAXW], stops[MAXW];
  atomic_int started;         /* start hooks finished */
  atomic_int bad;             /* a check inside a hook failed (line number) */
  pid_t start_tid[MAXW], stop_tid[MAXW];
  char comm[MAXW][32];        /* the thread's name, read in its start hook */
  int cpu[MAXW];              /* pool_worker_cpu() seen in the start hook */
  int bound_ok[MAXW];         /* affinity == {cpu} (or cpu < 0) */
  atomic_int task_before_start;
} hook_state;

#define HOOK_CHECK(st, cond)                                            \
  do {                                                                  \
    if (!(cond)) atomic_store(&(st)->bad, __LINE__);                    \
  } while (0)

static pid_t gettid_(void) { return (pid_t)syscall(SYS_gettid); }

static void read_comm(pid_t tid, char *buf, size_t size) {
  char path[64];
  snprintf(path, sizeof path, "/proc/self/task/%d/comm", (int)tid);
  buf[0] = 0;
  FILE *f = fopen(path, "r");
  if (!f) return;
  if (fgets(buf, (int)size, f)) buf[strcspn(buf, "\n")] = 0;
  fclose(f);
}

static void on_start(pool_t *pool, unsigned worker, void *ctx) {
  hook_state *st = ctx;
  HOOK_CHECK(st, worker < MAXW);
  if (worker >= MAXW) return;
  HOOK_CHECK(st, pool_worker_id() == (int)worker);
  HOOK_CHECK(st, pool_current() == pool);
  HOOK_CHECK(st, worker < pool_threads(pool));
  st->start_tid[worker] = gettid_();
  read_comm(st->start_tid[worker], st->comm[worker], sizeof st->comm[worker]);
  int cpu = pool_worker_cpu(pool, worker);
  st->cpu[worker] = cpu;
  cpu_set_t set;
  CPU_ZERO(&set);
  int ok = sched_getaffinity(0, sizeof set, &set) == 0;
  if (ok && cpu >= 0) ok = CPU_COUNT(&set) == 1 && CPU_ISSET(cpu, &set);
  st->bound_ok[worker] = ok;
  atomic_fetch_add(&st->starts[worker], 1);
  atomic_fetch_add(&st->started, 1);
}

static void on_stop(pool_t *pool, unsigned worker, void *ctx) {
  hook_state *st = ctx;
  HOOK_CHECK(st, worker < MAXW);
  if (worker >= MAXW) return;
  HOOK_CHECK(st, pool_worker_id() == (int)worker);
  HOOK_CHECK(st, pool_current() == pool);
  HOOK_CHECK(st, atomic_load(&st->starts[worker]) == 1);
  st->stop_tid[worker] = gettid_();
  atomic_fetch_add(&st->stops[worker], 1);
}

static hook_state *task_state;

static void task(void *arg) {
  (void)arg;
  int id = pool_worker_id();
  if (id < 0 || id >= MAXW || atomic_load(&task_state->starts[id]) != 1)
    atomic_fetch_add(&task_state->task_before_start, 1);
}

/* Threads of this process whose name is `name`. */
static int threads_named(const char *name) {
  DIR *d = opendir("/proc/self/task");
  CHECK(d);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    char comm[32];
    read_comm((pid_t)atoi(e->d_name), comm, sizeof comm);
    if (!strcmp(comm, name)) n++;
  }
  closedir(d);
  return n;
}

static void run_pool(unsigned threads, pool_bind_t bind, const char *name, const char *prefix) {
  static hook_state st;
  memset(&st, 0, sizeof st);
  task_state = &st;
  pool_config_t cfg;
  pool_config_default(&cfg);
  cfg.threads = threads;
  cfg.bind = bind;
  cfg.stack_size = 256u << 10;
  cfg.on_worker_start = on_start;
  cfg.on_worker_stop = on_stop;
  cfg.hook_ctx = &st;
  char namebuf[64];
  if (name) {
    snprintf(namebuf, sizeof namebuf, "%s", name);
    cfg.name = namebuf;
  }
  pool_t *pool;
  CHECK_OK(pool_create(&pool, &cfg));
  memset(namebuf, 'x', sizeof namebuf - 1); /* create copied it */
  st.pool = pool;
  unsigned n = pool_threads(pool);
  CHECK_EQ(n, threads);
  CHECK_EQ(atomic_load(&st.started), n); /* create waits for the start hooks */

  for (int i = 0; i < 200; i++) CHECK_OK(pool_submit(pool, task, NULL));
  CHECK_OK(pool_wait_idle(pool));

  cpu_set_t allowed;
  CHECK_OK(sched_getaffinity(0, sizeof allowed, &allowed));
  for (unsigned i = 0; i < n; i++) {
    CHECK_EQ(atomic_load(&st.starts[i]), 1);
    CHECK_EQ(atomic_load(&st.stops[i]), 0);
    CHECK(st.start_tid[i] > 0 && st.start_tid[i] != gettid_());
    for (unsigned j = 0; j < i; j++) CHECK(st.start_tid[i] != st.start_tid[j]);
    CHECK_EQ(st.cpu[i], pool_worker_cpu(pool, i));
    CHECK(st.bound_ok[i]);
    if (bind != POOL_BIND_NONE && st.cpu[i] >= 0) CHECK(CPU_ISSET(st.cpu[i], &allowed));
    char want[32];
    int sl = snprintf(want, sizeof want, "-w%u", i);
    size_t keep = strlen(prefix);
    if (keep > (size_t)(15 - sl)) keep = (size_t)(15 - sl);
    snprintf(want, sizeof want, "%.*s-w%u", (int)keep, prefix, i);
    if (strcmp(st.comm[i], want) != 0)
      FAIL("worker %u is named \"%s\", expected \"%s\"\n", i, st.comm[i], want);
    CHECK_EQ(threads_named(want), 1);
  }
  CHECK_EQ(atomic_load(&st.task_before_start), 0);
  CHECK_OK(pool_destroy(pool));
  for (unsigned i = 0; i < n; i++) {
    CHECK_EQ(atomic_load(&st.starts[i]), 1);
    CHECK_EQ(atomic_load(&st.stops[i]), 1);
    CHECK_EQ(st.stop_tid[i], st.start_tid[i]);
  }
  for (unsigned i = n; i < MAXW; i++) CHECK_EQ(atomic_load(&st.starts[i]) + atomic_load(&st.stops[i]), 0);
  if (atomic_load(&st.bad))
    FAIL("a check inside a hook failed (hooks.c line %d)\n", atomic_load(&st.bad));
}

/* The default name: "wspool-p<N>-w<i>" for some N. */
static void case_default_name(void) {
  static hook_state st;
  memset(&st, 0, sizeof st);
  pool_config_t cfg;
  pool_config_default(&cfg);
  cfg.threads = 2;
  cfg.on_worker_start = on_start;
  cfg.hook_ctx = &st;
  pool_t *pool;
  CHECK_OK(pool_create(&pool, &cfg));
  CHECK_EQ(atomic_load(&st.started), 2);
  for (unsigned i = 0; i < 2; i++) {
    unsigned pn, wi;
    char tail;
    CHECK(sscanf(st.comm[i], "wspool-p%u-w%u%c", &pn, &wi, &tail) == 2);
    CHECK_EQ(wi, i);
  }
  CHECK_OK(pool_destroy(pool));
  CHECK_EQ(atomic_load(&st.bad), 0);
}

/* In a child: 0 = checked, 77 = could not set the scene up, 1 = failed.
 * Binding a started worker fails: sched_setaffinity on another thread is
 * refused (placement/nobind.c), the plan's probe on this one passes. */
static int failed_create_child(void) {
  if (refuse_setaffinity(true) != 0) return 77;
  static hook_state st;
  pool_config_t cfg;
  pool_config_default(&cfg);
  cfg.threads = 2;
  cfg.bind = POOL_BIND_CORE;
  cfg.bind_strict = 1;
  cfg.on_worker_start = on_start;
  cfg.on_worker_stop = on_stop;
  cfg.hook_ctx = &st;
  pool_t *pool = NULL;
  int rc = pool_create(&pool, &cfg);
  if (rc == 0) { /* binding worked after all (nothing to bind on?) */
    pool_destroy(pool);
    return 77;
  }
  CHECK_EQ(rc, ENOTSUP);
  CHECK(pool == NULL);
  for (int i = 0; i < MAXW; i++) CHECK_EQ(atomic_load(&st.starts[i]) + atomic_load(&st.stops[i]), 0);
  return 0;
}

static void case_failed_create(void) {
  if (!NO_AFFINITY_AVAILABLE) TEST_SKIP("no seccomp filter for this architecture");
  fflush(NULL);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) _exit(failed_create_child());
  int code = child_exit(pid, "the child");
  CHECK(code == 0 || code == 77);
  if (code == 77) TEST_SKIP("no seccomp or no binding");
}

/* This process's CPUs, at most MAXW. */
static unsigned allowed_cpus(void) {
  cpu_set_t allowed;
  CHECK_OK(sched_getaffinity(0, sizeof allowed, &allowed));
  unsigned ncpu = (unsigned)CPU_COUNT(&allowed);
  return ncpu > MAXW ? MAXW : ncpu;
}

static void case_unbound(void) { run_pool(3, POOL_BIND_NONE, "hk", "hk"); }
static void case_bound(void) { run_pool(allowed_cpus(), POOL_BIND_CORE, "bound", "bound"); }

/* 12 workers: "-w11" leaves 11 bytes of the name. */
static void case_long_name(void) {
  run_pool(12, POOL_BIND_NONE, "averyverylongpoolname", "averyverylongpoolname");
}

TEST_MAIN(120, TEST_CASE(unbound), TEST_CASE(bound), TEST_CASE(long_name), TEST_CASE(default_name),
          TEST_CASE(failed_create))
