/* SPDX-License-Identifier: MIT */
/* Placement on machines this test does not run on, through hwloc's
 * HWLOC_SYNTHETIC (and HWLOC_XMLFILE) environment variables: the exact PU of
 * every worker per policy, NUMA nodes, victim levels, remote-steal counting,
 * and that a preview binds nothing. Skipped (77) without hwloc.
 *
 * Every topology here is balanced and written "[pack:P] [numa:N] [l3:L]
 * core:C pu:T", whose PU OS indexes are their logical indexes. The expected
 * plans are computed from that description, independently of the runtime:
 *  CORE   worker i -> core (i mod cores), SMT thread (i div cores)
 *  SPREAD worker i, in mixed radix with the package digit changing fastest,
 *         then the NUMA node, L3, core and SMT digits.
 * Cases: plans, explicit, not_bound, remote_steals, verbose, xmlfile. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef WS_HAVE_HWLOC
#include <hwloc.h>
#define NO_HWLOC NULL
#else
#define NO_HWLOC "built without hwloc"
#endif

#include "check.h"
#include "probe.h"
#include "testutil.h"

typedef struct machine {
  const char *desc;
  unsigned P, N, L, C, T; /* packages, NUMA per package, L3 per node, cores per L3, PUs per core */
  bool pack, numa, l3;    /* which levels the description has */
} machine;

static unsigned npus(const machine *m) { return m->P * m->N * m->L * m->C * m->T; }
static int m_pkg(const machine *m, int pu) {
  return m->pack ? pu / (int)(m->N * m->L * m->C * m->T) : -1;
}
static int m_numa(const machine *m, int pu) { return m->numa ? pu / (int)(m->L * m->C * m->T) : 0; }
static int m_l3(const machine *m, int pu) { return m->l3 ? pu / (int)(m->C * m->T) : -1; }
static int m_core(const machine *m, int pu) { return pu / (int)m->T; }

static int expect_core(const machine *m, unsigned i) {
  unsigned cores = npus(m) / m->T;
  i %= npus(m);
  return (int)((i % cores) * m->T + i / cores);
}

static int expect_spread(const machine *m, unsigned i) {
  i %= npus(m);
  unsigned p = i % m->P;
  i /= m->P;
  unsigned n = i % m->N;
  i /= m->N;
  unsigned l = i % m->L;
  i /= m->L;
  unsigned c = i % m->C;
  unsigned t = i / m->C;
  return (int)((((p * m->N + n) * m->L + l) * m->C + c) * m->T + t);
}

/* Distance of PU b from PU a, as docs/placement.md defines the levels. */
static unsigned m_level(const machine *m, int a, int b) {
  bool dom = m_numa(m, a) == m_numa(m, b) && m_pkg(m, a) == m_pkg(m, b);
  if (dom && (a == b || m_core(m, a) == m_core(m, b) || (m->l3 && m_l3(m, a) == m_l3(m, b))))
    return 0;
  if (dom) return 1;
  if (m_numa(m, a) == m_numa(m, b) || (m->pack && m_pkg(m, a) == m_pkg(m, b))) return 2;
  return 3;
}

static pool_t *make(const machine *m, pool_bind_t bind, unsigned threads) {
  CHECK_OK(setenv("HWLOC_SYNTHETIC", m->desc, 1));
  pool_config_t cfg;
  pool_config_default(&cfg);
  cfg.bind = bind;
  cfg.threads = threads;
  cfg.stack_size = 128u << 10;
  cfg.bind_strict = 1; /* a preview is not a failure to bind */
  pool_t *pool;
  CHECK_OK(pool_create(&pool, &cfg));
  CHECK_EQ(pool_threads(pool), threads);
  return pool;
}

/* The victims of each worker, level by level, must be exactly the model's
 * non-empty levels in order. */
static void check_levels(const machine *m, pool_t *pool) {
  unsigned n = pool_threads(pool);
  check_victims_shape(pool);
  for (unsigned i = 0; i < n; i++) {
    const ws_worker *w = worker_of(pool, i);
    unsigned cnt[4] = {0, 0, 0, 0}, map[4], nl = 0;
    /* Itself too: the list of its place, shared (a lone worker has none). */
    for (unsigned j = 0; j < n && n > 1; j++) cnt[m_level(m, w->cpu, worker_of(pool, j)->cpu)]++;
    for (unsigned l = 0; l < 4; l++) map[l] = cnt[l] ? nl++ : 99;
    CHECK_EQ(w->nlevels, nl);
    /* level of each victim from its position (victim_level() is linear) */
    for (unsigned k = 0, l = 0; k < victim_count(w); k++) {
      while (k >= w->level_end[l]) l++;
      CHECK_EQ(l, map[m_level(m, w->cpu, worker_of(pool, w->victims[k])->cpu)]);
    }
  }
}

