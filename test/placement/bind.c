/* SPDX-License-Identifier: MIT */
/* Binding on the machine the test runs on.
 *
 * For CORE and SPREAD: every worker has exactly one CPU, inside the allowed
 * set, all distinct while threads <= allowed CPUs (each used equally when the
 * count wraps), and pool_worker_cpu() agrees with the worker thread's real
 * affinity, read by a task running on that worker. NONE: -1 and the threads
 * keep the process's affinity. With hwloc: CORE puts the first workers on
 * distinct cores, worker memory is bound to the worker's NUMA node.
 *
 * From a worker bound to one CPU (from_worker): the default pool, a pool of
 * NULL config and a NONE pool of 3 created in a task of that worker have
 * every worker on the process's CPUs (the default pool and threads = 0: one
 * worker per CPU), a CORE pool of threads = 0 one worker on each allowed CPU
 * (include/wspool.h, `threads`; docs/placement.md, "Usable CPUs"). The
 * case is the program's first use of the default pool.
 *
 * In the child of a fork() from a task of a worker bound to one CPU
 * (fork_child): the forking thread's affinity is the process's CPUs again,
 * and a pool of threads = 0 it creates has one worker per CPU.
 *
 * Cases: core, spread, none, strict, from_worker, fork_child; and, only
 * when named, taskset: the program re-executed restricted to one CPU (CPU 1 when
 * allowed, like `taskset -c 1`; else the highest allowed one) runs
 * `restricted`, the first four cases again with every worker on that CPU.
 * `restricted` alone runs them in a process already limited to one CPU
 * (`taskset -c N placement_bind restricted`). */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <wspool.h>

#ifdef WS_HAVE_HWLOC
#include <hwloc.h>
#endif

#include "check.h"
#include "probe.h"
#include "testutil.h"

static cpu_set_t allowed;
static int nallowed;

#ifdef WS_HAVE_HWLOC
static hwloc_topology_t topo;
static bool topo_here;

/* Core object of PU `cpu`, or the PU itself without cores. */
static hwloc_obj_t core_of(int cpu) {
  hwloc_obj_t pu = hwloc_get_pu_obj_by_os_index(topo, (unsigned)cpu);
  CHECK(pu);
  hwloc_obj_t c = hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_CORE, pu);
  return c ? c : pu;
}
#endif

/* The CPU every worker must be on, or -1. */
static int only_cpu = -1;

/* What the pool planned: pool_worker_cpu() and the worker's own record
 * agree, each CPU allowed, used evenly. */
static void check_planned(pool_t *pool, pool_bind_t bind, unsigned n) {
  unsigned *uses = calloc(CPU_SETSIZE, sizeof(unsigned));
  CHECK(uses);
  for (unsigned i = 0; i < n; i++) {
    int cpu = pool_worker_cpu(pool, i);
    const ws_worker *w = worker_of(pool, i);
    CHECK_EQ(w->cpu, cpu);
    if (bind == POOL_BIND_NONE) {
      CHECK_EQ(cpu, -1);
      CHECK_EQ(w->numa, -1);
      continue;
    }
    CHECK(cpu >= 0 && cpu < CPU_SETSIZE);
    CHECK(CPU_ISSET(cpu, &allowed));
    if (only_cpu >= 0) CHECK_EQ(cpu, only_cpu);
    uses[cpu]++;
#ifdef WS_HAVE_HWLOC
    if (topo_here) CHECK(w->numa >= 0); /* bound on this machine: node known */
#else
    CHECK_EQ(w->numa, -1);
#endif
  }
  if (bind != POOL_BIND_NONE) {
    /* Each allowed CPU used floor or ceil(n / allowed) times: distinct when
     * n <= allowed, then wrapping evenly. */
    unsigned lo = n / (unsigned)nallowed, hi = lo + (n % (unsigned)nallowed != 0);
    for (int c = 0; c < CPU_SETSIZE; c++)
      if (CPU_ISSET(c, &allowed)) CHECK(uses[c] == lo || uses[c] == hi);
  }
  free(uses);
}

