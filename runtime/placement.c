/* Placement: which PU each worker is bound to, the victim order, and where
 * worker memory lives.
 *
 * This is the portable version (no hwloc): the process's allowed CPUs in
 * ascending order, worker i on the i-th (wrapping), bound with
 * sched_setaffinity; one victim level; memory from the C heap. */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct ws_placement {
  int dummy;
};

static int allowed_list(int **out) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 0;
  int n = CPU_COUNT(&set), k = 0;
  int *cpus = malloc((size_t)(n > 0 ? n : 1) * sizeof(int));
  if (!cpus) return -1;
  for (int c = 0; c < CPU_SETSIZE && k < n; c++)
    if (CPU_ISSET(c, &set)) cpus[k++] = c;
  *out = cpus;
  return k;
}

int ws_placement_plan(struct pool *p) {
  p->placement = NULL;
  return 0;
}

int ws_placement_worker(struct pool *p, ws_worker *w) {
  unsigned n = p->nthreads;
  w->cpu = -1;
  w->numa = -1;
  if (p->cfg.bind != POOL_BIND_NONE) {
    int *cpus = NULL;
    int k = allowed_list(&cpus);
    if (k < 0) return ENOMEM;
    if (k > 0) w->cpu = cpus[w->id % (unsigned)k];
    free(cpus);
  }
  w->nlevels = 1;
  w->nvictims = n - 1;
  w->level_end[0] = n - 1;
  if (n < 2) return 0;
  w->victims = malloc((n - 1) * sizeof(unsigned));
  if (!w->victims) return ENOMEM;
  unsigned k = 0;
  for (unsigned i = 0; i < n; i++)
    if (i != w->id) w->victims[k++] = i;
  return 0;
}

int ws_placement_bind(struct pool *p, ws_worker *w) {
  (void)p;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(w->cpu, &one);
  return pthread_setaffinity_np(w->thread, sizeof(one), &one);
}

void ws_placement_free(struct pool *p) { p->placement = NULL; }

void *ws_placement_alloc(struct pool *p, unsigned worker, size_t size) {
  (void)p;
  (void)worker;
  void *mem;
  return posix_memalign(&mem, WS_CACHELINE, size) == 0 ? mem : NULL;
}

void ws_placement_dealloc(struct pool *p, void *mem, size_t size) {
  (void)p;
  (void)size;
  free(mem);
}
