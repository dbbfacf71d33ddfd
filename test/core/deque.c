/* SPDX-License-Identifier: MIT */
/* The Chase-Lev deque (runtime/deque.h), tested directly.
 *
 * Items are distinct fake tasks: elements of one ws_task array, pushed in
 * increasing index order, so an item's index is its push order.
 *
 * 1. Single thread against a reference model (random push/pop/steal, from a
 *    one-slot array so it grows often): every result exact, the size
 *    exact, pop/steal never NULL on a non-empty deque, steal never "lost".
 * 2. Single thread: push n then pop all -> n-1..0; push n then steal all ->
 *    0..n-1, every steal succeeds with lost == 0.
 * 3. One owner pushing and popping (bursts, so the array grows from 4 slots
 *    many times while thieves steal) against 1..8 thieves:
 *    - every item taken exactly once (per-item counters);
 *    - every owner pop returns exactly the newest item the owner pushed and
 *      did not pop itself (thieves take only the oldest), so owner pops
 *      between two pushes are decreasing; a NULL pop means all of them were
 *      stolen (top >= bottom afterwards);
 *    - each thief sees strictly increasing items;
 *    - once the owner has stopped, a steal reporting empty with lost == 0
 *      means the deque is really empty (top >= bottom).
 * 4. Thieves only on a pre-filled deque (no owner pop): a steal fails only
 *    with lost == 1 while items remain, and they steal it empty.
 * Cases: model, orders, owner_thieves, steal_all (1 to 4). */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "deque.h"
#include "testutil.h"

static ws_task *items;
static size_t nitems;
static atomic_uint *taken;

static size_t idx_of(ws_task *t) {
  CHECK(t != NULL);
  CHECK(t >= items && t < items + nitems);
  return (size_t)(t - items);
}

static void alloc_items(size_t n) {
  nitems = n;
  items = calloc(n, sizeof(ws_task));
  taken = calloc(n, sizeof(atomic_uint));
  CHECK(items && taken);
}

static void free_items(void) {
  free(items);
  free((void *)taken);
  items = NULL;
  taken = NULL;
  nitems = 0;
}

/* ---- 1. single-thread model check ------------------------------------- */

static void test_model(unsigned log_size, uint64_t seed, size_t nops) {
  size_t n = nops; /* at most one push per op */
  alloc_items(n);
  size_t *model = malloc(n * sizeof(size_t)); /* model[lo..hi) */
  CHECK(model);
  size_t lo = 0, hi = 0, next = 0;
  ws_deque d;
  CHECK_OK(ws_deque_init(&d, log_size));
  uint64_t s = seed;
  for (size_t op = 0; op < nops; op++) {
    unsigned r = (unsigned)(rng_next(&s) % 100);
    /* Bias toward pushes in phases so the deque gets deep and grows. */
    unsigned push_pct = (op / 1000) % 2 ? 70 : 40;
    CHECK_EQ(ws_deque_size_hint(&d), (long long)(hi - lo));
    if (r < push_pct && next < n) {
      CHECK_EQ(ws_deque_size_hint(&d), (long long)(hi - lo));
      CHECK_OK(ws_deque_push(&d, &items[next]));
      model[hi++] = next++;
    } else if (r < push_pct + (100 - push_pct) / 2) {
      ws_task *x = ws_deque_pop(&d);
      if (hi == lo) {
        CHECK(x == NULL);
      } else {
        CHECK(x != NULL); /* never falsely empty */
        CHECK_EQ(idx_of(x), model[--hi]);
      }
    } else {
      int lost = -1;
      ws_task *x = ws_deque_steal(&d, &lost);
      CHECK_EQ(lost, 0); /* nobody to lose against */
      if (hi == lo) {
        CHECK(x == NULL);
      } else {
        CHECK(x != NULL);
        CHECK_EQ(idx_of(x), model[lo++]);
      }
    }
  }
  /* Drain alternately from both ends. */
  while (hi > lo) {
    int lost = -1;
    ws_task *x = ws_deque_steal(&d, &lost);
    CHECK(x != NULL);
    CHECK_EQ(lost, 0);
    CHECK_EQ(idx_of(x), model[lo++]);
    if (hi == lo) break;
    x = ws_deque_pop(&d);
    CHECK(x != NULL);
    CHECK_EQ(idx_of(x), model[--hi]);
  }
  CHECK(ws_deque_pop(&d) == NULL);
  int lost = -1;
  CHECK(ws_deque_steal(&d, &lost) == NULL);
  CHECK_EQ(lost, 0);
  ws_deque_destroy(&d);
  free(model);
  free_items();
}

/* ---- 2. single-thread orders ------------------------------------------ */

