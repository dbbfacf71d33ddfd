/* SPDX-License-Identifier: MIT */
/* Helpers shared by the placement tests: run one task on every worker and
 * record what each worker thread's real affinity is, and read the victim
 * order the runtime built. Links the internal library (runtime/ headers). */
#ifndef WSPOOL_TEST_PLACEMENT_PROBE_H
#define WSPOOL_TEST_PLACEMENT_PROBE_H

#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <wspool.h>

#include "check.h"
#include "api.h"

typedef struct probe {
  unsigned n;
  atomic_uint arrived;
  atomic_uint *seen; /* tasks run per worker */
  cpu_set_t *mask;   /* each worker thread's affinity, read inside a task */
} probe;

/* A task that records its worker's affinity, then waits until n tasks have
 * started. A worker stuck here cannot take another, so n such tasks on n
 * workers run exactly one per worker. */
static void probe_task(void *arg) {
  probe *pr = arg;
  int id = pool_worker_id();
  CHECK(id >= 0 && (unsigned)id < pr->n);
  CHECK_OK(sched_getaffinity(0, sizeof(cpu_set_t), &pr->mask[id]));
  atomic_fetch_add(&pr->seen[id], 1);
  atomic_fetch_add(&pr->arrived, 1);
  while (atomic_load(&pr->arrived) < pr->n) sched_yield();
}

/* Run probe_task once on every worker of `pool`; the caller frees with
 * probe_free(). */
static inline probe *probe_run(pool_t *pool) {
  probe *pr = calloc(1, sizeof(*pr));
  CHECK(pr);
  pr->n = pool_threads(pool);
  pr->seen = calloc(pr->n, sizeof(*pr->seen));
  pr->mask = calloc(pr->n, sizeof(*pr->mask));
  CHECK(pr->seen && pr->mask);
  for (unsigned i = 0; i < pr->n; i++) CHECK_OK(pool_submit(pool, probe_task, pr));
  CHECK_OK(pool_wait_idle(pool));
  for (unsigned i = 0; i < pr->n; i++) CHECK_EQ(atomic_load(&pr->seen[i]), 1);
  return pr;
}

static inline void probe_free(probe *pr) {
  free(pr->seen);
  free(pr->mask);
  free(pr);
}

static inline ws_worker *worker_of(pool_t *pool, unsigned i) {
  return ((struct pool *)pool)->workers[i];
}

/* How many victims w lists: the end of its last level. */
static inline unsigned victim_count(const ws_worker *w) {
  return w->nlevels ? w->level_end[w->nlevels - 1] : 0;
}

/* The level (0-based, after empty levels were dropped) at which w lists v. */
static inline unsigned victim_level(const ws_worker *w, unsigned v) {
  unsigned pos = 0;
  while (pos < victim_count(w) && w->victims[pos] != v) pos++;
  CHECK(pos < victim_count(w));
  unsigned l = 0;
  while (pos >= w->level_end[l]) l++;
  return l;
}

/* Structural checks on every worker's victim list: every worker exactly
 * once (its own id too: the workers of one place share one list, and the
 * steal round passes over its own id), levels non-empty, ordered, at most
 * 4, worker 64-aligned. */
static inline void check_victims_shape(pool_t *pool) {
  unsigned n = pool_threads(pool);
  unsigned char *seen = malloc(n ? n : 1);
  CHECK(seen);
  for (unsigned i = 0; i < n; i++) {
    const ws_worker *w = worker_of(pool, i);
    CHECK_EQ((uintptr_t)w % 64, 0);
    CHECK_EQ(w->id, i);
    CHECK_EQ(victim_count(w), n > 1 ? n : 0);
    CHECK(w->nlevels <= 4);
    if (n > 1) {
      CHECK(w->nlevels >= 1);
      CHECK_EQ(w->level_end[w->nlevels - 1], n);
    }
    for (unsigned l = 0; l < w->nlevels; l++)
      CHECK(w->level_end[l] > (l ? w->level_end[l - 1] : 0));
    memset(seen, 0, n);
    for (unsigned k = 0; k < victim_count(w); k++) {
      unsigned v = w->victims[k];
      CHECK(v < n && !seen[v]);
      seen[v] = 1;
    }
    /* One list a place: shared exactly by the bound workers on one PU. */
    for (unsigned j = 0; j < i && n > 1 && w->cpu >= 0; j++)
      if (worker_of(pool, j)->cpu >= 0)
        CHECK_EQ(worker_of(pool, j)->victims == w->victims, worker_of(pool, j)->cpu == w->cpu);
  }
  free(seen);
}

static inline bool mask_is_only(const cpu_set_t *m, int cpu) {
  return cpu >= 0 && CPU_COUNT(m) == 1 && CPU_ISSET(cpu, m);
}

#endif
