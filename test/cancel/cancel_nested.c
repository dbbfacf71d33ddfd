/* SPDX-License-Identifier: MIT */
/* Where cancellation reaches (include/wspool.h, \ref cancel): a unit
 * started inside work is nested in it; cancelling a unit cancels what is
 * nested in it, transitively, across pools, and nothing else.
 *
 *  groups5       main opens group O and spawns `top`; top opens groups S
 *                and G0 (both nested in O). G0's children open groups
 *                nested 5 deep (G0 > G1 > G2 > G3 > G4, fanout 3), whose
 *                leaves are G4's children. The first leaf to run cancels
 *                G0; the others wait until it did, so every wait in the
 *                tree ends after the cancel: each returns ECANCELED, each
 *                node sees pool_cancelled() after its wait, children not
 *                started are skipped (run + skipped == spawned, exactly).
 *                After cancelling, that leaf spawns S's tree (same shape)
 *                into S: not nested in G0, all of it runs, every wait
 *                returns 0 and no node of it sees pool_cancelled(); neither
 *                does top after its waits, and O waits 0.
 *  groups5_pools the same with G0, G1 on one pool and G2..G4 on another
 *                (nested across pools), pools of 1 and of 2 workers.
 *  mixed5        five units of every kind nested in each other: G0 (group)
 *                > L1 (pool_parallel_for body) > J2 (pool_join halves) >
 *                G3 (group) > L4 (pool_parallel_for_try body) > leaves. The
 *                first leaf cancels G0: every loop, join and wait returns
 *                ECANCELED; group children + join halves run + skipped,
 *                and loop items run + skipped_items, add up exactly. S's
 *                tree of the same shape, spawned after the cancel, runs in
 *                full and returns 0 everywhere.
 *  loop_in_group a child's pool_parallel_for of 200000 items; its group is
 *                cancelled midway by a body (once a shared count passes a
 *                random threshold) or by an outside thread: each index runs
 *                at most once, items run + skipped_items == n; the loop
 *                returns ECANCELED (or 0 having run everything, when the
 *                thread's cancel came late); a loop in a sibling group at
 *                the same time runs in full and returns 0.
 *  fail_upward   failures do not travel up: a grandchild's pool_fail(), a
 *                failing loop body and a failing join half make their own
 *                unit return their code, the child that waited on them is
 *                not cancelled, and the outer group waits 0 with every
 *                child run.
 * Pools of 1, 2 and 4 workers unless said. No timing assertions; stress
 * scales the round counts (WSPOOL_STRESS). */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <wspool.h>

#include "cancel_util.h"
#include "check.h"
#include "testutil.h"

enum { CODE_BASE = 10000 };

/* ---- groups5 ---------------------------------------------------------------- */

enum { DEPTH = 5, FAN = 3 };

typedef struct tree {
  int cancelled;          /* 1: G0's tree, 0: S's */
  pool_t *pools[DEPTH];   /* pools[d]: the pool of the groups level-d nodes open (0: G0, S) */
  atomic_ulong spawned;   /* group children spawned */
  atomic_ulong ran;       /* group children run */
  atomic_ulong leaves;
} tree;

typedef struct node {
  tree *t;
  int level; /* 1..DEPTH; DEPTH: a leaf */
} node;

static tree tree_c, tree_s;
static pool_group_t *g0, *sib;
static atomic_uint tickets;
static atomic_int cancel_done;
static node s_kids[FAN];

static void node_fn(void *arg);

static void spawn_level(tree *t, pool_group_t *g, node *kids, int level) {
  for (int k = 0; k < FAN; k++) {
    kids[k] = (node){t, level};
    CHECK_OK(pool_group_spawn(g, node_fn, &kids[k]));
    atomic_fetch_add(&t->spawned, 1);
  }
}

/* The first leaf of G0's tree cancels G0 and starts S's tree; the others
 * wait for that. */
