/* SPDX-License-Identifier: MIT */
/* WSPOOL_STATS=1: a per-worker counters table on stderr when a pool is
 * destroyed. The counters themselves live in each worker (internal.h) as
 * single-writer relaxed words, cheap enough to stay on. */
#include <inttypes.h>
#include <stdio.h>

#include "internal.h"

void ws_stats_report(struct pool *p) {
  if (!ws_env_flag("WSPOOL_STATS")) return;
  fprintf(stderr, "wspool: pool %p, %u workers\n", (void *)p, p->nthreads);
  fprintf(stderr, "%6s %5s %12s %12s %12s %12s %10s %12s %10s %12s\n", "worker", "cpu", "tasks",
          "local", "global", "steals", "remote", "failed", "sleeps", "gq-taken");
  for (unsigned i = 0; i < p->nthreads; i++) {
    pool_worker_stats_t s;
    ws_read_stats(p, i, &s);
    fprintf(stderr,
            "%6u %5d %12" PRIu64 " %12" PRIu64 " %12" PRIu64 " %12" PRIu64 " %10" PRIu64
            " %12" PRIu64 " %10" PRIu64 " %12" PRIu64 "\n",
            i, p->workers[i]->cpu, s.tasks, s.local_pops, s.global_pops, s.steals, s.steals_remote,
            s.steal_failures, s.sleeps, s.global_taken);
  }
}
