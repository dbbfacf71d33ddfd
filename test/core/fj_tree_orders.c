/* SPDX-License-Identifier: MIT */
/* Unbalanced trees (in the manner of UTS) with one task per node, children
 * synced in every order: LIFO, FIFO, random, and interleaved with new
 * spawns (spawn a batch, sync a random part of what is outstanding, spawn
 * more, ...), some children taken back with pool_take and run by the
 * caller. Trees whose nodes have 1, 8 and 2000 children (binomial: a node
 * has m children with probability q, the root b0), so an out-of-order sync
 * runs deep subtrees with many pending frames of the ancestors below it.
 * Every run must count exactly the nodes the sequential count finds, on 1,
 * 2 and 4 workers. Cases, one per tree: chains (m=1), m8, m2000. */
#include <stdint.h>
#include <stdlib.h>
#include <wspool.h>

#include "check.h"
#include "testutil.h"

typedef struct tree {
  const char *name;
  unsigned b0, m;
  double q;
} tree;

static const tree trees[] = {
    {"m=1 (chains)", 300, 1, 0.99},
    {"m=8", 1000, 8, 0.11},
    {"m=2000", 2000, 2000, 0.0004},
};

enum { ORDER_LIFO, ORDER_FIFO, ORDER_RANDOM, ORDER_INTERLEAVED, NORDERS };
static const char *const order_name[] = {"LIFO", "FIFO", "random", "interleaved"};

static uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

static uint64_t child_state(uint64_t parent, unsigned i) { return mix(parent ^ mix(i + 1)); }

static const tree *cur;

static unsigned nchildren(uint64_t s, int root) {
  if (root) return cur->b0;
  return (double)(mix(s ^ 0xABCDEFull) >> 11) * 0x1.0p-53 < cur->q ? cur->m : 0;
}

static long count_seq(uint64_t s, int root) {
  unsigned n = nchildren(s, root);
  long c = 1;
  for (unsigned i = 0; i < n; i++) c += count_seq(child_state(s, i), 0);
  return c;
}

/* ---- the parallel count ---- */

typedef struct node_arg {
  uint64_t state;
  int order;
  long count;
} node_arg;

typedef struct kid {
  pool_task_t t;
  node_arg a;
} kid;

static long count_par(uint64_t s, int root, int order);

static void node_task(void *p) {
  node_arg *a = p;
  a->count = count_par(a->state, 0, a->order);
}

/* Wait for child k: a sync, or (for some) a take that runs it here. */
static void finish(kid *k, uint64_t s) {
  if (mix(s ^ k->a.state) & 1) {
    int rc = pool_take(&k->t);
    if (rc == POOL_TAKEN)
      node_task(&k->a);
    else
      CHECK_EQ(rc, 0);
  } else {
    CHECK_OK(pool_sync(&k->t));
  }
}

/* Fisher-Yates driven by the tree's own hash. */
static void mix_shuffle(unsigned *v, unsigned n, uint64_t *r) {
  for (unsigned i = n; i > 1; i--) {
    *r = mix(*r);
    unsigned j = (unsigned)(*r % i), t = v[i - 1];
    v[i - 1] = v[j];
    v[j] = t;
  }
}

static long count_par(uint64_t s, int root, int order) {
  unsigned n = nchildren(s, root);
  if (n == 0) return 1;
  kid onstack[8];
  unsigned ordstack[8];
  kid *k = n <= 8 ? onstack : malloc(sizeof(kid) * n);
  unsigned *ord = n <= 8 ? ordstack : malloc(sizeof(unsigned) * n);
  CHECK(k && ord);
  uint64_t r = s;
  if (order == ORDER_INTERLEAVED) {
    /* out[0..nout): spawned, not yet synced. */
    unsigned spawned = 0, nout = 0;
    while (spawned < n) {
      r = mix(r);
      unsigned batch = 1 + (unsigned)(r % 5);
      for (unsigned b = 0; b < batch && spawned < n; b++, spawned++) {
        k[spawned].a = (node_arg){child_state(s, spawned), order, -1};
        CHECK_OK(pool_spawn(NULL, &k[spawned].t, node_task, &k[spawned].a));
        ord[nout++] = spawned;
      }
      mix_shuffle(ord, nout, &r);
      r = mix(r);
      unsigned nsync = (unsigned)(r % (nout + 1));
      for (unsigned j = 0; j < nsync; j++) finish(&k[ord[--nout]], s);
    }
    mix_shuffle(ord, nout, &r);
    while (nout) finish(&k[ord[--nout]], s);
  } else {
    for (unsigned i = 0; i < n; i++) {
      k[i].a = (node_arg){child_state(s, i), order, -1};
      CHECK_OK(pool_spawn(NULL, &k[i].t, node_task, &k[i].a));
      ord[i] = order == ORDER_LIFO ? n - 1 - i : i;
    }
    if (order == ORDER_RANDOM) mix_shuffle(ord, n, &r);
    for (unsigned i = 0; i < n; i++) finish(&k[ord[i]], s);
  }
  long c = 1;
  for (unsigned i = 0; i < n; i++) {
    CHECK(k[i].a.count > 0);
    c += k[i].a.count;
  }
  if (k != onstack) free(k);
  if (ord != ordstack) free(ord);
  return c;
}

typedef struct root_arg {
  uint64_t seed;
  int order;
  long count;
} root_arg;

static void root_task(void *p) {
  root_arg *a = p;
  a->count = count_par(a->seed, 1, a->order);
}

/* Every order on 1, 2 and 4 workers, for WSPOOL_STRESS times 3 seeds of
 * tree `ti`. */
static void run_tree(unsigned ti) {
  const unsigned nthr[] = {1, 2, 4};
  unsigned long reps = check_iters(3);
  cur = &trees[ti];
  for (unsigned long rep = 0; rep < reps; rep++) {
    uint64_t seed = 1000 * ti + rep + 1;
    long expect = count_seq(seed, 1);
    for (unsigned wi = 0; wi < 3; wi++) {
      pool_t *pool = make_pool(nthr[wi]);
      for (int order = 0; order < NORDERS; order++) {
        root_arg a = {seed, order, -1};
        CHECK_OK(pool_submit(pool, root_task, &a));
        CHECK_OK(pool_wait_idle(pool));
        if (a.count != expect)
          fprintf(stderr, "tree %s, %s, %u workers: %ld nodes, expected %ld\n", cur->name,
                  order_name[order], nthr[wi], a.count, expect);
        CHECK_EQ(a.count, expect);
      }
      CHECK_OK(pool_destroy(pool));
    }
    if (rep == 0) fprintf(stderr, "tree %s: %ld nodes, every order exact\n", cur->name, expect);
  }
}

static void case_chains(void) { run_tree(0); }
static void case_m8(void) { run_tree(1); }
static void case_m2000(void) { run_tree(2); }

TEST_MAIN(240, TEST_CASE(chains), TEST_CASE(m8), TEST_CASE(m2000))
