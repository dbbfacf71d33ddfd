/* SPDX-License-Identifier: MIT */
/* Placement: which PU each worker is bound to, the order it steals in, and
 * where its memory lives (docs/placement.md).
 *
 * ws_placement_plan() decides everything once, before any worker exists:
 * one slot per worker (PU, core, outermost cache, NUMA node, package). The
 * rest reads the plan: ws_placement_alloc() puts a worker's struct on its
 * slot's NUMA node, ws_placement_worker() copies the slot into the worker and
 * orders its victims by distance, ws_placement_bind() binds the thread.
 *
 * Two ways to plan:
 *  - hwloc (WS_HAVE_HWLOC): the topology hwloc loads, which honours
 *    HWLOC_SYNTHETIC / HWLOC_XMLFILE / HWLOC_THISSYSTEM like hwloc's tools.
 *    Only PUs that are online, allowed (cgroup cpuset) and in the pool's
 *    origin set (ws_origin_cpus: the creating thread's affinity, taskset's)
 *    are used. When the topology is not this machine (synthetic, XML), the
 *    plan is a preview: workers report their planned PU but threads are
 *    not bound.
 *  - portable (no hwloc, or hwloc failed to load): the origin set's CPUs in
 *    ascending order, worker i on the i-th (wrapping), bound with
 *    pthread_setaffinity_np(); nothing is known about cores, caches or
 *    NUMA nodes, so both policies are the same and every NUMA node is -1.
 *
 * The topology is loaded once per process (per topology source: the
 * HWLOC_SYNTHETIC / HWLOC_XMLFILE / HWLOC_THISSYSTEM values it was loaded
 * under) and shared by every pool, read-only, which hwloc allows
 * concurrently: a later create never enters hwloc's loader, the one place
 * where hwloc 2.9 does not survive an allocation failure. Every hwloc call
 * that can fail here is checked; a failure plans portably or returns
 * ENOMEM.
 *
 * A pool with POOL_BIND_NONE loads no topology at all: pool creation stays
 * cheap for the default pool, workers are unbound (cpu -1, NUMA -1) and
 * steal from everyone with equal preference. Unbound workers run on the
 * origin set: a thread inherits its creator's affinity, so when that is
 * not the origin set (a pool created by a bound worker) it is set. */
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef WS_HAVE_HWLOC
#include <hwloc.h>
#endif

#include "api.h"

/* What the plan says about one worker; -1 = unknown. */
typedef struct slot {
  int cpu;         /* PU OS index */
  int numa;        /* NUMA node logical index */
  int numa_os;     /* its OS index (for WSPOOL_VERBOSE) */
  int package;     /* package logical index */
  int64_t core;    /* identity of the core (or of the PU, without cores) */
  int64_t cache;   /* identity of the outermost cache above the PU */
  int core_l;      /* core logical index (for WSPOOL_VERBOSE) */
} slot;

struct ws_placement {
  unsigned n;       /* workers */
  /* The origin set (ws_origin_cpus), origin_size bytes, from the pool's
   * allocator; NULL when it could not be read. `reaffine`: the creating
   * thread's affinity is not it, so unbound workers get it (ws_placement_bind). */
  cpu_set_t *origin;
  size_t origin_size;
  bool reaffine;
  slot *slots;      /* n entries; NULL: workers are unbound */
  bool bind;        /* bind threads for real (false: a preview, see above) */
  bool hw_mem;      /* worker memory comes from hwloc (freed with hwloc_free) */
  unsigned npus;    /* PUs the plan chose from */
  const char *how;  /* where the plan came from, for WSPOOL_VERBOSE */
  /* Workers that own a victims array, one per place (ws_placement_worker):
   * nreps of n entries, allocated with the first worker. */
  unsigned *reps, nreps;
#ifdef WS_HAVE_HWLOC
  hwloc_topology_t topo; /* the shared topology; NULL unless planned with hwloc */
#endif
};

static void slot_unknown(slot *s) {
  s->cpu = s->numa = s->numa_os = s->package = s->core_l = -1;
  s->core = s->cache = -1;
}

static void warn_unbound(int err) {
  fprintf(stderr, "wspool: cannot bind workers here (%s); running unbound\n", strerror(err));
}

