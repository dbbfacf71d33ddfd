/* SPDX-License-Identifier: MIT */
/* Jobs run after their predecessors (include/wspool.h, \ref jobs): every
 * node of a graph records a logical clock when its function starts and
 * ends, and EACH edge is checked (the predecessor ended before the
 * successor started), each node ran exactly once, and each computed its
 * value from its predecessors' values, read as plain memory (so the edges
 * must also order memory: ThreadSanitizer sees a missing order as a race).
 * job_util.h has the rules.
 *
 *  diamond        A -> B, C -> D, started in every order, many rounds;
 *                 pools of 1, 2 and 4 workers.
 *  chain          10^5 jobs in a line, started first-to-last (racing the
 *                 completions), last-to-first and in a random order;
 *                 pools of 1, 2 and 4.
 *  fan_in         one job after 10^5 predecessors (the edge blocks beyond
 *                 the two a job holds), the sink started first or last,
 *                 the predecessors in each order.
 *  fan_out        one predecessor of 10^5 successors, started first or
 *                 last. (Chains and fans: 2 * 10^4 under sanitizers and
 *                 emulators.)
 *  Every case: no job runs while a predecessor's status is EINPROGRESS.
 *  dup_edges      the same pair twice (and 40 times): one completion
 *                 satisfies them all.
 *  random_dag     seeded random graphs (up to 60 predecessors a node,
 *                 local and far edges, duplicates), all built, then
 *                 started in each order; pools of 1, 2 and 4.
 *  random_online  the same graphs built while they run: each node is
 *                 initialised, put after its predecessors (which may be
 *                 running or complete by then) and started at once.
 *  random_two_pools  random graphs whose nodes are spread over two pools
 *                 (edges cross pools both ways).
 *  chain_million  a chain of 10^6 tiny jobs (2 * 10^5 under sanitizers and
 *                 emulators; times WSPOOL_STRESS) completes, each after the
 *                 one before.
 * No timing assertions. */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <wspool.h>

#include "check.h"
#include "job_util.h"
#include "testutil.h"

/* Builds (on `pools`, node i on pools[i % npools]), links, starts in
 * `order`, waits for and checks graph d. */
static void run_dag(jdag *d, pool_t *const *pools, size_t npools, const unsigned *order,
                    uint64_t seed, const char *what) {
  jdag_seal(d);
  for (size_t i = 0; i < d->count; i++) jdag_init(d, i, pools[i % npools]);
  jdag_link(d);
  jdag_start(d, order);
  jdag_wait(d, seed);
  jdag_check(d, what);
}

static void reset_nodes(jdag *d) {
  for (size_t i = 0; i < d->count; i++) {
    jnode *n = &d->n[i];
    n->value = 0;
    atomic_store(&n->t_start, 0);
    atomic_store(&n->t_end, 0);
    atomic_store(&n->runs, 0);
    n->status = -1;
    n->fail_rc = -1;
  }
}

/* ---- diamond ------------------------------------------------------------- */

static void diamond(pool_t *p) {
  unsigned long rounds = check_iters(3000);
  static const unsigned orders[6][4] = {{0, 1, 2, 3}, {3, 2, 1, 0}, {1, 3, 0, 2},
                                        {2, 0, 3, 1}, {3, 0, 1, 2}, {0, 3, 2, 1}};
  jdag *d = jdag_new(4);
  jdag_edge(d, 0, 1);
  jdag_edge(d, 0, 2);
  jdag_edge(d, 1, 3);
  jdag_edge(d, 2, 3);
  for (unsigned long r = 0; r < rounds; r++) {
    reset_nodes(d);
    for (int i = 0; i < 4; i++) d->n[i].spin = (unsigned)(r % 3 == 0 ? 200 * i : 0);
    run_dag(d, &p, 1, orders[r % 6], r + 1, "diamond");
  }
  jdag_free(d);
}

static void case_diamond(void) { ON_POOLS(diamond, 1, 2, 4); }

/* ---- chain --------------------------------------------------------------- */

/* The chains' and fans' length: a fifth under sanitizers and emulators. */
static size_t big_n(void) { return job_slow_build() ? 20000 : 100000; }

static void chain(pool_t *p) {
  size_t n = big_n();
  jdag *d = jdag_new(n);
  for (size_t i = 1; i < n; i++) jdag_edge(d, i - 1, i);
  for (int kind = 0; kind < 3; kind++) {
    reset_nodes(d);
    unsigned *o = jorder(n, kind, 77 + (uint64_t)kind);
    char what[64];
    snprintf(what, sizeof what, "chain %s", jorder_name[kind]);
    run_dag(d, &p, 1, o, 5, what);
    free(o);
  }
  jdag_free(d);
}

static void case_chain(void) { ON_POOLS(chain, 1, 2, 4); }