static void leaf(tree *t) {
  atomic_fetch_add(&t->leaves, 1);
  if (!t->cancelled) {
    if (pool_cancelled()) FAIL("a leaf of the sibling tree sees a cancel\n");
    return;
  }
  if (atomic_fetch_add(&tickets, 1) == 0) {
    CHECK_OK(pool_group_cancel(g0));
    CHECK_EQ(pool_cancelled(), 1);
    spawn_level(&tree_s, sib, s_kids, 1);
    atomic_store(&cancel_done, 1);
  } else {
    while (!atomic_load(&cancel_done)) sched_yield();
    if (!pool_cancelled()) FAIL("a leaf 5 groups deep in a cancelled group misses the cancel\n");
  }
}

static void node_fn(void *arg) {
  node *n = arg;
  tree *t = n->t;
  atomic_fetch_add(&t->ran, 1);
  if (n->level == DEPTH) {
    leaf(t);
    return;
  }
  pool_group_t g;
  node kids[FAN];
  CHECK_OK(pool_group_init(&g, t->pools[n->level]));
  spawn_level(t, &g, kids, n->level + 1);
  int rc = pool_group_wait(&g);
  int expect = t->cancelled ? ECANCELED : 0;
  if (rc != expect)
    FAIL("%s tree, a group opened at level %d waited %d (expected %d)\n",
         t->cancelled ? "cancelled" : "sibling", n->level, rc, expect);
  if (pool_cancelled() != t->cancelled)
    FAIL("%s tree, level %d: pool_cancelled() %d after the wait\n",
         t->cancelled ? "cancelled" : "sibling", n->level, pool_cancelled());
}

static int top_cancelled_after = -1;

static void top_fn(void *arg) {
  (void)arg;
  static node c_kids[FAN];
  pool_group_t gc, gs;
  CHECK_OK(pool_group_init(&gs, tree_s.pools[0]));
  CHECK_OK(pool_group_init(&gc, tree_c.pools[0]));
  sib = &gs;
  g0 = &gc;
  spawn_level(&tree_c, &gc, c_kids, 1);
  CHECK_EQ(pool_group_wait(&gc), ECANCELED);
  CHECK_OK(pool_group_wait(&gs));
  top_cancelled_after = pool_cancelled();
}

static unsigned long tree_nodes(void) {
  unsigned long n = 0, level = 1;
  for (int d = 1; d <= DEPTH; d++) {
    level *= FAN;
    n += level;
  }
  return n;
}

static void tree_reset(tree *t, int cancelled, pool_t *const *pools) {
  t->cancelled = cancelled;
  memcpy(t->pools, pools, sizeof t->pools);
  atomic_store(&t->spawned, 0);
  atomic_store(&t->ran, 0);
  atomic_store(&t->leaves, 0);
}

/* Rounds of the groups5 scenario with the groups of level d on pools[d];
 * `all` lists the distinct pools (for the skip counters). */
static void groups5_on(pool_t *const *pools, pool_t *const *all, size_t nall) {
  skip_count base = skip_read_n(all, nall);
  uint64_t expect_skipped = 0;
  unsigned long rounds = check_iters(30);
  for (unsigned long r = 0; r < rounds; r++) {
    tree_reset(&tree_c, 1, pools);
    tree_reset(&tree_s, 0, pools);
    atomic_store(&tickets, 0);
    atomic_store(&cancel_done, 0);
    top_cancelled_after = -1;
    pool_group_t o;
    CHECK_OK(pool_group_init(&o, pools[0]));
    CHECK_OK(pool_group_spawn(&o, top_fn, NULL));
    CHECK_OK(pool_group_wait(&o));
    CHECK_EQ(top_cancelled_after, 0);
    /* S's tree: everything. */
    CHECK_EQ(atomic_load(&tree_s.spawned), tree_nodes());
    CHECK_EQ(atomic_load(&tree_s.ran), tree_nodes());
    CHECK_EQ(atomic_load(&tree_s.leaves), (unsigned long)FAN * FAN * FAN * FAN * FAN);
    /* G0's tree: at least the path to the first leaf. */
    unsigned long sp = atomic_load(&tree_c.spawned), ran = atomic_load(&tree_c.ran);
    CHECK(ran >= DEPTH && ran <= sp);
    CHECK(atomic_load(&tree_c.leaves) >= 1);
    expect_skipped += sp - ran;
    skip_expect_n(all, nall, base, expect_skipped, 0, "groups5");
  }
}

