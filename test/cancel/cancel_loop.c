/* SPDX-License-Identifier: MIT */
/* Loops stopped at a random point (include/wspool.h, \ref parfor and
 * \ref cancel): a loop of 10^6 items whose bodies fail once a shared count
 * of the items run passes a random threshold.
 *
 * Every round checks: each index ran at most once; the items run + the
 * pool's skipped_items (summed over workers, cumulative since the case
 * began) == 10^6 exactly; at least the items up to the threshold ran; the
 * loop returns the failure:
 *  - pool_parallel_for() with pool_fail(): every body past the threshold
 *    calls it, exactly one gets 0 and the others EALREADY, and the loop
 *    returns the winner's code;
 *  - pool_parallel_for_try(): every body past the threshold returns a code
 *    of its own, and the loop returns one of those;
 *  - pool_parallel_reduce() with pool_fail() (deterministic and not): as
 *    the plain loop, and the result holds the identity.
 * With pool_fail(), the winner reads how many bodies had started (every
 * body counts itself first thing, seq_cst) right after its call: at most
 * one body per worker may start after that. No body starts once the loop
 * returned.
 * Cases plain, try, reduce: each on pools of 1, 2 and 16 workers (16 more
 * than the CPUs here), grains automatic, 1, 7 and 4096, the loop called
 * from outside and (every other round) from a task. No timing assertions;
 * stress scales the round counts (WSPOOL_STRESS). */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <wspool.h>

#include "cancel_util.h"
#include "check.h"
#include "testutil.h"

enum { N = 1000000, CODE_BASE = 10000 };

enum kind { PLAIN, TRY, REDUCE };

typedef struct lc {
  enum kind kind;
  atomic_uchar *seen;      /* per index */
  unsigned char *returned; /* try: codes returned, by CODE_BASE offset */
  atomic_size_t count;     /* items run */
  atomic_ulong started;    /* body calls started */
  atomic_uint failers;     /* body calls past the threshold */
  atomic_uint winners;     /* pool_fail() calls that returned 0 */
  atomic_uint others;      /* ... that returned something but 0 or EALREADY */
  atomic_int over;         /* the loop returned */
  atomic_uint late;        /* bodies that started after that */
  size_t threshold;
  int winner_code;
  unsigned long snapshot;
} lc;

static lc L;

static void mark(lc *c, size_t b, size_t e) {
  for (size_t i = b; i < e; i++)
    if (atomic_fetch_add_explicit(&c->seen[i], 1, memory_order_relaxed) != 0)
      FAIL("index %zu ran twice\n", i);
}

/* The body's common part: returns the code it fails with, 0 if none. */
static int step(lc *c, size_t b, size_t e) {
  atomic_fetch_add(&c->started, 1); /* seq_cst, first thing */
  if (atomic_load(&c->over)) atomic_fetch_add(&c->late, 1);
  mark(c, b, e);
  size_t before = atomic_fetch_add(&c->count, e - b);
  if (before + (e - b) <= c->threshold) return 0;
  unsigned k = atomic_fetch_add(&c->failers, 1);
  return CODE_BASE + (int)k;
}

/* pool_fail() by a body past the threshold. */
static void fail_now(lc *c, int code) {
  int rc = pool_fail(code);
  if (rc == 0) {
    c->snapshot = atomic_load(&c->started); /* seq_cst, after the cancel */
    c->winner_code = code;
    atomic_fetch_add(&c->winners, 1);
  } else if (rc != EALREADY) {
    atomic_fetch_add(&c->others, 1);
  }
}

static void plain_body(size_t b, size_t e, void *v) {
  lc *c = v;
  int code = step(c, b, e);
  if (code) fail_now(c, code);
}

static int try_body(size_t b, size_t e, void *v) {
  lc *c = v;
  int code = step(c, b, e);
  if (code && (size_t)(code - CODE_BASE) <= N) c->returned[code - CODE_BASE] = 1;
  return code;
}

typedef struct acc {
  uint64_t items, sum;
} acc;

static void reduce_body(size_t b, size_t e, void *a, void *v) {
  lc *c = v;
  int code = step(c, b, e);
  acc *x = a;
  x->items += e - b;
  for (size_t i = b; i < e; i++) x->sum += i;
  if (code) fail_now(c, code);
}

static void reduce_combine(void *into, const void *from, void *ctx) {
  (void)ctx;
  acc *a = into;
  const acc *b = from;
  a->items += b->items;
  a->sum += b->sum;
}

