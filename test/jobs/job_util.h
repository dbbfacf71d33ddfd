/* SPDX-License-Identifier: MIT */
/* Helpers shared by the job tests (suite 'jobs'; include/wspool.h, \ref
 * jobs): a dependency graph of jobs whose every node records a logical
 * clock when its function starts and when it ends, so that each edge can be
 * checked (the predecessor ended before the successor started), and the
 * outcome rules of the header checked node by node:
 *
 *   a node cancelled before its start never runs and completes ECANCELED;
 *   a node one of whose predecessors did not succeed never runs and takes
 *   the status of one of those predecessors;
 *   every other node runs exactly once, after every predecessor ended, and
 *   completes with its own failure (pool_fail) or 0.
 *
 * The statuses are the ones pool_job_wait() returns, collected once every
 * node was waited for (from the main thread, in a seeded random order).
 * Deterministic in what is checked; the schedule varies. */
#ifndef WSPOOL_TEST_JOB_UTIL_H
#define WSPOOL_TEST_JOB_UTIL_H

#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <wspool.h>

#include "check.h"
#include "testutil.h"

/* Under a sanitizer or an emulator (test/meson.build: WSPOOL_TEST_EMULATED)
 * the runtime is several times slower: the long stress loops run `slow`
 * rounds there instead of `fast` (both times WSPOOL_STRESS). */
static inline int job_slow_build(void) {
  const char *e = getenv("WSPOOL_TEST_EMULATED");
  return TEST_UNDER_SANITIZER || (e && *e && *e != '0');
}
static inline unsigned long job_rounds(unsigned long fast, unsigned long slow) {
  return check_iters(job_slow_build() ? slow : fast);
}

/* The logical clock: every start and every end of a node's function takes
 * the next value, so a < b means "happened before" along the counter's
 * total order. */
static atomic_ulong job_clock;

static inline unsigned long job_tick(void) { return atomic_fetch_add(&job_clock, 1) + 1; }

typedef struct jdag jdag;

typedef struct jnode {
  pool_job_t job;
  jdag *dag;
  unsigned idx;
  /* Plain, not atomic: written by the node's function and read by its
   * successors' functions, so the edges must order them (ThreadSanitizer
   * checks it): a mix of the index and every predecessor's value. */
  uint64_t value;
  atomic_ulong t_start, t_end; /* logical times, 0: never */
  atomic_uint runs;
  int fail;      /* > 0: the function calls pool_fail(fail) */
  int cancel;    /* cancelled (pool_job_cancel) before its start */
  unsigned spin; /* busy work in the function, iterations */
  int status;    /* what pool_job_wait returned */
  int fail_rc;   /* what its pool_fail returned */
} jnode;

/* A little work the compiler cannot remove. */
static atomic_uint job_sink_;
static inline void job_busy(unsigned iters) {
  unsigned x = 0;
  for (unsigned i = 0; i < iters; i++) {
    x = x * 31u + i;
    __asm__ __volatile__("" : "+r"(x));
  }
  atomic_store_explicit(&job_sink_, x, memory_order_relaxed);
}

/* A graph: nodes, and edges (pred[k] -> succ[k]) in the order added,
 * always from a lower index to a higher one (the indices are a topological
 * order); pstart/plist, each node's predecessors (jdag_seal). */
struct jdag {
  jnode *n;
  size_t count;
  unsigned *pred, *succ;
  size_t nedges, cap;
  size_t *pstart;
  unsigned *plist;
  /* Runs that found a predecessor not complete (pool_job_status said
   * EINPROGRESS): a job runs only after each has completed, its status
   * final and its storage free to reuse. */
  atomic_uint early;
};

static inline uint64_t job_mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

/* Node i's value from its predecessors' values. */
static inline uint64_t jnode_value(const jdag *d, size_t i) {
  uint64_t v = job_mix(i + 1);
  for (size_t k = d->pstart[i]; k < d->pstart[i + 1]; k++) v = job_mix(v ^ d->n[d->plist[k]].value);
  return v;
}

/* Counts the predecessors of node i that have not completed yet. */
static inline void jnode_check_preds(jdag *d, size_t i) {
  for (size_t k = d->pstart[i]; k < d->pstart[i + 1]; k++)
    if (pool_job_status(&d->n[d->plist[k]].job) == EINPROGRESS) atomic_fetch_add(&d->early, 1);
}

static void jnode_fn(void *arg) {
  jnode *n = (jnode *)arg;
  atomic_store(&n->t_start, job_tick());
  atomic_fetch_add(&n->runs, 1);
  jnode_check_preds(n->dag, n->idx);
  if (n->spin) job_busy(n->spin);
  n->value = jnode_value(n->dag, n->idx);
  if (n->fail) n->fail_rc = pool_fail(n->fail);
  atomic_store(&n->t_end, job_tick());
}