/* --- The portable plan -------------------------------------------------- */

/* The calling thread's affinity in a mask sized for this kernel (a plain
 * cpu_set_t stops at 1024 CPUs and the call then fails with EINVAL).
 * NULL with errno set when it cannot be read. */
static cpu_set_t *get_affinity(size_t *size) {
  for (int ncpu = CPU_SETSIZE; ncpu <= (1 << 20); ncpu *= 2) {
    cpu_set_t *set = CPU_ALLOC((size_t)ncpu);
    if (!set) {
      errno = ENOMEM;
      return NULL;
    }
    *size = CPU_ALLOC_SIZE((size_t)ncpu);
    if (sched_getaffinity(0, *size, set) == 0) return set;
    int err = errno;
    CPU_FREE(set);
    if (err != EINVAL) {
      errno = err;
      return NULL;
    }
  }
  errno = EINVAL;
  return NULL;
}

/* 0 when this thread's affinity can be set (to what it already is, so
 * nothing changes); else why not. Catches sandboxes (seccomp) that refuse
 * sched_setaffinity before any worker exists. */
static int probe_affinity(void) {
  size_t size;
  cpu_set_t *set = get_affinity(&size);
  if (!set) return errno == ENOMEM ? ENOMEM : errno ? errno : ENOSYS;
  int err = sched_setaffinity(0, size, set) == 0 ? 0 : errno ? errno : ENOSYS;
  CPU_FREE(set);
  return err;
}

/* The origin set's CPUs in ascending order, from the pool's allocator
 * (*bytes of it: free with ws_mem_free); <0 on ENOMEM, 0 when the set is
 * unknown. */
static int allowed_list(ws_mem *m, const struct ws_placement *pl, int **out, size_t *bytes) {
  const cpu_set_t *set = pl->origin;
  size_t size = pl->origin_size;
  *out = NULL;
  *bytes = 0;
  if (!set) return 0;
  int n = CPU_COUNT_S(size, set), k = 0;
  *bytes = (size_t)(n > 0 ? n : 1) * sizeof(int);
  int *cpus = ws_mem_alloc(m, *bytes);
  if (!cpus) return -1;
  for (int c = 0; (size_t)c < size * 8 && k < n; c++)
    if (CPU_ISSET_S((size_t)c, size, set)) cpus[k++] = c;
  *out = cpus;
  return k;
}

cpu_set_t *ws_origin_cpus(size_t *size) {
  ws_worker *w = ws_self();
  const struct ws_placement *pl = w ? w->pool->placement : NULL;
  if (!pl || !pl->origin) return get_affinity(size);
  /* A thread of a pool (worker or stand-in): its pool's, which outlives
   * it (destroy frees the plan after the joins). */
  cpu_set_t *set = CPU_ALLOC(pl->origin_size * 8);
  if (!set) {
    errno = ENOMEM;
    return NULL;
  }
  memcpy(set, pl->origin, pl->origin_size);
  *size = pl->origin_size;
  return set;
}

void ws_placement_unbind_forked(const ws_worker *w) {
  const struct ws_placement *pl = w->pool->placement;
  if (w->pool->cfg.bind == POOL_BIND_NONE || !pl || !pl->origin) return;
  /* The bare system call: the child may still hold only async-signal-safe
   * state. Best effort, as any binding. */
  (void)sched_setaffinity(0, pl->origin_size, pl->origin);
}

unsigned ws_cpu_count(const cpu_set_t *set, size_t size) {
  int n = set ? CPU_COUNT_S(size, set) : 0;
  if (n > 0) return (unsigned)n;
  long k = sysconf(_SC_NPROCESSORS_ONLN);
  return k > 0 ? (unsigned)k : 1;
}

/* Binding was asked for and cannot be done here (err from the probe): an
 * error with bind_strict, else a warning and an unbound pool. */
static int binding_impossible(struct pool *p, struct ws_placement *pl, int err) {
  if (err == ENOMEM) return ENOMEM;
  if (p->cfg.bind_strict) return ENOTSUP;
  warn_unbound(err);
  pl->how = "binding impossible";
  return 0;
}