static void groups5(pool_t *p) {
  pool_t *pools[DEPTH] = {p, p, p, p, p};
  groups5_on(pools, &p, 1);
}

static void case_groups5(void) { ON_POOLS(groups5, 1, 2, 4); }

static void case_groups5_pools(void) {
  for (unsigned n = 1; n <= 2; n++) {
    pool_t *a = make_pool(n), *b = make_pool(n);
    pool_t *pools[DEPTH] = {a, a, b, b, b};
    pool_t *all[2] = {a, b};
    groups5_on(pools, all, 2);
    CHECK_OK(pool_destroy(b));
    CHECK_OK(pool_destroy(a));
  }
}

/* ---- mixed5 ------------------------------------------------------------------ */

enum { MF = 3 }; /* every fanout: group children, loop items */

typedef struct mtree {
  int cancelled;
  atomic_ulong children, children_ran; /* group children spawned / run */
  atomic_ulong joins, halves_ran;
  atomic_ulong items, items_ran;       /* loop items of the loops called / run */
  atomic_ulong leaves;
} mtree;

static mtree mt_c, mt_s;
static pool_group_t *m_g0, *m_sib;
static atomic_uint m_tickets;
static atomic_int m_cancel_done;

static void m_check(mtree *t, int rc, const char *what) {
  int expect = t->cancelled ? ECANCELED : 0;
  if (rc != expect)
    FAIL("%s tree: %s returned %d (expected %d)\n", t->cancelled ? "cancelled" : "sibling", what,
         rc, expect);
  if (pool_cancelled() != t->cancelled)
    FAIL("%s tree: pool_cancelled() %d after %s\n", t->cancelled ? "cancelled" : "sibling",
         pool_cancelled(), what);
}

static void m_level1(void *arg);

static void m_spawn(mtree *t, pool_group_t *g, pool_fn fn) {
  for (int k = 0; k < MF; k++) {
    CHECK_OK(pool_group_spawn(g, fn, t));
    atomic_fetch_add(&t->children, 1);
  }
}

static void m_leaf(mtree *t) {
  atomic_fetch_add(&t->leaves, 1);
  if (!t->cancelled) {
    if (pool_cancelled()) FAIL("a leaf of the sibling tree sees a cancel\n");
    return;
  }
  if (atomic_fetch_add(&m_tickets, 1) == 0) {
    CHECK_OK(pool_group_cancel(m_g0));
    CHECK_EQ(pool_cancelled(), 1);
    m_spawn(&mt_s, m_sib, m_level1);
    atomic_store(&m_cancel_done, 1);
  } else {
    while (!atomic_load(&m_cancel_done)) sched_yield();
    if (!pool_cancelled()) FAIL("a leaf in L4 > G3 > J2 > L1 > G0 misses G0's cancel\n");
  }
}

/* L4's body: leaves. */
static int m_l4_body(size_t b, size_t e, void *v) {
  mtree *t = v;
  atomic_fetch_add(&t->items_ran, e - b);
  for (size_t i = b; i < e; i++) m_leaf(t);
  return 0;
}

/* G3's children: run L4. */
static void m_level4(void *v) {
  mtree *t = v;
  atomic_fetch_add(&t->children_ran, 1);
  atomic_fetch_add(&t->items, MF);
  m_check(t, pool_parallel_for_try(NULL, 0, MF, 1, m_l4_body, t), "L4 (pool_parallel_for_try)");
}

/* J2's halves: open G3. */
static void m_half(void *v) {
  mtree *t = v;
  atomic_fetch_add(&t->halves_ran, 1);
  pool_group_t g;
  CHECK_OK(pool_group_init(&g, NULL));
  m_spawn(t, &g, m_level4);
  m_check(t, pool_group_wait(&g), "G3's wait");
}