/* ---- fans ---------------------------------------------------------------- */

static void fan_in(pool_t *p) {
  const size_t fan = big_n();
  size_t n = fan + 1; /* node fan is the sink */
  jdag *d = jdag_new(n);
  for (size_t i = 0; i < fan; i++) jdag_edge(d, i, fan);
  for (int kind = 0; kind < 3; kind++) {
    for (int sink_first = 0; sink_first < 2; sink_first++) {
      /* Under sanitizers and emulators (slower), two of the six. */
      if (job_slow_build() && kind != (sink_first ? 1 : 2)) continue;
      reset_nodes(d);
      unsigned *o = jorder(fan, kind, 3 + (uint64_t)kind);
      unsigned *order = malloc(n * sizeof *order);
      CHECK(order);
      size_t k = 0;
      if (sink_first) order[k++] = fan;
      for (size_t i = 0; i < fan; i++) order[k++] = o[i];
      if (!sink_first) order[k++] = fan;
      char what[64];
      snprintf(what, sizeof what, "fan-in %s, sink %s", jorder_name[kind],
               sink_first ? "first" : "last");
      run_dag(d, &p, 1, order, 9, what);
      free(order);
      free(o);
    }
  }
  jdag_free(d);
}

static void case_fan_in(void) { ON_POOLS(fan_in, 1, 2, 4); }

static void fan_out(pool_t *p) {
  size_t n = big_n() + 1; /* node 0 is the source */
  jdag *d = jdag_new(n);
  for (size_t i = 1; i < n; i++) jdag_edge(d, 0, i);
  for (int kind = 0; kind < 3; kind++) {
    reset_nodes(d);
    unsigned *order = jorder(n, kind, 11 + (uint64_t)kind); /* 0 first, last, anywhere */
    char what[64];
    snprintf(what, sizeof what, "fan-out %s", jorder_name[kind]);
    run_dag(d, &p, 1, order, 13, what);
    free(order);
  }
  jdag_free(d);
}

static void case_fan_out(void) { ON_POOLS(fan_out, 1, 2, 4); }

/* ---- the same pair more than once ----------------------------------------- */

static void dup_edges(pool_t *p) {
  /* 0 -> 1 twice; 0 -> 2 forty times (blocks); 1 -> 3, 2 -> 3 three times
   * each; 0 -> 3 once. */
  jdag *d = jdag_new(4);
  jdag_edge(d, 0, 1);
  jdag_edge(d, 0, 1);
  for (int k = 0; k < 40; k++) jdag_edge(d, 0, 2);
  for (int k = 0; k < 3; k++) {
    jdag_edge(d, 1, 3);
    jdag_edge(d, 2, 3);
  }
  jdag_edge(d, 0, 3);
  unsigned long rounds = check_iters(500);
  for (unsigned long r = 0; r < rounds; r++) {
    reset_nodes(d);
    d->n[0].spin = r % 2 ? 500 : 0;
    unsigned *o = jorder(4, (int)(r % 3), r + 1);
    run_dag(d, &p, 1, o, r, "duplicate edges");
    free(o);
  }
  jdag_free(d);
}

static void case_dup_edges(void) { ON_POOLS(dup_edges, 1, 2, 4); }

/* ---- random graphs ------------------------------------------------------- */

/* A random graph of n nodes: most nodes have 0 to 4 predecessors, near
 * ones mostly; one in 20 has 30 to 60 (edge blocks); a few duplicates. */
static jdag *random_dag(size_t n, uint64_t *seed) {
  jdag *d = jdag_new(n);
  for (size_t i = 1; i < n; i++) {
    uint64_t r = rng_next(seed);
    unsigned k = r % 20 == 0 ? 30 + (unsigned)(r >> 8) % 31 : (unsigned)(r >> 8) % 5;
    for (unsigned e = 0; e < k; e++) {
      uint64_t x = rng_next(seed);
      size_t span = x % 4 == 0 ? i : (i < 64 ? i : 64);
      size_t pr = i - 1 - (size_t)((x >> 4) % span);
      jdag_edge(d, pr, i);
      if ((x >> 40) % 16 == 0) jdag_edge(d, pr, i); /* the same pair again */
    }
  }
  return d;
}

enum { RDAG_N = 3000 };

static void random_offline(pool_t *p) {
  unsigned long rounds = check_iters(10);
  uint64_t seed = 0x5eed0000u + pool_threads(p);
  for (unsigned long r = 0; r < rounds; r++) {
    jdag *d = random_dag(RDAG_N, &seed);
    for (int kind = 0; kind < 3; kind++) {
      reset_nodes(d);
      for (size_t i = 0; i < d->count; i++) d->n[i].spin = (unsigned)(rng_next(&seed) % 300);
      unsigned *o = jorder(d->count, kind, rng_next(&seed));
      char what[80];
      snprintf(what, sizeof what, "random graph %lu, %s, %u workers", r, jorder_name[kind],
               pool_threads(p));
      run_dag(d, &p, 1, o, rng_next(&seed), what);
      free(o);
    }
    jdag_free(d);
  }
}