static int portable_plan(struct pool *p, struct ws_placement *pl) {
  int err = probe_affinity();
  if (err) return binding_impossible(p, pl, err);
  int *cpus;
  size_t cpus_bytes;
  int k = allowed_list(&p->mem, pl, &cpus, &cpus_bytes);
  if (k < 0) return ENOMEM;
  if (k == 0) {
    ws_mem_free(&p->mem, cpus, cpus_bytes);
    if (p->cfg.bind_strict) return ENOTSUP;
    warn_unbound(ENOSYS);
    pl->how = "no allowed CPU found";
    return 0;
  }
  pl->slots = ws_mem_alloc(&p->mem, pl->n * sizeof(slot));
  if (!pl->slots) {
    ws_mem_free(&p->mem, cpus, cpus_bytes);
    return ENOMEM;
  }
  for (unsigned i = 0; i < pl->n; i++) {
    slot_unknown(&pl->slots[i]);
    pl->slots[i].cpu = cpus[i % (unsigned)k];
  }
  ws_mem_free(&p->mem, cpus, cpus_bytes);
  pl->npus = (unsigned)k;
  pl->bind = true;
  pl->how = "by CPU number (no topology)";
  return 0;
}

/* --- The hwloc plan ----------------------------------------------------- */

#ifdef WS_HAVE_HWLOC

enum { NKEY = 6 };

/* A PU the plan may use. */
typedef struct cand {
  slot s;
  int pu_l;         /* PU logical index: topology (depth-first) order */
  int smt;          /* rank among the usable PUs of its core */
  int key[NKEY];    /* SPREAD tree: outer, inner domain, L3, L2, core, smt */
} cand;

static int cmp_int(int a, int b) { return (a > b) - (a < b); }

static int cmp_key(const void *x, const void *y) {
  const cand *a = x, *b = y;
  for (int d = 0; d < NKEY; d++)
    if (a->key[d] != b->key[d]) return cmp_int(a->key[d], b->key[d]);
  return cmp_int(a->pu_l, b->pu_l);
}

/* CORE: every core's first PU in topology order, then every core's second
 * PU, ... Topology order is depth-first, so cores sharing a cache, a NUMA
 * node and a package are consecutive: compact. */
static int cmp_compact(const void *x, const void *y) {
  const cand *a = x, *b = y;
  if (a->smt != b->smt) return cmp_int(a->smt, b->smt);
  return cmp_int(a->pu_l, b->pu_l);
}

/* SPREAD: a round-robin at every level of the tree the keys describe. The
 * candidates v[0..n) are sorted by key; the ones sharing key[d] form one
 * subtree, each subtree is ordered the same way one level down, and the
 * subtrees are then dealt one element at a time. */
static int scatter(ws_mem *m, cand *v, unsigned n, int d) {
  if (n <= 1 || d == NKEY) return 0;
  unsigned ng = 1;
  for (unsigned i = 1; i < n; i++) ng += v[i].key[d] != v[i - 1].key[d];
  if (ng == 1) return scatter(m, v, n, d + 1);
  unsigned *start = ws_mem_alloc(m, (ng + 1) * sizeof(unsigned));
  unsigned *pos = ws_mem_alloc(m, ng * sizeof(unsigned));
  cand *out = ws_mem_alloc(m, n * sizeof(cand));
  int rc = 0;
  if (!start || !pos || !out) {
    rc = ENOMEM;
    goto done;
  }
  unsigned g = 0;
  start[0] = 0;
  for (unsigned i = 1; i < n; i++)
    if (v[i].key[d] != v[i - 1].key[d]) start[++g] = i;
  start[ng] = n;
  for (g = 0; g < ng; g++) {
    if ((rc = scatter(m, v + start[g], start[g + 1] - start[g], d + 1)) != 0) goto done;
    pos[g] = start[g];
  }
  for (unsigned k = 0; k < n;)
    for (g = 0; g < ng; g++)
      if (pos[g] < start[g + 1]) out[k++] = v[pos[g]++];
  memcpy(v, out, n * sizeof(cand));
done:
  ws_mem_free(m, start, (ng + 1) * sizeof(unsigned));
  ws_mem_free(m, pos, ng * sizeof(unsigned));
  ws_mem_free(m, out, n * sizeof(cand));
  return rc;
}