/* L1's body: J2 for each item. */
static void m_l1_body(size_t b, size_t e, void *v) {
  mtree *t = v;
  atomic_fetch_add(&t->items_ran, e - b);
  for (size_t i = b; i < e; i++) {
    atomic_fetch_add(&t->joins, 1);
    m_check(t, pool_join(NULL, m_half, t, m_half, t), "J2 (pool_join)");
  }
}

/* G0's (and S's) children: run L1. */
static void m_level1(void *v) {
  mtree *t = v;
  atomic_fetch_add(&t->children_ran, 1);
  atomic_fetch_add(&t->items, MF);
  m_check(t, pool_parallel_for(NULL, 0, MF, 1, m_l1_body, t), "L1 (pool_parallel_for)");
}

static int m_top_cancelled_after = -1;

static void m_top(void *arg) {
  (void)arg;
  pool_group_t gc, gs;
  CHECK_OK(pool_group_init(&gs, NULL));
  CHECK_OK(pool_group_init(&gc, NULL));
  m_sib = &gs;
  m_g0 = &gc;
  m_spawn(&mt_c, &gc, m_level1);
  CHECK_EQ(pool_group_wait(&gc), ECANCELED);
  CHECK_OK(pool_group_wait(&gs));
  m_top_cancelled_after = pool_cancelled();
}

static void mtree_reset(mtree *t, int cancelled) {
  memset(t, 0, sizeof *t);
  t->cancelled = cancelled;
}

static void mixed5(pool_t *p) {
  skip_count base = skip_read(p);
  uint64_t expect_skipped = 0, expect_items = 0;
  unsigned long rounds = check_iters(30);
  for (unsigned long r = 0; r < rounds; r++) {
    mtree_reset(&mt_c, 1);
    mtree_reset(&mt_s, 0);
    atomic_store(&m_tickets, 0);
    atomic_store(&m_cancel_done, 0);
    m_top_cancelled_after = -1;
    pool_group_t o;
    CHECK_OK(pool_group_init(&o, p));
    CHECK_OK(pool_group_spawn(&o, m_top, NULL));
    CHECK_OK(pool_group_wait(&o));
    CHECK_EQ(m_top_cancelled_after, 0);
    /* S: all of it. Level-1 children MF; items MF each; a join per item;
     * MF children per half; MF items each, one leaf per item. */
    unsigned long joins = MF * MF, halves = 2 * joins, g3 = halves * MF;
    CHECK_EQ(atomic_load(&mt_s.children), MF + g3);
    CHECK_EQ(atomic_load(&mt_s.children_ran), MF + g3);
    CHECK_EQ(atomic_load(&mt_s.joins), joins);
    CHECK_EQ(atomic_load(&mt_s.halves_ran), halves);
    CHECK_EQ(atomic_load(&mt_s.items), MF * MF + g3 * MF);
    CHECK_EQ(atomic_load(&mt_s.items_ran), MF * MF + g3 * MF);
    CHECK_EQ(atomic_load(&mt_s.leaves), g3 * MF);
    /* G0's tree: accounting. */
    unsigned long ch = atomic_load(&mt_c.children), chr = atomic_load(&mt_c.children_ran);
    unsigned long hv = 2 * atomic_load(&mt_c.joins), hvr = atomic_load(&mt_c.halves_ran);
    unsigned long it = atomic_load(&mt_c.items), itr = atomic_load(&mt_c.items_ran);
    CHECK(chr <= ch && hvr <= hv && itr <= it);
    CHECK(atomic_load(&mt_c.leaves) >= 1);
    expect_skipped += (ch - chr) + (hv - hvr);
    expect_items += it - itr;
    skip_expect(p, base, expect_skipped, expect_items, "mixed5");
  }
}

static void case_mixed5(void) { ON_POOLS(mixed5, 1, 2, 4); }