/* Each worker thread's real affinity, read by a task on it. */
static void check_affinity(pool_t *pool, pool_bind_t bind, unsigned n) {
  probe *pr = probe_run(pool);
  for (unsigned i = 0; i < n; i++) {
    int cpu = pool_worker_cpu(pool, i);
    if (bind == POOL_BIND_NONE)
      CHECK(CPU_EQUAL(&pr->mask[i], &allowed));
    else
      CHECK(mask_is_only(&pr->mask[i], cpu));
  }
  probe_free(pr);
}

#ifdef WS_HAVE_HWLOC
/* CORE is compact: the first min(n, cores) workers on distinct cores. */
static void check_distinct_cores(pool_t *pool, unsigned n) {
  unsigned ncores = 0;
  hwloc_bitmap_t seen = hwloc_bitmap_alloc();
  CHECK(seen);
  for (int c = 0; c < CPU_SETSIZE; c++) {
    if (!CPU_ISSET(c, &allowed)) continue;
    hwloc_obj_t core = core_of(c);
    if (!hwloc_bitmap_isset(seen, core->logical_index)) ncores++;
    hwloc_bitmap_set(seen, core->logical_index);
  }
  hwloc_bitmap_zero(seen);
  for (unsigned i = 0; i < n && i < ncores; i++) {
    hwloc_obj_t core = core_of(pool_worker_cpu(pool, i));
    CHECK(!hwloc_bitmap_isset(seen, core->logical_index));
    hwloc_bitmap_set(seen, core->logical_index);
  }
  hwloc_bitmap_free(seen);
}

/* Each worker struct is bound to (preferred on) its worker's node. */
static void check_worker_memory(pool_t *pool, unsigned n) {
  hwloc_bitmap_t nodes = hwloc_bitmap_alloc();
  CHECK(nodes);
  for (unsigned i = 0; i < n; i++) {
    const ws_worker *w = worker_of(pool, i);
    hwloc_obj_t node = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, (unsigned)w->numa);
    CHECK(node);
    hwloc_membind_policy_t policy;
    CHECK_OK(hwloc_get_area_membind(topo, w->mem, w->mem_size, nodes, &policy,
                                    HWLOC_MEMBIND_BYNODESET));
    CHECK_EQ(policy, HWLOC_MEMBIND_BIND);
    CHECK(hwloc_bitmap_isequal(nodes, node->nodeset));
  }
  hwloc_bitmap_free(nodes);
}
#endif

static void check_pool(pool_bind_t bind, unsigned threads) {
  pool_config_t cfg;
  pool_config_default(&cfg);
  cfg.bind = bind;
  cfg.threads = threads;
  cfg.stack_size = 256u << 10;
  pool_t *pool;
  CHECK_OK(pool_create(&pool, &cfg));
  unsigned n = pool_threads(pool);
  CHECK_EQ(n, threads ? threads : (unsigned)nallowed);
  CHECK_EQ(pool_worker_cpu(pool, n), -1);
  check_planned(pool, bind, n);
  check_affinity(pool, bind, n);
  check_victims_shape(pool);
#ifdef WS_HAVE_HWLOC
  if (topo_here && bind == POOL_BIND_CORE) check_distinct_cores(pool, n);
  if (topo_here && bind != POOL_BIND_NONE &&
      hwloc_topology_get_support(topo)->membind->get_area_membind)
    check_worker_memory(pool, n);
#endif
  CHECK_OK(pool_destroy(pool));
}

/* bind_strict where binding works: the same as without. */
static void check_strict(void) {
  pool_config_t cfg;
  pool_config_default(&cfg);
  cfg.bind = POOL_BIND_CORE;
  cfg.bind_strict = 1;
  cfg.threads = 2;
  pool_t *pool;
  CHECK_OK(pool_create(&pool, &cfg));
  for (unsigned i = 0; i < 2; i++) CHECK(pool_worker_cpu(pool, i) >= 0);
  CHECK_OK(pool_destroy(pool));
}