/* Fill c from the topology for PU `pu`. */
static void describe_pu(hwloc_topology_t t, hwloc_obj_t pu, cand *c) {
  slot_unknown(&c->s);
  c->s.cpu = (int)pu->os_index;
  c->pu_l = (int)pu->logical_index;
  hwloc_obj_t core = hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_CORE, pu);
  /* Without Core objects every PU is its own core. Core logical indexes
   * stay below the PU count, so the two ranges cannot collide. */
  c->s.core = core ? (int64_t)core->logical_index : (int64_t)1 << 32 | pu->logical_index;
  c->s.core_l = core ? (int)core->logical_index : -1;
  hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_PACKAGE, pu);
  c->s.package = pkg ? (int)pkg->logical_index : -1;
  int l3 = -1, l2 = -1;
  for (hwloc_obj_t o = pu->parent; o; o = o->parent) {
    if (!hwloc_obj_type_is_cache(o->type)) continue;
    c->s.cache = (int64_t)o->gp_index; /* the last one seen is the outermost */
    if (o->type == HWLOC_OBJ_L3CACHE && l3 < 0) l3 = (int)o->logical_index;
    if (o->type == HWLOC_OBJ_L2CACHE && l2 < 0) l2 = (int)o->logical_index;
  }
  /* The first NUMA node local to this PU (CPU-less memory, e.g. CXL or
   * HBM-only nodes, has an empty cpuset and never matches). */
  for (hwloc_obj_t nd = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_NUMANODE, NULL); nd;
       nd = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_NUMANODE, nd))
    if (nd->cpuset && hwloc_bitmap_isset(nd->cpuset, pu->os_index)) {
      c->s.numa = (int)nd->logical_index;
      c->s.numa_os = (int)nd->os_index;
      break;
    }
  c->key[2] = l3;
  c->key[3] = l2;
  c->key[4] = core ? (int)core->logical_index : (int)pu->logical_index;
}

/* The PUs the plan may use: online, allowed, and, on this machine, in the
 * origin set (taskset). A synthetic or XML topology describes another
 * machine: its allowed set is all of it. */
static hwloc_bitmap_t usable_set(hwloc_topology_t t, bool here, const struct ws_placement *pl) {
  hwloc_const_bitmap_t allowed = hwloc_topology_get_allowed_cpuset(t);
  hwloc_const_bitmap_t all = hwloc_topology_get_topology_cpuset(t);
  if (!allowed || !all) return NULL;
  hwloc_bitmap_t set = hwloc_bitmap_dup(allowed);
  if (!set) return NULL;
  if (hwloc_bitmap_and(set, set, all) != 0) {
    hwloc_bitmap_free(set);
    return NULL;
  }
  if (!here) return set;
  hwloc_bitmap_t mine = hwloc_bitmap_alloc();
  if (!mine) {
    hwloc_bitmap_free(set);
    return NULL;
  }
  /* An origin set that is unknown (or lies outside the set) means the
   * whole set; an allocation failure inside hwloc is ENOMEM. */
  int rc = 0;
  for (size_t c = 0; pl->origin && c < pl->origin_size * 8 && rc == 0; c++)
    if (CPU_ISSET_S(c, pl->origin_size, pl->origin)) rc = hwloc_bitmap_set(mine, (unsigned)c);
  if (rc == 0 && hwloc_bitmap_intersects(set, mine)) rc = hwloc_bitmap_and(set, set, mine);
  hwloc_bitmap_free(mine);
  if (rc != 0) {
    hwloc_bitmap_free(set);
    return NULL;
  }
  return set;
}

/* Loaded topologies, by source, never destroyed (pools share them; a
 * handful per process at most). Under topo_lock, which the fork handlers
 * take too. */
typedef struct topo_entry {
  struct topo_entry *next;
  hwloc_topology_t t;
  char key[];
} topo_entry;
static pthread_mutex_t topo_lock = PTHREAD_MUTEX_INITIALIZER;
static topo_entry *topologies;

static hwloc_topology_t load_topology(void) {
  hwloc_topology_t t;
  if (hwloc_topology_init(&t) != 0) return NULL;
  if (hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_NONE) != 0 ||
      hwloc_topology_load(t) != 0) {
    hwloc_topology_destroy(t);
    return NULL;
  }
  return t;
}

