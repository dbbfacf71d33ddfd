/* SPDX-License-Identifier: MIT */
/* WSPOOL_STATS=1: a per-worker counters table on stderr when a pool is
 * destroyed, and the read of one worker's counters behind
 * pool_worker_stats() (pool.c). The counters themselves live in each
 * worker (ws_stats, scheduler.h) as single-writer relaxed words, cheap enough
 * to stay on. */
#include <inttypes.h>
#include <stdio.h>

#include "api.h"

void ws_stats_report(struct pool *p) {
  if (!ws_option_long(WS_OPT_STATS)) return;
  fprintf(stderr, "wspool: pool %p, %u workers\n", (void *)p, p->nthreads);
  fprintf(stderr, "%6s %5s %12s %12s %12s %12s %10s %12s %10s %12s %10s %12s\n", "worker", "cpu",
          "tasks", "local", "global", "steals", "remote", "failed", "sleeps", "gq-taken", "skipped",
          "skip-items");
  for (unsigned i = 0; i < p->nthreads; i++) {
    pool_worker_stats_t s;
    ws_read_stats(p, i, &s);
    fprintf(stderr,
            "%6u %5d %12" PRIu64 " %12" PRIu64 " %12" PRIu64 " %12" PRIu64 " %10" PRIu64
            " %12" PRIu64 " %10" PRIu64 " %12" PRIu64 " %10" PRIu64 " %12" PRIu64 "\n",
            i, p->workers[i]->cpu, s.tasks, s.local_pops, s.global_pops, s.steals, s.steals_remote,
            s.steal_failures, s.sleeps, s.global_taken, s.skipped, s.skipped_items);
  }
}

void ws_read_stats(struct pool *p, unsigned worker, pool_worker_stats_t *out) {
  ws_stats *s = &p->workers[worker]->stats;
  out->tasks = ws_u64_load(&s->tasks, ws_relaxed);
  out->local_pops = ws_u64_load(&s->local_pops, ws_relaxed);
  out->global_pops = ws_u64_load(&s->global_pops, ws_relaxed);
  out->steals = ws_u64_load(&s->steals, ws_relaxed);
  out->steals_remote = ws_u64_load(&s->steals_remote, ws_relaxed);
  out->steal_failures = ws_u64_load(&s->steal_failures, ws_relaxed);
  out->sleeps = ws_u64_load(&s->sleeps, ws_relaxed);
  out->global_taken = ws_u64_load(&s->global_taken, ws_relaxed);
  out->skipped = ws_u64_load(&s->skipped, ws_relaxed);
  out->skipped_items = ws_u64_load(&s->skipped_items, ws_relaxed);
}