static void test_single_orders(size_t n) {
  alloc_items(n);
  ws_deque d;
  CHECK_OK(ws_deque_init(&d, 1));
  for (size_t i = 0; i < n; i++) {
    CHECK_EQ(ws_deque_size_hint(&d), (long long)i);
    CHECK_OK(ws_deque_push(&d, &items[i]));
  }
  for (size_t i = n; i-- > 0;) {
    ws_task *x = ws_deque_pop(&d);
    CHECK(x != NULL); /* only the owner operates: never falsely empty */
    CHECK_EQ(idx_of(x), i);
  }
  CHECK(ws_deque_pop(&d) == NULL);
  CHECK(ws_deque_pop(&d) == NULL); /* an empty pop leaves it consistent */
  for (size_t i = 0; i < n; i++) {
    CHECK_EQ(ws_deque_size_hint(&d), (long long)i);
    CHECK_OK(ws_deque_push(&d, &items[i]));
  }
  for (size_t i = 0; i < n; i++) {
    int lost = -1;
    ws_task *x = ws_deque_steal(&d, &lost);
    CHECK(x != NULL); /* non-empty, no competitor: always succeeds */
    CHECK_EQ(lost, 0);
    CHECK_EQ(idx_of(x), i);
  }
  int lost = -1;
  CHECK(ws_deque_steal(&d, &lost) == NULL);
  CHECK_EQ(lost, 0);
  CHECK(ws_deque_pop(&d) == NULL);
  ws_deque_destroy(&d);
  free_items();
}

/* ---- 3. owner + thieves ------------------------------------------------ */

/* top >= bottom: nothing left to take. */
static void check_really_empty(ws_deque *dq) {
  CHECK(ws_i64_load(&dq->top, ws_seq_cst) >= ws_i64_load(&dq->bottom, ws_seq_cst));
}

typedef struct shared {
  ws_deque dq;
  atomic_int done;  /* owner finished every operation */
  atomic_int go;
} shared;

typedef struct thief_arg {
  shared *sh;
  size_t got;
  unsigned long lost_races;
} thief_arg;

static void *thief_main(void *p) {
  thief_arg *a = p;
  shared *sh = a->sh;
  while (!atomic_load(&sh->go)) sched_yield();
  long long last = -1;
  unsigned idle = 0;
  for (;;) {
    int done = atomic_load_explicit(&sh->done, memory_order_acquire);
    int lost = -1;
    ws_task *x = ws_deque_steal(&sh->dq, &lost);
    if (x) {
      CHECK_EQ(lost, 0);
      size_t i = idx_of(x);
      CHECK((long long)i > last); /* a thief sees increasing items */
      last = (long long)i;
      atomic_fetch_add(&taken[i], 1);
      a->got++;
      idle = 0;
      continue;
    }
    CHECK(lost == 0 || lost == 1);
    if (lost) {
      a->lost_races++;
      continue;
    }
    if (done) {
      /* The owner stopped before this steal: empty must be real. */
      check_really_empty(&sh->dq);
      break;
    }
    if (++idle % 16 == 0) sched_yield();
  }
  return NULL;
}

/* The owner's side of a round: shadow[lo..hi) are the items it pushed and
 * has not popped itself (thieves take from the other end). */
typedef struct owner {
  ws_deque *dq;
  size_t *shadow, lo, hi;
  size_t mine; /* items the owner popped */
} owner;

static void owner_push(owner *o, size_t i) {
  int64_t before = ws_deque_size_hint(o->dq);
  CHECK_OK(ws_deque_push(o->dq, &items[i]));
  CHECK(before >= 0);
  CHECK(before <= (long long)(o->hi - o->lo)); /* thieves only remove */
  o->shadow[o->hi++] = i;
}

/* A pop that returned x: exactly the newest item the owner still has, and
 * below *prev (the owner's pops between two pushes are decreasing). */
static void owner_popped(owner *o, ws_task *x, long long *prev) {
  CHECK(o->hi > o->lo);
  size_t i = idx_of(x);
  CHECK_EQ(i, o->shadow[o->hi - 1]); /* exactly the newest remaining */
  if (*prev >= 0) CHECK((long long)i < *prev);
  *prev = (long long)i;
  o->hi--;
  atomic_fetch_add(&taken[i], 1);
  o->mine++;
}

/* Pushes [base, base + n) in bursts, popping some after each. */
static void owner_push_pop(owner *o, size_t base, size_t n, uint64_t *seed) {
  size_t next = base, end = base + n;
  while (next < end) {
    uint64_t r = rng_next(seed);
    /* Mostly small bursts, sometimes a big one: the array keeps growing
     * while thieves read the old one. */
    size_t burst = (r & 7) == 0 ? 1 + (size_t)((r >> 8) % 2048) : 1 + (size_t)((r >> 8) % 24);
    if (burst > end - next) burst = end - next;
    for (size_t k = 0; k < burst; k++) owner_push(o, next++);
    size_t pops = (size_t)((r >> 32) % (burst + 2));
    long long prev = -1;
    for (size_t k = 0; k < pops; k++) {
      ws_task *x = ws_deque_pop(o->dq);
      if (!x) {
        /* Everything the owner still had was stolen. */
        check_really_empty(o->dq);
        o->lo = o->hi = 0;
        break;
      }
      owner_popped(o, x, &prev);
    }
    if (o->lo == o->hi) o->lo = o->hi = 0;
  }
}