/* The topology for the current environment: loaded on first use, then
 * shared. NULL when it cannot be loaded (the caller plans portably). */
static hwloc_topology_t shared_topology(void) {
  const char *env[] = {getenv("HWLOC_SYNTHETIC"), getenv("HWLOC_XMLFILE"),
                       getenv("HWLOC_THISSYSTEM")};
  size_t len = 0;
  for (int i = 0; i < 3; i++) len += (env[i] ? strlen(env[i]) : 0) + 2;
  topo_entry *e = malloc(sizeof(*e) + len + 1);
  if (!e) return NULL;
  char *k = e->key;
  for (int i = 0; i < 3; i++) {
    size_t n = env[i] ? strlen(env[i]) : 0;
    *k++ = env[i] ? '=' : '-'; /* unset and empty differ */
    memcpy(k, env[i] ? env[i] : "", n);
    k += n;
    *k++ = '\n';
  }
  *k = 0;
  hwloc_topology_t t = NULL;
  pthread_mutex_lock(&topo_lock);
  for (topo_entry *x = topologies; x; x = x->next)
    if (!strcmp(x->key, e->key)) t = x->t;
  if (!t && (t = load_topology()) != NULL) {
    e->t = t;
    e->next = topologies;
    topologies = e;
    e = NULL;
  }
  pthread_mutex_unlock(&topo_lock);
  free(e);
  return t;
}

/* 0 when threads can be bound on this machine; else why not. */
static int hw_can_bind(hwloc_topology_t t) {
  const struct hwloc_topology_support *sup = hwloc_topology_get_support(t);
  if (!sup->cpubind->set_thread_cpubind) return ENOSYS;
  /* Linux binds through sched_setaffinity: probe it directly, setting the
   * thread's mask to itself (hwloc_set_cpubind would widen a mask covering
   * every online PU to the complete set, offline ones included). */
  return probe_affinity();
}

/* 0 planned, ENOMEM/ENOTSUP, or -1: no topology, plan portably instead. */
/* The usable PUs of t, in topology order, into c (room for max), with
 * their SMT rank; *npkg and *nnuma count the packages and NUMA nodes they
 * span. Returns how many. */
static unsigned collect_pus(hwloc_topology_t t, hwloc_const_bitmap_t usable, cand *c,
                            unsigned max, unsigned *npkg, unsigned *nnuma) {
  unsigned k = 0;
  int last_pkg = -2, last_numa = -2;
  int64_t last_core = -2;
  *npkg = *nnuma = 0;
  for (hwloc_obj_t pu = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_PU, NULL); pu && k < max;
       pu = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_PU, pu)) {
    if (!hwloc_bitmap_isset(usable, pu->os_index)) continue;
    cand *x = &c[k];
    describe_pu(t, pu, x);
    /* PUs of one core are consecutive in topology order. */
    x->smt = (k > 0 && x->s.core == last_core) ? c[k - 1].smt + 1 : 0;
    x->key[5] = x->smt;
    last_core = x->s.core;
    if (x->s.package != last_pkg) (*npkg)++, last_pkg = x->s.package;
    if (x->s.numa != last_numa) (*nnuma)++, last_numa = x->s.numa;
    k++;
  }
  return k;
}