typedef struct call {
  pool_t *pool; /* NULL: called from a task of the pool */
  size_t grain;
  int deterministic;
  int rc;
  acc result;
} call;

static void do_call(void *v) {
  call *k = v;
  acc id = {0, 0};
  pool_reducer_t r = {sizeof(acc), &id, reduce_body, reduce_combine, &L, k->deterministic};
  switch (L.kind) {
  case PLAIN:
    k->rc = pool_parallel_for(k->pool, 0, N, k->grain, plain_body, &L);
    break;
  case TRY:
    k->rc = pool_parallel_for_try(k->pool, 0, N, k->grain, try_body, &L);
    break;
  case REDUCE:
    memset(&k->result, 0xa5, sizeof k->result);
    k->rc = pool_parallel_reduce(k->pool, 0, N, k->grain, &r, &k->result);
    break;
  }
  atomic_store(&L.over, 1);
}

static void reset(enum kind kind, size_t threshold) {
  L.kind = kind;
  memset((void *)L.seen, 0, N);
  memset(L.returned, 0, N + 1);
  atomic_store(&L.count, 0);
  atomic_store(&L.started, 0);
  atomic_store(&L.failers, 0);
  atomic_store(&L.winners, 0);
  atomic_store(&L.others, 0);
  atomic_store(&L.over, 0);
  L.threshold = threshold;
  L.winner_code = -1;
  L.snapshot = 0;
}

static enum kind case_kind;

static void rounds_on(pool_t *p) {
  static const size_t grains[] = {0, 1, 7, 4096};
  unsigned nt = pool_threads(p);
  skip_count base = skip_read(p);
  uint64_t expect_items = 0;
  uint64_t seed = 0x1005eedull * (case_kind + 1) + nt;
  unsigned long rounds = check_iters(8);
  unsigned long worst = 0;
  for (unsigned long r = 0; r < rounds; r++) {
    size_t grain = grains[r % 4];
    /* Edges now and then: the first item, the last one. */
    size_t threshold = r == 2 ? 0 : r == 5 ? N - 1 : (size_t)(rng_next(&seed) % N);
    reset(case_kind, threshold);
    call k = {(r & 1) ? NULL : p, grain, (int)(r / 2 & 1), -1, {0, 0}};
    if (k.pool)
      do_call(&k);
    else {
      CHECK_OK(pool_submit(p, do_call, &k));
      CHECK_OK(pool_wait_idle(p));
    }
    size_t ran = atomic_load(&L.count);
    if (ran <= threshold || ran > N)
      FAIL("round %lu: %zu items ran, threshold %zu\n", r, ran, threshold);
    if (case_kind == TRY) {
      if (k.rc < CODE_BASE || k.rc > CODE_BASE + N || !L.returned[k.rc - CODE_BASE])
        FAIL("round %lu: the loop returned %d, which no body returned\n", r, k.rc);
    } else {
      CHECK_EQ(atomic_load(&L.winners), 1);
      CHECK_EQ(atomic_load(&L.others), 0);
      if (k.rc != L.winner_code)
        FAIL("round %lu: the loop returned %d, the first failure was %d\n", r, k.rc, L.winner_code);
      unsigned long after = atomic_load(&L.started) - L.snapshot;
      if (after > worst) worst = after;
      if (after > nt)
        FAIL("round %lu: %lu bodies started after the failing pool_fail() returned, %u workers\n",
             r, after, nt);
    }
    if (case_kind == REDUCE) {
      CHECK_EQ(k.result.items, 0); /* the identity */
      CHECK_EQ(k.result.sum, 0);
    }
    expect_items += N - ran;
    skip_expect(p, base, 0, expect_items, "loop");
  }
  CHECK_EQ(atomic_load(&L.late), 0);
  if (case_kind != TRY)
    fprintf(stderr, "%u workers: at most %lu bodies started after the failure\n", nt, worst);
}

static void run_case(enum kind kind) {
  case_kind = kind;
  L.seen = calloc(N, 1);
  L.returned = calloc(N + 1, 1);
  CHECK(L.seen && L.returned);
  ON_POOLS(rounds_on, 1, 2, 16);
  free((void *)L.seen);
  free(L.returned);
}

static void case_plain(void) { run_case(PLAIN); }
static void case_try(void) { run_case(TRY); }
static void case_reduce(void) { run_case(REDUCE); }

TEST_MAIN(240, TEST_CASE(plain), TEST_CASE(try), TEST_CASE(reduce))
