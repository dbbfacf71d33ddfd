/* SPDX-License-Identifier: MIT */
/* The work/span profile: frames' records, regions (pool.c's
 * pool_profile_begin and pool_profile_end, WSPOOL_PROFILE) and the summary. The strand rules are
 * in profile.h; docs/design.md 15.1 gives the reasoning. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "api.h"
#include "options.h"
#include "profile.h"
#include "split.h"

/* The burden per continuation when the region had no steal to measure. */
#define ASSUMED_STEAL_NS 2000.0

bool ws_prof_spawn(struct pool *p, ws_worker *w, uint64_t x, void (**fn)(void *), void **arg) {
  /* The child starts at the spawner's span; the spawner's strand goes on
   * as the continuation, one more place a steal costs. Cut first: what
   * follows (the record's allocation, the publication) is no part of it. */
  uint64_t at = ws_prof_fork(p, x);
  ws_node *n = ws_node_alloc(&p->mem, w ? &w->nodes : NULL);
  if (!n) return false;
  _Static_assert(sizeof(ws_prof_rec) <= sizeof(n->payload), "node too small");
  ws_prof_rec *r = (ws_prof_rec *)n->payload;
  r->fn = *fn;
  r->arg = *arg;
  r->pool = p;
  r->at = at;
  r->gen = ws_prof_gen(p);
  *fn = ws_prof_child;
  *arg = r;
  return true;
}

void ws_prof_sync_end(ws_prof_rec *r, ws_worker *w, void (**fn)(void *), void **arg) {
  struct pool *p = r->pool;
  uint64_t end = r->at;
  *fn = r->fn;
  *arg = r->arg;
  /* A child spawned in an earlier region ends in none: its span is not
   * this region's. */
  if (r->gen != ws_prof_gen(p)) end = 0;
  ws_node_free(&p->mem, ws_node_of(r), w && w->pool == p ? &w->nodes : NULL);
  /* Last: as a spawn's publication, this bookkeeping is no part of the
   * strand (from outside, after a wake, it and the return took 10-57 us
   * under ASan; design.md 15.1: runtime time counts in neither). */
  ws_prof_resume(p, end);
}

/* Work, tasks, steals and steal ticks of every worker and stand-in of p,
 * with the outside threads' work and tasks. Relaxed: counters. */
static void sums(struct pool *p, uint64_t out[4]) {
  out[0] = ws_u64_load(&p->prof.out_work, ws_relaxed) + WS_THREADS_SUM(p, prof_work, ws_relaxed);
  out[1] = ws_u64_load(&p->prof.out_tasks, ws_relaxed) + WS_THREADS_SUM(p, prof_tasks, ws_relaxed);
  out[2] = WS_THREADS_SUM(p, prof_steals, ws_relaxed);
  out[3] = WS_THREADS_SUM(p, prof_steal_ticks, ws_relaxed);
}

/* Switches the profile of p on: the counters' values now, and every
 * worker's fast spawn path closed (its next spawn publishes and meets the
 * profile; split.h, ws_fast_open keeps it closed while `on`). */
void ws_prof_region_start(struct pool *p, bool env) {
  ws_u32_store(&p->prof.gen, ws_prof_gen(p) + 1, ws_relaxed);
  ws_u64_store(&p->prof.comp, 0, ws_relaxed);
  sums(p, p->prof.base);
  p->prof.env = env;
  p->prof.tick0 = ws_prof_now();
  p->prof.ns0 = ws_trace_now();
  ws_u32_store(&p->prof_on, 1, ws_relaxed);
  for (unsigned i = 0; i < p->nthreads; i++) ws_ask_publish(p->workers[i]);
}

/* Computes the summary of the region, whose root strand ended at `root`
 * (packed; 0 for none), and switches it off. */
void ws_prof_region_finish(struct pool *p, uint64_t root, pool_profile_t *out) {
  uint64_t now[4], tick1 = ws_prof_now(), ns1 = ws_trace_now();
  sums(p, now);
  double ns_per_tick = 1.0;
  if (tick1 > p->prof.tick0 && ns1 > p->prof.ns0)
    ns_per_tick = (double)(ns1 - p->prof.ns0) / (double)(tick1 - p->prof.tick0);
  uint64_t comp = ws_u64_load(&p->prof.comp, ws_relaxed);
  uint64_t longest = comp > root ? comp : root;
  pool_profile_t r = {0};
  r.work = (double)(now[0] - p->prof.base[0]) * ns_per_tick * 1e-9;
  r.span = (double)ws_prof_span_of(longest) * ns_per_tick * 1e-9;
  r.tasks = now[1] - p->prof.base[1];
  r.steals = now[2] - p->prof.base[2];
  r.steal_assumed = r.steals == 0;
  r.steal_cost = r.steals ? (double)(now[3] - p->prof.base[3]) * ns_per_tick * 1e-9 / (double)r.steals
                          : ASSUMED_STEAL_NS * 1e-9;
  r.burdened_span = r.span + (double)ws_prof_conts_of(longest) * r.steal_cost;
  r.parallelism = r.span > 0 ? r.work / r.span : 0;
  r.burdened_parallelism = r.burdened_span > 0 ? r.work / r.burdened_span : 0;
  r.mean_task = r.tasks ? r.work / (double)r.tasks : 0;
  static const unsigned cores[POOL_PROFILE_CORES] = {2, 4, 8, 16, 64};
  for (int i = 0; i < POOL_PROFILE_CORES; i++) {
    double P = cores[i];
    r.cores[i] = cores[i];
    r.speedup_max[i] = r.parallelism < P ? r.parallelism : P;
    double tp = r.work / P + r.burdened_span;
    r.speedup_min[i] = tp > 0 ? r.work / tp : 0;
  }
  p->prof.result = r;
  p->prof.have = true;
  *out = r;
  /* Off last: until then another thread's pool_profile_begin fails, so it
   * cannot reset what is read above. Release: pairs with its acquire. */
  ws_ptr_store(&p->prof.root, NULL, ws_relaxed);
  ws_u32_store(&p->prof_on, 0, ws_release);
}

void ws_prof_env_begin(struct pool *p) {
  p->prof.have = false;
  if (!ws_option_long(WS_OPT_PROFILE)) return;
  ws_prof_region_start(p, true);
}

void ws_prof_destroyed(struct pool *p) {
  if (ws__strand.pool == p) ws__strand = (ws_strand){0};
  if (!p->prof.env || !ws_u32_load(&p->prof_on, ws_relaxed)) {
    /* A region left open is over: its thread's root strand is stale
     * (ws_prof_root_live drops it). */
    ws_ptr_store(&p->prof.root, NULL, ws_relaxed);
    ws_u32_store(&p->prof_on, 0, ws_relaxed);
    return;
  }
  pool_profile_t r;
  ws_prof_region_finish(p, 0, &r);
  fprintf(stderr,
          "wspool: profile of pool %p: work %.6f s, span %.6f s, parallelism %.2f, burdened "
          "%.2f (steal %.2f us%s), %" PRIu64 " tasks of %.3f us, %" PRIu64 " steals\n",
          (void *)p, r.work, r.span, r.parallelism, r.burdened_parallelism, r.steal_cost * 1e6,
          r.steal_assumed ? ", assumed" : "", r.tasks, r.mean_task * 1e6, r.steals);
  fprintf(stderr, "wspool:   speedup bounds:");
  for (int i = 0; i < POOL_PROFILE_CORES; i++)
    fprintf(stderr, " P=%u [%.2f, %.2f]", r.cores[i], r.speedup_min[i], r.speedup_max[i]);
  fprintf(stderr, "\n");
}