static int hw_plan(struct pool *p, struct ws_placement *pl) {
  hwloc_topology_t t = shared_topology();
  if (!t) return -1;
  pl->topo = t;
  bool here = hwloc_topology_is_thissystem(t);
  if (here) {
    int err = hw_can_bind(t);
    if (err) return binding_impossible(p, pl, err);
  }
  hwloc_bitmap_t usable = usable_set(t, here, pl);
  if (!usable) return ENOMEM;
  int npu = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PU);
  size_t c_bytes = (size_t)(npu > 0 ? npu : 0) * sizeof(cand);
  cand *c = npu > 0 ? ws_mem_alloc(&p->mem, c_bytes) : NULL;
  if (!c) {
    hwloc_bitmap_free(usable);
    return npu > 0 ? ENOMEM : -1;
  }
  unsigned npkg, nnuma;
  unsigned k = collect_pus(t, usable, c, (unsigned)npu, &npkg, &nnuma);
  hwloc_bitmap_free(usable);
  if (k == 0) {
    ws_mem_free(&p->mem, c, c_bytes);
    return -1;
  }
  /* SPREAD's two outer levels: the containing one of package and NUMA node
   * (the one with fewer instances) first, so consecutive workers alternate
   * both (packages holding two NUMA nodes each: package 0 node 0, package 1
   * node 2, package 0 node 1, package 1 node 3, ...). */
  bool pkg_outer = npkg <= nnuma;
  for (unsigned i = 0; i < k; i++) {
    c[i].key[0] = pkg_outer ? c[i].s.package : c[i].s.numa;
    c[i].key[1] = pkg_outer ? c[i].s.numa : c[i].s.package;
  }
  int rc = 0;
  if (p->cfg.bind == POOL_BIND_CORE) {
    qsort(c, k, sizeof(cand), cmp_compact);
  } else {
    qsort(c, k, sizeof(cand), cmp_key);
    rc = scatter(&p->mem, c, k, 0);
  }
  if (rc == 0 && !(pl->slots = ws_mem_alloc(&p->mem, pl->n * sizeof(slot)))) rc = ENOMEM;
  if (rc) {
    ws_mem_free(&p->mem, c, c_bytes);
    return rc;
  }
  for (unsigned i = 0; i < pl->n; i++) pl->slots[i] = c[i % k].s;
  ws_mem_free(&p->mem, c, c_bytes);
  pl->npus = k;
  pl->bind = here;
  const struct hwloc_topology_support *sup = hwloc_topology_get_support(t);
  pl->hw_mem = here && !p->mem.alloc_fn &&
               (sup->membind->alloc_membind || sup->membind->set_area_membind);
  const char *backend = hwloc_obj_get_info_by_name(hwloc_get_root_obj(t), "Backend");
  if (here)
    pl->how = "hwloc topology of this machine";
  else if (backend && !strcmp(backend, "Synthetic"))
    pl->how = "hwloc synthetic topology (HWLOC_SYNTHETIC): preview, threads not bound";
  else
    pl->how = "hwloc topology of another machine (HWLOC_XMLFILE): preview, threads not bound";
  return 0;
}

#endif /* WS_HAVE_HWLOC */

/* --- Victim order ------------------------------------------------------- */

/* Distance level of worker b's slot from worker a's:
 *   0  same core, same outermost cache or same PU (within one NUMA node and
 *      package): the data a thief wants is likely in a cache it shares
 *   1  same NUMA node and package
 *   2  same NUMA node or same package (SNC: another node of my package;
 *      node-interleaved memory: another package of my node)
 *   3  the rest
 * Unknown fields (-1) compare equal to each other, so without topology
 * everyone is level 1 and workers on my CPU level 0. */
static unsigned level_of(const slot *a, const slot *b) {
  bool dom = a->numa == b->numa && a->package == b->package;
  if (dom && ((a->cpu >= 0 && a->cpu == b->cpu) || (a->core >= 0 && a->core == b->core) ||
              (a->cache >= 0 && a->cache == b->cache)))
    return 0;
  if (dom) return 1;
  if ((a->numa >= 0 && a->numa == b->numa) || (a->package >= 0 && a->package == b->package))
    return 2;
  return 3;
}

/* --- The interface (api.h) ----------------------------------------- */

static void report(struct pool *p, const struct ws_placement *pl) {
  static const char *const names[] = {"none", "core", "spread"};
  const char *policy = names[p->cfg.bind];
  if (!pl->slots) {
    fprintf(stderr, "wspool: placement: policy %s, %u workers unbound (%s)\n", policy, pl->n,
            pl->how ? pl->how : "the OS places them");
    return;
  }
  fprintf(stderr, "wspool: placement: policy %s, %u workers on %u usable PUs, %s\n", policy, pl->n,
          pl->npus, pl->how);
  for (unsigned i = 0; i < pl->n; i++) {
    const slot *s = &pl->slots[i];
    unsigned cnt[4] = {0, 0, 0, 0};
    for (unsigned j = 0; j < pl->n; j++)
      if (j != i) cnt[level_of(s, &pl->slots[j])]++;
    char core[16] = "?", pkg[16] = "?", numa[32] = "?";
    if (s->core_l >= 0) snprintf(core, sizeof core, "L#%d", s->core_l);
    if (s->package >= 0) snprintf(pkg, sizeof pkg, "L#%d", s->package);
    if (s->numa >= 0) snprintf(numa, sizeof numa, "L#%d (P#%d)", s->numa, s->numa_os);
    fprintf(stderr,
            "wspool:   worker %u -> PU P#%d, core %s, package %s, NUMA node %s; "
            "victims near-to-far %u/%u/%u/%u\n",
            i, s->cpu, core, pkg, numa, cnt[0], cnt[1], cnt[2], cnt[3]);
  }
}