static inline jdag *jdag_new(size_t count) {
  jdag *d = (jdag *)calloc(1, sizeof *d);
  CHECK(d);
  d->n = (jnode *)calloc(count ? count : 1, sizeof(jnode));
  CHECK(d->n);
  d->count = count;
  for (size_t i = 0; i < count; i++) {
    d->n[i].dag = d;
    d->n[i].idx = (unsigned)i;
  }
  return d;
}

static inline void jdag_free(jdag *d) {
  free(d->n);
  free(d->pred);
  free(d->succ);
  free(d->pstart);
  free(d->plist);
  free(d);
}

/* Records an edge p -> s (added to the jobs by jdag_link or by the caller). */
static inline void jdag_edge(jdag *d, size_t p, size_t s) {
  CHECK(p < s && s < d->count);
  if (d->nedges == d->cap) {
    d->cap = d->cap ? 2 * d->cap : 1024;
    d->pred = (unsigned *)realloc(d->pred, d->cap * sizeof(unsigned));
    d->succ = (unsigned *)realloc(d->succ, d->cap * sizeof(unsigned));
    CHECK(d->pred && d->succ);
  }
  d->pred[d->nedges] = (unsigned)p;
  d->succ[d->nedges] = (unsigned)s;
  d->nedges++;
}

/* Each node's predecessors, for the functions (before any start). */
static inline void jdag_seal(jdag *d) {
  free(d->pstart);
  free(d->plist);
  d->pstart = (size_t *)calloc(d->count + 1, sizeof(size_t));
  d->plist = (unsigned *)malloc((d->nedges ? d->nedges : 1) * sizeof(unsigned));
  CHECK(d->pstart && d->plist);
  for (size_t k = 0; k < d->nedges; k++) d->pstart[d->succ[k] + 1]++;
  for (size_t i = 0; i < d->count; i++) d->pstart[i + 1] += d->pstart[i];
  size_t *fill = (size_t *)malloc((d->count ? d->count : 1) * sizeof(size_t));
  CHECK(fill);
  memcpy(fill, d->pstart, d->count * sizeof(size_t));
  for (size_t k = 0; k < d->nedges; k++) d->plist[fill[d->succ[k]]++] = d->pred[k];
  free(fill);
}

/* Initialises node i's job on pool p. */
static inline void jdag_init(jdag *d, size_t i, pool_t *p) {
  CHECK_OK(pool_job_init(&d->n[i].job, p, jnode_fn, &d->n[i]));
}

/* Every recorded edge, in the order recorded, as pool_job_after. */
static inline void jdag_link(jdag *d) {
  for (size_t k = 0; k < d->nedges; k++)
    CHECK_OK(pool_job_after(&d->n[d->succ[k]].job, &d->n[d->pred[k]].job));
}

/* Cancels the nodes marked `cancel`, then starts every node in `order`
 * (NULL: 0, 1, ...). */
static inline void jdag_start(jdag *d, const unsigned *order) {
  for (size_t i = 0; i < d->count; i++)
    if (d->n[i].cancel) CHECK_OK(pool_job_cancel(&d->n[i].job));
  for (size_t k = 0; k < d->count; k++) {
    size_t i = order ? order[k] : k;
    CHECK_EQ(pool_job_status(&d->n[i].job), EINPROGRESS); /* not started: never complete */
    CHECK_OK(pool_job_start(&d->n[i].job));
  }
}

/* Waits for every node, in a seeded random order; each wait's value is the
 * node's status, and pool_job_status agrees with it afterwards. */
static inline void jdag_wait(jdag *d, uint64_t seed) {
  unsigned *ord = (unsigned *)malloc((d->count ? d->count : 1) * sizeof(unsigned));
  CHECK(ord);
  for (size_t i = 0; i < d->count; i++) ord[i] = (unsigned)i;
  shuffle(ord, (unsigned)d->count, &seed);
  for (size_t k = 0; k < d->count; k++) {
    jnode *n = &d->n[ord[k]];
    n->status = pool_job_wait(&n->job);
    CHECK_EQ(pool_job_status(&n->job), n->status);
    CHECK_EQ(pool_job_wait(&n->job), n->status); /* a second wait: the same */
  }
  free(ord);
}

/* A permutation of 0..n-1: kind 0 ascending, 1 descending, 2 random. */
static inline unsigned *jorder(size_t n, int kind, uint64_t seed) {
  unsigned *o = (unsigned *)malloc((n ? n : 1) * sizeof(unsigned));
  CHECK(o);
  for (size_t i = 0; i < n; i++) o[i] = (unsigned)(kind == 1 ? n - 1 - i : i);
  if (kind == 2) shuffle(o, (unsigned)n, &seed);
  return o;
}