static void case_random_dag(void) { ON_POOLS(random_offline, 1, 2, 4); }

/* Built while it runs: node i is initialised, put after its predecessors
 * (lower indices, already started: running, queued or complete) and
 * started before node i + 1 is initialised. */
static void random_online_on(pool_t *const *pools, size_t npools, uint64_t seed0) {
  unsigned long rounds = check_iters(12);
  uint64_t seed = seed0;
  for (unsigned long r = 0; r < rounds; r++) {
    jdag *d = random_dag(RDAG_N, &seed);
    reset_nodes(d);
    jdag_seal(d);
    for (size_t i = 0; i < d->count; i++) d->n[i].spin = (unsigned)(rng_next(&seed) % 400);
    for (size_t i = 0; i < d->count; i++) {
      jdag_init(d, i, pools[(i * 7 + r) % npools]);
      for (size_t k = d->pstart[i]; k < d->pstart[i + 1]; k++)
        CHECK_OK(pool_job_after(&d->n[i].job, &d->n[d->plist[k]].job));
      CHECK_OK(pool_job_start(&d->n[i].job));
    }
    jdag_wait(d, rng_next(&seed));
    char what[80];
    snprintf(what, sizeof what, "random graph %lu built while running, %zu pools", r, npools);
    jdag_check(d, what);
    jdag_free(d);
  }
}

static void random_online(pool_t *p) { random_online_on(&p, 1, 0x0dd0000u + pool_threads(p)); }

static void case_random_online(void) { ON_POOLS(random_online, 1, 2, 4); }

static void case_random_two_pools(void) {
  static const unsigned sizes[][2] = {{1, 1}, {1, 2}, {2, 2}, {4, 1}};
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    pool_t *pools[2] = {make_pool(sizes[s][0]), make_pool(sizes[s][1])};
    random_online_on(pools, 2, 0x7700u + s);
    /* And all built first, then started in a random order. */
    uint64_t seed = 0x7800u + s;
    jdag *d = random_dag(RDAG_N, &seed);
    reset_nodes(d);
    unsigned *o = jorder(d->count, 2, rng_next(&seed));
    run_dag(d, pools, 2, o, rng_next(&seed), "random graph over two pools");
    free(o);
    jdag_free(d);
    CHECK_OK(pool_destroy(pools[0]));
    CHECK_OK(pool_destroy(pools[1]));
  }
}

/* ---- a chain of a million ---------------------------------------------------- */

typedef struct tiny {
  pool_job_t job;
  unsigned char *done; /* plain bytes: the edges order them */
  size_t i;
} tiny;

static atomic_ulong tiny_bad;

static void tiny_fn(void *arg) {
  tiny *t = arg;
  if (t->i > 0 && t->done[t->i - 1] != 1) atomic_fetch_add(&tiny_bad, 1);
  if (t->done[t->i] != 0) atomic_fetch_add(&tiny_bad, 1);
  t->done[t->i] = 1;
}

static void chain_million(pool_t *p) {
  size_t n = job_rounds(1000000, 200000);
  tiny *t = malloc(n * sizeof *t);
  unsigned char *done = calloc(n, 1);
  CHECK(t && done);
  atomic_store(&tiny_bad, 0);
  for (size_t i = 0; i < n; i++) {
    t[i].done = done;
    t[i].i = i;
    CHECK_OK(pool_job_init(&t[i].job, p, tiny_fn, &t[i]));
    if (i) CHECK_OK(pool_job_after(&t[i].job, &t[i - 1].job));
  }
  /* Last to first: the chain runs as continuations, one after another. */
  for (size_t i = n; i-- > 0;) CHECK_OK(pool_job_start(&t[i].job));
  CHECK_OK(pool_job_wait(&t[n - 1].job));
  for (size_t i = 0; i < n; i++) {
    if (done[i] != 1) FAIL("job %zu of the chain did not run\n", i);
    CHECK_OK(pool_job_status(&t[i].job));
  }
  CHECK_EQ(atomic_load(&tiny_bad), 0);
  free(done);
  free(t);
}

static void case_chain_million(void) { ON_POOLS(chain_million, 1, 2); }

TEST_MAIN(600, TEST_CASE(diamond), TEST_CASE(chain), TEST_CASE(fan_in), TEST_CASE(fan_out),
          TEST_CASE(dup_edges), TEST_CASE(random_dag), TEST_CASE(random_online),
          TEST_CASE(random_two_pools), TEST_CASE(chain_million))