/* The whole plan of one pool against the model. */
static void check_plan(const machine *m, pool_bind_t bind, unsigned threads) {
  pool_t *pool = make(m, bind, threads);
  for (unsigned i = 0; i < threads; i++) {
    int want = bind == POOL_BIND_CORE ? expect_core(m, i) : expect_spread(m, i);
    int got = pool_worker_cpu(pool, i);
    if (got != want)
      fprintf(stderr, "%s, %s, %u workers: worker %u on PU %d, expected %d\n", m->desc,
              bind == POOL_BIND_CORE ? "core" : "spread", threads, i, got, want);
    CHECK_EQ(got, want);
    CHECK_EQ(worker_of(pool, i)->numa, m_numa(m, want));
  }
  check_levels(m, pool);
  CHECK_OK(pool_destroy(pool));
}

static const machine smt2 = {"pack:2 core:4 pu:2", 2, 1, 1, 4, 2, true, false, false};
static const machine numa4 = {"pack:2 numa:2 core:4 pu:2", 2, 2, 1, 4, 2, true, true, false};
static const machine flat4 = {"numa:4 core:4 pu:1", 1, 4, 1, 4, 1, false, true, false};
static const machine big = {"pack:4 numa:2 core:16 pu:2", 4, 2, 1, 16, 2, true, true, false};
static const machine cached = {"pack:2 numa:2 l3:2 core:2 pu:2", 2, 2, 2, 2, 2, true, true, true};

/* The examples, spelled out. */
static void case_explicit(void) {
  /* CORE, 8 workers on 2 packages x 4 cores x 2 threads: 8 distinct cores,
   * no two workers on SMT siblings; 16 workers: every PU once. */
  pool_t *pool = make(&smt2, POOL_BIND_CORE, 8);
  for (unsigned i = 0; i < 8; i++) CHECK_EQ(pool_worker_cpu(pool, i), 2 * (int)i);
  CHECK_OK(pool_destroy(pool));
  pool = make(&smt2, POOL_BIND_CORE, 16);
  unsigned seen = 0;
  for (unsigned i = 0; i < 16; i++) seen |= 1u << pool_worker_cpu(pool, i);
  CHECK_EQ(seen, 0xffff);
  CHECK_OK(pool_destroy(pool));
  /* CORE, 4 workers: all in package 0 (compact). */
  pool = make(&smt2, POOL_BIND_CORE, 4);
  for (unsigned i = 0; i < 4; i++) CHECK(pool_worker_cpu(pool, i) < 8);
  CHECK_OK(pool_destroy(pool));

  /* SPREAD on 4 NUMA nodes (2 per package): 4 workers, 4 nodes, and
   * consecutive workers alternate packages. */
  pool = make(&numa4, POOL_BIND_SPREAD, 4);
  unsigned nodes = 0;
  for (unsigned i = 0; i < 4; i++) {
    const ws_worker *w = worker_of(pool, i);
    nodes |= 1u << w->numa;
    CHECK_EQ(m_pkg(&numa4, w->cpu), (int)(i % 2));
  }
  CHECK_EQ(nodes, 0xf);
  CHECK_OK(pool_destroy(pool));
  /* CORE on the same machine fills node 0 before node 1. */
  pool = make(&numa4, POOL_BIND_CORE, 8);
  for (unsigned i = 0; i < 8; i++) CHECK_EQ(worker_of(pool, i)->numa, (int)(i / 4));
  CHECK_OK(pool_destroy(pool));

  /* 256 PUs, SPREAD 64: 8 workers per NUMA node, on 8 distinct cores. */
  pool = make(&big, POOL_BIND_SPREAD, 64);
  unsigned per_node[8] = {0};
  unsigned char core_used[128] = {0};
  for (unsigned i = 0; i < 64; i++) {
    int cpu = pool_worker_cpu(pool, i);
    per_node[m_numa(&big, cpu)]++;
    CHECK(!core_used[m_core(&big, cpu)]);
    core_used[m_core(&big, cpu)] = 1;
  }
  for (unsigned k = 0; k < 8; k++) CHECK_EQ(per_node[k], 8);
  CHECK_OK(pool_destroy(pool));

  /* The first victim level shares a cache with the worker (L3 here). */
  pool = make(&cached, POOL_BIND_CORE, 16);
  for (unsigned i = 0; i < 16; i++) {
    const ws_worker *w = worker_of(pool, i);
    for (unsigned k = 0; k < w->level_end[0]; k++)
      CHECK_EQ(m_l3(&cached, worker_of(pool, w->victims[k])->cpu), m_l3(&cached, w->cpu));
  }
  CHECK_OK(pool_destroy(pool));
}

/* A preview binds nothing: every worker keeps the creator's affinity. */
static void case_not_bound(void) {
  cpu_set_t mine;
  CHECK_OK(sched_getaffinity(0, sizeof(mine), &mine));
  pool_t *pool = make(&numa4, POOL_BIND_SPREAD, 6);
  probe *pr = probe_run(pool);
  for (unsigned i = 0; i < 6; i++) CHECK(CPU_EQUAL(&pr->mask[i], &mine));
  probe_free(pr);
  CHECK_OK(pool_destroy(pool));
}