void ws_placement_atfork(int phase) {
#ifdef WS_HAVE_HWLOC
  if (phase == 0)
    pthread_mutex_lock(&topo_lock);
  else
    pthread_mutex_unlock(&topo_lock);
#else
  (void)phase;
#endif
}

int ws_placement_plan(struct pool *p, const cpu_set_t *origin, size_t size) {
  struct ws_placement *pl = ws_mem_calloc(&p->mem, 1, sizeof(*pl));
  p->placement = pl;
  if (!pl) return ENOMEM;
  pl->n = p->nthreads;
  if (origin) {
    if (!(pl->origin = ws_mem_alloc(&p->mem, size))) return ENOMEM;
    memcpy(pl->origin, origin, size);
    pl->origin_size = size;
    /* Only a thread of a pool has an affinity that is not its origin set
     * (ws_origin_cpus), unless the program set it so: others pay nothing. */
    size_t mine_size;
    cpu_set_t *mine = ws_self() ? get_affinity(&mine_size) : NULL;
    pl->reaffine = mine && !(mine_size == size && CPU_EQUAL_S(size, mine, origin));
    if (mine) CPU_FREE(mine);
  }
  int rc = 0;
  if (p->cfg.bind != POOL_BIND_NONE) {
    rc = -1;
#ifdef WS_HAVE_HWLOC
    rc = hw_plan(p, pl);
    if (rc < 0) {
      pl->topo = NULL;
      pl->hw_mem = false;
    }
#endif
    if (rc < 0) rc = portable_plan(p, pl);
  }
  if (rc == 0 && ws_option_long(WS_OPT_VERBOSE)) report(p, pl);
  return rc; /* on failure pool.c calls ws_placement_free() */
}

/* Do a and b sit in the same place, as level_of sees it? */
static bool same_place(const slot *a, const slot *b) {
  return a->cpu == b->cpu && a->numa == b->numa && a->package == b->package && a->core == b->core &&
         a->cache == b->cache;
}

int ws_placement_worker(struct pool *p, ws_worker *w) {
  struct ws_placement *pl = p->placement;
  const slot *s = pl && pl->slots ? pl->slots : NULL;
  unsigned n = p->nthreads, me = w->id;
  w->cpu = s ? s[me].cpu : -1;
  w->numa = s ? s[me].numa : -1;
  w->nlevels = 0;
  if (n < 2) return 0;
  /* Workers in one place see every worker at the same level, so they share
   * one array, which holds them too (steal_round passes over its own id):
   * an array per place, not per worker, or 4096 workers would write 64 MiB
   * of victims (docs/design.md 5.10). Places are few (at most the PUs). */
  if (!pl->reps && !(pl->reps = ws_mem_alloc(&p->mem, n * sizeof(unsigned)))) return ENOMEM;
  for (unsigned r = 0; r < pl->nreps; r++) {
    const ws_worker *o = p->workers[pl->reps[r]];
    if (s && !same_place(&s[me], &s[o->id])) continue;
    w->victims = o->victims;
    w->nvictims = o->nvictims;
    memcpy(w->level_end, o->level_end, sizeof w->level_end);
    w->nlevels = o->nlevels;
    return 0;
  }
  w->victims = ws_mem_alloc(&p->mem, n * sizeof(unsigned));
  if (!w->victims) return ENOMEM;
  w->nvictims = n;
  w->victims_own = true;
  pl->reps[pl->nreps++] = me;
  /* Counting sort by level; within a level, ascending ids (worker.c starts
   * each round at a random position inside the level). */
  unsigned cnt[4] = {0, 0, 0, 0}, at[4];
  for (unsigned j = 0; j < n; j++) cnt[s ? level_of(&s[me], &s[j]) : 0]++;
  at[0] = 0;
  for (unsigned l = 1; l < 4; l++) at[l] = at[l - 1] + cnt[l - 1];
  for (unsigned j = 0; j < n; j++) w->victims[at[s ? level_of(&s[me], &s[j]) : 0]++] = j;
  /* Keep the non-empty levels only. */
  unsigned end = 0;
  for (unsigned l = 0; l < 4; l++) {
    if (!cnt[l]) continue;
    end += cnt[l];
    w->level_end[w->nlevels++] = end;
  }
  return 0;
}