static void binds(pool_bind_t bind) {
  check_pool(bind, 0);
  check_pool(bind, 1);
  check_pool(bind, (unsigned)nallowed);
  check_pool(bind, 2 * (unsigned)nallowed + 1);
  if (nallowed < 3) check_pool(bind, 3);
}

static void case_core(void) { binds(POOL_BIND_CORE); }
static void case_spread(void) { binds(POOL_BIND_SPREAD); }

static void case_none(void) {
  check_pool(POOL_BIND_NONE, 0);
  check_pool(POOL_BIND_NONE, 3);
}

static void case_strict(void) { check_strict(); }

/* What a task on the bound worker made (case_from_worker). */
static struct {
  cpu_set_t worker_mask;
  pool_t *dflt, *none_auto, *none3, *core_auto;
} nst;

static void nested_create(void *arg) {
  (void)arg;
  CHECK_OK(sched_getaffinity(0, sizeof(nst.worker_mask), &nst.worker_mask));
  nst.dflt = pool_default();
  CHECK(nst.dflt);
  CHECK_OK(pool_create(&nst.none_auto, NULL));
  pool_config_t cfg;
  pool_config_default(&cfg);
  cfg.threads = 3;
  cfg.stack_size = 256u << 10;
  CHECK_OK(pool_create(&nst.none3, &cfg));
  cfg.threads = 0;
  cfg.bind = POOL_BIND_CORE;
  CHECK_OK(pool_create(&nst.core_auto, &cfg));
}

/* A pool of one worker bound to one CPU (CORE), or NULL when workers
 * cannot be bound here. */
static pool_t *one_bound_worker(void) {
  pool_config_t cfg;
  pool_config_default(&cfg);
  cfg.bind = POOL_BIND_CORE;
  cfg.threads = 1;
  cfg.stack_size = 256u << 10;
  pool_t *a;
  CHECK_OK(pool_create(&a, &cfg));
  if (pool_worker_cpu(a, 0) >= 0) return a;
  CHECK_OK(pool_destroy(a));
  return NULL;
}

static void case_from_worker(void) {
  if (nallowed < 2) TEST_SKIP("one CPU: a bound worker's is the process's");
  pool_t *a = one_bound_worker();
  if (!a) TEST_SKIP("workers cannot be bound here");
  int cpu = pool_worker_cpu(a, 0);
  CHECK_OK(pool_submit(a, nested_create, NULL));
  CHECK_OK(pool_wait_idle(a));
  CHECK(mask_is_only(&nst.worker_mask, cpu));
  CHECK_EQ(pool_threads(nst.dflt), nallowed);
  check_affinity(nst.dflt, POOL_BIND_NONE, (unsigned)nallowed);
  CHECK_EQ(pool_threads(nst.none_auto), nallowed);
  check_planned(nst.none_auto, POOL_BIND_NONE, (unsigned)nallowed);
  check_affinity(nst.none_auto, POOL_BIND_NONE, (unsigned)nallowed);
  CHECK_EQ(pool_threads(nst.none3), 3);
  check_planned(nst.none3, POOL_BIND_NONE, 3);
  check_affinity(nst.none3, POOL_BIND_NONE, 3);
  CHECK_EQ(pool_threads(nst.core_auto), nallowed);
  check_planned(nst.core_auto, POOL_BIND_CORE, (unsigned)nallowed); /* each CPU once */
  check_affinity(nst.core_auto, POOL_BIND_CORE, (unsigned)nallowed);
  CHECK_OK(pool_destroy(nst.none_auto));
  CHECK_OK(pool_destroy(nst.none3));
  CHECK_OK(pool_destroy(nst.core_auto));
  CHECK_OK(pool_destroy(a));
}

/* What the child of a fork from a bound worker's task saw: its affinity,
 * and the size of a pool of threads = 0 it created (case_fork_child). */
static int forked_worker_task(void) {
  cpu_set_t mine;
  if (sched_getaffinity(0, sizeof(mine), &mine) != 0) return 2;
  if (!CPU_EQUAL(&mine, &allowed)) return 3;
  pool_t *p;
  if (pool_create(&p, NULL) != 0) return 4;
  int n = (int)pool_threads(p);
  if (pool_destroy(p) != 0) return 5;
  return n == nallowed ? 0 : 6;
}