/* ---- loop_in_group --------------------------------------------------------------- */

enum { LG_N = 200000 };

typedef struct lg_state {
  pool_group_t g;
  atomic_uchar *seen;
  atomic_size_t ran;
  size_t threshold;
  size_t grain;
  atomic_int fired;     /* the cancel was issued */
  atomic_int canceled;  /* ... and returned */
  int by_thread;
  int loop_rc;
} lg_state;

static void lg_body(size_t b, size_t e, void *v) {
  lg_state *s = v;
  for (size_t i = b; i < e; i++)
    if (atomic_fetch_add_explicit(&s->seen[i], 1, memory_order_relaxed) != 0)
      FAIL("loop index %zu ran twice\n", i);
  size_t before = atomic_fetch_add(&s->ran, e - b);
  if (!s->by_thread && before + (e - b) > s->threshold && !atomic_exchange(&s->fired, 1)) {
    CHECK_OK(pool_group_cancel(&s->g));
    CHECK_EQ(pool_cancelled(), 1);
    atomic_store(&s->canceled, 1);
  }
}

static void lg_child(void *v) {
  lg_state *s = v;
  s->loop_rc = pool_parallel_for(NULL, 0, LG_N, s->grain, lg_body, s);
  /* The group's wait must come after the cancel. */
  if (s->by_thread)
    while (!atomic_load(&s->canceled)) sched_yield();
}

static void *lg_thread(void *v) {
  lg_state *s = v;
  while (atomic_load(&s->ran) <= s->threshold) sched_yield();
  CHECK_OK(pool_group_cancel(&s->g));
  atomic_store(&s->canceled, 1);
  return NULL;
}

static void lg_init(lg_state *s, size_t threshold, size_t grain, int by_thread) {
  memset((void *)s->seen, 0, LG_N);
  atomic_store(&s->ran, 0);
  atomic_store(&s->fired, 0);
  atomic_store(&s->canceled, 0);
  s->threshold = threshold;
  s->grain = grain;
  s->by_thread = by_thread;
  s->loop_rc = -1;
}

static void loop_in_group(pool_t *p) {
  skip_count base = skip_read(p);
  uint64_t expect_items = 0;
  lg_state *c = calloc(1, sizeof *c), *h = calloc(1, sizeof *h);
  CHECK(c && h);
  c->seen = calloc(LG_N, 1);
  h->seen = calloc(LG_N, 1);
  CHECK(c->seen && h->seen);
  uint64_t seed = 0x1009u + pool_threads(p);
  static const size_t grains[] = {0, 1, 16, 1000};
  unsigned long rounds = check_iters(12);
  for (unsigned long r = 0; r < rounds; r++) {
    int by_thread = (int)(r & 1);
    size_t grain = grains[(r / 2) % 4];
    size_t threshold = (size_t)(rng_next(&seed) % (by_thread ? LG_N / 2 : LG_N));
    lg_init(c, threshold, grain, by_thread);
    lg_init(h, LG_N, grain, 0); /* never fires */
    CHECK_OK(pool_group_init(&c->g, p));
    CHECK_OK(pool_group_init(&h->g, p));
    pthread_t t;
    if (by_thread) CHECK_OK(pthread_create(&t, NULL, lg_thread, c));
    CHECK_OK(pool_group_spawn(&c->g, lg_child, c));
    CHECK_OK(pool_group_spawn(&h->g, lg_child, h));
    CHECK_EQ(pool_group_wait(&c->g), ECANCELED);
    CHECK_OK(pool_group_wait(&h->g));
    if (by_thread) CHECK_OK(pthread_join(t, NULL));
    size_t ran = atomic_load(&c->ran);
    CHECK(ran > threshold && ran <= LG_N);
    if (c->loop_rc != ECANCELED && !(c->loop_rc == 0 && ran == LG_N && by_thread))
      FAIL("round %lu: the loop in the cancelled group returned %d having run %zu of %d\n", r,
           c->loop_rc, ran, LG_N);
    CHECK_OK(h->loop_rc);
    CHECK_EQ(atomic_load(&h->ran), LG_N);
    for (size_t i = 0; i < LG_N; i++)
      CHECK_EQ(atomic_load_explicit(&h->seen[i], memory_order_relaxed), 1);
    expect_items += LG_N - ran;
    skip_expect(p, base, 0, expect_items, "loop_in_group");
  }
  free((void *)c->seen);
  free((void *)h->seen);
  free(c);
  free(h);
}

