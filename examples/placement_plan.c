/* SPDX-License-Identifier: MIT */
/* placement_plan: print the machine and where each bind policy puts the
 * workers.
 *
 *   placement_plan [threads]
 *
 * The machine comes from hwloc when wspool's build found it (packages, NUMA
 * nodes, cores, PUs, and which PUs this process may use); otherwise from the
 * process's CPU affinity. Then a pool is created with each policy and
 * pool_worker_cpu() printed for every worker. With hwloc, HWLOC_SYNTHETIC or
 * HWLOC_XMLFILE previews another machine (nothing is bound then):
 *
 *   HWLOC_SYNTHETIC="pack:2 numa:2 core:8 pu:2" ./placement_plan 8
 *
 * `threads` defaults to the machine's usable PU count (all PUs of a previewed
 * machine). WSPOOL_VERBOSE=1 adds the runtime's own report (cores, nodes,
 * victim levels). Exits 0 when every pool was created and every bound worker
 * reported a PU of the machine. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wspool.h>

#ifdef PLACEMENT_PLAN_HWLOC
#include <hwloc.h>
#endif

/* PUs of the machine, as a bitmap over OS indexes (up to 64 Ki). */
enum { MAXPU = 1 << 16 };
static unsigned char usable[MAXPU];

static unsigned describe_machine(void) {
  unsigned n = 0;
#ifdef PLACEMENT_PLAN_HWLOC
  hwloc_topology_t t;
  if (hwloc_topology_init(&t) == 0 && hwloc_topology_load(t) == 0) {
    int here = hwloc_topology_is_thissystem(t);
    const char *backend = hwloc_obj_get_info_by_name(hwloc_get_root_obj(t), "Backend");
    printf("machine (hwloc%s%s%s):\n", backend ? ", " : "", backend ? backend : "",
           here ? "" : ", not this system: a preview, nothing is bound");
    printf("  %d package(s), %d NUMA node(s), %d core(s), %d PU(s)\n",
           hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PACKAGE),
           hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE),
           hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE), hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PU));
    hwloc_bitmap_t set = hwloc_bitmap_dup(hwloc_topology_get_allowed_cpuset(t));
    hwloc_bitmap_t mine = hwloc_bitmap_alloc();
    if (set && mine && here && hwloc_get_cpubind(t, mine, HWLOC_CPUBIND_THREAD) == 0)
      hwloc_bitmap_and(set, set, mine);
    for (hwloc_obj_t nd = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_NUMANODE, NULL); nd;
         nd = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_NUMANODE, nd)) {
      char *s = NULL;
      hwloc_bitmap_list_asprintf(&s, nd->cpuset);
      printf("  NUMA node L#%u (P#%u): PUs %s\n", nd->logical_index, nd->os_index, s ? s : "?");
      free(s);
    }
    if (set) {
      char *s = NULL;
      hwloc_bitmap_list_asprintf(&s, set);
      printf("  usable PUs (allowed%s): %s\n", here ? " and in this thread's affinity" : "",
             s ? s : "?");
      free(s);
      int i;
      hwloc_bitmap_foreach_begin(i, set) {
        if (i < MAXPU && hwloc_get_pu_obj_by_os_index(t, (unsigned)i)) usable[i] = 1, n++;
      }
      hwloc_bitmap_foreach_end();
    }
    hwloc_bitmap_free(set);
    hwloc_bitmap_free(mine);
    hwloc_topology_destroy(t);
    return n;
  }
#endif
  cpu_set_t set;
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  printf("machine (no hwloc: CPU numbers only):\n  %ld CPU(s) online\n  usable CPUs:", online);
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    for (int c = 0; c < CPU_SETSIZE && c < MAXPU; c++)
      if (CPU_ISSET(c, &set)) {
        printf(" %d", c);
        usable[c] = 1;
        n++;
      }
  printf("\n");
  return n;
}

int main(int argc, char **argv) {
  unsigned npu = describe_machine();
  unsigned threads = npu ? npu : 1;
  if (argc > 1) {
    char *end;
    unsigned long v = strtoul(argv[1], &end, 10);
    if (*end || v == 0 || v > POOL_MAX_THREADS) {
      fprintf(stderr, "usage: %s [threads (1..%u)]\n", argv[0], POOL_MAX_THREADS);
      return 2;
    }
    threads = (unsigned)v;
  }
  static const struct {
    pool_bind_t bind;
    const char *name;
  } policies[] = {{POOL_BIND_NONE, "none"}, {POOL_BIND_CORE, "core"}, {POOL_BIND_SPREAD, "spread"}};
  int ok = 1;
  for (unsigned k = 0; k < 3; k++) {
    pool_config_t cfg;
    pool_config_default(&cfg);
    cfg.bind = policies[k].bind;
    cfg.threads = threads;
    cfg.stack_size = 64u << 10; /* the workers run nothing here */
    pool_t *pool;
    int rc = pool_create(&pool, &cfg);
    if (rc) {
      printf("%-6s: pool_create failed: %s\n", policies[k].name, pool_strerror(rc));
      ok = 0;
      continue;
    }
    printf("%-6s:", policies[k].name);
    unsigned bound = 0;
    for (unsigned i = 0; i < threads; i++) {
      int cpu = pool_worker_cpu(pool, i);
      if (cpu >= 0) {
        bound++;
        if (cpu >= MAXPU || !usable[cpu]) ok = 0;
      }
      if (i < 64)
        printf(" %d", cpu);
      else if (i == 64)
        printf(" ... (%u workers)", threads);
    }
    printf("\n");
    if (policies[k].bind == POOL_BIND_NONE && bound) ok = 0;
    pool_destroy(pool);
  }
  printf("(worker i's PU OS index in order; -1 = unbound)\n");
  return ok ? 0 : 1;
}