static int fc_status = -1;

static void fork_task(void *arg) {
  (void)arg;
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) _exit(forked_worker_task());
  int st;
  fc_status = pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

static void case_fork_child(void) {
  if (nallowed < 2) TEST_SKIP("one CPU: a bound worker's is the process's");
  if (getenv("WSPOOL_TEST_EMULATED")) TEST_SKIP("fork() of a threaded process under qemu-user");
  if (TEST_UNDER_ASAN || TEST_UNDER_TSAN)
    TEST_SKIP("a threaded fork under ThreadSanitizer or AddressSanitizer (see test/fault/fork.c)");
  pool_t *a = one_bound_worker();
  if (!a) TEST_SKIP("workers cannot be bound here");
  CHECK_OK(pool_submit(a, fork_task, NULL));
  CHECK_OK(pool_wait_idle(a));
  CHECK_EQ(fc_status, 0);
  CHECK_OK(pool_destroy(a));
}

static void case_restricted(void) {
  /* The CPU the case taskset chose, else the only one allowed. */
  const char *cpu = getenv("WSPOOL_TEST_ONLY_CPU");
  if (cpu) {
    only_cpu = atoi(cpu);
  } else {
    CHECK_EQ(nallowed, 1);
    for (int c = 0; c < CPU_SETSIZE; c++)
      if (CPU_ISSET(c, &allowed)) only_cpu = c;
  }
  CHECK(mask_is_only(&allowed, only_cpu));
  case_core();
  case_spread();
  case_none();
  case_strict();
  printf("placement bind: every worker on CPU %d\n", only_cpu);
  only_cpu = -1;
}

/* Like `taskset -c 1 placement_bind restricted`: restrict, then exec, so
 * the whole new process image starts with the one-CPU affinity. */
static void case_taskset(void) {
  /* Under qemu-user an exec of the target binary needs binfmt_misc, which a
   * cross build's test run cannot count on. */
  if (getenv("WSPOOL_TEST_EMULATED")) TEST_SKIP("re-exec under an emulator");
  int cpu = -1;
  for (int c = 0; c < CPU_SETSIZE; c++)
    if (CPU_ISSET(c, &allowed)) cpu = c;
  if (CPU_ISSET(1, &allowed)) cpu = 1;
  char arg[16];
  snprintf(arg, sizeof arg, "%d", cpu);
  CHECK_OK(setenv("WSPOOL_TEST_ONLY_CPU", arg, 1));
  fflush(NULL);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    if (sched_setaffinity(0, sizeof(one), &one) != 0) _exit(3);
    execl("/proc/self/exe", test_argv0(), "restricted", (char *)NULL);
    perror("execl /proc/self/exe");
    _exit(2);
  }
  CHECK_OK(unsetenv("WSPOOL_TEST_ONLY_CPU"));
  child_ok(pid, "the child");
}

/* This process's CPUs, and with hwloc its topology; no placement from the
 * environment. */
static void setup(void) {
  unsetenv("HWLOC_SYNTHETIC");
  unsetenv("HWLOC_XMLFILE");
  unsetenv("WSPOOL_BIND");
  unsetenv("WSPOOL_THREADS");
  CHECK_OK(sched_getaffinity(0, sizeof(allowed), &allowed));
  nallowed = CPU_COUNT(&allowed);
  CHECK(nallowed > 0);
#ifdef WS_HAVE_HWLOC
  CHECK_OK(hwloc_topology_init(&topo));
  CHECK_OK(hwloc_topology_load(topo));
  topo_here = hwloc_topology_is_thissystem(topo);
#endif
}

TEST_MAIN_WITH(NULL, setup, 120, TEST_CASE(core), TEST_CASE(spread), TEST_CASE(none),
               TEST_CASE(strict), TEST_CASE(from_worker), TEST_CASE(fork_child),
               TEST_CASE_NAMED(taskset),
               TEST_CASE_NAMED(restricted))