static void case_loop_in_group(void) { ON_POOLS(loop_in_group, 1, 2, 4); }

/* ---- fail_upward ------------------------------------------------------------------ */

enum { FU_N = 8, FU_KIDS = 10 };

typedef struct fu_state {
  atomic_uint ran[FU_N];
  int group_rc[FU_N], loop_rc[FU_N], join_rc[FU_N];
  int cancelled_after[FU_N];
  atomic_uint grandkids[FU_N];
} fu_state;

static fu_state *fus;

static void fu_grandchild(void *v) {
  size_t i = (size_t)(uintptr_t)v;
  atomic_fetch_add(&fus->grandkids[i / FU_KIDS], 1);
  if (i % FU_KIDS == 3) CHECK_OK(pool_fail(CODE_BASE + (int)(i / FU_KIDS)));
}

static void fu_body(size_t b, size_t e, void *ctx) {
  size_t k = (size_t)(uintptr_t)ctx;
  if (b <= 500 && 500 < e) CHECK_OK(pool_fail(CODE_BASE + 100 + (int)k));
}

static void fu_half(void *v) {
  size_t k = (size_t)(uintptr_t)v;
  CHECK_OK(pool_fail(CODE_BASE + 200 + (int)k));
}

static void fu_noop(void *v) { (void)v; }

static void fu_child(void *v) {
  size_t k = (size_t)(uintptr_t)v;
  atomic_fetch_add(&fus->ran[k], 1);
  pool_group_t g;
  CHECK_OK(pool_group_init(&g, NULL));
  for (size_t j = 0; j < FU_KIDS; j++)
    CHECK_OK(pool_group_spawn(&g, fu_grandchild, (void *)(uintptr_t)(k * FU_KIDS + j)));
  fus->group_rc[k] = pool_group_wait(&g);
  fus->loop_rc[k] = pool_parallel_for(NULL, 0, 1000, 7, fu_body, (void *)(uintptr_t)k);
  fus->join_rc[k] = pool_join(NULL, fu_noop, NULL, fu_half, (void *)(uintptr_t)k);
  fus->cancelled_after[k] = pool_cancelled();
}

static void fail_upward(pool_t *p) {
  for (int round = 0; round < 20; round++) {
    fu_state s;
    memset(&s, 0, sizeof s);
    fus = &s;
    pool_group_t g;
    CHECK_OK(pool_group_init(&g, p));
    for (size_t k = 0; k < FU_N; k++)
      CHECK_OK(pool_group_spawn(&g, fu_child, (void *)(uintptr_t)k));
    CHECK_OK(pool_group_wait(&g));
    for (size_t k = 0; k < FU_N; k++) {
      CHECK_EQ(atomic_load(&s.ran[k]), 1);
      CHECK_EQ(s.group_rc[k], CODE_BASE + (int)k);
      CHECK_EQ(s.loop_rc[k], CODE_BASE + 100 + (int)k);
      CHECK_EQ(s.join_rc[k], CODE_BASE + 200 + (int)k);
      CHECK_EQ(s.cancelled_after[k], 0);
      CHECK(atomic_load(&s.grandkids[k]) >= 1 && atomic_load(&s.grandkids[k]) <= FU_KIDS);
    }
  }
}

static void case_fail_upward(void) { ON_POOLS(fail_upward, 1, 2, 4); }

TEST_MAIN(240, TEST_CASE(groups5), TEST_CASE(groups5_pools), TEST_CASE(mixed5),
          TEST_CASE(loop_in_group), TEST_CASE(fail_upward))