static const char *const jorder_name[] = {"first-to-last", "last-to-first", "random"};

/* The rules above, node by node and edge by edge. */
static inline void jdag_check(jdag *d, const char *what) {
  unsigned early = atomic_exchange(&d->early, 0);
  if (early)
    FAIL("%s: %u times a job ran while a predecessor's status was still EINPROGRESS\n", what,
         early);
  /* For each node, whether some predecessor did not succeed: the edges
   * grouped by successor would need a sort; two passes over the edge list
   * keep it linear. */
  unsigned char *pred_failed = (unsigned char *)calloc(d->count ? d->count : 1, 1);
  CHECK(pred_failed);
  for (size_t k = 0; k < d->nedges; k++)
    if (d->n[d->pred[k]].status != 0) pred_failed[d->succ[k]] = 1;
  for (size_t i = 0; i < d->count; i++) {
    const jnode *n = &d->n[i];
    unsigned runs = atomic_load(&n->runs);
    if (n->cancel) {
      if (runs != 0 || n->status != ECANCELED)
        FAIL("%s: node %zu, cancelled before its start: ran %u times, status %d\n", what, i, runs,
             n->status);
    } else if (pred_failed[i]) {
      if (runs != 0) FAIL("%s: node %zu ran %u times after a failed predecessor\n", what, i, runs);
      if (n->status == 0) FAIL("%s: node %zu skipped with status 0\n", what, i);
    } else {
      if (runs != 1) FAIL("%s: node %zu ran %u times\n", what, i, runs);
      int want = n->fail ? n->fail : 0;
      if (n->status != want)
        FAIL("%s: node %zu: status %d, expected %d\n", what, i, n->status, want);
      if (n->fail && n->fail_rc != 0)
        FAIL("%s: node %zu: its pool_fail returned %d\n", what, i, n->fail_rc);
      /* Every predecessor ran (none failed), so the value is determined. */
      if (n->value != jnode_value(d, i)) FAIL("%s: node %zu computed a wrong value\n", what, i);
    }
  }
  for (size_t k = 0; k < d->nedges; k++) {
    const jnode *p = &d->n[d->pred[k]], *s = &d->n[d->succ[k]];
    if (s->cancel) continue;
    if (atomic_load(&s->runs)) {
      unsigned long pe = atomic_load(&p->t_end), ss = atomic_load(&s->t_start);
      if (!(pe != 0 && pe < ss))
        FAIL("%s: edge %u -> %u: the predecessor ended at %lu, the successor started at %lu\n",
             what, d->pred[k], d->succ[k], pe, ss);
    } else if (p->status != 0 && !pred_failed[d->succ[k]]) {
      FAIL("%s: edge %u -> %u: bookkeeping\n", what, d->pred[k], d->succ[k]);
    }
  }
  /* A skipped node's status is one of its failed predecessors'. */
  unsigned char *ok = (unsigned char *)calloc(d->count ? d->count : 1, 1);
  CHECK(ok);
  for (size_t k = 0; k < d->nedges; k++) {
    const jnode *p = &d->n[d->pred[k]], *s = &d->n[d->succ[k]];
    if (p->status != 0 && p->status == s->status) ok[d->succ[k]] = 1;
  }
  for (size_t i = 0; i < d->count; i++)
    if (!d->n[i].cancel && pred_failed[i] && !ok[i])
      FAIL("%s: node %zu skipped with status %d, which no failed predecessor has\n", what, i,
           d->n[i].status);
  free(ok);
  free(pred_failed);
}

/* Polls until *v >= target (yielding, then sleeping 1 ms); false after 30 s
 * times WSPOOL_STRESS. A liveness bound, never a timing figure. */
static inline double job_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline int job_wait_until(atomic_uint *v, unsigned target) {
  double end = job_now() + 30.0 * (double)test_stress_factor();
  for (unsigned spin = 0; atomic_load(v) < target; spin++) {
    if (job_now() > end) return 0;
    if (spin < 200)
      sched_yield();
    else
      sleep_ms(1);
  }
  return 1;
}

/* A gate: jobs (or tasks) that call gate_pass() wait until gate_open(). */
typedef struct jgate {
  atomic_uint open;
  atomic_uint waiting; /* callers that reached the gate */
} jgate;

static inline void gate_pass(jgate *g) {
  atomic_fetch_add(&g->waiting, 1);
  CHECK(job_wait_until(&g->open, 1));
}
static inline void gate_open(jgate *g) { atomic_store(&g->open, 1); }

#endif
