/* SPDX-License-Identifier: MIT */
/* Sync orders: spawn K children, then pool_sync them in FIFO, LIFO and
 * random (seeded) order. Right after each pool_sync returns, that child has
 * run exactly once and its result is there; at the end every child ran
 * exactly once. Children do nested spawn/sync work of their own (so frames
 * get published and stolen), some sync their own children out of order.
 * K from 1 to past the private-frame array (256) and the deque's initial
 * size, from inside a task and from an outside thread, on 1, 2 and 4
 * workers; frames are reused after their sync. Also an interleaved pattern:
 * spawn some, sync some (any order), spawn more.
 * Cases: fifo, lifo, random (the final order; the interleaved pattern in
 * each). */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <wspool.h>

#include "check.h"
#include "testutil.h"

enum { ORDER_FIFO, ORDER_LIFO, ORDER_RANDOM };

static void make_order(unsigned *ord, unsigned k, int order, uint64_t *seed) {
  for (unsigned i = 0; i < k; i++) ord[i] = order == ORDER_LIFO ? k - 1 - i : i;
  if (order == ORDER_RANDOM) shuffle(ord, k, seed);
}

/* ---- children ----------------------------------------------------------- */

typedef struct child {
  unsigned idx;
  uint64_t seed;
  atomic_uint runs;
  long result;
} child;

/* A child: a little fib, and for some of them a few grandchildren synced
 * in a random order. */
static void child_fn(void *p) {
  child *c = p;
  atomic_fetch_add(&c->runs, 1);
  int n = (int)(c->idx % 12);
  fib_arg f = {n, 0};
  fib_task(&f);
  long r = f.r;
  if (c->idx % 3 == 0) {
    enum { G = 6 };
    fib_arg g[G];
    pool_task_t t[G];
    unsigned ord[G];
    for (unsigned i = 0; i < G; i++) {
      g[i] = (fib_arg){(int)i + 3, 0};
      CHECK_OK(pool_spawn(NULL, &t[i], fib_task, &g[i]));
    }
    uint64_t s = c->seed | 1;
    make_order(ord, G, (int)((c->idx / 3) % 3), &s);
    for (unsigned i = 0; i < G; i++) {
      CHECK_OK(pool_sync(&t[ord[i]]));
      CHECK_EQ(g[ord[i]].r, fib_seq((int)ord[i] + 3));
    }
    for (unsigned i = 0; i < G; i++) r += g[i].r;
  }
  c->result = r;
}

static long child_expect(unsigned idx) {
  long r = fib_seq((int)(idx % 12));
  if (idx % 3 == 0)
    for (int i = 0; i < 6; i++) r += fib_seq(i + 3);
  return r;
}

/* ---- one round: spawn K, sync in an order -------------------------------- */

typedef struct round_arg {
  pool_t *pool; /* spawn target: NULL inside */
  unsigned k;
  int order;
  uint64_t seed;
  child *kids;
  pool_task_t *frames;
  unsigned *ord;
} round_arg;

static void do_round(round_arg *a) {
  for (unsigned i = 0; i < a->k; i++) {
    a->kids[i].idx = i;
    a->kids[i].seed = a->seed + i;
    atomic_store(&a->kids[i].runs, 0);
    a->kids[i].result = -1;
  }
  for (unsigned i = 0; i < a->k; i++)
    CHECK_OK(pool_spawn(a->pool, &a->frames[i], child_fn, &a->kids[i]));
  make_order(a->ord, a->k, a->order, &a->seed);
  for (unsigned i = 0; i < a->k; i++) {
    unsigned c = a->ord[i];
    CHECK_OK(pool_sync(&a->frames[c]));
    /* Synced: it has run, exactly once, and its result is visible. */
    CHECK_EQ(atomic_load(&a->kids[c].runs), 1);
    CHECK_EQ(a->kids[c].result, child_expect(c));
  }
  for (unsigned i = 0; i < a->k; i++) {
    CHECK_EQ(atomic_load(&a->kids[i].runs), 1);
    CHECK_EQ(a->kids[i].result, child_expect(i));
  }
}

/* Interleaved: spawn a batch, sync a random subset of what is live (in
 * random order), spawn more, ... then sync the rest in the given order. */