/* One round: a fresh deque of 4 slots, `n` items, `nthieves` thieves. */
static void owner_round(unsigned nthieves, size_t base, size_t n, uint64_t *seed,
                        int owner_drains, size_t *shadow, size_t *owner_got) {
  shared sh;
  CHECK_OK(ws_deque_init(&sh.dq, 2));
  atomic_init(&sh.done, 0);
  atomic_init(&sh.go, 0);
  pthread_t th[8];
  thief_arg ta[8];
  for (unsigned k = 0; k < nthieves; k++) {
    ta[k] = (thief_arg){&sh, 0, 0};
    CHECK_OK(pthread_create(&th[k], NULL, thief_main, &ta[k]));
  }
  atomic_store(&sh.go, 1);

  owner o = {&sh.dq, shadow, 0, 0, 0};
  owner_push_pop(&o, base, n, seed);
  if (owner_drains) {
    long long prev = -1;
    for (ws_task *x; (x = ws_deque_pop(&sh.dq)) != NULL;) owner_popped(&o, x, &prev);
    check_really_empty(&sh.dq);
  }
  atomic_store_explicit(&sh.done, 1, memory_order_release);
  size_t total = o.mine;
  for (unsigned k = 0; k < nthieves; k++) {
    CHECK_OK(pthread_join(th[k], NULL));
    total += ta[k].got;
  }
  CHECK_EQ(total, n);
  for (size_t i = base; i < base + n; i++) CHECK_EQ(atomic_load(&taken[i]), 1);
  CHECK(ws_deque_pop(&sh.dq) == NULL);
  ws_deque_destroy(&sh.dq);
  *owner_got += o.mine;
}

static void test_concurrent(unsigned nthieves, size_t n, unsigned rounds, uint64_t seed) {
  alloc_items(n);
  size_t *shadow = malloc(n * sizeof(size_t));
  CHECK(shadow);
  size_t per = n / rounds, base = 0, owner_got = 0;
  for (unsigned r = 0; r < rounds; r++) {
    size_t cnt = r + 1 == rounds ? n - base : per;
    owner_round(nthieves, base, cnt, &seed, (int)(r & 1), shadow, &owner_got);
    base += cnt;
  }
  CHECK_EQ(base, n);
  free(shadow);
  free_items();
}

/* ---- 4. thieves only --------------------------------------------------- */

typedef struct steal_only {
  ws_deque dq;
  int64_t bottom; /* fixed: nobody pushes or pops */
  atomic_int go;
} steal_only;

typedef struct so_arg {
  steal_only *so;
  size_t got;
} so_arg;

static void *steal_only_main(void *p) {
  so_arg *a = p;
  steal_only *so = a->so;
  while (!atomic_load(&so->go)) sched_yield();
  long long last = -1;
  for (;;) {
    int lost = -1;
    ws_task *x = ws_deque_steal(&so->dq, &lost);
    if (x) {
      size_t i = idx_of(x);
      CHECK((long long)i > last);
      last = (long long)i;
      atomic_fetch_add(&taken[i], 1);
      a->got++;
      continue;
    }
    if (lost) continue; /* another thief won: worth retrying */
    /* Reported empty without a lost race: every item must be gone. */
    CHECK(ws_i64_load(&so->dq.top, ws_seq_cst) >= so->bottom);
    break;
  }
  return NULL;
}

static void test_steal_only(unsigned nthieves, size_t n) {
  alloc_items(n);
  steal_only so;
  CHECK_OK(ws_deque_init(&so.dq, 2));
  atomic_init(&so.go, 0);
  for (size_t i = 0; i < n; i++) CHECK_OK(ws_deque_push(&so.dq, &items[i]));
  so.bottom = (int64_t)n;
  pthread_t th[8];
  so_arg sa[8];
  for (unsigned k = 0; k < nthieves; k++) {
    sa[k] = (so_arg){&so, 0};
    CHECK_OK(pthread_create(&th[k], NULL, steal_only_main, &sa[k]));
  }
  atomic_store(&so.go, 1);
  size_t total = 0;
  for (unsigned k = 0; k < nthieves; k++) {
    CHECK_OK(pthread_join(th[k], NULL));
    total += sa[k].got;
  }
  CHECK_EQ(total, n);
  for (size_t i = 0; i < n; i++) CHECK_EQ(atomic_load(&taken[i]), 1);
  ws_deque_destroy(&so.dq);
  free_items();
}

static void case_model(void) {
  for (unsigned log = 0; log <= 3; log++)
    test_model(log, 0x1234567ull + log, check_iters(40000));
}

static void case_orders(void) {
  test_single_orders(1);
  test_single_orders(5);
  test_single_orders(check_iters(10000));
}

static void case_owner_thieves(void) {
  size_t n = check_iters(120000);
  for (unsigned t = 1; t <= 8; t++) test_concurrent(t, n, 12, 0xABCDEF12345ull * t + 1);
}

static void case_steal_all(void) {
  for (unsigned t = 1; t <= 8; t *= 2) test_steal_only(t, check_iters(30000));
}

TEST_MAIN(240, TEST_CASE(model), TEST_CASE(orders), TEST_CASE(owner_thieves), TEST_CASE(steal_all))