/* Fork/join work with many steals: fib by pool_join. */
static void join_fib(void *arg) {
  fib_arg *f = arg;
  if (f->n < 2) {
    f->r = f->n;
    return;
  }
  fib_arg a = {f->n - 1, 0}, b = {f->n - 2, 0};
  CHECK_OK(pool_join(NULL, join_fib, &a, join_fib, &b));
  f->r = a.r + b.r;
}

static void steal_totals(pool_t *pool, uint64_t *steals, uint64_t *remote) {
  *steals = *remote = 0;
  for (unsigned i = 0; i < pool_threads(pool); i++) {
    pool_worker_stats_t s;
    CHECK_OK(pool_worker_stats(pool, i, &s));
    CHECK(s.steals_remote <= s.steals);
    *steals += s.steals;
    *remote += s.steals_remote;
  }
}

static void run_fib(pool_t *pool) {
  fib_arg f = {22, 0};
  for (int rep = 0; rep < 4; rep++) {
    CHECK_OK(pool_join(pool, join_fib, &f, join_fib, &(fib_arg){1, 0}));
    CHECK_EQ(f.r, 17711);
  }
}

/* Steals between workers planned on different nodes count as remote: one
 * worker per node -> every steal remote; all on one node -> none. */
static void case_remote_steals(void) {
  uint64_t steals, remote;
  pool_t *pool = make(&numa4, POOL_BIND_SPREAD, 4);
  run_fib(pool);
  steal_totals(pool, &steals, &remote);
  CHECK_EQ(remote, steals);
  CHECK_OK(pool_destroy(pool));
  pool = make(&numa4, POOL_BIND_CORE, 4);
  run_fib(pool);
  steal_totals(pool, &steals, &remote);
  CHECK_EQ(remote, 0);
  CHECK_OK(pool_destroy(pool));
}

/* WSPOOL_VERBOSE=1 prints the plan on stderr at creation. */
static pool_t *verbose_pool;

static void create_verbose(void *arg) {
  (void)arg;
  CHECK_OK(setenv("WSPOOL_VERBOSE", "1", 1));
  verbose_pool = make(&smt2, POOL_BIND_CORE, 4);
}

static void case_verbose(void) {
  char buf[4096];
  capture_stderr(buf, sizeof buf, create_verbose, NULL);
  CHECK_OK(unsetenv("WSPOOL_VERBOSE"));
  CHECK_OK(pool_destroy(verbose_pool));
  CHECK(buf[0] != '\0');
  if (!strstr(buf, "policy core, 4 workers") || !strstr(buf, "worker 3 -> PU P#6, core L#3") ||
      !strstr(buf, "HWLOC_SYNTHETIC")) {
    fprintf(stderr, "unexpected WSPOOL_VERBOSE output:\n%s", buf);
    CHECK(0);
  }
}

/* HWLOC_XMLFILE works the same way as HWLOC_SYNTHETIC. */
static void case_xmlfile(void) {
#ifdef WS_HAVE_HWLOC
  hwloc_topology_t t;
  CHECK_OK(hwloc_topology_init(&t));
  CHECK_OK(hwloc_topology_set_synthetic(t, numa4.desc));
  CHECK_OK(hwloc_topology_load(t));
  char path[] = "/tmp/wspool-topo-XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  close(fd);
  CHECK_OK(hwloc_topology_export_xml(t, path, 0));
  hwloc_topology_destroy(t);
  CHECK_OK(unsetenv("HWLOC_SYNTHETIC"));
  CHECK_OK(setenv("HWLOC_XMLFILE", path, 1));
  pool_config_t cfg;
  pool_config_default(&cfg);
  cfg.bind = POOL_BIND_SPREAD;
  cfg.threads = 8;
  cfg.stack_size = 128u << 10;
  pool_t *pool;
  CHECK_OK(pool_create(&pool, &cfg));
  for (unsigned i = 0; i < 8; i++) CHECK_EQ(pool_worker_cpu(pool, i), expect_spread(&numa4, i));
  CHECK_OK(pool_destroy(pool));
  CHECK_OK(unsetenv("HWLOC_XMLFILE"));
  unlink(path);
#endif
}

/* Every machine, both policies, worker counts from 1 to past every PU. */
static void case_plans(void) {
  const machine *ms[] = {&smt2, &numa4, &flat4, &big, &cached};
  for (unsigned k = 0; k < sizeof ms / sizeof *ms; k++) {
    const machine *m = ms[k];
    unsigned all = npus(m);
    unsigned counts[] = {1, 2, 3, 4, all / 4, all / 2 - 1, all, all + 3};
    for (unsigned c = 0; c < sizeof counts / sizeof *counts; c++) {
      if (counts[c] == 0) continue;
      check_plan(m, POOL_BIND_CORE, counts[c]);
      check_plan(m, POOL_BIND_SPREAD, counts[c]);
    }
  }
}

static void setup(void) {
  unsetenv("HWLOC_XMLFILE");
  unsetenv("WSPOOL_VERBOSE");
}

TEST_MAIN_WITH(NO_HWLOC, setup, 240, TEST_CASE(plans), TEST_CASE(explicit), TEST_CASE(not_bound),
               TEST_CASE(remote_steals), TEST_CASE(verbose), TEST_CASE(xmlfile))