static void do_interleaved(round_arg *a) {
  unsigned k = a->k;
  unsigned char *live = calloc(k, 1);
  CHECK(live);
  for (unsigned i = 0; i < k; i++) {
    a->kids[i].idx = i;
    a->kids[i].seed = a->seed + i;
    atomic_store(&a->kids[i].runs, 0);
    a->kids[i].result = -1;
  }
  unsigned spawned = 0;
  while (spawned < k) {
    unsigned batch = 1 + (unsigned)(rng_next(&a->seed) % 16);
    for (unsigned b = 0; b < batch && spawned < k; b++, spawned++) {
      CHECK_OK(pool_spawn(a->pool, &a->frames[spawned], child_fn, &a->kids[spawned]));
      live[spawned] = 1;
    }
    unsigned n = 0;
    for (unsigned i = 0; i < spawned; i++)
      if (live[i]) a->ord[n++] = i;
    shuffle(a->ord, n, &a->seed);
    unsigned nsync = n ? (unsigned)(rng_next(&a->seed) % (n + 1)) : 0;
    for (unsigned i = 0; i < nsync; i++) {
      unsigned c = a->ord[i];
      CHECK_OK(pool_sync(&a->frames[c]));
      CHECK_EQ(atomic_load(&a->kids[c].runs), 1);
      CHECK_EQ(a->kids[c].result, child_expect(c));
      live[c] = 0;
    }
  }
  unsigned n = 0;
  for (unsigned i = 0; i < k; i++)
    if (live[i]) a->ord[n++] = i;
  if (a->order == ORDER_LIFO)
    for (unsigned i = 0; i < n / 2; i++) {
      unsigned t = a->ord[i];
      a->ord[i] = a->ord[n - 1 - i];
      a->ord[n - 1 - i] = t;
    }
  else if (a->order == ORDER_RANDOM)
    shuffle(a->ord, n, &a->seed);
  for (unsigned i = 0; i < n; i++) {
    unsigned c = a->ord[i];
    CHECK_OK(pool_sync(&a->frames[c]));
    CHECK_EQ(atomic_load(&a->kids[c].runs), 1);
    CHECK_EQ(a->kids[c].result, child_expect(c));
  }
  for (unsigned i = 0; i < k; i++) CHECK_EQ(atomic_load(&a->kids[i].runs), 1);
  free(live);
}

static void round_task(void *p) {
  round_arg *a = p;
  /* Same frames, three rounds: frames are reusable after their sync. */
  do_round(a);
  a->seed += 7777;
  do_round(a);
  do_interleaved(a);
}

static void test(unsigned threads, unsigned k, int order, uint64_t seed) {
  pool_t *pool = make_pool(threads);
  round_arg a = {NULL, k, order, seed, calloc(k, sizeof(child)), calloc(k, sizeof(pool_task_t)),
                 calloc(k, sizeof(unsigned))};
  CHECK(a.kids && a.frames && a.ord);
  /* Inside a task. */
  CHECK_OK(pool_submit(pool, round_task, &a));
  CHECK_OK(pool_wait_idle(pool));
  /* From this outside thread (global queue path). */
  a.pool = pool;
  round_task(&a);
  CHECK_OK(pool_destroy(pool));
  free(a.kids);
  free(a.frames);
  free(a.ord);
}

/* Every K on 1, 2 and 4 workers, ending in `order`; each run's seed is
 * fixed by its place in the sweep over workers, K and order. */
static void sweep(int order) {
  const unsigned ks[] = {1, 2, 3, 10, 100, 257, 600, 3000};
  const unsigned threads[] = {1, 2, 4};
  const unsigned nk = sizeof ks / sizeof ks[0];
  for (unsigned ti = 0; ti < 3; ti++)
    for (unsigned ki = 0; ki < nk; ki++) {
      uint64_t place = ((uint64_t)ti * nk + ki) * 3 + (uint64_t)order;
      test(threads[ti], ks[ki], order, 0x5EED5EED12345ull + 0x1001 * (place + 1));
    }
}

static void case_fifo(void) { sweep(ORDER_FIFO); }
static void case_lifo(void) { sweep(ORDER_LIFO); }
static void case_random(void) { sweep(ORDER_RANDOM); }

TEST_MAIN(240, TEST_CASE(fifo), TEST_CASE(lifo), TEST_CASE(random))