int ws_placement_bind(struct pool *p, ws_worker *w) {
  const struct ws_placement *pl = p->placement;
  if (!pl) return 0;
  if (!pl->slots || w->cpu < 0 || !pl->bind) {
    /* Unbound, or a preview of another machine: the origin set, not the
     * creator's one CPU. Best effort, as a stand-in's (standin.c): where
     * it cannot be set, the thread keeps what it inherited. */
    if (pl->reaffine) (void)pthread_setaffinity_np(w->thread, pl->origin_size, pl->origin);
    return 0;
  }
  /* Always sched_setaffinity, also with a topology: that is what hwloc
   * does on Linux, but hwloc 2.9 does not check its own CPU_ALLOC there
   * and crashes when that allocation fails. PU OS indexes are CPU
   * numbers. */
  size_t size = CPU_ALLOC_SIZE((size_t)w->cpu + 1);
  cpu_set_t *one = CPU_ALLOC((size_t)w->cpu + 1);
  if (!one) return ENOMEM;
  CPU_ZERO_S(size, one);
  CPU_SET_S((size_t)w->cpu, size, one);
  int rc = pthread_setaffinity_np(w->thread, size, one);
  CPU_FREE(one);
  return rc;
}

void ws_placement_free(struct pool *p) {
  struct ws_placement *pl = p->placement;
  if (!pl) return;
  if (pl->slots) ws_mem_free(&p->mem, pl->slots, pl->n * sizeof(slot)); /* the topology is shared: it stays */
  if (pl->reps) ws_mem_free(&p->mem, pl->reps, pl->n * sizeof(unsigned));
  if (pl->origin) ws_mem_free(&p->mem, pl->origin, pl->origin_size);
  ws_mem_free(&p->mem, pl, sizeof(*pl));
  p->placement = NULL;
}

/* A worker's struct, on its NUMA node when the pool is bound on this machine
 * (non-strict hwloc binding: MPOL_PREFERRED, so a full node falls back to
 * another instead of failing). hwloc's allocations are page-aligned, and
 * counted as the pool's (mem.h). A pool with allocator hooks never has
 * hw_mem: its blocks are the hooks', line-aligned inside, on no chosen
 * node (wspool.h, "Memory"). */
void *ws_placement_alloc(struct pool *p, unsigned worker, size_t size) {
  const struct ws_placement *pl = p->placement;
  (void)worker;
#ifdef WS_HAVE_HWLOC
  if (pl && pl->hw_mem) {
    int node = worker < pl->n ? pl->slots[worker].numa : -1;
    hwloc_obj_t o =
        node >= 0 ? hwloc_get_obj_by_type(pl->topo, HWLOC_OBJ_NUMANODE, (unsigned)node) : NULL;
    void *mem = o ? hwloc_alloc_membind(pl->topo, size, o->nodeset, HWLOC_MEMBIND_BIND,
                                        HWLOC_MEMBIND_BYNODESET)
                  : hwloc_alloc(pl->topo, size);
    if (mem) ws_mem_count(&p->mem, size);
    return mem;
  }
#else
  (void)pl;
#endif
  return ws_mem_alloc_aligned(&p->mem, size);
}

void ws_placement_dealloc(struct pool *p, void *mem, size_t size) {
  const struct ws_placement *pl = p->placement;
  if (!mem) return;
#ifdef WS_HAVE_HWLOC
  if (pl && pl->hw_mem) {
    ws_mem_count(&p->mem, (uint64_t)0 - size);
    hwloc_free(pl->topo, mem, size);
    return;
  }
#else
  (void)pl;
#endif
  ws_mem_free_aligned(&p->mem, mem, size);
}
